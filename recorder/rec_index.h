/*
 * rec_index.h - the index builder's rows, shared by rec_index.c (which fills
 * them from declarations and events) and rec_db.c (which writes them to
 * index.db). Private to the recorder.
 */
#ifndef NPURR_REC_INDEX_H
#define NPURR_REC_INDEX_H

#include "recorder/rec_internal.h"

enum { WK_FLAG, WK_PIPE, WK_XCORE, WK_GM, WK_RING_SPACE, WK_RING_DATA, WK_BARRIER, WK_COUNT };

typedef struct ix_wait {
    uint64_t id;                      /* the row id: waits numbered as they begin, from 1 */
    uint64_t begin_seq, end_seq;      /* end_seq 0: never ended */
    uint64_t begin_ps, end_ps;
    int64_t expected, seen;
    uint64_t waker_seq;               /* 0: unknown */
    uint32_t track, rank, core, role; /* role: string id, 0 none */
    uint32_t object, site, waker_peer; /* waker_peer: waker track + 1, 0 unknown */
    uint8_t kind;                     /* WK_* */
    uint8_t written;                  /* in index.db.tmp already (rec_db.c) */
} ix_wait;


typedef struct ix_site {
    char *file, *func;
    int line;
    int present;
} ix_site;

typedef struct rec_ix_db rec_ix_db;   /* rec_db.c: index.db.tmp being written */

struct rec_index {
    rec_kv meta;
    rec_ix_db *db;
    uint32_t cpr, num_aic;
    int oom;

    char **strings;  size_t nstrings;      /* by id */
    ix_site *sites;  size_t nsites;        /* by id */
    engine_object *objects; size_t nobjects; /* by id; id 0 = absent */

    uint8_t *track_seen; size_t ntracks;   /* by track id */
    uint64_t *open_wait; size_t nopen;     /* by track id: wait row + 1, 0 none */
    uint32_t *core_role; size_t ncores;    /* by rank * cpr + core */

    /* The waits begun and not yet dropped: every one, but that the live
     * recorder drops those it has written into index.db.tmp after each
     * chunk (rec_ix_db_flush), so only the open ones and a few ended ones
     * stay in memory; open_wait and ended_waits are positions in it. */
    ix_wait *waits; size_t nwaits, cap_waits;
    uint64_t wait_ids;        /* waits begun: the last id given */
    uint64_t begins_taken;    /* a split run's part: the last id whose begin went out */
    size_t *remap, cap_remap; /* rec_ix_drop_marked's new positions */
    uint64_t xfer_bytes;      /* bytes of every issued transfer (meta transfer_bytes) */
    /* Rows that can no longer change, in the order they became final (a
     * wait ended, a transfer completed), for rec_db.c to write as the run
     * goes on: one long wait must not hold back every row after it. */
    size_t *ended_waits; size_t nended_waits, cap_ended_waits;
    rec_chunk_row *chunks; size_t nchunks, cap_chunks;

    uint64_t kind_count[64];
    uint64_t events, max_time, last_seq;
    int ended;                  /* a RUN_END was fed (the engine's own ending) */
    uint64_t end_event_time;    /* its time */
};

/* Appends row to one of the ended_* lists (sets oom on failure). */
void rec_ix_push_ended(rec_index *ix, size_t **arr, size_t *n, size_t *cap, size_t row);
/* Drops the waits marked `written` from the array, keeping the others'
 * order; open_wait and the ended list follow them (a dropped row leaves the
 * list). -1 without memory for the new positions (nothing dropped). */
int rec_ix_drop_marked(rec_index *ix);
/* Process 0 of a split run: n waits rows with the run's ids into
 * index.db.tmp, in batches; *done says how many went (the rest fill a
 * batch later, or go one by one with final). */
int rec_ix_db_put_waits(rec_index *ix, const ix_wait *rows, size_t n, size_t *done, int final,
                        char *err, size_t errlen);

const char *rec_wait_kind_name(int wk);
const char *rec_object_kind_name(int kind);

#endif

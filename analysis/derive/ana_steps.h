/*
 * ana_steps.h - what the files of the derivation room share among
 * themselves (derive.h is what the other rooms see): the bulk writer, the
 * one events pass and what it learns for the cause classifier.
 */
#ifndef NPURR_ANA_STEPS_H
#define NPURR_ANA_STEPS_H

#include "analysis/derive/ana_pack.h"
#include "analysis/derive/derive.h"
#include "engine/engine.h"
#include "recorder/recorder.h"

/* ---------------------------------------------------------- bulk inserts */

#define ANA_BULK_ROWS 64       /* rows per INSERT statement */
#define ANA_BULK_BUF 1024      /* rows per buffer handed to the writer */
#define ANA_BULK_MAX_COLS 16
#define ANA_BULK_TEXT 320

/* Bulk inserts are stepped on a rec_worker (recorder.h); NULL: in line. A
 * connection with a writer may be used for anything else only after
 * rec_worker_wait. */

typedef struct ana_bulk_buf {
    int64_t key[ANA_BULK_BUF];
    unsigned char type[ANA_BULK_BUF * ANA_BULK_MAX_COLS];
    int64_t ival[ANA_BULK_BUF * ANA_BULK_MAX_COLS];
    const char *tval[ANA_BULK_BUF * ANA_BULK_MAX_COLS];
    char text[ANA_BULK_BUF][ANA_BULK_TEXT];
    int failed;
    char errmsg[256];
} ana_bulk_buf;

/* One table's batched INSERT (ana_bulk.c). Text given to ana_bulk_text
 * must outlive the insert (static names); ana_bulk_text_copy keeps its own
 * copy (one per row). */
typedef struct ana_bulk {
    sqlite3 *db;
    sqlite3_stmt *many, *one;
    const char *table;
    int cols, rows, col;
    uint64_t total;
    rec_worker *wr;
    int job_buf, job_rows;        /* the job handed to wr */
    ana_bulk_buf *buf[2], *cur;   /* cur: the buffer being filled */
    char *err;
    size_t errlen;
    /* packed mode (ana_bulk_open_packed): handed-over rows gather in
     * pk[pk_cur]; a full chunk is encoded and stored by the writer while
     * the other one fills */
    int packed, key_col;
    int64_t last_key;
    ana_pack_chunk *pk[2];
    int pk_cur, pk_job;
    sqlite3_stmt *put_chunk, *put_patch;
    int pk_failed;
    char pk_err[256];
} ana_bulk;

int ana_bulk_open(ana_bulk *b, sqlite3 *db, const char *table, int cols, rec_worker *wr,
                  char *err, size_t errlen);
static inline void ana_bulk_int(ana_bulk *b, int64_t v) {
    int p = b->rows * b->cols + b->col++;
    b->cur->type[p] = SQLITE_INTEGER;
    b->cur->ival[p] = v;
}
static inline void ana_bulk_null(ana_bulk *b) {
    b->cur->type[b->rows * b->cols + b->col++] = SQLITE_NULL;
}
/* NULL or "" binds SQL NULL. */
static inline void ana_bulk_text(ana_bulk *b, const char *s) {
    int p = b->rows * b->cols + b->col++;
    b->cur->type[p] = s && *s ? SQLITE_TEXT : SQLITE_NULL;
    b->cur->tval[p] = s;
}
void ana_bulk_text_copy(ana_bulk *b, const char *s);
/* Packed mode: the rows of table (created by ana_create_packed) go into
 * its chunks; column key_col holds the key, a non-NULL integer that every
 * row must raise. The rest of the API is the same. */
int ana_bulk_open_packed(ana_bulk *b, sqlite3 *db, const char *table, int cols, int key_col,
                         rec_worker *wr, char *err, size_t errlen);
/* Ends the row; key identifies it for ana_bulk_patch. */
int ana_bulk_row_done(ana_bulk *b, int64_t key);
/* Packed mode: integer column col of the row with that key becomes v,
 * wherever the row is: in the buffer, in the chunk being built, or stored
 * already (then as a patch the table applies when it reads the chunk,
 * ana_pack.h). 0, or -1 with b's err. */
int ana_bulk_patch(ana_bulk *b, int64_t key, int col, int64_t v);
/* Sends the rest and waits until every row of b is in the table. */
int ana_bulk_finish(ana_bulk *b);
void ana_bulk_close(ana_bulk *b);

/* ---------------------------------------------------------- derive steps */


/* What the events pass learns for the classifier (ana_cause.c). */
typedef struct ana_wake {
    uint64_t seq;          /* the waking event */
    uint64_t issue_seq;    /* its link: for a transfer completion, the issue */
    int64_t issue_ps;      /* that issue's time, -1 unknown */
    uint64_t corekey;      /* rank * cores_per_rank + core of the waking event */
    int is_xfer;           /* the waking event is a transfer completion */
} ana_wake;

/* What the events pass learnt of one named word (object). */
typedef struct ana_word_fact {
    int64_t last_writer;   /* corekey + 1 of the word's last writer, 0 none */
    int64_t other_word;    /* a ring word's partner (head <-> tail), 0 none */
    uint8_t credit_head;   /* 1: head word of a credit ring (cause rule 2) */
} ana_word_fact;

typedef struct ana_facts {
    ana_wake *wakes;       /* every waking event found, by increasing seq */
    size_t nwakes;
    size_t nobj;           /* word[] is indexed by object id < nobj */
    ana_word_fact *word;
} ana_facts;
void ana_facts_free(ana_facts *f);

/* ana_cause.c: the run's waits, loaded once (err and errlen are kept for
 * ana_causes_derive's errors), and their classification. */
typedef struct ana_causes ana_causes;
ana_causes *ana_causes_load(sqlite3 *db, const ana_run *run, char *err, size_t errlen);
/* The waits' begin seqs (sorted) and distinct waker seqs (sorted, > 0),
 * owned by c: what the events pass looks for. */
const uint64_t *ana_causes_begins(const ana_causes *c, size_t *n);
const uint64_t *ana_causes_wakers(const ana_causes *c, size_t *n);
/* Classifies every wait, fills waits.cause and creates wait_groups. */
int ana_causes_derive(ana_causes *c, const ana_facts *facts);
void ana_causes_free(ana_causes *c);


/* ana_scan.c (with ana_words.c and ana_links.c): creates and fills
 * word_writes, wake_events, wait_labels, ring_counters, link_bytes and
 * last_writers from one pass over RUN/trace.zst, looking for the waits of
 * c, and fills *facts; with_transfers also creates and fills transfers. */
int ana_scan_events(sqlite3 *db, const ana_run *run, const char *run_dir, const ana_causes *c,
                    int with_transfers, ana_facts *facts, char *err, size_t errlen);
/* ana_views.c: (re)creates every view. */
int ana_create_views(sqlite3 *db, const ana_run *run, char *err, size_t errlen);

#endif

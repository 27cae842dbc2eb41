/*
 * ana_scan.h - what the events pass (ana_scan.c), the replay of named
 * words' values (ana_words.c) and the link sums (ana_links.c) share;
 * private to analysis/.
 */
#ifndef NPURR_ANA_SCAN_H
#define NPURR_ANA_SCAN_H

#include "analysis/derive/ana_steps.h"

enum { OK_OTHER = 0, OK_WORD, OK_RING, OK_HEAD, OK_TAIL, OK_BUFFER };

typedef struct obj_info {
    uint8_t kind;       /* OK_* */
    uint8_t known;      /* value below is known */
    uint8_t ring_kind;  /* engine_ring_kind of its level (a ring's, or its ring's) */
    uint8_t atomic;     /* written by an atomic or a landed RDMA atomic */
    uint32_t ring;      /* for head/tail: the ring object id */
    int64_t value;      /* current value while replaying writes */
    uint64_t unknown_seq;  /* last write whose value is not known yet, 0 none */
    int64_t unknown_time;
    int64_t last_writer;   /* corekey + 1 of the last write's core, 0 none */
    /* The last write (a last_writers row), 0 last_seq: none. */
    uint64_t last_seq;
    int64_t last_time, last_rank, last_core, last_value;
    const char *last_kind, *last_xfer;
    uint8_t last_known;
    char *name;
} obj_info;

/* A remote store/atomic seen at issue, waiting for its landing. */
typedef struct landing {
    uint64_t issue_seq;
    int add;            /* 1: atomic add of operand; 0: store of operand */
    int done;           /* landed */
    int64_t operand;
} landing;

/* One event as the pass uses it. */
typedef struct evrow {
    uint64_t seq;
    int64_t time, rank, core, object, value, aux, link, peer;
    uint64_t addr;
    int kind, sub;
    const char *pipe;   /* names as the events table spells them (static) */
    const char *ktext;
} evrow;

typedef struct ring_info {
    int64_t head, tail;
} ring_info;

/* A transfer issued and not yet completed, by issue seq. */
typedef struct inflight {
    uint64_t seq;       /* 0: empty slot */
    uint64_t time, start, bytes, src_addr, dst_addr;
    uint64_t id;        /* transfers.id: the issue's rank among all issues, from 1 */
    uint32_t rank, core, site;
    uint8_t sub, pipe;
} inflight;

/* A completed (or, at the end, unfinished) transfer waiting for those
 * issued before it: transfers rows go out in id order. */
typedef struct xfer_done {
    inflight x;         /* x.seq 0: slot empty */
    uint64_t done_seq, done_ps;
} xfer_done;

/* Link sums (ana_links.c). */
typedef struct ana_links ana_links;
ana_links *ana_links_new(const ana_run *run);
/* One completed transfer: xfer kind, issuing rank, source and destination
 * ranks, bytes, start and completion times. -1 when out of memory. */
int ana_links_add(ana_links *l, int xfer, int64_t rank, int64_t src, int64_t dst,
                  uint64_t bytes, uint64_t start, uint64_t done);
/* Creates link_bytes and meta analysis.bucket_ps. */
int ana_links_write(ana_links *l, sqlite3 *db, char *err, size_t errlen);
void ana_links_free(ana_links *l);

/* The state of one derive pass. */
typedef struct scan {
    sqlite3 *db;
    const ana_run *run;
    obj_info *obj;        /* by object id */
    size_t nobj;
    ring_info *ring;      /* by ring object id */
    const uint64_t *wakers;  /* sorted distinct waits.waker_seq */
    size_t nwakers, next_waker;
    const uint64_t *begins;  /* sorted waits.begin_seq */
    size_t nbegins, next_begin;
    ana_bulk *ww, *we, *wl, *rc;   /* word_writes, wake_events, wait_labels, ring_counters */
    ana_bulk *tr;                  /* transfers; NULL: not derived in this pass */
    int transfers_only;            /* the transfers part alone: pairing, nothing else */
    uint64_t issued;               /* transfers issued so far */
    rec_worker *wr;                /* steps their inserts; NULL: in line */
    evrow held;           /* a possible intent, decided by the next row */
    int has_held;
    landing *land;        /* pending landings, by increasing issue_seq */
    size_t nland, capland, land_done;
    inflight *fl;         /* transfers in flight: open addressing by issue seq */
    size_t flcap, fln;    /* flcap a power of two */
    xfer_done *ord;       /* done transfers by id & (ordcap - 1), from id ord_next on */
    size_t ordcap;        /* a power of two */
    uint64_t ord_next;    /* the next id to insert */
    ana_links *links;
    ana_facts *facts;
    size_t capwakes;
    char *err;
    size_t errlen;
} scan;

/* ana_words.c. The named word (word, flag, ring head/tail...) an event
 * refers to, or NULL. */
obj_info *ana_words_get(scan *s, int64_t object);
/* Feeds an event that refers to word o: writes become word_writes rows
 * (and ring_counters rows for ring words), reads resolve unknown values. */
/* e's source, as the rows of wake_events and word_writes give it: rank,
 * core, pipe, kind, and the transfer's kind for a completion (else NULL). */
void ana_scan_bulk_source(ana_bulk *w, const evrow *e);
int ana_words_event(scan *s, const evrow *e, obj_info *o);
/* Decides a held remote-write intent against the next row (NULL at the
 * end of the trace). */
int ana_words_settle(scan *s, const evrow *next);

#endif

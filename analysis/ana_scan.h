/*
 * ana_scan.h - what the events pass (ana_scan.c) and the replay of named
 * words' values (ana_words.c) share; private to analysis/.
 */
#ifndef NPURR_ANA_SCAN_H
#define NPURR_ANA_SCAN_H

#include "analysis/ana_internal.h"

enum { OK_OTHER = 0, OK_WORD, OK_RING, OK_HEAD, OK_TAIL, OK_BUFFER };

typedef struct obj_info {
    uint8_t kind;       /* OK_* */
    uint8_t known;      /* value below is known */
    uint32_t ring;      /* for head/tail: the ring object id */
    int64_t value;      /* current value while replaying writes */
    uint64_t unknown_seq;  /* last write whose value is not known yet, 0 none */
    int64_t unknown_time;
    char *name;
} obj_info;

/* A remote store/atomic seen at issue, waiting for its landing. */
typedef struct landing {
    uint64_t issue_seq;
    int add;            /* 1: atomic add of operand; 0: store of operand */
    int done;           /* landed */
    int64_t operand;
} landing;

/* One row of the scan, decoded. */
typedef struct evrow {
    uint64_t seq;
    int64_t time, rank, core, object, value, aux, link, peer;
    uint64_t addr;
    int kind, sub;
    char pipe[16];
    char ktext[32];
} evrow;

typedef struct ring_info {
    int64_t head, tail;
} ring_info;

/* The state of one derive pass. */
typedef struct scan {
    sqlite3 *db;
    const ana_run *run;
    obj_info *obj;        /* by object id */
    size_t nobj;
    ring_info *ring;      /* by ring object id */
    uint64_t *wakers;     /* sorted distinct waits.waker_seq */
    size_t nwakers;
    uint64_t *begins;     /* sorted waits.begin_seq */
    size_t nbegins;
    sqlite3_stmt *ins_write, *ins_wake, *ins_label, *ins_ring, *fix_write;
    evrow held;           /* a possible intent, decided by the next row */
    int has_held;
    landing *land;        /* pending landings, by increasing issue_seq */
    size_t nland, capland, land_done;
    char *err;
    size_t errlen;
} scan;


/* Steps an INSERT/UPDATE and resets it; err names the table on failure. */
int ana_scan_step(scan *s, sqlite3_stmt *st, const char *table);
/* Binds text that outlives the step (SQLITE_STATIC), NULL for "" or NULL. */
void ana_scan_bind_text(sqlite3_stmt *st, int i, const char *t);

/* ana_words.c. The named word (word, flag, ring head/tail...) an event
 * refers to, or NULL. */
obj_info *ana_words_get(scan *s, int64_t object);
/* Feeds an event that refers to word o: writes become word_writes rows
 * (and ring_counters rows for ring words), reads resolve unknown values. */
int ana_words_event(scan *s, const evrow *e, obj_info *o);
/* Decides a held remote-write intent against the next row (NULL at the
 * end of the trace). */
int ana_words_settle(scan *s, const evrow *next);

#endif

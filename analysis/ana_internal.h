/*
 * ana_internal.h - what the analysis files share; not a public API.
 *
 * The pieces:
 *   ana_db.c       opening a run, meta lookups, small SQLite helpers
 *   ana_bulk.c     many-rows-per-INSERT writers for the derived tables
 *   ana_kinds.c    event kind / pipe / cond names of the events vtab -> enums
 *   ana_scan.c     one pass over the trace's events: wake_events,
 *                  wait_labels, and what the classifier needs to know
 *                  about wakers, credit rings and last writers
 *   ana_words.c    during that pass, the values of named words:
 *                  word_writes, ring_counters (ana_scan.h is their shared
 *                  state)
 *   ana_links.c    during that pass, link_bytes from completed transfers
 *   ana_cause.c    waits.cause from waits + the pass's facts, and
 *                  wait_groups (what `stats` reads)
 *   ana_views.c    the views (core_names, stall_summary, ...)
 *   ana_derive.c   ana_derive: the above, a part at a time (ANA_PART_*),
 *                  each derive in one transaction
 *   ana_fresh.c    ana_ensure_fresh: index matches trace, analysis matches
 *                  index, derived in place or in the per-user cache
 *   ana_stats.c    `npurr stats`
 *   ana_table.c    aligned / CSV printing of result sets
 *   ana_sql.c      `npurr sql`
 *   ana_timeline.c the timeline both exports write (ana_timeline.h)
 *   ana_export.c, ana_json.c  `npurr export --chrome`
 *   ana_pb.c, ana_perfetto.c  `npurr export --perfetto` (protobuf)
 *   ana_output.c   output files: '-', plain, or gzip for a .gz name
 *   ana_report.c, ana_waitfor.c, ana_svg.c  `npurr report`: the HTML page
 *                  (ana_report.h, ana_svg.h)
 *   ana_units.c    time and rank-list parsing and formatting
 *   ana_grow.c     the growable array (ana_grow)
 */
#ifndef NPURR_ANA_INTERNAL_H
#define NPURR_ANA_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

#include "engine/engine.h"
#include "recorder/recorder.h"

/* snprintf into a caller's error buffer (tolerates err == NULL). */
void ana_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* path opened read-write for one thread, with a busy timeout; NULL with err. */
sqlite3 *ana_open_rw(const char *path, char *err, size_t errlen);

/* With NPURR_ANA_TIMING set, prints "ana_derive: <done> <seconds since>"
 * to stderr (done NULL: prints nothing). Returns the monotonic time now. */
double ana_step_clock(const char *done, double since);

/* ana_derive_db reading the trace of run_dir (db may be a cache copy of
 * run_dir's index elsewhere). */
int ana_derive_db_from(sqlite3 *db, const char *run_dir, char *err, size_t errlen);
/* Derives exactly parts (ANA_PART_*; the waits part drops the others it is
 * not given, which would be stale) into db, in one transaction. */
int ana_derive_parts(sqlite3 *db, const char *run_dir, int parts, char *err, size_t errlen);

/* Makes *p (an array of elements of size, *cap of them) hold at least
 * need, doubling *cap from first (> 0) as often as it takes: 0, or -1 out
 * of memory with *p and *cap unchanged (ana_grow.c). */
int ana_grow(void **p, size_t *cap, size_t need, size_t size, size_t first);
/* Runs SQL without results; on failure err says which statement failed. */
int ana_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);
/* sql prepared on db (the caller finalizes it); NULL with err "index.db:
 * <why> (in: <sql>)" when it does not prepare. */
sqlite3_stmt *ana_prepare(sqlite3 *db, const char *sql, char *err, size_t errlen);
/* table (schema-qualified for temp.) made anew, empty, with columns
 * ("a INT, b TEXT"): what every derived table is written into. */
int ana_create_table(sqlite3 *db, const char *table, const char *columns, char *err,
                     size_t errlen);
/* meta value parsed as an integer; def if absent or not a number. */
int64_t ana_meta_i64(sqlite3 *db, const char *key, int64_t def);
/* 1 if table or view `name` exists in the main schema. */
int ana_has_table(sqlite3 *db, const char *name);
/* The table that stores the waits, the one to update (waits.cause) or
 * index: wait_rows under the waits view (index version 2), or the wide
 * waits table itself of an index written before it. */
const char *ana_waits_table(sqlite3 *db);

/* The rows of the `cores` table (rank, core, core_type, name, role) as a
 * SELECT over `tracks`: one row per core that has a track; role is the
 * core's last SetRole. */
void ana_cores_select_sql(char *buf, size_t len, int64_t num_aic);

/* engine_pipe values from engine_pipe_name text; -1 if unknown. */
int ana_pipe_from_text(const char *text);
/* Operator of an engine_cond ("==", ">=", ...); "?" if unknown. */
const char *ana_cond_op(int cond);

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
/* Ends the row; key identifies it for ana_bulk_find until it is handed
 * to the writer. */
int ana_bulk_row_done(ana_bulk *b, int64_t key);
/* Row with that key among those not handed over yet, or -1. */
int ana_bulk_find(const ana_bulk *b, int64_t key);
void ana_bulk_set_int(ana_bulk *b, int row, int col, int64_t v);
/* Sends the rest and waits until every row of b is in the table. */
int ana_bulk_finish(ana_bulk *b);
void ana_bulk_close(ana_bulk *b);

/* ---------------------------------------------------------- derive steps */

/* The run's shape, read from meta before deriving. */
typedef struct ana_run {
    int64_t cores_per_rank, num_aic, npus_per_node, ranks;
    int64_t end_time_ps;
} ana_run;
int ana_run_load(sqlite3 *db, ana_run *run, char *err, size_t errlen);

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

/* Stable sort of n keys, carrying vals (may be NULL) along (ana_sort.c).
 * -1 when out of memory. */
int ana_radix_sort(uint64_t *keys, uint32_t *vals, size_t n);

/* ana_scan.c (with ana_words.c and ana_links.c): creates and fills
 * word_writes, wake_events, wait_labels, ring_counters, link_bytes and
 * last_writers from one pass over RUN/trace.zst, looking for the waits of
 * c, and fills *facts; with_transfers also creates and fills transfers. */
int ana_scan_events(sqlite3 *db, const ana_run *run, const char *run_dir, const ana_causes *c,
                    int with_transfers, ana_facts *facts, char *err, size_t errlen);
/* The transfers table alone, from a pass that only pairs issues and
 * completions (the transfers part derived after the waits part). */
int ana_scan_transfers(sqlite3 *db, const ana_run *run, const char *run_dir, char *err,
                       size_t errlen);
/* ana_views.c: (re)creates every view. */
int ana_create_views(sqlite3 *db, const ana_run *run, char *err, size_t errlen);

/* Cause names, as stored in waits.cause. */
#define ANA_CAUSE_PRODUCER_LATE "producer_late"
#define ANA_CAUSE_TRANSFER_SLOW "transfer_slow"
#define ANA_CAUSE_FLOW_CONTROL "flow_control"
#define ANA_CAUSE_CREDIT_STARVATION "credit_starvation"
#define ANA_CAUSE_BARRIER "barrier"

/* ---------------------------------------------------------- printing */

/* A result set buffered for alignment; cells are owned copies (NULL = SQL
 * NULL). */
typedef struct ana_grid {
    size_t cols, rows, cap;
    char **head;          /* cols names */
    char **cells;         /* rows * cols */
    unsigned char *numeric; /* per column: every non-NULL cell is a number */
} ana_grid;

int ana_grid_init(ana_grid *g, size_t cols);
int ana_grid_set_head(ana_grid *g, size_t col, const char *name);
/* Appends a row of cols cells (copied). */
int ana_grid_add(ana_grid *g, const char *const *cells, const unsigned char *is_number);
void ana_grid_print(const ana_grid *g, FILE *out);
void ana_grid_free(ana_grid *g);

/* ---------------------------------------------------------- JSON output */

/* Writes s as a JSON string literal (with quotes). */
void ana_json_str(FILE *out, const char *s);
/* Writes ns as microseconds with three decimals, exactly (no float rounding). */
void ana_json_ns(FILE *out, uint64_t ns);

#endif

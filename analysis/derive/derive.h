/*
 * derive.h - the derivation room of the analysis: what analysis/ adds to a
 * run's index.db, and the small SQLite and unit helpers every room of the
 * analysis shares. Not for the rest of npurr: the CLI goes through
 * analysis/analysis.h, whose opener (analysis/ana_open.c) decides when a
 * part is derived and calls the steps below inside one transaction.
 *
 * The pieces:
 *   ana_db.c       meta lookups, run shape, small SQLite helpers
 *   ana_grow.c     the growable array (ana_grow)
 *   ana_sort.c     a stable radix sort
 *   ana_units.c    virtual time and rank lists as people read and write them
 *   ana_kinds.c    event kind / pipe / cond names of the events vtab -> enums
 *   ana_derive.c   the waits part (ana_derive_waits) and the transfers part
 *                  (ana_scan_transfers, in ana_scan.c)
 *   ana_packed_vtab.c  the npurr_packed module serving packed tables (the
 *                  bulky derived tables, stored as compressed column chunks)
 *   ana_packed_read.c  a packed table's chunks read without SQL
 * and, behind ana_steps.h (this room's own): ana_bulk.c, ana_scan.c,
 * ana_words.c, ana_links.c, ana_cause.c, ana_views.c, and the chunk
 * format ana_pack.c (ana_pack.h).
 */
#ifndef NPURR_ANA_DERIVE_H
#define NPURR_ANA_DERIVE_H

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
/* Registers the npurr_packed module on db and on every connection the
 * process opens later (sqlite3_auto_extension): whatever reads index.db's
 * derived tables needs it. 0, or -1 with err. */
int ana_packed_register(sqlite3 *db, char *err, size_t errlen);
/* table made anew as a packed table (ana_pack.h) with columns ("id
 * INTEGER, kind TEXT"), its rows ascending by the integer column key. */
int ana_create_packed(sqlite3 *db, const char *table, const char *key, const char *columns,
                      char *err, size_t errlen);
/* A packed table read without SQL, chunk by chunk in key order
 * (ana_packed_read.c): for a reader of every row of a bulky table. */
#define ANA_PACKED_READ_MAX 16
typedef struct ana_packed_reader ana_packed_reader;
/* One chunk's rows of the columns asked for, by their order in the ask:
 * an integer column's values (val, 0 where null[r]); a text column's codes
 * (val: 0 NULL, k the NUL-terminated text[k - 1] of its ntext). Valid
 * until the next ana_packed_next. */
typedef struct ana_packed_view {
    size_t rows;
    int is_text[ANA_PACKED_READ_MAX];
    const int64_t *val[ANA_PACKED_READ_MAX];
    const uint8_t *null[ANA_PACKED_READ_MAX];
    const char *const *text[ANA_PACKED_READ_MAX];
    uint32_t ntext[ANA_PACKED_READ_MAX];
} ana_packed_view;
/* Opens table for columns cols[0..ncols) (by name): 0, 1 when table is
 * not a packed table (nothing opened), -1 with err (no such column...). */
int ana_packed_open(sqlite3 *db, const char *table, const char *const *cols, int ncols,
                    ana_packed_reader **out, char *err, size_t errlen);
/* The next chunk into *v: 1, 0 past the last, -1 with err. */
int ana_packed_next(ana_packed_reader *r, ana_packed_view *v, char *err, size_t errlen);
/* Frees r and its statements (NULL: nothing). */
void ana_packed_close(ana_packed_reader *r);

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

/* Stable sort of n keys, carrying vals (may be NULL) along (ana_sort.c).
 * -1 when out of memory. */
int ana_radix_sort(uint64_t *keys, uint32_t *vals, size_t n);

/* ---------------------------------------------------------- units */
/* "1.50 us"-style text for a duration in ps (ps, ns, us, ms, s). */
void ana_format_ps(double ps, char *buf, size_t len);
/* Accepts "12345" (ps), "10ps", "1.5ns", "10us", "2ms", "1s". */
int ana_parse_time(const char *text, uint64_t *ps, char *err, size_t errlen);
/* "0,3-5" -> bitmap over ranks [0, nbits); -1 with err on a malformed list
 * or a rank >= nbits. A NULL bitmap checks the syntax only (any rank). */
int ana_parse_ranks(const char *text, uint8_t *bitmap, size_t nbits, char *err,
                    size_t errlen);

/* ---------------------------------------------------------- the run */

/* The run's shape, read from meta before deriving. */
typedef struct ana_run {
    int64_t cores_per_rank, num_aic, npus_per_node, ranks;
    int64_t end_time_ps;
} ana_run;
/* Fills *run from db's meta: 0, or -1 with err when db is no complete
 * npurr index. */
int ana_run_load(sqlite3 *db, ana_run *run, char *err, size_t errlen);

/* Cause names, as stored in waits.cause. */
#define ANA_CAUSE_PRODUCER_LATE "producer_late"
#define ANA_CAUSE_TRANSFER_SLOW "transfer_slow"
#define ANA_CAUSE_FLOW_CONTROL "flow_control"
#define ANA_CAUSE_CREDIT_STARVATION "credit_starvation"
#define ANA_CAUSE_BARRIER "barrier"

/* ---------------------------------------------------------- the parts */

/* The waits part into db (run_dir's trace): waits.cause, the tables of
 * the one events pass (with transfers too when with_transfers: one pass
 * for both) and the views. Inside the caller's transaction. */
int ana_derive_waits(sqlite3 *db, const ana_run *run, const char *run_dir, int with_transfers,
                     char *err, size_t errlen);
/* The transfers table alone, from a pass that only pairs issues and
 * completions (the transfers part derived after the waits part). */
int ana_scan_transfers(sqlite3 *db, const ana_run *run, const char *run_dir, char *err,
                       size_t errlen);

#endif

/*
 * ana_internal.h - what the analysis files share; not a public API.
 *
 * The pieces:
 *   ana_db.c       opening a run, meta lookups, small SQLite helpers
 *   ana_kinds.c    event kind / pipe / cond names of the events vtab -> enums
 *   ana_scan.c     one pass over `events`: wake_events, wait_labels
 *   ana_words.c    during that pass, the values of named words:
 *                  word_writes, ring_counters (ana_scan.h is their shared
 *                  state)
 *   ana_cause.c    waits.cause from waits + wake_events + word_writes
 *   ana_links.c    link_bytes from transfers
 *   ana_views.c    the views (core_names, stall_summary, ...)
 *   ana_derive.c   ana_derive: the above in one transaction, plus
 *                  wait_groups (what `stats` reads)
 *   ana_stats.c    `npurr stats`
 *   ana_table.c    aligned / CSV printing of result sets
 *   ana_sql.c      `npurr sql`
 *   ana_export.c, ana_json.c  `npurr export --chrome`
 *   ana_units.c    time and rank-list parsing and formatting
 */
#ifndef NPURR_ANA_INTERNAL_H
#define NPURR_ANA_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

#include "engine/engine.h"

/* snprintf into a caller's error buffer (tolerates err == NULL). */
void ana_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Runs SQL without results; on failure err says which statement failed. */
int ana_exec(sqlite3 *db, const char *sql, char *err, size_t errlen);
/* meta value parsed as an integer; def if absent or not a number. */
int64_t ana_meta_i64(sqlite3 *db, const char *key, int64_t def);
/* 1 if table or view `name` exists in the main schema. */
int ana_has_table(sqlite3 *db, const char *name);

/* SQL expression naming a core like "r3 AIV5" from columns rank, core and
 * core_type of the row alias `a`, given the run's AIC count. Writes into buf. */
void ana_core_label_sql(char *buf, size_t len, const char *alias, int64_t num_aic);

/* Event kinds from the vtab's text column (engine_event_kind_name); 0 if
 * unknown. The text need not be NUL-terminated: len gives its length. */
int ana_kind_from_text(const char *text, size_t len);
/* engine_pipe values from engine_pipe_name text; -1 if unknown. */
int ana_pipe_from_text(const char *text);
/* Operator of an engine_cond ("==", ">=", ...); "?" if unknown. */
const char *ana_cond_op(int cond);

/* ---------------------------------------------------------- derive steps */

/* The run's shape, read from meta before deriving. */
typedef struct ana_run {
    int64_t cores_per_rank, num_aic, npus_per_node, ranks;
    int64_t end_time_ps;
} ana_run;
int ana_run_load(sqlite3 *db, ana_run *run, char *err, size_t errlen);

/* ana_scan.c (with ana_words.c): creates and fills word_writes,
 * wake_events, wait_labels and ring_counters from one pass over events. */
int ana_scan_events(sqlite3 *db, const ana_run *run, char *err, size_t errlen);
/* ana_cause.c: fills waits.cause. */
int ana_derive_causes(sqlite3 *db, const ana_run *run, char *err, size_t errlen);
/* ana_links.c: creates and fills link_bytes; stores analysis.bucket_ps. */
int ana_derive_links(sqlite3 *db, const ana_run *run, char *err, size_t errlen);
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
/* One CSV field (quoted when it holds a comma, quote or newline). */
void ana_csv_field(FILE *out, const char *s);

/* ---------------------------------------------------------- JSON output */

/* Writes s as a JSON string literal (with quotes). */
void ana_json_str(FILE *out, const char *s);
/* Writes ps as microseconds with six decimals, exactly (no float rounding). */
void ana_json_us(FILE *out, uint64_t ps);

#endif

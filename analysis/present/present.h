/*
 * present.h - the presentation room of the analysis: what npurr shows of
 * a derived run (stats, critical, sql, diff, export, report) and the SVG
 * pieces every plot is drawn with. Each reads tables the opener
 * (analysis/analysis.h) has made fresh; none derives. Its own headers:
 * ana_print.h (result grids, JSON), ana_timeline.h, ana_pb.h, ana_report.h,
 * ana_svg.h.
 */
#ifndef NPURR_ANA_PRESENT_H
#define NPURR_ANA_PRESENT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

/* ------------------------------------------------------------ stats */

typedef enum {
    ANA_BY_ROLE = 0, ANA_BY_SITE, ANA_BY_RANK, ANA_BY_KIND, ANA_BY_OBJECT, ANA_BY_CAUSE,
    ANA_BY_COUNT
} ana_group_by;

/* "role", "site", ... -> *out; -1 if unknown. */
int ana_group_by_parse(const char *name, ana_group_by *out);
/* The name of by ("role", "site", ...) as --by takes it; static. */
const char *ana_group_by_name(ana_group_by by);

typedef struct ana_stall_row {
    char *group;          /* role name, "file:line function", "r3", ... */
    uint64_t count;
    uint64_t total_ps;
    double mean_ps;
    uint64_t max_ps;
    uint64_t cores;       /* distinct cores the group's waits come from */
    double share;         /* total_ps / (cores * run_ps): their time spent waiting */
} ana_stall_row;

typedef struct ana_stall_table {
    ana_group_by by;
    ana_stall_row *rows;  /* largest total first; ties by group name */
    size_t n;
    size_t groups;        /* groups before --top cut the list */
    uint64_t run_ps;      /* meta end_time_ps: the share denominator */
    uint64_t waits;       /* all waits of the run */
    uint64_t total_ps;    /* summed duration of all waits */
    int blocked;          /* 1: only the waits that never ended */
} ana_stall_table;

/* Fills *t with the stall table grouped by `by`, at most top rows (0 = all). */
int ana_stall_table_get(sqlite3 *db, ana_group_by by, size_t top, ana_stall_table *t,
                        char *err, size_t errlen);
/* The same table over the waits that never ended (a deadlock's or a
 * watchdog's blocked cores: what the hang waits on); empty otherwise. */
int ana_blocked_table_get(sqlite3 *db, ana_group_by by, size_t top, ana_stall_table *t,
                          char *err, size_t errlen);
/* The same table from the recorder's own tables (waits, tracks), with no
 * analysis tables: every grouping gives exactly what ana_stall_table_get
 * gives after ana_derive, except cause, which is unclassified throughout
 * before it. What `npurr record` prints after a completed run, so the
 * recording does not wait for the derivation. */
int ana_stall_table_get_recorded(sqlite3 *db, ana_group_by by, size_t top, ana_stall_table *t,
                                 char *err, size_t errlen);
/* Frees t's rows (not t itself). */
void ana_stall_table_free(ana_stall_table *t);
/* The `npurr stats` report: a header line that explains the share's
 * denominator, then an aligned table in human units. */
void ana_stall_table_print(const ana_stall_table *t, FILE *out);
/* The same rows as CSV (times in ps, share as a fraction), after a header
 * line if header: table (all|blocked), by, group, cores, count, total_ps,
 * mean_ps, max_ps, share. */
void ana_stall_table_print_csv(const ana_stall_table *t, int header, FILE *out);

/* ------------------------------------------------------------ critical path */

/* The critical_path table (derived with the others; ana_critical.c) says
 * what bounded the run's end time: segments that tile [0, end_time_ps],
 * each on one resource class (hbm, mte, hccs, hccs_latency, nic,
 * rdma_latency, scalar, vector, cube, aicpu, sync, jitter, launch, blocked,
 * idle) and instance ("HCCS r0->r3", "scalar r3 AIV5"). */
typedef enum {
    ANA_CRIT_BY_RESOURCE = 0, ANA_CRIT_BY_CLASS, ANA_CRIT_BY_ROLE, ANA_CRIT_BY_RANK,
    ANA_CRIT_BY_SITE, ANA_CRIT_BY_COUNT
} ana_crit_by;
/* "resource", "class", "role", "rank" or "site" into *out: 0, or -1 if
 * unknown. */
int ana_crit_by_parse(const char *name, ana_crit_by *out);
/* The name of by as --by takes it; static. */
const char *ana_crit_by_name(ana_crit_by by);

typedef struct ana_crit_row {
    char *group;          /* "NIC r3 tx", "RDMASender", "r3", "file:line function" */
    char *cls;            /* by resource and class: the class; "" otherwise */
    uint64_t segments;
    uint64_t total_ps;
    double share;         /* total_ps / end_time_ps */
} ana_crit_row;

typedef struct ana_crit_table {
    ana_crit_by by;
    ana_crit_row *rows;   /* largest total first */
    size_t n, groups;     /* rows kept (--top), groups in all */
    uint64_t end_ps;      /* meta end_time_ps */
    uint64_t total_ps;    /* sum over every group: end_ps */
    uint64_t segments;
    char outcome[32];     /* meta outcome */
    char ending[400];     /* the event the path ends at, in words */
} ana_crit_table;

/* From a derived index (ana_open). top 0 = every group. */
int ana_crit_table_get(sqlite3 *db, ana_crit_by by, size_t top, ana_crit_table *t, char *err,
                       size_t errlen);
/* Frees t's rows (not t itself). */
void ana_crit_table_free(ana_crit_table *t);
/* The `npurr critical` report: the run's end and what it ended at, then an
 * aligned table of the groups in human units. */
void ana_crit_table_print(const ana_crit_table *t, FILE *out);
/* by,group,class,segments,total_ps,share */
void ana_crit_table_print_csv(const ana_crit_table *t, int header, FILE *out);

/* ------------------------------------------------------------ diff */

/* Prints what changed from run a to run b (both opened derived): the run's
 * virtual time, then per group of `by` (role, site, rank, kind, object,
 * cause: stall count, total and share; "link": bytes and busy bandwidth per
 * link and link class) A, B, the change and the relative change, largest
 * change first, at most top rows (0 = all); CSV with csv (ana_diff.c).
 * The caller checks that both runs are of one kernel. */
int ana_diff_print(sqlite3 *a, sqlite3 *b, const char *by, size_t top, int csv, FILE *out,
                   char *err, size_t errlen);

/* ------------------------------------------------------------ sql */

/* Runs every statement of query on db and prints each result set as an
 * aligned table (header + rows) or, with csv, as RFC 4180 CSV. On a SQLite
 * error returns -1 with err holding SQLite's message and the query. */
int ana_sql_print(sqlite3 *db, const char *query, int csv, FILE *out, char *err,
                  size_t errlen);

/* ------------------------------------------------------------ export */

typedef struct ana_export_opts {
    uint64_t from_ps;     /* virtual-time window; slices that overlap it */
    uint64_t to_ps;       /* 0 = the end of the run */
    const char *ranks;    /* "0,3-5"; NULL or "" = every rank */
    int raw_packets;      /* --perfetto: packets not deflated in bundles (a .gz
                             file, protoc --decode) */
} ana_export_opts;

/* What an export wrote. */
typedef struct ana_export_counts {
    uint64_t slices;      /* waits and transfers */
    uint64_t flows;       /* waker -> wait arrows */
    uint64_t counters;    /* counter samples: ring occupancy, link GB/s, NIC queue */
    uint64_t tracks;      /* core, pipe (and lane) and counter tracks */
} ana_export_counts;

/* Both exports write the same timeline (analysis/present/ana_timeline.h): a
 * process per rank, a track per core (its waits) with a track per pipe
 * under it (its transfers; lanes where they overlap), flow arrows from the
 * event that ended a wait to the wait's end, and counters. It is built in
 * memory (about 100 bytes per slice). counts may be NULL. */

/* Chrome trace event JSON (ui.perfetto.dev, chrome://tracing). */
int ana_export_chrome(sqlite3 *db, const ana_export_opts *opts, FILE *out,
                      ana_export_counts *counts, char *err, size_t errlen);
/* Perfetto's native protobuf trace (TrackEvent packets, interned strings). */
int ana_export_perfetto(sqlite3 *db, const ana_export_opts *opts, FILE *out,
                        ana_export_counts *counts, char *err, size_t errlen);

/* Opens path for writing: "-" is standard output, a name ending in ".gz"
 * is written through gzip (zlib). Close with ana_output_close, which says
 * whether everything reached the file. */
FILE *ana_output_open(const char *path, char *err, size_t errlen);
/* Flushes and closes f (a gzip stream's trailer included; standard output is
 * flushed, not closed): 0, or -1 with err naming path when anything failed to
 * reach it. */
int ana_output_close(FILE *f, const char *path, char *err, size_t errlen);

/* ------------------------------------------------------------ report */

/* `npurr report`: one self-contained HTML page (inline CSS and SVG, no
 * script, no network): the outcome and configuration, the wait-for graph
 * of a run that hung, stall share by rank x role, the top stall sites,
 * per-rank activity by cause, ring occupancy and link bandwidth over time.
 * run_name titles the page. */
int ana_report_html(sqlite3 *db, const char *run_name, FILE *out, char *err, size_t errlen);

/* s as one CSV field: quoted when it holds a comma, quote or newline
 * (npurr sql --csv, stats --csv, the CLI's own CSV files). */
void ana_csv_field(FILE *out, const char *s);

/* ------------------------------------------------------------ drawing */

/* The SVG pieces every plot npurr draws is made of (ana_svg.c): the
 * report's and the sweep's pages. */

/* Text with &, <, >, " escaped (HTML and SVG). */
void svg_esc(FILE *out, const char *s);
/* <svg> of w x h with an id and an accessible label; close with svg_close. */
void svg_open(FILE *out, const char *id, int w, int h, const char *label);
/* Ends what svg_open began. */
void svg_close(FILE *out);
/* A rectangle; title (may be NULL) shows on hover. */
void svg_rect(FILE *out, double x, double y, double w, double h, const char *fill,
              const char *title);
/* Text at (x, y); anchor "start", "middle" or "end"; cls a CSS class or NULL. */
void svg_text(FILE *out, double x, double y, const char *anchor, const char *cls,
              const char *text);
/* A line from (x1, y1) to (x2, y2) in colour stroke. */
void svg_line(FILE *out, double x1, double y1, double x2, double y2, const char *stroke);

#endif

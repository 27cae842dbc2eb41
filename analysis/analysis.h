/*
 * analysis.h - what npurr derives from a recorded run and how it shows it.
 *
 * This is the analysis library's one public header. The CLI (`stats`, `sql`
 * and `export`, which derive on first use, and `record`/`reindex`, which
 * call ana_derive for a run that did not complete) and the tests use it. The library reads RUN/index.db, written by the recorder, the
 * `events` virtual table the recorder registers over RUN/trace.zst, and
 * (ana_derive) RUN/trace.zst itself through the recorder's reader.
 *
 * ana_derive adds, on top of the recorder's tables (docs/sql.md lists every
 * table and column):
 *   waits.cause      the class of every wait, in the spirit of Scalasca's
 *                    wait-state patterns (producer_late, transfer_slow,
 *                    flow_control, credit_starvation, barrier); the exact
 *                    rules are in analysis/ana_cause.c and docs/sql.md
 *   word_writes      every write to a named word (who, when, value after)
 *   wake_events      the event that ended each wait (kind, time, track)
 *   wait_labels      what each wait waits for, as a sentence
 *   ring_counters    head, tail and occupancy of every ring after each change
 *   link_bytes       bytes moved per link and time bucket
 *   cores            every core's name ("r3 AIV5") and role
 *   wait_groups      waits summed per (role, rank, core, kind, site, object,
 *                    cause): what `stats` and the stall views read
 *   last_writers     the last write to every named word and who made it
 *   critical_path    what bounded the end time: segments tiling [0, end_time_ps],
 *                    each on one resource (ana_critical.c)
 *   views            stall_summary, wait_causes, ring_occupancy,
 *                    link_bandwidth
 * None of the views reference `events`, so `sqlite3 RUN/index.db` runs them.
 *
 * Errors are values: every int-returning call returns 0 on success and -1 on
 * error with a sentence naming the run, option or query at fault in err.
 */
#ifndef NPURR_ANALYSIS_H
#define NPURR_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sqlite3.h>

/* Bumped when the derived tables change shape (meta key analysis.version). */
#define ANA_VERSION 6

/* ------------------------------------------------------------ derive/open */

/* Computes waits.cause for every wait and (re)creates the derived tables and
 * the views stall_summary, wait_causes, ring_occupancy, link_bandwidth, in
 * RUN/index.db itself. Called by `record` after a run that did not
 * complete and by `reindex`; readers go through ana_ensure_fresh instead.
 * Idempotent: a second call gives the same tables. */
int ana_derive(const char *run_dir, char *err, size_t errlen);
/* Opens RUN/index.db read-write with the events vtab registered, after
 * checking that the index was built from RUN/trace.zst as it is now
 * (rec_index_matches_trace). No derivation. Close with sqlite3_close. */
int ana_open(const char *run_dir, sqlite3 **db, char *err, size_t errlen);
/* Same derivation on an already open connection to RUN/index.db (tests and
 * benchmarks that hold a connection); the trace is read from the same
 * folder. Stamps meta analysis.trace_fingerprint with the index's
 * trace_fingerprint: the caller has checked that index and trace match. */
int ana_derive_db(sqlite3 *db, char *err, size_t errlen);

/* Where a run's analysis tables can be read, as ana_ensure_fresh found or
 * made them. */
typedef struct ana_source {
    char run_dir[4096];
    char db_path[4200];            /* RUN/index.db, or the per-user cache copy */
    char trace_fingerprint[128];   /* the trace's, as meta trace_fingerprint spells it */
    int cached;                    /* 1: db_path is a cache copy (read-only run) */
    int partial;                   /* 1: the trace is truncated (outcome "truncated") */
    char partial_note[800];        /* what a reader should print when partial */
} ana_source;

/* THE entry point to a run's analysis tables; every reader goes through it
 * (stats, sql, export, record's summary, the SQLite extension). It
 *   1. refuses an index that was not built from RUN/trace.zst as it is now
 *      (another run's index, a trace truncated or damaged after indexing),
 *      with a message naming both and `npurr reindex RUN`;
 *   2. uses the analysis tables when they are fresh: meta analysis.version
 *      is ANA_VERSION and analysis.trace_fingerprint is the trace's (and
 *      the stamps of the other parts asked for, ANA_PART_* below);
 *   3. else derives the parts missing, into RUN/index.db when the run folder is
 *      writable, else into a private per-user cache database (a copy of
 *      the index, named by the trace's fingerprint, under
 *      $XDG_CACHE_HOME/npurr, $HOME/.cache/npurr or $TMPDIR/npurr-cache-UID),
 *      so a read-only run can be queried by anyone who can read it.
 * src->db_path is then the database that holds every table (recorder's
 * and derived); src->partial says the trace is truncated. Writes nothing
 * into a run that is fresh. Returns 0, or -1 with err. */
int ana_ensure_fresh(const char *run_dir, ana_source *src, char *err, size_t errlen);
enum { ANA_OPEN_QUERY_ONLY = 1, ANA_OPEN_NO_DERIVE = 2 };
/* The analysis tables come in parts, each derived on its first use and
 * stamped with the trace's fingerprint (meta analysis.trace_fingerprint,
 * analysis.transfers, analysis.critical), so a question pays only for the
 * tables it reads. Flags for ana_ensure_fresh_flags and ana_open_fresh; a
 * caller that names none of them gets every part:
 *   ANA_PART_WAITS      waits.cause, cores, wait_groups, wait_labels,
 *                       wake_events, word_writes, ring_counters, link_bytes,
 *                       last_writers and the views (stats, sql, waitfor)
 *   ANA_PART_TRANSFERS  transfers (a second pass over the trace)
 *   ANA_PART_CRITICAL   critical_path (the critical path walk)
 * Every part needs the waits part, which is derived with it if missing. */
enum { ANA_PART_WAITS = 4, ANA_PART_TRANSFERS = 8, ANA_PART_CRITICAL = 16,
       ANA_PARTS = ANA_PART_WAITS | ANA_PART_TRANSFERS | ANA_PART_CRITICAL };
/* The parts a SQL text reads: ANA_PART_WAITS, plus those whose table it
 * names as a word (transfers, critical_path). For `npurr sql`, which
 * derives what the query needs before running it. */
int ana_parts_of_sql(const char *sql);
/* ana_ensure_fresh with ANA_OPEN_NO_DERIVE in flags: fresh tables (in the
 * index or the cache) are served, missing ones are an error instead of
 * being derived (a reader that must not write, such as the extension on a
 * read-only connection). */
int ana_ensure_fresh_flags(const char *run_dir, int flags, ana_source *src, char *err,
                           size_t errlen);
/* ana_ensure_fresh, then src->db_path opened read-only with the events
 * vtab registered over RUN/trace.zst. ANA_OPEN_QUERY_ONLY (npurr sql) also
 * sets PRAGMA query_only and refuses ATTACH, DETACH and PRAGMA assignments.
 * src may be NULL. 0 with *db (the caller closes it with sqlite3_close),
 * or -1 with err and *db NULL. */
int ana_open_fresh(const char *run_dir, int flags, sqlite3 **db, ana_source *src, char *err,
                   size_t errlen);
/* ana_open_fresh(run_dir, 0, db, NULL, ...). */
int ana_open_derived(const char *run_dir, sqlite3 **db, char *err, size_t errlen);

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

/* From a derived index (ana_open_fresh). top 0 = every group. */
int ana_crit_table_get(sqlite3 *db, ana_crit_by by, size_t top, ana_crit_table *t, char *err,
                       size_t errlen);
/* Frees t's rows (not t itself). */
void ana_crit_table_free(ana_crit_table *t);
/* The `npurr critical` report: the run's end and what it ended at, then an
 * aligned table of the groups in human units. */
void ana_crit_table_print(const ana_crit_table *t, FILE *out);
/* by,group,class,segments,total_ps,share */
void ana_crit_table_print_csv(const ana_crit_table *t, int header, FILE *out);

/* What makes a class of the path twice as fast: hw keys and the factor
 * each is multiplied by (2 for a bandwidth, 0.5 for a latency or a cost),
 * ended by a NULL key. NULL for the classes that are no resource (jitter,
 * launch, blocked, idle) or unknown (ana_crit_classes.c). */
typedef struct ana_whatif_knob {
    const char *key;
    double factor;
} ana_whatif_knob;
/* The knobs of class cls (static, ended by a NULL key); NULL as above. */
const ana_whatif_knob *ana_crit_class_knobs(const char *cls);
/* One line saying what the class is ("HBM bandwidth of a rank"), "" if unknown. */
const char *ana_crit_class_what(const char *cls);

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

/* Both exports write the same timeline (analysis/ana_timeline.h): a
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

/* ------------------------------------------------------------ units */

/* "1.50 us"-style text for a duration in ps (ps, ns, us, ms, s). */
void ana_format_ps(double ps, char *buf, size_t len);
/* Accepts "12345" (ps), "10ps", "1.5ns", "10us", "2ms", "1s". */
int ana_parse_time(const char *text, uint64_t *ps, char *err, size_t errlen);
/* "0,3-5" -> bitmap over ranks [0, nbits); -1 with err on a malformed list
 * or a rank >= nbits. A NULL bitmap checks the syntax only (any rank). */
int ana_parse_ranks(const char *text, uint8_t *bitmap, size_t nbits, char *err,
                    size_t errlen);

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

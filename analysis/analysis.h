/*
 * analysis.h - what npurr derives from a recorded run and how it shows it.
 *
 * This is the analysis library's one public header; the CLI, the SQLite
 * extension and the tests use it. The library reads RUN/index.db, written
 * by the recorder, the `events` virtual table the recorder registers over
 * RUN/trace.zst, and RUN/trace.zst itself through the recorder's reader.
 *
 * It is three rooms and an opener (ARCHITECTURE.md draws them):
 *   derive/    what is derived, a part at a time (derive.h)
 *   critical/  the critical path walk and its classes (critical.h)
 *   present/   what is shown: stats, critical, sql, diff, export, report
 *              (present.h)
 *   ana_open.c, ana_fresh.c, ana_parts.c  the one opener, ana_open: every
 *              reader and writer of a run's analysis goes through it
 * This header is the opener's, and includes the rooms' headers for the
 * rest of npurr.
 *
 * The derivation adds, on top of the recorder's tables (docs/sql.md lists
 * every table and column):
 *   waits.cause      the class of every wait, in the spirit of Scalasca's
 *                    wait-state patterns (producer_late, transfer_slow,
 *                    flow_control, credit_starvation, barrier); the exact
 *                    rules are in analysis/derive/ana_cause.c and docs/sql.md
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
 *                    each on one resource (critical/ana_critical.c)
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

#include "analysis/critical/critical.h"
#include "analysis/derive/derive.h"
#include "analysis/present/present.h"

/* Bumped when the derived tables change shape or storage (meta key
 * analysis.version). 7: transfers, wake_events and wait_labels packed. */
#define ANA_VERSION 7

/* ------------------------------------------------------------ the opener */

/* Where a run's analysis tables can be read, as ana_open found or made
 * them. */
typedef struct ana_source {
    char run_dir[4096];
    char db_path[4200];            /* RUN/index.db, or the per-user cache copy */
    char trace_fingerprint[128];   /* the trace's, as meta trace_fingerprint spells it */
    int cached;                    /* 1: db_path is a cache copy (read-only run) */
    int partial;                   /* 1: the trace is truncated (outcome "truncated") */
    char partial_note[800];        /* what a reader should print when partial */
} ana_source;

/* The analysis tables come in parts, each derived on its first use and
 * stamped with the trace's fingerprint (meta analysis.trace_fingerprint,
 * analysis.transfers, analysis.critical), so a question pays only for the
 * tables it reads. A caller that names none of them gets every part:
 *   ANA_PART_WAITS      waits.cause, cores, wait_groups, wait_labels,
 *                       wake_events, word_writes, ring_counters, link_bytes,
 *                       last_writers and the views (stats, sql, waitfor)
 *   ANA_PART_TRANSFERS  transfers (a second pass over the trace)
 *   ANA_PART_CRITICAL   critical_path (the critical path walk)
 * Every part needs the waits part, which is derived with it if missing.
 * The other flags say how the run is opened:
 *   ANA_OPEN_QUERY_ONLY  (npurr sql) PRAGMA query_only, and ATTACH, DETACH
 *                        and PRAGMA assignments refused
 *   ANA_OPEN_NO_DERIVE   fresh parts (in the index or the cache) are
 *                        served, missing ones are an error instead of being
 *                        derived (a reader that must not write, such as the
 *                        extension on a read-only connection)
 *   ANA_OPEN_REDERIVE    every part derived anew into RUN/index.db, fresh or
 *                        not (record after a run that did not complete,
 *                        reindex); the run folder must be writable
 *   ANA_OPEN_AS_IS       RUN/index.db read-write as it is, with the events
 *                        vtab: no analysis checked or derived (tests and
 *                        benchmarks that look at the recorder's tables) */
enum {
    ANA_OPEN_QUERY_ONLY = 1, ANA_OPEN_NO_DERIVE = 2,
    ANA_PART_WAITS = 4, ANA_PART_TRANSFERS = 8, ANA_PART_CRITICAL = 16,
    ANA_PARTS = ANA_PART_WAITS | ANA_PART_TRANSFERS | ANA_PART_CRITICAL,
    ANA_OPEN_REDERIVE = 32, ANA_OPEN_AS_IS = 64
};

/* THE way to a run's analysis tables; every reader and writer goes through
 * it (stats, sql, export, report, critical, diff, whatif, record, reindex,
 * the SQLite extension). It
 *   1. refuses an index that was not built from RUN/trace.zst as it is now
 *      (another run's index, a trace truncated or damaged after indexing),
 *      with a message naming both and `npurr reindex RUN`;
 *   2. uses the analysis parts asked for (flags) when they are fresh: meta
 *      analysis.version is ANA_VERSION and the parts' stamps are the
 *      trace's fingerprint;
 *   3. else derives the parts missing, into RUN/index.db when the run folder is
 *      writable, else into a private per-user cache database (a copy of
 *      the index, named by the trace's fingerprint, under
 *      $XDG_CACHE_HOME/npurr, $HOME/.cache/npurr or $TMPDIR/npurr-cache-UID),
 *      so a read-only run can be queried by anyone who can read it;
 *   4. opens the database that holds every table (src->db_path: the
 *      recorder's and the derived ones) read-only, with the events vtab
 *      registered over RUN/trace.zst, into *db.
 * db NULL: steps 1-3 only (nothing opened). src may be NULL; src->partial
 * says the trace is truncated. Writes nothing into a run that is fresh.
 * Returns 0 with *db (the caller closes it with sqlite3_close), or -1 with
 * err and *db NULL. */
int ana_open(const char *run_dir, int flags, sqlite3 **db, ana_source *src, char *err,
             size_t errlen);
/* The parts a SQL text reads: ANA_PART_WAITS, plus those whose table it
 * names as a word (transfers, critical_path). For `npurr sql`, which
 * derives what the query needs before running it. */
int ana_parts_of_sql(const char *sql);

#endif

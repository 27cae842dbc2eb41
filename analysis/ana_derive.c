/*
 * ana_derive.c - ana_derive: everything analysis adds to index.db, in one
 * transaction.
 *
 * Order matters: the events scan materializes wake_events and word_writes,
 * which the cause classifier reads; the views are created last. Every step
 * drops and recreates what it owns, so deriving twice gives the same index
 * (record derives once, reindex again after rebuilding the recorder's
 * tables). A failure rolls back, leaving the index as it was.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "analysis/analysis.h"
#include "analysis/ana_internal.h"

/* NPURR_ANA_TIMING=1 prints how long each step takes (to stderr). */
static double step_clock(const char *done, double since) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double t = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
    if (done && getenv("NPURR_ANA_TIMING")) fprintf(stderr, "ana_derive: %-8s %.3f s\n", done,
                                                     t - since);
    return t;
}

int ana_derive_db(sqlite3 *db, char *err, size_t errlen) {
    ana_run run;
    if (ana_run_load(db, &run, err, errlen)) return -1;
    /* A big cache and an in-memory rollback journal: derive rewrites most
     * of waits, and index.db can always be rebuilt from the trace. */
    sqlite3_exec(db, "PRAGMA cache_size = -262144; PRAGMA journal_mode = MEMORY", NULL, NULL,
                 NULL);
    if (ana_exec(db, "BEGIN IMMEDIATE", err, errlen)) return -1;
    char meta[160];
    snprintf(meta, sizeof meta,
             "INSERT OR REPLACE INTO meta(key, value) VALUES ('analysis.version', '%d')",
             ANA_VERSION);
    /* Indexes the classifier's joins need on the recorder's tables. */
    double t = step_clock(NULL, 0);
    int rc = ana_exec(db,
                      "CREATE INDEX IF NOT EXISTS transfers_issue_seq ON transfers(issue_seq);"
                      "CREATE INDEX IF NOT EXISTS waits_begin_seq ON waits(begin_seq);",
                      err, errlen);
    if (!rc) rc = ana_scan_events(db, &run, err, errlen), t = step_clock("scan", t);
    if (!rc) rc = ana_derive_causes(db, &run, err, errlen), t = step_clock("causes", t);
    if (!rc) rc = ana_derive_links(db, &run, err, errlen), t = step_clock("links", t);
    /* wait_groups: the waits summed per combination of every key `stats`
     * groups by, so any grouping reads a few thousand rows instead of every
     * wait (under a second on ten million events). The partial index finds
     * a deadlock's blocked waits without a scan. */
    if (!rc)
        rc = ana_exec(db,
                      "DROP TABLE IF EXISTS wait_groups;"
                      "CREATE TABLE wait_groups AS SELECT role, rank, core, kind, site, object,"
                      " cause, COUNT(*) AS count, SUM(dur_ps) AS total_ps, MAX(dur_ps) AS max_ps"
                      " FROM waits GROUP BY role, rank, core, kind, site, object, cause;"
                      "DROP INDEX IF EXISTS waits_blocked;"
                      "CREATE INDEX waits_blocked ON waits(rank, core) WHERE end_seq IS NULL;",
                      err, errlen),
        t = step_clock("groups", t);
    if (!rc) rc = ana_create_views(db, &run, err, errlen);
    if (!rc) rc = ana_exec(db, meta, err, errlen);
    if (rc) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    return ana_exec(db, "COMMIT", err, errlen);
}

int ana_derive(const char *run_dir, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    if (ana_open(run_dir, &db, err, errlen)) return -1;
    char inner[1024];
    int rc = ana_derive_db(db, inner, sizeof inner);
    if (rc) ana_err(err, errlen, "%s: deriving analysis tables: %s", run_dir, inner);
    sqlite3_close(db);
    return rc;
}

int ana_open_derived(const char *run_dir, sqlite3 **db, char *err, size_t errlen) {
    if (ana_open(run_dir, db, err, errlen)) return -1;
    static const char *const tables[] = {"cores", "wait_groups", "wait_labels", "word_writes",
                                         "wake_events", "ring_counters", "link_bytes",
                                         "stall_summary", "ring_occupancy"};
    int complete = ana_meta_i64(*db, "analysis.version", 0) == ANA_VERSION;
    for (size_t i = 0; complete && i < sizeof tables / sizeof tables[0]; i++)
        complete = ana_has_table(*db, tables[i]);
    if (complete) return 0;
    char inner[1024];
    if (ana_derive_db(*db, inner, sizeof inner) == 0) return 0;
    ana_err(err, errlen, "%s: deriving analysis tables: %s", run_dir, inner);
    sqlite3_close(*db);
    *db = NULL;
    return -1;
}

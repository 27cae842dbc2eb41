/*
 * ana_open.c - ana_open, the one opener of a run's analysis (analysis.h):
 * what a caller's flags ask for, in one place. Served fresh (ana_fresh.c,
 * deriving what is missing: ana_parts.c), derived anew in place
 * (ANA_OPEN_REDERIVE: record, reindex) or opened as it is
 * (ANA_OPEN_AS_IS: the recorder's tables alone); `npurr sql` gets a
 * connection that can change nothing (ANA_OPEN_QUERY_ONLY).
 */
#include <stdio.h>
#include <sys/stat.h>

#include "analysis/ana_parts.h"
#include "recorder/recorder.h"

/* Connection policy of `npurr sql`: nothing a query does may write a file
 * or reach another database. */
static int deny_outside(void *ctx, int action, const char *a, const char *b, const char *dbname,
                        const char *trigger) {
    (void)ctx, (void)a, (void)dbname, (void)trigger;
    if (action == SQLITE_ATTACH || action == SQLITE_DETACH) return SQLITE_DENY;
    /* PRAGMA name = value (b is the value) changes the connection or the file. */
    if (action == SQLITE_PRAGMA && b) return SQLITE_DENY;
    return SQLITE_OK;
}

/* RUN/index.db read-write, after checking that the index was built from
 * RUN/trace.zst as it is now (rec_index_matches_trace); no derivation. */
static int open_as_is(const char *run_dir, sqlite3 **out, char *err, size_t errlen) {
    *out = NULL;
    char path[4096];
    if (snprintf(path, sizeof path, "%s/index.db", run_dir) >= (int)sizeof path) {
        ana_err(err, errlen, "run path '%s' is too long", run_dir);
        return -1;
    }
    struct stat sb;
    if (stat(path, &sb) != 0) {
        ana_err(err, errlen, "%s: no such file: is '%s' a run folder written by `npurr record`?",
                path, run_dir);
        return -1;
    }
    sqlite3 *db = ana_open_rw(path, err, errlen);
    if (!db) return -1;
    if (rec_index_matches_trace(db, run_dir, NULL, 0, err, errlen) != 0 ||
        rec_register_events_vtab(db, run_dir, err, errlen) != 0) {
        sqlite3_close(db);
        return -1;
    }
    *out = db;
    return 0;
}

/* Every part derived anew into RUN/index.db itself. No run lock: its
 * callers (record, reindex) are the ones that own the run folder. */
static int rederive(const char *run_dir, sqlite3 **out, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    if (open_as_is(run_dir, &db, err, errlen)) return -1;
    char inner[1024];
    int rc = ana_derive_parts(db, run_dir, ANA_PARTS, inner, sizeof inner);
    if (rc) ana_err(err, errlen, "%s: deriving analysis tables: %s", run_dir, inner);
    if (rc || !out) sqlite3_close(db);
    else *out = db;
    return rc;
}

int ana_open(const char *run_dir, int flags, sqlite3 **out, ana_source *src, char *err,
             size_t errlen) {
    if (out) *out = NULL;
    if (flags & ANA_OPEN_AS_IS) {
        if (!out) return 0;
        return open_as_is(run_dir, out, err, errlen);
    }
    if (flags & ANA_OPEN_REDERIVE) return rederive(run_dir, out, err, errlen);
    ana_source local;
    if (!src) src = &local;
    if (!out) return ana_fresh_ensure(run_dir, flags, src, err, errlen);
    sqlite3 *db = NULL;
    if (ana_fresh_open(run_dir, flags, &db, src, err, errlen)) return -1;
    if (flags & ANA_OPEN_QUERY_ONLY) {
        if (ana_exec(db, "PRAGMA query_only = 1", err, errlen)) {
            sqlite3_close(db);
            return -1;
        }
        sqlite3_set_authorizer(db, deny_outside, NULL);
    }
    *out = db;
    return 0;
}

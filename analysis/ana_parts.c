/*
 * ana_parts.c - what analysis adds to index.db, a part at a time
 * (analysis.h: ANA_PART_*), each derive in one transaction.
 *
 * Parts, because the first question should pay only for what it reads:
 * `stats` needs the waits part (causes, wait_groups and the tables of the
 * one events pass), not the transfers (a quarter of the events, most of
 * the derived bytes) nor the critical path (which holds every event in
 * memory). Readers ask ana_open for the parts they read; ANA_OPEN_REDERIVE
 * (record, reindex) makes all of them. Order matters: the events pass
 * materializes wake_events, word_writes and the facts the cause classifier
 * reads; the views come after; the critical path last. Every step drops and
 * recreates what it owns, so deriving twice gives the same index (record
 * derives once, reindex again after rebuilding the recorder's tables).
 *
 * Speed: the transaction is one, with a large page cache (the steps
 * themselves are in the rooms: derive/ana_derive.c, critical/).
 *
 * Safety: derive writes into RUN/index.db in place, which readers share,
 * so it keeps a rollback journal (index.db-journal, synced before the
 * index is overwritten) and rolls the whole transaction back on any
 * failure. A derive killed half-way (kill -9, a crash) leaves a hot
 * journal that the next connection able to write rolls back
 * (rec_index_open_ro does it for readers); a full disk fails the
 * transaction and SQLite's rollback truncates what it appended. Either way
 * index.db is the index it was before, never half a derive. Most of what
 * derive writes is new pages past the old end of the file, which need no
 * journal, so the journal stays a fraction of the index. Belt and braces:
 * the first thing derive does is remove meta analysis.version and the last
 * is to set it, inside the transaction.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/ana_parts.h"

/* The journal mode and synchronous setting derive found, to put back. */
static void pragma_text(sqlite3 *db, const char *sql, char *out, size_t len) {
    sqlite3_stmt *st = NULL;
    out[0] = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(out, len, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
}

/* Stamps part's meta key with the index's trace fingerprint. */
static int stamp(sqlite3 *db, const char *key, char *err, size_t errlen) {
    char sql[200];
    snprintf(sql, sizeof sql,
             "INSERT OR REPLACE INTO meta(key, value) SELECT '%s', value FROM meta"
             " WHERE key = 'trace_fingerprint'", key);
    return ana_exec(db, sql, err, errlen);
}

static int derive_steps(sqlite3 *db, const ana_run *run, const char *dir, int parts, char *err,
                        size_t errlen) {
    int rc = 0;
    double t = ana_step_clock(NULL, 0);
    if (parts & ANA_PART_WAITS) {
        /* New waits tables make every other part stale (critical_path names
         * the cores' roles): what is not derived now goes, and is derived
         * again on its first use. */
        rc = ana_exec(db, "DELETE FROM meta WHERE key IN ('analysis.version',"
                      " 'analysis.trace_fingerprint', 'analysis.transfers', 'analysis.critical');",
                      err, errlen);
        if (!rc && !(parts & ANA_PART_TRANSFERS))
            rc = ana_exec(db, "DROP TABLE IF EXISTS transfers", err, errlen);
        if (!rc && !(parts & ANA_PART_CRITICAL))
            rc = ana_exec(db, "DROP TABLE IF EXISTS critical_path", err, errlen);
        if (!rc) rc = ana_derive_waits(db, run, dir, parts & ANA_PART_TRANSFERS, err, errlen);
        if (!rc) {
            char meta[160];
            snprintf(meta, sizeof meta,
                     "INSERT OR REPLACE INTO meta(key, value) VALUES ('analysis.version', '%d')",
                     ANA_VERSION);
            rc = ana_exec(db, meta, err, errlen);
        }
        /* Provenance: these tables are of the trace the index describes. */
        if (!rc) rc = stamp(db, "analysis.trace_fingerprint", err, errlen);
    } else if (parts & ANA_PART_TRANSFERS) {
        rc = ana_scan_transfers(db, run, dir, err, errlen);
        t = ana_step_clock("transfers", t);
    }
    if (!rc && (parts & ANA_PART_TRANSFERS)) rc = stamp(db, "analysis.transfers", err, errlen);
    /* last: it names the cores' roles from the cores table the waits part made */
    if (!rc && (parts & ANA_PART_CRITICAL)) {
        t = ana_step_clock(NULL, 0);
        rc = ana_critical_derive(db, dir, err, errlen);
        t = ana_step_clock("critical", t);
        if (!rc) rc = stamp(db, "analysis.critical", err, errlen);
    }
    return rc;
}

int ana_derive_parts(sqlite3 *db, const char *dir, int parts, char *err, size_t errlen) {
    ana_run run;
    if (ana_run_load(db, &run, err, errlen)) return -1;
    char journal[32], sync[32];
    pragma_text(db, "PRAGMA journal_mode", journal, sizeof journal);
    pragma_text(db, "PRAGMA synchronous", sync, sizeof sync);
    char inner[256];
    if (ana_exec(db, "PRAGMA cache_size = -65536; PRAGMA journal_mode = DELETE;"
                 " PRAGMA synchronous = NORMAL", inner, sizeof inner)) {
        ana_err(err, errlen, "cannot set up a rollback journal: %s", inner);
        return -1;
    }
    int rc = ana_exec(db, "BEGIN IMMEDIATE", err, errlen);
    if (!rc) rc = derive_steps(db, &run, dir, parts, err, errlen);
    /* All or nothing: a failed step (a full disk among them, where SQLite
     * may already have rolled back) leaves the index as it was. */
    if (sqlite3_get_autocommit(db) == 0) {
        if (!rc && ana_exec(db, "COMMIT", inner, sizeof inner)) {
            ana_err(err, errlen, "%s", inner);
            rc = -1;
        }
        if (rc && sqlite3_get_autocommit(db) == 0)
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    }
    char restore[128];
    if (journal[0] && strcmp(journal, "delete") != 0) {
        snprintf(restore, sizeof restore, "PRAGMA journal_mode = %s", journal);
        sqlite3_exec(db, restore, NULL, NULL, NULL);
    }
    if (sync[0]) {
        snprintf(restore, sizeof restore, "PRAGMA synchronous = %s", sync);
        sqlite3_exec(db, restore, NULL, NULL, NULL);
    }
    return rc ? -1 : 0;
}

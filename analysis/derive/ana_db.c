/*
 * ana_db.c - the small SQLite helpers every room of the analysis shares:
 * errors, statements, meta lookups and the run's shape. Opening a run is
 * the opener's (analysis/ana_open.c).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/derive.h"
#include "recorder/recorder.h"

void ana_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

double ana_step_clock(const char *done, double since) {
    double t = engine_host_seconds();
    if (done && getenv("NPURR_ANA_TIMING"))
        fprintf(stderr, "ana_derive: %-14s %.3f s\n", done, t - since);
    return t;
}

int ana_exec(sqlite3 *db, const char *sql, char *err, size_t errlen) {
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (in: %.200s)", msg ? msg : sqlite3_errmsg(db), sql);
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

sqlite3_stmt *ana_prepare(sqlite3 *db, const char *sql, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) return st;
    ana_err(err, errlen, "index.db: %s (in: %.300s)", sqlite3_errmsg(db), sql);
    return NULL;
}

int ana_create_table(sqlite3 *db, const char *table, const char *columns, char *err,
                     size_t errlen) {
    char *sql = sqlite3_mprintf("DROP TABLE IF EXISTS %s; CREATE TABLE %s(%s);", table, table,
                                columns);
    if (!sql) {
        ana_err(err, errlen, "out of memory creating %s", table);
        return -1;
    }
    int rc = ana_exec(db, sql, err, errlen);
    sqlite3_free(sql);
    return rc;
}

int64_t ana_meta_i64(sqlite3 *db, const char *key, int64_t def) {
    sqlite3_stmt *st = NULL;
    int64_t v = def;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
        return def;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        const char *t = (const char *)sqlite3_column_text(st, 0);
        char *end = NULL;
        long long x = t ? strtoll(t, &end, 10) : 0;
        if (t && end != t && *end == '\0') v = x;
    }
    sqlite3_finalize(st);
    return v;
}

int ana_has_table(sqlite3 *db, const char *name) {
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = ?1", -1, &st, NULL) !=
        SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

const char *ana_waits_table(sqlite3 *db) {
    return ana_has_table(db, "wait_rows") ? "wait_rows" : "waits";
}

static void ana_core_label_sql(char *buf, size_t len, const char *alias, int64_t num_aic) {
    /* AIV cores are numbered after the AICs inside a rank; people count them
     * from 0 per type, as the tracks' names do ("r3 AIV5"). */
    snprintf(buf, len,
             "('r' || %s.rank || ' ' || COALESCE(%s.core_type, 'core') || "
             "(%s.core - CASE WHEN %s.core_type = 'AIV' THEN %lld ELSE 0 END))",
             alias, alias, alias, alias, (long long)num_aic);
}

void ana_cores_select_sql(char *buf, size_t len, int64_t num_aic) {
    char label[512];
    ana_core_label_sql(label, sizeof label, "t", num_aic);
    snprintf(buf, len,
             "SELECT t.rank AS rank, t.core AS core, MAX(t.core_type) AS core_type, %s AS name,"
             " MAX(t.role) AS role FROM tracks t GROUP BY t.rank, t.core",
             label);
}

int ana_run_load(sqlite3 *db, ana_run *run, char *err, size_t errlen) {
    if (!ana_has_table(db, "meta") || !ana_has_table(db, "waits")) {
        ana_err(err, errlen, "index.db has no meta/waits tables: not an npurr run index "
                "(rebuild it with `npurr reindex RUN`)");
        return -1;
    }
    run->cores_per_rank = ana_meta_i64(db, "cores_per_rank", 0);
    run->num_aic = ana_meta_i64(db, "num_aic", 0);
    run->npus_per_node = ana_meta_i64(db, "config.npus_per_node", 8);
    run->ranks = ana_meta_i64(db, "config.nodes", 1) * run->npus_per_node;
    run->end_time_ps = ana_meta_i64(db, "end_time_ps", 0);
    if (run->cores_per_rank <= 0 || run->npus_per_node <= 0 || run->ranks <= 0) {
        ana_err(err, errlen, "index.db meta lacks cores_per_rank / config.nodes / "
                "config.npus_per_node: the index is incomplete (try `npurr reindex RUN`)");
        return -1;
    }
    return 0;
}

/* NOMUTEX: a connection serves one thread (the events table's decode-ahead
 * thread never touches SQLite), and derive and big queries make tens of
 * millions of API calls that would each take the connection's mutex. */
sqlite3 *ana_open_rw(const char *path, char *err, size_t errlen) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        ana_err(err, errlen, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_busy_timeout(db, 5000);
    if (ana_packed_register(db, err, errlen)) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

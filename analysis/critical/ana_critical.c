/*
 * ana_critical.c - the critical_path table.
 *
 * ana_derive's last step: the walk (ana_crit_walk.c) over the run's events
 * (ana_crit_load.c) gives segments that tile [0, end_time_ps]; they become
 *   critical_path(seg INTEGER PRIMARY KEY, start_ps, end_ps, dur_ps, class,
 *                 resource, rank, core, core_name, role, seq, site)
 * (read back by present/ana_crit_table.c for `npurr critical`). Like every
 * derived table it is made on first use and lives in RUN/index.db (or the
 * per-user cache copy of a read-only run).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/critical/ana_crit.h"
#include "analysis/derive/derive.h"
#include "analysis/critical/critical.h"
#include "recorder/recorder.h"

static const char *const create_sql =
    "DROP TABLE IF EXISTS critical_path;"
    "CREATE TABLE critical_path(seg INTEGER PRIMARY KEY, start_ps INT, end_ps INT, dur_ps INT,"
    " class TEXT, resource TEXT, rank INT, core INT, core_name TEXT, role TEXT, seq INT,"
    " site INT);";

/* "the last kernel end, seq 9 at 1.20 us on r3 AIV5 (HCCSReceiver)" */
static void describe_ending(sqlite3 *db, const ana_crit_run *run, uint64_t seq, char *out,
                            size_t len) {
    const ana_crit_ev *e = &run->ev[seq];
    char core[48], when[32], role[128] = "";
    ana_crit_core_name(e->rank, e->core, run->m.num_aic, core, sizeof core);
    ana_format_ps((double)e->time, when, sizeof when);
    sqlite3_stmt *st = NULL;
    if (ana_has_table(db, "cores") &&
        sqlite3_prepare_v2(db, "SELECT role FROM cores WHERE rank = ? AND core = ?", -1, &st,
                           NULL) == SQLITE_OK) {
        sqlite3_bind_int(st, 1, e->rank);
        sqlite3_bind_int(st, 2, e->core);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(role, sizeof role, " (%s)", (const char *)sqlite3_column_text(st, 0));
    }
    sqlite3_finalize(st);
    const char *what = e->kind == EV_KERNEL_END ? "the last kernel end"
                       : e->kind == EV_FAULT    ? "the fault"
                       : run->outcome != OUTCOME_COMPLETED && run->open_wait &&
                               run->open_wait[(size_t)e->rank * (size_t)run->cores_per_rank + e->core] == seq
                           ? "the wait that blocked last"
                           : "the last step of a core";
    snprintf(out, len, "%s, seq %llu at %s on %s%s", what, (unsigned long long)seq, when, core,
             role);
}

static int set_meta(sqlite3 *db, const char *key, const char *value, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    const char *sql = "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        return -1;
    }
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    if (rc) ana_err(err, errlen, "index.db: setting meta %s: %s", key, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc;
}

int ana_critical_derive(sqlite3 *db, const char *run_dir, char *err, size_t errlen) {
    ana_crit_run run;
    ana_crit_seg *seg = NULL;
    size_t n = 0;
    int64_t events = ana_meta_i64(db, "events", 0);
    if (ana_crit_load(run_dir, events > 0 ? (uint64_t)events : 0, &run, err, errlen)) return -1;
    /* the index's end time is the one every table and share uses */
    int64_t end = ana_meta_i64(db, "end_time_ps", -1);
    if (end >= 0 && (uint64_t)end >= run.end_time) run.end_time = (uint64_t)end;
    int rc = ana_crit_walk(&run, &seg, &n, err, errlen);
    int num_aic = run.m.num_aic;
    char ending[400] = "";
    uint64_t end_seq = rc ? 0 : ana_crit_ending(&run);
    if (end_seq) describe_ending(db, &run, end_seq, ending, sizeof ending);
    ana_crit_run_free(&run);
    if (rc) return -1;
    rc = ana_exec(db, create_sql, err, errlen);
    if (!rc) rc = set_meta(db, "critical.ending", ending, err, errlen);
    sqlite3_stmt *st = NULL;
    const char *ins = "INSERT INTO critical_path(seg, start_ps, end_ps, dur_ps, class, resource,"
                      " rank, core, core_name, seq, site) VALUES (?,?,?,?,?,?,?,?,?,?,?)";
    if (!rc && sqlite3_prepare_v2(db, ins, -1, &st, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), ins);
        rc = -1;
    }
    for (size_t i = 0; !rc && i < n; i++) {
        const ana_crit_seg *s = &seg[i];
        char res[96], core[48];
        ana_crit_resource_text(s, num_aic, res, sizeof res);
        sqlite3_bind_int64(st, 1, (int64_t)i + 1);
        sqlite3_bind_int64(st, 2, (int64_t)s->start);
        sqlite3_bind_int64(st, 3, (int64_t)s->end);
        sqlite3_bind_int64(st, 4, (int64_t)(s->end - s->start));
        sqlite3_bind_text(st, 5, ana_crit_class_name(s->cls), -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, res, -1, SQLITE_TRANSIENT);
        int known = s->cls != CRIT_LAUNCH && s->cls != CRIT_IDLE;
        if (known) sqlite3_bind_int64(st, 7, s->rank);
        else sqlite3_bind_null(st, 7);
        if (s->has_core) {
            ana_crit_core_name(s->rank, s->core, num_aic, core, sizeof core);
            sqlite3_bind_int64(st, 8, s->core);
            sqlite3_bind_text(st, 9, core, -1, SQLITE_TRANSIENT);
        } else {
            sqlite3_bind_null(st, 8);
            sqlite3_bind_null(st, 9);
        }
        if (s->seq) sqlite3_bind_int64(st, 10, (int64_t)s->seq);
        else sqlite3_bind_null(st, 10);
        if (s->site) sqlite3_bind_int64(st, 11, s->site);
        else sqlite3_bind_null(st, 11);
        if (sqlite3_step(st) != SQLITE_DONE) {
            ana_err(err, errlen, "index.db: inserting critical_path: %s", sqlite3_errmsg(db));
            rc = -1;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    free(seg);
    if (!rc && ana_has_table(db, "cores"))
        rc = ana_exec(db, "UPDATE critical_path SET role = (SELECT c.role FROM cores c"
                      " WHERE c.rank = critical_path.rank AND c.core = critical_path.core)"
                      " WHERE core IS NOT NULL;", err, errlen);
    return rc;
}

/*
 * ana_views.c - the analysis views of index.db, and the `cores` table they
 * name cores with.
 *
 * Views are plain SQL over tables (never over the `events` virtual table),
 * so `sqlite3 RUN/index.db` runs them without npurr. A share has one
 * meaning everywhere (stats, views, README): a group's stall time over
 * (its cores x the run's virtual time, meta end_time_ps), the fraction of
 * those cores' time spent waiting, at most 1. `cores` counts the distinct
 * cores the group's waits come from.
 *   cores           (rank, core, core_type, name "r3 AIV5", role) - a table
 * (wait_groups, the per-key sums both stall views read, is made by
 * ana_derive.c)
 *   stall_summary   (role, kind, count, total_ps, mean_ps, max_ps, cores, share)
 *   wait_causes     (cause, count, total_ps, cores, share)
 *   ring_occupancy  (time_ps, ring, ring_name, occupancy, capacity)
 *   link_bandwidth  (bucket_ps, link, bytes, gbps)
 *   last_writers    (object, object_name, seq, time_ps, rank, core,
 *                    core_name, role, kind, xfer, value) - a table: the last
 *                    write of each word, found by the events pass
 *                    (temp.ana_last_write) and named here; as a view over
 *                    word_writes it needed an index on every write.
 */
#include <stdio.h>
#include <string.h>

#include "analysis/derive/ana_steps.h"

/* Drops name, whichever of table or view it is (an index derived by an
 * older npurr may hold either). */
static int drop_any(sqlite3 *db, const char *name, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    char type[16] = "";
    if (sqlite3_prepare_v2(db, "SELECT type FROM sqlite_master WHERE name = ?1", -1, &st,
                           NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        snprintf(type, sizeof type, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (strcmp(type, "table") && strcmp(type, "view")) return 0;
    char sql[160];
    snprintf(sql, sizeof sql, "DROP %s %s", !strcmp(type, "view") ? "VIEW" : "TABLE", name);
    return ana_exec(db, sql, err, errlen);
}

int ana_create_views(sqlite3 *db, const ana_run *run, char *err, size_t errlen) {
    char select[1024], cores[2048];
    ana_cores_select_sql(select, sizeof select, run->num_aic);
    snprintf(cores, sizeof cores,
             "DROP TABLE IF EXISTS cores;"
             "CREATE TABLE cores(rank INT, core INT, core_type TEXT, name TEXT, role TEXT,"
             " PRIMARY KEY(rank, core));"
             "INSERT INTO cores %s;",
             select);
    if (ana_exec(db, cores, err, errlen)) return -1;

    static const char *const views =
        "DROP VIEW IF EXISTS stall_summary;"
        "DROP VIEW IF EXISTS wait_causes;"
        "DROP VIEW IF EXISTS ring_occupancy;"
        "DROP VIEW IF EXISTS link_bandwidth;"
        "CREATE VIEW stall_summary AS"
        " SELECT COALESCE(g.role, c.role, c.name, 'r' || g.rank || ' core' || g.core) AS role,"
        "  g.kind AS kind, SUM(g.count) AS count, SUM(g.total_ps) AS total_ps,"
        "  CAST(SUM(g.total_ps) AS REAL) / SUM(g.count) AS mean_ps, MAX(g.max_ps) AS max_ps,"
        "  COUNT(DISTINCT g.rank * 65536 + g.core) AS cores,"
        "  CAST(SUM(g.total_ps) AS REAL) / NULLIF(COUNT(DISTINCT g.rank * 65536 + g.core) *"
        "   (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'end_time_ps'), 0) AS share"
        " FROM wait_groups g LEFT JOIN cores c ON c.rank = g.rank AND c.core = g.core"
        " GROUP BY 1, 2 ORDER BY total_ps DESC, role, kind;"
        "CREATE VIEW wait_causes AS"
        " SELECT COALESCE(cause, 'unclassified') AS cause, SUM(count) AS count,"
        "  SUM(total_ps) AS total_ps, COUNT(DISTINCT rank * 65536 + core) AS cores,"
        "  CAST(SUM(total_ps) AS REAL) / NULLIF(COUNT(DISTINCT rank * 65536 + core) *"
        "   (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'end_time_ps'), 0) AS share"
        " FROM wait_groups GROUP BY 1 ORDER BY total_ps DESC, cause;"
        "CREATE VIEW ring_occupancy AS"
        " SELECT rc.time_ps AS time_ps, rc.ring AS ring, r.name AS ring_name,"
        "  rc.occupancy AS occupancy, r.capacity AS capacity"
        " FROM ring_counters rc LEFT JOIN rings r ON r.id = rc.ring;"
        "CREATE VIEW link_bandwidth AS"
        " SELECT bucket_ps, link, bytes, bytes * 1000.0 / width_ps AS gbps"
        " FROM link_bytes;";
    if (ana_exec(db, views, err, errlen) || drop_any(db, "last_writers", err, errlen)) return -1;
    return ana_exec(db,
                    "CREATE TABLE last_writers(object INTEGER PRIMARY KEY, object_name TEXT,"
                    " seq INT, time_ps INT, rank INT, core INT, core_name TEXT, role TEXT,"
                    " kind TEXT, xfer TEXT, value INT);"
                    "INSERT INTO last_writers SELECT lw.object, o.name, lw.seq, lw.time_ps,"
                    " lw.rank, lw.core, c.name, c.role, lw.kind, lw.xfer, lw.value"
                    " FROM temp.ana_last_write lw LEFT JOIN objects o ON o.id = lw.object"
                    " LEFT JOIN cores c ON c.rank = lw.rank AND c.core = lw.core"
                    " ORDER BY lw.object;"
                    "DROP TABLE temp.ana_last_write;",
                    err, errlen);
}

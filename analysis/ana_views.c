/*
 * ana_views.c - the analysis views of index.db, and the `cores` table they
 * name cores with.
 *
 * Views are plain SQL over tables (never over the `events` virtual table),
 * so `sqlite3 RUN/index.db` runs them without npurr. Shares divide by the
 * run's virtual time (meta end_time_ps); waits of different cores overlap
 * in time, so shares of a whole table may add up past 1.
 *   cores           (rank, core, core_type, name "r3 AIV5", role) - a table
 * (wait_groups, the per-key sums both stall views read, is made by
 * ana_derive.c)
 *   stall_summary   (role, kind, count, total_ps, mean_ps, max_ps, share)
 *   wait_causes     (cause, count, total_ps, share)
 *   ring_occupancy  (time_ps, ring, ring_name, occupancy, capacity)
 *   link_bandwidth  (bucket_ps, link, bytes, gbps)
 *   last_writers    (object, object_name, seq, time_ps, rank, core,
 *                    core_name, role, kind, xfer, value)
 */
#include <stdio.h>

#include "analysis/ana_internal.h"

int ana_create_views(sqlite3 *db, const ana_run *run, char *err, size_t errlen) {
    char label[512];
    ana_core_label_sql(label, sizeof label, "t", run->num_aic);
    char cores[2048];
    /* One row per core that has a track; role is the core's last SetRole. */
    snprintf(cores, sizeof cores,
             "DROP TABLE IF EXISTS cores;"
             "CREATE TABLE cores(rank INT, core INT, core_type TEXT, name TEXT, role TEXT,"
             " PRIMARY KEY(rank, core));"
             "INSERT INTO cores SELECT t.rank, t.core, MAX(t.core_type), %s, MAX(t.role)"
             " FROM tracks t GROUP BY t.rank, t.core;",
             label);
    if (ana_exec(db, cores, err, errlen)) return -1;

    static const char *const views =
        "DROP VIEW IF EXISTS stall_summary;"
        "DROP VIEW IF EXISTS wait_causes;"
        "DROP VIEW IF EXISTS ring_occupancy;"
        "DROP VIEW IF EXISTS link_bandwidth;"
        "DROP VIEW IF EXISTS last_writers;"
        "CREATE VIEW stall_summary AS"
        " SELECT COALESCE(g.role, c.role, c.name, 'r' || g.rank || ' core' || g.core) AS role,"
        "  g.kind AS kind, SUM(g.count) AS count, SUM(g.total_ps) AS total_ps,"
        "  CAST(SUM(g.total_ps) AS REAL) / SUM(g.count) AS mean_ps, MAX(g.max_ps) AS max_ps,"
        "  CAST(SUM(g.total_ps) AS REAL) / NULLIF((SELECT CAST(value AS INTEGER) FROM meta"
        "   WHERE key = 'end_time_ps'), 0) AS share"
        " FROM wait_groups g LEFT JOIN cores c ON c.rank = g.rank AND c.core = g.core"
        " GROUP BY 1, 2 ORDER BY total_ps DESC, role, kind;"
        "CREATE VIEW wait_causes AS"
        " SELECT COALESCE(cause, 'unclassified') AS cause, SUM(count) AS count,"
        "  SUM(total_ps) AS total_ps,"
        "  CAST(SUM(total_ps) AS REAL) / NULLIF((SELECT CAST(value AS INTEGER) FROM meta"
        "   WHERE key = 'end_time_ps'), 0) AS share"
        " FROM wait_groups GROUP BY 1 ORDER BY total_ps DESC, cause;"
        "CREATE VIEW ring_occupancy AS"
        " SELECT rc.time_ps AS time_ps, rc.ring AS ring, r.name AS ring_name,"
        "  rc.occupancy AS occupancy, r.capacity AS capacity"
        " FROM ring_counters rc LEFT JOIN rings r ON r.id = rc.ring;"
        "CREATE VIEW link_bandwidth AS"
        " SELECT bucket_ps, link, bytes, bytes * 1000.0 / width_ps AS gbps"
        " FROM link_bytes;"
        "CREATE VIEW last_writers AS"
        " SELECT ww.object AS object, o.name AS object_name, ww.seq AS seq,"
        "  ww.time_ps AS time_ps, ww.rank AS rank, ww.core AS core, c.name AS core_name,"
        "  c.role AS role, ww.kind AS kind, ww.xfer AS xfer, ww.value AS value"
        " FROM (SELECT object, MAX(seq) AS seq FROM word_writes GROUP BY object) m"
        " JOIN word_writes ww ON ww.seq = m.seq"
        " LEFT JOIN objects o ON o.id = ww.object"
        " LEFT JOIN cores c ON c.rank = ww.rank AND c.core = ww.core;";
    return ana_exec(db, views, err, errlen);
}

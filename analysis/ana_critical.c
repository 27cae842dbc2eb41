/*
 * ana_critical.c - the critical_path table and `npurr critical`.
 *
 * ana_derive's last step: the walk (ana_crit_walk.c) over the run's events
 * (ana_crit_load.c) gives segments that tile [0, end_time_ps]; they become
 *   critical_path(seg INTEGER PRIMARY KEY, start_ps, end_ps, dur_ps, class,
 *                 resource, rank, core, core_name, role, seq, site)
 * and are read back grouped by resource (class and instance), class, role,
 * rank or site. The class totals are what `npurr whatif` ranks. Like every
 * derived table it is made on first use and lives in RUN/index.db (or the
 * per-user cache copy of a read-only run).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/ana_crit.h"
#include "analysis/ana_internal.h"
#include "analysis/analysis.h"
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

/* ------------------------------------------------------------ reading */

static const char *const by_names[ANA_CRIT_BY_COUNT] = {"resource", "class", "role", "rank",
                                                        "site"};

int ana_crit_by_parse(const char *name, ana_crit_by *out) {
    for (int i = 0; name && i < ANA_CRIT_BY_COUNT; i++)
        if (!strcmp(name, by_names[i])) {
            *out = (ana_crit_by)i;
            return 0;
        }
    return -1;
}

const char *ana_crit_by_name(ana_crit_by by) {
    return by < ANA_CRIT_BY_COUNT ? by_names[by] : "?";
}

static const char *group_sql(ana_crit_by by) {
    switch (by) {
    case ANA_CRIT_BY_RESOURCE:
        return "SELECT resource, class, COUNT(*), SUM(dur_ps) FROM critical_path"
               " GROUP BY class, resource ORDER BY SUM(dur_ps) DESC, resource";
    case ANA_CRIT_BY_CLASS:
        return "SELECT class, class, COUNT(*), SUM(dur_ps) FROM critical_path"
               " GROUP BY class ORDER BY SUM(dur_ps) DESC, class";
    case ANA_CRIT_BY_ROLE:
        return "SELECT CASE WHEN core IS NULL THEN '(' || class || ')'"
               " ELSE COALESCE(role, core_name) END AS g, '', COUNT(*), SUM(dur_ps)"
               " FROM critical_path GROUP BY g ORDER BY SUM(dur_ps) DESC, g";
    case ANA_CRIT_BY_RANK:
        return "SELECT CASE WHEN rank IS NULL THEN '(' || class || ')' ELSE 'r' || rank END AS g,"
               " '', COUNT(*), SUM(dur_ps) FROM critical_path GROUP BY g"
               " ORDER BY SUM(dur_ps) DESC, g";
    case ANA_CRIT_BY_SITE:
    default:
        return "SELECT CASE WHEN s.id IS NULL THEN '(' || p.class || ', no site)' ELSE"
               " COALESCE(s.file, '?') || ':' || COALESCE(s.line, 0) || ' ' ||"
               " COALESCE(s.function, '?') END AS g, '', COUNT(*), SUM(p.dur_ps)"
               " FROM critical_path p LEFT JOIN sites s ON s.id = p.site"
               " GROUP BY g ORDER BY SUM(p.dur_ps) DESC, g";
    }
}

void ana_crit_table_free(ana_crit_table *t) {
    for (size_t i = 0; t->rows && i < t->n; i++) {
        free(t->rows[i].group);
        free(t->rows[i].cls);
    }
    free(t->rows);
    memset(t, 0, sizeof *t);
}

static char *dup_text(const unsigned char *s) {
    const char *c = s ? (const char *)s : "";
    size_t n = strlen(c);
    char *d = malloc(n + 1);
    if (d) memcpy(d, c, n + 1);
    return d;
}

int ana_crit_table_get(sqlite3 *db, ana_crit_by by, size_t top, ana_crit_table *t, char *err,
                       size_t errlen) {
    memset(t, 0, sizeof *t);
    t->by = by;
    t->end_ps = (uint64_t)ana_meta_i64(db, "end_time_ps", 0);
    rec_index_meta_text(db, "critical.ending", t->ending, sizeof t->ending);
    rec_index_meta_text(db, "outcome", t->outcome, sizeof t->outcome);
    if (!ana_has_table(db, "critical_path")) {
        ana_err(err, errlen, "the index has no critical_path table (derive it: npurr critical RUN)");
        return -1;
    }
    const char *sql = group_sql(by);
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        return -1;
    }
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t ps = (uint64_t)sqlite3_column_int64(st, 3);
        uint64_t cnt = (uint64_t)sqlite3_column_int64(st, 2);
        t->total_ps += ps;
        t->segments += cnt;
        t->groups++;
        if (top && t->n >= top) continue;
        if (t->n == cap) {
            cap = cap ? cap * 2 : 32;
            ana_crit_row *r = realloc(t->rows, cap * sizeof *r);
            if (!r) goto oom;
            t->rows = r;
        }
        ana_crit_row *r = &t->rows[t->n];
        r->group = dup_text(sqlite3_column_text(st, 0));
        r->cls = dup_text(sqlite3_column_text(st, 1));
        r->segments = cnt;
        r->total_ps = ps;
        r->share = t->end_ps ? (double)ps / (double)t->end_ps : 0;
        t->n++;
        if (!r->group || !r->cls) goto oom;
    }
    if (rc != SQLITE_DONE) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        sqlite3_finalize(st);
        ana_crit_table_free(t);
        return -1;
    }
    sqlite3_finalize(st);
    return 0;
oom:
    sqlite3_finalize(st);
    ana_crit_table_free(t);
    ana_err(err, errlen, "out of memory reading the critical path");
    return -1;
}

void ana_crit_table_print(const ana_crit_table *t, FILE *out) {
    char end[32], sum[32];
    ana_format_ps((double)t->end_ps, end, sizeof end);
    ana_format_ps((double)t->total_ps, sum, sizeof sum);
    fprintf(out, "critical path by %s: %llu segments, %s of the run's %s (end_time_ps = %llu)\n",
            ana_crit_by_name(t->by), (unsigned long long)t->segments, sum, end,
            (unsigned long long)t->end_ps);
    if (t->ending[0])
        fprintf(out, "outcome %s; the path ends at %s\n", t->outcome[0] ? t->outcome : "?",
                t->ending);
    fprintf(out, "share = time on the path / the run's virtual time; shares add up to 100%%\n");
    if (t->n < t->groups) fprintf(out, "showing the top %zu of %zu groups\n", t->n, t->groups);
    int with_class = t->by == ANA_CRIT_BY_RESOURCE;
    size_t nc = with_class ? 5 : 4;
    ana_grid g;
    if (ana_grid_init(&g, nc)) return;
    size_t c = 0;
    ana_grid_set_head(&g, c++, ana_crit_by_name(t->by));
    if (with_class) ana_grid_set_head(&g, c++, "class");
    ana_grid_set_head(&g, c++, "segments");
    ana_grid_set_head(&g, c++, "total");
    ana_grid_set_head(&g, c++, "share");
    for (size_t i = 0; i < t->n; i++) {
        const ana_crit_row *r = &t->rows[i];
        char cnt[32], tot[32], share[32];
        snprintf(cnt, sizeof cnt, "%llu", (unsigned long long)r->segments);
        ana_format_ps((double)r->total_ps, tot, sizeof tot);
        snprintf(share, sizeof share, "%.2f%%", 100.0 * r->share);
        const char *cells[5];
        unsigned char num[5] = {0, 0, 1, 1, 1};
        c = 0;
        cells[c++] = r->group;
        if (with_class) cells[c++] = r->cls;
        else num[1] = 1, num[2] = 1, num[3] = 1;
        cells[c++] = cnt;
        cells[c++] = tot;
        cells[c++] = share;
        if (ana_grid_add(&g, cells, num)) break;
    }
    ana_grid_print(&g, out);
    ana_grid_free(&g);
}

void ana_crit_table_print_csv(const ana_crit_table *t, int header, FILE *out) {
    if (header) fputs("by,group,class,segments,total_ps,share\n", out);
    for (size_t i = 0; i < t->n; i++) {
        const ana_crit_row *r = &t->rows[i];
        fprintf(out, "%s,", ana_crit_by_name(t->by));
        ana_csv_field(out, r->group);
        fputc(',', out);
        ana_csv_field(out, r->cls);
        fprintf(out, ",%llu,%llu,%.6f\n", (unsigned long long)r->segments,
                (unsigned long long)r->total_ps, r->share);
    }
}

/*
 * ana_crit_table.c - `npurr critical`: the critical_path table (derived by
 * critical/ana_critical.c) read back grouped by resource (class and
 * instance), class, role, rank or site, largest first. The class totals
 * are what `npurr whatif` ranks.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/derive.h"
#include "analysis/present/ana_print.h"
#include "analysis/present/present.h"
#include "recorder/recorder.h"

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

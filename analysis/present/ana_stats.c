/*
 * ana_stats.c - `npurr stats`: the stall table, grouped as asked, largest
 * total first, in the manner of `nsys stats` reports.
 *
 * A stall is a row of waits. Groups: role (the kernel's SetRole name, or
 * "r3 AIV5" for a core that never named itself), site ("file:line
 * function" of the waiting call), rank, kind (flag, ring_space, ...),
 * object (the awaited word) and cause (waits.cause, see ana_cause.c).
 * Share is the group's summed stall time over the run's virtual time;
 * several cores stall at once, so shares may add up past 100%.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/present/present.h"
#include "analysis/derive/derive.h"
#include "analysis/present/ana_print.h"

static const char *const by_names[ANA_BY_COUNT] = {"role", "site", "rank", "kind", "object",
                                                   "cause"};

int ana_group_by_parse(const char *name, ana_group_by *out) {
    for (int i = 0; name && i < ANA_BY_COUNT; i++)
        if (!strcmp(name, by_names[i])) {
            *out = (ana_group_by)i;
            return 0;
        }
    return -1;
}

const char *ana_group_by_name(ana_group_by by) {
    return by < ANA_BY_COUNT ? by_names[by] : "?";
}

/* Every grouping reads wait_groups (see ana_derive.c): waits already
 * summed per (role, rank, core, kind, site, object, cause). The table of
 * waits that never ended reads the same shape computed from `waits`. */
#define BLOCKED_GROUPS                                                                       \
    "(SELECT role, rank, core, kind, site, object, cause, COUNT(*) AS count,"               \
    " SUM(dur_ps) AS total_ps, MAX(dur_ps) AS max_ps FROM waits WHERE end_seq IS NULL"      \
    " GROUP BY role, rank, core, kind, site, object, cause)"

/* The same shape from every wait, for an index not derived yet (cause is
 * then NULL throughout), summed only per (track, the column grouped by):
 * the outer query reads no other key. The sums run over the stored ids of
 * wait_rows, and only one row per group goes through the `waits` view,
 * whose text columns (a role's name is a lookup per row) would otherwise
 * cost as much as the grouping: half the time of `record`'s stall summary.
 * Only `record` reads these, from the index it has just written. */
#define RECORDED_GROUPS(key)                                                                 \
    "(SELECT v.role AS role, v.rank AS rank, v.core AS core, v.kind AS kind, v.site AS site,"\
    " v.object AS object, v.cause AS cause, g.count AS count, g.total_ps AS total_ps,"      \
    " g.max_ps AS max_ps FROM (SELECT MIN(id) AS id, COUNT(*) AS count,"                    \
    " SUM(dur_ps) AS total_ps, MAX(dur_ps) AS max_ps FROM wait_rows"                        \
    " GROUP BY track" key ") g JOIN waits v ON v.id = g.id)"

/* How many cores a group's waits come from: the share is per core. */
#define CORES "COUNT(DISTINCT rank * 65536 + core)"
#define CORES_I "COUNT(DISTINCT i.rank * 65536 + i.core)"

static const char *group_sql(ana_group_by by) {
    switch (by) {
    case ANA_BY_ROLE:
        return "SELECT COALESCE(i.role, c.role, c.name, 'r' || i.rank || ' core' || i.core) AS g,"
               " SUM(i.count), SUM(i.total_ps), MAX(i.max_ps), " CORES_I " FROM wait_groups i"
               " LEFT JOIN cores c ON c.rank = i.rank AND c.core = i.core"
               " GROUP BY g ORDER BY SUM(i.total_ps) DESC, g";
    case ANA_BY_SITE:
        return "SELECT CASE WHEN s.id IS NULL THEN '(no site)' ELSE"
               " COALESCE(s.file, '?') || ':' || COALESCE(s.line, 0) || ' ' ||"
               " COALESCE(s.function, '?') END AS g, SUM(i.count), SUM(i.total_ps),"
               " MAX(i.max_ps), " CORES_I " FROM wait_groups i LEFT JOIN sites s ON s.id = i.site"
               " GROUP BY g ORDER BY SUM(i.total_ps) DESC, g";
    case ANA_BY_RANK:
        return "SELECT 'r' || rank AS g, SUM(count), SUM(total_ps), MAX(max_ps), " CORES " FROM wait_groups"
               " GROUP BY rank ORDER BY SUM(total_ps) DESC, rank";
    case ANA_BY_KIND:
        return "SELECT kind AS g, SUM(count), SUM(total_ps), MAX(max_ps), " CORES " FROM wait_groups"
               " GROUP BY kind ORDER BY SUM(total_ps) DESC, g";
    case ANA_BY_OBJECT:
        return "SELECT COALESCE(o.name, '(no object)') AS g, SUM(i.count), SUM(i.total_ps),"
               " MAX(i.max_ps), " CORES_I " FROM wait_groups i LEFT JOIN objects o ON o.id = i.object"
               " GROUP BY g ORDER BY SUM(i.total_ps) DESC, g";
    case ANA_BY_CAUSE:
    default:
        return "SELECT COALESCE(cause, '(unclassified)') AS g, SUM(count), SUM(total_ps),"
               " MAX(max_ps), " CORES " FROM wait_groups GROUP BY cause ORDER BY SUM(total_ps) DESC, g";
    }
}

/* Sites read "file:line function" with the directory all shown files
 * share left out (kernel sources carry absolute __FILE__ paths). */
static void shorten_sites(ana_stall_table *t) {
    size_t common = SIZE_MAX;
    const char *first = NULL;
    for (size_t i = 0; i < t->n; i++) {
        const char *g = t->rows[i].group;
        if (g[0] != '/') continue;
        size_t flen = strcspn(g, ":");
        if (!first) {
            first = g;
            const char *slash = memrchr(g, '/', flen);
            common = slash ? (size_t)(slash - g) + 1 : 0;
            continue;
        }
        size_t k = 0;
        while (k < common && k < flen && g[k] == first[k]) k++;
        while (k > 0 && first[k - 1] != '/') k--;
        common = k;
    }
    if (!first || common == SIZE_MAX || common == 0) return;
    for (size_t i = 0; i < t->n; i++) {
        char *g = t->rows[i].group;
        if (g[0] == '/' && strlen(g) > common) memmove(g, g + common, strlen(g + common) + 1);
    }
}

void ana_stall_table_free(ana_stall_table *t) {
    for (size_t i = 0; i < t->n; i++) free(t->rows[i].group);
    free(t->rows);
    memset(t, 0, sizeof *t);
}

/* src with every needle replaced by with (malloc'd; NULL when out of memory). */
static char *replace_all(const char *src, const char *needle, const char *with) {
    size_t nl = strlen(needle), wl = strlen(with), count = 0;
    for (const char *p = strstr(src, needle); p; p = strstr(p + nl, needle)) count++;
    char *out = malloc(strlen(src) + count * wl + 1), *w = out;
    if (!out) return NULL;
    for (const char *p = src; *p;) {
        if (strncmp(p, needle, nl) == 0) {
            memcpy(w, with, wl);
            w += wl;
            p += nl;
        } else {
            *w++ = *p++;
        }
    }
    *w = 0;
    return out;
}

/* Where the rows come from: the analysis tables, the never-ended waits
 * only, or the recorder's tables alone. */
typedef enum { FROM_DERIVED, FROM_BLOCKED, FROM_RECORDED } table_source;

/* group_sql(by) for the source (malloc'd; NULL when out of memory). */
static char *source_sql(sqlite3 *db, ana_group_by by, table_source from) {
    if (from == FROM_DERIVED) return strdup(group_sql(by));
    if (from == FROM_BLOCKED) return replace_all(group_sql(by), "wait_groups", BLOCKED_GROUPS);
    char select[1024], cores[1100];
    ana_cores_select_sql(select, sizeof select, ana_meta_i64(db, "num_aic", 0));
    snprintf(cores, sizeof cores, "JOIN (%s) c ", select);
    static const char *const groups[ANA_BY_COUNT] = {
        [ANA_BY_ROLE] = RECORDED_GROUPS(", role"),     [ANA_BY_SITE] = RECORDED_GROUPS(", site"),
        [ANA_BY_RANK] = RECORDED_GROUPS(""),           [ANA_BY_KIND] = RECORDED_GROUPS(", kind"),
        [ANA_BY_OBJECT] = RECORDED_GROUPS(", object"), [ANA_BY_CAUSE] = RECORDED_GROUPS(", cause")};
    char *grouped = replace_all(group_sql(by), "wait_groups", groups[by]);
    char *out = grouped ? replace_all(grouped, "JOIN cores c ", cores) : NULL;
    free(grouped);
    return out;
}

static int table_get(sqlite3 *db, ana_group_by by, size_t top, table_source from,
                     ana_stall_table *t, char *err, size_t errlen);

int ana_stall_table_get(sqlite3 *db, ana_group_by by, size_t top, ana_stall_table *t,
                        char *err, size_t errlen) {
    return table_get(db, by, top, FROM_DERIVED, t, err, errlen);
}

int ana_blocked_table_get(sqlite3 *db, ana_group_by by, size_t top, ana_stall_table *t,
                          char *err, size_t errlen) {
    return table_get(db, by, top, FROM_BLOCKED, t, err, errlen);
}

int ana_stall_table_get_recorded(sqlite3 *db, ana_group_by by, size_t top, ana_stall_table *t,
                                 char *err, size_t errlen) {
    return table_get(db, by, top, FROM_RECORDED, t, err, errlen);
}

static int table_get(sqlite3 *db, ana_group_by by, size_t top, table_source from,
                     ana_stall_table *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    t->blocked = from == FROM_BLOCKED;
    t->by = by;
    t->run_ps = (uint64_t)ana_meta_i64(db, "end_time_ps", 0);
    if (from != FROM_RECORDED &&
        (!ana_has_table(db, "wait_groups") || !ana_has_table(db, "cores"))) {
        ana_err(err, errlen, "index.db has no `wait_groups` table: the analysis tables were "
                "not derived (open it with ana_open, as `npurr stats` does)");
        return -1;
    }
    char *owned = source_sql(db, by, from);
    const char *sql = owned;
    if (!sql) {
        ana_err(err, errlen, "out of memory building the stall table");
        return -1;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        free(owned);
        return -1;
    }
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        uint64_t count = (uint64_t)sqlite3_column_int64(st, 1);
        uint64_t total = (uint64_t)sqlite3_column_int64(st, 2);
        t->groups++;
        t->waits += count;
        t->total_ps += total;
        if (top && t->n >= top) continue;
        if (t->n == cap) {
            cap = cap ? cap * 2 : 32;
            ana_stall_row *p = realloc(t->rows, cap * sizeof *p);
            if (!p) goto oom;
            t->rows = p;
        }
        ana_stall_row *r = &t->rows[t->n];
        const char *g = (const char *)sqlite3_column_text(st, 0);
        r->group = strdup(g ? g : "");
        if (!r->group) goto oom;
        t->n++;
        r->count = count;
        r->total_ps = total;
        r->mean_ps = count ? (double)total / (double)count : 0;
        r->max_ps = (uint64_t)sqlite3_column_int64(st, 3);
        r->cores = (uint64_t)sqlite3_column_int64(st, 4);
        r->share = t->run_ps && r->cores ? (double)total / ((double)r->cores * (double)t->run_ps) : 0;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        free(owned);
        ana_stall_table_free(t);
        return -1;
    }
    free(owned);
    if (by == ANA_BY_SITE) shorten_sites(t);
    return 0;
oom:
    free(owned);
    sqlite3_finalize(st);
    ana_stall_table_free(t);
    ana_err(err, errlen, "out of memory building the stall table");
    return -1;
}

void ana_stall_table_print(const ana_stall_table *t, FILE *out) {
    char run[32], total[32];
    ana_format_ps((double)t->run_ps, run, sizeof run);
    ana_format_ps((double)t->total_ps, total, sizeof total);
    if (t->blocked)
        fprintf(out, "waits that never ended (what the hang waits on), by %s: %llu waits\n"
                "each counted from its begin to the end of the run (end_time_ps = %s)\n",
                ana_group_by_name(t->by), (unsigned long long)t->waits, run);
    else
        fprintf(out, "stalls by %s: %llu waits, %s stalled in total\n",
                ana_group_by_name(t->by), (unsigned long long)t->waits, total);
    fprintf(out, "share = stall time / (cores x the run's virtual time, end_time_ps = %s): "
            "the fraction of their time those cores spent waiting\n", run);
    if (t->n < t->groups)
        fprintf(out, "showing the top %zu of %zu groups\n", t->n, t->groups);
    ana_grid g;
    if (ana_grid_init(&g, 7)) return;
    static const char *const head[7] = {NULL, "cores", "count", "total", "mean", "max", "share"};
    ana_grid_set_head(&g, 0, ana_group_by_name(t->by));
    for (size_t c = 1; c < 7; c++) ana_grid_set_head(&g, c, head[c]);
    for (size_t i = 0; i < t->n; i++) {
        const ana_stall_row *r = &t->rows[i];
        char cores[32], count[32], tot[32], mean[32], max[32], share[32];
        snprintf(cores, sizeof cores, "%llu", (unsigned long long)r->cores);
        snprintf(count, sizeof count, "%llu", (unsigned long long)r->count);
        ana_format_ps((double)r->total_ps, tot, sizeof tot);
        ana_format_ps(r->mean_ps, mean, sizeof mean);
        ana_format_ps((double)r->max_ps, max, sizeof max);
        snprintf(share, sizeof share, "%.2f%%", 100.0 * r->share);
        const char *cells[7] = {r->group, cores, count, tot, mean, max, share};
        static const unsigned char num[7] = {0, 1, 1, 1, 1, 1, 1};
        if (ana_grid_add(&g, cells, num)) break;
    }
    ana_grid_print(&g, out);
    ana_grid_free(&g);
}

void ana_stall_table_print_csv(const ana_stall_table *t, int header, FILE *out) {
    if (header) fputs("table,by,group,cores,count,total_ps,mean_ps,max_ps,share\n", out);
    for (size_t i = 0; i < t->n; i++) {
        const ana_stall_row *r = &t->rows[i];
        fprintf(out, "%s,%s,", t->blocked ? "blocked" : "all", ana_group_by_name(t->by));
        ana_csv_field(out, r->group);
        fprintf(out, ",%llu,%llu,%llu,%.1f,%llu,%.6f\n", (unsigned long long)r->cores,
                (unsigned long long)r->count, (unsigned long long)r->total_ps, r->mean_ps,
                (unsigned long long)r->max_ps, r->share);
    }
}

/*
 * ana_diff.c - `npurr diff RUN_A RUN_B`: what changed between two runs of one
 * kernel (before/after a kernel change, or the same run with another `--hw`
 * timing file), in the spirit of nsys recipes and msprof-analyze compare.
 *
 * Both runs are opened derived (the same tables `stats` reads). A diff is a
 * list of rows, one per group present in either run, each metric given for
 * A and B with B - A and (B - A) / A:
 *   --by role|site|rank|kind|object|cause   stall totals from
 *       ana_stall_table_get (count, total, share with the one meaning of
 *       share: stall time / (cores x run time))
 *   --by link   bytes and bandwidth per link, named as in link_bytes
 *       ("rdma r0->r8"), plus one row per link class ("rdma *"). Bandwidth
 *       is bytes / busy time, the union of the [start_ps, done_ps] of the
 *       link's transfers, so a slower link shows as fewer GB/s even when
 *       the run's total time hides it.
 * The first row, "(run)", is always the run's virtual time (end_time_ps).
 * Rows are ordered by the size of the change, largest first.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/present/present.h"
#include "analysis/derive/derive.h"
#include "analysis/present/ana_print.h"

typedef struct diff_row {
    char *group;
    double a[3], b[3];    /* stalls: count, total_ps, share; links: bytes, busy_ps, gbps */
    int in_a, in_b;
    /* The sort keys, set before sorting (so the comparator reads nothing else). */
    int is_class;         /* a link class row ("rdma *") */
    double change;        /* |B - A| of the kind's key metric */
} diff_row;

typedef struct diff_set {
    diff_row *rows;
    size_t n, cap;
} diff_set;

static diff_row *row_for(diff_set *s, const char *group) {
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->rows[i].group, group) == 0) return &s->rows[i];
    if (ana_grow((void **)&s->rows, &s->cap, s->n + 1, sizeof *s->rows, 64)) return NULL;
    diff_row *r = &s->rows[s->n];
    memset(r, 0, sizeof *r);
    r->group = strdup(group);
    if (!r->group) return NULL;
    s->n++;
    return r;
}

static void set_free(diff_set *s) {
    for (size_t i = 0; i < s->n; i++) free(s->rows[i].group);
    free(s->rows);
}

/* One side's three figures of row r (count, total, share for stalls;
 * bytes, busy time, bandwidth for links). */
static void put_side(diff_row *r, int side, double v0, double v1, double v2) {
    double *v = side ? r->b : r->a;
    v[0] = v0;
    v[1] = v1;
    v[2] = v2;
    *(side ? &r->in_b : &r->in_a) = 1;
}

static int add_stalls(sqlite3 *db, ana_group_by by, int side, diff_set *s, char *err,
                      size_t errlen) {
    ana_stall_table t;
    if (ana_stall_table_get(db, by, 0, &t, err, errlen)) return -1;
    int rc = 0;
    for (size_t i = 0; i < t.n && rc == 0; i++) {
        diff_row *r = row_for(s, t.rows[i].group);
        if (!r) {
            ana_err(err, errlen, "out of memory building the diff");
            rc = -1;
            break;
        }
        put_side(r, side, (double)t.rows[i].count, (double)t.rows[i].total_ps, t.rows[i].share);
    }
    ana_stall_table_free(&t);
    return rc;
}

/* Link of a transfer, as ana_links.c names it; NULL for local-memory work. */
static const char *link_name(const char *kind, int64_t src, int64_t dst, int64_t npus, char *buf,
                             size_t len) {
    static const char *const local[] = {"mte1", "vector", "cube"};
    for (size_t i = 0; i < 3; i++)
        if (strcmp(kind, local[i]) == 0) return NULL;
    if (src == dst) snprintf(buf, len, "hbm r%lld", (long long)src);
    else if (src / npus == dst / npus) snprintf(buf, len, "hccs r%lld->r%lld", (long long)src, (long long)dst);
    else snprintf(buf, len, "rdma r%lld->r%lld", (long long)src, (long long)dst);
    return buf;
}

/* Busy time per link: transfers sorted by start, merged into intervals. */
typedef struct link_acc {
    double bytes, busy;
    uint64_t open_lo, open_hi;
    int open;
} link_acc;

static void acc_close(link_acc *a) {
    if (a->open) a->busy += (double)(a->open_hi - a->open_lo);
    a->open = 0;
}

/* Bytes and merged busy intervals of every link, in *acc by row index of s
 * (a row per link is made as it first appears). -1 with err on failure. */
static int accumulate_links(sqlite3 *db, diff_set *s, link_acc **acc_out, size_t *nacc_out,
                            char *err, size_t errlen) {
    int64_t npus = ana_meta_i64(db, "config.npus_per_node", 8);
    if (npus <= 0) npus = 8;
    sqlite3_stmt *st = ana_prepare(db,
                                   "SELECT kind, src_rank, dst_rank, bytes, start_ps, done_ps"
                                   " FROM transfers WHERE done_ps IS NOT NULL"
                                   " AND start_ps IS NOT NULL AND src_rank IS NOT NULL"
                                   " AND dst_rank IS NOT NULL ORDER BY start_ps, id",
                                   err, errlen);
    if (!st) return -1;
    link_acc *acc = NULL;
    size_t nacc = 0;
    int rc = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 0);
        char buf[64];
        const char *name = link_name(kind ? kind : "", sqlite3_column_int64(st, 1),
                                     sqlite3_column_int64(st, 2), npus, buf, sizeof buf);
        if (!name) continue;
        diff_row *r = row_for(s, name);
        if (!r) {
            rc = -1;
            break;
        }
        size_t idx = (size_t)(r - s->rows);
        if (idx >= nacc) {
            size_t n = s->cap;
            link_acc *p = realloc(acc, n * sizeof *p);
            if (!p) {
                rc = -1;
                break;
            }
            memset(p + nacc, 0, (n - nacc) * sizeof *p);
            acc = p;
            nacc = n;
        }
        link_acc *a = &acc[idx];
        uint64_t lo = (uint64_t)sqlite3_column_int64(st, 4), hi = (uint64_t)sqlite3_column_int64(st, 5);
        if (hi < lo) hi = lo;
        a->bytes += (double)sqlite3_column_int64(st, 3);
        if (a->open && lo <= a->open_hi) {
            if (hi > a->open_hi) a->open_hi = hi;
        } else {
            acc_close(a);
            a->open = 1;
            a->open_lo = lo;
            a->open_hi = hi;
        }
    }
    sqlite3_finalize(st);
    if (rc) {
        free(acc);
        ana_err(err, errlen, "out of memory building the diff");
        return -1;
    }
    *acc_out = acc;
    *nacc_out = nacc;
    return 0;
}

/* A row per link class ("rdma *") over the first nlinks rows: bytes and
 * busy time summed, so its bandwidth is the class's average link while
 * busy. */
static int add_link_classes(diff_set *s, int side, const link_acc *acc, size_t nlinks,
                            char *err, size_t errlen) {
    double cls[3][2] = {{0}};
    static const char *const classes[3] = {"hbm", "hccs", "rdma"};
    for (size_t i = 0; i < nlinks; i++)
        for (int c = 0; c < 3; c++)
            if (strncmp(s->rows[i].group, classes[c], strlen(classes[c])) == 0 &&
                s->rows[i].group[strlen(classes[c])] == ' ') {
                cls[c][0] += acc[i].bytes;
                cls[c][1] += acc[i].busy;
            }
    for (int c = 0; c < 3; c++) {
        if (cls[c][0] == 0) continue;
        char name[32];
        snprintf(name, sizeof name, "%s *", classes[c]);
        diff_row *r = row_for(s, name);
        if (!r) {
            ana_err(err, errlen, "out of memory building the diff");
            return -1;
        }
        put_side(r, side, cls[c][0], cls[c][1],
                 cls[c][1] > 0 ? cls[c][0] * 1000.0 / cls[c][1] : 0);
    }
    return 0;
}

static int add_links(sqlite3 *db, int side, diff_set *s, char *err, size_t errlen) {
    link_acc *acc = NULL;
    size_t nacc = 0;
    if (accumulate_links(db, s, &acc, &nacc, err, errlen)) return -1;
    /* Per link, then per class. */
    size_t nlinks = s->n < nacc ? s->n : nacc;
    for (size_t i = 0; i < nlinks; i++) {
        acc_close(&acc[i]);
        if (acc[i].bytes == 0 && acc[i].busy == 0) continue;
        put_side(&s->rows[i], side, acc[i].bytes, acc[i].busy,
                 acc[i].busy > 0 ? acc[i].bytes * 1000.0 / acc[i].busy : 0);
    }
    int rc = add_link_classes(s, side, acc, nlinks, err, errlen);
    free(acc);
    return rc;
}

/* Link classes first, then the largest absolute change, then by name. */
static int cmp_change(const void *x, const void *y) {
    const diff_row *a = x, *b = y;
    if (a->is_class != b->is_class) return b->is_class - a->is_class;
    if (a->change != b->change) return a->change < b->change ? 1 : -1;
    return strcmp(a->group, b->group);
}

static void fmt_rel(char *buf, size_t len, double a, double b) {
    if (a == 0) snprintf(buf, len, b == 0 ? "0%%" : "new");
    else snprintf(buf, len, "%+.1f%%", 100.0 * (b - a) / a);
}

static void fmt_bytes(char *buf, size_t len, double v) {
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int i = 0;
    double x = fabs(v);
    while (x >= 1024 && i < 4) {
        x /= 1024;
        v /= 1024;
        i++;
    }
    snprintf(buf, len, i ? "%.2f %s" : "%.0f %s", v, u[i]);
}

static void fmt_signed_ps(char *buf, size_t len, double d) {
    char t[24];
    ana_format_ps(fabs(d), t, sizeof t);
    snprintf(buf, len, "%s%s", d < 0 ? "-" : (d > 0 ? "+" : ""), t);
}

/* ---- what a diff shows, per kind of row: stalls (--by role, site, ...)
 *      or links (--by link) ---- */

#define DIFF_CELLS 7      /* the columns after the group's */

typedef struct diff_kind {
    int key;              /* the metric (index into a[], b[]) rows are ordered by */
    const char *csv_head;
    const char *head[DIFF_CELLS];
    void (*csv_run)(FILE *out, double ta, double tb);
    void (*csv_row)(FILE *out, const diff_row *r);
    void (*intro)(FILE *out, const char *group_name);
    void (*cells)(const diff_row *r, char cell[DIFF_CELLS][96]);
} diff_kind;

static void stall_csv_run(FILE *out, double ta, double tb) {
    fprintf(out, "(run),,,%.0f,%.0f,%.0f,%.6g,,\n", ta, tb, tb - ta, ta ? (tb - ta) / ta : 0);
}

static void stall_csv_row(FILE *out, const diff_row *r) {
    fprintf(out, ",%.0f,%.0f,%.0f,%.0f,%.0f,%.6g,%.6g,%.6g\n", r->a[0], r->b[0], r->a[1], r->b[1],
            r->b[1] - r->a[1], r->a[1] ? (r->b[1] - r->a[1]) / r->a[1] : 0, r->a[2], r->b[2]);
}

static void stall_intro(FILE *out, const char *group_name) {
    fprintf(out, "stalls by %s; share = stall time / (cores x the run's virtual time)\n",
            group_name);
}

static void stall_cells(const diff_row *r, char c[DIFF_CELLS][96]) {
    snprintf(c[0], 96, "%.0f", r->a[0]);
    snprintf(c[1], 96, "%.0f", r->b[0]);
    ana_format_ps(r->a[1], c[2], 96);
    ana_format_ps(r->b[1], c[3], 96);
    fmt_signed_ps(c[4], 96, r->b[1] - r->a[1]);
    fmt_rel(c[5], 96, r->a[1], r->b[1]);
    snprintf(c[6], 96, "%.2f%% / %.2f%%", 100 * r->a[2], 100 * r->b[2]);
}

static void link_csv_run(FILE *out, double ta, double tb) {
    fprintf(out, "(run),,,%.0f,%.0f,,,,\n", ta, tb);
}

static void link_csv_row(FILE *out, const diff_row *r) {
    fprintf(out, ",%.0f,%.0f,%.0f,%.0f,%.6g,%.6g,%.6g,%.6g\n", r->a[0], r->b[0], r->a[1], r->b[1],
            r->a[2], r->b[2], r->b[2] - r->a[2], r->a[2] ? (r->b[2] - r->a[2]) / r->a[2] : 0);
}

static void link_intro(FILE *out, const char *group_name) {
    (void)group_name;   /* always "link" */
    fprintf(out, "bytes and bandwidth per link; GB/s = bytes / busy time (the union of the "
            "link's transfers, start to landing)\n");
}

static void link_cells(const diff_row *r, char c[DIFF_CELLS][96]) {
    fmt_bytes(c[0], 96, r->a[0]);
    fmt_bytes(c[1], 96, r->b[0]);
    snprintf(c[2], 96, "%.2f", r->a[2]);
    snprintf(c[3], 96, "%.2f", r->b[2]);
    snprintf(c[4], 96, "%+.2f", r->b[2] - r->a[2]);
    fmt_rel(c[5], 96, r->a[2], r->b[2]);
    char p[32], q[32];
    ana_format_ps(r->a[1], p, sizeof p);
    ana_format_ps(r->b[1], q, sizeof q);
    snprintf(c[6], 96, "%s / %s", p, q);
}

static const diff_kind stall_kind = {
    .key = 1,   /* total stall time */
    .csv_head = "group,a_count,b_count,a_total_ps,b_total_ps,delta_ps,rel_total,a_share,b_share\n",
    .head = {"A count", "B count", "A total", "B total", "change", "rel", "A/B share"},
    .csv_run = stall_csv_run, .csv_row = stall_csv_row, .intro = stall_intro,
    .cells = stall_cells,
};

static const diff_kind link_kind = {
    .key = 2,   /* bandwidth */
    .csv_head = "group,a_bytes,b_bytes,a_busy_ps,b_busy_ps,a_gbps,b_gbps,delta_gbps,rel_gbps\n",
    .head = {"A bytes", "B bytes", "A GB/s", "B GB/s", "change", "rel", "A/B busy"},
    .csv_run = link_csv_run, .csv_row = link_csv_row, .intro = link_intro,
    .cells = link_cells,
};

static void print_csv(const diff_kind *k, const diff_set *s, size_t shown, double ta, double tb,
                      FILE *out) {
    fputs(k->csv_head, out);
    k->csv_run(out, ta, tb);
    for (size_t i = 0; i < shown; i++) {
        ana_csv_field(out, s->rows[i].group);
        k->csv_row(out, &s->rows[i]);
    }
}

static int print_text(const diff_kind *k, const char *group_name, const diff_set *s,
                      size_t shown, double ta, double tb, FILE *out) {
    char x[32], y[32], d[48], rel[32];
    ana_format_ps(ta, x, sizeof x);
    ana_format_ps(tb, y, sizeof y);
    fmt_signed_ps(d, sizeof d, tb - ta);
    fmt_rel(rel, sizeof rel, ta, tb);
    fprintf(out, "virtual time: A %s, B %s, %s (%s)\n", x, y, d, rel);
    k->intro(out, group_name);
    if (shown < s->n) fprintf(out, "showing the %zu largest changes of %zu groups\n", shown, s->n);
    ana_grid grid;
    if (ana_grid_init(&grid, DIFF_CELLS + 1)) return -1;
    ana_grid_set_head(&grid, 0, group_name);
    for (size_t c = 0; c < DIFF_CELLS; c++) ana_grid_set_head(&grid, c + 1, k->head[c]);
    static const unsigned char num[DIFF_CELLS + 1] = {0, 1, 1, 1, 1, 1, 1, 1};
    for (size_t i = 0; i < shown; i++) {
        const diff_row *r = &s->rows[i];
        char cell[DIFF_CELLS][96];
        k->cells(r, cell);
        const char *cells[DIFF_CELLS + 1] = {r->group};
        for (size_t c = 0; c < DIFF_CELLS; c++) cells[c + 1] = cell[c];
        if (ana_grid_add(&grid, cells, num)) break;
    }
    ana_grid_print(&grid, out);
    ana_grid_free(&grid);
    return 0;
}

int ana_diff_print(sqlite3 *a, sqlite3 *b, const char *by, size_t top, int csv, FILE *out,
                   char *err, size_t errlen) {
    int links = strcmp(by, "link") == 0;
    ana_group_by g = ANA_BY_ROLE;
    if (!links && ana_group_by_parse(by, &g)) {
        ana_err(err, errlen, "--by %s: not role, site, rank, kind, object, cause or link", by);
        return -1;
    }
    const diff_kind *k = links ? &link_kind : &stall_kind;
    diff_set s = {0};
    int rc = 0;
    for (int side = 0; side < 2 && rc == 0; side++)
        rc = links ? add_links(side ? b : a, side, &s, err, errlen)
                   : add_stalls(side ? b : a, g, side, &s, err, errlen);
    for (size_t i = 0; i < s.n && rc == 0; i++) {
        diff_row *r = &s.rows[i];
        r->is_class = strchr(r->group, '*') != NULL;
        r->change = fabs(r->b[k->key] - r->a[k->key]);
    }
    if (!rc) qsort(s.rows, s.n, sizeof *s.rows, cmp_change);
    double ta = (double)ana_meta_i64(a, "end_time_ps", 0), tb = (double)ana_meta_i64(b, "end_time_ps", 0);
    size_t shown = top && top < s.n ? top : s.n;
    if (!rc && csv) print_csv(k, &s, shown, ta, tb, out);
    else if (!rc && print_text(k, links ? "link" : ana_group_by_name(g), &s, shown, ta, tb, out)) {
        ana_err(err, errlen, "out of memory printing the diff");
        rc = -1;
    }
    set_free(&s);
    return rc ? -1 : 0;
}

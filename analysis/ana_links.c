/*
 * ana_links.c - bytes per link and time bucket, behind the link_bandwidth
 * view.
 *
 * Every transfer that touches GM is charged to one link, named by the ranks
 * its data moves between:
 *   "hbm r2"        both ends on rank 2 (DataCopy GM<->UB, Fixpipe, local
 *                   stores through a queue)
 *   "hccs r0->r3"   different ranks of one node
 *   "rdma r0->r8"   different nodes
 * Transfers between local memories only (MTE1, vector, cube) use no link.
 * A transfer's bytes are spread evenly over [start_ps, done_ps] and split
 * across the buckets it overlaps (whole bytes; the rounding remainder goes
 * to its last bucket, so sums are exact), so a bucket's bytes / width is
 * the link's average bandwidth in that bucket. The bucket width is a 1-2-5 step that
 * gives about a hundred buckets over the run (meta analysis.bucket_ps).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/ana_internal.h"

typedef struct cell {
    uint64_t key;     /* link index << 32 | bucket, +1 (0 = empty) */
    uint64_t bytes;
} cell;

typedef struct links {
    char **names;
    size_t n, cap;
    int *by_code;              /* link index + 1 by (type, src, dst) code */
    size_t ncodes;
    cell *cells;
    size_t ncells, capcells;   /* capcells is a power of two */
} links;

/* Link ids are dense codes (type, src, dst) so a transfer finds its link
 * without comparing names; names are made once per link. */
static int link_index(links *l, const ana_run *run, int type, int64_t src, int64_t dst) {
    size_t r = (size_t)run->ranks;
    if (src < 0 || dst < 0 || (size_t)src >= r || (size_t)dst >= r) return -2;
    size_t code = ((size_t)type * r + (size_t)src) * r + (size_t)dst;
    if (!l->by_code) {
        l->ncodes = 3 * r * r;
        l->by_code = calloc(l->ncodes, sizeof *l->by_code);
        if (!l->by_code) return -1;
    }
    if (l->by_code[code]) return l->by_code[code] - 1;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        char **p = realloc(l->names, cap * sizeof *p);
        if (!p) return -1;
        l->names = p;
        l->cap = cap;
    }
    char name[64];
    if (type == 0) snprintf(name, sizeof name, "hbm r%lld", (long long)src);
    else snprintf(name, sizeof name, "%s r%lld->r%lld", type == 1 ? "hccs" : "rdma",
                  (long long)src, (long long)dst);
    l->names[l->n] = strdup(name);
    if (!l->names[l->n]) return -1;
    l->by_code[code] = (int)++l->n;
    return (int)l->n - 1;
}

static int cell_add(links *l, uint64_t key, uint64_t bytes);

static int cells_grow(links *l) {
    size_t cap = l->capcells ? l->capcells * 2 : 1024;
    cell *old = l->cells;
    size_t oldcap = l->capcells;
    l->cells = calloc(cap, sizeof *l->cells);
    if (!l->cells) {
        l->cells = old;
        return -1;
    }
    l->capcells = cap;
    l->ncells = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key) cell_add(l, old[i].key, old[i].bytes);
    free(old);
    return 0;
}

static int cell_add(links *l, uint64_t key, uint64_t bytes) {
    if (2 * (l->ncells + 1) > l->capcells && cells_grow(l)) return -1;
    size_t mask = l->capcells - 1;
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 20) & mask;
    while (l->cells[i].key && l->cells[i].key != key) i = (i + 1) & mask;
    if (!l->cells[i].key) {
        l->cells[i].key = key;
        l->ncells++;
    }
    l->cells[i].bytes += bytes;
    return 0;
}

static uint64_t bucket_width(uint64_t end_ps) {
    static const uint64_t steps[] = {1, 2, 5};
    for (uint64_t scale = 1000; scale < UINT64_MAX / 10; scale *= 10)
        for (size_t i = 0; i < 3; i++)
            if (steps[i] * scale * 100 >= end_ps) return steps[i] * scale;
    return end_ps;
}

static int xfer_code(const char *name) {
    for (int x = 1; name && x < XFER_KIND_COUNT; x++) {
        const char *n = engine_xfer_name(x);
        if (n && !strcmp(n, name)) return x;
    }
    return 0;
}

/* Link type of a transfer: 0 hbm, 1 hccs, 2 rdma; -1 none (local memory
 * only). src/dst are normalised to the core's rank when unknown. */
static int link_type(const ana_run *run, int xfer, int64_t rank, int64_t *src, int64_t *dst) {
    if (xfer == XFER_MTE1 || xfer == XFER_VEC || xfer == XFER_CUBE) return -1;
    if (*src < 0) *src = rank;
    if (*dst < 0) *dst = rank;
    if (*src == *dst) return 0;
    return *src / run->npus_per_node == *dst / run->npus_per_node ? 1 : 2;
}

static int write_rows(sqlite3 *db, links *l, uint64_t width, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    const char *sql = "INSERT INTO link_bytes VALUES (?1, ?2, ?3, ?4)";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        return -1;
    }
    for (size_t i = 0; i < l->capcells; i++) {
        if (!l->cells[i].key) continue;
        uint64_t key = l->cells[i].key - 1;
        sqlite3_bind_int64(st, 1, (sqlite3_int64)((key & 0xffffffffu) * width));
        sqlite3_bind_int64(st, 2, (sqlite3_int64)width);
        sqlite3_bind_text(st, 3, l->names[key >> 32], -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, (sqlite3_int64)l->cells[i].bytes);
        if (sqlite3_step(st) != SQLITE_DONE) {
            ana_err(err, errlen, "index.db: inserting into link_bytes: %s", sqlite3_errmsg(db));
            sqlite3_finalize(st);
            return -1;
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return 0;
}

int ana_derive_links(sqlite3 *db, const ana_run *run, char *err, size_t errlen) {
    if (ana_exec(db,
                 "DROP TABLE IF EXISTS link_bytes;"
                 "CREATE TABLE link_bytes(bucket_ps INT, width_ps INT, link TEXT, bytes INT);",
                 err, errlen))
        return -1;
    uint64_t end = run->end_time_ps > 0 ? (uint64_t)run->end_time_ps : 1;
    uint64_t width = bucket_width(end);
    char sql_meta[160];
    snprintf(sql_meta, sizeof sql_meta,
             "INSERT OR REPLACE INTO meta(key, value) VALUES ('analysis.bucket_ps', '%llu')",
             (unsigned long long)width);
    if (ana_exec(db, sql_meta, err, errlen)) return -1;

    const char *sql = "SELECT kind, rank, src_rank, dst_rank, bytes, start_ps, done_ps"
                      " FROM transfers WHERE done_ps IS NOT NULL AND bytes > 0";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "index.db: %s (in: %s)", sqlite3_errmsg(db), sql);
        return -1;
    }
    links l = {0};
    int rc, ok = 0;
    int last_code = 0;
    char last_kind[64] = "";
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *kind = (const char *)sqlite3_column_text(st, 0);
        if (kind && strcmp(kind, last_kind) != 0) {
            snprintf(last_kind, sizeof last_kind, "%s", kind);
            last_code = xfer_code(kind);
        }
        int64_t src = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
        int64_t dst = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3);
        int type = link_type(run, last_code, sqlite3_column_int64(st, 1), &src, &dst);
        if (type < 0) continue;
        int li = link_index(&l, run, type, src, dst);
        if (li == -2) continue;   /* a rank outside the run: not a link */
        if (li < 0) goto oom;
        uint64_t bytes = (uint64_t)sqlite3_column_int64(st, 4);
        uint64_t done = (uint64_t)sqlite3_column_int64(st, 6);
        uint64_t start = sqlite3_column_type(st, 5) == SQLITE_NULL
                             ? done : (uint64_t)sqlite3_column_int64(st, 5);
        if (start > done) start = done;
        uint64_t b0 = start / width, b1 = done / width;
        if (b0 == b1 || done == start) {
            if (cell_add(&l, ((uint64_t)li << 32 | b1) + 1, bytes)) goto oom;
            continue;
        }
        /* Whole bytes per bucket, the rounding remainder in the last one,
         * so a link's buckets add up to exactly its transfers' bytes. */
        uint64_t given = 0;
        for (uint64_t b = b0; b <= b1; b++) {
            uint64_t lo = b * width > start ? b * width : start;
            uint64_t hi = (b + 1) * width < done ? (b + 1) * width : done;
            uint64_t part = b == b1 ? bytes - given
                                    : (uint64_t)((unsigned __int128)bytes * (hi - lo) /
                                                 (done - start));
            given += part;
            if (part && cell_add(&l, ((uint64_t)li << 32 | b) + 1, part)) goto oom;
        }
    }
    if (rc != SQLITE_DONE) {
        ana_err(err, errlen, "index.db: reading transfers: %s", sqlite3_errmsg(db));
        goto out;
    }
    ok = write_rows(db, &l, width, err, errlen) == 0;
    goto out;
oom:
    ana_err(err, errlen, "out of memory summing link bytes");
out:
    sqlite3_finalize(st);
    for (size_t i = 0; i < l.n; i++) free(l.names[i]);
    free(l.names);
    free(l.by_code);
    free(l.cells);
    return ok ? 0 : -1;
}

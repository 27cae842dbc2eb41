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
 * The events pass (ana_scan.c) adds each transfer as it completes, with
 * the fields the transfers table holds for it (its issue's start time,
 * ranks and bytes); the sums live in an array of buckets per link until
 * ana_links_write.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/ana_scan.h"

/* One link: "hccs r0->r3" and its bytes per bucket. */
typedef struct link_row {
    char *name;
    uint64_t *bytes;
    size_t nbuckets;           /* length of bytes[] */
} link_row;

struct ana_links {
    const ana_run *run;
    uint64_t width;
    link_row *link;            /* by link index */
    size_t n, cap;
    int *by_code;              /* link index + 1 by (type, src, dst) code */
    size_t ncodes;
    size_t buckets;            /* buckets a link starts with: the run's */
};
typedef ana_links links;

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
    if (ana_grow((void **)&l->link, &l->cap, l->n + 1, sizeof *l->link, 64)) return -1;
    link_row *k = &l->link[l->n];
    *k = (link_row){.bytes = calloc(l->buckets, sizeof *k->bytes), .nbuckets = l->buckets};
    if (!k->bytes) return -1;
    char name[64];
    if (type == 0) snprintf(name, sizeof name, "hbm r%lld", (long long)src);
    else snprintf(name, sizeof name, "%s r%lld->r%lld", type == 1 ? "hccs" : "rdma",
                  (long long)src, (long long)dst);
    k->name = strdup(name);
    if (!k->name) {
        free(k->bytes);
        return -1;
    }
    l->by_code[code] = (int)++l->n;
    return (int)l->n - 1;
}

/* Adds bytes to bucket b of link li (a transfer may end past the run's
 * last event time: the array grows). */
static int cell_add(links *l, int li, uint64_t b, uint64_t bytes) {
    link_row *k = &l->link[li];
    size_t had = k->nbuckets;
    if (ana_grow((void **)&k->bytes, &k->nbuckets, b + 1, sizeof *k->bytes, had)) return -1;
    memset(k->bytes + had, 0, (k->nbuckets - had) * sizeof *k->bytes);
    k->bytes[b] += bytes;
    return 0;
}

static uint64_t bucket_width(uint64_t end_ps) {
    static const uint64_t steps[] = {1, 2, 5};
    for (uint64_t scale = 1000; scale < UINT64_MAX / 10; scale *= 10)
        for (size_t i = 0; i < 3; i++)
            if (steps[i] * scale * 100 >= end_ps) return steps[i] * scale;
    return end_ps;
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
    for (size_t li = 0; li < l->n; li++) {
        const link_row *k = &l->link[li];
        for (size_t b = 0; b < k->nbuckets; b++) {
            if (!k->bytes[b]) continue;
            sqlite3_bind_int64(st, 1, (sqlite3_int64)(b * width));
            sqlite3_bind_int64(st, 2, (sqlite3_int64)width);
            sqlite3_bind_text(st, 3, k->name, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 4, (sqlite3_int64)k->bytes[b]);
            if (sqlite3_step(st) != SQLITE_DONE) {
                ana_err(err, errlen, "index.db: inserting into link_bytes: %s",
                        sqlite3_errmsg(db));
                sqlite3_finalize(st);
                return -1;
            }
            sqlite3_reset(st);
        }
    }
    sqlite3_finalize(st);
    return 0;
}

ana_links *ana_links_new(const ana_run *run) {
    links *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->run = run;
    uint64_t end = run->end_time_ps > 0 ? (uint64_t)run->end_time_ps : 1;
    l->width = bucket_width(end);
    l->buckets = (size_t)(end / l->width) + 2;
    return l;
}

void ana_links_free(ana_links *l) {
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) {
        free(l->link[i].name);
        free(l->link[i].bytes);
    }
    free(l->link);
    free(l->by_code);
    free(l);
}

int ana_links_add(ana_links *l, int xfer, int64_t rank, int64_t src, int64_t dst,
                  uint64_t bytes, uint64_t start, uint64_t done) {
    if (bytes == 0) return 0;
    int type = link_type(l->run, xfer, rank, &src, &dst);
    if (type < 0) return 0;
    int li = link_index(l, l->run, type, src, dst);
    if (li == -2) return 0;   /* a rank outside the run: not a link */
    if (li < 0) return -1;
    uint64_t width = l->width;
    if (start > done) start = done;
    uint64_t b0 = start / width, b1 = done / width;
    if (b0 == b1 || done == start) return cell_add(l, li, b1, bytes);
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
        if (part && cell_add(l, li, b, part)) return -1;
    }
    return 0;
}

int ana_links_write(ana_links *l, sqlite3 *db, char *err, size_t errlen) {
    if (ana_create_table(db, "link_bytes", "bucket_ps INT, width_ps INT, link TEXT, bytes INT", err,
                         errlen))
        return -1;
    char sql_meta[160];
    snprintf(sql_meta, sizeof sql_meta,
             "INSERT OR REPLACE INTO meta(key, value) VALUES ('analysis.bucket_ps', '%llu')",
             (unsigned long long)l->width);
    if (ana_exec(db, sql_meta, err, errlen)) return -1;
    return write_rows(db, l, l->width, err, errlen);
}

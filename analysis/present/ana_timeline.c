/*
 * ana_timeline.c - builds the timeline both exporters write (the model and
 * its rules are in ana_timeline.h): reads waits, transfers and counters
 * from the index, puts every slice on a lane of its core's or pipe's track,
 * and orders every event the way Perfetto reads them.
 *
 * Memory grows with the slices exported (about 100 bytes each at the
 * peak, SQLite's cache and the strings included): a viewer needs them all
 * anyway, and ordering flows across tracks needs them at once. A slice is
 * 40 bytes; what only some have (arguments, flows) is kept beside them.
 *
 * Time, at EP16 x 4096 (6.5 M slices, 16 M events written): reading rows
 * is most of the loading, so the transfers (most of the slices) are read
 * from their packed chunks without SQL, and made slices, on a thread of
 * their own while the waits load (their labels, wakers and pipes looked up
 * in C, ana_timeline_lookup.c);
 * slices are grouped by a counting sort and events ordered through time
 * buckets (ana_timeline_order.c), not by comparisons; the Perfetto writer
 * deflates on both threads (ana_perfetto.c).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/present/ana_timeline.h"

/* Argument keys are string literals, a handful, given for every slice:
 * their ids are kept by the literal's address so a wait's five keys are
 * not hashed and compared five times (ids stay those of first use). */
#define TL_KEYS 16

typedef struct builder {
    sqlite3 *db;
    ana_timeline *tl;
    uint64_t from, to;
    uint8_t *ranks;
    const char *key_text[TL_KEYS];
    uint32_t key_id[TL_KEYS];
    int nkeys;
    char *err;
    size_t errlen;
} builder;

static int oom(builder *b) {
    ana_err(b->err, b->errlen, "out of memory building the timeline");
    return -1;
}

static int sql_fail(builder *b, const char *sql) {
    ana_err(b->err, b->errlen, "index.db: %s (in: %.300s)", sqlite3_errmsg(b->db), sql);
    return -1;
}

/* The window's end as an SQL integer (SQLite's are signed). */
static sqlite3_int64 to_param(const builder *b) {
    return (sqlite3_int64)(b->to > INT64_MAX ? INT64_MAX : b->to);
}

/* sql prepared; NULL with err when it does not prepare. */
static sqlite3_stmt *prepare(builder *b, const char *sql) {
    return ana_prepare(b->db, sql, b->err, b->errlen);
}

/* The same with ?1 bound to the window's start and ?2 to its end. */
static sqlite3_stmt *prepare_window(builder *b, const char *sql) {
    sqlite3_stmt *st = prepare(b, sql);
    if (!st) return NULL;
    sqlite3_bind_int64(st, 1, (sqlite3_int64)b->from);
    sqlite3_bind_int64(st, 2, to_param(b));
    return st;
}

/* How a loader of rows ends: finalizes st; 0 when its last step (rc)
 * reached the end, -1 when it did not (err from SQLite) or the loader
 * failed already (bad, err set). */
static int loaded(builder *b, sqlite3_stmt *st, int bad, int rc, const char *sql) {
    int ret = bad ? -1 : rc == SQLITE_DONE ? 0 : sql_fail(b, sql);
    sqlite3_finalize(st);
    return ret;
}

static int rank_in(const builder *b, int64_t r) {
    return r >= 0 && r < b->tl->run.ranks && (b->ranks[r / 8] >> (r % 8) & 1);
}

static const char *col_text(sqlite3_stmt *st, int c) {
    return sqlite3_column_type(st, c) == SQLITE_NULL ? NULL
                                                     : (const char *)sqlite3_column_text(st, c);
}

/* A site column as tl_slice.site: its id + 1, 0 for NULL. */
static uint32_t col_site(sqlite3_stmt *st, int c) {
    return sqlite3_column_type(st, c) == SQLITE_NULL ? 0
                                                     : (uint32_t)sqlite3_column_int64(st, c) + 1;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t size) {
    if (need <= *cap) return 0;
    uint32_t n = *cap ? *cap : 256;
    while (n < need) n *= 2;
    void *q = realloc(*p, (size_t)n * size);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* ------------------------------------------------------------ strings */

static uint32_t str_hash(const char *s) {
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* The id of s (1..), interning it; 0 when out of memory. */
static uint32_t intern(ana_timeline *tl, const char *s) {
    if (!s) s = "";
    if (tl->nstr * 2 + 2 > tl->hashcap) {
        uint32_t cap = tl->hashcap ? tl->hashcap * 2 : 4096;
        uint32_t *h = malloc((size_t)cap * sizeof *h);
        if (!h) return 0;
        for (uint32_t i = 0; i < cap; i++) h[i] = 0;
        for (uint32_t id = 1; id <= tl->nstr; id++) {
            uint32_t k = str_hash(tl->str[id - 1]) & (cap - 1);
            while (h[k]) k = (k + 1) & (cap - 1);
            h[k] = id;
        }
        free(tl->hash);
        tl->hash = h;
        tl->hashcap = cap;
    }
    uint32_t k = str_hash(s) & (tl->hashcap - 1);
    while (tl->hash[k]) {
        if (!strcmp(tl->str[tl->hash[k] - 1], s)) return tl->hash[k];
        k = (k + 1) & (tl->hashcap - 1);
    }
    if (grow((void **)&tl->str, &tl->capstr, tl->nstr + 1, sizeof *tl->str)) return 0;
    char *copy = strdup(s);
    if (!copy) return 0;
    tl->str[tl->nstr++] = copy;
    tl->hash[k] = tl->nstr;
    return tl->nstr;
}

/* ------------------------------------------------------------ tracks */

typedef struct core_info {
    char *label;      /* "AIV5 RDMASender" */
    char *core;       /* "AIV5" */
    char *waker;      /* "r3 AIV5 RDMASender", what a wait's waker argument says */
    uint32_t waker_id;   /* its string id once interned, 0 before */
} core_info;

static core_info *load_cores(builder *b) {
    ana_timeline *tl = b->tl;
    size_t n = (size_t)(tl->run.ranks * tl->run.cores_per_rank);
    core_info *ci = calloc(n ? n : 1, sizeof *ci);
    if (!ci) return NULL;
    sqlite3_stmt *st = prepare(b, "SELECT rank, core, name, role FROM cores");
    if (!st) {
        free(ci);
        return NULL;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(st, 0), c = sqlite3_column_int64(st, 1);
        if (r < 0 || r >= tl->run.ranks || c < 0 || c >= tl->run.cores_per_rank) continue;
        const char *name = col_text(st, 2), *role = col_text(st, 3);
        const char *sp = name ? strchr(name, ' ') : NULL;   /* "r3 AIV5" -> "AIV5" */
        const char *core = sp ? sp + 1 : name ? name : "core";
        char label[256];
        snprintf(label, sizeof label, "%s%s%s", core, role ? " " : "", role ? role : "");
        core_info *c1 = &ci[r * tl->run.cores_per_rank + c];
        c1->label = strdup(label);
        c1->core = strdup(core);
        if (name) {
            snprintf(label, sizeof label, "%s%s%s", name, role ? " " : "", role ? role : "");
            c1->waker = strdup(label);
        }
    }
    sqlite3_finalize(st);
    return ci;
}

static uint32_t add_track(builder *b, const tl_track *t) {
    ana_timeline *tl = b->tl;
    if (grow((void **)&tl->track, &tl->captrack, tl->ntrack + 1, sizeof *tl->track))
        return TL_NONE;
    tl->track[tl->ntrack] = *t;
    return tl->ntrack++;
}

static const char *pipe_label(int pipe) {
    return pipe == PIPE_S ? "scalar" : engine_pipe_name(pipe);
}

/* Lane 0 of (rank, core, pipe): TL_CORE is the core's own track. Creates
 * the core's track and the pipe's on first use. */
static uint32_t group_track(builder *b, const core_info *ci, int64_t rank, int64_t core,
                            int pipe) {
    ana_timeline *tl = b->tl;
    if (rank < 0 || rank >= tl->run.ranks || core < 0 || core >= tl->run.cores_per_rank ||
        pipe < TL_CORE || pipe >= PIPE_COUNT)
        return TL_NONE;
    size_t base = (size_t)(rank * tl->run.cores_per_rank + core) * (PIPE_COUNT + 1);
    uint32_t *slot = &tl->group[base + (size_t)(pipe + 1)];
    if (*slot != TL_NONE) return *slot;
    uint32_t parent = TL_NONE;
    if (pipe != TL_CORE) {
        parent = group_track(b, ci, rank, core, TL_CORE);
        if (parent == TL_NONE) return TL_NONE;
    }
    const core_info *c = &ci[rank * tl->run.cores_per_rank + core];
    char core_name[64], label[320];
    if (!c->core) snprintf(core_name, sizeof core_name, "core %lld", (long long)core);
    const char *cname = c->core ? c->core : core_name;
    tl_track t = {.rank = (int32_t)rank, .core = (int32_t)core, .pipe = (int16_t)pipe,
                  .parent = parent, .next_lane = TL_NONE};
    if (pipe == TL_CORE) {
        t.name = t.label = intern(tl, c->label ? c->label : cname);
    } else {
        snprintf(label, sizeof label, "%s %s", cname, pipe_label(pipe));
        t.name = intern(tl, pipe_label(pipe));
        t.label = intern(tl, label);
    }
    if (!t.name || !t.label) return TL_NONE;
    *slot = add_track(b, &t);
    return *slot;
}

/* The next lane after track (creating it), named like lane 0 for Perfetto
 * (which merges them) and "AIV5 MTE3 (2)" for the JSON thread list. */
static uint32_t next_lane(builder *b, uint32_t track) {
    ana_timeline *tl = b->tl;
    if (tl->track[track].next_lane != TL_NONE) return tl->track[track].next_lane;
    tl_track t = tl->track[track];
    t.lane++;
    t.next_lane = TL_NONE;
    uint32_t first = tl->group[(size_t)(t.rank * tl->run.cores_per_rank + t.core) *
                                   (PIPE_COUNT + 1) + (size_t)(t.pipe + 1)];
    /* A lane of a core's own track hangs under that track (one thread per core). */
    if (t.pipe == TL_CORE) t.parent = first;
    char label[320];
    snprintf(label, sizeof label, "%s (%u)", tl_str(tl, tl->track[first].label),
             (unsigned)t.lane + 1);
    t.label = intern(tl, label);
    if (!t.label) return TL_NONE;
    uint32_t id = add_track(b, &t);
    if (id != TL_NONE) tl->track[track].next_lane = id;
    return id;
}

/* ------------------------------------------------------------ slices */

/* A new slice of category cat on track from b0 to e0 (a time before 0
 * is 0, an end before the begin is the begin) at site (col_site); NULL
 * out of memory. */
static tl_slice *new_slice(builder *b, uint32_t track, uint8_t cat, int64_t b0, int64_t e0,
                           uint32_t site) {
    ana_timeline *tl = b->tl;
    if (grow((void **)&tl->slice, &tl->capslice, tl->nslice + 1, sizeof *tl->slice))
        return NULL;
    tl_slice *s = &tl->slice[tl->nslice++];
    uint64_t begin = b0 > 0 ? (uint64_t)b0 : 0;
    *s = (tl_slice){.b_ps = begin, .e_ps = e0 > b0 ? (uint64_t)e0 : begin, .track = track,
                    .cat = cat, .site = site, .arg = tl->narg};
    return s;
}

/* The next argument of s, the slice made last; NULL out of memory. */
static tl_arg *new_arg(builder *b, tl_slice *s) {
    ana_timeline *tl = b->tl;
    if (grow((void **)&tl->arg, &tl->caparg, tl->narg + 1, sizeof *tl->arg)) return NULL;
    s->nargs++;
    return &tl->arg[tl->narg++];
}

/* The id of an argument key, a string literal. */
static uint32_t intern_key(builder *b, const char *key) {
    for (int i = 0; i < b->nkeys; i++)
        if (b->key_text[i] == key) return b->key_id[i];
    uint32_t id = intern(b->tl, key);
    if (id && b->nkeys < TL_KEYS) {
        b->key_text[b->nkeys] = key;
        b->key_id[b->nkeys++] = id;
    }
    return id;
}

static int arg_str(builder *b, tl_slice *s, const char *key, const char *v) {
    if (!v || s->nargs >= TL_MAX_ARGS) return 0;
    tl_arg *a = new_arg(b, s);
    if (!a) return -1;
    a->key = intern_key(b, key);
    a->type = TL_ARG_STR;
    a->v = intern(b->tl, v);
    return a->key && a->v ? 0 : -1;
}

static int arg_int(builder *b, tl_slice *s, const char *key, int64_t v) {
    if (s->nargs >= TL_MAX_ARGS) return 0;
    tl_arg *a = new_arg(b, s);
    if (!a) return -1;
    a->key = intern_key(b, key);
    a->type = TL_ARG_INT;
    a->v = v;
    return a->key ? 0 : -1;
}

/* What a waker's argument says: its core's name and role, or "r3 core 5"
 * for a core the cores table does not name; 0 out of memory, TL_NONE when
 * it says nothing (a NULL core). */
static uint32_t waker_text(builder *b, core_info *ci, const tl_wake *e) {
    ana_timeline *tl = b->tl;
    if (e->rank >= 0 && e->rank < tl->run.ranks && e->core >= 0 &&
        e->core < tl->run.cores_per_rank) {
        core_info *c = &ci[(int64_t)e->rank * tl->run.cores_per_rank + e->core];
        if (c->waker) return c->waker_id ? c->waker_id : (c->waker_id = intern(tl, c->waker));
    }
    if (e->core < 0) return TL_NONE;
    char text[64];
    snprintf(text, sizeof text, "r%d core %d", (int)e->rank, (int)e->core);
    return intern(tl, text);
}

/* The flow from wake event e to wait slice s (row id wid). */
static int add_flow(builder *b, const core_info *ci, tl_slice *s, int64_t wid,
                    const tl_wakes *wk, const tl_wake *e, uint32_t *shape_name) {
    ana_timeline *tl = b->tl;
    uint32_t wg = group_track(b, ci, e->rank, e->core,
                              e->pipe == PIPE_S || e->pipe < 0 ? TL_CORE : e->pipe);
    if (wg == TL_NONE) return 0;
    if (!shape_name[e->shape]) {   /* each name formatted and interned once */
        char name[400];
        tl_wake_name(wk, e, name, sizeof name);
        if (!(shape_name[e->shape] = intern(tl, name))) return -1;
    }
    if (grow((void **)&tl->flow, &tl->capflow, tl->nflow + 1, sizeof *tl->flow)) return -1;
    tl_flow *f = &tl->flow[tl->nflow];
    f->waker_ps = e->time_ps > 0 ? (uint64_t)e->time_ps : 0;
    if (f->waker_ps > s->e_ps) f->waker_ps = s->e_ps;   /* never after what it ended */
    f->waker_track = wg;
    f->waker_name = shape_name[e->shape];
    f->id = (uint64_t)wid + 1;
    s->flow = ++tl->nflow;
    tl->flows++;
    return 0;
}

/* One wait row of load_waits' query as a slice, its arguments and its
 * flow: 0, -1 out of memory. */
static int add_wait(builder *b, core_info *ci, sqlite3_stmt *st, const char *label,
                    const tl_pipes *pipes, const tl_wakes *wk, uint32_t *shape_name) {
    ana_timeline *tl = b->tl;
    int64_t rank = sqlite3_column_int64(st, 1);
    if (!rank_in(b, rank)) return 0;
    int pipe = sqlite3_column_type(st, 3) == SQLITE_NULL
                   ? PIPE_S : tl_pipe_of(pipes, sqlite3_column_int64(st, 3));
    uint32_t g = group_track(b, ci, rank, sqlite3_column_int64(st, 2),
                             pipe == PIPE_S || pipe < 0 ? TL_CORE : pipe);
    if (g == TL_NONE) return 0;
    int64_t b0 = sqlite3_column_int64(st, 4), e0 = sqlite3_column_int64(st, 5);
    tl_slice *s = new_slice(b, g, TL_CAT_WAIT, b0, e0, col_site(st, 10));
    if (!s) return -1;
    const char *kind = col_text(st, 6);
    if (!label) label = kind;
    char name[400];
    snprintf(name, sizeof name, "wait %s", label ? label : "?");
    s->name = intern(tl, name);
    if (!s->name || arg_str(b, s, "kind", kind) || arg_str(b, s, "cause", col_text(st, 7)) ||
        arg_int(b, s, "expected", sqlite3_column_int64(st, 8)) ||
        arg_int(b, s, "seen", sqlite3_column_int64(st, 9)))
        return -1;
    tl->waits++;
    const tl_wake *e = sqlite3_column_type(st, 12) == SQLITE_NULL
                           ? NULL : tl_wakes_find(wk, sqlite3_column_int64(st, 12));
    if (!e || e->rank < 0) return 0;
    if (s->nargs < TL_MAX_ARGS) {   /* the key first: strings keep their ids' order */
        uint32_t key = intern_key(b, "waker"), who = key ? waker_text(b, ci, e) : 0;
        if (!who) return -1;
        tl_arg *a = who != TL_NONE ? new_arg(b, s) : NULL;
        if (who != TL_NONE && !a) return -1;
        if (a) *a = (tl_arg){.key = key, .type = TL_ARG_STR, .v = who};
    }
    if (!sqlite3_column_int(st, 11) || e0 <= b0 || !rank_in(b, e->rank)) return 0;
    return add_flow(b, ci, s, sqlite3_column_int64(st, 0), wk, e, shape_name);
}

/* The waits in the window: a slice each (its group, lane 0, kept in track
 * until lanes are chosen), with a flow from its waker. Labels, wakers and
 * pipes are looked up in C (ana_timeline_lookup.c), not joined per row. */
static int load_waits(builder *b, core_info *ci) {
    const char *sql =
        "SELECT w.id, w.rank, w.core, w.track, w.begin_ps, w.end_ps, w.kind, w.cause,"
        " w.expected, w.seen, w.site, w.end_seq IS NOT NULL, w.waker_seq, w.begin_seq"
        " FROM waits w WHERE w.begin_ps <= ?2 AND w.end_ps >= ?1";
    tl_wakes wk;
    tl_pipes pipes;
    tl_labels labels;
    if (tl_wakes_load(b->db, &wk, b->err, b->errlen)) return -1;
    if (tl_pipes_load(b->db, &pipes, b->err, b->errlen)) {
        tl_wakes_free(&wk);
        return -1;
    }
    if (tl_labels_open(b->db, &labels, b->err, b->errlen)) {
        tl_pipes_free(&pipes);
        tl_wakes_free(&wk);
        return -1;
    }
    uint32_t *shape_name = calloc(wk.nshape ? wk.nshape : 1, sizeof *shape_name);
    sqlite3_stmt *st = shape_name ? prepare_window(b, sql) : NULL;
    int rc = SQLITE_NOMEM, bad = shape_name ? 0 : oom(b);
    while (st && !bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *label;
        if (tl_labels_get(&labels, sqlite3_column_int64(st, 13), &label, b->err, b->errlen))
            bad = -1;
        else if (add_wait(b, ci, st, label, &pipes, &wk, shape_name))
            bad = oom(b);
    }
    int ret = st ? loaded(b, st, bad, rc, sql) : -1;
    free(shape_name);
    tl_labels_close(&labels);
    tl_pipes_free(&pipes);
    tl_wakes_free(&wk);
    return ret;
}

/* ------------------------------------------------------------ transfers
 *
 * Transfers are most of the slices (millions), and reading their rows is
 * most of their cost, so a thread of their own reads them (on a connection
 * of its own, chunk by chunk: ana_packed_read.c) while this one loads the
 * waits: into slices of their own
 * whose track is still a group key and whose name a shape (xload_run).
 * Afterwards that array takes the waits in front and each transfer gets
 * its track and name here, in the order they were read: tracks and
 * strings are made in the order they always were (the waits' first), so
 * the output does not depend on the thread. */

/* A transfer's shape: what its name says ("copy 4096 B r0->r3"). A run
 * moves millions of transfers of a few shapes: each name is formatted and
 * interned once. */
typedef struct xshape {
    uint32_t kind;                /* index in xload.kinds + 1 */
    uint32_t name;                /* string id once made, 0 before */
    int64_t bytes, src, dst;      /* src = dst: no ranks in the name */
} xshape;

/* What the NIC queue depth counters are made of: every RDMA operation's
 * issue (+1) and landing (-1), per rank. */
typedef struct nic_step {
    int64_t rank, ps, d;
} nic_step;

/* One ring_counters row. */
typedef struct ring_sample {
    int64_t ring, ps, seq, occupancy;
} ring_sample;

static int by_ring_time_seq(const void *a, const void *b) {
    const ring_sample *x = a, *y = b;
    if (x->ring != y->ring) return x->ring < y->ring ? -1 : 1;
    if (x->ps != y->ps) return x->ps < y->ps ? -1 : 1;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return 0;
}

/* Every ring_counters row of db, ordered by (ring, time, seq): one pass
 * over the table and one sort, not a search, a sort and a subquery per
 * ring. Read by the transfers' thread when there is one (xload_all). */
static int load_ring_samples(sqlite3 *db, ring_sample **out, size_t *n, char *err,
                             size_t errlen) {
    const char *sql = "SELECT ring, time_ps, seq, occupancy FROM ring_counters";
    sqlite3_stmt *st = ana_prepare(db, sql, err, errlen);
    if (!st) return -1;
    ring_sample *r = NULL;
    size_t cap = 0;
    int rc;
    *n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (ana_grow((void **)&r, &cap, *n + 1, sizeof *r, 4096)) {
            ana_err(err, errlen, "out of memory building the timeline");
            break;
        }
        r[(*n)++] = (ring_sample){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                  sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)};
    }
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        ana_err(err, errlen, "index.db: %s (in: %.300s)", sqlite3_errmsg(db), sql);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(r);
        return -1;
    }
    if (*n > 1) qsort(r, *n, sizeof *r, by_ring_time_seq);
    *out = r;
    return 0;
}

typedef struct xload {
    const builder *b;             /* read only: the window and ranks */
    sqlite3 *db;                  /* the connection it reads */
    int64_t end_ps;               /* a transfer that never ended ends here */
    tl_slice *row;                /* the transfers in the window: track = their
                                     group key (group_key), name = their shape */
    size_t n, cap;
    xshape *shape;                /* by id, in the order first seen */
    size_t nshape, capshape;
    uint32_t *hash;               /* open addressing: shape id + 1 */
    size_t caphash;
    char **kinds;                 /* transfer kinds seen */
    int nkinds;
    nic_step *nic;
    size_t nnic, capnic;
    ring_sample *rs;              /* every ring_counters row (load_ring_samples) */
    size_t nrs;
    int have_rings;
    int rc;
    int prepared;                 /* the table opened (rc != 0 after it: a real error) */
    char err[600];
} xload;

static size_t xshape_hash(uint32_t kind, int64_t bytes, int64_t src, int64_t dst) {
    uint64_t h = kind * 0x9E3779B97F4A7C15ull;
    h = (h ^ (uint64_t)bytes) * 0xff51afd7ed558ccdull;
    h = (h ^ (uint64_t)src) * 0xc4ceb9fe1a85ec53ull;
    h = (h ^ (uint64_t)dst) * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20);
}

/* The id of shape (kind, bytes, src, dst) in x->shape, made on first
 * sight; -1 out of memory. */
static int64_t xshape_id(xload *x, uint32_t kind, int64_t bytes, int64_t src, int64_t dst) {
    if (2 * (x->nshape + 1) > x->caphash) {
        size_t cap = x->caphash ? x->caphash * 2 : 1024;
        uint32_t *h = calloc(cap, sizeof *h);
        if (!h) return -1;
        for (size_t i = 0; i < x->nshape; i++) {
            const xshape *o = &x->shape[i];
            size_t j = xshape_hash(o->kind, o->bytes, o->src, o->dst) & (cap - 1);
            while (h[j]) j = (j + 1) & (cap - 1);
            h[j] = (uint32_t)i + 1;
        }
        free(x->hash);
        x->hash = h;
        x->caphash = cap;
    }
    size_t j = xshape_hash(kind, bytes, src, dst) & (x->caphash - 1);
    for (; x->hash[j]; j = (j + 1) & (x->caphash - 1)) {
        const xshape *o = &x->shape[x->hash[j] - 1];
        if (o->kind == kind && o->bytes == bytes && o->src == src && o->dst == dst)
            return x->hash[j] - 1;
    }
    if (ana_grow((void **)&x->shape, &x->capshape, x->nshape + 1, sizeof *x->shape, 256))
        return -1;
    x->shape[x->nshape] = (xshape){.kind = kind, .bytes = bytes, .src = src, .dst = dst};
    x->hash[j] = (uint32_t)++x->nshape;
    return (int64_t)x->nshape - 1;
}

static int nic_add(xload *x, int64_t rank, int64_t ps, int64_t d) {
    if (ana_grow((void **)&x->nic, &x->capnic, x->nnic + 1, sizeof *x->nic, 1024)) return -1;
    x->nic[x->nnic++] = (nic_step){rank, ps, d};
    return 0;
}

/* The key of (rank, core, pipe) in ana_timeline.group: what a transfer's
 * slice holds as its track until add_transfers makes the track. */
static uint32_t group_key(const ana_timeline *tl, int64_t rank, int64_t core, int pipe) {
    return (uint32_t)((rank * tl->run.cores_per_rank + core) * (PIPE_COUNT + 1) + pipe + 1);
}

/* Reads every transfer once: the rows of those in the window, and the NIC
 * steps of all (the depth at the window's start counts what was issued
 * before it). Touches nothing but x: it may run on the worker thread. */
/* The transfers' columns xload_run reads, in this order. */
enum { XC_RANK, XC_CORE, XC_PIPE, XC_START, XC_ISSUE, XC_DONE, XC_KIND, XC_BYTES, XC_SRC,
       XC_DST, XC_SITE, XC_COUNT };
static const char *const xload_cols[XC_COUNT] = {
    "rank", "core", "pipe", "start_ps", "issue_ps", "done_ps", "kind", "bytes", "src_rank",
    "dst_rank", "site"};

/* Column c of row r as SQL would give it to sqlite3_column_int64 (NULL: 0). */
static int64_t xv(const ana_packed_view *v, int c, size_t r) {
    return v->null[c] && v->null[c][r] ? 0 : v->val[c][r];
}

static int xnull(const ana_packed_view *v, int c, size_t r) {
    return v->null[c] && v->null[c][r];
}

/* One chunk of transfers into x: what it is of pipes and kinds once per
 * dictionary entry, then its rows. 0, or -1 out of memory. */
static int xload_chunk(xload *x, const ana_packed_view *v) {
    const builder *b = x->b;
    int64_t cores = b->tl->run.cores_per_rank;   /* set before the thread starts */
    int pipe_of[256], kind_of[256];
    if (!v->is_text[XC_PIPE] || !v->is_text[XC_KIND] || v->ntext[XC_PIPE] > 255 ||
        v->ntext[XC_KIND] > 255) {
        ana_err(x->err, sizeof x->err, "index.db: transfers: pipe and kind are not short texts");
        return -1;
    }
    pipe_of[0] = -1;   /* NULL pipe: no slice */
    for (uint32_t t = 0; t < v->ntext[XC_PIPE]; t++)
        pipe_of[t + 1] = ana_pipe_from_text(v->text[XC_PIPE][t]);
    for (uint32_t t = 0; t <= v->ntext[XC_KIND]; t++)
        if ((kind_of[t] = tl_text_code(&x->kinds, &x->nkinds,
                                       t ? v->text[XC_KIND][t - 1] : "?")) < 0)
            goto nomem;
    for (size_t r = 0; r < v->rows; r++) {
        int64_t rank = xv(v, XC_RANK, r);
        if (!rank_in(b, rank)) continue;
        int pipe = pipe_of[v->val[XC_PIPE][r]];
        if (pipe < 0) continue;
        if (pipe == PIPE_NIC &&
            (nic_add(x, rank, xv(v, XC_ISSUE, r), 1) ||
             (!xnull(v, XC_DONE, r) && nic_add(x, rank, xv(v, XC_DONE, r), -1))))
            goto nomem;
        int64_t begin = xnull(v, XC_START, r) ? xv(v, XC_ISSUE, r) : xv(v, XC_START, r);
        int64_t end = xnull(v, XC_DONE, r) ? x->end_ps : xv(v, XC_DONE, r);
        int64_t core = xv(v, XC_CORE, r);
        if (begin > to_param(b) || end < (int64_t)b->from) continue;
        if (core < 0 || core >= cores) continue;   /* no track: no slice */
        int64_t src = 0, dst = 0;
        if (!xnull(v, XC_SRC, r)) {
            src = xv(v, XC_SRC, r);
            dst = xv(v, XC_DST, r);
        }
        if (pipe >= PIPE_COUNT) continue;   /* no track: no slice */
        if (ana_grow((void **)&x->row, &x->cap, x->n + 1, sizeof *x->row, 4096)) goto nomem;
        int64_t slot = xshape_id(x, (uint32_t)kind_of[v->val[XC_KIND][r]], xv(v, XC_BYTES, r),
                                 src, dst);
        if (slot < 0) goto nomem;
        uint64_t b0 = begin > 0 ? (uint64_t)begin : 0;   /* as new_slice clamps */
        x->row[x->n++] = (tl_slice){
            .b_ps = b0, .e_ps = end > begin ? (uint64_t)end : b0,
            .track = group_key(b->tl, rank, core, pipe), .name = (uint32_t)slot,
            .site = xnull(v, XC_SITE, r) ? 0 : (uint32_t)xv(v, XC_SITE, r) + 1,
            .cat = TL_CAT_TRANSFER};
    }
    return 0;
nomem:
    ana_err(x->err, sizeof x->err, "out of memory building the timeline");
    return -1;
}

/* Every transfer into x->row (in key order, as a scan of the table gives
 * them), the NIC steps beside: chunk by chunk from the packed table, not
 * through SQL (twelve columns of millions of rows; ana_packed_read.c). */
static void xload_run(void *arg) {
    xload *x = arg;
    ana_packed_reader *rd = NULL;
    int rc = ana_packed_open(x->db, "transfers", xload_cols, XC_COUNT, &rd, x->err,
                             sizeof x->err);
    if (rc) {
        if (rc > 0)
            ana_err(x->err, sizeof x->err, "index.db: transfers is not a packed table");
        x->rc = -1;
        return;
    }
    x->prepared = 1;
    ana_packed_view v;
    while ((rc = ana_packed_next(rd, &v, x->err, sizeof x->err)) > 0)
        if (xload_chunk(x, &v)) {
            rc = -1;
            break;
        }
    if (rc < 0) x->rc = -1;
    ana_packed_close(rd);
}

/* The transfers' thread: the transfers, then the ring samples, on its
 * own connection while the main thread reads the waits. */
static void xload_all(void *arg) {
    xload *x = arg;
    xload_run(x);
    if (!x->rc) {
        x->have_rings = load_ring_samples(x->db, &x->rs, &x->nrs, x->err, sizeof x->err) == 0;
        x->rc = x->have_rings ? 0 : -1;
    }
}

/* The name of shape j, formatted and interned on its first use. */
static uint32_t shape_name(builder *b, xload *x, uint32_t j) {
    xshape *o = &x->shape[j];
    if (o->name) return o->name;
    char name[200];
    const char *kt = x->kinds[o->kind - 1];
    if (o->src != o->dst)
        snprintf(name, sizeof name, "%s %lld B r%lld->r%lld", kt, (long long)o->bytes,
                 (long long)o->src, (long long)o->dst);
    else
        snprintf(name, sizeof name, "%s %lld B", kt, (long long)o->bytes);
    return o->name = intern(b->tl, name);
}

/* The transfers xload_run read, as the timeline's slices after the waits:
 * its array takes the waits in front (one move, not a second copy of
 * millions of slices), then each transfer gets its track and its name, in
 * the order they were read. */
static int add_transfers(builder *b, const core_info *ci, xload *x) {
    ana_timeline *tl = b->tl;
    if (x->rc) {
        ana_err(b->err, b->errlen, "%s", x->err);
        return -1;
    }
    size_t nw = tl->nslice, n = nw + x->n;
    if (!x->n) return 0;
    if (n >= UINT32_MAX || ana_grow((void **)&x->row, &x->cap, n, sizeof *x->row, 4096))
        return oom(b);
    memmove(x->row + nw, x->row, x->n * sizeof *x->row);
    if (nw) memcpy(x->row, tl->slice, nw * sizeof *tl->slice);
    free(tl->slice);
    tl->slice = x->row;
    tl->capslice = x->cap < UINT32_MAX ? (uint32_t)x->cap : UINT32_MAX;
    x->row = NULL;
    x->cap = x->n = 0;
    uint32_t kept = (uint32_t)nw;
    uint32_t per_core = PIPE_COUNT + 1;
    for (size_t i = nw; i < n; i++) {
        tl_slice s = tl->slice[i];
        uint32_t g = tl->group[s.track];
        if (g == TL_NONE) {
            uint32_t rc = s.track / per_core;
            g = group_track(b, ci, rc / tl->run.cores_per_rank, rc % tl->run.cores_per_rank,
                            (int)(s.track % per_core) - 1);
            if (g == TL_NONE) continue;
        }
        s.track = g;
        s.arg = tl->narg;
        if (!(s.name = shape_name(b, x, s.name))) {
            tl->nslice = kept;
            return oom(b);
        }
        tl->slice[kept++] = s;
        tl->transfers++;
    }
    tl->nslice = kept;
    return 0;
}

static void xload_free(xload *x) {
    for (int i = 0; i < x->nkinds; i++) free(x->kinds[i]);
    free(x->kinds);
    free(x->shape);
    free(x->hash);
    free(x->row);
    free(x->nic);
    free(x->rs);
}

/* A read-only connection of its own to db's file, for the transfers
 * thread; NULL when there is none to be had (then they are read here):
 * a database in memory, or db in a transaction (another connection would
 * not see what it has not committed). */
static sqlite3 *second_connection(sqlite3 *db) {
    const char *path = sqlite3_db_filename(db, "main");
    sqlite3 *d = NULL;
    if (!path || !*path || !sqlite3_get_autocommit(db)) return NULL;
    if (sqlite3_open_v2(path, &d, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        sqlite3_close(d);
        return NULL;
    }
    sqlite3_busy_timeout(d, 5000);
    return d;
}

/* The critical path: one track, its segments in the time window (every
 * rank's: the path crosses them). */
static int load_critical(builder *b) {
    ana_timeline *tl = b->tl;
    if (!ana_has_table(b->db, "critical_path")) return 0;
    const char *sql = "SELECT start_ps, end_ps, class, resource, role, seq, site FROM critical_path"
                      " WHERE end_ps >= ?1 AND start_ps <= ?2 ORDER BY seg";
    sqlite3_stmt *st = prepare_window(b, sql);
    if (!st) return -1;
    uint32_t track = TL_NONE;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (track == TL_NONE) {
            tl_track t = {.rank = (int32_t)tl->run.ranks, .core = 0, .pipe = TL_CRITICAL,
                          .parent = TL_NONE, .next_lane = TL_NONE};
            t.name = t.label = intern(tl, "critical path");
            if (!t.name || (track = add_track(b, &t)) == TL_NONE) goto nomem;
        }
        tl_slice *s = new_slice(b, track, TL_CAT_CRITICAL, sqlite3_column_int64(st, 0),
                                sqlite3_column_int64(st, 1), col_site(st, 6));
        if (!s) goto nomem;
        const char *cls = col_text(st, 2), *res = col_text(st, 3), *role = col_text(st, 4);
        char name[240];
        snprintf(name, sizeof name, "%s%s%s", res ? res : "?", role ? " " : "", role ? role : "");
        s->name = intern(tl, name);
        if (!s->name || arg_str(b, s, "class", cls) || arg_str(b, s, "resource", res) ||
            (sqlite3_column_type(st, 5) != SQLITE_NULL &&
             arg_int(b, s, "seq", sqlite3_column_int64(st, 5))))
            goto nomem;
        tl->critical++;
    }
    return loaded(b, st, 0, rc, sql);
nomem:
    return loaded(b, st, oom(b), SQLITE_NOMEM, sql);
}

static int load_sites(builder *b) {
    ana_timeline *tl = b->tl;
    const char *sql = "SELECT id, file, line, function FROM sites ORDER BY id";
    sqlite3_stmt *st = prepare(b, sql);
    if (!st) return -1;
    int64_t max = -1;
    uint32_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id < 0 || id > 10000000) continue;
        if (grow((void **)&tl->site, &cap, (uint32_t)id + 1, sizeof *tl->site)) goto nomem;
        for (int64_t k = max + 1; k <= id; k++) tl->site[k] = (tl_site){0};
        if (id > max) max = id;
        tl->site[id].file = intern(tl, col_text(st, 1));
        tl->site[id].function = intern(tl, col_text(st, 3));
        tl->site[id].line = sqlite3_column_int64(st, 2);
        if (!tl->site[id].file || !tl->site[id].function) goto nomem;
    }
    tl->nsite = (uint32_t)(max + 1);
    return loaded(b, st, 0, rc, sql);
nomem:
    return loaded(b, st, oom(b), SQLITE_NOMEM, sql);
}

/* ------------------------------------------------------------ counters */

static uint32_t counter_track(builder *b, int64_t rank, const char *name, int is_double) {
    tl_track t = {.rank = (int32_t)rank, .core = -1, .pipe = TL_COUNTER, .parent = TL_NONE,
                  .next_lane = TL_NONE, .is_double = (uint8_t)is_double};
    t.name = t.label = intern(b->tl, name);
    return t.name ? add_track(b, &t) : TL_NONE;
}

static int add_counter(builder *b, uint32_t track, uint64_t ps, double v) {
    ana_timeline *tl = b->tl;
    if (grow((void **)&tl->counter, &tl->capcounter, tl->ncounter + 1, sizeof *tl->counter))
        return oom(b);
    tl->counter[tl->ncounter++] = (tl_counter){.ps = ps, .track = track, .value = v};
    return 0;
}

/* Ring occupancy: the value when the window opens, then every change. */
static int load_rings(builder *b, xload *x) {
    const char *sql =
        "SELECT r.id, COALESCE(NULLIF(r.owner_rank, -1), o.rank), r.name"
        " FROM rings r LEFT JOIN objects o ON o.id = r.id ORDER BY r.id";
    if (!x->have_rings && load_ring_samples(b->db, &x->rs, &x->nrs, b->err, b->errlen))
        return -1;
    ring_sample *rs = x->rs;
    size_t nrs = x->nrs, at = 0;
    sqlite3_stmt *st = prepare(b, sql);
    if (!st) return -1;
    int rc, bad = 0;
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t ring = sqlite3_column_int64(st, 0), rank = sqlite3_column_int64(st, 1);
        while (at < nrs && rs[at].ring < ring) at++;
        size_t end = at;
        while (end < nrs && rs[end].ring == ring) end++;
        size_t first = at;
        at = end;
        if (!rank_in(b, rank)) continue;
        char name[300];
        snprintf(name, sizeof name, "ring %s occupancy",
                 col_text(st, 2) ? col_text(st, 2) : "?");
        uint32_t t = TL_NONE;
        size_t k = first;
        while (k < end && (uint64_t)rs[k].ps < b->from) k++;   /* before the window */
        if (b->from > 0 && k > first) {
            if ((t = counter_track(b, rank, name, 0)) == TL_NONE) { bad = oom(b); break; }
            if (add_counter(b, t, b->from, (double)rs[k - 1].occupancy)) { bad = 1; break; }
        }
        for (; k < end && (uint64_t)rs[k].ps <= b->to; k++) {
            if (t == TL_NONE && (t = counter_track(b, rank, name, 0)) == TL_NONE) {
                bad = oom(b);
                break;
            }
            if (add_counter(b, t, rs[k].ps > 0 ? (uint64_t)rs[k].ps : 0,
                            (double)rs[k].occupancy)) {
                bad = 1;
                break;
            }
        }
    }
    return loaded(b, st, bad, rc, sql);
}

/* The rank a link's bytes leave from: "hccs r0->r3", "rdma r0->r8", "hbm r2". */
static int64_t link_rank(const char *link) {
    const char *r = link ? strchr(link, 'r') : NULL;
    while (r && (r[1] < '0' || r[1] > '9')) r = strchr(r + 1, 'r');
    return r ? strtoll(r + 1, NULL, 10) : -1;
}

/* Link bandwidth per bucket, back to 0 after a gap (a bucket with no row
 * moved nothing). */
static int load_links(builder *b) {
    if (!ana_has_table(b->db, "link_bandwidth")) return 0;
    const char *sql = "SELECT link, bucket_ps, gbps, (SELECT CAST(value AS INTEGER) FROM meta"
                      " WHERE key = 'analysis.bucket_ps') FROM link_bandwidth"
                      " WHERE bucket_ps <= ?2 ORDER BY link, bucket_ps";
    sqlite3_stmt *st = prepare_window(b, sql);   /* ?1 unused: buckets end after it */
    if (!st) return -1;
    char cur[128] = "";
    uint32_t t = TL_NONE;
    uint64_t next = 0;      /* end of the last bucket written */
    int rc, bad = 0;
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *link = col_text(st, 0);
        int64_t bucket = sqlite3_column_int64(st, 1), width = sqlite3_column_int64(st, 3);
        if (!link || bucket < 0 || width <= 0) continue;
        if ((uint64_t)(bucket + width) < b->from) continue;
        if (strcmp(link, cur)) {
            if (t != TL_NONE && next) bad = add_counter(b, t, next, 0);
            snprintf(cur, sizeof cur, "%s", link);
            t = TL_NONE;
            next = 0;
            int64_t rank = link_rank(link);
            if (!rank_in(b, rank)) continue;
            char name[200];
            snprintf(name, sizeof name, "%s GB/s", link);
            if ((t = counter_track(b, rank, name, 1)) == TL_NONE) { bad = oom(b); break; }
        }
        if (t == TL_NONE) continue;
        if (next && next < (uint64_t)bucket) bad = add_counter(b, t, next, 0);
        if (!bad) bad = add_counter(b, t, (uint64_t)bucket, sqlite3_column_double(st, 2));
        next = (uint64_t)(bucket + width);
    }
    if (!bad && t != TL_NONE && next) bad = add_counter(b, t, next, 0);
    return loaded(b, st, bad, rc, sql);
}

static int by_rank_time_step(const void *a, const void *b) {
    const nic_step *x = a, *y = b;
    if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
    if (x->ps != y->ps) return x->ps < y->ps ? -1 : 1;
    return x->d < y->d ? -1 : x->d > y->d;
}

/* NIC queue depth per rank: RDMA operations issued and not yet landed
 * (steps from xload_run; at equal times landings first). */
static int load_nic(builder *b, xload *x) {
    if (x->nnic > 1) qsort(x->nic, x->nnic, sizeof *x->nic, by_rank_time_step);
    int64_t rank = -1, depth = 0;
    uint32_t t = TL_NONE;
    int started = 0;
    for (size_t i = 0; i < x->nnic; i++) {
        int64_t r = x->nic[i].rank, ps = x->nic[i].ps;
        if (r != rank) {
            rank = r;
            depth = 0;
            started = 0;
            t = TL_NONE;
            if (rank_in(b, r) && (t = counter_track(b, r, "NIC queue depth", 0)) == TL_NONE)
                return oom(b);
        }
        depth += x->nic[i].d;
        if (t == TL_NONE || ps < 0 || (uint64_t)ps > b->to) continue;
        if ((uint64_t)ps < b->from) continue;
        if (!started && b->from > 0 && (uint64_t)ps > b->from &&
            add_counter(b, t, b->from, (double)(depth - x->nic[i].d)))
            return -1;
        started = 1;
        if (add_counter(b, t, (uint64_t)ps, (double)depth)) return -1;
    }
    return 0;
}

/* ------------------------------------------------------------ order */

/* Slices of one group, by begin, then end descending (outer first), then
 * load order. */
static const tl_slice *sort_slices;
static int by_start(const void *a, const void *b) {
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    const tl_slice *x = &sort_slices[i], *y = &sort_slices[j];
    if (x->b_ps != y->b_ps) return x->b_ps < y->b_ps ? -1 : 1;
    if (x->e_ps != y->e_ps) return x->e_ps > y->e_ps ? -1 : 1;
    return i < j ? -1 : 1;
}

/* idx (every slice) ordered by group (the track they are loaded on), then
 * as by_start. A counting sort by group keeps load order, and a group's
 * slices mostly load in that order already (waits by begin, a queue's
 * transfers by start), so only the groups that are not get sorted. */
static int order_slices(const ana_timeline *tl, uint32_t *idx) {
    uint32_t n = tl->nslice;
    size_t *at = calloc((size_t)tl->ntrack + 1, sizeof *at);
    if (!at) return -1;
    for (uint32_t i = 0; i < n; i++) at[tl->slice[i].track + 1]++;
    for (uint32_t t = 0; t < tl->ntrack; t++) at[t + 1] += at[t];
    for (uint32_t i = 0; i < n; i++) idx[at[tl->slice[i].track]++] = i;
    sort_slices = tl->slice;
    size_t from = 0;
    for (uint32_t t = 0; t < tl->ntrack; t++) {
        size_t to = at[t];   /* the group's end, after the scatter */
        for (size_t k = from + 1; k < to; k++) {
            if (by_start(&idx[k - 1], &idx[k]) > 0) {
                qsort(idx + from, to - from, sizeof *idx, by_start);
                break;
            }
        }
        from = to;
    }
    free(at);
    return 0;
}

/* Lane stacks of one group: open slices per lane. */
typedef struct lane_stack {
    uint32_t track;
    uint32_t *s;
    uint32_t n, cap;
} lane_stack;

static int pop_to(tl_order *o, const ana_timeline *tl, lane_stack *l, uint64_t until_ps,
                  int all) {
    while (l->n) {
        const tl_slice *top = &tl->slice[l->s[l->n - 1]];
        if (!all && top->e_ps > until_ps) break;
        uint32_t idx = l->s[--l->n];
        if (top->flow && tl_order_emit(o, top->e_ps, TL_EV_WOKEN, idx)) return -1;
        if (tl_order_emit(o, top->e_ps, TL_EV_END, idx)) return -1;
    }
    return 0;
}

static int order_events(builder *b) {
    ana_timeline *tl = b->tl;
    tl_order o = {0};
    uint32_t *idx = malloc(((size_t)tl->nslice + 1) * sizeof *idx);
    lane_stack *lanes = NULL;
    uint32_t nlanes = 0, caplanes = 0;
    int rc = -1;
    if (!idx || tl_order_start(&o, tl)) goto done;
    /* Wake instants first: at equal times a flow's start precedes its end. */
    for (uint32_t i = 0; i < tl->nslice; i++)
        if (tl->slice[i].flow &&
            tl_order_emit(&o, tl_flow_of(tl, &tl->slice[i])->waker_ps, TL_EV_WAKE, i))
            goto done;
    if (order_slices(tl, idx)) goto done;
    for (uint32_t i = 0; i < tl->nslice;) {
        uint32_t group = tl->slice[idx[i]].track, j = i;
        nlanes = 0;
        for (; j < tl->nslice && tl->slice[idx[j]].track == group; j++) {
            tl_slice *s = &tl->slice[idx[j]];
            uint32_t l = 0;
            for (;; l++) {
                if (l == nlanes) {
                    if (nlanes == caplanes) {
                        uint32_t cap = caplanes ? caplanes * 2 : 8;
                        lane_stack *nl = realloc(lanes, (size_t)cap * sizeof *nl);
                        if (!nl) goto done;
                        memset(nl + caplanes, 0, (size_t)(cap - caplanes) * sizeof *nl);
                        lanes = nl;
                        caplanes = cap;
                    }
                    lanes[l].n = 0;
                    lanes[l].track = l ? next_lane(b, lanes[l - 1].track) : group;
                    if (lanes[l].track == TL_NONE) goto done;
                    nlanes++;
                }
                lane_stack *ls = &lanes[l];
                if (pop_to(&o, tl, ls, s->b_ps, 0)) goto done;
                if (!ls->n || tl->slice[ls->s[ls->n - 1]].e_ps >= s->e_ps) break;
            }
            lane_stack *ls = &lanes[l];
            if (grow((void **)&ls->s, &ls->cap, ls->n + 1, sizeof *ls->s)) goto done;
            ls->s[ls->n++] = idx[j];
            s = &tl->slice[idx[j]];
            s->track = ls->track;
            if (tl_order_emit(&o, s->b_ps, TL_EV_BEGIN, idx[j])) goto done;
        }
        for (uint32_t l = 0; l < nlanes; l++)
            if (pop_to(&o, tl, &lanes[l], 0, 1)) goto done;
        i = j;
    }
    for (uint32_t i = 0; i < tl->ncounter; i++)
        if (tl_order_emit(&o, tl->counter[i].ps, TL_EV_COUNTER, i)) goto done;
    free(idx);
    idx = NULL;
    rc = tl_order_finish(&o, tl);
done:
    for (uint32_t l = 0; l < caplanes && lanes; l++) free(lanes[l].s);
    free(lanes);
    free(idx);
    tl_order_free(&o);
    if (rc) oom(b);
    return rc;
}

uint64_t ana_timeline_event_ps(const ana_timeline *tl, const tl_event *e) {
    const tl_slice *s = e->type == TL_EV_COUNTER ? NULL : &tl->slice[e->idx];
    switch (e->type) {
    case TL_EV_BEGIN: return s->b_ps;
    case TL_EV_END: case TL_EV_WOKEN: return s->e_ps;
    case TL_EV_WAKE: return tl_flow_of(tl, s)->waker_ps;
    default: return tl->counter[e->idx].ps;
    }
}

/* ------------------------------------------------------------ entry */

/* The run's shape, the window and the ranks asked for into b, and the
 * timeline's group table. 0, or -1 with b's err (nothing left allocated). */
static int builder_start(builder *b, const ana_export_opts *opts) {
    ana_timeline *tl = b->tl;
    char *err = b->err;
    size_t errlen = b->errlen;
    if (ana_run_load(b->db, &tl->run, err, errlen)) return -1;
    if (!ana_has_table(b->db, "wait_labels") || !ana_has_table(b->db, "cores")) {
        ana_err(err, errlen, "index.db lacks the analysis tables (wait_labels, cores): open "
                "it with ana_open, as `npurr export` does");
        return -1;
    }
    b->from = opts ? opts->from_ps : 0;
    b->to = opts && opts->to_ps ? opts->to_ps : UINT64_MAX;
    if (b->to < b->from) {
        ana_err(err, errlen, "--to (%llu ps) is before --from (%llu ps)",
                (unsigned long long)b->to, (unsigned long long)b->from);
        return -1;
    }
    size_t nbytes = (size_t)(tl->run.ranks + 7) / 8;
    b->ranks = malloc(nbytes ? nbytes : 1);
    size_t ngroups = (size_t)(tl->run.ranks * tl->run.cores_per_rank) * (PIPE_COUNT + 1);
    tl->group = malloc((ngroups ? ngroups : 1) * sizeof *tl->group);
    if (!b->ranks || !tl->group) {
        free(b->ranks);
        ana_timeline_free(tl);
        return oom(b);
    }
    for (size_t i = 0; i < ngroups; i++) tl->group[i] = TL_NONE;
    if (opts && opts->ranks && *opts->ranks) {
        if (ana_parse_ranks(opts->ranks, b->ranks, (size_t)tl->run.ranks, err, errlen)) {
            free(b->ranks);
            ana_timeline_free(tl);
            return -1;
        }
    } else {
        memset(b->ranks, 0xff, nbytes);
    }
    return 0;
}

/* The strings every timeline names: 0, or -1 out of memory. */
static int intern_fixed(ana_timeline *tl) {
    tl->str_wake = intern(tl, "wake");
    tl->str_woken = intern(tl, "woken");
    tl->str_cat[TL_CAT_WAIT] = intern(tl, "wait");
    tl->str_cat[TL_CAT_TRANSFER] = intern(tl, "transfer");
    tl->str_cat[TL_CAT_WAKE] = tl->str_wake;
    tl->str_cat[TL_CAT_CRITICAL] = intern(tl, "critical");
    return !tl->str_wake || !tl->str_woken || !tl->str_cat[TL_CAT_WAIT] ||
                   !tl->str_cat[TL_CAT_TRANSFER] || !tl->str_cat[TL_CAT_CRITICAL]
               ? -1 : 0;
}

int ana_timeline_build(sqlite3 *db, const ana_export_opts *opts, ana_timeline *tl, char *err,
                       size_t errlen) {
    memset(tl, 0, sizeof *tl);
    builder b = {.db = db, .tl = tl, .err = err, .errlen = errlen};
    if (builder_start(&b, opts)) return -1;
    int rc = -1;
    core_info *ci = load_cores(&b);
    if (!ci) {
        if (!err || !*err) oom(&b);
        goto done;
    }
    if (intern_fixed(tl)) {
        oom(&b);
        goto done;
    }
    double t = ana_step_clock(NULL, 0);
    xload x = {.b = &b, .end_ps = tl->run.end_time_ps};
    sqlite3 *own = NULL;
    rec_worker *wr = rec_worker_start_if_cpu(1);
    if (wr && (own = second_connection(db))) {
        x.db = own;
        rec_worker_submit(wr, xload_all, &x);
    }
    rc = load_sites(&b) || load_waits(&b, ci) ? -1 : 0;
    t = ana_step_clock("tl waits", t);
    rec_worker_stop(wr);
    if (own && x.rc && !x.prepared) {   /* not there for the second connection: read here */
        sqlite3_close(own);
        own = NULL;
        x.rc = 0;
    }
    if (!own) {
        x.db = db;
        if (!rc) xload_run(&x);
    }
    sqlite3_close(own);
    t = ana_step_clock("tl transfers read", t);
    if (!rc) rc = add_transfers(&b, ci, &x);
    t = ana_step_clock("tl transfers", t);
    if (!rc) rc = load_rings(&b, &x);
    t = ana_step_clock("tl rings", t);
    if (!rc) rc = load_links(&b);
    t = ana_step_clock("tl links", t);
    if (!rc) rc = load_nic(&b, &x);
    xload_free(&x);
    t = ana_step_clock("tl nic", t);
    if (!rc) rc = load_critical(&b);
    t = ana_step_clock("tl critical", t);
    if (!rc) rc = order_events(&b);
    t = ana_step_clock("tl order", t);
done:
    if (ci) {
        for (int64_t i = 0; i < tl->run.ranks * tl->run.cores_per_rank; i++) {
            free(ci[i].label);
            free(ci[i].core);
            free(ci[i].waker);
        }
        free(ci);
    }
    free(b.ranks);
    if (rc) ana_timeline_free(tl);
    return rc;
}

void ana_timeline_free(ana_timeline *tl) {
    for (uint32_t i = 0; i < tl->nstr; i++) free(tl->str[i]);
    free(tl->str);
    free(tl->hash);
    free(tl->track);
    free(tl->group);
    free(tl->slice);
    free(tl->arg);
    free(tl->flow);
    free(tl->counter);
    free(tl->site);
    free(tl->ev);
    memset(tl, 0, sizeof *tl);
}

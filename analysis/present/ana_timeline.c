/*
 * ana_timeline.c - builds the timeline both exporters write (the model and
 * its rules are in ana_timeline.h): reads waits, transfers and counters
 * from the index, puts every slice on a lane of its core's or pipe's track,
 * and orders every event the way Perfetto reads them.
 *
 * Memory grows with the slices exported (about 130 bytes each): a viewer
 * needs them all anyway, and ordering flows across tracks needs them at
 * once.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/present/ana_timeline.h"

typedef struct builder {
    sqlite3 *db;
    ana_timeline *tl;
    uint64_t from, to;
    uint8_t *ranks;
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
                    .cat = cat, .site = site, .waker_track = TL_NONE};
    return s;
}

static int arg_str(builder *b, tl_slice *s, const char *key, const char *v) {
    if (!v || s->nargs >= TL_MAX_ARGS) return 0;
    tl_arg *a = &s->arg[s->nargs++];
    a->key = intern(b->tl, key);
    a->type = TL_ARG_STR;
    a->v = intern(b->tl, v);
    return a->key && a->v ? 0 : -1;
}

static int arg_int(builder *b, tl_slice *s, const char *key, int64_t v) {
    if (s->nargs >= TL_MAX_ARGS) return 0;
    tl_arg *a = &s->arg[s->nargs++];
    a->key = intern(b->tl, key);
    a->type = TL_ARG_INT;
    a->v = v;
    return a->key ? 0 : -1;
}

/* The group (lane 0) of a slice is kept in track until lanes are chosen. */
static int load_waits(builder *b, const core_info *ci) {
    ana_timeline *tl = b->tl;
    const char *sql =
        "SELECT w.id, w.rank, w.core, t.pipe, w.begin_ps, w.end_ps, COALESCE(l.label, w.kind),"
        " w.kind, w.cause, w.expected, w.seen, w.site,"
        " (w.end_seq IS NOT NULL AND we.seq IS NOT NULL AND w.end_ps > w.begin_ps),"
        " we.rank, we.core, we.pipe, we.time_ps, we.kind, we.xfer, o.name,"
        " COALESCE(wc.name || COALESCE(' ' || wc.role, ''), 'r' || we.rank || ' core ' || we.core)"
        " FROM waits w LEFT JOIN tracks t ON t.id = w.track"
        " LEFT JOIN wait_labels l ON l.begin_seq = w.begin_seq"
        " LEFT JOIN wake_events we ON we.seq = w.waker_seq"
        " LEFT JOIN objects o ON o.id = we.object"
        " LEFT JOIN cores wc ON wc.rank = we.rank AND wc.core = we.core"
        " WHERE w.begin_ps <= ?2 AND w.end_ps >= ?1";
    sqlite3_stmt *st = prepare_window(b, sql);
    if (!st) return -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t rank = sqlite3_column_int64(st, 1);
        if (!rank_in(b, rank)) continue;
        const char *ptext = col_text(st, 3);
        int pipe = ptext ? ana_pipe_from_text(ptext) : PIPE_S;
        uint32_t g = group_track(b, ci, rank, sqlite3_column_int64(st, 2),
                                 pipe == PIPE_S || pipe < 0 ? TL_CORE : pipe);
        if (g == TL_NONE) continue;
        tl_slice *s = new_slice(b, g, TL_CAT_WAIT, sqlite3_column_int64(st, 4),
                                sqlite3_column_int64(st, 5), col_site(st, 11));
        if (!s) goto nomem;
        char name[400];
        snprintf(name, sizeof name, "wait %s", col_text(st, 6) ? col_text(st, 6) : "?");
        s->name = intern(tl, name);
        if (!s->name || arg_str(b, s, "kind", col_text(st, 7)) ||
            arg_str(b, s, "cause", col_text(st, 8)) ||
            arg_int(b, s, "expected", sqlite3_column_int64(st, 9)) ||
            arg_int(b, s, "seen", sqlite3_column_int64(st, 10)))
            goto nomem;
        tl->waits++;
        if (sqlite3_column_type(st, 13) == SQLITE_NULL) continue;
        if (arg_str(b, s, "waker", col_text(st, 20))) goto nomem;
        int64_t wrank = sqlite3_column_int64(st, 13);
        if (!sqlite3_column_int(st, 12) || !rank_in(b, wrank)) continue;
        const char *wp = col_text(st, 15);
        int wpipe = wp ? ana_pipe_from_text(wp) : PIPE_S;
        uint32_t wg = group_track(b, ci, wrank, sqlite3_column_int64(st, 14),
                                  wpipe == PIPE_S || wpipe < 0 ? TL_CORE : wpipe);
        if (wg == TL_NONE) continue;
        const char *kind = col_text(st, 17), *xk = col_text(st, 18), *obj = col_text(st, 19);
        snprintf(name, sizeof name, "wake: %s%s%s%s%s", kind ? kind : "?", xk ? " " : "",
                 xk ? xk : "", obj ? " " : "", obj ? obj : "");
        int64_t wt = sqlite3_column_int64(st, 16);
        s->waker_ps = wt > 0 ? (uint64_t)wt : 0;
        if (s->waker_ps > s->e_ps) s->waker_ps = s->e_ps;   /* never after what it ended */
        s->waker_track = wg;
        s->waker_name = intern(tl, name);
        if (!s->waker_name) goto nomem;
        s->flow = (uint64_t)sqlite3_column_int64(st, 0) + 1;
        tl->flows++;
    }
    return loaded(b, st, 0, rc, sql);
nomem:
    return loaded(b, st, oom(b), SQLITE_NOMEM, sql);
}

static int load_transfers(builder *b, const core_info *ci) {
    ana_timeline *tl = b->tl;
    const char *sql =
        "SELECT x.rank, x.core, x.pipe, COALESCE(x.start_ps, x.issue_ps),"
        " COALESCE(x.done_ps, ?3), x.kind, x.bytes, x.src_rank, x.dst_rank, x.site"
        " FROM transfers x"
        " WHERE COALESCE(x.start_ps, x.issue_ps) <= ?2 AND COALESCE(x.done_ps, ?3) >= ?1";
    sqlite3_stmt *st = prepare_window(b, sql);
    if (!st) return -1;
    sqlite3_bind_int64(st, 3, tl->run.end_time_ps);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t rank = sqlite3_column_int64(st, 0);
        if (!rank_in(b, rank)) continue;
        int pipe = col_text(st, 2) ? ana_pipe_from_text(col_text(st, 2)) : -1;
        if (pipe < 0) continue;
        uint32_t g = group_track(b, ci, rank, sqlite3_column_int64(st, 1), pipe);
        if (g == TL_NONE) continue;
        tl_slice *s = new_slice(b, g, TL_CAT_TRANSFER, sqlite3_column_int64(st, 3),
                                sqlite3_column_int64(st, 4), col_site(st, 9));
        if (!s) goto nomem;
        const char *kind = col_text(st, 5);
        long long bytes = sqlite3_column_int64(st, 6);
        char name[200];
        if (sqlite3_column_type(st, 7) != SQLITE_NULL &&
            sqlite3_column_int64(st, 7) != sqlite3_column_int64(st, 8))
            snprintf(name, sizeof name, "%s %lld B r%lld->r%lld", kind ? kind : "?", bytes,
                     (long long)sqlite3_column_int64(st, 7),
                     (long long)sqlite3_column_int64(st, 8));
        else
            snprintf(name, sizeof name, "%s %lld B", kind ? kind : "?", bytes);
        s->name = intern(tl, name);
        if (!s->name) goto nomem;
        tl->transfers++;
    }
    return loaded(b, st, 0, rc, sql);
nomem:
    return loaded(b, st, oom(b), SQLITE_NOMEM, sql);
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
static int load_rings(builder *b) {
    const char *sql =
        "SELECT r.id, COALESCE(NULLIF(r.owner_rank, -1), o.rank), r.name,"
        " (SELECT rc.occupancy FROM ring_counters rc WHERE rc.ring = r.id AND rc.time_ps < ?1"
        "  ORDER BY rc.time_ps DESC, rc.seq DESC LIMIT 1)"
        " FROM rings r LEFT JOIN objects o ON o.id = r.id ORDER BY r.id";
    const char *samples =
        "SELECT time_ps, occupancy FROM ring_counters WHERE ring = ?1 AND time_ps >= ?2"
        " AND time_ps <= ?3 ORDER BY time_ps, seq";
    sqlite3_stmt *st = prepare(b, sql), *ss = st ? prepare(b, samples) : NULL;
    if (!ss) {
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_bind_int64(st, 1, (sqlite3_int64)b->from);
    int rc, bad = 0;
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t rank = sqlite3_column_int64(st, 1);
        if (!rank_in(b, rank)) continue;
        char name[300];
        snprintf(name, sizeof name, "ring %s occupancy",
                 col_text(st, 2) ? col_text(st, 2) : "?");
        uint32_t t = TL_NONE;
        if (b->from > 0 && sqlite3_column_type(st, 3) != SQLITE_NULL) {
            if ((t = counter_track(b, rank, name, 0)) == TL_NONE) { bad = oom(b); break; }
            if (add_counter(b, t, b->from, (double)sqlite3_column_int64(st, 3))) { bad = 1; break; }
        }
        sqlite3_reset(ss);
        sqlite3_bind_int64(ss, 1, sqlite3_column_int64(st, 0));
        sqlite3_bind_int64(ss, 2, (sqlite3_int64)b->from);
        sqlite3_bind_int64(ss, 3, to_param(b));
        int r2;
        while ((r2 = sqlite3_step(ss)) == SQLITE_ROW) {
            if (t == TL_NONE && (t = counter_track(b, rank, name, 0)) == TL_NONE) {
                bad = oom(b);
                break;
            }
            int64_t ps = sqlite3_column_int64(ss, 0);
            if (add_counter(b, t, ps > 0 ? (uint64_t)ps : 0,
                            (double)sqlite3_column_int64(ss, 1))) {
                bad = 1;
                break;
            }
        }
        if (!bad && r2 != SQLITE_DONE) bad = sql_fail(b, samples);
    }
    sqlite3_finalize(ss);
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

/* NIC queue depth per rank: RDMA operations issued and not yet landed. */
static int load_nic(builder *b) {
    const char *sql =
        "SELECT rank, issue_ps AS t, 1 AS d FROM transfers WHERE pipe = 'NIC'"
        " UNION ALL SELECT rank, done_ps, -1 FROM transfers WHERE pipe = 'NIC'"
        " AND done_ps IS NOT NULL ORDER BY 1, 2, 3";
    sqlite3_stmt *st = prepare(b, sql);
    if (!st) return -1;
    int64_t rank = -1, depth = 0;
    uint32_t t = TL_NONE;
    int rc, bad = 0, started = 0;
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t r = sqlite3_column_int64(st, 0), ps = sqlite3_column_int64(st, 1);
        if (r != rank) {
            rank = r;
            depth = 0;
            started = 0;
            t = TL_NONE;
            if (rank_in(b, r) && (t = counter_track(b, r, "NIC queue depth", 0)) == TL_NONE) {
                bad = oom(b);
                break;
            }
        }
        depth += sqlite3_column_int64(st, 2);
        if (t == TL_NONE || ps < 0 || (uint64_t)ps > b->to) continue;
        if ((uint64_t)ps < b->from) continue;
        if (!started && b->from > 0 && (uint64_t)ps > b->from)
            bad = add_counter(b, t, b->from, (double)(depth - sqlite3_column_int64(st, 2)));
        started = 1;
        if (!bad) bad = add_counter(b, t, (uint64_t)ps, (double)depth);
    }
    return loaded(b, st, bad, rc, sql);
}

/* ------------------------------------------------------------ order */

typedef struct order {
    uint64_t *key;
    uint32_t *val;
    tl_event *gen;
    uint32_t n, cap;
} order;

static int emit(order *o, uint64_t ps, uint8_t type, uint32_t idx) {
    if (o->n == o->cap) {
        uint32_t cap = o->cap ? o->cap * 2 : 4096;
        uint64_t *k = realloc(o->key, (size_t)cap * sizeof *k);
        if (!k) return -1;
        o->key = k;
        uint32_t *v = realloc(o->val, (size_t)cap * sizeof *v);
        if (!v) return -1;
        o->val = v;
        tl_event *g = realloc(o->gen, (size_t)cap * sizeof *g);
        if (!g) return -1;
        o->gen = g;
        o->cap = cap;
    }
    o->key[o->n] = tl_ns(ps);
    o->val[o->n] = o->n;
    o->gen[o->n] = (tl_event){.type = type, .idx = idx};
    o->n++;
    return 0;
}

static const ana_timeline *sort_tl;
static int by_group_then_start(const void *a, const void *b) {
    const tl_slice *x = &sort_tl->slice[*(const uint32_t *)a];
    const tl_slice *y = &sort_tl->slice[*(const uint32_t *)b];
    if (x->track != y->track) return x->track < y->track ? -1 : 1;
    if (x->b_ps != y->b_ps) return x->b_ps < y->b_ps ? -1 : 1;
    if (x->e_ps != y->e_ps) return x->e_ps > y->e_ps ? -1 : 1;   /* outer first */
    return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

/* Lane stacks of one group: open slices per lane. */
typedef struct lane_stack {
    uint32_t track;
    uint32_t *s;
    uint32_t n, cap;
} lane_stack;

static int pop_to(order *o, const ana_timeline *tl, lane_stack *l, uint64_t until_ps,
                  int all) {
    while (l->n) {
        const tl_slice *top = &tl->slice[l->s[l->n - 1]];
        if (!all && top->e_ps > until_ps) break;
        uint32_t idx = l->s[--l->n];
        if (top->flow && emit(o, top->e_ps, TL_EV_WOKEN, idx)) return -1;
        if (emit(o, top->e_ps, TL_EV_END, idx)) return -1;
    }
    return 0;
}

static int order_events(builder *b) {
    ana_timeline *tl = b->tl;
    order o = {0};
    uint32_t *idx = malloc(((size_t)tl->nslice + 1) * sizeof *idx);
    lane_stack *lanes = NULL;
    uint32_t nlanes = 0, caplanes = 0;
    int rc = -1;
    if (!idx) goto done;
    /* Wake instants first: at equal times a flow's start precedes its end. */
    for (uint32_t i = 0; i < tl->nslice; i++)
        if (tl->slice[i].flow && emit(&o, tl->slice[i].waker_ps, TL_EV_WAKE, i)) goto done;
    for (uint32_t i = 0; i < tl->nslice; i++) idx[i] = i;
    sort_tl = tl;
    qsort(idx, tl->nslice, sizeof *idx, by_group_then_start);
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
            if (emit(&o, s->b_ps, TL_EV_BEGIN, idx[j])) goto done;
        }
        for (uint32_t l = 0; l < nlanes; l++)
            if (pop_to(&o, tl, &lanes[l], 0, 1)) goto done;
        i = j;
    }
    for (uint32_t i = 0; i < tl->ncounter; i++)
        if (emit(&o, tl->counter[i].ps, TL_EV_COUNTER, i)) goto done;
    if (ana_radix_sort(o.key, o.val, o.n)) goto done;
    tl->ev = malloc(((size_t)o.n + 1) * sizeof *tl->ev);
    if (!tl->ev) goto done;
    for (uint32_t i = 0; i < o.n; i++) tl->ev[i] = o.gen[o.val[i]];
    tl->nev = o.n;
    rc = 0;
done:
    for (uint32_t l = 0; l < caplanes && lanes; l++) free(lanes[l].s);
    free(lanes);
    free(idx);
    free(o.key);
    free(o.val);
    free(o.gen);
    if (rc) oom(b);
    return rc;
}

uint64_t ana_timeline_event_ps(const ana_timeline *tl, const tl_event *e) {
    const tl_slice *s = e->type == TL_EV_COUNTER ? NULL : &tl->slice[e->idx];
    switch (e->type) {
    case TL_EV_BEGIN: return s->b_ps;
    case TL_EV_END: case TL_EV_WOKEN: return s->e_ps;
    case TL_EV_WAKE: return s->waker_ps;
    default: return tl->counter[e->idx].ps;
    }
}

/* ------------------------------------------------------------ entry */

int ana_timeline_build(sqlite3 *db, const ana_export_opts *opts, ana_timeline *tl, char *err,
                       size_t errlen) {
    memset(tl, 0, sizeof *tl);
    builder b = {.db = db, .tl = tl, .err = err, .errlen = errlen};
    if (ana_run_load(db, &tl->run, err, errlen)) return -1;
    if (!ana_has_table(db, "wait_labels") || !ana_has_table(db, "cores")) {
        ana_err(err, errlen, "index.db lacks the analysis tables (wait_labels, cores): open "
                "it with ana_open, as `npurr export` does");
        return -1;
    }
    b.from = opts ? opts->from_ps : 0;
    b.to = opts && opts->to_ps ? opts->to_ps : UINT64_MAX;
    if (b.to < b.from) {
        ana_err(err, errlen, "--to (%llu ps) is before --from (%llu ps)",
                (unsigned long long)b.to, (unsigned long long)b.from);
        return -1;
    }
    size_t nbytes = (size_t)(tl->run.ranks + 7) / 8;
    b.ranks = malloc(nbytes ? nbytes : 1);
    size_t ngroups = (size_t)(tl->run.ranks * tl->run.cores_per_rank) * (PIPE_COUNT + 1);
    tl->group = malloc((ngroups ? ngroups : 1) * sizeof *tl->group);
    if (!b.ranks || !tl->group) {
        free(b.ranks);
        ana_timeline_free(tl);
        return oom(&b);
    }
    for (size_t i = 0; i < ngroups; i++) tl->group[i] = TL_NONE;
    if (opts && opts->ranks && *opts->ranks) {
        if (ana_parse_ranks(opts->ranks, b.ranks, (size_t)tl->run.ranks, err, errlen)) {
            free(b.ranks);
            ana_timeline_free(tl);
            return -1;
        }
    } else {
        memset(b.ranks, 0xff, nbytes);
    }
    int rc = -1;
    core_info *ci = load_cores(&b);
    if (!ci) {
        if (!err || !*err) oom(&b);
        goto done;
    }
    tl->str_wake = intern(tl, "wake");
    tl->str_woken = intern(tl, "woken");
    tl->str_cat[TL_CAT_WAIT] = intern(tl, "wait");
    tl->str_cat[TL_CAT_TRANSFER] = intern(tl, "transfer");
    tl->str_cat[TL_CAT_WAKE] = tl->str_wake;
    tl->str_cat[TL_CAT_CRITICAL] = intern(tl, "critical");
    if (!tl->str_wake || !tl->str_woken || !tl->str_cat[1] || !tl->str_cat[2] ||
        !tl->str_cat[TL_CAT_CRITICAL]) {
        oom(&b);
        goto done;
    }
    rc = load_sites(&b) || load_waits(&b, ci) || load_transfers(&b, ci) || load_rings(&b) ||
         load_links(&b) || load_nic(&b) || load_critical(&b) || order_events(&b) ? -1 : 0;
done:
    if (ci) {
        for (int64_t i = 0; i < tl->run.ranks * tl->run.cores_per_rank; i++) {
            free(ci[i].label);
            free(ci[i].core);
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
    free(tl->counter);
    free(tl->site);
    free(tl->ev);
    memset(tl, 0, sizeof *tl);
}

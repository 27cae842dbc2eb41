/*
 * hb_check.c - the happens-before edges, from the engine's events and hooks.
 *
 * Threads are tracks (rank, core, pipe). The scalar unit S of a core ticks
 * its own clock after every transfer it issues and every release, so what
 * it does next is never mistaken for something an earlier release covered.
 * A transfer is an event of its pipe P: P first takes what S knows (by
 * version: only S's own entry when S has joined nothing new since), then
 * ticks; its ranges are checked and recorded at issue, in issue order,
 * which the engine's order guarantees is consistent with happens-before.
 * Its memory effect is published at completion: the words it writes that
 * are used for synchronisation get the clock it had at issue.
 *
 * Releases and acquires here: PipeBarrier and RdmaQuiet join the pipes
 * into S; a scalar store or atomic on a GM word releases S into the word,
 * and a scalar load or a finished GM wait acquires it (the wait observed
 * that write); a transfer reading such words acquires them when it
 * completes. Flags, cross-core flags and barriers are in hb_sync.c.
 */
#include "checker/hb_internal.h"

#include <string.h>

/* ------------------------------------------------------------ tracks (shared with hb_sync.c) */
hb_track *hb_track_of(hb_checker *h, uint32_t rank, uint32_t core, uint32_t pipe) {
    size_t k = ((size_t)rank * (size_t)h->cpr + core) * PIPE_COUNT + pipe;
    if (h->tid_of[k] >= 0) return h->tracks[h->tid_of[k]];
    /* a pipe's scalar unit exists first: pipe snapshots name its entry */
    int32_t s_tid = pipe == PIPE_S ? -1 : (int32_t)hb_track_of(h, rank, core, PIPE_S)->id;
    if (h->n_tracks == h->cap_tracks) {
        h->cap_tracks = h->cap_tracks ? h->cap_tracks * 2 : 256;
        h->tracks = realloc(h->tracks, (size_t)h->cap_tracks * sizeof *h->tracks);
        if (!h->tracks) abort();
    }
    hb_track *t = calloc(1, sizeof *t);
    if (!t) abort();
    t->id = h->n_tracks;
    t->rank = rank;
    t->core = core;
    t->pipe = pipe;
    t->s_joins_seen = UINT64_MAX;
    t->s_tid = s_tid;
    vc_set(&t->vc, t->id, 1);   /* epochs start at 1: 0 means "knows nothing" */
    h->tracks[h->n_tracks] = t;
    h->tid_of[k] = (int32_t)h->n_tracks++;
    return t;
}

hb_track *hb_scalar_of(hb_checker *h, uint32_t rank, uint32_t core) {
    return hb_track_of(h, rank, core, PIPE_S);
}

void hb_tick(hb_track *t) {
    t->vc.c[t->id]++;
    t->mods++;
}

static uint32_t hb_own(const hb_track *t) { return t->vc.c[t->id]; }

/* t acquires s. A full copy t already joined is skipped: clocks only grow. */
void hb_join_snap(hb_track *t, hb_snap *s) {
    if (!s) return;
    hb_snap *full = s->base ? s->base : s;
    int changed = 0, seen = 0;
    for (int i = 0; i < 4; i++) seen |= t->seen[i] == full;
    if (!seen) {
        changed = vc_join(&t->vc, full->c, full->n);
        snap_unref(t->seen[t->seen_next]);
        t->seen[t->seen_next] = snap_ref(full);
        t->seen_next = (t->seen_next + 1) % 4;
    }
    for (uint32_t i = 0; i < s->n_over; i++)
        if (vc_get(&t->vc, s->over_tid[i]) < s->over_clock[i]) {
            vc_set(&t->vc, s->over_tid[i], s->over_clock[i]);
            changed = 1;
        }
    if (changed) {
        t->joins++;
        t->mods++;
    }
}

static void hb_join_track(hb_track *t, const hb_track *from) {
    if (vc_join(&t->vc, from->vc.c, from->vc.n)) {
        t->joins++;
        t->mods++;
    }
}

hb_snap *hb_snapshot(hb_track *t) {
    if (t->snap && t->snap_mods == t->mods) return snap_ref(t->snap);
    snap_unref(t->snap);
    if (!t->base || t->base_joins != t->joins) {
        snap_unref(t->base);
        t->base = snap_new(&t->vc);
        t->base_joins = t->joins;
        t->snap = snap_ref(t->base);
    } else {
        /* since the base only the own entry and the scalar unit's moved */
        uint32_t tid[2] = {t->id, 0}, clock[2] = {hb_own(t), 0}, n = 1;
        if (t->s_tid >= 0) {
            tid[1] = (uint32_t)t->s_tid;
            clock[1] = vc_get(&t->vc, (uint32_t)t->s_tid);
            n = 2;
        }
        t->snap = snap_delta(t->base, n, tid, clock);
    }
    t->snap_mods = t->mods;
    return snap_ref(t->snap);
}

/* What t knew when it issued the access whose own clock was own (and its
 * scalar unit's s_clock): its clock now with those two entries set back.
 * Every other entry can only have grown since, so this is never less than
 * the clock at the issue, and at most hides a race through what t learned
 * from others later. Setting the two back matters: a pipe moves on to its
 * next transfers and its scalar unit to its next stores, and a word first
 * used for synchronisation after its write must not order those (a status
 * written ahead of its row on the same pipe). */
static hb_snap *hb_snapshot_as_issued(const hb_track *t, uint32_t own, uint32_t s_clock) {
    hb_vc v = {0};
    vc_join(&v, t->vc.c, t->vc.n);
    if (own < vc_get(&v, t->id)) vc_set(&v, t->id, own);
    if (t->s_tid >= 0 && s_clock < vc_get(&v, (uint32_t)t->s_tid))
        vc_set(&v, (uint32_t)t->s_tid, s_clock);
    hb_snap *s = snap_new(&v);
    vc_free(&v);
    return s;
}

/* P is about to run something S issued: it happens after all S did so far. */
void hb_pipe_takes_scalar(hb_track *p, const hb_track *s) {
    if (p == s) return;
    if (p->s_joins_seen != s->joins) {
        hb_join_track(p, s);
        p->s_joins_seen = s->joins;
    } else if (vc_get(&p->vc, s->id) < hb_own(s)) {
        vc_set(&p->vc, s->id, hb_own(s));
        p->mods++;
    }
}

hb_core *hb_core_of(hb_checker *h, uint32_t rank, uint32_t core) {
    return &h->cores[(size_t)rank * (size_t)h->cpr + core];
}

/* ------------------------------------------------------------ sites */
void hb_site_of(const hb_checker *h, uint32_t site, const char **file, int *line) {
    engine_site s;
    if (site && engine_site_get(h->e, site, &s)) {
        *file = s.file;
        *line = s.line;
    } else {
        *file = "";
        *line = 0;
    }
}

/* ------------------------------------------------------------ memory */
static int is_local(uint64_t raw) { return (int)(raw >> 63); }

/* The shadow space of an address and the offset inside it; 0 if none. */
static int space_of(hb_checker *h, uint64_t raw, uint32_t rank, uint32_t core, uint32_t *key,
                    uint64_t *off) {
    if (is_local(raw)) {
        uint32_t sp = (uint32_t)((raw >> 56) & 0x7f);
        if (sp < 1 || sp > 5) return 0;
        *key = (uint32_t)h->n_ranks + (uint32_t)(((size_t)rank * (size_t)h->cpr + core) * 6 + sp);
        *off = raw & 0xffffffffULL;
    } else {
        gm_t g = {raw};
        if (gm_rank(g) >= h->n_ranks) return 0;
        *key = (uint32_t)gm_rank(g);
        *off = gm_offset(g);
    }
    return 1;
}

static uint64_t raw_of(const hb_checker *h, uint32_t key, uint64_t off) {
    if (key < (uint32_t)h->n_ranks) return gm_make((int)key, off).a;
    uint32_t sp = (key - (uint32_t)h->n_ranks) % 6;
    return (1ULL << 63) | ((uint64_t)sp << 56) | off;
}

static void mem_access(hb_checker *h, hb_track *t, uint32_t rank, uint32_t core, uint64_t raw,
                   uint64_t len, int write, int atomic, int scalar, uint64_t seq, const char *file,
                   int line) {
    uint32_t key;
    uint64_t off;
    if (!space_of(h, raw, rank, core, &key, &off) || !len) return;
    hb_acc a = {.seq = seq, .file = file, .tid = t->id, .clock = hb_own(t), .line = line,
                .write = (uint8_t)write, .atomic = (uint8_t)atomic, .scalar = (uint8_t)scalar,
                .valid = 1};
    uint32_t s_clock = t->s_tid >= 0 ? vc_get(&t->vc, (uint32_t)t->s_tid) : 0;
    shadow_access(h, key, off, off + len, &a, &t->vc, s_clock);
}

static void hb_side_of(const hb_checker *h, const hb_acc *a, uint64_t addr, uint64_t len, hb_side *s) {
    const hb_track *t = h->tracks[a->tid];
    memset(s, 0, sizeof *s);
    s->rank = (int)t->rank;
    s->core = (int)t->core;
    s->pipe = (int)t->pipe;
    s->file = a->file ? a->file : "";
    s->line = a->line;
    s->seq = a->seq;
    s->addr = addr;
    s->len = len;
    s->write = a->write;
    s->atomic = a->atomic;
    s->scalar = a->scalar;
}

static int words_cover(const hb_checker *h, int rank, uint64_t lo, uint64_t hi);

void hb_race(hb_checker *h, uint32_t key, uint64_t lo, uint64_t hi, const hb_acc *prev,
             const hb_acc *cur) {
    /* A transfer that reads synchronisation words a scalar store updates
     * (a head fetched into a mirror word) polls them, like a scalar load. */
    const hb_acc *rd = prev->write ? cur : prev, *wr = prev->write ? prev : cur;
    if (!rd->write && !rd->scalar && wr->scalar && key < (uint32_t)h->n_ranks &&
        words_cover(h, (int)key, lo, hi))
        return;
    uint64_t raw = raw_of(h, key, lo);
    hb_side a, b;
    hb_side_of(h, prev, raw, hi - lo, &a);
    hb_side_of(h, cur, raw, hi - lo, &b);
    char obj[160];
    hb_describe(h, raw, hi - lo, b.rank, b.core, obj, sizeof obj);
    char what[256];
    snprintf(what, sizeof what, "%s by %s not ordered before %s by %s",
             prev->write ? (prev->atomic ? "atomic add" : "write") : "read",
             engine_pipe_name(a.pipe), cur->write ? (cur->atomic ? "atomic add" : "write") : "read",
             engine_pipe_name(b.pipe));
    report_add(h, HB_RACE, &a, &b, obj, what);
    /* The reader got here through a ring tail stored by the writer's core
     * before this write had landed: the tail was published too early. */
    hb_core *rc = hb_core_of(h, (uint32_t)b.rank, (uint32_t)b.core);
    if (!cur->write && prev->write && rc->tail.valid && rc->tail.store.rank == a.rank &&
        rc->tail.store.core == a.core && rc->tail.store.seq > a.seq) {
        snprintf(what, sizeof what, "ring tail stored before the %s write it covers had landed",
                 engine_pipe_name(a.pipe));
        report_add(h, HB_TAIL_BEFORE_DATA, &a, &rc->tail.store, obj, what);
    }
}

/* ------------------------------------------------------------ words */
static hb_word *word_find(hb_checker *h, int rank, uint64_t off, int add, uint32_t width) {
    hb_words *w = &h->words[rank];
    uint32_t a = 0, b = w->n;
    while (a < b) {
        uint32_t m = (a + b) / 2;
        if (w->v[m].off < off) a = m + 1; else b = m;
    }
    if (a < w->n && w->v[a].off == off) return &w->v[a];
    if (!add) return NULL;
    if (w->n == w->cap) {
        w->cap = w->cap ? w->cap * 2 : 64;
        w->v = realloc(w->v, (size_t)w->cap * sizeof *w->v);
        if (!w->v) abort();
    }
    memmove(&w->v[a + 1], &w->v[a], (size_t)(w->n - a) * sizeof *w->v);
    memset(&w->v[a], 0, sizeof w->v[a]);
    w->v[a].off = off;
    w->v[a].width = width ? width : 4;
    w->n++;
    return &w->v[a];
}

/* The index in w (sorted by offset, words disjoint) of the first word
 * that ends after off: the one holding off, else the next one (w->n when
 * none is left). */
static uint32_t first_word_after(const hb_words *w, uint64_t off) {
    uint32_t a = 0, b = w->n;
    while (a < b) {
        uint32_t m = (a + b) / 2;
        if (w->v[m].off + w->v[m].width <= off) a = m + 1; else b = m;
    }
    return a;
}

/* Does [off, off+len) of rank hold a synchronisation word? */
static int words_overlap(const hb_checker *h, int rank, uint64_t off, uint64_t len) {
    const hb_words *w = &h->words[rank];
    uint32_t a = first_word_after(w, off);
    return a < w->n && w->v[a].off < off + len;
}

static int words_cover(const hb_checker *h, int rank, uint64_t lo, uint64_t hi) {
    const hb_words *w = &h->words[rank];
    uint32_t a = first_word_after(w, lo);
    for (uint64_t at = lo; at < hi; a++) {
        if (a >= w->n || w->v[a].off > at) return 0;
        at = w->v[a].off + w->v[a].width;
    }
    return 1;
}

static void word_release(hb_word *w, hb_snap *s, const hb_side *writer) {
    snap_unref(w->release);
    w->release = snap_ref(s);
    w->writer = *writer;
    w->has_writer = 1;
}

/* A write of [off, off+len) on rank landed: its sync words get its clock. */
static void words_publish(hb_checker *h, int rank, uint64_t off, uint64_t len, hb_snap *s,
                          const hb_side *writer) {
    hb_words *w = &h->words[rank];
    uint32_t a = first_word_after(w, off);
    for (; a < w->n && w->v[a].off < off + len; a++) word_release(&w->v[a], s, writer);
}

/* ------------------------------------------------------------ transfers in flight */
static hb_op *op_slot(hb_checker *h, uint64_t seq) {
    size_t mask = h->ops_cap - 1, i = (size_t)(seq * 0x9E3779B97F4A7C15ULL >> 20) & mask;
    while (h->ops[i].seq && h->ops[i].seq != seq) i = (i + 1) & mask;
    return &h->ops[i];
}

static void op_grow(hb_checker *h) {
    hb_op *old = h->ops;
    size_t old_cap = h->ops_cap;
    h->ops_cap = old_cap ? old_cap * 2 : 1024;
    h->ops = calloc(h->ops_cap, sizeof *h->ops);
    if (!h->ops) abort();
    for (size_t i = 0; i < old_cap; i++)
        if (old[i].seq) *op_slot(h, old[i].seq) = old[i];
    free(old);
}

static void op_remove(hb_checker *h, hb_op *slot) {
    size_t mask = h->ops_cap - 1, i = (size_t)(slot - h->ops);
    memset(slot, 0, sizeof *slot);
    h->ops_n--;
    /* re-insert the rest of the cluster (linear probing deletion) */
    for (size_t j = (i + 1) & mask; h->ops[j].seq; j = (j + 1) & mask) {
        hb_op o = h->ops[j];
        memset(&h->ops[j], 0, sizeof h->ops[j]);
        *op_slot(h, o.seq) = o;
    }
}

static int op_in_flight(hb_checker *h, uint64_t seq) {
    return h->ops_cap && op_slot(h, seq)->seq == seq;
}

static int is_gm_writer(const engine_event *ev) {
    return ev->len && !is_local(ev->addr) && ev->sub != XFER_MTE2 && ev->sub != XFER_MTE1 &&
           ev->sub != XFER_VEC && ev->sub != XFER_CUBE;
}

/* Does the transfer read GM (its source, in aux) that holds sync words? */
static int reads_sync_words(hb_checker *h, const engine_event *ev) {
    if (ev->sub != XFER_MTE2 && ev->sub != XFER_HCCS_GET && ev->sub != XFER_HCCS_PUT &&
        ev->sub != XFER_RDMA_WRITE && ev->sub != XFER_BATCHWRITE)
        return 0;
    gm_t src = {(uint64_t)ev->aux};
    return !is_local(src.a) && gm_rank(src) < h->n_ranks &&
           words_overlap(h, gm_rank(src), gm_offset(src), ev->len);
}

static void on_issue(hb_checker *h, const engine_event *ev) {
    hb_track *s = hb_scalar_of(h, ev->rank, ev->core);
    hb_track *p = hb_track_of(h, ev->rank, ev->core, ev->pipe);
    hb_pipe_takes_scalar(p, s);
    if (p != s) hb_tick(p);
    hb_op op = {.seq = ev->seq, .tid = p->id, .clock = hb_own(p),
                .s_clock = p != s ? vc_get(&p->vc, s->id) : 0};
    int writes = is_gm_writer(ev);
    if (writes)
        op.wants_release = ev->sub == XFER_REMOTE_STORE || ev->sub == XFER_RDMA_ATOMIC ||
                           words_overlap(h, gm_rank((gm_t){ev->addr}), gm_offset((gm_t){ev->addr}),
                                         ev->len);
    op.acquires = reads_sync_words(h, ev);
    if (writes || op.acquires) {
        if ((h->ops_n + 1) * 2 > h->ops_cap) op_grow(h);
        *op_slot(h, ev->seq) = op;
        h->ops_n++;
    }
    h->cur_op = op;
    hb_tick(s);
}

/* The read of a transfer observed its sync words as they are when it
 * completes: the pipe, and every flag set behind it on that pipe, learn
 * their releases then (a flag fires only once the transfer is done). */
static void op_acquire(hb_checker *h, const hb_op *op, const engine_event *ev) {
    gm_t src = {(uint64_t)ev->aux};
    hb_words *w = &h->words[gm_rank(src)];
    uint64_t off = gm_offset(src);
    uint32_t a = first_word_after(w, off);
    hb_vc got = {0};
    for (; a < w->n && w->v[a].off < off + ev->len; a++)
        vc_join_snap(&got, w->v[a].release);
    if (got.n) {
        hb_track *t = h->tracks[op->tid];
        if (vc_join(&t->vc, got.c, got.n)) {
            t->joins++;
            t->mods++;
        }
        hb_flags_learn(h, ev->rank, ev->core, ev->pipe, op->seq, &got);
    }
    vc_free(&got);
}

static void on_done(hb_checker *h, const engine_event *ev) {
    if (!h->ops_cap) return;
    hb_op *slot = op_slot(h, ev->link);
    if (!slot->seq) return;
    if (slot->acquires) op_acquire(h, slot, ev);
    gm_t dst = {ev->addr};
    if (is_gm_writer(ev) && words_overlap(h, gm_rank(dst), gm_offset(dst), ev->len)) {
        /* A word first used for synchronisation after this was issued gets
         * the pipe's clock as it was at the issue (hb_snapshot_as_issued),
         * and so does a transfer that also acquired on its way (a get of a
         * head into a mirror word, which knows what it read). */
        hb_snap *s = slot->release && !slot->acquires
                         ? snap_ref(slot->release)
                         : hb_snapshot_as_issued(h->tracks[slot->tid], slot->clock,
                                                 slot->s_clock);
        hb_side w = {.rank = (int)ev->rank, .core = (int)ev->core, .pipe = ev->pipe,
                     .seq = ev->link, .addr = ev->addr, .len = ev->len, .write = 1};
        hb_site_of(h, ev->site, &w.file, &w.line);
        words_publish(h, gm_rank(dst), gm_offset(dst), ev->len, s, &w);
        snap_unref(s);
    }
    snap_unref(slot->release);
    op_remove(h, slot);
}

/* ------------------------------------------------------------ scalar words */
static void scalar_side(const hb_checker *h, const engine_event *ev, hb_side *s) {
    memset(s, 0, sizeof *s);
    s->rank = (int)ev->rank;
    s->core = (int)ev->core;
    s->pipe = PIPE_S;
    s->seq = ev->seq;
    s->addr = ev->addr;
    s->len = ev->len;
    s->scalar = 1;
    hb_site_of(h, ev->site, &s->file, &s->line);
}

static void on_word_read(hb_checker *h, const engine_event *ev) {
    gm_t p = {ev->addr};
    if (gm_rank(p) >= h->n_ranks) return;
    hb_track *s = hb_scalar_of(h, ev->rank, ev->core);
    hb_word *w = word_find(h, gm_rank(p), gm_offset(p), 1, (uint32_t)ev->len);
    if (w->release) {
        hb_join_snap(s, w->release);
    } else {
        /* First use of a word as synchronisation: its last write landed
         * before anyone knew to keep its clock. If that transfer is done,
         * its track's clock as it was at the write stands in (its own and
         * its scalar unit's entries exact, the rest no less); if it is
         * still in flight, the read races it. */
        uint32_t s_clock = 0;
        const hb_acc *lw = shadow_last_write(h, (uint32_t)gm_rank(p), gm_offset(p), &s_clock);
        if (lw && !op_in_flight(h, lw->seq)) {
            hb_snap *then = hb_snapshot_as_issued(h->tracks[lw->tid], lw->clock, s_clock);
            hb_join_snap(s, then);
            snap_unref(then);
        }
    }
    const engine_object *o = ev->object ? engine_object_get(h->e, ev->object) : NULL;
    if (o && o->kind == OBJ_RING_TAIL && w->has_writer) {
        hb_core *c = hb_core_of(h, ev->rank, ev->core);
        c->tail.valid = 1;
        c->tail.store = w->writer;
    }
    const char *file;
    int line;
    hb_site_of(h, ev->site, &file, &line);
    mem_access(h, s, ev->rank, ev->core, ev->addr, ev->len, 0, 0, 1, ev->seq, file, line);
}

static void on_word_write(hb_checker *h, const engine_event *ev, int atomic) {
    gm_t p = {ev->addr};
    if (gm_rank(p) >= h->n_ranks) return;
    hb_track *s = hb_scalar_of(h, ev->rank, ev->core);
    hb_word *w = word_find(h, gm_rank(p), gm_offset(p), 1, (uint32_t)ev->len);
    if (atomic) hb_join_snap(s, w->release);
    const char *file;
    int line;
    hb_site_of(h, ev->site, &file, &line);
    mem_access(h, s, ev->rank, ev->core, ev->addr, ev->len, 1, atomic, 1, ev->seq, file, line);
    hb_side side;
    scalar_side(h, ev, &side);
    side.write = 1;
    side.atomic = atomic;
    hb_snap *snap = hb_snapshot(s);
    word_release(w, snap, &side);
    snap_unref(snap);
    hb_tick(s);
}

/* ------------------------------------------------------------ end of run */
static void on_blocked(hb_checker *h, const engine_event *ev) {
    hb_core *c = hb_core_of(h, ev->rank, ev->core);
    hb_side w = {.rank = (int)ev->rank, .core = (int)ev->core, .pipe = ev->pipe, .seq = ev->link,
                 .addr = ev->addr, .len = 0, .scalar = 1};
    hb_site_of(h, ev->site, &w.file, &w.line);
    char what[256], obj[160] = "";
    if (c->last_wait_kind == EV_GM_WAIT_BEGIN && ev->addr) {
        gm_t p = {ev->addr};
        const engine_object *o = ev->object ? engine_object_get(h->e, ev->object) : NULL;
        if (o) snprintf(obj, sizeof obj, "%s", engine_string(h->e, o->name));
        else hb_describe(h, ev->addr, 8, (int)ev->rank, (int)ev->core, obj, sizeof obj);
        hb_word *word = gm_rank(p) < h->n_ranks ? word_find(h, gm_rank(p), gm_offset(p), 0, 0) : NULL;
        snprintf(what, sizeof what, "wait for %s %s %lld never satisfied (it holds %lld)%s",
                 obj[0] ? obj : "a GM word", engine_cond_name(ev->sub), (long long)ev->aux,
                 (long long)ev->value, word && word->has_writer ? "; its last write is the other side"
                                                                 : "; nothing ever wrote it");
        report_add(h, HB_WAIT_NEVER_SATISFIED, word && word->has_writer ? &word->writer : &w,
                   word && word->has_writer ? &w : NULL, obj, what);
    } else if (c->last_wait_kind == EV_XCORE_WAIT_BEGIN) {
        snprintf(what, sizeof what, "CrossCoreWaitFlag(%d) never set by the other cores of its group",
                 ev->sub);
        report_add(h, HB_WAIT_NEVER_SATISFIED, &w, NULL, "", what);
    }
}

/* ------------------------------------------------------------ dispatch */
static void on_event(void *ctx, const engine_event *ev) {
    hb_checker *h = ctx;
    if (ev->kind != EV_RUN_END && (ev->rank >= (uint32_t)h->n_ranks || ev->core >= (uint32_t)h->cpr))
        return;
    switch (ev->kind) {
    case EV_KERNEL_BEGIN:
        hb_scalar_of(h, ev->rank, ev->core);
        break;
    case EV_XFER_ISSUE: on_issue(h, ev); break;
    case EV_XFER_DONE: on_done(h, ev); break;
    case EV_FLAG_SET: hb_on_flag_set(h, ev); break;
    case EV_XCORE_SET: hb_on_xcore_set(h, ev); break;
    case EV_GM_WAIT_BEGIN: {
        gm_t p = {ev->addr};
        if (gm_rank(p) < h->n_ranks) word_find(h, gm_rank(p), gm_offset(p), 1, (uint32_t)ev->len);
        hb_core_of(h, ev->rank, ev->core)->last_wait_kind = ev->kind;
        break;
    }
    case EV_XCORE_WAIT_BEGIN:
        hb_core_of(h, ev->rank, ev->core)->last_wait_kind = ev->kind;
        break;
    case EV_BARRIER_BEGIN:
        hb_core_of(h, ev->rank, ev->core)->last_wait_kind = ev->kind;
        hb_on_barrier_begin(h, ev);
        break;
    case EV_BARRIER_END: hb_on_barrier_end(h, ev); break;
    case EV_GM_LOAD:
    case EV_GM_WAIT_END: on_word_read(h, ev); break;
    case EV_GM_STORE: on_word_write(h, ev, 0); break;
    case EV_RING_HEAD:
    case EV_RING_TAIL: {
        gm_t p = {ev->addr};
        /* a remote one lands as a REMOTE_STORE transfer, which is its write */
        if (gm_rank(p) == (int)ev->rank) on_word_write(h, ev, 0);
        break;
    }
    case EV_ATOMIC: {
        gm_t p = {ev->addr};
        (void)p;
        /* A same-node ring atomic also lands as a REMOTE_STORE transfer:
         * releasing here as well is early, which can only hide a race. */
        on_word_write(h, ev, 1);
        break;
    }
    case EV_BLOCKED: on_blocked(h, ev); break;
    default: break;
    }
}

static void on_hook(void *ctx, const engine_hook *hk) {
    hb_checker *h = ctx;
    if (hk->rank >= (uint32_t)h->n_ranks || hk->core >= (uint32_t)h->cpr) return;
    switch (hk->kind) {
    case HOOK_ACCESS: {
        const char *file = hk->file;
        int line = hk->line;
        if (!file) hb_site_of(h, hk->site, &file, &line);
        if (hk->file) {
            /* UB scalar access by the scalar unit itself (transfers give a site id) */
            hb_track *s = hb_scalar_of(h, hk->rank, hk->core);
            mem_access(h, s, hk->rank, hk->core, hk->addr, hk->len, hk->write, 0, 0, hk->seq, file,
                   line);
            break;
        }
        if (hk->seq != h->cur_op.seq) break;
        hb_track *t = h->tracks[h->cur_op.tid];
        if (hk->write && h->cur_op.wants_release) {
            hb_op *slot = op_slot(h, h->cur_op.seq);
            if (slot->seq == h->cur_op.seq && !slot->release) slot->release = hb_snapshot(t);
        }
        /* A remote store or remote atomic is a word write: synchronisation,
         * like a local one, and polled by loads that may see either value. */
        int scalar = hk->pipe == PIPE_S || (hk->atomic && hk->len <= 8);
        mem_access(h, t, hk->rank, hk->core, hk->addr, hk->len, hk->write, hk->atomic, scalar,
               hk->seq, file, line);
        break;
    }
    case HOOK_FLAG_WAIT: hb_on_flag_wait(h, hk); break;
    case HOOK_PIPE_BARRIER: {
        hb_track *s = hb_scalar_of(h, hk->rank, hk->core);
        for (uint32_t p = 0; p < PIPE_COUNT; p++) {
            size_t k = ((size_t)hk->rank * (size_t)h->cpr + hk->core) * PIPE_COUNT + p;
            if (p != PIPE_S && h->tid_of[k] >= 0) hb_join_track(s, h->tracks[h->tid_of[k]]);
        }
        break;
    }
    case HOOK_RDMA_QUIET: {
        size_t k = ((size_t)hk->rank * (size_t)h->cpr + hk->core) * PIPE_COUNT + PIPE_NIC;
        if (h->tid_of[k] >= 0) hb_join_track(hb_scalar_of(h, hk->rank, hk->core), h->tracks[h->tid_of[k]]);
        break;
    }
    case HOOK_XCORE_POST:
        if (h->xcore_pending && h->xcore_pending_seq == hk->seq && hk->len < (uint64_t)h->cpr &&
            hk->sub >= 0 && hk->sub < HB_XCORE_FLAGS)
            hb_xfifo_push(&hb_core_of(h, hk->rank, (uint32_t)hk->len)->xcore[hk->sub],
                       snap_ref(h->xcore_pending));
        break;
    case HOOK_XCORE_WAIT: {
        if (hk->sub < 0 || hk->sub >= HB_XCORE_FLAGS) break;
        hb_track *s = hb_scalar_of(h, hk->rank, hk->core);
        hb_xfifo *q = &hb_core_of(h, hk->rank, hk->core)->xcore[hk->sub];
        for (uint64_t i = 0; i < hk->len; i++) {
            hb_snap *x = hb_xfifo_pop(q);
            hb_join_snap(s, x);
            snap_unref(x);
        }
        break;
    }
    case HOOK_KERNEL_RETURN:
        hb_core_of(h, hk->rank, hk->core)->returned = 1;
        hb_flags_left(h, hk->rank, hk->core);
        break;
    default: break;
    }
}

static void on_object(void *ctx, const engine_object *o) {
    hb_checker *h = ctx;
    if (o->kind == OBJ_WORD || o->kind == OBJ_FLAG || o->kind == OBJ_RING_HEAD ||
        o->kind == OBJ_RING_TAIL) {
        hb_word *w = word_find(h, gm_rank(o->addr), gm_offset(o->addr), 1, o->width);
        w->object = o->id;
    }
}

/* ------------------------------------------------------------ lifetime */
int hb_create(engine *e, const engine_observer *inner, hb_checker **out, char *err,
              size_t errlen) {
    hb_checker *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "--check races: out of memory");
        return -1;
    }
    h->e = e;
    if (inner) h->tee.inner = *inner;
    h->tee.also = (engine_observer){.ctx = h, .on_object = on_object, .on_event = on_event,
                                    .on_hook = on_hook};
    h->n_ranks = engine_num_ranks(e);
    h->cpr = engine_cores_per_rank(e);
    h->n_aic = engine_num_aic(e);
    size_t cores = (size_t)h->n_ranks * (size_t)h->cpr;
    h->tid_of = malloc(cores * PIPE_COUNT * sizeof *h->tid_of);
    h->words = calloc((size_t)h->n_ranks, sizeof *h->words);
    h->cores = calloc(cores, sizeof *h->cores);
    h->barriers = calloc(2 + (size_t)h->n_ranks * 2, sizeof *h->barriers);
    if (!h->tid_of || !h->words || !h->cores || !h->barriers) {
        hb_destroy(h);
        snprintf(err, errlen, "--check races: out of memory for %d ranks", engine_num_ranks(e));
        return -1;
    }
    memset(h->tid_of, 0xff, cores * PIPE_COUNT * sizeof *h->tid_of);
    /* Words named before the run (rings, flags) are synchronisation words. */
    for (uint32_t id = 1; id <= engine_object_count(e); id++) {
        const engine_object *o = engine_object_get(e, id);
        if (o && (o->kind == OBJ_WORD || o->kind == OBJ_FLAG || o->kind == OBJ_RING_HEAD ||
                  o->kind == OBJ_RING_TAIL))
            word_find(h, gm_rank(o->addr), gm_offset(o->addr), 1, o->width)->object = o->id;
    }
    *out = h;
    return 0;
}

engine_observer hb_observer(hb_checker *h) { return engine_tee_observer(&h->tee); }

void hb_finish(hb_checker *h, const engine_result *res) {
    (void)res;
    snap_unref(h->xcore_pending);
    h->xcore_pending = NULL;
}

uint64_t hb_races(const hb_checker *h) { return h->rep.races; }
uint64_t hb_sync_errors(const hb_checker *h) { return h->rep.sync_errors; }
size_t hb_report_count(const hb_checker *h) { return h->rep.n; }
const hb_report *hb_report_get(const hb_checker *h, size_t i) {
    return i < h->rep.n ? &h->rep.v[i] : NULL;
}

void hb_destroy(hb_checker *h) {
    if (!h) return;
    for (uint32_t i = 0; i < h->n_tracks; i++) {
        vc_free(&h->tracks[i]->vc);
        snap_unref(h->tracks[i]->snap);
        snap_unref(h->tracks[i]->base);
        for (int k = 0; k < 4; k++) snap_unref(h->tracks[i]->seen[k]);
        free(h->tracks[i]);
    }
    free(h->tracks);
    shadow_free(h);
    if (h->words)
        for (int r = 0; r < h->n_ranks; r++) {
            for (uint32_t i = 0; i < h->words[r].n; i++) snap_unref(h->words[r].v[i].release);
            free(h->words[r].v);
        }
    free(h->words);
    if (h->cores)
        for (size_t i = 0; i < (size_t)h->n_ranks * (size_t)h->cpr; i++) {
            hb_core *c = &h->cores[i];
            if (c->flags)
                for (size_t k = 0; k < (size_t)HB_HARD_EVENTS * HB_FLAG_IDS; k++)
                    for (uint8_t j = 0; j < c->flags[k].count; j++)
                        snap_unref(c->flags[k].e[(c->flags[k].head + j) % HB_FLAG_DEPTH].snap);
            free(c->flags);
            for (int x = 0; x < HB_XCORE_FLAGS; x++) {
                hb_snap *s;
                while ((s = hb_xfifo_pop(&c->xcore[x]))) snap_unref(s);
                free(c->xcore[x].v);
            }
        }
    free(h->cores);
    if (h->barriers)
        for (int i = 0; i < 2 + h->n_ranks * 2; i++) {
            vc_free(&h->barriers[i].acc);
            snap_unref(h->barriers[i].released[0]);
            snap_unref(h->barriers[i].released[1]);
        }
    free(h->barriers);
    for (size_t i = 0; i < h->ops_cap; i++) snap_unref(h->ops[i].release);
    free(h->ops);
    snap_unref(h->xcore_pending);
    free(h->tid_of);
    reports_free(&h->rep);
    free(h);
}

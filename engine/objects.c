/*
 * objects.c - named GM words, rings, and the watch mechanism behind
 * blocking waits.
 *
 * A spin-wait in the seeds ("while (GetValue(head) < x) ;") becomes one
 * blocked core in a per-rank watcher list. Every write to GM (scalar store,
 * atomic, transfer completion, remote landing) calls eng_gm_written, which
 * records the last writer of any named word it touches and wakes the
 * watchers whose condition now holds. So a stall costs two events (begin,
 * end) and names its waker, instead of millions of polls.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int64_t eng_read_word(const uint8_t *p, int width) {
    if (width == 4) { int32_t v; memcpy(&v, p, 4); return v; }
    if (width == 2) { int16_t v; memcpy(&v, p, 2); return v; }
    if (width == 1) return (int8_t)p[0];
    int64_t v; memcpy(&v, p, 8); return v;
}

void eng_write_word(uint8_t *p, int width, int64_t v) {
    if (width == 4) { int32_t w = (int32_t)v; memcpy(p, &w, 4); }
    else if (width == 2) { int16_t w = (int16_t)v; memcpy(p, &w, 2); }
    else if (width == 1) p[0] = (uint8_t)v;
    else memcpy(p, &v, 8);
}

int eng_cond_holds(int cond, int64_t value, int64_t expected) {
    switch (cond) {
    case COND_EQ: return value == expected;
    case COND_NE: return value != expected;
    case COND_GE: return value >= expected;
    case COND_GT: return value > expected;
    case COND_LE: return value <= expected;
    case COND_LT: return value < expected;
    default: return 0;
    }
}

/* ------------------------------------------------------------ objects */
static uint32_t new_object_quiet(engine *e, const engine_object *o);

static uint32_t new_object(engine *e, const engine_object *o) {
    uint32_t id = new_object_quiet(e, o);
    if (e->obs.on_object) e->obs.on_object(e->obs.ctx, &e->objects[id - 1]);
    return id;
}

static uint32_t new_object_quiet(engine *e, const engine_object *o) {
    if (e->n_objects == e->cap_objects) {
        uint32_t cap = e->cap_objects ? e->cap_objects * 2 : 64;
        e->objects = realloc(e->objects, cap * sizeof *e->objects);
        e->obj_last_seq = realloc(e->obj_last_seq, cap * sizeof *e->obj_last_seq);
        e->obj_last_track = realloc(e->obj_last_track, cap * sizeof *e->obj_last_track);
        e->obj_last_time = realloc(e->obj_last_time, cap * sizeof *e->obj_last_time);
        if (!e->objects || !e->obj_last_seq || !e->obj_last_track || !e->obj_last_time) abort();
        e->cap_objects = cap;
    }
    uint32_t id = ++e->n_objects;
    e->objects[id - 1] = *o;
    e->objects[id - 1].id = id;
    e->obj_last_seq[id - 1] = 0;
    e->obj_last_track[id - 1] = 0;
    e->obj_last_time[id - 1] = 0;
    return id;
}

static void add_word(engine *e, gm_t addr, uint32_t width, uint32_t object) {
    rank_state *rs = &e->ranks[gm_rank(addr)];
    if (rs->n_words == rs->cap_words) {
        rs->cap_words = rs->cap_words ? rs->cap_words * 2 : 32;
        rs->words = realloc(rs->words, (size_t)rs->cap_words * sizeof *rs->words);
        if (!rs->words) abort();
    }
    uint64_t off = gm_offset(addr);
    int pos = rs->n_words;
    while (pos > 0 && rs->words[pos - 1].off > off) pos--;
    memmove(&rs->words[pos + 1], &rs->words[pos], (size_t)(rs->n_words - pos) * sizeof *rs->words);
    rs->words[pos] = (named_word){off, width, object};
    rs->n_words++;
    int in_alloc = 0;
    for (int i = 0; i < rs->n_allocs; i++) {
        gm_alloc *a = &rs->allocs[i];
        if (off < a->off + a->size && off + width > a->off) { a->n_words++; in_alloc = 1; }
    }
    if (!in_alloc) rs->stray_words++;
}

/* Can [off, off+len) of rank rs hold a named word? Most writes land in
 * data allocations that hold none (rows, rings' slots), which the
 * allocation's count tells without searching the rank's words. */
static int may_hold_words(engine *e, int rank, uint64_t off, uint64_t len) {
    const rank_state *rs = &e->ranks[rank];
    if (!rs->n_words) return 0;
    if (rs->stray_words) return 1;
    const gm_alloc *a = eng_gm_find(e, gm_make(rank, off));
    if (!a || off - a->off >= a->size || len > a->size - (off - a->off)) return 1;
    return a->n_words != 0;
}

uint32_t eng_word_object(engine *e, gm_t p) {
    int rank = gm_rank(p);
    if (rank < 0 || rank >= e->n_ranks) return 0;
    rank_state *rs = &e->ranks[rank];
    uint64_t off = gm_offset(p);
    if (!may_hold_words(e, rank, off, 1)) return 0;
    int lo = 0, hi = rs->n_words - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (rs->words[mid].off == off) return rs->words[mid].object;
        if (rs->words[mid].off < off) lo = mid + 1; else hi = mid - 1;
    }
    return 0;
}

uint32_t engine_name_word(engine *e, gm_t addr, uint32_t width, engine_obj_kind kind,
                          const char *name) {
    uint32_t existing = eng_word_object(e, addr);
    if (existing) return existing;
    engine_object o = {0};
    o.kind = kind;
    o.name = eng_intern(e, name);
    o.rank = gm_rank(addr);
    o.addr = addr;
    o.width = width;
    o.producer_rank = o.consumer_rank = -1;
    uint32_t id = new_object(e, &o);
    add_word(e, addr, width, id);
    return id;
}

void dev_name_word(gm_t p, int width, const char *name) {
    core *c = eng_current("NameWord");
    engine_name_word(c->e, p, (uint32_t)width, OBJ_WORD, name);
}

/* The one name table of the ring kinds: what the trace calls each level. */
static const char *const ring_kind_names[] = {
    [RING_NONE] = "", [RING_LOCAL] = "local", [RING_HCCS] = "hccs", [RING_RDMA] = "rdma",
};
#define N_RING_KINDS (sizeof ring_kind_names / sizeof ring_kind_names[0])

const char *engine_ring_kind_name(engine_ring_kind kind) {
    return (size_t)kind < N_RING_KINDS ? ring_kind_names[kind] : "";
}

engine_ring_kind engine_ring_kind_from_name(const char *name) {
    for (size_t k = 1; name && k < N_RING_KINDS; k++)
        if (strcmp(name, ring_kind_names[k]) == 0) return (engine_ring_kind)k;
    return RING_NONE;
}

uint32_t engine_declare_ring(engine *e, const char *name, engine_ring_kind kind, gm_t head,
                             gm_t tail, uint32_t width, uint64_t capacity,
                             int producer_rank, int consumer_rank) {
    engine_object ring = {0};
    ring.kind = OBJ_RING;
    ring.name = eng_intern(e, name);
    ring.rank = consumer_rank;
    ring.addr = tail;
    ring.width = width;
    ring.size = capacity;
    ring.producer_rank = producer_rank;
    ring.consumer_rank = consumer_rank;
    ring.ring_kind = kind;
    ring.role = eng_intern(e, engine_ring_kind_name(kind));
    /* announced once its head and tail ids are known */
    uint32_t rid = new_object_quiet(e, &ring);
    char buf[512];
    snprintf(buf, sizeof buf, "%s.head", name);
    engine_object h = {0};
    h.kind = OBJ_RING_HEAD; h.name = eng_intern(e, buf); h.rank = gm_rank(head); h.addr = head;
    h.width = width; h.size = capacity; h.ring = rid; h.role = ring.role;
    h.ring_kind = kind;
    h.producer_rank = producer_rank; h.consumer_rank = consumer_rank;
    uint32_t hid = new_object(e, &h);
    add_word(e, head, width, hid);
    snprintf(buf, sizeof buf, "%s.tail", name);
    engine_object t = h;
    t.kind = OBJ_RING_TAIL; t.name = eng_intern(e, buf); t.rank = gm_rank(tail); t.addr = tail;
    uint32_t tid = new_object(e, &t);
    add_word(e, tail, width, tid);
    e->objects[rid - 1].head = hid;
    e->objects[rid - 1].tail = tid;
    if (e->obs.on_object) e->obs.on_object(e->obs.ctx, &e->objects[rid - 1]);
    return rid;
}

const engine_object *engine_object_get(const engine *e, uint32_t id) {
    if (id == 0 || id > e->n_objects) return NULL;
    return &e->objects[id - 1];
}

uint32_t engine_object_count(const engine *e) { return e->n_objects; }

int64_t engine_word_value(engine *e, uint32_t id) {
    const engine_object *o = engine_object_get(e, id);
    if (!o || !o->width) return 0;
    uint8_t *p = eng_gm_ptr(e, o->addr, o->width);
    return p ? eng_read_word(p, (int)o->width) : 0;
}

/* ------------------------------------------------------------ watchers */
void eng_watch(engine *e, core *c) {
    rank_state *rs = &e->ranks[gm_rank(c->wait_addr)];
    if (rs->n_watchers == rs->cap_watchers) {
        rs->cap_watchers = rs->cap_watchers ? rs->cap_watchers * 2 : 16;
        rs->watchers = realloc(rs->watchers, (size_t)rs->cap_watchers * sizeof *rs->watchers);
        if (!rs->watchers) abort();
    }
    uint64_t off = gm_offset(c->wait_addr);
    int pos = rs->n_watchers;
    while (pos > 0 && rs->watchers[pos - 1].off > off) pos--;
    memmove(&rs->watchers[pos + 1], &rs->watchers[pos],
            (size_t)(rs->n_watchers - pos) * sizeof *rs->watchers);
    rs->watchers[pos] = (watcher){off, (uint32_t)c->wait_width, c};
    rs->n_watchers++;
}

/* Index of the first watcher whose word may end after off (widths are at
 * most 8 bytes). */
static int first_watcher(const rank_state *rs, uint64_t off) {
    uint64_t from = off > 8 ? off - 8 : 0;
    int lo = 0, hi = rs->n_watchers;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (rs->watchers[mid].off < from) lo = mid + 1; else hi = mid;
    }
    return lo;
}

void eng_gm_written(engine *e, int rank, uint64_t off, uint64_t len, uint64_t seq, uint32_t track1,
                    uint64_t time) {
    rank_state *rs = &e->ranks[rank];
    if (may_hold_words(e, rank, off, len)) {
        /* first named word ending after off */
        int lo = 0, hi = rs->n_words - 1, first = rs->n_words;
        while (lo <= hi) {
            int mid = (lo + hi) / 2;
            if (rs->words[mid].off + rs->words[mid].width > off) { first = mid; hi = mid - 1; }
            else lo = mid + 1;
        }
        for (int i = first; i < rs->n_words && rs->words[i].off < off + len; i++) {
            uint32_t id = rs->words[i].object;
            e->obj_last_seq[id - 1] = seq;
            e->obj_last_track[id - 1] = track1;
            e->obj_last_time[id - 1] = time;
        }
    }
    /* Which watchers wake is what matters, not in which order: each wake
     * queues its core under that core's own key. */
    for (int i = first_watcher(rs, off); i < rs->n_watchers && rs->watchers[i].off < off + len;) {
        watcher *w = &rs->watchers[i];
        if (w->off + w->width > off) {
            core *c = w->core;
            uint8_t *p = eng_gm_ptr(e, c->wait_addr, (uint64_t)c->wait_width);
            int64_t v = eng_read_word(p, c->wait_width);
            if (eng_cond_holds(c->wait_cond, v, c->wait_expected)) {
                memmove(&rs->watchers[i], &rs->watchers[i + 1],
                        (size_t)(rs->n_watchers - i - 1) * sizeof *rs->watchers);
                rs->n_watchers--;
                /* A poller notices the new value one read later. */
                uint64_t seen = time + (c->wait_remote ? e->rate.hccs_latency_ps : e->rate.gm_read_ps);
                eng_wake(e, c, seen, v, seq, track1);
                continue;
            }
        }
        i++;
    }
}

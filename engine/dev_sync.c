/*
 * dev_sync.c - the device API's scalar side: identity, roles and notes, GM
 * GetValue/SetValue and atomics, the blocking GM wait, cross-core flags,
 * barriers, UB scalar access and the named ring stores.
 *
 * Scalar GM access to a peer in the same node is a round trip over HCCS
 * (loads, fetching atomics) or a posted write that lands one latency later
 * (stores). A peer in another node is only reachable by RDMA (dev_comm.c).
 */
#include "internal.h"

#include <string.h>

/* ------------------------------------------------------------ identity */
int dev_block_idx(void) { return eng_current("GetBlockIdx")->block_idx; }
int dev_block_num(void) { return eng_current("GetBlockNum")->block_num; }
int dev_sub_block_idx(void) { return eng_current("GetSubBlockIdx")->sub_idx; }
int dev_sub_block_num(void) { return eng_current("GetSubBlockNum")->sub_num; }
int dev_rank(void) { return eng_current("GetRank")->rank; }
int dev_rank_size(void) { return eng_current("GetRankSize")->e->n_ranks; }
int dev_is_aic(void) { return eng_current("IsAic")->is_aic; }

void dev_set_role(const char *name, dev_site s) {
    core *c = eng_current("SetRole");
    engine *e = c->e;
    eng_sync(c);
    eng_role_enter(c, eng_intern(e, name));
    engine_event ev = EV_INIT(c, EV_ROLE, PIPE_S);
    ev.time = c->now;
    ev.value = c->role;
    ev.site = eng_site(e, s);
    c->last_seq = eng_emit(e, &ev);
}

void dev_note(const char *key, int64_t value, dev_site s) {
    core *c = eng_current("CoreNote");
    engine *e = c->e;
    eng_sync(c);
    uint32_t k = eng_intern(e, key);
    int i;
    for (i = 0; i < c->n_notes && c->note_key[i] != k; i++) {}
    if (i == c->n_notes) {
        if (c->n_notes == NOTES_MAX) eng_fault(c, s, "CoreNote: more than %d distinct keys", NOTES_MAX);
        c->n_notes++;
        c->note_key[i] = k;
    }
    c->note_val[i] = value;
    engine_event ev = EV_INIT(c, EV_NOTE, PIPE_S);
    ev.time = c->now;
    ev.aux = k;
    ev.value = value;
    ev.site = eng_site(e, s);
    c->last_seq = eng_emit(e, &ev);
}

void dev_scalar_cycles(uint64_t n, dev_site s) {
    core *c = eng_current("ScalarCycles");
    (void)s;
    eng_advance(c, (uint64_t)((double)n * c->e->rate.ps_per_cycle));
}

/* ------------------------------------------------------------ GM scalar */
static void check_word(core *c, gm_t p, int width, dev_site s, const char *api) {
    if (width != 1 && width != 2 && width != 4 && width != 8)
        eng_fault(c, s, "%s: width %d (1, 2, 4 or 8 bytes)", api, width);
    if (gm_offset(p) % (uint64_t)width)
        eng_fault(c, s, "%s: GM address 0x%llx is not %d-byte aligned", api,
                  (unsigned long long)gm_offset(p), width);
    eng_gm_check(c, p, (uint64_t)width, s, api);
    if (gm_rank(p) != c->rank && !eng_same_node(c->e, gm_rank(p), c->rank))
        eng_fault(c, s, "%s: GM of rank %d is in another node; only RDMA reaches it", api, gm_rank(p));
}

/* The core issuing a scalar access (api, for faults) of the GM word at p,
 * its issue cost paid and the word checked. */
static core *gm_word_access(const char *api, gm_t p, int width, dev_site s) {
    core *c = eng_current(api);
    eng_advance(c, c->e->rate.scalar_ps);
    check_word(c, p, width, s, api);
    return c;
}

/* The way of a load's or an atomic's request to the word at p: one HCCS
 * latency to a peer's, then the scheduler caught up to the core's time.
 * Returns 1 when the word is a peer's (the reply takes as long), else 0. */
static int reach_word(core *c, gm_t p) {
    int remote = gm_rank(p) != c->rank;
    if (remote) eng_advance(c, c->e->rate.hccs_latency_ps);
    eng_sync(c);
    return remote;
}

/* One scalar access of a GM word as an event on the core's scalar track. */
static uint64_t emit_word(core *c, int kind, gm_t p, int width, int64_t value, uint32_t object,
                          uint32_t site) {
    engine_event ev = EV_INIT(c, kind, PIPE_S);
    ev.time = c->now;
    ev.addr = p.a;
    ev.len = (uint64_t)width;
    ev.value = value;
    ev.peer = (uint32_t)gm_rank(p);
    ev.object = object ? object : eng_word_object(c->e, p);
    ev.site = site;
    return c->last_seq = eng_emit(c->e, &ev);
}

static int64_t gm_wait(core *c, gm_t p, int width, int cond, int64_t v, uint32_t object,
                       dev_site s);

/* A poll loop ("while (t.GetValue(0) == x) ;", Ascend C's way to wait on a
 * GM word) is seen at its second read that finds the word unchanged, from
 * the same source line with no other device call between (a cache
 * invalidate or scalar cycles aside): only a loop reaches one line twice
 * so, and only the word can end it. From there the core waits until the
 * word changes, as one stall that names the word and its writer, instead
 * of polling; it sees the change when the write lands, where the chip's
 * next poll would (at most one poll later). A loop that gives up after a
 * count of reads, without reading the clock, waits forever here. */
int64_t dev_gm_load(gm_t p, int width, dev_site s) {
    core *c = gm_word_access("GetValue", p, width, s);
    engine *e = c->e;
    int64_t v;
    if (c->poll_calls + 1 == c->calls && c->poll_addr == p.a && c->poll_width == width &&
        c->poll_line == s.line && c->poll_file == s.file) {
        v = gm_wait(c, p, width, COND_NE, c->poll_value, 0, s);
    } else {
        int remote = reach_word(c, p);
        v = eng_read_word(eng_gm_ptr(e, p, (uint64_t)width), width);
        emit_word(c, EV_GM_LOAD, p, width, v, 0, eng_site(e, s));
        eng_advance(c, remote ? e->rate.hccs_latency_ps : e->rate.gm_read_ps);
    }
    c->poll_calls = c->calls;
    c->poll_addr = p.a;
    c->poll_width = width;
    c->poll_line = s.line;
    c->poll_file = s.file;
    c->poll_value = v;
    return v;
}

/* A posted store to a peer's GM: lands one HCCS latency later. */
static void remote_store(core *c, gm_t p, int width, int64_t v, int op, int xkind, dev_site s) {
    engine *e = c->e;
    xfer *x = eng_xfer_new(e);
    x->op = op;
    x->kind = xkind;
    x->pipe = PIPE_S;
    x->dst = eng_gm_at(e, p, (uint64_t)width, &x->dseg);
    x->dst_raw = p.a;
    x->src_raw = (uint64_t)v;   /* aux of the events: the stored value or operand */
    x->bytes = (uint64_t)width;
    x->width = width;
    x->value = v;
    x->dst_rank = gm_rank(p);
    x->dst_off = gm_offset(p);
    x->object = eng_word_object(e, p);
    x->peer = gm_rank(p);
    x->rank = c->rank;
    x->core_index = c->index;
    x->track = eng_track(e, c, PIPE_S);
    x->start = c->now;
    x->end = c->now + e->rate.hccs_latency_ps;
    x->site = eng_site(e, s);
    eng_xfer_post(e, x, c->now, eng_core_key(c));
    c->last_seq = x->issue_seq;
}

static void local_store(core *c, gm_t p, int width, int64_t v, int kind, dev_site s) {
    engine *e = c->e;
    eng_write_word(eng_gm_ptr(e, p, (uint64_t)width), width, v);
    emit_word(c, kind, p, width, v, 0, eng_site(e, s));
    eng_gm_written(e, gm_rank(p), gm_offset(p), (uint64_t)width, c->last_seq,
                   eng_track(e, c, PIPE_S) + 1, c->now);
}

/* EV_RING_HEAD / EV_RING_TAIL when p is a declared ring's head or tail
 * word of this width, else EV_GM_STORE; *object the word's id then. */
static int store_kind(engine *e, gm_t p, int width, uint32_t *object) {
    uint32_t id = eng_word_object(e, p);
    const engine_object *o = engine_object_get(e, id);
    *object = 0;
    if (!o || (int)o->width != width || o->addr.a != p.a) return EV_GM_STORE;
    if (o->kind != OBJ_RING_HEAD && o->kind != OBJ_RING_TAIL) return EV_GM_STORE;
    *object = id;
    return o->kind == OBJ_RING_TAIL ? EV_RING_TAIL : EV_RING_HEAD;
}

void dev_gm_store(gm_t p, int width, int64_t v, dev_site s) {
    core *c = gm_word_access("SetValue", p, width, s);
    engine *e = c->e;
    eng_sync(c);
    /* a plain store to a declared ring's head or tail (Ascend C's SetValue)
     * is that ring's update, as RingStoreHead/Tail would record it */
    uint32_t object;
    int kind = store_kind(e, p, width, &object);
    if (gm_rank(p) != c->rank) {
        if (kind != EV_GM_STORE) emit_word(c, kind, p, width, v, object, eng_site(e, s));
        remote_store(c, p, width, v, OP_STORE, XFER_REMOTE_STORE, s);
    } else {
        local_store(c, p, width, v, kind, s);
        eng_advance(c, e->rate.gm_write_ps);
    }
}

int64_t dev_gm_atomic(gm_t p, int width, int op, int64_t v, int64_t cmp, dev_site s) {
    core *c = gm_word_access("Atomic", p, width, s);
    engine *e = c->e;
    int remote = reach_word(c, p);
    uint8_t *ptr = eng_gm_ptr(e, p, (uint64_t)width);
    int64_t old = eng_read_word(ptr, width), nv = old;
    if (op == ATOMIC_ADD) nv = old + v;
    else if (op == ATOMIC_MAX) nv = v > old ? v : old;
    else if (op == ATOMIC_CAS) nv = old == cmp ? v : old;
    else eng_fault(c, s, "Atomic: unknown operation %d", op);
    eng_write_word(ptr, width, nv);
    engine_event ev = EV_INIT(c, EV_ATOMIC, PIPE_S);
    ev.time = c->now;
    ev.sub = (uint8_t)op;
    ev.addr = p.a;
    ev.len = (uint64_t)width;
    ev.value = v;
    ev.aux = old;
    ev.peer = (uint32_t)gm_rank(p);
    ev.object = eng_word_object(e, p);
    ev.site = eng_site(e, s);
    c->last_seq = eng_emit(e, &ev);
    eng_gm_written(e, gm_rank(p), gm_offset(p), (uint64_t)width, c->last_seq,
                   eng_track(e, c, PIPE_S) + 1, c->now);
    eng_advance(c, remote ? e->rate.hccs_latency_ps : e->rate.gm_write_ps);
    return old;
}

static int64_t gm_wait(core *c, gm_t p, int width, int cond, int64_t v, uint32_t object, dev_site s) {
    engine *e = c->e;
    if (cond < COND_EQ || cond > COND_LT) eng_fault(c, s, "WaitGM: %d is not a condition", cond);
    int remote = reach_word(c, p);
    uint8_t *ptr = eng_gm_ptr(e, p, (uint64_t)width);
    int64_t cur = eng_read_word(ptr, width);
    uint32_t site = eng_site(e, s);
    if (!object) object = eng_word_object(e, p);
    if (eng_cond_holds(cond, cur, v)) {
        emit_word(c, EV_GM_LOAD, p, width, cur, object, site);
        eng_advance(c, remote ? e->rate.hccs_latency_ps : e->rate.gm_read_ps);
        return cur;
    }
    eng_wait_on(c, WAIT_GM, site, v);
    c->wait_addr = p;
    c->wait_width = width;
    c->wait_cond = cond;
    c->wait_object = object;
    c->wait_remote = remote;
    engine_event b = EV_INIT(c, EV_GM_WAIT_BEGIN, PIPE_S);
    b.time = c->now; b.addr = p.a; b.len = (uint64_t)width; b.sub = (uint8_t)cond;
    b.aux = v; b.value = cur; b.object = object; b.site = site; b.peer = (uint32_t)gm_rank(p);
    c->wait_begin_seq = c->last_seq = eng_emit(e, &b);
    eng_watch(e, c);
    eng_block(c);
    e->stall_ps += c->now - c->wait_begin_time;
    engine_event en = EV_INIT(c, EV_GM_WAIT_END, PIPE_S);
    en.time = c->now; en.addr = p.a; en.len = (uint64_t)width; en.sub = (uint8_t)cond;
    en.aux = v; en.value = c->wake_value; en.object = object; en.site = site;
    en.link = c->wake_seq; en.peer = c->wake_track;
    c->last_seq = eng_emit(e, &en);
    return c->wake_value;
}

int64_t dev_gm_wait(gm_t p, int width, int cond, int64_t v, dev_site s) {
    core *c = gm_word_access("WaitGM", p, width, s);
    return gm_wait(c, p, width, cond, v, 0, s);
}

/* ------------------------------------------------------------ UB scalar */
/* The UB word a scalar load or store (api, is_store) reaches, literal and
 * brought up to date: transfers that completed before now are visible,
 * later ones are not. */
static uint8_t *ub_word(const char *api, local_t l, uint32_t byte_off, int width, int is_store,
                        dev_site s) {
    core *c = eng_current(api);
    eng_advance(c, c->e->rate.scalar_ps);
    if (width != 1 && width != 2 && width != 4 && width != 8)
        eng_fault(c, s, "%s: width %d (1, 2, 4 or 8 bytes)", api, width);
    if (byte_off % (uint32_t)width || l.off % (uint32_t)width)
        eng_fault(c, s, "%s: UB address %u is not %d-byte aligned", api, l.off + byte_off, width);
    mseg *m;
    uint8_t *h = eng_local_at(c, local_add(l, byte_off), (uint64_t)width, s, api, &m);
    uint8_t *p = eng_seg_lit(c->e, m, eng_seg_off(m, h), (uint64_t)width);
    eng_sync_local(c, m, eng_seg_off(m, h), (uint64_t)width);
    eng_hook_local(c, local_add(l, byte_off), width, is_store, s);
    return p;
}

int64_t dev_local_load(local_t l, uint32_t byte_off, int width, dev_site s) {
    return eng_read_word(ub_word("UbGet", l, byte_off, width, 0, s), width);
}

void dev_local_store(local_t l, uint32_t byte_off, int width, int64_t v, dev_site s) {
    eng_write_word(ub_word("UbSet", l, byte_off, width, 1, s), width, v);
}

/* ------------------------------------------------------------ cross-core flags */
void eng_xcore_deliver(engine *e, xfer *x) {
    core *t = eng_core(e, x->dst_rank, (int)x->dst_off);
    int id = (int)x->value;
    t->xcore_count[id]++;
    t->xcore_last_seq[id] = x->issue_seq;
    t->xcore_last_track[id] = x->track + 1;
    if (t->status == CS_BLOCKED && t->wait == WAIT_XCORE && t->wait_flag == id &&
        t->xcore_count[id] >= (uint32_t)t->wait_need) {
        t->xcore_count[id] -= (uint32_t)t->wait_need;
        eng_wake(e, t, x->end, id, x->issue_seq, x->track + 1);
    }
}

static void xcore_check(core *c, int flag_id, dev_site s, const char *api) {
    if (flag_id < 0 || flag_id >= XCORE_FLAGS)
        eng_fault(c, s, "%s: flag id %d out of range 0-%d", api, flag_id, XCORE_FLAGS - 1);
    if (c->group < 0) eng_fault(c, s, "%s: cross-core flags need a MIX (AIC+AIV) launch", api);
}

void dev_xcore_set(int pipe, int flag_id, dev_site s) {
    core *c = eng_current("CrossCoreSetFlag");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    xcore_check(c, flag_id, s, "CrossCoreSetFlag");
    if (pipe < 0 || pipe >= PIPE_COUNT) eng_fault(c, s, "CrossCoreSetFlag: %d is not a pipe", pipe);
    eng_sync(c);
    uint64_t fire = c->now;
    if (pipe != PIPE_S && c->pipes[pipe].done_at > fire) fire = c->pipes[pipe].done_at;
    fire += e->rate.xcore_latency_ps;
    engine_event ev = EV_INIT(c, EV_XCORE_SET, pipe);
    ev.time = c->now; ev.value = flag_id; ev.aux = (int64_t)fire; ev.site = eng_site(e, s);
    c->last_seq = eng_emit(e, &ev);
    /* targets: the AIVs of this AIC's group, or the AIC of this AIV */
    for (int i = 0; i < e->cores_per_rank; i++) {
        core *t = eng_core(e, c->rank, i);
        if (t == c || t->group != c->group || t->launch != c->launch || t->is_aic == c->is_aic) continue;
        xfer *x = eng_xfer_new(e);
        x->op = OP_XCORE;
        x->value = flag_id;
        x->dst_rank = t->rank;
        x->dst_off = (uint64_t)t->index;
        x->issue_seq = c->last_seq;
        x->track = eng_track(e, c, pipe);
        x->end = fire;
        eng_push(e, fire, eng_core_key(c), Q_XFER, (uint32_t)(x - e->xfers));
        eng_hook_sync(c, HOOK_XCORE_POST, flag_id, (uint64_t)t->index, s);
    }
}

void dev_xcore_wait(int flag_id, dev_site s) {
    core *c = eng_current("CrossCoreWaitFlag");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    xcore_check(c, flag_id, s, "CrossCoreWaitFlag");
    eng_sync(c);
    int need = c->is_aic ? c->sub_num : 1;
    if (c->xcore_count[flag_id] >= (uint32_t)need) {
        c->xcore_count[flag_id] -= (uint32_t)need;
        eng_hook_sync(c, HOOK_XCORE_WAIT, flag_id, (uint64_t)need, s);
        return;
    }
    uint32_t site = eng_site(e, s);
    eng_wait_on(c, WAIT_XCORE, site, need);
    c->wait_flag = flag_id;
    c->wait_need = need;
    engine_event b = EV_INIT(c, EV_XCORE_WAIT_BEGIN, PIPE_S);
    b.time = c->now; b.value = flag_id; b.aux = need; b.site = site;
    c->wait_begin_seq = c->last_seq = eng_emit(e, &b);
    eng_block(c);
    e->stall_ps += c->now - c->wait_begin_time;
    engine_event en = EV_INIT(c, EV_XCORE_WAIT_END, PIPE_S);
    en.time = c->now; en.value = flag_id; en.site = site; en.link = c->wake_seq; en.peer = c->wake_track;
    c->last_seq = eng_emit(e, &en);
    eng_hook_sync(c, HOOK_XCORE_WAIT, flag_id, (uint64_t)need, s);
}

/* ------------------------------------------------------------ barriers */
/* The latest arrival by (time, track) is the one the release names: a rule
 * on the set of arrivals, not on the order they were learnt in, so a split
 * run, which learns remote arrivals a window late, names the same one. */
static void barrier_note(uint64_t *max_time, uint64_t *last_seq, uint32_t *last_track,
                      uint64_t time, uint64_t seq, uint32_t track1) {
    if (time > *max_time || (time == *max_time && track1 > *last_track)) {
        *max_time = time;
        *last_seq = seq;
        *last_track = track1;
    }
}

typedef struct barrier_state {
    int *arrived;
    uint64_t *max_time, *last_seq;
    uint32_t *last_track;
    int need;
    uint64_t latency;
} barrier_state;

static barrier_state barrier_of(engine *e, launch_info *l, int type, int all_ranks, int rank) {
    barrier_state b;
    if (all_ranks) {
        b = (barrier_state){&l->bar_arrived[type], &l->bar_max_time[type], &l->bar_last_seq[type],
                            &l->bar_last_track[type], l->cores_of_type[type] * e->n_ranks,
                            e->rate.barrier_latency_ps};
    } else {
        size_t k = (size_t)rank * 2 + (size_t)type;
        b = (barrier_state){&l->sync_arrived[k], &l->sync_max_time[k], &l->sync_last_seq[k],
                            &l->sync_last_track[k], l->cores_of_type[type], e->rate.xcore_latency_ps};
    }
    return b;
}

/* Everyone has arrived: the blocked participants here (but except) resume
 * at the latest arrival + the barrier's latency; the barrier is reset. */
static void barrier_release(engine *e, launch_info *l, int type, int all_ranks, int rank,
                         const core *except) {
    barrier_state b = barrier_of(e, l, type, all_ranks, rank);
    uint64_t release = *b.max_time + b.latency;
    int launch = (int)(l - e->launches);
    for (int i = 0; i < e->n_ranks * e->cores_per_rank; i++) {
        core *t = &e->cores[i];
        if (t == except || t->launch != launch || t->is_aic != type) continue;
        if (!all_ranks && t->rank != rank) continue;
        if (t->status == CS_BLOCKED && t->wait == WAIT_BARRIER && t->wait_barrier == all_ranks)
            eng_wake(e, t, release, b.need, *b.last_seq, *b.last_track);
    }
    *b.arrived = 0;
    *b.max_time = 0;
    *b.last_track = 0;
}

/* A BarrierAll arrival in another process (split runs, partition.c). */
void eng_barrier_arrival(engine *e, launch_info *l, int type, uint64_t time, uint64_t seq,
                         uint32_t track1) {
    barrier_state b = barrier_of(e, l, type, 1, 0);
    (*b.arrived)++;
    barrier_note(b.max_time, b.last_seq, b.last_track, time, seq, track1);
    if (*b.arrived == b.need) barrier_release(e, l, type, 1, 0, NULL);
}

void dev_barrier(int all_ranks, dev_site s) {
    core *c = eng_current(all_ranks ? "BarrierAll" : "SyncAll");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    eng_sync(c);
    launch_info *l = &e->launches[c->launch];
    int type = c->is_aic;
    barrier_state b = barrier_of(e, l, type, all_ranks, c->rank);
    uint32_t site = eng_site(e, s);
    engine_event ev = EV_INIT(c, EV_BARRIER_BEGIN, PIPE_S);
    ev.time = c->now; ev.value = all_ranks; ev.aux = b.need; ev.site = site;
    c->wait_begin_seq = c->last_seq = eng_emit(e, &ev);
    c->wait_begin_time = c->now;
    (*b.arrived)++;
    barrier_note(b.max_time, b.last_seq, b.last_track, c->now, c->last_seq,
                     eng_track(e, c, PIPE_S) + 1);
    if (all_ranks && e->split) eng_split_send_barrier(c);
    if (*b.arrived < b.need) {
        /* a split run may learn the last arrivals only at a window's end:
         * blocked and woken, or released here, a core takes one key at the
         * release time either way, so the events are the same */
        eng_wait_on(c, WAIT_BARRIER, site, b.need);
        c->wait_barrier = all_ranks;
        eng_block(c);
    } else {
        uint64_t release = *b.max_time + b.latency;
        c->wake_seq = *b.last_seq;
        c->wake_track = *b.last_track;
        barrier_release(e, l, type, all_ranks, c->rank, c);
        c->now = release;
        eng_sync(c);
    }
    e->stall_ps += c->now - c->wait_begin_time;
    engine_event en = EV_INIT(c, EV_BARRIER_END, PIPE_S);
    en.time = c->now; en.value = all_ranks; en.site = site; en.link = c->wake_seq; en.peer = c->wake_track;
    c->last_seq = eng_emit(e, &en);
}

/* ------------------------------------------------------------ rings */
static const engine_object *ring_word(core *c, uint32_t ring, int tail, dev_site s, const char *api) {
    const engine_object *r = engine_object_get(c->e, ring);
    if (!r || r->kind != OBJ_RING) eng_fault(c, s, "%s: %u is not a ring id", api, ring);
    return engine_object_get(c->e, tail ? r->tail : r->head);
}

void dev_ring_store(uint32_t ring, int tail, int64_t v, dev_site s) {
    core *c = eng_current(tail ? "RingStoreTail" : "RingStoreHead");
    engine *e = c->e;
    const engine_object *w = ring_word(c, ring, tail, s, tail ? "RingStoreTail" : "RingStoreHead");
    eng_advance(c, e->rate.scalar_ps);
    check_word(c, w->addr, (int)w->width, s, tail ? "RingStoreTail" : "RingStoreHead");
    eng_sync(c);
    int kind = tail ? EV_RING_TAIL : EV_RING_HEAD;
    if (gm_rank(w->addr) != c->rank) {
        /* the named store itself, then its landing on the peer */
        emit_word(c, kind, w->addr, (int)w->width, v, w->id, eng_site(e, s));
        remote_store(c, w->addr, (int)w->width, v, OP_STORE, XFER_REMOTE_STORE, s);
    } else {
        local_store(c, w->addr, (int)w->width, v, kind, s);
        eng_advance(c, e->rate.gm_write_ps);
    }
}

int64_t dev_ring_load(uint32_t ring, int tail, dev_site s) {
    core *c = eng_current("RingLoad");
    const engine_object *w = ring_word(c, ring, tail, s, "RingLoad");
    return dev_gm_load(w->addr, (int)w->width, s);
}

int64_t dev_ring_wait_space(uint32_t ring, int64_t tail, int64_t need, dev_site s) {
    core *c = eng_current("RingWaitSpace");
    const engine_object *r = engine_object_get(c->e, ring);
    const engine_object *h = ring_word(c, ring, 0, s, "RingWaitSpace");
    /* need > capacity can never be satisfied: like the seeds' spin loop, the
     * core then waits forever and the run ends as a deadlock naming the ring. */
    eng_advance(c, c->e->rate.scalar_ps);
    check_word(c, h->addr, (int)h->width, s, "RingWaitSpace");
    /* capacity - (tail - head) >= need  <=>  head >= tail + need - capacity */
    return gm_wait(c, h->addr, (int)h->width, COND_GE, tail + need - (int64_t)r->size, h->id, s);
}

int64_t dev_ring_wait_data(uint32_t ring, int64_t head, dev_site s) {
    core *c = eng_current("RingWaitData");
    const engine_object *t = ring_word(c, ring, 1, s, "RingWaitData");
    eng_advance(c, c->e->rate.scalar_ps);
    check_word(c, t->addr, (int)t->width, s, "RingWaitData");
    return gm_wait(c, t->addr, (int)t->width, COND_GT, head, t->id, s);
}

void dev_ring_atomic(uint32_t ring, int tail, int64_t v, dev_site s) {
    core *c = eng_current("RingAtomicAdd");
    engine *e = c->e;
    const engine_object *w = ring_word(c, ring, tail, s, "RingAtomicAdd");
    int r = gm_rank(w->addr);
    if (r != c->rank && !eng_same_node(e, r, c->rank)) {
        dev_rdma_atomic(w->addr, v, s);
    } else if (r != c->rank) {
        eng_advance(c, e->rate.scalar_ps);
        eng_sync(c);
        engine_event ev = EV_INIT(c, EV_ATOMIC, PIPE_S);
        ev.time = c->now; ev.sub = ATOMIC_ADD; ev.addr = w->addr.a; ev.len = w->width; ev.value = v;
        ev.peer = (uint32_t)r; ev.object = w->id; ev.site = eng_site(e, s);
        c->last_seq = eng_emit(e, &ev);
        remote_store(c, w->addr, (int)w->width, v, OP_ATOMIC_ADD, XFER_REMOTE_STORE, s);
    } else {
        dev_gm_atomic(w->addr, (int)w->width, ATOMIC_ADD, v, 0, s);
    }
}

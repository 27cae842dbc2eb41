/*
 * pipes.c - asynchronous pipe queues and transfers.
 *
 * A device call that moves data (DataCopy, a vector op, a put, an RDMA
 * write) becomes an xfer queued on a pipe: it starts when the pipe is free
 * and any WaitFlag holding the pipe has fired, occupies the pipe for its
 * serial time (bytes over the core's MTE bandwidth, or the slowest shared
 * resource it crosses: HBM, an HCCS link, a NIC), and completes one latency
 * later. Its memory effect is applied at completion, by the scheduler, so a
 * reader that does not wait for it sees the old bytes, as on the chip.
 */
#include "internal.h"
#include "vec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


xfer *eng_xfer_new(engine *e) {
    int idx;
    if (e->free_xfer >= 0) {
        idx = e->free_xfer;
        e->free_xfer = e->xfers[idx].next_free;
    } else {
        if (e->n_xfers == e->cap_xfers) {
            e->cap_xfers = e->cap_xfers ? e->cap_xfers * 2 : 1024;
            e->xfers = realloc(e->xfers, (size_t)e->cap_xfers * sizeof *e->xfers);
            if (!e->xfers) abort();
        }
        idx = e->n_xfers++;
    }
    xfer *x = &e->xfers[idx];
    memset(x, 0, sizeof *x);
    x->dst_rank = -1;
    x->next_free = -1;
    x->lnext = x->lprev = -1;
    x->origin_xfer = -1;
    return x;
}

void eng_xfer_free(engine *e, xfer *x) {
    x->next_free = e->free_xfer;
    e->free_xfer = (int)(x - e->xfers);
}

/* The event of x's issue or completion (kind) at time: the two carry the
 * same fields, the completion also its issue's seq as link. */
static engine_event xfer_event(const xfer *x, engine_event_kind kind, uint64_t time) {
    engine_event ev = {0};
    ev.kind = kind;
    ev.time = time;
    ev.rank = (uint32_t)x->rank;
    ev.core = (uint32_t)x->core_index;
    ev.pipe = (uint8_t)x->pipe;
    ev.sub = (uint8_t)x->kind;
    ev.addr = x->dst_raw;
    ev.aux = (int64_t)x->src_raw;
    ev.len = x->bytes;
    ev.value = (int64_t)x->start;
    ev.peer = (uint32_t)x->peer;
    ev.site = x->site;
    ev.object = x->object;
    if (kind == EV_XFER_DONE) ev.link = x->issue_seq;
    return ev;
}

void eng_xfer_issue_event(engine *e, xfer *x, uint64_t issue_time) {
    engine_event ev = xfer_event(x, EV_XFER_ISSUE, issue_time);
    x->issue_seq = eng_emit(e, &ev);
    eng_hook_xfer(e, x);
}

/* Emits the issue event and schedules the completion of a fully timed x. */
void eng_xfer_post(engine *e, xfer *x, uint64_t issue_time, uint64_t key) {
    eng_xfer_issue_event(e, x, issue_time);
    eng_push(e, x->end, key, Q_XFER, (uint32_t)(x - e->xfers));
}

/* ------------------------------------------------------------ local steps */
static int in_local(const core *c, const mseg *m) {
    return m && m >= &c->local[0] && m <= &c->local[LM_L0C];
}

/* c's queued xfers that read or write its local memories, for
 * eng_sync_local, in order of completion time: a new one almost always
 * ends last (a pipe's queue), so it goes in at the tail, and a step looks
 * only at those already due. */
static void local_pending_add(engine *e, core *c, xfer *x) {
    if (!in_local(c, x->dseg) && !in_local(c, x->sseg) && !in_local(c, x->sseg2)) return;
    int32_t i = (int32_t)(x - e->xfers), after = c->lpend_last;
    while (after >= 0 && e->xfers[after].end > x->end) after = e->xfers[after].lprev;
    x->lpending = 1;
    x->lprev = after;
    x->lnext = after >= 0 ? e->xfers[after].lnext : c->lpend;
    if (after >= 0) e->xfers[after].lnext = i;
    else c->lpend = i;
    if (x->lnext >= 0) e->xfers[x->lnext].lprev = i;
    else c->lpend_last = i;
}

static void local_pending_remove(engine *e, xfer *x) {
    if (!x->lpending) return;
    core *c = eng_core(e, x->rank, x->core_index);
    if (x->lprev >= 0) e->xfers[x->lprev].lnext = x->lnext;
    else c->lpend = x->lnext;
    if (x->lnext >= 0) e->xfers[x->lnext].lprev = x->lprev;
    else c->lpend_last = x->lprev;
    x->lpending = 0;
}

static int ranges_meet(uint64_t a, uint64_t alen, uint64_t b, uint64_t blen) {
    return a < b + blen && b < a + alen;
}

/* Does x touch [off, off+len) of seg? Copies by their byte range (a
 * padded copy in writes its padding too); compute ops anywhere in seg. */
static int xfer_touches(const xfer *x, const mseg *seg, uint64_t off, uint64_t len) {
    int copy = x->op == OP_COPY || x->op == OP_COPY_PAD_IN;
    if (x->dseg == seg) {
        if (!copy) return 1;
        uint64_t n = x->op == OP_COPY_PAD_IN ? (x->bytes + UB_ALIGN - 1) / UB_ALIGN * UB_ALIGN : x->bytes;
        if (ranges_meet(eng_seg_off(x->dseg, x->dst), n, off, len)) return 1;
    }
    if (x->sseg == seg) {
        if (!copy) return 1;
        if (ranges_meet(eng_seg_off(x->sseg, x->src), x->bytes, off, len)) return 1;
    }
    return x->sseg2 == seg;
}

int eng_local_pending_conflict(const core *c, const mseg *seg, uint64_t off, uint64_t len) {
    const xfer *xs = c->e->xfers;
    for (int32_t i = c->lpend; i >= 0 && xs[i].end <= c->now; i = xs[i].lnext)
        if (xfer_touches(&xs[i], seg, off, len)) return 1;
    return 0;
}

static uint64_t eng_pipe_start(core *c, int pipe) {
    pipe_q *p = &c->pipes[pipe];
    uint64_t s = c->now;
    if (p->free_at > s) s = p->free_at;
    if (p->barrier_at > s) s = p->barrier_at;
    return s;
}

/* Times x on the core's pipe: serial part = max(fixed + bytes at the core's
 * rate, each shared resource's reservation), then latency. */
void eng_xfer_issue_on(core *c, xfer *x, double core_ps_per_byte, uint64_t fixed_ps,
                       resource **res, int n_res, uint64_t latency_ps, dev_site s) {
    engine *e = c->e;
    pipe_q *p = &c->pipes[x->pipe];
    uint64_t start = eng_pipe_start(c, x->pipe);
    uint64_t busy = fixed_ps + (uint64_t)ceil((double)x->bytes * core_ps_per_byte);
    busy = eng_jitter(c, busy);
    uint64_t serial_end = start + busy;
    for (int i = 0; i < n_res; i++) {
        uint64_t t = resource_reserve(res[i], e->now, start, x->bytes);
        if (t > serial_end) serial_end = t;
    }
    p->free_at = serial_end;
    uint64_t end = serial_end + latency_ps;
    if (end > p->done_at) p->done_at = end;
    x->rank = c->rank;
    x->core_index = c->index;
    x->track = eng_track(e, c, x->pipe);
    x->start = start;
    x->end = end;
    x->site = eng_site(e, s);
    eng_xfer_post(e, x, c->now, eng_core_key(c));
    c->last_seq = x->issue_seq;
    local_pending_add(e, c, x);
}

/* ------------------------------------------------------------ effects */
/* dst[i] += src[i] over 16-bit floats, summed in f32 and rounded back
 * through the format's two conversions (bf16, fp16). */
static void accumulate_half(uint8_t *dst, const uint8_t *src, uint64_t bytes,
                            float (*to_f32)(uint16_t), uint16_t (*from_f32)(float)) {
    for (uint64_t i = 0; i + 2 <= bytes; i += 2) {
        uint16_t a, b; memcpy(&a, dst + i, 2); memcpy(&b, src + i, 2);
        uint16_t r = from_f32(to_f32(a) + to_f32(b));
        memcpy(dst + i, &r, 2);
    }
}

/* SetAtomicMax / SetAtomicMin: dst[i] = max or min of dst[i] and src[i],
 * compared as dtype (vec_math.c). */
static void atomic_extreme(uint8_t *dst, const uint8_t *src, uint64_t bytes, int dtype, int op) {
    int size = eng_vec_dtype_size(dtype);
    if (!size) return;
    int vop = op == ATOMIC_MAX ? VOP_MAX : VOP_MIN;
    for (uint64_t i = 0; i + (uint64_t)size <= bytes; i += (uint64_t)size)
        eng_vec_store(dst + i, dtype, eng_vec_binary(vop, dtype, eng_vec_load(dst + i, dtype),
                                                     eng_vec_load(src + i, dtype)));
}

void eng_atomic_accumulate(uint8_t *dst, const uint8_t *src, uint64_t bytes, int dtype, int op) {
    if (op == ATOMIC_MAX || op == ATOMIC_MIN) {
        atomic_extreme(dst, src, bytes, dtype, op);
        return;
    }
    switch (dtype) {
    case DT_FLOAT:
        for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
            float a, b; memcpy(&a, dst + i, 4); memcpy(&b, src + i, 4); a += b; memcpy(dst + i, &a, 4);
        }
        break;
    case DT_INT32:
        for (uint64_t i = 0; i + 4 <= bytes; i += 4) {
            uint32_t a, b; memcpy(&a, dst + i, 4); memcpy(&b, src + i, 4); a += b; memcpy(dst + i, &a, 4);
        }
        break;
    case DT_INT64:
        for (uint64_t i = 0; i + 8 <= bytes; i += 8) {
            uint64_t a, b; memcpy(&a, dst + i, 8); memcpy(&b, src + i, 8); a += b; memcpy(dst + i, &a, 8);
        }
        break;
    case DT_BF16:
        accumulate_half(dst, src, bytes, bf16_to_float, float_to_bf16);
        break;
    case DT_FP16:
        accumulate_half(dst, src, bytes, eng_f16_to_f32, eng_f32_to_f16);
        break;
    default:
        for (uint64_t i = 0; i < bytes; i++) dst[i] = (uint8_t)(dst[i] + src[i]);
    }
}

/* Literal bytes of an operand (materialized), or where an overwrite goes. */
static uint8_t *lit(engine *e, mseg *seg, uint8_t *p, uint64_t bytes) {
    return eng_seg_lit(e, seg, eng_seg_off(seg, p), bytes);
}

static void apply(engine *e, xfer *x) {
    switch (x->op) {
    case OP_COPY:
    case OP_BATCH_TASK:
        if (x->atomic_dtype)
            eng_atomic_accumulate(lit(e, x->dseg, x->dst, x->bytes),
                                  lit(e, x->sseg, x->src, x->bytes), x->bytes, x->atomic_dtype,
                                  x->atomic_op);
        else  /* only moves: references travel as references */
            eng_seg_copy(e, x->dseg, eng_seg_off(x->dseg, x->dst), x->sseg,
                         eng_seg_off(x->sseg, x->src), x->bytes);
        break;
    case OP_COPY_PAD_IN: {
        uint64_t padded = (x->bytes + UB_ALIGN - 1) / UB_ALIGN * UB_ALIGN;
        uint64_t doff = eng_seg_off(x->dseg, x->dst);
        eng_seg_copy(e, x->dseg, doff, x->sseg, eng_seg_off(x->sseg, x->src), x->bytes);
        memset(eng_seg_overwrite(x->dseg, doff + x->bytes, padded - x->bytes), 0, padded - x->bytes);
        break;
    }
    case OP_STORE:
        eng_write_word(eng_seg_overwrite(x->dseg, eng_seg_off(x->dseg, x->dst), (uint64_t)x->width),
                       x->width, x->value);
        break;
    case OP_ATOMIC_ADD: {
        uint8_t *p = lit(e, x->dseg, x->dst, (uint64_t)x->width);
        eng_write_word(p, x->width, eng_read_word(p, x->width) + x->value);
        break;
    }
    case OP_VEC_GEN:
        eng_vec_apply(e, x);
        break;
    case OP_COPY_BLOCKS:
        eng_copy_blocks_apply(e, x);
        break;
    default:
        eng_apply_compute(e, x);
        break;
    }
}

void eng_xfer_complete(engine *e, xfer *x) {
    if (x->op == OP_XCORE) {
        /* a cross-core flag reaching its target: not a transfer, no event */
        eng_xcore_deliver(e, x);
        eng_xfer_free(e, x);
        return;
    }
    local_pending_remove(e, x);
    if (x->in_flight) eng_rdma_land(e, x);
    else apply(e, x);
    engine_event ev = xfer_event(x, EV_XFER_DONE, x->end);
    uint64_t seq = eng_emit(e, &ev);
    if (!x->rdma && x->core_index >= 0 && x->pipe < PIPE_COUNT) {
        core *c = eng_core(e, x->rank, x->core_index);
        c->pipes[x->pipe].last_done_seq = seq;
        c->pipes[x->pipe].last_done_track = x->track + 1;
    }
    if (x->dst_rank >= 0)
        eng_gm_written(e, x->dst_rank, x->dst_off, x->op == OP_STORE || x->op == OP_ATOMIC_ADD ?
                       (uint64_t)x->width : x->op == OP_COPY_BLOCKS ? x->ext[0] : x->bytes,
                       seq, x->track + 1, x->end);
    if (x->rdma) eng_rdma_completed(e, x, seq);   /* the source learns it from the ack */
    else eng_xfer_free(e, x);
}

/* ------------------------------------------------------------ flags */
typedef struct { int producer, consumer; } event_pipes;

/* A hard event's name is its producer pipe, then its consumer pipe. */
#define HARD_EVENT(p, c) [p##_##c] = {PIPE_##p, PIPE_##c}
static const event_pipes hard_events[HARD_EVENT_COUNT] = {
    HARD_EVENT(MTE2, V), HARD_EVENT(V, MTE2), HARD_EVENT(MTE3, V), HARD_EVENT(V, MTE3),
    HARD_EVENT(MTE2, MTE3), HARD_EVENT(MTE3, MTE2), HARD_EVENT(MTE3, S), HARD_EVENT(S, MTE3),
    HARD_EVENT(MTE2, S), HARD_EVENT(S, MTE2), HARD_EVENT(V, S), HARD_EVENT(S, V),
    HARD_EVENT(MTE1, M), HARD_EVENT(M, MTE1), HARD_EVENT(MTE2, MTE1), HARD_EVENT(MTE1, MTE2),
    HARD_EVENT(M, FIX), HARD_EVENT(FIX, M), HARD_EVENT(FIX, S), HARD_EVENT(S, FIX),
    HARD_EVENT(MTE2, M), HARD_EVENT(M, V), HARD_EVENT(V, M), HARD_EVENT(FIX, MTE2),
    HARD_EVENT(MTE2, FIX),
};
#undef HARD_EVENT

int engine_hard_event_pipe(int hard_event, int consumer) {
    if (hard_event <= 0 || hard_event >= HARD_EVENT_COUNT) return -1;
    return consumer ? hard_events[hard_event].consumer : hard_events[hard_event].producer;
}

/* The core issuing a SetFlag or WaitFlag (api) of event ev, id: its issue
 * cost paid and the pair checked against the hardware's events and the
 * core's pipes. */
static core *flag_call(const char *api, int ev, int id, dev_site s) {
    core *c = eng_current(api);
    eng_advance(c, c->e->rate.scalar_ps);
    if (ev <= 0 || ev >= HARD_EVENT_COUNT)
        eng_fault(c, s, "%s: %d is not a hard event", api, ev);
    if (id < 0 || id >= FLAG_IDS)
        eng_fault(c, s, "%s(%s, %d): event id out of range 0-%d", api, engine_hard_event_name(ev), id,
                  FLAG_IDS - 1);
    int aic_pipe = hard_events[ev].producer == PIPE_M || hard_events[ev].consumer == PIPE_M ||
                   hard_events[ev].producer == PIPE_MTE1 || hard_events[ev].consumer == PIPE_MTE1 ||
                   hard_events[ev].producer == PIPE_FIX || hard_events[ev].consumer == PIPE_FIX;
    int aiv_pipe = hard_events[ev].producer == PIPE_V || hard_events[ev].consumer == PIPE_V ||
                   hard_events[ev].producer == PIPE_MTE3 || hard_events[ev].consumer == PIPE_MTE3;
    if ((c->is_aic && aiv_pipe && !aic_pipe) || (!c->is_aic && aic_pipe))
        eng_fault(c, s, "%s(%s): an %s core has no such pipe", api, engine_hard_event_name(ev),
                  c->is_aic ? "AIC" : "AIV");
    return c;
}

void eng_wait_until(core *c, uint64_t until, int begin_kind, int sub, int64_t value, uint32_t site,
                    const pipe_q *waker) {
    engine *e = c->e;
    engine_event b = EV_INIT(c, begin_kind, PIPE_S);
    b.time = c->now;
    b.sub = (uint8_t)sub;
    b.value = value;
    b.aux = (int64_t)until;
    b.site = site;
    uint64_t begin = c->now;
    c->last_seq = eng_emit(e, &b);
    c->now = until;
    eng_sync(c);   /* the completion that ends the wait is processed first */
    e->stall_ps += c->now - begin;
    engine_event en = EV_INIT(c, begin_kind + 1, PIPE_S);
    en.time = c->now;
    en.sub = (uint8_t)sub;
    en.value = value;
    en.site = site;
    en.link = waker->last_done_seq;
    en.peer = waker->last_done_track;
    c->last_seq = eng_emit(e, &en);
}

void dev_set_flag(int ev, int id, dev_site s) {
    core *c = flag_call("SetFlag", ev, id, s);
    engine *e = c->e;
    eng_sync(c);
    int prod = hard_events[ev].producer;
    uint64_t fire = c->now;
    if (prod != PIPE_S) {
        pipe_q *p = &c->pipes[prod];
        if (p->done_at > fire) fire = p->done_at;
        if (p->barrier_at > fire) fire = p->barrier_at;
    }
    flag_slot *f = &c->flags[ev][id];
    if (f->count == FLAG_DEPTH)
        eng_fault(c, s, "SetFlag(%s, %d) issued %d times without a WaitFlag: the event counter "
                  "overflows", engine_hard_event_name(ev), id, FLAG_DEPTH + 1);
    f->fire[(f->head + f->count) % FLAG_DEPTH] = fire;
    f->count++;
    engine_event e_ev = EV_INIT(c, EV_FLAG_SET, prod);
    e_ev.time = c->now;
    e_ev.sub = (uint8_t)ev;
    e_ev.value = id;
    e_ev.aux = (int64_t)fire;
    e_ev.site = eng_site(e, s);
    c->last_seq = eng_emit(e, &e_ev);
}

void dev_wait_flag(int ev, int id, dev_site s) {
    core *c = flag_call("WaitFlag", ev, id, s);
    engine *e = c->e;
    eng_hook_sync(c, HOOK_FLAG_WAIT, ev, (uint64_t)id, s);
    flag_slot *f = &c->flags[ev][id];
    if (f->count == 0)
        eng_fault(c, s, "WaitFlag(%s, %d) has no matching SetFlag on this core: the %s pipe would "
                  "wait forever", engine_hard_event_name(ev), id,
                  engine_pipe_name(hard_events[ev].consumer));
    uint64_t fire = f->fire[f->head];
    f->head = (uint8_t)((f->head + 1) % FLAG_DEPTH);
    f->count--;
    int cons = hard_events[ev].consumer;
    int prod = hard_events[ev].producer;
    if (cons != PIPE_S) {
        /* Only the consumer pipe stalls; the scalar unit goes on. */
        pipe_q *p = &c->pipes[cons];
        if (fire > p->barrier_at) p->barrier_at = fire;
        eng_sync(c);
        return;
    }
    eng_sync(c);
    if (fire <= c->now) return;
    eng_wait_until(c, fire, EV_FLAG_WAIT_BEGIN, ev, id, eng_site(e, s), &c->pipes[prod]);
}

void dev_pipe_barrier(int pipe, dev_site s) {
    core *c = eng_current("PipeBarrier");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    if (pipe != PIPE_ALL && (pipe < 0 || pipe >= PIPE_COUNT))
        eng_fault(c, s, "PipeBarrier: %d is not a pipe", pipe);
    eng_sync(c);
    if (pipe != PIPE_ALL) return;  /* a pipe is in order with itself already */
    eng_hook_sync(c, HOOK_PIPE_BARRIER, PIPE_ALL, 0, s);
    uint64_t t = c->now;
    int last = -1;
    for (int p = 0; p < PIPE_COUNT; p++)
        if (c->pipes[p].done_at > t) { t = c->pipes[p].done_at; last = p; }
    if (last < 0) return;
    eng_wait_until(c, t, EV_PIPE_WAIT_BEGIN, PIPE_ALL, 0, eng_site(e, s), &c->pipes[last]);
}

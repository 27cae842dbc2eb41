/*
 * ana_crit_walk.c - the critical path: from the event that ended the run,
 * back through what gated each step, to time 0.
 *
 * The walk holds a time t (everything after t is explained) and an event
 * whose time is t, and asks what made that event happen then:
 *   - a transfer's completion: its latency, then its serial time on the
 *     pipe (the core's MTE rate, or the HBM, HCCS link or NIC that was
 *     slower), then what it queued behind: the previous transfer on the same
 *     pipe (when that one's serial end is this one's start), a completion on
 *     another pipe of the core at that instant (a WaitFlag holding the pipe),
 *     else the queueing itself counts as sync;
 *   - the end of a wait: the event that released it (its link: the write, the
 *     completion, the last barrier arrival, the cross-core set), the gap
 *     between the two being sync latency (or RDMA latency for an ack);
 *   - any other step of a core: the core's previous step, the gap being its
 *     scalar work; a kernel's end waits for its last completion or ack.
 * Each step emits the interval between the new time and t, so the pieces
 * tile [0, end_time] exactly whatever they are attributed to. Where the
 * trace does not say how a transfer's serial time divided between its
 * resources (the engine books them and records only start and end), the
 * resource whose nominal time (bytes over bandwidth) is longest gets it; the
 * rest of the rules are exact. For a deadlock the path ends in the wait that
 * blocked last, whose time to the end of the run is `blocked`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/critical/ana_crit.h"
#include "analysis/derive/derive.h"

typedef struct walk {
    const ana_crit_run *run;
    uint64_t t;                 /* everything after t is explained */
    ana_crit_seg *seg;          /* backwards while walking */
    size_t n, cap;
    int oom;
} walk;

static const char *const class_names[CRIT_CLASS_COUNT] = {
    [CRIT_HBM] = "hbm", [CRIT_MTE] = "mte", [CRIT_HCCS] = "hccs",
    [CRIT_HCCS_LATENCY] = "hccs_latency", [CRIT_NIC] = "nic",
    [CRIT_RDMA_LATENCY] = "rdma_latency", [CRIT_SCALAR] = "scalar", [CRIT_VECTOR] = "vector",
    [CRIT_CUBE] = "cube", [CRIT_AICPU] = "aicpu", [CRIT_SYNC] = "sync",
    [CRIT_JITTER] = "jitter", [CRIT_LAUNCH] = "launch", [CRIT_BLOCKED] = "blocked",
    [CRIT_IDLE] = "idle"};

const char *ana_crit_class_name(int cls) {
    return cls >= 0 && cls < CRIT_CLASS_COUNT ? class_names[cls] : "?";
}

/* Appends [start, w->t) and moves t back to start; nothing if start >= t. */
static void emit(walk *w, uint64_t start, int cls, int sub, const ana_crit_ev *e, uint64_t seq,
                 int has_core) {
    if (start >= w->t) return;
    if (ana_grow((void **)&w->seg, &w->cap, w->n + 1, sizeof *w->seg, 256)) {
        w->oom = 1;
        w->t = start;
        return;
    }
    ana_crit_seg *s = &w->seg[w->n++];
    memset(s, 0, sizeof *s);
    s->start = start;
    s->end = w->t;
    s->seq = seq;
    s->cls = (uint8_t)cls;
    s->sub = (uint8_t)sub;
    if (e) {
        s->site = e->site;
        s->rank = e->rank;
        s->core = e->core;
        s->peer = e->peer;
        s->pipe = e->pipe;
        s->has_core = (uint8_t)has_core;
    }
    w->t = start;
}

/* Emits with an explicit instance (rank -> peer) for links and NICs. */
static void emit_at(walk *w, uint64_t start, int cls, int sub, const ana_crit_ev *e, uint64_t seq,
                    int rank, int peer) {
    ana_crit_ev x = *e;
    x.rank = (uint16_t)rank;
    x.peer = (uint16_t)peer;
    emit(w, start, cls, sub, &x, seq, 0);
}

static size_t core_of(const ana_crit_run *r, const ana_crit_ev *e) {
    return (size_t)e->rank * (size_t)r->cores_per_rank + e->core;
}

/* The latest completion of a transfer this core issued at exactly time t
 * (rdma: only RDMA operations), other than `not`; 0 if none. */
static uint64_t done_at(const ana_crit_run *r, size_t core, uint64_t t, int rdma, uint64_t not) {
    if (core >= r->ncores) return 0;
    size_t lo = r->done_first[core], hi = r->done_first[core + 1];
    while (lo < hi) {   /* first with time > t */
        size_t mid = lo + (hi - lo) / 2;
        if (r->ev[r->done_seq[mid]].time <= t) lo = mid + 1;
        else hi = mid;
    }
    while (lo > r->done_first[core]) {
        uint64_t s = r->done_seq[--lo];
        const ana_crit_ev *d = &r->ev[s];
        if (d->time != t) break;
        if (s == not) continue;
        if (rdma && d->sub != XFER_RDMA_WRITE && d->sub != XFER_RDMA_ATOMIC &&
            d->sub != XFER_BATCHWRITE)
            continue;
        return s;
    }
    return 0;
}

static int crosses_nodes(const ana_crit_run *r, const ana_crit_ev *e) {
    int per = r->m.npus_per_node > 0 ? r->m.npus_per_node : 8;
    return e->rank / per != e->peer / per;
}

static int is_rdma(const ana_crit_run *r, const ana_crit_ev *d) {
    return d->sub == XFER_RDMA_WRITE || d->sub == XFER_RDMA_ATOMIC ||
           (d->sub == XFER_BATCHWRITE && crosses_nodes(r, d));
}

/* A GM access that reads a peer's GM: not posted, it holds its queue while
 * its request crosses (engine/internal.h eng_hccs_read_held_ps). */
static int reads_peer(const ana_crit_ev *d) {
    return d->peer != d->rank && (d->sub == XFER_MTE2 || d->sub == XFER_HCCS_GET);
}

/* The part of a transfer after its serial time: what the engine adds once
 * the pipe is free again. */
static uint64_t xfer_latency(const ana_crit_run *r, const ana_crit_ev *d) {
    const ana_crit_model *m = &r->m;
    switch (d->sub) {
    case XFER_MTE2: case XFER_MTE3: case XFER_FIX: case XFER_HCCS_PUT: case XFER_HCCS_GET:
        return m->mte_lat + (d->peer != d->rank ? m->hccs_lat : 0);
    case XFER_REMOTE_STORE:
        return m->hccs_lat;
    case XFER_RDMA_WRITE: case XFER_RDMA_ATOMIC:
        return m->rdma_lat;
    case XFER_BATCHWRITE:
        return crosses_nodes(r, d) ? m->rdma_lat : m->hccs_lat;
    default:
        return 0;
    }
}

/* When the transfer completed by d stopped occupying its pipe. */
static uint64_t serial_end(const ana_crit_run *r, const ana_crit_ev *d) {
    uint64_t lat = xfer_latency(r, d);
    uint64_t s = d->start <= d->time ? d->start : d->time;
    return d->time - s > lat ? d->time - lat : s;
}

static uint64_t nominal(double ps_per_byte, uint64_t bytes) {
    return (uint64_t)ceil((double)bytes * ps_per_byte);
}

/* Emits the serial part of the transfer completed by done (w->t is its
 * serial end) back to its start. */
static void serial_back(walk *w, uint64_t done) {
    const ana_crit_run *r = w->run;
    const ana_crit_ev *d = &r->ev[done];
    const ana_crit_model *m = &r->m;
    uint64_t s = d->start <= w->t ? d->start : w->t;
    uint64_t len = w->t - s;
    switch (d->sub) {
    case XFER_VEC:
        emit(w, s, CRIT_VECTOR, 0, d, done, 1);
        return;
    case XFER_CUBE:
        emit(w, s, CRIT_CUBE, 0, d, done, 1);
        return;
    case XFER_MTE1:
        emit(w, s, CRIT_MTE, 0, d, done, 1);
        return;
    case XFER_REMOTE_STORE:
        emit_at(w, s, CRIT_HCCS_LATENCY, 0, d, done, d->rank, d->peer);
        return;
    default:
        break;
    }
    if (is_rdma(r, d)) {
        /* after its source NIC had sent it, the op waited at the
         * destination (rx, or behind an earlier op to the same peer); the
         * NIC's part is nic_back's */
        uint64_t sent = d->link && r->ev[d->link].kind == EV_XFER_ISSUE ? r->ev[d->link].start : 0;
        (void)len;
        if (sent > s && sent < w->t)
            emit_at(w, sent, CRIT_NIC, CRIT_SUB_RX, d, done, d->peer, d->peer);
        return;
    }
    if (d->sub == XFER_BATCHWRITE) {   /* inside a node: the HCCS link */
        emit_at(w, s, CRIT_HCCS, 0, d, done, d->rank, d->peer);
        return;
    }
    /* A GM access: the core's MTE queue, the HBM of the rank owning the GM
     * (peer) and, to a peer, the HCCS link in the direction of the data. A
     * read of a peer's GM holds the queue first while its request crosses
     * (hold): HCCS latency. */
    int remote = d->peer != d->rank;
    int reads = d->sub == XFER_MTE2 || d->sub == XFER_HCCS_GET;
    uint64_t hold = reads_peer(d) ? m->hccs_read_held : 0;
    uint64_t b = nominal(remote ? m->mte_hccs_ppb : m->mte_ppb, d->len) + hold;
    uint64_t h = nominal(m->hbm_ppb, d->len);
    uint64_t l = remote ? nominal(m->hccs_ppb, d->len) : 0;
    uint64_t port = remote ? nominal(m->hccs_port_ppb, d->len) + (d->len ? m->hccs_transfer : 0) : 0;
    if (port > l) l = port;   /* the link or the ports at its ends, whichever is slower */
    int shared_cls = remote && l >= h ? CRIT_HCCS : CRIT_HBM;
    uint64_t shared = shared_cls == CRIT_HCCS ? l : h;
    int lr = reads ? d->peer : d->rank, lp = reads ? d->rank : d->peer;
    int hr = shared_cls == CRIT_HCCS ? lr : d->peer, hp = shared_cls == CRIT_HCCS ? lp : d->peer;
    uint64_t nom = b > shared ? b : shared;
    if (len > nom) {
        /* longer than any resource alone: jitter on the core's time, or a
         * shared resource booked by others */
        double jit = m->jitter > 0 ? (double)b * m->jitter : 0;
        if (m->jitter > 0 && (double)len <= (double)b + jit + 1)
            emit(w, s + nom, CRIT_JITTER, 0, d, done, 1);
        else
            emit_at(w, s + nom, shared_cls, 0, d, done, hr, hp);
    }
    if (shared > b) {
        emit_at(w, s, shared_cls, 0, d, done, hr, hp);
        return;
    }
    emit(w, s + hold, CRIT_MTE, 0, d, done, 1);
    emit_at(w, s, CRIT_HCCS_LATENCY, 0, d, done, d->peer, d->rank);
}

/* Emits the latency part of the transfer completed by done (w->t is its
 * completion) back to its serial end. */
static void latency_back(walk *w, uint64_t done) {
    const ana_crit_run *r = w->run;
    const ana_crit_ev *d = &r->ev[done];
    uint64_t se = serial_end(r, d);
    if (d->sub == XFER_REMOTE_STORE) return;   /* all of it is the serial part */
    if (is_rdma(r, d)) {
        emit_at(w, se, CRIT_RDMA_LATENCY, 0, d, done, d->rank, d->peer);
        return;
    }
    if (d->sub == XFER_BATCHWRITE || (d->peer != d->rank && d->sub != XFER_MTE1 &&
                                      d->sub != XFER_VEC && d->sub != XFER_CUBE)) {
        uint64_t h = r->m.hccs_lat;
        uint64_t from = w->t - se > h ? w->t - h : se;
        int reads = d->sub == XFER_MTE2 || d->sub == XFER_HCCS_GET;
        emit_at(w, from, CRIT_HCCS_LATENCY, 0, d, done, reads ? d->peer : d->rank,
                reads ? d->rank : d->peer);
    }
    emit(w, se, CRIT_MTE, 0, d, done, 1);
}

/* An RDMA op's time at its source NIC (w->t is when the NIC had sent it):
 * sending it, and before that the ops that held the NIC, one after the
 * other, back to one that began at its post. Returns that op's issue; w->t
 * is then its post. */
static uint64_t nic_back(walk *w, uint64_t issue) {
    const ana_crit_run *r = w->run;
    for (uint64_t hops = 0; hops < r->n; hops++) {
        const ana_crit_ev *i = &r->ev[issue];
        uint64_t done = i->link;
        if (!done) return issue;
        const ana_crit_ev *d = &r->ev[done];
        uint64_t post = d->start;
        uint64_t d_ps = nominal(r->m.nic_ppb, d->len) + (d->len ? r->m.nic_msg : 0);
        uint64_t begin = i->start > d_ps ? i->start - d_ps : 0;
        if (begin < post) begin = post;
        emit_at(w, begin, CRIT_NIC, CRIT_SUB_TX, d, done, d->rank, d->rank);
        uint64_t held = i->prev_track;
        if (w->t > post && held && r->ev[held].kind == EV_XFER_ISSUE && r->ev[held].start == w->t &&
            r->ev[held].link) {
            issue = held;   /* the NIC was sending that one until this one began */
            continue;
        }
        emit_at(w, post, CRIT_NIC, CRIT_SUB_TX, d, done, d->rank, d->rank);
        return issue;
    }
    return issue;
}

/* An op the rank's AICPU posted (w->t is when it had posted it): the
 * AICPU's task, and before it the ops it posted first, one after the
 * other, back to one it began when its core issued it. Returns that op's
 * issue; w->t is then its issue time. */
static uint64_t aicpu_back(walk *w, uint64_t issue) {
    const ana_crit_run *r = w->run;
    uint64_t task = r->m.aicpu_task;
    for (uint64_t hops = 0; hops < r->n; hops++) {
        const ana_crit_ev *i = &r->ev[issue];
        uint64_t from = w->t > task ? w->t - task : 0;
        if (from < i->time) from = i->time;
        emit_at(w, from, CRIT_AICPU, 0, i, issue, i->rank, i->rank);
        uint64_t prev = i->prev_aicpu;
        if (w->t > i->time && prev && r->ev[prev].link && r->ev[r->ev[prev].link].start == w->t) {
            issue = prev;   /* the AICPU was posting that one until then */
            continue;
        }
        emit_at(w, i->time, CRIT_AICPU, 0, i, issue, i->rank, i->rank);
        return issue;
    }
    return issue;
}

enum { AT_EVENT, AT_START };

uint64_t ana_crit_ending(const ana_crit_run *r) {
    uint64_t best = 0;
    if (r->outcome == OUTCOME_FAULT)   /* the fault stopped the run */
        for (uint64_t s = r->n; s-- > 1 && !best;)
            if (r->ev[s].kind == EV_FAULT) best = s;
    if (best) return best;
    if (r->outcome != OUTCOME_COMPLETED && r->open_wait) {
        for (size_t c = 0; c < r->ncores; c++) {
            uint64_t s = r->open_wait[c];
            if (s && (!best || r->ev[s].time > r->ev[best].time ||
                      (r->ev[s].time == r->ev[best].time && s > best)))
                best = s;
        }
        if (best) return best;
    }
    for (uint64_t s = r->n; s-- > 1;) {
        const ana_crit_ev *e = &r->ev[s];
        if (e->kind == EV_KERNEL_END && (!best || e->time > r->ev[best].time)) best = s;
    }
    if (!best)   /* no kernel ended: the last step a core took (a fault) */
        for (uint64_t s = r->n; s-- > 1 && !best;) {
            int k = r->ev[s].kind;
            if (k && k != EV_RUN_END && k != EV_BLOCKED && k != EV_XFER_DONE) best = s;
        }
    return best;
}

/* The event that ended the run, with the interval after it emitted. */
static uint64_t ending(walk *w) {
    const ana_crit_run *r = w->run;
    uint64_t best = ana_crit_ending(r);
    if (!best) return 0;
    const ana_crit_ev *e = &r->ev[best];
    int blocked = e->kind != EV_KERNEL_END && e->kind != EV_FAULT && r->outcome != OUTCOME_COMPLETED &&
                  r->open_wait && r->open_wait[core_of(r, e)] == best;
    emit(w, e->time, blocked ? CRIT_BLOCKED : CRIT_IDLE, 0, e, best, blocked);
    return best;
}

static int wait_sub(int kind) {
    switch (kind) {
    case EV_FLAG_WAIT_END: return CRIT_SUB_FLAG;
    case EV_XCORE_WAIT_END: return CRIT_SUB_XCORE;
    case EV_GM_WAIT_END: return CRIT_SUB_POLL;
    case EV_BARRIER_END: return CRIT_SUB_BARRIER;
    case EV_PIPE_WAIT_END: return CRIT_SUB_PIPE;
    default: return 0;
    }
}

/* One step back from the core event at seq (w->t is its time): returns the
 * next event to explain, 0 when time 0 is reached. */
static uint64_t core_step(walk *w, uint64_t seq, int *mode) {
    const ana_crit_run *r = w->run;
    const ana_crit_ev *e = &r->ev[seq];
    uint64_t p = e->prev;
    uint64_t pt = p ? r->ev[p].time : 0;
    uint64_t t = w->t;
    *mode = AT_EVENT;
    int sub = wait_sub(e->kind);
    if (e->kind == EV_KERNEL_BEGIN) {
        emit(w, pt, CRIT_LAUNCH, 0, e, seq, 1);
        return p;
    }
    if (sub) {
        uint64_t l = e->link;
        if (l && l < seq && r->ev[l].time <= t && r->ev[l].time >= pt) {
            const ana_crit_ev *wk = &r->ev[l];
            if (e->kind == EV_PIPE_WAIT_END && e->sub == PIPE_NIC) {   /* the ack */
                emit_at(w, wk->time, CRIT_RDMA_LATENCY, 0, wk, seq, wk->peer, wk->rank);
                return l;
            }
            if (wk->kind == EV_XCORE_SET && wk->start > wk->time + r->m.xcore_lat) {
                /* the set waited for its pipe: the completion that fired it */
                uint64_t fired = wk->start - r->m.xcore_lat;
                uint64_t d = done_at(r, core_of(r, wk), fired, 0, 0);
                if (d && fired >= pt) {
                    emit(w, fired, CRIT_SYNC, sub, e, seq, 1);
                    return d;
                }
            }
            emit(w, wk->time, CRIT_SYNC, sub, e, seq, 1);
            return l;
        }
        emit(w, pt, CRIT_SYNC, sub, e, seq, 1);
        return p;
    }
    if (e->kind == EV_KERNEL_END && t > pt) {
        uint64_t d = done_at(r, core_of(r, e), t, 0, 0);
        if (d) return d;   /* its last completion, at this very time */
        if (t >= r->m.rdma_lat) {
            d = done_at(r, core_of(r, e), t - r->m.rdma_lat, 1, 0);
            if (d && r->ev[d].time >= pt) {   /* the ack of its last RDMA op */
                const ana_crit_ev *x = &r->ev[d];
                emit_at(w, x->time, CRIT_RDMA_LATENCY, 0, x, seq, x->peer, x->rank);
                return d;
            }
        }
    }
    emit(w, pt, p ? CRIT_SCALAR : CRIT_LAUNCH, 0, e, seq, 1);
    return p;
}

/* The transfer whose issue is `issue` started at w->t: what it waited for.
 * Returns the next event; *mode AT_START when that is another transfer's
 * issue whose start is the new w->t. */
static uint64_t start_step(walk *w, uint64_t issue, int *mode) {
    const ana_crit_run *r = w->run;
    const ana_crit_ev *i = &r->ev[issue];
    uint64_t s = w->t;
    *mode = AT_EVENT;
    if (s <= i->time) return issue;
    if (i->sub == XFER_BATCHWRITE || i->sub == XFER_RDMA_WRITE || i->sub == XFER_RDMA_ATOMIC)
        return aicpu_back(w, issue);
    uint64_t prev = i->prev_track;
    if (prev && r->ev[prev].link) {
        uint64_t pd = r->ev[prev].link;
        if (serial_end(r, &r->ev[pd]) == s) {   /* the pipe was busy with it */
            serial_back(w, pd);
            *mode = AT_START;
            return prev;
        }
    }
    uint64_t d = done_at(r, core_of(r, i), s, 0, i->link);
    if (d && d != i->link) return d;   /* a WaitFlag held the pipe until then */
    emit(w, i->time, CRIT_SYNC, CRIT_SUB_PIPE, i, issue, 1);
    return issue;
}

int ana_crit_walk(const ana_crit_run *r, ana_crit_seg **segs, size_t *nsegs, char *err,
                  size_t errlen) {
    walk w = {.run = r, .t = r->end_time};
    *segs = NULL;
    *nsegs = 0;
    for (size_t s = 1; s < r->n; s++)
        if (r->ev[s].time > r->end_time) {
            ana_err(err, errlen, "event %zu at %llu ps is after the run's end (%llu ps)", s,
                    (unsigned long long)r->ev[s].time, (unsigned long long)r->end_time);
            return -1;
        }
    uint64_t at = ending(&w);
    int mode = AT_EVENT;
    uint64_t steps = 0, limit = 8 * (uint64_t)r->n + 64;
    while (at && w.t > 0 && !w.oom) {
        if (++steps > limit) {
            ana_err(err, errlen, "the critical path walk did not reach time 0 (stuck at seq %llu, "
                    "%llu ps)", (unsigned long long)at, (unsigned long long)w.t);
            free(w.seg);
            return -1;
        }
        const ana_crit_ev *e = &r->ev[at];
        if (mode == AT_START) {
            at = start_step(&w, at, &mode);
            continue;
        }
        if (e->time < w.t)   /* only a waker found earlier than t: the gap is sync */
            emit(&w, e->time, CRIT_SYNC, 0, e, at, 1);
        if (e->kind == EV_XFER_DONE && e->link) {
            latency_back(&w, at);
            serial_back(&w, at);
            at = e->link;
            if (is_rdma(r, e) && r->ev[at].kind == EV_XFER_ISSUE) at = nic_back(&w, at);
            at = start_step(&w, at, &mode);
        } else {
            at = core_step(&w, at, &mode);
        }
    }
    if (!w.oom && w.t > 0) emit(&w, 0, CRIT_LAUNCH, 0, NULL, 0, 0);
    if (w.oom) {
        free(w.seg);
        ana_err(err, errlen, "out of memory");
        return -1;
    }
    /* time order, neighbours on one instance merged */
    ana_crit_seg *out = malloc((w.n ? w.n : 1) * sizeof *out);
    if (!out) {
        free(w.seg);
        ana_err(err, errlen, "out of memory");
        return -1;
    }
    size_t n = 0;
    for (size_t k = w.n; k-- > 0;) {
        const ana_crit_seg *s = &w.seg[k];
        if (n) {
            ana_crit_seg *p = &out[n - 1];
            if (p->cls == s->cls && p->sub == s->sub && p->rank == s->rank &&
                p->peer == s->peer && p->has_core == s->has_core &&
                (!s->has_core || (p->core == s->core && p->pipe == s->pipe)) &&
                p->end == s->start) {
                p->end = s->end;
                p->seq = s->seq;
                p->site = s->site;
                continue;
            }
        }
        out[n++] = *s;
    }
    free(w.seg);
    w.seg = out;
    *segs = w.seg;
    *nsegs = n;
    return 0;
}

void ana_crit_core_name(int rank, int core, int num_aic, char *buf, size_t len) {
    if (core < num_aic) snprintf(buf, len, "r%d AIC%d", rank, core);
    else snprintf(buf, len, "r%d AIV%d", rank, core - num_aic);
}

void ana_crit_resource_text(const ana_crit_seg *s, int num_aic, char *buf, size_t len) {
    char core[48];
    ana_crit_core_name(s->rank, s->core, num_aic, core, sizeof core);
    static const char *const sync_what[] = {
        [CRIT_SUB_NONE] = "wait", [CRIT_SUB_FLAG] = "flag", [CRIT_SUB_XCORE] = "cross-core flag",
        [CRIT_SUB_BARRIER] = "barrier", [CRIT_SUB_POLL] = "GM wait", [CRIT_SUB_PIPE] = "pipe wait"};
    switch (s->cls) {
    case CRIT_HBM: snprintf(buf, len, "HBM r%d", s->rank); break;
    case CRIT_MTE:
        snprintf(buf, len, "%s %s", engine_pipe_name(s->pipe), core);
        break;
    case CRIT_HCCS: snprintf(buf, len, "HCCS r%d->r%d", s->rank, s->peer); break;
    case CRIT_HCCS_LATENCY: snprintf(buf, len, "HCCS latency r%d->r%d", s->rank, s->peer); break;
    case CRIT_NIC:
        snprintf(buf, len, "NIC r%d %s", s->rank, s->sub == CRIT_SUB_RX ? "rx" : "tx");
        break;
    case CRIT_RDMA_LATENCY: snprintf(buf, len, "RDMA latency r%d->r%d", s->rank, s->peer); break;
    case CRIT_AICPU: snprintf(buf, len, "AICPU r%d", s->rank); break;
    case CRIT_SYNC:
        snprintf(buf, len, "%s %s", s->sub < sizeof sync_what / sizeof sync_what[0] &&
                 sync_what[s->sub] ? sync_what[s->sub] : "wait", core);
        break;
    case CRIT_LAUNCH: case CRIT_IDLE:
        snprintf(buf, len, "%s", ana_crit_class_name(s->cls));
        break;
    default:
        if (s->has_core) snprintf(buf, len, "%s %s", ana_crit_class_name(s->cls), core);
        else snprintf(buf, len, "%s", ana_crit_class_name(s->cls));
    }
}

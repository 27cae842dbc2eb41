/*
 * partition.c - one run split over processes: who owns what, what crosses,
 * and the window loop (engine.h, "split runs", says why it is exact).
 *
 * A process owns a contiguous block of whole nodes, so HCCS, cross-core
 * flags, SyncAll and GM waits (all node-local: a GM wait or scalar access to
 * another node faults, device API rules) never cross. Three things do, each
 * one wire latency or more after the step that causes it:
 *
 *   'A' an RDMA op's arrival at a rank owned elsewhere: the xfer's fields
 *       and the bytes its NIC read at tx begin, as pieces (payload.c);
 *   'K' its ack back to the source process, one latency after landing;
 *   'B' a BarrierAll arrival, to every other process: each counts it and,
 *       if it was the last, releases its own waiters at the latest arrival
 *       + barrier_latency.
 *
 * So lookahead = min(rdma_latency, barrier_latency). Each window: the
 * processes run what is before T + lookahead, T the earliest pending time
 * they agreed on, then swap one message each (swap_window: the next T and
 * the flags, the window's stream or its skeleton for the merge, merge.c,
 * the outboxes, the recorder's parts). A seq or site id that travels is
 * tagged with its process (internal.h) until the merge gives it its global
 * number. The run ends when nothing is pending anywhere (completed or a
 * deadlock), when the earliest pending time passes the watchdog, or after
 * the window in which a core faulted or a stop was asked for.
 */
#include "engine/internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct split_state {
    const engine_transport *t;
    uint64_t lookahead;
    engine_buf *out, *in;         /* [count] outboxes and inboxes */
    eng_capture cap;              /* this window's records and skeleton (merge.c) */
    engine_buf *all;              /* process 0: every process's stream */
    engine_observer final;        /* process 0: who sees the merged run */
    struct eng_merger *merge;     /* process 0 */
    char failed[ENGINE_ERRLEN];   /* process 0: the merge failed ("" if not) */
    int down;                     /* the transport failed: no collective can follow */
    int ship;                     /* process 0 observes: streams are gathered and merged */
    engine_buf report;            /* process 0: every process's cores, at a deadlock or watchdog */
    int reported;
    engine_memory memory;         /* summed over the processes at the end */
    int memory_summed;
    int faulted_here;             /* a core of this process faulted, at fault_time */
    uint64_t fault_time;
    /* recorded where it runs (engine_split_record): every process merges */
    int record_here;
    engine_split_sink sink;
    engine_buf *streams;          /* [count] what the merge reads (views into recv): skeletons
                                   * or whole streams, ours whole */
    engine_buf parts;             /* what sink->window handed in, to process 0 */
    engine_buf *send, *recv;      /* [count] a window's messages out and in (swap_window) */
    uint64_t out_min;             /* the earliest time of a message sent this window */
} split_state;

/* merge.c */
struct eng_merger *eng_merger_new(const engine_observer *out, int count, int me,
                                  uint32_t n0_strings, uint32_t n0_sites);
void eng_merger_free(struct eng_merger *m);
int eng_merger_window(struct eng_merger *m, const engine_buf *streams, char *err, size_t errlen);
int eng_merger_cut(const struct eng_merger *m, uint64_t *time, const char **message);
uint64_t eng_merger_events(const struct eng_merger *m);
uint64_t eng_merger_last_time(const struct eng_merger *m);
void eng_merger_end(struct eng_merger *m, uint64_t time, engine_outcome outcome);
uint64_t eng_merger_seq(const struct eng_merger *m, int q, uint64_t local);
engine_observer eng_capture_observer(eng_capture *c);
void eng_capture_window_end(eng_capture *c, int faulted);
void eng_capture_reset(eng_capture *c);
void eng_merger_direct(struct eng_merger *m);
void eng_capture_free(eng_capture *c);

/* ------------------------------------------------------------ buffers */
uint8_t *eng_buf_room(engine_buf *b, size_t n) {
    if (b->cap - b->n < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->n < n) cap *= 2;
        uint8_t *np = realloc(b->p, cap);
        if (!np) abort();
        b->p = np;
        b->cap = cap;
    }
    return b->p + b->n;
}

size_t eng_varint_put(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    return n;
}

int eng_varint_get(const uint8_t *p, size_t n, size_t *at, uint64_t *v) {
    uint64_t x = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (*at >= n) return -1;
        uint8_t b = p[(*at)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return 0;
        }
    }
    return -1;
}

void engine_buf_put(engine_buf *b, const void *p, size_t n) {
    uint8_t *at = eng_buf_room(b, n);
    if (n) memcpy(at, p, n);
    b->n += n;
}

void engine_buf_free(engine_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

typedef struct reader {
    const uint8_t *p;
    size_t n, at;
    int bad;
} reader;

static void get(reader *r, void *out, size_t n) {
    if (r->bad || r->n - r->at < n) {
        r->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->p + r->at, n);
    r->at += n;
}

/* ------------------------------------------------------------ ownership */
int engine_split_fits(int nodes, int count, char *err, size_t errlen) {
    if (count <= nodes) return ENGINE_OK;
    snprintf(err, errlen,
             "%d processes for %d node%s: each process owns whole nodes, so run at most %d", count,
             nodes, nodes == 1 ? "" : "s", nodes);
    return ENGINE_ERR;
}

void engine_split_nodes(int nodes, int count, int index, int *first, int *end) {
    *first = (int)((int64_t)index * nodes / count);
    *end = (int)((int64_t)(index + 1) * nodes / count);
}

static int owner_of_rank(const engine *e, int rank) {
    int node = rank / e->cfg.npus_per_node, count = e->split->t->count;
    for (int q = 0; q < count; q++) {
        int first, end;
        engine_split_nodes(e->cfg.nodes, count, q, &first, &end);
        if (node >= first && node < end) return q;
    }
    return 0;
}

int engine_rank_local(const engine *e, int rank) { return eng_local_rank(e, rank); }

static uint64_t tag_seq(int from, uint64_t seq) {
    return seq ? ((uint64_t)(from + 1) << SPLIT_SEQ_SHIFT) | seq : 0;
}

static uint32_t tag_site(int from, uint32_t site) {
    return site ? ((uint32_t)(from + 1) << SPLIT_SITE_SHIFT) | site : 0;
}

int engine_split(engine *e, const engine_transport *t, char *err, size_t errlen) {
    if (e->running || e->split) {
        snprintf(err, errlen, "engine_split: the engine has already run or is already split");
        return ENGINE_ERR;
    }
    if (t->count < 1 || t->index < 0 || t->index >= t->count || t->count > 255) {
        snprintf(err, errlen, "process %d of %d: not a valid split (1 to 255 processes)", t->index,
                 t->count);
        return ENGINE_ERR;
    }
    if (engine_split_fits(e->cfg.nodes, t->count, err, errlen)) return ENGINE_ERR;
    if (e->delay) {
        snprintf(err, errlen, "--pct-points cannot be split over processes: its delay points "
                              "count the scheduling steps of the whole run (run it in one process)");
        return ENGINE_ERR;
    }
    if (e->obs.on_hook || e->break_fn) {
        snprintf(err, errlen, "--check races and break points need the whole run in one process");
        return ENGINE_ERR;
    }
    uint64_t l = e->rate.rdma_latency_ps < e->rate.barrier_latency_ps ? e->rate.rdma_latency_ps
                                                            : e->rate.barrier_latency_ps;
    if (l == 0) {
        snprintf(err, errlen, "rdma_latency_ns and barrier_latency_ns must be above 0 to split a "
                              "run: the smaller one is how far processes may run ahead");
        return ENGINE_ERR;
    }
    split_state *sp = calloc(1, sizeof *sp);
    if (!sp) { snprintf(err, errlen, "out of memory splitting the run"); return ENGINE_ERR; }
    sp->t = t;
    sp->lookahead = l;
    sp->out = calloc((size_t)t->count, sizeof *sp->out);
    sp->in = calloc((size_t)t->count, sizeof *sp->in);
    sp->all = t->index == 0 ? calloc((size_t)t->count, sizeof *sp->all) : NULL;
    sp->send = calloc((size_t)t->count, sizeof *sp->send);
    sp->recv = calloc((size_t)t->count, sizeof *sp->recv);
    sp->streams = calloc((size_t)t->count, sizeof *sp->streams);
    sp->out_min = UINT64_MAX;
    if (!sp->out || !sp->in || (t->index == 0 && !sp->all) || !sp->send || !sp->recv ||
        !sp->streams)
        abort();
    e->split = sp;
    int first, end;
    engine_split_nodes(e->cfg.nodes, t->count, t->index, &first, &end);
    e->own_first = first * e->cfg.npus_per_node;
    e->own_end = end * e->cfg.npus_per_node;
    return ENGINE_OK;
}

void eng_split_free(engine *e) {
    split_state *sp = e->split;
    if (!sp) return;
    for (int q = 0; q < sp->t->count; q++) {
        engine_buf_free(&sp->out[q]);
        engine_buf_free(&sp->in[q]);
        engine_buf_free(&sp->send[q]);
        engine_buf_free(&sp->recv[q]);
        if (sp->all) engine_buf_free(&sp->all[q]);
    }
    free(sp->out);
    free(sp->in);
    free(sp->send);
    free(sp->recv);
    free(sp->all);
    engine_buf_free(&sp->report);
    eng_capture_free(&sp->cap);
    if (sp->merge) eng_merger_free(sp->merge);
    free(sp->streams);
    engine_buf_free(&sp->parts);
    free(sp);
    e->split = NULL;
}

int engine_split_record(engine *e, const engine_split_sink *sink, char *err, size_t errlen) {
    split_state *sp = e->split;
    if (!sp || e->running) {
        snprintf(err, errlen, "engine_split_record: split the engine first, before it runs");
        return ENGINE_ERR;
    }
    sp->sink = *sink;
    sp->record_here = 1;
    return ENGINE_OK;
}

/* ------------------------------------------------------------ messages */
/* An RDMA op as it crosses: what the destination needs to book its rx,
 * land the bytes, emit the done event and send the ack. */
typedef struct wire_rdma {
    int32_t op, kind, rank, core_index, pipe, width, atomic_dtype, dst_rank, peer, src_xfer;
    uint32_t track, object, site, has_flight;
    int64_t value;
    uint64_t dst_raw, src_raw, bytes, dst_off, issue_seq, start, key, tx_end, arrive_at;
} wire_rdma;

typedef struct wire_ack {
    uint32_t xfer;
    uint64_t time, done_seq;
} wire_ack;

typedef struct wire_barrier {
    int32_t launch, type;
    uint32_t track1;
    uint64_t time, seq;
} wire_barrier;

void eng_split_send_arrival(engine *e, xfer *x) {
    engine_buf *b = &e->split->out[owner_of_rank(e, x->dst_rank)];
    wire_rdma w = {x->op, x->kind, x->rank, x->core_index, x->pipe, x->width, x->atomic_dtype,
                   x->dst_rank, x->peer, (int32_t)(x - e->xfers), x->track, x->object, x->site,
                   x->op != OP_ATOMIC_ADD && x->bytes, x->value, x->dst_raw, x->src_raw,
                   x->bytes, x->dst_off, x->issue_seq, x->start, x->key, x->tx_end, x->arrive_at};
    uint8_t tag = 'A';
    if (x->arrive_at < e->split->out_min) e->split->out_min = x->arrive_at;
    engine_buf_put(b, &tag, 1);
    engine_buf_put(b, &w, sizeof w);
    /* the NIC reads the source now, at tx begin: these bytes are what lands */
    if (w.has_flight) eng_seg_pack(x->sseg, eng_seg_off(x->sseg, x->src), x->bytes, b);
}

void eng_split_send_ack(engine *e, xfer *x, uint64_t done_seq) {
    engine_buf *b = &e->split->out[owner_of_rank(e, x->rank)];
    wire_ack w = {(uint32_t)x->origin_xfer, x->end + e->rate.rdma_latency_ps, done_seq};
    uint8_t tag = 'K';
    if (w.time < e->split->out_min) e->split->out_min = w.time;
    engine_buf_put(b, &tag, 1);
    engine_buf_put(b, &w, sizeof w);
}

void eng_split_send_barrier(core *c) {
    engine *e = c->e;
    split_state *sp = e->split;
    wire_barrier w = {c->launch, c->is_aic, eng_track(e, c, PIPE_S) + 1, c->now, c->last_seq};
    uint8_t tag = 'B';
    if (w.time < sp->out_min) sp->out_min = w.time;
    for (int q = 0; q < sp->t->count; q++) {
        if (q == sp->t->index) continue;
        engine_buf_put(&sp->out[q], &tag, 1);
        engine_buf_put(&sp->out[q], &w, sizeof w);
    }
}

static int deliver_arrival(engine *e, int from, reader *r) {
    wire_rdma w;
    get(r, &w, sizeof w);
    if (r->bad || !eng_local_rank(e, w.dst_rank)) return -1;
    xfer *x = eng_xfer_new(e);
    x->op = w.op; x->kind = w.kind; x->rank = w.rank; x->core_index = w.core_index;
    x->pipe = w.pipe; x->width = w.width; x->atomic_dtype = w.atomic_dtype;
    x->dst_rank = w.dst_rank; x->peer = w.peer; x->origin_xfer = w.src_xfer;
    x->track = w.track; x->object = w.object; x->site = tag_site(from, w.site);
    x->value = w.value; x->dst_raw = w.dst_raw; x->src_raw = w.src_raw; x->bytes = w.bytes;
    x->dst_off = w.dst_off; x->issue_seq = tag_seq(from, w.issue_seq); x->start = w.start;
    x->key = w.key; x->tx_end = w.tx_end; x->arrive_at = w.arrive_at; x->rdma = 1;
    x->dst = eng_gm_at(e, (gm_t){w.dst_raw}, w.bytes, &x->dseg);
    if (!x->dst) return -1;
    x->src = x->dst;   /* never read: what lands is the flight */
    x->sseg = x->dseg;
    if (w.has_flight) {
        uint8_t *host = malloc(w.bytes);
        if (!host) abort();
        eng_seg_init(&x->flight, host, w.bytes);
        size_t used = eng_seg_unpack(&x->flight, 0, w.bytes, r->p + r->at, r->n - r->at);
        if (!used) return -1;
        r->at += used;
        x->in_flight = 1;
    }
    eng_push(e, x->arrive_at, x->key, Q_RDMA_ARRIVE, (uint32_t)(x - e->xfers));
    return 0;
}

static int deliver_ack(engine *e, int from, reader *r) {
    wire_ack w;
    get(r, &w, sizeof w);
    if (r->bad || w.xfer >= (uint32_t)e->n_xfers) return -1;
    xfer *x = &e->xfers[w.xfer];
    if (!x->rdma || !eng_local_rank(e, x->rank)) return -1;
    x->done_seq = tag_seq(from, w.done_seq);
    eng_push(e, w.time, x->key, Q_RDMA_ACK, w.xfer);
    return 0;
}

static int deliver_barrier(engine *e, int from, reader *r) {
    wire_barrier w;
    get(r, &w, sizeof w);
    if (r->bad || w.launch < 0 || w.launch >= e->n_launches || (w.type != 0 && w.type != 1))
        return -1;
    eng_barrier_arrival(e, &e->launches[w.launch], w.type, w.time, tag_seq(from, w.seq), w.track1);
    return 0;
}

/* What the other processes sent last window, in process order. */
static int deliver(engine *e, char *err, size_t errlen) {
    split_state *sp = e->split;
    for (int q = 0; q < sp->t->count; q++) {
        reader r = {sp->in[q].p, sp->in[q].n, 0, 0};
        while (r.at < r.n) {
            uint8_t tag = r.p[r.at++];
            int rc = tag == 'A' ? deliver_arrival(e, q, &r)
                   : tag == 'K' ? deliver_ack(e, q, &r)
                   : tag == 'B' ? deliver_barrier(e, q, &r) : -1;
            if (rc) {
                snprintf(err, errlen, "a message from process %d is corrupt (tag %u at byte %zu)",
                         q, tag, r.at - 1);
                return ENGINE_ERR;
            }
        }
        sp->in[q].n = 0;
    }
    return ENGINE_OK;
}

/* ------------------------------------------------------------ windows */
/* After each window every process sends every other one message (one
 * all-to-all): a header, then what the window made for that process. The
 * header says what the next window needs agreed: no event of the sender,
 * nor any it sent, is earlier than next (its queue's head, or the earliest
 * message of the window, whichever comes first: a message lands no earlier
 * than its time), and whether a core of it faulted, a stop was asked or
 * its merge failed. Every process reduces the headers itself, so a window
 * costs one exchange instead of one per purpose (two reductions, the
 * skeletons, the parts, the messages: eight collectives each window before
 * issue 29's split work). next may be below the true earliest time (an
 * arrival's booking, a barrier's release come later): the window is then
 * shorter, never wrong, and the events are the same whatever the windows. */
typedef struct win_head {
    uint64_t next;
    uint64_t flags[3];             /* faulted, stop asked, merge failed */
    uint64_t stream_n, out_n, parts_n;
} win_head;

/* Recorded where it runs: every process merges the window, the others'
 * skeletons and its own stream (or skeleton, when its observer renumbers
 * the events it took as made), so its observer gets its own events
 * numbered as one process numbers them; then what the sink hands in goes
 * to process 0, with the next window's message (final: at once, by a
 * gather, after the run's last window and its end event). */
static int parts_to_zero(engine *e, int final, char *err, size_t errlen) {
    split_state *sp = e->split;
    sp->sink.window(sp->sink.ctx, eng_merger_events(sp->merge), final, &sp->parts);
    if (!final) return ENGINE_OK;
    if (sp->t->gather(sp->t->ctx, &sp->parts, sp->all, err, errlen)) {
        sp->down = 1;
        return ENGINE_ERR;
    }
    sp->parts.n = 0;
    for (int q = 0; sp->all && q < sp->t->count; q++) {
        sp->sink.receive(sp->sink.ctx, q, sp->all[q].p, sp->all[q].n);
        sp->all[q].n = 0;
    }
    return ENGINE_OK;
}

/* What this process sends q after the window: the header; the stream part
 * q merges (the skeleton, recorded where it runs; the whole stream to
 * process 0 when only it merges); the messages for q; the parts for
 * process 0. */
static void pack_for(split_state *sp, int q, const win_head *mine, engine_buf *b) {
    int me = sp->t->index;
    const engine_buf *stream = !sp->ship ? NULL
                               : sp->record_here ? (q != me ? &sp->cap.skel : NULL)
                               : (q == 0 && me != 0 ? &sp->cap.stream : NULL);
    win_head h = *mine;
    h.stream_n = stream ? stream->n : 0;
    h.out_n = sp->out[q].n;
    h.parts_n = q == 0 && sp->record_here ? sp->parts.n : 0;
    b->n = 0;
    engine_buf_put(b, &h, sizeof h);
    if (h.stream_n) engine_buf_put(b, stream->p, stream->n);
    engine_buf_put(b, sp->out[q].p, sp->out[q].n);
    if (h.parts_n) engine_buf_put(b, sp->parts.p, sp->parts.n);
}

/* The window's one exchange (above), then what follows from it: the merge
 * (on every process recorded where it runs, else on process 0), the parts
 * process 0 receives, and with take_messages the messages delivered into
 * the queues; agreed[0] the next window's earliest time (at or below the
 * true one), agreed[1..3] the flags, over all processes. */
static int swap_window(engine *e, int take_messages, uint64_t agreed[4], char *err,
                       size_t errlen) {
    split_state *sp = e->split;
    int me = sp->t->index, count = sp->t->count;
    if (sp->ship) eng_capture_window_end(&sp->cap, e->outcome == OUTCOME_FAULT);
    win_head mine;
    memset(&mine, 0, sizeof mine);
    mine.next = e->heap_n ? e->heap[0].time : UINT64_MAX;
    if (sp->out_min < mine.next) mine.next = sp->out_min;
    mine.flags[0] = e->outcome == OUTCOME_FAULT;
    mine.flags[1] = e->outcome == OUTCOME_INTERRUPTED || e->stop_requested;
    mine.flags[2] = sp->failed[0] != 0;
    for (int q = 0; q < count; q++) pack_for(sp, q, &mine, &sp->send[q]);
    if (sp->t->alltoall(sp->t->ctx, sp->send, sp->recv, err, errlen)) {
        sp->down = 1;
        return ENGINE_ERR;
    }
    for (int q = 0; q < count; q++) sp->out[q].n = 0;
    sp->parts.n = 0;
    sp->out_min = UINT64_MAX;
    agreed[0] = UINT64_MAX;
    agreed[1] = agreed[2] = agreed[3] = 0;
    for (int q = 0; q < count; q++) {
        const engine_buf *r = &sp->recv[q];
        win_head h;
        if (r->n >= sizeof h) memcpy(&h, r->p, sizeof h);
        if (r->n < sizeof h || h.stream_n > r->n - sizeof h ||
            h.out_n > r->n - sizeof h - h.stream_n ||
            h.parts_n != r->n - sizeof h - h.stream_n - h.out_n) {
            snprintf(err, errlen, "process %d's message after a window is corrupt", q);
            return ENGINE_ERR;   /* as a corrupt message is (deliver): not a broken job */
        }
        if (h.next < agreed[0]) agreed[0] = h.next;
        for (int k = 0; k < 3; k++)
            if (h.flags[k] > agreed[k + 1]) agreed[k + 1] = h.flags[k];
        const uint8_t *at = r->p + sizeof h;
        sp->streams[q] = (engine_buf){(uint8_t *)at, (size_t)h.stream_n, 0};
        at += h.stream_n;
        sp->in[q].n = 0;
        if (take_messages) engine_buf_put(&sp->in[q], at, (size_t)h.out_n);
        at += h.out_n;
        if (h.parts_n && me == 0) sp->sink.receive(sp->sink.ctx, q, at, (size_t)h.parts_n);
    }
    if (sp->ship && (sp->record_here || me == 0)) {
        sp->streams[me] = sp->cap.direct.on_event ? sp->cap.skel : sp->cap.stream;
        if (sp->merge && !sp->failed[0])
            (void)eng_merger_window(sp->merge, sp->streams, sp->failed, sizeof sp->failed);
    }
    memset(sp->streams, 0, (size_t)count * sizeof *sp->streams);
    eng_capture_reset(&sp->cap);
    if (sp->record_here && parts_to_zero(e, 0, err, errlen)) return ENGINE_ERR;
    return take_messages ? deliver(e, err, errlen) : ENGINE_OK;
}

/* After a reduction of `failed` flags: every process returns the error. */
static int merge_failed(engine *e, uint64_t any, char *err, size_t errlen) {
    if (!any) return 0;
    if (e->split->failed[0]) snprintf(err, errlen, "%s", e->split->failed);
    else snprintf(err, errlen, "process 0 could not merge the event streams");
    return 1;
}

static int reduce(engine *e, uint64_t *v, int n, int op, char *err, size_t errlen) {
    const engine_transport *t = e->split->t;
    if (t->allreduce(t->ctx, v, n, op, err, errlen) == 0) return 0;
    e->split->down = 1;
    return ENGINE_ERR;
}

/* Every process must have set up the same run: same declarations. */
static int same_setup(engine *e, char *err, size_t errlen) {
    uint64_t lo[4] = {e->n_strings, e->n_sites, e->n_objects, e->n_origins};
    uint64_t hi[4] = {lo[0], lo[1], lo[2], lo[3]};
    if (reduce(e, lo, 4, ENGINE_REDUCE_MIN, err, errlen) ||
        reduce(e, hi, 4, ENGINE_REDUCE_MAX, err, errlen))
        return ENGINE_ERR;
    if (memcmp(lo, hi, sizeof lo)) {
        snprintf(err, errlen, "the processes set up different runs (strings, sites, objects or "
                              "inputs differ): every process must be given the same command line");
        return ENGINE_ERR;
    }
    return ENGINE_OK;
}

static int run_windows(engine *e, char *err, size_t errlen) {
    split_state *sp = e->split;
    /* the first window by reduction; each next one from the last swap */
    uint64_t agreed[4] = {e->heap_n ? e->heap[0].time : UINT64_MAX, 0,
                          e->outcome == OUTCOME_INTERRUPTED || e->stop_requested, 0};
    if (reduce(e, agreed, 1, ENGINE_REDUCE_MIN, err, errlen) ||
        reduce(e, agreed + 1, 3, ENGINE_REDUCE_MAX, err, errlen))
        return ENGINE_ERR;
    for (;;) {
        uint64_t next = agreed[0];
        if (merge_failed(e, agreed[3], err, errlen)) return ENGINE_ERR;
        if (agreed[1]) {
            /* the faulting process stopped mid-window, the others ran the
             * window out; the merge cut the stream at the fault */
            sp->faulted_here = e->outcome == OUTCOME_FAULT;
            sp->fault_time = e->now;
            if (e->outcome == OUTCOME_RUNNING) eng_stop(e, OUTCOME_FAULT, "a core faulted");
            return ENGINE_OK;
        }
        if (agreed[2]) {
            eng_stop(e, OUTCOME_INTERRUPTED, "the run was stopped on request (Ctrl-C or SIGTERM)");
            return ENGINE_OK;
        }
        if (next == UINT64_MAX) return ENGINE_OK;
        uint64_t wd = e->cfg.watchdog_ps;
        if (wd && next > wd) {
            char msg[ENGINE_ERRLEN];
            snprintf(msg, sizeof msg,
                     "virtual time passed %.3f us with cores still running (livelock?)",
                     (double)wd / 1e6);
            e->now = wd;
            eng_stop(e, OUTCOME_WATCHDOG, msg);
            return ENGINE_OK;
        }
        uint64_t end = next > UINT64_MAX - sp->lookahead ? UINT64_MAX : next + sp->lookahead;
        if (wd && end > wd + 1) end = wd + 1;
        e->window_end = end;
        eng_run_loop(e);
        if (swap_window(e, 1, agreed, err, errlen)) return ENGINE_ERR;
    }
}

/* What `record` prints about the run is the whole run's: the memory held
 * is summed, and at a deadlock or watchdog stop every process packs its
 * unfinished cores for process 0, which names each writer by its merged
 * seq (in process order, which is core order). */
static int sum_memory(engine *e, char *err, size_t errlen) {
    split_state *sp = e->split;
    engine_memory m;
    engine_memory_get(e, &m);
    uint64_t v[3] = {m.reference_bytes, m.reference_extents, m.literal_bytes};
    if (reduce(e, v, 3, ENGINE_REDUCE_SUM, err, errlen)) return ENGINE_ERR;
    sp->memory = m;
    sp->memory.reference_bytes = v[0];
    sp->memory.reference_extents = v[1];
    sp->memory.literal_bytes = v[2];
    sp->memory_summed = 1;
    return ENGINE_OK;
}

typedef struct seq_of_part {
    const struct eng_merger *merge;
    int q;
} seq_of_part;

static uint64_t merged_seq(void *ctx, uint64_t local) {
    const seq_of_part *p = ctx;
    return p->merge ? eng_merger_seq(p->merge, p->q, local) : 0;
}

/* Gathers one packed buffer from every process to process 0 (all[q]). */
static int gather_packed(engine *e, void (*pack)(const engine *, engine_buf *), char *err,
                         size_t errlen) {
    split_state *sp = e->split;
    engine_buf mine = {0};
    pack(e, &mine);
    int rc = sp->t->gather(sp->t->ctx, &mine, sp->all, err, errlen);
    engine_buf_free(&mine);
    if (rc) sp->down = 1;
    return rc ? ENGINE_ERR : ENGINE_OK;
}

static void report_cut(engine_buf *report, const char *what, int q) {
    char cut[96];
    int n = snprintf(cut, sizeof cut, "  (process %d's %s arrived cut)\n", q, what);
    engine_buf_put(report, cut, (size_t)n);
}

/* A writer may be a core of another process: its role comes from there. */
static int gather_report(engine *e, engine_outcome outcome, char *err, size_t errlen) {
    split_state *sp = e->split;
    if (outcome != OUTCOME_DEADLOCK && outcome != OUTCOME_WATCHDOG) return ENGINE_OK;
    if (gather_packed(e, eng_report_pack_roles, err, errlen)) return ENGINE_ERR;
    size_t n = (size_t)e->n_ranks * (size_t)e->cores_per_rank;
    char **roles = sp->all ? calloc(n, sizeof *roles) : NULL;
    if (sp->all && !roles) abort();
    for (int q = 0; sp->all && q < sp->t->count; q++)
        if (eng_report_roles(e, &sp->all[q], roles)) report_cut(&sp->report, "roles", q);
    int rc = gather_packed(e, eng_report_pack, err, errlen);
    for (int q = 0; !rc && sp->all && q < sp->t->count; q++) {
        seq_of_part part = {sp->merge, q};
        if (eng_report_format(e, (const char *const *)roles, &sp->all[q], merged_seq, &part,
                              &sp->report) < 0)
            report_cut(&sp->report, "report", q);
    }
    for (size_t i = 0; roles && i < n; i++) free(roles[i]);
    free(roles);
    sp->reported = !rc && sp->all;
    return rc;
}

const engine_buf *eng_split_report(const engine *e) {
    return e->split && e->split->reported ? &e->split->report : NULL;
}

int eng_split_memory(const engine *e, engine_memory *m) {
    if (!e->split || !e->split->memory_summed) return 0;
    *m = e->split->memory;
    return 1;
}

static void pack_fault(const engine *e, engine_buf *b) {
    const split_state *sp = e->split;
    uint64_t t = sp->faulted_here ? sp->fault_time : UINT64_MAX;
    engine_buf_put(b, &t, sizeof t);
    engine_buf_put(b, e->message, strlen(e->message));
}

/* Without a merge: the earliest fault's time for everyone, and its message
 * for process 0 (at equal times the lower process, whose cores come first). */
static int first_fault(engine *e, uint64_t *time, char *err, size_t errlen) {
    split_state *sp = e->split;
    uint64_t t[1] = {sp->faulted_here ? sp->fault_time : UINT64_MAX};
    if (reduce(e, t, 1, ENGINE_REDUCE_MIN, err, errlen) ||
        gather_packed(e, pack_fault, err, errlen))
        return ENGINE_ERR;
    *time = t[0];
    for (int q = 0; sp->all && q < sp->t->count; q++) {
        const engine_buf *b = &sp->all[q];
        uint64_t tq;
        if (b->n < sizeof tq) continue;
        memcpy(&tq, b->p, sizeof tq);
        if (tq != t[0]) continue;
        snprintf(e->message, sizeof e->message, "%.*s", (int)(b->n - sizeof tq), b->p + sizeof tq);
        break;
    }
    return ENGINE_OK;
}

/* The ending every process agrees on; the closing events (BLOCKED) go
 * through the merge in process order, which is core order. */
static int finish(engine *e, engine_result *res, char *err, size_t errlen) {
    split_state *sp = e->split;
    uint64_t mx[1] = {e->now};
    uint64_t sum[3] = {(uint64_t)e->finished_cores, (uint64_t)e->started_cores,
                       (uint64_t)eng_blocked_count(e)};
    if (reduce(e, mx, 1, ENGINE_REDUCE_MAX, err, errlen) ||
        reduce(e, sum, 3, ENGINE_REDUCE_SUM, err, errlen))
        return ENGINE_ERR;
    if (e->outcome == OUTCOME_RUNNING) {
        e->now = mx[0];
        if (sum[0] == sum[1]) {
            eng_stop(e, OUTCOME_COMPLETED, "completed");
        } else {
            char msg[ENGINE_ERRLEN];
            snprintf(msg, sizeof msg, "%llu core%s blocked and nothing left to happen at %.3f us",
                     (unsigned long long)sum[2], sum[2] == 1 ? "" : "s", (double)e->now / 1e6);
            eng_stop(e, OUTCOME_DEADLOCK, msg);
        }
    } else if (e->outcome == OUTCOME_INTERRUPTED) {
        e->now = mx[0];
    }
    if (e->outcome == OUTCOME_DEADLOCK || e->outcome == OUTCOME_WATCHDOG) eng_emit_blocked(e);
    int n = e->n_ranks * e->cores_per_rank;
    for (int i = 0; i < n; i++) {
        core *c = &e->cores[i];
        if (c->launch >= 0 && c->status == CS_BLOCKED && e->now > c->wait_begin_time)
            e->stall_ps += e->now - c->wait_begin_time;
    }
    uint64_t ignored[4];
    if (sp->ship && swap_window(e, 0, ignored, err, errlen)) return ENGINE_ERR;
    /* events: each process counted its own (seq is local until merged) */
    uint64_t stall[3] = {e->stall_ps, sp->failed[0] != 0, e->seq};
    if (reduce(e, stall, 3, ENGINE_REDUCE_SUM, err, errlen)) return ENGINE_ERR;
    if (merge_failed(e, stall[1], err, errlen)) return ENGINE_ERR;
    /* process 0 knows the run's ending; everyone gets its figures */
    uint64_t end_time = e->now;
    engine_outcome outcome = e->outcome;
    if (sp->merge) {
        uint64_t cut_time;
        const char *why;
        if (eng_merger_cut(sp->merge, &cut_time, &why)) {
            outcome = OUTCOME_FAULT;
            end_time = cut_time;
            snprintf(e->message, sizeof e->message, "%s", why);
        }
        eng_merger_end(sp->merge, end_time, outcome);
        if (sp->record_here && parts_to_zero(e, 1, err, errlen)) return ENGINE_ERR;
    }
    uint64_t fig[3] = {sp->merge ? (uint64_t)outcome : 0, sp->merge ? end_time : 0,
                       sp->merge ? eng_merger_events(sp->merge) : 0};
    if (!sp->ship) {
        /* nobody observes (--no-trace): the same figures without a merge,
         * every event once plus the run's end. A fault ends at the first
         * fault's time with its message, but is not cut: the events the
         * others ran past it in its window are counted */
        fig[0] = (uint64_t)e->outcome;
        fig[1] = e->now;
        fig[2] = stall[2] + 1;
        if (e->outcome == OUTCOME_FAULT && first_fault(e, &fig[1], err, errlen)) return ENGINE_ERR;
    }
    if (reduce(e, fig, 3, ENGINE_REDUCE_MAX, err, errlen)) return ENGINE_ERR;
    res->outcome = (engine_outcome)fig[0];
    res->end_time = fig[1];
    res->events = fig[2];
    res->stall_ps = stall[0];
    e->outcome = res->outcome;
    e->now = res->end_time;
    snprintf(res->message, sizeof res->message, "%s", e->message);
    if (sum_memory(e, err, errlen) || gather_report(e, res->outcome, err, errlen))
        return ENGINE_ERR;
    return ENGINE_OK;
}

int eng_split_run(engine *e, engine_result *res, char *err, size_t errlen) {
    split_state *sp = e->split;
    if (same_setup(e, err, errlen)) return ENGINE_ERR;
    sp->final = e->obs;
    /* Streams cross only when process 0 has someone to show them to: a run
     * without a trace sends nothing but the messages and the reductions. */
    const engine_observer *f = &sp->final;
    uint64_t ship[1] = {sp->record_here || (sp->t->index == 0 &&
                                            (f->on_event || f->on_segment || f->on_string ||
                                             f->on_site || f->on_object))};
    uint64_t here[2] = {(uint64_t)sp->record_here, (uint64_t)sp->record_here};
    if (reduce(e, ship, 1, ENGINE_REDUCE_MAX, err, errlen) ||
        reduce(e, here, 1, ENGINE_REDUCE_MIN, err, errlen) ||
        reduce(e, here + 1, 1, ENGINE_REDUCE_MAX, err, errlen))
        return ENGINE_ERR;
    if (here[0] != here[1]) {
        snprintf(err, errlen, "engine_split_record was called on some processes only");
        return ENGINE_ERR;
    }
    sp->ship = ship[0] != 0;
    if (sp->record_here)
        sp->merge = eng_merger_new(&sp->final, sp->t->count, sp->t->index, e->n_strings,
                                   e->n_sites);
    else if (sp->t->index == 0 && sp->ship)
        sp->merge = eng_merger_new(&sp->final, sp->t->count, -1, e->n_strings, e->n_sites);
    sp->cap.skeleton = sp->record_here;
    /* an observer that renumbers takes this process's events as they are
     * made: the merge reads this process's skeleton, as the others do */
    if (sp->record_here && f->on_event && f->on_renumber) {
        sp->cap.direct = *f;
        eng_merger_direct(sp->merge);
    }
    if (sp->ship) e->obs = eng_capture_observer(&sp->cap);
    else memset(&e->obs, 0, sizeof e->obs);
    int rc = eng_start_cores(e, err, errlen);
    if (!rc) rc = run_windows(e, err, errlen);
    if (!rc) rc = finish(e, res, err, errlen);
    if (rc && sp->down) {
        /* a process died or a signal came while waiting: nothing more can
         * be agreed, so this process ends the run here as interrupted and
         * process 0 closes the stream merged so far (its trace stays a
         * readable, interrupted run) */
        snprintf(e->message, sizeof e->message, "the run was interrupted: %s", err);
        e->outcome = OUTCOME_INTERRUPTED;
        if (sp->merge) eng_merger_end(sp->merge, eng_merger_last_time(sp->merge),
                                      OUTCOME_INTERRUPTED);
        res->outcome = OUTCOME_INTERRUPTED;
        res->end_time = sp->merge ? eng_merger_last_time(sp->merge) : e->now;
        res->events = sp->merge ? eng_merger_events(sp->merge) : 0;
        res->stall_ps = e->stall_ps;
        snprintf(res->message, sizeof res->message, "%s", e->message);
        rc = ENGINE_OK;
    }
    e->obs = sp->final;
    return rc;
}

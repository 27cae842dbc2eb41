/*
 * rdma.c - one RDMA operation over RoCE, as a reliable connection moves it.
 *
 * An operation (RdmaWrite, RdmaAtomicAdd, a BatchWrite task to another
 * node) goes through four steps, each a queue item with the posting core's
 * tie key:
 *
 *   post      (source core)  the source NIC's tx is booked from the post
 *                            time; the issue event; the op is queued.
 *   tx begin  (source rank)  Q_RDMA_TX: the NIC reads the source bytes (they
 *                            travel as references where they only move).
 *   arrival   (destination)  Q_RDMA_ARRIVE, one wire latency after tx begin:
 *                            the destination NIC's rx is booked in arrival
 *                            order, which fixes the completion time.
 *   completion(destination)  Q_XFER: the bytes land, the done event, pollers
 *                            wake (pipes.c, eng_xfer_complete).
 *   ack       (source rank)  Q_RDMA_ACK, one wire latency after completion:
 *                            RdmaQuiet and the end of the kernel wait for it.
 *
 * Uncontended, completion is post + bytes/bandwidth + latency. Operations to
 * one peer arrive and complete in posting order (arrival and completion are
 * kept nondecreasing per (source, destination) pair). No step reads or
 * writes another rank's state sooner than one wire latency after the step
 * that caused it: that latency is the lookahead of a run split over
 * processes, and the reason rx is booked at the destination, not at post.
 */
#include "internal.h"

#include <stdlib.h>

/* An op to a different-numbered NPU of another server leaves its plane
 * (NPU i of every server shares plane i) and crosses the spine, where each
 * NPU gets a share, roce_cross_plane_gbytes_per_s, beside its NIC. */
static int off_plane(const engine *e, int a, int b) {
    return a % e->cfg.npus_per_node != b % e->cfg.npus_per_node;
}

/* Books the NIC r and, off the plane, the plane p beside it, each at its
 * first gap from start, as a transfer books a link and its ports; returns
 * when both are done and sets *d to the longer occupancy. */
static uint64_t book_nic(engine *e, resource *r, resource *p, int cross, uint64_t start,
                         uint64_t bytes, uint64_t *d) {
    uint64_t end = resource_reserve(r, e->now, start, bytes);
    *d = resource_duration(r, bytes);
    if (cross) {
        uint64_t pend = resource_reserve(p, e->now, start, bytes), pd = resource_duration(p, bytes);
        if (pend > end) end = pend;
        if (pd > *d) *d = pd;
    }
    return end;
}

/* Books the source NIC and queues the op's tx begin. start: when the NIC
 * may start (the post time, or the AICPU's slot for a BatchWrite task). */
void eng_rdma_post(core *c, xfer *x, uint64_t start) {
    engine *e = c->e;
    rank_state *rs = &e->ranks[c->rank];
    uint64_t d;
    uint64_t t1 = book_nic(e, &rs->nic_tx, &rs->plane_tx, off_plane(e, c->rank, x->dst_rank),
                           start, x->bytes, &d);
    uint64_t tx_begin = t1 - d;
    uint64_t tx_end = start + eng_jitter(c, t1 - start);
    if (tx_end < tx_begin) tx_end = tx_begin;
    uint64_t arrive = tx_begin + e->rate.rdma_latency_ps;
    uint64_t *qp = &e->qp_arrive_at[(size_t)c->rank * (size_t)e->n_ranks + (size_t)x->dst_rank];
    if (arrive < *qp) arrive = *qp;   /* RC: never overtakes an earlier op to this peer */
    *qp = arrive;
    x->rank = c->rank;
    x->core_index = c->index;
    x->track = eng_track(e, c, x->pipe);
    x->start = start;
    x->tx_end = tx_end;
    x->arrive_at = arrive;
    x->rdma = 1;
    x->key = eng_core_key(c);
    eng_xfer_issue_event(e, x, c->now);
    eng_push(e, tx_begin, x->key, Q_RDMA_TX, (uint32_t)(x - e->xfers));
    c->rdma_outstanding++;
    c->last_seq = x->issue_seq;
}

/* The NIC reads the source: what the bytes are at this moment is what lands. */
void eng_rdma_tx(engine *e, xfer *x) {
    if (!eng_local_rank(e, x->dst_rank)) {   /* split run: it arrives in another process */
        eng_split_send_arrival(e, x);
        return;
    }
    if (x->op != OP_ATOMIC_ADD && x->bytes) {
        uint8_t *host = malloc(x->bytes);
        if (!host) abort();
        eng_seg_init(&x->flight, host, x->bytes);
        eng_seg_copy(e, &x->flight, 0, x->sseg, eng_seg_off(x->sseg, x->src), x->bytes);
        x->in_flight = 1;
    }
    eng_push(e, x->arrive_at, x->key, Q_RDMA_ARRIVE, (uint32_t)(x - e->xfers));
}

void eng_rdma_arrive(engine *e, xfer *x) {
    rank_state *rs = &e->ranks[x->dst_rank];
    uint64_t d;
    uint64_t rx = book_nic(e, &rs->nic_rx, &rs->plane_rx, off_plane(e, x->rank, x->dst_rank), e->now,
                           x->bytes, &d);
    uint64_t end = x->tx_end + e->rate.rdma_latency_ps;
    if (rx > end) end = rx;
    uint64_t *qp = &e->qp_done_at[(size_t)x->rank * (size_t)e->n_ranks + (size_t)x->dst_rank];
    if (end < *qp) end = *qp;
    *qp = end;
    x->end = end;
    eng_push(e, end, x->key, Q_XFER, (uint32_t)(x - e->xfers));
}

/* The landed bytes, from what the NIC read at tx begin. */
void eng_rdma_land(engine *e, xfer *x) {
    if (!x->in_flight) return;
    eng_seg_copy(e, x->dseg, eng_seg_off(x->dseg, x->dst), &x->flight, 0, x->bytes);
    eng_seg_free(&x->flight);
    free(x->flight.host);
    x->flight.host = NULL;
    x->in_flight = 0;
}

/* After the done event: the ack travels back to the source. */
void eng_rdma_completed(engine *e, xfer *x, uint64_t done_seq) {
    if (!eng_local_rank(e, x->rank)) {   /* split run: the source is in another process */
        eng_split_send_ack(e, x, done_seq);
        eng_xfer_free(e, x);
        return;
    }
    x->done_seq = done_seq;
    eng_push(e, x->end + e->rate.rdma_latency_ps, x->key, Q_RDMA_ACK, (uint32_t)(x - e->xfers));
}

void eng_rdma_ack(engine *e, xfer *x) {
    core *c = eng_core(e, x->rank, x->core_index);
    c->pipes[x->pipe].last_done_seq = x->done_seq;
    c->pipes[x->pipe].last_done_track = x->track + 1;
    c->rdma_outstanding--;
    if (!c->rdma_outstanding && c->status == CS_BLOCKED && c->wait == WAIT_RDMA)
        eng_wake(e, c, e->now, 0, x->done_seq, x->track + 1);
    eng_xfer_free(e, x);
}

/* RdmaQuiet and the kernel's end: block until every posted op is acked.
 * Returns at once when none is outstanding. */
void eng_rdma_wait_acks(core *c, uint32_t site, int emit_events) {
    engine *e = c->e;
    if (!c->rdma_outstanding) return;
    uint64_t begin = c->now;
    if (emit_events) {
        engine_event b = EV_INIT(c, EV_PIPE_WAIT_BEGIN, PIPE_S);
        b.time = c->now;
        b.sub = PIPE_NIC;
        b.aux = c->rdma_outstanding;
        b.site = site;
        c->wait_begin_seq = c->last_seq = eng_emit(e, &b);
    }
    eng_wait_on(c, WAIT_RDMA, site, c->rdma_outstanding);
    eng_block(c);
    if (!emit_events) return;
    e->stall_ps += c->now - begin;
    engine_event en = EV_INIT(c, EV_PIPE_WAIT_END, PIPE_S);
    en.time = c->now;
    en.sub = PIPE_NIC;
    en.site = site;
    en.link = c->wake_seq;
    en.peer = c->wake_track;
    c->last_seq = eng_emit(e, &en);
}

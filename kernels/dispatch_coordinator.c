/*
 * dispatch_coordinator.c - AICoreRDMACoordinator (seed 001 s5.2): ship the
 * RDMASenders' filled slots to the forwarders, in chunks.
 *
 * Core k serves the rings (channel c, node n) with (c * nodes + n) %
 * coordinators == k. At the start of a dispatch it writes each ring's
 * rdma_channel_meta (seed 003: per NVL peer the start and end of this
 * channel's tokens in that peer's stream, and the channel's start and end
 * towards the node), which tells the forwarder how many tokens to expect.
 * Then, whenever rdma_send_channel_tail has grown by a whole send chunk
 * (num_max_rdma_chunked_send_tokens) or reached the ring's total, it posts
 * one RdmaWrite of the new slots (two at the wrap) from the staging half
 * to the forwarder's receiving half and a remote atomic add on the
 * forwarder's rdma_channel_tail; the queue pair's ordering lands the tail
 * after the data. A second atomic add on the forwarder's per-channel
 * doorbell wakes its RDMA2HCCSForwarder. The ring of this rank's own node
 * needs no copy: the senders wrote the receiving half, only the tail moves.
 *
 * Waiting: one blocking wait on this core's doorbell (bumped by the
 * senders), or on the last unfinished ring's tail directly. Decision: at
 * the end it waits until every credit came back (head == tail), so the
 * ring is clean for the next dispatch and a lost credit shows up here, as
 * a hang, instead of as a smaller ring in a later dispatch.
 * Device code: device.h only.
 */
#include "dispatch_device.h"

/* Flags: MTE2_S 0, MTE3_S 0. */

#define MAX_RINGS (DISPATCH_MAX_CHANNELS * DISPATCH_MAX_NODES)

typedef struct coord_ring {
    int16_t c, n;
    int32_t total;
    int64_t base, last_sent;
    uint32_t id;
} coord_ring;

typedef struct coordinator {
    const dispatch_args *a;
    const dispatch_shape *sh;
    int me, my_node, k, disp;
    int lose_tail;        /* injected: the next tail add of inject ring is dropped */
    ring_notes notes;
} coordinator;

/* Seed 003 meta of ring (c, n), encoded -x-1, into meta_ub; counts is the
 * [C][R] then [C][N] channel counts of this rank. */
static void build_meta(const coordinator *co, local_t meta_ub, local_t counts, int c, int n) {
    const dispatch_shape *sh = co->sh;
    int R = sh->num_ranks, N = sh->nodes, P = sh->npus;
    uint32_t ch_node = (uint32_t)(sh->channels * R);
    for (int p = 0; p < DISPATCH_MAX_NVL_PEERS; p++) {
        int32_t start = 0, end = 0;
        if (p < P) {
            int d = n * P + p;
            for (int q = 0; q < c; q++) start += UbGet32(counts, (uint32_t)(q * R + d) * 4u);
            end = start + UbGet32(counts, (uint32_t)(c * R + d) * 4u);
        }
        UbSet32(meta_ub, (uint32_t)p * 4u, -start - 1);
        UbSet32(meta_ub, (uint32_t)(DISPATCH_MAX_NVL_PEERS + p) * 4u, -end - 1);
    }
    int32_t start = 0;
    for (int q = 0; q < c; q++) start += UbGet32(counts, (ch_node + (uint32_t)(q * N + n)) * 4u);
    int32_t end = start + UbGet32(counts, (ch_node + (uint32_t)(c * N + n)) * 4u);
    UbSet32(meta_ub, (uint32_t)(2 * DISPATCH_MAX_NVL_PEERS) * 4u, -start - 1);
    UbSet32(meta_ub, (uint32_t)(2 * DISPATCH_MAX_NVL_PEERS + 1) * 4u, -end - 1);
    ScalarCycles(2 * c * (P + 1));
}

static void write_meta(const coordinator *co, local_t meta_ub, int c, int n) {
    const dispatch_args *a = co->a;
    const dispatch_shape *sh = co->sh;
    int f = n * sh->npus + co->me % sh->npus;
    uint64_t ring = (uint64_t)c * (uint64_t)sh->nodes;
    gm_t remote = gm_add(gm_on_rank(a->rdma_channel_meta, f),
                         (int64_t)((ring + (uint64_t)co->my_node) * DISPATCH_META_BYTES));
    if (n == co->my_node) {
        DataCopyPadOut(remote, meta_ub, DISPATCH_META_BYTES);
    } else {
        gm_t staged = gm_add(gm_on_rank(a->rdma_channel_meta_send, co->me),
                             (int64_t)((ring + (uint64_t)n) * DISPATCH_META_BYTES));
        DataCopyPadOut(staged, meta_ub, DISPATCH_META_BYTES);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
        RdmaWrite(remote, staged, DISPATCH_META_BYTES);
    }
    SetFlag(MTE3_S, 0);   /* meta_ub is rebuilt for the next ring */
    WaitFlag(MTE3_S, 0);
}

static void ship(coordinator *co, coord_ring *r, int64_t to) {
    const dispatch_args *a = co->a;
    const dispatch_shape *sh = co->sh;
    int64_t amount = to - r->last_sent;
    int f = r->n * sh->npus + co->me % sh->npus;
    gm_t doorbell = dispatch_word(a->rdma_recv_doorbell, f, (uint64_t)r->c, 8);
    if (r->n == co->my_node) {
        RingAtomicAdd(r->id, 1, amount);
        AtomicAdd64(doorbell, amount);
    } else {
        for (int64_t from = r->last_sent; from < to;) {
            int64_t slot = from % sh->rdma_ring_tokens;
            int64_t cnt = to - from < sh->rdma_ring_tokens - slot ? to - from
                                                                  : sh->rdma_ring_tokens - slot;
            RdmaWrite(dispatch_rdma_slot(a, a->rdma_channel_data, f, r->c, co->my_node, slot),
                      dispatch_rdma_slot(a, a->rdma_channel_data_send, co->me, r->c, r->n, slot),
                      (uint64_t)cnt * sh->token_bytes);
            from += cnt;
        }
        int lost = co->lose_tail && a->inject_c == r->c && a->inject_n == r->n;
        if (lost) co->lose_tail = 0;   /* injected: this one tail update never leaves */
        else RingAtomicAdd(r->id, 1, amount);
        RdmaAtomicAdd(doorbell, amount);
    }
    r->last_sent = to;
}

/* Ships what the ring's tail makes shippable; returns 1 once finished. */
static int serve(coordinator *co, coord_ring *r) {
    const dispatch_shape *sh = co->sh;
    int64_t tail = GetValue64(dispatch_word(co->a->rdma_send_channel_tail, co->me,
                                            (uint64_t)r->c * (uint64_t)sh->nodes + (uint64_t)r->n,
                                            8));
    int64_t filled = tail - r->base;
    int64_t to = filled == r->total
                     ? tail
                     : r->base + filled / sh->rdma_send_chunk * sh->rdma_send_chunk;
    if (to > r->last_sent) ship(co, r, to);
    return r->last_sent == r->base + r->total;
}

void dispatch_rdma_coordinator(const dispatch_args *a, int disp, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    coordinator co = {.a = a, .sh = sh, .me = GetRank(), .disp = disp};
    co.my_node = co.me / sh->npus;
    co.k = GetBlockIdx() - sh->senders;
    co.lose_tail = sh->inject == DISPATCH_INJECT_LOST_TAIL && disp == sh->dispatches - 1 &&
                   co.me == a->inject_rank;
    int C = sh->channels, N = sh->nodes, R = sh->num_ranks;
    local_t meta_ub = ub_take(&ub, DISPATCH_META_BYTES);
    uint32_t count_ints = a->cl.total - a->cl.ch_rank;
    local_t counts = ub_take(&ub, (uint64_t)count_ints * 4);
    dispatch_copy_in(counts, gm_add(a->layout_counts[co.me], (int64_t)a->cl.ch_rank * 4),
                     (uint64_t)count_ints * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);

    coord_ring rings[MAX_RINGS];
    int nr = 0, pending = 0;
    for (int ring = co.k; ring < C * N; ring += sh->coordinators) {
        coord_ring *r = &rings[nr++];
        r->c = (int16_t)(ring / N);
        r->n = (int16_t)(ring % N);
        r->total = UbGet32(counts, (uint32_t)(C * R + ring) * 4u);
        r->base = (int64_t)disp * r->total;
        r->last_sent = r->base;
        r->id = dispatch_rdma_ring_id(a, co.me, r->c, r->n);
        build_meta(&co, meta_ub, counts, r->c, r->n);
        write_meta(&co, meta_ub, r->c, r->n);
        pending += r->total > 0;
    }
    gm_t doorbell = dispatch_word(a->coord_doorbell, co.me, (uint64_t)co.k, 8);
    int64_t seen = 0;
    while (pending > 0) {
        if (pending == 1) {
            /* One ring left: wait on its own tail, so a hang names it. */
            coord_ring *r = rings;
            while (r->last_sent == r->base + r->total) r++;
            int64_t next = r->last_sent + sh->rdma_send_chunk;
            if (next > r->base + r->total) next = r->base + r->total;
            dispatch_note_ring(&co.notes, r->c, r->n * sh->npus + co.me % sh->npus, -1,
                               r->last_sent, -1, -1);
            WaitGM64(dispatch_word(a->rdma_send_channel_tail, co.me,
                                   (uint64_t)r->c * (uint64_t)N + (uint64_t)r->n, 8),
                     COND_GE, next);
        } else {
            dispatch_note_doorbell(&co.notes, pending);
            seen = WaitGM64(doorbell, COND_GT, seen);
        }
        for (int i = 0; i < nr; i++)
            if (rings[i].total > 0 && rings[i].last_sent < rings[i].base + rings[i].total &&
                serve(&co, &rings[i]))
                pending--;
    }
    /* Every credit back before the ring counts as clean. */
    for (int i = 0; i < nr; i++) {
        coord_ring *r = &rings[i];
        if (r->total == 0) continue;
        int64_t end = r->base + r->total;
        int64_t head = GetValue64(dispatch_word(a->rdma_channel_head, co.me,
                                                (uint64_t)r->c * (uint64_t)N + (uint64_t)r->n, 8));
        if (head >= end) continue;
        dispatch_note_ring(&co.notes, r->c, r->n * sh->npus + co.me % sh->npus, head, end, head,
                           sh->rdma_ring_tokens - (end - head));
        RingWaitSpace(r->id, end, sh->rdma_ring_tokens);
    }
}

/*
 * dispatch_forwarder.c - AICoreRDMA2HCCSForwarder (seed 001 s5.3): move
 * tokens from the RDMA rings that end on this rank into the HCCS rings of
 * this node's destination ranks.
 *
 * The forwarder cores of channel c are c, c + channels, ...; core g of the
 * channel serves the NVL peers p with p % groups == g (DeepEP gives each
 * destination peer a forwarder warp), and every one of them reads all the
 * channel's RDMA rings, one per source node. It first reads each ring's
 * rdma_channel_meta (how many tokens will come, and per NVL peer the start
 * and end of this channel's tokens) and passes the per-peer part on as the
 * destination's hccs_channel_prefix_start/end, which tells the
 * HCCSReceiver how many tokens its ring will carry.
 *
 * Then: poll (block on) the RDMA tail, copy a batch of records into UB,
 * publish how far this core has read (its forwarder head; the
 * ForwarderCoordinator returns the minimum over the channel's cores to the
 * source as credits), and put each record into the HCCS ring of every peer
 * it is for and this core serves. HCCS flow control is seed 001 s6.2's:
 * when the cached head says the ring is full, wait until
 * num_max_hccs_chunked_recv_tokens - used >= num_max_hccs_chunked_send_tokens;
 * hccs_channel_tail is published (after MTE3 landed the records) every
 * send chunk and before any blocking wait, followed by a bump of the
 * receiver's doorbell. Two UB buffers alternate so a batch is loaded while
 * the previous one is still being put.
 * Device code: device.h only.
 */
#include "dispatch_device.h"

/* Flags: MTE2_S 2 (batch loaded), MTE3_MTE2 0-1 (buffer free), MTE3_S 1
 * (records landed before a tail store). */

typedef struct fwd_src {
    int s;                    /* source rank (node n, this rank's NVL index) */
    int32_t total;
    int64_t base, head, end;
    uint32_t id;              /* RDMA ring s -> this rank */
} fwd_src;

typedef struct fwd_peer {
    int d;
    int64_t total, tail, cached_head;
    int32_t pending;          /* put but not yet published */
    uint32_t id;              /* HCCS ring this rank -> d */
} fwd_peer;

typedef struct forwarder {
    const dispatch_args *a;
    const dispatch_shape *sh;
    int me, my_node, my_nvl, c, g, groups;
    fwd_src src[DISPATCH_MAX_NODES];
    fwd_peer peer[DISPATCH_MAX_NVL_PEERS];
    int serves[DISPATCH_MAX_NVL_PEERS];
    local_t buf[2];
    int cur;
    ring_notes notes;
} forwarder;

static void commit(forwarder *fw, int p) {
    fwd_peer *q = &fw->peer[p];
    if (q->pending == 0) return;
    SetFlag(MTE3_S, 1);
    WaitFlag(MTE3_S, 1);
    RingStoreTail(q->id, q->tail);
    int k = dispatch_receiver_of(fw->sh, fw->c, fw->my_nvl);
    AtomicAdd64(dispatch_word(fw->a->hccs_recv_doorbell, q->d, (uint64_t)k, 8), 1);
    q->pending = 0;
}

static void commit_all(forwarder *fw) {
    for (int p = 0; p < fw->sh->npus; p++)
        if (fw->serves[p]) commit(fw, p);
}

static void put(forwarder *fw, int p, local_t rec) {
    const dispatch_shape *sh = fw->sh;
    fwd_peer *q = &fw->peer[p];
    if (q->tail - q->cached_head >= sh->hccs_ring_tokens) {
        commit(fw, p);   /* the receiver can only free what it was told about */
        dispatch_note_ring(&fw->notes, fw->c, q->d, -1, q->tail, q->cached_head,
                           sh->hccs_ring_tokens - (q->tail - q->cached_head));
        q->cached_head = RingWaitSpace(q->id, q->tail, sh->hccs_send_chunk);
    }
    gm_t dst = dispatch_hccs_slot(fw->a, q->d, fw->c, fw->my_nvl, q->tail % sh->hccs_ring_tokens);
    if (q->d == fw->me) DataCopy(dst, rec, sh->token_bytes);
    else ShmemPutFromUB(dst, rec, sh->token_bytes);
    q->tail++;
    if (++q->pending >= sh->hccs_send_chunk) commit(fw, p);
}

/* Forwards ring r's tokens up to tail. */
static void forward(forwarder *fw, fwd_src *r, int n_s, int64_t tail) {
    const dispatch_args *a = fw->a;
    const dispatch_shape *sh = fw->sh;
    gm_t head_word = dispatch_word(a->forwarder_head, fw->me,
                                   ((uint64_t)fw->c * (uint64_t)sh->nodes + (uint64_t)n_s) *
                                           (uint64_t)sh->npus + (uint64_t)fw->g,
                                   8);
    gm_t fc_doorbell = dispatch_word(a->fwd_coord_doorbell, fw->me,
                                     (uint64_t)dispatch_fwd_coord_of(sh, fw->c, n_s), 8);
    while (r->head < tail) {
        int64_t slot = r->head % sh->rdma_ring_tokens;
        int64_t n = tail - r->head;
        if (n > sh->rdma_ring_tokens - slot) n = sh->rdma_ring_tokens - slot;
        if (n > sh->forward_batch) n = sh->forward_batch;
        int b = fw->cur;
        WaitFlag(MTE3_MTE2, b);   /* the puts out of this buffer are done */
        DataCopy(fw->buf[b], dispatch_rdma_slot(a, a->rdma_channel_data, fw->me, fw->c, n_s, slot),
                 (uint64_t)n * sh->token_bytes);
        SetFlag(MTE2_S, 2);
        WaitFlag(MTE2_S, 2);
        /* The slots are free once the records are in UB. */
        int64_t old = r->head;
        r->head += n;
        SetValue64(head_word, r->head);
        if ((r->head - r->base) / sh->credit_batch > (old - r->base) / sh->credit_batch ||
            r->head == r->end)
            AtomicAdd64(fc_doorbell, 1);
        for (int i = 0; i < n; i++) {
            local_t rec = local_add(fw->buf[b], (uint32_t)i * sh->token_bytes);
            int32_t bits = UbGet32(rec, sh->off_meta + DISPATCH_SM_NVL_BITS);
            for (int p = 0; p < sh->npus; p++)
                if ((bits >> p & 1) && fw->serves[p]) put(fw, p, rec);
        }
        SetFlag(MTE3_MTE2, b);
        fw->cur ^= 1;
    }
}

/* Reads every source node's meta and passes the per-peer counts on. */
static void read_meta(forwarder *fw, local_t meta_ub, int disp) {
    const dispatch_args *a = fw->a;
    const dispatch_shape *sh = fw->sh;
    int N = sh->nodes, P = sh->npus;
    for (int n = 0; n < N; n++) {
        gm_t meta = gm_add(gm_on_rank(a->rdma_channel_meta, fw->me),
                           (int64_t)(((uint64_t)fw->c * (uint64_t)N + (uint64_t)n) *
                                     DISPATCH_META_BYTES));
        dispatch_note_ring(&fw->notes, fw->c, n * P + fw->my_nvl, -1, -1, -1, -1);
        WaitGM32(gm_add(meta, (DISPATCH_META_INTS - 1) * 4), COND_NE, 0);
        DataCopyPadIn(local_add(meta_ub, (uint32_t)n * DISPATCH_META_UB_STRIDE), meta,
                      DISPATCH_META_BYTES);
    }
    SetFlag(MTE2_S, 2);
    WaitFlag(MTE2_S, 2);
    /* The ForwarderCoordinator zeroes the meta once every group has read it. */
    for (int n = 0; n < N; n++)
        AtomicAdd64(dispatch_word(a->rdma_channel_meta_ack, fw->me,
                                  (uint64_t)fw->c * (uint64_t)N + (uint64_t)n, 8),
                    1);
    for (int n = 0; n < N; n++) {
        local_t m = local_add(meta_ub, (uint32_t)n * DISPATCH_META_UB_STRIDE);
        fwd_src *r = &fw->src[n];
        r->s = n * P + fw->my_nvl;
        r->total = UbGet32(m, 2 * DISPATCH_MAX_NVL_PEERS * 4) -
                   UbGet32(m, (2 * DISPATCH_MAX_NVL_PEERS + 1) * 4);
        r->base = (int64_t)disp * r->total;
        r->head = r->base;
        r->end = r->base + r->total;
        r->id = dispatch_rdma_ring_id(a, r->s, fw->c, fw->my_node);
        for (int p = 0; p < P; p++) {
            if (!fw->serves[p]) continue;
            int32_t start = UbGet32(m, (uint32_t)p * 4u);
            int32_t end = UbGet32(m, (uint32_t)(DISPATCH_MAX_NVL_PEERS + p) * 4u);
            fw->peer[p].total += start - end;   /* both are -x-1 */
            uint64_t at = ((uint64_t)fw->c * (uint64_t)P + (uint64_t)fw->my_nvl) * (uint64_t)N +
                          (uint64_t)n;
            SetValue32(dispatch_word(a->hccs_channel_prefix_start, fw->peer[p].d, at, 4), start);
            SetValue32(dispatch_word(a->hccs_channel_prefix_end, fw->peer[p].d, at, 4), end);
        }
    }
}

void dispatch_forwarder(const dispatch_args *a, int disp, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    int j = GetBlockIdx() - sh->senders - sh->coordinators;
    forwarder fw = {.a = a, .sh = sh, .me = GetRank(), .c = j % sh->channels,
                    .g = j / sh->channels};
    fw.groups = dispatch_fwd_groups(sh, fw.c);
    if (fw.g >= fw.groups) return;   /* more forwarder cores than NVL peers */
    fw.my_node = fw.me / sh->npus;
    fw.my_nvl = fw.me % sh->npus;
    int N = sh->nodes;
    fw.buf[0] = ub_take(&ub, (uint64_t)sh->forward_batch * sh->token_bytes);
    fw.buf[1] = ub_take(&ub, (uint64_t)sh->forward_batch * sh->token_bytes);
    local_t meta_ub = ub_take(&ub, (uint64_t)N * DISPATCH_META_UB_STRIDE);
    for (int p = 0; p < sh->npus; p++) {
        fw.serves[p] = p % fw.groups == fw.g;
        fw.peer[p].d = fw.my_node * sh->npus + p;
        fw.peer[p].id = dispatch_hccs_ring_id(a, fw.peer[p].d, fw.c, fw.my_nvl);
    }
    read_meta(&fw, meta_ub, disp);
    for (int p = 0; p < sh->npus; p++) {
        /* The receivers drained the last dispatch: head == tail == base. */
        fw.peer[p].tail = fw.peer[p].cached_head = (int64_t)disp * fw.peer[p].total;
    }
    int remaining = 0;
    for (int n = 0; n < N; n++) remaining += fw.src[n].total > 0;
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    gm_t doorbell = dispatch_word(a->rdma_recv_doorbell, fw.me, (uint64_t)fw.c, 8);
    int64_t seen = 0;
    while (remaining > 0) {
        commit_all(&fw);
        if (remaining == 1) {
            /* One ring left: wait on its own tail, so a hang names it. */
            fwd_src *r = fw.src;
            while (r->head == r->end) r++;
            dispatch_note_ring(&fw.notes, fw.c, r->s, r->head, r->head, -1, -1);
            RingWaitData(r->id, r->head);
        } else {
            dispatch_note_doorbell(&fw.notes, remaining);
            seen = WaitGM64(doorbell, COND_GT, seen);
        }
        for (int n = 0; n < N; n++) {
            fwd_src *r = &fw.src[n];
            if (r->head == r->end) continue;
            int64_t tail = GetValue64(dispatch_word(a->rdma_channel_tail, fw.me,
                                                    (uint64_t)fw.c * (uint64_t)N + (uint64_t)n, 8));
            if (tail > r->head) forward(&fw, r, n, tail);
            if (r->head == r->end) remaining--;
        }
    }
    commit_all(&fw);
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
}

/*
 * dev_comm.c - communication between ranks: HCCS put/get inside a node,
 * RDMA write and remote atomic add between nodes, and BatchWrite driven by
 * the AICPU.
 *
 * HCCS transfers run on the calling core's MTE queues (as shmem's
 * mte_put/get do), so SetFlag/WaitFlag order them like any DataCopy. RDMA
 * operations are posted to the rank's NIC and move in the steps of rdma.c: the
 * source NIC's tx and the destination NIC's rx are each shared by every core
 * of their rank, operations to one peer complete in posting order (a
 * reliable-connection queue pair), which is what makes "data, then tail
 * atomic" safe, and RdmaQuiet waits for their acks. BatchWrite tasks are
 * serialized on the rank's AICPU with the fixed per-task overhead of seed
 * 002.
 */
#include "internal.h"

static void require_same_node(core *c, int peer, dev_site s, const char *api) {
    if (!eng_same_node(c->e, peer, c->rank))
        eng_fault(c, s, "%s: rank %d is in another node; HCCS only reaches ranks of node %d (use RDMA)",
                  api, peer, c->rank / c->e->cfg.npus_per_node);
}

/* A copy between two ranks' GM of this node issued by this core: a get
 * (a read of a peer's GM) holds its queue while its request crosses, and
 * the link's latency delays either's completion (dev_copy.c gm_path). */
static void hccs(core *c, xfer *x, int src_rank, int dst_rank, dev_site s) {
    engine *e = c->e;
    resource *res[5];
    int n = 0;
    res[n++] = &e->ranks[src_rank].hbm;
    if (src_rank != dst_rank) {
        res[n++] = &e->hccs_links[(size_t)src_rank * (size_t)e->n_ranks + (size_t)dst_rank];
        res[n++] = &e->ranks[src_rank].hccs_tx;
        res[n++] = &e->ranks[dst_rank].hccs_rx;
    }
    int read = src_rank != c->rank, remote = src_rank != dst_rank;
    uint64_t lat = e->rate.mte_latency_ps + (remote ? e->rate.hccs_latency_ps : 0);
    uint64_t held = remote && read ? eng_hccs_read_held_ps(e) : 0;
    if (remote) e->used |= ENGINE_USED_HCCS | (read ? ENGINE_USED_HCCS_READ : 0);
    eng_xfer_issue_on(c, x, eng_mte_rate(c, remote ? -1 : c->rank), held, res, n, lat, s);
}

/* Put and get are one copy between this rank's GM and a peer's in the
 * node: put sends this rank's src on MTE3, get fetches a peer's src into
 * this rank's dst on MTE2. What differs is this table's row. */
typedef struct hccs_op {
    const char *api, *not_local, *src_what, *dst_what;
    int kind, pipe, put;
} hccs_op;
static const hccs_op hccs_put_op = {
    "ShmemPutNbi", "ShmemPutNbi: the source must be this rank's GM", "ShmemPutNbi source",
    "ShmemPutNbi destination", XFER_HCCS_PUT, PIPE_MTE3, 1};
static const hccs_op hccs_get_op = {
    "ShmemGetNbi", "ShmemGetNbi: the destination must be this rank's GM", "ShmemGetNbi source",
    "ShmemGetNbi destination", XFER_HCCS_GET, PIPE_MTE2, 0};

static void hccs_copy(const hccs_op *op, gm_t dst, gm_t src, uint64_t bytes, dev_site s) {
    core *c = eng_current(op->api);
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    gm_t mine = op->put ? src : dst, peer = op->put ? dst : src;
    if (gm_rank(mine) != c->rank) eng_fault(c, s, "%s", op->not_local);
    require_same_node(c, gm_rank(peer), s, op->api);
    eng_gm_check(c, src, bytes, s, op->src_what);
    eng_gm_check(c, dst, bytes, s, op->dst_what);
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = OP_COPY; x->kind = op->kind; x->pipe = op->pipe;
    x->dst = eng_gm_at(e, dst, bytes, &x->dseg); x->src = eng_gm_at(e, src, bytes, &x->sseg);
    x->dst_raw = dst.a; x->src_raw = src.a; x->bytes = bytes; x->peer = gm_rank(peer);
    x->dst_rank = gm_rank(dst); x->dst_off = gm_offset(dst); x->object = eng_word_object(e, dst);
    hccs(c, x, op->put ? c->rank : gm_rank(src), op->put ? gm_rank(dst) : c->rank, s);
}

void dev_hccs_put(gm_t dst, gm_t src, uint64_t bytes, dev_site s) {
    hccs_copy(&hccs_put_op, dst, src, bytes, s);
}

void dev_hccs_get(gm_t dst, gm_t src, uint64_t bytes, dev_site s) {
    hccs_copy(&hccs_get_op, dst, src, bytes, s);
}

void dev_hccs_put_ub(gm_t dst, local_t src, uint64_t bytes, dev_site s) {
    core *c = eng_current("ShmemPutFromUB");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    if (src.space != LM_UB) eng_fault(c, s, "ShmemPutFromUB: the source must be UB");
    if (src.off % UB_ALIGN || bytes % UB_ALIGN)
        eng_fault(c, s, "ShmemPutFromUB: UB address %u and length %llu must be 32 B aligned", src.off,
                  (unsigned long long)bytes);
    require_same_node(c, gm_rank(dst), s, "ShmemPutFromUB");
    mseg *sp_seg; uint8_t *sp = eng_local_at(c, src, bytes, s, "ShmemPutFromUB", &sp_seg);
    eng_gm_check(c, dst, bytes, s, "ShmemPutFromUB destination");
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = OP_COPY; x->kind = XFER_HCCS_PUT; x->pipe = PIPE_MTE3;
    x->dst = eng_gm_at(e, dst, bytes, &x->dseg); x->src = sp; x->sseg = sp_seg; x->atomic_dtype = c->atomic_dtype; x->atomic_op = c->atomic_op;
    x->dst_raw = dst.a; x->src_raw = local_raw(src); x->bytes = bytes; x->peer = gm_rank(dst);
    x->dst_rank = gm_rank(dst); x->dst_off = gm_offset(dst); x->object = eng_word_object(e, dst);
    resource *res[4];
    int n = 0;
    uint64_t lat = e->rate.mte_latency_ps;
    res[n++] = &e->ranks[gm_rank(dst)].hbm;
    if (gm_rank(dst) != c->rank) {
        res[n++] = &e->hccs_links[(size_t)c->rank * (size_t)e->n_ranks + (size_t)gm_rank(dst)];
        res[n++] = &e->ranks[c->rank].hccs_tx;
        res[n++] = &e->ranks[gm_rank(dst)].hccs_rx;
        lat += e->rate.hccs_latency_ps;
    }
    eng_xfer_issue_on(c, x, eng_mte_rate(c, gm_rank(dst)), 0, res, n, lat, s);
}

/* ------------------------------------------------------------ RDMA */
/* An AI core posts its own RDMA work requests: on A2 with the AIV
 * dataplane (sgl-kernel-npu PR #209, AIVRDMAPostSend) the vector core
 * writes the WQE into the queue pair's send queue and rings the NIC's
 * doorbell itself, which rdma_post_ns prices; no AICPU is involved. A
 * BatchWrite item is the AICPU's (Hccl<HCCL_SERVER_TYPE_AICPU>): the
 * rank's AICPU takes them one after another, batchwrite_task_ns each.
 * A run recorded while the AICPU posted every RDMA op replays that way
 * (cfg.rdma_posted_by_aicpu). */
static uint64_t aicpu_slot(core *c) {
    engine *e = c->e;
    e->used |= ENGINE_USED_AICPU;
    resource *aicpu = &e->ranks[c->rank].aicpu;
    uint64_t posted = (c->now > aicpu->free_at ? c->now : aicpu->free_at) + e->rate.batch_task_ps;
    aicpu->free_at = posted;
    return posted;
}

static void rdma_post(core *c, xfer *x, int dst_rank, dev_site s) {
    x->pipe = PIPE_NIC;
    x->site = eng_site(c->e, s);
    c->e->used |= ENGINE_USED_NIC;
    x->peer = dst_rank;
    eng_rdma_post(c, x, c->e->cfg.rdma_posted_by_aicpu ? aicpu_slot(c) : c->now);
}

void dev_rdma_write(gm_t dst, gm_t src, uint64_t bytes, dev_site s) {
    core *c = eng_current("RdmaWrite");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps + e->rate.rdma_post_ps);
    if (gm_rank(src) != c->rank) eng_fault(c, s, "RdmaWrite: the source must be this rank's GM");
    eng_gm_check(c, src, bytes, s, "RdmaWrite source");
    eng_gm_check(c, dst, bytes, s, "RdmaWrite destination");
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = OP_COPY; x->kind = XFER_RDMA_WRITE;
    x->dst = eng_gm_at(e, dst, bytes, &x->dseg); x->src = eng_gm_at(e, src, bytes, &x->sseg);
    x->dst_raw = dst.a; x->src_raw = src.a; x->bytes = bytes;
    x->dst_rank = gm_rank(dst); x->dst_off = gm_offset(dst); x->object = eng_word_object(e, dst);
    rdma_post(c, x, gm_rank(dst), s);
}

void dev_rdma_atomic(gm_t dst, int64_t v, dev_site s) {
    core *c = eng_current("RdmaAtomicAdd");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps + e->rate.rdma_post_ps);
    uint32_t obj = eng_word_object(e, dst);
    const engine_object *o = engine_object_get(e, obj);
    int width = o && o->width ? (int)o->width : 8;
    if (gm_offset(dst) % (uint64_t)width)
        eng_fault(c, s, "RdmaAtomicAdd: GM address 0x%llx is not %d-byte aligned",
                  (unsigned long long)gm_offset(dst), width);
    eng_gm_check(c, dst, (uint64_t)width, s, "RdmaAtomicAdd");
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = OP_ATOMIC_ADD; x->kind = XFER_RDMA_ATOMIC;
    x->dst = eng_gm_at(e, dst, (uint64_t)width, &x->dseg); x->width = width; x->value = v;
    x->dst_raw = dst.a; x->src_raw = (uint64_t)v; x->bytes = (uint64_t)width;  /* aux = operand */
    x->dst_rank = gm_rank(dst); x->dst_off = gm_offset(dst); x->object = obj;
    rdma_post(c, x, gm_rank(dst), s);
}

void dev_rdma_quiet(dev_site s) {
    core *c = eng_current("RdmaQuiet");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    eng_sync(c);
    eng_hook_sync(c, HOOK_RDMA_QUIET, PIPE_NIC, 0, s);
    /* the site is interned only when the core waits, as before */
    if (c->rdma_outstanding) eng_rdma_wait_acks(c, eng_site(e, s), 1);
}

/* ------------------------------------------------------------ BatchWrite */
void dev_batch_write(gm_t tasks, uint32_t count, dev_site s) {
    core *c = eng_current("BatchWrite");
    engine *e = c->e;
    eng_advance(c, e->rate.scalar_ps);
    if (gm_rank(tasks) != c->rank) eng_fault(c, s, "BatchWrite: the task list must be this rank's GM");
    if (count == 0) return;
    eng_gm_check(c, tasks, (uint64_t)count * sizeof(batch_write_task), s, "BatchWrite task list");
    eng_sync(c);
    const batch_write_task *t = (const batch_write_task *)(void *)eng_gm_ptr(
        e, tasks, (uint64_t)count * sizeof(batch_write_task));
    for (uint32_t i = 0; i < count; i++) {
        batch_write_task task = t[i];
        int esz = eng_dtype_size((int)task.data_type);
        if (!esz) eng_fault(c, s, "BatchWrite task %u: dataType %u is not a data type", i, task.data_type);
        if ((int)task.remote_rank_id < 0 || (int)task.remote_rank_id >= e->n_ranks)
            eng_fault(c, s, "BatchWrite task %u: remoteRankId %u does not exist", i, task.remote_rank_id);
        gm_t local = {task.local_buf};
        gm_t remote = gm_on_rank((gm_t){task.remote_buf}, (int)task.remote_rank_id);
        uint64_t bytes = task.count * (uint64_t)esz;
        if (gm_rank(local) != c->rank) eng_fault(c, s, "BatchWrite task %u: localBuf is not this rank's GM", i);
        eng_gm_check(c, local, bytes, s, "BatchWrite localBuf");
        eng_gm_check(c, remote, bytes, s, "BatchWrite remoteBuf");
        uint64_t posted = aicpu_slot(c);
        int dst = gm_rank(remote);
        xfer *x = eng_xfer_new(e);
        x->op = OP_BATCH_TASK; x->kind = XFER_BATCHWRITE; x->pipe = PIPE_AICPU;
        x->dst = eng_gm_at(e, remote, bytes, &x->dseg); x->src = eng_gm_at(e, local, bytes, &x->sseg);
        x->dst_raw = remote.a; x->src_raw = local.a; x->bytes = bytes; x->peer = dst;
        x->dst_rank = dst; x->dst_off = gm_offset(remote); x->object = eng_word_object(e, remote);
        x->site = eng_site(e, s);
        e->used |= eng_same_node(e, c->rank, dst) ? ENGINE_USED_HCCS : ENGINE_USED_NIC;
        if (eng_same_node(e, c->rank, dst)) {
            resource *link = &e->hccs_links[(size_t)c->rank * (size_t)e->n_ranks + (size_t)dst];
            x->rank = c->rank; x->core_index = c->index; x->track = eng_track(e, c, PIPE_AICPU);
            x->start = posted;
            x->end = resource_reserve(link, e->now, posted, bytes) + e->rate.hccs_latency_ps;
            eng_xfer_post(e, x, c->now, eng_core_key(c));
            c->last_seq = x->issue_seq;
        } else {
            eng_rdma_post(c, x, posted);   /* to another node: the NIC, as RdmaWrite */
        }
    }
}

/*
 * dev_copy.c - DataCopy and the vector/cube instructions of the device API.
 *
 * Each call checks the hardware's rules at issue (alignment, bounds, which
 * core type has which memory and pipe), resolves host pointers once, and
 * queues an xfer on the pipe that executes it: MTE2 for GM->local, MTE3 for
 * UB->GM, MTE1 for L1->L0A/L0B, V for UB->UB and vector math, M for Mmad,
 * FIX for L0C->GM. GM on another rank of the same node is reached over its
 * HCCS link (the shmem mapping); another node's GM faults.
 */
#include "internal.h"

void eng_check_local_rule(core *c, local_t l, uint64_t bytes, dev_site s, const char *api) {
    if (l.off % UB_ALIGN)
        eng_fault(c, s, "%s: %s address %u is not 32 B aligned", api, eng_space_name((int)l.space), l.off);
    if (bytes % UB_ALIGN)
        eng_fault(c, s, "%s: length %llu bytes is not a multiple of 32 B (use DataCopyPad)", api,
                  (unsigned long long)bytes);
}

/* Resources a GM access of this core crosses: the HBM of the rank that owns
 * the bytes, and the HCCS link when that rank is a peer. *held is what the
 * transfer holds its queue beyond its bytes: a read of a peer's GM is not
 * posted, its queue waits for the request to cross before it takes the
 * next (eng_hccs_read_held_ps); a write is posted. Either way the link's
 * latency delays the completion. */
int eng_gm_path(core *c, gm_t g, int to_gm, resource **res, uint64_t *latency, uint64_t *held,
                dev_site s, const char *api) {
    engine *e = c->e;
    int r = gm_rank(g);
    int n = 0;
    res[n++] = &e->ranks[r].hbm;
    *latency = e->rate.mte_latency_ps;
    *held = 0;
    if (r != c->rank) {
        if (!eng_same_node(e, r, c->rank))
            eng_fault(c, s, "%s: GM of rank %d is in another node; only RDMA reaches it", api, r);
        int a = to_gm ? c->rank : r, b = to_gm ? r : c->rank;
        res[n++] = &e->hccs_links[(size_t)a * (size_t)e->n_ranks + (size_t)b];
        res[n++] = &e->ranks[a].hccs_tx;
        res[n++] = &e->ranks[b].hccs_rx;
        *latency += e->rate.hccs_latency_ps;
        e->used |= ENGINE_USED_HCCS;
        if (!to_gm) {
            *held = eng_hccs_read_held_ps(e);
            e->used |= ENGINE_USED_HCCS_READ;
        }
    }
    return n;
}

static void begin_call(core *c) {
    eng_advance(c, c->e->rate.scalar_ps);
}

/* The transfer of a GM->local copy (DataCopy, DataCopyPad) on MTE2, once
 * its local destination d is checked: the GM source checked, then queued
 * over the source's HBM and link. */
static void gm_to_local(core *c, int op, local_t dst, uint8_t *d, mseg *d_seg, gm_t src,
                        uint64_t bytes, dev_site s, const char *what) {
    engine *e = c->e;
    eng_gm_check(c, src, bytes, s, what);
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = op; x->kind = XFER_MTE2; x->pipe = PIPE_MTE2;
    x->dst = d; x->dseg = d_seg; x->src = eng_gm_at(e, src, bytes, &x->sseg);
    x->dst_raw = local_raw(dst); x->src_raw = src.a; x->bytes = bytes; x->peer = gm_rank(src);
    resource *res[4]; uint64_t lat, held;
    int n = eng_gm_path(c, src, 0, res, &lat, &held, s, what);
    eng_xfer_issue_on(c, x, eng_mte_rate(c, gm_rank(src)), held, res, n, lat, s);
}

void dev_copy_gm_to_local(local_t dst, gm_t src, uint64_t bytes, dev_site s) {
    core *c = eng_current("DataCopy");
    begin_call(c);
    if (dst.space == LM_L0A || dst.space == LM_L0B || dst.space == LM_L0C)
        eng_fault(c, s, "DataCopy: no data path from GM to %s on 910B (load L1 first)",
                  eng_space_name((int)dst.space));
    eng_check_local_rule(c, dst, bytes, s, "DataCopy GM->local");
    mseg *d_seg; uint8_t *d = eng_local_at(c, dst, bytes, s, "DataCopy GM->local", &d_seg);
    gm_to_local(c, OP_COPY, dst, d, d_seg, src, bytes, s, "DataCopy GM->local");
}

void dev_copy_gm_to_local_pad(local_t dst, gm_t src, uint64_t bytes, dev_site s) {
    core *c = eng_current("DataCopyPad");
    begin_call(c);
    if (dst.space != LM_UB && dst.space != LM_L1)
        eng_fault(c, s, "DataCopyPad: destination must be UB or L1");
    uint64_t padded = (bytes + UB_ALIGN - 1) / UB_ALIGN * UB_ALIGN;
    eng_check_local_rule(c, dst, padded, s, "DataCopyPad GM->local");
    mseg *d_seg; uint8_t *d = eng_local_at(c, dst, padded, s, "DataCopyPad GM->local", &d_seg);
    gm_to_local(c, OP_COPY_PAD_IN, dst, d, d_seg, src, bytes, s, "DataCopyPad GM->local");
}

static void copy_out(local_t src, gm_t dst, uint64_t bytes, dev_site s, int pad, const char *api) {
    core *c = eng_current(api);
    engine *e = c->e;
    begin_call(c);
    if (src.space != LM_UB)
        eng_fault(c, s, "%s: only UB is copied to GM by MTE3 (L0C goes through Fixpipe)", api);
    uint64_t local_bytes = pad ? (bytes + UB_ALIGN - 1) / UB_ALIGN * UB_ALIGN : bytes;
    eng_check_local_rule(c, src, local_bytes, s, api);
    mseg *sp_seg; uint8_t *sp = eng_local_at(c, src, local_bytes, s, api, &sp_seg);
    eng_gm_check(c, dst, bytes, s, api);
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = OP_COPY; x->kind = XFER_MTE3; x->pipe = PIPE_MTE3;
    x->dst = eng_gm_at(e, dst, bytes, &x->dseg); x->src = sp; x->sseg = sp_seg;
    x->dst_raw = dst.a; x->src_raw = local_raw(src); x->bytes = bytes; x->peer = gm_rank(dst);
    x->atomic_dtype = c->atomic_dtype;
    x->atomic_op = c->atomic_op;
    x->dst_rank = gm_rank(dst); x->dst_off = gm_offset(dst);
    x->object = eng_word_object(e, dst);
    resource *res[4]; uint64_t lat, held;
    int n = eng_gm_path(c, dst, 1, res, &lat, &held, s, api);
    eng_xfer_issue_on(c, x, eng_mte_rate(c, gm_rank(dst)), held, res, n, lat, s);
}

void dev_copy_local_to_gm(gm_t dst, local_t src, uint64_t bytes, dev_site s) {
    copy_out(src, dst, bytes, s, 0, "DataCopy UB->GM");
}

void dev_copy_local_to_gm_pad(gm_t dst, local_t src, uint64_t bytes, dev_site s) {
    copy_out(src, dst, bytes, s, 1, "DataCopyPad UB->GM");
}

void dev_copy_local_to_local(local_t dst, local_t src, uint64_t bytes, dev_site s) {
    core *c = eng_current("DataCopy");
    engine *e = c->e;
    begin_call(c);
    int pipe;
    double rate;
    uint64_t fixed = 0;
    if (src.space == LM_UB && dst.space == LM_UB) {
        pipe = PIPE_V; rate = e->rate.vec_ps_per_byte; fixed = e->rate.vec_latency_ps;
    } else if (src.space == LM_L1 && (dst.space == LM_L0A || dst.space == LM_L0B)) {
        pipe = PIPE_MTE1; rate = e->rate.mte_ps_per_byte;
    } else {
        eng_fault(c, s, "DataCopy: no data path from %s to %s on 910B", eng_space_name((int)src.space),
                  eng_space_name((int)dst.space));
    }
    eng_check_local_rule(c, dst, bytes, s, "DataCopy local->local");
    eng_check_local_rule(c, src, bytes, s, "DataCopy local->local");
    mseg *d_seg; uint8_t *d = eng_local_at(c, dst, bytes, s, "DataCopy local->local", &d_seg);
    mseg *sp_seg; uint8_t *sp = eng_local_at(c, src, bytes, s, "DataCopy local->local", &sp_seg);
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = OP_COPY; x->kind = pipe == PIPE_V ? XFER_VEC : XFER_MTE1; x->pipe = pipe;
    x->dst = d; x->dseg = d_seg; x->src = sp; x->sseg = sp_seg; x->dst_raw = local_raw(dst); x->src_raw = local_raw(src);
    x->bytes = bytes; x->peer = c->rank;
    eng_xfer_issue_on(c, x, rate, fixed, NULL, 0, 0, s);
}

/* ------------------------------------------------------------ vector */
static xfer *vec_op(core *c, int op, local_t dst, uint64_t dst_bytes, uint64_t work_bytes,
                    dev_site s, const char *api) {
    engine *e = c->e;
    begin_call(c);
    if (c->is_aic) eng_fault(c, s, "%s: the vector unit is on AIV cores", api);
    if (dst.space != LM_UB) eng_fault(c, s, "%s: vector operands live in UB", api);
    mseg *d_seg; uint8_t *d = eng_local_at(c, dst, dst_bytes, s, api, &d_seg);
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = op; x->kind = XFER_VEC; x->pipe = PIPE_V;
    x->dst = d; x->dseg = d_seg; x->dst_raw = local_raw(dst); x->bytes = work_bytes; x->peer = c->rank;
    return x;
}

static void vec_issue(core *c, xfer *x, dev_site s) {
    engine *e = c->e;
    eng_xfer_issue_on(c, x, e->rate.vec_ps_per_byte, e->rate.vec_latency_ps, NULL, 0, 0, s);
}

void dev_vec_copy(local_t dst, local_t src, uint32_t bytes, dev_site s) {
    core *c = eng_current("VecCopy");
    if (src.space != LM_UB) eng_fault(c, s, "VecCopy: source must be UB");
    mseg *sp_seg; uint8_t *sp = eng_local_at(c, src, bytes, s, "VecCopy", &sp_seg);
    xfer *x = vec_op(c, OP_COPY, dst, bytes, bytes, s, "VecCopy");
    x->src = sp; x->sseg = sp_seg; x->src_raw = local_raw(src);
    vec_issue(c, x, s);
}

static void check_dtype(core *c, int dtype, dev_site s, const char *api) {
    if (eng_dtype_size(dtype) == 0) eng_fault(c, s, "%s: %d is not a data type", api, dtype);
}

void dev_vec_dup(local_t dst, int dtype, double value, uint32_t n, dev_site s) {
    core *c = eng_current("VecDup");
    check_dtype(c, dtype, s, "VecDup");
    uint64_t bytes = (uint64_t)n * (uint64_t)eng_dtype_size(dtype);
    xfer *x = vec_op(c, OP_VEC_DUP, dst, bytes, bytes, s, "VecDup");
    x->dtype = dtype; x->scalar = value; x->n = n;
    vec_issue(c, x, s);
}

void dev_vec_axpy(local_t dst, local_t src, int src_dtype, float w, uint32_t n, dev_site s) {
    core *c = eng_current("VecAxpy");
    check_dtype(c, src_dtype, s, "VecAxpy");
    uint64_t sb = (uint64_t)n * (uint64_t)eng_dtype_size(src_dtype);
    if (src.space != LM_UB) eng_fault(c, s, "VecAxpy: source must be UB");
    mseg *sp_seg; uint8_t *sp = eng_local_at(c, src, sb, s, "VecAxpy", &sp_seg);
    xfer *x = vec_op(c, OP_VEC_AXPY, dst, (uint64_t)n * 4, (uint64_t)n * 4, s, "VecAxpy");
    x->src = sp; x->sseg = sp_seg; x->src_raw = local_raw(src); x->dtype2 = src_dtype; x->scalar = w; x->n = n;
    vec_issue(c, x, s);
}

void dev_vec_add(local_t dst, local_t a, local_t b, int dtype, uint32_t n, dev_site s) {
    core *c = eng_current("VecAdd");
    check_dtype(c, dtype, s, "VecAdd");
    uint64_t bytes = (uint64_t)n * (uint64_t)eng_dtype_size(dtype);
    if (a.space != LM_UB || b.space != LM_UB) eng_fault(c, s, "VecAdd: operands must be UB");
    mseg *pa_seg; uint8_t *pa = eng_local_at(c, a, bytes, s, "VecAdd", &pa_seg);
    mseg *pb_seg; uint8_t *pb = eng_local_at(c, b, bytes, s, "VecAdd", &pb_seg);
    xfer *x = vec_op(c, OP_VEC_ADD, dst, bytes, bytes, s, "VecAdd");
    x->src = pa; x->sseg = pa_seg; x->src2 = pb; x->sseg2 = pb_seg; x->src_raw = local_raw(a); x->dtype = dtype; x->n = n;
    vec_issue(c, x, s);
}

void dev_vec_cast(local_t dst, int dst_dtype, local_t src, int src_dtype, uint32_t n, dev_site s) {
    core *c = eng_current("VecCast");
    check_dtype(c, dst_dtype, s, "VecCast");
    check_dtype(c, src_dtype, s, "VecCast");
    uint64_t db = (uint64_t)n * (uint64_t)eng_dtype_size(dst_dtype);
    uint64_t sb = (uint64_t)n * (uint64_t)eng_dtype_size(src_dtype);
    if (src.space != LM_UB) eng_fault(c, s, "VecCast: source must be UB");
    mseg *sp_seg; uint8_t *sp = eng_local_at(c, src, sb, s, "VecCast", &sp_seg);
    xfer *x = vec_op(c, OP_VEC_CAST, dst, db, db > sb ? db : sb, s, "VecCast");
    x->src = sp; x->sseg = sp_seg; x->src_raw = local_raw(src); x->dtype = dst_dtype; x->dtype2 = src_dtype; x->n = n;
    vec_issue(c, x, s);
}

/* The INT8 quant pair is a sequence of vector instructions on the chip
 * (the A2 dispatch's QuantProcess, ops-transformer
 * moe_distribute_dispatch_a2.h: Cast to f32, Abs, ReduceMax, Muls, Cast
 * f32 -> int32 -> half -> int8, a PipeBarrier<PIPE_V> between each), so it
 * costs the bytes every instruction streams and one vector latency each. */
static void check_quant_shape(core *c, uint32_t n, uint32_t block, dev_site s, const char *api) {
    if (block == 0 || block % UB_ALIGN || n % block)
        eng_fault(c, s, "%s: block %u must be a multiple of 32 that divides n = %u", api, block, n);
}

void dev_vec_quant_int8(local_t dst, local_t src, int src_dtype, uint32_t n, uint32_t block, dev_site s) {
    core *c = eng_current("VecQuantInt8");
    if (src_dtype != DT_BF16 && src_dtype != DT_FP16 && src_dtype != DT_FLOAT)
        eng_fault(c, s, "VecQuantInt8: source must be bf16, fp16 or f32");
    check_quant_shape(c, n, block, s, "VecQuantInt8");
    if (src.space != LM_UB) eng_fault(c, s, "VecQuantInt8: source must be UB");
    uint64_t sb = (uint64_t)n * (uint64_t)eng_dtype_size(src_dtype), f = (uint64_t)n * 4;
    mseg *sp_seg; uint8_t *sp = eng_local_at(c, src, sb, s, "VecQuantInt8", &sp_seg);
    int up = src_dtype != DT_FLOAT;   /* the Cast to f32 */
    uint64_t work = (up ? f : 0) + 5 * f + (uint64_t)n * 2;
    xfer *x = vec_op(c, OP_VEC_QUANT_I8, dst, dev_quant_int8_bytes(n, block), work, s, "VecQuantInt8");
    x->src = sp; x->sseg = sp_seg; x->src_raw = local_raw(src); x->dtype2 = src_dtype; x->n = n; x->k = block;
    eng_xfer_issue_on(c, x, c->e->rate.vec_ps_per_byte, (uint64_t)(6 + up) * c->e->rate.vec_latency_ps, NULL, 0, 0, s);
}

void dev_vec_dequant_int8(local_t dst, local_t src, float w, uint32_t n, uint32_t block, dev_site s) {
    core *c = eng_current("VecDequantInt8");
    check_quant_shape(c, n, block, s, "VecDequantInt8");
    if (src.space != LM_UB) eng_fault(c, s, "VecDequantInt8: source must be UB");
    mseg *sp_seg;
    uint8_t *sp = eng_local_at(c, src, dev_quant_int8_bytes(n, block), s, "VecDequantInt8", &sp_seg);
    /* Cast int8 -> half -> f32, Mul by the block's scale, Muls by w */
    uint64_t f = (uint64_t)n * 4, work = (uint64_t)n * 2 + 3 * f;
    xfer *x = vec_op(c, OP_VEC_DEQUANT_I8, dst, f, work, s, "VecDequantInt8");
    x->src = sp; x->sseg = sp_seg; x->src_raw = local_raw(src); x->scalar = w; x->n = n; x->k = block;
    eng_xfer_issue_on(c, x, c->e->rate.vec_ps_per_byte, 4 * c->e->rate.vec_latency_ps, NULL, 0, 0, s);
}

/* ------------------------------------------------------------ cube */
void dev_mmad(local_t cm, local_t a, local_t b, int dtype, uint32_t m, uint32_t n, uint32_t k,
              int accumulate, dev_site s) {
    core *c = eng_current("Mmad");
    engine *e = c->e;
    begin_call(c);
    if (!c->is_aic) eng_fault(c, s, "Mmad: the cube unit is on AIC cores");
    if (cm.space != LM_L0C || a.space != LM_L0A || b.space != LM_L0B)
        eng_fault(c, s, "Mmad: operands must be L0C (out), L0A and L0B");
    if (dtype != DT_FP16 && dtype != DT_BF16)
        eng_fault(c, s, "Mmad: inputs must be fp16 or bf16");
    if (m == 0 || n == 0 || k == 0) eng_fault(c, s, "Mmad: m, n, k must be positive");
    mseg *pc_seg; uint8_t *pc = eng_local_at(c, cm, (uint64_t)m * n * 4, s, "Mmad L0C", &pc_seg);
    mseg *pa_seg; uint8_t *pa = eng_local_at(c, a, (uint64_t)m * k * 2, s, "Mmad L0A", &pa_seg);
    mseg *pb_seg; uint8_t *pb = eng_local_at(c, b, (uint64_t)k * n * 2, s, "Mmad L0B", &pb_seg);
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = OP_MMAD; x->kind = XFER_CUBE; x->pipe = PIPE_M;
    x->dst = pc; x->dseg = pc_seg; x->src = pa; x->sseg = pa_seg; x->src2 = pb; x->sseg2 = pb_seg; x->dtype = dtype; x->m = m; x->n = n; x->k = k;
    x->accumulate = accumulate; x->dst_raw = local_raw(cm); x->src_raw = local_raw(a);
    x->bytes = (uint64_t)m * n * 4; x->peer = c->rank;
    /* fractal granularity: partial 16x16x16 blocks cost a whole one */
    uint64_t macs = (uint64_t)((m + 15) / 16 * 16) * ((n + 15) / 16 * 16) * ((k + 15) / 16 * 16);
    uint64_t busy = (uint64_t)((double)macs * e->rate.ps_per_mac) + e->rate.vec_latency_ps;
    eng_xfer_issue_on(c, x, 0, busy, NULL, 0, 0, s);
}

void dev_fixpipe(gm_t dst, local_t src, int dtype, uint64_t elems, dev_site s) {
    core *c = eng_current("Fixpipe");
    engine *e = c->e;
    begin_call(c);
    if (!c->is_aic || src.space != LM_L0C) eng_fault(c, s, "Fixpipe: moves L0C of an AIC to GM");
    check_dtype(c, dtype, s, "Fixpipe");
    uint64_t out_bytes = elems * (uint64_t)eng_dtype_size(dtype);
    mseg *sp_seg; uint8_t *sp = eng_local_at(c, src, elems * 4, s, "Fixpipe", &sp_seg);
    eng_gm_check(c, dst, out_bytes, s, "Fixpipe");
    eng_sync(c);
    xfer *x = eng_xfer_new(e);
    x->op = OP_FIXPIPE; x->kind = XFER_FIX; x->pipe = PIPE_FIX;
    x->dst = eng_gm_at(e, dst, out_bytes, &x->dseg); x->src = sp; x->sseg = sp_seg; x->dtype = dtype; x->n = (uint32_t)elems;
    x->atomic_dtype = c->atomic_dtype;
    x->dst_raw = dst.a; x->src_raw = local_raw(src); x->bytes = out_bytes; x->peer = gm_rank(dst);
    x->dst_rank = gm_rank(dst); x->dst_off = gm_offset(dst);
    resource *res[4]; uint64_t lat, held;
    int n = eng_gm_path(c, dst, 1, res, &lat, &held, s, "Fixpipe");
    eng_xfer_issue_on(c, x, eng_mte_rate(c, gm_rank(dst)), held, res, n, lat, s);
}

void dev_set_atomic(int dtype, dev_site s) {
    core *c = eng_current("SetAtomicAdd");
    begin_call(c);
    if (dtype && eng_dtype_size(dtype) == 0) eng_fault(c, s, "SetAtomicAdd: %d is not a data type", dtype);
    c->atomic_dtype = dtype;
    c->atomic_op = dtype ? ATOMIC_ADD : 0;
}

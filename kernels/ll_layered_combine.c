/*
 * ll_layered_combine.c - ll-layered-dispatch-combine's combine on the
 * device: A2's layered low-latency combine as the chip runs it
 * (sgl-kernel-npu PR #209 at 978c4322, csrc/deepep/ops2/op_kernel/
 * moe_distribute_combine_v2_layered_custom.h, Process(), BF16 rows):
 *
 *   GM2IPC         the destination ranks split over the cores; per
 *                  destination d, the rows this rank's experts got from d
 *                  (expert-major, epRecvCount) copied one at a time into
 *                  this rank's own IPC slice for d, behind a full pipe
 *                  barrier each; SyncAll; cores < P raise a flag in each
 *                  local rank; WaitIPC: cores < P wait for theirs;
 *   SumToWindow    32 cores, 32 / N per server s: the tokens of s's
 *                  same-numbered rank that came to this server in the
 *                  dispatch (the inner tables the dispatch built) dealt
 *                  round robin; per token, its rows read from the local
 *                  ranks' IPC slices (over HCCS unless this rank) into the
 *                  block for server s in windowOut, then an arrival flag
 *                  (its row count) in this rank's IPC; then an end flag;
 *   AlltoAllServerDispatch  one core per server s: the flags in order; per
 *                  token one RDMA write of its rows, posted by the core
 *                  itself, to the same-numbered rank of server s (this
 *                  server's block: local copies), then the end status;
 *   WaitDispatch   cores s < N, s not this server: s's end status;
 *   SumToServer    8 cores split the rank's tokens; per token and server,
 *                  its rows from that server's block times their top-k
 *                  weights (in the order its experts sit per server),
 *                  summed in f32, rounded to bf16.
 *
 * Magic 1 (one call a run); the rows are bf16 (the chip's tiling key 3000:
 * no quantized transport). Device code: device.h only.
 */
#include "ll.h"

#include <string.h>

/* Flag ids: MTE2_S 0, MTE2_MTE3 0, MTE3_S 0, S_MTE3 0, MTE2_V 0, V_MTE2 0,
 * V_MTE3 0, MTE3_V 0, V_S 0. */

static float ub_float(local_t l, uint32_t off) {
    int32_t bits = UbGet32(l, off);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* GM2IPC: this rank's rows for each of this core's destinations. */
static void gm_to_ipc(const lll *c) {
    const ll_args *a = c->a;
    int W = a->num_ranks, L = a->local_experts;
    uint32_t d0, d1;
    ll_split((uint32_t)W, (uint32_t)c->b, (uint32_t)c->B, &d0, &d1);
    ll_ub u = {c->tbuf, 0};
    local_t epc = ll_take(&u, (uint64_t)L * (uint64_t)W * 4);
    local_t row = ll_take(&u, a->row_bytes);
    local_t flag = ll_take(&u, LLL_IPC_FLAG_BYTES);
    if (d0 < d1) {
        DataCopyPadIn(epc, a->ep_recv_count[c->me], (uint64_t)L * (uint64_t)W * 4);
        PipeBarrier(PIPE_ALL);
    }
    for (uint32_t d = d0; d < d1; d++) {
        gm_t slice = lll_cslice(a, c->me, (int)d);
        int64_t n = 0;
        for (int le = 0; le < L; le++) {
            int at = le * W + (int)d;
            int32_t pre = at ? UbGet32(epc, (uint32_t)(at - 1) * 4u) : 0;
            int32_t cnt = UbGet32(epc, (uint32_t)at * 4u) - pre;
            for (int32_t i = 0; i < cnt; i++, n++) {
                DataCopy(row, gm_add(a->expert_out[c->me], (int64_t)(pre + i) * a->row_bytes),
                         a->row_bytes);
                SetFlag(MTE2_MTE3, 0);
                WaitFlag(MTE2_MTE3, 0);
                DataCopy(gm_add(slice, n * (int64_t)a->row_bytes), row, a->row_bytes);
                PipeBarrier(PIPE_ALL);
            }
        }
    }
    SyncAll();
    if (c->b < c->P) {   /* this rank's rows are in its IPC: tell local rank b */
        UbSet64(flag, 0, LLL_GM2IPC_FLAG);
        PipeBarrier(PIPE_ALL);
        DataCopy(gm_add(gm_on_rank(a->cipc, c->sv * c->P + c->b), (int64_t)c->lr * LLL_IPC_FLAG_BYTES),
                 flag, LLL_IPC_FLAG_BYTES);
        PipeBarrier(PIPE_ALL);
    }
    SyncAll();
}

/* WaitIPC: cores < P, local rank b's rows are in its IPC; the flag cleared. */
static void wait_ipc(const lll *c) {
    const ll_args *a = c->a;
    if (c->b < c->P) {
        gm_t f = gm_add(gm_on_rank(a->cipc, c->me), (int64_t)c->b * LLL_IPC_FLAG_BYTES);
        WaitGM64(f, COND_GE, LLL_GM2IPC_FLAG);
        local_t zero = c->tbuf;
        VecDup(zero, DT_INT32, 0, LLL_IPC_FLAG_BYTES / 4);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopy(f, zero, LLL_IPC_FLAG_BYTES);
        PipeBarrier(PIPE_ALL);
    }
    SyncAll();
}

static int reduce_cores(const lll *c) {
    int rc = (c->B - c->N) / c->N * c->N;
    return rc > LLL_REDUCE_CORES ? LLL_REDUCE_CORES : rc;
}

/* SumToWindow: this core's tokens of server s's stream, their rows into
 * windowOut's block for s, an arrival flag per token, then an end flag. */
static void sum_to_window(const lll *c) {
    const ll_args *a = c->a;
    int T = a->tokens, K = a->topk, cps = reduce_cores(c) / c->N;
    int s = c->b / cps, mine = c->b % cps, target = s * c->P + c->lr;
    int64_t S = (int64_t)T * K;
    ll_ub u = {c->tbuf, 0};
    local_t cnt = ll_take(&u, (uint64_t)(T + 1) * 4);
    local_t off = ll_take(&u, (uint64_t)S * 4);
    local_t row = ll_take(&u, a->row_bytes);
    local_t flag = ll_take(&u, LLL_IPC_FLAG_BYTES);
    DataCopyPadIn(cnt, gm_add(a->c_inner_cnt[c->me], (int64_t)s * (T + 1) * 4), (uint64_t)(T + 1) * 4);
    DataCopyPadIn(off, gm_add(a->c_inner_off[c->me], (int64_t)s * S * 4), (uint64_t)S * 4);
    PipeBarrier(PIPE_ALL);
    gm_t out = lll_cblock(a->cwin_out, a, c->me, s);
    gm_t flags = gm_add(gm_on_rank(a->cipc, c->me), (int64_t)lll_cflags_at(a, s));
    UbSet64(flag, 0, LLL_ARRIVED_FLAG);
    int done = 0;
    for (int i = mine; i < T; i += cps) {
        int32_t prev = i ? UbGet32(cnt, (uint32_t)(i - 1) * 4u) : 0;
        int32_t n = UbGet32(cnt, (uint32_t)i * 4u) - prev;
        if (n <= 0) break;
        for (int32_t r = prev; r < prev + n; r++) {
            int32_t o = UbGet32(off, (uint32_t)r * 4u);
            int q = (int)(o / S);
            int64_t at = o % S;
            gm_t src = gm_add(lll_cslice(a, c->sv * c->P + q, target), at * (int64_t)a->row_bytes);
            SetFlag(MTE3_MTE2, 0);
            WaitFlag(MTE3_MTE2, 0);
            DataCopy(row, src, a->row_bytes);
            SetFlag(MTE2_MTE3, 0);
            WaitFlag(MTE2_MTE3, 0);
            DataCopy(gm_add(out, (int64_t)r * a->row_bytes), row, a->row_bytes);
            SetFlag(MTE3_S, 0);
            WaitFlag(MTE3_S, 0);
        }
        UbSet64(flag, 8, n);
        SetFlag(S_MTE3, 0);
        WaitFlag(S_MTE3, 0);
        DataCopy(gm_add(flags, (int64_t)i * LLL_IPC_FLAG_BYTES), flag, LLL_IPC_FLAG_BYTES);
        PipeBarrier(PIPE_MTE3);
        done++;
    }
    PipeBarrier(PIPE_ALL);
    UbSet64(flag, 0, LLL_END_FLAG);
    SetFlag(S_MTE3, 0);
    WaitFlag(S_MTE3, 0);
    DataCopy(gm_add(flags, (int64_t)(cps * done + mine) * LLL_IPC_FLAG_BYTES), flag,
             LLL_IPC_FLAG_BYTES);
    PipeBarrier(PIPE_ALL);
    SyncAll();
}

/* AlltoAllServerDispatch: server s's block to its same-numbered rank, one
 * RDMA write per token as its flag shows, then the end status. */
static void server_dispatch(const lll *c, int s) {
    const ll_args *a = c->a;
    int target = s * c->P + c->lr;
    ll_ub u = {c->tbuf, 0};
    local_t flag = ll_take(&u, LLL_IPC_FLAG_BYTES);
    local_t post = ll_take(&u, LLL_WQE_BYTES);
    local_t state = ll_take(&u, LLL_IPC_FLAG_BYTES);
    local_t row = ll_take(&u, a->row_bytes);
    gm_t flags = gm_add(gm_on_rank(a->cipc, c->me), (int64_t)lll_cflags_at(a, s));
    gm_t src = lll_cblock(a->cwin_out, a, c->me, s), dst = lll_cblock(a->cwin_in, a, target, c->sv);
    int64_t rows = 0;
    for (int i = 0;; i++) {
        gm_t f = gm_add(flags, (int64_t)i * LLL_IPC_FLAG_BYTES);
        WaitGM64(f, COND_NE, 0);
        DataCopy(flag, f, LLL_IPC_FLAG_BYTES);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        if (UbGet64(flag, 0) == LLL_END_FLAG) break;
        int64_t n = UbGet64(flag, 8);
        PipeBarrier(PIPE_ALL);
        if (n <= 0) continue;
        if (target != c->me) {
            lll_post(c, gm_add(dst, rows * (int64_t)a->row_bytes),
                     gm_add(src, rows * (int64_t)a->row_bytes), (uint64_t)n * a->row_bytes, post);
        } else {
            for (int64_t r = rows; r < rows + n; r++) {
                DataCopy(row, gm_add(src, r * (int64_t)a->row_bytes), a->row_bytes);
                SetFlag(MTE2_MTE3, 0);
                WaitFlag(MTE2_MTE3, 0);
                DataCopy(gm_add(dst, r * (int64_t)a->row_bytes), row, a->row_bytes);
                PipeBarrier(PIPE_ALL);
            }
        }
        rows += n;
    }
    CoreNote("rows", rows);
    if (target != c->me) {
        gm_t st = gm_add(a->ws[c->me], (int64_t)c->b * LLL_FLAG_BYTES);
        UbSet64(state, 0, 1);
        SetFlag(S_MTE3, 0);
        WaitFlag(S_MTE3, 0);
        DataCopy(st, state, LLL_IPC_FLAG_BYTES);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
        lll_post(c, lll_cend_status(a, target, c->sv), st, LLL_IPC_FLAG_BYTES, post);
    }
    SyncAll();
}

/* WaitDispatch and SumToServer: the rank's tokens summed over servers. */
static void sum_to_server(const lll *c) {
    const ll_args *a = c->a;
    int T = a->tokens, K = a->topk, N = c->N, PL = c->P * a->local_experts;
    uint32_t H = (uint32_t)a->hidden;
    int64_t S = (int64_t)T * K;
    if (c->b < N && c->b != c->sv && a->inject != 2)   /* no-server-wait skips it */
        WaitGM64(lll_cend_status(a, c->me, c->b), COND_EQ, 1);
    PipeBarrier(PIPE_ALL);
    SyncAll();
    uint32_t t0, t1;
    int cores = c->B < LLL_SUM_CORES ? c->B : LLL_SUM_CORES;
    if (c->b >= cores) return;
    ll_split((uint32_t)T, (uint32_t)c->b, (uint32_t)cores, &t0, &t1);
    if (t0 == t1) return;
    ll_ub u = {c->tbuf, 0};
    local_t ocnt = ll_take(&u, (uint64_t)T * 4);
    local_t ooff = ll_take(&u, (uint64_t)T * (uint64_t)N * 4);
    local_t oper = ll_take(&u, (uint64_t)T * (uint64_t)N * 4);
    local_t wts = ll_take(&u, (uint64_t)T * (uint64_t)K * 4);
    local_t ids = ll_take(&u, (uint64_t)T * (uint64_t)K * 4);
    local_t sorted = ll_take(&u, (uint64_t)N * (uint64_t)K * 4);
    local_t per_srv = ll_take(&u, (uint64_t)N * 4);
    local_t in = ll_take(&u, a->row_bytes);
    local_t f32 = ll_take(&u, (uint64_t)H * 4), sum = ll_take(&u, (uint64_t)H * 4);
    local_t outb = ll_take(&u, a->row_bytes);
    /* Preload */
    DataCopyPadIn(ocnt, a->c_outer_cnt[c->me], (uint64_t)T * 4);
    DataCopyPadIn(ooff, a->c_outer_off[c->me], (uint64_t)T * (uint64_t)N * 4);
    DataCopyPadIn(oper, a->c_outer_per[c->me], (uint64_t)T * (uint64_t)N * 4);
    DataCopyPadIn(wts, a->topk_weights[c->me], (uint64_t)T * (uint64_t)K * 4);
    DataCopyPadIn(ids, a->expert_ids[c->me], (uint64_t)T * (uint64_t)K * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    int32_t at = t0 ? UbGet32(ocnt, (t0 - 1) * 4u) : 0;
    SetFlag(MTE3_V, 0);
    for (uint32_t t = t0; t < t1; t++) {
        int32_t n = UbGet32(ocnt, t * 4u) - (t ? UbGet32(ocnt, (t - 1) * 4u) : 0);
        PipeBarrier(PIPE_ALL);
        if (!n) continue;   /* every slot dropped (--routing drop:P; the chip, which drops
                             * none, stops here): the output row stays zeros */
        for (int s = 0; s < N; s++) UbSet32(per_srv, (uint32_t)s * 4u, 0);
        for (int k = 0; k < K; k++) {   /* the token's slots by server, k order within */
            int e = UbGet32(ids, (t * (uint32_t)K + (uint32_t)k) * 4u);
            if (e < 0) continue;
            int s = e / PL, o = UbGet32(per_srv, (uint32_t)s * 4u);
            UbSet32(sorted, (uint32_t)(s * K + o) * 4u, k);
            UbSet32(per_srv, (uint32_t)s * 4u, o + 1);
        }
        PipeBarrier(PIPE_ALL);
        WaitFlag(MTE3_V, 0);
        VecDup(sum, DT_FLOAT, 0.0, H);
        for (int32_t j = 0; j < n; j++, at++) {
            int32_t cnt = UbGet32(oper, (uint32_t)at * 4u), o = UbGet32(ooff, (uint32_t)at * 4u);
            int s = (int)(o / S);
            gm_t blk = lll_cblock(a->cwin_in, a, c->me, s);
            for (int32_t r = 0; r < cnt; r++) {
                int k = UbGet32(sorted, (uint32_t)(s * K + r) * 4u);
                float w = ub_float(wts, (t * (uint32_t)K + (uint32_t)k) * 4u);
                SetFlag(V_MTE2, 0);
                WaitFlag(V_MTE2, 0);
                DataCopy(in, gm_add(blk, (o % S + r) * (int64_t)a->row_bytes), a->row_bytes);
                SetFlag(MTE2_V, 0);
                WaitFlag(MTE2_V, 0);
                VecCast(f32, DT_FLOAT, in, DT_BF16, H);
                VecAxpy(sum, f32, DT_FLOAT, w, H);
            }
        }
        VecCast(outb, DT_BF16, sum, DT_FLOAT, H);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopy(gm_add(a->out[c->me], (int64_t)t * a->row_bytes), outb, a->row_bytes);
        SetFlag(MTE3_V, 0);
    }
    WaitFlag(MTE3_V, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

void lll_combine(const lll *c) {
    SetRole("Combine");
    gm_to_ipc(c);
    wait_ipc(c);
    int rc = reduce_cores(c);
    if (c->b < rc) {
        SetRole("CombineGather");
        sum_to_window(c);
    } else if (c->b < rc + c->N) {
        SetRole("CombineSend");
        server_dispatch(c, c->b - rc);
    } else {
        SyncAll();
    }
    SetRole("CombineSum");
    sum_to_server(c);
    SyncAll();
}

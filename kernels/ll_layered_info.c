/*
 * ll_layered_info.c - the layered dispatch's two scalar passes that build
 * the layered combine's tables, as the chip runs them (PR #209,
 * moe_distribute_dispatch_v2_layered_custom.h): loops over UB words on
 * the scalar unit, so every read and write here is a UB access.
 *
 * CreateInnerReduceInfo(j), cores j < N, once server j's stream has
 * arrived (n tokens of rank j * P + lr, in arrival order, their top-k ids
 * alignK apart): per expert of this server, the tokens it got in arrival
 * order, and each token's index among them; the experts' counts as running
 * totals within each rank. Then the tokens in the order they are first
 * met going through the experts in ascending order (a token comes at its
 * smallest expert here) and, per token, its rows (its experts here in k
 * order): innerCnt, the running count of rows per token, and innerOffset,
 * per row its local rank * T * K plus its row in that rank's combine
 * slice for the token's rank (the rows of the rank's earlier experts for
 * that source, then its index), which is where the combine's GM2IPC puts
 * the row.
 *
 * CreateOuterReduceInfo, core N, over this rank's own tokens: per (token,
 * server) how many of its experts are there and the smallest; a running
 * offset per smallest expert; then per token and server it reaches, in
 * server order: outerCntPerServer (its rows there), outerOffset (server
 * * T * K + where its rows start in the block that server sends back:
 * tokens by smallest expert, then arrival, as the inner order puts them)
 * and outerCnt, the running count of servers. The chip strides these by
 * globalBs * K; npurr by T * K, the most one rank's block can hold.
 * Device code: device.h only.
 */
#include "ll.h"

static int32_t get(local_t l, int64_t i) { return UbGet32(l, (uint32_t)i * 4u); }
static void set(local_t l, int64_t i, int32_t v) { UbSet32(l, (uint32_t)i * 4u, v); }

void lll_inner_info(const lll *c, int j, local_t ids, int n, ll_ub u) {
    const ll_args *a = c->a;
    int K = a->topk, L = a->local_experts, PL = c->P * L;
    int64_t S = (int64_t)a->tokens * K;
    uint32_t elen = a->sc_at - a->exp_at;
    int first = c->sv * PL, last = first + PL;
    gm_t cnt_out = gm_add(a->c_inner_cnt[c->me], (int64_t)j * (a->tokens + 1) * 4);
    gm_t off_out = gm_add(a->c_inner_off[c->me], (int64_t)j * S * 4);
    local_t reduce = ll_take(&u, (uint64_t)PL * (uint64_t)(n ? n : 1) * 4);
    local_t exp_cnt = ll_take(&u, (uint64_t)PL * 4);
    local_t tok_off = ll_take(&u, (uint64_t)(n ? n : 1) * (uint64_t)K * 4);
    local_t inner_off = ll_take(&u, (uint64_t)(n ? n : 1) * (uint64_t)K * 4);
    local_t inner_cnt = ll_take(&u, (uint64_t)(n + 1) * 4);
    VecDup(inner_cnt, DT_INT32, 0, (uint32_t)(n + 1));
    if (!n) {   /* nothing arrived: the count table is zeros */
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopyPadOut(cnt_out, inner_cnt, 4);
        PipeBarrier(PIPE_ALL);
        return;
    }
    VecDup(reduce, DT_INT32, -1, (uint32_t)(PL * n));
    VecDup(exp_cnt, DT_INT32, 0, (uint32_t)PL);
    VecDup(tok_off, DT_INT32, 0, (uint32_t)(n * K));
    VecDup(inner_off, DT_INT32, 0, (uint32_t)(n * K));
    SetFlag(V_S, 0);
    WaitFlag(V_S, 0);
    for (int t = 0; t < n; t++)
        for (int k = 0; k < K; k++) {
            int e = UbGet32(ids, (uint32_t)t * elen + (uint32_t)k * 4u);
            if (e < first || e >= last) continue;
            int x = e % PL, at = get(exp_cnt, x);
            set(exp_cnt, x, at + 1);
            set(reduce, (int64_t)x * n + at, t);
            set(tok_off, (int64_t)t * K + k, at);
        }
    for (int x = 0; x < PL; x++)   /* running totals within each rank */
        if (x % L) set(exp_cnt, x, get(exp_cnt, x) + get(exp_cnt, x - 1));
    int tokens = 0, rows = 0;
    for (int x = 0; x < PL; x++) {
        int valid = x % L ? get(exp_cnt, x) - get(exp_cnt, x - 1) : get(exp_cnt, x);
        for (int i = 0; i < valid; i++) {
            int t = get(reduce, (int64_t)x * n + i);
            if (t == -1) continue;
            for (int k = 0; k < K; k++) {
                int e = UbGet32(ids, (uint32_t)t * elen + (uint32_t)k * 4u);
                if (e < first || e >= last) continue;
                int y = e % PL, q = y / L;
                set(reduce, (int64_t)y * n + get(tok_off, (int64_t)t * K + k), -1);
                set(inner_cnt, tokens, get(inner_cnt, tokens) + 1);
                int32_t off = (y % L ? get(exp_cnt, y - 1) : 0) + get(tok_off, (int64_t)t * K + k);
                set(inner_off, rows, (int32_t)(q * S) + off);
                rows++;
            }
            tokens++;
        }
    }
    for (int t = 1; t < n; t++) set(inner_cnt, t, get(inner_cnt, t) + get(inner_cnt, t - 1));
    PipeBarrier(PIPE_ALL);
    DataCopyPadOut(cnt_out, inner_cnt, (uint64_t)(n + 1) * 4);
    PipeBarrier(PIPE_ALL);
    if (rows) DataCopyPadOut(off_out, inner_off, (uint64_t)rows * 4);
    PipeBarrier(PIPE_ALL);
}

void lll_outer_info(const lll *c, ll_ub u) {
    const ll_args *a = c->a;
    int T = a->tokens, K = a->topk, N = c->N, E = a->experts, PL = c->P * a->local_experts;
    int64_t S = (int64_t)T * K;
    local_t min_exp = ll_take(&u, (uint64_t)T * (uint64_t)N * 4);
    local_t in_srv = ll_take(&u, (uint64_t)T * (uint64_t)N * 4);
    local_t offs = ll_take(&u, (uint64_t)E * 4);
    local_t off_idx = ll_take(&u, (uint64_t)T * (uint64_t)N * 4);
    local_t outer_cnt = ll_take(&u, (uint64_t)T * 4);
    local_t outer_off = ll_take(&u, (uint64_t)T * (uint64_t)N * 4);
    local_t outer_per = ll_take(&u, (uint64_t)T * (uint64_t)N * 4);
    local_t ids = ll_take(&u, (uint64_t)T * (uint64_t)K * 4);
    DataCopyPadIn(ids, a->expert_ids[c->me], (uint64_t)T * (uint64_t)K * 4);
    VecDup(min_exp, DT_INT32, E, (uint32_t)(T * N));
    VecDup(offs, DT_INT32, 0, (uint32_t)E);
    VecDup(in_srv, DT_INT32, 0, (uint32_t)(T * N));
    VecDup(outer_cnt, DT_INT32, 0, (uint32_t)T);
    VecDup(outer_off, DT_INT32, 0, (uint32_t)(T * N));
    VecDup(outer_per, DT_INT32, 0, (uint32_t)(T * N));
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    SetFlag(V_S, 0);
    WaitFlag(V_S, 0);
    for (int x = 0; x < T * K; x++) {
        int t = x / K, e = get(ids, x);
        if (e >= 0) {
            int at = t * N + e / PL;
            set(in_srv, at, get(in_srv, at) + 1);
            if (get(min_exp, at) > e) set(min_exp, at, e);
        }
        if (x % K != K - 1) continue;
        for (int s = 0; s < N; s++) {
            int at = t * N + s, m = get(min_exp, at);
            if (m == E) continue;
            set(off_idx, at, get(offs, m));
            set(offs, m, get(offs, m) + get(in_srv, at));
        }
    }
    for (int e = 1; e < E; e++) set(offs, e, get(offs, e) + get(offs, e - 1));
    int idx = 0;
    for (int t = 0; t < T; t++)
        for (int s = 0; s < N; s++) {
            int at = t * N + s, m = get(min_exp, at);
            if (m == E) continue;
            set(outer_cnt, t, get(outer_cnt, t) + 1);
            set(outer_per, idx, get(in_srv, at));
            int32_t pre_server = s == 0 ? 0 : get(offs, s * PL - 1);
            int32_t pre_token = m == 0 ? 0 : get(offs, m - 1);
            set(outer_off, idx, pre_token - pre_server + get(off_idx, at) + (int32_t)(s * S));
            idx++;
        }
    for (int t = 1; t < T; t++) set(outer_cnt, t, get(outer_cnt, t) + get(outer_cnt, t - 1));
    PipeBarrier(PIPE_ALL);
    DataCopyPadOut(a->c_outer_cnt[c->me], outer_cnt, (uint64_t)T * 4);
    PipeBarrier(PIPE_ALL);
    DataCopyPadOut(a->c_outer_off[c->me], outer_off, (uint64_t)T * (uint64_t)N * 4);
    PipeBarrier(PIPE_ALL);
    DataCopyPadOut(a->c_outer_per[c->me], outer_per, (uint64_t)T * (uint64_t)N * 4);
    PipeBarrier(PIPE_ALL);
}

/*
 * ll_layered.c - ll-layered-dispatch-combine's dispatch on the device: A2's
 * layered low-latency dispatch as the chip runs it (sgl-kernel-npu PR #209
 * at 978c4322, csrc/deepep/ops2/op_kernel/moe_distribute_dispatch_v2_
 * layered_custom.h, Process()), every AIV core, SyncAll between the steps:
 *
 *   ReorderTokens   the rank's tokens split over the cores; a core's batch
 *                   of rows GM -> UB, quantized (int8, one scale per row),
 *                   the top-k ids behind each, a SHOULD_SEND flag at the
 *                   head of each struct, each token's mask of servers into
 *                   the workspace; the batch of structs UB -> windowOut;
 *   cores j < N     j not this server: SendDataToServer, one RDMA write per
 *                   token that goes to server j, posted by the core itself
 *                   (AIVRDMAPostSend) to the same-numbered rank there, the
 *                   structs packed in arrival order, then the 64 B end
 *                   status; then CreateInnerReduceInfo of server j's stream
 *                   (ll_layered_info.c);
 *   core N          CreateOuterReduceInfo of this rank's tokens;
 *   the other cores Win2Ipc: (B - N - 1) / N cores per server stream; each
 *                   follows every token of its stream as it arrives (its
 *                   flag, the next token's flag or the end status, read by
 *                   polling as the chip does), counts it for each of its
 *                   experts on this server, and one core in turn copies the
 *                   struct into the IPC window of each such expert's rank
 *                   (over HCCS unless it is this rank), at the running
 *                   count; then the counts into the IPC windows;
 *   IPC barrier     cores < P raise a flag in each local rank and wait for
 *                   theirs;
 *   Ipc2Out         B / L cores per local expert copy its (expert, source)
 *                   segments from this rank's IPC window into expand_x and
 *                   its scales, at the running count; core 0 writes
 *                   epRecvCount and expertTokenNum;
 *   CleanUp         cores < N zero their server block's token flags.
 *
 * Decisions: one call on fresh windows (magic 1, the first buffer); npurr's
 * RDMA lands a message whole, in posting order, where the chip orders only
 * its first fragment after the previous message (why a token is taken when
 * the next one's flag or the end status shows): the protocol is kept, so
 * the receivers' waits are as long as the chip's. Device code: device.h
 * only.
 */
#include "ll.h"

/* Flag ids: MTE2_S 0, MTE3_S 0, V_S 0, S_MTE3 0, MTE2_MTE3 0, MTE3_MTE2 0. */

enum { LLL_WAIT = 1, LLL_ARRIVAL = 2, LLL_SKIP = 3, LLL_FINISH = 0 };

void lll_post(const lll *c, gm_t dst, gm_t src, uint64_t bytes, local_t ub) {
    gm_t blk = gm_add(gm_on_rank(c->a->sq, c->me), (int64_t)c->b * LLL_SQ_BLOCK);
    int32_t head = GetValue32(gm_add(blk, 64));   /* the queue's head, written through */
    PipeBarrier(PIPE_ALL);
    (void)GetValue32(gm_add(blk, 68));            /* its tail: room for one more */
    (void)GetValue64(gm_add(blk, 72));            /* the remote key of the peer's window */
    (void)GetValue64(gm_add(blk, 80));            /* the local key of this rank's */
    /* the work request: opcode and owner bit, length, immediate, sge count
     * and start, rkey, remote address; the data segment: length, lkey,
     * local address */
    const int64_t wqe[LLL_WQE_WORDS] = {3 | 1 << 8, (int64_t)bytes, 0, 1 << 24, 0, 0,
                                        (int64_t)(dst.a & 0xffffffffu), (int64_t)(dst.a >> 32),
                                        (int64_t)bytes, (int64_t)(src.a & 0xffffffffu)};
    for (int w = 0; w < LLL_WQE_WORDS; w++) SetValue32(gm_add(blk, w * 4), wqe[w]);
    PipeBarrier(PIPE_ALL);
    UbSet64(ub, 0, ((int64_t)(head + 1) & 0xffff) << 32 | c->me);   /* the doorbell */
    PipeBarrier(PIPE_ALL);
    DataCopyPadOut(gm_add(blk, 96), ub, 8);
    PipeBarrier(PIPE_ALL);
    UbSet32(ub, 32, head + 1);
    PipeBarrier(PIPE_ALL);
    DataCopyPadOut(gm_add(blk, 64), local_add(ub, 32), 4);
    PipeBarrier(PIPE_ALL);
    RdmaWrite(dst, src, bytes);
}

/* ReorderTokens: this core's tokens into windowOut as structs. */
static void reorder_tokens(const lll *c) {
    const ll_args *a = c->a;
    int K = a->topk, H = a->hidden;
    uint32_t t0, t1, sb = a->struct_bytes;
    ll_split((uint32_t)a->tokens, (uint32_t)c->b, (uint32_t)c->B, &t0, &t1);
    if (c->b == 0)   /* the end status every SendDataToServer posts last */
        SetValue64(gm_add(gm_on_rank(a->win_out, c->me), (int64_t)lll_send_status_at(a)),
                   LLL_END_OF_WRITE);
    if (t0 == t1) return;
    ll_ub u = {c->tbuf, 0};
    local_t ids = ll_take(&u, (uint64_t)a->tokens * (uint64_t)K * 4);
    uint32_t room = UB_BYTES - u.used - 2 * UB_ALIGN;
    uint32_t per = sb + (a->dtype == LL_INT8 ? a->row_bytes : 0);
    uint32_t cap = room / per;
    local_t structs = ll_take(&u, (uint64_t)cap * sb);
    local_t xb = ll_take(&u, a->dtype == LL_INT8 ? (uint64_t)cap * a->row_bytes : 0);
    DataCopyPadIn(ids, a->expert_ids[c->me], (uint64_t)a->tokens * (uint64_t)K * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    int per_server = a->npus * a->local_experts;
    for (uint32_t first = t0; first < t1; first += cap) {
        uint32_t n = t1 - first < cap ? t1 - first : cap;
        if (a->dtype == LL_INT8) {
            DataCopy(xb, gm_add(a->x[c->me], (int64_t)first * a->row_bytes), (uint64_t)n * a->row_bytes);
            PipeBarrier(PIPE_ALL);
            for (uint32_t i = 0; i < n; i++) {   /* QuantProcess: scale behind the ids */
                local_t s = local_add(structs, i * sb);
                VecQuantInt8(local_add(s, a->tok_at), local_add(xb, i * a->row_bytes), DT_BF16,
                             (uint32_t)H, (uint32_t)H);
                SetFlag(V_S, 0);
                WaitFlag(V_S, 0);
                UbSet32(s, a->sc_at, UbGet32(s, a->exp_at));
            }
        } else {
            for (uint32_t i = 0; i < n; i++)
                DataCopyPadIn(local_add(structs, i * sb + a->tok_at),
                              gm_add(a->x[c->me], (int64_t)(first + i) * a->row_bytes), a->row_bytes);
        }
        PipeBarrier(PIPE_ALL);
        for (uint32_t i = 0; i < n; i++)
            DataCopyPadIn(local_add(structs, i * sb + a->exp_at),
                          gm_add(a->expert_ids[c->me], (int64_t)(first + i) * K * 4), (uint64_t)K * 4);
        PipeBarrier(PIPE_ALL);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t t = first + i;
            UbSet64(structs, i * sb, LLL_SHOULD_SEND);
            int64_t mask = 0;
            for (int k = 0; k < K; k++)
                mask |= (int64_t)1 << (UbGet32(ids, (t * (uint32_t)K + (uint32_t)k) * 4u) / per_server);
            PipeBarrier(PIPE_ALL);
            SetValue64(gm_add(a->ws[c->me], (int64_t)t * LLL_FLAG_BYTES), mask);
            PipeBarrier(PIPE_ALL);
        }
        DataCopy(gm_add(gm_on_rank(a->win_out, c->me), (int64_t)first * sb), structs, (uint64_t)n * sb);
        PipeBarrier(PIPE_ALL);
    }
}

/* SendDataToServer(j): every token with an expert on server j, one RDMA
 * write each, then the end status. */
static void send_to_server(const lll *c, int j) {
    const ll_args *a = c->a;
    int dst = c->lr + j * c->P;
    ll_ub u = {c->tbuf, 0};
    local_t masks = ll_take(&u, (uint64_t)a->tokens * LLL_FLAG_BYTES);
    local_t post = ll_take(&u, LLL_WQE_BYTES);
    DataCopy(masks, a->ws[c->me], (uint64_t)a->tokens * LLL_FLAG_BYTES);
    PipeBarrier(PIPE_ALL);
    gm_t out = gm_on_rank(a->win_out, c->me), to = lll_block(a, dst, c->sv);
    int sent = 0;
    for (int t = 0; t < a->tokens; t++) {
        if (!(UbGet64(masks, (uint32_t)t * LLL_FLAG_BYTES) & ((int64_t)1 << j))) continue;
        lll_post(c, gm_add(to, (int64_t)sent * a->struct_bytes),
                 gm_add(out, (int64_t)t * a->struct_bytes), a->struct_bytes, post);
        sent++;
        PipeBarrier(PIPE_ALL);
    }
    CoreNote("sent", sent);
    lll_post(c, lll_end_status(a, dst, c->sv), gm_add(out, (int64_t)lll_send_status_at(a)),
             LLL_FLAG_BYTES, post);
    PipeBarrier(PIPE_ALL);
}

/* GetSelfServerTokenInfo: this rank's own token t, if it goes to this
 * server: its struct (or only its ids) into tok. */
static int self_token(const lll *c, int t, int just, local_t st, local_t tok) {
    const ll_args *a = c->a;
    if (t >= a->tokens) return LLL_FINISH;
    DataCopy(st, gm_add(a->ws[c->me], (int64_t)t * LLL_FLAG_BYTES), LLL_FLAG_BYTES);
    PipeBarrier(PIPE_ALL);
    if (!(UbGet64(st, 0) & ((int64_t)1 << c->sv))) return LLL_SKIP;
    gm_t s = gm_add(gm_on_rank(a->win_out, c->me), (int64_t)t * a->struct_bytes);
    if (just) DataCopy(tok, gm_add(s, a->exp_at), a->sc_at - a->exp_at);
    else DataCopy(tok, s, a->struct_bytes);
    PipeBarrier(PIPE_ALL);
    return LLL_ARRIVAL;
}

/* GetArrivedTokenInfo: token idx of server j's stream, polled as the chip
 * polls it: the end status, its flag, the next token's flag. */
static int arrived_token(const lll *c, int j, int idx, int just, local_t st, local_t tok) {
    const ll_args *a = c->a;
    gm_t blk = lll_block(a, c->me, j);
    gm_t s = gm_add(blk, (int64_t)idx * a->struct_bytes);
    for (;;) {
        DataCopy(st, lll_end_status(a, c->me, j), LLL_FLAG_BYTES);
        PipeBarrier(PIPE_ALL);
        int64_t end = UbGet64(st, 0);
        DataCopy(st, s, LLL_FLAG_BYTES);
        PipeBarrier(PIPE_ALL);
        int64_t flag = UbGet64(st, 0);
        DataCopy(st, gm_add(s, a->struct_bytes), LLL_FLAG_BYTES);
        PipeBarrier(PIPE_ALL);
        int64_t next = UbGet64(st, 0);
        if (next == LLL_SHOULD_SEND || (end == LLL_END_OF_WRITE && flag == LLL_SHOULD_SEND)) {
            if (just) DataCopy(tok, gm_add(s, a->exp_at), a->sc_at - a->exp_at);
            else DataCopy(tok, s, a->struct_bytes);
            PipeBarrier(PIPE_ALL);
            return LLL_ARRIVAL;
        }
        if (end == LLL_END_OF_WRITE) return LLL_FINISH;
    }
}

/* The next token of server j's stream into tok (ids only when just):
 * ARRIVAL, SKIP (own stream: not for this server) or FINISH. */
static int next_token(const lll *c, int j, int idx, int *self_idx, int just, local_t st,
                      local_t tok) {
    if (j != c->sv) return arrived_token(c, j, idx, just, st, tok);
    int s = self_token(c, *self_idx, just, st, tok);
    if (s != LLL_FINISH) ++*self_idx;
    return s;
}

/* Cores 0..N-1 after sending: the arrived tokens' ids of stream j, then
 * CreateInnerReduceInfo. */
static void inner_reduce(const lll *c, int j) {
    const ll_args *a = c->a;
    uint32_t elen = a->sc_at - a->exp_at;
    ll_ub u = {c->tbuf, 0};
    local_t st = ll_take(&u, LLL_FLAG_BYTES);
    local_t ids = ll_take(&u, (uint64_t)(a->tokens + 1) * elen);
    int n = 0, self = 0;
    for (;;) {
        int s = next_token(c, j, n, &self, 1, st, local_add(ids, (uint32_t)n * elen));
        if (s == LLL_FINISH) break;
        if (s == LLL_ARRIVAL) n++;
    }
    CoreNote("arrived", n);
    lll_inner_info(c, j, ids, n, u);
}

/* Win2Ipc: this core's share of one server's stream into the IPC windows. */
static void win_to_ipc(const lll *c) {
    const ll_args *a = c->a;
    int N = c->N, P = c->P, L = a->local_experts, W = a->num_ranks, K = a->topk;
    int cps = (c->B - N - 1) / N, logic = c->b - N - 1;
    if (logic >= cps * N) return;
    int from = logic / cps, mine = logic % cps, src = from * P + c->lr;
    int first = c->sv * P * L, last = first + P * L;
    ll_ub u = {c->tbuf, 0};
    local_t counts = ll_take(&u, (uint64_t)P * (uint64_t)L * UB_ALIGN);
    local_t st = ll_take(&u, LLL_FLAG_BYTES);
    local_t tok = ll_take(&u, a->struct_bytes);
    VecDup(counts, DT_INT32, 0, (uint32_t)(P * L * 8));
    PipeBarrier(PIPE_ALL);
    int idx = 0, self = 0, copied = 0;
    for (;;) {
        int just = idx % cps != mine;
        int s = next_token(c, from, idx, &self, just, st, tok);
        if (s == LLL_FINISH) break;
        if (s != LLL_ARRIVAL) continue;
        local_t ids = just ? tok : local_add(tok, a->exp_at);
        for (int k = 0; k < K; k++) {
            int e = UbGet32(ids, (uint32_t)k * 4u);
            if (e < first || e >= last) continue;
            uint32_t at = (uint32_t)(e % (P * L)) * UB_ALIGN;
            int32_t row = UbGet32(counts, at);
            UbSet32(counts, at, row + 1);
            if (just) continue;
            PipeBarrier(PIPE_ALL);
            DataCopy(gm_add(lll_ipc_seg(a, e / L, e % L, src), (int64_t)row * a->struct_bytes), tok,
                     a->struct_bytes);
            PipeBarrier(PIPE_ALL);
            copied++;
        }
        idx++;
    }
    CoreNote("copied", copied);
    for (int e = first + mine; e < last; e += cps) {   /* the counts, cps experts a round */
        gm_t cnt = gm_add(gm_on_rank(a->ipc, e / L),
                          (int64_t)(lll_ipc_cnt_at(a) + ((uint64_t)(e % L) * (uint64_t)W +
                                                         (uint64_t)src) * UB_ALIGN));
        PipeBarrier(PIPE_ALL);
        DataCopy(cnt, local_add(counts, (uint32_t)(e % (P * L)) * UB_ALIGN), UB_ALIGN);
        PipeBarrier(PIPE_ALL);
    }
    PipeBarrier(PIPE_ALL);
}

/* SetIpcFlag / WaitIpcFlag: cores < P, magic 1. */
static void ipc_barrier(const lll *c) {
    const ll_args *a = c->a;
    if (c->b >= c->P) return;
    local_t ub = c->tbuf;
    int peer = c->sv * c->P + c->b;
    UbSet64(ub, 0, 1);
    SetFlag(S_MTE3, 0);
    WaitFlag(S_MTE3, 0);
    DataCopy(gm_add(gm_on_rank(a->ipc, peer), (int64_t)c->lr * LLL_IPC_FLAG_BYTES), ub,
             LLL_IPC_FLAG_BYTES);
    PipeBarrier(PIPE_ALL);
    if (a->inject == 1) return;   /* no-ipc-barrier */
    WaitGM64(gm_add(gm_on_rank(a->ipc, c->me), (int64_t)c->b * LLL_IPC_FLAG_BYTES), COND_GE, 1);
}

/* Ipc2Out: this core's (expert, source) segments into expand_x. */
static void ipc_to_out(const lll *c) {
    const ll_args *a = c->a;
    int L = a->local_experts, W = a->num_ranks;
    int cpe = c->B / L;
    if (c->b >= cpe * L) return;
    int le = c->b / cpe, local = c->b % cpe;
    int per = W / cpe, rem = W % cpe;
    int mine = local < rem ? per + 1 : per, pre = local < rem ? local : rem;
    ll_ub u = {c->tbuf, 0};
    local_t cnt = ll_take(&u, (uint64_t)L * (uint64_t)W * UB_ALIGN);
    local_t etn = ll_take(&u, (uint64_t)L * 8);
    uint32_t room = UB_BYTES - u.used - UB_ALIGN, sb = a->struct_bytes;
    uint32_t cap = room / sb;
    local_t tok = ll_take(&u, (uint64_t)cap * sb);
    PipeBarrier(PIPE_ALL);
    DataCopy(cnt, gm_add(gm_on_rank(a->ipc, c->me), (int64_t)lll_ipc_cnt_at(a)),
             (uint64_t)L * (uint64_t)W * UB_ALIGN);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    int32_t sum = 0;
    for (int i = 0; i < L * W; i++) {   /* in place: the running count per segment */
        sum += UbGet32(cnt, (uint32_t)i * UB_ALIGN);
        UbSet32(cnt, (uint32_t)i * 4u, sum);
    }
    int first = le * W + local * per + pre;
    int32_t row = first ? UbGet32(cnt, (uint32_t)(first - 1) * 4u) : 0;
    PipeBarrier(PIPE_ALL);
    for (int i = 0; i < mine; i++) {
        int sr = first + i;
        int32_t n = UbGet32(cnt, (uint32_t)sr * 4u) - (sr ? UbGet32(cnt, (uint32_t)(sr - 1) * 4u) : 0);
        gm_t seg = lll_ipc_seg(a, c->me, sr / W, sr % W);
        for (int32_t done = 0; done < n;) {
            uint32_t m = (uint32_t)(n - done) < cap ? (uint32_t)(n - done) : cap;
            DataCopy(tok, gm_add(seg, (int64_t)done * sb), (uint64_t)m * sb);
            SetFlag(MTE2_MTE3, 0);
            WaitFlag(MTE2_MTE3, 0);
            for (uint32_t j = 0; j < m; j++)
                DataCopyPadOut(gm_add(a->expand_x[c->me], (int64_t)(row + done + (int32_t)j) * a->xrow_bytes),
                               local_add(tok, j * sb + a->tok_at), a->xrow_bytes);
            PipeBarrier(PIPE_ALL);
            if (a->dtype == LL_INT8)
                for (uint32_t j = 0; j < m; j++)
                    DataCopyPadOut(gm_add(a->dynamic_scales[c->me], (int64_t)(row + done + (int32_t)j) * 4),
                                   local_add(tok, j * sb + a->sc_at), 4);
            SetFlag(MTE3_MTE2, 0);
            WaitFlag(MTE3_MTE2, 0);
            done += (int32_t)m;
        }
        row += n;
    }
    if (c->b == 0) {
        for (int e = 0; e < L; e++) UbSet64(etn, (uint32_t)e * 8u, UbGet32(cnt, (uint32_t)(e * W + W - 1) * 4u));
        SetFlag(S_MTE3, 0);
        WaitFlag(S_MTE3, 0);
        DataCopyPadOut(a->ep_recv_count[c->me], cnt, (uint64_t)L * (uint64_t)W * 4);
        DataCopyPadOut(a->expert_token_num[c->me], etn, (uint64_t)L * 8);
    }
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* CleanUp: core j < N zeroes server block j's token flags. */
static void clean_up(const lll *c) {
    const ll_args *a = c->a;
    if (c->b >= c->N) return;
    local_t zero = c->tbuf;
    VecDup(zero, DT_INT32, 0, UB_ALIGN / 4);
    SetFlag(V_MTE3, 0);
    WaitFlag(V_MTE3, 0);
    gm_t blk = lll_block(a, c->me, c->b);
    for (int t = 0; t < a->tokens; t++)
        DataCopy(gm_add(blk, (int64_t)t * a->struct_bytes), zero, UB_ALIGN);
    if (c->b == c->N - 1)
        for (int j = 0; j < c->N; j++) DataCopy(lll_end_status(a, c->me, j), zero, UB_ALIGN);
    PipeBarrier(PIPE_ALL);
}

static void dispatch(const lll *c) {
    SetRole("Dispatch");
    reorder_tokens(c);
    PipeBarrier(PIPE_ALL);
    SyncAll();
    if (c->b < c->N) {
        if (c->b != c->sv) {
            SetRole("DispatchSend");
            send_to_server(c, c->b);
        }
        SetRole("DispatchInner");
        inner_reduce(c, c->b);
    } else if (c->b == c->N) {
        SetRole("DispatchOuter");
        lll_outer_info(c, (ll_ub){c->tbuf, 0});
    } else {
        SetRole("DispatchWin2Ipc");
        win_to_ipc(c);
    }
    PipeBarrier(PIPE_ALL);
    SyncAll();
    SetRole("DispatchIpc2Out");
    ipc_barrier(c);
    PipeBarrier(PIPE_ALL);
    SyncAll();
    ipc_to_out(c);
    clean_up(c);
    PipeBarrier(PIPE_ALL);
    SyncAll();
}

void ll_layered_kernel(const void *args) {
    const ll_args *a = args;
    lll c = {.a = a, .me = GetRank(), .b = GetBlockIdx(), .B = GetBlockNum(), .N = a->nodes,
             .P = a->npus};
    c.sv = c.me / c.P;
    c.lr = c.me % c.P;
    c.tbuf = AllocUB(UB_BYTES);
    dispatch(&c);
    ll_expert_ffn(a, c.tbuf);
    lll_combine(&c);
}

/*
 * dispatch_notify_a2.c - `--notify a2`: the notify of sgl-kernel-npu's A2
 * layered dispatch (NotifyDispatchA2, csrc/deepep/ops2/op_kernel/
 * notify_dispatch_a2.h at 3a90dfa1), on device, in place of DeepEP's
 * exchange of count rows. Public Atlas A2 measurements time this kernel
 * (Notify_T, issue #26), so its costs are the ones it pays:
 *
 *   1. Between servers: one core copies the rank's blob (its layout counts,
 *      then per-token sections padded to MAX_BS = 4096 tokens: 8.47 MB at
 *      256 experts) into windowOut with a status entry before and a flag
 *      after; core 0 posts it in one BatchWrite to the other server's
 *      same-numbered rank, polls both flags of the blob coming the other
 *      way, and copies it out alone.
 *   2. Within the server: core 0 copies its own blob into its IPC share
 *      window and raises a flag on every local rank; then up to 20 cores
 *      each wait one flag and pull one whole blob (a local peer's own, or
 *      the one it received from the other server) over HCCS: recv_data
 *      ends up holding all ranks' blobs.
 *   3. SplitAndCalcData: index passes at A2's sizes: [ranks][experts] count
 *      tables moved one int at a time, the [experts][MAX_BS] order sections
 *      copied per expert, offsetInner per padded token, and, per received
 *      (expert, source, token), a 4 B read and two 4 B writes behind full
 *      pipe barriers (BuildSrcDstOffsetData: the per-row scalar loop).
 *
 * `--notify a2-pre211` runs the file as it was before PR #211 (3a90dfa1's
 * parent; the published two-server Notify_T rows of PRs #193, #202 and
 * #211's before_* timed it): BuildLocalEpRankTokenCntData reads each
 * (local expert, source rank) count as its own 4 B copy behind MTE2_S and a
 * full pipe barrier instead of one copy and a vector sum per expert, and
 * core 0 builds no total of received tokens (BuildTotalRecvTokensData came
 * with #211). #202 between them only widened the barrier's magic to 64 bits.
 *
 * Then core 0 reads, from every source's blob, its tokens to this rank and
 * its counts of this rank's experts, and builds the same prefix sums the
 * DeepEP notify does (dispatch_notify.c), so the data phase is unchanged.
 * The per-token sections are zeros (deep_ep.cpp allocates the blob with
 * at::zeros; A2's layout kernel fills them, npurr's receivers place tokens
 * by SourceMeta and never read them): they travel and are indexed at their
 * real size. Flags use magic 0 (one notify a run): value 1.
 * Device code: device.h only.
 */
#include "dispatch_device.h"

#define A2_FLAG_VALUE (-1)   /* the status and data flags of a blob in flight */

/* A2 core split (SplitCoreCal and friends): n items over cores, this
 * core's [begin, end). */
static void split(int n, int cores, int idx, int *begin, int *end) {
    int per = n / cores, rem = n % cores;
    *begin = per * idx + (idx < rem ? idx : rem);
    *end = *begin + per + (idx < rem ? 1 : 0);
}

/* CpGM2GMPingPong: GM -> GM through two UB halves, MTE2 of the next chunk
 * under MTE3 of this one. */
static void copy_gm(local_t buf[2], gm_t dst, gm_t src, uint64_t bytes) {
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    for (uint64_t off = 0, i = 0; off < bytes; i++) {
        uint64_t n = bytes - off < DISPATCH_A2_COPY_CHUNK ? bytes - off : DISPATCH_A2_COPY_CHUNK;
        int b = (int)(i & 1);
        WaitFlag(MTE3_MTE2, b);
        dispatch_copy_in(buf[b], gm_add(src, (int64_t)off), n);
        SetFlag(MTE2_MTE3, b);
        WaitFlag(MTE2_MTE3, b);
        dispatch_copy_out(gm_add(dst, (int64_t)off), buf[b], n);
        SetFlag(MTE3_MTE2, b);
        off += n;
    }
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

static gm_t slot(const dispatch_args *a, gm_t base, int rank, int s) {
    return gm_add(gm_on_rank(base, rank), (int64_t)((uint64_t)s * a->al.slot_bytes));
}

/* The count sections of this rank's blob, from the layout counters (A2's
 * DispatchLayout kernel writes them before the notify starts). */
static void fill_counts(const dispatch_args *a, int me, local_t ub) {
    const dispatch_shape *sh = &a->sh;
    const dispatch_count_layout *cl = &a->cl;
    const dispatch_a2_layout *al = &a->al;
    /* (counter, blob section, ints): each through its own 32 B aligned UB part */
    const uint32_t from[3] = {cl->per_expert, cl->per_node, cl->per_rank};
    const uint32_t to[3] = {al->per_expert, al->per_server, al->per_rank};
    const int n[3] = {sh->experts, sh->nodes, sh->num_ranks};
    local_t part[3];
    for (int i = 0; i < 3; i++) {
        part[i] = ub;
        ub = local_add(ub, (uint32_t)kit_align_up((uint64_t)n[i] * 4, UB_ALIGN));
        DataCopyPadIn(part[i], gm_add(a->layout_counts[me], (int64_t)from[i] * 4),
                      (uint64_t)n[i] * 4);
    }
    SetFlag(MTE2_MTE3, 0);
    WaitFlag(MTE2_MTE3, 0);
    for (int i = 0; i < 3; i++)
        DataCopyPadOut(gm_add(a->a2_send[me], (int64_t)to[i] * 4), part[i], (uint64_t)n[i] * 4);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* ProcessBetweenServer: the blob to the other server's same-numbered rank
 * in one BatchWrite item, [status | blob | flag], and the one coming back. */
static void between_servers(const dispatch_args *a, int me, int b, int B, local_t buf[2],
                            local_t small) {
    const dispatch_shape *sh = &a->sh;
    const dispatch_a2_layout *al = &a->al;
    int P = sh->npus, peer = (1 - me / P) * P + me % P;
    uint64_t data = (uint64_t)al->len * 4;
    gm_t out = slot(a, a->a2_window_out, me, peer);
    if (b == (B > 1 ? 1 : 0)) {   /* InputToWindowOut: block 1 */
        copy_gm(buf, gm_add(out, DISPATCH_A2_STATUS_BYTES), a->a2_send[me], data);
        VecDup(small, DT_INT32, 0, DISPATCH_A2_STATUS_BYTES / 4);
        SetFlag(V_S, 0);
        WaitFlag(V_S, 0);
        UbSet32(small, 0, A2_FLAG_VALUE);
        UbSet32(small, 4, me);
        UbSet32(small, 8, peer);
        UbSet32(small, 12, (int32_t)al->len);
        DataCopy(out, small, DISPATCH_A2_STATUS_BYTES);
        DataCopy(gm_add(out, (int64_t)(DISPATCH_A2_STATUS_BYTES + data)), small,
                 DISPATCH_A2_STATUS_BYTES);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
    }
    if (b == 0) {   /* ConstructBatchWriteInfo: one 32 B item */
        UbSet64(small, 0, (int64_t)out.a);
        UbSet64(small, 8, (int64_t)slot(a, a->a2_share, peer, me).a);
        UbSet64(small, 16, (int64_t)(data + 2 * DISPATCH_A2_STATUS_BYTES));
        UbSet32(small, 24, DT_INT8);
        UbSet32(small, 28, peer);
        DataCopy(a->a2_tasks[me], small, sizeof(batch_write_task));
        PipeBarrier(PIPE_ALL);
    }
    SyncAll();
    if (b == 0) {
        BatchWrite(a->a2_tasks[me], 1);
        /* WaitRdma: the status entry, then the flag after the data. */
        gm_t in = slot(a, a->a2_share, me, peer);
        WaitGM32(in, COND_EQ, A2_FLAG_VALUE);
        gm_t tail = gm_add(in, (int64_t)(DISPATCH_A2_STATUS_BYTES + data));
        WaitGM32(tail, COND_EQ, A2_FLAG_VALUE);
        SetValue32(tail, 0);
    }
    SyncAll();
    if (b == 0)   /* WindowInToOutput: block 0 alone */
        copy_gm(buf, dispatch_a2_blob(a, me, peer, 0),
                gm_add(slot(a, a->a2_share, me, peer), DISPATCH_A2_STATUS_BYTES), data);
}

static gm_t flag_word(const dispatch_args *a, int rank, int index) {
    return gm_add(gm_on_rank(a->a2_flags, rank), (int64_t)index * DISPATCH_A2_FLAG_BYTES);
}

/* ProcessWithinServer: InputToShareSlice on core 0, then ShareToShareSlice:
 * data block i is local peer i / N's blob from server i % N. */
static void within_server(const dispatch_args *a, int me, int b, local_t buf[2], local_t small) {
    const dispatch_shape *sh = &a->sh;
    int P = sh->npus, N = sh->nodes, R = sh->num_ranks, node = me / P;
    int cores = R < DISPATCH_A2_WITHIN_CORES ? R : DISPATCH_A2_WITHIN_CORES;
    if (b >= cores) return;
    uint64_t data = (uint64_t)a->al.len * 4;
    if (b == 0) {
        copy_gm(buf, gm_add(slot(a, a->a2_share, me, me), DISPATCH_A2_STATUS_BYTES),
                a->a2_send[me], data);
        for (int i = 0; i < P; i++)
            for (int j = 0; j < N; j++) {
                SetFlag(MTE3_S, 0);
                WaitFlag(MTE3_S, 0);
                UbSet64(small, 0, 1);
                SetFlag(S_MTE3, 0);
                WaitFlag(S_MTE3, 0);
                DataCopy(flag_word(a, node * P + i, me + j * R), small, DISPATCH_A2_FLAG_BYTES);
            }
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
    }
    int begin, end;
    split(P * N, cores, b, &begin, &end);
    for (int i = begin; i < end; i++) {
        int holder = node * P + i / N, owner = (i % N) * P + i / N;
        WaitGM64(flag_word(a, me, i / N + node * P + (i % N) * R), COND_EQ, 1);
        copy_gm(buf, dispatch_a2_blob(a, me, owner, 0),
                gm_add(slot(a, a->a2_share, holder, owner), DISPATCH_A2_STATUS_BYTES), data);
    }
}

/* ------------------------------------------------------------ SplitAndCalcData */

typedef struct a2_split {
    const dispatch_args *a;
    int me, b, B;
    gm_t out;                            /* a2_scratch of this rank */
    local_t big, big2, ones, e1, e2, e3, f1, word;
} a2_split;

/* Int int_off of rank s's blob in this rank's recv_data. */
static gm_t blob(const a2_split *x, int s, uint32_t int_off) {
    return dispatch_a2_blob(x->a, x->me, s, int_off);
}

static gm_t out_at(const a2_split *x, uint64_t section, uint64_t int_index) {
    return gm_add(x->out, (int64_t)(section + int_index * 4));
}

/* One int GM -> UB -> GM, behind MTE3 -> MTE2 as A2's loops do it. */
static void move_int(local_t w, gm_t dst, gm_t src) {
    WaitFlag(MTE3_MTE2, 0);
    DataCopyPadIn(w, src, 4);
    SetFlag(MTE2_MTE3, 0);
    WaitFlag(MTE2_MTE3, 0);
    DataCopyPadOut(dst, w, 4);
    SetFlag(MTE3_MTE2, 0);
}

/* GetRankEpTokenCntData and GetExpertMaxBsSrcData: per source rank of this
 * core, its expert counts and its [E][MAX_BS] order section. */
static void gather_sources(const a2_split *x) {
    const dispatch_a2_layout *al = &x->a->al;
    int R = x->a->sh.num_ranks, E = x->a->sh.experts, lo, hi;
    uint64_t row = (uint64_t)DISPATCH_A2_MAX_BS * 4;
    split(R, x->B, x->b, &lo, &hi);
    SetFlag(MTE3_MTE2, 0);
    for (int i = lo; i < hi; i++) {
        WaitFlag(MTE3_MTE2, 0);
        dispatch_copy_in(x->e1, blob(x, i, al->per_expert), (uint64_t)E * 4);
        SetFlag(MTE2_MTE3, 0);
        WaitFlag(MTE2_MTE3, 0);
        dispatch_copy_out(out_at(x, al->g_rank_ep, (uint64_t)i * E), x->e1, (uint64_t)E * 4);
        SetFlag(MTE3_MTE2, 0);
    }
    for (int i = lo; i < hi; i++)
        for (int j = 0; j < E; j++) {
            WaitFlag(MTE3_MTE2, 0);
            DataCopy(x->big, blob(x, i, al->expert_src + (uint32_t)j * DISPATCH_A2_MAX_BS), row);
            SetFlag(MTE2_MTE3, 0);
            WaitFlag(MTE2_MTE3, 0);
            DataCopy(out_at(x, al->g_exp_src, ((uint64_t)i * E + j) * DISPATCH_A2_MAX_BS), x->big,
                     row);
            SetFlag(MTE3_MTE2, 0);
        }
    WaitFlag(MTE3_MTE2, 0);
    PipeBarrier(PIPE_ALL);
}

/* BuildEpRankTokenCntData: [R][E] -> [E][R], one int at a time. */
static void transpose_counts(const a2_split *x) {
    const dispatch_a2_layout *al = &x->a->al;
    int R = x->a->sh.num_ranks, E = x->a->sh.experts, lo, hi;
    split(R, x->B, x->b, &lo, &hi);
    SetFlag(MTE3_MTE2, 0);
    for (int s = lo; s < hi; s++)
        for (int e = 0; e < E; e++)
            move_int(x->word, out_at(x, al->ep_rank, (uint64_t)e * R + s),
                     out_at(x, al->g_rank_ep, (uint64_t)s * E + e));
    WaitFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* Sum of n ints at src (A2: Cast to float, ReduceSum, GetValue; npurr has
 * no vector reduction: the cast is issued and the sum read on the scalar
 * unit, which costs about what the reduction's result read does). */
static int32_t sum_ints(const a2_split *x, gm_t src, int n) {
    dispatch_copy_in(x->e1, src, (uint64_t)n * 4);
    SetFlag(MTE2_V, 0);
    WaitFlag(MTE2_V, 0);
    VecCast(x->f1, DT_FLOAT, x->e1, DT_INT32, (uint32_t)n);
    SetFlag(V_S, 0);
    WaitFlag(V_S, 0);
    int32_t sum = 0;
    for (int i = 0; i < n; i++) sum += UbGet32(x->e1, (uint32_t)i * 4u);
    return sum;
}

/* BuildLocalEpRankTokenCntData before PR #211: per local expert of this
 * core, its R counts read one 4 B copy at a time (MTE3 -> MTE2 before each,
 * MTE2 -> S after, a full pipe barrier), the total stored as int32. */
static void local_expert_totals_pre211(const a2_split *x) {
    const dispatch_a2_layout *al = &x->a->al;
    int R = x->a->sh.num_ranks, L = x->a->sh.local_experts, lo, hi;
    split(L, x->B, x->b, &lo, &hi);
    if (lo == hi) return;
    SetFlag(MTE3_MTE2, 0);
    for (int i = lo; i < hi; i++) {
        int e = x->me * L + i;
        int32_t total = 0;
        for (int s = 0; s < R; s++) {
            WaitFlag(MTE3_MTE2, 0);
            DataCopyPadIn(x->word, out_at(x, al->ep_rank, (uint64_t)e * R + (uint64_t)s), 4);
            SetFlag(MTE2_S, 0);
            WaitFlag(MTE2_S, 0);
            total += UbGet32(x->word, 0);
            PipeBarrier(PIPE_ALL);
            SetFlag(MTE3_MTE2, 0);
        }
        UbSet32(x->word, 0, total);
        PipeBarrier(PIPE_ALL);
        DataCopyPadOut(gm_add(x->out, (int64_t)(al->local_ep + (uint64_t)i * 8)), x->word, 4);
    }
    WaitFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* BuildLocalEpRankTokenCntData: tokens each local expert receives, int64. */
static void local_expert_totals(const a2_split *x) {
    const dispatch_a2_layout *al = &x->a->al;
    int R = x->a->sh.num_ranks, L = x->a->sh.local_experts, lo, hi;
    if (x->a->sh.notify_a2_pre211) {
        local_expert_totals_pre211(x);
        return;
    }
    split(L, x->B, x->b, &lo, &hi);
    for (int i = lo; i < hi; i++) {
        int e = x->me * L + i;
        int64_t n = sum_ints(x, out_at(x, al->ep_rank, (uint64_t)e * R), R);
        UbSet64(x->word, 0, n);
        PipeBarrier(PIPE_ALL);
        DataCopyPadOut(gm_add(x->out, (int64_t)(al->local_ep + (uint64_t)i * 8)), x->word, 8);
    }
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* The passes that copy one MAX_BS section per item and subtract 1
 * (BuildTokenSeverIdxData, BuildExpandIdxData); count items from blob
 * int offset src, to scratch section dst. */
static void minus_one_sections(const a2_split *x, uint32_t src, uint64_t dst, int count) {
    uint64_t row = (uint64_t)DISPATCH_A2_MAX_BS * 4;
    SetFlag(MTE3_MTE2, 0);
    for (int i = 0; i < count; i++) {
        WaitFlag(MTE3_MTE2, 0);
        DataCopy(x->big, blob(x, x->me, src + (uint32_t)i * DISPATCH_A2_MAX_BS), row);
        SetFlag(MTE2_V, 0);
        WaitFlag(MTE2_V, 0);
        VecAdd(x->big2, x->big, x->ones, DT_INT32, DISPATCH_A2_MAX_BS);
        PipeBarrier(PIPE_V);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopy(out_at(x, dst, (uint64_t)i * DISPATCH_A2_MAX_BS), x->big2, row);
        SetFlag(MTE3_MTE2, 0);
    }
    WaitFlag(MTE3_MTE2, 0);
}

/* Cores 0-3: one small builder each (A2's split by function). */
static void small_builders(const a2_split *x) {
    const dispatch_a2_layout *al = &x->a->al;
    const dispatch_shape *sh = &x->a->sh;
    int N = sh->nodes, E = sh->experts, R = sh->num_ranks, L = sh->local_experts;
    uint32_t M = DISPATCH_A2_MAX_BS;
    if (x->b == 0) {   /* BuildTokenUniquePerServerData, BuildTotalRecvTokensData */
        DataCopyPadIn(x->e1, blob(x, x->me, al->per_server), (uint64_t)N * 4);
        SetFlag(MTE2_MTE3, 0);
        WaitFlag(MTE2_MTE3, 0);
        DataCopyPadOut(out_at(x, al->unique_server, 0), x->e1, (uint64_t)N * 4);
        SetFlag(MTE3_MTE2, 0);
        WaitFlag(MTE3_MTE2, 0);
        if (x->a->sh.notify_a2_pre211) {   /* no total before PR #211 */
            SetFlag(MTE3_S, 0);
            WaitFlag(MTE3_S, 0);
            return;
        }
        int32_t total = 0;
        for (int i = 0; i < L; i++)
            total += sum_ints(x, out_at(x, al->ep_rank, (uint64_t)(x->me * L + i) * R), R);
        UbSet32(x->word, 0, total);
        PipeBarrier(PIPE_ALL);
        DataCopyPadOut(out_at(x, al->total_recv, 0), x->word, 4);
    } else if (x->b == 1) {
        minus_one_sections(x, al->per_server + (uint32_t)N + M * (uint32_t)N + M,
                           al->token_server_idx, N);
    } else if (x->b == 2) {   /* BuildCountOuterData */
        DataCopy(x->big, blob(x, x->me, al->per_server + (uint32_t)N + M * (uint32_t)N),
                 (uint64_t)M * 4);
        SetFlag(MTE2_MTE3, 0);
        WaitFlag(MTE2_MTE3, 0);
        DataCopy(out_at(x, al->count_outer, 0), x->big, (uint64_t)M * 4);
    } else if (x->b == 3) {
        minus_one_sections(x, al->token_expert, al->expand_idx, E);
    }
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* GetEpRankSumCnt: exclusive prefix of rank src's expert counts, restarting
 * at every server's first expert, one element at a time behind PIPE_ALL. */
static void expert_prefix(const a2_split *x, int src) {
    int E = x->a->sh.experts, per_server = E / x->a->sh.nodes;
    dispatch_copy_in(x->e3, blob(x, src, x->a->al.per_expert), (uint64_t)E * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    int32_t pre = 0;
    for (int i = 0; i < E; i++) {
        if (i % per_server == 0) pre = 0;
        int32_t v = UbGet32(x->e3, (uint32_t)i * 4u);
        PipeBarrier(PIPE_ALL);
        UbSet32(x->e3, (uint32_t)i * 4u, pre);
        PipeBarrier(PIPE_ALL);
        pre += v;
    }
}

/* BuildOffsetInnerData on cores [4, half): per padded token, its expert
 * order row plus the prefix, for this rank and its peer. A2's Mins and Mul
 * (which mask the experts a token skips) have no int32 form in npurr's
 * device API: they are issued as adds of the same length, which cost the
 * vector unit the same; nothing npurr runs reads these offsets. */
static void offset_inner(const a2_split *x, int first_core, int cores) {
    const dispatch_a2_layout *al = &x->a->al;
    const dispatch_shape *sh = &x->a->sh;
    int E = sh->experts, P = sh->npus, lo, hi;
    split(DISPATCH_A2_MAX_BS, cores, x->b - first_core, &lo, &hi);
    if (lo == hi) return;
    int peer = (1 - x->me / P) * P + x->me % P;
    int ranks[2] = {x->me < peer ? x->me : peer, x->me < peer ? peer : x->me};
    VecDup(x->ones, DT_INT32, -1, (uint32_t)E);
    PipeBarrier(PIPE_V);
    for (int r = 0; r < 2; r++) {
        expert_prefix(x, ranks[r]);
        SetFlag(MTE3_MTE2, 0);
        for (int t = lo; t < hi; t++) {
            WaitFlag(MTE3_MTE2, 0);
            dispatch_copy_in(x->e1, blob(x, ranks[r], al->token_expert + (uint32_t)(t * E)),
                             (uint64_t)E * 4);
            SetFlag(MTE2_V, 0);
            WaitFlag(MTE2_V, 0);
            VecAdd(x->e2, x->e1, x->ones, DT_INT32, (uint32_t)E);   /* Mins (mask) */
            VecAdd(x->e2, x->e1, x->ones, DT_INT32, (uint32_t)E);   /* Sub 1 */
            PipeBarrier(PIPE_V);
            VecAdd(x->e1, x->e3, x->ones, DT_INT32, (uint32_t)E);   /* Mul by the mask */
            PipeBarrier(PIPE_V);
            VecAdd(x->e1, x->e2, x->e1, DT_INT32, (uint32_t)E);     /* Add */
            PipeBarrier(PIPE_V);
            SetFlag(V_MTE3, 0);
            WaitFlag(V_MTE3, 0);
            uint64_t row = ((uint64_t)r * DISPATCH_A2_MAX_BS + (uint64_t)t) * (uint64_t)E;
            dispatch_copy_out(out_at(x, al->offset_inner, row), x->e1, (uint64_t)E * 4);
            SetFlag(MTE3_MTE2, 0);
        }
        WaitFlag(MTE3_MTE2, 0);
    }
}

/* BuildSrcDstOffsetData on cores [half, B): per local expert of this core,
 * per source rank, per token it received: a 4 B read of its source offset,
 * and 4 B writes of its source and destination offsets, each step behind a
 * full pipe barrier. */
static void src_dst_offsets(const a2_split *x, int first_core, int cores) {
    const dispatch_a2_layout *al = &x->a->al;
    const dispatch_shape *sh = &x->a->sh;
    int R = sh->num_ranks, E = sh->experts, L = sh->local_experts, lo, hi;
    split(L, cores, x->b - first_core, &lo, &hi);
    SetFlag(MTE3_MTE2, 0);
    for (int le = lo; le < hi; le++) {
        int e = x->me * L + le;
        /* the rows of this rank's experts before le, over every source */
        int32_t dst_off =
            le ? sum_ints(x, out_at(x, al->ep_rank, (uint64_t)x->me * L * R), le * R) : 0;
        for (int s = 0; s < R; s++) {
            DataCopyPadIn(x->word, out_at(x, al->ep_rank, (uint64_t)e * R + s), 4);
            SetFlag(MTE2_S, 0);
            WaitFlag(MTE2_S, 0);
            int32_t valid = UbGet32(x->word, 0);
            PipeBarrier(PIPE_ALL);
            for (int t = 0; t < valid; t++) {
                uint64_t in = ((uint64_t)s * E + e) * DISPATCH_A2_MAX_BS + (uint64_t)t;
                uint64_t at = ((uint64_t)e * R + s) * DISPATCH_A2_MAX_BS + (uint64_t)t;
                WaitFlag(MTE3_MTE2, 0);
                DataCopyPadIn(x->word, out_at(x, al->g_exp_src, in), 4);
                SetFlag(MTE2_S, 0);
                WaitFlag(MTE2_S, 0);
                UbSet32(x->word, 0, UbGet32(x->word, 0) - 1);
                PipeBarrier(PIPE_ALL);
                DataCopyPadOut(out_at(x, al->src_off, at), x->word, 4);
                UbSet32(x->e2, 0, dst_off++);
                PipeBarrier(PIPE_ALL);
                DataCopyPadOut(out_at(x, al->dst_off, at), x->e2, 4);
                SetFlag(MTE3_MTE2, 0);
            }
        }
    }
    WaitFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

static void split_and_calc(const dispatch_args *a, int me, int b, int B, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    uint64_t M4 = (uint64_t)DISPATCH_A2_MAX_BS * 4, E4 = (uint64_t)sh->experts * 4;
    uint64_t R4 = (uint64_t)sh->num_ranks * 4;
    uint64_t ints = (E4 > R4 * (uint64_t)sh->local_experts ? E4 : R4 * (uint64_t)sh->local_experts);
    a2_split x = {.a = a, .me = me, .b = b, .B = B, .out = a->a2_scratch[me]};
    x.big = ub_take(&ub, M4);
    x.big2 = ub_take(&ub, M4);
    x.ones = ub_take(&ub, M4);
    x.e1 = ub_take(&ub, ints);
    x.e2 = ub_take(&ub, ints);
    x.e3 = ub_take(&ub, E4);
    x.f1 = ub_take(&ub, ints);
    x.word = ub_take(&ub, UB_ALIGN);
    VecDup(x.ones, DT_INT32, -1, DISPATCH_A2_MAX_BS);
    PipeBarrier(PIPE_V);

    gather_sources(&x);
    SyncAll();
    transpose_counts(&x);
    SyncAll();
    local_expert_totals(&x);
    int half = (B + 1) / 2;
    if (b < half) {
        if (b < 4) small_builders(&x);
        else offset_inner(&x, 4, half - 4);
    } else {
        src_dst_offsets(&x, half, B - half);
    }
}

void dispatch_notify_a2_phase(const dispatch_args *a, ub_arena ub) {
    int me = GetRank(), b = GetBlockIdx(), B = GetBlockNum();
    ub_arena copy = ub;
    local_t buf[2];
    buf[0] = ub_take(&copy, DISPATCH_A2_COPY_CHUNK);
    buf[1] = ub_take(&copy, DISPATCH_A2_COPY_CHUNK);
    local_t small = ub_take(&copy, UB_ALIGN);
    if (b == 0) fill_counts(a, me, buf[0]);
    SyncAll();
    between_servers(a, me, b, B, buf, small);
    within_server(a, me, b, buf, small);
    SyncAll();
    split_and_calc(a, me, b, B, ub);
    /* The host's blocking sync between NotifyDispatchA2 and DispatchNormalA2
     * (deep_ep.cpp: total_recv_token.item()) stands here as a barrier. */
    BarrierAll();
}

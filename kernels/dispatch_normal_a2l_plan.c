/*
 * dispatch_normal_a2l_plan.c - dispatch-normal at --nodes 2 on the host:
 * DispatchNormalA2's token struct and window geometry, its UB, and the
 * tables NotifyDispatchA2 hands it (sgl-kernel-npu csrc/deepep/ops2/
 * op_kernel/notify_dispatch_a2.h and a2/cam_moe_distribute_dispatch_a2_
 * layered.h at 3a90dfa1), derived from combine-normal's plan as the
 * one-node tables are (dispatch_normal_plan.c). The notify itself is not
 * run (it is `dispatch-layered --notify a2`).
 *
 * tokenServerIdx[t][j]: the row token t of a source takes in its block for
 * server j (its rank among the source's tokens that reach server j), -1
 * when none of its experts is there; tokenServerCnt[j] those rows.
 * epRankTokenCnt[e][s]: rows expert e gets from rank s. Per (local expert,
 * source) segment, in token order: srcOffsetRankTokenIdx, the row's index
 * in its block, and dstOffsetRankTokenIdx, its row in expandX, which is
 * expert-major and source-minor (BuildSrcDstOffsetData): combine-normal's
 * x layout, so the plan's x_src_info says which token each row holds.
 * A2 strides those two tables by BS_UPPER (4096) tokens; npurr by --tokens.
 */
#include "dispatch_normal.h"

dnl_geometry dispatch_normal_a2l_geometry(const combine_shape *sh) {
    dnl_geometry g;
    uint64_t k_align = kit_align_up((uint64_t)sh->topk, 8);
    g.row_bytes = (uint32_t)sh->hidden * 2u;
    g.exp_offset = g.row_bytes;
    g.weight_offset = g.row_bytes + (uint32_t)(k_align * 4);
    g.struct_bytes = g.row_bytes + (uint32_t)(DNL_INFO_NUM * k_align * 4);
    g.block_bytes = kit_align_up(DNL_TOKEN_COUNT_SIZE + (uint64_t)sh->tokens * g.struct_bytes,
                                 DNL_RDMA_ALIGN);
    uint64_t statuses = (uint64_t)sh->experts * UB_ALIGN;
    uint64_t servers = (uint64_t)sh->nodes * DNL_STATE_OFFSET;
    g.clean_bytes = (uint32_t)(statuses > servers ? statuses : servers);
    g.win_in_bytes = (uint64_t)sh->nodes * g.block_bytes + g.clean_bytes + UB_ALIGN +
                     (uint64_t)sh->cores * DNL_SELF_STATE_STRIDE;
    g.win_out_bytes = (uint64_t)sh->nodes * g.block_bytes + UB_ALIGN;
    g.ipc_bytes = (uint64_t)(sh->num_ranks / sh->nodes) * DNL_IPC_FLAG_BYTES +
                  (uint64_t)sh->cores * UB_ALIGN;
    return g;
}

/* Init and Input2Win's buffers: the BatchWrite items, statusBuf_, two
 * per-server count tables, expertCountBuf_, tBuf, weightBuf_, and the
 * core's share of tokenServerIdx. */
uint32_t dispatch_normal_a2l_ub_bytes(const combine_shape *sh) {
    uint64_t N4 = kit_align_up((uint64_t)sh->nodes * 4, UB_ALIGN);
    uint64_t tokens = ((uint64_t)sh->tokens + (uint64_t)sh->cores - 1) / (uint64_t)sh->cores;
    uint64_t total = 2 * sizeof(batch_write_task) + UB_ALIGN + 2 * N4 +
                     kit_align_up((uint64_t)sh->experts * 4, UB_ALIGN) + DNL_TBUF_BYTES +
                     UB_ALIGN + kit_align_up(tokens * (uint64_t)sh->nodes * 4, UB_ALIGN);
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

int dispatch_normal_a2l_check_shape(const combine_shape *sh, char *err, size_t errlen) {
    int P = sh->num_ranks / sh->nodes;
    if (sh->hidden % 16) {
        snprintf(err, errlen,
                 "--hidden %d: at --nodes 2 the top-k ids follow the row in UB, which must "
                 "stay 32 B aligned: hidden must be a multiple of 16",
                 sh->hidden);
        return -1;
    }
    if (sh->cores < P || sh->cores < sh->nodes) {
        snprintf(err, errlen,
                 "--cores %d: at --nodes 2 one core per local rank (%d) runs the IPC barrier "
                 "and one per server the BatchWrite items",
                 sh->cores, P);
        return -1;
    }
    dnl_geometry g = dispatch_normal_a2l_geometry(sh);
    uint64_t tbuf = DNL_TBUF_TEMP_OFFSET + (g.struct_bytes > g.clean_bytes ? g.struct_bytes
                                                                           : g.clean_bytes);
    if (tbuf > DNL_TBUF_BYTES) {
        snprintf(err, errlen,
                 "--hidden %d --topk %d --experts %d: a %u B token struct or %u B of statuses "
                 "does not fit DispatchNormalA2's %u B tBuf after its %u B offset",
                 sh->hidden, sh->topk, sh->experts, g.struct_bytes, g.clean_bytes,
                 DNL_TBUF_BYTES, DNL_TBUF_TEMP_OFFSET);
        return -1;
    }
    uint32_t need = dispatch_normal_a2l_ub_bytes(sh);
    return kit_check_ub(need, err, errlen,
                        "--tokens %d --cores %d: DispatchNormalA2 needs %u B of UB per core "
                        "(its 176 KiB tBuf, the core's share of tokenServerIdx, the tables)",
                        sh->tokens, sh->cores, need);
}

void dispatch_normal_a2l_source_tables(const combine_plan *p, int s, int32_t *token_server_idx,
                                       int32_t *token_server_cnt) {
    const combine_shape *sh = &p->sh;
    int N = sh->nodes, T = sh->tokens, K = sh->topk;
    int per_server = sh->experts / N;
    const int32_t *ids = p->expert_ids + (size_t)s * (size_t)T * (size_t)K;
    for (int j = 0; j < N; j++) token_server_cnt[j] = 0;
    for (int t = 0; t < T; t++) {
        int32_t *row = token_server_idx + (size_t)t * (size_t)N;
        for (int j = 0; j < N; j++) row[j] = -1;
        for (int k = 0; k < K; k++) {
            int32_t e = ids[(size_t)t * (size_t)K + (size_t)k];
            if (e >= 0) row[e / per_server] = 0;
        }
        for (int j = 0; j < N; j++)
            if (row[j] == 0) row[j] = token_server_cnt[j]++;
    }
}

void dispatch_normal_a2l_ep_counts(const combine_plan *p, int32_t *ep_rank_token_cnt) {
    size_t R = (size_t)p->sh.num_ranks, E = (size_t)p->sh.experts;
    for (size_t e = 0; e < E; e++)
        for (size_t s = 0; s < R; s++) ep_rank_token_cnt[e * R + s] = p->length_table[e * R + s];
}

void dispatch_normal_a2l_offsets(const combine_plan *p, const int32_t *token_server_idx, int r,
                                 int32_t *src_offset, int32_t *dst_offset) {
    const combine_shape *sh = &p->sh;
    size_t R = (size_t)sh->num_ranks, L = (size_t)sh->local_experts, T = (size_t)sh->tokens;
    size_t K = (size_t)sh->topk, N = (size_t)sh->nodes, own = (size_t)r / (R / N);
    for (size_t s = 0; s < R; s++) {
        const int32_t *ids = p->expert_ids + s * T * K;
        const int32_t *idx = p->expand_idx + s * T * K;
        for (size_t i = 0; i < T * K; i++) {
            if (ids[i] < 0 || (size_t)ids[i] / L != (size_t)r) continue;
            size_t le = (size_t)ids[i] % L, at = (le * R + s) * T + (size_t)idx[i];
            src_offset[at] = token_server_idx[(s * T + i / K) * N + own];
            dst_offset[at] = p->offset_table[((size_t)r * L + le) * R + s] + idx[i];
        }
    }
}

/*
 * dispatch_normal_a2l_setup.c - host side of a dispatch-normal run at
 * --nodes 2 (DispatchNormalA2): buffers, inputs, the launch.
 *
 * The inputs are what deep_ep.cpp hands aclnnDispatchNormalA2 (sgl-kernel-
 * npu csrc/deepep/deep_ep.cpp at 3a90dfa1): x (tagged as at one node),
 * expertIds, the top-k weights (expertScales), and NotifyDispatchA2's
 * tokenServerIdx, tokenServerCnt, epRankTokenCnt and the src / dst offset
 * tables (dispatch_normal_a2l_plan.c); the outputs expandX and
 * expandScales, and the BatchWrite task list in the workspace. Symmetric,
 * as A2's HCCL windows: windowIn, windowOut and the IPC area
 * (dispatch_normal.h), each followed by a guard.
 *
 * One launch of sh.cores AIV cores per rank, as A2's tiling takes them all.
 */
#include "dispatch_normal.h"

#include <stdlib.h>

static int alloc_per_rank(engine *e, dispatch_normal_state *st, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    dispatch_normal_args *a = &st->args;
    uint64_t E = (uint64_t)sh->experts, R = (uint64_t)sh->num_ranks, N = (uint64_t)sh->nodes;
    uint64_t T = (uint64_t)sh->tokens, TK = T * (uint64_t)sh->topk;
    uint64_t LRT = (uint64_t)sh->local_experts * R * T;
    for (int r = 0; r < sh->num_ranks; r++) {
        uint64_t rows = (uint64_t)p->x_rows[r];
        kit_buffer bufs[] = {
            {T * a->row_bytes, "dispatch.x", 1, &a->x[r]},
            {TK * 4, "dispatch.expert_ids", 1, &a->expert_ids[r]},
            {TK * 4, "dispatch.topk_weights", 1, &a->topk_weights[r]},
            {T * N * 4, "dispatch.token_server_idx", 1, &a->token_server_idx[r]},
            {N * 4, "dispatch.token_server_cnt", 1, &a->token_server_cnt[r]},
            {E * R * 4, "dispatch.ep_rank_token_cnt", 1, &a->ep_rank_token_cnt[r]},
            {LRT * 4, "dispatch.src_offset", 1, &a->src_offset[r]},
            {LRT * 4, "dispatch.dst_offset", 1, &a->dst_offset[r]},
            {rows * a->row_bytes, "dispatch.expand_x", 1, &a->expand_x[r]},
            {rows * 4, "dispatch.expand_scales", 1, &a->expand_scales[r]},
            {N * 2 * sizeof(batch_write_task), "dispatch.batch_write", 1, &a->bw_tasks[r]},
        };
        if (kit_alloc_all(e, &st->guards, r, bufs, sizeof bufs / sizeof bufs[0], err, errlen))
            return -1;
    }
    return 0;
}

/* Owner r's offset tables, only where a row exists. */
static int fill_offsets(engine *e, const dispatch_normal_state *st, const int32_t *server_idx,
                        int32_t *src, int32_t *dst, int r) {
    const combine_plan *p = &st->plan;
    size_t R = (size_t)p->sh.num_ranks, L = (size_t)p->sh.local_experts;
    size_t T = (size_t)p->sh.tokens;
    dispatch_normal_a2l_offsets(p, server_idx, r, src, dst);
    for (size_t le = 0; le < L; le++)
        for (size_t s = 0; s < R; s++) {
            size_t at = (le * R + s) * T;
            size_t n = (size_t)p->length_table[((size_t)r * L + le) * R + s];
            if (combine_fill_i32(e, gm_add(st->args.src_offset[r], (int64_t)at * 4), src + at, n) ||
                combine_fill_i32(e, gm_add(st->args.dst_offset[r], (int64_t)at * 4), dst + at, n))
                return -1;
        }
    return 0;
}

static int fill_tables(engine *e, const dispatch_normal_state *st, int32_t *server_idx,
                       int32_t *ep, int32_t *src, int32_t *dst) {
    const combine_plan *p = &st->plan;
    const dispatch_normal_args *a = &st->args;
    size_t R = (size_t)p->sh.num_ranks, N = (size_t)p->sh.nodes, T = (size_t)p->sh.tokens;
    size_t TK = T * (size_t)p->sh.topk, E = (size_t)p->sh.experts;
    int32_t cnt[DNORMAL_MAX_NODES];
    dispatch_normal_a2l_ep_counts(p, ep);
    for (size_t r = 0; r < R; r++) {
        dispatch_normal_a2l_source_tables(p, (int)r, server_idx + r * T * N, cnt);
        if (combine_fill_i32(e, a->expert_ids[r], p->expert_ids + r * TK, TK) ||
            combine_fill_i32(e, a->topk_weights[r], (const int32_t *)(const void *)(p->topk_weights + r * TK), TK) ||
            combine_fill_i32(e, a->token_server_idx[r], server_idx + r * T * N, T * N) ||
            combine_fill_i32(e, a->token_server_cnt[r], cnt, N) ||
            combine_fill_i32(e, a->ep_rank_token_cnt[r], ep, E * R))
            return -1;
    }
    for (size_t r = 0; r < R; r++)
        if (fill_offsets(e, st, server_idx, src, dst, (int)r)) return -1;
    return 0;
}

static int fill_inputs(engine *e, const dispatch_normal_state *st, char *err, size_t errlen) {
    const combine_shape *sh = &st->plan.sh;
    size_t R = (size_t)sh->num_ranks, T = (size_t)sh->tokens;
    size_t LRT = (size_t)sh->local_experts * R * T;
    int32_t *server_idx = malloc(sizeof(int32_t) * R * T * (size_t)sh->nodes);
    int32_t *ep = malloc(sizeof(int32_t) * (size_t)sh->experts * R);
    int32_t *src = malloc(sizeof(int32_t) * LRT + 1), *dst = malloc(sizeof(int32_t) * LRT + 1);
    int rc = -1;
    if (!server_idx || !ep || !src || !dst)
        snprintf(err, errlen, "dispatch-normal setup: out of host memory for the notify's tables");
    else if (fill_tables(e, st, server_idx, ep, src, dst))
        snprintf(err, errlen, "dispatch-normal setup: no host view of a notify table");
    else
        rc = 0;
    free(server_idx);
    free(ep);
    free(src);
    free(dst);
    return rc ? -1 : dispatch_normal_fill_x(e, st, err, errlen);
}

static void args_init(dispatch_normal_args *a, const combine_shape *sh) {
    dnl_geometry g = dispatch_normal_a2l_geometry(sh);
    dispatch_normal_args_shape(a, sh);
    a->row_bytes = g.row_bytes;
    a->nodes = sh->nodes;
    a->npus = sh->num_ranks / sh->nodes;
    a->struct_bytes = g.struct_bytes;
    a->exp_offset = g.exp_offset;
    a->weight_offset = g.weight_offset;
    a->clean_bytes = g.clean_bytes;
    a->block_bytes = g.block_bytes;
}

int dispatch_normal_a2l_build(engine *e, dispatch_normal_state *st, char *err, size_t errlen) {
    const combine_shape *sh = &st->plan.sh;
    dispatch_normal_args *a = &st->args;
    args_init(a, sh);
    dnl_geometry g = dispatch_normal_a2l_geometry(sh);
    int R = sh->num_ranks;
    return alloc_per_rank(e, st, err, errlen) ||
                   combine_sym_area(e, &st->guards, R, g.win_in_bytes, "dispatch.window_in",
                                    &a->win_in_base, err, errlen) ||
                   combine_sym_area(e, &st->guards, R, g.win_out_bytes, "dispatch.window_out",
                                    &a->win_out_base, err, errlen) ||
                   combine_sym_area(e, &st->guards, R, g.ipc_bytes, "dispatch.ipc",
                                    &a->ipc_base, err, errlen) ||
                   fill_inputs(e, st, err, errlen) ||
                   npurr_launch(e, "dispatch_normal_a2", dispatch_normal_a2l_kernel, a, sh->cores,
                              CORE_AIV, err, errlen) != 0
               ? -1
               : 0;
}

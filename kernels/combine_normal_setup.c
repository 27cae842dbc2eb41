/*
 * combine_normal_setup.c - host side of a combine-normal run: buffers,
 * inputs, the launch, and the kernel's descriptor.
 *
 * The inputs are what CamMoeCombineNormal gets from A2's normal dispatch
 * (sgl-kernel-npu csrc/deepep/ops2 at 3a90dfa1): recv_x (x here, the
 * expert outputs expert-major, source-rank-minor, as ShareToOutput of
 * cam_moe_dispatch_normal.h leaves them), tokenSrcInfo (the dispatch's
 * expandIdx: source rank, token, top-k slot per row), epRecvCount (the
 * inclusive prefix over (expert, source rank), whose last element is the
 * rank's row count) and the owner's topk_weights. Per rank
 * (kit_alloc_all): x, token_src_info, ep_recv_count, expert_ids,
 * topk_weights, out. Symmetric (engine_sym_alloc), as A2's HCCL window:
 * the status area and the data area, each followed by a guard.
 *
 * One launch of sh.cores AIV cores per rank: A2 runs both phases in every
 * core of one kernel.
 */
#include "combine.h"

#include <stdlib.h>
#include <string.h>

static int alloc_per_rank(engine *e, combine_state *st, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    combine_args *a = &st->args;
    size_t R = (size_t)sh->num_ranks, L = (size_t)sh->local_experts;
    size_t T = (size_t)sh->tokens, K = (size_t)sh->topk;
    for (size_t r = 0; r < R; r++) {
        uint64_t rows = (uint64_t)p->x_rows[r];
        kit_buffer bufs[] = {
            {rows * sh->row_bytes, "combine.x", 1, &a->x[r]},
            {rows * COMBINE_NORMAL_SRC_INFO_LEN * 4, "combine.token_src_info", 1,
             &a->token_src_info[r]},
            {L * R * 4, "combine.ep_recv_count", 1, &a->ep_recv_count[r]},
            {T * K * 4, "combine.expert_ids", 1, &a->expert_ids[r]},
            {T * K * 4, "combine.topk_weights", 1, &a->topk_weights[r]},
            {T * (uint64_t)sh->row_bytes, "combine.out", 1, &a->out[r]},
        };
        if (kit_alloc_all(e, &st->guards, (int)r, bufs, sizeof bufs / sizeof bufs[0], err,
                          errlen) ||
            kit_name_rows(e, a->x[r], "combine.x", NPURR_DT_BF16, rows, (uint64_t)sh->hidden,
                          err, errlen) ||
            kit_name_rows(e, a->out[r], "combine.out", NPURR_DT_BF16, T, (uint64_t)sh->hidden,
                          err, errlen))
            return -1;
    }
    return 0;
}

static int fill_inputs(engine *e, combine_state *st, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    const combine_args *a = &st->args;
    size_t R = (size_t)sh->num_ranks, L = (size_t)sh->local_experts;
    size_t TK = (size_t)sh->tokens * (size_t)sh->topk;
    int32_t *cum = malloc(sizeof(int32_t) * L * R);
    if (!cum) {
        snprintf(err, errlen, "combine-normal setup: out of host memory");
        return -1;
    }
    for (size_t r = 0; r < R; r++) {
        /* offset_table holds exclusive prefixes in the same (expert, rank) order. */
        for (size_t i = 0; i < L * R; i++)
            cum[i] = p->offset_table[r * L * R + i] + p->length_table[r * L * R + i];
        const int32_t *info = p->x_src_info + (size_t)p->x_row_base[r] * COMBINE_NORMAL_SRC_INFO_LEN;
        if (combine_fill_i32(e, a->ep_recv_count[r], cum, L * R) ||
            combine_fill_i32(e, a->token_src_info[r], info,
                             (size_t)p->x_rows[r] * COMBINE_NORMAL_SRC_INFO_LEN) ||
            combine_fill_i32(e, a->expert_ids[r], p->expert_ids + r * TK, TK) ||
            combine_fill_i32(e, a->topk_weights[r],
                             (const int32_t *)(const void *)(p->topk_weights + r * TK), TK)) {
            free(cum);
            snprintf(err, errlen, "combine-normal setup: no host view of rank %zu's tables", r);
            return -1;
        }
    }
    free(cum);
    return combine_fill_x(e, st, err, errlen);
}

static int normal_setup(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    combine_state *st = combine_state_begin(e, o, COMBINE_SCHEME_NORMAL, "combine-normal setup",
                                            state, err, errlen);
    if (!st) return -1;
    const combine_shape sh = st->plan.sh;
    combine_args *a = &st->args;
    a->window_stride = combine_normal_window_stride(&sh);
    a->inject_no_status_wait = sh.inject_no_status_wait;
    a->inject_status_first = sh.inject_status_first;
    uint64_t slots = (uint64_t)sh.tokens * (uint64_t)sh.topk;
    int failed = alloc_per_rank(e, st, err, errlen) ||
                 combine_sym_area(e, &st->guards, a->num_ranks, slots * COMBINE_NORMAL_STATE_BYTES,
                                  "combine.state", &a->state_base, err, errlen) ||
                 combine_sym_area(e, &st->guards, a->num_ranks, slots * a->window_stride,
                                  "combine.window", &a->window_base, err, errlen) ||
                 fill_inputs(e, st, err, errlen) ||
                 npurr_launch(e, "combine_normal", combine_normal_kernel, a, sh.cores, CORE_AIV,
                            err, errlen) != 0;
    return kit_setup_finish(failed, st, combine_destroy, state);
}

/* Both phases run in the one operator msprof names CamMoeCombineNormal
 * (aclnnCamMoeCombineNormal on the host side; op names match as substrings). */
static const kernel_phase normal_phases[] = {
    {"combine", {"CombineSend", "CombineSum", NULL}, {"CamMoeCombineNormal", NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_combine_normal = {
    .name = "combine-normal",
    .summary = "MoE intranode normal combine as A2's CamMoeCombineNormal runs it: every AIV core "
               "pushes its share of rows into the token owner's window with a status word per "
               "row, then sums",
    .options = combine_normal_options, .setup = normal_setup, .check = combine_normal_check,
    .layout = combine_normal_layout, .destroy = combine_destroy,
    .estimate = combine_normal_estimate, .phases = normal_phases,
};

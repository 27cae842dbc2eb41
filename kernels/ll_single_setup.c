/*
 * ll_single_setup.c - host side of an ll-single-dispatch-combine run: the
 * symmetric windows, the launch, and the kernel's descriptor.
 *
 * Symmetric (each followed by a guard), as the HCCL window of one rank:
 *   the dispatch window, W * L slots (source, local expert) of T rows of
 *   hAlignWinSize bytes (the most one source can send one expert);
 *   the dispatch statuses, [L][W] of 32 B (named: a wait on one says whose);
 *   the combine window, T * K rows (token, slot) of the combined row
 *   rounded to 512 B; the combine statuses, T * K of 32 B.
 * The chip keeps these in the two halves of one window and flips them per
 * call (dataState); a run here is one call on fresh windows. One launch of
 * --cores AIV cores per rank.
 */
#include "ll.h"

static int single_setup(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    ll_state *st = ll_state_begin(e, o, LL_KIND_SINGLE, "ll-single setup", state, err, errlen);
    if (!st) return -1;
    ll_args *a = &st->args;
    uint64_t W = (uint64_t)a->num_ranks, L = (uint64_t)a->local_experts;
    uint64_t TK = (uint64_t)a->tokens * (uint64_t)a->topk;
    int failed = ll_alloc_rank_buffers(e, st, err, errlen) ||
                 ll_sym(e, st, W * L * (uint64_t)a->tokens * a->win_row, "ll.dispatch_window",
                        &a->dwin, err, errlen) ||
                 ll_sym(e, st, W * L * LL_STATE_BYTES, "ll.dispatch_status", &a->dstate, err,
                        errlen) ||
                 ll_sym(e, st, TK * a->cwin_row, "ll.combine_window", &a->cwin, err, errlen) ||
                 ll_sym(e, st, TK * LL_STATE_BYTES, "ll.combine_status", &a->cstate, err, errlen);
    for (int r = 0; !failed && r < a->num_ranks; r++)
        for (uint64_t le = 0; le < L; le++)
            for (uint64_t s = 0; s < W; s++) {
                char name[80];
                snprintf(name, sizeof name, "ll.status[expert %llu <- rank %llu]",
                         (unsigned long long)((uint64_t)r * L + le), (unsigned long long)s);
                npurr_name_word(e, gm_add(gm_on_rank(a->dstate, r),
                                          (int64_t)((le * W + s) * LL_STATE_BYTES)),
                                4, OBJ_FLAG, name);
            }
    failed = failed || npurr_launch(e, "ll_single_dispatch_combine", ll_single_kernel, a,
                                    st->plan.sh.cores, CORE_AIV, err, errlen) != 0;
    return kit_setup_finish(failed, st, ll_destroy, state);
}

/* The two operators msprof times on the chip (aclnnMoeDistributeDispatchV2
 * and aclnnMoeDistributeCombineV2, single-server tiling keys). */
static const kernel_phase ll_single_phases[] = {
    {"dispatch", {"Dispatch", "DispatchRecv", NULL}, {"MoeDistributeDispatchV2", NULL}},
    {"combine", {"Combine", "CombineSum", NULL}, {"MoeDistributeCombineV2", NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_ll_single_dispatch_combine = {
    .name = "ll-single-dispatch-combine",
    .summary = "MoE low-latency dispatch + combine on one A2 server as the chip runs it "
               "(MoeDistributeDispatchV2Single / CombineV2Single): vector cores write each row "
               "into the expert's window on its peer over HCCS, a status per (expert, source); "
               "no AICPU",
    .options = ll_single_options, .setup = single_setup, .check = ll_check,
    .layout = ll_single_layout, .destroy = ll_destroy, .estimate = ll_single_estimate,
    .phases = ll_single_phases,
};

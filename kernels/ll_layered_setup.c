/*
 * ll_layered_setup.c - host side of an ll-layered-dispatch-combine run: the
 * symmetric areas, the launch, and the kernel's descriptor.
 *
 * Symmetric, each followed by a guard, as the HCCL window of one rank
 * (the chip carves them from one: RDMA_DATA_SIZE for windowIn/Out, the
 * IPC part after it):
 *   windowOut: T token structs, then the 64 B end status;
 *   windowIn: N server blocks (every token of the peer and one struct
 *     more), then N end statuses 512 B apart (named);
 *   the dispatch's IPC window: P flags, L * W count blocks, L * W segments
 *     (local expert, source) of T structs;
 *   the combine's IPC window: P flags, N lists of arrival flags, W slices of
 *     T * K rows (one per destination rank); its windowOut and windowIn: N
 *     blocks of T * K rows, windowIn's then N end statuses (named);
 *   the send queue: 128 B per core, where a vector core writes its work
 *     requests, head, tail and doorbell.
 * Sized to the shape where the chip takes a fixed HCCL_BUFFSIZE; a run is
 * one call on fresh windows. One launch of --cores AIV cores per rank.
 */
#include "ll.h"

static void name_statuses(engine *e, const ll_args *a) {
    for (int r = 0; r < a->num_ranks; r++)
        for (int s = 0; s < a->nodes; s++) {
            char name[80];
            snprintf(name, sizeof name, "ll.end_status[server %d -> rank %d]", s, r);
            npurr_name_word(e, lll_end_status(a, r, s), 8, OBJ_FLAG, name);
            snprintf(name, sizeof name, "ll.combine_end_status[server %d -> rank %d]", s, r);
            npurr_name_word(e, lll_cend_status(a, r, s), 8, OBJ_FLAG, name);
        }
}

static int layered_setup(engine *e, const kernel_opts *o, void **state, char *err,
                         size_t errlen) {
    ll_state *st = ll_state_begin(e, o, LL_KIND_LAYERED, "ll-layered setup", state, err, errlen);
    if (!st) return -1;
    ll_args *a = &st->args;
    uint64_t W = (uint64_t)a->num_ranks, L = (uint64_t)a->local_experts, N = (uint64_t)a->nodes;
    uint64_t slice = lll_cslice_bytes(a);
    int failed =
        ll_alloc_rank_buffers(e, st, err, errlen) ||
        ll_sym(e, st, lll_send_status_at(a) + LLL_FLAG_BYTES, "ll.window_out", &a->win_out, err,
               errlen) ||
        ll_sym(e, st, N * a->server_bytes + N * LLL_STATE_OFFSET, "ll.window_in", &a->win_in, err,
               errlen) ||
        ll_sym(e, st, lll_ipc_data_at(a) + L * W * a->ipc_seg, "ll.ipc", &a->ipc, err, errlen) ||
        ll_sym(e, st, kit_align_up(lll_cflags_at(a, a->nodes), LL_WIN_ALIGN) + W * slice,
               "ll.combine_ipc", &a->cipc, err, errlen) ||
        ll_sym(e, st, N * slice, "ll.combine_window_out", &a->cwin_out, err, errlen) ||
        ll_sym(e, st, N * slice + N * LLL_STATE_OFFSET, "ll.combine_window_in", &a->cwin_in, err,
               errlen) ||
        ll_sym(e, st, (uint64_t)st->plan.sh.cores * LLL_SQ_BLOCK, "ll.send_queue", &a->sq, err,
               errlen);
    if (!failed) name_statuses(e, a);
    failed = failed || npurr_launch(e, "ll_layered_dispatch_combine", ll_layered_kernel, a,
                                    st->plan.sh.cores, CORE_AIV, err, errlen) != 0;
    return kit_setup_finish(failed, st, ll_destroy, state);
}

/* The two operators msprof times on the chip (aclnnMoeDistributeDispatchV2
 * and aclnnMoeDistributeCombineV2, layered tiling keys). */
static const kernel_phase ll_layered_phases[] = {
    {"dispatch",
     {"Dispatch", "DispatchSend", "DispatchInner", "DispatchOuter", "DispatchWin2Ipc",
      "DispatchIpc2Out", NULL},
     {"MoeDistributeDispatchV2", NULL}},
    {"combine", {"Combine", "CombineGather", "CombineSend", "CombineSum", NULL},
     {"MoeDistributeCombineV2", NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_ll_layered_dispatch_combine = {
    .name = "ll-layered-dispatch-combine",
    .summary = "MoE low-latency dispatch + combine across A2 servers as the chip runs it "
               "(MoeDistributeDispatchV2Layered / CombineV2Layered): one RDMA write per token to "
               "the other server's same-numbered rank, posted by the vector core itself, then "
               "IPC copies to the experts' ranks; the combine gathers per server and sends back "
               "per token",
    .options = ll_layered_options, .setup = layered_setup, .check = ll_check,
    .layout = ll_layered_layout, .destroy = ll_destroy, .estimate = ll_layered_estimate,
    .phases = ll_layered_phases,
};

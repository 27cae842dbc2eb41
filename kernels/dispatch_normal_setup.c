/*
 * dispatch_normal_setup.c - host side of a dispatch-normal run: buffers,
 * inputs, the launch, and the kernel's descriptor.
 *
 * The inputs are what CamMoeDispatchNormal gets (sgl-kernel-npu
 * csrc/deepep/deep_ep.cpp and ops2 at 3a90dfa1): x (the rank's token rows,
 * tagged (token, 0, rank) with combine's payload so a misplaced row says
 * whose it is), expertIds, and NotifyDispatch's sendOffset, sendTokenIdx,
 * recvOffset and recvCount. Per rank (kit_alloc_all): those, expandX and
 * expandIdx (sized to the rows the rank receives) and the per-core
 * dataState words. Symmetric, as A2's HCCL window: each rank's share window
 * (T * K rows at the 512 B aligned stride) and its status area (E slots of
 * 32 B), each followed by a guard.
 *
 * One launch of sh.cores AIV cores per rank: A2 runs all four steps in
 * every core of one kernel.
 */
#include "dispatch_normal.h"

#include <stdlib.h>
#include <string.h>

void dispatch_normal_destroy(void *state) {
    dispatch_normal_state *st = state;
    if (!st) return;
    free(st->send_offset);
    combine_free_state(&st->plan, &st->guards, st);
}

static int alloc_per_rank(engine *e, dispatch_normal_state *st, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    dispatch_normal_args *a = &st->args;
    uint64_t E = (uint64_t)sh->experts;
    uint64_t TK = (uint64_t)sh->tokens * (uint64_t)sh->topk;
    for (int r = 0; r < sh->num_ranks; r++) {
        uint64_t rows = (uint64_t)p->x_rows[r];
        kit_buffer bufs[] = {
            {(uint64_t)sh->tokens * a->row_bytes, "dispatch.x", 1, &a->x[r]},
            {TK * 4, "dispatch.expert_ids", 1, &a->expert_ids[r]},
            {E * 4, "dispatch.send_offset", 1, &a->send_offset[r]},
            {TK * 4, "dispatch.send_token_idx", 1, &a->send_token_idx[r]},
            {E * 4, "dispatch.recv_offset", 1, &a->recv_offset[r]},
            {E * 4, "dispatch.recv_count", 1, &a->recv_count[r]},
            {rows * a->row_bytes, "dispatch.expand_x", 1, &a->expand_x[r]},
            {rows * DNORMAL_IDX_LEN * 4, "dispatch.expand_idx", 1, &a->expand_idx[r]},
            {(uint64_t)sh->cores * DNORMAL_DATA_STATE_STRIDE, "dispatch.data_state", 1,
             &a->data_state[r]},
        };
        if (kit_alloc_all(e, &st->guards, r, bufs, sizeof bufs / sizeof bufs[0], err, errlen))
            return -1;
    }
    return 0;
}

/* The token rows: row t of rank s is combine's row (s, t, slot 0, rank s). */
int dispatch_normal_fill_x(engine *e, const dispatch_normal_state *st, char *err, size_t errlen) {
    const combine_shape *sh = &st->plan.sh;
    for (int s = 0; s < sh->num_ranks; s++)
        for (int t = 0; t < sh->tokens; t++)
            if (combine_generate_row(e, gm_add(st->args.x[s], (int64_t)t * st->args.row_bytes),
                                     sh, s, t, 0, s, err, errlen))
                return -1;
    return 0;
}

static int fill_inputs(engine *e, const dispatch_normal_state *st, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    size_t E = (size_t)p->sh.experts, TK = (size_t)p->sh.tokens * (size_t)p->sh.topk;
    int32_t *recv = malloc(sizeof(int32_t) * 2 * E);
    if (!recv) {
        snprintf(err, errlen, "dispatch-normal setup: out of host memory");
        return -1;
    }
    for (int r = 0; r < p->sh.num_ranks; r++) {
        const dispatch_normal_args *a = &st->args;
        dispatch_normal_recv_tables(p, st->send_offset, r, recv, recv + E);
        if (combine_fill_i32(e, a->expert_ids[r], p->expert_ids + r * TK, TK) ||
            combine_fill_i32(e, a->send_offset[r], st->send_offset + r * E, E) ||
            combine_fill_i32(e, a->send_token_idx[r], p->expand_idx + r * TK, TK) ||
            combine_fill_i32(e, a->recv_offset[r], recv, E) ||
            combine_fill_i32(e, a->recv_count[r], recv + E, E)) {
            free(recv);
            snprintf(err, errlen, "dispatch-normal setup: no host view of rank %d's tables", r);
            return -1;
        }
    }
    free(recv);
    return dispatch_normal_fill_x(e, st, err, errlen);
}

void dispatch_normal_args_shape(dispatch_normal_args *a, const combine_shape *sh) {
    a->num_ranks = sh->num_ranks;
    a->local_experts = sh->local_experts;
    a->experts = sh->experts;
    a->tokens = sh->tokens;
    a->topk = sh->topk;
    a->hidden = sh->hidden;
    a->inject_no_status_wait = sh->inject_no_status_wait;
}

static void args_init(dispatch_normal_args *a, const combine_shape *sh) {
    dnormal_geometry g = dispatch_normal_geometry(sh->hidden);
    dispatch_normal_args_shape(a, sh);
    a->row_bytes = g.row_bytes;
    a->idx_offset = g.idx_offset;
    a->share_bytes = g.share_bytes;
    a->share_ub_bytes = g.share_ub_bytes;
    a->window_stride = g.window_stride;
}

/* Everything after the plan: the notify's sendOffset, the args, the
 * buffers and windows, the inputs, the launch. */
static int build(engine *e, dispatch_normal_state *st, char *err, size_t errlen) {
    const combine_shape *sh = &st->plan.sh;
    dispatch_normal_args *a = &st->args;
    st->send_offset = dispatch_normal_send_offsets(&st->plan);
    if (!st->send_offset) {
        snprintf(err, errlen, "dispatch-normal setup: out of host memory");
        return -1;
    }
    args_init(a, sh);
    uint64_t slots = (uint64_t)sh->tokens * (uint64_t)sh->topk;
    return alloc_per_rank(e, st, err, errlen) ||
                   combine_sym_area(e, &st->guards, sh->num_ranks, slots * a->window_stride,
                                    "dispatch.window", &a->window_base, err, errlen) ||
                   combine_sym_area(e, &st->guards, sh->num_ranks,
                                    (uint64_t)sh->experts * DNORMAL_STATE_BYTES, "dispatch.state",
                                    &a->state_base, err, errlen) ||
                   fill_inputs(e, st, err, errlen) ||
                   npurr_launch(e, "dispatch_normal", dispatch_normal_kernel, a, sh->cores,
                              CORE_AIV, err, errlen) != 0
               ? -1
               : 0;
}

static int normal_setup(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    static const char owner[] = "dispatch-normal setup";
    dispatch_normal_state *st = kit_state_new(sizeof *st, owner, state, err, errlen);
    if (!st) return -1;
    kit_guards_init(&st->guards, owner, COMBINE_GUARD_BYTE);
    npurr_topology topo;
    npurr_topology_of(e, &topo);
    int failed = dispatch_normal_plan_from_topology(o, &topo, &st->plan, err, errlen) ||
                 (st->plan.sh.nodes > 1 ? dispatch_normal_a2l_build(e, st, err, errlen)
                                        : build(e, st, err, errlen));
    return kit_setup_finish(failed, st, dispatch_normal_destroy, state);
}

/* All four steps run in the one operator msprof names CamMoeDispatchNormal
 * (aclnnCamMoeDispatchNormal on the host side; op names match as
 * substrings); at --nodes 2 the steps of DispatchNormalA2 (aclnnDispatchNormalA2).
 * NotifyDispatch / NotifyDispatchA2, which compute the tables, are not run. */
static const kernel_phase normal_phases[] = {
    {"dispatch",
     {"DispatchSend", "DispatchStatus", "DispatchOutput", "Input2Win", "BetweenServer",
      "Ipc2Out", "CleanUp", NULL},
     {"CamMoeDispatchNormal", "DispatchNormalA2", NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_dispatch_normal = {
    .name = "dispatch-normal",
    .summary = "MoE normal dispatch as A2 runs it: on one node CamMoeDispatchNormal (every AIV "
               "core copies its share of (token, top-k) rows into its rank's share window, a "
               "status per (expert, rank), then each owner reads its rows over HCCS); on "
               "--nodes 2 the layered DispatchNormalA2 (per-server blocks, one BatchWrite to "
               "the other server, then the owners pull rows from the local windows)",
    .options = dispatch_normal_options, .setup = normal_setup, .check = dispatch_normal_check,
    .layout = dispatch_normal_layout, .destroy = dispatch_normal_destroy,
    .estimate = dispatch_normal_estimate, .phases = normal_phases,
};

/*
 * fullmesh_setup.c - host side of a fullmesh-dispatch-combine run: buffers,
 * inputs, named flags, the launch, and the kernel descriptor.
 *
 * Symmetric (engine_sym_alloc): WindowsIn and WindowsOut, each two blocks
 * of W windows of rankSizeOnWin bytes plus the ctrl block (bufferChosen,
 * EP op count), zero at the start as HCCL hands them over.
 * Per rank: the BatchWrite task lists (one per block), recv_status,
 * expert_out. Per round and rank: the inputs x, expertIds, topk weights
 * and the outputs expandIdx, expand_x (INT8: int8, and dynamic_scales),
 * epRecvCount, expertTokenNum and the combined tokens; every output is
 * followed by a guard the check verifies.
 * One AIV launch of --cores cores per rank.
 */
#include "fullmesh.h"

#include <stdlib.h>
#include <string.h>

void fm_destroy(void *state) {
    fm_state *st = state;
    if (!st) return;
    fm_plan_free(&st->plan);
    free(st->tables);
    kit_guards_free(&st->guards);
    free(st);
}

static int fill(engine *e, gm_t at, const void *src, uint64_t bytes, const char *what, int rank,
                char *err, size_t errlen) {
    if (bytes == 0) return 0;
    void *h = npurr_gm_host(e, at, bytes);
    if (!h) {
        snprintf(err, errlen, "fullmesh setup: no host view of %s on rank %d", what, rank);
        return -1;
    }
    memcpy(h, src, bytes);
    return 0;
}

static int setup_windows(engine *e, fm_state *st, char *err, size_t errlen) {
    fm_args *a = &st->args;
    int W = a->num_ranks;
    if (npurr_sym_alloc(e, 2 * a->block_stride, "fullmesh.windows_in", &a->windows_in, err,
                         errlen) != 0 ||
        npurr_sym_alloc(e, 2 * a->block_stride, "fullmesh.windows_out", &a->windows_out, err,
                         errlen) != 0)
        return -1;
    /* Named words: what waits and deadlock reports talk about. */
    for (int r = 0; r < W; r++) {
        gm_t ctrl = fm_ctrl(a, r);
        char name[96];
        snprintf(name, sizeof name, "fullmesh.bufferChosen[%d]", r);
        npurr_name_word(e, gm_add(ctrl, FM_CTRL_BUFFER_CHOSEN), 4, OBJ_WORD, name);
        snprintf(name, sizeof name, "fullmesh.ep_ops[%d]", r);
        npurr_name_word(e, gm_add(ctrl, FM_CTRL_EP_OPS), 4, OBJ_WORD, name);
        for (int src = 0; src < W; src++) {
            /* Dispatch runs in block 0 (the first op of every round). */
            gm_t w = gm_add(gm_on_rank(a->windows_in, r), (int64_t)((uint64_t)src * a->rank_size_on_win));
            snprintf(name, sizeof name, "fullmesh.FLAG1[%d->%d]", src, r);
            npurr_name_word(e, gm_add(w, FM_FLAG_OFFSET * 4), 4, OBJ_FLAG, name);
        }
    }
    return 0;
}

static int setup_rank_buffers(engine *e, fm_state *st, char *err, size_t errlen) {
    fm_args *a = &st->args;
    const fm_plan *p = &st->plan;
    int W = a->num_ranks;
    uint64_t ts = sizeof(batch_write_task);
    for (int r = 0; r < W; r++) {
        kit_buffer bufs[] = {
            {2 * (uint64_t)W * ts, "fullmesh.tasks", 0, &a->tasks[r]},
            {(uint64_t)W * FM_STATUS_ROW_BYTES, "fullmesh.recv_status", 1, &a->recv_status[r]},
            {(uint64_t)p->max_recv_rows * a->row_bytes, "fullmesh.expert_out", 1,
             &a->expert_out[r]},
        };
        if (kit_alloc_all(e, &st->guards, r, bufs, sizeof bufs / sizeof bufs[0], err, errlen))
            return -1;
    }
    return 0;
}

static int setup_round_buffers(engine *e, fm_state *st, int round, char *err,
                               size_t errlen) {
    fm_args *a = &st->args;
    const fm_shape *sh = &st->plan.sh;
    const fm_round_plan *rp = &st->plan.round[round];
    int W = a->num_ranks, T = a->tokens, K = a->topk, L = a->local_experts;
    uint64_t tk = (uint64_t)T * (uint64_t)K, rb = a->row_bytes;
    int int8 = a->dtype == FM_INT8;
    /* expand_x rows: bf16, or int8 with their scales apart */
    uint64_t xb = int8 ? (uint64_t)a->hidden : rb, sb = (uint64_t)a->hidden / FM_QUANT_BLOCK * 4;
    for (int s = 0; s < W; s++) {
        int at = round * W + s;
        kit_buffer bufs[] = {
            {(uint64_t)T * rb, "fullmesh.x", 0, &a->x[at]},
            {tk * 4, "fullmesh.expert_ids", 0, &a->expert_ids[at]},
            {tk * 4, "fullmesh.topk_weights", 0, &a->topk_weights[at]},
            {tk * 4, "fullmesh.expand_idx", 1, &a->expand_idx[at]},
            {(uint64_t)rp->recv_rows[s] * xb, "fullmesh.expand_x", 1, &a->expand_x[at]},
            {(uint64_t)L * (uint64_t)W * 4, "fullmesh.ep_recv_count", 1, &a->ep_recv_count[at]},
            {(uint64_t)L * 8, "fullmesh.expert_token_num", 1, &a->expert_token_num[at]},
            {(uint64_t)T * rb, "fullmesh.out", 1, &a->out[at]},
            /* INT8 only, last, so a bf16 run allocates exactly what it did */
            {(uint64_t)rp->recv_rows[s] * sb, "fullmesh.dynamic_scales", 1, &a->dynamic_scales[at]},
        };
        size_t n = sizeof bufs / sizeof bufs[0] - (int8 ? 0 : 1);
        if (kit_alloc_all(e, &st->guards, s, bufs, n, err, errlen)) return -1;
        if (fill(e, a->expert_ids[at], rp->expert_ids + (size_t)s * tk, tk * 4, "expert_ids", s,
                 err, errlen) ||
            fill(e, a->topk_weights[at], rp->topk_weights + (size_t)s * tk, tk * 4, "topk_weights",
                 s, err, errlen))
            return -1;
        if (fm_generate_x(e, a->x[at], T, rb, a->hidden, a->dtype, sh->data_seed, round, s, err,
                          errlen))
            return -1;
    }
    return 0;
}

/* Everything after the plan: the args and their per-rank / per-round
 * tables, the windows and buffers, the inputs, the launch. */
static int build(engine *e, fm_state *st, char *err, size_t errlen) {
    const fm_shape *sh = &st->plan.sh;
    fm_args *a = &st->args;
    int W = sh->num_ranks;
    *a = (fm_args){.num_ranks = W, .local_experts = sh->local_experts, .experts = sh->experts,
                   .tokens = sh->tokens, .topk = sh->topk, .hidden = sh->hidden,
                   .rounds = sh->rounds, .dtype = sh->dtype, .row_bytes = sh->row_bytes,
                   .win_row_bytes = sh->win_row_bytes,
                   .rank_size_on_win = sh->rank_size_on_win, .block_stride = sh->block_stride,
                   .inject = sh->inject};
    size_t per_rank = 3, per_round = 9;
    size_t n = per_rank * (size_t)W + per_round * (size_t)W * (size_t)sh->rounds;
    st->tables = calloc(n, sizeof(gm_t));
    if (!st->tables) {
        snprintf(err, errlen, "fullmesh setup: out of host memory");
        return -1;
    }
    gm_t *t = st->tables;
    size_t RW = (size_t)W * (size_t)sh->rounds;
    a->tasks = t; t += W;
    a->recv_status = t; t += W;
    a->expert_out = t; t += W;
    a->x = t; t += RW;
    a->expert_ids = t; t += RW;
    a->topk_weights = t; t += RW;
    a->expand_idx = t; t += RW;
    a->expand_x = t; t += RW;
    a->ep_recv_count = t; t += RW;
    a->expert_token_num = t; t += RW;
    a->out = t; t += RW;
    a->dynamic_scales = t;
    int rc = setup_windows(e, st, err, errlen) || setup_rank_buffers(e, st, err, errlen);
    for (int r = 0; !rc && r < sh->rounds; r++) rc = setup_round_buffers(e, st, r, err, errlen);
    return rc || npurr_launch(e, "fullmesh_dispatch_combine", fm_kernel, a, sh->cores, CORE_AIV,
                            err, errlen) != 0
               ? -1
               : 0;
}

static int fm_setup(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    fm_state *st = kit_state_new(sizeof *st, "fullmesh setup", state, err, errlen);
    if (!st) return -1;
    kit_guards_init(&st->guards, "fullmesh setup", FM_GUARD_BYTE);
    fm_shape sh;
    npurr_topology topo;
    npurr_topology_of(e, &topo);
    int failed = fm_shape_from_topology(o, &topo, &sh, err, errlen) ||
                 fm_plan_build(&sh, &st->plan, err, errlen) || build(e, st, err, errlen);
    return kit_setup_finish(failed, st, fm_destroy, state);
}

/* Dispatch and combine, as MoeDistributeDispatch(V2) and
 * MoeDistributeCombine(V2) run on the chip; the expert FFN between them is
 * the caller's. */
static const kernel_phase fullmesh_phases[] = {
    {"dispatch", {"Dispatch", "DispatchRecv", NULL}, {"MoeDistributeDispatch", NULL}},
    {"combine", {"Combine", "CombineRecv", "CombineSum", NULL}, {"MoeDistributeCombine", NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_fullmesh_dispatch_combine = {
    .name = "fullmesh-dispatch-combine",
    .summary = "MoE dispatch + combine over the full mesh (seed 002): BatchWrite windows, "
               "FLAG1/FLAG2, double buffer",
    .options = fm_options, .setup = fm_setup, .check = fm_check, .layout = fm_layout,
    .destroy = fm_destroy, .estimate = fm_estimate,
    .phases = fullmesh_phases,
};

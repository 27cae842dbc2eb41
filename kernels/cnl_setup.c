/*
 * cnl_setup.c - host side of a combine-normal-layered run: buffers, the
 * inputs the A2 layered dispatch and its notify leave, the symmetric
 * windows, the launch, and the kernel's descriptor (cnl.h).
 *
 * Per rank (kit_alloc_all, outputs and working buffers guarded): expandX
 * (the expert outputs, combine-normal's generated rows), each row's weight,
 * epRankTokenCnt, offsetInner, offsetOuter and countOuter (cnl_plan.c),
 * the BatchWrite task list, the 32 B state every server is sent, the
 * combined tokens. Symmetric, each followed by a guard: the IPC window
 * ((N + 1) * P flags, then N slices of at most T * K rows with their
 * weight), windowOut (N blocks of T rows) and windowIn (N blocks, then N
 * states 512 B apart, named). One launch of --cores AIV cores per rank.
 */
#include "cnl.h"

#include <stdlib.h>
#include <string.h>

void cnl_destroy(void *state) {
    cnl_state *st = state;
    if (!st) return;
    combine_plan_free(&st->plan);
    kit_guards_free(&st->guards);
    free(st);
}

static int fill(engine *e, gm_t at, const void *src, uint64_t bytes, char *err, size_t errlen) {
    if (!bytes) return 0;
    void *h = npurr_gm_host(e, at, bytes);
    if (!h) {
        snprintf(err, errlen, "combine-normal-layered setup: no host view of an input table");
        return -1;
    }
    memcpy(h, src, bytes);
    return 0;
}

static int rank_buffers(engine *e, cnl_state *st, int r, int32_t *tmp, char *err,
                        size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    cnl_args *a = &st->args;
    uint64_t W = (uint64_t)a->num_ranks, E = (uint64_t)a->experts, N = (uint64_t)a->nodes;
    uint64_t T = (uint64_t)a->tokens, PL = W / N * (uint64_t)a->local_experts;
    uint64_t rows = (uint64_t)p->x_rows[r], ts = sizeof(batch_write_task);
    kit_buffer bufs[] = {
        {rows * a->row_bytes, "cnl.expand_x", 0, &a->x[r]},
        {rows * 4, "cnl.expand_scales", 0, &a->scales[r]},
        {E * W * 4, "cnl.ep_rank_token_cnt", 0, &a->send_count[r]},
        {N * T * PL * 4, "cnl.offset_inner", 0, &a->offset_inner[r]},
        {T * N * 4, "cnl.offset_outer", 0, &a->offset_outer[r]},
        {T * 4, "cnl.count_outer", 0, &a->count_outer[r]},
        {2 * N * ts, "cnl.tasks", 1, &a->tasks[r]},
        {UB_ALIGN, "cnl.state", 1, &a->state_src[r]},
        {T * a->row_bytes, "cnl.out", 1, &a->out[r]},
    };
    if (kit_alloc_all(e, &st->guards, r, bufs, sizeof bufs / sizeof bufs[0], err, errlen))
        return -1;
    const int32_t *info = p->x_src_info + (size_t)p->x_row_base[r] * COMBINE_NORMAL_SRC_INFO_LEN;
    float *w = (float *)(void *)tmp;
    size_t K = (size_t)sh->topk;
    for (uint64_t i = 0; i < rows; i++) {   /* each row: the expert output of (s, t, k), its weight */
        int s = info[i * 3], t = info[i * 3 + 1], k = info[i * 3 + 2];
        w[i] = p->topk_weights[((size_t)s * (size_t)sh->tokens + (size_t)t) * K + (size_t)k];
        if (combine_generate_row(e, gm_add(a->x[r], (int64_t)(i * a->row_bytes)), sh, s, t, k, r,
                                 err, errlen))
            return -1;
    }
    if (fill(e, a->scales[r], w, rows * 4, err, errlen)) return -1;
    cnl_send_count(p, tmp);
    if (fill(e, a->send_count[r], tmp, E * W * 4, err, errlen)) return -1;
    cnl_offset_inner(p, r, tmp);
    if (fill(e, a->offset_inner[r], tmp, N * T * PL * 4, err, errlen)) return -1;
    cnl_outer(p, r, tmp, tmp + T * N);
    int32_t state[UB_ALIGN / 4] = {CNL_STATE_VALUE};
    return fill(e, a->offset_outer[r], tmp, T * N * 4, err, errlen) ||
                   fill(e, a->count_outer[r], tmp + T * N, T * 4, err, errlen) ||
                   fill(e, a->state_src[r], state, UB_ALIGN, err, errlen)
               ? -1
               : 0;
}

static int sym(engine *e, cnl_state *st, uint64_t bytes, const char *what, gm_t *out, char *err,
               size_t errlen) {
    return kit_sym_guarded(e, &st->guards, st->args.num_ranks, bytes, what, out, err, errlen);
}

static int build(engine *e, cnl_state *st, int fault, char *err, size_t errlen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    cnl_args *a = &st->args;
    memset(a, 0, sizeof *a);
    a->num_ranks = sh->num_ranks;
    a->nodes = sh->nodes;
    a->npus = sh->num_ranks / sh->nodes;
    a->local_experts = sh->local_experts;
    a->experts = sh->experts;
    a->tokens = sh->tokens;
    a->topk = sh->topk;
    a->hidden = sh->hidden;
    a->row_bytes = sh->row_bytes;
    a->ipc_row = sh->row_bytes + UB_ALIGN;
    a->slice_bytes = (uint64_t)sh->tokens * (uint64_t)sh->topk * a->ipc_row;
    a->block_bytes = (uint64_t)sh->tokens * a->row_bytes;
    a->inject = fault;
    uint64_t N = (uint64_t)a->nodes, P = (uint64_t)a->npus, T = (uint64_t)a->tokens;
    uint64_t PL = P * (uint64_t)a->local_experts;
    uint64_t big = (uint64_t)a->experts * (uint64_t)a->num_ranks;
    if (N * T * PL > big) big = N * T * PL;
    if (T * (N + 1) > big) big = T * (N + 1);
    for (int r = 0; r < a->num_ranks; r++)
        if ((uint64_t)p->x_rows[r] > big) big = (uint64_t)p->x_rows[r];
    int32_t *tmp = malloc(sizeof(int32_t) * (size_t)big + 1);
    if (!tmp) {
        snprintf(err, errlen, "combine-normal-layered setup: out of host memory");
        return -1;
    }
    int rc = 0;
    for (int r = 0; r < a->num_ranks && !rc; r++) rc = rank_buffers(e, st, r, tmp, err, errlen);
    free(tmp);
    uint64_t flags = kit_align_up((N + 1) * P * CNL_FLAG_BYTES, 512);
    if (rc || sym(e, st, flags + N * a->slice_bytes, "cnl.ipc", &a->ipc, err, errlen) ||
        sym(e, st, N * a->block_bytes, "cnl.window_out", &a->win_out, err, errlen) ||
        sym(e, st, N * a->block_bytes + N * CNL_STATE_OFFSET, "cnl.window_in", &a->win_in, err,
            errlen))
        return -1;
    for (int r = 0; r < a->num_ranks; r++)
        for (int s = 0; s < a->nodes; s++) {
            char name[80];
            snprintf(name, sizeof name, "cnl.state[server %d -> rank %d]", s, r);
            npurr_name_word(e, cnl_state_at(a, r, s), 4, OBJ_FLAG, name);
        }
    return npurr_launch(e, "combine_normal_layered", cnl_kernel, a, sh->cores, CORE_AIV, err,
                        errlen) != 0
               ? -1
               : 0;
}

static int cnl_setup(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    cnl_state *st = kit_state_new(sizeof *st, "combine-normal-layered setup", state, err, errlen);
    if (!st) return -1;
    kit_guards_init(&st->guards, "combine-normal-layered setup", CNL_GUARD_BYTE);
    combine_shape sh;
    npurr_topology topo;
    npurr_topology_of(e, &topo);
    int fault = 0;
    int failed = cnl_shape_from_topology(o, &topo, &sh, &fault, err, errlen) ||
                 combine_plan_build(&sh, &st->plan, err, errlen) ||
                 build(e, st, fault, err, errlen);
    return kit_setup_finish(failed, st, cnl_destroy, state);
}

/* The one operator msprof names MoeDistributeCombineA2 (aclnnMoeDistribute
 * CombineA2; its layered tiling). */
static const kernel_phase cnl_phases[] = {
    {"combine", {"CombineIpc", "CombineReduce", "CombineServer", "CombineSum", NULL},
     {"MoeDistributeCombineA2", NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_combine_normal_layered = {
    .name = "combine-normal-layered",
    .summary = "MoE layered normal combine across two A2 servers as the chip runs it "
               "(MoeDistributeCombineA2 layered): rows with their weights into the local ranks' "
               "IPC windows, per-server partial sums, one BatchWrite of the whole block to the "
               "other server, then the sum",
    .options = cnl_options, .setup = cnl_setup, .check = cnl_check, .layout = cnl_layout,
    .destroy = cnl_destroy, .estimate = cnl_estimate, .phases = cnl_phases,
};

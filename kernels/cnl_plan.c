/*
 * cnl_plan.c - combine-normal-layered's options and shape, and the tables
 * NotifyDispatchA2 and DispatchNormalA2 hand MoeDistributeCombineA2Layered,
 * derived from combine-normal's plan (combine_plan.c; cnl.h).
 *
 * epRankTokenCnt [E][W]: rows expert e got from rank w (length_table).
 * offsetInner, per rank r of server sv and local rank lr: for each server
 * s, each token t of rank d = s * P + lr and each expert of sv (in order),
 * the row of that (token, expert) in r's IPC slice for s, or -1. The slice
 * holds every row this server's experts have for d, expert by expert, each
 * expert's rows in d's token order (AlltoAllDispatch's tokenOffset:
 * the rows of the server's earlier experts for d, then the row's index).
 * offsetOuter [T][N]: >= 0 where token t of r has an expert on server n
 * (COMBINE_2SERVER_VERSION reads row t of that server's block), and
 * countOuter the running count of those.
 */
#include "cnl.h"

#include <string.h>

const kernel_option cnl_options[] = {
    COMBINE_NORMAL_OPTS_SHAPE,
    KIT_OPT_DATA_SEED("the routing and of the expert outputs"),
    KIT_OPT_INJECT("no-status-wait (SumToServer reads windowIn before the other server's state "
                   "says its block has landed) | no-ipc-wait (SumToWindow reads the IPC slices "
                   "before the local ranks' flags say they are full)"),
    COMBINE_NORMAL_OPT_CORES,
    {NULL, NULL, NULL},
};

static const char *const faults[] = {"none", "no-status-wait", "no-ipc-wait", NULL};

/* AlltoAllDispatch's sendCount table and queue, SumToWindow's offsets, its
 * two rows and three f32 rows, the flags and items. */
uint32_t cnl_ub_bytes(const combine_shape *sh) {
    uint64_t E = (uint64_t)sh->experts, W = (uint64_t)sh->num_ranks, H = (uint64_t)sh->hidden;
    uint64_t row = kit_align_up(H * 2 + UB_ALIGN, UB_ALIGN), f32 = kit_align_up(H * 4, UB_ALIGN);
    uint64_t send = kit_align_up(E * W * 4, UB_ALIGN) + 2 * row + UB_ALIGN;
    uint64_t sum = kit_align_up((uint64_t)sh->local_experts * (W / (uint64_t)sh->nodes) * 4, UB_ALIGN) +
                   2 * row + 3 * f32;
    uint64_t total = (send > sum ? send : sum) + 4 * UB_ALIGN +
                     (uint64_t)sh->nodes * sizeof(batch_write_task);
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

int cnl_shape_from_topology(const kernel_opts *o, const npurr_topology *topo, combine_shape *sh,
                            int *fault, char *err, size_t errlen) {
    int aiv = kit_cores(topo, CORE_AIV), which;
    if (aiv < 0) return -1;
    if (topo->nodes != 2) {
        snprintf(err, errlen, "combine-normal-layered with --nodes %d: A2's layered normal "
                 "combine is written for two servers (COMBINE_2SERVER_VERSION); one node is "
                 "combine-normal", topo->nodes);
        return -1;
    }
    if (combine_normal_read(o, "combine-normal-layered", faults, topo->nodes, topo->npus_per_node,
                            2, aiv, sh, &which, err, errlen))
        return -1;
    if (fault) *fault = which;
    if (sh->hidden % 16) {
        snprintf(err, errlen, "--hidden %d: a row is moved as whole 32 B blocks: a multiple of 16",
                 sh->hidden);
        return -1;
    }
    if (sh->tokens > CNL_MAX_BS) {
        snprintf(err, errlen, "--tokens %d: A2's layered combine pads to %d token slots a rank, "
                 "at most", sh->tokens, CNL_MAX_BS);
        return -1;
    }
    if (sh->cores < sh->nodes) {
        snprintf(err, errlen, "--cores %d: one core per server waits for its slices and builds "
                 "its BatchWrite item (%d servers)", sh->cores, sh->nodes);
        return -1;
    }
    uint32_t need = cnl_ub_bytes(sh);
    return kit_check_ub(need, err, errlen,
                        "--hidden %d --experts %d: combine-normal-layered needs %u B of UB per "
                        "core (the [E][W] counts, two rows, three f32 rows)",
                        sh->hidden, sh->experts, need);
}

void cnl_send_count(const combine_plan *p, int32_t *send_count) {
    size_t W = (size_t)p->sh.num_ranks, E = (size_t)p->sh.experts;
    for (size_t e = 0; e < E; e++)
        for (size_t w = 0; w < W; w++) send_count[e * W + w] = p->length_table[e * W + w];
}

void cnl_offset_inner(const combine_plan *p, int r, int32_t *offset_inner) {
    const combine_shape *sh = &p->sh;
    size_t W = (size_t)sh->num_ranks, L = (size_t)sh->local_experts, T = (size_t)sh->tokens;
    size_t K = (size_t)sh->topk, N = (size_t)sh->nodes, P = W / N, PL = P * L;
    size_t sv = (size_t)r / P, lr = (size_t)r % P;
    for (size_t i = 0; i < N * T * PL; i++) offset_inner[i] = -1;
    for (size_t s = 0; s < N; s++) {
        size_t d = s * P + lr;
        const int32_t *ids = p->expert_ids + d * T * K, *idx = p->expand_idx + d * T * K;
        for (size_t i = 0; i < T * K; i++) {
            int32_t e = ids[i];
            if (e < 0 || (size_t)e / PL != sv) continue;
            size_t x = (size_t)e % PL;
            int32_t before = 0;   /* the rows of this server's earlier experts for d */
            for (size_t y = 0; y < x; y++) before += p->length_table[(sv * PL + y) * W + d];
            offset_inner[(s * T + i / K) * PL + x] = before + idx[i];
        }
    }
}

void cnl_outer(const combine_plan *p, int r, int32_t *offset_outer, int32_t *count_outer) {
    const combine_shape *sh = &p->sh;
    size_t T = (size_t)sh->tokens, K = (size_t)sh->topk, N = (size_t)sh->nodes;
    size_t PL = (size_t)sh->num_ranks / N * (size_t)sh->local_experts;
    const int32_t *ids = p->expert_ids + (size_t)r * T * K;
    int32_t run = 0;
    for (size_t t = 0; t < T; t++) {
        for (size_t n = 0; n < N; n++) offset_outer[t * N + n] = -1;
        for (size_t k = 0; k < K; k++)
            if (ids[t * K + k] >= 0) offset_outer[t * N + (size_t)ids[t * K + k] / PL] = (int32_t)t;
        for (size_t n = 0; n < N; n++) run += offset_outer[t * N + n] >= 0;
        count_outer[t] = run;
    }
}

/*
 * fullmesh_plan.c - fullmesh-dispatch-combine options -> shape, and the CPU
 * plan of every round: routing (routing.c), expandIdx, sendStatus counts,
 * epRecvCount, expertTokenNum and which token every received row carries.
 *
 * Setup sizes buffers from the plan, the check compares the device's
 * outputs with it, layout prints it. The device computes all of it again
 * from expertIds alone; nothing here is handed to the kernel but the inputs.
 */
#include "fullmesh.h"

#include "kit.h"

#include <stdlib.h>
#include <string.h>

const kernel_option fm_options[] = {
    KIT_OPT_TOKENS("16"),
    KIT_OPT_HIDDEN("128", " (1..8192)"),
    KIT_OPT_TOPK("4"),
    KIT_OPT_EXPERTS("32", " (at most 24)"),
    KIT_OPT_ROUTING("uniform"),
    KIT_OPT_DATA_SEED("the routing and of the tokens"),
    {"rounds", "2", "dispatch + combine pairs (>= 2 exercises the double buffer)"},
    {"cores", "4", "AIV cores per rank"},
    {"dtype", "bf16",
     "bf16 | int8: what the dispatch sends (int8: each row quantized in UB to int8 with one float "
     "scale per 128 elements, as the A2 low-latency dispatch's dynamic quant; expand_x is int8 with "
     "its scales, the FFN dequantizes, combine stays bf16; --hidden a multiple of 128)"},
    KIT_OPT_INJECT("no-double-buffer (every EP op uses window block 0: a fast rank's combine "
                   "overwrites a slow rank's dispatch data)"),
    {NULL, NULL, NULL},
};

/* In the order of the inject enum (0 = none). */
static const char *const fm_faults[] = {"none", "no-double-buffer", NULL};

/* Routing seed of a round. */
static uint64_t fm_round_seed(uint64_t data_seed, int round) {
    return data_seed + 0x9E3779B97F4A7C15ULL * (uint64_t)round;
}

/* --dtype, and the dispatched row it implies. */
static int read_dtype(const kernel_opts *o, fm_shape *sh, char *err, size_t errlen) {
    const char *s;
    if (kit_read_str(o, "dtype", &s, err, errlen)) return -1;
    sh->row_bytes = (uint32_t)sh->hidden * 2u;
    if (strcmp(s, "bf16") == 0) {
        sh->dtype = FM_BF16;
        sh->win_row_bytes = sh->row_bytes;
        return 0;
    }
    if (strcmp(s, "int8") != 0) {
        snprintf(err, errlen, "--dtype %s: expected bf16 or int8", s);
        return -1;
    }
    if (sh->hidden % FM_QUANT_BLOCK) {
        snprintf(err, errlen, "--hidden %d: --dtype int8 needs a multiple of %d (one scale per block)",
                 sh->hidden, FM_QUANT_BLOCK);
        return -1;
    }
    sh->dtype = FM_INT8;
    sh->win_row_bytes = (uint32_t)kit_align_up(
        dev_quant_int8_bytes((uint32_t)sh->hidden, FM_QUANT_BLOCK), UB_ALIGN);
    return 0;
}

uint32_t fm_ub_bytes(const fm_shape *sh) {
    uint64_t W = (uint64_t)sh->num_ranks, L = (uint64_t)sh->local_experts;
    uint64_t E = (uint64_t)sh->experts, rb = kit_align_up(sh->row_bytes, UB_ALIGN);
    uint64_t rows = rb > FM_COPY_CHUNK ? rb : FM_COPY_CHUNK;
    uint64_t tables = kit_align_up(E * 4, UB_ALIGN) + kit_align_up((E + 1) * 4, UB_ALIGN) +
                      kit_align_up(L * W * 4, UB_ALIGN) + kit_align_up(L * 8, UB_ALIGN) +
                      kit_align_up(W * sizeof(batch_write_task), UB_ALIGN);
    uint64_t total = 3 * (uint64_t)FM_META_BYTES + 3 * W * FM_STATUS_ROW_BYTES + tables +
                     FM_FLAG_BYTES + 2 * rows + kit_align_up((uint64_t)sh->hidden * 4, UB_ALIGN) +
                     rb;
    /* INT8: two quantized rows; the f32 work of the quant is acc_ub's */
    if (sh->dtype == FM_INT8) total += 2 * (uint64_t)sh->win_row_bytes;
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

int fm_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node, int num_aiv,
                       fm_shape *sh, char *err, size_t errlen) {
    memset(sh, 0, sizeof *sh);
    if (nodes < 1 || npus_per_node < 1 || (int64_t)nodes * npus_per_node > FM_MAX_RANKS) {
        snprintf(err, errlen, "--nodes %d x --npus-per-node %d: fullmesh supports 1..%d ranks",
                 nodes, npus_per_node, FM_MAX_RANKS);
        return -1;
    }
    sh->nodes = nodes;
    sh->npus_per_node = npus_per_node;
    int W = nodes * npus_per_node;
    sh->num_ranks = W;
    kit_moe_limits lim = {.tokens = 1 << 16, .hidden = FM_MAX_HIDDEN, .topk = 64,
                          .experts = (int64_t)W * FM_FLAG_OFFSET, .rows = INT32_MAX / 4};
    if (kit_read_moe(o, W, &lim, &sh->moe, err, errlen) || read_dtype(o, sh, err, errlen)) return -1;
    int64_t v;
    if (kopt_i64_range(o, "rounds", 1, 64, &v, err, errlen)) return -1;
    sh->rounds = (int)v;
    if (kopt_i64_range(o, "cores", 1, num_aiv, &v, err, errlen)) return -1;
    sh->cores = (int)v;
    if (kit_read_routing(o, W, &sh->routing, err, errlen) ||
        kit_read_seed(o, &sh->data_seed, err, errlen) ||
        kit_read_inject(o, fm_faults, &sh->inject, err, errlen))
        return -1;
    /* Decision (the seed sizes windows by a fixed HCCL buffer): a window
     * holds the most one rank can send another, every token to min(K, L)
     * of the receiver's experts, plus the count row and FLAG2. The combine
     * sends as many bf16 rows back through the same windows, so with INT8
     * rows the combine's need sizes them. */
    uint64_t per = (uint64_t)(sh->topk < sh->local_experts ? sh->topk : sh->local_experts);
    uint64_t rows = (uint64_t)sh->tokens * per;
    uint64_t dispatch = FM_STATUS_ROW_BYTES + rows * sh->win_row_bytes, combine = rows * sh->row_bytes;
    sh->rank_size_on_win = kit_align_up((dispatch > combine ? dispatch : combine) + FM_FLAG_BYTES,
                                        UB_ALIGN);
    sh->block_stride = (uint64_t)W * sh->rank_size_on_win + FM_CTRL_BYTES;
    if (sh->block_stride * 2 > (1ull << 34)) {
        snprintf(err, errlen,
                 "--tokens %d x --hidden %d: each window block would be %llu B per rank (over "
                 "8 GiB)",
                 sh->tokens, sh->hidden, (unsigned long long)sh->block_stride);
        return -1;
    }
    uint32_t need = fm_ub_bytes(sh);
    if (need > UB_BYTES) {
        snprintf(err, errlen,
                 "--hidden %d with %d ranks and --experts %d: a core needs %u B of UB, more than "
                 "the %u B UB",
                 sh->hidden, W, sh->experts, need, UB_BYTES);
        return -1;
    }
    return 0;
}

int fm_shape_from_topology(const kernel_opts *o, const npurr_topology *topo, fm_shape *sh, char *err,
                         size_t errlen) {
    int aiv = kit_cores(topo, CORE_AIV);
    return aiv < 0 ? -1
                   : fm_shape_from_opts(o, topo->nodes, topo->npus_per_node, aiv, sh, err, errlen);
}

static void round_free(fm_round_plan *r) {
    free(r->expert_ids);
    free(r->topk_weights);
    free(r->expand_idx);
    free(r->send_count);
    free(r->ep_recv_count);
    free(r->expert_token_num);
    free(r->recv_rows);
    free(r->owner_base);
    free(r->owner);
}

void fm_plan_free(fm_plan *p) {
    if (p->round)
        for (int r = 0; r < p->sh.rounds; r++) round_free(&p->round[r]);
    free(p->round);
    memset(p, 0, sizeof *p);
}

static int round_build(const fm_shape *sh, int round, fm_round_plan *rp, char *err, size_t errlen) {
    size_t W = (size_t)sh->num_ranks, L = (size_t)sh->local_experts;
    size_t T = (size_t)sh->tokens, K = (size_t)sh->topk;
    rp->expert_ids = malloc(sizeof(int32_t) * W * T * K);
    rp->topk_weights = malloc(sizeof(float) * W * T * K);
    rp->expand_idx = malloc(sizeof(int32_t) * W * T * K);
    rp->send_count = calloc(W * W * L, sizeof(int32_t));
    rp->ep_recv_count = calloc(W * L * W, sizeof(int32_t));
    rp->expert_token_num = calloc(W * L, sizeof(int64_t));
    rp->recv_rows = calloc(W, sizeof(int64_t));
    rp->owner_base = calloc(W + 1, sizeof(int64_t));
    rp->owner = malloc(sizeof(int32_t) * (W * T * K + 1));
    if (!rp->expert_ids || !rp->topk_weights || !rp->expand_idx || !rp->send_count ||
        !rp->ep_recv_count || !rp->expert_token_num || !rp->recv_rows || !rp->owner_base ||
        !rp->owner) {
        snprintf(err, errlen, "--tokens %d: out of host memory for the routing tables", sh->tokens);
        return -1;
    }
    routing_shape rs = {.num_ranks = (int)W, .nodes = sh->nodes, .npus_per_node = sh->npus_per_node,
                        .experts = sh->experts, .topk = (int)K};
    for (size_t s = 0; s < W; s++)
        if (routing_generate(&sh->routing, &rs, fm_round_seed(sh->data_seed, round), (int)s, (int)T,
                             rp->expert_ids + s * T * K, rp->topk_weights + s * T * K, err,
                             errlen) != 0)
            return -1;
    /* Seed s2.2.2: expandIdx(i, j) = sendStatus(rank, local expert)++. */
    for (size_t s = 0; s < W; s++)
        for (size_t i = 0; i < T * K; i++) {
            int32_t e = rp->expert_ids[s * T * K + i];
            if (e < 0) {
                rp->expand_idx[s * T * K + i] = -1;
                continue;
            }
            rp->expand_idx[s * T * K + i] = rp->send_count[(s * W + (size_t)e / L) * L + (size_t)e % L]++;
        }
    /* Seed s2.4.1: epRecvCount = the received [W x L] counts transposed to
     * [L x W] and prefix-summed in row-major order. */
    int64_t base = 0;
    for (size_t p = 0; p < W; p++) {
        int64_t run = 0;
        for (size_t le = 0; le < L; le++) {
            for (size_t src = 0; src < W; src++) {
                run += rp->send_count[(src * W + p) * L + le];
                rp->ep_recv_count[(p * L + le) * W + src] = (int32_t)run;
            }
            rp->expert_token_num[p * L + le] = run;
        }
        rp->recv_rows[p] = run;
        rp->owner_base[p] = base;
        base += run;
    }
    rp->owner_base[W] = base;
    for (size_t s = 0; s < W; s++)
        for (size_t i = 0; i < T * K; i++) {
            int32_t e = rp->expert_ids[s * T * K + i];
            if (e < 0) continue;
            size_t p = (size_t)e / L, le = (size_t)e % L;
            int64_t first = rp->ep_recv_count[(p * L + le) * W + s] -
                            rp->send_count[(s * W + p) * L + le];
            rp->owner[rp->owner_base[p] + first + rp->expand_idx[s * T * K + i]] = (int32_t)(s * T * K + i);
        }
    return 0;
}

int fm_plan_build(const fm_shape *sh, fm_plan *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    p->sh = *sh;
    p->round = calloc((size_t)sh->rounds, sizeof *p->round);
    if (!p->round) {
        snprintf(err, errlen, "--rounds %d: out of host memory", sh->rounds);
        return -1;
    }
    for (int r = 0; r < sh->rounds; r++) {
        if (round_build(sh, r, &p->round[r], err, errlen)) {
            fm_plan_free(p);
            return -1;
        }
        for (int q = 0; q < sh->num_ranks; q++)
            if (p->round[r].recv_rows[q] > p->max_recv_rows) p->max_recv_rows = p->round[r].recv_rows[q];
    }
    return 0;
}

/*
 * combine_plan.c - host side: options -> shape, routing -> dispatch metadata.
 *
 * The combine consumes what a dispatch left behind. This file plays that
 * dispatch on the CPU: it routes every rank's tokens (routing.c) and derives
 * the expert-major, rank-minor layout of x on each expert rank (length_table,
 * offset_table), the per-token position of every expert output in the
 * receive buffer (expert_window_offset, expand_idx; seed 002 s3.4) and who
 * owns each received row; for combine-normal also which (source rank,
 * token, slot) each row of x holds (A2's tokenSrcInfo). Setup, check and
 * layout all build the same plan.
 */
#include "combine.h"

#include "kit.h"

#include <stdlib.h>
#include <string.h>

const kernel_option combine_options[] = {
    KIT_OPT_TOKENS("128"),
    KIT_OPT_HIDDEN("7168", ""),
    KIT_OPT_TOPK("8"),
    KIT_OPT_EXPERTS("256", ""),
    {"staging-bytes", "65536",
     "each of the two UB staging buffers = largest flush into a ring (multiple of 32)"},
    {"ring-bytes", "262144",
     "HCCS ring per (source, destination) pair (multiple of 32); smaller than a flush deadlocks"},
    KIT_OPT_ROUTING("uniform"),
    KIT_OPT_DATA_SEED("the routing and of the payload"),
    KIT_OPT_INJECT("no-mte3-wait (commit the ring tail before the data lands: stale reads)"),
    {"sender-cores", "0", "AIV cores per rank for the sender; 0 = one per destination rank"},
    {NULL, NULL, NULL},
};

/* In the order of the inject enum (0 = none). */
static const char *const combine_faults[] = {"none", "no-mte3-wait", NULL};

uint32_t combine_sender_ub_bytes(const combine_shape *sh) {
    uint64_t table = kit_align_up((uint64_t)sh->local_experts * (uint64_t)sh->num_ranks * 4,
                                      UB_ALIGN);
    uint64_t total = 2 * table + 2 * (uint64_t)COMBINE_READ_TEMP_BYTES +
                     COMBINE_STAGING_BUFFERS * (uint64_t)sh->staging_bytes;
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

uint32_t combine_receiver_ub_bytes(const combine_shape *sh) {
    uint64_t hc = (uint64_t)sh->hidden < COMBINE_HIDDEN_TILE ? (uint64_t)sh->hidden
                                                             : COMBINE_HIDDEN_TILE;
    uint64_t acc = kit_align_up(hc * 4, UB_ALIGN);
    uint64_t row = kit_align_up(hc * 2, UB_ALIGN);
    uint64_t ewo = kit_align_up((uint64_t)sh->experts * 4, UB_ALIGN);
    uint64_t total = 2 * (uint64_t)COMBINE_RECV_CHUNK_BYTES + acc + 3 * row + ewo +
                     3 * (uint64_t)COMBINE_META_BYTES;
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

int combine_read_shape(const kernel_opts *o, int scheme, const char *kernel, int nodes,
                       int npus_per_node, int max_nodes, combine_shape *sh, char *err,
                       size_t errlen) {
    memset(sh, 0, sizeof *sh);
    sh->scheme = scheme;
    if (max_nodes > 1 && (nodes < 1 || nodes > max_nodes)) {
        snprintf(err, errlen, "%s runs on 1 to %d nodes: --nodes must be 1..%d, got %d", kernel,
                 max_nodes, max_nodes, nodes);
        return -1;
    }
    if (kit_check_one_node(kernel, "moves data inside one node over HCCS",
                           max_nodes > 1 ? 1 : nodes, npus_per_node, COMBINE_MAX_RANKS, err,
                           errlen))
        return -1;
    sh->nodes = max_nodes > 1 ? nodes : 1;
    sh->num_ranks = sh->nodes * npus_per_node;
    static const kit_moe_limits lim = {.tokens = 1 << 24, .hidden = 1 << 16, .topk = 64,
                                        .experts = 1 << 16, .rows = INT32_MAX / 2};
    if (kit_read_moe(o, sh->num_ranks, &lim, &sh->moe, err, errlen)) return -1;
    sh->row_bytes = (uint32_t)sh->hidden * 2u;
    return 0;
}

int combine_read_inputs(const kernel_opts *o, const char *const *faults, combine_shape *sh,
                        int *fault, char *err, size_t errlen) {
    return kit_read_routing(o, sh->num_ranks, &sh->routing, err, errlen) ||
                   kit_read_seed(o, &sh->data_seed, err, errlen) ||
                   kit_read_inject(o, faults, fault, err, errlen)
               ? -1
               : 0;
}

int combine_shape_from_opts(const kernel_opts *o, int scheme, int nodes, int npus_per_node,
                            int num_aiv, combine_shape *sh, char *err, size_t errlen) {
    if (combine_read_shape(o, scheme, "combine-sender", nodes, npus_per_node, 1, sh, err, errlen))
        return -1;
    int R = sh->num_ranks;
    int64_t v;
    if (kopt_i64_range(o, "staging-bytes", 64, UB_BYTES, &v, err, errlen)) return -1;
    if (v % UB_ALIGN) {
        snprintf(err, errlen, "--staging-bytes %lld: must be a multiple of 32 (UB blocks)",
                 (long long)v);
        return -1;
    }
    sh->staging_bytes = (uint32_t)v;
    if (kopt_i64_range(o, "ring-bytes", 32, (int64_t)1 << 36, &v, err, errlen)) return -1;
    if (v % UB_ALIGN) {
        snprintf(err, errlen, "--ring-bytes %lld: must be a multiple of 32", (long long)v);
        return -1;
    }
    sh->ring_bytes = (uint64_t)v;
    int fault;
    if (combine_read_inputs(o, combine_faults, sh, &fault, err, errlen)) return -1;
    sh->inject_no_mte3_wait = fault == 1;
    /* The receivers take one AIV per source rank; the senders get the rest. */
    if (kopt_i64_range(o, "sender-cores", 0, num_aiv - R, &v, err, errlen)) return -1;
    sh->sender_cores = v == 0 ? R : (int)v;

    uint32_t need = combine_sender_ub_bytes(sh);
    if (kit_check_ub(need, err, errlen,
                     "--staging-bytes %u: the sender needs %u B of UB (2 x staging + 2 x %u B "
                     "read_temp + two [%d, %d] tables)",
                     sh->staging_bytes, need, COMBINE_READ_TEMP_BYTES, sh->local_experts, R))
        return -1;
    need = combine_receiver_ub_bytes(sh);
    return kit_check_ub(need, err, errlen,
                        "--experts %d: the receiver needs %u B of UB (its expert_window_offset "
                        "table is 4 B per expert)",
                        sh->experts, need);
}

int combine_shape_from_topology(const kernel_opts *o, int scheme, const npurr_topology *topo,
                              combine_shape *sh, char *err, size_t errlen) {
    int aiv = kit_cores(topo, CORE_AIV);
    if (aiv < 0) return -1;
    return scheme == COMBINE_SCHEME_NORMAL
               ? combine_normal_shape_from_opts(o, topo->nodes, topo->npus_per_node, aiv, sh, err,
                                                errlen)
               : combine_shape_from_opts(o, scheme, topo->nodes, topo->npus_per_node, aiv, sh, err,
                                         errlen);
}

void combine_plan_free(combine_plan *p) {
    free(p->expert_ids);
    free(p->topk_weights);
    free(p->expand_idx);
    free(p->length_table);
    free(p->offset_table);
    free(p->x_rows);
    free(p->recv_rows);
    free(p->recv_row_offset);
    free(p->recv_total);
    free(p->expert_window_offset);
    free(p->recv_owner);
    free(p->recv_owner_base);
    free(p->x_src_info);
    free(p->x_row_base);
    memset(p, 0, sizeof *p);
}

static int alloc_tables(combine_plan *p) {
    const combine_shape *sh = &p->sh;
    size_t R = (size_t)sh->num_ranks, L = (size_t)sh->local_experts, E = (size_t)sh->experts;
    size_t TK = (size_t)sh->tokens * (size_t)sh->topk;
    p->expert_ids = malloc(sizeof(int32_t) * R * TK);
    p->topk_weights = malloc(sizeof(float) * R * TK);
    p->expand_idx = malloc(sizeof(int32_t) * R * TK);
    p->length_table = calloc(R * L * R, sizeof(int32_t));
    p->offset_table = calloc(R * L * R, sizeof(int32_t));
    p->x_rows = calloc(R, sizeof(int64_t));
    p->recv_rows = calloc(R * R, sizeof(int32_t));
    p->recv_row_offset = calloc(R * R, sizeof(int32_t));
    p->recv_total = calloc(R, sizeof(int64_t));
    p->expert_window_offset = calloc(R * E, sizeof(int32_t));
    p->recv_owner = malloc(sizeof(int32_t) * (R * TK + 1));
    p->recv_owner_base = calloc(R + 1, sizeof(int64_t));
    if (sh->scheme == COMBINE_SCHEME_NORMAL) {
        p->x_src_info = malloc(sizeof(int32_t) * COMBINE_NORMAL_SRC_INFO_LEN * (R * TK + 1));
        p->x_row_base = calloc(R + 1, sizeof(int64_t));
        if (!p->x_src_info || !p->x_row_base) return -1;
    }
    return p->expert_ids && p->topk_weights && p->expand_idx && p->length_table &&
                   p->offset_table && p->x_rows && p->recv_rows && p->recv_row_offset &&
                   p->recv_total && p->expert_window_offset && p->recv_owner && p->recv_owner_base
               ? 0
               : -1;
}

/* length_table[p][le][s] and offset_table, as the plan stores them. */
#define LEN(pp, le, ss) p->length_table[((pp) * L + (le)) * R + (ss)]
#define OFF(pp, le, ss) p->offset_table[((pp) * L + (le)) * R + (ss)]

/* The dispatch's side: each (t, k)'s index inside its (expert, source)
 * segment, the segment lengths, and x expert-major, rank-minor. */
static void layout_x(combine_plan *p) {
    size_t R = (size_t)p->sh.num_ranks, L = (size_t)p->sh.local_experts;
    size_t TK = (size_t)p->sh.tokens * (size_t)p->sh.topk;
    /* Tokens keep their order within a segment, as a dispatch appends them. */
    for (size_t s = 0; s < R; s++)
        for (size_t i = 0; i < TK; i++) {
            int32_t e = p->expert_ids[s * TK + i];
            if (e < 0) {
                p->expand_idx[s * TK + i] = -1;
                continue;
            }
            size_t pp = (size_t)e / L, le = (size_t)e % L;
            p->expand_idx[s * TK + i] = LEN(pp, le, s)++;
        }
    /* offset_table holds global row offsets (seed 000 s2.2 recommends
     * global offsets to save index arithmetic). */
    for (size_t pp = 0; pp < R; pp++) {
        int64_t row = 0;
        for (size_t le = 0; le < L; le++)
            for (size_t s = 0; s < R; s++) {
                OFF(pp, le, s) = (int32_t)row;
                row += LEN(pp, le, s);
            }
        p->x_rows[pp] = row;
    }
}

/* Receive layout on s: the stream from each source p, sources in rank
 * order (seed 002's WinIn windows, packed without per-rank padding), and
 * which (t, k) of s every received row belongs to. */
static void layout_recv(combine_plan *p) {
    size_t R = (size_t)p->sh.num_ranks, L = (size_t)p->sh.local_experts;
    size_t E = (size_t)p->sh.experts, TK = (size_t)p->sh.tokens * (size_t)p->sh.topk;
    int64_t owner_base = 0;
    for (size_t s = 0; s < R; s++) {
        int64_t row = 0;
        for (size_t pp = 0; pp < R; pp++) {
            p->recv_row_offset[s * R + pp] = (int32_t)row;
            int64_t from = 0;
            for (size_t le = 0; le < L; le++) {
                p->expert_window_offset[s * E + pp * L + le] = (int32_t)(row + from);
                from += LEN(pp, le, s);
            }
            p->recv_rows[s * R + pp] = (int32_t)from;
            row += from;
        }
        p->recv_total[s] = row;
        p->recv_owner_base[s] = owner_base;
        owner_base += row;
    }
    p->recv_owner_base[R] = owner_base;
    for (size_t s = 0; s < R; s++)
        for (size_t i = 0; i < TK; i++) {
            int32_t e = p->expert_ids[s * TK + i];
            if (e < 0) continue;
            int64_t row = p->expert_window_offset[s * E + (size_t)e] + p->expand_idx[s * TK + i];
            p->recv_owner[p->recv_owner_base[s] + row] = (int32_t)i;
        }
}
/* combine-normal's tokenSrcInfo: which (s, t, k) each row of x on p holds,
 * as A2's normal dispatch writes it beside recv_x (3 int32 per row). */
static void layout_src_info(combine_plan *p) {
    size_t R = (size_t)p->sh.num_ranks, L = (size_t)p->sh.local_experts;
    size_t K = (size_t)p->sh.topk, TK = (size_t)p->sh.tokens * K;
    for (size_t pp = 0; pp < R; pp++) p->x_row_base[pp + 1] = p->x_row_base[pp] + p->x_rows[pp];
    for (size_t s = 0; s < R; s++)
        for (size_t i = 0; i < TK; i++) {
            int32_t e = p->expert_ids[s * TK + i];
            if (e < 0) continue;
            size_t pp = (size_t)e / L, le = (size_t)e % L;
            int64_t row = p->x_row_base[pp] + OFF(pp, le, s) + p->expand_idx[s * TK + i];
            int32_t *info = p->x_src_info + (size_t)row * COMBINE_NORMAL_SRC_INFO_LEN;
            info[0] = (int32_t)s;
            info[1] = (int32_t)(i / K);
            info[2] = (int32_t)(i % K);
        }
}
#undef LEN
#undef OFF

int combine_plan_build(const combine_shape *sh, combine_plan *p, char *err, size_t errlen) {
    memset(p, 0, sizeof *p);
    p->sh = *sh;
    if (alloc_tables(p)) {
        combine_plan_free(p);
        snprintf(err, errlen, "--tokens %d: out of host memory for the routing tables",
                 sh->tokens);
        return -1;
    }
    size_t TK = (size_t)sh->tokens * (size_t)sh->topk;
    int nodes = sh->nodes > 0 ? sh->nodes : 1;
    routing_shape rs = {.num_ranks = sh->num_ranks, .nodes = nodes,
                        .npus_per_node = sh->num_ranks / nodes,
                        .experts = sh->experts, .topk = sh->topk};
    for (int s = 0; s < sh->num_ranks; s++) {
        if (routing_generate(&sh->routing, &rs, sh->data_seed, s, sh->tokens,
                             p->expert_ids + (size_t)s * TK, p->topk_weights + (size_t)s * TK, err,
                             errlen) != 0) {
            combine_plan_free(p);
            return -1;
        }
    }
    layout_x(p);
    layout_recv(p);
    if (sh->scheme == COMBINE_SCHEME_NORMAL) layout_src_info(p);
    return 0;
}

/*
 * ll_plan.c - the low-latency kernels' options -> shape, their row and
 * window geometry, UB, and the routing plan (ll.h).
 *
 * The plan is fullmesh's (fullmesh_plan.c): the routing of every rank,
 * expandIdx (per source, the running count of its slots per expert, which
 * is also where a row lands in the expert's window slot), sendStatus
 * counts, epRecvCount and which token every received row holds. Both
 * kernels' expand_x is laid out as fullmesh's: expert-major, source-minor,
 * each (expert, source) segment in token order.
 *
 * Geometry of a dispatched row (MoeDistributeDispatchV2Single's Init): the
 * values (H int8, or H bf16) padded to 32 B (hOutSizeAlign), a 32 B scale
 * block, the (rank, token, k) triple (hScaleIdxSize bytes move), the window
 * stride that rounded up to 512 B (hAlignWinSize). The layered token struct
 * (MoeDistributeDispatchV2Layered's Init): | flag 32 B | values | top-k ids
 * alignK * 4 B | scale 32 B |.
 */
#include "ll.h"

#include <string.h>

#define LL_COMMON_OPTS                                                                            \
    KIT_OPT_TOKENS("16"), KIT_OPT_HIDDEN("256", " (a multiple of 32, at most 8192)"),             \
        KIT_OPT_TOPK("4"), KIT_OPT_EXPERTS("32", ""), KIT_OPT_ROUTING("uniform"),                 \
        KIT_OPT_DATA_SEED("the routing and of the tokens"),                                       \
        {"cores", "0", "AIV cores per rank; 0 = all of them (48 on 910B2), as A2's tiling takes"}, \
        {"dtype", "int8",                                                                          \
         "int8 | bf16: what the dispatch sends (int8: each row quantized in UB with one float "    \
         "scale per row, the A2 low-latency dispatch's dynamic quant; the combine stays bf16)"}

const kernel_option ll_single_options[] = {
    LL_COMMON_OPTS,
    KIT_OPT_INJECT("no-status-wait (the dispatch's receivers copy their window slots without "
                   "waiting for the senders' statuses) | status-first (the combine writes a row's "
                   "status before the row)"),
    {NULL, NULL, NULL},
};

const kernel_option ll_layered_options[] = {
    LL_COMMON_OPTS,
    KIT_OPT_INJECT("no-ipc-barrier (the dispatch copies its IPC window into expand_x without "
                   "waiting for the local ranks' flags) | no-server-wait (the combine sums "
                   "without waiting for the other server's end status)"),
    {NULL, NULL, NULL},
};

static const char *const single_faults[] = {"none", "no-status-wait", "status-first", NULL};
static const char *const layered_faults[] = {"none", "no-ipc-barrier", "no-server-wait", NULL};

static int read_dtype(const kernel_opts *o, ll_shape *sh, char *err, size_t errlen) {
    const char *s;
    if (kit_read_str(o, "dtype", &s, err, errlen)) return -1;
    if (strcmp(s, "int8") == 0) sh->dtype = LL_INT8;
    else if (strcmp(s, "bf16") == 0) sh->dtype = LL_BF16;
    else {
        snprintf(err, errlen, "--dtype %s: expected int8 or bf16", s);
        return -1;
    }
    return 0;
}

static void geometry(ll_shape *sh) {
    uint32_t H = (uint32_t)sh->hidden;
    sh->row_bytes = H * 2u;
    sh->xrow_bytes = sh->dtype == LL_INT8 ? H : H * 2u;
    sh->scale_at = (uint32_t)kit_align_up(sh->xrow_bytes, UB_ALIGN);
    sh->info_at = sh->scale_at + UB_ALIGN;
    sh->move_bytes = sh->info_at + LL_IDX_INFO * 4u;
    sh->win_row = (uint32_t)kit_align_up(sh->move_bytes, LL_WIN_ALIGN);
    sh->cwin_row = (uint32_t)kit_align_up(sh->row_bytes, LL_WIN_ALIGN);
    uint32_t align_k = (uint32_t)kit_align_up((uint64_t)sh->topk, 8);
    sh->tok_at = UB_ALIGN;
    sh->exp_at = sh->tok_at + sh->xrow_bytes;
    sh->sc_at = sh->exp_at + align_k * 4u;
    sh->struct_bytes = sh->sc_at + UB_ALIGN;
    /* SERVER_SIZE_ON_WIN sized to the shape: every token of the peer and
     * the flag after the last one (a receiver reads the next token's
     * flag), 4 KB aligned */
    sh->server_bytes = kit_align_up((uint64_t)(sh->tokens + 1) * sh->struct_bytes, 4096);
    /* RANK_SIZE_ON_IPC: the most one source can leave one expert, 512 B aligned */
    sh->ipc_seg = kit_align_up((uint64_t)sh->tokens * sh->struct_bytes, LL_WIN_ALIGN);
}

uint32_t ll_ub_bytes(const ll_shape *sh) {
    uint64_t TK4 = kit_align_up((uint64_t)sh->tokens * (uint64_t)sh->topk * 4, UB_ALIGN);
    uint64_t H = (uint64_t)sh->hidden, f32 = kit_align_up(H * 4, UB_ALIGN);
    uint64_t row = kit_align_up(sh->row_bytes, UB_ALIGN), mv = kit_align_up(sh->move_bytes, UB_ALIGN);
    uint64_t W = (uint64_t)sh->num_ranks, L = (uint64_t)sh->local_experts, E = (uint64_t)sh->experts;
    uint64_t small = kit_align_up(E * LL_STATE_BYTES, UB_ALIGN) + kit_align_up(W * L * 4, UB_ALIGN) +
                     (uint64_t)sh->cores * LL_WS_BLOCK + 4 * UB_ALIGN;
    uint64_t total;
    if (sh->kind == LL_KIND_SINGLE) {
        /* ids, counts, the reduction's work, two x rows, two dispatched
         * rows; the combine reuses the rows and adds two f32 rows */
        uint64_t dispatch = 3 * TK4 + 2 * row + 2 * mv;
        uint64_t combine = 2 * TK4 + 2 * row + 2 * f32 + row + (uint64_t)sh->topk * LL_STATE_BYTES;
        total = (dispatch > combine ? dispatch : combine) + small;
    } else {
        /* tBuf: ids, the batch of structs (+ the bf16 rows the quant reads),
         * the masks; combine: the tables of a server, two f32 rows */
        uint64_t structs = kit_align_up(sh->struct_bytes, UB_ALIGN);
        uint64_t tokens = ((uint64_t)sh->tokens + (uint64_t)sh->cores - 1) / (uint64_t)sh->cores;
        uint64_t dispatch = 2 * TK4 + tokens * (structs + row) +
                            kit_align_up((uint64_t)sh->tokens * LLL_FLAG_BYTES, UB_ALIGN) +
                            kit_align_up(L * W * UB_ALIGN, UB_ALIGN);
        uint64_t combine = 2 * TK4 + 3 * f32 + 2 * row +
                           kit_align_up((uint64_t)sh->tokens * (uint64_t)sh->nodes * 4 * 3, UB_ALIGN);
        total = (dispatch > combine ? dispatch : combine) + small + 2 * LLL_WQE_BYTES;
    }
    return total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
}

static int check_topology(int kind, int nodes, int npus, char *err, size_t errlen) {
    if (npus < 1 || npus > 8) {
        snprintf(err, errlen, "--npus-per-node %d: A2's low-latency kernels run on servers of "
                 "1..8 NPUs (SERVER_RANK_SIZE)", npus);
        return -1;
    }
    if (kind == LL_KIND_SINGLE && nodes != 1) {
        snprintf(err, errlen, "ll-single-dispatch-combine with --nodes %d: the single-server path "
                 "(MoeDistributeDispatchV2Single) runs on one node; ll-layered-dispatch-combine "
                 "crosses nodes", nodes);
        return -1;
    }
    if (kind == LL_KIND_LAYERED && (nodes < 2 || (int64_t)nodes * npus > LL_MAX_RANKS)) {
        snprintf(err, errlen, "ll-layered-dispatch-combine with --nodes %d x --npus-per-node %d: "
                 "the layered path runs on 2 or more nodes, at most %d ranks here",
                 nodes, npus, LL_MAX_RANKS);
        return -1;
    }
    return 0;
}

static int check_cores(const ll_shape *sh, char *err, size_t errlen) {
    if (sh->kind != LL_KIND_LAYERED) return 0;
    int N = sh->nodes, P = sh->npus_per_node, L = sh->local_experts;
    int need = 2 * N + 1;
    if (need < P) need = P;
    if (need < L) need = L;
    if (need < 2 * N) need = 2 * N;
    if (sh->cores < need) {
        snprintf(err, errlen,
                 "--cores %d: the layered kernels need at least %d (one per server to send and "
                 "count, one for the outer counts and one per server to copy arrivals, one per "
                 "local rank for the IPC flags, one per local expert to copy out; %d local experts)",
                 sh->cores, need, L);
        return -1;
    }
    return 0;
}

int ll_shape_from_topology(const kernel_opts *o, int kind, const npurr_topology *topo,
                           ll_shape *sh, char *err, size_t errlen) {
    memset(sh, 0, sizeof *sh);
    sh->kind = kind;
    int aiv = kit_cores(topo, CORE_AIV);
    if (aiv < 0 || check_topology(kind, topo->nodes, topo->npus_per_node, err, errlen)) return -1;
    sh->nodes = topo->nodes;
    sh->npus_per_node = topo->npus_per_node;
    sh->num_ranks = topo->nodes * topo->npus_per_node;
    kit_moe_limits lim = {.tokens = 4096, .hidden = LL_MAX_HIDDEN, .topk = 16,
                          .experts = 1024, .rows = INT32_MAX / 4};
    if (kit_read_moe(o, sh->num_ranks, &lim, &sh->moe, err, errlen) ||
        read_dtype(o, sh, err, errlen))
        return -1;
    if (sh->hidden % 32) {
        snprintf(err, errlen, "--hidden %d: must be a multiple of 32 (a row is quantized and moved "
                 "in 32 B blocks)", sh->hidden);
        return -1;
    }
    int64_t v;
    if (kopt_i64_range(o, "cores", 0, aiv, &v, err, errlen)) return -1;
    sh->cores = v == 0 ? aiv : (int)v;
    int which;
    if (kit_read_routing(o, sh->num_ranks, &sh->routing, err, errlen) ||
        kit_read_seed(o, &sh->data_seed, err, errlen) ||
        kit_read_inject(o, kind == LL_KIND_SINGLE ? single_faults : layered_faults, &which, err,
                        errlen))
        return -1;
    sh->inject = which;
    geometry(sh);
    if (check_cores(sh, err, errlen)) return -1;
    uint32_t need = ll_ub_bytes(sh);
    return kit_check_ub(need, err, errlen,
                        "--tokens %d --topk %d --hidden %d --experts %d: a core needs %u B of UB",
                        sh->tokens, sh->topk, sh->hidden, sh->experts, need);
}

int ll_plan_build(const ll_shape *sh, fm_plan *p, char *err, size_t errlen) {
    fm_shape f;
    memset(&f, 0, sizeof f);
    f.nodes = sh->nodes;
    f.npus_per_node = sh->npus_per_node;
    f.num_ranks = sh->num_ranks;
    f.moe = sh->moe;
    f.rounds = 1;
    f.cores = sh->cores;
    f.data_seed = sh->data_seed;
    f.routing = sh->routing;
    return fm_plan_build(&f, p, err, errlen);
}

/*
 * ll_layout.c - `npurr layout` and the memory estimate of the two
 * low-latency kernels: the row geometry, the windows and every rank's
 * buffers, from the same shape and plan setup builds.
 */
#include "ll.h"

static uint64_t window_bytes(const ll_shape *sh) {
    uint64_t W = (uint64_t)sh->num_ranks, L = (uint64_t)sh->local_experts, T = (uint64_t)sh->tokens;
    uint64_t TK = T * (uint64_t)sh->topk;
    uint64_t combine = TK * sh->cwin_row + TK * LL_STATE_BYTES;
    if (sh->kind == LL_KIND_SINGLE)
        return W * L * T * sh->win_row + W * L * LL_STATE_BYTES + combine;
    uint64_t N = (uint64_t)sh->nodes, P = (uint64_t)sh->npus_per_node;
    return T * sh->struct_bytes + LLL_FLAG_BYTES +                 /* windowOut */
           N * sh->server_bytes + N * LLL_STATE_OFFSET +           /* windowIn */
           P * LLL_IPC_FLAG_BYTES + L * W * UB_ALIGN + L * W * sh->ipc_seg +   /* IPC */
           (P + N * (LLL_REDUCE_CORES + 1)) * LLL_IPC_FLAG_BYTES * T + W * TK * sh->row_bytes +
           N * TK * sh->row_bytes * 2 + N * LLL_STATE_OFFSET;      /* the combine's */
}

static int layout(const kernel_opts *o, int kind, const npurr_topology *topo, FILE *out,
                  char *err, size_t errlen) {
    ll_shape sh;
    if (ll_shape_from_topology(o, kind, topo, &sh, err, errlen)) return -1;
    fm_plan p;
    if (ll_plan_build(&sh, &p, err, errlen)) return -1;
    int W = sh.num_ranks, T = sh.tokens;
    fprintf(out, "%s, %d node(s) x %d NPUs = %d ranks, %d AIV per rank\n",
            kind == LL_KIND_SINGLE ? "ll-single-dispatch-combine (MoeDistributeDispatchV2Single)"
                                   : "ll-layered-dispatch-combine (MoeDistributeDispatchV2Layered)",
            sh.nodes, sh.npus_per_node, W, sh.cores);
    fprintf(out, "BS %d, H %d, topk %d, experts %d (%d per rank), routing %s, dtype %s\n", T,
            sh.hidden, sh.topk, sh.experts, sh.local_experts, sh.routing.text,
            sh.dtype == LL_INT8 ? "int8 (one scale per row)" : "bf16");
    if (kind == LL_KIND_SINGLE)
        fprintf(out,
                "dispatched row: %u B of values + 32 B scale + %u B (rank, token, k) = %u B moved, "
                "%u B apart in the window (slot per source and local expert, %d rows)\n",
                sh.xrow_bytes, LL_IDX_INFO * 4u, sh.move_bytes, sh.win_row, T);
    else
        fprintf(out,
                "token struct: 32 B flag + %u B values + %u B top-k ids + 32 B scale = %u B; a "
                "server block %llu B; an IPC segment (expert, source) %llu B\n",
                sh.xrow_bytes, sh.sc_at - sh.exp_at, sh.struct_bytes,
                (unsigned long long)sh.server_bytes, (unsigned long long)sh.ipc_seg);
    fprintf(out, "combined row %u B, %u B apart in the combine window\n", sh.row_bytes,
            sh.cwin_row);
    fprintf(out, "%-5s %10s %14s %14s\n", "rank", "recv_rows", "expand_x", "windows");
    for (int r = 0; r < W; r++) {
        uint64_t n = (uint64_t)p.round[0].recv_rows[r];
        fprintf(out, "%-5d %10llu %14llu %14llu\n", r, (unsigned long long)n,
                (unsigned long long)(n * sh.xrow_bytes), (unsigned long long)window_bytes(&sh));
    }
    fprintf(out, "UB per core: %u B of %u\n", ll_ub_bytes(&sh), UB_BYTES);
    fm_plan_free(&p);
    return 0;
}

int ll_single_layout(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
                     size_t errlen) {
    return layout(o, LL_KIND_SINGLE, topo, out, err, errlen);
}

int ll_layered_layout(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
                      size_t errlen) {
    return layout(o, LL_KIND_LAYERED, topo, out, err, errlen);
}

/* Windows are sized for the worst case but only the rows written are
 * backed: count what is written (every slot's row, moved twice: window and
 * expand_x; the combine's rows likewise), x, and the plan on the host. */
static int estimate(const kernel_opts *o, int kind, const npurr_topology *topo,
                    kernel_estimate *est, char *err, size_t errlen) {
    ll_shape sh;
    if (ll_shape_from_topology(o, kind, topo, &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, T = (uint64_t)sh.tokens, K = (uint64_t)sh.topk;
    uint64_t rows = T * K, moved = kind == LL_KIND_SINGLE ? sh.win_row : sh.struct_bytes;
    est->gm_bytes = R * (2 * T * sh.row_bytes + rows * (2 * moved + 3 * (uint64_t)sh.cwin_row));
    est->host_bytes = R * rows * KIT_PLAN_BYTES_PER_SLOT;
    snprintf(est->driver, sizeof est->driver, "--tokens %d --hidden %d --topk %d on %d ranks",
             sh.tokens, sh.hidden, sh.topk, sh.num_ranks);
    return 0;
}

int ll_single_estimate(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est,
                       char *err, size_t errlen) {
    return estimate(o, LL_KIND_SINGLE, topo, est, err, errlen);
}

int ll_layered_estimate(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est,
                        char *err, size_t errlen) {
    return estimate(o, LL_KIND_LAYERED, topo, est, err, errlen);
}

/*
 * fullmesh_layout.c - `npurr layout -k fullmesh-dispatch-combine`: the
 * window layout, the dispatched row (bf16, or INT8 with its scales) and
 * every buffer's size per rank for the given options,
 * from the same shape and plan setup builds (received rows depend on the
 * routing, so they are those of the run these options would record).
 */
#include "fullmesh.h"

int fm_layout(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
              size_t errlen) {
    fm_shape sh;
    if (fm_shape_from_topology(o, topo, &sh, err, errlen)) return -1;
    fm_plan p;
    if (fm_plan_build(&sh, &p, err, errlen)) return -1;
    int W = sh.num_ranks, L = sh.local_experts, T = sh.tokens, K = sh.topk;
    int int8 = sh.dtype == FM_INT8;
    uint64_t rb = sh.row_bytes, sb = (uint64_t)sh.hidden / FM_QUANT_BLOCK * 4;
    uint64_t xb = int8 ? (uint64_t)sh.hidden : rb;   /* an expand_x row */
    fprintf(out, "fullmesh-dispatch-combine (seed 002), %d node(s) x %d NPUs = %d ranks, %d AIV per rank\n",
            sh.nodes, sh.npus_per_node, W, sh.cores);
    fprintf(out,
            "BS %d, H %d (%llu B rows), topk %d, experts %d (%d per rank), routing %s, %d round(s)\n",
            T, sh.hidden, (unsigned long long)rb, K, sh.experts, L, sh.routing.text, sh.rounds);
    if (int8)
        fprintf(out,
                "dtype int8: a dispatched row is %llu B (%d int8 + %d float scales, one per %d "
                "elements, 32 B aligned), a combined row %llu B (bf16)\n",
                (unsigned long long)sh.win_row_bytes, sh.hidden, sh.hidden / FM_QUANT_BLOCK,
                FM_QUANT_BLOCK, (unsigned long long)rb);
    else
        fprintf(out, "dtype bf16: dispatched and combined rows %llu B\n", (unsigned long long)rb);
    fprintf(out,
            "window: rankSizeOnWin %llu B = count row %u B + up to %d tokens + FLAG2 %u B; "
            "block %llu B (W windows + %u B ctrl: bufferChosen, EP op count); WindowsIn and "
            "WindowsOut 2 blocks each\n",
            (unsigned long long)sh.rank_size_on_win, FM_STATUS_ROW_BYTES,
            T * (K < L ? K : L), FM_FLAG_BYTES, (unsigned long long)sh.block_stride, FM_CTRL_BYTES);
    if (int8)
        fprintf(out,
                "  (the combine's %d bf16 rows, %llu B, size it: the dispatch's int8 rows need "
                "%llu B)\n",
                T * (K < L ? K : L), (unsigned long long)((uint64_t)T * (uint64_t)(K < L ? K : L) * rb),
                (unsigned long long)(FM_STATUS_ROW_BYTES +
                                     (uint64_t)T * (uint64_t)(K < L ? K : L) * sh.win_row_bytes));
    fprintf(out, "%-5s %-6s %10s %14s", "rank", "round", "recv_rows", "expand_x");
    if (int8) fprintf(out, " %14s", "dynamic_scales");
    fprintf(out, " %12s %12s\n", "x", "windows");
    for (int r = 0; r < W; r++)
        for (int round = 0; round < sh.rounds; round++) {
            uint64_t n = (uint64_t)p.round[round].recv_rows[r];
            fprintf(out, "%-5d %-6d %10llu %14llu", r, round, (unsigned long long)n,
                    (unsigned long long)(n * xb));
            if (int8) fprintf(out, " %14llu", (unsigned long long)(n * sb));
            fprintf(out, " %12llu %12llu\n", (unsigned long long)T * rb,
                    (unsigned long long)(4 * sh.block_stride));
        }
    fprintf(out, "UB per core: %u B of %u\n", fm_ub_bytes(&sh), UB_BYTES);
    fm_plan_free(&p);
    return 0;
}

/* The memory estimate (kernels.h, the descriptor's estimate hook): the big
 * terms of the formulas above over every rank. */
int fm_estimate(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est, char *err,
                size_t errlen) {
    fm_shape sh;
    int payload_full = topo->payload_full;
    if (fm_shape_from_topology(o, topo, &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, T = (uint64_t)sh.tokens, K = (uint64_t)sh.topk;
    uint64_t row = sh.row_bytes;
    /* x and the combined output per round, the double-buffered windows */
    est->gm_bytes = R * ((uint64_t)sh.rounds * (payload_full ? 2 : 1) * T * row +
                         2 * sh.block_stride);
    /* INT8 rows are computed, so bytes even with payload references: at
     * most every token-expert pair's int8 values and scales in expand_x */
    if (sh.dtype == FM_INT8)
        est->gm_bytes += R * (uint64_t)sh.rounds * T * K *
                         dev_quant_int8_bytes((uint32_t)sh.hidden, FM_QUANT_BLOCK);
    est->host_bytes = (uint64_t)sh.rounds * R * T * K * KIT_PLAN_BYTES_PER_SLOT;
    snprintf(est->driver, sizeof est->driver,
             "--tokens %d --hidden %d --topk %d --rounds %d on %d ranks", sh.tokens, sh.hidden,
             sh.topk, sh.rounds, sh.num_ranks);
    return 0;
}

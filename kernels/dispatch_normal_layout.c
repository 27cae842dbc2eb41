/*
 * dispatch_normal_layout.c - `npurr layout -k dispatch-normal` and the
 * memory estimate `record` checks before it builds anything.
 *
 * The rows a rank receives (expandX, expandIdx) come from the same plan
 * setup builds; the share window and the status area follow A2's layout
 * (cam_moe_dispatch_normal.h at 3a90dfa1): T * K rows at the 512 B aligned
 * hOutGMAlignSize stride, a 32 B status per (local expert, source rank).
 */
#include "dispatch_normal.h"

/* --nodes 2 (DispatchNormalA2): the windows, the notify's tables, the
 * outputs. */
static void layout_a2l(const combine_plan *p, FILE *out) {
    const combine_shape *sh = &p->sh;
    dnl_geometry g = dispatch_normal_a2l_geometry(sh);
    int R = sh->num_ranks, N = sh->nodes;
    uint64_t T = (uint64_t)sh->tokens, K = (uint64_t)sh->topk, E = (uint64_t)sh->experts;
    fprintf(out, "dispatch-normal (A2 DispatchNormalA2, layered), %d nodes x %d NPUs\n", N,
            R / N);
    fprintf(out,
            "tokens %d per rank, hidden %d (%u B rows, %u B token structs, %llu B server "
            "blocks), topk %d, experts %d (%d per rank), routing %s, data seed %llu\n",
            sh->tokens, sh->hidden, g.row_bytes, g.struct_bytes,
            (unsigned long long)g.block_bytes, sh->topk, sh->experts, sh->local_experts,
            sh->routing.text, (unsigned long long)sh->data_seed);
    fprintf(out, "%-5s %10s %12s %12s %12s %12s %12s %12s\n", "rank", "recv_rows", "x",
            "window_in", "window_out", "expand_x", "scales", "tables");
    uint64_t sum = 0;
    for (int r = 0; r < R; r++) {
        uint64_t rows = (uint64_t)p->x_rows[r];
        uint64_t tables = T * K * 8 + T * (uint64_t)N * 4 + (uint64_t)N * 4 + E * (uint64_t)R * 4 +
                          2 * (uint64_t)sh->local_experts * (uint64_t)R * T * 4 +
                          (uint64_t)N * 2 * sizeof(batch_write_task) + g.ipc_bytes;
        uint64_t sizes[] = {T * g.row_bytes, g.win_in_bytes, g.win_out_bytes,
                            rows * g.row_bytes, rows * 4, tables};
        sum += combine_normal_layout_row(out, r, p->x_rows[r], sizes, 6);
    }
    combine_normal_layout_total(out, sum, dispatch_normal_a2l_ub_bytes(sh),
                                "the %u B tBuf, the share of tokenServerIdx, the tables",
                                DNL_TBUF_BYTES);
    fprintf(out, "cores per rank: %d AIV; each copies its share of the %d tokens into the "
            "server blocks, core 0 posts %d BatchWrite items, then all read their share of "
            "each (source, local expert) segment from the local ranks' windows\n",
            sh->cores, sh->tokens, 2 * N);
}

int dispatch_normal_layout(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
                           size_t errlen) {
    combine_plan p;
    if (dispatch_normal_plan_from_topology(o, topo, &p, err, errlen)) return -1;
    if (p.sh.nodes > 1) {
        layout_a2l(&p, out);
        combine_plan_free(&p);
        return 0;
    }
    const combine_shape sh = p.sh;
    dnormal_geometry g = dispatch_normal_geometry(sh.hidden);
    int R = sh.num_ranks, T = sh.tokens, K = sh.topk;
    uint64_t slots = (uint64_t)T * (uint64_t)K, E = (uint64_t)sh.experts;
    fprintf(out, "dispatch-normal (A2 CamMoeDispatchNormal), 1 node x %d NPUs\n", R);
    fprintf(out,
            "tokens %d per rank, hidden %d (%u B rows, %u B with the triple, %u B window "
            "stride), topk %d, experts %d (%d per rank), routing %s, data seed %llu\n",
            T, sh.hidden, g.row_bytes, g.share_bytes, g.window_stride, K, sh.experts,
            sh.local_experts, sh.routing.text, (unsigned long long)sh.data_seed);
    fprintf(out, "%-5s %10s %12s %12s %12s %12s %12s %12s\n", "rank", "recv_rows", "x", "window",
            "state", "expand_x", "expand_idx", "tables");
    uint64_t sum = 0;
    for (int r = 0; r < R; r++) {
        uint64_t x = (uint64_t)T * g.row_bytes, window = slots * g.window_stride;
        uint64_t state = E * DNORMAL_STATE_BYTES;
        uint64_t ex = (uint64_t)p.x_rows[r] * g.row_bytes;
        uint64_t ei = (uint64_t)p.x_rows[r] * DNORMAL_IDX_LEN * 4;
        uint64_t tables = slots * 4 * 2 + E * 4 * 3 + (uint64_t)sh.cores * DNORMAL_DATA_STATE_STRIDE;
        uint64_t sizes[] = {x, window, state, ex, ei, tables};
        sum += combine_normal_layout_row(out, r, p.x_rows[r], sizes, 6);
    }
    combine_normal_layout_total(out, sum, dispatch_normal_ub_bytes(&sh),
                                "two rows with their triple, sendOffset, recvOffset and "
                                "recvCount, %u slots of expertIds and sendTokenIdx, the statuses",
                                DNORMAL_IDS_ROWS);
    fprintf(out, "cores per rank: %d AIV, each copies its share of the %llu slots into the "
            "rank's window, then reads its share of the %llu (expert, rank) segments from the "
            "windows\n", sh.cores, (unsigned long long)slots, (unsigned long long)E);
    combine_plan_free(&p);
    return 0;
}

int dispatch_normal_estimate(const kernel_opts *o, const npurr_topology *topo,
                             kernel_estimate *est, char *err, size_t errlen) {
    combine_shape sh;
    int payload_full = topo->payload_full;
    if (dispatch_normal_shape_from_topology(o, topo, &sh, err, errlen)) return -1;
    dnormal_geometry g = dispatch_normal_geometry(sh.hidden);
    uint64_t R = (uint64_t)sh.num_ranks, T = (uint64_t)sh.tokens, K = (uint64_t)sh.topk;
    uint64_t E = (uint64_t)sh.experts;
    /* Moved rows (x, the windows, expandX) are references unless payload is
     * full; the triples are scalar stores, so every window row holds one
     * literal block; ids, token indices, expandIdx and the tables are per
     * slot or per expert. */
    uint64_t per_slot = 4 + 4 + DNORMAL_IDX_LEN * 4 + UB_ALIGN;
    if (sh.nodes > 1) {
        /* --nodes 2: per slot ids, weights, a weight out and the two offset
         * entries; per token its server indices; each struct written to a
         * window holds its ids and weights as bytes (a block each). */
        dnl_geometry dg = dispatch_normal_a2l_geometry(&sh);
        uint64_t N = (uint64_t)sh.nodes;
        est->gm_bytes = R * (T * K * (4 + 4 + 4 + 8) + T * N * 4 + E * R * 4 +
                             3 * N * T * UB_ALIGN + dg.clean_bytes + dg.ipc_bytes);
        if (payload_full)
            est->gm_bytes += R * (T * g.row_bytes + 3 * N * T * dg.struct_bytes +
                                  T * K * g.row_bytes);
    } else {
        est->gm_bytes = R * (T * K * per_slot + E * (DNORMAL_STATE_BYTES + 12) +
                             (uint64_t)sh.cores * DNORMAL_DATA_STATE_STRIDE);
        if (payload_full)
            est->gm_bytes += R * (T * g.row_bytes + T * K * (g.window_stride + g.row_bytes));
    }
    est->host_bytes = R * T * K * (KIT_PLAN_BYTES_PER_SLOT + COMBINE_NORMAL_SRC_INFO_LEN * 4) +
                      R * E * 4;
    snprintf(est->driver, sizeof est->driver, "--tokens %d --hidden %d --topk %d on %d ranks",
             sh.tokens, sh.hidden, sh.topk, sh.num_ranks);
    return 0;
}

/*
 * cnl_layout.c - `npurr layout -k combine-normal-layered` and its memory
 * estimate, from the shape and plan setup builds.
 */
#include "cnl.h"

int cnl_layout(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
               size_t errlen) {
    combine_shape sh;
    combine_plan p;
    if (cnl_shape_from_topology(o, topo, &sh, NULL, err, errlen) ||
        combine_plan_build(&sh, &p, err, errlen))
        return -1;
    int W = sh.num_ranks, N = sh.nodes, T = sh.tokens;
    uint64_t rb = sh.row_bytes, slice = (uint64_t)T * (uint64_t)sh.topk * (rb + UB_ALIGN);
    uint64_t block = (uint64_t)T * rb;
    fprintf(out, "combine-normal-layered (MoeDistributeCombineA2 layered), %d nodes x %d NPUs = "
            "%d ranks, %d AIV per rank\n", N, W / N, W, sh.cores);
    fprintf(out, "BS %d (token slots per rank), H %d, topk %d, experts %d (%d per rank), routing %s\n",
            T, sh.hidden, sh.topk, sh.experts, sh.local_experts, sh.routing.text);
    fprintf(out, "IPC: a row and its weight %llu B; a server's slice up to %llu B; windowOut and "
            "windowIn: %d blocks of %d rows (%llu B each), sent whole to the other server\n",
            (unsigned long long)(rb + UB_ALIGN), (unsigned long long)slice, N, T,
            (unsigned long long)block);
    uint64_t sum = 0;
    for (int r = 0; r < W; r++) {
        uint64_t sizes[3] = {(uint64_t)p.x_rows[r] * rb, (uint64_t)N * slice, 2 * (uint64_t)N * block};
        sum += combine_normal_layout_row(out, r, p.x_rows[r], sizes, 3);
    }
    combine_normal_layout_total(out, sum, cnl_ub_bytes(&sh), "the [E][W] counts, two rows, three "
                                "f32 rows");
    combine_plan_free(&p);
    return 0;
}

/* Written bytes: expandX, every row again in the IPC slices, the blocks
 * (T rows per server, both windows) and the output; the notify's tables. */
int cnl_estimate(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est,
                 char *err, size_t errlen) {
    combine_shape sh;
    if (cnl_shape_from_topology(o, topo, &sh, NULL, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, T = (uint64_t)sh.tokens, K = (uint64_t)sh.topk;
    uint64_t N = (uint64_t)sh.nodes, rb = sh.row_bytes, PL = R / N * (uint64_t)sh.local_experts;
    est->gm_bytes = R * (T * K * (2 * rb + 4) + (2 * N + 1) * T * rb + N * T * PL * 4);
    est->host_bytes = R * T * K * KIT_PLAN_BYTES_PER_SLOT + R * N * T * PL * 4;
    snprintf(est->driver, sizeof est->driver, "--tokens %d --hidden %d --topk %d --experts %d on "
             "%d ranks", sh.tokens, sh.hidden, sh.topk, sh.experts, sh.num_ranks);
    return 0;
}

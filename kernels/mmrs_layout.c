/*
 * mmrs_layout.c - `npurr layout -k matmul-reduce-scatter`: the schedule
 * (blocks, rounds, stages) and every buffer's size per rank for the given
 * options, from the same shape setup builds.
 */
#include "mmrs.h"

int mmrs_layout(const kernel_opts *o, const npurr_topology *topo, FILE *out, char *err,
                size_t errlen) {
    mmrs_shape sh;
    if (mmrs_shape_from_topology(o, topo, &sh, err, errlen)) return -1;
    mmrs_args a;
    mmrs_args_from_shape(&sh, &a);
    int R = sh.num_ranks;
    fprintf(out, "matmul-reduce-scatter (seed 004), 1 node x %d NPUs, %d AIC + %d AIV per rank\n", R,
            sh.cores, 2 * sh.cores);
    fprintf(out, "problem M %u x N %u x K %u (M/R = %u rows of D per rank), L1 tile %u x %u x %u\n",
            sh.m, sh.n, sh.k, mmrs_in_rank_m(&a), sh.block_m, sh.block_n, sh.block_k);
    fprintf(out,
            "coreLoops %u (%u x %u blocks per rank x %d ranks), blockPerComm %u "
            "(blockPerCommInRank %u), commLoops %u, WORKSPACE_STAGES %u, comm block %u rows\n",
            mmrs_core_loops(&a), mmrs_loops_m(&a), mmrs_loops_n(&a), R, sh.block_per_comm,
            sh.block_per_comm_in_rank, mmrs_comm_loops(&a), sh.stages, sh.comm_block_rows);
    fprintf(out, "%-5s %12s %12s %12s %14s\n", "rank", "A", "B", "D", "symmetric");
    for (int r = 0; r < R; r++)
        fprintf(out, "%-5d %12llu %12llu %12llu %14llu\n", r,
                (unsigned long long)sh.m * sh.k * 2, (unsigned long long)sh.k * sh.n * 2,
                (unsigned long long)mmrs_in_rank_m(&a) * sh.n * 4,
                (unsigned long long)sh.workspace_bytes);
    fprintf(out, "L1 per AIC: %u B, L0A %u B, L0B %u B, L0C %u B; UB per AIV: %u B\n",
            2 * (sh.block_m * sh.block_k * 2 + sh.block_k * sh.block_n * 2),
            2 * sh.block_m * sh.block_k * 2, 2 * sh.block_k * sh.block_n * 2,
            sh.block_m * sh.block_n * 4, MMRS_UB_STAGES * MMRS_COMM_TILE_BYTES);
    return 0;
}

/* The memory estimate (kernels.h, the descriptor's estimate hook): the big
 * terms of the formulas above over every rank. */
int mmrs_estimate(const kernel_opts *o, const npurr_topology *topo, kernel_estimate *est, char *err,
                  size_t errlen) {
    mmrs_shape sh;
    if (mmrs_shape_from_topology(o, topo, &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, m = sh.m, n = sh.n, kk = sh.k;
    /* fp16 A, B and output, the staged workspace; the check's fp32 reference */
    /* A and B are stored as bytes in both modes: the cube computes on them */
    est->gm_bytes = R * (2 * (m * kk + kk * n + m * n) + sh.workspace_bytes);
    est->host_bytes = 4 * m * n;
    snprintf(est->driver, sizeof est->driver, "--m %u --n %u --k %u on %d ranks", sh.m, sh.n,
             sh.k, sh.num_ranks);
    return 0;
}

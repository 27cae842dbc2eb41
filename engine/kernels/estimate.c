/*
 * estimate.c - how much memory a kernel's options imply, computed from the
 * options alone: nothing is allocated and no routing is generated.
 *
 * `record` and `layout` call kernel_estimate_memory before they build an
 * engine or a plan, so a shape that cannot fit (a million tokens on a
 * laptop, 65536^3 matmuls) is refused in milliseconds with the option that
 * drives it, instead of running for minutes or being killed. Each kernel
 * validates its options against the topology first (its own
 * *_shape_from_opts, so --nodes 1024 on a one-node kernel is refused here,
 * before the engine exists), then sums the big terms of its layout
 * formulas (the same ones `npurr layout` prints): inputs, outputs, receive
 * buffers, rings and windows over every rank, plus the host-side routing
 * plan and the engine's own per-rank state. It is a lower bound of what a
 * run holds, meant to refuse the impossible, not to budget the possible.
 *
 * This is the one function the CLI's memory check reads. With payload
 * references (the default) the rows that are only moved cost no pages:
 * GM counts what is written literally (tables, outputs computed by vector or
 * cube, workspaces), and a ring record that mixes a payload row with
 * metadata costs the page its metadata touches. `npurr layout` prints it
 * as the expected resident memory.
 */
#include "kernels.h"

#include <stdio.h>
#include <string.h>

#include "combine.h"
#include "dispatch.h"
#include "fullmesh.h"
#include "mmrs.h"

/* The engine's own state per rank (cores, coroutine stacks, queues),
 * measured with `record -k matmul-reduce-scatter --nodes 64 --no-trace`:
 * 512 ranks hold about 160 MB before the kernel allocates anything. */
#define ENGINE_BYTES_PER_RANK (320ull << 10)
/* The routing plan on the host: ids, weights, expand index per (t, k). */
#define PLAN_BYTES_PER_SLOT 16ull

#define PAGE 4096ull
static uint64_t page_of(uint64_t record) { return record < PAGE ? record : PAGE; }

static int num_aiv(int chip) { return engine_chip_get((engine_chip)chip)->aiv; }
static int num_aic(int chip) { return engine_chip_get((engine_chip)chip)->aic; }

static int est_combine(const kernel_desc *k, const kernel_opts *o, int nodes, int npus,
                       int chip, int payload, kernel_estimate *est, char *err, size_t errlen) {
    combine_shape sh;
    int scheme = strstr(k->name, "inplace") ? COMBINE_SCHEME_INPLACE : COMBINE_SCHEME_GATHER;
    if (combine_shape_from_opts(o, scheme, nodes, npus, num_aiv(chip), &sh, err, errlen))
        return -1;
    uint64_t R = (uint64_t)sh.num_ranks, T = (uint64_t)sh.tokens, K = (uint64_t)sh.topk;
    uint64_t row = sh.row_bytes;
    /* expert-major x (T*K rows on average per rank, twice for the in-place
     * reorder), the combined output, one ring per peer */
    est->gm_bytes = payload == PAYLOAD_FULL ? R * (2 * T * K * row + T * row + R * sh.ring_bytes)
                                            : R * (T * row + R * sh.ring_bytes);
    est->host_bytes = R * T * K * PLAN_BYTES_PER_SLOT;
    snprintf(est->driver, sizeof est->driver,
             "--tokens %d --hidden %d --topk %d on %d ranks", sh.tokens, sh.hidden, sh.topk,
             sh.num_ranks);
    return 0;
}

static int est_dispatch(const kernel_desc *k, const kernel_opts *o, int nodes, int npus,
                        int chip, int payload, kernel_estimate *est, char *err, size_t errlen) {
    (void)k;
    dispatch_shape sh;
    if (dispatch_shape_from_opts(o, nodes, npus, num_aiv(chip), &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, K = (uint64_t)sh.topk, T = 0;
    for (int r = 0; r < sh.num_ranks; r++) T += (uint64_t)sh.tokens[r];
    uint64_t row = sh.x_row_bytes + (uint64_t)sh.num_scales * 4;
    uint64_t fan = K < R ? K : R;   /* ranks a token reaches at most */
    uint64_t C = (uint64_t)sh.channels, N = (uint64_t)sh.nodes, P = (uint64_t)sh.npus;
    uint64_t S = sh.token_bytes;
    uint64_t rings = 2 * C * N * (uint64_t)sh.rdma_ring_tokens * S +
                     C * P * (uint64_t)sh.hccs_ring_tokens * S;
    /* inputs, top-k, received rows of every dispatch, rings of every rank */
    /* Rings are backed only where written: at least a page per record
     * (its metadata). Full mode also stores every row of x and recv_x. */
    uint64_t ring_pages = R * (rings / S) * page_of(S);
    if (payload == PAYLOAD_FULL)
        est->gm_bytes = T * (row + K * 8) + (uint64_t)sh.dispatches * T * fan * (row + K * 8 + 16) +
                        ring_pages;
    else   /* rows are references */
        est->gm_bytes = T * K * 8 + (uint64_t)sh.dispatches * T * fan * (K * 8 + 16) + ring_pages;
    est->host_bytes = T * K * PLAN_BYTES_PER_SLOT;
    snprintf(est->driver, sizeof est->driver,
             "--tokens %d --hidden %d --topk %d on %d ranks", sh.max_tokens, sh.hidden, sh.topk,
             sh.num_ranks);
    return 0;
}

static int est_fullmesh(const kernel_desc *k, const kernel_opts *o, int nodes, int npus,
                        int chip, int payload, kernel_estimate *est, char *err, size_t errlen) {
    (void)k;
    fm_shape sh;
    if (fm_shape_from_opts(o, nodes, npus, num_aiv(chip), &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, T = (uint64_t)sh.tokens, K = (uint64_t)sh.topk;
    uint64_t row = sh.row_bytes;
    /* x and the combined output per round, the double-buffered windows */
    est->gm_bytes = R * ((uint64_t)sh.rounds * (payload == PAYLOAD_FULL ? 2 : 1) * T * row +
                         2 * sh.block_stride);
    est->host_bytes = (uint64_t)sh.rounds * R * T * K * PLAN_BYTES_PER_SLOT;
    snprintf(est->driver, sizeof est->driver,
             "--tokens %d --hidden %d --topk %d --rounds %d on %d ranks", sh.tokens, sh.hidden,
             sh.topk, sh.rounds, sh.num_ranks);
    return 0;
}

static int est_mmrs(const kernel_desc *k, const kernel_opts *o, int nodes, int npus, int chip,
                    int payload, kernel_estimate *est, char *err, size_t errlen) {
    (void)k;
    mmrs_shape sh;
    if (mmrs_shape_from_opts(o, nodes, npus, num_aic(chip), &sh, err, errlen)) return -1;
    uint64_t R = (uint64_t)sh.num_ranks, m = sh.m, n = sh.n, kk = sh.k;
    /* fp16 A, B and output, the staged workspace; the check's fp32 reference */
    /* A and B are stored as bytes in both modes: the cube computes on them */
    (void)payload;
    est->gm_bytes = R * (2 * (m * kk + kk * n + m * n) + sh.workspace_bytes);
    est->host_bytes = 4 * m * n;
    snprintf(est->driver, sizeof est->driver, "--m %u --n %u --k %u on %d ranks", sh.m, sh.n,
             sh.k, sh.num_ranks);
    return 0;
}

typedef int (*estimator)(const kernel_desc *, const kernel_opts *, int, int, int, int,
                         kernel_estimate *, char *, size_t);

extern const kernel_desc kernel_combine_sender, kernel_combine_sender_inplace,
    kernel_dispatch_layered, kernel_matmul_reduce_scatter, kernel_fullmesh_dispatch_combine;

static const struct {
    const kernel_desc *k;
    estimator fn;
} estimators[] = {
    {&kernel_combine_sender, est_combine},
    {&kernel_combine_sender_inplace, est_combine},
    {&kernel_dispatch_layered, est_dispatch},
    {&kernel_matmul_reduce_scatter, est_mmrs},
    {&kernel_fullmesh_dispatch_combine, est_fullmesh},
};

int kernel_estimate_memory(const kernel_desc *k, const kernel_opts *o, int nodes,
                           int npus_per_node, int chip, int payload, kernel_estimate *est,
                           char *err, size_t errlen) {
    memset(est, 0, sizeof *est);
    for (size_t i = 0; i < sizeof estimators / sizeof estimators[0]; i++) {
        if (estimators[i].k != k) continue;
        if (estimators[i].fn(k, o, nodes, npus_per_node, chip, payload, est, err, errlen))
            return -1;
        est->engine_bytes = (uint64_t)nodes * (uint64_t)npus_per_node * ENGINE_BYTES_PER_RANK;
        est->total_bytes = est->gm_bytes + est->host_bytes + est->engine_bytes;
        return 0;
    }
    /* A kernel without an estimator: only the engine's own state is known. */
    est->engine_bytes = (uint64_t)nodes * (uint64_t)npus_per_node * ENGINE_BYTES_PER_RANK;
    est->total_bytes = est->engine_bytes;
    snprintf(est->driver, sizeof est->driver, "--nodes %d --npus-per-node %d", nodes,
             npus_per_node);
    return 0;
}

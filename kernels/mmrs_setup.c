/*
 * mmrs_setup.c - host side of a matmul-reduce-scatter run: inputs, buffers,
 * the MIX launch, and the kernel descriptor the CLI lists.
 *
 * Per rank (engine_gm_alloc): A [M, K] fp16, B [K, N] fp16 (the same values
 * on every rank, as the brief's sum over ranks of A_r x B), D [M/R, N] f32
 * followed by a guard. Symmetric (engine_sym_alloc): the workspace
 * [WORKSPACE_STAGES * blockPerComm * block_m, block_n] f32 plus a guard, so
 * rank r's partial tiles are at the same offset on r as seen from any peer.
 * One MIX launch of `cores` groups per rank.
 */
#include "mmrs.h"

#include "kit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Values in +-[1/16, 1) with a random 10-bit mantissa, one in eight zero:
 * full-precision fp16 so the cube's rounding is exercised, small enough
 * that sums over K never approach fp16 or f32 limits. */
uint16_t mmrs_input(uint64_t seed, int which, int rank, uint64_t index) {
    uint64_t h = kit_mix64(seed ^ kit_mix64(((uint64_t)(uint32_t)which << 56) ^
                                    ((uint64_t)(uint32_t)rank << 44) ^ index));
    if ((h & 7) == 0) return 0;
    uint16_t sign = (uint16_t)(((h >> 3) & 1) << 15);
    uint16_t exp = (uint16_t)(11 + ((h >> 4) & 3));
    uint16_t man = (uint16_t)((h >> 8) & 0x3ff);
    return (uint16_t)(sign | (exp << 10) | man);
}

/* A [m, k] of rank r (which 0) or B [k, n] (which 1): element i is
 * mmrs_input(seed, which, rank, i). Written as bytes, not as payload
 * references: the cube reads every tile of A and B again for each output
 * tile it computes, so references would be generated again at every load
 * (measured: 1.8x the host time of stored bytes at m 2048 n 1024 k 512). */
static int fill_matrix(engine *e, gm_t at, uint32_t rows, uint32_t cols, uint64_t seed,
                       int which, int rank, char *err, size_t errlen) {
    uint64_t n = (uint64_t)rows * cols;
    uint16_t *h = npurr_gm_host(e, at, n * 2);
    if (!h) {
        snprintf(err, errlen, "mmrs setup: no host view of %s on rank %d", which ? "B" : "A", rank);
        return -1;
    }
    for (uint64_t i = 0; i < n; i++) h[i] = mmrs_input(seed, which, rank, i);
    return 0;
}

float mmrs_f16_to_float(uint16_t h) {
    int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float v;
    if (exp == 0) v = ldexpf((float)man, -24);   /* subnormal */
    else if (exp == 31) v = man ? NAN : INFINITY;
    else v = ldexpf(1.0f + (float)man / 1024.0f, exp - 15);
    return (h & 0x8000) ? -v : v;
}

static void mmrs_destroy(void *state) { free(state); }

static int guard(engine *e, gm_t at, const char *what, int rank, char *err, size_t errlen) {
    uint8_t *h = npurr_gm_host(e, at, MMRS_GUARD_BYTES);
    if (!h) {
        snprintf(err, errlen, "mmrs setup: no host view of the guard after %s on rank %d", what, rank);
        return -1;
    }
    memset(h, MMRS_GUARD_BYTE, MMRS_GUARD_BYTES);
    return 0;
}

static int mmrs_setup(engine *e, const kernel_opts *o, void **state, char *err, size_t errlen) {
    mmrs_state *st = kit_state_new(sizeof *st, "mmrs setup", state, err, errlen);
    if (!st) return -1;
    mmrs_shape *sh = &st->sh;
    npurr_topology topo;
    npurr_topology_of(e, &topo);
    if (mmrs_shape_from_topology(o, &topo, sh, err, errlen)) {
        free(st);
        return -1;
    }
    mmrs_args *a = &st->args;
    mmrs_args_from_shape(sh, a);
    int R = sh->num_ranks;
    uint64_t a_bytes = (uint64_t)sh->m * sh->k * 2, b_bytes = (uint64_t)sh->k * sh->n * 2;
    uint64_t d_bytes = (uint64_t)(sh->m / (uint32_t)R) * sh->n * 4;
    for (int r = 0; r < R; r++) {
        if (npurr_gm_alloc(e, r, a_bytes, "mmrs.a", &a->a[r], err, errlen) != 0 ||
            npurr_gm_alloc(e, r, b_bytes, "mmrs.b", &a->b[r], err, errlen) != 0 ||
            npurr_gm_alloc(e, r, d_bytes + MMRS_GUARD_BYTES, "mmrs.d", &a->d[r], err, errlen) !=
                0 ||
            guard(e, gm_add(a->d[r], (int64_t)d_bytes), "mmrs.d", r, err, errlen)) {
            free(st);
            return -1;
        }
        if (fill_matrix(e, a->a[r], sh->m, sh->k, sh->data_seed, 0, r, err, errlen) ||
            fill_matrix(e, a->b[r], sh->k, sh->n, sh->data_seed, 1, 0, err, errlen)) {
            free(st);
            return -1;
        }
    }
    if (npurr_sym_alloc(e, sh->workspace_bytes + MMRS_GUARD_BYTES, "mmrs.symmetric", &a->symmetric,
                         err, errlen) != 0) {
        free(st);
        return -1;
    }
    for (int r = 0; r < R; r++)
        if (guard(e, gm_add(gm_on_rank(a->symmetric, r), (int64_t)sh->workspace_bytes),
                  "mmrs.symmetric", r, err, errlen)) {
            free(st);
            return -1;
        }
    if (npurr_launch(e, "matmul_reduce_scatter", mmrs_kernel, a, sh->cores, CORE_MIX, err,
                      errlen) != 0) {
        free(st);
        return -1;
    }
    *state = st;
    return 0;
}

static const kernel_phase mmrs_phases[] = {
    {"matmul", {"MmadAIC", NULL}, {NULL}},
    {"reduce-scatter", {"ReduceScatterAIV", "ReduceScatterAIV1", NULL}, {NULL}},
    {NULL, {NULL}, {NULL}},
};

const kernel_desc kernel_matmul_reduce_scatter = {
    .name = "matmul-reduce-scatter",
    .summary = "CATCOC matmul + reduce-scatter (seed 004): AIC BlockMmad into staged symmetric "
               "workspace, AIV atomic-add pull",
    .options = mmrs_options, .setup = mmrs_setup, .check = mmrs_check, .layout = mmrs_layout,
    .destroy = mmrs_destroy, .estimate = mmrs_estimate,
    .phases = mmrs_phases,
};

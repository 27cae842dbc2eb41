/*
 * vector_add.c - a plugin kernel for npurr: z = x + y, float32, over every
 * rank's GM, on --cores vector cores a rank, in tiles staged through UB.
 *
 * The host side (setup, check) calls npurr through the plugin ABI's host
 * table (npurr/plugin.h); the device side is npurr's C device API
 * (npurr/device.h): DataCopy on MTE2/MTE3, the vector add on V, and the
 * SetFlag/WaitFlag pairs that order the three pipes, as on the chip.
 * x is generated, or read from a NumPy file (--x npy:x.npy, or
 * npy:x.{rank}.npy for one file per rank); y is generated. After the run
 * `record --dump z@3=z3.npy` writes rank 3's result as a NumPy array.
 */
#include <stdlib.h>
#include <string.h>

#include "npurr/device.h"
#include "npurr/plugin.h"

/* What every core reads: one rank's tensors are found with GetRank(). */
typedef struct vadd_args {
    int ranks, cores;
    uint32_t n, tile;           /* elements per rank, per tile */
    gm_t x[64], y[64], z[64];   /* per rank */
} vadd_args;

typedef struct vadd_state {
    vadd_args args;
} vadd_state;

/* ---------------------------------------------------------------- device */

static void vadd_kernel(const void *p) {
    const vadd_args *a = p;
    int me = GetRank(), core = GetBlockIdx(), cores = GetBlockNum();
    SetRole("VectorAdd");
    uint32_t tile_bytes = a->tile * 4;
    local_t ux = AllocUB(tile_bytes), uy = AllocUB(tile_bytes), uz = AllocUB(tile_bytes);
    /* tiles are dealt to the cores round-robin */
    uint32_t tiles = (a->n + a->tile - 1) / a->tile;
    int first = 1;
    for (uint32_t t = (uint32_t)core; t < tiles; t += (uint32_t)cores) {
        uint32_t off = t * a->tile;
        uint32_t elems = a->n - off < a->tile ? a->n - off : a->tile;
        uint32_t bytes = (elems * 4 + 31) / 32 * 32;   /* the n % 8 tail is padded in UB */
        if (!first) WaitFlag(V_MTE2, 0);   /* V has read the last tile's x and y */
        DataCopyPadIn(ux, gm_add(a->x[me], off * 4), elems * 4);
        DataCopyPadIn(uy, gm_add(a->y[me], off * 4), elems * 4);
        SetFlag(MTE2_V, 0);
        WaitFlag(MTE2_V, 0);
        if (!first) WaitFlag(MTE3_V, 0);   /* MTE3 has written the last tile's z out */
        VecAdd(uz, ux, uy, DT_FLOAT, bytes / 4);
        SetFlag(V_MTE2, 0);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopyPadOut(gm_add(a->z[me], off * 4), uz, elems * 4);
        SetFlag(MTE3_V, 0);
        first = 0;
    }
    if (!first) {   /* every flag set is waited for before the core ends */
        WaitFlag(V_MTE2, 0);
        WaitFlag(MTE3_V, 0);
    }
}

/* ---------------------------------------------------------------- host */

static const npurr_option vadd_options[] = {
    {"n", "65536", "float32 elements per rank"},
    {"tile", "2048", "elements per UB tile (a multiple of 8)"},
    {"cores", "8", "vector cores per rank"},
    {"x", "random", "random (generated), or npy:PATH of n float32 ({rank} in PATH: one per rank)"},
    {"data-seed", "1", "seed of the generated values"},
    {NULL, NULL, NULL},
};

/* The i-th generated value of a tensor: a float in [-8, 8) from a hash. */
static float value_at(uint64_t seed, int tensor, int rank, uint64_t i) {
    uint64_t z = seed * 0x9e3779b97f4a7c15ull + (uint64_t)tensor * 0xbf58476d1ce4e5b9ull +
                 (uint64_t)rank * 0x94d049bb133111ebull + i;
    z = (z ^ (z >> 31)) * 0xd6e8feb86659fd93ull;
    z ^= z >> 29;
    return (float)(int32_t)(z & 0xffff) / 4096.0f - 8.0f;
}

static int fill(npurr_engine *e, gm_t p, uint32_t n, uint64_t seed, int tensor, int rank,
                char *err, size_t errlen) {
    float *v = npurr_gm_host(e, p, (uint64_t)n * 4);
    if (!v) {
        snprintf(err, errlen, "vector-add: no host view of rank %d's input", rank);
        return -1;
    }
    for (uint32_t i = 0; i < n; i++) v[i] = value_at(seed, tensor, rank, i);
    return 0;
}

static void vadd_destroy(void *state) { free(state); }

static int vadd_setup(npurr_engine *e, const npurr_opts *o, void **state, char *err,
                      size_t errlen) {
    *state = NULL;
    int64_t n, tile, cores, seed;
    const char *x;
    npurr_topology topo;
    npurr_topology_of(e, &topo);
    if (npurr_opt_i64_range(o, "n", 1, 1 << 26, &n, err, errlen) ||
        npurr_opt_i64_range(o, "tile", 8, 16384, &tile, err, errlen) ||
        npurr_opt_i64_range(o, "cores", 1, topo.aiv, &cores, err, errlen) ||
        npurr_opt_i64(o, "data-seed", &seed, err, errlen) || npurr_opt_str(o, "x", &x))
        return -1;
    if (tile % 8) {
        snprintf(err, errlen, "--tile %lld: must be a multiple of 8 (32 B of float32)",
                 (long long)tile);
        return -1;
    }
    if (topo.ranks > 64) {
        snprintf(err, errlen, "vector-add runs on at most 64 ranks (%d here)", topo.ranks);
        return -1;
    }
    vadd_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "vector-add: out of host memory");
        return -1;
    }
    vadd_args *a = &st->args;
    a->ranks = topo.ranks;
    a->cores = (int)cores;
    a->n = (uint32_t)n;
    a->tile = (uint32_t)tile;
    int from_npy = strcmp(x, "random") != 0;
    npurr_tensor t = {NPURR_DT_F32, 1, {(uint64_t)n}};
    for (int r = 0; r < topo.ranks; r++) {
        int failed;
        if (from_npy) {
            npurr_tensor got;
            failed = npurr_gm_from_npy(e, o, "x", r, "x", &a->x[r], &got, err, errlen);
            if (!failed && (got.dtype != NPURR_DT_F32 || got.ndim != 1 || got.shape[0] != (uint64_t)n)) {
                snprintf(err, errlen, "--x: rank %d's array is not %lld float32 values", r,
                         (long long)n);
                failed = 1;
            }
        } else {
            failed = npurr_gm_alloc(e, r, (uint64_t)n * 4, "x", &a->x[r], err, errlen) ||
                     fill(e, a->x[r], (uint32_t)n, (uint64_t)seed, 0, r, err, errlen) ||
                     npurr_name_tensor(e, a->x[r], &t, "x", err, errlen);
        }
        failed = failed || npurr_gm_alloc(e, r, (uint64_t)n * 4, "y", &a->y[r], err, errlen) ||
                 fill(e, a->y[r], (uint32_t)n, (uint64_t)seed, 1, r, err, errlen) ||
                 npurr_name_tensor(e, a->y[r], &t, "y", err, errlen) ||
                 npurr_gm_alloc(e, r, (uint64_t)n * 4, "z", &a->z[r], err, errlen) ||
                 npurr_name_tensor(e, a->z[r], &t, "z", err, errlen);
        if (failed) {
            free(st);
            return -1;
        }
    }
    if (npurr_launch(e, "vector_add", vadd_kernel, a, (int)cores, CORE_AIV, err, errlen)) {
        free(st);
        return -1;
    }
    *state = st;
    return 0;
}

static int vadd_check(npurr_engine *e, void *state, char *msg, size_t msglen) {
    const vadd_args *a = &((vadd_state *)state)->args;
    size_t bytes = (size_t)a->n * 4;
    float *x = malloc(bytes), *y = malloc(bytes), *z = malloc(bytes);
    int rc = 0;
    for (int r = 0; r < a->ranks && !rc; r++) {
        if (!npurr_rank_local(e, r)) continue;
        if (!x || !y || !z || npurr_gm_read(e, a->x[r], x, bytes) ||
            npurr_gm_read(e, a->y[r], y, bytes) || npurr_gm_read(e, a->z[r], z, bytes)) {
            snprintf(msg, msglen, "cannot read rank %d's tensors", r);
            rc = 1;
            break;
        }
        for (uint32_t i = 0; i < a->n; i++)
            if (z[i] != x[i] + y[i]) {
                snprintf(msg, msglen, "rank %d: z[%u] = %g, expected %g + %g = %g", r, i,
                         (double)z[i], (double)x[i], (double)y[i], (double)(x[i] + y[i]));
                rc = 1;
                break;
            }
    }
    free(x);
    free(y);
    free(z);
    return rc;
}

static const npurr_phase vadd_phases[] = {
    {"add", {"VectorAdd", NULL}, {"AddCustom", NULL}},
    {NULL, {NULL}, {NULL}},
};

static const npurr_kernel vector_add = {
    .name = "vector-add",
    .summary = "example plugin: z = x + y (float32) on every rank, staged through UB",
    .options = vadd_options,
    .setup = vadd_setup,
    .check = vadd_check,
    .destroy = vadd_destroy,
    .check_splits = 1,
    .phases = vadd_phases,
};

NPURR_PLUGIN("vector-add-example", &vector_add)

/*
 * mmrs_plan.c - matmul-reduce-scatter options -> a validated shape.
 *
 * Setup, layout and the tests build the same shape from the same options.
 * Every limit that the hardware or the seed's scheme imposes is checked
 * here, with a message naming the option: tile sizes against L0A/L0B/L0C,
 * the 16-element fractal granularity of fp16 cube operands, M against the
 * rank count (each rank ends with M / R rows), one node (the workspace is
 * read over HCCS).
 */
#include "mmrs.h"

#include "kit.h"

#include <string.h>

const kernel_option mmrs_options[] = {
    {"m", "256", "rows of A on every rank; a multiple of the rank count (each keeps M/R rows of D)"},
    {"n", "256", "columns of B and D (multiple of 16)"},
    {"k", "128", "columns of A = rows of B (multiple of 16)"},
    {"block-m", "64", "L1 tile rows (multiple of 16)"},
    {"block-n", "128", "L1 tile columns (multiple of 16)"},
    {"block-k", "128", "L1/L0 tile depth (multiple of 16; clamped to --k)"},
    {"comm-interval", "1", "mmad blocks per AIC between two ReduceScatter rounds"},
    {"stages", "2", "WORKSPACE_STAGES: workspace stages the AIC may run ahead by (1..8)"},
    {"cores", "2", "AIC per rank (MIX block_dim; each brings 2 AIV)"},
    KIT_OPT_DATA_SEED("the A and B values"),
    KIT_OPT_INJECT("no-stage-wait (the AIC overwrites a stage before the AIVs consumed it)"),
    {NULL, NULL, NULL},
};

/* In the order of MMRS_INJECT_*. */
static const char *const mmrs_faults[] = {"none", "no-stage-wait", NULL};

static int get_mult16(const kernel_opts *o, const char *name, int64_t hi, uint32_t *out, char *err,
                      size_t errlen) {
    int64_t v;
    if (kopt_i64_range(o, name, 16, hi, &v, err, errlen)) return -1;
    if (v % 16) {
        snprintf(err, errlen,
                 "--%s %lld: must be a multiple of 16 (fp16 cube operands come in 16-element "
                 "fractals and rows must be 32 B aligned in L1)",
                 name, (long long)v);
        return -1;
    }
    *out = (uint32_t)v;
    return 0;
}

/* The tiles against the cube's buffers: L0A and L0B are ping-ponged (two
 * tiles each), L0C holds one f32 tile. */
static int check_tiles_fit(const mmrs_shape *sh, char *err, size_t errlen) {
    const struct {
        char rows, cols;          /* --block-ROWS x --block-COLS */
        uint32_t r, c, bytes;     /* the tile's sides and bytes per element, both tiles */
        const char *what, *buffer;
        uint32_t have;
    } tiles[] = {
        {'m', 'k', sh->block_m, sh->block_k, 2 * 2, "two fp16 A tiles need", "L0A", L0A_BYTES},
        {'k', 'n', sh->block_k, sh->block_n, 2 * 2, "two fp16 B tiles need", "L0B", L0B_BYTES},
        {'m', 'n', sh->block_m, sh->block_n, 4, "the f32 tile needs", "L0C", L0C_BYTES},
    };
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        uint64_t need = (uint64_t)tiles[i].r * tiles[i].c * tiles[i].bytes;
        if (need <= tiles[i].have) continue;
        snprintf(err, errlen, "--block-%c %u x --block-%c %u: %s %llu B, more than the %u B of %s",
                 tiles[i].rows, tiles[i].r, tiles[i].cols, tiles[i].c, tiles[i].what,
                 (unsigned long long)need, tiles[i].have, tiles[i].buffer);
        return -1;
    }
    /* L1 holds two A and two B tiles: at most L0A's and L0B's bytes, within 512 KiB. */
    return 0;
}

/* How the AIC blocks are grouped into ReduceScatter rounds, and the
 * workspace that stages them. */
static int plan_comm(mmrs_shape *sh, char *err, size_t errlen) {
    int R = sh->num_ranks;
    /* Decision: the seed's blockPerCommInRank = aicoreNum * commInterval / rankSize
     * truncates, and a blockPerComm that is not a multiple of the ranks would
     * send blocks to a rank >= rankSize; we round blockPerComm down to a
     * multiple of the ranks, with at least one block per rank per round. */
    uint64_t per_rank = (uint64_t)sh->cores * sh->comm_interval / (uint64_t)R;
    if (per_rank == 0) per_rank = 1;
    if (per_rank > (1u << 20)) per_rank = 1u << 20;
    sh->block_per_comm_in_rank = (uint32_t)per_rank;
    sh->block_per_comm = (uint32_t)per_rank * (uint32_t)R;
    /* Decision: an AIV comm block must not straddle two mmad blocks (the
     * seed clips it to the mmad block's residue, which only works when the
     * comm block rows divide block_m): 64 rows as the seed, else 32 or 16. */
    sh->comm_block_rows = sh->block_m % 64 == 0 ? 64 : sh->block_m % 32 == 0 ? 32 : 16;
    sh->workspace_bytes = (uint64_t)sh->stages * sh->block_per_comm * sh->block_m * sh->block_n * 4;
    if (sh->workspace_bytes > (1ull << 32)) {
        snprintf(err, errlen,
                 "--stages %u x --cores %d x --comm-interval %u: the workspace would be %llu B "
                 "per rank (over 4 GiB)",
                 sh->stages, sh->cores, sh->comm_interval,
                 (unsigned long long)sh->workspace_bytes);
        return -1;
    }
    return 0;
}

int mmrs_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node, int num_aic,
                         mmrs_shape *sh, char *err, size_t errlen) {
    memset(sh, 0, sizeof *sh);
    if (kit_check_one_node("matmul-reduce-scatter", "reads peers' workspaces over HCCS", nodes,
                           npus_per_node, MMRS_MAX_RANKS, err, errlen))
        return -1;
    int R = npus_per_node;
    sh->num_ranks = R;
    int64_t v;
    if (kopt_i64_range(o, "m", 1, 1 << 20, &v, err, errlen)) return -1;
    if (v % R) {
        snprintf(err, errlen,
                 "--m %lld: must be a multiple of the %d ranks (rank r keeps rows r*M/R.. of D)",
                 (long long)v, R);
        return -1;
    }
    sh->m = (uint32_t)v;
    if (get_mult16(o, "n", 1 << 20, &sh->n, err, errlen) ||
        get_mult16(o, "k", 1 << 20, &sh->k, err, errlen) ||
        get_mult16(o, "block-m", 4096, &sh->block_m, err, errlen) ||
        get_mult16(o, "block-n", 4096, &sh->block_n, err, errlen) ||
        get_mult16(o, "block-k", 4096, &sh->block_k, err, errlen))
        return -1;
    if (sh->block_k > sh->k) sh->block_k = sh->k;
    if (check_tiles_fit(sh, err, errlen)) return -1;
    if (kopt_i64_range(o, "comm-interval", 1, 1 << 16, &v, err, errlen)) return -1;
    sh->comm_interval = (uint32_t)v;
    if (kopt_i64_range(o, "stages", 1, MMRS_MAX_STAGES, &v, err, errlen)) return -1;
    sh->stages = (uint32_t)v;
    if (kopt_i64_range(o, "cores", 1, num_aic, &v, err, errlen)) return -1;
    sh->cores = (int)v;
    if (kit_read_seed(o, &sh->data_seed, err, errlen) ||
        kit_read_inject(o, mmrs_faults, &sh->inject, err, errlen))
        return -1;
    return plan_comm(sh, err, errlen);
}

int mmrs_shape_from_topology(const kernel_opts *o, const npurr_topology *topo, mmrs_shape *sh,
                           char *err, size_t errlen) {
    int aic = kit_cores(topo, CORE_AIC);
    return aic < 0 ? -1
                   : mmrs_shape_from_opts(o, topo->nodes, topo->npus_per_node, aic, sh, err, errlen);
}

void mmrs_args_from_shape(const mmrs_shape *sh, mmrs_args *a) {
    memset(a, 0, sizeof *a);
    a->num_ranks = sh->num_ranks;
    a->m = sh->m;
    a->n = sh->n;
    a->k = sh->k;
    a->block_m = sh->block_m;
    a->block_n = sh->block_n;
    a->block_k = sh->block_k;
    a->stages = sh->stages;
    a->comm_interval = sh->comm_interval;
    a->block_per_comm = sh->block_per_comm;
    a->block_per_comm_in_rank = sh->block_per_comm_in_rank;
    a->comm_block_rows = sh->comm_block_rows;
    a->inject = sh->inject;
}

/*
 * mmrs.h - the matmul-reduce-scatter kernel of seed 004 (CATCOC), shared
 * pieces.
 *
 * Every rank r holds A_r [M, K] and B [K, N] (fp16) and ends with its M/R
 * rows of D = sum over ranks of A_r x B (f32). One MIX launch per rank: the
 * AICs run BlockMmad over L1 tiles (block_m x block_n, K in block_k steps,
 * f32 in L0C) and store each tile either straight into D (tiles of this
 * rank's own rows) or into the symmetric workspace, by pipeline stage
 * (WORKSPACE_STAGES); each AIC then raises flagAicFinishStore[stage]. The
 * AIVs of the group wait for it, meet every rank at shmemx_barrier_all_vec,
 * pull the partial tiles meant for them from every peer's workspace and add
 * them into D with SetAtomicAdd, meet again, and raise
 * flagAivFinishCompute[stage] so the AIC may overwrite that stage.
 *
 * Files: mmrs_plan.c (options -> shape), mmrs_setup.c (buffers, inputs,
 * launch, descriptor), mmrs_check.c (CPU reference), mmrs_layout.c
 * (`npurr layout`), mmrs_aic.c (BlockMmad and the AIC loop), mmrs_aiv.c (the
 * ReduceScatter epilogue); the block schedulers both sides share are the
 * inline functions below. Device code uses device.h only.
 *
 * Vocabulary is the seed's: problemShapeInRank, blockPerComm,
 * blockPerCommInRank, commInterval, coreLoops, commLoops, stageId,
 * blockIdxInComm, targetRankIdx, flagAicFinishStore, flagAivFinishCompute.
 */
#ifndef NPURR_MMRS_H
#define NPURR_MMRS_H

#include <stdint.h>

#include "npurr/device.h"
#include "kernels.h"
#include "kit.h"

/* The workspace is read over HCCS with plain DataCopy: one node, <= 8 ranks. */
#define MMRS_MAX_RANKS 8
/* Cross-core flag ids 0..stages-1 are the stages, in both directions, as
 * the seed's CrossCoreFlag(stageIdx) (an AIC's set reaches its AIVs, an
 * AIV's set its AIC); the engine offers 16 ids. */
#define MMRS_MAX_STAGES 8
/* Seed: CommBlockShape<64, 256> per AIV, ReduceScatterTileShape<32, 256>
 * per UB trip (32 x 256 f32 = 32 KB), UB_STAGES = 2. */
#define MMRS_COMM_BLOCK_ROWS 64u
#define MMRS_COMM_TILE_BYTES (32u * 1024u)
#define MMRS_UB_STAGES 2
/* Bytes after D and after the workspace that must stay as setup wrote them. */
#define MMRS_GUARD_BYTES 64u
#define MMRS_GUARD_BYTE 0x5Au

enum { MMRS_INJECT_NONE = 0, MMRS_INJECT_NO_STAGE_WAIT = 1 };

/* ------------------------------------------------------------ kernel args */

typedef struct mmrs_args {
    int num_ranks;
    uint32_t m, n, k;                 /* problemShape: A_r is [m, k] */
    uint32_t block_m, block_n, block_k; /* L1TileShape */
    uint32_t stages;                  /* WORKSPACE_STAGES */
    uint32_t comm_interval;
    uint32_t block_per_comm;          /* resolved, a multiple of num_ranks */
    uint32_t block_per_comm_in_rank;
    uint32_t comm_block_rows;         /* rows of one AIV comm block */
    int inject;
    gm_t a[MMRS_MAX_RANKS];           /* [m, k] fp16 row-major */
    gm_t b[MMRS_MAX_RANKS];           /* [k, n] fp16 row-major (same values on every rank) */
    gm_t d[MMRS_MAX_RANKS];           /* [m / R, n] f32 row-major */
    gm_t symmetric;                   /* [stages * blockPerComm * block_m, block_n] f32 */
} mmrs_args;

/* ------------------------------------------------------------ schedulers */

/* GemmIdentityBlockSwizzle over problemShapeInRank (M/R, N, K). Decision:
 * blocks are numbered row-major over (m, n); the seed's swizzle<7, 1> only
 * reorders them for L2 reuse, which the emulator does not model. */
static inline uint32_t mmrs_in_rank_m(const mmrs_args *a) { return a->m / (uint32_t)a->num_ranks; }
static inline uint32_t mmrs_loops_m(const mmrs_args *a) {
    return (mmrs_in_rank_m(a) + a->block_m - 1) / a->block_m;
}
static inline uint32_t mmrs_loops_n(const mmrs_args *a) { return (a->n + a->block_n - 1) / a->block_n; }
/* mmadScheduler.GetCoreLoops() * rankSize */
static inline uint32_t mmrs_core_loops(const mmrs_args *a) {
    return mmrs_loops_m(a) * mmrs_loops_n(a) * (uint32_t)a->num_ranks;
}
static inline uint32_t mmrs_comm_loops(const mmrs_args *a) {
    return (mmrs_core_loops(a) + a->block_per_comm - 1) / a->block_per_comm;
}
/* Blocks of round comm_idx over all ranks (the last round may be short). */
static inline uint32_t mmrs_actual_block_per_comm(const mmrs_args *a, uint32_t comm_idx) {
    uint32_t left = mmrs_core_loops(a) - comm_idx * a->block_per_comm;
    return left < a->block_per_comm ? left : a->block_per_comm;
}
/* GetBlockCoord / GetActualBlockShape of an in-rank loop index. */
static inline void mmrs_block_coord(const mmrs_args *a, uint32_t loop_idx, uint32_t *mi, uint32_t *ni,
                                    uint32_t *rows, uint32_t *cols) {
    uint32_t ln = mmrs_loops_n(a);
    *mi = loop_idx / ln;
    *ni = loop_idx % ln;
    uint32_t mr = mmrs_in_rank_m(a);
    *rows = mr - *mi * a->block_m < a->block_m ? mr - *mi * a->block_m : a->block_m;
    *cols = a->n - *ni * a->block_n < a->block_n ? a->n - *ni * a->block_n : a->block_n;
}
/* First workspace row of (stageId, blockIdxInComm): layoutSymmetricRow. */
static inline uint64_t mmrs_workspace_row(const mmrs_args *a, uint32_t stage, uint32_t block_in_comm) {
    return ((uint64_t)stage * a->block_per_comm + block_in_comm) * a->block_m;
}

/* ------------------------------------------------------------ device code */

/* The MIX kernel (mmrs_aic.c): the AIC part, or the AIV part (mmrs_aiv.c). */
void mmrs_kernel(const void *args);
void mmrs_aiv(const mmrs_args *a);

/* ------------------------------------------------------------ host side */

typedef struct mmrs_shape {
    int num_ranks;
    int cores;                        /* AIC per rank = MIX block_dim */
    uint32_t m, n, k, block_m, block_n, block_k, stages, comm_interval;
    uint32_t block_per_comm, block_per_comm_in_rank, comm_block_rows;
    uint64_t workspace_bytes;
    int inject;
    uint64_t data_seed;
} mmrs_shape;

extern const kernel_option mmrs_options[];

/* Reads and validates the options against the topology; err names the
 * option at fault. num_aic bounds --cores. */
int mmrs_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node, int num_aic,
                         mmrs_shape *sh, char *err, size_t errlen);
/* The same on the run topo describes (its topology, its chip's AIC): what
 * setup builds, and layout and estimate without an engine. */
int mmrs_shape_from_topology(const kernel_opts *o, const npurr_topology *topo, mmrs_shape *sh,
                           char *err, size_t errlen);
/* Copies the resolved shape into the kernel's arguments (buffers not set). */
void mmrs_args_from_shape(const mmrs_shape *sh, mmrs_args *a);

/* Input values: fp16 bit patterns, a pure function of (seed, matrix, rank,
 * index) so the check regenerates them. */
uint16_t mmrs_input(uint64_t seed, int which, int rank, uint64_t index);
float mmrs_f16_to_float(uint16_t h);

typedef struct mmrs_state {
    mmrs_shape sh;
    mmrs_args args;
} mmrs_state;

kernel_check_fn mmrs_check;
kernel_estimate_fn mmrs_estimate;
kernel_layout_fn mmrs_layout;

#endif

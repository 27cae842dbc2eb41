/*
 * mmrs_aiv.c - the AIV part of matmul-reduce-scatter (seed 004, part 3):
 * the ReduceScatter epilogue.
 *
 * Per round: wait for flagAicFinishStore[stage] from this group's AIC,
 * shmemx_barrier_all_vec (now every AIC of every rank has stored the
 * stage), SetAtomicAdd<float>, pull this rank's partial tiles from every
 * peer's workspace (remote DataCopy over HCCS into UB, then UB -> D with
 * the atomic add), SetAtomicNone, barrier again (every rank has pulled from
 * this rank's workspace) and raise flagAivFinishCompute[stage].
 *
 * Work split (CommScheduler): this rank's region of a round's stage is
 * actualBlockPerCommInRank * block_m rows; it is cut into comm blocks of
 * comm_block_rows rows, dealt to the groups' subcore-0 AIVs (the seed leaves
 * subcore 1 out of the data movement; it still takes part in every flag and
 * barrier). Decision (the seed's BlockCommSwizzle<0, IsDeterministic=true>):
 * one AIV handles every peer's contribution to a comm block, in a fixed
 * order starting after its own rank, so the f32 sums of D are added in the
 * same order on every run whatever the timing. Each comm block moves
 * through UB in tiles of MMRS_COMM_TILE_BYTES, two UB stages ping-ponged.
 * Device code: device.h only.
 */
#include "mmrs.h"

/* Flag ids: MTE3_MTE2 / MTE2_MTE3 0-1 (UB stages), MTE3_S 0 (atomics landed). */

typedef struct aiv_ub {
    local_t tile[MMRS_UB_STAGES];
    int buf;
} aiv_ub;

/* rows x cols f32 from a peer's workspace (row stride block_n) into D
 * (row stride n), added. */
static void reduce_tile(const mmrs_args *a, aiv_ub *u, gm_t src, gm_t dst, uint32_t rows,
                        uint32_t cols) {
    uint32_t row_bytes = cols * 4;
    uint64_t src_stride = (uint64_t)a->block_n * 4, dst_stride = (uint64_t)a->n * 4;
    int b = u->buf;
    WaitFlag(MTE3_MTE2, b);   /* the previous add out of this UB stage has been issued and read */
    if (src_stride == row_bytes) {
        DataCopy(u->tile[b], src, (uint64_t)rows * row_bytes);
    } else {
        for (uint32_t r = 0; r < rows; r++)
            DataCopy(local_add(u->tile[b], r * row_bytes), gm_add(src, (int64_t)(r * src_stride)),
                     row_bytes);
    }
    SetFlag(MTE2_MTE3, b);
    WaitFlag(MTE2_MTE3, b);
    if (dst_stride == row_bytes) {
        DataCopy(dst, u->tile[b], (uint64_t)rows * row_bytes);
    } else {
        for (uint32_t r = 0; r < rows; r++)
            DataCopy(gm_add(dst, (int64_t)(r * dst_stride)), local_add(u->tile[b], r * row_bytes),
                     row_bytes);
    }
    SetFlag(MTE3_MTE2, b);
    u->buf ^= 1;
}

/* One comm block of round comm_idx: rows [row0, row0 + rows) of this rank's
 * region, from every peer. */
static void reduce_comm_block(const mmrs_args *a, aiv_ub *u, uint32_t comm_idx, uint32_t stage_id,
                              uint32_t actual_in_rank, uint32_t row_in_rank) {
    int me = GetRank(), R = a->num_ranks;
    uint32_t bm = a->block_m;
    uint32_t mmad_loop_idx = comm_idx * a->block_per_comm_in_rank + row_in_rank / bm;
    uint32_t offset_in_mmad = row_in_rank % bm;
    uint32_t mi, ni, am, an;
    mmrs_block_coord(a, mmad_loop_idx, &mi, &ni, &am, &an);
    ScalarCycles(16);
    /* residueInMmadBlock: padding rows of an edge block hold nothing */
    if (offset_in_mmad >= am) return;
    uint32_t rows = am - offset_in_mmad < a->comm_block_rows ? am - offset_in_mmad : a->comm_block_rows;
    uint32_t block_in_comm = (uint32_t)me * actual_in_rank + row_in_rank / bm;
    uint64_t src_row = mmrs_workspace_row(a, stage_id, block_in_comm) + offset_in_mmad;
    uint64_t dst_row = (uint64_t)mi * bm + offset_in_mmad;
    gm_t dst = gm_add(a->d[me], (int64_t)((dst_row * a->n + (uint64_t)ni * a->block_n) * 4));
    uint32_t tile_rows = MMRS_COMM_TILE_BYTES / (a->block_n * 4);
    CoreNote("comm_block_row", row_in_rank);
    for (int j = 1; j < R; j++) {
        int remote_rank_idx = (me + j) % R;
        gm_t src = gm_add(gm_on_rank(a->symmetric, remote_rank_idx),
                          (int64_t)(src_row * a->block_n * 4));
        for (uint32_t r0 = 0; r0 < rows; r0 += tile_rows) {
            uint32_t tr = rows - r0 < tile_rows ? rows - r0 : tile_rows;
            reduce_tile(a, u, gm_add(src, (int64_t)((uint64_t)r0 * a->block_n * 4)),
                        gm_add(dst, (int64_t)((uint64_t)r0 * a->n * 4)), tr, an);
        }
    }
}

void mmrs_aiv(const mmrs_args *a) {
    uint32_t aicore_idx = (uint32_t)(GetBlockIdx() / GetSubBlockNum());
    uint32_t aicore_num = (uint32_t)GetBlockNum();
    int subcore_idx = GetSubBlockIdx();
    uint32_t R = (uint32_t)a->num_ranks;
    SetRole(subcore_idx == 0 ? "ReduceScatterAIV" : "ReduceScatterAIV1");
    aiv_ub u = {.buf = 0};
    for (int i = 0; i < MMRS_UB_STAGES; i++) u.tile[i] = AllocUB(MMRS_COMM_TILE_BYTES);
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    uint32_t comm_loops = mmrs_comm_loops(a);
    for (uint32_t comm_idx = 0; comm_idx < comm_loops; comm_idx++) {
        uint32_t stage_id = comm_idx % a->stages;
        uint32_t actual_in_rank = mmrs_actual_block_per_comm(a, comm_idx) / R;
        uint32_t rows_in_rank = actual_in_rank * a->block_m;
        uint32_t loops_in_rank = (rows_in_rank + a->comm_block_rows - 1) / a->comm_block_rows;
        CoreNote("comm_idx", comm_idx);
        CrossCoreWaitFlag((int)stage_id);   /* flagAicFinishStore[stageId] */
        BarrierAll();                       /* shmemx_barrier_all_vec */
        SetAtomicAdd(DT_FLOAT);
        PipeBarrier(PIPE_ALL);
        if (subcore_idx == 0 && R > 1) {
            for (uint32_t c = aicore_idx; c < loops_in_rank; c += aicore_num)
                reduce_comm_block(a, &u, comm_idx, stage_id, actual_in_rank,
                                  c * a->comm_block_rows);
        }
        /* The adds must have landed before atomics are switched off and
         * before the barrier tells the peers this stage is free. */
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
        SetAtomicNone();
        PipeBarrier(PIPE_ALL);
        BarrierAll();
        CrossCoreSetFlag(PIPE_MTE3, (int)stage_id);   /* flagAivFinishCompute[stageId] */
    }
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
}

/*
 * npurr/device_calls.h - the functions behind npurr's device API.
 *
 * Installed with npurr. Kernels written in C use the Ascend-C-like names of
 * npurr/device.h (DataCopy, SetFlag, WaitGM32, ...), which are macros and
 * inline functions over the dev_* calls declared here; other front ends
 * (npurr's Ascend C headers, npurr/ascendc/kernel_operator.h) call these
 * directly, so they do not see the C macros. Each call takes the call site
 * (dev_site: file, line, function) that the trace and every fault name.
 *
 * The calls are implemented by the engine inside the npurr executable and
 * resolved when npurr loads a plugin (they are its exported symbols); they
 * may be made only from device code running on an emulated core, never
 * from a kernel's host side (setup, check). Plain C, usable from C++.
 */
#ifndef NPURR_DEVICE_CALLS_H
#define NPURR_DEVICE_CALLS_H

#include <stdint.h>

#include "npurr/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Local memory address: space and byte offset. */
typedef enum { LM_UB = 1, LM_L1, LM_L0A, LM_L0B, LM_L0C } local_space;
typedef struct { uint32_t space; uint32_t off; } local_t;

/* Sizes of a core's local memories and the UB's alignment (enum constants,
 * not macros: this header is included by C++ front ends whose users name
 * their own UB_ALIGN; npurr/device.h gives the C API its short names). */
enum {
    DEV_UB_BYTES = 192 * 1024, DEV_L1_BYTES = 512 * 1024, DEV_L0A_BYTES = 64 * 1024,
    DEV_L0B_BYTES = 64 * 1024, DEV_L0C_BYTES = 128 * 1024, DEV_UB_ALIGN = 32
};

/* l moved bytes further into the same local memory. */
static inline local_t local_add(local_t l, uint32_t bytes) { l.off += bytes; return l; }
/* Raw encodings used in trace events: gm_t raw has bit 63 clear. */
static inline uint64_t local_raw(local_t l) {
    return (1ULL << 63) | ((uint64_t)l.space << 56) | l.off;
}

/* Hard events of SetFlag/WaitFlag: producer pipe _ consumer pipe. */
typedef enum {
    MTE2_V = 1, V_MTE2, MTE3_V, V_MTE3, MTE2_MTE3, MTE3_MTE2, MTE3_S, S_MTE3, MTE2_S,
    S_MTE2, V_S, S_V, MTE1_M, M_MTE1, MTE2_MTE1, MTE1_MTE2, M_FIX, FIX_M, FIX_S, S_FIX,
    MTE2_M, M_V, V_M, FIX_MTE2, MTE2_FIX, HARD_EVENT_COUNT
} hard_event;

/* Element types of vector, cube and atomic operations. npurr/device.h names
 * them DT_INT32 ... for C kernels; front ends with types of their own (the
 * Ascend C headers' DT_* are CANN's numbers) use these names. */
typedef enum {
    DEV_DT_INT32 = 1, DEV_DT_FLOAT, DEV_DT_BF16, DEV_DT_FP16, DEV_DT_INT64, DEV_DT_INT8,
    DEV_DT_UINT8, DEV_DT_INT16, DEV_DT_UINT16, DEV_DT_UINT32, DEV_DT_UINT64
} data_type;

typedef struct { const char *file; int line; const char *func; } dev_site;

/* The task struct of seed 002: localBuf, remoteBuf, count, dataType, remoteRankId. */
typedef struct batch_write_task {
    uint64_t local_buf;    /* gm_t raw of this rank's window */
    uint64_t remote_buf;   /* gm_t raw on the remote rank */
    uint64_t count;        /* elements */
    uint32_t data_type;    /* data_type */
    uint32_t remote_rank_id;
} batch_write_task;
/* Bytes of a quantized row of n elements: n int8, then the scales. */
static inline uint32_t dev_quant_int8_bytes(uint32_t n, uint32_t block) {
    return n + n / block * 4u;
}

/* ------------------------------------------------------------- identity */
/* What GetBlockIdx() returns: index of this core in its launch on this rank. */
int dev_block_idx(void);
/* What GetBlockNum() returns: block_dim of the launch. */
int dev_block_num(void);
/* What GetSubBlockIdx() returns: 0/1 for the two AIVs of a MIX group, else 0. */
int dev_sub_block_idx(void);
/* What GetSubBlockNum() returns: how many AIVs share this core's MIX group,
 * 2 in a MIX launch, else 1. */
int dev_sub_block_num(void);
/* What GetRank() returns: this core's rank (shmem_my_pe). */
int dev_rank(void);
/* What GetRankSize() returns: ranks in the run (shmem_n_pes). */
int dev_rank_size(void);
/* What IsAic() returns: 1 on a cube core (AIC), 0 on a vector core (AIV). */
int dev_is_aic(void);

/* What SetRole(name) calls: the core's role is name from here on (interned;
 * the caller keeps name). */
void dev_set_role(const char *name, dev_site s);
/* What CoreNote(key, value) calls: publishes key = value for this core's
 * reports. */
void dev_note(const char *key, int64_t value, dev_site s);
/* What ScalarCycles(n) calls: the scalar unit is busy n cycles. */
void dev_scalar_cycles(uint64_t n, dev_site s);
/* What AllocLocal(space, bytes) calls: the next 32 B aligned buffer of space;
 * faults when the memory is full. */
local_t dev_alloc_local(int space, uint32_t bytes, dev_site s);
/* What DataCopy(local, gm, bytes) calls: queued on MTE2 (MTE1 into L0A/L0B is
 * the local form). */
void dev_copy_gm_to_local(local_t dst, gm_t src, uint64_t bytes, dev_site s);
/* What DataCopy(gm, local, bytes) calls: queued on MTE3. */
void dev_copy_local_to_gm(gm_t dst, local_t src, uint64_t bytes, dev_site s);
/* What DataCopy(local, local, bytes) calls: L1 to L0A/L0B on MTE1, UB to UB
 * on V. */
void dev_copy_local_to_local(local_t dst, local_t src, uint64_t bytes, dev_site s);
/* What DataCopyPadIn calls: any GM length, the local side padded to 32 B. */
void dev_copy_gm_to_local_pad(local_t dst, gm_t src, uint64_t bytes, dev_site s);
/* What DataCopyPadOut calls: any GM length from a 32 B padded local buffer. */
void dev_copy_local_to_gm_pad(gm_t dst, local_t src, uint64_t bytes, dev_site s);
/* What SetFlag(ev, id) calls: raises flag id of hard event ev once its
 * producer pipe is done. */
void dev_set_flag(int ev, int id, dev_site s);
/* What WaitFlag(ev, id) calls: the consumer pipe waits for the matching
 * SetFlag. */
void dev_wait_flag(int ev, int id, dev_site s);
/* What PipeBarrier(pipe) calls: waits until pipe (or every pipe) has drained. */
void dev_pipe_barrier(int pipe, dev_site s);
/* What CrossCoreSetFlag(pipe, flag_id) calls: raises flag_id for the other
 * cores of this MIX group once pipe is done. */
void dev_xcore_set(int pipe, int flag_id, dev_site s);
/* What CrossCoreWaitFlag(flag_id) calls: blocks until flag_id was raised. */
void dev_xcore_wait(int flag_id, dev_site s);
/* What BarrierAll() (all_ranks 1) and SyncAll() (0) calls: blocks until every
 * core of the launch (on every rank) arrived. */
void dev_barrier(int all_ranks, dev_site s);
/* What GetValue32/64 calls (width 1, 2, 4 or 8; narrower words come back
 * sign-extended): the width-byte GM word at p, read by the scalar
 * unit. */
int64_t dev_gm_load(gm_t p, int width, dev_site s);
/* What SetValue32/64 calls: stores v as a width-byte GM word at p. */
void dev_gm_store(gm_t p, int width, int64_t v, dev_site s);
/* What AtomicAdd/Cas/Max calls: op (engine_atomic) with v (and cmp) on the
 * word at p; returns the old value. */
int64_t dev_gm_atomic(gm_t p, int width, int op, int64_t v, int64_t cmp, dev_site s);
/* What WaitGM32/64 calls: blocks until the word at p satisfies cond
 * (engine_cond) against v; returns the value seen. */
int64_t dev_gm_wait(gm_t p, int width, int cond, int64_t v, dev_site s);
/* What NameWord(p, width, name) calls: engine_name_word from a kernel. */
void dev_name_word(gm_t p, int width, const char *name);
/* What UbGet32/64 calls: the width-byte word (1, 2, 4 or 8, aligned;
 * sign-extended) at byte_off in l. */
int64_t dev_local_load(local_t l, uint32_t byte_off, int width, dev_site s);
/* What UbSet32/64 calls: stores v as a width-byte word at byte_off in l. */
void dev_local_store(local_t l, uint32_t byte_off, int width, int64_t v, dev_site s);
/* What SetAtomicAdd(dtype) and SetAtomicNone() (dtype 0) calls: MTE3 copies
 * to GM add in dtype from now on, or store again. */
void dev_set_atomic(int dtype, dev_site s);
/* What VecCopy(dst, src, bytes) calls: a byte-granular UB to UB copy on V. */
void dev_vec_copy(local_t dst, local_t src, uint32_t bytes, dev_site s);
/* What VecDup(dst, dtype, value, n) calls: n elements of dtype set to value
 * on V. */
void dev_vec_dup(local_t dst, int dtype, double value, uint32_t n, dev_site s);
/* What VecAxpy calls: dst_f32[i] += w * src[i] for n elements on V. */
void dev_vec_axpy(local_t dst, local_t src, int src_dtype, float w, uint32_t n, dev_site s);
/* What VecAdd calls: dst[i] = a[i] + b[i] for n elements of dtype on V. */
void dev_vec_add(local_t dst, local_t a, local_t b, int dtype, uint32_t n, dev_site s);
/* What VecCast calls: n elements of src_dtype converted into dst_dtype on V. */
void dev_vec_cast(local_t dst, int dst_dtype, local_t src, int src_dtype, uint32_t n, dev_site s);
/* What VecQuantInt8 calls: per block of src (src_dtype) elements, int8
 * values then one f32 scale per block at dst (see the macro). */
void dev_vec_quant_int8(local_t dst, local_t src, int src_dtype, uint32_t n, uint32_t block, dev_site s);
/* What VecDequantInt8 calls: dst_f32 = w * int8 value * its block's scale. */
void dev_vec_dequant_int8(local_t dst, local_t src, float w, uint32_t n, uint32_t block, dev_site s);
/* What Mmad calls: the cube multiply-accumulate of an m x k by k x n tile
 * into L0C on M. */
void dev_mmad(local_t c, local_t a, local_t b, int dtype, uint32_t m, uint32_t n, uint32_t k,
              int accumulate, dev_site s);
/* What Fixpipe(dst, src, dtype, elems) calls: L0C to GM on FIX, converted to
 * dtype. */
void dev_fixpipe(gm_t dst, local_t src, int dtype, uint64_t elems, dev_site s);
/* What ShmemPutNbi calls: a GM to peer GM copy over HCCS, queued on MTE3. */
void dev_hccs_put(gm_t dst, gm_t src, uint64_t bytes, dev_site s);
/* What ShmemGetNbi calls: a peer GM to GM copy over HCCS, queued on MTE2. */
void dev_hccs_get(gm_t dst, gm_t src, uint64_t bytes, dev_site s);
/* What ShmemPutFromUB calls: UB to peer GM over HCCS, queued on MTE3. */
void dev_hccs_put_ub(gm_t dst, local_t src, uint64_t bytes, dev_site s);
/* What RdmaWrite calls: bytes from this rank's GM to a rank of another node,
 * posted to the NIC. */
void dev_rdma_write(gm_t dst, gm_t src, uint64_t bytes, dev_site s);
/* What RdmaAtomicAdd calls: adds v to a word on a rank of another node,
 * posted to the NIC. */
void dev_rdma_atomic(gm_t dst, int64_t v, dev_site s);
/* What RdmaQuiet() calls: blocks until every RDMA op this core posted is
 * acknowledged. */
void dev_rdma_quiet(dev_site s);
/* What BatchWrite(tasks_gm, count) calls: the AICPU posts the count tasks at
 * tasks. */
void dev_batch_write(gm_t tasks, uint32_t count, dev_site s);
/* What RingStoreHead/Tail calls: stores v into the ring's head (tail 0) or
 * tail (1) word. */
void dev_ring_store(uint32_t ring, int tail, int64_t v, dev_site s);
/* What RingLoadHead/Tail calls: the ring's head (tail 0) or tail (1) word. */
int64_t dev_ring_load(uint32_t ring, int tail, dev_site s);
/* What RingWaitSpace calls: blocks until need slots are free behind tail;
 * returns the head seen. */
int64_t dev_ring_wait_space(uint32_t ring, int64_t tail, int64_t need, dev_site s);
/* What RingWaitData calls: blocks until the tail passes head; returns the
 * tail seen. */
int64_t dev_ring_wait_data(uint32_t ring, int64_t head, dev_site s);
/* What RingAtomicAdd calls: adds v to the ring's head (which 0) or tail (1)
 * word, over RDMA or HCCS when remote. */
void dev_ring_atomic(uint32_t ring, int tail, int64_t v, dev_site s);

/* 32-bit forms as functions, so an ignored result draws no warning. */
static inline int32_t dev_gm_load32(gm_t p, dev_site s) { return (int32_t)dev_gm_load(p, 4, s); }
/* dev_gm_atomic on a 4-byte word, as int32. */
static inline int32_t dev_gm_atomic32(gm_t p, int op, int64_t v, int64_t cmp, dev_site s) {
    return (int32_t)dev_gm_atomic(p, 4, op, v, cmp, s);
}
/* dev_gm_wait on a 4-byte word, as int32. */
static inline int32_t dev_gm_wait32(gm_t p, int cond, int64_t v, dev_site s) {
    return (int32_t)dev_gm_wait(p, 4, cond, v, s);
}
/* dev_local_load of a 4-byte word, as int32. */
static inline int32_t dev_local_load32(local_t l, uint32_t off, dev_site s) {
    return (int32_t)dev_local_load(l, off, 4, s);
}

/* bf16 helpers for kernels and references (round to nearest even). */
static inline float bf16_to_float(uint16_t h) {
    union { uint32_t u; float f; } x; x.u = (uint32_t)h << 16; return x.f;
}
/* f rounded to the nearest bf16 (ties to even; a NaN stays a NaN). */
static inline uint16_t float_to_bf16(float f) {
    union { uint32_t u; float f; } x; x.f = f;
    if ((x.u & 0x7f800000u) == 0x7f800000u && (x.u & 0x7fffffu)) return (uint16_t)((x.u >> 16) | 0x40);
    uint32_t rounding = 0x7fffu + ((x.u >> 16) & 1u);
    return (uint16_t)((x.u + rounding) >> 16);
}

/* --------------------------------------------- calls for other front ends */
/* What npurr's Ascend C headers (npurr/ascendc/kernel_operator.h) are
 * built on; C kernels have npurr/device.h's simpler forms. */

/* GM addresses as host pointers: Ascend C kernels hold GM as `__gm__ T *`,
 * pointers into the host mappings of npurr's GM allocations, and compute
 * with them (a window's base plus an offset). Each call that moves data
 * turns one back into a gm_t; a pointer into no allocation faults. */
gm_t dev_gm_from_host(const void *p, dev_site s);
/* The host pointer of a GM address (faults outside every allocation). */
void *dev_gm_to_host(gm_t p, dev_site s);

/* 256 zeroed bytes of this core's own, for a front end's per-core state
 * (the current TPipe): all cores share one address space, so a static
 * would be shared by all of them. Valid until the core's kernel returns. */
void *dev_core_storage(void);
/* Bytes of local memory space allocated so far on this core (a mark). */
uint32_t dev_local_used(int space);
/* Frees this core's allocations of space made after mark used (TPipe's
 * Reset): the next AllocLocal starts there again; the bytes stay as they
 * are, as in the chip's buffers. Faults when used is past what is allocated. */
void dev_local_release(int space, uint32_t used, dev_site s);
/* This core's virtual time in ticks of the 50 MHz system counter
 * (GetSystemCycle); costs one scalar operation. */
uint64_t dev_system_cycle(dev_site s);
/* A data cache clean and invalidate of GM [p, p + bytes) (the scalar
 * unit's cache; npurr's GM is always coherent, so only its time is paid). */
void dev_dcache_sync(gm_t p, uint64_t bytes, dev_site s);
/* MTE3 copies to GM accumulate with op (ATOMIC_ADD, ATOMIC_MAX,
 * ATOMIC_MIN) in dtype from now on; op 0: store again. */
void dev_set_atomic_op(int op, int dtype, dev_site s);
/* Casts from int32 to half on this core multiply by scale first (Ascend
 * C's SetDeqScale; 1.0 until set). */
void dev_set_deq_scale(float scale, dev_site s);

/* Faults the core with what: a call or an argument the front end cannot
 * model (the run ends as a fault at the caller's site). Never returns. */
void dev_unsupported(const char *what, dev_site s) __attribute__((noreturn));

/* HCCL groups the host declared (npurr_host.hccl_group): this rank's
 * context (a host pointer into its GM), rank's window (out 0: in, 1:
 * out) and the windows' size. Fault when the group was not declared. */
void *dev_hccl_context(int group, dev_site s);
void *dev_hccl_window(int group, int rank, int out, dev_site s);
uint64_t dev_hccl_window_size(int group, dev_site s);
/* 1 when the host declared HCCL group `group`, else 0. */
int dev_hccl_declared(int group);

/* A DataCopy of count blocks in one DMA (DataCopyParams, DataCopyExtParams):
 * block i is block_bytes at gm + i * (block_bytes + gm_gap) and at local +
 * i * (align32(block_bytes) + local_gap); the local side of each block is
 * padded to 32 B. pad: 1 writes pad_left / pad_right elements of elem_bytes
 * holding pad_value around each block in local memory (DataCopyPad). */
typedef struct dev_copy_blocks {
    uint32_t count, block_bytes;
    uint64_t gm_gap;
    uint32_t local_gap;
    int pad;
    uint32_t pad_left, pad_right, elem_bytes;
    uint64_t pad_value;
} dev_copy_blocks;
/* GM -> local on MTE2. */
void dev_copy_blocks_in(local_t dst, gm_t src, const dev_copy_blocks *b, dev_site s);
/* local -> GM on MTE3 (atomic when dev_set_atomic_op is on). */
void dev_copy_blocks_out(gm_t dst, local_t src, const dev_copy_blocks *b, dev_site s);

/* A vector instruction's elements. count > 0: count elements from each
 * operand's start, contiguous. Else repeats of 256 bytes of the widest
 * operand (elements_per_repeat = 256 / widest element), the elements of a
 * repeat taking part where mask has their bit (bit j of mask[j / 64]);
 * element j of repeat r of an operand is at its start + r * rep * 32 +
 * (j / per_block) * blk * 32 + (j % per_block) * size, per_block = 32 /
 * size. Operands: 0 the destination, 1 and 2 the sources. */
typedef struct dev_vec_shape {
    uint32_t count;
    uint32_t repeats;
    uint64_t mask[2];
    uint16_t blk[3], rep[3];
} dev_vec_shape;

/* Elementwise operations. */
typedef enum {
    VOP_ADD = 1, VOP_SUB, VOP_MUL, VOP_DIV, VOP_MAX, VOP_MIN, VOP_AND, VOP_OR,   /* dst = a op b */
    VOP_ADDS, VOP_MULS, VOP_MAXS, VOP_MINS,                                      /* dst = a op scalar */
    VOP_ABS, VOP_COPY,                                                           /* dst = f(a) */
    VOP_DUP                                                                      /* dst = scalar */
} dev_vec_op;
/* Round modes of Cast (Ascend C's RoundMode). */
typedef enum {
    VROUND_NONE = 0, VROUND_RINT, VROUND_FLOOR, VROUND_CEIL, VROUND_ROUND, VROUND_TRUNC,
    VROUND_ODD
} dev_vec_round;
/* Reductions: over every selected element (ALL: value, then with_index
 * its index as the destination type's bits), per repeat (REPEAT: one
 * result per repeat, dst_stride results apart; with_index: value, index
 * pairs), per 32-byte block (BLOCK: 8 results a repeat, dst_stride * 8
 * apart), or per row (ROWS: count rows of row elements, row_stride apart). */
typedef enum { VRED_ALL = 1, VRED_REPEAT, VRED_BLOCK, VRED_ROWS } dev_vec_reduce_kind;
typedef enum { VRED_SUM = 1, VRED_MAX, VRED_MIN } dev_vec_reduce_fold;
typedef struct dev_vec_reduce {
    int kind, op, with_index, index_first;
    uint32_t dst_stride;
    uint32_t rows, row, row_stride;   /* VRED_ROWS */
} dev_vec_reduce;

/* dst = op(src0, src1 | scalar) over shape, elements of dtype, on V.
 * scalar is taken as dtype (fscalar for float types, iscalar else). */
void dev_vec_elem(int op, int dtype, local_t dst, local_t src0, local_t src1, double fscalar,
                  int64_t iscalar, const dev_vec_shape *shape, dev_site s);
/* dst (dst_dtype) = src (src_dtype) rounded under round (dev_vec_round),
 * saturated into integers, over shape, on V. */
void dev_vec_convert(local_t dst, int dst_dtype, local_t src, int src_dtype, int round,
                     const dev_vec_shape *shape, dev_site s);
/* A reduction r of src (dtype) over shape into dst, on V. */
void dev_vec_reduce_op(const dev_vec_reduce *r, int dtype, local_t dst, local_t src,
                       const dev_vec_shape *shape, dev_site s);

#ifdef __cplusplus
}
#endif

#endif

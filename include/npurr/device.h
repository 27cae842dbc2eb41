/*
 * npurr/device.h - the device API kernels are written against, in C.
 *
 * It follows Ascend C closely so a kernel reads like the seeds: DataCopy
 * between GM and the core's local memories (UB on AIV; L1/L0A/L0B/L0C on AIC),
 * SetFlag/WaitFlag with hard events, PipeBarrier, GM GetValue/SetValue,
 * atomics, SetAtomicAdd on MTE3, cross-core flags, HCCS put/get, RDMA write
 * and remote atomic add, BatchWrite, barriers, cube Mmad and named ring
 * stores. C has no templates, so SetFlag<HardEvent::MTE3_S>(0) is written
 * SetFlag(MTE3_S, 0).
 *
 * Every call is a macro that carries __FILE__:__LINE__ into the engine, so
 * faults and trace events name the kernel line. Hardware rules are enforced:
 * a violation faults the run with file:line, rank and core.
 *
 * Calls may be made only from a kernel running on an emulated core.
 * Installed with npurr: built-in kernels and plugins use the same header.
 * The calls themselves are npurr/device_calls.h's dev_* functions, which
 * other front ends (the Ascend C headers) call without these macros.
 */
#ifndef NPURR_DEVICE_H
#define NPURR_DEVICE_H

#include "npurr/device_calls.h"

/* The C names of device_calls.h's sizes and element types. */
#define UB_BYTES ((uint32_t)DEV_UB_BYTES)
#define L1_BYTES ((uint32_t)DEV_L1_BYTES)
#define L0A_BYTES ((uint32_t)DEV_L0A_BYTES)
#define L0B_BYTES ((uint32_t)DEV_L0B_BYTES)
#define L0C_BYTES ((uint32_t)DEV_L0C_BYTES)
#define UB_ALIGN ((uint32_t)DEV_UB_ALIGN)
#define DT_INT32 DEV_DT_INT32
#define DT_FLOAT DEV_DT_FLOAT
#define DT_BF16 DEV_DT_BF16
#define DT_FP16 DEV_DT_FP16
#define DT_INT64 DEV_DT_INT64
#define DT_INT8 DEV_DT_INT8
#define DT_UINT8 DEV_DT_UINT8
#define DT_INT16 DEV_DT_INT16
#define DT_UINT16 DEV_DT_UINT16
#define DT_UINT32 DEV_DT_UINT32
#define DT_UINT64 DEV_DT_UINT64

/* The call site a macro passes: this file, line and function. */
#define DEV_SITE ((dev_site){__FILE__, __LINE__, __func__})

/* ------------------------------------------------------------- identity */
/* Index of this core in its launch on this rank. */
static inline int GetBlockIdx(void) { return dev_block_idx(); }
/* block_dim of the launch. */
static inline int GetBlockNum(void) { return dev_block_num(); }
/* 0/1 for the two AIVs of a MIX group, else 0. */
static inline int GetSubBlockIdx(void) { return dev_sub_block_idx(); }
/* How many AIVs share this core's MIX group: 2 in a MIX launch, else 1. */
static inline int GetSubBlockNum(void) { return dev_sub_block_num(); }
/* This core's rank (shmem_my_pe). */
static inline int GetRank(void) { return dev_rank(); }
/* Ranks in the run (shmem_n_pes). */
static inline int GetRankSize(void) { return dev_rank_size(); }
/* 1 on a cube core (AIC), 0 on a vector core (AIV). */
static inline int IsAic(void) { return dev_is_aic(); }
/* Names what this core does (RDMASender, ...): reports and stats use it. */
#define SetRole(name) dev_set_role((name), DEV_SITE)
/* Publishes a scalar of the kernel's state (cached_head, credits, ...) that
 * the deadlock report prints; recorded as an EV_NOTE. */
#define CoreNote(key, value) dev_note((key), (int64_t)(value), DEV_SITE)
/* Scalar work that takes cycles (index arithmetic, loops). */
#define ScalarCycles(n) dev_scalar_cycles((uint64_t)(n), DEV_SITE)

/* ------------------------------------------------------------- local memory */
/* Carves a 32 B aligned buffer out of the core's local memory (TPipe
 * InitBuffer); faults when the space is exhausted. */
#define AllocLocal(space, bytes) dev_alloc_local((space), (uint32_t)(bytes), DEV_SITE)
#define AllocUB(bytes) AllocLocal(LM_UB, (bytes))

/* ------------------------------------------------------------- DataCopy */
/* GM->UB/L1 on MTE2, UB->GM on MTE3, L1->L0A/L0B on MTE1, UB->UB on V.
 * Local addresses and lengths must be 32 B aligned; the GM side may be any
 * byte address inside one allocation. */
#define DataCopy(dst, src, bytes) _Generic((dst), \
    local_t: _Generic((src), gm_t: dev_copy_gm_to_local, default: dev_copy_local_to_local), \
    gm_t: dev_copy_local_to_gm)((dst), (src), (uint64_t)(bytes), DEV_SITE)
/* DataCopyPad: any GM length; the local side is padded to 32 B. */
#define DataCopyPadIn(dst, src, bytes) dev_copy_gm_to_local_pad((dst), (src), (uint64_t)(bytes), DEV_SITE)
#define DataCopyPadOut(dst, src, bytes) dev_copy_local_to_gm_pad((dst), (src), (uint64_t)(bytes), DEV_SITE)

/* ------------------------------------------------------------- sync */
#define SetFlag(ev, id) dev_set_flag((ev), (id), DEV_SITE)
#define WaitFlag(ev, id) dev_wait_flag((ev), (id), DEV_SITE)
#define PipeBarrier(pipe) dev_pipe_barrier((pipe), DEV_SITE)
/* AIC <-> AIV of one group (mode 0x2 in Ascend C): the flag is raised when
 * the given pipe's queued work has completed (CrossCoreSetFlag<0x2, PIPE>).
 * An AIC's wait consumes one set from each AIV of its group. */
#define CrossCoreSetFlag(pipe, flag_id) dev_xcore_set((pipe), (flag_id), DEV_SITE)
#define CrossCoreWaitFlag(flag_id) dev_xcore_wait((flag_id), DEV_SITE)
/* Every core of every launch on every rank (shmemx_barrier_all_vec). */
#define BarrierAll() dev_barrier(1, DEV_SITE)
/* Every core of this launch on this rank (SyncAll). */
#define SyncAll() dev_barrier(0, DEV_SITE)

/* ------------------------------------------------------------- GM scalar */
/* Local or same-node GM (remote over HCCS); a rank in another node faults:
 * use the RDMA calls. */
#define GetValue32(p) dev_gm_load32((p), DEV_SITE)
#define GetValue64(p) dev_gm_load((p), 8, DEV_SITE)
#define SetValue32(p, v) dev_gm_store((p), 4, (int64_t)(v), DEV_SITE)
#define SetValue64(p, v) dev_gm_store((p), 8, (int64_t)(v), DEV_SITE)
#define AtomicAdd32(p, v) dev_gm_atomic32((p), ATOMIC_ADD, (int64_t)(v), 0, DEV_SITE)
#define AtomicAdd64(p, v) dev_gm_atomic((p), 8, ATOMIC_ADD, (int64_t)(v), 0, DEV_SITE)
#define AtomicCas32(p, cmp, v) dev_gm_atomic32((p), ATOMIC_CAS, (int64_t)(v), (int64_t)(cmp), DEV_SITE)
#define AtomicMax64(p, v) dev_gm_atomic((p), 8, ATOMIC_MAX, (int64_t)(v), 0, DEV_SITE)
/* The spin-wait of the seeds as one blocking wait: returns the value seen. */
#define WaitGM32(p, cond, v) dev_gm_wait32((p), (cond), (int64_t)(v), DEV_SITE)
#define WaitGM64(p, cond, v) dev_gm_wait((p), 8, (cond), (int64_t)(v), DEV_SITE)
/* Names a GM word so waits and reports say what it is (host may do it too). */
#define NameWord(p, width, name) dev_name_word((p), (width), (name))

/* ------------------------------------------------------------- UB scalar */
#define UbGet32(l, byte_off) dev_local_load32((l), (byte_off), DEV_SITE)
#define UbGet64(l, byte_off) dev_local_load((l), (byte_off), 8, DEV_SITE)
#define UbSet32(l, byte_off, v) dev_local_store((l), (byte_off), 4, (int64_t)(v), DEV_SITE)
#define UbSet64(l, byte_off, v) dev_local_store((l), (byte_off), 8, (int64_t)(v), DEV_SITE)

/* ------------------------------------------------------------- MTE3 atomics */
#define SetAtomicAdd(dtype) dev_set_atomic((dtype), DEV_SITE)
#define SetAtomicNone() dev_set_atomic(0, DEV_SITE)

/* ------------------------------------------------------------- vector (V pipe) */
/* Byte-granular UB->UB copy (the seeds' vector_memcpy used for the crop;
 * on the chip this is a GatherMask/shift sequence, costed as one pass). */
#define VecCopy(dst, src, bytes) dev_vec_copy((dst), (src), (uint32_t)(bytes), DEV_SITE)
#define VecDup(dst, dtype, value, n) dev_vec_dup((dst), (dtype), (double)(value), (uint32_t)(n), DEV_SITE)
/* dst_f32[i] += w * (float)src[i] for n elements; src bf16/fp16/f32. */
#define VecAxpy(dst_f32, src, src_dtype, w, n) dev_vec_axpy((dst_f32), (src), (src_dtype), (float)(w), (uint32_t)(n), DEV_SITE)
/* dst[i] = a[i] + b[i] (same dtype). */
#define VecAdd(dst, a, b, dtype, n) dev_vec_add((dst), (a), (b), (dtype), (uint32_t)(n), DEV_SITE)
/* dst[i] = convert(src[i]); e.g. f32 -> bf16 with round-to-nearest-even. */
#define VecCast(dst, dst_dtype, src, src_dtype, n) dev_vec_cast((dst), (dst_dtype), (src), (src_dtype), (uint32_t)(n), DEV_SITE)
/* Dynamic INT8 quantization per block of `block` elements (the A2
 * dispatch's quant step): per block inv = 127 / absmax, q[i] = rint(x[i] *
 * inv) saturated to [-127, 127], scale = 1 / inv (an all-zero block: q 0,
 * scale 0). dst receives the n int8 values, then n / block float scales.
 * src is bf16, fp16 or f32; block a multiple of 32 that divides n. */
#define VecQuantInt8(dst_q, src, src_dtype, n, block) dev_vec_quant_int8((dst_q), (src), (src_dtype), (uint32_t)(n), (uint32_t)(block), DEV_SITE)
/* Its inverse times w: dst_f32[i] = w * (q[i] * scale[i / block]), src laid
 * out as VecQuantInt8 writes it. */
#define VecDequantInt8(dst_f32, src_q, w, n, block) dev_vec_dequant_int8((dst_f32), (src_q), (float)(w), (uint32_t)(n), (uint32_t)(block), DEV_SITE)
/* ------------------------------------------------------------- cube (AIC) */
/* L0C_f32[m,n] (+)= L0A[m,k] * L0B[k,n], row-major, fp16/bf16 inputs. */
#define Mmad(c, a, b, dtype, m, n, k, accumulate) dev_mmad((c), (a), (b), (dtype), (m), (n), (k), (accumulate), DEV_SITE)
/* L0C (f32) -> GM on FIX, converting to dtype (DT_FLOAT keeps f32). */
#define Fixpipe(dst, src, dtype, elems) dev_fixpipe((dst), (src), (dtype), (uint64_t)(elems), DEV_SITE)

/* ------------------------------------------------------------- HCCS (same node) */
/* shmem_mte_put_mem_nbi / get: queued on MTE3 / MTE2, so SetFlag orders them. */
#define ShmemPutNbi(dst_remote, src_local, bytes) dev_hccs_put((dst_remote), (src_local), (uint64_t)(bytes), DEV_SITE)
#define ShmemGetNbi(dst_local, src_remote, bytes) dev_hccs_get((dst_local), (src_remote), (uint64_t)(bytes), DEV_SITE)
/* UB -> remote GM over HCCS on MTE3 (the tail of a put through UB). */
#define ShmemPutFromUB(dst_remote, src_ub, bytes) dev_hccs_put_ub((dst_remote), (src_ub), (uint64_t)(bytes), DEV_SITE)

/* ------------------------------------------------------------- RDMA (between nodes) */
/* Posted to the rank's NIC; ops to one peer complete in posting order, so a
 * tail atomic posted after the data lands after it (RC QP ordering). */
#define RdmaWrite(dst_remote, src_local, bytes) dev_rdma_write((dst_remote), (src_local), (uint64_t)(bytes), DEV_SITE)
#define RdmaAtomicAdd(dst_remote, v) dev_rdma_atomic((dst_remote), (int64_t)(v), DEV_SITE)
/* Waits until every RDMA op this core posted is acknowledged: landed, and its
 * ack back one wire latency later (rdma.c). */
#define RdmaQuiet() dev_rdma_quiet(DEV_SITE)

/* ------------------------------------------------------------- BatchWrite (AICPU) */
/* The AICPU reads count tasks from GM and posts them one by one, each with
 * the fixed per-task overhead; returns at once (no built-in sync). */
#define BatchWrite(tasks_gm, count) dev_batch_write((tasks_gm), (uint32_t)(count), DEV_SITE)

/* ------------------------------------------------------------- rings */
/* Named stores of a ring's head/tail (the recorder sees them as ring events).
 * The ring is declared on the host with engine_declare_ring. */
#define RingStoreHead(ring_id, v) dev_ring_store((ring_id), 0, (int64_t)(v), DEV_SITE)
#define RingStoreTail(ring_id, v) dev_ring_store((ring_id), 1, (int64_t)(v), DEV_SITE)
#define RingLoadHead(ring_id) dev_ring_load((ring_id), 0, DEV_SITE)
#define RingLoadTail(ring_id) dev_ring_load((ring_id), 1, DEV_SITE)
/* Producer: block until capacity - (tail - head) >= need; returns head seen. */
#define RingWaitSpace(ring_id, tail, need) dev_ring_wait_space((ring_id), (int64_t)(tail), (int64_t)(need), DEV_SITE)
/* Consumer: block until tail > head; returns tail seen. */
#define RingWaitData(ring_id, head) dev_ring_wait_data((ring_id), (int64_t)(head), DEV_SITE)
/* Remote atomic add on a ring word (credits, RDMA tails) over RDMA or HCCS. */
#define RingAtomicAdd(ring_id, which, v) dev_ring_atomic((ring_id), (which), (int64_t)(v), DEV_SITE)

#endif

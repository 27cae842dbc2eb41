/*
 * npurr/types.h - the types npurr's engine, device API and plugin ABI share.
 *
 * Installed with npurr (include/npurr/): a GM address, what a core is, the
 * pipes, the wait conditions and atomics, what a named object or ring is,
 * and the shapes of a kernel entry point and of a row generator. Both the
 * device API (npurr/device.h) and the plugin ABI (npurr/plugin.h) include
 * it; so does the engine, which defines what these values mean. Plain C,
 * usable from C++; nothing here calls into npurr.
 */
#ifndef NPURR_TYPES_H
#define NPURR_TYPES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A GM address names a byte on one rank: rank in bits 40..55, offset below.
 * Symmetric allocations have the same offset on every rank, so
 * gm_on_rank(p, r) is the peer's copy of p. */
typedef struct { uint64_t a; } gm_t;

#define GM_RANK_SHIFT 40
#define GM_OFFSET_MASK ((1ULL << GM_RANK_SHIFT) - 1)
/* The GM address of byte off on rank. */
static inline gm_t gm_make(int rank, uint64_t off) {
    gm_t g = {((uint64_t)rank << GM_RANK_SHIFT) | off}; return g;
}
/* The rank whose GM holds g. */
static inline int gm_rank(gm_t g) { return (int)(g.a >> GM_RANK_SHIFT); }
/* g's byte offset in its rank's GM. */
static inline uint64_t gm_offset(gm_t g) { return g.a & GM_OFFSET_MASK; }
/* g moved by bytes (may be negative) on the same rank. */
static inline gm_t gm_add(gm_t g, int64_t bytes) { gm_t r = {g.a + (uint64_t)bytes}; return r; }
/* The same offset on another rank: a symmetric allocation's copy there. */
static inline gm_t gm_on_rank(gm_t g, int rank) { return gm_make(rank, gm_offset(g)); }

/* Named GM words are what waits, deadlock reports and the trace talk about:
 * every write that touches one records its writer. Rings are a pair of named
 * words (head, tail) with a capacity, in units of slots or bytes. */
typedef enum {
    OBJ_WORD = 1, OBJ_RING = 2, OBJ_RING_HEAD = 3, OBJ_RING_TAIL = 4, OBJ_FLAG = 5,
    OBJ_BUFFER = 6, OBJ_XCORE_FLAG = 7, OBJ_BARRIER = 8
} engine_obj_kind;

/* What carries a ring's records. The trace and the objects table keep it as
 * the level text engine_ring_kind_name gives ("rdma", "hccs", ...). */
typedef enum { RING_NONE = 0, RING_LOCAL, RING_HCCS, RING_RDMA } engine_ring_kind;

/* The cores a launch runs on: vector (AIV), cube (AIC), or MIX groups of one
 * cube and two vector cores. */
typedef enum { CORE_AIV = 0, CORE_AIC = 1, CORE_MIX = 2 } engine_core_type;
/* A kernel's device entry point: every launched core calls it with the
 * launch's args. */
typedef void (*engine_kernel_fn)(const void *args);
/* A generated input's rows: writes row `row` (row_bytes bytes) into out. */
typedef void (*engine_row_fn)(const void *params, uint64_t row, uint8_t *out);

/* A core's pipes (queues); PIPE_ALL names every pipe in PipeBarrier. */
typedef enum { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_FIX,
               PIPE_NIC, PIPE_AICPU, PIPE_COUNT, PIPE_ALL = 15 } engine_pipe;

/* Atomic operations on a GM word. */
typedef enum { ATOMIC_ADD = 1, ATOMIC_CAS, ATOMIC_MAX, ATOMIC_MIN } engine_atomic;

/* Conditions a wait on a GM word holds for: word COND value. */
typedef enum { COND_EQ = 1, COND_NE, COND_GE, COND_GT, COND_LE, COND_LT } engine_cond;

#ifdef __cplusplus
}
#endif

#endif

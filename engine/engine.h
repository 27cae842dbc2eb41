/*
 * engine.h - the emulated Ascend 910B cluster, host side.
 *
 * This is the one header the rest of npurr (recorder, replayer, analysis,
 * CLI) uses to build a cluster, allocate its memories, launch kernels, run
 * them to an outcome and observe every event. Kernels themselves are written
 * against device.h, which is the Ascend-C-like API of a single emulated core.
 *
 * Model in one paragraph: a cluster is nodes x npus_per_node ranks; each rank
 * has GM and AIC/AIV cores. Every launched core is a coroutine; exactly one
 * runs at a time under a discrete-event scheduler with a virtual clock in
 * picoseconds. Ties are broken by a total order (time, track priority, seq),
 * where the track priority is a seeded permutation of (rank, core), so the
 * same config and seed give the same event stream byte for byte. Pipes (MTE2,
 * MTE3, V, ...) are asynchronous queues whose memory effects land at their
 * completion time. Blocking waits are single events woken by the write that
 * satisfies them. When nothing can progress the run stops with a deadlock
 * report; a virtual-time watchdog stops livelocks.
 *
 * Memory in one paragraph: token rows are 14 KB and are almost only moved,
 * so by default (PAYLOAD_REF) bytes that data movement writes (DataCopy,
 * over-read and crop, HCCS puts/gets, RDMA writes, BatchWrite) are kept as
 * references to their origin: an input tensor whose rows a deterministic
 * generator produces (engine_gm_generate). Each GM allocation and local
 * memory is a lazily backed mapping for literal bytes plus an extent map of
 * references; a copy splices references, and anything that computes (scalar
 * loads and stores, atomics, vector and cube ops, waits, host views)
 * materializes what it touches. Output checks compare references without
 * generating them (engine_gm_equal), which proves byte equality: the same
 * bytes of the same immutable origin. Host memory and time then follow
 * events and metadata, not payload; PAYLOAD_FULL stores every byte and gives
 * the identical event stream. The rules are in payload.c.
 *
 * Errors are values: functions return ENGINE_OK or an error and fill the
 * caller's message buffer with a sentence naming the input at fault.
 */
#ifndef NPURR_ENGINE_H
#define NPURR_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/host/host.h"   /* the host utilities (a room of their own) */
#include "npurr/types.h"   /* gm_t, core types, pipes, conditions: shared with kernels and plugins */

#define ENGINE_VERSION "0.1.0"
#define ENGINE_ERRLEN 512

typedef struct engine engine;

enum { ENGINE_OK = 0, ENGINE_ERR = -1 };

/* ---------------------------------------------------------------- timing */

/* Every figure the timing model uses. Defaults and their sources are in
 * engine/timing.c and printed by `npurr info`; `--hw FILE` overrides any of
 * them with key=value lines. */
typedef struct engine_hw {
    double aicore_clock_ghz;        /* scalar/vector/cube clock */
    double hbm_gbps;                /* HBM bandwidth per NPU, shared by its cores */
    double mte_bytes_per_cycle;     /* one core's MTE2/MTE3 queue bandwidth */
    double mte_hccs_bytes_per_cycle; /* the same when the GM end is a peer's, over HCCS */
    double mte_latency_ns;          /* fixed cost of one GM<->local transfer */
    double ub_vector_bytes_per_cycle; /* vector unit throughput on UB */
    double vector_latency_cycles;   /* fixed cost of one vector instruction */
    double cube_macs_per_cycle;     /* 16x16x16 fractal per cycle */
    double scalar_op_cycles;        /* issue cost of one device API call */
    double gm_read_ns;              /* scalar GetValue on local GM */
    double gm_write_ns;             /* scalar SetValue / atomic on local GM */
    double hccs_link_gbps;          /* per peer link, full mesh inside a node */
    double hccs_port_gbps;          /* one NPU's HCCS total each way, over its links */
    double hccs_transfer_ns;        /* the port's time per transfer beyond its bytes */
    double hccs_latency_ns;         /* one-way latency of an HCCS access */
    double hccs_read_latencies;     /* one-way HCCS latencies an MTE read of a peer holds its queue */
    double roce_gbps;               /* RoCE NIC bandwidth per NPU (each way) */
    double roce_cross_plane_gbps;   /* its RDMA to another plane (a different-numbered NPU) */
    double rdma_latency_ns;         /* one-way latency between nodes */
    double rdma_post_ns;            /* scalar cost of posting one RDMA op */
    double batchwrite_task_ns;      /* AICPU time per task: a BatchWrite item or an RDMA op */
    double nic_message_ns;          /* NIC time per RDMA message beyond its bytes */
    double crosscore_latency_ns;    /* AIC<->AIV flag propagation */
    double barrier_latency_ns;      /* added by a cross-rank barrier */
} engine_hw;

/* What the engine prices with, derived from an engine_hw once per run:
 * latencies in ps (rounded as the engine rounds them) and rates in ps per
 * byte. The one place they are computed (engine_rates_of), so an analysis
 * that attributes time to them (the critical path) cannot drift from the
 * model that spent it. */
typedef struct engine_rates {
    double ps_per_cycle;            /* one AI core cycle */
    uint64_t scalar_ps, gm_read_ps, gm_write_ps, vec_latency_ps;
    uint64_t mte_latency_ps, hccs_latency_ps, rdma_latency_ps, rdma_post_ps;
    uint64_t hccs_read_held_ps;     /* an MTE read of a peer holds its queue this long */
    uint64_t batch_task_ps;         /* the AICPU's time per task */
    uint64_t nic_message_ps;        /* the NIC's time per message beyond its bytes */
    uint64_t hccs_transfer_ps;      /* an HCCS port's time per transfer beyond its bytes */
    uint64_t xcore_latency_ps, barrier_latency_ps;
    double mte_ps_per_byte;         /* one core's MTE queue, local GM */
    double mte_hccs_ps_per_byte;    /* the same with a peer's GM at one end */
    double vec_ps_per_byte, ps_per_mac;
    double hbm_ps_per_byte, hccs_link_ps_per_byte, hccs_port_ps_per_byte, nic_ps_per_byte;
    double cross_plane_ps_per_byte;   /* an NPU's share of the spine, each way */
} engine_rates;
/* The rates *hw gives (timing.c). */
void engine_rates_of(const engine_hw *hw, engine_rates *r);

/* Fills *hw with every parameter's default (engine_hw_param.def): the timing model `npurr hw`
 * prints. */
void engine_hw_defaults(engine_hw *hw);
/* Parse key=value lines ('#' comments) over *hw. Unknown keys are errors. */
int engine_hw_load(engine_hw *hw, const char *path, char *err, size_t errlen);

/* Sets one parameter of *hw by key (or old key) from its text value, checked against the
 * accepted range: ENGINE_OK, or ENGINE_ERR with err naming key and value. */
int engine_hw_set(engine_hw *hw, const char *key, const char *value, char *err, size_t errlen);
/* Writes every parameter as key=value lines, in a fixed order. */
void engine_hw_write(const engine_hw *hw, FILE *out);
/* The shortest text that reads back as v (0.8779, not 0.87790000000000001): how a
 * parameter's value is written, so a fit's output and a default compare as text. */
const char *engine_hw_text(double v, char buf[32]);

/* One timing parameter as `npurr hw` and `npurr info` describe it. Keys say
 * their unit; old_key is the name older traces and files use (roce_gbps
 * was in GB/s, not Gb/s), still accepted wherever a key is read. */
typedef struct engine_hw_param {
    const char *key;
    const char *old_key;      /* NULL if the key was never renamed */
    size_t offset;            /* of the double in engine_hw */
    double def;
    double min, max;          /* accepted range: positive and physically sensible */
    const char *unit;
    const char *what;         /* what it models */
    const char *source;       /* where the default comes from */
    int fit;                  /* ENGINE_HW_SOURCED, _FITTED or _UNIDENTIFIED */
    double est;               /* the sourced estimate: a fit's documented start, the centre of
                               * its box (def itself unless fitted) */
    unsigned uses;            /* ENGINE_USED_* bits of what it prices; 0: every run */
} engine_hw_param;
/* engine_hw_param.fit: the default is its source's figure; fitted to the
 * training rows (npurr calibrate, tools/fit_timing.sh); or tried and not
 * identified by them (a fit took it to its box's edge, or moving it 2x
 * moves no training row by 1 %), so it keeps its sourced estimate. */
enum { ENGINE_HW_SOURCED = 0, ENGINE_HW_FITTED = 1, ENGINE_HW_UNIDENTIFIED = 2 };
/* What a run priced, engine_resources_used's bits: a core's copy to or from
 * a peer's GM or a BatchWrite item inside the node (HCCS), a read of a
 * peer's GM (HCCS_READ), an RDMA operation or BatchWrite item to another
 * node (NIC), a task of a rank's AICPU (AICPU). engine_hw_param.uses says
 * which a parameter prices (0: every run): a run without them does not
 * depend on it. */
enum { ENGINE_USED_HCCS = 1, ENGINE_USED_HCCS_READ = 2, ENGINE_USED_NIC = 4,
       ENGINE_USED_AICPU = 8 };
/* How many timing parameters there are (the index range of engine_hw_param_at). */
size_t engine_hw_count(void);
/* Parameter i (< engine_hw_count) in `npurr hw`'s order; static, never freed. */
const engine_hw_param *engine_hw_param_at(size_t i);
/* By key or old key; NULL if unknown. */
const engine_hw_param *engine_hw_find(const char *key);
/* Parameter p's value in *hw: the one way to read a parameter the table
 * names (no offset arithmetic outside timing.c). */
double engine_hw_get(const engine_hw *hw, const engine_hw_param *p);
/* Sets parameter p of *hw to v, checked against p's accepted range:
 * ENGINE_OK, or ENGINE_ERR with err naming p's key and v. */
int engine_hw_put(engine_hw *hw, const engine_hw_param *p, double v, char *err, size_t errlen);

/* ---------------------------------------------------------------- config */

typedef enum { CHIP_910B2 = 0, CHIP_910B4 = 1 } engine_chip;

/* How payload bytes are kept. REF (the default): bytes that data movement
 * wrote are references to their origin (a generated input row), so host
 * memory follows events and metadata, not payload. FULL: every byte is
 * stored, as a flat memory would; the event stream is identical. */
typedef enum { PAYLOAD_REF = 0, PAYLOAD_FULL = 1 } engine_payload;

typedef struct engine_config {
    int nodes;                 /* >= 1 */
    int npus_per_node;         /* 1..8, default 8 (HCCS full mesh of 8) */
    engine_chip chip;          /* 910B2: 24 AIC + 48 AIV; 910B4: 20 + 40 */
    uint64_t seed;             /* tie-break permutation and jitter */
    double jitter;             /* 0..0.5: seeded +-fraction on transfer durations */
    uint64_t watchdog_ps;      /* stop when virtual time passes this; 0 = none */
    engine_payload payload;    /* REF (default) or FULL */
    /* PCT-style schedule perturbation (engine/sched_delay.c): pct_points
     * scheduling steps, drawn from seed over 1..pct_span, each delay the
     * core that takes that step by pct_delay_ps. 0 points = none. */
    uint32_t pct_points;
    uint64_t pct_span;
    uint64_t pct_delay_ps;
    engine_hw hw;
    /* Replay of a run recorded before the AICPU posted RDMA operations
     * (no hw.nic_message_ns in its header): the core rings the NIC itself,
     * as the engine that recorded it did. The engine now always does, so
     * this changes nothing; kept for the replayer that sets it. */
    int rdma_posted_by_core;
    /* Replay of a run recorded while the rank's AICPU posted every RDMA
     * operation an AI core asked for (one batchwrite_task_ns task each,
     * engine/dev_comm.c): set it so the run behaves as that engine did
     * (the replayer does for a run whose header lacks config.rdma_post).
     * Never set for a new run: an AI core posts its own work requests (the
     * AIV dataplane of sgl-kernel-npu PR #209's AIVRDMAPostSend). */
    int rdma_posted_by_aicpu;
} engine_config;

/* The --payload text of p ("ref", "full"); static. */
const char *engine_payload_name(engine_payload p);
/* The payload mode named text ("ref" or "full") into *out: 0, or -1 when text names none. */
int engine_payload_parse(const char *text, engine_payload *out);

/* Fills *cfg with the defaults of a run: one node of 8 NPUs, 910B2, seed 0, no jitter or PCT
 * delays, the default watchdog, REF payload, the default timing model. */
void engine_config_defaults(engine_config *cfg);

/* The engine configuration table (config.c): chips and the ranges of the
 * numeric settings, read by option parsing, the trace header and replay. */
typedef struct engine_chip_info {
    engine_chip chip;
    const char *name;          /* in --chip and the trace header: "910B2" */
    int aic, aiv;              /* AI cores per NPU */
} engine_chip_info;
/* NULL when chip is not in the table. */
const engine_chip_info *engine_chip_get(engine_chip chip);
/* The name of chip ("910B2"), static; "?" when chip is not in the table. */
const char *engine_chip_name(engine_chip chip);
/* By name, case-insensitive; 0, or -1 when no chip has that name. */
int engine_chip_parse(const char *name, engine_chip *out);
/* Every chip's name, for messages: "910B2 or 910B4". */
const char *engine_chips_text(void);

typedef enum {
    ENGINE_LIMIT_NODES, ENGINE_LIMIT_NPUS_PER_NODE, ENGINE_LIMIT_JITTER, ENGINE_LIMIT_COUNT
} engine_config_limit_id;
typedef struct engine_config_limit {
    const char *option;        /* "--nodes" */
    const char *key;           /* in the trace header: "config.nodes" */
    double lo, hi;             /* accepted, both included */
    const char *note;          /* why the bound, for messages: " (HCCS full mesh of 8)" */
} engine_config_limit;
/* The range of setting id (its option, header key, bounds and why); static. */
const engine_config_limit *engine_config_limit_get(engine_config_limit_id id);
/* cfg against the table: ENGINE_OK, or ENGINE_ERR with err naming the option. */
int engine_config_check(const engine_config *cfg, char *err, size_t errlen);

/* Builds an engine for *cfg (checked first: engine_config_check): the cluster, its memories and
 * cores, nothing launched. ENGINE_OK with *out, which the caller frees with engine_destroy;
 * ENGINE_ERR with err. */
int engine_create(const engine_config *cfg, engine **out, char *err, size_t errlen);
/* Frees e and everything it holds (GM, cores, stacks, objects, strings); NULL is ignored. */
void engine_destroy(engine *e);

/* Ranks in the cluster: nodes x NPUs per node. */
int engine_num_ranks(const engine *e);
/* Cube cores (AIC) per rank: 24 on 910B2, 20 on 910B4. */
int engine_num_aic(const engine *e);
/* Vector cores (AIV) per rank: 48 on 910B2, 40 on 910B4. */
int engine_num_aiv(const engine *e);
int engine_cores_per_rank(const engine *e);  /* aic + aiv; core index < num_aic is an AIC */
/* The configuration e was created with; owned by e. */
const engine_config *engine_get_config(const engine *e);

/* ---------------------------------------------------------------- memory */

/* Zero-filled GM on one rank; name appears in faults and the index. */
int engine_gm_alloc(engine *e, int rank, uint64_t bytes, const char *name, gm_t *out,
                    char *err, size_t errlen);
/* Same offset on every rank (the symmetric heap). Returns rank 0's address. */
int engine_sym_alloc(engine *e, uint64_t bytes, const char *name, gm_t *out,
                     char *err, size_t errlen);
/* Host view of [p, p+bytes): NULL if not inside one allocation. For setting up
 * inputs and checking small outputs; kernels never use it. The view is
 * literal: references in the range are materialized (their bytes generated
 * and stored), so large payload ranges are compared with engine_gm_equal. */
void *engine_gm_host(engine *e, gm_t p, uint64_t bytes);

/* An input tensor: rows of row_bytes at p, row i being what fn(params, i, out)
 * writes (row_bytes bytes; engine_row_fn, npurr/types.h). params
 * (params_size bytes) is copied. In REF mode the rows are references
 * generated when something computes on them; in FULL mode they are written
 * at once. ENGINE_OK, or ENGINE_ERR with err when the range is not in one
 * allocation. */
int engine_gm_generate(engine *e, gm_t p, uint64_t rows, uint64_t row_bytes, engine_row_fn fn,
                       const void *params, size_t params_size, char *err, size_t errlen);
/* Copies [p, p+bytes) to out without materializing it. ENGINE_ERR if out of bounds. */
int engine_gm_read(engine *e, gm_t p, void *out, uint64_t bytes);
/* 1 when [a, a+bytes) and [b, b+bytes) hold the same bytes, 0 when not (the
 * first differing byte's index in *diff, if diff), -1 if either is out of
 * bounds. Two references to the same bytes of the same origin are equal
 * without being generated; anything else is compared as bytes. */
int engine_gm_equal(engine *e, gm_t a, gm_t b, uint64_t bytes, uint64_t *diff);
/* The same against host bytes. */
int engine_gm_equal_host(engine *e, gm_t a, const void *want, uint64_t bytes, uint64_t *diff);
/* The same against what engine_gm_generate(p, rows, row_bytes, fn, params)
 * would hold: references to an origin of the same generator and parameters
 * at the same row are equal without being generated, as they are the same
 * bytes by construction; anything else is generated and compared. */
int engine_gm_equal_generated(engine *e, gm_t p, uint64_t rows, uint64_t row_bytes,
                              engine_row_fn fn, const void *params, size_t params_size,
                              uint64_t *diff);
/* GM as host pointers (host_addr.c), for front ends whose kernels hold GM
 * addresses as plain pointers (the Ascend C headers' GM_ADDR): the host
 * address of p in its allocation's mapping (NULL when p is in none), not
 * materialized (bytes held as references read as whatever the mapping
 * holds, so only what the host wrote or a scalar store made literal is
 * meaningful to read through it). */
void *engine_gm_host_addr(engine *e, gm_t p);
/* The GM address of host pointer p into *out: 1, or 0 when p is in no
 * allocation's mapping. */
int engine_gm_from_host(const engine *e, const void *p, gm_t *out);

/* An HCCL group as Ascend C kernels see it (GetHcclContext<group>,
 * Hccl::GetWindowsInAddr): a context every rank has at the same offset
 * (symmetric; its bytes are the host's to fill: the kernel reads them
 * in place), and symmetric in and out windows of win_size bytes. */
#define ENGINE_HCCL_GROUPS 4
typedef struct engine_hccl {
    int declared;
    gm_t context, win_in, win_out;   /* rank 0's addresses of symmetric allocations */
    uint64_t win_size;
} engine_hccl;
/* Declares HCCL group id (0..ENGINE_HCCL_GROUPS-1) of e (hccl.c): ENGINE_OK,
 * or ENGINE_ERR with err when id or an address is bad. */
int engine_hccl_group(engine *e, int id, const engine_hccl *g, char *err, size_t errlen);

/* A GM tensor a kernel named for the user (`record --dump NAME@RANK`):
 * where it is, its bytes, and what its elements are as the kernel says
 * (dtype is the plugin ABI's npurr_dtype; the engine only keeps it). */
typedef struct engine_tensor {
    const char *name;          /* owned by the engine */
    gm_t addr;
    uint64_t bytes;
    int dtype, ndim;
    uint64_t shape[8];
} engine_tensor;
/* Names [t->addr, + t->bytes) as tensor t->name (copied; the range must lie
 * in one allocation; the same name on the same rank again replaces it):
 * ENGINE_OK, or ENGINE_ERR with err. */
int engine_name_tensor(engine *e, const engine_tensor *t, char *err, size_t errlen);
/* The tensor named name on rank into *out: 1; else, when an allocation of
 * that name lives on rank, that allocation as bytes (dtype 0, one
 * dimension): 1; 0 when neither exists. */
int engine_tensor_find(engine *e, const char *name, int rank, engine_tensor *out);
/* Calls fn with the name of every tensor on rank, in naming order, then
 * of every allocation there no tensor of its name stands for (what
 * engine_tensor_find finds on rank). */
void engine_tensor_names(engine *e, int rank, void (*fn)(void *ctx, const char *name), void *ctx);

/* How memory is held now: the logical GM (every allocation), the bytes held
 * as references (GM and local memories) in how many extents, and the bytes
 * written literally so far by copies, computations, generators in FULL mode
 * and host views, capped at each memory's size (scalar stores of a few
 * bytes are not counted): what the host's pages hold beyond references.
 * A split process counts the ranks it owns; once a split run has ended,
 * every process's figures summed. */
typedef struct engine_memory {
    uint64_t logical_gm;
    uint64_t reference_bytes, reference_extents;
    uint64_t literal_bytes;
} engine_memory;
/* How memory is held now, into *m (see engine_memory). */
void engine_memory_get(const engine *e, engine_memory *m);

/* ---------------------------------------------------------- named objects */

/* Named GM words and rings: engine_obj_kind and engine_ring_kind
 * (npurr/types.h); readers turn a ring kind's text back with
 * engine_ring_kind_from_name. */
/* The text of a ring kind ("local", "hccs", "rdma"; "" for RING_NONE); static. */
const char *engine_ring_kind_name(engine_ring_kind kind);
/* RING_NONE for NULL, "" or a text no kind has. */
engine_ring_kind engine_ring_kind_from_name(const char *name);

typedef struct engine_object {
    uint32_t id;          /* >= 1 */
    engine_obj_kind kind;
    uint32_t name;        /* string id */
    int rank;             /* where the word or buffer lives */
    gm_t addr;
    uint32_t width;       /* bytes of a word: 4 or 8 */
    uint64_t size;        /* buffer bytes; ring capacity */
    uint32_t ring;        /* for head/tail: the ring object id */
    uint32_t head, tail;  /* for a ring: its word object ids */
    int producer_rank, consumer_rank; /* for a ring; -1 unknown */
    uint32_t role;        /* string id of the ring's level, engine_ring_kind_name(ring_kind) */
    engine_ring_kind ring_kind; /* for a ring and its head/tail words */
} engine_object;

/* Names the GM word of width bytes at addr as an object of kind (waits,
 * reports and the trace say name). Returns its object id (>= 1): the one it
 * already has when the word is named. */
uint32_t engine_name_word(engine *e, gm_t addr, uint32_t width, engine_obj_kind kind,
                          const char *name);
/* Declares a ring: capacity in the same unit the kernel stores head/tail in. */
uint32_t engine_declare_ring(engine *e, const char *name, engine_ring_kind kind, gm_t head,
                             gm_t tail, uint32_t width, uint64_t capacity,
                             int producer_rank, int consumer_rank);
/* Object id (1..engine_object_count); owned by e, valid until the next declaration. NULL for an
 * unknown id. */
const engine_object *engine_object_get(const engine *e, uint32_t id);
/* How many objects are declared: ids run 1..count. */
uint32_t engine_object_count(const engine *e);

/* ---------------------------------------------------------------- launch */

/* Launch fn on block_dim cores of every rank, starting at the first free
 * core of that type; MIX launches block_dim AIC and 2*block_dim AIV (one
 * cube and two vector cores per group, GetSubBlockIdx 0/1). args is passed
 * unchanged to every core and must outlive engine_run; per-rank data is
 * found through GetRank(). */
int engine_launch(engine *e, const char *name, engine_kernel_fn fn, const void *args,
                  int block_dim, engine_core_type type, char *err, size_t errlen);

/* ---------------------------------------------------------------- events */

typedef enum {
    EV_KERNEL_BEGIN = 1, EV_KERNEL_END,
    EV_XFER_ISSUE, EV_XFER_DONE,        /* sub = engine_xfer; addr dst, aux src (for remote
                                           stores and RDMA atomics: the value/operand), len */
    EV_FLAG_SET,                         /* sub = hard event, value = id, aux = fire time */
    EV_FLAG_WAIT_BEGIN, EV_FLAG_WAIT_END,
    EV_XCORE_SET, EV_XCORE_WAIT_BEGIN, EV_XCORE_WAIT_END,
    EV_GM_WAIT_BEGIN, EV_GM_WAIT_END,    /* sub = cond, aux = expected, value = seen */
    EV_GM_LOAD, EV_GM_STORE,             /* scalar GetValue / SetValue on GM */
    EV_RING_HEAD, EV_RING_TAIL,          /* named head/tail stores; object = ring word */
    EV_ATOMIC,                           /* sub = engine_atomic, value = operand, aux = old */
    EV_BARRIER_BEGIN, EV_BARRIER_END,
    EV_PIPE_WAIT_BEGIN, EV_PIPE_WAIT_END,/* PipeBarrier<PIPE_ALL> on the scalar unit */
    EV_ROLE,                             /* value = role string id */
    EV_NOTE,                             /* value = number, aux = key string id */
    EV_FAULT,                            /* value = message string id */
    EV_BLOCKED,                          /* deadlock report: one per blocked core */
    EV_RUN_END,                          /* value = engine_outcome */
    EV_KIND_COUNT
} engine_event_kind;

typedef enum {
    XFER_MTE2 = 1, XFER_MTE3, XFER_MTE1, XFER_FIX, XFER_VEC, XFER_CUBE,
    XFER_HCCS_PUT, XFER_HCCS_GET, XFER_RDMA_WRITE, XFER_RDMA_ATOMIC, XFER_BATCHWRITE,
    XFER_REMOTE_STORE, XFER_KIND_COUNT
} engine_xfer;

typedef enum {
    OUTCOME_RUNNING = 0, OUTCOME_COMPLETED = 1, OUTCOME_DEADLOCK = 2, OUTCOME_WATCHDOG = 3,
    OUTCOME_FAULT = 4, OUTCOME_INTERRUPTED = 5
} engine_outcome;

typedef struct engine_event {
    uint64_t seq;        /* global, dense from 1, in execution order */
    uint64_t time;       /* virtual picoseconds */
    uint64_t addr;       /* dst address (gm_t raw or local_t raw) or waited word */
    uint64_t len;        /* bytes for transfers */
    int64_t value;
    int64_t aux;
    uint64_t link;       /* XFER_DONE: issue seq; *_WAIT_END: waker seq; 0 none */
    uint32_t rank;
    uint32_t core;       /* index within the rank: < num_aic is AIC */
    uint32_t site;       /* call site id, 0 = none */
    uint32_t object;     /* named object id, 0 = none */
    uint32_t peer;       /* WAIT_END: waker track id + 1 (0 none); transfers: peer rank */
    uint8_t kind;        /* engine_event_kind */
    uint8_t pipe;        /* engine_pipe of the track */
    uint8_t sub;         /* engine_xfer / hard event / engine_cond / engine_atomic */
    uint8_t pad;
} engine_event;

/* A track is (rank, core, pipe); its id is dense. */
static inline uint32_t engine_track_id(uint32_t cores_per_rank, uint32_t rank, uint32_t core,
                                       uint32_t pipe) {
    return (rank * cores_per_rank + core) * PIPE_COUNT + pipe;
}

typedef struct engine_site {
    uint32_t id;
    const char *file;
    int line;
    const char *func;
} engine_site;

/* Checker hooks (engine/hooks.c): what a happens-before checker needs and the
 * event stream does not carry, because it is not an event (a WaitFlag on a
 * pipe, a barrier that did not wait, a UB scalar access) or is implied by
 * one (the byte ranges a transfer reads and writes). They are shown only to
 * an observer that sets on_hook and never change the run or its events. */
typedef enum {
    HOOK_ACCESS = 1,     /* one range of a transfer (seq = its issue) or a UB scalar access */
    HOOK_FLAG_WAIT,      /* WaitFlag: sub = hard event, len = id */
    HOOK_PIPE_BARRIER,   /* PipeBarrier(PIPE_ALL): the scalar unit waits for every pipe */
    HOOK_RDMA_QUIET,     /* RdmaQuiet: the scalar unit waits for the core's RDMA ops */
    HOOK_XCORE_POST,     /* CrossCoreSetFlag reaches core `len` (seq = the set event) */
    HOOK_XCORE_WAIT,     /* CrossCoreWaitFlag(sub) consumed len sets */
    HOOK_KERNEL_RETURN   /* the kernel function returned (before its leftover-flag check) */
} engine_hook_kind;

typedef struct engine_hook {
    uint8_t kind;        /* engine_hook_kind */
    uint8_t pipe;        /* ACCESS: the pipe executing it */
    uint8_t write;       /* ACCESS: 1 write, 0 read */
    uint8_t atomic;      /* ACCESS: an accumulating write (SetAtomicAdd, remote atomic) */
    uint32_t rank, core; /* the core that issued it */
    uint32_t site;       /* transfers: the call site id; 0 when only file:line is known */
    const char *file;    /* the kernel call site (hooks never intern a site: ids would shift) */
    int line;
    int32_t sub;
    uint64_t seq;        /* the event it belongs to; for a UB scalar access the core's last */
    uint64_t addr;       /* ACCESS: gm_t raw or local_raw */
    uint64_t len;
} engine_hook;

/* The observer sees every declaration before the first event that refers to
 * it, and every event in execution order. Any callback may be NULL. */
typedef struct engine_observer {
    void *ctx;
    void (*on_string)(void *ctx, uint32_t id, const char *text);
    void (*on_site)(void *ctx, const engine_site *site);
    void (*on_object)(void *ctx, const engine_object *obj);
    void (*on_event)(void *ctx, const engine_event *ev);
    void (*on_hook)(void *ctx, const engine_hook *h);
    /* A scheduling segment begins: the events until the next call come from
     * the queue item, or the step a core took without a switch, of this
     * (time, tie key). The key depends on the core and its own count of
     * items only. Segments come in the order the scheduler pops them: time
     * never goes back, and at one time a segment may queue work for that
     * same time with a lower key, which comes next. So event streams of a
     * run split over processes merge by comparing their next segments' keys,
     * as a scheduler pops queues, not by sorting. Optional. */
    void (*on_segment)(void *ctx, uint64_t time, uint64_t key);
    /* A run recorded where it runs (engine_split_record): with this set,
     * this process's own events come to on_event as they are made, with
     * the process's own numbers (seq, links, run-time string and site
     * ids); after each window is merged the engine calls on_renumber, and
     * the observer passes each event shown since its last call, in order,
     * to fix, which gives it the run's numbers and returns 0, or returns 1:
     * drop it (the run was cut before it). Without it the engine holds the
     * window's events and shows them numbered, a copy each. Optional. */
    void (*on_renumber)(void *ctx, int (*fix)(void *fix_ctx, engine_event *ev), void *fix_ctx);
} engine_observer;

/* The pipe a hard event's SetFlag waits for (consumer 0) or WaitFlag holds
 * (consumer 1); -1 if ev is not a hard event. */
int engine_hard_event_pipe(int ev, int consumer);
/* Name and start of the GM allocation holding p (NULL if none), for reports. */
const char *engine_gm_alloc_name(engine *e, gm_t p, gm_t *base);

/* Installs obs (copied; NULL: none) as what sees every declaration and event from now on; its
 * ctx must outlive the run. */
void engine_set_observer(engine *e, const engine_observer *obs);
/* The observer in place (all NULL if none), so another can wrap it. */
engine_observer engine_get_observer(const engine *e);

/* Two observers as one: each declaration, event, hook and segment goes to
 * inner, then to also; either may leave any callback NULL. t must outlive
 * the run. */
typedef struct engine_tee {
    engine_observer inner;
    engine_observer also;
} engine_tee;
/* The observer that forwards to t->inner, then to t->also. */
engine_observer engine_tee_observer(engine_tee *t);
/* Interned string id (1..engine_string_count); owned by e. "" for 0 or an
 * unknown id. */
const char *engine_string(const engine *e, uint32_t id);
uint32_t engine_string_count(const engine *e);   /* ids are 1..count */

/* The name of an engine_event_kind ("xfer_issue", ...) as the trace and SQL
 * show it; static, "unknown" when kind is none. */
const char *engine_event_kind_name(int kind);
/* The name of an engine_xfer ("mte2", "rdma_write", ...); static, "unknown"
 * when xfer is none. */
const char *engine_xfer_name(int xfer);
/* The name of an engine_pipe ("MTE2", ..., "ALL"); static, "unknown" when
 * pipe is none. */
const char *engine_pipe_name(int pipe);
/* The name of a wait condition ("==", ">=", ...); static, "?" when cond is
 * none. */
const char *engine_cond_name(int cond);
/* The name of an engine_outcome ("completed", "deadlock", ...); static,
 * "unknown" when outcome is none. */
const char *engine_outcome_name(int outcome);
/* The name of a hard event ("MTE2_V", ...); static, "unknown" when ev is
 * none. */
const char *engine_hard_event_name(int ev);

/* ---------------------------------------------------------------- running */

typedef struct engine_result {
    engine_outcome outcome;
    uint64_t end_time;        /* virtual ps of the last event */
    uint64_t events;          /* events emitted */
    uint64_t stall_ps;        /* summed duration of all waits */
    char message[ENGINE_ERRLEN]; /* fault text, or first line of the deadlock report */
} engine_result;

/* Runs every launched kernel to an outcome. Returns ENGINE_OK when the run
 * itself could be carried out (whatever the outcome). */
int engine_run(engine *e, engine_result *res, char *err, size_t errlen);

/* ---------------------------------------------------------------- split runs */

/* One run over several processes (engine/split/partition.c, engine/split/merge.c). Each
 * process builds the same engine and kernel setup, then engine_split names
 * its part: it owns whole nodes, a contiguous block of them, and starts only
 * their cores. Everything that crosses nodes travels one wire latency or more
 * (RDMA arrivals and acks, BarrierAll arrivals), so the processes advance in
 * windows no longer than that lookahead: agree on the earliest pending time
 * T, run every item before T + lookahead, exchange what crossed, repeat.
 * Nothing is ever delivered in a process's past and nothing rolls back.
 * Process 0 merges the parts' event streams window by window, popping the
 * stream whose next scheduling segment has the smaller (time, tie key), as
 * one scheduler pops one queue, and renumbers seqs, links, run-time strings
 * and sites. Its observer sees exactly the stream one process would give
 * (every field, every seq); the others' observers see nothing. The moving
 * parts are the transport's: MPI in npurr, threads in the tests. */
typedef struct engine_buf {
    uint8_t *p;
    size_t n, cap;
} engine_buf;
/* Frees b's bytes and empties it (b itself is the caller's). */
void engine_buf_free(engine_buf *b);
void engine_buf_put(engine_buf *b, const void *p, size_t n);   /* appends (grows; aborts out of memory) */

enum { ENGINE_REDUCE_MIN = 1, ENGINE_REDUCE_MAX, ENGINE_REDUCE_SUM };
typedef struct engine_transport {
    void *ctx;
    int index, count;         /* this process, how many (count >= 1) */
    /* Every process: v[0..n) combined over all processes by op. */
    int (*allreduce)(void *ctx, uint64_t *v, int n, int op, char *err, size_t errlen);
    /* Every process: out[q] goes to process q, in[q] receives from q
     * (in[] buffers are reset and filled). */
    int (*alltoall)(void *ctx, const engine_buf *out, engine_buf *in, char *err, size_t errlen);
    /* Process 0 receives all[q] = mine of process q; all is NULL elsewhere. */
    int (*gather)(void *ctx, const engine_buf *mine, engine_buf *all, char *err, size_t errlen);
} engine_transport;

/* Before engine_run, after the kernel's setup: this engine runs part
 * t->index of t->count (t must outlive the run). ENGINE_ERR with err when
 * the run cannot be split: more processes than nodes, --pct-points (its
 * steps are counted across the whole run), an observer with checker hooks
 * (--check races), a break point. */
int engine_split(engine *e, const engine_transport *t, char *err, size_t errlen);
/* Recording where the events happen (issue 29): with a sink on every
 * process, each process's observer sees the events of its own nodes,
 * numbered as one process numbers them (seqs, links, run-time string and
 * site ids), and every declaration of the run; process 0's also the run's
 * end event, and no process another's events. Each process merges every
 * window itself: its own stream, and the others' skeletons (segments and
 * declarations, events as counts), instead of process 0 merging every
 * event; an observer with on_renumber takes its own events as they are
 * made and has them renumbered after each window. After each window sink->window gets the number of events merged so
 * far (final: the run's last, its end event included) and may fill out,
 * which reaches process 0's sink->receive, process by process, with the
 * next window's exchange (the final one at once). Call after
 * engine_split, before engine_run, on every process or on none. */
typedef struct engine_split_sink {
    void *ctx;
    void (*window)(void *ctx, uint64_t events, int final, engine_buf *out);
    void (*receive)(void *ctx, int from, const uint8_t *p, size_t n);
} engine_split_sink;
/* Has every process record its own events through sink, as above. Returns
 * ENGINE_OK, or ENGINE_ERR with err when the engine is not split or already
 * ran; sink and its ctx stay the caller's and must outlive engine_run. */
int engine_split_record(engine *e, const engine_split_sink *sink, char *err, size_t errlen);
/* 1 when rank's cores and GM live in this process (always, unsplit). */
int engine_rank_local(const engine *e, int rank);
/* ENGINE_ERR with err when count processes cannot each own whole nodes. */
int engine_split_fits(int nodes, int count, char *err, size_t errlen);
/* The first process's part (the nodes [first, end)) for count processes. */
void engine_split_nodes(int nodes, int count, int index, int *first, int *end);

/* Asks a running engine to stop at the next event (safe from a signal
 * handler); the outcome becomes OUTCOME_INTERRUPTED. */
void engine_request_stop(engine *e);

/* Stop just before emitting event seq (0 = never): the engine calls fn from
 * inside the core that issues it, on that core's stack, so a debugger's
 * backtrace shows the kernel source line. */
typedef void (*engine_break_fn)(void *ctx, const engine_event *ev);
/* Sets the break point: before event seq (0: none), fn(ctx, ev) is called on the issuing core. */
void engine_set_break(engine *e, uint64_t seq, engine_break_fn fn, void *ctx);

/* When the cores holding role first took it and last left it (SetRole, or
 * their kernel's end), in virtual ps: the span of a kernel phase
 * (kernels.h kernel_phase). 1, or 0 if no core held it. In a split run,
 * the roles of this process's cores only. */
int engine_role_span(const engine *e, const char *role, uint64_t *begin, uint64_t *end);
/* The ENGINE_USED_* bits of what the run has priced so far (after
 * engine_run: all of it), so a calibration knows which timing parameters a
 * row's time cannot depend on. */
unsigned engine_resources_used(const engine *e);

/* The deadlock / watchdog / fault report: every blocked core, what it waits
 * for (object, expected vs current value), who last wrote it, and the notes
 * its kernel published (role, channel, cached head, credits, ...). After a
 * split run's deadlock or watchdog stop, process 0 writes every process's
 * cores (gathered at the run's end), each writer by its merged seq, or by
 * its time alone when nothing was merged (no trace). */
void engine_write_report(const engine *e, FILE *out);

/* Introspection, for the replayer's gdb commands. */
typedef struct engine_core_state {
    int rank, core, launched, finished, blocked;
    int running;              /* the core executing right now (inside a break) */
    int faulted;              /* stopped by a hardware fault */
    const char *kernel;
    const char *role;
    uint64_t now;             /* the core's local virtual time */
    char waiting_on[256];     /* human-readable, "" when not blocked */
} engine_core_state;
int engine_core_count(const engine *e);   /* ranks * cores_per_rank */
/* Core index's state (0..engine_core_count) into *st; its strings are owned by e. */
void engine_core_state_get(const engine *e, int index, engine_core_state *st);
uint64_t engine_now(const engine *e);     /* time of the event being processed */
uint64_t engine_seq(const engine *e);     /* seq of the last emitted event */
/* For a report of a crash inside device code: 1 when a core of e is
 * executing its kernel right now (*rank, *core its place), 0 when none is
 * (the scheduler or host code runs); *last is the call site of the last
 * event that had one (id 0 when none). */
int engine_running_core(const engine *e, int *rank, int *core, engine_site *last);
/* Scheduling steps taken so far (the unit of pct_span). */
uint64_t engine_sched_steps(const engine *e);
/* Reads a named word's current value (rings in gdb, reports). */
int64_t engine_word_value(engine *e, uint32_t object_id);
/* A call site by id (file, line, function); 0 if unknown. */
int engine_site_get(const engine *e, uint32_t id, engine_site *out);
/* Stack pointer saved by a suspended core's last switch (x86_64 layout in
 * engine/coro_x86_64.S: control words, r15, r14, r13, r12, rbx, rbp, return
 * address), so a debugger can unwind it; NULL if it never ran or is running. */
void *engine_core_saved_sp(const engine *e, int index);
/* Where a debugger finds a core's live context while the process is
 * stopped, with no code run in it (the gdb extension of `npurr replay`
 * reads these; gdb cannot call functions on every CPU). The addresses stay
 * valid for the engine's lifetime; what they hold changes as cores run. */
typedef struct engine_core_slots {
    void *const *saved_sp;       /* the stack pointer its last switch saved */
    void *const *stack;          /* its mmap'd stack (guard page first); NULL until it runs */
    const size_t *stack_size;    /* bytes of that mapping */
} engine_core_slots;
/* Where core index's context lives, into *out (see engine_core_slots). */
void engine_core_debug_slots(const engine *e, int index, engine_core_slots *out);
/* The seq the engine stops before (engine_set_break); a debugger writes it
 * to move the break while the process is stopped. */
uint64_t *engine_break_seq_slot(engine *e);

#endif

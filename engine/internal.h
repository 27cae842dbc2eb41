/*
 * internal.h - structures shared by the engine's source files. Not a public
 * header: the rest of npurr sees engine.h and device.h only.
 *
 * Ownership: an engine owns ranks; a rank owns its GM allocations, named
 * words, watchers and shared resources (HBM, NIC, AICPU); a core owns its
 * coroutine, pipes, flags and local memories. Transfers live in a pool and
 * are referenced from the event queue by index.
 */
#ifndef NPURR_ENGINE_INTERNAL_H
#define NPURR_ENGINE_INTERNAL_H

#include "engine.h"
#include "npurr/device.h"

#include <stdarg.h>
#include <stdbool.h>

/* ------------------------------------------------------------ coroutines */
typedef struct coro {
    void *sp;             /* saved stack pointer while suspended */
    void *stack;          /* mmap'd region including the guard page */
    size_t stack_size;
    void *asan_fake;      /* ASan fiber bookkeeping */
    const void *asan_bottom;
    size_t asan_size;
} coro;

int coro_init(coro *c, size_t stack_size, void (*entry)(void *), void *arg);
void coro_free(coro *c);
/* Saves the current context into from and resumes to. */
void coro_switch(coro *from, coro *to);
void coro_entered(coro *from);

/* ------------------------------------------------------------ resources */
/* A shared bandwidth resource: a calendar of booked intervals (resource.c).
 * free_at serves resources that work strictly in posting order (the AICPU). */
typedef struct resource {
    double ps_per_byte;
    uint64_t ps_per_op;   /* fixed occupancy of each booking (a NIC's per-message cost) */
    uint64_t free_at;
    uint64_t *busy;       /* [start, end) pairs, sorted, disjoint */
    uint32_t n, cap;
} resource;

/* Books bytes at the first free gap at or after start; returns its end. now
 * is the engine's current time (nothing can be booked before it). */
uint64_t resource_reserve(resource *r, uint64_t now, uint64_t start, uint64_t bytes);
uint64_t resource_duration(const resource *r, uint64_t bytes);   /* what bytes occupy it */
void resource_free(resource *r);

/* ------------------------------------------------------------ memory */
/* A memory the kernels address (a GM allocation, a core's UB/L1/L0): literal
 * bytes in a lazily backed mapping, plus references to origin bytes for the
 * ranges that data movement filled (payload.c). */
struct ref_block;
typedef struct mseg {
    uint8_t *host;        /* zero-filled, backed only where literal bytes were written */
    uint64_t size;
    struct ref_block **blocks;   /* one per 64 KiB; NULL until the first reference */
    uint64_t n_blocks;
    uint64_t n_ext;       /* extents in all blocks: 0 = plain literal memory */
    uint64_t literal_bytes;   /* written literally so far (huge-page decision) */
    uint8_t mapped, huge;
} mseg;

/* An immutable byte source: rows of row_bytes, row i from fn(params, i). */
typedef struct mem_origin {
    engine_row_fn fn;
    size_t params_at;     /* offset into engine.origin_params */
    size_t params_size;
    uint64_t rows, row_bytes;
} mem_origin;

typedef struct gm_alloc {
    uint64_t off;         /* offset in the rank's address space */
    uint64_t size;
    mseg *seg;            /* heap-allocated: stays put when allocs grow */
    uint32_t name;        /* string id */
    uint32_t n_words;     /* named words overlapping it: 0 = writes here skip the word search */
} gm_alloc;

/* A named GM word (ring head/tail, flag, ...). */
typedef struct named_word {
    uint64_t off;
    uint32_t width;
    uint32_t object;
} named_word;

struct core;

/* A core blocked on a GM word, by the word's offset: a write finds the
 * watchers it may wake by a binary search, without touching the cores. */
typedef struct watcher {
    uint64_t off;
    uint32_t width;
    struct core *core;
} watcher;

typedef struct rank_state {
    gm_alloc *allocs;     /* sorted by off */
    int n_allocs, cap_allocs;
    int last_alloc;       /* eng_gm_find's last answer; -1 none */
    uint64_t next_off;    /* bump pointer for private allocations */
    named_word *words;    /* sorted by off */
    int n_words, cap_words;
    int stray_words;      /* named words in no allocation: every lookup searches */
    watcher *watchers;        /* cores blocked on a GM word of this rank, sorted by off */
    int n_watchers, cap_watchers;
    resource hbm;
    resource nic_tx, nic_rx;
    resource hccs_tx, hccs_rx;   /* the NPU's HCCS port, each way */
    resource plane_tx, plane_rx; /* its share of the spine, for RDMA off its plane */
    resource aicpu;
} rank_state;

/* ------------------------------------------------------------ cores */
typedef enum { CS_IDLE = 0, CS_READY, CS_RUNNING, CS_BLOCKED, CS_FINISHED, CS_FAULTED } core_status;

/* What a blocked core waits for. Flag and pipe waits end at a time known
 * when they begin, so they advance the clock instead of blocking; RdmaQuiet
 * blocks (WAIT_RDMA) until the acks come back (rdma.c). */
typedef enum { WAIT_NONE = 0, WAIT_GM, WAIT_XCORE, WAIT_BARRIER, WAIT_RDMA } wait_kind;

typedef struct pipe_q {
    uint64_t free_at;     /* next op may start */
    uint64_t done_at;     /* completion of the last queued op */
    uint64_t barrier_at;  /* a WaitFlag holds this pipe until then */
    uint64_t last_done_seq;  /* seq of the last completion event */
    uint32_t last_done_track;
} pipe_q;

#define FLAG_IDS 8
#define FLAG_DEPTH 4
#define XCORE_FLAGS 16
#define NOTES_MAX 16

typedef struct flag_slot {
    uint64_t fire[FLAG_DEPTH];   /* fire times of pending SetFlags, FIFO */
    uint8_t head, count;
} flag_slot;

typedef struct launch_info {
    const char *name;
    uint32_t name_id;
    engine_kernel_fn fn;
    const void *args;
    int block_dim;
    engine_core_type type;
    int first_aic, first_aiv;
    /* barrier bookkeeping, [is_aic]: BarrierAll across ranks; [rank*2+is_aic]: SyncAll */
    int bar_arrived[2];
    uint64_t bar_max_time[2], bar_last_seq[2];
    uint32_t bar_last_track[2];
    int *sync_arrived;
    uint64_t *sync_max_time;
    uint64_t *sync_last_seq;
    uint32_t *sync_last_track;
    int cores_of_type[2];   /* participants per rank: [is_aic] */
} launch_info;

typedef struct core {
    struct engine *e;
    int rank, index;          /* index within the rank: < num_aic is an AIC */
    int is_aic;
    int launch;               /* index into engine launches, -1 if idle */
    int block_idx, block_num, sub_idx, sub_num;
    int group;                /* AIC index of the MIX group, -1 otherwise */
    core_status status;
    uint64_t now;             /* local virtual time */
    uint64_t prio;            /* tie-break priority, seeded, unique per core */
    uint64_t counter;         /* its queue items so far: the low bits of their keys */
    uint64_t rng;             /* its jitter stream */
    coro co;
    pipe_q pipes[PIPE_COUNT];
    flag_slot flags[HARD_EVENT_COUNT][FLAG_IDS];
    uint32_t xcore_count[XCORE_FLAGS];
    uint64_t xcore_last_seq[XCORE_FLAGS];
    uint32_t xcore_last_track[XCORE_FLAGS];
    mseg local[LM_L0C + 1];   /* host NULL until first touched */
    uint32_t local_used[LM_L0C + 1];
    int atomic_dtype;         /* SetAtomicAdd state of MTE3 */
    uint32_t role;            /* string id, 0 none */
    uint32_t note_key[NOTES_MAX];
    int64_t note_val[NOTES_MAX];
    int n_notes;
    uint32_t rdma_outstanding;   /* RDMA ops posted and not yet acked (rdma.c) */
    /* what it is blocked on */
    wait_kind wait;
    int wait_pipe;            /* track pipe of the wait events */
    gm_t wait_addr;
    int wait_width, wait_cond;
    int64_t wait_expected;
    uint32_t wait_object;
    uint32_t wait_site;
    int wait_flag;            /* xcore flag id / hard event */
    int wait_need;            /* xcore sets needed */
    int wait_barrier;         /* 1 all ranks, 0 this rank */
    uint64_t wait_begin_time, wait_begin_seq;
    int wait_remote;          /* the waited word is on another rank */
    /* filled by the waker */
    int64_t wake_value;
    uint64_t wake_seq;
    uint32_t wake_track;      /* track id + 1 */
    uint64_t last_seq;        /* last event this core emitted */
    uint32_t last_site;
    /* local steps (eng_sync_local) */
    int32_t lpend, lpend_last;   /* its queued xfers that touch its local memory, by end; -1 none */
    uint8_t entered;          /* its coroutine has started (another core may switch to it) */
    uint8_t after_local;      /* its last step was a local one, which opened no segment */
    uint8_t lagging;          /* and it went past earlier queue items without yielding */
    uint64_t local_time, local_key;   /* that step, where a fault catches up (eng_fault) */
    int atomic_op;            /* with atomic_dtype: ATOMIC_ADD, _MAX, _MIN (dev_set_atomic_op) */
    void *storage;            /* dev_core_storage: a front end's per-core state, or NULL */
    double deq_scale;         /* dev_set_deq_scale's scale; 0: none set (1.0) */
    /* poll loops (dev_gm_load): device calls so far, and the last GM load's */
    uint64_t calls;
    uint64_t poll_calls;      /* calls when it was made */
    uint64_t poll_addr;
    const char *poll_file;
    int poll_line, poll_width;
    int64_t poll_value;
} core;

/* ------------------------------------------------------------ transfers */
typedef enum { OP_COPY = 1, OP_COPY_PAD_IN, OP_VEC_DUP, OP_VEC_AXPY, OP_VEC_ADD, OP_VEC_CAST,
               OP_MMAD, OP_FIXPIPE, OP_STORE, OP_ATOMIC_ADD, OP_BATCH_TASK, OP_XCORE,
               OP_VEC_QUANT_I8, OP_VEC_DEQUANT_I8,
               OP_VEC_GEN,      /* vec_ops.c: a masked, repeated, strided instruction */
               OP_COPY_BLOCKS   /* copy_blocks.c: a DataCopy of blocks with gaps, one DMA */
} xfer_op;

typedef struct xfer {
    int op;
    int kind;                 /* engine_xfer */
    int rank, core_index, pipe;
    uint32_t track;
    uint8_t *dst, *src, *src2;   /* host bytes of the operands, inside: */
    mseg *dseg, *sseg, *sseg2;   /* their segments (copies splice references) */
    uint64_t dst_raw, src_raw;
    uint64_t bytes;
    int dtype, dtype2, atomic_dtype;
    double scalar;
    uint32_t m, n, k;
    int accumulate;
    int width;
    int64_t value;
    int dst_rank;             /* rank whose GM is written (-1: local memory) */
    uint64_t dst_off;
    uint32_t object;
    uint64_t issue_seq;
    uint64_t start, end;
    uint32_t site;
    int peer;
    int next_free;
    int32_t lnext, lprev;     /* its core's list of queued xfers touching local memory */
    uint8_t lpending;         /* in that list */
    /* RDMA (rdma.c) */
    uint8_t rdma, in_flight;
    uint64_t key;             /* the posting core's tie key, for every step */
    uint64_t tx_end, arrive_at;
    uint64_t done_seq;        /* the done event, for the ack */
    mseg flight;              /* the bytes the NIC read at tx begin */
    int32_t origin_xfer;      /* split runs: the source process's xfer (-1 local) */
    /* front ends' instructions (vec_ops.c, copy_blocks.c) */
    dev_vec_shape vshape;
    dev_vec_reduce vred;
    dev_copy_blocks blocks;
    int vop, vround;          /* vop: a dev_vec_op, 0 Cast, -1 a reduction */
    int atomic_op;            /* with atomic_dtype: ATOMIC_ADD, _MAX or _MIN */
    int64_t iscalar;
    uint64_t ext[3];          /* bytes each operand spans from its start */
} xfer;

/* ------------------------------------------------------------ event queue */
/* Q_CORE_LOCAL: a core that yielded in a local step (eng_sync_local),
 * resumed as Q_CORE but without a scheduling segment of its own. */
#define ENG_KEY_COUNTER_BITS 41   /* a tie key: priority << 41 | counter (eng_core_key) */
typedef enum { Q_CORE = 1, Q_XFER, Q_RDMA_TX, Q_RDMA_ARRIVE, Q_RDMA_ACK, Q_CORE_LOCAL } qitem_type;
typedef struct qitem {
    uint64_t time;
    uint64_t key;             /* priority << 41 | the core's item counter (eng_core_key) */
    uint32_t type;
    uint32_t idx;
} qitem;

/* ------------------------------------------------------------ sites */
typedef struct site_entry {
    const char *file;
    const char *func;
    int line;
    uint32_t id;
} site_entry;

/* One spelling of a site: the address of a __FILE__ text and a line. A
 * build may hold several copies of one file's name (headers included by
 * several files, when the linker does not merge equal strings), all
 * naming one site. */
typedef struct site_key {
    const char *file;         /* NULL: empty slot */
    int line;
    uint32_t id;
} site_key;

/* ------------------------------------------------------------ engine */
/* Earliest time a core took the role, latest a core left it (role_spans.c). */
typedef struct role_span {
    uint32_t role;            /* string id */
    uint64_t begin, end;
} role_span;

/* host_addr.c: one GM mapping's host range and where it is in GM. */
typedef struct host_span {
    const uint8_t *host;
    uint64_t size;
    int rank;
    uint64_t off;
} host_span;

struct engine {
    engine_config cfg;
    int n_ranks, n_aic, n_aiv, cores_per_rank;
    rank_state *ranks;
    core *cores;              /* n_ranks * cores_per_rank */
    uint64_t sym_next;        /* symmetric heap bump pointer */

    engine_rates rate;        /* engine_rates_of(cfg.hw), once per run (derive_timing) */
    resource *hccs_links;     /* [src * n_ranks + dst], same node only */
    unsigned used;            /* ENGINE_USED_* bits: what the run has priced so far */
    uint64_t *qp_arrive_at;   /* RDMA ordering per (src, dst): arrivals, kept by the source */
    uint64_t *qp_done_at;     /* and completions, kept by the destination; same block */

    /* launches */
    launch_info *launches;
    int n_launches;
    int finished_cores;

    /* scheduler */
    qitem *heap;
    size_t heap_n, heap_cap;
    qitem next;               /* the queue's first item, taken out by a yield (sched.c) */
    int has_next;
    coro sched_co;
    core *current;
    uint64_t now;
    uint64_t seq;
    uint32_t last_site;       /* of the last event that had one: what a crash report names */
    volatile int stop_requested;
    engine_outcome outcome;
    char message[ENGINE_ERRLEN];
    uint64_t stall_ps;
    int running;
    uint64_t sched_steps;     /* eng_sync calls: where PCT delays land */
    struct sched_delay *delay;   /* sched_delay.c; NULL without --pct-points */

    /* transfers */
    xfer *xfers;
    int n_xfers, cap_xfers, free_xfer;

    /* payload origins (payload.c) */
    mem_origin *origins;
    uint32_t n_origins, cap_origins;
    uint8_t *origin_params;
    size_t origin_params_n, origin_params_cap;
    uint8_t *gen_cache;       /* one generated row, for partial reads */
    uint64_t gen_cache_cap, gen_cache_row;
    uint32_t gen_cache_origin;

    /* strings, sites, objects */
    char **strings;
    uint32_t n_strings, cap_strings;
    uint32_t *str_hash;       /* open addressing: string id, 0 empty */
    uint32_t str_hash_cap;
    site_entry *sites;        /* by id - 1 */
    uint32_t n_sites, cap_sites;
    site_key *site_hash;      /* open addressing over (file ptr, line): the hot path */
    uint32_t site_hash_cap, n_site_keys;
    uint32_t *site_by_name;   /* open addressing over (file text, line): site id */
    uint32_t site_by_name_cap;
    engine_object *objects;   /* by id - 1 */
    uint32_t n_objects, cap_objects;
    uint64_t *obj_last_seq;   /* last writer of each object */
    uint32_t *obj_last_track;
    uint64_t *obj_last_time;

    /* a run split over processes (partition.c, merge.c) */
    int own_first, own_end;   /* the ranks this process runs: all, unsplit */
    int started_cores;        /* launched cores it started */
    uint64_t window_end;      /* nothing at or past it runs this window; UINT64_MAX unsplit */
    struct split_state *split;   /* NULL unsplit */

    role_span *role_spans;    /* role_spans.c */
    int n_role_spans, cap_role_spans;

    host_span *host_index;    /* host_addr.c: every GM mapping by host address */
    int n_host, cap_host;

    engine_hccl hccl[ENGINE_HCCL_GROUPS];   /* hccl.c: groups the host declared */

    engine_tensor *tensors;   /* tensors.c: named for --dump; names are interned */
    int n_tensors, cap_tensors;

    engine_observer obs;
    uint64_t break_seq;
    engine_break_fn break_fn;
    void *break_ctx;
};

/* pipes.c: dst[i] op= src[i] over bytes as dtype (op ATOMIC_ADD, _MAX,
 * _MIN; 0 is ADD): MTE3's atomic mode. */
void eng_atomic_accumulate(uint8_t *dst, const uint8_t *src, uint64_t bytes, int dtype, int op);
/* vec_ops.c: a general vector instruction's effect at its completion. */
void eng_vec_apply(engine *e, xfer *x);
/* copy_blocks.c: a block copy's effect at its completion, and its ranges
 * for the checker (fn per range: address, length, write). */
void eng_copy_blocks_apply(engine *e, xfer *x);
void eng_copy_blocks_ranges(const xfer *x, void (*fn)(void *ctx, uint64_t addr, uint64_t len,
                                                      int write), void *ctx);

/* host_addr.c: a GM mapping, indexed by its host address. */
void eng_host_index_add(engine *e, const uint8_t *host, uint64_t size, int rank, uint64_t off);

/* dev_front.c: frees a core's per-core storage. */
void eng_core_storage_free(core *c);

/* tensors.c: frees the named tensors. */
void eng_tensors_free(engine *e);

/* role_spans.c: a core takes a role (closing the one it held) or leaves
 * its role at its kernel's end. */
void eng_role_enter(core *c, uint32_t role);
void eng_role_leave(core *c);

/* One core's MTE rate (ps per byte) for a transfer whose GM end is on
 * rank gm_rank (-1: a peer's): a peer's HBM is reached over HCCS, where
 * the queue's outstanding requests over the link's latency bound it
 * (mte_hccs_bytes_per_cycle), else mte_bytes_per_cycle. */
static inline double eng_mte_rate(const core *c, int gm_rank) {
    return gm_rank == c->rank ? c->e->rate.mte_ps_per_byte : c->e->rate.mte_hccs_ps_per_byte;
}

/* What an MTE read of a peer's GM holds its queue for beyond its bytes:
 * the read is not posted, so the queue waits for its request to cross the
 * HCCS link before it takes the next, as a scalar GetValue of a peer's word
 * waits (dev_sync.c reach_word): hccs_read_latencies one-way latencies. */
static inline uint64_t eng_hccs_read_held_ps(const engine *e) {
    return e->rate.hccs_read_held_ps;
}

/* cluster.c */
uint32_t eng_intern(engine *e, const char *text);
uint32_t eng_site(engine *e, dev_site s);
core *eng_core(const engine *e, int rank, int index);
uint32_t eng_track(const engine *e, const core *c, int pipe);
int eng_same_node(const engine *e, int a, int b);
uint64_t eng_jitter(core *c, uint64_t dur);   /* c's own seeded stream */

/* sched.c */
core *eng_current(const char *api);
void eng_sync(core *c);                      /* run every earlier event first */
/* A step that reads or writes [off, off+len) of seg, one of c's local
 * memories, and nothing shared (a UB scalar access): only c's own queued
 * transfers can touch those bytes, so c yields only when one that touches
 * them completes first; else it goes on without a switch (pipes.c keeps
 * the list, eng_local_pending_*). */
void eng_sync_local(core *c, const mseg *seg, uint64_t off, uint64_t len);
void eng_advance(core *c, uint64_t ps);      /* local time passes (no sync) */
void eng_block(core *c);                     /* suspend until eng_wake */
/* What c is about to block on, from now; object and address none (a GM
 * wait sets its own after). */
void eng_wait_on(core *c, wait_kind kind, uint32_t site, int64_t expected);
void eng_wake(engine *e, core *c, uint64_t t, int64_t value, uint64_t seq, uint32_t track1);
void eng_push(engine *e, uint64_t time, uint64_t key, qitem_type type, uint32_t idx);
uint64_t eng_core_key(core *c);                 /* the next tie key of c's items */
uint64_t eng_emit(engine *e, engine_event *ev);
void eng_fault(core *c, dev_site s, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));

/* hooks.c: checker hooks, no effect on the run (engine.h, engine_hook) */
void eng_hook_xfer(engine *e, const xfer *x);
void eng_hook_sync(core *c, int kind, int sub, uint64_t len, dev_site s);
void eng_hook_local(core *c, local_t l, int width, int write, dev_site s);

/* sched_delay.c */
int eng_delay_init(engine *e, char *err, size_t errlen);
void eng_delay_step(core *c);
void eng_delay_free(engine *e);

/* memory.c */
void eng_gm_unmap(mseg *seg);
size_t eng_coro_stack_size(void);
/* Literal bytes of [p, p+bytes), references in it materialized: for scalar
 * access and host views. NULL if out of bounds. */
uint8_t *eng_gm_ptr(engine *e, gm_t p, uint64_t bytes);
/* The same place without materializing, and its segment: for transfers,
 * which read and write at completion through the segment. */
uint8_t *eng_gm_at(engine *e, gm_t p, uint64_t bytes, mseg **seg);
const gm_alloc *eng_gm_find(engine *e, gm_t p);
/* Local memory [l, l+bytes) of c (checked; faults name what), not
 * materialized; *seg its segment. */
uint8_t *eng_local_at(core *c, local_t l, uint64_t bytes, dev_site s, const char *what, mseg **seg);
/* Literal bytes of a core's local memory (UbGet/UbSet). */
uint8_t *eng_local_ptr(core *c, local_t l, uint64_t bytes, dev_site s, const char *what);
void eng_local_free(core *c);

/* payload.c */
void eng_seg_init(mseg *s, uint8_t *host, uint64_t size);
void eng_seg_free(mseg *s);
void eng_seg_touched(mseg *s, uint64_t bytes);   /* literal bytes written by the host */
int eng_seg_has_refs(const mseg *s, uint64_t off, uint64_t len);
uint8_t *eng_seg_lit(engine *e, mseg *s, uint64_t off, uint64_t len);   /* materialize */
uint8_t *eng_seg_overwrite(mseg *s, uint64_t off, uint64_t len);        /* caller writes all */
void eng_seg_copy(engine *e, mseg *d, uint64_t doff, mseg *s, uint64_t soff, uint64_t len);
void eng_seg_generate(engine *e, mseg *s, uint64_t off, uint32_t origin);
void eng_seg_read(engine *e, const mseg *s, uint64_t off, void *out, uint64_t len);
int eng_seg_equal(engine *e, const mseg *a, uint64_t aoff, const mseg *b, uint64_t boff,
                  uint64_t len, uint64_t *diff);
void eng_seg_stats(const mseg *s, uint64_t *extents, uint64_t *ref_bytes);
/* 1 when [off, off+len) holds rows 0.. of what fn(params) generates, 0 when
 * not (*diff = first differing byte). References to an origin of the same
 * generator, parameters and row offset are equal without generating. */
int eng_seg_equal_generated(engine *e, const mseg *s, uint64_t off, uint64_t len,
                            engine_row_fn fn, const void *params, size_t params_size,
                            uint64_t row_bytes, uint64_t *diff);
uint32_t eng_origin_add(engine *e, engine_row_fn fn, const void *params, size_t params_size,
                        uint64_t rows, uint64_t row_bytes);
/* Offset of a host pointer inside its segment. */
static inline uint64_t eng_seg_off(const mseg *s, const uint8_t *p) { return (uint64_t)(p - s->host); }
void eng_gm_check(core *c, gm_t p, uint64_t bytes, dev_site s, const char *what);
/* dev_copy.c: the resources a GM access of c crosses (the owner's HBM, the
 * HCCS link to a peer), its latency and what it holds its queue beyond its
 * bytes; faults (api) when g is in another node. Returns how many in res. */
int eng_gm_path(core *c, gm_t g, int to_gm, resource **res, uint64_t *latency, uint64_t *held,
                dev_site s, const char *api);
/* dev_copy.c: a local address and length the MTEs take: 32 B aligned. */
void eng_check_local_rule(core *c, local_t l, uint64_t bytes, dev_site s, const char *api);

/* objects.c */
void eng_gm_written(engine *e, int rank, uint64_t off, uint64_t len, uint64_t seq, uint32_t track1,
                    uint64_t time);
uint32_t eng_word_object(engine *e, gm_t p);
int64_t eng_read_word(const uint8_t *p, int width);
void eng_write_word(uint8_t *p, int width, int64_t v);
int eng_cond_holds(int cond, int64_t value, int64_t expected);
void eng_watch(engine *e, core *c);

/* pipes.c */
xfer *eng_xfer_new(engine *e);
void eng_xfer_free(engine *e, xfer *x);
void eng_xfer_issue_event(engine *e, xfer *x, uint64_t issue_time);   /* and the checker hook */
void eng_xfer_post(engine *e, xfer *x, uint64_t issue_time, uint64_t key);
void eng_xfer_issue_on(core *c, xfer *x, double core_ps_per_byte, uint64_t fixed_ps,
                       resource **res, int n_res, uint64_t latency_ps, dev_site s);
void eng_xfer_complete(engine *e, xfer *x);
/* 1 when a queued xfer of c completing at or before c->now touches
 * [off, off+len) of seg. */
int eng_local_pending_conflict(const core *c, const mseg *seg, uint64_t off, uint64_t len);
/* The scalar unit waits until a time it already knows (a flag's fire time, a
 * pipe draining): begin/end events on the S track, the end naming the last
 * completion on waker's pipe. begin_kind + 1 must be the matching end kind. */
void eng_wait_until(core *c, uint64_t until, int begin_kind, int sub, int64_t value, uint32_t site,
                    const pipe_q *waker);

/* dev_sync.c */
void eng_xcore_deliver(engine *e, xfer *x);

/* rdma.c: the steps of an RDMA op; x->pipe, dst_rank and the operands set */
void eng_rdma_post(core *c, xfer *x, uint64_t start);
void eng_rdma_tx(engine *e, xfer *x);
void eng_rdma_arrive(engine *e, xfer *x);
void eng_rdma_land(engine *e, xfer *x);
void eng_rdma_completed(engine *e, xfer *x, uint64_t done_seq);
void eng_rdma_ack(engine *e, xfer *x);
void eng_rdma_wait_acks(core *c, uint32_t site, int emit_events);

/* partition.c: what crosses processes in a split run. A seq or site id
 * that came from process q is tagged with q + 1 above the local bits; the
 * merge turns it into the global one. */
#define SPLIT_SEQ_SHIFT 48
#define SPLIT_SITE_SHIFT 24
static inline int eng_local_rank(const engine *e, int rank) {
    return rank >= e->own_first && rank < e->own_end;
}
void eng_split_send_arrival(engine *e, xfer *x);               /* Q_RDMA_ARRIVE elsewhere */
void eng_split_send_ack(engine *e, xfer *x, uint64_t done_seq);   /* Q_RDMA_ACK elsewhere */
/* A BarrierAll arrival of c, told to every other process (which count it
 * at the window's end, eng_barrier_arrival, and release their waiters if it
 * was the last). */
void eng_split_send_barrier(core *c);
void eng_barrier_arrival(engine *e, launch_info *l, int type, uint64_t time, uint64_t seq,
                         uint32_t track1);
void eng_split_free(engine *e);
/* partition.c: room for n more bytes at the end of b (grown by doubling;
 * aborts out of memory), where the caller writes before adding to b->n. */
uint8_t *eng_buf_room(engine_buf *b, size_t n);
/* LEB128 varints (partition.c): put writes v at p (at most 10 bytes) and
 * says how many; get reads one at p[*at], of the n bytes there, and steps
 * past it, -1 if it is cut or too long. */
size_t eng_varint_put(uint8_t *p, uint64_t v);
int eng_varint_get(const uint8_t *p, size_t n, size_t *at, uint64_t *v);
/* merge.c: one window of this process as captured: every record (the
 * stream) and, when every process merges (recorded where it runs), the
 * skeleton the others merge, built on the way (merge.c says its form). */
/* seq_map.c: one process's local seq -> the run's, in a split run's merge
 * (the last events' in a ring, every run of them compactly). */
#define SEQ_TAIL (1u << 20)
typedef struct seq_map {
    uint32_t *tail;               /* the last SEQ_TAIL locals' run seqs, by (local - 1) */
    uint64_t n;                   /* locals mapped: 1..n */
    engine_buf bytes;             /* closed runs: varint (length, gap) pairs */
    engine_buf blocks;            /* every 64th closed run's starts (struct seq_block) */
    uint64_t runs;                /* closed runs */
    uint64_t open_local, open_global, open_len, open_gap;   /* the run still growing */
} seq_map;
/* The next n locals (n + 1 ..) get the run's seqs global.. (< 2^32). */
void seq_map_add(seq_map *s, uint64_t global, uint32_t n);
uint64_t seq_map_get_old(const seq_map *s, uint64_t local);
/* local's run seq; 0 if local is not mapped. The ring inline: it is read
 * twice for every event of a split recording. */
static inline uint64_t seq_map_get(const seq_map *s, uint64_t local) {
    if (local == 0 || local > s->n) return 0;
    if (s->n - local < SEQ_TAIL) return s->tail[(local - 1) & (SEQ_TAIL - 1)];
    return seq_map_get_old(s, local);
}
void seq_map_free(seq_map *s);

typedef struct eng_capture {
    engine_buf stream, skel;
    int skeleton;                 /* build skel too */
    engine_observer direct;       /* set: events go to it as made, the stream keeps none
                                   * (merged from skel, renumbered, engine.h on_renumber) */
    int pending;                  /* a segment waits for the count of its events */
    uint32_t run;                 /* events since the skeleton's last record */
    uint64_t seg_time, seg_key, base_time;
    uint64_t *counters;           /* by priority: the last segment key's counter */
    size_t n_counters;
} eng_capture;
/* sched.c: the loop, the end, shared with the window loop */
void eng_run_loop(engine *e);
int eng_start_cores(engine *e, char *err, size_t errlen);
int eng_blocked_count(const engine *e);
void eng_emit_blocked(engine *e);
void eng_stop(engine *e, engine_outcome outcome, const char *msg);
int eng_split_run(engine *e, engine_result *res, char *err, size_t errlen);
/* report.c: the report's entries of this process's unfinished cores, and
 * their text with each writer named by roles (per core index; NULL: e's
 * own) and its seq passed through global_seq (NULL: as is; 0 back:
 * unknown, the seq is left out). Returns the entries shown, -1 if entries
 * is cut. The roles of this process's cores are packed and read back into
 * roles[core] (malloc'd, freed by the caller) for a split run. */
void eng_report_pack(const engine *e, engine_buf *b);
void eng_report_pack_roles(const engine *e, engine_buf *b);
int eng_report_roles(const engine *e, const engine_buf *packed, char **roles);
int eng_report_format(const engine *e, const char *const *roles, const engine_buf *entries,
                      uint64_t (*global_seq)(void *, uint64_t), void *ctx, engine_buf *out);
/* partition.c: a split run's report text (every process's cores, gathered
 * to process 0 at a deadlock or watchdog stop), NULL elsewhere; and its
 * memory figures summed over the processes (0 if not summed yet). */
const engine_buf *eng_split_report(const engine *e);
int eng_split_memory(const engine *e, engine_memory *m);

/* payload.c: a segment range as pieces (literal bytes or origin
 * references) to send, and back */
void eng_seg_pack(const mseg *s, uint64_t off, uint64_t len, engine_buf *out);
size_t eng_seg_unpack(mseg *d, uint64_t doff, uint64_t len, const uint8_t *in, size_t avail);

/* The engine's one seeded generator step (splitmix64): the tie order, the
 * jitter and the delay points. The kernels have their own (kit.h): the
 * engine does not link them. */
static inline uint64_t eng_splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* compute.c */
void eng_apply_compute(engine *e, xfer *x);
float eng_f16_to_f32(uint16_t h);
uint16_t eng_f32_to_f16(float f);
int eng_dtype_size(int dtype);

/* report.c */
const char *eng_space_name(int space);

#define EV_INIT(c, k, p) { .kind = (k), .rank = (uint32_t)(c)->rank, \
    .core = (uint32_t)(c)->index, .pipe = (uint8_t)(p) }

#endif

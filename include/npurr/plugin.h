/*
 * npurr/plugin.h - the plugin ABI: kernels of your own, run by npurr.
 *
 * A plugin is a shared object built against an installed npurr
 * (find_package(npurr), npurr_add_kernel in CMake) and named on the command
 * line: `npurr record --plugin my.so -k my-kernel ...`. It holds one or more
 * kernels, each a descriptor (npurr_kernel): a name, a summary, options
 * with defaults and help, and hooks npurr calls on the host side (setup,
 * check, and optionally layout, estimate, progress, destroy) plus the
 * phases msprof would time. Its device code is written against
 * npurr/device.h (C) or npurr/ascendc/kernel_operator.h (Ascend C) and runs
 * on the emulated cores, recorded, timed and replayed like npurr's own
 * kernels. npurr's built-in kernels are descriptors of this same type and
 * make their host calls through this same table, so every test of npurr
 * exercises this ABI.
 *
 * A plugin exports two symbols, which NPURR_PLUGIN(...) below defines:
 *   npurr_plugin_abi      data: magic, the ABI version it was built for, its
 *                         name. npurr reads it before calling anything and
 *                         refuses another major version, naming both.
 *   npurr_plugin_kernels  function: given the host table, returns the
 *                         NULL-terminated list of the plugin's kernels.
 * A kernel whose name is a built-in's or another loaded plugin's is
 * refused. The host table (npurr_host) is every host call a kernel may
 * make: options, the topology, GM per rank and symmetric windows, inputs
 * generated or read from .npy files, names of words, rings and tensors for
 * the analysis and --dump, launches, reads of GM for the check. Within a
 * major version, minor versions only append entries; `size` says how many
 * the running npurr has.
 *
 * Device code shares one address space. All emulated cores of all ranks run
 * in one process as coroutines, one at a time, each on its own stack of 256
 * KiB (1 MiB under AddressSanitizer). A `static` or global variable in
 * device code is therefore one variable shared by every core of every rank,
 * not one per core (a core's registers and stack) or per device (GM) as on
 * the chip: keep per-core state in locals, UB or GM, per-rank state in GM
 * or indexed by GetRank(), and read-only tables (constants) as globals.
 * Large arrays belong in UB (AllocUB) or GM, not on the stack. A write to a
 * global is invisible to the trace and to the race checker.
 *
 * Runs are self-contained: `record` copies the plugin into the run folder
 * (RUN/plugin/) with its SHA-256 in the run's meta, and replay loads that
 * copy, so rebuilding or deleting yours never changes a recorded run.
 * Errors are values: hooks and host calls return 0 (or an id) on success and
 * fill err (errlen bytes) with a sentence naming the input at fault.
 */
#ifndef NPURR_PLUGIN_H
#define NPURR_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "npurr/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. A major version changes what is already
 * there (npurr refuses a plugin of another major); a minor version only
 * appends host calls or descriptor fields (an older plugin keeps working). */
#define NPURR_ABI_MAJOR 1
#define NPURR_ABI_MINOR 0

/* An emulated cluster being set up or run: the first argument of every host
 * call. Opaque; the same object npurr's engine is. */
typedef struct engine npurr_engine;

/* ------------------------------------------------------------ options */

/* One option of a kernel: `--NAME VALUE` on the command line. */
typedef struct npurr_option {
    const char *name;          /* without leading dashes: "tokens" */
    const char *default_value; /* used when the user gives none */
    const char *help;          /* one line for `-k NAME --help` */
} npurr_option;

/* The parsed options of one run: every option the kernel declares, with the
 * user's value or the default, as text (read them with the host's opt_*
 * calls, which name the option in their errors). A value "npy:PATH" names a
 * NumPy file (with "{rank}" in PATH, one per rank): npurr copies it into the
 * run folder and replay reads the copy. */
#define NPURR_MAX_OPTIONS 64
typedef struct npurr_opts {
    int count;
    const char *names[NPURR_MAX_OPTIONS];
    const char *values[NPURR_MAX_OPTIONS];
} npurr_opts;

/* ------------------------------------------------------------ topology */

/* The cluster a run has: nodes x NPUs per node (HCCS inside a node, RoCE
 * RDMA between nodes), ranks numbered node-major, and the AI cores of the
 * chip each rank has. */
typedef struct npurr_topology {
    int nodes, npus_per_node, ranks;
    int aic, aiv;              /* cube and vector cores per rank */
    const char *chip;          /* "910B2", "910B4" */
    int payload_full;          /* 1: --payload full (every moved byte stored); 0: moved
                                * rows kept as references (the default) */
} npurr_topology;

/* ------------------------------------------------------------ tensors */

/* Element types of tensors npurr reads (.npy inputs) and writes (--dump). */
typedef enum {
    NPURR_DT_UNKNOWN = 0, NPURR_DT_U8, NPURR_DT_I8, NPURR_DT_I16, NPURR_DT_U16, NPURR_DT_I32,
    NPURR_DT_U32, NPURR_DT_I64, NPURR_DT_U64, NPURR_DT_F16, NPURR_DT_BF16, NPURR_DT_F32,
    NPURR_DT_F64
} npurr_dtype;

/* A tensor's element type and shape (C order). */
#define NPURR_MAX_DIMS 8
typedef struct npurr_tensor {
    npurr_dtype dtype;
    int ndim;
    uint64_t shape[NPURR_MAX_DIMS];
} npurr_tensor;

/* ------------------------------------------------------------ the hooks */

struct npurr_estimate;

/* Allocates GM, fills the inputs, names words and rings, launches the
 * device code; *state (the kernel's own) is passed to check, progress and
 * destroy. 0, or -1 with err naming the bad input. */
typedef int npurr_setup_fn(npurr_engine *e, const npurr_opts *o, void **state, char *err,
                           size_t errlen);
/* After a completed run: 0 all outputs are right; 1 a data check failed,
 * msg says which element of which rank. */
typedef int npurr_check_fn(npurr_engine *e, void *state, char *msg, size_t msglen);
/* Prints every buffer's size per rank for these options on topology t
 * (`npurr layout`; nothing is allocated). 0, or -1 with err. */
typedef int npurr_layout_fn(const npurr_opts *o, const npurr_topology *t, FILE *out, char *err,
                            size_t errlen);
/* Frees state (NULL is possible). */
typedef void npurr_destroy_fn(void *state);
/* How far a running kernel is, in the unit it names ("tokens received"):
 * done of total, read from GM without changing the run. 0, or -1 when it
 * cannot say yet. */
typedef int npurr_progress_fn(npurr_engine *e, const void *state, uint64_t *done,
                              uint64_t *total, const char **unit);
/* What a run of these options will hold in memory, from the options alone,
 * after validating them as setup would against t: fills gm_bytes,
 * host_bytes and driver. 0, or -1 with err naming the option at fault. */
typedef int npurr_estimate_fn(const npurr_opts *o, const npurr_topology *t,
                              struct npurr_estimate *est, char *err, size_t errlen);

/* A phase of a kernel as the chip's profilers time it: the roles (SetRole)
 * whose cores run it, from the first of them taking one of these roles to
 * the last leaving one, and the operator names msprof's op_summary gives the
 * kernel that runs this phase on the chip, matched as substrings. Both
 * lists end at the first NULL. */
typedef struct npurr_phase {
    const char *name;          /* "notify", "dispatch", "combine", ... */
    const char *roles[8];
    const char *op_names[6];
} npurr_phase;

/* A kernel: what `-k NAME` runs. */
typedef struct npurr_kernel {
    const char *name;          /* letters, digits, '-', '_' */
    const char *summary;       /* one line for `npurr record --help` */
    const npurr_option *options; /* terminated by {NULL} */
    npurr_setup_fn *setup;
    npurr_check_fn *check;       /* optional: without it the check is "skipped" */
    npurr_layout_fn *layout;     /* optional */
    npurr_destroy_fn *destroy;   /* optional */
    npurr_progress_fn *progress; /* optional */
    npurr_estimate_fn *estimate; /* optional: without it only the engine is counted */
    /* 1 when check reads only ranks rank_local names, so each process of a
     * split run (mpirun) checks its own nodes; a kernel without it is
     * recorded in one process. */
    int check_splits;
    const npurr_phase *phases;   /* optional: terminated by {NULL} */
} npurr_kernel;

/* What a run of some options will hold in memory (the estimate hook). */
typedef struct npurr_estimate {
    uint64_t gm_bytes;       /* emulated GM the host backs: with payload references the moved
                              * rows are not counted, a ring record's metadata costs its page */
    uint64_t host_bytes;     /* host-side plan (routing, expected outputs) */
    uint64_t engine_bytes;   /* the engine's own per-rank state (npurr fills it) */
    uint64_t total_bytes;    /* the sum (npurr fills it) */
    char driver[160];        /* the options that drive it, e.g. "--tokens N --hidden H" */
} npurr_estimate;

/* ------------------------------------------------------------ host calls */

/* Every host call a kernel's host side (setup, check, layout, estimate,
 * progress) may make. Device code never calls these: it uses the device
 * API. Addresses are gm_t (npurr/types.h): rank and offset. */
typedef struct npurr_host {
    uint32_t abi_major, abi_minor;   /* of the running npurr */
    size_t size;                     /* sizeof(npurr_host) in the running npurr */

    /* Options. opt_str: the text of option name (-1, *out NULL, if the kernel has no such
     * option). opt_i64: an integer, a k, m or g suffix multiplying by 2^10, 2^20, 2^30.
     * opt_f64: a finite number. opt_i64_range: opt_i64 within lo..hi. Each returns 0, or -1
     * with err naming the option and its value. */
    int (*opt_str)(const npurr_opts *o, const char *name, const char **out);
    int (*opt_i64)(const npurr_opts *o, const char *name, int64_t *out, char *err,
                   size_t errlen);
    int (*opt_f64)(const npurr_opts *o, const char *name, double *out, char *err,
                   size_t errlen);
    int (*opt_i64_range)(const npurr_opts *o, const char *name, int64_t lo, int64_t hi,
                         int64_t *out, char *err, size_t errlen);

    /* The run's topology into *t. */
    void (*topology)(const npurr_engine *e, npurr_topology *t);
    /* 1 when rank's memory lives in this process (a split run's check reads only these). */
    int (*rank_local)(const npurr_engine *e, int rank);

    /* Zero-filled GM of bytes on rank, named for faults, the index and --dump: 0, or -1
     * with err. */
    int (*gm_alloc)(npurr_engine *e, int rank, uint64_t bytes, const char *name, gm_t *out,
                    char *err, size_t errlen);
    /* A symmetric window: bytes at the same offset on every rank (*out is rank 0's;
     * gm_on_rank(*out, r) is rank r's). 0, or -1 with err. */
    int (*sym_alloc)(npurr_engine *e, uint64_t bytes, const char *name, gm_t *out, char *err,
                     size_t errlen);
    /* A host view of [p, p + bytes) to fill inputs or read small outputs (bytes moved by
     * the run are generated on the way); NULL when the range is in no one allocation. */
    void *(*gm_host)(npurr_engine *e, gm_t p, uint64_t bytes);
    /* Copies [p, p + bytes) into out: 0, or -1 out of bounds. */
    int (*gm_read)(npurr_engine *e, gm_t p, void *out, uint64_t bytes);
    /* rows of row_bytes at p declared an input generated by fn(params, row, out) (params
     * copied): moved rows stay references, so a 14 KB row costs no host memory until
     * something computes on it. 0, or -1 with err. */
    int (*gm_generate)(npurr_engine *e, gm_t p, uint64_t rows, uint64_t row_bytes,
                       engine_row_fn fn, const void *params, size_t params_size, char *err,
                       size_t errlen);
    /* 1 when the two ranges hold the same bytes, 0 when not (first difference in *diff),
     * -1 out of bounds. */
    int (*gm_equal)(npurr_engine *e, gm_t a, gm_t b, uint64_t bytes, uint64_t *diff);
    /* The same against what gm_generate(p, rows, row_bytes, fn, params) holds. */
    int (*gm_equal_generated)(npurr_engine *e, gm_t p, uint64_t rows, uint64_t row_bytes,
                              engine_row_fn fn, const void *params, size_t params_size,
                              uint64_t *diff);
    /* The .npy file option `option` names ("npy:PATH", "{rank}" in PATH for one file per
     * rank) read into new GM on rank named name: *out its address, *t its dtype and shape.
     * 0, or -1 with err naming the option and the file. */
    int (*gm_from_npy)(npurr_engine *e, const npurr_opts *o, const char *option, int rank,
                       const char *name, gm_t *out, npurr_tensor *t, char *err, size_t errlen);

    /* Names the GM word at addr (width 4 or 8) as an object of kind (OBJ_WORD, OBJ_FLAG):
     * waits on it and deadlock reports say name. Its object id. */
    uint32_t (*name_word)(npurr_engine *e, gm_t addr, uint32_t width, engine_obj_kind kind,
                          const char *name);
    /* Declares a ring: head and tail words counting capacity units, carried by kind, from
     * producer_rank to consumer_rank (-1 unknown). Its id, for RingStoreHead/Tail and the
     * analysis's ring tables. */
    uint32_t (*declare_ring)(npurr_engine *e, const char *name, engine_ring_kind kind,
                             gm_t head, gm_t tail, uint32_t width, uint64_t capacity,
                             int producer_rank, int consumer_rank);
    /* Names [p, p + its bytes) a tensor of t's dtype and shape (`record --dump NAME@RANK`
     * writes it as .npy after the run). 0, or -1 with err. */
    int (*name_tensor)(npurr_engine *e, gm_t p, const npurr_tensor *t, const char *name,
                       char *err, size_t errlen);

    /* Launches fn(args) on block_dim cores of type (CORE_AIV, CORE_AIC, or CORE_MIX: a cube
     * and two vector cores a block) on every rank; args must outlive the run. 0, or -1
     * with err. */
    int (*launch)(npurr_engine *e, const char *name, engine_kernel_fn fn, const void *args,
                  int block_dim, engine_core_type type, char *err, size_t errlen);

    /* For kernels that hold GM as host pointers (Ascend C's GM_ADDR): the pointer that
     * stands for p in device code (into its allocation's host mapping; NULL when p is in
     * none). Its value differs from run to run: never store it in GM for a kernel to read. */
    void *(*gm_addr)(npurr_engine *e, gm_t p);
    /* Declares HCCL group `group` (0..3) for Ascend C's GetHcclContext and Hccl: a
     * symmetric context allocation (its bytes are the host's to fill) and symmetric in and
     * out windows of win_size bytes. 0, or -1 with err. */
    int (*hccl_group)(npurr_engine *e, int group, gm_t context, gm_t win_in, gm_t win_out,
                      uint64_t win_size, char *err, size_t errlen);

    /* MoE inputs as npurr's own MoE kernels make them, so a kernel can run on exactly their
     * data and be compared with them. moe_routing: rank's [tokens, topk] expert ids (-1: a
     * dropped slot) and weights (a token's kept slots sum to 1) under spec, --routing's
     * grammar (uniform, zipf:S, group-limited[:M], active-ranks:N, drop:P, npy:PATH), from
     * seed (--data-seed); the topology gives the ranks and nodes some kinds need. 0, or -1
     * with err naming --routing. */
    int (*moe_routing)(const npurr_topology *t, const char *spec, uint64_t seed, int experts,
                       int topk, int rank, int tokens, int32_t *expert_ids, float *weights,
                       char *err, size_t errlen);
    /* moe_row: the expert output row (hidden bf16, as bits) for slot k of token t of rank
     * s, computed on expert rank p: a tag of (t, k, p) in its first elements (small
     * integers, exact in bf16), then values in [-1, 1) drawn from (seed, s, t, k). */
    void (*moe_row)(uint64_t seed, int s, int t, int k, int p, int hidden, uint16_t *row);
} npurr_host;

/* ------------------------------------------------------------ the entry */

/* What npurr reads from a plugin before it calls it. */
typedef struct npurr_plugin_abi_info {
    char magic[8];             /* "npurrabi" */
    uint32_t abi_major, abi_minor;
    const char *name;          /* the plugin's name, for messages */
} npurr_plugin_abi_info;

/* The entry point's type: the plugin's kernels (NULL-terminated), given
 * the host table (which lives as long as the plugin is loaded). */
typedef const npurr_kernel *const *npurr_plugin_kernels_fn(const npurr_host *host);

#define NPURR_PLUGIN_ABI_SYMBOL "npurr_plugin_abi"
#define NPURR_PLUGIN_KERNELS_SYMBOL "npurr_plugin_kernels"

#ifdef __cplusplus
#define NPURR_EXTERN_C extern "C"
#else
#define NPURR_EXTERN_C
#endif
#if defined(__GNUC__)
#define NPURR_EXPORT __attribute__((visibility("default")))
#define NPURR_HIDDEN __attribute__((visibility("hidden")))
#else
#define NPURR_EXPORT
#define NPURR_HIDDEN
#endif

/* The host table the plugin was given (npurr's built-in kernels have it
 * too): what the npurr_* calls below go through. Defined by NPURR_PLUGIN
 * in the plugin's one file that uses the macro; hidden, so two plugins
 * never share it. */
extern NPURR_HIDDEN const npurr_host *npurr_host_api;

/* Defines the plugin's two exported symbols in one source file:
 *   NPURR_PLUGIN("my-plugin", &my_kernel, &my_other_kernel)
 * The list names npurr_kernel descriptors of the plugin. */
#define NPURR_PLUGIN(plugin_name, ...)                                                     \
    NPURR_HIDDEN const npurr_host *npurr_host_api;                                        \
    NPURR_EXTERN_C NPURR_EXPORT const npurr_plugin_abi_info npurr_plugin_abi = {          \
        {'n', 'p', 'u', 'r', 'r', 'a', 'b', 'i'}, NPURR_ABI_MAJOR, NPURR_ABI_MINOR,        \
        plugin_name};                                                                     \
    NPURR_EXTERN_C NPURR_EXPORT const npurr_kernel *const *npurr_plugin_kernels(          \
        const npurr_host *host);                                                          \
    NPURR_EXTERN_C const npurr_kernel *const *npurr_plugin_kernels(const npurr_host *host) { \
        static const npurr_kernel *const list[] = {__VA_ARGS__, NULL};                    \
        npurr_host_api = host;                                                            \
        return list;                                                                      \
    }

/* ------------------------------------------------------------ the calls */
/* The host table's calls by name, for a kernel's host code. */

/* The text of option name into *out: 0, or -1 (*out NULL) when there is none. */
static inline int npurr_opt_str(const npurr_opts *o, const char *name, const char **out) {
    return npurr_host_api->opt_str(o, name, out);
}
/* Option name as an integer (k, m, g suffixes): 0, or -1 with err. */
static inline int npurr_opt_i64(const npurr_opts *o, const char *name, int64_t *out, char *err,
                                size_t errlen) {
    return npurr_host_api->opt_i64(o, name, out, err, errlen);
}
/* Option name as a finite number: 0, or -1 with err. */
static inline int npurr_opt_f64(const npurr_opts *o, const char *name, double *out, char *err,
                                size_t errlen) {
    return npurr_host_api->opt_f64(o, name, out, err, errlen);
}
/* Option name as an integer in lo..hi: 0, or -1 with err naming it. */
static inline int npurr_opt_i64_range(const npurr_opts *o, const char *name, int64_t lo,
                                      int64_t hi, int64_t *out, char *err, size_t errlen) {
    return npurr_host_api->opt_i64_range(o, name, lo, hi, out, err, errlen);
}
/* The run's topology into *t. */
static inline void npurr_topology_of(const npurr_engine *e, npurr_topology *t) {
    npurr_host_api->topology(e, t);
}
/* 1 when rank's memory lives in this process, else 0. */
static inline int npurr_rank_local(const npurr_engine *e, int rank) {
    return npurr_host_api->rank_local(e, rank);
}
/* Zero-filled, named GM on rank into *out: 0, or -1 with err. */
static inline int npurr_gm_alloc(npurr_engine *e, int rank, uint64_t bytes, const char *name,
                                 gm_t *out, char *err, size_t errlen) {
    return npurr_host_api->gm_alloc(e, rank, bytes, name, out, err, errlen);
}
/* A symmetric window on every rank (*out rank 0's): 0, or -1 with err. */
static inline int npurr_sym_alloc(npurr_engine *e, uint64_t bytes, const char *name, gm_t *out,
                                  char *err, size_t errlen) {
    return npurr_host_api->sym_alloc(e, bytes, name, out, err, errlen);
}
/* A host view of [p, p + bytes), or NULL outside one allocation. */
static inline void *npurr_gm_host(npurr_engine *e, gm_t p, uint64_t bytes) {
    return npurr_host_api->gm_host(e, p, bytes);
}
/* [p, p + bytes) copied into out: 0, or -1 out of bounds. */
static inline int npurr_gm_read(npurr_engine *e, gm_t p, void *out, uint64_t bytes) {
    return npurr_host_api->gm_read(e, p, out, bytes);
}
/* rows generated by fn at p (see npurr_host.gm_generate): 0, or -1 with err. */
static inline int npurr_gm_generate(npurr_engine *e, gm_t p, uint64_t rows, uint64_t row_bytes,
                                    engine_row_fn fn, const void *params, size_t params_size,
                                    char *err, size_t errlen) {
    return npurr_host_api->gm_generate(e, p, rows, row_bytes, fn, params, params_size, err,
                                       errlen);
}
/* 1 same bytes, 0 not (first difference in *diff), -1 out of bounds. */
static inline int npurr_gm_equal(npurr_engine *e, gm_t a, gm_t b, uint64_t bytes,
                                 uint64_t *diff) {
    return npurr_host_api->gm_equal(e, a, b, bytes, diff);
}
/* The same against rows fn generates: 1, 0 or -1 as npurr_gm_equal. */
static inline int npurr_gm_equal_generated(npurr_engine *e, gm_t p, uint64_t rows,
                                           uint64_t row_bytes, engine_row_fn fn,
                                           const void *params, size_t params_size,
                                           uint64_t *diff) {
    return npurr_host_api->gm_equal_generated(e, p, rows, row_bytes, fn, params, params_size,
                                              diff);
}
/* The .npy file of option `option` on rank into new GM: 0, or -1 with err. */
static inline int npurr_gm_from_npy(npurr_engine *e, const npurr_opts *o, const char *option,
                                    int rank, const char *name, gm_t *out, npurr_tensor *t,
                                    char *err, size_t errlen) {
    return npurr_host_api->gm_from_npy(e, o, option, rank, name, out, t, err, errlen);
}
/* Names a GM word for waits and reports; its object id. */
static inline uint32_t npurr_name_word(npurr_engine *e, gm_t addr, uint32_t width,
                                       engine_obj_kind kind, const char *name) {
    return npurr_host_api->name_word(e, addr, width, kind, name);
}
/* Declares a ring (see npurr_host.declare_ring); its id. */
static inline uint32_t npurr_declare_ring(npurr_engine *e, const char *name,
                                          engine_ring_kind kind, gm_t head, gm_t tail,
                                          uint32_t width, uint64_t capacity, int producer_rank,
                                          int consumer_rank) {
    return npurr_host_api->declare_ring(e, name, kind, head, tail, width, capacity,
                                        producer_rank, consumer_rank);
}
/* Names a tensor for --dump: 0, or -1 with err. */
static inline int npurr_name_tensor(npurr_engine *e, gm_t p, const npurr_tensor *t,
                                    const char *name, char *err, size_t errlen) {
    return npurr_host_api->name_tensor(e, p, t, name, err, errlen);
}
/* Launches fn(args) on block_dim cores of type on every rank: 0, or -1 with err. */
static inline int npurr_launch(npurr_engine *e, const char *name, engine_kernel_fn fn,
                               const void *args, int block_dim, engine_core_type type,
                               char *err, size_t errlen) {
    return npurr_host_api->launch(e, name, fn, args, block_dim, type, err, errlen);
}

/* The host pointer that stands for GM address p in Ascend C device code. */
static inline void *npurr_gm_addr(npurr_engine *e, gm_t p) { return npurr_host_api->gm_addr(e, p); }
/* Declares an HCCL group (see npurr_host.hccl_group): 0, or -1 with err. */
static inline int npurr_hccl_group(npurr_engine *e, int group, gm_t context, gm_t win_in,
                                   gm_t win_out, uint64_t win_size, char *err, size_t errlen) {
    return npurr_host_api->hccl_group(e, group, context, win_in, win_out, win_size, err, errlen);
}

/* npurr's MoE routing for one rank (see npurr_host.moe_routing): 0, or -1 with err. */
static inline int npurr_moe_routing(const npurr_topology *t, const char *spec, uint64_t seed,
                                    int experts, int topk, int rank, int tokens,
                                    int32_t *expert_ids, float *weights, char *err,
                                    size_t errlen) {
    return npurr_host_api->moe_routing(t, spec, seed, experts, topk, rank, tokens, expert_ids,
                                       weights, err, errlen);
}
/* npurr's tagged expert output row (see npurr_host.moe_row). */
static inline void npurr_moe_row(uint64_t seed, int s, int t, int k, int p, int hidden,
                                 uint16_t *row) {
    npurr_host_api->moe_row(seed, s, t, k, p, hidden, row);
}

#ifdef __cplusplus
}
#endif

#endif

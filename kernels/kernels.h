/*
 * kernels.h - the kernel set from the seeds, as the CLI sees it.
 *
 * Each kernel is a descriptor: its name (`-k NAME`), the options it accepts
 * with defaults and help, a setup that allocates and fills the cluster's
 * memories and launches the device code, a check that compares the outputs
 * with a CPU reference after the run, and optionally a layout printer.
 * Options arrive as name/value strings so the CLI stays thin and a recorded
 * command line is all replay needs to rebuild the same run.
 *
 * The engine's types are only named here (pointers to an engine, a run's
 * configuration): this header does not include the engine's host header,
 * so a kernel file that includes it sees no host API. Hosts include that
 * header themselves.
 */
#ifndef NPURR_KERNELS_H
#define NPURR_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct engine engine;          /* the engine's host header: a cluster */
struct engine_config;                  /* the same: a run's topology, chip, payload */

typedef struct kernel_option {
    const char *name;          /* without leading dashes: "tokens" */
    const char *default_value; /* NULL = flag without value (e.g. "inject" has a value) */
    const char *help;
} kernel_option;

/* The parsed options of one run: every option the kernel declares, with the
 * user's value or the default. */
typedef struct kernel_opts {
    int count;
    const char *names[64];
    const char *values[64];
} kernel_opts;

struct kernel_desc;
/* Fills o with every option d declares and its default value. */
void kopts_init(kernel_opts *o, const struct kernel_desc *d);
/* Overrides one option's value (value is not copied); -1 if d has no such option. */
int kopts_set(kernel_opts *o, const char *name, const char *value);

/* The text of option name into *out (owned by whoever set it: the
 * descriptor's default, or argv); -1 (*out NULL) when it has none, else 0. */
int kopt_str(const kernel_opts *o, const char *name, const char **out);
/* Option name as a 64-bit integer into *out, a k, m or g suffix
 * multiplying it by 2^10, 2^20 or 2^30: 0, or -1 with err naming the option
 * and its value when it has none or it is no such integer. */
int kopt_i64(const kernel_opts *o, const char *name, int64_t *out, char *err, size_t errlen);
/* Option name as a finite number into *out: 0, or -1 with err naming the
 * option and its value when it has none or it is no number. */
int kopt_f64(const kernel_opts *o, const char *name, double *out, char *err, size_t errlen);
/* kopt_i64 that also requires lo <= value <= hi, naming the option if not. */
int kopt_i64_range(const kernel_opts *o, const char *name, int64_t lo, int64_t hi, int64_t *out,
                   char *err, size_t errlen);

struct kernel_estimate;

/* The hooks of a kernel, as function types so a kernel's header declares
 * its hooks in one line each (`kernel_check_fn fm_check;`). */
/* Allocates, fills inputs, declares rings, launches. *state is passed to
 * check/destroy. Returns 0 or -1 with err naming the bad input. */
typedef int kernel_setup_fn(engine *e, const kernel_opts *o, void **state, char *err,
                            size_t errlen);
/* After the run (completed outcome only): 0 all checks passed; 1 a data
 * check failed, msg says which token/byte. */
typedef int kernel_check_fn(engine *e, void *state, char *msg, size_t msglen);
/* Prints every buffer's size per rank for these options on the topology and
 * chip of cfg (nothing is allocated). */
typedef int kernel_layout_fn(const kernel_opts *o, const struct engine_config *cfg, FILE *out,
                             char *err, size_t errlen);
typedef void kernel_destroy_fn(void *state);
/* How far a running kernel is, in the unit it names ("tokens received"):
 * done of total, read from GM without changing the run. Returns 0, or -1
 * when it cannot say yet. */
typedef int kernel_progress_fn(engine *e, const void *state, uint64_t *done, uint64_t *total,
                               const char **unit);
/* What a run of these options will hold in memory, from the options alone,
 * after validating them as setup would against cfg's topology and chip (see
 * kernel_estimate_memory); fills gm_bytes, host_bytes and driver, counting
 * moved rows as cfg's payload mode keeps them. */
typedef int kernel_estimate_fn(const kernel_opts *o, const struct engine_config *cfg,
                               struct kernel_estimate *est, char *err, size_t errlen);

/* A phase of a kernel as the chip's profilers time it (sgl-kernel-npu's
 * tests time NotifyDispatchA2 apart from DispatchNormalA2): the roles
 * whose cores run it, its span from the first of them taking one of these
 * roles to the last leaving one (engine_role_span), and the operator names
 * msprof's op_summary gives the kernel that runs this phase on the chip,
 * matched as substrings. Both lists end at the first NULL. */
typedef struct kernel_phase {
    const char *name;                     /* "notify", "dispatch", "combine", ... */
    const char *roles[8];
    const char *op_names[6];
} kernel_phase;

typedef struct kernel_desc {
    const char *name;
    const char *summary;                  /* one line for `npurr record --help` */
    const kernel_option *options;         /* terminated by {NULL} */
    kernel_setup_fn *setup;
    kernel_check_fn *check;
    kernel_layout_fn *layout;             /* optional */
    kernel_destroy_fn *destroy;
    kernel_progress_fn *progress;         /* optional */
    kernel_estimate_fn *estimate;         /* optional: without it only the engine is counted */
    /* The check reads only what lives on ranks engine_rank_local names, so
     * each process of a split run (mpirun) checks its own nodes; a kernel
     * without it is recorded in one process. */
    int check_splits;
    const kernel_phase *phases;           /* optional: terminated by {NULL} */
} kernel_desc;

/* What a run of these options will hold in memory, from the options alone
 * (estimate.c): nothing is allocated, no routing is generated. */
typedef struct kernel_estimate {
    uint64_t gm_bytes;       /* emulated GM the host backs, by the layout formulas: with
                              * payload references (PAYLOAD_REF) the moved rows are not
                              * counted, a ring record's metadata costs its page */
    uint64_t host_bytes;     /* host-side plan (routing, expected outputs) */
    uint64_t engine_bytes;   /* the engine's own per-rank state */
    uint64_t total_bytes;    /* the sum: what the memory check compares */
    char driver[160];        /* the options that drive it, e.g. "--tokens N --hidden H ..." */
} kernel_estimate;
/* Validates o against cfg's topology and chip as the kernel's setup would
 * (so a shape the kernel refuses is refused before any engine exists),
 * then fills est (cfg's payload mode decides what moved rows cost).
 * Returns 0, or -1 with err naming the option at fault. The one estimate
 * `record` and `layout` check against the machine's memory. */
int kernel_estimate_memory(const struct kernel_desc *k, const kernel_opts *o,
                           const struct engine_config *cfg, kernel_estimate *est, char *err,
                           size_t errlen);

/* The routing kinds every kernel's --routing accepts ("uniform | zipf:S |
 * ..."), for help texts outside the kernels (routing.c). */
const char *routing_kinds_help(void);

/* The input-file grammar of kernel options, in one place
 * (routing_npy_path.c): a value "npy:PATH" names a NumPy file; "{rank}" in
 * PATH makes it one file per rank. */
#define ROUTING_NPY_SCHEME "npy:"
#define ROUTING_NPY_RANK "{rank}"
/* PATH of an "npy:PATH" option value; NULL when the value names no file. */
const char *routing_npy_file(const char *value);
/* 1 when path holds "{rank}" (one file per rank), else 0. */
int routing_npy_per_rank(const char *path);
/* path with its first "{rank}" replaced by rank, into out (path itself
 * when it has none). 0, or -1 when it does not fit in outlen. */
int routing_npy_rank_path(const char *path, int rank, char *out, size_t outlen);

/* NULL-terminated list of every kernel. */
const kernel_desc *const *kernels_all(void);
/* The kernel called name (its descriptor, static); NULL when none is. */
const kernel_desc *kernels_find(const char *name);

#endif

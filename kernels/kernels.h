/*
 * kernels.h - the kernel set: the seeds' kernels and A2's own, built in,
 * and the kernels of loaded plugins, as the CLI sees them.
 *
 * Each kernel is a descriptor of the plugin ABI (npurr/plugin.h): its name
 * (`-k NAME`), the options it accepts with defaults and help, a setup that
 * allocates and fills the cluster's memories and launches the device code,
 * a check that compares the outputs with a CPU reference after the run,
 * and optionally a layout printer, a memory estimate and progress. The
 * built-in ones are listed in registry.c; a plugin's are added when it is
 * loaded (plugin_load.c), refused when a name is taken. Options arrive as
 * name/value strings so the CLI stays thin.
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

#include "npurr/plugin.h"

/* The plugin ABI's types are the kernels' types: a built-in kernel is an
 * npurr_kernel descriptor like a plugin's, and makes its host calls through
 * the same npurr_host table (npurr/plugin.h). */
typedef struct engine engine;          /* the engine's host header: a cluster */
struct engine_config;                  /* the same: a run's topology, chip, payload */

typedef npurr_option kernel_option;
/* The parsed options of one run: every option the kernel declares, with the
 * user's value or the default. */
typedef npurr_opts kernel_opts;
typedef npurr_kernel kernel_desc;
typedef npurr_phase kernel_phase;
typedef npurr_estimate kernel_estimate;
typedef npurr_setup_fn kernel_setup_fn;
typedef npurr_check_fn kernel_check_fn;
typedef npurr_layout_fn kernel_layout_fn;
typedef npurr_destroy_fn kernel_destroy_fn;
typedef npurr_progress_fn kernel_progress_fn;
typedef npurr_estimate_fn kernel_estimate_fn;

/* Fills o with every option d declares and its default value. */
void kopts_init(kernel_opts *o, const kernel_desc *d);
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

/* The topology a run of cfg has (its chip's cores from the engine's
 * table), as kernels see it: 0, or -1 with err when the chip is in no row
 * of that table. */
int kernels_topology(const struct engine_config *cfg, npurr_topology *t, char *err,
                     size_t errlen);
/* The host table npurr gives every kernel, built-in or plugin (kit_host.c);
 * static. */
const npurr_host *kernels_host(void);

/* Validates o against topology t as the kernel's setup would (so a shape
 * the kernel refuses is refused before any engine exists), then fills est
 * (t's payload mode decides what moved rows cost). Returns 0, or -1 with
 * err naming the option at fault. The one estimate `record` and `layout`
 * check against the machine's memory. */
int kernel_estimate_memory(const kernel_desc *k, const kernel_opts *o, const npurr_topology *t,
                           kernel_estimate *est, char *err, size_t errlen);

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

/* ---- NumPy .npy files (npy.c): inputs a kernel reads, tensors --dump writes ---- */

#define NPY_MAX_DIMS NPURR_MAX_DIMS
/* A .npy header as npy_parse accepts it: a C-order array of one of the
 * element types npurr_dtype names. */
typedef struct npy_header {
    npurr_dtype dtype;
    char descr[16];        /* as the file says: "<i8" */
    int elem;              /* bytes an element */
    int swap;              /* big-endian data: bytes to reverse on this host */
    int ndim;
    int64_t shape[NPY_MAX_DIMS];
    size_t data_off;       /* where the array starts */
    uint64_t data_bytes;   /* the product of shape times elem: exactly what follows data_off */
} npy_header;
/* Parses the first len bytes of a .npy file (magic, version 1-3, header
 * dict); reads nothing past len. 0, or -1 with err saying what the file is
 * instead ("holds dtype '<c16'...", "is in Fortran order"). */
int npy_parse(const unsigned char *buf, size_t len, npy_header *h, char *err, size_t errlen);
/* Writes a version 1.0 .npy header for a C-order array of dtype and shape
 * (ndim dimensions; bfloat16 has no NumPy type: write it as float32) to
 * out: 0, or -1 on a write error or a dtype no .npy descr names. */
int npy_write_header(FILE *out, npurr_dtype dtype, int ndim, const uint64_t *shape);
/* Bytes of one element of t (0 for NPURR_DT_UNKNOWN). */
int npy_dtype_size(npurr_dtype t);
/* NumPy's name of t ("int32", "bfloat16"); static. */
const char *npy_dtype_name(npurr_dtype t);

/* ---- the kernel list (registry.c) ---- */

/* NULL-terminated list of the built-in kernels (static). */
const kernel_desc *const *kernels_builtin(void);
/* NULL-terminated list of every kernel: the built-in ones, then each loaded
 * plugin's in load order. Valid until the next kernels_load_plugin. */
const kernel_desc *const *kernels_all(void);
/* The kernel called name, built in or of a loaded plugin (its descriptor,
 * static or the plugin's); NULL when none is. */
const kernel_desc *kernels_find(const char *name);

/* ---- plugins (plugin_load.c) ---- */

/* A loaded plugin: a shared object that exported the plugin ABI. */
typedef struct kernel_plugin {
    char path[4096];            /* as given to kernels_load_plugin */
    char name[128];             /* what its npurr_plugin_abi says */
    char sha256[65];            /* of the file as it was loaded */
    unsigned abi_major, abi_minor;
    const kernel_desc *const *kernels;   /* NULL-terminated, the plugin's */
    void *handle;               /* dlopen's */
} kernel_plugin;
/* Loads the plugin at path (a shared object exporting npurr_plugin_abi and
 * npurr_plugin_kernels) and adds its kernels to the set, so kernels_find
 * finds them; loading the same file, or a file of the same content (a
 * run's copy of a plugin loaded from where it was built), again returns
 * the plugin loaded before. Refused, with err naming path, when it is no shared object, not a
 * plugin, of another ABI major version, lists no kernel or a malformed one,
 * or names a kernel that is already built in or loaded. 0 with *out (static,
 * until the process ends), or -1 with err. */
int kernels_load_plugin(const char *path, const kernel_plugin **out, char *err, size_t errlen);
/* The loaded plugin kernel k comes from; NULL for a built-in kernel. */
const kernel_plugin *kernels_plugin_of(const kernel_desc *k);

#endif

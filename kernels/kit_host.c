/*
 * kit_host.c - the host table of the plugin ABI (npurr/plugin.h's
 * npurr_host): the engine calls a kernel's host side may make, for the
 * built-in kernels and every plugin alike.
 *
 * Kernel files are written against npurr/device.h and npurr/plugin.h. Their
 * host side (setup, check, layout, estimate) needs a few calls of
 * engine/engine.h: allocate and view GM, declare generated inputs, read
 * .npy inputs, name words, rings and tensors, launch, read the run's
 * topology. This file is the only one in kernels/ that includes engine.h
 * (the layering check refuses any other), so those calls are the table
 * below and nothing else of the host API (running, observers, split runs,
 * reports) is reachable from a kernel. Each entry is the engine's own call:
 * no event moves when a kernel goes through the table.
 */
#include "kit.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "engine/engine.h"

int kernels_topology(const engine_config *cfg, npurr_topology *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    const engine_chip_info *ci = engine_chip_get(cfg->chip);
    if (!ci) {
        snprintf(err, errlen, "chip %d: not %s", (int)cfg->chip, engine_chips_text());
        return -1;
    }
    t->nodes = cfg->nodes;
    t->npus_per_node = cfg->npus_per_node;
    t->ranks = cfg->nodes * cfg->npus_per_node;
    t->aic = ci->aic;
    t->aiv = ci->aiv;
    t->chip = ci->name;
    t->payload_full = cfg->payload == PAYLOAD_FULL;
    return 0;
}

static void host_topology(const engine *e, npurr_topology *t) {
    char err[128];
    /* an engine exists only for a configuration whose chip is in the table */
    (void)kernels_topology(engine_get_config(e), t, err, sizeof err);
}

static int host_rank_local(const engine *e, int rank) { return engine_rank_local(e, rank); }

static int host_gm_alloc(engine *e, int rank, uint64_t bytes, const char *name, gm_t *out,
                         char *err, size_t errlen) {
    return engine_gm_alloc(e, rank, bytes, name, out, err, errlen) == ENGINE_OK ? 0 : -1;
}

static int host_sym_alloc(engine *e, uint64_t bytes, const char *name, gm_t *out, char *err,
                          size_t errlen) {
    return engine_sym_alloc(e, bytes, name, out, err, errlen) == ENGINE_OK ? 0 : -1;
}

static int host_gm_read(engine *e, gm_t p, void *out, uint64_t bytes) {
    return engine_gm_read(e, p, out, bytes) == ENGINE_OK ? 0 : -1;
}

static int host_gm_generate(engine *e, gm_t p, uint64_t rows, uint64_t row_bytes,
                            engine_row_fn fn, const void *params, size_t params_size, char *err,
                            size_t errlen) {
    return engine_gm_generate(e, p, rows, row_bytes, fn, params, params_size, err, errlen) ==
                   ENGINE_OK
               ? 0
               : -1;
}

static int host_name_tensor(engine *e, gm_t p, const npurr_tensor *t, const char *name,
                            char *err, size_t errlen) {
    int size = npy_dtype_size(t->dtype);
    if (!size || t->ndim < 0 || t->ndim > NPURR_MAX_DIMS) {
        snprintf(err, errlen, "tensor '%s': dtype %d with %d dimensions is no tensor npurr "
                 "can write", name ? name : "", (int)t->dtype, t->ndim);
        return -1;
    }
    engine_tensor et = {.name = name, .addr = p, .dtype = (int)t->dtype, .ndim = t->ndim};
    uint64_t elems = 1;
    for (int i = 0; i < t->ndim; i++) {
        et.shape[i] = t->shape[i];
        elems *= t->shape[i];
    }
    et.bytes = elems * (uint64_t)size;
    return engine_name_tensor(e, &et, err, errlen) == ENGINE_OK ? 0 : -1;
}

/* The header of the .npy file at f (size bytes), checked against its size. */
static int read_npy_header(FILE *f, uint64_t size, npy_header *h, char *why, size_t whylen) {
    size_t want = size < (1u << 16) + 12 ? (size_t)size : (1u << 16) + 12;
    unsigned char *buf = malloc(want ? want : 1);
    int rc = !buf || fread(buf, 1, want, f) != want
                 ? (snprintf(why, whylen, "cannot be read"), -1)
                 : npy_parse(buf, want, h, why, whylen);
    free(buf);
    if (!rc && size - h->data_off != h->data_bytes) {
        snprintf(why, whylen, "holds %llu bytes of data but its header announces %llu",
                 (unsigned long long)(size - h->data_off), (unsigned long long)h->data_bytes);
        rc = -1;
    }
    return rc;
}

static int host_gm_from_npy(engine *e, const npurr_opts *o, const char *option, int rank,
                            const char *name, gm_t *out, npurr_tensor *t, char *err,
                            size_t errlen) {
    const char *value = NULL;
    if (kopt_str(o, option, &value) || !value) {
        snprintf(err, errlen, "--%s: not an option of this kernel", option);
        return -1;
    }
    const char *path = routing_npy_file(value);
    if (!path) {
        snprintf(err, errlen, "--%s %s: not a file (npy:PATH, \"%s\" in PATH for one per rank)",
                 option, value, ROUTING_NPY_RANK);
        return -1;
    }
    char file[4096], why[256];
    if (routing_npy_rank_path(path, rank, file, sizeof file)) {
        snprintf(err, errlen, "--%s: path too long", option);
        return -1;
    }
    FILE *f = kit_fopen_input(file, why, sizeof why);
    if (!f) {
        snprintf(err, errlen, "--%s: cannot open %s: %s", option, file, why);
        return -1;
    }
    struct stat st;
    npy_header h;
    int rc = -1;
    if (fstat(fileno(f), &st) != 0) {
        snprintf(err, errlen, "--%s: %s: %s", option, file, strerror(errno));
    } else if (read_npy_header(f, (uint64_t)st.st_size, &h, why, sizeof why)) {
        snprintf(err, errlen, "--%s: %s %s", option, file, why);
    } else if (host_gm_alloc(e, rank, h.data_bytes ? h.data_bytes : 1, name, out, err,
                             errlen) == 0) {
        uint8_t *dst = h.data_bytes ? engine_gm_host(e, *out, h.data_bytes) : NULL;
        if (h.data_bytes && (!dst || fseek(f, (long)h.data_off, SEEK_SET) != 0 ||
                             fread(dst, 1, h.data_bytes, f) != h.data_bytes)) {
            snprintf(err, errlen, "--%s: %s: cannot read its %llu bytes of data", option, file,
                     (unsigned long long)h.data_bytes);
        } else {
            if (h.swap)
                for (uint64_t i = 0; i + (uint64_t)h.elem <= h.data_bytes; i += (uint64_t)h.elem)
                    for (int a = 0, b = h.elem - 1; a < b; a++, b--) {
                        uint8_t x = dst[i + (uint64_t)a];
                        dst[i + (uint64_t)a] = dst[i + (uint64_t)b];
                        dst[i + (uint64_t)b] = x;
                    }
            memset(t, 0, sizeof *t);
            t->dtype = h.dtype;
            t->ndim = h.ndim;
            for (int i = 0; i < h.ndim; i++) t->shape[i] = (uint64_t)h.shape[i];
            rc = h.data_bytes ? host_name_tensor(e, *out, t, name, err, errlen) : 0;
        }
    }
    fclose(f);
    return rc;
}

static int host_hccl_group(engine *e, int group, gm_t context, gm_t win_in, gm_t win_out,
                           uint64_t win_size, char *err, size_t errlen) {
    engine_hccl g = {1, context, win_in, win_out, win_size};
    return engine_hccl_group(e, group, &g, err, errlen) == ENGINE_OK ? 0 : -1;
}

static const npurr_host host_table = {
    .abi_major = NPURR_ABI_MAJOR,
    .abi_minor = NPURR_ABI_MINOR,
    .size = sizeof(npurr_host),
    .opt_str = kopt_str,
    .opt_i64 = kopt_i64,
    .opt_f64 = kopt_f64,
    .opt_i64_range = kopt_i64_range,
    .topology = host_topology,
    .rank_local = host_rank_local,
    .gm_alloc = host_gm_alloc,
    .sym_alloc = host_sym_alloc,
    .gm_host = engine_gm_host,
    .gm_read = host_gm_read,
    .gm_generate = host_gm_generate,
    .gm_equal = engine_gm_equal,
    .gm_equal_generated = engine_gm_equal_generated,
    .gm_from_npy = host_gm_from_npy,
    .name_word = engine_name_word,
    .declare_ring = engine_declare_ring,
    .name_tensor = host_name_tensor,
    .launch = engine_launch,
    .gm_addr = engine_gm_host_addr,
    .hccl_group = host_hccl_group,
    .moe_routing = kit_moe_routing,
    .moe_row = kit_moe_row,
};

/* The built-in kernels' copy of the pointer every plugin keeps
 * (npurr/plugin.h): their npurr_* calls go through the same table. */
const npurr_host *npurr_host_api = &host_table;

const npurr_host *kernels_host(void) { return &host_table; }

FILE *kit_fopen_input(const char *path, char *why, size_t whylen) {
    return engine_fopen_input(path, why, whylen);
}

int kit_sha256_file(const char *path, char hex[65], char *why, size_t whylen) {
    return engine_sha256_file(path, hex, why, whylen);
}

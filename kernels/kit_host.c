/*
 * kit_host.c - the kernels' one door to the engine's host API (kit.h, the
 * host API section).
 *
 * Kernel files are written against engine/device.h. Their host side
 * (setup, check, layout, estimate, the npy routing reader) needs a few
 * calls of engine/engine.h: allocate and view GM, declare generated
 * inputs, name words and rings, launch, read the run's topology. This file
 * is the only one in kernels/ that includes engine.h (the layering check
 * refuses any other), so those calls are the list below and nothing else
 * of the host API (running, observers, split runs, reports) is reachable
 * from a kernel. Each call is the engine's own, unchanged: no event moves.
 */
#include "kit.h"

#include "engine/engine.h"

const engine_config *kit_config(const engine *e) { return engine_get_config(e); }
int kit_rank_local(const engine *e, int rank) { return engine_rank_local(e, rank); }

int kit_cores(const engine_config *cfg, engine_core_type type, char *err, size_t errlen) {
    const engine_chip_info *ci = engine_chip_get(cfg->chip);
    if (!ci) {
        snprintf(err, errlen, "chip %d: not %s", (int)cfg->chip, engine_chips_text());
        return -1;
    }
    return type == CORE_AIV ? ci->aiv : ci->aic;
}

int kit_gm_alloc(engine *e, int rank, uint64_t bytes, const char *name, gm_t *out, char *err,
                 size_t errlen) {
    return engine_gm_alloc(e, rank, bytes, name, out, err, errlen);
}

int kit_sym_alloc(engine *e, uint64_t bytes, const char *name, gm_t *out, char *err,
                  size_t errlen) {
    return engine_sym_alloc(e, bytes, name, out, err, errlen);
}

void *kit_gm_host(engine *e, gm_t p, uint64_t bytes) { return engine_gm_host(e, p, bytes); }

int kit_gm_read(engine *e, gm_t p, void *out, uint64_t bytes) {
    return engine_gm_read(e, p, out, bytes);
}

int kit_gm_generate(engine *e, gm_t p, uint64_t rows, uint64_t row_bytes, engine_row_fn fn,
                    const void *params, size_t params_size, char *err, size_t errlen) {
    return engine_gm_generate(e, p, rows, row_bytes, fn, params, params_size, err, errlen);
}

int kit_gm_equal(engine *e, gm_t a, gm_t b, uint64_t bytes, uint64_t *diff) {
    return engine_gm_equal(e, a, b, bytes, diff);
}

int kit_gm_equal_generated(engine *e, gm_t p, uint64_t rows, uint64_t row_bytes,
                           engine_row_fn fn, const void *params, size_t params_size,
                           uint64_t *diff) {
    return engine_gm_equal_generated(e, p, rows, row_bytes, fn, params, params_size, diff);
}

uint32_t kit_name_word(engine *e, gm_t addr, uint32_t width, engine_obj_kind kind,
                       const char *name) {
    return engine_name_word(e, addr, width, kind, name);
}

uint32_t kit_declare_ring(engine *e, const char *name, engine_ring_kind kind, gm_t head,
                          gm_t tail, uint32_t width, uint64_t capacity, int producer_rank,
                          int consumer_rank) {
    return engine_declare_ring(e, name, kind, head, tail, width, capacity, producer_rank,
                               consumer_rank);
}

int kit_launch(engine *e, const char *name, engine_kernel_fn fn, const void *args,
               int block_dim, engine_core_type type, char *err, size_t errlen) {
    return engine_launch(e, name, fn, args, block_dim, type, err, errlen);
}

FILE *kit_fopen_input(const char *path, char *why, size_t whylen) {
    return engine_fopen_input(path, why, whylen);
}

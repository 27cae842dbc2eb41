/*
 * kit_guard.c - guard regions (kit.h): bytes after a kernel's buffers that
 * must hold the kernel's guard byte after the run.
 *
 * Setup fills each region on the host (no event is recorded) and keeps a
 * list; the check walks the list. A kernel that writes past the end of a
 * buffer, or a ring writer that overruns its ring, is then named by buffer,
 * rank and GM offset instead of corrupting a neighbour silently.
 */
#include "kit.h"

#include <stdlib.h>
#include <string.h>

#include "npurr/device.h"

void kit_guards_init(kit_guards *g, const char *owner, uint8_t value) {
    *g = (kit_guards){.owner = owner, .value = value};
}

void kit_guards_free(kit_guards *g) {
    free(g->v);
    g->v = NULL;
    g->n = g->cap = 0;
}

int kit_guard_expect(kit_guards *g, gm_t at, uint32_t bytes, uint8_t value, const char *what,
                     char *err, size_t errlen) {
    if (g->n == g->cap) {
        int cap = g->cap ? g->cap * 2 : 64;
        kit_guard *v = realloc(g->v, sizeof *v * (size_t)cap);
        if (!v) {
            snprintf(err, errlen, "%s: out of host memory for guard regions", g->owner);
            return -1;
        }
        g->v = v;
        g->cap = cap;
    }
    g->v[g->n++] = (kit_guard){at, bytes, value, what};
    return 0;
}

int kit_guard_fill(engine *e, kit_guards *g, gm_t at, uint32_t bytes, const char *what,
                   char *err, size_t errlen) {
    uint8_t *h = npurr_gm_host(e, at, bytes);
    if (!h) {
        snprintf(err, errlen, "%s: no host view of %s on rank %d", g->owner, what, gm_rank(at));
        return -1;
    }
    memset(h, g->value, bytes);
    return kit_guard_expect(g, at, bytes, g->value, what, err, errlen);
}

int kit_sym_guarded(engine *e, kit_guards *g, int num_ranks, uint64_t bytes, const char *what,
                    gm_t *out, char *err, size_t errlen) {
    if (npurr_sym_alloc(e, bytes + KIT_GUARD_BYTES, what, out, err, errlen) != 0) return -1;
    for (int r = 0; r < num_ranks; r++)
        if (kit_guard_fill(e, g, gm_add(gm_on_rank(*out, r), (int64_t)bytes), KIT_GUARD_BYTES,
                           what, err, errlen))
            return -1;
    return 0;
}

static int kit_alloc(engine *e, kit_guards *g, int rank, uint64_t bytes, const char *what, int guarded,
              gm_t *out, char *err, size_t errlen) {
    uint64_t data = bytes < UB_ALIGN ? UB_ALIGN : kit_align_up(bytes, UB_ALIGN);
    uint64_t total = data + (guarded ? KIT_GUARD_BYTES : 0);
    if (npurr_gm_alloc(e, rank, total, what, out, err, errlen) != 0) return -1;
    /* `--dump WHAT@RANK` writes the buffer, not its guard; a kernel that
     * knows the element type names it again (kit_name_rows) */
    npurr_tensor t = {NPURR_DT_U8, 1, {bytes}};
    if (bytes && npurr_name_tensor(e, *out, &t, what, err, errlen)) return -1;
    if (!guarded) return 0;
    return kit_guard_fill(e, g, gm_add(*out, (int64_t)bytes), (uint32_t)(total - bytes), what,
                          err, errlen);
}

int kit_alloc_all(engine *e, kit_guards *g, int rank, const kit_buffer *bufs, size_t n,
                  char *err, size_t errlen) {
    for (size_t i = 0; i < n; i++)
        if (kit_alloc(e, g, rank, bufs[i].bytes, bufs[i].what, bufs[i].guarded, bufs[i].out, err,
                      errlen))
            return -1;
    return 0;
}

int kit_guards_check(engine *e, const kit_guards *g, char *msg, size_t msglen) {
    for (int i = 0; i < g->n; i++) {
        const kit_guard *r = &g->v[i];
        const uint8_t *h = npurr_gm_host(e, r->at, r->bytes);
        if (!h) {
            snprintf(msg, msglen, "guard of %s on rank %d: no host view", r->what, gm_rank(r->at));
            return 1;
        }
        for (uint32_t b = 0; b < r->bytes; b++)
            if (h[b] != r->value) {
                snprintf(msg, msglen,
                         "%s on rank %d: byte %u of the guard region (GM offset 0x%llx) is 0x%02x, "
                         "expected 0x%02x: something wrote outside the buffer",
                         r->what, gm_rank(r->at), b,
                         (unsigned long long)(gm_offset(r->at) + b), h[b], r->value);
                return 1;
            }
    }
    return 0;
}

int kit_name_rows(engine *e, gm_t p, const char *name, npurr_dtype dtype, uint64_t rows,
                  uint64_t cols, char *err, size_t errlen) {
    if (!rows || !cols) return 0;
    npurr_tensor t = {dtype, 2, {rows, cols}};
    return npurr_name_tensor(e, p, &t, name, err, errlen);
}

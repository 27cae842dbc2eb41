/*
 * tensors.c - GM ranges a kernel named as tensors, so a user can ask for
 * them by name after a run (`record --dump NAME@RANK=FILE.npy`), and the
 * lookup of an allocation by its name when no tensor was named.
 *
 * The engine keeps the name, range, element type and shape and nothing
 * else: what a dtype means is the plugin ABI's (npurr/plugin.h), and the
 * bytes are read like any other GM (engine_gm_read) when they are wanted.
 * Named tensors are host metadata: no event, no trace record, no interned
 * string.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int engine_name_tensor(engine *e, const engine_tensor *t, char *err, size_t errlen) {
    const gm_alloc *a = eng_gm_find(e, t->addr);
    if (!t->name || !*t->name) {
        snprintf(err, errlen, "a tensor needs a name");
        return ENGINE_ERR;
    }
    if (!a || t->bytes == 0 || t->bytes > a->size - (gm_offset(t->addr) - a->off)) {
        snprintf(err, errlen, "tensor '%s': %llu bytes at rank %d offset 0x%llx are not inside "
                 "one GM allocation", t->name, (unsigned long long)t->bytes, gm_rank(t->addr),
                 (unsigned long long)gm_offset(t->addr));
        return ENGINE_ERR;
    }
    if (t->ndim < 0 || t->ndim > 8) {
        snprintf(err, errlen, "tensor '%s': %d dimensions (at most 8)", t->name, t->ndim);
        return ENGINE_ERR;
    }
    /* a copy of the name, not an interned string: interning would
     * declare a string to the observer and move every later id */
    engine_tensor copy = *t;
    char *name = strdup(t->name);
    if (!name) {
        snprintf(err, errlen, "tensor '%s': out of memory", t->name);
        return ENGINE_ERR;
    }
    copy.name = name;
    for (int i = 0; i < e->n_tensors; i++)
        if (strcmp(e->tensors[i].name, copy.name) == 0 &&
            gm_rank(e->tensors[i].addr) == gm_rank(copy.addr)) {
            free((char *)e->tensors[i].name);
            e->tensors[i] = copy;
            return ENGINE_OK;
        }
    if (e->n_tensors == e->cap_tensors) {
        int cap = e->cap_tensors ? e->cap_tensors * 2 : 16;
        engine_tensor *grown = realloc(e->tensors, (size_t)cap * sizeof *grown);
        if (!grown) {
            free(name);
            snprintf(err, errlen, "tensor '%s': out of memory", t->name);
            return ENGINE_ERR;
        }
        e->tensors = grown;
        e->cap_tensors = cap;
    }
    e->tensors[e->n_tensors++] = copy;
    return ENGINE_OK;
}

int engine_tensor_find(engine *e, const char *name, int rank, engine_tensor *out) {
    for (int i = 0; i < e->n_tensors; i++)
        if (gm_rank(e->tensors[i].addr) == rank && strcmp(e->tensors[i].name, name) == 0) {
            *out = e->tensors[i];
            return 1;
        }
    if (rank < 0 || rank >= e->n_ranks) return 0;
    const rank_state *rs = &e->ranks[rank];
    for (int i = 0; i < rs->n_allocs; i++) {
        const char *alloc_name = engine_string(e, rs->allocs[i].name);
        if (strcmp(alloc_name, name) != 0) continue;
        memset(out, 0, sizeof *out);
        out->name = alloc_name;
        out->addr = gm_make(rank, rs->allocs[i].off);
        out->bytes = rs->allocs[i].size;
        out->ndim = 1;
        out->shape[0] = out->bytes;
        return 1;
    }
    return 0;
}

void engine_tensor_names(engine *e, int rank, void (*fn)(void *ctx, const char *name), void *ctx) {
    for (int i = 0; i < e->n_tensors; i++)
        if (gm_rank(e->tensors[i].addr) == rank) fn(ctx, e->tensors[i].name);
    if (rank < 0 || rank >= e->n_ranks) return;
    const rank_state *rs = &e->ranks[rank];
    for (int i = 0; i < rs->n_allocs; i++) {
        const char *name = engine_string(e, rs->allocs[i].name);
        int named = 0;   /* a tensor of that name stands for it */
        for (int j = 0; j < e->n_tensors && !named; j++)
            named = gm_rank(e->tensors[j].addr) == rank && strcmp(e->tensors[j].name, name) == 0;
        if (!named) fn(ctx, name);
    }
}

void eng_tensors_free(engine *e) {
    for (int i = 0; i < e->n_tensors; i++) free((char *)e->tensors[i].name);
    free(e->tensors);
    e->tensors = NULL;
    e->n_tensors = e->cap_tensors = 0;
}

/*
 * host_addr.c - GM addresses as host pointers, for front ends whose kernels
 * hold GM as plain pointers (Ascend C's GM_ADDR, `__gm__ T *`).
 *
 * Every GM allocation is a host mapping of its own (memory.c). A kernel of
 * the Ascend C headers is given, and computes with, pointers into those
 * mappings: a window's address plus an offset, a struct of tiling data read
 * in place. Each call that moves or reads data turns such a pointer back
 * into the engine's address (rank and offset) through this index: the
 * mappings of every rank sorted by host address, found by binary search.
 * Nothing is materialized here: a pointer names bytes, the call that uses
 * it decides what happens to them.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

void eng_host_index_add(engine *e, const uint8_t *host, uint64_t size, int rank, uint64_t off) {
    if (e->n_host == e->cap_host) {
        int cap = e->cap_host ? e->cap_host * 2 : 64;
        host_span *grown = realloc(e->host_index, (size_t)cap * sizeof *grown);
        if (!grown) abort();
        e->host_index = grown;
        e->cap_host = cap;
    }
    int pos = e->n_host;
    while (pos > 0 && e->host_index[pos - 1].host > host) pos--;
    memmove(&e->host_index[pos + 1], &e->host_index[pos],
            (size_t)(e->n_host - pos) * sizeof *e->host_index);
    e->host_index[pos] = (host_span){host, size ? size : 1, rank, off};
    e->n_host++;
}

int engine_gm_from_host(const engine *e, const void *p, gm_t *out) {
    const uint8_t *q = p;
    int lo = 0, hi = e->n_host - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        const host_span *h = &e->host_index[mid];
        if (q < h->host) hi = mid - 1;
        else if (q >= h->host + h->size) lo = mid + 1;
        else {
            *out = gm_make(h->rank, h->off + (uint64_t)(q - h->host));
            return 1;
        }
    }
    return 0;
}

void *engine_gm_host_addr(engine *e, gm_t p) {
    const gm_alloc *a = eng_gm_find(e, p);
    return a ? a->seg->host + (gm_offset(p) - a->off) : NULL;
}

gm_t dev_gm_from_host(const void *p, dev_site s) {
    core *c = eng_current("GlobalTensor");
    c->calls--;   /* address arithmetic, no step of the kernel's (dev_gm_load's poll loops) */
    gm_t g;
    if (!engine_gm_from_host(c->e, p, &g))
        eng_fault(c, s, "GM address %p is in no GM allocation of the run (a __gm__ pointer "
                  "must point into a buffer npurr allocated)", p);
    return g;
}

void *dev_gm_to_host(gm_t p, dev_site s) {
    core *c = eng_current("GM address");
    void *h = engine_gm_host_addr(c->e, p);
    if (!h)
        eng_fault(c, s, "GM address rank %d offset 0x%llx is in no allocation", gm_rank(p),
                  (unsigned long long)gm_offset(p));
    return h;
}

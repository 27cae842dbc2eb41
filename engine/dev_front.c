/*
 * dev_front.c - small device calls a front end over the device API needs
 * (npurr/device_calls.h, "calls for other front ends"): per-core storage,
 * releasing local memory (TPipe::Reset), the system counter, the data cache
 * operation and the atomic mode of MTE3 copies.
 *
 * Per-core storage exists because every emulated core runs in one address
 * space: the Ascend C headers keep "the current TPipe" of a core there,
 * not in a static that all cores would share.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>

#define CORE_STORAGE_BYTES 256

void *dev_core_storage(void) {
    core *c = eng_current("per-core storage");
    if (!c->storage) {
        c->storage = calloc(1, CORE_STORAGE_BYTES);
        if (!c->storage) abort();
    }
    return c->storage;
}

void eng_core_storage_free(core *c) {
    free(c->storage);
    c->storage = NULL;
}

uint32_t dev_local_used(int space) {
    core *c = eng_current("local memory");
    return space >= LM_UB && space <= LM_L0C ? c->local_used[space] : 0;
}

void dev_local_release(int space, uint32_t used, dev_site s) {
    core *c = eng_current("TPipe::Reset");
    if (space < LM_UB || space > LM_L0C || used > c->local_used[space])
        eng_fault(c, s, "TPipe::Reset: %u bytes of local memory %d were never allocated", used,
                  space);
    c->local_used[space] = used;
}

uint64_t dev_system_cycle(dev_site s) {
    (void)s;
    core *c = eng_current("GetSystemCycle");
    eng_advance(c, c->e->rate.scalar_ps);
    return c->now / 20000;   /* 50 MHz: 20,000 ps a tick */
}

void dev_dcache_sync(gm_t p, uint64_t bytes, dev_site s) {
    core *c = eng_current("DataCacheCleanAndInvalid");
    c->calls--;   /* a poll loop's own step: it does not end the loop (dev_gm_load) */
    eng_gm_check(c, p, bytes ? bytes : 1, s, "DataCacheCleanAndInvalid");
    /* a cache line written back or dropped: one GM write's time */
    eng_advance(c, c->e->rate.scalar_ps + c->e->rate.gm_write_ps);
}

void dev_set_atomic_op(int op, int dtype, dev_site s) {
    core *c = eng_current("SetAtomic");
    eng_advance(c, c->e->rate.scalar_ps);
    if (op && op != ATOMIC_ADD && op != ATOMIC_MAX && op != ATOMIC_MIN)
        eng_fault(c, s, "SetAtomic: %d is not add, max or min", op);
    if (op && !eng_dtype_size(dtype) && dtype != DEV_DT_INT16 && dtype != DEV_DT_UINT32)
        eng_fault(c, s, "SetAtomic: %d is not a data type MTE3 accumulates", dtype);
    c->atomic_dtype = op ? dtype : 0;
    c->atomic_op = op;
}

void dev_set_deq_scale(float scale, dev_site s) {
    core *c = eng_current("SetDeqScale");
    eng_advance(c, c->e->rate.scalar_ps);
    if (!isfinite(scale)) eng_fault(c, s, "SetDeqScale: scale %g is not finite", (double)scale);
    c->deq_scale = scale;
}

void dev_unsupported(const char *what, dev_site s) {
    core *c = eng_current("device call");
    eng_fault(c, s, "%s", what);
}

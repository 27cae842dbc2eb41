/*
 * hooks.c - the checker hooks of engine_observer.on_hook (engine.h).
 *
 * A happens-before checker needs every byte range a transfer reads and
 * writes, and the synchronisation that leaves no event (a WaitFlag that
 * holds a pipe, a PipeBarrier or RdmaQuiet with nothing left to wait for, a
 * cross-core flag consumed without blocking, UB scalar access). The device
 * API calls these functions at those points; each returns at once unless an
 * observer asked for hooks, and none changes any state of the run, so the
 * event stream is the same with or without a checker.
 *
 * The ranges of a transfer are derived here from the xfer itself, so the
 * device API files carry one call each and no knowledge of the checker.
 */
#include "internal.h"

static const uint32_t local_size[LM_L0C + 1] = {0, UB_BYTES, L1_BYTES, L0A_BYTES, L0B_BYTES, L0C_BYTES};

static void emit(engine *e, engine_hook *h) { e->obs.on_hook(e->obs.ctx, h); }

/* local_raw of a host pointer into one of the core's local memories. */
static uint64_t local_raw_of(const core *c, const uint8_t *p) {
    for (int s = LM_UB; s <= LM_L0C; s++) {
        const uint8_t *base = c->local[s].host;
        if (base && p >= base && p < base + local_size[s])
            return local_raw((local_t){(uint32_t)s, (uint32_t)(p - base)});
    }
    return 0;
}

static void range(engine *e, const xfer *x, uint64_t addr, uint64_t len, int write, int atomic) {
    if (!addr || !len) return;
    engine_hook h = {.kind = HOOK_ACCESS, .pipe = (uint8_t)x->pipe, .write = (uint8_t)write,
                     .atomic = (uint8_t)atomic, .rank = (uint32_t)x->rank,
                     .core = (uint32_t)x->core_index, .site = x->site, .seq = x->issue_seq,
                     .addr = addr, .len = len};
    emit(e, &h);
}

typedef struct range_ctx {
    engine *e;
    const xfer *x;
    int atomic;
} range_ctx;

static void block_range(void *ctx, uint64_t addr, uint64_t len, int write) {
    range_ctx *r = ctx;
    range(r->e, r->x, addr, len, write, write && r->atomic);
}

void eng_hook_xfer(engine *e, const xfer *x) {
    if (!e->obs.on_hook || x->op == OP_XCORE) return;
    const core *c = eng_core(e, x->rank, x->core_index);
    uint64_t n = x->n;
    switch (x->op) {
    case OP_COPY:
    case OP_BATCH_TASK:
        range(e, x, x->src_raw, x->bytes, 0, 0);
        range(e, x, x->dst_raw, x->bytes, 1, x->atomic_dtype != 0);
        break;
    case OP_COPY_PAD_IN:
        range(e, x, x->src_raw, x->bytes, 0, 0);
        range(e, x, x->dst_raw, (x->bytes + UB_ALIGN - 1) / UB_ALIGN * UB_ALIGN, 1, 0);
        break;
    case OP_STORE:
        range(e, x, x->dst_raw, (uint64_t)x->width, 1, 0);
        break;
    case OP_ATOMIC_ADD:
        range(e, x, x->dst_raw, (uint64_t)x->width, 1, 1);
        break;
    case OP_VEC_DUP:
        range(e, x, x->dst_raw, x->bytes, 1, 0);
        break;
    case OP_VEC_AXPY:
        range(e, x, x->src_raw, n * (uint64_t)eng_dtype_size(x->dtype2), 0, 0);
        range(e, x, x->dst_raw, n * 4, 0, 0);
        range(e, x, x->dst_raw, n * 4, 1, 0);
        break;
    case OP_VEC_ADD:
        range(e, x, x->src_raw, x->bytes, 0, 0);
        range(e, x, local_raw_of(c, x->src2), x->bytes, 0, 0);
        range(e, x, x->dst_raw, x->bytes, 1, 0);
        break;
    case OP_VEC_CAST:
        range(e, x, x->src_raw, n * (uint64_t)eng_dtype_size(x->dtype2), 0, 0);
        range(e, x, x->dst_raw, n * (uint64_t)eng_dtype_size(x->dtype), 1, 0);
        break;
    case OP_VEC_QUANT_I8:
        range(e, x, x->src_raw, n * (uint64_t)eng_dtype_size(x->dtype2), 0, 0);
        range(e, x, x->dst_raw, dev_quant_int8_bytes((uint32_t)n, x->k), 1, 0);
        break;
    case OP_VEC_DEQUANT_I8:
        range(e, x, x->src_raw, dev_quant_int8_bytes((uint32_t)n, x->k), 0, 0);
        range(e, x, x->dst_raw, n * 4, 1, 0);
        break;
    case OP_MMAD:
        range(e, x, x->src_raw, (uint64_t)x->m * x->k * 2, 0, 0);
        range(e, x, local_raw_of(c, x->src2), (uint64_t)x->k * x->n * 2, 0, 0);
        if (x->accumulate) range(e, x, x->dst_raw, x->bytes, 0, 0);
        range(e, x, x->dst_raw, x->bytes, 1, 0);
        break;
    case OP_FIXPIPE:
        range(e, x, x->src_raw, n * 4, 0, 0);
        range(e, x, x->dst_raw, x->bytes, 1, x->atomic_dtype != 0);
        break;
    case OP_COPY_BLOCKS: {
        range_ctx r = {e, x, x->atomic_dtype != 0};
        eng_copy_blocks_ranges(x, block_range, &r);
        break;
    }
    case OP_VEC_GEN:
        /* the span of each operand: a masked or strided instruction's
         * elements lie inside it */
        range(e, x, x->src_raw, x->ext[1], 0, 0);
        if (x->ext[2]) range(e, x, local_raw_of(c, x->src2), x->ext[2], 0, 0);
        range(e, x, x->dst_raw, x->ext[0], 1, 0);
        break;
    default:
        break;
    }
}

void eng_hook_sync(core *c, int kind, int sub, uint64_t len, dev_site s) {
    engine *e = c->e;
    if (!e->obs.on_hook) return;
    engine_hook h = {.kind = (uint8_t)kind, .pipe = PIPE_S, .rank = (uint32_t)c->rank,
                     .core = (uint32_t)c->index, .file = s.file, .line = s.line, .sub = sub,
                     .seq = c->last_seq, .len = len};
    emit(e, &h);
}

void eng_hook_local(core *c, local_t l, int width, int write, dev_site s) {
    engine *e = c->e;
    if (!e->obs.on_hook) return;
    engine_hook h = {.kind = HOOK_ACCESS, .pipe = PIPE_S, .write = (uint8_t)write,
                     .rank = (uint32_t)c->rank, .core = (uint32_t)c->index, .file = s.file,
                     .line = s.line, .seq = c->last_seq, .addr = local_raw(l), .len = (uint64_t)width};
    emit(e, &h);
}

const char *engine_gm_alloc_name(engine *e, gm_t p, gm_t *base) {
    if (gm_rank(p) < 0 || gm_rank(p) >= e->n_ranks) return NULL;
    const gm_alloc *a = eng_gm_find(e, p);
    if (!a) return NULL;
    if (base) *base = gm_make(gm_rank(p), a->off);
    return engine_string(e, a->name);
}

engine_observer engine_get_observer(const engine *e) { return e->obs; }

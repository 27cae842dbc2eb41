/*
 * vec_ops.c - the vector unit's general instruction, as Ascend C issues it:
 * elementwise operations, Cast and reductions over masked, repeated,
 * strided operands in UB (npurr/device_calls.h: dev_vec_elem,
 * dev_vec_convert, dev_vec_reduce_op).
 *
 * At issue the operands are checked (UB, 32 B aligned starts, every element
 * inside UB) and the instruction queued on V; it is busy one cycle's worth
 * of vector bandwidth per 256-byte repeat (a repeat with half its mask
 * costs a whole one, as on the chip) plus the instruction latency, and a
 * reduction one latency more per level it folds. At completion it reads and
 * writes the elements its shape names, repeat by repeat in order (an
 * instruction whose destination overlaps a later repeat's source sees that
 * repeat's new values, as a repeating unit would), with vec_math.c's exact
 * arithmetic. Bytes between selected elements are left as they were.
 */
#include "internal.h"
#include "vec.h"

#include <math.h>
#include <string.h>

/* Elements a repeat holds: 256 bytes of the widest operand. */
static uint32_t per_repeat(int size_a, int size_b) {
    return 256u / (uint32_t)(size_a > size_b ? size_a : size_b);
}

/* Where element j of repeat r is, in bytes from its operand's start. */
static uint64_t elem_off(const dev_vec_shape *sh, int operand, int size, uint32_t r, uint32_t j) {
    if (sh->count) return (uint64_t)j * (uint64_t)size;   /* one repeat: r is 0 */
    uint32_t per_block = 32u / (uint32_t)size;
    return (uint64_t)r * sh->rep[operand] * 32u + (uint64_t)(j / per_block) * sh->blk[operand] * 32u +
           (uint64_t)(j % per_block) * (uint64_t)size;
}

static int selected(const dev_vec_shape *sh, uint32_t j) {
    return sh->count || ((sh->mask[j / 64] >> (j % 64)) & 1);
}

/* Repeats and elements a repeat of shape visits (count mode: one repeat). */
static void walk_bounds(const dev_vec_shape *sh, uint32_t per, uint32_t *repeats, uint32_t *elems) {
    if (sh->count) {
        *repeats = 1;
        *elems = sh->count;
    } else {
        *repeats = sh->repeats;
        *elems = per > 128 ? 128 : per;   /* the mask has 128 bits */
    }
}

/* Bytes operand spans from its start (0 when the shape visits nothing). */
static uint64_t extent(const dev_vec_shape *sh, int operand, int size, uint32_t per) {
    uint32_t repeats, elems;
    walk_bounds(sh, per, &repeats, &elems);
    uint64_t end = 0;
    for (uint32_t r = 0; r < repeats; r++)
        for (uint32_t j = elems; j-- > 0;)
            if (selected(sh, j)) {
                uint64_t e = elem_off(sh, operand, size, r, j) + (uint64_t)size;
                if (e > end) end = e;
                break;
            }
    return end;
}

/* Repeats the unit spends on shape. */
static uint64_t cost_repeats(const dev_vec_shape *sh, int size_a, int size_b) {
    int size = size_a > size_b ? size_a : size_b;
    if (sh->count) return ((uint64_t)sh->count * (uint64_t)size + 255) / 256;
    return sh->repeats;
}

/* The host bytes of a UB operand spanning bytes, its segment in *seg. */
static uint8_t *operand(core *c, local_t l, uint64_t bytes, int align, dev_site s, const char *api,
                        mseg **seg) {
    if (l.space != LM_UB) eng_fault(c, s, "%s: vector operands live in UB", api);
    if (l.off % (uint32_t)align)
        eng_fault(c, s, "%s: UB address %u is not %d-byte aligned", api, l.off, align);
    return eng_local_at(c, l, bytes ? bytes : 1, s, api, seg);
}

/* A repeated shape's limits: 255 repeats, a mask within the repeat's per
 * elements (a count mask past them is the caller's error, not a wider op). */
static void check_shape(core *c, const dev_vec_shape *sh, uint32_t per, dev_site s, const char *api) {
    if (sh->count) return;
    if (sh->repeats > 255) eng_fault(c, s, "%s: repeatTimes %u is more than 255", api, sh->repeats);
    if (!sh->mask[0] && !sh->mask[1] && sh->repeats) eng_fault(c, s, "%s: the mask selects no element", api);
    uint64_t past = per >= 128 ? 0 : per >= 64 ? sh->mask[1] >> (per - 64) : sh->mask[1];
    if (per < 64 && (sh->mask[0] >> per)) past = 1;
    if (past) {
        int top = sh->mask[1] ? 127 - __builtin_clzll(sh->mask[1]) : 63 - __builtin_clzll(sh->mask[0]);
        eng_fault(c, s, "%s: the mask selects element %d of a repeat of %u", api, top, per);
    }
}

static xfer *queue(core *c, int op, dev_site s, const char *api) {
    eng_advance(c, c->e->rate.scalar_ps);
    if (c->is_aic) eng_fault(c, s, "%s: the vector unit is on AIV cores", api);
    /* caught up before the xfer is taken: other cores run in eng_sync and
     * may grow the xfer table under a pointer held across it */
    eng_sync(c);
    xfer *x = eng_xfer_new(c->e);
    x->op = op; x->kind = XFER_VEC; x->pipe = PIPE_V; x->peer = c->rank;
    return x;
}

static void issue(core *c, xfer *x, uint64_t repeats, int levels, dev_site s) {
    engine *e = c->e;
    x->bytes = repeats * 256;
    eng_xfer_issue_on(c, x, e->rate.vec_ps_per_byte, (uint64_t)levels * e->rate.vec_latency_ps, NULL, 0, 0, s);
}

void dev_vec_elem(int op, int dtype, local_t dst, local_t src0, local_t src1, double fscalar,
                  int64_t iscalar, const dev_vec_shape *shape, dev_site s) {
    core *c = eng_current("vector instruction");
    static const char *const names[] = {"vector instruction", "Add", "Sub", "Mul", "Div", "Max",
                                        "Min", "And", "Or", "Adds", "Muls", "Maxs", "Mins", "Abs",
                                        "Copy", "Duplicate"};
    const char *api = op >= VOP_ADD && op <= VOP_DUP ? names[op] : names[0];
    int size = eng_vec_dtype_size(dtype);
    if (!size || op < VOP_ADD || op > VOP_DUP) eng_fault(c, s, "%s: op %d on type %d", api, op, dtype);
    if (op == VOP_DIV && !eng_vec_is_float(dtype))
        eng_fault(c, s, "Div: the vector unit divides half and float only");
    uint32_t per = per_repeat(size, size);
    check_shape(c, shape, per, s, api);
    xfer *x = queue(c, OP_VEC_GEN, s, api);
    x->vshape = *shape;
    x->vop = op; x->dtype = dtype; x->scalar = fscalar; x->iscalar = iscalar;
    x->ext[0] = extent(shape, 0, size, per);
    x->dst = operand(c, dst, x->ext[0], 32, s, api, &x->dseg);
    x->dst_raw = local_raw(dst);
    if (op != VOP_DUP) {
        x->ext[1] = extent(shape, 1, size, per);
        x->src = operand(c, src0, x->ext[1], 32, s, api, &x->sseg);
        x->src_raw = local_raw(src0);
    }
    if (op <= VOP_OR) {
        x->ext[2] = extent(shape, 2, size, per);
        x->src2 = operand(c, src1, x->ext[2], 32, s, api, &x->sseg2);
    }
    issue(c, x, cost_repeats(shape, size, size), 1, s);
}

void dev_vec_convert(local_t dst, int dst_dtype, local_t src, int src_dtype, int round,
                     const dev_vec_shape *shape, dev_site s) {
    core *c = eng_current("Cast");
    int ds = eng_vec_dtype_size(dst_dtype), ss = eng_vec_dtype_size(src_dtype);
    if (!ds || !ss) eng_fault(c, s, "Cast: type %d to %d", src_dtype, dst_dtype);
    if (round < VROUND_NONE || round > VROUND_ODD) eng_fault(c, s, "Cast: round mode %d", round);
    uint32_t per = per_repeat(ds, ss);
    check_shape(c, shape, per, s, "Cast");
    xfer *x = queue(c, OP_VEC_GEN, s, "Cast");
    x->vshape = *shape;
    x->vop = 0; x->vround = round; x->dtype = dst_dtype; x->dtype2 = src_dtype;
    /* int32 -> half dequantizes: the scale as the instruction is issued */
    x->scalar = src_dtype == DEV_DT_INT32 && dst_dtype == DEV_DT_FP16 && c->deq_scale ? c->deq_scale : 1.0;
    x->ext[0] = extent(shape, 0, ds, per);
    x->ext[1] = extent(shape, 1, ss, per);
    x->dst = operand(c, dst, x->ext[0], 32, s, "Cast", &x->dseg);
    x->src = operand(c, src, x->ext[1], 32, s, "Cast", &x->sseg);
    x->dst_raw = local_raw(dst); x->src_raw = local_raw(src);
    issue(c, x, cost_repeats(shape, ds, ss), 1, s);
}

void dev_vec_reduce_op(const dev_vec_reduce *r, int dtype, local_t dst, local_t src,
                       const dev_vec_shape *shape, dev_site s) {
    core *c = eng_current("reduction");
    int size = eng_vec_dtype_size(dtype);
    if (!size || r->op < VRED_SUM || r->op > VRED_MIN || r->kind < VRED_ALL || r->kind > VRED_ROWS)
        eng_fault(c, s, "reduction: kind %d op %d on type %d", r->kind, r->op, dtype);
    dev_vec_shape sh = *shape;
    if (r->kind == VRED_ROWS) {   /* rows of row elements: one contiguous span */
        memset(&sh, 0, sizeof sh);
        sh.count = r->rows ? (r->rows - 1) * r->row_stride + r->row : 0;
    }
    uint32_t per = per_repeat(size, size);
    check_shape(c, &sh, per, s, "reduction");
    xfer *x = queue(c, OP_VEC_GEN, s, "reduction");
    x->vshape = sh;
    x->vred = *r;
    x->vop = -1; x->dtype = dtype;
    uint32_t repeats = sh.count ? 1 : sh.repeats;
    uint64_t results = r->kind == VRED_ALL ? 2 : r->kind == VRED_ROWS ? r->rows
                       : r->kind == VRED_BLOCK ? (uint64_t)(repeats ? repeats - 1 : 0) *
                                                     r->dst_stride * 8 + 8
                       : (uint64_t)(repeats ? repeats - 1 : 0) * r->dst_stride *
                                 (r->with_index ? 2 : 1) + (r->with_index ? 2 : 1);
    x->ext[0] = results * (uint64_t)size;
    x->ext[1] = extent(&sh, 1, size, per);
    x->dst = operand(c, dst, x->ext[0], size, s, "reduction", &x->dseg);
    x->src = operand(c, src, x->ext[1], 32, s, "reduction", &x->sseg);
    x->dst_raw = local_raw(dst); x->src_raw = local_raw(src);
    /* a whole reduction folds a repeat in log2(per) steps, then the repeats */
    int levels = r->kind == VRED_BLOCK ? 2 : r->kind == VRED_REPEAT ? 3 : 4;
    issue(c, x, cost_repeats(&sh, size, size) + (r->kind == VRED_ROWS ? r->rows : 0), levels, s);
}

/* ------------------------------------------------------------ at completion */

static vec_val fold(int op, int dtype, vec_val acc, vec_val v, int first) {
    if (first) return v;
    int bop = op == VRED_SUM ? VOP_ADD : op == VRED_MAX ? VOP_MAX : VOP_MIN;
    vec_val r = eng_vec_binary(bop, dtype, acc, v);
    if (dtype == DEV_DT_FP16 || dtype == DEV_DT_BF16) {   /* each partial result is stored */
        uint8_t b[2];
        eng_vec_store(b, dtype, r);
        r = eng_vec_load(b, dtype);
    }
    return r;
}

/* op's index result: better strictly (the first of equal values wins). */
static int improves(int op, int dtype, vec_val best, vec_val v) {
    if (op == VRED_SUM) return 0;
    double a = eng_vec_is_float(dtype) ? best.f : (double)best.i;
    double b = eng_vec_is_float(dtype) ? v.f : (double)v.i;
    return op == VRED_MAX ? b > a : b < a;
}

static void put_index(uint8_t *p, int dtype, uint32_t index) {
    int size = eng_vec_dtype_size(dtype);
    uint32_t bits = index;
    memcpy(p, &bits, (size_t)(size < 4 ? size : 4));   /* the index as the type's bits */
}

static void apply_reduce(xfer *x) {
    const dev_vec_reduce *r = &x->vred;
    const dev_vec_shape *sh = &x->vshape;
    int dt = x->dtype, size = eng_vec_dtype_size(dt);
    uint32_t per = per_repeat(size, size), repeats, elems;
    walk_bounds(sh, per, &repeats, &elems);
    if (r->kind == VRED_ROWS) {
        for (uint32_t row = 0; row < r->rows; row++) {
            vec_val acc = {0};
            for (uint32_t j = 0; j < r->row; j++)
                acc = fold(r->op, dt, acc,
                           eng_vec_load(x->src + ((uint64_t)row * r->row_stride + j) * size, dt),
                           j == 0);
            eng_vec_store(x->dst + (uint64_t)row * (uint64_t)size, dt, acc);
        }
        return;
    }
    vec_val acc = {0};
    uint32_t best_index = 0, seen = 0;
    for (uint32_t rep = 0; rep < repeats; rep++) {
        vec_val racc = {0}, bacc = {0};
        uint32_t rbest = 0, rseen = 0, bseen = 0;
        for (uint32_t j = 0; j < elems; j++) {
            if (r->kind == VRED_BLOCK && j % (32u / (uint32_t)size) == 0) {
                bacc = (vec_val){0};
                bseen = 0;
            }
            if (!selected(sh, j)) continue;
            vec_val v = eng_vec_load(x->src + elem_off(sh, 1, size, rep, j), dt);
            if (r->kind == VRED_BLOCK) {
                bacc = fold(r->op, dt, bacc, v, !bseen++);
                uint32_t per_block = 32u / (uint32_t)size;
                if (j % per_block == per_block - 1 || j == elems - 1)
                    eng_vec_store(x->dst + ((uint64_t)rep * r->dst_stride * 8 + j / per_block) *
                                               (uint64_t)size, dt, bacc);
                continue;
            }
            if (rseen && improves(r->op, dt, racc, v)) rbest = j;
            racc = fold(r->op, dt, racc, v, !rseen++);
            if (r->kind == VRED_ALL) {
                if (seen && improves(r->op, dt, acc, v)) best_index = rep * per + j;
                acc = fold(r->op, dt, acc, v, !seen++);
            }
        }
        if (r->kind == VRED_REPEAT) {
            int pair = r->with_index;
            uint8_t *at = x->dst + (uint64_t)rep * r->dst_stride * (pair ? 2 : 1) * (uint64_t)size;
            uint8_t *value = at + (pair && r->index_first ? size : 0);
            eng_vec_store(value, dt, racc);
            if (pair) put_index(at + (r->index_first ? 0 : size), dt, rbest);
        }
    }
    if (r->kind == VRED_ALL) {
        eng_vec_store(x->dst, dt, acc);
        if (r->with_index) put_index(x->dst + size, dt, best_index);
    }
}

/* Whether [a, a + an) and [b, b + bn) are the same start or apart (the
 * fast path's elementwise loop then reads each element before writing it). */
static int same_or_apart(const uint8_t *a, uint64_t an, const uint8_t *b, uint64_t bn) {
    return a == b || a + an <= b || b + bn <= a;
}

/* The contiguous (count) float cases every combine runs per row, without
 * the general walk's per-element dispatch: Cast bf16 <-> float (to bf16
 * under RINT / NONE) and float Add, Sub, Mul, Adds, Muls. The same bits as
 * the general walk, NaNs included; 0 when x is no such case. */
static int apply_fast(xfer *x) {
    const dev_vec_shape *sh = &x->vshape;
    uint32_t n = sh->count;
    if (!n) return 0;
    if (x->vop == 0) {   /* the sizes differ: only operands apart are the same in any order */
        if (x->dst < x->src + x->ext[1] && x->src < x->dst + x->ext[0]) return 0;
        if (x->dtype2 == DEV_DT_BF16 && x->dtype == DEV_DT_FLOAT && x->scalar == 1.0) {
            for (uint32_t i = 0; i < n; i++) {
                uint16_t h;
                memcpy(&h, x->src + 2 * (size_t)i, 2);
                uint32_t u = (uint32_t)h << 16;
                if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) u |= 0x00400000u;   /* quieted */
                memcpy(x->dst + 4 * (size_t)i, &u, 4);
            }
            return 1;
        }
        if (x->dtype2 == DEV_DT_FLOAT && x->dtype == DEV_DT_BF16 &&
            (x->vround == VROUND_RINT || x->vround == VROUND_NONE)) {
            for (uint32_t i = 0; i < n; i++) {
                float f;
                memcpy(&f, x->src + 4 * (size_t)i, 4);
                uint16_t h = isnan(f) ? (uint16_t)(signbit(f) ? 0xffc0u : 0x7fc0u) : float_to_bf16(f);
                memcpy(x->dst + 2 * (size_t)i, &h, 2);
            }
            return 1;
        }
        return 0;
    }
    if (x->dtype != DEV_DT_FLOAT || !same_or_apart(x->dst, x->ext[0], x->src, x->ext[1])) return 0;
    int binary = x->vop == VOP_ADD || x->vop == VOP_SUB || x->vop == VOP_MUL;
    if (!binary && x->vop != VOP_ADDS && x->vop != VOP_MULS) return 0;
    if (binary && !same_or_apart(x->dst, x->ext[0], x->src2, x->ext[2])) return 0;
    float k = (float)x->scalar;
    for (uint32_t i = 0; i < n; i++) {
        float a, b = k, z;
        memcpy(&a, x->src + 4 * (size_t)i, 4);
        if (binary) memcpy(&b, x->src2 + 4 * (size_t)i, 4);
        z = x->vop == VOP_SUB ? a - b : x->vop == VOP_MUL || x->vop == VOP_MULS ? a * b : a + b;
        memcpy(x->dst + 4 * (size_t)i, &z, 4);
    }
    return 1;
}

static void apply_elementwise(xfer *x) {
    if (apply_fast(x)) return;
    const dev_vec_shape *sh = &x->vshape;
    int convert = x->vop == 0;
    int dt = x->dtype, st = convert ? x->dtype2 : x->dtype;
    int ds = eng_vec_dtype_size(dt), ss = eng_vec_dtype_size(st);
    uint32_t per = per_repeat(ds, ss), repeats, elems;
    walk_bounds(sh, per, &repeats, &elems);
    vec_val scalar = {0};
    if (convert) scalar.f = 0;
    else if (eng_vec_is_float(dt)) scalar = eng_vec_convert((vec_val){.f = x->scalar}, DEV_DT_FLOAT, dt,
                                                       VROUND_RINT);
    else scalar.i = eng_vec_convert((vec_val){.i = x->iscalar}, DEV_DT_INT64, dt, VROUND_RINT).i;
    vec_val in[128];
    for (uint32_t r = 0; r < repeats; r++) {
        /* a repeat reads its sources, then writes: the unit's order */
        uint32_t chunk = sh->count ? 128 : elems;
        for (uint32_t j0 = 0; j0 < elems; j0 += chunk) {
            uint32_t n = elems - j0 < chunk ? elems - j0 : chunk;
            for (uint32_t k = 0; k < n; k++) {
                uint32_t j = j0 + k;
                if (!selected(sh, j)) continue;
                vec_val a = x->vop == VOP_DUP ? scalar : eng_vec_load(x->src + elem_off(sh, 1, ss, r, j), st);
                if (convert && x->scalar != 1.0)   /* exact: 31 by 11 bits fit a double */
                    in[k] = eng_vec_convert((vec_val){.f = (double)a.i * x->scalar}, DEV_DT_FLOAT, dt,
                                            x->vround);
                else if (convert) in[k] = eng_vec_convert(a, st, dt, x->vround);
                else if (x->vop <= VOP_OR)
                    in[k] = eng_vec_binary(x->vop, dt, a, eng_vec_load(x->src2 + elem_off(sh, 2, ss, r, j), st));
                else if (x->vop <= VOP_MINS) in[k] = eng_vec_binary(x->vop, dt, a, scalar);
                else in[k] = eng_vec_unary(x->vop, dt, a);
            }
            for (uint32_t k = 0; k < n; k++)
                if (selected(sh, j0 + k))
                    eng_vec_store(x->dst + elem_off(sh, 0, ds, r, j0 + k), dt, in[k]);
        }
    }
}

void eng_vec_apply(engine *e, xfer *x) {
    /* sources read as literal bytes; the destination keeps what lies
     * between the elements written, so it is made literal too */
    if (x->ext[1]) eng_seg_lit(e, x->sseg, eng_seg_off(x->sseg, x->src), x->ext[1]);
    if (x->ext[2]) eng_seg_lit(e, x->sseg2, eng_seg_off(x->sseg2, x->src2), x->ext[2]);
    if (x->ext[0]) {
        uint64_t off = eng_seg_off(x->dseg, x->dst);
        if (x->vshape.count && x->vop >= 0) eng_seg_overwrite(x->dseg, off, x->ext[0]);
        else eng_seg_lit(e, x->dseg, off, x->ext[0]);
    }
    if (x->vop < 0) apply_reduce(x);
    else apply_elementwise(x);
}

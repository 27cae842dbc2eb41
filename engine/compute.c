/*
 * compute.c - what vector and cube operations do to local memory when they
 * complete: element conversions (bf16/fp16/f32/int), VecDup, VecAxpy,
 * VecAdd, VecCast, the per-block INT8 quant pair, Mmad and the Fixpipe
 * conversion to GM.
 *
 * Arithmetic is done in float, like the vector unit's f32 path; bf16 and
 * fp16 are rounded to nearest even when stored.
 */
#include "internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

float eng_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    union { uint32_t u; float f; } x;
    if (exp == 0) {
        if (man == 0) { x.u = sign; return x.f; }
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    if (exp == 31) x.u = sign | 0x7f800000u | (man << 13);
    else x.u = sign | ((exp + 112) << 23) | (man << 13);
    return x.f;
}

uint16_t eng_f32_to_f16(float f) {
    union { uint32_t u; float f; } x; x.f = f;
    uint32_t sign = (x.u >> 16) & 0x8000u;
    if (isnan(f)) return (uint16_t)(sign | 0x7e00u);
    float a = fabsf(f);
    if (a >= 65520.0f) return (uint16_t)(sign | 0x7c00u);
    if (a < 6.103515625e-05f) {  /* subnormal: quantize to 2^-24 */
        uint32_t m = (uint32_t)lrintf(a * 16777216.0f);
        return (uint16_t)(sign | m);
    }
    uint32_t u = x.u & 0x7fffffffu;
    uint32_t rounded = u + 0xfffu + ((u >> 13) & 1u);
    return (uint16_t)(sign | ((rounded >> 13) - (112u << 10)));
}

int eng_dtype_size(int dtype) {
    switch (dtype) {
    case DT_INT32: case DT_FLOAT: return 4;
    case DT_BF16: case DT_FP16: return 2;
    case DT_INT64: return 8;
    case DT_INT8: return 1;
    default: return 0;
    }
}

static float eng_load_elem(const uint8_t *p, int dtype, uint64_t i) {
    switch (dtype) {
    case DT_FLOAT: { float v; memcpy(&v, p + 4 * i, 4); return v; }
    case DT_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return (float)v; }
    case DT_BF16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return bf16_to_float(v); }
    case DT_FP16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return eng_f16_to_f32(v); }
    case DT_INT64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (float)v; }
    case DT_INT8: return (float)(int8_t)p[i];
    default: return 0;
    }
}

static void eng_store_elem(uint8_t *p, int dtype, uint64_t i, float v) {
    switch (dtype) {
    case DT_FLOAT: memcpy(p + 4 * i, &v, 4); break;
    case DT_INT32: { int32_t w = (int32_t)lrintf(v); memcpy(p + 4 * i, &w, 4); break; }
    case DT_BF16: { uint16_t w = float_to_bf16(v); memcpy(p + 2 * i, &w, 2); break; }
    case DT_FP16: { uint16_t w = eng_f32_to_f16(v); memcpy(p + 2 * i, &w, 2); break; }
    case DT_INT64: { int64_t w = (int64_t)llrintf(v); memcpy(p + 8 * i, &w, 8); break; }
    case DT_INT8: p[i] = (uint8_t)(int8_t)lrintf(v); break;
    default: break;
    }
}

/* Per block: inv = 127 / absmax in f32, q = rint(x * inv) saturated, the
 * scale stored is 1 / inv, as the A2 dispatch's QuantProcess does. A NaN
 * makes the block's scale NaN and its values 0 (C leaves converting NaN to
 * an integer undefined). */
static void quant_int8(xfer *x) {
    uint32_t n = x->n, block = x->k;
    uint8_t *scales = x->dst + n;
    for (uint32_t b0 = 0; b0 < n; b0 += block) {
        float amax = 0.0f;
        for (uint32_t i = b0; i < b0 + block; i++) {
            float a = fabsf(eng_load_elem(x->src, x->dtype2, i));
            if (!(a <= amax)) amax = a;   /* NaN wins, as Max does */
        }
        float inv = 127.0f / amax, scale = amax == 0.0f ? 0.0f : 1.0f / inv;
        for (uint32_t i = b0; i < b0 + block; i++) {
            float v = amax == 0.0f ? 0.0f : rintf(eng_load_elem(x->src, x->dtype2, i) * inv);
            v = v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v;
            x->dst[i] = (uint8_t)(int8_t)(v == v ? v : 0.0f);
        }
        memcpy(scales + (size_t)(b0 / block) * 4, &scale, 4);
    }
}

static void dequant_int8(xfer *x) {
    uint32_t n = x->n, block = x->k;
    float w = (float)x->scalar;
    const uint8_t *scales = x->src + n;
    for (uint32_t i = 0; i < n; i++) {
        float scale;
        memcpy(&scale, scales + (size_t)(i / block) * 4, 4);
        float v = w * ((float)(int8_t)x->src[i] * scale);
        memcpy(x->dst + (size_t)i * 4, &v, 4);
    }
}

static void mmad(xfer *x) {
    /* L0C is f32 [m, n]; L0A [m, k] and L0B [k, n] in the input dtype.
     * Operands are converted once, then the i-k-j loop adds each product in
     * increasing k for every (i, j): the same sums as the textbook loop. */
    size_t m = x->m, n = x->n, k = x->k;
    float *a = malloc(m * k * sizeof *a), *b = malloc(k * n * sizeof *b);
    float *c = malloc(m * n * sizeof *c);
    if (!a || !b || !c) abort();
    for (size_t i = 0; i < m * k; i++) a[i] = eng_load_elem(x->src, x->dtype, i);
    for (size_t i = 0; i < k * n; i++) b[i] = eng_load_elem(x->src2, x->dtype, i);
    if (x->accumulate) memcpy(c, x->dst, m * n * sizeof *c);
    else memset(c, 0, m * n * sizeof *c);
    for (size_t i = 0; i < m; i++)
        for (size_t kk = 0; kk < k; kk++) {
            float av = a[i * k + kk];
            const float *brow = b + kk * n;
            float *crow = c + i * n;
            for (size_t j = 0; j < n; j++) crow[j] += av * brow[j];
        }
    memcpy(x->dst, c, m * n * sizeof *c);
    free(a);
    free(b);
    free(c);
}

/* Bytes each operand of a compute op spans, and whether the op reads its
 * destination (accumulates) or overwrites all of it. */
static void operand_bytes(const xfer *x, uint64_t *dst, int *dst_read, uint64_t *src,
                          uint64_t *src2) {
    uint64_t n = x->n;
    *src = *src2 = 0;
    *dst_read = 0;
    switch (x->op) {
    case OP_VEC_DUP: *dst = n * (uint64_t)eng_dtype_size(x->dtype); break;
    case OP_VEC_AXPY:
        *dst = n * 4; *dst_read = 1; *src = n * (uint64_t)eng_dtype_size(x->dtype2); break;
    case OP_VEC_ADD: *dst = *src = *src2 = n * (uint64_t)eng_dtype_size(x->dtype); break;
    case OP_VEC_CAST:
        *dst = n * (uint64_t)eng_dtype_size(x->dtype); *src = n * (uint64_t)eng_dtype_size(x->dtype2);
        break;
    case OP_MMAD:
        *dst = (uint64_t)x->m * x->n * 4; *dst_read = x->accumulate;
        *src = (uint64_t)x->m * x->k * 2; *src2 = (uint64_t)x->k * x->n * 2;
        break;
    case OP_FIXPIPE:
        *dst = n * (uint64_t)eng_dtype_size(x->dtype); *dst_read = x->atomic_dtype != 0; *src = n * 4;
        break;
    case OP_VEC_QUANT_I8:
        *dst = dev_quant_int8_bytes((uint32_t)n, x->k); *src = n * (uint64_t)eng_dtype_size(x->dtype2);
        break;
    case OP_VEC_DEQUANT_I8: *dst = n * 4; *src = dev_quant_int8_bytes((uint32_t)n, x->k); break;
    default: *dst = 0; break;
    }
}

/* Compute reads literal bytes: references in its sources (and in a
 * destination it accumulates into) are materialized; a destination it
 * overwrites just stops being a reference. */
static void prepare_operands(engine *e, xfer *x) {
    uint64_t db, sb, s2b;
    int dread;
    operand_bytes(x, &db, &dread, &sb, &s2b);
    if (x->sseg && sb) eng_seg_lit(e, x->sseg, eng_seg_off(x->sseg, x->src), sb);
    if (x->sseg2 && s2b) eng_seg_lit(e, x->sseg2, eng_seg_off(x->sseg2, x->src2), s2b);
    if (x->dseg && db) {
        if (dread) eng_seg_lit(e, x->dseg, eng_seg_off(x->dseg, x->dst), db);
        else eng_seg_overwrite(x->dseg, eng_seg_off(x->dseg, x->dst), db);
    }
}

void eng_apply_compute(engine *e, xfer *x) {
    prepare_operands(e, x);
    uint64_t n = x->n;
    switch (x->op) {
    case OP_VEC_DUP:
        if (x->dtype == DT_FLOAT && x->scalar == 0.0) { memset(x->dst, 0, n * 4); break; }
        for (uint64_t i = 0; i < n; i++) eng_store_elem(x->dst, x->dtype, i, (float)x->scalar);
        break;
    case OP_VEC_AXPY:
        if (x->dtype2 == DT_BF16) {  /* the combine's hot path: one type test per op, not per element */
            float w = (float)x->scalar;
            for (uint64_t i = 0; i < n; i++) {
                float acc; uint16_t h;
                memcpy(&acc, x->dst + 4 * i, 4);
                memcpy(&h, x->src + 2 * i, 2);
                acc += w * bf16_to_float(h);
                memcpy(x->dst + 4 * i, &acc, 4);
            }
            break;
        }
        for (uint64_t i = 0; i < n; i++) {
            float acc = eng_load_elem(x->dst, DT_FLOAT, i);
            acc += (float)x->scalar * eng_load_elem(x->src, x->dtype2, i);
            eng_store_elem(x->dst, DT_FLOAT, i, acc);
        }
        break;
    case OP_VEC_ADD:
        for (uint64_t i = 0; i < n; i++)
            eng_store_elem(x->dst, x->dtype, i,
                           eng_load_elem(x->src, x->dtype, i) + eng_load_elem(x->src2, x->dtype, i));
        break;
    case OP_VEC_CAST:
        if (x->dtype == DT_BF16 && x->dtype2 == DT_FLOAT) {
            for (uint64_t i = 0; i < n; i++) {
                float v; memcpy(&v, x->src + 4 * i, 4);
                uint16_t h = float_to_bf16(v);
                memcpy(x->dst + 2 * i, &h, 2);
            }
            break;
        }
        for (uint64_t i = 0; i < n; i++)
            eng_store_elem(x->dst, x->dtype, i, eng_load_elem(x->src, x->dtype2, i));
        break;
    case OP_VEC_QUANT_I8:
        quant_int8(x);
        break;
    case OP_VEC_DEQUANT_I8:
        dequant_int8(x);
        break;
    case OP_MMAD:
        mmad(x);
        break;
    case OP_FIXPIPE:
        for (uint64_t i = 0; i < n; i++) {
            float v; memcpy(&v, x->src + 4 * i, 4);
            if (x->atomic_dtype) v += eng_load_elem(x->dst, x->dtype, i);
            eng_store_elem(x->dst, x->dtype, i, v);
        }
        break;
    default:
        break;
    }
}

/*
 * vec_math.c - element arithmetic of the vector unit, exactly as the types
 * say: integers in integers (wrapping at their width), float in float,
 * half and bf16 computed in float and rounded to nearest even when stored;
 * and Cast between any two element types under each RoundMode, saturating
 * into integers (a NaN becomes 0).
 *
 * An element is held as a vec_val: its integer bits (signed or unsigned as
 * the type is) or its value as a double, which holds every int32, half,
 * bf16 and float exactly, so a conversion rounds once, in the destination's
 * format, under the mode asked for.
 */
#include "internal.h"
#include "vec.h"

#include <math.h>
#include <string.h>

int eng_vec_dtype_size(int dtype) {
    switch (dtype) {
    case DEV_DT_INT8: case DEV_DT_UINT8: return 1;
    case DEV_DT_INT16: case DEV_DT_UINT16: case DEV_DT_BF16: case DEV_DT_FP16: return 2;
    case DEV_DT_INT32: case DEV_DT_UINT32: case DEV_DT_FLOAT: return 4;
    case DEV_DT_INT64: case DEV_DT_UINT64: return 8;
    default: return 0;
    }
}

int eng_vec_is_float(int dtype) {
    return dtype == DEV_DT_FLOAT || dtype == DEV_DT_FP16 || dtype == DEV_DT_BF16;
}

static int is_signed(int dtype) {
    return dtype == DEV_DT_INT8 || dtype == DEV_DT_INT16 || dtype == DEV_DT_INT32 ||
           dtype == DEV_DT_INT64;
}

vec_val eng_vec_load(const uint8_t *p, int dtype) {
    vec_val v = {0};
    switch (dtype) {
    case DEV_DT_INT8: v.i = (int8_t)p[0]; break;
    case DEV_DT_UINT8: v.i = p[0]; break;
    case DEV_DT_INT16: { int16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case DEV_DT_UINT16: { uint16_t x; memcpy(&x, p, 2); v.i = x; break; }
    case DEV_DT_INT32: { int32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case DEV_DT_UINT32: { uint32_t x; memcpy(&x, p, 4); v.i = x; break; }
    case DEV_DT_INT64: case DEV_DT_UINT64: memcpy(&v.i, p, 8); break;
    case DEV_DT_FLOAT: { float x; memcpy(&x, p, 4); v.f = x; break; }
    case DEV_DT_FP16: { uint16_t x; memcpy(&x, p, 2); v.f = eng_f16_to_f32(x); break; }
    case DEV_DT_BF16: { uint16_t x; memcpy(&x, p, 2); v.f = bf16_to_float(x); break; }
    default: break;
    }
    return v;
}

/* v (a float value already in f32 range and precision for FLOAT, or any
 * double for the 16-bit formats, which round to nearest even) stored. */
void eng_vec_store(uint8_t *p, int dtype, vec_val v) {
    switch (dtype) {
    case DEV_DT_INT8: case DEV_DT_UINT8: p[0] = (uint8_t)v.i; break;
    case DEV_DT_INT16: case DEV_DT_UINT16: { uint16_t x = (uint16_t)v.i; memcpy(p, &x, 2); break; }
    case DEV_DT_INT32: case DEV_DT_UINT32: { uint32_t x = (uint32_t)v.i; memcpy(p, &x, 4); break; }
    case DEV_DT_INT64: case DEV_DT_UINT64: memcpy(p, &v.i, 8); break;
    case DEV_DT_FLOAT: { float x = (float)v.f; memcpy(p, &x, 4); break; }
    case DEV_DT_FP16: {
        uint16_t x = eng_vec_round_16(v.f, 10, VROUND_RINT);
        memcpy(p, &x, 2);
        break;
    }
    case DEV_DT_BF16: {
        uint16_t x = eng_vec_round_16(v.f, 7, VROUND_RINT);
        memcpy(p, &x, 2);
        break;
    }
    default: break;
    }
}

/* x rounded to an integer under mode (ODD: to the odd neighbour when x is
 * not an integer, the rounding that keeps a later rounding exact). */
static double round_int(double x, int mode) {
    switch (mode) {
    case VROUND_FLOOR: return floor(x);
    case VROUND_CEIL: return ceil(x);
    case VROUND_TRUNC: return trunc(x);
    case VROUND_ROUND: return round(x);
    case VROUND_ODD: {
        double t = trunc(x);
        if (t == x) return x;
        return fmod(t, 2.0) != 0 ? t : t + (x > 0 ? 1 : -1);
    }
    default: return nearbyint(x);   /* RINT, NONE: ties to even (the default environment) */
    }
}

uint16_t eng_vec_round_16(double x, int mant_bits, int mode) {
    /* half: 5 exponent bits (bias 15); bf16: 8 (bias 127) */
    int half = mant_bits == 10;
    int emax = half ? 15 : 127, emin = 1 - emax;
    uint16_t sign = signbit(x) ? 0x8000u : 0;
    uint16_t inf = half ? 0x7c00u : 0x7f80u;
    if (isnan(x)) return (uint16_t)(sign | inf | (half ? 0x200u : 0x40u));
    double a = fabs(x);
    if (isinf(a)) return (uint16_t)(sign | inf);
    if (a == 0) return sign;
    int e;
    frexp(a, &e);                           /* a = m * 2^e, m in [0.5, 1) */
    int exp = e - 1;                        /* a = 1.f * 2^exp */
    if (exp < emin) exp = emin;             /* subnormal: fixed exponent */
    double ulp = ldexp(1.0, exp - mant_bits);
    /* the rounding direction follows the signed value */
    double q = round_int((signbit(x) ? -a : a) / ulp, mode);
    double r = fabs(q) * ulp;
    if (r == 0) return sign;
    frexp(r, &e);
    exp = e - 1;
    if (exp > emax) {
        /* beyond the largest finite: infinity, except modes that never round away */
        int toward_zero = mode == VROUND_TRUNC || (mode == VROUND_FLOOR && !sign) ||
                          (mode == VROUND_CEIL && sign) || mode == VROUND_ODD;
        if (!toward_zero) return (uint16_t)(sign | inf);
        return (uint16_t)(sign | (inf - 1));
    }
    uint32_t bits;
    if (exp < emin) {
        bits = (uint32_t)(r / ldexp(1.0, emin - mant_bits));   /* subnormal */
    } else {
        uint32_t frac = (uint32_t)((r / ldexp(1.0, exp) - 1.0) * (double)(1u << mant_bits));
        bits = (uint32_t)(exp + emax) << mant_bits | frac;
    }
    return (uint16_t)(sign | bits);
}

/* x rounded to float under mode. */
static float round_f32(double x, int mode) {
    float f = (float)x;   /* to nearest even */
    if (mode == VROUND_RINT || mode == VROUND_NONE || isnan(x) || (double)f == x) return f;
    float lo = (double)f > x ? nextafterf(f, -INFINITY) : f;
    float hi = (double)f < x ? nextafterf(f, INFINITY) : f;
    switch (mode) {
    case VROUND_FLOOR: return lo;
    case VROUND_CEIL: return hi;
    case VROUND_TRUNC: return x > 0 ? lo : hi;
    case VROUND_ROUND: {
        double dl = x - (double)lo, dh = (double)hi - x;
        return dl < dh ? lo : dh < dl ? hi : (x > 0 ? hi : lo);
    }
    case VROUND_ODD: {
        uint32_t u;
        memcpy(&u, &lo, 4);
        return (u & 1) ? lo : hi;
    }
    default: return f;
    }
}

/* The range of an integer type, for saturation. */
static void int_range(int dtype, double *lo, double *hi) {
    int bits = 8 * eng_vec_dtype_size(dtype);
    if (is_signed(dtype)) {
        *lo = -ldexp(1.0, bits - 1);
        *hi = ldexp(1.0, bits - 1) - 1;
    } else {
        *lo = 0;
        *hi = ldexp(1.0, bits) - 1;
    }
}

vec_val eng_vec_convert(vec_val v, int from, int to, int mode) {
    vec_val out = {0};
    int from_float = eng_vec_is_float(from), to_float = eng_vec_is_float(to);
    if (!from_float && !to_float) {   /* integer to integer: saturating */
        double lo, hi;
        int_range(to, &lo, &hi);
        int64_t x = v.i;
        if (!is_signed(from) && eng_vec_dtype_size(from) == 8 && x < 0) x = INT64_MAX;
        if ((double)x < lo) x = (int64_t)lo;
        else if ((double)x > hi && hi < 9.2e18) x = (int64_t)hi;
        out.i = x;
        return out;
    }
    double x = from_float ? v.f : (is_signed(from) ? (double)v.i : (double)(uint64_t)v.i);
    if (to == DEV_DT_FLOAT) {
        out.f = round_f32(x, mode);
    } else if (to == DEV_DT_FP16) {
        out.f = eng_f16_to_f32(eng_vec_round_16(x, 10, mode));
    } else if (to == DEV_DT_BF16) {
        out.f = bf16_to_float(eng_vec_round_16(x, 7, mode));
    } else {   /* float to integer: rounded, saturated, NaN to 0 */
        if (isnan(x)) return out;
        double lo, hi, r = round_int(x, mode);
        int_range(to, &lo, &hi);
        if (r < lo) r = lo;
        if (r > hi) r = hi;
        out.i = is_signed(to) ? (int64_t)r : (int64_t)(uint64_t)r;
    }
    return out;
}

/* a op b in dtype (wrapping integers, float in float, 16-bit floats
 * rounded when stored). */
vec_val eng_vec_binary(int op, int dtype, vec_val a, vec_val b) {
    vec_val r = {0};
    if (eng_vec_is_float(dtype)) {
        float x = (float)a.f, y = (float)b.f, z = 0;
        switch (op) {
        case VOP_ADD: case VOP_ADDS: z = x + y; break;
        case VOP_SUB: z = x - y; break;
        case VOP_MUL: case VOP_MULS: z = x * y; break;
        case VOP_DIV: z = x / y; break;
        case VOP_MAX: case VOP_MAXS: z = x > y || isnan(x) ? x : y; break;
        case VOP_MIN: case VOP_MINS: z = x < y || isnan(x) ? x : y; break;
        default: break;
        }
        r.f = z;
        return r;
    }
    int bits = 8 * eng_vec_dtype_size(dtype);
    uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    uint64_t x = (uint64_t)a.i, y = (uint64_t)b.i, z = 0;
    int sgn = is_signed(dtype);
    switch (op) {
    case VOP_ADD: case VOP_ADDS: z = x + y; break;
    case VOP_SUB: z = x - y; break;
    case VOP_MUL: case VOP_MULS: z = x * y; break;
    case VOP_AND: z = x & y; break;
    case VOP_OR: z = x | y; break;
    case VOP_MAX: case VOP_MAXS: z = (sgn ? a.i > b.i : x > y) ? x : y; break;
    case VOP_MIN: case VOP_MINS: z = (sgn ? a.i < b.i : x < y) ? x : y; break;
    case VOP_DIV:
        z = y == 0 ? 0 : sgn ? (uint64_t)(a.i / (b.i == -1 && a.i == INT64_MIN ? 1 : b.i)) : x / y;
        break;
    default: break;
    }
    z &= mask;
    /* back to the type's value: sign-extend a signed result */
    if (sgn && bits < 64 && (z >> (bits - 1)) & 1) z |= ~mask;
    r.i = (int64_t)z;
    return r;
}

vec_val eng_vec_unary(int op, int dtype, vec_val a) {
    vec_val r = a;
    if (op == VOP_ABS) {
        if (eng_vec_is_float(dtype)) r.f = fabs(a.f);
        else if (a.i < 0) r = eng_vec_binary(VOP_SUB, dtype, (vec_val){.i = 0}, a);
    }
    return r;
}

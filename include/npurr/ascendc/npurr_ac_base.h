/*
 * npurr_ac_base.h - the ground of npurr's Ascend C headers: the keywords a
 * kernel source uses (__aicore__, __global__, __gm__, GM_ADDR), the element
 * types half and bfloat16_t, the enums (HardEvent, TPosition, RoundMode, the
 * pipes), the DT_* numbers of the op build, and the call site every call
 * records.
 *
 * npurr's own, written from the public Ascend C API reference (CANN's
 * headers are licensed for Huawei hardware only): kernels written for the
 * chip compile unchanged against these and run on npurr's engine, each call
 * that moves data, waits or synchronises one recorded event at the user's
 * source line. Part of npurr/ascendc/kernel_operator.h; include that.
 *
 * Every AscendC call takes a trailing, defaulted `npurr_site` (the caller's
 * file, line and function, captured where the call is written); a kernel
 * never passes it.
 */
#ifndef NPURR_AC_BASE_H
#define NPURR_AC_BASE_H

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "npurr/device_calls.h"

/* ------------------------------------------------------------ keywords */
#define __aicore__
#define __global__
#define __gm__
#define __ubuf__
#define GM_ADDR __gm__ uint8_t *
#ifndef likely
#define likely(x) __builtin_expect(!!(x), 1)
#endif
#ifndef unlikely
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif
/* `if ASCEND_IS_AIV {`: which kind of core runs this code. */
#define ASCEND_IS_AIV (!::dev_is_aic())
#define ASCEND_IS_AIC (::dev_is_aic())

/* The op build's data type numbers (ge::DataType), for #if on ORIG_DTYPE_*. */
#define DT_FLOAT 0
#define DT_FLOAT16 1
#define DT_INT8 2
#define DT_INT32 3
#define DT_UINT8 4
#define DT_INT16 6
#define DT_UINT16 7
#define DT_UINT32 8
#define DT_INT64 9
#define DT_UINT64 10
#define DT_DOUBLE 11
#define DT_BOOL 12
#define DT_BF16 27

/* Where a call was written: what the trace and every fault name. */
struct npurr_site {
    const char *file;
    int line;
    const char *func;
    /* The caller's location, captured where a defaulted npurr_site is made. */
    constexpr npurr_site(const char *f = __builtin_FILE(), int l = __builtin_LINE(),
                         const char *fn = __builtin_FUNCTION())
        : file(f), line(l), func(fn) {}
    /* As the engine's calls take it. */
    dev_site dev() const { return dev_site{file, line, func}; }
};

namespace AscendC {

/* ------------------------------------------------------------ 16-bit floats */

/* IEEE half precision: storage and conversions (round to nearest even). */
struct half {
    uint16_t bits;
    half() = default;
    /* From float, rounded to nearest even. */
    half(float f) : bits(from_float(f)) {}
    /* From double (through float). */
    half(double d) : bits(from_float((float)d)) {}
    /* From an integer (through float). */
    half(int i) : bits(from_float((float)i)) {}
    /* As float, exactly. */
    operator float() const { return to_float(bits); }
    /* The bits of f rounded to half, ties to even. */
    static uint16_t from_float(float f) {
        uint32_t x;
        std::memcpy(&x, &f, 4);
        uint32_t sign = (x >> 16) & 0x8000u, a = x & 0x7fffffffu;
        if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);
        if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);   /* rounds past 65504 */
        if (a < 0x38800000u) {                                    /* subnormal half */
            float v;
            std::memcpy(&v, &a, 4);
            return (uint16_t)(sign | (uint32_t)__builtin_nearbyintf(v * 16777216.0f));
        }
        uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
        return (uint16_t)(sign | ((r >> 13) - (112u << 10)));
    }
    /* The float half bits h stand for. */
    static float to_float(uint16_t h) {
        uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, x;
        if (exp == 0) {
            float v = (float)man * (1.0f / 16777216.0f);
            return sign ? -v : v;
        }
        x = exp == 31 ? sign | 0x7f800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
        float f;
        std::memcpy(&f, &x, 4);
        return f;
    }
};

/* bfloat16: the high half of a float (round to nearest even). */
struct bfloat16_t {
    uint16_t bits;
    bfloat16_t() = default;
    /* From float, rounded to nearest even. */
    bfloat16_t(float f) {
        uint32_t x;
        std::memcpy(&x, &f, 4);
        if ((x & 0x7fffffffu) > 0x7f800000u) bits = (uint16_t)((x >> 16) | 0x40u);
        else bits = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    }
    /* As float, exactly. */
    operator float() const {
        uint32_t x = (uint32_t)bits << 16;
        float f;
        std::memcpy(&f, &x, 4);
        return f;
    }
};

/* The engine's element type of T (device_calls.h's DEV_DT_*). */
template <typename T> struct dev_type { static constexpr int value = 0; };
template <> struct dev_type<float> { static constexpr int value = DEV_DT_FLOAT; };
template <> struct dev_type<half> { static constexpr int value = DEV_DT_FP16; };
template <> struct dev_type<bfloat16_t> { static constexpr int value = DEV_DT_BF16; };
template <> struct dev_type<int8_t> { static constexpr int value = DEV_DT_INT8; };
template <> struct dev_type<uint8_t> { static constexpr int value = DEV_DT_UINT8; };
template <> struct dev_type<int16_t> { static constexpr int value = DEV_DT_INT16; };
template <> struct dev_type<uint16_t> { static constexpr int value = DEV_DT_UINT16; };
template <> struct dev_type<int32_t> { static constexpr int value = DEV_DT_INT32; };
template <> struct dev_type<uint32_t> { static constexpr int value = DEV_DT_UINT32; };
template <> struct dev_type<int64_t> { static constexpr int value = DEV_DT_INT64; };
template <> struct dev_type<uint64_t> { static constexpr int value = DEV_DT_UINT64; };

/* ------------------------------------------------------------ enums */

/* Hard events: producer pipe _ consumer pipe. */
enum class HardEvent : int {
    MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V,
    MTE3_MTE1, MTE1_MTE3, MTE1_V, MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3,
    S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX, FIX_MTE2, FIX_S, M_S, FIX_MTE3, MAX
};

/* The engine's hard event for e; 0 when the engine has none. */
constexpr int dev_event(HardEvent e) {
    return e == HardEvent::MTE2_V ? MTE2_V : e == HardEvent::V_MTE2 ? V_MTE2
         : e == HardEvent::MTE3_V ? MTE3_V : e == HardEvent::V_MTE3 ? V_MTE3
         : e == HardEvent::MTE2_MTE3 ? MTE2_MTE3 : e == HardEvent::MTE3_MTE2 ? MTE3_MTE2
         : e == HardEvent::MTE3_S ? MTE3_S : e == HardEvent::S_MTE3 ? S_MTE3
         : e == HardEvent::MTE2_S ? MTE2_S : e == HardEvent::S_MTE2 ? S_MTE2
         : e == HardEvent::V_S ? V_S : e == HardEvent::S_V ? S_V
         : e == HardEvent::MTE1_M ? MTE1_M : e == HardEvent::M_MTE1 ? M_MTE1
         : e == HardEvent::MTE2_MTE1 ? MTE2_MTE1 : e == HardEvent::MTE1_MTE2 ? MTE1_MTE2
         : e == HardEvent::M_FIX ? M_FIX : e == HardEvent::FIX_M ? FIX_M
         : e == HardEvent::FIX_S ? FIX_S : e == HardEvent::MTE2_M ? MTE2_M
         : e == HardEvent::M_V ? M_V : e == HardEvent::V_M ? V_M
         : e == HardEvent::FIX_MTE2 ? FIX_MTE2 : e == HardEvent::MTE2_FIX ? MTE2_FIX : 0;
}

/* The hard event from pipe src to pipe dst (TQueSync); 0 when none. */
constexpr int dev_event_of_pipes(engine_pipe src, engine_pipe dst) {
    return src == PIPE_MTE2 && dst == PIPE_V ? MTE2_V : src == PIPE_V && dst == PIPE_MTE2 ? V_MTE2
         : src == PIPE_MTE3 && dst == PIPE_V ? MTE3_V : src == PIPE_V && dst == PIPE_MTE3 ? V_MTE3
         : src == PIPE_MTE2 && dst == PIPE_MTE3 ? MTE2_MTE3 : src == PIPE_MTE3 && dst == PIPE_MTE2 ? MTE3_MTE2
         : src == PIPE_MTE3 && dst == PIPE_S ? MTE3_S : src == PIPE_S && dst == PIPE_MTE3 ? S_MTE3
         : src == PIPE_MTE2 && dst == PIPE_S ? MTE2_S : src == PIPE_S && dst == PIPE_MTE2 ? S_MTE2
         : src == PIPE_V && dst == PIPE_S ? V_S : src == PIPE_S && dst == PIPE_V ? S_V : 0;
}

/* Where a tensor lives; the VEC ones are UB. */
enum class TPosition : int {
    GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM,
    TSCM, C2PIPE2GM, C2PIPE2LOCAL, MAX
};
using QuePosition = TPosition;

/* Cast's rounding. */
enum class RoundMode : int {
    CAST_NONE = 0, CAST_RINT, CAST_FLOOR, CAST_CEIL, CAST_ROUND, CAST_TRUNC, CAST_ODD
};

/* What WholeReduceMax/Min write for each repeat. */
enum class ReduceOrder : int { ORDER_VALUE_INDEX, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE,
                               ORDER_ONLY_INDEX };

/* DataCacheCleanAndInvalid's template arguments. */
enum class CacheLine : int { SINGLE_CACHE_LINE, ENTIRE_DATA_CACHE };
enum class DcciDst : int { CACHELINE_ALL, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };

constexpr uint32_t CACHE_LINE_SIZE = 64;
constexpr uint32_t ONE_BLK_SIZE = 32;
constexpr uint32_t ONE_REPEAT_BYTE_SIZE = 256;

/* (a + b - 1) / b: how many b-sized pieces hold a. */
__aicore__ inline uint64_t Ceil(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : 0; }
/* a rounded up to a multiple of b. */
__aicore__ inline uint64_t AlignUp(uint64_t a, uint64_t b) { return Ceil(a, b) * b; }

/* ------------------------------------------------------------ identity */

/* Index of this core in its launch on this rank. */
__aicore__ inline int64_t GetBlockIdx() { return ::dev_block_idx(); }
/* The launch's block count. */
__aicore__ inline int64_t GetBlockNum() { return ::dev_block_num(); }
/* 0 or 1: which vector core of a MIX group this is. */
__aicore__ inline int64_t GetSubBlockIdx() { return ::dev_sub_block_idx(); }
/* Vector cores a cube core pairs with: 2 in a MIX launch, else 1. */
__aicore__ inline int64_t GetTaskRation() { return ::dev_sub_block_num(); }
/* The virtual clock in ticks of the 50 MHz system counter. */
__aicore__ inline int64_t GetSystemCycle(npurr_site s = npurr_site()) {
    return (int64_t)::dev_system_cycle(s.dev());
}

}  // namespace AscendC

/* The pipes as kernels name them (PipeBarrier<PIPE_V>): npurr's own. */
using pipe_t = engine_pipe;

#endif

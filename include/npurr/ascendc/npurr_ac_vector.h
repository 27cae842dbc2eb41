/*
 * npurr_ac_vector.h - the vector instructions of npurr's Ascend C headers:
 * elementwise arithmetic, Duplicate, Cast, and the reductions, each in its
 * count form (calCount elements) and its mask / repeat form (a mask per
 * 256-byte repeat, as the count of leading elements or as bits, with block
 * and repeat strides in 32-byte units).
 *
 * Each is one instruction on the core's V pipe (npurr/device_calls.h:
 * dev_vec_elem, dev_vec_convert, dev_vec_reduce_op), busy one vector
 * cycle per repeat; the results are exact for the element type (integers
 * wrap, half and bf16 round to nearest even when stored, Cast rounds under
 * its RoundMode and saturates into integers). Reductions add in the order
 * of the elements, which need not be the order of the chip's adder tree:
 * float sums may differ in their last bits (docs/ascendc.md).
 */
#ifndef NPURR_AC_VECTOR_H
#define NPURR_AC_VECTOR_H

#include "npurr_ac_pipe.h"

namespace AscendC {

/* Strides of a binary instruction (32-byte units): blocks within a repeat, then repeats. */
struct BinaryRepeatParams {
    uint8_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
    uint8_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
    BinaryRepeatParams() = default;
    /* The six strides, in this order. */
    BinaryRepeatParams(uint8_t db, uint8_t s0b, uint8_t s1b, uint8_t dr, uint8_t s0r, uint8_t s1r)
        : dstBlkStride(db), src0BlkStride(s0b), src1BlkStride(s1b), dstRepStride(dr),
          src0RepStride(s0r), src1RepStride(s1r) {}
};
/* Strides of a unary instruction (32-byte units). */
struct UnaryRepeatParams {
    uint16_t dstBlkStride = 1, srcBlkStride = 1;
    uint8_t dstRepStride = 8, srcRepStride = 8;
    UnaryRepeatParams() = default;
    /* The four strides, in this order. */
    UnaryRepeatParams(uint16_t db, uint16_t sb, uint8_t dr, uint8_t sr)
        : dstBlkStride(db), srcBlkStride(sb), dstRepStride(dr), srcRepStride(sr) {}
};
/* Sum's rows: outter rows of n elements, inner elements apart. */
struct SumParams {
    uint32_t outter = 1, inner = 0, n = 0;
};

/* The engine's element type of T, which must be one it computes on. */
template <typename T> constexpr int vec_type() {
    static_assert(dev_type<T>::value != 0, "npurr: a vector element type it knows");
    return dev_type<T>::value;
}

/* A contiguous shape of count elements. */
inline dev_vec_shape shape_count(uint32_t count) {
    dev_vec_shape s{};
    s.count = count ? count : 0;
    return s;
}
/* A repeated shape: the first mask elements of each repeat. */
inline dev_vec_shape shape_mask(uint64_t mask, uint32_t repeats) {
    dev_vec_shape s{};
    s.repeats = repeats;
    s.mask[0] = mask >= 64 ? ~0ull : (1ull << mask) - 1;
    s.mask[1] = mask >= 128 ? ~0ull : mask > 64 ? (1ull << (mask - 64)) - 1 : 0;
    return s;
}
/* A repeated shape: the elements whose bits mask has. */
inline dev_vec_shape shape_bits(const uint64_t mask[], uint32_t repeats) {
    dev_vec_shape s{};
    s.repeats = repeats;
    s.mask[0] = mask[0];
    s.mask[1] = mask[1];
    return s;
}
inline dev_vec_shape with(dev_vec_shape s, const BinaryRepeatParams &p) {
    s.blk[0] = p.dstBlkStride; s.blk[1] = p.src0BlkStride; s.blk[2] = p.src1BlkStride;
    s.rep[0] = p.dstRepStride; s.rep[1] = p.src0RepStride; s.rep[2] = p.src1RepStride;
    return s;
}
inline dev_vec_shape with(dev_vec_shape s, const UnaryRepeatParams &p) {
    s.blk[0] = (uint16_t)p.dstBlkStride; s.blk[1] = (uint16_t)p.srcBlkStride;
    s.rep[0] = p.dstRepStride; s.rep[1] = p.srcRepStride;
    return s;
}

/* One elementwise instruction (dev_vec_elem) on tensors of T. */
template <typename T>
inline void vec(int op, const LocalTensor<T> &dst, const LocalTensor<T> &a, const LocalTensor<T> &b,
                double f, int64_t i, const dev_vec_shape &sh, npurr_site s) {
    ::dev_vec_elem(op, vec_type<T>(), dst.addr(), a.addr(), b.addr(), f, i, &sh, s.dev());
}
/* T's value as the scalar operands vec takes. */
template <typename T> inline double as_f(T v) { return (double)(float)v; }
template <typename T> inline int64_t as_i(T v) {
    return std::is_floating_point<T>::value || std::is_class<T>::value ? 0 : (int64_t)v;
}

/* dst = a op b, elementwise, in three forms: calCount elements; the first
 * mask elements of each of repeat repeats; the elements mask's bits select. */
#define NPURR_AC_BINARY(Name, OP)                                                                   \
    template <typename T, bool isSetMask = true>                                                    \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &a,                  \
                                const LocalTensor<T> &b, const int32_t &calCount,                   \
                                npurr_site s = npurr_site()) {                                      \
        vec(OP, dst, a, b, 0, 0, shape_count((uint32_t)calCount), s);                                \
    }                                                                                               \
    template <typename T, bool isSetMask = true>                                                    \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &a,                  \
                                const LocalTensor<T> &b, uint64_t mask, const uint8_t repeat,        \
                                const BinaryRepeatParams &p, npurr_site s = npurr_site()) {          \
        vec(OP, dst, a, b, 0, 0, with(shape_mask(mask, repeat), p), s);                              \
    }                                                                                               \
    template <typename T, bool isSetMask = true>                                                    \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &a,                  \
                                const LocalTensor<T> &b, const uint64_t mask[],                     \
                                const uint8_t repeat, const BinaryRepeatParams &p,                  \
                                npurr_site s = npurr_site()) {                                      \
        vec(OP, dst, a, b, 0, 0, with(shape_bits(mask, repeat), p), s);                              \
    }
NPURR_AC_BINARY(Add, VOP_ADD)
NPURR_AC_BINARY(Sub, VOP_SUB)
NPURR_AC_BINARY(Mul, VOP_MUL)
NPURR_AC_BINARY(Div, VOP_DIV)
NPURR_AC_BINARY(Max, VOP_MAX)
NPURR_AC_BINARY(Min, VOP_MIN)
NPURR_AC_BINARY(And, VOP_AND)
NPURR_AC_BINARY(Or, VOP_OR)
#undef NPURR_AC_BINARY

/* dst = a op scalar, elementwise, in the same three forms. */
#define NPURR_AC_SCALAR(Name, OP)                                                                   \
    template <typename T, typename U, bool isSetMask = true>                                        \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &a,                  \
                                const U &scalar, const int32_t &calCount,                           \
                                npurr_site s = npurr_site()) {                                      \
        vec(OP, dst, a, a, as_f((T)scalar), as_i((T)scalar), shape_count((uint32_t)calCount), s);    \
    }                                                                                               \
    template <typename T, typename U, bool isSetMask = true>                                        \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &a,                  \
                                const U &scalar, uint64_t mask, const uint8_t repeat,                \
                                const UnaryRepeatParams &p, npurr_site s = npurr_site()) {           \
        vec(OP, dst, a, a, as_f((T)scalar), as_i((T)scalar), with(shape_mask(mask, repeat), p), s);  \
    }                                                                                               \
    template <typename T, typename U, bool isSetMask = true>                                        \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &a,                  \
                                const U &scalar, const uint64_t mask[], const uint8_t repeat,        \
                                const UnaryRepeatParams &p, npurr_site s = npurr_site()) {           \
        vec(OP, dst, a, a, as_f((T)scalar), as_i((T)scalar), with(shape_bits(mask, repeat), p), s);  \
    }
NPURR_AC_SCALAR(Adds, VOP_ADDS)
NPURR_AC_SCALAR(Muls, VOP_MULS)
NPURR_AC_SCALAR(Maxs, VOP_MAXS)
NPURR_AC_SCALAR(Mins, VOP_MINS)
#undef NPURR_AC_SCALAR

/* dst += src * scalar over calCount elements, into float from float or
 * half (Axpy<float, float>, Axpy<float, half>; the product is rounded to
 * float, then the sum). */
template <typename T, typename U>
__aicore__ inline void Axpy(const LocalTensor<T> &dst, const LocalTensor<U> &src, const U scalarValue,
                            const int32_t &calCount, npurr_site s = npurr_site()) {
    static_assert(std::is_same<T, float>::value &&
                      (std::is_same<U, float>::value || std::is_same<U, half>::value),
                  "npurr: Axpy accumulates into float from float or half (its count form)");
    ::dev_vec_axpy(dst.addr(), src.addr(), vec_type<U>(), (float)scalarValue, (uint32_t)calCount,
                   s.dev());
}

/* dst = |a|, elementwise. */
template <typename T, bool isSetMask = true>
__aicore__ inline void Abs(const LocalTensor<T> &dst, const LocalTensor<T> &a,
                           const int32_t &calCount, npurr_site s = npurr_site()) {
    vec(VOP_ABS, dst, a, a, 0, 0, shape_count((uint32_t)calCount), s);
}
/* dst = |a| over the first mask elements of each repeat. */
template <typename T, bool isSetMask = true>
__aicore__ inline void Abs(const LocalTensor<T> &dst, const LocalTensor<T> &a, uint64_t mask,
                           const uint8_t repeat, const UnaryRepeatParams &p,
                           npurr_site s = npurr_site()) {
    vec(VOP_ABS, dst, a, a, 0, 0, with(shape_mask(mask, repeat), p), s);
}
/* dst = |a| over the elements mask selects. */
template <typename T, bool isSetMask = true>
__aicore__ inline void Abs(const LocalTensor<T> &dst, const LocalTensor<T> &a, const uint64_t mask[],
                           const uint8_t repeat, const UnaryRepeatParams &p,
                           npurr_site s = npurr_site()) {
    vec(VOP_ABS, dst, a, a, 0, 0, with(shape_bits(mask, repeat), p), s);
}

/* calCount elements of dst set to scalar. */
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T> &dst, const U &scalar, const int32_t &calCount,
                                 npurr_site s = npurr_site()) {
    vec(VOP_DUP, dst, dst, dst, as_f((T)scalar), as_i((T)scalar), shape_count((uint32_t)calCount), s);
}
/* The first mask elements of each repeat set to scalar. */
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T> &dst, const U &scalar, uint64_t mask,
                                 const uint8_t repeat, const uint16_t dstBlockStride,
                                 const uint8_t dstRepeatStride, npurr_site s = npurr_site()) {
    dev_vec_shape sh = shape_mask(mask, repeat);
    sh.blk[0] = dstBlockStride;
    sh.rep[0] = dstRepeatStride;
    vec(VOP_DUP, dst, dst, dst, as_f((T)scalar), as_i((T)scalar), sh, s);
}
/* The elements mask selects set to scalar. */
template <typename T, typename U, bool isSetMask = true>
__aicore__ inline void Duplicate(const LocalTensor<T> &dst, const U &scalar, const uint64_t mask[],
                                 const uint8_t repeat, const uint16_t dstBlockStride,
                                 const uint8_t dstRepeatStride, npurr_site s = npurr_site()) {
    dev_vec_shape sh = shape_bits(mask, repeat);
    sh.blk[0] = dstBlockStride;
    sh.rep[0] = dstRepeatStride;
    vec(VOP_DUP, dst, dst, dst, as_f((T)scalar), as_i((T)scalar), sh, s);
}

/* The engine's round mode of m. */
constexpr int vec_round(RoundMode m) { return (int)m; }
/* calCount elements converted from TS to TD under round. */
template <typename TD, typename TS>
__aicore__ inline void Cast(const LocalTensor<TD> &dst, const LocalTensor<TS> &src, const RoundMode &round,
                            const uint32_t calCount, npurr_site s = npurr_site()) {
    dev_vec_shape sh = shape_count(calCount);
    ::dev_vec_convert(dst.addr(), vec_type<TD>(), src.addr(), vec_type<TS>(), vec_round(round), &sh,
                      s.dev());
}
/* The same over the first mask elements of each repeat. */
template <typename TD, typename TS, bool isSetMask = true>
__aicore__ inline void Cast(const LocalTensor<TD> &dst, const LocalTensor<TS> &src, const RoundMode &round,
                            uint64_t mask, const uint8_t repeat, const UnaryRepeatParams &p,
                            npurr_site s = npurr_site()) {
    dev_vec_shape sh = with(shape_mask(mask, repeat), p);
    ::dev_vec_convert(dst.addr(), vec_type<TD>(), src.addr(), vec_type<TS>(), vec_round(round), &sh,
                      s.dev());
}
/* The same over the elements mask selects. */
template <typename TD, typename TS, bool isSetMask = true>
__aicore__ inline void Cast(const LocalTensor<TD> &dst, const LocalTensor<TS> &src, const RoundMode &round,
                            const uint64_t mask[], const uint8_t repeat, const UnaryRepeatParams &p,
                            npurr_site s = npurr_site()) {
    dev_vec_shape sh = with(shape_bits(mask, repeat), p);
    ::dev_vec_convert(dst.addr(), vec_type<TD>(), src.addr(), vec_type<TS>(), vec_round(round), &sh,
                      s.dev());
}

/* The scale a Cast from int32 to half multiplies by (1.0 until set). */
__aicore__ inline void SetDeqScale(half scale, npurr_site s = npurr_site()) {
    ::dev_set_deq_scale((float)scale, s.dev());
}

/* One reduction (dev_vec_reduce_op). */
template <typename T>
inline void reduce(int kind, int op, const LocalTensor<T> &dst, const LocalTensor<T> &src,
                   const dev_vec_shape &sh, uint32_t dst_stride, int with_index, int index_first,
                   npurr_site s) {
    dev_vec_reduce r{};
    r.kind = kind;
    r.op = op;
    r.dst_stride = dst_stride;
    r.with_index = with_index;
    r.index_first = index_first;
    ::dev_vec_reduce_op(&r, vec_type<T>(), dst.addr(), src.addr(), &sh, s.dev());
}

/* The sum of count elements of src into dst[0] (work is not used). */
template <typename T>
__aicore__ inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                 const LocalTensor<T> & /* work */, const int32_t count,
                                 npurr_site s = npurr_site()) {
    reduce(VRED_ALL, VRED_SUM, dst, src, shape_count((uint32_t)count), 0, 0, 0, s);
}
/* The sum of the first mask elements of each repeat, repeats srcRepStride apart, into dst[0]. */
template <typename T>
__aicore__ inline void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                 const LocalTensor<T> & /* work */, const int32_t mask,
                                 const int32_t repeat, const int32_t srcRepStride,
                                 npurr_site s = npurr_site()) {
    dev_vec_shape sh = shape_mask((uint64_t)mask, (uint32_t)repeat);
    sh.blk[1] = 1;
    sh.rep[1] = (uint16_t)srcRepStride;
    reduce(VRED_ALL, VRED_SUM, dst, src, sh, 0, 0, 0, s);
}
/* The largest of count elements into dst[0], its index into dst[1] when calIndex. */
template <typename T>
__aicore__ inline void ReduceMax(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                 const LocalTensor<T> & /* work */, const int32_t count,
                                 bool calIndex = false, npurr_site s = npurr_site()) {
    reduce(VRED_ALL, VRED_MAX, dst, src, shape_count((uint32_t)count), 0, calIndex, 0, s);
}
/* The smallest of count elements into dst[0], its index into dst[1] when calIndex. */
template <typename T>
__aicore__ inline void ReduceMin(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                 const LocalTensor<T> & /* work */, const int32_t count,
                                 bool calIndex = false, npurr_site s = npurr_site()) {
    reduce(VRED_ALL, VRED_MIN, dst, src, shape_count((uint32_t)count), 0, calIndex, 0, s);
}

/* Per repeat, the largest (smallest) selected element and its index in the
 * repeat, written as order says, results dstRepStride apart. */
#define NPURR_AC_WHOLE_EXTREME(Name, OP)                                                            \
    template <typename T, bool isSetMask = true>                                                    \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src,                \
                                const int32_t mask, const int32_t repeat,                           \
                                const int32_t dstRepStride, const int32_t srcBlkStride,             \
                                const int32_t srcRepStride,                                         \
                                ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,                 \
                                npurr_site s = npurr_site()) {                                      \
        dev_vec_shape sh = shape_mask((uint64_t)mask, (uint32_t)repeat);                             \
        sh.blk[1] = (uint16_t)srcBlkStride;                                                          \
        sh.rep[1] = (uint16_t)srcRepStride;                                                          \
        whole(OP, dst, src, sh, dstRepStride, order, s);                                            \
    }                                                                                               \
    template <typename T, bool isSetMask = true>                                                    \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src,                \
                                const uint64_t mask[], const int32_t repeat,                        \
                                const int32_t dstRepStride, const int32_t srcBlkStride,             \
                                const int32_t srcRepStride,                                         \
                                ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX,                 \
                                npurr_site s = npurr_site()) {                                      \
        dev_vec_shape sh = shape_bits(mask, (uint32_t)repeat);                                       \
        sh.blk[1] = (uint16_t)srcBlkStride;                                                          \
        sh.rep[1] = (uint16_t)srcRepStride;                                                          \
        whole(OP, dst, src, sh, dstRepStride, order, s);                                            \
    }
/* A per-repeat extreme written in order (ORDER_ONLY_INDEX is not modelled). */
template <typename T>
inline void whole(int op, const LocalTensor<T> &dst, const LocalTensor<T> &src,
                  const dev_vec_shape &sh, int32_t dstRepStride, ReduceOrder order, npurr_site s) {
    if (order == ReduceOrder::ORDER_ONLY_INDEX)
        ::dev_unsupported("WholeReduceMax/Min: ORDER_ONLY_INDEX is not modelled", s.dev());
    int pair = order != ReduceOrder::ORDER_ONLY_VALUE;
    reduce(VRED_REPEAT, op, dst, src, sh, (uint32_t)dstRepStride, pair,
           order == ReduceOrder::ORDER_INDEX_VALUE, s);
}
NPURR_AC_WHOLE_EXTREME(WholeReduceMax, VRED_MAX)
NPURR_AC_WHOLE_EXTREME(WholeReduceMin, VRED_MIN)
#undef NPURR_AC_WHOLE_EXTREME

/* Per repeat, the sum of the selected elements, results dstRepStride apart. */
template <typename T, bool isSetMask = true>
__aicore__ inline void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                      const int32_t mask, const int32_t repeat,
                                      const int32_t dstRepStride, const int32_t srcBlkStride,
                                      const int32_t srcRepStride, npurr_site s = npurr_site()) {
    dev_vec_shape sh = shape_mask((uint64_t)mask, (uint32_t)repeat);
    sh.blk[1] = (uint16_t)srcBlkStride;
    sh.rep[1] = (uint16_t)srcRepStride;
    reduce(VRED_REPEAT, VRED_SUM, dst, src, sh, (uint32_t)dstRepStride, 0, 0, s);
}

/* Per 32-byte block of each repeat, the sum (max, min) of its selected
 * elements: 8 results a repeat, dstRepStride * 8 results apart. */
#define NPURR_AC_BLOCK_REDUCE(Name, OP)                                                             \
    template <typename T, bool isSetMask = true>                                                    \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src,                \
                                const int32_t repeat, const int32_t mask,                           \
                                const int32_t dstRepStride, const int32_t srcBlkStride,             \
                                const int32_t srcRepStride, npurr_site s = npurr_site()) {          \
        dev_vec_shape sh = shape_mask((uint64_t)mask, (uint32_t)repeat);                             \
        sh.blk[1] = (uint16_t)srcBlkStride;                                                          \
        sh.rep[1] = (uint16_t)srcRepStride;                                                          \
        reduce(VRED_BLOCK, OP, dst, src, sh, (uint32_t)dstRepStride, 0, 0, s);                       \
    }                                                                                               \
    template <typename T, bool isSetMask = true>                                                    \
    __aicore__ inline void Name(const LocalTensor<T> &dst, const LocalTensor<T> &src,                \
                                const int32_t repeat, const uint64_t mask[],                        \
                                const int32_t dstRepStride, const int32_t srcBlkStride,             \
                                const int32_t srcRepStride, npurr_site s = npurr_site()) {          \
        dev_vec_shape sh = shape_bits(mask, (uint32_t)repeat);                                       \
        sh.blk[1] = (uint16_t)srcBlkStride;                                                          \
        sh.rep[1] = (uint16_t)srcRepStride;                                                          \
        reduce(VRED_BLOCK, OP, dst, src, sh, (uint32_t)dstRepStride, 0, 0, s);                       \
    }
NPURR_AC_BLOCK_REDUCE(BlockReduceSum, VRED_SUM)
NPURR_AC_BLOCK_REDUCE(BlockReduceMax, VRED_MAX)
NPURR_AC_BLOCK_REDUCE(BlockReduceMin, VRED_MIN)
#undef NPURR_AC_BLOCK_REDUCE

/* Row sums: dst[i] = sum of src's row i (p.n elements; rows p.inner apart). */
template <typename T>
__aicore__ inline void Sum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const SumParams &p,
                           npurr_site s = npurr_site()) {
    dev_vec_reduce r{};
    r.kind = VRED_ROWS;
    r.op = VRED_SUM;
    r.rows = p.outter;
    r.row = p.n;
    r.row_stride = p.inner;
    dev_vec_shape sh{};
    ::dev_vec_reduce_op(&r, vec_type<T>(), dst.addr(), src.addr(), &sh, s.dev());
}

}  // namespace AscendC

#endif

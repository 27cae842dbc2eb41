/*
 * npurr_ac_copy.h - DataCopy, DataCopyPad and the atomic and cache calls of
 * npurr's Ascend C headers.
 *
 * GM -> UB copies are queued on MTE2, UB -> GM on MTE3, UB -> UB on V, each
 * one DMA on npurr's engine with its timing, whatever its form: a count of
 * elements (32-byte multiples), DataCopyParams (blocks in 32-byte units
 * with strides in 32-byte units), DataCopyExtParams with
 * DataCopyPadExtParams (blocks in bytes, the GM stride in bytes and the UB
 * one in 32-byte blocks, padding values around each block). Writes to GM
 * accumulate under SetAtomicAdd / Max / Min until SetAtomicNone.
 */
#ifndef NPURR_AC_COPY_H
#define NPURR_AC_COPY_H

#include "npurr_ac_pipe.h"

namespace AscendC {

/* Blocks of a copy in 32-byte units (DataCopy, and DataCopyPad's older form
 * where blockLen is in bytes). */
struct DataCopyParams {
    uint16_t blockCount = 1;
    uint16_t blockLen = 0;
    uint16_t srcStride = 0;
    uint16_t dstStride = 0;
    DataCopyParams() = default;
    /* count blocks of len units, gaps of src and dst units. */
    DataCopyParams(uint16_t count, uint16_t len, uint16_t src, uint16_t dst)
        : blockCount(count), blockLen(len), srcStride(src), dstStride(dst) {}
};

/* Blocks of a DataCopyPad: blockLen bytes; GM gaps in bytes, UB gaps in 32-byte blocks. */
struct DataCopyExtParams {
    uint16_t blockCount = 1;
    uint32_t blockLen = 0;
    uint32_t srcStride = 0;
    uint32_t dstStride = 0;
    uint32_t rsv = 0;
    DataCopyExtParams() = default;
    /* count blocks of len bytes, the gaps, and a reserved word. */
    DataCopyExtParams(uint16_t count, uint32_t len, uint32_t src, uint32_t dst, uint32_t r = 0)
        : blockCount(count), blockLen(len), srcStride(src), dstStride(dst), rsv(r) {}
};

/* What DataCopyPad writes around each block in UB. */
template <typename T> struct DataCopyPadExtParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    T paddingValue = T();
    DataCopyPadExtParams() = default;
    /* Padding on, elements left and right, their value. */
    DataCopyPadExtParams(bool pad, uint8_t left, uint8_t right, T value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

/* DataCopyPad's older padding form. */
struct DataCopyPadParams {
    bool isPad = false;
    uint8_t leftPadding = 0;
    uint8_t rightPadding = 0;
    uint64_t paddingValue = 0;
    DataCopyPadParams() = default;
    /* Padding on, elements left and right, their value's bits. */
    DataCopyPadParams(bool pad, uint8_t left, uint8_t right, uint64_t value)
        : isPad(pad), leftPadding(left), rightPadding(right), paddingValue(value) {}
};

/* count elements GM -> UB on MTE2 (count * sizeof(T) a multiple of 32). */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                uint32_t count, npurr_site s = npurr_site()) {
    ::dev_copy_gm_to_local(dst.addr(), src.addr(0, s), (uint64_t)count * sizeof(T), s.dev());
}
/* count elements UB -> GM on MTE3. */
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                uint32_t count, npurr_site s = npurr_site()) {
    ::dev_copy_local_to_gm(dst.addr(0, s), src.addr(), (uint64_t)count * sizeof(T), s.dev());
}
/* count elements UB -> UB on V. */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src,
                                uint32_t count, npurr_site s = npurr_site()) {
    ::dev_copy_local_to_local(dst.addr(), src.addr(), (uint64_t)count * sizeof(T), s.dev());
}

/* The engine's blocks of a DataCopyParams copy (every length in 32 B units). */
inline dev_copy_blocks blocks_32(const DataCopyParams &p) {
    dev_copy_blocks b{};
    b.count = p.blockCount;
    b.block_bytes = (uint32_t)p.blockLen * 32u;
    return b;
}
/* GM -> UB in blocks. */
template <typename T>
__aicore__ inline void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                const DataCopyParams &p, npurr_site s = npurr_site()) {
    dev_copy_blocks b = blocks_32(p);
    b.gm_gap = (uint64_t)p.srcStride * 32u;
    b.local_gap = (uint32_t)p.dstStride * 32u;
    ::dev_copy_blocks_in(dst.addr(), src.addr(0, s), &b, s.dev());
}
/* UB -> GM in blocks. */
template <typename T>
__aicore__ inline void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                const DataCopyParams &p, npurr_site s = npurr_site()) {
    dev_copy_blocks b = blocks_32(p);
    b.gm_gap = (uint64_t)p.dstStride * 32u;
    b.local_gap = (uint32_t)p.srcStride * 32u;
    ::dev_copy_blocks_out(dst.addr(0, s), src.addr(), &b, s.dev());
}

/* GM -> UB, blockLen bytes a block, each padded in UB (DataCopyExtParams). */
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                   const DataCopyExtParams &p, const DataCopyPadExtParams<T> &pad,
                                   npurr_site s = npurr_site()) {
    dev_copy_blocks b{};
    b.count = p.blockCount;
    b.block_bytes = p.blockLen;
    b.gm_gap = p.srcStride;
    b.local_gap = p.dstStride * 32u;
    b.pad = pad.isPad;
    b.pad_left = pad.leftPadding;
    b.pad_right = pad.rightPadding;
    b.elem_bytes = sizeof(T);
    std::memcpy(&b.pad_value, &pad.paddingValue, sizeof(T) < 8 ? sizeof(T) : 8);
    ::dev_copy_blocks_in(dst.addr(), src.addr(0, s), &b, s.dev());
}
/* UB -> GM, blockLen bytes a block (DataCopyExtParams). */
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                   const DataCopyExtParams &p, npurr_site s = npurr_site()) {
    dev_copy_blocks b{};
    b.count = p.blockCount;
    b.block_bytes = p.blockLen;
    b.gm_gap = p.dstStride;
    b.local_gap = p.srcStride * 32u;
    ::dev_copy_blocks_out(dst.addr(0, s), src.addr(), &b, s.dev());
}
/* GM -> UB, the older form (DataCopyParams with blockLen in bytes). */
template <typename T>
__aicore__ inline void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src,
                                   const DataCopyParams &p, const DataCopyPadParams &pad,
                                   npurr_site s = npurr_site()) {
    DataCopyExtParams e(p.blockCount, p.blockLen, p.srcStride, p.dstStride);
    T value;
    std::memcpy(&value, &pad.paddingValue, sizeof(T));
    DataCopyPad(dst, src, e, DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding,
                                                     value), s);
}
/* UB -> GM, the older form. */
template <typename T>
__aicore__ inline void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src,
                                   const DataCopyParams &p, npurr_site s = npurr_site()) {
    DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride), s);
}

/* MTE3 writes to GM add to what is there, in T, from now on. */
template <typename T> __aicore__ inline void SetAtomicAdd(npurr_site s = npurr_site()) {
    static_assert(dev_type<T>::value, "npurr: SetAtomicAdd of an element type it knows");
    ::dev_set_atomic_op(ATOMIC_ADD, dev_type<T>::value, s.dev());
}
/* MTE3 writes to GM keep the larger, in T. */
template <typename T> __aicore__ inline void SetAtomicMax(npurr_site s = npurr_site()) {
    static_assert(dev_type<T>::value, "npurr: SetAtomicMax of an element type it knows");
    ::dev_set_atomic_op(ATOMIC_MAX, dev_type<T>::value, s.dev());
}
/* MTE3 writes to GM keep the smaller, in T. */
template <typename T> __aicore__ inline void SetAtomicMin(npurr_site s = npurr_site()) {
    static_assert(dev_type<T>::value, "npurr: SetAtomicMin of an element type it knows");
    ::dev_set_atomic_op(ATOMIC_MIN, dev_type<T>::value, s.dev());
}
/* MTE3 writes to GM store again. */
__aicore__ inline void SetAtomicNone(npurr_site s = npurr_site()) {
    ::dev_set_atomic_op(0, 0, s.dev());
}

/* Cleans and invalidates the scalar data cache line that holds t's first
 * element (GM in npurr is always coherent: only the operation's time is
 * paid). The line may reach past t's buffer: only the element is checked. */
template <typename T, CacheLine line = CacheLine::SINGLE_CACHE_LINE, DcciDst dst = DcciDst::CACHELINE_OUT>
__aicore__ inline void DataCacheCleanAndInvalid(const GlobalTensor<T> &t, npurr_site s = npurr_site()) {
    ::dev_dcache_sync(t.addr(0, s), sizeof(T), s.dev());
}

}  // namespace AscendC

#endif

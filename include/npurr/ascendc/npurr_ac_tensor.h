/*
 * npurr_ac_tensor.h - GlobalTensor (GM) and LocalTensor (UB) of npurr's
 * Ascend C headers.
 *
 * A GlobalTensor holds a `__gm__ T *`: a pointer into the host mapping of
 * one of npurr's GM allocations (npurr/device_calls.h, dev_gm_from_host), so
 * kernels compute with GM addresses as on the chip. A LocalTensor holds a
 * place in the core's local memory (a local_t) and an element count.
 * Element access (GetValue, SetValue, and `t(i)` read or assigned) is the
 * scalar unit's, one recorded load or store of sizeof(T) bytes; `t[i]` is
 * the tensor from element i on, no access at all.
 */
#ifndef NPURR_AC_TENSOR_H
#define NPURR_AC_TENSOR_H

#include "npurr_ac_base.h"

namespace AscendC {

/* T's bits as the engine's signed word (GetValue/SetValue carry them). */
template <typename T> inline int64_t to_word(T v) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                  "npurr: elements of 1, 2, 4 or 8 bytes");
    int64_t w = 0;
    std::memcpy(&w, &v, sizeof(T));
    return w;
}
/* The T whose bits word's low bytes hold. */
template <typename T> inline T from_word(int64_t w) {
    T v;
    std::memcpy(&v, &w, sizeof(T));
    return v;
}

template <typename T> class GlobalTensor;
template <typename T> class LocalTensor;

/* One element of a GlobalTensor, read or assigned (t(i)). */
template <typename T> class GlobalRef {
  public:
    GlobalRef(gm_t at, npurr_site s) : at_(at), site_(s) {}
    /* The element, one scalar load. */
    operator T() const { return from_word<T>(::dev_gm_load(at_, sizeof(T), site_.dev())); }
    /* Stores v, one scalar store. */
    GlobalRef &operator=(T v) {
        ::dev_gm_store(at_, sizeof(T), to_word(v), site_.dev());
        return *this;
    }
  private:
    gm_t at_;
    npurr_site site_;
};

/* A tensor in GM. */
template <typename T> class GlobalTensor {
  public:
    using PrimType = T;
    __aicore__ GlobalTensor() : ptr_(nullptr), size_(0) {}
    /* Points the tensor at GM (a pointer npurr gave the kernel), size elements. */
    __aicore__ void SetGlobalBuffer(__gm__ T *p, uint64_t size = 0) {
        ptr_ = p;
        size_ = size;
    }
    /* The tensor from element offset on (no access). */
    __aicore__ GlobalTensor operator[](uint64_t offset) const {
        GlobalTensor t;
        t.ptr_ = ptr_ + offset;
        t.size_ = size_ > offset ? size_ - offset : 0;
        return t;
    }
    /* Element i, read or assigned. */
    __aicore__ GlobalRef<T> operator()(uint64_t i, npurr_site s = npurr_site()) const {
        return GlobalRef<T>(addr(i, s), s);
    }
    /* Element i, one scalar load. */
    __aicore__ T GetValue(uint64_t i, npurr_site s = npurr_site()) const {
        return from_word<T>(::dev_gm_load(addr(i, s), sizeof(T), s.dev()));
    }
    /* Stores v at element i, one scalar store. */
    __aicore__ void SetValue(uint64_t i, T v, npurr_site s = npurr_site()) const {
        ::dev_gm_store(addr(i, s), sizeof(T), to_word(v), s.dev());
    }
    /* The GM pointer of the first element. */
    __aicore__ __gm__ T *GetPhyAddr() const { return ptr_; }
    /* The GM pointer of element offset. */
    __aicore__ __gm__ T *GetPhyAddr(uint64_t offset) const { return ptr_ + offset; }
    /* Elements, as SetGlobalBuffer was told (0 when it was not). */
    __aicore__ uint64_t GetSize() const { return size_; }
    /* The engine's address of element i (faults outside npurr's GM). */
    gm_t addr(uint64_t i, npurr_site s = npurr_site()) const {
        return ::dev_gm_from_host(ptr_ + i, s.dev());
    }
  private:
    __gm__ T *ptr_;
    uint64_t size_;
};

/* One element of a LocalTensor, read or assigned (t(i)). */
template <typename T> class LocalRef {
  public:
    LocalRef(local_t at, npurr_site s) : at_(at), site_(s) {}
    /* The element, one scalar load. */
    operator T() const { return from_word<T>(::dev_local_load(at_, 0, sizeof(T), site_.dev())); }
    /* Stores v, one scalar store. */
    LocalRef &operator=(T v) {
        ::dev_local_store(at_, 0, sizeof(T), to_word(v), site_.dev());
        return *this;
    }
  private:
    local_t at_;
    npurr_site site_;
};

/* A tensor in a core's local memory (UB on a vector core). */
template <typename T> class LocalTensor {
  public:
    using PrimType = T;
    __aicore__ LocalTensor() : at_{0, 0}, size_(0) {}
    /* size elements at local address at (what TBuf and TQue hand out). */
    LocalTensor(local_t at, uint32_t size) : at_(at), size_(size) {}
    /* The tensor from element offset on (no access). */
    __aicore__ LocalTensor operator[](uint32_t offset) const {
        return LocalTensor(local_add(at_, offset * (uint32_t)sizeof(T)),
                           size_ > offset ? size_ - offset : 0);
    }
    /* Element i, read or assigned. */
    __aicore__ LocalRef<T> operator()(uint32_t i, npurr_site s = npurr_site()) const {
        return LocalRef<T>(local_add(at_, i * (uint32_t)sizeof(T)), s);
    }
    /* Element i, one scalar load. */
    __aicore__ T GetValue(uint32_t i, npurr_site s = npurr_site()) const {
        return from_word<T>(::dev_local_load(at_, i * (uint32_t)sizeof(T), sizeof(T), s.dev()));
    }
    /* Stores v at element i, one scalar store. */
    __aicore__ void SetValue(uint32_t i, T v, npurr_site s = npurr_site()) const {
        ::dev_local_store(at_, i * (uint32_t)sizeof(T), sizeof(T), to_word(v), s.dev());
    }
    /* The same bytes as elements of U. */
    template <typename U> __aicore__ LocalTensor<U> ReinterpretCast() const {
        return LocalTensor<U>(at_, (uint32_t)((uint64_t)size_ * sizeof(T) / sizeof(U)));
    }
    /* Elements it holds. */
    __aicore__ uint32_t GetSize() const { return size_; }
    /* Sets the element count (the bytes stay where they are). */
    __aicore__ void SetSize(uint32_t size) { size_ = size; }
    /* Its byte length. */
    __aicore__ uint32_t GetLength() const { return size_ * (uint32_t)sizeof(T); }
    /* Its place in local memory, for npurr's calls. */
    local_t addr() const { return at_; }
  private:
    local_t at_;
    uint32_t size_;
};

}  // namespace AscendC

#endif

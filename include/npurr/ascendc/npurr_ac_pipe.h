/*
 * npurr_ac_pipe.h - TPipe, TQue / TQueBind, TBuf and the synchronisation
 * calls (SetFlag / WaitFlag, PipeBarrier, SyncAll, TQueSync, cross-core
 * flags) of npurr's Ascend C headers.
 *
 * TPipe hands out a core's UB (InitBuffer) with the engine's allocator and
 * gives it back on Reset, and owns the core's event ids: each buffer of a
 * queue gets its own id for each direction, and FetchEventID returns an id
 * no queue holds. A TQue moves its buffers through the flags of its
 * position, as the library does on the chip:
 *   VECIN              EnQue SetFlag<MTE2_V>, DeQue WaitFlag<MTE2_V>,
 *                      FreeTensor SetFlag<V_MTE2>, AllocTensor waits it;
 *   VECOUT             V_MTE3 forward, MTE3_V back;
 *   TQueBind<VECIN, VECOUT>   MTE2_MTE3 forward, MTE3_MTE2 back;
 * so a missing EnQue/DeQue shows up as a race or stale data, not as luck.
 * A queue waits for its pending flags when it is destroyed or its TPipe
 * Reset, so none is left set at the kernel's end. The current TPipe of a
 * core (GetTPipePtr) is kept in that core's own storage: every emulated
 * core runs in one address space.
 */
#ifndef NPURR_AC_PIPE_H
#define NPURR_AC_PIPE_H

#include "npurr_ac_tensor.h"

namespace AscendC {

/* Waits until pipe has drained (PIPE_ALL: every pipe). */
template <pipe_t pipe> __aicore__ inline void PipeBarrier(npurr_site s = npurr_site()) {
    ::dev_pipe_barrier(pipe, s.dev());
}

/* Raises event_id of hard event e once its producer pipe is done. */
template <HardEvent e> __aicore__ inline void SetFlag(int32_t event_id, npurr_site s = npurr_site()) {
    static_assert(dev_event(e) != 0, "npurr does not support this HardEvent");
    ::dev_set_flag(dev_event(e), event_id, s.dev());
}
/* The consumer pipe of e waits for the matching SetFlag. */
template <HardEvent e> __aicore__ inline void WaitFlag(int32_t event_id, npurr_site s = npurr_site()) {
    static_assert(dev_event(e) != 0, "npurr does not support this HardEvent");
    ::dev_wait_flag(dev_event(e), event_id, s.dev());
}

/* Every core of this launch on this rank arrives before any goes on. */
template <bool isAIVOnly = true> __aicore__ inline void SyncAll(npurr_site s = npurr_site()) {
    ::dev_barrier(0, s.dev());
}

/* Raises flag_id for the other cores of this MIX group once pipe is done. */
template <uint8_t modeId, pipe_t pipe>
__aicore__ inline void CrossCoreSetFlag(uint16_t flag_id, npurr_site s = npurr_site()) {
    static_assert(modeId == 0x2, "npurr models CrossCoreSetFlag mode 0x2 (AIC <-> AIV of a group)");
    ::dev_xcore_set(pipe, flag_id, s.dev());
}
/* Blocks until flag_id was raised for this core. */
template <uint8_t modeId = 0x2, pipe_t pipe = PIPE_S>
__aicore__ inline void CrossCoreWaitFlag(uint16_t flag_id, npurr_site s = npurr_site()) {
    ::dev_xcore_wait(flag_id, s.dev());
}

/* A flag between two pipes named by the pipes themselves. */
template <pipe_t src, pipe_t dst> class TQueSync {
  public:
    static_assert(dev_event_of_pipes(src, dst) != 0, "npurr does not support this pipe pair");
    /* SetFlag of the pair's event. */
    __aicore__ void SetFlag(int32_t id, npurr_site s = npurr_site()) {
        ::dev_set_flag(dev_event_of_pipes(src, dst), id, s.dev());
    }
    /* WaitFlag of the pair's event. */
    __aicore__ void WaitFlag(int32_t id, npurr_site s = npurr_site()) {
        ::dev_wait_flag(dev_event_of_pipes(src, dst), id, s.dev());
    }
};

class TPipe;
class TQueImpl;

/* The current TPipe of this core (the last constructed, not yet destroyed). */
__aicore__ inline TPipe *&current_pipe() {
    return *static_cast<TPipe **>(::dev_core_storage());
}

/* The buffers of a TQue or TBuf, and their flags (the engine's part). */
class TQueImpl {
  public:
    static constexpr int MAX_BUFS = 8;
    TQueImpl(int ev_fwd, int ev_back) : ev_fwd_(ev_fwd), ev_back_(ev_back) {}
    ~TQueImpl() { drain(npurr_site()); }
    TQueImpl(const TQueImpl &) = delete;
    TQueImpl &operator=(const TQueImpl &) = delete;

    /* num buffers of len bytes at base; ids for each, from pipe. */
    void init(TPipe *pipe, local_t base, uint8_t num, uint32_t len, npurr_site s);
    /* Waits for every flag still set, so none outlives the queue. */
    void drain(npurr_site s);
    /* The next free buffer (waiting for its consumer to be done with it). */
    local_t alloc(npurr_site s);
    /* Buffer at `at` enqueued: its producer's flag raised. */
    void enque(local_t at, npurr_site s);
    /* The oldest enqueued buffer, once its producer is done. */
    local_t deque(npurr_site s);
    /* Buffer at `at` given back: its consumer's flag raised. */
    void free(local_t at, npurr_site s);
    /* Bytes a buffer holds. */
    uint32_t len() const { return len_; }
    /* The first buffer (TBuf::Get). */
    local_t base() const { return base_; }
    TQueImpl *next_ = nullptr;   /* the pipe's list of its queues */
    TPipe *pipe_ = nullptr;
  private:
    int find(local_t at, const char *what, npurr_site s) const;
    int ev_fwd_, ev_back_;       /* hard events forward (EnQue) and back (FreeTensor); 0 none */
    local_t base_{0, 0};
    uint32_t len_ = 0;
    uint8_t num_ = 0, next_alloc_ = 0;
    int32_t id_fwd_[MAX_BUFS] = {}, id_back_[MAX_BUFS] = {};
    uint8_t state_[MAX_BUFS] = {};   /* 0 free, 1 allocated, 2 enqueued */
    uint8_t back_set_[MAX_BUFS] = {};
    uint8_t fifo_[MAX_BUFS] = {}, head_ = 0, count_ = 0;
};

/* The forward and back hard events of a queue between positions src and dst. */
constexpr int que_fwd(TPosition src, TPosition dst) {
    return src == TPosition::VECIN && dst == TPosition::VECOUT ? MTE2_MTE3
         : src == TPosition::VECIN ? MTE2_V : src == TPosition::VECOUT ? V_MTE3 : 0;
}
constexpr int que_back(TPosition src, TPosition dst) {
    return src == TPosition::VECIN && dst == TPosition::VECOUT ? MTE3_MTE2
         : src == TPosition::VECIN ? V_MTE2 : src == TPosition::VECOUT ? MTE3_V : 0;
}

/* A queue of buffers between two positions, depth tensors enqueued at most. */
template <TPosition src, TPosition dst, int32_t depth = 1> class TQueBind {
  public:
    static_assert(que_fwd(src, dst) != 0,
                  "npurr supports queues at VECIN, VECOUT and VECIN->VECOUT (UB)");
    __aicore__ TQueBind() : impl_(que_fwd(src, dst), que_back(src, dst)) {}
    /* A free buffer as a tensor (waits until its consumer has freed it). */
    template <typename T> __aicore__ LocalTensor<T> AllocTensor(npurr_site s = npurr_site()) {
        return LocalTensor<T>(impl_.alloc(s), impl_.len() / (uint32_t)sizeof(T));
    }
    /* Puts t on the queue (its producer pipe's flag). */
    template <typename T> __aicore__ bool EnQue(const LocalTensor<T> &t, npurr_site s = npurr_site()) {
        impl_.enque(t.addr(), s);
        return true;
    }
    /* The oldest tensor on the queue, once its producer is done. */
    template <typename T> __aicore__ LocalTensor<T> DeQue(npurr_site s = npurr_site()) {
        return LocalTensor<T>(impl_.deque(s), impl_.len() / (uint32_t)sizeof(T));
    }
    /* Gives t's buffer back (its consumer pipe's flag). */
    template <typename T> __aicore__ void FreeTensor(LocalTensor<T> &t, npurr_site s = npurr_site()) {
        impl_.free(t.addr(), s);
    }
    /* The same, for a temporary. */
    template <typename T> __aicore__ void FreeTensor(const LocalTensor<T> &t, npurr_site s = npurr_site()) {
        impl_.free(t.addr(), s);
    }
    TQueImpl impl_;
};

/* A queue at one position (VECIN: MTE2 -> V; VECOUT: V -> MTE3). */
template <TPosition pos, int32_t depth = 1>
class TQue : public TQueBind<pos, TPosition::VECCALC, depth> {};

/* A buffer without a queue (VECCALC): tensors over it, no flags. */
template <TPosition pos = TPosition::VECCALC> class TBuf {
  public:
    __aicore__ TBuf() : impl_(0, 0) {}
    /* The whole buffer as a tensor of T. */
    template <typename T> __aicore__ LocalTensor<T> Get() {
        return LocalTensor<T>(impl_.base(), impl_.len() / (uint32_t)sizeof(T));
    }
    /* The buffer's first len elements of T. */
    template <typename T> __aicore__ LocalTensor<T> Get(uint32_t len) {
        return LocalTensor<T>(impl_.base(), len);
    }
    /* len elements of T from byte offset of the buffer. */
    template <typename T> __aicore__ LocalTensor<T> GetWithOffset(uint32_t len, uint32_t offset) {
        return LocalTensor<T>(local_add(impl_.base(), offset), len);
    }
    /* The whole buffer (TBuf's AllocTensor is Get). */
    template <typename T> __aicore__ LocalTensor<T> AllocTensor() { return Get<T>(); }
    /* Nothing to give back: a TBuf has no queue. */
    template <typename T> __aicore__ void FreeTensor(const LocalTensor<T> &) {}
    TQueImpl impl_;
};

/* A core's UB and event ids, for the queues and buffers of one kernel. */
class TPipe {
  public:
    __aicore__ TPipe() : prev_(current_pipe()) {
        mark_ = ::dev_local_used(LM_UB);
        current_pipe() = this;
    }
    __aicore__ ~TPipe() {
        Reset(npurr_site());
        if (current_pipe() == this) current_pipe() = prev_;
    }
    TPipe(const TPipe &) = delete;
    TPipe &operator=(const TPipe &) = delete;

    /* num buffers of len bytes (rounded up to 32) for a queue. */
    template <TPosition src, TPosition dst, int32_t depth>
    __aicore__ bool InitBuffer(TQueBind<src, dst, depth> &que, uint8_t num, uint32_t len,
                               npurr_site s = npurr_site()) {
        init(que.impl_, num, len, s);
        return true;
    }
    /* One buffer of len bytes for a TBuf. */
    template <TPosition pos> __aicore__ bool InitBuffer(TBuf<pos> &buf, uint32_t len,
                                                        npurr_site s = npurr_site()) {
        init(buf.impl_, 1, len, s);
        return true;
    }
    /* Every queue drained, every buffer and event id given back. */
    __aicore__ void Reset(npurr_site s = npurr_site()) {
        for (TQueImpl *q = queues_; q; q = q->next_) {
            q->drain(s);
            q->pipe_ = nullptr;
        }
        queues_ = nullptr;
        std::memset(taken_, 0, sizeof taken_);
        if (::dev_local_used(LM_UB) > mark_) ::dev_local_release(LM_UB, mark_, s.dev());
    }
    /* An event id of e that no queue holds (SetFlag and WaitFlag it right away). */
    template <HardEvent e> __aicore__ int32_t FetchEventID() { return fetch(dev_event(e)); }
    /* The same, e given at run time. */
    __aicore__ int32_t FetchEventID(HardEvent e) { return fetch(dev_event(e)); }
    /* An event id of e held until ReleaseEventID. */
    template <HardEvent e> __aicore__ int32_t AllocEventID() { return take(dev_event(e)); }
    /* Gives back an id AllocEventID held. */
    template <HardEvent e> __aicore__ void ReleaseEventID(int32_t id) {
        if (id >= 0 && id < 8) taken_[dev_event(e)] &= (uint8_t)~(1u << id);
    }
    /* An id of engine event ev no one holds, now held (-1 when all 8 are). */
    int32_t take(int ev) {
        int32_t id = fetch(ev);
        if (id >= 0) taken_[ev] |= (uint8_t)(1u << id);
        return id;
    }
    /* Forgets a queue whose destructor drained it. */
    void unlink(TQueImpl *q) {
        for (TQueImpl **p = &queues_; *p; p = &(*p)->next_)
            if (*p == q) {
                *p = q->next_;
                return;
            }
    }
  private:
    int32_t fetch(int ev) const {
        for (int32_t id = 0; id < 8; id++)
            if (!(taken_[ev] & (1u << id))) return id;
        return -1;
    }
    void init(TQueImpl &q, uint8_t num, uint32_t len, npurr_site s) {
        uint32_t bytes = (len + 31u) / 32u * 32u;
        local_t base = ::dev_alloc_local(LM_UB, bytes * (num ? num : 1), s.dev());
        q.init(this, base, num, bytes, s);
        q.next_ = queues_;
        queues_ = &q;
    }
    TPipe *prev_;
    uint32_t mark_;
    TQueImpl *queues_ = nullptr;
    uint8_t taken_[HARD_EVENT_COUNT] = {};
};

/* ------------------------------------------------------------ TQueImpl */

inline void TQueImpl::init(TPipe *pipe, local_t base, uint8_t num, uint32_t len, npurr_site s) {
    dev_site here = s.dev();
    if (num > MAX_BUFS) ::dev_unsupported("TPipe::InitBuffer: more than 8 buffers in a queue", here);
    pipe_ = pipe;
    base_ = base;
    len_ = len;
    num_ = num;
    next_alloc_ = head_ = count_ = 0;
    for (int i = 0; i < num; i++) {
        state_[i] = back_set_[i] = 0;
        if (ev_fwd_) id_fwd_[i] = pipe->take(ev_fwd_);
        if (ev_back_) id_back_[i] = pipe->take(ev_back_);
        if ((ev_fwd_ && id_fwd_[i] < 0) || (ev_back_ && id_back_[i] < 0))
            ::dev_unsupported("TPipe::InitBuffer: the queues hold all 8 event ids of a hard event",
                              here);
    }
}

inline int TQueImpl::find(local_t at, const char *what, npurr_site s) const {
    for (int i = 0; i < num_; i++)
        if (base_.space == at.space && base_.off + (uint32_t)i * len_ == at.off) return i;
    ::dev_unsupported(what, s.dev());
    return 0;
}

inline void TQueImpl::drain(npurr_site s) {
    for (int i = 0; i < num_; i++) {
        if (back_set_[i]) ::dev_wait_flag(ev_back_, id_back_[i], s.dev());
        back_set_[i] = 0;
    }
    for (; count_; count_--, head_ = (uint8_t)((head_ + 1) % MAX_BUFS))
        ::dev_wait_flag(ev_fwd_, id_fwd_[fifo_[head_]], s.dev());
    if (pipe_) pipe_->unlink(this);
    pipe_ = nullptr;
    num_ = 0;
}

inline local_t TQueImpl::alloc(npurr_site s) {
    for (int k = 0; k < num_; k++) {
        int i = (next_alloc_ + k) % num_;
        if (state_[i]) continue;
        next_alloc_ = (uint8_t)((i + 1) % num_);
        if (back_set_[i]) ::dev_wait_flag(ev_back_, id_back_[i], s.dev());
        back_set_[i] = 0;
        state_[i] = 1;
        return local_add(base_, (uint32_t)i * len_);
    }
    ::dev_unsupported("TQue::AllocTensor: every buffer of the queue is allocated (FreeTensor one "
                      "first, or InitBuffer more)", s.dev());
    return base_;
}

inline void TQueImpl::enque(local_t at, npurr_site s) {
    int i = find(at, "TQue::EnQue: the tensor is no buffer of this queue", s);
    if (count_ == MAX_BUFS) ::dev_unsupported("TQue::EnQue: the queue is full", s.dev());
    ::dev_set_flag(ev_fwd_, id_fwd_[i], s.dev());
    state_[i] = 2;
    fifo_[(head_ + count_) % MAX_BUFS] = (uint8_t)i;
    count_++;
}

inline local_t TQueImpl::deque(npurr_site s) {
    if (!count_) ::dev_unsupported("TQue::DeQue: nothing was enqueued", s.dev());
    int i = fifo_[head_];
    head_ = (uint8_t)((head_ + 1) % MAX_BUFS);
    count_--;
    ::dev_wait_flag(ev_fwd_, id_fwd_[i], s.dev());
    state_[i] = 1;
    return local_add(base_, (uint32_t)i * len_);
}

inline void TQueImpl::free(local_t at, npurr_site s) {
    int i = find(at, "TQue::FreeTensor: the tensor is no buffer of this queue", s);
    ::dev_set_flag(ev_back_, id_back_[i], s.dev());
    back_set_[i] = 1;
    state_[i] = 0;
}

}  // namespace AscendC

/* GetTPipePtr is the kernel library's global: kernels call it before any
 * `using namespace AscendC`. */
__aicore__ inline AscendC::TPipe *GetTPipePtr() { return AscendC::current_pipe(); }

#endif

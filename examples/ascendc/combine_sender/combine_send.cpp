/*
 * combine_send.cpp - seed 000's Combine-Sender (scheme 2) in Ascend C:
 * gather-pack through UB into the destination's ring over HCCS.
 *
 * x is expert-major, rank-minor: the rows one destination needs are spread
 * over every local expert. One AIV core per destination (core b serves
 * destinations b, b + blockDim, ...) walks the local experts in order:
 * over-reads each segment from the 32 B aligned GM address below it into a
 * read_temp half (MTE2), crops the valid bytes into a staging buffer (V),
 * and flushes staging into the ring when the next row does not fit. A
 * flush writes the 32 B-aligned part and carries the remainder to the
 * front of the other staging buffer, where the next batch is gathered
 * while this one is on the link; only the last flush is padded.
 *
 * The ring (seed 000 part 2): the tail and head count bytes and never
 * wrap; a flush waits until the destination's head leaves room (a spin on
 * the remote head word, the head prefetched into UB by MTE2 before the
 * gather so its latency hides), writes at tail % ringBytes in two parts at
 * the wrap, and commits the tail only after MTE3 has landed the bytes, at
 * the start of the next flush.
 *
 * The crop is a vector copy when the bytes are 32 B aligned (rows of a
 * multiple of 16 bf16, every production shape); otherwise the vector unit
 * cannot shift bytes and the scalar unit moves them one by one.
 */
#include "kernel_operator.h"

#include "combine_tiling.h"

using namespace AscendC;

namespace {

constexpr int32_t PREFETCH_EVENT = 7;   // MTE2_S: the head prefetch
constexpr int32_t COMMIT_EVENT = 0;     // MTE3_S: the flush landed

__aicore__ inline uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }
__aicore__ inline uint64_t AlignDown(uint64_t v, uint64_t a) { return v / a * a; }

/* The sender side of one ring: seed 000's local_tail_cache and remote_head_cache. */
struct RingWriter {
    GlobalTensor<uint8_t> data;      // the ring on the destination
    GlobalTensor<int64_t> head;      // its head word there
    GlobalTensor<int64_t> tail;      // its tail word there
    LocalTensor<int64_t> headUb;     // where the prefetched head lands
    uint64_t capacity = 0;
    uint32_t maxFlush = 0;
    int64_t localTailCache = 0;
    int64_t remoteHeadCache = 0;
    bool commitPending = false;
    bool prefetchPending = false;

    __aicore__ int64_t FreeSpace() const {
        return (int64_t)capacity - (localTailCache - remoteHeadCache);
    }
    /* Seed s4.3: the head read goes out before the gather, only when the
     * cache says the next flush might not fit (an MTE2 read sits in the
     * queue ahead of the gather's reads). */
    __aicore__ void PrefetchHead() {
        if (FreeSpace() >= (int64_t)maxFlush) return;
        DataCopyPad(headUb, head, DataCopyExtParams(1, 8, 0, 0), DataCopyPadExtParams<int64_t>());
        prefetchPending = true;
    }
    /* The previous flush's tail, once MTE3 has landed its bytes. */
    __aicore__ void Finish() {
        if (!commitPending) return;
        WaitFlag<HardEvent::MTE3_S>(COMMIT_EVENT);
        tail.SetValue(0, localTailCache);
        DataCacheCleanAndInvalid<int64_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(tail);
        commitPending = false;
    }
    __aicore__ void Flush(const LocalTensor<uint8_t> &staging, uint32_t bytes) {
        Finish();   // before the wait below: the receiver frees only what it was told of
        int64_t need = bytes;
        if (FreeSpace() < need && prefetchPending) {
            SetFlag<HardEvent::MTE2_S>(PREFETCH_EVENT);
            WaitFlag<HardEvent::MTE2_S>(PREFETCH_EVENT);
            int64_t h = headUb.GetValue(0);
            if (h > remoteHeadCache) remoteHeadCache = h;
            prefetchPending = false;
        }
        while (FreeSpace() < need) {   // the seed's spin on Remote_Head
            DataCacheCleanAndInvalid<int64_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(head);
            remoteHeadCache = head.GetValue(0);
        }
        uint64_t pos = (uint64_t)localTailCache % capacity, atEnd = capacity - pos;
        if (bytes <= atEnd) {
            DataCopy(data[pos], staging, bytes);
        } else {
            DataCopy(data[pos], staging, (uint32_t)atEnd);
            DataCopy(data, staging[(uint32_t)atEnd], (uint32_t)(bytes - atEnd));
        }
        localTailCache += need;
        SetFlag<HardEvent::MTE3_S>(COMMIT_EVENT);
        commitPending = true;
    }
};

class CombineSender {
  public:
    __aicore__ void Init(GM_ADDR x, GM_ADDR offsetTable, GM_ADDR lengthTable, const CombineTiling &t) {
        t_ = t;
        hccl_.Init(GetHcclContext<HCCL_GROUP_ID_0>());
        me_ = (int32_t)hccl_.GetRankId();
        x_.SetGlobalBuffer((__gm__ uint8_t *)x);
        pipe_.InitBuffer(tables_, 2 * t.tableBytes);
        pipe_.InitBuffer(readTemp_, 2 * READ_TEMP_BYTES);
        pipe_.InitBuffer(staging_, 2 * t.stagingBytes);
        pipe_.InitBuffer(headBuf_, 32);
        offsetUb_ = tables_.GetWithOffset<int32_t>(t.tableBytes / 4, 0);
        lengthUb_ = tables_.GetWithOffset<int32_t>(t.tableBytes / 4, t.tableBytes);
        for (int i = 0; i < 2; i++) {
            readTempUb_[i] = readTemp_.GetWithOffset<uint8_t>(READ_TEMP_BYTES, i * READ_TEMP_BYTES);
            stagingUb_[i] = staging_.GetWithOffset<uint8_t>(t.stagingBytes, i * t.stagingBytes);
        }
        /* Seed s6.4: the metadata prefetched once, the whole [L, R] tables. */
        GlobalTensor<int32_t> off, len;
        off.SetGlobalBuffer((__gm__ int32_t *)offsetTable);
        len.SetGlobalBuffer((__gm__ int32_t *)lengthTable);
        DataCopy(offsetUb_, off, t.tableBytes / 4);
        DataCopy(lengthUb_, len, t.tableBytes / 4);
        SetFlag<HardEvent::MTE2_S>(0);
        WaitFlag<HardEvent::MTE2_S>(0);
    }
    __aicore__ void Process() {
        for (int32_t dst = (int32_t)GetBlockIdx(); dst < t_.ranks; dst += (int32_t)GetBlockNum())
            SendTo(dst);
    }

  private:
    __aicore__ void SendTo(int32_t dst) {
        GM_ADDR win = hccl_.GetWindowsInAddr((uint32_t)dst);
        RingWriter w;
        w.data.SetGlobalBuffer((__gm__ uint8_t *)(win + t_.ctrlBytes + (uint64_t)me_ * t_.ringStride));
        w.head.SetGlobalBuffer((__gm__ int64_t *)(win + (uint64_t)me_ * CTRL_STRIDE + CTRL_HEAD));
        w.tail.SetGlobalBuffer((__gm__ int64_t *)(win + (uint64_t)me_ * CTRL_STRIDE + CTRL_TAIL));
        w.headUb = headBuf_.Get<int64_t>();
        w.capacity = t_.ringBytes;
        w.maxFlush = t_.stagingBytes;
        cur_ = 0;
        stagingOffset_ = 0;
        SetFlag<HardEvent::MTE3_V>(1);   // staging buffer 1 starts free; 0 is gathered into first
        w.PrefetchHead();
        int buf = 0;
        SetFlag<HardEvent::V_MTE2>(0);   // both read_temp halves start free
        SetFlag<HardEvent::V_MTE2>(1);
        const uint64_t rowBytes = t_.rowBytes;
        for (int32_t e = 0; e < t_.localExperts; e++) {
            uint32_t cell = (uint32_t)(e * t_.ranks + dst);
            int32_t tokenCnt = lengthUb_.GetValue(cell);
            if (tokenCnt == 0) continue;
            int32_t startToken = offsetUb_.GetValue(cell);
            uint64_t segStart = (uint64_t)startToken * rowBytes;
            uint64_t dataBytes = (uint64_t)tokenCnt * rowBytes, segPos = 0;
            while (segPos < dataBytes) {
                uint32_t alignRem = (uint32_t)((segStart + segPos) % 32);
                uint64_t limit = dataBytes - segPos;
                if (limit > t_.stagingBytes - stagingOffset_) limit = t_.stagingBytes - stagingOffset_;
                if (limit > READ_TEMP_BYTES - alignRem) limit = READ_TEMP_BYTES - alignRem;
                /* A piece is whole rows: staging is flushed when the next row
                 * does not fit; a row larger than what fits is split. */
                uint64_t inRow = segPos % rowBytes, piece;
                if (inRow != 0) {
                    piece = limit < rowBytes - inRow ? limit : rowBytes - inRow;
                } else {
                    piece = limit / rowBytes * rowBytes;
                    if (piece == 0 && stagingOffset_ < 32) piece = limit;
                }
                if (piece == 0) {
                    Flush(w, false);
                    w.PrefetchHead();
                    continue;
                }
                /* Over-read from the 32 B boundary below, the length rounded up. */
                uint32_t readLen = (uint32_t)AlignUp(piece + alignRem, 32);
                WaitFlag<HardEvent::V_MTE2>(buf);
                DataCopy(readTempUb_[buf], x_[segStart + segPos - alignRem], readLen);
                SetFlag<HardEvent::MTE2_V>(buf);
                WaitFlag<HardEvent::MTE2_V>(buf);
                Crop(stagingUb_[cur_], stagingOffset_, readTempUb_[buf], alignRem, (uint32_t)piece);
                SetFlag<HardEvent::V_MTE2>(buf);
                buf ^= 1;
                stagingOffset_ += (uint32_t)piece;
                segPos += piece;
            }
        }
        Flush(w, true);
        w.Finish();
        WaitFlag<HardEvent::MTE3_V>(cur_ ^ 1);
        WaitFlag<HardEvent::V_MTE2>(0);
        WaitFlag<HardEvent::V_MTE2>(1);
    }

    /* [from, from + bytes) of src appended at staging's offset `at`. */
    __aicore__ void Crop(const LocalTensor<uint8_t> &staging, uint32_t at, const LocalTensor<uint8_t> &src,
                         uint32_t from, uint32_t bytes) {
        if (at % 32 == 0 && from % 32 == 0 && bytes % 32 == 0) {
            DataCopy(staging[at], src[from], bytes);
            return;
        }
        /* The vector unit moves 32 B blocks only: the scalar unit shifts the
         * bytes, once every pipe has finished with them. */
        PipeBarrier<PIPE_ALL>();
        for (uint32_t i = 0; i < bytes; i++) staging.SetValue(at + i, src.GetValue(from + i));
    }

    __aicore__ void Flush(RingWriter &w, bool isLast) {
        uint32_t writeLen = (uint32_t)(isLast ? AlignUp(stagingOffset_, 32) : AlignDown(stagingOffset_, 32));
        if (writeLen == 0) return;
        const LocalTensor<uint8_t> &full = stagingUb_[cur_];
        SetFlag<HardEvent::V_MTE3>(0);   // the crops into this buffer have landed
        WaitFlag<HardEvent::V_MTE3>(0);
        w.Flush(full, writeLen);
        SetFlag<HardEvent::MTE3_V>(cur_);   // V may refill it once MTE3 has read it
        int next = cur_ ^ 1;
        WaitFlag<HardEvent::MTE3_V>(next);   // the other buffer's put (two flushes ago) is done
        uint32_t remain = isLast ? 0 : stagingOffset_ - writeLen;
        if (remain > 0) Crop(stagingUb_[next], 0, full, writeLen, remain);   // < 32 B carried
        cur_ = next;
        stagingOffset_ = remain;
    }

    CombineTiling t_{};
    Hccl<HCCL_SERVER_TYPE_AICPU> hccl_;
    int32_t me_ = 0;
    TPipe pipe_;
    TBuf<TPosition::VECCALC> tables_, readTemp_, staging_, headBuf_;
    LocalTensor<int32_t> offsetUb_, lengthUb_;
    LocalTensor<uint8_t> readTempUb_[2], stagingUb_[2];
    GlobalTensor<uint8_t> x_;
    int cur_ = 0;
    uint32_t stagingOffset_ = 0;
};

}  // namespace

extern "C" __global__ __aicore__ void combine_send(GM_ADDR x, GM_ADDR offsetTable, GM_ADDR lengthTable,
                                                   GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(CombineTiling, t, tiling);
    CombineSender op;
    op.Init(x, offsetTable, lengthTable, t);
    op.Process();
}

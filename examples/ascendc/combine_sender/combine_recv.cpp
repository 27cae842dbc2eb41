/*
 * combine_recv.cpp - the destination side of seed 000's combine in Ascend
 * C: drain the rings, then the weighted sum of seed 002 s3.4.
 *
 * One AIV core per source rank spins on its ring's tail word, copies the
 * new bytes (two parts at the wrap) through UB into the receive layout and
 * stores the head as soon as the bytes are in UB, which is what lets the
 * sender reuse the space. The receive layout is each source's stream in
 * rank order, so expert e's rows for this rank start at
 * expertWindowOffset[e].
 *
 * A token's sum reads rows other cores received, so the receivers meet at
 * SyncAll first. Then each core takes a contiguous range of tokens: for
 * every top-k slot it loads the row (bf16), casts it to float and adds
 * it times the weight to the accumulator (Axpy); the sum is cast back to
 * bf16 and written out.
 */
#include "kernel_operator.h"

#include "combine_tiling.h"

using namespace AscendC;

namespace {

__aicore__ inline uint64_t AlignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

class CombineReceiver {
  public:
    __aicore__ void Init(GM_ADDR recvMeta, GM_ADDR recv, GM_ADDR expertIds, GM_ADDR expandIdx,
                         GM_ADDR topkWeights, GM_ADDR expertWindowOffset, GM_ADDR out,
                         const CombineTiling &t) {
        t_ = t;
        hccl_.Init(GetHcclContext<HCCL_GROUP_ID_0>());
        me_ = (int32_t)hccl_.GetRankId();
        recvMeta_.SetGlobalBuffer((__gm__ int32_t *)recvMeta);
        recv_.SetGlobalBuffer((__gm__ uint8_t *)recv);
        ids_.SetGlobalBuffer((__gm__ int32_t *)expertIds);
        idx_.SetGlobalBuffer((__gm__ int32_t *)expandIdx);
        weights_.SetGlobalBuffer((__gm__ float *)topkWeights);
        ewo_.SetGlobalBuffer((__gm__ int32_t *)expertWindowOffset);
        out_.SetGlobalBuffer((__gm__ uint8_t *)out);
        pipe_.InitBuffer(chunks_, 2 * RECV_CHUNK_BYTES);
        chunkUb_[0] = chunks_.GetWithOffset<uint8_t>(RECV_CHUNK_BYTES, 0);
        chunkUb_[1] = chunks_.GetWithOffset<uint8_t>(RECV_CHUNK_BYTES, RECV_CHUNK_BYTES);
    }
    __aicore__ void Process() {
        SetFlag<HardEvent::MTE3_MTE2>(0);
        SetFlag<HardEvent::MTE3_MTE2>(1);
        for (int32_t src = (int32_t)GetBlockIdx(); src < t_.ranks; src += (int32_t)GetBlockNum())
            ReceiveFrom(src);
        WaitFlag<HardEvent::MTE3_MTE2>(0);
        WaitFlag<HardEvent::MTE3_MTE2>(1);
        SetFlag<HardEvent::MTE3_S>(0);   // received rows have landed before the others read them
        WaitFlag<HardEvent::MTE3_S>(0);
        SyncAll();
        pipe_.Reset();
        SumTokens();
    }

  private:
    __aicore__ void CopyOut(const GlobalTensor<uint8_t> &dst, const LocalTensor<uint8_t> &src, uint64_t bytes) {
        if (bytes % 32 == 0)
            DataCopy(dst, src, (uint32_t)bytes);
        else
            DataCopyPad(dst, src, DataCopyExtParams(1, (uint32_t)bytes, 0, 0));
    }

    __aicore__ void ReceiveFrom(int32_t src) {
        int32_t rows = recvMeta_.GetValue(src);
        int32_t rowOffset = recvMeta_.GetValue(t_.ranks + src);
        uint64_t total = (uint64_t)rows * t_.rowBytes;
        int64_t expect = (int64_t)AlignUp(total, 32);   // only the sender's last flush is padded
        GM_ADDR win = hccl_.GetWindowsInAddr((uint32_t)me_);
        GlobalTensor<uint8_t> ring;
        GlobalTensor<int64_t> head, tail;
        ring.SetGlobalBuffer((__gm__ uint8_t *)(win + t_.ctrlBytes + (uint64_t)src * t_.ringStride));
        head.SetGlobalBuffer((__gm__ int64_t *)(win + (uint64_t)src * CTRL_STRIDE + CTRL_HEAD));
        tail.SetGlobalBuffer((__gm__ int64_t *)(win + (uint64_t)src * CTRL_STRIDE + CTRL_TAIL));
        GlobalTensor<uint8_t> dst = recv_[(uint64_t)rowOffset * t_.rowBytes];
        int64_t h = 0;
        uint64_t consumed = 0;
        while (h < expect) {
            int64_t tl;
            do {   // the sender's tail store lands in this rank's GM
                DataCacheCleanAndInvalid<int64_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(tail);
                tl = tail.GetValue(0);
            } while (tl <= h);
            while (h < tl) {
                uint64_t n = (uint64_t)(tl - h);
                if (n > RECV_CHUNK_BYTES) n = RECV_CHUNK_BYTES;
                uint64_t pos = (uint64_t)h % t_.ringBytes;
                const LocalTensor<uint8_t> &chunk = chunkUb_[buf_];
                WaitFlag<HardEvent::MTE3_MTE2>(buf_);
                if (pos + n <= t_.ringBytes) {
                    DataCopy(chunk, ring[pos], (uint32_t)n);
                } else {
                    uint64_t first = t_.ringBytes - pos;
                    DataCopy(chunk, ring[pos], (uint32_t)first);
                    DataCopy(chunk[(uint32_t)first], ring, (uint32_t)(n - first));
                }
                SetFlag<HardEvent::MTE2_S>(buf_);
                WaitFlag<HardEvent::MTE2_S>(buf_);
                h += (int64_t)n;
                head.SetValue(0, h);   // the space is free once the bytes are in UB
                DataCacheCleanAndInvalid<int64_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(head);
                uint64_t keep = total - consumed < n ? total - consumed : n;   // drop the padding
                if (keep > 0) CopyOut(dst[consumed], chunk, keep);
                consumed += keep;
                SetFlag<HardEvent::MTE3_MTE2>(buf_);
                buf_ ^= 1;
            }
        }
    }

    __aicore__ void SumTokens() {
        const int32_t K = t_.topk, H = t_.hidden;
        const int32_t block = (int32_t)GetBlockIdx(), blocks = (int32_t)GetBlockNum();
        const int32_t tBegin = (int32_t)((int64_t)t_.tokens * block / blocks);
        const int32_t tEnd = (int32_t)((int64_t)t_.tokens * (block + 1) / blocks);
        const uint32_t hc = (uint32_t)H < HIDDEN_TILE ? (uint32_t)H : HIDDEN_TILE;
        const uint32_t ewoBytes = (uint32_t)AlignUp((uint64_t)t_.experts * 4, 32);
        const uint32_t accBytes = (uint32_t)AlignUp((uint64_t)hc * 4, 32);
        const uint32_t rowBytes = (uint32_t)AlignUp((uint64_t)hc * 2, 32);
        TBuf<TPosition::VECCALC> ewoBuf, metaBuf, accBuf, rowBuf, outBuf;
        pipe_.InitBuffer(ewoBuf, ewoBytes);
        pipe_.InitBuffer(metaBuf, 3 * META_BYTES);
        pipe_.InitBuffer(accBuf, 2 * accBytes);
        pipe_.InitBuffer(rowBuf, 2 * rowBytes);
        pipe_.InitBuffer(outBuf, rowBytes);
        LocalTensor<int32_t> ewo = ewoBuf.Get<int32_t>();
        LocalTensor<int32_t> idsUb = metaBuf.GetWithOffset<int32_t>(META_BYTES / 4, 0);
        LocalTensor<int32_t> idxUb = metaBuf.GetWithOffset<int32_t>(META_BYTES / 4, META_BYTES);
        LocalTensor<float> wUb = metaBuf.GetWithOffset<float>(META_BYTES / 4, 2 * META_BYTES);
        LocalTensor<float> acc = accBuf.GetWithOffset<float>(hc, 0);
        LocalTensor<float> scaled = accBuf.GetWithOffset<float>(hc, accBytes);
        LocalTensor<bfloat16_t> row[2] = {rowBuf.GetWithOffset<bfloat16_t>(hc, 0),
                                          rowBuf.GetWithOffset<bfloat16_t>(hc, rowBytes)};
        LocalTensor<bfloat16_t> outUb = outBuf.Get<bfloat16_t>();
        DataCopy(ewo, ewo_, ewoBytes / 4);
        SetFlag<HardEvent::MTE2_S>(2);
        WaitFlag<HardEvent::MTE2_S>(2);

        const int32_t tokensPerLoad = (int32_t)(META_BYTES / ((uint32_t)K * 4));
        int rb = 0;
        SetFlag<HardEvent::V_MTE2>(0);
        SetFlag<HardEvent::V_MTE2>(1);
        SetFlag<HardEvent::MTE3_V>(0);
        for (int32_t t0 = tBegin; t0 < tEnd; t0 += tokensPerLoad) {
            int32_t n = tEnd - t0 < tokensPerLoad ? tEnd - t0 : tokensPerLoad;
            uint32_t metaOff = (uint32_t)t0 * (uint32_t)K;
            uint32_t metaLen = (uint32_t)AlignUp((uint64_t)n * (uint64_t)K * 4, 32) / 4;
            DataCopy(idsUb, ids_[metaOff], metaLen);
            DataCopy(idxUb, idx_[metaOff], metaLen);
            DataCopy(wUb, weights_[metaOff], metaLen);
            SetFlag<HardEvent::MTE2_S>(3);
            WaitFlag<HardEvent::MTE2_S>(3);
            for (int32_t i = 0; i < n; i++) {
                int32_t t = t0 + i;
                for (uint32_t c0 = 0; c0 < (uint32_t)H; c0 += hc) {
                    uint32_t hn = (uint32_t)H - c0 < hc ? (uint32_t)H - c0 : hc;
                    Duplicate(acc, 0.0f, hn);
                    for (int32_t k = 0; k < K; k++) {
                        uint32_t slot = (uint32_t)(i * K + k);
                        int32_t expert = idsUb.GetValue(slot);
                        if (expert < 0) continue;   // a dropped slot adds nothing
                        float weight = wUb.GetValue(slot);
                        int64_t r = (int64_t)ewo.GetValue((uint32_t)expert) + idxUb.GetValue(slot);
                        WaitFlag<HardEvent::V_MTE2>(rb);
                        GlobalTensor<bfloat16_t> src;
                        src.SetGlobalBuffer((__gm__ bfloat16_t *)(recv_.GetPhyAddr((uint64_t)r * t_.rowBytes + c0 * 2)));
                        DataCopy(row[rb], src, (uint32_t)AlignUp(hn, 16));
                        SetFlag<HardEvent::MTE2_V>(rb);
                        WaitFlag<HardEvent::MTE2_V>(rb);
                        Cast(scaled, row[rb], RoundMode::CAST_NONE, hn);
                        Axpy(acc, scaled, weight, hn);
                        SetFlag<HardEvent::V_MTE2>(rb);
                        rb ^= 1;
                    }
                    WaitFlag<HardEvent::MTE3_V>(0);
                    Cast(outUb, acc, RoundMode::CAST_RINT, hn);
                    SetFlag<HardEvent::V_MTE3>(0);
                    WaitFlag<HardEvent::V_MTE3>(0);
                    CopyOut(out_[(uint64_t)t * t_.rowBytes + c0 * 2], outUb.ReinterpretCast<uint8_t>(),
                            (uint64_t)hn * 2);
                    SetFlag<HardEvent::MTE3_V>(0);
                }
            }
        }
        WaitFlag<HardEvent::V_MTE2>(0);
        WaitFlag<HardEvent::V_MTE2>(1);
        WaitFlag<HardEvent::MTE3_V>(0);
    }

    CombineTiling t_{};
    Hccl<HCCL_SERVER_TYPE_AICPU> hccl_;
    int32_t me_ = 0;
    TPipe pipe_;
    TBuf<TPosition::VECCALC> chunks_;
    LocalTensor<uint8_t> chunkUb_[2];
    int buf_ = 0;
    GlobalTensor<int32_t> recvMeta_, ids_, idx_, ewo_;
    GlobalTensor<float> weights_;
    GlobalTensor<uint8_t> recv_, out_;
};

}  // namespace

extern "C" __global__ __aicore__ void combine_recv(GM_ADDR recvMeta, GM_ADDR recv, GM_ADDR expertIds,
                                                   GM_ADDR expandIdx, GM_ADDR topkWeights,
                                                   GM_ADDR expertWindowOffset, GM_ADDR out, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(CombineTiling, t, tiling);
    CombineReceiver op;
    op.Init(recvMeta, recv, expertIds, expandIdx, topkWeights, expertWindowOffset, out, t);
    op.Process();
}

/*
 * combine_normal.cpp - the intranode normal combine in Ascend C, the
 * algorithm of A2's CamMoeCombineNormal (and of npurr's C combine-normal):
 * every AIV core of a rank runs both phases.
 *
 * Send: each core takes an even share of the rows this rank received in
 * the dispatch (the last element of epRecvCount). Per row, from
 * tokenSrcInfo's (rank s, token t, slot k): the row GM -> UB, UB -> s's
 * window at slot (t * K + k) (over HCCS unless s is this rank), a barrier
 * so the row has landed, then a status of eight float 1.0s into s's slot.
 *
 * Sum: each core takes an even share of this rank's own tokens. Per token:
 * spin until each live slot's status says its row is here, clear the
 * token's K statuses, then the weighted sum over its K rows (cast to
 * float, Axpy by the top-k weight), cast back to bf16 and written out.
 * A slot whose expert is -1 (a dropped slot) has no row and no status.
 */
#include "kernel_operator.h"

#include "combine_normal_tiling.h"

using namespace AscendC;

namespace {

__aicore__ inline uint32_t AlignUp(uint32_t v, uint32_t a) { return (v + a - 1) / a * a; }

/* A2's SplitCoreCal: total over cores, the first total % cores one more. */
__aicore__ inline void SplitCore(uint32_t total, uint32_t core, uint32_t cores, uint32_t &begin,
                                 uint32_t &end) {
    uint32_t per = total / cores, rem = total % cores;
    begin = per * core + (core < rem ? core : rem);
    end = begin + per + (core < rem ? 1u : 0u);
}

class CombineNormal {
  public:
    __aicore__ void Init(GM_ADDR recvX, GM_ADDR tokenSrcInfo, GM_ADDR epRecvCount, GM_ADDR expertIds,
                         GM_ADDR topkWeights, GM_ADDR xOut, const CombineNormalTiling &t) {
        t_ = t;
        hccl_.Init(GetHcclContext<HCCL_GROUP_ID_0>());
        me_ = hccl_.GetRankId();
        recvX_.SetGlobalBuffer((__gm__ uint8_t *)recvX);
        srcInfo_.SetGlobalBuffer((__gm__ int32_t *)tokenSrcInfo);
        epRecvCount_.SetGlobalBuffer((__gm__ int32_t *)epRecvCount);
        ids_.SetGlobalBuffer((__gm__ int32_t *)expertIds);
        weights_.SetGlobalBuffer((__gm__ float *)topkWeights);
        xOut_.SetGlobalBuffer((__gm__ uint8_t *)xOut);
        rowUbBytes_ = AlignUp(t.rowBytes, 32);
        pipe_.InitBuffer(rows_, 2 * rowUbBytes_);
        row_[0] = rows_.GetWithOffset<uint8_t>(rowUbBytes_, 0);
        row_[1] = rows_.GetWithOffset<uint8_t>(rowUbBytes_, rowUbBytes_);
    }
    __aicore__ void Process() {
        Send();
        Sum();
    }

  private:
    /* CopyBufferToShareAndSetStatus. */
    __aicore__ void Send() {
        TBuf<TPosition::VECCALC> statusBuf, infoBuf;
        pipe_.InitBuffer(statusBuf, STATE_BYTES);
        pipe_.InitBuffer(infoBuf, AlignUp(SRC_INFO_ROWS * 12, 32));
        LocalTensor<float> status = statusBuf.Get<float>();
        LocalTensor<int32_t> info = infoBuf.Get<int32_t>();
        Duplicate(status, 1.0f, STATE_BYTES / 4);
        int32_t selfSendCnt = epRecvCount_.GetValue((uint64_t)t_.experts - 1);
        PipeBarrier<PIPE_ALL>();
        uint32_t begin, end;
        SplitCore((uint32_t)selfSendCnt, GetBlockIdx(), GetBlockNum(), begin, end);
        int b = 0;
        for (uint32_t c0 = begin; c0 < end; c0 += SRC_INFO_ROWS) {
            uint32_t n = end - c0 < SRC_INFO_ROWS ? end - c0 : SRC_INFO_ROWS;
            DataCopyPad(info, srcInfo_[(uint64_t)c0 * 3], DataCopyExtParams(1, n * 12, 0, 0),
                        DataCopyPadExtParams<int32_t>());
            SetFlag<HardEvent::MTE2_S>(0);
            WaitFlag<HardEvent::MTE2_S>(0);
            for (uint32_t i = 0; i < n; i++) {
                int32_t s = info.GetValue(i * 3), tok = info.GetValue(i * 3 + 1), k = info.GetValue(i * 3 + 2);
                SendRow(c0 + i, s, tok, k, b, status);
                b ^= 1;
            }
        }
        SetFlag<HardEvent::MTE3_S>(0);
        WaitFlag<HardEvent::MTE3_S>(0);
    }
    __aicore__ void SendRow(uint32_t row, int32_t s, int32_t tok, int32_t k, int b,
                            const LocalTensor<float> &status) {
        uint64_t slot = (uint64_t)tok * (uint64_t)t_.topk + (uint64_t)k;
        GM_ADDR win = hccl_.GetWindowsInAddr((uint32_t)s);
        GlobalTensor<uint8_t> dst;
        GlobalTensor<float> state;
        dst.SetGlobalBuffer((__gm__ uint8_t *)(win + t_.stateBytes + slot * t_.windowStride));
        state.SetGlobalBuffer((__gm__ float *)(win + slot * STATE_BYTES));
        DataCopyPad(row_[b], recvX_[(uint64_t)row * t_.rowBytes], DataCopyExtParams(1, t_.rowBytes, 0, 0),
                    DataCopyPadExtParams<uint8_t>());
        SetFlag<HardEvent::MTE2_MTE3>(b);
        WaitFlag<HardEvent::MTE2_MTE3>(b);
        DataCopyPad(dst, row_[b], DataCopyExtParams(1, t_.rowBytes, 0, 0));
        PipeBarrier<PIPE_ALL>();   // the row has landed before its status says so
        DataCopy(state, status, STATE_BYTES / 4);
    }

    /* ReadBufferFromRemote. */
    __aicore__ void Sum() {
        const int32_t K = t_.topk;
        const uint32_t H = (uint32_t)t_.hidden;
        uint32_t begin, end;
        SplitCore((uint32_t)t_.tokens, GetBlockIdx(), GetBlockNum(), begin, end);
        if (begin == end) return;
        TBuf<TPosition::VECCALC> metaBuf, zeroBuf, f32Buf, outBuf;
        pipe_.InitBuffer(metaBuf, 2 * META_BYTES);
        pipe_.InitBuffer(zeroBuf, (uint32_t)K * STATE_BYTES);
        pipe_.InitBuffer(f32Buf, 2 * AlignUp(H * 4, 32));
        pipe_.InitBuffer(outBuf, AlignUp(H * 2, 32));
        LocalTensor<int32_t> idsUb = metaBuf.GetWithOffset<int32_t>(META_BYTES / 4, 0);
        LocalTensor<float> wUb = metaBuf.GetWithOffset<float>(META_BYTES / 4, META_BYTES);
        LocalTensor<float> zero = zeroBuf.Get<float>();
        LocalTensor<float> tokenF32 = f32Buf.GetWithOffset<float>(H, 0);
        LocalTensor<float> sum = f32Buf.GetWithOffset<float>(H, AlignUp(H * 4, 32));
        LocalTensor<bfloat16_t> outUb = outBuf.Get<bfloat16_t>();
        GM_ADDR win = hccl_.GetWindowsInAddr(me_);
        const int32_t chunk = (int32_t)(META_BYTES / ((uint32_t)K * 4));
        int rb = 0;
        SetFlag<HardEvent::V_MTE2>(0);
        SetFlag<HardEvent::V_MTE2>(1);
        for (int32_t t0 = (int32_t)begin; t0 < (int32_t)end; t0 += chunk) {
            int32_t n = (int32_t)end - t0 < chunk ? (int32_t)end - t0 : chunk;
            uint32_t len = (uint32_t)(n * K * 4);
            DataCopyPad(idsUb, ids_[(uint64_t)t0 * K], DataCopyExtParams(1, len, 0, 0),
                        DataCopyPadExtParams<int32_t>());
            DataCopyPad(wUb, weights_[(uint64_t)t0 * K], DataCopyExtParams(1, len, 0, 0),
                        DataCopyPadExtParams<float>());
            SetFlag<HardEvent::MTE2_S>(0);
            WaitFlag<HardEvent::MTE2_S>(0);
            for (int32_t i = 0; i < n; i++) {
                int32_t tok = t0 + i;
                GlobalTensor<float> state;
                state.SetGlobalBuffer((__gm__ float *)(win + (uint64_t)tok * K * STATE_BYTES));
                WaitRows(state, idsUb, i, zero);
                WeightedSum(win, tok, i, idsUb, wUb, tokenF32, sum, outUb, rb);
            }
        }
        WaitFlag<HardEvent::V_MTE2>(0);
        WaitFlag<HardEvent::V_MTE2>(1);
        SetFlag<HardEvent::MTE3_S>(0);   // the last output row has landed when the core ends
        WaitFlag<HardEvent::MTE3_S>(0);
    }
    /* WaitBuffCopy: every live slot's status, then the K statuses cleared. */
    __aicore__ void WaitRows(const GlobalTensor<float> &state, const LocalTensor<int32_t> &idsUb, int32_t i,
                             const LocalTensor<float> &zero) {
        const int32_t K = t_.topk;
        for (int32_t k = 0; k < K; k++) {
            if (idsUb.GetValue((uint32_t)(i * K + k)) < 0) continue;
            GlobalTensor<int32_t> word;
            word.SetGlobalBuffer((__gm__ int32_t *)state[(uint64_t)k * (STATE_BYTES / 4)].GetPhyAddr());
            DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(word);
            while (word.GetValue(0) != STATUS_BITS)
                DataCacheCleanAndInvalid<int32_t, CacheLine::SINGLE_CACHE_LINE, DcciDst::CACHELINE_OUT>(word);
        }
        Duplicate(zero, 0.0f, (int32_t)((uint32_t)K * STATE_BYTES / 4));
        SetFlag<HardEvent::V_MTE3>(1);
        WaitFlag<HardEvent::V_MTE3>(1);
        DataCopy(state, zero, (uint32_t)K * STATE_BYTES / 4);
        SetFlag<HardEvent::MTE3_V>(1);   // zero and the output row are free again
        WaitFlag<HardEvent::MTE3_V>(1);
    }
    /* ReadBufferAndWeightedSum for token tok (row i of the metadata chunk). */
    __aicore__ void WeightedSum(GM_ADDR win, int32_t tok, int32_t i, const LocalTensor<int32_t> &idsUb,
                                const LocalTensor<float> &wUb, const LocalTensor<float> &tokenF32,
                                const LocalTensor<float> &sum, const LocalTensor<bfloat16_t> &outUb, int &rb) {
        const int32_t K = t_.topk, H = t_.hidden;
        GlobalTensor<uint8_t> rows;
        rows.SetGlobalBuffer((__gm__ uint8_t *)(win + t_.stateBytes + (uint64_t)tok * K * t_.windowStride));
        Duplicate(sum, 0.0f, H);
        for (int32_t k = 0; k < K; k++) {
            uint32_t slot = (uint32_t)(i * K + k);
            if (idsUb.GetValue(slot) < 0) continue;   // a dropped slot adds nothing
            float scale = wUb.GetValue(slot);
            int b = rb;
            WaitFlag<HardEvent::V_MTE2>(b);
            DataCopyPad(row_[b], rows[(uint64_t)k * t_.windowStride], DataCopyExtParams(1, t_.rowBytes, 0, 0),
                        DataCopyPadExtParams<uint8_t>());
            SetFlag<HardEvent::MTE2_V>(b);
            WaitFlag<HardEvent::MTE2_V>(b);
            Cast(tokenF32, row_[b].ReinterpretCast<bfloat16_t>(), RoundMode::CAST_NONE, H);
            SetFlag<HardEvent::V_MTE2>(b);
            Axpy(sum, tokenF32, scale, H);
            rb = b ^ 1;
        }
        Cast(outUb, sum, RoundMode::CAST_RINT, H);
        SetFlag<HardEvent::V_MTE3>(0);
        WaitFlag<HardEvent::V_MTE3>(0);
        DataCopyPad(xOut_[(uint64_t)tok * t_.rowBytes], outUb.ReinterpretCast<uint8_t>(),
                    DataCopyExtParams(1, t_.rowBytes, 0, 0));
    }

    CombineNormalTiling t_{};
    Hccl<HCCL_SERVER_TYPE_AICPU> hccl_;
    uint32_t me_ = 0;
    TPipe pipe_;
    TBuf<TPosition::VECCALC> rows_;
    LocalTensor<uint8_t> row_[2];
    uint32_t rowUbBytes_ = 0;
    GlobalTensor<uint8_t> recvX_, xOut_;
    GlobalTensor<int32_t> srcInfo_, epRecvCount_, ids_;
    GlobalTensor<float> weights_;
};

}  // namespace

extern "C" __global__ __aicore__ void cam_moe_combine_normal(GM_ADDR recvX, GM_ADDR tokenSrcInfo,
                                                             GM_ADDR epRecvCount, GM_ADDR expertIds,
                                                             GM_ADDR topkWeights, GM_ADDR xOut,
                                                             GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(CombineNormalTiling, t, tiling);
    CombineNormal op;
    op.Init(recvX, tokenSrcInfo, epRecvCount, expertIds, topkWeights, xOut, t);
    op.Process();
}

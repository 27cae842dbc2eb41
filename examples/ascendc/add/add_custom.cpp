/*
 * add_custom.cpp - z = x + y in Ascend C, as the chip runs it: each core
 * takes its share of the elements and streams it through UB in tiles,
 * double buffered: CopyIn (GM -> UB on MTE2) of tile i + 1 overlaps
 * Compute (Add on V) of tile i and CopyOut (UB -> GM on MTE3) of tile i - 1,
 * the queues' flags ordering the three pipes. Nothing here is npurr's:
 * the same source builds for the chip with CANN.
 */
#include "kernel_operator.h"

#include "add_tiling.h"

using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;   // double buffering

class KernelAdd {
  public:
    __aicore__ inline KernelAdd() {}
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, const AddTiling &t) {
        blockLength_ = t.totalLength / GetBlockNum();
        tileLength_ = t.tileLength;
        tileNum_ = blockLength_ / tileLength_;
        xGm_.SetGlobalBuffer((__gm__ float *)x + blockLength_ * GetBlockIdx(), blockLength_);
        yGm_.SetGlobalBuffer((__gm__ float *)y + blockLength_ * GetBlockIdx(), blockLength_);
        zGm_.SetGlobalBuffer((__gm__ float *)z + blockLength_ * GetBlockIdx(), blockLength_);
        pipe_.InitBuffer(inQueueX_, BUFFER_NUM, tileLength_ * sizeof(float));
        pipe_.InitBuffer(inQueueY_, BUFFER_NUM, tileLength_ * sizeof(float));
        pipe_.InitBuffer(outQueueZ_, BUFFER_NUM, tileLength_ * sizeof(float));
    }
    __aicore__ inline void Process() {
        for (uint32_t i = 0; i < tileNum_; i++) {
            CopyIn(i);
            Compute(i);
            CopyOut(i);
        }
    }

  private:
    __aicore__ inline void CopyIn(uint32_t progress) {
        LocalTensor<float> xLocal = inQueueX_.AllocTensor<float>();
        LocalTensor<float> yLocal = inQueueY_.AllocTensor<float>();
        DataCopy(xLocal, xGm_[progress * tileLength_], tileLength_);
        DataCopy(yLocal, yGm_[progress * tileLength_], tileLength_);
        inQueueX_.EnQue(xLocal);
        inQueueY_.EnQue(yLocal);
    }
    __aicore__ inline void Compute(uint32_t progress) {
        (void)progress;
        LocalTensor<float> xLocal = inQueueX_.DeQue<float>();
        LocalTensor<float> yLocal = inQueueY_.DeQue<float>();
        LocalTensor<float> zLocal = outQueueZ_.AllocTensor<float>();
        Add(zLocal, xLocal, yLocal, tileLength_);
        outQueueZ_.EnQue<float>(zLocal);
        inQueueX_.FreeTensor(xLocal);
        inQueueY_.FreeTensor(yLocal);
    }
    __aicore__ inline void CopyOut(uint32_t progress) {
        LocalTensor<float> zLocal = outQueueZ_.DeQue<float>();
        DataCopy(zGm_[progress * tileLength_], zLocal, tileLength_);
        outQueueZ_.FreeTensor(zLocal);
    }

    TPipe pipe_;
    TQue<QuePosition::VECIN, BUFFER_NUM> inQueueX_, inQueueY_;
    TQue<QuePosition::VECOUT, BUFFER_NUM> outQueueZ_;
    GlobalTensor<float> xGm_, yGm_, zGm_;
    uint32_t blockLength_ = 0, tileLength_ = 0, tileNum_ = 0;
};

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR tiling) {
    GET_TILING_DATA_WITH_STRUCT(AddTiling, t, tiling);
    KernelAdd op;
    op.Init(x, y, z, t);
    op.Process();
}

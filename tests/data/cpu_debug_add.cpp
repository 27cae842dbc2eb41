/*
 * cpu_debug_add.cpp - a CANN CPU Debug host program as CANN's samples write
 * one, with its kernel (z = x + y over blockDim cores, tiling key 1
 * doubling it): its include of tikicpulib.h replaced by
 * npurr/ascendc_cpu_debug.h, nothing else changed. Built as a plugin it is
 * `-k cpu-debug` (tests/e2e/ascendc.sh); test_ascendc_cpu_debug.cpp
 * includes it to run it in process. argv: blockDim, elements, and an
 * optional third word making main expect wrong sums (it returns 3).
 */
#include <cstdlib>

#include "kernel_operator.h"
#include "npurr/ascendc_cpu_debug.h"

using namespace AscendC;

extern "C" __global__ __aicore__ void add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t n) {
    TPipe pipe;
    TBuf<> bx, by;
    uint32_t per = n / GetBlockNum(), off = per * GetBlockIdx();
    pipe.InitBuffer(bx, per * sizeof(half));
    pipe.InitBuffer(by, per * sizeof(half));
    GlobalTensor<half> gx, gy, gz;
    gx.SetGlobalBuffer((__gm__ half *)x + off);
    gy.SetGlobalBuffer((__gm__ half *)y + off);
    gz.SetGlobalBuffer((__gm__ half *)z + off);
    LocalTensor<half> lx = bx.Get<half>(), ly = by.Get<half>();
    DataCopy(lx, gx, per);
    DataCopy(ly, gy, per);
    SetFlag<HardEvent::MTE2_V>(0);
    WaitFlag<HardEvent::MTE2_V>(0);
    Add(lx, lx, ly, per);
    if (TILING_KEY_IS(1)) Add(lx, lx, lx, per);
    SetFlag<HardEvent::V_MTE3>(0);
    WaitFlag<HardEvent::V_MTE3>(0);
    DataCopy(gz, lx, per);
}

int32_t main(int32_t argc, char *argv[]) {
    uint32_t blockDim = (uint32_t)std::atoi(argv[1]);
    uint32_t n = (uint32_t)std::atoi(argv[2]);
    bool wrong = argc > 3;
    size_t bytes = n * sizeof(half);
    half *x = (half *)AscendC::GmAlloc(bytes);
    half *y = (half *)AscendC::GmAlloc(bytes);
    half *z = (half *)AscendC::GmAlloc(bytes);
    for (uint32_t i = 0; i < n; i++) {
        x[i] = (float)(i % 64);
        y[i] = 0.5f;
    }
    AscendC::SetKernelMode(KernelMode::AIV_MODE);
    ICPU_SET_TILING_KEY(1);
    ICPU_RUN_KF(add_custom, blockDim, (uint8_t *)x, (uint8_t *)y, (uint8_t *)z, n);
    int bad = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((float)z[i] != 2.0f * ((float)(i % 64) + 0.5f) + (wrong ? 1.0f : 0.0f)) bad++;
    AscendC::GmFree(x);
    AscendC::GmFree(y);
    AscendC::GmFree(z);
    return bad ? 3 : 0;
}

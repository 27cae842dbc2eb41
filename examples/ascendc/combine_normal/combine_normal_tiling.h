/*
 * combine_normal_tiling.h - what the host tells the combine-normal kernel
 * (the same on every rank) and the layout of the HCCL in window: a 32 B
 * status per (token, slot) of the rank's own tokens, then each slot's row
 * at a 512 B aligned stride, as A2's CamMoeCombineNormal lays them out.
 */
#ifndef COMBINE_NORMAL_TILING_H
#define COMBINE_NORMAL_TILING_H

#include <cstdint>

constexpr uint32_t STATE_BYTES = 32;           // one slot's status
constexpr int32_t STATUS_BITS = 0x3F800000;    // eight float 1.0s: the row has landed
constexpr uint32_t SRC_INFO_ROWS = 2048;       // tokenSrcInfo rows a core loads at once
constexpr uint32_t META_BYTES = 4096;          // expert ids and weights a core loads at once

struct CombineNormalTiling {
    int32_t ranks;
    int32_t experts;
    int32_t tokens;        // per rank
    int32_t topk;
    int32_t hidden;        // bf16 elements a row
    uint32_t rowBytes;     // hidden * 2
    uint32_t windowStride; // rowBytes rounded up to 512
    uint64_t stateBytes;   // tokens * topk * STATE_BYTES: the data area starts here
};

#endif

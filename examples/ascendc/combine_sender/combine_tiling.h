/*
 * combine_tiling.h - what the host tells the combine-sender kernels (one
 * struct, the same on every rank) and the layout of the HCCL in window
 * both kernels share.
 *
 * The window of destination rank d holds, for every source rank p, the
 * control block of ring p -> d at p * CTRL_STRIDE (the tail, written by
 * the sender, at byte 0; the head, written by the receiver, at byte 64:
 * 128 B apart so no two writers share a cache line, seed 000 s4.1), then
 * the ring's bytes at ctrlBytes + p * ringStride.
 */
#ifndef COMBINE_TILING_H
#define COMBINE_TILING_H

#include <cstdint>

constexpr uint32_t CTRL_STRIDE = 128;
constexpr uint32_t CTRL_TAIL = 0;
constexpr uint32_t CTRL_HEAD = 64;
/* Seed 000 s5.3: read_temp in two 16 KB halves, the receiver's two 32 KB chunks. */
constexpr uint32_t READ_TEMP_BYTES = 16 * 1024;
constexpr uint32_t RECV_CHUNK_BYTES = 32 * 1024;
/* The combine's hidden tile and the metadata it loads at once. */
constexpr uint32_t HIDDEN_TILE = 8192;
constexpr uint32_t META_BYTES = 4096;

struct CombineTiling {
    int32_t ranks;
    int32_t localExperts;
    int32_t experts;
    int32_t tokens;         // per rank
    int32_t topk;
    int32_t hidden;         // bf16 elements a row
    uint32_t rowBytes;      // hidden * 2
    uint32_t stagingBytes;  // one staging buffer: the largest flush
    uint32_t tableBytes;    // one [L, R] int32 table, 32 B aligned
    uint32_t ctrlBytes;     // ranks * CTRL_STRIDE
    uint64_t ringBytes;     // a ring's capacity
    uint64_t ringStride;    // ringBytes rounded up to 512 B
};

#endif

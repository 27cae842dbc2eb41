/*
 * kernel_tiling/kernel_tiling.h - tiling of npurr's Ascend C headers: the
 * MC2 tiling structs an op's tiling data embeds, and the tiling macros of a
 * kernel's entry (REGISTER_TILING_DEFAULT, GET_TILING_DATA_WITH_STRUCT,
 * GET_TILING_DATA, TILING_KEY_IS).
 *
 * Tiling data is bytes the host wrote into GM (ascendc_host.h: tiling()); a
 * kernel copies it into a struct of its own on its stack, as on the chip.
 * The tiling key is the launch's (ascendc_host.h: launch's tiling_key).
 */
#ifndef NPURR_AC_KERNEL_TILING_H
#define NPURR_AC_KERNEL_TILING_H

#include <cstdint>
#include <cstring>

#include "../npurr_ac_base.h"

/* The MC2 communication tiling an op's tiling data starts with (its bytes
 * are the host's; npurr reads none of them). */
struct Mc2InitTiling {
    uint8_t reserved[64];
};
/* One collective's tiling (opaque to npurr). */
struct Mc2CcTiling {
    uint8_t reserved[280];
};

namespace AscendC {
/* The launch's tiling key: the second word of the core's storage. */
__aicore__ inline uint64_t &current_tiling_key() {
    return static_cast<uint64_t *>(::dev_core_storage())[1];
}
}  // namespace AscendC

/* Registers the op's tiling struct type (nothing to do on npurr). */
#define REGISTER_TILING_DEFAULT(type) static_assert(std::is_trivially_copyable<type>::value, \
                                                    "tiling data is copied as bytes")
/* `type var` filled from the tiling bytes at ptr (GM). */
#define GET_TILING_DATA_WITH_STRUCT(type, var, ptr) \
    type var;                                        \
    std::memcpy(&var, (const void *)(ptr), sizeof(type))
/* The same for the op's registered type, named by the op as TilingData. */
#define GET_TILING_DATA(var, ptr) GET_TILING_DATA_WITH_STRUCT(TilingData, var, ptr)
/* 1 when the launch's tiling key is key. */
#define TILING_KEY_IS(key) (AscendC::current_tiling_key() == (uint64_t)(key))

#endif

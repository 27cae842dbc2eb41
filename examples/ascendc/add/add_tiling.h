/* add_tiling.h - the Add operator's tiling, shared by kernel and host. */
#ifndef ADD_TILING_H
#define ADD_TILING_H

#include <cstdint>

struct AddTiling {
    uint32_t totalLength;   // float elements per rank
    uint32_t tileLength;    // elements a core moves through UB at a time
};

#endif

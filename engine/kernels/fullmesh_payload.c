/*
 * fullmesh_payload.c - contents of the tokens the fullmesh kernel moves, and
 * the emulated expert FFN.
 *
 * A token row carries a tag (token, source rank, round) followed by
 * pseudo-random bf16 values drawn from (seed, round, rank, token), so setup
 * fills x from here and the check regenerates any row without storing it:
 * a received row in the wrong place, or left over from another round, says
 * whose it is.
 *
 * The expert FFN is emulated as a per-expert scale from {0.5, 0.625, ...,
 * 2.0}: a bf16 value times such a scale is exact in f32, so VecAxpy then
 * VecCast on the device and the CPU reference round identically and the
 * expert outputs can be checked bit for bit through the combine.
 */
#include "fullmesh.h"

#include <string.h>

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void fm_fill_token(uint16_t *row, int hidden, uint64_t seed, int round, int rank, int token) {
    uint16_t tag[FM_TAG_ELEMS] = {
        float_to_bf16((float)(token & 0xff)), float_to_bf16((float)((token >> 8) & 0xff)),
        float_to_bf16((float)(rank & 0xff)), float_to_bf16((float)(round & 0xff)),
    };
    uint64_t x = mix64(seed ^ mix64(((uint64_t)(uint32_t)round << 48) ^
                                    ((uint64_t)(uint32_t)rank << 24) ^ (uint64_t)(uint32_t)token) ^
                       0x6a09e667f3bcc909ULL);
    for (int j = 0; j < hidden; j++) {
        if (j < FM_TAG_ELEMS) {
            row[j] = tag[j];
            continue;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545f4914f6cdd1dULL;
        row[j] = float_to_bf16((float)((double)(r >> 40) / 8388608.0 - 1.0)); /* [-1, 1) */
    }
}

int fm_decode_tag(const uint16_t *row, int hidden, int *round, int *rank, int *token) {
    if (hidden < FM_TAG_ELEMS) return 0;
    int b[FM_TAG_ELEMS];
    for (int j = 0; j < FM_TAG_ELEMS; j++) {
        float f = bf16_to_float(row[j]);
        if (!(f >= 0.0f && f <= 255.0f) || (float)(int)f != f) return 0;
        b[j] = (int)f;
    }
    *token = b[0] | (b[1] << 8);
    *rank = b[2];
    *round = b[3];
    return 1;
}

float fm_expert_scale(int expert) { return 0.5f + 0.125f * (float)(expert % 13); }

/* x of one rank and round as a generated input: row t is token t. */
typedef struct x_params {
    uint64_t seed, row_bytes;
    int hidden, round, rank;
} x_params;

static void x_row(const void *params, uint64_t row, uint8_t *out) {
    const x_params *xp = params;
    fm_fill_token((uint16_t *)(void *)out, xp->hidden, xp->seed, xp->round, xp->rank, (int)row);
    if (xp->row_bytes > (uint64_t)xp->hidden * 2)
        memset(out + (size_t)xp->hidden * 2, 0, xp->row_bytes - (uint64_t)xp->hidden * 2);
}

int fm_generate_x(engine *e, gm_t x, int tokens, uint64_t row_bytes, int hidden, uint64_t seed,
                  int round, int rank, char *err, size_t errlen) {
    x_params xp = {seed, row_bytes, hidden, round, rank};
    return engine_gm_generate(e, x, (uint64_t)tokens, row_bytes, x_row, &xp, sizeof xp, err,
                              errlen) == ENGINE_OK ? 0 : -1;
}

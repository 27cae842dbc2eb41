/*
 * fullmesh_payload.c - contents of the tokens the fullmesh kernel moves, and
 * the emulated expert FFN.
 *
 * A token row carries a tag (token, source rank, round) followed by
 * pseudo-random bf16 values drawn from (seed, round, rank, token), so setup
 * fills x from here and the check regenerates any row without storing it:
 * a received row in the wrong place, or left over from another round, says
 * whose it is. With --dtype int8 the row and its tag are built to survive
 * the dispatch's quantization exactly (fullmesh_quant.c).
 *
 * The expert FFN is emulated as a per-expert scale from {0.5, 0.625, ...,
 * 2.0}: a bf16 value times such a scale is exact in f32, so VecAxpy then
 * VecCast on the device and the CPU reference round identically and the
 * expert outputs can be checked bit for bit through the combine.
 */
#include "fullmesh.h"

#include "kit.h"

#include <string.h>

/* Tag fields: token id (2 bytes), source rank, round. */
static const int tag_widths[] = {2, 1, 1};

void fm_fill_token(uint16_t *row, int hidden, int dtype, uint64_t seed, int round, int rank,
                   int token) {
    uint64_t x = kit_mix64(seed ^ kit_mix64(((uint64_t)(uint32_t)round << 48) ^
                                            ((uint64_t)(uint32_t)rank << 24) ^
                                            (uint64_t)(uint32_t)token) ^
                           0x6a09e667f3bcc909ULL);
    int tag[] = {token, rank, round};
    if (dtype == FM_INT8) fm_fill_token_int8(row, hidden, tag, x);
    else kit_fill_tagged_bf16(row, hidden, tag, tag_widths, 3, x);
}

int fm_decode_tag(const uint16_t *row, int hidden, int *round, int *rank, int *token) {
    int v[3];
    if (!kit_tag_decode_bf16(row, hidden, tag_widths, 3, v)) return 0;
    *token = v[0];
    *rank = v[1];
    *round = v[2];
    return 1;
}

float fm_expert_scale(int expert) { return 0.5f + 0.125f * (float)(expert % 13); }

/* x of one rank and round as a generated input: row t is token t. */
typedef struct x_params {
    uint64_t seed, row_bytes;
    int hidden, dtype, round, rank;
} x_params;

static void x_row(const void *params, uint64_t row, uint8_t *out) {
    const x_params *xp = params;
    fm_fill_token((uint16_t *)(void *)out, xp->hidden, xp->dtype, xp->seed, xp->round, xp->rank,
                  (int)row);
    if (xp->row_bytes > (uint64_t)xp->hidden * 2)
        memset(out + (size_t)xp->hidden * 2, 0, xp->row_bytes - (uint64_t)xp->hidden * 2);
}

int fm_generate_x(engine *e, gm_t x, int tokens, uint64_t row_bytes, int hidden, int dtype,
                  uint64_t seed, int round, int rank, char *err, size_t errlen) {
    x_params xp = {seed, row_bytes, hidden, dtype, round, rank};
    return npurr_gm_generate(e, x, (uint64_t)tokens, row_bytes, x_row, &xp, sizeof xp, err,
                              errlen) == 0 ? 0 : -1;
}

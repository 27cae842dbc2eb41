/*
 * ll_payload.c - the token rows of the low-latency kernels and the CPU
 * side of their per-row INT8 quantization.
 *
 * bf16 rows are fullmesh's (fullmesh_payload.c, round 0): a tag (token,
 * rank) and pseudo-random values. INT8 rows are built for the A2
 * low-latency dispatch's one scale per row (ReduceMax over the whole row):
 * every element is m * 2^e with an integer |m| <= 127, e = 0 in the first
 * 32 elements, which hold the tag as 7-bit digits followed by 127, and e
 * in -12..0 in every later block of 32. The row's absmax is then exactly
 * 127, its scale 1, and the received int8 values of the first block are
 * the tag's digits: a misplaced row says whose it is. The other blocks
 * round (rint of m * 2^e), the same on the device and here.
 */
#include "ll.h"

#include <math.h>
#include <string.h>

#define LL_BLOCK 32
/* Tag digits: token (3 x 7 bits), rank (1); then the +-127 peak. */
#define LL_TAG_DIGITS 4

static uint64_t row_state(uint64_t seed, int rank, int token) {
    return kit_mix64(seed ^ kit_mix64(((uint64_t)(uint32_t)rank << 24) ^ (uint64_t)(uint32_t)token) ^
                     0x3c6ef372fe94f82bULL);
}

static void fill_int8_row(uint16_t *row, int hidden, int rank, int token, uint64_t x) {
    int d[LL_TAG_DIGITS] = {token & 127, (token >> 7) & 127, (token >> 14) & 127, rank & 127};
    for (int b0 = 0; b0 < hidden; b0 += LL_BLOCK) {
        uint64_t r = kit_xorshift64s(&x);
        int e = b0 == 0 ? 0 : -(int)(r % 13);   /* 2^-12 .. 2^0: never above the peak */
        for (int i = 0; i < LL_BLOCK && b0 + i < hidden; i++) {
            int m;
            if (b0 == 0 && i < LL_TAG_DIGITS) m = d[i];
            else if (b0 == 0 && i == LL_TAG_DIGITS) m = (r >> 16) & 1 ? 127 : -127;
            else m = (int)(kit_xorshift64s(&x) % 255) - 127;
            row[b0 + i] = float_to_bf16(ldexpf((float)m, e));
        }
    }
}

void ll_fill_token(uint16_t *row, int hidden, int dtype, uint64_t seed, int rank, int token) {
    if (dtype == LL_INT8) fill_int8_row(row, hidden, rank, token, row_state(seed, rank, token));
    else fm_fill_token(row, hidden, FM_BF16, seed, 0, rank, token);
}

void ll_quantize_ref(const uint16_t *row, int hidden, int8_t *q, float *scale) {
    float amax = 0.0f;
    for (int i = 0; i < hidden; i++) {
        float a = fabsf(bf16_to_float(row[i]));
        if (!(a <= amax)) amax = a;
    }
    float inv = 127.0f / amax;
    *scale = amax == 0.0f ? 0.0f : 1.0f / inv;
    for (int i = 0; i < hidden; i++) {
        float v = amax == 0.0f ? 0.0f : rintf(bf16_to_float(row[i]) * inv);
        q[i] = (int8_t)(v > 127.0f ? 127.0f : v < -127.0f ? -127.0f : v);
    }
}

typedef struct x_params {
    uint64_t seed;
    int hidden, dtype, rank;
} x_params;

static void x_row(const void *params, uint64_t row, uint8_t *out) {
    const x_params *xp = params;
    ll_fill_token((uint16_t *)(void *)out, xp->hidden, xp->dtype, xp->seed, xp->rank, (int)row);
}

int ll_generate_x(engine *e, gm_t x, const ll_shape *sh, int rank, char *err, size_t errlen) {
    x_params xp = {sh->data_seed, sh->hidden, sh->dtype, rank};
    return npurr_gm_generate(e, x, (uint64_t)sh->tokens, sh->row_bytes, x_row, &xp, sizeof xp,
                              err, errlen) == 0 ? 0 : -1;
}

/*
 * combine_payload.c - contents of the expert output rows the combine moves.
 *
 * Every row carries a tag (which token, which top-k slot, which expert rank)
 * followed by pseudo-random bf16 values drawn from (seed, s, t, k), so the
 * host can regenerate any row without storing it: setup fills x from here,
 * the check compares the receive buffers with it byte for byte and the CPU
 * reference of the weighted sum reads it. The tag elements are small integers
 * (exact in bf16), so they are ordinary finite numbers for the combine too.
 */
#include "combine.h"

static uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void combine_fill_row(uint16_t *row, int hidden, uint64_t seed, int s, int t, int k, int p) {
    uint16_t tag[COMBINE_TAG_ELEMS] = {
        float_to_bf16((float)(t & 0xff)), float_to_bf16((float)((t >> 8) & 0xff)),
        float_to_bf16((float)((t >> 16) & 0xff)), float_to_bf16((float)(k & 0xff)),
        float_to_bf16((float)(p & 0xff)),
    };
    uint64_t x = mix64(seed ^ mix64(((uint64_t)(uint32_t)s << 48) ^ ((uint64_t)(uint32_t)t << 12) ^
                                    (uint64_t)(uint32_t)k) ^ 0x243f6a8885a308d3ULL);
    for (int j = 0; j < hidden; j++) {
        if (j < COMBINE_TAG_ELEMS) {
            row[j] = tag[j];
            continue;
        }
        /* xorshift64*: cheap per element, distinct per row through x */
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545f4914f6cdd1dULL;
        float v = (float)((double)(r >> 40) / 8388608.0 - 1.0); /* [-1, 1) */
        row[j] = float_to_bf16(v);
    }
}

int combine_decode_tag(const uint16_t *row, int hidden, int *t, int *k, int *p) {
    if (hidden < COMBINE_TAG_ELEMS) return 0;
    int b[COMBINE_TAG_ELEMS];
    for (int j = 0; j < COMBINE_TAG_ELEMS; j++) {
        float f = bf16_to_float(row[j]);
        if (!(f >= 0.0f && f <= 255.0f) || (float)(int)f != f) return 0;
        b[j] = (int)f;
    }
    *t = b[0] | (b[1] << 8) | (b[2] << 16);
    *k = b[3];
    *p = b[4];
    return 1;
}

/* One row of x as a generated input: its (s, t, k, p) are the row's origin. */
typedef struct row_params {
    uint64_t seed;
    int hidden, s, t, k, p;
} row_params;

static void x_row(const void *params, uint64_t row, uint8_t *out) {
    const row_params *rp = params;
    (void)row;
    combine_fill_row((uint16_t *)(void *)out, rp->hidden, rp->seed, rp->s, rp->t, rp->k, rp->p);
}

int combine_generate_row(engine *e, gm_t at, const combine_shape *sh, int s, int t, int k, int p,
                         char *err, size_t errlen) {
    row_params rp = {sh->data_seed, sh->hidden, s, t, k, p};
    return engine_gm_generate(e, at, 1, sh->row_bytes, x_row, &rp, sizeof rp, err, errlen) ==
                   ENGINE_OK ? 0 : -1;
}

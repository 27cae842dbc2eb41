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

#include "kit.h"

/* Tag fields: token id (3 bytes), top-k slot, the expert's rank. */
static const int tag_widths[] = {3, 1, 1};

void combine_fill_row(uint16_t *row, int hidden, uint64_t seed, int s, int t, int k, int p) {
    uint64_t x = kit_mix64(seed ^ kit_mix64(((uint64_t)(uint32_t)s << 48) ^
                                            ((uint64_t)(uint32_t)t << 12) ^ (uint64_t)(uint32_t)k) ^
                           0x243f6a8885a308d3ULL);
    int tag[] = {t, k, p};
    kit_fill_tagged_bf16(row, hidden, tag, tag_widths, 3, x);
}

int combine_decode_tag(const uint16_t *row, int hidden, int *t, int *k, int *p) {
    int v[3];
    if (!kit_tag_decode_bf16(row, hidden, tag_widths, 3, v)) return 0;
    *t = v[0];
    *k = v[1];
    *p = v[2];
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
    return npurr_gm_generate(e, at, 1, sh->row_bytes, x_row, &rp, sizeof rp, err, errlen) ==
                   0 ? 0 : -1;
}

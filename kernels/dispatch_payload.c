/*
 * dispatch_payload.c - what the rows of x hold, so that every received row
 * can be traced back to its source token.
 *
 * A row starts with a tag: the token id (three bytes) and the source rank
 * (two bytes), as small integers (exact bf16 values for bf16, raw bytes
 * for fp8), then pseudo-random finite values from (data seed, rank, token).
 * The check compares received rows byte for byte with the source's x and
 * uses the tag only to say whose row landed in the wrong place.
 */
#include "dispatch.h"

#include "kit.h"

#include <math.h>
#include <string.h>

#define TAG_ELEMS 5
/* Tag fields: token id (3 bytes), source rank (2 bytes). */
static const int tag_widths[] = {3, 2};

static uint64_t row_state(uint64_t data_seed, int s, int t, uint64_t stream) {
    return kit_mix64(data_seed * 0x9e3779b97f4a7c15ULL ^
                     kit_mix64((uint64_t)s * 0xd1b54a32d192ed03ULL ^
                               (uint64_t)t * 0x8cb92ba72f3d8dd7ULL ^ stream));
}

/* What a row of x depends on: the generator's parameters. */
typedef struct x_params {
    uint64_t data_seed;
    int hidden, dtype, rank;
} x_params;

static void fill_row(uint8_t *row, const x_params *xp, int s, int t) {
    uint64_t st = row_state(xp->data_seed, s, t, 1), r = 0;
    int bits = 0, values[] = {t, s};
    uint8_t tag[TAG_ELEMS];
    kit_tag_bytes(values, tag_widths, 2, tag);
    for (int j = 0; j < xp->hidden; j++) {
        if (bits < 16) {
            r = kit_splitmix64(&st);
            bits = 64;
        }
        uint16_t v = (uint16_t)r;
        r >>= 16;
        bits -= 16;
        if (xp->dtype == DISPATCH_BF16) {
            /* sign, exponent of 0.5..4, random mantissa: finite and readable */
            uint16_t h = j < TAG_ELEMS ? float_to_bf16((float)tag[j])
                                       : (uint16_t)((v & 0x8000) | (0x3f00 + (v & 0x017f)));
            memcpy(row + (size_t)j * 2, &h, 2);
        } else {
            /* e4m3: bit 6 clear keeps the exponent below all-ones (no NaN) */
            row[j] = j < TAG_ELEMS ? tag[j] : (uint8_t)(v & 0xbf);
        }
    }
}

static void x_row(const void *params, uint64_t row, uint8_t *out) {
    const x_params *xp = params;
    fill_row(out, xp, xp->rank, (int)row);
}

int dispatch_generate_x(engine *e, gm_t x, const dispatch_shape *sh, int s, char *err,
                        size_t errlen) {
    x_params xp = {sh->data_seed, sh->hidden, sh->dtype, s};
    return npurr_gm_generate(e, x, (uint64_t)sh->tokens[s], sh->x_row_bytes, x_row, &xp,
                              sizeof xp, err, errlen) == 0 ? 0 : -1;
}

int dispatch_x_unchanged(engine *e, gm_t x, const dispatch_shape *sh, int s, int *token) {
    x_params xp = {sh->data_seed, sh->hidden, sh->dtype, s};
    uint64_t diff = 0;
    int eq = npurr_gm_equal_generated(e, x, (uint64_t)sh->tokens[s], sh->x_row_bytes, x_row, &xp,
                                       sizeof xp, &diff);
    if (eq == 0) *token = (int)(diff / sh->x_row_bytes);
    return eq;
}

void dispatch_fill_scales(float *scales, const dispatch_shape *sh, int s, int t) {
    uint64_t st = row_state(sh->data_seed, s, t, 2);
    for (int j = 0; j < sh->num_scales; j++) {
        scales[j] = ldexpf(1.0f, -(int)(kit_splitmix64(&st) % 16));
    }
}

int dispatch_decode_tag(const uint8_t *row, const dispatch_shape *sh, int *s, int *t) {
    if (sh->hidden < TAG_ELEMS) return 0;
    int v[2];
    if (sh->dtype == DISPATCH_BF16) {
        if (!kit_tag_decode_bf16(row, sh->hidden, tag_widths, 2, v)) return 0;
    } else {
        kit_tag_decode_bytes(row, tag_widths, 2, v);
    }
    *t = v[0];
    *s = v[1];
    return 1;
}

/*
 * fullmesh_quant.c - the INT8 rows of `--dtype int8` on the CPU: a token
 * payload that quantizes exactly, its tag, and the reference quantization
 * the check compares the device's rows with.
 *
 * The check stays exact because every 128-element block of a generated row
 * is m_i * 2^e with integers |m_i| <= 127, one of them +-127: the block's
 * absmax is 127 * 2^e, so inv = 127 / absmax = 2^-e, x * inv is the integer
 * m_i and the scale 1 / inv is 2^e, with no rounding anywhere. Such values
 * are exact in bf16 (7 significant bits), so x itself stays a bf16 input.
 * Block 0 has e = 0 and holds the tag as 7-bit digits followed by 127: the
 * received int8 values are the digits themselves, so a misplaced row says
 * whose it is.
 */
#include "fullmesh.h"

#include <math.h>

/* Tag fields in 7-bit digits: token (up to 2^21), rank, round (< 128). */
static const int digit_widths[] = {3, 1, 1};

void fm_fill_token_int8(uint16_t *row, int hidden, const int *tag, uint64_t x) {
    int d[FM_I8_TAG_ELEMS], j = 0;
    for (int f = 0; f < 3; f++)
        for (int k = 0; k < digit_widths[f]; k++) d[j++] = (tag[f] >> (7 * k)) & 127;
    for (int b0 = 0; b0 + FM_QUANT_BLOCK <= hidden; b0 += FM_QUANT_BLOCK) {
        uint64_t r = kit_xorshift64s(&x);
        int e = b0 == 0 ? 0 : (int)(r % 16) - 12;   /* scales 2^-12 .. 2^3 */
        int peak = b0 == 0 ? FM_I8_TAG_ELEMS : (int)((r >> 8) % FM_QUANT_BLOCK);
        for (int i = 0; i < FM_QUANT_BLOCK; i++) {
            int m;
            if (b0 == 0 && i < FM_I8_TAG_ELEMS) m = d[i];
            else if (i == peak) m = (r >> 16) & 1 ? 127 : -127;
            else m = (int)(kit_xorshift64s(&x) % 255) - 127;
            row[b0 + i] = float_to_bf16(ldexpf((float)m, e));
        }
    }
}

int fm_decode_tag_int8(const int8_t *q, int hidden, int *round, int *rank, int *token) {
    if (hidden < FM_QUANT_BLOCK || (q[FM_I8_TAG_ELEMS] != 127 && q[FM_I8_TAG_ELEMS] != -127))
        return 0;
    int v[3] = {0, 0, 0}, j = 0;
    for (int f = 0; f < 3; f++)
        for (int k = 0; k < digit_widths[f]; k++, j++) {
            if (q[j] < 0) return 0;
            v[f] |= (int)q[j] << (7 * k);
        }
    *token = v[0];
    *rank = v[1];
    *round = v[2];
    return 1;
}

void fm_quantize_ref(const uint16_t *row, int hidden, int8_t *q, float *scales) {
    for (int b0 = 0; b0 + FM_QUANT_BLOCK <= hidden; b0 += FM_QUANT_BLOCK) {
        float amax = 0.0f;
        for (int i = b0; i < b0 + FM_QUANT_BLOCK; i++) amax = fmaxf(amax, fabsf(bf16_to_float(row[i])));
        float inv = 127.0f / amax;
        scales[b0 / FM_QUANT_BLOCK] = amax > 0.0f ? 1.0f / inv : 0.0f;
        for (int i = b0; i < b0 + FM_QUANT_BLOCK; i++) {
            float v = amax > 0.0f ? rintf(bf16_to_float(row[i]) * inv) : 0.0f;
            q[i] = (int8_t)fminf(127.0f, fmaxf(-127.0f, v));
        }
    }
}

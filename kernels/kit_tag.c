/*
 * kit_tag.c - payload tags (kit.h): the fields a generated row starts with.
 *
 * Every kernel that moves generated rows tags them (token id, top-k slot,
 * source rank, round, ...) so that a row found in the wrong place says
 * whose it is. A field is spread over one byte per element, so each element
 * is an integer 0..255: exact in bf16, and a raw fp8 byte.
 */
#include "kit.h"

#include <string.h>

#include "npurr/device.h"

int kit_tag_bytes(const int *values, const int *widths, int nfields, uint8_t *elems) {
    int n = 0;
    for (int f = 0; f < nfields; f++)
        for (int b = 0; b < widths[f]; b++) elems[n++] = (uint8_t)((values[f] >> (8 * b)) & 0xff);
    return n;
}

static void join_fields(const int *elems, const int *widths, int nfields, int *values) {
    int n = 0;
    for (int f = 0; f < nfields; f++) {
        values[f] = 0;
        for (int b = 0; b < widths[f]; b++) values[f] |= elems[n++] << (8 * b);
    }
}

static int tag_elems(const int *widths, int nfields) {
    int n = 0;
    for (int f = 0; f < nfields; f++) n += widths[f];
    return n;
}

int kit_tag_decode_bf16(const void *row, int hidden, const int *widths, int nfields, int *values) {
    int n = tag_elems(widths, nfields);
    if (hidden < n || n > KIT_TAG_MAX_ELEMS) return 0;
    int elems[KIT_TAG_MAX_ELEMS];
    for (int j = 0; j < n; j++) {
        uint16_t h;
        memcpy(&h, (const uint8_t *)row + (size_t)j * 2, 2);
        float f = bf16_to_float(h);
        if (!(f >= 0.0f && f <= 255.0f) || (float)(int)f != f) return 0;
        elems[j] = (int)f;
    }
    join_fields(elems, widths, nfields, values);
    return 1;
}

void kit_tag_decode_bytes(const uint8_t *row, const int *widths, int nfields, int *values) {
    int n = tag_elems(widths, nfields), elems[KIT_TAG_MAX_ELEMS];
    for (int j = 0; j < n && j < KIT_TAG_MAX_ELEMS; j++) elems[j] = row[j];
    join_fields(elems, widths, nfields, values);
}

void kit_fill_tagged_bf16(uint16_t *row, int hidden, const int *values, const int *widths,
                          int nfields, uint64_t x) {
    uint8_t tag[KIT_TAG_MAX_ELEMS];
    int ntag = kit_tag_bytes(values, widths, nfields, tag);
    for (int j = 0; j < hidden; j++) {
        if (j < ntag) {
            row[j] = float_to_bf16((float)tag[j]);
            continue;
        }
        uint64_t r = kit_xorshift64s(&x);   /* cheap per element, distinct per row through x */
        row[j] = float_to_bf16((float)((double)(r >> 40) / 8388608.0 - 1.0)); /* [-1, 1) */
    }
}

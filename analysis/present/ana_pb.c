/*
 * ana_pb.c - protobuf wire encoding into growable buffers (see ana_pb.h for
 * why it is written by hand).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/present/ana_pb.h"

enum { WIRE_VARINT = 0, WIRE_FIXED64 = 1, WIRE_LEN = 2 };

int pb_reserve(pb_buf *b, size_t more) {
    if (b->oom) return -1;
    if (b->n + more <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void pb_reset(pb_buf *b) {
    b->n = 0;
    b->oom = 0;
}

void pb_free(pb_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

static void pb_raw(pb_buf *b, const void *data, size_t len) {
    if (!len || pb_reserve(b, len)) return;
    memcpy(b->p + b->n, data, len);
    b->n += len;
}

static void tag(pb_buf *b, uint32_t field, int wire) {
    pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}

void pb_fixed64(pb_buf *b, uint32_t field, uint64_t v) {
    tag(b, field, WIRE_FIXED64);
    uint8_t le[8];
    for (int i = 0; i < 8; i++) le[i] = (uint8_t)(v >> (8 * i));
    pb_raw(b, le, 8);
}

void pb_double(pb_buf *b, uint32_t field, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    pb_fixed64(b, field, bits);
}

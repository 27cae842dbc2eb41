/*
 * ana_pb.h - the protobuf wire format, as much as the Perfetto export
 * writes: varints, fixed64, doubles, strings and nested messages, into
 * growable byte buffers; private to analysis/.
 *
 * Why by hand and not protobuf-c: the export writes six message types
 * (TracePacket, TrackDescriptor with its process/thread/counter parts,
 * TrackEvent with debug annotations, InternedData) and only ever encodes.
 * The whole encoder is these few functions; protobuf-c would add a code
 * generator to the build, generated sources for Perfetto's 400-odd message
 * types (or a trimmed copy of its schema), a runtime library and a message
 * object per event that is filled and then packed again. A nested message
 * is written into its own buffer first and appended with its length, so
 * every length is exact (no padded varints).
 */
#ifndef NPURR_ANA_PB_H
#define NPURR_ANA_PB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct pb_buf {
    uint8_t *p;
    size_t n, cap;
    int oom;          /* an append failed: the buffer is incomplete */
} pb_buf;

void pb_reset(pb_buf *b);
void pb_free(pb_buf *b);
/* Room for more bytes after b->n: 0, or -1 (b->oom set) out of memory. */
int pb_reserve(pb_buf *b, size_t more);

/* Varints are most of what the export writes (tens of millions of them),
 * so they are written in line while the buffer has room. */
static inline void pb_varint_at(pb_buf *b, uint64_t v) {
    while (v >= 0x80) {
        b->p[b->n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    b->p[b->n++] = (uint8_t)v;
}
static inline void pb_varint(pb_buf *b, uint64_t v) {
    if (b->cap - b->n < 10 && pb_reserve(b, 10)) return;
    pb_varint_at(b, v);
}
/* Fields: tag (field << 3 | wire type), then the value. Negative int64s
 * are written as protobuf does for int64: ten-byte two's complement. */
static inline void pb_uint(pb_buf *b, uint32_t field, uint64_t v) {
    if (b->cap - b->n < 20 && pb_reserve(b, 20)) return;
    pb_varint_at(b, (uint64_t)field << 3);   /* wire type 0: varint */
    pb_varint_at(b, v);
}
static inline void pb_int(pb_buf *b, uint32_t field, int64_t v) { pb_uint(b, field, (uint64_t)v); }
void pb_fixed64(pb_buf *b, uint32_t field, uint64_t v);
void pb_double(pb_buf *b, uint32_t field, double v);
/* A length-delimited field (wire type 2): tag, length, bytes. Every
 * packet is a few of these nested, so they are in line too. */
static inline void pb_bytes(pb_buf *b, uint32_t field, const void *data, size_t len) {
    if (b->cap - b->n < len + 20 && pb_reserve(b, len + 20)) return;
    pb_varint_at(b, (uint64_t)field << 3 | 2);
    pb_varint_at(b, len);
    if (len) memcpy(b->p + b->n, data, len);
    b->n += len;
}
static inline void pb_str(pb_buf *b, uint32_t field, const char *s) {
    pb_bytes(b, field, s ? s : "", s ? strlen(s) : 0);
}
/* A nested message: tag, length, then inner's bytes. */
static inline void pb_msg(pb_buf *b, uint32_t field, const pb_buf *inner) {
    if (inner->oom) b->oom = 1;
    pb_bytes(b, field, inner->p, inner->n);
}

#endif

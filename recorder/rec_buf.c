/*
 * rec_buf.c - growable byte buffers and LEB128 varints for the trace codec.
 *
 * Every encoder in the recorder appends to a rec_buf; every decoder reads
 * through a rec_cur that checks bounds, so a corrupt or truncated payload
 * becomes an error value instead of a read past the end. An append that
 * cannot grow the buffer sets a sticky oom flag checked once per frame,
 * which keeps the encoders free of per-byte error handling.
 *
 * rec_big_alloc gives the recorder's large arrays (a chunk's events, tens
 * of megabytes walked end to end several times per chunk) 2 MiB pages
 * where the kernel offers them on request (transparent huge pages in
 * madvise mode): with 4 KiB pages every 51st event costs a TLB miss and
 * the walk's prefetch stops at each page.
 */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "recorder/rec_internal.h"

void rec_buf_free(rec_buf *b) {
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

#define BIG_PAGE ((size_t)2 << 20)

static void big_advise(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
    uintptr_t from = ((uintptr_t)p + BIG_PAGE - 1) & ~(uintptr_t)(BIG_PAGE - 1);
    uintptr_t to = ((uintptr_t)p + bytes) & ~(uintptr_t)(BIG_PAGE - 1);
    if (p && to > from) (void)madvise((void *)from, to - from, MADV_HUGEPAGE);   /* a hint */
#else
    (void)p, (void)bytes;
#endif
}

void *rec_big_alloc(size_t bytes) {
    if (bytes < BIG_PAGE) return malloc(bytes ? bytes : 1);
    size_t size = (bytes + BIG_PAGE - 1) & ~(BIG_PAGE - 1);
    void *p = aligned_alloc(BIG_PAGE, size);
    big_advise(p, size);
    return p;
}

int rec_grow(void **arr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap : 4096;
    while (c < need) c *= 2;
    void *p = realloc(*arr, c * elem);
    if (!p) return -1;
    *arr = p;
    *cap = c;
    return 0;
}

int rec_grow_events(engine_event **evs, size_t *cap, size_t need) {
    void *p = *evs;
    int rc = rec_grow(&p, cap, need, sizeof **evs);
    *evs = p;
    return rc;
}

int rec_buf_reserve(rec_buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) { b->oom = 1; return -1; }
    b->p = p;
    b->cap = cap;
    return 0;
}

void rec_buf_put(rec_buf *b, const void *src, size_t n) {
    if (n == 0 || rec_buf_reserve(b, n)) return;
    memcpy(b->p + b->len, src, n);
    b->len += n;
}

void rec_buf_byte(rec_buf *b, uint8_t v) {
    if (rec_buf_reserve(b, 1)) return;
    b->p[b->len++] = v;
}

void rec_buf_varint(rec_buf *b, uint64_t v) {
    if (rec_buf_reserve(b, 10)) return;
    b->len += rec_varint_put(b->p + b->len, v);
}

void rec_buf_bytes(rec_buf *b, const char *s, size_t n) {
    rec_buf_varint(b, n);
    rec_buf_put(b, s, n);
}

uint64_t rec_cur_varint_slow(rec_cur *c) {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) { c->bad = 1; return 0; }
        uint8_t byte = *c->p++;
        v |= (uint64_t)(byte & 0x7f) << shift;
        if (!(byte & 0x80)) return v;
    }
    c->bad = 1;
    return 0;
}

const uint8_t *rec_cur_take(rec_cur *c, size_t n) {
    if ((size_t)(c->end - c->p) < n) { c->bad = 1; return NULL; }
    const uint8_t *p = c->p;
    c->p += n;
    return p;
}

const char *rec_cur_bytes(rec_cur *c, size_t *len) {
    uint64_t n = rec_cur_varint(c);
    if (c->bad || n > (uint64_t)(c->end - c->p)) { c->bad = 1; *len = 0; return ""; }
    *len = (size_t)n;
    return (const char *)rec_cur_take(c, (size_t)n);
}

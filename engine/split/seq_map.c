/*
 * seq_map.c - one process's local seq -> the run's seq, as a split run's
 * merge numbers it (merge.c; internal.h declares it).
 *
 * The merge gives a process's events the run's seqs in runs: its events
 * between two of another process's take consecutive numbers. A link may
 * name any earlier event, so the map must answer for the whole run, but
 * a flat array of every event's number took 4 bytes an event in every
 * process for every process (EP64: 456 MB each, faulted in page by page).
 * So the map keeps:
 *
 *  - the last SEQ_TAIL events' numbers in a ring: the renumbering of a
 *    window's own events and nearly every link (most name an event a few
 *    thousand back) read one word, inline (internal.h). 2^20 of them, 4 MB
 *    a map: at 2^16 one lookup in 200 of an EP32 split fell past the ring
 *    (a DONE naming an ISSUE that queued at its NIC), nearly all of those
 *    within 2^20, and each such lookup walks some 32 pairs;
 *  - every run, as varint pairs (its length, the other processes' events
 *    between it and the one before), SEQ_BLOCK runs to a block whose first
 *    run's local and run seqs are stored whole: an older event is a binary
 *    search over the blocks and a walk of at most SEQ_BLOCK pairs. Runs
 *    average about four events, so the pairs cost about half a byte an
 *    event.
 */
#include "engine/internal.h"

#include <stdlib.h>
#include <string.h>

#define SEQ_BLOCK 64

struct seq_block {
    uint64_t local, global;   /* the block's first run starts at these */
    size_t at;                /* its pairs start here in bytes */
};

/* The open run into the pairs: it can no longer grow. */
static void close_run(seq_map *s) {
    if (!s->open_len) return;
    if (s->runs % SEQ_BLOCK == 0) {
        struct seq_block b = {s->open_local, s->open_global, s->bytes.n};
        memcpy(eng_buf_room(&s->blocks, sizeof b), &b, sizeof b);
        s->blocks.n += sizeof b;
    }
    uint8_t *at = eng_buf_room(&s->bytes, 20);
    size_t n = eng_varint_put(at, s->open_len);
    s->bytes.n += n + eng_varint_put(at + n, s->open_gap);
    s->runs++;
    s->open_len = 0;
}

void seq_map_add(seq_map *s, uint64_t global, uint32_t n) {
    if (!n) return;
    if (!s->tail) {
        s->tail = malloc(SEQ_TAIL * sizeof *s->tail);
        if (!s->tail) abort();
    }
    for (uint32_t i = 0; i < n; i++)
        s->tail[(s->n + i) & (SEQ_TAIL - 1)] = (uint32_t)(global + i);
    if (s->open_len && global == s->open_global + s->open_len) {
        s->open_len += n;
    } else {
        uint64_t end = s->open_global + s->open_len;   /* 1 before the first run */
        close_run(s);
        s->open_local = s->n + 1;
        s->open_global = global;
        s->open_gap = s->n ? global - end : 0;
        s->open_len = n;
    }
    s->n += n;
}

/* Past the ring (seq_map_get has looked there). */
uint64_t seq_map_get_old(const seq_map *s, uint64_t local) {
    if (local >= s->open_local) return s->open_global + (local - s->open_local);
    const struct seq_block *blocks = (const struct seq_block *)(const void *)s->blocks.p;
    size_t lo = 0, hi = s->blocks.n / sizeof *blocks;   /* the last block starting at or before local */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (blocks[mid].local <= local) lo = mid;
        else hi = mid;
    }
    const struct seq_block *b = &blocks[lo];
    uint64_t at_local = b->local, at_global = b->global;
    size_t at = b->at;
    for (int first = 1;; first = 0) {
        uint64_t len = 0, gap = 0;   /* its own pairs: whole; most are one byte each */
        const uint8_t *p = s->bytes.p;
        if (s->bytes.n - at >= 2 && p[at] < 0x80 && p[at + 1] < 0x80) {
            len = p[at];
            gap = p[at + 1];
            at += 2;
        } else {
            eng_varint_get(p, s->bytes.n, &at, &len);
            eng_varint_get(p, s->bytes.n, &at, &gap);
        }
        if (!first) at_global += gap;
        if (local < at_local + len) return at_global + (local - at_local);
        at_local += len;
        at_global += len;
    }
}

void seq_map_free(seq_map *s) {
    free(s->tail);
    engine_buf_free(&s->bytes);
    engine_buf_free(&s->blocks);
    memset(s, 0, sizeof *s);
}

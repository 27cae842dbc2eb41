/*
 * digest.h - what an engine observer saw, folded into one 64-bit FNV-1a
 * hash and counts: two runs gave the same stream when their digests are
 * equal. test_engine_split compares a split run's digest with one
 * process's (declarations and scheduling segments included);
 * test_identity pins each kernel's event digest against a table.
 *
 * Header-only, static inline, like support.h. engine_event has no
 * implicit padding (its pad byte is zeroed by every emitter), so an event
 * is folded as its bytes.
 */
#ifndef NPURR_TESTS_DIGEST_H
#define NPURR_TESTS_DIGEST_H

#include <stdint.h>
#include <string.h>

#include "engine/engine.h"

#define DIGEST_FNV_OFFSET 0xCBF29CE484222325ULL

typedef struct digest {
    uint64_t h, events, segments, strings, sites;
} digest;

static inline void digest_init(digest *d) {
    memset(d, 0, sizeof *d);
    d->h = DIGEST_FNV_OFFSET;
}

static inline void digest_fold(digest *d, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) d->h = (d->h ^ b[i]) * 0x100000001B3ULL;
}

static inline void digest_on_string(void *ctx, uint32_t id, const char *text) {
    digest *d = ctx;
    d->strings++;
    digest_fold(d, "T", 1);
    digest_fold(d, &id, sizeof id);
    digest_fold(d, text, strlen(text));
}

static inline void digest_on_site(void *ctx, const engine_site *s) {
    digest *d = ctx;
    d->sites++;
    digest_fold(d, "I", 1);
    digest_fold(d, &s->id, sizeof s->id);
    digest_fold(d, &s->line, sizeof s->line);
    digest_fold(d, s->file, strlen(s->file));
    digest_fold(d, s->func, strlen(s->func));
}

static inline void digest_on_event(void *ctx, const engine_event *ev) {
    digest *d = ctx;
    d->events++;
    digest_fold(d, "E", 1);
    digest_fold(d, ev, sizeof *ev);
}

static inline void digest_on_segment(void *ctx, uint64_t time, uint64_t key) {
    digest *d = ctx;
    d->segments++;
    digest_fold(d, "S", 1);
    digest_fold(d, &time, sizeof time);
    digest_fold(d, &key, sizeof key);
}

/* Everything the observer shows: events, declarations and segments. */
static inline engine_observer digest_observer(digest *d) {
    digest_init(d);
    engine_observer o = {.ctx = d, .on_string = digest_on_string, .on_site = digest_on_site,
                         .on_event = digest_on_event, .on_segment = digest_on_segment};
    return o;
}

#endif

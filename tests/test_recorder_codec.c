/*
 * test_recorder_codec.c - the chunk codec alone (recorder/rec_chunk.c).
 *
 * The recorder's other tests feed it engine-like streams; this one feeds it
 * what the engine would never emit, so every branch of the format in
 * traces/FORMAT.md is exercised: random 64-bit fields, kinds past the
 * escape, DONEs that may or may not be copies (same chunk, earlier chunk,
 * fields that differ, a second DONE of one issue), decreasing times and
 * seqs. Every chunk must decode to exactly the events encoded, and damaged
 * chunks (cut short or with flipped bytes) must be refused or decoded
 * without reading out of bounds (ASan checks that part).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "recorder/rec_internal.h"

static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A stream that mixes realistic runs with hostile values. */
static void make_stream(engine_event *evs, size_t n) {
    memset(evs, 0, n * sizeof *evs);
    uint64_t seq = 1000, time = 5;
    for (size_t i = 0; i < n; i++) {
        engine_event *e = &evs[i];
        uint64_t r = rnd();
        seq += (r % 50 == 0) ? (uint64_t)-3 : (r % 7 == 0 ? 2 : 1);
        time += (r % 11 == 0) ? (uint64_t)-1000 : r % 5000;
        e->seq = seq;
        e->time = time;
        e->rank = (uint32_t)(r >> 8) % 40;
        e->core = (uint32_t)(r >> 16) % 200;
        e->pipe = (uint8_t)((r >> 24) % 10);
        e->site = (uint32_t)((r >> 28) % 9000);
        switch ((r >> 40) % 8) {
        case 0: e->kind = (uint8_t)(60 + (r >> 48) % 196); break; /* escaped kinds */
        case 1: case 2: e->kind = EV_XFER_ISSUE; break;
        case 3: case 4: e->kind = EV_XFER_DONE; break;
        case 5: e->kind = EV_FLAG_SET; break;
        default: e->kind = (uint8_t)(1 + (r >> 48) % (EV_KIND_COUNT - 1)); break;
        }
        e->sub = (uint8_t)(r >> 52);
        e->addr = rnd();
        e->len = r % 3 ? 4096 : rnd();
        e->value = (int64_t)rnd();
        e->aux = r % 5 ? (int64_t)(time + 40) : (int64_t)rnd();
        e->link = r % 4 ? 0 : rnd();
        e->object = (uint32_t)rnd();
        e->peer = (uint32_t)rnd();
        if (e->kind == EV_XFER_DONE && i > 0) {
            /* Usually the DONE of a recent issue (copyable), sometimes with
             * a differing field or twice the same issue (not copyable). */
            size_t back = 1 + rnd() % (i < 64 ? i : 64);
            const engine_event *src = &evs[i - back];
            if (src->kind == EV_XFER_ISSUE) {
                uint64_t s = e->seq, t = e->time;
                *e = *src;
                e->kind = EV_XFER_DONE;
                e->seq = s;
                e->time = t;
                e->link = src->seq;
                if (rnd() % 10 == 0) e->len++;
            }
        }
    }
}

static void roundtrip(const engine_event *evs, size_t n, const uint8_t *decls, size_t dl) {
    rec_codec *enc = calloc(1, sizeof *enc), *dec = calloc(1, sizeof *dec);
    rec_buf out = {0};
    rec_chunk_encode(enc, decls, dl, evs, n, &out);
    assert_false(out.oom);
    rec_chunk_view view;
    engine_event *got = NULL;
    size_t cap = 0;
    char err[256];
    int rc = rec_chunk_decode(dec, out.p, out.len, &view, &got, &cap, err, sizeof err);
    if (rc) fail_msg("decode: %s", err);
    assert_int_equal(view.n, n);
    assert_int_equal(view.decl_len, dl);
    if (dl) assert_memory_equal(view.decls, decls, dl);
    for (size_t i = 0; i < n; i++) {
        if (memcmp(&got[i], &evs[i], sizeof *got) != 0)
            fail_msg("event %zu (kind %u) differs after decoding", i, evs[i].kind);
    }
    free(got);
    rec_buf_free(&out);
    rec_codec_free(enc);
    rec_codec_free(dec);
}

static void test_random_streams_roundtrip(void **state) {
    (void)state;
    size_t sizes[] = {0, 1, 2, 17, 1000, REC_CHUNK_EVENTS};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        engine_event *evs = malloc((sizes[k] + 1) * sizeof *evs);
        make_stream(evs, sizes[k]);
        roundtrip(evs, sizes[k], NULL, 0);
        free(evs);
    }
}

static void test_copies_shrink_the_chunk(void **state) {
    (void)state;
    /* 1000 issue/done pairs: the DONEs must cost far less than the issues. */
    size_t n = 2000;
    engine_event *evs = calloc(n, sizeof *evs);
    for (size_t i = 0; i < n; i += 2) {
        engine_event *is = &evs[i], *dn = &evs[i + 1];
        is->seq = i + 1;
        is->time = 1000 * i;
        is->kind = EV_XFER_ISSUE;
        is->pipe = PIPE_MTE2;
        is->sub = XFER_MTE2;
        is->rank = (uint32_t)(i % 16);
        is->core = (uint32_t)(i % 48);
        is->addr = rnd();
        is->aux = (int64_t)rnd();
        is->len = rnd() % 100000;
        is->value = (int64_t)is->time + 7;
        *dn = *is;
        dn->seq = i + 2;
        dn->time = is->time + 500;
        dn->kind = EV_XFER_DONE;
        dn->link = is->seq;
    }
    roundtrip(evs, n, NULL, 0);
    rec_codec *enc = calloc(1, sizeof *enc);
    rec_buf copied = {0}, full = {0};
    rec_chunk_encode(enc, NULL, 0, evs, n, &copied);
    /* The same stream with every DONE differing from its issue in one
     * field must be stored in full: the copies save most of a DONE. */
    for (size_t i = 1; i < n; i += 2) evs[i].object = 1;
    roundtrip(evs, n, NULL, 0);
    rec_chunk_encode(enc, NULL, 0, evs, n, &full);
    assert_true(copied.len * 10 < full.len * 7);
    rec_buf_free(&copied);
    rec_buf_free(&full);
    rec_codec_free(enc);
    free(evs);
}

static void test_declarations_roundtrip(void **state) {
    (void)state;
    rec_buf d = {0};
    rec_decl_string(&d, 7, "RDMASender");
    engine_site site = {9, "kernel.c", -3, "send"};
    rec_decl_site(&d, &site);
    engine_object o = {.id = 4, .kind = OBJ_RING, .name = 7, .rank = -1, .addr = {123456789},
                       .width = 8, .size = 1ull << 40, .ring = 0, .head = 5, .tail = 6,
                       .producer_rank = -1, .consumer_rank = 63, .role = 2};
    rec_decl_object(&d, &o);
    engine_event ev = {.seq = 1, .kind = EV_RUN_END};
    roundtrip(&ev, 1, d.p, d.len);
    rec_buf_free(&d);
}

static void test_damaged_chunks_are_refused(void **state) {
    (void)state;
    size_t n = 3000;
    engine_event *evs = malloc(n * sizeof *evs);
    make_stream(evs, n);
    rec_codec *enc = calloc(1, sizeof *enc), *dec = calloc(1, sizeof *dec);
    rec_buf out = {0};
    rec_chunk_encode(enc, NULL, 0, evs, n, &out);
    engine_event *got = NULL;
    size_t cap = 0;
    char err[256];
    rec_chunk_view view;
    /* Cut short anywhere: always refused (columns no longer fit). */
    for (size_t cut = 0; cut < out.len; cut += 1 + out.len / 97) {
        uint8_t *copy = malloc(cut ? cut : 1);
        memcpy(copy, out.p, cut);
        assert_int_equal(rec_chunk_decode(dec, copy, cut, &view, &got, &cap, err, sizeof err),
                         -1);
        free(copy);
    }
    /* Flipped bytes: refused or decoded, never read out of bounds. */
    int refused = 0;
    for (int trial = 0; trial < 200; trial++) {
        uint8_t *copy = malloc(out.len);
        memcpy(copy, out.p, out.len);
        copy[rnd() % out.len] ^= (uint8_t)(1 + rnd() % 255);
        refused += rec_chunk_decode(dec, copy, out.len, &view, &got, &cap, err, sizeof err) != 0;
        free(copy);
    }
    assert_true(refused > 0);
    free(got);
    free(evs);
    rec_buf_free(&out);
    rec_codec_free(enc);
    rec_codec_free(dec);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_streams_roundtrip),
        cmocka_unit_test(test_copies_shrink_the_chunk),
        cmocka_unit_test(test_declarations_roundtrip),
        cmocka_unit_test(test_damaged_chunks_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

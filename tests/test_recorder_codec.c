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
#include <zstd.h>

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
        if (r % 997 == 0) e->rank = (uint32_t)rnd();   /* beyond the encoder's slots */
        if (r % 991 == 0) e->core = (uint32_t)rnd();
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
    /* the summary the encoder finds on its way is the one readers compute */
    rec_chunk_row want;
    rec_chunk_summarize(evs, n, &want);
    assert_memory_equal(&enc->summary, &want, sizeof want);
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

/* Format 5 derives each event's core by merging the cores on (time, rank,
 * core). Events in exactly that order need no exception; ties taken in
 * another order (as under jitter) and a core whose clock goes back must
 * still decode exactly, through exceptions. The encoder finds them without
 * the merge while times never go back (clock_back 0), with it otherwise. */
static void order_stream(engine_event *evs, size_t n, int ties_reversed, int clock_back) {
    memset(evs, 0, n * sizeof *evs);
    for (size_t i = 0; i < n; i++) {
        engine_event *e = &evs[i];
        size_t step = i / 12, slot = i % 12;
        e->seq = i + 1;
        e->kind = EV_FLAG_SET;
        e->site = 3;
        e->time = 1000 * (uint64_t)step;
        e->rank = (uint32_t)((ties_reversed ? 11 - slot : slot) / 4);
        e->core = (uint32_t)((ties_reversed ? 11 - slot : slot) % 4);
        if (clock_back && i == n / 2) e->time = 0;   /* a clock that goes back */
    }
}

static size_t encoded_bytes(const engine_event *evs, size_t n) {
    rec_codec *enc = calloc(1, sizeof *enc);
    rec_buf out = {0};
    rec_chunk_encode(enc, NULL, 0, evs, n, &out);
    size_t len = out.len;
    rec_buf_free(&out);
    rec_codec_free(enc);
    return len;
}

static void test_order_is_derived_with_exceptions(void **state) {
    (void)state;
    size_t n = 1200;
    engine_event *sorted = malloc(n * sizeof *sorted), *reversed = malloc(n * sizeof *reversed);
    engine_event *back = malloc(n * sizeof *back);
    order_stream(sorted, n, 0, 0);
    order_stream(reversed, n, 1, 0);
    order_stream(back, n, 1, 1);
    roundtrip(sorted, n, NULL, 0);
    roundtrip(reversed, n, NULL, 0);
    roundtrip(back, n, NULL, 0);
    /* exceptions cost bytes: the merged order alone is cheaper */
    assert_true(encoded_bytes(sorted, n) + 500 < encoded_bytes(reversed, n));
    free(sorted);
    free(reversed);
    free(back);
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

/* What a declaration sink saw, in order. */
typedef struct decl_log {
    uint32_t string_ids[8];
    char strings[8][16];
    int nstrings, nsites;
    engine_object objects[4];
    int nobjects;
} decl_log;
static void log_string(void *ctx, uint32_t id, const char *text, size_t len) {
    decl_log *l = ctx;
    assert_true(l->nstrings < 8 && len < 16);
    l->string_ids[l->nstrings] = id;
    memcpy(l->strings[l->nstrings], text, len);
    l->strings[l->nstrings++][len] = 0;
}
static void log_site(void *ctx, uint32_t id, int line, const char *file, size_t fl,
                     const char *func, size_t fnl) {
    decl_log *l = ctx;
    assert_int_equal(id, 9);
    assert_int_equal(line, -3);
    assert_true(fl == 8 && memcmp(file, "kernel.c", 8) == 0);
    assert_true(fnl == 4 && memcmp(func, "send", 4) == 0);
    l->nsites++;
}
static void log_object(void *ctx, const engine_object *o) {
    decl_log *l = ctx;
    assert_true(l->nobjects < 4);
    l->objects[l->nobjects++] = *o;
}
static void assert_object_equal(const engine_object *a, const engine_object *b) {
    assert_int_equal(a->id, b->id);
    assert_int_equal(a->kind, b->kind);
    assert_int_equal(a->name, b->name);
    assert_int_equal(a->rank, b->rank);
    assert_int_equal(a->addr.a, b->addr.a);
    assert_int_equal(a->width, b->width);
    assert_int_equal(a->size, b->size);
    assert_int_equal(a->ring, b->ring);
    assert_int_equal(a->head, b->head);
    assert_int_equal(a->tail, b->tail);
    assert_int_equal(a->producer_rank, b->producer_rank);
    assert_int_equal(a->consumer_rank, b->consumer_rank);
    assert_int_equal(a->role, b->role);
}

static void test_declarations_roundtrip(void **state) {
    (void)state;
    rec_buf d = {0};
    uint32_t prev_string = 0;
    /* 7 is stored with its id, 8 and 9 as "next", 3 with its id again. */
    rec_decl_string(&d, &prev_string, 7, "RDMASender");
    rec_decl_string(&d, &prev_string, 8, "");
    rec_decl_string(&d, &prev_string, 9, "hccs");
    rec_decl_string(&d, &prev_string, 3, "x");
    engine_site site = {9, "kernel.c", -3, "send"};
    rec_decl_site(&d, &site);
    engine_object o = {.id = 4, .kind = OBJ_RING, .name = 7, .rank = -1, .addr = {123456789},
                       .width = 8, .size = 1ull << 40, .ring = 0, .head = 5, .tail = 6,
                       .producer_rank = -1, .consumer_rank = 63, .role = 2};
    engine_object head = {.id = 5, .kind = OBJ_RING_HEAD, .name = 8, .rank = 3,
                          .addr = {1}, .width = 4, .size = 64, .ring = 4, .head = 0,
                          .tail = 0, .producer_rank = 2, .consumer_rank = 0, .role = 9};
    engine_object far = {.id = 4000000000u, .kind = OBJ_WORD, .name = 3, .rank = 0,
                         .addr = {~0ull}, .width = 8, .size = 0, .ring = 1, .head = 0,
                         .tail = 4000000001u, .producer_rank = -1, .consumer_rank = -1};
    rec_decl_object(&d, &o);
    engine_object prev = o;
    rec_decl_object_delta(&d, &prev, &head);
    rec_decl_object_delta(&d, &prev, &far);
    engine_event ev = {.seq = 1, .kind = EV_RUN_END};
    roundtrip(&ev, 1, d.p, d.len);

    decl_log log;
    memset(&log, 0, sizeof log);
    rec_decl_sink sink = {&log, log_string, log_site, log_object};
    assert_int_equal(rec_decl_decode(d.p, d.len, &sink), 0);
    assert_int_equal(log.nstrings, 4);
    uint32_t ids[] = {7, 8, 9, 3};
    const char *texts[] = {"RDMASender", "", "hccs", "x"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(log.string_ids[i], ids[i]);
        assert_string_equal(log.strings[i], texts[i]);
    }
    assert_int_equal(log.nsites, 1);
    assert_int_equal(log.nobjects, 3);
    assert_object_equal(&log.objects[0], &o);
    assert_object_equal(&log.objects[1], &head);
    assert_object_equal(&log.objects[2], &far);
    /* Cut short: refused. */
    memset(&log, 0, sizeof log);
    assert_int_equal(rec_decl_decode(d.p, d.len - 1, &sink), -1);
    rec_buf_free(&d);
}

static uint64_t get_varint(const uint8_t **p) {
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
}

/* chunk with the directory entry and bytes of its stream number k dropped
 * (the other streams keep theirs): a chunk whose events read a stream it
 * does not have. */
static void drop_stream(const rec_buf *chunk, size_t k, rec_buf *out) {
    const uint8_t *p = chunk->p + 4;
    uint64_t dl = get_varint(&p);
    p += dl;
    uint64_t n = get_varint(&p), ns = get_varint(&p);
    assert_true(k < ns);
    uint64_t id[4096], len[4096];
    assert_true(ns <= 4096);
    for (uint64_t i = 0; i < ns; i++) {
        id[i] = get_varint(&p);
        len[i] = get_varint(&p);
    }
    rec_buf_put(out, REC_TAG_CHUNK, 4);
    rec_buf_bytes(out, "", 0);
    assert_int_equal(dl, 0);
    rec_buf_varint(out, n);
    rec_buf_varint(out, ns - 1);
    for (uint64_t i = 0; i < ns; i++) {
        if (i == k) continue;
        rec_buf_varint(out, id[i]);
        rec_buf_varint(out, len[i]);
    }
    for (uint64_t i = 0; i < ns; i++) {
        if (i != k) rec_buf_put(out, p, (size_t)len[i]);
        p += len[i];
    }
}

/* A stream the chunk lacks is refused even by a decoder that read that
 * stream in the chunk before (its cursor must not outlive that chunk). */
static void test_missing_stream_is_refused(void **state) {
    (void)state;
    size_t n = 1000;
    engine_event *evs = malloc(n * sizeof *evs);
    make_stream(evs, n);
    rec_codec *enc = calloc(1, sizeof *enc), *dec = calloc(1, sizeof *dec);
    rec_buf whole = {0};
    rec_chunk_encode(enc, NULL, 0, evs, n, &whole);
    engine_event *got = NULL;
    size_t cap = 0;
    char err[256];
    rec_chunk_view view;
    size_t refused = 0, ns = enc->nstreams, kind = ns;
    for (size_t k = 0; k < ns; k++)
        if (enc->stream_id[k] == (uint32_t)REC_COL_KIND << REC_GROUP_BITS) kind = k;
    assert_true(kind < ns);
    /* The same chunk with its first event turned into a copy of a transfer
     * it does not hold: refused at once, every stream still unread. */
    rec_buf before = {0};
    rec_buf_put(&before, whole.p, whole.len);
    before.p[enc->stream_at[kind]] = REC_KIND_COPY | EV_XFER_DONE;
    for (size_t k = 0; k < ns; k++) {
        /* First the chunk refused at once, then one without stream k: that
         * stream's cursor must not still point into the first. */
        rec_buf cut = {0};
        drop_stream(&whole, k, &cut);
        assert_int_equal(rec_chunk_decode(dec, before.p, before.len, &view, &got, &cap, err,
                                          sizeof err),
                         -1);
        /* A missing value stream (time, addr, ... of one group) must be
         * named; without the others, decoding goes wrong earlier. */
        uint32_t id = enc->stream_id[k];
        int value_stream = (id >> REC_GROUP_BITS) == REC_COL_ADDR ||
                           (id >> REC_GROUP_BITS) == REC_COL_VALUE;
        if (rec_chunk_decode(dec, cut.p, cut.len, &view, &got, &cap, err, sizeof err) != 0) {
            refused++;
            if (value_stream && !strstr(err, "lacks stream"))
                fail_msg("stream %u dropped: %s", id, err);
        }
        rec_buf_free(&cut);
    }
    rec_buf_free(&before);
    /* Every stream is read by some event, so every cut chunk is refused. */
    assert_int_equal(refused, ns);
    free(got);
    free(evs);
    rec_buf_free(&whole);
    rec_codec_free(enc);
    rec_codec_free(dec);
}

/* One decoder over many chunks of different shapes: nothing of a chunk's
 * streams may leak into the next. */
static void test_one_decoder_many_chunks(void **state) {
    (void)state;
    size_t sizes[] = {1000, 3, 0, 2500, 1, 1000};
    rec_codec *enc = calloc(1, sizeof *enc), *dec = calloc(1, sizeof *dec);
    engine_event *got = NULL;
    size_t cap = 0;
    char err[256];
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        engine_event *evs = malloc((sizes[k] + 1) * sizeof *evs);
        make_stream(evs, sizes[k]);
        rec_buf out = {0};
        rec_chunk_encode(enc, NULL, 0, evs, sizes[k], &out);
        rec_chunk_view view;
        if (rec_chunk_decode(dec, out.p, out.len, &view, &got, &cap, err, sizeof err))
            fail_msg("chunk %zu: %s", k, err);
        assert_int_equal(view.n, sizes[k]);
        for (size_t i = 0; i < sizes[k]; i++)
            if (memcmp(&got[i], &evs[i], sizeof *got) != 0)
                fail_msg("chunk %zu event %zu differs after decoding", k, i);
        rec_buf_free(&out);
        free(evs);
    }
    free(got);
    rec_codec_free(enc);
    rec_codec_free(dec);
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
    /* The decoder that refused them still decodes the intact chunk. */
    if (rec_chunk_decode(dec, out.p, out.len, &view, &got, &cap, err, sizeof err))
        fail_msg("intact chunk after damaged ones: %s", err);
    assert_int_equal(view.n, n);
    assert_memory_equal(got, evs, n * sizeof *evs);
    free(got);
    free(evs);
    rec_buf_free(&out);
    rec_codec_free(enc);
    rec_codec_free(dec);
}

/* A split run's group (format 6): each process's events of one seq range
 * in a part frame of its own; decoded, the parts merge into the range's
 * events in seq order, their declarations in part order. A core's events
 * are all in one part, as a process runs whole nodes. */
static void group_stream(engine_event *evs, size_t n) {
    memset(evs, 0, n * sizeof *evs);
    for (size_t i = 0; i < n; i++) {
        engine_event *e = &evs[i];
        e->seq = 1001 + i;
        e->time = 100 * (uint64_t)(i / 5);
        e->rank = (uint32_t)(i % 7);
        e->core = (uint32_t)(i / 7 % 3);
        e->site = 1 + (uint32_t)(i % 11);
        e->kind = i % 2 ? EV_XFER_ISSUE : EV_FLAG_SET;
        e->addr = 4096 * (i % 13);
        e->len = 512;
        e->value = (int64_t)e->time + 50;
        /* the DONE of the same core's issue 21 events back (same rank and core) */
        if (i >= 21 && i % 2 == 0 && evs[i - 21].kind == EV_XFER_ISSUE) {
            *e = evs[i - 21];
            e->kind = EV_XFER_DONE;
            e->seq = 1001 + i;
            e->time = 100 * (uint64_t)(i / 5);
            e->link = evs[i - 21].seq;
        }
    }
}

/* Compresses the parts of evs (rank % parts) as consecutive frames into t. */
static void write_group(const engine_event *evs, size_t n, uint32_t parts, rec_buf *file) {
    rec_codec *enc = calloc(1, sizeof *enc);
    void *cctx = ZSTD_createCCtx();
    engine_event *mine = malloc(n * sizeof *mine);
    for (uint32_t k = 0; k < parts; k++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (evs[i].rank % parts == k) mine[m++] = evs[i];
        rec_part_head h = {evs[0].seq, evs[n - 1].seq, k, parts};
        uint8_t decl[2] = {'d', (uint8_t)k};
        rec_buf payload = {0}, frame = {0};
        rec_chunk_encode_part(enc, &h, decl, sizeof decl, mine, m, &payload);
        assert_int_equal(rec_frame_compress(cctx, &payload, &frame), 0);
        rec_buf_put(file, frame.p, frame.len);
        rec_buf_free(&payload);
        rec_buf_free(&frame);
    }
    free(mine);
    ZSTD_freeCCtx(cctx);
    rec_codec_free(enc);
}

/* Decodes the group at the start of file; 0 or -1 with err. */
static int read_group(rec_group *g, const rec_buf *file, uint64_t *used, char *err, size_t errlen) {
    rec_trace t = {file->p, file->len, -1};
    uint64_t first, more;
    rec_buf frame = {0};
    void *dctx = ZSTD_createDCtx();
    int rc = rec_trace_frame(&t, 0, &first) == 1 ? 0 : -1;
    if (!rc) rc = rec_frame_decompress(dctx, t.base, (size_t)first, &frame, err, errlen);
    if (!rc) rc = rec_group_decode(g, frame.p, frame.len, &t, first, &more, err, errlen);
    if (!rc) *used = first + more;
    rec_buf_free(&frame);
    ZSTD_freeDCtx(dctx);
    return rc;
}

static void test_group_of_parts_reads_as_one_chunk(void **state) {
    (void)state;
    size_t n = 5000;
    engine_event *evs = malloc(n * sizeof *evs);
    group_stream(evs, n);
    rec_group g;
    assert_int_equal(rec_group_init(&g), 0);
    char err[256];
    for (uint32_t parts = 1; parts <= 4; parts++) {
        rec_buf file = {0};
        write_group(evs, n, parts, &file);
        uint64_t used;
        if (read_group(&g, &file, &used, err, sizeof err)) fail_msg("%u parts: %s", parts, err);
        assert_int_equal(used, file.len);
        assert_int_equal(g.n, n);
        for (size_t i = 0; i < n; i++)
            if (memcmp(&g.evs[i], &evs[i], sizeof *evs) != 0)
                fail_msg("%u parts: event %zu differs after the merge", parts, i);
        assert_int_equal(g.decls.len, 2 * parts);
        for (uint32_t k = 0; k < parts; k++) assert_int_equal(g.decls.p[2 * k + 1], k);
        rec_buf_free(&file);
    }
    /* a group that lacks its last part, or whose parts are swapped, is refused */
    rec_buf file = {0};
    write_group(evs, n, 3, &file);
    rec_trace t = {file.p, file.len, -1};
    uint64_t f0, f1, f2, used;
    assert_int_equal(rec_trace_frame(&t, 0, &f0), 1);
    assert_int_equal(rec_trace_frame(&t, f0, &f1), 1);
    assert_int_equal(rec_trace_frame(&t, f0 + f1, &f2), 1);
    rec_buf cut = {0}, swapped = {0};
    rec_buf_put(&cut, file.p, f0 + f1);
    assert_int_equal(read_group(&g, &cut, &used, err, sizeof err), -1);
    assert_non_null(strstr(err, "ends before part 2"));
    rec_buf_put(&swapped, file.p, f0);
    rec_buf_put(&swapped, file.p + f0 + f1, f2);
    rec_buf_put(&swapped, file.p + f0, f1);
    assert_int_equal(read_group(&g, &swapped, &used, err, sizeof err), -1);
    assert_non_null(strstr(err, "out of place"));
    rec_buf_free(&file);
    rec_buf_free(&cut);
    rec_buf_free(&swapped);
    rec_group_free(&g);
    free(evs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_group_of_parts_reads_as_one_chunk),
        cmocka_unit_test(test_random_streams_roundtrip),
        cmocka_unit_test(test_copies_shrink_the_chunk),
        cmocka_unit_test(test_order_is_derived_with_exceptions),
        cmocka_unit_test(test_declarations_roundtrip),
        cmocka_unit_test(test_one_decoder_many_chunks),
        cmocka_unit_test(test_missing_stream_is_refused),
        cmocka_unit_test(test_damaged_chunks_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

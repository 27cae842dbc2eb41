/*
 * test_payload.c - the payload reference layer (engine/payload.c) against a
 * flat byte model: random copies (across and within segments, overlapping,
 * straddling 64 KiB blocks), literal writes, materializations, reads and
 * comparisons must give exactly the bytes a plain memory would hold, while
 * copies of generated rows stay references. Plus the public face: a
 * generated input in REF mode costs no literal bytes, engine_gm_equal tells
 * equal references from different ones, and FULL mode stores the bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine/internal.h"

static char err[ENGINE_ERRLEN];

static engine *make(engine_payload mode) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = 1;
    cfg.payload = mode;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    return e;
}

/* Row r of a test origin: bytes that depend on the row, the position and a salt. */
typedef struct { uint32_t salt; } gen_params;
static void gen_row(const void *params, uint64_t row, uint8_t *out) {
    const gen_params *g = params;
    for (int i = 0; i < 1000; i++) out[i] = (uint8_t)(row * 131 + (uint64_t)i * 7 + g->salt);
}

static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rnd(uint64_t n) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return n ? rng_state % n : 0;
}

#define SEG_BYTES (300u * 1000u)   /* a few 64 KiB blocks, not a multiple of them */
#define NSEG 3

typedef struct world {
    engine *e;
    gm_t at[NSEG];
    mseg *seg[NSEG];
    uint8_t *model[NSEG];
} world;

static void world_init(world *w, engine_payload mode) {
    w->e = make(mode);
    for (int i = 0; i < NSEG; i++) {
        assert_int_equal(engine_gm_alloc(w->e, 0, SEG_BYTES, "seg", &w->at[i], err, sizeof err),
                         ENGINE_OK);
        assert_non_null(eng_gm_at(w->e, w->at[i], SEG_BYTES, &w->seg[i]));
        w->model[i] = calloc(1, SEG_BYTES);
        assert_non_null(w->model[i]);
    }
    /* segment 0: 300 generated rows of 1000 B, the model holds their bytes */
    gen_params g = {5};
    assert_int_equal(engine_gm_generate(w->e, w->at[0], 300, 1000, gen_row, &g, sizeof g, err,
                                        sizeof err), ENGINE_OK);
    for (uint64_t r = 0; r < 300; r++) gen_row(&g, r, w->model[0] + r * 1000);
}

static void world_free(world *w) {
    for (int i = 0; i < NSEG; i++) free(w->model[i]);
    engine_destroy(w->e);
}

static void check_all(world *w) {
    uint8_t *buf = malloc(SEG_BYTES);
    assert_non_null(buf);
    for (int i = 0; i < NSEG; i++) {
        eng_seg_read(w->e, w->seg[i], 0, buf, SEG_BYTES);
        assert_memory_equal(buf, w->model[i], SEG_BYTES);
        uint64_t diff = 0;
        assert_int_equal(engine_gm_equal_host(w->e, w->at[i], w->model[i], SEG_BYTES, &diff), 1);
    }
    free(buf);
}

static void random_ops(world *w, int steps) {
    for (int step = 0; step < steps; step++) {
        int a = (int)rnd(NSEG), b = (int)rnd(NSEG);
        uint64_t len = 1 + rnd(rnd(4) ? 20000 : 140000);
        uint64_t ao = rnd(SEG_BYTES - len), bo = rnd(SEG_BYTES - len);
        switch (rnd(6)) {
        case 0: case 1: case 2:   /* copy b -> a (overlap allowed within one segment) */
            eng_seg_copy(w->e, w->seg[a], ao, w->seg[b], bo, len);
            memmove(w->model[a] + ao, w->model[b] + bo, len);
            break;
        case 3: {                 /* literal write */
            uint8_t *p = eng_seg_overwrite(w->seg[a], ao, len);
            for (uint64_t i = 0; i < len; i++) p[i] = w->model[a][ao + i] = (uint8_t)rnd(256);
            break;
        }
        case 4: {                 /* a computing read materializes in place */
            uint8_t *p = eng_seg_lit(w->e, w->seg[a], ao, len);
            assert_memory_equal(p, w->model[a] + ao, len);
            assert_int_equal(eng_seg_has_refs(w->seg[a], ao, len), 0);
            break;
        }
        default: {                /* comparison agrees with memcmp */
            uint64_t diff = 0;
            int eq = eng_seg_equal(w->e, w->seg[a], ao, w->seg[b], bo, len, &diff);
            int want = memcmp(w->model[a] + ao, w->model[b] + bo, len) == 0;
            assert_int_equal(eq, want);
            if (!eq) {
                uint64_t k = 0;
                while (w->model[a][ao + k] == w->model[b][bo + k]) k++;
                assert_int_equal(diff, k);
            }
        }
        }
        if (step % 97 == 0) check_all(w);
    }
    check_all(w);
}

static void test_random_ops_match_flat_memory(void **state) {
    (void)state;
    world w;
    world_init(&w, PAYLOAD_REF);
    random_ops(&w, 3000);
    world_free(&w);
}

static void test_full_mode_is_flat_memory(void **state) {
    (void)state;
    world w;
    world_init(&w, PAYLOAD_FULL);
    for (int i = 0; i < NSEG; i++) assert_int_equal(w.seg[i]->n_ext, 0);
    random_ops(&w, 500);
    for (int i = 0; i < NSEG; i++) assert_int_equal(w.seg[i]->n_ext, 0);
    world_free(&w);
}

/* Moving generated rows keeps them references: no literal byte is written,
 * and a copy compares equal to its source without generating it. */
static void test_moved_rows_stay_references(void **state) {
    (void)state;
    world w;
    world_init(&w, PAYLOAD_REF);
    assert_int_equal(w.seg[0]->literal_bytes, 0);
    eng_seg_copy(w.e, w.seg[1], 4096, w.seg[0], 0, 150000);
    eng_seg_copy(w.e, w.seg[2], 32, w.seg[1], 4096 + 1000, 99000);
    assert_int_equal(w.seg[1]->literal_bytes, 0);
    assert_int_equal(w.seg[2]->literal_bytes, 0);
    assert_int_equal(eng_seg_has_refs(w.seg[2], 32, 99000), 1);
    engine_memory m;
    engine_memory_get(w.e, &m);
    assert_int_equal(m.reference_bytes, 300000 + 150000 + 99000);
    assert_true(m.reference_extents <= 16);   /* contiguous rows merge into a few extents */
    assert_int_equal(m.logical_gm, 3 * SEG_BYTES);
    assert_int_equal(m.literal_bytes, 0);
    assert_int_equal(engine_gm_equal(w.e, gm_add(w.at[2], 32), gm_add(w.at[0], 1000), 99000, NULL), 1);
    /* one row moved one byte off is not equal, and the first bad byte is named */
    uint64_t diff = 99;
    assert_int_equal(engine_gm_equal(w.e, gm_add(w.at[2], 32), gm_add(w.at[0], 1001), 1000, &diff), 0);
    assert_int_equal(diff, 0);
    /* a literal byte written over a reference is seen by comparisons */
    uint8_t *p = engine_gm_host(w.e, gm_add(w.at[2], 532), 1);
    *p ^= 0xff;
    assert_int_equal(engine_gm_equal(w.e, gm_add(w.at[2], 32), gm_add(w.at[0], 1000), 1000, &diff), 0);
    assert_int_equal(diff, 500);
    world_free(&w);
}

/* engine_gm_equal_generated: a region is what its generator makes, moved
 * rows land where they belong, and a wrong row, a wrong generator input or
 * a literal byte are named by their first differing byte, in both modes. */
static void check_equal_generated(engine_payload mode) {
    engine *e = make(mode);
    gm_t a, b;
    gen_params g1 = {1}, g2 = {2};
    uint64_t diff = 0;
    assert_int_equal(engine_gm_alloc(e, 0, 20000, "a", &a, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, 20000, "b", &b, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_generate(e, a, 20, 1000, gen_row, &g1, sizeof g1, err, sizeof err),
                     ENGINE_OK);
    assert_int_equal(engine_gm_equal_generated(e, a, 20, 1000, gen_row, &g1, sizeof g1, &diff), 1);
    engine_memory m;
    engine_memory_get(e, &m);
    if (mode == PAYLOAD_REF) assert_int_equal(m.literal_bytes, 0);   /* nothing generated */
    assert_int_equal(engine_gm_equal_generated(e, a, 20, 1000, gen_row, &g2, sizeof g2, &diff), 0);
    assert_int_equal(diff, 0);
    /* rows 0-9 moved to b: b holds rows 0-9; row 3 moved over row 2 is wrong at byte 2000 */
    mseg *sa, *sb;
    uint8_t *ha = eng_gm_at(e, a, 20000, &sa), *hb = eng_gm_at(e, b, 20000, &sb);
    eng_seg_copy(e, sb, eng_seg_off(sb, hb), sa, eng_seg_off(sa, ha), 10000);
    assert_int_equal(engine_gm_equal_generated(e, b, 10, 1000, gen_row, &g1, sizeof g1, &diff), 1);
    eng_seg_copy(e, sb, eng_seg_off(sb, hb) + 2000, sa, eng_seg_off(sa, ha) + 3000, 1000);
    assert_int_equal(engine_gm_equal_generated(e, b, 10, 1000, gen_row, &g1, sizeof g1, &diff), 0);
    assert_int_equal(diff, 2000);
    /* a literal byte over a row */
    uint8_t *p = engine_gm_host(e, gm_add(a, 15007), 1);
    *p ^= 0xff;
    assert_int_equal(engine_gm_equal_generated(e, a, 20, 1000, gen_row, &g1, sizeof g1, &diff), 0);
    assert_int_equal(diff, 15007);
    assert_int_equal(engine_gm_equal_generated(e, a, 21, 1000, gen_row, &g1, sizeof g1, &diff), -1);
    engine_destroy(e);
}

static void test_equal_generated(void **state) {
    (void)state;
    check_equal_generated(PAYLOAD_REF);
    check_equal_generated(PAYLOAD_FULL);
}

static void test_generate_refuses_bad_ranges(void **state) {
    (void)state;
    engine *e = make(PAYLOAD_REF);
    gm_t at;
    gen_params g = {1};
    assert_int_equal(engine_gm_alloc(e, 0, 4000, "small", &at, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_generate(e, at, 5, 1000, gen_row, &g, sizeof g, err, sizeof err),
                     ENGINE_ERR);
    assert_non_null(strstr(err, "not inside one GM allocation"));
    assert_int_equal(engine_gm_generate(e, at, 0, 1000, gen_row, &g, sizeof g, err, sizeof err),
                     ENGINE_ERR);
    assert_int_equal(engine_gm_equal(e, at, gm_add(at, 3000), 2000, NULL), -1);
    uint8_t buf[8];
    assert_int_equal(engine_gm_read(e, gm_add(at, 3996), buf, 8), ENGINE_ERR);
    engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_ops_match_flat_memory),
        cmocka_unit_test(test_full_mode_is_flat_memory),
        cmocka_unit_test(test_moved_rows_stay_references),
        cmocka_unit_test(test_generate_refuses_bad_ranges),
        cmocka_unit_test(test_equal_generated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

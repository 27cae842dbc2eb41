/*
 * test_combine_routing.c - the pieces the combine kernels stand on that do
 * not need the engine: the routing generator (determinism, distinct experts,
 * weights, skew, spec errors), the dispatch metadata the plan derives from
 * it, the row payload tags, the kernel option accessors and the registry.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernels/combine.h"
#include "kernels/kernels.h"
#include "kernels/routing.h"
#include "kernels/kit.h"

static void gen(const char *spec, int experts, int topk, int tokens, int rank, uint64_t seed,
                int32_t *ids, float *w) {
    routing_spec sp;
    char err[256];
    assert_int_equal(routing_parse(spec, &sp, err, sizeof err), 0);
    routing_shape sh = {.num_ranks = 8, .nodes = 1, .npus_per_node = 8, .experts = experts,
                        .topk = topk};
    assert_int_equal(routing_generate(&sp, &sh, seed, rank, tokens, ids, w, err, sizeof err), 0);
}

static void test_uniform_is_deterministic_and_valid(void **s) {
    (void)s;
    enum { T = 500, K = 8, E = 64 };
    int32_t a[T * K], b[T * K], c[T * K];
    float wa[T * K], wb[T * K], wc[T * K];
    gen("uniform", E, K, T, 3, 7, a, wa);
    gen("uniform", E, K, T, 3, 7, b, wb);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_equal(wa, wb, sizeof wa);
    gen("uniform", E, K, T, 4, 7, c, wc);   /* another rank: other tokens */
    assert_memory_not_equal(a, c, sizeof a);
    gen("uniform", E, K, T, 3, 8, c, wc);   /* another seed */
    assert_memory_not_equal(a, c, sizeof a);
    int count[E] = {0};
    for (int t = 0; t < T; t++) {
        double sum = 0;
        for (int k = 0; k < K; k++) {
            int32_t e = a[t * K + k];
            assert_true(e >= 0 && e < E);
            for (int j = 0; j < k; j++) assert_int_not_equal(a[t * K + j], e);
            assert_true(wa[t * K + k] > 0.0f);
            sum += wa[t * K + k];
            count[e]++;
        }
        assert_true(sum > 0.999 && sum < 1.001);
    }
    /* uniform: every expert near T*K/E = 62.5 */
    for (int e = 0; e < E; e++) assert_true(count[e] > 30 && count[e] < 100);
}

static void test_zipf_skews_the_same_experts_on_every_rank(void **s) {
    (void)s;
    enum { T = 400, K = 4, E = 64 };
    int32_t ids[T * K];
    float w[T * K];
    int hot[2] = {-1, -1};
    for (int rank = 0; rank < 2; rank++) {
        int count[E] = {0}, max = 0;
        gen("zipf:1.5", E, K, T, rank, 11, ids, w);
        for (int i = 0; i < T * K; i++) count[ids[i]]++;
        for (int e = 0; e < E; e++)
            if (count[e] > max) {
                max = count[e];
                hot[rank] = e;
            }
        assert_true(max > 4 * (T * K / E));   /* far above the fair share of 25 */
    }
    assert_int_equal(hot[0], hot[1]);
    /* zipf:0 is uniform in law: no expert runs away */
    int count[E] = {0};
    gen("zipf:0", E, K, T, 0, 11, ids, w);
    for (int i = 0; i < T * K; i++) count[ids[i]]++;
    for (int e = 0; e < E; e++) assert_true(count[e] < 3 * (T * K / E));
}

static void test_topk_equals_experts(void **s) {
    (void)s;
    int32_t ids[3 * 5];
    float w[3 * 5];
    gen("zipf:3", 5, 5, 3, 0, 1, ids, w);
    for (int t = 0; t < 3; t++) {
        int seen = 0;
        for (int k = 0; k < 5; k++) seen |= 1 << ids[t * 5 + k];
        assert_int_equal(seen, 31);
    }
}

static void expect_parse_error(const char *spec, const char *needle) {
    routing_spec sp;
    char err[512] = "";
    assert_int_equal(routing_parse(spec, &sp, err, sizeof err), -1);
    if (!strstr(err, "--routing") || !strstr(err, needle))
        fail_msg("'%s': expected --routing and '%s' in: %s", spec, needle, err);
}

static void test_bad_specs_name_the_option(void **s) {
    (void)s;
    expect_parse_error("", "empty");
    expect_parse_error("gaussian", "gaussian");
    expect_parse_error("zipf", "zipf");
    expect_parse_error("zipf:", "zipf");
    expect_parse_error("zipf:-1", "zipf:-1");
    expect_parse_error("zipf:abc", "zipf:abc");
    expect_parse_error("zipf:1.2x", "zipf:1.2x");
    expect_parse_error("uniform:3", "uniform:3");
    routing_spec sp;
    char err[256];
    assert_int_equal(routing_parse("zipf:0.8", &sp, err, sizeof err), 0);
    assert_true(sp.param > 0.79 && sp.param < 0.81);
    routing_shape sh = {.num_ranks = 1, .nodes = 1, .npus_per_node = 1, .experts = 4, .topk = 5};
    int32_t ids[5];
    float w[5];
    assert_int_equal(routing_generate(&sp, &sh, 1, 0, 1, ids, w, err, sizeof err), -1);
    assert_non_null(strstr(err, "--topk 5"));
}

static void test_pick_topk_respects_ineligible_experts(void **s) {
    (void)s;
    double bias[6] = {0, -INFINITY, 0, -INFINITY, 0, -INFINITY}, keys[4];
    int32_t ids[4];
    kit_rng r;
    kit_rng_seed(&r, 5, 0, 0);
    for (int i = 0; i < 100; i++) {
        routing_pick_topk(&r, bias, 6, 4, ids, keys);
        for (int k = 0; k < 3; k++) assert_int_equal(ids[k] % 2, 0);
        assert_int_equal(ids[3], -1);   /* only three eligible */
        float w[4];
        routing_draw_weights(&r, ids, 4, w);
        assert_true(w[3] == 0.0f);
        assert_true(w[0] + w[1] + w[2] > 0.999f);
    }
}

/* ------------------------------------------------------------ plan */

static void test_plan_layout_is_consistent(void **s) {
    (void)s;
    combine_shape sh = {0};
    sh.scheme = COMBINE_SCHEME_GATHER;
    sh.num_ranks = 4;
    sh.tokens = 37;
    sh.hidden = 9;
    sh.row_bytes = 18;
    sh.topk = 3;
    sh.experts = 12;
    sh.local_experts = 3;
    sh.data_seed = 5;
    char err[256];
    assert_int_equal(routing_parse("zipf:1", &sh.routing, err, sizeof err), 0);
    combine_plan p;
    assert_int_equal(combine_plan_build(&sh, &p, err, sizeof err), 0);
    int R = 4, L = 3, T = 37, K = 3;
    /* x is expert-major, rank-minor, with no holes */
    for (int q = 0; q < R; q++) {
        int64_t next = 0;
        for (int le = 0; le < L; le++)
            for (int d = 0; d < R; d++) {
                assert_int_equal(p.offset_table[(q * L + le) * R + d], next);
                next += p.length_table[(q * L + le) * R + d];
            }
        assert_int_equal(p.x_rows[q], next);
    }
    /* every (token, slot) owns exactly one received row, at
     * expert_window_offset[e] + expand_idx */
    for (int d = 0; d < R; d++) {
        int64_t rows = p.recv_total[d];
        assert_int_equal(rows, (int64_t)T * K);   /* no drops in zipf */
        char *seen = calloc((size_t)rows, 1);
        for (int64_t row = 0; row < rows; row++) {
            int32_t owner = p.recv_owner[p.recv_owner_base[d] + row];
            assert_true(owner >= 0 && owner < T * K);
            assert_int_equal(seen[owner], 0);
            seen[owner] = 1;
            int32_t e = p.expert_ids[(size_t)d * T * K + (size_t)owner];
            assert_int_equal(p.expert_window_offset[d * 12 + e] +
                                 p.expand_idx[(size_t)d * T * K + (size_t)owner],
                             row);
        }
        free(seen);
    }
    combine_plan_free(&p);
}

static void test_row_tags_round_trip(void **s) {
    (void)s;
    uint16_t row[40], other[40];
    combine_fill_row(row, 40, 9, 2, 70000, 6, 5);
    int t, k, q;
    assert_int_equal(combine_decode_tag(row, 40, &t, &k, &q), 1);
    assert_int_equal(t, 70000);
    assert_int_equal(k, 6);
    assert_int_equal(q, 5);
    for (int j = 0; j < 40; j++) {
        float f = bf16_to_float(row[j]);
        assert_true(f == f);   /* no NaN anywhere */
        if (j >= COMBINE_TAG_ELEMS) assert_true(f >= -1.0f && f <= 1.0f);
    }
    combine_fill_row(other, 40, 9, 2, 70000, 7, 5);   /* another slot: other data */
    assert_memory_not_equal(row + COMBINE_TAG_ELEMS, other + COMBINE_TAG_ELEMS,
                            sizeof(uint16_t) * (40 - COMBINE_TAG_ELEMS));
    assert_int_equal(combine_decode_tag(row, 4, &t, &k, &q), 0);   /* too short for a tag */
    row[1] = float_to_bf16(0.5f);
    assert_int_equal(combine_decode_tag(row, 40, &t, &k, &q), 0);
}

/* ------------------------------------------------------------ options, registry */

static void test_kopt_accessors(void **s) {
    (void)s;
    kernel_opts o = {.count = 4,
                     .names = {"ring-bytes", "tokens", "ratio", "bad"},
                     .values = {"64k", "-3", "0.25", "12q"}};
    int64_t v;
    double f;
    const char *str;
    char err[256];
    assert_int_equal(kopt_i64(&o, "ring-bytes", &v, err, sizeof err), 0);
    assert_int_equal(v, 65536);
    assert_int_equal(kopt_i64(&o, "tokens", &v, err, sizeof err), 0);
    assert_int_equal(v, -3);
    assert_int_equal(kopt_f64(&o, "ratio", &f, err, sizeof err), 0);
    assert_true(f == 0.25);
    assert_int_equal(kopt_i64(&o, "bad", &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "--bad"));
    assert_non_null(strstr(err, "12q"));
    assert_int_equal(kopt_f64(&o, "bad", &f, err, sizeof err), -1);
    assert_int_equal(kopt_i64(&o, "missing", &v, err, sizeof err), -1);
    assert_non_null(strstr(err, "--missing"));
    assert_int_equal(kopt_str(&o, "tokens", &str), 0);
    assert_string_equal(str, "-3");
    assert_int_equal(kopt_str(&o, "missing", &str), -1);
}

static void test_registry_lists_both_combine_kernels(void **s) {
    (void)s;
    int n = 0, found = 0;
    for (const kernel_desc *const *k = kernels_all(); *k; k++) {
        n++;
        assert_non_null((*k)->setup);
        assert_non_null((*k)->check);
        found += strcmp((*k)->name, "combine-sender") == 0 ||
                 strcmp((*k)->name, "combine-sender-inplace") == 0;
    }
    assert_true(n >= 2);
    assert_int_equal(found, 2);
    assert_ptr_equal(kernels_find("combine-sender")->options, combine_options);
    assert_null(kernels_find("no-such-kernel"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_is_deterministic_and_valid),
        cmocka_unit_test(test_zipf_skews_the_same_experts_on_every_rank),
        cmocka_unit_test(test_topk_equals_experts),
        cmocka_unit_test(test_bad_specs_name_the_option),
        cmocka_unit_test(test_pick_topk_respects_ineligible_experts),
        cmocka_unit_test(test_plan_layout_is_consistent),
        cmocka_unit_test(test_row_tags_round_trip),
        cmocka_unit_test(test_kopt_accessors),
        cmocka_unit_test(test_registry_lists_both_combine_kernels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

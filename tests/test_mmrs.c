/*
 * test_mmrs.c - the matmul-reduce-scatter kernel (seed 004) through the
 * engine and its own check: 1, 2, 4 ranks with several rounds per stage,
 * edge tiles in M, N and K, 3 ranks with 3 stages, one stage, tiny shapes;
 * the no-stage-wait fault caught by the check with the overwritten stage
 * named; the check catching a wrong element and a write past D; bad options
 * refused with the option named; layout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "engine/engine.h"
#include "kernels/kernels.h"
#include "kernels/mmrs.h"
#include "tests/support.h"

typedef struct run {
    engine *e;
    mmrs_state *st;
    int setup_rc;
    engine_result res;
    int check_rc;
    char err[1024];
    char msg[2048];
} run;

static const kernel_desc *desc(void) { return support_kernel("matmul-reduce-scatter"); }

/* Options: the descriptor's defaults, then name/value overrides. */
static void make_opts(kernel_opts *o, const char *const *kv) {
    support_opts(desc(), o, kv);
}

static void start(run *r, int npus, const char *const *kv) {
    memset(r, 0, sizeof *r);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = npus;
    cfg.watchdog_ps = 0;
    assert_int_equal(engine_create(&cfg, &r->e, r->err, sizeof r->err), ENGINE_OK);
    kernel_opts o;
    make_opts(&o, kv);
    void *state = NULL;
    r->setup_rc = desc()->setup(r->e, &o, &state, r->err, sizeof r->err);
    r->st = state;
    if (r->setup_rc != 0) return;
    assert_int_equal(engine_run(r->e, &r->res, r->err, sizeof r->err), ENGINE_OK);
}

static void finish(run *r) {
    if (r->st) desc()->destroy(r->st);
    if (r->e) engine_destroy(r->e);
    r->st = NULL;
    r->e = NULL;
}

static int run_checked(run *r, int npus, const char *const *kv) {
    start(r, npus, kv);
    if (r->setup_rc != 0) fail_msg("setup failed: %s", r->err);
    if (r->res.outcome != OUTCOME_COMPLETED)
        fail_msg("outcome %s: %s", engine_outcome_name(r->res.outcome), r->res.message);
    r->check_rc = desc()->check(r->e, r->st, r->msg, sizeof r->msg);
    return r->check_rc;
}

static void expect_pass(int npus, const char *const *kv) {
    run r;
    if (run_checked(&r, npus, kv) != 0) {
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        fail_msg("check failed on %d ranks: %s", npus, m);
    }
    finish(&r);
}

/* ------------------------------------------------------------ shapes */

static void test_ranks_1_2_4_with_stage_reuse(void **s) {
    (void)s;
    const char *kv[] = {"m", "512", "n", "128", "k", "64", "block-m", "32", "block-n", "64", NULL};
    int npus[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        run r;
        assert_int_equal(run_checked(&r, npus[i], kv), 0);
        /* more rounds than stages: every stage is written, pulled and reused */
        assert_true(mmrs_comm_loops(&r.st->args) > 2 * r.st->args.stages);
        finish(&r);
    }
}

static void test_edge_tiles(void **s) {
    (void)s;
    /* M/R = 100 rows over 64-row tiles, N = 176 over 64-column tiles, K = 48
     * over 32-deep tiles: partial blocks in every dimension. */
    const char *kv[] = {"m", "200", "n", "176", "k", "48", "block-m", "64", "block-n", "64",
                        "block-k", "32", NULL};
    expect_pass(2, kv);
    /* 3 ranks, 3 stages, 3 cores, 32-row tiles over 67 rows per rank */
    const char *kv3[] = {"m", "201", "n", "80", "k", "64", "block-m", "32", "block-n", "32",
                         "block-k", "16", "stages", "3", "cores", "3", NULL};
    expect_pass(3, kv3);
    /* one stage: the AIC waits for the AIVs every round */
    const char *kv1[] = {"m", "128", "n", "64", "k", "32", "stages", "1", "cores", "1", NULL};
    expect_pass(4, kv1);
    /* one row per rank in a 16-row tile */
    const char *tiny[] = {"m", "2", "n", "16", "k", "16", "block-m", "16", "block-n", "16",
                          "block-k", "16", NULL};
    expect_pass(2, tiny);
}

static void test_deterministic(void **s) {
    (void)s;
    const char *kv[] = {"m", "96", "n", "64", "k", "32", "block-m", "16", "block-n", "32", NULL};
    run a, b;
    assert_int_equal(run_checked(&a, 2, kv), 0);
    uint64_t t = a.res.end_time, n = a.res.events;
    finish(&a);
    assert_int_equal(run_checked(&b, 2, kv), 0);
    assert_int_equal(b.res.end_time, t);
    assert_int_equal(b.res.events, n);
    finish(&b);
}

/* ------------------------------------------------------------ faults */

static void test_no_stage_wait_is_caught(void **s) {
    (void)s;
    /* 8 rounds over 2 stages: without waiting for flagAivFinishCompute the
     * AIC is rounds ahead and rewrites stages before the peers pull them. */
    const char *kv[] = {"m", "512", "n", "128", "k", "64", "block-m", "32", "block-n", "64",
                        "inject", "no-stage-wait", NULL};
    int npus[] = {2, 4};
    for (int i = 0; i < 2; i++) {
        run r;
        int rc = run_checked(&r, npus[i], kv);
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        assert_int_equal(rc, 1);
        if (!strstr(m, "the AIC overwrote stage")) fail_msg("message: %s", m);
    }
}

/* ------------------------------------------------------------ the check itself */

static void test_check_catches_corruption(void **s) {
    (void)s;
    const char *kv[] = {"m", "64", "n", "32", "k", "32", "block-m", "16", "block-n", "16", NULL};
    run r;
    assert_int_equal(run_checked(&r, 2, kv), 0);
    const mmrs_args *a = &r.st->args;
    /* rank 1's D[5][7] loses a bit of its mantissa's top */
    float *d = engine_gm_host(r.e, gm_add(a->d[1], (5 * 32 + 7) * 4), 4);
    assert_non_null(d);
    float saved = *d;
    *d = saved + 0.5f;
    assert_int_equal(mmrs_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 1 D[5][7]")) fail_msg("message: %s", r.msg);
    *d = saved;
    assert_int_equal(mmrs_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    /* a tile written one row too far: the byte after D */
    uint8_t *g = engine_gm_host(r.e, gm_add(a->d[0], 32 * 32 * 4), 1);
    assert_non_null(g);
    g[0] ^= 0xff;
    assert_int_equal(mmrs_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 0: byte 0 after D")) fail_msg("message: %s", r.msg);
    finish(&r);
}

/* ------------------------------------------------------------ bad input */

static void expect_setup_error(int nodes, int npus, const char *const *kv, const char *needle) {
    support_expect_setup_error(desc(), nodes, npus, kv, needle);
}

static void test_bad_options(void **s) {
    (void)s;
    expect_setup_error(2, 2, NULL, "--nodes must be 1");
    const char *m[] = {"m", "255", NULL};
    expect_setup_error(1, 2, m, "--m 255");
    const char *n[] = {"n", "100", NULL};
    expect_setup_error(1, 2, n, "--n 100");
    const char *l0a[] = {"block-m", "256", "block-k", "128", NULL};
    expect_setup_error(1, 2, l0a, "L0A");
    const char *l0c[] = {"block-m", "128", "block-n", "512", "block-k", "16", NULL};
    expect_setup_error(1, 2, l0c, "L0C");
    const char *stages[] = {"stages", "0", NULL};
    expect_setup_error(1, 2, stages, "--stages 0");
    const char *cores[] = {"cores", "25", NULL};
    expect_setup_error(1, 2, cores, "--cores 25");
    const char *inject[] = {"inject", "late-flag", NULL};
    expect_setup_error(1, 2, inject, "--inject late-flag");
}

static void test_layout(void **s) {
    (void)s;
    kernel_opts o;
    make_opts(&o, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[512];
    engine_config cfg = support_config(1, 4, PAYLOAD_REF);
    assert_int_equal(desc()->layout(&o, support_topo(&cfg), f, err, sizeof err), 0);
    fclose(f);
    assert_non_null(strstr(buf, "commLoops"));
    assert_non_null(strstr(buf, "\n3 "));
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_1_2_4_with_stage_reuse),
        cmocka_unit_test(test_edge_tiles),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_no_stage_wait_is_caught),
        cmocka_unit_test(test_check_catches_corruption),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

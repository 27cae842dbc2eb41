/*
 * test_combine.c - the combine-sender kernels run through the engine and
 * their own check, on the shapes where seed 000's corner cases bite: one
 * token, experts with no tokens for a rank, rows that are not 32 B multiples
 * with staging sizes that do not divide them, a ring that wraps many times,
 * 8 destination ranks with skewed routing, fewer sender cores than ranks;
 * both faults; and that the check does catch a corrupted row or guard.
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
#include "engine/kernels/combine.h"
#include "engine/kernels/kernels.h"
#include "tests/support.h"

typedef struct run {
    engine *e;
    combine_state *st;
    int setup_rc;
    engine_result res;
    int check_rc;
    char err[1024];
    char msg[2048];
} run;

/* Options: the descriptor's defaults, then name/value overrides. */

/* Sets up and runs; does not check (so a test can tamper first). */
static void start(run *r, const char *kernel, int npus, const char *const *kv) {
    memset(r, 0, sizeof *r);
    const kernel_desc *d = kernels_find(kernel);
    assert_non_null(d);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = npus;
    cfg.watchdog_ps = 0;
    assert_int_equal(engine_create(&cfg, &r->e, r->err, sizeof r->err), ENGINE_OK);
    kernel_opts o;
    support_opts(d, &o, kv);
    void *state = NULL;
    r->setup_rc = d->setup(r->e, &o, &state, r->err, sizeof r->err);
    r->st = state;
    if (r->setup_rc != 0) return;
    assert_int_equal(engine_run(r->e, &r->res, r->err, sizeof r->err), ENGINE_OK);
}

static void finish(run *r) {
    if (r->st) combine_destroy(r->st);
    if (r->e) engine_destroy(r->e);
    r->st = NULL;
    r->e = NULL;
}

/* The full path: run, expect completion, run the check. */
static int run_checked(run *r, const char *kernel, int npus, const char *const *kv) {
    start(r, kernel, npus, kv);
    if (r->setup_rc != 0) fail_msg("setup failed: %s", r->err);
    if (r->res.outcome != OUTCOME_COMPLETED)
        fail_msg("outcome %s: %s", engine_outcome_name(r->res.outcome), r->res.message);
    r->check_rc = kernels_find(kernel)->check(r->e, r->st, r->msg, sizeof r->msg);
    return r->check_rc;
}

static void expect_pass(const char *kernel, int npus, const char *const *kv) {
    run r;
    if (run_checked(&r, kernel, npus, kv) != 0) {
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        fail_msg("%s: check failed: %s", kernel, m);
    }
    finish(&r);
}

static const char *const kernels2[] = {"combine-sender", "combine-sender-inplace"};

/* ------------------------------------------------------------ shapes */

static void test_single_token(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "1", "hidden", "64", "topk", "2", "experts", "8", NULL};
    for (int k = 0; k < 2; k++) expect_pass(kernels2[k], 2, kv);
}

static void test_experts_without_tokens(void **s) {
    (void)s;
    /* 3 tokens x 2 slots over 64 experts: most (expert, rank) segments and
     * some whole (source, destination) streams are empty. */
    const char *kv[] = {"tokens", "3", "hidden", "48", "topk", "2", "experts", "64", NULL};
    run r;
    assert_int_equal(run_checked(&r, "combine-sender", 4, kv), 0);
    const combine_plan *p = &r.st->plan;
    int empty_segments = 0, empty_streams = 0;
    for (int i = 0; i < 4 * 16 * 4; i++) empty_segments += p->length_table[i] == 0;
    for (int i = 0; i < 4 * 4; i++) empty_streams += p->recv_rows[i] == 0;
    finish(&r);
    assert_true(empty_segments > 200);
    assert_true(empty_streams > 0);
    expect_pass("combine-sender-inplace", 4, kv);
}

static void test_rows_not_32b_multiples(void **s) {
    (void)s;
    /* 14 B, 200 B and 2000 B rows; staging sizes that divide none of them.
     * Each flush leaves a remainder to carry and segments start anywhere. */
    const char *hidden[] = {"7", "100", "1000"};
    const char *staging[] = {"64", "96", "4000"};
    for (int h = 0; h < 3; h++)
        for (int st = 0; st < 3; st++) {
            const char *kv[] = {"tokens", "24", "hidden", hidden[h], "topk", "3", "experts", "12",
                                "staging-bytes", staging[st], "ring-bytes", "8192", NULL};
            expect_pass("combine-sender", 3, kv);
        }
    const char *kv[] = {"tokens", "24", "hidden", "100", "topk", "3", "experts", "12",
                        "staging-bytes", "96", "ring-bytes", "1024", NULL};
    expect_pass("combine-sender-inplace", 3, kv);
}

static void test_ring_wraps_many_times(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "64", "hidden", "100", "topk", "4", "experts", "16",
                        "staging-bytes", "128", "ring-bytes", "256", NULL};
    for (int k = 0; k < 2; k++) {
        run r;
        assert_int_equal(run_checked(&r, kernels2[k], 4, kv), 0);
        /* every ring carried many times its capacity */
        int64_t min_rows = INT64_MAX;
        for (int i = 0; i < 16; i++)
            if (r.st->plan.recv_rows[i] < min_rows) min_rows = r.st->plan.recv_rows[i];
        finish(&r);
        assert_true(min_rows * 200 / 256 >= 20);
    }
}

static void test_eight_ranks_zipf(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "48", "hidden", "136", "topk", "8", "experts", "64",
                        "routing", "zipf:1.2", "staging-bytes", "2048", "ring-bytes", "4096",
                        NULL};
    for (int k = 0; k < 2; k++) {
        run r;
        assert_int_equal(run_checked(&r, kernels2[k], 8, kv), 0);
        /* skewed: the busiest expert gets several times its fair share */
        int64_t max = 0, sum = 0;
        for (int ex = 0; ex < 64; ex++) {
            int64_t rows = 0;
            for (int s = 0; s < 8; s++) rows += r.st->plan.length_table[ex * 8 + s];
            sum += rows;
            if (rows > max) max = rows;
        }
        finish(&r);
        assert_true(max * 64 > 4 * sum);
    }
}

static void test_fewer_sender_cores_than_ranks(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "16", "hidden", "72", "topk", "4", "experts", "32",
                        "sender-cores", "3", "staging-bytes", "512", "ring-bytes", "1024", NULL};
    for (int k = 0; k < 2; k++) expect_pass(kernels2[k], 8, kv);
}

static void test_deterministic(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "20", "hidden", "50", "topk", "3", "experts", "12",
                        "staging-bytes", "256", "ring-bytes", "512", NULL};
    run a, b;
    assert_int_equal(run_checked(&a, "combine-sender", 3, kv), 0);
    uint64_t t = a.res.end_time, n = a.res.events;
    finish(&a);
    assert_int_equal(run_checked(&b, "combine-sender", 3, kv), 0);
    assert_int_equal(b.res.end_time, t);
    assert_int_equal(b.res.events, n);
    finish(&b);
}

/* ------------------------------------------------------------ faults */

static void test_ring_smaller_than_flush_deadlocks(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "32", "hidden", "256", "topk", "2", "experts", "8",
                        "staging-bytes", "4096", "ring-bytes", "1024", NULL};
    for (int k = 0; k < 2; k++) {
        run r;
        start(&r, kernels2[k], 2, kv);
        assert_int_equal(r.setup_rc, 0);
        int outcome = r.res.outcome;
        finish(&r);
        assert_int_equal(outcome, OUTCOME_DEADLOCK);
    }
}

static void test_no_mte3_wait_reads_stale_bytes(void **s) {
    (void)s;
    /* One flush fills the ring, so the second lap's flush is committed while
     * its put is still on the HCCS link (64 KB take ~1.2 us at 56 GB/s after
     * the link latency) and the receiver reads the first lap's bytes. */
    const char *kv[] = {"tokens", "64", "hidden", "1024", "topk", "2", "experts", "8",
                        "staging-bytes", "65536", "ring-bytes", "65536", "inject", "no-mte3-wait",
                        NULL};
    for (int k = 0; k < 2; k++) {
        run r;
        int rc = run_checked(&r, kernels2[k], 2, kv);
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        assert_int_equal(rc, 1);
        if (!strstr(m, "before the sender's data landed")) fail_msg("message: %s", m);
    }
}

/* ------------------------------------------------------------ the check itself */

static void test_check_catches_corrupted_row(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "8", "hidden", "7", "topk", "2", "experts", "4",
                        "staging-bytes", "64", NULL};
    run r;
    start(&r, "combine-sender", 2, kv);
    assert_int_equal(r.res.outcome, OUTCOME_COMPLETED);
    const combine_state *st = r.st;
    /* A crop off by one byte or a lost carry would shift bytes of some row;
     * do exactly that to one byte of row 3 on rank 1. */
    assert_true(st->plan.recv_total[1] > 3);
    uint8_t *row = engine_gm_host(r.e, gm_add(st->args.recv[1], 3 * 14), 14);
    assert_non_null(row);
    uint8_t saved = row[5];
    row[5] ^= 0x5a;
    assert_int_equal(combine_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 1 recv row 3")) fail_msg("message: %s", r.msg);
    row[5] = saved;
    assert_int_equal(combine_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    /* a byte written just past the output buffer */
    uint8_t *guard = engine_gm_host(r.e, gm_add(st->args.out[0], 8 * 14 + 2), 1);
    assert_non_null(guard);
    guard[0] ^= 1;
    assert_int_equal(combine_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "combine.out on rank 0")) fail_msg("message: %s", r.msg);
    guard[0] ^= 1;
    /* a combined element off by more than the tolerance */
    uint16_t *out = engine_gm_host(r.e, st->args.out[1], 14);
    uint16_t v = out[6];
    out[6] = float_to_bf16(bf16_to_float(v) + 0.25f);
    assert_int_equal(combine_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 1 combined token 0 element 6")) fail_msg("message: %s", r.msg);
    out[6] = v;
    finish(&r);
}

/* ------------------------------------------------------------ bad input */

static void expect_setup_error(int nodes, const char *const *kv, const char *needle) {
    support_expect_setup_error(support_kernel("combine-sender"), nodes, 2, kv, needle);
}

static void test_bad_options(void **s) {
    (void)s;
    const char *small[] = {"tokens", "4", "hidden", "8", "experts", "8", "topk", "2", NULL};
    expect_setup_error(2, small, "--nodes must be 1");
    const char *routing[] = {"tokens", "4", "routing", "zipf:x", NULL};
    expect_setup_error(1, routing, "--routing zipf:x");
    const char *experts[] = {"experts", "7", NULL};
    expect_setup_error(1, experts, "--experts 7");
    const char *staging[] = {"staging-bytes", "100", NULL};
    expect_setup_error(1, staging, "--staging-bytes 100");
    const char *big[] = {"staging-bytes", "160k", NULL};
    expect_setup_error(1, big, "--staging-bytes");
    const char *inject[] = {"inject", "lost-tail", NULL};
    expect_setup_error(1, inject, "--inject lost-tail");
    const char *tokens[] = {"tokens", "12x", NULL};
    expect_setup_error(1, tokens, "--tokens");
}

static void test_layout_prints_every_rank(void **s) {
    (void)s;
    const kernel_desc *d = kernels_find("combine-sender-inplace");
    const char *kv[] = {"tokens", "16", "hidden", "100", "experts", "16", "topk", "4", NULL};
    kernel_opts o;
    support_opts(d, &o, kv);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[512];
    assert_int_equal(d->layout(&o, 1, 4, f, err, sizeof err), 0);
    fclose(f);
    assert_non_null(strstr(buf, "x_sorted"));
    assert_non_null(strstr(buf, "\n3 "));
    assert_non_null(strstr(buf, "UB per sender core"));
    free(buf);
    f = open_memstream(&buf, &len);
    assert_int_equal(d->layout(&o, 2, 4, f, err, sizeof err), -1);
    fclose(f);
    free(buf);
    assert_non_null(strstr(err, "--nodes"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_token),
        cmocka_unit_test(test_experts_without_tokens),
        cmocka_unit_test(test_rows_not_32b_multiples),
        cmocka_unit_test(test_ring_wraps_many_times),
        cmocka_unit_test(test_eight_ranks_zipf),
        cmocka_unit_test(test_fewer_sender_cores_than_ranks),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_ring_smaller_than_flush_deadlocks),
        cmocka_unit_test(test_no_mte3_wait_reads_stale_bytes),
        cmocka_unit_test(test_check_catches_corrupted_row),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_layout_prints_every_rank),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_combine_normal.c - combine-normal (A2's CamMoeCombineNormal) run
 * through the engine and its check: the shapes where its pieces bite (one
 * token, empty segments, rows that are not 32 B multiples, dropped slots,
 * fewer cores than rows or tokens, uneven shares), the plan's tokenSrcInfo,
 * determinism, both faults, and that the check catches a bad window row,
 * output element, leftover status and guard byte.
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
    engine_result res;
    char err[1024];
    char msg[2048];
} run;

/* Sets up on npus ranks of chip and runs to the end; no check. */
static void start_on(run *r, engine_chip chip, int npus, const char *const *kv) {
    memset(r, 0, sizeof *r);
    const kernel_desc *d = support_kernel("combine-normal");
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = npus;
    cfg.chip = chip;
    cfg.watchdog_ps = 0;
    assert_int_equal(engine_create(&cfg, &r->e, r->err, sizeof r->err), ENGINE_OK);
    kernel_opts o;
    support_opts(d, &o, kv);
    void *state = NULL;
    if (d->setup(r->e, &o, &state, r->err, sizeof r->err) != 0) fail_msg("setup: %s", r->err);
    r->st = state;
    assert_int_equal(engine_run(r->e, &r->res, r->err, sizeof r->err), ENGINE_OK);
    if (r->res.outcome != OUTCOME_COMPLETED)
        fail_msg("outcome %s: %s", engine_outcome_name(r->res.outcome), r->res.message);
}

static void start(run *r, int npus, const char *const *kv) { start_on(r, CHIP_910B2, npus, kv); }

static int check(run *r) { return combine_normal_check(r->e, r->st, r->msg, sizeof r->msg); }

static void finish(run *r) {
    combine_destroy(r->st);
    engine_destroy(r->e);
    memset(r, 0, sizeof *r);
}

static void expect_pass(int npus, const char *const *kv) {
    run r;
    start(&r, npus, kv);
    if (check(&r) != 0) {
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        fail_msg("check failed: %s", m);
    }
    finish(&r);
}

/* The check's first message for a run of kv (must fail). */
static void expect_fail(int npus, const char *const *kv, const char *needle) {
    run r;
    start(&r, npus, kv);
    int rc = check(&r);
    char m[2048];
    snprintf(m, sizeof m, "%s", r.msg);
    finish(&r);
    if (rc != 1) fail_msg("the check passed");
    if (!strstr(m, needle)) fail_msg("expected '%s' in: %s", needle, m);
}

/* ------------------------------------------------------------ shapes */

static void test_single_token(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "1", "hidden", "64", "topk", "2", "experts", "8", NULL};
    expect_pass(2, kv);
}

static void test_experts_without_tokens(void **s) {
    (void)s;
    /* 3 tokens x 2 slots over 64 experts: most cores get no row to send
     * and most no token to sum. */
    const char *kv[] = {"tokens", "3", "hidden", "48", "topk", "2", "experts", "64", NULL};
    expect_pass(4, kv);
}

static void test_rows_not_32b_multiples(void **s) {
    (void)s;
    /* 14 B and 200 B rows: DataCopyPad both ways, window stride 512 B. */
    const char *hidden[] = {"7", "100"};
    for (int h = 0; h < 2; h++) {
        const char *kv[] = {"tokens", "24", "hidden", hidden[h], "topk", "3", "experts", "12",
                            NULL};
        expect_pass(3, kv);
    }
}

static void test_eight_ranks_zipf_dropped_slots(void **s) {
    (void)s;
    const char *zipf[] = {"tokens", "48", "hidden", "136", "topk", "8", "experts", "64",
                          "routing", "zipf:1.2", NULL};
    expect_pass(8, zipf);
    /* dropped slots have no row and no status: the owner must not wait */
    const char *drop[] = {"tokens", "40", "hidden", "72", "topk", "4", "experts", "16",
                          "routing", "drop:0.3", NULL};
    run r;
    start(&r, 4, drop);
    int dropped = 0;
    for (int i = 0; i < 4 * 40 * 4; i++) dropped += r.st->plan.expert_ids[i] < 0;
    assert_int_equal(check(&r), 0);
    finish(&r);
    assert_true(dropped > 20);
}

static void test_few_cores_uneven_shares(void **s) {
    (void)s;
    /* 1 core a rank walks every row and token; 5 and 7 split them unevenly,
     * more rows than the tokenSrcInfo chunk with 1 core. */
    const char *cores[] = {"1", "5", "7"};
    for (int c = 0; c < 3; c++) {
        const char *kv[] = {"tokens", "300", "hidden", "40", "topk", "8", "experts", "16",
                            "cores", cores[c], NULL};
        expect_pass(2, kv);
    }
}

static void test_all_aiv_cores_by_default(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "4", "hidden", "32", "topk", "2", "experts", "8", NULL};
    engine_chip chips[] = {CHIP_910B2, CHIP_910B4};
    int want[] = {48, 40};
    for (int c = 0; c < 2; c++) {
        run r;
        start_on(&r, chips[c], 2, kv);
        int cores = r.st->plan.sh.cores;
        assert_int_equal(check(&r), 0);
        finish(&r);
        assert_int_equal(cores, want[c]);
    }
}

static void test_split_matches_a2(void **s) {
    (void)s;
    /* SplitCoreCal: the first total % cores cores take one more, shares
     * are contiguous and cover everything. */
    uint32_t begin, end, next = 0;
    for (uint32_t c = 0; c < 48; c++) {
        combine_split_core(683 * 48 + 10, c, 48, &begin, &end);
        assert_int_equal(begin, next);
        assert_int_equal(end - begin, c < 10 ? 684 : 683);
        next = end;
    }
    assert_int_equal(next, 683 * 48 + 10);
    combine_split_core(3, 5, 48, &begin, &end);
    assert_int_equal(begin, end);
}

/* ------------------------------------------------------------ plan */

static void test_plan_src_info(void **s) {
    (void)s;
    const kernel_desc *d = support_kernel("combine-normal");
    const char *kv[] = {"tokens", "37", "hidden", "9", "topk", "3", "experts", "12", "routing",
                        "zipf:1", NULL};
    kernel_opts o;
    support_opts(d, &o, kv);
    combine_shape sh;
    char err[256];
    assert_int_equal(combine_normal_shape_from_opts(&o, 1, 4, 48, &sh, err, sizeof err), 0);
    combine_plan p;
    assert_int_equal(combine_plan_build(&sh, &p, err, sizeof err), 0);
    int R = 4, L = 3, T = 37, K = 3;
    /* every row of x on q names a live (s, t, k) routed to q, at its place */
    char *seen = calloc((size_t)(R * T * K), 1);
    for (int q = 0; q < R; q++)
        for (int64_t row = 0; row < p.x_rows[q]; row++) {
            const int32_t *info = p.x_src_info + (p.x_row_base[q] + row) * 3;
            int src = info[0], t = info[1], k = info[2];
            assert_true(src >= 0 && src < R && t >= 0 && t < T && k >= 0 && k < K);
            size_t slot = ((size_t)src * T + (size_t)t) * K + (size_t)k;
            assert_int_equal(seen[slot], 0);
            seen[slot] = 1;
            int32_t e = p.expert_ids[slot];
            assert_int_equal(e / L, q);
            assert_int_equal(p.offset_table[(q * L + e % L) * R + src] + p.expand_idx[slot], row);
        }
    for (int i = 0; i < R * T * K; i++) assert_int_equal(seen[i], 1);   /* no drops in zipf */
    free(seen);
    combine_plan_free(&p);
    /* the ring schemes' plan does not carry it */
    sh.scheme = COMBINE_SCHEME_GATHER;
    assert_int_equal(combine_plan_build(&sh, &p, err, sizeof err), 0);
    assert_null(p.x_src_info);
    combine_plan_free(&p);
}

static void test_deterministic(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "20", "hidden", "50", "topk", "3", "experts", "12", "cores",
                        "6", NULL};
    run a, b;
    start(&a, 3, kv);
    assert_int_equal(check(&a), 0);
    uint64_t t = a.res.end_time, n = a.res.events, stall = a.res.stall_ps;
    finish(&a);
    start(&b, 3, kv);
    assert_int_equal(b.res.end_time, t);
    assert_int_equal(b.res.events, n);
    assert_int_equal(b.res.stall_ps, stall);   /* every wait of every core as long */
    finish(&b);
}

/* ------------------------------------------------------------ faults */

static void test_no_status_wait_sums_missing_rows(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "32", "hidden", "100", "topk", "4", "experts", "16", "inject",
                        "no-status-wait", NULL};
    expect_fail(4, kv, "combined token");
}

static void test_status_first_sums_rows_in_flight(void **s) {
    (void)s;
    /* 8 KB rows take about 2 us on the HCCS link after their status: the
     * owner, woken by the status, reads the slot before the row lands. */
    const char *kv[] = {"tokens", "16", "hidden", "4096", "topk", "2", "experts", "8", "inject",
                        "status-first", NULL};
    expect_fail(2, kv, "combined token");
}

/* ------------------------------------------------------------ the check itself */

static void test_check_catches(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "8", "hidden", "7", "topk", "2", "experts", "4", NULL};
    run r;
    start(&r, 2, kv);
    const combine_args *a = &r.st->args;
    assert_int_equal(check(&r), 0);
    /* one byte of token 3 slot 1's row in rank 1's window */
    gm_t slot = gm_add(gm_on_rank(a->window_base, 1), (int64_t)(3 * 2 + 1) * a->window_stride);
    uint8_t *row = engine_gm_host(r.e, slot, 14);
    assert_non_null(row);
    uint8_t saved[14];
    memcpy(saved, row, 14);
    row[5] ^= 0x5a;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 1 window slot of token 3 slot 1")) fail_msg("message: %s", r.msg);
    memset(row, 0, 14);
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "never landed")) fail_msg("message: %s", r.msg);
    memcpy(row, saved, 14);
    /* a status left set */
    uint8_t *status = engine_gm_host(r.e, gm_add(gm_on_rank(a->state_base, 0), 5 * 32 + 4), 1);
    assert_non_null(status);
    status[0] = 0x80;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 0 status of token 2 slot 1 is still set")) fail_msg("message: %s", r.msg);
    status[0] = 0;
    /* a combined element off by more than the tolerance */
    uint16_t *out = engine_gm_host(r.e, a->out[1], 14);
    uint16_t v = out[6];
    out[6] = float_to_bf16(bf16_to_float(v) + 0.25f);
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 1 combined token 0 element 6")) fail_msg("message: %s", r.msg);
    out[6] = v;
    /* a byte just past the status area */
    uint8_t *guard = engine_gm_host(r.e, gm_add(gm_on_rank(a->state_base, 1), 8 * 2 * 32), 1);
    guard[0] ^= 1;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "combine.state on rank 1")) fail_msg("message: %s", r.msg);
    guard[0] ^= 1;
    assert_int_equal(check(&r), 0);
    finish(&r);
}

/* ------------------------------------------------------------ bad input */

static void expect_setup_error(int nodes, const char *const *kv, const char *needle) {
    support_expect_setup_error(support_kernel("combine-normal"), nodes, 2, kv, needle);
}

static void test_bad_options(void **s) {
    (void)s;
    const char *small[] = {"tokens", "4", "hidden", "8", "experts", "8", "topk", "2", NULL};
    expect_setup_error(2, small, "combine-normal");
    expect_setup_error(2, small, "--nodes must be 1");
    const char *cores[] = {"cores", "49", NULL};
    expect_setup_error(1, cores, "--cores");
    const char *hidden[] = {"hidden", "20000", NULL};
    expect_setup_error(1, hidden, "--hidden 20000");
    const char *inject[] = {"inject", "no-mte3-wait", NULL};
    expect_setup_error(1, inject, "--inject no-mte3-wait");
    const char *routing[] = {"routing", "zipf:x", NULL};
    expect_setup_error(1, routing, "--routing zipf:x");
}

static void test_layout_and_estimate(void **s) {
    (void)s;
    const kernel_desc *d = support_kernel("combine-normal");
    const char *kv[] = {"tokens", "16", "hidden", "100", "experts", "16", "topk", "4", NULL};
    kernel_opts o;
    support_opts(d, &o, kv);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[512];
    assert_int_equal(d->layout(&o, 1, 4, f, err, sizeof err), 0);
    fclose(f);
    assert_non_null(strstr(buf, "512 B window stride"));
    assert_non_null(strstr(buf, "\n3 "));
    assert_non_null(strstr(buf, "cores per rank: 48 AIV"));
    free(buf);
    kernel_estimate ref, full;
    assert_int_equal(d->estimate(&o, 1, 4, engine_chip_get(CHIP_910B2), PAYLOAD_REF, &ref, err,
                                 sizeof err), 0);
    assert_int_equal(d->estimate(&o, 1, 4, engine_chip_get(CHIP_910B2), PAYLOAD_FULL, &full, err,
                                 sizeof err), 0);
    /* full payload also holds x and the windows: 16 x 4 slots a rank */
    assert_true(full.gm_bytes >= ref.gm_bytes + 4ull * 16 * 4 * (200 + 512));
    assert_int_equal(d->layout(&o, 2, 4, stderr, err, sizeof err), -1);
    assert_non_null(strstr(err, "--nodes"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_token),
        cmocka_unit_test(test_experts_without_tokens),
        cmocka_unit_test(test_rows_not_32b_multiples),
        cmocka_unit_test(test_eight_ranks_zipf_dropped_slots),
        cmocka_unit_test(test_few_cores_uneven_shares),
        cmocka_unit_test(test_all_aiv_cores_by_default),
        cmocka_unit_test(test_split_matches_a2),
        cmocka_unit_test(test_plan_src_info),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_no_status_wait_sums_missing_rows),
        cmocka_unit_test(test_status_first_sums_rows_in_flight),
        cmocka_unit_test(test_check_catches),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_layout_and_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

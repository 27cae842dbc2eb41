/*
 * test_combine.c - the combine kernels run through the engine and their own
 * check. The combine-sender kernels on the shapes where seed 000's corner
 * cases bite: one token, experts with no tokens for a rank, rows that are
 * not 32 B multiples with staging sizes that do not divide them, a ring
 * that wraps many times, 8 destination ranks with skewed routing, fewer
 * sender cores than ranks; both faults; and that the check does catch a
 * corrupted row or guard. combine-normal (A2's CamMoeCombineNormal) on the
 * shapes where its pieces bite: one token, empty segments, rows that are
 * not 32 B multiples, dropped slots, few cores with uneven shares and
 * several tokenSrcInfo chunks, all AIV cores of either chip by default; the
 * plan's tokenSrcInfo, determinism, both faults, and that its check names a
 * bad window row, output element, leftover status and guard byte.
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
#include "kernels/combine.h"
#include "kernels/kernels.h"
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

/* Sets up and runs on npus ranks of chip; does not check (so a test can
 * tamper first). */
static void start_on(run *r, const char *kernel, engine_chip chip, int npus,
                     const char *const *kv) {
    memset(r, 0, sizeof *r);
    const kernel_desc *d = kernels_find(kernel);
    assert_non_null(d);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = npus;
    cfg.chip = chip;
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

static void start(run *r, const char *kernel, int npus, const char *const *kv) {
    start_on(r, kernel, CHIP_910B2, npus, kv);
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

/* The check must fail and its first message say needle. */
static void expect_fail(const char *kernel, int npus, const char *const *kv, const char *needle) {
    run r;
    int rc = run_checked(&r, kernel, npus, kv);
    char m[2048];
    snprintf(m, sizeof m, "%s", r.msg);
    finish(&r);
    if (rc != 1) fail_msg("%s: the check passed", kernel);
    if (!strstr(m, needle)) fail_msg("expected '%s' in: %s", needle, m);
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

static void expect_normal_setup_error(int nodes, const char *const *kv, const char *needle) {
    support_expect_setup_error(support_kernel("combine-normal"), nodes, 2, kv, needle);
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

/* What `npurr layout -k d` prints for o on nodes x 4 NPUs. */
static char *layout_text(const kernel_desc *d, const kernel_opts *o, int nodes, char *err,
                         size_t errlen) {
    return support_layout_text(d, o, nodes, 4, err, errlen);
}

static const char *const layout_kv[] = {"tokens", "16", "hidden", "100", "experts", "16",
                                        "topk", "4", NULL};

static void test_layout_prints_every_rank(void **s) {
    (void)s;
    const kernel_desc *d = kernels_find("combine-sender-inplace");
    kernel_opts o;
    support_opts(d, &o, layout_kv);
    char err[512];
    char *buf = layout_text(d, &o, 1, err, sizeof err);
    assert_non_null(buf);
    assert_non_null(strstr(buf, "x_sorted"));
    assert_non_null(strstr(buf, "\n3 "));
    assert_non_null(strstr(buf, "UB per sender core"));
    free(buf);
    assert_null(layout_text(d, &o, 2, err, sizeof err));
    assert_non_null(strstr(err, "--nodes"));
}

/* ------------------------------------------------------------ combine-normal */

#define NORMAL "combine-normal"

static void test_normal_small_shapes(void **s) {
    (void)s;
    /* one token; 3 tokens x 2 slots over 64 experts (most cores get no row
     * to send and no token to sum); 14 B and 200 B rows (DataCopyPad both
     * ways, 512 B window stride) */
    const char *one[] = {"tokens", "1", "hidden", "64", "topk", "2", "experts", "8", NULL};
    expect_pass(NORMAL, 2, one);
    const char *sparse[] = {"tokens", "3", "hidden", "48", "topk", "2", "experts", "64", NULL};
    expect_pass(NORMAL, 4, sparse);
    const char *hidden[] = {"7", "100"};
    for (int h = 0; h < 2; h++) {
        const char *kv[] = {"tokens", "24", "hidden", hidden[h], "topk", "3", "experts", "12",
                            NULL};
        expect_pass(NORMAL, 3, kv);
    }
}

static void test_normal_zipf_and_dropped_slots(void **s) {
    (void)s;
    const char *zipf[] = {"tokens", "48", "hidden", "136", "topk", "8", "experts", "64",
                          "routing", "zipf:1.2", NULL};
    expect_pass(NORMAL, 8, zipf);
    /* dropped slots have no row and no status: the owner must not wait */
    const char *drop[] = {"tokens", "40", "hidden", "72", "topk", "4", "experts", "16",
                          "routing", "drop:0.3", NULL};
    run r;
    assert_int_equal(run_checked(&r, NORMAL, 4, drop), 0);
    int dropped = 0;
    for (int i = 0; i < 4 * 40 * 4; i++) dropped += r.st->plan.expert_ids[i] < 0;
    finish(&r);
    assert_true(dropped > 20);
}

static void test_normal_few_cores_uneven_shares(void **s) {
    (void)s;
    /* 1 core a rank walks every row (more than one tokenSrcInfo chunk) and
     * every token (several weight chunks); 5 and 7 split them unevenly. */
    const char *cores[] = {"1", "5", "7"};
    for (int c = 0; c < 3; c++) {
        const char *kv[] = {"tokens", "300", "hidden", "40", "topk", "8", "experts", "16",
                            "cores", cores[c], NULL};
        expect_pass(NORMAL, 2, kv);
    }
}

static void test_normal_all_aiv_cores_by_default(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "4", "hidden", "32", "topk", "2", "experts", "8", NULL};
    engine_chip chips[] = {CHIP_910B2, CHIP_910B4};
    int want[] = {48, 40};
    for (int c = 0; c < 2; c++) {
        run r;
        start_on(&r, NORMAL, chips[c], 2, kv);
        int cores = r.st->plan.sh.cores;
        assert_int_equal(combine_normal_check(r.e, r.st, r.msg, sizeof r.msg), 0);
        finish(&r);
        assert_int_equal(cores, want[c]);
    }
}

static void test_normal_split_matches_a2(void **s) {
    (void)s;
    /* SplitCoreCal: the first total % cores cores take one more, shares are
     * contiguous and cover everything. */
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

static void test_normal_plan_src_info(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "37", "hidden", "9", "topk", "3", "experts", "12", "routing",
                        "zipf:1", NULL};
    kernel_opts o;
    support_opts(support_kernel(NORMAL), &o, kv);
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

static void test_normal_deterministic(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "20", "hidden", "50", "topk", "3", "experts", "12", "cores",
                        "6", NULL};
    run a, b;
    assert_int_equal(run_checked(&a, NORMAL, 3, kv), 0);
    uint64_t t = a.res.end_time, n = a.res.events, stall = a.res.stall_ps;
    finish(&a);
    assert_int_equal(run_checked(&b, NORMAL, 3, kv), 0);
    assert_int_equal(b.res.end_time, t);
    assert_int_equal(b.res.events, n);
    assert_int_equal(b.res.stall_ps, stall);   /* every wait of every core as long */
    finish(&b);
}

static void test_normal_faults_fail_the_check(void **s) {
    (void)s;
    const char *nowait[] = {"tokens", "32", "hidden", "100", "topk", "4", "experts", "16",
                            "inject", "no-status-wait", NULL};
    expect_fail(NORMAL, 4, nowait, "combined token");
    /* 8 KB rows take about 2 us on the HCCS link after their status: the
     * owner, woken by the status, reads the slot before the row lands. */
    const char *first[] = {"tokens", "16", "hidden", "4096", "topk", "2", "experts", "8",
                           "inject", "status-first", NULL};
    expect_fail(NORMAL, 2, first, "combined token");
}

static void test_normal_check_catches(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "8", "hidden", "7", "topk", "2", "experts", "4", NULL};
    run r;
    assert_int_equal(run_checked(&r, NORMAL, 2, kv), 0);
    const combine_args *a = &r.st->args;
    /* one byte of token 3 slot 1's row in rank 1's window, then the row gone */
    gm_t slot = gm_add(gm_on_rank(a->window_base, 1), (int64_t)(3 * 2 + 1) * a->window_stride);
    uint8_t *row = engine_gm_host(r.e, slot, 14);
    assert_non_null(row);
    uint8_t saved[14];
    memcpy(saved, row, 14);
    row[5] ^= 0x5a;
    assert_int_equal(combine_normal_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 1 window slot of token 3 slot 1")) fail_msg("message: %s", r.msg);
    memset(row, 0, 14);
    assert_int_equal(combine_normal_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "never landed")) fail_msg("message: %s", r.msg);
    memcpy(row, saved, 14);
    /* a status left set */
    uint8_t *status = engine_gm_host(r.e, gm_add(gm_on_rank(a->state_base, 0), 5 * 32 + 4), 1);
    assert_non_null(status);
    status[0] = 0x80;
    assert_int_equal(combine_normal_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 0 status of token 2 slot 1 is still set")) fail_msg("message: %s", r.msg);
    status[0] = 0;
    /* a combined element off by more than the tolerance */
    uint16_t *out = engine_gm_host(r.e, a->out[1], 14);
    uint16_t v = out[6];
    out[6] = float_to_bf16(bf16_to_float(v) + 0.25f);
    assert_int_equal(combine_normal_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 1 combined token 0 element 6")) fail_msg("message: %s", r.msg);
    out[6] = v;
    /* a byte just past the status area */
    uint8_t *guard = engine_gm_host(r.e, gm_add(gm_on_rank(a->state_base, 1), 8 * 2 * 32), 1);
    assert_non_null(guard);
    guard[0] ^= 1;
    assert_int_equal(combine_normal_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "combine.state on rank 1")) fail_msg("message: %s", r.msg);
    guard[0] ^= 1;
    assert_int_equal(combine_normal_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    finish(&r);
}

static void test_normal_bad_options(void **s) {
    (void)s;
    const char *small[] = {"tokens", "4", "hidden", "8", "experts", "8", "topk", "2", NULL};
    expect_normal_setup_error(2, small, "combine-normal");
    expect_normal_setup_error(2, small, "--nodes must be 1");
    const char *cores[] = {"cores", "49", NULL};
    expect_normal_setup_error(1, cores, "--cores");
    const char *hidden[] = {"hidden", "20000", NULL};
    expect_normal_setup_error(1, hidden, "--hidden 20000");
    const char *inject[] = {"inject", "no-mte3-wait", NULL};
    expect_normal_setup_error(1, inject, "--inject no-mte3-wait");
}

static void test_normal_layout_and_estimate(void **s) {
    (void)s;
    const kernel_desc *d = support_kernel(NORMAL);
    kernel_opts o;
    support_opts(d, &o, layout_kv);
    char err[512];
    char *buf = layout_text(d, &o, 1, err, sizeof err);
    assert_non_null(buf);
    assert_non_null(strstr(buf, "512 B window stride"));
    assert_non_null(strstr(buf, "\n3 "));
    assert_non_null(strstr(buf, "cores per rank: 48 AIV"));
    free(buf);
    kernel_estimate ref, full;
    engine_config ref_cfg = support_config(1, 4, PAYLOAD_REF);
    engine_config full_cfg = support_config(1, 4, PAYLOAD_FULL);
    assert_int_equal(d->estimate(&o, support_topo(&ref_cfg), &ref, err, sizeof err), 0);
    assert_int_equal(d->estimate(&o, support_topo(&full_cfg), &full, err, sizeof err), 0);
    /* full payload also holds x and the windows: 16 x 4 slots a rank */
    assert_true(full.gm_bytes >= ref.gm_bytes + 4ull * 16 * 4 * (200 + 512));
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
        cmocka_unit_test(test_normal_small_shapes),
        cmocka_unit_test(test_normal_zipf_and_dropped_slots),
        cmocka_unit_test(test_normal_few_cores_uneven_shares),
        cmocka_unit_test(test_normal_all_aiv_cores_by_default),
        cmocka_unit_test(test_normal_split_matches_a2),
        cmocka_unit_test(test_normal_plan_src_info),
        cmocka_unit_test(test_normal_deterministic),
        cmocka_unit_test(test_normal_faults_fail_the_check),
        cmocka_unit_test(test_normal_check_catches),
        cmocka_unit_test(test_normal_bad_options),
        cmocka_unit_test(test_normal_layout_and_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

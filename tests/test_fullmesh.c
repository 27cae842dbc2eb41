/*
 * test_fullmesh.c - the fullmesh dispatch/combine kernel (seed 002) through
 * the engine and its own check: 1 node of 2 and 4 ranks (BatchWrite over
 * HCCS) and 2 nodes (RDMA), one BatchWrite task per destination per op,
 * the flags and bufferChosen left as the double buffer implies; one token,
 * experts and rank pairs with no tokens, rows that are not 32 B multiples,
 * fewer and more cores than ranks; the no-double-buffer fault caught both
 * ways the seed predicts (wrong data, lost flag); the check catching
 * corrupted outputs; bad options; layout.
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
#include "engine/kernels/fullmesh.h"
#include "engine/kernels/kernels.h"
#include "tests/support.h"

typedef struct tally {
    int npus_per_node;
    int64_t batch_tasks;        /* BatchWrite tasks issued */
    int64_t batch_tasks_rdma;   /* of which to another node */
} tally;

static void on_event(void *ctx, const engine_event *ev) {
    tally *t = ctx;
    if (ev->kind != EV_XFER_ISSUE || ev->sub != XFER_BATCHWRITE) return;
    t->batch_tasks++;
    if ((int)ev->peer / t->npus_per_node != (int)ev->rank / t->npus_per_node) t->batch_tasks_rdma++;
}

typedef struct run {
    engine *e;
    fm_state *st;
    int setup_rc;
    engine_result res;
    int check_rc;
    tally tl;
    char err[1024];
    char msg[2048];
} run;

static const kernel_desc *desc(void) { return support_kernel("fullmesh-dispatch-combine"); }

static void make_opts(kernel_opts *o, const char *const *kv) {
    support_opts(desc(), o, kv);
}

static void start(run *r, int nodes, int npus, const char *const *kv) {
    memset(r, 0, sizeof *r);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    cfg.watchdog_ps = 0;
    assert_int_equal(engine_create(&cfg, &r->e, r->err, sizeof r->err), ENGINE_OK);
    kernel_opts o;
    make_opts(&o, kv);
    void *state = NULL;
    r->setup_rc = desc()->setup(r->e, &o, &state, r->err, sizeof r->err);
    r->st = state;
    if (r->setup_rc != 0) return;
    r->tl.npus_per_node = npus;
    engine_observer obs = {.ctx = &r->tl, .on_event = on_event};
    engine_set_observer(r->e, &obs);
    assert_int_equal(engine_run(r->e, &r->res, r->err, sizeof r->err), ENGINE_OK);
}

static void finish(run *r) {
    if (r->st) fm_destroy(r->st);
    if (r->e) engine_destroy(r->e);
    r->st = NULL;
    r->e = NULL;
}

static int run_checked(run *r, int nodes, int npus, const char *const *kv) {
    start(r, nodes, npus, kv);
    if (r->setup_rc != 0) fail_msg("setup failed: %s", r->err);
    if (r->res.outcome != OUTCOME_COMPLETED)
        fail_msg("outcome %s: %s", engine_outcome_name(r->res.outcome), r->res.message);
    r->check_rc = desc()->check(r->e, r->st, r->msg, sizeof r->msg);
    return r->check_rc;
}

static void expect_pass(int nodes, int npus, const char *const *kv) {
    run r;
    if (run_checked(&r, nodes, npus, kv) != 0) {
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        fail_msg("check failed on %d x %d: %s", nodes, npus, m);
    }
    finish(&r);
}

static int32_t word(run *r, gm_t at) {
    const int32_t *p = engine_gm_host(r->e, at, 4);
    assert_non_null(p);
    return *p;
}

/* After R rounds (2R EP ops, alternating blocks): bufferChosen is back to
 * 0, the op count is 2R, block 0 holds the last dispatch's FLAG1 and FLAG2
 * (value 2R - 1), block 1 the last combine's FLAG (value 2R), each where
 * the last round's counts put it. */
static void check_windows_after(run *r) {
    const fm_args *a = &r->st->args;
    const fm_plan *p = &r->st->plan;
    int W = a->num_ranks, L = a->local_experts, R = a->rounds;
    const fm_round_plan *last = &p->round[R - 1];
    for (int s = 0; s < W; s++) {
        gm_t ctrl = fm_ctrl(a, s);
        assert_int_equal(word(r, gm_add(ctrl, FM_CTRL_BUFFER_CHOSEN)), 0);
        assert_int_equal(word(r, gm_add(ctrl, FM_CTRL_EP_OPS)), 2 * R);
        for (int q = 0; q < W; q++) {
            int64_t dispatched = 0, combined = 0;
            for (int le = 0; le < L; le++) {
                dispatched += last->send_count[((size_t)q * W + (size_t)s) * L + (size_t)le];
                combined += last->send_count[((size_t)s * W + (size_t)q) * L + (size_t)le];
            }
            gm_t w0 = gm_add(gm_on_rank(a->windows_in, s), (int64_t)((uint64_t)q * a->rank_size_on_win));
            gm_t w1 = gm_add(w0, (int64_t)a->block_stride);
            assert_int_equal(word(r, gm_add(w0, FM_FLAG_OFFSET * 4)), 2 * R - 1);
            assert_int_equal(word(r, gm_add(w0, (int64_t)kit_align_up(FM_STATUS_ROW_BYTES +
                                                                    (uint64_t)dispatched * a->row_bytes, UB_ALIGN))),
                             2 * R - 1);
            assert_int_equal(word(r, gm_add(w1, (int64_t)kit_align_up((uint64_t)combined * a->row_bytes, UB_ALIGN))),
                             2 * R);
        }
    }
}

/* ------------------------------------------------------------ shapes */

static void test_one_node(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "12", "hidden", "64", "topk", "4", "experts", "16", "rounds", "2",
                        NULL};
    int npus[] = {2, 4};
    for (int i = 0; i < 2; i++) {
        run r;
        assert_int_equal(run_checked(&r, 1, npus[i], kv), 0);
        /* one task per destination rank per EP op, two ops a round */
        assert_int_equal(r.tl.batch_tasks, (int64_t)npus[i] * npus[i] * 2 * 2);
        assert_int_equal(r.tl.batch_tasks_rdma, 0);
        check_windows_after(&r);
        finish(&r);
    }
}

static void test_two_nodes_rdma(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "10", "hidden", "48", "topk", "3", "experts", "8", "rounds", "3",
                        NULL};
    run r;
    assert_int_equal(run_checked(&r, 2, 2, kv), 0);
    assert_int_equal(r.tl.batch_tasks, 4 * 4 * 2 * 3);
    assert_int_equal(r.tl.batch_tasks_rdma, 4 * 2 * 2 * 3);   /* 2 of 4 peers are remote */
    check_windows_after(&r);
    finish(&r);
}

static void test_single_token(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "1", "hidden", "32", "topk", "1", "experts", "8", NULL};
    expect_pass(1, 2, kv);
    expect_pass(2, 2, kv);
}

static void test_experts_and_ranks_without_tokens(void **s) {
    (void)s;
    /* 3 tokens x 2 slots over 64 experts on 4 ranks: most experts get no
     * token and some rank pairs exchange nothing, in both ops. */
    const char *kv[] = {"tokens", "3", "hidden", "40", "topk", "2", "experts", "64", NULL};
    run r;
    assert_int_equal(run_checked(&r, 1, 4, kv), 0);
    const fm_round_plan *rp = &r.st->plan.round[0];
    int empty_experts = 0, empty_pairs = 0;
    for (int p = 0; p < 4; p++) {
        for (int le = 0; le < 16; le++) {
            int64_t before = le ? rp->expert_token_num[p * 16 + le - 1] : 0;
            empty_experts += rp->expert_token_num[p * 16 + le] == before;
        }
        for (int q = 0; q < 4; q++) {
            int64_t n = 0;
            for (int le = 0; le < 16; le++) n += rp->send_count[(q * 4 + p) * 16 + le];
            empty_pairs += n == 0;
        }
    }
    check_windows_after(&r);
    finish(&r);
    assert_true(empty_experts > 40);
    assert_true(empty_pairs > 0);
}

static void test_odd_rows_and_core_counts(void **s) {
    (void)s;
    /* 14 B and 200 B rows: no token is 32 B aligned in a window */
    const char *h7[] = {"tokens", "9", "hidden", "7", "topk", "2", "experts", "12", "cores", "1",
                        NULL};
    expect_pass(1, 3, h7);
    const char *h100[] = {"tokens", "20", "hidden", "100", "topk", "5", "experts", "12", "cores",
                          "7", "routing", "zipf:1.5", NULL};
    expect_pass(1, 3, h100);
}

static void test_deterministic(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "8", "hidden", "24", "topk", "2", "experts", "8", NULL};
    run a, b;
    assert_int_equal(run_checked(&a, 1, 4, kv), 0);
    uint64_t t = a.res.end_time, n = a.res.events;
    finish(&a);
    assert_int_equal(run_checked(&b, 1, 4, kv), 0);
    assert_int_equal(b.res.end_time, t);
    assert_int_equal(b.res.events, n);
    finish(&b);
}

/* ------------------------------------------------------------ the injected fault */

/* Zipf routing makes one rank's experts hot: it receives most tokens and is
 * still reading its dispatch windows when the cold ranks, done early, send
 * their combine data into the same block. */
static const char *const overwrite_kv[] = {"tokens", "64", "hidden", "1024", "topk", "2",
                                           "experts", "8", "routing", "zipf:2", "cores", "1",
                                           "rounds", "3", NULL};

static void with_inject(const char *const *kv, const char **out) {
    int i = 0;
    for (; kv[i]; i++) out[i] = kv[i];
    out[i++] = "inject";
    out[i++] = "no-double-buffer";
    out[i] = NULL;
}

static void test_no_double_buffer_overwrites_data(void **s) {
    (void)s;
    expect_pass(1, 4, overwrite_kv);
    const char *kv[32];
    with_inject(overwrite_kv, kv);
    run r;
    int rc = run_checked(&r, 1, 4, kv);
    char m[2048];
    snprintf(m, sizeof m, "%s", r.msg);
    finish(&r);
    assert_int_equal(rc, 1);
    if (!strstr(m, "the window was overwritten before the row was read")) fail_msg("message: %s", m);
}

/* Here a cold rank's combine lands on a receiver's count row before the
 * receiver polled FLAG1: the flag is lost under token data and the run
 * deadlocks (seed 002 s2.4.3's 标志位 ... 死锁风险). */
static const char *const flag_kv[] = {"tokens", "32", "hidden", "2048", "topk", "2", "experts",
                                      "8", "routing", "zipf:2", "cores", "4", NULL};

static void test_no_double_buffer_loses_a_flag(void **s) {
    (void)s;
    expect_pass(1, 4, flag_kv);
    const char *kv[32];
    with_inject(flag_kv, kv);
    run r;
    start(&r, 1, 4, kv);
    assert_int_equal(r.setup_rc, 0);
    int outcome = r.res.outcome;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    engine_write_report(r.e, f);
    fclose(f);
    finish(&r);
    assert_int_equal(outcome, OUTCOME_DEADLOCK);
    if (!strstr(buf, "fullmesh.FLAG1[")) fail_msg("report: %s", buf);
    free(buf);
}

/* ------------------------------------------------------------ the check itself */

static void test_check_catches_corruption(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "6", "hidden", "20", "topk", "2", "experts", "4", "rounds", "2",
                        NULL};
    run r;
    assert_int_equal(run_checked(&r, 1, 2, kv), 0);
    const fm_args *a = &r.st->args;
    int at = 1 * 2 + 0;   /* round 1, rank 0 */
    /* one byte of a received row */
    assert_true(r.st->plan.round[1].recv_rows[0] >= 1);
    uint8_t *x = engine_gm_host(r.e, a->expand_x[at], 40);
    assert_non_null(x);
    x[10] ^= 0x40;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "round 1 rank 0 expand_x row 0")) fail_msg("message: %s", r.msg);
    x[10] ^= 0x40;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    /* epRecvCount off by one */
    int32_t *epc = engine_gm_host(r.e, a->ep_recv_count[at], 4);
    epc[0]++;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "epRecvCount[0][0]")) fail_msg("message: %s", r.msg);
    epc[0]--;
    /* expandIdx */
    int32_t *idx = engine_gm_host(r.e, a->expand_idx[at], 4);
    idx[0] += 3;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "expandIdx(0, 0)")) fail_msg("message: %s", r.msg);
    idx[0] -= 3;
    /* a combined element */
    uint16_t *out = engine_gm_host(r.e, a->out[at], 40);
    uint16_t v = out[11];
    out[11] = float_to_bf16(bf16_to_float(v) + 0.5f);
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "round 1 rank 0 combined token 0 element 11")) fail_msg("message: %s", r.msg);
    out[11] = v;
    /* one byte past the combined tokens */
    uint8_t *g = engine_gm_host(r.e, gm_add(a->out[at], 6 * 40), 1);
    g[0] ^= 1;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "fullmesh.out on rank 0")) fail_msg("message: %s", r.msg);
    g[0] ^= 1;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    finish(&r);
}

/* ------------------------------------------------------------ bad input */

static void expect_setup_error(int nodes, int npus, const char *const *kv, const char *needle) {
    support_expect_setup_error(desc(), nodes, npus, kv, needle);
}

static void test_bad_options(void **s) {
    (void)s;
    const char *experts[] = {"experts", "30", NULL};
    expect_setup_error(1, 4, experts, "--experts 30");
    const char *local[] = {"experts", "100", NULL};   /* 25 per rank > FLAG_OFFSET */
    expect_setup_error(1, 4, local, "--experts 100");
    const char *topk[] = {"topk", "9", "experts", "8", NULL};
    expect_setup_error(1, 4, topk, "--topk 9");
    const char *hidden[] = {"hidden", "9000", NULL};
    expect_setup_error(1, 2, hidden, "--hidden 9000");
    const char *routing[] = {"routing", "zipf:-1", NULL};
    expect_setup_error(1, 2, routing, "--routing zipf:-1");
    const char *inject[] = {"inject", "single-buffer", NULL};
    expect_setup_error(1, 2, inject, "--inject single-buffer");
    const char *rounds[] = {"rounds", "0", NULL};
    expect_setup_error(1, 2, rounds, "--rounds 0");
}

static void test_layout(void **s) {
    (void)s;
    kernel_opts o;
    make_opts(&o, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[512];
    assert_int_equal(desc()->layout(&o, 2, 2, f, err, sizeof err), 0);
    fclose(f);
    assert_non_null(strstr(buf, "rankSizeOnWin"));
    assert_non_null(strstr(buf, "\n3     1 "));   /* rank 3, round 1 */
    free(buf);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_node),
        cmocka_unit_test(test_two_nodes_rdma),
        cmocka_unit_test(test_single_token),
        cmocka_unit_test(test_experts_and_ranks_without_tokens),
        cmocka_unit_test(test_odd_rows_and_core_counts),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_no_double_buffer_overwrites_data),
        cmocka_unit_test(test_no_double_buffer_loses_a_flag),
        cmocka_unit_test(test_check_catches_corruption),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

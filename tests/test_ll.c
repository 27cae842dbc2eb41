/*
 * test_ll.c - the two low-latency kernels (kernels/ll.h) through the engine
 * and their own check: ll-single-dispatch-combine on one node (int8 and
 * bf16, one token, dropped slots, fewer cores than slots) moves every row
 * over HCCS from the vector cores with no AICPU task and no RDMA; its two
 * faults caught (a combine status ahead of its row: wrong sums; receivers
 * that do not wait: a deadlock); ll-layered-dispatch-combine on 2 and 4
 * nodes passes, sends one RDMA write per (token, other server) plus one end
 * status per server pair each way, posted by the cores themselves, no
 * BatchWrite; its faults caught (the combine not waiting for the other
 * server; Ipc2Out not waiting for the local ranks, under schedule
 * perturbation); the check catching corrupted outputs; bad options; layout.
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
#include "kernels/ll.h"
#include "tests/support.h"

typedef struct tally {
    int64_t batch_tasks, rdma_writes, remote_writes;
} tally;

static void on_event(void *ctx, const engine_event *ev) {
    tally *t = ctx;
    if (ev->kind != EV_XFER_ISSUE) return;
    t->batch_tasks += ev->sub == XFER_BATCHWRITE;
    t->rdma_writes += ev->sub == XFER_RDMA_WRITE;
    t->remote_writes += ev->sub == XFER_MTE3 && ev->peer != ev->rank;   /* MTE3 into a peer's GM */
}

typedef struct run {
    engine *e;
    ll_state *st;
    const kernel_desc *d;
    int setup_rc;
    engine_result res;
    tally tl;
    char err[1024];
    char msg[2048];
} run;

static const kernel_desc *single(void) { return support_kernel("ll-single-dispatch-combine"); }
static const kernel_desc *layered(void) { return support_kernel("ll-layered-dispatch-combine"); }

static void start(run *r, const kernel_desc *d, engine_config *cfg, const char *const *kv) {
    memset(r, 0, sizeof *r);
    r->d = d;
    cfg->watchdog_ps = 0;
    assert_int_equal(engine_create(cfg, &r->e, r->err, sizeof r->err), ENGINE_OK);
    kernel_opts o;
    support_opts(d, &o, kv);
    void *state = NULL;
    r->setup_rc = d->setup(r->e, &o, &state, r->err, sizeof r->err);
    r->st = state;
    if (r->setup_rc != 0) return;
    engine_observer obs = {.ctx = &r->tl, .on_event = on_event};
    engine_set_observer(r->e, &obs);
    assert_int_equal(engine_run(r->e, &r->res, r->err, sizeof r->err), ENGINE_OK);
}

static void finish(run *r) {
    if (r->st) ll_destroy(r->st);
    if (r->e) engine_destroy(r->e);
    r->st = NULL;
    r->e = NULL;
}

/* Runs d on nodes x npus and returns its check's result (the run must end). */
static int run_checked(run *r, const kernel_desc *d, int nodes, int npus, const char *const *kv) {
    engine_config cfg = support_config(nodes, npus, PAYLOAD_REF);
    start(r, d, &cfg, kv);
    if (r->setup_rc != 0) fail_msg("setup failed: %s", r->err);
    if (r->res.outcome != OUTCOME_COMPLETED)
        fail_msg("outcome %s: %s", engine_outcome_name(r->res.outcome), r->res.message);
    return d->check(r->e, r->st, r->msg, sizeof r->msg);
}

static void expect_pass(const kernel_desc *d, int nodes, int npus, const char *const *kv,
                        tally *out) {
    run r;
    if (run_checked(&r, d, nodes, npus, kv) != 0) {
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        fail_msg("%s on %d x %d: check failed: %s", d->name, nodes, npus, m);
    }
    if (out) *out = r.tl;
    finish(&r);
}

/* ------------------------------------------------------------ single */

static void test_single_passes_without_aicpu(void **s) {
    (void)s;
    tally t;
    expect_pass(single(), 1, 4, NULL, &t);
    assert_int_equal(t.batch_tasks, 0);
    assert_int_equal(t.rdma_writes, 0);
    assert_true(t.remote_writes > 0);
    const char *bf16[] = {"dtype", "bf16", "tokens", "24", "cores", "5", NULL};
    expect_pass(single(), 1, 8, bf16, NULL);
    const char *one[] = {"tokens", "1", "topk", "1", NULL};
    expect_pass(single(), 1, 2, one, NULL);
    const char *drop[] = {"routing", "drop:0.3", "tokens", "32", "cores", "3", NULL};
    expect_pass(single(), 1, 4, drop, NULL);
    const char *skew[] = {"routing", "zipf:2", "experts", "64", "topk", "6", NULL};
    expect_pass(single(), 1, 8, skew, NULL);
}

/* What crosses HCCS: every (token, k) row whose expert is on another rank,
 * once into that rank's window and once back with a status; every status
 * a rank sends the experts of other ranks. All of it is the vector cores'
 * MTE3 into a peer's GM. */
static void test_single_row_count(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "10", "topk", "3", "experts", "16", "cores", "4", NULL};
    run r;
    assert_int_equal(run_checked(&r, single(), 1, 4, kv), 0);
    const fm_round_plan *rp = &r.st->plan.round[0];
    int64_t remote = 0;
    for (int src = 0; src < 4; src++)
        for (int i = 0; i < 30; i++) remote += rp->expert_ids[src * 30 + i] / 4 != src;
    int64_t statuses = 4 * (16 - 4);   /* each rank to the other ranks' experts */
    assert_int_equal(r.tl.remote_writes, 3 * remote + statuses);
    finish(&r);
}

static void test_single_faults(void **s) {
    (void)s;
    const char *first[] = {"inject", "status-first", "hidden", "7168", NULL};
    run r;
    assert_int_equal(run_checked(&r, single(), 1, 4, first), 1);
    if (!strstr(r.msg, "combined token")) fail_msg("message: %s", r.msg);
    finish(&r);
    const char *clean[] = {"hidden", "7168", NULL};
    expect_pass(single(), 1, 4, clean, NULL);
    const char *nowait[] = {"inject", "no-status-wait", NULL};
    engine_config cfg = support_config(1, 4, PAYLOAD_REF);
    start(&r, single(), &cfg, nowait);
    assert_int_equal(r.setup_rc, 0);
    assert_int_equal(r.res.outcome, OUTCOME_DEADLOCK);
    finish(&r);
}

/* ------------------------------------------------------------ layered */

static const char *const small_layered[] = {"cores", "12", NULL};

static void test_layered_passes(void **s) {
    (void)s;
    tally t;
    expect_pass(layered(), 2, 4, small_layered, &t);
    assert_int_equal(t.batch_tasks, 0);
    const char *bf16[] = {"cores", "12", "dtype", "bf16", "tokens", "24", NULL};
    expect_pass(layered(), 2, 4, bf16, NULL);
    const char *four[] = {"cores", "16", "experts", "64", NULL};
    expect_pass(layered(), 4, 4, four, NULL);
    const char *drop[] = {"cores", "12", "routing", "drop:0.3", "topk", "6", NULL};
    expect_pass(layered(), 2, 4, drop, NULL);
    const char *hot[] = {"cores", "12", "routing", "active-ranks:1", NULL};
    expect_pass(layered(), 2, 4, hot, NULL);
    const char *wide[] = {"tokens", "40", "topk", "8", NULL};
    expect_pass(layered(), 2, 8, wide, NULL);
}

/* The dispatch writes each token once to each other server it reaches and
 * one end status per (rank, other server); the combine writes each token
 * back once per other server and one end status likewise: every RDMA write
 * comes from a vector core, none from the AICPU. */
static void test_layered_rdma_per_token(void **s) {
    (void)s;
    run r;
    assert_int_equal(run_checked(&r, layered(), 2, 4, small_layered), 0);
    const fm_round_plan *rp = &r.st->plan.round[0];
    int W = 8, T = 16, K = 4, PL = 4 * 4;   /* 32 experts, 4 a rank, 16 a server */
    int64_t crossings = 0;
    for (int src = 0; src < W; src++)
        for (int t = 0; t < T; t++) {
            int other = 0;
            for (int k = 0; k < K; k++)
                other |= rp->expert_ids[(src * T + t) * K + k] / PL != src / 4;
            crossings += other;
        }
    assert_int_equal(r.tl.batch_tasks, 0);
    assert_int_equal(r.tl.rdma_writes, 2 * crossings + 2 * W);
    finish(&r);
}

static void test_layered_faults(void **s) {
    (void)s;
    const char *nowait[] = {"cores", "12", "inject", "no-server-wait", "hidden", "7168", NULL};
    run r;
    assert_int_equal(run_checked(&r, layered(), 2, 4, nowait), 1);
    if (!strstr(r.msg, "combined token")) fail_msg("message: %s", r.msg);
    finish(&r);
    /* Ipc2Out without the IPC barrier reads its window before a delayed
     * local rank has copied into it; the same perturbation passes with it */
    const char *nobar[] = {"cores", "12", "inject", "no-ipc-barrier", NULL};
    engine_config cfg = support_config(2, 4, PAYLOAD_REF);
    cfg.pct_points = 8;
    cfg.pct_span = 70000;
    cfg.pct_delay_ps = 40000000;
    cfg.seed = 1;
    start(&r, layered(), &cfg, nobar);
    assert_int_equal(r.res.outcome, OUTCOME_COMPLETED);
    assert_int_equal(layered()->check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "epRecvCount")) fail_msg("message: %s", r.msg);
    finish(&r);
    start(&r, layered(), &cfg, small_layered);
    assert_int_equal(r.res.outcome, OUTCOME_COMPLETED);
    if (layered()->check(r.e, r.st, r.msg, sizeof r.msg)) fail_msg("clean run: %s", r.msg);
    finish(&r);
}

/* ------------------------------------------------------------ check, options */

static void test_check_catches_corruption(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "6", "hidden", "64", "topk", "2", "experts", "8", NULL};
    run r;
    assert_int_equal(run_checked(&r, single(), 1, 2, kv), 0);
    const ll_args *a = &r.st->args;
    assert_true(r.st->plan.round[0].recv_rows[0] >= 1);
    uint8_t *x = engine_gm_host(r.e, a->expand_x[0], 64);
    x[10] ^= 0x1;
    assert_int_equal(ll_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 0 expand_x row 0")) fail_msg("message: %s", r.msg);
    x[10] ^= 0x1;
    float *sc = engine_gm_host(r.e, a->dynamic_scales[0], 4);
    sc[0] *= 2;
    assert_int_equal(ll_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "dynamic scale")) fail_msg("message: %s", r.msg);
    sc[0] /= 2;
    int32_t *tri = engine_gm_host(r.e, a->expand_idx[0], 12);
    tri[2] += 1;
    assert_int_equal(ll_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "triple")) fail_msg("message: %s", r.msg);
    tri[2] -= 1;
    int32_t *epc = engine_gm_host(r.e, a->ep_recv_count[1], 4);
    epc[0]++;
    assert_int_equal(ll_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 1 epRecvCount[0]")) fail_msg("message: %s", r.msg);
    epc[0]--;
    uint16_t *out = engine_gm_host(r.e, a->out[1], 128);
    uint16_t v = out[5];
    out[5] = float_to_bf16(bf16_to_float(v) + 0.5f);
    assert_int_equal(ll_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 1 combined token 0 element 5")) fail_msg("message: %s", r.msg);
    out[5] = v;
    uint32_t *st = engine_gm_host(r.e, a->cstate, 4);
    st[0] = LL_STATUS_BITS;
    assert_int_equal(ll_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "combine status")) fail_msg("message: %s", r.msg);
    st[0] = 0;
    assert_int_equal(ll_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    finish(&r);
}

static void test_bad_options(void **s) {
    (void)s;
    const char *none[] = {NULL};
    support_expect_setup_error(single(), 2, 4, none, "runs on one node");
    support_expect_setup_error(layered(), 1, 8, none, "runs on 2 or more nodes");
    const char *hidden[] = {"hidden", "100", NULL};
    support_expect_setup_error(single(), 1, 4, hidden, "--hidden 100: must be a multiple of 32");
    const char *dtype[] = {"dtype", "fp8", NULL};
    support_expect_setup_error(single(), 1, 4, dtype, "--dtype fp8: expected int8 or bf16");
    const char *cores[] = {"cores", "4", NULL};
    support_expect_setup_error(layered(), 2, 4, cores, "--cores 4: the layered kernels need");
    const char *inject[] = {"inject", "no-ipc-barrier", NULL};
    support_expect_setup_error(single(), 1, 4, inject, "--inject no-ipc-barrier");
}

static void test_layout(void **s) {
    (void)s;
    kernel_opts o;
    char err[512];
    support_opts(single(), &o, NULL);
    char *text = support_layout_text(single(), &o, 1, 4, err, sizeof err);
    assert_non_null(text);
    if (!strstr(text, "dispatched row: 256 B of values + 32 B scale + 12 B") ||
        !strstr(text, "512 B apart in the window"))
        fail_msg("layout: %s", text);
    free(text);
    support_opts(layered(), &o, small_layered);
    text = support_layout_text(layered(), &o, 2, 4, err, sizeof err);
    assert_non_null(text);
    if (!strstr(text, "token struct: 32 B flag + 256 B values + 32 B top-k ids + 32 B scale"))
        fail_msg("layout: %s", text);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single_passes_without_aicpu),
        cmocka_unit_test(test_single_row_count),
        cmocka_unit_test(test_single_faults),
        cmocka_unit_test(test_layered_passes),
        cmocka_unit_test(test_layered_rdma_per_token),
        cmocka_unit_test(test_layered_faults),
        cmocka_unit_test(test_check_catches_corruption),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

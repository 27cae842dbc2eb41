/*
 * test_cnl.c - combine-normal-layered (kernels/cnl.h) through the engine
 * and its own check: two servers of 2, 4 and 8 NPUs, few and many cores,
 * dropped slots; each rank posts exactly two BatchWrites of N items (the
 * blocks, one of them empty for its own server, then the states), one
 * whole block of T rows to the other server; its faults caught (the sum
 * before the other server's block lands; the partial sums before the
 * local ranks' slices are full); the check catching a wrong element and a
 * write past the output; bad options; layout.
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
#include "kernels/cnl.h"
#include "kernels/kernels.h"
#include "tests/support.h"

typedef struct tally {
    int64_t tasks, task_bytes_rdma, rdma_writes;
    int npus;
} tally;

static void on_event(void *ctx, const engine_event *ev) {
    tally *t = ctx;
    if (ev->kind != EV_XFER_ISSUE) return;
    t->rdma_writes += ev->sub == XFER_RDMA_WRITE;
    if (ev->sub != XFER_BATCHWRITE) return;
    t->tasks++;
    if ((int)ev->peer / t->npus != (int)ev->rank / t->npus) t->task_bytes_rdma += (int64_t)ev->len;
}

typedef struct run {
    engine *e;
    cnl_state *st;
    int setup_rc;
    engine_result res;
    tally tl;
    char err[1024];
    char msg[2048];
} run;

static const kernel_desc *desc(void) { return support_kernel("combine-normal-layered"); }

static int run_checked(run *r, int npus, const char *const *kv) {
    memset(r, 0, sizeof *r);
    engine_config cfg = support_config(2, npus, PAYLOAD_REF);
    cfg.watchdog_ps = 0;
    assert_int_equal(engine_create(&cfg, &r->e, r->err, sizeof r->err), ENGINE_OK);
    kernel_opts o;
    support_opts(desc(), &o, kv);
    void *state = NULL;
    r->setup_rc = desc()->setup(r->e, &o, &state, r->err, sizeof r->err);
    r->st = state;
    if (r->setup_rc != 0) fail_msg("setup failed: %s", r->err);
    r->tl.npus = npus;
    engine_observer obs = {.ctx = &r->tl, .on_event = on_event};
    engine_set_observer(r->e, &obs);
    assert_int_equal(engine_run(r->e, &r->res, r->err, sizeof r->err), ENGINE_OK);
    if (r->res.outcome != OUTCOME_COMPLETED)
        fail_msg("outcome %s: %s", engine_outcome_name(r->res.outcome), r->res.message);
    return desc()->check(r->e, r->st, r->msg, sizeof r->msg);
}

static void finish(run *r) {
    if (r->st) cnl_destroy(r->st);
    if (r->e) engine_destroy(r->e);
    r->st = NULL;
    r->e = NULL;
}

static void expect_pass(int npus, const char *const *kv) {
    run r;
    if (run_checked(&r, npus, kv) != 0) {
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        fail_msg("2 x %d: check failed: %s", npus, m);
    }
    finish(&r);
}

static void test_passes(void **s) {
    (void)s;
    const char *small[] = {"tokens", "24", "hidden", "64", "experts", "16", "cores", "4", NULL};
    expect_pass(2, small);
    expect_pass(4, small);
    const char *wide[] = {"tokens", "16", "hidden", "128", "cores", "48", NULL};
    expect_pass(8, wide);
    const char *drop[] = {"tokens", "32", "hidden", "64", "experts", "32", "cores", "6",
                          "routing", "drop:0.3", NULL};
    expect_pass(4, drop);
    const char *grouped[] = {"tokens", "32", "hidden", "64", "cores", "16",
                             "routing", "group-limited", NULL};
    expect_pass(8, grouped);
}

/* Two BatchWrites of N items per rank: N * W tasks each; to the other
 * server one whole block of T bf16 rows and one 8-int state per rank. */
static void test_batchwrites(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "24", "hidden", "64", "experts", "16", "cores", "4", NULL};
    run r;
    assert_int_equal(run_checked(&r, 4, kv), 0);
    assert_int_equal(r.tl.tasks, 2 * 2 * 8);
    assert_int_equal(r.tl.task_bytes_rdma, 8 * (24 * 64 * 2 + 8 * 4));
    assert_int_equal(r.tl.rdma_writes, 0);
    finish(&r);
}

static void test_faults(void **s) {
    (void)s;
    const char *status[] = {"tokens", "16", "hidden", "7168", "experts", "32", "cores", "8",
                            "inject", "no-status-wait", NULL};
    run r;
    assert_int_equal(run_checked(&r, 4, status), 1);
    if (!strstr(r.msg, "combined token")) fail_msg("message: %s", r.msg);
    finish(&r);
    const char *ipc[] = {"tokens", "16", "hidden", "7168", "experts", "32", "cores", "8",
                         "inject", "no-ipc-wait", NULL};
    assert_int_equal(run_checked(&r, 4, ipc), 1);
    if (!strstr(r.msg, "combined token")) fail_msg("message: %s", r.msg);
    finish(&r);
    const char *clean[] = {"tokens", "16", "hidden", "7168", "experts", "32", "cores", "8", NULL};
    expect_pass(4, clean);
}

static void test_check_catches_corruption(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "8", "hidden", "32", "experts", "8", "cores", "4", NULL};
    run r;
    assert_int_equal(run_checked(&r, 2, kv), 0);
    uint16_t *out = engine_gm_host(r.e, r.st->args.out[3], 64);
    uint16_t v = out[7];
    out[7] = float_to_bf16(bf16_to_float(v) + 1.0f);
    assert_int_equal(cnl_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 3 combined token 0 element 7")) fail_msg("message: %s", r.msg);
    out[7] = v;
    uint8_t *g = engine_gm_host(r.e, gm_add(r.st->args.out[3], 8 * 64), 1);
    g[0] ^= 1;
    assert_int_equal(cnl_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "cnl.out on rank 3")) fail_msg("message: %s", r.msg);
    g[0] ^= 1;
    assert_int_equal(cnl_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    finish(&r);
}

static void test_bad_options(void **s) {
    (void)s;
    const char *none[] = {NULL};
    support_expect_setup_error(desc(), 1, 8, none, "written for two servers");
    const char *tokens[] = {"tokens", "5000", NULL};
    support_expect_setup_error(desc(), 2, 2, tokens, "--tokens 5000");
    const char *hidden[] = {"hidden", "40", NULL};
    support_expect_setup_error(desc(), 2, 2, hidden, "--hidden 40");
    const char *cores[] = {"cores", "1", NULL};
    support_expect_setup_error(desc(), 2, 2, cores, "--cores 1");
    const char *inject[] = {"inject", "status-first", NULL};
    support_expect_setup_error(desc(), 2, 2, inject, "--inject status-first");
}

static void test_layout(void **s) {
    (void)s;
    kernel_opts o;
    char err[512];
    const char *kv[] = {"tokens", "16", "hidden", "64", "experts", "16", NULL};
    support_opts(desc(), &o, kv);
    char *text = support_layout_text(desc(), &o, 2, 4, err, sizeof err);
    if (!text) fail_msg("layout: %s", err);
    if (!strstr(text, "a row and its weight 160 B") || !strstr(text, "2 blocks of 16 rows (2048 B each)"))
        fail_msg("layout: %s", text);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_passes),
        cmocka_unit_test(test_batchwrites),
        cmocka_unit_test(test_faults),
        cmocka_unit_test(test_check_catches_corruption),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_dispatch.c - the layered dispatch (-k dispatch-layered) run through
 * the engine and its own check, on the shapes issue 6 names: 2 and 4 nodes
 * with tokens per rank far beyond the rings (hundreds of wraps), a rank that
 * receives nothing, rows whose every top-k slot is dropped, a single token,
 * RDMA and HCCS rings of one token, skewed and node-limited routing, fp8,
 * token counts that differ per rank, several senders sharing a channel and
 * several forwarders per channel, the default 48-core role split; the same
 * bytes under another schedule; both injected faults hang with a report
 * that reads like a per-role dump; and the check catches what it should.
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
#include "kernels/dispatch.h"
#include "kernels/kernels.h"
#include "tests/support.h"

typedef struct run {
    engine *e;
    dispatch_state *st;
    int setup_rc;
    engine_result res;
    int check_rc;
    char err[1024];
    char msg[2048];
} run;

static void make_opts(kernel_opts *o, const char *const *kv) {
    support_opts(support_kernel("dispatch-layered"), o, kv);
}

/* Small role split for small shapes: keeps the tests fast. */
static const char *const small_roles[] = {"rdma-senders",   "2", "rdma-coordinators",      "1",
                                          "forwarders",     "2", "forwarder-coordinators", "1",
                                          "hccs-receivers", "2", NULL};

/* kv overrides small_roles, which override the defaults. */
static void start_seeded(run *r, int nodes, int npus, const char *const *kv, uint64_t seed,
                         double jitter) {
    memset(r, 0, sizeof *r);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    cfg.watchdog_ps = 0;
    cfg.seed = seed;
    cfg.jitter = jitter;
    assert_int_equal(engine_create(&cfg, &r->e, r->err, sizeof r->err), ENGINE_OK);
    const char *merged[128];
    int n = 0;
    for (int i = 0; small_roles[i]; i++) merged[n++] = small_roles[i];
    for (int i = 0; kv && kv[i]; i++) merged[n++] = kv[i];
    merged[n] = NULL;
    kernel_opts o;
    make_opts(&o, merged);
    void *state = NULL;
    r->setup_rc = kernels_find("dispatch-layered")->setup(r->e, &o, &state, r->err, sizeof r->err);
    r->st = state;
    if (r->setup_rc != 0) return;
    assert_int_equal(engine_run(r->e, &r->res, r->err, sizeof r->err), ENGINE_OK);
}

static void start(run *r, int nodes, int npus, const char *const *kv) {
    start_seeded(r, nodes, npus, kv, 0, 0.0);
}

static void finish(run *r) {
    if (r->st) dispatch_destroy(r->st);
    if (r->e) engine_destroy(r->e);
    r->st = NULL;
    r->e = NULL;
}

/* Runs, expects completion and a passing check; the caller finishes. */
static void run_passing(run *r, int nodes, int npus, const char *const *kv) {
    start(r, nodes, npus, kv);
    if (r->setup_rc != 0) fail_msg("setup failed: %s", r->err);
    if (r->res.outcome != OUTCOME_COMPLETED)
        fail_msg("outcome %s: %s", engine_outcome_name(r->res.outcome), r->res.message);
    r->check_rc = dispatch_check(r->e, r->st, r->msg, sizeof r->msg);
    if (r->check_rc != 0) fail_msg("check failed: %s", r->msg);
}

static void expect_pass(int nodes, int npus, const char *const *kv) {
    run r;
    run_passing(&r, nodes, npus, kv);
    finish(&r);
}

/* Fewest laps any RDMA ring and any HCCS ring that carries tokens made. */
static void min_laps(const dispatch_plan *p, int64_t *rdma, int64_t *hccs) {
    const dispatch_shape *sh = &p->sh;
    *rdma = *hccs = INT64_MAX;
    for (int s = 0; s < sh->num_ranks; s++)
        for (int c = 0; c < sh->channels; c++)
            for (int n = 0; n < sh->nodes; n++) {
                int64_t laps = dispatch_ring_total(p, s, c, n) / sh->rdma_ring_tokens;
                if (laps < *rdma) *rdma = laps;
            }
    for (int d = 0; d < sh->num_ranks; d++)
        for (int c = 0; c < sh->channels; c++)
            for (int l = 0; l < sh->npus; l++) {
                int64_t laps = dispatch_hccs_ring_total(p, d, c, l) / sh->hccs_ring_tokens;
                if (laps < *hccs) *hccs = laps;
            }
}

/* ------------------------------------------------------------ shapes */

static void test_two_nodes_rings_wrap_hundreds_of_times(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "640", "hidden", "40", "topk", "2", "experts", "8",
                        "channels", "1", "rdma-chunk", "2", "rdma-send-chunk", "1",
                        "credit-batch", "1", "hccs-chunk", "2", "hccs-send-chunk", "1", NULL};
    run r;
    run_passing(&r, 2, 2, kv);
    int64_t rdma, hccs;
    min_laps(&r.st->plan, &rdma, &hccs);
    finish(&r);
    if (rdma < 200 || hccs < 200) fail_msg("rings made only %lld / %lld laps", (long long)rdma,
                                           (long long)hccs);
}

static void test_four_nodes_rings_wrap_hundreds_of_times(void **s) {
    (void)s;
    /* Three senders share two channels: the rdma_send_channel_lock path. */
    const char *kv[] = {"tokens", "700", "hidden", "24", "topk", "3", "experts", "16",
                        "channels", "2", "rdma-senders", "3", "rdma-chunk", "1",
                        "rdma-send-chunk", "1", "credit-batch", "1", "hccs-chunk", "2",
                        "hccs-send-chunk", "1", NULL};
    run r;
    run_passing(&r, 4, 2, kv);
    int64_t rdma, hccs;
    min_laps(&r.st->plan, &rdma, &hccs);
    finish(&r);
    if (rdma < 100 || hccs < 100) fail_msg("rings made only %lld / %lld laps", (long long)rdma,
                                           (long long)hccs);
}

static void test_rank_that_receives_nothing(void **s) {
    (void)s;
    /* active-ranks:3 over 2 nodes x 4: ranks 0, 4 and 1 get every token. */
    const char *kv[] = {"tokens", "24", "hidden", "32", "topk", "2", "experts", "16",
                        "routing", "active-ranks:3", NULL};
    run r;
    run_passing(&r, 2, 4, kv);
    int empty = 0;
    for (int d = 0; d < 8; d++) empty += r.st->plan.recv_total[d] == 0;
    int64_t got0 = r.st->plan.recv_total[0], got4 = r.st->plan.recv_total[4];
    finish(&r);
    assert_int_equal(empty, 5);
    assert_true(got0 > 0 && got4 > 0);
}

static void test_rows_with_every_slot_dropped(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "48", "hidden", "24", "topk", "2", "experts", "8",
                        "routing", "drop:0.7", NULL};
    run r;
    run_passing(&r, 2, 2, kv);
    const dispatch_plan *p = &r.st->plan;
    int dropped_rows = 0, kept = 0;
    for (int64_t i = 0; i < p->token_base[4]; i++) {
        int any = 0;
        for (int k = 0; k < 2; k++) any |= p->topk_idx[i * 2 + k] >= 0;
        dropped_rows += !any;
        kept += any;
    }
    finish(&r);
    assert_true(dropped_rows >= 20);
    assert_true(kept >= 20);
}

static void test_single_token(void **s) {
    (void)s;
    const char *one[] = {"tokens", "1", "hidden", "16", "topk", "2", "experts", "8", NULL};
    expect_pass(2, 2, one);
    /* one token in the whole cluster, on a rank of the second node */
    const char *lone[] = {"tokens", "0,0,1,0", "hidden", "16", "topk", "2", "experts", "8", NULL};
    expect_pass(2, 2, lone);
}

static void test_one_token_rings(void **s) {
    (void)s;
    /* Every ring holds one token: each slot is handed back before the next
     * can be written, the setting that exposes lost wakeups. Several
     * forwarder cores per channel (groups of NVL peers). */
    const char *kv[] = {"tokens", "40", "hidden", "32", "topk", "3", "experts", "16",
                        "channels", "2", "rdma-senders", "4", "forwarders", "4",
                        "rdma-chunk", "1", "rdma-send-chunk", "1", "credit-batch", "1",
                        "hccs-chunk", "1", "hccs-send-chunk", "1", NULL};
    expect_pass(2, 4, kv);
    expect_pass(4, 2, kv);
}

static void test_skewed_routing(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "64", "hidden", "32", "topk", "4", "experts", "32",
                        "routing", "zipf:1.5", "rdma-chunk", "4", "rdma-send-chunk", "2",
                        "hccs-chunk", "4", "hccs-send-chunk", "2", NULL};
    run r;
    run_passing(&r, 2, 4, kv);
    int64_t max = 0, sum = 0;
    for (int d = 0; d < 8; d++) {
        sum += r.st->plan.recv_total[d];
        if (r.st->plan.recv_total[d] > max) max = r.st->plan.recv_total[d];
    }
    finish(&r);
    assert_true(max * 8 > 2 * sum);   /* the hottest rank gets over twice its share */
}

static void test_group_limited_routing(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "48", "hidden", "32", "topk", "4", "experts", "32",
                        "routing", "group-limited:2", NULL};
    run r;
    run_passing(&r, 4, 2, kv);
    const dispatch_plan *p = &r.st->plan;
    int max_nodes = 0;
    for (int64_t i = 0; i < p->token_base[8]; i++) {
        int nodes = 0;
        for (int n = 0; n < 4; n++) {
            int hit = 0;
            for (int q = 0; q < 2; q++) hit |= p->is_token_in_rank[i * 8 + n * 2 + q];
            nodes += hit;
        }
        if (nodes > max_nodes) max_nodes = nodes;
    }
    finish(&r);
    assert_int_equal(max_nodes, 2);
}

static void test_fp8_with_scales(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "32", "hidden", "256", "dtype", "fp8", "topk", "3",
                        "experts", "16", "rdma-chunk", "4", "rdma-send-chunk", "2",
                        "hccs-chunk", "3", "hccs-send-chunk", "2", NULL};
    expect_pass(4, 2, kv);
}

static void test_token_counts_differ_per_rank(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "17,0,5,33,2,0,9,1", "hidden", "40", "topk", "2",
                        "experts", "16", "rdma-chunk", "3", "rdma-send-chunk", "2",
                        "credit-batch", "2", NULL};
    expect_pass(2, 4, kv);
}

static void test_default_role_split(void **s) {
    (void)s;
    /* aivNum/4-1, 4, aivNum/4-1, aivNum/4-1, aivNum/4-1 = 48 cores of the
     * 910B2 and 11 channels on 2 nodes x 8 NPUs. */
    const char *kv[] = {"tokens", "40", "hidden", "16", "topk", "4", "experts", "64",
                        "rdma-senders", "0", "rdma-coordinators", "4", "forwarders", "0",
                        "forwarder-coordinators", "0", "hccs-receivers", "0", "dispatches", "1",
                        NULL};
    run r;
    run_passing(&r, 2, 8, kv);
    assert_int_equal(r.st->args.sh.block_dim, 48);
    assert_int_equal(r.st->args.sh.channels, 11);
    finish(&r);
}

/* ------------------------------------------------------------ same bytes */

static void test_same_bytes_under_another_schedule(void **s) {
    (void)s;
    /* Other tie-break permutation and jittered transfers: lock order and
     * arrival order change, the received bytes must not. */
    const char *kv[] = {"tokens", "40", "hidden", "24", "topk", "3", "experts", "16",
                        "channels", "1", "rdma-senders", "3", "rdma-chunk", "2",
                        "rdma-send-chunk", "1", "hccs-chunk", "2", "hccs-send-chunk", "1",
                        "dispatches", "1", NULL};
    run a, b;
    start_seeded(&a, 2, 2, kv, 0, 0.0);
    start_seeded(&b, 2, 2, kv, 7, 0.3);
    assert_int_equal(a.res.outcome, OUTCOME_COMPLETED);
    assert_int_equal(b.res.outcome, OUTCOME_COMPLETED);
    assert_int_equal(dispatch_check(a.e, a.st, a.msg, sizeof a.msg), 0);
    assert_int_equal(dispatch_check(b.e, b.st, b.msg, sizeof b.msg), 0);
    assert_true(a.res.end_time != b.res.end_time);   /* the schedules did differ */
    for (int d = 0; d < 4; d++) {
        uint64_t n = (uint64_t)a.st->plan.recv_total[d] * 48;
        const void *x = engine_gm_host(a.e, a.st->args.recv_x[0][d], n);
        const void *y = engine_gm_host(b.e, b.st->args.recv_x[0][d], n);
        assert_non_null(x);
        assert_non_null(y);
        assert_memory_equal(x, y, n);
    }
    finish(&a);
    finish(&b);
}

/* ------------------------------------------------------------ faults */

static char *report_of(engine *e) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    engine_write_report(e, f);
    fclose(f);
    return buf;
}

static void expect_in(const char *text, const char *needle) {
    if (!strstr(text, needle)) fail_msg("expected '%s' in the report:\n%s", needle, text);
}

/* A line of the report that holds both a and then b. */
static void expect_line(const char *text, const char *a, const char *b) {
    for (const char *p = text; (p = strstr(p, a)); p++) {
        const char *eol = strchr(p, '\n');
        const char *q = strstr(p, b);
        if (q && (!eol || q < eol)) return;
    }
    fail_msg("expected a line with '%s' ... '%s' in the report:\n%s", a, b, text);
}

static const char *const fault_shape[] = {
    "tokens", "40", "hidden", "32", "topk", "2", "experts", "8", "channels", "1",
    "rdma-chunk", "4", "rdma-send-chunk", "2", "credit-batch", "3", "hccs-chunk", "4",
    "hccs-send-chunk", "2", NULL};

static void run_fault(run *r, int nodes, const char *fault) {
    const char *kv[64];
    int n = 0;
    for (int i = 0; fault_shape[i]; i++) kv[n++] = fault_shape[i];
    kv[n++] = "inject";
    kv[n++] = fault;
    kv[n] = NULL;
    start(r, nodes, 2, kv);
    if (r->setup_rc) fail_msg("setup failed: %s", r->err);
}

static void test_credit_leak_hangs(void **s) {
    (void)s;
    for (int nodes = 2; nodes <= 4; nodes += 2) {
        run r;
        run_fault(&r, nodes, "credit-leak");
        assert_int_equal(r.res.outcome, OUTCOME_DEADLOCK);
        char *rep = report_of(r.e);
        /* the source waits for credits that never come back */
        expect_line(rep, "RDMACoordinator", "blocked on rdma_channel[c0][");
        expect_line(rep, "RDMACoordinator", "].head >= ");
        expect_in(rep, "last written by");
        expect_in(rep, "ForwarderCoordinator");
        expect_in(rep, "cached_head=");
        expect_in(rep, "credits=");
        free(rep);
        finish(&r);
    }
}

static void test_lost_tail_hangs(void **s) {
    (void)s;
    for (int nodes = 2; nodes <= 4; nodes += 2) {
        run r;
        run_fault(&r, nodes, "lost-tail");
        assert_int_equal(r.res.outcome, OUTCOME_DEADLOCK);
        char *rep = report_of(r.e);
        /* rank 0's first remote ring: the forwarder waits for a tail that
         * stays one update short, the senders for credits */
        char want[96];
        snprintf(want, sizeof want, "blocked on rdma_channel[c0][0->%d].tail > ",
                 r.st->args.inject_n * 2);
        expect_line(rep, "RDMA2HCCSForwarder", want);
        expect_in(rep, "RDMASender");
        expect_in(rep, "HCCSReceiver");
        expect_in(rep, "head=");
        expect_in(rep, "tail=");
        free(rep);
        finish(&r);
    }
}

/* ------------------------------------------------------------ --notify a2 */

static int32_t read32(engine *e, gm_t p) {
    int32_t v = 0;
    assert_int_equal(engine_gm_read(e, p, &v, 4), 0);
    return v;
}

/* Every rank ends up with every rank's blob (its expert counts), the data
 * phase still passes the check (its prefixes came from the blobs), and the
 * per-row index pass wrote A2's destination offsets: for this rank's local
 * expert le and source s, the rows of the experts before it, then of the
 * sources before s, then the token's place. */
static void test_a2_notify_all_gathers_the_padded_blob(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "40", "hidden", "64", "topk", "3", "experts", "16",
                        "notify", "a2", "dispatches", "1", "rdma-senders", "3",
                        "forwarders", "3", "hccs-receivers", "4", NULL};
    run r;
    run_passing(&r, 2, 4, kv);
    const dispatch_args *a = &r.st->args;
    const dispatch_a2_layout *al = &a->al;
    int R = 8, E = 16, L = 2, M = DISPATCH_A2_MAX_BS;
    for (int d = 0; d < R; d++)
        for (int src = 0; src < R; src++)
            for (int e = 0; e < E; e++)
                assert_int_equal(read32(r.e, dispatch_a2_blob(a, d, src, al->per_expert + (uint32_t)e)),
                                 read32(r.e, gm_add(a->a2_send[src], (int64_t)e * 4)));
    int d = 5, rows = 0;
    for (int le = 0; le < L; le++) {
        int e = d * L + le;
        for (int src = 0; src < R; src++) {
            int n = read32(r.e, dispatch_a2_blob(a, d, src, al->per_expert + (uint32_t)e));
            for (int t = 0; t < n; t++) {
                uint64_t at = ((uint64_t)e * R + src) * M + (uint64_t)t;
                assert_int_equal(read32(r.e, gm_add(a->a2_scratch[d], (int64_t)(al->dst_off + at * 4))),
                                 rows + t);
            }
            rows += n;
        }
    }
    assert_true(rows > 0);
    finish(&r);
}

static void test_a2_notify_refuses_what_a2_does_not_run(void **s) {
    (void)s;
    static const struct {
        int nodes;
        const char *tokens, *notify, *needle;
    } cases[] = {
        {1, "16", "a2", "--notify a2 with --nodes 1"},
        {4, "16", "a2", "--notify a2 with --nodes 4"},
        {2, "4097", "a2", "--notify a2 with --tokens 4097"},
        {2, "16", "nccl", "--notify nccl: expected deepep, a2 or a2-pre211"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *kv[] = {"tokens", cases[i].tokens, "notify", cases[i].notify, NULL};
        kernel_opts o;
        make_opts(&o, kv);
        dispatch_shape sh;
        char err[512] = "";
        assert_int_equal(dispatch_shape_from_opts(&o, cases[i].nodes, 8, 48, &sh, err, sizeof err), -1);
        if (!strstr(err, cases[i].needle)) fail_msg("case %zu: %s", i, err);
    }
}

/* ------------------------------------------------------------ the check itself */

static void test_check_catches_corruption(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "12", "hidden", "20", "topk", "2", "experts", "8", NULL};
    run r;
    run_passing(&r, 2, 2, kv);
    const dispatch_args *a = &r.st->args;
    const dispatch_plan *p = &r.st->plan;
    assert_true(p->recv_total[3] > 2);
    /* one byte of a received row (second dispatch) */
    uint8_t *x = engine_gm_host(r.e, gm_add(a->recv_x[1][3], 2 * 40), 40);
    x[7] ^= 0x40;
    assert_int_equal(dispatch_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "dispatch 2, rank 3 recv row 2")) fail_msg("message: %s", r.msg);
    x[7] ^= 0x40;
    /* two rows swapped: the tag names the token that landed instead */
    uint8_t tmp[40];
    uint8_t *row0 = engine_gm_host(r.e, a->recv_x[0][3], 80);
    memcpy(tmp, row0, 40);
    memcpy(row0, row0 + 40, 40);
    memcpy(row0 + 40, tmp, 40);
    assert_int_equal(dispatch_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "the row holds token")) fail_msg("message: %s", r.msg);
    memcpy(row0 + 40, row0, 40);
    memcpy(row0, tmp, 40);
    /* a top-k index not rewritten to a local id */
    assert_true(p->recv_total[1] > 0);
    int32_t *idx = engine_gm_host(r.e, a->recv_topk_idx[0][1], 8);
    int32_t saved = idx[0];
    idx[0] = saved + 100;
    assert_int_equal(dispatch_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "recv_topk_idx[0]")) fail_msg("message: %s", r.msg);
    idx[0] = saved;
    /* a layout count */
    int32_t *cnt = engine_gm_host(r.e, a->layout_counts[2], 4);
    cnt[0]++;
    assert_int_equal(dispatch_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "rank 2: num_tokens_per_rank[0]")) fail_msg("message: %s", r.msg);
    cnt[0]--;
    /* a ring head that says more was consumed than sent */
    int64_t *head = engine_gm_host(r.e, a->hccs_channel_head, 4);
    ((int32_t *)head)[0] += 1;
    assert_int_equal(dispatch_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "hccs_channel[c0]")) fail_msg("message: %s", r.msg);
    ((int32_t *)head)[0] -= 1;
    assert_int_equal(dispatch_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    finish(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_nodes_rings_wrap_hundreds_of_times),
        cmocka_unit_test(test_four_nodes_rings_wrap_hundreds_of_times),
        cmocka_unit_test(test_rank_that_receives_nothing),
        cmocka_unit_test(test_rows_with_every_slot_dropped),
        cmocka_unit_test(test_single_token),
        cmocka_unit_test(test_one_token_rings),
        cmocka_unit_test(test_skewed_routing),
        cmocka_unit_test(test_group_limited_routing),
        cmocka_unit_test(test_fp8_with_scales),
        cmocka_unit_test(test_token_counts_differ_per_rank),
        cmocka_unit_test(test_default_role_split),
        cmocka_unit_test(test_same_bytes_under_another_schedule),
        cmocka_unit_test(test_credit_leak_hangs),
        cmocka_unit_test(test_lost_tail_hangs),
        cmocka_unit_test(test_check_catches_corruption),
        cmocka_unit_test(test_a2_notify_all_gathers_the_padded_blob),
        cmocka_unit_test(test_a2_notify_refuses_what_a2_does_not_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

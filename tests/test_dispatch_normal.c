/*
 * test_dispatch_normal.c - dispatch-normal (A2's CamMoeDispatchNormal) run
 * through the engine and its own check, on the shapes where its pieces
 * bite: one token, empty (expert, rank) segments and cores without slots
 * or statuses, rows that are not 32 B multiples, dropped slots, few cores
 * with uneven shares and several id chunks, all AIV cores of either chip
 * by default; A2's row geometry at hidden 7168, the notify's sendOffset,
 * that the rows cross HCCS as the owners' reads, determinism, the fault,
 * and that the check names a bad expandX row, expandIdx triple, leftover
 * status, dataState word and guard byte.
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
#include "kernels/dispatch_normal.h"
#include "kernels/kernels.h"
#include "tests/support.h"

#define DN "dispatch-normal"

typedef struct run {
    engine *e;
    dispatch_normal_state *st;
    engine_result res;
    char err[1024];
    char msg[2048];
} run;

/* Bytes of the transfers that cross HCCS, by the pipe that issues them. */
typedef struct traffic {
    uint64_t mte2, mte3;
} traffic;

static void count_remote(void *ctx, const engine_event *ev) {
    traffic *t = ctx;
    if (ev->kind != EV_XFER_ISSUE || ev->peer == ev->rank) return;
    if (ev->pipe == PIPE_MTE2) t->mte2 += ev->len;
    if (ev->pipe == PIPE_MTE3) t->mte3 += ev->len;
}

/* Sets up and runs on npus ranks of chip, counting HCCS traffic into t
 * unless it is NULL; does not check. */
/* Bytes of the transfers that cross HCCS, by the pipe that issues them,
 * and what the AICPU posts (BatchWrite items): count, and bytes to another
 * node. */
typedef struct traffic2 {
    traffic hccs;
    uint64_t items, rdma_bytes, rdma_items;
    int npus;
} traffic2;

static void count_two_nodes(void *ctx, const engine_event *ev) {
    traffic2 *t = ctx;
    count_remote(&t->hccs, ev);
    if (ev->kind != EV_XFER_ISSUE || ev->pipe != PIPE_AICPU) return;
    t->items++;
    if (ev->peer / t->npus != ev->rank / t->npus) {
        t->rdma_items++;
        t->rdma_bytes += ev->len;
    }
}

static void start_nodes(run *r, engine_chip chip, int nodes, int npus, const char *const *kv,
                        engine_observer *obs) {
    memset(r, 0, sizeof *r);
    const kernel_desc *d = support_kernel(DN);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    cfg.chip = chip;
    cfg.watchdog_ps = 0;
    assert_int_equal(engine_create(&cfg, &r->e, r->err, sizeof r->err), ENGINE_OK);
    kernel_opts o;
    support_opts(d, &o, kv);
    void *state = NULL;
    if (d->setup(r->e, &o, &state, r->err, sizeof r->err) != 0) fail_msg("setup: %s", r->err);
    r->st = state;
    if (obs) engine_set_observer(r->e, obs);
    assert_int_equal(engine_run(r->e, &r->res, r->err, sizeof r->err), ENGINE_OK);
    if (r->res.outcome != OUTCOME_COMPLETED)
        fail_msg("outcome %s: %s", engine_outcome_name(r->res.outcome), r->res.message);
}

static void start_counting(run *r, engine_chip chip, int npus, const char *const *kv,
                           traffic *t) {
    engine_observer obs = {.ctx = t, .on_event = count_remote};
    start_nodes(r, chip, 1, npus, kv, t ? &obs : NULL);
}

static void start_on(run *r, engine_chip chip, int npus, const char *const *kv) {
    start_counting(r, chip, npus, kv, NULL);
}

static void finish(run *r) {
    dispatch_normal_destroy(r->st);
    if (r->e) engine_destroy(r->e);
    r->st = NULL;
    r->e = NULL;
}

static int check(run *r) { return dispatch_normal_check(r->e, r->st, r->msg, sizeof r->msg); }

static void expect_pass_on(engine_chip chip, int npus, const char *const *kv) {
    run r;
    start_on(&r, chip, npus, kv);
    if (check(&r) != 0) {
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        fail_msg("check failed: %s", m);
    }
    finish(&r);
}

static void expect_pass(int npus, const char *const *kv) { expect_pass_on(CHIP_910B2, npus, kv); }

static void test_small_shapes(void **s) {
    (void)s;
    /* one token; 3 tokens x 2 slots over 64 experts (most cores have no
     * slot, most segments are empty); 14 B and 200 B rows */
    const char *one[] = {"tokens", "1", "hidden", "64", "topk", "2", "experts", "8", NULL};
    expect_pass(2, one);
    const char *sparse[] = {"tokens", "3", "hidden", "48", "topk", "2", "experts", "64", NULL};
    expect_pass(4, sparse);
    const char *hidden[] = {"7", "100"};
    for (int h = 0; h < 2; h++) {
        const char *kv[] = {"tokens", "24", "hidden", hidden[h], "topk", "3", "experts", "12",
                            NULL};
        expect_pass(3, kv);
    }
}

static void test_zipf_and_dropped_slots(void **s) {
    (void)s;
    const char *zipf[] = {"tokens", "48", "hidden", "136", "topk", "8", "experts", "64",
                          "routing", "zipf:1.2", NULL};
    expect_pass(8, zipf);
    const char *drop[] = {"tokens", "40", "hidden", "72", "topk", "4", "experts", "16",
                          "routing", "drop:0.3", NULL};
    run r;
    start_on(&r, CHIP_910B2, 4, drop);
    assert_int_equal(check(&r), 0);
    int dropped = 0;
    for (int i = 0; i < 4 * 40 * 4; i++) dropped += r.st->plan.expert_ids[i] < 0;
    finish(&r);
    assert_true(dropped > 20);
}

static void test_few_cores_uneven_shares(void **s) {
    (void)s;
    /* 1 core walks all 2400 slots (two id chunks) and all 16 statuses; 5
     * and 7 split slots and statuses unevenly. */
    const char *cores[] = {"1", "5", "7"};
    for (int c = 0; c < 3; c++) {
        const char *kv[] = {"tokens", "300", "hidden", "40", "topk", "8", "experts", "16",
                            "cores", cores[c], NULL};
        expect_pass(2, kv);
    }
}

static void test_all_aiv_cores_by_default(void **s) {
    (void)s;
    /* 8 experts over 48 or 40 cores: most cores have no status to send or
     * wait for, and still meet the others in both SyncAlls. */
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

static void test_geometry_matches_a2(void **s) {
    (void)s;
    /* Init() at h 7168: hUBAlignSize 14336, + 32 B, + the triple = 14380 B
     * moved per row, 14400 B of UB, 29 x 512 B of window. */
    dnormal_geometry g = dispatch_normal_geometry(7168);
    assert_int_equal(g.row_bytes, 14336);
    assert_int_equal(g.idx_offset, 14368);
    assert_int_equal(g.share_bytes, 14380);
    assert_int_equal(g.share_ub_bytes, 14400);
    assert_int_equal(g.window_stride, 14848);
    g = dispatch_normal_geometry(7);
    assert_int_equal(g.idx_offset, 64);
    assert_int_equal(g.window_stride, 512);
}

static void test_send_offsets(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "37", "hidden", "9", "topk", "3", "experts", "12", "routing",
                        "zipf:1", NULL};
    kernel_opts o;
    support_opts(support_kernel(DN), &o, kv);
    combine_shape sh;
    char err[256];
    assert_int_equal(dispatch_normal_shape_from_opts(&o, 1, 4, 48, &sh, err, sizeof err), 0);
    combine_plan p;
    assert_int_equal(combine_plan_build(&sh, &p, err, sizeof err), 0);
    int32_t *off = dispatch_normal_send_offsets(&p);
    assert_non_null(off);
    int R = 4, E = 12, TK = 37 * 3;
    for (int src = 0; src < R; src++) {
        /* each live slot lands at sendOffset[e] + sendTokenIdx, all distinct, dense */
        char *seen = calloc((size_t)TK, 1);
        for (int i = 0; i < TK; i++) {
            int e = p.expert_ids[src * TK + i];
            int row = off[src * E + e] + p.expand_idx[src * TK + i];
            assert_true(row >= 0 && row < TK);
            assert_int_equal(seen[row], 0);
            seen[row] = 1;
        }
        free(seen);
        for (int e = 1; e < E; e++) assert_true(off[src * E + e] >= off[src * E + e - 1]);
    }
    free(off);
    combine_plan_free(&p);
}

/* The rows cross HCCS as the owners' MTE2 reads of the share windows,
 * row and triple; the sources write only their statuses over HCCS. */
static void test_rows_cross_as_reads(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "16", "hidden", "256", "topk", "4", "experts", "8", NULL};
    run r;
    traffic t = {0, 0};
    start_counting(&r, CHIP_910B2, 2, kv, &t);
    assert_int_equal(check(&r), 0);
    const combine_plan *p = &r.st->plan;
    uint64_t remote = 0;
    for (int q = 0; q < 2; q++)
        for (int64_t row = 0; row < p->x_rows[q]; row++)
            remote += p->x_src_info[(p->x_row_base[q] + row) * 3] != q;
    assert_true(remote > 0);
    assert_int_equal(t.mte2, remote * r.st->args.share_bytes);
    assert_int_equal(t.mte3, 2 * 4 * DNORMAL_STATE_BYTES);   /* 4 remote experts a rank */
    /* the windows hold every source's rows with their triples */
    const dispatch_normal_args *a = &r.st->args;
    for (int src = 0; src < 2; src++)
        for (int i = 0; i < 16 * 4; i++) {
            int e = p->expert_ids[src * 64 + i];
            int64_t row = r.st->send_offset[src * 8 + e] + p->expand_idx[src * 64 + i];
            int32_t triple[3];
            assert_int_equal(npurr_gm_read(r.e, gm_add(gm_on_rank(a->window_base, src),
                                                     row * a->window_stride + a->idx_offset),
                                         triple, 12), 0);
            assert_int_equal(triple[0], src);
            assert_int_equal(triple[1], i / 4);
            assert_int_equal(triple[2], i % 4);
        }
    finish(&r);
}

static void test_deterministic(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "20", "hidden", "50", "topk", "3", "experts", "12", "cores",
                        "6", NULL};
    run a, b;
    start_on(&a, CHIP_910B2, 3, kv);
    assert_int_equal(check(&a), 0);
    uint64_t t = a.res.end_time, n = a.res.events, stall = a.res.stall_ps;
    finish(&a);
    start_on(&b, CHIP_910B2, 3, kv);
    assert_int_equal(check(&b), 0);
    assert_int_equal(b.res.end_time, t);
    assert_int_equal(b.res.events, n);
    assert_int_equal(b.res.stall_ps, stall);
    finish(&b);
}

static void test_no_status_wait_fails_the_check(void **s) {
    (void)s;
    /* The owners clear their slots at once; the statuses arrive later and
     * stay set. */
    const char *kv[] = {"tokens", "32", "hidden", "100", "topk", "4", "experts", "16", "inject",
                        "no-status-wait", NULL};
    run r;
    start_on(&r, CHIP_910B2, 4, kv);
    int rc = check(&r);
    char m[2048];
    snprintf(m, sizeof m, "%s", r.msg);
    finish(&r);
    assert_int_equal(rc, 1);
    if (!strstr(m, "the owner did not wait for it")) fail_msg("message: %s", m);
}

static void test_check_catches(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "8", "hidden", "7", "topk", "2", "experts", "4", NULL};
    run r;
    start_on(&r, CHIP_910B2, 2, kv);
    assert_int_equal(check(&r), 0);
    const dispatch_normal_args *a = &r.st->args;
    assert_true(r.st->plan.x_rows[1] >= 2);
    /* a byte of rank 1's expandX row 1, the row zeroed, another row's bytes */
    uint8_t *rows = engine_gm_host(r.e, a->expand_x[1], 28);
    assert_non_null(rows);
    uint8_t saved[14];
    memcpy(saved, rows + 14, 14);
    rows[14 + 9] ^= 0x5a;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 1 expandX row 1 ")) fail_msg("message: %s", r.msg);
    memset(rows + 14, 0, 14);
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "never arrived")) fail_msg("message: %s", r.msg);
    const int32_t *i0 = r.st->plan.x_src_info + r.st->plan.x_row_base[1] * 3;
    if (i0[0] != i0[3] || i0[1] != i0[4]) {   /* rows 0 and 1 hold different tokens */
        memcpy(rows + 14, rows, 14);
        assert_int_equal(check(&r), 1);
        if (!strstr(r.msg, "the wrong row")) fail_msg("message: %s", r.msg);
    }
    memcpy(rows + 14, saved, 14);
    /* a triple */
    int32_t *idx = engine_gm_host(r.e, a->expand_idx[0], 12);
    assert_non_null(idx);
    idx[2] ^= 1;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 0 expandIdx row 0")) fail_msg("message: %s", r.msg);
    idx[2] ^= 1;
    /* a status left set: local expert 1 from rank 0 on rank 1 */
    uint8_t *status = engine_gm_host(r.e, gm_add(gm_on_rank(a->state_base, 1), 2 * 32 + 3), 1);
    assert_non_null(status);
    status[0] = 0x3f;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 1 status of local expert 1 from rank 0 is still set"))
        fail_msg("message: %s", r.msg);
    status[0] = 0;
    /* a dataState word not toggled */
    int32_t *ds = engine_gm_host(r.e, gm_add(a->data_state[0], 3 * 512), 4);
    assert_non_null(ds);
    *ds = 0;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 0 core 3")) fail_msg("message: %s", r.msg);
    *ds = 1;
    /* a byte just past rank 1's share window */
    uint8_t *guard = engine_gm_host(r.e, gm_add(gm_on_rank(a->window_base, 1), 8 * 2 * 512), 1);
    assert_non_null(guard);
    guard[0] ^= 1;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "dispatch.window on rank 1")) fail_msg("message: %s", r.msg);
    guard[0] ^= 1;
    assert_int_equal(check(&r), 0);
    finish(&r);
}

/* --nodes 2 (DispatchNormalA2): the check passes on 2 x 4, 2 x 2 with
 * dropped slots and few cores, and 2 x 8 (A2's 8-rank servers); each rank
 * posts one BatchWrite of 2N items, and the rows it sends the other server
 * cross in one item of 32 B + rows * tokenStructLen. */
static int check_two_nodes(int npus, const char *const *kv, traffic2 *t) {
    run r;
    memset(t, 0, sizeof *t);
    t->npus = npus;
    engine_observer obs = {.ctx = t, .on_event = count_two_nodes};
    start_nodes(&r, CHIP_910B2, 2, npus, kv, &obs);
    int rc = check(&r);
    if (rc) {
        char m[2048];
        snprintf(m, sizeof m, "%s", r.msg);
        finish(&r);
        fail_msg("check failed: %s", m);
    }
    /* what the other server gets: every source's block for it */
    const combine_plan *p = &r.st->plan;
    uint64_t want = 0;
    int32_t *idx = malloc(sizeof(int32_t) * (size_t)p->sh.tokens * 2), cnt[2];
    assert_non_null(idx);
    for (int s = 0; s < p->sh.num_ranks; s++) {
        dispatch_normal_a2l_source_tables(p, s, idx, cnt);
        want += DNL_TOKEN_COUNT_SIZE + (uint64_t)cnt[1 - s / npus] * r.st->args.struct_bytes;
    }
    free(idx);
    int R = p->sh.num_ranks;
    finish(&r);
    assert_int_equal(t->items, (uint64_t)R * 4);
    assert_int_equal(t->rdma_items, (uint64_t)R * 2);
    assert_int_equal(t->rdma_bytes, want + (uint64_t)R * UB_ALIGN);
    return rc;
}

static void test_two_nodes(void **s) {
    (void)s;
    traffic2 t;
    const char *a[] = {"tokens", "40", "hidden", "64", "experts", "16", NULL};
    check_two_nodes(4, a, &t);
    /* the rows pulled from local peers are whole token structs */
    assert_true(t.hccs.mte2 > 0);
    assert_int_equal(t.hccs.mte2 % (64 * 2 + 4 * 8 * 4), 0);
    const char *b[] = {"tokens", "7", "hidden", "32", "topk", "3", "experts", "8", "routing",
                       "drop:0.3", "cores", "2", NULL};
    check_two_nodes(2, b, &t);
    const char *c[] = {"tokens", "16", "hidden", "16", "topk", "4", "experts", "32", "routing",
                       "group-limited", "cores", "9", NULL};
    check_two_nodes(8, c, &t);
}

/* --nodes 2 --inject no-status-wait: WaitWindow is skipped, Ipc2Out reads
 * the other server's rows before they land. */
static void test_two_nodes_no_status_wait_fails(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "40", "hidden", "64", "experts", "16", "inject",
                        "no-status-wait", NULL};
    run r;
    start_nodes(&r, CHIP_910B2, 2, 4, kv, NULL);
    int rc = check(&r);
    char m[2048];
    snprintf(m, sizeof m, "%s", r.msg);
    finish(&r);
    assert_int_equal(rc, 1);
    if (!strstr(m, "never arrived") && !strstr(m, "did not wait for it"))
        fail_msg("message: %s", m);
}

/* The --nodes 2 check names a wrong weight, a status left set, bufferChosen
 * and an IPC flag. */
static void test_two_nodes_check_catches(void **s) {
    (void)s;
    const char *kv[] = {"tokens", "8", "hidden", "16", "topk", "2", "experts", "8", NULL};
    run r;
    start_nodes(&r, CHIP_910B2, 2, 2, kv, NULL);
    assert_int_equal(check(&r), 0);
    const dispatch_normal_args *a = &r.st->args;
    assert_true(r.st->plan.x_rows[1] >= 1);
    uint8_t *w = engine_gm_host(r.e, a->expand_scales[1], 4);
    assert_non_null(w);
    w[1] ^= 0x40;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 1 expandScales row 0")) fail_msg("message: %s", r.msg);
    w[1] ^= 0x40;
    uint8_t *st = engine_gm_host(
        r.e, gm_add(gm_on_rank(a->win_in_base, 3), (int64_t)(dnl_status_at(a) + DNL_STATE_OFFSET)), 1);
    assert_non_null(st);
    st[0] = 0xff;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 3 status from server 1 is still set")) fail_msg("message: %s", r.msg);
    st[0] = 0;
    int32_t *chosen = engine_gm_host(r.e, gm_add(gm_on_rank(a->win_in_base, 2),
                                                 (int64_t)dnl_chosen_at(a)), 4);
    assert_non_null(chosen);
    *chosen = 0;
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 2: bufferChosen is 0")) fail_msg("message: %s", r.msg);
    *chosen = 1;
    int64_t *flag = engine_gm_host(r.e, gm_add(gm_on_rank(a->ipc_base, 0), DNL_IPC_FLAG_BYTES), 8);
    assert_non_null(flag);
    *flag = 3;   /* stuck at the first barrier */
    assert_int_equal(check(&r), 1);
    if (!strstr(r.msg, "rank 0: IPC flag from local rank 1 is 3")) fail_msg("message: %s", r.msg);
    *flag = 4;
    assert_int_equal(check(&r), 0);
    finish(&r);
}

static void expect_setup_error(int nodes, const char *const *kv, const char *needle) {
    support_expect_setup_error(support_kernel(DN), nodes, 2, kv, needle);
}

static void test_bad_options(void **s) {
    (void)s;
    const char *small[] = {"tokens", "4", "hidden", "8", "experts", "8", "topk", "2", NULL};
    expect_setup_error(3, small, "dispatch-normal");
    expect_setup_error(3, small, "--nodes must be 1..2");
    /* --nodes 2: the ids behind the row stay 32 B aligned; a core per local rank */
    const char *odd[] = {"tokens", "4", "hidden", "24", "experts", "8", "topk", "2", NULL};
    expect_setup_error(2, odd, "--hidden 24");
    const char *one_core[] = {"tokens", "4", "hidden", "16", "experts", "8", "topk", "2",
                              "cores", "1", NULL};
    expect_setup_error(2, one_core, "--cores 1");
    const char *cores[] = {"cores", "49", NULL};
    expect_setup_error(1, cores, "--cores");
    const char *hidden[] = {"hidden", "60000", NULL};
    expect_setup_error(1, hidden, "--hidden 60000");
    const char *inject[] = {"inject", "status-first", NULL};
    expect_setup_error(1, inject, "--inject status-first");
}

/* What `npurr layout -k d` prints for o on nodes x 4 NPUs. */
static char *layout_text(const kernel_desc *d, const kernel_opts *o, int nodes, char *err,
                         size_t errlen) {
    return support_layout_text(d, o, nodes, 4, err, errlen);
}

static void test_layout_and_estimate(void **s) {
    (void)s;
    const kernel_desc *d = support_kernel(DN);
    const char *kv[] = {"tokens", "16", "hidden", "100", "experts", "16", "topk", "4", NULL};
    kernel_opts o;
    support_opts(d, &o, kv);
    char err[512];
    char *buf = layout_text(d, &o, 1, err, sizeof err);
    assert_non_null(buf);
    assert_non_null(strstr(buf, "512 B window stride"));
    assert_non_null(strstr(buf, "\n3 "));
    assert_non_null(strstr(buf, "cores per rank: 48 AIV"));
    free(buf);
    assert_null(layout_text(d, &o, 3, err, sizeof err));
    assert_non_null(strstr(err, "--nodes"));
    /* --nodes 2: DispatchNormalA2's windows, one line per rank of 8 */
    const char *kv2[] = {"tokens", "40", "hidden", "64", "experts", "16", NULL};
    support_opts(d, &o, kv2);
    buf = layout_text(d, &o, 2, err, sizeof err);
    if (!buf) fail_msg("layout: %s", err);
    assert_non_null(strstr(buf, "DispatchNormalA2"));
    assert_non_null(strstr(buf, "256 B token structs"));
    assert_non_null(strstr(buf, "\n7 "));
    assert_non_null(strstr(buf, "core 0 posts 4 BatchWrite items"));
    free(buf);
    support_opts(d, &o, kv);
    kernel_estimate ref, full;
    engine_config ref_cfg = support_config(1, 4, PAYLOAD_REF);
    engine_config full_cfg = support_config(1, 4, PAYLOAD_FULL);
    assert_int_equal(d->estimate(&o, support_topo(&ref_cfg), &ref, err, sizeof err), 0);
    assert_int_equal(d->estimate(&o, support_topo(&full_cfg), &full, err, sizeof err), 0);
    /* full payload also holds the windows and expandX: 16 x 4 slots a rank */
    assert_true(full.gm_bytes >= ref.gm_bytes + 4ull * 16 * 4 * (512 + 200));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_shapes),
        cmocka_unit_test(test_zipf_and_dropped_slots),
        cmocka_unit_test(test_few_cores_uneven_shares),
        cmocka_unit_test(test_all_aiv_cores_by_default),
        cmocka_unit_test(test_geometry_matches_a2),
        cmocka_unit_test(test_send_offsets),
        cmocka_unit_test(test_rows_cross_as_reads),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_no_status_wait_fails_the_check),
        cmocka_unit_test(test_check_catches),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_two_nodes),
        cmocka_unit_test(test_two_nodes_no_status_wait_fails),
        cmocka_unit_test(test_two_nodes_check_catches),
        cmocka_unit_test(test_layout_and_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

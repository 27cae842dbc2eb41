/*
 * test_fullmesh.c - the fullmesh dispatch/combine kernel (seed 002) through
 * the engine and its own check: 1 node of 2 and 4 ranks (BatchWrite over
 * HCCS) and 2 nodes (RDMA), one BatchWrite task per destination per op,
 * the flags and bufferChosen left as the double buffer implies; one token,
 * experts and rank pairs with no tokens, rows that are not 32 B multiples,
 * fewer and more cores than ranks; the no-double-buffer fault caught both
 * ways the seed predicts (wrong data, lost flag); the check catching
 * corrupted outputs; bad options; layout. --dtype int8: the device's
 * quantize/dequantize pair against the CPU reference, int8 runs on 1 and
 * 2 nodes with smaller dispatched rows, the check catching a wrong scale.
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
#include "kernels/fullmesh.h"
#include "kernels/kernels.h"
#include "tests/support.h"

typedef struct tally {
    int npus_per_node;
    int64_t batch_tasks;        /* BatchWrite tasks issued */
    int64_t batch_tasks_rdma;   /* of which to another node */
    uint64_t batch_bytes;       /* bytes they moved */
} tally;

static void on_event(void *ctx, const engine_event *ev) {
    tally *t = ctx;
    if (ev->kind != EV_XFER_ISSUE || ev->sub != XFER_BATCHWRITE) return;
    t->batch_tasks++;
    t->batch_bytes += ev->len;
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
                                                                    (uint64_t)dispatched * a->win_row_bytes, UB_ALIGN))),
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
static const char *const overwrite_kv[] = {"tokens", "64", "hidden", "2048", "topk", "2",
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

/* ------------------------------------------------------------ --dtype int8 */

/* The device's quant pair on one core: x (n bf16 or f32) quantized into
 * q (n int8 + n / 128 scales), then dequantized times w into y (f32). */
typedef struct quant_args {
    gm_t x, q, y;
    int dtype;
    uint32_t n;
    float w;
} quant_args;

static void k_quant(const void *p) {
    const quant_args *a = p;
    uint32_t xb = a->n * (a->dtype == DT_FLOAT ? 4u : 2u), qb = dev_quant_int8_bytes(a->n, 128);
    local_t x = AllocUB(xb), q = AllocUB((qb + 31) / 32 * 32), y = AllocUB(a->n * 4);
    DataCopy(x, a->x, xb);
    SetFlag(MTE2_V, 0);
    WaitFlag(MTE2_V, 0);
    VecQuantInt8(q, x, a->dtype, a->n, 128);
    VecDequantInt8(y, q, a->w, a->n, 128);
    SetFlag(V_MTE3, 0);
    WaitFlag(V_MTE3, 0);
    DataCopyPadOut(a->q, q, qb);
    DataCopy(a->y, y, a->n * 4);
}

typedef struct vec_len {
    uint64_t quant, dequant;   /* bytes of the first two vector ops */
    int seen;
} vec_len;

static void on_vec(void *ctx, const engine_event *ev) {
    vec_len *v = ctx;
    if (ev->kind != EV_XFER_ISSUE || ev->sub != XFER_VEC) return;
    if (v->seen == 0) v->quant = ev->len;
    if (v->seen == 1) v->dequant = ev->len;
    v->seen++;
}

/* Runs k_quant on x; returns 0 or the fault message in msg. */
static int run_quant(const uint16_t *x, int n, float w, int8_t *q, float *scales, float *y,
                     vec_len *vl, char *msg, size_t msglen) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = 1;
    engine *e;
    char err[512];
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    quant_args a = {.dtype = DT_BF16, .n = (uint32_t)n, .w = w};
    uint32_t qb = dev_quant_int8_bytes((uint32_t)n, 128);
    assert_int_equal(engine_gm_alloc(e, 0, (uint64_t)n * 2, "x", &a.x, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, qb, "q", &a.q, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, (uint64_t)n * 4, "y", &a.y, err, sizeof err), ENGINE_OK);
    memcpy(engine_gm_host(e, a.x, (uint64_t)n * 2), x, (size_t)n * 2);
    assert_int_equal(engine_launch(e, "quant", k_quant, &a, 1, CORE_AIV, err, sizeof err), ENGINE_OK);
    engine_observer obs = {.ctx = vl, .on_event = on_vec};
    engine_set_observer(e, &obs);
    engine_result res;
    assert_int_equal(engine_run(e, &res, err, sizeof err), ENGINE_OK);
    int rc = res.outcome == OUTCOME_COMPLETED ? 0 : 1;
    snprintf(msg, msglen, "%s", res.message);
    if (!rc) {
        const uint8_t *hq = engine_gm_host(e, a.q, qb);
        memcpy(q, hq, (size_t)n);
        memcpy(scales, hq + n, (size_t)n / 128 * 4);
        memcpy(y, engine_gm_host(e, a.y, (uint64_t)n * 4), (size_t)n * 4);
    }
    engine_destroy(e);
    return rc;
}

static void test_quant_ops_match_the_reference(void **s) {
    (void)s;
    enum { N = 512 };
    uint16_t x[N];
    uint64_t r = 12345;
    /* block 0 arbitrary values (rounding everywhere), block 1 all zero,
     * block 2 one large value, block 3 the exact payload of --dtype int8 */
    for (int i = 0; i < N; i++) {
        r = r * 6364136223846793005ULL + 1442695040888963407ULL;
        float v = (float)((double)(r >> 40) / 8388608.0 - 1.0) * 3.7f;
        x[i] = float_to_bf16(i < 128 ? v : i < 256 ? 0.0f : i < 384 ? v * 1e-3f : 0.0f);
    }
    x[300] = float_to_bf16(-1000.0f);
    int tag[] = {5, 3, 1};
    uint16_t exact[FM_QUANT_BLOCK * 2];
    fm_fill_token_int8(exact, FM_QUANT_BLOCK * 2, tag, 99);
    memcpy(x + 384, exact + FM_QUANT_BLOCK, FM_QUANT_BLOCK * 2);
    int8_t q[N], want_q[N];
    float scales[N / 128], want_s[N / 128], y[N];
    vec_len vl = {0};
    char msg[512];
    assert_int_equal(run_quant(x, N, 0.625f, q, scales, y, &vl, msg, sizeof msg), 0);
    fm_quantize_ref(x, N, want_q, want_s);
    assert_memory_equal(q, want_q, N);
    assert_memory_equal(scales, want_s, sizeof scales);
    assert_true(scales[1] == 0.0f);   /* the zero block */
    assert_int_equal(q[300], -127);
    for (int i = 384; i < N; i++)   /* the exact payload round-trips */
        assert_true(y[i] == 0.625f * bf16_to_float(x[i]));
    for (int i = 0; i < N; i++) assert_true(y[i] == 0.625f * ((float)q[i] * scales[i / 128]));
    /* vector time: the quant's seven instructions stream 26 B an element,
     * the dequant's four 14 B */
    assert_int_equal(vl.quant, 26u * N);
    assert_int_equal(vl.dequant, 14u * N);
}

static void test_quant_needs_whole_blocks(void **s) {
    (void)s;
    uint16_t x[192] = {0};
    int8_t q[192];
    float sc[2], y[192];
    vec_len vl = {0};
    char msg[512];
    assert_int_equal(run_quant(x, 192, 1.0f, q, sc, y, &vl, msg, sizeof msg), 1);
    if (!strstr(msg, "VecQuantInt8: block 128 must be a multiple of 32 that divides n = 192"))
        fail_msg("message: %s", msg);
}

static const char *const int8_kv[] = {"tokens", "12", "hidden", "256", "topk", "4", "experts", "16",
                                      "rounds", "2", "dtype", "int8", NULL};

static void test_int8_runs_pass_the_check(void **s) {
    (void)s;
    const char *bf16_kv[16];
    int i = 0;
    for (; int8_kv[i + 2]; i++) bf16_kv[i] = int8_kv[i];
    bf16_kv[i] = NULL;
    int nodes[] = {1, 2}, npus[] = {4, 2};
    for (int c = 0; c < 2; c++) {
        run r, b;
        assert_int_equal(run_checked(&r, nodes[c], npus[c], int8_kv), 0);
        const fm_args *a = &r.st->args;
        /* 256 int8 + 2 scales in a 32 B aligned row, half the bf16 one */
        assert_int_equal(a->dtype, FM_INT8);
        assert_int_equal(a->win_row_bytes, 288);
        assert_int_equal(a->row_bytes, 512);
        check_windows_after(&r);
        assert_int_equal(run_checked(&b, nodes[c], npus[c], bf16_kv), 0);
        assert_int_equal(b.st->args.win_row_bytes, 512);
        /* the same rows go both ways; the dispatch's are 224 B smaller */
        int64_t rows = 0;
        for (int round = 0; round < 2; round++)
            for (int p = 0; p < 4; p++) rows += r.st->plan.round[round].recv_rows[p];
        assert_int_equal(b.tl.batch_bytes - r.tl.batch_bytes, (uint64_t)rows * 224);
        finish(&r);
        finish(&b);
    }
}

static void test_int8_check_catches_a_wrong_scale(void **s) {
    (void)s;
    run r;
    assert_int_equal(run_checked(&r, 1, 2, int8_kv), 0);
    const fm_args *a = &r.st->args;
    int at = 1 * 2 + 1;   /* round 1, rank 1 */
    assert_true(r.st->plan.round[1].recv_rows[1] >= 2);
    float *sc = engine_gm_host(r.e, gm_add(a->dynamic_scales[at], 8), 4);   /* row 1, block 0 */
    assert_non_null(sc);
    float v = *sc;
    *sc = v * 2.0f;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "round 1 rank 1 dynamic_scales row 1 block 0 is 2, expected 1"))
        fail_msg("message: %s", r.msg);
    *sc = v;
    int8_t *q = engine_gm_host(r.e, gm_add(a->expand_x[at], 256 + 9), 1);   /* row 1 */
    *q ^= 1;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 1);
    if (!strstr(r.msg, "round 1 rank 1 expand_x row 1 should be token") ||
        !strstr(r.msg, "quantized to int8: it holds token"))
        fail_msg("message: %s", r.msg);
    *q ^= 1;
    assert_int_equal(fm_check(r.e, r.st, r.msg, sizeof r.msg), 0);
    finish(&r);
}

static void test_int8_estimate_counts_its_computed_rows(void **s) {
    (void)s;
    kernel_opts o;
    kernel_estimate bf, i8;
    char err[512];
    engine_config cfg = support_config(1, 4, PAYLOAD_REF);
    const char *bkv[] = {"tokens", "64", "hidden", "1024", "topk", "4", "experts", "32", NULL};
    make_opts(&o, bkv);
    assert_int_equal(desc()->estimate(&o, support_topo(&cfg), &bf, err, sizeof err), 0);
    const char *ikv[] = {"tokens", "64", "hidden", "1024", "topk", "4", "experts", "32", "dtype",
                         "int8", NULL};
    make_opts(&o, ikv);
    assert_int_equal(desc()->estimate(&o, support_topo(&cfg), &i8, err, sizeof err), 0);
    /* 4 ranks x 2 rounds x 64 x 4 pairs of 1024 int8 + 8 scales held as
     * bytes; the combine's bf16 rows size the windows, 128 B (no count
     * row) under the bf16 dispatch's: 4 ranks x 2 blocks x 4 windows */
    assert_int_equal(i8.gm_bytes - bf.gm_bytes, 4ull * 2 * 64 * 4 * (1024 + 32) - 4 * 2 * 4 * 128);
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
    const char *dtype[] = {"dtype", "fp8", NULL};
    expect_setup_error(1, 2, dtype, "--dtype fp8: expected bf16 or int8");
    const char *blocks[] = {"dtype", "int8", "hidden", "200", NULL};
    expect_setup_error(1, 2, blocks, "--hidden 200: --dtype int8 needs a multiple of 128");
}

static void test_layout(void **s) {
    (void)s;
    kernel_opts o;
    make_opts(&o, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    char err[512];
    engine_config cfg = support_config(2, 2, PAYLOAD_REF);
    assert_int_equal(desc()->layout(&o, support_topo(&cfg), f, err, sizeof err), 0);
    fclose(f);
    assert_non_null(strstr(buf, "rankSizeOnWin"));
    assert_non_null(strstr(buf, "\n3     1 "));   /* rank 3, round 1 */
    free(buf);
    const char *kv[] = {"dtype", "int8", "hidden", "256", NULL};
    make_opts(&o, kv);
    f = open_memstream(&buf, &len);
    assert_int_equal(desc()->layout(&o, support_topo(&cfg), f, err, sizeof err), 0);
    fclose(f);
    if (!strstr(buf, "dtype int8: a dispatched row is 288 B (256 int8 + 2 float scales") ||
        !strstr(buf, "dynamic_scales"))
        fail_msg("layout: %s", buf);
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
        cmocka_unit_test(test_quant_ops_match_the_reference),
        cmocka_unit_test(test_quant_needs_whole_blocks),
        cmocka_unit_test(test_int8_runs_pass_the_check),
        cmocka_unit_test(test_int8_check_catches_a_wrong_scale),
        cmocka_unit_test(test_int8_estimate_counts_its_computed_rows),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_engine.c - the emulated 910B's rules and scheduling, one behaviour
 * per test: hardware faults, the visibility of asynchronous copies,
 * remote-put timing, exact remote atomics, deadlock reports and determinism.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npurr/device.h"
#include "engine/engine.h"

static char err[ENGINE_ERRLEN];

static engine *make(int nodes, int npus, uint64_t seed) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    cfg.seed = seed;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    return e;
}

static engine_result run(engine *e) {
    engine_result res;
    assert_int_equal(engine_run(e, &res, err, sizeof err), ENGINE_OK);
    return res;
}

static void launch(engine *e, engine_kernel_fn fn, const void *args, int blocks) {
    assert_int_equal(engine_launch(e, "test", fn, args, blocks, CORE_AIV, err, sizeof err), ENGINE_OK);
}

/* ------------------------------------------------------------ faults */
typedef struct { gm_t buf; } one_buf;

static void k_misaligned(const void *a) {
    const one_buf *p = a;
    local_t ub = AllocUB(1024);
    DataCopy(local_add(ub, 16), p->buf, 64);
}

static void test_misaligned_ub_copy_faults(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    one_buf p;
    assert_int_equal(engine_gm_alloc(e, 0, 4096, "x", &p.buf, err, sizeof err), ENGINE_OK);
    launch(e, k_misaligned, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_FAULT);
    assert_non_null(strstr(r.message, "not 32 B aligned"));
    assert_non_null(strstr(r.message, "test_engine.c"));
    assert_non_null(strstr(r.message, "rank 0 AIV0"));
    engine_destroy(e);
}

static void k_ub_overflow(const void *a) {
    const one_buf *p = a;
    local_t ub = AllocUB(1024);
    DataCopy(local_add(ub, UB_BYTES - 512), p->buf, 1024);
}

static void test_ub_overflow_faults(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    one_buf p;
    assert_int_equal(engine_gm_alloc(e, 0, 4096, "x", &p.buf, err, sizeof err), ENGINE_OK);
    launch(e, k_ub_overflow, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_FAULT);
    assert_non_null(strstr(r.message, "UB overflow"));
    engine_destroy(e);
}

static void k_alloc_too_much(const void *a) {
    (void)a;
    AllocUB(UB_BYTES);
    AllocUB(32);
}

static void test_ub_alloc_overflow_faults(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    launch(e, k_alloc_too_much, NULL, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_FAULT);
    assert_non_null(strstr(r.message, "UB overflow"));
    engine_destroy(e);
}

static void k_gm_oob(const void *a) {
    const one_buf *p = a;
    local_t ub = AllocUB(1024);
    DataCopy(ub, gm_add(p->buf, 4096 - 32), 64);
}

static void test_gm_out_of_bounds_faults(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    one_buf p;
    assert_int_equal(engine_gm_alloc(e, 0, 4096, "input_x", &p.buf, err, sizeof err), ENGINE_OK);
    launch(e, k_gm_oob, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_FAULT);
    assert_non_null(strstr(r.message, "GM out of bounds"));
    assert_non_null(strstr(r.message, "input_x"));
    engine_destroy(e);
}

static void k_bad_event_id(const void *a) {
    (void)a;
    SetFlag(MTE2_V, 8);
}

static void test_event_id_out_of_range_faults(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    launch(e, k_bad_event_id, NULL, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_FAULT);
    assert_non_null(strstr(r.message, "event id out of range"));
    engine_destroy(e);
}

static void k_wait_unset(const void *a) {
    (void)a;
    WaitFlag(MTE3_S, 1);
}

static void test_waitflag_without_setflag_faults(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    launch(e, k_wait_unset, NULL, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_FAULT);
    assert_non_null(strstr(r.message, "no matching SetFlag"));
    engine_destroy(e);
}

static void k_set_unwaited(const void *a) {
    (void)a;
    SetFlag(MTE3_S, 2);
}

static void test_setflag_never_waited_faults_at_kernel_end(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    launch(e, k_set_unwaited, NULL, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_FAULT);
    assert_non_null(strstr(r.message, "never matched by a WaitFlag"));
    engine_destroy(e);
}

/* ------------------------------------------------------------ visibility */
typedef struct { gm_t src, out; } vis_args;

static void k_visibility(const void *a) {
    const vis_args *p = a;
    local_t ub = AllocUB(256);
    UbSet32(ub, 0, -1);
    DataCopy(ub, p->src, 256);
    int32_t before = UbGet32(ub, 0);      /* MTE2 still in flight */
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    int32_t after = UbGet32(ub, 0);
    SetValue32(p->out, before);
    SetValue32(gm_add(p->out, 4), after);
}

static void test_mte2_data_invisible_before_waitflag(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    vis_args p;
    assert_int_equal(engine_gm_alloc(e, 0, 256, "src", &p.src, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, 8, "out", &p.out, err, sizeof err), ENGINE_OK);
    int32_t *src = engine_gm_host(e, p.src, 256);
    src[0] = 12345;
    launch(e, k_visibility, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_COMPLETED);
    int32_t *out = engine_gm_host(e, p.out, 8);
    assert_int_equal(out[0], -1);      /* stale: the copy had not landed */
    assert_int_equal(out[1], 12345);   /* after WaitFlag it has */
    engine_destroy(e);
}

/* A remote put lands at its completion time: a reader on the peer that
 * polls just before sees the old value, and just after the new one. */
typedef struct { gm_t buf; gm_t seen; uint64_t done_at; } put_args;
static uint64_t g_put_done, g_put_issue_seq;

static void put_observer(void *ctx, const engine_event *ev) {
    (void)ctx;
    if (ev->kind == EV_XFER_ISSUE && ev->sub == XFER_HCCS_PUT) g_put_issue_seq = ev->seq;
    if (ev->kind == EV_XFER_DONE && ev->sub == XFER_HCCS_PUT) g_put_done = ev->time;
}

static void k_put(const void *a) {
    const put_args *p = a;
    if (GetRank() == 0) {
        SetValue64(p->buf, 777);                       /* source on rank 0 */
        ShmemPutNbi(gm_on_rank(p->buf, 1), p->buf, 64);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
    } else {
        /* rank 1 waits for the value and records when it saw it */
        WaitGM64(gm_on_rank(p->buf, 1), COND_EQ, 777);
        SetValue64(p->seen, 1);
    }
}

static void test_remote_put_visible_at_completion(void **state) {
    (void)state;
    engine *e = make(1, 2, 0);
    put_args p;
    assert_int_equal(engine_sym_alloc(e, 64, "win", &p.buf, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 1, 8, "seen", &p.seen, err, sizeof err), ENGINE_OK);
    engine_observer obs = {.on_event = put_observer};
    engine_set_observer(e, &obs);
    g_put_done = 0;
    launch(e, k_put, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_COMPLETED);
    assert_true(g_put_done > 0);
    const engine_config *cfg = engine_get_config(e);
    /* completion is at least the HCCS latency plus 64 B over the link after issue */
    assert_true(g_put_done >= (uint64_t)(cfg->hw.hccs_latency_ns * 1000));
    engine_destroy(e);
}

/* Two back-to-back 64 B MTE copies between a core's UB and rank 1's GM:
 * reads (MTE2) or writes (MTE3). */
typedef struct { gm_t buf; int write; } pair_args;
static uint64_t g_pair_done[2];
static int g_pair_n;

static void pair_observer(void *ctx, const engine_event *ev) {
    (void)ctx;
    if (ev->kind == EV_XFER_DONE && (ev->sub == XFER_MTE2 || ev->sub == XFER_MTE3) && g_pair_n < 2)
        g_pair_done[g_pair_n++] = ev->time;
}

static void k_pair(const void *a) {
    const pair_args *p = a;
    if (GetRank() != 0) return;
    local_t ub = AllocUB(128);
    gm_t peer = gm_on_rank(p->buf, 1);
    if (p->write) {
        DataCopy(peer, ub, 64);
        DataCopy(gm_add(peer, 64), local_add(ub, 64), 64);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
    } else {
        DataCopy(ub, peer, 64);
        DataCopy(local_add(ub, 64), gm_add(peer, 64), 64);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
    }
}

static uint64_t pair_gap(int write) {
    engine *e = make(1, 2, 0);
    pair_args p = {.write = write};
    assert_int_equal(engine_sym_alloc(e, 128, "win", &p.buf, err, sizeof err), ENGINE_OK);
    engine_observer obs = {.on_event = pair_observer};
    engine_set_observer(e, &obs);
    g_pair_n = 0;
    launch(e, k_pair, &p, 1);
    assert_int_equal(run(e).outcome, OUTCOME_COMPLETED);
    assert_int_equal(g_pair_n, 2);
    engine_destroy(e);
    return g_pair_done[1] - g_pair_done[0];
}

/* A read of a peer's GM is not posted: the queue takes the second read only
 * after the first's request has crossed (hccs_read_latencies one-way
 * latencies); writes are posted, back to back at the queue's rate. */
static void test_peer_reads_hold_their_queue(void **state) {
    (void)state;
    engine_config cfg;
    engine_config_defaults(&cfg);
    uint64_t held = (uint64_t)(cfg.hw.hccs_read_latencies * cfg.hw.hccs_latency_ns * 1000);
    uint64_t bytes = (uint64_t)(64 * 1000 / (cfg.hw.mte_hccs_bytes_per_cycle * cfg.hw.aicore_clock_ghz));
    assert_true(held > 0);
    assert_true(pair_gap(0) >= held + bytes);
    assert_true(pair_gap(1) < held);
}

/* Polls the peer's word at fixed times around the put's completion. */
typedef struct { gm_t buf; gm_t log; } poll_args;

static void k_put_polled(const void *a) {
    const poll_args *p = a;
    if (GetRank() == 0) {
        SetValue64(p->buf, 99);
        ShmemPutNbi(gm_on_rank(p->buf, 1), p->buf, 64);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
    } else {
        for (int i = 0; i < 64; i++) {
            SetValue64(gm_add(p->log, 8 * i), GetValue64(gm_on_rank(p->buf, 1)));
            ScalarCycles(200);
        }
    }
}

/* Loads of rank 1's copy, with their times, and the put's issue time. */
static uint64_t poll_time[64], put_issue_time;
static int64_t poll_value[64];
static int n_polls;
static void poll_observer(void *ctx, const engine_event *ev) {
    put_observer(ctx, ev);
    if (ev->kind == EV_XFER_ISSUE && ev->sub == XFER_HCCS_PUT) put_issue_time = ev->time;
    if (ev->kind == EV_GM_LOAD && ev->rank == 1 && n_polls < 64) {
        poll_time[n_polls] = ev->time;
        poll_value[n_polls++] = ev->value;
    }
}

static void test_remote_put_not_visible_before_completion(void **state) {
    (void)state;
    engine *e = make(1, 2, 0);
    poll_args p;
    assert_int_equal(engine_sym_alloc(e, 64, "win", &p.buf, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 1, 8 * 64, "log", &p.log, err, sizeof err), ENGINE_OK);
    engine_observer obs = {.on_event = poll_observer};
    engine_set_observer(e, &obs);
    n_polls = 0;
    g_put_done = put_issue_time = 0;
    launch(e, k_put_polled, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_COMPLETED);
    assert_int_equal(n_polls, 64);
    int old_after_issue = 0, new_seen = 0;
    for (int i = 0; i < 64; i++) {
        /* exactly the completion time separates old from new */
        if (poll_time[i] < g_put_done) assert_int_equal(poll_value[i], 0);
        else { assert_int_equal(poll_value[i], 99); new_seen++; }
        if (poll_time[i] > put_issue_time && poll_value[i] == 0) old_after_issue++;
    }
    assert_true(old_after_issue > 0);   /* issued but in flight: still the old bytes */
    assert_true(new_seen > 0);
    int64_t *log = engine_gm_host(e, p.log, 8 * 64);
    for (int i = 0; i < 64; i++) assert_int_equal(log[i], poll_value[i]);
    engine_destroy(e);
}

/* ------------------------------------------------------------ RDMA atomics */
typedef struct { gm_t counter; } atomic_args;

static void k_rdma_add(const void *a) {
    const atomic_args *p = a;
    int rank = GetRank();
    for (int i = 0; i < 10; i++) RdmaAtomicAdd(gm_on_rank(p->counter, 8), rank * 100 + i + 1);
    RdmaQuiet();
}

static void test_rdma_atomic_add_from_8_ranks_sums_exactly(void **state) {
    (void)state;
    engine *e = make(2, 8, 0);
    atomic_args p;
    assert_int_equal(engine_sym_alloc(e, 8, "counter", &p.counter, err, sizeof err), ENGINE_OK);
    engine_name_word(e, gm_on_rank(p.counter, 8), 8, OBJ_WORD, "counter@8");
    launch(e, k_rdma_add, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_COMPLETED);
    int64_t expect = 0;
    for (int rank = 0; rank < 16; rank++)
        for (int i = 0; i < 10; i++) expect += rank * 100 + i + 1;
    int64_t *v = engine_gm_host(e, gm_on_rank(p.counter, 8), 8);
    assert_int_equal(*v, expect);
    engine_destroy(e);
}

/* ------------------------------------------------------------ deadlock */
typedef struct { gm_t a, b; } dl_args;

static void k_deadlock(const void *a) {
    const dl_args *p = a;
    if (GetBlockIdx() == 0) {
        WaitGM32(p->a, COND_EQ, 1);
        SetValue32(p->b, 1);
    } else {
        WaitGM32(p->b, COND_EQ, 1);
        SetValue32(p->a, 1);
    }
}

static void test_mutual_wait_is_a_deadlock_naming_both(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    dl_args p;
    assert_int_equal(engine_gm_alloc(e, 0, 64, "flags", &p.a, err, sizeof err), ENGINE_OK);
    p.b = gm_add(p.a, 32);
    engine_name_word(e, p.a, 4, OBJ_FLAG, "flag_a");
    engine_name_word(e, p.b, 4, OBJ_FLAG, "flag_b");
    launch(e, k_deadlock, &p, 2);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_DEADLOCK);
    assert_non_null(strstr(r.message, "2 cores blocked"));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    engine_write_report(e, f);
    fclose(f);
    assert_non_null(strstr(buf, "rank 0 AIV0"));
    assert_non_null(strstr(buf, "rank 0 AIV1"));
    assert_non_null(strstr(buf, "flag_a == 1 (current 0)"));
    assert_non_null(strstr(buf, "flag_b == 1 (current 0)"));
    free(buf);
    engine_destroy(e);
}

static void k_livelock(const void *a) {
    const one_buf *p = a;
    while (GetValue32(p->buf) == 0) ScalarCycles(100);
}

static void test_watchdog_stops_a_livelock(void **state) {
    (void)state;
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = 1;
    cfg.watchdog_ps = 50ULL * 1000 * 1000;  /* 50 us */
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    one_buf p;
    assert_int_equal(engine_gm_alloc(e, 0, 64, "never", &p.buf, err, sizeof err), ENGINE_OK);
    launch(e, k_livelock, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_WATCHDOG);
    engine_destroy(e);
}

/* ------------------------------------------------------------ determinism */
typedef struct { gm_t counter, order; } race_args;

/* Many cores on two ranks append their ids with atomics at the same virtual
 * times: the order is the scheduler's free choice. */
static void k_race(const void *a) {
    const race_args *p = a;
    int me = GetRank() * 64 + GetBlockIdx();
    for (int round = 0; round < 4; round++) {
        int32_t slot = AtomicAdd32(p->counter, 1);
        SetValue32(gm_add(p->order, 4 * slot), me);
        local_t ub = AllocUB(64);
        DataCopy(ub, p->order, 64);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
    }
}

typedef struct { uint64_t hash, count; } stream_hash;

static void hash_event(void *ctx, const engine_event *ev) {
    stream_hash *h = ctx;
    const uint8_t *b = (const uint8_t *)ev;
    for (size_t i = 0; i < sizeof *ev; i++) h->hash = (h->hash ^ b[i]) * 1099511628211ULL;
    h->count++;
}

static stream_hash run_race(uint64_t seed, int32_t *order_out) {
    engine *e = make(1, 1, seed);
    race_args p;
    assert_int_equal(engine_gm_alloc(e, 0, 8, "counter", &p.counter, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, 4 * 256, "order", &p.order, err, sizeof err), ENGINE_OK);
    stream_hash h = {1469598103934665603ULL, 0};
    engine_observer obs = {.ctx = &h, .on_event = hash_event};
    engine_set_observer(e, &obs);
    launch(e, k_race, &p, 16);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_COMPLETED);
    memcpy(order_out, engine_gm_host(e, p.order, 4 * 64), 4 * 64);
    assert_int_equal(*(int32_t *)engine_gm_host(e, p.counter, 4), 64);
    engine_destroy(e);
    return h;
}

static void test_same_seed_same_event_stream(void **state) {
    (void)state;
    int32_t o1[64], o2[64];
    stream_hash a = run_race(7, o1), b = run_race(7, o2);
    assert_true(a.count > 100);
    assert_int_equal(a.count, b.count);
    assert_true(a.hash == b.hash);
    assert_memory_equal(o1, o2, sizeof o1);
}

static void test_other_seed_other_valid_interleaving(void **state) {
    (void)state;
    int32_t o1[64], o2[64];
    stream_hash a = run_race(1, o1), b = run_race(2, o2);
    assert_true(a.hash != b.hash);
    assert_true(memcmp(o1, o2, sizeof o1) != 0);
    /* still valid: each core appears exactly 4 times in both */
    for (int core = 0; core < 16; core++) {
        int n1 = 0, n2 = 0;
        for (int i = 0; i < 64; i++) { n1 += o1[i] == core; n2 += o2[i] == core; }
        assert_int_equal(n1, 4);
        assert_int_equal(n2, 4);
    }
}

/* ------------------------------------------------------------ misc API */
static void k_cross_node_scalar(const void *a) {
    const one_buf *p = a;
    if (GetRank() == 0) SetValue32(gm_on_rank(p->buf, 8), 1);
}

static void test_scalar_store_to_another_node_faults(void **state) {
    (void)state;
    engine *e = make(2, 8, 0);
    one_buf p;
    assert_int_equal(engine_sym_alloc(e, 64, "w", &p.buf, err, sizeof err), ENGINE_OK);
    launch(e, k_cross_node_scalar, &p, 1);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_FAULT);
    assert_non_null(strstr(r.message, "another node"));
    engine_destroy(e);
}

typedef struct { gm_t a, b, c; } mm_args;

/* AIC multiplies 16x16 fp16 matrices; its two AIVs wait for the flag and
 * add one to every element through SetAtomicAdd. */
static void k_mix(const void *a) {
    const mm_args *p = a;
    if (IsAic()) {
        local_t l1a = AllocLocal(LM_L1, 512), l1b = AllocLocal(LM_L1, 512);
        local_t a0 = AllocLocal(LM_L0A, 512), b0 = AllocLocal(LM_L0B, 512);
        local_t c0 = AllocLocal(LM_L0C, 1024);
        DataCopy(l1a, p->a, 512);
        DataCopy(l1b, p->b, 512);
        SetFlag(MTE2_MTE1, 0);
        WaitFlag(MTE2_MTE1, 0);
        DataCopy(a0, l1a, 512);
        DataCopy(b0, l1b, 512);
        SetFlag(MTE1_M, 0);
        WaitFlag(MTE1_M, 0);
        Mmad(c0, a0, b0, DT_FP16, 16, 16, 16, 0);
        SetFlag(M_FIX, 0);
        WaitFlag(M_FIX, 0);
        Fixpipe(p->c, c0, DT_FLOAT, 256);
        CrossCoreSetFlag(PIPE_FIX, 3);
    } else {
        CrossCoreWaitFlag(3);
        local_t ub = AllocUB(512);
        VecDup(ub, DT_FLOAT, 1.0, 128);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        SetAtomicAdd(DT_FLOAT);
        DataCopy(gm_add(p->c, 512 * GetSubBlockIdx()), ub, 512);
        SetAtomicNone();
    }
}

static void test_mix_mmad_crosscore_atomic(void **state) {
    (void)state;
    engine *e = make(1, 1, 0);
    mm_args p;
    assert_int_equal(engine_gm_alloc(e, 0, 512, "a", &p.a, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, 512, "b", &p.b, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, 1024, "c", &p.c, err, sizeof err), ENGINE_OK);
    uint16_t *A = engine_gm_host(e, p.a, 512), *B = engine_gm_host(e, p.b, 512);
    for (int i = 0; i < 256; i++) {
        A[i] = 0x3C00;                        /* 1.0 in fp16 */
        B[i] = (i % 17 == 0) ? 0x4000 : 0;    /* 2.0 on a pattern */
    }
    assert_int_equal(engine_launch(e, "mix", k_mix, &p, 1, CORE_MIX, err, sizeof err), ENGINE_OK);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_COMPLETED);
    float *C = engine_gm_host(e, p.c, 1024);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            float expect = 1.0f;
            for (int k = 0; k < 16; k++) expect += (k * 16 + j) % 17 == 0 ? 2.0f : 0.0f;
            assert_true(C[i * 16 + j] == expect);
        }
    engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_misaligned_ub_copy_faults),
        cmocka_unit_test(test_ub_overflow_faults),
        cmocka_unit_test(test_ub_alloc_overflow_faults),
        cmocka_unit_test(test_gm_out_of_bounds_faults),
        cmocka_unit_test(test_event_id_out_of_range_faults),
        cmocka_unit_test(test_waitflag_without_setflag_faults),
        cmocka_unit_test(test_setflag_never_waited_faults_at_kernel_end),
        cmocka_unit_test(test_mte2_data_invisible_before_waitflag),
        cmocka_unit_test(test_remote_put_visible_at_completion),
        cmocka_unit_test(test_remote_put_not_visible_before_completion),
        cmocka_unit_test(test_peer_reads_hold_their_queue),
        cmocka_unit_test(test_rdma_atomic_add_from_8_ranks_sums_exactly),
        cmocka_unit_test(test_mutual_wait_is_a_deadlock_naming_both),
        cmocka_unit_test(test_watchdog_stops_a_livelock),
        cmocka_unit_test(test_same_seed_same_event_stream),
        cmocka_unit_test(test_other_seed_other_valid_interleaving),
        cmocka_unit_test(test_scalar_store_to_another_node_faults),
        cmocka_unit_test(test_mix_mmad_crosscore_atomic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_races.c - the happens-before checker (checker/hb.h) on small
 * hand-built kernels: one test per edge kind, each running a correctly
 * ordered version (no report) and a racy one (a race naming both sides),
 * plus the sync errors and the rules that keep polling and accumulation
 * from being reported.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "checker/hb.h"
#include "npurr/device.h"
#include "engine/engine.h"

static char err[ENGINE_ERRLEN];

typedef struct args {
    gm_t x, flag, out;
    int racy;
} args;

typedef struct checked {
    engine_result res;
    uint64_t races, sync_errors;
    hb_report first;        /* the first report, if any */
    int has_first;
    int kind_seen[8];
} checked;

/* Runs fn on blocks cores of type on nodes x npus ranks under the checker. */
static checked run_checked(engine_kernel_fn fn, int racy, int blocks, engine_core_type type,
                           int nodes, int npus) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    static args a;
    memset(&a, 0, sizeof a);
    a.racy = racy;
    assert_int_equal(engine_sym_alloc(e, 4096, "x", &a.x, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, 64, "flag", &a.flag, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, 4096, "out", &a.out, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_launch(e, "t", fn, &a, blocks, type, err, sizeof err), ENGINE_OK);
    hb_checker *h = NULL;
    assert_int_equal(hb_create(e, NULL, &h, err, sizeof err), 0);
    engine_observer o = hb_observer(h);
    engine_set_observer(e, &o);
    checked c;
    memset(&c, 0, sizeof c);
    assert_int_equal(engine_run(e, &c.res, err, sizeof err), ENGINE_OK);
    hb_finish(h, &c.res);
    c.races = hb_races(h);
    c.sync_errors = hb_sync_errors(h);
    for (size_t i = 0; i < hb_report_count(h); i++) c.kind_seen[hb_report_get(h, i)->kind] = 1;
    if (hb_report_count(h)) {
        c.first = *hb_report_get(h, 0);
        c.has_first = 1;
    }
    hb_destroy(h);
    engine_destroy(e);
    return c;
}

/* Both sides of the first report are named down to the kernel line. */
static void expect_race(const checked *c, int pipe_a, int pipe_b) {
    assert_true(c->races >= 1);
    assert_true(c->has_first);
    assert_int_equal(c->first.kind, HB_RACE);
    assert_non_null(strstr(c->first.a.file, "test_races.c"));
    assert_non_null(strstr(c->first.b.file, "test_races.c"));
    assert_true(c->first.a.line > 0 && c->first.b.line > 0);
    assert_true(c->first.a.seq > 0 && c->first.b.seq > 0);
    assert_int_equal(c->first.a.pipe, pipe_a);
    assert_int_equal(c->first.b.pipe, pipe_b);
}

static void expect_clean(const checked *c) {
    if (c->races || c->sync_errors)
        fail_msg("expected no report, got %llu races, %llu sync errors; first: %s (%s:%d / %s:%d)",
                 (unsigned long long)c->races, (unsigned long long)c->sync_errors, c->first.what,
                 c->first.a.file, c->first.a.line, c->first.b.file, c->first.b.line);
}

static void expect_clean_run(engine_kernel_fn fn, int racy, int blocks, engine_core_type type,
                             int nodes, int npus) {
    checked c = run_checked(fn, racy, blocks, type, nodes, npus);
    expect_clean(&c);
}

/* ------------------------------------------------------------ program order per pipe */
/* Two MTE3 writes of the same bytes are ordered by their pipe; an MTE3
 * write and a scalar store of the same word are not. */
static void k_pipe_order(const void *p) {
    const args *a = p;
    local_t ub = AllocUB(64);
    DataCopy(a->x, ub, 32);
    if (a->racy) SetValue32(a->x, 7);
    else DataCopy(a->x, ub, 32);
    PipeBarrier(PIPE_ALL);
}

static void test_program_order_per_pipe(void **state) {
    (void)state;
    expect_clean_run(k_pipe_order, 0, 1, CORE_AIV, 1, 1);
    checked c = run_checked(k_pipe_order, 1, 1, CORE_AIV, 1, 1);
    expect_race(&c, PIPE_MTE3, PIPE_S);
}

/* ------------------------------------------------------------ SetFlag / WaitFlag */
/* A vector op reads UB that MTE2 fills: ordered only by MTE2_V. */
static void k_flag(const void *p) {
    const args *a = p;
    local_t in = AllocUB(256), out = AllocUB(256);
    DataCopy(in, a->x, 256);
    if (!a->racy) {
        SetFlag(MTE2_V, 0);
        WaitFlag(MTE2_V, 0);
    }
    VecCopy(out, in, 256);
    PipeBarrier(PIPE_ALL);
}

static void test_setflag_waitflag_orders_pipes(void **state) {
    (void)state;
    expect_clean_run(k_flag, 0, 1, CORE_AIV, 1, 1);
    checked c = run_checked(k_flag, 1, 1, CORE_AIV, 1, 1);
    expect_race(&c, PIPE_MTE2, PIPE_V);
    assert_non_null(strstr(c.first.object, "UB of rank 0 AIV0"));
}

/* ------------------------------------------------------------ PipeBarrier */
/* The scalar unit reads UB that MTE2 fills: ordered only by a barrier. */
static void k_barrier_pipe(const void *p) {
    const args *a = p;
    local_t ub = AllocUB(64);
    DataCopy(ub, a->x, 32);
    if (!a->racy) PipeBarrier(PIPE_ALL);
    int32_t v = UbGet32(ub, 4);
    (void)v;
    PipeBarrier(PIPE_ALL);
}

static void test_pipe_barrier_orders_scalar_after_mte2(void **state) {
    (void)state;
    expect_clean_run(k_barrier_pipe, 0, 1, CORE_AIV, 1, 1);
    checked c = run_checked(k_barrier_pipe, 1, 1, CORE_AIV, 1, 1);
    expect_race(&c, PIPE_MTE2, PIPE_S);
    assert_non_null(strstr(c.first.object, "UB of rank 0 AIV0 +0x4..+0x8"));
}

/* ------------------------------------------------------------ a transfer that reads a word */
/* Core 1 reads x, then stores head = 1 (the space is free). Core 0 polls
 * head with a get into a mirror word, as combine-sender does, and rewrites
 * x once it sees 1. Racy: core 0 rewrites x without polling. */
static void k_mirror(const void *p) {
    const args *a = p;
    local_t ub = AllocUB(256);
    gm_t head = a->flag, mirror = gm_add(a->flag, 8);
    if (GetBlockIdx() == 1) {
        DataCopy(ub, a->x, 256);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        SetValue64(head, 1);
        return;
    }
    ScalarCycles(2000);   /* the head is a known word before the first get */
    while (!a->racy) {
        ShmemGetNbi(mirror, head, 8);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        if (GetValue64(mirror) == 1) break;
        ScalarCycles(100);
    }
    DataCopy(a->x, ub, 256);
    PipeBarrier(PIPE_ALL);
}

static void test_transfer_reading_a_word_acquires_at_completion(void **state) {
    (void)state;
    expect_clean_run(k_mirror, 0, 2, CORE_AIV, 1, 1);
    checked c = run_checked(k_mirror, 1, 2, CORE_AIV, 1, 1);
    expect_race(&c, PIPE_MTE2, PIPE_MTE3);
}

/* ------------------------------------------------------------ cross-core flags */
/* The AIC's Fixpipe writes x; the AIV reads it after CrossCoreWaitFlag (or,
 * racy, before). */
static void k_xcore(const void *p) {
    const args *a = p;
    if (IsAic()) {
        local_t c = AllocLocal(LM_L0C, 1024);
        Fixpipe(a->x, c, DT_FLOAT, 64);
        CrossCoreSetFlag(PIPE_FIX, 3);
        return;
    }
    local_t ub = AllocUB(256);
    if (GetSubBlockIdx() == 0 && a->racy) DataCopy(ub, a->x, 256);
    CrossCoreWaitFlag(3);
    if (GetSubBlockIdx() == 0 && !a->racy) DataCopy(ub, a->x, 256);
    PipeBarrier(PIPE_ALL);
}

static void test_crosscore_flag_orders_aic_and_aiv(void **state) {
    (void)state;
    expect_clean_run(k_xcore, 0, 1, CORE_MIX, 1, 1);
    checked c = run_checked(k_xcore, 1, 1, CORE_MIX, 1, 1);
    /* the AIV's early read comes first in the run, the AIC's write second */
    assert_true(c.races >= 1);
    assert_int_equal(c.first.kind, HB_RACE);
    assert_true((c.first.a.pipe == PIPE_MTE2 && c.first.b.pipe == PIPE_FIX) ||
                (c.first.a.pipe == PIPE_FIX && c.first.b.pipe == PIPE_MTE2));
}

/* ------------------------------------------------------------ a wait that observed a word */
/* Core 0 writes x over MTE3, then stores flag; core 1 waits for the flag
 * and reads x. Racy: core 0 does not wait for MTE3 before the flag. */
static void k_word(const void *p) {
    const args *a = p;
    local_t ub = AllocUB(256);
    if (GetBlockIdx() == 0) {
        DataCopy(a->x, ub, 256);
        if (!a->racy) {
            SetFlag(MTE3_S, 0);
            WaitFlag(MTE3_S, 0);
        }
        SetValue32(a->flag, 1);
        PipeBarrier(PIPE_ALL);
    } else {
        WaitGM32(a->flag, COND_EQ, 1);
        DataCopy(ub, a->x, 256);
        PipeBarrier(PIPE_ALL);
    }
}

static void test_gm_wait_acquires_the_store_it_observed(void **state) {
    (void)state;
    expect_clean_run(k_word, 0, 2, CORE_AIV, 1, 1);
    checked c = run_checked(k_word, 1, 2, CORE_AIV, 1, 1);
    expect_race(&c, PIPE_MTE3, PIPE_MTE2);
    assert_true(c.first.a.core != c.first.b.core);
}

/* The same across ranks over HCCS: rank 0 puts x into rank 1, then stores
 * rank 1's flag remotely; rank 1 waits for it and reads x. */
static void k_remote_word(const void *p) {
    const args *a = p;
    local_t ub = AllocUB(256);
    if (GetRank() == 0) {
        ShmemPutFromUB(gm_on_rank(a->x, 1), ub, 256);
        if (!a->racy) {
            SetFlag(MTE3_S, 0);
            WaitFlag(MTE3_S, 0);
        }
        SetValue32(gm_on_rank(a->flag, 1), 1);
        PipeBarrier(PIPE_ALL);
    } else {
        WaitGM32(gm_on_rank(a->flag, 1), COND_EQ, 1);
        DataCopy(ub, gm_on_rank(a->x, 1), 256);
        PipeBarrier(PIPE_ALL);
    }
}

static void test_remote_store_over_hccs_is_an_edge(void **state) {
    (void)state;
    expect_clean_run(k_remote_word, 0, 1, CORE_AIV, 1, 2);
    checked c = run_checked(k_remote_word, 1, 1, CORE_AIV, 1, 2);
    expect_race(&c, PIPE_MTE3, PIPE_MTE2);
    assert_int_equal(c.first.a.rank, 0);
    assert_int_equal(c.first.b.rank, 1);
}

/* ------------------------------------------------------------ barriers */
static void k_sync_all(const void *p) {
    const args *a = p;
    local_t ub = AllocUB(256);
    if (GetBlockIdx() == 0) {
        DataCopy(a->x, ub, 256);
        PipeBarrier(PIPE_ALL);
    }
    if (!a->racy) SyncAll();
    if (GetBlockIdx() == 1) {
        DataCopy(ub, a->x, 256);
        PipeBarrier(PIPE_ALL);
    }
}

static void test_sync_all_orders_cores(void **state) {
    (void)state;
    expect_clean_run(k_sync_all, 0, 2, CORE_AIV, 1, 1);
    checked c = run_checked(k_sync_all, 1, 2, CORE_AIV, 1, 1);
    assert_true(c.races >= 1);
}

/* ------------------------------------------------------------ RDMA completion */
/* Rank 0 writes x into rank 8 over RDMA then adds to its flag (the queue
 * pair keeps them in order); rank 8 waits for the flag and reads x. Racy:
 * rank 8 reads x without waiting. */
static void k_rdma(const void *p) {
    const args *a = p;
    local_t ub = AllocUB(256);
    if (GetRank() == 0) {
        RdmaWrite(gm_on_rank(a->x, 8), a->out, 256);
        RdmaAtomicAdd(gm_on_rank(a->flag, 8), 1);
        RdmaQuiet();
    } else if (GetRank() == 8) {
        if (!a->racy) WaitGM64(gm_on_rank(a->flag, 8), COND_EQ, 1);
        DataCopy(ub, gm_on_rank(a->x, 8), 256);
        PipeBarrier(PIPE_ALL);
        if (a->racy) WaitGM64(gm_on_rank(a->flag, 8), COND_EQ, 1);
    }
}

static void test_rdma_completion_publishes_at_its_done(void **state) {
    (void)state;
    expect_clean_run(k_rdma, 0, 1, CORE_AIV, 2, 8);
    checked c = run_checked(k_rdma, 1, 1, CORE_AIV, 2, 8);
    assert_true(c.races >= 1);
    assert_int_equal(c.first.kind, HB_RACE);
    assert_true(c.first.a.pipe == PIPE_MTE2 || c.first.b.pipe == PIPE_MTE2);
    assert_true(c.first.a.pipe == PIPE_NIC || c.first.b.pipe == PIPE_NIC);
}

/* ------------------------------------------------------------ accumulation */
/* Two cores SetAtomicAdd into the same bytes: they commute, no race; plain
 * writes of the same bytes race. */
static void k_accumulate(const void *p) {
    const args *a = p;
    local_t ub = AllocUB(256);
    if (!a->racy) SetAtomicAdd(DT_FLOAT);
    DataCopy(a->x, ub, 256);
    if (!a->racy) SetAtomicNone();
    PipeBarrier(PIPE_ALL);
}

static void test_atomic_adds_commute_plain_writes_race(void **state) {
    (void)state;
    expect_clean_run(k_accumulate, 0, 2, CORE_AIV, 1, 1);
    checked c = run_checked(k_accumulate, 1, 2, CORE_AIV, 1, 1);
    expect_race(&c, PIPE_MTE3, PIPE_MTE3);
}

/* ------------------------------------------------------------ polling */
/* A flag polled by scalar loads while another core stores it is
 * synchronisation, not a data race. */
static void k_poll(const void *p) {
    const args *a = p;
    if (GetBlockIdx() == 0) {
        SetValue32(a->flag, 1);
    } else {
        while (GetValue32(a->flag) != 1) ScalarCycles(10);
    }
}

static void test_polled_flag_is_not_a_race(void **state) {
    (void)state;
    expect_clean_run(k_poll, 0, 2, CORE_AIV, 1, 1);
}

/* ------------------------------------------------------------ sync errors */
static void k_wait_unset(const void *p) {
    (void)p;
    WaitFlag(MTE2_V, 1);
}

static void test_waitflag_never_set_is_a_sync_error(void **state) {
    (void)state;
    checked c = run_checked(k_wait_unset, 0, 1, CORE_AIV, 1, 1);
    assert_int_equal(c.res.outcome, OUTCOME_FAULT);
    assert_true(c.kind_seen[HB_WAIT_NEVER_SET]);
    assert_non_null(strstr(c.first.what, "WaitFlag(MTE2_V, 1)"));
}

static void k_set_unwaited(const void *p) {
    const args *a = p;
    SetFlag(MTE3_S, 2);
    if (!a->racy) WaitFlag(MTE3_S, 2);
}

static void test_setflag_never_waited_is_a_sync_error(void **state) {
    (void)state;
    expect_clean_run(k_set_unwaited, 0, 1, CORE_AIV, 1, 1);
    checked c = run_checked(k_set_unwaited, 1, 1, CORE_AIV, 1, 1);
    assert_true(c.kind_seen[HB_FLAG_NEVER_WAITED]);
    assert_non_null(strstr(c.first.what, "SetFlag(MTE3_S, 2)"));
    assert_true(c.first.a.seq > 0);
}

/* A consumer waiting for a flag nobody stores: the wait never satisfied,
 * named with the word's last write. */
static void k_never(const void *p) {
    const args *a = p;
    if (GetBlockIdx() == 0) SetValue32(a->flag, a->racy ? 2 : 1);
    else WaitGM32(a->flag, COND_EQ, 1);
}

static void test_wait_never_satisfied_names_the_last_write(void **state) {
    (void)state;
    expect_clean_run(k_never, 0, 2, CORE_AIV, 1, 1);
    checked c = run_checked(k_never, 1, 2, CORE_AIV, 1, 1);
    assert_int_equal(c.res.outcome, OUTCOME_DEADLOCK);
    assert_true(c.kind_seen[HB_WAIT_NEVER_SATISFIED]);
    assert_int_equal(c.first.a.pipe, PIPE_S);
    assert_true(c.first.a.write);
    assert_true(c.first.b.seq > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_order_per_pipe),
        cmocka_unit_test(test_setflag_waitflag_orders_pipes),
        cmocka_unit_test(test_pipe_barrier_orders_scalar_after_mte2),
        cmocka_unit_test(test_transfer_reading_a_word_acquires_at_completion),
        cmocka_unit_test(test_crosscore_flag_orders_aic_and_aiv),
        cmocka_unit_test(test_gm_wait_acquires_the_store_it_observed),
        cmocka_unit_test(test_remote_store_over_hccs_is_an_edge),
        cmocka_unit_test(test_sync_all_orders_cores),
        cmocka_unit_test(test_rdma_completion_publishes_at_its_done),
        cmocka_unit_test(test_atomic_adds_commute_plain_writes_race),
        cmocka_unit_test(test_polled_flag_is_not_a_race),
        cmocka_unit_test(test_waitflag_never_set_is_a_sync_error),
        cmocka_unit_test(test_setflag_never_waited_is_a_sync_error),
        cmocka_unit_test(test_wait_never_satisfied_names_the_last_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_engine_local_steps.c - a UB scalar access is a local step
 * (eng_sync_local): it goes past other cores' queued work without a switch
 * unless one of its own core's queued transfers touches those bytes first.
 * The stream must be the one a switch at every step gives, which is what
 * the engine does while a checker watches hooks (on_hook set): so each
 * program runs twice, with and without a hook observer, and every event
 * (FNV digest, tests/digest.h), the outcome and the outputs must agree.
 *
 * The program reads UB that its own DataCopy is filling, before and after
 * the copy lands, without waiting (the bytes it sees depend on when each
 * copy completes, so a step that ran past a landing copy gives other
 * values); one variant faults right after local steps, whose fault event
 * must come where a switch at every step puts it.
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
#include "tests/digest.h"

#define RANKS 8
#define BLOCKS 4
#define ROUNDS 40

typedef struct local_args {
    gm_t src, out;
    int fault_rank;            /* -1: none */
} local_args;

static void k_local_steps(const void *a) {
    const local_args *p = a;
    int r = GetRank(), b = GetBlockIdx();
    local_t ub = AllocUB(1024);
    uint64_t acc = 0;
    for (int i = 0; i < ROUNDS; i++) {
        DataCopy(ub, gm_add(p->src, 256 * (i % 4)), 256);
        acc = acc * 31 + (uint32_t)UbGet32(ub, 0);   /* likely still in flight */
        UbSet32(ub, 512, i);                          /* bytes no copy touches */
        ScalarCycles((uint64_t)(40 * (r + 1) + 7 * b));   /* lands now or later */
        acc = acc * 31 + (uint32_t)UbGet32(ub, 4);
        acc = acc * 31 + (uint32_t)UbGet32(ub, 512);
        SetValue64(gm_add(p->out, 8 * (r * BLOCKS + b)), (int64_t)acc);
        UbSet32(ub, 516, i);
        if (r == p->fault_rank && b == 1 && i == ROUNDS / 2) UbGet32(ub, 1u << 20);
    }
}

static void no_hook(void *ctx, const engine_hook *h) {
    (void)ctx;
    (void)h;
}

typedef struct outcome {
    digest d;
    engine_result res;
    int64_t out[RANKS * BLOCKS];
} outcome;

static void run_program(int fault_rank, int hooks, outcome *o) {
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = RANKS;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    local_args p = {.fault_rank = fault_rank};
    assert_int_equal(engine_sym_alloc(e, 1024, "src", &p.src, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, 8 * RANKS * BLOCKS, "out", &p.out, err, sizeof err),
                     ENGINE_OK);
    for (int r = 0; r < RANKS; r++) {
        int32_t *src = engine_gm_host(e, gm_on_rank(p.src, r), 1024);
        for (int i = 0; i < 256; i++) src[i] = 1000 * r + i + 1;
    }
    assert_int_equal(engine_launch(e, "local", k_local_steps, &p, BLOCKS, CORE_AIV, err, sizeof err),
                     ENGINE_OK);
    memset(o, 0, sizeof *o);
    engine_observer obs = {.ctx = &o->d, .on_event = digest_on_event};
    digest_init(&o->d);
    if (hooks) obs.on_hook = no_hook;
    engine_set_observer(e, &obs);
    assert_int_equal(engine_run(e, &o->res, err, sizeof err), ENGINE_OK);
    memcpy(o->out, engine_gm_host(e, p.out, sizeof o->out), sizeof o->out);
    engine_destroy(e);
}

static void same_with_and_without_hooks(int fault_rank, engine_outcome expect) {
    outcome fast, each;
    run_program(fault_rank, 0, &fast);
    run_program(fault_rank, 1, &each);
    assert_int_equal(fast.res.outcome, expect);
    assert_int_equal(each.res.outcome, expect);
    assert_true(fast.d.events > 1000);
    assert_int_equal(fast.d.events, each.d.events);
    if (fast.d.h != each.d.h) fail_msg("the event streams differ (%llu events)",
                                       (unsigned long long)fast.d.events);
    assert_int_equal(fast.res.end_time, each.res.end_time);
    assert_string_equal(fast.res.message, each.res.message);
    assert_memory_equal(fast.out, each.out, sizeof fast.out);
}

static void test_reads_of_landing_copies_are_the_same(void **state) {
    (void)state;
    same_with_and_without_hooks(-1, OUTCOME_COMPLETED);
}

static void test_fault_after_local_steps_is_the_same(void **state) {
    (void)state;
    same_with_and_without_hooks(5, OUTCOME_FAULT);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_of_landing_copies_are_the_same),
        cmocka_unit_test(test_fault_after_local_steps_is_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_ascendc_cpu_debug.cpp - npurr/ascendc_cpu_debug.h: a CANN CPU Debug
 * host program (GmAlloc, SetKernelMode, ICPU_SET_TILING_KEY, ICPU_RUN_KF,
 * GmFree), unchanged but for its include, run as npurr's cpu-debug kernel:
 * its main fills the inputs, the kernel runs on the emulated cores, main
 * checks the output after the run and its return is the check's verdict.
 *
 * The header renames every main after it: the test's own is defined with
 * the macro undone, the program's with it in place.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {   /* this cmocka's header declares its functions without it */
#include <cmocka.h>
}

#define NPURR_CPU_DEBUG_NO_PLUGIN 1   /* the test links npurr's own host table */
#include "npurr/ascendc_cpu_debug.h"
#include "tests/ascendc_support.h"

extern "C" {
#include "kernels/kernels.h"
}

static int run_program(const char *args, char *msg, size_t msglen) {
    const npurr_kernel *d = npurr_cpu_debug::kernel();
    kernel_opts o;
    kopts_init(&o, d);
    assert_int_equal(kopts_set(&o, "args", args), 0);
    engine *e = acs::make(1, 2);
    void *state = nullptr;
    char err[512];
    if (d->setup(e, &o, &state, err, sizeof err)) fail_msg("setup: %s", err);
    engine_result r;
    assert_int_equal(engine_run(e, &r, err, sizeof err), ENGINE_OK);
    acs::expect_ok(r);
    int verdict = d->check(e, state, msg, msglen);
    d->destroy(state);
    engine_destroy(e);
    return verdict;
}

static void test_program_runs_and_checks(void **state) {
    (void)state;
    char msg[256];
    assert_int_equal(run_program("8 2048", msg, sizeof msg), 0);
}

static void test_program_verdict(void **state) {
    (void)state;
    char msg[256];
    /* "wrong" makes the program expect other sums: it returns 3 */
    assert_int_equal(run_program("8 2048 wrong", msg, sizeof msg), 1);
    assert_non_null(std::strstr(msg, "cpu-debug: the program returned 3"));
}

#undef main
int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_program_runs_and_checks),
        cmocka_unit_test(test_program_verdict),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#define main npurr_cpu_debug_main_impl

/* The program, as a user builds it into a plugin (tests/e2e/ascendc.sh does). */
#include "tests/data/cpu_debug_add.cpp"

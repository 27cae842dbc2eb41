/*
 * test_fidelity.c - measured rows (session/session.h fidelity_*): the CSV
 * reader, one row's run and the fit, below the CLI that tests/e2e/
 * calibrate.sh drives.
 *
 * Covered: quoting ("" inside quotes, commas inside, blanks around), a
 * UTF-8 byte order mark, comments, a row no kernel covers, options left
 * for the run (FIDELITY_LATE_OPTIONS) and then reported by it naming the
 * row; msprof op_summary rows matched by "OP Type" alone, averaged, other
 * ops ignored; a run's phases inside its total and the same row giving the
 * same time run alone, forked, and deduplicated with its sibling phase;
 * the error's formula; and the fit recovering one perturbed parameter on
 * the rows that depend on it, while one they do not see stays where it
 * started.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "session/session.h"

static char path[64];

static void write_file(const char *text) {
    snprintf(path, sizeof path, "/tmp/npurr_fidelity_%d.csv", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

#define SHAPE "--nodes 2 --npus-per-node 2 --tokens 32 --hidden 512 --experts 16 --rounds 1"

static void test_quoting_comments_bom_and_uncovered(void **state) {
    (void)state;
    write_file("\xEF\xBB\xBFid , kernel,options,phase,measured_us,use,source\n"
               "# a comment\n"
               "\n"
               "a, fullmesh-dispatch-combine ,\"" SHAPE "\",dispatch, 12.5 ,train,\"PR #1, \"\"x\"\"\"\n"
               "b,-,\"no kernel, yet\",combine,3,validate,\n");
    fidelity_table t;
    char err[2048];
    assert_int_equal(fidelity_table_read(path, NULL, 0, &t, err, sizeof err), SESSION_OK);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.rows[0].id, "a");
    assert_string_equal(t.rows[0].kernel, "fullmesh-dispatch-combine");
    assert_string_equal(t.rows[0].options, SHAPE);
    assert_true(t.rows[0].covered && t.rows[0].train);
    assert_true(fabs(t.rows[0].measured_us - 12.5) < 1e-12);
    assert_string_equal(t.rows[0].source, "PR #1, \"x\"");
    assert_string_equal(t.rows[1].options, "no kernel, yet");
    assert_false(t.rows[1].covered);
    assert_false(t.rows[1].train);
    fidelity_result r;
    engine_hw hw;
    engine_hw_defaults(&hw);
    fidelity_run(&t.rows[1], &hw, &r);
    assert_false(r.ok);
    assert_string_equal(r.error, "not covered: no kernel, yet");
    fidelity_table_free(&t);
    unlink(path);
}

static void test_late_options_are_reported_by_the_run(void **state) {
    (void)state;
    write_file("kernel,options,phase,measured_us\n"
               "fullmesh-dispatch-combine,\"--nodes 1 --quant int3\",combine,3\n");
    fidelity_table t;
    char err[2048];
    assert_int_equal(fidelity_table_read(path, NULL, 0, &t, err, sizeof err), SESSION_ERROR);
    assert_non_null(strstr(err, ":2: options '--nodes 1 --quant int3'"));
    assert_int_equal(fidelity_table_read(path, NULL, FIDELITY_LATE_OPTIONS, &t, err, sizeof err),
                     SESSION_OK);
    fidelity_result r;
    engine_hw hw;
    engine_hw_defaults(&hw);
    fidelity_run(&t.rows[0], &hw, &r);
    assert_false(r.ok);
    assert_non_null(strstr(r.error, ":2: options '--nodes 1 --quant int3'"));
    fidelity_table_free(&t);
    unlink(path);
}

static void test_op_summary_by_type_averaged(void **state) {
    (void)state;
    write_file("Device_id,Op Name,OP Type,Task Duration(us)\n"
               "0,op_a,MoeDistributeCombineV2,10\n"
               "0,op_b,Cast,1000\n"
               "1,op_c,MoeDistributeCombineV2,20\n");
    fidelity_table t;
    char err[2048];
    assert_int_equal(fidelity_table_read(path, "-k fullmesh-dispatch-combine " SHAPE, 0, &t, err,
                                         sizeof err), SESSION_OK);
    assert_int_equal(t.n, 1);
    assert_string_equal(t.rows[0].phase, "combine");
    assert_string_equal(t.rows[0].kernel, "fullmesh-dispatch-combine");
    assert_string_equal(t.rows[0].options, SHAPE);
    assert_true(fabs(t.rows[0].measured_us - 15) < 1e-12);
    assert_non_null(strstr(t.rows[0].where, "2 rows"));
    fidelity_table_free(&t);
    /* the op_summary needs its shape, and a measured-rows file refuses one */
    assert_int_equal(fidelity_table_read(path, NULL, 0, &t, err, sizeof err), SESSION_ERROR);
    assert_non_null(strstr(err, "--kernel-options"));
    unlink(path);
}

static void test_phases_and_parallel_runs_agree(void **state) {
    (void)state;
    write_file("kernel,options,phase,measured_us\n"
               "fullmesh-dispatch-combine,\"" SHAPE "\",dispatch,10\n"
               "fullmesh-dispatch-combine,\"" SHAPE "\",combine,10\n"
               "fullmesh-dispatch-combine,\"" SHAPE "\",total,10\n");
    fidelity_table t;
    char err[2048];
    assert_int_equal(fidelity_table_read(path, NULL, 0, &t, err, sizeof err), SESSION_OK);
    engine_hw hw[3];
    const fidelity_row *rows[3];
    fidelity_result alone[3], many[3];
    for (int i = 0; i < 3; i++) {
        engine_hw_defaults(&hw[i]);
        rows[i] = &t.rows[i];
        fidelity_run(rows[i], &hw[i], &alone[i]);
        assert_true(alone[i].ok);
    }
    assert_int_equal(alone[0].nphases, 2);
    assert_true(alone[0].us > 0 && alone[1].us > 0);
    assert_true(alone[0].us <= alone[2].us && alone[1].us <= alone[2].us);
    assert_true(alone[2].us == alone[2].total_us);
    fidelity_run_many(rows, hw, 3, 2, many);
    for (int i = 0; i < 3; i++) {
        assert_true(many[i].ok);
        assert_true(many[i].us == alone[i].us);
    }
    /* a slower NIC: slower rows, the same rows again under it in parallel */
    *(double *)((char *)&hw[1] + engine_hw_find("roce_gbytes_per_s")->offset) /= 4;
    fidelity_run_many(rows, hw, 3, 2, many);
    assert_true(many[1].us > alone[1].us);
    assert_true(many[0].us == alone[0].us);
    fidelity_table_free(&t);
    unlink(path);
}

static void test_error_formula(void **state) {
    (void)state;
    double npurr[2] = {20, 5}, meas[2] = {10, 10};
    /* 2x too slow and 2x too fast weigh the same */
    assert_true(fabs(fidelity_error(npurr, meas, 2) - 2 * log(2) * log(2)) < 1e-12);
}

static void test_fit_recovers_the_nic(void **state) {
    (void)state;
    /* measured: npurr's own times with the NIC at 0.6x */
    write_file("kernel,options,phase,measured_us\n"
               "fullmesh-dispatch-combine,\"" SHAPE "\",dispatch,1\n"
               "fullmesh-dispatch-combine,\"" SHAPE "\",combine,1\n");
    fidelity_table t;
    char err[2048];
    assert_int_equal(fidelity_table_read(path, NULL, 0, &t, err, sizeof err), SESSION_OK);
    engine_hw truth, start;
    engine_hw_defaults(&truth);
    engine_hw_defaults(&start);
    const engine_hw_param *nic = engine_hw_find("roce_gbytes_per_s");
    assert_non_null(nic);
    assert_true(nic->fit);   /* the NIC stays a fitted cost */
    *(double *)((char *)&truth + nic->offset) *= 0.6;
    for (int i = 0; i < t.n; i++) {
        fidelity_result r;
        fidelity_run(&t.rows[i], &truth, &r);
        assert_true(r.ok);
        t.rows[i].measured_us = r.us;
    }
    fidelity_fit_opts o = {.jobs = 2, .max_evals = 60};
    fidelity_fit_result fr;
    assert_int_equal(fidelity_fit(&t, &start, &o, &fr, err, sizeof err), SESSION_OK);
    assert_true(fr.error_start > 0.01);
    /* 0.013 -> 0.001 on the fitted defaults of issue #26 (the 6 us AICPU task hides much of
     * the NIC at this shape): every row back within 5 % */
    assert_true(fr.error_fit < fr.error_start / 10);
    assert_true(fr.evals <= 60);
    for (int i = 0; i < t.n; i++) {
        fidelity_result r;
        fidelity_run(&t.rows[i], &fr.hw, &r);
        assert_true(r.ok);
        assert_true(fabs(r.us / t.rows[i].measured_us - 1) < 0.05);
    }
    /* parameters the fit does not own are the start's, bit for bit */
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        if (p->fit) continue;
        assert_true(*(double *)((char *)&fr.hw + p->offset) ==
                    *(double *)((char *)&start + p->offset));
    }
    fidelity_table_free(&t);
    unlink(path);
}

/* A row that would take a parameter past 16x of its documented value does
 * not: the fit stops at the box's edge (a parameter the rows hardly see
 * would otherwise drift to a bound for a sliver of error). */
static void test_fit_stays_within_16x_of_the_defaults(void **state) {
    (void)state;
    write_file("kernel,options,phase,measured_us\n"
               "fullmesh-dispatch-combine,\"" SHAPE "\",dispatch,1\n");
    fidelity_table t;
    char err[2048];
    assert_int_equal(fidelity_table_read(path, NULL, 0, &t, err, sizeof err), SESSION_OK);
    engine_hw start;
    engine_hw_defaults(&start);
    fidelity_result r;
    fidelity_run(&t.rows[0], &start, &r);
    assert_true(r.ok);
    t.rows[0].measured_us = r.us * 1000;   /* a thousand times slower than npurr */
    fidelity_fit_opts o = {.jobs = 2, .max_evals = 60};
    fidelity_fit_result fr;
    assert_int_equal(fidelity_fit(&t, &start, &o, &fr, err, sizeof err), SESSION_OK);
    assert_true(fr.error_fit < fr.error_start);
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        if (!p->fit) continue;
        double v = *(double *)((char *)&fr.hw + p->offset);
        assert_true(v >= p->def / 16 * (1 - 1e-9) && v <= p->def * 16 * (1 + 1e-9));
    }
    fidelity_table_free(&t);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quoting_comments_bom_and_uncovered),
        cmocka_unit_test(test_late_options_are_reported_by_the_run),
        cmocka_unit_test(test_op_summary_by_type_averaged),
        cmocka_unit_test(test_phases_and_parallel_runs_agree),
        cmocka_unit_test(test_error_formula),
        cmocka_unit_test(test_fit_recovers_the_nic),
        cmocka_unit_test(test_fit_stays_within_16x_of_the_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * fidelity_run.c - one measured row run on npurr: its `record` command line
 * rebuilt (run_spec_from_words on "-k KERNEL OPTIONS"), the timing
 * parameters replaced by the set under test, recorded without a trace
 * (record_session_open/run), and the phases read from the engine after the run
 * (record_hooks.on_ran): a phase lasts from the first core taking one of
 * its roles to the last leaving one (engine_role_span), as a profiler
 * times the kernel that phase stands for; "total" is the run's end.
 *
 * Many rows (a calibration tries each parameter set on every training row)
 * run in the engine's process pool, up to -j at once, each in its own
 * process even at -j 1: a run is single-threaded and owns its engine, and
 * a row in its own process is one Ctrl-C can stop while the rows already
 * finished are kept. The results do not depend on -j.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "calibrate/calibrate.h"

/* The span of one phase over its roles, in us; -1 if none of them ran. */
static double phase_span(engine *e, const kernel_phase *p) {
    uint64_t lo = UINT64_MAX, hi = 0;
    int any = 0;
    for (int i = 0; i < 8 && p->roles[i]; i++) {
        uint64_t b, en;
        if (engine_role_span(e, p->roles[i], &b, &en)) {
            any = 1;
            if (b < lo) lo = b;
            if (en > hi) hi = en;
        }
    }
    return any ? (double)(hi - lo) / 1e6 : -1.0;
}

typedef struct phase_ctx {
    fidelity_result *res;
    const kernel_desc *k;
} phase_ctx;

static void on_ran_phases(void *ctx, engine *e, const record_result *r) {
    phase_ctx *pc = ctx;
    fidelity_result *res = pc->res;
    res->total_us = r->ran ? (double)r->run.end_time / 1e6 : 0;
    res->used = engine_resources_used(e);
    res->nphases = 0;
    for (const kernel_phase *p = pc->k->phases; p && p->name && res->nphases < FIDELITY_MAX_PHASES;
         p++) {
        snprintf(res->phase_name[res->nphases], sizeof res->phase_name[0], "%s", p->name);
        res->phase_us[res->nphases++] = phase_span(e, p);
    }
}

/* A completed run's time of the row's phase into res->us (all phases are
 * there); not ok when none of the phase's roles ran. */
static void select_phase(const fidelity_row *row, fidelity_result *res) {
    res->us = 0;
    if (strcmp(row->phase, "total") == 0) {
        res->us = res->total_us;
    } else {
        for (int i = 0; i < res->nphases; i++)
            if (strcmp(res->phase_name[i], row->phase) == 0) res->us = res->phase_us[i];
    }
    if (res->us > 0) return;
    res->ok = 0;
    snprintf(res->error, sizeof res->error, "%s: -k %s %s: no core ran a role of phase %s",
             row->where, row->kernel, row->options, row->phase);
}

void fidelity_run(const fidelity_row *row, const engine_hw *hw, int check, fidelity_result *res) {
    memset(res, 0, sizeof *res);
    if (!row->covered) {
        snprintf(res->error, sizeof res->error, "not covered: %s", row->options);
        return;
    }
    char **words = NULL;
    int n = shell_split(row->options, &words);
    if (n < 0) {
        snprintf(res->error, sizeof res->error, "%s: options: malformed quoting", row->where);
        return;
    }
    run_spec spec;
    char err[1024] = "";
    int rc = run_spec_from_words(row->kernel, words, n, &spec, err, sizeof err);
    if (rc) {
        snprintf(res->error, sizeof res->error, "%s: options '%s': %s", row->where, row->options,
                 err);
        return;
    }
    spec.opts.config.hw = *hw;
    spec.opts.no_trace = 1;
    spec.opts.out_dir = NULL;
    spec.opts.quiet = 1;
    spec.opts.skip_check = !check;
    phase_ctx pc = {res, spec.opts.kernel};
    record_hooks hooks = {.ctx = &pc, .on_ran = on_ran_phases};
    record_session *s = NULL;
    rc = record_session_open(&spec, &hooks, &s, err, sizeof err);
    const record_result *r = rc ? NULL : record_session_run(s, 0);
    if (rc) {   /* a refused shape: err names the option */
        snprintf(res->error, sizeof res->error, "%s: %s", row->where, err);
    } else if (!r->ran) {
        snprintf(res->error, sizeof res->error, "%s: -k %s %s: %s", row->where, row->kernel,
                 row->options, r->error);
    } else if (r->run.outcome != OUTCOME_COMPLETED) {
        snprintf(res->error, sizeof res->error, "%s: -k %s %s: the run ended in %s: %s",
                 row->where, row->kernel, row->options, engine_outcome_name(r->run.outcome),
                 r->run.message);
    } else if (strcmp(r->check, "failed") == 0) {
        snprintf(res->error, sizeof res->error, "%s: -k %s %s: the output check failed: %s",
                 row->where, row->kernel, row->options, r->check_message);
    } else {
        res->ok = 1;
    }
    if (res->ok) select_phase(row, res);
    record_session_close(s);
    run_spec_free(&spec);
}

/* ---------------------------------------------------------------- in parallel */

typedef struct pool_rows {
    const fidelity_row *const *rows;
    const engine_hw *hws;
    fidelity_result *res;
    int check;
    fidelity_progress_fn progress;
    void *ctx;
} pool_rows;

static void run_job(void *ctx, size_t i, void *result) {
    pool_rows *p = ctx;
    fidelity_run(p->rows[i], &p->hws[i], p->check, result);
}

static void job_done(void *ctx, size_t i, int sent, int wstatus, size_t finished, size_t total) {
    pool_rows *p = ctx;
    const fidelity_row *row = p->rows[i];
    fidelity_result *out = &p->res[i];
    if (!sent && WIFSIGNALED(wstatus))
        snprintf(out->error, sizeof out->error, "%s: -k %s %s: the run's process was killed by "
                 "signal %d", row->where, row->kernel, row->options, WTERMSIG(wstatus));
    else if (!sent)
        snprintf(out->error, sizeof out->error, "%s: -k %s %s: the run's process exited (status "
                 "%d) without a result", row->where, row->kernel, row->options,
                 WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    if (p->progress) p->progress(p->ctx, row, out, (int)finished, (int)total);
}

/* Every row in its own process (engine_pool_run), so Ctrl-C keeps what
 * finished; a row that did not run says why. 1 when interrupted. */
static int run_distinct(const fidelity_row *const *rows, const engine_hw *hws, int n, int jobs,
                        int check, fidelity_result *res, fidelity_progress_fn progress,
                        void *ctx) {
    pool_rows p = {rows, hws, res, check, progress, ctx};
    char err[256] = "";
    int rc = engine_pool_run((size_t)n, jobs, sizeof *res, run_job, job_done, &p, res, err,
                             sizeof err);
    for (int i = 0; i < n; i++) {
        if (res[i].ok || res[i].error[0]) continue;
        res[i].stopped = rc == 1;
        if (rc == 1)
            snprintf(res[i].error, sizeof res[i].error, "%s: -k %s %s: interrupted before this "
                     "run finished", rows[i]->where, rows[i]->kernel, rows[i]->options);
        else
            snprintf(res[i].error, sizeof res[i].error, "%s: -k %s %s: not run: %s",
                     rows[i]->where, rows[i]->kernel, rows[i]->options, err);
    }
    return rc == 1;
}

/* The same shape under the same parameters runs once: a run gives every
 * phase, and rows of one run (its notify and its dispatch) differ only in
 * the phase they read. */
static int same_run(const fidelity_row *a, const engine_hw *ha, const fidelity_row *b,
                    const engine_hw *hb) {
    return strcmp(a->kernel, b->kernel) == 0 && strcmp(a->options, b->options) == 0 &&
           memcmp(ha, hb, sizeof *ha) == 0;
}

int fidelity_run_many(const fidelity_row *const *rows, const engine_hw *hws, int n, int jobs,
                      int check, fidelity_result *res, fidelity_progress_fn progress, void *ctx) {
    int *first = calloc((size_t)n + 1, sizeof *first);
    const fidelity_row **urows = calloc((size_t)n + 1, sizeof *urows);
    engine_hw *uhws = calloc((size_t)n + 1, sizeof *uhws);
    fidelity_result *ures = calloc((size_t)n + 1, sizeof *ures);
    if (!first || !urows || !uhws || !ures) {
        /* Not every row on its own instead: that runs each shape as many
         * times as rows name it, for minutes, and says nothing. */
        free(first); free(urows); free(uhws); free(ures);
        for (int i = 0; i < n; i++) {
            memset(&res[i], 0, sizeof res[i]);
            snprintf(res[i].error, sizeof res[i].error,
                     "%s: out of memory for the table of %d rows to run", rows[i]->where, n);
        }
        return 0;
    }
    int m = 0;
    for (int i = 0; i < n; i++) {
        int j = 0;
        while (j < m && !same_run(urows[j], &uhws[j], rows[i], &hws[i])) j++;
        if (j == m) {
            urows[m] = rows[i];
            uhws[m++] = hws[i];
        }
        first[i] = j;
    }
    int interrupted = run_distinct(urows, uhws, m, jobs, check, ures, progress, ctx);
    for (int i = 0; i < n; i++) {
        res[i] = ures[first[i]];
        if (!res[i].ok) continue;
        select_phase(rows[i], &res[i]);
    }
    free(first); free(urows); free(uhws); free(ures);
    return interrupted;
}

double fidelity_error(const double *npurr_us, const double *measured_us, int n) {
    double e = 0;
    for (int i = 0; i < n; i++) {
        double d = log(npurr_us[i] / measured_us[i]);
        e += d * d;
    }
    return e;
}

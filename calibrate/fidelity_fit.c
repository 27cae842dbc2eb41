/*
 * fidelity_fit.c - `npurr calibrate`'s fit: the timing parameters engine/
 * timing.c flags as fitted, moved until npurr's times of the training rows
 * match the measured ones.
 *
 * The error is the sum over training rows of log(npurr / measured)^2, so a
 * row 2x too slow weighs what a row 2x too fast does, whatever its size.
 * Each parameter is searched in its logarithm (a bandwidth and a cycle
 * count both act as factors) and stays inside its accepted range, within
 * 16x of its documented default. Virtual times are piecewise in the parameters (a cost hides behind another until
 * it is the longer one), so the search uses no derivatives: a compass
 * search, one parameter at a time, trying a step up and a step down (both
 * at once, so -j runs them side by side and the result does not depend on
 * -j); a step that lowers the error (by 0.1 % of it at least, so that a
 * parameter the rows hardly see keeps its documented value) is taken and
 * doubled, a step that does not is halved, until every step is under
 * 0.2 %, the rows are matched within 0.01 % or the evaluations run out. A parameter set under which a row fails (a deadlock at an extreme
 * value) is worse than any that runs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"

#define STEP0 0.69314718055994531   /* log 2: the first step is a factor of 2 */
#define STEP_MAX 2.7725887222397811 /* log 16 */
#define STEP_MIN 0.0019980026626731 /* log 1.002 */
#define GAIN 1e-3                   /* a step must lower the error by 0.1 % */
#define DONE 1e-8                   /* per row: 0.01 % off, as close as wanted */
#define FLOOR 1e-9                  /* lower bound of a parameter whose range starts at 0 */
#define BOX 2.7725887222397811      /* log 16: how far a fit may take a parameter from its
                                       documented default */

typedef struct fit {
    const fidelity_table *t;
    const engine_hw *start;
    const fidelity_fit_opts *o;
    const fidelity_row **train;     /* the training rows */
    int ntrain;
    const engine_hw_param *p[FIDELITY_MAX_FIT];
    int np;
    double lo[FIDELITY_MAX_FIT], hi[FIDELITY_MAX_FIT];
    double x0[FIDELITY_MAX_FIT];    /* where each started: kept as given until it moves */
    int evals;
    double best;
} fit;

static void hw_at(const fit *f, const double *x, engine_hw *hw) {
    *hw = *f->start;
    char ignored[256];
    for (int i = 0; i < f->np; i++)
        if (x[i] != f->x0[i])   /* inside the range by construction; exp's last bit clamped */
            engine_hw_put(hw, f->p[i], fmin(fmax(exp(x[i]), f->p[i]->min), f->p[i]->max),
                          ignored, sizeof ignored);
}

/* The error of each of m parameter sets xs (np values each) into err[];
 * the first failure's message into why when why is not NULL. */
static int evaluate(fit *f, const double *xs, int m, double *err, char *why, size_t whylen) {
    int n = m * f->ntrain;
    const fidelity_row **rows = calloc((size_t)n, sizeof *rows);
    engine_hw *hws = calloc((size_t)n, sizeof *hws);
    fidelity_result *res = calloc((size_t)n, sizeof *res);
    double *npurr = calloc((size_t)f->ntrain, sizeof *npurr);
    double *meas = calloc((size_t)f->ntrain, sizeof *meas);
    if (!rows || !hws || !res || !npurr || !meas) {
        free(rows); free(hws); free(res); free(npurr); free(meas);
        if (why) snprintf(why, whylen, "out of memory");
        return -1;
    }
    for (int c = 0; c < m; c++) {
        engine_hw hw;
        hw_at(f, xs + c * f->np, &hw);
        for (int r = 0; r < f->ntrain; r++) {
            rows[c * f->ntrain + r] = f->train[r];
            hws[c * f->ntrain + r] = hw;
        }
    }
    fidelity_run_many(rows, hws, n, f->o->jobs, res, NULL, NULL);
    int failed = 0;
    for (int c = 0; c < m; c++) {
        int ok = 1;
        for (int r = 0; r < f->ntrain; r++) {
            const fidelity_result *x = &res[c * f->ntrain + r];
            if (!x->ok) {
                if (ok && why && !failed) snprintf(why, whylen, "%s", x->error);
                ok = 0;
                failed = 1;
                break;
            }
            npurr[r] = x->us;
            meas[r] = f->train[r]->measured_us;
        }
        err[c] = ok ? fidelity_error(npurr, meas, f->ntrain) : INFINITY;
        f->evals++;
        if (err[c] < f->best) f->best = err[c];
        if (f->o->progress) f->o->progress(f->o->ctx, f->evals, f->o->max_evals, f->best);
    }
    free(rows); free(hws); free(res); free(npurr); free(meas);
    return failed;
}

/* The fitted parameters (engine/timing.c flags them), the training rows
 * of t, each parameter's box, and where the search starts (x, step). 0, or
 * -1 with err (f->train freed). */
static int fit_setup(fit *f, const fidelity_table *t, double *x, double *step, char *err,
                     size_t errlen) {
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        if (!p->fit) continue;
        if (f->np == FIDELITY_MAX_FIT) {
            snprintf(err, errlen, "engine/timing.c flags more than %d parameters as fitted: the "
                     "timing policy allows at most %d (npurr hw)", FIDELITY_MAX_FIT,
                     FIDELITY_MAX_FIT);
            return -1;
        }
        f->p[f->np++] = p;
    }
    if (!f->np) {
        snprintf(err, errlen, "no timing parameter is flagged as fitted in this build (npurr hw)");
        return -1;
    }
    f->train = calloc((size_t)t->n + 1, sizeof *f->train);
    if (!f->train) { snprintf(err, errlen, "out of memory"); return -1; }
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].train && t->rows[i].covered) f->train[f->ntrain++] = &t->rows[i];
    if (!f->ntrain) {
        snprintf(err, errlen, "%s: no training rows (every row has use=validate or no kernel)",
                 t->n ? t->rows[0].where : "the table");
        free(f->train);
        f->train = NULL;
        return -1;
    }
    for (int i = 0; i < f->np; i++) {
        /* inside its accepted range and within 16x of its documented
         * value: a parameter the rows hardly see would otherwise drift to
         * a bound (a scalar op of 0.01 cycles) for a sliver of error */
        f->lo[i] = fmax(log(f->p[i]->min > 0 ? f->p[i]->min : FLOOR), log(f->p[i]->def) - BOX);
        f->hi[i] = fmin(log(f->p[i]->max), log(f->p[i]->def) + BOX);
        double v = engine_hw_get(f->start, f->p[i]);
        x[i] = fmin(fmax(log(v), f->lo[i]), f->hi[i]);
        f->x0[i] = log(v);   /* a start outside the range moves to its bound */
        step[i] = STEP0;
    }
    return 0;
}

int fidelity_fit(const fidelity_table *t, const engine_hw *start, const fidelity_fit_opts *o,
                 fidelity_fit_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    fit f = {.t = t, .start = start, .o = o, .best = INFINITY};
    double x[FIDELITY_MAX_FIT], step[FIDELITY_MAX_FIT];
    if (fit_setup(&f, t, x, step, err, errlen)) return SESSION_ERROR;
    double fx;
    char why[4096] = "";
    if (evaluate(&f, x, 1, &fx, why, sizeof why) != 0 || !isfinite(fx)) {
        snprintf(err, errlen, "%s", why[0] ? why : "the starting parameters fail a row");
        free(f.train);
        return SESSION_ERROR;
    }
    out->error_start = fx;
    for (;;) {
        int active = 0;
        for (int i = 0; i < f.np && f.evals + 2 <= o->max_evals && fx > DONE * f.ntrain; i++) {
            if (step[i] < STEP_MIN) continue;
            active = 1;
            double cand[2 * FIDELITY_MAX_FIT], e[2];
            int m = 0;
            for (int dir = 1; dir >= -1; dir -= 2) {
                double v = fmin(fmax(x[i] + dir * step[i], f.lo[i]), f.hi[i]);
                if (v == x[i]) continue;   /* against a bound */
                memcpy(cand + m * f.np, x, (size_t)f.np * sizeof *x);
                cand[m * f.np + i] = v;
                m++;
            }
            if (!m) { step[i] = 0; continue; }
            if (evaluate(&f, cand, m, e, NULL, 0) < 0) {
                snprintf(err, errlen, "out of memory");
                free(f.train);
                return SESSION_ERROR;
            }
            int b = m == 2 && e[1] < e[0] ? 1 : 0;
            if (e[b] < fx * (1 - GAIN)) {
                fx = e[b];
                x[i] = cand[b * f.np + i];
                step[i] = fmin(step[i] * 2, STEP_MAX);
            } else {
                step[i] /= 2;
            }
        }
        if (!active || f.evals + 2 > o->max_evals || fx <= DONE * f.ntrain) break;
    }
    hw_at(&f, x, &out->hw);
    out->error_fit = fx;
    out->evals = f.evals;
    out->train_rows = f.ntrain;
    out->nparams = f.np;
    memcpy(out->params, f.p, sizeof f.p);
    free(f.train);
    return SESSION_OK;
}

/*
 * fidelity_fit.c - `npurr calibrate`'s fit: the timing parameters engine/
 * timing.c flags as fitted, moved until npurr's times of the training rows
 * match the measured ones.
 *
 * The error is the sum over training rows of r_i^2, r_i = log(npurr_i /
 * measured_i), so a row 2x too slow weighs what a row 2x too fast does,
 * whatever its size. The parameters are searched in their logarithms (a
 * bandwidth and a cycle count both act as factors), inside their accepted
 * range and within 16x of their sourced estimate (engine_hw_param.est, the
 * box a parameter the rows hardly see would otherwise wander to the edge
 * of). Gauss-Newton with Levenberg-Marquardt damping on the log ratios:
 * the Jacobian by forward differences (each parameter 25 % up, all of them
 * in one batch of runs, so -j runs them side by side and the result does
 * not depend on -j), a damped step of at most 4x per parameter, accepted if
 * it lowers the error, else damped harder. It stops when a step gains less
 * than 1 % of the error, the rows are matched within 0.01 %, the
 * damping has grown past use or the evaluations run out. The result is
 * rounded to 4 significant digits, the values a table of defaults holds,
 * and its error is the error there.
 *
 * Virtual times are piecewise in the parameters (a cost hides behind
 * another until it is the longer one), so a difference step is 25 %, not
 * an infinitesimal. A row's run says what it priced (fidelity_result.used:
 * no RDMA, no AICPU task, no read of a peer's GM...); a parameter that
 * prices none of it (engine_hw_param.uses) cannot move the row, so a run is
 * reused whenever the parameters it can depend on are unchanged: a
 * single-node row is not run again when only the RoCE rate moves. A
 * parameter set under which a row fails (a deadlock at an extreme value)
 * is worse than any that runs.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "calibrate/calibrate.h"

#define STEP 0.22314355131420976    /* log 1.25: the difference step */
#define STEP_MAX 1.3862943611198906 /* log 4: the most one step moves a parameter */
#define BOX 2.7725887222397811      /* log 16: how far from its estimate a parameter may go */
#define FLOOR 1e-9                  /* lower bound of a parameter whose range starts at 0 */
#define GAIN 1e-2                   /* a step gaining less than this share of the error ends it */
#define DONE 1e-8                   /* per row: 0.01 % off, as close as wanted */
#define LAMBDA0 1e-2
#define LAMBDA_MAX 1e6

typedef struct cached {
    int row;
    double x[FIDELITY_MAX_FIT];
    fidelity_result res;
} cached;

typedef struct fit {
    const fidelity_fit_opts *o;
    const engine_hw *start;
    const fidelity_row **train;
    int ntrain;
    const engine_hw_param *p[FIDELITY_MAX_FIT];
    int np;
    double lo[FIDELITY_MAX_FIT], hi[FIDELITY_MAX_FIT];
    unsigned char *uses;            /* [row * np + j]: row i's run prices what parameter j does */
    unsigned char *known;           /* [row]: uses is known (after its first run) */
    cached *cache;
    int ncache, capcache;
    int evals;
    double best;
    int rounded;                    /* x holds the rounded fit: set the 4-digit values exactly */
} fit;

/* v rounded to 4 significant digits, the value a table of defaults holds:
 * the double its decimal text parses to, so the default written with those
 * digits in engine/timing.c is this value bit for bit. */
static double round4(double v) {
    if (v <= 0 || !isfinite(v)) return v;
    char text[32];
    snprintf(text, sizeof text, "%.4g", v);
    return strtod(text, NULL);
}

static void hw_at(const fit *f, const double *x, engine_hw *hw) {
    *hw = *f->start;
    char ignored[256];
    for (int i = 0; i < f->np; i++) {   /* inside the range by construction; exp's last bit clamped */
        /* exp(log(14.49)) is 14.489999999999998: the rounded fit is set as
         * the double its text reads back as, which is what a default holds */
        double v = f->rounded ? round4(exp(x[i])) : exp(x[i]);
        engine_hw_put(hw, f->p[i], fmin(fmax(v, f->p[i]->min), f->p[i]->max), ignored,
                      sizeof ignored);
    }
}

/* Whether x and y agree on every parameter row can depend on. */
static int same_for_row(const fit *f, int row, const double *x, const double *y) {
    for (int j = 0; j < f->np; j++)
        if (f->uses[row * f->np + j] && x[j] != y[j]) return 0;
    return 1;
}

/* The cache entry of a run of row whose parameters, those the row can
 * depend on, are x's, or -1. An index, not a pointer: remember() may move
 * the cache while earlier lookups are still read. */
static int lookup(const fit *f, int row, const double *x) {
    for (int c = 0; c < f->ncache; c++)
        if (f->cache[c].row == row && same_for_row(f, row, f->cache[c].x, x)) return c;
    return -1;
}

static int remember(fit *f, int row, const double *x, const fidelity_result *res) {
    if (f->ncache == f->capcache) {
        int cap = f->capcache ? 2 * f->capcache : 64;
        cached *grown = realloc(f->cache, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        f->cache = grown;
        f->capcache = cap;
    }
    cached *k = &f->cache[f->ncache++];
    k->row = row;
    memcpy(k->x, x, sizeof k->x);
    k->res = *res;
    return 0;
}

/* The residuals of each of m parameter sets xs (np values each) into
 * r[c * ntrain + i] and their errors into err[c] (INFINITY when a row
 * failed; its message into why). -1 when out of memory. */
static int evaluate(fit *f, const double *xs, int m, double *r, double *err, char *why,
                    size_t whylen) {
    int n = m * f->ntrain, to_run = 0;
    const fidelity_row **rows = calloc((size_t)n + 1, sizeof *rows);
    engine_hw *hws = calloc((size_t)n + 1, sizeof *hws);
    fidelity_result *res = calloc((size_t)n + 1, sizeof *res);
    int *slot = calloc((size_t)n + 1, sizeof *slot);
    int *got = calloc((size_t)n + 1, sizeof *got);   /* cache index, or -1 */
    if (!rows || !hws || !res || !slot || !got) {
        free(rows); free(hws); free(res); free(slot); free(got);
        return -1;
    }
    for (int c = 0; c < m; c++)
        for (int i = 0; i < f->ntrain; i++) {
            const double *x = xs + c * f->np;
            int at = c * f->ntrain + i;
            got[at] = lookup(f, i, x);
            slot[at] = -1;
            if (got[at] >= 0) continue;
            for (int d = i; d < at && slot[at] < 0; d += f->ntrain)   /* the same run asked twice */
                if (slot[d] >= 0 && same_for_row(f, i, x, xs + (d / f->ntrain) * f->np))
                    slot[at] = slot[d];
            if (slot[at] >= 0) continue;
            rows[to_run] = f->train[i];
            hw_at(f, x, &hws[to_run]);
            slot[at] = to_run++;
        }
    fidelity_run_many(rows, hws, to_run, f->o->jobs, 0, res, NULL, NULL);
    int rc = 0;
    for (int c = 0; c < m; c++) {
        double e = 0;
        for (int i = 0; i < f->ntrain; i++) {
            int at = c * f->ntrain + i;
            int fresh = got[at] < 0;
            const fidelity_result *x = fresh ? &res[slot[at]] : &f->cache[got[at]].res;
            if (fresh && x->ok && !f->known[i]) {   /* what this row's time depends on */
                for (int j = 0; j < f->np; j++)
                    f->uses[i * f->np + j] = !f->p[j]->uses || (x->used & f->p[j]->uses);
                f->known[i] = 1;
            }
            if (fresh && x->ok && remember(f, i, xs + c * f->np, x)) rc = -1;
            if (!x->ok) {
                if (why && isfinite(e)) snprintf(why, whylen, "%s", x->error);
                e = INFINITY;
                r[at] = 0;
                continue;
            }
            r[at] = log(x->us / f->train[i]->measured_us);
            e += r[at] * r[at];
        }
        err[c] = e;
        f->evals++;
        if (e < f->best) f->best = e;
        if (f->o->progress) f->o->progress(f->o->ctx, f->evals, f->o->max_evals, f->best);
    }
    free(rows); free(hws); free(res); free(slot); free(got);
    return rc;
}

/* Solves a * d = b (n <= FIDELITY_MAX_FIT, positive definite after the
 * damping) by Gaussian elimination with partial pivoting; -1 if singular. */
static int solve(int n, double a[FIDELITY_MAX_FIT][FIDELITY_MAX_FIT], double *b, double *d) {
    for (int c = 0; c < n; c++) {
        int piv = c;
        for (int r = c + 1; r < n; r++) if (fabs(a[r][c]) > fabs(a[piv][c])) piv = r;
        if (fabs(a[piv][c]) < 1e-300) return -1;
        if (piv != c) {
            for (int k = 0; k < n; k++) { double t = a[c][k]; a[c][k] = a[piv][k]; a[piv][k] = t; }
            double t = b[c]; b[c] = b[piv]; b[piv] = t;
        }
        for (int r = c + 1; r < n; r++) {
            double m = a[r][c] / a[c][c];
            for (int k = c; k < n; k++) a[r][k] -= m * a[c][k];
            b[r] -= m * b[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        double s = b[c];
        for (int k = c + 1; k < n; k++) s -= a[c][k] * d[k];
        d[c] = s / a[c][c];
    }
    return 0;
}

static double clampd(double v, double lo, double hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The Jacobian at x (residuals r there) into jac[i * np + j], each
 * parameter a step up (down at its upper bound), the columns' parameter
 * sets in one batch. A column whose set failed a row is zeros. */
static int jacobian(fit *f, const double *x, const double *r, double *jac) {
    int np = f->np, nt = f->ntrain;
    double xs[FIDELITY_MAX_FIT * FIDELITY_MAX_FIT], h[FIDELITY_MAX_FIT], err[FIDELITY_MAX_FIT];
    double *rj = calloc((size_t)(np * nt), sizeof *rj);
    if (!rj) return -1;
    for (int j = 0; j < np; j++) {
        memcpy(xs + j * np, x, (size_t)np * sizeof *x);
        h[j] = x[j] + STEP <= f->hi[j] ? STEP : -STEP;
        xs[j * np + j] = x[j] + h[j];
    }
    if (evaluate(f, xs, np, rj, err, NULL, 0) < 0) { free(rj); return -1; }
    for (int j = 0; j < np; j++)
        for (int i = 0; i < nt; i++)
            jac[i * np + j] = isfinite(err[j]) ? (rj[j * nt + i] - r[i]) / h[j] : 0;
    free(rj);
    return 0;
}

/* The parameters engine/timing.c flags as fitted and the training rows of
 * t into f. 0, or -1 with err (f->train freed). */
static int fit_select(fit *f, const fidelity_table *t, char *err, size_t errlen) {
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        if (p->fit != ENGINE_HW_FITTED) continue;
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
    return 0;
}

/* One Levenberg-Marquardt step from x (residuals r, Jacobian jac): damped
 * harder until a step lowers the error (taken into x, r, *fx) or the
 * damping grows past use. 1 when the step gained at least GAIN of the
 * error, 0 when it did not (or none was found), -1 out of memory. */
static int damped_step(fit *f, double *x, double *r, double *rn, const double *jac, double *fx,
                       double *lambda) {
    int np = f->np, nt = f->ntrain;
    while (*lambda < LAMBDA_MAX && f->evals + 1 <= f->o->max_evals) {
        double a[FIDELITY_MAX_FIT][FIDELITY_MAX_FIT], g[FIDELITY_MAX_FIT], d[FIDELITY_MAX_FIT];
        for (int j = 0; j < np; j++) {
            g[j] = 0;
            for (int i = 0; i < nt; i++) g[j] -= jac[i * np + j] * r[i];
            for (int k = 0; k < np; k++) {
                a[j][k] = 0;
                for (int i = 0; i < nt; i++) a[j][k] += jac[i * np + j] * jac[i * np + k];
            }
        }
        for (int j = 0; j < np; j++) a[j][j] += *lambda * (a[j][j] + 1e-12);
        double xn[FIDELITY_MAX_FIT], fn;
        int any = 0;
        if (solve(np, a, g, d) == 0)
            for (int j = 0; j < np; j++) {
                xn[j] = clampd(x[j] + clampd(d[j], -STEP_MAX, STEP_MAX), f->lo[j], f->hi[j]);
                any |= fabs(xn[j] - x[j]) > 1e-6;
            }
        if (!any) {
            *lambda = LAMBDA_MAX;
            return 0;
        }
        if (evaluate(f, xn, 1, rn, &fn, NULL, 0) < 0) return -1;
        if (fn < *fx) {
            double gain = (*fx - fn) / *fx;
            memcpy(x, xn, (size_t)np * sizeof *x);
            memcpy(r, rn, (size_t)nt * sizeof *r);
            *fx = fn;
            *lambda = fmax(*lambda / 4, 1e-6);
            return gain >= GAIN;
        }
        *lambda *= 4;
    }
    return 0;
}

/* Each parameter's box (its accepted range, within 16x of its sourced
 * estimate) and the start x inside it, in logarithms. */
static void fit_box(fit *f, double *x) {
    for (int i = 0; i < f->np; i++) {
        double est = f->p[i]->est > 0 ? f->p[i]->est : f->p[i]->def;
        f->lo[i] = fmax(log(f->p[i]->min > 0 ? f->p[i]->min : FLOOR), log(est) - BOX);
        f->hi[i] = fmin(log(f->p[i]->max), log(est) + BOX);
        x[i] = clampd(log(engine_hw_get(f->start, f->p[i])), f->lo[i], f->hi[i]);
    }
}

int fidelity_fit(const fidelity_table *t, const engine_hw *start, const fidelity_fit_opts *o,
                 fidelity_fit_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    fit f = {.o = o, .start = start, .best = INFINITY};
    if (fit_select(&f, t, err, errlen)) return SESSION_ERROR;
    int np = f.np, nt = f.ntrain, rc = SESSION_ERROR, have_jac = 0;
    f.uses = malloc((size_t)(np * nt));
    f.known = calloc((size_t)nt, 1);
    double *r = calloc((size_t)nt, sizeof *r), *rn = calloc((size_t)nt, sizeof *rn);
    double *jac = calloc((size_t)(np * nt), sizeof *jac);
    double x[FIDELITY_MAX_FIT], fx, lambda = LAMBDA0;
    char why[4096] = "";
    if (!f.uses || !f.known || !r || !rn || !jac) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    memset(f.uses, 1, (size_t)(np * nt));
    fit_box(&f, x);
    if (evaluate(&f, x, 1, r, &fx, why, sizeof why) < 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (!isfinite(fx)) {
        snprintf(err, errlen, "%s", why[0] ? why : "the starting parameters fail a row");
        goto done;
    }
    out->error_start = fx;
    while (fx > DONE * nt && f.evals + np + 1 <= o->max_evals) {
        if (jacobian(&f, x, r, jac) < 0) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        have_jac = 1;
        out->iterations++;
        int moved = damped_step(&f, x, r, rn, jac, &fx, &lambda);
        if (moved < 0) {
            snprintf(err, errlen, "out of memory");
            goto done;
        }
        if (!moved) break;
    }
    /* the defaults a table can hold: 4 significant digits */
    for (int i = 0; i < np; i++) x[i] = log(round4(exp(x[i])));
    f.rounded = 1;
    if (evaluate(&f, x, 1, r, &fx, why, sizeof why) < 0) {
        snprintf(err, errlen, "out of memory");
        goto done;
    }
    if (!isfinite(fx)) {
        snprintf(err, errlen, "at the rounded fit: %s", why);
        goto done;
    }
    hw_at(&f, x, &out->hw);
    out->error_fit = fx;
    out->evals = f.evals;
    out->train_rows = nt;
    out->nparams = np;
    memcpy(out->params, f.p, sizeof f.p);
    for (int j = 0; j < np; j++) {
        out->at_edge[j] = x[j] <= f.lo[j] + 1e-4 || x[j] >= f.hi[j] - 1e-4;
        double most = 0;   /* what moving it 2x does to the rows, from the last Jacobian */
        for (int i = 0; have_jac && i < nt; i++) {
            double m = fabs(expm1(jac[i * np + j] * log(2.0)));
            if (m > most) most = m;
        }
        out->moves_2x[j] = have_jac ? most : -1;
    }
    rc = SESSION_OK;
done:
    free(f.train);
    free(f.uses);
    free(f.known);
    free(f.cache);
    free(r);
    free(rn);
    free(jac);
    return rc;
}

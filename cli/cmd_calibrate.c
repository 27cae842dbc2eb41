/*
 * cmd_calibrate.c - `npurr calibrate MEASURED.csv -o OUT.hw`: the timing
 * parameters engine/timing.c flags as fitted, fitted to the training rows
 * of a measured-times file (session fidelity_fit), written as a complete
 * --hw file, with every row's ratio before and after (validation rows are
 * run, never fitted on).
 *
 * Every row is run once at the start parameters first: a row that cannot
 * run there (a refused shape, a deadlock) is an error naming it before any
 * fitting starts, and nothing is written. A validation row that fails under
 * the fitted values is an error too, after the file is written.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define DEFAULT_EVALS 150

static void calibrate_usage(FILE *out) {
    fprintf(out,
          "usage: npurr calibrate MEASURED.csv -o OUT.hw [--hw START] [-j J]\n"
          "                       [--max-evals N] [--kernel-options OPTS] [--plugin PATH.so]\n"
          "\n"
          "Fits the timing parameters `npurr hw` marks as fitted to measured kernel\n"
          "times and writes every parameter as a --hw file for `npurr record --hw`.\n"
          "MEASURED.csv has the header kernel,options,phase,measured_us and\n"
          "optionally id, use (train|validate) and source, one row per measured\n"
          "phase, e.g.\n"
          "  dispatch-layered,\"--nodes 2 --tokens 4096 --dispatches 1\",dispatch,13092\n"
          "(phase: one of the kernel's phases or total; docs/calibrate.md). Only\n"
          "train rows are fitted (all rows without a use\n"
          "column); validate rows are run before and after and printed. msprof's\n"
          "op_summary CSV is read too: its ops matched to the kernel's phases by\n"
          "name, several rows of one op averaged, the shape from --kernel-options.\n"
          "\n"
          "The fit minimizes the sum over train rows of log(npurr/measured)^2 by\n"
          "Gauss-Newton steps with Levenberg-Marquardt damping in the logarithm of\n"
          "each parameter, inside its accepted range and 16x of its sourced\n"
          "estimate, and rounds the result to 4 significant digits. Each\n"
          "evaluation runs the train rows whose time the moved parameters can\n"
          "change (without their output check: every row is run and checked once\n"
          "first).\n"
          "\n"
          "  -o OUT.hw              the fitted set (every key, with a comment header)\n"
          "  --hw START             start from these values (default: the defaults)\n"
          "  -j J                   rows run at once, in forked processes (default 1)\n"
          "  --max-evals N          parameter sets tried at most (default %d)\n"
          "  --kernel-options OPTS  an op_summary's shape: \"-k KERNEL --nodes N ...\"\n"
          "  --plugin PATH.so       load a plugin whose kernels rows name (repeatable)\n"
          "  -h, --help             this text\n"
          "\n"
          "Ctrl-C or SIGTERM stops the runs in flight; a fit cut short writes nothing.\n"
          "\n"
          "Exit status: 0 fitted and written, 1 a bad measured file, a row that fails or\n"
          "Ctrl-C, 2 usage (a bad --hw file included, as in record).\n",
          DEFAULT_EVALS);
}

typedef struct progress {
    int tty;
    int last;
    double t0;   /* when the fit began (engine_host_seconds) */
} progress;

/* "evaluation k of at most N, best error E, T elapsed, ETA at most T'": the
 * ETA assumes every evaluation left takes the mean so far, and the search
 * may stop before N, so it is an upper bound. */
static void on_progress(void *ctx, int k, int max, double best) {
    progress *p = ctx;
    double el = engine_host_seconds() - p->t0;
    double eta = k > 0 ? el / k * (max - k) : 0;
    if (p->tty) {
        fprintf(stderr, "\rcalibrate: evaluation %d of at most %d, best error %.6g, %.1f s elapsed, "
                "ETA at most %.0f s   ", k, max, best, el, eta);
    } else if (k == 1 || k - p->last >= 10) {
        fprintf(stderr, "calibrate: evaluation %d of at most %d, best error %.6g, %.1f s elapsed, "
                "ETA at most %.0f s\n", k, max, best, el, eta);
        p->last = k;
    }
    fflush(stderr);
}

/* The fitted set as a --hw file: a header naming the input and the fit,
 * then every parameter with what it models and where its value comes from. */
static int write_hw(const char *path, const char *input, const engine_hw *hw,
                    const fidelity_fit_result *fr, const char *start_file, char *err,
                    size_t errlen) {
    cli_output o;   /* the shared policy (output_path.c): a temporary file renamed
                       into place; a symlink's target, a device in place; -o - stdout */
    FILE *f = cli_output_open(&o, path, err, errlen);
    if (!f) return -1;
    fprintf(f, "# npurr calibrate: timing parameters fitted on %s (%d training row%s)\n", input,
            fr->train_rows, fr->train_rows == 1 ? "" : "s");
    fprintf(f, "# fit error, sum of log(npurr/measured)^2 over the training rows: %.6g at the "
               "start, %.6g fitted (%d evaluations)\n", fr->error_start, fr->error_fit, fr->evals);
    fprintf(f, "# start: %s; fitted:", start_file ? start_file : "the defaults");
    for (int i = 0; i < fr->nparams; i++) fprintf(f, " %s", fr->params[i]->key);
    fprintf(f, "\n# load with: npurr record --hw %s ...\n", path);
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        int fitted = 0;
        for (int j = 0; j < fr->nparams; j++) fitted |= fr->params[j] == p;
        double v = engine_hw_get(hw, p);
        if (fitted)
            fprintf(f, "# %s (%s); fitted by npurr calibrate on %s from %s (its estimate %g, "
                    "default %g)\n", p->what, p->unit, input,
                    start_file ? start_file : "the defaults", p->est, p->def);
        else
            fprintf(f, "# %s (%s); %s\n", p->what, p->unit,
                    v == p->def ? p->source : "from the start file");
        char text[32];
        fprintf(f, "%s=%s\n", p->key, engine_hw_text(v, text));
    }
    int rc = fflush(f) != 0 || ferror(f) ? -1 : 0;
    if (rc) snprintf(err, errlen, "write error: %s", strerror(errno));
    return cli_output_finish(&o, rc, err, errlen);   /* its errors name the path */
}

typedef struct calibrate_args {
    const char *file, *out, *hw_file, *kernel_options;
    int jobs, max_evals;
} calibrate_args;

static int set_jobs(void *ctx, const char *v) {
    return measured_jobs("calibrate", v, &((calibrate_args *)ctx)->jobs) ? EXIT_USAGE : 0;
}

static int load_plugin(void *ctx, const char *v) {
    (void)ctx;
    return measured_plugin("calibrate", v);
}

static int set_max_evals(void *ctx, const char *v) {
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (end == v || *end || n < 3 || n > 100000) {
        fprintf(stderr, "npurr calibrate: --max-evals: '%s' is not a number between 3 and "
                "100000\n", v);
        return EXIT_USAGE;
    }
    ((calibrate_args *)ctx)->max_evals = (int)n;
    return 0;
}

/* The measured file and -o, before the fit, which takes minutes: both
 * given, not one file, and -o never into a run folder. */
static int check_paths(const char *file, const char *out) {
    if (!file || !out) {
        fprintf(stderr, "npurr calibrate: %s\n", !file ? "give the measured-times CSV"
                                                         : "-o OUT.hw is required");
        calibrate_usage(stderr);
        return EXIT_USAGE;
    }
    struct stat a, b;
    if (stat(file, &a) == 0 && stat(out, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
        fprintf(stderr, "npurr calibrate: -o %s is the measured file itself\n", out);
        return EXIT_USAGE;
    }
    char oerr[4608];
    if (cli_output_check(NULL, out, "-o", oerr, sizeof oerr)) {
        fprintf(stderr, "npurr calibrate: %s\n", oerr);
        return EXIT_USAGE;
    }
    return 0;
}

/* The first covered row that failed, on stderr, after what. */
static void say_first_failure(const fidelity_table *t, const fidelity_result *res,
                              const char *what) {
    for (int i = 0; i < t->n; i++)
        if (t->rows[i].covered && !res[i].ok) {
            fprintf(stderr, "npurr calibrate: %s%s\n", what, res[i].error);
            return;
        }
}

/* What the fit moved and how the rows fare before and after. */
static void print_report(FILE *rep, const char *file, const fidelity_table *t,
                         const engine_hw *start, const fidelity_fit_result *fr,
                         const fidelity_result *before, const fidelity_result *after) {
    fprintf(rep, "npurr calibrate %s: %d training row%s, %d evaluation%s\n", file, fr->train_rows,
            fr->train_rows == 1 ? "" : "s", fr->evals, fr->evals == 1 ? "" : "s");
    fprintf(rep, "%d Gauss-Newton iteration%s\n", fr->iterations, fr->iterations == 1 ? "" : "s");
    fprintf(rep, "%-26s %12s %12s %8s  %-10s %s\n", "fitted parameter", "start", "fitted",
            "factor", "unit", "a 2x move moves a row by");
    for (int i = 0; i < fr->nparams; i++) {
        const engine_hw_param *p = fr->params[i];
        double a = engine_hw_get(start, p), b = engine_hw_get(&fr->hw, p);
        fprintf(rep, "%-26s %12.6g %12.6g %8.3f  %-10s ", p->key, a, b, b / a, p->unit);
        if (fr->moves_2x[i] >= 0) fprintf(rep, "up to %.1f %%", 100 * fr->moves_2x[i]);
        else fprintf(rep, "-");
        if (fr->at_edge[i]) fprintf(rep, "  AT ITS BOX'S EDGE: not identified by these rows");
        else if (fr->moves_2x[i] >= 0 && fr->moves_2x[i] < 0.01)
            fprintf(rep, "  under 1 %%: not identified by these rows");
        fprintf(rep, "\n");
    }
    fprintf(rep, "error (sum of log(npurr/measured)^2 over the training rows): %.6g before, %.6g "
            "after\n", fr->error_start, fr->error_fit);
    measured_print(rep, t, before, after);
}

int cmd_calibrate(int argc, char **argv) {
    calibrate_args x = {.jobs = 1, .max_evals = DEFAULT_EVALS};
    const cli_opt opts[] = {{"-o", .value = &x.out}, {"--hw", .value = &x.hw_file},
                            {"--kernel-options", .value = &x.kernel_options},
                            {"-j", .set = set_jobs}, {"--max-evals", .set = set_max_evals},
                            {"--plugin", .set = load_plugin}};
    cli_args p = {.cmd = "calibrate", .usage = calibrate_usage, .opts = opts, .nopts = 6,
                  .ctx = &x, .words = {&x.file},
                  .extra = "one measured file only ('%s' and '%s')", .extra_after_first = 1,
                  .missing_says = CLI_MISSING_USAGE};
    int parsed = cli_parse(&p, argc, argv);
    if (parsed) return parsed == CLI_HELP ? EXIT_DONE : parsed;
    const char *file = x.file, *out = x.out, *hw_file = x.hw_file,
               *kernel_options = x.kernel_options;
    int jobs = x.jobs, max_evals = x.max_evals, rc;
    rc = check_paths(file, out);
    if (rc) return rc;
    fidelity_table t;
    engine_hw start;
    rc = measured_load("calibrate", file, kernel_options, hw_file, &t, &start);
    if (rc) return rc;
    fidelity_result *before = calloc((size_t)t.n, sizeof *before);
    fidelity_result *after = calloc((size_t)t.n, sizeof *after);
    char err[2048];
    if (!before || !after) {
        fprintf(stderr, "npurr calibrate: out of memory for the results of %d rows\n", t.n);
        rc = EXIT_ERROR;
        goto done;
    }
    fprintf(stderr, "calibrate: running the %d row%s at the start parameters\n", t.n,
            t.n == 1 ? "" : "s");
    int before_failed = measured_run_all("calibrate", &t, &start, jobs, before);
    if (engine_pool_interrupted()) goto stopped;
    if (before_failed) {
        measured_print(stdout, &t, before, NULL);
        say_first_failure(&t, before, "");
        rc = EXIT_ERROR;
        goto done;
    }
    progress pr = {isatty(2), 0, engine_host_seconds()};
    fidelity_fit_opts fo = {.jobs = jobs, .max_evals = max_evals, .progress = on_progress,
                            .ctx = &pr};
    fidelity_fit_result fr;
    int fit_rc = fidelity_fit(&t, &start, &fo, &fr, err, sizeof err);
    if (pr.tty) fputc('\n', stderr);
    if (engine_pool_interrupted()) goto stopped;
    if (fit_rc != SESSION_OK) {
        fprintf(stderr, "npurr calibrate: %s\n", err);
        rc = EXIT_ERROR;
        goto done;
    }
    int after_failed = measured_run_all("calibrate", &t, &fr.hw, jobs, after);
    if (engine_pool_interrupted()) goto stopped;
    if (write_hw(out, file, &fr.hw, &fr, hw_file, err, sizeof err)) {
        fprintf(stderr, "npurr calibrate: %s\n", err);
        rc = EXIT_ERROR;
        goto done;
    }
    print_report(strcmp(out, "-") ? stdout : stderr,   /* -o -: the file alone on stdout */
                 file, &t, &start, &fr, before, after);
    if (strcmp(out, "-")) printf("wrote %s (npurr record --hw %s ...)\n", out, out);
    if (after_failed) {   /* a validation row the fitted values break: written, but an error */
        say_first_failure(&t, after, "under the fitted values ");
        rc = EXIT_ERROR;
    }
    goto done;
stopped:   /* Ctrl-C: the runs in flight are ended; a fit cut short is not written */
    fprintf(stderr, "npurr calibrate: interrupted: nothing written to %s\n", out);
    rc = EXIT_ERROR;
done:
    free(before);
    free(after);
    fidelity_table_free(&t);
    return rc;
}

/*
 * cmd_hw.c - `npurr hw [--file | --start]`: every timing parameter of the
 * model, with its default, unit, accepted range, what it models and where
 * the default comes from (engine/timing.c holds the one table), which are
 * fitted and from what estimate, and which the rows do not identify.
 * `--file` prints the defaults as a `--hw` file to edit, `--start` the
 * fit's documented start (every fitted parameter at its sourced estimate).
 * `--compare MEASURED.csv` runs each measured row on npurr and prints
 * npurr's time beside the measured one (measured.c), fitting nothing:
 * `npurr calibrate` fits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void hw_usage(FILE *out) {
    fputs("usage: npurr hw [--file | --start]\n"
          "       npurr hw --compare MEASURED.csv [--hw FILE] [-j J] [--kernel-options OPTS]\n"
          "                [--plugin PATH.so]\n"
          "\n"
          "Prints every timing parameter of the emulated 910B: key, default value,\n"
          "unit, accepted range, what it models and the source of the default\n"
          "(a document, a datasheet figure or an estimate), and which of them\n"
          "`npurr calibrate` fits to measured times. Override any of them\n"
          "with `npurr record --hw FILE` (key=value lines, '#' comments); `npurr\n"
          "info RUN` shows the values a run used and which came from --hw.\n"
          "\n"
          "  --file       print the defaults as a --hw file (key=value with comments)\n"
          "  --start      print the fit's documented start as a --hw file: the defaults\n"
          "               with every fitted parameter at its sourced estimate\n"
          "               (tools/fit_timing.sh fits from there)\n"
          "  -h, --help   this text\n"
          "\n"
          "--compare runs every row of MEASURED.csv on npurr (no trace) and prints\n"
          "npurr's time of the row's phase, the measured time and their ratio\n"
          "(npurr / measured); it fits nothing (npurr calibrate does). The CSV has\n"
          "the header kernel,options,phase,measured_us and optionally id, use\n"
          "(train|validate) and source, e.g.\n"
          "  dispatch-layered,\"--nodes 2 --tokens 4096 --dispatches 1\",dispatch,13092\n"
          "phase is one of the kernel's phases or total (docs/calibrate.md). msprof's\n"
          "op_summary CSV is read too, matched by op name;\n"
          "give the shape it was measured at with --kernel-options.\n"
          "  --hw FILE              timing parameters to compare (default: the defaults)\n"
          "  -j J                   rows run at once, in forked processes (default 1)\n"
          "  --kernel-options OPTS  an op_summary's shape: \"-k KERNEL --nodes N ...\"\n"
          "  --plugin PATH.so       load a plugin whose kernels rows name (repeatable)\n"
          "\n"
          "Ctrl-C or SIGTERM stops the rows in flight and prints the table of those that\n"
          "finished (the others say stopped).\n"
          "\n"
          "Exit status: 0 ok, 1 a bad measured file, a row that failed to run or Ctrl-C,\n"
          "2 usage (a bad --hw file included, as in record).\n",
          out);
}

/* `npurr hw --compare FILE`: each row's time on npurr against the measured. */
static int compare(const char *file, const char *hw_file, const char *kernel_options, int jobs) {
    fidelity_table t;
    engine_hw hw;
    int rc = measured_load("hw", file, kernel_options, hw_file, &t, &hw);
    if (rc) return rc;
    fidelity_result *res = calloc((size_t)t.n, sizeof *res);
    if (!res) {
        fidelity_table_free(&t);
        fprintf(stderr, "npurr hw: out of memory\n");
        return EXIT_ERROR;
    }
    fprintf(stderr, "npurr hw: running %d row%s, %d at once\n", t.n, t.n == 1 ? "" : "s", jobs);
    int failed = measured_run_all("hw", &t, &hw, jobs, res);
    printf("npurr hw --compare %s: %d row%s, timing parameters %s\n", file, t.n,
           t.n == 1 ? "" : "s", hw_file ? hw_file : "the defaults");
    measured_print(stdout, &t, res, NULL);
    double *npurr = calloc((size_t)t.n, sizeof *npurr), *meas = calloc((size_t)t.n, sizeof *meas);
    int n = 0;
    for (int i = 0; npurr && meas && i < t.n; i++)
        if (res[i].ok && t.rows[i].train) {
            npurr[n] = res[i].us;
            meas[n++] = t.rows[i].measured_us;
        }
    if (n) printf("error (sum of log(npurr/measured)^2 over %d training row%s): %.6g\n", n,
                  n == 1 ? "" : "s", fidelity_error(npurr, meas, n));
    if (failed) fprintf(stderr, "npurr hw: a row failed to run (its error is under it)\n");
    int interrupted = engine_pool_interrupted();
    if (interrupted) {
        int fin = 0;
        int covered = 0;
        for (int i = 0; i < t.n; i++) {
            covered += t.rows[i].covered;
            fin += t.rows[i].covered && !res[i].stopped;
        }
        fprintf(stderr, "npurr hw: interrupted: %d of %d rows finished (the others say stopped)\n",
                fin, covered);
    }
    free(npurr);
    free(meas);
    free(res);
    fidelity_table_free(&t);
    return interrupted || failed ? EXIT_ERROR : EXIT_DONE;
}

int cmd_hw(int argc, char **argv) {
    int as_file = 0, as_start = 0, jobs = 1;
    const char *compare_file = NULL, *hw_file = NULL, *kernel_options = NULL;
    for (int i = CLI_FIRST_ARG; i < argc; i++) {
        const char *a = argv[i];
        int takes = !strcmp(a, "--compare") || !strcmp(a, "--hw") || !strcmp(a, "-j") ||
                    !strcmp(a, "--kernel-options") || !strcmp(a, "--plugin");
        if (takes && i + 1 >= argc) {
            fprintf(stderr, "npurr hw: %s needs a value\n", a);
            hw_usage(stderr);
            return EXIT_USAGE;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            hw_usage(stdout);
            return EXIT_DONE;
        } else if (!strcmp(a, "--file")) {
            as_file = 1;
        } else if (!strcmp(a, "--start")) {
            as_start = 1;
        } else if (!strcmp(a, "--compare")) {
            compare_file = argv[++i];
        } else if (!strcmp(a, "--hw")) {
            hw_file = argv[++i];
        } else if (!strcmp(a, "--kernel-options")) {
            kernel_options = argv[++i];
        } else if (!strcmp(a, "--plugin")) {
            int rc = measured_plugin("hw", argv[++i]);
            if (rc) return rc;
        } else if (!strcmp(a, "-j")) {
            if (measured_jobs("hw", argv[++i], &jobs)) return EXIT_USAGE;
        } else {
            fprintf(stderr, "npurr hw: unknown argument '%s'\n", argv[i]);
            hw_usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (as_file + as_start + (compare_file != NULL) > 1) {
        fprintf(stderr, "npurr hw: --file, --start and --compare are different commands\n");
        return EXIT_USAGE;
    }
    if (!compare_file && (hw_file || kernel_options || jobs != 1)) {
        fprintf(stderr, "npurr hw: --hw, -j and --kernel-options go with --compare\n");
        return EXIT_USAGE;
    }
    if (compare_file) return compare(compare_file, hw_file, kernel_options, jobs);
    for (size_t i = 0; i < engine_hw_count(); i++) {
        const engine_hw_param *p = engine_hw_param_at(i);
        if (as_file || as_start) {
            int start = as_start && p->fit == ENGINE_HW_FITTED;
            char text[32];
            printf("# %s (%s); %s%s\n%s=%s\n", p->what, p->unit,
                   start ? "the fit's start, its sourced estimate; " : "", p->source, p->key,
                   engine_hw_text(start ? p->est : p->def, text));
            continue;
        }
        printf("%s = %g %s\n", p->key, p->def, p->unit);
        printf("    models:   %s\n", p->what);
        printf("    source:   %s\n", p->source);
        if (p->min > 0)
            printf("    accepted: %g..%g %s", p->min, p->max, p->unit);
        else
            printf("    accepted: > 0, up to %g %s", p->max, p->unit);
        printf("%s%s\n", p->old_key ? "; old name " : "", p->old_key ? p->old_key : "");
        if (p->fit == ENGINE_HW_FITTED)
            printf("    fitted:   by npurr calibrate to the training rows (tools/fit_timing.sh), "
                   "from its estimate %g %s\n", p->est, p->unit);
        else if (p->fit == ENGINE_HW_UNIDENTIFIED)
            printf("    not identified by the rows: it keeps its sourced estimate\n");
    }
    return EXIT_DONE;
}

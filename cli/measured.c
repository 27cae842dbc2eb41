/*
 * measured.c - what `npurr hw --compare` and `npurr calibrate` share: the
 * measured rows and the starting timing parameters loaded with their errors
 * printed, -j read, and the table of npurr's time against the measured one
 * per row (one column of ratios, or before and after a fit).
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int measured_jobs(const char *cmd, const char *v, int *out) {
    char *end = NULL;
    long j = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || j < 1 || j > 256) {
        fprintf(stderr, "npurr %s: -j: '%s' is not a number of runs at once (1..256)\n", cmd,
                v ? v : "");
        return -1;
    }
    *out = (int)j;
    return 0;
}

int measured_load(const char *cmd, const char *file, const char *kernel_options,
                  const char *hw_file, fidelity_table *t, engine_hw *hw) {
    char err[2048];
    engine_hw_defaults(hw);
    if (hw_file && engine_hw_load(hw, hw_file, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "npurr %s: %s\n", cmd, err);
        return EXIT_USAGE;   /* a bad --hw is a usage error here as in record and sweep */
    }
    if (fidelity_table_read(file, kernel_options, 0, t, err, sizeof err) != SESSION_OK) {
        fprintf(stderr, "npurr %s: %s\n", cmd, err);
        return EXIT_ERROR;
    }
    return EXIT_DONE;
}

/* The row's name in a table: its id, else FILE:LINE without the folders. */
static const char *row_name(const fidelity_row *r) {
    if (r->id[0]) return r->id;
    const char *slash = strrchr(r->where, '/');
    return slash ? slash + 1 : r->where;
}

static void cell(FILE *out, const fidelity_result *x, double measured) {
    if (x && x->ok)
        fprintf(out, "  %11.2f %6.3f", x->us, x->us / measured);
    else
        fprintf(out, "  %11s %6s", x && x->stopped ? "stopped" : "failed", "-");
}

void measured_print(FILE *out, const fidelity_table *t, const fidelity_result *before,
                    const fidelity_result *after) {
    fprintf(out, "%-12s %-8s %-10s %12s", "row", "use", "phase", "measured us");
    fprintf(out, after ? "  %11s %6s  %11s %6s" : "  %11s %6s", after ? "before us" : "npurr us",
            "ratio", "after us", "ratio");
    fprintf(out, "  kernel and options\n");
    for (int i = 0; i < t->n; i++) {
        const fidelity_row *r = &t->rows[i];
        fprintf(out, "%-12s %-8s %-10s %12.2f", row_name(r), r->train ? "train" : "validate",
                r->phase, r->measured_us);
        if (!r->covered) {
            fprintf(out, "  not covered: %s\n", r->options);
            continue;
        }
        cell(out, &before[i], r->measured_us);
        if (after) cell(out, &after[i], r->measured_us);
        fprintf(out, "  %s %s\n", r->kernel, r->options);
        if (!before[i].ok && !before[i].stopped) fprintf(out, "    error: %s\n", before[i].error);
        if (after && !after[i].ok && !after[i].stopped)
            fprintf(out, "    error after the fit: %s\n", after[i].error);
    }
}

/* One stderr line per run as it ends: rows take seconds each at real
 * shapes, and a Ctrl-C shows which had finished. */
static void on_row(void *ctx, const fidelity_row *row, const fidelity_result *r, int finished,
                   int total) {
    const char *cmd = ctx;
    if (r->ok)
        fprintf(stderr, "npurr %s: [%d/%d] %s ran (%.2f us in all)\n", cmd, finished, total,
                row_name(row), r->total_us);
    else
        fprintf(stderr, "npurr %s: [%d/%d] %s failed\n", cmd, finished, total, row_name(row));
}

/* Every row under one parameter set, -j at once: 1 when a row failed (a
 * Ctrl-C is engine_pool_interrupted's to say). */
int measured_run_all(const char *cmd, const fidelity_table *t, const engine_hw *hw, int jobs,
                     fidelity_result *res) {
    const fidelity_row **rows = calloc((size_t)t->n, sizeof *rows);
    engine_hw *hws = calloc((size_t)t->n, sizeof *hws);
    if (!rows || !hws) {
        free(rows);
        free(hws);
        return -1;
    }
    for (int i = 0; i < t->n; i++) {
        rows[i] = &t->rows[i];
        hws[i] = *hw;
    }
    fidelity_run_many(rows, hws, t->n, jobs, 1, res, on_row, (void *)cmd);
    free(rows);
    free(hws);
    int failed = 0;
    for (int i = 0; i < t->n; i++) failed |= t->rows[i].covered && !res[i].ok && !res[i].stopped;
    return failed;
}

int measured_plugin(const char *cmd, const char *path) {
    char err[4096];
    const kernel_plugin *p;
    if (!path || kernels_load_plugin(path, &p, err, sizeof err) == 0) return path ? 0 : EXIT_USAGE;
    fprintf(stderr, "npurr %s: %s\n", cmd, err);
    return EXIT_ERROR;
}

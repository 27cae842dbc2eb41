/*
 * bench_fidelity.c - how close npurr's virtual times are to public Atlas A2
 * measurements (issue #26): every row of the anchor table
 * tools/fidelity_anchors.csv run on npurr at its shape, with npurr's time of
 * the phase the hardware number times, the mean of its published
 * replicates and their range, the ratio to that mean, whether it is inside
 * the 0.75..1.33 target, and the split of that run into all its phases
 * (notify, dispatch data, combine, total).
 *
 * A benchmark, not a test: it prints figures. A row whose shape npurr does
 * not run (yet) is printed as "not runnable" with the reason and the others
 * go on; a row no npurr kernel stands for (kernel "-") is printed as "not
 * covered" with the reason the table gives. Rows of one run (a dispatch and
 * its notify) are run once. The rows, their shapes and their sources are
 * the table's; this program holds none of them.
 *
 * Usage: bench_fidelity [--hw FILE] [--anchors FILE] [-j J]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench_support.h"
#include "calibrate/calibrate.h"
#include "session/session.h"

#define LO 0.75
#define HI 1.33

static const char usage[] =
    "usage: bench_fidelity [--hw FILE] [--anchors FILE] [-j J]\n"
    "\n"
    "Runs every row of the anchor table (public Atlas A2 measurements, issue #26)\n"
    "on npurr and prints npurr's time of the measured phase, the mean of the\n"
    "row's published replicates and their range, the ratio npurr/mean, whether\n"
    "it is inside 0.75..1.33, and the run's split into all its phases. Train\n"
    "rows are what tools/fit_timing.sh fits on; validate rows are never fitted on.\n"
    "\n"
    "  --hw FILE       timing parameters to evaluate (default: npurr's defaults)\n"
    "  --anchors FILE  the table (default: tools/fidelity_anchors.csv of this source tree)\n"
    "  -j J            runs at once, in forked processes (default 1; the full-size\n"
    "                  rows take GBs of memory each)\n"
    "  -h, --help      this text\n";

/* tools/fidelity_anchors.csv next to this source file, else from the
 * working directory or its parent (build/). */
static const char *default_anchors(char *buf, size_t len) {
    const char *me = __FILE__, *cut = strstr(me, "bench/bench_fidelity.c");
    if (cut) {
        snprintf(buf, len, "%.*stools/fidelity_anchors.csv", (int)(cut - me), me);
        if (access(buf, R_OK) == 0) return buf;
    }
    if (access("tools/fidelity_anchors.csv", R_OK) == 0) return "tools/fidelity_anchors.csv";
    return "../tools/fidelity_anchors.csv";
}

static const char *verdict(double ratio) {
    return ratio >= LO && ratio <= HI ? "in" : "OUT";
}

/* "13098.37 us (6 replicates, 11962.67..14911.79)" or "864.77 us (1 replicate)" */
static void measured(const fidelity_row *r, char *buf, size_t len) {
    if (r->replicates > 1)
        snprintf(buf, len, "%.2f us (mean of %d replicates, %.2f..%.2f)", r->measured_us,
                 r->replicates, r->rep_min, r->rep_max);
    else
        snprintf(buf, len, "%.2f us (1 replicate)", r->measured_us);
}

/* The replicate range as a table cell: "11962.67..14911.79", or the value. */
static void range_cell(const fidelity_row *r, char *buf, size_t len) {
    if (r->replicates > 1)
        snprintf(buf, len, "%.2f..%.2f", r->rep_min, r->rep_max);
    else
        snprintf(buf, len, "%.2f", r->measured_us);
}

int main(int argc, char **argv) {
    static const char *const names[] = {"--hw", "--anchors", "-j", NULL};
    bench_check_args(argc, argv, usage, names);
    char buf[4096];
    const char *hw_file = arg_value(argc, argv, "--hw", NULL);
    const char *anchors = arg_value(argc, argv, "--anchors", NULL);
    if (!anchors) anchors = default_anchors(buf, sizeof buf);
    char *end = NULL;
    const char *jv = arg_value(argc, argv, "-j", "1");
    long jobs = strtol(jv, &end, 10);
    if (end == jv || *end || jobs < 1 || jobs > 64) {
        fprintf(stderr, "bench_fidelity: -j '%s': a number of runs at once, 1..64\n%s", jv, usage);
        return 2;
    }
    char err[4096];
    engine_hw hw;
    engine_hw_defaults(&hw);
    if (hw_file && engine_hw_load(&hw, hw_file, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "bench_fidelity: %s\n", err);
        return 1;
    }
    fidelity_table t;
    if (fidelity_table_read(anchors, NULL, FIDELITY_LATE_OPTIONS, &t, err, sizeof err)) {
        fprintf(stderr, "bench_fidelity: %s\n", err);
        return 1;
    }
    const fidelity_row **rows = calloc((size_t)t.n, sizeof *rows);
    engine_hw *hws = calloc((size_t)t.n, sizeof *hws);
    fidelity_result *res = calloc((size_t)t.n, sizeof *res);
    if (!rows || !hws || !res) {
        fprintf(stderr, "bench_fidelity: out of memory\n");
        return 1;
    }
    for (int i = 0; i < t.n; i++) {
        rows[i] = &t.rows[i];
        hws[i] = hw;
    }
    printf("bench_fidelity: %s, %d rows, timing parameters %s, -j %ld\n", anchors, t.n,
           hw_file ? hw_file : "npurr's defaults", jobs);
    fflush(stdout);
    double t0 = now_s();
    fidelity_run_many(rows, hws, t.n, (int)jobs, 1, res, NULL, NULL);
    double wall = now_s() - t0;

    int in = 0, ran = 0, not_run = 0, uncovered = 0, tin = 0, tran = 0;
    for (int i = 0; i < t.n; i++) {
        const fidelity_row *r = &t.rows[i];
        const fidelity_result *x = &res[i];
        printf("\n%s (%s)  %s %s\n", r->id[0] ? r->id : r->where, r->train ? "train" : "validate",
               r->covered ? r->kernel : "no npurr kernel:", r->options);
        char meas[160];
        measured(r, meas, sizeof meas);
        if (!r->covered) {
            printf("    phase %s: measured %s; not covered: %s\n", r->phase, meas, r->options);
            uncovered++;
        } else if (!x->ok) {
            printf("    phase %s: measured %s; not runnable: %s\n", r->phase, meas, x->error);
            not_run++;
        } else {
            double ratio = x->us / r->measured_us;
            printf("    phase %s: npurr %.2f us, measured %s, ratio to the mean %.3f, %s "
                   "%.2f..%.2f\n", r->phase, x->us, meas, ratio,
                   ratio >= LO && ratio <= HI ? "inside" : "OUTSIDE", LO, HI);
            printf("    split:");
            for (int p = 0; p < x->nphases; p++) {
                if (x->phase_us[p] < 0)
                    printf(" %s -,", x->phase_name[p]);
                else
                    printf(" %s %.2f us,", x->phase_name[p], x->phase_us[p]);
            }
            printf(" total %.2f us\n", x->total_us);
            ran++;
            in += ratio >= LO && ratio <= HI;
            tran += r->train;
            tin += r->train && ratio >= LO && ratio <= HI;
        }
        if (r->source[0]) printf("    source: %s\n", r->source);
    }

    printf("\n%-14s %-9s %-9s %10s %10s %3s %-19s %6s  %s\n", "row", "use", "phase", "npurr us",
           "mean us", "n", "replicates us", "ratio", "0.75..1.33");
    for (int i = 0; i < t.n; i++) {
        const fidelity_row *r = &t.rows[i];
        const fidelity_result *x = &res[i];
        char range[64];
        range_cell(r, range, sizeof range);
        printf("%-14s %-9s %-9s", r->id[0] ? r->id : r->where, r->train ? "train" : "validate",
               r->phase);
        if (r->covered && x->ok)
            printf(" %10.2f %10.2f %3d %-19s %6.3f  %s\n", x->us, r->measured_us, r->replicates,
                   range, x->us / r->measured_us, verdict(x->us / r->measured_us));
        else
            printf(" %10s %10.2f %3d %-19s %6s  %s\n", "-", r->measured_us, r->replicates, range,
                   "-", r->covered ? "not runnable" : "not covered");
    }
    printf("\n%d of %d rows that ran are inside 0.75..1.33 of their replicates' mean (train %d of "
           "%d, validate %d of %d); %d not runnable, %d not covered; %.1f s\n", in, ran, tin, tran,
           in - tin, ran - tran, not_run, uncovered, wall);
    free(rows);
    free(hws);
    free(res);
    fidelity_table_free(&t);
    return 0;
}

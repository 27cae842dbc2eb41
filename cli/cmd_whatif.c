/*
 * cmd_whatif.c - `npurr whatif RUN [--top N] [-j J] [--csv]`: exact
 * what-ifs on the resources of a run's critical path.
 *
 * The critical path (critical_path, derived on first use) ranks resource
 * classes by their share of the end time; for each of the top N that is a
 * resource (ana_crit_class_knobs says which hw keys make it twice as fast)
 * the recorded configuration is rebuilt from the trace header, as replay
 * rebuilds it (run_spec_from_run), with those keys scaled, and run without
 * a trace. The engine is deterministic, so each new end time is what that
 * change gives, not an estimate. The recorded configuration itself runs
 * too: its end time must be the recorded one, or the timing model changed
 * since the run was recorded and the speedups are against the re-run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "run_pool.h"

static void whatif_usage(FILE *out) {
    fputs("usage: npurr whatif RUN [--top N] [-j J] [--csv]\n"
          "\n"
          "For each of the top N resource classes on the run's critical path (npurr\n"
          "critical RUN --by class), re-runs the recorded configuration (from the trace\n"
          "header, as replay does) with that resource twice as fast, without a trace,\n"
          "and prints the new end time and the speedup, best first. Twice as fast means\n"
          "bandwidths doubled and latencies or per-operation costs halved:\n"
          "  hbm           hbm_gbytes_per_s x2\n"
          "  mte           mte_bytes_per_cycle, mte_hccs_bytes_per_cycle x2,\n"
          "                mte_latency_ns /2\n"
          "  hccs          hccs_link_gbytes_per_s x2\n"
          "  hccs_latency  hccs_latency_ns /2\n"
          "  nic           roce_gbytes_per_s x2, nic_message_ns /2\n"
          "  rdma_latency  rdma_latency_ns /2\n"
          "  scalar        scalar_op_cycles, gm_read_ns, gm_write_ns, rdma_post_ns /2\n"
          "  vector        ub_vector_bytes_per_cycle x2, vector_latency_cycles /2\n"
          "  cube          cube_macs_per_cycle x2\n"
          "  aicpu         batchwrite_task_ns /2\n"
          "  sync          crosscore_latency_ns, barrier_latency_ns /2\n"
          "(jitter, launch, blocked and idle are no resource and are skipped). The\n"
          "recorded configuration is re-run too, as the baseline of the speedups.\n"
          "\n"
          "  --top N       how many resource classes (default 5)\n"
          "  -j J          runs at a time, each in its own process (default: the core\n"
          "                count)\n"
          "  --csv         CSV: class, share, change, end_ps, speedup, status\n"
          "  -h, --help    this text\n"
          "\n"
          "Exit status: 0 ok, 1 the run cannot be read or a re-run failed to start,\n"
          "2 usage. Ctrl-C prints the runs that finished and exits 1. A re-run that\n"
          "deadlocks or fails its check is a row with its exit code (3, 4), not an error.\n",
          out);
}

#define WHATIF_MAX 32   /* more than there are resource classes */

typedef struct whatif {
    run_spec spec;                    /* the recorded configuration */
    const char *cls[WHATIF_MAX];
    double share[WHATIF_MAX];
    size_t n;                         /* classes; job 0 is the baseline, job k class k-1 */
    int quiet;
} whatif;

/* Scales cls's knobs in hw; text says what changed. */
static void scale_hw(engine_hw *hw, const char *cls, char *text, size_t len) {
    const ana_whatif_knob *k = ana_crit_class_knobs(cls);
    size_t used = 0;
    text[0] = 0;
    for (; k && k->key; k++) {
        const engine_hw_param *p = engine_hw_find(k->key);
        if (!p) continue;
        double was = engine_hw_get(hw, p), now = was * k->factor;
        if (now < p->min) now = p->min;
        if (now > p->max) now = p->max;
        char err[256];
        if (engine_hw_put(hw, p, now, err, sizeof err) != ENGINE_OK) continue;
        int w = snprintf(text + used, len - used, "%s%s %g->%g", used ? ", " : "", p->key, was, now);
        if (w < 0 || (size_t)w >= len - used) break;
        used += (size_t)w;
    }
}

static void job(void *ctx, size_t i, point_result *r) {
    whatif *w = ctx;
    char text[256];
    if (i > 0) scale_hw(&w->spec.opts.config.hw, w->cls[i - 1], text, sizeof text);
    run_point(&w->spec, r);
}

static void progress(void *ctx, size_t i, const point_result *r, size_t done, size_t total) {
    whatif *w = ctx;
    if (w->quiet) return;
    char t[32];
    ana_format_ps((double)r->end_ps, t, sizeof t);
    fprintf(stderr, "npurr whatif: %zu/%zu %s: %s\n", done, total, i ? w->cls[i - 1] : "baseline",
            r->status == 0 ? t : r->what);
}

typedef struct whatif_args {
    const char *run;
    long top, jobs;
    int csv;
} whatif_args;

static int set_top(void *ctx, const char *v) {
    return cli_opt_positive("whatif", "--top", v, &((whatif_args *)ctx)->top);
}

static int set_jobs(void *ctx, const char *v) {
    int j;   /* 1..256, as every command that runs in parallel takes it */
    if (measured_jobs("whatif", v, &j)) return EXIT_USAGE;
    ((whatif_args *)ctx)->jobs = j;
    return 0;
}

/* The critical path's top classes that are resources, and the recorded
 * configuration rebuilt from the trace: 0, or an exit status (said). */
static int whatif_load(const char *run, long top, ana_crit_table *t, whatif *w) {
    char err[ENGINE_ERRLEN * 2];
    ana_source src;
    if (cli_crit_table("whatif", run, ANA_CRIT_BY_CLASS, 0, t, &src)) return EXIT_ERROR;
    if (src.partial) {   /* its end time is where the trace stops, not the run's */
        fprintf(stderr, "npurr whatif: %s; a what-if re-runs the whole run and compares end "
                        "times, so it needs the complete run: record it again\n", src.partial_note);
        ana_crit_table_free(t);
        return EXIT_ERROR;
    }
    for (size_t i = 0; i < t->n && w->n < (size_t)top && w->n < WHATIF_MAX; i++)
        if (ana_crit_class_knobs(t->rows[i].cls)) {
            w->cls[w->n] = t->rows[i].group;   /* by class: the group is the class */
            w->share[w->n++] = t->rows[i].share;
        }
    rec_reader *r = NULL;
    char note[512] = "";
    if (rec_reader_open(run, &r, err, sizeof err)) {
        fprintf(stderr, "npurr whatif: %s\n", err);
        ana_crit_table_free(t);
        return EXIT_ERROR;
    }
    int rc = run_spec_from_run(r, run, &w->spec, note, sizeof note, err, sizeof err);
    rec_reader_close(r);
    if (rc) {
        fprintf(stderr, "npurr whatif: %s\n", err);
        run_spec_free(&w->spec);
        ana_crit_table_free(t);
        return EXIT_ERROR;
    }
    if (note[0]) fprintf(stderr, "npurr whatif: %s\n", note);
    return 0;
}

/* The classes best first: the shortest end time of the runs that completed. */
static size_t whatif_order(const whatif *w, const point_result *res, size_t *order) {
    size_t m = 0;
    for (size_t i = 0; i < w->n; i++) order[m++] = i;
    for (size_t a = 1; a < m; a++)
        for (size_t b = a; b > 0; b--) {
            const point_result *x = &res[order[b] + 1], *y = &res[order[b - 1] + 1];
            uint64_t xe = x->done && !x->status ? x->end_ps : UINT64_MAX;
            uint64_t ye = y->done && !y->status ? y->end_ps : UINT64_MAX;
            if (xe >= ye) break;
            size_t s = order[b];
            order[b] = order[b - 1];
            order[b - 1] = s;
        }
    return m;
}

/* The heading: the recorded end time against the baseline's re-run. */
static void whatif_head(const char *run, uint64_t recorded_ps, const point_result *base,
                        int csv) {
    char rec_t[32], base_t[32];
    ana_format_ps((double)recorded_ps, rec_t, sizeof rec_t);
    ana_format_ps((double)base->end_ps, base_t, sizeof base_t);
    if (csv) {
        printf("class,share,change,end_ps,speedup,status\n");
        printf("baseline,,,%llu,1.000000,%d\n", (unsigned long long)base->end_ps, base->status);
        return;
    }
    printf("what-if on %s: recorded end time %s; the recorded configuration re-run: %s%s\n",
           run, rec_t, base->done ? (base->status ? base->what : base_t) : "did not finish",
           base->done && !base->status && base->end_ps != recorded_ps
               ? " (differs: the timing model changed since the recording; speedups are "
                 "against the re-run)"
               : "");
    printf("each row: the run with one resource class of the critical path twice as fast\n");
}

/* One class's row: its share, the change, the new end time and speedup. */
static void whatif_row(const whatif *w, size_t i, const point_result *p,
                       const point_result *base, int csv) {
    char change[256], end[32], speed[32], st[64];
    engine_hw hw = w->spec.opts.config.hw;
    scale_hw(&hw, w->cls[i], change, sizeof change);
    double sp = p->done && !p->status && p->end_ps && base->end_ps
                    ? (double)base->end_ps / (double)p->end_ps : 0;
    if (csv) {
        printf("%s,%.6f,", w->cls[i], w->share[i]);
        ana_csv_field(stdout, change);
        printf(",%llu,%.6f,%d\n", (unsigned long long)p->end_ps, sp, p->done ? p->status : -1);
        return;
    }
    ana_format_ps((double)p->end_ps, end, sizeof end);
    if (sp > 0) snprintf(speed, sizeof speed, "%.3fx", sp);
    else snprintf(speed, sizeof speed, "-");
    if (!p->done) snprintf(st, sizeof st, "not run");
    else if (p->status) snprintf(st, sizeof st, "exit %d", p->status);
    else snprintf(st, sizeof st, "ok");
    printf("%-13s %7.2f%% %11s %8s  %-7s %s\n", w->cls[i], 100.0 * w->share[i],
           p->done && !p->status ? end : "-", speed, st, change);
}

int cmd_whatif(int argc, char **argv) {
    whatif_args x = {.top = 5, .jobs = pool_default_jobs()};
    const cli_opt opts[] = {{"--top", .set = set_top}, {"-j", .set = set_jobs},
                            {"--csv", .flag = &x.csv}};
    int parsed = cli_parse_run("whatif", whatif_usage, opts, 3, &x, &x.run, argc, argv);
    if (parsed) return parsed == CLI_HELP ? EXIT_DONE : parsed;
    ana_crit_table t;
    whatif w;
    memset(&w, 0, sizeof w);
    w.quiet = x.csv;
    int status = whatif_load(x.run, x.top, &t, &w);
    if (status) return status;
    point_result *res = calloc(w.n + 1, sizeof *res);
    if (!res) {
        fprintf(stderr, "npurr whatif: out of memory\n");
        run_spec_free(&w.spec);
        ana_crit_table_free(&t);
        return EXIT_ERROR;
    }
    char err[ENGINE_ERRLEN];
    int prc = run_pool(w.n + 1, (int)x.jobs, job, progress, &w, res, err, sizeof err);
    if (prc < 0) {
        fprintf(stderr, "npurr whatif: %s\n", err);
        status = EXIT_ERROR;
    } else if (prc > 0) {
        fprintf(stderr, "npurr whatif: interrupted; the runs that finished are below\n");
        status = EXIT_ERROR;
    }
    const point_result *base = &res[0];
    size_t order[WHATIF_MAX];
    size_t m = whatif_order(&w, res, order);
    whatif_head(x.run, t.end_ps, base, x.csv);
    if (!x.csv && m)
        printf("%-13s %8s %11s %8s  %-7s %s\n", "class", "on path", "end time", "speedup",
               "status", "2x faster");
    for (size_t k = 0; k < m; k++) whatif_row(&w, order[k], &res[order[k] + 1], base, x.csv);
    if (!x.csv && !m) printf("(no resource class on the critical path)\n");
    /* a baseline that could not run is an error; one that hangs or fails
     * its check as recorded is a finding like the rows */
    if (base->done && (base->status == EXIT_ERROR || base->status == EXIT_USAGE) &&
        status == EXIT_DONE)
        status = EXIT_ERROR;
    free(res);
    run_spec_free(&w.spec);
    ana_crit_table_free(&t);
    return status;
}

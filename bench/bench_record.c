/*
 * bench_record.c - what recording costs: overhead, bytes per event, speed.
 *
 * Runs one kernel (by default the layered dispatch on 2 nodes x 8 NPUs,
 * issue 3's benchmark) the way `npurr record` does, twice per repetition:
 * once without an observer (`record --no-trace`) and once recording into a
 * run folder, and prints in one run:
 *   - recording overhead: record wall time / no-trace wall time (target
 *     <= 1.10), the recorded side including rec_close (last chunk, trailer,
 *     index.db);
 *   - the same ratio including ana_derive (causes, derived tables), which
 *     `npurr record` leaves to the first stats/sql/export after a completed
 *     run;
 *   - the ratio of the commands themselves, `npurr record` / `npurr record
 *     --no-trace`, spawned from the npurr next to this benchmark;
 *   - compressed bytes per event of trace.zst (target <= 4);
 *   - events recorded per second;
 *   - and, to see where the bytes go, the trace's size per column: each chunk
 * re-encoded with the recorder's codec and every column compressed on its
 * own (the recorder's own tools: this bench includes rec_internal.h).
 * The fastest of --repeat runs of each side is kept, so a noisy machine
 * inflates neither side. If the kernel is not registered (yet), it says so
 * and falls back to the first registered kernel.
 *
 * usage: bench_record [-k KERNEL] [--nodes N] [--npus-per-node N]
 *                     [--seed S] [--repeat R] [--out DIR] [--KERNEL-OPTION VALUE]...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "analysis/analysis.h"
#include "bench/bench_support.h"
#include "kernels/kernels.h"
#include "recorder/rec_internal.h"
#include "recorder/recorder.h"


typedef struct run_stats {
    double wall, close_wall, cpu;
    double derive_wall, derive_cpu;   /* ana_derive after the recorded run */
    uint64_t events, trace_bytes;
    engine_outcome outcome;
} run_stats;

/* One run, recorded into out_dir or not (out_dir NULL). */
static int run_once(const kernel_desc *kd, const kernel_opts *opts, const engine_config *cfg,
                    const char *out_dir, const char *cmdline, run_stats *st) {
    char err[4096];
    double t0 = now_s(), c0 = cpu_s();
    engine *e;
    if (engine_create(cfg, &e, err, sizeof err)) {
        fprintf(stderr, "bench_record: engine: %s\n", err);
        return -1;
    }
    void *state = NULL;
    if (kd->setup(e, opts, &state, err, sizeof err)) {
        fprintf(stderr, "bench_record: %s setup: %s\n", kd->name, err);
        engine_destroy(e);
        return -1;
    }
    rec_writer *w = NULL;
    if (out_dir) {
        rec_run_info info = {kd->name, cmdline, cfg, engine_cores_per_rank(e), engine_num_aic(e),
                             engine_num_aiv(e), NULL};
        if (rec_open(out_dir, &info, &w, err, sizeof err)) {
            fprintf(stderr, "bench_record: %s\n", err);
            if (kd->destroy) kd->destroy(state);
            engine_destroy(e);
            return -1;
        }
        rec_attach(w, e);
    }
    engine_result res;
    int rc = engine_run(e, &res, err, sizeof err);
    if (rc) fprintf(stderr, "bench_record: run: %s\n", err);
    st->events = rc ? 0 : res.events;
    st->outcome = rc ? OUTCOME_FAULT : res.outcome;
    double tc = now_s();
    if (w && rec_close(w, rc ? NULL : &res, "skipped", NULL, err, sizeof err)) {
        fprintf(stderr, "bench_record: %s\n", err);
        rc = -1;
    }
    st->close_wall = now_s() - tc;
    if (kd->destroy) kd->destroy(state);
    engine_destroy(e);
    st->wall = now_s() - t0;
    st->cpu = cpu_s() - c0;
    st->trace_bytes = 0;
    st->derive_wall = st->derive_cpu = 0;
    if (out_dir && rc == 0) {
        double d0 = now_s(), dc0 = cpu_s();
        if (ana_open(out_dir, ANA_OPEN_REDERIVE, NULL, NULL, err, sizeof err)) {
            fprintf(stderr, "bench_record: %s\n", err);
            rc = -1;
        }
        st->derive_wall = now_s() - d0;
        st->derive_cpu = cpu_s() - dc0;
    }
    if (out_dir) {
        char path[4200];
        snprintf(path, sizeof path, "%s/trace.zst", out_dir);
        struct stat sb;
        if (stat(path, &sb) == 0) st->trace_bytes = (uint64_t)sb.st_size;
    }
    return rc ? -1 : 0;
}

/* Compressed bytes per event of each column (and of the declarations) of
 * the trace in run_dir, each compressed alone at the recorder's level. */
static void column_sizes(const char *run_dir, uint64_t events) {
    static const char *const names[REC_COL_COUNT] = {
        "seq", "time", "rank", "core", "kind", "pipe", "sub", "addr",
        "len", "value", "aux", "link", "site", "object", "peer"};
    char err[1024];
    rec_reader *r = NULL;
    rec_codec *codec = calloc(1, sizeof *codec);
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    if (!codec || !cc || rec_reader_open(run_dir, &r, err, sizeof err)) {
        fprintf(stderr, "bench_record: columns: %s\n", codec && cc ? err : "out of memory");
        rec_codec_free(codec);
        ZSTD_freeCCtx(cc);
        return;
    }
    rec_frame_params(cc);
    double comp[REC_COL_COUNT + 1] = {0}, raw[REC_COL_COUNT + 1] = {0};
    rec_buf payload = {0}, one = {0}, out = {0};
    rec_chunk_view v;
    const engine_event *evs;
    rec_chunk_row row;
    while (rec_reader_chunk(r, &v, &evs, &row) == 1) {
        payload.len = 0;
        rec_chunk_encode(codec, v.decls, v.decl_len, evs, v.n, &payload);
        /* Each stream alone (a column is split into a stream per event
         * group), then the declarations. */
        for (size_t k = 0; k <= codec->nstreams; k++) {
            int col = k < codec->nstreams ? (int)(codec->stream_id[k] >> REC_GROUP_BITS)
                                          : REC_COL_COUNT;
            one.len = 0;
            if (k < codec->nstreams)
                rec_buf_put(&one, payload.p + codec->stream_at[k], codec->stream_len[k]);
            else
                rec_buf_put(&one, v.decls, v.decl_len);
            raw[col] += (double)one.len;
            if (one.len && rec_frame_compress(cc, &one, &out) == 0) comp[col] += (double)out.len;
        }
    }
    double ev = events ? (double)events : 1, total = 0;
    for (int k = 0; k <= REC_COL_COUNT; k++) total += comp[k];
    printf("bytes per event by column (each compressed alone; %.3f in all):\n", total / ev);
    for (int k = 0; k <= REC_COL_COUNT; k++)
        printf("  %-13s %6.3f  (raw %6.3f)\n", k < REC_COL_COUNT ? names[k] : "declarations",
               comp[k] / ev, raw[k] / ev);
    rec_buf_free(&payload);
    rec_buf_free(&one);
    rec_buf_free(&out);
    rec_reader_close(r);
    rec_codec_free(codec);
    ZSTD_freeCCtx(cc);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
/* The median of v[0..n) (sorts v). */
static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Wall time of `npurr ARGS` with its output thrown away, or -1 when it
 * cannot be run or fails. */
static double time_command(const char *npurr, char *const *args) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    double t0 = now_s();
    pid_t pid;
    int rc = posix_spawn(&pid, npurr, &fa, NULL, args, NULL);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -1;
    return now_s() - t0;
}

/* The issue's own definition: `npurr record` against `npurr record
 * --no-trace`, as a user runs them (setup, run, check, trace and index,
 * stall table; process start and exit), best of repeat each, interleaved. */
static void command_overhead(const char *self, const char *kernel, const engine_config *cfg,
                             const char *const *names, const char *const *values, int nuser,
                             const char *out_dir, int repeat) {
    char npurr[4200];
    const char *slash = strrchr(self, '/');
    snprintf(npurr, sizeof npurr, "%.*snpurr", slash ? (int)(slash - self + 1) : 0, self);
    if (access(npurr, X_OK) != 0) {
        printf("npurr record command skipped: no %s next to this benchmark\n", npurr);
        return;
    }
    char nodes[32], npus[32], seed[32];
    snprintf(nodes, sizeof nodes, "%d", cfg->nodes);
    snprintf(npus, sizeof npus, "%d", cfg->npus_per_node);
    snprintf(seed, sizeof seed, "%llu", (unsigned long long)cfg->seed);
    char opt[64][80];
    const char *args[160];
    int n = 0;
    args[n++] = npurr;
    args[n++] = "record";
    args[n++] = "-k";
    args[n++] = kernel;
    args[n++] = "--nodes";
    args[n++] = nodes;
    args[n++] = "--npus-per-node";
    args[n++] = npus;
    args[n++] = "--seed";
    args[n++] = seed;
    for (int u = 0; u < nuser; u++) {
        snprintf(opt[u], sizeof opt[u], "--%s", names[u]);
        args[n++] = opt[u];
        args[n++] = values[u];
    }
    int tail = n;
    double best_rec = -1, best_plain = -1, ratio[64];
    char rm[4200];
    snprintf(rm, sizeof rm, "rm -rf '%s'", out_dir);
    for (int r = 0; r < repeat; r++) {
        double t[2];   /* [0] --no-trace, [1] record; the first of the pair alternates */
        for (int k = 0; k < 2; k++) {
            int traced = (k + r) % 2;
            n = tail;
            if (traced) {
                args[n++] = "-o";
                args[n++] = out_dir;
                if (system(rm) != 0) return;
            } else {
                args[n++] = "--no-trace";
            }
            args[n] = NULL;
            t[traced] = time_command(npurr, (char *const *)args);
        }
        if (t[0] < 0 || t[1] < 0) {
            printf("npurr record command failed (%s)\n", npurr);
            return;
        }
        if (r == 0 || t[0] < best_plain) best_plain = t[0];
        if (r == 0 || t[1] < best_rec) best_rec = t[1];
        if (r < 64) ratio[r] = t[1] / t[0];
    }
    printf("npurr record command %.3f x wall  (target <= 1.10): `npurr record` %.3f s, "
           "`--no-trace` %.3f s, best of %d each, as a user runs them; median of the %d "
           "back-to-back pairs %.3f x\n",
           best_rec / best_plain, best_rec, best_plain, repeat, repeat < 64 ? repeat : 64,
           median(ratio, repeat < 64 ? repeat : 64));
}

static void usage(FILE *out) {
    fputs("usage: bench_record [-k KERNEL] [--nodes N] [--npus-per-node N] [--seed S]\n"
          "                    [--repeat R] [--out DIR] [--KERNEL-OPTION VALUE]...\n"
          "Prints recording overhead (record / --no-trace wall time), compressed\n"
          "bytes per event and events recorded per second for one kernel run.\n"
          "Defaults: -k dispatch-layered --nodes 2 --npus-per-node 8 --repeat 5\n"
          "--out /tmp/npurr_bench_record.\n",
          out);
}

typedef struct bench_args {
    const char *kernel, *out_dir;
    int repeat, nodes_set;
    engine_config cfg;
    const char *user_names[64], *user_values[64];
    int nuser;
} bench_args;

/* 0, 1 after --help, 2 after a usage error. */
static int parse_args(int argc, char **argv, bench_args *b) {
    b->kernel = "dispatch-layered";
    b->out_dir = "/tmp/npurr_bench_record";
    b->repeat = 5;   /* single runs here vary by +-7% */
    engine_config_defaults(&b->cfg);
    b->cfg.nodes = 2;
    b->cfg.npus_per_node = 8;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 1;
        }
        if (strncmp(a, "-", 1) != 0 || !v) {
            fprintf(stderr, "bench_record: unexpected argument %s\n", a);
            usage(stderr);
            return 2;
        }
        i++;
        if (!strcmp(a, "-k")) b->kernel = v;
        else if (!strcmp(a, "--nodes")) b->cfg.nodes = atoi(v), b->nodes_set = 1;
        else if (!strcmp(a, "--npus-per-node")) b->cfg.npus_per_node = atoi(v);
        else if (!strcmp(a, "--seed")) b->cfg.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--repeat")) b->repeat = atoi(v) > 0 ? atoi(v) : 1;
        else if (!strcmp(a, "--out")) b->out_dir = v;
        else if (b->nuser < 64 && a[0] == '-' && a[1] == '-') {
            b->user_names[b->nuser] = a + 2;
            b->user_values[b->nuser++] = v;
        } else {
            fprintf(stderr, "bench_record: unknown option %s\n", a);
            return 2;
        }
    }
    return 0;
}

/* The kernel asked for, or the first registered one (said on stderr). */
static const kernel_desc *find_kernel(bench_args *b) {
    const kernel_desc *kd = kernels_find(b->kernel);
    if (kd) return kd;
    const kernel_desc *const *all = kernels_all();
    if (!all || !all[0]) {
        fprintf(stderr, "bench_record: kernel '%s' is not registered and no kernel is\n",
                b->kernel);
        return NULL;
    }
    fprintf(stderr,
            "bench_record: kernel '%s' is not registered (yet); falling back to '%s'.\n"
            "              registered:",
            b->kernel, all[0]->name);
    for (const kernel_desc *const *k = all; *k; k++) fprintf(stderr, " %s", (*k)->name);
    fputc('\n', stderr);
    /* The fallback kernels may be single-node (HCCS only): keep the
     * 8 NPUs, drop to one node unless the user chose. */
    if (!b->nodes_set) {
        b->cfg.nodes = 1;
        fprintf(stderr, "              running it on 1 node x %d NPUs\n", b->cfg.npus_per_node);
    }
    return all[0];
}

/* kd's defaults with the user's options over them; -1 for an unknown one. */
static int kernel_options(const kernel_desc *kd, const bench_args *b, kernel_opts *opts) {
    memset(opts, 0, sizeof *opts);
    for (const kernel_option *o = kd->options; o && o->name && opts->count < 64; o++) {
        opts->names[opts->count] = o->name;
        opts->values[opts->count] = o->default_value;
        for (int u = 0; u < b->nuser; u++)
            if (!strcmp(b->user_names[u], o->name)) opts->values[opts->count] = b->user_values[u];
        opts->count++;
    }
    for (int u = 0; u < b->nuser; u++) {
        int known = 0;
        for (int k = 0; k < opts->count; k++) known |= !strcmp(opts->names[k], b->user_names[u]);
        if (!known) {
            fprintf(stderr, "bench_record: kernel %s has no option --%s\n", kd->name,
                    b->user_names[u]);
            return -1;
        }
    }
    return 0;
}

/* The best of every side over the repetitions. */
typedef struct best {
    run_stats plain, rec;
    double plain_cpu, rec_cpu, full, full_cpu, ratio[64];
} best;

static int measure(const kernel_desc *kd, const kernel_opts *opts, const bench_args *b,
                   const char *cmdline, best *x) {
    for (int r = 0; r < b->repeat; r++) {
        run_stats plain, rec;
        /* Back to back, the first of the pair alternating: a burst of load
         * from elsewhere on the machine hits both sides alike. */
        if (r % 2 ? run_once(kd, opts, &b->cfg, b->out_dir, cmdline, &rec) ||
                        run_once(kd, opts, &b->cfg, NULL, cmdline, &plain)
                  : run_once(kd, opts, &b->cfg, NULL, cmdline, &plain) ||
                        run_once(kd, opts, &b->cfg, b->out_dir, cmdline, &rec))
            return -1;
        if (r < 64) x->ratio[r] = rec.wall / plain.wall;
        if (r == 0 || plain.wall < x->plain.wall) x->plain = plain;
        if (r == 0 || rec.wall < x->rec.wall) x->rec = rec;
        if (r == 0 || plain.cpu < x->plain_cpu) x->plain_cpu = plain.cpu;
        if (r == 0 || rec.cpu < x->rec_cpu) x->rec_cpu = rec.cpu;
        double full = rec.wall + rec.derive_wall, full_cpu = rec.cpu + rec.derive_cpu;
        if (r == 0 || full < x->full) x->full = full;
        if (r == 0 || full_cpu < x->full_cpu) x->full_cpu = full_cpu;
    }
    return 0;
}

static void print_figures(const kernel_desc *kd, const bench_args *b, best *x) {
    const run_stats *best_plain = &x->plain, *best_rec = &x->rec;
    int repeat = b->repeat;
    if (best_rec->events != best_plain->events)
        fprintf(stderr, "bench_record: warning: recorded run emitted %llu events, plain %llu\n",
                (unsigned long long)best_rec->events, (unsigned long long)best_plain->events);
    double ev = (double)best_rec->events;
    printf("kernel               %s (%d nodes x %d NPUs), outcome %s\n", kd->name, b->cfg.nodes,
           b->cfg.npus_per_node, engine_outcome_name(best_rec->outcome));
    printf("events               %llu\n", (unsigned long long)best_rec->events);
    printf("no-trace wall        %.3f s (best of %d)\n", best_plain->wall, repeat);
    printf("record wall          %.3f s (best of %d; rec_close %.3f s)\n", best_rec->wall, repeat,
           best_rec->close_wall);
    printf("recording overhead   %.3f x wall  (target <= 1.10; best of %d each; median of the "
           "back-to-back pairs %.3f x); %.3f x CPU time (%.3f s / %.3f s)\n",
           best_plain->wall > 0 ? best_rec->wall / best_plain->wall : 0.0, repeat,
           median(x->ratio, repeat < 64 ? repeat : 64),
           x->plain_cpu > 0 ? x->rec_cpu / x->plain_cpu : 0.0, x->rec_cpu, x->plain_cpu);
    printf("then ana_derive      %.3f x wall  (record + derive %.3f s, best of %d: the "
           "analysis tables, which the first stats/sql/export derives); %.3f x CPU time\n",
           best_plain->wall > 0 ? x->full / best_plain->wall : 0.0, x->full, repeat,
           x->plain_cpu > 0 ? x->full_cpu / x->plain_cpu : 0.0);
    printf("trace                %llu bytes, %.3f bytes/event  (target <= 4)\n",
           (unsigned long long)best_rec->trace_bytes,
           ev > 0 ? (double)best_rec->trace_bytes / ev : 0.0);
    double extra = best_rec->wall - best_plain->wall;
    printf("events recorded/s    %.0f (record run, engine included); engine alone %.0f/s",
           best_rec->wall > 0 ? ev / best_rec->wall : 0.0,
           best_plain->wall > 0 ? ev / best_plain->wall : 0.0);
    if (extra > 0) printf("; recorder alone %.0f/s", ev / extra);
    printf("\n");
    printf("run folder           %s\n", b->out_dir);
}

int main(int argc, char **argv) {
    bench_args b = {0};
    int rc = parse_args(argc, argv, &b);
    if (rc) return rc == 1 ? 0 : rc;
    const kernel_desc *kd = find_kernel(&b);
    if (!kd) return 1;
    kernel_opts opts;
    if (kernel_options(kd, &b, &opts)) return 2;
    char cmdline[4096];
    int n = snprintf(cmdline, sizeof cmdline, "bench_record -k %s --nodes %d --npus-per-node %d",
                     kd->name, b.cfg.nodes, b.cfg.npus_per_node);
    for (int u = 0; u < b.nuser && n > 0 && (size_t)n < sizeof cmdline; u++)
        n += snprintf(cmdline + n, sizeof cmdline - (size_t)n, " --%s %s", b.user_names[u],
                      b.user_values[u]);
    best x = {0};
    if (measure(kd, &opts, &b, cmdline, &x)) return 1;
    print_figures(kd, &b, &x);
    command_overhead(argv[0], kd->name, &b.cfg, b.user_names, b.user_values, b.nuser, b.out_dir,
                     b.repeat);
    column_sizes(b.out_dir, x.rec.events);
    return 0;
}

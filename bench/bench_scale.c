/*
 * bench_scale.c - production-size recordings, as a user runs them: peak RSS,
 * host time, events per second and run-folder size of `npurr record` at
 * DeepSeek-V3 shapes (256 experts, top-8, hidden 7168, 4096 tokens per
 * rank), with payload references (the default) and, where it fits, with
 * every byte stored (--payload full), so the gain is a ratio from one run.
 *
 * Each row spawns the npurr next to this benchmark and reads its figures
 * from the child's rusage (wall clock, CPU time, peak RSS), its summary
 * (events, check, the engine's run time) and the run folder's files. Not a
 * test: it prints figures.
 *
 * The dispatch rows run --no-trace too (mode "none"): its M ev/s is the
 * engine's alone, events over engine_run's time as `record` prints it
 * (issue 29: >= 2.5 M events/s at EP16, one core), with events per CPU
 * second of the whole process beside it; and the CPU recording costs per
 * event: on the recorder's threads (encoding, zstd, index rows, closing
 * trace and index; every thread of the child but its main one, read from
 * /proc every 0.1 s), and in all, (traced - --no-trace CPU) / events from
 * the two runs of one shape (the copy of each event on the engine's thread
 * too, and what the two threads cost each other in caches).
 *
 *   build/bench_scale                       every row below
 *   build/bench_scale --only EP32           the rows whose label has EP32
 *   build/bench_scale --max-nodes 4         skip dispatch shapes above 4 nodes
 *   build/bench_scale --full-max-nodes 2    --payload full rows up to 2 nodes
 *   build/bench_scale --dir /tmp/scale      where run folders go (removed after)
 */
#include "bench/bench_support.h"

#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct row {
    const char *label;
    const char *kernel;
    int nodes;                 /* dispatch rows are filtered by it */
    const char *args[24];
} row;

#define DSV3 "--tokens", "4096", "--hidden", "7168", "--topk", "8", "--experts", "256"

static const row rows[] = {
    {"dispatch-layered EP16", "dispatch-layered", 2,
     {"--nodes", "2", DSV3, "--routing", "group-limited", NULL}},
    {"dispatch-layered EP32", "dispatch-layered", 4,
     {"--nodes", "4", DSV3, "--routing", "group-limited", NULL}},
    {"dispatch-layered EP64", "dispatch-layered", 8,
     {"--nodes", "8", DSV3, "--routing", "group-limited", NULL}},
    {"combine-sender EP8", "combine-sender", 1, {DSV3, NULL}},
    /* seed 002 (A2): at most 256 tokens per rank */
    {"fullmesh EP16 x 256", "fullmesh-dispatch-combine", 2,
     {"--nodes", "2", "--tokens", "256", "--hidden", "7168", "--topk", "8", "--experts", "256",
      NULL}},
    /* Mmad is computed for real on the host: the shape that does so in minutes */
    {"matmul-reduce-scatter 8 NPUs", "matmul-reduce-scatter", 1,
     {"--m", "2048", "--n", "1024", "--k", "512", NULL}},
};

typedef struct result {
    int ok, exit_code;
    double wall_s, cpu_s;       /* cpu: user + system of the child, all threads */
    double engine_s;            /* engine_run alone, the summary's host line */
    double others_s;            /* CPU of the child's threads but the main one (the recorder's) */
    double rss_gib;
    uint64_t events, trace_bytes, index_bytes;
    char check[64];
} result;

static uint64_t file_size(const char *dir, const char *name) {
    char p[4400];
    if (snprintf(p, sizeof p, "%s/%s", dir, name) >= (int)sizeof p) return 0;
    struct stat st;
    return stat(p, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* The engine's run time from the summary's "host  S s, ..." line. */
static double engine_seconds(const char *log) {
    FILE *f = fopen(log, "r");
    if (!f) return 0;
    char line[1024];
    double sec = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "host ", 5) == 0 && sscanf(line + 5, " %lf s", &sec) == 1) break;
    fclose(f);
    return sec;
}

/* The CPU seconds of every thread of pid but its main one, as
 * /proc/PID/task says now (the recorder's worker, which compresses and
 * indexes, and at the end the thread that finishes the folder). Kept per
 * thread between polls: a thread's last reading stands once it is gone. */
#define MAX_THREADS 64
typedef struct threads_seen {
    long tid[MAX_THREADS];
    double cpu[MAX_THREADS];
    int n;
} threads_seen;

static void poll_threads(pid_t pid, threads_seen *t) {
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    long tick = sysconf(_SC_CLK_TCK);
    while ((de = readdir(d))) {
        long tid = atol(de->d_name);
        if (tid <= 0 || tid == (long)pid) continue;
        char path[128], buf[1024];
        snprintf(path, sizeof path, "%s/%ld/stat", dir, tid);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[n] = 0;
        /* fields after the command's closing parenthesis: state is 3, utime 14, stime 15 */
        const char *p = strrchr(buf, ')');
        unsigned long ut, st;
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
            continue;
        int k = 0;
        while (k < t->n && t->tid[k] != tid) k++;
        if (k == t->n && t->n < MAX_THREADS) t->tid[t->n++] = tid;
        if (k < t->n) t->cpu[k] = (double)(ut + st) / (double)tick;
    }
    closedir(d);
}

/* payload "ref" or "full" records into a run folder; "none" runs
 * --no-trace (payload ref). */
static void run_row(const char *npurr, const row *rw, const char *payload, const char *dir,
                    result *r) {
    int traced = strcmp(payload, "none") != 0;
    memset(r, 0, sizeof *r);
    snprintf(r->check, sizeof r->check, "-");
    char run[4200], log[4300], cmd[8600];
    snprintf(run, sizeof run, "%s/run-%d", dir, (int)getpid());
    snprintf(log, sizeof log, "%s.log", run);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", run);
    if (system(cmd) != 0) return;
    const char *args[40];
    int n = 0;
    args[n++] = npurr;   /* a path: spawned as it is */
    args[n++] = "record";
    args[n++] = "-k";
    args[n++] = rw->kernel;
    for (int i = 0; rw->args[i]; i++) args[n++] = rw->args[i];
    args[n++] = "--payload";
    args[n++] = traced ? payload : "ref";
    args[n++] = "--quiet";
    if (traced) {
        args[n++] = "-o";
        args[n++] = run;
    } else {
        args[n++] = "--no-trace";
    }
    args[n] = NULL;
    double t0 = now_s();
    pid_t pid;
    if (bench_spawn_logged(args, log, &pid) != 0) return;
    int status;
    struct rusage ru;
    threads_seen seen = {0};
    pid_t got;
    while ((got = wait4(pid, &status, WNOHANG, &ru)) == 0) {
        poll_threads(pid, &seen);
        usleep(100000);
    }
    if (got != pid) return;
    for (int k = 0; k < seen.n; k++) r->others_s += seen.cpu[k];
    r->wall_s = now_s() - t0;
    r->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    r->rss_gib = (double)ru.ru_maxrss / (1024.0 * 1024.0);
    r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->ok = r->exit_code == 0;
    bench_read_summary(log, &r->events, r->check, sizeof r->check);
    r->engine_s = engine_seconds(log);
    r->trace_bytes = file_size(run, "trace.zst");
    r->index_bytes = file_size(run, "index.db");
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", run, log);
    if (system(cmd) != 0) fprintf(stderr, "bench_scale: could not remove %s\n", run);
}

static void print_result(const char *label, const char *payload, const result *r) {
    if (!r->wall_s) {
        printf("%-30s %-5s could not be run\n", label, payload);
        return;
    }
    double ev = (double)r->events;
    if (!strcmp(payload, "none")) {
        printf("%-30s %-5s %9.2f %9.1f %8.1f %10.2f %9.2f %8s %8s  %s%s\n", label, payload,
               r->rss_gib, r->wall_s, r->cpu_s, ev / 1e6,
               r->engine_s > 0 ? ev / r->engine_s / 1e6 : 0, "-", "-", r->check,
               r->ok ? "" : " (exit code above 0)");
        if (r->ok && r->cpu_s > 0)
            printf("%-30s       engine: %.2f M events/s (%.2f s in engine_run); whole process "
                   "%.2f M events per CPU second\n", "", r->engine_s > 0 ? ev / r->engine_s / 1e6 : 0,
                   r->engine_s, ev / r->cpu_s / 1e6);
    } else {
        printf("%-30s %-5s %9.2f %9.1f %8.1f %10.2f %9.2f %8.2f %8.2f  %s%s\n", label, payload,
               r->rss_gib, r->wall_s, r->cpu_s, ev / 1e6, r->wall_s > 0 ? ev / r->wall_s / 1e6 : 0,
               ev ? (double)r->trace_bytes / ev : 0, ev ? (double)r->index_bytes / ev : 0,
               r->check, r->ok ? "" : " (exit code above 0)");
    }
    if (!r->ok) printf("%-30s       exit %d\n", "", r->exit_code);
    fflush(stdout);
}

static const char usage[] =
    "usage: bench_scale [--only LABEL] [--max-nodes N] [--full-max-nodes N] [--dir DIR]\n"
    "  records the production shapes with npurr (next to this benchmark) and prints\n"
    "  peak RSS, host time, events/s and run-folder bytes per event\n";

int main(int argc, char **argv) {
    static const char *const names[] = {"--only", "--max-nodes", "--full-max-nodes", "--dir", NULL};
    bench_check_args(argc, argv, usage, names);
    const char *only = arg_value(argc, argv, "--only", "");
    int max_nodes = atoi(arg_value(argc, argv, "--max-nodes", "8"));
    int full_max = atoi(arg_value(argc, argv, "--full-max-nodes", "2"));
    const char *dir = arg_value(argc, argv, "--dir", "/tmp");
    char npurr[4200];
    const char *slash = strrchr(argv[0], '/');
    snprintf(npurr, sizeof npurr, "%.*snpurr", slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
    if (access(npurr, X_OK) != 0) {
        fprintf(stderr, "bench_scale: no %s next to this benchmark\n", npurr);
        return 1;
    }
    printf("npurr record at production shapes (one process, this machine: %ld cores, %.1f GiB "
           "available)\n", sysconf(_SC_NPROCESSORS_ONLN),
           (double)mem_available() / (1024.0 * 1024.0 * 1024.0));
    printf("%-30s %-5s %9s %9s %8s %10s %9s %8s %8s  %s\n", "shape", "mode", "RSS GiB", "host s",
           "CPU s", "events M", "M ev/s", "trace B", "index B", "check");
    printf("(host s: wall clock; CPU s: user + system over both threads, steadier on a shared "
           "machine; trace B and index B: bytes per event; mode none: --no-trace, its M ev/s the "
           "engine's)\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const row *rw = &rows[i];
        if (*only && !strstr(rw->label, only)) continue;
        if (!strcmp(rw->kernel, "dispatch-layered") && rw->nodes > max_nodes) continue;
        result ref, full, none;
        int dispatch = !strcmp(rw->kernel, "dispatch-layered");
        if (dispatch) {
            run_row(npurr, rw, "none", dir, &none);
            print_result(rw->label, "none", &none);
        }
        run_row(npurr, rw, "ref", dir, &ref);
        print_result(rw->label, "ref", &ref);
        if (dispatch && none.ok && ref.ok && ref.events == none.events && ref.events)
            printf("%-30s       recording: %.3f us of CPU per event on the recorder's threads "
                   "(%.1f s), %.3f in all ((ref - none CPU) / events)\n", "",
                   ref.others_s / (double)ref.events * 1e6, ref.others_s,
                   (ref.cpu_s - none.cpu_s) / (double)ref.events * 1e6);
        int try_full = strcmp(rw->kernel, "dispatch-layered") || rw->nodes <= full_max;
        if (!try_full) {
            printf("%-30s %-5s not run (above --full-max-nodes %d)\n", "", "full", full_max);
            continue;
        }
        run_row(npurr, rw, "full", dir, &full);
        print_result(rw->label, "full", &full);
        if (ref.ok && full.ok && ref.rss_gib > 0 && ref.wall_s > 0)
            printf("%-30s       full/ref: RSS %.1fx, host time %.2fx\n", "",
                   full.rss_gib / ref.rss_gib, full.wall_s / ref.wall_s);
    }
    return 0;
}

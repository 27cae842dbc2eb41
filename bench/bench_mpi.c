/*
 * bench_mpi.c - one run split over MPI processes, as a user runs it: host
 * time and peak RSS of every process of `mpirun -np P npurr record`, for
 * P = 1 and 2, without a trace and with one, at the production shape
 * (dispatch-layered, DeepSeek-V3: 256 experts, top-8, hidden 7168, 4096
 * tokens per rank, group-limited routing), then a larger cluster at P = 2.
 * The speedup is a ratio of two runs of this one benchmark, printed with
 * the most this machine allows (the processes' CPU time over its cores),
 * the split's total CPU over one process's, and the speedup a core per
 * process would give (one process's CPU over the busiest process's);
 * from the figures it prints what a 32-node (EP256) run would need.
 *
 * Each process's figures come from its own rusage: mpirun starts this
 * benchmark again (--wrap) as every process, which starts npurr with the
 * same environment (so npurr is the MPI process), waits for it and writes
 * its wall time, CPU time, peak RSS and exit code to a file the benchmark
 * reads. Not a test: it prints figures.
 *
 *   build/bench_mpi                      EP64 P = 1, 2 (both modes), EP128 P = 2
 *   build/bench_mpi --nodes 4            EP32 instead of EP64 (quicker)
 *   build/bench_mpi --big-nodes 0        skip the larger cluster
 *   build/bench_mpi --big-trace 1        the larger cluster with a trace too
 *   build/bench_mpi --tokens 1024        tokens per rank
 *   build/bench_mpi --dir /tmp/mpi       where run folders go (removed after)
 *   build/bench_mpi --repeat 3           each mode's P = 1 and 2 runs three times
 *
 * On a shared machine one process's CPU time moves by 10-20 % from minute
 * to minute, more than the split's cost that the ratio is there to show.
 * --repeat N alternates P = 1 and P = 2 N times, so a slow spell falls on
 * both alike, prints every run and each pair's ratio, then the ratio of
 * the least CPU each P took (the least disturbed run of each, as timeit
 * takes its best).
 */
#include "bench/bench_support.h"

#include <spawn.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define MAX_PROCS 8

typedef struct proc_fig {
    int seen, exit_code;
    double wall_s, cpu_s, rss_gib;
} proc_fig;

typedef struct result {
    int procs, ok;
    double wall_s;                /* mpirun's wall clock: the run as a user waits for it */
    uint64_t events;
    char check[64];
    proc_fig p[MAX_PROCS];
} result;

/* ------------------------------------------------------------ --wrap */
/* As one process of the job: run npurr, then write its figures to
 * FILE.<rank> (rank from Open MPI's environment; 0 when run alone). */
static int wrap(const char *fig, char **cmd) {
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    double t0 = now_s();
    pid_t pid;
    if (posix_spawn(&pid, cmd[0], NULL, NULL, cmd, environ) != 0) {
        fprintf(stderr, "bench_mpi: cannot start %s\n", cmd[0]);
        return 127;
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) return 127;
    double wall = now_s() - t0;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    char path[4400];
    snprintf(path, sizeof path, "%s.%s", fig, rank && *rank ? rank : "0");
    FILE *f = fopen(path, "w");
    if (f) {
        fprintf(f, "%.3f %.3f %ld %d\n", wall,
                (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
                    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6,
                ru.ru_maxrss, code);
        fclose(f);
    }
    return code;
}

/* ------------------------------------------------------------ one run */
static void read_figures(const char *fig, result *r) {
    for (int q = 0; q < r->procs; q++) {
        char path[4400];
        snprintf(path, sizeof path, "%s.%d", fig, q);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        long kb = 0;
        proc_fig *p = &r->p[q];
        if (fscanf(f, "%lf %lf %ld %d", &p->wall_s, &p->cpu_s, &kb, &p->exit_code) == 4) {
            p->seen = 1;
            p->rss_gib = (double)kb / (1024.0 * 1024.0);
        }
        fclose(f);
        unlink(path);
    }
}

typedef struct shape {
    int nodes, tokens, trace;
} shape;

static void run_one(const char *self, const char *npurr, const shape *s, int procs,
                    const char *dir, result *r) {
    memset(r, 0, sizeof *r);
    r->procs = procs;
    snprintf(r->check, sizeof r->check, "-");
    char run[4200], log[4300], fig[4300], cmd[8600], nodes[16], tokens[16], np[16];
    snprintf(run, sizeof run, "%s/mpi-run-%d", dir, (int)getpid());
    snprintf(log, sizeof log, "%s.log", run);
    snprintf(fig, sizeof fig, "%s.fig", run);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", run);
    if (system(cmd) != 0) return;
    snprintf(nodes, sizeof nodes, "%d", s->nodes);
    snprintf(tokens, sizeof tokens, "%d", s->tokens);
    snprintf(np, sizeof np, "%d", procs);
    const char *args[48];
    int n = 0;
    if (procs > 1) {
        args[n++] = "mpirun";
        args[n++] = "--allow-run-as-root";
        args[n++] = "--oversubscribe";
        args[n++] = "-np";
        args[n++] = np;
    }
    args[n++] = self;
    args[n++] = "--wrap";
    args[n++] = fig;
    args[n++] = npurr;
    const char *rec[] = {"record", "-k", "dispatch-layered", "--nodes", nodes, "--tokens", tokens,
                         "--hidden", "7168", "--topk", "8", "--experts", "256", "--routing",
                         "group-limited", "--quiet", NULL};
    for (int i = 0; rec[i]; i++) args[n++] = rec[i];
    if (s->trace) {
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
    if (waitpid(pid, &status, 0) != pid) return;
    r->wall_s = now_s() - t0;
    read_figures(fig, r);
    r->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    for (int q = 0; q < procs; q++) r->ok = r->ok && r->p[q].seen && r->p[q].exit_code == 0;
    bench_read_summary(log, &r->events, r->check, sizeof r->check);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", run, log);
    if (system(cmd) != 0) fprintf(stderr, "bench_mpi: could not remove %s\n", run);
}

/* Every process's CPU time (recorder threads included). */
static double total_cpu_of(const result *r) {
    double cpu = 0;
    for (int q = 0; q < r->procs; q++) cpu += r->p[q].cpu_s;
    return cpu;
}

static void print_result(const shape *s, const result *r, const result *one) {
    char label[64];
    snprintf(label, sizeof label, "EP%d x %d, %s", s->nodes * 8, s->tokens,
             s->trace ? "trace" : "--no-trace");
    if (!r->wall_s) {
        printf("%-26s P=%d could not be run\n", label, r->procs);
        return;
    }
    double ev = (double)r->events;
    char speed[32] = "";
    if (one && one->ok && r->ok && r->wall_s > 0)
        snprintf(speed, sizeof speed, "%.2fx", one->wall_s / r->wall_s);
    printf("%-26s P=%d %8.1f %8s %9.1f %8.2f  %s%s\n", label, r->procs, r->wall_s, speed,
           ev / 1e6, r->wall_s > 0 ? ev / r->wall_s / 1e6 : 0, r->check,
           r->ok ? "" : " (a process exited above 0)");
    /* what the machine allows: no run is shorter than its processes' CPU
     * time (recorder threads included) spread over every core */
    double total_cpu = total_cpu_of(r);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if (one && one->ok && r->ok && cores > 0 && total_cpu > 0) {
        printf("%-26s      total CPU %.1f s on %ld cores: host time >= %.1f s, speedup <= %.2fx\n",
               "", total_cpu, cores, total_cpu / (double)cores,
               one->wall_s / (total_cpu / (double)cores));
        /* issue 29: what splitting costs in all (target <= 1.1), and what a
         * core per process would give: one process's CPU over the busiest
         * process's (each process's threads on its own core) */
        double one_cpu = one->p[0].cpu_s, most = 0;
        for (int q = 0; q < r->procs; q++)
            if (r->p[q].cpu_s > most) most = r->p[q].cpu_s;
        if (one_cpu > 0 && most > 0)
            printf("%-26s      total CPU / P=1's %.2f; on a core per process: speedup about %.2fx\n",
                   "", total_cpu / one_cpu, one_cpu / most);
    }
    for (int q = 0; q < r->procs; q++) {
        const proc_fig *p = &r->p[q];
        if (!p->seen) {
            printf("%-26s      process %d: no figures\n", "", q);
            continue;
        }
        printf("%-26s      process %d: host %.1f s, CPU %.1f s, peak RSS %.2f GiB, "
               "%.2f M events/s per process%s\n", "", q, p->wall_s, p->cpu_s, p->rss_gib,
               r->wall_s > 0 ? ev / r->procs / r->wall_s / 1e6 : 0,
               p->exit_code ? " (exit above 0)" : "");
    }
    fflush(stdout);
}

/* What a 32-node (EP256) run would need, scaled from a measured one: the
 * events grow with the ranks (the same tokens per rank, spread over more
 * destinations), memory with the nodes each process emulates. */
static void project(const shape *s, const result *r) {
    if (!r->ok || !r->events || r->wall_s <= 0) return;
    double rss = 0, cpu = total_cpu_of(r);
    for (int q = 0; q < r->procs; q++) rss += r->p[q].rss_gib;
    double per_node = rss / s->nodes, ev_per_rank = (double)r->events / (s->nodes * 8);
    double us_per_event = cpu / (double)r->events * 1e6;
    printf("  from EP%d, P=%d, %s: %.2f GiB per emulated node, %.2f M events per rank, "
           "%.2f us of CPU per event\n", s->nodes * 8, r->procs, s->trace ? "trace" : "--no-trace",
           per_node, ev_per_rank / 1e6, us_per_event);
    double ev256 = ev_per_rank * 256;
    double gib = per_node * 32, minutes = ev256 * us_per_event / 1e6 / 60;
    printf("  EP256 (32 nodes): about %.0f M events, %.1f GiB and %.1f CPU-minutes in all; "
           "over 4 processes with a core each: %.1f GiB and %.1f minutes each\n",
           ev256 / 1e6, gib, minutes, gib / 4, minutes / 4);
}

/* The run of P procs that took the least CPU in all, of n (NULL if none
 * completed). */
static const result *least_cpu(const result *runs, int n) {
    const result *best = NULL;
    for (int i = 0; i < n; i++) {
        double cpu = total_cpu_of(&runs[i]);
        if (runs[i].ok && cpu > 0 && (!best || cpu < total_cpu_of(best))) best = &runs[i];
    }
    return best;
}

/* After N alternated pairs: each pair's ratio, then the least CPU's. */
static void print_repeats(const shape *s, const result *one, const result *two, int n) {
    printf("EP%d x %d, %s, %d pairs: total CPU / P=1's by pair", s->nodes * 8, s->tokens,
           s->trace ? "trace" : "--no-trace", n);
    for (int i = 0; i < n; i++) {
        if (one[i].ok && two[i].ok && total_cpu_of(&one[i]) > 0)
            printf(" %.2f", total_cpu_of(&two[i]) / total_cpu_of(&one[i]));
        else
            printf(" -");
    }
    const result *a = least_cpu(one, n), *b = least_cpu(two, n);
    if (a && b)
        printf("; least CPU of each: P=1 %.1f s, P=2 %.1f s, total CPU / P=1's %.2f\n",
               total_cpu_of(a), total_cpu_of(b), total_cpu_of(b) / total_cpu_of(a));
    else
        printf("; not every P completed\n");
    fflush(stdout);
}

#define MAX_REPEAT 10

static const char usage[] =
    "usage: bench_mpi [--nodes N] [--tokens T] [--big-nodes N] [--big-trace 0|1] [--dir DIR]\n"
    "                 [--repeat R]\n"
    "  records dispatch-layered with mpirun -np 1 and 2 (N nodes, default 8 = EP64;\n"
    "  T tokens per rank, default 4096), without and with a trace, then --big-nodes\n"
    "  (default 16, 0 skips) at -np 2, and prints host time, CPU and peak RSS per process;\n"
    "  R (1 to 10, default 1) alternates each mode's P = 1 and 2 runs R times and prints\n"
    "  each pair's CPU ratio and the ratio of the least CPU each P took\n";

int main(int argc, char **argv) {
    if (argc >= 4 && strcmp(argv[1], "--wrap") == 0) return wrap(argv[2], argv + 3);
    static const char *const names[] = {"--nodes", "--tokens", "--big-nodes", "--big-trace",
                                        "--dir", "--repeat", NULL};
    bench_check_args(argc, argv, usage, names);
    int nodes = atoi(arg_value(argc, argv, "--nodes", "8"));
    int tokens = atoi(arg_value(argc, argv, "--tokens", "4096"));
    int big = atoi(arg_value(argc, argv, "--big-nodes", "16"));
    int big_trace = atoi(arg_value(argc, argv, "--big-trace", "0"));
    const char *dir = arg_value(argc, argv, "--dir", "/tmp");
    int repeat = atoi(arg_value(argc, argv, "--repeat", "1"));
    if (nodes < 2 || tokens < 1 || big < 0 || repeat < 1 || repeat > MAX_REPEAT) {
        fprintf(stderr, "bench_mpi: --nodes must be 2 or more, --tokens 1 or more, "
                        "--big-nodes 0 (skip) or more, --repeat 1 to %d\n", MAX_REPEAT);
        return 2;
    }
    char self[4200], npurr[4200];
    if (!realpath(argv[0], self)) {
        fprintf(stderr, "bench_mpi: cannot resolve %s\n", argv[0]);
        return 1;
    }
    const char *slash = strrchr(self, '/');
    snprintf(npurr, sizeof npurr, "%.*snpurr", (int)(slash - self + 1), self);
    if (access(npurr, X_OK) != 0) {
        fprintf(stderr, "bench_mpi: no %s next to this benchmark\n", npurr);
        return 1;
    }
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        fprintf(stderr, "bench_mpi: mpirun not found (sh tools/setup.sh installs Open MPI)\n");
        return 1;
    }
    printf("npurr record split over MPI processes (dispatch-layered, group-limited, 256 experts, "
           "top-8, hidden 7168; this machine: %ld cores, %.1f GiB available)\n",
           sysconf(_SC_NPROCESSORS_ONLN), (double)mem_available() / (1024.0 * 1024.0 * 1024.0));
    printf("%-26s %3s %8s %8s %9s %8s  %s\n", "shape", "P", "host s", "speedup", "events M",
           "M ev/s", "check");
    printf("(host s: mpirun's wall clock; speedup: P=1's host time over this one's)\n");
    result best[2] = {{0}, {0}};   /* the largest run that completed, per mode */
    shape best_shape[2] = {{0}, {0}};
    for (int trace = 0; trace <= 1; trace++) {
        shape s = {nodes, tokens, trace};
        result one[MAX_REPEAT], two[MAX_REPEAT];
        for (int i = 0; i < repeat; i++) {
            run_one(self, npurr, &s, 1, dir, &one[i]);
            print_result(&s, &one[i], NULL);
            run_one(self, npurr, &s, 2, dir, &two[i]);
            print_result(&s, &two[i], &one[i]);
        }
        if (repeat > 1) print_repeats(&s, one, two, repeat);
        const result *least = least_cpu(two, repeat);   /* the projection's: least disturbed */
        if (least && least->events) {
            best[trace] = *least;
            best_shape[trace] = s;
        }
    }
    for (int trace = 0; big && trace <= big_trace; trace++) {
        shape s = {big, tokens, trace};
        result two;
        run_one(self, npurr, &s, 2, dir, &two);
        print_result(&s, &two, NULL);
        if (two.ok && two.events) {
            best[trace] = two;
            best_shape[trace] = s;
        }
    }
    printf("scaling (from the largest split run that completed, per mode; of repeats, the one "
           "with the least CPU):\n");
    for (int trace = 0; trace <= 1; trace++) project(&best_shape[trace], &best[trace]);
    return 0;
}

/*
 * bench_sweep.c - how much `npurr sweep -j` gains: the example grid
 * (dispatch-layered on 2 nodes, --tokens 256,512,1024 x roce 12.5,25,50
 * GB/s: 9 points) run with -j 1 and with -j 2 (or the counts given), wall
 * clock and CPU of each and the ratio to -j 1. The points are independent
 * processes, so on an idle machine with J cores the ratio approaches the
 * longest point's share; on a shared one it says what the others left.
 *
 * Spawns the npurr next to this benchmark. Not a test: it prints figures.
 *
 *   build/bench_sweep                     -j 1 and -j 2
 *   build/bench_sweep --jobs 1,2,4        those counts
 *   build/bench_sweep --dir /tmp/sw       where the sweep folders go (removed after)
 */
#include "bench/bench_support.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static const char usage[] =
    "usage: bench_sweep [--jobs 1,2] [--dir DIR]\n"
    "  runs the README's sweep example with each -j and prints wall clock, CPU and\n"
    "  the time ratio to the first -j\n";

typedef struct result {
    int exit_code;
    double wall_s, cpu_s;
    int rows;
} result;

static void run_sweep(const char *npurr, int jobs, const char *dir, result *r) {
    memset(r, 0, sizeof *r);
    char out[4200], log[4300], j[16], cmd[8600];
    snprintf(out, sizeof out, "%s/sweep-%d-j%d", dir, (int)getpid(), jobs);
    snprintf(log, sizeof log, "%s.log", out);
    snprintf(j, sizeof j, "%d", jobs);
    const char *args[] = {npurr, "sweep", "-k", "dispatch-layered", "--nodes", "2", "--tokens",
                          "512", "--vary", "--tokens=256,512,1024", "--vary",
                          "hw.roce_gbytes_per_s=12.5,25,50", "-o", out, "-j", j, NULL};
    double t0 = now_s();
    pid_t pid;
    if (bench_spawn_logged(args, log, &pid) != 0) return;
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid) return;
    r->wall_s = now_s() - t0;
    /* the children's CPU: wait4 of the sweep reports what it and its reaped
     * children used */
    r->cpu_s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    char csv[4300];
    snprintf(csv, sizeof csv, "%s/sweep.csv", out);
    FILE *f = fopen(csv, "r");
    if (f) {
        int c, lines = 0;
        while ((c = fgetc(f)) != EOF) lines += c == '\n';
        fclose(f);
        r->rows = lines > 0 ? lines - 1 : 0;
    }
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", out, log);
    if (system(cmd) != 0) fprintf(stderr, "bench_sweep: could not remove %s\n", out);
}

int main(int argc, char **argv) {
    static const char *const names[] = {"--jobs", "--dir", NULL};
    bench_check_args(argc, argv, usage, names);
    const char *list = arg_value(argc, argv, "--jobs", "1,2");
    const char *dir = arg_value(argc, argv, "--dir", "/tmp");
    char npurr[4200];
    const char *slash = strrchr(argv[0], '/');
    snprintf(npurr, sizeof npurr, "%.*snpurr", slash ? (int)(slash - argv[0] + 1) : 0, argv[0]);
    if (access(npurr, X_OK) != 0) {
        fprintf(stderr, "bench_sweep: no %s next to this benchmark\n", npurr);
        return 1;
    }
    double load[3] = {0, 0, 0};
    if (getloadavg(load, 3) < 1) load[0] = -1;
    printf("npurr sweep -k dispatch-layered --nodes 2 --tokens 512 --vary --tokens=256,512,1024 "
           "--vary hw.roce_gbytes_per_s=12.5,25,50 (9 points)\n");
    printf("this machine: %ld cores, load average %.2f at the start\n",
           sysconf(_SC_NPROCESSORS_ONLN), load[0]);
    printf("%4s %9s %9s %5s %5s %14s\n", "-j", "wall s", "CPU s", "rows", "exit", "wall / first");
    double first = 0;
    const char *p = list;
    while (*p) {
        int jobs = atoi(p);
        if (jobs <= 0) {
            fprintf(stderr, "bench_sweep: --jobs: '%s' is not a list of positive counts\n", list);
            return 2;
        }
        result r;
        run_sweep(npurr, jobs, dir, &r);
        if (!first) first = r.wall_s;
        printf("%4d %9.2f %9.2f %5d %5d %14.3f\n", jobs, r.wall_s, r.cpu_s, r.rows, r.exit_code,
               first > 0 ? r.wall_s / first : 0);
        fflush(stdout);
        const char *c = strchr(p, ',');
        if (!c) break;
        p = c + 1;
    }
    return 0;
}

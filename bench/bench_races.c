/*
 * bench_races.c - what `--check races` costs on the README's sample.
 *
 * Spawns the npurr next to this benchmark twice per repetition on the same
 * run: `npurr record -k dispatch-layered --nodes 2 --tokens 256 -o DIR`
 * (about 1.1 M events), then the same with `--check races`, and prints the
 * wall and CPU seconds and peak RSS of each, the ratio checked / plain
 * (target <= 3), and the checker's verdict line. The fastest of --repeat
 * runs of each side is kept, so a busy machine inflates neither side.
 * Other kernels and shapes: any further options are passed to both runs.
 *
 * usage: bench_races [--repeat R] [--out DIR] [record options...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench/bench_support.h"

extern char **environ;

typedef struct timing {
    double wall, cpu;
    long rss_mb;
    int status;
} timing;

/* Runs argv with stdout into log; returns its exit status (-1 if it could not run). */
static int spawn_timed(char *const *argv, const char *log, timing *t) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    double t0 = now_s();
    pid_t pid;
    int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) return -1;
    int st = 0;
    struct rusage ru;
    if (wait4(pid, &st, 0, &ru) < 0) return -1;
    t->wall = now_s() - t0;
    t->cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
             (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
    t->rss_mb = ru.ru_maxrss / 1024;
    t->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return t->status;
}

static void grep_line(const char *log, const char *prefix) {
    FILE *f = fopen(log, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, prefix, strlen(prefix)) == 0) printf("  %s", line);
    fclose(f);
}

int main(int argc, char **argv) {
    int repeat = atoi(arg_value(argc, argv, "--repeat", "1"));
    const char *out = arg_value(argc, argv, "--out", "/tmp/bench_races");
    if (repeat < 1) repeat = 1;
    char npurr[4096];
    ssize_t n = readlink("/proc/self/exe", npurr, sizeof npurr - 16);
    if (n <= 0) {
        fprintf(stderr, "bench_races: cannot find this executable\n");
        return 1;
    }
    npurr[n] = 0;
    char *slash = strrchr(npurr, '/');
    strcpy(slash + 1, "npurr");
    /* record -k ... [user options] -o DIR/x --quiet [--check races] */
    char *args[128];
    int k = 0;
    args[k++] = npurr;
    args[k++] = "record";
    int user = 0;
    for (int i = 1; i < argc && k < 100; i++) {
        if (strcmp(argv[i], "--repeat") == 0 || strcmp(argv[i], "--out") == 0) { i++; continue; }
        args[k++] = argv[i];
        user = 1;
    }
    if (!user) {
        static char *sample[] = {"-k", "dispatch-layered", "--nodes", "2", "--tokens", "256"};
        for (size_t i = 0; i < sizeof sample / sizeof *sample; i++) args[k++] = sample[i];
    }
    char dir_plain[4200], dir_check[4200], log_plain[4200], log_check[4200];
    snprintf(dir_plain, sizeof dir_plain, "%s/plain", out);
    snprintf(dir_check, sizeof dir_check, "%s/checked", out);
    snprintf(log_plain, sizeof log_plain, "%s.plain.log", out);
    snprintf(log_check, sizeof log_check, "%s.checked.log", out);
    char rm[8500];
    snprintf(rm, sizeof rm, "rm -rf '%s' && mkdir -p '%s'", out, out);
    if (system(rm) != 0) {
        fprintf(stderr, "bench_races: cannot prepare %s\n", out);
        return 1;
    }
    args[k++] = "--quiet";
    args[k++] = "-o";
    int at_dir = k++;
    args[k] = NULL;
    timing best_plain = {1e30, 1e30, 0, 0}, best_check = {1e30, 1e30, 0, 0};
    for (int r = 0; r < repeat; r++) {
        timing t;
        snprintf(rm, sizeof rm, "rm -rf '%s' '%s'", dir_plain, dir_check);
        if (system(rm) != 0) return 1;
        args[at_dir] = dir_plain;
        args[at_dir + 1] = NULL;
        if (spawn_timed(args, log_plain, &t) < 0) {
            fprintf(stderr, "bench_races: cannot run %s\n", npurr);
            return 1;
        }
        if (t.wall < best_plain.wall) best_plain = t;
        args[at_dir] = dir_check;
        args[at_dir + 1] = "--check";
        args[at_dir + 2] = "races";
        args[at_dir + 3] = NULL;
        if (spawn_timed(args, log_check, &t) < 0) return 1;
        if (t.wall < best_check.wall) best_check = t;
    }
    args[at_dir] = "DIR";
    printf("bench_races: %s", "npurr");
    for (int i = 1; i < at_dir + 1; i++) printf(" %s", args[i]);
    printf(" [--check races], fastest of %d\n", repeat);
    printf("  plain record      %7.2f s wall  %7.2f s cpu  %6ld MiB peak  exit %d\n", best_plain.wall,
           best_plain.cpu, best_plain.rss_mb, best_plain.status);
    printf("  --check races     %7.2f s wall  %7.2f s cpu  %6ld MiB peak  exit %d\n", best_check.wall,
           best_check.cpu, best_check.rss_mb, best_check.status);
    printf("  cost of --check races: %.2fx wall, %.2fx cpu (target <= 3x)\n",
           best_check.wall / best_plain.wall, best_check.cpu / best_plain.cpu);
    grep_line(log_plain, "virtual");
    grep_line(log_check, "races ");
    return 0;
}

/*
 * bench_support.h - what the benchmarks share: a monotonic wall clock,
 * process CPU time, peak RSS, the memory the machine has free, and
 * "--name value" lookups on the command line (with a check of them for
 * benchmarks that take nothing else), and what a `npurr record` they ran
 * printed (events, check).
 *
 * Header-only, static inline: every bench/bench_*.c is its own executable
 * and each uses only some of these.
 */
#ifndef NPURR_BENCH_SUPPORT_H
#define NPURR_BENCH_SUPPORT_H

#include <fcntl.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static inline double bench_clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
/* Wall time, in seconds from an arbitrary start. */
static inline double now_s(void) { return bench_clock_s(CLOCK_MONOTONIC); }
/* CPU time of the process (all threads): the steadier figure on a shared
 * machine. */
static inline double cpu_s(void) { return bench_clock_s(CLOCK_PROCESS_CPUTIME_ID); }

/* The process's peak resident set so far, in MiB. */
static inline long peak_rss_mb(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024;
}

/* MemAvailable of /proc/meminfo in bytes (0 if unknown): what a run may
 * take before the machine swaps or kills it. */
static inline uint64_t mem_available(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
    fclose(f);
    return (uint64_t)kb * 1024;
}

/* The value after "name" on the command line, or def. */
static inline const char *arg_value(int argc, char **argv, const char *name, const char *def) {
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], name) == 0) return argv[i + 1];
    return def;
}

/* Starts args (args[0] looked up in PATH) with this environment, stdout to
 * the file log and stderr to /dev/null; 0 and *pid, or an errno. */
static inline int bench_spawn_logged(const char *const *args, const char *log, pid_t *pid) {
    extern char **environ;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    int rc = posix_spawnp(pid, args[0], &fa, NULL, (char *const *)args, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* From the summary `npurr record` printed to path: the run's events (the
 * "virtual" line) and the check's first word; left as they are if absent. */
static inline void bench_read_summary(const char *path, uint64_t *events, char *check,
                                      size_t check_len) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        unsigned long long ev;
        if (strncmp(line, "virtual ", 8) == 0) {
            const char *c = strchr(line, ',');
            if (c && sscanf(c + 1, " %llu events", &ev) == 1) *events = ev;
        }
        char word[64] = "";
        if (strncmp(line, "check ", 6) == 0 && sscanf(line + 6, " %63s", word) == 1)
            snprintf(check, check_len, "%s", word);
    }
    fclose(f);
}

/* For a benchmark whose options are all "--name value" pairs from names
 * (NULL-terminated): --help or -h prints usage and exits 0; anything else
 * not in names, or a name without its value, is named with the usage on
 * stderr, exit 2. A long benchmark must not start on a typo. */
static inline void bench_check_args(int argc, char **argv, const char *usage,
                                    const char *const *names) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            exit(0);
        }
        int known = 0;
        for (const char *const *n = names; *n; n++) known |= strcmp(argv[i], *n) == 0;
        if (!known || i + 1 >= argc) {
            fprintf(stderr, "%s: %s '%s'\n%s", argv[0],
                    known ? "no value after" : "unknown option", argv[i], usage);
            exit(2);
        }
        i++;
    }
}

#endif

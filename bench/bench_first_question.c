/*
 * bench_first_question.c - the first question asked of a production-size
 * run, as a new user asks it (issue 49).
 *
 * Usage: bench_first_question [--nodes 2,8] [--tokens 4096] [--dir /tmp]
 *                             [--npurr build/npurr] [--export-up-to 2]
 *
 * For each node count (EP = 8 x nodes) it runs, as separate processes, what
 * the user types:
 *   npurr record -k dispatch-layered --nodes N --tokens T --routing group-limited
 *   npurr stats RUN --by cause          (the first question)
 *   npurr sql RUN "SELECT ... FROM transfers"   (builds transfers if lazy)
 *   npurr critical RUN                  (builds critical_path if lazy)
 *   npurr export RUN --perfetto OUT     (every table; only up to
 *                                        --export-up-to nodes: at EP64 it
 *                                        takes many minutes, and its target
 *                                        is at EP16)
 * and prints each one's wall time and peak memory (wait4's ru_maxrss), the
 * ratio of the first stats to the record (measured in this same run, so a
 * loaded machine moves both), the derive steps' own times (NPURR_ANA_TIMING),
 * the bytes each table of index.db takes (SQLite's dbstat), and the index's
 * bytes per event once every derived table is built. The run folder is
 * removed at the end (an EP64 run is about a GiB). Targets at EP64 x 4096:
 * first stats / record <= 1.0, the first stats' peak memory <= 2 GiB,
 * index <= 12 B/event;
 * at EP16 x 4096 the Perfetto export <= 10 s.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "bench/bench_support.h"

typedef struct step {
    double wall;
    long rss_mb;
    int status;
} step;

/* Runs args with stdout to out_log and stderr to err_log (either NULL:
 * /dev/null); its wall time, peak RSS and exit status. */
static step run_cmd(const char *const *args, const char *out_log, const char *err_log) {
    step s = {0, 0, -1};
    extern char **environ;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, out_log ? out_log : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, err_log ? err_log : "/dev/null",
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pid_t pid;
    double t0 = now_s();
    int rc = posix_spawnp(&pid, args[0], &fa, NULL, (char *const *)args, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        fprintf(stderr, "bench_first_question: cannot start %s: %s\n", args[0], strerror(rc));
        return s;
    }
    int status = 0;
    struct rusage ru;
    while (wait4(pid, &status, 0, &ru) < 0)
        if (errno != EINTR) return s;
    s.wall = now_s() - t0;
    s.rss_mb = ru.ru_maxrss / 1024;
    s.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return s;
}

static long long file_bytes(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

/* Prints the stderr lines a derive wrote (its steps' times, what it built). */
static void print_log(const char *path, const char *indent) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[1024];
    while (fgets(line, sizeof line, f)) printf("%s%s", indent, line);
    fclose(f);
}

/* Bytes per table of index.db (with its indexes, a packed table with its
 * chunks), largest first; the events count from meta. Returns the file's
 * size. */
static long long print_tables(const char *index, long long events) {
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(index, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        printf("    (cannot open %s)\n", index);
        sqlite3_close(db);
        return 0;
    }
    sqlite3_stmt *st = NULL;
    /* a packed table's chunks and patches (its shadow tables T_packed,
     * T_packed_patch) count as T's */
    const char *sql =
        "SELECT CASE WHEN instr(t, '_packed') THEN substr(t, 1, instr(t, '_packed') - 1)"
        " ELSE t END AS tt, SUM(b) FROM (SELECT COALESCE(m.tbl_name, d.name) AS t,"
        " d.pgsize AS b FROM dbstat d LEFT JOIN sqlite_schema m ON m.name = d.name)"
        " GROUP BY tt ORDER BY 2 DESC";
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        printf("    (no dbstat in this SQLite: %s)\n", sqlite3_errmsg(db));
    } else {
        while (sqlite3_step(st) == SQLITE_ROW) {
            long long b = sqlite3_column_int64(st, 1);
            if (b < 1 << 20) continue;
            printf("    %-16s %8.1f MiB  %5.2f B/event\n",
                   (const char *)sqlite3_column_text(st, 0), (double)b / (1 << 20),
                   events ? (double)b / (double)events : 0.0);
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return file_bytes(index);
}

static long long meta_events(const char *index) {
    sqlite3 *db = NULL;
    long long n = 0;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(index, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'events'",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

static void show(const char *what, step s) {
    printf("  %-34s %8.2f s  peak %6ld MiB%s\n", what, s.wall, s.rss_mb,
           s.status ? "  FAILED" : "");
}

static int one_size(const char *npurr, const char *dir, int nodes, const char *tokens,
                    int export_up_to) {
    char run[1024], nodes_s[16], index[1100], log[1100], err[1100], pf[1100];
    snprintf(nodes_s, sizeof nodes_s, "%d", nodes);
    snprintf(run, sizeof run, "%s/bench_first_ep%d", dir, 8 * nodes);
    snprintf(index, sizeof index, "%s/index.db", run);
    snprintf(log, sizeof log, "%s.out", run);
    snprintf(err, sizeof err, "%s.err", run);
    snprintf(pf, sizeof pf, "%s.pftrace", run);
    printf("EP%d x %s: dispatch-layered --nodes %d --routing group-limited\n", 8 * nodes, tokens,
           nodes);
    fflush(stdout);
    const char *rec[] = {npurr, "record", "-k", "dispatch-layered", "--nodes", nodes_s,
                         "--tokens", tokens, "--routing", "group-limited", "--quiet",
                         "--force", "-o", run, NULL};
    step r = run_cmd(rec, log, NULL);
    show("npurr record", r);
    if (r.status) return 1;
    long long events = meta_events(index);
    char tpath[1100];
    snprintf(tpath, sizeof tpath, "%s/trace.zst", run);
    long long trace = file_bytes(tpath);
    long long before = file_bytes(index);
    printf("  events %lld, trace %.1f MiB (%.2f B/event), index before analysis %.1f MiB "
           "(%.2f B/event)\n",
           events, (double)trace / (1 << 20), events ? (double)trace / (double)events : 0.0,
           (double)before / (1 << 20), events ? (double)before / (double)events : 0.0);

    setenv("NPURR_ANA_TIMING", "1", 1);
    const char *stats[] = {npurr, "stats", run, "--by", "cause", NULL};
    step s = run_cmd(stats, NULL, err);
    show("first npurr stats --by cause", s);
    print_log(err, "      ");
    printf("  ratio first stats / record: %.2f  [target <= 1.0 at EP64]\n",
           r.wall > 0 ? s.wall / r.wall : 0.0);
    long long after_stats = file_bytes(index);
    printf("  index after the first stats: %.1f MiB (%.2f B/event)\n",
           (double)after_stats / (1 << 20), events ? (double)after_stats / (double)events : 0.0);

    const char *sql[] = {npurr, "sql", run, "SELECT COUNT(*), SUM(bytes) FROM transfers", NULL};
    step x = run_cmd(sql, NULL, err);
    show("npurr sql (... FROM transfers)", x);
    print_log(err, "      ");
    const char *crit[] = {npurr, "critical", run, NULL};
    step c = run_cmd(crit, NULL, err);
    show("npurr critical", c);
    print_log(err, "      ");
    step e = {0, 0, 0};
    if (nodes <= export_up_to) {
        const char *exp[] = {npurr, "export", run, "--perfetto", pf, NULL};
        e = run_cmd(exp, NULL, err);
        show("npurr export --perfetto", e);
        print_log(err, "      ");   /* its steps' times: loading, ordering, writing */
        if (nodes == 2) printf("  [target: export --perfetto <= 10 s at EP16]\n");
    }
    unsetenv("NPURR_ANA_TIMING");

    printf("  index.db with every derived table built, by table:\n");
    long long all = print_tables(index, events);
    long peak = s.rss_mb;
    if (x.rss_mb > peak) peak = x.rss_mb;
    if (c.rss_mb > peak) peak = c.rss_mb;
    if (e.rss_mb > peak) peak = e.rss_mb;
    printf("  index.db: %.1f MiB = %.2f B/event  [target <= 12 at EP64]\n",
           (double)all / (1 << 20), events ? (double)all / (double)events : 0.0);
    printf("  peak memory: first stats %ld MiB  [target <= 2048 MiB at EP64]; any analysis"
           " command %ld MiB (the critical path walk holds every event), record %ld MiB\n\n",
           s.rss_mb, peak, r.rss_mb);
    fflush(stdout);
    char cmd[4600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s' '%s'", run, log, err, pf);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", run);
    return s.status || x.status || c.status || e.status;
}

int main(int argc, char **argv) {
    static const char usage[] =
        "usage: bench_first_question [--nodes 2,8] [--tokens 4096] [--dir /tmp]"
        " [--npurr build/npurr] [--export-up-to 2]\n"
        "Times record, the first `stats --by cause`, the tables built on first use, and\n"
        "the Perfetto export of dispatch-layered runs; prints peak memory and index bytes\n"
        "per table and per event. An EP64 run takes minutes and several GiB. The export\n"
        "runs for node counts up to --export-up-to only.\n";
    static const char *const names[] = {"--nodes", "--tokens", "--dir", "--npurr", "--export-up-to",
                                        NULL};
    bench_check_args(argc, argv, usage, names);
    const char *nodes = arg_value(argc, argv, "--nodes", "2,8");
    const char *tokens = arg_value(argc, argv, "--tokens", "4096");
    const char *dir = arg_value(argc, argv, "--dir", "/tmp");
    const char *npurr = arg_value(argc, argv, "--npurr", "build/npurr");
    int export_up_to = atoi(arg_value(argc, argv, "--export-up-to", "2"));
    if (access(npurr, X_OK) != 0) {
        fprintf(stderr, "bench_first_question: %s is not an executable (--npurr)\n", npurr);
        return 2;
    }
    int rc = 0;
    for (const char *p = nodes; *p;) {
        char *end = NULL;
        long n = strtol(p, &end, 10);
        if (end == p || n <= 0 || n > 64) {
            fprintf(stderr, "bench_first_question: bad --nodes '%s'\n", nodes);
            return 2;
        }
        rc |= one_size(npurr, dir, (int)n, tokens, export_up_to);
        p = *end == ',' ? end + 1 : end;
    }
    return rc;
}

/*
 * cmd_critical.c - `npurr critical RUN [--by ...] [--top N] [--csv]`: what
 * bounded a recorded run's end time (analysis/present/ana_crit_table.c does the work;
 * the critical_path table is derived on first use like the others).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"

static void critical_usage(FILE *out) {
    fputs("usage: npurr critical RUN [--by resource|class|role|rank|site] [--top N] [--csv]\n"
          "\n"
          "Prints the critical path of a recorded run: from the event that ended it (the\n"
          "last kernel end; for a deadlock or watchdog stop the wait that blocked last)\n"
          "back through what gated each step (a wait to the write that released it, a\n"
          "transfer to its issue and the queue or link it waited for, a core's step to\n"
          "its previous one) to time 0. Every picosecond of the run's end time belongs to\n"
          "exactly one resource, so the shares add up to 100%. Stall time summed over\n"
          "cores (npurr stats) says who waited; this says what bounded the run.\n"
          "\n"
          "Classes: hbm, mte (a core's MTE queue and GM latency), hccs (a link's\n"
          "bandwidth), hccs_latency, nic (RoCE tx/rx), rdma_latency, scalar, vector,\n"
          "cube (a named core's work), aicpu (BatchWrite posting), sync (flags,\n"
          "barriers, cross-core flags, the hop from a write to its waiter), jitter,\n"
          "launch, blocked (a wait that never ended), idle. `npurr whatif RUN` re-runs\n"
          "the run with the top classes twice as fast.\n"
          "\n"
          "  --by resource  class and instance: \"HCCS r0->r3\", \"scalar r3 AIV5\" (default)\n"
          "  --by class     per class\n"
          "  --by role      the role of the core a segment is on; (class) for links,\n"
          "                 HBM and NICs\n"
          "  --by rank      per rank (a link's source rank)\n"
          "  --by site      the call site of the event each segment explains\n"
          "  --top N        only the N largest groups\n"
          "  --csv          CSV: by, group, class, segments, total_ps, share (a fraction)\n"
          "  -h, --help     this text\n"
          "\n"
          "The segments are in the critical_path table (npurr sql RUN).\n"
          "Exit status: 0 ok, 1 the run cannot be read or is damaged (a truncated\n"
          "trace: printed with a warning), 2 usage.\n",
          out);
}

typedef struct critical_args {
    const char *run;
    ana_crit_by by;
    long top;
    int csv;
} critical_args;

static int set_by(void *ctx, const char *v) {
    return cli_opt_ok("critical", v && !ana_crit_by_parse(v, &((critical_args *)ctx)->by),
                      "--by needs one of resource, class, role, rank, site", v);
}

static int set_top(void *ctx, const char *v) {
    return cli_opt_positive("critical", "--top", v, &((critical_args *)ctx)->top);
}

int cli_crit_table(const char *cmd, const char *run, ana_crit_by by, size_t top,
                   ana_crit_table *t, ana_source *src) {
    char err[1024];
    sqlite3 *db = NULL;
    if (cli_open_run(cmd, run, ANA_PART_WAITS | ANA_PART_CRITICAL, &db, src)) return EXIT_ERROR;
    int rc = ana_crit_table_get(db, by, top, t, err, sizeof err);
    sqlite3_close(db);
    if (rc) {
        fprintf(stderr, "npurr %s: %s: %s\n", cmd, run, err);
        return EXIT_ERROR;
    }
    return 0;
}

int cmd_critical(int argc, char **argv) {
    critical_args x = {.by = ANA_CRIT_BY_RESOURCE};
    const cli_opt opts[] = {{"--by", .set = set_by}, {"--top", .set = set_top},
                            {"--csv", .flag = &x.csv}};
    int parsed = cli_parse_run("critical", critical_usage, opts, 3, &x, &x.run, argc, argv);
    if (parsed) return parsed == CLI_HELP ? EXIT_DONE : parsed;
    ana_source src;
    ana_crit_table t;
    if (cli_crit_table("critical", x.run, x.by, (size_t)x.top, &t, &src)) return EXIT_ERROR;
    if (x.csv) ana_crit_table_print_csv(&t, 1, stdout);
    else ana_crit_table_print(&t, stdout);
    ana_crit_table_free(&t);
    if (src.partial) {
        fflush(stdout);
        fprintf(stderr, "npurr critical: %s\n", src.partial_note);
        return EXIT_ERROR;
    }
    return EXIT_DONE;
}

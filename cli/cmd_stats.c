/*
 * cmd_stats.c - `npurr stats RUN [--by ...] [--top N]`: the stall table of a
 * recorded run (analysis/present/ana_stats.c does the work).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"
#include "stats_races.h"

static void stats_usage(FILE *out) {
    fputs("usage: npurr stats RUN [--by role|site|rank|kind|object|cause] [--top N] [--csv]\n"
          "       npurr stats RUN --races [--top N]\n"
          "\n"
          "Prints the stalls (waits) of a recorded run as a table: group, cores the\n"
          "group's waits come from, count, total, mean and max duration in virtual time,\n"
          "and share = total / (cores x the run's virtual time, meta end_time_ps): the\n"
          "fraction of their time those cores spent waiting, at most 100%.\n"
          "Largest total first. When the run ended in a deadlock or a\n"
          "watchdog stop, a first table shows the waits that never ended: what the hang\n"
          "waits on.\n"
          "\n"
          "  --by role     the kernel's roles (SetRole), or \"r3 AIV5\" for unnamed cores\n"
          "                (default)\n"
          "  --by site     the waiting call, as file:line function\n"
          "  --by rank     per rank\n"
          "  --by kind     flag, pipe, xcore, gm, ring_space, ring_data, barrier\n"
          "  --by object   the awaited word (ring head/tail, flag, ...)\n"
          "  --by cause    producer_late, transfer_slow, flow_control, credit_starvation,\n"
          "                barrier (rules: docs/sql.md)\n"
          "  --top N       only the N largest groups\n"
          "  --csv         CSV: table (blocked|all), by, group, cores, count, total_ps,\n"
          "                mean_ps, max_ps, share (a fraction); blocked rows first\n"
          "  --races       the races and sync errors found by `record --check races`\n"
          "                (its races table), both sides of each with their seqs\n"
          "  -h, --help    this text\n"
          "\n"
          "Exit status: 0 ok, 1 the run cannot be read, is damaged, or its trace is\n"
          "truncated (the table is printed with a warning), 2 usage.\n",
          out);
}

typedef struct stats_args {
    const char *run;
    ana_group_by by;
    size_t top;
    int csv, races;
} stats_args;

static int set_by(void *ctx, const char *v) {
    return cli_opt_ok("stats", v && !ana_group_by_parse(v, &((stats_args *)ctx)->by),
                      "--by needs one of role, site, rank, kind, object, cause", v);
}

static int set_top(void *ctx, const char *v) {
    return cli_opt_top("stats", v, &((stats_args *)ctx)->top);
}

/* -1: --help printed; 0: parsed; 2: a usage error, printed. */
static int parse_stats(int argc, char **argv, stats_args *x) {
    *x = (stats_args){.by = ANA_BY_ROLE};
    const cli_opt opts[] = {{"--by", .set = set_by}, {"--top", .set = set_top},
                            {"--csv", .flag = &x->csv}, {"--races", .flag = &x->races}};
    return cli_parse_run("stats", stats_usage, opts, 4, x, &x->run, argc, argv);
}

int cmd_stats(int argc, char **argv) {
    stats_args x;
    int prc = parse_stats(argc, argv, &x);
    if (prc) return prc < 0 ? 0 : prc;
    const char *run = x.run;
    ana_group_by by = x.by;
    size_t top = x.top;
    int csv = x.csv, races = x.races;
    if (races) return stats_races(run, top);
    char err[1024];
    sqlite3 *db = NULL;
    ana_source src;
    if (cli_open_run("stats", run, ANA_PART_WAITS, &db, &src)) return 1;
    /* On a hung run the first question is what the hang waits on: those
     * waits come first, then the whole run. */
    ana_stall_table blocked, t;
    int rc = ana_blocked_table_get(db, by, top, &blocked, err, sizeof err);
    if (!rc) rc = ana_stall_table_get(db, by, top, &t, err, sizeof err);
    sqlite3_close(db);
    if (rc) {
        fprintf(stderr, "npurr stats: %s: %s\n", run, err);
        return 1;
    }
    if (csv) {
        ana_stall_table_print_csv(&blocked, 1, stdout);
        ana_stall_table_print_csv(&t, 0, stdout);
        ana_stall_table_free(&blocked);
        ana_stall_table_free(&t);
        return 0;
    }
    if (blocked.waits) {
        ana_stall_table_print(&blocked, stdout);
        printf("\n");
    }
    ana_stall_table_free(&blocked);
    ana_stall_table_print(&t, stdout);
    ana_stall_table_free(&t);
    if (src.partial) {
        fflush(stdout);
        fprintf(stderr, "npurr stats: %s\n", src.partial_note);
        return 1;
    }
    return 0;
}

/*
 * main.c - the `npurr` executable: one table of subcommands, each a thin
 * layer over a library (engine, recorder, replayer, analysis).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"record", cmd_record, "run a kernel on the emulated cluster and record its trace"},
    {"layout", cmd_layout, "print every buffer's size per rank for a kernel's shape"},
    {"info", cmd_info, "summarize a recorded run: events, sizes, outcome"},
    {"reindex", cmd_reindex, "rebuild RUN/index.db from RUN/trace.zst"},
    {"stats", cmd_stats, "stall statistics of a recorded run"},
    {"sql", cmd_sql, "run SQL over a recorded run's index and events"},
    {"export", cmd_export, "write a recorded run as a Chrome/Perfetto timeline"},
    {"report", cmd_report, "write a recorded run as one HTML page of plots"},
    {"replay", cmd_replay, "re-execute a recorded run and compare every event"},
    {"diff", cmd_diff, "compare two runs of one kernel: time, stalls, link bandwidth"},
    {"hw", cmd_hw, "print every timing parameter: value, unit, what it models, source"},
    {"explore", cmd_explore, "run many schedules of one configuration until one fails"},
    {"critical", cmd_critical, "the critical path of a recorded run: what bounded its end time"},
    {"whatif", cmd_whatif, "re-run a recorded run with each top critical resource 2x as fast"},
    {"sweep", cmd_sweep, "run a kernel over a grid of options and hw keys: CSV and plots"},
    {"calibrate", cmd_calibrate, "fit the timing model to measured kernel times, write a --hw file"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out) {
    fprintf(out,
            "npurr %s - record, replay and analyse MoE communication kernels on an\n"
            "emulated Ascend 910B cluster.\n\n"
            "usage: npurr COMMAND [options]    (npurr COMMAND --help for its options)\n\n"
            "commands:\n", ENGINE_VERSION);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nexit codes: 0 done, 1 error, 2 usage, 3 deadlock, 4 data check failed,\n"
                 "5 replay diverged, 6 races or sync errors (--check races)\n");
}

/* Every command's stdout ends here: a table piped into a full disk or
 * /dev/full must not end in exit 0 with a cut file. stdio reports a failed
 * write only at the flush that makes it, so the one check is at the end:
 * the command's own status stands unless it claimed success. */
static int finish_stdout(const char *name, int rc) {
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int why = errno;
    if (fclose(stdout) != 0 && !bad) bad = 1, why = errno;
    if (!bad) return rc;
    fprintf(stderr, "npurr %s: standard output: write failed: %s\n", name,
            why ? strerror(why) : "I/O error");
    return rc == EXIT_DONE ? EXIT_ERROR : rc;
}

static int run(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0) {
        if (strcmp(name, "help") == 0 && argc > 2) {
            for (size_t i = 0; i < N_COMMANDS; i++)
                if (strcmp(commands[i].name, argv[2]) == 0) {
                    /* `npurr help CMD` is `npurr CMD --help` */
                    char *line[] = {argv[0], argv[2], "--help", NULL};
                    return commands[i].run(3, line);
                }
        }
        usage(stdout);
        return EXIT_DONE;
    }
    if (strcmp(name, "--version") == 0) {
        printf("npurr %s\n", ENGINE_VERSION);
        return EXIT_DONE;
    }
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0) {
            /* -h or --help anywhere is a request for help, even where an
             * option expects a value (`hw --compare --help` once read a
             * file named --help, `export RUN --perfetto --help` wrote one).
             * -k and --plugin stay: they choose which kernel's options to
             * list. */
            for (int j = 2; j < argc; j++)
                if (strcmp(argv[j], "--help") == 0 || strcmp(argv[j], "-h") == 0) {
                    char **line = calloc((size_t)argc + 2, sizeof *line);
                    if (!line) return EXIT_ERROR;
                    int n = 0;
                    line[n++] = argv[0];
                    line[n++] = argv[1];
                    for (int k = 2; k + 1 < argc; k++)
                        if ((!strcmp(argv[k], "-k") || !strcmp(argv[k], "--plugin")) &&
                            strcmp(argv[k + 1], "--help") && strcmp(argv[k + 1], "-h")) {
                            line[n++] = argv[k];
                            line[n++] = argv[++k];
                        }
                    line[n++] = "--help";
                    int rc = commands[i].run(n, line);
                    free(line);
                    return rc;
                }
            return commands[i].run(argc, argv);
        }
    fprintf(stderr, "npurr: '%s' is not a command\n\n", name);
    usage(stderr);
    return EXIT_USAGE;
}

int main(int argc, char **argv) {
    /* No count of SQLite's memory (npurr never asks for it): counting takes
     * one process-wide mutex per allocation, which the export's two reading
     * threads fought over (a text the packed tables hand out is copied). */
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    return finish_stdout(argc > 1 ? argv[1] : "", run(argc, argv));
}

/*
 * cmd_info.c - `npurr info RUN`: what a recorded run holds.
 *
 * A thin layer over rec_info (recorder/recorder.h): argument checking,
 * --help, and mapping the recorder's status to the exit codes of DESIGN.md.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "recorder/recorder.h"

static void info_usage(FILE *out) {
    fputs("usage: npurr info RUN\n"
          "\n"
          "Prints a summary of the recorded run in the folder RUN: kernel and the\n"
          "record command line, cluster configuration, outcome (and its message),\n"
          "data check status, duration in virtual time, event counts in total and\n"
          "per kind, waits and transfers, the sizes of trace.zst and index.db,\n"
          "compressed bytes per event and the compression ratio of the chunk\n"
          "columns, then every timing parameter the run used, each marked\n"
          "`default` or `from --hw` (`npurr hw` says what each one models).\n"
          "\n"
          "Everything comes from RUN/index.db, so it is instant on any trace size.\n"
          "\n"
          "Exit status: 0 ok; 1 RUN is missing or not an npurr run, index.db is\n"
          "missing or stale (run `npurr reindex RUN`), or the trace is truncated (the\n"
          "message says how far it is complete); 2 usage error.\n",
          out);
}

int cmd_info(int argc, char **argv) {
    const char *run = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            info_usage(stdout);
            return EXIT_DONE;
        }
        if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "npurr info: unknown option %s\n", argv[i]);
            info_usage(stderr);
            return EXIT_USAGE;
        }
        if (run) {
            fprintf(stderr, "npurr info: one RUN expected, got %s and %s\n", run, argv[i]);
            return EXIT_USAGE;
        }
        run = argv[i];
    }
    if (!run) {
        fprintf(stderr, "npurr info: missing RUN\n");
        info_usage(stderr);
        return EXIT_USAGE;
    }
    char err[4096];
    int rc = rec_info(run, stdout, err, sizeof err);
    /* The timing values are worth seeing even when the index is stale. */
    char terr[1024];
    if (rec_info_timing(run, stdout, terr, sizeof terr) != 0 && rc == 0) {
        snprintf(err, sizeof err, "%s", terr);
        rc = 1;
    }
    if (rc != 0) {
        fflush(stdout);
        fprintf(stderr, "npurr info: %s\n", err);
        return EXIT_ERROR;
    }
    return EXIT_DONE;
}

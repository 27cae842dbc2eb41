/*
 * cmd_reindex.c - `npurr reindex RUN`: rebuild index.db from trace.zst.
 *
 * A thin layer over rec_reindex (recorder/recorder.h), followed, as after
 * `record`, by ana_derive (analysis/analysis.h) when the run did not
 * complete, so a rebuilt index equals a recorded one. A
 * truncated trace still gets an index of its complete chunks; the command
 * then says how far the trace is complete and exits 1 so scripts notice.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"
#include "recorder/recorder.h"

static void reindex_usage(FILE *out) {
    fputs("usage: npurr reindex RUN\n"
          "\n"
          "Rebuilds RUN/index.db (meta, strings, tracks, sites, objects, rings,\n"
          "chunks, waits, transfers) from RUN/trace.zst alone, e.g. after a crash\n"
          "during `npurr record` or when the index was deleted. As `record` does, it\n"
          "derives the analysis tables (wait causes, ring occupancy...) at once only\n"
          "for a run that did not complete; else the first stats, sql or export does. The\n"
          "new index replaces the old one only once it is complete.\n"
          "\n"
          "A truncated trace (the recorder was killed mid-chunk) is indexed up to\n"
          "its last complete chunk with outcome \"truncated\".\n"
          "\n"
          "Exit status: 0 ok; 1 RUN is missing or not an npurr run, the trace is\n"
          "corrupt, or it is truncated (indexed anyway; the message says how far it\n"
          "is complete); 2 usage error.\n",
          out);
}

/* Whether RUN/index.db says the run completed. */
static int run_completed(const char *run) {
    char path[4200];
    snprintf(path, sizeof path, "%s/index.db", run);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int done = 0;
    char err[1024];
    if (rec_index_open_ro(path, &db, err, sizeof err) == 0 &&
        sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'outcome'", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        done = strcmp((const char *)sqlite3_column_text(st, 0), "completed") == 0;
    sqlite3_finalize(st);
    sqlite3_close(db);
    return done;
}

int cmd_reindex(int argc, char **argv) {
    const char *run;
    int parsed = cli_one_run("reindex", reindex_usage, argc, argv, &run);
    if (parsed) return parsed == CLI_HELP ? EXIT_DONE : parsed;
    char err[4096];
    int rc = rec_reindex(run, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "npurr reindex: %s\n", err);
        return EXIT_ERROR;
    }
    /* As `record` does: the analysis tables of a completed run wait for
     * their first use; any other outcome is derived now. */
    char aerr[1024];
    if (rc > 0 || !run_completed(run)) {
        if (ana_open(run, ANA_OPEN_REDERIVE, NULL, NULL, aerr, sizeof aerr)) {
            fprintf(stderr, "npurr reindex: analysis of %s: %s\n", run, aerr);
            return EXIT_ERROR;
        }
    }
    if (rc > 0) {
        fprintf(stderr, "npurr reindex: %s/index.db rebuilt from a truncated trace: %s\n", run,
                err);
        return EXIT_ERROR;
    }
    printf("%s/index.db rebuilt from %s/trace.zst\n", run, run);
    return EXIT_DONE;
}

/*
 * stats_races.c - `npurr stats RUN --races`: the happens-before checker's
 * reports, from the `races` table that `record --check races` writes into
 * RUN/index.db (checker/hb_report.c), one block per distinct pair of sites
 * with both sides and their seqs for `npurr replay RUN --break-at SEQ`.
 */
#include "stats_races.h"

#include <sqlite3.h>
#include <stdio.h>

#include "recorder/recorder.h"

static void side(sqlite3_stmt *st, int col, const char *label) {
    if (sqlite3_column_type(st, col) == SQLITE_NULL) return;
    printf("  %-7s rank %d %s %-5s %-6s %s  seq %lld\n", label, sqlite3_column_int(st, col),
           (const char *)sqlite3_column_text(st, col + 1),
           (const char *)sqlite3_column_text(st, col + 2),
           (const char *)sqlite3_column_text(st, col + 3),
           (const char *)sqlite3_column_text(st, col + 4),
           (long long)sqlite3_column_int64(st, col + 5));
}

int stats_races(const char *run, size_t top) {
    char path[4096];
    snprintf(path, sizeof path, "%s/index.db", run);
    sqlite3 *db = NULL;
    char err[1024];
    if (rec_index_open_ro(path, &db, err, sizeof err) != 0) {
        fprintf(stderr, "npurr stats: %s\n", err);
        return 1;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db,
                           "SELECT id, kind, occurrences, object, message, a_rank, a_core, a_pipe,"
                           " a_access, a_site, a_seq, b_rank, b_core, b_pipe, b_access, b_site,"
                           " b_seq, (SELECT count(*) FROM races WHERE kind = 'race'),"
                           " (SELECT count(*) FROM races WHERE kind <> 'race') FROM races ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "npurr stats: %s has no races table: record the run with --check races\n",
                run);
        sqlite3_close(db);
        return 1;
    }
    size_t shown = 0, total = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (!total)
            printf("%lld races, %lld sync errors (distinct pairs of sites)\n",
                   (long long)sqlite3_column_int64(st, 17), (long long)sqlite3_column_int64(st, 18));
        total++;
        if (top && shown >= top) continue;
        shown++;
        printf("\n%s %lld: %s", (const char *)sqlite3_column_text(st, 1),
               (long long)sqlite3_column_int64(st, 0), (const char *)sqlite3_column_text(st, 4));
        long long n = sqlite3_column_int64(st, 2);
        if (n > 1) printf(" (%lld times)", n);
        printf("\n");
        const unsigned char *obj = sqlite3_column_text(st, 3);
        if (obj && obj[0]) printf("  object  %s\n", (const char *)obj);
        int two = sqlite3_column_type(st, 11) != SQLITE_NULL;
        side(st, 5, two ? "first" : "at");
        side(st, 11, "second");
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "npurr stats: reading the races table of %s failed\n", run);
        return 1;
    }
    if (!total) printf("0 races, 0 sync errors\n");
    else if (shown < total) printf("\n(%zu more: --top N, or SELECT * FROM races)\n", total - shown);
    return 0;
}

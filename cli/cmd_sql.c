/*
 * cmd_sql.c - `npurr sql RUN "SELECT ..." [--csv]`: SQL over a run's index
 * with the `events` virtual table available (analysis/present/ana_sql.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "cli.h"

static void sql_usage(FILE *out) {
    fputs("usage: npurr sql RUN \"SELECT ...\" [--csv]\n"
          "       npurr sql RUN - [--csv]          (the query from standard input)\n"
          "       npurr sql RUN [--csv]            (an interactive prompt)\n"
          "\n"
          "Runs SQL on RUN/index.db with the `events` virtual table registered (raw\n"
          "events decoded from RUN/trace.zst; constraints on seq, time, rank, core and\n"
          "kind decode only the chunks they touch). Prints each result set as an aligned\n"
          "table, or as CSV with --csv. Tables, views and example queries: docs/sql.md;\n"
          "`sqlite3 RUN/index.db` with `.load build/libnpurr_sqlite` sees the same.\n"
          "\n"
          "With no query, a prompt in the sqlite3 shell's manner: statements run when\n"
          "they end with ';'; .tables, .schema [PATTERN], .mode table|csv, .help, .quit.\n"
          "It reads standard input whether or not it is a terminal (prompts only on a\n"
          "terminal).\n"
          "Read-only: a statement that would write (INSERT, UPDATE, DELETE, CREATE, DROP,\n"
          "VACUUM, PRAGMA x = y, ATTACH...) is refused. A run you cannot write gets its\n"
          "analysis tables derived into your own cache (docs/sql.md).\n"
          "\n"
          "  --csv        CSV (RFC 4180) instead of an aligned table; streams large results\n"
          "  -h, --help   this text\n"
          "\n"
          "Exit status: 0 ok, 1 SQL error (printed with the query), a refused write, an\n"
          "unreadable, damaged or truncated run, 2 usage. At the prompt, errors are printed\n"
          "and the session goes on; with piped input the status is 1 if any statement\n"
          "failed.\n",
          out);
}

static char *read_stdin(void) {
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    if (!buf) return NULL;
    size_t got;
    while ((got = fread(buf + n, 1, cap - n - 1, stdin)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *p = realloc(buf, cap * 2);
            if (!p) {
                free(buf);
                return NULL;
            }
            buf = p;
            cap *= 2;
        }
    }
    buf[n] = 0;
    return buf;
}

int cmd_sql(int argc, char **argv) {
    const char *run = NULL, *query = NULL;
    int csv = 0;
    for (int i = CLI_FIRST_ARG; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            sql_usage(stdout);
            return 0;
        } else if (!strcmp(a, "--csv")) {
            csv = 1;
        } else if (a[0] == '-' && a[1] == '-') {
            fprintf(stderr, "npurr sql: unknown option '%s'\n", a);
            sql_usage(stderr);
            return 2;
        } else if (!run) {
            run = a;
        } else if (!query) {
            query = a;
        } else {
            fprintf(stderr, "npurr sql: unexpected argument '%s' (quote the query as one "
                    "argument)\n", a);
            return 2;
        }
    }
    if (!run) {
        sql_usage(stderr);
        return 2;
    }
    char *owned = NULL;
    if (query && !strcmp(query, "-")) {
        owned = read_stdin();
        if (!owned) {
            fprintf(stderr, "npurr sql: cannot read the query from standard input\n");
            return 1;
        }
        query = owned;
    }
    char err[4096];
    sqlite3 *db = NULL;
    ana_source src;
    /* A query derives the parts it reads; the shell, whose queries come
     * later, every part. */
    int parts = query ? ana_parts_of_sql(query) : 0;
    if (cli_open_run("sql", run, ANA_OPEN_QUERY_ONLY | parts, &db, &src)) {
        free(owned);
        return 1;
    }
    if (!query) {
        int status = sql_shell(db, run, csv, stdin, stdout);
        sqlite3_close(db);
        return status;
    }
    int rc = ana_sql_print(db, query, csv, stdout, err, sizeof err);
    sqlite3_close(db);
    free(owned);
    if (rc) {
        fflush(stdout);
        fprintf(stderr, "npurr sql: %s\n", err);
        return 1;
    }
    if (src.partial) {
        fflush(stdout);
        fprintf(stderr, "npurr sql: %s\n", src.partial_note);
        return 1;
    }
    return 0;
}

/*
 * sql_shell.c - `npurr sql RUN` with no query: an interactive prompt over the
 * run, with the sqlite3 shell's conventions, so nothing new is to be learnt.
 *
 * A statement runs once it is complete (ends with ';', sqlite3_complete);
 * lines starting with '.' at the start of a statement are commands:
 *   .tables [PATTERN]   tables and views, `events` included
 *   .schema [PATTERN]   their CREATE statements
 *   .mode table|csv     output as aligned tables (default) or CSV
 *   .help               this list
 *   .quit, .exit        leave (so does end of input)
 * Prompts ("npurr> ", "   ...> ") go to stdout only when stdin is a
 * terminal, so piped input (tests, scripts) gives clean output. As with
 * sqlite3, errors are printed and the session goes on; with piped input
 * the exit status is 1 if any statement failed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "cli.h"

static const char *const shell_help =
    ".tables [PATTERN]   list tables and views (LIKE pattern)\n"
    ".schema [PATTERN]   show their CREATE statements\n"
    ".mode table|csv     aligned tables (default) or CSV\n"
    ".help               this text\n"
    ".quit, .exit        leave (end of input too)\n"
    "Anything else is SQL; a statement runs when it ends with ';'.\n";

/* Names of tables and views, main and temp (events lives in temp). */
static const char *const list_sql =
    "SELECT name, sql FROM (SELECT name, sql, type FROM sqlite_schema UNION ALL"
    " SELECT name, sql, type FROM sqlite_temp_schema)"
    " WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' AND name LIKE ?1"
    " ORDER BY name";

static int dot_list(sqlite3 *db, const char *pattern, int schema, FILE *out) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, list_sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "Error: %s\n", sqlite3_errmsg(db));
        return -1;
    }
    sqlite3_bind_text(st, 1, pattern && *pattern ? pattern : "%", -1, SQLITE_TRANSIENT);
    size_t col = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *sql = (const char *)sqlite3_column_text(st, 1);
        if (schema) {
            fprintf(out, "%s;\n", sql ? sql : name);
            continue;
        }
        size_t w = strlen(name) + 2;
        if (col && col + w > 78) {
            fputc('\n', out);
            col = 0;
        }
        fprintf(out, "%-*s", (int)(w < 20 ? 20 : w), name);
        col += w < 20 ? 20 : w;
    }
    if (!schema && col) fputc('\n', out);
    sqlite3_finalize(st);
    return 0;
}

/* Returns 1 to leave, -1 on a bad command, 0 otherwise. */
static int dot_command(sqlite3 *db, char *line, int *csv, FILE *out) {
    char *cmd = strtok(line, " \t\r\n");
    char *arg = strtok(NULL, " \t\r\n");
    if (!cmd) return 0;
    if (!strcmp(cmd, ".quit") || !strcmp(cmd, ".exit") || !strcmp(cmd, ".q")) return 1;
    if (!strcmp(cmd, ".help")) {
        fputs(shell_help, out);
        return 0;
    }
    if (!strcmp(cmd, ".tables")) return dot_list(db, arg, 0, out);
    if (!strcmp(cmd, ".schema")) return dot_list(db, arg, 1, out);
    if (!strcmp(cmd, ".mode")) {
        if (arg && !strcmp(arg, "csv")) *csv = 1;
        else if (arg && (!strcmp(arg, "table") || !strcmp(arg, "column"))) *csv = 0;
        else {
            fprintf(stderr, "Error: .mode takes table or csv (got '%s')\n", arg ? arg : "");
            return -1;
        }
        return 0;
    }
    fprintf(stderr, "Error: unknown command '%s' (.help lists them)\n", cmd);
    return -1;
}

int sql_shell(sqlite3 *db, const char *run, int csv, FILE *in, FILE *out) {
    int tty = isatty(fileno(in));
    if (tty)
        fprintf(out, "npurr sql on %s: SQL ending with ';', or .help, .tables, .schema, .quit\n",
                run);
    char *stmt = NULL, *line = NULL;
    size_t slen = 0, lcap = 0;
    int failed = 0;
    for (;;) {
        if (tty) {
            fputs(slen ? "   ...> " : "npurr> ", out);
            fflush(out);
        }
        ssize_t n = getline(&line, &lcap, in);
        if (n < 0) break;
        if (slen == 0) {
            const char *p = line;
            while (*p == ' ' || *p == '\t') p++;
            if (*p == '.') {
                int rc = dot_command(db, (char *)p, &csv, out);
                if (rc == 1) break;
                failed |= rc < 0;
                continue;
            }
            if (*p == '\n' || *p == 0) continue;
        }
        char *grown = realloc(stmt, slen + (size_t)n + 1);
        if (!grown) {
            fprintf(stderr, "npurr sql: out of memory\n");
            failed = 1;
            break;
        }
        stmt = grown;
        memcpy(stmt + slen, line, (size_t)n + 1);
        slen += (size_t)n;
        if (!sqlite3_complete(stmt)) continue;
        char err[4096];
        if (ana_sql_print(db, stmt, csv, out, err, sizeof err)) {
            fflush(out);
            fprintf(stderr, "Error: %s\n", err);
            failed = 1;
        }
        fflush(out);
        slen = 0;
        stmt[0] = 0;
    }
    if (slen) {
        fprintf(stderr, "Error: incomplete SQL at end of input (missing ';'): %.200s\n", stmt);
        failed = 1;
    }
    if (tty) fputc('\n', out);
    free(stmt);
    free(line);
    return failed && !tty ? 1 : 0;
}

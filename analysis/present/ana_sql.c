/*
 * ana_sql.c - `npurr sql RUN "SELECT ..."`: any SQL over the index, with the
 * `events` virtual table registered on the connection.
 *
 * Read-only: a statement that would write (INSERT, UPDATE, DELETE, CREATE,
 * DROP, VACUUM, PRAGMA assignments...) is refused before it runs.
 * Every statement of the text runs in turn; each one that returns columns
 * prints its result set (aligned, or CSV which streams row by row). A
 * SQLite error stops at the failing statement and comes back with SQLite's
 * message and the query, for the CLI to print and exit 1.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analysis/present/present.h"
#include "analysis/derive/derive.h"
#include "analysis/present/ana_print.h"

/* Text of a cell as sqlite3 would print it; reals keep 15 significant
 * digits so a share or a mean reads back as the value stored. */
static const char *cell_text(sqlite3_stmt *st, int c, char *buf, size_t len, unsigned char *num) {
    *num = 0;
    switch (sqlite3_column_type(st, c)) {
    case SQLITE_NULL:
        *num = 1;
        return NULL;
    case SQLITE_INTEGER:
        *num = 1;
        snprintf(buf, len, "%lld", (long long)sqlite3_column_int64(st, c));
        return buf;
    case SQLITE_FLOAT:
        *num = 1;
        snprintf(buf, len, "%.15g", sqlite3_column_double(st, c));
        return buf;
    case SQLITE_BLOB:
        snprintf(buf, len, "<blob %d bytes>", sqlite3_column_bytes(st, c));
        return buf;
    default: {
        const char *t = (const char *)sqlite3_column_text(st, c);
        return t ? t : "";
    }
    }
}

static int print_csv(sqlite3_stmt *st, FILE *out) {
    int cols = sqlite3_column_count(st);
    for (int c = 0; c < cols; c++) {
        if (c) fputc(',', out);
        ana_csv_field(out, sqlite3_column_name(st, c));
    }
    fputc('\n', out);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int c = 0; c < cols; c++) {
            char buf[64];
            unsigned char num;
            if (c) fputc(',', out);
            ana_csv_field(out, cell_text(st, c, buf, sizeof buf, &num));
        }
        fputc('\n', out);
    }
    return rc;
}

static int print_aligned(sqlite3_stmt *st, FILE *out, int *oom) {
    int cols = sqlite3_column_count(st);
    ana_grid g;
    if (ana_grid_init(&g, (size_t)cols)) {
        *oom = 1;
        return SQLITE_NOMEM;
    }
    for (int c = 0; c < cols; c++)
        if (ana_grid_set_head(&g, (size_t)c, sqlite3_column_name(st, c))) *oom = 1;
    const char **cells = calloc((size_t)cols + 1, sizeof *cells);
    unsigned char *num = calloc((size_t)cols + 1, 1);
    char (*bufs)[64] = calloc((size_t)cols + 1, sizeof *bufs);
    int rc = SQLITE_NOMEM;
    if (cells && num && bufs && !*oom) {
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            for (int c = 0; c < cols; c++) cells[c] = cell_text(st, c, bufs[c], 64, &num[c]);
            if (ana_grid_add(&g, cells, num)) {
                *oom = 1;
                rc = SQLITE_NOMEM;
                break;
            }
        }
        if (rc == SQLITE_DONE) ana_grid_print(&g, out);
    } else {
        *oom = 1;
    }
    free(cells);
    free(num);
    free(bufs);
    ana_grid_free(&g);
    return rc;
}

/* Whether sql's first statement begins with a keyword that writes. A
 * write SQLite refuses at prepare time (DELETE FROM waits: waits is a view)
 * is still reported as what it is, a write refused. */
static int begins_with_write(const char *sql) {
    for (;;) {
        while (isspace((unsigned char)*sql)) sql++;
        if (sql[0] == '-' && sql[1] == '-') {
            while (*sql && *sql != '\n') sql++;
        } else if (sql[0] == '/' && sql[1] == '*') {
            const char *end = strstr(sql + 2, "*/");
            if (!end) return 0;
            sql = end + 2;
        } else {
            break;
        }
    }
    static const char *const words[] = {"INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE",
                                        "DROP", "ALTER", "VACUUM", "REINDEX"};
    size_t n = 0;
    while (isalpha((unsigned char)sql[n])) n++;
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == n && !strncasecmp(sql, words[i], n)) return 1;
    return 0;
}

int ana_sql_print(sqlite3 *db, const char *query, int csv, FILE *out, char *err,
                  size_t errlen) {
    const char *tail = query;
    int sets = 0;
    while (tail && *tail) {
        sqlite3_stmt *st = NULL;
        const char *next = NULL;
        if (sqlite3_prepare_v2(db, tail, -1, &st, &next) != SQLITE_OK) {
            if (sqlite3_errcode(db) != SQLITE_AUTH && begins_with_write(tail))
                ana_err(err, errlen, "read-only: this statement would write, so it is refused"
                        " (%s)\n  in query: %s", sqlite3_errmsg(db), query);
            else
                ana_err(err, errlen, "%s\n  in query: %s",
                        sqlite3_errcode(db) == SQLITE_AUTH
                            ? "read-only: ATTACH, DETACH and PRAGMA assignments are refused"
                            : sqlite3_errmsg(db),
                        query);
            return -1;
        }
        tail = next;
        if (!st) continue;   /* whitespace or a comment */
        if (!sqlite3_stmt_readonly(st)) {
            /* The run folder is the source of truth: a query may read it,
             * never change it (query_only and the authorizer refuse the rest). */
            ana_err(err, errlen, "read-only: this statement would write, so it is refused: %s",
                    sqlite3_sql(st));
            sqlite3_finalize(st);
            return -1;
        }
        int rc, oom = 0;
        if (sqlite3_column_count(st) == 0) {
            while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
        } else {
            if (sets++) fputc('\n', out);
            rc = csv ? print_csv(st, out) : print_aligned(st, out, &oom);
        }
        if (rc != SQLITE_DONE) {
            ana_err(err, errlen, "%s\n  in query: %s",
                    oom ? "out of memory buffering the result (use --csv for large results)"
                        : sqlite3_errmsg(db),
                    query);
            sqlite3_finalize(st);
            return -1;
        }
        sqlite3_finalize(st);
    }
    return 0;
}

/*
 * ana_packed_read.c - a packed table (ana_pack.h) read without SQL: its
 * chunks in key order, each decoded (the columns asked for, patches
 * applied as the npurr_packed module applies them) and handed over as
 * arrays. For readers of every row of a bulky table, where stepping the
 * virtual table costs more than the rows' own work: the export reads the
 * 5.4 M transfers of an EP16 x 4096 run this way, about twice as fast as
 * twelve xColumn calls a row.
 *
 * Columns are found by name in the table's declaration (PRAGMA
 * table_info, the same order the chunks store them in).
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/ana_pack.h"
#include "analysis/derive/derive.h"

struct ana_packed_reader {
    sqlite3 *db;
    char *table;
    sqlite3_stmt *chunks, *patches;
    int cols, key;                    /* the table's columns; the key's index */
    int pick[ANA_PACKED_READ_MAX];    /* asked column i is table column pick[i] */
    int n;
    uint32_t want;
    ana_pack_chunk ch;
};

static int fail_sql(ana_packed_reader *r, char *err, size_t errlen) {
    ana_err(err, errlen, "index.db: %s: %s", r->table, sqlite3_errmsg(r->db));
    return -1;
}

/* The key column's name: the declaration's first argument, read from
 * sqlite_master's CREATE VIRTUAL TABLE ... npurr_packed(key, ...). */
static int find_key(ana_packed_reader *r, char *key, size_t keylen, char *err, size_t errlen) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->db, "SELECT sql FROM sqlite_master WHERE name = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return fail_sql(r, err, errlen);
    sqlite3_bind_text(st, 1, r->table, -1, SQLITE_STATIC);
    const char *sql = sqlite3_step(st) == SQLITE_ROW ? (const char *)sqlite3_column_text(st, 0)
                                                     : NULL;
    const char *args = sql ? strstr(sql, "npurr_packed(") : NULL;
    *key = 0;
    if (args) {
        args += strlen("npurr_packed(");
        while (*args == ' ') args++;
        size_t n = strcspn(args, " ,)");
        if (n < keylen) memcpy(key, args, n), key[n] = 0;
    }
    sqlite3_finalize(st);
    if (!*key) {
        ana_err(err, errlen, "index.db: %s is not a packed table", r->table);
        return -1;
    }
    return 0;
}

/* The table's columns (r->cols), the index of each name asked for and of
 * the key column. */
static int find_columns(ana_packed_reader *r, const char *const *names, const char *key,
                        char *err, size_t errlen) {
    char *sql = sqlite3_mprintf("PRAGMA table_info(\"%w\")", r->table);
    sqlite3_stmt *st = NULL;
    if (!sql || sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_free(sql);
        return fail_sql(r, err, errlen);
    }
    sqlite3_free(sql);
    for (int i = 0; i < r->n; i++) r->pick[i] = -1;
    r->key = -1;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 1);
        for (int i = 0; name && i < r->n; i++)
            if (!strcmp(name, names[i])) r->pick[i] = r->cols;
        if (name && !strcmp(name, key)) r->key = r->cols;
        r->cols++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return fail_sql(r, err, errlen);
    for (int i = 0; i < r->n; i++) {
        if (r->pick[i] < 0) {
            ana_err(err, errlen, "index.db: %s has no column %s", r->table, names[i]);
            return -1;
        }
        r->want |= 1u << r->pick[i];
    }
    if (r->key < 0) {
        ana_err(err, errlen, "index.db: %s: its key %s is none of its columns", r->table, key);
        return -1;
    }
    r->want |= 1u << r->key;   /* patches find their rows by it */
    return 0;
}

int ana_packed_open(sqlite3 *db, const char *table, const char *const *cols, int ncols,
                    ana_packed_reader **out, char *err, size_t errlen) {
    *out = NULL;
    if (ncols < 1 || ncols > ANA_PACKED_READ_MAX) {
        ana_err(err, errlen, "ana_packed_open: 1 to %d columns", ANA_PACKED_READ_MAX);
        return -1;
    }
    char shadow[256];
    snprintf(shadow, sizeof shadow, "%s_packed", table);
    if (!ana_has_table(db, shadow)) return 1;
    ana_packed_reader *r = calloc(1, sizeof *r);
    if (!r || !(r->table = strdup(table))) {
        free(r);
        ana_err(err, errlen, "out of memory reading %s", table);
        return -1;
    }
    r->db = db;
    r->n = ncols;
    char *chunks = sqlite3_mprintf("SELECT first, last, data FROM \"%w\" ORDER BY chunk", shadow);
    char *patches = sqlite3_mprintf("SELECT key, col, value FROM \"%w_patch\""
                                    " WHERE key BETWEEN ?1 AND ?2", shadow);
    int bad = !chunks || !patches ||
              sqlite3_prepare_v2(db, chunks, -1, &r->chunks, NULL) != SQLITE_OK ||
              sqlite3_prepare_v2(db, patches, -1, &r->patches, NULL) != SQLITE_OK;
    sqlite3_free(chunks);
    sqlite3_free(patches);
    char key[64];
    if (bad ? fail_sql(r, err, errlen) : find_key(r, key, sizeof key, err, errlen) ||
                                             find_columns(r, cols, key, err, errlen)) {
        ana_packed_close(r);
        return -1;
    }
    *out = r;
    return 0;
}

int ana_packed_next(ana_packed_reader *r, ana_packed_view *v, char *err, size_t errlen) {
    int rc = sqlite3_step(r->chunks);
    if (rc == SQLITE_DONE) return 0;
    if (rc != SQLITE_ROW) return fail_sql(r, err, errlen);
    char why[256];
    const void *data = sqlite3_column_blob(r->chunks, 2);
    size_t len = (size_t)sqlite3_column_bytes(r->chunks, 2);
    if (ana_pack_decode(&r->ch, r->cols, r->want, data, len, why, sizeof why)) {
        ana_err(err, errlen, "index.db: %s: %s", r->table, why);
        return -1;
    }
    if (ana_pack_patch(&r->ch, r->key, r->patches, sqlite3_column_int64(r->chunks, 0),
                       sqlite3_column_int64(r->chunks, 1)) != SQLITE_OK)
        return fail_sql(r, err, errlen);
    memset(v, 0, sizeof *v);
    v->rows = r->ch.rows;
    for (int i = 0; i < r->n; i++) {
        const ana_pack_col *k = &r->ch.col[r->pick[i]];
        v->is_text[i] = k->is_text;
        v->val[i] = k->val;
        v->null[i] = k->is_text ? NULL : k->null;
        v->text[i] = (const char *const *)k->text;
        v->ntext[i] = k->is_text ? k->ntext : 0;
    }
    return 1;
}

void ana_packed_close(ana_packed_reader *r) {
    if (!r) return;
    sqlite3_finalize(r->chunks);
    sqlite3_finalize(r->patches);
    ana_pack_free(&r->ch);
    free(r->table);
    free(r);
}

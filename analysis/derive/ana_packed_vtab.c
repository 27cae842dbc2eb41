/*
 * ana_packed_vtab.c - the `npurr_packed` virtual table module: a packed
 * derived table (ana_pack.h) read under its old name, with its old
 * columns, types and row order (ascending key, as the INTEGER PRIMARY KEY
 * table it replaces was read).
 *
 *   CREATE VIRTUAL TABLE transfers USING npurr_packed(id, id INTEGER, ...)
 *
 * The first argument names the key column, the rest declare the columns.
 * The table lives in index.db's schema, like an FTS5 table: views over it
 * are plain views, and any connection that knows the module reads it
 * (ana_packed_register: npurr's own connections and the loadable
 * extension's). xCreate makes the shadow table T_packed, xDestroy drops it.
 *
 * Chunks are in key order and their key ranges do not overlap, so the
 * planner's constraints on the key (or rowid, the same value) become one
 * key range: xFilter finds its first chunk by binary search over the
 * chunk directory (read once per cursor) and the first row by binary
 * search in that chunk, and the scan stops past the range's end. ORDER BY
 * the key is the scan's own order. SQLite still tests every constraint
 * (none is omitted), so the range only has to be conservative. A cursor
 * keeps its last few decoded chunks: a join probing keys in order, or
 * nearly (one xFilter per outer row), decodes each chunk once.
 *
 * What this shares with the `events` table (recorder/rec_vtab.c) is the
 * idea (prune by a summary of each chunk, decode one chunk at a time), not
 * code: events are one fixed struct in trace.zst frames, these are
 * columns of any declared table in index.db rows.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/ana_pack.h"
#include "analysis/derive/derive.h"

static uint64_t chunks_decoded;

uint64_t ana_packed_chunks_decoded(void) {
    return __atomic_load_n(&chunks_decoded, __ATOMIC_RELAXED);
}

/* Chunks a cursor keeps decoded. A join probing by a key that is only
 * roughly in order (waits by id joining wait_labels by begin_seq: a long
 * wait began chunks before its neighbours) goes back and forth between a
 * few chunks. The export, which once joined every wait to its label and
 * waker this way, looks them up in C instead (ana_timeline_lookup.c). */
#define PK_CACHE 8

/* Texts of small dictionaries (a pipe, a kind) are kept for the table's
 * life, so xColumn hands them to SQLite without a copy per row. */
#define PK_INTERN_DICT 64      /* dictionaries up to this size are interned */
#define PK_INTERN_MAX 4096     /* texts kept at most per table */

typedef struct pk_vtab {
    sqlite3_vtab base;
    sqlite3 *db;
    char *schema, *name;     /* the shadow table is schema.name_packed */
    int cols, key;
    char **interned;         /* PK_INTERN_MAX slots, open addressing */
    size_t ninterned;
} pk_vtab;

/* A chunk's row in T_packed, less its data. */
typedef struct pk_dir {
    int64_t id, first, last;
} pk_dir;

typedef struct pk_cursor {
    sqlite3_vtab_cursor base;
    pk_dir *dir;                                /* the chunk directory */
    size_t ndir;
    sqlite3_stmt *get;                          /* one chunk's data */
    sqlite3_stmt *patches;                      /* and the patches of its key range */
    /* the last chunks decoded, least recently used first out; ch is the
     * current row's */
    ana_pack_chunk cache[PK_CACHE], *ch;
    size_t cache_di[PK_CACHE];        /* directory index, SIZE_MAX: slot empty */
    uint64_t cache_used[PK_CACHE], tick;
    size_t di, row;          /* the current row */
    int64_t hi;              /* the range's last key */
    uint32_t want;           /* the columns the query reads (and the key) */
    int eof;
} pk_cursor;

/* idxNum: the constraints used, and from bit IX_COLS on the columns the
 * query reads (sqlite3_index_info.colUsed): only those are decoded. */
enum { IX_EQ = 1, IX_LO = 2, IX_HI = 4, IX_COLS = 8 };


/* ------------------------------------------------------------ the table */

static void set_err(sqlite3_vtab *vt, const char *fmt, const char *a, const char *b) {
    sqlite3_free(vt->zErrMsg);
    vt->zErrMsg = sqlite3_mprintf(fmt, a, b);
}

static int pk_connect_create(sqlite3 *db, void *aux, int argc, const char *const *argv,
                             sqlite3_vtab **out, char **pzErr, int create) {
    (void)aux;
    if (argc < 5 || argc - 4 > ANA_PACK_MAX_COLS) {
        *pzErr = sqlite3_mprintf("npurr_packed(key, column TYPE, ...): 1 to %d columns",
                                 ANA_PACK_MAX_COLS);
        return SQLITE_ERROR;
    }
    pk_vtab *vt = sqlite3_malloc(sizeof *vt);
    if (!vt) return SQLITE_NOMEM;
    memset(vt, 0, sizeof *vt);
    vt->db = db;
    vt->cols = argc - 4;
    vt->key = -1;
    vt->schema = sqlite3_mprintf("%s", argv[1]);
    vt->name = sqlite3_mprintf("%s", argv[2]);
    /* the declaration: the columns as given; the key is the first word of
     * the column it names */
    sqlite3_str *decl = sqlite3_str_new(db);
    sqlite3_str_appendall(decl, "CREATE TABLE x(");
    const char *key = argv[3];
    while (*key == ' ') key++;
    size_t keylen = strcspn(key, " ");
    for (int i = 4; i < argc; i++) {
        const char *c = argv[i];
        while (*c == ' ') c++;
        if (keylen && !strncmp(c, key, keylen) && (c[keylen] == ' ' || !c[keylen]))
            vt->key = i - 4;
        sqlite3_str_appendf(decl, "%s%s", i > 4 ? ", " : "", c);
    }
    sqlite3_str_appendall(decl, ")");
    char *sql = sqlite3_str_finish(decl);
    int rc = SQLITE_OK;
    if (!sql || !vt->schema || !vt->name) rc = SQLITE_NOMEM;
    else if (vt->key < 0) {
        *pzErr = sqlite3_mprintf("npurr_packed: the key '%s' is none of the columns", argv[3]);
        rc = SQLITE_ERROR;
    } else if ((rc = sqlite3_declare_vtab(db, sql)) != SQLITE_OK) {
        *pzErr = sqlite3_mprintf("npurr_packed: %s", sqlite3_errmsg(db));
    } else if (create) {
        char *mk = sqlite3_mprintf(
            "DROP TABLE IF EXISTS \"%w\".\"%w_packed\";"
            "DROP TABLE IF EXISTS \"%w\".\"%w_packed_patch\";"
            "CREATE TABLE \"%w\".\"%w_packed\"(chunk INTEGER PRIMARY KEY, first INT, last INT,"
            " rows INT, data BLOB);"
            "CREATE TABLE \"%w\".\"%w_packed_patch\"(key INT, col INT, value INT,"
            " PRIMARY KEY(key, col)) WITHOUT ROWID",
            vt->schema, vt->name, vt->schema, vt->name, vt->schema, vt->name, vt->schema,
            vt->name);
        rc = mk ? sqlite3_exec(db, mk, NULL, NULL, pzErr) : SQLITE_NOMEM;
        sqlite3_free(mk);
    }
    sqlite3_free(sql);
    /* innocuous: it reads its own shadow tables only, so a view may use it
     * even with trusted_schema off */
    if (rc == SQLITE_OK) sqlite3_vtab_config(db, SQLITE_VTAB_INNOCUOUS);
    if (rc != SQLITE_OK) {
        sqlite3_free(vt->schema);
        sqlite3_free(vt->name);
        sqlite3_free(vt);
        return rc;
    }
    *out = &vt->base;
    return SQLITE_OK;
}

static int pk_create(sqlite3 *db, void *aux, int argc, const char *const *argv,
                     sqlite3_vtab **out, char **pzErr) {
    return pk_connect_create(db, aux, argc, argv, out, pzErr, 1);
}

static int pk_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **pzErr) {
    return pk_connect_create(db, aux, argc, argv, out, pzErr, 0);
}

static int pk_disconnect(sqlite3_vtab *base) {
    pk_vtab *vt = (pk_vtab *)base;
    if (vt->interned)
        for (size_t i = 0; i < PK_INTERN_MAX; i++) free(vt->interned[i]);
    free(vt->interned);
    sqlite3_free(vt->schema);
    sqlite3_free(vt->name);
    sqlite3_free(vt);
    return SQLITE_OK;
}

static int pk_destroy(sqlite3_vtab *base) {
    pk_vtab *vt = (pk_vtab *)base;
    char *sql = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\".\"%w_packed\";"
                                "DROP TABLE IF EXISTS \"%w\".\"%w_packed_patch\"",
                                vt->schema, vt->name, vt->schema, vt->name);
    int rc = sql ? sqlite3_exec(vt->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc == SQLITE_OK) pk_disconnect(base);
    return rc;
}

/* Constraints on the key (or rowid) make a range; ORDER BY key is ours. */
static int pk_best_index(sqlite3_vtab *base, sqlite3_index_info *info) {
    pk_vtab *vt = (pk_vtab *)base;
    int num = 0, arg = 0, eq = -1, lo = -1, hi = -1;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (!c->usable || (c->iColumn != vt->key && c->iColumn != -1)) continue;
        switch (c->op) {
        case SQLITE_INDEX_CONSTRAINT_EQ: if (eq < 0) eq = i; break;
        case SQLITE_INDEX_CONSTRAINT_GT: case SQLITE_INDEX_CONSTRAINT_GE:
            if (lo < 0) lo = i;
            break;
        case SQLITE_INDEX_CONSTRAINT_LT: case SQLITE_INDEX_CONSTRAINT_LE:
            if (hi < 0) hi = i;
            break;
        default: break;
        }
    }
    /* arguments in the order xFilter reads them: eq, lo, hi */
    if (eq >= 0) {
        num |= IX_EQ;
        info->aConstraintUsage[eq].argvIndex = ++arg;
    } else {
        if (lo >= 0) {
            num |= IX_LO;
            info->aConstraintUsage[lo].argvIndex = ++arg;
        }
        if (hi >= 0) {
            num |= IX_HI;
            info->aConstraintUsage[hi].argvIndex = ++arg;
        }
    }
    uint32_t cols = (uint32_t)(info->colUsed & ((1u << vt->cols) - 1)) | 1u << vt->key;
    info->idxNum = num | (int)(cols << IX_COLS);
    if (num & IX_EQ) {
        info->estimatedCost = 10;
        info->estimatedRows = 1;
        info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
    } else if (num) {
        info->estimatedCost = num == (IX_LO | IX_HI) ? 1e4 : 1e5;
        info->estimatedRows = num == (IX_LO | IX_HI) ? 1000 : 100000;
    } else {
        info->estimatedCost = 1e6;
        info->estimatedRows = 1000000;
    }
    if (info->nOrderBy >= 1 && !info->aOrderBy[0].desc &&
        (info->aOrderBy[0].iColumn == vt->key || info->aOrderBy[0].iColumn == -1))
        info->orderByConsumed = 1;   /* the key is unique: later terms change nothing */
    return SQLITE_OK;
}

/* ------------------------------------------------------------ cursors */

static int pk_open(sqlite3_vtab *base, sqlite3_vtab_cursor **out) {
    pk_vtab *vt = (pk_vtab *)base;
    pk_cursor *cur = calloc(1, sizeof *cur);
    if (!cur) return SQLITE_NOMEM;
    for (int i = 0; i < PK_CACHE; i++) cur->cache_di[i] = SIZE_MAX;
    cur->ch = &cur->cache[0];
    cur->eof = 1;
    char *sql = sqlite3_mprintf("SELECT chunk, first, last FROM \"%w\".\"%w_packed\""
                                " ORDER BY chunk", vt->schema, vt->name);
    char *get = sqlite3_mprintf("SELECT data FROM \"%w\".\"%w_packed\" WHERE chunk = ?1",
                                vt->schema, vt->name);
    char *patches = sqlite3_mprintf("SELECT key, col, value FROM \"%w\".\"%w_packed_patch\""
                                    " WHERE key BETWEEN ?1 AND ?2", vt->schema, vt->name);
    sqlite3_stmt *st = NULL;
    int rc = sql && get && patches ? SQLITE_OK : SQLITE_NOMEM;
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(vt->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(vt->db, get, -1, &cur->get, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(vt->db, patches, -1, &cur->patches, NULL);
    size_t cap = 0;
    while (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        if (ana_grow((void **)&cur->dir, &cap, cur->ndir + 1, sizeof *cur->dir, 64)) {
            rc = SQLITE_NOMEM;
            break;
        }
        cur->dir[cur->ndir++] = (pk_dir){sqlite3_column_int64(st, 0),
                                         sqlite3_column_int64(st, 1),
                                         sqlite3_column_int64(st, 2)};
    }
    if (rc == SQLITE_OK && st && sqlite3_reset(st) != SQLITE_OK) rc = SQLITE_ERROR;
    if (rc != SQLITE_OK && rc != SQLITE_NOMEM)
        set_err(base, "%s: %s", vt->name, sqlite3_errmsg(vt->db));
    sqlite3_finalize(st);
    sqlite3_free(sql);
    sqlite3_free(get);
    sqlite3_free(patches);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(cur->get);
        sqlite3_finalize(cur->patches);
        free(cur->dir);
        free(cur);
        return rc;
    }
    *out = &cur->base;
    return SQLITE_OK;
}

static int pk_close(sqlite3_vtab_cursor *base) {
    pk_cursor *cur = (pk_cursor *)base;
    sqlite3_finalize(cur->get);
    sqlite3_finalize(cur->patches);
    for (int i = 0; i < PK_CACHE; i++) ana_pack_free(&cur->cache[i]);
    free(cur->dir);
    free(cur);
    return SQLITE_OK;
}

static int64_t key_at(const pk_cursor *cur, size_t row) {
    const pk_vtab *vt = (const pk_vtab *)cur->base.pVtab;
    return cur->ch->col[vt->key].val[row];
}

/* The row of ch with that key (column key), or SIZE_MAX. */
static size_t find_row(const ana_pack_chunk *ch, int key, int64_t k) {
    const int64_t *keys = ch->col[key].val;
    size_t a = 0, b = ch->rows;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (keys[m] < k) a = m + 1;
        else b = m;
    }
    return a < ch->rows && keys[a] == k ? a : SIZE_MAX;
}

int ana_pack_patch(ana_pack_chunk *ch, int key, sqlite3_stmt *patches, int64_t first,
                   int64_t last) {
    sqlite3_bind_int64(patches, 1, first);
    sqlite3_bind_int64(patches, 2, last);
    int rc;
    while ((rc = sqlite3_step(patches)) == SQLITE_ROW) {
        size_t row = find_row(ch, key, sqlite3_column_int64(patches, 0));
        int col = sqlite3_column_int(patches, 1);
        if (row == SIZE_MAX || col < 0 || col >= ch->cols || !(ch->decoded >> col & 1) ||
            ch->col[col].is_text)
            continue;
        ch->col[col].val[row] = sqlite3_column_int64(patches, 2);
        ch->col[col].null[row] = 0;
    }
    sqlite3_reset(patches);
    return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* The patches of chunk di's key range, applied to the decoded chunk. */
static int apply_patches(pk_cursor *cur, size_t di) {
    pk_vtab *vt = (pk_vtab *)cur->base.pVtab;
    if (ana_pack_patch(cur->ch, vt->key, cur->patches, cur->dir[di].first, cur->dir[di].last) !=
        SQLITE_OK) {
        set_err(&vt->base, "%s: reading patches: %s", vt->name, sqlite3_errmsg(vt->db));
        return SQLITE_ERROR;
    }
    return SQLITE_OK;
}

/* The table's lasting copy of s (n bytes), or NULL when there is no room. */
static const char *intern(pk_vtab *vt, const char *s, size_t n) {
    if (!vt->interned && !(vt->interned = calloc(PK_INTERN_MAX, sizeof *vt->interned)))
        return NULL;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 16777619u;
    size_t j = h & (PK_INTERN_MAX - 1);
    for (; vt->interned[j]; j = (j + 1) & (PK_INTERN_MAX - 1))
        if (!strncmp(vt->interned[j], s, n) && !vt->interned[j][n]) return vt->interned[j];
    if (2 * (vt->ninterned + 1) > PK_INTERN_MAX || !(vt->interned[j] = malloc(n + 1)))
        return NULL;
    memcpy(vt->interned[j], s, n);
    vt->interned[j][n] = 0;
    vt->ninterned++;
    return vt->interned[j];
}

/* Small dictionaries of the chunk in cur->ch replaced by interned texts. */
static void intern_dicts(pk_cursor *cur) {
    pk_vtab *vt = (pk_vtab *)cur->base.pVtab;
    for (int i = 0; i < cur->ch->cols; i++) {
        ana_pack_col *k = &cur->ch->col[i];
        if (!(cur->ch->decoded >> i & 1) || !k->is_text || k->ntext > PK_INTERN_DICT) continue;
        const char *lasting[PK_INTERN_DICT];
        uint32_t t = 0;
        for (; t < k->ntext && (lasting[t] = intern(vt, k->text[t], k->len[t])); t++) {}
        if (t < k->ntext) continue;
        for (t = 0; t < k->ntext; t++) k->text[t] = (char *)lasting[t];
        k->interned = 1;
    }
}

/* Chunk di of the directory into cur->ch: from the cache, else decoded
 * into the least recently used slot, or over the current chunk when a
 * scan moves on (a scan then stays in one slot's memory, warm). */
static int load_chunk(pk_cursor *cur, size_t di, int scanning) {
    int slot = 0;
    for (int i = 0; i < PK_CACHE; i++) {
        if (cur->cache_di[i] == di && (cur->cache[i].decoded & cur->want) == cur->want) {
            cur->ch = &cur->cache[i];
            cur->cache_used[i] = ++cur->tick;
            return SQLITE_OK;
        }
        if (cur->cache_used[i] < cur->cache_used[slot]) slot = i;
    }
    if (scanning) slot = (int)(cur->ch - cur->cache);
    pk_vtab *vt = (pk_vtab *)cur->base.pVtab;
    cur->ch = &cur->cache[slot];
    cur->cache_di[slot] = SIZE_MAX;
    cur->cache_used[slot] = ++cur->tick;
    sqlite3_bind_int64(cur->get, 1, cur->dir[di].id);
    int rc = sqlite3_step(cur->get);
    char err[256];
    if (rc != SQLITE_ROW) {
        set_err(&vt->base, "%s: a chunk is missing: %s", vt->name,
                rc == SQLITE_DONE ? "no row" : sqlite3_errmsg(vt->db));
        sqlite3_reset(cur->get);
        return SQLITE_ERROR;
    }
    const void *data = sqlite3_column_blob(cur->get, 0);
    int len = sqlite3_column_bytes(cur->get, 0);
    rc = ana_pack_decode(cur->ch, vt->cols, cur->want, data, (size_t)len, err, sizeof err);
    sqlite3_reset(cur->get);
    if (rc || !cur->ch->rows) {
        set_err(&vt->base, "%s: %s", vt->name, rc ? err : "an empty chunk");
        return SQLITE_ERROR;
    }
    __atomic_fetch_add(&chunks_decoded, 1, __ATOMIC_RELAXED);
    if (apply_patches(cur, di) != SQLITE_OK) return SQLITE_ERROR;
    intern_dicts(cur);
    cur->cache_di[slot] = di;
    return SQLITE_OK;
}

/* The smallest integer key that can equal or follow v (lower bound), or
 * the largest that can equal or precede it (upper bound): integers as
 * they are, reals rounded towards the inside (keys are integers); other
 * values (text, NULL) prune nothing, SQLite's own test decides. */
static int64_t bound(sqlite3_value *v, int lower) {
    switch (sqlite3_value_numeric_type(v)) {
    case SQLITE_INTEGER: return sqlite3_value_int64(v);
    case SQLITE_FLOAT: {
        double d = lower ? ceil(sqlite3_value_double(v)) : floor(sqlite3_value_double(v));
        if (d <= -9.2e18) return INT64_MIN;
        if (d >= 9.2e18) return INT64_MAX;
        return (int64_t)d;
    }
    default: return lower ? INT64_MIN : INT64_MAX;
    }
}

/* Moves to the first row with key >= lo from chunk di on (scanning: the
 * scan moved on from chunk di - 1). */
static int seek(pk_cursor *cur, size_t di, int64_t lo, int scanning) {
    cur->di = di;
    if (di >= cur->ndir || cur->dir[di].first > cur->hi) {
        cur->eof = 1;
        return SQLITE_OK;
    }
    int rc = load_chunk(cur, di, scanning);
    if (rc != SQLITE_OK) return rc;
    size_t a = 0, b = cur->ch->rows;
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (key_at(cur, m) < lo) a = m + 1;
        else b = m;
    }
    cur->row = a;
    cur->eof = a >= cur->ch->rows || key_at(cur, a) > cur->hi;
    return SQLITE_OK;
}

static int pk_filter(sqlite3_vtab_cursor *base, int num, const char *str, int argc,
                     sqlite3_value **argv) {
    (void)str;
    pk_cursor *cur = (pk_cursor *)base;
    pk_vtab *vt = (pk_vtab *)base->pVtab;
    int64_t lo = INT64_MIN, hi = INT64_MAX;
    cur->want = ((uint32_t)num >> IX_COLS) | 1u << vt->key;
    int a = 0;
    if ((num & IX_EQ) && a < argc) {
        lo = bound(argv[a], 1);
        hi = bound(argv[a++], 0);
        if (sqlite3_value_type(argv[0]) == SQLITE_NULL) lo = 1, hi = 0;   /* = NULL: nothing */
    }
    if ((num & IX_LO) && a < argc) lo = bound(argv[a++], 1);
    if ((num & IX_HI) && a < argc) hi = bound(argv[a++], 0);
    cur->hi = hi;
    if (lo > hi) {
        cur->eof = 1;
        return SQLITE_OK;
    }
    /* the first chunk whose last key reaches lo */
    size_t x = 0, y = cur->ndir;
    while (x < y) {
        size_t m = x + (y - x) / 2;
        if (cur->dir[m].last < lo) x = m + 1;
        else y = m;
    }
    return seek(cur, x, lo, 0);
}

static int pk_next(sqlite3_vtab_cursor *base) {
    pk_cursor *cur = (pk_cursor *)base;
    if (++cur->row >= cur->ch->rows) return seek(cur, cur->di + 1, INT64_MIN, 1);
    cur->eof = key_at(cur, cur->row) > cur->hi;
    return SQLITE_OK;
}

static int pk_eof(sqlite3_vtab_cursor *base) { return ((pk_cursor *)base)->eof; }

static int pk_column(sqlite3_vtab_cursor *base, sqlite3_context *ctx, int i) {
    pk_cursor *cur = (pk_cursor *)base;
    if (!(cur->ch->decoded >> i & 1)) {
        /* a column colUsed did not announce: the whole chunk, then */
        cur->want = ~0u;
        int rc = load_chunk(cur, cur->di, 0);
        if (rc != SQLITE_OK) return rc;
    }
    const ana_pack_col *k = &cur->ch->col[i];
    int64_t v = k->val[cur->row];
    if (k->is_text) {
        /* a chunk's own texts go when the chunk does: SQLite copies them */
        if (v > 0)
            sqlite3_result_text(ctx, k->text[v - 1], (int)k->len[v - 1],
                                k->interned ? SQLITE_STATIC : SQLITE_TRANSIENT);
    } else if (!k->null[cur->row]) {
        sqlite3_result_int64(ctx, v);
    }
    return SQLITE_OK;
}

static int pk_rowid(sqlite3_vtab_cursor *base, sqlite3_int64 *rowid) {
    pk_cursor *cur = (pk_cursor *)base;
    *rowid = key_at(cur, cur->row);
    return SQLITE_OK;
}

static const sqlite3_module packed_module = {
    .iVersion = 1,
    .xCreate = pk_create,
    .xConnect = pk_connect,
    .xBestIndex = pk_best_index,
    .xDisconnect = pk_disconnect,
    .xDestroy = pk_destroy,
    .xOpen = pk_open,
    .xClose = pk_close,
    .xFilter = pk_filter,
    .xNext = pk_next,
    .xEof = pk_eof,
    .xColumn = pk_column,
    .xRowid = pk_rowid,
};

static int register_on(sqlite3 *db, char **pzErr, const struct sqlite3_api_routines *api) {
    (void)api;
    int rc = sqlite3_create_module_v2(db, "npurr_packed", &packed_module, NULL, NULL);
    if (rc != SQLITE_OK && pzErr) *pzErr = sqlite3_mprintf("%s", sqlite3_errmsg(db));
    return rc;
}

int ana_packed_register(sqlite3 *db, char *err, size_t errlen) {
    /* Every later connection of the process knows the module too: the
     * export's second connection, a benchmark's, a test's. */
    sqlite3_auto_extension((void (*)(void))register_on);
    if (register_on(db, NULL, NULL) != SQLITE_OK) {
        ana_err(err, errlen, "npurr_packed: cannot register the module: %s",
                sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

int ana_create_packed(sqlite3 *db, const char *table, const char *key, const char *columns,
                      char *err, size_t errlen) {
    char *sql = sqlite3_mprintf("DROP TABLE IF EXISTS \"%w\";"
                                "CREATE VIRTUAL TABLE \"%w\" USING npurr_packed(%s, %s);",
                                table, table, key, columns);
    if (!sql) {
        ana_err(err, errlen, "out of memory");
        return -1;
    }
    int rc = ana_exec(db, sql, err, errlen);
    sqlite3_free(sql);
    return rc;
}

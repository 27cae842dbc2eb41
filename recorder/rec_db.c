/*
 * rec_db.c - writes the index builder's rows into RUN/index.db.
 *
 * The whole index is written in one transaction through prepared
 * statements into index.db.tmp, which is renamed over index.db only once it
 * is complete: a reader never sees a half-written index, and a failed
 * reindex leaves the previous one in place. Journal and fsync are off for
 * the temporary file because the rename is the commit point and the trace
 * can always rebuild it. The schema is the contract with analysis and
 * replay (see README / DESIGN): change it only together with them.
 *
 * The big table, wait_rows (the storage of the waits view), is written
 * while the run goes on: after each chunk the live recorder's background
 * thread calls rec_ix_db_flush, which inserts the rows that can no longer
 * change (the waits that ended), a batch of BATCH_ROWS at a time, and drops
 * them from the builder's memory. rec_close is then left with the last rows and the
 * small tables. reindex writes everything at the end.
 * Transfers are not indexed here: there is one per two events, so analysis
 * derives that table on first use (ana_scan.c), as it does its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "recorder/rec_index.h"

static const char *const schema =
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE strings(id INTEGER PRIMARY KEY, text TEXT);"
    "CREATE TABLE tracks(id INTEGER PRIMARY KEY, rank INT, core INT, core_type TEXT,"
    " pipe TEXT, role TEXT, name TEXT);"
    "CREATE TABLE sites(id INTEGER PRIMARY KEY, file TEXT, line INT, function TEXT);"
    "CREATE TABLE objects(id INTEGER PRIMARY KEY, kind TEXT, name TEXT, rank INT, addr INT,"
    " width INT, size INT, ring INT, level TEXT);"
    "CREATE TABLE rings(id INTEGER PRIMARY KEY, name TEXT, level TEXT, owner_rank INT,"
    " peer_rank INT, capacity INT, head_object INT, tail_object INT);"
    "CREATE TABLE chunks(id INTEGER PRIMARY KEY, stream INT, first_seq INT, last_seq INT,"
    " first_time INT, last_time INT, offset INT, compressed_bytes INT, raw_bytes INT,"
    " events INT, rank_min INT, rank_max INT, core_min INT, core_max INT, kind_mask INT);"
    /* waits is a view (made by write_view, once cores_per_rank is known)
     * over wait_rows, which stores only what cannot be derived: rank and
     * core come from the track, end_ps from begin_ps + dur_ps, role,
     * kind and cause (set by analysis) are ids. Fewer, smaller columns per row are less of SQLite's
     * work on the recorder's thread and a smaller index (issue 29). */
    "CREATE TABLE wait_rows(id INTEGER PRIMARY KEY, track INT, role INT, kind INT, object INT,"
    " site INT, begin_seq INT, end_seq INT, begin_ps INT, dur_ps INT, expected INT, seen INT,"
    " waker_track INT, waker_seq INT, cause INT);"
    /* A deadlock's blocked waits, found without a scan (kept up as the rows
     * go in, so it costs nothing like building it afterwards). */
    "CREATE INDEX wait_rows_blocked ON wait_rows(end_seq) WHERE end_seq IS NULL;"
;

typedef struct db_ctx {
    sqlite3 *db;
    sqlite3_stmt *st;           /* the statement rows are bound to now */
    int col;
    const rec_index *ix;
} db_ctx;

/* index.db.tmp while the index is being written. */
struct rec_ix_db {
    sqlite3 *db;
    char path[4096], tmp[4096];
    /* BATCH_ROWS rows per insert, and one */
    sqlite3_stmt *waits_batch, *waits_one;
    size_t waits_done;    /* entries of ix->ended_waits written */
    uint8_t *mark;              /* order_rows' marks */
    size_t cap_mark;
};

/* Inserting several rows per statement roughly halves the per-row cost of
 * SQLite's VM for the waits rows; 128 (1792 parameters) is a few percent
 * cheaper than 32. */
#define BATCH_ROWS 128

static const char *str_of(const rec_index *ix, uint32_t id) {
    return id && id < ix->nstrings ? ix->strings[id] : NULL;
}

static void b_int(db_ctx *c, int64_t v) { sqlite3_bind_int64(c->st, ++c->col, v); }
static void b_null(db_ctx *c) { sqlite3_bind_null(c->st, ++c->col); }
static void b_id(db_ctx *c, uint64_t v) { /* 0 means none */
    if (v) b_int(c, (int64_t)v);
    else b_null(c);
}
/* Every string bound lives until the statement is stepped (builder rows,
 * engine name tables, a local buffer), so SQLite need not copy it. */
static void b_text(db_ctx *c, const char *s) {
    if (s) sqlite3_bind_text(c->st, ++c->col, s, -1, SQLITE_STATIC);
    else b_null(c);
}

static int prep(db_ctx *c, const char *sql, char *err, size_t errlen) {
    if (sqlite3_prepare_v2(c->db, sql, -1, &c->st, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "index: cannot prepare \"%s\": %s", sql, sqlite3_errmsg(c->db));
        return -1;
    }
    return 0;
}

static int step(db_ctx *c, char *err, size_t errlen) {
    int rc = sqlite3_step(c->st);
    sqlite3_reset(c->st); /* every column is bound again for the next row */
    c->col = 0;
    if (rc != SQLITE_DONE) {
        snprintf(err, errlen, "index: insert failed: %s", sqlite3_errmsg(c->db));
        return -1;
    }
    return 0;
}

static void done(db_ctx *c) {
    sqlite3_finalize(c->st);
    c->st = NULL;
    c->col = 0;
}

/* Prepares "INSERT INTO table VALUES row" for BATCH_ROWS rows and for one,
 * row being the parenthesised placeholder list of one row. */
static int prep_rows(sqlite3 *db, const char *table, const char *row, sqlite3_stmt **batch,
                     sqlite3_stmt **one, char *err, size_t errlen) {
    char sql1[512];
    snprintf(sql1, sizeof sql1, "INSERT INTO %s VALUES%s", table, row);
    size_t rl = strlen(row), len = strlen(sql1) + BATCH_ROWS * (rl + 1) + 1;
    char *sql = malloc(len);
    if (!sql) {
        snprintf(err, errlen, "index: out of memory");
        return -1;
    }
    int n = snprintf(sql, len, "INSERT INTO %s VALUES", table);
    for (int r = 0; r < BATCH_ROWS; r++)
        n += snprintf(sql + n, len - (size_t)n, "%s%s", r ? "," : "", row);
    int rc = sqlite3_prepare_v2(db, sql, -1, batch, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(db, sql1, -1, one, NULL);
    free(sql);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "index: cannot prepare \"%s\": %s", sql1, sqlite3_errmsg(db));
        return -1;
    }
    return 0;
}

static int write_meta(db_ctx *c, char *err, size_t errlen) {
    const rec_index *ix = c->ix;
    if (prep(c, "INSERT OR REPLACE INTO meta VALUES(?,?)", err, errlen)) return -1;
    for (size_t i = 0; i < ix->meta.n; i++) {
        b_text(c, ix->meta.keys[i]);
        b_text(c, ix->meta.values[i]);
        if (step(c, err, errlen)) return -1;
    }
    done(c);
    if (prep(c, "INSERT INTO strings VALUES(?,?)", err, errlen)) return -1;
    for (size_t i = 1; i < ix->nstrings; i++) {
        if (!ix->strings[i]) continue;
        b_int(c, (int64_t)i);
        b_text(c, ix->strings[i]);
        if (step(c, err, errlen)) return -1;
    }
    done(c);
    if (prep(c, "INSERT INTO sites VALUES(?,?,?,?)", err, errlen)) return -1;
    for (size_t i = 1; i < ix->nsites; i++) {
        const ix_site *s = &ix->sites[i];
        if (!s->present) continue;
        b_int(c, (int64_t)i);
        b_text(c, s->file);
        b_int(c, s->line);
        b_text(c, s->func);
        if (step(c, err, errlen)) return -1;
    }
    done(c);
    return 0;
}

static int write_tracks(db_ctx *c, char *err, size_t errlen) {
    const rec_index *ix = c->ix;
    if (prep(c, "INSERT INTO tracks VALUES(?,?,?,?,?,?,?)", err, errlen)) return -1;
    for (size_t t = 0; t < ix->ntracks; t++) {
        if (!ix->track_seen[t]) continue;
        uint32_t pipe = (uint32_t)(t % PIPE_COUNT);
        uint32_t rc = (uint32_t)(t / PIPE_COUNT);
        uint32_t rank = rc / ix->cpr, core = rc % ix->cpr;
        int aic = core < ix->num_aic;
        char name[96];
        snprintf(name, sizeof name, "r%u %s%u %s", rank, aic ? "AIC" : "AIV",
                 aic ? core : core - ix->num_aic, rec_pipe_name((int)pipe));
        b_int(c, (int64_t)t);
        b_int(c, rank);
        b_int(c, core);
        b_text(c, aic ? "AIC" : "AIV");
        b_text(c, rec_pipe_name((int)pipe));
        b_text(c, rc < ix->ncores ? str_of(ix, ix->core_role[rc]) : NULL);
        b_text(c, name);
        if (step(c, err, errlen)) return -1;
    }
    done(c);
    return 0;
}

static int write_objects(db_ctx *c, char *err, size_t errlen) {
    const rec_index *ix = c->ix;
    if (prep(c, "INSERT INTO objects VALUES(?,?,?,?,?,?,?,?,?)", err, errlen)) return -1;
    for (size_t i = 1; i < ix->nobjects; i++) {
        const engine_object *o = &ix->objects[i];
        if (!o->id) continue;
        /* Head and tail words share their ring's level (rdma, hccs...). */
        uint32_t level = o->kind == OBJ_RING ? o->role
                         : (o->ring && o->ring < ix->nobjects) ? ix->objects[o->ring].role
                                                               : o->role;
        b_int(c, o->id);
        b_text(c, rec_object_kind_name(o->kind));
        b_text(c, str_of(ix, o->name));
        b_int(c, o->rank);
        b_int(c, (int64_t)o->addr.a);
        b_int(c, o->width);
        b_int(c, (int64_t)o->size);
        b_id(c, o->ring);
        b_text(c, str_of(ix, level));
        if (step(c, err, errlen)) return -1;
    }
    done(c);
    if (prep(c, "INSERT INTO rings VALUES(?,?,?,?,?,?,?,?)", err, errlen)) return -1;
    for (size_t i = 1; i < ix->nobjects; i++) {
        const engine_object *o = &ix->objects[i];
        if (!o->id || o->kind != OBJ_RING) continue;
        b_int(c, o->id);
        b_text(c, str_of(ix, o->name));
        b_text(c, str_of(ix, o->role));
        b_int(c, o->consumer_rank);
        b_int(c, o->producer_rank);
        b_int(c, (int64_t)o->size);
        b_id(c, o->head);
        b_id(c, o->tail);
        if (step(c, err, errlen)) return -1;
    }
    done(c);
    return 0;
}

static int write_chunks(db_ctx *c, char *err, size_t errlen) {
    const rec_index *ix = c->ix;
    if (prep(c, "INSERT INTO chunks VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", err, errlen))
        return -1;
    for (size_t i = 0; i < ix->nchunks; i++) {
        const rec_chunk_row *r = &ix->chunks[i];
        b_int(c, (int64_t)i + 1);
        b_int(c, 0); /* one stream: the whole cluster's events in seq order */
        b_int(c, (int64_t)r->first_seq);
        b_int(c, (int64_t)r->last_seq);
        b_int(c, (int64_t)r->first_time);
        b_int(c, (int64_t)r->last_time);
        b_int(c, (int64_t)r->offset);
        b_int(c, (int64_t)r->compressed_bytes);
        b_int(c, (int64_t)r->raw_bytes);
        b_int(c, (int64_t)r->events);
        b_int(c, r->rank_min);
        b_int(c, r->rank_max);
        b_int(c, r->core_min);
        b_int(c, r->core_max);
        b_int(c, (int64_t)r->kind_mask);
        if (step(c, err, errlen)) return -1;
    }
    done(c);
    return 0;
}

/* Binds wait i at c->col + 1 onwards: a wait_rows row. */
static void bind_wait_row(db_ctx *c, const ix_wait *w) {
    b_int(c, (int64_t)w->id);
    b_int(c, w->track);
    b_id(c, w->role);
    b_int(c, w->kind);
    b_id(c, w->object);
    b_id(c, w->site);
    b_int(c, (int64_t)w->begin_seq);
    b_id(c, w->end_seq);
    b_int(c, (int64_t)w->begin_ps);
    b_int(c, (int64_t)(w->end_ps - w->begin_ps));
    b_int(c, w->expected);
    b_int(c, w->seen);
    if (w->waker_peer) b_int(c, w->waker_peer - 1);
    else b_null(c);
    b_id(c, w->waker_seq);
}

static void bind_wait(db_ctx *c, size_t i) { bind_wait_row(c, &c->ix->waits[i]); }

/* The waits view: wait_rows with the columns it does not store derived
 * exactly as the wide table of index version 1 stored them (the track id
 * is (rank * cores_per_rank + core) * PIPE_COUNT + pipe; a role or cause id names
 * a string; kind numbers the names of rec_wait_kind_name). */
static int write_view(db_ctx *c, char *err, size_t errlen) {
    const rec_index *ix = c->ix;
    char kinds[512];
    int n = 0;
    for (int k = 0; k < WK_COUNT; k++)
        n += snprintf(kinds + n, sizeof kinds - (size_t)n, " WHEN %d THEN '%s'", k,
                      rec_wait_kind_name(k));
    unsigned per_rank = ix->cpr * PIPE_COUNT;
    char sql[2048];
    snprintf(sql, sizeof sql,
             "CREATE VIEW waits AS SELECT w.id AS id, w.track AS track,"
             " w.track / %u AS rank, w.track / %d %% %u AS core,"
             " (SELECT s.text FROM strings s WHERE s.id = w.role) AS role,"
             " CASE w.kind%s END AS kind, w.object AS object, w.site AS site,"
             " w.begin_seq AS begin_seq, w.end_seq AS end_seq, w.begin_ps AS begin_ps,"
             " w.begin_ps + w.dur_ps AS end_ps, w.dur_ps AS dur_ps, w.expected AS expected,"
             " w.seen AS seen, w.waker_track AS waker_track, w.waker_seq AS waker_seq,"
             " w.waker_track / %u AS waker_rank, w.waker_track / %d %% %u AS waker_core,"
             " (SELECT s.text FROM strings s WHERE s.id = w.cause) AS cause FROM wait_rows w;"
             "INSERT OR REPLACE INTO meta VALUES('index_version', '%d');",
             per_rank, PIPE_COUNT, ix->cpr, kinds, per_rank, PIPE_COUNT, ix->cpr,
             REC_INDEX_VERSION);
    char *msg = NULL;
    if (sqlite3_exec(c->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        snprintf(err, errlen, "index: cannot create the waits view: %s", msg ? msg : "?");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

/* gm_t raw addresses name their rank; local (UB, L1...) addresses belong to
 * the issuing core's rank. */
static int64_t addr_rank(uint64_t raw, uint32_t own) {
    return (raw >> 63) ? own : (int64_t)((raw >> GM_RANK_SHIFT) & 0xffff);
}

void rec_transfer_ranks(int sub, uint32_t rank, uint64_t src_addr, uint64_t dst_addr,
                        int64_t *src_rank, int64_t *dst_rank) {
    /* A vector or cube op works on its own core's buffers (VecDup and its
     * kind have no source address at all: 0 read as GM would be rank 0). */
    if (sub == XFER_VEC || sub == XFER_CUBE) {
        *src_rank = *dst_rank = rank;
        return;
    }
    /* A remote atomic or store carries its operand, not a source buffer. */
    *src_rank = sub == XFER_RDMA_ATOMIC || sub == XFER_REMOTE_STORE ? (int64_t)rank
                                                                   : addr_rank(src_addr, rank);
    *dst_rank = addr_rank(dst_addr, rank);
}

static int cmp_row(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* rows[from, n), distinct positions, into increasing order. They are
 * about one chunk's waits among the few thousand the builder holds, so a
 * mark per position in their range and a walk over the marks costs a
 * fraction of a sort; a range far wider than the rows is sorted. */
static void order_rows(rec_ix_db *d, size_t *rows, size_t from, size_t n) {
    if (n - from < 2) return;
    size_t lo = SIZE_MAX, hi = 0;
    for (size_t k = from; k < n; k++) {
        lo = rows[k] < lo ? rows[k] : lo;
        hi = rows[k] > hi ? rows[k] : hi;
    }
    size_t span = hi - lo + 1;
    uint8_t *m = span > d->cap_mark && span <= 16 * (n - from) + 65536 ? realloc(d->mark, span)
                                                                      : NULL;
    if (m) {
        d->mark = m;
        d->cap_mark = span;
    }
    if (span > d->cap_mark) {   /* too wide to mark, or no memory for the marks */
        qsort(rows + from, n - from, sizeof *rows, cmp_row);
        return;
    }
    memset(d->mark, 0, span);
    for (size_t k = from; k < n; k++) d->mark[rows[k] - lo] = 1;
    size_t k = from;
    for (size_t i = 0; i < span; i++)
        if (d->mark[i]) rows[k++] = lo + i;
}

/* Writes the rows listed in rows[*done..n) in batches; the last
 * n % BATCH_ROWS one by one only if final (the next flush may fill the
 * batch). */
static int write_rows(db_ctx *c, rec_ix_db *d, sqlite3_stmt *batch, sqlite3_stmt *one,
                      void (*bind)(db_ctx *c, size_t i), size_t *rows, size_t *done,
                      size_t n, int final, char *err, size_t errlen) {
    /* In row id order, SQLite's b-tree inserts mostly append. */
    order_rows(d, rows, *done, n);
    while (*done + BATCH_ROWS <= n) {
        c->st = batch;
        c->col = 0;
        for (size_t r = 0; r < BATCH_ROWS; r++) bind(c, rows[*done + r]);
        if (step(c, err, errlen)) return -1;
        *done += BATCH_ROWS;
    }
    while (final && *done < n) {
        c->st = one;
        c->col = 0;
        bind(c, rows[*done]);
        if (step(c, err, errlen)) return -1;
        ++*done;
    }
    return 0;
}

static void db_close(rec_index *ix, int keep) {
    rec_ix_db *d = ix->db;
    if (!d) return;
    sqlite3_finalize(d->waits_batch);
    sqlite3_finalize(d->waits_one);
    sqlite3_close(d->db);
    if (!keep) unlink(d->tmp);
    free(d->mark);
    free(d);
    ix->db = NULL;
}

int rec_ix_db_open(rec_index *ix, const char *path, char *err, size_t errlen) {
    if (ix->db) return 0;
    rec_ix_db *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    ix->db = d;
    if (snprintf(d->path, sizeof d->path, "%s", path) >= (int)sizeof d->path ||
        snprintf(d->tmp, sizeof d->tmp, "%s.tmp", path) >= (int)sizeof d->tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        free(d);
        ix->db = NULL;
        return -1;
    }
    unlink(d->tmp);
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(d->tmp, &d->db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot create %s: %s", d->tmp,
                 d->db ? sqlite3_errmsg(d->db) : "out of memory");
        db_close(ix, 0);
        return -1;
    }
    char *msg = NULL;
    /* 16 KiB pages: a waits row costs SQLite less to insert than on the
     * default 4 KiB ones (fewer pages to balance and write) and the rows
     * pack tighter (EP64: 6 % less CPU for the rows, 2 % smaller). */
    int rc = sqlite3_exec(d->db,
                          "PRAGMA page_size=16384; PRAGMA journal_mode=OFF;"
                          " PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; BEGIN;",
                          NULL, NULL, &msg);
    if (rc == SQLITE_OK) rc = sqlite3_exec(d->db, schema, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot create the schema of %s: %s", d->tmp, msg ? msg : "?");
        sqlite3_free(msg);
        db_close(ix, 0);
        return -1;
    }
    if (prep_rows(d->db, "wait_rows", "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL)",
                  &d->waits_batch, &d->waits_one, err, errlen)) {
        db_close(ix, 0);
        return -1;
    }
    return 0;
}

/* Drops the waits written so far from the builder's array (the ones
 * still open and the ended ones not written yet move down, keeping their
 * order, so rows stay in id order). The array then holds about what one
 * chunk adds instead of every wait of the run (a hundred bytes each: 0.7 GB
 * at EP64, each page of it faulted in as it grew). Only the live recorder
 * flushes; reindex keeps every wait until the end, and a split run's
 * processes send theirs to process 0 with their parts (rec_ix_take_part). */
static int drop_written(rec_index *ix) {
    rec_ix_db *d = ix->db;
    if (d->waits_done == 0) return 0;
    for (size_t k = 0; k < d->waits_done; k++) ix->waits[ix->ended_waits[k]].written = 1;
    if (rec_ix_drop_marked(ix)) return -1;
    d->waits_done = 0;
    return 0;
}

/* Writes the waits that can no longer change (all of them with final: the
 * ones that never ended join the list first). */
static int write_big(rec_index *ix, int final, char *err, size_t errlen) {
    rec_ix_db *d = ix->db;
    db_ctx c = {d->db, NULL, 0, ix};
    if (final) {
        for (size_t i = 0; i < ix->nwaits; i++)
            if (!ix->waits[i].end_seq)
                rec_ix_push_ended(ix, &ix->ended_waits, &ix->nended_waits, &ix->cap_ended_waits, i);
        if (ix->oom) {
            snprintf(err, errlen, "%s: out of memory while building the index", d->path);
            return -1;
        }
    }
    return write_rows(&c, d, d->waits_batch, d->waits_one, bind_wait, ix->ended_waits,
                      &d->waits_done, ix->nended_waits, final, err, errlen);
}

int rec_ix_db_put_waits(rec_index *ix, const ix_wait *rows, size_t n, size_t *done, int final,
                        char *err, size_t errlen) {
    rec_ix_db *d = ix->db;
    db_ctx c = {d ? d->db : NULL, NULL, 0, ix};
    *done = 0;
    if (!d) {
        snprintf(err, errlen, "index.db.tmp is not open");
        return -1;
    }
    while (*done + BATCH_ROWS <= n || (final && *done < n)) {
        size_t k = *done + BATCH_ROWS <= n ? BATCH_ROWS : 1;
        c.st = k == 1 ? d->waits_one : d->waits_batch;
        c.col = 0;
        for (size_t r = 0; r < k; r++) bind_wait_row(&c, &rows[*done + r]);
        if (step(&c, err, errlen)) return -1;
        *done += k;
    }
    return 0;
}

int rec_ix_db_flush(rec_index *ix, char *err, size_t errlen) {
    if (!ix->db) return 0;
    if (ix->oom) {
        snprintf(err, errlen, "%s: out of memory while building the index", ix->db->path);
        return -1;
    }
    if (write_big(ix, 0, err, errlen)) return -1;
    if (drop_written(ix)) {
        snprintf(err, errlen, "%s: out of memory while building the index", ix->db->path);
        return -1;
    }
    return 0;
}

int rec_ix_write_db(rec_index *ix, const char *path, char *err, size_t errlen) {
    if (errlen) err[0] = 0;
    if (ix->oom) {
        snprintf(err, errlen, "%s: out of memory while building the index", path);
        return -1;
    }
    if (rec_ix_db_open(ix, path, err, errlen)) return -1;
    rec_ix_db *d = ix->db;
    db_ctx c = {d->db, NULL, 0, ix};
    if (write_big(ix, 1, err, errlen) || write_meta(&c, err, errlen) ||
        write_view(&c, err, errlen) ||
        write_tracks(&c, err, errlen) || write_objects(&c, err, errlen) ||
        write_chunks(&c, err, errlen) ||
        sqlite3_exec(d->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        if (c.st) sqlite3_finalize(c.st);
        if (!*err) snprintf(err, errlen, "cannot commit %s: %s", d->tmp, sqlite3_errmsg(d->db));
        db_close(ix, 0);
        return -1;
    }
    sqlite3_finalize(d->waits_batch);
    sqlite3_finalize(d->waits_one);
    d->waits_batch = d->waits_one = NULL;
    int rc = sqlite3_close(d->db);
    d->db = NULL;
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot close %s", d->tmp);
        db_close(ix, 0);
        return -1;
    }
    if (rename(d->tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", d->tmp, path, strerror(errno));
        db_close(ix, 0);
        return -1;
    }
    db_close(ix, 1);
    return 0;
}

void rec_ix_db_discard(rec_index *ix) { db_close(ix, 0); }

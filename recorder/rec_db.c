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
    "CREATE TABLE waits(id INTEGER PRIMARY KEY, track INT, rank INT, core INT, role TEXT,"
    " kind TEXT, object INT, site INT, begin_seq INT, end_seq INT, begin_ps INT, end_ps INT,"
    " dur_ps INT, expected INT, seen INT, waker_track INT, waker_seq INT, waker_rank INT,"
    " waker_core INT, cause TEXT);"
    "CREATE TABLE transfers(id INTEGER PRIMARY KEY, issue_seq INT, done_seq INT, rank INT,"
    " core INT, pipe TEXT, kind TEXT, src_rank INT, dst_rank INT, src_addr INT, dst_addr INT,"
    " bytes INT, issue_ps INT, start_ps INT, done_ps INT, site INT);";

typedef struct db_ctx {
    sqlite3 *db;
    sqlite3_stmt *st;           /* the statement rows are bound to now */
    sqlite3_stmt *batch, *one;  /* big tables: BATCH_ROWS rows per insert, then one */
    size_t row, full;           /* rows bound so far; rows that go through batch */
    int col;
    const rec_index *ix;
} db_ctx;

/* Inserting several rows per statement roughly halves the per-row cost of
 * SQLite's VM for the wide waits and transfers tables. */
#define BATCH_ROWS 32

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

/* Prepares "INSERT INTO table VALUES row" for nrows rows, row being the
 * parenthesised placeholder list of one row. */
static int prep_rows(db_ctx *c, const char *table, const char *row, size_t nrows, char *err,
                     size_t errlen) {
    char one[512], *batch = NULL;
    snprintf(one, sizeof one, "INSERT INTO %s VALUES%s", table, row);
    size_t rl = strlen(row), len = strlen(one) + BATCH_ROWS * (rl + 1) + 1;
    batch = malloc(len);
    if (!batch) {
        snprintf(err, errlen, "index: out of memory");
        return -1;
    }
    int n = snprintf(batch, len, "INSERT INTO %s VALUES", table);
    for (int r = 0; r < BATCH_ROWS; r++) n += snprintf(batch + n, len - (size_t)n, "%s%s", r ? "," : "", row);
    c->batch = c->one = NULL;
    int rc = sqlite3_prepare_v2(c->db, batch, -1, &c->batch, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(c->db, one, -1, &c->one, NULL);
    free(batch);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "index: cannot prepare \"%s\": %s", one, sqlite3_errmsg(c->db));
        sqlite3_finalize(c->batch);
        sqlite3_finalize(c->one);
        return -1;
    }
    c->row = 0;
    c->full = nrows / BATCH_ROWS * BATCH_ROWS;
    c->col = 0;
    c->st = c->full ? c->batch : c->one;
    return 0;
}

/* Ends the row just bound: steps when the batch is full or for single rows. */
static int row_done(db_ctx *c, char *err, size_t errlen) {
    c->row++;
    if (c->row <= c->full && c->row % BATCH_ROWS) return 0;
    int rc = step(c, err, errlen);
    c->st = c->row < c->full ? c->batch : c->one;
    return rc;
}

static void done_rows(db_ctx *c) {
    sqlite3_finalize(c->batch);
    sqlite3_finalize(c->one);
    c->st = c->batch = c->one = NULL;
    c->col = 0;
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

static int write_waits(db_ctx *c, char *err, size_t errlen) {
    const rec_index *ix = c->ix;
    if (prep_rows(c, "waits", "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,NULL)", ix->nwaits, err,
                  errlen))
        return -1;
    for (size_t i = 0; i < ix->nwaits; i++) {
        const ix_wait *w = &ix->waits[i];
        b_int(c, (int64_t)i + 1);
        b_int(c, w->track);
        b_int(c, w->rank);
        b_int(c, w->core);
        b_text(c, str_of(ix, w->role));
        b_text(c, rec_wait_kind_name(w->kind));
        b_id(c, w->object);
        b_id(c, w->site);
        b_int(c, (int64_t)w->begin_seq);
        b_id(c, w->end_seq);
        b_int(c, (int64_t)w->begin_ps);
        b_int(c, (int64_t)w->end_ps);
        b_int(c, (int64_t)(w->end_ps - w->begin_ps));
        b_int(c, w->expected);
        b_int(c, w->seen);
        if (w->waker_peer) {
            uint32_t wt = w->waker_peer - 1, rc = wt / PIPE_COUNT;
            b_int(c, wt);
            b_id(c, w->waker_seq);
            b_int(c, rc / ix->cpr);
            b_int(c, rc % ix->cpr);
        } else {
            b_null(c);
            b_id(c, w->waker_seq);
            b_null(c);
            b_null(c);
        }
        if (row_done(c, err, errlen)) return -1;
    }
    done_rows(c);
    return 0;
}

/* gm_t raw addresses name their rank; local (UB, L1...) addresses belong to
 * the issuing core's rank. */
static int64_t addr_rank(uint64_t raw, uint32_t own) {
    return (raw >> 63) ? own : (int64_t)((raw >> GM_RANK_SHIFT) & 0xffff);
}

static int write_transfers(db_ctx *c, char *err, size_t errlen) {
    const rec_index *ix = c->ix;
    if (prep_rows(c, "transfers", "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", ix->nxfers, err, errlen))
        return -1;
    for (size_t i = 0; i < ix->nxfers; i++) {
        const ix_xfer *x = &ix->xfers[i];
        const char *kind = engine_xfer_name(x->sub);
        b_int(c, (int64_t)i + 1);
        b_int(c, (int64_t)x->issue_seq);
        b_id(c, x->done_seq);
        b_int(c, x->rank);
        b_int(c, x->core);
        b_text(c, rec_pipe_name(x->pipe));
        b_text(c, kind ? kind : "?");
        /* A remote atomic has an operand, not a source buffer. */
        b_int(c, x->sub == XFER_RDMA_ATOMIC ? (int64_t)x->rank : addr_rank(x->src_addr, x->rank));
        b_int(c, addr_rank(x->dst_addr, x->rank));
        b_int(c, (int64_t)x->src_addr);
        b_int(c, (int64_t)x->dst_addr);
        b_int(c, (int64_t)x->bytes);
        b_int(c, (int64_t)x->issue_ps);
        b_int(c, (int64_t)x->start_ps);
        if (x->done_seq) b_int(c, (int64_t)x->done_ps);
        else b_null(c);
        b_id(c, x->site);
        if (row_done(c, err, errlen)) return -1;
    }
    done_rows(c);
    return 0;
}

int rec_ix_write_db(rec_index *ix, const char *path, char *err, size_t errlen) {
    if (errlen) err[0] = 0;
    if (ix->oom) {
        snprintf(err, errlen, "%s: out of memory while building the index", path);
        return -1;
    }
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    unlink(tmp);
    db_ctx c = {0};
    c.ix = ix;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(tmp, &c.db, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot create %s: %s", tmp,
                 c.db ? sqlite3_errmsg(c.db) : "out of memory");
        sqlite3_close(c.db);
        return -1;
    }
    char *msg = NULL;
    int rc = sqlite3_exec(c.db,
                          "PRAGMA journal_mode=OFF;"
                          " PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; BEGIN;",
                          NULL, NULL, &msg);
    if (rc == SQLITE_OK) rc = sqlite3_exec(c.db, schema, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        snprintf(err, errlen, "cannot create the schema of %s: %s", tmp, msg ? msg : "?");
        sqlite3_free(msg);
        sqlite3_close(c.db);
        unlink(tmp);
        return -1;
    }
    if (write_meta(&c, err, errlen) || write_tracks(&c, err, errlen) ||
        write_objects(&c, err, errlen) || write_chunks(&c, err, errlen) ||
        write_waits(&c, err, errlen) || write_transfers(&c, err, errlen) ||
        sqlite3_exec(c.db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        if (c.batch || c.one) done_rows(&c);
        else if (c.st) sqlite3_finalize(c.st);
        if (!*err) snprintf(err, errlen, "cannot commit %s: %s", tmp, sqlite3_errmsg(c.db));
        sqlite3_close(c.db);
        unlink(tmp);
        return -1;
    }
    if (sqlite3_close(c.db) != SQLITE_OK) {
        snprintf(err, errlen, "cannot close %s", tmp);
        unlink(tmp);
        return -1;
    }
    if (rename(tmp, path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

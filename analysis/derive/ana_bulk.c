/*
 * ana_bulk.c - bulk inserts for the derived tables: many rows per INSERT,
 * stepped on a second thread.
 *
 * ana_derive writes millions of rows (a row per wait label, per waking
 * event, per write of a named word, per ring counter change). Stepping a
 * one-row INSERT costs a VDBE run, a reset and their bookkeeping per row;
 * one INSERT of ANA_BULK_ROWS rows pays that once per statement, which
 * roughly halves the cost of a row. Values are collected into a buffer of
 * ANA_BULK_BUF rows (ints, NULLs, static text, or text copied into the
 * row's own slot); a full buffer is handed to the writer thread, which
 * binds and steps it while the events pass fills the table's other buffer,
 * so decoding and classifying overlap with SQLite's work. The writer (the
 * recorder's rec_worker) has one job in flight: handing over a buffer waits
 * for the previous job (of any table), so the buffer a table fills next is
 * never the one being stepped, and everything a job wrote is visible after
 * the wait. Until its buffer is handed over a row can still be changed
 * (ana_bulk_patch): word_writes fills in a value that a later event
 * reveals that way without an UPDATE. Without a writer (NULL) buffers are
 * stepped in line.
 *
 * Packed mode (ana_bulk_open_packed, ana_pack.h) keeps all of that but
 * what a handed-over buffer becomes: its rows are copied column by column
 * into the table's chunk being built, and a full chunk (ANA_PACK_ROWS
 * rows) is the writer's job, encoded, compressed and inserted as one row
 * of the shadow table. Two chunks per table: one in the writer's hands, one
 * filling, never the whole table.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/ana_steps.h"

/* ------------------------------------------------------------ bulk tables */

int ana_bulk_open(ana_bulk *b, sqlite3 *db, const char *table, int cols, rec_worker *wr,
                  char *err, size_t errlen) {
    *b = (ana_bulk){.db = db, .table = table, .cols = cols, .wr = wr, .err = err,
                    .errlen = errlen};
    if (cols <= 0 || cols > ANA_BULK_MAX_COLS) {
        ana_err(err, errlen, "bulk insert into %s: %d columns is too many", table, cols);
        return -1;
    }
    b->buf[0] = calloc(1, sizeof *b->buf[0]);
    b->buf[1] = calloc(1, sizeof *b->buf[1]);
    b->cur = b->buf[0];
    size_t len = 64 + strlen(table) + ANA_BULK_ROWS * (3 + 2 * (size_t)cols);
    char *sql = malloc(len);
    if (!sql || !b->buf[0] || !b->buf[1]) {
        free(sql);
        ana_err(err, errlen, "out of memory preparing inserts into %s", table);
        ana_bulk_close(b);
        return -1;
    }
    for (int pass = 0; pass < 2; pass++) {
        int rows = pass == 0 ? ANA_BULK_ROWS : 1;
        size_t n = (size_t)snprintf(sql, len, "INSERT INTO %s VALUES", table);
        for (int r = 0; r < rows; r++) {
            sql[n++] = r ? ',' : ' ';
            sql[n++] = '(';
            for (int c = 0; c < cols; c++) {
                if (c) sql[n++] = ',';
                sql[n++] = '?';
            }
            sql[n++] = ')';
        }
        sql[n] = 0;
        sqlite3_stmt **st = pass == 0 ? &b->many : &b->one;
        if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK) {
            ana_err(err, errlen, "index.db: %s (preparing inserts into %s)", sqlite3_errmsg(db),
                    table);
            free(sql);
            ana_bulk_close(b);
            return -1;
        }
    }
    free(sql);
    return 0;
}

/* *st: the insert fmt (%w: the table's name) into one of b's shadow
 * tables; -1 with b's err. */
static int prepare_shadow(ana_bulk *b, sqlite3_stmt **st, const char *what, const char *fmt) {
    char *sql = sqlite3_mprintf(fmt, b->table);
    int rc = sql ? sqlite3_prepare_v2(b->db, sql, -1, st, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc == SQLITE_OK) return 0;
    ana_err(b->err, b->errlen, "index.db: %s (preparing the %s of %s)",
            rc == SQLITE_NOMEM ? "out of memory" : sqlite3_errmsg(b->db), what, b->table);
    return -1;
}

int ana_bulk_open_packed(ana_bulk *b, sqlite3 *db, const char *table, int cols, int key_col,
                         rec_worker *wr, char *err, size_t errlen) {
    *b = (ana_bulk){.db = db, .table = table, .cols = cols, .wr = wr, .err = err,
                    .errlen = errlen, .packed = 1, .key_col = key_col, .last_key = INT64_MIN};
    if (cols <= 0 || cols > ANA_BULK_MAX_COLS || key_col < 0 || key_col >= cols) {
        ana_err(err, errlen, "packed table %s: %d columns, key %d", table, cols, key_col);
        return -1;
    }
    b->buf[0] = calloc(1, sizeof *b->buf[0]);
    b->cur = b->buf[0];
    for (int i = 0; i < 2; i++) {
        b->pk[i] = calloc(1, sizeof *b->pk[i]);
        if (!b->pk[i] || ana_pack_init(b->pk[i], cols, ANA_PACK_ROWS)) {
            free(b->pk[i]);
            b->pk[i] = NULL;
        }
    }
    if (!b->buf[0] || !b->pk[0] || !b->pk[1]) {
        ana_err(err, errlen, "out of memory preparing the chunks of %s", table);
        ana_bulk_close(b);
        return -1;
    }
    if (prepare_shadow(b, &b->put_chunk, "chunks",
                       "INSERT INTO \"%w_packed\"(first, last, rows, data) VALUES(?1, ?2, ?3, ?4)") ||
        prepare_shadow(b, &b->put_patch, "patches",
                       "INSERT OR REPLACE INTO \"%w_packed_patch\"(key, col, value)"
                       " VALUES(?1, ?2, ?3)")) {
        ana_bulk_close(b);
        return -1;
    }
    return 0;
}

void ana_bulk_text_copy(ana_bulk *b, const char *s) {
    char *dst = b->cur->text[b->rows];
    size_t n = strlen(s);
    if (n >= ANA_BULK_TEXT) n = ANA_BULK_TEXT - 1;
    memcpy(dst, s, n);
    dst[n] = 0;
    int p = b->rows * b->cols + b->col++;
    b->cur->type[p] = SQLITE_TEXT;
    b->cur->tval[p] = dst;
}

/* Binds rows [first, first + rows) of buffer f onto st from parameter 1. */
static void bind_rows(ana_bulk *b, const ana_bulk_buf *f, sqlite3_stmt *st, int first,
                      int rows) {
    for (int i = 0; i < rows * b->cols; i++) {
        int p = first * b->cols + i;
        switch (f->type[p]) {
        case SQLITE_INTEGER: sqlite3_bind_int64(st, i + 1, f->ival[p]); break;
        case SQLITE_TEXT: sqlite3_bind_text(st, i + 1, f->tval[p], -1, SQLITE_STATIC); break;
        default: sqlite3_bind_null(st, i + 1); break;
        }
    }
}

/* The job: inserts the first rows rows of buffer which (either thread). */
static void step_buffer(ana_bulk *b, int which, int rows);

static void step_job(void *arg) {
    ana_bulk *b = arg;
    step_buffer(b, b->job_buf, b->job_rows);
}

static void step_buffer(ana_bulk *b, int which, int rows) {
    ana_bulk_buf *f = b->buf[which];
    for (int r = 0; r < rows && !f->failed;) {
        int n = rows - r >= ANA_BULK_ROWS ? ANA_BULK_ROWS : 1;
        sqlite3_stmt *st = n > 1 ? b->many : b->one;
        bind_rows(b, f, st, r, n);
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            f->failed = 1;
            snprintf(f->errmsg, sizeof f->errmsg, "index.db: inserting into %s: %s", b->table,
                     sqlite3_errmsg(b->db));
        }
        r += n;
    }
}

/* The job of packed mode: chunk pk[pk_job] into the shadow table. */
static void chunk_job(void *arg) {
    ana_bulk *b = arg;
    ana_pack_chunk *c = b->pk[b->pk_job];
    if (b->pk_failed || !c->rows) return;
    void *z = NULL;
    size_t zn = 0;
    const ana_pack_col *key = &c->col[b->key_col];
    if (ana_pack_encode(c, &z, &zn, b->pk_err, sizeof b->pk_err)) {
        b->pk_failed = 1;
        return;
    }
    sqlite3_bind_int64(b->put_chunk, 1, key->val[0]);
    sqlite3_bind_int64(b->put_chunk, 2, key->val[c->rows - 1]);
    sqlite3_bind_int64(b->put_chunk, 3, (sqlite3_int64)c->rows);
    sqlite3_bind_blob(b->put_chunk, 4, z, (int)zn, free);
    if (sqlite3_step(b->put_chunk) != SQLITE_DONE) {
        b->pk_failed = 1;
        snprintf(b->pk_err, sizeof b->pk_err, "index.db: storing a chunk of %s: %s", b->table,
                 sqlite3_errmsg(b->db));
    }
    sqlite3_reset(b->put_chunk);
    sqlite3_clear_bindings(b->put_chunk);
}

/* Hands the chunk being built to the writer (in line without one). */
static int send_chunk(ana_bulk *b) {
    rec_worker_wait(b->wr);
    if (b->pk_failed) {
        ana_err(b->err, b->errlen, "%s", b->pk_err);
        return -1;
    }
    b->pk_job = b->pk_cur;
    if (b->wr) rec_worker_submit(b->wr, chunk_job, b);
    else chunk_job(b);
    b->pk_cur = !b->pk_cur;
    /* the writer is done with this one: it was the job before the last */
    ana_pack_reset(b->pk[b->pk_cur]);
    return 0;
}

/* Packed mode's hand-over: the buffer's rows copied into the chunk. */
static int pack_rows(ana_bulk *b) {
    const ana_bulk_buf *f = b->cur;
    for (int r = 0; r < b->rows; r++) {
        ana_pack_chunk *c = b->pk[b->pk_cur];
        int bad = 0;
        for (int col = 0; col < b->cols && !bad; col++) {
            int p = r * b->cols + col;
            switch (f->type[p]) {
            case SQLITE_INTEGER: bad = ana_pack_put_int(c, col, f->ival[p]); break;
            case SQLITE_TEXT: bad = ana_pack_put_text(c, col, f->tval[p]); break;
            default: bad = ana_pack_put_null(c, col); break;
            }
        }
        int kp = r * b->cols + b->key_col;
        if (bad || f->type[kp] != SQLITE_INTEGER || f->ival[kp] <= b->last_key) {
            ana_err(b->err, b->errlen, "packed table %s: %s", b->table,
                    bad ? "out of memory, or text in a column of integers"
                        : "a row's key is not above the previous one");
            return -1;
        }
        b->last_key = f->ival[kp];
        ana_pack_row_done(c);
        if (c->rows == ANA_PACK_ROWS && send_chunk(b)) return -1;
    }
    b->rows = 0;
    return 0;
}

/* Sends the rows of the buffer being filled and starts the other one,
 * whose previous job has finished (see the top of the file). */
static int hand_over(ana_bulk *b) {
    if (b->packed) return pack_rows(b);
    int which = b->cur == b->buf[0] ? 0 : 1;
    if (b->wr) {
        /* the job's arguments live in b: the previous job (maybe this
         * table's own) must be done reading them */
        rec_worker_wait(b->wr);
        b->job_buf = which;
        b->job_rows = b->rows;
        rec_worker_submit(b->wr, step_job, b);
    } else {
        step_buffer(b, which, b->rows);
    }
    b->cur = b->buf[!which];
    b->rows = 0;
    if (b->cur->failed || (!b->wr && b->buf[which]->failed)) {
        ana_err(b->err, b->errlen, "%s",
                b->cur->failed ? b->cur->errmsg : b->buf[which]->errmsg);
        return -1;
    }
    return 0;
}

int ana_bulk_row_done(ana_bulk *b, int64_t key) {
    b->cur->key[b->rows] = key;
    b->col = 0;
    b->total++;
    if (++b->rows < ANA_BULK_BUF) return 0;
    return hand_over(b);
}

/* Row with that key among those not handed over yet, or -1. */
static int bulk_find(const ana_bulk *b, int64_t key) {
    for (int r = b->rows; r-- > 0;)
        if (b->cur->key[r] == key) return r;
    return -1;
}

static void bulk_set_int(ana_bulk *b, int row, int col, int64_t v) {
    int p = row * b->cols + col;
    b->cur->type[p] = SQLITE_INTEGER;
    b->cur->ival[p] = v;
}

int ana_bulk_patch(ana_bulk *b, int64_t key, int col, int64_t v) {
    int row = bulk_find(b, key);
    if (row >= 0) {
        bulk_set_int(b, row, col, v);
        return 0;
    }
    ana_pack_chunk *c = b->pk[b->pk_cur];
    const int64_t *keys = c->col[b->key_col].val;
    size_t lo = 0, hi = c->rows;
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (keys[m] < key) lo = m + 1;
        else hi = m;
    }
    if (lo < c->rows && keys[lo] == key && !c->col[col].is_text) {
        c->col[col].val[lo] = v;
        c->col[col].null[lo] = 0;
        return 0;
    }
    /* stored already (or on its way: wait for it, the patch must follow) */
    rec_worker_wait(b->wr);
    sqlite3_bind_int64(b->put_patch, 1, key);
    sqlite3_bind_int(b->put_patch, 2, col);
    sqlite3_bind_int64(b->put_patch, 3, v);
    int rc = sqlite3_step(b->put_patch);
    sqlite3_reset(b->put_patch);
    if (rc != SQLITE_DONE) {
        ana_err(b->err, b->errlen, "index.db: patching %s: %s", b->table, sqlite3_errmsg(b->db));
        return -1;
    }
    return 0;
}

int ana_bulk_finish(ana_bulk *b) {
    int rc = b->rows ? hand_over(b) : 0;
    if (b->packed) {
        if (!rc && b->pk[b->pk_cur]->rows) rc = send_chunk(b);
        rec_worker_wait(b->wr);
        if (!rc && b->pk_failed) {
            ana_err(b->err, b->errlen, "%s", b->pk_err);
            rc = -1;
        }
        return rc;
    }
    rec_worker_wait(b->wr);
    for (int i = 0; i < 2 && !rc; i++) {
        if (b->buf[i]->failed) {
            ana_err(b->err, b->errlen, "%s", b->buf[i]->errmsg);
            rc = -1;
        }
    }
    return rc;
}

void ana_bulk_close(ana_bulk *b) {
    rec_worker_wait(b->wr);
    sqlite3_finalize(b->many);
    sqlite3_finalize(b->one);
    sqlite3_finalize(b->put_chunk);
    sqlite3_finalize(b->put_patch);
    b->many = b->one = b->put_chunk = b->put_patch = NULL;
    for (int i = 0; i < 2; i++) {
        if (b->pk[i]) ana_pack_free(b->pk[i]);
        free(b->pk[i]);
        b->pk[i] = NULL;
    }
    free(b->buf[0]);
    free(b->buf[1]);
    b->buf[0] = b->buf[1] = b->cur = NULL;
}

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
 * the wait. Until its
 * buffer is handed over a row can still be changed (ana_bulk_find,
 * ana_bulk_set_int): word_writes fills in a value that a later event
 * reveals that way without an UPDATE. Without a writer (NULL) buffers are
 * stepped in line.
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

/* Sends the rows of the buffer being filled and starts the other one,
 * whose previous job has finished (see the top of the file). */
static int hand_over(ana_bulk *b) {
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

int ana_bulk_find(const ana_bulk *b, int64_t key) {
    for (int r = b->rows; r-- > 0;)
        if (b->cur->key[r] == key) return r;
    return -1;
}

void ana_bulk_set_int(ana_bulk *b, int row, int col, int64_t v) {
    int p = row * b->cols + col;
    b->cur->type[p] = SQLITE_INTEGER;
    b->cur->ival[p] = v;
}

int ana_bulk_finish(ana_bulk *b) {
    int rc = b->rows ? hand_over(b) : 0;
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
    b->many = b->one = NULL;
    free(b->buf[0]);
    free(b->buf[1]);
    b->buf[0] = b->buf[1] = b->cur = NULL;
}

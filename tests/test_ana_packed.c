/*
 * test_ana_packed.c - packed derived tables (analysis/derive/ana_pack.h):
 * the chunk encoding round-trips every value a column can hold and
 * refuses damaged bytes; the npurr_packed table reads back what ana_bulk
 * wrote, in key order, and serves key lookups, key ranges and key-ordered
 * joins from the chunks they need only; ana_packed_read.c reads the same
 * rows without SQL (columns by name, in any order, NULLs, texts and
 * patches as the table gives them), says 1 for a table that is not
 * packed and refuses a column the table lacks.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "analysis/derive/ana_pack.h"
#include "analysis/derive/ana_steps.h"

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void) {
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static const char *const words[] = {"PIPE_MTE2", "PIPE_MTE3", "rdma_write", "", "a longer text"};

static void test_chunk_roundtrip(void **state) {
    (void)state;
    enum { ROWS = 5000 };
    ana_pack_chunk c, d;
    assert_int_equal(ana_pack_init(&c, 4, ROWS), 0);
    memset(&d, 0, sizeof d);
    static int64_t want[ROWS][3];
    static int text[ROWS];
    for (size_t r = 0; r < ROWS; r++) {
        want[r][0] = (int64_t)r * 7 + 1;                       /* a key */
        want[r][1] = r % 13 == 0 ? INT64_MIN : r % 17 == 0 ? INT64_MAX : (int64_t)rnd();
        want[r][2] = r % 3 == 0 ? -1 : (int64_t)(rnd() % 100) - 50;   /* -1: NULL */
        text[r] = (int)(rnd() % 5);
        assert_int_equal(ana_pack_put_int(&c, 0, want[r][0]), 0);
        assert_int_equal(ana_pack_put_int(&c, 1, want[r][1]), 0);
        if (want[r][2] == -1) assert_int_equal(ana_pack_put_null(&c, 2), 0);
        else assert_int_equal(ana_pack_put_int(&c, 2, want[r][2]), 0);
        assert_int_equal(ana_pack_put_text(&c, 3, words[text[r]]), 0);
        ana_pack_row_done(&c);
    }
    /* a column of integers takes no text */
    assert_int_equal(ana_pack_put_text(&c, 1, "x"), -1);
    void *z = NULL;
    size_t zn = 0;
    char err[256];
    assert_int_equal(ana_pack_encode(&c, &z, &zn, err, sizeof err), 0);
    assert_true(zn < (size_t)ROWS * 12);   /* 4 columns well under 3 bytes each */
    if (ana_pack_decode(&d, 4, ~0u, z, zn, err, sizeof err)) fail_msg("decode: %s", err);
    assert_int_equal(d.rows, ROWS);
    for (size_t r = 0; r < ROWS; r++) {
        assert_int_equal(d.col[0].val[r], want[r][0]);
        assert_int_equal(d.col[1].val[r], want[r][1]);
        assert_int_equal(d.col[2].null[r], want[r][2] == -1);
        if (want[r][2] != -1) assert_int_equal(d.col[2].val[r], want[r][2]);
        assert_true(d.col[3].is_text);
        int64_t code = d.col[3].val[r];
        if (!*words[text[r]]) {
            assert_int_equal(code, 0);   /* "" is NULL, as ana_bulk_text binds it */
        } else {
            assert_true(code > 0);
            assert_string_equal(d.col[3].text[code - 1], words[text[r]]);
        }
    }
    /* one column alone: it (and what it is encoded against) is decoded */
    ana_pack_chunk one;
    memset(&one, 0, sizeof one);
    if (ana_pack_decode(&one, 4, 1u << 2, z, zn, err, sizeof err)) fail_msg("decode: %s", err);
    assert_true(one.decoded & 1u << 2);
    assert_false(one.decoded & 1u << 3);
    for (size_t r = 0; r < ROWS; r++)
        if (want[r][2] != -1) assert_int_equal(one.col[2].val[r], want[r][2]);
    ana_pack_free(&one);
    /* the wrong column count, a cut frame and damaged bytes are refused */
    assert_int_equal(ana_pack_decode(&d, 3, ~0u, z, zn, err, sizeof err), -1);
    assert_int_equal(ana_pack_decode(&d, 4, ~0u, z, zn / 2, err, sizeof err), -1);
    free(z);
    const uint8_t junk[] = {0x28, 0xb5, 0x2f, 0xfd, 0x20, 0x04, 0x21, 0x00, 0x00,
                            0x05, 0x04, 0x07, 0x09};
    assert_int_equal(ana_pack_decode(&d, 4, ~0u, junk, sizeof junk, err, sizeof err), -1);
    ana_pack_free(&c);
    ana_pack_free(&d);
}

/* ------------------------------------------------------------ the table */

enum { NROWS = 100000 };   /* ids 1, 4, 7, ...: four chunks of ANA_PACK_ROWS */

static int64_t id_of(int i) { return 3 * (int64_t)i + 1; }

static char err[512];   /* the bulk writers' errors */

/* An in-memory database with the module, table made packed with columns
 * (key first) and b open on it. */
static sqlite3 *open_packed(const char *table, const char *key, const char *columns,
                            int ncols, ana_bulk *b) {
    sqlite3 *db = NULL;
    err[0] = 0;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    if (ana_packed_register(db, err, sizeof err) ||
        ana_create_packed(db, table, key, columns, err, sizeof err) ||
        ana_bulk_open_packed(b, db, table, ncols, 0, NULL, err, sizeof err))
        fail_msg("%s", err);
    return db;
}


static sqlite3 *packed_db(void) {
    ana_bulk b;
    sqlite3 *db = open_packed("t", "id", "id INTEGER, v INT, s TEXT", 3, &b);
    for (int i = 0; i < NROWS; i++) {
        ana_bulk_int(&b, id_of(i));
        if (i % 10 == 0) ana_bulk_null(&b);
        else ana_bulk_int(&b, i);
        ana_bulk_text(&b, words[i % 5]);
        if (ana_bulk_row_done(&b, 0)) fail_msg("%s", err);
    }
    if (ana_bulk_finish(&b)) fail_msg("%s", err);
    ana_bulk_close(&b);
    return db;
}

static int64_t q(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Chunks decoded while sql runs. */
static uint64_t decoded_by(sqlite3 *db, const char *sql, int64_t *result) {
    uint64_t before = ana_packed_chunks_decoded();
    *result = q(db, sql);
    return ana_packed_chunks_decoded() - before;
}

static void test_table_reads_back(void **state) {
    (void)state;
    sqlite3 *db = packed_db();
    assert_int_equal(q(db, "SELECT COUNT(*) FROM t_packed"), (NROWS + ANA_PACK_ROWS - 1) /
                                                                 ANA_PACK_ROWS);
    assert_int_equal(q(db, "SELECT COUNT(*) FROM t"), NROWS);
    int64_t sum = 0, nulls = 0;
    for (int i = 0; i < NROWS; i++) {
        if (i % 10) sum += i;
        else nulls++;
    }
    assert_int_equal(q(db, "SELECT SUM(v) FROM t"), sum);
    assert_int_equal(q(db, "SELECT COUNT(*) FROM t WHERE v IS NULL"), nulls);
    assert_int_equal(q(db, "SELECT COUNT(*) FROM t WHERE s IS NULL"), NROWS / 5);
    assert_int_equal(q(db, "SELECT COUNT(*) FROM t WHERE s = 'rdma_write'"), NROWS / 5);
    assert_int_equal(q(db, "SELECT typeof(s) = 'text' AND typeof(id) = 'integer' FROM t"
                           " WHERE id = 4"), 1);
    /* rows come in key order without being asked, and rowid is the key */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT id, rowid FROM t", -1, &st, NULL),
                     SQLITE_OK);
    int i = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        assert_int_equal(sqlite3_column_int64(st, 0), id_of(i));
        assert_int_equal(sqlite3_column_int64(st, 1), id_of(i));
        i++;
    }
    assert_int_equal(i, NROWS);
    sqlite3_finalize(st);
    /* the declared types are the old table's */
    assert_int_equal(q(db, "SELECT COUNT(*) FROM pragma_table_info('t') WHERE"
                           " (name, type) IN (VALUES ('id', 'INTEGER'), ('v', 'INT'),"
                           " ('s', 'TEXT'))"), 3);
    /* dropping the table drops its chunks */
    assert_int_equal(sqlite3_exec(db, "DROP TABLE t", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(q(db, "SELECT COUNT(*) FROM sqlite_schema WHERE name = 't_packed'"), 0);
    sqlite3_close(db);
}

static void test_key_constraints_prune_chunks(void **state) {
    (void)state;
    sqlite3 *db = packed_db();
    int64_t v;
    int last = NROWS - 1;
    char sql[256];
    /* one key: one chunk (the last one, to show it was not a scan) */
    snprintf(sql, sizeof sql, "SELECT v FROM t WHERE id = %lld", (long long)id_of(last));
    assert_int_equal(decoded_by(db, sql, &v), 1);
    assert_int_equal(v, last);
    snprintf(sql, sizeof sql, "SELECT v FROM t WHERE rowid = %lld", (long long)id_of(last - 1));
    assert_int_equal(decoded_by(db, sql, &v), 1);
    assert_int_equal(v, last - 1);
    /* no such key: a key between two rows, and one past the end */
    assert_int_equal(decoded_by(db, "SELECT COUNT(*) FROM t WHERE id = 5", &v), 1);
    assert_int_equal(v, 0);
    assert_int_equal(decoded_by(db, "SELECT COUNT(*) FROM t WHERE id > 1e12", &v), 0);
    assert_int_equal(v, 0);
    /* a range inside the second chunk, with both bounds' kinds */
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM t WHERE id >= %lld AND id < %lld",
             (long long)id_of(ANA_PACK_ROWS + 10), (long long)id_of(ANA_PACK_ROWS + 110));
    assert_int_equal(decoded_by(db, sql, &v), 1);
    assert_int_equal(v, 100);
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM t WHERE id > %lld AND id <= %lld",
             (long long)id_of(ANA_PACK_ROWS + 10), (long long)id_of(ANA_PACK_ROWS + 110));
    assert_int_equal(decoded_by(db, sql, &v), 1);
    assert_int_equal(v, 100);
    /* a range across the second and third chunks, with a real bound */
    snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM t WHERE id BETWEEN %lld.5 AND %lld",
             (long long)id_of(ANA_PACK_ROWS - 1), (long long)id_of(2 * ANA_PACK_ROWS + 5));
    assert_int_equal(decoded_by(db, sql, &v), 2);
    assert_int_equal(v, ANA_PACK_ROWS + 6);
    /* keys probed in order by a join decode each chunk they touch once */
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE p(k INTEGER PRIMARY KEY)", NULL, NULL, NULL),
                     SQLITE_OK);
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999)"
             " INSERT INTO p SELECT 3 * (i * 50) + 1 FROM n");
    assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(decoded_by(db, "SELECT COUNT(*) FROM p JOIN t ON t.id = p.k", &v), 2);
    assert_int_equal(v, 1000);
    /* ORDER BY the key needs no sort */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "EXPLAIN QUERY PLAN SELECT * FROM t ORDER BY id",
                                        -1, &st, NULL), SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        assert_null(strstr((const char *)sqlite3_column_text(st, 3), "TEMP B-TREE"));
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_keys_must_rise(void **state) {
    (void)state;
    ana_bulk b;
    sqlite3 *db = open_packed("t", "id", "id INTEGER, v INT", 2, &b);
    int rc = 0;
    for (int i = 0; i < 3000 && !rc; i++) {
        ana_bulk_int(&b, i == 2000 ? 5 : i + 1);
        ana_bulk_int(&b, i);
        rc = ana_bulk_row_done(&b, 0);
    }
    if (!rc) rc = ana_bulk_finish(&b);
    ana_bulk_close(&b);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "not above the previous"));
    sqlite3_close(db);
}

/* w(seq, value): seqs 1..34000, values NULL but three learnt late: 5 (its
 * row stored in the first chunk by then), 33000 (in the chunk being
 * built) and 34000 (still in the buffer). */
static sqlite3 *patched_db(void) {
    ana_bulk b;
    sqlite3 *db = open_packed("w", "seq", "seq INTEGER, value INT", 2, &b);
    for (int i = 1; i <= 34000; i++) {
        ana_bulk_int(&b, i);
        ana_bulk_null(&b);
        if (ana_bulk_row_done(&b, i)) fail_msg("%s", err);
    }
    assert_int_equal(ana_bulk_patch(&b, 5, 1, 50), 0);
    assert_int_equal(ana_bulk_patch(&b, 33000, 1, 330), 0);
    assert_int_equal(ana_bulk_patch(&b, 34000, 1, 340), 0);
    if (ana_bulk_finish(&b)) fail_msg("%s", err);
    ana_bulk_close(&b);
    return db;
}

/* A value learnt late reaches its row wherever the row is by then. */
static void test_patches(void **state) {
    (void)state;
    sqlite3 *db = patched_db();
    assert_int_equal(q(db, "SELECT COUNT(*) FROM w_packed_patch"), 1);
    assert_int_equal(q(db, "SELECT COUNT(*) FROM w WHERE value IS NOT NULL"), 3);
    assert_int_equal(q(db, "SELECT value FROM w WHERE seq = 5"), 50);
    assert_int_equal(q(db, "SELECT value FROM w WHERE seq = 33000"), 330);
    assert_int_equal(q(db, "SELECT value FROM w WHERE seq = 34000"), 340);
    assert_int_equal(q(db, "SELECT SUM(value) FROM w"), 720);
    sqlite3_close(db);
}

/* Reads t's columns s, id and v (not their table order) chunk by chunk:
 * every row, in key order, as SQL gives them. */
static void test_reader_reads_every_row(void **state) {
    (void)state;
    sqlite3 *db = packed_db();
    const char *cols[] = {"s", "id", "v"};
    ana_packed_reader *r = NULL;
    assert_int_equal(ana_packed_open(db, "t", cols, 3, &r, err, sizeof err), 0);
    ana_packed_view v;
    int rc, chunks = 0;
    size_t i = 0;
    while ((rc = ana_packed_next(r, &v, err, sizeof err)) > 0) {
        chunks++;
        assert_true(v.is_text[0]);
        assert_false(v.is_text[1]);
        for (size_t row = 0; row < v.rows; row++, i++) {
            assert_int_equal(v.val[1][row], id_of((int)i));
            assert_false(v.null[1][row]);
            assert_int_equal(v.null[2][row], i % 10 == 0);
            if (i % 10) assert_int_equal(v.val[2][row], (int64_t)i);
            const char *w = words[i % 5];
            int64_t code = v.val[0][row];
            if (!*w) {   /* '' was stored as NULL: the SQL view says so too */
                assert_int_equal(code, 0);
            } else {
                assert_true(code > 0 && code <= (int64_t)v.ntext[0]);
                assert_string_equal(v.text[0][code - 1], w);
            }
        }
    }
    assert_int_equal(rc, 0);
    assert_int_equal(i, NROWS);
    assert_int_equal(chunks, (NROWS + ANA_PACK_ROWS - 1) / ANA_PACK_ROWS);
    ana_packed_close(r);
    sqlite3_close(db);
}

static void test_reader_refusals_and_patches(void **state) {
    (void)state;
    sqlite3 *db = patched_db();
    const char *cols[] = {"value"};
    ana_packed_reader *r = NULL;
    assert_int_equal(ana_packed_open(db, "w", cols, 1, &r, err, sizeof err), 0);
    ana_packed_view v;
    int64_t sum = 0;
    size_t nulls = 0;
    int rc;
    while ((rc = ana_packed_next(r, &v, err, sizeof err)) > 0)
        for (size_t row = 0; row < v.rows; row++) {
            if (v.null[0][row]) nulls++;
            else sum += v.val[0][row];
        }
    assert_int_equal(rc, 0);
    assert_int_equal(sum, 720);   /* the stored chunk's patch applied, like the others */
    assert_int_equal(nulls, 34000 - 3);
    ana_packed_close(r);

    const char *missing[] = {"value", "nope"};
    err[0] = 0;
    assert_int_equal(ana_packed_open(db, "w", missing, 2, &r, err, sizeof err), -1);
    assert_null(r);
    assert_non_null(strstr(err, "no column nope"));
    assert_int_equal(sqlite3_exec(db, "CREATE TABLE plain(seq INTEGER, value INT)", NULL, NULL,
                                  NULL), SQLITE_OK);
    assert_int_equal(ana_packed_open(db, "plain", cols, 1, &r, err, sizeof err), 1);
    assert_null(r);
    sqlite3_close(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunk_roundtrip),
        cmocka_unit_test(test_table_reads_back),
        cmocka_unit_test(test_key_constraints_prune_chunks),
        cmocka_unit_test(test_keys_must_rise),
        cmocka_unit_test(test_patches),
        cmocka_unit_test(test_reader_reads_every_row),
        cmocka_unit_test(test_reader_refusals_and_patches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

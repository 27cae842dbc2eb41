/*
 * test_timeline_lookup.c - what the export's waits look up instead of
 * joining per row (analysis/present/ana_timeline_lookup.c), against plain
 * tables in memory: wait labels asked for in order, out of order (a probe,
 * which runs from the recorder never need), twice, and for a wait with no
 * label; wake events found by seq whatever order the table gives them in,
 * and named as the old join named them (NULL xfer, NULL or unknown
 * object); a track's pipe, and PIPE_S for a track not in the table. The
 * whole export is pinned end to end in tests/e2e/export_perfetto.sh.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/present/ana_timeline.h"

static sqlite3 *db_with(const char *sql) {
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(":memory:", &db), SQLITE_OK);
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) fail_msg("%s", msg);
    return db;
}

static void expect_label(tl_labels *l, int64_t seq, const char *want) {
    const char *got = NULL;
    char err[256] = "";
    assert_int_equal(tl_labels_get(l, seq, &got, err, sizeof err), 0);
    if (want) assert_string_equal(got, want);
    else assert_null(got);
}

static void test_labels(void **state) {
    (void)state;
    sqlite3 *db = db_with("CREATE TABLE wait_labels(begin_seq INTEGER PRIMARY KEY, label TEXT);"
                          "INSERT INTO wait_labels VALUES (3, 'ring a'), (5, 'flag b'),"
                          " (9, NULL), (12, 'tail c');");
    tl_labels l;
    char err[256] = "";
    assert_int_equal(tl_labels_open(db, &l, err, sizeof err), 0);
    expect_label(&l, 1, NULL);         /* before the first */
    expect_label(&l, 3, "ring a");
    expect_label(&l, 3, "ring a");     /* asked again */
    expect_label(&l, 4, NULL);         /* between two */
    expect_label(&l, 9, NULL);         /* a NULL label */
    expect_label(&l, 5, "flag b");     /* out of order: probed */
    expect_label(&l, 12, "tail c");    /* and back in order */
    expect_label(&l, 3, "ring a");
    expect_label(&l, 40, NULL);        /* past the last */
    expect_label(&l, 41, NULL);
    tl_labels_close(&l);
    sqlite3_close(db);
}

static void test_labels_missing_table(void **state) {
    (void)state;
    sqlite3 *db = db_with("CREATE TABLE other(x);");
    tl_labels l;
    char err[256] = "";
    assert_int_equal(tl_labels_open(db, &l, err, sizeof err), -1);
    assert_non_null(strstr(err, "wait_labels"));
    sqlite3_close(db);
}

static void test_wakes(void **state) {
    (void)state;
    /* rowids out of seq order: the loader must not trust the scan's order */
    sqlite3 *db = db_with(
        "CREATE TABLE objects(id INTEGER PRIMARY KEY, name TEXT);"
        "INSERT INTO objects VALUES (1, 'ring_x.tail'), (2, NULL);"
        "CREATE TABLE wake_events(seq INT, time_ps INT, rank INT, core INT, pipe TEXT,"
        " kind TEXT, xfer TEXT, object INT, link INT);"
        "INSERT INTO wake_events VALUES (70, 7000, 1, 4, 'MTE3', 'xfer_done', 'mte3', 1, NULL),"
        " (20, 2000, 0, 2, NULL, 'atomic', NULL, NULL, NULL),"
        " (50, 5000, NULL, 3, 'S', NULL, NULL, 2, NULL),"
        " (90, 9000, 1, 5, 'MTE2', 'xfer_done', 'mte3', 1, NULL),"
        " (95, 9500, 1, 5, 'MTE2', 'xfer_done', 'mte3', 8, NULL);");
    tl_wakes w;
    char err[256] = "", name[200];
    assert_int_equal(tl_wakes_load(db, &w, err, sizeof err), 0);
    assert_int_equal(w.n, 5);
    assert_null(tl_wakes_find(&w, 19));
    assert_null(tl_wakes_find(&w, 96));
    assert_null(tl_wakes_find(&w, 60));

    const tl_wake *e = tl_wakes_find(&w, 70);
    assert_non_null(e);
    assert_int_equal(e->time_ps, 7000);
    assert_int_equal(e->rank, 1);
    assert_int_equal(e->core, 4);
    assert_int_equal(e->pipe, ana_pipe_from_text("MTE3"));
    tl_wake_name(&w, e, name, sizeof name);
    assert_string_equal(name, "wake: xfer_done mte3 ring_x.tail");
    /* the same parts are one shape, a different object another */
    assert_int_equal(tl_wakes_find(&w, 90)->shape, e->shape);
    assert_int_not_equal(tl_wakes_find(&w, 95)->shape, e->shape);
    tl_wake_name(&w, tl_wakes_find(&w, 95), name, sizeof name);
    assert_string_equal(name, "wake: xfer_done mte3");   /* object 8 is not in objects */

    e = tl_wakes_find(&w, 20);
    assert_int_equal(e->pipe, PIPE_S);
    tl_wake_name(&w, e, name, sizeof name);
    assert_string_equal(name, "wake: atomic");

    e = tl_wakes_find(&w, 50);
    assert_int_equal(e->rank, -1);
    tl_wake_name(&w, e, name, sizeof name);
    assert_string_equal(name, "wake: ?");                /* NULL kind, nameless object */
    tl_wakes_free(&w);
    sqlite3_close(db);
}

static void test_pipes(void **state) {
    (void)state;
    sqlite3 *db = db_with("CREATE TABLE tracks(id INTEGER PRIMARY KEY, pipe TEXT);"
                          "INSERT INTO tracks VALUES (300, 'MTE2'), (7, 'V'), (12, NULL);");
    tl_pipes p;
    char err[256] = "";
    assert_int_equal(tl_pipes_load(db, &p, err, sizeof err), 0);
    assert_int_equal(tl_pipe_of(&p, 300), ana_pipe_from_text("MTE2"));
    assert_int_equal(tl_pipe_of(&p, 7), ana_pipe_from_text("V"));
    assert_int_equal(tl_pipe_of(&p, 12), PIPE_S);
    assert_int_equal(tl_pipe_of(&p, 8), PIPE_S);
    assert_int_equal(tl_pipe_of(&p, 1000), PIPE_S);
    tl_pipes_free(&p);
    sqlite3_close(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_labels_missing_table),
        cmocka_unit_test(test_wakes),
        cmocka_unit_test(test_pipes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_recorder_engine.c - the recorder on a real emulated run.
 *
 * A tiny kernel written here against device.h (GM->UB copy, a hard-event
 * flag pair, an HCCS put to the next rank, a named GM word one core sets
 * and the others wait for) runs through engine_launch on 2 ranks with the
 * recorder installed behind a tee observer that also keeps its own copy of
 * every event. The trace must give back exactly those events, the derived
 * tables must pair them (every transfer completed, the GM waits woken by
 * the store that released them), reindex must rebuild the same index, and
 * zstd must accept the file. A second kernel deadlocks on purpose: the
 * index must record the outcome and the wait that never ended.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "npurr/device.h"
#include "recorder/recorder.h"
#include "tests/support.h"

typedef struct tiny_args {
    gm_t src, dst, flag;
} tiny_args;

#define BLOCK_BYTES 1024

static void tiny_kernel(const void *a) {
    const tiny_args *t = a;
    int rank = GetRank(), b = GetBlockIdx();
    SetRole(b == 0 ? "Releaser" : "Waiter");
    local_t ub = AllocUB(BLOCK_BYTES);
    DataCopy(ub, gm_add(gm_on_rank(t->src, rank), b * BLOCK_BYTES), BLOCK_BYTES);
    SetFlag(MTE2_MTE3, 0);
    WaitFlag(MTE2_MTE3, 0);
    int peer = (rank + 1) % GetRankSize();
    ShmemPutFromUB(gm_add(gm_on_rank(t->dst, peer), b * BLOCK_BYTES), ub, BLOCK_BYTES);
    if (b == 0) {
        ScalarCycles(2000);
        SetValue32(gm_on_rank(t->flag, rank), 1);
    } else {
        (void)WaitGM32(gm_on_rank(t->flag, rank), COND_EQ, 1);
    }
}

/* What the observer saw, event by event. */
typedef struct seen {
    engine_event *evs;
    size_t n, cap;
} seen;

static void keep_event(void *ctx, const engine_event *ev) {
    seen *t = ctx;
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 4096;
        t->evs = realloc(t->evs, t->cap * sizeof *t->evs);
    }
    t->evs[t->n++] = *ev;
}

static char g_tmp[256], g_run[300];
static seen g_seen;

static int setup(void **state) {
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/npurr_test_recorder_engine_XXXXXX");
    if (!mkdtemp(g_tmp)) return -1;
    snprintf(g_run, sizeof g_run, "%s/run", g_tmp);

    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 1;
    cfg.npus_per_node = 2;
    cfg.seed = 7;
    engine *e;
    if (engine_create(&cfg, &e, err, sizeof err)) {
        fprintf(stderr, "engine_create: %s\n", err);
        return -1;
    }
    static tiny_args args;
    int blocks = 4;
    if (engine_sym_alloc(e, blocks * BLOCK_BYTES, "src", &args.src, err, sizeof err) ||
        engine_sym_alloc(e, blocks * BLOCK_BYTES, "dst", &args.dst, err, sizeof err) ||
        engine_sym_alloc(e, 64, "flag", &args.flag, err, sizeof err)) {
        fprintf(stderr, "alloc: %s\n", err);
        return -1;
    }
    for (int r = 0; r < engine_num_ranks(e); r++) {
        uint8_t *p = engine_gm_host(e, gm_on_rank(args.src, r), blocks * BLOCK_BYTES);
        for (int i = 0; i < blocks * BLOCK_BYTES; i++) p[i] = (uint8_t)(r * 31 + i);
        engine_name_word(e, gm_on_rank(args.flag, r), 4, OBJ_FLAG, "release");
    }
    rec_run_info info = {"tiny", "test_recorder_engine", &cfg, engine_cores_per_rank(e),
                         engine_num_aic(e), engine_num_aiv(e), NULL};
    rec_writer *w;
    if (rec_open(g_run, &info, &w, err, sizeof err)) {
        fprintf(stderr, "rec_open: %s\n", err);
        return -1;
    }
    /* The setup above ran without an observer: rec_attach must catch up
     * on its strings and objects (the "release" flags are checked below).
     * The tee then takes the observer slot and forwards to the recorder. */
    rec_attach(w, e);
    static engine_tee tee;
    tee = (engine_tee){.also = {.ctx = &g_seen, .on_event = keep_event}};
    rec_observer(w, &tee.inner);
    engine_observer obs = engine_tee_observer(&tee);
    engine_set_observer(e, &obs);
    if (engine_launch(e, "tiny", tiny_kernel, &args, blocks, CORE_AIV, err, sizeof err)) {
        fprintf(stderr, "engine_launch: %s\n", err);
        return -1;
    }
    engine_result res;
    if (engine_run(e, &res, err, sizeof err)) {
        fprintf(stderr, "engine_run: %s\n", err);
        return -1;
    }
    if (res.outcome != OUTCOME_COMPLETED) {
        fprintf(stderr, "tiny kernel did not complete: %s\n", res.message);
        return -1;
    }
    if (rec_close(w, &res, "skipped", NULL, err, sizeof err)) {
        fprintf(stderr, "rec_close: %s\n", err);
        return -1;
    }
    engine_destroy(e);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(g_seen.evs);
    return support_remove_dir(g_tmp);
}

static sqlite3 *open_index(void) { return support_open_index(g_run); }

static int64_t q_i64(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static size_t count_kind(int kind) {
    size_t n = 0;
    for (size_t i = 0; i < g_seen.n; i++) n += g_seen.evs[i].kind == kind;
    return n;
}

static void test_events_table_is_what_the_observer_saw(void **state) {
    (void)state;
    assert_true(g_seen.n > 50);
    assert_int_equal(g_seen.evs[g_seen.n - 1].kind, EV_RUN_END);
    sqlite3 *db = open_index();
    char err[512];
    assert_int_equal(rec_register_events_vtab(db, g_run, err, sizeof err), 0);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "SELECT seq, time, rank, core, pipe, kind, sub, addr, len,"
                                        " value, aux, link, site, object, peer FROM events",
                                        -1, &st, NULL),
                     SQLITE_OK);
    size_t i = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        assert_true(i < g_seen.n);
        const engine_event *e = &g_seen.evs[i++];
        support_assert_event_row(st, e);
    }
    sqlite3_finalize(st);
    assert_int_equal(i, g_seen.n);

    /* The reader sees the same stream, bit for bit. */
    rec_reader *r;
    assert_int_equal(rec_reader_open(g_run, &r, err, sizeof err), 0);
    engine_event ev;
    size_t n = 0;
    while (rec_reader_next(r, &ev) == 1) {
        assert_true(n < g_seen.n);
        assert_memory_equal(&ev, &g_seen.evs[n], sizeof ev);
        n++;
    }
    assert_int_equal(n, g_seen.n);
    assert_false(rec_reader_truncated(r));
    assert_string_equal(rec_reader_meta(r, "outcome"), "completed");
    rec_reader_close(r);
    sqlite3_close(db);
}

static void test_derived_tables_pair_the_run(void **state) {
    (void)state;
    sqlite3 *db = support_open_index(support_derived_copy(g_run));
    size_t issues = count_kind(EV_XFER_ISSUE);
    assert_true(issues >= 16); /* 8 cores x (MTE2 in + HCCS put out) */
    assert_int_equal(q_i64(db, "SELECT count(*) FROM transfers"), issues);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM transfers WHERE done_seq IS NULL"), 0);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM transfers WHERE kind = 'hccs_put'"
                               " AND dst_rank = (rank + 1) % 2 AND bytes = 1024"),
                     8);
    /* Every GM wait that blocked was woken by a GM store of its own rank's
     * releaser (block 0), and its waker seq names that store. */
    size_t gm_waits = count_kind(EV_GM_WAIT_BEGIN);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits WHERE kind = 'gm'"), gm_waits);
    for (size_t i = 0; i < g_seen.n; i++) {
        const engine_event *e = &g_seen.evs[i];
        if (e->kind != EV_GM_WAIT_END || !e->link) continue;
        const engine_event *waker = &g_seen.evs[e->link - 1];
        assert_int_equal(waker->seq, e->link);
        assert_int_equal(waker->kind, EV_GM_STORE);
        assert_int_equal(waker->rank, e->rank);
    }
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits WHERE kind = 'gm' AND"
                               " (end_seq IS NULL OR role != 'Waiter')"),
                     0);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits WHERE kind = 'flag'"),
                     count_kind(EV_FLAG_WAIT_BEGIN));
    assert_int_equal(q_i64(db, "SELECT count(*) FROM tracks WHERE role = 'Releaser'") > 0, 1);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM objects WHERE kind = 'flag'"
                               " AND name = 'release'"),
                     2);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM sites WHERE file LIKE '%test_recorder_engine.c'"
                               " AND function = 'tiny_kernel'") > 3, 1);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT value FROM meta WHERE key = 'events' AND value = '%zu'",
             g_seen.n);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    sqlite3_finalize(st);
    sqlite3_close(db);
}


static void test_reindex_and_zstd(void **state) {
    (void)state;
    support_assert_reindex_identical(g_run);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "zstd -q -t '%s/trace.zst'", g_run);
    assert_int_equal(system(cmd), 0);
}

/* One core waits for a word nobody writes: the run deadlocks, and the index
 * must say so (outcome, a wait that never ended, lasting until the end). */
static void stuck_kernel(const void *a) {
    const tiny_args *t = a;
    SetRole("Stuck");
    if (GetBlockIdx() == 1) (void)WaitGM32(gm_on_rank(t->flag, GetRank()), COND_EQ, 42);
}

static void test_deadlock_is_recorded(void **state) {
    (void)state;
    char err[ENGINE_ERRLEN], dir[400];
    snprintf(dir, sizeof dir, "%s/deadlock", g_tmp);
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 1;
    cfg.npus_per_node = 1;
    engine *e;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    static tiny_args args;
    assert_int_equal(engine_sym_alloc(e, 64, "flag", &args.flag, err, sizeof err), ENGINE_OK);
    engine_name_word(e, args.flag, 4, OBJ_FLAG, "never");
    rec_run_info info = {"stuck", "test_recorder_engine stuck", &cfg, engine_cores_per_rank(e),
                         engine_num_aic(e), engine_num_aiv(e), NULL};
    rec_writer *w;
    assert_int_equal(rec_open(dir, &info, &w, err, sizeof err), 0);
    rec_attach(w, e);
    assert_int_equal(engine_launch(e, "stuck", stuck_kernel, &args, 2, CORE_AIV, err, sizeof err),
                     ENGINE_OK);
    engine_result res;
    assert_int_equal(engine_run(e, &res, err, sizeof err), ENGINE_OK);
    assert_int_equal(res.outcome, OUTCOME_DEADLOCK);
    assert_int_equal(rec_close(w, &res, "skipped", NULL, err, sizeof err), 0);
    engine_destroy(e);

    char path[500];
    snprintf(path, sizeof path, "%s/index.db", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM meta WHERE key = 'outcome'"
                               " AND value = 'deadlock'"),
                     1);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits WHERE end_seq IS NULL AND kind = 'gm'"
                               " AND role = 'Stuck' AND expected = 42 AND seen = 0"
                               " AND end_ps = (SELECT value FROM meta WHERE key = 'end_time_ps')"
                               " AND object = (SELECT id FROM objects WHERE name = 'never')"),
                     1);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits"), 1);
    sqlite3_close(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_table_is_what_the_observer_saw),
        cmocka_unit_test(test_derived_tables_pair_the_run),
        cmocka_unit_test(test_reindex_and_zstd),
        cmocka_unit_test(test_deadlock_is_recorded),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

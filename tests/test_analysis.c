/*
 * test_analysis.c - the stall table of a hand-made run, computed by hand.
 *
 * A tiny kernel written here runs two AIV cores of one rank through the
 * engine with the recorder installed: a Producer fills a ring of 2 slots
 * with 4 items (DataCopy UB->GM on MTE3, then WaitFlag(MTE3_S) until the
 * copy lands, then RingStoreTail), a Consumer drains it (RingWaitData,
 * DataCopy GM->UB on MTE2, WaitFlag(MTE2_S), 300 cycles of work,
 * RingStoreHead). The hardware parameters make every duration exact:
 * 1 GHz (1 cycle = 1000 ps), MTE 32 B/cycle and 100 ns latency, so one
 * 1024 B copy takes T = 1024 * 31.25 + 100000 = 132000 ps; scalar calls and
 * GM scalar accesses cost 0 ps; HBM is too fast to matter (1 ps per copy).
 *
 * Timeline (ps), Producer starts with 200 cycles of work (W = 200000):
 *   P  copy0 200000-332000 (flag wait), tail=1 @332000
 *   P  copy1 332000-464000 (flag wait), tail=2 @464000
 *   C  ring_data wait 0-332000 (woken by tail=1)
 *   C  copy0 332000-464000 (flag wait), work to 764000, head=1 @764000
 *   P  ring_space wait 464000-764000 (head >= 1), copy2 764000-896000, tail=3
 *   C  copy1 764000-896000 (flag wait), work to 1196000, head=2 @1196000
 *   P  ring_space wait 896000-1196000 (head >= 2), copy3 1196000-1328000
 *   C  copy2 1196000-1328000, head=3 @1628000; copy3 1628000-1760000,
 *      head=4 @2060000 = end of run
 * So: Producer 4 flag waits of 132000 + 2 ring_space waits of 300000;
 * Consumer 1 ring_data wait of 332000 + 4 flag waits of 132000.
 * Causes: flag waits transfer_slow (rule 4); ring_space flow_control (the
 * head is a plain store, level "local"); the ring_data wait producer_late
 * (the Producer waited only 132000 of those 332000 ps: under half).
 *
 * The same run then goes through the views, `npurr sql`'s printer and the
 * Chrome export, whose JSON is parsed and checked event by event here.
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

#include "analysis/analysis.h"
#include "npurr/device.h"
#include "recorder/recorder.h"
#include "tests/support.h"

#define SLOT 1024
#define ITEMS 4
#define CAP 2
#define T_COPY 132000ull
#define T_WORK 300000ull
#define T_PROLOGUE 200000ull
#define T_END 2060000ull

typedef struct ring_args {
    uint32_t ring;
    gm_t slots;
} ring_args;

static void ring_kernel(const void *a) {
    const ring_args *r = a;
    local_t ub = AllocUB(SLOT);
    if (GetBlockIdx() == 0) {
        SetRole("Producer");
        ScalarCycles(T_PROLOGUE / 1000);
        for (int i = 0; i < ITEMS; i++) {
            RingWaitSpace(r->ring, i, 1);
            DataCopy(gm_add(r->slots, (i % CAP) * SLOT), ub, SLOT);
            SetFlag(MTE3_S, 0);
            WaitFlag(MTE3_S, 0);
            RingStoreTail(r->ring, i + 1);
        }
    } else {
        SetRole("Consumer");
        for (int i = 0; i < ITEMS; i++) {
            RingWaitData(r->ring, i);
            DataCopy(ub, gm_add(r->slots, (i % CAP) * SLOT), SLOT);
            SetFlag(MTE2_S, 0);
            WaitFlag(MTE2_S, 0);
            ScalarCycles(T_WORK / 1000);
            RingStoreHead(r->ring, i + 1);
        }
    }
}

static char g_tmp[256], g_run[300];
static ring_args g_args;

static void set_hw(engine_config *cfg, const char *key, const char *value) {
    char err[256];
    assert_int_equal(engine_hw_set(&cfg->hw, key, value, err, sizeof err), ENGINE_OK);
}

static int record_scenario(void **state) {
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/npurr_ana_XXXXXX");
    if (support_tmp_run(g_tmp, sizeof g_tmp, g_run, sizeof g_run)) return -1;
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 1;
    cfg.npus_per_node = 1;
    cfg.jitter = 0;
    set_hw(&cfg, "aicore_clock_ghz", "1");
    set_hw(&cfg, "mte_bytes_per_cycle", "32");
    set_hw(&cfg, "mte_latency_ns", "100");
    set_hw(&cfg, "scalar_op_cycles", "1e-9");
    set_hw(&cfg, "gm_read_ns", "1e-9");
    set_hw(&cfg, "gm_write_ns", "1e-9");
    set_hw(&cfg, "hbm_gbytes_per_s", "1e9");
    char err[ENGINE_ERRLEN];
    engine *e;
    rec_writer *w;
    /* The recorder must see the ring's declaration: observe from the start. */
    if (support_record_start(&cfg, "ring-test", "test_analysis", g_run, &e, &w)) return -1;
    gm_t head, tail;
    if (engine_gm_alloc(e, 0, 8, "ring0 head", &head, err, sizeof err) ||
        engine_gm_alloc(e, 0, 8, "ring0 tail", &tail, err, sizeof err) ||
        engine_gm_alloc(e, 0, CAP * SLOT, "ring0 slots", &g_args.slots, err, sizeof err))
        return -1;
    g_args.ring = engine_declare_ring(e, "ring0", RING_LOCAL, head, tail, 8, CAP, 0, 0);
    if (engine_launch(e, "ring", ring_kernel, &g_args, 2, CORE_AIV, err, sizeof err)) return -1;
    return support_record_to_end(e, w, OUTCOME_COMPLETED, g_run);
}

static int remove_scenario(void **state) {
    (void)state;
    return support_remove_dir(g_tmp);
}

static sqlite3 *open_run(void) {
    sqlite3 *db = NULL;
    char err[512];
    if (ana_open(g_run, ANA_OPEN_AS_IS, &db, NULL, err, sizeof err)) fail_msg("%s", err);
    return db;
}

static int64_t query_i64(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = -1;
    if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static const ana_stall_row *find_row(const ana_stall_table *t, const char *group) {
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].group, group)) return &t->rows[i];
    fail_msg("no group '%s' in the stall table", group);
    return NULL;
}

static void expect_row(const ana_stall_table *t, const char *group, uint64_t cores, uint64_t count,
                       uint64_t total, uint64_t max) {
    const ana_stall_row *r = find_row(t, group);
    assert_int_equal(r->cores, cores);
    assert_int_equal(r->count, count);
    assert_int_equal(r->total_ps, total);
    assert_int_equal(r->max_ps, max);
    assert_true(r->mean_ps == (double)total / (double)count);
    assert_true(r->share == (double)total / ((double)cores * (double)T_END));
}

static ana_stall_table table_by(sqlite3 *db, ana_group_by by, size_t top) {
    ana_stall_table t;
    char err[512];
    if (ana_stall_table_get(db, by, top, &t, err, sizeof err)) fail_msg("%s", err);
    return t;
}

/* What `npurr record` prints before the analysis tables exist must be what
 * `stats` prints after: every grouping from the recorder's tables alone. */
static void test_recorded_tables_match_derived(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    char err[512];
    for (int by = 0; by < ANA_BY_COUNT; by++) {
        ana_stall_table d = table_by(db, (ana_group_by)by, 0), r;
        if (ana_stall_table_get_recorded(db, (ana_group_by)by, 0, &r, err, sizeof err))
            fail_msg("%s", err);
        assert_int_equal(r.waits, d.waits);
        assert_int_equal(r.total_ps, d.total_ps);
        assert_int_equal(r.run_ps, d.run_ps);
        assert_int_equal(r.n, d.n);
        for (size_t i = 0; i < r.n; i++) {
            assert_string_equal(r.rows[i].group, d.rows[i].group);
            assert_int_equal(r.rows[i].cores, d.rows[i].cores);
            assert_int_equal(r.rows[i].count, d.rows[i].count);
            assert_int_equal(r.rows[i].total_ps, d.rows[i].total_ps);
            assert_int_equal(r.rows[i].max_ps, d.rows[i].max_ps);
        }
        ana_stall_table_free(&d);
        ana_stall_table_free(&r);
    }
    /* Before ana_derive there are no causes: one unclassified group. */
    assert_int_equal(sqlite3_exec(db, "BEGIN; UPDATE wait_rows SET cause = NULL", NULL, NULL, NULL),
                     SQLITE_OK);
    ana_stall_table r;
    if (ana_stall_table_get_recorded(db, ANA_BY_CAUSE, 0, &r, err, sizeof err))
        fail_msg("%s", err);
    assert_int_equal(r.n, 1);
    assert_string_equal(r.rows[0].group, "(unclassified)");
    assert_int_equal(r.rows[0].count, 11);
    ana_stall_table_free(&r);
    assert_int_equal(sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

static void test_run_end_time(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    assert_int_equal(query_i64(db, "SELECT value FROM meta WHERE key = 'end_time_ps'"), T_END);
    assert_int_equal(query_i64(db, "SELECT COUNT(*) FROM waits"), 11);
    sqlite3_close(db);
}

static void test_stats_by_role(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    ana_stall_table t = table_by(db, ANA_BY_ROLE, 0);
    assert_int_equal(t.n, 2);
    assert_int_equal(t.run_ps, T_END);
    assert_int_equal(t.waits, 11);
    assert_int_equal(t.total_ps, 8 * T_COPY + 2 * T_WORK + (T_PROLOGUE + T_COPY));
    /* largest total first */
    assert_string_equal(t.rows[0].group, "Producer");
    expect_row(&t, "Producer", 1, 6, 4 * T_COPY + 2 * T_WORK, T_WORK);
    expect_row(&t, "Consumer", 1, 5, 4 * T_COPY + T_PROLOGUE + T_COPY, T_PROLOGUE + T_COPY);
    ana_stall_table_free(&t);
    sqlite3_close(db);
}

static void test_stats_by_kind_and_cause(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    ana_stall_table k = table_by(db, ANA_BY_KIND, 0);
    assert_int_equal(k.n, 3);
    assert_string_equal(k.rows[0].group, "flag");
    expect_row(&k, "flag", 2, 8, 8 * T_COPY, T_COPY);
    expect_row(&k, "ring_space", 1, 2, 2 * T_WORK, T_WORK);
    expect_row(&k, "ring_data", 1, 1, T_PROLOGUE + T_COPY, T_PROLOGUE + T_COPY);
    ana_stall_table_free(&k);

    ana_stall_table c = table_by(db, ANA_BY_CAUSE, 0);
    assert_int_equal(c.n, 3);
    assert_string_equal(c.rows[0].group, "transfer_slow");
    assert_string_equal(c.rows[1].group, "flow_control");
    assert_string_equal(c.rows[2].group, "producer_late");
    expect_row(&c, "transfer_slow", 2, 8, 8 * T_COPY, T_COPY);
    expect_row(&c, "flow_control", 1, 2, 2 * T_WORK, T_WORK);
    expect_row(&c, "producer_late", 1, 1, T_PROLOGUE + T_COPY, T_PROLOGUE + T_COPY);
    ana_stall_table_free(&c);
    sqlite3_close(db);
}

static void test_stats_by_rank_object_site_top(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    ana_stall_table r = table_by(db, ANA_BY_RANK, 0);
    assert_int_equal(r.n, 1);
    expect_row(&r, "r0", 2, 11, 8 * T_COPY + 2 * T_WORK + T_PROLOGUE + T_COPY, T_PROLOGUE + T_COPY);
    ana_stall_table_free(&r);

    ana_stall_table o = table_by(db, ANA_BY_OBJECT, 0);
    expect_row(&o, "(no object)", 2, 8, 8 * T_COPY, T_COPY);
    expect_row(&o, "ring0.head", 1, 2, 2 * T_WORK, T_WORK);
    expect_row(&o, "ring0.tail", 1, 1, T_PROLOGUE + T_COPY, T_PROLOGUE + T_COPY);
    ana_stall_table_free(&o);

    /* Sites: the four waiting calls of the kernel above, as file:line func. */
    ana_stall_table s = table_by(db, ANA_BY_SITE, 0);
    assert_int_equal(s.n, 4);
    for (size_t i = 0; i < s.n; i++) {
        assert_non_null(strstr(s.rows[i].group, "test_analysis.c:"));
        assert_non_null(strstr(s.rows[i].group, " ring_kernel"));
    }
    ana_stall_table_free(&s);

    ana_stall_table top = table_by(db, ANA_BY_KIND, 1);
    assert_int_equal(top.n, 1);
    assert_int_equal(top.groups, 3);
    assert_string_equal(top.rows[0].group, "flag");
    ana_stall_table_free(&top);
    sqlite3_close(db);
}

static void test_stats_print(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    ana_stall_table t = table_by(db, ANA_BY_ROLE, 0);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ana_stall_table_print(&t, f);
    fclose(f);
    /* Header explains the denominator; numbers in human units. */
    assert_non_null(strstr(buf, "end_time_ps = 2.06 us"));
    assert_non_null(strstr(buf, "11 waits"));
    const char *p = strstr(buf, "Producer");
    const char *c = strstr(buf, "Consumer");
    assert_non_null(p);
    assert_non_null(c);
    assert_true(p < c);
    assert_non_null(strstr(p, "6"));
    assert_non_null(strstr(p, "1.13 us"));    /* total 1128000 ps */
    assert_non_null(strstr(p, "188.00 ns"));  /* mean */
    assert_non_null(strstr(p, "300.00 ns"));  /* max */
    assert_non_null(strstr(p, "54.76%"));     /* 1128000 / 2060000 */
    assert_non_null(strstr(c, "860.00 ns"));
    assert_non_null(strstr(c, "41.75%"));
    free(buf);
    ana_stall_table_free(&t);
    sqlite3_close(db);
}

static void test_views(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    assert_int_equal(query_i64(db, "SELECT total_ps FROM stall_summary WHERE role = 'Producer'"
                                   " AND kind = 'ring_space'"), 2 * T_WORK);
    assert_int_equal(query_i64(db, "SELECT count FROM stall_summary WHERE role = 'Consumer'"
                                   " AND kind = 'flag'"), 4);
    assert_int_equal(query_i64(db, "SELECT max_ps FROM stall_summary WHERE role = 'Consumer'"
                                   " AND kind = 'ring_data'"), T_PROLOGUE + T_COPY);
    /* share is per core: stall time / (cores x run time), as in `stats` */
    assert_int_equal(query_i64(db, "SELECT CAST(share * cores * 2060000 + 0.5 AS INT) FROM"
                                   " wait_causes WHERE cause = 'flow_control'"), 2 * T_WORK);
    assert_int_equal(query_i64(db, "SELECT COUNT(*) FROM stall_summary WHERE share > 1"), 0);
    assert_int_equal(query_i64(db, "SELECT total_ps FROM wait_causes ORDER BY total_ps DESC"
                                   " LIMIT 1"), 8 * T_COPY);
    /* Ring occupancy: +1 at every tail store, -1 at every head store; it
     * reaches the capacity (2) when tail=2 lands at 464000 and at 1328000. */
    assert_int_equal(query_i64(db, "SELECT COUNT(*) FROM ring_occupancy"), 2 * ITEMS);
    assert_int_equal(query_i64(db, "SELECT MAX(occupancy) FROM ring_occupancy"), CAP);
    assert_int_equal(query_i64(db, "SELECT MIN(time_ps) FROM ring_occupancy WHERE occupancy = 2"),
                     464000);
    assert_int_equal(query_i64(db, "SELECT occupancy FROM ring_occupancy ORDER BY time_ps DESC"
                                   " LIMIT 1"), 0);
    assert_int_equal(query_i64(db, "SELECT occupancy FROM ring_occupancy WHERE time_ps = 764000"),
                     1);
    /* Link bandwidth: 8 copies of 1024 B through HBM, split over buckets. */
    assert_int_equal(query_i64(db, "SELECT SUM(bytes) FROM link_bandwidth WHERE link = 'hbm r0'"),
                     8 * SLOT);
    assert_int_equal(query_i64(db, "SELECT COUNT(DISTINCT link) FROM link_bandwidth"), 1);
    /* Wakers: the producer_late wait was ended by the tail store at 332000. */
    assert_int_equal(query_i64(db, "SELECT we.time_ps FROM waits w JOIN wake_events we"
                                   " ON we.seq = w.waker_seq WHERE w.kind = 'ring_data'"),
                     T_PROLOGUE + T_COPY);
    /* Last writer of the head word: the Consumer. */
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT role, value FROM last_writers WHERE"
                                            " object_name = 'ring0.head'", -1, &st, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "Consumer");
    assert_int_equal(sqlite3_column_int64(st, 1), ITEMS);
    sqlite3_finalize(st);
    /* Labels say what a wait waits for. */
    assert_int_equal(query_i64(db, "SELECT COUNT(*) FROM wait_labels WHERE label ="
                                   " 'ring0.head >= 1'"), 1);
    assert_int_equal(query_i64(db, "SELECT COUNT(*) FROM wait_labels WHERE label ="
                                   " 'ring0.tail > 0'"), 1);
    assert_int_equal(query_i64(db, "SELECT COUNT(*) FROM wait_labels WHERE label ="
                                   " 'flag MTE3_S 0'"), 4);
    sqlite3_close(db);
}

static void test_derive_idempotent(void **state) {
    (void)state;
    char err[512];
    sqlite3 *db = open_run();
    int64_t before = query_i64(db, "SELECT COUNT(*) FROM word_writes") * 1000000 +
                     query_i64(db, "SELECT COUNT(*) FROM ring_counters") * 1000 +
                     query_i64(db, "SELECT COUNT(*) FROM link_bytes");
    sqlite3_close(db);
    assert_int_equal(ana_open(g_run, ANA_OPEN_REDERIVE, NULL, NULL, err, sizeof err), 0);
    db = open_run();
    int64_t after = query_i64(db, "SELECT COUNT(*) FROM word_writes") * 1000000 +
                    query_i64(db, "SELECT COUNT(*) FROM ring_counters") * 1000 +
                    query_i64(db, "SELECT COUNT(*) FROM link_bytes");
    assert_int_equal(before, after);
    assert_int_equal(query_i64(db, "SELECT COUNT(*) FROM waits WHERE cause IS NULL"), 0);
    sqlite3_close(db);
}

static char *query_text(sqlite3 *db, const char *sql) {
    char *v = support_query_text(db, sql);
    assert_non_null(v);
    return v;
}

/* The index's waits view (sql) and index_version set in place. */
static void set_waits_view(const char *sql, const char *version) {
    char path[400];
    snprintf(path, sizeof path, "%s/index.db", g_run);
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    char *q = sqlite3_mprintf("DROP VIEW waits; %s; UPDATE meta SET value = %Q"
                              " WHERE key = 'index_version'", sql, version);
    assert_int_equal(sqlite3_exec(db, q, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_free(q);
    sqlite3_close(db);
}

/* Index version 3 stores a cause as its name's id in strings; a version 2
 * index (recorded before) gets names, and both views answer alike. */
static void test_cause_ids_by_index_version(void **state) {
    (void)state;
    char err[512];
    const char *by_cause = "SELECT group_concat(cause || ':' || n, ' ') FROM"
                           " (SELECT cause, COUNT(*) AS n FROM waits GROUP BY cause ORDER BY cause)";
    const char *stored = "SELECT group_concat(DISTINCT typeof(cause)) FROM wait_rows";
    sqlite3 *db = open_run();
    char *want = query_text(db, by_cause), *kind = query_text(db, stored);
    char *view = query_text(db, "SELECT sql FROM sqlite_schema WHERE name = 'waits'");
    sqlite3_close(db);
    assert_string_equal(kind, "integer");
    const char *lookup = "(SELECT s.text FROM strings s WHERE s.id = w.cause) AS cause";
    char *at = strstr(view, lookup);
    assert_non_null(at);
    char old_view[4096];
    snprintf(old_view, sizeof old_view, "%.*sw.cause AS cause%s", (int)(at - view), view,
             at + strlen(lookup));
    set_waits_view(old_view, "2");
    assert_int_equal(ana_open(g_run, ANA_OPEN_REDERIVE, NULL, NULL, err, sizeof err), 0);
    db = open_run();
    char *got = query_text(db, by_cause), *kind2 = query_text(db, stored);
    sqlite3_close(db);
    assert_string_equal(kind2, "text");
    assert_string_equal(got, want);
    char version[16];
    snprintf(version, sizeof version, "%d", REC_INDEX_VERSION);
    set_waits_view(view, version);   /* as recorded, for the tests after this one */
    assert_int_equal(ana_open(g_run, ANA_OPEN_REDERIVE, NULL, NULL, err, sizeof err), 0);
    free(want), free(kind), free(view), free(got), free(kind2);
}

/* noinline: GCC's dangling-pointer check mistakes the memstream buffer,
 * once inlined, for a pointer into this frame. */
__attribute__((noinline)) static char *sql_text(sqlite3 *db, const char *q, int csv, int *rc, char *err, size_t errlen) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *rc = ana_sql_print(db, q, csv, f, err, errlen);
    fclose(f);
    return buf;
}

static void test_sql_printer(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    char err[1024];
    int rc;
    char *out = sql_text(db, "SELECT role, COUNT(*) AS n FROM waits GROUP BY role ORDER BY role",
                         0, &rc, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "role      n\n"
                             "--------  -\n"
                             "Consumer  5\n"
                             "Producer  6\n");
    free(out);
    out = sql_text(db, "SELECT 'a,b' AS x, NULL AS y, 1.5 AS z", 1, &rc, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "x,y,z\n\"a,b\",,1.5\n");
    free(out);
    /* The events vtab is there; an error names the query. */
    out = sql_text(db, "SELECT COUNT(*) AS n FROM events WHERE kind = 'ring_tail'", 1, &rc, err,
                   sizeof err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "n\n4\n");
    free(out);
    out = sql_text(db, "SELECT nope FROM waits", 0, &rc, err, sizeof err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "no such column: nope"));
    assert_non_null(strstr(err, "SELECT nope FROM waits"));
    free(out);
    sqlite3_close(db);
}

static void test_units(void **state) {
    (void)state;
    char buf[32], err[256];
    uint64_t ps;
    ana_format_ps(0, buf, sizeof buf);
    assert_string_equal(buf, "0 ns");
    ana_format_ps(500, buf, sizeof buf);
    assert_string_equal(buf, "500 ps");
    ana_format_ps(132000, buf, sizeof buf);
    assert_string_equal(buf, "132.00 ns");
    ana_format_ps(2060000, buf, sizeof buf);
    assert_string_equal(buf, "2.06 us");
    ana_format_ps(3.5e9, buf, sizeof buf);
    assert_string_equal(buf, "3.50 ms");
    assert_int_equal(ana_parse_time("10us", &ps, err, sizeof err), 0);
    assert_int_equal(ps, 10000000);
    assert_int_equal(ana_parse_time("2ms", &ps, err, sizeof err), 0);
    assert_int_equal(ps, 2000000000ull);
    assert_int_equal(ana_parse_time("1.5ns", &ps, err, sizeof err), 0);
    assert_int_equal(ps, 1500);
    assert_int_equal(ana_parse_time("12345", &ps, err, sizeof err), 0);
    assert_int_equal(ps, 12345);
    assert_int_equal(ana_parse_time("10 hours", &ps, err, sizeof err), -1);
    assert_non_null(strstr(err, "10 hours"));
    assert_int_equal(ana_parse_time("-3us", &ps, err, sizeof err), -1);
    uint8_t bits[2];
    assert_int_equal(ana_parse_ranks("0,3-5", bits, 16, err, sizeof err), 0);
    assert_int_equal(bits[0], 0x39);
    assert_int_equal(bits[1], 0);
    assert_int_equal(ana_parse_ranks("3-1", bits, 16, err, sizeof err), -1);
    assert_int_equal(ana_parse_ranks("0,16", bits, 16, err, sizeof err), -1);
    assert_non_null(strstr(err, "16"));
    assert_int_equal(ana_parse_ranks("1,,2", bits, 16, err, sizeof err), -1);
}

/* ------------------------------------------------------------ JSON check */

/* A minimal JSON reader: enough to check that the export parses and to
 * walk its events. Values are kept as a tree of nodes. */
typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;
typedef struct jnode {
    jtype t;
    double num;
    char *str;                 /* J_STR */
    struct jnode **items;      /* J_ARR, J_OBJ values */
    char **keys;               /* J_OBJ */
    size_t n;
} jnode;

typedef struct jparser {
    const char *p, *end;
    int bad;
} jparser;

static void jws(jparser *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t'))
        j->p++;
}

static char *jstring(jparser *j) {
    if (j->p >= j->end || *j->p != '"') { j->bad = 1; return NULL; }
    j->p++;
    size_t cap = 32, n = 0;
    char *s = malloc(cap);
    while (j->p < j->end && *j->p != '"') {
        char c = *j->p++;
        if ((unsigned char)c < 0x20) { j->bad = 1; break; }
        if (c == '\\') {
            if (j->p >= j->end) { j->bad = 1; break; }
            char e = *j->p++;
            switch (e) {
            case '"': case '\\': case '/': c = e; break;
            case 'n': c = '\n'; break;
            case 't': c = '\t'; break;
            case 'r': c = '\r'; break;
            case 'b': c = '\b'; break;
            case 'f': c = '\f'; break;
            case 'u':
                if (j->end - j->p < 4) { j->bad = 1; break; }
                for (int i = 0; i < 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", j->p[i])) j->bad = 1;
                j->p += 4;
                c = '?';
                break;
            default: j->bad = 1;
            }
        }
        if (n + 2 > cap) s = realloc(s, cap *= 2);
        s[n++] = c;
    }
    if (j->p >= j->end) j->bad = 1;
    else j->p++;
    s[n] = 0;
    return s;
}

static jnode *jvalue(jparser *j, int depth);

static void jpush(jnode *node, char *key, jnode *v) {
    node->items = realloc(node->items, (node->n + 1) * sizeof *node->items);
    node->items[node->n] = v;
    if (node->t == J_OBJ) {
        node->keys = realloc(node->keys, (node->n + 1) * sizeof *node->keys);
        node->keys[node->n] = key;
    }
    node->n++;
}

static jnode *jvalue(jparser *j, int depth) {
    jws(j);
    jnode *v = calloc(1, sizeof *v);
    if (j->p >= j->end || depth > 64) { j->bad = 1; return v; }
    char c = *j->p;
    if (c == '{' || c == '[') {
        v->t = c == '{' ? J_OBJ : J_ARR;
        j->p++;
        jws(j);
        if (j->p < j->end && *j->p == (c == '{' ? '}' : ']')) { j->p++; return v; }
        for (;;) {
            char *key = NULL;
            jws(j);
            if (v->t == J_OBJ) {
                key = jstring(j);
                jws(j);
                if (j->p >= j->end || *j->p != ':') { j->bad = 1; free(key); return v; }
                j->p++;
            }
            jpush(v, key, jvalue(j, depth + 1));
            if (j->bad) return v;
            jws(j);
            if (j->p < j->end && *j->p == ',') { j->p++; continue; }
            if (j->p < j->end && *j->p == (c == '{' ? '}' : ']')) { j->p++; return v; }
            j->bad = 1;
            return v;
        }
    }
    if (c == '"') { v->t = J_STR; v->str = jstring(j); return v; }
    if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "null", 4)) {
        v->t = c == 't' ? J_BOOL : J_NULL;
        j->p += 4;
        return v;
    }
    if (!strncmp(j->p, "false", 5)) { v->t = J_BOOL; j->p += 5; return v; }
    /* number: -?digits(.digits)?([eE][+-]?digits)? */
    const char *s = j->p;
    if (*j->p == '-') j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9') { j->bad = 1; return v; }
    if (*j->p == '0' && j->p + 1 < j->end && j->p[1] >= '0' && j->p[1] <= '9') j->bad = 1;
    while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    if (j->p < j->end && *j->p == '.') {
        j->p++;
        if (j->p >= j->end || *j->p < '0' || *j->p > '9') j->bad = 1;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
        j->p++;
        if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
        while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
    }
    v->t = J_NUM;
    v->num = strtod(s, NULL);
    return v;
}

static void jfree(jnode *v) {
    if (!v) return;
    for (size_t i = 0; i < v->n; i++) {
        jfree(v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

static const jnode *jget(const jnode *o, const char *key) {
    if (!o || o->t != J_OBJ) return NULL;
    for (size_t i = 0; i < o->n; i++)
        if (o->keys[i] && !strcmp(o->keys[i], key)) return o->items[i];
    return NULL;
}

static const char *jstr(const jnode *o, const char *key) {
    const jnode *v = jget(o, key);
    return v && v->t == J_STR ? v->str : NULL;
}

/* Timestamps in ps, from microseconds with up to 6 decimals. */
static int64_t jps(const jnode *o, const char *key) {
    const jnode *v = jget(o, key);
    if (!v || v->t != J_NUM) fail_msg("event lacks numeric '%s'", key);
    return (int64_t)(v->num * 1e6 + (v->num >= 0 ? 0.5 : -0.5));
}

typedef struct xslice {
    int64_t pid, tid, ts, dur;
} xslice;

static int cmp_slice(const void *a, const void *b) {
    const xslice *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}

/* 1 if some X slice of (pid, tid) contains ts. */
static int enclosed(const xslice *s, size_t n, int64_t pid, int64_t tid, int64_t ts) {
    for (size_t i = 0; i < n; i++)
        if (s[i].pid == pid && s[i].tid == tid && s[i].ts <= ts && ts <= s[i].ts + s[i].dur)
            return 1;
    return 0;
}

typedef struct export_summary {
    size_t x, b, e, s, f, c, m, waits, transfers;
    int wait_named;          /* a wait slice named after its ring word */
    int thread_named;        /* "AIV0 Producer" */
    int process_named;       /* "rank 0 (node 0)" */
} export_summary;

/* Checks every event of a Chrome trace: required fields per phase, s/f ids
 * matched one to one, b/e ids matched, X slices nested per thread, flows
 * enclosed by a slice of their thread. */
static export_summary check_chrome(const char *text, size_t len) {
    export_summary sum = {0};
    jparser j = {text, text + len, 0};
    jnode *root = jvalue(&j, 0);
    jws(&j);
    assert_false(j.bad);
    assert_true(j.p == j.end);
    assert_int_equal(root->t, J_OBJ);
    assert_string_equal(jstr(root, "displayTimeUnit"), "ns");
    const jnode *evs = jget(root, "traceEvents");
    assert_non_null(evs);
    assert_int_equal(evs->t, J_ARR);
    xslice *xs = calloc(evs->n + 1, sizeof *xs);
    int64_t *sid = calloc(evs->n + 1, sizeof *sid), *fid = calloc(evs->n + 1, sizeof *fid);
    int64_t *sts = calloc(evs->n + 1, sizeof *sts);
    int64_t *bid = calloc(evs->n + 1, sizeof *bid), *eid = calloc(evs->n + 1, sizeof *eid);
    size_t nx = 0;
    for (size_t i = 0; i < evs->n; i++) {
        const jnode *ev = evs->items[i];
        assert_int_equal(ev->t, J_OBJ);
        const char *ph = jstr(ev, "ph");
        assert_non_null(ph);
        const jnode *pid = jget(ev, "pid");
        assert_non_null(pid);
        assert_int_equal(pid->t, J_NUM);
        switch (ph[0]) {
        case 'M': {
            const char *name = jstr(ev, "name");
            assert_non_null(name);
            const jnode *args = jget(ev, "args");
            assert_non_null(args);
            if (!strcmp(name, "process_name") || !strcmp(name, "thread_name")) {
                const char *n = jstr(args, "name");
                assert_non_null(n);
                if (!strcmp(n, "AIV0 Producer")) sum.thread_named = 1;
                if (!strcmp(n, "rank 0 (node 0)")) sum.process_named = 1;
            } else {
                assert_true(!strcmp(name, "process_sort_index") ||
                            !strcmp(name, "thread_sort_index"));
                assert_non_null(jget(args, "sort_index"));
            }
            if (!strcmp(name, "thread_name")) assert_non_null(jget(ev, "tid"));
            sum.m++;
            break;
        }
        case 'X': {
            assert_non_null(jstr(ev, "name"));
            assert_non_null(jget(ev, "tid"));
            xslice *x = &xs[nx++];
            x->pid = (int64_t)pid->num;
            x->tid = (int64_t)jget(ev, "tid")->num;
            x->ts = jps(ev, "ts");
            x->dur = jps(ev, "dur");
            assert_true(x->dur >= 0);
            const char *cat = jstr(ev, "cat");
            if (cat && !strcmp(cat, "wait")) {
                sum.waits++;
                if (!strcmp(jstr(ev, "name"), "wait ring0.head >= 1")) sum.wait_named = 1;
            }
            if (cat && !strcmp(cat, "transfer")) sum.transfers++;
            sum.x++;
            break;
        }
        case 'b': case 'e': {
            assert_non_null(jstr(ev, "name"));
            assert_non_null(jstr(ev, "cat"));
            const jnode *id = jget(ev, "id");
            assert_non_null(id);
            jps(ev, "ts");
            if (ph[0] == 'b') bid[sum.b++] = (int64_t)id->num;
            else eid[sum.e++] = (int64_t)id->num;
            break;
        }
        case 's': case 'f': {
            assert_non_null(jstr(ev, "name"));
            assert_non_null(jstr(ev, "cat"));
            assert_non_null(jget(ev, "tid"));
            const jnode *id = jget(ev, "id");
            assert_non_null(id);
            jps(ev, "ts");
            if (ph[0] == 's') {
                sts[sum.s] = jps(ev, "ts");
                sid[sum.s++] = (int64_t)id->num;
            } else {
                assert_string_equal(jstr(ev, "bp"), "e");
                /* Perfetto reads flows in time order, file order on ties:
                 * the start must come first and the end not be earlier. */
                size_t k = 0;
                while (k < sum.s && sid[k] != (int64_t)id->num) k++;
                assert_true(k < sum.s);
                assert_true(jps(ev, "ts") >= sts[k]);
                fid[sum.f++] = (int64_t)id->num;
            }
            break;
        }
        case 'C': {
            assert_non_null(jstr(ev, "name"));
            jps(ev, "ts");
            const jnode *args = jget(ev, "args");
            assert_non_null(args);
            assert_int_equal(args->t, J_OBJ);
            assert_true(args->n > 0);
            for (size_t k = 0; k < args->n; k++) assert_int_equal(args->items[k]->t, J_NUM);
            sum.c++;
            break;
        }
        default:
            fail_msg("unexpected phase '%s'", ph);
        }
    }
    /* s <-> f and b <-> e: the same multiset of ids, each once. */
    for (size_t a = 0; a < sum.s; a++) {
        size_t hits = 0;
        for (size_t b = 0; b < sum.f; b++) hits += fid[b] == sid[a];
        assert_int_equal(hits, 1);
        for (size_t b = a + 1; b < sum.s; b++) assert_true(sid[a] != sid[b]);
    }
    assert_int_equal(sum.s, sum.f);
    for (size_t a = 0; a < sum.b; a++) {
        size_t hits = 0;
        for (size_t b = 0; b < sum.e; b++) hits += eid[b] == bid[a];
        assert_int_equal(hits, 1);
    }
    assert_int_equal(sum.b, sum.e);
    /* X slices nest per thread. */
    qsort(xs, nx, sizeof *xs, cmp_slice);
    int64_t *stack = calloc(nx + 1, sizeof *stack);
    size_t depth = 0;
    for (size_t i = 0; i < nx; i++) {
        if (i && (xs[i].pid != xs[i - 1].pid || xs[i].tid != xs[i - 1].tid)) depth = 0;
        while (depth && stack[depth - 1] <= xs[i].ts) depth--;
        if (depth && xs[i].ts + xs[i].dur > stack[depth - 1])
            fail_msg("slice at %lld+%lld on pid %lld tid %lld overlaps its parent ending %lld",
                     (long long)xs[i].ts, (long long)xs[i].dur, (long long)xs[i].pid,
                     (long long)xs[i].tid, (long long)stack[depth - 1]);
        stack[depth++] = xs[i].ts + xs[i].dur;
    }
    /* Each flow end sits inside a slice of its thread. */
    for (size_t i = 0; i < evs->n; i++) {
        const jnode *ev = evs->items[i];
        const char *ph = jstr(ev, "ph");
        if (ph[0] != 's' && ph[0] != 'f') continue;
        assert_true(enclosed(xs, nx, (int64_t)jget(ev, "pid")->num,
                             (int64_t)jget(ev, "tid")->num, jps(ev, "ts")));
    }
    free(stack);
    free(xs);
    free(sid);
    free(sts);
    free(fid);
    free(bid);
    free(eid);
    jfree(root);
    return sum;
}

__attribute__((noinline)) static char *export_text(const ana_export_opts *o, size_t *len, int *rc, char *err,
                         size_t errlen) {
    sqlite3 *db = open_run();
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    *rc = ana_export_chrome(db, o, f, NULL, err, errlen);
    fclose(f);
    sqlite3_close(db);
    return buf;
}

static void test_export_valid(void **state) {
    (void)state;
    char err[512];
    size_t len;
    int rc;
    ana_export_opts o = {0};
    char *text = export_text(&o, &len, &rc, err, sizeof err);
    assert_int_equal(rc, 0);
    export_summary s = check_chrome(text, len);
    assert_int_equal(s.waits, 11);       /* every wait is a slice */
    assert_int_equal(s.transfers, 8);    /* every copy: one per queue at a time */
    assert_int_equal(s.s, 11);           /* every wait ended by a known event */
    assert_true(s.c >= 2 * ITEMS);       /* ring occupancy samples */
    assert_true(s.wait_named);
    assert_true(s.thread_named);
    assert_true(s.process_named);
    free(text);

    /* A window keeps the slices that overlap it. */
    o.from_ps = 900000;
    o.to_ps = 1000000;
    text = export_text(&o, &len, &rc, err, sizeof err);
    assert_int_equal(rc, 0);
    s = check_chrome(text, len);
    assert_int_equal(s.waits, 1);        /* the ring_space wait 896000-1196000 */
    free(text);

    o = (ana_export_opts){0};
    o.ranks = "1";
    text = export_text(&o, &len, &rc, err, sizeof err);
    assert_int_equal(rc, -1);
    assert_non_null(strstr(err, "rank 1"));
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units),
        cmocka_unit_test(test_run_end_time),
        cmocka_unit_test(test_stats_by_role),
        cmocka_unit_test(test_recorded_tables_match_derived),
        cmocka_unit_test(test_stats_by_kind_and_cause),
        cmocka_unit_test(test_stats_by_rank_object_site_top),
        cmocka_unit_test(test_stats_print),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_sql_printer),
        cmocka_unit_test(test_export_valid),
        cmocka_unit_test(test_derive_idempotent),
        cmocka_unit_test(test_cause_ids_by_index_version),
    };
    return cmocka_run_group_tests(tests, record_scenario, remove_scenario);
}

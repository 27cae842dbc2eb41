/*
 * test_recorder.c - the recorder on a synthetic event stream.
 *
 * A deterministic stream of a little more than three chunks (transfers,
 * GM/flag waits, ring stores, atomics, roles, notes; negative values and
 * non-monotonic times; declarations arriving mid-run; pairs split across
 * chunk boundaries) is fed through rec_observer exactly as the engine
 * would. The tests then check what issue 3 asks: the events table gives
 * back every event field for field; reindex without index.db rebuilds
 * identical tables; a trace cut inside a frame still opens and says how far
 * it is complete; `zstd -t` accepts the trace; a WHERE on rank and time
 * decodes only the chunks that overlap.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "recorder/recorder.h"
#include "tests/support.h"

#define NEV (3 * REC_CHUNK_EVENTS + 5000)
#define CPR 72

static char g_tmp[256], g_run[300];
static engine_event *g_ev;

/* Event i (seq i + 1). Groups of ten share a (rank, core); chunk c holds
 * ranks c and c + 1 only, so rank constraints can prune chunks. */
static void make_event(uint64_t i, engine_event *e) {
    memset(e, 0, sizeof *e);
    uint64_t c = i / REC_CHUNK_EVENTS;
    e->seq = i + 1;
    e->time = 1000 * i + (i % 7) * 300;
    e->rank = (uint32_t)(c + ((i / 10) & 1));
    e->core = (uint32_t)((i / 20) % 8);
    e->site = (uint32_t)(1 + i % 3);
    switch (i % 10) {
    case 0:
        e->kind = EV_XFER_ISSUE;
        e->pipe = PIPE_MTE2;
        e->sub = XFER_MTE2;
        e->addr = gm_make((int)e->rank, 0x1000 + i * 32).a;
        e->aux = (int64_t)((1ULL << 63) | (1ULL << 56) | (i % 64) * 32);
        e->len = 4096;
        e->value = (int64_t)e->time + 100;
        e->peer = e->rank;
        break;
    case 1:
        e->kind = EV_XFER_DONE;
        e->pipe = PIPE_MTE2;
        e->sub = XFER_MTE2;
        e->addr = gm_make((int)e->rank, 0x1000 + (i - 1) * 32).a;
        e->aux = (int64_t)((1ULL << 63) | (1ULL << 56) | ((i - 1) % 64) * 32);
        e->len = 4096;
        e->value = (int64_t)e->time - 900;
        e->link = e->seq - 1;
        e->peer = e->rank;
        break;
    case 2:
        e->kind = EV_GM_WAIT_BEGIN;
        e->pipe = PIPE_S;
        e->sub = COND_GE;
        e->object = (i / 10) % 2 ? 2 : 4;
        e->aux = 5;
        e->value = 3;
        break;
    case 3:
        e->kind = EV_GM_WAIT_END;
        e->pipe = PIPE_S;
        e->sub = COND_GE;
        e->object = (i / 10) % 2 ? 2 : 4;
        e->value = 5;
        e->link = e->seq - 3;
        e->peer = engine_track_id(CPR, e->rank ^ 1, 3, PIPE_MTE3) + 1;
        break;
    case 4:
        e->kind = EV_FLAG_WAIT_BEGIN;
        e->pipe = PIPE_V;
        e->sub = 1;
        e->aux = 1;
        break;
    case 5:
        e->kind = EV_FLAG_WAIT_END;
        e->pipe = PIPE_V;
        e->sub = 1;
        e->value = 1;
        e->link = e->seq - 5;
        e->peer = engine_track_id(CPR, e->rank, e->core, PIPE_MTE2) + 1;
        break;
    case 6:
        e->kind = EV_RING_TAIL;
        e->pipe = PIPE_S;
        e->object = 3;
        e->addr = gm_make((int)e->rank, 64).a;
        e->value = (int64_t)i;
        break;
    case 7:
        e->kind = EV_ATOMIC;
        e->pipe = PIPE_S;
        e->sub = ATOMIC_ADD;
        e->addr = gm_make(0, 128).a;
        e->value = 1;
        e->aux = (int64_t)i;
        break;
    case 8:
        e->kind = EV_ROLE;
        e->pipe = PIPE_S;
        e->value = 1 + (int64_t)(e->rank % 2);
        break;
    default:
        e->kind = EV_NOTE;
        e->pipe = PIPE_S;
        e->aux = 3;
        e->value = -(int64_t)i;
        break;
    }
}

static void declare_start(const engine_observer *o) {
    static const char *const strings[] = {NULL, "RDMASender", "HCCSReceiver", "cached_head",
                                          "ring0", "ring0.head", "ring0.tail", "rdma"};
    for (uint32_t id = 1; id < 8; id++) o->on_string(o->ctx, id, strings[id]);
    static const engine_site sites[] = {{1, "kernel.c", 10, "send"}, {2, "kernel.c", 20, "recv"},
                                        {3, "other.c", 30, "wait"}};
    for (int k = 0; k < 3; k++) o->on_site(o->ctx, &sites[k]);
    engine_object ring = {.id = 1, .kind = OBJ_RING, .name = 4, .rank = 1,
                          .addr = gm_make(1, 0), .width = 8, .size = 16, .head = 2, .tail = 3,
                          .producer_rank = 0, .consumer_rank = 1, .role = 7};
    engine_object head = {.id = 2, .kind = OBJ_RING_HEAD, .name = 5, .rank = 1,
                          .addr = gm_make(1, 0), .width = 8, .ring = 1, .producer_rank = -1,
                          .consumer_rank = -1};
    engine_object tail = {.id = 3, .kind = OBJ_RING_TAIL, .name = 6, .rank = 1,
                          .addr = gm_make(1, 64), .width = 8, .ring = 1, .producer_rank = -1,
                          .consumer_rank = -1};
    engine_object word = {.id = 4, .kind = OBJ_WORD, .name = 3, .rank = 0,
                          .addr = gm_make(0, 128), .width = 4, .producer_rank = -1,
                          .consumer_rank = -1};
    o->on_object(o->ctx, &ring);
    o->on_object(o->ctx, &head);
    o->on_object(o->ctx, &tail);
    o->on_object(o->ctx, &word);
}

static void record_run(const char *dir) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 1;
    cfg.npus_per_node = 8;
    cfg.seed = 42;
    cfg.jitter = 0.1;
    rec_run_info info = {"synthetic", "npurr record -k synthetic -o 'my run'", &cfg, CPR, 24, 48, NULL};
    rec_writer *w;
    char err[1024];
    int rc = rec_open(dir, &info, &w, err, sizeof err);
    if (rc) fail_msg("rec_open: %s", err);
    engine_observer o;
    rec_observer(w, &o);
    declare_start(&o);
    for (uint64_t i = 0; i < NEV; i++) {
        if (i == 40000) {
            o.on_string(o.ctx, 8, "late string");
            engine_site late = {4, "late.c", 40, "late"};
            o.on_site(o.ctx, &late);
        }
        o.on_event(o.ctx, &g_ev[i]);
    }
    engine_result res;
    memset(&res, 0, sizeof res);
    res.outcome = OUTCOME_COMPLETED;
    /* after the latest event (make_event's times step back now and then,
     * so which one that is depends on NEV, and so on REC_CHUNK_EVENTS) */
    for (uint64_t i = 0; i < NEV; i++)
        if (g_ev[i].time + 5 > res.end_time) res.end_time = g_ev[i].time + 5;
    res.events = NEV;
    rc = rec_close(w, &res, "passed", "all 12 tokens match", err, sizeof err);
    if (rc) fail_msg("rec_close: %s", err);
}

static int setup(void **state) {
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/npurr_test_recorder_XXXXXX");
    if (!mkdtemp(g_tmp)) return -1;
    snprintf(g_run, sizeof g_run, "%s/run", g_tmp);
    g_ev = malloc(NEV * sizeof *g_ev);
    for (uint64_t i = 0; i < NEV; i++) make_event(i, &g_ev[i]);
    record_run(g_run);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(g_ev);
    return support_remove_dir(g_tmp);
}

static sqlite3 *open_index(const char *dir) { return support_open_index(dir); }

static int64_t q_i64(sqlite3 *db, const char *sql) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

/* Compares `SELECT <all columns> FROM events WHERE <where> ORDER BY seq`
 * with the generated events that satisfy keep(). Returns rows compared. */
static size_t compare_events(sqlite3 *db, const char *where, int (*keep)(const engine_event *)) {
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT seq, time, rank, core, pipe, kind, sub, addr, len, value, aux, link, site,"
             " object, peer FROM events %s ORDER BY seq",
             where);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    size_t i = 0, rows = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        while (i < NEV && !keep(&g_ev[i])) i++;
        assert_true(i < NEV);
        const engine_event *e = &g_ev[i++];
        support_assert_event_row(st, e);
        rows++;
    }
    assert_int_equal(rc, SQLITE_DONE);
    sqlite3_finalize(st);
    while (i < NEV && !keep(&g_ev[i])) i++;
    assert_int_equal(i, NEV); /* no expected event was missing from the result */
    return rows;
}

static int keep_all(const engine_event *e) { (void)e; return 1; }

static void test_events_match_observed(void **state) {
    (void)state;
    sqlite3 *db = open_index(g_run);
    char err[512];
    assert_int_equal(rec_register_events_vtab(db, g_run, err, sizeof err), 0);
    assert_int_equal(compare_events(db, "", keep_all), NEV);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM chunks"), 4);
    assert_int_equal(q_i64(db, "SELECT sum(events) FROM chunks"), NEV);
    char *v = support_query_text(db, "SELECT value FROM meta WHERE key = 'events'");
    char nev[32];
    snprintf(nev, sizeof nev, "%d", NEV);
    assert_string_equal(v, nev);
    free(v);
    sqlite3_close(db);
}


static void test_derived_tables(void **state) {
    (void)state;
    sqlite3 *db = open_index(g_run);
    uint64_t issues = 0, done = 0, waits = 0, ring_space = 0, gm = 0;
    for (uint64_t i = 0; i < NEV; i++) {
        issues += g_ev[i].kind == EV_XFER_ISSUE;
        done += g_ev[i].kind == EV_XFER_DONE;
        waits += g_ev[i].kind == EV_GM_WAIT_BEGIN || g_ev[i].kind == EV_FLAG_WAIT_BEGIN;
        ring_space += g_ev[i].kind == EV_GM_WAIT_BEGIN && g_ev[i].object == 2;
        gm += g_ev[i].kind == EV_GM_WAIT_BEGIN && g_ev[i].object == 4;
    }
    /* The recorder leaves transfers to analysis; it keeps their total. */
    uint64_t issued_bytes = 0;
    for (uint64_t i = 0; i < NEV; i++)
        if (g_ev[i].kind == EV_XFER_ISSUE) issued_bytes += g_ev[i].len;
    assert_int_equal(q_i64(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'transfers'"), 0);
    assert_int_equal(q_i64(db, "SELECT CAST(value AS INT) FROM meta WHERE key = 'transfer_bytes'"),
                     issued_bytes);
    sqlite3_close(db);
    db = open_index(support_derived_copy(g_run));
    assert_int_equal(q_i64(db, "SELECT count(*) FROM transfers"), issues);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM transfers WHERE done_seq = issue_seq + 1"),
                     done);
    assert_int_equal(q_i64(db, "SELECT sum(bytes) FROM transfers"), issued_bytes);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits"), waits);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits WHERE kind = 'ring_space'"),
                     ring_space);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits WHERE kind = 'gm'"),
                     gm);
    /* The waker of a GM wait is (rank ^ 1, core 3, MTE3), as generated. */
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits WHERE kind IN ('gm','ring_space')"
                               " AND (waker_rank != (rank | 1) - (rank & 1) OR waker_core != 3"
                               " OR waker_seq != begin_seq - 2 OR dur_ps != end_ps - begin_ps)"),
                     0);
    /* Roles: a wait carries its core's role at the time; a track the last one. */
    assert_true(q_i64(db, "SELECT count(*) FROM waits WHERE role = 'HCCSReceiver'"
                          " AND rank % 2 = 1") > 1000);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits WHERE role = 'HCCSReceiver'"
                               " AND rank % 2 = 0"), 0);
    char *role = support_query_text(
        db, "SELECT role FROM tracks WHERE rank = 2 AND core = 3 AND pipe = 'S'");
    assert_string_equal(role, "RDMASender");
    free(role);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM rings WHERE owner_rank = 1 AND peer_rank = 0"
                               " AND capacity = 16 AND head_object = 2 AND level = 'rdma'"),
                     1);
    char *name = support_query_text(
        db, "SELECT name FROM tracks WHERE rank = 2 AND core = 3 AND pipe = 'MTE2'");
    assert_non_null(name);
    assert_string_equal(name, "r2 AIC3 MTE2");
    free(name);
    char *late = support_query_text(db, "SELECT text FROM strings WHERE id = 8");
    assert_string_equal(late, "late string");
    free(late);
    char *site = support_query_text(
        db, "SELECT file || ':' || line || ' ' || function FROM sites WHERE id = 4");
    assert_string_equal(site, "late.c:40 late");
    free(site);
    char *cmd = support_query_text(db, "SELECT value FROM meta WHERE key = 'command_line'");
    assert_string_equal(cmd, "npurr record -k synthetic -o 'my run'");
    free(cmd);
    char *check = support_query_text(db, "SELECT value FROM meta WHERE key = 'check_message'");
    assert_string_equal(check, "all 12 tokens match");
    free(check);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM meta WHERE key LIKE 'hw.%'") > 5, 1);
    sqlite3_close(db);
}

static void test_reindex_identical(void **state) {
    (void)state;
    assert_true(support_assert_reindex_identical(g_run) > 100000);
}

static void test_zstd_cli_accepts(void **state) {
    (void)state;
    char cmd[700];
    snprintf(cmd, sizeof cmd, "zstd -q -t '%s/trace.zst'", g_run);
    assert_int_equal(system(cmd), 0);
    /* The decompressed stream starts with the header frame's tag. */
    snprintf(cmd, sizeof cmd, "zstd -q -d -c '%s/trace.zst' | head -c 4 | grep -q NPRH", g_run);
    assert_int_equal(system(cmd), 0);
}

static uint64_t g_prune_rank, g_prune_lo, g_prune_hi;
static int keep_prune(const engine_event *e) {
    return e->rank == g_prune_rank && e->time >= g_prune_lo && e->time <= g_prune_hi;
}

static void test_where_decodes_only_overlapping_chunks(void **state) {
    (void)state;
    sqlite3 *db = open_index(g_run);
    char err[512];
    assert_int_equal(rec_register_events_vtab(db, g_run, err, sizeof err), 0);
    /* Rank 2 lives in chunks 2 and 3 (ids 2, 3); the time range starts
     * inside chunk 2 and ends inside chunk 3: two chunks of four overlap. */
    g_prune_rank = 2;
    g_prune_lo = 1000ull * (REC_CHUNK_EVENTS + 1000);
    g_prune_hi = 1000ull * (2 * REC_CHUNK_EVENTS + 1000);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM chunks WHERE rank_min <= 2 AND rank_max >= 2"
             " AND last_time >= %llu AND first_time <= %llu",
             (unsigned long long)g_prune_lo, (unsigned long long)g_prune_hi);
    int64_t overlapping = q_i64(db, sql);
    assert_int_equal(overlapping, 2);
    uint64_t before = rec_events_vtab_chunks_decoded();
    char where[200];
    snprintf(where, sizeof where, "WHERE rank = 2 AND time >= %llu AND time <= %llu",
             (unsigned long long)g_prune_lo, (unsigned long long)g_prune_hi);
    size_t rows = compare_events(db, where, keep_prune);
    assert_true(rows > 1000);
    assert_int_equal(rec_events_vtab_chunks_decoded() - before, overlapping);

    /* Rank 0 only exists in chunk 1; a short seq range lies in one chunk. */
    int64_t rank0 = 0;
    for (uint64_t i = 0; i < NEV; i++) rank0 += g_ev[i].rank == 0;
    before = rec_events_vtab_chunks_decoded();
    assert_int_equal(q_i64(db, "SELECT count(*) FROM events WHERE rank = 0"), rank0);
    assert_int_equal(rec_events_vtab_chunks_decoded() - before, 1);
    before = rec_events_vtab_chunks_decoded();
    assert_int_equal(q_i64(db, "SELECT count(*) FROM events WHERE kind = 'xfer_issue' AND seq > "
                               "100000 AND seq <= 100010"),
                     1);
    assert_int_equal(rec_events_vtab_chunks_decoded() - before, 1);

    /* A join probing one seq per wait decodes each chunk once, not once per
     * probe, and finds every wait's begin event. */
    before = rec_events_vtab_chunks_decoded();
    assert_int_equal(q_i64(db, "SELECT count(*) FROM waits w JOIN events e ON e.seq = w.begin_seq"
                               " WHERE e.kind LIKE '%wait_begin' AND e.rank = w.rank"),
                     q_i64(db, "SELECT count(*) FROM waits"));
    assert_true(rec_events_vtab_chunks_decoded() - before <= 4);
    sqlite3_close(db);
}

/* waits is a view over wait_rows (index version 2) that must give every
 * column the wide table gave. Each derived column is checked against a
 * source that does not go through the view's arithmetic: the events
 * themselves (rank, core, times, the kind of wait they began), the track
 * id's definition in engine.h (the waker's rank and core: the waker's
 * track may have no events, so no tracks row), strings (the role). */
static void test_waits_view_matches_storage(void **state) {
    (void)state;
    sqlite3 *db = open_index(g_run);
    char err[512];
    assert_int_equal(rec_register_events_vtab(db, g_run, err, sizeof err), 0);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'view'"
                               " AND name = 'waits'"), 1);
    assert_int_equal(q_i64(db, "SELECT value FROM meta WHERE key = 'index_version'"),
                     REC_INDEX_VERSION);
    /* The documented columns, in the documented order. */
    char *cols = support_query_text(
        db, "SELECT group_concat(name, ',') FROM pragma_table_info('waits')");
    assert_string_equal(cols, "id,track,rank,core,role,kind,object,site,begin_seq,end_seq,"
                              "begin_ps,end_ps,dur_ps,expected,seen,waker_track,waker_seq,"
                              "waker_rank,waker_core,cause");
    free(cols);
    int64_t n = q_i64(db, "SELECT count(*) FROM waits");
    assert_true(n > 1000);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM wait_rows"), n);
    assert_true(q_i64(db, "SELECT count(*) FROM waits WHERE waker_track IS NOT NULL") > 1000);
    assert_true(q_i64(db, "SELECT count(*) FROM waits WHERE role IS NOT NULL") > 1000);
    assert_true(q_i64(db, "SELECT count(DISTINCT kind) FROM waits") >= 3);
    char bad[4096];
    snprintf(bad, sizeof bad,
        "SELECT count(*) FROM waits w JOIN wait_rows r ON r.id = w.id"
        " JOIN events b ON b.seq = w.begin_seq"
        " LEFT JOIN events e ON e.seq = w.end_seq"
        " LEFT JOIN objects o ON o.id = b.object"
        " WHERE w.rank IS NOT b.rank OR w.core IS NOT b.core OR w.begin_ps IS NOT b.time"
        "  OR w.track IS NOT r.track OR w.begin_seq IS NOT r.begin_seq"
        "  OR (w.end_seq IS NOT NULL AND w.end_ps IS NOT e.time)"
        "  OR (w.end_seq IS NULL AND w.end_ps IS NOT"
        "      (SELECT CAST(value AS INT) FROM meta WHERE key = 'end_time_ps'))"
        "  OR w.dur_ps IS NOT w.end_ps - w.begin_ps"
        "  OR (w.waker_track IS NULL) != (w.waker_rank IS NULL OR w.waker_core IS NULL)"
        "  OR w.waker_track / %d != w.waker_rank * %d + w.waker_core OR w.waker_core >= %d"
        "  OR w.role IS NOT (SELECT text FROM strings s WHERE s.id = r.role)"
        "  OR w.kind IS NOT CASE b.kind WHEN 'flag_wait_begin' THEN 'flag'"
        "   WHEN 'pipe_wait_begin' THEN 'pipe' WHEN 'xcore_wait_begin' THEN 'xcore'"
        "   WHEN 'barrier_begin' THEN 'barrier'"
        "   ELSE CASE o.kind WHEN 'ring_head' THEN 'ring_space' WHEN 'ring_tail' THEN 'ring_data'"
        "    ELSE 'gm' END END"
        "  OR w.object IS NOT r.object OR w.site IS NOT r.site OR w.expected IS NOT r.expected"
        "  OR w.seen IS NOT r.seen OR w.waker_seq IS NOT r.waker_seq OR w.cause IS NOT r.cause",
        PIPE_COUNT, CPR, CPR);
    assert_int_equal(q_i64(db, bad), 0);
    sqlite3_close(db);
}

static void copy_file(const char *from, const char *to, long keep) {
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    assert_non_null(in);
    assert_non_null(out);
    for (long i = 0; i < keep; i++) {
        int c = fgetc(in);
        assert_true(c != EOF);
        fputc(c, out);
    }
    fclose(in);
    fclose(out);
}

static void test_truncated_trace(void **state) {
    (void)state;
    sqlite3 *db = open_index(g_run);
    int64_t off3 = q_i64(db, "SELECT offset FROM chunks WHERE id = 3");
    int64_t len3 = q_i64(db, "SELECT compressed_bytes FROM chunks WHERE id = 3");
    int64_t last2 = q_i64(db, "SELECT last_seq FROM chunks WHERE id = 2");
    sqlite3_close(db);

    char cut[400], from[400], to[500], err[1024];
    snprintf(cut, sizeof cut, "%s/cut", g_tmp);
    assert_int_equal(mkdir(cut, 0755), 0);
    snprintf(from, sizeof from, "%s/trace.zst", g_run);
    snprintf(to, sizeof to, "%s/trace.zst", cut);
    copy_file(from, to, (long)(off3 + len3 / 2));

    rec_reader *r;
    assert_int_equal(rec_reader_open(cut, &r, err, sizeof err), 0);
    assert_string_equal(rec_reader_meta(r, "kernel"), "synthetic");
    engine_event ev;
    uint64_t n = 0;
    int k;
    while ((k = rec_reader_next(r, &ev)) == 1) {
        assert_memory_equal(&ev, &g_ev[n], sizeof ev);
        n++;
    }
    assert_int_equal(k, -1);
    assert_int_equal(n, (uint64_t)last2);
    assert_true(rec_reader_truncated(r));
    assert_int_equal(rec_reader_complete_seq(r), (uint64_t)last2);
    rec_reader_close(r);

    assert_int_equal(rec_reindex(cut, err, sizeof err), 1);
    char expect[64];
    snprintf(expect, sizeof expect, "complete up to seq %lld", (long long)last2);
    assert_non_null(strstr(err, expect));
    db = open_index(cut);
    char *outcome = support_query_text(db, "SELECT value FROM meta WHERE key = 'outcome'");
    assert_string_equal(outcome, "truncated");
    free(outcome);
    char *msg = support_query_text(db, "SELECT value FROM meta WHERE key = 'outcome_message'");
    assert_non_null(strstr(msg, expect));
    free(msg);
    assert_int_equal(q_i64(db, "SELECT count(*) FROM chunks"), 2);
    sqlite3_close(db);

    rec_run_summary sum;
    assert_int_equal(rec_run_summary_read(cut, &sum, err, sizeof err), 1);
    assert_non_null(strstr(err, expect));
    rec_run_summary_free(&sum);
}

static void test_missing_trailer_is_truncated(void **state) {
    (void)state;
    sqlite3 *db = open_index(g_run);
    int64_t end4 = q_i64(db, "SELECT offset + compressed_bytes FROM chunks WHERE id = 4");
    sqlite3_close(db);
    char dir[400], from[400], to[500], err[1024];
    snprintf(dir, sizeof dir, "%s/notrailer", g_tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(from, sizeof from, "%s/trace.zst", g_run);
    snprintf(to, sizeof to, "%s/trace.zst", dir);
    copy_file(from, to, (long)end4);
    rec_run_summary sum;
    assert_int_equal(rec_run_summary_read(dir, &sum, err, sizeof err), -1);
    assert_non_null(strstr(err, "index.db is missing"));
    char expect[64];
    snprintf(expect, sizeof expect, "complete up to seq %d", NEV);
    assert_non_null(strstr(err, expect));
    assert_int_equal(rec_reindex(dir, err, sizeof err), 1);
    assert_non_null(strstr(err, "without its trailer"));
}

static void test_refuses_foreign_directory(void **state) {
    (void)state;
    char dir[400], file[500], err[1024];
    snprintf(dir, sizeof dir, "%s/foreign", g_tmp);
    assert_int_equal(mkdir(dir, 0755), 0);
    snprintf(file, sizeof file, "%s/notes.txt", dir);
    FILE *f = fopen(file, "w");
    fputs("not a run\n", f);
    fclose(f);
    engine_config cfg;
    engine_config_defaults(&cfg);
    rec_run_info info = {"synthetic", "npurr record", &cfg, CPR, 24, 48, NULL};
    rec_writer *w = NULL;
    assert_int_equal(rec_open(dir, &info, &w, err, sizeof err), -1);
    assert_null(w);
    assert_non_null(strstr(err, "not an npurr run"));
    rec_run_summary sum;
    assert_int_equal(rec_run_summary_read(dir, &sum, err, sizeof err), -1);
    assert_non_null(strstr(err, "not an npurr run"));
    assert_int_equal(rec_reindex(dir, err, sizeof err), -1);
    assert_non_null(strstr(err, "not an npurr run"));
    snprintf(file, sizeof file, "%s/nope", g_tmp);
    assert_int_equal(rec_run_summary_read(file, &sum, err, sizeof err), -1);
    assert_non_null(strstr(err, "no such run directory"));

    /* An existing npurr run may be recorded over. */
    char again[400];
    snprintf(again, sizeof again, "%s/again", g_tmp);
    assert_int_equal(rec_open(again, &info, &w, err, sizeof err), 0);
    assert_int_equal(rec_close(w, NULL, "skipped", NULL, err, sizeof err), 0);
    assert_int_equal(rec_open(again, &info, &w, err, sizeof err), 0);
    assert_int_equal(rec_close(w, NULL, "skipped", NULL, err, sizeof err), 0);
}

static void test_reader_meta_and_info(void **state) {
    (void)state;
    char err[512];
    rec_reader *r;
    assert_int_equal(rec_reader_open(g_run, &r, err, sizeof err), 0);
    assert_string_equal(rec_reader_meta(r, "config.seed"), "42");
    assert_string_equal(rec_reader_meta(r, "config.jitter"), "0.1");
    assert_string_equal(rec_reader_meta(r, "cores_per_rank"), "72");
    assert_non_null(rec_reader_meta(r, "hw.hbm_gbytes_per_s"));
    assert_null(rec_reader_meta(r, "outcome")); /* trailer not reached yet */
    engine_event ev;
    uint64_t n = 0;
    while (rec_reader_next(r, &ev) == 1) n++;
    assert_int_equal(n, NEV);
    assert_false(rec_reader_truncated(r));
    assert_string_equal(rec_reader_meta(r, "outcome"), "completed");
    assert_string_equal(rec_reader_string(r, 8), "late string");
    rec_reader_close(r);

    /* The summary `npurr info` prints (tests/e2e/recorder.sh checks the text). */
    rec_run_summary sum;
    assert_int_equal(rec_run_summary_read(g_run, &sum, err, sizeof err), 0);
    assert_string_equal(sum.outcome, "completed");
    assert_string_equal(sum.check, "passed");
    assert_string_equal(sum.check_message, "all 12 tokens match");
    assert_int_equal(sum.events, NEV);
    assert_int_equal(sum.chunks, 4);
    assert_true(sum.kind_events[EV_XFER_ISSUE] > 0);
    assert_true(sum.trace_bytes > 0);
    rec_run_summary_free(&sum);
}

static char *read_whole(const char *dir, const char *name, size_t *len) {
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    assert_true(n > 0);
    rewind(f);
    char *p = malloc((size_t)n);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return p;
}

/* Bound to one CPU, as mpirun binds each process of a split run, the
 * writer starts no worker and encodes in line: the same trace, byte for
 * byte, and the same index as with the worker. Unbound, a worker only
 * while the processes that share the CPUs are fewer than they. */
static void test_one_cpu_records_in_line(void **state) {
    (void)state;
    cpu_set_t all, one;
    assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
    int cpu = 0;
    while (!CPU_ISSET(cpu, &all)) cpu++;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
    assert_int_equal(rec_worker_has_cpu(1), 0);
    assert_null(rec_worker_start_if_cpu(1));
    char run[320];
    snprintf(run, sizeof run, "%s/one_cpu", g_tmp);
    record_run(run);
    assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
    /* unbound: a worker while the processes sharing the CPUs are fewer */
    int n = CPU_COUNT(&all);
    if (n > 1) {
        assert_int_equal(rec_worker_has_cpu(1), 1);
        assert_int_equal(rec_worker_has_cpu(n - 1), 1);
        assert_int_equal(rec_worker_has_cpu(n), 0);
    }

    size_t na, nb;
    char *a = read_whole(g_run, "trace.zst", &na), *b = read_whole(run, "trace.zst", &nb);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    free(a);
    free(b);
    char *ia = support_dump_index(g_run), *ib = support_dump_index(run);
    assert_string_equal(ia, ib);
    free(ia);
    free(ib);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_match_observed),
        cmocka_unit_test(test_derived_tables),
        cmocka_unit_test(test_waits_view_matches_storage),
        cmocka_unit_test(test_reindex_identical),
        cmocka_unit_test(test_zstd_cli_accepts),
        cmocka_unit_test(test_where_decodes_only_overlapping_chunks),
        cmocka_unit_test(test_truncated_trace),
        cmocka_unit_test(test_missing_trailer_is_truncated),
        cmocka_unit_test(test_refuses_foreign_directory),
        cmocka_unit_test(test_reader_meta_and_info),
        cmocka_unit_test(test_one_cpu_records_in_line),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

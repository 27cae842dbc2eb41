/*
 * test_analysis_deadlock.c - causes along a deadlock chain, and every query
 * of docs/sql.md run on a real deadlocked run.
 *
 * A tiny credit-flow kernel written here, on 2 nodes x 2 NPUs, has the
 * shape of the layered dispatch's credit leak:
 *   rank 0  RDMASender            RingWaitSpace on the RDMA ring (its head,
 *                                 the credit counter, lives on rank 0),
 *                                 RdmaWrite of an item, RDMA atomic +1 on the
 *                                 ring's tail (on rank 2)
 *   rank 2  RDMA2HCCSForwarder    RingWaitData, DataCopy GM->UB, an HCCS put
 *                                 to rank 3, then "fwd consumed" = i + 1
 *   rank 2  ForwarderCoordinator  waits for every 2 consumed items and
 *                                 returns 2 credits by RDMA atomic add on the
 *                                 head - except the second batch, which it
 *                                 leaks
 * With 6 items and 2 slots, the sender blocks for item 4 (head stays 2 <
 * 3), the forwarder blocks for data after item 3, and the coordinator for
 * "consumed >= 6". All three blocked waits follow the wait-for chain to the
 * sender's ring_space wait on a credit ring: credit_starvation, which
 * `stats --by cause` must rank first; the deadlock query of docs/sql.md
 * must name the ForwarderCoordinator as the last writer of the head word
 * the sender waits on.
 */
#include <libgen.h>
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
#define ITEMS 6
#define CAP 2
#define BATCH 2
#define LEAKED_BATCH 2

typedef struct credit_args {
    uint32_t ring;
    gm_t slots;      /* symmetric: the sender's source and the forwarder's slots */
    gm_t out;        /* symmetric: where the forwarder puts items on rank 3 */
    gm_t consumed;   /* on rank 2 */
} credit_args;

static void credit_kernel(const void *a) {
    const credit_args *c = a;
    int rank = GetRank(), b = GetBlockIdx();
    if (rank == 0 && b == 0) {
        SetRole("RDMASender");
        for (int i = 0; i < ITEMS; i++) {
            RingWaitSpace(c->ring, i, 1);
            gm_t slot = gm_add(c->slots, (i % CAP) * SLOT);
            RdmaWrite(gm_on_rank(slot, 2), gm_on_rank(slot, 0), SLOT);
            RingAtomicAdd(c->ring, 1, 1);
        }
    } else if (rank == 2 && b == 0) {
        SetRole("RDMA2HCCSForwarder");
        local_t ub = AllocUB(SLOT);
        for (int i = 0; i < ITEMS; i++) {
            RingWaitData(c->ring, i);
            DataCopy(ub, gm_on_rank(gm_add(c->slots, (i % CAP) * SLOT), 2), SLOT);
            SetFlag(MTE2_MTE3, 0);
            WaitFlag(MTE2_MTE3, 0);
            ShmemPutFromUB(gm_on_rank(gm_add(c->out, (i % CAP) * SLOT), 3), ub, SLOT);
            SetFlag(MTE3_S, 0);
            WaitFlag(MTE3_S, 0);
            SetValue64(c->consumed, i + 1);
        }
    } else if (rank == 2 && b == 1) {
        SetRole("ForwarderCoordinator");
        for (int k = 1; k * BATCH <= ITEMS; k++) {
            (void)WaitGM64(c->consumed, COND_GE, k * BATCH);
            if (k != LEAKED_BATCH) RingAtomicAdd(c->ring, 0, BATCH);
        }
    }
}

static char g_tmp[256], g_run[300];
static credit_args g_args;

static int record_deadlock(void **state) {
    (void)state;
    snprintf(g_tmp, sizeof g_tmp, "/tmp/npurr_anadl_XXXXXX");
    if (support_tmp_run(g_tmp, sizeof g_tmp, g_run, sizeof g_run)) return -1;
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 2;
    cfg.npus_per_node = 2;
    cfg.jitter = 0;
    /* The scenario's waits were laid out with RDMA posted straight from the
     * core: no AICPU task and no NIC message cost, so that each cause rule
     * shows up once in a known order. */
    cfg.hw.batchwrite_task_ns = 1e-6;
    cfg.hw.nic_message_ns = 1e-6;
    char err[ENGINE_ERRLEN];
    engine *e;
    rec_writer *w;
    if (support_record_start(&cfg, "credit-test", "test_analysis_deadlock", g_run, &e, &w))
        return -1;
    gm_t head, tail;
    if (engine_gm_alloc(e, 0, 8, "credit head", &head, err, sizeof err) ||
        engine_gm_alloc(e, 2, 8, "rdma tail", &tail, err, sizeof err) ||
        engine_gm_alloc(e, 2, 8, "consumed", &g_args.consumed, err, sizeof err) ||
        engine_sym_alloc(e, CAP * SLOT, "rdma slots", &g_args.slots, err, sizeof err) ||
        engine_sym_alloc(e, CAP * SLOT, "hccs out", &g_args.out, err, sizeof err))
        return -1;
    g_args.ring = engine_declare_ring(e, "rdma ch0", RING_RDMA, head, tail, 8, CAP, 0, 2);
    engine_name_word(e, g_args.consumed, 8, OBJ_WORD, "fwd consumed");
    if (engine_launch(e, "credit", credit_kernel, &g_args, 2, CORE_AIV, err, sizeof err))
        return -1;
    return support_record_to_end(e, w, OUTCOME_DEADLOCK, g_run);
}

static int remove_deadlock(void **state) {
    (void)state;
    return support_remove_dir(g_tmp);
}

static sqlite3 *open_run(void) {
    sqlite3 *db = NULL;
    char err[512];
    if (ana_open(g_run, ANA_OPEN_AS_IS, &db, NULL, err, sizeof err)) fail_msg("%s", err);
    return db;
}

/* noinline: GCC's dangling-pointer check mistakes the memstream buffer,
 * once inlined, for a pointer into this frame. */
__attribute__((noinline)) static char *run_sql(sqlite3 *db, const char *q, int csv, int *rc, char *err, size_t errlen) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    *rc = ana_sql_print(db, q, csv, f, err, errlen);
    fclose(f);
    return buf;
}

static void test_blocked_waits_are_credit_starvation(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    char err[1024];
    int rc;
    char *out = run_sql(db,
                        "SELECT w.role, w.kind, w.cause FROM waits w WHERE w.end_seq IS NULL"
                        " ORDER BY w.rank, w.core",
                        1, &rc, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "role,kind,cause\n"
                             "RDMASender,ring_space,credit_starvation\n"
                             "RDMA2HCCSForwarder,ring_data,credit_starvation\n"
                             "ForwarderCoordinator,gm,credit_starvation\n");
    free(out);
    sqlite3_close(db);
}

static void test_stats_by_cause_puts_credit_first(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    ana_stall_table t;
    char err[1024];
    assert_int_equal(ana_stall_table_get(db, ANA_BY_CAUSE, 0, &t, err, sizeof err), 0);
    assert_int_equal(t.n, 2);
    assert_string_equal(t.rows[0].group, "credit_starvation");
    assert_string_equal(t.rows[1].group, "transfer_slow");
    ana_stall_table_free(&t);
    /* Wait by wait (rules in docs/sql.md, "Causes"): the forwarder's first wait is
     * the first item's RDMA flight (5c), its flag waits its own copies (4);
     * the sender's first ring_space wait is on a credit ring (2); the
     * forwarder's second data wait began while the sender was starved and
     * inherits that (5b), as does the coordinator's wait on the forwarder
     * (5b); the coordinator's first wait is on the forwarder, who was
     * waiting for the first item in flight (5b). */
    int rc;
    char *out = run_sql(db, "SELECT role, kind, cause FROM waits ORDER BY begin_seq", 1, &rc,
                        err, sizeof err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "role,kind,cause\n"
                             "RDMA2HCCSForwarder,ring_data,transfer_slow\n"
                             "ForwarderCoordinator,gm,transfer_slow\n"
                             "RDMASender,ring_space,credit_starvation\n"
                             "RDMA2HCCSForwarder,flag,transfer_slow\n"
                             "RDMA2HCCSForwarder,flag,transfer_slow\n"
                             "RDMA2HCCSForwarder,ring_data,credit_starvation\n"
                             "ForwarderCoordinator,gm,credit_starvation\n"
                             "RDMASender,ring_space,credit_starvation\n"
                             "RDMA2HCCSForwarder,flag,transfer_slow\n"
                             "RDMA2HCCSForwarder,flag,transfer_slow\n"
                             "RDMA2HCCSForwarder,ring_data,credit_starvation\n"
                             "ForwarderCoordinator,gm,credit_starvation\n");
    free(out);
    sqlite3_close(db);
}

static void test_ring_occupancy_from_rdma_atomics(void **state) {
    (void)state;
    sqlite3 *db = open_run();
    char err[1024];
    int rc;
    /* The tail moves only by landed RDMA atomics (+1 per item) and the
     * head by returned credit batches (+2): the sender blocked with 4
     * items sent and one batch returned, so the run ends at tail 4, head 2.
     * The values come from the waits that read the words: the engine does
     * not record an RDMA atomic's operand. */
    char *out = run_sql(db, "SELECT head, tail, occupancy FROM ring_counters"
                            " ORDER BY time_ps DESC, seq DESC LIMIT 1",
                        1, &rc, err, sizeof err);
    assert_int_equal(rc, 0);
    assert_string_equal(out, "head,tail,occupancy\n2,4,2\n");
    free(out);
    sqlite3_close(db);
}

/* ------------------------------------------------------------ docs queries */

typedef struct doc_query {
    char heading[256];
    char *sql;
} doc_query;

/* Every ```sql block of docs/sql.md with the ## heading above it. */
static size_t load_doc_queries(doc_query *q, size_t max) {
    char path[1024];
    const char *src = getenv("NPURR_SOURCE_DIR");
    if (src) {
        snprintf(path, sizeof path, "%s/docs/sql.md", src);
    } else {
        char here[1024];
        snprintf(here, sizeof here, "%s", __FILE__);
        snprintf(path, sizeof path, "%s/../docs/sql.md", dirname(here));
    }
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s (set NPURR_SOURCE_DIR)", path);
    char line[2048], heading[256] = "";
    size_t n = 0;
    char *sql = NULL;
    size_t len = 0;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        if (!in && !strncmp(line, "## ", 3)) {
            snprintf(heading, sizeof heading, "%.200s", line + 3);
            heading[strcspn(heading, "\n")] = 0;
        } else if (!in && !strncmp(line, "```sql", 6)) {
            in = 1;
            sql = calloc(1, 1);
            len = 0;
        } else if (in && !strncmp(line, "```", 3)) {
            in = 0;
            if (n < max) {
                snprintf(q[n].heading, sizeof q[n].heading, "%s", heading);
                q[n++].sql = sql;
            } else {
                free(sql);
            }
            sql = NULL;
        } else if (in) {
            size_t l = strlen(line);
            sql = realloc(sql, len + l + 1);
            memcpy(sql + len, line, l + 1);
            len += l;
        }
    }
    fclose(f);
    free(sql);
    return n;
}

static void test_docs_queries(void **state) {
    (void)state;
    doc_query q[32];
    size_t n = load_doc_queries(q, 32);
    assert_true(n >= 6);
    sqlite3 *db = open_run();
    int seen_chain = 0, seen_ring = 0, seen_hccs = 0, seen_roles = 0, seen_longest = 0,
        seen_occupancy = 0;
    for (size_t i = 0; i < n; i++) {
        char err[4096];
        int rc;
        char *out = run_sql(db, q[i].sql, 1, &rc, err, sizeof err);
        if (rc) fail_msg("docs/sql.md query '%s' failed: %s", q[i].heading, err);
        /* a header line and at least one row */
        const char *nl = strchr(out, '\n');
        if (!nl || !nl[1]) fail_msg("docs/sql.md query '%s' returned no rows", q[i].heading);
        const char *row1 = nl + 1;
        if (strstr(q[i].heading, "deadlock")) {
            /* the sender's row names the coordinator that last wrote its head */
            const char *s = strstr(out, "RDMASender");
            assert_non_null(s);
            const char *eol = strchr(s, '\n');
            const char *fc = strstr(s, "ForwarderCoordinator");
            assert_true(fc && (!eol || fc < eol));
            seen_chain = 1;
        } else if (strstr(q[i].heading, "full longest")) {
            assert_true(!strncmp(row1, "rdma ch0,", 9));
            seen_ring = 1;
        } else if (strstr(q[i].heading, "HCCS bytes")) {
            assert_true(!strncmp(row1, "hccs r2->r3,", 12));
            assert_non_null(strstr(row1, ",4096,"));   /* 4 items of 1024 B */
            seen_hccs = 1;
        } else if (strstr(q[i].heading, "per role per rank")) {
            assert_non_null(strstr(out, "ForwarderCoordinator"));
            assert_non_null(strstr(out, "RDMASender"));
            seen_roles = 1;
        } else if (strstr(q[i].heading, "ten longest")) {
            size_t rows = 0;
            for (const char *p = row1; (p = strchr(p, '\n')); p++) rows++;
            assert_true(rows >= 3 && rows <= 10);
            seen_longest = 1;
        } else if (strstr(q[i].heading, "occupancy over time")) {
            assert_non_null(strstr(out, "rdma ch0"));
            seen_occupancy = 1;
        }
        free(out);
    }
    assert_true(seen_chain && seen_ring && seen_hccs && seen_roles && seen_longest &&
                seen_occupancy);
    for (size_t i = 0; i < n; i++) free(q[i].sql);
    sqlite3_close(db);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blocked_waits_are_credit_starvation),
        cmocka_unit_test(test_stats_by_cause_puts_credit_first),
        cmocka_unit_test(test_ring_occupancy_from_rdma_atomics),
        cmocka_unit_test(test_docs_queries),
    };
    return cmocka_run_group_tests(tests, record_deadlock, remove_deadlock);
}

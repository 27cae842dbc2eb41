/*
 * test_engine_split.c - a run split over P parts gives the stream one
 * process gives: every field of every event (seq, links, string and site
 * ids), every declaration, every scheduling segment, the outcome, its
 * message, the end time and the event count, for P = 1 to 4.
 *
 * The parts are threads here (tests/split_threads.h); npurr's MPI transport
 * moves the same buffers. Runs: EP32 dispatch-layered (RDMA both ways,
 * BarrierAll across nodes), jittered with a seeded tie order, the
 * credit-leak deadlock, a watchdog stop, and a fault on a core of the last
 * part (an RDMA ring written here, the run cut at the faulting event).
 * Also: what cannot be split is refused with a message, and the merge's
 * map of a process's seqs to the run's answers for every event of a long
 * run, not only the recent ones it keeps whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "npurr/device.h"
#include "engine/engine.h"
#include "engine/internal.h"
#include "kernels/kernels.h"
#include "tests/digest.h"
#include "tests/split_threads.h"
#include "tests/support.h"

typedef struct shape {
    const char *kernel;
    int nodes;
    uint64_t seed;
    double jitter;
    uint64_t watchdog_ps;
    const char *const *kv;
    /* instead of a kernel: sets up e and returns what to free after it */
    void *(*program)(engine *e);
} shape;

typedef struct part {
    const shape *s;
    split_end end;
    int split;                /* 0: engine_run alone */
    int blind;                /* no observer anywhere, as record --no-trace */
    digest d;
    engine_result res;
    int rc;
    char err[ENGINE_ERRLEN];
    /* recorded where it runs (engine_split_record), or alone with the
     * same observer: the events it saw, its declarations' digest */
    int here, collect;
    int renumber;             /* here: takes its events as made (engine.h on_renumber) */
    engine_event *evs;
    size_t nev, cap, pend;
    digest decls;
    digest segs;              /* the scheduling segments it saw, every process's */
    int finals;               /* sink: final windows seen, and its count */
    uint64_t final_events;
    uint64_t told[SPLIT_THREADS_MAX];   /* process 0: what each process handed in */
    int told_n;
} part;

static void c_event(void *ctx, const engine_event *ev) {
    part *p = ctx;
    if (p->nev == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 4096;
        p->evs = realloc(p->evs, p->cap * sizeof *p->evs);
        assert_non_null(p->evs);
    }
    p->evs[p->nev++] = *ev;
}
/* As the recorder does: fixes the events since the last call, keeping
 * those fix numbers. */
static void c_renumber(void *ctx, int (*fix)(void *, engine_event *), void *fix_ctx) {
    part *p = ctx;
    size_t k = p->pend;
    for (size_t i = p->pend; i < p->nev; i++)
        if (!fix(fix_ctx, &p->evs[i])) p->evs[k++] = p->evs[i];
    p->nev = p->pend = k;
}
static void c_string(void *ctx, uint32_t id, const char *text) {
    digest_on_string(&((part *)ctx)->decls, id, text);
}
static void c_site(void *ctx, const engine_site *s) { digest_on_site(&((part *)ctx)->decls, s); }
static void c_segment(void *ctx, uint64_t time, uint64_t key) {
    digest_on_segment(&((part *)ctx)->segs, time, key);
}

/* The sink hands in, at the final window, how many events this process saw. */
static void sink_window(void *ctx, uint64_t events, int final, engine_buf *out) {
    part *p = ctx;
    if (!final) return;
    p->finals++;
    p->final_events = events;
    uint64_t mine = p->nev;
    engine_buf_put(out, &mine, sizeof mine);
}
static void sink_receive(void *ctx, int from, const uint8_t *b, size_t n) {
    part *p = ctx;
    if (!n) return;   /* a window in which nothing was handed in */
    if (n != sizeof(uint64_t) || from != p->told_n || from >= SPLIT_THREADS_MAX) {
        p->told_n = -1000;
        return;
    }
    memcpy(&p->told[p->told_n++], b, n);
}

static engine *build(const shape *s, void **state, const kernel_desc **k) {
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = s->nodes;
    cfg.seed = s->seed;
    cfg.jitter = s->jitter;
    cfg.watchdog_ps = s->watchdog_ps;
    engine *e = NULL;
    if (engine_create(&cfg, &e, err, sizeof err) != ENGINE_OK) fail_msg("%s", err);
    if (s->program) {
        *k = NULL;
        *state = s->program(e);
        return e;
    }
    *k = support_kernel(s->kernel);
    kernel_opts opts;
    support_opts(*k, &opts, s->kv);
    if ((*k)->setup(e, &opts, state, err, sizeof err) != 0) fail_msg("%s: %s", s->kernel, err);
    return e;
}

static void *run_part(void *arg) {
    part *p = arg;
    void *state = NULL;
    const kernel_desc *k;
    engine *e = build(p->s, &state, &k);
    engine_observer obs = digest_observer(&p->d);
    if (p->here || p->collect) {
        digest_init(&p->decls);
        digest_init(&p->segs);
        obs = (engine_observer){.ctx = p, .on_string = c_string, .on_site = c_site,
                                .on_event = c_event, .on_segment = c_segment,
                                .on_renumber = p->renumber ? c_renumber : NULL};
    }
    /* setup declarations already went by: every part has the same */
    engine_set_observer(e, &obs);
    engine_transport t;
    p->rc = ENGINE_OK;
    if (p->split) {
        t = split_transport(&p->end);
        if (!p->here && (p->end.index != 0 || p->blind)) engine_set_observer(e, NULL);
        p->rc = engine_split(e, &t, p->err, sizeof p->err);
        engine_split_sink sink = {p, sink_window, sink_receive};
        if (p->rc == ENGINE_OK && p->here)
            p->rc = engine_split_record(e, &sink, p->err, sizeof p->err);
    }
    if (p->rc == ENGINE_OK) p->rc = engine_run(e, &p->res, p->err, sizeof p->err);
    if (k) k->destroy(state);
    else free(state);
    engine_destroy(e);
    return NULL;
}

static void run_alone(const shape *s, part *out) {
    memset(out, 0, sizeof *out);
    out->s = s;
    run_part(out);
    assert_int_equal(out->rc, ENGINE_OK);
}

static void run_split(const shape *s, int count, int blind, part *parts) {
    split_hub hub = {.count = count};
    pthread_barrier_init(&hub.meet, NULL, (unsigned)count);
    pthread_t th[SPLIT_THREADS_MAX];
    for (int q = 0; q < count; q++) {
        memset(&parts[q], 0, sizeof parts[q]);
        parts[q].s = s;
        parts[q].split = 1;
        parts[q].blind = blind;
        parts[q].end = (split_end){.hub = &hub, .index = q};
        assert_int_equal(pthread_create(&th[q], NULL, run_part, &parts[q]), 0);
    }
    for (int q = 0; q < count; q++) pthread_join(th[q], NULL);
    pthread_barrier_destroy(&hub.meet);
    for (int q = 0; q < count; q++)
        if (parts[q].rc != ENGINE_OK) fail_msg("part %d of %d: %s", q, count, parts[q].err);
}

/* P = 1..4 against one process, on every figure and the whole stream. */
static int same_for_every_split(const shape *s) {
    part alone;
    run_alone(s, &alone);
    assert_true(alone.d.events > 1000);
    for (int count = 1; count <= 4 && count <= s->nodes; count++) {
        part parts[4];
        run_split(s, count, 0, parts);
        const part *p = &parts[0];
        if (p->d.h != alone.d.h || p->d.events != alone.d.events ||
            p->d.segments != alone.d.segments || p->d.strings != alone.d.strings ||
            p->d.sites != alone.d.sites)
            fail_msg("%s, %d parts: stream differs (events %llu vs %llu, segments %llu vs %llu, "
                     "strings %llu vs %llu, sites %llu vs %llu)", s->kernel, count,
                     (unsigned long long)p->d.events, (unsigned long long)alone.d.events,
                     (unsigned long long)p->d.segments, (unsigned long long)alone.d.segments,
                     (unsigned long long)p->d.strings, (unsigned long long)alone.d.strings,
                     (unsigned long long)p->d.sites, (unsigned long long)alone.d.sites);
        for (int q = 0; q < count; q++) {
            assert_int_equal(parts[q].res.outcome, alone.res.outcome);
            assert_int_equal(parts[q].res.end_time, alone.res.end_time);
            assert_int_equal(parts[q].res.events, alone.res.events);
        }
        assert_string_equal(p->res.message, alone.res.message);
        if (alone.res.outcome != OUTCOME_FAULT)
            assert_int_equal(p->res.stall_ps, alone.res.stall_ps);
        /* with nobody observing no stream crosses: the same figures
         * (once, on the uneven split, to keep the test short); a fault
         * is not cut without the streams: the events others ran past it
         * are counted */
        if (count != 3) continue;
        run_split(s, count, 1, parts);
        for (int q = 0; q < count; q++) {
            assert_int_equal(parts[q].res.outcome, alone.res.outcome);
            assert_int_equal(parts[q].d.events, 0);
            assert_int_equal(parts[q].res.end_time, alone.res.end_time);
            if (alone.res.outcome == OUTCOME_FAULT) continue;
            assert_int_equal(parts[q].res.events, alone.res.events);
            assert_int_equal(parts[q].res.stall_ps, alone.res.stall_ps);
        }
        assert_string_equal(parts[0].res.message, alone.res.message);
    }
    return alone.res.outcome;
}

static int by_seq(const void *a, const void *b) {
    uint64_t x = ((const engine_event *)a)->seq, y = ((const engine_event *)b)->seq;
    return (x > y) - (x < y);
}

/* Recorded where it runs, P = 2 to 4: every process's observer saw its own
 * events, numbered as one process numbers them, every declaration and
 * every scheduling segment (the others' from their skeletons); together
 * they are one process's events, each once. */
static void same_recorded_where_it_runs(const shape *s, int renumber) {
    part alone;
    memset(&alone, 0, sizeof alone);
    alone.s = s;
    alone.collect = 1;
    run_part(&alone);
    assert_int_equal(alone.rc, ENGINE_OK);
    assert_true(alone.nev > 1000);
    for (int count = 2; count <= 4 && count <= s->nodes; count++) {
        part parts[4];
        split_hub hub = {.count = count};
        pthread_barrier_init(&hub.meet, NULL, (unsigned)count);
        pthread_t th[SPLIT_THREADS_MAX];
        for (int q = 0; q < count; q++) {
            memset(&parts[q], 0, sizeof parts[q]);
            parts[q].s = s;
            parts[q].split = 1;
            parts[q].here = 1;
            parts[q].renumber = renumber;
            parts[q].end = (split_end){.hub = &hub, .index = q};
            assert_int_equal(pthread_create(&th[q], NULL, run_part, &parts[q]), 0);
        }
        for (int q = 0; q < count; q++) pthread_join(th[q], NULL);
        pthread_barrier_destroy(&hub.meet);
        size_t n = 0;
        for (int q = 0; q < count; q++) {
            if (parts[q].rc != ENGINE_OK) fail_msg("part %d of %d: %s", q, count, parts[q].err);
            assert_int_equal(parts[q].res.outcome, alone.res.outcome);
            assert_int_equal(parts[q].res.end_time, alone.res.end_time);
            assert_int_equal(parts[q].res.events, alone.nev);
            if (parts[q].decls.h != alone.decls.h || parts[q].decls.strings != alone.decls.strings)
                fail_msg("%s, %d parts: part %d saw other declarations", s->kernel, count, q);
            /* every segment, the others' too: their skeletons carry the keys */
            if (parts[q].segs.h != alone.segs.h || parts[q].segs.segments != alone.segs.segments)
                fail_msg("%s, %d parts: part %d saw other segments (%llu vs %llu)", s->kernel,
                         count, q, (unsigned long long)parts[q].segs.segments,
                         (unsigned long long)alone.segs.segments);
            assert_int_equal(parts[q].finals, 1);
            assert_int_equal(parts[q].final_events, alone.nev);
            n += parts[q].nev;
        }
        assert_string_equal(parts[0].res.message, alone.res.message);
        assert_int_equal(n, alone.nev);
        assert_int_equal(parts[0].told_n, count);
        engine_event *all = malloc(n * sizeof *all);
        size_t at = 0;
        for (int q = 0; q < count; q++) {
            assert_int_equal(parts[0].told[q], parts[q].nev);
            memcpy(all + at, parts[q].evs, parts[q].nev * sizeof *all);
            at += parts[q].nev;
            free(parts[q].evs);
        }
        qsort(all, n, sizeof *all, by_seq);
        for (size_t i = 0; i < n; i++)
            if (memcmp(&all[i], &alone.evs[i], sizeof *all) != 0)
                fail_msg("%s, %d parts: event %zu (seq %llu) differs", s->kernel, count, i,
                         (unsigned long long)alone.evs[i].seq);
        free(all);
    }
    free(alone.evs);
}

static const char *const ep32[] = {"tokens", "96", "rdma-senders", "2", "rdma-coordinators", "1",
                                   "forwarders", "2", "forwarder-coordinators", "1",
                                   "hccs-receivers", "2", "dispatches", "2", NULL};
static const char *const ep32_leak[] = {"tokens", "96", "rdma-senders", "2",
                                        "rdma-coordinators", "1", "forwarders", "2",
                                        "forwarder-coordinators", "1", "hccs-receivers", "2",
                                        "inject", "credit-leak", NULL};

static void test_dispatch_ep32_is_the_same_split(void **state) {
    (void)state;
    shape s = {"dispatch-layered", 4, 0, 0.0, 0, ep32, NULL};
    assert_int_equal(same_for_every_split(&s), OUTCOME_COMPLETED);
}

static void test_jitter_and_seeded_ties_are_the_same_split(void **state) {
    (void)state;
    shape s = {"dispatch-layered", 4, 7, 0.1, 0, ep32, NULL};
    assert_int_equal(same_for_every_split(&s), OUTCOME_COMPLETED);
}

static void test_deadlock_is_the_same_split(void **state) {
    (void)state;
    shape s = {"dispatch-layered", 4, 0, 0.0, 0, ep32_leak, NULL};
    assert_int_equal(same_for_every_split(&s), OUTCOME_DEADLOCK);
}

static void test_watchdog_is_the_same_split(void **state) {
    (void)state;
    shape s = {"dispatch-layered", 4, 3, 0.0, 20000000, ep32, NULL};   /* 20 us */
    assert_int_equal(same_for_every_split(&s), OUTCOME_WATCHDOG);
}

/* Every rank writes a block to the same rank of the next node and adds 1
 * to its tail, then waits for its own tail: a ring over RDMA across every
 * part. One rank of the last node posts a misaligned atomic at round 40. */
typedef struct ring_args {
    gm_t data, tail;
    int rounds, faulty_rank, fault_round;
} ring_args;

static void k_rdma_ring(const void *a) {
    const ring_args *p = a;
    int r = GetRank(), to = (r + 8) % GetRankSize();
    for (int i = 1; i <= p->rounds; i++) {
        gm_t src = gm_add(gm_on_rank(p->data, r), 64 * (i % 4));
        SetValue64(src, i);
        RdmaWrite(gm_on_rank(gm_add(p->data, 256 + 64 * (i % 4)), to), src, 64);
        if (r == p->faulty_rank && i == p->fault_round)
            RdmaAtomicAdd(gm_add(gm_on_rank(p->tail, to), 4), 1);
        RdmaAtomicAdd(gm_on_rank(p->tail, to), 1);
        WaitGM64(gm_on_rank(p->tail, r), COND_GE, i);
        if (i % 4 == 3) RdmaQuiet();
    }
}

static void *ring_program(engine *e) {
    char err[ENGINE_ERRLEN];
    ring_args *p = calloc(1, sizeof *p);
    assert_non_null(p);
    p->rounds = 100;
    p->faulty_rank = engine_num_ranks(e) - 3;
    p->fault_round = 40;
    assert_int_equal(engine_sym_alloc(e, 512, "ring_data", &p->data, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, 16, "ring_tail", &p->tail, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_launch(e, "ring", k_rdma_ring, p, 1, CORE_AIV, err, sizeof err),
                     ENGINE_OK);
    return p;
}

static void test_fault_is_the_same_split(void **state) {
    (void)state;
    shape s = {.kernel = "rdma ring", .nodes = 4, .program = ring_program};
    assert_int_equal(same_for_every_split(&s), OUTCOME_FAULT);
}

/* One core of the last node faults right after UB scalar steps while
 * every other core of its node is done: alone, those steps run past other
 * nodes' queued work; in the part that holds only that node, nothing else
 * is queued. Either way the fault event must come where a switch at the
 * last step puts it (eng_sync_local, catch_up), so the merge orders it as
 * one process does. */
typedef struct lone_args {
    gm_t out;
} lone_args;

static void k_lone_fault(const void *a) {
    const lone_args *p = a;
    int r = GetRank(), n = GetRankSize();
    if (r >= n - 8 && r != n - 1) return;
    local_t ub = AllocUB(64);
    for (int i = 0; i < 200; i++) {
        SetValue64(gm_add(gm_on_rank(p->out, r), 8 * (i % 4)), i);
        ScalarCycles(r == n - 1 ? 97 : 60 + (uint64_t)r);
        UbSet32(ub, 0, UbGet32(ub, 4) + i);
        if (r == n - 1 && i == 120) UbGet32(ub, 1u << 20);
    }
}

static void *lone_program(engine *e) {
    char err[ENGINE_ERRLEN];
    lone_args *p = calloc(1, sizeof *p);
    assert_non_null(p);
    assert_int_equal(engine_sym_alloc(e, 64, "lone_out", &p->out, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_launch(e, "lone", k_lone_fault, p, 1, CORE_AIV, err, sizeof err),
                     ENGINE_OK);
    return p;
}

static void test_fault_after_local_steps_is_the_same_split(void **state) {
    (void)state;
    shape s = {.kernel = "lone UB fault", .nodes = 4, .program = lone_program};
    assert_int_equal(same_for_every_split(&s), OUTCOME_FAULT);
}

static void test_recorded_where_it_runs_is_the_same(void **state) {
    (void)state;
    /* as the recorder takes them (renumbered), and held by the engine */
    shape ok = {"dispatch-layered", 4, 7, 0.1, 0, ep32, NULL};
    same_recorded_where_it_runs(&ok, 1);
    same_recorded_where_it_runs(&ok, 0);
    shape leak = {"dispatch-layered", 4, 0, 0.0, 0, ep32_leak, NULL};
    same_recorded_where_it_runs(&leak, 1);
    shape lone = {.kernel = "lone UB fault", .nodes = 4, .program = lone_program};
    same_recorded_where_it_runs(&lone, 1);
    same_recorded_where_it_runs(&lone, 0);
}

/* A window costs one exchange (issue 29): what the next window needs
 * agreed travels in it, so the reductions and gathers are the few of a
 * run's start and end, however many windows it has. Recorded where it
 * runs and with nobody observing. */
static void test_a_window_costs_one_exchange(void **state) {
    (void)state;
    shape s = {"dispatch-layered", 4, 0, 0.0, 0, ep32, NULL};
    for (int blind = 0; blind <= 1; blind++) {
        part parts[2];
        split_hub hub = {.count = 2};
        pthread_barrier_init(&hub.meet, NULL, 2);
        pthread_t th[2];
        for (int q = 0; q < 2; q++) {
            memset(&parts[q], 0, sizeof parts[q]);
            parts[q].s = &s;
            parts[q].split = 1;
            parts[q].here = !blind;
            parts[q].blind = blind;
            parts[q].end = (split_end){.hub = &hub, .index = q};
            assert_int_equal(pthread_create(&th[q], NULL, run_part, &parts[q]), 0);
        }
        for (int q = 0; q < 2; q++) pthread_join(th[q], NULL);
        pthread_barrier_destroy(&hub.meet);
        for (int q = 0; q < 2; q++) {
            const split_end *x = &parts[q].end;
            if (parts[q].rc != ENGINE_OK) fail_msg("part %d: %s", q, parts[q].err);
            assert_int_equal(parts[q].res.outcome, OUTCOME_COMPLETED);
            if (x->exchanges < 100 || x->reductions + x->gathers > 20)
                fail_msg("blind %d, part %d: %u exchanges, %u reductions, %u gathers", blind, q,
                         x->exchanges, x->reductions, x->gathers);
            free(parts[q].evs);
        }
    }
}

static void test_what_cannot_be_split_is_refused(void **state) {
    (void)state;
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 2;
    engine *e;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    split_hub hub = {.count = 3};
    split_end end = {.hub = &hub, .index = 0};
    engine_transport t = split_transport(&end);
    assert_int_equal(engine_split(e, &t, err, sizeof err), ENGINE_ERR);
    assert_non_null(strstr(err, "3 processes for 2 nodes"));
    engine_destroy(e);
    cfg.pct_points = 3;
    cfg.pct_span = 100;
    cfg.pct_delay_ps = 1000;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    hub.count = 2;
    t = split_transport(&end);
    assert_int_equal(engine_split(e, &t, err, sizeof err), ENGINE_ERR);
    assert_non_null(strstr(err, "--pct-points"));
    engine_destroy(e);
}

/* Runs of 1 to 300 locals with 0 to 40 others between them (a quarter of
 * them hundreds to thousands, some a million), 3,000,000 locals in all:
 * more than the ring keeps (SEQ_TAIL). */
static void test_seq_map_answers_for_the_whole_run(void **state) {
    (void)state;
    enum { N = 3000000 };
    assert_true(N > 2 * SEQ_TAIL);   /* most lookups walk the runs */
    uint32_t *want = malloc(N * sizeof *want);
    assert_non_null(want);
    seq_map s;
    memset(&s, 0, sizeof s);
    uint64_t rng = 12345, global = 1, n = 0;
    while (n < N) {
        rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
        uint32_t len = 1 + (uint32_t)(rng >> 33) % 300;
        uint64_t pick = (rng >> 40) % 16, gap = (rng >> 20) % 41;
        if (pick >= 12) gap = 100 + (rng >> 16) % 20000;   /* varints of 2 and 3 bytes */
        if (pick == 15) gap += 1000000;
        if (len > N - n) len = (uint32_t)(N - n);
        global += gap;
        seq_map_add(&s, global, len);
        for (uint32_t i = 0; i < len; i++) want[n + i] = (uint32_t)(global + i);
        n += len;
        global += len;
    }
    assert_int_equal(s.n, N);
    for (uint64_t v = 1; v <= N; v++)
        if (seq_map_get(&s, v) != want[v - 1]) fail_msg("local %llu", (unsigned long long)v);
    assert_int_equal(seq_map_get(&s, 0), 0);
    assert_int_equal(seq_map_get(&s, N + 1), 0);
    assert_true(s.bytes.n < N);   /* about a byte a run, not 4 an event */
    seq_map_free(&s);
    free(want);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seq_map_answers_for_the_whole_run),
        cmocka_unit_test(test_dispatch_ep32_is_the_same_split),
        cmocka_unit_test(test_jitter_and_seeded_ties_are_the_same_split),
        cmocka_unit_test(test_deadlock_is_the_same_split),
        cmocka_unit_test(test_watchdog_is_the_same_split),
        cmocka_unit_test(test_fault_is_the_same_split),
        cmocka_unit_test(test_fault_after_local_steps_is_the_same_split),
        cmocka_unit_test(test_recorded_where_it_runs_is_the_same),
        cmocka_unit_test(test_a_window_costs_one_exchange),
        cmocka_unit_test(test_what_cannot_be_split_is_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

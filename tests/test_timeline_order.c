/*
 * test_timeline_order.c - the export's event order (analysis/present/
 * ana_timeline_order.c) against a plain stable sort by time: whatever the
 * order the events are emitted in, the result is that order sorted by the
 * ns each is read at, ties kept as emitted. Covers buckets of a few events
 * (sorted by insertion) and of many (by bytes), times that put every event
 * in one bucket, times so far apart that a bucket's span is capped, and
 * the refusals: an event that was not counted, and one counted but never
 * emitted. The exports' outputs are pinned end to end in
 * tests/e2e/export_perfetto.sh; this pins the sort they rest on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/present/ana_timeline.h"

/* Knuth's MMIX LCG; its high bits are random enough to draw times. */
static uint64_t rng = 1;
static uint64_t next_rand(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 11;
}

/* One event as emitted: when it is read (ps), and the packed event. */
typedef struct emitted {
    uint64_t ps;
    uint8_t type;
    uint32_t idx;
    uint32_t pos;   /* emission order */
} emitted;

static int by_ns_then_pos(const void *a, const void *b) {
    const emitted *x = a, *y = b;
    uint64_t nx = tl_ns(x->ps), ny = tl_ns(y->ps);
    if (nx != ny) return nx < ny ? -1 : 1;
    return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* A timeline of nslice slices (every third with a flow) and ncounter
 * counters, times drawn below span ps, some equal on purpose; and every
 * event it has, in a shuffled emission order. */
static emitted *make(ana_timeline *tl, uint32_t nslice, uint32_t ncounter, uint64_t span,
                     uint32_t *n) {
    memset(tl, 0, sizeof *tl);
    tl->slice = calloc(nslice + 1, sizeof *tl->slice);
    tl->flow = calloc(nslice + 1, sizeof *tl->flow);
    tl->counter = calloc(ncounter + 1, sizeof *tl->counter);
    emitted *e = calloc(4 * (size_t)nslice + ncounter + 1, sizeof *e);
    assert_non_null(tl->slice);
    assert_non_null(tl->flow);
    assert_non_null(tl->counter);
    assert_non_null(e);
    uint32_t k = 0;
    for (uint32_t i = 0; i < nslice; i++) {
        tl_slice *s = &tl->slice[tl->nslice++];
        s->b_ps = next_rand() % span;
        s->b_ps -= s->b_ps % 7000;   /* ties in ns, and ps that round alike */
        s->e_ps = s->b_ps + next_rand() % (span / 50 + 1);
        e[k++] = (emitted){s->b_ps, TL_EV_BEGIN, i, 0};
        e[k++] = (emitted){s->e_ps, TL_EV_END, i, 0};
        if (i % 3 == 0) {
            tl->flow[tl->nflow] = (tl_flow){.waker_ps = s->e_ps - (s->e_ps - s->b_ps) / 2};
            s->flow = ++tl->nflow;
            e[k++] = (emitted){s->e_ps, TL_EV_WOKEN, i, 0};
            e[k++] = (emitted){tl->flow[tl->nflow - 1].waker_ps, TL_EV_WAKE, i, 0};
        }
    }
    for (uint32_t i = 0; i < ncounter; i++) {
        tl->counter[tl->ncounter++].ps = next_rand() % span;
        e[k++] = (emitted){tl->counter[i].ps, TL_EV_COUNTER, i, 0};
    }
    for (uint32_t i = k; i > 1; i--) {
        uint32_t j = (uint32_t)(next_rand() % i);
        emitted t = e[i - 1];
        e[i - 1] = e[j];
        e[j] = t;
    }
    for (uint32_t i = 0; i < k; i++) e[i].pos = i;
    *n = k;
    return e;
}

static void check_order(uint32_t nslice, uint32_t ncounter, uint64_t span) {
    ana_timeline tl;
    uint32_t n;
    emitted *e = make(&tl, nslice, ncounter, span, &n);
    tl_order o;
    assert_int_equal(tl_order_start(&o, &tl), 0);
    assert_int_equal(o.n, n);
    for (uint32_t i = 0; i < n; i++)
        assert_int_equal(tl_order_emit(&o, e[i].ps, e[i].type, e[i].idx), 0);
    assert_int_equal(tl_order_finish(&o, &tl), 0);
    tl_order_free(&o);
    qsort(e, n, sizeof *e, by_ns_then_pos);
    assert_int_equal(tl.nev, n);
    for (uint32_t i = 0; i < n; i++) {
        tl_event got = tl_event_at(&tl, i);
        assert_int_equal(got.type, e[i].type);
        assert_int_equal(got.idx, e[i].idx);
    }
    free(e);
    ana_timeline_free(&tl);
}

static void test_few_events(void **state) {
    (void)state;
    check_order(0, 0, 1000);
    check_order(1, 0, 1000);
    check_order(5, 3, 100000);
}

static void test_many_buckets(void **state) {
    (void)state;
    check_order(60000, 5000, 400000000ull);   /* ~0.4 ms: several bytes a bucket */
    check_order(20000, 0, 3000);              /* everything in a few ns */
}

static void test_far_apart(void **state) {
    (void)state;
    /* ns beyond 2^32 x the bucket count: a bucket spans 2^32 ns at most. */
    check_order(3000, 100, UINT64_MAX / 4);
}

static void test_refusals(void **state) {
    (void)state;
    ana_timeline tl;
    uint32_t n;
    emitted *e = make(&tl, 100, 10, 1000000, &n);
    tl_order o;
    assert_int_equal(tl_order_start(&o, &tl), 0);
    uint64_t late = 0;
    for (uint32_t i = 0; i < n; i++)
        if (e[i].ps > late) late = e[i].ps;
    /* Beyond every counted time: no bucket holds it. */
    assert_int_equal(tl_order_emit(&o, late + 1000000000ull, TL_EV_BEGIN, 0), -1);
    for (uint32_t i = 0; i + 1 < n; i++)
        assert_int_equal(tl_order_emit(&o, e[i].ps, e[i].type, e[i].idx), 0);
    /* Its bucket is full once every counted event of its time is in. */
    assert_int_equal(tl_order_emit(&o, e[n - 1].ps, e[n - 1].type, e[n - 1].idx), 0);
    assert_int_equal(tl_order_emit(&o, e[n - 1].ps, e[n - 1].type, e[n - 1].idx), -1);
    tl_order_free(&o);
    /* One never emitted: finishing refuses. */
    assert_int_equal(tl_order_start(&o, &tl), 0);
    for (uint32_t i = 1; i < n; i++)
        assert_int_equal(tl_order_emit(&o, e[i].ps, e[i].type, e[i].idx), 0);
    assert_int_equal(tl_order_finish(&o, &tl), -1);
    tl_order_free(&o);
    free(e);
    ana_timeline_free(&tl);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_few_events),
        cmocka_unit_test(test_many_buckets),
        cmocka_unit_test(test_far_apart),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

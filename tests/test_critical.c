/*
 * test_critical.c - the critical path walk on runs written by hand.
 *
 * Each case builds a few events as the engine would emit them (times,
 * links, a transfer's start in its completion's value) and checks where
 * the walk attributes each picosecond: a transfer's serial time and
 * latency, a pipe queued behind the previous transfer, a wait released by
 * another core's store, RDMA ops queued at their NIC (the tx calendar the
 * loader replays), a deadlock's blocked wait. Every case also checks the
 * invariant the table promises: segments adjacent, from 0 to end_time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/critical/ana_crit.h"

#define CPR 4   /* cores per rank */

typedef struct built {
    ana_crit_run run;
    ana_crit_ev ev[64];
} built;

static void start_run(built *b, int ranks) {
    memset(b, 0, sizeof *b);
    b->run.ev = b->ev;
    b->run.n = 1;
    b->run.cores_per_rank = CPR;
    b->run.ncores = (size_t)ranks * CPR;
    b->run.outcome = OUTCOME_COMPLETED;
    ana_crit_model *m = &b->run.m;
    m->mte_lat = 200;
    m->hccs_lat = 300;
    m->rdma_lat = 1000;
    m->xcore_lat = 10;
    m->barrier_lat = 20;
    m->mte_ppb = 1.0;
    m->hbm_ppb = 0.1;
    m->hccs_ppb = 0.5;
    m->nic_ppb = 1.0;
    m->npus_per_node = 2;
    m->num_aic = 1;
}

static uint32_t add(built *b, int kind, uint64_t time, int rank, int core) {
    uint32_t s = (uint32_t)b->run.n++;
    ana_crit_ev *e = &b->ev[s];
    e->kind = (uint8_t)kind;
    e->time = time;
    e->rank = (uint16_t)rank;
    e->core = (uint16_t)core;
    e->peer = (uint16_t)rank;
    return s;
}

/* An issue and its completion: kind on pipe, from start to done. */
static uint32_t xfer(built *b, int kind, int pipe, uint64_t issue, uint64_t start, uint64_t done,
                     uint64_t bytes, int rank, int core, int peer, uint32_t *issue_seq) {
    uint32_t i = add(b, EV_XFER_ISSUE, issue, rank, core);
    b->ev[i].sub = (uint8_t)kind;
    b->ev[i].pipe = (uint8_t)pipe;
    b->ev[i].len = bytes;
    b->ev[i].start = start;
    b->ev[i].peer = (uint16_t)peer;
    if (issue_seq) *issue_seq = i;
    return i;
}

static uint32_t done(built *b, uint32_t issue, uint64_t time) {
    const ana_crit_ev *i = &b->ev[issue];
    uint32_t d = add(b, EV_XFER_DONE, time, i->rank, i->core);
    b->ev[d].sub = i->sub;
    b->ev[d].pipe = i->pipe;
    b->ev[d].len = i->len;
    b->ev[d].start = i->start;
    b->ev[d].peer = i->peer;
    b->ev[d].link = issue;
    return d;
}

static ana_crit_seg *walk(built *b, uint64_t end, size_t *n) {
    char err[256] = "";
    b->run.end_time = end;
    assert_int_equal(ana_crit_index(&b->run, err, sizeof err), 0);
    ana_crit_seg *s = NULL;
    int rc = ana_crit_walk(&b->run, &s, n, err, sizeof err);
    if (rc) fail_msg("walk: %s", err);
    /* adjacent, from 0 to the end: the sum is the end time */
    assert_true(*n > 0);
    assert_int_equal(s[0].start, 0);
    assert_int_equal(s[*n - 1].end, end);
    uint64_t sum = 0;
    for (size_t i = 0; i < *n; i++) {
        if (i) assert_int_equal(s[i].start, s[i - 1].end);
        assert_true(s[i].end > s[i].start);
        sum += s[i].end - s[i].start;
    }
    assert_int_equal(sum, end);
    return s;
}

/* The indexes ana_crit_index allocated (ev is the built array). */
static void finish(built *b, ana_crit_seg *s) {
    free(s);
    free(b->run.done_seq);
    free(b->run.done_first);
    free(b->run.open_wait);
}

static uint64_t class_total(const ana_crit_seg *s, size_t n, int cls) {
    uint64_t t = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i].cls == cls) t += s[i].end - s[i].start;
    return t;
}

/* scalar 0..10, an MTE2 of 100 B (100 ps at the core's rate, HBM 10 ps)
 * then 200 ps latency, the scalar unit waiting on it by flag, 5 ps more. */
static void test_transfer_and_flag_wait(void **state) {
    (void)state;
    built b;
    start_run(&b, 1);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    uint32_t is;
    xfer(&b, XFER_MTE2, PIPE_MTE2, 10, 10, 310, 100, 0, 1, 0, &is);
    add(&b, EV_FLAG_WAIT_BEGIN, 12, 0, 1);
    uint32_t d = done(&b, is, 310);
    uint32_t we = add(&b, EV_FLAG_WAIT_END, 310, 0, 1);
    b.ev[we].link = d;
    add(&b, EV_KERNEL_END, 315, 0, 1);
    size_t n;
    ana_crit_seg *s = walk(&b, 315, &n);
    assert_int_equal(class_total(s, n, CRIT_SCALAR), 15);
    assert_int_equal(class_total(s, n, CRIT_MTE), 300);
    assert_int_equal(class_total(s, n, CRIT_SYNC), 0);
    finish(&b, s);
}

/* A second transfer on the same pipe starts when the first one's serial
 * time ends: the path runs through the first one, not through sync. The
 * HBM (1 ps/B) is slower than the core's MTE rate here, so it gets the
 * serial time. */
static void test_pipe_queue(void **state) {
    (void)state;
    built b;
    start_run(&b, 1);
    b.run.m.hbm_ppb = 2.0;
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    uint32_t i1, i2;
    xfer(&b, XFER_MTE3, PIPE_MTE3, 0, 0, 0, 100, 0, 1, 0, &i1);      /* serial 0..200 */
    xfer(&b, XFER_MTE3, PIPE_MTE3, 4, 200, 0, 100, 0, 1, 0, &i2);    /* serial 200..400 */
    uint32_t d1 = done(&b, i1, 400);
    uint32_t d2 = done(&b, i2, 600);
    (void)d1;
    uint32_t pb = add(&b, EV_PIPE_WAIT_BEGIN, 8, 0, 1);
    (void)pb;
    uint32_t pe = add(&b, EV_PIPE_WAIT_END, 600, 0, 1);
    b.ev[pe].link = d2;
    add(&b, EV_KERNEL_END, 600, 0, 1);
    size_t n;
    ana_crit_seg *s = walk(&b, 600, &n);
    assert_int_equal(class_total(s, n, CRIT_HBM), 400);
    assert_int_equal(class_total(s, n, CRIT_MTE), 200);   /* the latency of the second */
    assert_int_equal(class_total(s, n, CRIT_SYNC), 0);
    assert_int_equal(class_total(s, n, CRIT_SCALAR), 0);
    finish(&b, s);
}

/* Core 2 of rank 0 polls a word core 1 of rank 1 stores at 100; it wakes
 * at 150 (the hop), ends at 160. */
static void test_wait_released_by_other_core(void **state) {
    (void)state;
    built b;
    start_run(&b, 2);
    add(&b, EV_KERNEL_BEGIN, 0, 1, 1);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 2);
    add(&b, EV_GM_WAIT_BEGIN, 20, 0, 2);
    uint32_t st = add(&b, EV_GM_STORE, 100, 1, 1);
    uint32_t we = add(&b, EV_GM_WAIT_END, 150, 0, 2);
    b.ev[we].link = st;
    add(&b, EV_KERNEL_END, 160, 0, 2);
    add(&b, EV_KERNEL_END, 120, 1, 1);
    size_t n;
    ana_crit_seg *s = walk(&b, 160, &n);
    assert_int_equal(n, 3);
    assert_int_equal(s[0].cls, CRIT_SCALAR);   /* the writer's 100 ps */
    assert_int_equal(s[0].rank, 1);
    assert_int_equal(s[0].end, 100);
    assert_int_equal(s[1].cls, CRIT_SYNC);
    assert_int_equal(s[1].sub, CRIT_SUB_POLL);
    assert_int_equal(s[2].cls, CRIT_SCALAR);   /* the waiter after it woke */
    assert_int_equal(s[2].rank, 0);
    finish(&b, s);
}

/* Two RDMA writes of 1000 B (1000 ps each at the NIC) posted together from
 * rank 0 to rank 2: the second leaves the NIC at 2000, lands one latency
 * later. The walk knows from the replayed calendar that it queued at its
 * own NIC (tx), not at the destination. */
static void test_rdma_queued_at_source_nic(void **state) {
    (void)state;
    built b;
    start_run(&b, 3);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    uint32_t i1, i2;
    xfer(&b, XFER_RDMA_WRITE, PIPE_NIC, 0, 0, 0, 1000, 0, 1, 2, &i1);
    xfer(&b, XFER_RDMA_WRITE, PIPE_NIC, 0, 0, 0, 1000, 0, 1, 2, &i2);
    done(&b, i1, 2000);
    uint32_t d2 = done(&b, i2, 3000);
    add(&b, EV_KERNEL_BEGIN, 0, 2, 1);
    add(&b, EV_GM_WAIT_BEGIN, 0, 2, 1);
    uint32_t we = add(&b, EV_GM_WAIT_END, 3000, 2, 1);
    b.ev[we].link = d2;
    add(&b, EV_KERNEL_END, 3010, 2, 1);
    add(&b, EV_KERNEL_END, 4000, 0, 1);   /* rank 0 waits for the ack */
    b.run.end_time = 4000;
    size_t n;
    ana_crit_seg *s = walk(&b, 4000, &n);
    /* the ack of the second (1000), its latency (1000), its NIC time: 2000
     * at rank 0's tx, nothing at rank 2's rx */
    assert_int_equal(class_total(s, n, CRIT_RDMA_LATENCY), 2000);
    assert_int_equal(class_total(s, n, CRIT_NIC), 2000);
    for (size_t i = 0; i < n; i++)
        if (s[i].cls == CRIT_NIC) {
            assert_int_equal(s[i].sub, CRIT_SUB_TX);
            assert_int_equal(s[i].rank, 0);
        }
    finish(&b, s);
}

/* Core 1 posts 1000 B at 0, core 2 posts 1000 B at 500 on the same NIC:
 * the second begins sending at 1000, when the first is sent. Its path
 * stays on the NIC back to the first op and that op's poster; core 2's
 * 500 ps before its post are not on it. */
static void test_rdma_chain_through_the_nic(void **state) {
    (void)state;
    built b;
    start_run(&b, 3);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 2);
    uint32_t i1, i2;
    xfer(&b, XFER_RDMA_WRITE, PIPE_NIC, 0, 0, 0, 1000, 0, 1, 2, &i1);
    xfer(&b, XFER_RDMA_WRITE, PIPE_NIC, 500, 500, 0, 1000, 0, 2, 2, &i2);
    done(&b, i1, 2000);
    uint32_t d2 = done(&b, i2, 3000);
    add(&b, EV_KERNEL_BEGIN, 0, 2, 1);
    add(&b, EV_GM_WAIT_BEGIN, 0, 2, 1);
    uint32_t we = add(&b, EV_GM_WAIT_END, 3000, 2, 1);
    b.ev[we].link = d2;
    add(&b, EV_KERNEL_END, 3000, 2, 1);
    size_t n;
    ana_crit_seg *s = walk(&b, 3000, &n);
    assert_int_equal(class_total(s, n, CRIT_NIC), 2000);
    assert_int_equal(class_total(s, n, CRIT_SCALAR), 0);
    assert_int_equal(class_total(s, n, CRIT_RDMA_LATENCY), 1000);
    finish(&b, s);
}

/* Ranks 0 and 1 each send 1000 B to rank 2 at 0: both leave their NICs at
 * 1000, arrive at 1000 (tx begin + latency) and rank 2's rx takes them one
 * after the other, so the second completes at 3000 instead of 2000. Its
 * NIC time splits at 1000, where the replayed calendar says it was sent:
 * tx at rank 1 before, rx at rank 2 after. */
static void test_rdma_waits_at_destination_rx(void **state) {
    (void)state;
    built b;
    start_run(&b, 3);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    add(&b, EV_KERNEL_BEGIN, 0, 1, 1);
    uint32_t i1, i2;
    xfer(&b, XFER_RDMA_WRITE, PIPE_NIC, 0, 0, 0, 1000, 0, 1, 2, &i1);
    xfer(&b, XFER_RDMA_WRITE, PIPE_NIC, 0, 0, 0, 1000, 1, 1, 2, &i2);
    done(&b, i1, 2000);
    uint32_t d2 = done(&b, i2, 3000);
    add(&b, EV_KERNEL_BEGIN, 0, 2, 1);
    add(&b, EV_GM_WAIT_BEGIN, 0, 2, 1);
    uint32_t we = add(&b, EV_GM_WAIT_END, 3000, 2, 1);
    b.ev[we].link = d2;
    add(&b, EV_KERNEL_END, 3000, 2, 1);
    size_t n;
    ana_crit_seg *s = walk(&b, 3000, &n);
    assert_int_equal(n, 3);
    assert_int_equal(s[0].cls, CRIT_NIC);
    assert_int_equal(s[0].sub, CRIT_SUB_TX);
    assert_int_equal(s[0].rank, 1);
    assert_int_equal(s[0].end, 1000);
    assert_int_equal(s[1].cls, CRIT_NIC);
    assert_int_equal(s[1].sub, CRIT_SUB_RX);
    assert_int_equal(s[1].rank, 2);
    assert_int_equal(s[2].cls, CRIT_RDMA_LATENCY);
    finish(&b, s);
}

/* A put of 1000 B to a peer whose time is the port's (2 ps a byte and
 * 100 ps a transfer: 2100 ps), longer than the link's (500) and the HBM's
 * (1000), then the MTE and HCCS latencies (200 + 300): the walk gives the
 * 2100 ps to HCCS, not to the HBM that the link alone would have lost to. */
static void test_put_held_by_the_port(void **state) {
    (void)state;
    built b;
    start_run(&b, 2);
    b.run.m.hbm_ppb = 1.0;
    b.run.m.hccs_port_ppb = 2.0;
    b.run.m.hccs_transfer = 100;
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    uint32_t is;
    xfer(&b, XFER_MTE3, PIPE_MTE3, 10, 10, 2610, 1000, 0, 1, 1, &is);
    add(&b, EV_PIPE_WAIT_BEGIN, 10, 0, 1);
    uint32_t d = done(&b, is, 2610);
    uint32_t we = add(&b, EV_PIPE_WAIT_END, 2610, 0, 1);
    b.ev[we].link = d;
    add(&b, EV_KERNEL_END, 2610, 0, 1);
    size_t n;
    ana_crit_seg *s = walk(&b, 2610, &n);
    assert_int_equal(class_total(s, n, CRIT_HCCS), 2100);
    assert_int_equal(class_total(s, n, CRIT_HBM), 0);
    assert_int_equal(class_total(s, n, CRIT_HCCS_LATENCY), 300);
    finish(&b, s);
}

/* A deadlock: the wait that blocked last is where the path ends. */
static void test_deadlock_ends_in_blocked_wait(void **state) {
    (void)state;
    built b;
    start_run(&b, 1);
    b.run.outcome = OUTCOME_DEADLOCK;
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 2);
    add(&b, EV_GM_WAIT_BEGIN, 30, 0, 1);
    add(&b, EV_GM_WAIT_BEGIN, 50, 0, 2);
    add(&b, EV_BLOCKED, 200, 0, 1);
    add(&b, EV_BLOCKED, 200, 0, 2);
    size_t n;
    ana_crit_seg *s = walk(&b, 200, &n);
    assert_int_equal(n, 2);
    assert_int_equal(s[1].cls, CRIT_BLOCKED);
    assert_int_equal(s[1].start, 50);
    assert_int_equal(s[1].core, 2);
    assert_int_equal(s[0].cls, CRIT_SCALAR);
    finish(&b, s);
}

/* The rank's AICPU posts every RDMA op, one task (100 ps) after another:
 * core 1's op at 0 is posted at 100, core 2's (issued at 10) at 200. The
 * second op's path runs through the AICPU's whole busy stretch to core 1's
 * issue; core 2's 10 ps before its issue are not on it. */
static void test_aicpu_chain(void **state) {
    (void)state;
    built b;
    start_run(&b, 3);
    b.run.m.aicpu_task = 100;
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 2);
    uint32_t i1, i2;
    xfer(&b, XFER_RDMA_WRITE, PIPE_NIC, 0, 100, 0, 10, 0, 1, 2, &i1);
    xfer(&b, XFER_RDMA_WRITE, PIPE_NIC, 10, 200, 0, 10, 0, 2, 2, &i2);
    done(&b, i1, 1110);
    uint32_t d2 = done(&b, i2, 1210);
    add(&b, EV_KERNEL_BEGIN, 0, 2, 1);
    add(&b, EV_GM_WAIT_BEGIN, 0, 2, 1);
    uint32_t we = add(&b, EV_GM_WAIT_END, 1210, 2, 1);
    b.ev[we].link = d2;
    add(&b, EV_KERNEL_END, 1210, 2, 1);
    size_t n;
    ana_crit_seg *s = walk(&b, 1210, &n);
    assert_int_equal(class_total(s, n, CRIT_AICPU), 200);
    assert_int_equal(class_total(s, n, CRIT_NIC), 10);
    assert_int_equal(class_total(s, n, CRIT_RDMA_LATENCY), 1000);
    assert_int_equal(class_total(s, n, CRIT_SCALAR), 0);
    finish(&b, s);
}

/* A kernel fault: the path ends at the fault, not at another core's wait. */
static void test_fault_ends_the_path(void **state) {
    (void)state;
    built b;
    start_run(&b, 1);
    b.run.outcome = OUTCOME_FAULT;
    add(&b, EV_KERNEL_BEGIN, 0, 0, 1);
    add(&b, EV_KERNEL_BEGIN, 0, 0, 2);
    add(&b, EV_GM_WAIT_BEGIN, 90, 0, 2);
    uint32_t f = add(&b, EV_FAULT, 80, 0, 1);
    size_t n;
    ana_crit_seg *s = walk(&b, 100, &n);
    assert_int_equal(ana_crit_ending(&b.run), f);
    assert_int_equal(n, 2);
    assert_int_equal(s[0].cls, CRIT_SCALAR);
    assert_int_equal(s[0].core, 1);
    assert_int_equal(s[0].end, 80);
    assert_int_equal(s[1].cls, CRIT_IDLE);
    finish(&b, s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfer_and_flag_wait),
        cmocka_unit_test(test_pipe_queue),
        cmocka_unit_test(test_wait_released_by_other_core),
        cmocka_unit_test(test_rdma_queued_at_source_nic),
        cmocka_unit_test(test_rdma_waits_at_destination_rx),
        cmocka_unit_test(test_rdma_chain_through_the_nic),
        cmocka_unit_test(test_deadlock_ends_in_blocked_wait),
        cmocka_unit_test(test_fault_ends_the_path),
        cmocka_unit_test(test_put_held_by_the_port),
        cmocka_unit_test(test_aicpu_chain),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

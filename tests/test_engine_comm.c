/*
 * test_engine_comm.c - communication semantics of the emulated cluster:
 * BatchWrite's per-task overhead and flag-in-window sync (seed 002), RDMA
 * "data then tail atomic" ordering (seed 001), the steps of one RDMA op (post,
 * tx begin, arrival, completion, ack: rdma.c), bandwidth shared on one HCCS
 * link, DataCopyPad, HCCS get, and rings with named head/tail stores.
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

static char err[ENGINE_ERRLEN];

static engine *make(int nodes, int npus, double jitter, uint64_t seed) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    cfg.jitter = jitter;
    cfg.seed = seed;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    return e;
}

static engine_result run(engine *e) {
    engine_result res;
    assert_int_equal(engine_run(e, &res, err, sizeof err), ENGINE_OK);
    return res;
}

/* ------------------------------------------------------------ BatchWrite */
#define WIN 4096
typedef struct { gm_t win_out, win_in, tasks; } bw_args;

/* Every rank writes a window to each peer: 64 int32 of payload then FLAG
 * (seed 002: the flag travels at the end of the data); receivers poll the
 * flag of every source window and then read the payload. */
static void k_batchwrite(const void *a) {
    const bw_args *p = a;
    int me = GetRank(), n = GetRankSize();
    gm_t out = gm_on_rank(p->win_out, me), in = gm_on_rank(p->win_in, me);
    gm_t tasks = gm_on_rank(p->tasks, me);
    local_t ub = AllocUB(512);
    for (int dst = 0; dst < n; dst++) {
        for (int i = 0; i < 64; i++) UbSet32(ub, 4 * i, me * 1000 + dst * 100 + i);
        UbSet32(ub, 256, 0x5A5A);   /* FLAG */
        DataCopy(gm_add(out, WIN * dst), ub, 288);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
        gm_t t = gm_add(tasks, (int64_t)sizeof(batch_write_task) * dst);
        SetValue64(t, (int64_t)gm_add(out, WIN * dst).a);
        SetValue64(gm_add(t, 8), (int64_t)gm_add(p->win_in, WIN * me).a);
        SetValue64(gm_add(t, 16), 72);
        SetValue64(gm_add(t, 24), (int64_t)DT_INT32 | ((int64_t)dst << 32));
    }
    BatchWrite(tasks, n);
    for (int src = 0; src < n; src++) {
        WaitGM32(gm_add(in, WIN * src + 256), COND_EQ, 0x5A5A);
        for (int i = 0; i < 64; i += 21)
            if (GetValue32(gm_add(in, WIN * src + 4 * i)) != src * 1000 + me * 100 + i)
                SetValue32(gm_add(in, WIN * n), 1);   /* corruption marker */
    }
}

static uint64_t bw_done[16];
static int bw_n;
static void bw_observer(void *ctx, const engine_event *ev) {
    (void)ctx;
    if (ev->kind == EV_XFER_ISSUE && ev->sub == XFER_BATCHWRITE && ev->rank == 0 && bw_n < 16)
        bw_done[bw_n++] = (uint64_t)ev->value;   /* scheduled start = AICPU post time */
}

static void test_batchwrite_overhead_and_flag_sync(void **state) {
    (void)state;
    engine *e = make(2, 2, 0, 0);
    bw_args p;
    assert_int_equal(engine_sym_alloc(e, WIN * 4, "WindowsOut", &p.win_out, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, WIN * 5, "WindowsIn", &p.win_in, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, sizeof(batch_write_task) * 4, "tasks", &p.tasks, err, sizeof err), ENGINE_OK);
    bw_n = 0;
    engine_observer obs = {.on_event = bw_observer};
    engine_set_observer(e, &obs);
    assert_int_equal(engine_launch(e, "fullmesh", k_batchwrite, &p, 1, CORE_AIV, err, sizeof err), ENGINE_OK);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_COMPLETED);
    for (int rank = 0; rank < 4; rank++) {
        int32_t *marker = engine_gm_host(e, gm_add(gm_on_rank(p.win_in, rank), WIN * 4), 4);
        assert_int_equal(*marker, 0);
    }
    /* the AICPU posts rank 0's four tasks one batchwrite_task_ns apart */
    assert_int_equal(bw_n, 4);
    uint64_t task_ps = (uint64_t)(engine_get_config(e)->hw.batchwrite_task_ns * 1000);
    for (int i = 1; i < 4; i++) assert_true(bw_done[i] - bw_done[i - 1] == task_ps);
    engine_destroy(e);
}

/* ------------------------------------------------------------ RDMA ordering */
typedef struct { gm_t data, tail; int rounds; } rdma_args;

/* Rank 0 writes a block then adds 1 to rank 8's tail; rank 8 waits for each
 * tail value and checks the block is complete. RC ordering must hold even
 * with jittered transfer durations. */
static void k_rdma_order(const void *a) {
    const rdma_args *p = a;
    if (GetRank() == 0) {
        for (int i = 1; i <= p->rounds; i++) {
            gm_t src = gm_add(p->data, 1024 * (i % 4));
            SetValue64(src, i);
            SetValue64(gm_add(src, 1016), i);
            RdmaWrite(gm_on_rank(gm_add(p->data, 4096 + 1024 * (i % 4)), 8), src, 1024);
            RdmaAtomicAdd(gm_on_rank(p->tail, 8), 1);
            /* do not reuse a staging block before its write has left */
            if (i % 4 == 3) RdmaQuiet();
        }
    } else if (GetRank() == 8) {
        gm_t base = gm_on_rank(p->data, 8);
        for (int i = 1; i <= p->rounds; i++) {
            WaitGM64(gm_on_rank(p->tail, 8), COND_GE, i);
            gm_t blk = gm_add(base, 4096 + 1024 * (i % 4));
            if (GetValue64(blk) < i || GetValue64(gm_add(blk, 1016)) < i)
                SetValue64(gm_add(base, 8192), i);
        }
    }
}

static void test_rdma_data_lands_before_tail_atomic(void **state) {
    (void)state;
    engine *e = make(2, 8, 0.4, 3);
    rdma_args p = {.rounds = 200};
    assert_int_equal(engine_sym_alloc(e, 8192 + 8, "rdma_channel_data", &p.data, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, 8, "rdma_channel_tail", &p.tail, err, sizeof err), ENGINE_OK);
    engine_name_word(e, gm_on_rank(p.tail, 8), 8, OBJ_WORD, "tail@8");
    assert_int_equal(engine_launch(e, "rdma", k_rdma_order, &p, 1, CORE_AIV, err, sizeof err), ENGINE_OK);
    engine_result r = run(e);
    assert_int_equal(r.outcome, OUTCOME_COMPLETED);
    int64_t *bad = engine_gm_host(e, gm_add(gm_on_rank(p.data, 8), 8192), 8);
    assert_int_equal(*bad, 0);
    engine_destroy(e);
}

/* ------------------------------------------------------------ RDMA steps */
typedef struct { gm_t big, b, c, out; int mode; } steps_args;
static uint64_t rdma_issue[8], rdma_done[8], quiet_end;
static int n_rdma_issue, n_rdma_done;
static void rdma_observer(void *ctx, const engine_event *ev) {
    (void)ctx;
    if (ev->sub == XFER_RDMA_WRITE && ev->kind == EV_XFER_ISSUE && n_rdma_issue < 8)
        rdma_issue[n_rdma_issue++] = ev->time;
    if (ev->sub == XFER_RDMA_WRITE && ev->kind == EV_XFER_DONE && n_rdma_done < 8)
        rdma_done[n_rdma_done++] = ev->time;
    if (ev->kind == EV_PIPE_WAIT_END && ev->sub == PIPE_NIC) quiet_end = ev->time;
}

/* mode 0: one 1 MiB write, then RdmaQuiet. mode 1: ranks 0 and 1 write
 * 1 MiB each to rank 8 at once (the destination's rx is shared). mode 2: what
 * the NIC reads when the transmission begins is what lands. */
static void k_rdma_steps(const void *a) {
    const steps_args *p = a;
    int me = GetRank();
    if (p->mode == 0 && me == 0) {
        RdmaWrite(gm_on_rank(p->big, 8), p->big, 1 << 20);
        RdmaQuiet();
    } else if (p->mode == 1 && me < 2) {
        gm_t mine = gm_on_rank(gm_add(p->big, (int64_t)me << 20), me);
        RdmaWrite(gm_on_rank(mine, 8), mine, 1 << 20);
    } else if (p->mode == 3 && me == 0) {   /* to rank 9: another server, another plane */
        RdmaWrite(gm_on_rank(p->big, 9), p->big, 1 << 20);
        RdmaQuiet();
    } else if (p->mode == 2 && me == 0) {
        SetValue64(p->b, 1);
        SetValue64(p->c, 1);
        RdmaWrite(gm_on_rank(p->big, 8), p->big, 4 << 20);   /* keeps the NIC busy */
        RdmaWrite(gm_on_rank(p->out, 8), p->b, 8);            /* leaves after it */
        SetValue64(p->b, 2);                                   /* before it leaves: lands */
        RdmaQuiet();
        RdmaWrite(gm_on_rank(gm_add(p->out, 8), 8), p->c, 8); /* the NIC reads it at once */
        ScalarCycles(40000);                                   /* ~20 us: well after that */
        SetValue64(p->c, 2);                                   /* after it left: does not */
        RdmaQuiet();
    }
}

static int g_posted_by_aicpu;   /* run_steps builds an engine that replays AICPU posting */
static double g_cross_plane;    /* and, when set, with this roce_cross_plane_gbytes_per_s */

static engine *run_steps(int mode, steps_args *p) {
    engine *e = NULL;
    if (g_posted_by_aicpu || g_cross_plane > 0) {
        engine_config cfg;
        engine_config_defaults(&cfg);
        cfg.nodes = 2;
        cfg.npus_per_node = 8;
        cfg.rdma_posted_by_aicpu = g_posted_by_aicpu;
        if (g_cross_plane > 0) cfg.hw.roce_cross_plane_gbps = g_cross_plane;
        assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    } else {
        e = make(2, 8, 0, 0);
    }
    assert_int_equal(engine_sym_alloc(e, 8u << 20, "big", &p->big, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, 8, "b", &p->b, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, 8, "c", &p->c, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, 16, "out", &p->out, err, sizeof err), ENGINE_OK);
    p->mode = mode;
    n_rdma_issue = n_rdma_done = 0;
    quiet_end = 0;
    engine_observer obs = {.on_event = rdma_observer};
    engine_set_observer(e, &obs);
    assert_int_equal(engine_launch(e, "steps", k_rdma_steps, p, 1, CORE_AIV, err, sizeof err), ENGINE_OK);
    assert_int_equal(run(e).outcome, OUTCOME_COMPLETED);
    return e;
}

static void test_rdma_steps(void **state) {
    (void)state;
    steps_args p;
    engine *e = run_steps(0, &p);
    const engine_hw *hw = &engine_get_config(e)->hw;
    uint64_t lat = (uint64_t)(hw->rdma_latency_ns * 1000), wire = (uint64_t)((1 << 20) * 1000.0 / hw->roce_gbps + 0.999);
    uint64_t msg = (uint64_t)(hw->nic_message_ns * 1000);
    /* uncontended: the core posts it itself, the NIC sends the bytes at
     * line rate plus its per-message cost, one latency; the ack one later */
    assert_int_equal(n_rdma_done, 1);
    assert_int_equal(rdma_done[0], rdma_issue[0] + wire + msg + lat);
    assert_int_equal(quiet_end, rdma_done[0] + lat);
    engine_destroy(e);

    e = run_steps(1, &p);
    /* two senders, one receiver: the second waits for the first at the rx */
    assert_int_equal(n_rdma_done, 2);
    assert_int_equal(rdma_issue[0], rdma_issue[1]);
    assert_int_equal(rdma_done[0], rdma_issue[0] + wire + msg + lat);
    /* the rx (no message cost) takes the second right after the first's bytes */
    assert_int_equal(rdma_done[1], rdma_issue[1] + lat + 2 * wire);
    engine_destroy(e);

    e = run_steps(2, &p);
    int64_t *out = engine_gm_host(e, gm_on_rank(p.out, 8), 16);
    assert_int_equal(out[0], 2);
    assert_int_equal(out[1], 1);
    engine_destroy(e);
}

/* A run recorded while the AICPU posted every RDMA op replays that way: the
 * op leaves one AICPU task after the core asked for it. */
static void test_rdma_posted_by_aicpu(void **state) {
    (void)state;
    steps_args p;
    g_posted_by_aicpu = 1;
    engine *e = run_steps(0, &p);
    g_posted_by_aicpu = 0;
    const engine_hw *hw = &engine_get_config(e)->hw;
    uint64_t lat = (uint64_t)(hw->rdma_latency_ns * 1000), wire = (uint64_t)((1 << 20) * 1000.0 / hw->roce_gbps + 0.999);
    uint64_t aicpu = (uint64_t)(hw->batchwrite_task_ns * 1000), msg = (uint64_t)(hw->nic_message_ns * 1000);
    assert_int_equal(n_rdma_done, 1);
    assert_int_equal(rdma_done[0], rdma_issue[0] + aicpu + wire + msg + lat);
    engine_destroy(e);
}

/* A write to a different-numbered NPU of the other server also takes the
 * rank's share of the spine: at half the line rate it takes twice the
 * wire time, and its NIC's message cost hides under it; to the
 * same-numbered NPU it does not. */
static void test_rdma_off_plane_shares_the_spine(void **state) {
    (void)state;
    steps_args p;
    g_cross_plane = 12.5;
    engine *e = run_steps(3, &p);
    const engine_hw *hw = &engine_get_config(e)->hw;
    assert_true(hw->roce_gbps == 25.0);
    uint64_t lat = (uint64_t)(hw->rdma_latency_ns * 1000), wire = (uint64_t)((1 << 20) * 1000.0 / 25.0 + 0.999);
    uint64_t plane = (uint64_t)((1 << 20) * 1000.0 / 12.5 + 0.999);
    uint64_t msg = (uint64_t)(hw->nic_message_ns * 1000);
    assert_int_equal(n_rdma_done, 1);
    assert_int_equal(rdma_done[0], rdma_issue[0] + plane + lat);
    engine_destroy(e);
    e = run_steps(0, &p);   /* rank 0 to rank 8: its own plane */
    g_cross_plane = 0;
    assert_int_equal(rdma_done[0], rdma_issue[0] + wire + msg + lat);
    engine_destroy(e);
}

/* ------------------------------------------------------------ shared bandwidth */
typedef struct { gm_t buf; int senders; int same_link; } bwshare_args;
static uint64_t last_put_done;
static void put_done_observer(void *ctx, const engine_event *ev) {
    (void)ctx;
    if (ev->kind == EV_XFER_DONE && ev->sub == XFER_HCCS_PUT && ev->time > last_put_done)
        last_put_done = ev->time;
}

static void k_puts(const void *a) {
    const bwshare_args *p = a;
    int me = GetBlockIdx();
    if (GetRank() != 0 || me >= p->senders) return;
    int dst = p->same_link ? 1 : 1 + me;
    gm_t src = gm_add(p->buf, (int64_t)me << 22);
    ShmemPutNbi(gm_on_rank(gm_add(p->buf, (int64_t)(8 + me) << 22), dst), src, 4 << 20);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* core_rate: a core's MTE rate over HCCS (B/cycle); port: the NPU's HCCS
 * port (GB/s), over all its links. */
static uint64_t time_puts_port(int senders, int same_link, double core_rate, double port) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = 1;
    cfg.npus_per_node = 4;
    cfg.hw.mte_hccs_bytes_per_cycle = core_rate;
    cfg.hw.hccs_port_gbps = port;
    cfg.hw.hccs_transfer_ns = 0;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    bwshare_args p = {.senders = senders, .same_link = same_link};
    assert_int_equal(engine_sym_alloc(e, 16u << 22, "buf", &p.buf, err, sizeof err), ENGINE_OK);
    last_put_done = 0;
    engine_observer obs = {.on_event = put_done_observer};
    engine_set_observer(e, &obs);
    assert_int_equal(engine_launch(e, "puts", k_puts, &p, 2, CORE_AIV, err, sizeof err), ENGINE_OK);
    assert_int_equal(run(e).outcome, OUTCOME_COMPLETED);
    engine_destroy(e);
    return last_put_done;
}

/* The links alone: a port that holds nothing. */
static uint64_t time_puts(int senders, int same_link, double core_rate) {
    return time_puts_port(senders, same_link, core_rate, 1e9);
}

static void test_concurrent_puts_share_a_link(void **state) {
    (void)state;
    /* A core that can fill the link (64 B/cycle, 118 GB/s, over the 56 GB/s
     * link): 4 MiB is ~75 us of link, latency is little; two puts on one
     * link take twice as long, on two links as long as one. */
    double one = (double)time_puts(1, 1, 64);
    double two_same = (double)time_puts(2, 1, 64);
    double two_diff = (double)time_puts(2, 0, 64);
    assert_true(two_same / one > 1.8 && two_same / one < 2.2);
    assert_true(two_diff / one > 0.9 && two_diff / one < 1.1);
    /* A core that cannot fill the link (1.5 B/cycle, ~2.8 GB/s, over the
     * 20 GB/s default): a second core on the same link costs nothing. */
    one = (double)time_puts(1, 1, 1.5);
    two_same = (double)time_puts(2, 1, 1.5);
    assert_true(two_same / one > 0.9 && two_same / one < 1.1);
}

static void test_puts_on_two_links_share_the_port(void **state) {
    (void)state;
    /* With the port at one link's rate, two puts from one NPU over two
     * links take as long as two on one link: the port carries both. */
    double one = (double)time_puts_port(1, 1, 64, 56);
    double two_diff = (double)time_puts_port(2, 0, 64, 56);
    assert_true(two_diff / one > 1.8 && two_diff / one < 2.2);
    /* A port twice the link's: one link is the limit again. */
    two_diff = (double)time_puts_port(2, 0, 64, 112);
    assert_true(two_diff / one > 0.9 && two_diff / one < 1.1);
}

/* ------------------------------------------------------------ pad, get, rings */
typedef struct { gm_t src, out; } pad_args;

static void k_pad(const void *a) {
    const pad_args *p = a;
    local_t ub = AllocUB(128);
    VecDup(ub, DT_INT32, -1, 32);
    SetFlag(V_MTE2, 0);
    WaitFlag(V_MTE2, 0);
    DataCopyPadIn(ub, gm_add(p->src, 3), 37);      /* odd address and length */
    SetFlag(MTE2_MTE3, 0);
    WaitFlag(MTE2_MTE3, 0);
    DataCopy(p->out, ub, 128);
}

static void test_datacopypad_pads_with_zeros(void **state) {
    (void)state;
    engine *e = make(1, 1, 0, 0);
    pad_args p;
    assert_int_equal(engine_gm_alloc(e, 0, 64, "src", &p.src, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_gm_alloc(e, 0, 128, "out", &p.out, err, sizeof err), ENGINE_OK);
    uint8_t *src = engine_gm_host(e, p.src, 64);
    for (int i = 0; i < 64; i++) src[i] = (uint8_t)(i + 1);
    assert_int_equal(engine_launch(e, "pad", k_pad, &p, 1, CORE_AIV, err, sizeof err), ENGINE_OK);
    assert_int_equal(run(e).outcome, OUTCOME_COMPLETED);
    uint8_t *out = engine_gm_host(e, p.out, 128);
    for (int i = 0; i < 37; i++) assert_int_equal(out[i], i + 4);
    for (int i = 37; i < 64; i++) assert_int_equal(out[i], 0);       /* padded to a 32 B multiple */
    for (int i = 64; i < 128; i++) assert_int_equal(out[i], 0xff);   /* untouched */
    engine_destroy(e);
}

typedef struct { gm_t buf; uint32_t ring; } ring_args;

/* A producer on rank 0 and a consumer on rank 1 pass 100 values through a
 * 4-slot ring living on rank 1: named head/tail stores, waits for space and
 * data, wrap-around. */
static void k_ring(const void *a) {
    const ring_args *p = a;
    gm_t slots = gm_on_rank(p->buf, 1);
    if (GetRank() == 0) {
        SetRole("producer");
        int64_t head = 0;
        for (int64_t tail = 0; tail < 100; tail++) {
            if (tail - head >= 4) head = RingWaitSpace(p->ring, tail, 1);
            SetValue64(gm_add(slots, 8 * (tail % 4)), tail * 7);
            RingStoreTail(p->ring, tail + 1);
        }
    } else if (GetRank() == 1) {
        SetRole("consumer");
        int64_t tail = 0;
        for (int64_t head = 0; head < 100; head++) {
            if (head == tail) tail = RingWaitData(p->ring, head);
            if (GetValue64(gm_add(slots, 8 * (head % 4))) != head * 7) SetValue64(gm_add(slots, 64), head + 1);
            RingStoreHead(p->ring, head + 1);
        }
        /* the ring's words read back by name, into a word named here */
        NameWord(gm_add(slots, 80), 8, "consumer.done");
        SetValue64(gm_add(slots, 80), RingLoadHead(p->ring) * 1000 + RingLoadTail(p->ring));
    }
}

static int ring_heads, ring_tails;
static void ring_observer(void *ctx, const engine_event *ev) {
    (void)ctx;
    ring_heads += ev->kind == EV_RING_HEAD;
    ring_tails += ev->kind == EV_RING_TAIL;
}

static void test_ring_named_stores_and_waits(void **state) {
    (void)state;
    engine *e = make(1, 2, 0, 0);
    ring_args p;
    assert_int_equal(engine_sym_alloc(e, 128, "ring", &p.buf, err, sizeof err), ENGINE_OK);
    gm_t ctl;
    assert_int_equal(engine_sym_alloc(e, 256, "ctl", &ctl, err, sizeof err), ENGINE_OK);
    p.ring = engine_declare_ring(e, "ring r0->r1", RING_HCCS, gm_on_rank(ctl, 1),
                                 gm_add(gm_on_rank(ctl, 1), 128), 8, 4, 0, 1);
    ring_heads = ring_tails = 0;
    engine_observer obs = {.on_event = ring_observer};
    engine_set_observer(e, &obs);
    assert_int_equal(engine_launch(e, "ring", k_ring, &p, 1, CORE_AIV, err, sizeof err), ENGINE_OK);
    assert_int_equal(run(e).outcome, OUTCOME_COMPLETED);
    int64_t *bad = engine_gm_host(e, gm_add(gm_on_rank(p.buf, 1), 64), 8);
    assert_int_equal(*bad, 0);
    assert_int_equal(ring_heads, 100);
    assert_int_equal(ring_tails, 100);
    const engine_object *r = engine_object_get(e, p.ring);
    assert_int_equal(engine_word_value(e, r->head), 100);
    assert_int_equal(engine_word_value(e, r->tail), 100);
    int64_t *done = engine_gm_host(e, gm_add(gm_on_rank(p.buf, 1), 80), 8);
    assert_int_equal(*done, 100 * 1000 + 100);
    int named = 0;
    for (uint32_t id = 1; id <= engine_object_count(e); id++) {
        const engine_object *o = engine_object_get(e, id);
        const char *name = o ? engine_string(e, o->name) : NULL;
        named += name && !strcmp(name, "consumer.done") && o->rank == 1;
    }
    assert_int_equal(named, 1);
    engine_destroy(e);
}

typedef struct { gm_t buf, out; } get_args;
static void k_get(const void *a) {
    const get_args *p = a;
    if (GetRank() != 1) return;
    ShmemGetNbi(gm_on_rank(p->out, 1), gm_on_rank(p->buf, 0), 256);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
}

static void test_hccs_get_reads_the_peer(void **state) {
    (void)state;
    engine *e = make(1, 2, 0, 0);
    get_args p;
    assert_int_equal(engine_sym_alloc(e, 256, "buf", &p.buf, err, sizeof err), ENGINE_OK);
    assert_int_equal(engine_sym_alloc(e, 256, "out", &p.out, err, sizeof err), ENGINE_OK);
    uint8_t *src = engine_gm_host(e, p.buf, 256);
    for (int i = 0; i < 256; i++) src[i] = (uint8_t)(255 - i);
    assert_int_equal(engine_launch(e, "get", k_get, &p, 1, CORE_AIV, err, sizeof err), ENGINE_OK);
    assert_int_equal(run(e).outcome, OUTCOME_COMPLETED);
    assert_memory_equal(engine_gm_host(e, gm_on_rank(p.out, 1), 256), src, 256);
    engine_destroy(e);
}

/* ------------------------------------------------------------ calendar */
static void test_resource_books_first_free_gap_at_real_start(void **state) {
    (void)state;
    resource r = {.ps_per_byte = 1.0};
    /* a transfer held behind a WaitFlag books the future slot [1000, 1100) */
    assert_int_equal(resource_reserve(&r, 0, 1000, 100), 1100);
    /* one that can start now fits in the idle gap before it */
    assert_int_equal(resource_reserve(&r, 0, 0, 400), 400);
    /* one too big for the remaining gap [400, 1000) goes after the future slot */
    assert_int_equal(resource_reserve(&r, 0, 100, 700), 1800);
    /* one that fits exactly between 400 and 1000 takes it */
    assert_int_equal(resource_reserve(&r, 0, 0, 600), 1000);
    /* nothing is booked before now: intervals that ended are forgotten */
    assert_int_equal(resource_reserve(&r, 5000, 5000, 10), 5010);
    assert_int_equal(r.n, 1);
    resource_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batchwrite_overhead_and_flag_sync),
        cmocka_unit_test(test_rdma_data_lands_before_tail_atomic),
        cmocka_unit_test(test_rdma_steps),
        cmocka_unit_test(test_rdma_posted_by_aicpu),
        cmocka_unit_test(test_rdma_off_plane_shares_the_spine),
        cmocka_unit_test(test_concurrent_puts_share_a_link),
        cmocka_unit_test(test_puts_on_two_links_share_the_port),
        cmocka_unit_test(test_datacopypad_pads_with_zeros),
        cmocka_unit_test(test_ring_named_stores_and_waits),
        cmocka_unit_test(test_hccs_get_reads_the_peer),
        cmocka_unit_test(test_resource_books_first_free_gap_at_real_start),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * test_ascendc_copy.cpp - the data movement and queues of npurr's Ascend C
 * headers against values worked out by hand: DataCopyPad's blocks, gaps
 * and padding in both directions, DataCopy in blocks, SetAtomicMax/Min on
 * MTE3, TQue's first-in first-out order, and the faults a kernel earns by
 * asking a queue or UB for more than it has (each naming the kernel's line).
 *
 * Each kernel runs on one AIV core of a one-rank engine (tests/
 * ascendc_support.h); GM is read back on the host.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {   /* this cmocka's header declares its functions without it */
#include <cmocka.h>
}

#include <vector>

#include "tests/ascendc_support.h"

using namespace AscendC;

/* Two GM buffers a kernel reads and writes. */
struct InOut {
    gm_t in, out;
};

static std::vector<int32_t> iota(int n, int from) {
    std::vector<int32_t> v((size_t)n);
    for (int i = 0; i < n; i++) v[(size_t)i] = from + i;
    return v;
}

/* Runs k on io's buffers (in: in_init, out: out_init); out afterwards. */
static std::vector<int32_t> run_io(engine_kernel_fn k, const std::vector<int32_t> &in_init,
                                   const std::vector<int32_t> &out_init) {
    engine *e = acs::make();
    InOut io = {acs::gm_of(e, in_init), acs::gm_of(e, out_init)};
    acs::expect_ok(acs::run(e, k, &io));
    std::vector<int32_t> r = acs::read<int32_t>(e, io.out, out_init.size());
    engine_destroy(e);
    return r;
}

/* ------------------------------------------------------------ DataCopyPad */

/* GM -> UB: two blocks of 3 int32 (12 bytes), 8 bytes apart in GM, each
 * padded with one element on the left and two on the right (value -7),
 * one 32 B block apart in UB; UB was -1 before. All of UB's 128 bytes go
 * back out. */
static void k_pad_in(const void *a) {
    const InOut *io = static_cast<const InOut *>(a);
    TPipe pipe;
    TBuf<> buf;
    pipe.InitBuffer(buf, 128);
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    Duplicate(t, -1, 32);
    PipeBarrier<PIPE_ALL>();
    GlobalTensor<int32_t> in, out;
    in.SetGlobalBuffer(acs::p<int32_t>(io->in));
    out.SetGlobalBuffer(acs::p<int32_t>(io->out));
    DataCopyPad(t, in, DataCopyExtParams(2, 12, 8, 1), DataCopyPadExtParams<int32_t>(true, 1, 2, -7));
    PipeBarrier<PIPE_ALL>();
    DataCopy(out, t, 32);
}
static void test_data_copy_pad_in(void **state) {
    (void)state;
    std::vector<int32_t> r = run_io(k_pad_in, iota(16, 0), std::vector<int32_t>(32, 0));
    /* block 0: GM elements 0..2 at UB 1..3, padding at 0 and 4, 5 */
    const int32_t want0[6] = {-7, 0, 1, 2, -7, -7};
    /* block 1: GM bytes 20..31 (elements 5..7), at UB block 2 (one block's gap) */
    const int32_t want1[6] = {-7, 5, 6, 7, -7, -7};
    for (int i = 0; i < 6; i++) {
        assert_int_equal(r[(size_t)i], want0[i]);
        assert_int_equal(r[(size_t)(16 + i)], want1[i]);
    }
    for (int i = 8; i < 16; i++) assert_int_equal(r[(size_t)i], -1);   /* the gap is untouched */
    for (int i = 24; i < 32; i++) assert_int_equal(r[(size_t)i], -1);
}

/* UB -> GM: two blocks of 12 bytes; in UB one 32 B block apart after
 * each block's own 32 B, in GM 4 bytes apart. */
static void k_pad_out(const void *a) {
    const InOut *io = static_cast<const InOut *>(a);
    TPipe pipe;
    TBuf<> buf;
    pipe.InitBuffer(buf, 128);
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    GlobalTensor<int32_t> in, out;
    in.SetGlobalBuffer(acs::p<int32_t>(io->in));
    out.SetGlobalBuffer(acs::p<int32_t>(io->out));
    DataCopy(t, in, 32);
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(out, t, DataCopyExtParams(2, 12, 1, 4));
}
static void test_data_copy_pad_out(void **state) {
    (void)state;
    std::vector<int32_t> r = run_io(k_pad_out, iota(32, 100), std::vector<int32_t>(12, -1));
    const int32_t want[12] = {100, 101, 102, -1, 116, 117, 118, -1, -1, -1, -1, -1};
    for (int i = 0; i < 12; i++) assert_int_equal(r[(size_t)i], want[i]);
}

/* DataCopy in blocks of 32 B units: 2 blocks of one unit, GM gap one unit,
 * UB gap two units, and back out contiguously. */
static void k_blocks(const void *a) {
    const InOut *io = static_cast<const InOut *>(a);
    TPipe pipe;
    TBuf<> buf;
    pipe.InitBuffer(buf, 128);
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    Duplicate(t, 0, 32);
    PipeBarrier<PIPE_ALL>();
    GlobalTensor<int32_t> in, out;
    in.SetGlobalBuffer(acs::p<int32_t>(io->in));
    out.SetGlobalBuffer(acs::p<int32_t>(io->out));
    DataCopy(t, in, DataCopyParams(2, 1, 1, 2));
    PipeBarrier<PIPE_ALL>();
    DataCopy(out, t, 32);
}
static void test_data_copy_blocks(void **state) {
    (void)state;
    std::vector<int32_t> r = run_io(k_blocks, iota(32, 0), std::vector<int32_t>(32, -1));
    for (int i = 0; i < 8; i++) {
        assert_int_equal(r[(size_t)i], i);              /* GM block 0 at UB block 0 */
        assert_int_equal(r[(size_t)(8 + i)], 0);        /* UB gap */
        assert_int_equal(r[(size_t)(16 + i)], 0);
        assert_int_equal(r[(size_t)(24 + i)], 16 + i);  /* GM block 2 at UB block 3 */
    }
}

/* ------------------------------------------------------------ atomics */

/* The input's first 8 int32 go to out twice: under SetAtomicMax, then
 * (to out[8..15]) under SetAtomicMin; then out[16..23] plainly. */
static void k_atomic_max_min(const void *a) {
    const InOut *io = static_cast<const InOut *>(a);
    TPipe pipe;
    TBuf<> buf;
    pipe.InitBuffer(buf, 32);
    LocalTensor<int32_t> t = buf.Get<int32_t>();
    GlobalTensor<int32_t> in, out;
    in.SetGlobalBuffer(acs::p<int32_t>(io->in));
    out.SetGlobalBuffer(acs::p<int32_t>(io->out));
    DataCopy(t, in, 8);
    PipeBarrier<PIPE_ALL>();
    SetAtomicMax<int32_t>();
    DataCopy(out, t, 8);
    SetAtomicMin<int32_t>();
    DataCopy(out[8], t, 8);
    SetAtomicNone();
    DataCopy(out[16], t, 8);
}
static void test_atomic_max_min(void **state) {
    (void)state;
    std::vector<int32_t> in = {4, 2, 9, -1, 0, INT32_MIN, 3, 3};
    std::vector<int32_t> was = {5, -3, 7, 0, 0, -5, 3, INT32_MAX};
    std::vector<int32_t> out(24, 77);
    for (int i = 0; i < 8; i++) out[(size_t)i] = out[(size_t)(8 + i)] = was[(size_t)i];
    std::vector<int32_t> r = run_io(k_atomic_max_min, in, out);
    for (size_t i = 0; i < 8; i++) {
        assert_int_equal(r[i], in[i] > was[i] ? in[i] : was[i]);
        assert_int_equal(r[8 + i], in[i] < was[i] ? in[i] : was[i]);
        assert_int_equal(r[16 + i], in[i]);
    }
}

/* ------------------------------------------------------------ queues */

/* Three 32 B blocks of the input through a queue of two buffers: the
 * first two enqueued, then dequeued in order and written out; the third
 * reuses the first buffer freed. */
static void k_queue_fifo(const void *a) {
    const InOut *io = static_cast<const InOut *>(a);
    TPipe pipe;
    TQue<TPosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 32);
    GlobalTensor<int32_t> in, out;
    in.SetGlobalBuffer(acs::p<int32_t>(io->in));
    out.SetGlobalBuffer(acs::p<int32_t>(io->out));
    LocalTensor<int32_t> x = q.AllocTensor<int32_t>();
    LocalTensor<int32_t> y = q.AllocTensor<int32_t>();
    DataCopy(x, in, 8);
    DataCopy(y, in[8], 8);
    q.EnQue(x);
    q.EnQue(y);
    for (int i = 0; i < 2; i++) {
        LocalTensor<int32_t> t = q.DeQue<int32_t>();
        DataCopy(out[8 * i], t, 8);
        PipeBarrier<PIPE_ALL>();
        q.FreeTensor(t);
    }
    LocalTensor<int32_t> z = q.AllocTensor<int32_t>();
    DataCopy(z, in[16], 8);
    q.EnQue(z);
    z = q.DeQue<int32_t>();
    DataCopy(out[16], z, 8);
    q.FreeTensor(z);
}
static void test_queue_first_in_first_out(void **state) {
    (void)state;
    std::vector<int32_t> r = run_io(k_queue_fifo, iota(24, 50), std::vector<int32_t>(24, -1));
    for (int i = 0; i < 24; i++) assert_int_equal(r[(size_t)i], 50 + i);
}

/* A third AllocTensor from a queue of two buffers, none freed. */
static void k_queue_over(const void *a) {
    (void)a;
    TPipe pipe;
    TQue<TPosition::VECOUT, 2> q;
    pipe.InitBuffer(q, 2, 64);
    (void)q.AllocTensor<float>();
    (void)q.AllocTensor<float>();
    (void)q.AllocTensor<float>();
}
static void test_queue_over_allocation_faults(void **state) {
    (void)state;
    engine *e = acs::make();
    acs::expect_fault(acs::run(e, k_queue_over, nullptr), "every buffer of the queue is allocated");
    engine_destroy(e);
}

/* Two buffers of 128 KiB: more than the 910B's 192 KiB of UB. */
static void k_ub_over(const void *a) {
    (void)a;
    TPipe pipe;
    TQue<TPosition::VECIN, 2> q;
    pipe.InitBuffer(q, 2, 128 * 1024);
}
static void test_ub_over_allocation_faults(void **state) {
    (void)state;
    engine *e = acs::make();
    acs::expect_fault(acs::run(e, k_ub_over, nullptr), "UB");
    engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_copy_pad_in),
        cmocka_unit_test(test_data_copy_pad_out),
        cmocka_unit_test(test_data_copy_blocks),
        cmocka_unit_test(test_atomic_max_min),
        cmocka_unit_test(test_queue_first_in_first_out),
        cmocka_unit_test(test_queue_over_allocation_faults),
        cmocka_unit_test(test_ub_over_allocation_faults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

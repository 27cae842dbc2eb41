/*
 * test_ascendc_vector.cpp - the vector instructions of npurr's Ascend C
 * headers against values worked out by hand from the public Ascend C API
 * reference: masks (bits and counts), repeats with block and repeat
 * strides, exact integer arithmetic that wraps, Cast at edge values in
 * every round mode, the reductions (half sums rounded to half at every
 * step), Duplicate with the mask sgl-kernel-npu's dispatch uses.
 *
 * Floating overflow follows the 910B's default Inf/NaN mode (IEEE 754:
 * infinities, directed roundings stop at the largest finite); the older
 * saturation mode (INF_NAN_MODE_ENABLE=0) is not modelled.
 *
 * Each test runs one kernel on one AIV core through acs::bench (tests/
 * ascendc_support.h): inputs and the output's first contents from GM into
 * UB, the instruction, the output back.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
extern "C" {   /* this cmocka's header declares its functions without it */
#include <cmocka.h>
}

#include <cmath>
#include <limits>

#include "tests/ascendc_support.h"

using namespace AscendC;
using acs::bench;

/* ------------------------------------------------------------ masks, repeats, strides */

/* Add over one repeat of 64 floats, elements 0, 1 and 3 chosen by bits:
 * 2 and the rest keep the destination's 100. */
struct MaskBitsAdd {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> b,
                    LocalTensor<uint8_t>) {
        uint64_t mask[2] = {0xBull, 0};
        Add(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), b.ReinterpretCast<float>(),
            mask, 1, BinaryRepeatParams());
    }
};
static void test_mask_bits(void **state) {
    (void)state;
    std::vector<float> a(64), b(64, 10.0f), out(64, 100.0f);
    for (int i = 0; i < 64; i++) a[i] = (float)(i + 1);
    std::vector<float> r = bench<MaskBitsAdd>(out, a, b);
    assert_true(r[0] == 11.0f && r[1] == 12.0f && r[2] == 100.0f && r[3] == 14.0f);
    for (int i = 4; i < 64; i++) assert_true(r[i] == 100.0f);
}

/* Two repeats of the first 8 floats (one block): src0 moves one block a
 * repeat, src1 stays (repeat stride 0), dst moves two blocks. */
struct RepeatStrides {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> b,
                    LocalTensor<uint8_t>) {
        Add(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), b.ReinterpretCast<float>(),
            (uint64_t)8, 2, BinaryRepeatParams(1, 1, 1, 2, 1, 0));
    }
};
static void test_repeat_strides(void **state) {
    (void)state;
    std::vector<float> a(32), b(8), out(32, -1.0f);
    for (int i = 0; i < 32; i++) a[i] = (float)i;
    for (int i = 0; i < 8; i++) b[i] = 100.0f + (float)i;
    std::vector<float> r = bench<RepeatStrides>(out, a, b);
    for (int j = 0; j < 8; j++) {
        assert_true(r[j] == a[j] + b[j]);            /* repeat 0: block 0 */
        assert_true(r[8 + j] == -1.0f);              /* the gap dst's stride leaves */
        assert_true(r[16 + j] == a[8 + j] + b[j]);   /* repeat 1: src0 one block on, src1 again */
        assert_true(r[24 + j] == -1.0f);
    }
}

/* 16 floats (two blocks) with src0's block stride 2: its blocks 0 and 2. */
struct BlockStride {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> b,
                    LocalTensor<uint8_t>) {
        Add(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), b.ReinterpretCast<float>(),
            (uint64_t)16, 1, BinaryRepeatParams(1, 2, 1, 8, 8, 8));
    }
};
static void test_block_stride(void **state) {
    (void)state;
    std::vector<float> a(32), b(16, 0.5f), out(16, 0.0f);
    for (int i = 0; i < 32; i++) a[i] = (float)i;
    std::vector<float> r = bench<BlockStride>(out, a, b);
    for (int j = 0; j < 8; j++) {
        assert_true(r[j] == (float)j + 0.5f);
        assert_true(r[8 + j] == (float)(16 + j) + 0.5f);
    }
}

/* A mask count past a repeat (65 floats) is refused at the kernel's line. */
static void k_mask_too_big(const void *a) {
    (void)a;
    TPipe pipe;
    TBuf<> buf;
    pipe.InitBuffer(buf, 1024);
    LocalTensor<float> t = buf.Get<float>();
    Muls(t, t, 2.0f, (uint64_t)65, 1, UnaryRepeatParams());
}
static void test_mask_count_checked(void **state) {
    (void)state;
    engine *e = acs::make();
    acs::expect_fault(acs::run(e, k_mask_too_big, nullptr), "Muls: the mask selects element 64 of a repeat of 64");
    engine_destroy(e);
}

/* Duplicate with sgl-kernel-npu's status mask: element 0 of every 32 B
 * block (bits 0, 8, ..., 56), two repeats. */
struct DupStatus {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t>, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        uint64_t mask[2] = {0x0101010101010101ull, 0};
        Duplicate<int32_t>(d.ReinterpretCast<int32_t>(), 0x3F800000, mask, 2, 1, 8);
    }
};
static void test_duplicate_mask(void **state) {
    (void)state;
    std::vector<int32_t> none, out(128, 7);
    std::vector<int32_t> r = bench<DupStatus>(out, none);
    for (int i = 0; i < 128; i++) assert_int_equal(r[i], i % 8 == 0 ? 0x3F800000 : 7);
}

/* ------------------------------------------------------------ integers: exact, wrapping */

struct AddI32 {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> b,
                    LocalTensor<uint8_t>) {
        Add(d.ReinterpretCast<int32_t>(), a.ReinterpretCast<int32_t>(), b.ReinterpretCast<int32_t>(), 4);
    }
};
static void test_int32_add_wraps_exactly(void **state) {
    (void)state;
    std::vector<int32_t> a = {INT32_MAX, 16777217, -5, 100000007};
    std::vector<int32_t> b = {1, 1, INT32_MIN, 3};
    std::vector<int32_t> r = bench<AddI32>(std::vector<int32_t>(4, 0), a, b);
    assert_int_equal(r[0], INT32_MIN);          /* 2^31 - 1 + 1 wraps */
    assert_int_equal(r[1], 16777218);           /* past float's 2^24: exact */
    assert_int_equal(r[2], 2147483643);         /* -5 - 2^31 + 2^32 */
    assert_int_equal(r[3], 100000010);
}

struct MulI16 {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> b,
                    LocalTensor<uint8_t>) {
        Mul(d.ReinterpretCast<int16_t>(), a.ReinterpretCast<int16_t>(), b.ReinterpretCast<int16_t>(), 3);
    }
};
static void test_int16_mul_wraps(void **state) {
    (void)state;
    std::vector<int16_t> a = {300, -32768, -7}, b = {300, -1, 9};
    std::vector<int16_t> r = bench<MulI16>(std::vector<int16_t>(3, 0), a, b);
    assert_int_equal(r[0], 24464);     /* 90000 - 65536 */
    assert_int_equal(r[1], -32768);    /* 32768 wraps */
    assert_int_equal(r[2], -63);
}

/* Scalar forms on int32, each on its own 32 B block (vector operands are
 * 32 B aligned): Muls, Adds, Maxs. */
struct MulsAddsI32 {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        LocalTensor<int32_t> out = d.ReinterpretCast<int32_t>(), in = a.ReinterpretCast<int32_t>();
        Muls(out, in, 65536, 2);
        PipeBarrier<PIPE_V>();
        Adds(out[8], in[8], -3, 2);
        PipeBarrier<PIPE_V>();
        Maxs(out[16], in[16], 0, 2);
    }
};
static void test_int32_scalar_ops(void **state) {
    (void)state;
    std::vector<int32_t> a(24, 0);
    a[0] = 65536; a[1] = 3; a[8] = INT32_MIN; a[9] = 10; a[16] = -4; a[17] = 4;
    std::vector<int32_t> r = bench<MulsAddsI32>(std::vector<int32_t>(24, 0), a);
    assert_int_equal(r[0], 0);                  /* 2^32 wraps to 0 */
    assert_int_equal(r[1], 196608);
    assert_int_equal(r[8], 2147483645);         /* INT32_MIN - 3 wraps */
    assert_int_equal(r[9], 7);
    assert_int_equal(r[16], 0);
    assert_int_equal(r[17], 4);
}

/* ------------------------------------------------------------ Cast */

template <RoundMode M> struct CastF32ToS32 {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        Cast(d.ReinterpretCast<int32_t>(), a.ReinterpretCast<float>(), M, 8);
    }
};
static const std::vector<float> kToInt = {2.5f, -2.5f, 3.5f, -0.5f, 1.4999999f, 2147483648.0f,
                                          -3e9f, NAN};
static void expect_ints(const std::vector<int32_t> &r, const std::vector<int32_t> &want) {
    for (size_t i = 0; i < want.size(); i++)
        if (r[i] != want[i]) fail_msg("element %zu: %d, want %d", i, r[i], want[i]);
}
static void test_cast_float_to_int_every_mode(void **state) {
    (void)state;
    std::vector<int32_t> z(8, 99);
    const int32_t MX = INT32_MAX, MN = INT32_MIN;
    /* 2.5 -2.5 3.5 -0.5 1.4999999 2^31 -3e9 NaN: ties, a near-half, saturation, NaN -> 0 */
    expect_ints(bench<CastF32ToS32<RoundMode::CAST_RINT>>(z, kToInt), {2, -2, 4, 0, 1, MX, MN, 0});
    expect_ints(bench<CastF32ToS32<RoundMode::CAST_NONE>>(z, kToInt), {2, -2, 4, 0, 1, MX, MN, 0});
    expect_ints(bench<CastF32ToS32<RoundMode::CAST_FLOOR>>(z, kToInt), {2, -3, 3, -1, 1, MX, MN, 0});
    expect_ints(bench<CastF32ToS32<RoundMode::CAST_CEIL>>(z, kToInt), {3, -2, 4, 0, 2, MX, MN, 0});
    expect_ints(bench<CastF32ToS32<RoundMode::CAST_ROUND>>(z, kToInt), {3, -3, 4, -1, 1, MX, MN, 0});
    expect_ints(bench<CastF32ToS32<RoundMode::CAST_TRUNC>>(z, kToInt), {2, -2, 3, 0, 1, MX, MN, 0});
}

template <RoundMode M> struct CastF32ToF16 {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        Cast(d.ReinterpretCast<half>(), a.ReinterpretCast<float>(), M, 8);
    }
};
/* 1 + 2^-11 (a tie between 1 and 1 + 2^-10), 1 + 3 * 2^-11 (a tie between
 * mantissas 1025 and 1026), 70000 and -70000 (past half's range: infinity,
 * or 65504 where the mode rounds toward it), 1e-8 and -1e-8 (below half's
 * smallest subnormal 2^-24), 3 (exact), NaN. */
static const std::vector<float> kToHalf = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 70000.0f, -70000.0f,
                                           1e-8f, -1e-8f, 3.0f, NAN};
static void expect_bits(const std::vector<uint16_t> &r, const std::vector<uint16_t> &want) {
    for (size_t i = 0; i < want.size(); i++)
        if (r[i] != want[i]) fail_msg("element %zu: 0x%04x, want 0x%04x", i, r[i], want[i]);
}
static void test_cast_float_to_half_every_mode(void **state) {
    (void)state;
    std::vector<uint16_t> z(8, 0xAAAA);
    /* 0x3C00 = 1, 0x3C01 = 1 + 2^-10, 0x3C02 = 1 + 2^-9; 0x7C00 = inf, 0x7BFF
     * = 65504, 0x0001 = 2^-24, 0x8000 = -0, 0x4200 = 3, 0x7E00 = NaN */
    expect_bits(bench<CastF32ToF16<RoundMode::CAST_RINT>>(z, kToHalf),
                {0x3C00, 0x3C02, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x4200, 0x7E00});
    expect_bits(bench<CastF32ToF16<RoundMode::CAST_NONE>>(z, kToHalf),
                {0x3C00, 0x3C02, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x4200, 0x7E00});
    expect_bits(bench<CastF32ToF16<RoundMode::CAST_ROUND>>(z, kToHalf),
                {0x3C01, 0x3C02, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x4200, 0x7E00});
    expect_bits(bench<CastF32ToF16<RoundMode::CAST_FLOOR>>(z, kToHalf),
                {0x3C00, 0x3C01, 0x7BFF, 0xFC00, 0x0000, 0x8001, 0x4200, 0x7E00});
    expect_bits(bench<CastF32ToF16<RoundMode::CAST_CEIL>>(z, kToHalf),
                {0x3C01, 0x3C02, 0x7C00, 0xFBFF, 0x0001, 0x8000, 0x4200, 0x7E00});
    expect_bits(bench<CastF32ToF16<RoundMode::CAST_TRUNC>>(z, kToHalf),
                {0x3C00, 0x3C01, 0x7BFF, 0xFBFF, 0x0000, 0x8000, 0x4200, 0x7E00});
    expect_bits(bench<CastF32ToF16<RoundMode::CAST_ODD>>(z, kToHalf),
                {0x3C01, 0x3C01, 0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x4200, 0x7E00});
}

template <RoundMode M> struct CastF32ToBf16 {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        Cast(d.ReinterpretCast<bfloat16_t>(), a.ReinterpretCast<float>(), M, 3);
    }
};
static void test_cast_float_to_bf16(void **state) {
    (void)state;
    /* 1 + 2^-8 (a tie between 1 and 1 + 2^-7), float's largest (past
     * bfloat16's largest finite, 0x7F7F), -1.5 (exact) */
    std::vector<float> in = {1.0f + 0x1p-8f, std::numeric_limits<float>::max(), -1.5f};
    std::vector<uint16_t> z(3, 0);
    expect_bits(bench<CastF32ToBf16<RoundMode::CAST_RINT>>(z, in), {0x3F80, 0x7F80, 0xBFC0});
    expect_bits(bench<CastF32ToBf16<RoundMode::CAST_ROUND>>(z, in), {0x3F81, 0x7F80, 0xBFC0});
    expect_bits(bench<CastF32ToBf16<RoundMode::CAST_TRUNC>>(z, in), {0x3F80, 0x7F7F, 0xBFC0});
    expect_bits(bench<CastF32ToBf16<RoundMode::CAST_FLOOR>>(z, in), {0x3F80, 0x7F7F, 0xBFC0});
    expect_bits(bench<CastF32ToBf16<RoundMode::CAST_CEIL>>(z, in), {0x3F81, 0x7F80, 0xBFC0});
}

struct CastHalfToS8Trunc {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        Cast(d.ReinterpretCast<int8_t>(), a.ReinterpretCast<half>(), RoundMode::CAST_TRUNC, 6);
    }
};
static void test_cast_half_to_int8_saturates(void **state) {
    (void)state;
    std::vector<half> in = {half(200.0f), half(-200.0f), half(3.9f), half(-3.9f), half(127.5f),
                            half(-128.5f)};
    std::vector<int8_t> r = bench<CastHalfToS8Trunc>(std::vector<int8_t>(6, 55), in);
    assert_int_equal(r[0], 127);
    assert_int_equal(r[1], -128);
    assert_int_equal(r[2], 3);
    assert_int_equal(r[3], -3);
    assert_int_equal(r[4], 127);
    assert_int_equal(r[5], -128);
}

/* The dispatch's quant step: SetDeqScale, then int32 -> half CAST_ROUND. */
struct CastS32ToHalfDeq {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        SetDeqScale((half)0.5f);
        Cast(d.ReinterpretCast<half>(), a.ReinterpretCast<int32_t>(), RoundMode::CAST_ROUND, 3);
    }
};
static void test_cast_int32_to_half_deq_scale(void **state) {
    (void)state;
    std::vector<int32_t> in = {3, 2049, -7};
    /* 1.5; 1024.5 ties away to 1025 (half's step is 1 there); -3.5 is a
     * half (the mode rounds to half's precision, not to an integer) */
    expect_bits(bench<CastS32ToHalfDeq>(std::vector<uint16_t>(3, 0), in), {0x3E00, 0x6401, 0xC300});
}

/* ------------------------------------------------------------ reductions */

template <ReduceOrder O> struct WholeMax {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        WholeReduceMax(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), 5, 2, 1, 1, 8, O);
    }
};
static void test_whole_reduce_max_value_index(void **state) {
    (void)state;
    std::vector<float> in(128, 50.0f);   /* 50s past the mask's 5 elements never count */
    float first[5] = {3, 9, -1, 9, 5}, second[5] = {-4, -2, -8, -3, -2};
    for (int i = 0; i < 5; i++) { in[i] = first[i]; in[64 + i] = second[i]; }
    std::vector<float> r = bench<WholeMax<ReduceOrder::ORDER_VALUE_INDEX>>(std::vector<float>(8, 0.0f), in);
    /* repeat 0: 9 first at 1; repeat 1 (one result, 2 elements, on): -2 first at 1 */
    assert_true(r[0] == 9.0f && acs::bits(r[1]) == 1u);
    assert_true(r[2] == -2.0f && acs::bits(r[3]) == 1u);
    r = bench<WholeMax<ReduceOrder::ORDER_INDEX_VALUE>>(std::vector<float>(8, 0.0f), in);
    assert_true(acs::bits(r[0]) == 1u && r[1] == 9.0f);
}

struct BlockSumHalf {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        BlockReduceSum(d.ReinterpretCast<half>(), a.ReinterpretCast<half>(), 1, 128, 1, 1, 8);
    }
};
static void test_block_reduce_sum_half_rounds(void **state) {
    (void)state;
    std::vector<half> in(128, half(0.0f));
    in[0] = 2048.0f; in[1] = 1.0f; in[2] = 1.0f;   /* block 0 */
    for (int i = 16; i < 32; i++) in[i] = 1.0f;    /* block 1 */
    in[32] = 60000.0f; in[33] = 60000.0f;          /* block 2 */
    std::vector<half> r = bench<BlockSumHalf>(std::vector<half>(16, half(-1.0f)), in);
    /* every partial sum is a half, whatever the order: 2048 + 1 is a tie
     * between 2048 and 2050 (half's step there) and stays 2048, twice (a
     * float accumulator would give 2050); 60000 + 60000 overflows to inf */
    assert_true((float)r[0] == 2048.0f);
    assert_true((float)r[1] == 16.0f);
    assert_true(std::isinf((float)r[2]) && (float)r[2] > 0);
    for (int b = 3; b < 8; b++) assert_true((float)r[b] == 0.0f);
    for (int b = 8; b < 16; b++) assert_true((float)r[b] == -1.0f);
}

/* sgl-kernel-npu's status poll: element 0 of each 32 B block, summed. */
struct ReduceSumFirstOfBlocks {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> w,
                    LocalTensor<uint8_t>) {
        ReduceSum(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), w.ReinterpretCast<float>(),
                  1, 5, 1);
    }
};
static void test_reduce_sum_mask_repeat(void **state) {
    (void)state;
    std::vector<float> in(40, 7.0f);
    float firsts[5] = {1.0f, 1.0f, 0.0f, 1.0f, 0.5f};
    for (int b = 0; b < 5; b++) in[b * 8] = firsts[b];
    std::vector<float> r = bench<ReduceSumFirstOfBlocks>(std::vector<float>(8, -1.0f), in);
    assert_true(r[0] == 3.5f);
    assert_true(r[1] == -1.0f);
}

struct ReduceMaxIndex {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> w,
                    LocalTensor<uint8_t>) {
        ReduceMax(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), w.ReinterpretCast<float>(),
                  70, true);
    }
};
static void test_reduce_max_count_with_index(void **state) {
    (void)state;
    std::vector<float> in(72, 1.0f);
    in[66] = 8.0f;   /* in the second repeat */
    in[69] = 8.0f;
    in[71] = 99.0f;  /* past count */
    std::vector<float> r = bench<ReduceMaxIndex>(std::vector<float>(8, 0.0f), in);
    assert_true(r[0] == 8.0f && acs::bits(r[1]) == 66u);
}

struct RowSum {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        Sum(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), SumParams{2, 8, 5});
    }
};
static void test_sum_rows(void **state) {
    (void)state;
    std::vector<float> in = {1, 2, 3, 4, 5, 99, 99, 99, 0.5f, 0.25f, 0.125f, 4, -8, 99, 99, 99};
    std::vector<float> r = bench<RowSum>(std::vector<float>(8, 0.0f), in);
    assert_true(r[0] == 15.0f);
    assert_true(r[1] == -3.125f);
    assert_true(r[2] == 0.0f);
}

/* A reduction writes one result per block of floats: 8 a repeat. */
struct BlockSumF32 {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t>,
                    LocalTensor<uint8_t>) {
        BlockReduceSum<float>(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), 2, 64, 1, 1, 8);
    }
};
static void test_block_reduce_sum_float(void **state) {
    (void)state;
    std::vector<float> in(128);
    for (int i = 0; i < 128; i++) in[i] = (float)(i / 8);   /* block b holds eight b's */
    std::vector<float> r = bench<BlockSumF32>(std::vector<float>(16, 0.0f), in);
    for (int b = 0; b < 16; b++) assert_true(r[b] == 8.0f * (float)b);
}

/* A float op rounds once: 2^24 + 1 is not a float, so adding 1 to 2^24 stays 2^24. */
struct AddF32 {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> b,
                    LocalTensor<uint8_t>) {
        Add(d.ReinterpretCast<float>(), a.ReinterpretCast<float>(), b.ReinterpretCast<float>(), 3);
    }
};
static void test_float_add_rounds_once(void **state) {
    (void)state;
    std::vector<float> a = {16777216.0f, 16777216.0f, 0.1f}, b = {1.0f, 3.0f, 0.2f};
    std::vector<float> r = bench<AddF32>(std::vector<float>(3, 0.0f), a, b);
    assert_true(r[0] == 16777216.0f);   /* the tie goes to even */
    assert_true(r[1] == 16777220.0f);
    assert_true(r[2] == 0.1f + 0.2f);   /* as the CPU's float add */
}

/* The count form of the common float cases (the engine's fast path) and
 * the mask form (its general walk) give the same bits, NaNs, infinities
 * and subnormals included: 64 floats -> bf16 -> float, then Muls and Add. */
template <bool Count> struct FloatRoundTrip {
    static void run(LocalTensor<uint8_t> d, LocalTensor<uint8_t> a, LocalTensor<uint8_t> b,
                    LocalTensor<uint8_t> tmp) {
        LocalTensor<float> out = d.ReinterpretCast<float>(), x = a.ReinterpretCast<float>();
        LocalTensor<bfloat16_t> h = tmp.ReinterpretCast<bfloat16_t>();
        LocalTensor<float> y = b.ReinterpretCast<float>();
        if (Count) {
            Cast(h, x, RoundMode::CAST_RINT, 64);
            PipeBarrier<PIPE_V>();
            Cast(out, h, RoundMode::CAST_NONE, 64);
            PipeBarrier<PIPE_V>();
            Muls(out, out, 0.3f, 64);
            PipeBarrier<PIPE_V>();
            Add(out, out, y, 64);
        } else {
            uint64_t m = 64;
            Cast(h, x, RoundMode::CAST_RINT, m, 1, UnaryRepeatParams(1, 1, 4, 8));
            PipeBarrier<PIPE_V>();
            Cast(out, h, RoundMode::CAST_NONE, m, 1, UnaryRepeatParams(1, 1, 8, 4));
            PipeBarrier<PIPE_V>();
            Muls(out, out, 0.3f, m, 1, UnaryRepeatParams());
            PipeBarrier<PIPE_V>();
            Add(out, out, y, m, 1, BinaryRepeatParams());
        }
    }
};
static void test_count_and_mask_forms_agree(void **state) {
    (void)state;
    std::vector<float> x(64), y(64);
    const uint32_t special[] = {0x7fc00001u, 0xffa00000u, 0x7f800000u, 0xff800000u, 0x00000001u,
                                0x80400000u, 0x7f7fffffu, 0x3f808000u, 0x3f818000u, 0x00000000u};
    for (int i = 0; i < 64; i++) {
        x[i] = i < 10 ? acs::f32(special[i]) : (float)(i * 37 % 101) / 7.0f - 6.0f;
        y[i] = (float)(i % 13) * 0.01f - 0.05f;
    }
    std::vector<float> init(64, 0.0f), c = acs::bench<FloatRoundTrip<true>>(init, x, y);
    std::vector<float> m = acs::bench<FloatRoundTrip<false>>(init, x, y);
    for (int i = 0; i < 64; i++)
        if (acs::bits(c[i]) != acs::bits(m[i]))
            fail_msg("element %d: count form 0x%08x, mask form 0x%08x", i, acs::bits(c[i]), acs::bits(m[i]));
    assert_true(std::isnan(c[0]) && std::isinf(c[2]) && c[2] > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mask_bits),
        cmocka_unit_test(test_repeat_strides),
        cmocka_unit_test(test_block_stride),
        cmocka_unit_test(test_mask_count_checked),
        cmocka_unit_test(test_duplicate_mask),
        cmocka_unit_test(test_int32_add_wraps_exactly),
        cmocka_unit_test(test_int16_mul_wraps),
        cmocka_unit_test(test_int32_scalar_ops),
        cmocka_unit_test(test_cast_float_to_int_every_mode),
        cmocka_unit_test(test_cast_float_to_half_every_mode),
        cmocka_unit_test(test_cast_float_to_bf16),
        cmocka_unit_test(test_cast_half_to_int8_saturates),
        cmocka_unit_test(test_cast_int32_to_half_deq_scale),
        cmocka_unit_test(test_whole_reduce_max_value_index),
        cmocka_unit_test(test_block_reduce_sum_half_rounds),
        cmocka_unit_test(test_reduce_sum_mask_repeat),
        cmocka_unit_test(test_reduce_max_count_with_index),
        cmocka_unit_test(test_sum_rows),
        cmocka_unit_test(test_block_reduce_sum_float),
        cmocka_unit_test(test_float_add_rounds_once),
        cmocka_unit_test(test_count_and_mask_forms_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

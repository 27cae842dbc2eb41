/*
 * ascendc_support.h - what the tests of npurr's Ascend C headers share
 * (tests/test_ascendc_*.cpp): a one-rank engine, GM filled from host
 * arrays, a kernel written in Ascend C launched on it, run to its outcome,
 * and GM read back.
 *
 * The kernels are plain `void k(const void *args)` entry points (what the
 * engine launches) whose bodies use AscendC; their args are GM addresses
 * the kernel turns into its __gm__ pointers with acs::p (GM_ADDR is a host
 * pointer into npurr's GM, as ascendc_host.h hands kernels).
 * Header-only; include it after <cmocka.h>.
 */
#ifndef NPURR_TESTS_ASCENDC_SUPPORT_H
#define NPURR_TESTS_ASCENDC_SUPPORT_H

#include <cstring>
#include <string>
#include <vector>

#include "kernel_operator.h"
extern "C" {   /* the engine's host API is C without C++ guards */
#include "engine/engine.h"
}

namespace acs {

/* An engine of nodes x npus ranks (910B2 defaults). */
inline engine *make(int nodes = 1, int npus = 1) {
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.nodes = nodes;
    cfg.npus_per_node = npus;
    engine *e = nullptr;
    char err[ENGINE_ERRLEN];
    if (engine_create(&cfg, &e, err, sizeof err) != ENGINE_OK) fail_msg("engine_create: %s", err);
    return e;
}

/* bytes of GM on rank named name, holding data (zeros when NULL). */
inline gm_t gm(engine *e, uint64_t bytes, const void *data = nullptr, int rank = 0,
               const char *name = "t") {
    gm_t g;
    char err[ENGINE_ERRLEN];
    if (engine_gm_alloc(e, rank, bytes, name, &g, err, sizeof err) != ENGINE_OK)
        fail_msg("engine_gm_alloc: %s", err);
    if (data) std::memcpy(engine_gm_host(e, g, bytes), data, bytes);
    return g;
}

/* A host vector's bytes in new GM. */
template <typename T> inline gm_t gm_of(engine *e, const std::vector<T> &v, int rank = 0) {
    return gm(e, v.size() * sizeof(T), v.data(), rank);
}

/* n elements of T at g read back. */
template <typename T> inline std::vector<T> read(engine *e, gm_t g, size_t n) {
    std::vector<T> v(n);
    if (engine_gm_read(e, g, v.data(), n * sizeof(T)) != ENGINE_OK) fail_msg("engine_gm_read");
    return v;
}

/* fn(args) on blocks AIV cores of every rank, run to its end. */
inline engine_result run(engine *e, engine_kernel_fn fn, const void *args, int blocks = 1,
                         engine_core_type type = CORE_AIV) {
    char err[ENGINE_ERRLEN];
    if (engine_launch(e, "ascendc_test", fn, args, blocks, type, err, sizeof err) != ENGINE_OK)
        fail_msg("engine_launch: %s", err);
    engine_result r;
    if (engine_run(e, &r, err, sizeof err) != ENGINE_OK) fail_msg("engine_run: %s", err);
    return r;
}

/* The run ended as it should, or the test fails with its message. */
inline void expect_ok(const engine_result &r) {
    if (r.outcome != OUTCOME_COMPLETED) fail_msg("run ended %s: %s", engine_outcome_name(r.outcome), r.message);
}

/* The run faulted saying needle (and naming this test file's line). */
inline void expect_fault(const engine_result &r, const char *needle) {
    if (r.outcome != OUTCOME_FAULT) fail_msg("run ended %s, not a fault: %s", engine_outcome_name(r.outcome), r.message);
    if (!std::strstr(r.message, needle)) fail_msg("fault '%s' lacks '%s'", r.message, needle);
    if (!std::strstr(r.message, "test_ascendc")) fail_msg("fault '%s' names no test line", r.message);
}

/* The kernel's pointer to T of g (called on a core). */
template <typename T> inline __gm__ T *p(gm_t g, npurr_site s = npurr_site()) {
    return static_cast<__gm__ T *>(::dev_gm_to_host(g, s.dev()));
}

/* A vector instruction's test bench: up to three inputs and the output,
 * each 8 KiB of UB loaded from GM (the output too, so elements an
 * instruction leaves alone keep known values), Op::run(dst, src0, src1,
 * src2) on them, the output stored back. Every pipe is drained between
 * the steps. */
struct Bench {
    gm_t in[3];
    gm_t out;
    uint32_t in_bytes[3];
    uint32_t out_bytes;
};
constexpr uint32_t kBenchBytes = 8192;

template <class Op> void bench_kernel(const void *a) {
    using namespace AscendC;
    const Bench *b = static_cast<const Bench *>(a);
    TPipe pipe;
    TBuf<> ub;
    pipe.InitBuffer(ub, 4 * kBenchBytes);
    LocalTensor<uint8_t> t[4] = {ub.GetWithOffset<uint8_t>(kBenchBytes, 0),
                                 ub.GetWithOffset<uint8_t>(kBenchBytes, kBenchBytes),
                                 ub.GetWithOffset<uint8_t>(kBenchBytes, 2 * kBenchBytes),
                                 ub.GetWithOffset<uint8_t>(kBenchBytes, 3 * kBenchBytes)};
    for (int i = 0; i < 3; i++)
        if (b->in_bytes[i]) {
            GlobalTensor<uint8_t> g;
            g.SetGlobalBuffer(p<uint8_t>(b->in[i]));
            DataCopy(t[i], g, b->in_bytes[i]);
        }
    GlobalTensor<uint8_t> out;
    out.SetGlobalBuffer(p<uint8_t>(b->out));
    DataCopy(t[3], out, b->out_bytes);
    PipeBarrier<PIPE_ALL>();
    Op::run(t[3], t[0], t[1], t[2]);
    PipeBarrier<PIPE_ALL>();
    DataCopy(out, t[3], b->out_bytes);
    PipeBarrier<PIPE_ALL>();
}

/* Runs Op on inputs a, b, c (empty: none) and an output of out_init's
 * size and first contents; the output's elements afterwards. */
template <class Op, typename O, typename A, typename B = A, typename C = A>
std::vector<O> bench(const std::vector<O> &out_init, const std::vector<A> &a,
                     const std::vector<B> &b = {}, const std::vector<C> &c = {}) {
    engine *e = make();
    Bench io = {};
    const void *data[3] = {a.data(), b.data(), c.data()};
    size_t bytes[3] = {a.size() * sizeof(A), b.size() * sizeof(B), c.size() * sizeof(C)};
    for (int i = 0; i < 3; i++) {
        io.in_bytes[i] = (uint32_t)((bytes[i] + 31) / 32 * 32);
        if (bytes[i]) {
            io.in[i] = gm(e, io.in_bytes[i]);
            std::memcpy(engine_gm_host(e, io.in[i], bytes[i]), data[i], bytes[i]);
        }
    }
    io.out_bytes = (uint32_t)((out_init.size() * sizeof(O) + 31) / 32 * 32);
    io.out = gm(e, io.out_bytes);
    std::memcpy(engine_gm_host(e, io.out, out_init.size() * sizeof(O)), out_init.data(),
                out_init.size() * sizeof(O));
    expect_ok(run(e, bench_kernel<Op>, &io));
    std::vector<O> r = read<O>(e, io.out, out_init.size());
    engine_destroy(e);
    return r;
}

/* The float whose bits are b, and back. */
inline float f32(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
inline uint32_t bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

}  // namespace acs

#endif

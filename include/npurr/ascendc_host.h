/*
 * npurr/ascendc_host.h - the host side of an Ascend C kernel as an npurr
 * plugin, in C++: per-rank GM from .npy files or generated data, tiling
 * structs as bytes, HCCL contexts over symmetric windows, and
 * launch(kernel, blockDim, args...) on every rank.
 *
 * A kernel written for the chip takes GM_ADDR arguments; on npurr each rank
 * runs it with its own buffers. A Buffer is a GM allocation on every rank
 * (or one symmetric allocation), and launch() hands each rank's cores that
 * rank's pointers. Use it from a plugin's setup (npurr/plugin.h):
 *
 *   static int setup(npurr_engine *e, const npurr_opts *o, void **state, char *err, size_t n) {
 *       auto *st = new npurr::AscendcRun(e);
 *       npurr::Buffer x = st->host.alloc("x", bytes), z = st->host.alloc("z", bytes);
 *       st->host.fill<float>(x, [](int rank, uint64_t i) { return rank + 0.5f * i; });
 *       npurr::Buffer t = st->host.tiling(my_tiling);           // the same struct on every rank
 *       if (st->host.launch(add_custom, 8, {x, z, t}) != 0) ... err from st->host.error()
 *   }
 *
 * Errors are values: calls return a Buffer that is !ok() or -1, and
 * error() names what failed; the first error is kept.
 */
#ifndef NPURR_ASCENDC_HOST_H
#define NPURR_ASCENDC_HOST_H

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "npurr/plugin.h"
#include "npurr/ascendc/kernel_tiling/kernel_tiling.h"

namespace npurr {

/* A buffer in GM on every rank (sym: one symmetric allocation). */
struct Buffer {
    std::vector<gm_t> at;   /* by rank; empty: not a buffer (an error, or a null argument) */
    uint64_t bytes = 0;
    bool sym = false;
    /* Whether the buffer exists. */
    bool ok() const { return !at.empty(); }
};

/* The state a launch keeps for the run: the kernel and each rank's pointers. */
struct LaunchData {
    void *kernel = nullptr;
    std::string role;   /* the cores' role from the start; "" none */
    uint64_t tiling_key = 0;
    size_t nargs = 0;
    std::vector<uint64_t> words;   /* rank * nargs + i: a pointer's address, or a value's bits */
};

/* The engine calls of one Ascend C kernel's host side. */
class Host {
  public:
    explicit Host(npurr_engine *e) : e_(e) { npurr_topology_of(e, &topo_); }
    Host(const Host &) = delete;
    Host &operator=(const Host &) = delete;

    /* The run's topology. */
    const npurr_topology &topology() const { return topo_; }
    /* Ranks of the run. */
    int ranks() const { return topo_.ranks; }
    /* The first error ("" when none). */
    const char *error() const { return err_.c_str(); }

    /* bytes of zeroed GM on every rank, named (faults, the index, --dump). */
    Buffer alloc(const char *name, uint64_t bytes) {
        Buffer b;
        b.bytes = bytes;
        for (int r = 0; r < topo_.ranks; r++) {
            gm_t g;
            char err[512];
            if (npurr_gm_alloc(e_, r, bytes, name, &g, err, sizeof err)) return set_error(err);
            b.at.push_back(g);
        }
        return b;
    }
    /* bytes at the same offset on every rank: a window peers reach. */
    Buffer sym(const char *name, uint64_t bytes) {
        Buffer b;
        gm_t g;
        char err[512];
        if (npurr_sym_alloc(e_, bytes, name, &g, err, sizeof err)) return set_error(err);
        b.bytes = bytes;
        b.sym = true;
        for (int r = 0; r < topo_.ranks; r++) b.at.push_back(gm_on_rank(g, r));
        return b;
    }
    /* The .npy file(s) of option `option` ("npy:PATH", "{rank}" for one per
     * rank) on every rank; *t (may be NULL) their dtype and shape. */
    Buffer from_npy(const npurr_opts *o, const char *option, const char *name,
                    npurr_tensor *t = nullptr) {
        Buffer b;
        for (int r = 0; r < topo_.ranks; r++) {
            gm_t g;
            npurr_tensor got;
            char err[1024];
            if (npurr_gm_from_npy(e_, o, option, r, name, &g, &got, err, sizeof err))
                return set_error(err);
            uint64_t n = 1;
            for (int d = 0; d < got.ndim; d++) n *= got.shape[d];
            b.bytes = n * elem_bytes(got.dtype);
            if (t) *t = got;
            b.at.push_back(g);
        }
        return b;
    }
    /* Every element of b written by the host: value(rank, i) as T. */
    template <typename T> int fill(const Buffer &b, const std::function<T(int, uint64_t)> &value) {
        for (int r = 0; r < (int)b.at.size(); r++) {
            T *p = static_cast<T *>(npurr_gm_host(e_, b.at[r], b.bytes));
            if (!p) return set_error_code("a buffer has no host view");
            for (uint64_t i = 0; i < b.bytes / sizeof(T); i++) p[i] = value(r, i);
        }
        return 0;
    }
    /* bytes at data written into b on rank (a tiling struct, an input row). */
    int write(const Buffer &b, int rank, const void *data, uint64_t bytes, uint64_t offset = 0) {
        if (rank < 0 || rank >= (int)b.at.size() || offset + bytes > b.bytes)
            return set_error_code("write past a buffer");
        void *p = npurr_gm_host(e_, gm_add(b.at[rank], (int64_t)offset), bytes);
        if (!p) return set_error_code("a buffer has no host view");
        std::memcpy(p, data, bytes);
        return 0;
    }
    /* A tiling struct as bytes in GM, the same on every rank. */
    template <typename T> Buffer tiling(const T &t, const char *name = "tiling") {
        Buffer b = alloc(name, sizeof(T));
        for (int r = 0; b.ok() && r < topo_.ranks; r++)
            if (write(b, r, &t, sizeof(T))) return Buffer();
        return b;
    }
    /* A tiling struct per rank: make(rank) gives rank's. */
    template <typename T> Buffer tiling(const std::function<T(int)> &make, const char *name = "tiling") {
        Buffer b = alloc(name, sizeof(T));
        for (int r = 0; b.ok() && r < topo_.ranks; r++) {
            T t = make(r);
            if (write(b, r, &t, sizeof(T))) return Buffer();
        }
        return b;
    }
    /* HCCL group `group` for GetHcclContext<group>: a symmetric context of
     * context_bytes (the host fills it: context()) and symmetric in and out
     * windows of window_bytes. Returns the context buffer. */
    Buffer hccl(int group, uint64_t context_bytes, uint64_t window_bytes) {
        Buffer ctx = sym("hccl.context", context_bytes);
        Buffer in = sym("hccl.window_in", window_bytes), out = sym("hccl.window_out", window_bytes);
        if (!ctx.ok() || !in.ok() || !out.ok()) return Buffer();
        char err[512];
        if (npurr_hccl_group(e_, group, ctx.at[0], in.at[0], out.at[0], window_bytes, err, sizeof err))
            return set_error(err);
        windows_in_ = in;
        return ctx;
    }
    /* The device pointer (GM_ADDR) of rank's copy of b, offset bytes on. */
    uint8_t *addr(const Buffer &b, int rank, uint64_t offset = 0) {
        return static_cast<uint8_t *>(npurr_gm_addr(e_, gm_add(b.at[rank], (int64_t)offset)));
    }
    /* The in windows of the last hccl() group (to name words and rings in them). */
    const Buffer &windows_in() const { return windows_in_; }
    /* The in window of the last hccl() group on rank, as GM_ADDR. */
    uint8_t *window_in(int rank) { return windows_in_.ok() ? addr(windows_in_, rank) : nullptr; }

    /* Runs kernel on block_dim cores of every rank (CORE_AIV by default),
     * each rank with its own copy of every buffer in args (an !ok() buffer
     * passes a null pointer), its TILING_KEY_IS seeing tiling_key. 0, or -1
     * with error(). The launch data lives as long as this Host. */
    template <typename... P>
    int launch(void (*kernel)(P...), int block_dim, std::initializer_list<Buffer> args,
               uint64_t tiling_key = 0, engine_core_type type = CORE_AIV) {
        return launch(nullptr, kernel, block_dim, args, tiling_key, type);
    }
    /* The same, the launch named name, which is also its cores' role in the
     * trace and the analysis ("stalls by role"); NULL: "ascendc", no role. */
    template <typename... P>
    int launch(const char *name, void (*kernel)(P...), int block_dim,
               std::initializer_list<Buffer> args, uint64_t tiling_key = 0,
               engine_core_type type = CORE_AIV) {
        static_assert(sizeof...(P) > 0, "a kernel takes its GM_ADDR arguments");
        static_assert((std::is_pointer<P>::value && ...), "launch passes buffers: GM_ADDR parameters");
        if (args.size() != sizeof...(P)) return set_error_code("launch: as many buffers as the kernel's parameters");
        std::vector<Arg> a(args.begin(), args.end());
        return launch_args(name, reinterpret_cast<void *>(kernel), &trampoline<P...>, sizeof...(P), a,
                           block_dim, tiling_key, type);
    }
    /* One kernel argument: a buffer (each rank its own copy's pointer) or
     * a value of an integer or float parameter (the same on every rank). */
    struct Arg {
        Arg(const Buffer &b) : buffer(b) {}
        template <typename V, typename = typename std::enable_if<std::is_arithmetic<V>::value>::type>
        Arg(V v) : is_value(true) {
            static_assert(sizeof(V) <= 8, "a value argument of at most 8 bytes");
            std::memcpy(&value, &v, sizeof v);
        }
        Buffer buffer;
        bool is_value = false;
        uint64_t value = 0;
    };
    /* Runs kernel with args, buffers and values, in its parameters' order
     * (what CPU Debug's ICPU_RUN_KF passes): see launch. */
    template <typename... P>
    int launch_values(const char *name, void (*kernel)(P...), int block_dim, const std::vector<Arg> &args,
                      uint64_t tiling_key = 0, engine_core_type type = CORE_AIV) {
        if (args.size() != sizeof...(P)) return set_error_code("launch: as many arguments as the kernel's parameters");
        return launch_args(name, reinterpret_cast<void *>(kernel), &trampoline<P...>, sizeof...(P), args,
                           block_dim, tiling_key, type);
    }

    ~Host() {
        for (LaunchData *d : launches_) delete d;
    }

  private:
    int launch_args(const char *name, void *kernel, engine_kernel_fn fn, size_t nargs,
                    const std::vector<Arg> &args, int block_dim, uint64_t tiling_key,
                    engine_core_type type) {
        LaunchData *d = new LaunchData;
        launches_.push_back(d);
        d->kernel = kernel;
        d->role = name ? name : "";
        d->tiling_key = tiling_key;
        d->nargs = nargs;
        for (int r = 0; r < topo_.ranks; r++)
            for (const Arg &a : args)
                d->words.push_back(a.is_value ? a.value
                                   : a.buffer.ok() ? (uint64_t)(uintptr_t)addr(a.buffer, r) : 0);
        char err[512];
        if (npurr_launch(e_, name ? name : "ascendc", fn, d, block_dim, type, err, sizeof err))
            return set_error_code(err);
        return 0;
    }
    /* Parameter type T from its word. */
    template <typename T> static T from_word(uint64_t w) {
        if constexpr (std::is_pointer<T>::value) {
            return reinterpret_cast<T>((uintptr_t)w);
        } else {
            T v;
            std::memcpy(&v, &w, sizeof v);
            return v;
        }
    }
    template <typename... P, size_t... I>
    static void call(const LaunchData *d, int rank, std::index_sequence<I...>) {
        auto k = reinterpret_cast<void (*)(P...)>(d->kernel);
        k(from_word<P>(d->words[(size_t)rank * d->nargs + I])...);
    }
    /* What each core runs: its rank's pointers, the launch's tiling key. */
    template <typename... P> static void trampoline(const void *p) {
        const LaunchData *d = static_cast<const LaunchData *>(p);
        AscendC::current_tiling_key() = d->tiling_key;
        if (!d->role.empty()) ::dev_set_role(d->role.c_str(), dev_site{__FILE__, __LINE__, "launch"});
        call<P...>(d, ::dev_rank(), std::index_sequence_for<P...>{});
    }
    static uint64_t elem_bytes(npurr_dtype t) {
        switch (t) {
        case NPURR_DT_U8: case NPURR_DT_I8: return 1;
        case NPURR_DT_I16: case NPURR_DT_U16: case NPURR_DT_F16: case NPURR_DT_BF16: return 2;
        case NPURR_DT_I32: case NPURR_DT_U32: case NPURR_DT_F32: return 4;
        default: return 8;
        }
    }
    Buffer set_error(const char *why) {
        if (err_.empty()) err_ = why;
        return Buffer();
    }
    int set_error_code(const char *why) {
        set_error(why);
        return -1;
    }
    npurr_engine *e_;
    npurr_topology topo_{};
    std::string err_;
    Buffer windows_in_;
    std::vector<LaunchData *> launches_;
};

/* A plugin kernel's state for an Ascend C run: its Host (delete it in destroy). */
struct AscendcRun {
    explicit AscendcRun(npurr_engine *e) : host(e) {}
    Host host;
    std::vector<Buffer> buffers;   /* what the check reads back */
};

}  // namespace npurr

#endif

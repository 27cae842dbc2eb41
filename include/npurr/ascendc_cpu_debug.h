/*
 * npurr/ascendc_cpu_debug.h - CANN's CPU Debug host API (GmAlloc, GmFree,
 * SetKernelMode, ICPU_RUN_KF, ICPU_SET_TILING_KEY) on npurr, so a CPU Debug
 * host program runs its kernel on npurr's emulated cluster by changing its
 * includes: this header where it included tikicpulib.h.
 *
 * The program becomes a plugin (build it with npurr_add_kernel) whose one
 * kernel, "cpu-debug", runs the program's main:
 *
 *   npurr record --plugin build/add.so -k cpu-debug --args "8 2048" -o RUN
 *
 * This header renames the program's main (to npurr_cpu_debug_main_impl) and
 * runs it, on a thread of its own that never runs at the same time as the
 * engine, from the kernel's setup hook: GmAlloc gives the program a host
 * view of new GM (a symmetric allocation, the same on every rank), which it
 * fills; ICPU_RUN_KF launches the kernel on every rank with each rank's
 * copy of those buffers (rank 0's bytes copied to the others), and waits
 * there while npurr runs, records and times it; after the run, the check
 * hook lets main go on: it reads the outputs through the same pointers and
 * returns; a non-zero return fails the check. --args is split at spaces
 * into main's argv.
 *
 * What differs from CPU Debug: one ICPU_RUN_KF a run (a second fails the
 * run's check); the program's files are read again by replay (keep its
 * inputs where it reads them); when the run does not complete (a fault, a
 * deadlock), main never resumes past ICPU_RUN_KF. Define
 * NPURR_CPU_DEBUG_NO_PLUGIN to leave out the plugin's entry points (a
 * program that links npurr's kernels library, such as a test, uses
 * npurr_cpu_debug::kernel directly).
 */
#ifndef NPURR_ASCENDC_CPU_DEBUG_H
#define NPURR_ASCENDC_CPU_DEBUG_H

#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "npurr/ascendc_host.h"

/* The cores a kernel runs on (CPU Debug's kernel modes). */
enum class KernelMode { MIX_MODE = 0, AIC_MODE, AIV_MODE };

/* The program's main, renamed: one of the two is defined by the program. */
int npurr_cpu_debug_main_impl(int argc, char **argv) __attribute__((weak));
/* The same for a main without arguments. */
int npurr_cpu_debug_main_impl() __attribute__((weak));

namespace npurr_cpu_debug {

/* One GmAlloc: the host view the program got and the GM on every rank. */
struct Alloc {
    uint8_t *host;
    uint64_t bytes;
    npurr::Buffer gm;
};

/* The run in progress: the program's thread and what it allocated. */
struct Run {
    npurr_engine *e = nullptr;
    npurr::Host *host = nullptr;
    std::string error;   /* the first thing that went wrong ("" none) */
    std::vector<Alloc> allocs;
    std::vector<std::string> args;
    std::thread thread;
    std::mutex m;
    std::condition_variable cv;
    enum { RUNNING, AT_LAUNCH, RESUMED, FINISHED } phase = RUNNING;
    int launches = 0;
    int exit_code = 0;
    uint64_t tiling_key = 0;
    engine_core_type type = CORE_AIV;
};

/* Keeps the first error of r (printf-style). */
__attribute__((format(printf, 2, 3))) inline void set_error(Run *r, const char *fmt, ...) {
    if (!r->error.empty()) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    r->error = buf;
}
/* 0, or 1 with r's first error (or its host's) in err. */
inline int status(Run *r, char *err, size_t errlen) {
    const char *why = !r->error.empty() ? r->error.c_str() : *r->host->error() ? r->host->error() : nullptr;
    if (!why) return 0;
    std::snprintf(err, errlen, "%s", why);
    return 1;
}

/* The run whose program is running (setup makes one at a time). */
inline Run *&current() {
    static Run *run = nullptr;
    return run;
}

/* The program's thread gives control back to npurr until resumed. */
inline void wait_turn(Run *r, std::unique_lock<std::mutex> &lock) {
    r->cv.notify_all();
    r->cv.wait(lock, [r] { return r->phase == Run::RESUMED; });
    r->phase = Run::RUNNING;
}

/* The GmAlloc holding host pointer p, or NULL. */
inline const Alloc *alloc_of(Run *r, const void *p) {
    for (const Alloc &a : r->allocs)
        if ((const uint8_t *)p >= a.host && (const uint8_t *)p < a.host + a.bytes) return &a;
    return nullptr;
}

/* A kernel argument: a GmAlloc'd pointer (or one into such a buffer) as
 * the GM it views on every rank; another pointer as none. */
template <typename A> inline npurr::Host::Arg gm_arg(Run *r, A *p) {
    const Alloc *a = p ? alloc_of(r, p) : nullptr;
    npurr::Buffer b;
    if (!a) return b;
    uint64_t off = (uint64_t)((const uint8_t *)p - a->host);
    for (int k = 0; k < r->host->ranks(); k++) b.at.push_back(gm_add(a->gm.at[(size_t)k], (int64_t)off));
    b.bytes = a->bytes - off;
    return b;
}
/* A value argument, as is. */
template <typename A> inline npurr::Host::Arg gm_arg(Run *, A v) { return npurr::Host::Arg(v); }

/* ICPU_RUN_KF: kernel(args...) on block_dim cores of every rank, then the
 * program waits until the run is over. */
template <typename... P, typename... A>
inline void run_kernel(const char *name, void (*kernel)(P...), int block_dim, A... args) {
    Run *r = current();
    if (!r) {
        std::fprintf(stderr, "ICPU_RUN_KF(%s): not running under npurr's cpu-debug kernel\n", name);
        std::abort();
    }
    std::unique_lock<std::mutex> lock(r->m);
    if (++r->launches > 1) {
        set_error(r, "ICPU_RUN_KF(%s): a second launch; npurr runs one a run", name);
        r->phase = Run::AT_LAUNCH;
        wait_turn(r, lock);
        return;
    }
    for (const Alloc &a : r->allocs)   /* every rank starts from rank 0's bytes */
        for (int k = 1; k < r->host->ranks(); k++) {
            void *v = npurr_gm_host(r->e, a.gm.at[(size_t)k], a.bytes);
            if (v) std::memcpy(v, a.host, a.bytes);
        }
    r->host->launch_values(name, kernel, block_dim, {gm_arg(r, args)...}, r->tiling_key, r->type);
    r->phase = Run::AT_LAUNCH;
    wait_turn(r, lock);
}

/* ICPU_SET_TILING_KEY: the next launch's tiling key. */
inline void set_tiling_key(uint64_t key) {
    if (current()) current()->tiling_key = key;
}

/* The thread that runs the program's main. */
inline void program(Run *r) {
    std::vector<char *> argv;
    argv.push_back(const_cast<char *>("cpu-debug"));
    for (std::string &s : r->args) argv.push_back(&s[0]);
    argv.push_back(nullptr);
    int (*with_args)(int, char **) = npurr_cpu_debug_main_impl;
    int (*without)() = npurr_cpu_debug_main_impl;
    int code = with_args ? with_args((int)argv.size() - 1, argv.data()) : without();
    std::lock_guard<std::mutex> lock(r->m);
    r->exit_code = code;
    r->phase = Run::FINISHED;
    r->cv.notify_all();
}

/* setup: runs main until it launches (or returns). */
inline int setup(npurr_engine *e, const npurr_opts *o, void **state, char *err, size_t errlen) {
    int (*with_args)(int, char **) = npurr_cpu_debug_main_impl;
    int (*without)() = npurr_cpu_debug_main_impl;
    if (!with_args && !without) {
        std::snprintf(err, errlen, "cpu-debug: the program defines no main");
        return -1;
    }
    Run *r = new Run();
    *state = r;
    r->e = e;
    r->host = new npurr::Host(e);
    const char *args = nullptr;
    if (npurr_opt_str(o, "args", &args) == 0 && args) {
        std::string s(args), word;
        for (char c : s + " ")
            if (c == ' ') { if (!word.empty()) r->args.push_back(word); word.clear(); }
            else word += c;
    }
    current() = r;
    std::unique_lock<std::mutex> lock(r->m);
    r->thread = std::thread(program, r);
    r->cv.wait(lock, [r] { return r->phase != Run::RUNNING; });
    if (r->phase == Run::FINISHED && r->launches == 0)
        set_error(r, "cpu-debug: the program returned %d without ICPU_RUN_KF", r->exit_code);
    return status(r, err, errlen) ? -1 : 0;
}

/* check: main goes on after its ICPU_RUN_KF; its return is the verdict. */
inline int check(npurr_engine *e, void *state, char *msg, size_t msglen) {
    Run *r = static_cast<Run *>(state);
    for (const Alloc &a : r->allocs) (void)npurr_gm_host(e, a.gm.at[0], a.bytes);   /* outputs literal */
    std::unique_lock<std::mutex> lock(r->m);
    if (r->phase == Run::AT_LAUNCH) {
        r->phase = Run::RESUMED;
        r->cv.notify_all();
        r->cv.wait(lock, [r] { return r->phase == Run::FINISHED || r->phase == Run::AT_LAUNCH; });
    }
    if (status(r, msg, msglen)) return 1;
    if (r->phase != Run::FINISHED) {
        std::snprintf(msg, msglen, "cpu-debug: the program did not return");
        return 1;
    }
    if (r->exit_code != 0) {
        std::snprintf(msg, msglen, "cpu-debug: the program returned %d", r->exit_code);
        return 1;
    }
    return 0;
}

/* destroy: the program's thread joined (left waiting when the run never
 * completed), the GM table and host freed. */
inline void destroy(void *state) {
    Run *r = static_cast<Run *>(state);
    if (!r) return;
    {
        std::lock_guard<std::mutex> lock(r->m);
        if (r->phase == Run::FINISHED) r->thread.join();
        else r->thread.detach();
    }
    if (current() == r) current() = nullptr;
    if (r->phase != Run::FINISHED) return;   /* the waiting thread still holds r */
    delete r->host;
    delete r;
}

/* The kernel's one option. */
inline const npurr_option *options() {
    static const npurr_option opts[] = {
        {"args", "", "the program's arguments, split at spaces into main's argv"},
        {nullptr, nullptr, nullptr},
    };
    return opts;
}

/* The descriptor npurr runs: `-k cpu-debug`. */
inline const npurr_kernel *kernel() {
    static npurr_kernel k = {};
    k.name = "cpu-debug";
    k.summary = "a CANN CPU Debug host program's main, its ICPU_RUN_KF launch run by npurr";
    k.options = options();
    k.setup = setup;
    k.check = check;
    k.destroy = destroy;
    return &k;
}

}  // namespace npurr_cpu_debug

namespace AscendC {
/* bytes of GM for the program (a symmetric allocation): rank 0's host view,
 * to fill before ICPU_RUN_KF and read after it. NULL when npurr refuses. */
inline void *GmAlloc(size_t bytes) {
    npurr_cpu_debug::Run *r = npurr_cpu_debug::current();
    if (!r) return nullptr;
    char name[32];
    std::snprintf(name, sizeof name, "gm_alloc.%zu", r->allocs.size());
    npurr::Buffer b = r->host->sym(name, bytes);
    void *host = b.ok() ? npurr_gm_host(r->e, b.at[0], bytes) : nullptr;
    if (!host) return nullptr;
    r->allocs.push_back({static_cast<uint8_t *>(host), bytes, b});
    return host;
}
/* Forgets p's buffer (its GM lives until the run ends). */
inline void GmFree(void *p) {
    npurr_cpu_debug::Run *r = npurr_cpu_debug::current();
    if (!r) return;
    for (size_t i = 0; i < r->allocs.size(); i++)
        if (r->allocs[i].host == p) r->allocs.erase(r->allocs.begin() + (long)i);
}
/* The cores the next launch runs on. */
inline void SetKernelMode(KernelMode mode) {
    npurr_cpu_debug::Run *r = npurr_cpu_debug::current();
    if (r) r->type = mode == KernelMode::AIV_MODE ? CORE_AIV : mode == KernelMode::AIC_MODE ? CORE_AIC : CORE_MIX;
}
}  // namespace AscendC

/* Runs kernel on blockdim cores of every rank with the arguments given. */
#define ICPU_RUN_KF(kernel, blockdim, ...) \
    npurr_cpu_debug::run_kernel(#kernel, kernel, (int)(blockdim), __VA_ARGS__)
/* The tiling key of the next ICPU_RUN_KF. */
#define ICPU_SET_TILING_KEY(key) npurr_cpu_debug::set_tiling_key((uint64_t)(key))

#ifndef NPURR_CPU_DEBUG_NO_PLUGIN
/* The plugin's entry points. */
NPURR_PLUGIN("cpu-debug", npurr_cpu_debug::kernel())
#endif

/* The program's main runs as the kernel's (see above). */
#define main npurr_cpu_debug_main_impl

#endif

/*
 * plugin_guard.c - a plugin that crashes costs no run folder and says who
 * it was.
 *
 * A plugin's code runs inside npurr: its host hooks (setup, check, destroy)
 * on the main stack, its device code on the cores' coroutine stacks. A bad
 * pointer there raises SIGSEGV (SIGBUS, SIGFPE, SIGILL, or SIGABRT from an
 * assert) in npurr's process. While a plugin's code may run, the session
 * arms this guard: its handler, on a stack of its own (a coroutine stack
 * that overflowed cannot host it), writes one message naming the plugin,
 * the hook or the core it crashed in, the last device call the engine saw
 * (file:line) and the code address (the plugin's file and offset, for
 * addr2line), removes the hidden folder the run was being recorded into
 * (so no half-run is ever left looking like a run; the user's -o is not
 * touched), then re-raises the signal with its default action (a core dump
 * where the system keeps them; under gdb, gdb stops first, as usual).
 *
 * The handler formats with snprintf and asks dladdr, which are not
 * async-signal-safe; the process is about to die either way, and the
 * folder is removed with getdents64/unlinkat/rmdir only, which are.
 */
#include "session/plugin_guard.h"

#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

static const int guarded_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define N_GUARDED (sizeof guarded_signals / sizeof guarded_signals[0])

static struct {
    int armed;
    const kernel_plugin *plugin;
    const char *kernel;
    const char *hook;           /* "setup", "device code", "check", "destroy" */
    engine *e;
    char temp_dir[4096];        /* the hidden folder being recorded into, "" none */
    struct sigaction old[N_GUARDED];
    stack_t alt, old_alt;
} g;

static uint8_t alt_stack[64 * 1024];

/* Removes dir and what it holds, two levels deep (a run folder holds
 * inputs/ and plugin/), with system calls only. */
static void remove_tree(int parent, const char *name, int depth) {
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        unlinkat(parent, name, 0);
        return;
    }
    static char buf[3][8192];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf[depth], sizeof buf[depth]);
        if (n <= 0) break;
        for (long off = 0; off < n;) {
            struct dirent64 *d = (struct dirent64 *)(void *)(buf[depth] + off);
            off += d->d_reclen;
            if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) continue;
            if (d->d_type == DT_DIR && depth < 2) remove_tree(fd, d->d_name, depth + 1);
            else unlinkat(fd, d->d_name, 0);
        }
    }
    close(fd);
    unlinkat(parent, name, AT_REMOVEDIR);
}

static void say(const char *text) {
    size_t n = strlen(text);
    while (n) {
        ssize_t w = write(STDERR_FILENO, text, n);
        if (w <= 0) return;
        text += w;
        n -= (size_t)w;
    }
}

static uintptr_t fault_pc(void *uc) {
#if defined(__x86_64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.pc;
#else
    (void)uc;
    return 0;
#endif
}

static void on_crash(int sig, siginfo_t *si, void *uc) {
    char msg[6000];
    int n = snprintf(msg, sizeof msg, "\nnpurr: plugin %s (%s) crashed with %s in -k %s's ",
                     g.plugin->name, g.plugin->path, strsignal(sig), g.kernel);
    int rank, core;
    engine_site last;
    int on_core = g.e && engine_running_core(g.e, &rank, &core, &last);
    if (on_core) {
        int aic = engine_num_aic(g.e);
        n += snprintf(msg + n, sizeof msg - (size_t)n, "device code on rank %d %s%d", rank,
                      core < aic ? "AIC" : "AIV", core < aic ? core : core - aic);
    }
    else
        n += snprintf(msg + n, sizeof msg - (size_t)n, "%s hook", g.hook);
    if (g.e && last.id)
        n += snprintf(msg + n, sizeof msg - (size_t)n, "; the last device call was %s:%d (%s)",
                      last.file, last.line, last.func ? last.func : "?");
    uintptr_t pc = fault_pc(uc);
    Dl_info info;
    if (pc && dladdr((void *)pc, &info) && info.dli_fname)
        n += snprintf(msg + n, sizeof msg - (size_t)n, "; code at %s+0x%lx%s%s%s",
                      info.dli_fname, (unsigned long)(pc - (uintptr_t)info.dli_fbase),
                      info.dli_sname ? " (" : "", info.dli_sname ? info.dli_sname : "",
                      info.dli_sname ? ")" : "");
    if (sig == SIGSEGV || sig == SIGBUS)
        n += snprintf(msg + n, sizeof msg - (size_t)n, "; bad address %p", si->si_addr);
    if (g.temp_dir[0])
        n += snprintf(msg + n, sizeof msg - (size_t)n, "\nnpurr: no run was kept (%s removed)",
                      g.temp_dir);
    snprintf(msg + n, sizeof msg - (size_t)n, "\n");
    say(msg);
    if (g.temp_dir[0]) remove_tree(AT_FDCWD, g.temp_dir, 0);
    signal(sig, SIG_DFL);
    raise(sig);
}

void plugin_guard_arm(const kernel_plugin *p, const char *kernel, engine *e) {
    if (!p) return;
    g.plugin = p;
    g.kernel = kernel;
    g.e = e;
    g.hook = "setup";
    if (g.armed) return;
    g.alt.ss_sp = alt_stack;
    g.alt.ss_size = sizeof alt_stack;
    g.alt.ss_flags = 0;
    sigaltstack(&g.alt, &g.old_alt);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_crash;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < N_GUARDED; i++) sigaction(guarded_signals[i], &sa, &g.old[i]);
    g.armed = 1;
}

void plugin_guard_phase(const char *hook, engine *e) {
    g.hook = hook;
    g.e = e;
}

void plugin_guard_run_dir(const char *temp_dir) {
    snprintf(g.temp_dir, sizeof g.temp_dir, "%s", temp_dir ? temp_dir : "");
}

void plugin_guard_disarm(void) {
    if (!g.armed) return;
    for (size_t i = 0; i < N_GUARDED; i++) sigaction(guarded_signals[i], &g.old[i], NULL);
    sigaltstack(&g.old_alt, NULL);
    g.armed = 0;
    g.plugin = NULL;
    g.e = NULL;
    g.temp_dir[0] = 0;
}

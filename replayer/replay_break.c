/*
 * replay_break.c - stopping just before an event.
 *
 * The engine calls replay_on_break from inside the core that is about to
 * emit the event, on that core's coroutine stack, so the kernel function
 * that issued it is a few frames up. Under a debugger (TracerPid in
 * /proc/self/status) we raise SIGTRAP right there: gdb stops, the extension
 * selects the kernel's frame, and `continue` goes on replaying (and
 * comparing). Without a debugger there is nobody to hand the stack to, so
 * the state of every core and the event about to execute are printed and
 * the run stops: the replay so far has been checked, the rest is not needed.
 *
 * Events emitted by the scheduler itself (a transfer completing, the
 * deadlock report, the end of the run) have no kernel frame; the dump and
 * the extension say so and name the kernel line behind them.
 */
#include "replayer/replay_internal.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int replay_pid_traced(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    int tracer = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "TracerPid:", 10) == 0) {
            tracer = atoi(line + 10);
            break;
        }
    fclose(f);
    return tracer != 0;
}

static int replay_debugger_attached(void) { return replay_pid_traced(getpid()); }

/* 1 when the process tracing this one is gdb (its /proc comm), which
 * swallows a trap instruction's SIGTRAP and resumes after it. */
static int traced_by_gdb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256], comm[64] = "";
    int tracer = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "TracerPid:", 10) == 0) tracer = atoi(line + 10);
    fclose(f);
    if (tracer <= 0) return 0;
    snprintf(line, sizeof line, "/proc/%d/comm", tracer);
    f = fopen(line, "r");
    if (!f) return 0;
    int got = fgets(comm, sizeof comm, f) != NULL;
    fclose(f);
    return got && strncmp(comm, "gdb", 3) == 0;
}

/* Stops the debugger here. Under gdb a trap instruction, so gdb stops in
 * this frame (raise would stop it inside glibc's pthread_kill, whose
 * source gdb then says it cannot find); under another tracer (strace,
 * which passes the signal on) a SIGTRAP raised while it is ignored. */
static void trap_to_debugger(void) {
#if defined(__x86_64__) || defined(__i386__)
    if (traced_by_gdb()) {
        __asm__ volatile("int3");
        return;
    }
#elif defined(__aarch64__)
    if (traced_by_gdb()) {
        __asm__ volatile("brk #0");
        return;
    }
#endif
    struct sigaction ign, old;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigaction(SIGTRAP, &ign, &old);
    raise(SIGTRAP);
    sigaction(SIGTRAP, &old, NULL);
}

static void print_break(replay *rp, const engine_event *ev, int on_stack) {
    char text[600], where[400];
    replay_fmt_event(rp, ev, text, sizeof text);
    replay_fmt_site(rp, ev->site, where, sizeof where);
    FILE *out = rp->out;
    fprintf(out, "break before event %llu: %s\n", (unsigned long long)ev->seq, text);
    if (on_stack)
        fprintf(out, "  issued by the kernel at %s\n", where);
    else
        fprintf(out, "  emitted by the scheduler, not by kernel code%s%s\n",
                ev->site ? "; its kernel line: " : "", ev->site ? where : "");
    /* The trace's event at this seq, read ahead: normally the same. */
    engine_event want;
    int k = replay_next_expected(rp, &want);
    if (k == 1) {
        rp->peek = want;
        rp->have_peek = 1;
        if (memcmp(&want, ev, sizeof want) != 0) {
            replay_fmt_event(rp, &want, text, sizeof text);
            fprintf(out, "  the trace has here: %s\n", text);
        }
    }
    fprintf(out, "state after event %llu, virtual time %.6f us:\n",
            (unsigned long long)(ev->seq - 1), (double)engine_now(rp->e) / 1e6);
    replay_write_cores(rp, out);
    fflush(out);
}

static void replay_on_break(void *ctx, const engine_event *ev) {
    replay *rp = ctx;
    if (rp->done) return;
    rp->in_run = 1;
    rp->at_break = 1;
    rp->break_ev = *ev;
    int ci = replay_core_index(rp, ev->rank, ev->core);
    int on_stack = ev->kind != EV_RUN_END && ci >= 0 && replay_running_core(rp) == ci;
    rp->break_on_stack = on_stack;
    if (rp->child_reply_fd >= 0) {
        /* A snapshot resumed by replay_goto: it has arrived. */
        if (rp->child_print) print_break(rp, ev, on_stack);
        replay_child_finish(rp, REPLAY_BREAK, ev->seq, "");
    }
    replay_gdb_note_break(rp, ev, on_stack);
    if (replay_debugger_attached()) {
        /* gdb swallows the SIGTRAP it stops on; a tracer that passes it on
         * (strace) must not see the process die of it (trap_to_debugger) */
        trap_to_debugger();
        /* Continued: the replay goes on (the debugger may have moved the
         * break with `npurr goto`). */
        rp->at_break = 0;
        replay_gdb_note_resume();
        return;
    }
    print_break(rp, ev, on_stack);
    char text[600];
    replay_fmt_event(rp, ev, text, sizeof text);
    snprintf(rp->v.what, sizeof rp->v.what, "stopped before event %llu: %s",
             (unsigned long long)ev->seq, text);
    rp->v.status = REPLAY_BREAK;
    rp->v.seq = ev->seq;
    replay_stop(rp);
}

/* The callback stays installed with seq 0 (no event has it): a debugger
 * that writes the engine's break seq (`npurr goto`) then stops there. */
void replay_set_break(replay *rp, uint64_t seq) {
    engine_set_break(rp->e, seq, replay_on_break, rp);
}

/*
 * replay_gdb.c - what replayer/npurr_gdb.py calls inside the stopped
 * process.
 *
 * gdb evaluates `(const char *) npurr_gdb_when()` in the inferior and
 * prints the string itself, so the output goes through gdb (pagination,
 * logging, -batch capture) rather than the inferior's stdout. The text is
 * built in a static buffer: the inferior may be stopped anywhere, even
 * inside malloc, so these functions must not allocate. They reach the
 * replay through one global pointer, set by replay_attach and cleared by
 * replay_free, and say so plainly when there is none.
 *
 * The break globals tell the extension's stop handler which kernel frame
 * to select after the SIGTRAP of a break point: the function and line of
 * the call site that issues the event.
 */
#include "replayer/replay_internal.h"

#include <string.h>

replay *volatile npurr_gdb_replay;
volatile uint64_t npurr_gdb_break_seq;     /* the break being stopped at, 0 none */
volatile uint64_t npurr_gdb_break_serial;  /* counts breaks: a new value is a new stop */
volatile int npurr_gdb_break_on_stack;     /* 1: a kernel frame is up the stack */
volatile int npurr_gdb_break_line;
char npurr_gdb_break_file[1024];
char npurr_gdb_break_func[256];
volatile uint64_t npurr_gdb_resume_seq;    /* set by `npurr goto` in a held snapshot */

static char g_text[1 << 20];

#define GDB_API __attribute__((used, noinline))

void replay_gdb_note_break(const replay *rp, const engine_event *ev, int on_core_stack) {
    engine_site s;
    npurr_gdb_break_line = 0;
    npurr_gdb_break_file[0] = npurr_gdb_break_func[0] = 0;
    if (ev->site && engine_site_get(rp->e, ev->site, &s)) {
        npurr_gdb_break_line = s.line;
        snprintf(npurr_gdb_break_file, sizeof npurr_gdb_break_file, "%s", s.file ? s.file : "");
        snprintf(npurr_gdb_break_func, sizeof npurr_gdb_break_func, "%s", s.func ? s.func : "");
    }
    npurr_gdb_break_on_stack = on_core_stack;
    npurr_gdb_break_seq = ev->seq;
    npurr_gdb_break_serial++;
}

static replay_out begin(void) {
    replay_out o = {NULL, g_text, sizeof g_text, 0};
    g_text[0] = 0;
    return o;
}

static int have_replay(replay_out *o) {
    if (npurr_gdb_replay) return 1;
    rout_printf(o, "no replay in this process: run `npurr replay RUN [--break-at SEQ]` under gdb\n");
    return 0;
}

GDB_API const char *npurr_gdb_when(void) {
    replay_out o = begin();
    if (have_replay(&o)) replay_text_when(npurr_gdb_replay, &o);
    return g_text;
}

/* The listings of `npurr cores` and `npurr rings` (all = 1, rank = -1 for
 * everything). The role is written by the extension into npurr_gdb_arg:
 * passing a string literal would make gdb call malloc in a process that may
 * be stopped inside it. */
char npurr_gdb_arg[256];

GDB_API const char *npurr_gdb_cores_filtered(int all, int blocked_only, int rank) {
    replay_out o = begin();
    replay_filter f = {.all = all, .blocked_only = blocked_only, .rank = rank,
                       .role = npurr_gdb_arg};
    if (have_replay(&o)) replay_text_cores_filtered(npurr_gdb_replay, &o, &f);
    return g_text;
}

GDB_API const char *npurr_gdb_rings_filtered(int all, int full_only, int rank) {
    replay_out o = begin();
    replay_filter f = {.all = all, .full_only = full_only, .rank = rank};
    if (have_replay(&o)) replay_text_rings_filtered(npurr_gdb_replay, &o, &f);
    return g_text;
}

/* "SEQ PID" per snapshot this process owns, oldest first. */
GDB_API const char *npurr_gdb_checkpoints(void) {
    replay_out o = begin();
    if (npurr_gdb_replay) replay_text_checkpoints(npurr_gdb_replay, &o);
    return g_text;
}

/* Stack pointer saved by rank's core when it was suspended (layout in
 * engine/coro_x86_64.S), 0 if it is running, finished without a stack or
 * does not exist. */
GDB_API unsigned long npurr_gdb_core_sp(int rank, int core) {
    replay *rp = npurr_gdb_replay;
    if (!rp || rank < 0 || core < 0) return 0;
    int i = replay_core_index(rp, (uint32_t)rank, (uint32_t)core);
    if (i < 0) return 0;
    return (unsigned long)(uintptr_t)engine_core_saved_sp(rp->e, i);
}

/* 1 if (rank, core) is the core executing right now (its stack is the
 * debugger's current one), 0 otherwise, -1 if there is no such core. */
GDB_API int npurr_gdb_core_running(int rank, int core) {
    replay *rp = npurr_gdb_replay;
    if (!rp || rank < 0 || core < 0) return -1;
    int i = replay_core_index(rp, (uint32_t)rank, (uint32_t)core);
    if (i < 0) return -1;
    return replay_running_core(rp) == i;
}

/* AIC cores per rank: core indexes below it are AIC, then AIV (npurr bt). */
GDB_API int npurr_gdb_num_aic(void) {
    return npurr_gdb_replay ? npurr_gdb_replay->num_aic : -1;
}

/* Seq of the event about to execute at a break, else the last executed. */
GDB_API unsigned long long npurr_gdb_seq(void) {
    replay *rp = npurr_gdb_replay;
    if (!rp) return 0;
    return rp->at_break ? rp->break_ev.seq : engine_seq(rp->e);
}

/* Moves the break point (forward `npurr goto`): 0, or -1 without a replay. */
GDB_API int npurr_gdb_set_break(unsigned long long seq) {
    if (!npurr_gdb_replay) return -1;
    replay_set_break(npurr_gdb_replay, seq);
    return 0;
}

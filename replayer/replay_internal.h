/*
 * replay_internal.h - what the replayer's files share; not a public API.
 *
 *   replay_config.c   trace header -> engine_config (config.*, hw.*)
 *   replay_compare.c  the comparing observer, the ending, the verdict
 *   replay_break.c    break points: SIGTRAP under a debugger, else a dump
 *   replay_ckpt.c     fork-based snapshots and replay_goto
 *   replay_text.c     events, cores and rings as text (CLI, break dumps)
 *   replay_report.c   the verdict as a report and an exit code
 *   replay_gdb.c      the state the gdb extension reads (no calls into us)
 */
#ifndef NPURR_REPLAY_INTERNAL_H
#define NPURR_REPLAY_INTERNAL_H

#include <sys/types.h>

#include "replayer/replayer.h"

/* ------------------------------------------------------------ text sink */

/* Text goes either to a FILE (CLI) or into a caller's fixed buffer (gdb:
 * the inferior must not allocate while stopped at an arbitrary point). */
typedef struct replay_out {
    FILE *f;
    char *buf;
    size_t cap, len;
} replay_out;

void rout_printf(replay_out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------ per core */

/* What the observer learns about each core from the events it sees: the
 * engine's introspection says blocked/finished, the events say since when
 * and where. The gdb extension reads this array as it is (replay_gdb.c):
 * every field is plain data or a pointer to a string the engine owns. */
typedef struct replay_core {
    uint8_t started, finished, faulted;
    uint8_t launched;          /* a kernel was launched on it */
    uint8_t blocked;           /* a wait is open (the engine's word at a refresh) */
    uint8_t wait_kind;         /* kind of the open *_WAIT_BEGIN */
    uint64_t wait_seq;         /* seq of the open *_WAIT_BEGIN, 0 none */
    uint32_t wait_site;
    uint64_t last_seq;         /* last event on one of its tracks */
    int32_t rank, core;
    uint64_t now;              /* virtual time of its last event (ps) */
    const char *role;          /* its role, else its kernel's name */
    const char *wait_what;     /* the open wait's event kind, by name */
    const char *wait_file, *wait_func;
    int32_t wait_line;
    uint64_t described_seq;    /* waiting_on is the engine's text as of this seq */
    char waiting_on[256];
    engine_core_slots slots;   /* its live context, for npurr bt */
} replay_core;

/* A ring as `npurr rings` shows it; head and tail follow every event that
 * names one of its words, and all rings are read again at a break. */
typedef struct replay_ring {
    const char *name, *level;
    int32_t producer, consumer;
    uint64_t capacity;
    int64_t head, tail;
    uint32_t head_obj, tail_obj;
} replay_ring;

/* ------------------------------------------------------------ snapshots */

typedef struct replay_ckpt {
    uint64_t seq;       /* the snapshot is the state right after this event */
    pid_t pid;
    int cmd_fd;         /* write end: goto command to the snapshot */
    int reply_fd;       /* read end: its answer */
} replay_ckpt;

typedef struct replay_ckpts {
    replay_ckpt *v;
    int n, cap, max;
    uint64_t every;     /* current interval (doubles when thinning) */
    pid_t owner;        /* the process whose children these are */
    int disabled;       /* fork failed once: stop trying */
    int full_noted;
} replay_ckpts;

/* Command sent to a snapshot and its answer. */
typedef struct replay_goto_cmd {
    uint64_t target;
    int print_state;
} replay_goto_cmd;

typedef struct replay_goto_reply {
    uint64_t reached;
    int status;         /* replay_status */
    char what[512];
} replay_goto_reply;

/* ------------------------------------------------------------ the replay */

struct replay {
    engine *e;
    rec_reader *r;
    replay_opts opts;
    FILE *out;
    replay_verdict v;
    int done;                  /* verdict decided: later events are ignored */
    int in_run;                /* engine_run has begun: cores have stacks */
    int stop_requested;        /* we asked the engine to stop */
    uint64_t trace_events;     /* trace events consumed */
    engine_event peek;         /* one event read ahead (break dumps) */
    int have_peek;

    int ncores, num_aic, cores_per_rank;
    replay_core *cores;
    replay_ring *rings;        /* the declared rings, for the gdb view */
    int nrings;
    int32_t *ring_of_object;   /* object id -> index in rings of its ring, -1 none */
    uint32_t nobjects;

    /* break point */
    int at_break;
    int break_on_stack;        /* the break fired on the issuing core's stack */
    engine_event break_ev;

    /* timing */
    double t_start, t_end;

    /* snapshots */
    replay_ckpts ck;
    int child_reply_fd;        /* >= 0: this process is a resumed snapshot */
    int child_print;
};

/* replay_compare.c */
void replay_stop(replay *rp);
/* Next trace event (the read-ahead first): 1, 0 at the end, -1 error. */
int replay_next_expected(replay *rp, engine_event *ev);
int replay_core_index(const replay *rp, uint32_t rank, uint32_t core);

/* replay_text.c: every launched core (running, ready, blocked on what since
 * which seq and kernel line, finished or faulted, role, local time), as a
 * break without a debugger prints it. */
void replay_write_cores(const replay *rp, FILE *out);

/* replay_break.c */
void replay_set_break(replay *rp, uint64_t seq);
int replay_pid_traced(pid_t pid);

/* replay_ckpt.c */
void replay_ckpt_after_event(replay *rp, uint64_t seq);
void replay_ckpt_free(replay *rp);
/* A resumed snapshot ends here: answers its parent and exits. */
void replay_child_finish(replay *rp, replay_status st, uint64_t seq, const char *what)
    __attribute__((noreturn));

/* replay_text.c */
void replay_fmt_event(const replay *rp, const engine_event *ev, char *buf, size_t len);
void replay_fmt_core_name(const replay *rp, uint32_t rank, uint32_t core, char *buf, size_t len);
void replay_fmt_site(const replay *rp, uint32_t site, char *buf, size_t len);
/* What blocked core i (its state st) waits on and, when known, since which
 * seq and kernel line: "ring 3 head since seq 812 at a.c:40 (f)". */
void replay_fmt_wait(const replay *rp, int i, const engine_core_state *st, char *buf, size_t len);
/* At a break only: the event about to execute. */
void replay_text_when(const replay *rp, replay_out *o);
/* The running core (on whose stack a break fires), -1 if none. */
int replay_running_core(const replay *rp);

/* replay_gdb.c: the state the gdb extension reads without calling into
 * the process. */
extern volatile uint64_t npurr_gdb_break_seq;
extern volatile uint64_t npurr_gdb_resume_seq;
int replay_view_attach(replay *rp);
void replay_view_detach(replay *rp);
/* After each matched event: the cores' and rings' records, the clock. */
void replay_view_event(replay *rp, const engine_event *ev);
/* At a break: everything read again from the engine, and `npurr when`. */
void replay_gdb_note_break(replay *rp, const engine_event *ev, int on_core_stack);
/* Continued after a break: the view is no longer at one. */
void replay_gdb_note_resume(void);

#endif

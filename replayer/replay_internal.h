/*
 * replay_internal.h - what the replayer's files share; not a public API.
 *
 *   replay_config.c   trace header -> engine_config (config.*, hw.*)
 *   replay_compare.c  the comparing observer, the ending, the verdict
 *   replay_break.c    break points: SIGTRAP under a debugger, else a dump
 *   replay_ckpt.c     fork-based snapshots and replay_goto
 *   replay_text.c     events, cores and rings as text (CLI, gdb, reports)
 *   replay_report.c   the verdict as a report and an exit code
 *   replay_gdb.c      functions the gdb extension calls in the inferior
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
 * and where. */
typedef struct replay_core {
    uint8_t started, finished, faulted;
    uint8_t wait_kind;         /* kind of the open *_WAIT_BEGIN */
    uint64_t wait_seq;         /* seq of the open *_WAIT_BEGIN, 0 none */
    uint32_t wait_site;
    uint64_t last_seq;         /* last event on one of its tracks */
} replay_core;

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

double replay_wall(void);

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
/* Which cores or rings a listing shows (npurr cores/rings under gdb). */
typedef struct replay_filter {
    int all;            /* list everything (the summary comes first anyway) */
    int blocked_only;   /* cores: only blocked ones */
    int full_only;      /* rings: only full ones */
    int rank;           /* -1 any; cores of that rank, rings it produces or consumes */
    const char *role;   /* cores: only this role (NULL or "" any) */
} replay_filter;
void replay_text_cores_filtered(const replay *rp, replay_out *o, const replay_filter *f);
void replay_text_rings_filtered(const replay *rp, replay_out *o, const replay_filter *f);
void replay_text_when(const replay *rp, replay_out *o);
void replay_text_checkpoints(const replay *rp, replay_out *o);
/* The running core (on whose stack a break fires), -1 if none. */
int replay_running_core(const replay *rp);

/* replay_gdb.c */
extern replay *volatile npurr_gdb_replay;
extern volatile uint64_t npurr_gdb_break_seq;
extern volatile uint64_t npurr_gdb_resume_seq;
void replay_gdb_note_break(const replay *rp, const engine_event *ev, int on_core_stack);

#endif

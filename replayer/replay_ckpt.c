/*
 * replay_ckpt.c - fork-based snapshots of a replay, and going back to them.
 *
 * Every N events the replaying process forks. The child is the whole
 * process frozen right after that event (engine, coroutine stacks, trace
 * reader position: fork copies them all, copy-on-write), blocked on a
 * command pipe. replay_goto(seq) sends a command to the newest snapshot
 * before seq; the snapshot forks once more and stays where it is, waiting
 * for the next command, while that fork sets its break point to seq, goes
 * on replaying and comparing from where it was frozen, answers on the
 * reply pipe and exits. Reaching an event late in a long trace then costs
 * the distance from the nearest snapshot, not from the first event, and a
 * snapshot is never used up: going back twice to the same region costs the
 * same twice.
 *
 * The table keeps at most max snapshots: when full, those not on a multiple
 * of twice the interval are killed and the interval doubles, so a bounded
 * number of processes keeps covering the whole run (older parts more
 * sparsely, as with rr's checkpoints).
 *
 * No snapshot outlives the replay: replay_free kills and reaps them, and
 * each one asks the kernel to kill it if its parent dies (PR_SET_PDEATHSIG)
 * so a crash or SIGKILL of the replay leaves nothing behind.
 *
 * Under gdb with the extension loaded (detach-on-fork off), gdb keeps each
 * forked child stopped as an inferior of its own before it runs a single
 * instruction. `npurr goto` then switches to that inferior, stores the
 * target in npurr_gdb_resume_seq and continues it: the child sees the
 * target before touching its pipe, forks a copy of itself (which gdb holds
 * in turn: the snapshot survives, listed in this process's table for the
 * extension to find) and becomes an ordinary replay (under the debugger)
 * with its break point at the target. Such held children are the
 * debugger's: we neither wait for nor thin them.
 */
#include "replayer/replay_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Moves all n bytes through fd (write when out, else read), again after a
 * short or interrupted transfer; -1 on an error or an early end of file. */
static int move_full(int fd, char *c, size_t n, int out) {
    while (n) {
        ssize_t k = out ? write(fd, c, n) : read(fd, c, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        c += k;
        n -= (size_t)k;
    }
    return 0;
}

static int write_full(int fd, const void *p, size_t n) { return move_full(fd, (char *)p, n, 1); }
static int read_full(int fd, void *p, size_t n) { return move_full(fd, p, n, 0); }

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Kills and reaps one snapshot we own; a debugger's held one is left to it. */
static void end_snapshot(replay_ckpt *c) {
    close_fd(&c->cmd_fd);
    close_fd(&c->reply_fd);
    if (c->pid <= 0 || replay_pid_traced(c->pid)) return;
    kill(c->pid, SIGKILL);
    while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR) {}
}

/* Drops every snapshot not on a multiple of twice the interval. */
static int thin(replay *rp) {
    replay_ckpts *ck = &rp->ck;
    for (int i = 0; i < ck->n; i++)
        if (replay_pid_traced(ck->v[i].pid)) return 0;
    uint64_t every = ck->every * 2;
    int kept = 0;
    for (int i = 0; i < ck->n; i++) {
        if (ck->v[i].seq % every == 0) ck->v[kept++] = ck->v[i];
        else end_snapshot(&ck->v[i]);
    }
    ck->n = kept;
    ck->every = every;
    return kept < ck->max;
}

/* In a fresh child: the table's pipes and processes are the parent's. */
static void forget_inherited(replay *rp) {
    for (int i = 0; i < rp->ck.n; i++) {
        close_fd(&rp->ck.v[i].cmd_fd);
        close_fd(&rp->ck.v[i].reply_fd);
    }
    rp->ck.n = 0;
    rp->ck.owner = getpid();
}

/* Under gdb: a held snapshot continued with a target. It forks a copy that
 * gdb holds in its place (the snapshot survives the goto), then goes on to
 * the target itself. The copy, continued later with another target, does
 * the same. */
static void snapshot_resume_under_gdb(replay *rp, uint64_t at_seq) {
    for (;;) {
        uint64_t target = npurr_gdb_resume_seq;
        npurr_gdb_resume_seq = 0;
        fflush(NULL);
        pid_t copy = fork();
        if (copy != 0) {
            forget_inherited(rp);
            if (copy > 0) {
                /* Listed in the view's snapshot table so `npurr goto` finds it;
                 * no pipes: the debugger drives it. */
                if (rp->ck.n == rp->ck.cap) {
                    int cap = rp->ck.cap ? 2 * rp->ck.cap : 16;
                    replay_ckpt *v = realloc(rp->ck.v, (size_t)cap * sizeof *v);
                    if (v) {
                        rp->ck.v = v;
                        rp->ck.cap = cap;
                    }
                }
                if (rp->ck.n < rp->ck.cap) rp->ck.v[rp->ck.n++] = (replay_ckpt){at_seq, copy, -1, -1};
            }
            rp->t_start = engine_host_seconds();
            replay_set_break(rp, target);
            return;
        }
        /* The copy: held by gdb until `npurr goto` gives it a target. */
        if (!npurr_gdb_resume_seq) _exit(0);
    }
}

/* The child's side of a snapshot: wait for a command, fork the process that
 * carries it out, and wait for the next one. */
static void snapshot_wait(replay *rp, uint64_t at_seq, int cmd_rd, int reply_wr) {
    if (npurr_gdb_resume_seq) {
        /* gdb held us right after fork and chose a target (see above). */
        close(cmd_rd);
        close(reply_wr);
        snapshot_resume_under_gdb(rp, at_seq);
        return;
    }
    pid_t parent = rp->ck.owner;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(0);  /* the parent died before prctl */
    forget_inherited(rp);
    for (;;) {
        replay_goto_cmd cmd;
        if (read_full(cmd_rd, &cmd, sizeof cmd)) _exit(0);  /* parent gone or done */
        fflush(NULL);
        pid_t worker = fork();
        if (worker == 0) {
            /* The worker dies with the snapshot, as the snapshot dies with
             * the replay. */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            close(cmd_rd);
            rp->child_reply_fd = reply_wr;
            rp->child_print = cmd.print_state;
            rp->ck.every = 0;  /* it ends at the target: no snapshots of its own */
            replay_set_break(rp, cmd.target);
            return;
        }
        if (worker < 0) {
            /* Cannot fork: carry the command out ourselves (the snapshot is
             * then used up, as before). */
            close(cmd_rd);
            rp->child_reply_fd = reply_wr;
            rp->child_print = cmd.print_state;
            rp->ck.every = 0;
            replay_set_break(rp, cmd.target);
            return;
        }
        int wst = 0;
        while (waitpid(worker, &wst, 0) < 0 && errno == EINTR) {}
        if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
            /* The worker died without answering (a crash in the replayed
             * code): answer for it, or the replay would wait forever on a
             * pipe this snapshot keeps open. */
            replay_goto_reply rep;
            memset(&rep, 0, sizeof rep);
            rep.reached = at_seq;
            rep.status = (int)REPLAY_TRACE_ERROR;
            snprintf(rep.what, sizeof rep.what, "the process resumed from seq %llu died (%s %d)",
                     (unsigned long long)at_seq, WIFSIGNALED(wst) ? "signal" : "status",
                     WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
            (void)write_full(reply_wr, &rep, sizeof rep);
        }
    }
}

void replay_child_finish(replay *rp, replay_status st, uint64_t seq, const char *what) {
    replay_goto_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.reached = seq;
    rep.status = (int)st;
    snprintf(rep.what, sizeof rep.what, "%s", what ? what : "");
    fflush(NULL);
    (void)write_full(rp->child_reply_fd, &rep, sizeof rep);
    _exit(0);
}

void replay_ckpt_after_event(replay *rp, uint64_t seq) {
    replay_ckpts *ck = &rp->ck;
    if (ck->disabled || rp->child_reply_fd >= 0) return;
    if (ck->n >= ck->max) {
        if (!thin(rp)) {
            if (!ck->full_noted)
                fprintf(stderr, "npurr replay: %d snapshots held by the debugger: no more are "
                                "taken after seq %llu\n", ck->n, (unsigned long long)seq);
            ck->full_noted = 1;
            return;
        }
        if (seq % ck->every) return;
    }
    if (ck->n == ck->cap) {
        int cap = ck->cap ? 2 * ck->cap : 16;
        replay_ckpt *v = realloc(ck->v, (size_t)cap * sizeof *v);
        if (!v) return;
        ck->v = v;
        ck->cap = cap;
    }
    int cmd[2], rep[2];
    if (pipe2(cmd, O_CLOEXEC)) { ck->disabled = 1; return; }
    if (pipe2(rep, O_CLOEXEC)) { close(cmd[0]); close(cmd[1]); ck->disabled = 1; return; }
    /* Buffered output would otherwise be written twice, once per process. */
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "npurr replay: cannot fork a snapshot at seq %llu: %s; going on without\n",
                (unsigned long long)seq, strerror(errno));
        close(cmd[0]); close(cmd[1]); close(rep[0]); close(rep[1]);
        ck->disabled = 1;
        return;
    }
    if (pid == 0) {
        close(cmd[1]);
        close(rep[0]);
        snapshot_wait(rp, seq, cmd[0], rep[1]);
        return;  /* resumed: replay on from here */
    }
    close(cmd[0]);
    close(rep[1]);
    ck->v[ck->n++] = (replay_ckpt){seq, pid, cmd[1], rep[0]};
}

int replay_goto(replay *rp, uint64_t seq, int print_state, replay_goto_result *res, char *err,
                size_t errlen) {
    memset(res, 0, sizeof *res);
    replay_ckpts *ck = &rp->ck;
    int best = -1;
    for (int i = 0; i < ck->n; i++)
        if (ck->v[i].seq < seq && (best < 0 || ck->v[i].seq > ck->v[best].seq)) best = i;
    if (best < 0) {
        snprintf(err, errlen, "no snapshot before seq %llu (%d kept%s)", (unsigned long long)seq,
                 ck->n, rp->opts.checkpoint_every ? "" : "; checkpoints are off");
        return -1;
    }
    replay_ckpt c = ck->v[best];
    if (replay_pid_traced(c.pid) || c.cmd_fd < 0) {
        snprintf(err, errlen, "the snapshot at seq %llu (pid %d) is held by a debugger: use "
                 "`npurr goto` there", (unsigned long long)c.seq, (int)c.pid);
        return -1;
    }
    replay_goto_cmd cmd = {seq, print_state};
    fflush(NULL);
    double t0 = engine_host_seconds();
    replay_goto_reply rep;
    int failed = write_full(c.cmd_fd, &cmd, sizeof cmd) || read_full(c.reply_fd, &rep, sizeof rep);
    double t1 = engine_host_seconds();
    if (failed) {
        /* Dead: drop it from the table. */
        end_snapshot(&ck->v[best]);
        memmove(&ck->v[best], &ck->v[best + 1], (size_t)(ck->n - best - 1) * sizeof *ck->v);
        ck->n--;
        snprintf(err, errlen, "the snapshot at seq %llu (pid %d) died before answering",
                 (unsigned long long)c.seq, (int)c.pid);
        return -1;
    }
    res->from_seq = c.seq;
    res->reached_seq = rep.reached;
    res->status = (replay_status)rep.status;
    res->seconds = t1 - t0;
    snprintf(res->what, sizeof res->what, "%s", rep.what);
    return 0;
}

int replay_checkpoint_count(const replay *rp) { return rp->ck.n; }

uint64_t replay_checkpoint_seq(const replay *rp, int i) {
    return i >= 0 && i < rp->ck.n ? rp->ck.v[i].seq : 0;
}

void replay_ckpt_free(replay *rp) {
    for (int i = 0; i < rp->ck.n; i++) end_snapshot(&rp->ck.v[i]);
    free(rp->ck.v);
    rp->ck.v = NULL;
    rp->ck.n = rp->ck.cap = 0;
}

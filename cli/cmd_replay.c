/*
 * cmd_replay.c - `npurr replay RUN [--break-at SEQ] [--checkpoint-every N]`:
 * re-execute a recorded run from its folder and compare every event.
 *
 * The run-session library does the work (replay_session_open rebuilds the
 * run from the trace header alone: the recorded command line, config.* and
 * hw.*, the input files copied into the folder; replay_session_run replays
 * it under the comparing observer, runs the kernel's check on a completed
 * run and compares the ending). This file parses the options, prints the
 * verdict and the checkpoint figures, and maps the verdict to the exit
 * code (DESIGN.md).
 */
#include "cli.h"

#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "recorder/recorder.h"

static void print_help(void) {
    printf("usage: npurr replay RUN [--break-at SEQ] [--checkpoint-every N [--max-checkpoints N]]\n"
           "                        [--dump NAME[@RANK]=FILE.npy] [--quiet]\n\n"
           "Re-executes the run recorded in RUN from what the folder holds (command line,\n"
           "configuration, seed, hardware parameters), compares every event with\n"
           "RUN/trace.zst field by field, and stops at the first difference with a report:\n"
           "seq, expected and actual event, rank, core, kernel file:line. Otherwise it\n"
           "prints \"identical: N events, outcome X\" and reproduces the recorded ending\n"
           "(completion, failed data check, or deadlock with the same blocked cores).\n\n"
           "options:\n"
           "  --break-at SEQ          stop just before event SEQ executes, inside the kernel\n"
           "                          code that issues it. Under gdb the process stops there\n"
           "                          (SIGTRAP); without a debugger the state of every core\n"
           "                          and the event are printed and replay exits 0.\n"
           "  --checkpoint-every N    fork a snapshot after every N events while replaying,\n"
           "                          then report the time to reach the last event from the\n"
           "                          nearest snapshot vs from the first event (under gdb,\n"
           "                          `npurr goto SEQ` resumes these snapshots)\n"
           "  --max-checkpoints N     snapshots kept at once (default 32; when full, every\n"
           "                          other one is dropped and the interval doubles)\n"
           "  --dump NAME[@RANK]=FILE.npy\n"
           "                          after the replay, write the tensor (or GM allocation)\n"
           "                          NAME of RANK (default 0) as a NumPy file; repeatable\n"
           "  --quiet                 print only the verdict\n\n"
           "under gdb:  gdb -x build/npurr_gdb.py --args build/npurr replay RUN --break-at SEQ\n"
           "            (commands: npurr when | cores | rings | bt RANK CORE | goto SEQ)\n\n"
           "exit: 0 identical and completed (check passed), or stopped at --break-at;\n"
           "      3 deadlock or watchdog reproduced at the same seq with the same blocked cores;\n"
           "      4 failed data check reproduced; 5 diverged from the trace;\n"
           "      1 cannot replay (missing or truncated trace, other format version, a\n"
           "        --break-at past the end) or a reproduced kernel fault; 2 usage\n");
}

static int parse_count(const char *opt, const char *v, uint64_t *out) {
    unsigned long long x;
    if (cli_parse_uint(v, 1, UINT64_MAX, &x)) {
        fprintf(stderr, "npurr replay: %s: '%s' is not a positive integer\n", opt, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

typedef struct replay_cli {
    const char *run;
    replay_opts opts;
    int quiet;
    cli_dump dumps[16];      /* --dump, written after the replay */
    int n_dumps;
} replay_cli;

static int parse_args(int argc, char **argv, replay_cli *c) {
    memset(c, 0, sizeof *c);
    for (int i = CLI_FIRST_ARG; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        /* --opt=VALUE: split into name and value, and take no next word */
        char name[64];
        const char *eq = strncmp(a, "--", 2) == 0 ? strchr(a, '=') : NULL;
        if (eq && (size_t)(eq - a) < sizeof name) {
            memcpy(name, a, (size_t)(eq - a));
            name[eq - a] = 0;
            a = name;
            v = eq + 1;
        }
        int next = eq ? 0 : 1;   /* words a valued option consumes after its own */
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { print_help(); return -2; }
        if (strcmp(a, "--quiet") == 0 && !eq) { c->quiet = 1; continue; }
        if (strcmp(a, "--break-at") == 0) {
            if (parse_count(a, v, &c->opts.break_at)) return EXIT_USAGE;
            i += next;
        } else if (strcmp(a, "--checkpoint-every") == 0) {
            if (parse_count(a, v, &c->opts.checkpoint_every)) return EXIT_USAGE;
            i += next;
        } else if (strcmp(a, "--dump") == 0) {
            char err[512];
            if (c->n_dumps == (int)(sizeof c->dumps / sizeof c->dumps[0]) || !v ||
                cli_dump_parse(v, &c->dumps[c->n_dumps], err, sizeof err)) {
                if (!v) snprintf(err, sizeof err, "--dump: missing value");
                else if (c->n_dumps == (int)(sizeof c->dumps / sizeof c->dumps[0]))
                    snprintf(err, sizeof err, "--dump: at most 16 tensors");
                fprintf(stderr, "npurr replay: %s\n", err);
                return EXIT_USAGE;
            }
            c->n_dumps++;
            i += next;
        } else if (strcmp(a, "--max-checkpoints") == 0) {
            uint64_t m;
            if (parse_count(a, v, &m)) return EXIT_USAGE;
            if (m < 2 || m > 4096) {
                fprintf(stderr, "npurr replay: --max-checkpoints: '%s' is not in 2..4096\n", v);
                return EXIT_USAGE;
            }
            c->opts.max_checkpoints = (int)m;
            i += next;
        } else if (a[0] == '-') {
            fprintf(stderr, "npurr replay: %s: unknown option (npurr replay --help)\n", a);
            return EXIT_USAGE;
        } else if (!c->run) {
            c->run = a;
        } else {
            fprintf(stderr, "npurr replay: unexpected argument '%s' (one RUN folder)\n", a);
            return EXIT_USAGE;
        }
    }
    if (!c->run) {
        fprintf(stderr, "usage: npurr replay RUN [--break-at SEQ] [--checkpoint-every N] [--quiet] "
                        "(npurr replay --help)\n");
        return EXIT_USAGE;
    }
    return 0;
}

static void report_checkpoints(replay *rp, const engine_result *res, const replay_cli *c) {
    int kept = replay_checkpoint_count(rp);
    printf("checkpoints: %d snapshots kept (taken every %llu events", kept,
           (unsigned long long)c->opts.checkpoint_every);
    if (kept) printf("; now at seq %llu..%llu", (unsigned long long)replay_checkpoint_seq(rp, 0),
                     (unsigned long long)replay_checkpoint_seq(rp, kept - 1));
    printf(")\n");
    replay_goto_result g;
    char err[ENGINE_ERRLEN];
    double from_start = replay_seconds_to_end(rp);
    if (replay_goto(rp, res->events, 0, &g, err, sizeof err)) {
        printf("reaching the last event (seq %llu): %.3f s from the first event; %s\n",
               (unsigned long long)res->events, from_start, err);
        return;
    }
    if (g.status != REPLAY_BREAK) {
        printf("reaching the last event from the snapshot at seq %llu failed: %s\n",
               (unsigned long long)g.from_seq, g.what);
        return;
    }
    printf("reaching the last event (seq %llu): %.3f s from the first event (this replay, "
           "taking the snapshots), %.3f s from the snapshot at seq %llu (%.1fx faster)\n",
           (unsigned long long)res->events, from_start, g.seconds, (unsigned long long)g.from_seq,
           g.seconds > 0 ? from_start / g.seconds : 0.0);
}

/* The verdict as replay prints it, and its exit code. */
static int print_verdict(replay_session *s, const replay_run *rr, const replay_cli *c) {
    replay *rp = replay_session_replay(s);
    const replay_verdict *v = replay_session_verdict(s);
    if (c->quiet && v->status == REPLAY_IDENTICAL) {
        printf("identical: %llu events, outcome %s\n", (unsigned long long)v->matched,
               v->recorded_outcome);
    } else {
        replay_write_report(rp, stdout);
        if (v->status == REPLAY_IDENTICAL && strcmp(rr->check, "failed") == 0)
            printf("data check: %s\n", rr->check_message);
    }
    int status = replay_exit_code(rp);
    if (c->opts.break_at && v->status == REPLAY_IDENTICAL && c->opts.break_at > rr->run.events) {
        printf("--break-at %llu was never reached: the run has %llu events\n",
               (unsigned long long)c->opts.break_at, (unsigned long long)rr->run.events);
        status = EXIT_ERROR;
    }
    if (c->opts.checkpoint_every && v->status == REPLAY_IDENTICAL)
        report_checkpoints(rp, &rr->run, c);
    return status;
}

/* Replay needs only trace.zst, the run's source of truth, and checks every
 * event against it. But an index.db left from another trace (the trace
 * replaced by another run's) would make every other reader refuse the run,
 * so an "identical" verdict alone would mislead: say so. */
static void warn_index_mismatch(const char *run) {
    char path[4200], err[2048];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/index.db", run) >= (int)sizeof path ||
        stat(path, &st) != 0)
        return;   /* no index (a recording killed before it): the trace is enough */
    sqlite3 *db = NULL;
    if (rec_index_open_ro(path, &db, err, sizeof err) == 0 &&
        rec_index_matches_trace(db, run, NULL, 0, err, sizeof err) == 0) {
        sqlite3_close(db);
        return;
    }
    sqlite3_close(db);
    fprintf(stderr, "npurr replay: warning: %s; the replay below checks trace.zst alone\n", err);
}

int cmd_replay(int argc, char **argv) {
    replay_cli c;
    int prc = parse_args(argc, argv, &c);
    if (prc == -2) return EXIT_DONE;
    if (prc) return prc;

    char err[ENGINE_ERRLEN] = "";
    replay_session *s = NULL;
    int rc = replay_session_open(c.run, &s, err, sizeof err);
    if (rc == SESSION_DIVERGED) {
        printf("diverged before the first event: %s\n", err);
        return EXIT_DIVERGED;
    }
    if (rc) {
        fprintf(stderr, "npurr replay: %s\n", err);
        return EXIT_ERROR;
    }
    warn_index_mismatch(c.run);
    if (replay_session_note(s)[0])
        fprintf(stderr, "npurr replay: warning: the trace has no value for %s: using this "
                        "build's defaults (timing may differ)\n", replay_session_note(s));
    const run_options *ro = &replay_session_spec(s)->opts;
    if (!c.quiet)
        printf("replay %s: -k %s on %d node%s x %d NPUs (%d ranks), seed %llu\n", c.run,
               ro->kernel->name, ro->config.nodes, ro->config.nodes == 1 ? "" : "s",
               ro->config.npus_per_node, engine_num_ranks(replay_session_engine(s)),
               (unsigned long long)ro->config.seed);
    engine *e = replay_session_engine(s);
    for (int i = 0; i < c.n_dumps; i++)
        if (cli_dump_check(&c.dumps[i], c.run, engine_num_ranks(e), err, sizeof err)) {
            fprintf(stderr, "npurr replay: %s\n", err);
            replay_session_close(s);
            return EXIT_USAGE;
        }
    replay_run rr;
    int status = EXIT_ERROR;
    if (replay_session_run(s, &c.opts, 1, &rr, err, sizeof err)) {
        fprintf(stderr, "npurr replay: %s\n", err);
    } else {
        if (!rr.ran) fprintf(stderr, "npurr replay: %s\n", rr.error);
        status = print_verdict(s, &rr, &c);
        for (int i = 0; rr.ran && i < c.n_dumps; i++) {
            int written;
            if (cli_dump_write(e, &c.dumps[i], &written, err, sizeof err)) {
                fprintf(stderr, "npurr replay: %s\n", err);
                if (!status) status = EXIT_ERROR;
            } else if (written && !c.quiet) {
                printf("dump %s@%d -> %s\n", c.dumps[i].name, c.dumps[i].rank, c.dumps[i].path);
            }
        }
        /* Stopped by the user: neither a divergence nor a verdict. */
        if (rr.interrupted) {
            fflush(stdout);
            fprintf(stderr, "npurr replay: interrupted (Ctrl-C or SIGTERM)\n");
            status = EXIT_INTERRUPTED;
        }
    }
    replay_session_close(s);
    return status;
}

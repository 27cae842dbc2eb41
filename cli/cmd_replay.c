/*
 * cmd_replay.c - `npurr replay RUN [--break-at SEQ] [--checkpoint-every N]`:
 * re-execute a recorded run from its folder and compare every event.
 *
 * The run is rebuilt from the trace header alone: the recorded command line
 * (shell-split, then parsed by the same run_options_parse as `record`) gives
 * the kernel and its options; config.* and hw.* then override the engine
 * configuration, so a --hw file that changed or disappeared since does not
 * matter. A kernel option whose file was copied into the folder at record
 * time is redirected there by a header key replay.opt.NAME (its value with
 * {RUN} standing for the folder). The kernel's setup runs, the replayer
 * compares the run with the trace, the kernel's check runs on a completed
 * run, and the verdict decides the exit code (DESIGN.md).
 */
#include "cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder.h"
#include "replayer/replayer.h"

static engine *volatile g_replaying;

static void on_signal(int sig) {
    (void)sig;
    if (g_replaying) engine_request_stop(g_replaying);
}

static void print_help(void) {
    printf("usage: npurr replay RUN [--break-at SEQ] [--checkpoint-every N [--max-checkpoints N]]\n"
           "                        [--quiet]\n\n"
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
    char *end = NULL;
    unsigned long long x = v ? strtoull(v, &end, 10) : 0;
    if (!v || end == v || *end || v[0] == '-' || x == 0) {
        fprintf(stderr, "npurr replay: %s: '%s' is not a positive integer\n", opt, v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

/* The recorded `record` argv without --hw FILE (the header has its values). */
static int recorded_argv(const char *line, char ***words, int *argc_out, char **argv_out[],
                         char *err, size_t errlen) {
    int n = shell_split(line, words);
    if (n < 0) {
        snprintf(err, errlen, "the recorded command line has malformed quoting: %s", line);
        return -1;
    }
    int start = -1;
    for (int i = 0; i < n; i++)
        if (strcmp((*words)[i], "record") == 0) { start = i; break; }
    if (start < 0) {
        snprintf(err, errlen, "the recorded command line is not an `npurr record` command: %s", line);
        return -1;
    }
    char **argv = calloc((size_t)n + 1, sizeof *argv);
    if (!argv) { snprintf(err, errlen, "out of memory"); return -1; }
    int argc = 0;
    argv[argc++] = (*words)[start];
    for (int i = start + 1; i < n; i++) {
        const char *a = (*words)[i];
        /* --opt=VALUE is one word, like a flag */
        int joined = strncmp(a, "--", 2) == 0 && strchr(a, '=') != NULL;
        int flag = strcmp(a, "--quiet") == 0 || strcmp(a, "--no-trace") == 0 ||
                   strcmp(a, "--progress") == 0 || a[0] != '-' || joined;
        if (strcmp(a, "--hw") == 0) { i++; continue; }
        if (strncmp(a, "--hw=", 5) == 0) continue;
        argv[argc++] = (*words)[i];
        if (!flag && i + 1 < n) argv[argc++] = (*words)[++i];
    }
    *argc_out = argc;
    *argv_out = argv;
    return 0;
}

/* replay.opt.NAME keys: values for options whose files live in the folder. */
static int redirect_inputs(rec_reader *r, const char *run, run_options *ro, char **owned,
                           char *err, size_t errlen) {
    for (int i = 0; i < ro->kopts.count; i++) {
        char key[128];
        snprintf(key, sizeof key, "replay.opt.%s", ro->kopts.names[i]);
        const char *v = rec_reader_meta(r, key);
        if (!v) continue;
        size_t cap = strlen(v) + 1;
        for (const char *p = strstr(v, "{RUN}"); p; p = strstr(p + 5, "{RUN}")) cap += strlen(run);
        char *s = malloc(cap), *w = s;
        if (!s) { snprintf(err, errlen, "out of memory"); return -1; }
        for (const char *p = v; *p;) {
            if (strncmp(p, "{RUN}", 5) == 0) { w += sprintf(w, "%s", run); p += 5; }
            else *w++ = *p++;
        }
        *w = 0;
        owned[i] = s;
        ro->kopts.values[i] = s;
    }
    return 0;
}

typedef struct replay_cli {
    const char *run;
    replay_opts opts;
    int quiet;
} replay_cli;

static int parse_args(int argc, char **argv, replay_cli *c) {
    memset(c, 0, sizeof *c);
    for (int i = 1; i < argc; i++) {
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

int cmd_replay(int argc, char **argv) {
    replay_cli c;
    int prc = parse_args(argc, argv, &c);
    if (prc == -2) return EXIT_DONE;
    if (prc) return prc;

    char err[ENGINE_ERRLEN] = "", note[512];
    rec_reader *r = NULL;
    if (rec_reader_open(c.run, &r, err, sizeof err)) {
        fprintf(stderr, "npurr replay: cannot replay: %s\n", err);
        return EXIT_ERROR;
    }
    int status = EXIT_ERROR;
    char **words = NULL, **rargv = NULL, *owned[64] = {0};
    engine *e = NULL;
    void *state = NULL;
    replay *rp = NULL;
    run_options ro;
    memset(&ro, 0, sizeof ro);
    const char *line = rec_reader_meta(r, "command_line");
    const char *kname = rec_reader_meta(r, "kernel");
    int rargc = 0;
    if (!line || !kname) {
        fprintf(stderr, "npurr replay: %s: the trace header has no %s\n", c.run,
                line ? "kernel" : "command_line");
        goto out;
    }
    if (recorded_argv(line, &words, &rargc, &rargv, err, sizeof err)) {
        fprintf(stderr, "npurr replay: %s: %s\n", c.run, err);
        goto out;
    }
    if (run_options_parse(rargc, rargv, RUN_OPT_OUTPUT | RUN_OPT_NO_TRACE, &ro, err, sizeof err)) {
        fprintf(stderr, "npurr replay: %s: the recorded command line does not parse: %s\n",
                c.run, err);
        goto out;
    }
    if (strcmp(ro.kernel->name, kname) != 0) {
        fprintf(stderr, "npurr replay: %s: the header says kernel %s but its command line runs %s\n",
                c.run, kname, ro.kernel->name);
        goto out;
    }
    if (redirect_inputs(r, c.run, &ro, owned, err, sizeof err) ||
        replay_config_from_meta(r, &ro.config, note, sizeof note, err, sizeof err)) {
        fprintf(stderr, "npurr replay: %s: %s\n", c.run, err);
        goto out;
    }
    if (note[0])
        fprintf(stderr, "npurr replay: warning: the trace has no value for %s: using this "
                        "build's defaults (timing may differ)\n", note);
    if (engine_create(&ro.config, &e, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "npurr replay: %s\n", err);
        goto out;
    }
    if (ro.kernel->setup(e, &ro.kopts, &state, err, sizeof err) != 0) {
        fprintf(stderr, "npurr replay: -k %s: %s\n", ro.kernel->name, err);
        goto out;
    }
    {
        /* The header must describe the run it rebuilds, key by key. */
        rec_run_info info = {ro.kernel->name, line, &ro.config, engine_cores_per_rank(e),
                             engine_num_aic(e), engine_num_aiv(e)};
        if (rec_reader_header_matches(r, &info, err, sizeof err)) {
            printf("diverged before the first event: %s\n", err);
            status = EXIT_DIVERGED;
            goto out;
        }
    }
    if (!c.quiet)
        printf("replay %s: -k %s on %d node%s x %d NPUs (%d ranks), seed %llu\n", c.run,
               ro.kernel->name, ro.config.nodes, ro.config.nodes == 1 ? "" : "s",
               ro.config.npus_per_node, engine_num_ranks(e), (unsigned long long)ro.config.seed);
    if (replay_attach(e, r, &c.opts, &rp, err, sizeof err)) {
        fprintf(stderr, "npurr replay: %s: %s\n", c.run, err);
        goto out;
    }
    g_replaying = e;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    engine_result res;
    int run_ok = engine_run(e, &res, err, sizeof err) == ENGINE_OK;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    g_replaying = NULL;
    if (!run_ok) fprintf(stderr, "npurr replay: %s\n", err);

    char check_msg[1024] = "";
    const char *check_status = "skipped";
    if (run_ok && res.outcome == OUTCOME_COMPLETED && ro.kernel->check) {
        int failed = ro.kernel->check(e, state, check_msg, sizeof check_msg) != 0;
        check_status = failed ? "failed" : "passed";
    }
    replay_finish(rp, run_ok ? &res : NULL, check_status, check_msg);
    const replay_verdict *v = replay_verdict_get(rp);
    if (c.quiet && v->status == REPLAY_IDENTICAL) {
        printf("identical: %llu events, outcome %s\n", (unsigned long long)v->matched,
               v->recorded_outcome);
    } else {
        replay_write_report(rp, stdout);
        if (v->status == REPLAY_IDENTICAL && strcmp(check_status, "failed") == 0)
            printf("data check: %s\n", check_msg);
    }
    status = replay_exit_code(rp);
    if (c.opts.break_at && v->status == REPLAY_IDENTICAL && c.opts.break_at > res.events) {
        printf("--break-at %llu was never reached: the run has %llu events\n",
               (unsigned long long)c.opts.break_at, (unsigned long long)res.events);
        status = EXIT_ERROR;
    }
    if (c.opts.checkpoint_every && v->status == REPLAY_IDENTICAL)
        report_checkpoints(rp, &res, &c);
out:
    replay_free(rp);
    if (state && ro.kernel->destroy) ro.kernel->destroy(state);
    if (e) engine_destroy(e);
    rec_reader_close(r);
    for (int i = 0; i < 64; i++) free(owned[i]);
    free(rargv);
    free(words);
    return status;
}

/*
 * cmd_explore.c - `npurr explore -k KERNEL [options] --runs N -o RUN`: shake
 * the schedule of one configuration until a run ends differently from the
 * clean one, then record that run.
 *
 * The clean run is the configuration as given, without jitter or delays.
 * Run i then takes seed base+i (a new tie order between cores) with
 * --jitter F on transfer durations, and with `--strategy pct` a few seeded
 * points where the core that takes that scheduling step is delayed (PCT;
 * engine/sched_delay.c). Every run is built from a command line and run by
 * the same run_spec_from_argv and record session as `record`
 * (session/session.h), so the command printed for the failing run is
 * exactly the configuration that failed; it is then recorded by `record`
 * itself (a normal run folder) and explore exits with its code. Runs go
 * without trace (no observer at all) until then; with --check races the
 * happens-before checker observes each one and races count as a failure.
 */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>


static void print_help(void) {
    printf("usage: npurr explore -k KERNEL [run options] --runs N -o RUN\n"
           "                     [--strategy random|pct] [--jitter F] [--check races]\n"
           "                     [--pct-points N] [--pct-delay-us US]\n\n"
           "Runs N schedules of one configuration without a trace, each from its own seed,\n"
           "until one ends differently from the clean run (the options as given, no jitter,\n"
           "no delays), i.e. with another exit code: deadlock, watchdog, kernel fault,\n"
           "failed data check, or with --check races a race or sync error (a run that is\n"
           "already racy when clean ends like it). That run is recorded into RUN by `npurr\n"
           "record` (replayable, queryable); the command that reproduces it is printed.\n"
           "Progress (runs done, failures, runs/s) goes to stderr.\n\n"
           "options:\n"
           "  --runs N              schedules to try (default 100)\n"
           "  --strategy S          random: seed base+i permutes ties and draws the jitter;\n"
           "                        pct: the same, plus --pct-points seeded scheduling steps\n"
           "                        where the core taking that step is delayed (default pct)\n"
           "  --jitter F            +-F on transfer durations in runs 1..N (default 0.1)\n"
           "  --pct-points N        delay points per run with pct (default 3)\n"
           "  --pct-delay-us US     delay of each point (default a tenth of the clean run's\n"
           "                        virtual time); the points are drawn over the clean run's\n"
           "                        scheduling steps\n"
           "  --check races         run the happens-before checker on every run\n"
           "  -o RUN                folder for the failing run (required)\n"
           "  --seed S              base seed: run i uses S+i (default 0)\n\n"
           "exit: the failing run's code as `record` gives it (1 fault, 3 deadlock or\n"
           "      watchdog, 4 data check failed, 6 races), 0 if all N runs ended like the\n"
           "      clean run, 2 usage\n\n");
    run_options_help(stdout, NULL, 0);
}

/* A growable argv; strings are owned (copied). */
typedef struct words {
    char **v;
    int n, cap;
} words;

static void words_add(words *w, const char *s) {
    if (w->n + 2 > w->cap) {
        w->cap = w->cap ? w->cap * 2 : 32;
        w->v = realloc(w->v, (size_t)w->cap * sizeof *w->v);
        if (!w->v) abort();
    }
    w->v[w->n] = strdup(s);
    if (!w->v[w->n]) abort();
    w->v[++w->n] = NULL;
}

static void words_free(words *w) {
    for (int i = 0; i < w->n; i++) free(w->v[i]);
    free(w->v);
    memset(w, 0, sizeof *w);
}

/* What one run ended as. */
typedef struct run_end {
    int status;              /* record's exit code */
    engine_outcome outcome;
    uint64_t end_time, steps, events;
    uint64_t races, sync_errors;
    char what[1024];
} run_end;

/* What r says of one run, into out. EXIT_DONE, or EXIT_ERROR with err
 * when the engine could not run. */
static int run_ended(const record_result *r, run_end *out, char *err, size_t errlen) {
    if (!r->ran) {
        snprintf(err, errlen, "%s", r->error);
        return EXIT_ERROR;
    }
    out->status = cli_outcome_status(r->run.outcome, strcmp(r->check, "failed") == 0);
    out->outcome = r->run.outcome;
    out->end_time = r->run.end_time;
    out->events = r->run.events;
    out->steps = r->sched_steps;
    snprintf(out->what, sizeof out->what, "%s",
             r->run.outcome == OUTCOME_COMPLETED ? r->check_message : r->run.message);
    out->races = r->races;
    out->sync_errors = r->sync_errors;
    if (r->checker && out->status == EXIT_DONE && (out->races || out->sync_errors)) {
        out->status = EXIT_RACES;
        snprintf(out->what, sizeof out->what, "%llu race%s, %llu sync error%s",
                 (unsigned long long)out->races, out->races == 1 ? "" : "s",
                 (unsigned long long)out->sync_errors, out->sync_errors == 1 ? "" : "s");
    }
    return EXIT_DONE;
}

/* Runs argv (a whole `npurr record` command line) once, without a trace,
 * through the same record session as `record`. */
static int run_once(words *argv, int check_races, run_end *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    run_spec spec;
    int rc = run_spec_from_argv(argv->n, argv->v, &spec, err, errlen);
    record_session *s = NULL;
    if (!rc) {
        spec.opts.no_trace = 1;
        spec.opts.check_races = check_races;
        rc = record_session_open(&spec, NULL, &s, err, errlen);
    }
    if (!rc) rc = run_ended(record_session_run(s, 0), out, err, errlen);
    record_session_close(s);
    run_spec_free(&spec);
    return rc;
}

static const char *outcome_text(const run_end *r) {
    switch (r->status) {
    case EXIT_DONE: return "completed, check passed";
    case EXIT_CHECK: return "data check failed";
    case EXIT_DEADLOCK: return r->outcome == OUTCOME_WATCHDOG ? "watchdog" : "deadlock";
    case EXIT_RACES: return "races";
    default: return r->outcome == OUTCOME_FAULT ? "kernel fault" : "error";
    }
}

typedef struct explore_opts {
    long long runs;
    int pct;
    const char *jitter;       /* as given, so the printed command carries it verbatim */
    long long pct_points;
    double pct_delay_us;      /* 0: a tenth of the clean run */
    int check_races;
    const char *out_dir;
    unsigned long long base_seed;
} explore_opts;

static int parse_ll(const char *opt, const char *v, long long lo, long long hi, long long *out,
                    char *err, size_t errlen) {
    char *end = NULL;
    long long x = v ? strtoll(v, &end, 10) : 0;
    if (!v || end == v || *end || x < lo || x > hi) {
        snprintf(err, errlen, "%s: '%s' is not an integer between %lld and %lld", opt, v ? v : "",
                 lo, hi);
        return -1;
    }
    *out = x;
    return 0;
}

/* Takes explore's own options out of argv; the rest (kernel, topology,
 * kernel options) goes to base, as `record` would take them. */
static int parse_explore(int argc, char **argv, explore_opts *xo, words *base, char *err,
                         size_t errlen) {
    memset(xo, 0, sizeof *xo);
    xo->runs = 100;
    xo->pct = 1;
    xo->jitter = "0.1";
    xo->pct_points = 3;
    for (int i = CLI_FIRST_ARG; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--runs") == 0) {
            if (parse_ll(a, v, 1, 100000000, &xo->runs, err, errlen)) return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--strategy") == 0) {
            if (v && strcmp(v, "pct") == 0) xo->pct = 1;
            else if (v && strcmp(v, "random") == 0) xo->pct = 0;
            else {
                snprintf(err, errlen, "--strategy: '%s' is not random or pct", v ? v : "");
                return EXIT_USAGE;
            }
            i++;
        } else if (strcmp(a, "--jitter") == 0) {
            char *end = NULL;
            double j = v ? strtod(v, &end) : -1;
            if (!v || end == v || *end || !isfinite(j) || j < 0 || j > 0.5) {
                snprintf(err, errlen, "--jitter: '%s' is not a number between 0 and 0.5", v ? v : "");
                return EXIT_USAGE;
            }
            xo->jitter = v;
            i++;
        } else if (strcmp(a, "--pct-points") == 0) {
            if (parse_ll(a, v, 1, 1000, &xo->pct_points, err, errlen)) return EXIT_USAGE;
            i++;
        } else if (strcmp(a, "--pct-delay-us") == 0) {
            char *end = NULL;
            double us = v ? strtod(v, &end) : 0;
            if (!v || end == v || *end || !isfinite(us) || us <= 0 || us > 1e9) {
                snprintf(err, errlen, "--pct-delay-us: '%s' is not a number of microseconds above 0",
                         v ? v : "");
                return EXIT_USAGE;
            }
            xo->pct_delay_us = us;
            i++;
        } else if (strcmp(a, "--check") == 0) {
            if (!v || strcmp(v, "races") != 0) {
                snprintf(err, errlen, "--check: '%s' is not a check (races)", v ? v : "");
                return EXIT_USAGE;
            }
            xo->check_races = 1;
            i++;
        } else if (strcmp(a, "-o") == 0) {
            if (!v) { snprintf(err, errlen, "-o: missing value"); return EXIT_USAGE; }
            xo->out_dir = v;
            i++;
        } else if (strcmp(a, "--seed") == 0) {
            if (cli_parse_uint(v, 0, UINT64_MAX, &xo->base_seed)) {
                snprintf(err, errlen, "--seed: '%s' is not a non-negative integer", v ? v : "");
                return EXIT_USAGE;
            }
            i++;
        } else if (strcmp(a, "--no-trace") == 0 || strcmp(a, "--pct-span") == 0) {
            snprintf(err, errlen, "%s: explore sets it itself", a);
            return EXIT_USAGE;
        } else {
            words_add(base, a);
        }
    }
    if (!xo->out_dir) {
        snprintf(err, errlen, "-o RUN is required (where the failing run is recorded)");
        return EXIT_USAGE;
    }
    /* before any run: the failing one must be recordable where it is asked for */
    int force = 0;
    for (int i = 0; i < base->n; i++) force |= strcmp(base->v[i], "--force") == 0;
    if (session_check_output(xo->out_dir, force, err, errlen)) return EXIT_USAGE;
    return 0;
}

/* base + this run's seed, jitter and delays. */
static void run_argv(const words *base, const explore_opts *xo, uint64_t seed, int clean,
                     uint64_t span, uint64_t delay_ps, words *out) {
    char num[64];
    for (int i = 0; i < base->n; i++) words_add(out, base->v[i]);
    snprintf(num, sizeof num, "%llu", (unsigned long long)seed);
    words_add(out, "--seed");
    words_add(out, num);
    if (clean) return;
    if (strtod(xo->jitter, NULL) > 0) {
        words_add(out, "--jitter");
        words_add(out, xo->jitter);
    }
    if (xo->pct) {
        words_add(out, "--pct-points");
        snprintf(num, sizeof num, "%lld", xo->pct_points);
        words_add(out, num);
        words_add(out, "--pct-span");
        snprintf(num, sizeof num, "%llu", (unsigned long long)span);
        words_add(out, num);
        words_add(out, "--pct-delay-us");
        snprintf(num, sizeof num, "%.3f", (double)delay_ps / 1e6);
        words_add(out, num);
    }
}

/* Runs 1..N of base until one ends unlike the clean run: its words go to
 * failing and its ending to fail. Returns EXIT_DONE, or the code of a run
 * that could not be made. */
static int shake(const words *base, const explore_opts *xo, const run_end *clean, double t0,
                 long long *done, words *failing, run_end *fail) {
    /* Whole nanoseconds, so the printed microseconds parse back to the same ps. */
    uint64_t delay_ps = xo->pct_delay_us > 0 ? (uint64_t)llround(xo->pct_delay_us * 1e6)
                                             : clean->end_time / 10 / 1000 * 1000;
    if (!delay_ps) delay_ps = 1000;
    uint64_t span = clean->steps ? clean->steps : 1;
    char err[ENGINE_ERRLEN] = "";
    double last = engine_host_seconds();
    for (long long i = 1; i <= xo->runs; i++) {
        words av = {0};
        run_argv(base, xo, xo->base_seed + (uint64_t)i, 0, span, delay_ps, &av);
        run_end r;
        int rc = run_once(&av, xo->check_races, &r, err, sizeof err);
        ++*done;
        if (rc) {
            fprintf(stderr, "npurr explore: run %lld: %s\n", i, err);
            words_free(&av);
            return rc;
        }
        if (r.status != clean->status) {
            *failing = av;
            *fail = r;
            return EXIT_DONE;
        }
        words_free(&av);
        double now = engine_host_seconds();
        if (now - last >= 2.0 || i == xo->runs) {
            fprintf(stderr, "npurr explore: %lld/%lld runs, 0 failures, %.2f runs/s\n", *done,
                    xo->runs, (double)*done / (now - t0));
            last = now;
        }
    }
    return EXIT_DONE;
}

/* Records the failing run through `record` itself: the same words, with
 * -o. Returns record's exit code. */
static int record_failing(const explore_opts *xo, const words *failing, const run_end *fail) {
    words rec = {0};
    for (int i = 0; i < failing->n; i++) words_add(&rec, failing->v[i]);
    if (xo->check_races) {
        words_add(&rec, "--check");
        words_add(&rec, "races");
    }
    words_add(&rec, "-o");
    words_add(&rec, xo->out_dir);
    char *cmd = shell_join(rec.n, rec.v);
    printf("reproduce %s\n\n", cmd ? cmd : "(out of memory)");
    fflush(stdout);
    free(cmd);
    int status = cmd_record(rec.n, rec.v);
    if (status != fail->status)
        fprintf(stderr, "npurr explore: recording the failing run gave exit %d, not %d: the run "
                "is not reproducible from its command line (please report)\n", status, fail->status);
    words_free(&rec);
    return status;
}

int cmd_explore(int argc, char **argv) {
    char err[ENGINE_ERRLEN] = "";
    for (int i = CLI_FIRST_ARG; i < argc; i++)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            print_help();
            return EXIT_DONE;
        }
    explore_opts xo;
    words base = {0};
    words_add(&base, "npurr");   /* a whole `npurr record` command line */
    words_add(&base, "record");
    int rc = parse_explore(argc, argv, &xo, &base, err, sizeof err);
    if (rc) {
        fprintf(stderr, "npurr explore: %s\n", err);
        words_free(&base);
        return rc;
    }
    words argv0 = {0};
    run_argv(&base, &xo, xo.base_seed, 1, 0, 0, &argv0);
    run_end clean;
    double t0 = engine_host_seconds();
    rc = run_once(&argv0, xo.check_races, &clean, err, sizeof err);
    words_free(&argv0);
    if (rc) {
        fprintf(stderr, "npurr explore: clean run: %s\n", err);
        words_free(&base);
        return rc;
    }
    fprintf(stderr, "npurr explore: clean run %s (exit %d), %.3f us virtual, %llu steps; "
            "%lld runs, strategy %s\n", outcome_text(&clean), clean.status,
            (double)clean.end_time / 1e6, (unsigned long long)clean.steps, xo.runs,
            xo.pct ? "pct" : "random");
    long long done = 0;
    words failing = {0};
    run_end fail = {0};
    int status = shake(&base, &xo, &clean, t0, &done, &failing, &fail);
    double wall = engine_host_seconds() - t0;
    if (!failing.n) {
        if (status == EXIT_DONE)
            printf("explore   %lld runs ended like the clean run (%s), %.1f s, %.2f runs/s\n", done,
                   outcome_text(&clean), wall, (double)done / wall);
    } else {
        fprintf(stderr, "npurr explore: %lld/%lld runs, 1 failure, %.2f runs/s\n", done, xo.runs,
                (double)done / wall);
        printf("explore   run %lld of %lld ended differently from the clean run: %s (exit %d)%s%s\n",
               done, xo.runs, outcome_text(&fail), fail.status, fail.what[0] ? ": " : "",
               fail.what);
        status = record_failing(&xo, &failing, &fail);
    }
    words_free(&failing);
    words_free(&base);
    return status;
}

/*
 * bench_replay.c - what replaying costs, and what checkpoints buy.
 *
 * Records one run of a kernel (by default combine-sender on 1 node x 8 NPUs
 * with its default shape) as `npurr record` does (record_session_*), then
 * replays it as `npurr replay` does (replay_session_open: the run rebuilt
 * from its folder, comparing observer, kernel check), and prints:
 *   - replay time / record time for the same run (target <= 1.2), for the
 *     run itself (engine_run: emulation + recorder, or emulation + trace
 *     decoding + comparison) and for the whole session (setup, run, check,
 *     and on the record side rec_close writing the last chunk and index.db
 *     and the run folder renamed into place);
 *   - with snapshots every --checkpoint-every events (default: an eighth of
 *     the run): the time to reach the last event from the first event vs
 *     from the nearest snapshot, and what taking the snapshots costs.
 * The fastest of --repeat runs of each side is kept, so a noisy machine
 * inflates neither side.
 *
 * usage: bench_replay [--repeat R] [--checkpoint-every N] [--out DIR]
 *                     [record options: -k KERNEL, --nodes N, --seed S,
 *                      --KERNEL-OPTION VALUE, ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_support.h"
#include "session/session.h"

typedef struct timing {
    double run, total;
    uint64_t events;
} timing;

/* One record of spec into its -o (replacing the previous one). */
static int record_once(const run_spec *spec, timing *t) {
    char err[ENGINE_ERRLEN];
    double t0 = now_s();
    record_session *s;
    if (record_session_open(spec, NULL, &s, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        return -1;
    }
    const record_result *r = record_session_run(s, 0);
    int rc = r->ran && r->installed ? 0 : -1;
    if (rc) fprintf(stderr, "bench_replay: %s\n", r->ran ? r->finish_error : r->error);
    t->run = r->wall;
    t->events = r->run.events;
    t->total = now_s() - t0;
    record_session_close(s);
    return rc;
}

/* One replay; with every > 0, also the time to reach the last event from
 * the first one and from the nearest snapshot. */
typedef struct reach {
    double from_snap, worst;     /* to the last event; to the event before a snapshot */
    uint64_t snap_seq, worst_seq, worst_from;
    double back[2];       /* goto backwards twice in a row to the worst case */
} reach;

static int replay_once(const char *dir, uint64_t every, timing *t, reach *rc_out) {
    char err[ENGINE_ERRLEN];
    double t0 = now_s();
    replay_session *s;
    if (replay_session_open(dir, &s, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        return -1;
    }
    replay_opts o = {.checkpoint_every = every};
    replay_run rr;
    if (replay_session_run(s, &o, 0, &rr, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        replay_session_close(s);
        return -1;
    }
    t->run = rr.wall;
    int rc = 0;
    replay *rp = replay_session_replay(s);
    if (replay_session_verdict(s)->status != REPLAY_IDENTICAL) {
        fprintf(stderr, "bench_replay: the replay is not identical:\n");
        replay_write_report(rp, stderr);
        rc = -1;
    }
    t->events = rr.run.events;
    t->total = now_s() - t0;
    engine_result res = rr.run;
    if (!rc && every) {
        /* The last event, from the nearest snapshot; then the worst case:
         * the event just before the last snapshot, a whole interval after
         * the one before it. */
        replay_goto_result g;
        int n = replay_checkpoint_count(rp);
        uint64_t worst = n >= 2 ? replay_checkpoint_seq(rp, n - 1) - 1 : 0;
        if (replay_goto(rp, res.events, 0, &g, err, sizeof err) || g.status != REPLAY_BREAK) {
            fprintf(stderr, "bench_replay: goto the last event: %s\n", g.what[0] ? g.what : err);
            rc = -1;
        } else {
            rc_out->from_snap = g.seconds;
            rc_out->snap_seq = g.from_seq;
        }
        if (!rc && worst) {
            if (replay_goto(rp, worst, 0, &g, err, sizeof err) || g.status != REPLAY_BREAK) {
                fprintf(stderr, "bench_replay: goto %llu: %s\n", (unsigned long long)worst,
                        g.what[0] ? g.what : err);
                rc = -1;
            } else {
                rc_out->worst = g.seconds;
                rc_out->worst_seq = worst;
                rc_out->worst_from = g.from_seq;
            }
        }
        /* Backwards twice in a row, as `npurr goto` does under gdb after a
         * look around: snapshots survive a goto, so both cost one interval. */
        for (int k = 0; k < 2 && !rc && worst; k++) {
            if (replay_goto(rp, worst - (uint64_t)k, 0, &g, err, sizeof err) ||
                g.status != REPLAY_BREAK) {
                fprintf(stderr, "bench_replay: goto back %llu: %s\n",
                        (unsigned long long)(worst - (uint64_t)k), g.what[0] ? g.what : err);
                rc = -1;
            } else {
                rc_out->back[k] = g.seconds;
            }
        }
    }
    replay_session_close(s);
    return rc ? -1 : 0;
}

typedef struct bench_args {
    int repeat;
    uint64_t every;          /* --checkpoint-every; 0: an eighth of the run */
    const char *out;         /* --out DIR; NULL: a temporary folder */
    char *record[128];       /* npurr record ARGS -o DIR --force */
    int n_record;
} bench_args;

/* The bench's own options; every other one goes to `record`. */
static int parse_args(int argc, char **argv, bench_args *b) {
    *b = (bench_args){.repeat = 3};
    static char program[] = "npurr", sub[] = "record", k[] = "-k", kname[] = "combine-sender";
    b->record[b->n_record++] = program;
    b->record[b->n_record++] = sub;
    int has_kernel = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "bench_replay: %s needs a value\n", a); return -1; }
        i++;
        if (strcmp(a, "--repeat") == 0) b->repeat = atoi(v) > 0 ? atoi(v) : 1;
        else if (strcmp(a, "--checkpoint-every") == 0) b->every = strtoull(v, NULL, 10);
        else if (strcmp(a, "--out") == 0) b->out = v;
        else if (b->n_record + 6 < (int)(sizeof b->record / sizeof b->record[0])) {
            has_kernel |= strcmp(a, "-k") == 0;
            b->record[b->n_record++] = argv[i - 1];
            b->record[b->n_record++] = argv[i];
        } else {
            fprintf(stderr, "bench_replay: too many options\n");
            return -1;
        }
    }
    if (!has_kernel) {
        b->record[b->n_record++] = k;
        b->record[b->n_record++] = kname;
    }
    return 0;
}

static void print_checkpoints(uint64_t every, const timing *rep, const timing *ck,
                              const reach *r, uint64_t events) {
    printf("  checkpoints every %llu events: replay run %.3f s (%.3f s without: taking the "
           "snapshots costs %+.0f%%)\n", (unsigned long long)every, ck->run, rep->run,
           100.0 * (ck->run - rep->run) / rep->run);
    printf("  reaching the last event (seq %llu): %.3f s from the first event (a replay "
           "without snapshots), %.4f s from the snapshot at seq %llu\n",
           (unsigned long long)events, rep->run, r->from_snap, (unsigned long long)r->snap_seq);
    if (!r->worst_seq) return;
    printf("  worst case, seq %llu: %.4f s from the snapshot at seq %llu (%llu events "
           "away), %.1fx faster than from the first event\n",
           (unsigned long long)r->worst_seq, r->worst, (unsigned long long)r->worst_from,
           (unsigned long long)(r->worst_seq - r->worst_from),
           r->worst > 0 ? rep->run / r->worst : 0.0);
    printf("  going back twice in a row (seq %llu, then %llu): %.4f s and %.4f s "
           "(target <= 1 s each; snapshots survive a goto)\n",
           (unsigned long long)r->worst_seq, (unsigned long long)r->worst_seq - 1, r->back[0],
           r->back[1]);
}

/* The best of repeat records and of repeat replays. */
static int best_of(const run_spec *spec, const char *dir, int repeat, timing *rec, timing *rep) {
    *rec = *rep = (timing){1e30, 1e30, 0};
    for (int k = 0; k < repeat; k++) {
        timing t;
        if (record_once(spec, &t)) return -1;
        if (t.run < rec->run) rec->run = t.run;
        if (t.total < rec->total) rec->total = t.total;
        rec->events = t.events;
    }
    for (int k = 0; k < repeat; k++) {
        timing t;
        if (replay_once(dir, 0, &t, NULL)) return -1;
        if (t.run < rep->run) rep->run = t.run;
        if (t.total < rep->total) rep->total = t.total;
        rep->events = t.events;
    }
    return 0;
}

int main(int argc, char **argv) {
    bench_args b;
    if (parse_args(argc, argv, &b)) return 2;
    char tmp[] = "/tmp/npurr_bench_replay_XXXXXX";
    const char *out = b.out;
    if (!out && !(out = mkdtemp(tmp))) {
        perror("bench_replay: mkdtemp");
        return 1;
    }
    char dir[4200], force[] = "--force", o[] = "-o";
    snprintf(dir, sizeof dir, "%s/run", out);
    b.record[b.n_record++] = o;
    b.record[b.n_record++] = dir;
    b.record[b.n_record++] = force;
    char err[ENGINE_ERRLEN];
    run_spec spec;
    if (run_spec_from_argv(b.n_record, b.record, &spec, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        return 2;
    }
    timing rec, rep, ck = {0};
    reach r = {0};
    if (best_of(&spec, dir, b.repeat, &rec, &rep)) return 1;
    const engine_config *cfg = &spec.opts.config;
    printf("bench_replay: -k %s on %d node(s) x %d NPUs, %llu events, best of %d\n",
           spec.opts.kernel->name, cfg->nodes, cfg->npus_per_node, (unsigned long long)rec.events,
           b.repeat);
    printf("  run     record %.3f s, replay %.3f s: replay/record %.2f (target <= 1.2), "
           "%.2f M events/s replayed\n",
           rec.run, rep.run, rep.run / rec.run, (double)rep.events / rep.run / 1e6);
    printf("  command record %.3f s, replay %.3f s: replay/record %.2f (setup, check, "
           "index included)\n", rec.total, rep.total, rep.total / rec.total);
    uint64_t every = b.every ? b.every : (rec.events / 8 ? rec.events / 8 : 1);
    if (replay_once(dir, every, &ck, &r)) return 1;
    print_checkpoints(every, &rep, &ck, &r, rec.events);
    run_spec_free(&spec);
    if (out == tmp) {
        char cmd[4300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd)) fprintf(stderr, "bench_replay: could not remove %s\n", tmp);
    }
    return 0;
}

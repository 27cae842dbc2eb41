/*
 * bench_replay.c - what replaying costs, and what checkpoints buy.
 *
 * Records one run of a kernel (by default combine-sender on 1 node x 8 NPUs
 * with its default shape) the way `npurr record` does, then replays it the
 * way `npurr replay` does (same setup, comparing observer, kernel check),
 * and prints:
 *   - replay time / record time for the same run (target <= 1.2), for the
 *     run itself (engine_run: emulation + recorder, or emulation + trace
 *     decoding + comparison) and for the whole command (setup, run, check,
 *     and on the record side rec_close writing the last chunk and index.db);
 *   - with snapshots every --checkpoint-every events (default: an eighth of
 *     the run): the time to reach the last event from the first event vs
 *     from the nearest snapshot, and what taking the snapshots costs.
 * The fastest of --repeat runs of each side is kept, so a noisy machine
 * inflates neither side.
 *
 * usage: bench_replay [-k KERNEL] [--nodes N] [--npus-per-node N] [--seed S]
 *                     [--repeat R] [--checkpoint-every N] [--out DIR]
 *                     [--KERNEL-OPTION VALUE]...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench_support.h"
#include "engine/kernels/kernels.h"
#include "recorder/recorder.h"
#include "replayer/replayer.h"

typedef struct timing {
    double run, total;
    uint64_t events;
} timing;

static int check_run(const kernel_desc *kd, engine *e, void *state, const engine_result *res,
                     const char **status) {
    char msg[1024];
    *status = "skipped";
    if (res->outcome == OUTCOME_COMPLETED && kd->check)
        *status = kd->check(e, state, msg, sizeof msg) ? "failed" : "passed";
    return 0;
}

static int record_once(const kernel_desc *kd, const kernel_opts *ko, const engine_config *cfg,
                       const char *dir, timing *t) {
    char err[4096];
    double t0 = now_s();
    engine *e;
    void *state = NULL;
    if (engine_create(cfg, &e, err, sizeof err) || kd->setup(e, ko, &state, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        return -1;
    }
    rec_run_info info = {kd->name, "bench_replay", cfg, engine_cores_per_rank(e),
                         engine_num_aic(e), engine_num_aiv(e)};
    rec_writer *w;
    if (rec_open(dir, &info, &w, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        return -1;
    }
    rec_attach(w, e);
    double r0 = now_s();
    engine_result res;
    int rc = engine_run(e, &res, err, sizeof err);
    t->run = now_s() - r0;
    const char *status = "skipped";
    if (!rc) check_run(kd, e, state, &res, &status);
    if (rec_close(w, rc ? NULL : &res, status, NULL, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        rc = -1;
    }
    t->events = rc ? 0 : res.events;
    if (kd->destroy) kd->destroy(state);
    engine_destroy(e);
    t->total = now_s() - t0;
    return rc ? -1 : 0;
}

/* One replay; with every > 0, also the time to reach the last event from
 * the first one and from the nearest snapshot. */
typedef struct reach {
    double from_snap, worst;     /* to the last event; to the event before a snapshot */
    uint64_t snap_seq, worst_seq, worst_from;
    double back[2];       /* goto backwards twice in a row to the worst case */
} reach;

static int replay_once(const kernel_desc *kd, const kernel_opts *ko, const char *dir,
                       uint64_t every, timing *t, reach *rc_out) {
    char err[4096];
    double t0 = now_s();
    rec_reader *r;
    if (rec_reader_open(dir, &r, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        return -1;
    }
    engine_config cfg;
    engine_config_defaults(&cfg);
    engine *e;
    void *state = NULL;
    replay *rp;
    replay_opts o = {.checkpoint_every = every};
    if (replay_config_from_meta(r, &cfg, NULL, 0, err, sizeof err) ||
        engine_create(&cfg, &e, err, sizeof err) || kd->setup(e, ko, &state, err, sizeof err) ||
        replay_attach(e, r, &o, &rp, err, sizeof err)) {
        fprintf(stderr, "bench_replay: %s\n", err);
        return -1;
    }
    double r0 = now_s();
    engine_result res;
    int rc = engine_run(e, &res, err, sizeof err);
    t->run = now_s() - r0;
    const char *status = "skipped";
    if (!rc) check_run(kd, e, state, &res, &status);
    replay_finish(rp, rc ? NULL : &res, status, NULL);
    const replay_verdict *v = replay_verdict_get(rp);
    if (v->status != REPLAY_IDENTICAL) {
        fprintf(stderr, "bench_replay: the replay is not identical:\n");
        replay_write_report(rp, stderr);
        rc = -1;
    }
    t->events = res.events;
    t->total = now_s() - t0;
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
    replay_free(rp);
    if (kd->destroy) kd->destroy(state);
    engine_destroy(e);
    rec_reader_close(r);
    return rc ? -1 : 0;
}

static int set_kopt(kernel_opts *ko, const char *name, const char *value) {
    for (int i = 0; i < ko->count; i++)
        if (strcmp(ko->names[i], name) == 0) {
            ko->values[i] = value;
            return 0;
        }
    return -1;
}

int main(int argc, char **argv) {
    const char *kname = "combine-sender", *out = NULL;
    engine_config cfg;
    engine_config_defaults(&cfg);
    int repeat = 3;
    uint64_t every = 0;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-k") == 0 && i + 1 < argc) kname = argv[++i];
    const kernel_desc *kd = kernels_find(kname);
    if (!kd) {
        fprintf(stderr, "bench_replay: no kernel '%s'\n", kname);
        return 1;
    }
    kernel_opts ko = {0};
    for (const kernel_option *o = kd->options; o && o->name && ko.count < 64; o++) {
        ko.names[ko.count] = o->name;
        ko.values[ko.count++] = o->default_value;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) { fprintf(stderr, "bench_replay: %s needs a value\n", a); return 2; }
        i++;
        if (strcmp(a, "-k") == 0) continue;
        else if (strcmp(a, "--nodes") == 0) cfg.nodes = atoi(v);
        else if (strcmp(a, "--npus-per-node") == 0) cfg.npus_per_node = atoi(v);
        else if (strcmp(a, "--seed") == 0) cfg.seed = strtoull(v, NULL, 10);
        else if (strcmp(a, "--repeat") == 0) repeat = atoi(v) > 0 ? atoi(v) : 1;
        else if (strcmp(a, "--checkpoint-every") == 0) every = strtoull(v, NULL, 10);
        else if (strcmp(a, "--out") == 0) out = v;
        else if (strncmp(a, "--", 2) != 0 || set_kopt(&ko, a + 2, v)) {
            fprintf(stderr, "bench_replay: unknown option %s\n", a);
            return 2;
        }
    }
    char tmp[] = "/tmp/npurr_bench_replay_XXXXXX";
    if (!out && !(out = mkdtemp(tmp))) {
        perror("bench_replay: mkdtemp");
        return 1;
    }
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/run", out);

    timing rec = {1e30, 1e30, 0}, rep = {1e30, 1e30, 0};
    for (int k = 0; k < repeat; k++) {
        timing t;
        if (record_once(kd, &ko, &cfg, dir, &t)) return 1;
        if (t.run < rec.run) rec.run = t.run;
        if (t.total < rec.total) rec.total = t.total;
        rec.events = t.events;
    }
    for (int k = 0; k < repeat; k++) {
        timing t;
        if (replay_once(kd, &ko, dir, 0, &t, NULL)) return 1;
        if (t.run < rep.run) rep.run = t.run;
        if (t.total < rep.total) rep.total = t.total;
        rep.events = t.events;
    }
    printf("bench_replay: -k %s on %d node(s) x %d NPUs, %llu events, best of %d\n", kd->name,
           cfg.nodes, cfg.npus_per_node, (unsigned long long)rec.events, repeat);
    printf("  run     record %.3f s, replay %.3f s: replay/record %.2f (target <= 1.2), "
           "%.2f M events/s replayed\n",
           rec.run, rep.run, rep.run / rec.run, (double)rep.events / rep.run / 1e6);
    printf("  command record %.3f s, replay %.3f s: replay/record %.2f (setup, check, "
           "index included)\n", rec.total, rep.total, rep.total / rec.total);

    if (!every) every = rec.events / 8 ? rec.events / 8 : 1;
    timing ck = {0};
    reach r = {0};
    if (replay_once(kd, &ko, dir, every, &ck, &r)) return 1;
    printf("  checkpoints every %llu events: replay run %.3f s (%.3f s without: taking the "
           "snapshots costs %+.0f%%)\n", (unsigned long long)every, ck.run, rep.run,
           100.0 * (ck.run - rep.run) / rep.run);
    printf("  reaching the last event (seq %llu): %.3f s from the first event (a replay "
           "without snapshots), %.4f s from the snapshot at seq %llu\n",
           (unsigned long long)rec.events, rep.run, r.from_snap, (unsigned long long)r.snap_seq);
    if (r.worst_seq)
        printf("  worst case, seq %llu: %.4f s from the snapshot at seq %llu (%llu events "
               "away), %.1fx faster than from the first event\n",
               (unsigned long long)r.worst_seq, r.worst, (unsigned long long)r.worst_from,
               (unsigned long long)(r.worst_seq - r.worst_from), r.worst > 0 ? rep.run / r.worst : 0.0);
    if (r.worst_seq)
        printf("  going back twice in a row (seq %llu, then %llu): %.4f s and %.4f s "
               "(target <= 1 s each; snapshots survive a goto)\n",
               (unsigned long long)r.worst_seq, (unsigned long long)r.worst_seq - 1, r.back[0],
               r.back[1]);
    if (out == tmp) {
        char cmd[4300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
        if (system(cmd)) fprintf(stderr, "bench_replay: could not remove %s\n", tmp);
    }
    return 0;
}

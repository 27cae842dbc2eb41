/*
 * replay_compare.c - the comparing observer and the ending.
 *
 * Installed as the engine's observer, it reads the trace in step with the
 * run: event k of the replay is compared field by field with event k of
 * the trace. The first difference (or a trace that ends first, or a replay
 * that ends first) decides the verdict and asks the engine to stop; events
 * the engine still emits while it winds down are ignored. Equality of every
 * event already covers the recorded ending (EV_BLOCKED reports of the same
 * cores at the same seqs, EV_RUN_END with the outcome); replay_finish then
 * compares what only the trailer holds: event count, end time and the data
 * check's verdict, and the declarations (strings, objects, call sites)
 * the trace holds against the replayed engine's.
 *
 * The observer is on the engine's hot path: one decoded event copied out of
 * the reader's chunk, fifteen integer comparisons, a little per-core
 * bookkeeping for the reports and the gdb view (replay_gdb.c).
 */
#include "replayer/replay_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void replay_stop(replay *rp) {
    rp->done = 1;
    if (!rp->stop_requested) {
        rp->stop_requested = 1;
        engine_request_stop(rp->e);
    }
}

int replay_core_index(const replay *rp, uint32_t rank, uint32_t core) {
    if ((int)core >= rp->cores_per_rank) return -1;
    long idx = (long)rank * rp->cores_per_rank + (long)core;
    return idx < rp->ncores ? (int)idx : -1;
}

int replay_next_expected(replay *rp, engine_event *ev) {
    if (rp->have_peek) {
        *ev = rp->peek;
        rp->have_peek = 0;
        return 1;
    }
    int k = rec_reader_next(rp->r, ev);
    if (k == 1) rp->trace_events++;
    return k;
}

static inline int same_event(const engine_event *a, const engine_event *b) {
    return a->seq == b->seq && a->time == b->time && a->kind == b->kind && a->rank == b->rank &&
           a->core == b->core && a->pipe == b->pipe && a->sub == b->sub && a->addr == b->addr &&
           a->len == b->len && a->value == b->value && a->aux == b->aux && a->link == b->link &&
           a->site == b->site && a->object == b->object && a->peer == b->peer;
}

/* Names the fields that differ (the slow path, once per replay). */
static int diff_fields(const engine_event *a, const engine_event *b, char *out, size_t len) {
    size_t used = 0;
    int n = 0;
    out[0] = 0;
#define FIELD(f)                                                                          \
    if (a->f != b->f) {                                                                   \
        int k = snprintf(out + used, len - used, "%s%s", n ? ", " : "", #f);              \
        if (k > 0 && (size_t)k < len - used) used += (size_t)k;                           \
        n++;                                                                              \
    }
    FIELD(seq) FIELD(time) FIELD(kind) FIELD(rank) FIELD(core) FIELD(pipe) FIELD(sub)
    FIELD(addr) FIELD(len) FIELD(value) FIELD(aux) FIELD(link) FIELD(site) FIELD(object)
    FIELD(peer)
#undef FIELD
    return n;
}

static void decide(replay *rp, replay_status st, uint64_t seq) {
    rp->v.status = st;
    rp->v.seq = seq;
    replay_stop(rp);
    if (rp->child_reply_fd >= 0) replay_child_finish(rp, st, seq, rp->v.what);
}

static void trace_error(replay *rp) {
    snprintf(rp->v.what, sizeof rp->v.what, "%s", rec_reader_error(rp->r));
    decide(rp, REPLAY_TRACE_ERROR, rec_reader_complete_seq(rp->r));
}

static void on_event(void *ctx, const engine_event *ev) {
    replay *rp = ctx;
    if (rp->done) return;
    rp->in_run = 1;
    engine_event want;
    int k = replay_next_expected(rp, &want);
    if (k < 0) { trace_error(rp); return; }
    if (k == 0) {
        rp->v.has_actual = 1;
        rp->v.actual = *ev;
        snprintf(rp->v.what, sizeof rp->v.what,
                 "the trace ends after %llu events but the replay goes on",
                 (unsigned long long)rp->trace_events);
        decide(rp, REPLAY_DIVERGED, ev->seq);
        return;
    }
    if (!same_event(&want, ev)) {
        diff_fields(&want, ev, rp->v.what, sizeof rp->v.what);
        rp->v.has_expected = rp->v.has_actual = 1;
        rp->v.expected = want;
        rp->v.actual = *ev;
        /* A recording stopped by Ctrl-C ends with an interrupted RUN_END
         * wherever the signal landed; the replay cannot reproduce that
         * instant, only every event before it. */
        if (want.kind == EV_RUN_END && want.value == OUTCOME_INTERRUPTED) {
            snprintf(rp->v.what, sizeof rp->v.what,
                     "the recording was interrupted (Ctrl-C) at seq %llu; every event before it "
                     "was reproduced", (unsigned long long)want.seq);
            snprintf(rp->v.recorded_outcome, sizeof rp->v.recorded_outcome, "interrupted");
            rp->v.matched = want.seq - 1;
            decide(rp, REPLAY_INTERRUPTED, want.seq);
            return;
        }
        /* The replay itself stopped by Ctrl-C or SIGTERM: its interrupted
         * RUN_END is where the user stopped it, not a divergence. */
        if (ev->kind == EV_RUN_END && ev->value == OUTCOME_INTERRUPTED) {
            snprintf(rp->v.what, sizeof rp->v.what,
                     "the replay was stopped (Ctrl-C or SIGTERM) at seq %llu; every event "
                     "before it matched the trace", (unsigned long long)ev->seq);
            rp->v.has_expected = rp->v.has_actual = 0;
            decide(rp, REPLAY_INTERRUPTED, ev->seq);
            return;
        }
        decide(rp, REPLAY_DIVERGED, ev->seq);
        return;
    }
    rp->v.matched++;
    replay_view_event(rp, ev);
    if (ev->kind == EV_RUN_END) {
        rp->t_end = engine_host_seconds();
        if (rp->child_reply_fd >= 0) {
            snprintf(rp->v.what, sizeof rp->v.what,
                     "the run ended at seq %llu before reaching the target",
                     (unsigned long long)ev->seq);
            replay_child_finish(rp, REPLAY_IDENTICAL, ev->seq, rp->v.what);
        }
        return;
    }
    if (rp->ck.every && ev->seq % rp->ck.every == 0) replay_ckpt_after_event(rp, ev->seq);
}

int replay_attach(engine *e, rec_reader *r, const replay_opts *o, replay **out, char *err,
                  size_t errlen) {
    *out = NULL;
    const char *cpr = rec_reader_meta(r, "cores_per_rank");
    const char *aic = rec_reader_meta(r, "num_aic");
    if (!cpr || atoi(cpr) != engine_cores_per_rank(e) || (aic && atoi(aic) != engine_num_aic(e))) {
        snprintf(err, errlen,
                 "the trace was recorded with %s cores per rank (%s AIC) but this engine has %d "
                 "(%d AIC): not the same chip configuration",
                 cpr ? cpr : "an unknown number of", aic ? aic : "?", engine_cores_per_rank(e),
                 engine_num_aic(e));
        return -1;
    }
    replay *rp = calloc(1, sizeof *rp);
    if (!rp) {
        snprintf(err, errlen, "replay_attach: out of memory");
        return -1;
    }
    rp->e = e;
    rp->r = r;
    if (o) rp->opts = *o;
    rp->out = rp->opts.out ? rp->opts.out : stdout;
    rp->ncores = engine_core_count(e);
    rp->num_aic = engine_num_aic(e);
    rp->cores_per_rank = engine_cores_per_rank(e);
    rp->cores = calloc((size_t)rp->ncores, sizeof *rp->cores);
    if (!rp->cores) {
        free(rp);
        snprintf(err, errlen, "replay_attach: out of memory");
        return -1;
    }
    rp->child_reply_fd = -1;
    rp->ck.every = rp->opts.checkpoint_every;
    rp->ck.max = rp->opts.max_checkpoints > 0 ? rp->opts.max_checkpoints : 32;
    rp->ck.owner = getpid();
    if (replay_view_attach(rp)) {
        replay_view_detach(rp);
        free(rp->cores);
        free(rp);
        snprintf(err, errlen, "replay_attach: out of memory");
        return -1;
    }
    engine_observer obs = {.ctx = rp, .on_event = on_event};
    engine_set_observer(e, &obs);
    replay_set_break(rp, rp->opts.break_at);
    rp->t_start = engine_host_seconds();
    *out = rp;
    return 0;
}

static void ending_mismatch(replay *rp, const char *fmt, const char *a, const char *b) {
    size_t used = strlen(rp->v.what);
    if (used) snprintf(rp->v.what + used, sizeof rp->v.what - used, "; ");
    used = strlen(rp->v.what);
    snprintf(rp->v.what + used, sizeof rp->v.what - used, fmt, a, b);
}

static int same_text(const char *a, const char *b) {
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Call sites name files relative to the repository; runs recorded by
 * builds before that named them by absolute path. The same file either way
 * when the absolute one ends in "/" + the relative one. The kernels lived
 * in engine/kernels/ before issue 30 moved them to kernels/: a trace's
 * "engine/kernels/X" is the engine's "kernels/X". */
static int same_source_file(const char *t, const char *e) {
    if (!strcmp(t, e)) return 1;
    static const char moved[] = "engine/kernels/";
    if (!strncmp(t, moved, sizeof moved - 1) && !strcmp(t + 7, e)) return 1;
    size_t lt = strlen(t), le = strlen(e);
    const char *lng = lt > le ? t : e, *shr = lt > le ? e : t;
    size_t ll = lt > le ? lt : le, ls = lt > le ? le : lt;
    return ls && shr[0] != '/' && lng[0] == '/' && lng[ll - ls - 1] == '/' &&
           !strcmp(lng + ll - ls, shr);
}

/* The engine's file name as the trace holds it (cut to its field's size). */
static const char *site_file(const engine_site *s, char file[sizeof((rec_site_decl *)0)->file]) {
    snprintf(file, sizeof((rec_site_decl *)0)->file, "%s", s->file ? s->file : "");
    return file;
}

/* Declarations are part of the run as much as events: an object renamed
 * or moved, a string or a call site changed in the trace (with a valid
 * checksum) would otherwise replay "identical" and be indexed as it
 * reads. Compares every string, object and site the trace declared with
 * the replayed engine's, and says the first difference. */
static void compare_declarations(replay *rp) {
    engine *e = rp->e;
    uint32_t bound = rec_reader_decl_bound(rp->r);
    uint32_t ns = engine_string_count(e), no = engine_object_count(e);
    if (ns + 1 > bound) bound = ns + 1;
    if (no + 1 > bound) bound = no + 1;
    char a[64], b[64];
    for (uint32_t id = 1; id < bound; id++) {
        const char *ts = rec_reader_string(rp->r, id);
        const char *es = id <= ns ? engine_string(e, id) : NULL;
        if (!same_text(ts, es)) {
            snprintf(a, sizeof a, "%u", id);
            ending_mismatch(rp, "string %s: the trace declares it differently (%s)", a,
                            ts ? ts : "missing in the trace");
            return;
        }
        const engine_object *to = rec_reader_object(rp->r, id);
        const engine_object *eo = id <= no ? engine_object_get(e, id) : NULL;
        if (!to != !eo ||
            (to && (to->kind != eo->kind || to->name != eo->name || to->rank != eo->rank ||
                    to->addr.a != eo->addr.a || to->width != eo->width ||
                    to->size != eo->size || to->ring != eo->ring || to->head != eo->head ||
                    to->tail != eo->tail || to->producer_rank != eo->producer_rank ||
                    to->consumer_rank != eo->consumer_rank || to->role != eo->role))) {
            snprintf(a, sizeof a, "%u", id);
            const char *name = eo ? engine_string(e, eo->name) : NULL;
            snprintf(b, sizeof b, "%s", name ? name : "?");
            ending_mismatch(rp, "object %s (%s): the trace declares it differently", a, b);
            return;
        }
        const rec_site_decl *tsite = rec_reader_site(rp->r, id);
        engine_site esite;
        char file[sizeof tsite->file];
        if (tsite && (!engine_site_get(e, id, &esite) || tsite->line != esite.line ||
                      !same_source_file(tsite->file, site_file(&esite, file)) ||
                      strncmp(tsite->func, esite.func ? esite.func : "",
                              sizeof tsite->func - 1))) {
            snprintf(a, sizeof a, "%u", id);
            ending_mismatch(rp, "call site %s: the trace declares %s differently", a,
                            tsite->file);
            return;
        }
    }
}

void replay_finish(replay *rp, const engine_result *res, const char *check_status,
                   const char *check_message) {
    if (res) rp->v.outcome = res->outcome;
    snprintf(rp->v.check, sizeof rp->v.check, "%s", check_status ? check_status : "skipped");
    if (rp->done) return;
    if (!res) {
        snprintf(rp->v.what, sizeof rp->v.what, "the engine could not run the replay");
        rp->v.status = REPLAY_DIVERGED;
        rp->done = 1;
        return;
    }
    if (res->outcome == OUTCOME_INTERRUPTED) {
        snprintf(rp->v.what, sizeof rp->v.what, "the replay was interrupted at seq %llu",
                 (unsigned long long)res->events);
        rp->v.status = REPLAY_INTERRUPTED;
        rp->v.seq = res->events;
        rp->done = 1;
        return;
    }
    engine_event extra;
    int k = replay_next_expected(rp, &extra);
    if (k < 0) {
        snprintf(rp->v.what, sizeof rp->v.what, "%s", rec_reader_error(rp->r));
        rp->v.status = REPLAY_TRACE_ERROR;
        rp->v.seq = rec_reader_complete_seq(rp->r);
        rp->done = 1;
        return;
    }
    if (k == 1) {
        rp->v.has_expected = 1;
        rp->v.expected = extra;
        snprintf(rp->v.what, sizeof rp->v.what,
                 "the replay ended after %llu events but the trace goes on",
                 (unsigned long long)res->events);
        rp->v.status = REPLAY_DIVERGED;
        rp->v.seq = extra.seq;
        rp->done = 1;
        return;
    }
    const char *rec_outcome = rec_reader_meta(rp->r, "outcome");
    const char *rec_check = rec_reader_meta(rp->r, "check");
    const char *rec_msg = rec_reader_meta(rp->r, "check_message");
    const char *rec_end = rec_reader_meta(rp->r, "end_time_ps");
    const char *rec_events = rec_reader_meta(rp->r, "events");
    snprintf(rp->v.recorded_outcome, sizeof rp->v.recorded_outcome, "%s",
             rec_outcome ? rec_outcome : "?");
    snprintf(rp->v.recorded_check, sizeof rp->v.recorded_check, "%s", rec_check ? rec_check : "?");
    rp->v.what[0] = 0;
    char mine[64];
    const char *outcome = engine_outcome_name(res->outcome);
    if (!rec_outcome || strcmp(rec_outcome, outcome) != 0)
        ending_mismatch(rp, "outcome: recorded %s, replayed %s", rec_outcome ? rec_outcome : "?",
                        outcome);
    snprintf(mine, sizeof mine, "%llu", (unsigned long long)res->events);
    if (!rec_events || strcmp(rec_events, mine) != 0)
        ending_mismatch(rp, "event count: recorded %s, replayed %s", rec_events ? rec_events : "?",
                        mine);
    snprintf(mine, sizeof mine, "%llu", (unsigned long long)res->end_time);
    if (!rec_end || strcmp(rec_end, mine) != 0)
        ending_mismatch(rp, "end time (ps): recorded %s, replayed %s", rec_end ? rec_end : "?",
                        mine);
    if (!rec_check || strcmp(rec_check, rp->v.check) != 0)
        ending_mismatch(rp, "data check: recorded %s, replayed %s", rec_check ? rec_check : "?",
                        rp->v.check);
    else if (strcmp(rec_msg ? rec_msg : "", check_message ? check_message : "") != 0)
        ending_mismatch(rp, "data check message: recorded '%s', replayed '%s'",
                        rec_msg ? rec_msg : "", check_message ? check_message : "");
    compare_declarations(rp);
    rp->v.status = rp->v.what[0] ? REPLAY_DIVERGED : REPLAY_IDENTICAL;
    rp->v.seq = 0;
    rp->done = 1;
}

const replay_verdict *replay_verdict_get(const replay *rp) { return &rp->v; }

double replay_seconds_to_end(const replay *rp) {
    return rp->t_end > 0 ? rp->t_end - rp->t_start : 0.0;
}

void replay_free(replay *rp) {
    if (!rp) return;
    replay_ckpt_free(rp);
    replay_view_detach(rp);
    free(rp->cores);
    free(rp);
}

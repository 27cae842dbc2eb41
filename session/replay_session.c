/*
 * replay_session.c - a recorded run rebuilt from its folder and replayed
 * against its trace, in the spirit of rr's ReplaySession::create(dir).
 *
 * Open: the trace header gives the spec (run_spec_from_run: the recorded
 * command line, config.* and hw.*, the input files copied into the folder),
 * the engine is created and the kernel set up, and the header must then
 * describe the run it rebuilt, key by key (else the replay diverged before
 * its first event). Run: the replayer's comparing observer is attached,
 * the engine runs, the kernel's check runs on a completed run, and the
 * ending is compared with the trailer (replay_finish). The verdict, report,
 * exit code and checkpoints are the replayer's (replayer.h).
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder.h"
#include "session/plugin_guard.h"
#include "session/session.h"
#include "session/session_signals.h"

struct replay_session {
    const char *dir;
    rec_reader *reader;
    run_spec spec;
    char note[512];
    engine *e;
    void *state;      /* the kernel's */
    replay *rp;
};

static int rebuild(replay_session *s, char *err, size_t errlen) {
    const run_options *ro = &s->spec.opts;
    if (engine_create(&ro->config, &s->e, err, errlen) != ENGINE_OK) return SESSION_ERROR;
    char why[ENGINE_ERRLEN];
    plugin_guard_arm(ro->plugin, ro->kernel->name, s->e);
    if (ro->kernel->setup(s->e, &ro->kopts, &s->state, why, sizeof why) != 0) {
        if (ro->plugin)
            snprintf(err, errlen, "-k %s (plugin %s, %s): %s", ro->kernel->name, ro->plugin->name,
                     ro->plugin->path, why);
        else
            snprintf(err, errlen, "-k %s: %s", ro->kernel->name, why);
        return SESSION_ERROR;
    }
    plugin_guard_phase("device code", s->e);
    /* The header must describe the run it rebuilds, key by key. */
    rec_run_info info = run_spec_info(&s->spec, s->e);
    if (rec_reader_header_matches(s->reader, &info, err, errlen)) return SESSION_DIVERGED;
    return SESSION_OK;
}

int replay_session_open(const char *dir, replay_session **out, char *err, size_t errlen) {
    *out = NULL;
    replay_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return SESSION_ERROR;
    }
    s->dir = dir;
    char why[ENGINE_ERRLEN];
    if (rec_reader_open(dir, &s->reader, why, sizeof why)) {
        snprintf(err, errlen, "cannot replay: %s", why);
        free(s);
        return SESSION_ERROR;
    }
    int rc = run_spec_from_run(s->reader, dir, &s->spec, s->note, sizeof s->note, err, errlen);
    if (!rc) rc = rebuild(s, err, errlen);
    if (rc) {
        replay_session_close(s);
        return rc;
    }
    *out = s;
    return SESSION_OK;
}

const run_spec *replay_session_spec(const replay_session *s) { return &s->spec; }
engine *replay_session_engine(replay_session *s) { return s->e; }
const char *replay_session_note(const replay_session *s) { return s->note; }

int replay_session_run(replay_session *s, const replay_opts *o, int catch_signals,
                       replay_run *rr, char *err, size_t errlen) {
    memset(rr, 0, sizeof *rr);
    rr->check = "skipped";
    char why[ENGINE_ERRLEN];
    if (replay_attach(s->e, s->reader, o, &s->rp, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", s->dir, why);
        return SESSION_ERROR;
    }
    if (catch_signals) session_signals_catch(s->e, 0);
    double t0 = engine_host_seconds();
    rr->ran = engine_run(s->e, &rr->run, rr->error, sizeof rr->error) == ENGINE_OK;
    rr->wall = engine_host_seconds() - t0;
    if (catch_signals) {
        rr->interrupted = session_signals_seen();
        session_signals_release();
    }
    const kernel_desc *k = s->spec.opts.kernel;
    if (rr->ran && rr->run.outcome == OUTCOME_COMPLETED && k->check) {
        plugin_guard_phase("check", s->e);
        int failed = k->check(s->e, s->state, rr->check_message, sizeof rr->check_message) != 0;
        rr->check = failed ? "failed" : "passed";
    }
    replay_finish(s->rp, rr->ran ? &rr->run : NULL, rr->check, rr->check_message);
    return SESSION_OK;
}

const replay_verdict *replay_session_verdict(const replay_session *s) {
    return replay_verdict_get(s->rp);
}

replay *replay_session_replay(replay_session *s) { return s->rp; }

void replay_session_close(replay_session *s) {
    if (!s) return;
    replay_free(s->rp);
    plugin_guard_phase("destroy", s->e);
    if (s->state && s->spec.opts.kernel->destroy) s->spec.opts.kernel->destroy(s->state);
    if (s->e) engine_destroy(s->e);
    plugin_guard_disarm();
    rec_reader_close(s->reader);
    run_spec_free(&s->spec);
    free(s);
}

/*
 * record_finish.c - a record session after its run: finishing the trace
 * and index, deriving the analysis tables of a run that did not complete,
 * and putting the run folder in place.
 *
 * Everything that needs only the run folder (rec_close: the last chunk,
 * trailer and index; the analysis (ana_open, ANA_OPEN_REDERIVE); the caller's on_closed hook, which reads
 * the index) runs on a second thread while the main one calls on_ran and
 * frees the engine (gigabytes of GM at full size): the two share nothing.
 * Then the hidden folder is renamed to -o (run_folder.c), unless finishing
 * failed (what was written stays readable up to its last complete chunk),
 * the races table could not be written (the run lacks what was asked), or
 * an interrupted run would replace a complete one.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "session/plugin_guard.h"
#include "session/record_races.h"
#include "session/recording.h"
#include "session/run_folder.h"
#include "session/session_signals.h"

/* A message in memory of its own; NULL when there is none to have. */
static char *message(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0) s = NULL;
    va_end(ap);
    return s;
}

static void *finish_folder(void *arg) {
    record_session *rc = arg;
    record_result *r = &rc->r;
    rc->close_rc = rec_close(rc->w, r->ran ? &r->run : NULL, r->check, r->check_message,
                             rc->close_err, sizeof rc->close_err);
    rc->w = NULL;   /* freed by rec_close, also on error */
    if (rc->close_rc) return NULL;
    char why[ENGINE_ERRLEN];
    /* the run is complete */
    if (r->derived && ana_open(r->run_dir, ANA_OPEN_REDERIVE, NULL, NULL, why, sizeof why)) {
        recording_set(&rc->analysis_error, &r->analysis_error, message("%s", why));
        if (!rc->analysis_error) r->analysis_error = "out of memory";
    }
    if (rc->hooks.on_closed) rc->hooks.on_closed(rc->hooks.ctx, r->run_dir, r);
    return NULL;
}

/* Renames the hidden folder to -o, or says in finish_error why not. */
static void install(record_session *rc) {
    const run_options *ro = rc->ro;
    record_result *r = &rc->r;
    char err[ENGINE_ERRLEN];
    int interrupted = r->ran && r->run.outcome == OUTCOME_INTERRUPTED;
    char *why;
    if (rc->close_rc) {
        why = message("finishing %s: %s; the partial recording is in %s (`npurr reindex` reads "
                      "what it holds)", ro->out_dir, rc->close_err, r->run_dir);
    } else if (record_races_write(rc->hb, r->run_dir, err, sizeof err)) {
        why = message("%s; the recording is in %s", err, r->run_dir);
    } else if (interrupted && ro->force && run_folder_check_target(ro->out_dir, 0, err, sizeof err)) {
        /* An interrupted run does not replace a complete one. */
        why = message("interrupted: %s is left as it was; this recording is in %s", ro->out_dir,
                      r->run_dir);
    } else if (run_folder_install(r->run_dir, ro->out_dir, ro->force, err, sizeof err)) {
        why = message("%s", err);
    } else {
        r->installed = 1;
        r->run_dir = ro->out_dir;   /* the spec outlives the session */
        return;
    }
    recording_set(&rc->finish_error, &r->finish_error, why);
    if (!why) r->finish_error = "out of memory saying why the run stayed in its hidden folder";
}

void record_finish(record_session *rc) {
    record_result *r = &rc->r;
    record_close_part(rc);
    if (rc->w) {
        if (pthread_create(&rc->thread, NULL, finish_folder, rc) == 0)
            rc->thread_started = 1;   /* joined below, after the engine is freed */
        else
            finish_folder(rc);
    }
    if (rc->hooks.on_ran) rc->hooks.on_ran(rc->hooks.ctx, rc->e, r);
    plugin_guard_phase("destroy", rc->e);
    if (rc->ro->kernel->destroy) rc->ro->kernel->destroy(rc->state);
    engine_destroy(rc->e);
    rc->e = NULL;
    rc->state = NULL;
    plugin_guard_disarm();   /* no plugin code runs past here: the run may be installed */
    if (rc->thread_started) pthread_join(rc->thread, NULL);
    if (!r->traced) return;
    if (rc->catch_signals) session_signals_release();
    install(rc);
}

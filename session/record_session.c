/*
 * record_session.c - recording one run, before and during the run: the
 * target folder and the memory the options imply are checked before
 * anything is built (a refused record costs milliseconds and touches no
 * existing run); then the engine is created, the kernel sets up its inputs
 * and launches, the recorder opens in a hidden folder next to -o (the input
 * files copied in, so the folder is all a replay needs) and catches up with
 * what the setup declared, the race checker wraps whatever observes the
 * run, and the engine runs. The output check runs on a completed run while
 * the recorder compresses its last chunk. What follows the run is
 * record_finish.c.
 *
 * Nothing is lost on Ctrl-C or a kernel fault: a signal only asks the
 * engine to stop at the next event (session_signals.c), and every ending
 * goes through the same rec_close, which writes the outcome into the
 * trailer and the index.
 */
#include <string.h>
#include <time.h>

#include "session/record_inputs.h"
#include "session/record_races.h"
#include "session/recording.h"
#include "session/run_folder.h"
#include "session/session_signals.h"

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Usage errors, before anything is built. */
static int check_before_building(const run_options *ro, char *err, size_t errlen) {
    if (!ro->out_dir && !ro->no_trace) {
        snprintf(err, errlen, "-o RUN is required (or --no-trace)");
        return SESSION_USAGE;
    }
    if (!ro->no_trace && run_folder_check_target(ro->out_dir, ro->force, err, errlen))
        return SESSION_USAGE;
    if (session_memory_check(ro, 0, err, errlen)) return SESSION_USAGE;
    return SESSION_OK;
}

static int build(recording *rc, char *err, size_t errlen) {
    const run_options *ro = rc->ro;
    if (engine_create(&ro->config, &rc->e, err, errlen) != ENGINE_OK) return -1;
    char why[ENGINE_ERRLEN];
    if (ro->kernel->setup(rc->e, &ro->kopts, &rc->state, why, sizeof why) != 0) {
        snprintf(err, errlen, "-k %s: %s", ro->kernel->name, why);
        engine_destroy(rc->e);
        rc->e = NULL;
        return -1;
    }
    return 0;
}

static void discard(recording *rc) {
    if (rc->ro->kernel->destroy) rc->ro->kernel->destroy(rc->state);
    engine_destroy(rc->e);
}

/* The recorder in a hidden folder next to -o, with the input files. */
static int open_trace(recording *rc, char *err, size_t errlen) {
    const run_options *ro = rc->ro;
    record_result *r = rc->r;
    record_inputs inputs;
    record_inputs_plan(ro, &inputs);
    rec_run_info info = {ro->kernel->name, rc->command_line, &ro->config,
                         engine_cores_per_rank(rc->e), engine_num_aic(rc->e),
                         engine_num_aiv(rc->e)};
    int orc = run_folder_make_temp(ro->out_dir, r->run_dir, sizeof r->run_dir, err, errlen);
    if (!orc) orc = rec_open_with_meta(r->run_dir, &info, inputs.meta, &rc->w, err, errlen);
    if (!orc && record_inputs_copy(&inputs, r->run_dir, engine_num_ranks(rc->e), err, errlen)) {
        char cerr[ENGINE_ERRLEN];
        rec_close(rc->w, NULL, "skipped", "the input files could not be copied", cerr, sizeof cerr);
        rc->w = NULL;
        orc = -1;
    }
    if (orc) {
        if (r->run_dir[0]) run_folder_remove(r->run_dir);   /* nothing was recorded */
        r->run_dir[0] = 0;
        return -1;
    }
    r->traced = 1;
    rec_attach(rc->w, rc->e);
    if (rc->hooks->on_event) {
        rec_observer(rc->w, &rc->tee.inner);
        rc->tee.also = rc->hooks->on_event;
        rc->tee.also_ctx = rc->hooks->ctx;
        engine_observer wrapped = engine_tee_observer(&rc->tee);
        engine_set_observer(rc->e, &wrapped);
    }
    return 0;
}

static void check_outputs(recording *rc) {
    record_result *r = rc->r;
    const kernel_desc *k = rc->ro->kernel;
    if (!r->ran || r->run.outcome != OUTCOME_COMPLETED || !k->check) return;
    if (rc->catch_signals && session_signals_seen()) {
        r->check_interrupted = 1;
        snprintf(r->check_message, sizeof r->check_message, "interrupted before the output check");
        return;
    }
    int failed = k->check(rc->e, rc->state, r->check_message, sizeof r->check_message) != 0;
    r->check = failed ? "failed" : "passed";
}

static void run(recording *rc) {
    record_result *r = rc->r;
    if (rc->catch_signals) session_signals_catch(rc->e, 1);
    double t0 = wall_now();
    r->ran = engine_run(rc->e, &r->run, r->error, sizeof r->error) == ENGINE_OK;
    r->wall = wall_now() - t0;
    r->sched_steps = engine_sched_steps(rc->e);
    /* With a trace to finish, Ctrl-C stays ours until rec_close is done. */
    if (rc->catch_signals) session_signals_run_over(rc->w != NULL);
    /* The last chunk is compressed and indexed while the outputs are checked. */
    rec_flush(rc->w);
    check_outputs(rc);
    if (r->ran) record_races_count(rc->hb, &r->run, r);
    r->checker = rc->hb;
    /* After a completed run the analysis tables wait for their first use
     * (stats, sql, export derive them): recording stays cheap. A run that
     * hung or failed is derived now, because its causes are the point. */
    r->derived = rc->w && !(r->ran && r->run.outcome == OUTCOME_COMPLETED);
}

int record_session(const run_spec *spec, const record_hooks *hooks, int catch_signals,
                   record_result *r, char *err, size_t errlen) {
    static const record_hooks no_hooks;
    memset(r, 0, sizeof *r);
    r->check = "skipped";
    recording rc = {.ro = &spec->opts, .command_line = spec->command_line,
                    .hooks = hooks ? hooks : &no_hooks, .catch_signals = catch_signals, .r = r};
    int code = check_before_building(rc.ro, err, errlen);
    if (code) return code;
    if (build(&rc, err, errlen)) return SESSION_ERROR;
    if (rc.hooks->on_start) rc.hooks->on_start(rc.hooks->ctx, rc.e, rc.ro->kernel, rc.state);
    if (!rc.ro->no_trace && open_trace(&rc, err, errlen)) {
        discard(&rc);
        return SESSION_ERROR;
    }
    if (record_races_attach(rc.e, rc.ro->check_races, &rc.hb, err, errlen)) {
        char cerr[ENGINE_ERRLEN];
        if (rc.w) rec_close(rc.w, NULL, "skipped", "the race checker could not start", cerr, sizeof cerr);
        discard(&rc);
        return SESSION_ERROR;
    }
    run(&rc);
    record_finish(&rc);
    return SESSION_OK;
}

void record_result_free(record_result *r) {
    hb_destroy(r->checker);
    r->checker = NULL;
}

/*
 * record_session.c - recording one run, before and during the run: the
 * target folder and the memory the options imply are checked before
 * anything is built (a refused record costs milliseconds and touches no
 * existing run); then the engine is created, the kernel sets up its inputs
 * and launches, the recorder opens in a hidden folder next to -o (the input
 * files copied in, so the folder is all a replay needs) and catches up with
 * what the setup declared, the race checker wraps whatever observes the
 * run (record_session_open); then the engine runs (record_session_run).
 * The output check runs on a completed run while the recorder compresses
 * its last chunk. What follows the run is record_finish.c; what the
 * session allocated goes at record_session_close.
 *
 * Nothing is lost on Ctrl-C or a kernel fault: a signal only asks the
 * engine to stop at the next event (session_signals.c), and every ending
 * goes through the same rec_close, which writes the outcome into the
 * trailer and the index.
 */
#include <stdlib.h>
#include <string.h>

#include "session/plugin_guard.h"
#include "session/record_inputs.h"
#include "session/record_races.h"
#include "session/recording.h"
#include "session/run_folder.h"
#include "session/session_signals.h"
#include "engine/split/split.h"

/* Usage errors, before anything is built. Under mpirun only process 0
 * writes the run folder, so only it checks -o, and each process checks
 * the memory its machine needs for the processes it holds. */
static int check_before_building(const run_options *ro, const split_mpi *sp, char *err,
                                 size_t errlen) {
    int writes = !sp || split_mpi_index(sp) == 0;
    if (!ro->out_dir && !ro->no_trace) {
        snprintf(err, errlen, "-o RUN is required (or --no-trace)");
        return SESSION_USAGE;
    }
    if (writes && !ro->no_trace && run_folder_check_target(ro->out_dir, ro->force, err, errlen))
        return SESSION_USAGE;
    if (session_memory_check(ro, 0, sp ? split_mpi_count(sp) : 1,
                             sp ? split_mpi_on_this_machine(sp) : 1, err, errlen))
        return SESSION_USAGE;
    return SESSION_OK;
}

/* "-k NAME" and, for a plugin's kernel, which plugin: how messages name it. */
void session_kernel_name(const run_options *ro, char *out, size_t len) {
    if (ro->plugin)
        snprintf(out, len, "-k %s (plugin %s, %s)", ro->kernel->name, ro->plugin->name,
                 ro->plugin->path);
    else
        snprintf(out, len, "-k %s", ro->kernel->name);
}

static int build(record_session *rc, char *err, size_t errlen) {
    const run_options *ro = rc->ro;
    if (engine_create(&ro->config, &rc->e, err, errlen) != ENGINE_OK) return -1;
    char why[ENGINE_ERRLEN], who[4400];
    plugin_guard_arm(ro->plugin, ro->kernel->name, rc->e);
    if (ro->kernel->setup(rc->e, &ro->kopts, &rc->state, why, sizeof why) != 0) {
        session_kernel_name(ro, who, sizeof who);
        snprintf(err, errlen, "%s: %s", who, why);
        engine_destroy(rc->e);
        rc->e = NULL;
        plugin_guard_disarm();
        return -1;
    }
    plugin_guard_phase("device code", rc->e);
    return 0;
}

/* Process k > 0's writer: its parts are process 0's now (or lost with the
 * run); closing only frees it. */
void record_close_part(record_session *rc) {
    if (!rc->part) return;
    char cerr[ENGINE_ERRLEN];
    (void)rec_close(rc->part, NULL, NULL, NULL, cerr, sizeof cerr);
    rc->part = NULL;
}

static void discard(record_session *rc) {
    record_close_part(rc);
    plugin_guard_phase("destroy", rc->e);
    if (rc->ro->kernel->destroy) rc->ro->kernel->destroy(rc->state);
    engine_destroy(rc->e);
    rc->e = NULL;
    rc->state = NULL;
    plugin_guard_disarm();
}

/* The recorder in a hidden folder next to -o, with the input files. */
static int open_trace(record_session *rc, char *err, size_t errlen) {
    const run_options *ro = rc->ro;
    record_result *r = &rc->r;
    record_inputs inputs;
    record_inputs_plan(ro, &inputs);
    rec_run_info info = run_spec_info(rc->spec, rc->e);
    recording_set(&rc->run_dir, &r->run_dir, run_folder_make_temp(ro->out_dir, err, errlen));
    int orc = rc->run_dir ? 0 : -1;
    if (!orc) orc = rec_open_with_meta(r->run_dir, &info, NULL, &rc->w, err, errlen);
    if (!orc && (record_inputs_copy(&inputs, r->run_dir, engine_num_ranks(rc->e), err, errlen) ||
                 (ro->plugin && record_plugin_copy(ro->plugin, rc->spec->plugin_file,
                                                   r->run_dir, err, errlen)))) {
        char cerr[ENGINE_ERRLEN];
        rec_close(rc->w, NULL, "skipped", "the input files could not be copied", cerr, sizeof cerr);
        rc->w = NULL;
        orc = -1;
    }
    if (orc) {
        if (rc->run_dir) run_folder_remove(rc->run_dir);   /* nothing was recorded */
        recording_set(&rc->run_dir, &r->run_dir, NULL);
        return -1;
    }
    r->traced = 1;
    plugin_guard_run_dir(r->run_dir);
    rec_attach(rc->w, rc->e);
    if (rc->hooks.on_event) {
        rec_observer(rc->w, &rc->tee.inner);
        rc->tee.also = (engine_observer){.ctx = rc->hooks.ctx, .on_event = rc->hooks.on_event};
        engine_observer wrapped = engine_tee_observer(&rc->tee);
        engine_set_observer(rc->e, &wrapped);
    }
    return 0;
}

/* Under mpirun every process records its own events (recorder.h, "a run
 * split over P processes"): process k > 0 into a writer without a folder,
 * which hands its parts to process 0 window by window. */
static int open_part(record_session *rc, char *err, size_t errlen) {
    rec_run_info info = run_spec_info(rc->spec, rc->e);
    if (rec_open_part(&info, split_mpi_index(rc->split), split_mpi_count(rc->split),
                      split_mpi_on_this_machine(rc->split), &rc->part, err, errlen))
        return -1;
    rec_attach(rc->part, rc->e);
    return 0;
}

static int record_where_it_runs(record_session *rc, char *err, size_t errlen) {
    rec_writer *w = rc->w ? rc->w : rc->part;
    if (!w) return 0;
    if (rc->w && rec_split(rc->w, split_mpi_count(rc->split), split_mpi_on_this_machine(rc->split),
                           err, errlen))
        return -1;
    engine_split_sink sink = rec_split_sink(w);
    return engine_split_record(rc->e, &sink, err, errlen) ? -1 : 0;
}

/* After the run: every process's part of the index to process 0. */
static void gather_index(record_session *rc) {
    if (!rc->split || (!rc->w && !rc->part) || split_mpi_broken(rc->split)) return;
    const engine_transport *t = split_mpi_transport(rc->split);
    engine_buf mine = {0};
    if (rc->part) rec_split_index_pack(rc->part, &mine);
    engine_buf *all = rc->w ? calloc((size_t)t->count, sizeof *all) : NULL;
    char err[ENGINE_ERRLEN];
    if (!t->gather(t->ctx, &mine, all, err, sizeof err) && all)
        for (int q = 1; q < t->count; q++)
            if (rec_split_index_merge(rc->w, q, all[q].p, all[q].n, err, sizeof err)) break;
    for (int q = 0; all && q < t->count; q++) engine_buf_free(&all[q]);
    free(all);
    engine_buf_free(&mine);
}

/* The run stops before its first event: the trace opened for it holds
 * nothing, so its hidden folder goes (no run is left to trust or find). */
static void drop_trace(record_session *rc, const char *why) {
    if (!rc->w) return;
    char cerr[ENGINE_ERRLEN];
    rec_close(rc->w, NULL, "skipped", why, cerr, sizeof cerr);
    rc->w = NULL;
    run_folder_remove(rc->run_dir);
    recording_set(&rc->run_dir, &rc->r.run_dir, NULL);
    rc->r.traced = 0;
}

/* Split: each process checked its own nodes; the first failure in process
 * order is the run's (a run that completed completed everywhere, so every
 * process is here). */
static void agree_on_check(record_session *rc, int failed) {
    record_result *r = &rc->r;
    if (!failed) r->check_message[0] = 0;
    int any = split_mpi_agree(rc->split, failed, r->check_message, sizeof r->check_message);
    r->check = any ? "failed" : "passed";
}

static void check_outputs(record_session *rc) {
    record_result *r = &rc->r;
    const kernel_desc *k = rc->ro->kernel;
    if (!r->ran || r->run.outcome != OUTCOME_COMPLETED || !k->check || rc->ro->skip_check) return;
    if (rc->catch_signals && session_signals_seen()) {
        r->check_interrupted = 1;
        snprintf(r->check_message, sizeof r->check_message, "interrupted before the output check");
        return;
    }
    plugin_guard_phase("check", rc->e);
    int failed = k->check(rc->e, rc->state, r->check_message, sizeof r->check_message) != 0;
    r->check = failed ? "failed" : "passed";
    if (rc->split) agree_on_check(rc, failed);
}

static void run(record_session *rc) {
    record_result *r = &rc->r;
    if (rc->catch_signals) session_signals_catch(rc->e, 1);
    double t0 = engine_host_seconds();
    r->ran = engine_run(rc->e, &r->run, r->error, sizeof r->error) == ENGINE_OK;
    r->wall = engine_host_seconds() - t0;
    if (r->ran) gather_index(rc);
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

/* Under mpirun: what a split run cannot do, refused on every process. */
static int split_allowed(const record_session *rc, char *err, size_t errlen) {
    const run_options *ro = rc->ro;
    if (!ro->kernel->check_splits) {
        snprintf(err, errlen, "-k %s cannot be split over MPI processes yet: its output check "
                              "reads every rank; record it in one process", ro->kernel->name);
        return SESSION_USAGE;
    }
    if (ro->check_races) {
        snprintf(err, errlen, "--check races needs the whole run in one process (without mpirun)");
        return SESSION_USAGE;
    }
    /* engine_split checks it too, but only once the engine is built */
    if (engine_split_fits(ro->config.nodes, split_mpi_count(rc->split), err, errlen))
        return SESSION_USAGE;
    return SESSION_OK;
}

/* Everything before the run; rc->split set when mpirun started several
 * processes, whose every step that can fail is agreed (split_mpi_agree),
 * so all of them go on or stop together with process 0 reporting. On an
 * error nothing is left built or on disk. */
static int prepare(record_session *rc, char *err, size_t errlen) {
    split_mpi *sp = rc->split;
    int writes = !sp || split_mpi_index(sp) == 0;
    int code = check_before_building(rc->ro, sp, err, errlen);
    if (!code && sp) code = split_allowed(rc, err, errlen);
    if (sp) code = split_mpi_agree(sp, code, err, errlen);
    if (code) return code;
    code = build(rc, err, errlen) ? SESSION_ERROR : SESSION_OK;
    if (sp) code = split_mpi_agree(sp, code, err, errlen);
    if (code) {
        if (rc->e) discard(rc);
        return code;
    }
    if (rc->hooks.on_start) rc->hooks.on_start(rc->hooks.ctx, rc->e, rc->ro->kernel, rc->state);
    code = writes && !rc->ro->no_trace && open_trace(rc, err, errlen) ? SESSION_ERROR : SESSION_OK;
    if (!code && sp && !writes && !rc->ro->no_trace && open_part(rc, err, errlen))
        code = SESSION_ERROR;
    if (sp) {
        int q = code;
        code = split_mpi_agree(sp, code, err, errlen);
        if (code && !q) drop_trace(rc, "another MPI process could not start");
    }
    if (code) {
        discard(rc);
        return code;
    }
    if (sp) {
        code = engine_split(rc->e, split_mpi_transport(sp), err, errlen) ? SESSION_USAGE
                                                                          : SESSION_OK;
        if (!code && record_where_it_runs(rc, err, errlen)) code = SESSION_ERROR;
        code = split_mpi_agree(sp, code, err, errlen);
    } else if (record_races_attach(rc->e, rc->ro->check_races, &rc->hb, err, errlen)) {
        code = SESSION_ERROR;
    }
    if (code) {
        drop_trace(rc, sp ? "the run could not be split" : "the race checker could not start");
        discard(rc);
    }
    return code;
}

void recording_set(char **slot, const char **view, char *s) {
    free(*slot);
    *slot = s;
    *view = s ? s : "";
}

int record_session_open(const run_spec *spec, const record_hooks *hooks, record_session **out,
                        char *err, size_t errlen) {
    *out = NULL;
    record_session *rc = calloc(1, sizeof *rc);
    if (!rc) {
        snprintf(err, errlen, "out of memory");
        return SESSION_ERROR;
    }
    rc->spec = spec;
    rc->ro = &spec->opts;
    if (hooks) rc->hooks = *hooks;
    record_result *r = &rc->r;
    r->check = "skipped";
    r->split_count = 1;
    r->run_dir = r->finish_error = r->analysis_error = "";
    int count = 0;
    int launched = split_mpi_launched(&count, err, errlen);
    int code = launched < 0 ? SESSION_ERROR : SESSION_OK;
    if (!code && launched && split_mpi_start(&rc->split, session_signals_seen, err, errlen))
        code = SESSION_ERROR;
    if (rc->split) {
        r->split_index = split_mpi_index(rc->split);
        r->split_count = split_mpi_count(rc->split);
    }
    if (!code) code = prepare(rc, err, errlen);
    if (code) {
        record_session_close(rc);
        return code;
    }
    *out = rc;
    return SESSION_OK;
}

const record_result *record_session_run(record_session *rc, int catch_signals) {
    if (!rc->ran_once) {
        rc->ran_once = 1;
        rc->catch_signals = catch_signals;
        run(rc);
        record_finish(rc);
    }
    return &rc->r;
}

void record_session_close(record_session *rc) {
    if (!rc) return;
    drop_trace(rc, "the session was closed before it ran");
    if (rc->e) discard(rc);
    hb_destroy(rc->hb);
    /* a broken job (a process died) cannot finalise MPI: split_mpi_end
     * leaves it to exit, with the trace already closed as an interrupted run */
    split_mpi_end(rc->split, rc->r.ran ? 0 : 1);
    free(rc->run_dir);
    free(rc->finish_error);
    free(rc->analysis_error);
    free(rc);
}

int session_process_speaks(void) {
    return split_mpi_process_speaks();
}

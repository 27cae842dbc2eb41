/*
 * cmd_record.c - `npurr record -k KERNEL [options] -o RUN`: build the
 * cluster, let the kernel set up its inputs and launch, run under the
 * recorder, check the outputs against the kernel's CPU reference, finalise
 * trace and index and print the run's summary and stall table. The analysis
 * tables are derived at once only for a run that did not complete (their
 * causes explain the hang); otherwise on first use. Work after the run
 * overlaps where it can: the recorder compresses the last chunk during the
 * check, and finishing the trace and index, the derivation if any and the
 * stall summary all happen on a second thread while the engine is freed.
 *
 * Nothing is lost on Ctrl-C or a kernel fault: the signal only asks the
 * engine to stop at the next event, and every ending goes through the same
 * rec_close, which writes the outcome into the trailer and the index. The
 * run is written into a hidden folder next to -o and renamed into place at
 * the end (run_folder.c), after the options and the memory they imply were
 * checked (memory_check.c): a refused, failed, killed or concurrent record
 * never touches an existing run.
 */
#include "cli.h"

#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/analysis.h"
#include "record_inputs.h"
#include "record_progress.h"
#include "record_races.h"
#include "recorder/recorder.h"
#include "run_folder.h"

static engine *volatile g_running;
static volatile sig_atomic_t g_finishing;   /* between the run and rec_close */
static volatile sig_atomic_t g_signals;

/* The first Ctrl-C stops the run at the next event, or, once the run is
 * over, skips the output check (which can take seconds at full size), and
 * lets the trace and index be finalised; a second one exits at once. */
static void on_signal(int sig) {
    if (g_signals++ || (!g_running && !g_finishing)) {
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    if (g_running) {
        engine_request_stop(g_running);
    } else {
        static const char msg[] = "\nnpurr: finishing the trace and index (Ctrl-C again to abort)\n";
        ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)n;
    }
}

static double wall_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_help(const run_options *ro) {
    printf("usage: npurr record -k KERNEL [options] -o RUN\n\n"
           "Runs KERNEL on every rank of the emulated cluster, records every transfer,\n"
           "flag wait and head/tail store into RUN/trace.zst (zstd frames) indexed in\n"
           "RUN/index.db (SQLite), checks the outputs against a CPU reference and prints\n"
           "the outcome and the stall summary. The analysis tables (wait causes, ring\n"
           "occupancy...) are derived at once after a run that did not complete, else\n"
           "by the first `npurr stats`, `sql` or `export` of RUN.\n\n"
           "The run is written into PARENT/.NAME.recording.PID and renamed to RUN once\n"
           "complete, so an existing run is never lost: -o onto one needs --force, and a\n"
           "failed, killed or concurrent record leaves it as it was. kill -9 leaves the\n"
           "hidden folder (readable up to its last chunk: `npurr reindex` it).\n\n"
           "exit: 0 completed and checked, 1 error or kernel fault, 2 usage (also -o onto\n"
           "      a run without --force),\n"
           "      3 deadlock or watchdog, 4 data check failed, 6 races or sync errors\n"
           "      (--check races; a deadlock or fault keeps its own code)\n\n");
    run_options_help(stdout, ro->kernel, RUN_OPT_OUTPUT | RUN_OPT_NO_TRACE);
}

static int exit_code(engine_outcome o, int check_failed) {
    switch (o) {
    case OUTCOME_COMPLETED: return check_failed ? EXIT_CHECK : EXIT_DONE;
    case OUTCOME_DEADLOCK:
    case OUTCOME_WATCHDOG: return EXIT_DEADLOCK;
    default: return EXIT_ERROR;
    }
}

/* The stall summary, into out. A completed run's comes from the recorder's
 * own tables (the same numbers `stats --by role` prints once the analysis
 * tables exist); a run that hung also gets what its blocked cores wait on,
 * by cause, which needs the analysis tables. */
static void write_stalls(const char *run_dir, const char *shown_as, int derived, FILE *out) {
    char err[ENGINE_ERRLEN];
    sqlite3 *db = NULL;
    if ((derived ? ana_open_derived : ana_open)(run_dir, &db, err, sizeof err)) {
        fprintf(stderr, "npurr: stall summary unavailable: %s\n", err);
        if (db) sqlite3_close(db);
        return;
    }
    ana_stall_table blocked, t;
    if (derived && ana_blocked_table_get(db, ANA_BY_CAUSE, 10, &blocked, err, sizeof err) == 0) {
        if (blocked.waits) {
            fprintf(out, "\n");
            ana_stall_table_print(&blocked, out);
        }
        ana_stall_table_free(&blocked);
    }
    if ((derived ? ana_stall_table_get : ana_stall_table_get_recorded)(db, ANA_BY_ROLE, 10, &t,
                                                                        err, sizeof err) == 0) {
        fprintf(out, "\nstalls by role (npurr stats %s --by site|rank|kind|object|cause):\n",
                shown_as);
        ana_stall_table_print(&t, out);
        ana_stall_table_free(&t);
    } else {
        fprintf(stderr, "npurr: stall summary unavailable: %s\n", err);
    }
    sqlite3_close(db);
}

/* Everything after the run that needs only the run folder: finishing the
 * trace and index (trailer, last index rows, commit), the analysis tables
 * when the run did not complete, then the stall summary as text. It runs
 * on a second thread while the main one prints the run's summary and frees
 * the engine (gigabytes of GM at full size): the two share nothing. */
typedef struct after_job {
    rec_writer *w;
    const engine_result *res;   /* NULL: engine_run itself failed */
    const char *check_status, *check_msg, *run_dir, *target;
    int derive, summary;
    int close_rc, derive_rc;
    char close_err[ENGINE_ERRLEN], derive_err[ENGINE_ERRLEN];
    char *text;
    size_t text_len;
    pthread_t thread;
} after_job;

static void *after_main(void *arg) {
    after_job *j = arg;
    j->close_rc = rec_close(j->w, j->res, j->check_status, j->check_msg, j->close_err,
                            sizeof j->close_err);
    if (j->close_rc) return NULL;
    if (j->derive) j->derive_rc = ana_derive(j->run_dir, j->derive_err, sizeof j->derive_err);
    if (j->summary) {
        FILE *out = open_memstream(&j->text, &j->text_len);
        if (out) {
            write_stalls(j->run_dir, j->target, j->derive, out);
            fclose(out);
        } else {
            fprintf(stderr, "npurr: stall summary unavailable: out of memory\n");
        }
    }
    return NULL;
}

int cmd_record(int argc, char **argv) {
    char err[ENGINE_ERRLEN] = "";
    run_options ro;
    int rc = run_options_parse(argc, argv, RUN_OPT_OUTPUT | RUN_OPT_NO_TRACE, &ro, err, sizeof err);
    if (rc) {
        fprintf(stderr, "npurr record: %s\n", err);
        return rc;
    }
    if (ro.help) { print_help(&ro); return EXIT_DONE; }
    if (!ro.out_dir && !ro.no_trace) {
        fprintf(stderr, "npurr record: -o RUN is required (or --no-trace)\n");
        return EXIT_USAGE;
    }
    /* The run is written into a hidden folder next to -o and renamed into
     * place at the end (run_folder.c): an existing run survives a failed,
     * killed or concurrent record. */
    char tmp_dir[4400] = "";
    if (!ro.no_trace && run_folder_check_target(ro.out_dir, ro.force, err, sizeof err)) {
        fprintf(stderr, "npurr record: %s\n", err);
        return EXIT_USAGE;
    }
    if (cli_memory_check(&ro, 0, err, sizeof err)) {
        fprintf(stderr, "npurr record: %s\n", err);
        return EXIT_USAGE;
    }
    engine *e = NULL;
    if (engine_create(&ro.config, &e, err, sizeof err) != ENGINE_OK) {
        fprintf(stderr, "npurr record: %s\n", err);
        return EXIT_ERROR;
    }
    void *state = NULL;
    if (ro.kernel->setup(e, &ro.kopts, &state, err, sizeof err) != 0) {
        fprintf(stderr, "npurr record: -k %s: %s\n", ro.kernel->name, err);
        engine_destroy(e);
        return EXIT_ERROR;
    }
    rec_writer *w = NULL;
    record_progress prog;
    record_progress_init(&prog, e, ro.kernel, state, ro.quiet, ro.progress);
    engine_tee tee = {.also = record_progress_event, .also_ctx = &prog};
    if (!ro.no_trace) {
        char *cmdline = shell_join(argc + 1, argv - 1);
        record_inputs inputs;
        record_inputs_plan(&ro, &inputs);
        rec_run_info info = {ro.kernel->name, cmdline, &ro.config, engine_cores_per_rank(e),
                             engine_num_aic(e), engine_num_aiv(e)};
        int orc = run_folder_make_temp(ro.out_dir, tmp_dir, sizeof tmp_dir, err, sizeof err);
        if (!orc) orc = rec_open_with_meta(tmp_dir, &info, inputs.meta, &w, err, sizeof err);
        free(cmdline);
        if (!orc && record_inputs_copy(&inputs, tmp_dir, engine_num_ranks(e), err, sizeof err)) {
            char cerr[ENGINE_ERRLEN];
            rec_close(w, NULL, "skipped", "the input files could not be copied", cerr, sizeof cerr);
            w = NULL;
            orc = -1;
        }
        if (orc) {
            fprintf(stderr, "npurr record: %s\n", err);
            if (tmp_dir[0]) run_folder_remove(tmp_dir);   /* nothing was recorded */
            if (ro.kernel->destroy) ro.kernel->destroy(state);
            engine_destroy(e);
            return EXIT_ERROR;
        }
        rec_attach(w, e);
        rec_observer(w, &tee.inner);
        engine_observer wrapped = engine_tee_observer(&tee);
        engine_set_observer(e, &wrapped);
    }
    hb_checker *hb = NULL;
    if (record_races_attach(e, ro.check_races, &hb, err, sizeof err)) {
        fprintf(stderr, "npurr record: %s\n", err);
        char cerr[ENGINE_ERRLEN];
        if (w) rec_close(w, NULL, "skipped", "the race checker could not start", cerr, sizeof cerr);
        if (ro.kernel->destroy) ro.kernel->destroy(state);
        engine_destroy(e);
        return EXIT_ERROR;
    }
    g_running = e;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    double t0 = wall_now();
    engine_result res;
    int run_ok = engine_run(e, &res, err, sizeof err) == ENGINE_OK;
    double wall = wall_now() - t0;
    record_progress_end(&prog);
    /* With a trace to finish, Ctrl-C stays ours until rec_close is done. */
    g_finishing = w != NULL;
    g_running = NULL;
    if (!w) {
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
    }
    /* The last chunk is compressed and indexed while the outputs are checked. */
    rec_flush(w);

    int check_failed = 0, check_interrupted = 0;
    char check_msg[1024] = "";
    const char *check_status = "skipped";
    if (run_ok && res.outcome == OUTCOME_COMPLETED && ro.kernel->check) {
        if (g_signals) {
            check_interrupted = 1;
            snprintf(check_msg, sizeof check_msg, "interrupted before the output check");
        } else {
            check_failed = ro.kernel->check(e, state, check_msg, sizeof check_msg) != 0;
            check_status = check_failed ? "failed" : "passed";
        }
    }
    int status = run_ok ? exit_code(res.outcome, check_failed) : EXIT_ERROR;
    if (check_interrupted) status = EXIT_ERROR;
    if (run_ok) status = record_races_status(hb, &res, status);
    /* After a completed run the analysis tables wait for their first use
     * (stats, sql, export derive them): recording stays cheap. A run that
     * hung or failed is derived now, because its causes are the point. */
    after_job after = {.w = w, .res = run_ok ? &res : NULL, .check_status = check_status,
                       .check_msg = check_msg, .run_dir = tmp_dir, .target = ro.out_dir,
                       .derive = !(run_ok && res.outcome == OUTCOME_COMPLETED),
                       .summary = run_ok && !ro.quiet};
    int after_started = 0, installed = 0;
    if (w) {
        if (pthread_create(&after.thread, NULL, after_main, &after) == 0)
            after_started = 1;   /* joined below, after the engine is freed */
        else
            after_main(&after);
    }
    if (!run_ok) {
        fprintf(stderr, "npurr record: %s\n", err);
    } else {
        printf("kernel    %s on %d node%s x %d NPUs (%d ranks), seed %llu\n", ro.kernel->name,
               ro.config.nodes, ro.config.nodes == 1 ? "" : "s", ro.config.npus_per_node,
               engine_num_ranks(e), (unsigned long long)ro.config.seed);
        printf("outcome   %s%s%s\n", engine_outcome_name(res.outcome),
               res.outcome == OUTCOME_COMPLETED ? "" : ": ",
               res.outcome == OUTCOME_COMPLETED ? "" : res.message);
        printf("check     %s%s%s\n", check_status, check_msg[0] ? ": " : "", check_msg);
        printf("virtual   %.3f us, %llu events, stalls %.3f us summed over cores\n",
               (double)res.end_time / 1e6, (unsigned long long)res.events,
               (double)res.stall_ps / 1e6);
        engine_memory mem;
        engine_memory_get(e, &mem);
        printf("host      %.2f s, %.2f M events/s, GM %.1f MiB\n", wall,
               wall > 0 ? (double)res.events / wall / 1e6 : 0.0,
               (double)mem.logical_gm / 1048576.0);
        printf("payload   %.1f MiB held as references (--payload %s), %.1f MiB written as bytes\n",
               (double)mem.reference_bytes / 1048576.0, engine_payload_name(ro.config.payload),
               (double)mem.literal_bytes / 1048576.0);
        if (res.outcome == OUTCOME_DEADLOCK || res.outcome == OUTCOME_WATCHDOG) {
            printf("\n");
            engine_write_report(e, stdout);
        }
    }
    fflush(stdout);
    if (ro.kernel->destroy) ro.kernel->destroy(state);
    engine_destroy(e);
    if (after_started) pthread_join(after.thread, NULL);
    if (w) {
        g_finishing = 0;
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        int interrupted = run_ok && res.outcome == OUTCOME_INTERRUPTED;
        if (after.close_rc) {
            /* Disk full or an I/O error: what was written stays readable
             * up to its last complete chunk; an existing run is untouched. */
            fprintf(stderr, "npurr record: finishing %s: %s; the partial recording is in %s "
                    "(`npurr reindex` reads what it holds)\n", ro.out_dir, after.close_err,
                    tmp_dir);
            status = EXIT_ERROR;
        } else if (record_races_write(hb, tmp_dir)) {
            /* the run stays in its hidden folder: it lacks what was asked */
            fprintf(stderr, "npurr record: the recording is in %s\n", tmp_dir);
            status = EXIT_ERROR;
        } else if (interrupted && ro.force &&
                   run_folder_check_target(ro.out_dir, 0, err, sizeof err)) {
            /* An interrupted run does not replace a complete one. */
            fprintf(stderr, "npurr record: interrupted: %s is left as it was; this recording "
                    "is in %s\n", ro.out_dir, tmp_dir);
            status = EXIT_ERROR;
        } else if (run_folder_install(tmp_dir, ro.out_dir, ro.force, err, sizeof err)) {
            fprintf(stderr, "npurr record: %s\n", err);
            status = EXIT_ERROR;
        } else {
            installed = 1;
            if (run_ok) printf("trace     %s/trace.zst, index %s/index.db\n", ro.out_dir, ro.out_dir);
        }
        if (after.derive_rc != 0)
            fprintf(stderr, "npurr record: analysis of %s: %s\n", ro.out_dir, after.derive_err);
    }
    if (after.text) fwrite(after.text, 1, after.text_len, stdout);
    free(after.text);
    record_races_finish(hb, installed ? ro.out_dir : NULL, 20);
    return status;
}

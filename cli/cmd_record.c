/*
 * cmd_record.c - `npurr record -k KERNEL [options] -o RUN`: parse the
 * options into a run spec, record it through the run-session library
 * (record_session_open: build the cluster, let the kernel set up and
 * launch; record_session_run: run under the recorder, check the outputs
 * against the kernel's CPU reference, finalise trace and index, rename the
 * run folder into place),
 * and print what happened: the progress line while it runs, the run's
 * summary, the stall table, the races; then map the ending to an exit code.
 *
 * The stall summary is computed on the session's finishing thread (the
 * on_closed hook), while the engine is freed, and printed at the end.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/analysis.h"
#include "record_progress.h"

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

int cli_outcome_status(engine_outcome o, int check_failed) {
    switch (o) {
    case OUTCOME_COMPLETED: return check_failed ? EXIT_CHECK : EXIT_DONE;
    case OUTCOME_DEADLOCK:
    case OUTCOME_WATCHDOG: return EXIT_DEADLOCK;
    default: return EXIT_ERROR;
    }
}

/* record's exit code (DESIGN.md): races take the place of 0 or 4, a hang
 * or a fault keeps its own code (replay reproduces it); a run left in its
 * hidden folder is an error. */
static int record_status(const record_result *r) {
    int status = r->ran ? cli_outcome_status(r->run.outcome, strcmp(r->check, "failed") == 0)
                        : EXIT_ERROR;
    if (r->check_interrupted) status = EXIT_ERROR;
    if (r->ran && r->checker && (status == EXIT_DONE || status == EXIT_CHECK) &&
        (r->races || r->sync_errors))
        status = EXIT_RACES;
    if (r->traced && !r->installed) status = EXIT_ERROR;
    return status;
}

/* The stall summary, into out. A completed run's comes from the recorder's
 * own tables (the same numbers `stats --by role` prints once the analysis
 * tables exist); a run that hung also gets what its blocked cores wait on,
 * by cause, which needs the analysis tables. */
static void write_stalls(const char *run_dir, const char *shown_as, int derived, FILE *out) {
    char err[ENGINE_ERRLEN];
    sqlite3 *db = NULL;
    if (ana_open(run_dir, derived ? 0 : ANA_OPEN_AS_IS, &db, NULL, err, sizeof err)) {
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

/* What record prints, as the session's hooks. */
typedef struct record_view {
    const run_options *ro;
    cli_dump dumps[16];       /* --dump, written once the run is over (view_ran) */
    int dump_failed;
    record_progress prog;
    char *stalls;             /* the stall summary's text (on_closed) */
    size_t stalls_len;
} record_view;

static void view_start(void *ctx, engine *e, const kernel_desc *k, const void *state) {
    record_view *v = ctx;
    record_progress_init(&v->prog, e, k, state, v->ro->quiet, v->ro->progress);
}

static void view_event(void *ctx, const engine_event *ev) {
    record_view *v = ctx;
    record_progress_event(&v->prog, ev);
}

static void view_summary(const record_view *v, engine *e, const record_result *r) {
    const run_options *ro = v->ro;
    const engine_result *res = &r->run;
    printf("kernel    %s on %d node%s x %d NPUs (%d ranks), seed %llu\n", ro->kernel->name,
           ro->config.nodes, ro->config.nodes == 1 ? "" : "s", ro->config.npus_per_node,
           engine_num_ranks(e), (unsigned long long)ro->config.seed);
    printf("outcome   %s%s%s\n", engine_outcome_name(res->outcome),
           res->outcome == OUTCOME_COMPLETED ? "" : ": ",
           res->outcome == OUTCOME_COMPLETED ? "" : res->message);
    printf("check     %s%s%s\n", r->check, r->check_message[0] ? ": " : "", r->check_message);
    char end[32], stalls[32];
    ana_format_ps((double)res->end_time, end, sizeof end);
    ana_format_ps((double)res->stall_ps, stalls, sizeof stalls);
    printf("virtual   %s, %llu events, stalls %s summed over cores\n", end,
           (unsigned long long)res->events, stalls);
    engine_memory mem;
    engine_memory_get(e, &mem);
    printf("host      %.2f s, %.2f M events/s, GM %.1f MiB\n", r->wall,
           r->wall > 0 ? (double)res->events / r->wall / 1e6 : 0.0,
           (double)mem.logical_gm / 1048576.0);
    printf("payload   %.1f MiB held as references (--payload %s), %.1f MiB written as bytes\n",
           (double)mem.reference_bytes / 1048576.0, engine_payload_name(ro->config.payload),
           (double)mem.literal_bytes / 1048576.0);
    if (res->outcome == OUTCOME_DEADLOCK || res->outcome == OUTCOME_WATCHDOG) {
        printf("\n");
        engine_write_report(e, stdout);
    }
}

static void view_ran(void *ctx, engine *e, const record_result *r) {
    record_view *v = ctx;
    record_progress_end(&v->prog);
    if (!r->ran) fprintf(stderr, "npurr record: %s\n", r->error);
    else view_summary(v, e, r);
    for (int i = 0; r->ran && i < v->ro->n_dumps; i++) {
        char err[ENGINE_ERRLEN];
        int written;
        if (cli_dump_write(e, &v->dumps[i], &written, err, sizeof err)) {
            fprintf(stderr, "npurr record: %s\n", err);
            v->dump_failed = 1;
        } else if (written) {
            printf("dump      %s@%d -> %s\n", v->dumps[i].name, v->dumps[i].rank,
                   v->dumps[i].path);
        }
    }
    fflush(stdout);
}

/* --dump's texts parsed and their files checked, before anything runs. */
static int check_dumps(record_view *v, char *err, size_t errlen) {
    const run_options *ro = v->ro;
    int ranks = ro->config.nodes * ro->config.npus_per_node;
    for (int i = 0; i < ro->n_dumps; i++)
        if (cli_dump_parse(ro->dumps[i], &v->dumps[i], err, errlen) ||
            cli_dump_check(&v->dumps[i], ro->no_trace ? NULL : ro->out_dir, ranks, err, errlen))
            return -1;
    return 0;
}

static void view_closed(void *ctx, const char *run_dir, const record_result *r) {
    record_view *v = ctx;
    if (!r->ran || v->ro->quiet) return;
    FILE *out = open_memstream(&v->stalls, &v->stalls_len);
    if (!out) {
        fprintf(stderr, "npurr record: stall summary unavailable: out of memory\n");
        return;
    }
    write_stalls(run_dir, v->ro->out_dir, r->derived, out);
    fclose(out);
}

/* After the session: where the run is, the stall summary, the races. */
static void print_ending(const record_view *v, const record_result *r) {
    const run_options *ro = v->ro;
    if (r->traced) {
        if (r->finish_error[0])
            fprintf(stderr, "npurr record: %s\n", r->finish_error);
        else if (r->ran)
            printf("trace     %s/trace.zst, index %s/index.db\n", ro->out_dir, ro->out_dir);
        if (r->analysis_error[0])
            fprintf(stderr, "npurr record: analysis of %s: %s\n", ro->out_dir, r->analysis_error);
    }
    if (v->stalls) fwrite(v->stalls, 1, v->stalls_len, stdout);
    if (r->checker) {
        printf("\n");
        hb_print(r->checker, stdout, 20);
        if (r->installed)
            printf("\nraces table in %s/index.db (npurr stats %s --races)\n", ro->out_dir,
                   ro->out_dir);
    }
}

int cmd_record(int argc, char **argv) {
    char err[ENGINE_ERRLEN] = "";
    run_spec spec;
    int rc = run_spec_from_argv(argc, argv, &spec, err, sizeof err);
    if (rc) {
        if (session_process_speaks()) fprintf(stderr, "npurr record: %s\n", err);
        run_spec_free(&spec);
        return rc;
    }
    if (spec.opts.help) {
        if (session_process_speaks()) print_help(&spec.opts);
        run_spec_free(&spec);
        return EXIT_DONE;
    }
    record_view view = {.ro = &spec.opts};
    record_hooks hooks = {.ctx = &view, .on_start = view_start, .on_event = view_event,
                          .on_ran = view_ran, .on_closed = view_closed};
    record_session *s = NULL;
    if (check_dumps(&view, err, sizeof err)) {
        if (session_process_speaks()) fprintf(stderr, "npurr record: %s\n", err);
        run_spec_free(&spec);
        return EXIT_USAGE;
    }
    rc = record_session_open(&spec, &hooks, &s, err, sizeof err);
    if (rc) {
        fprintf(stderr, "npurr record: %s\n", err);
    } else {
        const record_result *r = record_session_run(s, 1);
        print_ending(&view, r);
        rc = record_status(r);
        if (!rc && view.dump_failed) rc = EXIT_ERROR;
    }
    free(view.stalls);
    record_session_close(s);
    run_spec_free(&spec);
    return rc;
}

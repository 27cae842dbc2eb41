/*
 * session.h - a run as an object: what it is (a run spec, from a command
 * line or from a run folder), recording it (record_session_*) and replaying
 * it against its trace (replay_session_*). The run-session library's one
 * public header; the CLI, the benchmarks and the tests rebuild runs through
 * it instead of assembling engine, kernel, recorder and replayer by hand.
 *
 * A run spec is everything that decides a run: the kernel, the engine
 * configuration (topology, chip, seed, jitter, delays, timing, watchdog,
 * payload mode), the kernel's options, and the input files they name. From
 * argv it is parsed as `npurr record` parses it (run_options_parse); from a
 * run folder it is the recorded command line parsed the same way, with the
 * header's config.* and hw.* over it and the input options redirected to
 * the copies in the folder, so a run folder is all a replay needs.
 *
 * record_session_* is `npurr record` without the printing. Open checks the
 * target folder and the memory the options imply, builds the engine, sets
 * up the kernel, opens the recorder in a hidden folder next to the target
 * and copies the input files in; run runs (optionally the happens-before
 * checker too), checks the outputs, finishes trace and index on a second
 * thread while the engine is freed, and renames the folder into place
 * (run_folder.c); close frees. The caller prints through hooks called at
 * fixed points. replay_session_open(RUN) is rr's
 * ReplaySession::create(dir): the run rebuilt from its folder, ready to
 * re-execute and compare event by event.
 *
 * Errors are values: calls return SESSION_OK or how they failed, with a
 * sentence naming the input at fault in err. The codes are numbered as the
 * CLI's exit codes (DESIGN.md), so `npurr` maps them one to one.
 */
#ifndef NPURR_SESSION_H
#define NPURR_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "checker/hb.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "replayer/replayer.h"

typedef enum {
    SESSION_OK = 0,
    SESSION_ERROR = 1,     /* bad input, I/O, a kernel the options cannot set up */
    SESSION_USAGE = 2,     /* a bad option or value, an unusable -o, a run too large */
    SESSION_DIVERGED = 5   /* replay: the header does not describe the run it rebuilds */
} session_rc;

/* ---- options and run specs (run_options.c, run_spec.c) ---- */

/* A run's options as parsed from argv. Strings point into argv. */
#define RUN_MAX_PLUGINS 8
typedef struct run_options {
    const kernel_desc *kernel;
    const kernel_plugin *plugin;   /* the plugin kernel comes from; NULL: built in */
    const char *plugin_paths[RUN_MAX_PLUGINS];   /* --plugin PATH, as given */
    int n_plugins;
    const char *dumps[16];     /* --dump NAME[@RANK]=FILE.npy, as given (the CLI writes them) */
    int n_dumps;
    engine_config config;
    kernel_opts kopts;
    const char *out_dir;      /* -o RUN */
    const char *hw_file;
    int no_trace;
    int force;                /* --force: -o may replace an existing run */
    int check_races;          /* --check races */
    int quiet;
    int progress;             /* --progress: the progress line even off a terminal */
    int help;
    int skip_check;           /* no output check after the run (never from the command line: a
                               * calibration's evaluations time runs already checked once) */
} run_options;

enum { RUN_OPT_OUTPUT = 1, RUN_OPT_NO_TRACE = 2,
       RUN_OPT_EXECUTES = 4 /* --seed/--jitter/--hw/--watchdog-us/--quiet; implied by the
                               other two: record and replay run the engine, layout does not */ };
/* Parses a whole command line of record or layout (argv[0] the program,
 * argv[1] the subcommand, its options from argv[2]) into ro, whose strings
 * point into argv. `allow` is a mask of which non-kernel options the
 * command takes. Returns 0, or SESSION_USAGE / SESSION_ERROR with err
 * naming the option at fault. */
int run_options_parse(int argc, char **argv, int allow, run_options *ro, char *err, size_t errlen);
/* Help text for the engine options and, if k is not NULL, its options
 * (else the list of kernels). */
void run_options_help(FILE *out, const kernel_desc *k, int allow);

/* Before an engine or plan is built: the kernel's options validated
 * against the topology and its memory estimate (kernel_estimate_memory)
 * against the machine's available memory; host_only compares only the
 * host-side plan (what `layout` allocates). A run split over `processes`
 * MPI processes (1: alone), `here` of them on this machine, is compared by
 * what those hold: each its share of the nodes' GM, and a whole plan.
 * -1 with err naming the options and both sizes (a usage error).
 * memory_check.c. */
int session_memory_check(const run_options *ro, int host_only, int processes, int here,
                         char *err, size_t errlen);

/* Whether a record may write its run folder to out_dir, as record checks
 * it before anything is built (a run there needs force; a folder that is
 * no run is refused): 0, or -1 with err naming -o (a usage error). For
 * commands that record a run only after long work (explore). */
int session_check_output(const char *out_dir, int force, char *err, size_t errlen);
/* The run folder that holds dir: dir itself or a folder above it (dir may
 * not exist yet: from its nearest existing parent), symlinks and `..`
 * resolved, copied into run. 1, or 0 when no run folder holds dir. Every
 * command that writes checks its outputs with it. */
int session_run_above(const char *dir, char *run, size_t len);

/* Joins argv with POSIX shell quoting (the recorded command_line);
 * malloc'd, NULL when out of memory. */
char *shell_join(int argc, char **argv);
/* Splits a shell_join result back into words; *argv_out and its strings are
 * one malloc'd block. Returns argc, or -1 on malformed quoting. */
int shell_split(const char *line, char ***argv_out);

/* A run spec: the options and the storage they point into. */
typedef struct run_spec {
    run_options opts;
    char *command_line;              /* as the trace header keeps it, for people (owned) */
    char **words, **argv;            /* a recorded line split back (owned) */
    char *inputs[64];                /* option values the spec owns, one per kernel option
                                      * (kernel_opts holds 64): from a run, every value
                                      * (input files pointed into its folder) */
    /* What rebuilds the run beside its engine configuration, as the header
     * keys rec_run_info.spec_meta takes (key, value, ..., NULL; owned):
     * spec_version, the plugin's plugin.* and every kernel option's opt.*,
     * an input file's as npy:{RUN}/inputs/... */
    char **meta;
    const char *plugin_file;         /* plugin.file: where the run keeps its plugin
                                      * ("plugin/NAME.so", points into meta); NULL built in */
} run_spec;

/* From a whole command line: argv[0] the program, argv[1] the subcommand
 * (`record`), then its options, as `npurr record` takes them. The options
 * point into argv, which must outlive the spec. spec->opts.help set: only
 * the kernel is known. SESSION_OK, or SESSION_USAGE / SESSION_ERROR with err. */
int run_spec_from_argv(int argc, char **argv, run_spec *spec, char *err, size_t errlen);
/* A run of kernel without a trace from the n words of its options (a
 * shell_split result, which the spec takes over whatever the outcome):
 * `npurr record -k KERNEL WORDS --no-trace` parsed as record parses it;
 * --help is refused (it is no shape). SESSION_OK, or SESSION_USAGE /
 * SESSION_ERROR with err naming the option at fault (the words freed). */
int run_spec_from_words(const char *kernel, char **words, int n, run_spec *spec, char *err,
                        size_t errlen);
/* From the run folder dir whose trace r is open: the kernel (its plugin
 * loaded from the copy in dir, refused when the copy is not the one the
 * run recorded), its options and the engine configuration, all from the
 * header's typed keys (opt.*, plugin.*, config.*, hw.*); input options
 * point at the copies in dir. A run recorded before those keys is rebuilt
 * from its command line, with config.* and hw.* over it. note names keys
 * the run lacks, whose defaults are used ("" if none). SESSION_OK, or
 * SESSION_ERROR with err naming dir. */
int run_spec_from_run(rec_reader *r, const char *dir, run_spec *spec, char *note, size_t notelen,
                      char *err, size_t errlen);
/* What a recording of spec on engine e writes into its header, and what a
 * replay of it must find there (rec_run_info); points into spec. */
rec_run_info run_spec_info(const run_spec *spec, const engine *e);
/* Frees what spec owns (command line, split words, redirected inputs) and
 * zeroes it; argv given to run_spec_from_argv stays the caller's. */
void run_spec_free(run_spec *spec);

/* ---- recording (record_session.c, record_finish.c) ---- */

/* One recording of a run spec, as an object: open checks and builds, run
 * runs and finishes, close frees (replay_session_* below is its mirror). */
typedef struct record_session record_session;

/* How a recording ended. Owned by its session: the strings and the checker
 * stay valid until record_session_close. */
typedef struct record_result {
    int ran;                         /* engine_run returned a result (else error says why) */
    engine_result run;
    char error[ENGINE_ERRLEN];
    double wall;                     /* seconds in engine_run */
    uint64_t sched_steps;            /* scheduling steps taken (the unit of --pct-span) */
    const char *check;               /* "passed" | "failed" | "skipped" */
    char check_message[1024];
    int check_interrupted;           /* Ctrl-C before the output check */
    int derived;                     /* analysis tables derived at once (a run that did not complete) */
    const hb_checker *checker;       /* --check races: the reports (NULL without) */
    uint64_t races, sync_errors;
    int split_index, split_count;    /* mpirun: this process of how many (0, 1 alone) */
    /* With a trace: */
    int traced;
    int installed;                   /* renamed to -o */
    const char *run_dir;             /* where the run is: -o, or the hidden folder it stayed in
                                      * ("" when no run is left) */
    const char *finish_error;        /* why it stayed there ("" if installed) */
    const char *analysis_error;      /* the derivation failed ("" if not) */
} record_result;

/* Where the caller looks in; each may be NULL. */
typedef struct record_hooks {
    void *ctx;
    /* The engine and the kernel's state exist; the run has not started. */
    void (*on_start)(void *ctx, engine *e, const kernel_desc *k, const void *kernel_state);
    /* Every event, after the recorder saw it (only with a trace). */
    void (*on_event)(void *ctx, const engine_event *ev);
    /* The run and the output check are over; the engine still exists. */
    void (*on_ran)(void *ctx, engine *e, const record_result *r);
    /* On the finishing thread: trace and index of run_dir (the hidden
     * folder, not yet renamed) are complete, derived when r->derived. */
    void (*on_closed)(void *ctx, const char *run_dir, const record_result *r);
} record_hooks;

/* 0 in a process of an MPI job (mpirun) other than process 0: what it
 * would print before the split starts (a refused option), process 0
 * prints too, so it keeps quiet; 1 otherwise. */
int session_process_speaks(void);

/* Opens a recording of spec (its -o, --force, --no-trace, --check races
 * included), everything before the first event: the target folder and the
 * memory the options imply are checked before anything is built, the
 * engine is created, the kernel set up (hooks->on_start), the recorder
 * opened in a hidden folder next to -o with the input files copied in,
 * the race checker attached; under mpirun the processes agree on each
 * step and split the run. spec and hooks must outlive the session.
 * SESSION_OK with *out; or SESSION_USAGE (a bad -o, a run too large) or
 * SESSION_ERROR with err, *out NULL and no run folder left behind. */
int record_session_open(const run_spec *spec, const record_hooks *hooks, record_session **out,
                        char *err, size_t errlen);
/* Runs the session's engine to its end, checks the outputs of a completed
 * run, finishes trace and index (on a second thread while the engine is
 * freed: hooks on_ran, then on_closed) and renames the run folder into
 * place. catch_signals: the first Ctrl-C or SIGTERM stops the run at the
 * next event (outcome interrupted) or skips the output check, and the
 * trace is finalised; a second one exits. Returns how it ended, owned by
 * s; a second call returns the same result without running again. */
const record_result *record_session_run(record_session *s, int catch_signals);
/* Frees s, its result and checker (a session never run leaves no run
 * folder behind); NULL is ignored. */
void record_session_close(record_session *s);

/* ---- replaying (replay_session.c) ---- */

typedef struct replay_session replay_session;

/* The run recorded in dir, rebuilt: spec from the folder, engine created,
 * kernel set up, the header checked against the rebuilt run. SESSION_OK;
 * SESSION_DIVERGED when the header does not describe that run (err says
 * which key); SESSION_ERROR with err naming dir otherwise. */
int replay_session_open(const char *dir, replay_session **out, char *err, size_t errlen);
/* The spec the run was rebuilt from; owned by s. */
const run_spec *replay_session_spec(const replay_session *s);
/* The rebuilt engine (kernels launched, not yet run); owned by s. */
engine *replay_session_engine(replay_session *s);
/* hw keys the trace lacks, whose defaults the replay uses ("" if none). */
const char *replay_session_note(const replay_session *s);

typedef struct replay_run {
    int ran;                         /* engine_run returned a result (else error says why) */
    engine_result run;
    char error[ENGINE_ERRLEN];
    double wall;                     /* seconds in engine_run */
    int interrupted;                 /* Ctrl-C or SIGTERM stopped the replay */
    const char *check;               /* "passed" | "failed" | "skipped" */
    char check_message[1024];
} replay_run;

/* Re-executes the run under the comparing observer (o: break point,
 * checkpoints; NULL none), runs the kernel's check on a completed run and
 * compares the ending with the trailer. catch_signals: Ctrl-C stops the
 * replay at the next event. SESSION_OK with rr filled, or SESSION_ERROR
 * when the replayer cannot attach (err). */
int replay_session_run(replay_session *s, const replay_opts *o, int catch_signals,
                       replay_run *rr, char *err, size_t errlen);
/* After replay_session_run: the comparison (replay_verdict_get). */
const replay_verdict *replay_session_verdict(const replay_session *s);
/* The replayer, for its report, exit code, checkpoints and gotos. */
replay *replay_session_replay(replay_session *s);
/* Frees everything; NULL is ignored. */
void replay_session_close(replay_session *s);

#endif

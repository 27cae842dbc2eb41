/*
 * cli.h - what the subcommands of `npurr` share: the command table's entry
 * points, the exit codes, and a few helpers. A run's options (engine
 * options plus the kernel's own, which `record`, `layout` and `replay` all
 * accept, so a recorded command line rebuilds the same run) and the record
 * and replay sequences are the run-session library's (session/session.h).
 */
#ifndef NPURR_CLI_H
#define NPURR_CLI_H

#include <stdio.h>

#include "analysis/analysis.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "calibrate/calibrate.h"
#include "session/session.h"

/* Exit codes (DESIGN.md); a session's error codes are numbered the same. */
enum { EXIT_DONE = 0, EXIT_ERROR = SESSION_ERROR, EXIT_USAGE = SESSION_USAGE, EXIT_DEADLOCK = 3,
       EXIT_CHECK = 4, EXIT_DIVERGED = SESSION_DIVERGED, EXIT_RACES = 6,
       EXIT_INTERRUPTED = 130 /* replay stopped by Ctrl-C or SIGTERM (128 + SIGINT) */ };

/* Each takes the command line as main got it: argv[0] the program (which
 * `record` keeps in the recorded command line), argv[1] the subcommand's
 * name, its own words from argv[CLI_FIRST_ARG] on. Returns the exit code. */
enum { CLI_FIRST_ARG = 2 };
int cmd_record(int argc, char **argv);
int cmd_layout(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_reindex(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_sql(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_hw(int argc, char **argv);
int cmd_explore(int argc, char **argv);
int cmd_critical(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_sweep(int argc, char **argv);


/* Options (cli_opts.c): arg is `name` or `name=...`; the value of argv[*i]
 * as `--opt VALUE` (advancing *i) or `--opt=VALUE`, NULL if missing; a
 * positive count, -1 if v is not one. */
int cli_opt_is(const char *arg, const char *name);
const char *cli_opt_value(int argc, char **argv, int *i, const char *name);
int cli_opt_count(const char *v, long *out);
/* 0 when ok; else says "npurr CMD: NEED (got 'V')" and returns EXIT_USAGE:
 * how an option's setter refuses a value. */
int cli_opt_ok(const char *cmd, int ok, const char *need, const char *v);
/* cli_opt_count, saying on a bad v "npurr CMD: OPT needs a positive
 * number (got 'V')": 0, or EXIT_USAGE. */
int cli_opt_positive(const char *cmd, const char *opt, const char *v, long *out);
/* --top N as `stats` and `diff` take it (1 to 2^63 - 1) into *out: 0, or
 * EXIT_USAGE after saying why. */
int cli_opt_top(const char *cmd, const char *v, size_t *out);
/* `npurr CMD RUN` for a command with no options: the one RUN into *run
 * ("missing RUN" said when there is none). 0, CLI_HELP, or EXIT_USAGE after
 * saying why. */
int cli_one_run(const char *cmd, void (*usage)(FILE *out), int argc, char **argv,
                const char **run);
/* ana_open(run, flags, db, src) for `npurr CMD`, saying "npurr CMD:
 * why" on failure: 0 with *db (the caller closes it), or EXIT_ERROR (*db
 * NULL). */
int cli_open_run(const char *cmd, const char *run, int flags, sqlite3 **db, ana_source *src);
/* The critical-path table of RUN (ana_crit_table_get: by, top) for `npurr
 * CMD`, saying "npurr CMD: ..." on failure: 0 with *t (the caller frees
 * it), or EXIT_ERROR. src (may be NULL) as cli_open_run fills it. */
int cli_crit_table(const char *cmd, const char *run, ana_crit_by by, size_t top,
                   ana_crit_table *t, ana_source *src);

/* One option of a subcommand, for cli_parse: a flag sets *flag to 1; an
 * option with a value (`--top V` or `--top=V`) stores it in *value as
 * given, or hands it to set. */
typedef struct cli_opt {
    const char *name;            /* "--top" */
    const char *alias;           /* another spelling ("-o" of "--output"), or NULL */
    int *flag;
    const char **value;
    /* a value to check: 0, or EXIT_USAGE after saying why (v NULL: missing) */
    int (*set)(void *ctx, const char *v);
} cli_opt;

/* A subcommand's words as cli_parse takes them. */
typedef struct cli_args {
    const char *cmd;             /* "critical": every message starts "npurr critical: " */
    void (*usage)(FILE *out);
    const cli_opt *opts;
    size_t nopts;
    void *ctx;                   /* set's */
    const char **words[2];       /* where the words that are no option go, in order (NULL: none) */
    /* After "npurr CMD: " for a word past those: a format of that word, or
     * with extra_after_first of the first word and that one. */
    const char *extra;
    int extra_after_first;
    const char *unknown;         /* format of an unknown option; NULL: "unknown option '%s'" */
    /* A missing value: 0 hands NULL to set; otherwise "OPT needs a value",
     * and with CLI_MISSING_USAGE the usage too. */
    int missing_says;
    int needs_word;              /* no word at all: the usage on stderr, EXIT_USAGE */
} cli_args;
enum { CLI_MISSING_SAYS = 1, CLI_MISSING_USAGE = 2, CLI_HELP = -1 };

/* The one parser of subcommand words: from argv[CLI_FIRST_ARG], -h or
 * --help prints the usage to stdout (CLI_HELP); an option of p->opts is
 * taken; any other word starting with '-' (but "-" alone) is an unknown
 * option (said, with the usage on stderr); the rest fill p->words. Returns
 * 0, CLI_HELP, or EXIT_USAGE after saying why on stderr (with needs_word,
 * also when no word came). */
int cli_parse(const cli_args *p, int argc, char **argv);
/* `npurr CMD [options] RUN`: cli_parse with opts (set given ctx), the one
 * RUN into *run; a second word is "unexpected argument 'W' (one RUN only)",
 * none prints the usage. Returns what cli_parse does. */
int cli_parse_run(const char *cmd, void (*usage)(FILE *out), const cli_opt *opts, size_t nopts,
                  void *ctx, const char **run, int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* Measured rows for `hw --compare` and `calibrate` (measured.c). Loads the
 * timing parameters (defaults, then hw_file if not NULL) and the rows of
 * file (kernel_options: the shape of an msprof op_summary); errors printed
 * as "npurr CMD: ...". EXIT_DONE or EXIT_ERROR. */
int measured_load(const char *cmd, const char *file, const char *kernel_options,
                  const char *hw_file, fidelity_table *t, engine_hw *hw);
/* -j's value into *out (1..256); -1 with the error printed. */
/* `--plugin PATH.so` of hw --compare and calibrate (measured.c): the
 * plugin's kernels may then name rows. 0, or EXIT_ERROR after saying why
 * as "npurr CMD: ...". */
int measured_plugin(const char *cmd, const char *path);
int measured_jobs(const char *cmd, const char *v, int *out);
/* Every row of t under hw, jobs at once, a line on stderr as each run ends
 * ("npurr CMD: [k/n] ROW ..."); 1 if a row failed (res says why).
 * Rows a Ctrl-C stopped are not failures (fidelity_result.stopped; engine_pool_interrupted
 * says the command was stopped). */
int measured_run_all(const char *cmd, const fidelity_table *t, const engine_hw *hw, int jobs,
                     fidelity_result *res);
/* One line per row: measured time, npurr's and the ratio (before; and
 * after a fit when after is not NULL), a failed row's error under it. */
void measured_print(FILE *out, const fidelity_table *t, const fidelity_result *before,
                    const fidelity_result *after);

/* `npurr sql RUN` with no query: the sqlite3-shell-like prompt on db
 * (sql_shell.c). Returns the exit status. */
struct sqlite3;
int sql_shell(struct sqlite3 *db, const char *run, int csv, FILE *in, FILE *out);

/* An output file of a command (output_path.c): "-" is standard output; an
 * existing device, FIFO or socket is written in place; anything else is
 * written to a temporary file npurr creates beside the target (a symlink's
 * target, so the link stays) and renamed over it by cli_output_finish.
 * Returns the stream, or NULL with err. */
typedef struct cli_output {
    FILE *f;
    const char *path;      /* as the user gave it */
    char target[4096];     /* the file replaced on success */
    char tmp[4200];        /* the temporary file, "" when writing in place */
    unsigned mode;         /* the mode the output gets */
} cli_output;
FILE *cli_output_open(cli_output *o, const char *path, char *err, size_t errlen);
/* Closes o after the work that wrote it returned rc (0 ok, err filled
 * otherwise). On success the temporary file replaces the target; on a
 * failure only the temporary file is removed, never the path the user
 * gave (a device, a FIFO, a pre-existing file stay as they were). Returns
 * 0, or -1 with err. */
int cli_output_finish(cli_output *o, int rc, char *err, size_t errlen);

/* 0 if a command reading run_dir may write out (option names it in the
 * message): not inside the run folder, not a hard link to its files, not a
 * directory; "-" (stdout) is always fine. -1 with err: a usage error. */
int cli_output_check(const char *run_dir, const char *out, const char *option, char *err,
                     size_t errlen);
/* 0 if a command may write files into the folder dir (option names it):
 * dir is not a run folder nor inside one. -1 with err: a usage error. The
 * file check above makes the same check of its file's folder, for any run
 * folder, whether or not the command reads one (run_dir NULL). */
int cli_output_dir_check(const char *dir, const char *option, char *err, size_t errlen);

/* `--dump NAME[@RANK]=FILE.npy` of record and replay (dump.c). */
typedef struct cli_dump {
    char name[128];
    int rank;              /* 0 unless @RANK */
    const char *path;      /* points into the text parsed */
} cli_dump;
/* text parsed into *d: 0, or -1 with err (a usage error). */
int cli_dump_parse(const char *text, cli_dump *d, char *err, size_t errlen);
/* Before the run: d's rank exists among ranks and its file may be written
 * by a command of run_dir (cli_output_check; run_dir NULL: no run folder).
 * 0, or -1 with err (a usage error). */
int cli_dump_check(const cli_dump *d, const char *run_dir, int ranks, char *err, size_t errlen);
/* After the run: d's tensor (or GM allocation) written as .npy, *written
 * 1; nothing (written 0) when another process of a split run owns its
 * rank. 0, or -1 with err. */
int cli_dump_write(engine *e, const cli_dump *d, int *written, char *err, size_t errlen);

/* An integer option's value v (numbers.c): decimal digits only, within
 * lo..hi, no overflow. 0 with *out, or -1 (the caller names the option). */
int cli_parse_uint(const char *v, unsigned long long lo, unsigned long long hi,
                   unsigned long long *out);

/* The exit code of a run that ended as o (`record`, `explore`): 0, 3 for a
 * deadlock or watchdog, 4 for a failed data check, 1 otherwise. */
int cli_outcome_status(engine_outcome o, int check_failed);

#endif

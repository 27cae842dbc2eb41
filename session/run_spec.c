/*
 * run_spec.c - what decides a run, from a command line or from a run
 * folder.
 *
 * From argv the options are parsed as `npurr record` parses them
 * (run_options.c) and the command line is kept shell-quoted, as the trace
 * header records it. From a run folder the recorded command line is split
 * back into words, stripped of --hw FILE (the header has the values
 * actually used, and the file may have changed or gone since), parsed the
 * same way, and the header's config.* and hw.* are applied over it
 * (replay_config_from_meta). A kernel option whose file was copied into the
 * folder at record time is redirected there (record_inputs.c).
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder.h"
#include "session/record_inputs.h"

int run_spec_from_argv(int argc, char **argv, run_spec *spec, char *err, size_t errlen) {
    memset(spec, 0, sizeof *spec);
    if (argc < 2) {
        snprintf(err, errlen, "a run's command line needs the program and `record`");
        return SESSION_USAGE;
    }
    int rc = run_options_parse(argc, argv, RUN_OPT_OUTPUT | RUN_OPT_NO_TRACE, &spec->opts, err,
                               errlen);
    if (rc || spec->opts.help) return rc;
    spec->command_line = shell_join(argc, argv);
    if (!spec->command_line) {
        snprintf(err, errlen, "out of memory");
        return SESSION_ERROR;
    }
    return SESSION_OK;
}

int run_spec_from_words(const char *kernel, char **words, int n, run_spec *spec, char *err,
                        size_t errlen) {
    memset(spec, 0, sizeof *spec);
    char **argv = calloc((size_t)n + 6, sizeof *argv);
    if (!argv) {
        free(words);
        snprintf(err, errlen, "out of memory");
        return SESSION_ERROR;
    }
    int argc = 0;
    argv[argc++] = "npurr";
    argv[argc++] = "record";
    argv[argc++] = "-k";
    argv[argc++] = (char *)kernel;
    for (int i = 0; i < n; i++) argv[argc++] = words[i];
    argv[argc++] = "--no-trace";
    int rc = run_spec_from_argv(argc, argv, spec, err, errlen);
    if (!rc && spec->opts.help) {
        snprintf(err, errlen, "--help is not a shape");
        rc = SESSION_USAGE;
    }
    spec->words = words;   /* what the options point into, freed with the spec */
    spec->argv = argv;
    if (rc) run_spec_free(spec);
    return rc;
}

/* The recorded command line as argv (the program's word, then `record`
 * and its options), without --hw FILE. */
static int recorded_argv(const char *line, run_spec *spec, int *argc_out, char *err,
                         size_t errlen) {
    int n = shell_split(line, &spec->words);
    if (n < 0) {
        snprintf(err, errlen, "the recorded command line has malformed quoting: %s", line);
        return -1;
    }
    int start = -1;
    for (int i = 0; i < n && start < 0; i++)
        if (strcmp(spec->words[i], "record") == 0) start = i;
    if (start < 0) {
        snprintf(err, errlen, "the recorded command line is not an `npurr record` command: %s", line);
        return -1;
    }
    char **argv = spec->argv = calloc((size_t)n + 2, sizeof *argv);
    if (!argv) { snprintf(err, errlen, "out of memory"); return -1; }
    int argc = 0;
    argv[argc++] = spec->words[0];   /* argv[0]: the program's word, or `record` when the line starts there */
    argv[argc++] = spec->words[start];
    for (int i = start + 1; i < n; i++) {
        const char *a = spec->words[i];
        /* --opt=VALUE is one word, like a flag */
        int joined = strncmp(a, "--", 2) == 0 && strchr(a, '=') != NULL;
        int flag = strcmp(a, "--quiet") == 0 || strcmp(a, "--no-trace") == 0 ||
                   strcmp(a, "--progress") == 0 || a[0] != '-' || joined;
        if (strcmp(a, "--hw") == 0) { i++; continue; }
        if (strncmp(a, "--hw=", 5) == 0) continue;
        argv[argc++] = spec->words[i];
        if (!flag && i + 1 < n) argv[argc++] = spec->words[++i];
    }
    *argc_out = argc;
    return 0;
}

/* The recorded command line parsed as `record` parses it, for the kernel
 * the header names. */
static int parse_recorded(rec_reader *r, const char *dir, run_spec *spec, char *err,
                          size_t errlen) {
    const char *line = rec_reader_meta(r, "command_line");
    const char *kname = rec_reader_meta(r, "kernel");
    if (!line || !kname) {
        snprintf(err, errlen, "%s: the trace header has no %s", dir, line ? "kernel" : "command_line");
        return -1;
    }
    char why[ENGINE_ERRLEN];
    int argc = 0;
    if (recorded_argv(line, spec, &argc, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", dir, why);
        return -1;
    }
    run_options *ro = &spec->opts;
    if (run_options_parse(argc, spec->argv, RUN_OPT_OUTPUT | RUN_OPT_NO_TRACE, ro, why, sizeof why)) {
        snprintf(err, errlen, "%s: the recorded command line does not parse: %s", dir, why);
        return -1;
    }
    if (strcmp(ro->kernel->name, kname) != 0) {
        snprintf(err, errlen, "%s: the header says kernel %s but its command line runs %s", dir,
                 kname, ro->kernel->name);
        return -1;
    }
    spec->command_line = strdup(line);
    if (!spec->command_line) { snprintf(err, errlen, "out of memory"); return -1; }
    return 0;
}

int run_spec_from_run(rec_reader *r, const char *dir, run_spec *spec, char *note, size_t notelen,
                      char *err, size_t errlen) {
    memset(spec, 0, sizeof *spec);
    if (note && notelen) note[0] = 0;
    if (parse_recorded(r, dir, spec, err, errlen)) return SESSION_ERROR;
    char why[ENGINE_ERRLEN];
    if (record_inputs_redirect(r, dir, &spec->opts, spec->inputs, why, sizeof why) ||
        replay_config_from_meta(r, &spec->opts.config, note, notelen, why, sizeof why)) {
        snprintf(err, errlen, "%s: %s", dir, why);
        return SESSION_ERROR;
    }
    return SESSION_OK;
}

void run_spec_free(run_spec *spec) {
    for (size_t i = 0; i < sizeof spec->inputs / sizeof spec->inputs[0]; i++) free(spec->inputs[i]);
    free(spec->command_line);
    free(spec->argv);
    free(spec->words);
    memset(spec, 0, sizeof *spec);
}

/*
 * run_spec.c - what decides a run, from a command line or from a run
 * folder.
 *
 * From argv the options are parsed as `npurr record` parses them
 * (run_options.c) and the command line is kept shell-quoted for people to
 * read. What rebuilds the run is recorded as typed header keys instead
 * (run_spec_meta_build): spec_version, the kernel's plugin (plugin.name,
 * .file, .sha256, .abi, .source), every kernel option (opt.NAME; an input
 * file's value becomes npy:{RUN}/inputs/..., record_inputs.c), beside the
 * recorder's config.* and hw.* (rec_meta_config.c). From a run folder the
 * spec is rebuilt from those keys alone: the plugin from the folder's copy,
 * checked against its SHA-256, the options from opt.*, the configuration
 * from config.* and hw.*, so neither a --hw file nor an input file nor the
 * user's plugin needs to exist any more. Runs recorded before the typed
 * keys (no spec_version) are rebuilt from their recorded command line, as
 * they always were, with config.* and hw.* over it.
 */
#include <stdlib.h>
#include <string.h>

#include "recorder/recorder.h"
#include "session/record_inputs.h"

/* The version of the typed keys this file writes and reads. */
#define SPEC_VERSION "1"

/* ---- the owned key list ---- */

static int meta_push(char ***meta, size_t *n, const char *key, const char *value) {
    char **grown = realloc(*meta, (*n + 3) * sizeof *grown);
    if (!grown) return -1;
    *meta = grown;
    grown[*n] = strdup(key);
    grown[*n + 1] = strdup(value ? value : "");
    grown[*n + 2] = NULL;
    if (!grown[*n] || !grown[*n + 1]) {
        free(grown[*n]);
        free(grown[*n + 1]);
        grown[*n] = NULL;
        return -1;
    }
    *n += 2;
    return 0;
}

static void meta_free(char **meta) {
    for (size_t i = 0; meta && meta[i]; i++) free(meta[i]);
    free(meta);
}

static const char *meta_get(char **meta, const char *key) {
    for (size_t i = 0; meta && meta[i]; i += 2)
        if (strcmp(meta[i], key) == 0) return meta[i + 1];
    return NULL;
}

/* The plugin's keys: where the run keeps it and how to know it. */
static int push_plugin(char ***meta, size_t *n, const kernel_plugin *p) {
    const char *base = strrchr(p->path, '/');
    base = base ? base + 1 : p->path;
    char file[4200], abi[32];
    snprintf(file, sizeof file, "plugin/%s", base);
    snprintf(abi, sizeof abi, "%u.%u", p->abi_major, p->abi_minor);
    return meta_push(meta, n, "plugin.name", p->name) ||
           meta_push(meta, n, "plugin.file", file) ||
           meta_push(meta, n, "plugin.sha256", p->sha256) ||
           meta_push(meta, n, "plugin.abi", abi) ||
           meta_push(meta, n, "plugin.source", p->path);
}

/* spec->meta from spec->opts: the keys record writes into the header. */
static int run_spec_meta_build(run_spec *spec, char *err, size_t errlen) {
    const run_options *ro = &spec->opts;
    record_inputs inputs;
    record_inputs_plan(ro, &inputs);
    size_t n = 0;
    int rc = meta_push(&spec->meta, &n, "spec_version", SPEC_VERSION);
    if (!rc && ro->plugin) rc = push_plugin(&spec->meta, &n, ro->plugin);
    for (int i = 0; !rc && i < ro->kopts.count; i++) {
        char key[128];
        snprintf(key, sizeof key, "opt.%s", ro->kopts.names[i]);
        const record_input *in = record_inputs_of(&inputs, i);
        rc = meta_push(&spec->meta, &n, key, in ? in->value : ro->kopts.values[i]);
    }
    if (rc) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    spec->plugin_file = meta_get(spec->meta, "plugin.file");
    return 0;
}

/* ---- from a command line ---- */

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
    if (run_spec_meta_build(spec, err, errlen)) {
        run_spec_free(spec);
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

/* ---- from a run folder, recorded with the typed keys ---- */

/* The run's plugin, from its copy in dir: the copy must be what the run
 * recorded (its SHA-256), then it is loaded like --plugin. */
static int load_run_plugin(rec_reader *r, const char *dir, run_spec *spec, char *err,
                           size_t errlen) {
    const char *file = rec_reader_meta(r, "plugin.file");
    if (!file) return 0;
    const char *want = rec_reader_meta(r, "plugin.sha256");
    const char *name = rec_reader_meta(r, "plugin.name");
    if (!want || strlen(want) != 64 || strstr(file, "..") || file[0] == '/') {
        snprintf(err, errlen, "the run's plugin keys are damaged (plugin.file '%s', "
                 "plugin.sha256 '%s')", file, want ? want : "(missing)");
        return -1;
    }
    char path[4400], sha[65], why[256];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    if (engine_sha256_file(path, sha, why, sizeof why)) {
        snprintf(err, errlen, "the run's plugin %s: %s: %s (the run was recorded with it; a "
                 "run folder must keep its plugin/ folder)", name ? name : "", path, why);
        return -1;
    }
    if (strcmp(sha, want) != 0) {
        snprintf(err, errlen, "%s is not the plugin this run recorded: its SHA-256 is %.16s..., "
                 "the run's is %.16s... (the copy was replaced after the run; restore it or "
                 "record the run again)", path, sha, want);
        return -1;
    }
    const kernel_plugin *p;
    if (kernels_load_plugin(path, &p, err, errlen)) return -1;
    spec->opts.plugin = p;
    return 0;
}

/* The kernel's options from opt.* (inputs pointed at the copies in dir); a
 * key the kernel does not declare is an error, an option the run lacks
 * keeps its default and is noted. */
static int read_options(rec_reader *r, const char *dir, run_spec *spec, char *note,
                        size_t notelen, char *err, size_t errlen) {
    run_options *ro = &spec->opts;
    kopts_init(&ro->kopts, ro->kernel);
    for (int i = 0; i < ro->kopts.count; i++) {
        char key[128];
        snprintf(key, sizeof key, "opt.%s", ro->kopts.names[i]);
        const char *v = rec_reader_meta(r, key);
        if (!v) {
            size_t used = note ? strlen(note) : 0;
            if (note && notelen > used)
                snprintf(note + used, notelen - used, "%s%s", used ? ", " : "", key);
            continue;
        }
        /* the spec owns its values: the reader may close before the spec is used */
        spec->inputs[i] = strstr(v, RECORD_RUN_PLACEHOLDER) ? record_inputs_in_run(v, dir)
                                                             : strdup(v);
        if (!spec->inputs[i]) { snprintf(err, errlen, "out of memory"); return -1; }
        ro->kopts.values[i] = spec->inputs[i];
    }
    const char *key, *value;
    for (size_t i = 0; (key = rec_reader_meta_at(r, i, &value)) != NULL; i++) {
        if (strncmp(key, "opt.", 4) != 0) continue;
        int known = 0;
        for (int j = 0; j < ro->kopts.count && !known; j++)
            known = strcmp(ro->kopts.names[j], key + 4) == 0;
        if (!known) {
            snprintf(err, errlen, "the run has option --%s, which -k %s of this npurr does not "
                     "take", key + 4, ro->kernel->name);
            return -1;
        }
    }
    return 0;
}

/* spec->meta as the run recorded it (the keys run_spec_meta_build wrote). */
static int copy_recorded_meta(rec_reader *r, run_spec *spec, char *err, size_t errlen) {
    size_t n = 0;
    const char *key, *value;
    for (size_t i = 0; (key = rec_reader_meta_at(r, i, &value)) != NULL; i++) {
        if (strcmp(key, "spec_version") != 0 && strncmp(key, "plugin.", 7) != 0 &&
            strncmp(key, "opt.", 4) != 0)
            continue;
        if (meta_push(&spec->meta, &n, key, value)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    spec->plugin_file = meta_get(spec->meta, "plugin.file");
    return 0;
}

static int from_typed_keys(rec_reader *r, const char *dir, run_spec *spec, char *note,
                           size_t notelen, char *err, size_t errlen) {
    const char *version = rec_reader_meta(r, "spec_version");
    if (strcmp(version, SPEC_VERSION) != 0) {
        snprintf(err, errlen, "the run's spec_version is %s; this npurr reads %s (use the npurr "
                 "that recorded it)", version, SPEC_VERSION);
        return -1;
    }
    const char *kname = rec_reader_meta(r, "kernel");
    const char *line = rec_reader_meta(r, "command_line");
    if (!kname || !*kname) {
        snprintf(err, errlen, "the trace header has no kernel");
        return -1;
    }
    if (load_run_plugin(r, dir, spec, err, errlen)) return -1;
    run_options *ro = &spec->opts;
    ro->kernel = kernels_find(kname);
    if (!ro->kernel) {
        snprintf(err, errlen, "the run's kernel %s is not one this npurr has", kname);
        return -1;
    }
    if (kernels_plugin_of(ro->kernel) != ro->plugin) {
        snprintf(err, errlen, "the run's kernel %s comes from %s, not from %s", kname,
                 ro->plugin ? "a built-in kernel" : "another plugin",
                 ro->plugin ? "its plugin" : "the built-in kernels");
        return -1;
    }
    if (read_options(r, dir, spec, note, notelen, err, errlen) ||
        copy_recorded_meta(r, spec, err, errlen))
        return -1;
    spec->command_line = strdup(line ? line : "");
    if (!spec->command_line) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

/* ---- from a run folder, recorded before the typed keys ---- */

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
                   strcmp(a, "--progress") == 0 || strcmp(a, "--force") == 0 || a[0] != '-' ||
                   joined;
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
static int from_command_line(rec_reader *r, const char *dir, run_spec *spec, char *err,
                             size_t errlen) {
    const char *line = rec_reader_meta(r, "command_line");
    const char *kname = rec_reader_meta(r, "kernel");
    if (!line || !kname) {
        snprintf(err, errlen, "the trace header has no %s", line ? "kernel" : "command_line");
        return -1;
    }
    char why[2048];
    int argc = 0;
    if (recorded_argv(line, spec, &argc, why, sizeof why)) {
        snprintf(err, errlen, "%s", why);
        return -1;
    }
    run_options *ro = &spec->opts;
    if (run_options_parse(argc, spec->argv, RUN_OPT_OUTPUT | RUN_OPT_NO_TRACE, ro, why, sizeof why)) {
        snprintf(err, errlen, "the recorded command line does not parse: %s", why);
        return -1;
    }
    if (strcmp(ro->kernel->name, kname) != 0) {
        snprintf(err, errlen, "the header says kernel %s but its command line runs %s", kname,
                 ro->kernel->name);
        return -1;
    }
    spec->command_line = strdup(line);
    if (!spec->command_line) { snprintf(err, errlen, "out of memory"); return -1; }
    return record_inputs_redirect(r, dir, ro, spec->inputs, err, errlen);
}

int run_spec_from_run(rec_reader *r, const char *dir, run_spec *spec, char *note, size_t notelen,
                      char *err, size_t errlen) {
    memset(spec, 0, sizeof *spec);
    if (note && notelen) note[0] = 0;
    char why[9000] = "";   /* room for a path in the folder and the reason */
    int typed = rec_reader_meta(r, "spec_version") != NULL;
    int rc = typed ? from_typed_keys(r, dir, spec, note, notelen, why, sizeof why)
                   : from_command_line(r, dir, spec, why, sizeof why);
    rec_meta_config_read how;
    if (!rc) rc = rec_meta_get_config(rec_reader_meta_get, r, &spec->opts.config, &how, why,
                                      sizeof why);
    if (rc) {
        snprintf(err, errlen, "%s: %s", dir, why);
        run_spec_free(spec);
        return SESSION_ERROR;
    }
    if (note && notelen && how.missing_hw[0]) {
        size_t used = strlen(note);
        snprintf(note + used, notelen - used, "%s%s", used ? ", " : "", how.missing_hw);
    }
    return SESSION_OK;
}

rec_run_info run_spec_info(const run_spec *spec, const engine *e) {
    const run_options *ro = &spec->opts;
    return (rec_run_info){.kernel = ro->kernel->name,
                          .command_line = spec->command_line,
                          .config = &ro->config,
                          .cores_per_rank = engine_cores_per_rank(e),
                          .num_aic = engine_num_aic(e),
                          .num_aiv = engine_num_aiv(e),
                          .spec_meta = (const char *const *)spec->meta};
}

void run_spec_free(run_spec *spec) {
    for (size_t i = 0; i < sizeof spec->inputs / sizeof spec->inputs[0]; i++) free(spec->inputs[i]);
    free(spec->command_line);
    free(spec->argv);
    free(spec->words);
    meta_free(spec->meta);
    memset(spec, 0, sizeof *spec);
}

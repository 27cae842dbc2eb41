/*
 * cli_opts.c - the words of a subcommand as every subcommand takes them:
 * `--opt VALUE` or `--opt=VALUE`, flags, counts that must be positive, and
 * cli_parse, the one loop over them (help, options from a table, unknown
 * options, the words that are no option), so each command says only what
 * its options are and what their values may be.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_opt_is(const char *arg, const char *name) {
    size_t n = strlen(name);
    return !strncmp(arg, name, n) && (arg[n] == 0 || arg[n] == '=');
}

const char *cli_opt_value(int argc, char **argv, int *i, const char *name) {
    size_t n = strlen(name);
    if (!strncmp(argv[*i], name, n) && argv[*i][n] == '=') return argv[*i] + n + 1;
    if (!strcmp(argv[*i], name)) {
        if (*i + 1 >= argc) return NULL;
        return argv[++*i];
    }
    return NULL;
}

int cli_opt_ok(const char *cmd, int ok, const char *need, const char *v) {
    if (ok) return 0;
    fprintf(stderr, "npurr %s: %s (got '%s')\n", cmd, need, v ? v : "");
    return EXIT_USAGE;
}

int cli_opt_positive(const char *cmd, const char *opt, const char *v, long *out) {
    char need[64];
    snprintf(need, sizeof need, "%s needs a positive number", opt);
    return cli_opt_ok(cmd, !cli_opt_count(v, out), need, v);
}

int cli_opt_top(const char *cmd, const char *v, size_t *out) {
    unsigned long long n;
    int ok = !cli_parse_uint(v, 1, SIZE_MAX / 2, &n);
    if (ok) *out = (size_t)n;
    return cli_opt_ok(cmd, ok, "--top needs a positive number below 2^63", v);
}

int cli_opt_count(const char *v, long *out) {
    unsigned long long n;
    if (!v || cli_parse_uint(v, 1, LONG_MAX, &n)) return -1;
    *out = (long)n;
    return 0;
}

/* The option of p that a names (as itself or before '='), or NULL. */
static const cli_opt *find_opt(const cli_args *p, const char *a, const char **name) {
    for (size_t k = 0; k < p->nopts; k++) {
        const cli_opt *o = &p->opts[k];
        int flag = o->flag != NULL;
        if (flag ? !strcmp(a, o->name) : cli_opt_is(a, o->name)) return *name = o->name, o;
        if (o->alias && (flag ? !strcmp(a, o->alias) : cli_opt_is(a, o->alias)))
            return *name = o->alias, o;
    }
    return NULL;
}

/* A word that is no option: the next free place, or the message. */
static int take_word(const cli_args *p, const char *a) {
    for (size_t w = 0; w < sizeof p->words / sizeof p->words[0] && p->words[w]; w++)
        if (!*p->words[w]) {
            *p->words[w] = a;
            return 0;
        }
    fprintf(stderr, "npurr %s: ", p->cmd);
    if (p->extra_after_first) fprintf(stderr, p->extra, *p->words[0], a);
    else fprintf(stderr, p->extra, a);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

int cli_parse(const cli_args *p, int argc, char **argv) {
    for (int i = CLI_FIRST_ARG; i < argc; i++) {
        const char *a = argv[i], *name = NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            p->usage(stdout);
            return CLI_HELP;
        }
        const cli_opt *o = find_opt(p, a, &name);
        if (o && o->flag) {
            *o->flag = 1;
            continue;
        }
        if (o) {
            const char *v = cli_opt_value(argc, argv, &i, name);
            if (!v && p->missing_says) {
                fprintf(stderr, "npurr %s: %s needs a value\n", p->cmd, a);
                if (p->missing_says == CLI_MISSING_USAGE) p->usage(stderr);
                return EXIT_USAGE;
            }
            if (o->value) *o->value = v;
            else if (o->set(p->ctx, v)) return EXIT_USAGE;
            continue;
        }
        if (a[0] == '-' && a[1]) {
            fprintf(stderr, "npurr %s: ", p->cmd);
            fprintf(stderr, p->unknown ? p->unknown : "unknown option '%s'", a);
            fputc('\n', stderr);
            p->usage(stderr);
            return EXIT_USAGE;
        }
        if (take_word(p, a)) return EXIT_USAGE;
    }
    if (p->needs_word && !*p->words[0]) {
        p->usage(stderr);
        return EXIT_USAGE;
    }
    return 0;
}

int cli_parse_run(const char *cmd, void (*usage)(FILE *out), const cli_opt *opts, size_t nopts,
                  void *ctx, const char **run, int argc, char **argv) {
    cli_args p = {.cmd = cmd, .usage = usage, .opts = opts, .nopts = nopts, .ctx = ctx,
                  .words = {run}, .extra = "unexpected argument '%s' (one RUN only)",
                  .needs_word = 1};
    return cli_parse(&p, argc, argv);
}

int cli_one_run(const char *cmd, void (*usage)(FILE *out), int argc, char **argv,
                const char **run) {
    *run = NULL;
    cli_args p = {.cmd = cmd, .usage = usage, .words = {run},
                  .extra = "one RUN expected, got %s and %s", .extra_after_first = 1,
                  .unknown = "unknown option %s"};
    int parsed = cli_parse(&p, argc, argv);
    if (parsed || *run) return parsed;
    fprintf(stderr, "npurr %s: missing RUN\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}

int cli_open_run(const char *cmd, const char *run, int flags, sqlite3 **db, ana_source *src) {
    char err[4096];
    *db = NULL;
    if (!ana_open(run, flags, db, src, err, sizeof err)) return 0;
    fprintf(stderr, "npurr %s: %s\n", cmd, err);
    return EXIT_ERROR;
}

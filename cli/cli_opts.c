/*
 * cli_opts.c - option values as every subcommand takes them: `--opt VALUE`
 * or `--opt=VALUE`, counts that must be positive; a CSV field as RFC 4180
 * quotes it. Shared by the commands that came with the critical path
 * (critical, whatif, sweep).
 */
#include <limits.h>
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

int cli_opt_count(const char *v, long *out) {
    unsigned long long n;
    if (!v || cli_parse_uint(v, 1, LONG_MAX, &n)) return -1;
    *out = (long)n;
    return 0;
}

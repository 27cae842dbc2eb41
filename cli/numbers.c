/*
 * numbers.c - cli_parse_uint: the one way the subcommands read an integer
 * option (--top, --break-at, --checkpoint-every, explore's --seed).
 *
 * strtoul alone accepts a leading '-' (and wraps it), leading spaces, and
 * saturates an overflow to its maximum without a word: `--top
 * 18446744073709551616` used to be taken as "all". Here only decimal
 * digits pass, and a value past hi (or past 2^64-1) is refused.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "cli.h"

int cli_parse_uint(const char *v, unsigned long long lo, unsigned long long hi,
                   unsigned long long *out) {
    if (!v || !isdigit((unsigned char)v[0])) return -1;
    char *end = NULL;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end || x < lo || x > hi) return -1;
    *out = x;
    return 0;
}

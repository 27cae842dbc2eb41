/*
 * ana_units.c - virtual time as people read and write it.
 *
 * The index stores integer picoseconds; reports print them in the largest
 * unit that keeps the number at or above 1 (ps, ns, us, ms, s), and the
 * command line accepts the same units back (`export --from 10us`). Rank
 * lists ("0,3-5") select processes in `export --ranks`.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/derive.h"

void ana_format_ps(double ps, char *buf, size_t len) {
    static const struct { const char *unit; double scale; } units[] = {
        {"s", 1e12}, {"ms", 1e9}, {"us", 1e6}, {"ns", 1e3},
    };
    if (ps == 0) {
        snprintf(buf, len, "0 ns");
        return;
    }
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (fabs(ps) >= units[i].scale) {
            snprintf(buf, len, "%.2f %s", ps / units[i].scale, units[i].unit);
            return;
        }
    }
    snprintf(buf, len, "%.0f ps", ps);
}

int ana_parse_time(const char *text, uint64_t *ps, char *err, size_t errlen) {
    static const struct { const char *unit; double scale; } units[] = {
        {"", 1}, {"ps", 1}, {"ns", 1e3}, {"us", 1e6}, {"ms", 1e9}, {"s", 1e12},
    };
    if (!text || !*text) {
        ana_err(err, errlen, "empty time: give picoseconds or a number with ps, ns, us, ms or s");
        return -1;
    }
    errno = 0;
    char *end = NULL;
    double v = strtod(text, &end);
    if (end == text || errno != 0 || !(v >= 0) || isinf(v)) {
        ana_err(err, errlen, "bad time '%s': expected a non-negative number with an optional "
                "unit (ps, ns, us, ms, s), e.g. 10us", text);
        return -1;
    }
    while (isspace((unsigned char)*end)) end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].unit) == 0) {
            double p = v * units[i].scale;
            if (p > 1.8e19) {
                ana_err(err, errlen, "time '%s' is too large", text);
                return -1;
            }
            *ps = (uint64_t)llround(p);
            return 0;
        }
    }
    ana_err(err, errlen, "bad time unit in '%s': use ps, ns, us, ms or s (plain numbers are ps)",
            text);
    return -1;
}

static int parse_uint(const char **p, unsigned long *out) {
    if (!isdigit((unsigned char)**p)) return -1;
    char *end;
    errno = 0;
    *out = strtoul(*p, &end, 10);
    if (errno) return -1;
    *p = end;
    return 0;
}

int ana_parse_ranks(const char *text, uint8_t *bitmap, size_t nbits, char *err,
                    size_t errlen) {
    if (bitmap) memset(bitmap, 0, (nbits + 7) / 8);
    const char *p = text ? text : "";
    if (!*p) {
        ana_err(err, errlen, "empty rank list: expected e.g. 0,3-5");
        return -1;
    }
    for (;;) {
        unsigned long lo, hi;
        if (parse_uint(&p, &lo) != 0) goto bad;
        hi = lo;
        if (*p == '-') {
            p++;
            if (parse_uint(&p, &hi) != 0 || hi < lo) goto bad;
        }
        if (!bitmap) {
            /* syntax only: which ranks exist is the run's to say */
        } else if (hi >= nbits) {
            ana_err(err, errlen, "rank %lu in '%s' does not exist: the run has %zu ranks (0-%zu)",
                    hi, text, nbits, nbits ? nbits - 1 : 0);
            return -1;
        }
        for (unsigned long r = lo; bitmap && r <= hi; r++)
            bitmap[r / 8] |= (uint8_t)(1u << (r % 8));
        if (*p == '\0') return 0;
        if (*p != ',') goto bad;
        p++;
    }
bad:
    ana_err(err, errlen, "bad rank list '%s': expected ranks and ranges like 0,3-5", text);
    return -1;
}

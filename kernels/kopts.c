/*
 * kopts.c - typed access to a kernel's parsed options (kernels.h).
 *
 * The CLI hands a kernel its options as name/value strings (so a recorded
 * command line is all replay needs); kernels read them through these
 * accessors, which turn a malformed value into a message naming the option.
 * Integers accept a binary size suffix (k, m, g = 2^10, 2^20, 2^30) because
 * buffer sizes (--staging-bytes 64k, --ring-bytes 1m) are the common case.
 */
#include "kernels.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *find(const kernel_opts *o, const char *name) {
    for (int i = 0; i < o->count && i < 64; i++)
        if (o->names[i] && strcmp(o->names[i], name) == 0) return o->values[i];
    return NULL;
}

/* The value of a typed option, or NULL with err when it has none. */
static const char *typed_value(const kernel_opts *o, const char *name, char *err, size_t errlen) {
    const char *v = find(o, name);
    if (!v) snprintf(err, errlen, "--%s: option has no value", name);
    return v;
}

int kopt_str(const kernel_opts *o, const char *name, const char **out) {
    const char *v = find(o, name);
    *out = v;
    return v ? 0 : -1;
}

int kopt_i64(const kernel_opts *o, const char *name, int64_t *out, char *err, size_t errlen) {
    const char *v = typed_value(o, name, err, errlen);
    if (!v) return -1;
    char *end = NULL;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (errno || end == v) {
        snprintf(err, errlen, "--%s: '%s' is not an integer", name, v);
        return -1;
    }
    int shift = 0;
    if (*end == 'k' || *end == 'K') shift = 10;
    else if (*end == 'm' || *end == 'M') shift = 20;
    else if (*end == 'g' || *end == 'G') shift = 30;
    if (shift) end++;
    if (*end != '\0') {
        snprintf(err, errlen, "--%s: '%s' is not an integer (optional suffix k, m or g)", name, v);
        return -1;
    }
    if (shift && (x > (INT64_MAX >> shift) || x < (INT64_MIN >> shift))) {
        snprintf(err, errlen, "--%s: '%s' is out of range", name, v);
        return -1;
    }
    *out = (int64_t)x * ((int64_t)1 << shift);
    return 0;
}

int kopt_f64(const kernel_opts *o, const char *name, double *out, char *err, size_t errlen) {
    const char *v = typed_value(o, name, err, errlen);
    if (!v) return -1;
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end != '\0' || !isfinite(x)) {
        snprintf(err, errlen, "--%s: '%s' is not a number", name, v);
        return -1;
    }
    *out = x;
    return 0;
}

int kopt_i64_range(const kernel_opts *o, const char *name, int64_t lo, int64_t hi, int64_t *out,
                   char *err, size_t errlen) {
    if (kopt_i64(o, name, out, err, errlen) != 0) return -1;
    if (*out < lo || *out > hi) {
        /* Echo what the user typed: "3g" read as 3221225472 says why. */
        char typed[64];
        snprintf(typed, sizeof typed, "%lld", (long long)*out);
        const char *v = find(o, name);
        if (v && strcmp(v, typed) != 0)
            snprintf(err, errlen, "--%s %s (= %lld): must be between %lld and %lld", name, v,
                     (long long)*out, (long long)lo, (long long)hi);
        else
            snprintf(err, errlen, "--%s %lld: must be between %lld and %lld", name,
                     (long long)*out, (long long)lo, (long long)hi);
        return -1;
    }
    return 0;
}

void kopts_init(kernel_opts *o, const kernel_desc *d) {
    memset(o, 0, sizeof *o);
    for (const kernel_option *opt = d->options; opt && opt->name && o->count < 64; opt++) {
        o->names[o->count] = opt->name;
        o->values[o->count] = opt->default_value;
        o->count++;
    }
}

int kopts_set(kernel_opts *o, const char *name, const char *value) {
    for (int i = 0; i < o->count; i++)
        if (strcmp(o->names[i], name) == 0) {
            o->values[i] = value;
            return 0;
        }
    return -1;
}

/*
 * kit_options.c - reading the options the MoE kernels share (kit.h).
 *
 * The entries are declared by the KIT_OPT_* macros in every kernel's option
 * table; this file reads them once for all kernels, with the same messages
 * (they name the option and the range). What differs between kernels, the
 * limits and the list of faults, is passed in.
 */
#include "kit.h"

#include <string.h>

#include "kernels.h"
#include "routing.h"

int kit_read_str(const kernel_opts *o, const char *name, const char **out, char *err,
                 size_t errlen) {
    if (kopt_str(o, name, out) != 0 || !*out) {
        snprintf(err, errlen, "--%s: option has no value", name);
        return -1;
    }
    return 0;
}

int kit_read_moe(const kernel_opts *o, int num_ranks, const kit_moe_limits *lim, kit_moe *m,
                 char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    int64_t v;
    if (lim->tokens) {
        if (kopt_i64_range(o, "tokens", 1, lim->tokens, &v, err, errlen)) return -1;
        m->tokens = (int)v;
    }
    if (kopt_i64_range(o, "hidden", 1, lim->hidden, &v, err, errlen)) return -1;
    m->hidden = (int)v;
    if (kopt_i64_range(o, "experts", 1, lim->experts, &v, err, errlen)) return -1;
    m->experts = (int)v;
    if (routing_check_experts(m->experts, num_ranks, err, errlen)) return -1;
    m->local_experts = m->experts / num_ranks;
    if (kopt_i64_range(o, "topk", 1, lim->topk, &v, err, errlen)) return -1;
    m->topk = (int)v;
    if (routing_check_topk(m->topk, m->experts, err, errlen)) return -1;
    if (lim->rows && (int64_t)m->tokens * m->topk * num_ranks > lim->rows) {
        snprintf(err, errlen, "--tokens %d x --topk %d x %d ranks: too many rows for int32 tables",
                 m->tokens, m->topk, num_ranks);
        return -1;
    }
    return 0;
}

int kit_read_routing(const kernel_opts *o, int num_ranks, routing_spec *spec, char *err,
                     size_t errlen) {
    const char *s;
    if (kit_read_str(o, "routing", &s, err, errlen)) return -1;
    return routing_parse(s, spec, err, errlen) || routing_check_ranks(spec, num_ranks, err, errlen)
               ? -1 : 0;
}

int kit_read_seed(const kernel_opts *o, uint64_t *seed, char *err, size_t errlen) {
    int64_t v;
    if (kopt_i64(o, "data-seed", &v, err, errlen)) return -1;
    *seed = (uint64_t)v;
    return 0;
}

/* "none or a", "none, a or b": the faults as the message lists them. */
static void list_faults(const char *const *faults, char *out, size_t outlen) {
    int n = 0;
    while (faults[n]) n++;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        size_t used = strlen(out);
        const char *sep = i == 0 ? "" : i == n - 1 ? " or " : ", ";
        snprintf(out + used, outlen - used, "%s%s", sep, faults[i]);
    }
}

int kit_read_inject(const kernel_opts *o, const char *const *faults, int *which, char *err,
                    size_t errlen) {
    const char *s;
    if (kit_read_str(o, "inject", &s, err, errlen)) return -1;
    for (int i = 0; faults[i]; i++)
        if (strcmp(s, faults[i]) == 0) {
            *which = i;
            return 0;
        }
    char expected[256];
    list_faults(faults, expected, sizeof expected);
    snprintf(err, errlen, "--inject %s: unknown fault (expected %s)", s, expected);
    return -1;
}

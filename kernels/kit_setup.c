/*
 * kit_setup.c - the scaffolding every kernel's setup and shape share
 * (kit.h): the host state's allocation and hand-over, the one-node
 * topology check and the UB-size check.
 */
#include "kit.h"

#include <stdarg.h>
#include <stdlib.h>

void *kit_state_new(size_t bytes, const char *owner, void **state, char *err, size_t errlen) {
    *state = NULL;
    void *st = calloc(1, bytes);
    if (!st) snprintf(err, errlen, "%s: out of host memory", owner);
    return st;
}

int kit_setup_finish(int failed, void *st, void (*destroy)(void *), void **state) {
    if (failed) {
        destroy(st);
        return -1;
    }
    *state = st;
    return 0;
}

int kit_check_one_node(const char *kernel, const char *why, int nodes, int npus_per_node,
                       int max_ranks, char *err, size_t errlen) {
    if (nodes != 1) {
        snprintf(err, errlen, "%s %s: --nodes must be 1, got %d", kernel, why, nodes);
        return -1;
    }
    if (npus_per_node < 1 || npus_per_node > max_ranks) {
        snprintf(err, errlen, "--npus-per-node %d: %s supports 1..%d ranks", npus_per_node, kernel,
                 max_ranks);
        return -1;
    }
    return 0;
}

int kit_check_ub(uint32_t need, char *err, size_t errlen, const char *fmt, ...) {
    if (need <= UB_BYTES) return 0;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < errlen)
        snprintf(err + n, errlen - (size_t)n, ", more than the %u B UB", UB_BYTES);
    return -1;
}

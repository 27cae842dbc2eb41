/*
 * memory_check.c - refusing a run that cannot fit before anything is built.
 *
 * The kernel's options are validated against the topology and turned into
 * a memory estimate (kernel_estimate_memory, engine/kernels/estimate.c)
 * before the engine is created: a shape the kernel refuses, or one that
 * needs more memory than the machine has available, ends in milliseconds
 * with a usage error (exit 2) naming the options, the memory they need and
 * the machine's (MemTotal / MemAvailable of /proc/meminfo, else sysconf).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "session/session.h"

static void human(char *out, size_t n, uint64_t b) {
    if (b >= (1ull << 40)) snprintf(out, n, "%.1f TiB", (double)b / (double)(1ull << 40));
    else if (b >= (1ull << 30)) snprintf(out, n, "%.1f GiB", (double)b / (double)(1ull << 30));
    else snprintf(out, n, "%.1f MiB", (double)b / (double)(1ull << 20));
}

/* The machine's memory: total and what can be had now (0 if unknown). */
static void machine_memory(uint64_t *total, uint64_t *avail) {
    *total = *avail = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        unsigned long long kb;
        while (fgets(line, sizeof line, f)) {
            if (sscanf(line, "MemTotal: %llu kB", &kb) == 1) *total = kb * 1024;
            else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) *avail = kb * 1024;
        }
        fclose(f);
    }
    if (!*total) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
        if (pages > 0 && size > 0) *total = (uint64_t)pages * (uint64_t)size;
    }
}

int session_memory_check(const run_options *ro, int host_only, char *err, size_t errlen) {
    kernel_estimate est;
    char why[ENGINE_ERRLEN];
    if (kernel_estimate_memory(ro->kernel, &ro->kopts, ro->config.nodes,
                               ro->config.npus_per_node, (int)ro->config.chip,
                               (int)ro->config.payload, &est, why, sizeof why)) {
        snprintf(err, errlen, "-k %s: %s", ro->kernel->name, why);
        return -1;
    }
    uint64_t need = host_only ? est.host_bytes : est.total_bytes;
    uint64_t total, avail;
    machine_memory(&total, &avail);
    uint64_t limit = avail ? avail : total;
    if (!limit || need <= limit) return 0;
    char n[32], t[32], a[32];
    human(n, sizeof n, need);
    human(t, sizeof t, total);
    human(a, sizeof a, avail);
    snprintf(err, errlen,
             "-k %s %s: needs at least %s of memory (%s), more than this machine has "
             "(%s total, %s available); use a smaller shape",
             ro->kernel->name, est.driver, n,
             host_only ? "the routing plan the layout is computed from"
                       : "emulated GM by the layout formulas, routing plan, engine state",
             t, avail ? a : "?");
    return -1;
}

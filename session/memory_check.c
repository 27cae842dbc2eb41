/*
 * memory_check.c - refusing a run that cannot fit before anything is built.
 *
 * The kernel's options are validated against the topology and turned into
 * a memory estimate (kernel_estimate_memory, kernels/estimate.c)
 * before the engine is created: a shape the kernel refuses, or one that
 * needs more memory than the machine has available, ends in milliseconds
 * with a usage error (exit 2) naming the options, the memory they need and
 * the machine's (MemTotal / MemAvailable of /proc/meminfo, else sysconf).
 *
 * A split run (mpirun) backs only the GM of the nodes each process owns;
 * every process builds the whole plan and engine tables. So a machine
 * holding `here` of the `processes` needs here x (plan + engine + the GM
 * of the largest block of nodes): a run too big for one machine is
 * accepted when spread over enough of them.
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

int session_memory_check(const run_options *ro, int host_only, int processes, int here,
                         char *err, size_t errlen) {
    kernel_estimate est;
    npurr_topology topo;
    char why[ENGINE_ERRLEN];
    if (kernels_topology(&ro->config, &topo, why, sizeof why) ||
        kernel_estimate_memory(ro->kernel, &ro->kopts, &topo, &est, why, sizeof why)) {
        snprintf(err, errlen, "-k %s: %s", ro->kernel->name, why);
        return -1;
    }
    uint64_t need = host_only ? est.host_bytes : est.total_bytes;
    int nodes = ro->config.nodes;
    if (!host_only && processes > 1 && nodes > 0) {
        uint64_t block = (uint64_t)(nodes + processes - 1) / (uint64_t)processes;
        uint64_t one = est.host_bytes + est.engine_bytes + est.gm_bytes / (uint64_t)nodes * block;
        need = one * (uint64_t)(here > 0 ? here : 1);
    }
    uint64_t total, avail;
    machine_memory(&total, &avail);
    uint64_t limit = avail ? avail : total;
    if (!limit || need <= limit) return 0;
    char n[32], t[32], a[32];
    human(n, sizeof n, need);
    human(t, sizeof t, total);
    human(a, sizeof a, avail);
    char split[96] = "";
    if (!host_only && processes > 1)
        snprintf(split, sizeof split, ", for the %d of its %d MPI processes on this machine", here,
                 processes);
    snprintf(err, errlen,
             "-k %s %s: needs at least %s of memory (%s%s), more than this machine has "
             "(%s total, %s available); use a smaller shape%s",
             ro->kernel->name, est.driver, n,
             host_only ? "the routing plan the layout is computed from"
                       : "emulated GM by the layout formulas, routing plan, engine state",
             split, t, avail ? a : "?",
             processes > 1 ? " or spread the processes over more machines" : "");
    return -1;
}

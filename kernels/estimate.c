/*
 * estimate.c - how much memory a kernel's options imply, computed from the
 * options alone: nothing is allocated and no routing is generated.
 *
 * `record` and `layout` call kernel_estimate_memory before they build an
 * engine or a plan, so a shape that cannot fit (a million tokens on a
 * laptop, 65536^3 matmuls) is refused in milliseconds with the option that
 * drives it, instead of running for minutes or being killed. Each kernel
 * validates its options against the topology first (its own
 * *_shape_from_opts, so --nodes 1024 on a one-node kernel is refused here,
 * before the engine exists), then sums the big terms of its layout
 * formulas (the same ones `npurr layout` prints): inputs, outputs, receive
 * buffers, rings and windows over every rank, plus the host-side routing
 * plan and the engine's own per-rank state. It is a lower bound of what a
 * run holds, meant to refuse the impossible, not to budget the possible.
 *
 * Each kernel's sum is its descriptor's estimate hook, next to its layout
 * (the same formulas); this file adds the engine's own state and is the
 * one function the CLI's memory check reads. With payload
 * references (the default) the rows that are only moved cost no pages:
 * GM counts what is written literally (tables, outputs computed by vector or
 * cube, workspaces), and a ring record that mixes a payload row with
 * metadata costs the page its metadata touches. `npurr layout` prints it
 * as the expected resident memory.
 */
#include "kernels.h"
#include "kit.h"

#include <stdio.h>
#include <string.h>

/* The engine's own state per rank (cores, coroutine stacks, queues),
 * measured with `record -k matmul-reduce-scatter --nodes 64 --no-trace`:
 * 512 ranks hold about 160 MB before the kernel allocates anything. */
#define ENGINE_BYTES_PER_RANK (320ull << 10)

int kernel_estimate_memory(const kernel_desc *k, const kernel_opts *o, const npurr_topology *topo,
                           kernel_estimate *est, char *err, size_t errlen) {
    memset(est, 0, sizeof *est);
    est->engine_bytes =
        (uint64_t)topo->nodes * (uint64_t)topo->npus_per_node * ENGINE_BYTES_PER_RANK;
    if (k->estimate) {
        if (k->estimate(o, topo, est, err, errlen)) return -1;
    } else {
        /* A kernel without an estimator: only the engine's own state is known. */
        snprintf(est->driver, sizeof est->driver, "--nodes %d --npus-per-node %d", topo->nodes,
                 topo->npus_per_node);
    }
    est->total_bytes = est->gm_bytes + est->host_bytes + est->engine_bytes;
    return 0;
}

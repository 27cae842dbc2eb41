/*
 * ana_crit_classes.c - what each class of the critical path is, and which
 * timing parameters make it twice as fast.
 *
 * One table, read by `npurr whatif` (which scales these hw keys in a copy
 * of the recorded configuration and re-runs it) and by the help texts. A
 * bandwidth doubles, a latency or a per-operation cost halves; a class
 * made of several costs (the scalar unit's issue, GM reads and writes, RDMA
 * posts) has all of them halved at once. Jitter, launch, blocked and idle
 * are not resources: nothing makes them faster.
 */
#include <string.h>

#include "analysis/critical/critical.h"

typedef struct class_info {
    const char *name;
    const char *what;
    ana_whatif_knob knobs[5];
} class_info;

static const class_info classes[] = {
    {"hbm", "HBM bandwidth of a rank", {{"hbm_gbytes_per_s", 2}, {NULL, 0}}},
    {"mte", "a core's MTE queue: its bandwidth (to its own GM and to a peer's) and the GM "
     "access latency",
     {{"mte_bytes_per_cycle", 2}, {"mte_hccs_bytes_per_cycle", 2}, {"mte_latency_ns", 0.5},
      {NULL, 0}}},
    {"hccs", "HCCS bandwidth: a peer link's, and the port that carries all of an NPU's links "
     "(its bandwidth and its cost per transfer)",
     {{"hccs_link_gbytes_per_s", 2}, {"hccs_port_gbytes_per_s", 2}, {"hccs_transfer_ns", 0.5},
      {NULL, 0}}},
    {"hccs_latency", "HCCS one-way latency", {{"hccs_latency_ns", 0.5}, {NULL, 0}}},
    {"nic", "a RoCE NIC (tx or rx): its bandwidth, its cost per message, and its share of the "
     "spine for RDMA off its plane",
     {{"roce_gbytes_per_s", 2}, {"nic_message_ns", 0.5}, {"roce_cross_plane_gbytes_per_s", 2},
      {NULL, 0}}},
    {"rdma_latency", "RDMA wire latency (writes and their acks)",
     {{"rdma_latency_ns", 0.5}, {NULL, 0}}},
    {"scalar", "a core's scalar work: API issue, GM reads and writes, RDMA posts",
     {{"scalar_op_cycles", 0.5}, {"gm_read_ns", 0.5}, {"gm_write_ns", 0.5},
      {"rdma_post_ns", 0.5}, {NULL, 0}}},
    {"vector", "a core's vector unit",
     {{"ub_vector_bytes_per_cycle", 2}, {"vector_latency_cycles", 0.5}, {NULL, 0}}},
    {"cube", "a core's cube unit", {{"cube_macs_per_cycle", 2}, {NULL, 0}}},
    {"aicpu", "a rank's AICPU posting RDMA operations and BatchWrite tasks",
     {{"batchwrite_task_ns", 0.5}, {NULL, 0}}},
    {"sync", "sync latency: cross-core flags, barriers, the hop from a write to its waiter",
     {{"crosscore_latency_ns", 0.5}, {"barrier_latency_ns", 0.5}, {NULL, 0}}},
    {"jitter", "seeded jitter on transfer durations (--jitter)", {{NULL, 0}}},
    {"launch", "before a core's first event", {{NULL, 0}}},
    {"blocked", "a wait that never ended (deadlock, watchdog)", {{NULL, 0}}},
    {"idle", "after the event that ended the run", {{NULL, 0}}},
};

static const class_info *find(const char *cls) {
    for (size_t i = 0; cls && i < sizeof classes / sizeof classes[0]; i++)
        if (!strcmp(classes[i].name, cls)) return &classes[i];
    return NULL;
}

const ana_whatif_knob *ana_crit_class_knobs(const char *cls) {
    const class_info *c = find(cls);
    return c && c->knobs[0].key ? c->knobs : NULL;
}

const char *ana_crit_class_what(const char *cls) {
    const class_info *c = find(cls);
    return c ? c->what : "";
}

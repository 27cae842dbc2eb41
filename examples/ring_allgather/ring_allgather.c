/*
 * ring_allgather.c - a plugin kernel for npurr: an all-gather round a ring
 * of ranks with credit-based flow control, and faults that break it.
 *
 * Rank r's chunk (--bytes, generated) ends up at offset r * bytes of every
 * rank's `out`. Ranks form a ring r -> r + 1; each link is a ring buffer:
 * --slots slots of --slot-bytes in the receiver's symmetric window, a tail
 * word on the receiver (the sender adds 1 per slot it filled) and a head
 * word on the sender (the receiver adds 1 per slot it emptied: a credit).
 * Inside a node the sender puts over HCCS (MTE3) and adds to the tail once
 * the put has landed (SetFlag/WaitFlag MTE3_S); to the next node it posts an
 * RDMA write and an RDMA atomic on the tail, which land in order. The
 * receiver waits for the tail, copies the slot through UB into `out`,
 * returns the credit, and forwards the piece at the next step.
 *
 * Faults (--inject): lost-credit, rank 0 never returns a credit, so its
 * sender fills the window and waits forever: npurr reports the deadlock
 * with the ring and the head word it waits on; no-wait, senders inside a
 * node add to the tail before their put has landed, so receivers may copy
 * a stale slot: the check fails, and `--check races` names the lines.
 */
#include <stdlib.h>
#include <string.h>

#include "npurr/device.h"
#include "npurr/plugin.h"

#define MAX_RANKS 64
#define HEAD_OFF 0    /* in ctrl: the head of this rank's ring to the next */
#define TAIL_OFF 32   /* in ctrl: the tail of the ring from the previous rank */

enum { FAULT_NONE, FAULT_LOST_CREDIT, FAULT_NO_WAIT };
static const char *const fault_names[] = {"none", "lost-credit", "no-wait", NULL};

typedef struct ag_args {
    int ranks, fault;
    uint32_t bytes, slot_bytes, slots;
    gm_t src[MAX_RANKS], out[MAX_RANKS];
    gm_t window, ctrl;                /* symmetric: rank 0's address */
    uint32_t ring_to_next[MAX_RANKS]; /* ring ids, by sender */
    uint8_t rdma_to_next[MAX_RANKS];  /* the next rank is in another node */
} ag_args;

/* What generates a rank's chunk, slot by slot (a row of the generator). */
typedef struct ag_row_params {
    uint64_t seed;
    uint32_t rank, row_bytes;
} ag_row_params;

typedef struct ag_state {
    ag_args args;
    ag_row_params rows[MAX_RANKS];
} ag_state;

/* ---------------------------------------------------------------- device */

/* GM to GM on this rank through the core's UB staging buffer. */
static void copy_through_ub(local_t ub, gm_t dst, gm_t src, uint32_t bytes) {
    DataCopy(ub, src, bytes);
    SetFlag(MTE2_MTE3, 0);
    WaitFlag(MTE2_MTE3, 0);
    DataCopy(dst, ub, bytes);
    SetFlag(MTE3_S, 1);
    WaitFlag(MTE3_S, 1);   /* landed: it may be forwarded or overwritten */
}

/* Piece k (of this rank's sends) into the next rank's window. */
static void send_piece(const ag_args *a, int me, uint32_t k, uint32_t pieces) {
    int next = (me + 1) % a->ranks;
    uint32_t ring = a->ring_to_next[me];
    uint32_t chunk = (uint32_t)(me - (int)(k / pieces) + a->ranks) % (uint32_t)a->ranks;
    gm_t src = gm_add(a->out[me], (int64_t)chunk * a->bytes + (int64_t)(k % pieces) * a->slot_bytes);
    gm_t dst = gm_add(gm_on_rank(a->window, next), (int64_t)(k % a->slots) * a->slot_bytes);
    RingWaitSpace(ring, k, 1);   /* a free slot: k sent, head counts the emptied ones */
    if (a->rdma_to_next[me]) {
        RdmaWrite(dst, src, a->slot_bytes);
        RingAtomicAdd(ring, 1, 1);   /* after the write on the same queue pair: lands after it */
    } else {
        ShmemPutNbi(dst, src, a->slot_bytes);
        if (a->fault != FAULT_NO_WAIT) {
            SetFlag(MTE3_S, 0);
            WaitFlag(MTE3_S, 0);   /* the put has landed before the tail says so */
        }
        RingAtomicAdd(ring, 1, 1);
    }
}

/* Piece k (of this rank's receives) out of the window into out. */
static void receive_piece(const ag_args *a, local_t ub, int me, uint32_t k, uint32_t pieces) {
    int prev = (me - 1 + a->ranks) % a->ranks;
    uint32_t ring = a->ring_to_next[prev];
    uint32_t chunk = (uint32_t)(prev - (int)(k / pieces) + a->ranks) % (uint32_t)a->ranks;
    RingWaitData(ring, k);   /* the tail has passed k */
    gm_t slot = gm_add(a->window, (int64_t)(k % a->slots) * a->slot_bytes);
    gm_t dst = gm_add(a->out[me], (int64_t)chunk * a->bytes + (int64_t)(k % pieces) * a->slot_bytes);
    copy_through_ub(ub, dst, gm_on_rank(slot, me), a->slot_bytes);
    if (!(a->fault == FAULT_LOST_CREDIT && me == 0)) RingAtomicAdd(ring, 0, 1);   /* credit */
}

static void ag_kernel(const void *p) {
    const ag_args *a = p;
    int me = GetRank();
    SetRole("RingAllGather");
    local_t ub = AllocUB(a->slot_bytes);
    uint32_t pieces = a->bytes / a->slot_bytes;
    /* this rank's own chunk first: it is forwarded from out like the others */
    for (uint32_t i = 0; i < pieces; i++) {
        int64_t off = (int64_t)i * a->slot_bytes;
        copy_through_ub(ub, gm_add(a->out[me], (int64_t)me * a->bytes + off),
                        gm_add(a->src[me], off), a->slot_bytes);
    }
    uint32_t steps = (uint32_t)(a->ranks - 1) * pieces;
    for (uint32_t k = 0; k < steps; k++) {
        CoreNote("step", k);
        send_piece(a, me, k, pieces);
        receive_piece(a, ub, me, k, pieces);
    }
}

/* ---------------------------------------------------------------- host */

static const npurr_option ag_options[] = {
    {"bytes", "64k", "bytes of each rank's chunk (a multiple of --slot-bytes)"},
    {"slot-bytes", "16k", "bytes of a window slot (a multiple of 32, at most 64k)"},
    {"slots", "4", "slots in each rank's receive window"},
    {"data-seed", "1", "seed of the generated chunks"},
    {"inject", "none", "none | lost-credit (rank 0 keeps its credits: deadlock) | no-wait "
                       "(the tail before the put has landed: stale data)"},
    {NULL, NULL, NULL},
};

/* Row (slot) `row` of rank p->rank's chunk: splitmix64 bytes. */
static void ag_row(const void *params, uint64_t row, uint8_t *bytes) {
    const ag_row_params *p = params;
    uint32_t n = p->row_bytes;
    uint64_t z = p->seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)p->rank << 32 | row);
    for (uint32_t i = 0; i < n; i += 8) {
        z += 0x9e3779b97f4a7c15ull;
        uint64_t x = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        x ^= x >> 31;
        memcpy(bytes + i, &x, n - i < 8 ? n - i : 8);
    }
}

static void ag_destroy(void *state) { free(state); }

static int read_options(const npurr_opts *o, const npurr_topology *t, ag_args *a, uint64_t *seed,
                        char *err, size_t errlen) {
    int64_t bytes, slot, slots, s;
    const char *inject;
    if (npurr_opt_i64_range(o, "bytes", 32, 1 << 26, &bytes, err, errlen) ||
        npurr_opt_i64_range(o, "slot-bytes", 32, 65536, &slot, err, errlen) ||
        npurr_opt_i64_range(o, "slots", 1, 1024, &slots, err, errlen) ||
        npurr_opt_i64(o, "data-seed", &s, err, errlen) || npurr_opt_str(o, "inject", &inject))
        return -1;
    if (slot % 32 || bytes % slot) {
        snprintf(err, errlen, "--bytes %lld and --slot-bytes %lld: a slot is a multiple of 32 B "
                 "and the chunk a multiple of the slot", (long long)bytes, (long long)slot);
        return -1;
    }
    if (t->ranks > MAX_RANKS) {
        snprintf(err, errlen, "ring-allgather runs on at most %d ranks (%d here)", MAX_RANKS,
                 t->ranks);
        return -1;
    }
    a->fault = -1;
    for (int i = 0; fault_names[i]; i++)
        if (strcmp(inject, fault_names[i]) == 0) a->fault = i;
    if (a->fault < 0) {
        snprintf(err, errlen, "--inject %s: not none, lost-credit or no-wait", inject);
        return -1;
    }
    a->ranks = t->ranks;
    a->bytes = (uint32_t)bytes;
    a->slot_bytes = (uint32_t)slot;
    a->slots = (uint32_t)slots;
    *seed = (uint64_t)s;
    return 0;
}

/* Each rank's ring to the next: head on the sender, tail on the receiver. */
static int declare_rings(npurr_engine *e, const npurr_topology *t, ag_args *a, char *err,
                         size_t errlen) {
    for (int r = 0; r < a->ranks && a->ranks > 1; r++) {
        int next = (r + 1) % a->ranks;
        int rdma = r / t->npus_per_node != next / t->npus_per_node;
        char name[64];
        snprintf(name, sizeof name, "allgather[%d->%d]", r, next);
        a->rdma_to_next[r] = (uint8_t)rdma;
        a->ring_to_next[r] = npurr_declare_ring(
            e, name, rdma ? RING_RDMA : RING_HCCS, gm_add(gm_on_rank(a->ctrl, r), HEAD_OFF),
            gm_add(gm_on_rank(a->ctrl, next), TAIL_OFF), 8, a->slots, r, next);
        if (!a->ring_to_next[r]) {
            snprintf(err, errlen, "ring %s: refused", name);
            return -1;
        }
    }
    return 0;
}

static int ag_setup(npurr_engine *e, const npurr_opts *o, void **state, char *err,
                    size_t errlen) {
    *state = NULL;
    npurr_topology t;
    npurr_topology_of(e, &t);
    ag_state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "ring-allgather: out of host memory");
        return -1;
    }
    ag_args *a = &st->args;
    uint64_t seed;
    int failed = read_options(o, &t, a, &seed, err, errlen) ||
                 npurr_sym_alloc(e, (uint64_t)a->slots * a->slot_bytes, "allgather.window",
                                 &a->window, err, errlen) ||
                 npurr_sym_alloc(e, 64, "allgather.ctrl", &a->ctrl, err, errlen);
    uint32_t pieces = failed ? 0 : a->bytes / a->slot_bytes;
    for (int r = 0; !failed && r < a->ranks; r++) {
        npurr_tensor out = {NPURR_DT_U8, 2, {(uint64_t)a->ranks, a->bytes}};
        st->rows[r] = (ag_row_params){seed, (uint32_t)r, a->slot_bytes};
        failed = npurr_gm_alloc(e, r, a->bytes, "allgather.src", &a->src[r], err, errlen) ||
                 npurr_gm_generate(e, a->src[r], pieces, a->slot_bytes, ag_row, &st->rows[r],
                                   sizeof st->rows[r], err, errlen) ||
                 npurr_gm_alloc(e, r, (uint64_t)a->ranks * a->bytes, "allgather.out", &a->out[r],
                                err, errlen) ||
                 npurr_name_tensor(e, a->out[r], &out, "out", err, errlen);
    }
    failed = failed || declare_rings(e, &t, a, err, errlen) ||
             npurr_launch(e, "ring_allgather", ag_kernel, a, 1, CORE_AIV, err, errlen);
    if (failed) {
        free(st);
        return -1;
    }
    *state = st;
    return 0;
}

static int ag_check(npurr_engine *e, void *state, char *msg, size_t msglen) {
    ag_state *st = state;
    const ag_args *a = &st->args;
    uint32_t pieces = a->bytes / a->slot_bytes;
    for (int r = 0; r < a->ranks; r++) {
        if (!npurr_rank_local(e, r)) continue;
        for (int c = 0; c < a->ranks; c++) {
            uint64_t diff = 0;
            int eq = npurr_gm_equal_generated(e, gm_add(a->out[r], (int64_t)c * a->bytes), pieces,
                                              a->slot_bytes, ag_row, &st->rows[c],
                                              sizeof st->rows[c], &diff);
            if (eq != 1) {
                snprintf(msg, msglen, "rank %d: chunk of rank %d differs at byte %llu (slot %llu)",
                         r, c, (unsigned long long)diff,
                         (unsigned long long)(diff / a->slot_bytes));
                return 1;
            }
        }
    }
    return 0;
}

static const npurr_phase ag_phases[] = {
    {"allgather", {"RingAllGather", NULL}, {"AllGather", NULL}},
    {NULL, {NULL}, {NULL}},
};

static const npurr_kernel ring_allgather = {
    .name = "ring-allgather",
    .summary = "example plugin: all-gather round a ring of ranks, credit flow control over "
               "HCCS and RDMA",
    .options = ag_options,
    .setup = ag_setup,
    .check = ag_check,
    .destroy = ag_destroy,
    .check_splits = 1,
    .phases = ag_phases,
};

NPURR_PLUGIN("ring-allgather-example", &ring_allgather)

/*
 * dispatch_kernel.c - the entry of `-k dispatch-layered` on every AIV core
 * of every rank: the layout and notify phases on all cores, then the data
 * phase by role, `dispatches` times.
 *
 * Cores [0, senders) are RDMASender, then RDMACoordinator, then
 * RDMA2HCCSForwarder, then ForwarderCoordinator, then HCCSReceiver (seed
 * 001 s4.1). Decision: one launch runs everything and BarrierAll separates
 * the phases (the issue allows notify as a phase of the same kernel). Each
 * dispatch ends with a clean step that zeroes the per-dispatch meta and
 * prefix words (DeepEP cleans them at the next kernel's start) once their
 * readers are done, then BarrierAll before the next dispatch writes new
 * ones; the rings are reused as they are, head and tail keep growing (seed
 * 001 s7.2: monotonic, never reset). The last dispatch ends without a
 * barrier, as a kernel would.
 * Device code: device.h only.
 */
#include "dispatch_device.h"

enum { ROLE_SENDER, ROLE_COORDINATOR, ROLE_FORWARDER, ROLE_FWD_COORDINATOR, ROLE_RECEIVER };

static int role_of(const dispatch_shape *sh, int b) {
    if (b < sh->senders) return ROLE_SENDER;
    b -= sh->senders;
    if (b < sh->coordinators) return ROLE_COORDINATOR;
    b -= sh->coordinators;
    if (b < sh->forwarders) return ROLE_FORWARDER;
    b -= sh->forwarders;
    if (b < sh->fwd_coordinators) return ROLE_FWD_COORDINATOR;
    return ROLE_RECEIVER;
}

static void note_all(ring_notes *rn, const int64_t *v) {
    static const char *const keys[7] = {"channel", "peer",    "head",         "tail",
                                        "cached_head", "credits", "pending_rings"};
    for (int i = 0; i < 7; i++)
        if (!rn->valid || rn->v[i] != v[i]) {
            CoreNote(keys[i], v[i]);
            rn->v[i] = v[i];
        }
    rn->valid = 1;
}

void dispatch_note_ring(ring_notes *rn, int64_t channel, int64_t peer, int64_t head, int64_t tail,
                        int64_t cached_head, int64_t credits) {
    int64_t v[7] = {channel, peer, head, tail, cached_head, credits, 0};
    note_all(rn, v);
}

void dispatch_note_doorbell(ring_notes *rn, int64_t pending_rings) {
    int64_t v[7] = {-1, -1, -1, -1, -1, -1, pending_rings};
    note_all(rn, v);
}

static const char *const role_names[] = {"RDMASender", "RDMACoordinator", "RDMA2HCCSForwarder",
                                         "ForwarderCoordinator", "HCCSReceiver"};

void dispatch_kernel(const void *args) {
    const dispatch_args *a = args;
    const dispatch_shape *sh = &a->sh;
    /* The whole UB once; each phase carves it afresh (AllocUB cannot free). */
    ub_arena ub = {AllocUB(UB_BYTES), 0};
    SetRole("NotifyDispatch");
    dispatch_notify_layout_phase(a, ub);
    if (sh->notify_a2) dispatch_notify_a2_phase(a, ub);
    else dispatch_notify_exchange_phase(a, ub);
    dispatch_notify_prefix_phase(a, ub);

    int role = role_of(sh, GetBlockIdx());
    SetRole(role_names[role]);
    for (int disp = 0; disp < sh->dispatches; disp++) {
        CoreNote("dispatch", disp);
        switch (role) {
        case ROLE_SENDER: dispatch_rdma_sender(a, disp, ub); break;
        case ROLE_COORDINATOR: dispatch_rdma_coordinator(a, disp, ub); break;
        case ROLE_FORWARDER: dispatch_forwarder(a, disp, ub); break;
        case ROLE_FWD_COORDINATOR: dispatch_fwd_coordinator(a, disp, ub); break;
        default: dispatch_hccs_receiver(a, disp, ub); break;
        }
        if (role == ROLE_FWD_COORDINATOR) dispatch_fwd_coordinator_clean(a, disp, ub);
        if (role == ROLE_RECEIVER) dispatch_hccs_receiver_clean(a, ub);
        if (disp + 1 < sh->dispatches) BarrierAll();
    }
}

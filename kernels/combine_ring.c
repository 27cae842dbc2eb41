/*
 * combine_ring.c - the sender side of one HCCS ring (seed 000, part 2).
 *
 * Each (source, destination) pair has a ring of ring_bytes on the
 * destination, with a control block there: the tail (written by the sender
 * over HCCS, read by the receiver) and the head (written by the receiver,
 * read by the sender over HCCS). Both count bytes and never wrap
 * (absolute offsets); the write position is tail % capacity.
 *
 * A flush is: flow control (fast path on remote_head_cache; then the head
 * prefetched before the gather; only then a blocking wait on the remote
 * head word), the write (split in two at the wrap), SetFlag/WaitFlag(MTE3 -> S)
 * so the bytes have landed, and the tail commit, which is deferred to the
 * start of the next flush so the sender can gather the next batch while the
 * put is on the link. Device code: device.h only.
 */
#include "combine.h"

/* Flag ids this file owns: MTE2_S 7 (head prefetch), MTE3_S 0 (commit). */
#define PREFETCH_EVENT_ID 7
#define COMMIT_EVENT_ID 0

void ring_writer_init(ring_writer *w, const combine_args *a, int dst) {
    int me = GetRank();
    w->ring_id = a->ring_id[me][dst];
    w->ring_data = gm_add(gm_on_rank(a->ring_base, dst), (int64_t)((uint64_t)me * a->ring_stride));
    w->remote_head = gm_add(gm_on_rank(a->ctrl_base, dst),
                            (int64_t)me * COMBINE_CTRL_STRIDE + COMBINE_CTRL_HEAD);
    w->head_mirror = gm_add(a->head_mirror[me], (int64_t)dst * 32);
    w->capacity = a->ring_bytes;
    w->max_flush = a->staging_bytes;
    /* Decision: the kernel is launched once on fresh rings (setup zeroes the
     * control blocks), so both caches start at 0 instead of reading the
     * words; a persistent ring would load them here. */
    w->local_tail_cache = 0;
    w->remote_head_cache = 0;
    w->prefetch_pending = 0;
    w->commit_pending = 0;
    w->to_self = dst == me;
    w->skip_mte3_wait = a->inject_no_mte3_wait;
}

void ring_writer_note(const ring_writer *w, int dst) {
    CoreNote("dst_rank", dst);
    CoreNote("local_tail_cache", w->local_tail_cache);
    CoreNote("remote_head_cache", w->remote_head_cache);
    CoreNote("ring_bytes", w->capacity);
}

static int64_t free_space(const ring_writer *w) {
    return (int64_t)w->capacity - (w->local_tail_cache - w->remote_head_cache);
}

void ring_writer_prefetch_head(ring_writer *w) {
    /* Seed s4.3: issue the head read before the gather so its latency hides
     * behind it. A scalar GetValue would stall the core for the HCCS round
     * trip; an MTE2 get into a local mirror word does not.
     * Decision: only when the cached head says the next flush might not fit.
     * The get sits in the in-order MTE2 queue, so every MTE2 flag of the
     * gather behind it fires only when it is back (one HCCS round trip); when
     * the cache already promises room, the fast path will not look at the
     * head at all and the prefetch would only delay the gather. */
    if (free_space(w) >= (int64_t)w->max_flush) return;
    ShmemGetNbi(w->head_mirror, w->remote_head, 8);
    w->prefetch_pending = 1;
}

static void put(const ring_writer *w, uint64_t ring_off, local_t src, uint64_t bytes) {
    gm_t dst = gm_add(w->ring_data, (int64_t)ring_off);
    if (w->to_self)
        DataCopy(dst, src, bytes);
    else
        ShmemPutFromUB(dst, src, bytes);
}

static void commit(ring_writer *w) {
    /* Seed s3.2/3.3: the bytes must have landed before the tail says so. The
     * SetFlag was issued right after the put, so it fires when that put is
     * done, whatever MTE3 was given since. */
    WaitFlag(MTE3_S, COMMIT_EVENT_ID);
    RingStoreTail(w->ring_id, w->local_tail_cache);
    w->commit_pending = 0;
}

void ring_writer_finish(ring_writer *w) {
    if (w->commit_pending) commit(w);
}

void ring_writer_flush(ring_writer *w, local_t staging_ub, uint32_t bytes) {
    int64_t need = bytes;
    /* Decision (seed s5.2 double buffering): the previous flush's tail is
     * committed here rather than right after its put, so the caller's
     * gather of this batch ran while that put was on the link. It must
     * happen before the flow control below can block: the receiver cannot
     * free space for bytes it has not been told about. */
    ring_writer_finish(w);

    /* Phase 1: flow control. Lazy: the GM head is consulted only when the
     * cached value says there is no room. */
    if (free_space(w) < need) {
        if (w->prefetch_pending) {
            SetFlag(MTE2_S, PREFETCH_EVENT_ID);
            WaitFlag(MTE2_S, PREFETCH_EVENT_ID);
            int64_t head = GetValue64(w->head_mirror);
            if (head > w->remote_head_cache) w->remote_head_cache = head;
            w->prefetch_pending = 0;
        }
        if (free_space(w) < need) {
            CoreNote("flush_bytes", need);
            CoreNote("remote_head_cache", w->remote_head_cache);
            /* The seed's spin on Remote_Head, as one blocking wait until
             * capacity - (tail - head) >= need. Decision: WaitGM64 on the
             * ring's (named) head word rather than RingWaitSpace, because
             * RingWaitSpace faults at once when need > capacity, while the
             * seed's loop simply spins forever: a flush larger than the ring
             * must show up as the deadlock it is on the chip. */
            w->remote_head_cache = WaitGM64(w->remote_head, COND_GE,
                                            w->local_tail_cache + need - (int64_t)w->capacity);
        }
    }

    /* Phase 2: write at tail % capacity, in two parts at the wrap. Both
     * parts start 32 B aligned: capacity and every flush are multiples of 32. */
    uint64_t pos = (uint64_t)w->local_tail_cache % w->capacity;
    uint64_t space_at_end = w->capacity - pos;
    if (bytes <= space_at_end) {
        put(w, pos, staging_ub, bytes);
    } else {
        put(w, pos, staging_ub, space_at_end);
        put(w, 0, local_add(staging_ub, (uint32_t)space_at_end), bytes - space_at_end);
    }
    w->local_tail_cache += need;

    /* Phase 3: commit, now (injected fault: without waiting for MTE3) or at
     * the next flush. */
    if (w->skip_mte3_wait) {
        RingStoreTail(w->ring_id, w->local_tail_cache);
    } else {
        SetFlag(MTE3_S, COMMIT_EVENT_ID);
        w->commit_pending = 1;
    }
}

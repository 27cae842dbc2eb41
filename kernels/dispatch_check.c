/*
 * dispatch_check.c - CPU reference checks after a `-k dispatch-layered`
 * run (the properties DeepEP's internode dispatch test asserts). In order;
 * the first failure names what broke:
 *   1. inputs: x and x_scales on every rank are still what setup wrote;
 *   2. layout, per source rank: num_tokens_per_rank, num_tokens_per_rdma_rank,
 *      num_tokens_per_expert, the per-channel counts, is_token_in_rank and
 *      each token's index in its destinations' streams;
 *   3. notify, per destination rank: recv_gbl_rank_prefix_sum (so the rank
 *      receives exactly the reference number of tokens),
 *      recv_rdma_rank_prefix_sum, the [num_ranks, num_local_experts]
 *      prefix matrix and num_recv_tokens_per_expert;
 *   4. every received row of every dispatch: recv_x equals its source
 *      token's x byte for byte (rows grouped by source rank in prefix order,
 *      tokens ascending; the row's tag names the token that landed instead),
 *      scales, top-k indices rewritten to local expert ids or -1, weights
 *      of the local slots (0 elsewhere), recv_src_meta;
 *   5. dispatches after the first gave the same bytes as the first;
 *   6. the rings are clean: every RDMA and HCCS head equals its tail equals
 *      dispatches x the ring's tokens, no lock is held, every forwarder
 *      group acknowledged every meta, meta and prefix words are back to 0
 *      for the next dispatch.
 * Every step looks only at ranks engine_rank_local names: in a run split
 * over processes each checks the nodes it ran, and the session combines
 * the answers (the first failure in process order is the one reported).
 */
#include "dispatch.h"

#include <stdlib.h>
#include <string.h>

typedef struct checker {
    engine *e;
    const dispatch_plan *p;
    const dispatch_shape *sh;
    const dispatch_args *a;
    char *msg;
    size_t len;
} checker;

static const uint8_t zero_bytes[32];

static const void *view(const checker *k, gm_t at, uint64_t bytes) {
    if (bytes == 0) return zero_bytes;
    const void *h = npurr_gm_host(k->e, at, bytes);
    if (!h) snprintf(k->msg, k->len, "no host view of GM rank %d +0x%llx (%llu B)", gm_rank(at),
                     (unsigned long long)gm_offset(at), (unsigned long long)bytes);
    return h;
}

static int64_t word(const checker *k, gm_t at, int width) {
    const void *h = npurr_gm_host(k->e, at, (uint64_t)width);
    return h ? kit_int_at(h, width) : INT64_MIN;
}

/* x is compared with what setup generated in one pass per rank (as
 * references where it still is), x_scales token by token. */
static int check_inputs(const checker *k) {
    const dispatch_shape *sh = k->sh;
    float *sc = malloc(sizeof(float) * (size_t)(sh->num_scales + 1));
    if (!sc) {
        snprintf(k->msg, k->len, "dispatch check: out of host memory");
        return 1;
    }
    int rc = 0;
    for (int s = 0; !rc && s < sh->num_ranks; s++) {
        if (!npurr_rank_local(k->e, s)) continue;
        uint64_t T = (uint64_t)sh->tokens[s];
        const float *xs = view(k, k->a->x_scales[s], T * (uint64_t)sh->num_scales * 4);
        if (!xs) { rc = 1; break; }
        int bad = -1;
        if (dispatch_x_unchanged(k->e, k->a->x[s], sh, s, &bad) != 1 && bad < 0) bad = 0;
        for (uint64_t t = 0; t < T && bad < 0; t++) {
            dispatch_fill_scales(sc, sh, s, (int)t);
            if (memcmp(sc, xs + t * (uint64_t)sh->num_scales, (size_t)sh->num_scales * 4))
                bad = (int)t;
        }
        if (bad >= 0) {
            snprintf(k->msg, k->len,
                     "x or x_scales of token %d on rank %d changed during the run: the "
                     "dispatch must only read its inputs", bad, s);
            rc = 1;
        }
    }
    free(sc);
    return rc;
}

static int compare_ints(const checker *k, const int32_t *got, const int32_t *ref, size_t n,
                        int rank, const char *what, int cols) {
    for (size_t i = 0; i < n; i++)
        if (got[i] != ref[i]) {
            if (cols > 1)
                snprintf(k->msg, k->len, "rank %d: %s[%zu][%zu] = %d, reference %d", rank, what,
                         i / (size_t)cols, i % (size_t)cols, got[i], ref[i]);
            else
                snprintf(k->msg, k->len, "rank %d: %s[%zu] = %d, reference %d", rank, what, i,
                         got[i], ref[i]);
            return 1;
        }
    return 0;
}

static int check_layout(const checker *k) {
    const dispatch_plan *p = k->p;
    const dispatch_shape *sh = k->sh;
    const dispatch_count_layout *cl = &k->a->cl;
    int R = sh->num_ranks, N = sh->nodes, E = sh->experts, C = sh->channels;
    for (int s = 0; s < R; s++) {
        if (!npurr_rank_local(k->e, s)) continue;
        const int32_t *cnt = view(k, k->a->layout_counts[s], (uint64_t)cl->total * 4);
        uint64_t T = (uint64_t)sh->tokens[s];
        const uint8_t *in = view(k, k->a->is_token_in_rank[s], T * (uint64_t)R);
        const int32_t *idx = view(k, k->a->token_idx_in_rank[s], T * (uint64_t)R * 4);
        if (!cnt || !in || !idx) return 1;
        size_t base = (size_t)p->token_base[s] * (size_t)R;
        if (compare_ints(k, cnt + cl->per_rank, p->num_tokens_per_rank + (size_t)s * R, (size_t)R,
                         s, "num_tokens_per_rank", 1) ||
            compare_ints(k, cnt + cl->per_node, p->num_tokens_per_rdma_rank + (size_t)s * N,
                         (size_t)N, s, "num_tokens_per_rdma_rank", 1) ||
            compare_ints(k, cnt + cl->per_expert, p->num_tokens_per_expert + (size_t)s * E,
                         (size_t)E, s, "num_tokens_per_expert", 1) ||
            compare_ints(k, cnt + cl->ch_rank, p->channel_rank_count + (size_t)s * C * R,
                         (size_t)C * R, s, "channel tokens per rank", R) ||
            compare_ints(k, cnt + cl->ch_node, p->channel_node_count + (size_t)s * C * N,
                         (size_t)C * N, s, "channel tokens per node", N) ||
            compare_ints(k, idx, p->token_idx_in_rank + base, T * (uint64_t)R, s,
                         "token_idx_in_rank", R))
            return 1;
        for (uint64_t i = 0; i < T * (uint64_t)R; i++)
            if (in[i] != p->is_token_in_rank[base + i]) {
                snprintf(k->msg, k->len, "rank %d: is_token_in_rank[%llu][%llu] = %d, reference %d",
                         s, (unsigned long long)(i / (uint64_t)R),
                         (unsigned long long)(i % (uint64_t)R), in[i], p->is_token_in_rank[base + i]);
                return 1;
            }
    }
    return 0;
}

static int check_notify(const checker *k) {
    const dispatch_plan *p = k->p;
    const dispatch_shape *sh = k->sh;
    const dispatch_notify_layout *nl = &k->a->nl;
    int R = sh->num_ranks, N = sh->nodes, L = sh->local_experts, P = sh->npus, E = sh->experts;
    int32_t *ref = malloc(sizeof(int32_t) * nl->total);
    if (!ref) {
        snprintf(k->msg, k->len, "dispatch check: out of host memory");
        return 1;
    }
    for (int d = 0; d < R; d++) {
        if (!npurr_rank_local(k->e, d)) continue;
        const int32_t *out = view(k, k->a->notify_out[d], (uint64_t)nl->total * 4);
        if (!out) {
            free(ref);
            return 1;
        }
        int32_t acc = 0;
        for (int s = 0; s < R; s++) {
            acc += p->recv_from[(size_t)d * R + s];
            ref[nl->rank_prefix + (uint32_t)s] = acc;
            if (s % P == P - 1) ref[nl->rdma_prefix + (uint32_t)(s / P)] = acc;
        }
        for (int le = 0; le < L; le++) {
            int32_t e_acc = 0;
            for (int s = 0; s < R; s++) {
                e_acc += p->num_tokens_per_expert[(size_t)s * E + (size_t)(d * L + le)];
                ref[nl->expert_prefix + (uint32_t)(s * L + le)] = e_acc;
            }
            ref[nl->per_expert + (uint32_t)le] = e_acc;
        }
        if (out[nl->rank_prefix + (uint32_t)R - 1] != p->recv_total[d]) {
            snprintf(k->msg, k->len,
                     "rank %d: the notify phase says it receives %d tokens, the reference %lld",
                     d, out[nl->rank_prefix + (uint32_t)R - 1], (long long)p->recv_total[d]);
            free(ref);
            return 1;
        }
        if (compare_ints(k, out + nl->rank_prefix, ref + nl->rank_prefix, (size_t)R, d,
                         "recv_gbl_rank_prefix_sum", 1) ||
            compare_ints(k, out + nl->rdma_prefix, ref + nl->rdma_prefix, (size_t)N, d,
                         "recv_rdma_rank_prefix_sum", 1) ||
            compare_ints(k, out + nl->expert_prefix, ref + nl->expert_prefix, (size_t)R * L, d,
                         "expert prefix matrix [src rank][local expert]", L) ||
            compare_ints(k, out + nl->per_expert, ref + nl->per_expert, (size_t)L, d,
                         "num_recv_tokens_per_expert", 1)) {
            free(ref);
            return 1;
        }
    }
    free(ref);
    return 0;
}

/* recv_x row vs its source token's row of x, compared as references where
 * both are (same origin bytes), as bytes otherwise; the message says what
 * landed instead. */
static int check_row_bytes(const checker *k, gm_t got_at, gm_t want_at, const char *head) {
    const dispatch_shape *sh = k->sh;
    uint64_t b = 0;
    int eq = npurr_gm_equal(k->e, got_at, want_at, sh->x_row_bytes, &b);
    if (eq == 1) return 0;
    if (eq < 0) {
        snprintf(k->msg, k->len, "%s: recv_x row is outside its allocation", head);
        return 1;
    }
    uint8_t *got = malloc(sh->x_row_bytes), *want = malloc(sh->x_row_bytes);
    if (!got || !want || npurr_gm_read(k->e, got_at, got, sh->x_row_bytes) ||
        npurr_gm_read(k->e, want_at, want, sh->x_row_bytes)) {
        snprintf(k->msg, k->len, "%s: recv_x differs from the source row at byte %llu", head,
                 (unsigned long long)b);
    } else {
        int ts, tt, zero = 1;
        for (uint32_t i = 0; i < sh->x_row_bytes; i++) zero &= got[i] == 0;
        char found[96] = "";
        if (zero)
            snprintf(found, sizeof found, "; the row is all zero: nothing was written there");
        else if (dispatch_decode_tag(got, sh, &ts, &tt))
            snprintf(found, sizeof found, "; the row holds token %d of rank %d", tt, ts);
        snprintf(k->msg, k->len, "%s: recv_x byte %llu is 0x%02x, expected 0x%02x%s", head,
                 (unsigned long long)b, got[b], want[b], found);
    }
    free(got);
    free(want);
    return 1;
}

/* One received row of destination d at position row, dispatch disp. */
static int check_row(const checker *k, int disp, int d, int64_t row, gm_t rx,
                     const float *rs, const int32_t *ri, const float *rw, const int32_t *rm) {
    const dispatch_plan *p = k->p;
    const dispatch_shape *sh = k->sh;
    int K = sh->topk, L = sh->local_experts, P = sh->npus;
    int s = p->recv_src_rank[p->recv_base[d] + row], t = p->recv_src_token[p->recv_base[d] + row];
    const float *xs = view(k, k->a->x_scales[s], (uint64_t)sh->tokens[s] * sh->num_scales * 4);
    if (!xs) return 1;
    char head[160];
    snprintf(head, sizeof head, "dispatch %d, rank %d recv row %lld (token %d of rank %d)",
             disp + 1, d, (long long)row, t, s);
    if (check_row_bytes(k, gm_add(rx, row * (int64_t)sh->x_row_bytes),
                        gm_add(k->a->x[s], (int64_t)t * (int64_t)sh->x_row_bytes), head))
        return 1;
    if (sh->num_scales &&
        memcmp(xs + (uint64_t)t * sh->num_scales, rs + (uint64_t)row * sh->num_scales,
               (size_t)sh->num_scales * 4)) {
        snprintf(k->msg, k->len, "%s: recv_x_scales differ from the token's x_scales", head);
        return 1;
    }
    const int32_t *ids = p->topk_idx + (size_t)(p->token_base[s] + t) * (size_t)K;
    const float *ws = p->topk_weights + (size_t)(p->token_base[s] + t) * (size_t)K;
    for (int q = 0; q < K; q++) {
        int32_t le = ids[q] >= d * L && ids[q] < (d + 1) * L ? ids[q] - d * L : -1;
        float w = le >= 0 ? ws[q] : 0.0f;
        int32_t gi = ri[(size_t)row * K + (size_t)q];
        float gw = rw[(size_t)row * K + (size_t)q];
        if (gi != le) {
            snprintf(k->msg, k->len,
                     "%s: recv_topk_idx[%d] = %d, expected %d (global expert %d, local experts "
                     "of rank %d are %d..%d)",
                     head, q, gi, le, ids[q], d, d * L, d * L + L - 1);
            return 1;
        }
        if (memcmp(&gw, &w, 4)) {
            snprintf(k->msg, k->len, "%s: recv_topk_weights[%d] = %g, expected %g", head, q,
                     (double)gw, (double)w);
            return 1;
        }
    }
    int32_t bits = 0;
    for (int q = 0; q < P; q++)
        if (p->is_token_in_rank[(size_t)(p->token_base[s] + t) * (size_t)sh->num_ranks +
                                (size_t)((d / P) * P + q)])
            bits |= 1 << q;
    const int32_t *m = rm + (size_t)row * DISPATCH_RECV_SRC_INTS;
    if (m[0] != s / P || m[1] != bits || m[2] != t) {
        snprintf(k->msg, k->len,
                 "%s: recv_src_meta is {src_rdma_rank %d, nvl bits 0x%x, src_token_id %d}, "
                 "expected {%d, 0x%x, %d}",
                 head, m[0], m[1], m[2], s / P, bits, t);
        return 1;
    }
    return 0;
}

static int check_recv(const checker *k, int disp) {
    const dispatch_shape *sh = k->sh;
    const dispatch_args *a = k->a;
    uint64_t K = (uint64_t)sh->topk;
    for (int d = 0; d < sh->num_ranks; d++) {
        if (!npurr_rank_local(k->e, d)) continue;
        uint64_t n = (uint64_t)k->p->recv_total[d];
        gm_t rx = a->recv_x[disp][d];
        const float *rs = view(k, a->recv_x_scales[disp][d], n * (uint64_t)sh->num_scales * 4);
        const int32_t *ri = view(k, a->recv_topk_idx[disp][d], n * K * 4);
        const float *rw = view(k, a->recv_topk_weights[disp][d], n * K * 4);
        const int32_t *rm = view(k, a->recv_src_meta[disp][d], n * DISPATCH_RECV_SRC_INTS * 4);
        if (!rs || !ri || !rw || !rm) return 1;
        for (uint64_t row = 0; row < n; row++)
            if (check_row(k, disp, d, (int64_t)row, rx, rs, ri, rw, rm)) return 1;
    }
    return 0;
}

static int same_bytes(const checker *k, gm_t *first, gm_t *later, uint64_t bytes, int d, int disp,
                      const char *what) {
    if (bytes == 0) return 0;
    uint64_t b = 0;
    int eq = npurr_gm_equal(k->e, first[d], later[d], bytes, &b);
    if (eq == 1) return 0;
    if (eq < 0)
        snprintf(k->msg, k->len, "no host view of rank %d's %s", d, what);
    else
        snprintf(k->msg, k->len,
                 "dispatch %d gave other bytes than dispatch 1 with the same layout: rank %d "
                 "%s byte %llu",
                 disp + 1, d, what, (unsigned long long)b);
    return 1;
}

static int check_repeat(const checker *k) {
    const dispatch_shape *sh = k->sh;
    const dispatch_args *a = k->a;
    uint64_t K = (uint64_t)sh->topk;
    for (int disp = 1; disp < sh->dispatches; disp++)
        for (int d = 0; d < sh->num_ranks; d++) {
            if (!npurr_rank_local(k->e, d)) continue;
            uint64_t n = (uint64_t)k->p->recv_total[d];
            if (same_bytes(k, a->recv_x[0], a->recv_x[disp], n * sh->x_row_bytes, d, disp,
                           "recv_x") ||
                same_bytes(k, a->recv_x_scales[0], a->recv_x_scales[disp],
                           n * (uint64_t)sh->num_scales * 4, d, disp, "recv_x_scales") ||
                same_bytes(k, a->recv_topk_idx[0], a->recv_topk_idx[disp], n * K * 4, d, disp,
                           "recv_topk_idx") ||
                same_bytes(k, a->recv_topk_weights[0], a->recv_topk_weights[disp], n * K * 4, d,
                           disp, "recv_topk_weights") ||
                same_bytes(k, a->recv_src_meta[0], a->recv_src_meta[disp],
                           n * DISPATCH_RECV_SRC_INTS * 4, d, disp, "recv_src_meta"))
                return 1;
        }
    return 0;
}

/* The RDMA ring from rank s to its forwarder on node n, channel c: head,
 * tail and lock where each lives, the meta read by every group and cleaned. */
static int check_rdma_ring(const checker *k, int s, int c, int n) {
    const dispatch_shape *sh = k->sh;
    const dispatch_args *a = k->a;
    int N = sh->nodes, P = sh->npus;
    int64_t D = sh->dispatches;
    int f = n * P + s % P;
    uint64_t w = (uint64_t)c * (uint64_t)N;
    int64_t want = D * dispatch_ring_total(k->p, s, c, n);
    /* each side where it lives: a split run checks its own ranks */
    if (npurr_rank_local(k->e, s)) {
        int64_t head = word(k, dispatch_word(a->rdma_channel_head, s, w + (uint64_t)n, 8), 8);
        int64_t filled = word(k, dispatch_word(a->rdma_send_channel_tail, s, w + (uint64_t)n, 8), 8);
        int64_t lock = word(k, dispatch_word(a->rdma_send_channel_lock, s, w + (uint64_t)n, 4), 4);
        if (head != want || filled != want || lock != 0) {
            snprintf(k->msg, k->len,
                     "rdma_channel[c%d][%d->%d] after the run: head %lld and "
                     "rdma_send_channel_tail %lld on rank %d, lock %lld; expected "
                     "%lld each (%d dispatches) and the lock free",
                     c, s, f, (long long)head, (long long)filled, s, (long long)lock,
                     (long long)want, sh->dispatches);
            return 1;
        }
    }
    if (!npurr_rank_local(k->e, f)) return 0;
    int64_t tail = word(k, dispatch_word(a->rdma_channel_tail, f, w + (uint64_t)(s / P), 8), 8);
    if (tail != want) {
        snprintf(k->msg, k->len,
                 "rdma_channel[c%d][%d->%d] after the run: tail %lld on rank %d; "
                 "expected %lld (%d dispatches)",
                 c, s, f, (long long)tail, f, (long long)want, sh->dispatches);
        return 1;
    }
    const int32_t *meta = view(k, gm_add(gm_on_rank(a->rdma_channel_meta, f),
                                         (int64_t)((w + (uint64_t)(s / P)) * DISPATCH_META_BYTES)),
                               DISPATCH_META_BYTES);
    if (!meta) return 1;
    int64_t acks = word(k, dispatch_word(a->rdma_channel_meta_ack, f, w + (uint64_t)(s / P), 8), 8);
    if (acks != D * dispatch_fwd_groups(sh, c)) {
        snprintf(k->msg, k->len,
                 "rdma_channel_meta_ack[c%d][node%d] on rank %d is %lld after the run; "
                 "%d forwarder groups x %d dispatches should have read the meta",
                 c, s / P, f, (long long)acks, dispatch_fwd_groups(sh, c), sh->dispatches);
        return 1;
    }
    for (int i = 0; i < DISPATCH_META_INTS; i++)
        if (meta[i]) {
            snprintf(k->msg, k->len,
                     "rdma_channel_meta[c%d][node%d] on rank %d: int %d is %d after the "
                     "run; the clean step must leave 0 for the next dispatch",
                     c, s / P, f, i, meta[i]);
            return 1;
        }
    return 0;
}

/* The HCCS ring into rank d from its node's local rank l, channel c: head
 * and tail at the total, the prefix words reset. */
static int check_hccs_ring(const checker *k, int d, int c, int l) {
    const dispatch_shape *sh = k->sh;
    const dispatch_args *a = k->a;
    int N = sh->nodes, P = sh->npus;
    uint64_t w = (uint64_t)c * (uint64_t)P + (uint64_t)l;
    int64_t want = (int64_t)sh->dispatches * dispatch_hccs_ring_total(k->p, d, c, l);
    int64_t head = word(k, dispatch_word(a->hccs_channel_head, d, w, 4), 4);
    int64_t tail = word(k, dispatch_word(a->hccs_channel_tail, d, w, 4), 4);
    if (head != want || tail != want) {
        snprintf(k->msg, k->len,
                 "hccs_channel[c%d][%d->%d] after the run: head %lld, tail %lld, "
                 "expected %lld each",
                 c, (d / P) * P + l, d, (long long)head, (long long)tail, (long long)want);
        return 1;
    }
    for (int n = 0; n < N; n++) {
        uint64_t at = w * (uint64_t)N + (uint64_t)n;
        if (word(k, dispatch_word(a->hccs_channel_prefix_start, d, at, 4), 4) ||
            word(k, dispatch_word(a->hccs_channel_prefix_end, d, at, 4), 4)) {
            snprintf(k->msg, k->len,
                     "hccs_channel_prefix_start/end[c%d][%d][node%d] on rank %d are "
                     "not 0 after the run; the clean step must reset them",
                     c, (d / P) * P + l, n, d);
            return 1;
        }
    }
    return 0;
}

static int check_rings(const checker *k) {
    const dispatch_shape *sh = k->sh;
    int R = sh->num_ranks, C = sh->channels, N = sh->nodes, P = sh->npus;
    for (int s = 0; s < R; s++)
        for (int c = 0; c < C; c++)
            for (int n = 0; n < N; n++)
                if (check_rdma_ring(k, s, c, n)) return 1;
    for (int d = 0; d < R; d++)
        for (int c = 0; c < C; c++)
            for (int l = 0; l < P && npurr_rank_local(k->e, d); l++)
                if (check_hccs_ring(k, d, c, l)) return 1;
    return 0;
}

int dispatch_check(engine *e, void *state, char *msg, size_t msglen) {
    dispatch_state *st = state;
    checker k = {e, &st->plan, &st->plan.sh, &st->args, msg, msglen};
    if (check_inputs(&k) || check_layout(&k) || check_notify(&k)) return 1;
    for (int disp = 0; disp < k.sh->dispatches; disp++)
        if (check_recv(&k, disp)) return 1;
    return check_repeat(&k) || check_rings(&k) ? 1 : 0;
}

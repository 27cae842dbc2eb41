/*
 * dispatch_normal_check.c - the checks after a dispatch-normal run.
 *
 * What CamMoeDispatchNormal must leave on every owner p is fixed by the
 * plan: expandX row r (expert-major, source-rank-minor, combine-normal's
 * x layout) holds the token row of the (s, t, k) that x_src_info names for
 * r, and expandIdx row r is that (s, t, k). In order, the first failure
 * names what broke:
 *   1. guards: every byte after every buffer, the share windows and the
 *      status areas still holds what setup wrote;
 *   2. expandX: each row equals, byte for byte, token t of rank s (rows
 *      carry combine's payload tags, so a wrong row says whose it is);
 *   3. expandIdx: each triple is (s, t, k);
 *   4. status slots: all zero again, as each owner clears its slots after
 *      waiting for them; one still set arrived after its owner had cleared
 *      it, so the owner did not wait for it;
 *   5. dataState: every core toggled its word from 0 to 1.
 * At --nodes 2 (DispatchNormalA2) the same guards and expandX, then
 * expandScales (A2's layered dispatch writes the rows' weights, not
 * expandIdx) against the routing's weights, and the windows' state:
 * statuses zero after CleanUp, bufferChosen flipped, the IPC barrier's
 * flags and magics at their last values.
 */
#include "dispatch_normal.h"

#include <stdlib.h>
#include <string.h>

/* Why does an output row differ: never written, or another token's. */
static void row_diagnosis(const uint8_t *got, const combine_shape *sh, int s, int t, char *out,
                          size_t outlen) {
    uint32_t nz = 0;
    for (uint32_t b = 0; b < sh->row_bytes; b++) nz += got[b] != 0;
    int ft, fk, fs;
    if (nz == 0)
        snprintf(out, outlen, "the row is all zeros: it never arrived (or was read from the "
                 "share window before it landed there)");
    else if (combine_decode_tag((const uint16_t *)(const void *)got, sh->hidden, &ft, &fk, &fs) &&
             fk == 0 && (ft != t || fs != s))
        snprintf(out, outlen, "the row's tag says token %d of rank %d: the wrong row", ft, fs);
    else
        snprintf(out, outlen, "the bytes match no token row (bad length or offset?)");
}

static int check_expand_x_rows(engine *e, const dispatch_normal_state *st, uint16_t *want,
                               uint8_t *got, char *msg, size_t msglen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    const dispatch_normal_args *a = &st->args;
    int64_t bad = 0, total = 0;
    for (int q = 0; q < sh->num_ranks; q++)
        for (int64_t r = 0; r < p->x_rows[q]; r++) {
            const int32_t *info = p->x_src_info + (p->x_row_base[q] + r) * COMBINE_NORMAL_SRC_INFO_LEN;
            int s = info[0], t = info[1], k = info[2];
            total++;
            if (npurr_gm_read(e, gm_add(a->expand_x[q], r * (int64_t)a->row_bytes), got,
                            a->row_bytes)) {
                snprintf(msg, msglen, "expandX on rank %d: row %lld is outside its allocation", q,
                         (long long)r);
                return 1;
            }
            combine_fill_row(want, sh->hidden, sh->data_seed, s, t, 0, s);
            if (memcmp(got, want, a->row_bytes) == 0) continue;
            if (bad++ > 0) continue;
            uint32_t b = 0;
            while (((const uint8_t *)want)[b] == got[b]) b++;
            char why[160];
            row_diagnosis(got, sh, s, t, why, sizeof why);
            snprintf(msg, msglen,
                     "rank %d expandX row %lld (token %d slot %d of rank %d): byte %u is 0x%02x, "
                     "expected 0x%02x; %s",
                     q, (long long)r, t, k, s, b, got[b], ((const uint8_t *)want)[b], why);
        }
    return combine_count_bad(msg, msglen, bad, total, "expandX rows");
}

/* expandX row by row against the generated token rows, in two scratch rows. */
static int check_expand_x(engine *e, const dispatch_normal_state *st, char *msg, size_t msglen) {
    uint16_t *want = malloc(st->plan.sh.row_bytes + 2u);
    uint8_t *got = malloc(st->plan.sh.row_bytes + 2u);
    int rc = 1;
    if (!want || !got)
        snprintf(msg, msglen, "dispatch-normal check: out of host memory");
    else
        rc = check_expand_x_rows(e, st, want, got, msg, msglen);
    free(want);
    free(got);
    return rc;
}

static int check_expand_idx(engine *e, const dispatch_normal_state *st, char *msg,
                            size_t msglen) {
    const combine_plan *p = &st->plan;
    for (int q = 0; q < p->sh.num_ranks; q++) {
        uint64_t n = (uint64_t)p->x_rows[q] * COMBINE_NORMAL_SRC_INFO_LEN;
        const int32_t *got = n ? npurr_gm_host(e, st->args.expand_idx[q], n * 4) : NULL;
        if (n && !got) {
            snprintf(msg, msglen, "expandIdx on rank %d: no host view", q);
            return 1;
        }
        const int32_t *want = p->x_src_info + p->x_row_base[q] * COMBINE_NORMAL_SRC_INFO_LEN;
        for (uint64_t i = 0; i < n; i++) {
            if (got[i] == want[i]) continue;
            uint64_t r = i / COMBINE_NORMAL_SRC_INFO_LEN;
            const int32_t *w = want + r * COMBINE_NORMAL_SRC_INFO_LEN;
            const int32_t *g = got + r * COMBINE_NORMAL_SRC_INFO_LEN;
            snprintf(msg, msglen,
                     "rank %d expandIdx row %llu is (%d, %d, %d), expected (rank %d, token %d, "
                     "slot %d)",
                     q, (unsigned long long)r, g[0], g[1], g[2], w[0], w[1], w[2]);
            return 1;
        }
    }
    return 0;
}

/* Both normal kernels' status slots are A2's 32 B STATE_OFFSET. */
_Static_assert(DNORMAL_STATE_BYTES == COMBINE_NORMAL_STATE_BYTES, "status slot size");

static int check_states(engine *e, const dispatch_normal_state *st, char *msg, size_t msglen) {
    const combine_shape *sh = &st->plan.sh;
    return combine_normal_check_status(e, st->args.state_base, sh->num_ranks,
                                       (uint64_t)sh->experts * DNORMAL_STATE_BYTES, "local expert",
                                       "from rank", (uint64_t)sh->num_ranks,
                                       "it arrived after its owner had cleared it", msg, msglen);
}

static int check_data_state(engine *e, const dispatch_normal_state *st, char *msg,
                            size_t msglen) {
    const combine_shape *sh = &st->plan.sh;
    for (int q = 0; q < sh->num_ranks; q++)
        for (int c = 0; c < sh->cores; c++) {
            int32_t v;
            if (npurr_gm_read(e, gm_add(st->args.data_state[q], (int64_t)c * DNORMAL_DATA_STATE_STRIDE),
                            &v, 4) == 0 && v == 1)
                continue;
            snprintf(msg, msglen, "rank %d core %d: its dataState word was not toggled to 1", q, c);
            return 1;
        }
    return 0;
}

/* --nodes 2: expandScales row r is the top-k weight of the (s, t, k) it
 * holds, bit for bit (Ipc2Out copies it from the token struct). */
static int check_expand_scales(engine *e, const dispatch_normal_state *st, char *msg,
                               size_t msglen) {
    const combine_plan *p = &st->plan;
    size_t TK = (size_t)p->sh.tokens * (size_t)p->sh.topk, K = (size_t)p->sh.topk;
    for (int q = 0; q < p->sh.num_ranks; q++) {
        uint64_t n = (uint64_t)p->x_rows[q];
        const float *got = n ? npurr_gm_host(e, st->args.expand_scales[q], n * 4) : NULL;
        if (n && !got) {
            snprintf(msg, msglen, "expandScales on rank %d: no host view", q);
            return 1;
        }
        for (uint64_t r = 0; r < n; r++) {
            const int32_t *w = p->x_src_info + (p->x_row_base[q] + (int64_t)r) * 3;
            float want = p->topk_weights[(size_t)w[0] * TK + (size_t)w[1] * K + (size_t)w[2]];
            if (memcmp(&got[r], &want, 4) == 0) continue;
            snprintf(msg, msglen,
                     "rank %d expandScales row %llu is %g, expected %g (the weight of token %d "
                     "slot %d of rank %d)",
                     q, (unsigned long long)r, (double)got[r], (double)want, w[1], w[2], w[0]);
            return 1;
        }
    }
    return 0;
}

/* --nodes 2: each rank's statuses zero after CleanUp, bufferChosen
 * flipped to 1, every core's magic 1 and every IPC flag at the second
 * step (magic * 2 + 2). */
static int check_a2l_state(engine *e, const dispatch_normal_state *st, char *msg,
                           size_t msglen) {
    const dispatch_normal_args *a = &st->args;
    for (int q = 0; q < a->num_ranks; q++) {
        gm_t in = gm_on_rank(a->win_in_base, q), ipc = gm_on_rank(a->ipc_base, q);
        const uint8_t *status = npurr_gm_host(e, gm_add(in, (int64_t)dnl_status_at(a)),
                                            a->clean_bytes);
        if (!status) {
            snprintf(msg, msglen, "rank %d: no host view of its statuses", q);
            return 1;
        }
        for (uint32_t b = 0; b < a->clean_bytes; b++) {
            if (!status[b]) continue;
            snprintf(msg, msglen,
                     "rank %d status from server %u is still set after CleanUp: it arrived "
                     "after the rank had cleared it, so the rank did not wait for it",
                     q, b / DNL_STATE_OFFSET);
            return 1;
        }
        int32_t chosen = 0;
        if (npurr_gm_read(e, gm_add(in, (int64_t)dnl_chosen_at(a)), &chosen, 4) || chosen != 1) {
            snprintf(msg, msglen, "rank %d: bufferChosen is %d, not flipped to 1", q, chosen);
            return 1;
        }
        for (int i = 0; i < a->npus + st->plan.sh.cores; i++) {
            int flag = i < a->npus;
            int64_t v = 0, want = flag ? 2 * 1 + DNL_IPC_STEP_2 : 1;
            uint64_t at = flag ? (uint64_t)i * DNL_IPC_FLAG_BYTES
                               : (uint64_t)a->npus * DNL_IPC_FLAG_BYTES +
                                     (uint64_t)(i - a->npus) * UB_ALIGN;
            if (npurr_gm_read(e, gm_add(ipc, (int64_t)at), &v, 8) == 0 && v == want) continue;
            snprintf(msg, msglen, "rank %d: IPC %s %d is %lld, expected %lld", q,
                     flag ? "flag from local rank" : "magic of core", flag ? i : i - a->npus,
                     (long long)v, (long long)want);
            return 1;
        }
    }
    return 0;
}

int dispatch_normal_check(engine *e, void *state, char *msg, size_t msglen) {
    dispatch_normal_state *st = state;
    int rc;
    if (st->plan.sh.nodes > 1)
        rc = kit_guards_check(e, &st->guards, msg, msglen) ||
             check_expand_x(e, st, msg, msglen) || check_expand_scales(e, st, msg, msglen) ||
             check_a2l_state(e, st, msg, msglen);
    else
        rc = kit_guards_check(e, &st->guards, msg, msglen) ||
             check_expand_x(e, st, msg, msglen) || check_expand_idx(e, st, msg, msglen) ||
             check_states(e, st, msg, msglen) || check_data_state(e, st, msg, msglen);
    if (rc == 0 && msglen) msg[0] = '\0';
    return rc;
}

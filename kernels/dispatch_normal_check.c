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
            if (kit_gm_read(e, gm_add(a->expand_x[q], r * (int64_t)a->row_bytes), got,
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
        const int32_t *got = n ? kit_gm_host(e, st->args.expand_idx[q], n * 4) : NULL;
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
            if (kit_gm_read(e, gm_add(st->args.data_state[q], (int64_t)c * DNORMAL_DATA_STATE_STRIDE),
                            &v, 4) == 0 && v == 1)
                continue;
            snprintf(msg, msglen, "rank %d core %d: its dataState word was not toggled to 1", q, c);
            return 1;
        }
    return 0;
}

int dispatch_normal_check(engine *e, void *state, char *msg, size_t msglen) {
    dispatch_normal_state *st = state;
    int rc = kit_guards_check(e, &st->guards, msg, msglen) ||
             check_expand_x(e, st, msg, msglen) || check_expand_idx(e, st, msg, msglen) ||
             check_states(e, st, msg, msglen) || check_data_state(e, st, msg, msglen);
    if (rc == 0 && msglen) msg[0] = '\0';
    return rc;
}

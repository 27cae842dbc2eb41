/*
 * combine_normal_check.c - the checks after a combine-normal run.
 *
 * In order, the first failure names what broke:
 *   1. guards: every byte after every buffer, the status area and the
 *      window still holds what setup wrote;
 *   2. windows: on every owner, each live (token, slot)'s row in the window
 *      equals, byte for byte, the expert output of that token and slot
 *      (rows carry token tags, so a row in the wrong slot says whose it is);
 *   3. the weighted sum, the same reference and tolerance as the
 *      combine-sender kernels (combine_check_out);
 *   4. status slots: every one is zero again, as the owner clears each
 *      token's slots after it has waited for them; a status still set was
 *      written after its owner had already cleared the token (the owner
 *      did not wait for it).
 */
#include "combine.h"

#include <stdlib.h>
#include <string.h>

/* Why does the row in a window differ: never written, or someone else's. */
static void row_diagnosis(const uint8_t *got, const combine_shape *sh, int t, int k, int q,
                          char *out, size_t outlen) {
    uint32_t nz = 0;
    for (uint32_t b = 0; b < sh->row_bytes; b++) nz += got[b] != 0;
    int ft, fk, fp;
    if (nz == 0)
        snprintf(out, outlen, "the slot is all zeros: the row never landed");
    else if (combine_decode_tag((const uint16_t *)(const void *)got, sh->hidden, &ft, &fk, &fp) &&
             (ft != t || fk != k || fp != q))
        snprintf(out, outlen, "the row's tag says token %d slot %d from rank %d: written to the "
                 "wrong slot", ft, fk, fp);
    else
        snprintf(out, outlen, "the bytes match no other row (bad length or offset?)");
}

static int check_windows(engine *e, const combine_state *st, uint16_t *want, uint8_t *got,
                         char *msg, size_t msglen) {
    const combine_plan *p = &st->plan;
    const combine_shape *sh = &p->sh;
    const combine_args *a = &st->args;
    int T = sh->tokens, K = sh->topk;
    int64_t bad = 0, total = 0;
    for (int s = 0; s < sh->num_ranks; s++)
        for (int i = 0; i < T * K; i++) {
            int32_t ex = p->expert_ids[(size_t)s * (size_t)T * (size_t)K + (size_t)i];
            if (ex < 0) continue;
            total++;
            int t = i / K, k = i % K, q = ex / sh->local_experts;
            gm_t at = gm_add(gm_on_rank(a->window_base, s), (int64_t)i * a->window_stride);
            if (npurr_gm_read(e, at, got, sh->row_bytes)) {
                snprintf(msg, msglen, "window on rank %d: slot %d is outside its allocation", s, i);
                return 1;
            }
            combine_fill_row(want, sh->hidden, sh->data_seed, s, t, k, q);
            if (memcmp(got, want, sh->row_bytes) == 0) continue;
            if (bad++ > 0) continue;
            uint32_t b = 0;
            while (((const uint8_t *)want)[b] == got[b]) b++;
            char why[160];
            row_diagnosis(got, sh, t, k, q, why, sizeof why);
            snprintf(msg, msglen,
                     "rank %d window slot of token %d slot %d (from rank %d): row byte %u is "
                     "0x%02x, expected 0x%02x; %s",
                     s, t, k, q, b, got[b], ((const uint8_t *)want)[b], why);
        }
    return combine_count_bad(msg, msglen, bad, total, "window rows");
}

int combine_normal_check_status(engine *e, gm_t base, int num_ranks, uint64_t bytes,
                                const char *outer, const char *inner, uint64_t per_outer,
                                const char *late, char *msg, size_t msglen) {
    for (int q = 0; q < num_ranks; q++) {
        const uint8_t *state = npurr_gm_host(e, gm_on_rank(base, q), bytes);
        if (!state) {
            snprintf(msg, msglen, "status area on rank %d: no host view", q);
            return 1;
        }
        for (uint64_t b = 0; b < bytes; b++) {
            if (state[b] == 0) continue;
            uint64_t slot = b / COMBINE_NORMAL_STATE_BYTES;
            snprintf(msg, msglen,
                     "rank %d status of %s %llu %s %llu is still set after the run (byte %llu "
                     "is 0x%02x): %s, so the owner did not wait for it",
                     q, outer, (unsigned long long)(slot / per_outer), inner,
                     (unsigned long long)(slot % per_outer),
                     (unsigned long long)(b % COMBINE_NORMAL_STATE_BYTES), state[b], late);
            return 1;
        }
    }
    return 0;
}

static int check_states(engine *e, const combine_state *st, char *msg, size_t msglen) {
    const combine_shape *sh = &st->plan.sh;
    uint64_t slots = (uint64_t)sh->tokens * (uint64_t)sh->topk;
    return combine_normal_check_status(
        e, st->args.state_base, sh->num_ranks, slots * COMBINE_NORMAL_STATE_BYTES, "token", "slot",
        (uint64_t)sh->topk, "it was written after its owner had cleared the token", msg, msglen);
}

int combine_normal_check(engine *e, void *state, char *msg, size_t msglen) {
    combine_state *st = state;
    uint16_t *want = malloc(st->plan.sh.row_bytes);
    uint8_t *got = malloc(st->plan.sh.row_bytes);
    int rc = 1;
    if (!want || !got)
        snprintf(msg, msglen, "combine-normal check: out of host memory");
    else
        rc = kit_guards_check(e, &st->guards, msg, msglen) ||
             check_windows(e, st, want, got, msg, msglen) ||
             combine_check_out(e, &st->plan, &st->args, msg, msglen) ||
             check_states(e, st, msg, msglen);
    free(want);
    free(got);
    if (rc == 0 && msglen) msg[0] = '\0';
    return rc;
}

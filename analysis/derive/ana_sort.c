/*
 * ana_sort.c - a stable radix sort of 64-bit keys with 32-bit payloads.
 *
 * The classifier orders millions of waits by end seq and by (core, end
 * seq), and the events pass needs the waits' seqs sorted. qsort with a
 * comparator that chases indexes costs a function call and two cache
 * misses per comparison; sorting (key, index) pairs by 11-bit digits is a
 * few sequential passes, and passes whose digit is the same for every key
 * (the high bits of seqs and core numbers) are skipped. Stability lets a
 * second sort by another key keep the first order among equal keys.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/derive/derive.h"

#define DIGIT_BITS 11
#define BUCKETS (1u << DIGIT_BITS)

int ana_radix_sort(uint64_t *keys, uint32_t *vals, size_t n) {
    if (n < 2) return 0;
    uint64_t *tk = malloc(n * sizeof *tk);
    uint32_t *tv = vals ? malloc(n * sizeof *tv) : NULL;
    size_t *count = malloc(BUCKETS * sizeof *count);
    if (!tk || (vals && !tv) || !count) {
        free(tk);
        free(tv);
        free(count);
        return -1;
    }
    uint64_t *k = keys, *ok = tk;
    uint32_t *v = vals, *ov = tv;
    for (unsigned shift = 0; shift < 64; shift += DIGIT_BITS) {
        memset(count, 0, BUCKETS * sizeof *count);
        for (size_t i = 0; i < n; i++) count[(k[i] >> shift) & (BUCKETS - 1)]++;
        if (count[(k[0] >> shift) & (BUCKETS - 1)] == n) continue; /* one digit: in order */
        size_t sum = 0;
        for (size_t b = 0; b < BUCKETS; b++) {
            size_t c = count[b];
            count[b] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t d = count[(k[i] >> shift) & (BUCKETS - 1)]++;
            ok[d] = k[i];
            if (v) ov[d] = v[i];
        }
        uint64_t *sk = k;
        k = ok;
        ok = sk;
        uint32_t *sv = v;
        v = ov;
        ov = sv;
    }
    if (k != keys) {
        memcpy(keys, k, n * sizeof *keys);
        if (vals) memcpy(vals, v, n * sizeof *vals);
    }
    free(tk);
    free(tv);
    free(count);
    return 0;
}

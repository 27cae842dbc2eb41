/*
 * kit_rng.c - the routing's random stream (kit.h): xoshiro256**, seeded
 * through splitmix64 so that every (seed, stream, rank) gets an independent
 * stream and the same arrays on every machine (no libc rand).
 *
 * The mixing functions themselves (kit_mix64, kit_splitmix64) are inline in
 * kit.h: the payload generators call them for every element.
 */
#include "kit.h"

void kit_rng_seed(kit_rng *r, uint64_t seed, uint64_t stream, uint64_t rank) {
    uint64_t x = seed ^ (stream * 0xd1b54a32d192ed03ULL) ^ (rank * 0x8cb92ba72f3d8dd7ULL);
    for (int i = 0; i < 4; i++) r->s[i] = kit_splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t kit_rng_next(kit_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double kit_rng_open01(kit_rng *r) {
    /* 53 random bits, shifted by half an ulp so 0 and 1 are never returned */
    return ((double)(kit_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/*
 * test_npy_fuzz.c - the .npy header parser of `--routing npy:PATH` against
 * hostile input.
 *
 * A handful of exact cases pin what is accepted (a 2-D C-order
 * int32/int64 array, either byte order, NumPy's padding) and what is not
 * (3-D, 1-D, floats, Fortran order, a header cut right after 'descr':,
 * overflowing dimensions). Then a seeded loop makes more than 10,000
 * mutations of valid headers - byte flips, truncations, spliced tokens,
 * lying length fields - and hands each to routing_npy_parse in a buffer of
 * exactly its length, so that under AddressSanitizer (tools/test.sh's
 * second build) any read past the end aborts the test. Whatever the parser
 * accepts must be a shape it could have been given: 2-D, int32/int64, the
 * data offset inside the buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kernels/routing.h"

/* A v1 .npy header for dict text, padded as NumPy pads it (to 64 bytes). */
static size_t make_header(unsigned char *out, size_t cap, const char *dict, int version) {
    size_t pre = version == 1 ? 10 : 12;
    size_t n = strlen(dict);
    size_t total = (pre + n + 1 + 63) / 64 * 64;
    assert_true(total <= cap);
    memcpy(out, "\x93NUMPY", 6);
    out[6] = (unsigned char)version;
    out[7] = 0;
    size_t hlen = total - pre;
    out[8] = (unsigned char)(hlen & 0xff);
    out[9] = (unsigned char)(hlen >> 8);
    if (version != 1) out[10] = out[11] = 0;
    memcpy(out + pre, dict, n);
    memset(out + pre + n, ' ', hlen - n - 1);
    out[total - 1] = '\n';
    return total;
}

/* Parses a private copy of exactly len bytes (so ASan sees any overrun). */
static int parse(const unsigned char *buf, size_t len, routing_npy_header *h, char *err,
                 size_t errlen) {
    unsigned char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len) memcpy(copy, buf, len);
    int rc = routing_npy_parse(copy, len, h, err, errlen);
    free(copy);
    return rc;
}

static int parse_dict(const char *dict, routing_npy_header *h, char *err, size_t errlen) {
    unsigned char buf[1024];
    size_t n = make_header(buf, sizeof buf, dict, 1);
    return parse(buf, n, h, err, errlen);
}

static void test_exact_cases(void **s) {
    (void)s;
    routing_npy_header h;
    char err[256];
    assert_int_equal(parse_dict("{'descr': '<i8', 'fortran_order': False, 'shape': (64, 4), }",
                                &h, err, sizeof err), 0);
    assert_int_equal(h.rows, 64);
    assert_int_equal(h.cols, 4);
    assert_int_equal(h.elem, 8);
    assert_int_equal(h.swap, 0);
    assert_int_equal(h.data_off, 128);   /* 10 + 62 + newline, padded to 64 */
    assert_int_equal(h.data_bytes, 64 * 4 * 8);
    assert_int_equal(parse_dict("{'descr': '>i4', 'fortran_order': False, 'shape': (3, 2)}", &h,
                                err, sizeof err), 0);
    assert_int_equal(h.elem, 4);
    assert_int_equal(h.swap, 1);

    static const struct { const char *dict, *why; } bad[] = {
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (64, 4, 2), }", "2-D"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (64,), }", "2-D"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (), }", "2-D"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (64, 0), }", "2-D"},
        {"{'descr': '<f8', 'fortran_order': False, 'shape': (64, 4), }", "dtype"},
        {"{'descr': '<i2', 'fortran_order': False, 'shape': (64, 4), }", "dtype"},
        {"{'descr': '<u8', 'fortran_order': False, 'shape': (64, 4), }", "dtype"},
        {"{'descr': '<i8', 'fortran_order': True, 'shape': (64, 4), }", "Fortran"},
        {"{'descr':", "malformed"},
        {"{'descr': '<i8', 'fortran_order': False}", "lacks 'shape'"},
        {"{'descr': '<i8', 'descr': '<i8', 'fortran_order': False, 'shape': (1, 1)}", "repeated"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (99999999999999999999, 4)}",
         "malformed"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (4611686018427387904, 4)}",
         "implausible"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (64, 4)} x", "malformed"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        if (parse_dict(bad[i].dict, &h, err, sizeof err) != -1)
            fail_msg("accepted %s", bad[i].dict);
        if (!strstr(err, bad[i].why)) fail_msg("%s: message '%s' lacks '%s'", bad[i].dict, err,
                                               bad[i].why);
    }
    /* The preamble lies about the header's length: nothing is read past it. */
    unsigned char buf[128];
    size_t n = make_header(buf, sizeof buf,
                           "{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2)}", 1);
    buf[8] = 0xff;
    buf[9] = 0xff;
    assert_int_equal(parse(buf, n, &h, err, sizeof err), -1);
    assert_non_null(strstr(err, "truncated"));
    /* The header cut right after 'descr': (a heap overflow before). */
    const char *cut = "{'descr':";
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (unsigned char)strlen(cut);
    buf[9] = 0;
    memcpy(buf + 10, cut, strlen(cut));
    assert_int_equal(parse(buf, 10 + strlen(cut), &h, err, sizeof err), -1);
}

static uint64_t rng_state = 0x853c49e6748fea9bull;
static uint32_t rnd(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static const char *const tokens[] = {
    "'descr'", "'fortran_order'", "'shape'", ":", ",", "(", ")", "{", "}", "'<i8'", "'<i4'",
    "'>i8'", "'<f8'", "True", "False", "0", "1", "64", "18446744073709551616", "-5",
    "(64, 4, 2)", "(64,)", "'", "\"", "\\", "\n", " ", "L", "'descr':", ""};
#define N_TOKENS (sizeof tokens / sizeof tokens[0])

static const char *const seeds[] = {
    "{'descr': '<i8', 'fortran_order': False, 'shape': (64, 4), }",
    "{'descr': '<i4', 'fortran_order': False, 'shape': (1024, 8), }",
    "{\"descr\": \">i8\", \"fortran_order\": False, \"shape\": (7, 3)}",
};

/* One mutation of a seed header into out; returns its length. */
static size_t mutate(unsigned char *out, size_t cap) {
    unsigned char base[512];
    const char *seed = seeds[rnd() % (sizeof seeds / sizeof seeds[0])];
    size_t n = make_header(base, sizeof base, seed, 1 + rnd() % 3);
    memcpy(out, base, n);
    int edits = 1 + (int)(rnd() % 4);
    for (int e = 0; e < edits; e++) {
        switch (rnd() % 5) {
        case 0:   /* flip bits of one byte */
            if (n) out[rnd() % n] ^= (unsigned char)(1u << (rnd() % 8));
            break;
        case 1:   /* truncate anywhere, the preamble included */
            n = n ? rnd() % n : 0;
            break;
        case 2: { /* splice a token in place of a span */
            if (n < 12) break;
            size_t at = 10 + rnd() % (n - 10), del = rnd() % 8;
            if (at + del > n) del = n - at;
            const char *t = tokens[rnd() % N_TOKENS];
            size_t tl = strlen(t);
            if (n - del + tl > cap) break;
            memmove(out + at + tl, out + at + del, n - at - del);
            memcpy(out + at, t, tl);
            n = n - del + tl;
            break;
        }
        case 3:   /* a random byte anywhere */
            if (n) out[rnd() % n] = (unsigned char)rnd();
            break;
        default:  /* lie in the length field */
            if (n > 9) {
                out[8] = (unsigned char)rnd();
                out[9] = (unsigned char)(rnd() % 3);
            }
            break;
        }
    }
    return n;
}

static void test_mutated_headers(void **s) {
    (void)s;
    enum { ROUNDS = 20000 };
    unsigned char buf[1024];
    int accepted = 0, refused = 0;
    for (int i = 0; i < ROUNDS; i++) {
        size_t n = mutate(buf, sizeof buf);
        routing_npy_header h;
        char err[256] = "";
        if (parse(buf, n, &h, err, sizeof err) == 0) {
            accepted++;
            assert_true(h.elem == 4 || h.elem == 8);
            assert_true(h.rows >= 0 && h.cols >= 1);
            assert_true(h.data_off <= n);
            assert_int_equal(h.data_bytes, (uint64_t)h.rows * (uint64_t)h.cols * (uint64_t)h.elem);
        } else {
            refused++;
            assert_true(err[0] != 0);   /* every refusal says why */
        }
    }
    /* The loop must exercise both sides, or it tests nothing. */
    assert_true(accepted > 100);
    assert_true(refused > ROUNDS / 2);
    printf("npy fuzz: %d mutated headers, %d accepted, %d refused\n", ROUNDS, accepted, refused);
}

/* Writes dict's header and data_bytes of little-endian int32 data to path:
 * rows [0, 1], [0, 1], ... (distinct experts, as a top-2 routing needs). */
static void write_file(const char *path, const char *dict, size_t data_bytes) {
    unsigned char buf[1024];
    size_t n = make_header(buf, sizeof buf, dict, 1);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(buf, 1, n, f), n);
    for (size_t i = 0; i < data_bytes; i++) fputc(i % 4 == 0 ? (int)(i / 4 % 2) : 0, f);
    fclose(f);
}

static int generate(const char *path, int ranks, int tokens, char *err, size_t errlen) {
    char text[300];
    snprintf(text, sizeof text, "npy:%s", path);
    routing_spec spec;
    if (routing_parse(text, &spec, err, errlen)) return -1;
    routing_shape sh = {.num_ranks = ranks, .nodes = 1, .npus_per_node = ranks, .experts = 8,
                        .topk = 2};
    int32_t ids[64];
    float w[64];
    return routing_generate(&spec, &sh, 1, 0, tokens, ids, w, err, errlen);
}

/* Whole files: exactly the rows the run needs, exactly the bytes the
 * header announces. */
static void test_files(void **s) {
    (void)s;
    char dir[] = "/tmp/npurr_npyfuzz_XXXXXX", path[200], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/r.npy", dir);
    const char *two = "{'descr': '<i4', 'fortran_order': False, 'shape': (8, 2), }";
    write_file(path, two, 8 * 2 * 4);
    assert_int_equal(generate(path, 2, 4, err, sizeof err), 0);    /* 2 ranks x 4 tokens */
    assert_int_equal(generate(path, 2, 3, err, sizeof err), -1);   /* 6 of 8 rows: not exact */
    assert_non_null(strstr(err, "need exactly 6"));
    write_file(path, two, 8 * 2 * 4 - 1);                         /* data one byte short */
    assert_int_equal(generate(path, 2, 4, err, sizeof err), -1);
    assert_non_null(strstr(err, "announces"));
    write_file(path, "{'descr': '<i4', 'fortran_order': False, 'shape': (8, 2, 1), }", 64);
    assert_int_equal(generate(path, 2, 4, err, sizeof err), -1);
    assert_non_null(strstr(err, "2-D"));
    unlink(path);
    rmdir(dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exact_cases),
        cmocka_unit_test(test_mutated_headers),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

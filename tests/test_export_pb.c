/*
 * test_export_pb.c - the hand-written protobuf encoder of the Perfetto
 * export (analysis/present/ana_pb.c) against bytes worked out from the protobuf
 * encoding rules: varints, negative int64s, fixed64, doubles, strings and
 * nested messages with exact lengths. The whole export is decoded by
 * protoc in tests/e2e/export_perfetto.sh; this pins the wire format itself.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "analysis/present/ana_pb.h"

static void expect_bytes(const pb_buf *b, const uint8_t *want, size_t n) {
    assert_false(b->oom);
    assert_int_equal(b->n, n);
    assert_memory_equal(b->p, want, n);
}

static void test_varints(void **state) {
    (void)state;
    pb_buf b = {0};
    pb_varint(&b, 0);
    pb_varint(&b, 1);
    pb_varint(&b, 127);
    pb_varint(&b, 128);
    pb_varint(&b, 300);
    static const uint8_t want[] = {0x00, 0x01, 0x7f, 0x80, 0x01, 0xac, 0x02};
    expect_bytes(&b, want, sizeof want);
    pb_reset(&b);
    pb_varint(&b, UINT64_MAX);   /* ten bytes, the last 0x01 */
    static const uint8_t max[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    expect_bytes(&b, max, sizeof max);
    pb_free(&b);
}

static void test_fields(void **state) {
    (void)state;
    pb_buf b = {0};
    pb_uint(&b, 1, 150);            /* the protobuf guide's example: 08 96 01 */
    pb_int(&b, 2, -1);              /* int64 -1: ten-byte two's complement */
    pb_uint(&b, 60, 1);             /* field 60: a two-byte tag (0xe0 0x03) */
    static const uint8_t want[] = {0x08, 0x96, 0x01, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0x01, 0xe0, 0x03, 0x01};
    expect_bytes(&b, want, sizeof want);
    pb_reset(&b);
    pb_fixed64(&b, 47, 0x0102030405060708ull);   /* tag (47 << 3 | 1) = 0x179 */
    pb_double(&b, 44, 1.0);                      /* 0x3ff0000000000000, little-endian */
    static const uint8_t fx[] = {0xf9, 0x02, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
                                 0xe1, 0x02, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f};
    expect_bytes(&b, fx, sizeof fx);
    pb_reset(&b);
    pb_str(&b, 2, "testing");
    static const uint8_t str[] = {0x12, 0x07, 't', 'e', 's', 't', 'i', 'n', 'g'};
    expect_bytes(&b, str, sizeof str);
    pb_free(&b);
}

static void test_nested(void **state) {
    (void)state;
    pb_buf inner = {0}, outer = {0};
    pb_uint(&inner, 1, 150);
    pb_msg(&outer, 3, &inner);      /* 1a 03 08 96 01 */
    static const uint8_t want[] = {0x1a, 0x03, 0x08, 0x96, 0x01};
    expect_bytes(&outer, want, sizeof want);
    /* A 200-byte message gets a two-byte length. */
    pb_reset(&inner);
    uint8_t blob[198];
    memset(blob, 'x', sizeof blob);
    pb_bytes(&inner, 1, blob, sizeof blob);   /* 0a c6 01 + 198 = 201 bytes */
    pb_reset(&outer);
    pb_msg(&outer, 11, &inner);
    assert_int_equal(outer.n, 1 + 2 + 201);
    assert_int_equal(outer.p[0], 0x5a);
    assert_int_equal(outer.p[1], 0xc9);
    assert_int_equal(outer.p[2], 0x01);
    pb_free(&inner);
    pb_free(&outer);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varints),
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_nested),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

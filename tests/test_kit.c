/*
 * test_kit.c - the kernel kit (kernels/kit.h): the shared options
 * read with the messages the kernels always gave, payload tags that read
 * back what was written and refuse what is not a tag, and guard regions
 * that catch one byte written past a buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "npurr/device.h"
#include "engine/engine.h"
#include "kernels/kernels.h"
#include "kernels/kit.h"

static const kernel_option opts[] = {
    KIT_OPT_TOKENS("16"),      KIT_OPT_HIDDEN("64", ""), KIT_OPT_TOPK("2"),
    KIT_OPT_EXPERTS("8", ""),  KIT_OPT_ROUTING("uniform"), KIT_OPT_DATA_SEED("the test"),
    KIT_OPT_INJECT("a | b"),   {NULL, NULL, NULL},
};
static const kernel_desc desc = {.name = "kit-test", .options = opts};

static void test_moe_options_read_and_refused(void **state) {
    (void)state;
    char err[256];
    kernel_opts o;
    kopts_init(&o, &desc);
    kit_moe_limits lim = {.tokens = 1024, .hidden = 4096, .topk = 8, .experts = 64, .rows = 200};
    kit_moe m;
    assert_int_equal(kit_read_moe(&o, 4, &lim, &m, err, sizeof err), 0);
    assert_int_equal(m.tokens, 16);
    assert_int_equal(m.local_experts, 2);
    kopts_set(&o, "experts", "9");
    assert_int_equal(kit_read_moe(&o, 4, &lim, &m, err, sizeof err), -1);
    assert_non_null(strstr(err, "--experts 9"));
    kopts_set(&o, "experts", "8");
    kopts_set(&o, "tokens", "26");   /* 26 x 2 x 4 = 208 rows > 200 */
    assert_int_equal(kit_read_moe(&o, 4, &lim, &m, err, sizeof err), -1);
    assert_string_equal(err, "--tokens 26 x --topk 2 x 4 ranks: too many rows for int32 tables");
    lim.tokens = 0;   /* the kernel reads tokens itself */
    assert_int_equal(kit_read_moe(&o, 4, &lim, &m, err, sizeof err), 0);
    assert_int_equal(m.tokens, 0);
    uint64_t seed = 0;
    assert_int_equal(kit_read_seed(&o, &seed, err, sizeof err), 0);
    assert_int_equal(seed, 1);
}

static void test_inject_names_the_faults(void **state) {
    (void)state;
    char err[256];
    kernel_opts o;
    kopts_init(&o, &desc);
    static const char *const two[] = {"none", "a", NULL};
    static const char *const three[] = {"none", "a", "b", NULL};
    int which = -1;
    assert_int_equal(kit_read_inject(&o, three, &which, err, sizeof err), 0);
    assert_int_equal(which, 0);
    kopts_set(&o, "inject", "b");
    assert_int_equal(kit_read_inject(&o, three, &which, err, sizeof err), 0);
    assert_int_equal(which, 2);
    assert_int_equal(kit_read_inject(&o, two, &which, err, sizeof err), -1);
    assert_string_equal(err, "--inject b: unknown fault (expected none or a)");
    kopts_set(&o, "inject", "c");
    assert_int_equal(kit_read_inject(&o, three, &which, err, sizeof err), -1);
    assert_string_equal(err, "--inject c: unknown fault (expected none, a or b)");
}

static void test_tags_round_trip(void **state) {
    (void)state;
    static const int widths[] = {3, 1, 2};
    int values[] = {0x12345, 7, 300}, back[3];
    uint16_t row[16];
    kit_fill_tagged_bf16(row, 16, values, widths, 3, 42);
    assert_int_equal(kit_tag_decode_bf16(row, 16, widths, 3, back), 1);
    assert_memory_equal(back, values, sizeof values);
    assert_int_equal(kit_tag_decode_bf16(row, 5, widths, 3, back), 0);   /* too short */
    row[1] = float_to_bf16(0.5f);   /* not an integer: not a tag */
    assert_int_equal(kit_tag_decode_bf16(row, 16, widths, 3, back), 0);
    uint8_t bytes[8];
    assert_int_equal(kit_tag_bytes(values, widths, 3, bytes), 6);
    kit_tag_decode_bytes(bytes, widths, 3, back);
    assert_memory_equal(back, values, sizeof values);
    assert_int_equal(kit_align_up(33, 32), 64);
    assert_int_equal(kit_align_down(63, 32), 32);
}

static void test_guard_catches_one_byte_past_the_end(void **state) {
    (void)state;
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = 1;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    kit_guards g;
    kit_guards_init(&g, "kit test", 0xA5);
    gm_t a, b;
    kit_buffer bufs[] = {{40, "kit.a", 1, &a}, {8, "kit.b", 0, &b}};
    assert_int_equal(kit_alloc_all(e, &g, 0, bufs, 2, err, sizeof err), 0);
    assert_int_equal(g.n, 1);   /* only the guarded buffer */
    assert_int_equal(kit_guards_check(e, &g, err, sizeof err), 0);
    uint8_t *h = engine_gm_host(e, gm_add(a, 40), 1);
    assert_non_null(h);
    h[0] = 0;
    assert_int_equal(kit_guards_check(e, &g, err, sizeof err), 1);
    assert_non_null(strstr(err, "kit.a on rank 0: byte 0 of the guard region"));
    kit_guards_free(&g);
    engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_moe_options_read_and_refused),
        cmocka_unit_test(test_inject_names_the_faults),
        cmocka_unit_test(test_tags_round_trip),
        cmocka_unit_test(test_guard_catches_one_byte_past_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

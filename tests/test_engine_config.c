/*
 * test_engine_config.c - the engine configuration table (engine/config.c)
 * and the ring-kind name table (engine/objects.c): names map both ways,
 * engine_create refuses what the table refuses, and a declared ring keeps
 * its kind and writes the level text the trace has always held.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "engine/engine.h"

/* An engine of one node with npus NPUs of the given chip. */
static engine *make(int npus, engine_chip chip) {
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    cfg.npus_per_node = npus;
    cfg.chip = chip;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_OK);
    return e;
}

static void test_chip_names_map_both_ways(void **state) {
    (void)state;
    engine_chip c = CHIP_910B4;
    assert_int_equal(engine_chip_parse("910B2", &c), 0);
    assert_int_equal(c, CHIP_910B2);
    assert_int_equal(engine_chip_parse("910b4", &c), 0);   /* case-insensitive, as --chip */
    assert_int_equal(c, CHIP_910B4);
    assert_string_equal(engine_chip_name(CHIP_910B4), "910B4");
    assert_int_equal(engine_chip_get(CHIP_910B2)->aiv, 48);
    assert_int_equal(engine_chip_get(CHIP_910B4)->aic, 20);
    c = CHIP_910B2;
    assert_int_equal(engine_chip_parse("910C", &c), -1);
    assert_int_equal(engine_chip_parse(NULL, &c), -1);
    assert_int_equal(c, CHIP_910B2);   /* untouched on failure */
    assert_null(engine_chip_get((engine_chip)7));
    assert_string_equal(engine_chips_text(), "910B2 or 910B4");
}

static void test_create_refuses_out_of_range(void **state) {
    (void)state;
    char err[ENGINE_ERRLEN];
    engine_config cfg;
    engine_config_defaults(&cfg);
    assert_int_equal(engine_config_check(&cfg, err, sizeof err), ENGINE_OK);
    const engine_config_limit *nodes = engine_config_limit_get(ENGINE_LIMIT_NODES);
    cfg.nodes = (int)nodes->hi + 1;
    engine *e = NULL;
    assert_int_equal(engine_create(&cfg, &e, err, sizeof err), ENGINE_ERR);
    assert_null(e);
    assert_string_equal(err, "--nodes 1025: must be between 1 and 1024");
    engine_config_defaults(&cfg);
    cfg.npus_per_node = 9;
    assert_int_equal(engine_config_check(&cfg, err, sizeof err), ENGINE_ERR);
    assert_string_equal(err, "--npus-per-node 9: must be between 1 and 8 (HCCS full mesh of 8)");
    engine_config_defaults(&cfg);
    cfg.jitter = 0.75;
    assert_int_equal(engine_config_check(&cfg, err, sizeof err), ENGINE_ERR);
    assert_string_equal(err, "--jitter 0.75: must be between 0 and 0.5");
    engine_config_defaults(&cfg);
    cfg.chip = (engine_chip)5;
    assert_int_equal(engine_config_check(&cfg, err, sizeof err), ENGINE_ERR);
    assert_non_null(strstr(err, "910B2 or 910B4"));
    assert_string_equal(engine_config_limit_get(ENGINE_LIMIT_JITTER)->key, "config.jitter");
    assert_null(engine_config_limit_get(ENGINE_LIMIT_COUNT));
}

static void test_chip_sets_the_core_counts(void **state) {
    (void)state;
    engine *e = make(1, CHIP_910B4);
    assert_int_equal(engine_num_aic(e), 20);
    assert_int_equal(engine_num_aiv(e), 40);
    engine_destroy(e);
}

static void test_ring_kind_names(void **state) {
    (void)state;
    assert_string_equal(engine_ring_kind_name(RING_RDMA), "rdma");
    assert_string_equal(engine_ring_kind_name(RING_HCCS), "hccs");
    assert_string_equal(engine_ring_kind_name(RING_LOCAL), "local");
    assert_string_equal(engine_ring_kind_name(RING_NONE), "");
    assert_int_equal(engine_ring_kind_from_name("rdma"), RING_RDMA);
    assert_int_equal(engine_ring_kind_from_name("hccs"), RING_HCCS);
    assert_int_equal(engine_ring_kind_from_name("RDMA"), RING_NONE);   /* the trace's exact text */
    assert_int_equal(engine_ring_kind_from_name(""), RING_NONE);
    assert_int_equal(engine_ring_kind_from_name(NULL), RING_NONE);
}

static void test_declared_ring_keeps_kind_and_level(void **state) {
    (void)state;
    char err[ENGINE_ERRLEN];
    engine *e = make(2, CHIP_910B2);
    gm_t ctl;
    assert_int_equal(engine_gm_alloc(e, 1, 64, "ctl", &ctl, err, sizeof err), ENGINE_OK);
    uint32_t id = engine_declare_ring(e, "r0->r1", RING_RDMA, ctl, gm_add(ctl, 8), 8, 16, 0, 1);
    assert_true(id > 0);
    const engine_object *ring = engine_object_get(e, id);
    assert_int_equal(ring->ring_kind, RING_RDMA);
    assert_string_equal(engine_string(e, ring->role), "rdma");
    const engine_object *head = engine_object_get(e, ring->head);
    const engine_object *tail = engine_object_get(e, ring->tail);
    assert_int_equal(head->ring_kind, RING_RDMA);
    assert_int_equal(tail->ring_kind, RING_RDMA);
    assert_int_equal(head->role, ring->role);
    engine_destroy(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chip_names_map_both_ways),
        cmocka_unit_test(test_create_refuses_out_of_range),
        cmocka_unit_test(test_chip_sets_the_core_counts),
        cmocka_unit_test(test_ring_kind_names),
        cmocka_unit_test(test_declared_ring_keeps_kind_and_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

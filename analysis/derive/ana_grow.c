/*
 * ana_grow.c - the one growable array of the analysis: an array that
 * doubles when an append finds it full.
 *
 * Derived tables, groups, segments and strings are collected into arrays
 * whose size is known only at the end; each used to carry its own copy of
 * the doubling realloc. Errors are values: the caller says what it was
 * keeping when memory ran out.
 */
#include <stdlib.h>

#include "analysis/derive/derive.h"

int ana_grow(void **p, size_t *cap, size_t need, size_t size, size_t first) {
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : first;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * size);
    if (!q) return -1;
    *p = q;
    *cap = n;
    return 0;
}

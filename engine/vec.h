/*
 * vec.h - the vector unit's instructions as front ends issue them (masks,
 * repeats, block and repeat strides; reductions; Cast with round modes):
 * vec_ops.c queues and applies them, vec_math.c computes the elements.
 * Internal to the engine (the calls are npurr/device_calls.h's dev_vec_*).
 */
#ifndef NPURR_ENGINE_VEC_H
#define NPURR_ENGINE_VEC_H

#include <stdint.h>

#include "npurr/device_calls.h"

/* An element: integer bits (sign-extended for signed types) or a value. */
typedef union vec_val {
    int64_t i;
    double f;
} vec_val;

/* vec_math.c */
int eng_vec_dtype_size(int dtype);
int eng_vec_is_float(int dtype);
vec_val eng_vec_load(const uint8_t *p, int dtype);
void eng_vec_store(uint8_t *p, int dtype, vec_val v);
vec_val eng_vec_convert(vec_val v, int from, int to, int mode);
vec_val eng_vec_binary(int op, int dtype, vec_val a, vec_val b);
vec_val eng_vec_unary(int op, int dtype, vec_val a);
/* x rounded under mode to half (mant_bits 10) or bf16 (7), as bits. */
uint16_t eng_vec_round_16(double x, int mant_bits, int mode);

#endif

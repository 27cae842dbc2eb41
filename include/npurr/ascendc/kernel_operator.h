/*
 * kernel_operator.h - npurr's Ascend C: what a kernel written for the
 * Ascend 910B includes, over npurr's engine.
 *
 * Written from the public Ascend C API reference (CANN's own headers are
 * licensed for Huawei hardware only). Kernels compile unchanged with g++
 * -std=c++17 against this folder and run on every rank of npurr's
 * emulated cluster, recorded, timed and replayed: every call that moves
 * data, waits or synchronises is one event at the kernel's own source
 * line. A call npurr does not model is not declared (the compiler names
 * it) or fails its static_assert; none is a silent no-op. What is
 * supported and how each call is timed: docs/ascendc.md.
 *
 *   npurr_ac_base.h    keywords, half / bfloat16_t, enums, identity
 *   npurr_ac_tensor.h  GlobalTensor, LocalTensor
 *   npurr_ac_pipe.h    TPipe, TQue, TQueBind, TBuf, flags, barriers
 *   npurr_ac_copy.h    DataCopy, DataCopyPad, atomics, data cache
 *   npurr_ac_vector.h  vector arithmetic, Duplicate, Cast, reductions
 *   npurr_ac_hccl.h    GetHcclContext, Hccl
 */
#ifndef NPURR_AC_KERNEL_OPERATOR_H
#define NPURR_AC_KERNEL_OPERATOR_H

#include "npurr_ac_base.h"
#include "npurr_ac_copy.h"
#include "npurr_ac_hccl.h"
#include "npurr_ac_pipe.h"
#include "npurr_ac_tensor.h"
#include "npurr_ac_vector.h"
#include "kernel_tiling/kernel_tiling.h"

#endif

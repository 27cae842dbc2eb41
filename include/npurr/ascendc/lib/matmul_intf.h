/*
 * lib/matmul_intf.h - the matmul library's interface, which Ascend C
 * kernels include whether or not they multiply matrices. npurr's Ascend C
 * headers do not model the Matmul class: a kernel that uses it fails to
 * compile naming Matmul; one that only includes this file compiles.
 */
#ifndef NPURR_AC_MATMUL_INTF_H
#define NPURR_AC_MATMUL_INTF_H

#include "../kernel_operator.h"

#endif

/* Symplex C kernels: plain C ABI (double*, int64 sizes), no Python headers.
 * Loaded with ctypes by addon/solver/native/__init__.py; each kernel has a numpy twin there. */
#ifndef SYMPLEX_KERNELS_H
#define SYMPLEX_KERNELS_H
#include <stdint.h>

#define SYMPLEX_ABI_VERSION 1

int64_t symplex_abi_version(void);

/* Compose a frame tree: world[f] = world[parent[f]] @ local[f] for f = 0..n-1 in order.
 * outputs: world (n+1, 4, 4), row-major; world[n] is set to the identity (parent -1 = world).
 * inputs:  parent (n,), parent[f] < f or -1; local (n, 4, 4) rigid transforms. */
void symplex_tree_forward(int64_t n, const int64_t *parent, const double *local, double *world);

#endif

/* One partial-pivoting step on a dense row-major d x d block, shared by the kernels that pivot inside a block
 * (baraff.c's Gauss-Jordan inverse, block_lu.c's block LU). */
#ifndef SYMPLEX_PIVOT_H
#define SYMPLEX_PIVOT_H
#include <math.h>
#include <stdint.h>

/* Column k's largest |entry| on or below the diagonal (the first on ties), swapped into row k. Returns that
 * row, or -1 when the column is exactly zero there or not finite (nothing is swapped then). */
static inline int64_t symplex_pivot_row(int64_t d, int64_t k, double *a) {
    int64_t p = k;
    double best = fabs(a[k * d + k]);
    for (int64_t i = k + 1; i < d; i++) {
        double v = fabs(a[i * d + k]);
        if (v > best) {
            best = v;
            p = i;
        }
    }
    if (!(best > 0.0) || !isfinite(best)) return -1;
    if (p != k)
        for (int64_t j = 0; j < d; j++) {
            double t = a[k * d + j];
            a[k * d + j] = a[p * d + j];
            a[p * d + j] = t;
        }
    return p;
}

#endif

/* The 3-vector dot and cross products and the row-major 3 x 3 products every kernel that works in 3D uses
 * (collide.c, contact_rows.c, maximal_step.c and the tree kernels through tree_common.h). */
#ifndef SYMPLEX_VEC3_H
#define SYMPLEX_VEC3_H

static inline double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static inline void cross3(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

static inline void mat3_vec(const double *A, const double *x, double *y) /* y = A x */
{
    for (int i = 0; i < 3; ++i) y[i] = dot3(A + 3 * i, x);
}

static inline void mat3_mul(const double *A, const double *B, double *C) /* C = A B */
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

#endif

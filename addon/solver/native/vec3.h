/* The 3-vector dot and cross products every kernel that works in 3D uses (collide.c, contact_rows.c,
 * maximal_step.c and the tree kernels through tree_common.h). */
#ifndef SYMPLEX_VEC3_H
#define SYMPLEX_VEC3_H

static inline double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static inline void cross3(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

#endif

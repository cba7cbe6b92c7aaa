/* The rotation matrix of a quaternion, shared by the kernels that turn body quaternions into matrices
 * (collide.c, contact_rows.c, maximal_step.c); twin of lie.quat_to_matrix. */
#ifndef SYMPLEX_ROTATION_H
#define SYMPLEX_ROTATION_H
#include <math.h>

/* R (3 x 3, row-major) of the quaternion (w, x, y, z), normalised first (lie.quat_to_matrix). */
static inline void symplex_quat_to_matrix(const double *quat, double *r) {
    const double norm = sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]);
    const double w = quat[0] / norm, x = quat[1] / norm, y = quat[2] / norm, z = quat[3] / norm;
    r[0] = 1 - 2 * (y * y + z * z);
    r[1] = 2 * (x * y - w * z);
    r[2] = 2 * (x * z + w * y);
    r[3] = 2 * (x * y + w * z);
    r[4] = 1 - 2 * (x * x + z * z);
    r[5] = 2 * (y * z - w * x);
    r[6] = 2 * (x * z - w * y);
    r[7] = 2 * (y * z + w * x);
    r[8] = 1 - 2 * (x * x + y * y);
}

#endif

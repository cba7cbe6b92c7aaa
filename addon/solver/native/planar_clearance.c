/* Clearance rows of a planar vehicle's body spheres against a sphere or box obstacle, for all stages in one call:
 * the signed distance of each sphere centre, its gradient over the stage state and the exact Hessian of the
 * weighted sum over the spheres. Numpy twin and reference: addon/solver/shots/obstacles.py (_sphere, _box,
 * distance_function) through transcription.py's obstacle blocks (_at_height: a ground vehicle meets the
 * obstacle's cross-section at the obstacle's centre height). Declared in symplex_kernels.h. */
#include <math.h>
#include <string.h>

#include "symplex_kernels.h"

/* Distance of the local point q (3,) to the shape, its local gradient g and Hessian Hl (3x3, row-major). */
static double local_distance(int64_t kind, const double *size, const double q[3], double g[3], double Hl[9]) {
    memset(Hl, 0, 9 * sizeof(double));
    if (kind == 0) {
        double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]);
        for (int i = 0; i < 3; ++i)
            g[i] = n > 0 ? q[i] / n : 0.0;
        if (n > 0)
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j)
                    Hl[3 * i + j] = ((i == j) - g[i] * g[j]) / n;
        return n - size[0];
    }
    double a[3], out[3], sign[3], n2 = 0.0, inside = -INFINITY;
    int face = 0;
    for (int i = 0; i < 3; ++i) {
        a[i] = fabs(q[i]) - size[i];
        out[i] = a[i] > 0 ? a[i] : 0.0;
        n2 += out[i] * out[i];
        sign[i] = q[i] < 0 ? -1.0 : 1.0;
        if (a[i] > inside) {
            inside = a[i];
            face = i;
        }
    }
    if (!(inside > 0)) {
        for (int i = 0; i < 3; ++i)
            g[i] = i == face ? sign[i] : 0.0;
        return inside;
    }
    double n = sqrt(n2), u[3];
    for (int i = 0; i < 3; ++i) {
        u[i] = out[i] / n;
        g[i] = u[i] * sign[i];
    }
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            Hl[3 * i + j] = ((i == j && a[i] > 0) - u[i] * u[j]) / n * sign[i] * sign[j];
    return n;
}

void symplex_planar_clearance(int64_t K, int64_t ns, const double *S, int64_t m, const double *offsets,
                              int64_t kind, const double *centre, const double *R, const double *size,
                              const double *weights, double *d, double *J, double *H) {
    for (int64_t k = 0; k < K; ++k) {
        const double *sk = S + ns * k;
        const double c = cos(sk[0]), s = sin(sk[0]);
        double *Hk = H ? H + ns * ns * k : NULL;
        if (Hk)
            memset(Hk, 0, ns * ns * sizeof(double));
        for (int64_t j = 0; j < m; ++j) {
            const double ox = offsets[2 * j], oy = offsets[2 * j + 1];
            /* the sphere's centre at the obstacle's height, relative to the obstacle, in its frame: q = R^T p */
            const double p[3] = {sk[1] + c * ox - s * oy - centre[0], sk[2] + s * ox + c * oy - centre[1], 0.0};
            double q[3], gl[3], Hl[9], g[2];
            for (int i = 0; i < 3; ++i)
                q[i] = R[i] * p[0] + R[3 + i] * p[1] + R[6 + i] * p[2];
            d[m * k + j] = local_distance(kind, size, q, gl, Hl);
            for (int i = 0; i < 2; ++i) /* world gradient, its height component dropped */
                g[i] = R[3 * i] * gl[0] + R[3 * i + 1] * gl[1] + R[3 * i + 2] * gl[2];
            const double pth[2] = {-s * ox - c * oy, c * ox - s * oy}; /* d centre / d theta */
            if (J) {
                double *Jj = J + ns * (m * k + j);
                memset(Jj, 0, ns * sizeof(double));
                Jj[0] = g[0] * pth[0] + g[1] * pth[1];
                Jj[1] = g[0];
                Jj[2] = g[1];
            }
            if (!Hk)
                continue;
            const double w = weights[m * k + j];
            double Hw[2][2]; /* R Hl R^T over the world's x, y */
            for (int a = 0; a < 2; ++a)
                for (int b = 0; b < 2; ++b) {
                    double sum = 0.0;
                    for (int i = 0; i < 3; ++i)
                        for (int l = 0; l < 3; ++l)
                            sum += R[3 * a + i] * Hl[3 * i + l] * R[3 * b + l];
                    Hw[a][b] = w * sum;
                }
            /* centre's Jacobian over (theta, x, y): rows world x, y */
            const double Jp[2][3] = {{pth[0], 1.0, 0.0}, {pth[1], 0.0, 1.0}};
            for (int a = 0; a < 3; ++a)
                for (int b = 0; b < 3; ++b) {
                    double sum = 0.0;
                    for (int i = 0; i < 2; ++i)
                        for (int l = 0; l < 2; ++l)
                            sum += Jp[i][a] * Hw[i][l] * Jp[l][b];
                    Hk[ns * a + b] += sum;
                }
            /* the centre's curvature in theta: d2 centre / d theta2 = -(c ox - s oy, s ox + c oy) */
            Hk[0] += w * (g[0] * (-c * ox + s * oy) + g[1] * (-s * ox - c * oy));
        }
    }
}

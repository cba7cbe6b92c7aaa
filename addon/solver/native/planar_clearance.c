/* Clearance rows of a planar vehicle's body spheres against a sphere, box, cylinder or convex-hull obstacle, for all
 * stages in one call: the signed distance of each sphere centre, its gradient over the stage state and the exact
 * Hessian of the weighted sum over the spheres. Numpy twin and reference: addon/solver/shots/obstacles.py (_sphere,
 * _box, _cylinder, _hull, distance_function) through transcription.py's obstacle blocks (_at_height: a ground
 * vehicle meets the obstacle's cross-section at the obstacle's centre height). Declared in symplex_kernels.h. */
#include <math.h>
#include <stddef.h>

#include "symplex_kernels.h"

#define INLINE static inline __attribute__((always_inline))
/* The loops over 3 and 9 local entries carry GCC unroll pragmas: their bounds are constants, the same operations run in
 * the same order, with a third fewer instructions than the rolled loops at -O2 (a box's Hessian). */

/* Hl (3x3) += (diag(active) - u u^T) / n scaled by scale_i scale_j: the Hessian of |max(o, 0)| (n its value, u its
 * gradient, active the components above zero) under o_i = scale_i |q_i| - const; nothing at n = 0. The scales are
 * +-1 (signs or ones), whose products are exact: an entry below the diagonal equals its twin above bit for bit, which
 * is copied. Hl is zero on entry. */
INLINE void add_norm_hessian(double *Hl, const double *u, const int *active, double n, const double *scale) {
    if (!Hl || !(n > 0))
        return;
#pragma GCC unroll 3
    for (int i = 0; i < 3; ++i) {
#pragma GCC unroll 3
        for (int j = i; j < 3; ++j) {
            const double top = (i == j && active[i]) - u[i] * u[j];
            if (top != 0.0) /* else the term is a zero, which leaves Hl's +0 as it is */
                Hl[3 * i + j] += top / n * scale[i] * scale[j];
        }
#pragma GCC unroll 3
        for (int j = 0; j < i; ++j)
            Hl[3 * i + j] = Hl[3 * j + i];
    }
}

INLINE double sign_of(double v) { return v < 0 ? -1.0 : 1.0; }

/* Whether the local Hessian's entries are all finite (a zero factor of R then makes its terms exact zeros). */
INLINE int finite(const double Hl[9]) {
#pragma GCC unroll 9
    for (int i = 0; i < 9; ++i)
        if (!isfinite(Hl[i]))
            return 0;
    return 1;
}

/* Whether the local Hessian is zero (its terms in the stage Hessian then add only zeros, which change no sum). */
INLINE int flat(const double Hl[9]) {
#pragma GCC unroll 9
    for (int i = 0; i < 9; ++i)
        if (Hl[i] != 0.0)
            return 0;
    return 1;
}

/* Distance of the local point q (3,) to the shape, its local gradient g and Hessian Hl (3x3, row-major; NULL: not
 * wanted, for the rows alone); shape parameters as in symplex_kernels.h. Formulas of obstacles.py (_sphere, _box,
 * _cylinder, _hull). */
INLINE double local_distance(int64_t kind, const double *par, const double q[3], double g[3], double *Hl) {
    if (Hl)
#pragma GCC unroll 9
        for (int i = 0; i < 9; ++i)
            Hl[i] = 0.0;
    if (kind == 0) { /* sphere */
        const double n = sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2]), one[3] = {1, 1, 1};
        const int all[3] = {1, 1, 1};
        for (int i = 0; i < 3; ++i)
            g[i] = n > 0 ? q[i] / n : 0.0;
        add_norm_hessian(Hl, g, all, n, one);
        return n - par[0];
    }
    if (kind == 3) { /* convex hull: smooth maximum of the face planes */
        const int64_t F = (int64_t)par[0];
        const double beta = par[1], shift = par[2], *normal = par + 3, *offset = par + 3 + 3 * F;
        double top = -INFINITY, total = 0.0, nn[9] = {0};
        for (int64_t f = 0; f < F; ++f) {
            const double s = q[0] * normal[3 * f] + q[1] * normal[3 * f + 1] + q[2] * normal[3 * f + 2] - offset[f];
            if (s > top)
                top = s;
        }
        g[0] = g[1] = g[2] = 0.0;
        for (int64_t f = 0; f < F; ++f) {
            const double *nf = normal + 3 * f;
            const double w = exp(beta * (q[0] * nf[0] + q[1] * nf[1] + q[2] * nf[2] - offset[f] - top));
            total += w;
            for (int i = 0; i < 3; ++i) {
                g[i] += w * nf[i];
                for (int j = 0; j < 3; ++j)
                    nn[3 * i + j] += w * nf[i] * nf[j];
            }
        }
        for (int i = 0; i < 3; ++i)
            g[i] /= total;
        for (int i = 0; i < 3 && Hl; ++i)
            for (int j = 0; j < 3; ++j)
                Hl[3 * i + j] = beta * (nn[3 * i + j] / total - g[i] * g[j]);
        return top + log(total) / beta - shift;
    }
    if (kind == 2) { /* cylinder along local z: radius par[0], half height par[1] */
        const double rho = sqrt(q[0] * q[0] + q[1] * q[1]);
        const double radial[2] = {rho > 0 ? q[0] / rho : 0.0, rho > 0 ? q[1] / rho : 0.0};
        const double a[2] = {rho - par[0], fabs(q[2]) - par[1]}, sz = sign_of(q[2]);
        const double out[2] = {a[0] > 0 ? a[0] : 0.0, a[1] > 0 ? a[1] : 0.0};
        const double n = sqrt(out[0] * out[0] + out[1] * out[1]);
        const double inside = a[1] > a[0] ? a[1] : a[0];
        double d_dq[2];
        if (inside > 0) {
            d_dq[0] = out[0] / n;
            d_dq[1] = out[1] / n;
        } else {
            d_dq[0] = a[0] >= a[1] ? 1.0 : 0.0;
            d_dq[1] = 1.0 - d_dq[0];
        }
        if (inside > 0 && Hl) {
            /* Jq^T (norm Hessian of max(a, 0)) Jq, Jq rows (radial, 0) and (0, 0, sz) */
            const int active[2] = {a[0] > 0, a[1] > 0};
            double h2[2][2];
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j)
                    h2[i][j] = ((i == j && active[i]) - d_dq[i] * d_dq[j]) / n;
            const double Jq[2][3] = {{radial[0], radial[1], 0.0}, {0.0, 0.0, sz}};
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j)
                    for (int p = 0; p < 2; ++p)
                        for (int r = 0; r < 2; ++r)
                            Hl[3 * i + j] += Jq[p][i] * h2[p][r] * Jq[r][j];
        }
        /* the radial distance's curvature: d_dq0 (I - r r^T) / rho in x, y */
        if (Hl && rho > 0 && d_dq[0] != 0.0)
            for (int i = 0; i < 2; ++i)
                for (int j = 0; j < 2; ++j)
                    Hl[3 * i + j] += d_dq[0] * ((i == j) - radial[i] * radial[j]) / rho;
        g[0] = d_dq[0] * radial[0];
        g[1] = d_dq[0] * radial[1];
        g[2] = d_dq[1] * sz;
        return inside > 0 ? n : inside;
    }
    /* box: half extents par[0..2] */
    double a[3], out[3], sign[3], n2 = 0.0, inside = -INFINITY;
    int face = 0;
#pragma GCC unroll 3
    for (int i = 0; i < 3; ++i) {
        a[i] = fabs(q[i]) - par[i];
        out[i] = a[i] > 0 ? a[i] : 0.0;
        n2 += out[i] * out[i];
        sign[i] = sign_of(q[i]);
        if (a[i] > inside) {
            inside = a[i];
            face = i;
        }
    }
    if (!(inside > 0)) {
#pragma GCC unroll 3
        for (int i = 0; i < 3; ++i)
            g[i] = i == face ? sign[i] : 0.0;
        return inside;
    }
    const double n = sqrt(n2);
    double u[3];
    int active[3];
#pragma GCC unroll 3
    for (int i = 0; i < 3; ++i) {
        u[i] = out[i] / n;
        g[i] = u[i] * sign[i];
        active[i] = a[i] > 0;
    }
    add_norm_hessian(Hl, u, active, n, sign);
    return n;
}

/* R Hl R^T over the world's x, y, times w: each entry the sum over i, l of R[a][i] Hl[i][l] R[b][l] in that order. With
 * Hl finite, a term with a zero factor of R is a zero, which leaves the sum (from +0, never -0) as it is: only the
 * terms over R's nonzero entries (used[a][i]: R[a][i] != 0) are summed. */
INLINE void world_hessian(const double *R, const double Hl[9], double w, const int used[2][3], double Hw[2][2]) {
    const int sparse = finite(Hl);
#pragma GCC unroll 2
    for (int a = 0; a < 2; ++a)
#pragma GCC unroll 2
        for (int b = 0; b < 2; ++b) {
            double sum = 0.0;
#pragma GCC unroll 3
            for (int i = 0; i < 3; ++i)
#pragma GCC unroll 3
                for (int l = 0; l < 3; ++l)
                    if (!sparse || (used[a][i] && used[b][l]))
                        sum += R[3 * a + i] * Hl[3 * i + l] * R[3 * b + l];
            Hw[a][b] = w * sum;
        }
}

/* Where each wanted entry of a stage's (ns, ns) Hessian lies in its 3 x 3 block over (theta, x, y), the only one
 * that can be nonzero: slot[p] for the flat position positions[p] (row ns + column), 9 (a zero) outside the block. */
static void hessian_slots(int64_t ns, const int64_t *positions, int64_t n_positions, int *slot) {
    for (int64_t p = 0; p < n_positions; ++p) {
        const int64_t i = positions[p] / ns, j = positions[p] % ns;
        slot[p] = i < 3 && j < 3 ? (int)(3 * i + j) : 9;
    }
}

/* symplex_planar_clearance for one obstacle kind: inlined once per kind (the kind a constant in each copy, its
 * branches gone). slot (n_positions,): hessian_slots of the wanted Hessian entries. */
INLINE void clearance_of_kind(int64_t kind, int64_t K, int64_t ns, const double *S, int64_t m, const double *offsets,
                              const double *centre, const double *R, const double *shape, const double *weights,
                              double *d, double *J, double *H, const int *slot, int64_t n_positions) {
    int used[2][3]; /* the nonzero entries of R's first two rows */
    for (int a = 0; a < 2; ++a)
        for (int i = 0; i < 3; ++i)
            used[a][i] = R[3 * a + i] != 0.0;
    for (int64_t k = 0; k < K; ++k) {
        const double *sk = S + ns * k;
        const double c = cos(sk[0]), s = sin(sk[0]);
        /* the stage's Hessian over (theta, x, y), row-major, and a zero (entry 9: the wanted entries outside it) */
        double Hs[10] = {0.0};
        for (int64_t j = 0; j < m; ++j) {
            const double ox = offsets[2 * j], oy = offsets[2 * j + 1];
            /* the sphere's centre at the obstacle's height, relative to the obstacle, in its frame: q = R^T p */
            const double p[3] = {sk[1] + c * ox - s * oy - centre[0], sk[2] + s * ox + c * oy - centre[1], 0.0};
            double q[3], gl[3], Hl[9], g[2];
#pragma GCC unroll 3
            for (int i = 0; i < 3; ++i)
                q[i] = R[i] * p[0] + R[3 + i] * p[1] + R[6 + i] * p[2];
            const double distance = local_distance(kind, shape, q, gl, H ? Hl : NULL);
            if (d)
                d[m * k + j] = distance;
            for (int i = 0; i < 2; ++i) /* world gradient, its height component dropped */
                g[i] = R[3 * i] * gl[0] + R[3 * i + 1] * gl[1] + R[3 * i + 2] * gl[2];
            const double pth[2] = {-s * ox - c * oy, c * ox - s * oy}; /* d centre / d theta */
            if (J) {
                double *Jj = J + ns * (m * k + j);
                Jj[0] = g[0] * pth[0] + g[1] * pth[1];
                Jj[1] = g[0];
                Jj[2] = g[1];
                for (int64_t i = 3; i < ns; ++i) /* the state past heading and position does not move the sphere */
                    Jj[i] = 0.0;
            }
            if (!H)
                continue;
            const double w = weights[m * k + j];
            /* the centre's curvature in theta: d2 centre / d theta2 = -(c ox - s oy, s ox + c oy) */
            const double turn = w * (g[0] * (-c * ox + s * oy) + g[1] * (-s * ox - c * oy));
            if (flat(Hl)) { /* a face's distance (most spheres most of the time): no curvature in the plane */
                Hs[0] += turn;
                continue;
            }
            double Hw[2][2];
            world_hessian(R, Hl, w, used, Hw);
            /* Jp^T Hw Jp, Jp the centre's Jacobian over (theta, x, y) with rows world x, y: (pth, e_x) and (pth, e_y);
             * its ones and zeros written out (the same products summed in the same order) */
            const double p0 = pth[0], p1 = pth[1];
            double *H0 = Hs, *H1 = Hs + 3, *H2 = Hs + 6;
            H0[0] += p0 * Hw[0][0] * p0 + p0 * Hw[0][1] * p1 + p1 * Hw[1][0] * p0 + p1 * Hw[1][1] * p1;
            H0[1] += p0 * Hw[0][0] + p1 * Hw[1][0];
            H0[2] += p0 * Hw[0][1] + p1 * Hw[1][1];
            H1[0] += Hw[0][0] * p0 + Hw[0][1] * p1;
            H1[1] += Hw[0][0];
            H1[2] += Hw[0][1];
            H2[0] += Hw[1][0] * p0 + Hw[1][1] * p1;
            H2[1] += Hw[1][0];
            H2[2] += Hw[1][1];
            Hs[0] += turn;
        }
        if (H)
            for (int64_t p = 0; p < n_positions; ++p)
                H[n_positions * k + p] = Hs[slot[p]];
    }
}

void symplex_planar_clearance(int64_t K, int64_t ns, const double *S, int64_t m, const double *offsets,
                              int64_t kind, const double *centre, const double *R, const double *shape,
                              const double *weights, double *d, double *J, double *H, const int64_t *positions,
                              int64_t n_positions) {
    int slot[H && n_positions > 0 ? n_positions : 1];
    if (H)
        hessian_slots(ns, positions, n_positions, slot);
    switch (kind) {
    case 0:
        clearance_of_kind(0, K, ns, S, m, offsets, centre, R, shape, weights, d, J, H, slot, n_positions);
        break;
    case 1:
        clearance_of_kind(1, K, ns, S, m, offsets, centre, R, shape, weights, d, J, H, slot, n_positions);
        break;
    case 2:
        clearance_of_kind(2, K, ns, S, m, offsets, centre, R, shape, weights, d, J, H, slot, n_positions);
        break;
    case 3:
        clearance_of_kind(3, K, ns, S, m, offsets, centre, R, shape, weights, d, J, H, slot, n_positions);
        break;
    default: /* a box, as local_distance reads any other kind */
        clearance_of_kind(1, K, ns, S, m, offsets, centre, R, shape, weights, d, J, H, slot, n_positions);
    }
}

/* Shared static helpers of the tree kernels (tree_step.c: the midpoint step; galerkin_step.c: the Galerkin
 * step): spatial algebra on 6-vectors (angular, linear) in world coordinates, forward kinematics, the
 * Lagrangian terms of dynamics.py, loop rows (constraints.py), axis terms (articulated.py) and a dense
 * solve. Frame index -1 is the world and maps to slot nq of the per-frame arrays (identity pose, zero
 * twist). A spatial inertia is kept as INERTIA numbers: mass m, first moment m c (3), rotational inertia
 * about the world origin (3x3). Each file that includes this gets its own copies (static inline). */
#ifndef SYMPLEX_TREE_COMMON_H
#define SYMPLEX_TREE_COMMON_H
#include <math.h>
#include <string.h>

#include "symplex_kernels.h"
#include "vec3.h"

#define INERTIA 13

static inline double dot6(const double *a, const double *b) { return dot3(a, b) + dot3(a + 3, b + 3); }

/* out = ad(a) b = (wa x wb, wa x vb + va x wb) */
static inline void ad_twist(const double *a, const double *b, double *out)
{
    double t[3];
    cross3(a, b, out);
    cross3(a, b + 3, out + 3);
    cross3(a + 3, b, t);
    out[3] += t[0]; out[4] += t[1]; out[5] += t[2];
}

/* out = ad(s)^T y = (-ws x y1 - vs x y2, -ws x y2), so ad(x, s) . y = -x . out for every twist x */
static inline void ad_transpose(const double *s, const double *y, double *out)
{
    double t[3];
    cross3(s, y, out);
    cross3(s + 3, y + 3, t);
    out[0] = -out[0] - t[0]; out[1] = -out[1] - t[1]; out[2] = -out[2] - t[2];
    cross3(s, y + 3, out + 3);
    out[3] = -out[3]; out[4] = -out[4]; out[5] = -out[5];
}

/* out = I x for a spatial inertia I (INERTIA numbers) and a twist x: (Io w + h x v, m v - h x w) */
static inline void inertia_apply(const double *I, const double *x, double *out)
{
    const double m = I[0], *h = I + 1, *Io = I + 4;
    double hv[3], hw[3];
    cross3(h, x + 3, hv);
    cross3(h, x, hw);
    for (int i = 0; i < 3; ++i) {
        out[i] = Io[3 * i] * x[0] + Io[3 * i + 1] * x[1] + Io[3 * i + 2] * x[2] + hv[i];
        out[3 + i] = m * x[3 + i] - hw[i];
    }
}

static inline void add(int64_t n, const double *x, double *y)
{
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

/* max |x_i|, or nan if any x_i is nan (like numpy's max) */
static inline double max_abs(int64_t n, const double *x)
{
    double r = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double a = fabs(x[i]);
        if (a != a) return a;
        if (a > r) r = a;
    }
    return r;
}

/* parent_M_frame rows 0..2 of frame f at q (kinematics.local_transforms): placement @ motion(q[f]), a ball chart's
 * placement rotation times turn (nball, 3, 3) when turn is given. outputs: L (12); inputs: tree, f, q, turn, ball. */
static inline void local_transform(const symplex_tree *tree, int64_t f, const double *q, const double *turn,
                                   const int64_t *ball, double *L)
{
    const int64_t kind = tree->dof_kind[f];
    const int ax = (int)(kind % 3);
    const double *P = tree->dof_placement + 16 * f;
    double turned[16];
    if (turn && ball[f] >= 0 && tree->ball_dofs[3 * ball[f]] == f) {
        const double *T = turn + 9 * ball[f];
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j)
                turned[4 * i + j] = P[4 * i] * T[j] + P[4 * i + 1] * T[3 + j] + P[4 * i + 2] * T[6 + j];
            turned[4 * i + 3] = P[4 * i + 3];
        }
        P = turned;
    }
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) L[4 * i + j] = P[4 * i + j];
    if (kind <= 2) {
        const double c = cos(q[f]), s = sin(q[f]);
        const int a = (ax + 1) % 3, b = (ax + 2) % 3;
        for (int i = 0; i < 3; ++i) {
            L[4 * i + a] = P[4 * i + a] * c + P[4 * i + b] * s;
            L[4 * i + b] = P[4 * i + b] * c - P[4 * i + a] * s;
        }
    } else {
        for (int i = 0; i < 3; ++i) L[4 * i + 3] = P[4 * i + ax] * q[f] + P[4 * i + 3];
    }
}

/* Frame poses and world twist axes at q (kinematics.forward), each ball chart C1 turned by turn (nball, 3, 3)
 * when it is given (the chart C1 turn of tree/step_charts.py: its placement rotation times turn).
 * outputs: world (nq+1, 4, 4), S (nq+1, 6); inputs: tree, q (nq,), turn or NULL, ball (nq,) as workspace. */
static inline void forward_kinematics(const symplex_tree *tree, const double *q, const double *turn, const int64_t *ball,
                               double *world, double *S)
{
    const int64_t nq = tree->nq;
    double *identity = world + 16 * nq;
    for (int k = 0; k < 16; ++k) identity[k] = (k % 5 == 0) ? 1.0 : 0.0;
    for (int k = 0; k < 6; ++k) S[6 * nq + k] = 0.0;
    for (int64_t f = 0; f < nq; ++f) {
        const int64_t parent = tree->dof_parent[f] < 0 ? nq : tree->dof_parent[f];
        const int64_t kind = tree->dof_kind[f];
        const int ax = (int)(kind % 3);
        const double *A = world + 16 * parent;
        double L[12];
        local_transform(tree, f, q, turn, ball, L);
        double *C = world + 16 * f;
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 4; ++j)
                C[4 * i + j] = A[4 * i] * L[j] + A[4 * i + 1] * L[4 + j] + A[4 * i + 2] * L[8 + j];
            C[4 * i + 3] += A[4 * i + 3];
        }
        C[12] = 0.0; C[13] = 0.0; C[14] = 0.0; C[15] = 1.0;
        double *s6 = S + 6 * f;
        const double e[3] = {C[ax], C[4 + ax], C[8 + ax]}, o[3] = {C[3], C[7], C[11]};
        if (kind <= 2) {
            s6[0] = e[0]; s6[1] = e[1]; s6[2] = e[2];
            cross3(o, e, s6 + 3);
        } else {
            s6[0] = 0.0; s6[1] = 0.0; s6[2] = 0.0;
            s6[3] = e[0]; s6[4] = e[1]; s6[5] = e[2];
        }
    }
}

/* Loop row r at the pose `world` (constraints.evaluate): returns h_r; when Dh_row (nq,) is given it is
 * set to d h_r / d q, the row's wrench paired with S_k, + on P's side of the loop, - on C's. */
static inline double loop_row(const symplex_tree *tree, const double *world, const double *S, int64_t r, double *Dh_row)
{
    const int64_t nq = tree->nq;
    int64_t fp = tree->row_frame_p[r], fc = tree->row_frame_c[r];
    const double *Wp = world + 16 * (fp < 0 ? nq : fp), *Wc = world + 16 * (fc < 0 ? nq : fc);
    const double *ra = tree->row_a + 3 * r, *rb = tree->row_b + 3 * r, *rn = tree->row_n + 3 * r;
    double a[3], b[3], n[3], wrench[6], h;
    for (int i = 0; i < 3; ++i) {
        a[i] = dot3(Wp + 4 * i, ra);
        b[i] = dot3(Wc + 4 * i, rb);
    }
    if (tree->row_kind[r] == 0) {
        double point_c[3], gap[3];
        for (int i = 0; i < 3; ++i) {
            n[i] = dot3(Wp + 4 * i, rn);
            point_c[i] = b[i] + Wc[4 * i + 3];
            gap[i] = (a[i] + Wp[4 * i + 3]) - point_c[i];
        }
        h = dot3(n, gap);
        cross3(point_c, n, wrench);
        wrench[3] = n[0]; wrench[4] = n[1]; wrench[5] = n[2];
    } else {
        h = dot3(a, b);
        cross3(a, b, wrench);
        wrench[3] = 0.0; wrench[4] = 0.0; wrench[5] = 0.0;
    }
    if (Dh_row) {
        memset(Dh_row, 0, (size_t)nq * sizeof(double));
        /* the frames between P and C: the deeper one (larger index) is never an ancestor of the other */
        while (fp != fc) {
            if (fp > fc) {
                Dh_row[fp] = dot6(wrench, S + 6 * fp);
                fp = tree->dof_parent[fp];
            } else {
                Dh_row[fc] = -dot6(wrench, S + 6 * fc);
                fc = tree->dof_parent[fc];
            }
        }
    }
    return h;
}

/* (Ic S, G, X) of an axis S with rate Sdot over a subtree with composite inertia I, momentum H, wrench W and
 * force moments K (tree/articulated.py axis_terms): G = Ic Sdot - ad(S)^T H,
 * X = -ad(S)^T W + (K^T w - tr K w, F x w) with w the angular part of S and F the force part of W. */
static inline void axis_terms(const double *I, const double *H, const double *W, const double *K, const double *S,
                       const double *Sdot, double *IcS, double *G, double *X)
{
    double t[6];
    inertia_apply(I, S, IcS);
    inertia_apply(I, Sdot, G);
    ad_transpose(S, H, t);
    for (int k = 0; k < 6; ++k) G[k] -= t[k];
    ad_transpose(S, W, X);
    const double trK = K[0] + K[4] + K[8];
    for (int j = 0; j < 3; ++j) X[j] = -X[j] + K[j] * S[0] + K[3 + j] * S[1] + K[6 + j] * S[2] - trK * S[j];
    cross3(W + 3, S, t);
    for (int j = 0; j < 3; ++j) X[3 + j] = -X[3 + j] + t[j];
}

static inline double dot12(const double *a, const double *b) { return dot6(a, b) + dot6(a + 6, b + 6); }

/* y -= a x, unrolled by four so that -O2 (SLP) vectorises it: the LU's inner loop */
static inline void subtract_scaled(int64_t n, double a, const double *restrict x, double *restrict y)
{
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        y[j] -= a * x[j];
        y[j + 1] -= a * x[j + 1];
        y[j + 2] -= a * x[j + 2];
        y[j + 3] -= a * x[j + 3];
    }
    for (; j < n; ++j) y[j] -= a * x[j];
}

/* Solve A x = b by Gaussian elimination with partial pivoting; A (n, n) is destroyed, b becomes x.
 * Returns 1 when a pivot is exactly zero (LAPACK's test for a singular matrix), else 0. */
static inline int solve_dense(int64_t n, double *A, double *b)
{
    for (int64_t k = 0; k < n; ++k) {
        int64_t best = k;
        double big = fabs(A[k * n + k]);
        for (int64_t i = k + 1; i < n; ++i) {
            if (fabs(A[i * n + k]) > big) {
                big = fabs(A[i * n + k]);
                best = i;
            }
        }
        if (big == 0.0) return 1;
        if (best != k) {
            double *x = A + k * n, *y = A + best * n, t;
            for (int64_t j = k; j < n; ++j) { t = x[j]; x[j] = y[j]; y[j] = t; }
            t = b[k]; b[k] = b[best]; b[best] = t;
        }
        const double *pivot_row = A + k * n, pivot = pivot_row[k];
        for (int64_t i = k + 1; i < n; ++i) {
            double *row = A + i * n;
            const double l = row[k] / pivot;
            if (l == 0.0) continue;
            subtract_scaled(n - k - 1, l, pivot_row + k + 1, row + k + 1);
            b[i] -= l * b[k];
        }
    }
    for (int64_t k = n - 1; k >= 0; --k) {
        double s = b[k];
        for (int64_t j = k + 1; j < n; ++j) s -= A[k * n + j] * b[j];
        b[k] = s / A[k * n + k];
    }
    return 0;
}

/* The Lagrangian terms of dynamics.terms (second=False) at the pose (world, S) of coordinates q, rates v.
 * outputs: V (nq+1, 6) frame velocities, Sdot (nq, 6) = ad(V_parent) S, Ic (nq, INERTIA) composite inertias,
 *          H, W (nq, 6) subtree momenta and wrenches, K (nq, 9) subtree sums of c F^T; p, g, Q (nq,) with the
 *          joint springs (not the ball charts' springs); *kinetic = v . p, *potential (gravity, joint springs).
 * inputs:  tree, force_vector (nforce, 3) user forces, world (nq+1, 16), S (nq+1, 6), q, v (nq,). O(nq). */
static inline void tree_terms(const symplex_tree *tree, const double *force_vector, const double *world, const double *S,
                              const double *q, const double *v, double *V, double *Sdot, double *Ic, double *H,
                              double *W, double *K, double *p, double *g, double *Q, double *kinetic, double *potential)
{
    const int64_t nq = tree->nq;
    const double *gravity = tree->gravity;
    *kinetic = 0.0;
    *potential = 0.0;
    memset(Ic, 0, (size_t)(INERTIA * nq) * sizeof(double));
    memset(W, 0, (size_t)(6 * nq) * sizeof(double));
    memset(K, 0, (size_t)(9 * nq) * sizeof(double));
    for (int64_t b = 0; b < tree->nbody; ++b) {
        const int64_t f = tree->body_frame[b];
        const double *F = world + 16 * (f < 0 ? nq : f), *O = tree->body_offset + 16 * b;
        const double *com = tree->body_com + 3 * b, *Ib = tree->body_inertia + 9 * b, m = tree->body_mass[b];
        double R[9], c[3];
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 3; ++j)
                R[3 * i + j] = F[4 * i] * O[j] + F[4 * i + 1] * O[4 + j] + F[4 * i + 2] * O[8 + j];
            c[i] = F[4 * i] * O[3] + F[4 * i + 1] * O[7] + F[4 * i + 2] * O[11] + F[4 * i + 3];
        }
        for (int i = 0; i < 3; ++i) c[i] += dot3(R + 3 * i, com);
        const double force[3] = {m * gravity[0], m * gravity[1], m * gravity[2]};
        *potential -= dot3(force, c);
        if (f < 0) continue;
        /* rotational inertia about the origin: R Ib R^T + m (|c|^2 1 - c c^T) */
        double RI[9], *I = Ic + INERTIA * f, *Io = I + 4, cc = dot3(c, c);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                RI[3 * i + j] = R[3 * i] * Ib[j] + R[3 * i + 1] * Ib[3 + j] + R[3 * i + 2] * Ib[6 + j];
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                Io[3 * i + j] += dot3(RI + 3 * i, R + 3 * j) + m * ((i == j ? cc : 0.0) - c[i] * c[j]);
        I[0] += m;
        for (int i = 0; i < 3; ++i) I[1 + i] += m * c[i];
        double *wr = W + 6 * f, *k = K + 9 * f, t[3];
        cross3(c, force, t);
        for (int i = 0; i < 3; ++i) {
            wr[i] += t[i];
            wr[3 + i] += force[i];
            for (int j = 0; j < 3; ++j) k[3 * i + j] += c[i] * force[j];
        }
    }
    for (int64_t e = 0; e < tree->nforce; ++e) {
        const int64_t f = tree->force_frame[e];
        if (f < 0) continue;
        const double *F = world + 16 * f, *x = tree->force_point + 3 * e, *force = force_vector + 3 * e;
        double point[3], t[3], *wr = W + 6 * f, *k = K + 9 * f;
        for (int i = 0; i < 3; ++i) point[i] = dot3(F + 4 * i, x) + F[4 * i + 3];
        cross3(point, force, t);
        for (int i = 0; i < 3; ++i) {
            wr[i] += t[i];
            wr[3 + i] += force[i];
            for (int j = 0; j < 3; ++j) k[3 * i + j] += point[i] * force[j];
        }
    }

    /* velocities root to leaves, own momenta I_f V_f, then subtree sums leaves to root */
    for (int k = 0; k < 6; ++k) V[6 * nq + k] = 0.0;
    for (int64_t f = 0; f < nq; ++f) {
        const int64_t parent = tree->dof_parent[f] < 0 ? nq : tree->dof_parent[f];
        for (int k = 0; k < 6; ++k) V[6 * f + k] = V[6 * parent + k] + S[6 * f + k] * v[f];
        ad_twist(V + 6 * parent, S + 6 * f, Sdot + 6 * f);
        inertia_apply(Ic + INERTIA * f, V + 6 * f, H + 6 * f);
    }
    for (int64_t f = nq - 1; f >= 0; --f) {
        const int64_t parent = tree->dof_parent[f];
        if (parent < 0) continue;
        add(INERTIA, Ic + INERTIA * f, Ic + INERTIA * parent);
        add(6, H + 6 * f, H + 6 * parent);
        add(6, W + 6 * f, W + 6 * parent);
        add(9, K + 9 * f, K + 9 * parent);
    }
    for (int64_t a = 0; a < nq; ++a) {
        const double spring = tree->dof_stiffness[a] * (q[a] - tree->dof_rest[a]);
        p[a] = dot6(S + 6 * a, H + 6 * a);
        g[a] = dot6(Sdot + 6 * a, H + 6 * a);
        Q[a] = dot6(S + 6 * a, W + 6 * a) - spring;
        *kinetic += v[a] * p[a];
        *potential += 0.5 * spring * (q[a] - tree->dof_rest[a]);
    }
}

/* Rotation-chart helpers of the ball and free joints (tree/step_charts.py, tree/ball_springs.py), shared by the
 * midpoint and Galerkin steps. */

/* R^T-free helpers on row-major 3x3 rotations taken from a 4x4 pose (stride 4) */
static inline void rot_of(const double *M, double *R) /* R = M[:3, :3] */
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) R[3 * i + j] = M[4 * i + j];
}

/* The coefficients of J_L at angle t (tree/step_charts.py _coefficients): cf = (b, c, b' / t, c' / t),
 * b = (1 - cos t) / t^2, c = (t - sin t) / t^3, by their Taylor series below t = 0.1. */
static inline void jl_coefficients(double t, double *cf)
{
    const double t2 = t * t;
    if (t < 0.1) {
        cf[0] = 0.5 - t2 / 24 + t2 * t2 / 720 - t2 * t2 * t2 / 40320;
        cf[1] = 1.0 / 6 - t2 / 120 + t2 * t2 / 5040 - t2 * t2 * t2 / 362880;
        cf[2] = -1.0 / 12 + t2 / 180 - t2 * t2 / 6720 + t2 * t2 * t2 / 453600;
        cf[3] = -1.0 / 60 + t2 / 1260 - t2 * t2 / 60480 + t2 * t2 * t2 / 4989600;
        return;
    }
    const double h = sin(0.5 * t), sn = sin(t);
    cf[0] = 2.0 * h * h / t2;
    cf[1] = (t - sn) / (t2 * t);
    cf[2] = sn / (t2 * t) - 4.0 * h * h / (t2 * t2);
    cf[3] = (1.0 - cos(t)) / (t2 * t2) - 3.0 * (t - sn) / (t2 * t2 * t);
}

static inline void hat3(const double *v, double *X)
{
    X[0] = 0.0; X[1] = -v[2]; X[2] = v[1];
    X[3] = v[2]; X[4] = 0.0; X[5] = -v[0];
    X[6] = -v[1]; X[7] = v[0]; X[8] = 0.0;
}

/* J_L(xi) = I + b X + c X^2, X = hat(xi), row-major (tree/step_charts.py left_jacobian) */
static inline void left_jacobian(const double *xi, double *JL)
{
    double cf[4], X[9], X2[9];
    jl_coefficients(sqrt(dot3(xi, xi)), cf);
    hat3(xi, X);
    mat3_mul(X, X, X2);
    for (int i = 0; i < 9; ++i) JL[i] = (i % 4 == 0 ? 1.0 : 0.0) + cf[0] * X[i] + cf[1] * X2[i];
}

/* exp(hat(xi)) = I + a X + b X^2, a = sin t / t, b = (1 - cos t) / t^2 (Rodrigues, groups.so3_exp) */
static inline void so3_exp(const double *xi, double *R)
{
    const double t = sqrt(dot3(xi, xi)), t2 = t * t;
    const double a = t < 0.1 ? 1.0 - t2 / 6 + t2 * t2 / 120 - t2 * t2 * t2 / 5040 + t2 * t2 * t2 * t2 / 362880
                             : sin(t) / t;
    double cf[4], X[9], X2[9];
    jl_coefficients(t, cf);
    hat3(xi, X);
    mat3_mul(X, X, X2);
    for (int i = 0; i < 9; ++i) R[i] = (i % 4 == 0 ? 1.0 : 0.0) + a * X[i] + cf[0] * X2[i];
}

/* out = d(J_L(xi)^T v)/dxi at fixed v (tree/step_charts.py left_jacobian_transpose_derivative):
 * b hat(v) + c ((xi . v) I + xi v^T - 2 v xi^T) + (b'/t hat(v) xi + c'/t X^2 v) xi^T, row-major. */
static inline void left_jacobian_transpose_derivative(const double *xi, const double *v, double *out)
{
    double cf[4], V[9], X[9], X2[9], Vxi[3], X2v[3];
    jl_coefficients(sqrt(dot3(xi, xi)), cf);
    hat3(v, V);
    hat3(xi, X);
    mat3_mul(X, X, X2);
    const double xv = dot3(xi, v);
    for (int i = 0; i < 3; ++i) {
        Vxi[i] = dot3(V + 3 * i, xi);
        X2v[i] = dot3(X2 + 3 * i, v);
    }
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            out[3 * i + j] = cf[0] * V[3 * i + j] + cf[1] * ((i == j ? xv : 0.0) + xi[i] * v[j] - 2.0 * v[i] * xi[j])
                             + (cf[2] * Vxi[i] + cf[3] * X2v[i]) * xi[j];
}

/* principal rotation vector of R, |theta| <= pi, through its quaternion with w >= 0 (ball_springs.so3_log) */
static inline void so3_log(const double *R, double *theta)
{
    const double d0 = R[0], d1 = R[4], d2 = R[8], tr = d0 + d1 + d2;
    double q[4];
    if (tr >= d0 && tr >= d1 && tr >= d2) {
        q[0] = 0.5 * sqrt(fmax(1.0 + tr, 0.0));
        const double s = 0.25 / q[0];
        q[1] = (R[7] - R[5]) * s; q[2] = (R[2] - R[6]) * s; q[3] = (R[3] - R[1]) * s;
    } else if (d0 >= d1 && d0 >= d2) {
        q[1] = 0.5 * sqrt(fmax(1.0 + d0 - d1 - d2, 0.0));
        const double s = 0.25 / q[1];
        q[0] = (R[7] - R[5]) * s; q[2] = (R[1] + R[3]) * s; q[3] = (R[2] + R[6]) * s;
    } else if (d1 >= d2) {
        q[2] = 0.5 * sqrt(fmax(1.0 - d0 + d1 - d2, 0.0));
        const double s = 0.25 / q[2];
        q[0] = (R[2] - R[6]) * s; q[1] = (R[1] + R[3]) * s; q[3] = (R[5] + R[7]) * s;
    } else {
        q[3] = 0.5 * sqrt(fmax(1.0 - d0 - d1 + d2, 0.0));
        const double s = 0.25 / q[3];
        q[0] = (R[3] - R[1]) * s; q[1] = (R[2] + R[6]) * s; q[2] = (R[5] + R[7]) * s;
    }
    const double sign = q[0] < 0.0 ? -1.0 : 1.0, w = sign * q[0];
    const double n = sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    const double factor = n < 1e-6 ? 2.0 / w * (1.0 - n * n / (3.0 * w * w)) : 2.0 * atan2(n, w) / n;
    for (int i = 0; i < 3; ++i) theta[i] = sign * factor * q[1 + i];
}

/* The spring of ball chart b at angle 0 in the chart C1 turn (turn NULL: C1) (ball_springs.chart_springs, Jb = I): sp = (theta (3),
 * J_r^-1(theta) (9)); theta = log(ball_rest^T place turn) with place the chart's placement rotation (C1 in it). */
static inline void chart_spring(const symplex_tree *tree, int64_t b, const double *turn, double *sp)
{
    double *theta = sp, *Jri = sp + 3, place[9], PP[9], M[9];
    const double *rest = tree->ball_rest + 9 * b;
    rot_of(tree->dof_placement + 16 * tree->ball_dofs[3 * b], place);
    if (turn) mat3_mul(place, turn, PP);
    else memcpy(PP, place, sizeof PP);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) M[3 * i + j] = rest[i] * PP[j] + rest[3 + i] * PP[3 + j] + rest[6 + i] * PP[6 + j];
    so3_log(M, theta);
    const double t = sqrt(dot3(theta, theta));
    const double c = t < 1e-6 ? 1.0 / 12.0 + t * t / 720.0 : 1.0 / (t * t) - 1.0 / (2.0 * t * tan(0.5 * t));
    double T[9], TT[9];
    hat3(theta, T);
    mat3_mul(T, T, TT);
    for (int i = 0; i < 9; ++i) Jri[i] = (i % 4 == 0 ? 1.0 : 0.0) + 0.5 * T[i] + c * TT[i];
}

/* x solving the 3 x 3 system A x = y (row-major A, Cramer's rule; A = J_L(xi) is invertible for |xi| < 2 pi) */
static inline void solve3(const double *A, const double *y, double *x)
{
    double c0[3], c1[3], c2[3], r[3];
    const double a0[3] = {A[0], A[3], A[6]}, a1[3] = {A[1], A[4], A[7]}, a2[3] = {A[2], A[5], A[8]};
    cross3(a1, a2, c0);
    cross3(a2, a0, c1);
    cross3(a0, a1, c2);
    const double det = dot3(a0, c0);
    r[0] = dot3(y, c0); r[1] = dot3(y, c1); r[2] = dot3(y, c2);
    for (int i = 0; i < 3; ++i) x[i] = r[i] / det;
}

static inline void mat3_tmul(const double *A, const double *B, double *C) /* C = A^T B */
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) C[3 * i + j] = A[i] * B[j] + A[3 + i] * B[3 + j] + A[6 + i] * B[6 + j];
}

static inline void mat3_mult(const double *A, const double *B, double *C) /* C = A B^T */
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) C[3 * i + j] = dot3(A + 3 * i, B + 3 * j);
}

#endif

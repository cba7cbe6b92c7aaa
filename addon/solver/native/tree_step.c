/* One midpoint variational integrator step on a tree model: kinematics, Lagrangian terms and their
 * derivatives, loop rows, the Newton loop and its O(n) direction (symplex_kernels.h). The numpy twin and
 * reference is addon/solver/tree/midpoint.py with dynamics.py (formulas in its docstring),
 * kinematics.py, constraints.py and articulated.py; the quantities and their names follow those modules.
 *
 * Twists and wrenches are 6-vectors (angular, linear) in world coordinates. Frame index -1 is the
 * world and maps to slot nq of the per-frame arrays (identity pose, zero twist). Subtree sums run
 * leaves to root (dof_parent[f] < f); the Newton matrix is never formed: its tree form is eliminated
 * leaves to root and solved root to leaves in O(nq), loop rows through a Schur complement. A spatial inertia is kept
 * as 13 numbers: mass m, first moment m c (3), rotational inertia about the world origin (3x3). */
#include <math.h>
#include <string.h>

#include "symplex_kernels.h"

#define INERTIA 13

int64_t symplex_tree_struct_size(void) { return (int64_t)sizeof(symplex_tree); }

static double dot3(const double *a, const double *b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }

static double dot6(const double *a, const double *b) { return dot3(a, b) + dot3(a + 3, b + 3); }

static void cross3(const double *a, const double *b, double *out)
{
    out[0] = a[1] * b[2] - a[2] * b[1];
    out[1] = a[2] * b[0] - a[0] * b[2];
    out[2] = a[0] * b[1] - a[1] * b[0];
}

/* out = ad(a) b = (wa x wb, wa x vb + va x wb) */
static void ad_twist(const double *a, const double *b, double *out)
{
    double t[3];
    cross3(a, b, out);
    cross3(a, b + 3, out + 3);
    cross3(a + 3, b, t);
    out[3] += t[0]; out[4] += t[1]; out[5] += t[2];
}

/* out = ad(s)^T y = (-ws x y1 - vs x y2, -ws x y2), so ad(x, s) . y = -x . out for every twist x */
static void ad_transpose(const double *s, const double *y, double *out)
{
    double t[3];
    cross3(s, y, out);
    cross3(s + 3, y + 3, t);
    out[0] = -out[0] - t[0]; out[1] = -out[1] - t[1]; out[2] = -out[2] - t[2];
    cross3(s, y + 3, out + 3);
    out[3] = -out[3]; out[4] = -out[4]; out[5] = -out[5];
}

/* out = I x for a spatial inertia I (INERTIA numbers) and a twist x: (Io w + h x v, m v - h x w) */
static void inertia_apply(const double *I, const double *x, double *out)
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

static void add(int64_t n, const double *x, double *y)
{
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

/* max |x_i|, or nan if any x_i is nan (like numpy's max) */
static double max_abs(int64_t n, const double *x)
{
    double r = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double a = fabs(x[i]);
        if (a != a) return a;
        if (a > r) r = a;
    }
    return r;
}

/* Scratch of one step, carved from the caller's buffer (or only counted when base is NULL). */
typedef struct {
    double *world, *S;      /* (nq+1, 16), (nq+1, 6) at the midpoint */
    double *world2, *S2;    /* the same at q1 (once), then at q2 */
    double *V;              /* (nq+1, 6) frame velocities at the midpoint */
    double *Sdot;           /* (nq, 6) ad(V_parent) S */
    double *Ic;             /* (nq, INERTIA) frame inertias, then subtree (composite) inertias */
    double *H, *W, *K;      /* (nq, 6) subtree momenta, (nq, 6) subtree wrenches, (nq, 9) sum c F^T */
    double *qm, *v, *p, *g, *Q, *fc; /* (nq,) */
    double *U, *x, *R, *Yc, *d; /* (nq, 12) x 2, (nq, 18) x 2, (nq,): J11 in tree form */
    double *blocks, *JL;    /* (nq, 9): the first nball hold each ball node's block and J_L(psi) */
    double *cw, *dw, *Jb;   /* (nq, 3), (nq, 9) x 2: the first nball hold each chart's Cayley increment w,
                               dw/dpsi and the body Jacobian of Phi at psi (tree/lie_rows.py chart_increments) */
    double *spring;         /* (nq, 30): the first nball hold each chart spring at the midpoint (theta (3), Phi,
                               Jb, J_r^-1(theta) (9 each), tree/ball_springs.py chart_springs) */
    double *Obar, *X, *c, *Dinv; /* (nq, 18, 12), (nq, 12), (nq, 18), (nq, 3): its factor, by node member */
    double *obar, *zc, *xi; /* (nq, 18), (nq, 12), (nq,): solve scratch */
    double *delta;          /* (nq,) Newton step of q2 */
    double *Dh1, *Dh2, *Y;  /* (nrow, nq) selected rows at q1 and at q2; J11^-1 G1^T by row */
    double *schur, *dlam;   /* (nrow, nrow), (nrow,) Schur system of the loop rows */
    double *f;              /* (nq+nrow,) Newton residual */
    int64_t *unknown;       /* (nq,) index of each coordinate among the unknowns, -1 prescribed */
    int64_t *ball;          /* (nq,) ball chart of each coordinate, -1 outside ball charts */
} workspace;

static double *take(double *base, int64_t *at, int64_t n)
{
    double *out = base ? base + *at : NULL;
    *at += n;
    return out;
}

static int64_t carve(workspace *w, double *base, int64_t nq, int64_t nrow)
{
    int64_t at = 0, n = nq + nrow;  /* residual length (unknowns + selected rows, at most) */
    w->world = take(base, &at, 16 * (nq + 1));
    w->S = take(base, &at, 6 * (nq + 1));
    w->world2 = take(base, &at, 16 * (nq + 1));
    w->S2 = take(base, &at, 6 * (nq + 1));
    w->V = take(base, &at, 6 * (nq + 1));
    w->Sdot = take(base, &at, 6 * nq);
    w->Ic = take(base, &at, INERTIA * nq);
    w->H = take(base, &at, 6 * nq);
    w->W = take(base, &at, 6 * nq);
    w->K = take(base, &at, 9 * nq);
    w->qm = take(base, &at, nq);
    w->v = take(base, &at, nq);
    w->p = take(base, &at, nq);
    w->g = take(base, &at, nq);
    w->Q = take(base, &at, nq);
    w->fc = take(base, &at, nq);
    w->U = take(base, &at, 12 * nq);
    w->x = take(base, &at, 12 * nq);
    w->R = take(base, &at, 18 * nq);
    w->Yc = take(base, &at, 18 * nq);
    w->d = take(base, &at, nq);
    w->blocks = take(base, &at, 9 * nq);
    w->JL = take(base, &at, 9 * nq);
    w->cw = take(base, &at, 3 * nq);
    w->dw = take(base, &at, 9 * nq);
    w->Jb = take(base, &at, 9 * nq);
    w->spring = take(base, &at, 30 * nq);
    w->Obar = take(base, &at, 216 * nq);
    w->X = take(base, &at, 12 * nq);
    w->c = take(base, &at, 18 * nq);
    w->Dinv = take(base, &at, 3 * nq);
    w->obar = take(base, &at, 18 * nq);
    w->zc = take(base, &at, 12 * nq);
    w->xi = take(base, &at, nq);
    w->delta = take(base, &at, nq);
    w->Dh1 = take(base, &at, nrow * nq);
    w->Dh2 = take(base, &at, nrow * nq);
    w->Y = take(base, &at, nrow * nq);
    w->schur = take(base, &at, nrow * nrow);
    w->dlam = take(base, &at, nrow);
    w->f = take(base, &at, n);
    w->unknown = (int64_t *)take(base, &at, nq); /* int64 and double are both 8 bytes */
    w->ball = (int64_t *)take(base, &at, nq);
    return at;
}

int64_t symplex_midpoint_scratch_size(int64_t nq, int64_t nbody, int64_t nforce, int64_t nrow)
{
    (void)nbody; /* bodies and forces are summed onto frames as they are visited */
    (void)nforce;
    workspace w;
    return carve(&w, NULL, nq, nrow);
}

/* Frame poses and world twist axes at q (kinematics.forward).
 * outputs: world (nq+1, 4, 4), S (nq+1, 6); inputs: tree, q (nq,). */
static void forward_kinematics(const symplex_tree *tree, const double *q, double *world, double *S)
{
    const int64_t nq = tree->nq;
    double *identity = world + 16 * nq;
    for (int k = 0; k < 16; ++k) identity[k] = (k % 5 == 0) ? 1.0 : 0.0;
    for (int k = 0; k < 6; ++k) S[6 * nq + k] = 0.0;
    for (int64_t f = 0; f < nq; ++f) {
        const int64_t parent = tree->dof_parent[f] < 0 ? nq : tree->dof_parent[f];
        const int64_t kind = tree->dof_kind[f];
        const int ax = (int)(kind % 3);
        const double *P = tree->dof_placement + 16 * f, *A = world + 16 * parent;
        double L[12]; /* parent_M_frame rows 0..2 = placement @ motion */
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
static double loop_row(const symplex_tree *tree, const double *world, const double *S, int64_t r, double *Dh_row)
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

/* R^T-free helpers on row-major 3x3 rotations taken from a 4x4 pose (stride 4) */
static void rot_of(const double *M, double *R) /* R = M[:3, :3] */
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) R[3 * i + j] = M[4 * i + j];
}

static void mat3_mul(const double *A, const double *B, double *C) /* C = A B */
{
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) C[3 * i + j] = A[3 * i] * B[j] + A[3 * i + 1] * B[3 + j] + A[3 * i + 2] * B[6 + j];
}

/* Phi = Rx(psi0) Ry(psi1) Rz(psi2) and J_L with columns e_x, Rx e_y, Rx Ry e_z (kinematics.euler_chain) */
static void euler_chain(const double *psi, double *Phi, double *JL)
{
    const double ca = cos(psi[0]), sa = sin(psi[0]), cb = cos(psi[1]), sb = sin(psi[1]);
    const double cc = cos(psi[2]), sc = sin(psi[2]);
    const double Rx[9] = {1.0, 0.0, 0.0, 0.0, ca, -sa, 0.0, sa, ca};
    const double Ry[9] = {cb, 0.0, sb, 0.0, 1.0, 0.0, -sb, 0.0, cb};
    const double Rz[9] = {cc, -sc, 0.0, sc, cc, 0.0, 0.0, 0.0, 1.0};
    double RxRy[9];
    mat3_mul(Rx, Ry, RxRy);
    mat3_mul(RxRy, Rz, Phi);
    for (int i = 0; i < 3; ++i) {
        JL[3 * i] = i == 0 ? 1.0 : 0.0;
        JL[3 * i + 1] = Rx[3 * i + 1];
        JL[3 * i + 2] = RxRy[3 * i + 2];
    }
}

/* principal rotation vector of R, |theta| <= pi, through its quaternion with w >= 0 (ball_springs.so3_log) */
static void so3_log(const double *R, double *theta)
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

/* The spring of ball chart b at chart coordinates psi (ball_springs.chart_springs): sp = (theta (3), Phi (9),
 * Jb (9), J_r^-1(theta) (9)); theta = log(ball_rest^T place Phi(psi)) with place the chart's placement rotation. */
static void chart_spring(const symplex_tree *tree, int64_t b, const double *psi, double *sp)
{
    double *theta = sp, *Phi = sp + 3, *Jb = sp + 12, *Jri = sp + 21, JL[9], place[9], PP[9], M[9];
    const double *rest = tree->ball_rest + 9 * b;
    euler_chain(psi, Phi, JL);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) Jb[3 * i + j] = Phi[i] * JL[j] + Phi[3 + i] * JL[3 + j] + Phi[6 + i] * JL[6 + j];
    rot_of(tree->dof_placement + 16 * tree->ball_dofs[3 * b], place);
    mat3_mul(place, Phi, PP);
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) M[3 * i + j] = rest[i] * PP[j] + rest[3 + i] * PP[3 + j] + rest[6 + i] * PP[6 + j];
    so3_log(M, theta);
    const double t = sqrt(dot3(theta, theta));
    const double c = t < 1e-6 ? 1.0 / 12.0 + t * t / 720.0 : 1.0 / (t * t) - 1.0 / (2.0 * t * tan(0.5 * t));
    const double T[9] = {0.0, -theta[2], theta[1], theta[2], 0.0, -theta[0], -theta[1], theta[0], 0.0};
    double TT[9];
    mat3_mul(T, T, TT);
    for (int i = 0; i < 9; ++i) Jri[i] = (i % 4 == 0 ? 1.0 : 0.0) + 0.5 * T[i] + c * TT[i];
}

/* First-order terms at the midpoint (dynamics.terms with second=False), from w->world and w->S.
 * outputs: w->p, w->g, w->Q (nq,), *energy = kinetic + potential; keeps w->V, w->Sdot, w->Ic (composite),
 *          w->H, w->W, w->K for the second derivatives.
 * inputs:  tree, force_vector (nforce, 3), w->qm, w->v. */
static void first_order_terms(const symplex_tree *tree, const double *force_vector, workspace *w, double *energy)
{
    const int64_t nq = tree->nq;
    const double *world = w->world, *S = w->S, *gravity = tree->gravity;
    double *V = w->V, *Ic = w->Ic, *H = w->H, *W = w->W, *K = w->K;
    double potential = 0.0, kinetic = 0.0;

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
        potential -= dot3(force, c);
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
        for (int k = 0; k < 6; ++k) V[6 * f + k] = V[6 * parent + k] + S[6 * f + k] * w->v[f];
        ad_twist(V + 6 * parent, S + 6 * f, w->Sdot + 6 * f);
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
        const double spring = tree->dof_stiffness[a] * (w->qm[a] - tree->dof_rest[a]);
        w->p[a] = dot6(S + 6 * a, H + 6 * a);
        w->g[a] = dot6(w->Sdot + 6 * a, H + 6 * a);
        w->Q[a] = dot6(S + 6 * a, W + 6 * a) - spring;
        kinetic += w->v[a] * w->p[a];
        potential += 0.5 * spring * (w->qm[a] - tree->dof_rest[a]);
    }
    for (int64_t b = 0; b < tree->nball; ++b) {  /* ball and free rotations: Q = -k Jb^T theta on the chart */
        const double k = tree->ball_stiffness[b];
        if (k == 0.0) continue;
        const int64_t *dof = tree->ball_dofs + 3 * b;
        const double psi[3] = {w->qm[dof[0]], w->qm[dof[1]], w->qm[dof[2]]};
        double *sp = w->spring + 30 * b;
        chart_spring(tree, b, psi, sp);
        for (int i = 0; i < 3; ++i) w->Q[dof[i]] -= k * (sp[12 + i] * sp[0] + sp[15 + i] * sp[1] + sp[18 + i] * sp[2]);
        potential += 0.5 * k * dot3(sp, sp);
    }
    *energy = 0.5 * kinetic + potential;
}

/* (Ic S, G, X) of an axis S with rate Sdot over a subtree with composite inertia I, momentum H, wrench W and
 * force moments K (tree/articulated.py axis_terms): G = Ic Sdot - ad(S)^T H,
 * X = -ad(S)^T W + (K^T w - tr K w, F x w) with w the angular part of S and F the force part of W. */
static void axis_terms(const double *I, const double *H, const double *W, const double *K, const double *S,
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

/* J11 = dt/4 (B + Q_q) + (A^T - A)/2 - M/dt - diag(damping + gain)/2 in tree form (tree/articulated.py):
 * J11[a][b] = U_b . x_a for b above a's node, J11[a][c] = R_a . Yc_c for c below it, zero between branches,
 * with U_a = (Sdot_a, S_a), R_a = (U_a, 0), Yc_a = (y_a, G_a + 2 Ic S_a / dt):
 *   x_a = (dt/4 G - Ic S/2, dt/4 X + G/2 - Ic S/dt),  y_a = (dt/4 G + Ic S/2, dt/4 X - G/2 - Ic S/dt),
 *   d_a = dt/4 (Sdot . G + S . X - k) - S . Ic S/dt - (damping + gain)/2,
 * and each ball node's 3 x 3 block from the same pairs (ball_rows replaces the ball nodes' rows).
 * outputs: w->U, w->x, w->R, w->Yc, w->d, w->blocks; inputs: the first-order terms in w. O(nq). */
static void tree_jacobian(const symplex_tree *tree, double dt, workspace *w)
{
    const int64_t nq = tree->nq;
    for (int64_t a = 0; a < nq; ++a) {
        const double *Sa = w->S + 6 * a, *Sda = w->Sdot + 6 * a;
        double IcS[6], G[6], X[6];
        double *U = w->U + 12 * a, *x = w->x + 12 * a, *R = w->R + 18 * a, *Yc = w->Yc + 18 * a;
        axis_terms(w->Ic + INERTIA * a, w->H + 6 * a, w->W + 6 * a, w->K + 9 * a, Sa, Sda, IcS, G, X);
        for (int k = 0; k < 6; ++k) {
            U[k] = Sda[k];
            U[6 + k] = Sa[k];
            x[k] = 0.25 * dt * G[k] - 0.5 * IcS[k];
            x[6 + k] = 0.25 * dt * X[k] + 0.5 * G[k] - IcS[k] / dt;
            Yc[k] = 0.25 * dt * G[k] + 0.5 * IcS[k];
            Yc[6 + k] = 0.25 * dt * X[k] - 0.5 * G[k] - IcS[k] / dt;
            Yc[12 + k] = G[k] + 2.0 * IcS[k] / dt;
            R[k] = U[k];
            R[6 + k] = U[6 + k];
            R[12 + k] = 0.0;
        }
        w->d[a] = 0.25 * dt * (dot6(Sda, G) + dot6(Sa, X) - tree->dof_stiffness[a]) - dot6(Sa, IcS) / dt
                  - 0.5 * (tree->dof_damping[a] + tree->dof_motor_gain[a]);
    }
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b;
        double *block = w->blocks + 9 * b;
        for (int i = 0; i < 3; ++i) {
            block[4 * i] = w->d[k[i]];
            for (int j = 0; j < i; ++j) {
                block[3 * i + j] = dot6(w->U + 12 * k[j], w->x + 12 * k[i]) + dot6(w->U + 12 * k[j] + 6, w->x + 12 * k[i] + 6);
                block[3 * j + i] = dot6(w->U + 12 * k[j], w->Yc + 18 * k[i]) + dot6(w->U + 12 * k[j] + 6, w->Yc + 18 * k[i] + 6);
            }
        }
    }
}

static double dot12(const double *a, const double *b) { return dot6(a, b) + dot6(a + 6, b + 6); }

/* twist of a rotation about axis e through point o: (e, o x e) */
static void rotation_twist(const double *e, const double *o, double *out)
{
    out[0] = e[0]; out[1] = e[1]; out[2] = e[2];
    cross3(o, e, out + 3);
}

/* Each chart's step rotation Phi(psi) = A2^T R_F (q1 = 0) as a Cayley vector w = 2 vee(Phi - Phi^T)/(1 + tr Phi),
 * the body Jacobian Jb = R_F^T (w2_0 w2_1 w2_2) of Phi and dw/dpsi = (I + hat(w)/2 + w w^T/4) Jb
 * (tree/lie_rows.py chart_increments), from the pose at q2 (w->world2, w->S2). outputs: w->cw, w->Jb, w->dw. */
static void chart_increments(const symplex_tree *tree, workspace *w)
{
    const int64_t nq = tree->nq;
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b, P = tree->dof_parent[k[0]] < 0 ? nq : tree->dof_parent[k[0]];
        double place[9], P2[9], A2[9], RF[9], Phi[9], inv[9];
        double *cw = w->cw + 3 * b, *Jb = w->Jb + 9 * b, *dw = w->dw + 9 * b;
        rot_of(tree->dof_placement + 16 * k[0], place);
        rot_of(w->world2 + 16 * P, P2);
        mat3_mul(P2, place, A2);
        rot_of(w->world2 + 16 * k[2], RF);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                Phi[3 * i + j] = A2[i] * RF[j] + A2[3 + i] * RF[3 + j] + A2[6 + i] * RF[6 + j];
                Jb[3 * i + j] = RF[i] * w->S2[6 * k[j]] + RF[3 + i] * w->S2[6 * k[j] + 1] + RF[6 + i] * w->S2[6 * k[j] + 2];
            }
        const double s = 2.0 / (1.0 + Phi[0] + Phi[4] + Phi[8]);
        cw[0] = s * (Phi[7] - Phi[5]);
        cw[1] = s * (Phi[2] - Phi[6]);
        cw[2] = s * (Phi[3] - Phi[1]);
        const double W[9] = {0.0, -cw[2], cw[1], cw[2], 0.0, -cw[0], -cw[1], cw[0], 0.0};
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) inv[3 * i + j] = (i == j ? 1.0 : 0.0) + 0.5 * W[3 * i + j] + 0.25 * cw[i] * cw[j];
        mat3_mul(inv, Jb, dw);
    }
}

/* What a chart spring adds to its ball node's block (ball_springs.chart_row_terms): with u_j the columns of Jb
 * and L_i those of J_L(psi), dF_i/dpsi_j += -dt/4 Q_q[i][j] - dt k inner[i][j],
 * Q_q[i][j] = -k (u_i . Jri u_j + (u_i x u_j) . theta [j > i]),
 * inner[i][j] = L_i . Phi (u_j x theta + Jri u_j) / 2 + (L_j x L_i) . as [j < i], as = Phi theta.
 * inputs: sp (30) = chart_spring at psi/2, JL (9) row-major J_L(psi); output: block (9) updated. */
static void spring_block(double k, double dt, const double *sp, const double *JL, const double *as, double *block)
{
    const double *theta = sp, *Phi = sp + 3, *Jb = sp + 12, *Jri = sp + 21;
    double u[3][3], L[3][3];
    for (int i = 0; i < 3; ++i)
        for (int r = 0; r < 3; ++r) { u[i][r] = Jb[3 * r + i]; L[i][r] = JL[3 * r + i]; }
    for (int j = 0; j < 3; ++j) {
        double Ju[3], turn[3], Pt[3];
        for (int r = 0; r < 3; ++r) Ju[r] = dot3(Jri + 3 * r, u[j]);
        cross3(u[j], theta, turn);
        for (int r = 0; r < 3; ++r) turn[r] += Ju[r];
        for (int r = 0; r < 3; ++r) Pt[r] = dot3(Phi + 3 * r, turn);
        for (int i = 0; i < 3; ++i) {
            double qq = dot3(u[i], Ju), inner = 0.5 * dot3(L[i], Pt), c[3];
            if (j > i) { cross3(u[i], u[j], c); qq += dot3(c, theta); }
            if (j < i) { cross3(L[j], L[i], c); inner += dot3(c, as); }
            block[3 * i + j] += 0.25 * dt * k * qq - dt * k * inner;
        }
    }
}

/* The Lie group rows of every ball chart (tree/lie_rows.py, formulas in its docstring), at the midpoint
 * terms in w and the pose at q2 (w->world2, w->S2); q1 = 0 on the chart coordinates.
 * outputs: F (nq,) residual by coordinate (written at the chart coordinates only);
 *          with jacobian != 0 also w->x, w->R rows of the chart coordinates and w->blocks (tree_jacobian first);
 *          w->JL (nball, 3, 3) J_L(psi), column i = axis i in chart axes.
 * inputs:  pbar (nq,) = p1 + dt/2 f_c - Dh1^T lam by coordinate (read at the chart coordinates). */
static void ball_rows(const symplex_tree *tree, double dt, workspace *w, const double *pbar, double *F, int jacobian)
{
    const int64_t nq = tree->nq;
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b, base = k[0];
        const int64_t P = tree->dof_parent[base] < 0 ? nq : tree->dof_parent[base];
        double place[9], Pm[9], P2[9], Am[9], A2[9], rel[9], w2[9], o[3], a2p[3], Et[18], Etdot[18];
        double *JL = w->JL + 9 * b;
        const double *VP = w->V + 6 * P, *H = w->H + 6 * base, *Wb = w->W + 6 * base;
        rot_of(tree->dof_placement + 16 * base, place);
        rot_of(w->world + 16 * P, Pm);
        rot_of(w->world2 + 16 * P, P2);
        mat3_mul(Pm, place, Am);
        mat3_mul(P2, place, A2);
        for (int i = 0; i < 3; ++i) {
            o[i] = w->world[16 * base + 4 * i + 3];
            for (int j = 0; j < 3; ++j) {
                w2[3 * i + j] = w->S2[6 * k[i] + j];
                rel[3 * i + j] = Am[3 * i] * A2[3 * j] + Am[3 * i + 1] * A2[3 * j + 1] + Am[3 * i + 2] * A2[3 * j + 2];
            }
            a2p[i] = A2[3 * i] * pbar[k[0]] + A2[3 * i + 1] * pbar[k[1]] + A2[3 * i + 2] * pbar[k[2]];
        }
        for (int j = 0; j < 3; ++j) /* JL[j][i] = (A2^T w2_i)_j */
            for (int i = 0; i < 3; ++i) JL[3 * j + i] = A2[j] * w2[3 * i] + A2[3 + j] * w2[3 * i + 1] + A2[6 + j] * w2[3 * i + 2];
        for (int i = 0; i < 3; ++i) {
            double e[3];
            for (int r = 0; r < 3; ++r) e[r] = dot3(rel + 3 * r, w2 + 3 * i);
            rotation_twist(e, o, Et + 6 * i);
            ad_twist(VP, Et + 6 * i, Etdot + 6 * i);
            F[k[i]] = dot3(w2 + 3 * i, a2p) + dt * (dot6(Etdot + 6 * i, H) + dot6(Et + 6 * i, Wb))
                      - (0.5 * dt * (w->g[k[i]] + w->Q[k[i]]) + w->p[k[i]]);
        }
        const double ks = tree->ball_stiffness[b], *sp = w->spring + 30 * b;
        double as[3] = {0.0, 0.0, 0.0};  /* the spring's chart derivative: -dt k J_L^T Phi(psi/2) theta */
        if (ks != 0.0) {
            for (int r = 0; r < 3; ++r) as[r] = dot3(sp + 3 + 3 * r, sp);
            for (int i = 0; i < 3; ++i) F[k[i]] -= dt * ks * (JL[i] * as[0] + JL[3 + i] * as[1] + JL[6 + i] * as[2]);
        }
        if (!jacobian) continue;
        double xD2[3][12], *block = w->blocks + 9 * b;
        for (int i = 0; i < 3; ++i) {
            const double *Yc = w->Yc + 18 * k[i];
            for (int r = 0; r < 12; ++r) xD2[i][r] = Yc[r] + (r >= 6 ? Yc[6 + r] : 0.0);
        }
        for (int i = 0; i < 3; ++i) {
            const int64_t a = k[i];
            double IcS[6], G[6], X[6], *x = w->x + 12 * a, *R = w->R + 18 * a;
            axis_terms(w->Ic + INERTIA * base, H, Wb, w->K + 9 * base, Et + 6 * i, Etdot + 6 * i, IcS, G, X);
            for (int r = 0; r < 6; ++r) {
                x[r] = 0.5 * dt * G[r] - xD2[i][r];
                x[6 + r] = 0.5 * dt * X[r] + G[r] - xD2[i][6 + r];
                R[r] = 2.0 * Etdot[6 * i + r] - w->Sdot[6 * a + r];
                R[6 + r] = 2.0 * Et[6 * i + r] - w->S[6 * a + r];
                R[12 + r] = Et[6 * i + r] - w->S[6 * a + r];
            }
            const double *Sa = w->S + 6 * a, *Sda = w->Sdot + 6 * a;
            axis_terms(w->Ic + INERTIA * a, w->H + 6 * a, w->W + 6 * a, w->K + 9 * a, Sa, Sda, IcS, G, X);
            const double dD2 = 0.25 * dt * (dot6(Sda, G) + dot6(Sa, X) - tree->dof_stiffness[a]) + dot6(Sda, IcS)
                               + dot6(Sa, IcS) / dt;
            for (int j = 0; j < 3; ++j) {
                const double *Ycj = w->Yc + 18 * k[j];
                double value = 2.0 * (dot6(Etdot + 6 * i, Ycj) + dot6(Et + 6 * i, Ycj + 6)) + dot6(Et + 6 * i, Ycj + 12);
                for (int r = 0; r < 3; ++r)  // J_L^T d(dt/2 f_c(w / dt))/dpsi: damping and servo
                    value -= 0.5 * JL[3 * r + i] * (tree->dof_damping[k[r]] + tree->dof_motor_gain[k[r]]) * w->dw[9 * b + 3 * r + j];
                if (j < i) {
                    double turn[3], de[3], dE[6], t[6];
                    cross3(w2 + 3 * j, w2 + 3 * i, turn);
                    value += dot3(turn, a2p);
                    for (int r = 0; r < 3; ++r) de[r] = dot3(rel + 3 * r, turn);
                    rotation_twist(de, o, dE);
                    ad_twist(VP, dE, t);
                    value += dt * (dot6(t, H) + dot6(dE, Wb));
                    value -= dot12(w->U + 12 * k[j], xD2[i]);
                } else if (j > i) {
                    value -= dot12(w->U + 12 * a, xD2[j]);
                } else {
                    value -= dD2;
                }
                block[3 * i + j] = value;
            }
        }
        if (ks != 0.0) spring_block(ks, dt, sp, JL, as, block);
    }
}

/* D^-1 for an s x s block (s = 1 or 3), row-major into inv; returns 1 when singular or not finite */
static int invert_block(int s, const double *D, double *inv)
{
    if (s == 1) {
        if (D[0] == 0.0 || !isfinite(D[0])) return 1;
        inv[0] = 1.0 / D[0];
        return 0;
    }
    double cof[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            const int i1 = (i + 1) % 3, i2 = (i + 2) % 3, j1 = (j + 1) % 3, j2 = (j + 2) % 3;
            cof[3 * j + i] = D[3 * i1 + j1] * D[3 * i2 + j2] - D[3 * i1 + j2] * D[3 * i2 + j1]; /* adjugate */
        }
    const double det = D[0] * cof[0] + D[1] * cof[3] + D[2] * cof[6];
    if (det == 0.0 || !isfinite(det)) return 1;
    for (int r = 0; r < 9; ++r) inv[r] = cof[r] / det;
    return 0;
}

/* A node of the elimination: each coordinate alone, each ball chart's three coordinates together.
 * Returns its size s (0: not a node's last member when last != 0, or not its first when last == 0) and
 * sets *first. */
static int node_at(const symplex_tree *tree, const workspace *w, int64_t a, int last, int64_t *first)
{
    const int64_t b = w->ball[a];
    if (b < 0) {
        *first = a;
        return 1;
    }
    *first = tree->ball_dofs[3 * b];
    return a == tree->ball_dofs[3 * b + (last ? 2 : 0)] ? 3 : 0;
}

/* Leaves-to-root elimination of J11 on the unknown coordinates (tree/articulated.py factor): per node with
 * members m (s of them), D = d + R Obar U^T, X = -D^-1 (x + R Obar), c = Yc^T + Obar U^T,
 * Omega = Obar + c X added into Obar of the parent coordinate. outputs: w->Dinv, w->X, w->c by member;
 * uses w->Obar. Returns 1 when a pivot block is singular. Adds its multiply-adds to *ops. O(nq). */
static int factor(const symplex_tree *tree, workspace *w, double *ops)
{
    const int64_t nq = tree->nq;
    const int h = tree->nball ? 18 : 12;  /* hand-up length: (y, t) when ball rows read t, else y */
    memset(w->Obar, 0, (size_t)(216 * nq) * sizeof(double));
    for (int64_t a = nq - 1; a >= 0; --a) {
        int64_t m;
        const int s = node_at(tree, w, a, 1, &m);
        if (!s) continue;
        double *O = w->Obar + 216 * a;
        if (w->unknown[m] >= 0) {
            double OU[18][3], RO[3][12], D[9], inv[9];
            for (int r = 0; r < h; ++r)
                for (int j = 0; j < s; ++j) OU[r][j] = dot12(O + 12 * r, w->U + 12 * (m + j));
            for (int i = 0; i < s; ++i) {
                const double *R = w->R + 18 * (m + i);
                for (int col = 0; col < 12; ++col) {
                    double t = 0.0;
                    for (int r = 0; r < h; ++r) t += R[r] * O[12 * r + col];
                    RO[i][col] = t;
                }
                for (int j = 0; j < s; ++j) {
                    double t = s == 1 ? w->d[a] : w->blocks[9 * w->ball[a] + 3 * i + j];
                    for (int r = 0; r < h; ++r) t += R[r] * OU[r][j];
                    D[s * i + j] = t;
                }
            }
            if (invert_block(s, D, inv)) return 1;
            for (int i = 0; i < s; ++i) {
                double *X = w->X + 12 * (m + i);
                for (int col = 0; col < 12; ++col) {
                    double t = 0.0;
                    for (int j = 0; j < s; ++j) t -= inv[s * i + j] * (w->x[12 * (m + j) + col] + RO[j][col]);
                    X[col] = t;
                }
                for (int j = 0; j < s; ++j) w->Dinv[3 * (m + i) + j] = inv[s * i + j];
            }
            for (int j = 0; j < s; ++j) {
                double *c = w->c + 18 * (m + j);
                const double *X = w->X + 12 * (m + j);
                for (int r = 0; r < h; ++r) {
                    c[r] = w->Yc[18 * (m + j) + r] + OU[r][j];
                    for (int col = 0; col < 12; ++col) O[12 * r + col] += c[r] * X[col];
                }
            }
            *ops += 3 * h * 12 * s + h * s * s + 12 * s * s;
        }
        if (tree->dof_parent[m] >= 0) add(12 * h, O, w->Obar + 216 * tree->dof_parent[m]);
    }
    return 0;
}

/* r <- J11^-1 r with the factor (tree/articulated.py solve): r (nq,) by coordinate; prescribed entries are
 * ignored on input and 0 on output. Uses w->obar, w->zc, w->xi. Adds its multiply-adds to *ops. O(nq). */
static void solve_tree(const symplex_tree *tree, workspace *w, double *r, double *ops)
{
    const int64_t nq = tree->nq;
    const int h = tree->nball ? 18 : 12;
    memset(w->obar, 0, (size_t)(18 * nq) * sizeof(double));
    for (int64_t a = nq - 1; a >= 0; --a) {
        int64_t m;
        const int s = node_at(tree, w, a, 1, &m);
        if (!s) continue;
        double *o = w->obar + 18 * a;
        if (w->unknown[m] >= 0) {
            double t[3];
            for (int i = 0; i < s; ++i) {
                const double *R = w->R + 18 * (m + i);
                double u = r[m + i];
                for (int k = 0; k < h; ++k) u -= R[k] * o[k];
                t[i] = u;
            }
            for (int i = 0; i < s; ++i) {
                double u = 0.0;
                for (int j = 0; j < s; ++j) u += w->Dinv[3 * (m + i) + j] * t[j];
                w->xi[m + i] = u;
            }
            for (int j = 0; j < s; ++j)
                for (int k = 0; k < h; ++k) o[k] += w->c[18 * (m + j) + k] * w->xi[m + j];
            *ops += 2 * h * s + s * s;
        }
        if (tree->dof_parent[m] >= 0) add(h, o, w->obar + 18 * tree->dof_parent[m]);
    }
    for (int64_t a = 0; a < nq; ++a) {
        int64_t m;
        const int s = node_at(tree, w, a, 0, &m);
        if (!s) continue;
        const int64_t p = tree->dof_parent[m];
        double z[12];
        for (int i = 0; i < 12; ++i) z[i] = p >= 0 ? w->zc[12 * p + i] : 0.0;
        if (w->unknown[m] >= 0) {
            for (int i = 0; i < s; ++i) r[m + i] = dot12(w->X + 12 * (m + i), z) + w->xi[m + i];
            for (int i = 0; i < s; ++i)
                for (int k = 0; k < 12; ++k) z[k] += w->U[12 * (m + i) + k] * r[m + i];
            *ops += 24 * s;
        } else {
            for (int i = 0; i < s; ++i) r[m + i] = 0.0;
        }
        for (int i = 0; i < 12; ++i) w->zc[12 * (m + s - 1) + i] = z[i];
    }
}

/* y -= a x, unrolled by four so that -O2 (SLP) vectorises it: the LU's inner loop */
static void subtract_scaled(int64_t n, double a, const double *restrict x, double *restrict y)
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
static int solve_dense(int64_t n, double *A, double *b)
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

int64_t symplex_midpoint_step(const symplex_tree *tree, int64_t nsel, const int64_t *rows, const double *torque,
                              const double *force_vector, const double *q1, const double *p1, double dt,
                              double tol, int64_t max_iterations, double *q2, double *lam, double *p2, double *h2,
                              double *stats, int64_t *iterations, double *scratch)
{
    // outputs: q2, lam, p2, h2, stats, iterations
    // inputs:  tree, rows, torque, force_vector, q1, p1, dt, tol, max_iterations
    const int64_t nq = tree->nq, nrow = tree->nrow;
    workspace w;
    carve(&w, scratch, nq, nrow);
    int64_t nd = 0;
    for (int64_t k = 0; k < nq; ++k) {
        w.unknown[k] = tree->dof_prescribed[k] ? -1 : nd++;
        w.ball[k] = -1;
    }
    for (int64_t b = 0; b < tree->nball; ++b)
        for (int i = 0; i < 3; ++i) w.ball[tree->ball_dofs[3 * b + i]] = b;
    double scale = 1.0, energy = 0.0, r1 = 0.0, r2 = 0.0, ops = 0.0;
    for (int64_t k = 0; k < nq; ++k) scale = fabs(p1[k]) > scale ? fabs(p1[k]) : scale;
    if (nsel) {
        forward_kinematics(tree, q1, w.world2, w.S2);
        for (int64_t i = 0; i < nsel; ++i) loop_row(tree, w.world2, w.S2, rows[i], w.Dh1 + i * nq);
    }

    int64_t status = SYMPLEX_CONVERGED, it = 0;
    for (;;) {
        for (int64_t k = 0; k < nq; ++k) {
            w.qm[k] = 0.5 * (q1[k] + q2[k]);
            w.v[k] = (q2[k] - q1[k]) / dt;
            w.fc[k] = -tree->dof_damping[k] * w.v[k] + tree->dof_motor_gain[k] * (tree->dof_motor_velocity[k] - w.v[k]);
            w.fc[k] += torque[k];
        }
        forward_kinematics(tree, w.qm, w.world, w.S);
        first_order_terms(tree, force_vector, &w, &energy);
        if (nrow || tree->nball) forward_kinematics(tree, q2, w.world2, w.S2);
        if (tree->nball) {  // a chart's damping, servo and torque act at its Cayley velocity w / dt
            chart_increments(tree, &w);
            for (int64_t b = 0; b < tree->nball; ++b)
                for (int i = 0; i < 3; ++i) {
                    const int64_t k = tree->ball_dofs[3 * b + i];
                    const double rate = w.cw[3 * b + i] / dt;
                    w.fc[k] = -tree->dof_damping[k] * rate + tree->dof_motor_gain[k] * (tree->dof_motor_velocity[k] - rate)
                              + torque[k];
                }
        }
        for (int64_t k = 0; k < nq; ++k) {
            const int64_t u = w.unknown[k];
            if (u < 0) continue;
            double f1 = p1[k] + 0.5 * dt * (w.g[k] + w.Q[k]) - w.p[k] + 0.5 * dt * w.fc[k];
            for (int64_t i = 0; i < nsel; ++i) f1 -= w.Dh1[i * nq + k] * lam[i];
            w.f[u] = f1;
        }
        if (tree->nball) {  // the chart rows on the rotation group (tree/lie_rows.py): pbar, then F into f
            for (int64_t k = 0; k < nq; ++k) {
                if (w.ball[k] < 0) continue;
                w.delta[k] = p1[k] + 0.5 * dt * w.fc[k];
                for (int64_t i = 0; i < nsel; ++i) w.delta[k] -= w.Dh1[i * nq + k] * lam[i];
            }
            ball_rows(tree, dt, &w, w.delta, w.xi, 0);
            for (int64_t k = 0; k < nq; ++k)
                if (w.ball[k] >= 0) w.f[w.unknown[k]] = w.xi[k];
        }
        r1 = max_abs(nd, w.f);
        // round-off floor of f1 scales with the largest momentum-like term in it
        double scale_it = scale;
        for (int64_t k = 0; k < nq; ++k) {
            scale_it = fmax(scale_it, fabs(w.p[k]));
            scale_it = fmax(scale_it, dt * fabs(w.g[k] + w.Q[k]));
        }
        if (nrow) {
            for (int64_t r = 0; r < nrow; ++r) h2[r] = loop_row(tree, w.world2, w.S2, r, NULL);
            for (int64_t i = 0; i < nsel; ++i) w.f[nd + i] = h2[rows[i]];
        }
        r2 = max_abs(nsel, w.f + nd);
        // loop rows get a tenth of tol (midpoint.LOOP_TOLERANCE_FACTOR): redundant rows follow them under tol
        if (r1 <= tol * scale_it && r2 <= 0.1 * tol) break;
        if (!isfinite(r1 + r2)) { status = SYMPLEX_NOT_FINITE; break; }
        if (it >= max_iterations) { status = SYMPLEX_NOT_CONVERGED; break; }

        // the exact Newton step, O(nq) per loop row (tree/articulated.py newton_direction):
        // delta = a + Y dlam, a = J11^-1 (-f1), Y = J11^-1 Dh1^T, (Dh2 Y) dlam = -f2 - Dh2 a
        tree_jacobian(tree, dt, &w);
        if (tree->nball) ball_rows(tree, dt, &w, w.delta, w.xi, 1);  // w.delta still holds pbar
        if (factor(tree, &w, &ops)) { status = SYMPLEX_SINGULAR; break; }
        for (int64_t k = 0; k < nq; ++k) w.delta[k] = w.unknown[k] >= 0 ? -w.f[w.unknown[k]] : 0.0;
        solve_tree(tree, &w, w.delta, &ops);
        for (int64_t i = 0; i < nsel; ++i) {
            double *Dh2 = w.Dh2 + i * nq, *Y = w.Y + i * nq;
            loop_row(tree, w.world2, w.S2, rows[i], Dh2);
            memcpy(Y, w.Dh1 + i * nq, (size_t)nq * sizeof(double));
            for (int64_t b = 0; b < tree->nball; ++b) {  // G1 on a chart's rows: Dh1 times J_L(psi)
                const int64_t *k = tree->ball_dofs + 3 * b;
                const double *JL = w.JL + 9 * b, *row = w.Dh1 + i * nq;
                for (int c = 0; c < 3; ++c) Y[k[c]] = row[k[0]] * JL[c] + row[k[1]] * JL[3 + c] + row[k[2]] * JL[6 + c];
            }
            solve_tree(tree, &w, Y, &ops);
        }
        for (int64_t i = 0; i < nsel; ++i) {
            const double *Dh2 = w.Dh2 + i * nq;
            w.dlam[i] = -w.f[nd + i];
            for (int64_t k = 0; k < nq; ++k) w.dlam[i] -= Dh2[k] * w.delta[k];  // zero where prescribed
            for (int64_t j = 0; j < nsel; ++j) w.schur[i * nsel + j] = 0.0;
            for (int64_t k = 0; k < nq; ++k)
                for (int64_t j = 0; j < nsel; ++j) w.schur[i * nsel + j] += Dh2[k] * w.Y[j * nq + k];
        }
        if (nsel && solve_dense(nsel, w.schur, w.dlam)) { status = SYMPLEX_SINGULAR; break; }
        for (int64_t j = 0; j < nsel; ++j)
            for (int64_t k = 0; k < nq; ++k) w.delta[k] += w.Y[j * nq + k] * w.dlam[j];
        ops += (double)(nsel * nsel * nd + 2 * nsel * nd);
        for (int64_t k = 0; k < nq; ++k) q2[k] += w.delta[k];
        for (int64_t i = 0; i < nsel; ++i) lam[i] += w.dlam[i];
        ++it;
    }

    for (int64_t k = 0; k < nq; ++k) p2[k] = 0.5 * dt * (w.g[k] + w.Q[k]) + w.p[k] + 0.5 * dt * w.fc[k];
    for (int64_t b = 0; b < tree->nball; ++b) {  // f+ on a chart: the body impulse at C2 in its coordinates
        const int64_t *k = tree->ball_dofs + 3 * b;
        const double *Jb = w.Jb + 9 * b;
        for (int i = 0; i < 3; ++i) {
            double f = 0.0;
            for (int j = 0; j < 3; ++j) f += Jb[3 * j + i] * 0.5 * dt * w.fc[k[j]];
            p2[k[i]] += f - 0.5 * dt * w.fc[k[i]];
        }
    }
    stats[0] = energy;
    stats[1] = r1;
    stats[2] = max_abs(nrow, h2);
    stats[3] = ops;
    *iterations = it;
    return status;
}

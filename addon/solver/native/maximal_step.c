/* One step of seed 003's maximal-coordinate variational integrator (symplex_kernels.h
 * symplex_maximal_step); loop joints' rows and the inequality pairs (contacts, friction, joint limits, set
 * up by the caller at the knot) are bordered onto the tree factor densely, or, with a block pattern from the
 * caller (many contacts), the whole bordered matrix is factored by the block LU of block_lu.c. The numpy twin and reference is
 * addon/solver/maximal/variational.py with bodies.py (rotation update, inertial terms), joints.py (joint
 * frames and rows), forces.py (wrenches and coordinates), interior_point.py (the pairs' rows and the
 * predictor-corrector) and linear.py (the Newton solve); the quantities and their names follow those
 * modules, and so does the order of the Newton loop.
 *
 * Residuals at interval velocities V = (v, omega) and multipliers lam (variational.py's docstring):
 *   m (v - v0)/dt - F(z1) - f_damp - G_x^T lam                                            (10)
 *   1/2 [s1 J w1 + w1 x J w1 - s0 J w0 + w0 x J w0] - tau(z1) - tau_damp - G_phi^T lam    (16), halved
 *   (g(z2(V)) - target(t2)) / dt                                                           (20)
 * s_k = sqrt(4/dt^2 - |w_k|^2), z2 = advance(z1, V) by (7), (13). Body index nbody is the world (identity
 * pose, its Jacobian columns dropped). Joint-frame Jacobians have columns (x_A, phi_A, x_B, phi_B). */
#include <math.h>
#include <string.h>

#include "baraff_kernels.h"
#include "block_lu.h"
#include "rotation.h"
#include "symplex_kernels.h"
#include "vec3.h"

enum { T0, T1, T2, Q0, Q1, Q2, U, ANGLE, UZ, UX, ROT0, ROT1, ROT2, CAY0, CAY1, CAY2 };

int64_t symplex_maximal_struct_size(void) { return (int64_t)sizeof(symplex_maximal); }

/* ---------------------------------------------------------------- small vector and quaternion algebra */

static void mat3t_vec(const double *M, const double *x, double *y) /* y = M^T x */
{
    for (int i = 0; i < 3; ++i) y[i] = M[i] * x[0] + M[3 + i] * x[1] + M[6 + i] * x[2];
}

static void qmul(const double *a, const double *b, double *out) /* Hamilton product a (x) b */
{
    double o[4];
    o[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
    o[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
    o[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
    o[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
    memcpy(out, o, sizeof o);
}

static void qconj(const double *q, double *out)
{
    out[0] = q[0]; out[1] = -q[1]; out[2] = -q[2]; out[3] = -q[3];
}

static double max_abs(int64_t n, const double *x)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; ++i) m = fabs(x[i]) > m ? fabs(x[i]) : m;
    return m;
}

static double norm(int64_t n, const double *x)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
    return sqrt(s);
}

/* joints.unwrap: the multiple of 2 pi that brings `raw` nearest to `previous` (np.round: half to even) */
static double unwrap(double raw, double previous)
{
    const double two_pi = 6.283185307179586;
    return two_pi * nearbyint((previous - raw) / two_pi);
}

/* ---------------------------------------------------------------- joint frames (joints.frames_of) */

/* r = R_A^T (p_B - p_A), q_rel = q_A^-1 (x) q_B and their Jacobians over (x_A, phi_A, x_B, phi_B). */
typedef struct frame {
    double r[3], dr[36], qrel[4], dq[48];
} frame;

static const double IDENTITY_QUAT[4] = {1.0, 0.0, 0.0, 0.0};
static const double IDENTITY3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
static const double ZERO3[3] = {0.0, 0.0, 0.0};

/* The frame pair of bodies a, b (nb = world) with anchors pa, pb and joint frames ca, cb (C_A, C_B their
 * matrices) at the configuration x, q: with q_A = q_a (x) c_a and m = q_A^-1 (x) q_b, the rotation blocks
 * are R(q_A)^T and R(m) (joints.frames_of). */
static void frame_pair(int64_t nb, const double *x, const double *q, int64_t a, int64_t b, const double *pa,
                       const double *pb, const double *ca, const double *cb, const double *Ca, const double *Cb,
                       frame *f)
{
    const double *xa = a < nb ? x + 3 * a : ZERO3, *xb = b < nb ? x + 3 * b : ZERO3;
    const double *qa = a < nb ? q + 4 * a : IDENTITY_QUAT, *qb = b < nb ? q + 4 * b : IDENTITY_QUAT;
    double Ra[9], Rb[9], t[3], d[3], u[3], qA[4], qAc[4], m[4], CR[9], Rm[9], up[3];
    symplex_quat_to_matrix(qa, Ra);
    symplex_quat_to_matrix(qb, Rb);
    mat3_vec(Rb, pb, d);
    mat3_vec(Ra, pa, t);
    for (int i = 0; i < 3; ++i) d[i] += xb[i] - xa[i] - t[i];
    mat3t_vec(Ra, d, u);
    mat3t_vec(Ca, u, f->r);
    qmul(qa, ca, qA);
    qconj(qA, qAc);
    qmul(qAc, qb, m);
    qmul(m, cb, f->qrel);
    symplex_quat_to_matrix(qA, CR); /* R(q_A): the blocks below read its transpose */
    symplex_quat_to_matrix(m, Rm);
    for (int i = 0; i < 3; ++i) up[i] = u[i] + pa[i];
    for (int i = 0; i < 3; ++i) {
        double *row = f->dr + 12 * i, col[3], c[3];
        for (int k = 0; k < 3; ++k) {
            row[k] = -CR[3 * k + i];     /* -R(q_A)^T */
            row[6 + k] = CR[3 * k + i];
        }
        for (int k = 0; k < 3; ++k) col[k] = Ca[3 * k + i]; /* row i of C_A^T */
        cross3(col, up, c);
        memcpy(row + 3, c, sizeof c);
        cross3(Rm + 3 * i, pb, c);
        for (int k = 0; k < 3; ++k) row[9 + k] = -c[k];
    }
    memset(f->dq, 0, sizeof f->dq);
    for (int k = 0; k < 3; ++k) {
        double pure[4] = {0.0, Ca[3 * k], Ca[3 * k + 1], Ca[3 * k + 2]}, p[4];
        qmul(pure, f->qrel, p); /* d q_rel / d phi_A[k] = -1/2 [0; row k of C_A] (x) q_rel */
        for (int i = 0; i < 4; ++i) f->dq[12 * i + 3 + k] = -0.5 * p[i];
        pure[1] = Cb[3 * k]; pure[2] = Cb[3 * k + 1]; pure[3] = Cb[3 * k + 2];
        qmul(f->qrel, pure, p); /* d q_rel / d phi_B[k] = 1/2 q_rel (x) [0; row k of C_B] */
        for (int i = 0; i < 4; ++i) f->dq[12 * i + 9 + k] = 0.5 * p[i];
    }
}

/* ---------------------------------------------------------------- rows and coordinates (generic_rows) */

/* jac = g^T dq: a function of q_rel with gradient g (4,) over the 12 body columns */
static void chain_quat(const double *g, const double *dq, double *jac)
{
    for (int k = 0; k < 12; ++k) jac[k] = g[0] * dq[k] + g[1] * dq[12 + k] + g[2] * dq[24 + k] + g[3] * dq[36 + k];
}

/* atan2(s, c) and its gradient in q_rel from those of s and c (joints._atan2_grad) */
static double atan2_grad(double s, double c, const double *ds, const double *dc, double *g)
{
    const double n2 = s * s + c * c;
    for (int i = 0; i < 4; ++i) g[i] = (c * ds[i] - s * dc[i]) / n2;
    return atan2(s, c);
}

/* Component k of theta = log(q) = f v, q = (w, v) taken with w >= 0, and d theta_k / dq
 * (joints._rotation_vector_grad, series below |v| = 1e-4). */
static double rotation_vector(const double *qr, int k, double *g)
{
    const double sign = qr[0] < 0.0 ? -1.0 : 1.0, w = sign * qr[0];
    const double v[3] = {sign * qr[1], sign * qr[2], sign * qr[3]};
    const double s = sqrt(dot3(v, v)), n2 = s * s + w * w, angle = atan2(s, w);
    const int small = s < 1e-4;
    const double f = small ? 2.0 / w * (1.0 - s * s / (3.0 * w * w)) : 2.0 * angle / s;
    const double h = small ? -4.0 / (3.0 * w * w * w) + 1.6 * s * s / (w * w * w * w * w)
                           : 2.0 / (s * s * s) * (w * s / n2 - angle);
    g[0] = sign * v[k] * (-2.0 / n2);
    for (int i = 0; i < 3; ++i) g[1 + i] = sign * ((i == k ? f : 0.0) + h * v[k] * v[i]);
    return f * v[k];
}

/* Value and Jacobian (12,) of a row or coordinate of `kind` on the frame pair f. ref: the q_rel that
 * CAYLEY_STEP coordinates start from (joints.generic_rows' `reference`; NULL: f's own q_rel). */
static double generic_row(const frame *f, int64_t kind, const double *ref, double *jac)
{
    const double *qr = f->qrel, w = qr[0], x = qr[1], y = qr[2], z = qr[3];
    double g[4];
    if (kind <= T2) {
        memcpy(jac, f->dr + 12 * kind, 12 * sizeof(double));
        return f->r[kind];
    }
    if (kind <= Q2) {
        memcpy(jac, f->dq + 12 * (kind - Q0 + 1), 12 * sizeof(double));
        return qr[kind - Q0 + 1];
    }
    if (kind == U) { /* e_z^A . e_x^B = 2 (x z - w y) */
        g[0] = -2.0 * y; g[1] = 2.0 * z; g[2] = -2.0 * w; g[3] = 2.0 * x;
        chain_quat(g, f->dq, jac);
        return 2.0 * (x * z - w * y);
    }
    if (kind == ANGLE) { /* 2 atan2(z, w) */
        const double n2 = w * w + z * z;
        g[0] = -2.0 * z / n2; g[1] = 0.0; g[2] = 0.0; g[3] = 2.0 * w / n2;
        chain_quat(g, f->dq, jac);
        return 2.0 * atan2(z, w);
    }
    if (kind == UZ || kind == UX) { /* R(q_rel) = Rz(a) Rx(b): a = atan2(R10, R00), b = atan2(R21, R22) */
        double val;
        if (kind == UZ) {
            const double ds[4] = {2 * z, 2 * y, 2 * x, 2 * w}, dc[4] = {0.0, 0.0, -4 * y, -4 * z};
            val = atan2_grad(2.0 * (x * y + w * z), 1.0 - 2.0 * (y * y + z * z), ds, dc, g);
        } else {
            const double ds[4] = {2 * x, 2 * w, 2 * z, 2 * y}, dc[4] = {0.0, -4 * x, -4 * y, 0.0};
            val = atan2_grad(2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y), ds, dc, g);
        }
        chain_quat(g, f->dq, jac);
        return val;
    }
    if (kind <= ROT2) {
        const double val = rotation_vector(qr, (int)(kind - ROT0), g);
        chain_quat(g, f->dq, jac);
        return val;
    }
    /* CAYLEY_STEP: c = 2 v / w of p = ref^-1 (x) q_rel, dp = L(ref^-1) dq */
    double start[4], p[4], dp[48];
    qconj(ref ? ref : qr, start);
    qmul(start, qr, p);
    for (int k = 0; k < 12; ++k) {
        const double col[4] = {f->dq[k], f->dq[12 + k], f->dq[24 + k], f->dq[36 + k]};
        double out[4];
        qmul(start, col, out);
        for (int i = 0; i < 4; ++i) dp[12 * i + k] = out[i];
    }
    const int c = (int)(kind - CAY0);
    g[0] = -2.0 * p[1 + c] / (p[0] * p[0]);
    g[1] = g[2] = g[3] = 0.0;
    g[1 + c] = 2.0 / p[0];
    chain_quat(g, dp, jac);
    return 2.0 * p[1 + c] / p[0];
}

/* Every joint's frame pair at (x, q) (joints.frames) */
static void joint_frames(const symplex_maximal *M, const double *x, const double *q, frame *fr)
{
    for (int64_t j = 0; j < M->njoint; ++j)
        frame_pair(M->nbody, x, q, M->parent[j], M->child[j], M->pa + 3 * j, M->pb + 3 * j, M->ca + 4 * j,
                   M->cb + 4 * j, M->frame_a + 9 * j, M->frame_b + 9 * j, fr + j);
}

/* forces.coordinates: joint coordinates (plus winding) then spring lengths, values and Jacobians. */
static void coordinates(const symplex_maximal *M, const frame *fr, const double *x, const double *q,
                        const double *winding, const double *reference, double *val, double *jac)
{
    for (int64_t c = 0; c < M->ncoord_joint; ++c) {
        const int64_t j = M->coord_joint[c];
        val[c] = generic_row(fr + j, M->coord_kind[c], reference ? reference + 4 * j : NULL, jac + 12 * c)
                 + winding[c];
    }
    for (int64_t s = 0; s < M->nspring; ++s) {
        const int64_t c = M->ncoord_joint + s;
        frame sp;
        frame_pair(M->nbody, x, q, M->spring_a[s], M->spring_b[s], M->spring_pa + 3 * s, M->spring_pb + 3 * s,
                   IDENTITY_QUAT, IDENTITY_QUAT, IDENTITY3, IDENTITY3, &sp);
        const double length = sqrt(dot3(sp.r, sp.r)), safe = length > 1e-300 ? length : 1e-300;
        val[c] = length;
        for (int k = 0; k < 12; ++k)
            jac[12 * c + k] = (sp.r[0] * sp.dr[k] + sp.r[1] * sp.dr[12 + k] + sp.r[2] * sp.dr[24 + k]) / safe;
    }
}

/* out[a] += row[0:6] * s, out[b] += row[6:12] * s, world dropped (forces.scatter) */
static void scatter(int64_t nb, int64_t a, int64_t b, const double *row, double s, double *out)
{
    if (a < nb)
        for (int k = 0; k < 6; ++k) out[6 * a + k] += s * row[k];
    if (b < nb)
        for (int k = 0; k < 6; ++k) out[6 * b + k] += s * row[6 + k];
}

/* ---------------------------------------------------------------- inertial terms (bodies.py) */

/* 1/2 (s J w + side w x J w), s = sqrt(4/dt^2 - |w|^2): bodies.rotational_momentum */
static void rotational_momentum(const double *J, const double *w, double dt, double side, double *out)
{
    double Jw[3], c[3];
    mat3_vec(J, w, Jw);
    cross3(w, Jw, c);
    const double s = sqrt(4.0 / (dt * dt) - dot3(w, w));
    for (int i = 0; i < 3; ++i) out[i] = 0.5 * (s * Jw[i] + side * c[i]);
}

/* its derivative 1/2 (s J - J w w^T / s + side ([w]x J - [J w]x)), added into the 6x6 block's
 * rotational corner D[3:, 3:] */
static void add_rotational_momentum_jacobian(const double *J, const double *w, double dt, double side, double *D)
{
    double Jw[3];
    mat3_vec(J, w, Jw);
    const double s = sqrt(4.0 / (dt * dt) - dot3(w, w));
    const double W[9] = {0, -w[2], w[1], w[2], 0, -w[0], -w[1], w[0], 0};
    const double H[9] = {0, -Jw[2], Jw[1], Jw[2], 0, -Jw[0], -Jw[1], Jw[0], 0};
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) {
            const double WJ = W[3 * i] * J[k] + W[3 * i + 1] * J[3 + k] + W[3 * i + 2] * J[6 + k];
            D[6 * (3 + i) + 3 + k] += 0.5 * (s * J[3 * i + k] - Jw[i] * w[k] / s + side * (WJ - H[3 * i + k]));
        }
}

/* d phi_2 / d omega / dt = c I + a a^T / c - [a]x, a = dt/2 omega (bodies.rotation_jacobian / dt) */
static void rotation_jacobian(const double *w, double dt, double *Wr)
{
    const double a[3] = {0.5 * dt * w[0], 0.5 * dt * w[1], 0.5 * dt * w[2]};
    const double c = sqrt(1.0 - dot3(a, a));
    const double A[9] = {0, -a[2], a[1], a[2], 0, -a[0], -a[1], a[0], 0};
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) Wr[3 * i + k] = (i == k ? c : 0.0) + a[i] * a[k] / c - A[3 * i + k];
}

/* variational._velocity_side: phi columns of a (12,) Jacobian at z_2 times W(omega)/dt of each body */
static void velocity_side(const double *jac, const double *Wa, const double *Wb, double *out)
{
    memcpy(out, jac, 12 * sizeof(double));
    for (int k = 0; k < 3; ++k) {
        out[3 + k] = jac[3] * Wa[k] + jac[4] * Wa[3 + k] + jac[5] * Wa[6 + k];
        out[9 + k] = jac[9] * Wb[k] + jac[10] * Wb[3 + k] + jac[11] * Wb[6 + k];
    }
}

/* ---------------------------------------------------------------- workspace */

typedef struct knot { /* variational.Knot */
    double *G, *row_val1, *cval, *cjac, *wrench, *qrel, potential;
    frame *fr;
} knot;

typedef struct evaluation { /* variational.Evaluation with its NewtonMatrix */
    double *x2, *q2, *raw2, *jac2, *C, *wind2, *cval2, *cjac2, *turns, *rate, *r, *row_res, *D, *K, *Wr;
    double *pC, *h; /* the pairs' velocity sides (npair, 12) and functions h (npair,) */
    int64_t *coupled; /* (ncoord,) nonzero: K holds coordinate c's body-body blocks (a, b), (b, a) */
    frame *fr;
} evaluation;

/* The rows in the system: the primary rows 0..n_primary-1, then the active auxiliary rows (act, nact),
 * then the inequality pairs (P, np); a Newton vector is (zdot (6 nbody); multipliers of act; pairs'
 * multipliers). The auxiliary rows and the pairs are bordered onto the factored primary part P through
 * the dense Schur complement E - C_aux P^-1 G_aux^T (E = 0 for joint rows), LU-factored after row and
 * column equilibration (linear.LinearSolver._factor_bordered); or, with a pattern (S), the whole bordered
 * matrix is equilibrated and factored by the block LU (linear.LinearSolver._factor_sparse). */
typedef struct workspace {
    knot k;
    evaluation ev[2];
    const symplex_maximal_pairs *P;
    const symplex_maximal_sparse *S; /* the block LU's pattern, or NULL: dense border */
    int64_t *act, nact, np, *pivot;
    double *du, *rhs, *flat, *fill, *solve_scratch, *u, *best_u, *defect, *tmp, *trial_V, *trial_lam, *blocks,
        *Y, *schur, *srow, *scol, *mu, *target, *ds, *ls, *force, *plus, *minus;
} workspace;

static int64_t frame_doubles(int64_t n) { return n * (int64_t)(sizeof(frame) / sizeof(double)); }

/* Lay the workspace out in `base` (NULL: only count); returns the doubles used. */
static int64_t carve(const symplex_maximal *M, int64_t npair, int64_t dense, double *base, workspace *w)
{
    const int64_t nb = M->nbody, nj = M->njoint, R = M->nrow, nc = M->ncoord_joint + M->nspring;
    const int64_t N = 6 * nb + R + npair, naux = dense ? R - M->n_primary + npair : 0;
    int64_t at = 0;
#define TAKE(n) (base ? base + (at += (n)) - (n) : (at += (n), (double *)0))
    w->k.G = TAKE(12 * R); w->k.row_val1 = TAKE(R); w->k.cval = TAKE(nc); w->k.cjac = TAKE(12 * nc);
    w->k.wrench = TAKE(6 * nb); w->k.qrel = TAKE(4 * nj); w->k.fr = (frame *)TAKE(frame_doubles(nj));
    for (int e = 0; e < 2; ++e) {
        evaluation *ev = w->ev + e;
        ev->x2 = TAKE(3 * nb); ev->q2 = TAKE(4 * nb); ev->raw2 = TAKE(R); ev->jac2 = TAKE(12 * R);
        ev->C = TAKE(12 * R); ev->wind2 = TAKE(R); ev->cval2 = TAKE(nc); ev->cjac2 = TAKE(12 * nc);
        ev->turns = TAKE(nc); ev->rate = TAKE(nc); ev->r = TAKE(6 * nb); ev->row_res = TAKE(R);
        ev->D = TAKE(36 * nb); ev->K = TAKE(72 * nc); ev->Wr = TAKE(9 * (nb + 1));
        ev->coupled = (int64_t *)TAKE(nc); ev->fr = (frame *)TAKE(frame_doubles(nj));
        ev->pC = TAKE(12 * npair); ev->h = TAKE(npair);
    }
    w->act = (int64_t *)TAKE(R); w->pivot = (int64_t *)TAKE(naux);
    w->Y = TAKE((6 * nb + M->n_primary) * naux); w->schur = TAKE(naux * naux); w->srow = TAKE(naux);
    w->scol = TAKE(naux); w->mu = TAKE(naux); w->target = TAKE(npair); w->ds = TAKE(npair); w->ls = TAKE(npair);
    w->force = TAKE(6 * nb); w->plus = TAKE(npair); w->minus = TAKE(npair); w->du = TAKE(N); w->rhs = TAKE(N); w->flat = TAKE(M->flat_size);
    w->fill = TAKE(M->fill_scratch > 1 ? M->fill_scratch : 1); w->solve_scratch = TAKE(6 * (naux > 11 ? naux : 11)); /* symplex_fillin_solve: node dim (<= 6) x ncol */
    w->u = TAKE(N); w->best_u = TAKE(N); w->defect = TAKE(N); w->tmp = TAKE(N);
    w->trial_V = TAKE(6 * nb); w->trial_lam = TAKE(R); w->blocks = TAKE(24 * R);
#undef TAKE
    return at;
}

int64_t symplex_maximal_scratch_size(const symplex_maximal *model, int64_t npair, int64_t dense)
{
    workspace w;
    return carve(model, npair, dense, NULL, &w);
}

/* ---------------------------------------------------------------- the knot (variational.knot_terms) */

static void knot_terms(const symplex_maximal *M, const symplex_maximal_state *S, knot *k)
{
    const int64_t nb = M->nbody, nc = M->ncoord_joint + M->nspring;
    joint_frames(M, S->x, S->q, k->fr);
    for (int64_t r = 0; r < M->nrow; ++r) {
        const int64_t j = M->row_joint[r], kind = M->row_kind[r];
        k->row_val1[r] = generic_row(k->fr + j, kind, NULL, k->G + 12 * r) + (kind == ANGLE ? S->row_winding[r] : 0.0);
    }
    coordinates(M, k->fr, S->x, S->q, S->coord_winding, NULL, k->cval, k->cjac);
    for (int64_t j = 0; j < M->njoint; ++j) memcpy(k->qrel + 4 * j, k->fr[j].qrel, 4 * sizeof(double));
    /* forces.knot_wrench: gravity, user forces, coordinate springs and keyed torques */
    for (int64_t b = 0; b < nb; ++b) {
        for (int i = 0; i < 3; ++i) k->wrench[6 * b + i] = M->mass[b] * M->gravity[i];
        for (int i = 3; i < 6; ++i) k->wrench[6 * b + i] = 0.0;
    }
    for (int64_t f = 0; f < M->nforce; ++f) {
        const int64_t b = M->force_body[f];
        double F[3], R[9], body_F[3], tau[3];
        for (int i = 0; i < 3; ++i) F[i] = M->force_vector[3 * f + i] * S->force_scale[f];
        symplex_quat_to_matrix(S->q + 4 * b, R);
        mat3t_vec(R, F, body_F);
        cross3(M->force_point + 3 * f, body_F, tau);
        for (int i = 0; i < 3; ++i) {
            k->wrench[6 * b + i] += F[i];
            k->wrench[6 * b + 3 + i] += tau[i];
        }
    }
    double potential = 0.0, spring = 0.0;
    for (int64_t b = 0; b < nb; ++b) potential -= M->mass[b] * dot3(M->gravity, S->x + 3 * b);
    for (int64_t c = 0; c < nc; ++c) {
        const double stretch = k->cval[c] - M->rest[c];
        const double generalized = -M->stiffness[c] * stretch + (c < M->ncoord_joint ? S->torque[c] : 0.0);
        scatter(nb, M->coord_a[c], M->coord_b[c], k->cjac + 12 * c, generalized, k->wrench);
        spring += M->stiffness[c] * stretch * stretch;
    }
    k->potential = potential + 0.5 * spring;
}

/* ---------------------------------------------------------------- one evaluation (variational.evaluate) */

/* interior_point.extend: the pairs' forces G^T lam into the body residual, their velocity sides C and
 * functions h at the velocities V (E is read from the iterate where it is used: -s/lam and the cone
 * entries). Needs ev's z_2 quantities (cval2, cjac2, Wr). */
static void pair_rows(const symplex_maximal *M, const workspace *ws, const double *V, double dt, evaluation *ev)
{
    const symplex_maximal_pairs *P = ws->P;
    const int64_t nb = M->nbody;
    if (!P) return;
    memset(ws->force, 0, 6 * nb * sizeof(double));
    for (int64_t p = 0; p < P->npair; ++p) {
        scatter(nb, P->a[p], P->b[p], P->G + 12 * p, P->lam[p], ws->force);
        ws->plus[p] = ws->minus[p] = 0.0;
    }
    for (int64_t i = 0; i < 6 * nb; ++i) ev->r[i] += ws->force[i];
    for (int64_t p = 0; p < P->npair; ++p) {
        const int64_t a = P->a[p], b = P->b[p];
        const double *G = P->G + 12 * p;
        double *C = ev->pC + 12 * p;
        if (P->kind[p] == 3) {
            const int64_t c = P->coord[p];
            double Ct[12];
            velocity_side(ev->cjac2 + 12 * c, ev->Wr + 9 * M->coord_a[c], ev->Wr + 9 * M->coord_b[c], Ct);
            for (int i = 0; i < 12; ++i) C[i] = -P->side[p] * Ct[i];
            ev->h[p] = P->side[p] * (ev->cval2[c] - P->bound[p]) / dt;
            continue;
        }
        memcpy(C, G, 12 * sizeof(double));
        double along_a = 0.0, along_b = 0.0;
        for (int i = 0; i < 6; ++i) {
            if (a < nb) along_a += G[i] * V[6 * a + i];
            if (b < nb) along_b += G[6 + i] * V[6 * b + i];
        }
        ev->h[p] = P->h0[p] - (along_a + along_b);
    }
    /* - E_off lam: cone rows mu sum gamma - sum beta, beta rows + psi (each sum apart, as numpy forms them) */
    for (int64_t e = 0; e < P->nentry; ++e) {
        const double value = P->e_val[e] * P->lam[P->e_col[e]];
        if (value < 0.0) ws->plus[P->e_row[e]] -= value;
        else ws->minus[P->e_row[e]] += value;
    }
    for (int64_t p = 0; p < P->npair; ++p)
        if (P->kind[p] != 3) ev->h[p] += ws->plus[p] - ws->minus[p];
}

static int evaluate(const symplex_maximal *M, const symplex_maximal_state *S, const knot *k, const workspace *ws,
                    const double *V, const double *lam, double dt, evaluation *ev)
{
    const int64_t nb = M->nbody, R = M->nrow, nc = M->ncoord_joint + M->nspring;
    /* z_2 by (7) and (13); |omega| dt/2 < 1 needed */
    for (int64_t b = 0; b < nb; ++b) {
        const double *v = V + 6 * b, *w = v + 3;
        const double a[3] = {0.5 * dt * w[0], 0.5 * dt * w[1], 0.5 * dt * w[2]};
        const double c2 = 1.0 - dot3(a, a);
        if (!(c2 > 0.0)) return c2 <= 0.0 ? SYMPLEX_SPIN_TOO_FAST : SYMPLEX_NOT_FINITE;
        const double half[4] = {sqrt(c2), a[0], a[1], a[2]};
        for (int i = 0; i < 3; ++i) ev->x2[3 * b + i] = S->x[3 * b + i] + dt * v[i];
        qmul(S->q + 4 * b, half, ev->q2 + 4 * b);
        rotation_jacobian(w, dt, ev->Wr + 9 * b);
    }
    memcpy(ev->Wr + 9 * nb, IDENTITY3, sizeof IDENTITY3);
    joint_frames(M, ev->x2, ev->q2, ev->fr);
    for (int64_t r = 0; r < R; ++r) { /* rows at z_2, unwrapped against z_1; velocity side C */
        const int64_t j = M->row_joint[r], kind = M->row_kind[r];
        ev->raw2[r] = generic_row(ev->fr + j, kind, NULL, ev->jac2 + 12 * r);
        ev->wind2[r] = kind == ANGLE ? unwrap(ev->raw2[r], k->row_val1[r]) : 0.0;
        ev->raw2[r] += ev->wind2[r];
        velocity_side(ev->jac2 + 12 * r, ev->Wr + 9 * M->parent[j], ev->Wr + 9 * M->child[j], ev->C + 12 * r);
        ev->row_res[r] = (ev->raw2[r] - S->targets[r]) / dt;
    }
    coordinates(M, ev->fr, ev->x2, ev->q2, S->coord_winding, k->qrel, ev->cval2, ev->cjac2);
    for (int64_t c = 0; c < nc; ++c) {
        const int angle = c < M->ncoord_joint && M->coord_kind[c] >= ANGLE && M->coord_kind[c] <= UX;
        ev->turns[c] = angle ? unwrap(ev->cval2[c], k->cval[c]) : 0.0;
        ev->cval2[c] += ev->turns[c];
        ev->rate[c] = (ev->cval2[c] - k->cval[c]) / dt;
    }
    /* body residuals (10), (16) and their blocks D */
    double *damp = ev->r; /* the damper wrench is gathered in r first, then the knot wrench added */
    memset(damp, 0, 6 * nb * sizeof(double));
    for (int64_t c = 0; c < nc; ++c) { /* variational._damper_wrench */
        const double c_eff = M->damping[c] + M->gain[c], servo = M->gain[c] * M->target_velocity[c];
        const double *now = k->cjac + 12 * c;
        if (S->startup) {
            scatter(nb, M->coord_a[c], M->coord_b[c], now, -c_eff * S->coord_rate[c] + servo, damp);
            continue;
        }
        const double *previous = S->coord_jac_prev ? S->coord_jac_prev + 12 * c : now;
        double forcing[12];
        for (int i = 0; i < 12; ++i)
            forcing[i] = 0.5 * ((-c_eff * S->coord_rate[c] + servo) * previous[i] + (-c_eff * ev->rate[c] + servo) * now[i]);
        scatter(nb, M->coord_a[c], M->coord_b[c], forcing, 1.0, damp);
    }
    for (int64_t b = 0; b < nb; ++b) {
        const double *v = V + 6 * b, *w = v + 3, *J = M->inertia + 9 * b;
        double v0[3], w0[3], m1[3], m0[3], *r = ev->r + 6 * b, *D = ev->D + 36 * b;
        for (int i = 0; i < 3; ++i) {
            v0[i] = S->startup ? 2.0 * S->v[3 * b + i] - v[i] : S->v[3 * b + i];
            w0[i] = S->startup ? 2.0 * S->w[3 * b + i] - w[i] : S->w[3 * b + i];
        }
        rotational_momentum(J, w, dt, +1.0, m1);
        rotational_momentum(J, w0, dt, -1.0, m0);
        for (int i = 0; i < 6; ++i) r[i] += k->wrench[6 * b + i]; /* knot.wrench + damp_wrench */
        for (int i = 0; i < 3; ++i) {
            r[i] = M->mass[b] * (v[i] - v0[i]) / dt - r[i];
            r[3 + i] = (m1[i] - m0[i]) - r[3 + i];
        }
        memset(D, 0, 36 * sizeof(double));
        const double trans = (S->startup ? 2.0 : 1.0) * M->mass[b] / dt;
        D[0] = D[7] = D[14] = trans;
        add_rotational_momentum_jacobian(J, w, dt, +1.0, D);
        if (S->startup) add_rotational_momentum_jacobian(J, w0, dt, -1.0, D);
    }
    /* - G^T lam over the rows in the system, summed apart first (forces.scatter's order) */
    memset(ws->force, 0, 6 * nb * sizeof(double));
    for (int64_t i = 0; i < ws->nact; ++i) {
        const int64_t r = ws->act[i], j = M->row_joint[r];
        scatter(nb, M->parent[j], M->child[j], k->G + 12 * r, -lam[r], ws->force);
    }
    for (int64_t i = 0; i < 6 * nb; ++i) ev->r[i] += ws->force[i];
    /* the implicit dampers' blocks 1/2 c_eff cjac(z_1) Ct(z_2): self blocks into D, body-body into K */
    for (int64_t c = 0; c < nc; ++c) {
        const double c_eff = M->damping[c] + M->gain[c];
        const int64_t a = M->coord_a[c], b = M->coord_b[c];
        ev->coupled[c] = 0;
        if (c_eff == 0.0 || S->startup) continue;
        double Ct[12];
        velocity_side(ev->cjac2 + 12 * c, ev->Wr + 9 * a, ev->Wr + 9 * b, Ct);
        const double *g = k->cjac + 12 * c;
        for (int i = 0; i < 6; ++i)
            for (int l = 0; l < 6; ++l) {
                if (a < nb) ev->D[36 * a + 6 * i + l] += 0.5 * c_eff * g[i] * Ct[l];
                if (b < nb) ev->D[36 * b + 6 * i + l] += 0.5 * c_eff * g[6 + i] * Ct[6 + l];
                ev->K[72 * c + 6 * i + l] = 0.5 * c_eff * g[i] * Ct[6 + l];      /* rows a, cols b */
                ev->K[72 * c + 36 + 6 * i + l] = 0.5 * c_eff * g[6 + i] * Ct[l]; /* rows b, cols a */
            }
        ev->coupled[c] = a < nb && b < nb;
    }
    pair_rows(M, ws, V, dt, ev);
    return SYMPLEX_CONVERGED;
}

static double merit(const symplex_maximal *M, const workspace *w, const evaluation *ev) /* variational._merit */
{
    double s = 0.0;
    for (int64_t i = 0; i < w->nact; ++i) s += ev->row_res[w->act[i]] * ev->row_res[w->act[i]];
    return norm(6 * M->nbody, ev->r) + sqrt(s);
}

static double max_gap(const workspace *w, const evaluation *ev) /* max |row residual| over the system's rows */
{
    double m = 0.0;
    for (int64_t i = 0; i < w->nact; ++i) m = fabs(ev->row_res[w->act[i]]) > m ? fabs(ev->row_res[w->act[i]]) : m;
    return m;
}

/* ---------------------------------------------------------------- the Newton solve (linear.py) */

static int any_coupling(const symplex_maximal *M, const evaluation *ev)
{
    for (int64_t c = 0; c < M->ncoord_joint + M->nspring; ++c)
        if (ev->coupled[c]) return 1;
    return 0;
}

/* One row of A u: its force side G mu into the body rows of out, its velocity side C . u on bodies a, b (the
 * world's columns dropped) returned; with `absolute`, |G| mu and |C| |u| (mu already |mu|) */
static double row_product(int64_t nb, int64_t a, int64_t b, const double *G, const double *C, double mu,
                          const double *u, int absolute, double *out)
{
    double row = 0.0;
    for (int i = 0; i < 6; ++i) {
        if (a < nb) {
            out[6 * a + i] += (absolute ? fabs(G[i]) : G[i]) * mu;
            row += absolute ? fabs(C[i]) * fabs(u[6 * a + i]) : C[i] * u[6 * a + i];
        }
        if (b < nb) {
            out[6 * b + i] += (absolute ? fabs(G[6 + i]) : G[6 + i]) * mu;
            row += absolute ? fabs(C[6 + i]) * fabs(u[6 * b + i]) : C[6 + i] * u[6 * b + i];
        }
    }
    return row;
}

/* A u block by block (NewtonMatrix.multiply); with `absolute`, |A| |u| */
static void multiply(const symplex_maximal *M, const knot *k, const evaluation *ev, const workspace *w,
                     const double *u, int absolute, double *out)
{
    const int64_t nb = M->nbody;
#define A_(x) (absolute ? fabs(x) : (x))
    for (int64_t b = 0; b < nb; ++b)
        for (int i = 0; i < 6; ++i) {
            double s = 0.0;
            for (int l = 0; l < 6; ++l) s += A_(ev->D[36 * b + 6 * i + l]) * A_(u[6 * b + l]);
            out[6 * b + i] = s;
        }
    for (int64_t c = 0; c < M->ncoord_joint + M->nspring; ++c) {
        if (!ev->coupled[c]) continue;
        const int64_t a = M->coord_a[c], b = M->coord_b[c];
        for (int i = 0; i < 6; ++i)
            for (int l = 0; l < 6; ++l) {
                out[6 * a + i] += A_(ev->K[72 * c + 6 * i + l]) * A_(u[6 * b + l]);
                out[6 * b + i] += A_(ev->K[72 * c + 36 + 6 * i + l]) * A_(u[6 * a + l]);
            }
    }
    for (int64_t p = 0; p < w->nact; ++p) {
        const int64_t r = w->act[p], j = M->row_joint[r];
        out[6 * nb + p] = row_product(nb, M->parent[j], M->child[j], k->G + 12 * r, ev->C + 12 * r,
                                      A_(u[6 * nb + p]), u, absolute, out);
    }
    const symplex_maximal_pairs *P = w->P;
    const int64_t at = 6 * nb + w->nact;
    for (int64_t p = 0; p < w->np; ++p) {
        const double mu = A_(u[at + p]);
        out[at + p] = A_(-P->s[p] / P->lam[p]) * mu +
                      row_product(nb, P->a[p], P->b[p], P->G + 12 * p, ev->pC + 12 * p, mu, u, absolute, out);
    }
    for (int64_t e = 0; e < (P ? P->nentry : 0); ++e)
        out[at + P->e_row[e]] += A_(P->e_val[e]) * A_(u[at + P->e_col[e]]);
#undef A_
}

static void primary_solve(const symplex_maximal *M, workspace *w, int64_t ncol, double *x) /* x <- P^-1 x */
{
    symplex_fillin_solve(M->n_nodes, M->order, M->dim, M->diag_offset, M->upper_start, M->upper_node,
                         M->lower_offset, M->upper_offset, M->row_offset, w->flat, ncol, x, w->solve_scratch);
}

/* Auxiliary row i of the border (the active loop rows, then the pairs): its bodies and force and
 * velocity sides */
static void aux_row(const symplex_maximal *M, const knot *kn, const evaluation *ev, const workspace *w, int64_t i,
                    int64_t *a, int64_t *b, const double **G, const double **C)
{
    const int64_t loops = w->nact - M->n_primary;
    if (i < loops) {
        const int64_t r = w->act[M->n_primary + i], j = M->row_joint[r];
        *a = M->parent[j];
        *b = M->child[j];
        *G = kn->G + 12 * r;
        *C = ev->C + 12 * r;
        return;
    }
    i -= loops;
    *a = w->P->a[i];
    *b = w->P->b[i];
    *G = w->P->G + 12 * i;
    *C = ev->pC + 12 * i;
}

/* out (k, ncol) = C_aux y: the velocity side of the auxiliary rows on the body part of y (N0, ncol) */
static void aux_rows(const symplex_maximal *M, const knot *kn, const evaluation *ev, const workspace *w, const double *y,
                     int64_t ncol, double *out)
{
    const int64_t nb = M->nbody, k = w->nact - M->n_primary + w->np;
    for (int64_t i = 0; i < k; ++i) {
        int64_t a, b;
        const double *G, *C;
        aux_row(M, kn, ev, w, i, &a, &b, &G, &C);
        for (int64_t c = 0; c < ncol; ++c) {
            double s = 0.0;
            if (a < nb)
                for (int l = 0; l < 6; ++l) s += C[l] * y[ncol * (6 * a + l) + c];
            if (b < nb)
                for (int l = 0; l < 6; ++l) s += C[6 + l] * y[ncol * (6 * b + l) + c];
            out[ncol * i + c] = s;
        }
    }
}

/* In-place LU with partial pivoting (LAPACK getrf's choice: the largest |entry| of the column, first on
 * ties) of the n x n row-major A; pivot[i]: the row swapped with i. Returns 0, or 1 when singular. */
static int lu_factor(int64_t n, double *A, int64_t *pivot)
{
    for (int64_t c = 0; c < n; ++c) {
        int64_t p = c;
        for (int64_t r = c + 1; r < n; ++r)
            if (fabs(A[n * r + c]) > fabs(A[n * p + c])) p = r;
        pivot[c] = p;
        if (A[n * p + c] == 0.0) return 1;
        if (p != c)
            for (int64_t l = 0; l < n; ++l) {
                const double t = A[n * c + l];
                A[n * c + l] = A[n * p + l];
                A[n * p + l] = t;
            }
        for (int64_t r = c + 1; r < n; ++r) {
            const double f = A[n * r + c] /= A[n * c + c];
            for (int64_t l = c + 1; l < n; ++l) A[n * r + l] -= f * A[n * c + l];
        }
    }
    return 0;
}

static void lu_solve(int64_t n, const double *A, const int64_t *pivot, double *x)
{
    for (int64_t c = 0; c < n; ++c) {
        const double t = x[c];
        x[c] = x[pivot[c]];
        x[pivot[c]] = t;
    }
    for (int64_t r = 0; r < n; ++r)
        for (int64_t l = 0; l < r; ++l) x[r] -= A[n * r + l] * x[l];
    for (int64_t r = n - 1; r >= 0; --r) {
        for (int64_t l = r + 1; l < n; ++l) x[r] -= A[n * r + l] * x[l];
        x[r] /= A[n * r + r];
    }
}

/* The auxiliary rows bordered onto the factored P: Y = P^-1 [G_aux^T; 0] (k columns), the Schur
 * complement -C_aux Y (E = 0 on joint rows), equilibrated by rows then columns and LU-factored. */
static int border(const symplex_maximal *M, const knot *kn, const evaluation *ev, workspace *w)
{
    const int64_t nb = M->nbody, N0 = 6 * nb + M->n_primary, loops = w->nact - M->n_primary, k = loops + w->np;
    if (k == 0) return SYMPLEX_CONVERGED;
    memset(w->Y, 0, N0 * k * sizeof(double));
    for (int64_t i = 0; i < k; ++i) {
        int64_t a, b;
        const double *G, *C;
        aux_row(M, kn, ev, w, i, &a, &b, &G, &C);
        for (int l = 0; l < 6; ++l) {
            if (a < nb) w->Y[k * (6 * a + l) + i] += G[l];
            if (b < nb) w->Y[k * (6 * b + l) + i] += G[6 + l];
        }
    }
    primary_solve(M, w, k, w->Y);
    aux_rows(M, kn, ev, w, w->Y, k, w->schur);
    for (int64_t i = 0; i < k * k; ++i) w->schur[i] = 0.0 - w->schur[i];
    for (int64_t p = 0; p < w->np; ++p) /* E - C_aux Y on the pairs' block */
        w->schur[k * (loops + p) + loops + p] += -w->P->s[p] / w->P->lam[p];
    for (int64_t e = 0; e < (w->P ? w->P->nentry : 0); ++e)
        w->schur[k * (loops + w->P->e_row[e]) + loops + w->P->e_col[e]] += w->P->e_val[e];
    for (int64_t i = 0; i < k; ++i) {
        const double m = max_abs(k, w->schur + k * i);
        w->srow[i] = 1.0 / (m > 1e-300 ? m : 1e-300);
    }
    for (int64_t c = 0; c < k; ++c) {
        double m = 0.0;
        for (int64_t i = 0; i < k; ++i) {
            const double e = fabs(w->schur[k * i + c] * w->srow[i]);
            m = e > m ? e : m;
        }
        w->scol[c] = 1.0 / (m > 1e-300 ? m : 1e-300);
    }
    for (int64_t i = 0; i < k; ++i)
        for (int64_t c = 0; c < k; ++c) w->schur[k * i + c] *= w->srow[i] * w->scol[c];
    return lu_factor(k, w->schur, w->pivot) ? SYMPLEX_SINGULAR : SYMPLEX_CONVERGED;
}

/* Pb's entries in the order of symplex_maximal_sparse (values only: their rows, columns and places are the
 * pattern's) */
static void sparse_values(const symplex_maximal *M, const knot *kn, const evaluation *ev, const workspace *w,
                          double *v)
{
    const int64_t nb = M->nbody, k = w->nact - M->n_primary + w->np;
    int64_t e = 0;
    memcpy(v, ev->D, 36 * nb * sizeof(double));
    e = 36 * nb;
    for (int64_t i = -M->n_primary; i < k; ++i) { /* the primary rows, then aux_row's order */
        int64_t a, b;
        const double *G, *C;
        if (i < 0) {
            const int64_t r = w->act[M->n_primary + i], j = M->row_joint[r];
            a = M->parent[j];
            b = M->child[j];
            G = kn->G + 12 * r;
            C = ev->C + 12 * r;
        } else {
            aux_row(M, kn, ev, w, i, &a, &b, &G, &C);
        }
        if (a < nb) {
            memcpy(v + e, G, 6 * sizeof(double));
            memcpy(v + e + 6, C, 6 * sizeof(double));
            e += 12;
        }
        if (b < nb) {
            memcpy(v + e, G + 6, 6 * sizeof(double));
            memcpy(v + e + 6, C + 6, 6 * sizeof(double));
            e += 12;
        }
    }
    for (int64_t p = 0; p < w->np; ++p) v[e++] = -w->P->s[p] / w->P->lam[p];
    for (int64_t i = 0; i < (w->P ? w->P->nentry : 0); ++i) v[e++] = w->P->e_val[i];
}

/* The block LU of the equilibrated Pb (linear.LinearSolver._factor_sparse, _factor_block); SYMPLEX_SINGULAR
 * on an exactly zero or non-finite pivot. */
static int sparse_factor(const symplex_maximal *M, const knot *kn, const evaluation *ev, workspace *w)
{
    const symplex_maximal_sparse *S = w->S;
    const int64_t N = 6 * M->nbody + w->nact + w->np;
    double *v = S->values, growth = 0.0;
    sparse_values(M, kn, ev, w, v);
    for (int64_t i = 0; i < N; ++i) S->srow[i] = S->scol[i] = 0.0;
    for (int64_t e = 0; e < S->nentry; ++e)
        if (fabs(v[e]) > S->srow[S->entry_row[e]]) S->srow[S->entry_row[e]] = fabs(v[e]);
    for (int64_t i = 0; i < N; ++i) S->srow[i] = 1.0 / (S->srow[i] > 1e-300 ? S->srow[i] : 1e-300);
    for (int64_t e = 0; e < S->nentry; ++e) {
        v[e] *= S->srow[S->entry_row[e]];
        if (fabs(v[e]) > S->scol[S->entry_col[e]]) S->scol[S->entry_col[e]] = fabs(v[e]);
    }
    for (int64_t i = 0; i < N; ++i) S->scol[i] = 1.0 / (S->scol[i] > 1e-300 ? S->scol[i] : 1e-300);
    memset(S->flat, 0, S->flat_size * sizeof(double));
    for (int64_t e = 0; e < S->nentry; ++e) S->flat[S->target[e]] += v[e] * S->scol[S->entry_col[e]];
    const int64_t status = symplex_block_lu_factor(S->n_nodes, S->order, S->dim, S->diag_offset, S->row_offset,
                                                   S->upper_start, S->upper_node, S->lower_offset, S->upper_offset,
                                                   S->pair_start, S->pair_offset, S->flat, S->piv, &growth);
    return status == -1 ? SYMPLEX_CONVERGED : SYMPLEX_SINGULAR;
}

/* x <- Pb^-1 x with the block LU: col * solve(row * x), unknowns stacked node by node (contact_ldu.solve) */
static void sparse_precondition(const symplex_maximal *M, const workspace *w, double *x)
{
    const symplex_maximal_sparse *S = w->S;
    const int64_t N = 6 * M->nbody + w->nact + w->np;
    for (int64_t i = 0; i < N; ++i) S->x[i] = S->srow[S->perm[i]] * x[S->perm[i]];
    symplex_block_lu_solve(S->n_nodes, S->order, S->dim, S->diag_offset, S->row_offset, S->upper_start,
                           S->upper_node, S->lower_offset, S->upper_offset, S->flat, S->piv, 1, S->x);
    for (int64_t i = 0; i < N; ++i) x[S->perm[i]] = S->scol[S->perm[i]] * S->x[i];
}

/* Factor P = [[D, G^T], [C, 0]] on the fill-in plan (linear.LinearSolver._factor_primary), the auxiliary rows
 * bordered densely; or the whole Pb by the block LU when the caller gave its pattern */
static int factor(const symplex_maximal *M, const knot *k, const evaluation *ev, workspace *w)
{
    const int64_t nb = M->nbody, R = M->n_primary;
    if (w->S) return sparse_factor(M, k, ev, w);
    memset(w->flat, 0, M->flat_size * sizeof(double));
    for (int64_t b = 0; b < nb; ++b) memcpy(w->flat + M->diag_offset[b], ev->D + 36 * b, 36 * sizeof(double));
    for (int64_t r = 0; r < R; ++r) /* [Ga; Gb; Ca; Cb] (4R, 6) */
        for (int i = 0; i < 6; ++i) {
            w->blocks[6 * r + i] = k->G[12 * r + i];
            w->blocks[6 * (R + r) + i] = k->G[12 * r + 6 + i];
            w->blocks[6 * (2 * R + r) + i] = ev->C[12 * r + i];
            w->blocks[6 * (3 * R + r) + i] = ev->C[12 * r + 6 + i];
        }
    for (int64_t g = 0; g < M->n_gather; ++g) w->flat[M->gather_dst[g]] = w->blocks[M->gather_src[g]];
    const int64_t status = symplex_fillin_factor(M->n_nodes, M->order, M->dim, M->diag_offset, M->upper_start,
                                                 M->upper_node, M->lower_offset, M->upper_offset, M->pair_start,
                                                 M->pair_offset, w->flat, w->fill);
    if (status != -1) return SYMPLEX_SINGULAR;
    return border(M, k, ev, w);
}

/* Pb^-1 x in place: P^-1 on the primary part, the auxiliary multipliers from the Schur complement
 * (linear.LinearSolver.precondition) */
static void precondition(const symplex_maximal *M, const knot *kn, const evaluation *ev, workspace *w, double *x)
{
    const int64_t N0 = 6 * M->nbody + M->n_primary, k = w->nact - M->n_primary + w->np;
    if (w->S) {
        sparse_precondition(M, w, x);
        return;
    }
    primary_solve(M, w, 1, x);
    if (k == 0) return;
    aux_rows(M, kn, ev, w, x, 1, w->mu);
    for (int64_t i = 0; i < k; ++i) w->mu[i] = w->srow[i] * (x[N0 + i] - w->mu[i]);
    lu_solve(k, w->schur, w->pivot, w->mu);
    for (int64_t i = 0; i < k; ++i) w->mu[i] *= w->scol[i];
    for (int64_t n = 0; n < N0; ++n) {
        double s = 0.0;
        for (int64_t i = 0; i < k; ++i) s += w->Y[k * n + i] * w->mu[i];
        x[n] -= s;
    }
    memcpy(x + N0, w->mu, k * sizeof(double));
}

/* LinearSolver.solve: u = P^-1 rhs, exact when A = P (no body-body damper blocks); otherwise defect
 * correction u <- u + P^-1 (rhs - A u) while it contracts, to rtol 1e-8 or rounding (ROUNDING 1e-13),
 * handing over (SYMPLEX_NEEDS_GMRES) where the numpy solver would call GMRES. */
static int solve(const symplex_maximal *M, const knot *k, const evaluation *ev, workspace *w, double *sweeps)
{
    const int64_t N = 6 * M->nbody + w->nact + w->np;
    const double rtol = 1e-8, slow_sweep = 0.2, rounding = 1e-13;
    memcpy(w->u, w->rhs, N * sizeof(double));
    precondition(M, k, ev, w, w->u);
    if (w->nact == M->n_primary && w->np == 0 && !any_coupling(M, ev)) {
        memcpy(w->du, w->u, N * sizeof(double));
        *sweeps = 1;
        return SYMPLEX_CONVERGED;
    }
    double scale = max_abs(N, w->rhs), best = INFINITY, noise = 0.0;
    scale = scale > 1e-300 ? scale : 1e-300;
    memcpy(w->best_u, w->u, N * sizeof(double));
    int sweep = 0;
    for (; sweep < 40; ++sweep) {
        multiply(M, k, ev, w, w->u, 0, w->tmp);
        for (int64_t i = 0; i < N; ++i) w->defect[i] = w->rhs[i] - w->tmp[i];
        const double size = max_abs(N, w->defect);
        if (size >= best) break;
        const int slow = size > slow_sweep * best;
        best = size;
        memcpy(w->best_u, w->u, N * sizeof(double));
        if (size <= rtol * scale) break;
        multiply(M, k, ev, w, w->u, 1, w->tmp);
        noise = rounding * max_abs(N, w->tmp);
        if (slow || size <= noise) break;
        precondition(M, k, ev, w, w->defect);
        for (int64_t i = 0; i < N; ++i) w->u[i] += w->defect[i];
    }
    *sweeps = sweep < 40 ? sweep + 1 : 40;
    memcpy(w->du, w->best_u, N * sizeof(double));
    if (best / scale > rtol && best > noise) return SYMPLEX_NEEDS_GMRES;
    return SYMPLEX_CONVERGED;
}

/* variational._remaining_error */
static double remaining_error(double change, double previous_change, int full_newton_step)
{
    const double theta = previous_change > 0.0 && previous_change < INFINITY ? change / previous_change : INFINITY;
    if (full_newton_step && theta < 0.5) return theta / (1.0 - theta) * change;
    return change;
}

/* ---------------------------------------------------------------- the interior point (interior_point.py) */

enum { MU, COLD, MONOTONE, MU_FIXED, RESTARTS, COLD_MU_ };
#define COMPLEMENTARITY 1e-8
#define MU_FLOOR (0.1 * COMPLEMENTARITY)
#define NEIGHBOURHOOD 1e-3
#define TAU_MAX (1.0 - 1e-8)
#define STALL_STEPS 8

/* np.sum of a contiguous float64 array: the first element plus numpy's pairwise sum of the rest (eight
 * accumulators, blocks of 128 halved recursively), so that means agree with numpy's bit for bit */
static double pairwise(const double *a, int64_t n)
{
    if (n < 8) {
        double r = 0.0;
        for (int64_t i = 0; i < n; ++i) r += a[i];
        return r;
    }
    if (n <= 128) {
        double r[8], res;
        int64_t i;
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise(a, n2) + pairwise(a + n2, n - n2);
}

static double mean(const double *a, int64_t n) { return (a[0] + pairwise(a + 1, n - 1)) / (double)n; }

/* mean of (lam + alpha dlam)(s + alpha ds) over the pairs (alpha 0: lam s), products kept in w->ls */
static double mean_product(workspace *w, double alpha, const double *dlam, const double *ds)
{
    const symplex_maximal_pairs *P = w->P;
    for (int64_t p = 0; p < w->np; ++p)
        w->ls[p] = alpha == 0.0 ? P->lam[p] * P->s[p] : (P->lam[p] + alpha * dlam[p]) * (P->s[p] + alpha * ds[p]);
    return mean(w->ls, w->np);
}

static void slack_step(const workspace *w, const double *dlam, const double *target, double *ds) /* _slack_step */
{
    const symplex_maximal_pairs *P = w->P;
    for (int64_t p = 0; p < w->np; ++p) ds[p] = ((target ? target[p] : 0.0) - P->s[p] * dlam[p]) / P->lam[p] - P->s[p];
}

static double boundary(const workspace *w, const double *dlam, const double *ds, double tau) /* _boundary */
{
    double alpha = 1.0;
    for (int side = 0; side < 2; ++side) {
        const double *value = side ? w->P->s : w->P->lam, *change = side ? ds : dlam;
        double m = INFINITY;
        for (int64_t p = 0; p < w->np; ++p)
            if (change[p] < 0) m = fmin(m, -value[p] / change[p]);
        if (m < INFINITY) alpha = fmin(alpha, tau * m);
    }
    return alpha;
}

/* corrector_target: w->target from the affine direction dlam_aff */
static void corrector_target(workspace *w, const double *dlam_aff)
{
    const symplex_maximal_pairs *P = w->P;
    double *ctrl = P->control;
    if (ctrl[MONOTONE] != 0.0) {
        double worst = 0.0;
        for (int64_t p = 0; p < w->np; ++p) worst = fmax(worst, fabs(P->lam[p] * P->s[p] - ctrl[MU_FIXED]));
        if (worst <= 0.5 * ctrl[MU_FIXED]) ctrl[MU_FIXED] = fmax(MU_FLOOR, 0.2 * ctrl[MU_FIXED]);
        for (int64_t p = 0; p < w->np; ++p) w->target[p] = ctrl[MU_FIXED];
        return;
    }
    slack_step(w, dlam_aff, NULL, w->ds);
    const double alpha = boundary(w, dlam_aff, w->ds, 1.0);
    const double mu = mean_product(w, 0.0, NULL, NULL), mu_aff = mean_product(w, alpha, dlam_aff, w->ds);
    const double sigma = mu > 0 ? fmin(1.0, pow(mu_aff / mu, 3.0)) : 0.0;
    const double floor = sigma * mu >= MU_FLOOR ? sigma * mu : MU_FLOOR;
    for (int64_t p = 0; p < w->np; ++p) w->target[p] = floor - dlam_aff[p] * w->ds[p];
}

/* step_length: fraction to the boundary, then halved into the wide neighbourhood; ds into w->ds */
static double step_length(workspace *w, const double *dlam)
{
    if (w->np == 0) return 1.0;
    slack_step(w, dlam, w->target, w->ds);
    const double tau = fmin(fmax(0.99, 1.0 - w->P->control[MU]), TAU_MAX);
    double alpha = boundary(w, dlam, w->ds, tau);
    for (int i = 0; i < 30; ++i) {
        const double m = mean_product(w, alpha, dlam, w->ds);
        double least = INFINITY;
        for (int64_t p = 0; p < w->np; ++p) least = fmin(least, w->ls[p]);
        if (least >= NEIGHBOURHOOD * m) break;
        alpha *= 0.5;
    }
    return alpha;
}

static void ip_update(workspace *w, double alpha, const double *dlam) /* update */
{
    const symplex_maximal_pairs *P = w->P;
    if (w->np == 0) return;
    for (int64_t p = 0; p < w->np; ++p) {
        P->lam[p] = fmax(P->lam[p] + alpha * dlam[p], 1e-300);
        P->s[p] = fmax(P->s[p] + alpha * w->ds[p], 1e-300);
    }
    P->control[MU] = mean_product(w, 0.0, NULL, NULL);
}

static void ip_start(workspace *w, int cold) /* _start on P->lam, P->s */
{
    double *ctrl = w->P->control;
    ctrl[COLD] = cold;
    ctrl[MU] = w->np ? mean_product(w, 0.0, NULL, NULL) : 0.0;
    ctrl[MONOTONE] = 0.0;
}

static int ip_restart(workspace *w) /* restart */
{
    const symplex_maximal_pairs *P = w->P;
    double *ctrl = P->control;
    if (ctrl[RESTARTS] >= 3) return 0;
    ctrl[RESTARTS] += 1;
    if (ctrl[COLD] != 0.0) {
        for (int64_t p = 0; p < w->np; ++p) {
            P->lam[p] = fmax(P->lam[p], 1e-2);
            P->s[p] = fmax(P->s[p], 1e-2);
        }
        ip_start(w, 1);
        ctrl[MONOTONE] = 1.0;
        ctrl[MU_FIXED] = ctrl[MU];
    } else {
        for (int64_t p = 0; p < w->np; ++p) {
            P->s[p] = P->s_cold[p];
            P->lam[p] = ctrl[COLD_MU_] / P->s_cold[p];
        }
        ip_start(w, 1);
    }
    return 1;
}

static int ip_converged(const workspace *w, const evaluation *ev, double tol) /* converged */
{
    const symplex_maximal_pairs *P = w->P;
    double worst = 0.0;
    for (int64_t p = 0; p < w->np; ++p)
        if (P->lam[p] * P->s[p] > COMPLEMENTARITY) return 0;
    for (int64_t p = 0; p < w->np; ++p) worst = fmax(worst, P->weight[p] * fabs(ev->h[p] - P->s[p]));
    return worst <= tol;
}

/* ---------------------------------------------------------------- the step */

int64_t symplex_maximal_step(const symplex_maximal *M, const symplex_maximal_state *S, double dt, double tol,
                             int64_t max_iterations, int64_t halvings, const symplex_maximal_outputs *out)
{
    double *V = out->V, *acceleration = out->acceleration, *poses = out->poses, *lam = out->lam, *x2 = out->x2,
           *q2 = out->q2, *row_val2 = out->row_val2, *row_winding2 = out->row_winding2,
           *coord_winding2 = out->coord_winding2, *cval2 = out->cval2, *rate = out->rate, *cjac2 = out->cjac2,
           *sweeps = out->sweeps, *stats = out->stats, *scratch = out->scratch;
    const int64_t nb = M->nbody, R = M->nrow, nc = M->ncoord_joint + M->nspring;
    const symplex_maximal_pairs *P = S->pairs;
    workspace w;
    carve(M, P ? P->npair : 0, S->sparse == NULL, scratch, &w);
    w.P = P;
    w.S = S->sparse;
    w.np = P ? P->npair : 0;
    w.nact = 0;
    for (int64_t r = 0; r < R; ++r)
        if (r < M->n_primary || S->active[r]) w.act[w.nact++] = r;
    const int64_t N = 6 * nb + w.nact + w.np, at = 6 * nb + w.nact;
    knot_terms(M, S, &w.k);
    for (int64_t b = 0; b < nb; ++b)
        for (int i = 0; i < 3; ++i) {
            V[6 * b + i] = S->v[3 * b + i] + (S->acceleration ? S->acceleration[6 * b + i] : 0.0);
            V[6 * b + 3 + i] = S->w[3 * b + i] + (S->acceleration ? S->acceleration[6 * b + 3 + i] : 0.0);
        }
    memcpy(lam, S->lam, R * sizeof(double));
    evaluation *ev = w.ev, *trial = w.ev + 1;
    int status = evaluate(M, S, &w.k, &w, V, lam, dt, ev);
    if (status != SYMPLEX_CONVERGED) return status;
    double error = INFINITY, previous_change = INFINITY;
    int64_t iteration = 1, short_steps = 0;
    int converged = 0, chord = 0; /* chord: the next solve reuses the first factorisation (variational._newton) */
    /* variational._newton's direct case: P factored exactly (no pairs, no bordered rows, no damper coupling) */
    const int direct = !P && w.nact == M->n_primary && !any_coupling(M, ev);
    for (; iteration <= max_iterations; ++iteration) {
        if (max_gap(&w, ev) * dt <= tol && error <= tol && (!P || ip_converged(&w, ev, tol))) {
            converged = 1;
            break;
        }
        if (!chord && (status = factor(M, &w.k, ev, &w)) != SYMPLEX_CONVERGED) return status;
        for (int64_t i = 0; i < 6 * nb; ++i) w.rhs[i] = -ev->r[i];
        for (int64_t p = 0; p < w.nact; ++p) w.rhs[6 * nb + p] = -ev->row_res[w.act[p]];
        for (int64_t p = 0; p < w.np; ++p) w.rhs[at + p] = ev->h[p]; /* the affine direction: target 0 */
        if ((status = solve(M, &w.k, ev, &w, sweeps + iteration - 1)) != SYMPLEX_CONVERGED) return status;
        for (int64_t i = 0; i < N; ++i)
            if (!isfinite(w.du[i])) return SYMPLEX_NOT_FINITE;
        if (w.np) { /* Mehrotra's corrector with the same factorisation */
            corrector_target(&w, w.du + at);
            for (int64_t p = 0; p < w.np; ++p) w.rhs[at + p] = ev->h[p] - w.target[p] / P->lam[p];
            if ((status = solve(M, &w.k, ev, &w, sweeps + iteration - 1)) != SYMPLEX_CONVERGED) return status;
            for (int64_t i = 0; i < N; ++i)
                if (!isfinite(w.du[i])) return SYMPLEX_NOT_FINITE;
        }
        const double *dV = w.du, *dmu = w.du + 6 * nb;
        double alpha = P ? step_length(&w, w.du + at) : 1.0, spin = 0.0;
        for (int64_t b = 0; b < nb; ++b) { /* keep |omega| dt <= 1 */
            double o[3];
            for (int i = 0; i < 3; ++i) o[i] = V[6 * b + 3 + i] + alpha * dV[6 * b + 3 + i];
            const double s = sqrt(dot3(o, o));
            spin = s > spin ? s : spin;
        }
        spin *= dt;
        if (spin > 1.0) alpha *= 1.0 / spin;
        if (P) { /* the interior point's step: no line search (the fraction to the boundary shortens it) */
            double change = 0.0;
            for (int64_t i = 0; i < 6 * nb; ++i) {
                V[i] = V[i] + alpha * dV[i];
                change = fabs(alpha * dV[i]) > change ? fabs(alpha * dV[i]) : change;
            }
            for (int64_t p = 0; p < w.nact; ++p) lam[w.act[p]] -= alpha * dmu[p];
            ip_update(&w, alpha, w.du + at);
            short_steps = alpha < 0.05 ? short_steps + 1 : 0;
            if (short_steps >= STALL_STEPS && ip_restart(&w)) short_steps = 0;
            if ((status = evaluate(M, S, &w.k, &w, V, lam, dt, ev)) != SYMPLEX_CONVERGED) return status;
            error = change * dt; /* _remaining_error of a damped step: its length */
            previous_change = error;
            continue;
        }
        /* halving line search on |r| (variational._newton: after the last halving the step is taken at the
         * halved length, with the multipliers and evaluation of the last trial) */
        const double m0 = merit(M, &w, ev);
        for (int64_t h = 0; h < halvings; ++h) {
            memcpy(w.trial_lam, lam, R * sizeof(double));
            for (int64_t p = 0; p < w.nact; ++p) w.trial_lam[w.act[p]] -= alpha * dmu[p];
            for (int64_t i = 0; i < 6 * nb; ++i) w.trial_V[i] = V[i] + alpha * dV[i];
            if ((status = evaluate(M, S, &w.k, &w, w.trial_V, w.trial_lam, dt, trial)) != SYMPLEX_CONVERGED)
                return status;
            if (merit(M, &w, trial) <= (1.0 - 1e-4 * alpha) * m0) break;
            alpha *= 0.5;
        }
        double change = 0.0;
        for (int64_t i = 0; i < 6 * nb; ++i) {
            V[i] += alpha * dV[i];
            change = fabs(alpha * dV[i]) > change ? fabs(alpha * dV[i]) : change;
        }
        memcpy(lam, w.trial_lam, R * sizeof(double));
        evaluation *swap = ev;
        ev = trial;
        trial = swap;
        change *= dt;
        error = remaining_error(change, previous_change, alpha == 1.0);
        chord = direct && alpha == 1.0 && iteration == 1;
        previous_change = change;
    }
    if (!converged) return SYMPLEX_NOT_CONVERGED;
    /* the z_2 quantities, energy T(zdot_1) + (V(z_1) + V(z_2))/2 and max |g| */
    memcpy(x2, ev->x2, 3 * nb * sizeof(double));
    memcpy(q2, ev->q2, 4 * nb * sizeof(double));
    memcpy(row_val2, ev->raw2, R * sizeof(double));
    memcpy(row_winding2, ev->wind2, R * sizeof(double));
    for (int64_t c = 0; c < M->ncoord_joint; ++c) coord_winding2[c] = S->coord_winding[c] + ev->turns[c];
    memcpy(cval2, ev->cval2, nc * sizeof(double));
    memcpy(rate, ev->rate, nc * sizeof(double));
    memcpy(cjac2, ev->cjac2, 12 * nc * sizeof(double));
    double kinetic = 0.0, potential2 = 0.0, spring = 0.0, residual = 0.0;
    for (int64_t b = 0; b < nb; ++b) {
        const double *v = V + 6 * b, *om = v + 3;
        double Jw[3], R[9], offset[3];
        for (int i = 0; i < 3; ++i) {
            acceleration[6 * b + i] = v[i] - S->v[3 * b + i];
            acceleration[6 * b + 3 + i] = om[i] - S->w[3 * b + i];
        }
        symplex_quat_to_matrix(q2 + 4 * b, R);
        mat3_vec(R, M->com + 3 * b, offset);
        for (int i = 0; i < 3; ++i) poses[7 * b + i] = x2[3 * b + i] - offset[i];
        memcpy(poses + 7 * b + 3, q2 + 4 * b, 4 * sizeof(double));
        mat3_vec(M->inertia + 9 * b, om, Jw);
        kinetic += M->mass[b] * dot3(v, v) + dot3(om, Jw);
        potential2 -= M->mass[b] * dot3(M->gravity, x2 + 3 * b);
    }
    for (int64_t c = 0; c < nc; ++c) spring += M->stiffness[c] * (cval2[c] - M->rest[c]) * (cval2[c] - M->rest[c]);
    for (int64_t r = 0; r < R; ++r) {
        const double gap = fabs(row_val2[r] - S->targets[r]);
        residual = gap > residual ? gap : residual;
    }
    stats[0] = (double)(iteration - 1);
    stats[1] = residual;
    stats[2] = 0.5 * kinetic + 0.5 * (w.k.potential + potential2 + 0.5 * spring);
    stats[3] = (double)(iteration - 1);
    return SYMPLEX_CONVERGED;
}

/* One midpoint variational integrator step on a tree model: kinematics, Lagrangian terms and their
 * derivatives, loop rows, the Newton loop and its O(n) direction (symplex_kernels.h); on models with a ball joint
 * (tree->linkwise) the link-wise discrete Lagrangian's rows and tree-form matrix instead. The numpy twin and
 * reference is addon/solver/tree/midpoint.py with dynamics.py (formulas in its docstring), linkwise.py,
 * kinematics.py, constraints.py and articulated.py; the quantities and their names follow those modules.
 *
 * Twists and wrenches are 6-vectors (angular, linear) in world coordinates. Frame index -1 is the
 * world and maps to slot nq of the per-frame arrays (identity pose, zero twist). Subtree sums run
 * leaves to root (dof_parent[f] < f); the Newton matrix is never formed: its tree form is eliminated
 * leaves to root and solved root to leaves in O(nq), loop rows through a Schur complement. A spatial inertia is kept
 * as 13 numbers: mass m, first moment m c (3), rotational inertia about the world origin (3x3). */
#include "tree_common.h"

#define LINKWISE_ROUNDOFF_STEP 1e-13 /* rad: tree/linkwise.py ROUNDOFF_STEP */

int64_t symplex_tree_struct_size(void) { return (int64_t)sizeof(symplex_tree); }

/* Scratch of one step, carved from the caller's buffer (or only counted when base is NULL). */
typedef struct {
    double *world, *S;      /* (nq+1, 16), (nq+1, 6) at the midpoint */
    double *world2, *S2;    /* the same at q1 (once), then at the step's end (q2; C1 exp(xi) on a chart) */
    double *V;              /* (nq+1, 6) frame velocities at the midpoint */
    double *Sdot;           /* (nq, 6) ad(V_parent) S */
    double *Ic;             /* (nq, INERTIA) frame inertias, then subtree (composite) inertias */
    double *H, *W, *K;      /* (nq, 6) subtree momenta, (nq, 6) subtree wrenches, (nq, 9) sum c F^T */
    double *qm, *v, *p, *g, *Q, *fc; /* (nq,) */
    double *U, *x, *R, *Yc, *d; /* (nq, 12) x 2, (nq, 18) x 2, (nq,): J11 in tree form */
    double *blocks;         /* (nq, 9): the first nball hold each ball node's block */
    double *JL, *JLh;       /* (nq, 9): the first nball hold J_L(xi) and J_L(xi / 2) of each chart's step */
    double *turn_m, *turn_e; /* (nq, 9): the first nball hold exp(xi / 2) and exp(xi) (tree/step_charts.py) */
    double *D2;             /* (nq, 3): the first nball hold each chart's next momentum before forcing */
    double *spring;         /* (nq, 12): the first nball hold each chart spring at the midpoint (theta (3),
                               J_r^-1(theta) (9), tree/ball_springs.py chart_springs at angle 0) */
    double *qe;             /* (nq,) the coordinates of the step's end pose: q2, 0 on the charts */
    double *Obar, *X, *c, *Dinv; /* (nq, h, nc) packed (factor), (nq, 12), (nq, 18), (nq, 3): the factor, by node member */
    double *obar, *zc, *xi; /* (nq, 18), (nq, 12), (nq,): solve scratch */
    double *delta;          /* (nq,) Newton step of q2 */
    double *Dh1, *Dh2, *Y;  /* (nrow, nq) selected rows at q1 and at the end (chart columns times J_R(xi));
                               J11^-1 G1^T by row */
    double *schur, *dlam;   /* (nrow, nrow), (nrow,) Schur system of the loop rows */
    double *f;              /* (nq+nrow,) Newton residual */
    /* the link-wise rows (tree/linkwise.py) */
    double *world1, *S1;    /* (nq+1, 16), (nq+1, 6) at q1 */
    double *E, *dx;         /* (nq+1, 9), (nq+1, 3) each frame's R1^T R2 - I and origin displacement over the step */
    double *w1, *w2, *Dc;   /* (nq, 6), (nq, 6), (nq, 36) subtree sums of the links' end wrenches and end blocks */
    double *Q1, *F, *Sp;    /* (nq,) Q at q1, (nq,) the rows before loop impulses, (nq, 6) the columns' end twists */
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
    w->JLh = take(base, &at, 9 * nq);
    w->turn_m = take(base, &at, 9 * nq);
    w->turn_e = take(base, &at, 9 * nq);
    w->D2 = take(base, &at, 3 * nq);
    w->spring = take(base, &at, 12 * nq);
    w->qe = take(base, &at, nq);
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
    w->world1 = take(base, &at, 16 * (nq + 1));
    w->S1 = take(base, &at, 6 * (nq + 1));
    w->E = take(base, &at, 9 * (nq + 1));
    w->dx = take(base, &at, 3 * (nq + 1));
    w->w1 = take(base, &at, 6 * nq);
    w->w2 = take(base, &at, 6 * nq);
    w->Dc = take(base, &at, 36 * nq);
    w->Q1 = take(base, &at, nq);
    w->F = take(base, &at, nq);
    w->Sp = take(base, &at, 6 * nq);
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

/* The step's charts of every ball from the chart coordinates of q2, xi (tree/step_charts.py step_charts):
 * w->JL = J_L(xi), w->JLh = J_L(xi / 2), w->turn_m = exp(xi / 2), w->turn_e = exp(xi). */
static void step_charts(const symplex_tree *tree, const double *q2, workspace *w)
{
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b;
        const double xi[3] = {q2[k[0]], q2[k[1]], q2[k[2]]}, half[3] = {0.5 * xi[0], 0.5 * xi[1], 0.5 * xi[2]};
        left_jacobian(xi, w->JL + 9 * b);
        left_jacobian(half, w->JLh + 9 * b);
        so3_exp(half, w->turn_m + 9 * b);
        so3_exp(xi, w->turn_e + 9 * b);
    }
}

/* First-order terms at the midpoint (dynamics.terms with second=False), from w->world and w->S, the ball charts
 * turned by turn (nball, 3, 3; NULL: not turned) as in forward_kinematics.
 * outputs: w->p, w->g, w->Q (nq,), *energy = kinetic + potential; keeps w->V, w->Sdot, w->Ic (composite),
 *          w->H, w->W, w->K for the second derivatives.
 * inputs:  tree, force_vector (nforce, 3), w->qm, w->v. */
static void first_order_terms(const symplex_tree *tree, const double *force_vector, const double *turn, workspace *w,
                              double *energy)
{
    double potential, kinetic;
    tree_terms(tree, force_vector, w->world, w->S, w->qm, w->v, w->V, w->Sdot, w->Ic, w->H, w->W, w->K, w->p, w->g,
               w->Q, &kinetic, &potential);
    for (int64_t b = 0; b < tree->nball; ++b) {  /* ball and free rotations: Q = -k theta at angle 0 in Cm */
        const double k = tree->ball_stiffness[b];
        if (k == 0.0) continue;
        const int64_t *dof = tree->ball_dofs + 3 * b;
        double *sp = w->spring + 12 * b;
        chart_spring(tree, b, turn ? turn + 9 * b : NULL, sp);
        for (int i = 0; i < 3; ++i) w->Q[dof[i]] -= k * sp[i];
        potential += 0.5 * k * dot3(sp, sp);
    }
    *energy = 0.5 * kinetic + potential;
}

/* J11 = dt/4 (B + Q_q) + (A^T - A)/2 - M/dt - diag(damping + gain)/2 in tree form (tree/articulated.py):
 * J11[a][b] = U_b . x_a for b above a's node, J11[a][c] = R_a . Yc_c for c below it, zero between branches,
 * with U_a = (Sdot_a, S_a), R_a = (U_a, 0), Yc_a = (y_a, G_a + 2 Ic S_a / dt):
 *   x_a = (dt/4 G - Ic S/2, dt/4 X + G/2 - Ic S/dt),  y_a = (dt/4 G + Ic S/2, dt/4 X - G/2 - Ic S/dt),
 *   d_a = dt/4 (Sdot . G + S . X - k) - S . Ic S/dt - (damping + gain)/2
 * (ball_rows then replaces the ball coordinates' U, x, R, Yc and sets their nodes' blocks).
 * outputs: w->U, w->x, w->R, w->Yc, w->d; inputs: the first-order terms in w. O(nq). */
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
}

/* (y, t) = column_vectors of an axis with axis_terms (IcS, G, X) (tree/articulated.py column_vectors) */
static void column_vectors(const double *IcS, const double *G, const double *X, double dt, double *Yc)
{
    for (int r = 0; r < 6; ++r) {
        Yc[r] = 0.25 * dt * G[r] + 0.5 * IcS[r];
        Yc[6 + r] = 0.25 * dt * X[r] - 0.5 * G[r] - IcS[r] / dt;
        Yc[12 + r] = G[r] + 2.0 * IcS[r] / dt;
    }
}

/* The Lie group rows of every ball chart in its step's rotation vector xi (tree/lie_rows.py, formulas in its
 * docstring), at the midpoint terms in w (primitives at angle 0 in C1 exp(xi / 2), E_i = w->S of the chart's
 * coordinates) and the step's charts (step_charts).
 * outputs: F (nq,) residual by coordinate (written at the chart coordinates only); w->D2 (nball, 3) the next
 *          momenta before forcing; returns max over charts of |F| / scale (the chart residual);
 *          with jacobian != 0 also w->U, w->Yc, w->x, w->R of the chart coordinates and w->blocks
 *          (tree_jacobian first).
 * inputs:  q2 (nq,) the iterate (xi at the chart coordinates); pbar (nq,) = p1 + dt/2 f_c - Dh1^T lam by
 *          coordinate (read at the chart coordinates). */
static double ball_rows(const symplex_tree *tree, double dt, workspace *w, const double *q2, const double *pbar,
                        double *F, int jacobian)
{
    const int64_t nq = tree->nq;
    double residual = 0.0;
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b, base = k[0];
        const int64_t P = tree->dof_parent[base] < 0 ? nq : tree->dof_parent[base];
        const double *VP = w->V + 6 * P, *H = w->H + 6 * base, *Wb = w->W + 6 * base, *Ic = w->Ic + INERTIA * base;
        const double *K = w->K + 9 * base, *JL = w->JL + 9 * b, *JLh = w->JLh + 9 * b;
        const double xi[3] = {q2[k[0]], q2[k[1]], q2[k[2]]}, ks = tree->ball_stiffness[b];
        double gamma_dyn[3], gamma[3], eta[3], pb[3], rhs[3], t6[6];
        double scale = 1.0;
        for (int i = 0; i < 3; ++i) {  /* gamma_i = ad(V_P) E_i . H + E_i . W + spring torque */
            const double *E = w->S + 6 * k[i];
            ad_twist(VP, E, t6);
            gamma_dyn[i] = dot6(t6, H) + dot6(E, Wb);
            gamma[i] = gamma_dyn[i] - (ks != 0.0 ? ks * w->spring[12 * b + i] : 0.0);  /* spring: -k theta */
            eta[i] = w->p[k[i]];
            pb[i] = pbar[k[i]];
        }
        /* F = J_L^T pbar + dt/2 J_L(xi/2)^T gamma - eta, D2 = J_L^-1 (dt/2 J_L(xi/2) gamma + eta) */
        for (int i = 0; i < 3; ++i) {
            F[k[i]] = JL[i] * pb[0] + JL[3 + i] * pb[1] + JL[6 + i] * pb[2]
                      + 0.5 * dt * (JLh[i] * gamma[0] + JLh[3 + i] * gamma[1] + JLh[6 + i] * gamma[2]) - eta[i];
            rhs[i] = 0.5 * dt * dot3(JLh + 3 * i, gamma) + eta[i];
            scale = fmax(scale, fmax(fabs(pb[i]), fmax(0.5 * dt * fabs(gamma[i]), fabs(eta[i]))));
        }
        solve3(JL, rhs, w->D2 + 3 * b);
        for (int i = 0; i < 3; ++i) residual = fmax(residual, fabs(F[k[i]]) / scale);
        if (!jacobian) continue;

        /* columns: S'_j = sum_m J_L(xi/2)[j][m] E_m, U_j = (Sdot'_j, S'_j), Yc_j = column_vectors(S'_j) */
        double IcS[6], G[6], X[6];
        for (int j = 0; j < 3; ++j) {
            double *U = w->U + 12 * k[j], *Sp = U + 6, *Spdot = U;
            for (int r = 0; r < 6; ++r) Sp[r] = JLh[3 * j] * w->S[6 * k[0] + r] + JLh[3 * j + 1] * w->S[6 * k[1] + r]
                                                + JLh[3 * j + 2] * w->S[6 * k[2] + r];
            ad_twist(VP, Sp, Spdot);
            for (int r = 0; r < 6; ++r) Spdot[r] += 2.0 * (w->S[6 * k[j] + r] - Sp[r]) / dt;
            axis_terms(Ic, H, Wb, K, Sp, Spdot, IcS, G, X);
            column_vectors(IcS, G, X, dt, w->Yc + 18 * k[j]);
        }
        /* rows: Ehat_i = sum_m J_L(xi/2)[m][i] E_m, x_i, R_i = (ad(V_P) Ehat_i, Ehat_i, (Ehat_i - E_i) / 2) */
        for (int i = 0; i < 3; ++i) {
            const double *E = w->S + 6 * k[i];
            double *x = w->x + 12 * k[i], *R = w->R + 18 * k[i], *Ehat = R + 6, IcE[6];
            for (int r = 0; r < 6; ++r) Ehat[r] = JLh[i] * w->S[6 * k[0] + r] + JLh[3 + i] * w->S[6 * k[1] + r]
                                                  + JLh[6 + i] * w->S[6 * k[2] + r];
            ad_twist(VP, Ehat, R);
            for (int r = 0; r < 6; ++r) R[12 + r] = 0.5 * (Ehat[r] - E[r]);
            axis_terms(Ic, H, Wb, K, Ehat, R, IcS, G, X);
            inertia_apply(Ic, E, IcE);
            for (int r = 0; r < 6; ++r) {
                x[r] = 0.25 * dt * G[r] - 0.5 * IcE[r];
                x[6 + r] = 0.25 * dt * X[r] + 0.5 * G[r] - IcE[r] / dt;
            }
        }
        /* own block: R_i . Yc_j + d(J_L^T pbar)/dxi - J_L^T diag(damping + gain) / 2 + dt/4 d(J_L(xi/2)^T gamma)/dxi
         * + dt/2 (u_j x L_i) . gamma_dyn - (u_j x e_i) . eta + spring, u_j = J_L(xi/2)[j, :] / 2, L_i its column i */
        double *block = w->blocks + 9 * b, dp[9], dg[9];
        const double *Jri = w->spring + 12 * b + 3;
        const double half[3] = {0.5 * xi[0], 0.5 * xi[1], 0.5 * xi[2]};
        left_jacobian_transpose_derivative(xi, pb, dp);
        left_jacobian_transpose_derivative(half, gamma, dg);
        for (int i = 0; i < 3; ++i) {
            const double L[3] = {JLh[i], JLh[3 + i], JLh[6 + i]}, e[3] = {i == 0, i == 1, i == 2};
            for (int j = 0; j < 3; ++j) {
                const double u[3] = {0.5 * JLh[3 * j], 0.5 * JLh[3 * j + 1], 0.5 * JLh[3 * j + 2]};
                const int64_t c = k[j];
                double uL[3], ue[3];
                cross3(u, L, uL);
                cross3(u, e, ue);
                double value = dot6(w->R + 18 * k[i], w->Yc + 18 * c) + dot12(w->R + 18 * k[i] + 6, w->Yc + 18 * c + 6)
                               + dp[3 * i + j] - 0.5 * JL[3 * j + i] * (tree->dof_damping[c] + tree->dof_motor_gain[c])
                               + 0.25 * dt * dg[3 * i + j] + 0.5 * dt * dot3(uL, gamma_dyn) - dot3(ue, eta);
                if (ks != 0.0) {  /* dt/2 J_L(xi/2)^T dgamma/dxi, dgamma/dxi = -k J_r^-1 J_L(xi/2)^T / 2 */
                    double t = 0.0;
                    for (int m = 0; m < 3; ++m)
                        for (int n = 0; n < 3; ++n) t += JLh[3 * m + i] * Jri[3 * m + n] * JLh[3 * j + n];
                    value -= 0.25 * dt * ks * t;
                }
                block[3 * i + j] = value;
            }
        }
    }
    return residual;
}

/* ---- The link-wise discrete Lagrangian (tree/linkwise.py, formulas in its docstring) ---- */

/* e(t) of J_L^-1 = I - hat/2 + e hat^2 and e'(t) / t (linkwise._e_coefficients) */
static void e_coefficients(double t, double *e, double *de)
{
    const double t2 = t * t;
    if (t < 0.1) {
        *e = 1.0 / 12 + t2 / 720 + t2 * t2 / 30240;
        *de = 1.0 / 360 + t2 / 7560 + t2 * t2 / 201600;
        return;
    }
    const double h = 0.5 * t, sh = sin(h);
    *e = (1.0 - h / tan(h)) / t2;
    *de = (-2.0 / (t2 * t) + 0.5 / (t2 * tan(h)) + 0.25 / (t * sh * sh)) / t;
}

/* Each frame's E = R1^T R2 - I and origin displacement dx over the step to q2 (linkwise.increments), composed down
 * the tree so that their rounding is relative to the step. outputs: w->E, w->dx (slot nq: the world, zero);
 * inputs: q1, qe (q2 with 0 on the charts), q2 (xi on the charts), w->world1, w->turn_e. */
static void increments(const symplex_tree *tree, const double *q1, const double *qe, const double *q2, workspace *w)
{
    const int64_t nq = tree->nq;
    memset(w->E + 9 * nq, 0, 9 * sizeof(double));
    memset(w->dx + 3 * nq, 0, 3 * sizeof(double));
    for (int64_t f = 0; f < nq; ++f) {
        const int64_t p = tree->dof_parent[f] < 0 ? nq : tree->dof_parent[f];
        const double *Ep = w->E + 9 * p, *W1 = w->world1 + 16 * p;
        double L1[12], L2[12], R1[9], R2[9], t[3], u[3], *E = w->E + 9 * f;
        local_transform(tree, f, q1, NULL, w->ball, L1);
        local_transform(tree, f, qe, w->turn_e, w->ball, L2);
        rot_of(L1, R1);
        rot_of(L2, R2);
        for (int i = 0; i < 3; ++i) t[i] = Ep[3 * i] * L2[3] + Ep[3 * i + 1] * L2[7] + Ep[3 * i + 2] * L2[11]
                                           + (L2[4 * i + 3] - L1[4 * i + 3]);
        for (int i = 0; i < 3; ++i) u[i] = W1[4 * i] * t[0] + W1[4 * i + 1] * t[1] + W1[4 * i + 2] * t[2];
        for (int i = 0; i < 3; ++i) w->dx[3 * f + i] = w->dx[3 * p + i] + u[i];
        double M[9], A[9];
        mat3_tmul(R1, Ep, A);
        const int64_t b = w->ball[f];
        if (b >= 0 && tree->ball_dofs[3 * b] == f) {  /* the chart's turn exp(xi) - I in closed form */
            const double xi[3] = {q2[f], q2[tree->ball_dofs[3 * b + 1]], q2[tree->ball_dofs[3 * b + 2]]};
            const double th = sqrt(dot3(xi, xi)), th2 = th * th;
            const double a = th > 1e-4 ? sin(th) / th : 1.0 - th2 / 6, c = th > 1e-4 ? (1.0 - cos(th)) / th2 : 0.5 - th2 / 24;
            double X[9], X2[9], em1[9], T[9];
            hat3(xi, X);
            mat3_mul(X, X, X2);
            for (int i = 0; i < 9; ++i) em1[i] = a * X[i] + c * X2[i];
            mat3_mul(A, R1, M);  /* Q^T E_p Q */
            for (int i = 0; i < 9; ++i) T[i] = em1[i] + (i % 4 == 0 ? 1.0 : 0.0);
            mat3_mul(M, T, E);
            for (int i = 0; i < 9; ++i) E[i] += em1[i];
        } else {  /* R1^T E_p R2 + (R1^T R2 - I) of the local rotations */
            mat3_mul(A, R2, E);
            mat3_tmul(R1, R2, M);
            for (int i = 0; i < 9; ++i) E[i] += M[i] - (i % 4 == 0 ? 1.0 : 0.0);
        }
    }
}

/* Every link's end wrenches w1, w2 and end block D = dw1 / d(end twist), summed over each frame's subtree into
 * w->w1, w->w2, w->Dc (linkwise.wrenches, end_blocks); returns the step's kinetic energy. Inputs: the start and
 * end poses w->world1, w->world and the increments (increments). */
static double link_wrenches(const symplex_tree *tree, double dt, workspace *w)
{
    const int64_t nq = tree->nq;
    double kinetic = 0.0;
    memset(w->w1, 0, (size_t)(6 * nq) * sizeof(double));
    memset(w->w2, 0, (size_t)(6 * nq) * sizeof(double));
    memset(w->Dc, 0, (size_t)(36 * nq) * sizeof(double));
    for (int64_t b = 0; b < tree->nbody; ++b) {
        const int64_t f = tree->body_frame[b];
        if (f < 0) continue;  /* a world body does not move */
        const double *O = tree->body_offset + 16 * b, *com = tree->body_com + 3 * b, *Ib = tree->body_inertia + 9 * b;
        const double *A1 = w->world1 + 16 * f, *A2 = w->world + 16 * f, *Ef = w->E + 9 * f, m = tree->body_mass[b];
        double OR[9], W1[9], W2[9], r[3], Er[3], t[3], dc[3], c1[3], c2[3], R1[9], R2[9], Eb[9], M[9];
        rot_of(O, OR);
        rot_of(A1, W1);
        rot_of(A2, W2);
        mat3_vec(OR, com, r);
        for (int i = 0; i < 3; ++i) r[i] += O[4 * i + 3];
        mat3_vec(Ef, r, Er);
        mat3_vec(W1, Er, t);
        for (int i = 0; i < 3; ++i) dc[i] = w->dx[3 * f + i] + t[i];
        mat3_vec(W1, r, c1);
        mat3_vec(W2, r, c2);
        for (int i = 0; i < 3; ++i) {
            c1[i] += A1[4 * i + 3];
            c2[i] += A2[4 * i + 3];
        }
        mat3_mul(W1, OR, R1);
        mat3_mul(W2, OR, R2);
        mat3_tmul(OR, Ef, M);
        mat3_mul(M, OR, Eb);
        /* Xi = log(R1^T R2) from E = R1^T R2 - I: its skew part and trace, no cancellation against I */
        const double v[3] = {0.5 * (Eb[7] - Eb[5]), 0.5 * (Eb[2] - Eb[6]), 0.5 * (Eb[3] - Eb[1])};
        const double sn = sqrt(dot3(v, v)), th = atan2(sn, 1.0 + 0.5 * (Eb[0] + Eb[4] + Eb[8]));
        const double factor = sn < 1e-8 ? 1.0 + th * th / 6 : th / sn;
        const double Xi[3] = {factor * v[0], factor * v[1], factor * v[2]};
        double mu[3], X[9], X2[9], JinvT[9], e, de;
        mat3_vec(Ib, Xi, mu);
        kinetic += 0.5 * (m * dot3(dc, dc) + dot3(Xi, mu)) / (dt * dt);
        for (int i = 0; i < 3; ++i) mu[i] /= dt;
        e_coefficients(sqrt(dot3(Xi, Xi)), &e, &de);
        hat3(Xi, X);
        mat3_mul(X, X, X2);
        for (int i = 0; i < 9; ++i) JinvT[i] = (i % 4 == 0 ? 1.0 : 0.0) + 0.5 * X[i] + e * X2[i];
        double Jmu[3], JTmu[3], tau1[3], tau2[3], fo[3], cf[3];
        mat3_vec(JinvT, mu, Jmu);
        for (int i = 0; i < 3; ++i) JTmu[i] = JinvT[i] * mu[0] + JinvT[3 + i] * mu[1] + JinvT[6 + i] * mu[2];
        mat3_vec(R1, Jmu, tau1);
        mat3_vec(R2, JTmu, tau2);
        double *s1 = w->w1 + 6 * f, *s2 = w->w2 + 6 * f;
        for (int i = 0; i < 3; ++i) fo[i] = m * dc[i] / dt;
        cross3(c1, fo, cf);  /* w1 = (c1 x f1 + tau, f1) with f1 = -fo, tau = -R1 J^-T mu */
        for (int i = 0; i < 3; ++i) {
            s1[i] -= cf[i] + tau1[i];
            s1[3 + i] -= fo[i];
        }
        cross3(c2, fo, cf);
        for (int i = 0; i < 3; ++i) {
            s2[i] += cf[i] + tau2[i];
            s2[3 + i] += fo[i];
        }
        /* D: m/dt [[C1 C2, -C1], [C2, -I]] - [[R1 (dG + J^-T I / dt) J^-T^T R1^T, 0], [0, 0]] */
        const double mm = m / dt;
        double C1[9], C2[9], C12[9], dG[9], inner[9], T[9], RT[9], *D = w->Dc + 36 * f;
        hat3(c1, C1);
        hat3(c2, C2);
        mat3_mul(C1, C2, C12);
        const double xy = dot3(Xi, mu), xx = dot3(Xi, Xi);
        double Y[9];
        hat3(mu, Y);
        for (int i = 0; i < 3; ++i) {
            const double XXy = Xi[i] * xy - mu[i] * xx;
            for (int j = 0; j < 3; ++j)
                dG[3 * i + j] = -0.5 * Y[3 * i + j] + e * ((i == j ? xy : 0.0) + Xi[i] * mu[j] - 2.0 * mu[i] * Xi[j])
                                + de * XXy * Xi[j];
        }
        mat3_mul(JinvT, Ib, T);
        for (int i = 0; i < 9; ++i) T[i] = dG[i] + T[i] / dt;
        mat3_mult(T, JinvT, inner);
        mat3_mul(R1, inner, T);
        mat3_mult(T, R1, RT);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                D[6 * i + j] += mm * C12[3 * i + j] - RT[3 * i + j];
                D[6 * i + 3 + j] -= mm * C1[3 * i + j];
                D[6 * (3 + i) + j] += mm * C2[3 * i + j];
                D[6 * (3 + i) + 3 + j] -= i == j ? mm : 0.0;
            }
    }
    for (int64_t f = nq - 1; f >= 0; --f) {
        const int64_t parent = tree->dof_parent[f];
        if (parent < 0) continue;
        add(6, w->w1 + 6 * f, w->w1 + 6 * parent);
        add(6, w->w2 + 6 * f, w->w2 + 6 * parent);
        add(36, w->Dc + 36 * f, w->Dc + 36 * parent);
    }
    return kinetic;
}

/* The link-wise rows' Newton matrix in tree form (linkwise.rows): U = (S', 0), x = (Dc^T S1, 0), R = (S1, 0),
 * Yc = (Dc S', 0), d = S1 . Dc S' - (damping + gain) / 2, each chart's own block; S' = S2, times J_R(xi) on a
 * chart. Inputs: w->S1, w->S (end), w->Dc, w->JL. */
static void linkwise_jacobian(const symplex_tree *tree, workspace *w)
{
    const int64_t nq = tree->nq;
    memcpy(w->Sp, w->S, (size_t)(6 * nq) * sizeof(double));
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b;
        const double *JL = w->JL + 9 * b;
        for (int j = 0; j < 3; ++j)
            for (int r = 0; r < 6; ++r)
                w->Sp[6 * k[j] + r] = JL[3 * j] * w->S[6 * k[0] + r] + JL[3 * j + 1] * w->S[6 * k[1] + r]
                                      + JL[3 * j + 2] * w->S[6 * k[2] + r];
    }
    for (int64_t a = 0; a < nq; ++a) {
        const double *D = w->Dc + 36 * a, *S1 = w->S1 + 6 * a, *Sp = w->Sp + 6 * a;
        double *U = w->U + 12 * a, *x = w->x + 12 * a, *R = w->R + 18 * a, *Yc = w->Yc + 18 * a;
        memset(U, 0, 12 * sizeof(double));
        memset(x, 0, 12 * sizeof(double));
        memset(R, 0, 18 * sizeof(double));
        memset(Yc, 0, 18 * sizeof(double));
        for (int i = 0; i < 6; ++i) {
            U[i] = Sp[i];
            R[i] = S1[i];
            for (int j = 0; j < 6; ++j) {
                x[i] += D[6 * j + i] * S1[j];
                Yc[i] += D[6 * i + j] * Sp[j];
            }
        }
        w->d[a] = dot6(S1, Yc) - 0.5 * (tree->dof_damping[a] + tree->dof_motor_gain[a]);
    }
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b;
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                w->blocks[9 * b + 3 * i + j] = dot6(w->S1 + 6 * k[i], w->Yc + 18 * k[j])
                    - (i == j ? 0.5 * (tree->dof_damping[k[i]] + tree->dof_motor_gain[k[i]]) : 0.0);
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

/* The length of the hand-up vectors (R, Yc rows of Obar): (y, t) when ball rows read t, y otherwise; the link-wise
 * form's are 6 long and its U, x 6 wide (the rest zero, linkwise_jacobian), so factor and solve_tree take 6 x 6
 * (dot_n: the dot product of the first n = 6 or 12 entries). */
static int hand_up(const symplex_tree *tree) { return tree->linkwise ? 6 : tree->nball ? 18 : 12; }

static double dot_n(int n, const double *a, const double *b) { return n == 12 ? dot12(a, b) : dot6(a, b); }

/* Leaves-to-root elimination of J11 on the unknown coordinates (tree/articulated.py factor): per node with
 * members m (s of them), D = d + R Obar U^T, X = -D^-1 (x + R Obar), c = Yc^T + Obar U^T,
 * Omega = Obar + c X added into Obar of the parent coordinate. outputs: w->Dinv, w->X, w->c by member;
 * uses w->Obar. Returns 1 when a pivot block is singular. Adds its multiply-adds to *ops. O(nq). */
static int factor(const symplex_tree *tree, workspace *w, double *ops)
{
    const int64_t nq = tree->nq;
    const int h = hand_up(tree), nc = tree->linkwise ? 6 : 12;  /* the link-wise form: 6 x 6 (linkwise_jacobian) */
    const int64_t block = (int64_t)h * nc;  /* Obar of a frame: h rows of nc, packed (6 x 6 on the link-wise form) */
    memset(w->Obar, 0, (size_t)(block * nq) * sizeof(double));
    for (int64_t a = nq - 1; a >= 0; --a) {
        int64_t m;
        const int s = node_at(tree, w, a, 1, &m);
        if (!s) continue;
        double *O = w->Obar + block * a;
        if (w->unknown[m] >= 0) {
            double OU[18][3], RO[3][12], D[9], inv[9];
            for (int r = 0; r < h; ++r)
                for (int j = 0; j < s; ++j) OU[r][j] = dot_n(nc, O + nc * r, w->U + 12 * (m + j));
            for (int i = 0; i < s; ++i) {
                const double *R = w->R + 18 * (m + i);
                for (int col = 0; col < nc; ++col) {
                    double t = 0.0;
                    for (int r = 0; r < h; ++r) t += R[r] * O[nc * r + col];
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
                for (int col = 0; col < nc; ++col) {
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
                    for (int col = 0; col < nc; ++col) O[nc * r + col] += c[r] * X[col];
                }
            }
            *ops += 3 * h * nc * s + h * s * s + nc * s * s;
        }
        if (tree->dof_parent[m] >= 0) add(block, O, w->Obar + block * tree->dof_parent[m]);
    }
    return 0;
}

/* r <- J11^-1 r with the factor (tree/articulated.py solve): r (nq,) by coordinate; prescribed entries are
 * ignored on input and 0 on output. Uses w->obar, w->zc, w->xi. Adds its multiply-adds to *ops. O(nq). */
static void solve_tree(const symplex_tree *tree, workspace *w, double *r, double *ops)
{
    const int64_t nq = tree->nq;
    const int h = hand_up(tree), nc = tree->linkwise ? 6 : 12;
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
        for (int i = 0; i < nc; ++i) z[i] = p >= 0 ? w->zc[12 * p + i] : 0.0;
        if (w->unknown[m] >= 0) {
            for (int i = 0; i < s; ++i) r[m + i] = dot_n(nc, w->X + 12 * (m + i), z) + w->xi[m + i];
            for (int i = 0; i < s; ++i)
                for (int k = 0; k < nc; ++k) z[k] += w->U[12 * (m + i) + k] * r[m + i];
            *ops += 2 * nc * s;
        } else {
            for (int i = 0; i < s; ++i) r[m + i] = 0.0;
        }
        for (int i = 0; i < nc; ++i) w->zc[12 * (m + s - 1) + i] = z[i];
    }
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
    const int linkwise = tree->linkwise != 0;
    double potential1 = 0.0, potential2 = 0.0, kinetic = 0.0, link_scale = 0.0, correction = INFINITY;
    if (nsel || linkwise) forward_kinematics(tree, q1, NULL, w.ball, w.world1, w.S1);
    for (int64_t i = 0; i < nsel; ++i) loop_row(tree, w.world1, w.S1, rows[i], w.Dh1 + i * nq);
    if (linkwise) {  // the potential's start end: Q(q1) and V(q1), forces at the midpoint time (tree/linkwise.py)
        memcpy(w.world, w.world1, (size_t)(16 * (nq + 1)) * sizeof(double));
        memcpy(w.S, w.S1, (size_t)(6 * (nq + 1)) * sizeof(double));
        for (int64_t k = 0; k < nq; ++k) {
            w.qm[k] = q1[k];
            w.v[k] = 0.0;
        }
        first_order_terms(tree, force_vector, NULL, &w, &potential1);
        memcpy(w.Q1, w.Q, (size_t)nq * sizeof(double));
        link_scale = max_abs(nq, p1);
        for (int64_t k = 0; k < nq; ++k) link_scale = fmax(link_scale, 0.5 * dt * fabs(w.Q1[k]));
    }

    int64_t status = SYMPLEX_CONVERGED, it = 0;
    double chart_residual = 0.0;
    for (;;) {
        // on a chart q1 = 0 and q2 = xi: the pose is C1 exp(xi / 2) mid-step and C1 exp(xi) at its end, with the
        // chart's primitives at angle 0 there, and v = xi / dt its body angular velocity (tree/step_charts.py)
        step_charts(tree, q2, &w);
        for (int64_t k = 0; k < nq; ++k) {
            w.qm[k] = w.ball[k] >= 0 ? 0.0 : 0.5 * (q1[k] + q2[k]);
            w.qe[k] = w.ball[k] >= 0 ? 0.0 : q2[k];
            w.v[k] = (q2[k] - q1[k]) / dt;
            w.fc[k] = -tree->dof_damping[k] * w.v[k] + tree->dof_motor_gain[k] * (tree->dof_motor_velocity[k] - w.v[k]);
            w.fc[k] += torque[k];
        }
        double scale_it = scale;  // the round-off floor of f1 scales with the largest momentum-like term in it
        if (linkwise) {  // F = p1 + S1 . w1 + dt/2 (Q(q1) + f_c), p2 = S2 . w2 + dt/2 (Q(q2) + f_c) (tree/linkwise.py)
            forward_kinematics(tree, w.qe, w.turn_e, w.ball, w.world, w.S);
            for (int64_t k = 0; k < nq; ++k) {
                w.qm[k] = w.qe[k];
                w.v[k] = 0.0;
            }
            first_order_terms(tree, force_vector, w.turn_e, &w, &potential2);
            increments(tree, q1, w.qe, q2, &w);
            kinetic = link_wrenches(tree, dt, &w);
            scale_it = fmax(scale_it, link_scale);
            for (int64_t k = 0; k < nq; ++k) {
                const double kinetic1 = dot6(w.S1 + 6 * k, w.w1 + 6 * k);
                scale_it = fmax(scale_it, fabs(kinetic1));
                w.F[k] = p1[k] + kinetic1 + 0.5 * dt * (w.Q1[k] + w.fc[k]);
                p2[k] = dot6(w.S + 6 * k, w.w2 + 6 * k) + 0.5 * dt * (w.Q[k] + w.fc[k]);
            }
            if (nrow) {
                memcpy(w.world2, w.world, (size_t)(16 * (nq + 1)) * sizeof(double));
                memcpy(w.S2, w.S, (size_t)(6 * (nq + 1)) * sizeof(double));
            }
        } else {
            forward_kinematics(tree, w.qm, w.turn_m, w.ball, w.world, w.S);
            first_order_terms(tree, force_vector, w.turn_m, &w, &energy);
            if (nrow) forward_kinematics(tree, w.qe, w.turn_e, w.ball, w.world2, w.S2);
            for (int64_t k = 0; k < nq; ++k) {
                w.F[k] = p1[k] + 0.5 * dt * (w.g[k] + w.Q[k]) - w.p[k] + 0.5 * dt * w.fc[k];
                scale_it = fmax(scale_it, fabs(w.p[k]));
                scale_it = fmax(scale_it, dt * fabs(w.g[k] + w.Q[k]));
            }
        }
        for (int64_t k = 0; k < nq; ++k) {
            const int64_t u = w.unknown[k];
            if (u < 0) continue;
            double f1 = w.F[k];
            for (int64_t i = 0; i < nsel; ++i) f1 -= w.Dh1[i * nq + k] * lam[i];
            w.f[u] = f1;
        }
        if (tree->nball && !linkwise) {  // the chart rows on the rotation group (tree/lie_rows.py): pbar, then F into f
            for (int64_t k = 0; k < nq; ++k) {
                if (w.ball[k] < 0) continue;
                w.delta[k] = p1[k] + 0.5 * dt * w.fc[k];
                for (int64_t i = 0; i < nsel; ++i) w.delta[k] -= w.Dh1[i * nq + k] * lam[i];
            }
            chart_residual = ball_rows(tree, dt, &w, q2, w.delta, w.xi, 0);
            for (int64_t k = 0; k < nq; ++k)
                if (w.ball[k] >= 0) w.f[w.unknown[k]] = w.xi[k];
        }
        r1 = max_abs(nd, w.f);
        if (nrow) {
            for (int64_t r = 0; r < nrow; ++r) h2[r] = loop_row(tree, w.world2, w.S2, r, NULL);
            for (int64_t i = 0; i < nsel; ++i) w.f[nd + i] = h2[rows[i]];
        }
        r2 = max_abs(nsel, w.f + nd);
        // loop rows get a tenth of tol (midpoint.LOOP_TOLERANCE_FACTOR): redundant rows follow them under tol;
        // chart rows are held to their own terms; the link-wise rows end at a correction at round-off
        // (midpoint._newton, tree/linkwise.py ROUNDOFF_STEP)
        const int settled = linkwise && correction <= LINKWISE_ROUNDOFF_STEP;
        if ((r1 <= tol * scale_it || settled) && r2 <= 0.1 * tol && chart_residual <= tol) break;
        if (!isfinite(r1 + r2)) { status = SYMPLEX_NOT_FINITE; break; }
        if (it >= max_iterations) { status = SYMPLEX_NOT_CONVERGED; break; }

        // the exact Newton step, O(nq) per loop row (tree/articulated.py newton_direction):
        // delta = a + Y dlam, a = J11^-1 (-f1), Y = J11^-1 Dh1^T, (Dh2 Y) dlam = -f2 - Dh2 a
        if (linkwise) {
            linkwise_jacobian(tree, &w);
        } else {
            tree_jacobian(tree, dt, &w);
            if (tree->nball) ball_rows(tree, dt, &w, q2, w.delta, w.xi, 1);  // w.delta still holds pbar
        }
        if (factor(tree, &w, &ops)) { status = SYMPLEX_SINGULAR; break; }
        for (int64_t k = 0; k < nq; ++k) w.delta[k] = w.unknown[k] >= 0 ? -w.f[w.unknown[k]] : 0.0;
        solve_tree(tree, &w, w.delta, &ops);
        for (int64_t i = 0; i < nsel; ++i) {
            double *Dh2 = w.Dh2 + i * nq, *Y = w.Y + i * nq;
            loop_row(tree, w.world2, w.S2, rows[i], Dh2);
            memcpy(Y, w.Dh1 + i * nq, (size_t)nq * sizeof(double));
            for (int64_t b = 0; b < tree->nball; ++b) {  // chart columns: Dh1 times J_L(xi) (the link-wise rows' axes
                const int64_t *k = tree->ball_dofs + 3 * b;  // are the start's: Dh1), Dh2 times J_R(xi) = J_L(xi)^T
                const double *JL = w.JL + 9 * b, *row = w.Dh1 + i * nq;
                const double end[3] = {Dh2[k[0]], Dh2[k[1]], Dh2[k[2]]};
                for (int c = 0; c < 3; ++c) {
                    if (!linkwise) Y[k[c]] = row[k[0]] * JL[c] + row[k[1]] * JL[3 + c] + row[k[2]] * JL[6 + c];
                    Dh2[k[c]] = dot3(JL + 3 * c, end);
                }
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
        correction = max_abs(nq, w.delta);  // zero where prescribed
        ++it;
    }

    if (linkwise) {  // kinetic + 2 V(qm) - (V(q1) + V(q2)) / 2 at the joint-space midpoint (tree/linkwise.py)
        double potential_mid;
        for (int64_t k = 0; k < nq; ++k) w.qm[k] = w.ball[k] >= 0 ? 0.0 : 0.5 * (q1[k] + q2[k]);
        forward_kinematics(tree, w.qm, w.turn_m, w.ball, w.world, w.S);
        first_order_terms(tree, force_vector, w.turn_m, &w, &potential_mid);
        energy = kinetic + 2.0 * potential_mid - 0.5 * (potential1 + potential2);
    }
    for (int64_t k = 0; k < nq && !linkwise; ++k) p2[k] = 0.5 * dt * (w.g[k] + w.Q[k]) + w.p[k] + 0.5 * dt * w.fc[k];
    for (int64_t b = 0; b < tree->nball && !linkwise; ++b)  // on a chart: the body covector at C2, D2 + dt/2 f_c (tree/lie_rows.py)
        for (int i = 0; i < 3; ++i) {
            const int64_t k = tree->ball_dofs[3 * b + i];
            p2[k] = w.D2[3 * b + i] + 0.5 * dt * w.fc[k];
        }
    stats[0] = energy;
    stats[1] = r1;
    stats[2] = max_abs(nrow, h2);
    stats[3] = ops;
    *iterations = it;
    return status;
}

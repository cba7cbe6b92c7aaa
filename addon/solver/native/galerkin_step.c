/* One Galerkin variational integrator step of order 2s (s = 2..4) on a tree model, ball and free-joint charts and
 * loop rows included: the whole Newton loop of
 * tree/galerkin.py `_newton` with galerkin_newton.py's exact O(s^3 n) direction (symplex_kernels.h). The numpy
 * modules are the reference and the fallback; the quantities and names follow them:
 *   residual:  node values q_j = P[j] x, v_j = D[j] x / dt, the Lagrangian terms there (tree_common.h), and
 *              Z^a = dt sum_j w_j (P[j, a] (g + Q + f_c)_j + D[j, a] / dt p_j); rows r^a = Z^a (a < s),
 *              r^0 += p^k, minus Dh(x^a)^T lam^a with loops; h at x^1..x^s; p^(k+1) = Z^s;
 *   direction: each coordinate's column and row vectors U, x (s + 1, 12 r) at every node, its own s x s
 *              block, the leaves-to-root elimination (Obar, Dinv, X, c) and the solve (galerkin_newton.py's
 *              docstring); loop rows and their curvature columns (central differences of Dh^T lam) border it
 *              (galerkin_newton.newton_direction); without loop rows, simplified updates reuse the last factor
 *              after a 10-fold cut of the rows (galerkin.newton, REUSE), on every tree, and without charts the
 *              first `carry` updates of a step reuse the factor the last call left in the scratch (CARRY); a
 *              reused or carried update that grows the rows (GALERKIN_GROW) is undone and the next factors afresh;
 *   charts:    each node at angle 0 in the chart C1 exp(xi_j) with body angular velocity J_R(xi_j) xidot_j, the
 *              charts' rows (chart torque, momentum, springs, row 0's C1 turn, p^(k+1) = J_R(xi^s)^-T Z^s), their
 *              column and row vectors and own 3s x 3s blocks (galerkin_newton.tree_form, _chart_own_blocks), and
 *              the elimination by groups, a chart's three coordinates one group (group_factor, group_solve);
 *   cost:      on trees without charts the elimination runs on the live components of the node vectors only
 *              (compact_components) and a parent's Obar is its first child's block updated in place; the end
 *              energy's M^-1 p is the O(nq) articulated-body recursion (inverse_mass_apply). */
#include <float.h>

#include "tree_common.h"

/* galerkin.ROUNDOFF: an exact update within this of the unknowns (relative to max(1, their largest)) moves them by a
 * few units in the last place, so the rows left are their round-off floor, whatever its height */
#define GALERKIN_ROUNDOFF (64.0 * DBL_EPSILON)

/* galerkin.GROW: a carried or reused update that leaves the worst row above this times the last one is rejected */
#define GALERKIN_GROW 2.0

/* Scratch of one Galerkin step (or only its size when base is NULL). W = 12 r, m = selected loop rows,
 * nc = the most curvature columns, (s - 1) times the coordinates on loop paths. */
typedef struct {
    double *x;                          /* (s + 1, nq) control points, x^0 = q^k */
    double *qn, *vn, *V, *p, *g, *Q;    /* (nq,), (nq,), (nq + 1, 6), (nq,) x 3 */
    double *world, *S;                  /* (r, nq + 1, 16), (r, nq + 1, 6): every node's pose (kept for J) */
    double *Sdot, *Ic, *H, *Wr, *K;     /* (r, nq, 6 | INERTIA | 6 | 6 | 9) */
    double *Z;                          /* (s + 1, nq) */
    double *f;                          /* (s nq + s m) rows r (s, nq) then h (s, m) */
    double *Dh;                         /* (s + 1, m, nq) Dh at x^0 = q^k .. x^s (selected rows) */
    double *wtmp, *Stmp, *row;          /* (nq + 1, 16), (nq + 1, 6), (nq,) */
    double *U, *xv, *Dloc;              /* (nq, s + 1, W) x 2, (nq, s, s) */
    double *Obar, *Dinv, *Xg, *c;       /* (nq, W, W), (nq, s, s), (nq, s, W), (nq, W, s) */
    double *obar, *z, *xs;              /* (nq, W) x 2, (nq, s) */
    double *sol;                        /* (1 + s m + nc, s nq) right-hand sides, then solutions */
    double *B, *coef;                   /* (s m + nc)^2, (s m + nc) the bordered system */
    double *OU, *RO;                    /* (W, s), (s, W) */
    double *M;                          /* (nq, 50) articulated inertias and their pass (energy, without loops) */
    int64_t *curv;                      /* (nc,) global unknown index of each curvature column */
    int64_t *live, *held;               /* (W,) live components (compact_components), (nq,) Obar slots */
    int64_t Wc;                         /* the live components' count, padded (compact_components) */
    double *kept;                       /* (1,) Wc of the factor left in the scratch by the last call */
    /* ball and free-joint charts (tree/galerkin.py's per-step charts; sizes 0 without them) */
    int64_t *ball;                      /* (nq,) chart of each coordinate, -1 outside charts */
    double *turn, *cxi, *cxid;          /* (r, nball, 9 | 3 | 3) exp(xi_j), xi_j, xidot_j at each node */
    double *cVP;                        /* (r, nball, 6) the chart's parent velocity V_P at each node */
    double *cg, *ceta, *cJri;           /* (r, nball, 3 | 3 | 9) gamma_j + f_j, eta_j, the spring's J_r^-1 */
    double *Zstart, *pend;              /* (nball, 3) Z_start, the end momentum J_R(xi^s)^-T Z^s */
    double *Dball;                      /* (nball, 3 s, 3 s) each chart's own block */
    double *Dinv3, *U0, *x0;            /* (nq, 3 s s) group pivots; (3, W) x 2 a chart's row-0 vectors */
    double *OU3, *RO3;                  /* (W, 3 s), (3 s, W) */
    double *qe;                         /* (nq,) the end pose's coordinates (0 on the charts) */
    double *lq, *lturn;                 /* (nq,), (nball, 9) a control point's pose for the loop rows */
} gworkspace;

static double *gtake(double *base, int64_t *at, int64_t n)
{
    double *out = base ? base + *at : NULL;
    *at += n;
    return out;
}

/* The number of coordinates on the path of any loop row (between its two frames): Dh is zero elsewhere. */
static int64_t loop_coordinates(const symplex_tree *tree)
{
    int64_t count = 0;
    for (int64_t q = 0; q < tree->nq; ++q) {
        int on = 0;
        for (int64_t r = 0; r < tree->nrow && !on; ++r) {
            int64_t fp = tree->row_frame_p[r], fc = tree->row_frame_c[r];
            while (fp != fc && !on) {
                if (fp > fc) { on = fp == q; fp = tree->dof_parent[fp]; }
                else { on = fc == q; fc = tree->dof_parent[fc]; }
            }
        }
        count += on;
    }
    return count;
}

static int64_t gcarve(gworkspace *w, double *base, const symplex_tree *tree, int64_t s, int64_t r, int64_t m)
{
    const int64_t nq = tree->nq, W = 12 * r, nc = m ? (s - 1) * loop_coordinates(tree) : 0;
    const int64_t cols = 1 + s * m + nc, k = s * m + nc;
    int64_t at = 0;
    w->x = gtake(base, &at, (s + 1) * nq);
    w->qn = gtake(base, &at, nq);
    w->vn = gtake(base, &at, nq);
    w->V = gtake(base, &at, 6 * (nq + 1));
    w->p = gtake(base, &at, nq);
    w->g = gtake(base, &at, nq);
    w->Q = gtake(base, &at, nq);
    w->world = gtake(base, &at, r * 16 * (nq + 1));
    w->S = gtake(base, &at, r * 6 * (nq + 1));
    w->Sdot = gtake(base, &at, r * 6 * nq);
    w->Ic = gtake(base, &at, r * INERTIA * nq);
    w->H = gtake(base, &at, r * 6 * nq);
    w->Wr = gtake(base, &at, r * 6 * nq);
    w->K = gtake(base, &at, r * 9 * nq);
    w->Z = gtake(base, &at, (s + 1) * nq);
    w->f = gtake(base, &at, s * nq + s * m);
    w->Dh = gtake(base, &at, (s + 1) * m * nq);
    w->wtmp = gtake(base, &at, 16 * (nq + 1));
    w->Stmp = gtake(base, &at, 6 * (nq + 1));
    w->row = gtake(base, &at, nq);
    w->U = gtake(base, &at, nq * (s + 1) * W);
    w->xv = gtake(base, &at, nq * (s + 1) * W);
    w->Dloc = gtake(base, &at, nq * s * s);
    w->Obar = gtake(base, &at, nq * W * W);
    w->Dinv = gtake(base, &at, nq * s * s);
    w->Xg = gtake(base, &at, nq * s * W);
    w->c = gtake(base, &at, nq * W * s);
    w->obar = gtake(base, &at, nq * W);
    w->z = gtake(base, &at, nq * W);
    w->xs = gtake(base, &at, nq * s);
    w->sol = gtake(base, &at, cols * s * nq);
    w->B = gtake(base, &at, k * k);
    w->coef = gtake(base, &at, k);
    w->OU = gtake(base, &at, W * s);
    w->RO = gtake(base, &at, s * W);
    w->M = gtake(base, &at, tree->nrow ? 0 : nq * 50);
    w->curv = (int64_t *)gtake(base, &at, nc);
    w->live = (int64_t *)gtake(base, &at, W);
    w->held = (int64_t *)gtake(base, &at, nq);
    w->kept = gtake(base, &at, 1);
    w->Wc = W;  /* every component (compact_components narrows it on trees without charts) */
    const int64_t nb = tree->nball, on = nb > 0;
    w->ball = (int64_t *)gtake(base, &at, nq);
    w->turn = gtake(base, &at, r * nb * 9);
    w->cxi = gtake(base, &at, r * nb * 3);
    w->cxid = gtake(base, &at, r * nb * 3);
    w->cVP = gtake(base, &at, r * nb * 6);
    w->cg = gtake(base, &at, r * nb * 3);
    w->ceta = gtake(base, &at, r * nb * 3);
    w->cJri = gtake(base, &at, r * nb * 9);
    w->Zstart = gtake(base, &at, nb * 3);
    w->pend = gtake(base, &at, nb * 3);
    w->Dball = gtake(base, &at, nb * 9 * s * s);
    w->Dinv3 = gtake(base, &at, on * nq * 3 * s * s);
    w->U0 = gtake(base, &at, on * 3 * W);
    w->x0 = gtake(base, &at, on * 3 * W);
    w->OU3 = gtake(base, &at, on * 3 * s * W);
    w->RO3 = gtake(base, &at, on * 3 * s * W);
    w->qe = gtake(base, &at, nq);
    w->lq = gtake(base, &at, on * nq);
    w->lturn = gtake(base, &at, nb * 9);
    return at;
}

int64_t symplex_galerkin_scratch_size(const symplex_tree *tree, int64_t s, int64_t r, int64_t nsel)
{
    gworkspace w;
    return gcarve(&w, NULL, tree, s, r, nsel);
}

/* The pose (w->wtmp, w->Stmp) of control point q for the loop rows: on a tree with charts q holds xi there and
 * the pose is C1 exp(xi) at chart coordinates 0 (galerkin.loop_rows). */
static void loop_pose(const symplex_tree *tree, gworkspace *w, const double *q)
{
    if (!tree->nball) {
        forward_kinematics(tree, q, NULL, NULL, w->wtmp, w->Stmp);
        return;
    }
    memcpy(w->lq, q, (size_t)tree->nq * sizeof(double));
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b;
        so3_exp(q + k[0], w->lturn + 9 * b);  /* a chart's coordinates are consecutive */
        for (int i = 0; i < 3; ++i) w->lq[k[i]] = 0.0;
    }
    forward_kinematics(tree, w->lq, w->lturn, w->ball, w->wtmp, w->Stmp);
}

/* A loop row's chart columns (body axes at C1 exp(xi)) in xi: times J_R(xi) (galerkin.loop_rows). */
static void chart_columns(const symplex_tree *tree, const double *q, double *row)
{
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b;
        double JL[9];
        const double d[3] = {row[k[0]], row[k[1]], row[k[2]]};
        left_jacobian(q + k[0], JL);
        for (int c = 0; c < 3; ++c) row[k[c]] = dot3(d, JL + 3 * c);
    }
}

/* Dh rows (m, nq) of the selected loop rows and, if h is given, their values at coordinates q. */
static void loop_rows_at(const symplex_tree *tree, gworkspace *w, int64_t m, const int64_t *rows, const double *q,
                         double *Dh, double *h)
{
    loop_pose(tree, w, q);
    for (int64_t i = 0; i < m; ++i) {
        const double v = loop_row(tree, w->wtmp, w->Stmp, rows[i], Dh + i * tree->nq);
        chart_columns(tree, q, Dh + i * tree->nq);
        if (h) h[i] = v;
    }
}

/* ---- Ball and free-joint charts (galerkin.py residual, galerkin_newton.py tree_form and _chart_own_blocks) ---- */

/* Node j's chart coordinates: xi_j, xidot_j and exp(xi_j) kept; in qn, vn the charts' entries become 0 and the
 * body angular velocity J_R(xi_j) xidot_j (the tree is evaluated at angle 0 in the chart C1 exp(xi_j)). */
static void chart_node_in(const symplex_tree *tree, gworkspace *w, int64_t j)
{
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b, at = j * tree->nball + b;
        double *xi = w->cxi + 3 * at, *xid = w->cxid + 3 * at, JL[9];
        for (int i = 0; i < 3; ++i) {
            xi[i] = w->qn[k[i]];
            xid[i] = w->vn[k[i]];
            w->qn[k[i]] = 0.0;
        }
        so3_exp(xi, w->turn + 9 * at);
        left_jacobian(xi, JL);
        for (int i = 0; i < 3; ++i) w->vn[k[i]] = JL[i] * xid[0] + JL[3 + i] * xid[1] + JL[6 + i] * xid[2];
    }
}

/* Node j's chart rows after tree_terms (galerkin.residual): the chart springs into Q (at angle 0, their J_r^-1
 * kept), gamma_j + f_j and eta_j kept, and the charts' Z^a (a >= 1) and Z_start terms. */
static void chart_node_terms(const symplex_tree *tree, gworkspace *w, int64_t j, int64_t s, const double *Pj,
                             const double *Dj, double wdt, double dt, const double *tj)
{
    const int64_t nq = tree->nq;
    const double *S = w->S + j * 6 * (nq + 1);
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b, base = k[0], at = j * tree->nball + b;
        const int64_t parent = tree->dof_parent[base] < 0 ? nq : tree->dof_parent[base];
        const double *VP = w->V + 6 * parent, *H = w->H + j * 6 * nq + 6 * base, *Wr = w->Wr + j * 6 * nq + 6 * base;
        const double *xi = w->cxi + 3 * at, *xid = w->cxid + 3 * at, *rot = w->turn + 9 * at, ks = tree->ball_stiffness[b];
        double *g = w->cg + 3 * at, *eta = w->ceta + 3 * at, *Jri = w->cJri + 9 * at, sp[12] = {0.0};
        memcpy(w->cVP + 6 * at, VP, sizeof(double) * 6);
        if (ks != 0.0) chart_spring(tree, b, rot, sp);
        memcpy(Jri, sp + 3, sizeof(double) * 9);
        for (int i = 0; i < 3; ++i) {
            const int64_t c = k[i];
            const double v = w->vn[c], *E = S + 6 * c;
            double t[6];
            w->Q[c] -= ks * sp[i];
            ad_twist(VP, E, t);
            g[i] = dot6(t, H) + dot6(E, Wr) - ks * sp[i] - tree->dof_damping[c] * v
                   + tree->dof_motor_gain[c] * (tree->dof_motor_velocity[c] - v) + tj[c];
            eta[i] = w->p[c];
        }
        double JL[9], N[9], rt[3], re[3], ve[3], eg[3];
        left_jacobian(xi, JL);
        left_jacobian_transpose_derivative(xi, xid, N);
        mat3_vec(JL, g, rt);   /* J_R^T g = J_L g */
        mat3_vec(JL, eta, ve);
        for (int i = 0; i < 3; ++i) re[i] = N[i] * eta[0] + N[3 + i] * eta[1] + N[6 + i] * eta[2];
        for (int64_t a = 1; a <= s; ++a)
            for (int i = 0; i < 3; ++i)
                w->Z[a * nq + k[i]] += wdt * (Pj[a] * (rt[i] + re[i]) + Dj[a] / dt * ve[i]);
        mat3_vec(rot, g, eg);
        for (int i = 0; i < 3; ++i) w->Zstart[3 * b + i] += wdt * eg[i];
    }
}

/* The charts' row 0, r^0 = p^k + Z_start - sum_a J_L(xi^a)^-T Z^a, into w->f, and the end momenta
 * p^(k+1) = J_L(xi^s)^-1 Z^s into w->pend (galerkin.residual). */
static void chart_rows_finish(const symplex_tree *tree, gworkspace *w, int64_t s, const double *p1)
{
    const int64_t nq = tree->nq;
    for (int64_t b = 0; b < tree->nball; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b;
        double r0[3], JL[9], JLt[9], z[3], y[3];
        for (int i = 0; i < 3; ++i) r0[i] = p1[k[i]] + w->Zstart[3 * b + i];
        for (int64_t a = 1; a <= s; ++a) {
            const double xa[3] = {w->x[a * nq + k[0]], w->x[a * nq + k[1]], w->x[a * nq + k[2]]};
            for (int i = 0; i < 3; ++i) z[i] = w->Z[a * nq + k[i]];
            left_jacobian(xa, JL);
            for (int i = 0; i < 3; ++i)
                for (int e = 0; e < 3; ++e) JLt[3 * i + e] = JL[3 * e + i];
            solve3(JLt, z, y);
            for (int i = 0; i < 3; ++i) r0[i] -= y[i];
            if (a == s) solve3(JL, z, w->pend + 3 * b);
        }
        for (int i = 0; i < 3; ++i) w->f[k[i]] = r0[i];
    }
}

/* f, f', f'' of f(u) = sum_k (-1)^k u^k / (2k + first)! (galerkin_newton._series, the same 40 terms) */
static void chart_series(double u, int first, double *f)
{
    double coef = first == 2 ? 0.5 : 1.0 / 6.0, pw[3] = {1.0, 0.0, 0.0};  /* u^k, u^(k-1), u^(k-2) */
    f[0] = f[1] = f[2] = 0.0;
    for (int k = 0; k < 40; ++k) {
        const double c = (k % 2 ? -1.0 : 1.0) * coef;
        f[0] += c * pw[0];
        if (k >= 1) f[1] += c * k * pw[1];
        if (k >= 2) f[2] += c * k * (k - 1) * pw[2];
        pw[2] = pw[1];
        pw[1] = pw[0];
        pw[0] *= u;
        coef /= (double)((2 * k + first + 1) * (2 * k + first + 2));
    }
}

/* d^2 (a . J_R(x) b) / dx^2 (3x3) (galerkin_newton.jacobian_hessian: J_R = I - p hat(x) + q hat(x)^2) */
static void jacobian_hessian(const double *x, const double *a, const double *b, double *out)
{
    const double u = dot3(x, x), ab = dot3(a, b), ax = dot3(a, x), bx = dot3(b, x);
    double p[3], q[3], m[3], g2[3];
    chart_series(u, 2, p);
    chart_series(u, 3, q);
    cross3(b, a, m);
    const double psi1 = dot3(x, m), psi2 = ax * bx - u * ab;
    for (int i = 0; i < 3; ++i) g2[i] = a[i] * bx + b[i] * ax - 2.0 * x[i] * ab;
    for (int i = 0; i < 3; ++i)
        for (int e = 0; e < 3; ++e) {
            const double I = i == e ? 1.0 : 0.0, xx = x[i] * x[e];
            const double h2 = a[i] * b[e] + b[i] * a[e] - 2.0 * ab * I;
            const double one = 2.0 * p[1] * (x[i] * m[e] + m[i] * x[e]) + psi1 * (2.0 * p[1] * I + 4.0 * p[2] * xx);
            const double two = q[0] * h2 + 2.0 * q[1] * (x[i] * g2[e] + g2[i] * x[e])
                               + psi2 * (2.0 * q[1] * I + 4.0 * q[2] * xx);
            out[3 * i + e] = -one + two;
        }
}

/* C = A B, A^T B, A B^T on 3x3 (row-major) with scale: out += c op */
static void mat3_acc(double c, const double *A, int ta, const double *B, int tb, double *out)
{
    for (int i = 0; i < 3; ++i)
        for (int e = 0; e < 3; ++e) {
            double t = 0.0;
            for (int l = 0; l < 3; ++l) t += (ta ? A[3 * l + i] : A[3 * i + l]) * (tb ? B[3 * e + l] : B[3 * l + e]);
            out[3 * i + e] += c * t;
        }
}

/* The rows at X (w->x rows 1..s; row 0 = q^k) and lam: w->f = (r (s, nq), h (s, m)), w->Z (s + 1, nq) and
 * the node terms kept for the Newton matrix; w->Dh rows 1..s. Returns the rows' convergence scale
 * (galerkin.residual: max(base, max|D| max|p_j|, dt max|force_j|)) and each node's potential energy in
 * potentials (r,). `again`: a later call of the same step, whose poses of the nodes at x^0 = q^k (P[j] = e_0:
 * Lobatto's first node) are still in w->world, w->S. */
static double residual(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, const double *weight,
                       const double *P, const double *D, int64_t m, const int64_t *rows, const double *torque,
                       const double *force_vector, const double *p1, double dt, const double *lam, double base,
                       int again, double *potentials)
{
    const int64_t nq = tree->nq, n1 = nq + 1;
    double scale = base, spread = 0.0, kinetic, potential;
    for (int64_t k = 0; k < r * (s + 1); ++k) spread = fmax(spread, fabs(D[k]));
    memset(w->Z, 0, (size_t)((s + 1) * nq) * sizeof(double));
    memset(w->Zstart, 0, (size_t)(3 * tree->nball) * sizeof(double));
    for (int64_t j = 0; j < r; ++j) {
        const double *Pj = P + j * (s + 1), *Dj = D + j * (s + 1), *tj = torque + j * nq, wdt = weight[j] * dt;
        for (int64_t i = 0; i < nq; ++i) {
            double q = 0.0, v = 0.0;
            for (int64_t a = 0; a <= s; ++a) {
                q += Pj[a] * w->x[a * nq + i];
                v += Dj[a] * w->x[a * nq + i];
            }
            w->qn[i] = q;
            w->vn[i] = v / dt;
        }
        if (tree->nball) chart_node_in(tree, w, j);
        double *world = w->world + j * 16 * n1, *S = w->S + j * 6 * n1;
        int start = Pj[0] == 1.0;  /* the node sits at x^0, fixed through the step (its charts' turns: 1) */
        for (int64_t a = 1; a <= s; ++a) start = start && Pj[a] == 0.0;
        if (!(again && start))
            forward_kinematics(tree, w->qn, tree->nball ? w->turn + j * 9 * tree->nball : NULL, w->ball, world, S);
        tree_terms(tree, force_vector + j * 3 * tree->nforce, world, S, w->qn, w->vn, w->V, w->Sdot + j * 6 * nq,
                   w->Ic + j * INERTIA * nq, w->H + j * 6 * nq, w->Wr + j * 6 * nq, w->K + j * 9 * nq, w->p, w->g,
                   w->Q, &kinetic, &potential);
        potentials[j] = potential;
        if (tree->nball) chart_node_terms(tree, w, j, s, Pj, Dj, wdt, dt, tj);
        for (int64_t i = 0; i < nq; ++i) {
            const double v = w->vn[i];
            const double force = w->g[i] + w->Q[i] - tree->dof_damping[i] * v
                                 + tree->dof_motor_gain[i] * (tree->dof_motor_velocity[i] - v) + tj[i];
            scale = fmax(scale, fmax(spread * fabs(w->p[i]), dt * fabs(force)));
            if (w->ball[i] >= 0) continue;  /* chart columns: chart_node_terms */
            for (int64_t a = 0; a <= s; ++a)
                w->Z[a * nq + i] += wdt * (Pj[a] * force + Dj[a] / dt * w->p[i]);
        }
    }
    memcpy(w->f, w->Z, (size_t)(s * nq) * sizeof(double));
    add(nq, p1, w->f);
    if (tree->nball) chart_rows_finish(tree, w, s, p1);
    for (int64_t a = 0; a < s && m; ++a) {  /* rows at x^1..x^s; multipliers on rows 0..s-1 */
        const double *Dh = w->Dh + a * m * nq, *mu = lam + a * m;
        for (int64_t i = 0; i < m; ++i)
            for (int64_t k = 0; k < nq; ++k) w->f[a * nq + k] -= Dh[i * nq + k] * mu[i];
        loop_rows_at(tree, w, m, rows, w->x + (a + 1) * nq, w->Dh + (a + 1) * m * nq, w->f + s * nq + a * m);
    }
    return scale;
}

/* a . b over n = 12 r entries in four independent sums (the adds pipeline instead of waiting on one another) */
static double dot_w(int64_t n, const double *restrict a, const double *restrict b)
{
    double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0;
    for (int64_t q = 0; q < n; q += 4) {
        t0 += a[q] * b[q];
        t1 += a[q + 1] * b[q + 1];
        t2 += a[q + 2] * b[q + 2];
        t3 += a[q + 3] * b[q + 3];
    }
    return (t0 + t1) + (t2 + t3);
}

/* The Newton matrix's tree form (galerkin_newton.tree_form on plain joints): per coordinate i its vectors
 * U[i][a], xv[i][a] (a = 0..s, 12 r each) and own block Dloc[i] (rows a = 0..s-1, columns g = 1..s). */
static void tree_form(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, const double *weight,
                      const double *P, const double *D, double dt)
{
    const int64_t nq = tree->nq, W = 12 * r, n1 = nq + 1;
    for (int64_t i = 0; i < nq; ++i) {
        double *U = w->U + i * (s + 1) * W, *xv = w->xv + i * (s + 1) * W, *Dl = w->Dloc + i * s * s;
        const double k = tree->dof_stiffness[i], cd = tree->dof_damping[i] + tree->dof_motor_gain[i];
        for (int64_t a = 0; a < s * s; ++a) Dl[a] = 0.0;
        for (int64_t j = 0; j < r; ++j) {
            const double *Pj = P + j * (s + 1), *Dj = D + j * (s + 1), wdt = weight[j] * dt;
            const double *S = w->S + j * 6 * n1 + 6 * i, *Sd = w->Sdot + j * 6 * nq + 6 * i;
            double IcS[6], G[6], X[6];
            axis_terms(w->Ic + j * INERTIA * nq + INERTIA * i, w->H + j * 6 * nq + 6 * i,
                       w->Wr + j * 6 * nq + 6 * i, w->K + j * 9 * nq + 9 * i, S, Sd, IcS, G, X);
            for (int64_t a = 0; a <= s; ++a) {
                double *u = U + a * W + 12 * j, *x = xv + a * W + 12 * j;
                const double pa = Pj[a], da = Dj[a] / dt;
                for (int e = 0; e < 6; ++e) {
                    u[e] = pa * S[e];
                    u[6 + e] = pa * Sd[e] + da * S[e];
                    x[e] = wdt * pa * X[e];
                    x[6 + e] = wdt * (pa * G[e] + da * IcS[e]);
                }
            }
            for (int64_t a = 0; a < s; ++a)  /* stiffness and damping: sum_j wdt P_ja (P_jg k + D_jg / dt c) */
                for (int64_t g = 0; g < s; ++g)
                    Dl[a * s + g] -= wdt * Pj[a] * (Pj[g + 1] * k + Dj[g + 1] / dt * cd);
        }
        for (int64_t a = 0; a < s; ++a)
            for (int64_t g = 0; g < s; ++g) Dl[a * s + g] += dot_w(W, U + (g + 1) * W, xv + a * W);
    }
}

/* inv = A^-1 for A (n, n), n <= 12, by Gauss-Jordan with partial pivoting; 1 when singular or not finite. */
static int invert_small(int64_t n, const double *A, double *inv)
{
    double M[12][24];
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            M[i][j] = A[i * n + j];
            M[i][n + j] = i == j ? 1.0 : 0.0;
        }
    for (int64_t k = 0; k < n; ++k) {
        int64_t best = k;
        for (int64_t i = k + 1; i < n; ++i)
            if (fabs(M[i][k]) > fabs(M[best][k])) best = i;
        if (M[best][k] == 0.0) return 1;
        for (int64_t j = 0; j < 2 * n; ++j) { double t = M[k][j]; M[k][j] = M[best][j]; M[best][j] = t; }
        const double pivot = M[k][k];
        for (int64_t j = 0; j < 2 * n; ++j) M[k][j] /= pivot;
        for (int64_t i = 0; i < n; ++i) {
            if (i == k || M[i][k] == 0.0) continue;
            const double l = M[i][k];
            for (int64_t j = 0; j < 2 * n; ++j) M[i][j] -= l * M[k][j];
        }
    }
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            inv[i * n + j] = M[i][n + j];
            if (!isfinite(inv[i * n + j])) return 1;
        }
    return 0;
}

/* The live components of the node vectors (galerkin_newton's 12 r entries of U and x): those nonzero in some
 * coordinate's U[a] or x[a] at this iterate. A dead component stays zero in every Obar, c, X, obar and z of the
 * elimination (each is built from U and x by products and sums), so factor and solve run on the live ones only,
 * with the same sums less their zero terms. A planar mechanism (parallel hinge axes, motion in the plane normal
 * to them) keeps three of each six twist and wrench components: half of them, a quarter of the W x W work. The
 * count is padded with dead components to a multiple of 4 (blocks the compiler vectorises). Compacts U and xv in
 * place (each vector's first Wc entries, stride W unchanged) and sets w->Wc. */
static void compact_components(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r)
{
    const int64_t nq = tree->nq, W = 12 * r, vectors = nq * (s + 1);
    int64_t Wc = 0, *live = w->live;
    for (int64_t e = 0; e < W; ++e) live[e] = 0;
    for (int64_t v = 0; v < vectors; ++v) {
        const double *U = w->U + v * W, *xv = w->xv + v * W;
        for (int64_t e = 0; e < W; ++e) live[e] |= (U[e] != 0.0) | (xv[e] != 0.0);  /* no branches */
    }
    for (int64_t e = 0; e < W; ++e) Wc += live[e];
    for (int64_t e = W - 1; e >= 0 && Wc % 4; --e)
        if (!live[e]) { live[e] = 1; ++Wc; }
    w->Wc = Wc;
    if (Wc == W) return;
    int64_t k = 0;
    for (int64_t e = 0; e < W; ++e)
        if (live[e]) live[k++] = e;
    for (int64_t v = 0; v < vectors; ++v) {  /* live[k] >= k: a forward gather in place */
        double *U = w->U + v * W, *xv = w->xv + v * W;
        for (int64_t q = 0; q < Wc; ++q) { U[q] = U[live[q]]; xv[q] = xv[live[q]]; }
    }
}

/* y += a x over n entries, n a multiple of 4 (x and y do not overlap) */
static void axpy4(int64_t n, double a, const double *restrict x, double *restrict y)
{
    for (int64_t b = 0; b < n; b += 4)
        for (int64_t q = b; q < b + 4; ++q) y[q] += a * x[q];
}

/* At one node, one chart: d gamma / d phi, d eta / d phi, d eta / d omega (3x3, [i][k]) for body-axes turns phi
 * and body angular velocities omega (galerkin_newton.chart_node_derivatives), E the chart's world axes (3, 6). */
static void chart_node_derivatives(const double *E, const double *VP, const double *Ic, const double *H,
                                   const double *Wr, const double *K, double ks, const double *Jri, double *gp,
                                   double *ep, double *eo)
{
    double Sd[3][6], IcE[3][6], IcSd[3][6], moved[3][3];
    const double trK = K[0] + K[4] + K[8];
    for (int k = 0; k < 3; ++k) {
        ad_twist(VP, E + 6 * k, Sd[k]);
        inertia_apply(Ic, E + 6 * k, IcE[k]);
        inertia_apply(Ic, Sd[k], IcSd[k]);
        const double *wk = E + 6 * k, *vk = wk + 3;
        double vF[3];
        cross3(vk, Wr + 3, vF);
        for (int m = 0; m < 3; ++m) moved[k][m] = dot3(K + 3 * m, wk) - wk[m] * trK + vF[m];
    }
    for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 3; ++k) {
            const double *Ei = E + 6 * i;
            double t1[6], t2[6];
            ad_twist(Sd[k], Ei, t1);
            ad_twist(E + 6 * k, Ei, t2);
            eo[3 * i + k] = dot6(Ei, IcE[k]);
            ep[3 * i + k] = dot6(Ei, IcSd[k]);
            gp[3 * i + k] = dot6(t1, H) + dot6(Sd[i], IcSd[k]) + dot6(t2, Wr) + dot3(Ei, moved[k]) - ks * Jri[3 * i + k];
        }
}

/* The charts' part of the tree form (galerkin_newton.tree_form): each chart coordinate's columns U, xv (a = 1..s)
 * from the chart axes S = J_R^T E, Sdot = ad(V_P) S + N^T E with the chart's subtree terms; row 0 (U, xv at
 * a = 0) the C1 turn's minus sum_a J_L(xi^a)^-T times row a's; the own blocks into w->Dball. */
static void chart_tree_form(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, const double *weight,
                            const double *P, const double *D, double dt)
{
    const int64_t nq = tree->nq, W = 12 * r, n1 = nq + 1, nb = tree->nball, S3 = 3 * s;
    for (int64_t b = 0; b < nb; ++b) {
        const int64_t *k = tree->ball_dofs + 3 * b, base = k[0];
        const double ks = tree->ball_stiffness[b];
        double dZ[5][5][9], dstart[5][9];
        memset(dZ, 0, sizeof dZ);
        memset(dstart, 0, sizeof dstart);
        for (int64_t j = 0; j < r; ++j) {
            const int64_t at = j * nb + b;
            const double *Pj = P + j * (s + 1), *Dj = D + j * (s + 1), wdt = weight[j] * dt;
            const double *E = w->S + j * 6 * n1 + 6 * base;
            const double *Ic = w->Ic + j * INERTIA * nq + INERTIA * base, *H = w->H + j * 6 * nq + 6 * base;
            const double *Wr = w->Wr + j * 6 * nq + 6 * base, *K = w->K + j * 9 * nq + 9 * base;
            const double *xi = w->cxi + 3 * at, *xid = w->cxid + 3 * at, *rot = w->turn + 9 * at;
            const double *g = w->cg + 3 * at, *eta = w->ceta + 3 * at;
            const double *Vp = w->cVP + 6 * at;
            double JL[9], JR[9], N[9], Sc[3][6], Sdc[3][6];
            left_jacobian(xi, JL);
            for (int i = 0; i < 3; ++i)
                for (int e = 0; e < 3; ++e) JR[3 * i + e] = JL[3 * e + i];
            left_jacobian_transpose_derivative(xi, xid, N);
            for (int c = 0; c < 3; ++c) {
                double t[6];
                for (int e = 0; e < 6; ++e) {
                    Sc[c][e] = JL[3 * c] * E[e] + JL[3 * c + 1] * E[6 + e] + JL[3 * c + 2] * E[12 + e];
                    t[e] = N[c] * E[e] + N[3 + c] * E[6 + e] + N[6 + c] * E[12 + e];
                }
                ad_twist(Vp, Sc[c], Sdc[c]);
                for (int e = 0; e < 6; ++e) Sdc[c][e] += t[e];
                double IcS[6], G[6], X[6];
                axis_terms(Ic, H, Wr, K, Sc[c], Sdc[c], IcS, G, X);
                for (int64_t a = 1; a <= s; ++a) {
                    double *u = w->U + (k[c] * (s + 1) + a) * W + 12 * j, *x = w->xv + (k[c] * (s + 1) + a) * W + 12 * j;
                    const double pa = Pj[a], da = Dj[a] / dt;
                    for (int e = 0; e < 6; ++e) {
                        u[e] = pa * Sc[c][e];
                        u[6 + e] = pa * Sdc[c][e] + da * Sc[c][e];
                        x[e] = wdt * pa * X[e];
                        x[6 + e] = wdt * (pa * G[e] + da * IcS[e]);
                    }
                }
                double sig[6], sd[6];  /* the C1 turn's pair (exp(xi_j) E, ad(V_P) exp(xi_j) E) */
                for (int e = 0; e < 6; ++e) sig[e] = rot[3 * c] * E[e] + rot[3 * c + 1] * E[6 + e] + rot[3 * c + 2] * E[12 + e];
                ad_twist(Vp, sig, sd);
                axis_terms(Ic, H, Wr, K, sig, sd, IcS, G, X);
                double *u0 = w->U0 + c * W + 12 * j, *x0 = w->x0 + c * W + 12 * j;
                for (int e = 0; e < 6; ++e) {
                    u0[e] = sig[e];
                    u0[6 + e] = sd[e];
                    x0[e] = wdt * X[e];
                    x0[6 + e] = wdt * G[e];
                }
            }
            /* own block terms at node j (galerkin_newton._chart_own_blocks) */
            double gp[9], ep[9], eo[9], TJg[9], TJe[9], HNe[9], mx[3] = {-xi[0], -xi[1], -xi[2]}, hg[9], rh[9];
            chart_node_derivatives(E, Vp, Ic, H, Wr, K, ks, w->cJri + 9 * at, gp, ep, eo);
            left_jacobian_transpose_derivative(mx, g, TJg);
            left_jacobian_transpose_derivative(mx, eta, TJe);
            for (int e = 0; e < 9; ++e) { TJg[e] = -TJg[e]; TJe[e] = -TJe[e]; }
            jacobian_hessian(xi, eta, xid, HNe);
            hat3(g, hg);
            memset(rh, 0, sizeof rh);
            mat3_acc(1.0, rot, 0, hg, 0, rh);  /* rot hat(g) */
            const double cd[3] = {tree->dof_damping[k[0]] + tree->dof_motor_gain[k[0]],
                                  tree->dof_damping[k[1]] + tree->dof_motor_gain[k[1]],
                                  tree->dof_damping[k[2]] + tree->dof_motor_gain[k[2]]};
            for (int64_t bb = 1; bb <= s; ++bb) {
                const double Pb = Pj[bb], Db = Dj[bb] / dt;
                double dphi[9], domega[9], dgamma[9] = {0.0}, deta[9] = {0.0};
                for (int e = 0; e < 9; ++e) {
                    dphi[e] = Pb * JR[e];
                    domega[e] = Db * JR[e] + Pb * N[e];
                }
                mat3_acc(1.0, gp, 0, dphi, 0, dgamma);
                mat3_acc(1.0, ep, 1, domega, 0, dgamma);
                for (int i = 0; i < 3; ++i)
                    for (int e = 0; e < 3; ++e) dgamma[3 * i + e] -= cd[i] * domega[3 * i + e];
                mat3_acc(1.0, ep, 0, dphi, 0, deta);
                mat3_acc(1.0, eo, 0, domega, 0, deta);
                for (int64_t a = 1; a <= s; ++a) {
                    const double Pa = Pj[a], Da = Dj[a] / dt;
                    double *out = dZ[a][bb], M[9];
                    for (int e = 0; e < 9; ++e) {
                        const int i = e / 3, c = e % 3;
                        out[e] += wdt * (Pa * Pb * TJg[e] + Pa * (Pb * HNe[e] + Db * TJe[3 * c + i]) + Da * Pb * TJe[e]);
                        M[e] = Pa * N[e] + Da * JR[e];
                    }
                    mat3_acc(wdt * Pa, JL, 0, dgamma, 0, out);
                    mat3_acc(wdt, M, 1, deta, 0, out);
                }
                mat3_acc(-wdt * Pb, rh, 0, JR, 0, dstart[bb]);
                mat3_acc(wdt, rot, 0, dgamma, 0, dstart[bb]);
            }
        }
        /* row 0 and the own block: J_L(xi^a)^-T for a = 1..s */
        double JLinvT[5][9];
        for (int64_t a = 1; a <= s; ++a) {
            const double xa[3] = {w->x[a * nq + k[0]], w->x[a * nq + k[1]], w->x[a * nq + k[2]]};
            double JL[9], inv[9];
            left_jacobian(xa, JL);
            invert_small(3, JL, inv);
            for (int i = 0; i < 3; ++i)
                for (int e = 0; e < 3; ++e) JLinvT[a][3 * i + e] = inv[3 * e + i];
        }
        for (int c = 0; c < 3; ++c) {
            double *u = w->U + k[c] * (s + 1) * W, *x = w->xv + k[c] * (s + 1) * W;
            memcpy(u, w->U0 + c * W, (size_t)W * sizeof(double));
            memcpy(x, w->x0 + c * W, (size_t)W * sizeof(double));
            for (int64_t a = 1; a <= s; ++a)
                for (int d = 0; d < 3; ++d) {
                    const double l = JLinvT[a][3 * c + d];
                    const double *ua = w->U + (k[d] * (s + 1) + a) * W, *xa = w->xv + (k[d] * (s + 1) + a) * W;
                    for (int64_t e = 0; e < W; ++e) {
                        u[e] -= l * ua[e];
                        x[e] -= l * xa[e];
                    }
                }
        }
        double *Db = w->Dball + b * S3 * S3;
        for (int64_t bb = 1; bb <= s; ++bb) {
            double row0[9], y[3], z[3], T[9] = {0.0};
            const double xb[3] = {w->x[bb * nq + k[0]], w->x[bb * nq + k[1]], w->x[bb * nq + k[2]]};
            memcpy(row0, dstart[bb], sizeof row0);
            for (int i = 0; i < 3; ++i) z[i] = w->Z[bb * nq + k[i]];
            mat3_vec(JLinvT[bb], z, y);
            left_jacobian_transpose_derivative(xb, y, T);
            mat3_acc(1.0, JLinvT[bb], 0, T, 0, row0);
            for (int64_t a = 1; a <= s; ++a) mat3_acc(-1.0, JLinvT[a], 0, dZ[a][bb], 0, row0);
            for (int64_t a = 0; a < s; ++a) {
                const double *blk = a == 0 ? row0 : dZ[a][bb];
                for (int i = 0; i < 3; ++i)
                    for (int e = 0; e < 3; ++e) Db[(a * 3 + i) * S3 + (bb - 1) * 3 + e] = blk[3 * i + e];
            }
        }
    }
}

/* The elimination group of coordinate i: 1 (a plain coordinate), 3 (the first of a chart's three), 0 (the rest of
 * a chart); and the group holding coordinate p (a chart's first coordinate, or p). */
static int group_size(const symplex_tree *tree, const gworkspace *w, int64_t i)
{
    const int64_t b = w->ball[i];
    return b < 0 ? 1 : tree->ball_dofs[3 * b] == i ? 3 : 0;
}

static int64_t group_of(const symplex_tree *tree, const gworkspace *w, int64_t p)
{
    return p < 0 ? -1 : w->ball[p] >= 0 ? tree->ball_dofs[3 * w->ball[p]] : p;
}

/* Row `row` = (a, c) of a group at coordinate f (d members, unknowns control-point-major): U[f + c][a + shift]
 * of the coordinate vectors (shift 0: its row vectors R, x; shift 1: its columns U, Yc). */
static const double *group_row(const double *V, int64_t f, int64_t d, int64_t s, int64_t W, int64_t row, int shift)
{
    return V + ((f + row % d) * (s + 1) + row / d + shift) * W;
}

/* gfactor over elimination groups (galerkin_newton.factor): a chart's three coordinates are one group of 3 s
 * unknowns with its own block w->Dball; used when the tree has charts. Returns 1 when a pivot is singular. */
static int group_factor(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, double *ops)
{
    const int64_t nq = tree->nq, W = 12 * r;
    memset(w->Obar, 0, (size_t)(nq * W * W) * sizeof(double));
    for (int64_t f = nq - 1; f >= 0; --f) {
        const int64_t d = group_size(tree, w, f), n = s * d;
        if (!d) continue;
        double *O = w->Obar + f * W * W, *OU = w->OU3, *RO = w->RO3, Dm[144];
        double *Dinv = w->Dinv3 + f * 3 * s * s, *Xg = w->Xg + f * s * W, *c = w->c + f * W * s;
        for (int64_t p = 0; p < W; ++p)
            for (int64_t col = 0; col < n; ++col)
                OU[p * n + col] = dot_w(W, O + p * W, group_row(w->U, f, d, s, W, col, 1));
        for (int64_t row = 0; row < n; ++row) {
            const double *R = group_row(w->U, f, d, s, W, row, 0);
            double *ROa = RO + row * W;
            for (int64_t q = 0; q < W; ++q) ROa[q] = 0.0;
            for (int64_t p = 0; p < W; ++p)
                if (R[p] != 0.0) axpy4(W, R[p], O + p * W, ROa);
            for (int64_t col = 0; col < n; ++col) {
                double t = d == 1 ? w->Dloc[f * s * s + row * s + col]
                                  : w->Dball[w->ball[f] * n * n + row * n + col];
                for (int64_t p = 0; p < W; ++p) t += R[p] * OU[p * n + col];
                Dm[row * n + col] = t;  /* (R Omega) U^T would be the same sum in another order */
            }
        }
        if (invert_small(n, Dm, Dinv)) return 1;
        for (int64_t row = 0; row < n; ++row) {  /* RO <- x + R Omega */
            const double *x = group_row(w->xv, f, d, s, W, row, 0);
            for (int64_t q = 0; q < W; ++q) RO[row * W + q] += x[q];
        }
        for (int64_t a = 0; a < n; ++a) {
            double *Xa = Xg + a * W;
            for (int64_t q = 0; q < W; ++q) Xa[q] = 0.0;
            for (int64_t b = 0; b < n; ++b) axpy4(W, -Dinv[a * n + b], RO + b * W, Xa);
        }
        for (int64_t col = 0; col < n; ++col) {
            const double *y = group_row(w->xv, f, d, s, W, col, 1);
            for (int64_t p = 0; p < W; ++p) c[p * n + col] = y[p] + OU[p * n + col];
        }
        *ops += (double)(3 * W * W * n + W * n * n + n * n * n + W * n * n);
        const int64_t parent = group_of(tree, w, tree->dof_parent[f]);
        if (parent >= 0) {  /* Obar[parent] += Omega + c X */
            double *Op = w->Obar + parent * W * W;
            for (int64_t p = 0; p < W; ++p) {
                double *row = Op + p * W;
                add(W, O + p * W, row);
                for (int64_t col = 0; col < n; ++col) axpy4(W, c[p * n + col], Xg + col * W, row);
            }
        }
    }
    return 0;
}

/* The solves' hand-up of a coordinate or group (n unknowns xs) to its parent: obar[parent] += o + c xs over the
 * first `width` components (c (width, n)). */
static void obar_up(int64_t width, int64_t n, const double *o, const double *c, const double *xs, double *parent)
{
    for (int64_t p = 0; p < width; ++p) {
        double v = o[p];
        for (int64_t k = 0; k < n; ++k) v += c[p * n + k] * xs[k];
        parent[p] += v;
    }
}

/* gsolve over elimination groups (galerkin_newton.solve): rhs (s nq, r.ravel() order) <- J^-1 rhs. */
static void group_solve(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, double *rhs, double *ops)
{
    const int64_t nq = tree->nq, W = 12 * r;
    memset(w->obar, 0, (size_t)(nq * W) * sizeof(double));
    for (int64_t f = nq - 1; f >= 0; --f) {
        const int64_t d = group_size(tree, w, f), n = s * d;
        if (!d) continue;
        const double *Dinv = w->Dinv3 + f * 3 * s * s, *c = w->c + f * W * s;
        double *o = w->obar + f * W, *xs = w->xs + f * s, t[12];
        for (int64_t row = 0; row < n; ++row) {
            const double *R = group_row(w->U, f, d, s, W, row, 0);
            t[row] = rhs[(row / d) * nq + f + row % d] - dot_w(W, R, o);
        }
        for (int64_t a = 0; a < n; ++a) {
            double u = 0.0;
            for (int64_t b = 0; b < n; ++b) u += Dinv[a * n + b] * t[b];
            xs[a] = u;
        }
        *ops += (double)(2 * W * n + n * n);
        const int64_t parent = group_of(tree, w, tree->dof_parent[f]);
        if (parent >= 0) obar_up(W, n, o, c, xs, w->obar + parent * W);
    }
    for (int64_t f = 0; f < nq; ++f) {
        const int64_t d = group_size(tree, w, f), n = s * d;
        if (!d) continue;
        const int64_t parent = group_of(tree, w, tree->dof_parent[f]);
        const double *zp = parent >= 0 ? w->z + parent * W : NULL, *Xg = w->Xg + f * s * W, *xs = w->xs + f * s;
        double *z = w->z + f * W, delta[12];
        for (int64_t a = 0; a < n; ++a) {
            const double t = xs[a] + (zp ? dot_w(W, Xg + a * W, zp) : 0.0);
            delta[a] = t;
            rhs[(a / d) * nq + f + a % d] = t;
        }
        for (int64_t q = 0; q < W; ++q) z[q] = zp ? zp[q] : 0.0;
        for (int64_t k = 0; k < n; ++k) axpy4(W, delta[k], group_row(w->U, f, d, s, W, k, 1), z);
        *ops += (double)(2 * W * n);
    }
}

/* row = c_1 X_1 + .. + c_S X_S (add: row += that) over n entries (n a multiple of 4, X_k = X + (k - 1) n): one
 * vectorised pass (axpy4) per k, the sums in the order of a loop over k per entry */
static inline __attribute__((always_inline)) void hand_up_row(int64_t n, int64_t S, int add, const double *restrict c,
                                                              const double *restrict X, double *restrict row)
{
    if (!add)
        for (int64_t q = 0; q < n; ++q) row[q] = 0.0;
    for (int64_t k = 0; k < S; ++k) axpy4(n, c[k], X + k * n, row);
}

/* OU (Wc, S) = Omega U^T for Omega (Wc x Wc) and the S vectors U (stride W): per row four partial sums a column
 * (lanes of the blocks of 4), S a constant where inlined, so that the sums vectorise and pipeline */
static inline __attribute__((always_inline)) void omega_columns(int64_t Wc, int64_t S, const double *Omega,
                                                                const double *U, int64_t W, double *OU)
{
    const double *U1 = U, *U2 = U + W * (S > 1), *U3 = U + 2 * W * (S > 2), *U4 = U + 3 * W * (S > 3);
    for (int64_t p = 0; p < Wc; ++p) {
        const double *Op = Omega + p * Wc;
        double t0 = 0.0, t1 = 0.0, t2 = 0.0, t3 = 0.0, u0 = 0.0, u1 = 0.0, u2 = 0.0, u3 = 0.0;
        for (int64_t q = 0; q < Wc; q += 2) {  /* two partial sums a column: even and odd q */
            const double o = Op[q], e = Op[q + 1];
            t0 += o * U1[q];
            u0 += e * U1[q + 1];
            if (S > 1) { t1 += o * U2[q]; u1 += e * U2[q + 1]; }
            if (S > 2) { t2 += o * U3[q]; u2 += e * U3[q + 1]; }
            if (S > 3) { t3 += o * U4[q]; u3 += e * U4[q + 1]; }
        }
        const double t[4] = {t0 + u0, t1 + u1, t2 + u2, t3 + u3};
        for (int64_t k = 0; k < S; ++k) OU[p * S + k] = t[k];
    }
}

/* Obar[parent] (Wc x Wc at into) = into + Omega + c X, or = Omega + c X when adopt (Omega NULL: 0; into may be
 * Omega, updated in place) */
static void hand_up(int64_t Wc, int64_t s, const double *Omega, const double *c, const double *X, int adopt,
                    double *into)
{
    for (int64_t p = 0; p < Wc; ++p) {
        const double *own = Omega ? Omega + p * Wc : NULL, *cp = c + p * s;
        double *row = into + p * Wc, sum[64];
        double *dst = adopt ? row : sum;  /* accumulating: Omega + c X first, then added (Wc <= 12 r <= 60) */
        const int add = own != NULL;
        if (own && own != dst) memcpy(dst, own, (size_t)Wc * sizeof(double));
        switch (s) {  /* the branches on add fold away in each copy */
        case 1: if (add) hand_up_row(Wc, 1, 1, cp, X, dst); else hand_up_row(Wc, 1, 0, cp, X, dst); break;
        case 2: if (add) hand_up_row(Wc, 2, 1, cp, X, dst); else hand_up_row(Wc, 2, 0, cp, X, dst); break;
        case 3: if (add) hand_up_row(Wc, 3, 1, cp, X, dst); else hand_up_row(Wc, 3, 0, cp, X, dst); break;
        default: if (add) hand_up_row(Wc, 4, 1, cp, X, dst); else hand_up_row(Wc, 4, 0, cp, X, dst); break;
        }
        if (!adopt)
            for (int64_t q = 0; q < Wc; ++q) row[q] += sum[q];
    }
}

/* Leaves-to-root elimination (galerkin_newton.factor) on the Wc live components (compact_components): per
 * coordinate, Omega = Obar, D = Dloc + R Omega U^T, X = -D^-1 (x + R Omega), c = Yc^T + Omega U^T,
 * Obar[parent] += Omega + c X (R = U[0..s-1], columns U[1..s], row vectors xv[0..s-1], Yc = xv[1..s]). A
 * coordinate's Obar is a slot of w->Obar (w->held[i], -1 while it is zero): the first child handed up to a parent
 * gives it its own slot, updated in place (a chain hands one Wc x Wc block down its length). Trees without
 * charts only (with charts: group_factor, on all W components). Returns 1 when a pivot block is singular. */
static int gfactor(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, double *ops)
{
    const int64_t nq = tree->nq, W = 12 * r, Wc = w->Wc;
    for (int64_t i = 0; i < nq; ++i) w->held[i] = -1;
    for (int64_t i = nq - 1; i >= 0; --i) {
        const int64_t slot = w->held[i];
        double *O = slot >= 0 ? w->Obar + slot * W * W : NULL, *OU = w->OU, *RO = w->RO, Dm[16];
        const double *U = w->U + i * (s + 1) * W, *xv = w->xv + i * (s + 1) * W, *Dl = w->Dloc + i * s * s;
        double *Dinv = w->Dinv + i * s * s, *Xg = w->Xg + i * s * W, *c = w->c + i * W * s;
        switch (O ? s : 0) {  /* OU = Omega U^T (zero while Omega is) */
        case 0: for (int64_t p = 0; p < Wc * s; ++p) OU[p] = 0.0; break;
        case 1: omega_columns(Wc, 1, O, U + W, W, OU); break;
        case 2: omega_columns(Wc, 2, O, U + W, W, OU); break;
        case 3: omega_columns(Wc, 3, O, U + W, W, OU); break;
        default: omega_columns(Wc, 4, O, U + W, W, OU); break;
        }
        for (int64_t a = 0; a < s; ++a) {
            double *ROa = RO + a * Wc;
            const double *Ra = U + a * W;
            for (int64_t q = 0; q < Wc; ++q) ROa[q] = 0.0;
            for (int64_t p = 0; p < Wc && O; ++p)
                if (Ra[p] != 0.0) axpy4(Wc, Ra[p], O + p * Wc, ROa);
            for (int64_t k = 0; k < s; ++k)  /* D = Dloc + (R Omega) U^T, contiguous sums */
                Dm[a * s + k] = Dl[a * s + k] + (O ? dot_w(Wc, ROa, U + (k + 1) * W) : 0.0);
        }
        if (invert_small(s, Dm, Dinv)) return 1;
        for (int64_t b = 0; b < s; ++b)  /* RO <- x + R Omega */
            for (int64_t q = 0; q < Wc; ++q) RO[b * Wc + q] += xv[b * W + q];
        for (int64_t a = 0; a < s; ++a) {
            double *Xa = Xg + a * Wc;
            for (int64_t q = 0; q < Wc; ++q) Xa[q] = 0.0;
            for (int64_t b = 0; b < s; ++b) axpy4(Wc, -Dinv[a * s + b], RO + b * Wc, Xa);
        }
        for (int64_t p = 0; p < Wc; ++p)
            for (int64_t k = 0; k < s; ++k) c[p * s + k] = xv[(k + 1) * W + p] + OU[p * s + k];
        *ops += (double)((O ? 2 : 0) * Wc * Wc * s + Wc * Wc * s + Wc * s * s + s * s * s + Wc * s * s);
        const int64_t parent = tree->dof_parent[i];
        if (parent >= 0) {
            const int adopt = w->held[parent] < 0;
            if (adopt) w->held[parent] = slot >= 0 ? slot : i;
            hand_up(Wc, s, O, c, Xg, adopt, w->Obar + w->held[parent] * W * W);
        }
    }
    return 0;
}

/* rhs (s nq, in r.ravel() order: a nq + i) <- J^-1 rhs with the factor (galerkin_newton.solve), on the Wc live
 * components of gfactor. */
static void gsolve(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, double *rhs, double *ops)
{
    const int64_t nq = tree->nq, W = 12 * r, Wc = w->Wc;
    memset(w->obar, 0, (size_t)(nq * W) * sizeof(double));
    for (int64_t i = nq - 1; i >= 0; --i) {
        const double *U = w->U + i * (s + 1) * W, *Dinv = w->Dinv + i * s * s, *c = w->c + i * W * s;
        double *o = w->obar + i * W, *xs = w->xs + i * s, t[4];
        for (int64_t a = 0; a < s; ++a) t[a] = rhs[a * nq + i] - dot_w(Wc, U + a * W, o);
        for (int64_t a = 0; a < s; ++a) {
            double u = 0.0;
            for (int64_t b = 0; b < s; ++b) u += Dinv[a * s + b] * t[b];
            xs[a] = u;
        }
        *ops += (double)(2 * Wc * s + s * s);
        const int64_t parent = tree->dof_parent[i];
        if (parent >= 0) obar_up(Wc, s, o, c, xs, w->obar + parent * W);
    }
    for (int64_t i = 0; i < nq; ++i) {
        const int64_t parent = tree->dof_parent[i];
        const double *zp = parent >= 0 ? w->z + parent * W : NULL, *U = w->U + i * (s + 1) * W;
        const double *Xg = w->Xg + i * s * W, *xs = w->xs + i * s;
        double *z = w->z + i * W, delta[4];
        for (int64_t a = 0; a < s; ++a) {
            delta[a] = xs[a] + (zp ? dot_w(Wc, Xg + a * Wc, zp) : 0.0);
            rhs[a * nq + i] = delta[a];
        }
        for (int64_t q = 0; q < Wc; ++q) z[q] = zp ? zp[q] : 0.0;
        for (int64_t k = 0; k < s; ++k) axpy4(Wc, delta[k], U + (k + 1) * W, z);
        *ops += (double)(2 * Wc * s);
    }
}

/* gsolve, or group_solve on a tree with charts */
static void solve_form(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, double *rhs, double *ops)
{
    if (tree->nball) group_solve(tree, w, s, r, rhs, ops);
    else gsolve(tree, w, s, r, rhs, ops);
}

/* The Newton step (delta (s nq), dlam (s m)) into w->sol[0 .. s nq + s m) from the factored tree
 * (galerkin_newton.newton_direction, galerkin.loop_blocks): loop rows and curvature columns border it.
 * Returns 1 when the bordered system is singular. */
static int direction(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, int64_t m, const int64_t *rows,
                     const double *lam, double *ops)
{
    const int64_t nq = tree->nq, n = s * nq;
    double *a = w->sol;
    for (int64_t k = 0; k < n; ++k) a[k] = -w->f[k];
    solve_form(tree, w, s, r, a, ops);
    if (!m) return 0;
    int64_t cols = 1, nc = 0;
    for (int64_t b = 0; b < s; ++b)  /* G1^T columns: Dh(x^b) in block b */
        for (int64_t i = 0; i < m; ++i) {
            double *col = w->sol + cols++ * n;
            memset(col, 0, (size_t)n * sizeof(double));
            memcpy(col + b * nq, w->Dh + (b * m + i) * nq, (size_t)nq * sizeof(double));
        }
    for (int64_t b = 1; b < s; ++b) {  /* curvature d(Dh(x^b)^T lam^b)/dx^b_i by central differences */
        const double *Dh = w->Dh + b * m * nq, *mu = lam + b * m;
        double *xb = w->x + b * nq;
        for (int64_t i = 0; i < nq; ++i) {
            int nonzero = 0;
            for (int64_t k = 0; k < m && !nonzero; ++k) nonzero = Dh[k * nq + i] != 0.0;
            if (!nonzero) continue;
            double *col = w->sol + cols * n, *half = col + b * nq;
            memset(col, 0, (size_t)n * sizeof(double));
            const double x0 = xb[i], step = 1e-6 * fmax(1.0, fabs(x0));
            for (int sign = 1; sign >= -1; sign -= 2) {
                xb[i] = x0 + sign * step;
                loop_pose(tree, w, xb);
                for (int64_t k = 0; k < m; ++k) {
                    loop_row(tree, w->wtmp, w->Stmp, rows[k], w->row);
                    chart_columns(tree, xb, w->row);
                    for (int64_t e = 0; e < nq; ++e) half[e] += sign * w->row[e] * mu[k] / (2.0 * step);
                }
            }
            xb[i] = x0;
            w->curv[nc++] = (b - 1) * nq + i;
            ++cols;
        }
    }
    for (int64_t col = 1; col < cols; ++col) solve_form(tree, w, s, r, w->sol + col * n, ops);
    const int64_t k = s * m, size = k + nc;
    double *B = w->B, *coef = w->coef;
    for (int64_t b = 1; b <= s; ++b)  /* G2 rows: Dh(x^b) on block b - 1 */
        for (int64_t i = 0; i < m; ++i) {
            const double *Dh = w->Dh + (b * m + i) * nq;
            const int64_t row = (b - 1) * m + i;
            for (int64_t col = 0; col <= size; ++col) {
                const double *y = w->sol + col * n + (b - 1) * nq;
                double t = 0.0;
                for (int64_t e = 0; e < nq; ++e) t += Dh[e] * y[e];
                if (col == 0) coef[row] = -w->f[n + row] - t;
                else B[row * size + col - 1] = t;
            }
        }
    for (int64_t c = 0; c < nc; ++c) {
        coef[k + c] = -a[w->curv[c]];
        for (int64_t col = 1; col <= size; ++col) B[(k + c) * size + col - 1] = w->sol[col * n + w->curv[c]];
        B[(k + c) * size + k + c] -= 1.0;
    }
    *ops += (double)(size * size * n);
    if (solve_dense(size, B, coef)) return 1;
    for (int64_t col = 1; col <= size; ++col)
        for (int64_t e = 0; e < n; ++e) a[e] += w->sol[col * n + e] * coef[col - 1];
    memcpy(a + n, coef, (size_t)k * sizeof(double));
    return 0;
}

/* v = M^-1 p at the pose whose axes S (nq + 1, 6) and composite inertias Ic (nq, INERTIA) are given, by the
 * articulated-body recursion at rest (O(nq), Featherstone): articulated inertias IA and forces pA leaves to root,
 * then the accelerations root to leaves. scratch (nq, 50). Returns 1 when an axis moves no inertia. */
static int inverse_mass_apply(const symplex_tree *tree, const double *S, const double *Ic, const double *p, double *v,
                              double *scratch)
{
    const int64_t nq = tree->nq;
    double *own = scratch;  /* (nq, INERTIA): the frame's own bodies, then IA (36), pA, U (6), D, u at 13 + ... */
    for (int64_t f = 0; f < nq; ++f) memcpy(own + 50 * f, Ic + INERTIA * f, INERTIA * sizeof(double));
    for (int64_t f = 0; f < nq; ++f)
        if (tree->dof_parent[f] >= 0)
            for (int k = 0; k < INERTIA; ++k) own[50 * tree->dof_parent[f] + k] -= Ic[INERTIA * f + k];
    for (int64_t f = 0; f < nq; ++f) {  /* IA = [[Io, hat(h)], [-hat(h), m 1]] of the own bodies; pA = 0 */
        double *row = scratch + 50 * f, I[INERTIA], *IA = row + 2;  /* IA at 2..37, pA 38..43 (own read first) */
        memcpy(I, row, sizeof I);
        const double m = I[0], *h = I + 1, *Io = I + 4;
        double H[9];
        hat3(h, H);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j) {
                IA[6 * i + j] = Io[3 * i + j];
                IA[6 * i + 3 + j] = H[3 * i + j];
                IA[6 * (3 + i) + j] = -H[3 * i + j];
                IA[6 * (3 + i) + 3 + j] = i == j ? m : 0.0;
            }
        memset(row + 38, 0, 12 * sizeof(double));
    }
    for (int64_t f = nq - 1; f >= 0; --f) {  /* U = IA S, D = S . U, u = p - S . pA at 44..49 (U), 0 (D), 1 (u) */
        double *row = scratch + 50 * f, *IA = row + 2, *pA = row + 38, *U = row + 44;
        const double *Sf = S + 6 * f;
        for (int i = 0; i < 6; ++i) U[i] = dot6(IA + 6 * i, Sf);
        row[0] = dot6(Sf, U);
        row[1] = p[f] - dot6(Sf, pA);
        if (!(row[0] > 0.0)) return 1;
        const int64_t parent = tree->dof_parent[f];
        if (parent < 0) continue;
        double *IAp = scratch + 50 * parent + 2, *pAp = scratch + 50 * parent + 38;
        for (int i = 0; i < 6; ++i) {
            for (int j = 0; j < 6; ++j) IAp[6 * i + j] += IA[6 * i + j] - U[i] * U[j] / row[0];
            pAp[i] += pA[i] + U[i] * row[1] / row[0];
        }
    }
    for (int64_t f = 0; f < nq; ++f) {  /* accelerations a_f = a_parent + S_f v_f, kept in pA */
        double *row = scratch + 50 * f, *a = row + 38;
        const int64_t parent = tree->dof_parent[f];
        const double *ap = parent >= 0 ? scratch + 50 * parent + 38 : NULL;
        v[f] = (row[1] - (ap ? dot6(row + 44, ap) : 0.0)) / row[0];
        for (int i = 0; i < 6; ++i) a[i] = (ap ? ap[i] : 0.0) + S[6 * f + i] * v[f];
    }
    return 0;
}

/* galerkin.energy without loop rows: v^T M v / 2 + V at the end pose q2 with v = M^-1 p2 (O(nq)); on a
 * tree with charts q2 is 0 on them and each chart turned by turn (nball, 3, 3), their springs' energy added.
 * node >= 0: the last residual's node at x^s (P[node] = e_s: Lobatto's last), whose axes, composite inertias and
 * potential (node_potential) are those of the end pose already; else they are evaluated here. */
static double end_energy(const symplex_tree *tree, gworkspace *w, const double *q2, const double *turn,
                         const double *p2, const double *force_vector, int64_t node, double node_potential)
{
    const int64_t nq = tree->nq;
    const double *S = w->Stmp, *Ic = w->Ic;
    double kinetic, potential = node_potential;
    if (node >= 0) {
        S = w->S + node * 6 * (nq + 1);
        Ic = w->Ic + node * INERTIA * nq;
    } else {
        memset(w->vn, 0, (size_t)nq * sizeof(double));
        forward_kinematics(tree, q2, turn, w->ball, w->wtmp, w->Stmp);
        tree_terms(tree, force_vector, w->wtmp, w->Stmp, q2, w->vn, w->V, w->Sdot, w->Ic, w->H, w->Wr, w->K, w->p,
                   w->g, w->Q, &kinetic, &potential);
    }
    for (int64_t b = 0; b < tree->nball; ++b) {
        double sp[12];
        if (tree->ball_stiffness[b] == 0.0) continue;
        chart_spring(tree, b, turn + 9 * b, sp);
        potential += 0.5 * tree->ball_stiffness[b] * dot3(sp, sp);
    }
    if (inverse_mass_apply(tree, S, Ic, p2, w->vn, w->M)) return NAN;
    kinetic = 0.0;
    for (int64_t a = 0; a < nq; ++a) kinetic += w->vn[a] * p2[a];
    return 0.5 * kinetic + potential;
}

int64_t symplex_galerkin_step(const symplex_tree *tree, int64_t s, int64_t r, const double *weight, const double *P,
                              const double *D, int64_t nsel, const int64_t *rows, const double *torque,
                              const double *force_vector, const double *q1, const double *p1, double dt, double tol,
                              double stall, double reuse, int64_t max_iterations, int64_t carry, double *X,
                              double *lam, double *p2, double *stats, int64_t *iterations, double *scratch)
{
    const int64_t nq = tree->nq, n = s * nq, m = nsel;
    gworkspace w;
    gcarve(&w, scratch, tree, s, r, m);
    for (int64_t k = 0; k < nq; ++k) w.ball[k] = -1;
    for (int64_t b = 0; b < tree->nball; ++b)
        for (int i = 0; i < 3; ++i) w.ball[tree->ball_dofs[3 * b + i]] = b;
    memcpy(w.x, q1, (size_t)nq * sizeof(double));
    memcpy(w.x + nq, X, (size_t)n * sizeof(double));
    double base = 1.0, previous = INFINITY, worst = 0.0, ops = 0.0, moved = INFINITY;
    for (int64_t k = 0; k < nq; ++k) base = fmax(base, fabs(p1[k]));
    if (m) loop_rows_at(tree, &w, m, rows, q1, w.Dh, NULL);
    int64_t status = SYMPLEX_CONVERGED, it = 0, factorizations = 0;
    /* the node at x^s (P[end] = e_s), whose pose is the end pose of end_energy; -1 when none is */
    int64_t end = r - 1;
    for (int64_t a = 0; a <= s; ++a) end = P[(r - 1) * (s + 1) + a] == (a == s ? 1.0 : 0.0) ? end : -1;
    double potentials[8];  /* each node's potential energy at the last residual (r <= s + 1 <= 5) */
    int exact = 1;  /* the last update was an exact Newton step */
    int fresh = 0;  /* the last update was rejected: the next one factors afresh */
    /* galerkin.newton's carried factor: the last one made, left in the scratch, for the first `carry` updates
     * (plain loop-free trees only; the caller says whether it was made at this dt) */
    int factored = carry > 0 && !m && !tree->nball;
    if (factored) w.Wc = (int64_t)w.kept[0];
    for (;;) {
        const double scale = residual(tree, &w, s, r, weight, P, D, m, rows, torque, force_vector, p1, dt, lam, base,
                                      it > 0, potentials);
        /* relative to the rows' scale, loop rows held to a tenth of tol (midpoint.LOOP_TOLERANCE_FACTOR); the
         * round-off floor is where an exact step no longer halves the rows, or moves the unknowns by round-off */
        worst = fmax(max_abs(n, w.f) / scale, max_abs(s * m, w.f + n) / 0.1);
        if (worst <= tol
            || (exact && ((worst <= stall * tol && worst > 0.5 * previous)
                          || (tol > 0.0 && moved <= GALERKIN_ROUNDOFF))))
            break;
        /* galerkin.newton: a carried or reused update that grew the rows (or left them not finite) is undone, the
         * iterate back to the one before it (x + sol - sol, as numpy does), and the next update factors there */
        if (!exact && !fresh && !(worst <= GALERKIN_GROW * previous)) {
            for (int64_t k = 0; k < n; ++k) w.x[nq + k] -= w.sol[k];
            for (int64_t k = 0; k < s * m; ++k) lam[k] -= w.sol[n + k];
            fresh = 1;
            continue;
        }
        /* galerkin.newton: the last factor again (simplified Newton) while the last update cut the rows by reuse,
         * and a carried one for the first `carry` updates */
        exact = fresh || !(factored && !m && ((it < carry && !factorizations) || worst <= reuse * previous));
        fresh = 0;
        previous = worst;
        if (!isfinite(worst)) { status = SYMPLEX_NOT_FINITE; break; }
        if (it >= max_iterations) { status = SYMPLEX_NOT_CONVERGED; break; }
        if (exact) {
            tree_form(tree, &w, s, r, weight, P, D, dt);
            if (tree->nball) chart_tree_form(tree, &w, s, r, weight, P, D, dt);
            else compact_components(tree, &w, s, r);
            ++factorizations;
            factored = 1;
        }
        if ((exact && (tree->nball ? group_factor(tree, &w, s, r, &ops) : gfactor(tree, &w, s, r, &ops)))
            || direction(tree, &w, s, r, m, rows, lam, &ops)) {
            status = SYMPLEX_SINGULAR;
            break;
        }
        moved = fmax(max_abs(n, w.sol) / fmax(1.0, max_abs(n, w.x + nq)),
                     max_abs(s * m, w.sol + n) / fmax(1.0, max_abs(s * m, lam)));
        add(n, w.sol, w.x + nq);
        add(s * m, w.sol + n, lam);
        ++it;
    }
    memcpy(X, w.x + nq, (size_t)n * sizeof(double));
    memcpy(p2, w.Z + s * nq, (size_t)nq * sizeof(double));
    memcpy(w.qe, X + n - nq, (size_t)nq * sizeof(double));
    for (int64_t b = 0; b < tree->nball; ++b) {  /* on the charts: the body covector at C2 = C1 exp(xi^s) */
        const int64_t *k = tree->ball_dofs + 3 * b;
        for (int i = 0; i < 3; ++i) {
            p2[k[i]] = w.pend[3 * b + i];
            w.qe[k[i]] = 0.0;
        }
        so3_exp(X + n - nq + k[0], w.turn + 9 * b);  /* node 0's turns are spent: the end turns */
    }
    if (factorizations) w.kept[0] = (double)w.Wc;
    stats[0] = worst;
    stats[1] = ops;
    stats[3] = (double)factorizations;
    stats[2] = status == SYMPLEX_CONVERGED && !tree->nrow
                   ? end_energy(tree, &w, w.qe, tree->nball ? w.turn : NULL, p2, force_vector, end,
                                end >= 0 ? potentials[end] : 0.0) : NAN;
    *iterations = it;
    return status;
}

/* One Galerkin variational integrator step of order 2s (s = 2..4) on a tree model of plain joints (rotations
 * and translations; no ball or free-joint charts), loop rows included: the whole Newton loop of
 * tree/galerkin.py `_newton` with galerkin_newton.py's exact O(s^3 n) direction (symplex_kernels.h). The numpy
 * modules are the reference and the fallback; the quantities and names follow them:
 *   residual:  node values q_j = P[j] x, v_j = D[j] x / dt, the Lagrangian terms there (tree_common.h), and
 *              Z^a = dt sum_j w_j (P[j, a] (g + Q + f_c)_j + D[j, a] / dt p_j); rows r^a = Z^a (a < s),
 *              r^0 += p^k, minus Dh(x^a)^T lam^a with loops; h at x^1..x^s; p^(k+1) = Z^s;
 *   direction: each coordinate's column and row vectors U, x (s + 1, 12 r) at every node, its own s x s
 *              block, the leaves-to-root elimination (Obar, Dinv, X, c) and the solve (galerkin_newton.py's
 *              docstring); loop rows and their curvature columns (central differences of Dh^T lam) border it
 *              (galerkin_newton.newton_direction); without loop rows, simplified updates reuse the last factor
 *              after a 10-fold cut of the rows (galerkin.newton, REUSE);
 *   cost:      the elimination runs on the live components of the node vectors only (compact_components), a
 *              parent's Obar is its first child's block updated in place, and the end energy's M^-1 p is the
 *              O(nq) articulated-body recursion (mass_solve). */
#include "tree_common.h"

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
    double *M;                          /* (56 nq) mass_solve's scratch (the energy, without loops) */
    int64_t *curv;                      /* (nc,) global unknown index of each curvature column */
    int64_t *live, *held;               /* (W,) live components (compact_components), (nq,) Obar slots */
    int64_t Wc;                         /* the live components' count, padded (compact_components) */
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
    w->M = gtake(base, &at, tree->nrow ? 0 : 56 * nq);
    w->curv = (int64_t *)gtake(base, &at, nc);
    w->live = (int64_t *)gtake(base, &at, W);
    w->held = (int64_t *)gtake(base, &at, nq);
    return at;
}

int64_t symplex_galerkin_scratch_size(const symplex_tree *tree, int64_t s, int64_t r, int64_t nsel)
{
    gworkspace w;
    return gcarve(&w, NULL, tree, s, r, nsel);
}

/* Dh rows (m, nq) of the selected loop rows and, if h is given, their values at coordinates q. */
static void loop_rows_at(const symplex_tree *tree, gworkspace *w, int64_t m, const int64_t *rows, const double *q,
                         double *Dh, double *h)
{
    forward_kinematics(tree, q, NULL, NULL, w->wtmp, w->Stmp);
    for (int64_t i = 0; i < m; ++i) {
        const double v = loop_row(tree, w->wtmp, w->Stmp, rows[i], Dh + i * tree->nq);
        if (h) h[i] = v;
    }
}

/* The rows at X (w->x rows 1..s; row 0 = q^k) and lam: w->f = (r (s, nq), h (s, m)), w->Z (s + 1, nq) and
 * the node terms kept for the Newton matrix; w->Dh rows 1..s. Returns the rows' convergence scale
 * (galerkin.residual: max(base, max|D| max|p_j|, dt max|force_j|)). */
static double residual(const symplex_tree *tree, gworkspace *w, int64_t s, int64_t r, const double *weight,
                       const double *P, const double *D, int64_t m, const int64_t *rows, const double *torque,
                       const double *force_vector, const double *p1, double dt, const double *lam, double base)
{
    const int64_t nq = tree->nq, n1 = nq + 1;
    double scale = base, spread = 0.0, kinetic, potential;
    for (int64_t k = 0; k < r * (s + 1); ++k) spread = fmax(spread, fabs(D[k]));
    memset(w->Z, 0, (size_t)((s + 1) * nq) * sizeof(double));
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
        double *world = w->world + j * 16 * n1, *S = w->S + j * 6 * n1;
        forward_kinematics(tree, w->qn, NULL, NULL, world, S);
        tree_terms(tree, force_vector + j * 3 * tree->nforce, world, S, w->qn, w->vn, w->V, w->Sdot + j * 6 * nq,
                   w->Ic + j * INERTIA * nq, w->H + j * 6 * nq, w->Wr + j * 6 * nq, w->K + j * 9 * nq, w->p, w->g,
                   w->Q, &kinetic, &potential);
        for (int64_t i = 0; i < nq; ++i) {
            const double v = w->vn[i];
            const double force = w->g[i] + w->Q[i] - tree->dof_damping[i] * v
                                 + tree->dof_motor_gain[i] * (tree->dof_motor_velocity[i] - v) + tj[i];
            scale = fmax(scale, fmax(spread * fabs(w->p[i]), dt * fabs(force)));
            for (int64_t a = 0; a <= s; ++a)
                w->Z[a * nq + i] += wdt * (Pj[a] * force + Dj[a] / dt * w->p[i]);
        }
    }
    memcpy(w->f, w->Z, (size_t)(s * nq) * sizeof(double));
    add(nq, p1, w->f);
    for (int64_t a = 0; a < s && m; ++a) {  /* rows at x^1..x^s; multipliers on rows 0..s-1 */
        const double *Dh = w->Dh + a * m * nq, *mu = lam + a * m;
        for (int64_t i = 0; i < m; ++i)
            for (int64_t k = 0; k < nq; ++k) w->f[a * nq + k] -= Dh[i * nq + k] * mu[i];
        loop_rows_at(tree, w, m, rows, w->x + (a + 1) * nq, w->Dh + (a + 1) * m * nq, w->f + s * nq + a * m);
    }
    return scale;
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
            for (int64_t g = 0; g < s; ++g) {
                double t = 0.0;
                for (int64_t e = 0; e < W; ++e) t += U[(g + 1) * W + e] * xv[a * W + e];
                Dl[a * s + g] += t;
            }
    }
}

/* inv = A^-1 for A (n, n), n <= 4, by Gauss-Jordan with partial pivoting; 1 when singular or not finite. */
static int invert_small(int64_t n, const double *A, double *inv)
{
    double M[4][8];
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
        for (int64_t e = 0; e < W; ++e) live[e] |= U[e] != 0.0 || xv[e] != 0.0;
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

/* row = c_1 X_1 + .. + c_S X_S (add: row += that) over n entries (n a multiple of 4, X_k = X + (k - 1) n), S a
 * constant where inlined so that the blocks of 4 vectorise */
static inline __attribute__((always_inline)) void hand_up_row(int64_t n, int64_t S, int add, const double *restrict c,
                                                              const double *restrict X, double *restrict row)
{
    for (int64_t b = 0; b < n; b += 4)
        for (int64_t q = b; q < b + 4; ++q) {
            double t = add ? row[q] : 0.0;
            for (int64_t k = 0; k < S; ++k) t += c[k] * X[k * n + q];
            row[q] = t;
        }
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
 * gives it its own slot, updated in place (a chain hands one Wc x Wc block down its length). Returns 1 when a
 * pivot block is singular. */
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
            for (int64_t k = 0; k < s; ++k) {
                double t = Dl[a * s + k];
                for (int64_t p = 0; p < Wc; ++p) t += Ra[p] * OU[p * s + k];
                Dm[a * s + k] = t;
            }
        }
        if (invert_small(s, Dm, Dinv)) return 1;
        for (int64_t b = 0; b < s; ++b)  /* RO <- x + R Omega */
            for (int64_t q = 0; q < Wc; ++q) RO[b * Wc + q] += xv[b * W + q];
        for (int64_t a = 0; a < s; ++a) {
            double *Xa = Xg + a * Wc;
            for (int64_t q = 0; q < Wc; ++q) Xa[q] = 0.0;
            for (int64_t b = 0; b < s; ++b) {
                const double d = Dinv[a * s + b], *ROb = RO + b * Wc;
                for (int64_t q = 0; q < Wc; ++q) Xa[q] -= d * ROb[q];
            }
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
        for (int64_t a = 0; a < s; ++a) {
            double u = rhs[a * nq + i];
            for (int64_t p = 0; p < Wc; ++p) u -= U[a * W + p] * o[p];
            t[a] = u;
        }
        for (int64_t a = 0; a < s; ++a) {
            double u = 0.0;
            for (int64_t b = 0; b < s; ++b) u += Dinv[a * s + b] * t[b];
            xs[a] = u;
        }
        *ops += (double)(2 * Wc * s + s * s);
        const int64_t parent = tree->dof_parent[i];
        if (parent >= 0) {
            double *op = w->obar + parent * W;
            for (int64_t p = 0; p < Wc; ++p) {
                double v = o[p];
                for (int64_t k = 0; k < s; ++k) v += c[p * s + k] * xs[k];
                op[p] += v;
            }
        }
    }
    for (int64_t i = 0; i < nq; ++i) {
        const int64_t parent = tree->dof_parent[i];
        const double *zp = parent >= 0 ? w->z + parent * W : NULL, *U = w->U + i * (s + 1) * W;
        const double *Xg = w->Xg + i * s * W, *xs = w->xs + i * s;
        double *z = w->z + i * W, delta[4];
        for (int64_t a = 0; a < s; ++a) {
            double t = xs[a];
            if (zp)
                for (int64_t q = 0; q < Wc; ++q) t += Xg[a * Wc + q] * zp[q];
            delta[a] = t;
            rhs[a * nq + i] = t;
        }
        for (int64_t q = 0; q < Wc; ++q) {
            double t = zp ? zp[q] : 0.0;
            for (int64_t k = 0; k < s; ++k) t += U[(k + 1) * W + q] * delta[k];
            z[q] = t;
        }
        *ops += (double)(2 * Wc * s);
    }
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
    gsolve(tree, w, s, r, a, ops);
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
                forward_kinematics(tree, xb, NULL, NULL, w->wtmp, w->Stmp);
                for (int64_t k = 0; k < m; ++k) {
                    loop_row(tree, w->wtmp, w->Stmp, rows[k], w->row);
                    for (int64_t e = 0; e < nq; ++e) half[e] += sign * w->row[e] * mu[k] / (2.0 * step);
                }
            }
            xb[i] = x0;
            w->curv[nc++] = (b - 1) * nq + i;
            ++cols;
        }
    }
    for (int64_t col = 1; col < cols; ++col) gsolve(tree, w, s, r, w->sol + col * n, ops);
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

/* v = M^-1 p for the tree's mass matrix at a pose, in O(nq) by the articulated-body recursion on the world-frame
 * axes S (nq, 6) and composite inertias Ic (nq, INERTIA) of tree_terms (a coordinate's own inertia is its
 * composite less its children's): leaves to root, IA = own + sum over children (IA_c - U_c U_c^T / D_c) with
 * U = IA S, D = S . U, u = p - S . b, b = sum over children (b_c + U_c u_c / D_c); root to leaves,
 * v = (u - U . a_parent) / D, a = a_parent + S v. scratch: 56 nq doubles. Returns 1 when a D is not positive. */
static int mass_solve(const symplex_tree *tree, const double *S, const double *Ic, const double *p, double *scratch,
                      double *v)
{
    const int64_t nq = tree->nq;
    double *IA = scratch, *b = IA + 36 * nq, *U = b + 6 * nq, *a = U + 6 * nq, *D = a + 6 * nq, *u = D + nq;
    memset(b, 0, (size_t)(6 * nq) * sizeof(double));
    for (int64_t i = 0; i < nq; ++i)  /* IA starts as the composite inertia (columns I e_k) */
        for (int k = 0; k < 6; ++k) {
            double e[6] = {0.0}, col[6];
            e[k] = 1.0;
            inertia_apply(Ic + INERTIA * i, e, col);
            for (int l = 0; l < 6; ++l) IA[36 * i + 6 * l + k] = col[l];
        }
    for (int64_t i = nq - 1; i >= 0; --i) {
        const double *Si = S + 6 * i, *IAi = IA + 36 * i;
        double *Ui = U + 6 * i;
        for (int l = 0; l < 6; ++l) Ui[l] = dot6(IAi + 6 * l, Si);
        D[i] = dot6(Si, Ui);
        u[i] = p[i] - dot6(Si, b + 6 * i);
        if (!(D[i] > 0.0)) return 1;
        const int64_t parent = tree->dof_parent[i];
        if (parent < 0) continue;
        double own[6], *IAp = IA + 36 * parent;  /* IA_parent += IA_i - mat(Ic_i) - U U^T / D */
        for (int k = 0; k < 6; ++k) {
            double e[6] = {0.0};
            e[k] = 1.0;
            inertia_apply(Ic + INERTIA * i, e, own);
            for (int l = 0; l < 6; ++l) IAp[6 * l + k] += IAi[6 * l + k] - own[l] - Ui[l] * Ui[k] / D[i];
        }
        for (int l = 0; l < 6; ++l) b[6 * parent + l] += b[6 * i + l] + Ui[l] * u[i] / D[i];
    }
    for (int64_t i = 0; i < nq; ++i) {
        const int64_t parent = tree->dof_parent[i];
        const double *ap = parent >= 0 ? a + 6 * parent : NULL;
        v[i] = (u[i] - (ap ? dot6(U + 6 * i, ap) : 0.0)) / D[i];
        for (int l = 0; l < 6; ++l) a[6 * i + l] = (ap ? ap[l] : 0.0) + S[6 * i + l] * v[i];
    }
    return 0;
}

/* galerkin.energy without loop rows: v^T M v / 2 + V at the end pose q2 with v = M^-1 p2 (mass_solve, O(nq)). */
static double end_energy(const symplex_tree *tree, gworkspace *w, const double *q2, const double *p2,
                         const double *force_vector)
{
    const int64_t nq = tree->nq;
    double kinetic, potential;
    memset(w->vn, 0, (size_t)nq * sizeof(double));
    forward_kinematics(tree, q2, NULL, NULL, w->wtmp, w->Stmp);
    tree_terms(tree, force_vector, w->wtmp, w->Stmp, q2, w->vn, w->V, w->Sdot, w->Ic, w->H, w->Wr, w->K, w->p, w->g,
               w->Q, &kinetic, &potential);
    if (mass_solve(tree, w->Stmp, w->Ic, p2, w->M, w->vn)) return NAN;
    kinetic = 0.0;
    for (int64_t a = 0; a < nq; ++a) kinetic += w->vn[a] * p2[a];
    return 0.5 * kinetic + potential;
}

int64_t symplex_galerkin_step(const symplex_tree *tree, int64_t s, int64_t r, const double *weight, const double *P,
                              const double *D, int64_t nsel, const int64_t *rows, const double *torque,
                              const double *force_vector, const double *q1, const double *p1, double dt, double tol,
                              double stall, double reuse, int64_t max_iterations, double *X, double *lam, double *p2,
                              double *stats, int64_t *iterations, double *scratch)
{
    const int64_t nq = tree->nq, n = s * nq, m = nsel;
    gworkspace w;
    gcarve(&w, scratch, tree, s, r, m);
    memcpy(w.x, q1, (size_t)nq * sizeof(double));
    memcpy(w.x + nq, X, (size_t)n * sizeof(double));
    double base = 1.0, previous = INFINITY, worst = 0.0, ops = 0.0;
    for (int64_t k = 0; k < nq; ++k) base = fmax(base, fabs(p1[k]));
    if (m) loop_rows_at(tree, &w, m, rows, q1, w.Dh, NULL);
    int64_t status = SYMPLEX_CONVERGED, it = 0, factorizations = 0;
    int exact = 1;  /* the last update was an exact Newton step */
    for (;;) {
        const double scale = residual(tree, &w, s, r, weight, P, D, m, rows, torque, force_vector, p1, dt, lam, base);
        /* relative to the rows' scale, loop rows held to a tenth of tol (midpoint.LOOP_TOLERANCE_FACTOR); the
         * round-off floor is where an exact step no longer halves the rows */
        worst = fmax(max_abs(n, w.f) / scale, max_abs(s * m, w.f + n) / 0.1);
        if (worst <= tol || (exact && worst <= stall * tol && worst > 0.5 * previous)) break;
        /* galerkin.newton: the last factor again (simplified Newton) while the last update cut the rows by reuse */
        exact = !(factorizations && !m && worst <= reuse * previous);
        previous = worst;
        if (!isfinite(worst)) { status = SYMPLEX_NOT_FINITE; break; }
        if (it >= max_iterations) { status = SYMPLEX_NOT_CONVERGED; break; }
        if (exact) {
            tree_form(tree, &w, s, r, weight, P, D, dt);
            compact_components(tree, &w, s, r);
            ++factorizations;
        }
        if ((exact && gfactor(tree, &w, s, r, &ops)) || direction(tree, &w, s, r, m, rows, lam, &ops)) {
            status = SYMPLEX_SINGULAR;
            break;
        }
        add(n, w.sol, w.x + nq);
        add(s * m, w.sol + n, lam);
        ++it;
    }
    memcpy(X, w.x + nq, (size_t)n * sizeof(double));
    memcpy(p2, w.Z + s * nq, (size_t)nq * sizeof(double));
    stats[0] = worst;
    stats[1] = ops;
    stats[3] = (double)factorizations;
    stats[2] = status == SYMPLEX_CONVERGED && !tree->nrow ? end_energy(tree, &w, X + n - nq, p2, force_vector) : NAN;
    *iterations = it;
    return status;
}

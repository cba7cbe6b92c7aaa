/* Holonomic shot step rows (helicopter, boat, hovercraft) with their exact Jacobian or the exact Hessian of
 * y . r, per stage, over jets of a few local variables (the C twin of shots/holonomic.py's `residual_numpy` and
 * `residual_hessian_numpy`; the formulas and their seed equations are documented there).
 *
 * A jet holds a value, its gradient and (mode 2) its Hessian over n <= NJ local variables; each group of rows
 * (position, attitude, transported momentum, previous momentum, wrench) is computed over its own variables and
 * scattered into the window's columns (stage slot * nw + variable, h last). Factors that depend on disjoint
 * variables (R(q) and P(h w) h v; the boat's pose terms and the node twist; the wrench and h) are multiplied
 * as such (jdisjoint_muladd: no products over the union). The boat's columns are summed as jets of the four
 * pose quantities (x_z, up) they depend on, then composed into (x_z, q) by the chain rule. */
#include <math.h>
#include <string.h>

#include "symplex_kernels.h"

#define NJ 14

typedef struct {
    double v, g[NJ], H[NJ * NJ]; /* H: the upper triangle (j >= i) of the row-major n x n Hessian is kept */
} jet;

typedef struct {
    int n, second;
} jctx;

static void jconst(const jctx *c, jet *o, double v) {
    o->v = v;
    memset(o->g, 0, sizeof(double) * (size_t)c->n);
    if (c->second) memset(o->H, 0, sizeof(double) * (size_t)(c->n * c->n));
}

static void jvar(const jctx *c, jet *o, double v, int i) {
    jconst(c, o, v);
    if (i < c->n) o->g[i] = 1.0;
}

/* o = a + s b (o may alias a or b) */
static void jaxpy(const jctx *c, jet *o, const jet *a, double s, const jet *b) {
    int n = c->n;
    for (int i = 0; i < n; i++) o->g[i] = a->g[i] + s * b->g[i];
    if (c->second)
        for (int i = 0; i < n * n; i++) o->H[i] = a->H[i] + s * b->H[i];
    o->v = a->v + s * b->v;
}

/* o = s a + t (o may alias a) */
static void jscale(const jctx *c, jet *o, const jet *a, double s, double t) {
    int n = c->n;
    for (int i = 0; i < n; i++) o->g[i] = s * a->g[i];
    if (c->second)
        for (int i = 0; i < n * n; i++) o->H[i] = s * a->H[i];
    o->v = s * a->v + t;
}

/* o += s a b (o distinct from a and b) */
static void jmuladd(const jctx *c, jet *o, double s, const jet *a, const jet *b) {
    int n = c->n;
    double av = s * a->v, bv = s * b->v;
    if (c->second)
        for (int i = 0; i < n; i++) {
            double ai = s * a->g[i], bi = s * b->g[i];
            for (int j = i; j < n; j++)
                o->H[i * n + j] += av * b->H[i * n + j] + bv * a->H[i * n + j] + ai * b->g[j] + bi * a->g[j];
        }
    for (int i = 0; i < n; i++) o->g[i] += av * b->g[i] + bv * a->g[i];
    o->v += av * b->v;
}

static void jmul(const jctx *c, jet *o, const jet *a, const jet *b) {
    jconst(c, o, 0.0);
    jmuladd(c, o, 1.0, a, b);
}

/* o = f(a) from f's value, first and second derivative at a (o may alias a) */
static void japply(const jctx *c, jet *o, const jet *a, double f, double f1, double f2) {
    int n = c->n;
    if (c->second)
        for (int i = 0; i < n; i++)
            for (int j = i; j < n; j++) o->H[i * n + j] = f1 * a->H[i * n + j] + f2 * a->g[i] * a->g[j];
    for (int i = 0; i < n; i++) o->g[i] = f1 * a->g[i];
    o->v = f;
}

/* o = sum_i a_i b_i over 3-vectors */
static void jdot3(const jctx *c, jet *o, const jet *a, const jet *b) {
    jconst(c, o, 0.0);
    for (int i = 0; i < 3; i++) jmuladd(c, o, 1.0, a + i, b + i);
}

/* o = a x b (o distinct from a and b) */
static void jcross(const jctx *c, jet *o, const jet *a, const jet *b) {
    for (int i = 0; i < 3; i++) {
        int j = (i + 1) % 3, k = (i + 2) % 3;
        jconst(c, o + i, 0.0);
        jmuladd(c, o + i, 1.0, a + j, b + k);
        jmuladd(c, o + i, -1.0, a + k, b + j);
    }
}

/* o = R(q) z (sign 2) or R(q)^T z (sign -2): (w^2 - |v|^2) z + 2 v (v . z) + sign w (v x z) */
static void jrotate(const jctx *c, jet *o, const jet *q, const jet *z, double sign) {
    jet s, vz, vxz[3];
    jmul(c, &s, q, q);
    for (int i = 1; i < 4; i++) jmuladd(c, &s, -1.0, q + i, q + i);
    jdot3(c, &vz, q + 1, z);
    jcross(c, vxz, q + 1, z);
    for (int i = 0; i < 3; i++) {
        jmul(c, o + i, &s, z + i);
        jmuladd(c, o + i, 2.0, q + 1 + i, &vz);
        jmuladd(c, o + i, sign, q, vxz + i);
    }
}

/* C_cay(e)^T mu: nu = mu_v + w x mu_v / 2, (mu_w + w x mu_w / 2 + w (w . mu_w) / 4 + v x nu / 2, nu) */
static void jtransport(const jctx *c, jet *o, const jet *e, const jet *mu) {
    jet t[3], nu[3], wm;
    jcross(c, t, e, mu + 3);
    for (int i = 0; i < 3; i++) jaxpy(c, nu + i, mu + 3 + i, 0.5, t + i);
    jcross(c, t, e, mu);
    jdot3(c, &wm, e, mu);
    for (int i = 0; i < 3; i++) {
        jaxpy(c, o + i, mu + i, 0.5, t + i);
        jmuladd(c, o + i, 0.25, e + i, &wm);
    }
    jcross(c, t, e + 3, nu);
    for (int i = 0; i < 3; i++) {
        jaxpy(c, o + i, o + i, 0.5, t + i);
        o[3 + i] = nu[i];
    }
}

/* o = I xi (constant 6x6 inertia) */
static void jinertia(const jctx *c, jet *o, const double *I, const jet *xi) {
    for (int i = 0; i < 6; i++) {
        jconst(c, o + i, 0.0);
        for (int j = 0; j < 6; j++)
            if (I[i * 6 + j] != 0.0) jaxpy(c, o + i, o + i, I[i * 6 + j], xi + j);
    }
}

/* o (over outer's n variables) = f(z) with f given as a jet over the inner variables z_k (k < c_in->n) and
 * z_k jets over the outer variables: the chain rule to second order. */
static void jcompose(const jctx *c_in, const jctx *c, jet *o, const jet *f, const jet *z) {
    int m = c_in->n;
    jconst(c, o, f->v);
    for (int k = 0; k < m; k++) jaxpy(c, o, o, f->g[k], z + k);
    o->v = f->v;
    if (!c->second) return;
    int n = c->n;
    for (int k = 0; k < m; k++)
        for (int l = k; l < m; l++) {
            double s = f->H[k * m + l];
            if (s == 0.0) continue;
            for (int i = 0; i < n; i++)
                for (int j = i; j < n; j++)
                    o->H[i * n + j] += s * (z[k].g[i] * z[l].g[j] + (l > k ? z[l].g[i] * z[k].g[j] : 0.0));
        }
}

/* o += s a b with a over the variables offa.. and b over offb.. of o's (disjoint, offa + na <= offb) */
static void jdisjoint_muladd(const jctx *c, jet *o, double s, const jctx *ca, const jet *a, int offa,
                             const jctx *cb, const jet *b, int offb) {
    int n = c->n, na = ca->n, nb = cb->n;
    double av = s * a->v, bv = s * b->v;
    if (c->second) {
        for (int i = 0; i < na; i++)
            for (int k = i; k < na; k++) o->H[(offa + i) * n + offa + k] += bv * a->H[i * na + k];
        for (int j = 0; j < nb; j++)
            for (int l = j; l < nb; l++) o->H[(offb + j) * n + offb + l] += av * b->H[j * nb + l];
        for (int i = 0; i < na; i++)
            for (int j = 0; j < nb; j++) o->H[(offa + i) * n + offb + j] += s * a->g[i] * b->g[j];
    }
    for (int i = 0; i < na; i++) o->g[offa + i] += bv * a->g[i];
    for (int j = 0; j < nb; j++) o->g[offb + j] += av * b->g[j];
    o->v += av * b->v;
}

/* Where a term's local variables go in the window: up to two columns each (the node twist is (xi_{k-1} +
 * xi_k) / 2), with factors; column nx = 3 nw is h. */
typedef struct {
    int col[NJ][2];
    double fac[NJ][2];
} place;

static void place_set(place *p, int j, int col, double fac) {
    p->col[j][0] = col;
    p->fac[j][0] = fac;
    p->col[j][1] = -1;
}

/* H (nx+1)^2 += the Hessian S (upper triangle of n x n) of a term over its local variables */
static void add_hessian(const jctx *c, const place *p, const double *S, int nx, double *H) {
    int n = c->n;
    for (int j = 0; j < n; j++)
        for (int l = j; l < n; l++) {
            double v = S[j * n + l];
            if (v == 0.0) continue;
            for (int a = 0; a < 2 && p->col[j][a] >= 0; a++)
                for (int b = 0; b < 2 && p->col[l][b] >= 0; b++) {
                    double t = p->fac[j][a] * p->fac[l][b] * v;
                    H[p->col[j][a] * (nx + 1) + p->col[l][b]] += t;
                    if (l > j) H[p->col[l][b] * (nx + 1) + p->col[j][a]] += t;
                }
        }
}

/* rows r0.. += jets' values; J (nr, nx + 1 with h last) += their gradients (when J) */
static void scatter(const jctx *c, const place *p, const jet *rows, int nrows, int r0, int nx, double *r, double *J) {
    int n = c->n;
    for (int i = 0; i < nrows; i++) r[r0 + i] += rows[i].v;
    if (J)
        for (int i = 0; i < nrows; i++)
            for (int j = 0; j < n; j++)
                for (int a = 0; a < 2 && p->col[j][a] >= 0; a++)
                    J[(r0 + i) * (nx + 1) + p->col[j][a]] += p->fac[j][a] * rows[i].g[j];
}

/* H += sum_i y_{r0+i} (Hessian of rows i) */
static void scatter_hessian(const jctx *c, const place *p, const jet *rows, int nrows, int r0, int nx, double *H,
                            const double *y) {
    double S[NJ * NJ];
    int n = c->n;
    memset(S, 0, sizeof(S));
    for (int i = 0; i < nrows; i++)
        for (int t = 0; t < n * n; t++) S[t] += y[r0 + i] * rows[i].H[t];
    add_hessian(c, p, S, nx, H);
}

/* o (over c's variables) += s a, with a over the first ca->n of them */
static void jembed(const jctx *c, jet *o, double s, const jctx *ca, const jet *a) {
    int n = c->n, m = ca->n;
    for (int i = 0; i < m; i++) o->g[i] += s * a->g[i];
    if (c->second)
        for (int i = 0; i < m; i++)
            for (int j = i; j < m; j++) o->H[i * n + j] += s * a->H[i * m + j];
    o->v += s * a->v;
}

/* The boat's water (vehicles/boat.py water(), shots/holonomic.py _boat_water) over jets: torque o[0..2], force
 * o[3..5] (over c's variables: x_z, q first, then the node twist at xi_at) from the pose x_z, q and the node
 * twist xi. With the moments m, M, S of the immersed lengths and a = lift up + s D R^T eta (pose alone):
 * force = m a - s D (m v + w x M), torque = M x a - s M x D v - s G(S) w; the pose parts are jets over
 * (x_z, q) alone, their products with the twist are products of jets over disjoint variables.
 * Returns 1 when the hull is on its side (up_z < 0.05, outside the model). */
static int boat_water(const symplex_holonomic *p, const jctx *c, jet *o, double xz, const double *qv,
                      const double *xiv, int xi_at) {
    jctx cp = {c->n ? 5 : 0, c->second}, cn = {c->n ? 6 : 0, c->second}, c4 = {c->n ? 4 : 0, c->second};
    jet pose[5], up[3], ez[3], z[4], inv_d, l, l2, mom[10], s, M[10], xi[6];
    for (int k = 0; k < 5; k++) jvar(&cp, pose + k, k ? qv[k - 1] : xz, k);
    for (int k = 0; k < 6; k++) jvar(&cn, xi + k, xiv[k], k);
    for (int i = 0; i < 3; i++) jconst(&cp, ez + i, i == 2 ? 1.0 : 0.0);
    jrotate(&cp, up, pose + 1, ez, -2.0);
    if (up[2].v < 0.05) return 1;
    /* the columns over (x_z, up_x, up_y, up_z), their moments composed into (x_z, q) */
    for (int k = 0; k < 4; k++) jvar(&c4, z + k, k ? up[k - 1].v : xz, k);
    japply(&c4, &inv_d, z + 3, 1.0 / z[3].v, -1.0 / (z[3].v * z[3].v), 2.0 / (z[3].v * z[3].v * z[3].v));
    for (int k = 0; k < 10; k++) jconst(&c4, mom + k, 0.0);
    for (int i = 0; i < p->ncol; i++) {
        double X = p->col_xy[2 * i], Y = p->col_xy[2 * i + 1];
        jaxpy(&c4, &s, z, X, z + 1);
        jaxpy(&c4, &s, &s, Y, z + 2);
        jmul(&c4, &l, &s, &inv_d);
        jscale(&c4, &l, &l, -1.0, -p->keel);
        if (l.v <= 0.0) continue; /* dry column: zero length, zero derivatives */
        if (l.v >= p->hull_height) jconst(&c4, &l, p->hull_height); /* fully immersed: the height */
        jmul(&c4, &l2, &l, &l);
        double wl[5] = {1.0, X, Y, X * X, X * Y};
        for (int k = 0; k < 5; k++) jaxpy(&c4, mom + k, mom + k, wl[k], &l);
        jaxpy(&c4, mom + 5, mom + 5, Y * Y, &l);
        for (int k = 0; k < 3; k++) jaxpy(&c4, mom + 6 + k, mom + 6 + k, 0.5 * wl[k], &l2);
        jmuladd(&c4, mom + 9, 0.25, &l2, &l);
    }
    /* m, mX, mY, Sxx, Sxy, Syy, half0, half1, half2, l^3 / 4 over (x_z, q) */
    jet zo[4];
    zo[0] = pose[0];
    for (int k = 0; k < 3; k++) zo[k + 1] = up[k];
    for (int k = 0; k < 10; k++) jcompose(&c4, &cp, M + k, mom + k, zo);
    double kz = p->keel;
    jet Mv[3], S[3][3];
    Mv[0] = M[1];
    Mv[1] = M[2];
    jaxpy(&cp, Mv + 2, M + 6, kz, M); /* kz m + half0 */
    S[0][0] = M[3];
    S[0][1] = S[1][0] = M[4];
    S[1][1] = M[5];
    jaxpy(&cp, &S[0][2], M + 7, kz, M + 1);
    S[2][0] = S[0][2];
    jaxpy(&cp, &S[1][2], M + 8, kz, M + 2);
    S[2][1] = S[1][2];
    jaxpy(&cp, &S[2][2], M + 9, kz * kz, M);
    jaxpy(&cp, &S[2][2], &S[2][2], 2 * kz, M + 6);
    double share = p->hull_area * p->water_density / p->mass;
    double gnorm = sqrt(p->gravity[0] * p->gravity[0] + p->gravity[1] * p->gravity[1] + p->gravity[2] * p->gravity[2]);
    double lift = p->hull_area * p->water_density * gnorm;
    jet eta[3], flow[3], acc[3], t[3], G;
    for (int i = 0; i < 3; i++) jconst(&cp, eta + i, p->current[i]);
    jrotate(&cp, flow, pose + 1, eta, -2.0);
    for (int i = 0; i < 3; i++) {
        jscale(&cp, acc + i, up + i, lift, 0.0);
        jaxpy(&cp, acc + i, acc + i, share * p->drag[i], flow + i);
    }
    for (int i = 0; i < 3; i++) { /* force: m a - s D (m v + w x M) */
        int j = (i + 1) % 3, k = (i + 2) % 3;
        double sd = -share * p->drag[i];
        jmul(&cp, t, M, acc + i);
        jembed(c, o + 3 + i, 1.0, &cp, t);
        jdisjoint_muladd(c, o + 3 + i, sd, &cp, M, 0, &cn, xi + 3 + i, xi_at);
        jdisjoint_muladd(c, o + 3 + i, sd, &cp, Mv + k, 0, &cn, xi + j, xi_at);
        jdisjoint_muladd(c, o + 3 + i, -sd, &cp, Mv + j, 0, &cn, xi + k, xi_at);
    }
    jcross(&cp, t, Mv, acc);
    for (int i = 0; i < 3; i++) { /* torque: M x a - s M x D v - s G(S) w */
        int j = (i + 1) % 3, k = (i + 2) % 3;
        jembed(c, o + i, 1.0, &cp, t + i);
        jdisjoint_muladd(c, o + i, -share * p->drag[k], &cp, Mv + j, 0, &cn, xi + 3 + k, xi_at);
        jdisjoint_muladd(c, o + i, share * p->drag[j], &cp, Mv + k, 0, &cn, xi + 3 + j, xi_at);
        for (int m = 0; m < 3; m++) { /* G_im = sum_kn S_kn (e_k x D (e_m x e_n))_i */
            jconst(&cp, &G, 0.0);
            for (int a = 0; a < 3; a++)
                for (int b = 0; b < 3; b++) {
                    double mxn[3] = {0, 0, 0}, dv[3], lv;
                    mxn[(m + 1) % 3] = (b == (m + 2) % 3) ? -1.0 : 0.0; /* e_m x e_b */
                    mxn[(m + 2) % 3] = (b == (m + 1) % 3) ? 1.0 : 0.0;
                    for (int e = 0; e < 3; e++) dv[e] = p->drag[e] * mxn[e];
                    lv = (i == (a + 1) % 3) ? -dv[(a + 2) % 3] : ((i == (a + 2) % 3) ? dv[(a + 1) % 3] : 0.0);
                    if (lv != 0.0) jaxpy(&cp, &G, &G, lv, &S[a][b]);
                }
            jdisjoint_muladd(c, o + i, -share, &cp, &G, 0, &cn, xi + m, xi_at);
        }
    }
    return 0;
}

/* The hovercraft's cushion and skirt drag (vehicles/hovercraft.py cushion(), skirt_drag(); shots/holonomic.py
 * _hovercraft_cushion) over jets, added to o (torque, force): corner i compressed by s_i = h0 - x_z - up . c_i > 0
 * lifts (k s_i - c up . (v + w x c_i)) up at c_i (k, c a quarter of the cushion's); the skirt drags
 * -d_j |xi_j| xi_j. */
static void hovercraft_wrench(const symplex_holonomic *p, const jctx *c, jet *o, const jet *xz, const jet *up,
                              const jet *xi) {
    double k = p->cushion_stiffness / 4, damp = p->cushion_damping / 4;
    for (int i = 0; i < 4; i++) {
        const double *ci = p->corners + 3 * i;
        jet raw, mag, cup[3], cc[3], speed, t;
        jscale(c, &raw, xz, -1.0, p->cushion_height);
        for (int j = 0; j < 3; j++) jaxpy(c, &raw, &raw, -ci[j], up + j);
        if (raw.v <= 0.0) continue;
        for (int j = 0; j < 3; j++) jconst(c, cc + j, ci[j]);
        jcross(c, cup, cc, up); /* c_i x up */
        jdot3(c, &speed, cup, xi);
        jdot3(c, &t, up, xi + 3);
        jaxpy(c, &speed, &speed, 1.0, &t);
        jscale(c, &mag, &raw, k, 0.0);
        jaxpy(c, &mag, &mag, -damp, &speed);
        for (int j = 0; j < 3; j++) {
            jmuladd(c, o + j, 1.0, &mag, cup + j);
            jmuladd(c, o + 3 + j, 1.0, &mag, up + j);
        }
    }
    for (int j = 0; j < 6; j++) {
        double d = p->skirt_drag[j], x = xi[j].v, a = fabs(x);
        jet t;
        if (d == 0.0) continue;
        japply(c, &t, xi + j, a * x, 2 * a, x > 0 ? 2.0 : (x < 0 ? -2.0 : 0.0));
        jaxpy(c, o + j, o + j, -d, &t);
    }
}

/* The wrench's rows of one stage: -(h / 2 at the first step, else h) f(pose, node twist, u) with f the
 * vehicle's wrench plus gravity; local variables (q, u, h) for the helicopter, (x_z, q, node twist, u, h) for
 * the boat and the hovercraft. Returns 1 when the boat's hull is outside the model. */
static int wrench_rows(const symplex_holonomic *p, int second, const double *Wk, int first, double hk, int nx,
                       double *r, double *J, double *H, const double *y) {
    int nc = (int)p->nc, nw = 13 + nc, boat = p->kind != 0; /* boat or hovercraft: pose, node twist, thrust */
    int iq = boat ? 1 : 0, ixi = 5, iu = boat ? 11 : 4, ih = iu + nc;
    jctx c = {ih, second}, co = {ih + 1, second}, ch = {1, second}; /* f over all but h; rows = -w h f */
    if (!J && !H) c.n = co.n = ch.n = 0;
    place pl;
    jet q[4], u[4], hj, xi[6], xz, mg[3], f[6], rows[6];
    const double *cur = Wk + nw, *prev = Wk;
    for (int a = 0; a < 4; a++) {
        jvar(&c, q + a, cur[3 + a], iq + a);
        place_set(&pl, iq + a, nw + 3 + a, 1.0);
    }
    for (int a = 0; a < nc; a++) {
        jvar(&c, u + a, cur[7 + a], iu + a);
        jscale(&c, u + a, u + a, p->units[a], 0.0);
        place_set(&pl, iu + a, nw + 7 + a, 1.0);
    }
    jvar(&ch, &hj, hk, 0);
    place_set(&pl, ih, nx, 1.0);
    for (int i = 0; i < 3; i++) jconst(&c, mg + i, p->mass * p->gravity[i]);
    jrotate(&c, f + 3, q, mg, -2.0);
    if (boat) {
        jvar(&c, &xz, cur[2], 0);
        place_set(&pl, 0, nw + 2, 1.0);
        for (int a = 0; a < 6; a++) {
            double node = first ? prev[7 + nc + a] : 0.5 * (prev[7 + nc + a] + cur[7 + nc + a]);
            jvar(&c, xi + a, node, ixi + a);
            if (first) {
                place_set(&pl, ixi + a, 7 + nc + a, 1.0);
            } else {
                place_set(&pl, ixi + a, 7 + nc + a, 0.5);
                pl.col[ixi + a][1] = nw + 7 + nc + a;
                pl.fac[ixi + a][1] = 0.5;
            }
        }
        jet up[3], ez[3];
        for (int i = 0; i < 3; i++) jconst(&c, ez + i, i == 2 ? 1.0 : 0.0);
        jrotate(&c, up, q, ez, -2.0);
        if (p->kind == 1) {
            double node[6];
            for (int a = 0; a < 6; a++) node[a] = xi[a].v;
            for (int i = 0; i < 3; i++) jconst(&c, f + i, 0.0);
            if (boat_water(p, &c, f, cur[2], cur + 3, node, ixi)) return 1;
        } else {
            for (int i = 0; i < 3; i++) jconst(&c, f + i, 0.0);
            hovercraft_wrench(p, &c, f, &xz, up, xi);
        }
        for (int i = 0; i < 6; i++)
            for (int a = 0; a < nc; a++) jaxpy(&c, f + i, f + i, p->thrust[i * nc + a], u + a);
    } else {
        double sp = sin(u[2].v), cp = cos(u[2].v), sr = sin(u[3].v), cr = cos(u[3].v);
        jet Sp, Cp, Sr, Cr, spcr, t;
        japply(&c, &Sp, u + 2, sp, cp, -sp);
        japply(&c, &Cp, u + 2, cp, -sp, -cp);
        japply(&c, &Sr, u + 3, sr, cr, -sr);
        japply(&c, &Cr, u + 3, cr, -sr, -cr);
        jmul(&c, &t, &Sp, &Cr);
        jmul(&c, &spcr, &t, u);
        jmul(&c, f, &Sr, u);
        jscale(&c, f, f, p->rotor_height, 0.0);
        jscale(&c, f + 1, &spcr, p->rotor_height, 0.0);
        jscale(&c, f + 2, u + 1, p->tail_arm, 0.0);
        jaxpy(&c, f + 3, f + 3, 1.0, &spcr);
        jmul(&c, &t, &Sr, u);
        jaxpy(&c, f + 4, f + 4, -1.0, &t);
        jaxpy(&c, f + 4, f + 4, -1.0, u + 1);
        jmul(&c, &t, &Cp, &Cr);
        jmuladd(&c, f + 5, 1.0, &t, u);
    }
    double w = first ? -0.5 : -1.0;
    for (int i = 0; i < 6; i++) {
        jconst(&co, rows + i, 0.0);
        jdisjoint_muladd(&co, rows + i, w, &c, f + i, 0, &ch, &hj, ih);
    }
    scatter(&co, &pl, rows, 6, 7, nx, r, J);
    if (H) scatter_hessian(&co, &pl, rows, 6, 7, nx, H, y);
    return 0;
}

/* Position, attitude and momentum-transport rows of one stage (all but the wrench). */
static void kinematic_rows(const symplex_holonomic *p, int second, const double *Wk, int first, double hk, int nx,
                           double *r, double *J, double *H, const double *y) {
    int nc = (int)p->nc, nw = 13 + nc, ixi = 7 + nc;
    const double *prev = Wk, *cur = Wk + nw, *next = Wk + 2 * nw;
    int deriv = J || H;
    place pl;
    jet q[4], e[6], a[3], b[3], hj, d, inv_d, ab, axb[3], Pb[3], rows[6];
    /* position: x_{k+1} - x_k - R(q) P(h w) h v; local (q, w, v, h). P(h w) h v over (w, v, h) alone, then
     * the rows -sum_j R_ij(q) Pb_j (mode 1), or y . rows = -sum_j (R^T y)_j Pb_j (mode 2), as products of jets
     * over the disjoint (q) and (w, v, h) */
    jctx cq = {deriv ? 4 : 0, second}, cz = {deriv ? 7 : 0, second}, c = {deriv ? 11 : 0, second};
    for (int i = 0; i < 4; i++) {
        jvar(&cq, q + i, cur[3 + i], i);
        place_set(&pl, i, nw + 3 + i, 1.0);
    }
    for (int i = 0; i < 6; i++) {
        jvar(&cz, e + i, cur[ixi + i], i);
        place_set(&pl, 4 + i, nw + ixi + i, 1.0);
    }
    jvar(&cz, &hj, hk, 6);
    place_set(&pl, 10, nx, 1.0);
    for (int i = 0; i < 3; i++) {
        jmul(&cz, a + i, &hj, e + i);
        jmul(&cz, b + i, &hj, e + 3 + i);
    }
    jdot3(&cz, &d, a, a);
    jscale(&cz, &d, &d, 1.0, 4.0);
    japply(&cz, &inv_d, &d, 1.0 / d.v, -1.0 / (d.v * d.v), 2.0 / (d.v * d.v * d.v));
    jdot3(&cz, &ab, a, b);
    jcross(&cz, axb, a, b);
    for (int i = 0; i < 3; i++) {
        jet t;
        jscale(&cz, &t, b + i, 4.0, 0.0);
        jaxpy(&cz, &t, &t, 2.0, axb + i);
        jmuladd(&cz, &t, 1.0, a + i, &ab);
        jmul(&cz, Pb + i, &t, &inv_d);
    }
    jet A[3][3], yv[3];
    if (H) { /* A[0][j] = (R^T y)_j */
        for (int i = 0; i < 3; i++) jconst(&cq, yv + i, y[i]);
        jrotate(&cq, A[0], q, yv, -2.0);
        jconst(&c, rows, 0.0);
        for (int j = 0; j < 3; j++) jdisjoint_muladd(&c, rows, -1.0, &cq, &A[0][j], 0, &cz, Pb + j, 4);
        add_hessian(&c, &pl, rows->H, nx, H);
    } else { /* A[i][j] = R_ij: column j is R e_j */
        for (int j = 0; j < 3; j++) {
            for (int i = 0; i < 3; i++) jconst(&cq, yv + i, i == j ? 1.0 : 0.0);
            jrotate(&cq, A[j], q, yv, 2.0);
        }
        for (int i = 0; i < 3; i++) {
            jconst(&c, rows + i, next[i] - cur[i]);
            for (int j = 0; j < 3; j++) jdisjoint_muladd(&c, rows + i, -1.0, &cq, &A[j][i], 0, &cz, Pb + j, 4);
            if (J) {
                J[i * (nx + 1) + 2 * nw + i] += 1.0;
                J[i * (nx + 1) + nw + i] -= 1.0;
            }
        }
        scatter(&c, &pl, rows, 3, 0, nx, r, J);
    }
    /* attitude: q_{k+1} - q (x) c(h w) = q_{k+1} - L(q) c, c = (2, h w) / sqrt(4 + |h w|^2); local (q, w, h):
     * c over (w, h), L(q) linear in q, combined as above */
    static const int lidx[4][4] = {{0, 1, 2, 3}, {1, 0, 3, 2}, {2, 3, 0, 1}, {3, 2, 1, 0}};
    static const double lsgn[4][4] = {{1, -1, -1, -1}, {1, 1, -1, 1}, {1, 1, 1, -1}, {1, -1, 1, 1}};
    jctx cw = {deriv ? 4 : 0, second};
    c.n = deriv ? 8 : 0;
    place_set(&pl, 7, nx, 1.0);
    jet ws[3], hs, as[3], ds, rr, cquat[4], Lq[4];
    for (int i = 0; i < 3; i++) jvar(&cw, ws + i, cur[ixi + i], i);
    jvar(&cw, &hs, hk, 3);
    for (int i = 0; i < 3; i++) jmul(&cw, as + i, &hs, ws + i);
    jdot3(&cw, &ds, as, as);
    jscale(&cw, &ds, &ds, 1.0, 4.0);
    double sq = sqrt(ds.v);
    japply(&cw, &rr, &ds, 1.0 / sq, -0.5 / (sq * ds.v), 0.75 / (sq * ds.v * ds.v));
    jscale(&cw, cquat, &rr, 2.0, 0.0);
    for (int i = 0; i < 3; i++) jmul(&cw, cquat + 1 + i, as + i, &rr);
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 4; j++) { /* Lq[j] = L(q)_ij, or sum_i y_i L(q)_ij (mode 2) */
            if (H) {
                if (i == 0) jconst(&cq, Lq + j, 0.0);
                Lq[j].v += y[3 + i] * lsgn[i][j] * q[lidx[i][j]].v;
                if (deriv) Lq[j].g[lidx[i][j]] += y[3 + i] * lsgn[i][j];
            } else {
                jconst(&cq, Lq + j, lsgn[i][j] * q[lidx[i][j]].v);
                if (deriv) Lq[j].g[lidx[i][j]] = lsgn[i][j];
            }
        }
        if (H) continue;
        jconst(&c, rows + i, next[3 + i]);
        for (int j = 0; j < 4; j++) jdisjoint_muladd(&c, rows + i, -1.0, &cq, Lq + j, 0, &cw, cquat + j, 4);
        if (J) J[(3 + i) * (nx + 1) + 2 * nw + 3 + i] += 1.0;
    }
    if (H) {
        jconst(&c, rows, 0.0);
        for (int j = 0; j < 4; j++) jdisjoint_muladd(&c, rows, -1.0, &cq, Lq + j, 0, &cw, cquat + j, 4);
        add_hessian(&c, &pl, rows->H, nx, H);
    } else {
        scatter(&c, &pl, rows, 4, 3, nx, r, J);
    }
    /* momentum: C(h xi_k)^T I xi_k - (I xi_{k-1} at the first step, else C(-h xi_{k-1})^T I xi_{k-1});
     * local (xi, h) of each */
    c.n = deriv ? 7 : 0;
    for (int side = 0; side < 2; side++) {
        const double *st = side ? prev : cur;
        double sign = side ? -1.0 : 1.0;
        jet xi[6], mu[6], eh[6];
        for (int i = 0; i < 6; i++) {
            jvar(&c, xi + i, st[ixi + i], i);
            place_set(&pl, i, (side ? 0 : nw) + ixi + i, 1.0);
        }
        place_set(&pl, 6, nx, 1.0);
        jvar(&c, &hj, hk, 6);
        jinertia(&c, mu, p->inertia, xi);
        for (int i = 0; i < 6; i++) {
            if (side && first)
                jconst(&c, eh + i, 0.0);
            else
                jmul(&c, eh + i, &hj, xi + i);
            jscale(&c, eh + i, eh + i, sign, 0.0);
        }
        jtransport(&c, rows, eh, mu);
        for (int i = 0; i < 6; i++) jscale(&c, rows + i, rows + i, sign, 0.0);
        scatter(&c, &pl, rows, 6, 7, nx, r, J);
    if (H) scatter_hessian(&c, &pl, rows, 6, 7, nx, H, y);
    }
}

int64_t symplex_holonomic_step(const symplex_holonomic *p, int64_t K, int64_t mode, const double *W,
                               const int64_t *first, const double *h, const double *y, double *r, double *J,
                               double *H) {
    int nw = 13 + (int)p->nc, nx = 3 * nw, nr = 13;
    int64_t outside = 0;
    for (int64_t k = 0; k < K; k++) {
        const double *Wk = W + k * nx;
        double *rk = r + k * nr, *Jk = mode == 1 ? J + k * nr * (nx + 1) : 0, *Hk = mode == 2 ? H + k * (nx + 1) * (nx + 1) : 0;
        const double *yk = mode == 2 ? y + k * nr : 0;
        memset(rk, 0, sizeof(double) * (size_t)nr);
        if (Jk) memset(Jk, 0, sizeof(double) * (size_t)(nr * (nx + 1)));
        if (Hk) memset(Hk, 0, sizeof(double) * (size_t)((nx + 1) * (nx + 1)));
        kinematic_rows(p, mode == 2, Wk, (int)first[k], h[k], nx, rk, Jk, Hk, yk);
        outside += wrench_rows(p, mode == 2, Wk, (int)first[k], h[k], nx, rk, Jk, Hk, yk);
    }
    return outside;
}

int64_t symplex_holonomic_struct_size(void) { return (int64_t)sizeof(symplex_holonomic); }

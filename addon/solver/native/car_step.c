/* The car's discrete step equations as shot rows (addon/solver/shots/car.py, its numpy twin and reference):
 * the four residuals of each step k, their Jacobian over the window (stages k-1, k, k+1 of 6 variables each, then
 * the step h: 19 slots) and the exact Hessian of sum_i y_i r_i over the window, for all steps in one call.
 * Declared in symplex_kernels.h; formulas and slot names as in car.py (CarDynamics.residual, residual_hessian). */
#include <math.h>
#include <string.h>

#include "symplex_kernels.h"

#define NW 19   /* window slots: 3 stages x (theta, x, y, phi, d, u), then h */
#define SMALL 1e-3

/* tan of the steering angles phi of a step's three stages (previous, own, next): a stage's value is the previous
 * step's own or next one when its angle has the same bits there (consecutive steps share two stages), else tan
 * again; the same function of the same argument, so the same bits. known: the previous step's angles and tans of
 * its own and next stage, updated (starting as the consistent pairs 0 -> tan 0 = 0). */
static void steer_slopes(const double *w0, const double *w1, const double *w2, double known[2][2], double out[3]) {
    const double phi[3] = {w0[3], w1[3], w2[3]};
    for (int i = 0; i < 2; ++i) {
        uint64_t a, b;
        memcpy(&a, &phi[i], sizeof a);
        memcpy(&b, &known[i][0], sizeof b);
        out[i] = a == b ? known[i][1] : tan(phi[i]);
    }
    out[2] = tan(phi[2]);
    known[0][0] = phi[1];
    known[0][1] = out[1];
    known[1][0] = phi[2];
    known[1][1] = out[2];
}

/* A = sin w / w, B = (1 - cos w) / w, their first and second derivatives (series below |w| = SMALL). */
static void arc(double w, double out[6]) {
    double w2 = w * w;
    if (fabs(w) < SMALL) {
        out[0] = 1 - w2 / 6 + w2 * w2 / 120;
        out[1] = w / 2 - w * w2 / 24 + w * w2 * w2 / 720;
        out[2] = -w / 3 + w * w2 / 30;
        out[3] = 0.5 - w2 / 8 + w2 * w2 / 144;
        out[4] = -1.0 / 3 + w2 / 10 - w2 * w2 / 168;
        out[5] = -w / 4 + w * w2 / 36 - w * w2 * w2 / 960;
        return;
    }
    double s = sin(w), c = cos(w), h = sin(0.5 * w);
    out[0] = s / w;
    out[1] = (1 - c) / w;
    out[2] = (w * c - s) / w2;
    out[3] = (w * s - 1 + c) / w2;
    out[4] = ((2 - w2) * s - 2 * w * c) / (w2 * w);
    out[5] = (w2 * c - 2 * w * s + 4 * h * h) / (w2 * w);
}

/* par: alpha, rho, rho / wheelbase, coupling c, m0 = rho^2 m, unit (the drive variable is d / unit). */
void symplex_car_step(int64_t K, const double *W, int64_t w_stride, const int64_t *first, const double *h,
                      int64_t h_stride, const double *par, double *r, double *J) {
    const double a = par[0], rho = par[1], kk = par[2], c = par[3], m0 = par[4], unit = par[5];
    double known[2][2] = {{0.0, 0.0}, {0.0, 0.0}}, slope[3];
    for (int64_t k = 0; k < K; ++k) {
        const double *w0 = W + w_stride * k, *w1 = w0 + 6, *w2 = w0 + 12;
        const double hh = h[h_stride * k];
        const double dp = unit * w0[4], wp = w0[5];
        const double th = w1[0], d = unit * w1[4], u = w1[5];
        steer_slopes(w0, w1, w2, known, slope);
        const double sp = slope[0], s = slope[1], sn = slope[2];
        const double ds_p = 1 + sp * sp, ds = 1 + s * s, ds_n = 1 + sn * sn;
        const double sm = (1 - a) * s + a * sn;
        const double smp = first[k] ? s : (1 - a) * sp + a * s;
        const double smp_s = first[k] ? 1.0 : a, smp_sp = first[k] ? 0.0 : 1 - a;
        const double Ia = m0 + c * s * sm, Ib = m0 + c * s * smp;
        double *rk = r + 4 * k;
        rk[0] = Ia * u - Ib * wp - hh * ((1 - a) * d + a * dp);
        const double om = hh * kk * sm * u, v = hh * rho * u;
        rk[1] = w2[0] - th - om;
        double ar[6];
        arc(om, ar);
        const double A = ar[0], B = ar[1], dA = ar[2], dB = ar[3];
        const double T1 = v * A, T2 = v * B, ct = cos(th), st = sin(th);
        rk[2] = w2[1] - w1[1] - (ct * T1 - st * T2);
        rk[3] = w2[2] - w1[2] - (st * T1 + ct * T2);
        double *J0 = J + 4 * NW * k, *J1 = J0 + NW, *J2 = J1 + NW, *J3 = J2 + NW;
        memset(J0, 0, 4 * NW * sizeof(double));
        /* momentum row */
        J0[6 + 3] = (c * (sm + s * (1 - a)) * u - c * (smp + s * smp_s) * wp) * ds;
        J0[12 + 3] = c * s * a * u * ds_n;
        J0[3] = -c * s * smp_sp * wp * ds_p;
        J0[6 + 5] = Ia;
        J0[5] = -Ib;
        J0[6 + 4] = -hh * (1 - a) * unit;
        J0[4] = -hh * a * unit;
        J0[18] = -((1 - a) * d + a * dp);
        /* turn om and arc length v over the slots phi_k (9), phi_k+1 (15), u_k (11) and h (18) */
        const double om_s = hh * kk * (1 - a) * u * ds, om_sn = hh * kk * a * u * ds_n, om_u = hh * kk * sm;
        const double om_h = kk * sm * u, v_u = hh * rho, v_h = rho * u;
        J1[12] = 1.0;
        J1[6] = -1.0;
        J1[9] = -om_s;
        J1[15] = -om_sn;
        J1[11] = -om_u;
        J1[18] = -om_h;
        /* arc rows: d(T1, T2) = v (dA, dB) dom + (A, B) dv */
        const int slot[4] = {9, 15, 11, 18};
        const double dom[4] = {om_s, om_sn, om_u, om_h}, dv[4] = {0.0, 0.0, v_u, v_h};
        for (int i = 0; i < 4; ++i) {
            const double dT1 = v * dA * dom[i] + A * dv[i], dT2 = v * dB * dom[i] + B * dv[i];
            J2[slot[i]] = -(ct * dT1 - st * dT2);
            J3[slot[i]] = -(st * dT1 + ct * dT2);
        }
        J2[13] += 1.0;
        J2[7] -= 1.0;
        J3[14] += 1.0;
        J3[8] -= 1.0;
        J2[6] += st * T1 + ct * T2;
        J3[6] += -ct * T1 + st * T2;
    }
}

/* Slots of the window entering nonlinearly (car.py CarDynamics.hessian_slots), the Hessian's rows and columns: phi,
 * d, u of stage k-1 (window slots 3, 4, 5); theta, phi, d, u of stage k (6, 9, 10, 11); phi of stage k+1 (15); h (18). */
enum { SP, DP, WP, TH, S, D, U, SN, HH, NC };

static void add(double H[NC][NC], int i, int j, double value) {
    H[i][j] += value;
    if (i != j)
        H[j][i] += value;
}

void symplex_car_step_hessian(int64_t K, const double *W, int64_t w_stride, const int64_t *first, const double *h,
                              int64_t h_stride, const double *par, const double *y, double *out,
                              const int64_t *positions, int64_t n_positions) {
    const double a = par[0], rho = par[1], kk = par[2], c = par[3], unit = par[5];
    double known[2][2] = {{0.0, 0.0}, {0.0, 0.0}}, tans[3];
    for (int64_t k = 0; k < K; ++k) {
        const double *w0 = W + w_stride * k, *w1 = w0 + 6, *w2 = w0 + 12, *yk = y + 4 * k;
        const double hh = h[h_stride * k], wp = w0[5], th = w1[0], u = w1[5];
        steer_slopes(w0, w1, w2, known, tans);
        const double sp = tans[0], s = tans[1], sn = tans[2];
        const double sm = (1 - a) * s + a * sn;
        const double smp_s = first[k] ? 1.0 : a, smp_sp = first[k] ? 0.0 : 1 - a;
        const double smp = first[k] ? s : (1 - a) * sp + a * s;
        const double y0 = yk[0], y1 = yk[1];
        double H[NC][NC];
        memset(H, 0, sizeof H);
        /* momentum row r0 = (m0 + c s sm) u - (m0 + c s smp) u_prev - unit h ((1 - a) d + a d_prev) */
        add(H, S, S, y0 * 2 * c * ((1 - a) * u - smp_s * wp));
        add(H, S, SN, y0 * c * a * u);
        add(H, S, SP, -y0 * c * smp_sp * wp);
        add(H, S, U, y0 * c * (sm + (1 - a) * s));
        add(H, S, WP, -y0 * c * (smp + s * smp_s));
        add(H, SN, U, y0 * c * a * s);
        add(H, SP, WP, -y0 * c * s * smp_sp);
        add(H, D, HH, -y0 * unit * (1 - a));
        add(H, DP, HH, -y0 * unit * a);
        /* turn om and arc length v: -v G(theta, om) in the arc rows, Gauss-Newton part through (theta, om, v) */
        const double om = kk * hh * sm * u, v = rho * hh * u;
        double om_z[NC] = {0};
        om_z[S] = kk * hh * (1 - a) * u;
        om_z[SN] = kk * hh * a * u;
        om_z[U] = kk * hh * sm;
        om_z[HH] = kk * sm * u;
        double ar[6];
        arc(om, ar);
        const double A = ar[0], B = ar[1], dA = ar[2], dB = ar[3], d2A = ar[4], d2B = ar[5];
        const double ct = cos(th), st = sin(th);
        const double P = yk[2] * ct + yk[3] * st, Q = yk[3] * ct - yk[2] * st;
        const double G = P * A + Q * B, G_th = Q * A - P * B, G_om = P * dA + Q * dB;
        const double outer[3][3] = {{v * G, -v * (Q * dA - P * dB), -G_th},
                                    {-v * (Q * dA - P * dB), -v * (P * d2A + Q * d2B), -G_om},
                                    {-G_th, -G_om, 0.0}};
        double inner[3][NC] = {{0}};
        inner[0][TH] = 1.0;
        memcpy(inner[1], om_z, sizeof om_z);
        inner[2][U] = rho * hh;
        inner[2][HH] = rho * u;
        /* inner is zero outside the slots theta, phi, phi_next, u, h: the other rows and columns gain nothing. Of
         * the terms inner[p][i] outer[p][q] inner[q][j] only those whose inner factors can be nonzero are summed
         * (p, q in order): the others are zeros, which leave the sum's bits as they are. The loops are unrolled (the
         * sets are constants: half the kernel's time, the same sums) */
        static const int MOVED[5] = {TH, S, SN, U, HH};
        static const int DEPENDS[5][3] = {{1, 0, 0}, {0, 1, 0}, {0, 1, 0}, {0, 1, 1}, {0, 1, 1}}; /* inner[p][MOVED[a]] */
#pragma GCC unroll 5
        for (int a = 0; a < 5; ++a)
#pragma GCC unroll 5
            for (int b = 0; b < 5; ++b) {
                const int i = MOVED[a], j = MOVED[b];
                double sum = 0.0;
#pragma GCC unroll 3
                for (int p = 0; p < 3; ++p) {
                    if (!DEPENDS[a][p])
                        continue;
#pragma GCC unroll 3
                    for (int q = 0; q < 3; ++q)
                        if (DEPENDS[b][q])
                            sum += inner[p][i] * outer[p][q] * inner[q][j];
                }
                H[i][j] += sum;
            }
        const double om_weight = -y1 - v * G_om; /* dL / d om */
        add(H, S, U, om_weight * kk * hh * (1 - a));
        add(H, S, HH, om_weight * kk * (1 - a) * u);
        add(H, SN, U, om_weight * kk * hh * a);
        add(H, SN, HH, om_weight * kk * a * u);
        add(H, U, HH, om_weight * kk * sm - G * rho);
        /* chain rule sigma = tan phi */
        const double L_s = y0 * c * ((sm + (1 - a) * s) * u - (smp + s * smp_s) * wp) + om_weight * om_z[S];
        const double L_sn = y0 * c * a * s * u + om_weight * om_z[SN];
        const double L_sp = -y0 * c * s * smp_sp * wp;
        double slope[NC];
        for (int i = 0; i < NC; ++i)
            slope[i] = 1.0;
        slope[SP] = 1 + sp * sp;
        slope[S] = 1 + s * s;
        slope[SN] = 1 + sn * sn;
#pragma GCC unroll 9
        for (int i = 0; i < NC; ++i)
#pragma GCC unroll 9
            for (int j = 0; j < NC; ++j)
                H[i][j] *= slope[i] * slope[j];
        H[SP][SP] += L_sp * 2 * sp * slope[SP];
        H[S][S] += L_s * 2 * s * slope[S];
        H[SN][SN] += L_sn * 2 * sn * slope[SN];
        for (int64_t i = 0; i < n_positions; ++i)
            out[n_positions * k + i] = (&H[0][0])[positions[i]];
    }
}

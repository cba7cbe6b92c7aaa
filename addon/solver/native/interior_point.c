/* The shots' interior point's vector loops over the bounded variables (declared in symplex_kernels.h; bound in
 * native/interior_point_binding.py; numpy twins: step_to_bounds_numpy and near_central_path_numpy there, which
 * addon/solver/shots/nlp.py uses when the library is not built). Each does the twin's floating-point operations in
 * the twin's order, one product or quotient per statement (no fused multiply-add), so the results are the same bits:
 * - step_to_bounds: the fraction-to-boundary rule, the largest alpha in (0, 1] keeping x + alpha dx within a fraction
 *   tau of the way to each bound (a nan ratio limits nothing, as numpy's fmin skips it).
 * - near_central_path: a bound multiplier's step z + alpha dz, then clipped to [mu / (1e10 dist), 1e10 mu / dist] as
 *   np.maximum and np.minimum do it (a nan propagates).
 * - barrier_terms: a Newton step's barrier terms (zL / dl, zU / du, their sum sigma, mu / dl, mu / du, the barrier
 *   gradient g - mu / dl + mu / du) and its right-hand side -(that gradient, c).
 * - multiplier_steps: the bound multipliers' Newton steps from the primal step dz and the fraction-to-boundary step
 *   that keeps them positive.
 * - bound_distances: x's distances to its finite lower bounds, then to its finite upper bounds (by index), and the
 *   smallest of them (nan skipped, as numpy's fmin does; inf when there is none).
 * - bound_products: the complementarity products over the same entries. */
#include <math.h>

#include "symplex_kernels.h"

/* The smaller of current and scaled / dx (a nan ratio is not smaller: skipped, as numpy's fmin does). */
static double smaller_ratio(double scaled, double dx, double current) {
    double ratio = scaled / dx;
    return ratio < current ? ratio : current;
}

/* min(1.0, ratio) as Python's min(1.0, ratio) gives it (1.0 unless the ratio is smaller). */
static double at_most_one(double ratio) {
    return ratio < 1.0 ? ratio : 1.0;
}

double symplex_step_to_bounds(int64_t n, const double *dist_lo, const double *dist_up, const double *dx, double tau) {
    double lo = INFINITY, up = INFINITY, minus_tau = -tau;
    for (int64_t i = 0; i < n; ++i) {
        if (dx[i] < 0) {
            double scaled = minus_tau * dist_lo[i];
            lo = smaller_ratio(scaled, dx[i], lo);
        } else if (dist_up != 0 && dx[i] > 0) {
            double scaled = tau * dist_up[i];
            up = smaller_ratio(scaled, dx[i], up);
        }
    }
    double alpha = at_most_one(lo);
    return up < alpha ? up : alpha;
}

void symplex_barrier_terms(int64_t n, int64_t m, const double *g, const double *zL, const double *zU, const double *dl,
                           const double *du, double mu, const double *c, double *terms, double *rhs) {
    double *zl_dl = terms, *zu_du = terms + n, *sigma = terms + 2 * n, *pull_lo = terms + 3 * n;
    double *pull_up = terms + 4 * n, *grad_phi = terms + 5 * n;
    for (int64_t i = 0; i < n; ++i) {
        zl_dl[i] = zL[i] / dl[i];
        zu_du[i] = zU[i] / du[i];
        sigma[i] = zl_dl[i] + zu_du[i];
        pull_lo[i] = mu / dl[i];
        pull_up[i] = mu / du[i];
        double partial = g[i] - pull_lo[i];
        grad_phi[i] = partial + pull_up[i];
        rhs[i] = -grad_phi[i];
    }
    for (int64_t j = 0; j < m; ++j)
        rhs[n + j] = -c[j];
}

double symplex_multiplier_steps(int64_t n, const double *zL, const double *zU, const double *terms, const double *dz,
                                double tau, double *dzL, double *dzU) {
    const double *zl_dl = terms, *zu_du = terms + n, *pull_lo = terms + 3 * n, *pull_up = terms + 4 * n;
    double lo = INFINITY, up = INFINITY, minus_tau = -tau;
    for (int64_t i = 0; i < n; ++i) {
        double pulled = pull_lo[i] - zL[i], moved = zl_dl[i] * dz[i];
        dzL[i] = pulled - moved;
        pulled = pull_up[i] - zU[i];
        moved = zu_du[i] * dz[i];
        dzU[i] = pulled + moved;
        if (dzL[i] < 0)
            lo = smaller_ratio(minus_tau * zL[i], dzL[i], lo);
        if (dzU[i] < 0)
            up = smaller_ratio(minus_tau * zU[i], dzU[i], up);
    }
    double alpha_lo = at_most_one(lo), alpha_up = at_most_one(up);
    return alpha_up < alpha_lo ? alpha_up : alpha_lo;
}

void symplex_near_central_path(int64_t n, const double *z, double alpha, const double *dz, double mu,
                               const double *dist, double *out) {
    double mu_up = 1e10 * mu;
    for (int64_t i = 0; i < n; ++i) {
        double step = alpha * dz[i];
        double value = z[i] + step;
        double scaled = 1e10 * dist[i];
        double low = mu / scaled, high = mu_up / dist[i];
        value = (value >= low || value != value) ? value : low;
        out[i] = (value <= high || value != value) ? value : high;
    }
}

double symplex_bound_distances(int64_t n_lo, const int64_t *lo, const double *lo_value, int64_t n_up, const int64_t *up,
                               const double *up_value, const double *x, double *out) {
    double nearest = INFINITY;
    for (int64_t k = 0; k < n_lo; ++k) {
        out[k] = x[lo[k]] - lo_value[k];
        if (out[k] < nearest)
            nearest = out[k];
    }
    for (int64_t k = 0; k < n_up; ++k) {
        out[n_lo + k] = up_value[k] - x[up[k]];
        if (out[n_lo + k] < nearest)
            nearest = out[n_lo + k];
    }
    return nearest;
}

void symplex_bound_products(int64_t n_lo, const int64_t *lo, int64_t n_up, const int64_t *up, const double *dl,
                            const double *zL, const double *du, const double *zU, double *out) {
    for (int64_t k = 0; k < n_lo; ++k)
        out[k] = dl[lo[k]] * zL[lo[k]];
    for (int64_t k = 0; k < n_up; ++k)
        out[n_lo + k] = du[up[k]] * zU[up[k]];
}

/* The shots' interior point's vector loops over the bounded variables (declared in symplex_kernels.h; bound in
 * native/interior_point_binding.py; numpy twins: step_to_bounds_numpy and near_central_path_numpy there, which
 * addon/solver/shots/nlp.py uses when the library is not built). Each does the twin's floating-point operations in
 * the twin's order, one product or quotient per statement (no fused multiply-add), so the results are the same bits:
 * - step_to_bounds: the fraction-to-boundary rule, the largest alpha in (0, 1] keeping x + alpha dx within a fraction
 *   tau of the way to each bound (a nan ratio limits nothing, as numpy's fmin skips it).
 * - near_central_path: a bound multiplier's step z + alpha dz, then clipped to [mu / (1e10 dist), 1e10 mu / dist] as
 *   np.maximum and np.minimum do it (a nan propagates).
 * - bound_distances: x's distances to its finite lower bounds, then to its finite upper bounds (by index), and the
 *   smallest of them (nan skipped, as numpy's fmin does; inf when there is none). */
#include <math.h>

#include "symplex_kernels.h"

double symplex_step_to_bounds(int64_t n, const double *dist_lo, const double *dist_up, const double *dx, double tau) {
    double lo = INFINITY, up = INFINITY;
    for (int64_t i = 0; i < n; ++i) {
        if (dx[i] < 0) {
            double scaled = -tau * dist_lo[i];
            double ratio = scaled / dx[i];
            if (ratio < lo)
                lo = ratio;
        } else if (dist_up != 0 && dx[i] > 0) {
            double scaled = tau * dist_up[i];
            double ratio = scaled / dx[i];
            if (ratio < up)
                up = ratio;
        }
    }
    double alpha = lo < 1.0 ? lo : 1.0;
    return up < alpha ? up : alpha;
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

/* The shots' interior point's vector loops over the bounded variables (declared in symplex_kernels.h; bound in
 * native/interior_point_binding.py; numpy twins: the *_numpy functions there, which addon/solver/shots/nlp.py uses
 * when the library is not built). Each does the twin's floating-point operations in
 * the twin's order, one product or quotient per statement (no fused multiply-add), so the results are the same bits:
 * - step_to_bounds: the fraction-to-boundary rule, the largest alpha in (0, 1] keeping x + alpha dx within a fraction
 *   tau of the way to each bound (a nan ratio limits nothing, as numpy's fmin skips it).
 * - barrier_terms: a Newton step's barrier terms (zL / dl, zU / du, their sum sigma, mu / dl, mu / du, the barrier
 *   gradient g - mu / dl + mu / du) and its right-hand side -(that gradient, c).
 * - multiplier_steps: the bound multipliers' Newton steps from the primal step dz and the fraction-to-boundary step
 *   that keeps them positive.
 * - optimality: an iteration's measures, the largest |J^T y + g - zL + zU| (the dual infeasibility before its scaling)
 *   and the complementarity products over the lower bounds, then the upper ones, with the largest of each (maxima are
 *   exact in any order: a nan anywhere is the result, as np.maximum.reduce gives it).
 * - bound_distances: x's distances to its finite lower bounds, then to its finite upper ones (the log barrier's, whose
 *   logarithms numpy takes: its SIMD log is not libm's), and the smallest (nan skipped, as np.fmin.reduce does).
 * - accepted_step: at the line search's accepted point, the distances to the bounds and the bound multipliers stepped
 *   and clipped near the central path (IPOPT's kappa_Sigma), in place: one pass over the vectors where numpy makes
 *   fourteen. np.maximum and np.minimum are taken as numpy's scalar loops give them (a nan operand is the result; of
 *   two equal numbers the first, which differs from its SIMD loops only for 0 and -0: the multipliers are +0 where
 *   there is no bound, and so are both limits).
 * barrier_terms, whose time is its four divisions an entry, works on pairs of entries (GCC / clang vector extensions:
 * SSE2 or NEON, in every build): each lane's operations are the scalar ones, correctly rounded, so the bits are the
 * same; a pair's division costs one scalar division (the library is built without -march). Not accepted_step: its
 * clipping selects lane by lane, which baseline SSE2 has no instruction for (GCC makes scalar moves of them). */
#include <math.h>
#include <string.h>

#include "symplex_kernels.h"

typedef double pair __attribute__((vector_size(16)));

/* Entries i, i + 1 of p (count 2), or entry i twice (count 1: a vector's odd last entry). */
static pair load(const double *p, int64_t count) {
    pair v = {p[0], p[0]};
    if (count == 2)
        memcpy(&v, p, sizeof v);
    return v;
}

/* The first count lanes of v into p. */
static void store(double *p, pair v, int64_t count) {
    if (count == 2)
        memcpy(p, &v, sizeof v);
    else
        p[0] = v[0];
}

/* Entries left from i in a vector of n, at most a pair. */
static int64_t pair_count(int64_t n, int64_t i) {
    return n - i < 2 ? 1 : 2;
}

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
        /* an entry without the bound (distance inf) has the ratio inf, or nan for an infinite dx: never smaller */
        if (dx[i] < 0 && dist_lo[i] != INFINITY) {
            double scaled = minus_tau * dist_lo[i];
            lo = smaller_ratio(scaled, dx[i], lo);
        } else if (dist_up != 0 && dx[i] > 0 && dist_up[i] != INFINITY) {
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
    pair mus = {mu, mu};
    for (int64_t i = 0; i < n; i += 2) {
        int64_t k = pair_count(n, i);
        pair lo = load(dl + i, k), up = load(du + i, k);
        pair zl_dl_i = load(zL + i, k) / lo, zu_du_i = load(zU + i, k) / up;
        pair pull_lo_i = mus / lo, pull_up_i = mus / up;
        pair partial = load(g + i, k) - pull_lo_i;
        pair grad_phi_i = partial + pull_up_i;
        store(zl_dl + i, zl_dl_i, k);
        store(zu_du + i, zu_du_i, k);
        store(sigma + i, zl_dl_i + zu_du_i, k);
        store(pull_lo + i, pull_lo_i, k);
        store(pull_up + i, pull_up_i, k);
        store(grad_phi + i, grad_phi_i, k);
        store(rhs + i, -grad_phi_i, k);
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

/* np.maximum(a, b) of numpy's scalar loop: a when a >= b or a is nan, else b (nan when b is). */
static double numpy_maximum(double a, double b) {
    return (a >= b || isnan(a)) ? a : b;
}

/* np.minimum(a, b) of numpy's scalar loop: a when a <= b or a is nan, else b. */
static double numpy_minimum(double a, double b) {
    return (a <= b || isnan(a)) ? a : b;
}

/* The bound multiplier z + alpha dz, clipped to [mu / (1e10 dist), (1e10 mu) / dist] (the larger with the lower limit,
 * then the smaller with the upper; both 0 where dist is inf), as the numpy twin's operations give it. */
static double near_central_path(double z, double alpha, double dz, double mu, double big_mu, double dist) {
    double move = dz * alpha;
    double stepped = z + move;
    double limit = dist * 1e10;
    double lower = mu / limit;
    double upper = big_mu / dist;
    return numpy_minimum(numpy_maximum(stepped, lower), upper);
}

void symplex_accepted_step(int64_t n, const double *z, const double *lower, const double *upper, double alpha,
                           const double *dzL, const double *dzU, double mu, double *dl, double *du, double *zL,
                           double *zU) {
    double big_mu = 1e10 * mu;
    for (int64_t i = 0; i < n; ++i) {
        dl[i] = z[i] - lower[i];
        du[i] = upper[i] - z[i];
        zL[i] = near_central_path(zL[i], alpha, dzL[i], mu, big_mu, dl[i]);
        zU[i] = near_central_path(zU[i], alpha, dzU[i], mu, big_mu, du[i]);
    }
}

/* The larger of the running maximum and v, nan once either is (np.maximum.reduce's propagation). */
static double running_max(double current, double v) {
    return (v > current || isnan(v)) ? v : current;
}

/* products[k] = dist[at[k]] * z[at[k]] over n entries; returns their maximum (initial 0). */
static double products_at(int64_t n, const int64_t *at, const double *dist, const double *z, double *products) {
    double largest = 0.0;
    for (int64_t k = 0; k < n; ++k) {
        products[k] = dist[at[k]] * z[at[k]];
        largest = running_max(largest, products[k]);
    }
    return largest;
}

void symplex_optimality(int64_t n, const double *jt_y, const double *g, const double *zL, const double *zU,
                        const double *dl, const double *du, int64_t n_lo, const int64_t *lo, int64_t n_up,
                        const int64_t *up, double *products, double *largest) {
    double dual = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double sum = jt_y[i] + g[i];
        double less = sum - zL[i];
        double lag = less + zU[i];
        dual = running_max(dual, fabs(lag));
    }
    largest[0] = dual;
    largest[1] = products_at(n_lo, lo, dl, zL, products);
    largest[2] = products_at(n_up, up, du, zU, products + n_lo);
}

double symplex_bound_distances(int64_t n_lo, const int64_t *lo, const double *lo_value, int64_t n_up,
                               const int64_t *up, const double *up_value, const double *x, double *dist) {
    double smallest = INFINITY;
    for (int64_t k = 0; k < n_lo; ++k) {
        dist[k] = x[lo[k]] - lo_value[k];
        smallest = dist[k] < smallest ? dist[k] : smallest;
    }
    for (int64_t k = 0; k < n_up; ++k) {
        dist[n_lo + k] = up_value[k] - x[up[k]];
        smallest = dist[n_lo + k] < smallest ? dist[n_lo + k] : smallest;
    }
    return smallest;
}

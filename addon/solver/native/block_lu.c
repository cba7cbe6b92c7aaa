/* Block-sparse LU with a static order, partial pivoting inside each pivot block; see block_lu.h.
 * numpy twin and reference: addon/solver/maximal/contact_ldu.py (factor_numpy, solve_numpy). */
#include <math.h>

#include "block_lu.h"
#include "pivot.h"

/* Dense LU of the d x d row-major block in place, P a = L U, row exchanges in piv; 0, or 1 on an
 * exactly zero or non-finite pivot. */
static int lu_in_place(int64_t d, double *a, int64_t *piv) {
    for (int64_t k = 0; k < d; k++) {
        int64_t p = symplex_pivot_row(d, k, a);
        if (p < 0) return 1;
        piv[k] = p;
        double inv = 1.0 / a[k * d + k];
        for (int64_t i = k + 1; i < d; i++) {
            double f = a[i * d + k] * inv;
            a[i * d + k] = f;
            if (f == 0.0) continue;
            for (int64_t j = k + 1; j < d; j++) a[i * d + j] -= f * a[k * d + j];
        }
    }
    return 0;
}

/* b (d x n) <- L^-1 P b: the block's row exchanges, then forward substitution with unit lower L. */
static void lower_solve(int64_t d, const double *lu, const int64_t *piv, int64_t n, double *b) {
    for (int64_t k = 0; k < d; k++)
        if (piv[k] != k)
            for (int64_t j = 0; j < n; j++) {
                double t = b[k * n + j];
                b[k * n + j] = b[piv[k] * n + j];
                b[piv[k] * n + j] = t;
            }
    for (int64_t i = 1; i < d; i++)
        for (int64_t k = 0; k < i; k++) {
            double f = lu[i * d + k];
            if (f == 0.0) continue;
            for (int64_t j = 0; j < n; j++) b[i * n + j] -= f * b[k * n + j];
        }
}

/* b (d x n) <- U^-1 b by back substitution. */
static void upper_solve(int64_t d, const double *lu, int64_t n, double *b) {
    for (int64_t i = d - 1; i >= 0; i--) {
        for (int64_t k = i + 1; k < d; k++) {
            double f = lu[i * d + k];
            if (f == 0.0) continue;
            for (int64_t j = 0; j < n; j++) b[i * n + j] -= f * b[k * n + j];
        }
        double inv = 1.0 / lu[i * d + i];
        for (int64_t j = 0; j < n; j++) b[i * n + j] *= inv;
    }
}

/* x (m x d) <- x U^-1, row by row. */
static void right_upper_solve(int64_t d, const double *lu, int64_t m, double *x) {
    for (int64_t r = 0; r < m; r++) {
        double *row = x + r * d;
        for (int64_t j = 0; j < d; j++) {
            double s = row[j];
            for (int64_t k = 0; k < j; k++) s -= row[k] * lu[k * d + j];
            row[j] = s / lu[j * d + j];
        }
    }
}

/* c (6 x 6) -= a (6 x 6) b (6 x 6): the body-body update of the condensed order (contact_ldu.py), most of the
 * pile's multiply-adds; fixed bounds let the compiler unroll and vectorise it. */
static void sub_product6(const double *a, const double *b, double *c) {
    for (int i = 0; i < 6; i++) {
        double r[6] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
        for (int l = 0; l < 6; l++) {
            const double f = a[i * 6 + l];
            for (int j = 0; j < 6; j++) r[j] += f * b[l * 6 + j];
        }
        for (int j = 0; j < 6; j++) c[i * 6 + j] -= r[j];
    }
}

/* c (m x n) -= a (m x k) b (k x n), all row-major. */
static void sub_product(int64_t m, int64_t k, int64_t n, const double *a, const double *b, double *c) {
    if (m == 6 && k == 6 && n == 6) {
        sub_product6(a, b, c);
        return;
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t l = 0; l < k; l++) {
            double f = a[i * k + l];
            if (f == 0.0) continue;
            for (int64_t j = 0; j < n; j++) c[i * n + j] -= f * b[l * n + j];
        }
}

static double max_abs(int64_t n, const double *a, double best) {
    for (int64_t i = 0; i < n; i++)
        if (fabs(a[i]) > best) best = fabs(a[i]);
    return best;
}

int64_t symplex_block_lu_factor(int64_t n_nodes, const int64_t *order, const int64_t *dim,
                                const int64_t *diag_offset, const int64_t *row_offset, const int64_t *upper_start,
                                const int64_t *upper_node, const int64_t *lower_offset,
                                const int64_t *upper_offset, const int64_t *pair_start, const int64_t *pair_offset,
                                double *a, int64_t *piv, double *growth) {
    double big = 0.0;
    for (int64_t idx = 0; idx < n_nodes; idx++) {
        int64_t v = order[idx], d = dim[v];
        double *dv = a + diag_offset[v];
        if (lu_in_place(d, dv, piv + row_offset[v])) return v;
        big = max_abs(d * d, dv, big);
        int64_t first = upper_start[v], last = upper_start[v + 1];
        for (int64_t e = first; e < last; e++) {
            int64_t dp = dim[upper_node[e]];
            lower_solve(d, dv, piv + row_offset[v], dp, a + upper_offset[e]);
            right_upper_solve(d, dv, dp, a + lower_offset[e]);
            big = max_abs(d * dp, a + upper_offset[e], big);
            big = max_abs(d * dp, a + lower_offset[e], big);
        }
        int64_t pair = pair_start[v];
        for (int64_t e = first; e < last; e++) {
            int64_t dp = dim[upper_node[e]];
            for (int64_t f = first; f < last; f++) {
                sub_product(dp, d, dim[upper_node[f]], a + lower_offset[e], a + upper_offset[f], a + pair_offset[pair]);
                pair++;
            }
        }
    }
    growth[0] = big;
    return -1;
}

void symplex_block_lu_solve(int64_t n_nodes, const int64_t *order, const int64_t *dim, const int64_t *diag_offset,
                            const int64_t *row_offset, const int64_t *upper_start, const int64_t *upper_node,
                            const int64_t *lower_offset, const int64_t *upper_offset, const double *a,
                            const int64_t *piv, int64_t ncol, double *x) {
    for (int64_t idx = 0; idx < n_nodes; idx++) { /* L z = b */
        int64_t v = order[idx], d = dim[v];
        double *xv = x + row_offset[v] * ncol;
        lower_solve(d, a + diag_offset[v], piv + row_offset[v], ncol, xv);
        for (int64_t e = upper_start[v]; e < upper_start[v + 1]; e++) {
            int64_t p = upper_node[e];
            sub_product(dim[p], d, ncol, a + lower_offset[e], xv, x + row_offset[p] * ncol);
        }
    }
    for (int64_t idx = n_nodes - 1; idx >= 0; idx--) { /* U x = z */
        int64_t v = order[idx], d = dim[v];
        double *xv = x + row_offset[v] * ncol;
        for (int64_t e = upper_start[v]; e < upper_start[v + 1]; e++) {
            int64_t p = upper_node[e];
            sub_product(d, dim[p], ncol, a + upper_offset[e], x + row_offset[p] * ncol, xv);
        }
        upper_solve(d, a + diag_offset[v], ncol, xv);
    }
}

/* Baraff's tree block LDL^T factor and solve (seed 002 Appendix A); see baraff_kernels.h.
 * numpy twin and reference: addon/solver/maximal/baraff.py (_factor_numpy, _solve_numpy). */
#include <math.h>
#include <string.h>

#include "baraff_kernels.h"
#include "pivot.h"

/* Invert the d x d row-major matrix a in place by Gauss-Jordan elimination with partial (row)
 * pivoting; 0 on success, 1 on an exactly zero or non-finite pivot. */
static int invert_in_place(int64_t d, double *a) {
    int64_t perm[SYMPLEX_BARAFF_MAX_DIM];
    for (int64_t k = 0; k < d; k++) {
        int64_t p = symplex_pivot_row(d, k, a);
        if (p < 0) return 1;
        perm[k] = p;
        double inv = 1.0 / a[k * d + k];
        a[k * d + k] = 1.0;
        for (int64_t j = 0; j < d; j++) a[k * d + j] *= inv;
        for (int64_t i = 0; i < d; i++) {
            if (i == k) continue;
            double f = a[i * d + k];
            if (f == 0.0) continue;
            a[i * d + k] = 0.0;
            for (int64_t j = 0; j < d; j++) a[i * d + j] -= f * a[k * d + j];
        }
    }
    for (int64_t k = d - 1; k >= 0; k--) {
        int64_t p = perm[k];
        if (p == k) continue;
        for (int64_t i = 0; i < d; i++) {
            double t = a[i * d + k];
            a[i * d + k] = a[i * d + p];
            a[i * d + p] = t;
        }
    }
    return 0;
}

int64_t symplex_baraff_factor(int64_t n_nodes, const int64_t *forward, const int64_t *parent, const int64_t *dim,
                              const int64_t *sq_offset, const int64_t *lt_offset, const int64_t *has_mass,
                              const double *mass, const int64_t *edge_offset, const int64_t *edge_transposed,
                              const double *edges, double *dinv, double *lt) {
    for (int64_t node = 0; node < n_nodes; node++) {
        int64_t d = dim[node];
        if (d > SYMPLEX_BARAFF_MAX_DIM) return -2;
        double *pivot = dinv + sq_offset[node];
        if (has_mass[node])
            memcpy(pivot, mass + sq_offset[node], (size_t)(d * d) * sizeof(double));
        else
            memset(pivot, 0, (size_t)(d * d) * sizeof(double));
    }
    for (int64_t idx = 0; idx < n_nodes; idx++) {
        int64_t node = forward[idx];
        int64_t d = dim[node];
        double *dn = dinv + sq_offset[node]; /* holds the pivot: every child has updated it */
        if (invert_in_place(d, dn)) return node;
        int64_t up = parent[node];
        if (up < 0) continue;
        int64_t dp = dim[up];
        const double *c = edges + edge_offset[node];
        double *l = lt + lt_offset[node];
        /* l = D^-1 C, C = H_{node,up} (d x dp): stored as is, or as the transpose of a dp x d block */
        if (edge_transposed[node]) {
            for (int64_t i = 0; i < d; i++)
                for (int64_t j = 0; j < dp; j++) {
                    double s = 0.0;
                    for (int64_t k = 0; k < d; k++) s += dn[i * d + k] * c[j * d + k];
                    l[i * dp + j] = s;
                }
        } else {
            for (int64_t i = 0; i < d; i++) {
                double *li = l + i * dp;
                for (int64_t j = 0; j < dp; j++) li[j] = 0.0;
                for (int64_t k = 0; k < d; k++) {
                    double f = dn[i * d + k];
                    const double *ck = c + k * dp;
                    for (int64_t j = 0; j < dp; j++) li[j] += f * ck[j];
                }
            }
        }
        /* parent pivot -= C^T l (dp x dp) */
        double *pp = dinv + sq_offset[up];
        for (int64_t k = 0; k < d; k++) {
            const double *lk = l + k * dp;
            for (int64_t i = 0; i < dp; i++) {
                double f = edge_transposed[node] ? c[i * d + k] : c[k * dp + i];
                if (f == 0.0) continue;
                double *pi = pp + i * dp;
                for (int64_t j = 0; j < dp; j++) pi[j] -= f * lk[j];
            }
        }
    }
    return -1;
}

void symplex_baraff_solve(int64_t n_nodes, const int64_t *forward, const int64_t *parent, const int64_t *dim,
                          const int64_t *sq_offset, const int64_t *lt_offset, const int64_t *row_offset,
                          const double *dinv, const double *lt, int64_t ncol, double *x, double *scratch) {
    /* L w = b, children first: x[up] -= l^T x[node] */
    for (int64_t idx = 0; idx < n_nodes; idx++) {
        int64_t node = forward[idx];
        int64_t up = parent[node];
        if (up < 0) continue;
        int64_t d = dim[node], dp = dim[up];
        const double *l = lt + lt_offset[node];
        const double *xn = x + row_offset[node] * ncol;
        double *xp = x + row_offset[up] * ncol;
        for (int64_t k = 0; k < d; k++) {
            const double *lk = l + k * dp;
            const double *xk = xn + k * ncol;
            for (int64_t i = 0; i < dp; i++) {
                double f = lk[i];
                double *xi = xp + i * ncol;
                for (int64_t c = 0; c < ncol; c++) xi[c] -= f * xk[c];
            }
        }
    }
    /* D L^T x = w, parents first: x[node] = D^-1 x[node] - l x[up] */
    for (int64_t idx = n_nodes - 1; idx >= 0; idx--) {
        int64_t node = forward[idx];
        int64_t d = dim[node];
        const double *dn = dinv + sq_offset[node];
        double *xn = x + row_offset[node] * ncol;
        for (int64_t i = 0; i < d * ncol; i++) scratch[i] = 0.0;
        for (int64_t i = 0; i < d; i++)
            for (int64_t k = 0; k < d; k++) {
                double f = dn[i * d + k];
                const double *xk = xn + k * ncol;
                double *si = scratch + i * ncol;
                for (int64_t c = 0; c < ncol; c++) si[c] += f * xk[c];
            }
        int64_t up = parent[node];
        if (up >= 0) {
            int64_t dp = dim[up];
            const double *l = lt + lt_offset[node];
            const double *xp = x + row_offset[up] * ncol;
            for (int64_t i = 0; i < d; i++)
                for (int64_t k = 0; k < dp; k++) {
                    double f = l[i * dp + k];
                    const double *xk = xp + k * ncol;
                    double *si = scratch + i * ncol;
                    for (int64_t c = 0; c < ncol; c++) si[c] -= f * xk[c];
                }
        }
        memcpy(xn, scratch, (size_t)(d * ncol) * sizeof(double));
    }
}

void symplex_baraff_multiply(int64_t n_nodes, const int64_t *parent, const int64_t *dim, const int64_t *sq_offset,
                             const int64_t *row_offset, const int64_t *has_mass, const double *mass,
                             const int64_t *edge_offset, const int64_t *edge_transposed, const double *edges,
                             int64_t ncol, const double *x, double *out) {
    for (int64_t node = 0; node < n_nodes; node++) {
        int64_t d = dim[node];
        double *on = out + row_offset[node] * ncol;
        for (int64_t i = 0; i < d * ncol; i++) on[i] = 0.0;
        if (!has_mass[node]) continue;
        const double *m = mass + sq_offset[node];
        const double *xn = x + row_offset[node] * ncol;
        for (int64_t i = 0; i < d; i++)
            for (int64_t k = 0; k < d; k++) {
                double f = m[i * d + k];
                for (int64_t c = 0; c < ncol; c++) on[i * ncol + c] += f * xn[k * ncol + c];
            }
    }
    for (int64_t node = 0; node < n_nodes; node++) {
        int64_t up = parent[node];
        if (up < 0) continue;
        int64_t d = dim[node], dp = dim[up];
        const double *e = edges + edge_offset[node];
        const double *xn = x + row_offset[node] * ncol, *xp = x + row_offset[up] * ncol;
        double *on = out + row_offset[node] * ncol, *op = out + row_offset[up] * ncol;
        for (int64_t i = 0; i < d; i++)
            for (int64_t j = 0; j < dp; j++) {
                /* C[i][j] = H_{node,up}[i][j] */
                double f = edge_transposed[node] ? e[j * d + i] : e[i * dp + j];
                if (f == 0.0) continue;
                for (int64_t c = 0; c < ncol; c++) {
                    on[i * ncol + c] += f * xp[j * ncol + c];
                    op[j * ncol + c] += f * xn[i * ncol + c];
                }
            }
    }
}

/* ---- reduced-fill-in block LDU on a symbolic pattern (fillin.py) ---- */

/* c (m x n) -= a (m x k) b (k x n), all row-major; each entry updated in a register over l in order. Inlined
 * with constant k and n by the dispatchers below. */
static inline __attribute__((always_inline)) void sub_product_kn(int64_t m, int64_t k, int64_t n,
                                                                 const double *restrict a, const double *restrict b,
                                                                 double *restrict c) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = c[i * n + j];
#pragma GCC unroll 8
            for (int64_t l = 0; l < k; l++) s -= a[i * k + l] * b[l * n + j];
            c[i * n + j] = s;
        }
}

/* out (m x n) = a (m x k) b (k x n), each entry 0.0 + a_i0 b_0j + a_i1 b_1j + ... in that order. */
static inline __attribute__((always_inline)) void product_kn(int64_t m, int64_t k, int64_t n,
                                                             const double *restrict a, const double *restrict b,
                                                             double *restrict out) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
#pragma GCC unroll 8
            for (int64_t l = 0; l < k; l++) s += a[i * k + l] * b[l * n + j];
            out[i * n + j] = s;
        }
}

/* The products with the block sizes of the maximal method's joints and bodies (k, n in 3, 5, 6; n = 1: one
 * right-hand side) as constants, so that the compiler unrolls their inner loops (the same operations in the
 * same order as the general loop; about 1.4x on the factor of a 10-link chain). */
#define SYMPLEX_FIXED_KN(kernel, m, k, n, a, b, c)                                        \
    do {                                                                                   \
        const int64_t key_ = (k) < 8 && (n) < 8 ? 8 * (k) + (n) : -1;                      \
        switch (key_) {                                                                    \
        case 8 * 6 + 6: kernel(m, 6, 6, a, b, c); break;                                   \
        case 8 * 6 + 5: kernel(m, 6, 5, a, b, c); break;                                   \
        case 8 * 5 + 6: kernel(m, 5, 6, a, b, c); break;                                   \
        case 8 * 5 + 5: kernel(m, 5, 5, a, b, c); break;                                   \
        case 8 * 6 + 3: kernel(m, 6, 3, a, b, c); break;                                   \
        case 8 * 3 + 6: kernel(m, 3, 6, a, b, c); break;                                   \
        case 8 * 3 + 3: kernel(m, 3, 3, a, b, c); break;                                   \
        case 8 * 6 + 1: kernel(m, 6, 1, a, b, c); break;                                   \
        case 8 * 5 + 1: kernel(m, 5, 1, a, b, c); break;                                   \
        case 8 * 3 + 1: kernel(m, 3, 1, a, b, c); break;                                   \
        default: kernel(m, k, n, a, b, c);                                                 \
        }                                                                                  \
    } while (0)

static void sub_product(int64_t m, int64_t k, int64_t n, const double *a, const double *b, double *c) {
    SYMPLEX_FIXED_KN(sub_product_kn, m, k, n, a, b, c);
}

static void product(int64_t m, int64_t k, int64_t n, const double *a, const double *b, double *out) {
    SYMPLEX_FIXED_KN(product_kn, m, k, n, a, b, out);
}

int64_t symplex_fillin_factor(int64_t n_nodes, const int64_t *order, const int64_t *dim, const int64_t *diag_offset,
                              const int64_t *upper_start, const int64_t *upper_node, const int64_t *lower_offset,
                              const int64_t *upper_offset, const int64_t *pair_start, const int64_t *pair_offset,
                              double *a, double *scratch) {
    for (int64_t idx = 0; idx < n_nodes; idx++) {
        int64_t v = order[idx], d = dim[v];
        if (d > SYMPLEX_BARAFF_MAX_DIM) return -2;
        double *dv = a + diag_offset[v];
        if (invert_in_place(d, dv)) return v;
        int64_t first = upper_start[v], last = upper_start[v + 1];
        /* keep the row blocks A_vp, then L_pv = A_pv D^-1 in place */
        int64_t used = 0;
        for (int64_t e = first; e < last; e++) {
            int64_t dp = dim[upper_node[e]];
            memcpy(scratch + used, a + upper_offset[e], (size_t)(d * dp) * sizeof(double));
            used += d * dp;
            double *lpv = a + lower_offset[e];
            double *tmp = scratch + used;  /* dp x d */
            product(dp, d, d, lpv, dv, tmp);
            memcpy(lpv, tmp, (size_t)(dp * d) * sizeof(double));
        }
        /* Schur updates A_pr -= L_pv A_vr over every later pair (p, r) */
        int64_t pair = pair_start[v];
        for (int64_t e = first; e < last; e++) {
            int64_t dp = dim[upper_node[e]];
            const double *lpv = a + lower_offset[e];
            int64_t row_r = 0;
            for (int64_t f = first; f < last; f++) {
                int64_t dr = dim[upper_node[f]];
                sub_product(dp, d, dr, lpv, scratch + row_r, a + pair_offset[pair]);
                row_r += d * dr;
                pair++;
            }
        }
        /* U_vp = D^-1 A_vp */
        int64_t row = 0;
        for (int64_t e = first; e < last; e++) {
            int64_t dp = dim[upper_node[e]];
            product(d, d, dp, dv, scratch + row, a + upper_offset[e]);
            row += d * dp;
        }
    }
    return -1;
}

void symplex_fillin_solve(int64_t n_nodes, const int64_t *order, const int64_t *dim, const int64_t *diag_offset,
                          const int64_t *upper_start, const int64_t *upper_node, const int64_t *lower_offset,
                          const int64_t *upper_offset, const int64_t *row_offset, const double *a, int64_t ncol,
                          double *x, double *scratch) {
    for (int64_t idx = 0; idx < n_nodes; idx++) { /* L z = b */
        int64_t v = order[idx], d = dim[v];
        const double *xv = x + row_offset[v] * ncol;
        for (int64_t e = upper_start[v]; e < upper_start[v + 1]; e++) {
            int64_t p = upper_node[e];
            sub_product(dim[p], d, ncol, a + lower_offset[e], xv, x + row_offset[p] * ncol);
        }
    }
    for (int64_t v = 0; v < n_nodes; v++) { /* D w = z */
        int64_t d = dim[v];
        double *xv = x + row_offset[v] * ncol;
        product(d, d, ncol, a + diag_offset[v], xv, scratch);
        memcpy(xv, scratch, (size_t)(d * ncol) * sizeof(double));
    }
    for (int64_t idx = n_nodes - 1; idx >= 0; idx--) { /* U x = w */
        int64_t v = order[idx], d = dim[v];
        double *xv = x + row_offset[v] * ncol;
        for (int64_t e = upper_start[v]; e < upper_start[v + 1]; e++) {
            int64_t p = upper_node[e];
            sub_product(d, dim[p], ncol, a + upper_offset[e], x + row_offset[p] * ncol, xv);
        }
    }
}

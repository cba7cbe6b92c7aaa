/* Block-tridiagonal LDL^T (Riccati recursion over stage chunks) of the shot interior point's KKT matrix, with
 * a border eliminated by its Schur complement. Contract in stage_kkt.h. */
#include "stage_kkt.h"

#include <math.h>
#include <string.h>

/* y[j] -= l x[j], j < n: unrolled by four and two so that the compiler packs the pairs (elementwise: the same
 * bits as the plain loop). */
static inline void sub_scaled(int64_t n, double l, const double *restrict x, double *restrict y)
{
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {
        y[j] -= l * x[j];
        y[j + 1] -= l * x[j + 1];
        y[j + 2] -= l * x[j + 2];
        y[j + 3] -= l * x[j + 3];
    }
    for (; j + 2 <= n; j += 2) {
        y[j] -= l * x[j];
        y[j + 1] -= l * x[j + 1];
    }
    for (; j < n; ++j)
        y[j] -= l * x[j];
}

/* y[j] -= l x[j] and z[j] -= m x[j], j < n (sub_scaled on two rows, x loaded once). */
static inline void sub_scaled_pair(int64_t n, double l, double m, const double *restrict x, double *restrict y,
                                   double *restrict z)
{
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
        double x0 = x[j], x1 = x[j + 1];
        y[j] -= l * x0;
        y[j + 1] -= l * x1;
        z[j] -= m * x0;
        z[j + 1] -= m * x1;
    }
    if (j < n) {
        y[j] -= l * x[j];
        z[j] -= m * x[j];
    }
}

/* out[j] <- (out[j] - sum_t coef[t] rows[t * stride + j]) scale for j < ncol, the terms subtracted one by one in t
 * order and those with coef[t] == 0 skipped: each out[j] gets the operations of the loop over t of out[j] -=
 * coef[t] rows[...] (so the same bits; scale 1 changes nothing), with four (then two, one) of them held in
 * registers across t. */
static void sub_combination(int64_t count, const double *coef, const double *rows, int64_t stride, int64_t ncol,
                            double scale, double *restrict out)
{
    int64_t j = 0;
    for (; j + 6 <= ncol; j += 6) {
        double s0 = out[j], s1 = out[j + 1], s2 = out[j + 2], s3 = out[j + 3], s4 = out[j + 4], s5 = out[j + 5];
        for (int64_t t = 0; t < count; ++t) {
            double c = coef[t];
            if (c != 0.0) {
                const double *r = rows + t * stride + j;
                s0 -= c * r[0];
                s1 -= c * r[1];
                s2 -= c * r[2];
                s3 -= c * r[3];
                s4 -= c * r[4];
                s5 -= c * r[5];
            }
        }
        out[j] = s0 * scale;
        out[j + 1] = s1 * scale;
        out[j + 2] = s2 * scale;
        out[j + 3] = s3 * scale;
        out[j + 4] = s4 * scale;
        out[j + 5] = s5 * scale;
    }
    for (; j + 4 <= ncol; j += 4) {
        double s0 = out[j], s1 = out[j + 1], s2 = out[j + 2], s3 = out[j + 3];
        for (int64_t t = 0; t < count; ++t) {
            double c = coef[t];
            if (c != 0.0) {
                const double *r = rows + t * stride + j;
                s0 -= c * r[0];
                s1 -= c * r[1];
                s2 -= c * r[2];
                s3 -= c * r[3];
            }
        }
        out[j] = s0 * scale;
        out[j + 1] = s1 * scale;
        out[j + 2] = s2 * scale;
        out[j + 3] = s3 * scale;
    }
    for (; j + 2 <= ncol; j += 2) {
        double s0 = out[j], s1 = out[j + 1];
        for (int64_t t = 0; t < count; ++t) {
            double c = coef[t];
            if (c != 0.0) {
                s0 -= c * rows[t * stride + j];
                s1 -= c * rows[t * stride + j + 1];
            }
        }
        out[j] = s0 * scale;
        out[j + 1] = s1 * scale;
    }
    for (; j < ncol; ++j) {
        double s0 = out[j];
        for (int64_t t = 0; t < count; ++t)
            if (coef[t] != 0.0)
                s0 -= coef[t] * rows[t * stride + j];
        out[j] = s0 * scale;
    }
}

/* Exchange x[j] and y[j], j < n (in pairs, which the compiler packs). */
static inline void swap_rows(int64_t n, double *restrict x, double *restrict y)
{
    int64_t j = 0;
    for (; j + 2 <= n; j += 2) {
        double t0 = x[j], t1 = x[j + 1];
        x[j] = y[j];
        x[j + 1] = y[j + 1];
        y[j] = t0;
        y[j + 1] = t1;
    }
    if (j < n) {
        double t = x[j];
        x[j] = y[j];
        y[j] = t;
    }
}

/* LU with partial pivoting of the n x n row-major a, in place; piv[i] = row swapped with i. Adds to *parity the
 * number of swaps and of negative U_ii (mod 2: sign of det a). Returns 0, or 1 on a pivot that is non-finite or
 * not above tol (absolute). */
static int lu_factor(int64_t n, double *a, int64_t *piv, int64_t *parity, double tol)
{
    for (int64_t k = 0; k < n; ++k) {
        int64_t p = k;
        double best = fabs(a[k * n + k]);
        for (int64_t i = k + 1; i < n; ++i) {
            double v = fabs(a[i * n + k]);
            if (v > best) {
                best = v;
                p = i;
            }
        }
        if (!(best > tol) || !isfinite(best))
            return 1;
        piv[k] = p;
        if (p != k) {
            *parity ^= 1;
            swap_rows(n, a + k * n, a + p * n);
        }
        const double *rk = a + k * n;
        if (rk[k] < 0)
            *parity ^= 1;
        double inv = 1.0 / rk[k];
        int64_t i = k + 1;
        for (; i + 2 <= n; i += 2) { /* two rows a pass: rk's entries loaded once for both */
            double *r0 = a + i * n, *r1 = r0 + n;
            double l0 = r0[k] * inv, l1 = r1[k] * inv;
            r0[k] = l0;
            r1[k] = l1;
            if (l0 != 0.0 && l1 != 0.0)
                sub_scaled_pair(n - k - 1, l0, l1, rk + k + 1, r0 + k + 1, r1 + k + 1);
            else if (l0 != 0.0)
                sub_scaled(n - k - 1, l0, rk + k + 1, r0 + k + 1);
            else if (l1 != 0.0)
                sub_scaled(n - k - 1, l1, rk + k + 1, r1 + k + 1);
        }
        if (i < n) {
            double *ri = a + i * n;
            double l = ri[k] * inv;
            ri[k] = l;
            if (l != 0.0)
                sub_scaled(n - k - 1, l, rk + k + 1, ri + k + 1);
        }
    }
    return 0;
}

/* sum_k a[k] b[k] with four partial sums (a single chain of adds is latency bound). */
static inline double dot(int64_t n, const double *a, const double *b)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int64_t k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
    }
    for (; k < n; ++k)
        s0 += a[k] * b[k];
    return (s0 + s1) + (s2 + s3);
}

/* b (n x ncol, row-major) <- a^{-1} b with a's LU from lu_factor. */
static void lu_solve(int64_t n, const double *a, const int64_t *piv, int64_t ncol, double *b)
{
    if (ncol == 1) { /* one right-hand side: its entries swapped in place, then each entry, once final, subtracted
                      * times its column of L (of U) from the entries after (before) it: each step of the substitution
                      * waits for one product and one difference, not for a dot product's sum; U's diagonal applied by
                      * its reciprocal, as sub_combination's scale does for many (a division on that chain costs three
                      * products' latency) */
        for (int64_t k = 0; k < n; ++k) {
            double bk = b[k];
            b[k] = b[piv[k]];
            b[piv[k]] = bk;
        }
        for (int64_t k = 0; k + 1 < n; ++k) {
            const double bk = b[k];
            for (int64_t i = k + 1; i < n; ++i)
                b[i] -= a[i * n + k] * bk;
        }
        for (int64_t k = n - 1; k >= 0; --k) {
            const double bk = b[k] *= 1.0 / a[k * n + k];
            for (int64_t i = k - 1; i >= 0; --i) /* the entry the next step waits for first */
                b[i] -= a[i * n + k] * bk;
        }
        return;
    }
    for (int64_t k = 0; k < n; ++k)
        if (piv[k] != k)
            swap_rows(ncol, b + k * ncol, b + piv[k] * ncol);
    for (int64_t i = 1; i < n; ++i)
        sub_combination(i, a + i * n, b, ncol, ncol, 1.0, b + i * ncol);
    for (int64_t i = n - 1; i >= 0; --i)
        sub_combination(n - 1 - i, a + i * n + i + 1, b + (i + 1) * ncol, ncol, ncol, 1.0 / a[i * n + i],
                        b + i * ncol);
}

/* out (q x r) -= a^T b, a (p x q), b (p x r), all row-major; terms with a zero entry of a skipped. */
static void sub_atb(int64_t p, int64_t q, int64_t r, const double *a, const double *b, double *out)
{
    for (int64_t k = 0; k < p; ++k) {
        const double *ak = a + k * q, *bk = b + k * r;
        for (int64_t i = 0; i < q; ++i) {
            double s = ak[i];
            if (s != 0.0) {
                if (r == 1) /* one right-hand side: sub_scaled's one operation without its loops */
                    out[i] -= s * bk[0];
                else
                    sub_scaled(r, s, bk, out + i * r);
            }
        }
    }
}

/* out (its rows cols[u], r columns each) -= C^T b over C's entries [e, end) (coupling's rows: position in c, row,
 * rank of its column, column), b (rows of C, r columns each); place: u of each rank (symplex_stage_factor's).
 * sub_atb's operations on the columns of C that are not zero, in its order (row by row, each row's columns
 * ascending), without visiting the places of C that hold no entry (which the fill leaves as they were). */
static void sub_coupling(const int64_t *e, const int64_t *end, const double *c, const int64_t *cols,
                         const int64_t *place, int64_t r, const double *b, double *out)
{
    for (; e < end; e += 4) {
        double s = c[e[0]];
        if (s == 0.0)
            continue;
        int64_t i = cols[place[e[2]]];
        if (r == 1)
            out[i] -= s * b[e[1]];
        else
            sub_scaled(r, s, b + e[1] * r, out + i * r);
    }
}

/* out (p x r) -= a b, a (p x q), b (q x r), all row-major. */
static void sub_ab(int64_t p, int64_t q, int64_t r, const double *a, const double *b, double *out)
{
    if (r == 1) {
        for (int64_t i = 0; i < p; ++i)
            out[i] -= dot(q, a + i * q, b);
        return;
    }
    for (int64_t i = 0; i < p; ++i) {
        const double *ai = a + i * q;
        double *oi = out + i * r;
        for (int64_t k = 0; k < q; ++k) {
            double s = ai[k];
            if (s != 0.0) {
                const double *bk = b + k * r;
                for (int64_t j = 0; j < r; ++j)
                    oi[j] -= s * bk[j];
            }
        }
    }
}

int64_t symplex_stage_fill(int64_t n_blk, double *blk, int64_t c_begin, int64_t c_end, int64_t n_c,
                           const int64_t *c_slot, int64_t n_w, const int64_t *w_slot, const int64_t *w_src,
                           const double *w_val, int64_t n_j, const int64_t *j_slot, const int64_t *j_src,
                           const double *j_val, int64_t n_p, const int64_t *p_slot, const int64_t *p_a,
                           const int64_t *p_b, const int64_t *p_row, int64_t nx, int64_t ns, const int64_t *slack_diag,
                           const double *coef, double dw, double dc, double *slack_d, int64_t n_elim,
                           const int64_t *elim_slack, double *weight, int64_t n_kept, const int64_t *kept_slack,
                           const int64_t *d_slot)
{
    for (int64_t j = 0; j < ns; ++j) {
        slack_d[j] = w_val[slack_diag[j]] + dw;
        if (!(slack_d[j] > 0.0))
            return 1 + j;
    }
    for (int64_t i = 0; i < n_elim; ++i) {
        int64_t j = elim_slack[i];
        weight[i] = 1.0 / (dc + coef[j] * coef[j] / slack_d[j]);
    }
    memset(blk, 0, (size_t)c_begin * sizeof(double));
    memset(blk + c_end, 0, (size_t)(n_blk - c_end) * sizeof(double));
    for (int64_t t = 0; t < n_c; ++t)
        blk[c_slot[t]] = 0.0;
    for (int64_t t = 0; t < n_w; ++t)
        blk[w_slot[t]] += w_val[w_src[t]];
    for (int64_t t = 0; t < n_j; ++t)
        blk[j_slot[t]] += j_val[j_src[t]];
    for (int64_t t = 0; t < n_p; ++t)
        blk[p_slot[t]] += j_val[p_a[t]] * j_val[p_b[t]] * weight[p_row[t]];
    for (int64_t i = 0; i < nx; ++i)
        blk[d_slot[i]] += dw;
    for (int64_t k = 0; k < n_kept; ++k) {
        int64_t j = kept_slack[k];
        blk[d_slot[nx + k]] -= dc + (j >= 0 ? coef[j] * coef[j] / slack_d[j] : 0.0);
    }
    return 0;
}

/* out = W x for the n x n CSC matrix W (ptr, idx, val), summed column by column in the order of scipy's CSC product. */
static void csc_product(int64_t n, const int64_t *ptr, const int64_t *idx, const double *val, const double *x,
                        double *out)
{
    for (int64_t i = 0; i < n; ++i)
        out[i] = 0.0;
    for (int64_t col = 0; col < n; ++col)
        for (int64_t e = ptr[col]; e < ptr[col + 1]; ++e)
            out[idx[e]] += val[e] * x[col];
}

/* out = rhs - K sol (symplex_kkt_residual) with W dz left in wdz (nz doubles; may be out itself) and J^T y in work
 * (nz doubles): the operations of stage_kkt.kkt_residual in its order (scipy's CSC and CSR products, then the
 * sums), so that both give the same bits. */
static void kkt_residual(int64_t nz, int64_t m, const int64_t *w_ptr, const int64_t *w_idx, const double *w_val,
                         const int64_t *j_ptr, const int64_t *j_idx, const double *j_val, double dw, double dc,
                         const double *sol, const double *rhs, double *out, double *wdz, double *work)
{
    const double *dz = sol, *y = sol + nz;
    csc_product(nz, w_ptr, w_idx, w_val, dz, wdz);
    for (int64_t i = 0; i < nz; ++i)
        work[i] = 0.0;
    for (int64_t row = 0; row < m; ++row) {
        double acc = 0.0;
        for (int64_t e = j_ptr[row]; e < j_ptr[row + 1]; ++e) {
            acc += j_val[e] * dz[j_idx[e]];
            work[j_idx[e]] += j_val[e] * y[row];
        }
        out[nz + row] = rhs[nz + row] - (acc - dc * y[row]);
    }
    for (int64_t i = 0; i < nz; ++i)
        out[i] = rhs[i] - ((wdz[i] + dw * dz[i]) + work[i]);
}

void symplex_kkt_residual(int64_t nz, int64_t m, const int64_t *w_ptr, const int64_t *w_idx, const double *w_val,
                          const int64_t *j_ptr, const int64_t *j_idx, const double *j_val, double dw, double dc,
                          const double *sol, const double *rhs, double *out, double *work)
{
    kkt_residual(nz, m, w_ptr, w_idx, w_val, j_ptr, j_idx, j_val, dw, dc, sol, rhs, out, out, work);
}

/* out (p x r) -= g y[cols], g (p x q) compact over the columns cols (q) of y (rows of y, r columns each). */
static void sub_g(int64_t p, int64_t q, const int64_t *cols, const double *g, int64_t r, const double *y,
                  double *out)
{
    for (int64_t i = 0; i < p; ++i) {
        const double *gi = g + i * q;
        double *oi = out + i * r;
        if (r == 1) {
            double acc = 0.0;
            for (int64_t t = 0; t < q; ++t)
                acc += gi[t] * y[cols[t]];
            oi[0] -= acc;
            continue;
        }
        for (int64_t t = 0; t < q; ++t) {
            double s = gi[t];
            if (s != 0.0) {
                const double *yt = y + cols[t] * r;
                for (int64_t j = 0; j < r; ++j)
                    oi[j] -= s * yt[j];
            }
        }
    }
}

/* T^{-1} b for the factorised chain, b (n_inner x ncol) in place: forward w_k = D_k^{-1} (b_k - C_{k-1}^T w_{k-1})
 * over C_{k-1}'s entries, then back x_k = w_k - G_k x_{k+1} with G_k = D_k^{-1} C_k (compact: the columns of C_k
 * that hold an entry, symplex_stage_factor). */
static void chain_solve(int64_t n_chunks, const int64_t *size, const int64_t *a_off, const int64_t *c_off,
                        const int64_t *r_off, const double *blk, const double *g, const int64_t *g_cols,
                        const int64_t *g_count, const int64_t *c_place, const int64_t *coupling,
                        const int64_t *coupling_off, const int64_t *piv, int64_t ncol, double *b)
{
    for (int64_t k = 0; k < n_chunks; ++k) {
        double *bk = b + r_off[k] * ncol;
        if (k > 0)
            sub_coupling(coupling + 4 * coupling_off[k - 1], coupling + 4 * coupling_off[k], blk + c_off[k - 1],
                         g_cols + r_off[k], c_place + r_off[k], ncol, b + r_off[k - 1] * ncol, bk);
        lu_solve(size[k], blk + a_off[k], piv + r_off[k], ncol, bk);
    }
    for (int64_t k = n_chunks - 2; k >= 0; --k)
        sub_g(size[k], g_count[k], g_cols + r_off[k + 1], g + c_off[k], ncol, b + r_off[k + 1] * ncol,
              b + r_off[k] * ncol);
}

int64_t symplex_stage_factor(int64_t n_chunks, int64_t nb, const int64_t *size, const int64_t *a_off,
                             const int64_t *c_off, const int64_t *e_off, int64_t f_off, const int64_t *r_off,
                             double s_rcond, double *blk, double *g, int64_t *g_cols, int64_t *g_count,
                             int64_t *c_place, const int64_t *coupling, const int64_t *coupling_off, double *x,
                             int64_t *piv, int64_t *parity)
{
    *parity = 0;
    for (int64_t k = 0; k < n_chunks; ++k) {
        int64_t n = size[k];
        double *d = blk + a_off[k];
        if (lu_factor(n, d, piv + r_off[k], parity, 0.0))
            return k;
        if (k + 1 == n_chunks)
            break;
        /* D_{k+1} = A_{k+1} - C_k^T G_k, G_k = D_k^{-1} C_k over the q columns of C_k that are not zero (the
         * unknowns of chunk k+1 that chunk k couples to: the stage's state, not its whole block), found and
         * gathered from C_k's entries (position, row, rank of its column among those with entries, column):
         * place[rank] <- the column's place among the q, or -1 */
        int64_t n1 = size[k + 1], q = 0;
        const double *ck = blk + c_off[k];
        int64_t *cols = g_cols + r_off[k + 1], *place = c_place + r_off[k + 1];
        const int64_t *entry = coupling + 4 * coupling_off[k], *entry_end = coupling + 4 * coupling_off[k + 1];
        for (int64_t r = 0; r < n1; ++r)
            place[r] = -1;
        for (const int64_t *e = entry; e < entry_end; e += 4)
            if (ck[e[0]] != 0.0)
                place[e[2]] = e[3];
        for (int64_t r = 0; r < n1; ++r)
            if (place[r] >= 0) {
                cols[q] = place[r];
                place[r] = q++;
            }
        g_count[k] = q;
        double *gk = g + c_off[k];
        memset(gk, 0, (size_t)(n * q) * sizeof(double));
        for (const int64_t *e = entry; e < entry_end; e += 4)
            if (place[e[2]] >= 0)
                gk[e[1] * q + place[e[2]]] = ck[e[0]];
        lu_solve(n, d, piv + r_off[k], q, gk);
        /* A_{k+1}[cols, cols] -= C_k[:, cols]^T G_k in a dense q x q tile (g's unused room at a_off[k + 1]); each
         * entry's terms in the order of i, so the same bits as updating it in place */
        double *a1 = blk + a_off[k + 1], *tile = g + a_off[k + 1];
        for (int64_t u = 0; u < q; ++u)
            for (int64_t t = 0; t < q; ++t)
                tile[u * q + t] = a1[cols[u] * n1 + cols[t]];
        for (const int64_t *e = entry; e < entry_end; e += 4) {
            double c = ck[e[0]];
            if (c != 0.0)
                sub_scaled(q, c, gk + e[1] * q, tile + place[e[2]] * q);
        }
        for (int64_t u = 0; u < q; ++u)
            for (int64_t t = 0; t < q; ++t)
                a1[cols[u] * n1 + cols[t]] = tile[u * q + t];
    }
    if (nb == 0)
        return -1;
    int64_t n_inner = r_off[n_chunks - 1] + size[n_chunks - 1];
    for (int64_t k = 0; k < n_chunks; ++k)
        memcpy(x + r_off[k] * nb, blk + e_off[k], (size_t)(size[k] * nb) * sizeof(double));
    chain_solve(n_chunks, size, a_off, c_off, r_off, blk, g, g_cols, g_count, c_place, coupling, coupling_off, piv, nb,
                x);
    double *s = blk + f_off;
    for (int64_t k = 0; k < n_chunks; ++k)
        sub_atb(size[k], nb, nb, blk + e_off[k], x + r_off[k] * nb, s);
    double largest = 0.0;
    for (int64_t i = 0; i < nb * nb; ++i)
        largest = fmax(largest, fabs(s[i]));
    if (lu_factor(nb, s, piv + n_inner, parity, s_rcond * largest))
        return n_chunks;
    return -1;
}

void symplex_stage_solve(int64_t n_chunks, int64_t nb, const int64_t *size, const int64_t *a_off,
                         const int64_t *c_off, const int64_t *e_off, int64_t f_off, const int64_t *r_off,
                         const double *blk, const double *g, const int64_t *g_cols, const int64_t *g_count,
                         const int64_t *c_place, const int64_t *coupling, const int64_t *coupling_off,
                         const double *x, const int64_t *piv, double *v)
{
    int64_t n_inner = r_off[n_chunks - 1] + size[n_chunks - 1];
    chain_solve(n_chunks, size, a_off, c_off, r_off, blk, g, g_cols, g_count, c_place, coupling, coupling_off, piv, 1,
                v);
    if (nb == 0)
        return;
    double *vb = v + n_inner; /* border: S xb = bb - E^T u, then u -= X xb */
    for (int64_t k = 0; k < n_chunks; ++k)
        sub_atb(size[k], nb, 1, blk + e_off[k], v + r_off[k], vb);
    lu_solve(nb, blk + f_off, piv + n_inner, 1, vb);
    sub_ab(n_inner, nb, 1, x, vb, v);
}

void symplex_stage_condensed_solve(int64_t n_chunks, int64_t nb, const int64_t *size, const int64_t *a_off,
                                   const int64_t *c_off, const int64_t *e_off, int64_t f_off, const int64_t *r_off,
                                   const double *blk, const double *g, const int64_t *g_cols,
                                   const int64_t *g_count, const int64_t *c_place, const int64_t *coupling,
                                   const int64_t *coupling_off, const double *x, const int64_t *piv, int64_t nx, int64_t ns, int64_t m,
                                   const int64_t *slack_row, const double *coef, const double *slack_d,
                                   int64_t n_elim, const int64_t *elim_row, const double *weight, int64_t n_e,
                                   const int64_t *e_src, const int64_t *e_col, const int64_t *e_row,
                                   const double *j_val, int64_t n_kept, const int64_t *kept_row,
                                   const int64_t *where, const double *rhs, double *out, double *v, double *t)
{
    int64_t nz = nx + ns;
    double *ry = out + nz; /* the rows' right-hand side, then their multipliers */
    for (int64_t r = 0; r < m; ++r)
        ry[r] = rhs[nz + r];
    for (int64_t j = 0; j < ns; ++j)
        ry[slack_row[j]] -= coef[j] * rhs[nx + j] / slack_d[j];
    for (int64_t i = 0; i < n_elim; ++i)
        t[i] = ry[elim_row[i]] * weight[i];
    for (int64_t i = 0; i < nx; ++i)
        v[where[i]] = rhs[i];
    for (int64_t e = 0; e < n_e; ++e)
        v[where[e_col[e]]] += j_val[e_src[e]] * t[e_row[e]];
    for (int64_t k = 0; k < n_kept; ++k)
        v[where[nx + k]] = ry[kept_row[k]];
    symplex_stage_solve(n_chunks, nb, size, a_off, c_off, e_off, f_off, r_off, blk, g, g_cols, g_count, c_place,
                        coupling, coupling_off, x, piv, v);
    for (int64_t i = 0; i < nx; ++i)
        out[i] = v[where[i]];
    for (int64_t k = 0; k < n_kept; ++k)
        ry[kept_row[k]] = v[where[nx + k]];
    for (int64_t i = 0; i < n_elim; ++i)
        ry[elim_row[i]] = -t[i];
    for (int64_t e = 0; e < n_e; ++e)
        ry[elim_row[e_row[e]]] += weight[e_row[e]] * j_val[e_src[e]] * out[e_col[e]];
    for (int64_t j = 0; j < ns; ++j)
        out[nx + j] = (rhs[nx + j] - coef[j] * ry[slack_row[j]]) / slack_d[j];
}

/* max |v_i| over n entries, NaN when any is NaN (numpy's max: comparisons with it then fail, as in nlp._refined).
 * Four running maxima (one chain of comparisons waits for each in turn) and the NaN test beside them: the maximum
 * does not depend on the order it is taken in. */
static double max_abs(int64_t n, const double *v)
{
    double m0 = 0.0, m1 = 0.0, m2 = 0.0, m3 = 0.0;
    int nan = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        double a0 = fabs(v[i]), a1 = fabs(v[i + 1]), a2 = fabs(v[i + 2]), a3 = fabs(v[i + 3]);
        nan |= isnan(a0) | isnan(a1) | isnan(a2) | isnan(a3);
        m0 = a0 > m0 ? a0 : m0;
        m1 = a1 > m1 ? a1 : m1;
        m2 = a2 > m2 ? a2 : m2;
        m3 = a3 > m3 ? a3 : m3;
    }
    for (; i < n; ++i) {
        double a = fabs(v[i]);
        nan |= isnan(a);
        m0 = a > m0 ? a : m0;
    }
    if (nan)
        return NAN;
    m0 = m1 > m0 ? m1 : m0;
    m2 = m3 > m2 ? m3 : m2;
    return m2 > m0 ? m2 : m0;
}

/* sol = K^{-1} rhs by the factor in the plan's work arrays (symplex_stage_condensed_solve). */
static void plan_solve(const symplex_stage_plan *p, const double *j_val, const double *rhs, double *sol)
{
    symplex_stage_condensed_solve(p->n_chunks, p->nb, p->size, p->a_off, p->c_off, p->e_off, p->f_off, p->r_off,
                                  p->blk, p->g, p->g_cols, p->g_count, p->c_place, p->coupling, p->coupling_off,
                                  p->x, p->piv, p->nx, p->ns, p->m, p->slack_row, p->coef, p->slack_d, p->n_elim,
                                  p->elim_row, p->weight, p->n_e, p->e_src, p->e_col, p->e_row, j_val, p->n_kept,
                                  p->kept_row, p->where, rhs, sol, p->v, p->t);
}

/* out = rhs - K sol (kkt_residual on the plan's pattern), W dz left in the plan's z_work for plan_curvature and
 * J^T y summed in work (nz doubles). */
static void plan_residual(const symplex_stage_plan *p, const double *w_val, const double *j_val, double dw,
                          double dc, const double *sol, const double *rhs, double *out, double *work)
{
    kkt_residual(p->nx + p->ns, p->m, p->w_ptr, p->w_idx, w_val, p->j_ptr, p->j_idx, j_val, dw, dc, sol, rhs, out,
                 p->z_work, work);
}

/* nlp._refined: sol = K^{-1} rhs, then up to three corrections by the residual's solve; SOLVED or INACCURATE. Each
 * residual is of the sol returned so far, so the last one leaves W sol[:nz] in z_work. */
static int64_t plan_refined(const symplex_stage_plan *p, const double *w_val, const double *j_val, double dw,
                            double dc, const double *rhs, double *sol)
{
    int64_t n = p->nx + p->ns + p->m;
    double *res = p->refine, *correction = p->refine + n; /* the correction's room is the residual's work */
    plan_solve(p, j_val, rhs, sol);
    double size = 1.0 + max_abs(n, rhs);
    for (int k = 0; k < 3; ++k) {
        plan_residual(p, w_val, j_val, dw, dc, sol, rhs, res, correction);
        if (max_abs(n, res) <= 1e-12 * size)
            return SYMPLEX_STEP_SOLVED;
        plan_solve(p, j_val, res, correction);
        for (int64_t i = 0; i < n; ++i)
            sol[i] = sol[i] + correction[i];
    }
    plan_residual(p, w_val, j_val, dw, dc, sol, rhs, res, correction);
    return max_abs(n, res) <= 1e-9 * size ? SYMPLEX_STEP_SOLVED : SYMPLEX_STEP_INACCURATE;
}

/* curvature[0] <- dz^T (W + dw I) dz, curvature[1] <- dz^T dz for dz = sol[:nz], with W dz as plan_refined's last
 * residual left it in the plan's z_work (scipy's CSC order). */
static void plan_curvature(const symplex_stage_plan *p, double dw, const double *sol, double *curvature)
{
    int64_t nz = p->nx + p->ns;
    double dd = dot(nz, sol, sol);
    curvature[0] = dot(nz, sol, p->z_work) + dw * dd;
    curvature[1] = dd;
}

int64_t symplex_stage_newton(const symplex_stage_plan *plan, const double *w_val, const double *j_val, double dw,
                             double dc, const double *rhs, double *sol, int64_t *parity, double *curvature)
{
    const symplex_stage_plan *p = plan;
    for (int64_t t = 0; t < p->n_w_far; ++t)
        if (w_val[p->w_far[t]] != 0.0)
            return SYMPLEX_STEP_FAR;
    for (int64_t t = 0; t < p->n_j_far; ++t)
        if (j_val[p->j_far[t]] != 0.0)
            return SYMPLEX_STEP_FAR;
    if (symplex_stage_fill(p->n_blk, p->blk, p->c_begin, p->c_end, p->n_c, p->c_slot, p->n_w, p->w_slot, p->w_src,
                           w_val, p->n_j, p->j_slot, p->j_src, j_val, p->n_p, p->p_slot, p->p_a, p->p_b, p->p_row,
                           p->nx, p->ns, p->slack_diag, p->coef, dw, dc, p->slack_d, p->n_elim, p->elim_slack,
                           p->weight, p->n_kept, p->kept_slack, p->d_slot))
        return SYMPLEX_STEP_SLACK;
    int64_t factor_parity = 0;
    int64_t failed = symplex_stage_factor(p->n_chunks, p->nb, p->size, p->a_off, p->c_off, p->e_off, p->f_off,
                                          p->r_off, p->s_rcond, p->blk, p->g, p->g_cols, p->g_count, p->c_place,
                                          p->coupling, p->coupling_off, p->x, p->piv, &factor_parity);
    if (failed >= 0)
        return failed == p->n_chunks ? SYMPLEX_STEP_BORDER : SYMPLEX_STEP_PIVOT;
    *parity = (factor_parity + p->n_elim) % 2;
    if (*parity != p->parity_m)
        return SYMPLEX_STEP_INERTIA;
    int64_t outcome = plan_refined(p, w_val, j_val, dw, dc, rhs, sol);
    plan_curvature(p, dw, sol, curvature);
    return outcome;
}

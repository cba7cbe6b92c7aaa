/* Stage-structured KKT factorisation of the shot interior point: block-tridiagonal (Riccati) LDL^T with a border.
 * Plain C ABI, loaded with ctypes by addon/solver/native/stage_kkt_binding.py; the numpy twin and test reference
 * is addon/solver/shots/stage_kkt.py (StageFactor, block cyclic reduction: the same matrix, other pivots).
 *
 * The KKT matrix K = [[W + dw I, J^T], [J, -dc I]] (nz variables, m rows) in a stage layout: unknown i sits in
 * chunk chunk[i] >= 0 at row local[i] of that chunk, or in the border (chunk[i] < 0) at row local[i]. Chunk k has
 * size[k] unknowns; the border nb. Block storage (offsets in doubles, row-major, no padding):
 *   a_off[k]  A_k, size[k] x size[k]          (diagonal block; the factor overwrites it by the LU of the pivot)
 *   c_off[k]  C_k, size[k] x size[k+1]        (K[chunk k, chunk k+1]; k < n_chunks - 1)
 *   e_off[k]  E_k, size[k] x nb               (K[chunk k, border])
 *   f_off     F, nb x nb                      (K[border, border]; the factor overwrites it by the LU of S)
 * Kernels allocate nothing. */
#ifndef SYMPLEX_STAGE_KKT_H
#define SYMPLEX_STAGE_KKT_H
#include <stdint.h>

/* The KKT matrix with its slacks and some inequality rows eliminated (stage_kkt.StagePlan), filled through slots
 * worked out once per sparsity pattern. Slack j (of ns) has the diagonal slack_d[j] = W[nx + j, nx + j] + dw (its
 * entry w_val[slack_diag[j]]; returns 1 + j if not positive, else 0) and the coefficient coef[j] in its row; an
 * eliminated row i (of n_elim, slack elim_slack[i]) has the pivot -1 / weight[i] = -(dc + coef^2 / slack_d).
 * Zeroes blk (n_blk doubles) but for the blocks C_k (c_begin <= slot < c_end), of which only their entries' n_c slots
 * c_slot (symplex_stage_factor's coupling) are zeroed: no kernel reads C_k elsewhere. Then
 * blk[w_slot[t]] += w_val[w_src[t]] (n_w entries of W over x),
 * blk[j_slot[t]] += j_val[j_src[t]] (n_j: each kept row's entry of J as K[row, col] and K[col, row], where stored),
 * blk[p_slot[t]] += j_val[p_a[t]] j_val[p_b[t]] weight[p_row[t]] (n_p products of two entries of one eliminated row:
 * J_I^T diag(weight) J_I), and the diagonals: + dw on the nx variables, - dc (- coef^2 / slack_d for a kept row
 * with a slack, kept_slack[k] >= 0) on the n_kept rows, at d_slot (nx + n_kept). slack_d and weight are outputs. */
int64_t symplex_stage_fill(int64_t n_blk, double *blk, int64_t c_begin, int64_t c_end, int64_t n_c,
                           const int64_t *c_slot, int64_t n_w, const int64_t *w_slot, const int64_t *w_src,
                           const double *w_val, int64_t n_j, const int64_t *j_slot, const int64_t *j_src,
                           const double *j_val, int64_t n_p, const int64_t *p_slot, const int64_t *p_a,
                           const int64_t *p_b, const int64_t *p_row, int64_t nx, int64_t ns, const int64_t *slack_diag,
                           const double *coef, double dw, double dc, double *slack_d, int64_t n_elim,
                           const int64_t *elim_slack, double *weight, int64_t n_kept, const int64_t *kept_slack,
                           const int64_t *d_slot);

/* out = rhs - K sol for K = [[W + dw I, J^T], [J, -dc I]], W (nz x nz, CSC, both triangles), J (m x nz, CSR): the
 * refinement residual of the whole KKT system, the same operations in the same order as its numpy twin
 * stage_kkt.kkt_residual (so the same bits: the refinement, and so the iterates, do not depend on which ran).
 * work: nz doubles. */
void symplex_kkt_residual(int64_t nz, int64_t m, const int64_t *w_ptr, const int64_t *w_idx, const double *w_val,
                          const int64_t *j_ptr, const int64_t *j_idx, const double *j_val, double dw, double dc,
                          const double *sol, const double *rhs, double *out, double *work);

/* Factorise in place: D_0 = A_0, D_{k+1} = A_{k+1} - C_k^T G_k with G_k = D_k^{-1} C_k (each D_k by LU with
 * partial pivoting, pivots in piv at r_off[k]), then X = T^{-1} E (x: sum size[k] * nb doubles, same row order as
 * a right-hand side) and S = F - E^T X (LU in F, pivots at piv[n_inner...]). r_off[k]: first row of chunk k in a
 * right-hand side of the n_inner = sum size inner unknowns. G_k is kept compact over the g_count[k] columns of C_k
 * that are not zero, listed ascending in g_cols at r_off[k + 1]: size[k] x g_count[k] into g at c_off[k] (g as
 * long as blk; g_cols and c_place n_inner, g_count n_chunks). C_k's entries (the only places of C_k that are read:
 * the fill zeroes no other) are the rows coupling_off[k] <= e < coupling_off[k + 1] of coupling (4 int64 each),
 * row by row and in each row by column: (position in C_k, row, rank of its column among the columns with an
 * entry, column); c_place at r_off[k + 1] + rank <- the place of that column in g_cols, or -1 when it is zero.
 * parity[0] <- number of negative eigenvalues of K mod 2 (Sylvester: signs of the pivots' determinants).
 * Returns -1, or the chunk whose pivot block is singular (exactly zero or non-finite pivot), or n_chunks when
 * S is (nearly) singular (a pivot not above s_rcond times S's largest entry). */
int64_t symplex_stage_factor(int64_t n_chunks, int64_t nb, const int64_t *size, const int64_t *a_off,
                             const int64_t *c_off, const int64_t *e_off, int64_t f_off, const int64_t *r_off,
                             double s_rcond, double *blk, double *g, int64_t *g_cols, int64_t *g_count,
                             int64_t *c_place, const int64_t *coupling, const int64_t *coupling_off, double *x,
                             int64_t *piv, int64_t *parity);

/* Solve K v = b in place: v (n_inner + nb) holds b on entry, inner unknowns in chunk order then the border:
 * forward w_k = D_k^{-1} (b_k - C_{k-1}^T w_{k-1}), back u_k = w_k - G_k u_{k+1}, then the border. */
void symplex_stage_solve(int64_t n_chunks, int64_t nb, const int64_t *size, const int64_t *a_off,
                         const int64_t *c_off, const int64_t *e_off, int64_t f_off, const int64_t *r_off,
                         const double *blk, const double *g, const int64_t *g_cols, const int64_t *g_count,
                         const int64_t *c_place, const int64_t *coupling, const int64_t *coupling_off,
                         const double *x, const int64_t *piv, double *v);

/* Solve the whole K sol = rhs (nz = nx + ns variables, then m rows) with the factor of the condensed matrix: the
 * slacks' and eliminated rows' right-hand sides folded in (n_e entries of the eliminated rows over x: e_src into
 * j_val, column e_col, eliminated row e_row), the chain solved in v (n_inner + nb; where[i]: position in v of
 * variable i < nx and of kept row kept_row[k] at nx + k), then the eliminated rows' multipliers and the slacks
 * recovered. slack_d and weight as symplex_stage_fill left them; t: n_elim doubles of work. */
void symplex_stage_condensed_solve(int64_t n_chunks, int64_t nb, const int64_t *size, const int64_t *a_off,
                                   const int64_t *c_off, const int64_t *e_off, int64_t f_off, const int64_t *r_off,
                                   const double *blk, const double *g, const int64_t *g_cols,
                                   const int64_t *g_count, const int64_t *c_place, const int64_t *coupling,
                                   const int64_t *coupling_off, const double *x, const int64_t *piv, int64_t nx, int64_t ns, int64_t m,
                                   const int64_t *slack_row, const double *coef, const double *slack_d,
                                   int64_t n_elim, const int64_t *elim_row, const double *weight, int64_t n_e,
                                   const int64_t *e_src, const int64_t *e_col, const int64_t *e_row,
                                   const double *j_val, int64_t n_kept, const int64_t *kept_row,
                                   const int64_t *where, const double *rhs, double *out, double *v, double *t);

/* Everything one Newton step of the interior point needs from a StagePlan (stage_kkt.py, its newton_step), as
 * addresses of the plan's arrays looked up once: the layout and C_k's entries (as symplex_stage_factor), the work
 * arrays, the fill's slots (as symplex_stage_fill), the condensed solve's maps (as symplex_stage_condensed_solve)
 * and the pattern of W (CSC) and J (CSR) for the residual (as symplex_kkt_residual). Every field is 8 bytes (the
 * ctypes mirror in stage_kkt_binding.py has the same order). w_far, j_far: the entries of W and J that must be
 * zero (couplings more than one block apart). parity_m: m mod 2, the parity of the negative eigenvalues K must
 * have. refine: 2 (nz + m) doubles of work (a residual and its correction). */
typedef struct symplex_stage_plan {
    int64_t n_chunks, nb, f_off, n_blk, c_begin, c_end, n_c;
    const int64_t *c_slot;
    const int64_t *size, *a_off, *c_off, *e_off, *r_off;
    double s_rcond;
    double *blk, *g;
    int64_t *g_cols, *g_count, *c_place;
    const int64_t *coupling, *coupling_off;
    double *x;
    int64_t *piv;
    int64_t n_w;
    const int64_t *w_slot, *w_src;
    int64_t n_j;
    const int64_t *j_slot, *j_src;
    int64_t n_p;
    const int64_t *p_slot, *p_a, *p_b, *p_row;
    int64_t nx, ns, m;
    const int64_t *slack_diag;
    const double *coef;
    double *slack_d;
    int64_t n_elim;
    const int64_t *elim_slack;
    double *weight;
    int64_t n_kept;
    const int64_t *kept_slack, *d_slot;
    int64_t n_w_far, n_j_far;
    const int64_t *w_far, *j_far;
    const int64_t *slack_row, *elim_row;
    int64_t n_e;
    const int64_t *e_src, *e_col, *e_row;
    const int64_t *kept_row, *where;
    double *v, *t;
    const int64_t *w_ptr, *w_idx, *j_ptr, *j_idx;
    double *z_work, *refine;
    int64_t parity_m;
} symplex_stage_plan;

/* symplex_stage_newton's outcomes. */
enum {
    SYMPLEX_STEP_SOLVED = 0,     /* sol refined to the accuracy of nlp._refined's test */
    SYMPLEX_STEP_INERTIA = 1,    /* the parity of K's negative eigenvalues is wrong: not solved */
    SYMPLEX_STEP_INACCURATE = 2, /* solved, but the refinement did not reach 1e-9 (1 + |rhs|) */
    SYMPLEX_STEP_FAR = 3,        /* an entry couples blocks more than one apart (or a slack to another unknown) */
    SYMPLEX_STEP_SLACK = 4,      /* a slack's diagonal is not positive */
    SYMPLEX_STEP_PIVOT = 5,      /* a stage pivot block is singular */
    SYMPLEX_STEP_BORDER = 6      /* the border's Schur complement is (nearly) singular */
};

/* One attempt of the interior point's Newton step in one call: the far entries checked, K filled from w_val and
 * j_val with the shifts dw, dc (symplex_stage_fill), factorised (symplex_stage_factor), its parity tested, and
 * K sol = rhs solved (symplex_stage_condensed_solve) with up to three steps of iterative refinement (residual
 * symplex_kkt_residual; stop at max |residual| <= 1e-12 (1 + max |rhs|)), the loop of nlp._refined, operation
 * for operation. *parity <- the parity of K's negative eigenvalues (the factor's plus one per eliminated row). Returns a
 * SYMPLEX_STEP_ outcome; sol (nz + m) is written for SOLVED and INACCURATE, and with it the step's curvature for
 * the interior point's inertia-free test (nlp._regularised_step): curvature[0] <- dz^T (W + dw I) dz, curvature[1]
 * <- dz^T dz, dz = sol[:nz]. */
int64_t symplex_stage_newton(const symplex_stage_plan *plan, const double *w_val, const double *j_val, double dw,
                             double dc, const double *rhs, double *sol, int64_t *parity, double *curvature);

#endif

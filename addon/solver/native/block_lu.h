/* Block-sparse LU with a static elimination order and partial pivoting inside each pivot block
 * (addon/solver/maximal/contact_ldu.py: its numpy twin and reference, and the pattern's layout).
 * Plain arrays only, so that other kernels (maximal_step.c) can call it on their own buffers. */
#ifndef SYMPLEX_BLOCK_LU_H
#define SYMPLEX_BLOCK_LU_H
#include <stdint.h>

/* Factor in place the block matrix held in a, laid out as for symplex_fillin_factor (baraff_kernels.h:
 * diagonal blocks at diag_offset, for node v's later neighbours upper_node[e] the blocks A_pv at
 * lower_offset[e] and A_vp at upper_offset[e], every ordered pair of later neighbours' block at
 * pair_offset[pair_start[v] + ...]), all row-major, fill blocks zero. Nodes are eliminated in `order`:
 * each diagonal block (Schur-updated by the nodes before it) becomes P_v^T L_v U_v by dense LU with row
 * pivoting inside the block (L_v unit lower and U_v stored in the block, the row exchanges in
 * piv[row_offset[v] + k], local row indices); A_vp becomes U_vp = L_v^-1 P_v A_vp, A_pv becomes
 * L_pv = A_pv U_v^-1, and A_pr -= L_pv U_vr. growth[0] receives the largest |entry| of the factor.
 * Returns -1, or the first node with an exactly zero or non-finite pivot. */
int64_t symplex_block_lu_factor(int64_t n_nodes, const int64_t *order, const int64_t *dim,
                                const int64_t *diag_offset, const int64_t *row_offset, const int64_t *upper_start,
                                const int64_t *upper_node, const int64_t *lower_offset,
                                const int64_t *upper_offset, const int64_t *pair_start, const int64_t *pair_offset,
                                double *a, int64_t *piv, double *growth);

/* Solve A x = b in place for ncol right-hand sides (x (N, ncol) row-major, node v's rows from
 * row_offset[v]) with the factor of symplex_block_lu_factor. */
void symplex_block_lu_solve(int64_t n_nodes, const int64_t *order, const int64_t *dim, const int64_t *diag_offset,
                            const int64_t *row_offset, const int64_t *upper_start, const int64_t *upper_node,
                            const int64_t *lower_offset, const int64_t *upper_offset, const double *a,
                            const int64_t *piv, int64_t ncol, double *x);

#endif

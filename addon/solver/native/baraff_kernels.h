/* Baraff's O(n) block LDL^T of a saddle-point matrix whose graph is a tree (seed 002, Appendix A).
 * Plain C ABI, loaded with ctypes by addon/solver/native/baraff_binding.py; the numpy twin and test
 * reference is addon/solver/maximal/baraff.py. Kernels allocate nothing; every array is C-contiguous,
 * row-major, and indexed by node (0..n_nodes-1).
 *
 * Storage shared by both kernels (offsets in doubles):
 *   dim[node]          block size of the node
 *   sq_offset[node]    start of the node's dim x dim block in dinv (and of its mass block in mass)
 *   lt_offset[node]    start of the node's dim[node] x dim[parent] block in lt (unused at a root)
 *   row_offset[node]   first row of the node in a right-hand side */
#ifndef SYMPLEX_BARAFF_KERNELS_H
#define SYMPLEX_BARAFF_KERNELS_H
#include <stdint.h>

/* Largest block size the kernels accept (stack scratch for pivoting). */
#define SYMPLEX_BARAFF_MAX_DIM 64

/* Factor H = L D L^T, eliminating nodes in `forward` order (every node after its children).
 * inputs:  forward (n_nodes,), parent (n_nodes,) with -1 at roots, dim, sq_offset, lt_offset;
 *          has_mass[node] nonzero: the diagonal block of H is mass[sq_offset[node]...], else zero;
 *          edge_offset[node], edge_transposed[node]: the block H_{node,parent} is edges[edge_offset..]
 *          read as dim[node] x dim[parent] (transposed == 0) or as the transpose of a stored
 *          dim[parent] x dim[node] block (transposed != 0); unused at roots.
 * outputs: dinv (sum dim^2): D_node^-1; lt (sum dim*dim_parent): D_node^-1 H_{node,parent}.
 * returns -1, or the node whose pivot is singular (exact zero or non-finite pivot in Gauss-Jordan);
 *          -2 when a block is larger than SYMPLEX_BARAFF_MAX_DIM. */
int64_t symplex_baraff_factor(int64_t n_nodes, const int64_t *forward, const int64_t *parent, const int64_t *dim,
                              const int64_t *sq_offset, const int64_t *lt_offset, const int64_t *has_mass,
                              const double *mass, const int64_t *edge_offset, const int64_t *edge_transposed,
                              const double *edges, double *dinv, double *lt);

/* Solve H x = b in place for ncol right-hand sides: x (N, ncol) row-major holds b on entry.
 * scratch: at least max(dim) * ncol doubles. */
void symplex_baraff_solve(int64_t n_nodes, const int64_t *forward, const int64_t *parent, const int64_t *dim,
                          const int64_t *sq_offset, const int64_t *lt_offset, const int64_t *row_offset,
                          const double *dinv, const double *lt, int64_t ncol, double *x, double *scratch);

/* out = H x for ncol columns (x, out (N, ncol) row-major): the residuals of iterative refinement.
 * Inputs as in symplex_baraff_factor, plus row_offset. */
void symplex_baraff_multiply(int64_t n_nodes, const int64_t *parent, const int64_t *dim, const int64_t *sq_offset,
                             const int64_t *row_offset, const int64_t *has_mass, const double *mass,
                             const int64_t *edge_offset, const int64_t *edge_transposed, const double *edges,
                             int64_t ncol, const double *x, double *out);

/* Block LDU on a filled pattern (addon/solver/maximal/fillin.py, its numpy twin and reference).
 * a holds every block of the matrix and of the fill, row-major: node v's diagonal block at
 * diag_offset[v]; for v's later neighbours upper_node[e], e in [upper_start[v], upper_start[v+1]),
 * the blocks A_pv at lower_offset[e] and A_vp at upper_offset[e]; for every ordered pair (p, r) of v's
 * later neighbours (row-major over e, f), pair_offset[pair_start[v] + ...] locates A_pr (the diagonal
 * block when p == r). Factor in place: diagonal blocks become D^-1, A_pv becomes L_pv = A_pv D_v^-1,
 * A_vp becomes U_vp = D_v^-1 A_vp. scratch: 2 * max(dim) * sum over v of its later neighbours' dims.
 * Returns -1, the node with a singular pivot, or -2 for a block larger than SYMPLEX_BARAFF_MAX_DIM. */
int64_t symplex_fillin_factor(int64_t n_nodes, const int64_t *order, const int64_t *dim, const int64_t *diag_offset,
                              const int64_t *upper_start, const int64_t *upper_node, const int64_t *lower_offset,
                              const int64_t *upper_offset, const int64_t *pair_start, const int64_t *pair_offset,
                              double *a, double *scratch);

/* Solve with the factored a for ncol right-hand sides in place (x (N, ncol), node v's rows from
 * row_offset[v]); scratch: max(dim) * ncol doubles. */
void symplex_fillin_solve(int64_t n_nodes, const int64_t *order, const int64_t *dim, const int64_t *diag_offset,
                          const int64_t *upper_start, const int64_t *upper_node, const int64_t *lower_offset,
                          const int64_t *upper_offset, const int64_t *row_offset, const double *a, int64_t ncol,
                          double *x, double *scratch);

#endif

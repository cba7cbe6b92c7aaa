/* Sparse sums of the shots' evaluation (declared in symplex_kernels.h; bound in native/sparse_binding.py):
 * - scatter_add: COO data summed into the entries of a sparse matrix's value array, out[target[i]] += values[i] in
 *   the order of i. A shot transcription's Hessian comes as the blocks' COO data, several entries landing on one
 *   matrix entry (addon/solver/shots/transcription.py SparsityPattern.values; numpy twin: np.bincount over the same
 *   targets, the sum in the same order).
 * - csr_matvec: out = A x for a CSR matrix A, each row summed in the order of its entries as scipy's csr_matvec
 *   does (its twin): the fixed maps around a tree shot's compiled programs (shots/tree_evaluation.py). */
#include "symplex_kernels.h"

void symplex_scatter_add(int64_t n, const int64_t *target, const double *values, double *out) {
    for (int64_t i = 0; i < n; ++i)
        out[target[i]] += values[i];
}

void symplex_csr_matvec(int64_t rows, const int64_t *indptr, const int64_t *indices, const double *data,
                        const double *x, double *out) {
    for (int64_t r = 0; r < rows; ++r) {
        double sum = 0.0;
        for (int64_t k = indptr[r]; k < indptr[r + 1]; ++k)
            sum += data[k] * x[indices[k]];
        out[r] = sum;
    }
}

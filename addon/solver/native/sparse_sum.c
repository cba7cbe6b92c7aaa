/* Sparse sums of the shots' evaluation (declared in symplex_kernels.h; bound in native/sparse_binding.py):
 * - scatter_add: COO data summed into the entries of a sparse matrix's value array, out[target[i]] += values[i] in
 *   the order of i. A shot transcription's Hessian comes as the blocks' COO data, several entries landing on one
 *   matrix entry (addon/solver/shots/transcription.py SparsityPattern.values; numpy twin: np.bincount over the same
 *   targets, the sum in the same order).
 * - entry_sums, symmetric_half_sum: COO data summed into a CSR pattern's entries, then the symmetrised matrix
 *   0.5 (A + A^T) gathered from those sums in another pattern, in two passes without intermediate arrays: the
 *   interior point's reduced Hessian (addon/solver/shots/nlp.py _Reduced.hess_data; numpy twin:
 *   native/sparse_binding.py symmetric_half_sum_numpy, the same sums in the same order).
 * - csr_matvec: out = A x for a CSR matrix A, each row summed in the order of its entries as scipy's csr_matvec
 *   does (its twin): the fixed maps around a tree shot's compiled programs (shots/tree_evaluation.py). */
#include "symplex_kernels.h"

void symplex_scatter_add(int64_t n, const int64_t *target, const double *values, double *out) {
    for (int64_t i = 0; i < n; ++i)
        out[target[i]] += values[i];
}

void symplex_entry_sums(int64_t n_classes, const int64_t *terms, const int64_t *entries, const int64_t *source,
                        const double *values, double *sums) {
    for (int64_t c = 0; c < n_classes; ++c) {  /* the same number of terms in each of a class's sums: no mispredicted
                                                  loop exit */
        for (int64_t k = 0; k < entries[c]; ++k) {
            double sum = 0.0;
            for (int64_t t = 0; t < terms[c]; ++t)
                sum += values[*source++];
            *sums++ = sum;
        }
    }
}

void symplex_symmetric_half_sum(int64_t n, const int64_t *upper, const int64_t *lower, const double *sums,
                                double *out) {
    for (int64_t k = 0; k < n; ++k) {
        const double a = upper[k] < 0 ? 0.0 : 0.5 * sums[upper[k]];
        const double b = lower[k] < 0 ? 0.0 : 0.5 * sums[lower[k]];
        out[k] = a + b;
    }
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

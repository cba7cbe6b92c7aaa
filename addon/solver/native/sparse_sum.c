/* Sums of COO data into the entries of a sparse matrix's value array: out[target[i]] += values[i], in the order of
 * i. A shot transcription's Hessian comes as the blocks' COO data, several entries landing on one matrix entry
 * (addon/solver/shots/transcription.py SparsityPattern.values; numpy twin: np.bincount over the same targets, the sum
 * in the same order). Declared in symplex_kernels.h. */
#include "symplex_kernels.h"

void symplex_scatter_add(int64_t n, const int64_t *target, const double *values, double *out) {
    for (int64_t i = 0; i < n; ++i)
        out[target[i]] += values[i];
}

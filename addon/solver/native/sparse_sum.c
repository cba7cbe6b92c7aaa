/* Sums of values into the entries of a sparse matrix's value array: out[target[i]] += values[i] for every i with
 * target[i] >= 0, in the order of i. The shot transcriptions' Hessians come as the blocks' raw outputs, several of
 * them landing on one entry (addon/solver/shots/transcription.py SparsityPattern.scatter; numpy twin: np.bincount
 * over the same targets, the sum in the same order). Declared in symplex_kernels.h. */
#include "symplex_kernels.h"

void symplex_scatter_add(int64_t n, const int64_t *target, const double *values, double *out) {
    for (int64_t i = 0; i < n; ++i)
        if (target[i] >= 0)
            out[target[i]] += values[i];
}

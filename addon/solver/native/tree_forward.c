/* Tree composition of rigid transforms (forward kinematics), see symplex_kernels.h. */
#include "symplex_kernels.h"

int64_t symplex_abi_version(void) { return SYMPLEX_ABI_VERSION; }

void symplex_tree_forward(int64_t n, const int64_t *parent, const double *local, double *world)
{
    double *identity = world + 16 * n;
    for (int k = 0; k < 16; ++k) identity[k] = (k % 5 == 0) ? 1.0 : 0.0;
    for (int64_t f = 0; f < n; ++f) {
        const double *a = world + 16 * (parent[f] < 0 ? n : parent[f]);
        const double *b = local + 16 * f;
        double *c = world + 16 * f;
        for (int i = 0; i < 3; ++i) {
            for (int j = 0; j < 4; ++j) {
                double s = a[4 * i + 0] * b[0 + j] + a[4 * i + 1] * b[4 + j] + a[4 * i + 2] * b[8 + j];
                c[4 * i + j] = s + (j == 3 ? a[4 * i + 3] : 0.0);
            }
        }
        c[12] = 0.0; c[13] = 0.0; c[14] = 0.0; c[15] = 1.0;
    }
}

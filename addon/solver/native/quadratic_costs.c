/* The Hessian of the vehicle shots' quadratic costs as COO data (declared in symplex_kernels.h; bound in
 * native/quadratic_binding.py; numpy twin: addon/solver/shots/transcription.py QuadraticCosts.hessian_into_numpy,
 * the same products in the same order): the effort's and the smoothness' entries, each written where the pattern
 * repeats it (the mirrored entries) in one pass instead of a copy a repetition. */
#include "symplex_kernels.h"

void symplex_quadratic_hessian(int64_t E, const double *kee, const double *ke, const double *e, int64_t S,
                               const double *kss, const double *ks, const double *d, double scale, double scale_h,
                               double scale_over_h, double scale_over_h2, double *out) {
    double *effort = out, *smooth = out + 3 * E;
    for (int64_t i = 0; i < E; ++i) {
        const double with_h = (scale * ke[i]) * e[i];
        effort[i] = scale_h * kee[i];
        effort[E + i] = with_h;
        effort[2 * E + i] = with_h;
    }
    for (int64_t j = 0; j < S; ++j) {
        const double a = scale_over_h * kss[j], b = (scale_over_h2 * ks[j]) * d[j];
        smooth[j] = a;
        smooth[S + j] = a;
        smooth[2 * S + j] = -a;
        smooth[3 * S + j] = -a;
        smooth[4 * S + j] = b;
        smooth[5 * S + j] = b;
        smooth[6 * S + j] = -b;
        smooth[7 * S + j] = -b;
    }
}

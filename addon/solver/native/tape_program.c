/* A recorded scalar program (shots/program.py) run for K instances: the output's value, its gradient by one
 * reverse sweep and on request its exact Hessian (whole, or the block across or below a split of the variables)
 * by the second-order chain rule of shots/tape.py: forward
 * gradients over each node's support, the reverse sweep's adjoints abar_i, then for every product u v the pair
 * abar_i (grad u grad v^T + grad v grad u^T) and for every f(u) the pair abar_i f''(u) grad u grad u^T.
 * Instances run LANES at a time side by side: every array holds a node's numbers for the lanes contiguously
 * ([node][lane]), so each operation is read and dispatched once per LANES instances and its work is a loop over
 * them (a partial last group is padded with zero inputs, its extra lanes dropped).
 * Its reference is shots/tape.py's Tape run on the same formula (tests/solver/shots/test_program.py). */
#include <math.h>
#include <string.h>

#include "symplex_kernels.h"

enum { OP_CONST, OP_PARAM, OP_VAR, OP_ADD, OP_MUL, OP_NEG, OP_SIN, OP_COS };

#define LANES 8

typedef struct {
    double *val, *d1, *adj, *g, *H, *grad, *x, *par, *w;
} workspace;

/* Operand `side` of node i (0 for none: its lanes are then not read). */
static int64_t operand(const symplex_program *p, int64_t i, int side) {
    const int64_t a = p->args[2 * i + side];
    return a >= 0 ? a : 0;
}

/* Node values of the lanes (x: [n_var][lanes], par: [n_param][lanes]), and the derivative of each sin and cos node
 * at its operand (d1; f'' = -f). */
static void values(const symplex_program *p, const workspace *ws) {
    const int64_t L = LANES;
    for (int64_t i = 0; i < p->n; i++) {
        double *v = ws->val + i * L, *d = ws->d1 + i * L;
        const double *va = ws->val + operand(p, i, 0) * L, *vb = ws->val + operand(p, i, 1) * L;
        switch (p->op[i]) {
        case OP_CONST: for (int64_t l = 0; l < L; l++) v[l] = p->number[i]; break;
        case OP_PARAM: memcpy(v, ws->par + (int64_t)p->number[i] * L, sizeof(double) * L); break;
        case OP_VAR: memcpy(v, ws->x + (int64_t)p->number[i] * L, sizeof(double) * L); break;
        case OP_ADD: for (int64_t l = 0; l < L; l++) v[l] = va[l] + vb[l]; break;
        case OP_MUL: for (int64_t l = 0; l < L; l++) v[l] = va[l] * vb[l]; break;
        case OP_NEG: for (int64_t l = 0; l < L; l++) v[l] = -va[l]; break;
        case OP_SIN: for (int64_t l = 0; l < L; l++) { v[l] = sin(va[l]); d[l] = cos(va[l]); } break;
        default: for (int64_t l = 0; l < L; l++) { v[l] = cos(va[l]); d[l] = -sin(va[l]); } break;
        }
    }
}

/* Whether any lane of w is nonzero. */
static int any(const double *w, int64_t L) {
    for (int64_t l = 0; l < L; l++)
        if (w[l] != 0.0) return 1;
    return 0;
}

/* Adjoints of every node (adj) and the output's gradient over the variables (grad), one reverse sweep. */
static void adjoints(const symplex_program *p, const workspace *ws) {
    const int64_t L = LANES;
    double *adj = ws->adj;
    memset(adj, 0, sizeof(double) * p->n * L);
    memset(ws->grad, 0, sizeof(double) * p->n_var * L);
    for (int64_t l = 0; l < L; l++) adj[(p->n - 1) * L + l] = 1.0;
    for (int64_t i = p->n - 1; i >= 0; i--) {
        const double *w = adj + i * L;
        if (!any(w, L)) continue;
        const int64_t a = operand(p, i, 0), b = operand(p, i, 1);
        double *aa = adj + a * L, *ab = adj + b * L;
        const double *va = ws->val + a * L, *vb = ws->val + b * L;
        const double *d = ws->d1 + i * L;
        switch (p->op[i]) {
        case OP_VAR: {
            double *gv = ws->grad + (int64_t)p->number[i] * L;
            for (int64_t l = 0; l < L; l++) gv[l] += w[l];
            break;
        }
        case OP_ADD:
            for (int64_t l = 0; l < L; l++) aa[l] += w[l];
            for (int64_t l = 0; l < L; l++) ab[l] += w[l];
            break;
        case OP_MUL:
            for (int64_t l = 0; l < L; l++) aa[l] += w[l] * vb[l];
            for (int64_t l = 0; l < L; l++) ab[l] += w[l] * va[l];
            break;
        case OP_NEG: for (int64_t l = 0; l < L; l++) aa[l] -= w[l]; break;
        case OP_SIN:
        case OP_COS: for (int64_t l = 0; l < L; l++) aa[l] += w[l] * d[l]; break;
        default: break;
        }
    }
}

/* g (s entries of lanes) = ca ga + cb gb for the operands' gradients ga, gb (na, nb entries) at the increasing
 * positions ma, mb of g, lane-wise coefficients ca, cb; each entry written once. g overlaps none of the others (restrict:
 * the lane loops are vectorised, the same operations lane by lane). */
static void merge(double *restrict g, int64_t s, int64_t L, const int64_t *ma, const double *restrict ga, int64_t na,
                  const double *restrict ca, const int64_t *mb, const double *restrict gb, int64_t nb,
                  const double *restrict cb) {
    int64_t ia = 0, ib = 0;
    for (int64_t j = 0; j < s; j++) {
        double *restrict gj = g + j * L;
        if (ia < na && ma[ia] == j) {
            const double *restrict src = ga + ia++ * L;
            for (int64_t l = 0; l < L; l++) gj[l] = ca[l] * src[l];
        } else {
            for (int64_t l = 0; l < L; l++) gj[l] = 0.0;
        }
        if (ib < nb && mb[ib] == j) {
            const double *restrict src = gb + ib++ * L;
            for (int64_t l = 0; l < L; l++) gj[l] += cb[l] * src[l];
        }
    }
}

/* Gradients of every node over its support (g: [support_start[i] + j][lanes]). */
static void gradients(const symplex_program *p, const workspace *ws) {
    const int64_t L = LANES, *start = p->support_start;
    double *g = ws->g, *ones = ws->w;
    for (int64_t l = 0; l < L; l++) ones[l] = 1.0;
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t s = start[i + 1] - start[i];
        if (s == 0) continue;
        const int64_t a = p->args[2 * i], b = p->args[2 * i + 1];
        double *gi = g + start[i] * L;
        const double *ga = g + (a >= 0 ? start[a] : 0) * L;
        const int64_t sa = a >= 0 ? start[a + 1] - start[a] : 0;
        switch (p->op[i]) {
        case OP_VAR: for (int64_t l = 0; l < L; l++) gi[l] = 1.0; break;
        case OP_ADD:
        case OP_MUL: {
            const int add = p->op[i] == OP_ADD;
            merge(gi, s, L, p->maps + p->map_start[2 * i], ga, sa, add ? ones : ws->val + b * L,
                  p->maps + p->map_start[2 * i + 1], g + start[b] * L, start[b + 1] - start[b],
                  add ? ones : ws->val + a * L);
            break;
        }
        case OP_NEG:
            for (int64_t j = 0; j < s * L; j++) gi[j] = -ga[j];
            break;
        default: {
            const double *d = ws->d1 + i * L;
            for (int64_t j = 0; j < s; j++)
                for (int64_t l = 0; l < L; l++) gi[j * L + l] = d[l] * ga[j * L + l];
            break;
        }
        }
    }
}

/* H[s_j, t_m] += (c gu_j) gv_m lane-wise for j in [j0, j1), m in [m0, m1) of the supports s, t (H: [n][n][lanes]);
 * H and the scratch cu overlap none of the others (restrict, as in merge). */
static void outer(double *restrict H, int64_t n, int64_t L, const int64_t *s, const double *restrict gu, int64_t j0,
                  int64_t j1, const int64_t *t, const double *restrict gv, int64_t m0, int64_t m1,
                  const double *restrict c, double *restrict cu) {
    for (int64_t j = j0; j < j1; j++) {
        for (int64_t l = 0; l < L; l++) cu[l] = c[l] * gu[j * L + l];
        double *restrict row = H + s[j] * n * L;
        for (int64_t m = m0; m < m1; m++) {
            double *restrict h = row + t[m] * L;
            const double *restrict v = gv + m * L;
            for (int64_t l = 0; l < L; l++) h[l] += cu[l] * v[l];
        }
    }
}

/* How many of the sorted support s (length n) are below split. */
static int64_t below(const int64_t *s, int64_t n, int64_t split) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = (lo + hi) / 2;
        if (s[mid] < split) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* The pair c grad u grad v^T (lane-wise c) added to H, only the entries `block` asks for (see
 * symplex_program_run). */
static void pair(const symplex_program *p, const workspace *ws, int64_t u, int64_t v, const double *c, int64_t block,
                 int64_t split) {
    const int64_t *start = p->support_start, L = LANES, n = p->n_var;
    const int64_t nu = start[u + 1] - start[u], nv = start[v + 1] - start[v];
    const int64_t *su = p->support + start[u], *sv = p->support + start[v];
    const double *gu = ws->g + start[u] * L, *gv = ws->g + start[v] * L;
    double *cu = ws->w + L;
    if (block == SYMPLEX_PROGRAM_HESSIAN) {
        outer(ws->H, n, L, su, gu, 0, nu, sv, gv, 0, nv, c, cu);
        return;
    }
    const int64_t cut_u = below(su, nu, split), cut_v = below(sv, nv, split);
    if (block == SYMPLEX_PROGRAM_BELOW) {
        outer(ws->H, n, L, su, gu, 0, cut_u, sv, gv, 0, cut_v, c, cu);
    } else {
        outer(ws->H, n, L, su, gu, 0, cut_u, sv, gv, cut_v, nv, c, cu);
        outer(ws->H, n, L, su, gu, cut_u, nu, sv, gv, 0, cut_v, c, cu);
    }
}

/* Hessian H ([n_var][n_var][lanes]) = sum_i abar_i (second-order pairs of node i), the entries `block` asks for,
 * each pair in one triangle or the other (symmetric_out sums them). */
static void hessian(const symplex_program *p, const workspace *ws, int64_t block, int64_t split) {
    const int64_t n = p->n_var, L = LANES, *start = p->support_start;
    double *H = ws->H, *c = ws->w + 2 * L;
    memset(H, 0, sizeof(double) * n * n * L);
    for (int64_t i = 0; i < p->n; i++) {
        const double *w = ws->adj + i * L;
        const int64_t a = p->args[2 * i], b = p->args[2 * i + 1];
        if (start[i + 1] == start[i] || !any(w, L)) continue;
        if (p->op[i] == OP_MUL && start[a + 1] > start[a] && start[b + 1] > start[b]) {
            pair(p, ws, a, b, w, block, split);
        } else if (p->op[i] == OP_SIN || p->op[i] == OP_COS) { /* f'' = -f */
            const double *v = ws->val + i * L;
            for (int64_t l = 0; l < L; l++) c[l] = -0.5 * w[l] * v[l];
            pair(p, ws, a, a, c, block, split);
        }
    }
}

/* The Hessians of the first B lanes, both triangles summed (the pairs fill either), to out (B, n_var, n_var). */
static void symmetric_out(const symplex_program *p, const workspace *ws, int64_t B, double *out) {
    const int64_t n = p->n_var, L = LANES;
    for (int64_t r = 0; r < n; r++)
        for (int64_t q = r; q < n; q++) {
            const double *x = ws->H + (r * n + q) * L, *y = ws->H + (q * n + r) * L;
            for (int64_t l = 0; l < B; l++) out[l * n * n + r * n + q] = out[l * n * n + q * n + r] = x[l] + y[l];
        }
}

int64_t symplex_program_scratch_size(const symplex_program *p) {
    return LANES * (3 * p->n + p->support_start[p->n] + p->n_var * p->n_var + 2 * p->n_var + p->n_param + 3);
}

/* The workspace's arrays in scratch. */
static workspace layout(const symplex_program *p, double *scratch) {
    workspace ws;
    const int64_t L = LANES;
    ws.val = scratch;
    ws.d1 = ws.val + p->n * L;
    ws.adj = ws.d1 + p->n * L;
    ws.g = ws.adj + p->n * L;
    ws.H = ws.g + p->support_start[p->n] * L;
    ws.grad = ws.H + p->n_var * p->n_var * L;
    ws.x = ws.grad + p->n_var * L;
    ws.par = ws.x + p->n_var * L;
    ws.w = ws.par + p->n_param * L;
    return ws;
}

void symplex_program_run(const symplex_program *p, int64_t K, int64_t block, int64_t split, const double *X,
                         const double *P, double *value, double *grad, double *H, double *scratch) {
    const workspace ws = layout(p, scratch);
    const int64_t L = LANES, nv = p->n_var, np = p->n_param;
    for (int64_t k0 = 0; k0 < K; k0 += L) {
        const int64_t B = K - k0 < L ? K - k0 : L;
        for (int64_t l = 0; l < L; l++) {  /* inputs lane-wise; padded lanes zero */
            for (int64_t j = 0; j < nv; j++) ws.x[j * L + l] = l < B ? X[(k0 + l) * nv + j] : 0.0;
            for (int64_t j = 0; j < np; j++) ws.par[j * L + l] = l < B ? P[(k0 + l) * np + j] : 0.0;
        }
        values(p, &ws);
        adjoints(p, &ws);
        for (int64_t l = 0; l < B; l++) {
            value[k0 + l] = ws.val[(p->n - 1) * L + l];
            for (int64_t j = 0; j < nv; j++) grad[(k0 + l) * nv + j] = ws.grad[j * L + l];
        }
        if (block == SYMPLEX_PROGRAM_ROWS) continue;
        gradients(p, &ws);
        hessian(p, &ws, block, split);
        symmetric_out(p, &ws, B, H + k0 * nv * nv);
    }
}

/* A recorded scalar program (shots/program.py) run for K instances: the output's value, its gradient by one
 * reverse sweep and on request its exact Hessian (whole, or the block across or below a split of the variables)
 * by the second-order chain rule of shots/tape.py: forward
 * gradients over each node's support, the reverse sweep's adjoints abar_i, then for every product u v the pair
 * abar_i (grad u grad v^T + grad v grad u^T) and for every f(u) the pair abar_i f''(u) grad u grad u^T.
 * Its reference is shots/tape.py's Tape run on the same formula (tests/solver/shots/test_program.py). */
#include <math.h>
#include <string.h>

#include "symplex_kernels.h"

enum { OP_CONST, OP_PARAM, OP_VAR, OP_ADD, OP_MUL, OP_NEG, OP_SIN, OP_COS };

/* Node values of one instance, and the derivative of each sin and cos node at its operand (d1; f'' = -f). */
static void values(const symplex_program *p, const double *x, const double *par, double *val, double *d1) {
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t a = p->args[2 * i], b = p->args[2 * i + 1];
        switch (p->op[i]) {
        case OP_CONST: val[i] = p->number[i]; break;
        case OP_PARAM: val[i] = par[(int64_t)p->number[i]]; break;
        case OP_VAR: val[i] = x[(int64_t)p->number[i]]; break;
        case OP_ADD: val[i] = val[a] + val[b]; break;
        case OP_MUL: val[i] = val[a] * val[b]; break;
        case OP_NEG: val[i] = -val[a]; break;
        case OP_SIN: val[i] = sin(val[a]); d1[i] = cos(val[a]); break;
        default: val[i] = cos(val[a]); d1[i] = -sin(val[a]); break;
        }
    }
}

/* Adjoints of every node (adj) and the output's gradient over the variables (grad, n_var), one reverse sweep. */
static void adjoints(const symplex_program *p, const double *val, const double *d1, double *adj, double *grad) {
    memset(adj, 0, sizeof(double) * p->n);
    memset(grad, 0, sizeof(double) * p->n_var);
    adj[p->n - 1] = 1.0;
    for (int64_t i = p->n - 1; i >= 0; i--) {
        const double w = adj[i];
        if (w == 0.0) continue;
        const int64_t a = p->args[2 * i], b = p->args[2 * i + 1];
        switch (p->op[i]) {
        case OP_VAR: grad[(int64_t)p->number[i]] += w; break;
        case OP_ADD: adj[a] += w; adj[b] += w; break;
        case OP_MUL: adj[a] += w * val[b]; adj[b] += w * val[a]; break;
        case OP_NEG: adj[a] -= w; break;
        case OP_SIN:
        case OP_COS: adj[a] += w * d1[i]; break;
        default: break;
        }
    }
}

/* g (s entries) = ca ga + cb gb for the operands' gradients ga, gb (na, nb entries) at the increasing positions
 * ma, mb of g, each entry written once (zeroing g first and adding stalls on store forwarding). */
static void merge(double *g, int64_t s, const int64_t *ma, const double *ga, int64_t na, double ca,
                  const int64_t *mb, const double *gb, int64_t nb, double cb) {
    int64_t ia = 0, ib = 0;
    for (int64_t j = 0; j < s; j++) {
        double v = 0.0;
        if (ia < na && ma[ia] == j) v += ca * ga[ia++];
        if (ib < nb && mb[ib] == j) v += cb * gb[ib++];
        g[j] = v;
    }
}

/* Gradients of every node over its support (g, at support_start). */
static void gradients(const symplex_program *p, const double *val, const double *d1, double *g) {
    const int64_t *start = p->support_start;
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t s = start[i + 1] - start[i];
        if (s == 0) continue;
        const int64_t a = p->args[2 * i], b = p->args[2 * i + 1];
        double *gi = g + start[i];
        const double *ga = g + (a >= 0 ? start[a] : 0);
        const int64_t sa = a >= 0 ? start[a + 1] - start[a] : 0;
        switch (p->op[i]) {
        case OP_VAR: gi[0] = 1.0; break;
        case OP_ADD:
        case OP_MUL: {
            const double ca = p->op[i] == OP_ADD ? 1.0 : val[b], cb = p->op[i] == OP_ADD ? 1.0 : val[a];
            merge(gi, s, p->maps + p->map_start[2 * i], ga, sa, ca, p->maps + p->map_start[2 * i + 1],
                  g + start[b], start[b + 1] - start[b], cb);
            break;
        }
        default: {
            const double c = p->op[i] == OP_NEG ? -1.0 : d1[i];
            for (int64_t j = 0; j < s; j++) gi[j] = c * ga[j];
            break;
        }
        }
    }
}

/* M[s_j, t_l] += w gu_j gv_l for j in [j0, j1), l in [l0, l1) of the supports s, t (M: n x n). */
static void outer(double *M, int64_t n, const int64_t *s, const double *gu, int64_t j0, int64_t j1,
                  const int64_t *t, const double *gv, int64_t l0, int64_t l1, double w) {
    for (int64_t j = j0; j < j1; j++) {
        double *row = M + s[j] * n;
        const double c = w * gu[j];
        for (int64_t l = l0; l < l1; l++) row[t[l]] += c * gv[l];
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

/* The pair w grad u grad v^T added to M, only the entries `block` asks for (see symplex_program_run). */
static void pair(const symplex_program *p, int64_t u, int64_t v, double w, const double *g, double *M,
                 int64_t block, int64_t split) {
    const int64_t *start = p->support_start;
    const int64_t nu = start[u + 1] - start[u], nv = start[v + 1] - start[v];
    const int64_t *su = p->support + start[u], *sv = p->support + start[v];
    const double *gu = g + start[u], *gv = g + start[v];
    if (block == SYMPLEX_PROGRAM_HESSIAN) {
        outer(M, p->n_var, su, gu, 0, nu, sv, gv, 0, nv, w);
        return;
    }
    const int64_t cu = below(su, nu, split), cv = below(sv, nv, split);
    if (block == SYMPLEX_PROGRAM_BELOW) {
        outer(M, p->n_var, su, gu, 0, cu, sv, gv, 0, cv, w);
    } else {
        outer(M, p->n_var, su, gu, 0, cu, sv, gv, cv, nv, w);
        outer(M, p->n_var, su, gu, cu, nu, sv, gv, 0, cv, w);
    }
}

/* Hessian H (n_var x n_var) = sum_i abar_i (second-order pairs of node i), both triangles, the entries `block`
 * asks for. */
static void hessian(const symplex_program *p, const double *val, const double *adj, const double *g, double *H,
                    int64_t block, int64_t split) {
    const int64_t n = p->n_var;
    memset(H, 0, sizeof(double) * n * n);
    for (int64_t i = 0; i < p->n; i++) {
        const double w = adj[i];
        const int64_t a = p->args[2 * i], b = p->args[2 * i + 1];
        if (w == 0.0 || p->support_start[i + 1] == p->support_start[i]) continue;
        if (p->op[i] == OP_MUL && p->support_start[a + 1] > p->support_start[a]
            && p->support_start[b + 1] > p->support_start[b])
            pair(p, a, b, w, g, H, block, split);
        else if (p->op[i] == OP_SIN || p->op[i] == OP_COS)  /* f'' = -f */
            pair(p, a, a, -0.5 * w * val[i], g, H, block, split);
    }
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = r; c < n; c++) {
            const double s = H[r * n + c] + H[c * n + r];
            H[r * n + c] = H[c * n + r] = s;
        }
}

int64_t symplex_program_scratch_size(const symplex_program *p) {
    return 3 * p->n + p->support_start[p->n];
}

void symplex_program_run(const symplex_program *p, int64_t K, int64_t block, int64_t split, const double *X,
                         const double *P, double *value, double *grad, double *H, double *scratch) {
    double *val = scratch, *d1 = scratch + p->n, *adj = scratch + 2 * p->n, *g = scratch + 3 * p->n;
    const int64_t nv = p->n_var;
    for (int64_t k = 0; k < K; k++) {
        values(p, X + k * nv, P + k * p->n_param, val, d1);
        value[k] = val[p->n - 1];
        adjoints(p, val, d1, adj, grad + k * nv);
        if (block == SYMPLEX_PROGRAM_ROWS) continue;
        gradients(p, val, d1, g);
        hessian(p, val, adj, g, H + k * nv * nv, block, split);
    }
}

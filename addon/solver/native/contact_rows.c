/* The maximal step's contact rows at the knot in C: the twin of maximal/interior_point.py's _contacts,
 * _patches, _contact_force_side, _weights, _cold_slack and _cone_entries (the contact part of `packed`).
 * Contract in symplex_kernels.h (symplex_contact_knot, symplex_contact_rows).
 *
 * Every formula follows its numpy twin (same rows, same order, same discrete choices), so the rows agree
 * to round-off: gaps first, then per friction patch (the rubbing contacts of one collider pair, patches
 * in key order) its cone row and four (six with spin) pyramid directions. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "symplex_kernels.h"
#include "rotation.h"
#include "vec3.h"

#define CLOSE_MARGIN 1e-3 /* interior_point.CLOSE_MARGIN */
#define QUERY_MARGIN 1e-3 /* interior_point.QUERY_MARGIN */

void symplex_contact_knot(int64_t nbody, const double *x, const double *q, const double *v, const double *w,
                          const double *com, const double *reach, double gravity_norm, double dt, double *R,
                          double *origin, double *margin) {
    for (int64_t i = 0; i < nbody; i++) {
        const double *r = R + 9 * i, *c = com + 3 * i, *vi = v + 3 * i, *wi = w + 3 * i;
        symplex_quat_to_matrix(q + 4 * i, R + 9 * i);
        for (int j = 0; j < 3; j++)
            origin[3 * i + j] = x[3 * i + j] - (r[3 * j] * c[0] + r[3 * j + 1] * c[1] + r[3 * j + 2] * c[2]);
        const double sv = sqrt(vi[0] * vi[0] + vi[1] * vi[1] + vi[2] * vi[2]);
        const double sw = sqrt(wi[0] * wi[0] + wi[1] * wi[1] + wi[2] * wi[2]);
        /* interior_point.query_margins: rounded up to QUERY_MARGIN times a power of 2 */
        int e;
        const double f = frexp((2.0 * dt * (sv + reach[i] * sw) + gravity_norm * dt * dt + QUERY_MARGIN) / QUERY_MARGIN, &e);
        margin[i] = ldexp(QUERY_MARGIN, f == 0.5 ? e - 1 : e);
    }
}

/* d(x + R p)/d(x, phi) = [I, -R [p]x] (3 x 6, row major), zero for the world (body == nbody). */
static void point_jacobian(const double *r, const double *p, int world, double *J) {
    memset(J, 0, 18 * sizeof(double));
    if (world) return;
    const double hp[9] = {0.0, -p[2], p[1], p[2], 0.0, -p[0], -p[1], p[0], 0.0};
    for (int i = 0; i < 3; i++) {
        J[6 * i + i] = 1.0;
        for (int j = 0; j < 3; j++)
            J[6 * i + 3 + j] = -(r[3 * i] * hp[j] + r[3 * i + 1] * hp[3 + j] + r[3 * i + 2] * hp[6 + j]);
    }
}

/* collision/features.py's codes and tolerance; shapes.py's codes */
#define OWNER_NONE 0
#define OWNER_FACE_A 1
#define OWNER_FACE_B 2
#define OWNER_EDGES 3
#define FACE_TOLERANCE 1e-9
#define PARALLEL 1e-6
#define SHAPE_BOX 1
#define SHAPE_PLANE 4

/* features.normal_owners for one contact: the owner code; for edges the edges' body-frame directions. */
static int normal_owner(int64_t code_a, int64_t code_b, const double *local_a, const double *local_b,
                        const double *ra, const double *rb, const double *n, double *edge_a, double *edge_b) {
    if (!((code_a == SHAPE_PLANE || code_a == SHAPE_BOX) && code_b == SHAPE_BOX)) return OWNER_NONE;
    double axes_a[9], axes_b[9], along_a[3], along_b[3];
    mat3_mul(ra, local_a, axes_a);
    mat3_mul(rb, local_b, axes_b);
    int low_a = 0, low_b = 0;
    double high_a = 0.0, high_b = 0.0;
    for (int j = 0; j < 3; j++) {
        along_a[j] = fabs(axes_a[j] * n[0] + axes_a[3 + j] * n[1] + axes_a[6 + j] * n[2]);
        along_b[j] = fabs(axes_b[j] * n[0] + axes_b[3 + j] * n[1] + axes_b[6 + j] * n[2]);
        high_a = along_a[j] > high_a ? along_a[j] : high_a;
        high_b = along_b[j] > high_b ? along_b[j] : high_b;
        if (along_a[j] < along_a[low_a]) low_a = j;
        if (along_b[j] < along_b[low_b]) low_b = j;
    }
    if (code_a == SHAPE_PLANE || high_a >= 1.0 - FACE_TOLERANCE) return OWNER_FACE_A;
    if (high_b >= 1.0 - FACE_TOLERANCE) return OWNER_FACE_B;
    if (code_a != SHAPE_BOX || along_a[low_a] > FACE_TOLERANCE || along_b[low_b] > FACE_TOLERANCE) return OWNER_NONE;
    const double ea[3] = {axes_a[low_a], axes_a[3 + low_a], axes_a[6 + low_a]};
    const double eb[3] = {axes_b[low_b], axes_b[3 + low_b], axes_b[6 + low_b]};
    double across[3];
    cross3(ea, eb, across);
    if (!(sqrt(dot3(across, across)) > PARALLEL)) return OWNER_NONE;
    for (int j = 0; j < 3; j++) {
        edge_a[j] = local_a[3 * j + low_a];
        edge_b[j] = local_b[3 * j + low_b];
    }
    return OWNER_EDGES;
}

void symplex_contact_curvature(int64_t k, const int64_t *shape, const double *rotation_local,
                               const int64_t *collider_a, const int64_t *collider_b, const int64_t *body_a,
                               const int64_t *body_b, const double *point_a, const double *point_b,
                               const double *normal, const double *x, const double *R, const double *v,
                               const double *w, const double *com, double dt, double *curvature) {
    static const double IDENTITY[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    for (int64_t i = 0; i < k; i++) {
        curvature[i] = 0.0;
        const int64_t body[2] = {body_a[i], body_b[i]};
        const double *r1[2], *n = normal + 3 * i;
        for (int side = 0; side < 2; side++) r1[side] = body[side] >= 0 ? R + 9 * body[side] : IDENTITY;
        double edge[2][3];
        const int owner = normal_owner(shape[collider_a[i]], shape[collider_b[i]], rotation_local + 9 * collider_a[i],
                                       rotation_local + 9 * collider_b[i], r1[0], r1[1], n, edge[0], edge[1]);
        if (owner == OWNER_NONE) continue;
        /* each side's witness point frozen (linear) and moved with its body over dt at the knot's velocities */
        double r2[2][9], linear[2][3], moved[2][3];
        for (int side = 0; side < 2; side++) {
            const int64_t bi = body[side];
            const double *point = side ? point_b + 3 * i : point_a + 3 * i;
            if (bi < 0) {
                memcpy(r2[side], IDENTITY, sizeof IDENTITY);
                for (int j = 0; j < 3; j++) linear[side][j] = moved[side][j] = point[j];
                continue;
            }
            const double *wi = w + 3 * bi, *vi = v + 3 * bi, *xi = x + 3 * bi;
            double p[3], arm[3], spin[3], turn[3], half[4], h[9];
            for (int j = 0; j < 3; j++) p[j] = point[j] - com[3 * bi + j];
            /* bodies.half_step: [sqrt(1 - |a|^2); a], a = dt/2 w */
            for (int j = 0; j < 3; j++) half[1 + j] = 0.5 * dt * wi[j];
            const double c2 = 1.0 - dot3(half + 1, half + 1);
            half[0] = sqrt(c2 > 0.0 ? c2 : 0.0);
            symplex_quat_to_matrix(half, h);
            mat3_mul(r1[side], h, r2[side]);
            mat3_vec(r1[side], p, arm);
            cross3(wi, p, spin);
            mat3_vec(r1[side], spin, turn);
            mat3_vec(r2[side], p, moved[side]);
            for (int j = 0; j < 3; j++) {
                linear[side][j] = xi[j] + arm[j] + dt * (vi[j] + turn[j]);
                moved[side][j] += xi[j] + dt * vi[j];
            }
        }
        /* the normal at the moved configuration: the owning face turned with its body, or across both edges */
        double n2[3], tmp[3];
        if (owner == OWNER_EDGES) {
            double ea[3], eb[3];
            mat3_vec(r2[0], edge[0], ea);
            mat3_vec(r2[1], edge[1], eb);
            cross3(ea, eb, n2);
            const double size = sqrt(dot3(n2, n2));
            if (size > PARALLEL) {
                const double scale = (dot3(n2, n) < 0 ? -1.0 : 1.0) / size;
                for (int j = 0; j < 3; j++) n2[j] *= scale;
            } else {
                memcpy(n2, n, 3 * sizeof(double));
            }
        } else {
            const int side = owner == OWNER_FACE_A ? 0 : 1;
            for (int j = 0; j < 3; j++) tmp[j] = r1[side][j] * n[0] + r1[side][3 + j] * n[1] + r1[side][6 + j] * n[2];
            mat3_vec(r2[side], tmp, n2);
        }
        double gap_moved[3], gap_linear[3];
        for (int j = 0; j < 3; j++) {
            gap_moved[j] = moved[1][j] - moved[0][j];
            gap_linear[j] = linear[1][j] - linear[0][j];
        }
        curvature[i] = dot3(n2, gap_moved) - dot3(n, gap_linear);
    }
}

double symplex_contact_drift(int64_t nbody, int64_t k, const int64_t *shape, const double *rotation_local,
                             const int64_t *collider_a, const int64_t *collider_b, const int64_t *body_a,
                             const int64_t *body_b, const double *point_a, const double *point_b,
                             const double *normal, const double *start, const double *curvature, const int64_t *a,
                             const int64_t *b, const double *Ja, const double *Jb, const double *x, const double *R,
                             const double *v, const double *w, const double *com, double dt, double close_margin,
                             double *along) {
    symplex_contact_curvature(k, shape, rotation_local, collider_a, collider_b, body_a, body_b, point_a, point_b,
                              normal, x, R, v, w, com, dt, along);
    double drift = 0.0;
    for (int64_t i = 0; i < k; i++) {
        const double *n = normal + 3 * i;
        double rate = 0.0; /* n . (Jb V_b - Ja V_a), the world (index nbody) at rest */
        const int64_t body[2] = {a[i], b[i]};
        const double *J[2] = {Ja + 18 * i, Jb + 18 * i};
        for (int side = 0; side < 2; side++) {
            if (body[side] >= nbody) continue;
            const double *vi = v + 3 * body[side], *wi = w + 3 * body[side];
            double moved = 0.0;
            for (int r = 0; r < 3; r++) moved += n[r] * (dot3(J[side] + 6 * r, vi) + dot3(J[side] + 6 * r + 3, wi));
            rate += side ? moved : -moved;
        }
        const double off = fabs(along[i] - curvature[i]);
        if (start[i] + dt * rate <= close_margin && off > drift) drift = off;
    }
    return drift;
}

/* n^T J (6) of a 3 x 6 Jacobian. */
static void normal_side(const double *n, const double *J, double *out) {
    for (int j = 0; j < 6; j++) out[j] = n[0] * J[j] + n[1] * J[6 + j] + n[2] * J[12 + j];
}

int64_t symplex_contact_rows(int64_t nbody, int64_t ncollider, int64_t k, const int64_t *collider_a,
                             const int64_t *collider_b, const int64_t *body_a, const int64_t *body_b,
                             const double *point_a, const double *point_b, const double *normal,
                             const double *distance, const double *friction, const double *x, const double *R,
                             const double *v, const double *w, const double *com, const double *mass,
                             double gravity_norm, double dt, int64_t *a, int64_t *b, int64_t *key, double *Ja,
                             double *Jb, int64_t *kind, int64_t *owner, int64_t *row_a, int64_t *row_b,
                             int64_t *row_key, double *G, double *h0, double *weight, double *s_cold,
                             int64_t *members, int64_t *member_patch, double *B, int64_t *e_row, int64_t *e_col,
                             double *e_val, int64_t *counts, double *scratch) {
    static const double IDENTITY[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    double *centre = scratch;            /* (k, 3) midpoints of the witness points at z_1 */
    int64_t *rubbing = (int64_t *)(scratch + 3 * k); /* (k,) */
    int64_t nrub = 0;
    for (int64_t i = 0; i < k; i++) {
        if (i > 0 && collider_a[i] * ncollider + collider_b[i] < collider_a[i - 1] * ncollider + collider_b[i - 1])
            return -1; /* not sorted by collider pair (CollisionWorld.detect sorts them) */
        const int64_t ai = body_a[i] < 0 ? nbody : body_a[i], bi = body_b[i] < 0 ? nbody : body_b[i];
        a[i] = ai;
        b[i] = bi;
        key[i] = collider_a[i] * ncollider + collider_b[i];
        const double *ra = ai < nbody ? R + 9 * ai : IDENTITY, *rb = bi < nbody ? R + 9 * bi : IDENTITY;
        double pa[3], pb[3], pos_a[3], pos_b[3];
        for (int j = 0; j < 3; j++) {
            pa[j] = point_a[3 * i + j] - (ai < nbody ? com[3 * ai + j] : 0.0);
            pb[j] = point_b[3 * i + j] - (bi < nbody ? com[3 * bi + j] : 0.0);
        }
        point_jacobian(ra, pa, ai == nbody, Ja + 18 * i);
        point_jacobian(rb, pb, bi == nbody, Jb + 18 * i);
        for (int j = 0; j < 3; j++) {
            pos_a[j] = (ai < nbody ? x[3 * ai + j] : 0.0)
                       + (ra[3 * j] * pa[0] + ra[3 * j + 1] * pa[1] + ra[3 * j + 2] * pa[2]);
            pos_b[j] = (bi < nbody ? x[3 * bi + j] : 0.0)
                       + (rb[3 * j] * pb[0] + rb[3 * j + 1] * pb[1] + rb[3 * j + 2] * pb[2]);
            centre[3 * i + j] = 0.5 * (pos_a[j] + pos_b[j]);
        }
        /* the gap row: force side n . (J_A, -J_B), h0 = d / dt, cold slack max(d / dt, 1) */
        double *g = G + 12 * i;
        normal_side(normal + 3 * i, Ja + 18 * i, g);
        normal_side(normal + 3 * i, Jb + 18 * i, g + 6);
        double vn = 0.0;
        for (int j = 0; j < 3; j++) {
            vn += g[6 + j] * (bi < nbody ? v[3 * bi + j] : 0.0) + g[9 + j] * (bi < nbody ? w[3 * bi + j] : 0.0);
            vn -= g[j] * (ai < nbody ? v[3 * ai + j] : 0.0) + g[3 + j] * (ai < nbody ? w[3 * ai + j] : 0.0);
        }
        for (int j = 6; j < 12; j++) g[j] = -g[j];
        kind[i] = 0;
        owner[i] = i;
        row_a[i] = ai;
        row_b[i] = bi;
        row_key[i] = 4 * key[i];
        h0[i] = distance[i] / dt;
        weight[i] = dt;
        s_cold[i] = h0[i] > 1.0 ? h0[i] : 1.0;
        /* friction rows only where the gap can close within the step */
        if (friction[i] > 0.0 && distance[i] + dt * vn - 0.5 * dt * dt * gravity_norm <= CLOSE_MARGIN)
            rubbing[nrub++] = i;
    }
    int64_t m = k, nmem = 0, ndir = 0, nentry = 0, patch = 0;
    for (int64_t s = 0; s < nrub;) {
        int64_t e = s + 1;
        while (e < nrub && key[rubbing[e]] == key[rubbing[s]]) e++;
        const int64_t count = e - s, first = rubbing[s];
        double n[3] = {0, 0, 0}, mean_a[18] = {0}, mean_b[18] = {0}, mean_c[3] = {0, 0, 0};
        for (int64_t t = s; t < e; t++) {
            const int64_t i = rubbing[t];
            for (int j = 0; j < 3; j++) n[j] += normal[3 * i + j];
            for (int j = 0; j < 18; j++) {
                mean_a[j] += Ja[18 * i + j];
                mean_b[j] += Jb[18 * i + j];
            }
            for (int j = 0; j < 3; j++) mean_c[j] += centre[3 * i + j];
        }
        for (int j = 0; j < 3; j++) {
            n[j] /= (double)count;
            mean_c[j] /= (double)count;
        }
        for (int j = 0; j < 18; j++) {
            mean_a[j] /= (double)count;
            mean_b[j] /= (double)count;
        }
        const double nn = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]);
        for (int j = 0; j < 3; j++) n[j] /= nn;
        /* interior_point.tangents: +-t1, +-t2 */
        double helper[3] = {0, 0, 0}, t1[3], d[4][3];
        helper[fabs(n[0]) < 0.9 ? 0 : 1] = 1.0;
        const double hn = helper[0] * n[0] + helper[1] * n[1] + helper[2] * n[2];
        for (int j = 0; j < 3; j++) t1[j] = helper[j] - hn * n[j];
        const double tn = sqrt(t1[0] * t1[0] + t1[1] * t1[1] + t1[2] * t1[2]);
        for (int j = 0; j < 3; j++) {
            t1[j] /= tn;
            d[0][j] = t1[j];
            d[1][j] = -t1[j];
        }
        d[2][0] = n[1] * t1[2] - n[2] * t1[1];
        d[2][1] = n[2] * t1[0] - n[0] * t1[2];
        d[2][2] = n[0] * t1[1] - n[1] * t1[0];
        for (int j = 0; j < 3; j++) d[3][j] = -d[2][j];
        double r = 0.0;
        for (int64_t t = s; t < e; t++) {
            const double *c = centre + 3 * rubbing[t];
            const double dx = c[0] - mean_c[0], dy = c[1] - mean_c[1], dz = c[2] - mean_c[2];
            r += sqrt(dx * dx + dy * dy + dz * dz);
        }
        r /= (double)count;
        const int spin = count > 1 && r > 0.0;
        const int64_t ndirections = spin ? 6 : 4;
        /* the cone row, then its directions (B: over the velocities of A and B; force side -B) */
        const int64_t cone = m;
        const int64_t fa = a[first], fb = b[first];
        const double mass_a = fa < nbody ? mass[fa] : INFINITY, mass_b = fb < nbody ? mass[fb] : INFINITY;
        const double lighter = mass_a < mass_b ? mass_a : mass_b;
        kind[cone] = 1;
        owner[cone] = first;
        row_a[cone] = fa;
        row_b[cone] = fb;
        row_key[cone] = 4 * key[first] + 1;
        memset(G + 12 * cone, 0, 12 * sizeof(double));
        h0[cone] = 0.0;
        weight[cone] = dt * dt / lighter;
        s_cold[cone] = 1.0;
        for (int64_t u = 0; u < ndirections; u++) {
            const int64_t row = cone + 1 + u;
            double *bd = B + 12 * (ndir + u);
            if (u < 4) {
                for (int j = 0; j < 6; j++) {
                    bd[j] = -(d[u][0] * mean_a[j] + d[u][1] * mean_a[6 + j] + d[u][2] * mean_a[12 + j]);
                    bd[6 + j] = d[u][0] * mean_b[j] + d[u][1] * mean_b[6 + j] + d[u][2] * mean_b[12 + j];
                }
            } else {
                const double sign = u == 4 ? 1.0 : -1.0;
                const double on_a = -r * (fa < nbody), on_b = r * (fb < nbody);
                const double *ra = fa < nbody ? R + 9 * fa : IDENTITY, *rb = fb < nbody ? R + 9 * fb : IDENTITY;
                memset(bd, 0, 12 * sizeof(double));
                for (int j = 0; j < 3; j++) {
                    bd[3 + j] = sign * (on_a * (n[0] * ra[j] + n[1] * ra[3 + j] + n[2] * ra[6 + j]));
                    bd[9 + j] = sign * (on_b * (n[0] * rb[j] + n[1] * rb[3 + j] + n[2] * rb[6 + j]));
                }
            }
            kind[row] = 2;
            owner[row] = first;
            row_a[row] = fa;
            row_b[row] = fb;
            row_key[row] = 4 * key[first] + 2;
            for (int j = 0; j < 12; j++) G[12 * row + j] = -bd[j];
            h0[row] = 0.0;
            weight[row] = dt;
            s_cold[row] = 1.0;
        }
        /* E: the cone row reads its patch's gamma (-mu) */
        for (int64_t t = s; t < e; t++) {
            const int64_t i = rubbing[t];
            members[nmem] = i;
            member_patch[nmem++] = patch;
            e_row[nentry] = cone;
            e_col[nentry] = i;
            e_val[nentry++] = -friction[i];
        }
        ndir += ndirections;
        m += 1 + ndirections;
        patch++;
        s = e;
    }
    /* E: each cone row reads its betas (+1), each beta row its cone's psi (-1) */
    int64_t cone = -1;
    for (int64_t row = k; row < m; row++) {
        if (kind[row] == 1) {
            cone = row;
            continue;
        }
        e_row[nentry] = cone;
        e_col[nentry] = row;
        e_val[nentry] = 1.0;
        e_row[nentry + ndir] = row;
        e_col[nentry + ndir] = cone;
        e_val[nentry + ndir] = -1.0;
        nentry++;
    }
    nentry += ndir;
    counts[0] = m;
    counts[1] = nmem;
    counts[2] = ndir;
    counts[3] = nentry;
    return 0;
}

/* Collision query of the maximal method in C: collider world frames, broad phase and the closed-form
 * narrow phases, the twin of addon/solver/collision (world.py, broadphase.py, primitives.py, boxbox.py's
 * separating_axes, boxface.py's face_contacts, boxsingle.py's along_axis and apart). Contract in symplex_kernels.h (symplex_collide).
 *
 * Every formula follows its numpy twin operation by operation, so the contacts agree to round-off and
 * every discrete choice (argmax ties, tolerance tests) is made the same way. Pairs this file does not
 * finish (anything with a cylinder or a hull, box-capsule, box pairs beyond the face pass) are listed
 * for the numpy path. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "symplex_kernels.h"
#include "rotation.h"
#include "vec3.h"

enum { SPHERE, BOX, CAPSULE, CYLINDER, PLANE, HULL };

#define FACE_ANGLE 0.1
#define COINCIDENT 1e-9
#define DEGENERATE_EDGE 1e-6
#define FACE_PREFERENCE 1e-6
#define EDGE_PREFERENCE 1e-4
#define PARALLEL 1e-6
#define NCAND 24

static const double CORNERS[8][3] = {{-1, -1, -1}, {-1, -1, 1}, {-1, 1, -1}, {-1, 1, 1},
                                     {1, -1, -1},  {1, -1, 1},  {1, 1, -1},  {1, 1, 1}};
static const double QUAD[4][2] = {{1, 1}, {-1, 1}, {-1, -1}, {1, -1}};
static const int EDGE_KEEP[NCAND] = {1, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};

typedef struct {
    const double *rot, *origin, *size;
    double margin;
    int64_t cap, n;  /* contacts written so far */
    int64_t *ab;     /* (cap, 2) */
    double *pa, *pb, *normal, *dist; /* world witness points, normal, distance */
} out_t;

static double cross2(const double *a, const double *b) { return a[0] * b[1] - a[1] * b[0]; }

static double clip(double x, double lo, double hi) { return x < lo ? lo : (x > hi ? hi : x); }

static double sign0(double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }

/* column c of a row-major 3x3 */
static void column(const double *r, int c, double *out) {
    out[0] = r[c];
    out[1] = r[3 + c];
    out[2] = r[6 + c];
}

static void emit(out_t *o, int64_t a, int64_t b, const double *pa, const double *pb, const double *n, double d) {
    if (!(d <= o->margin)) return;
    int64_t k = o->n++;
    o->ab[2 * k] = a;
    o->ab[2 * k + 1] = b;
    memcpy(o->pa + 3 * k, pa, 3 * sizeof(double));
    memcpy(o->pb + 3 * k, pb, 3 * sizeof(double));
    memcpy(o->normal + 3 * k, n, 3 * sizeof(double));
    o->dist[k] = d;
}

/* primitives._unit on one row */
static void unit(const double *v, const double *fallback, double *out) {
    double norm = sqrt(dot3(v, v));
    if (norm > 1e-12) {
        for (int i = 0; i < 3; i++) out[i] = v[i] / norm;
    } else {
        memcpy(out, fallback, 3 * sizeof(double));
    }
}

/* primitives.plane_points for one point of B with rounding radius r */
static void plane_point(out_t *o, int64_t ia, int64_t ib, const double *point, double r) {
    double n[3], pa[3], pb[3], rel[3];
    column(o->rot + 9 * ia, 2, n);
    const double *p0 = o->origin + 3 * ia;
    for (int i = 0; i < 3; i++) rel[i] = point[i] - p0[i];
    double cd = dot3(rel, n);
    for (int i = 0; i < 3; i++) {
        pb[i] = point[i] - r * n[i];
        pa[i] = point[i] - cd * n[i];
    }
    emit(o, ia, ib, pa, pb, n, cd - r);
}

static void capsule_ends(const out_t *o, int64_t i, double *e0, double *e1) {
    const double *r = o->rot + 9 * i, *c = o->origin + 3 * i;
    double hl = o->size[3 * i + 1];
    for (int k = 0; k < 3; k++) {
        double axis = r[3 * k + 2] * hl;
        e0[k] = c[k] - axis;
        e1[k] = c[k] + axis;
    }
}

static void plane_solid(out_t *o, int64_t ia, int64_t ib, int64_t code) {
    const double *r = o->rot + 9 * ib, *c = o->origin + 3 * ib, *h = o->size + 3 * ib;
    if (code == SPHERE) {
        plane_point(o, ia, ib, c, h[0]);
    } else if (code == BOX) {
        for (int m = 0; m < 8; m++) {
            double local[3] = {CORNERS[m][0] * h[0], CORNERS[m][1] * h[1], CORNERS[m][2] * h[2]}, p[3];
            for (int i = 0; i < 3; i++) p[i] = c[i] + (r[3 * i] * local[0] + r[3 * i + 1] * local[1] + r[3 * i + 2] * local[2]);
            plane_point(o, ia, ib, p, 0.0);
        }
    } else { /* capsule */
        double e0[3], e1[3];
        capsule_ends(o, ib, e0, e1);
        plane_point(o, ia, ib, e0, h[0]);
        plane_point(o, ia, ib, e1, h[0]);
    }
}

/* primitives._spheres for one pair of centres */
static void spheres(out_t *o, int64_t ia, int64_t ib, const double *ca, const double *cb, double ra, double rb,
                    const double *fallback) {
    double delta[3], n[3], pa[3], pb[3];
    for (int i = 0; i < 3; i++) delta[i] = cb[i] - ca[i];
    double length = sqrt(dot3(delta, delta));
    unit(delta, fallback, n);
    for (int i = 0; i < 3; i++) {
        pa[i] = ca[i] + ra * n[i];
        pb[i] = cb[i] - rb * n[i];
    }
    emit(o, ia, ib, pa, pb, n, length - ra - rb);
}

static void sphere_box(out_t *o, int64_t ia, int64_t ib) {
    const double *rb = o->rot + 9 * ib, *half = o->size + 3 * ib, *cb = o->origin + 3 * ib, *ca = o->origin + 3 * ia;
    double rel[3], local[3], clamped[3], gap[3], depth[3];
    for (int i = 0; i < 3; i++) rel[i] = ca[i] - cb[i];
    int outside = 0;
    for (int i = 0; i < 3; i++) {
        local[i] = rb[i] * rel[0] + rb[3 + i] * rel[1] + rb[6 + i] * rel[2];
        clamped[i] = clip(local[i], -half[i], half[i]);
        outside |= fabs(local[i]) > half[i];
        gap[i] = local[i] - clamped[i];
        depth[i] = half[i] - fabs(local[i]);
    }
    int face = 0;
    for (int i = 1; i < 3; i++)
        if (depth[i] < depth[face]) face = i;
    double face_normal[3] = {0, 0, 0}, nloc[3], surface[3], centre_dist;
    face_normal[face] = local[face] >= 0 ? 1.0 : -1.0;
    if (outside) {
        unit(gap, face_normal, nloc);
        memcpy(surface, clamped, sizeof surface);
        centre_dist = sqrt(dot3(gap, gap));
    } else {
        memcpy(nloc, face_normal, sizeof nloc);
        memcpy(surface, local, sizeof surface);
        surface[face] = face_normal[face] * half[face];
        centre_dist = -depth[face];
    }
    double r = o->size[3 * ia], n[3], pa[3], pb[3];
    for (int i = 0; i < 3; i++) {
        n[i] = -(rb[3 * i] * nloc[0] + rb[3 * i + 1] * nloc[1] + rb[3 * i + 2] * nloc[2]);
        pb[i] = cb[i] + (rb[3 * i] * surface[0] + rb[3 * i + 1] * surface[1] + rb[3 * i + 2] * surface[2]);
    }
    for (int i = 0; i < 3; i++) pa[i] = ca[i] + r * n[i];
    emit(o, ia, ib, pa, pb, n, centre_dist - r);
}

/* primitives.segment_closest for one pair of segments */
static void segment_closest(const double *p1, const double *q1, const double *p2, const double *q2, double *s_out,
                            double *t_out) {
    double d1[3], d2[3], r[3];
    for (int i = 0; i < 3; i++) {
        d1[i] = q1[i] - p1[i];
        d2[i] = q2[i] - p2[i];
        r[i] = p1[i] - p2[i];
    }
    double a = dot3(d1, d1), e = dot3(d2, d2), f = dot3(d2, r), c = dot3(d1, r), b = dot3(d1, d2);
    const double tiny = 1e-300;
    double denom = a * e - b * b;
    double s = denom > 1e-12 * a * e ? clip((b * f - c * e) / fmax(denom, tiny), 0.0, 1.0) : 0.0;
    double t = e > tiny ? (b * s + f) / fmax(e, tiny) : 0.0;
    int low = t < 0.0, high = t > 1.0;
    t = clip(t, 0.0, 1.0);
    if (low) s = clip(-c / fmax(a, tiny), 0.0, 1.0);
    if (high) s = clip((b - c) / fmax(a, tiny), 0.0, 1.0);
    if (!(a > tiny)) s = 0.0;
    *s_out = s;
    *t_out = t;
}

static void sphere_capsule(out_t *o, int64_t ia, int64_t ib) {
    double e0[3], e1[3], seg[3], rel[3], centre[3], fallback[3];
    capsule_ends(o, ib, e0, e1);
    const double *ca = o->origin + 3 * ia;
    for (int i = 0; i < 3; i++) {
        seg[i] = e1[i] - e0[i];
        rel[i] = ca[i] - e0[i];
    }
    double t = clip(dot3(rel, seg) / fmax(dot3(seg, seg), 1e-300), 0.0, 1.0);
    for (int i = 0; i < 3; i++) centre[i] = e0[i] + t * seg[i];
    column(o->rot + 9 * ib, 0, fallback);
    spheres(o, ia, ib, ca, centre, o->size[3 * ia], o->size[3 * ib], fallback);
}

static void capsule_capsule(out_t *o, int64_t ia, int64_t ib) {
    double a0[3], a1[3], b0[3], b1[3], ca[3], cb[3], s, t;
    capsule_ends(o, ia, a0, a1);
    capsule_ends(o, ib, b0, b1);
    segment_closest(a0, a1, b0, b1, &s, &t);
    for (int i = 0; i < 3; i++) {
        ca[i] = a0[i] + s * (a1[i] - a0[i]);
        cb[i] = b0[i] + t * (b1[i] - b0[i]);
    }
    double ra = o->size[3 * ia], rb = o->size[3 * ib], hla = o->size[3 * ia + 1], hlb = o->size[3 * ib + 1];
    double ua[3], ub[3], xa[3], xb[3], c[3], fallback[3], rel[3];
    column(o->rot + 9 * ia, 2, ua);
    column(o->rot + 9 * ib, 2, ub);
    column(o->rot + 9 * ia, 0, xa);
    column(o->rot + 9 * ib, 0, xb);
    cross3(ua, xb, c);
    unit(c, xa, fallback);
    const double *oa = o->origin + 3 * ia, *ob = o->origin + 3 * ib;
    for (int i = 0; i < 3; i++) rel[i] = ob[i] - oa[i];
    double along_b = dot3(rel, ua);
    double lo = fmax(-hla, along_b - hlb), hi = fmin(hla, along_b + hlb);
    cross3(ua, ub, c);
    int parallel = sqrt(dot3(c, c)) < PARALLEL && hi - lo > 1e-9 * (hla + hlb) && hla > 0;
    if (!parallel) {
        spheres(o, ia, ib, ca, cb, ra, rb, fallback);
        return;
    }
    double offset[3], n[3], ea[3], eb[3];
    for (int i = 0; i < 3; i++) offset[i] = ob[i] - oa[i] - along_b * ua[i];
    unit(offset, fallback, n);
    const double ends[2] = {lo, hi};
    for (int m = 0; m < 2; m++) {
        for (int i = 0; i < 3; i++) {
            ea[i] = oa[i] + ends[m] * ua[i];
            eb[i] = ea[i] + offset[i];
        }
        spheres(o, ia, ib, ea, eb, ra, rb, n);
    }
}

/* boxbox.separating_axes for one pair: separation, unit normal A to B, axis index */
static double separating_axis(const out_t *o, int64_t ia, int64_t ib, double *normal, int *axis_out) {
    const double *ra = o->rot + 9 * ia, *rb = o->rot + 9 * ib, *ha = o->size + 3 * ia, *hb = o->size + 3 * ib;
    double axes[15][3], sep[15], centre[15], delta[3];
    for (int l = 0; l < 3; l++) {
        column(ra, l, axes[l]);
        column(rb, l, axes[3 + l]);
    }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) cross3(axes[i], axes[3 + j], axes[6 + 3 * i + j]);
    for (int i = 0; i < 3; i++) delta[i] = o->origin[3 * ib + i] - o->origin[3 * ia + i];
    for (int l = 0; l < 15; l++) {
        double norm = sqrt(dot3(axes[l], axes[l]));
        int valid = norm > DEGENERATE_EDGE;
        double div = valid ? norm : 1.0;
        for (int i = 0; i < 3; i++) axes[l][i] /= div;
        double ea = 0, eb = 0;
        for (int i = 0; i < 3; i++) {
            ea += fabs(axes[l][0] * ra[i] + axes[l][1] * ra[3 + i] + axes[l][2] * ra[6 + i]) * ha[i];
            eb += fabs(axes[l][0] * rb[i] + axes[l][1] * rb[3 + i] + axes[l][2] * rb[6 + i]) * hb[i];
        }
        centre[l] = dot3(axes[l], delta);
        sep[l] = valid ? fabs(centre[l]) - ea - eb : -INFINITY;
    }
    double scale = fmax(fmax(fmax(ha[0], ha[1]), ha[2]), fmax(fmax(hb[0], hb[1]), hb[2]));
    int best_a = 0, best_b = 3, best_e = 6;
    for (int l = 1; l < 3; l++)
        if (sep[l] > sep[best_a]) best_a = l;
    for (int l = 4; l < 6; l++)
        if (sep[l] > sep[best_b]) best_b = l;
    for (int l = 7; l < 15; l++)
        if (sep[l] > sep[best_e]) best_e = l;
    int choice = sep[best_b] > sep[best_a] + FACE_PREFERENCE * scale ? best_b : best_a;
    if (sep[best_e] > sep[choice] + EDGE_PREFERENCE * scale) choice = best_e;
    double s = centre[choice] >= 0 ? 1.0 : -1.0;
    for (int i = 0; i < 3; i++) normal[i] = axes[choice][i] * s;
    *axis_out = choice;
    return sep[choice];
}

static int argmax(const double *score, int m) {
    int best = 0;
    for (int k = 1; k < m; k++)
        if (score[k] > score[best]) best = k;
    return best;
}

/* boxface.reduce_batched for one pair: chosen[m] of the valid candidates */
static void reduce_points(const double (*flat)[2], const double *dist, const int *valid, double magnitude, int *chosen) {
    double score[NCAND], rel[NCAND][2], length2[NCAND];
    int has = 0;
    for (int m = 0; m < NCAND; m++) {
        chosen[m] = 0;
        has |= valid[m];
        score[m] = valid[m] ? -dist[m] : -INFINITY;
    }
    if (!has) return;
    int first = argmax(score, NCAND);
    chosen[first] = 1;
    for (int m = 0; m < NCAND; m++) {
        rel[m][0] = flat[m][0] - flat[first][0];
        rel[m][1] = flat[m][1] - flat[first][1];
        length2[m] = rel[m][0] * rel[m][0] + rel[m][1] * rel[m][1];
        score[m] = valid[m] ? length2[m] : -INFINITY;
    }
    int second = argmax(score, NCAND);
    double near = COINCIDENT * magnitude;
    if (!(length2[second] > near * near)) return;
    chosen[second] = 1;
    double tol = fmax(1e-12 * length2[second], near * sqrt(length2[second]));
    for (int m = 0; m < NCAND; m++) score[m] = valid[m] ? fabs(cross2(rel[second], rel[m])) : -INFINITY;
    int third = argmax(score, NCAND);
    if (!(score[third] > tol)) return;
    chosen[third] = 1;
    const double *c[3] = {flat[first], flat[second], flat[third]};
    double e01[2] = {c[1][0] - c[0][0], c[1][1] - c[0][1]}, e02[2] = {c[2][0] - c[0][0], c[2][1] - c[0][1]};
    double orient = sign0(cross2(e01, e02));
    for (int m = 0; m < NCAND; m++) {
        double beyond = -INFINITY;
        for (int k = 0; k < 3; k++) {
            double edge[2] = {c[(k + 1) % 3][0] - c[k][0], c[(k + 1) % 3][1] - c[k][1]};
            double to[2] = {flat[m][0] - c[k][0], flat[m][1] - c[k][1]};
            double v = -orient * cross2(edge, to);
            if (v > beyond || k == 0) beyond = v;
        }
        score[m] = valid[m] && !chosen[m] ? beyond : -INFINITY;
    }
    int fourth = argmax(score, NCAND);
    if (score[fourth] > tol) chosen[fourth] = 1;
}

/* boxface.face_contacts for one pair whose SAT axis (0-2 A's faces, 3-5 B's) is a face, then box_box's
 * test that the pass settled it. Returns 1 when settled (its contacts emitted), 0 otherwise (nothing
 * emitted: the pair goes to the numpy path). */
static int box_face(out_t *o, int64_t ia, int64_t ib, const double *normal, int axis, double sep) {
    const double cos_face = cos(FACE_ANGLE), sin_face = sin(FACE_ANGLE);
    int ref_is_a = axis < 3;
    int64_t ref = ref_is_a ? ia : ib, inc = ref_is_a ? ib : ia;
    int ax = ref_is_a ? axis : axis - 3, ax1 = (ax + 1) % 3, ax2 = (ax + 2) % 3;
    const double *r_ref = o->rot + 9 * ref, *r_inc = o->rot + 9 * inc;
    const double *h_ref = o->size + 3 * ref, *h_inc = o->size + 3 * inc;
    const double *o_ref = o->origin + 3 * ref, *o_inc = o->origin + 3 * inc;
    double n_out[3], u1[3], u2[3], centre[3], local[3];
    for (int i = 0; i < 3; i++) n_out[i] = ref_is_a ? normal[i] : -normal[i];
    column(r_ref, ax1, u1);
    column(r_ref, ax2, u2);
    double e[2] = {h_ref[ax1], h_ref[ax2]};
    for (int i = 0; i < 3; i++) centre[i] = o_ref[i] + n_out[i] * h_ref[ax];
    for (int i = 0; i < 3; i++) local[i] = r_inc[i] * n_out[0] + r_inc[3 + i] * n_out[1] + r_inc[6 + i] * n_out[2];
    int kf = 0, low = 0;
    for (int i = 1; i < 3; i++) {
        if (fabs(local[i]) > fabs(local[kf])) kf = i;
        if (fabs(local[i]) < fabs(local[low])) low = i;
    }
    int is_face = fabs(local[kf]) >= cos_face;
    int is_edge = !is_face && fabs(local[low]) <= sin_face;
    if (!is_face && !is_edge) return 0;
    /* an edge whose face behind it rises by at most the margin: that face (manifold.face_behind_edge) */
    int across = 3 - kf - low;
    if (is_edge && 2.0 * h_inc[across] * fabs(local[across]) <= o->margin) is_face = 1, is_edge = 0;
    double sgn = local[kf] >= 0 ? -1.0 : 1.0;
    int k1 = (kf + 1) % 3, k2 = (kf + 2) % 3;
    double face_centre[3], span1[3], span2[3], quad[4][3], face_normal[3];
    for (int i = 0; i < 3; i++) {
        face_centre[i] = o_inc[i] + (sgn * h_inc[kf]) * r_inc[3 * i + kf];
        span1[i] = h_inc[k1] * r_inc[3 * i + k1];
        span2[i] = h_inc[k2] * r_inc[3 * i + k2];
        face_normal[i] = sgn * r_inc[3 * i + kf];
    }
    if (is_face) {
        for (int m = 0; m < 4; m++)
            for (int i = 0; i < 3; i++) quad[m][i] = face_centre[i] + QUAD[m][0] * span1[i] + QUAD[m][1] * span2[i];
    } else {
        double ends[2][3], seg[2][3];
        for (int i = 0; i < 3; i++) ends[0][i] = ends[1][i] = local[i] >= 0 ? -h_inc[i] : h_inc[i];
        ends[0][low] = -h_inc[low];
        ends[1][low] = h_inc[low];
        for (int m = 0; m < 2; m++)
            for (int i = 0; i < 3; i++)
                seg[m][i] = o_inc[i] + (r_inc[3 * i] * ends[m][0] + r_inc[3 * i + 1] * ends[m][1] + r_inc[3 * i + 2] * ends[m][2]);
        static const int order[4] = {0, 1, 1, 0};
        for (int m = 0; m < 4; m++) memcpy(quad[m], seg[order[m]], 3 * sizeof(double));
    }
    double q2[4][2], qz[4], rel[3];
    for (int m = 0; m < 4; m++) {
        for (int i = 0; i < 3; i++) rel[i] = quad[m][i] - centre[i];
        q2[m][0] = dot3(rel, u1);
        q2[m][1] = dot3(rel, u2);
        qz[m] = dot3(rel, n_out);
    }
    double flat[NCAND][2], height[NCAND];
    int valid[NCAND];
    /* (1) incident corners inside the rectangle */
    for (int m = 0; m < 4; m++) {
        flat[m][0] = q2[m][0];
        flat[m][1] = q2[m][1];
        height[m] = qz[m];
        valid[m] = fabs(q2[m][0]) <= e[0] * (1 + 1e-12) && fabs(q2[m][1]) <= e[1] * (1 + 1e-12);
    }
    /* (2) rectangle corners inside the incident quad */
    double edge[4][2], area = 0.0;
    for (int m = 0; m < 4; m++) {
        edge[m][0] = q2[(m + 1) % 4][0] - q2[m][0];
        edge[m][1] = q2[(m + 1) % 4][1] - q2[m][1];
        area += cross2(q2[m], q2[(m + 1) % 4]);
    }
    double orient = sign0(area), emax = fmax(e[0], e[1]);
    double denom = is_face ? dot3(face_normal, n_out) : -1.0;
    for (int r = 0; r < 4; r++) {
        double rect[2] = {QUAD[r][0] * e[0], QUAD[r][1] * e[1]}, rect3[3], to[3];
        int inside = is_face;
        for (int m = 0; m < 4; m++) {
            double d[2] = {rect[0] - q2[m][0], rect[1] - q2[m][1]};
            inside &= cross2(edge[m], d) * orient >= -1e-12 * (emax * emax);
        }
        for (int i = 0; i < 3; i++) {
            rect3[i] = centre[i] + rect[0] * u1[i] + rect[1] * u2[i];
            to[i] = face_centre[i] - rect3[i];
        }
        flat[4 + r][0] = rect[0];
        flat[4 + r][1] = rect[1];
        height[4 + r] = dot3(face_normal, to) / denom;
        valid[4 + r] = inside;
    }
    /* (3) quad sides crossing the rectangle's edges x = +-e1 and y = +-e2 */
    int slot = 8;
    for (int coord = 0; coord < 2; coord++) {
        for (int b = 0; b < 2; b++) {
            double target = (b ? 1.0 : -1.0) * e[coord];
            int other = 1 - coord;
            for (int m = 0; m < 4; m++, slot++) {
                double t = (target - q2[m][coord]) / edge[m][coord];
                double at = q2[m][other] + t * edge[m][other];
                int ok = t >= 0 && t <= 1 && isfinite(t) && fabs(at) <= e[other] * (1 + 1e-12);
                if (!ok) t = 0.0;
                flat[slot][coord] = target;
                flat[slot][other] = ok ? at : 0.0;
                height[slot] = qz[m] + t * (qz[(m + 1) % 4] - qz[m]);
                valid[slot] = ok;
            }
        }
    }
    for (int m = 0; m < NCAND; m++) {
        valid[m] = valid[m] && height[m] <= o->margin;
        if (is_edge) valid[m] = valid[m] && EDGE_KEEP[m];
    }
    double magnitude = fmax(fmax(fabs(centre[0]), fabs(centre[1])), fabs(centre[2])) + hypot(e[0], e[1]);
    int chosen[NCAND];
    reduce_points((const double (*)[2])flat, height, valid, magnitude, chosen);
    double deepest = INFINITY;
    for (int m = 0; m < NCAND; m++)
        if (chosen[m] && valid[m] && height[m] < deepest) deepest = height[m];
    const double *ha = o->size + 3 * ia, *hb = o->size + 3 * ib;
    double scale = fmax(fmax(fmax(ha[0], ha[1]), ha[2]), fmax(fmax(hb[0], hb[1]), hb[2]));
    if (!isfinite(deepest) || !(sep <= 0 || fabs(deepest - sep) <= 1e-9 * scale)) return 0;
    for (int m = 0; m < NCAND; m++) {
        if (!(chosen[m] && valid[m])) continue;
        double on_ref[3], on_inc[3];
        for (int i = 0; i < 3; i++) {
            on_ref[i] = centre[i] + flat[m][0] * u1[i] + flat[m][1] * u2[i];
            on_inc[i] = on_ref[i] + height[m] * n_out[i];
        }
        emit(o, ia, ib, ref_is_a ? on_ref : on_inc, ref_is_a ? on_inc : on_ref, normal, height[m]);
    }
    return 1;
}

/* boxsingle._features for one box: kind (1 vertex, 2 edge, 3 face) along `direction`, and its first two
 * points (the vertex twice, or the edge's ends) */
static int box_feature(const double *r, const double *o, const double *half, const double *direction, double ends[2][3]) {
    double local[3], mags[3], corner[2][3];
    for (int i = 0; i < 3; i++) {
        local[i] = r[i] * direction[0] + r[3 + i] * direction[1] + r[6 + i] * direction[2];
        mags[i] = fabs(local[i]);
    }
    int top = 0, low = 0;
    for (int i = 1; i < 3; i++) {
        if (mags[i] > mags[top]) top = i;
        if (mags[i] < mags[low]) low = i;
    }
    int kind = mags[top] >= cos(FACE_ANGLE) ? 3 : (mags[low] <= sin(FACE_ANGLE) ? 2 : 1);
    for (int i = 0; i < 3; i++) corner[0][i] = corner[1][i] = local[i] >= 0 ? half[i] : -half[i];
    if (kind == 2) {
        corner[0][low] = -half[low];
        corner[1][low] = half[low];
    }
    for (int m = 0; m < 2; m++)
        for (int i = 0; i < 3; i++)
            ends[m][i] = o[i] + (r[3 * i] * corner[m][0] + r[3 * i + 1] * corner[m][1] + r[3 * i + 2] * corner[m][2]);
    return kind;
}

/* manifold._tangent_basis */
static void tangent_basis(const double *n, double *e1, double *e2) {
    double x = n[0], y = n[1], z = n[2];
    if (fabs(x) < 0.9) {
        e1[0] = 0.0, e1[1] = z, e1[2] = -y;
    } else {
        e1[0] = -z, e1[1] = 0.0, e1[2] = x;
    }
    double norm = sqrt(dot3(e1, e1));
    for (int i = 0; i < 3; i++) e1[i] /= norm;
    double a = e1[0], b = e1[1], c = e1[2];
    e2[0] = y * c - z * b;
    e2[1] = z * a - x * c;
    e2[2] = x * b - y * a;
}

/* boxsingle._crossing: two edges crossing across the normal */
static int crossing(const double *n, int kind_a, double ea[2][3], int kind_b, double eb[2][3]) {
    if (kind_a != 2 || kind_b != 2) return 0;
    double e1[3], e2[3], da[3], db[3];
    tangent_basis(n, e1, e2);
    for (int i = 0; i < 3; i++) {
        da[i] = ea[1][i] - ea[0][i];
        db[i] = eb[1][i] - eb[0][i];
    }
    double fa[2] = {dot3(da, e1), dot3(da, e2)}, fb[2] = {dot3(db, e1), dot3(db, e2)};
    double la = sqrt(fa[0] * fa[0] + fa[1] * fa[1]), lb = sqrt(fb[0] * fb[0] + fb[1] * fb[1]);
    return la > 0 && lb > 0 && fabs(fa[0] * fb[1] - fa[1] * fb[0]) > 1.01e-3 * la * lb;
}

static int inside_box(const double *r, const double *o, const double *half, const double *p, double tol) {
    double rel[3] = {p[0] - o[0], p[1] - o[1], p[2] - o[2]};
    for (int i = 0; i < 3; i++)
        if (!(fabs(r[i] * rel[0] + r[3 + i] * rel[1] + r[6 + i] * rel[2]) <= half[i] + tol)) return 0;
    return 1;
}

/* boxsingle.along_axis for one pair: 1 settled (its contact emitted), 0 not; *nearest the pair's point pair
 * does not attain the separation (or lies beyond the margin) */
static int box_along_axis(out_t *o, int64_t ia, int64_t ib, const double *normal, double sep, int *nearest) {
    const double *ra = o->rot + 9 * ia, *rb = o->rot + 9 * ib, *ha = o->size + 3 * ia, *hb = o->size + 3 * ib;
    const double *oa = o->origin + 3 * ia, *ob = o->origin + 3 * ib;
    double ea[2][3], eb[2][3], back[3], pa[3], pb[3], gap[3];
    for (int i = 0; i < 3; i++) back[i] = -normal[i];
    int kind_a = box_feature(ra, oa, ha, normal, ea), kind_b = box_feature(rb, ob, hb, back, eb);
    int vertex_b = kind_b == 1, vertex_a = kind_a == 1 && kind_b != 1;
    int cross = crossing(normal, kind_a, ea, kind_b, eb);
    *nearest = 0;
    if (!(vertex_a || vertex_b || cross)) return 0;
    for (int i = 0; i < 3; i++) {
        pa[i] = vertex_b ? eb[0][i] - sep * normal[i] : ea[0][i];
        pb[i] = vertex_b ? eb[0][i] : ea[0][i] + sep * normal[i];
    }
    if (cross) {
        double s, t;
        segment_closest(ea[0], ea[1], eb[0], eb[1], &s, &t);
        for (int i = 0; i < 3; i++) {
            pa[i] = ea[0][i] + s * (ea[1][i] - ea[0][i]);
            pb[i] = eb[0][i] + t * (eb[1][i] - eb[0][i]);
        }
    }
    for (int i = 0; i < 3; i++) gap[i] = pb[i] - pa[i];
    double dist = dot3(gap, normal);
    double tol = 1e-9 * fmax(fmax(fmax(ha[0], ha[1]), ha[2]), fmax(fmax(hb[0], hb[1]), hb[2]));
    int attains = fabs(sqrt(dot3(gap, gap)) - sep) <= tol && fabs(dist - sep) <= tol && inside_box(ra, oa, ha, pa, tol)
                  && inside_box(rb, ob, hb, pb, tol);
    if (dist > o->margin || (sep > 0 && !attains)) {
        *nearest = 1;
        return 0;
    }
    emit(o, ia, ib, pa, pb, normal, dist);
    return 1;
}

/* boxsingle.nearest_points for one pair of separated boxes: brute force over vertex-box and edge-edge
 * candidates, the first closest in boxsingle's order. Returns 0 when the answer is ill-posed for a copy: another
 * candidate, a different point pair, lies within 1e-9 of the boxes' size of the closest (parallel features, or
 * nearly: round-off decides which one is taken) */
static int box_nearest_points(const out_t *o, int64_t ia, int64_t ib, double *best_a, double *best_b) {
    const double *r[2] = {o->rot + 9 * ia, o->rot + 9 * ib}, *h[2] = {o->size + 3 * ia, o->size + 3 * ib};
    const double *c[2] = {o->origin + 3 * ia, o->origin + 3 * ib};
    double corners[2][8][3], clamped[2][8][3]; /* clamped[s]: the other box's corners clamped onto box s */
    double cand[160][2][3], d[160];
    for (int s = 0; s < 2; s++)
        for (int m = 0; m < 8; m++) {
            double local[3] = {CORNERS[m][0] * h[s][0], CORNERS[m][1] * h[s][1], CORNERS[m][2] * h[s][2]};
            for (int i = 0; i < 3; i++)
                corners[s][m][i] = c[s][i] + (r[s][3 * i] * local[0] + r[s][3 * i + 1] * local[1] + r[s][3 * i + 2] * local[2]);
        }
    for (int s = 0; s < 2; s++)
        for (int m = 0; m < 8; m++) {
            const double *p = corners[1 - s][m];
            double rel[3] = {p[0] - c[s][0], p[1] - c[s][1], p[2] - c[s][2]}, local[3];
            for (int i = 0; i < 3; i++)
                local[i] = clip(r[s][i] * rel[0] + r[s][3 + i] * rel[1] + r[s][6 + i] * rel[2], -h[s][i], h[s][i]);
            for (int i = 0; i < 3; i++)
                clamped[s][m][i] = c[s][i] + (r[s][3 * i] * local[0] + r[s][3 * i + 1] * local[1] + r[s][3 * i + 2] * local[2]);
        }
    /* candidates in boxsingle's order: A's corners with their clamp on B, B's corners' clamp on A with them, edges */
    for (int m = 0; m < 16; m++) {
        memcpy(cand[m][0], m < 8 ? corners[0][m] : clamped[0][m - 8], 3 * sizeof(double));
        memcpy(cand[m][1], m < 8 ? clamped[1][m] : corners[1][m - 8], 3 * sizeof(double));
    }
    int edges[12][2], ne = 0;
    for (int i = 0; i < 8; i++)
        for (int j = i + 1; j < 8; j++) {
            int differ = (CORNERS[i][0] != CORNERS[j][0]) + (CORNERS[i][1] != CORNERS[j][1]) + (CORNERS[i][2] != CORNERS[j][2]);
            if (differ == 1) edges[ne][0] = i, edges[ne][1] = j, ne++;
        }
    for (int i = 0; i < 12; i++)
        for (int j = 0; j < 12; j++) {
            const double *p1 = corners[0][edges[i][0]], *q1 = corners[0][edges[i][1]];
            const double *p2 = corners[1][edges[j][0]], *q2 = corners[1][edges[j][1]];
            double s, t, *pa = cand[16 + 12 * i + j][0], *pb = cand[16 + 12 * i + j][1];
            segment_closest(p1, q1, p2, q2, &s, &t);
            for (int k = 0; k < 3; k++) {
                pa[k] = p1[k] + s * (q1[k] - p1[k]);
                pb[k] = p2[k] + t * (q2[k] - p2[k]);
            }
        }
    int best = 0;
    for (int m = 0; m < 160; m++) {
        double gap[3] = {cand[m][1][0] - cand[m][0][0], cand[m][1][1] - cand[m][0][1], cand[m][1][2] - cand[m][0][2]};
        d[m] = sqrt(dot3(gap, gap));
        if (d[m] * d[m] < d[best] * d[best]) best = m;
    }
    memcpy(best_a, cand[best][0], 3 * sizeof(double));
    memcpy(best_b, cand[best][1], 3 * sizeof(double));
    double scale = fmax(fmax(fmax(h[0][0], h[0][1]), h[0][2]), fmax(fmax(h[1][0], h[1][1]), h[1][2])), tol = 1e-9 * scale;
    for (int m = 0; m < 160; m++) {
        if (m == best || d[m] - d[best] > tol) continue;
        double moved = 0.0;
        for (int k = 0; k < 3; k++)
            moved = fmax(moved, fmax(fabs(cand[m][0][k] - best_a[k]), fabs(cand[m][1][k] - best_b[k])));
        if (moved > tol) return 0;
    }
    return 1;
}

static int box_clip(out_t *o, int64_t ia, int64_t ib, const double *n, double sep);
static int box_witness(out_t *o, int64_t ia, int64_t ib, const double *n, const double *wa, const double *wb);

/* boxsingle.apart for one pair apart by the SAT bound sep > 0 (SAT normal `normal`): 1 settled here (a
 * contact from the nearest points when a vertex is on either side or two edges cross, else the features' manifold
 * along them, or none beyond the margin; or, when the per-pair path takes no GJK, its manifold along the SAT
 * normal), 0 otherwise */
static int box_apart(out_t *o, int64_t ia, int64_t ib, const double *normal, double sep, int nearest) {
    const double *ha = o->size + 3 * ia, *hb = o->size + 3 * ib;
    double pa[3], pb[3], gap[3], n[3], back[3], ea[2][3], eb[2][3];
    int unique = box_nearest_points(o, ia, ib, pa, pb);
    for (int i = 0; i < 3; i++) gap[i] = pb[i] - pa[i];
    double dist = sqrt(dot3(gap, gap));
    double scale = fmax(fmax(fmax(ha[0], ha[1]), ha[2]), fmax(fmax(hb[0], hb[1]), hb[2]));
    if (!(nearest || dist > sep + 1e-8 * scale)) return box_clip(o, ia, ib, normal, sep); /* no GJK per pair */
    /* the contact comes from the nearest points: left to numpy where round-off picks them (not unique) or
     * turns their normal gap / |gap| by more than 1e-12 (|gap| under 1e-3 of the boxes' size) */
    if (!unique || dist < 1e-3 * scale) return 0;
    double div = dist > 0 ? dist : 1.0;
    for (int i = 0; i < 3; i++) {
        n[i] = gap[i] / div;
        back[i] = -n[i];
    }
    int kind_a = box_feature(o->rot + 9 * ia, o->origin + 3 * ia, ha, n, ea);
    int kind_b = box_feature(o->rot + 9 * ib, o->origin + 3 * ib, hb, back, eb);
    int point = (kind_a == 1 || kind_b == 1 || crossing(n, kind_a, ea, kind_b, eb)) && dist > 0;
    if (point) {
        if (dot3(gap, n) <= o->margin) emit(o, ia, ib, pa, pb, n, dist);
    } else if (!(dist > o->margin)) {
        return box_witness(o, ia, ib, n, pa, pb);
    }
    return 1;
}

#define MAX_POLY 16

/* manifold._rise_behind_edge: how far the face behind a box's edge along `direction` rises from the edge */
static double rise_behind_edge(const double *r, const double *half, const double *direction) {
    double mags[3];
    for (int i = 0; i < 3; i++) mags[i] = fabs(r[i] * direction[0] + r[3 + i] * direction[1] + r[6 + i] * direction[2]);
    int axis = 0, low = 0;
    for (int i = 1; i < 3; i++) {
        if (mags[i] > mags[axis]) axis = i;
        if (mags[i] < mags[low]) low = i;
    }
    int across = 3 - axis - low;
    return 2.0 * half[across] * mags[across];
}

/* manifold.feature of a box along the unit `direction`: 1 (vertex), 2 (edge) or 4 (face, CCW seen from
 * outside, with its outward normal) world points */
static int box_manifold_feature(const double *r, const double *o, const double *half, const double *direction,
                                int edge_face, double pts[4][3], double *plane_normal) {
    double local[3], mags[3], corner[4][3];
    for (int i = 0; i < 3; i++) {
        local[i] = r[i] * direction[0] + r[3 + i] * direction[1] + r[6 + i] * direction[2];
        mags[i] = fabs(local[i]);
    }
    int axis = 0, low = 0;
    for (int i = 1; i < 3; i++) {
        if (mags[i] > mags[axis]) axis = i;
        if (mags[i] < mags[low]) low = i;
    }
    int count;
    if (mags[axis] >= cos(FACE_ANGLE) || (edge_face && mags[low] <= sin(FACE_ANGLE))) {
        double sign = local[axis] >= 0 ? 1.0 : -1.0;
        int i = (axis + 1) % 3, j = (axis + 2) % 3;
        for (int m = 0; m < 4; m++) {
            corner[m][axis] = sign * half[axis];
            corner[m][i] = QUAD[m][0] * half[i];
            corner[m][j] = QUAD[m][1] * half[j] * sign;
        }
        for (int k = 0; k < 3; k++) plane_normal[k] = sign * r[3 * k + axis];
        count = 4;
    } else {
        for (int k = 0; k < 3; k++) corner[0][k] = corner[1][k] = local[k] >= 0 ? half[k] : -half[k];
        count = 1;
        if (mags[low] <= sin(FACE_ANGLE)) {
            corner[0][low] = -half[low];
            corner[1][low] = half[low];
            count = 2;
        }
    }
    for (int m = 0; m < count; m++)
        for (int k = 0; k < 3; k++)
            pts[m][k] = o[k] + (corner[m][0] * r[3 * k] + corner[m][1] * r[3 * k + 1] + corner[m][2] * r[3 * k + 2]);
    return count;
}

/* manifold._ccw in place */
static void ccw(double (*poly)[2], int count) {
    double area = 0.0;
    for (int m = 0; m < count; m++) area += poly[m][0] * poly[(m + 1) % count][1] - poly[(m + 1) % count][0] * poly[m][1];
    if (area >= 0) return;
    for (int m = 0; m < count / 2; m++) {
        double t0 = poly[m][0], t1 = poly[m][1];
        poly[m][0] = poly[count - 1 - m][0], poly[m][1] = poly[count - 1 - m][1];
        poly[count - 1 - m][0] = t0, poly[count - 1 - m][1] = t1;
    }
}

/* manifold._clip_polygon: subject (count points; 2 = a segment) clipped by the convex CCW polygon clip.
 * Returns -1 when a side of the subject has one end within `tol` of a clip line and the other within 1e5 tol:
 * then whether and where it is cut, at side / (side - side') along it, moves with round-off by more than
 * 1e-12 m (a side of one face along a side of the other). One end on the line and the other far from it is
 * harmless: the cut falls on that end either way. */
static int clip_polygon(double (*out)[2], int count, const double (*clip)[2], int nclip, double tol) {
    int closed = count >= 3;
    double kept[MAX_POLY][2], side[MAX_POLY];
    for (int k = 0; k < nclip && count > 0; k++) {
        const double *a = clip[k], *b = clip[(k + 1) % nclip];
        double edge[2] = {b[0] - a[0], b[1] - a[1]}, length = sqrt(edge[0] * edge[0] + edge[1] * edge[1]);
        for (int m = 0; m < count; m++) side[m] = edge[0] * (out[m][1] - a[1]) - edge[1] * (out[m][0] - a[0]);
        for (int m = 0; m < (closed ? count : 1); m++) {
            double near = fmin(fabs(side[m]), fabs(side[(m + 1) % count]));
            double far = fmax(fabs(side[m]), fabs(side[(m + 1) % count]));
            if (near <= tol * length && far <= 1e5 * tol * length) return -1;
        }
        if (!closed) {
            if (side[0] < 0 && side[1] < 0) return 0;
            if (side[0] < 0 || side[1] < 0) {
                double t = side[0] / (side[0] - side[1]);
                double cut[2] = {out[0][0] + t * (out[1][0] - out[0][0]), out[0][1] + t * (out[1][1] - out[0][1])};
                int at = side[0] < 0 ? 0 : 1;
                out[at][0] = cut[0], out[at][1] = cut[1];
            }
            continue;
        }
        int n = 0;
        for (int m = 0; m < count; m++) {
            int next = (m + 1) % count;
            double sp = side[m], sq = side[next];
            if (sp >= 0 && n < MAX_POLY) kept[n][0] = out[m][0], kept[n][1] = out[m][1], n++;
            if ((sp >= 0) != (sq >= 0) && n < MAX_POLY) {
                double t = sp / (sp - sq);
                kept[n][0] = out[m][0] + t * (out[next][0] - out[m][0]);
                kept[n][1] = out[m][1] + t * (out[next][1] - out[m][1]);
                n++;
            }
        }
        memcpy(out, kept, (size_t)n * sizeof kept[0]);
        count = n;
    }
    return count;
}

/* manifold._lift: world points of a feature projecting to flat */
static void lift(double (*pts)[3], int count, const double *plane_normal, const double *flat, const double *e1,
                 const double *e2, const double *n, double *out) {
    double base[3];
    for (int k = 0; k < 3; k++) base[k] = flat[0] * e1[k] + flat[1] * e2[k];
    if (count >= 3) {
        double s = (dot3(pts[0], plane_normal) - dot3(base, plane_normal)) / dot3(n, plane_normal);
        for (int k = 0; k < 3; k++) out[k] = base[k] + s * n[k];
        return;
    }
    double p2[2] = {dot3(pts[0], e1), dot3(pts[0], e2)}, q2[2] = {dot3(pts[1], e1), dot3(pts[1], e2)};
    double d[2] = {q2[0] - p2[0], q2[1] - p2[1]};
    double lam = ((flat[0] - p2[0]) * d[0] + (flat[1] - p2[1]) * d[1]) / fmax(d[0] * d[0] + d[1] * d[1], 1e-300);
    for (int k = 0; k < 3; k++) out[k] = pts[0][k] + lam * (pts[1][k] - pts[0][k]);
}

/* primitives.reduce_points on m points: chosen[] (at most 4 set) */
static void reduce_any(double (*points)[3], const double *distance, int m, const double *normal, int *chosen) {
    double flat[MAX_POLY][3], rel[MAX_POLY][3], length2[MAX_POLY], score[MAX_POLY], c[3], big = 0.0;
    for (int k = 0; k < m; k++) {
        double h = dot3(points[k], normal);
        for (int i = 0; i < 3; i++) {
            flat[k][i] = points[k][i] - h * normal[i];
            big = fmax(big, fabs(points[k][i]));
        }
        chosen[k] = 0;
    }
    int first = 0;
    for (int k = 1; k < m; k++)
        if (distance[k] < distance[first]) first = k;
    chosen[first] = 1;
    for (int k = 0; k < m; k++) {
        for (int i = 0; i < 3; i++) rel[k][i] = flat[k][i] - flat[first][i];
        length2[k] = dot3(rel[k], rel[k]);
    }
    int second = argmax(length2, m);
    double near = COINCIDENT * big;
    if (length2[second] <= near * near) return;
    chosen[second] = 1;
    for (int k = 0; k < m; k++) {
        cross3(rel[second], rel[k], c);
        score[k] = fabs(dot3(c, normal));
    }
    int third = argmax(score, m);
    double tol = fmax(1e-12 * length2[second], near * sqrt(length2[second]));
    if (score[third] <= tol) return;
    chosen[third] = 1;
    const double *t[3] = {flat[first], flat[second], flat[third]};
    double e01[3], e02[3];
    for (int i = 0; i < 3; i++) e01[i] = t[1][i] - t[0][i], e02[i] = t[2][i] - t[0][i];
    cross3(e01, e02, c);
    double orient = sign0(dot3(c, normal));
    for (int k = 0; k < m; k++) {
        double beyond = -INFINITY;
        for (int j = 0; j < 3; j++) {
            double edge[3], to[3];
            for (int i = 0; i < 3; i++) edge[i] = t[(j + 1) % 3][i] - t[j][i], to[i] = flat[k][i] - t[j][i];
            cross3(edge, to, c);
            double v = -orient * dot3(c, normal);
            if (j == 0 || v > beyond) beyond = v;
        }
        score[k] = chosen[k] ? -INFINITY : beyond;
    }
    int fourth = argmax(score, m);
    if (score[fourth] > tol) chosen[fourth] = 1;
}

/* manifold.manifold of two boxes' features along the unit normal n (A to B): the number m of clipped points
 * within the margin (pa, pb, dist; chosen[] marks the at most 4 kept), -1 where manifold gives None (a
 * point feature, crossing or disjoint segments, nothing left after clipping), -2 when ill-posed (below) */
static int box_manifold(const out_t *o, int64_t ia, int64_t ib, const double *n, double (*pa)[3], double (*pb)[3],
                        double *dist, int *chosen) {
    const double *ra = o->rot + 9 * ia, *rb = o->rot + 9 * ib, *ha = o->size + 3 * ia, *hb = o->size + 3 * ib;
    const double *oa = o->origin + 3 * ia, *ob = o->origin + 3 * ib;
    double fa[4][3], fb[4][3], ma[3], mb[3], back[3] = {-n[0], -n[1], -n[2]}, e1[3], e2[3];
    int na = box_manifold_feature(ra, oa, ha, n, 0, fa, ma), nb = box_manifold_feature(rb, ob, hb, back, 0, fb, mb);
    /* manifold.face_behind_edge: an edge shown to a face becomes the face behind it when that rises by at
     * most the margin */
    if (na >= 3 && nb == 2 && rise_behind_edge(rb, hb, n) <= o->margin)
        nb = box_manifold_feature(rb, ob, hb, back, 1, fb, mb);
    else if (nb >= 3 && na == 2 && rise_behind_edge(ra, ha, n) <= o->margin)
        na = box_manifold_feature(ra, oa, ha, n, 1, fa, ma);
    if (na == 1 || nb == 1) return -1;
    double scale = fmax(fmax(fmax(ha[0], ha[1]), ha[2]), fmax(fmax(hb[0], hb[1]), hb[2]));
    tangent_basis(n, e1, e2);
    double flat_a[MAX_POLY][2], flat_b[MAX_POLY][2], clipped[MAX_POLY][2];
    for (int m = 0; m < na; m++) flat_a[m][0] = dot3(fa[m], e1), flat_a[m][1] = dot3(fa[m], e2);
    for (int m = 0; m < nb; m++) flat_b[m][0] = dot3(fb[m], e1), flat_b[m][1] = dot3(fb[m], e2);
    int count;
    if (na >= 3) {
        memcpy(clipped, flat_b, sizeof flat_b);
        if (nb >= 3) ccw(clipped, nb);
        ccw(flat_a, na);
        count = clip_polygon(clipped, nb, (const double (*)[2])flat_a, na, 1e-9 * scale);
    } else if (nb >= 3) {
        memcpy(clipped, flat_a, sizeof flat_a);
        ccw(flat_b, nb);
        count = clip_polygon(clipped, na, (const double (*)[2])flat_b, nb, 1e-9 * scale);
    } else {
        double da[2] = {flat_a[1][0] - flat_a[0][0], flat_a[1][1] - flat_a[0][1]};
        double db[2] = {flat_b[1][0] - flat_b[0][0], flat_b[1][1] - flat_b[0][1]};
        double la = sqrt(da[0] * da[0] + da[1] * da[1]), lb = sqrt(db[0] * db[0] + db[1] * db[1]);
        if (la == 0 || lb == 0 || fabs(da[0] * db[1] - da[1] * db[0]) > 1e-3 * la * lb) return -1;
        double u[2] = {da[0] / la, da[1] / la}, ta[2], tb[2];
        for (int m = 0; m < 2; m++) {
            ta[m] = (flat_a[m][0] - flat_a[0][0]) * u[0] + (flat_a[m][1] - flat_a[0][1]) * u[1];
            tb[m] = (flat_b[m][0] - flat_a[0][0]) * u[0] + (flat_b[m][1] - flat_a[0][1]) * u[1];
        }
        double lo = fmax(fmin(ta[0], ta[1]), fmin(tb[0], tb[1])), hi = fmin(fmax(ta[0], ta[1]), fmax(tb[0], tb[1]));
        if (hi < lo) return -1;
        double rel[2] = {flat_b[0][0] - flat_a[0][0], flat_b[0][1] - flat_a[0][1]};
        double along = rel[0] * u[0] + rel[1] * u[1];
        double offset[2] = {rel[0] - along * u[0], rel[1] - along * u[1]};
        const double ends[2] = {lo, hi};
        for (int m = 0; m < 2; m++)
            for (int i = 0; i < 2; i++) clipped[m][i] = flat_a[0][i] + ends[m] * u[i] + 0.5 * offset[i];
        count = 2;
    }
    if (count < 0) return -2;
    if (count == 0) return -1;
    double gap[3];
    int m = 0;
    for (int k = 0; k < count; k++) {
        lift(fa, na, ma, clipped[k], e1, e2, n, pa[m]);
        lift(fb, nb, mb, clipped[k], e1, e2, n, pb[m]);
        for (int i = 0; i < 3; i++) gap[i] = pb[m][i] - pa[m][i];
        dist[m] = dot3(gap, n);
        if (dist[m] <= o->margin) m++;
    }
    /* two points nearer than 1e-6 of the boxes' size but not one point for reduce_points (a sliver of overlap,
     * a vertex just off a side): which of them are kept follows round-off, so the pair is left to numpy */
    double big = 0.0;
    for (int k = 0; k < m; k++)
        for (int i = 0; i < 3; i++) big = fmax(big, fabs(pb[k][i]));
    for (int k = 0; k < m; k++)
        for (int j = k + 1; j < m; j++) {
            for (int i = 0; i < 3; i++) gap[i] = pb[k][i] - pb[j][i];
            double apart = sqrt(dot3(gap, gap));
            if (apart > 1e-3 * COINCIDENT * big && apart < 1e-6 * scale) return -2;
        }
    if (m > 0) reduce_any(pb, dist, m, n, chosen);
    return m;
}

/* convex.along_normal for two boxes with the witness points (pa, pb) of their nearest points along n (what
 * box_box gives the separated pairs that took GJK): the manifold along n, else the witness pair; 0 when ill-posed */
static int box_witness(out_t *o, int64_t ia, int64_t ib, const double *n, const double *wa, const double *wb) {
    double pa[MAX_POLY][3], pb[MAX_POLY][3], dist[MAX_POLY];
    int chosen[MAX_POLY];
    int m = box_manifold(o, ia, ib, n, pa, pb, dist, chosen);
    if (m == -2) return 0;
    if (m >= 0) {
        for (int k = 0; k < m; k++)
            if (chosen[k]) emit(o, ia, ib, pa[k], pb[k], n, dist[k]);
        return 1;
    }
    double gap[3] = {wb[0] - wa[0], wb[1] - wa[1], wb[2] - wa[2]};
    emit(o, ia, ib, wa, wb, n, dot3(gap, n));
    return 1;
}

/* boxbox.pair_contacts without its GJK: the manifold of the features along the SAT normal n of two boxes
 * apart by sep > 0; 1 when it settles the pair (contacts within the margin, the deepest attaining sep) */
static int box_clip(out_t *o, int64_t ia, int64_t ib, const double *n, double sep) {
    const double *ra = o->rot + 9 * ia, *rb = o->rot + 9 * ib, *ha = o->size + 3 * ia, *hb = o->size + 3 * ib;
    const double *oa = o->origin + 3 * ia, *ob = o->origin + 3 * ib;
    double pa[MAX_POLY][3], pb[MAX_POLY][3], dist[MAX_POLY], gap[3];
    int chosen[MAX_POLY], deepest = -1;
    int m = box_manifold(o, ia, ib, n, pa, pb, dist, chosen);
    if (m <= 0) return 0;
    for (int k = 0; k < m; k++)
        if (chosen[k] && (deepest < 0 || dist[k] < dist[deepest])) deepest = k;
    /* boxbox._attains */
    double tol = 1e-9 * fmax(fmax(fmax(ha[0], ha[1]), ha[2]), fmax(fmax(hb[0], hb[1]), hb[2]));
    for (int i = 0; i < 3; i++) gap[i] = pb[deepest][i] - pa[deepest][i];
    if (!(fabs(sqrt(dot3(gap, gap)) - sep) <= tol && fabs(dist[deepest] - sep) <= tol
          && inside_box(ra, oa, ha, pa[deepest], tol) && inside_box(rb, ob, hb, pb[deepest], tol)))
        return 0;
    for (int k = 0; k < m; k++)
        if (chosen[k]) emit(o, ia, ib, pa[k], pb[k], n, dist[k]);
    return 1;
}

/* box_box for one pair: 1 when finished here (no contact beyond the margin, or the face pass settled it) */
static int box_box(out_t *o, int64_t ia, int64_t ib) {
    double normal[3];
    int axis;
    double sep = separating_axis(o, ia, ib, normal, &axis);
    if (!(sep <= o->margin)) return 1;
    if (axis < 6 && box_face(o, ia, ib, normal, axis, sep)) return 1;
    int nearest;
    if (box_along_axis(o, ia, ib, normal, sep, &nearest)) return 1;
    return sep > 0 && box_apart(o, ia, ib, normal, sep, nearest);
}

/* 1 when the pair (in kernel order) was finished here */
static int narrow(out_t *o, int64_t ia, int64_t ib, int64_t code_a, int64_t code_b) {
    if (code_a == PLANE) {
        if (code_b == SPHERE || code_b == BOX || code_b == CAPSULE) {
            plane_solid(o, ia, ib, code_b);
            return 1;
        }
        return 0;
    }
    if (code_a == SPHERE && code_b == SPHERE) {
        static const double up[3] = {0.0, 0.0, 1.0};
        spheres(o, ia, ib, o->origin + 3 * ia, o->origin + 3 * ib, o->size[3 * ia], o->size[3 * ib], up);
        return 1;
    }
    if (code_a == SPHERE && code_b == BOX) {
        sphere_box(o, ia, ib);
        return 1;
    }
    if (code_a == SPHERE && code_b == CAPSULE) {
        sphere_capsule(o, ia, ib);
        return 1;
    }
    if (code_a == CAPSULE && code_b == CAPSULE) {
        capsule_capsule(o, ia, ib);
        return 1;
    }
    if (code_a == BOX && code_b == BOX) return box_box(o, ia, ib);
    return 0;
}

/* stable merge sort of idx[0..n) by key[idx], tmp of n entries */
static void sort_by(int64_t *idx, int64_t *tmp, int64_t n, const double *key, int64_t stride) {
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = key[stride * idx[j]] < key[stride * idx[i]] ? idx[j++] : idx[i++];
            while (i < mid) tmp[k++] = idx[i++];
            while (j < hi) tmp[k++] = idx[j++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof(int64_t));
    }
}

/* merge sort of int64 values */
static void sort_values(int64_t *v, int64_t *tmp, int64_t n) {
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) tmp[k++] = v[j] < v[i] ? v[j++] : v[i++];
            while (i < mid) tmp[k++] = v[i++];
            while (j < hi) tmp[k++] = v[j++];
        }
        memcpy(v, tmp, (size_t)n * sizeof(int64_t));
    }
}

static int joined(int64_t key, int64_t n, const int64_t *keys) {
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (keys[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && keys[lo] == key;
}

int64_t symplex_collide_scratch_size(int64_t ncollider, int64_t nbody) { return 9 * nbody + 8 * ncollider + 2; }

/* world.py _first: the pair in kernel order, encoded as a * n + b */
static int64_t pair_key(int64_t i, int64_t j, const int64_t *shape, int64_t n) {
    int64_t ci = shape[i], cj = shape[j];
    int first = cj == PLANE ? 0 : (ci == PLANE ? 1 : ci <= cj);
    return first ? i * n + j : j * n + i;
}

int64_t symplex_collide(int64_t ncollider, const int64_t *shape, const int64_t *body, const double *rotation_local,
                        const double *position_local, const double *size, const double *friction, int64_t nbody,
                        const double *positions, const double *quaternions, int64_t njoined, const int64_t *joined_keys,
                        const double *margin, int64_t pair_capacity, int64_t *pairs, int64_t *pair_scratch,
                        int64_t *contact_pairs, int64_t *contact_bodies, double *point_a, double *point_b,
                        double *normal, double *distance, double *contact_friction, double *body_point_a,
                        double *body_point_b, double *rot, double *origin, int64_t *leftover, int64_t *counts,
                        double *scratch) {
    const int64_t n = ncollider;
    double *rot_body = scratch, *lower = scratch + 9 * nbody, *upper = lower + 3 * n;
    int64_t *order = (int64_t *)(upper + 3 * n), *tmp = order + n;
    for (int64_t b = 0; b < nbody; b++) symplex_quat_to_matrix(quaternions + 4 * b, rot_body + 9 * b);
    /* shapes.world_frames */
    for (int64_t c = 0; c < n; c++) {
        const double *rl = rotation_local + 9 * c, *pl = position_local + 3 * c;
        double *r = rot + 9 * c, *p = origin + 3 * c;
        if (body[c] < 0) {
            memcpy(r, rl, 9 * sizeof(double));
            memcpy(p, pl, 3 * sizeof(double));
            continue;
        }
        const double *rb = rot_body + 9 * body[c], *x = positions + 3 * body[c];
        for (int i = 0; i < 3; i++) {
            for (int j = 0; j < 3; j++) r[3 * i + j] = rb[3 * i] * rl[j] + rb[3 * i + 1] * rl[3 + j] + rb[3 * i + 2] * rl[6 + j];
            p[i] = x[i] + (rb[3 * i] * pl[0] + rb[3 * i + 1] * pl[1] + rb[3 * i + 2] * pl[2]);
        }
    }
    /* shapes.aabbs grown by each collider's margin, solids only */
    int64_t nsolid = 0;
    for (int64_t c = 0; c < n; c++) {
        if (shape[c] == PLANE) continue;
        const double *r = rot + 9 * c, *h = size + 3 * c, *p = origin + 3 * c;
        double half[3];
        for (int i = 0; i < 3; i++) {
            double axis = fabs(r[3 * i + 2]);
            switch (shape[c]) {
            case SPHERE: half[i] = h[0]; break;
            case BOX: half[i] = fabs(r[3 * i]) * h[0] + fabs(r[3 * i + 1]) * h[1] + fabs(r[3 * i + 2]) * h[2]; break;
            case CAPSULE: half[i] = axis * h[1] + h[0]; break;
            default: half[i] = axis * h[1] + h[0] * sqrt(clip(1.0 - r[3 * i + 2] * r[3 * i + 2], 0.0, 1.0)); break;
            }
            lower[3 * c + i] = p[i] - half[i];
            upper[3 * c + i] = p[i] + half[i];
        }
        if (shape[c] == HULL) return -1; /* hull bounds need the vertices: the caller keeps such worlds in numpy */
        for (int i = 0; i < 3; i++) {
            lower[3 * c + i] -= margin[c];
            upper[3 * c + i] += margin[c];
        }
        order[nsolid++] = c;
    }
    /* sort-and-sweep along the axis of largest spread of the centres */
    int axis = 0;
    double best = -1.0;
    for (int i = 0; i < 3; i++) {
        double mean = 0.0, var = 0.0;
        for (int64_t k = 0; k < nsolid; k++) mean += 0.5 * (lower[3 * order[k] + i] + upper[3 * order[k] + i]);
        mean /= nsolid > 0 ? (double)nsolid : 1.0;
        for (int64_t k = 0; k < nsolid; k++) {
            double d = 0.5 * (lower[3 * order[k] + i] + upper[3 * order[k] + i]) - mean;
            var += d * d;
        }
        if (var > best) best = var, axis = i;
    }
    sort_by(order, tmp, nsolid, lower + axis, 3);
    int64_t npair = 0;
    for (int64_t k = 0; k < nsolid; k++) {
        int64_t i = order[k];
        for (int64_t m = k + 1; m < nsolid && lower[3 * order[m] + axis] <= upper[3 * i + axis]; m++) {
            int64_t j = order[m];
            int overlap = 1;
            for (int d = 0; d < 3; d++) overlap &= lower[3 * i + d] <= upper[3 * j + d] && lower[3 * j + d] <= upper[3 * i + d];
            if (!overlap) continue;
            if (npair < pair_capacity) pairs[npair] = i < j ? pair_key(i, j, shape, n) : pair_key(j, i, shape, n);
            npair++;
        }
    }
    /* broadphase.plane_pairs */
    for (int64_t pl = 0; pl < n; pl++) {
        if (shape[pl] != PLANE) continue;
        double nrm[3], an[3];
        column(rot + 9 * pl, 2, nrm);
        for (int i = 0; i < 3; i++) an[i] = fabs(nrm[i]);
        double offset = dot3(nrm, origin + 3 * pl);
        for (int64_t k = 0; k < nsolid; k++) {
            int64_t s = order[k];
            double centre[3], half[3];
            for (int i = 0; i < 3; i++) {
                centre[i] = 0.5 * (lower[3 * s + i] + upper[3 * s + i]);
                half[i] = 0.5 * (upper[3 * s + i] - lower[3 * s + i]);
            }
            if (dot3(centre, nrm) - dot3(half, an) - offset <= fmax(margin[pl] - margin[s], 0.0)) {
                if (npair < pair_capacity) pairs[npair] = pl * n + s;
                npair++;
            }
        }
    }
    counts[0] = npair;
    if (npair > pair_capacity) return 1;
    /* drop pairs that never collide, then order by (a, b) */
    int64_t kept = 0;
    for (int64_t k = 0; k < npair; k++) {
        int64_t ba = body[pairs[k] / n], bb = body[pairs[k] % n];
        if (ba == bb) continue;
        int64_t lo = (ba < bb ? ba : bb) + 1, hi = (ba < bb ? bb : ba) + 1;
        if (joined(lo * (nbody + 1) + hi, njoined, joined_keys)) continue;
        pairs[kept++] = pairs[k];
    }
    sort_values(pairs, pair_scratch, kept);
    out_t o = {rot, origin, size, 0.0, 8 * pair_capacity, 0, contact_pairs, point_a, point_b, normal, distance};
    int64_t nleft = 0;
    for (int64_t k = 0; k < kept; k++) {
        int64_t a = pairs[k] / n, b = pairs[k] % n;
        o.margin = fmax(margin[a], margin[b]); /* world._narrow: the pair's margin, the larger of its colliders' */
        if (!narrow(&o, a, b, shape[a], shape[b])) {
            leftover[2 * nleft] = a;
            leftover[2 * nleft + 1] = b;
            nleft++;
        }
    }
    /* world._to_bodies: the colliders' bodies, witness points in body frames, combined friction */
    for (int64_t k = 0; k < o.n; k++) {
        int64_t ab[2] = {contact_pairs[2 * k], contact_pairs[2 * k + 1]};
        const double *world[2] = {point_a + 3 * k, point_b + 3 * k};
        double *local[2] = {body_point_a + 3 * k, body_point_b + 3 * k};
        for (int side = 0; side < 2; side++) {
            int64_t b = body[ab[side]];
            contact_bodies[2 * k + side] = b;
            if (b < 0) {
                memcpy(local[side], world[side], 3 * sizeof(double));
                continue;
            }
            const double *r = rot_body + 9 * b, *x = positions + 3 * b;
            double rel[3] = {world[side][0] - x[0], world[side][1] - x[1], world[side][2] - x[2]};
            for (int i = 0; i < 3; i++) local[side][i] = r[i] * rel[0] + r[3 + i] * rel[1] + r[6 + i] * rel[2];
        }
        contact_friction[k] = sqrt(friction[ab[0]] * friction[ab[1]]);
    }
    counts[1] = o.n;
    counts[2] = nleft;
    return 0;
}

/* Symplex C kernels: plain C ABI (double*, int64 sizes), no Python headers.
 * Loaded with ctypes by addon/solver/native/__init__.py; each kernel has a numpy twin that is its
 * reference (tree_forward: native.tree_forward_numpy; the midpoint step: tree/midpoint.py; the Galerkin step:
 * tree/galerkin.py; the maximal step: maximal/variational.py).
 * Every array is C-contiguous, row-major; frame index -1 means the world. Kernels allocate nothing. */
#ifndef SYMPLEX_KERNELS_H
#define SYMPLEX_KERNELS_H
#include <stdint.h>

#define SYMPLEX_ABI_VERSION 31

int64_t symplex_abi_version(void);

/* Compose a frame tree: world[f] = world[parent[f]] @ local[f] for f = 0..n-1 in order.
 * outputs: world (n+1, 4, 4), row-major; world[n] is set to the identity (parent -1 = world).
 * inputs:  parent (n,), parent[f] < f or -1; local (n, 4, 4) rigid transforms. */
void symplex_tree_forward(int64_t n, const int64_t *parent, const double *local, double *world);

/* A compiled tree model (tree/compile.py TreeModel), as pointers to the caller's arrays. Every field
 * is 8 bytes, so the layout is the field order; symplex_tree_struct_size() lets the loader check it.
 * The caller may rewrite the arrays between calls (the ball charts live in dof_placement). */
typedef struct symplex_tree {
    int64_t nq, nbody, nforce, nrow, nball;
    int64_t linkwise;                 /* nonzero: the step is the link-wise discrete Lagrangian (tree/linkwise.py) */
    const int64_t *dof_parent;        /* (nq,) parent frame, dof_parent[f] < f, -1 = world */
    const int64_t *dof_kind;          /* (nq,) 0..2 rotation about local x, y, z; 3..5 translation along */
    const int64_t *dof_prescribed;    /* (nq,) nonzero: follows its curve, not an unknown of the step */
    const double *dof_placement;      /* (nq, 4, 4) parent_M_frame at q = 0, ball charts folded in */
    const double *dof_stiffness;      /* (nq,) */
    const double *dof_rest;           /* (nq,) */
    const double *dof_damping;        /* (nq,) */
    const double *dof_motor_gain;     /* (nq,) */
    const double *dof_motor_velocity; /* (nq,) */
    const int64_t *body_frame;        /* (nbody,) carrying frame */
    const double *body_offset;        /* (nbody, 4, 4) frame_M_body */
    const double *body_mass;          /* (nbody,) */
    const double *body_com;           /* (nbody, 3) body axes */
    const double *body_inertia;       /* (nbody, 3, 3) about the com, body axes */
    const double *gravity;            /* (3,) */
    const int64_t *force_frame;       /* (nforce,) */
    const double *force_point;        /* (nforce, 3) in frame axes */
    const int64_t *row_frame_p;       /* (nrow,) loop rows, see tree/constraints.py */
    const int64_t *row_frame_c;       /* (nrow,) */
    const int64_t *row_kind;          /* (nrow,) 0 translation n.(p_P - p_C), 1 rotation u.w */
    const double *row_a;              /* (nrow, 3) point on P, or u, in P's frame axes */
    const double *row_b;              /* (nrow, 3) point on C, or w, in C's frame axes */
    const double *row_n;              /* (nrow, 3) n in P's frame axes (translation rows) */
    const int64_t *ball_dofs;         /* (nball, 3) the consecutive rx ry rz coordinates of each ball chart (in a
                                       * step: its rotation vector xi, tree/step_charts.py) */
    const double *ball_stiffness;     /* (nball,) k of each chart's spring k/2 |theta|^2 (tree/ball_springs.py) */
    const double *ball_rest;          /* (nball, 3, 3) placement rotation at q = 0 (chart excluded) times R_rest, so
                                       * that R_rest^T R_rel = ball_rest^T (dof_placement rotation) exp(s xi) */
} symplex_tree;

int64_t symplex_tree_struct_size(void);

/* Status codes of symplex_midpoint_step. */
#define SYMPLEX_CONVERGED 0
#define SYMPLEX_NOT_CONVERGED 1
#define SYMPLEX_SINGULAR 2
#define SYMPLEX_NOT_FINITE 3

/* Number of doubles of scratch that symplex_midpoint_step needs for these sizes. */
int64_t symplex_midpoint_scratch_size(int64_t nq, int64_t nbody, int64_t nforce, int64_t nrow);

/* One step (q1, p1) -> (q2, p2) of the midpoint variational integrator (tree/midpoint.py `step`, before
 * its chart fold): Newton, with the exact direction in O(nq) per iteration (O(nq nsel) with loop rows;
 * tree/articulated.py), on f1 = p1 + dt/2 (g + Q + f_c) - p - Dh(q1)^T lam = 0 (dynamic coordinates),
 * f2 = h(q2)[rows] = 0, all at qm = (q1 + q2)/2, v = (q2 - q1)/dt, f_c = -damping v + gain (motor_velocity - v)
 * + torque; stops when max|f1| <= tol * max(1, max|p1|, max|p|, dt max|g + Q|), max|f2| <= tol / 10 and each
 * chart's rows are under tol times their own terms. A ball chart's coordinates are its step's rotation vector
 * xi (q1 = 0 there, tree/step_charts.py): the pose is taken at the chart C1 exp(xi / 2) mid-step and C1 exp(xi)
 * at the end, with the chart's coordinates at 0, v = xi / dt is its body angular velocity, and its rows are
 * the Lie group rows of tree/lie_rows.py. With tree->linkwise set the rows are instead the link-wise discrete
 * Lagrangian's (tree/linkwise.py): f1 = p1 + S(q1) . (links' start wrenches below) + dt/2 (Q(q1) + f_c) - Dh(q1)^T lam,
 * ending also when a Newton correction is at round-off (1e-13 rad); p2 = S(q2) . (end wrenches below)
 * + dt/2 (Q(q2) + f_c); energy = the links' kinetic term + 2 V(qm) - (V(q1) + V(q2)) / 2.
 * outputs: q2 (nq,) in: the guess, prescribed entries set to their values at t2; out: the last iterate.
 *          lam (nsel,) in: the guess; out: the last iterate.
 *          p2 (nq,) = dt/2 (g + Q + f_c) + p at the last midpoint; on a chart J_L(xi)^-1 (dt/2 J_L(xi/2) gamma
 *          + eta) + dt/2 f_c, the body covector at C1 exp(xi) (tree/lie_rows.py).
 *          h2 (nrow,) every loop row at q2.
 *          stats (4,) = midpoint kinetic + potential energy, max|f1|, max|h2|, multiply-adds spent in the
 *          Newton directions (O(nq) each: tree elimination + one tree solve per right-hand side + Schur rows,
 *          counted like tree/articulated.py OPS).
 *          iterations (1,) Newton updates made.
 * inputs:  rows (nsel,) the independent loop rows; torque (nq,) keyed torques at the midpoint time;
 *          force_vector (nforce, 3) user forces at the midpoint time; q1, p1 (nq,); dt, tol, max_iterations.
 * scratch: symplex_midpoint_scratch_size(...) doubles.
 * Returns SYMPLEX_CONVERGED, _NOT_CONVERGED (max_iterations reached), _SINGULAR (zero pivot) or
 * _NOT_FINITE (a residual is inf or nan). */
int64_t symplex_midpoint_step(const symplex_tree *tree, int64_t nsel, const int64_t *rows, const double *torque,
                              const double *force_vector, const double *q1, const double *p1, double dt,
                              double tol, int64_t max_iterations, double *q2, double *lam, double *p2, double *h2,
                              double *stats, int64_t *iterations, double *scratch);

/* Number of doubles of scratch that symplex_galerkin_step needs: s, r nodes, nsel selected loop rows. */
int64_t symplex_galerkin_scratch_size(const symplex_tree *tree, int64_t s, int64_t r, int64_t nsel);

/* One step of the Galerkin variational integrator of order 2s (tree/galerkin.py `_newton`, s = 2..4) on a tree
 * without prescribed coordinates, ball and free joints included (each in the step's first chart C1, read from
 * its placement; the caller folds the charts between steps as tree/galerkin.py does): Newton on the DEL rows
 * r^0 = p1 + Z^0, r^a = Z^a (a = 1..s-1), minus Dh(x^a)^T lam^a with loop rows held at x^1..x^s, with the exact O(s^3 nq) direction of tree/galerkin_newton.py; stops when
 * worst = max(max|r| / scale, max|h| / 0.1) <= tol, or <= stall tol without halving after an exact step (the
 * rows' round-off floor). Without loop rows, an update after one that cut worst by the factor reuse or more
 * solves with the last factor (simplified Newton; tree/galerkin.py `newton`), charts included. With carry > 0
 * on a tree without charts or loop rows, the first `carry` updates solve with the factor that the last factoring
 * call on this scratch left there (the caller vouches that it was made for this tree, rule and dt).
 * On the charts X holds the xi^a (q1 0 there) and p2 the body covector at C2 = C1 exp(xi^s).
 * outputs: X (s, nq) in: the guess x^1..x^s; out: the last iterate. lam (s nsel) in: guess; out: last iterate.
 *          p2 (nq,) = Z^s at the last iterate. stats (4,) = worst, multiply-adds of the Newton directions,
 *          on a converged step of a model without loop rows (nrow = 0) the energy of tree/galerkin.py `energy`
 *          at (x^s, p2) (else nan), and the number of factorizations.
 *          iterations (1,) Newton updates made.
 * inputs:  s; r nodes with weights weight (r,), P, D (r, s + 1) (tree/galerkin_rule.py Rule); rows (nsel,);
 *          torque (r, nq) keyed torques and force_vector (r, nforce, 3) user forces at the node times;
 *          q1, p1 (nq,); dt, tol, stall, reuse, max_iterations, carry.
 * scratch: symplex_galerkin_scratch_size(...) doubles.
 * Returns SYMPLEX_CONVERGED, _NOT_CONVERGED, _SINGULAR or _NOT_FINITE (symplex_midpoint_step's codes). */
int64_t symplex_galerkin_step(const symplex_tree *tree, int64_t s, int64_t r, const double *weight, const double *P,
                              const double *D, int64_t nsel, const int64_t *rows, const double *torque,
                              const double *force_vector, const double *q1, const double *p1, double dt, double tol,
                              double stall, double reuse, int64_t max_iterations, int64_t carry, double *X,
                              double *lam, double *p2, double *stats, int64_t *iterations, double *scratch);

/* A compiled maximal-coordinate model (maximal/state.py MaximalModel,
 * packed by maximal/native_step.py), as pointers to the caller's arrays. Every field is 8 bytes. Body
 * index nbody is the world. Rows are in the model's order (model.order): n_primary rows of the tree
 * joints, then the auxiliary (loop-closing) rows, bordered onto the tree factor;
 * coordinates are the joint coordinates (ncoord_joint) followed by the spring lengths (nspring). The
 * Newton matrix's primary part is factored by symplex_fillin_factor on the plan of fillin.py. */
typedef struct symplex_maximal {
    int64_t nbody, njoint, nrow, n_primary, ncoord_joint, nspring, nforce, n_nodes, flat_size, n_gather, fill_scratch;
    const double *mass;             /* (nbody,) */
    const double *com;              /* (nbody, 3) body frame origin to centre of mass, body axes */
    const double *inertia;          /* (nbody, 3, 3) floored, body axes */
    const double *gravity;          /* (3,) */
    const int64_t *parent;          /* (njoint,) body index, nbody = world */
    const int64_t *child;           /* (njoint,) */
    const double *pa, *pb;          /* (njoint, 3) anchors from the centres of mass, body axes */
    const double *ca, *cb;          /* (njoint, 4) joint-frame quaternions in body axes */
    const double *frame_a, *frame_b;/* (njoint, 3, 3) their rotation matrices */
    const int64_t *row_joint;       /* (nrow,) */
    const int64_t *row_kind;        /* (nrow,) joints.py kinds T0..UX */
    const int64_t *coord_joint;     /* (ncoord_joint,) */
    const int64_t *coord_kind;      /* (ncoord_joint,) */
    const int64_t *spring_a, *spring_b; /* (nspring,) */
    const double *spring_pa, *spring_pb;/* (nspring, 3) */
    const int64_t *coord_a, *coord_b;   /* (ncoord,) bodies of every coordinate */
    const double *stiffness, *rest, *damping, *gain, *target_velocity; /* (ncoord,) */
    const int64_t *force_body;      /* (nforce,) */
    const double *force_point;      /* (nforce, 3) from the centre of mass, body axes */
    const double *force_vector;     /* (nforce, 3) world, before the keyed scale */
    const int64_t *order, *dim, *diag_offset, *upper_start, *upper_node, *lower_offset, *upper_offset,
        *pair_start, *pair_offset, *row_offset; /* fillin.Plan of the primary saddle matrix */
    const int64_t *gather_src;      /* (n_gather,) into [Ga; Gb; Ca; Cb] (4 n_primary, 6) row-major */
    const int64_t *gather_dst;      /* (n_gather,) into the flat factor */
} symplex_maximal;

int64_t symplex_maximal_struct_size(void);

/* Status codes of symplex_maximal_step beyond those of symplex_midpoint_step. */
#define SYMPLEX_SPIN_TOO_FAST 4 /* |omega| dt / 2 reached 1 in an iterate (bodies.SpinTooFastError) */
#define SYMPLEX_NEEDS_GMRES 5   /* defect correction stalled: the numpy solver's GMRES would take over */

/* Doubles of scratch symplex_maximal_step needs for `model` with up to `npair` inequality pairs, with room for
 * the dense border of the loop rows and pairs when `dense` is nonzero (none: the step factors by the block LU). */
int64_t symplex_maximal_scratch_size(const symplex_maximal *model, int64_t npair, int64_t dense);

/* The interior point's rows of one step (maximal/interior_point.py Inequalities, packed by
 * interior_point.packed), set up at the knot; row p is the pair (h_p >= 0, lam_p >= 0), s_p its slack.
 * Contact rows (kind 0 gap, 1 cone, 2 friction direction): h = h0 - G . V_ab - sum_q E_pq lam_q, velocity
 * side C = G; limits (kind 3) on coordinate `coord`: h = side (cval(z_2) - bound) / dt, C = -side d cval / d V.
 * E: -s/lam on the diagonal plus the cone couplings (e_row, e_col, e_val). lam, s and control are read at
 * the start and written as the iterate moves (meaningful only when the step converges). */
typedef struct symplex_maximal_pairs {
    int64_t npair, nentry;
    const int64_t *kind, *a, *b, *coord; /* (npair,) bodies (nbody = world); coord: -1 for contacts */
    const double *G;                /* (npair, 12) force side at z_1 */
    const double *h0, *side, *bound;/* (npair,) */
    const double *weight;           /* (npair,) primal residual |h - s| times this is compared with tol */
    const double *s_cold;           /* (npair,) the cold start's slacks (its lam: cold_mu / s_cold) */
    const int64_t *e_row, *e_col;   /* (nentry,) off-diagonal entries of E */
    const double *e_val;
    double *lam, *s;                /* (npair,) in/out */
    double *control;                /* (6,) in/out: mu, cold, monotone, mu_fixed, restarts, cold_mu */
} symplex_maximal_pairs;

/* The block LU of the whole bordered Newton matrix Pb = [[D, G^T], [C, E]] (maximal/contact_ldu.py Pattern,
 * packed by maximal/native_step.py) for one contact set, instead of the dense border. Pb's structural
 * entries are enumerated in the kernel's order: D (nbody, 6, 6); for each system row (the active joint rows,
 * then the pairs) and each of its bodies a, b (not the world) the force side G (6 entries, column) then the
 * velocity side C (6 entries, row); the pairs' diagonal -s/lam; E's off-diagonal entries. entry_row,
 * entry_col and target give each entry's unknowns and its place in the flat factor (block_lu.h layout);
 * Pb is equilibrated (rows, then columns) as linear.LinearSolver._factor_sparse does; every row group waits for
 * its bodies in the order (contact_ldu.py), so no pivot depends on the iterate's -s/lam being large. */
typedef struct symplex_maximal_sparse {
    int64_t n_nodes, flat_size, nentry;
    const int64_t *order, *dim, *diag_offset, *row_offset, *upper_start, *upper_node, *lower_offset, *upper_offset,
        *pair_start, *pair_offset; /* fillin.Plan of the pattern */
    const int64_t *perm;            /* (N,) unknowns stacked node by node: position -> unknown */
    const int64_t *entry_row, *entry_col, *target; /* (nentry,) */
    double *flat, *values, *srow, *scol, *x; /* scratch: (flat_size,), (nentry,), (N,) x 3 */
    int64_t *piv;                   /* (N,) scratch */
} symplex_maximal_sparse;

/* The knot state of one maximal step (maximal/state.py MaximalState), read only. */
typedef struct symplex_maximal_state {
    const double *x, *q, *v, *w;    /* (nbody, 3|4|3|3) */
    const double *lam;              /* (nrow,) model order */
    const int64_t *active;          /* (nrow,) nonzero: the row is in the system (redundant loop rows are not) */
    const double *row_winding;      /* (nrow,) windings of the rows, model order */
    const double *coord_winding;    /* (ncoord_joint,) */
    const double *coord_rate;       /* (ncoord,) */
    const double *coord_jac_prev;   /* (ncoord, 12) or NULL (the knot's own Jacobian) */
    const double *acceleration;     /* (nbody, 6) Newton starts from (v, w) + this; NULL: zero */
    const double *targets;          /* (nrow,) row targets at t + dt */
    const double *torque;           /* (ncoord_joint,) keyed torques averaged over t -+ dt/2 */
    const double *force_scale;      /* (nforce,) keyed force scales averaged over t -+ dt/2 */
    int64_t startup;                /* nonzero: v, w hold the continuous velocity zbar */
    const struct symplex_maximal_pairs *pairs; /* the step's inequality pairs, or NULL (no colliders, no limits) */
    const struct symplex_maximal_sparse *sparse; /* the block LU's pattern, or NULL: border densely */
} symplex_maximal_state;

/* One step of maximal/variational.py `step` (its _newton): Newton on the discrete Euler-Lagrange
 * equations with the exact matrix (its second iteration reusing the first factorisation where _newton does),
 * the spin cap |omega| dt <= 1 and the convergence test max|g| <= tol,
 * estimated |zdot - zdot*| dt <= tol (variational._remaining_error). Without pairs (state->pairs NULL):
 * halving line search on |r_body| + |r_rows|. With them: interior_point.py's Mehrotra predictor-corrector
 * (two solves per factorisation), fraction to the boundary, wide neighbourhood, restarts after stalls and
 * its convergence test; a step that does not converge is SYMPLEX_NOT_CONVERGED (the numpy step then
 * also tries it without friction).
 * outputs: V (nbody, 6) interval velocities (v, omega); acceleration (nbody, 6) = V - (v, w) of the state;
 *          poses (nbody, 7) body-frame poses (origin, q) at z_2 (start.body_frame_poses); lam (nrow,); x2 (nbody, 3), q2 (nbody, 4);
 *          row_val2 (nrow,) rows at z_2 (unwrapped); row_winding2 (nrow,) windings of the ANGLE rows at
 *          z_2 (others 0); coord_winding2 (ncoord_joint,); cval2, rate (ncoord,); cjac2 (ncoord, 12);
 *          sweeps (max_iterations,) solver sweeps per Newton iteration;
 *          stats (4,) = iterations, max |row_val2 - targets|, energy T + (V1 + V2)/2, Newton updates made.
 * Returns SYMPLEX_CONVERGED or a failure status (then nothing is meaningful: the caller redoes the
 * step with the numpy reference, which raises its error). */
typedef struct symplex_maximal_outputs { /* the outputs above, then the scratch (symplex_maximal_scratch_size) */
    double *V, *acceleration, *poses, *lam, *x2, *q2, *row_val2, *row_winding2, *coord_winding2, *cval2, *rate, *cjac2,
        *sweeps, *stats, *scratch;
} symplex_maximal_outputs;

int64_t symplex_maximal_step(const symplex_maximal *model, const symplex_maximal_state *state, double dt, double tol,
                             int64_t max_iterations, int64_t halvings, const symplex_maximal_outputs *out);

/* Collision query (collide.c; numpy twin: addon/solver/collision, CollisionWorld.detect). Shape codes as
 * collision/shapes.py (0 sphere, 1 box, 2 capsule, 3 cylinder, 4 plane, 5 hull); no hulls (returns -1).
 * inputs:  shape, body (n,) (-1 world), rotation_local (n, 3, 3), position_local (n, 3), size (n, 3),
 *          friction (n,) of the colliders; positions (nbody, 3), quaternions (nbody, 4) (w x y z);
 *          joined_keys (njoined,) sorted keys (lo + 1) (nbody + 1) + (hi + 1), lo <= hi the body indices (world
 *          -1), of the body pairs that never collide; margin (n,) per collider: a pair's contacts are those
 *          with distance <= the larger of its two colliders' margins.
 * outputs: rot (n, 3, 3), origin (n, 3) collider world frames; pairs, pair_scratch (pair_capacity,) work;
 *          contact_pairs (8 pair_capacity, 2) colliders (a, b), contact_bodies (.., 2) their bodies, point_a,
 *          point_b (8 pair_capacity, 3) world witness points, normal (.., 3) A to B, distance (..,),
 *          contact_friction (..,) sqrt(mu_a mu_b), body_point_a, body_point_b (.., 3) the witness points in the
 *          frames of the bodies (world axes for the world), sorted by (a, b); leftover (pair_capacity, 2) the pairs
 *          in kernel order this kernel does not finish (to the numpy path); counts (3,) = candidate pairs,
 *          contacts, leftovers. scratch: symplex_collide_scratch_size(n, nbody) doubles.
 * Returns 0, or 1 when the candidate pairs (counts[0]) exceed pair_capacity (then nothing else is set). */
int64_t symplex_collide_scratch_size(int64_t ncollider, int64_t nbody);
int64_t symplex_collide(int64_t ncollider, const int64_t *shape, const int64_t *body, const double *rotation_local,
                        const double *position_local, const double *size, const double *friction, int64_t nbody,
                        const double *positions, const double *quaternions, int64_t njoined, const int64_t *joined_keys,
                        const double *margin, int64_t pair_capacity, int64_t *pairs, int64_t *pair_scratch,
                        int64_t *contact_pairs, int64_t *contact_bodies, double *point_a, double *point_b,
                        double *normal, double *distance, double *contact_friction, double *body_point_a,
                        double *body_point_b, double *rot, double *origin, int64_t *leftover, int64_t *counts,
                        double *scratch);

/* The car's step equations as shot rows (car_step.c; numpy twin addon/solver/shots/car.py CarDynamics), K steps at
 * once. W (K, 3, 6): stages k-1, k, k+1 of (theta, x, y, phi, d / unit, u), step k's 18 values contiguous from
 * W + w_stride k (18 for a packed W, 19 for the window rows (K, 19) ending in h); first (K,) nonzero at step 0; h (K,)
 * at h + h_stride k;
 * par (6,): alpha, rho, rho / wheelbase, coupling, rho^2 m, unit. r (K, 4) the residuals; J (K, 4, 19) their
 * Jacobian over the window flattened then h. */
void symplex_car_step(int64_t K, const double *W, int64_t w_stride, const int64_t *first, const double *h,
                      int64_t h_stride, const double *par, double *r, double *J);

/* The exact Hessian of sum_i y[k, i] r_i (y (K, 4)) over the window slots that enter nonlinearly, 3, 4, 5, 6, 9, 10,
 * 11, 15, 18 of the window flattened then h (zero over the other slots), a (9, 9) block per step: out (K, n_positions)
 * its entries at the flat positions (n_positions,) (row 9 + column, each < 81; 0..80: the whole block). */
void symplex_car_step_hessian(int64_t K, const double *W, int64_t w_stride, const int64_t *first, const double *h,
                              int64_t h_stride, const double *par, const double *y, double *out,
                              const int64_t *positions, int64_t n_positions);

/* Clearance rows of a planar vehicle's body spheres against one obstacle at centre (3,) with orientation R (3, 3,
 * world from local), met at the obstacle's centre height. kind and shape: 0 sphere [radius], 1 box [half extents
 * (3)], 2 cylinder along local z [radius, half height], 3 convex hull [F, beta, shift, normals (F, 3), offsets
 * (F,)]: the smooth maximum of obstacles.py (planar_clearance.c; numpy twin addon/solver/shots/obstacles.py through
 * transcription.py). S (K, ns): stage states with heading, x, y first; sphere j's centre is (x + cos th ox_j -
 * sin th oy_j, y + sin th ox_j + cos th oy_j), offsets (m, 2) = (ox_j, oy_j). d (K, m) the signed distances or
 * NULL; J (K, m, ns) their gradients over S or NULL; H (K, n_positions) the exact Hessian of sum_j weights[k, j]
 * d_kj over S, (ns, ns) a stage, at the flat positions (n_positions,) (row ns + column, each < ns ns; 0..ns ns - 1:
 * all of it), or NULL (weights and positions then unused). */
void symplex_planar_clearance(int64_t K, int64_t ns, const double *S, int64_t m, const double *offsets,
                              int64_t kind, const double *centre, const double *R, const double *shape,
                              const double *weights, double *d, double *J, double *H, const int64_t *positions,
                              int64_t n_positions);

/* out[target[i]] += values[i] for i < n, in the order of i (sparse_sum.c; numpy twin np.bincount in
 * addon/solver/shots/transcription.py SparsityPattern.values_numpy). */
void symplex_scatter_add(int64_t n, const int64_t *target, const double *values, double *out);
/* Sums of values in classes: class c has entries[c] sums of terms[c] terms each, the sums one after the other in sums
 * and their terms' positions in values one after the other in source; each sum 0.0 + values[source[..]] + ... in the
 * order listed (sparse_sum.c; numpy twin np.bincount over the COO entries' targets, in native/sparse_binding.py
 * symmetric_half_sum_numpy). */
void symplex_entry_sums(int64_t n_classes, const int64_t *terms, const int64_t *entries, const int64_t *source,
                        const double *values, double *sums);
/* out[k] = 0.5 sums[upper[k]] + 0.5 sums[lower[k]] for k < n, a negative index's half 0.0 (sparse_sum.c; numpy twin
 * native/sparse_binding.py symmetric_half_sum_numpy). */
void symplex_symmetric_half_sum(int64_t n, const int64_t *upper, const int64_t *lower, const double *sums,
                                double *out);
void symplex_csr_matvec(int64_t rows, const int64_t *indptr, const int64_t *indices, const double *data,
                        const double *x, double *out);

/* The quadratic costs' Hessian as COO data (quadratic_costs.c; numpy twin addon/solver/shots/transcription.py
 * QuadraticCosts.hessian_into_numpy): out (3 E + 8 S) = the effort's scale_h kee, (scale ke) e twice, then the
 * smoothness' a, a, -a, -a with a = scale_over_h kss and b, b, -b, -b with b = (scale_over_h2 ks) d, each (E,) or
 * (S,); out's last entry, (h, h), is the caller's. */
void symplex_quadratic_hessian(int64_t E, const double *kee, const double *ke, const double *e, int64_t S,
                               const double *kss, const double *ks, const double *d, double scale, double scale_h,
                               double scale_over_h, double scale_over_h2, double *out);

/* Contact rows of the maximal step at the knot (contact_rows.c; numpy twin: maximal/interior_point.py
 * _contacts, _patches and the contact part of `packed`).
 * symplex_contact_knot: rotations R (nbody, 3, 3) of the quaternions q (w x y z, normalised first) and the body
 * frame origins x - R com (nbody, 3) for the collision query, and each body's margin (nbody) for it
 * 2 dt (|v| + reach |w|) + |g| dt^2 + 1 mm rounded up to 1 mm times a power of 2, reach (nbody) how far the
 * body's colliders reach from its centre of mass (collision/shapes.py body_reach). */
void symplex_contact_knot(int64_t nbody, const double *x, const double *q, const double *v, const double *w,
                          const double *com, const double *reach, double gravity_norm, double dt, double *R,
                          double *origin, double *margin);
/* symplex_contact_curvature: what each of k contacts' gap rows misses over the step (interior_point._curvature):
 * the gap of its features (collision/features.py: the face of A or of B, or two edges, from the colliders'
 * shape codes and axes rotation_local (ncollider, 3, 3)) at the configuration the knot's velocities v, w reach
 * in dt, minus the gap's linearisation there; 0 for pairs other than plane-box and box-box. Contacts as for
 * symplex_contact_rows, knot x, R from symplex_contact_knot. Writes curvature (k). */
void symplex_contact_curvature(int64_t k, const int64_t *shape, const double *rotation_local,
                               const int64_t *collider_a, const int64_t *collider_b, const int64_t *body_a,
                               const int64_t *body_b, const double *point_a, const double *point_b,
                               const double *normal, const double *x, const double *R, const double *v,
                               const double *w, const double *com, double dt, double *curvature);
/* symplex_contact_drift: interior_point.relinearise's measure for the C step. Of k contacts whose rows
 * symplex_contact_rows built (a, b, Ja, Jb its outputs; start: distance + curvature, the gap the rows start
 * from; curvature: the rows' curvature), the largest |curvature along v, w - curvature| over those whose gap
 * ends the step within close_margin, start + dt n . (Jb V_b - Ja V_a) <= close_margin (V = (v, w) the step's
 * interval velocities (nbody, 3 each); the world at rest); 0 when none does. Writes the curvature along v, w
 * into along (k) (symplex_contact_curvature). */
double symplex_contact_drift(int64_t nbody, int64_t k, const int64_t *shape, const double *rotation_local,
                             const int64_t *collider_a, const int64_t *collider_b, const int64_t *body_a,
                             const int64_t *body_b, const double *point_a, const double *point_b,
                             const double *normal, const double *start, const double *curvature, const int64_t *a,
                             const int64_t *b, const double *Ja, const double *Jb, const double *x, const double *R,
                             const double *v, const double *w, const double *com, double dt, double close_margin,
                             double *along);
/* symplex_contact_rows: from k contacts (CollisionWorld.detect's Contacts, sorted by collider pair: colliders,
 * bodies (-1 world), body-frame witness points, normals, distances (the query's plus symplex_contact_curvature's:
 * the gap the rows start from), friction) and the knot (x, R from
 * symplex_contact_knot, v, w, com, mass of the bodies), the interior point's contact rows:
 * per contact (k): bodies a, b (nbody: the world), key collider_a ncollider + collider_b, point Jacobians
 *   Ja, Jb (k, 3, 6);
 * per row (at most 8 k): kind (0 gap, 1 cone, 2 direction), owner contact, bodies row_a, row_b, row_key
 *   (4 key[owner] + kind), force side G (.., 12), h0, weight, s_cold (symplex_maximal_pairs' fields);
 * members, member_patch (at most k) the rubbing contacts patch by patch; B (at most 6 k, 12) the direction
 * rows; e_row, e_col, e_val (at most 13 k) E's off-diagonal entries; counts (4,) = rows, members,
 * directions, entries. scratch: 4 k doubles. Returns 0, or -1 when the contacts are not sorted. */
int64_t symplex_contact_rows(int64_t nbody, int64_t ncollider, int64_t k, const int64_t *collider_a,
                             const int64_t *collider_b, const int64_t *body_a, const int64_t *body_b,
                             const double *point_a, const double *point_b, const double *normal,
                             const double *distance, const double *friction, const double *x, const double *R,
                             const double *v, const double *w, const double *com, const double *mass,
                             double gravity_norm, double dt, int64_t *a, int64_t *b, int64_t *key, double *Ja,
                             double *Jb, int64_t *kind, int64_t *owner, int64_t *row_a, int64_t *row_b,
                             int64_t *row_key, double *G, double *h0, double *weight, double *s_cold,
                             int64_t *members, int64_t *member_patch, double *B, int64_t *e_row, int64_t *e_col,
                             double *e_val, int64_t *counts, double *scratch);

/* A holonomic shot vehicle (shots/holonomic.py HolonomicDynamics) for symplex_holonomic_step. Every field is
 * 8 bytes (symplex_holonomic_struct_size() lets the loader check the layout). */
typedef struct symplex_holonomic {
    int64_t kind;           /* 0 helicopter (rotor, tail, gravity), 1 boat (column water, thrusters, gravity),
                             * 2 hovercraft (cushion, skirt drag, thrusters, gravity) */
    int64_t nc;             /* controls: 4 (helicopter: collective, tail, blade pitch, roll), 2 (boat, hovercraft) */
    int64_t ncol;           /* boat: hull columns */
    const double *col_xy;   /* boat: (ncol, 2) column centres, body x y */
    double inertia[36];     /* locked inertia (6, 6), rows (angular; linear) */
    double units[4];        /* physical control = unit * stage variable */
    double mass, gravity[3];
    double rotor_height, tail_arm;   /* helicopter */
    double thrust[12];      /* boat, hovercraft: (6, nc) wrench per unit thrust */
    double keel, hull_height, hull_area, water_density, drag[3], current[3];  /* boat */
    double corners[12], cushion_height, cushion_stiffness, cushion_damping;  /* hovercraft: (4, 3) skirt corners */
    double skirt_drag[6];   /* hovercraft: quadratic drag per twist entry (w, v) */
} symplex_holonomic;

int64_t symplex_holonomic_struct_size(void);

/* The DMOC step rows of K windows (stages k-1, k, k+1 of 13 + nc variables each, then h) of a holonomic
 * vehicle: shots/holonomic.py `residual` (mode 1) and `residual_hessian` (mode 2), its numpy twin.
 * inputs:  W (K, 3, 13 + nc); first (K,) nonzero at step 0; h (K,); y (K, 13) multipliers (mode 2).
 * outputs: r (K, 13) rows (mode 1; scratch in mode 2); J (K, 13, 3 (13 + nc) + 1) their Jacobian, h last (mode 1); H (K, 3 (13 + nc) + 1,
 *          3 (13 + nc) + 1) = sum_i y_i d2 r_i (mode 2).
 * Returns the number of windows whose boat hull is outside the column model (body z within 87 degrees of
 * horizontal): their wrench rows are not set. */
int64_t symplex_holonomic_step(const symplex_holonomic *p, int64_t K, int64_t mode, const double *W,
                               const int64_t *first, const double *h, const double *y, double *r, double *J,
                               double *H);

/* A scalar program recorded and compiled by shots/program.py (its Program fields, same names): node i is
 * op[i] (0 constant, 1 parameter, 2 variable, 3 add, 4 mul, 5 neg, 6 sin, 7 cos) on nodes args[2i], args[2i+1]
 * (-1: none, operands before i) with number[i] (a constant's value, a parameter's or variable's index); its
 * gradient is over the variables support[support_start[i] .. support_start[i+1]); for an add or product,
 * maps[map_start[2i + side] ..] are the positions of operand side's support in node i's. The output is node n-1. */
typedef struct symplex_program {
    int64_t n, n_var, n_param;
    const int64_t *op, *args;
    const double *number;
    const int64_t *support_start, *support, *map_start, *maps;
} symplex_program;

/* Doubles of scratch symplex_program_run needs. */
int64_t symplex_program_scratch_size(const symplex_program *p);

/* What symplex_program_run computes besides the value and gradient: no Hessian (rows), the whole Hessian, or
 * only its entries across split (one variable below it, one not) or below it (both variables below it). */
enum { SYMPLEX_PROGRAM_ROWS, SYMPLEX_PROGRAM_HESSIAN, SYMPLEX_PROGRAM_ACROSS, SYMPLEX_PROGRAM_BELOW };

/* The program at K instances: variables X (K, n_var), parameters P (K, n_param).
 * outputs: value (K,), grad (K, n_var); unless block is SYMPLEX_PROGRAM_ROWS, H (K, n_var, n_var), both
 * triangles, the entries block asks for (the others zero). */
void symplex_program_run(const symplex_program *p, int64_t K, int64_t block, int64_t split, const double *X,
                         const double *P, double *value, double *grad, double *H, double *scratch);

/* The interior point's fraction-to-boundary rule (interior_point.c; numpy twins in
 * native/interior_point_binding.py): min(1, min over dx[i] < 0 of -tau dist_lo[i] / dx[i], min over dx[i] > 0 of
 * tau dist_up[i] / dx[i]) over n entries (nan ratios skipped); dist_up 0 (NULL): no upper bounds. */
double symplex_step_to_bounds(int64_t n, const double *dist_lo, const double *dist_up, const double *dx, double tau);
/* The barrier terms of a Newton step over n variables with m rows (numpy twin: barrier_terms_numpy): terms (6, n) =
 * zL / dl, zU / du, their sum, mu / dl, mu / du, (g - mu / dl) + mu / du; rhs (n + m) = -(the last, c). */
void symplex_barrier_terms(int64_t n, int64_t m, const double *g, const double *zL, const double *zU, const double *dl,
                           const double *du, double mu, const double *c, double *terms, double *rhs);
/* dzL = (mu / dl - zL) - (zL / dl) dz, dzU = (mu / du - zU) + (zU / du) dz from barrier_terms' terms; returns
 * min(step_to_bounds(zL, 0, dzL, tau), step_to_bounds(zU, 0, dzU, tau)) (numpy twin: multiplier_steps_numpy). */
double symplex_multiplier_steps(int64_t n, const double *zL, const double *zU, const double *terms, const double *dz,
                                double tau, double *dzL, double *dzU);
/* An interior-point iteration's measures (numpy twin: optimality_numpy): largest[0] = max |((jt_y + g) - zL) + zU|,
 * products = dl[lo] zL[lo], then du[up] zU[up] (n_lo + n_up), largest[1], largest[2] the largest of each part (every
 * maximum from 0, nan when an entry is). */
void symplex_optimality(int64_t n, const double *jt_y, const double *g, const double *zL, const double *zU,
                        const double *dl, const double *du, int64_t n_lo, const int64_t *lo, int64_t n_up,
                        const int64_t *up, double *products, double *largest);
/* dist = x[lo] - lo_value (n_lo), then up_value - x[up] (n_up); returns the smallest (inf when none; nan skipped)
 * (numpy twin: Vectors._distances). */
double symplex_bound_distances(int64_t n_lo, const int64_t *lo, const double *lo_value, int64_t n_up,
                               const int64_t *up, const double *up_value, const double *x, double *dist);
/* At the accepted point z, in place: dl = z - lower, du = upper - z, zL = zL + alpha dzL clipped to
 * [mu / (1e10 dl), (1e10 mu) / dl], zU likewise over du (numpy twin: accepted_step_numpy). */
void symplex_accepted_step(int64_t n, const double *z, const double *lower, const double *upper, double alpha,
                           const double *dzL, const double *dzU, double mu, double *dl, double *du, double *zL,
                           double *zU);

#endif

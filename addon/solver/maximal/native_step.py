"""The maximal step in C (native/maximal_step.c): the model packed once, one kernel call per step.

`kernel_for(model, state)` returns a MaximalKernel when the C kernels are built and loaded
(SYMPLEX_NO_NATIVE unset). `MaximalKernel.step` then runs variational.step's Newton loop (knot terms,
residuals, the exact matrix, its fill-in LDU with the loop rows and inequality pairs bordered densely,
the line search or the interior point's predictor-corrector, the convergence test) in one call, and
updates the state as variational.step does. With colliders or joint limits, the step's pairs are set up at
the knot by interior_point.begin, the contacts' rows in C (native/contact_rows.c through the kernel's
NativeRows buffers, around the C collision query), and copied into the kernel's pair buffers; the kernel
moves the pairs' iterate, restarts included. When loop rows and pairs together exceed MAX_BORDER, the kernel
factors the whole bordered matrix by the block LU on the contact graph instead of bordering it densely
(native_border.py builds its pattern once per contact set), unless that factor would take more than
MAX_FLOPS multiply-adds per unknown (then numpy takes the step; the gate is decided on the symbolic
factor, before the layout is built).

Falls back to the numpy step (variational.py, the reference), silently and from the unchanged state:
* always, for loop joints with linear.SPARSE_FROM or more auxiliary rows, which the numpy solver
  factors by one sparse LU (the kernel borders fewer onto the tree factor densely, as linear.py does):
  kernel_for returns None;
* the first step of a mechanism with loop joints, where the numpy step picks the independent loop
  rows (variational._select_rows: pivoted QR of their Schur complement);
* for one step, when the kernel stops without converging, meets a singular Newton matrix (for the block
  LU: a zero pivot, where the numpy solver goes to SuperLU), a
  non-finite iterate or an angular speed of 2/dt, or when defect correction stalls where the numpy
  solver would hand over to GMRES, or when the interior point does not converge (the numpy step then
  also tries the step without friction): the numpy step then converges or raises its own error (the
  same messages and step information).
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..collision.shapes import body_reach
from ..curves import evaluate
from ..native import contact_rows_binding as contact_binding
from ..native import maximal_binding as binding
from ..native.contact_rows_binding import NativeRows
from . import fillin, interior_point, native_border
from .forces import coordinates, knot_torques
from .joints import ANGLE, frames, row_targets
from .linear import SPARSE_FROM, LinearSolver
from .state import MaximalModel, MaximalState

MAX_FLOPS = 50000.0  # the block LU's multiply-adds per unknown (fillin.Symbolic.flops) above which the step goes to numpy
# before the factor's layout is built: a guard, reached by no measured scene in contact_ldu's condensed order (dominoes
# 75-250; the 200-box pile's landing steps 4400-12800, the body graph's fill; in the bordered order 17000, then gated at 2000)
MAX_BORDER = 256  # loop rows + inequality pairs the kernel borders densely (measured: the dense border beats the
# numpy sparse LU 7x at 174 pairs, 16 dominoes; loses 1.2x at 350, 32 dominoes); more: the block LU in C


def kernel_for(model: MaximalModel, state: MaximalState) -> MaximalKernel | None:
    """A kernel for `model`, or None when its steps stay in numpy (see the module docstring)."""
    if binding.LIB is None or not fillin.NATIVE or len(model.order) - model.n_primary >= SPARSE_FROM:
        return None
    if state.solver is None:
        state.solver = LinearSolver(model.bodies.count, list(model.primary))
    return MaximalKernel(model, state.solver)


def _c(array, dtype=np.float64) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=dtype)


_INT_PAIR_ARRAYS = frozenset(("kind", "a", "b", "coord", "e_row", "e_col"))


class MaximalKernel:
    """One model's arrays, the fill-in plan of its Newton matrix, the kernel's scratch and its input
    and output buffers, made once (their addresses too)."""

    def __init__(self, model: MaximalModel, solver: LinearSolver):
        bs, js, fs = model.bodies, model.joints, model.forces
        rows = model.order
        plan = solver._plan
        self.model = model
        self._rows = None if model.collision is None or contact_binding.LIB is None else \
            NativeRows(bs.count, len(model.mechanism.colliders), model.collision.shapes, bs.com, bs.mass,
                       body_reach(model.collision.shapes, bs.com), float(np.linalg.norm(bs.gravity)))
        kinds = js.row_kind[rows]
        self._angle = kinds == ANGLE
        self._angle_rows = rows[self._angle]
        self._curves = bool(np.any(js.row_curve[rows] >= 0))
        self._torques = bool(np.any(js.torque >= 0))
        self._scaled = any(c is not None for c in fs.force_scale)
        self._loop_rows = len(rows) > model.n_primary  # the kernel reads the loop-row mask
        self._coordinates = len(fs.coord_a) > 0  # joint coordinates or springs: windings, rates, Jacobians
        self._call = binding.LIB.symplex_maximal_step
        i64 = np.int64
        arrays = {
            "mass": _c(bs.mass), "com": _c(bs.com), "inertia": _c(bs.inertia), "gravity": _c(bs.gravity),
            "parent": _c(js.parent, i64), "child": _c(js.child, i64), "pa": _c(js.pa), "pb": _c(js.pb),
            "ca": _c(js.ca), "cb": _c(js.cb), "frame_a": _c(js.frame_a), "frame_b": _c(js.frame_b),
            "row_joint": _c(js.row_joint[rows], i64), "row_kind": _c(kinds, i64),
            "coord_joint": _c(js.coord_joint, i64), "coord_kind": _c(js.coord_kind, i64),
            "spring_a": _c(fs.spring_a, i64), "spring_b": _c(fs.spring_b, i64), "spring_pa": _c(fs.spring_pa),
            "spring_pb": _c(fs.spring_pb), "coord_a": _c(fs.coord_a, i64), "coord_b": _c(fs.coord_b, i64),
            "stiffness": _c(fs.stiffness), "rest": _c(fs.rest), "damping": _c(fs.damping), "gain": _c(fs.gain),
            "target_velocity": _c(fs.target_velocity), "force_body": _c(fs.force_body, i64),
            "force_point": _c(fs.force_point), "force_vector": _c(fs.force_vector),
            "order": plan.order, "dim": plan.dim, "diag_offset": plan.diag_offset, "upper_start": plan.upper_start,
            "upper_node": plan.upper_node, "lower_offset": plan.lower_offset, "upper_offset": plan.upper_offset,
            "pair_start": plan.pair_start, "pair_offset": plan.pair_offset, "row_offset": plan.row_offset,
            "gather_src": _c(solver._src, i64), "gather_dst": _c(solver._dst, i64),
        }
        self._arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}  # kept alive
        nb, R = bs.count, len(rows)
        self.sizes = dict(nbody=nb, njoint=js.count, nrow=R, n_primary=model.n_primary, ncoord_joint=len(js.coord_joint),
                          nspring=len(fs.spring_a), nforce=len(fs.force_body), n_nodes=len(plan.dim),
                          flat_size=plan.size, n_gather=len(solver._src), fill_scratch=max(plan.scratch, 1))
        self._model = binding.Model(*self.sizes.values(), *(self._arrays[n].ctypes.data for n in binding.MODEL_ARRAYS))
        self._model_ptr = ctypes.pointer(self._model)
        nc = len(fs.coord_a)
        ncj = len(js.coord_joint)
        self._in = {"x": np.zeros((nb, 3)), "q": np.zeros((nb, 4)), "v": np.zeros((nb, 3)), "w": np.zeros((nb, 3)),
                    "lam": np.zeros(R), "active": np.ones(R, np.int64), "row_winding": np.zeros(R), "coord_winding": np.zeros(ncj),
                    "coord_rate": np.zeros(nc), "coord_jac_prev": np.zeros((nc, 12)),
                    "acceleration": np.zeros((nb, 6)), "targets": np.zeros(R), "torque": np.zeros(ncj),
                    "force_scale": np.ones(len(fs.force_body))}
        self._state = binding.State(*(self._in[n].ctypes.data for n in binding.STATE_ARRAYS), 0, None)
        self._state_ptr = ctypes.pointer(self._state)
        self._prev_address = self._state.coord_jac_prev
        self._accel_address = self._state.acceleration
        self._out = {"V": np.zeros((nb, 6)), "acceleration": np.zeros((nb, 6)), "poses": np.zeros((nb, 7)),
                     "lam": np.zeros(R), "x2": np.zeros((nb, 3)), "q2": np.zeros((nb, 4)), "row_val2": np.zeros(R), "row_winding2": np.zeros(R), "coord_winding2": np.zeros(ncj),
                     "cval2": np.zeros(nc), "rate": np.zeros(nc), "cjac2": np.zeros((nc, 12)),
                     "sweeps": np.zeros(0), "stats": np.zeros(4)}
        self._pair_capacity = -1
        self._dense = True
        self._scratch = np.zeros(0)
        self._sparse: native_border.KernelPattern | None = None
        self._pairs = binding.Pairs()
        self._pairs_ptr = ctypes.pointer(self._pairs)
        self._pair_arrays: dict[str, np.ndarray] = {}  # the pairs' buffers (symplex_maximal_pairs points at them)
        self._entry_capacity = 0
        self._outputs = binding.Outputs()  # points at self._out's buffers and the scratch (set by step)
        self._outputs_ptr = ctypes.pointer(self._outputs)
        self._outputs_set = False
        self._reserve(0, 0, True)
        self.steps = 0  # steps taken in C (the others went to the numpy step)

    def __deepcopy__(self, memo: dict) -> MaximalKernel:
        """Copies of a state share their kernel: it keeps nothing of a state between steps (each step
        copies its inputs in and its results out), only the model's arrays and scratch."""
        return self

    def _reserve(self, npair: int, nentry: int, dense: bool) -> None:
        """Scratch and pair buffers for steps with up to npair pairs (grown by doubling; with the dense border's
        room when `dense`, then at most MAX_BORDER pairs) and nentry entries of E (grown by doubling); the pairs'
        struct points at the buffers (set when they are made, not at every step)."""
        grown = False
        if npair > self._pair_capacity or (dense and not self._dense):
            capacity = max(npair, 2 * self._pair_capacity)
            self._pair_capacity = cap = min(capacity, MAX_BORDER) if dense else capacity
            self._dense = dense
            self._scratch = np.zeros(binding.LIB.symplex_maximal_scratch_size(self._model_ptr, cap, int(dense)))
            self._outputs_set = False
            self._pair_arrays.update({name: np.zeros((cap, 12) if name == "G" else cap,
                                                     np.int64 if name in _INT_PAIR_ARRAYS else np.float64)
                                      for name in binding.PAIR_ARRAYS[:-1] if not name.startswith("e_")})
            self._pair_arrays["control"] = np.zeros(len(binding.CONTROL))
            grown = True
        if nentry > self._entry_capacity or not self._entry_capacity:
            self._entry_capacity = cap = max(nentry, 2 * self._entry_capacity, 16)
            self._pair_arrays.update(e_row=np.zeros(cap, np.int64), e_col=np.zeros(cap, np.int64), e_val=np.zeros(cap))
            grown = True
        if grown:
            for name in binding.PAIR_ARRAYS:
                setattr(self._pairs, name, self._pair_arrays[name].ctypes.data)

    def _set_pairs(self, state: MaximalState, dt: float) -> None:
        """Set this step's pairs up at the knot (interior_point.begin) and copy them into the kernel's
        buffers."""
        model = self.model
        coords = None
        if len(model.limited):
            js, fs = model.joints, model.forces
            coords = coordinates(js, fs, frames(js, state.x, state.q), state.x, state.q, state.coord_winding)
        packed = interior_point.begin(model, state, coords, dt, self._rows)
        ip = state.interior
        npair = len(ip.rows.kind)
        if packed is None:  # no colliders (limits only), or contact_rows.c not loaded
            packed = interior_point.packed(model, state)
        nentry = len(packed.e_row)
        self._reserve(npair, nentry, npair + len(model.order) - model.n_primary <= MAX_BORDER)
        arrays = self._pair_arrays
        for name in binding.PAIR_ARRAYS[:-3]:
            arrays[name][:len(getattr(packed, name))] = getattr(packed, name)
        arrays["lam"][:npair] = ip.lam
        arrays["s"][:npair] = ip.s
        arrays["control"][:] = [getattr(ip, n) for n in binding.CONTROL[:-1]] + [interior_point.COLD_MU]
        self._pairs.npair, self._pairs.nentry = npair, nentry
        self._state.pairs = self._pairs_ptr

    def _set_sparse(self, state: MaximalState) -> bool:
        """Point the kernel at the block LU's pattern of this step's rows (kept while the contact set's
        topology is), or at none (dense border); False when its factor would cost more than MAX_FLOPS allows."""
        model, npair, nentry = self.model, self._pairs.npair, self._pairs.nentry
        if state.interior is None or self._dense:
            self._state.sparse = None
            return True
        a, b = self._pair_arrays["a"][:npair], self._pair_arrays["b"][:npair]
        e_row, e_col = self._pair_arrays["e_row"][:nentry], self._pair_arrays["e_col"][:nentry]
        system = np.arange(len(model.order)) < model.n_primary  # the kernel's system rows (symplex_maximal_step)
        joint = model.joints.row_joint[model.order[system | state.aux_active]]
        js, nb = model.joints, model.bodies.count
        unknowns = 6 * nb + len(joint) + npair
        self._sparse = native_border.pattern_for(self._sparse, nb, np.concatenate([js.parent[joint], a]),
                                                 np.concatenate([js.child[joint], b]), npair, e_row, e_col,
                                                 MAX_FLOPS * unknowns)
        self._state.sparse = self._sparse.pointer if self._sparse.pattern is not None else None
        return self._sparse.pattern is not None

    def _pairs_back(self, state: MaximalState) -> None:
        """The converged iterate back into state.interior (a redo along the step's velocities starts from it)."""
        ip, arrays, npair = state.interior, self._pair_arrays, self._pairs.npair
        ip.lam, ip.s = arrays["lam"][:npair].copy(), arrays["s"][:npair].copy()
        mu, cold, monotone, mu_fixed, restarts, _ = arrays["control"].tolist()
        ip.mu, ip.cold, ip.monotone, ip.mu_fixed, ip.restarts = mu, bool(cold), bool(monotone), mu_fixed, int(restarts)

    def _copy_in(self, state: MaximalState, dt: float) -> None:
        """The step's inputs into the kernel's buffers (the kernel reads them only): no windings without angle
        rows or coordinates, no loop-row mask without loop rows."""
        model, ins, st = self.model, self._in, self._state
        js, rows = model.joints, model.order
        ins["x"][...] = state.x
        ins["q"][...] = state.q
        ins["v"][...] = state.v
        ins["w"][...] = state.w
        ins["lam"][...] = state.lam
        if self._loop_rows:
            ins["active"][...] = state.aux_active
        if len(self._angle_rows):
            ins["row_winding"][...] = state.row_winding[rows]
        if self._coordinates:
            ins["coord_winding"][...] = state.coord_winding
            ins["coord_rate"][...] = state.coord_rate
            if state.coord_jac_prev is None:
                st.coord_jac_prev = None
            else:
                ins["coord_jac_prev"][...] = state.coord_jac_prev
                st.coord_jac_prev = self._prev_address
        if isinstance(state.acceleration_guess, np.ndarray):
            ins["acceleration"][...] = state.acceleration_guess
            st.acceleration = self._accel_address
        else:
            st.acceleration = None
        if self._curves:
            ins["targets"][...] = row_targets(js, state.t + dt)[rows]
        if self._torques:
            ins["torque"][...] = knot_torques(js, state.t, dt)
        if self._scaled:
            t = state.t
            ins["force_scale"][...] = 0.5 * sum(np.array([1.0 if c is None else evaluate(c, s)
                                                          for c in model.forces.force_scale])
                                                for s in (t - 0.5 * dt, t + 0.5 * dt))
        st.startup = int(state.startup)

    def step(self, state: MaximalState, dt: float, tol: float, max_iterations: int,
             halvings: int) -> tuple[int, float, float, np.ndarray] | None:
        """One step of `state` (updated in place as variational.step does, with its iteration and
        line-search limits); (iterations, residual, energy, body-frame poses (B, 7) at the new knot), or
        None (state untouched) when the numpy step must take it (module docstring)."""
        model, out = self.model, self._out
        if state.aux_active is None:
            if len(model.loop_joints):
                return None  # the numpy step picks the independent loop rows (variational._select_rows)
            state.aux_active = np.ones(len(model.order), bool)
        self._copy_in(state, dt)
        while True:  # a relinearised step is redone from the same inputs, its pairs set up along its velocities
            if state.interior is not None:
                self._set_pairs(state, dt)
            if len(out["sweeps"]) != max_iterations or not self._outputs_set:
                out["sweeps"] = np.zeros(max_iterations)
                for name in binding.OUTPUTS:
                    setattr(self._outputs, name, out[name].ctypes.data)
                self._outputs.scratch = self._scratch.ctypes.data
                self._outputs_set = True
            if not self._set_sparse(state):
                return None
            status = self._call(self._model_ptr, self._state_ptr, float(dt), float(tol), int(max_iterations),
                                int(halvings), self._outputs_ptr)
            if status != binding.CONVERGED:
                return None
            if state.interior is None:
                break
            self._pairs_back(state)  # a redo's pairs start from this step's converged ones
            if not interior_point.relinearise(model, state, out["V"], dt, self._rows):
                break
        iterations, residual, energy, updates = out["stats"].tolist()
        state.sweeps.extend([int(s) for s in out["sweeps"][:int(updates)].tolist()])
        if len(self._angle_rows):
            state.row_winding = state.row_winding.copy()
            state.row_winding[self._angle_rows] = out["row_winding2"][self._angle]
        if self._coordinates:
            state.coord_winding = out["coord_winding2"].copy()
            state.coord_rate = out["rate"].copy()
            state.coord_jac_prev = out["cjac2"].copy()
        elif state.coord_jac_prev is None:
            state.coord_jac_prev = out["cjac2"]  # empty: nothing to copy or overwrite
        if state.interior is not None:
            interior_point.finish(state)  # kept for the next step's warm start
        state.acceleration_guess = 0.0 if state.startup or state.interior is not None else out["acceleration"].copy()
        state.x, state.q = out["x2"].copy(), out["q2"].copy()
        V = out["V"].copy()
        state.v, state.w = V[:, :3], V[:, 3:]
        state.frames_at = None
        state.lam = out["lam"].copy()
        state.t += dt
        state.startup = False
        state.step_index += 1
        self.steps += 1
        return int(iterations), residual, energy, out["poses"].copy()

"""Direct transcription of a shot into an NLP (DMOC): stage layout, constraint blocks, costs, result.

Owns the generic part shared by every vehicle: the decision vector, the assembly of vectorised
constraint and cost blocks into sparse Jacobians and Hessians, keys, obstacles, corridors, costs, the
warm start and the report. What moves is a `StageDynamics` (car.py, holonomic.py, snakeboard.py).

Layout: stages k = -1..N, each the node state s_k (ns) followed by the segment variables v_k (nv:
controls and algebraic unknowns of step k), then the time step h last. Stage -1 holds constants the
first step needs (the start velocity), fixed by equal bounds, as are the start state's fixed parts and
the unused v_N. Step k's discrete equations are residuals of the window (stage k-1, k, k+1, h): the
Jacobian is block banded, and the KKT matrix keeps that band under a fill-reducing LU.

Blocks: each is K instances of one vectorised function of a small local vector (K, w) -> values (K, r)
and exact Jacobian (K, r, w). The Hessian of the Lagrangian is summed from each block's local second
derivatives sum_i y_i d2 c_i: exact where the block's function carries a `hessian` (every vehicle's step
equations; keys, obstacle clearances, corridors and the reference cost when the dynamics gives
body_point_hessian), else by forward differences of its exact local Jacobian (w batched evaluations per block,
all instances at once: heading keys of rigid bodies). The effort and smoothness costs of all channels are one
QuadraticCosts term with its exact derivatives. The blocks' window outputs reach the solver's fixed-pattern
values through index maps composed once (_Assembly, SparsityPattern.gather; the Hessian's duplicates summed in
C by SparsityPattern.values).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from functools import partial
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ..native import shot_rows_binding as _rows
from ..native import quadratic_binding as _quadratic
from ..native import sparse_binding as _sparse
from . import nlp as nlpmod
from .obstacles import distance_function, obstacle_frame, shape_parameters
from .spec import Shot, ShotError, ShotResult

LocalFn = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
_sum = np.add.reduce  # the ufunc reduction behind np.sum, without its Python wrapper
_ORIGIN = np.zeros(3)  # the body frame's origin (position, _point_hessian): read-only, made once
_ORIGIN.flags.writeable = False


@dataclass(frozen=True)
class Channel:
    """A keyable control channel: the vehicle's control name, where its values live (node state or segment
    variable, index), the time of value k as (k + offset) h, its scale (effort normalisation), trim (the
    effort counts u - trim), whether effort applies to it (else smoothness only), and unit: the decision
    variable is u / unit (controls of very different sizes are normalised for the solver)."""

    name: str
    where: str  # "node" | "segment"
    index: int
    offset: float
    scale: float
    trim: float = 0.0
    effort: bool = True
    unit: float = 1.0


class StageDynamics(ABC):
    """A vehicle's discrete equations in the stage layout of this module.

    residual(W (K, 3, ns + nv) stages k-1, k, k+1; first (K,) bool, k == 0; h (K,)) ->
    (r (K, nr), dr/dW (K, nr, 3, ns + nv), dr/dh (K, nr)): zero exactly when the simulator's step k maps
    stage k to stage k+1.
    """

    state_names: tuple[str, ...]
    segment_names: tuple[str, ...]
    channels: tuple[Channel, ...]
    planar: bool
    velocity_components: tuple[int, ...]

    @property
    def ns(self) -> int:
        return len(self.state_names)

    @property
    def nv(self) -> int:
        return len(self.segment_names)

    @abstractmethod
    def residual(self, W: np.ndarray, first: np.ndarray, h: np.ndarray): ...

    def window_residual(self, X: np.ndarray, first: np.ndarray,
                        out: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """residual over the transcription's windows X (K, 3 (ns + nv) + 1), stages k-1, k, k+1 flattened then h:
        (r (K, nr), dr/dX (K, nr, 3 (ns + nv) + 1)), written into out = (r, dr/dX) when given. A vehicle whose kernel
        lays its Jacobian out so overrides it (no copies back and forth)."""
        r, dW, dh = self.residual(X[:, :-1].reshape(len(X), 3, self.ns + self.nv), first, X[:, -1])
        if out is None:
            return r, np.concatenate([dW.reshape(len(X), r.shape[1], -1), dh[:, :, None]], axis=2)
        out[0][...] = r
        out[1][:, :, :-1], out[1][:, :, -1] = dW.reshape(len(X), r.shape[1], -1), dh
        return out

    def window_residual_call(self, X: np.ndarray, first: np.ndarray,
                             out: tuple[np.ndarray, np.ndarray]) -> Callable[[], None] | None:
        """window_residual(X, first, out) bound to these arrays (buffers that outlive the call: each call reads X's
        current values), or None when the dynamics binds none (window_residual serves)."""
        return None

    def residual_hessian_slots_call(self, X: np.ndarray, first: np.ndarray, y: np.ndarray, out: np.ndarray,
                                    positions: np.ndarray | None = None) -> Callable[[], None] | None:
        """residual_hessian_slots over the windows X (as window_residual's) with weights y written into out (K, s, s),
        or with positions (P,) each window's entries at those flat positions of its (s, s) block into out (K, P),
        bound to these arrays like window_residual_call, or None when the dynamics binds none."""
        return None

    # Optional exact second derivatives: residual_hessian(W, first, h, y (K, nr)) -> (K, 3 (ns + nv) + 1,
    # 3 (ns + nv) + 1), sum_i y_i d2 r_i over the window flattened then h. None: differenced instead.
    residual_hessian: Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None

    # Optional with it: hessian_slots (s,), the window slots outside which residual_hessian is zero, and
    # residual_hessian_slots(W, first, h, y) -> (K, s, s), the same numbers over those slots only (the solver's
    # Hessian takes them without the zeros around them).
    hessian_slots: np.ndarray | None = None

    # Optional with them: hessian_slot_pattern (s, s) bool, the entries of residual_hessian_slots that can be
    # nonzero (by the formula; the solver's Hessian leaves the others out). None: all of them.
    hessian_slot_pattern: np.ndarray | None = None

    # Optional: residual_pattern (nr, 3 (ns + nv) + 1) bool, the entries of dr/d(window, h) that can be nonzero (by
    # the formula; the solver's Jacobian leaves the others out). None: all of them.
    residual_pattern: np.ndarray | None = None

    # Optional: body_point_hessian(S (K, ns), offset (3,)) -> d2 position / dS2 (K, 3, ns, ns), the exact
    # curvature of body_point; keys, obstacles, corridors and reference costs then have exact Hessians.
    body_point_hessian: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None

    @abstractmethod
    def pre_start(self) -> np.ndarray:
        """Stage -1 values (ns + nv,)."""

    @abstractmethod
    def start(self) -> np.ndarray:
        """Node 0 state (ns,), nan where the state is free (a control at t = 0)."""

    @abstractmethod
    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Bounds of one stage (ns + nv,) each."""

    @abstractmethod
    def body_point(self, S: np.ndarray, offset: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World position (K, 3) of the body-frame point `offset` (3,) and d/dS (K, 3, ns)."""

    def position(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Body position (K, 3) and d/dS (K, 3, ns)."""
        return self.body_point(S, _ORIGIN)

    @abstractmethod
    def heading(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Yaw (K,) and d/dS (K, ns)."""

    @abstractmethod
    def velocity(self, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Body linear velocity (K, 3) over a step from its segment variables, d/dV (K, 3, nv)."""

    @abstractmethod
    def guess(self, positions: np.ndarray, headings: np.ndarray, h: float) -> np.ndarray:
        """Stages (N + 2, ns + nv) roughly following positions (N + 1, 3) and headings (N + 1,)."""

    @abstractmethod
    def replay(self, stages: np.ndarray, h: float, controls: tuple):
        """Trajectory of the plain simulator run with `controls` ((name, Curve) pairs) for N steps of h."""


@dataclass
class Block:
    """K instances of a local function over global variables index (K, w); rows bounded by lower/upper.

    _prune narrows index and fn to the window columns the rows depend on (`used`, positions in the original
    window `window`, which `window_fn` takes) and marks the columns entering nonlinearly (`curved`, positions
    in index). The solver's evaluations go through the original window: its Jacobian reaches the solver's matrix
    through an index map fixed once (_Assembly: no copy of the used columns' entries), its Hessian as the entries of
    the curved columns' pairs that can be nonzero (hessian_pairs, hessian_evaluator)."""

    index: np.ndarray
    fn: LocalFn
    lower: np.ndarray
    upper: np.ndarray
    labels: list[str]
    kind: str

    def __post_init__(self):
        self.rows = self.lower.shape[1]
        self.window, self.window_fn = self.index, self.fn
        self.used = np.arange(self.index.shape[1])
        self.curved = self.used
        self._hessian_plan = None

    def evaluator(self, X: np.ndarray, rows: np.ndarray, jacobian: np.ndarray,
                  gather: bool = True) -> Callable[[np.ndarray], None]:
        """x -> the window values at x taken into X (K, w), the rows written into rows (K, rows) and their Jacobian
        over the whole window into jacobian (K, rows, w): buffers of the caller's that outlive the evaluator (gather
        False: X holds the values at x already, taken by another block's evaluator over the same window). By the
        window function's `bind(X, rows, jacobian)` -> a call without arguments (a kernel bound to the buffers once)
        when it gives one, else its `into(X, rows, jacobian)` when it has one, else copied from its results."""
        bind = getattr(self.window_fn, "bind", None)
        run = None if bind is None else bind(X, rows, jacobian)
        if run is None:
            into = getattr(self.window_fn, "into", None)
            run = (partial(into, X, rows, jacobian) if into is not None
                   else partial(_copy_results, self.window_fn, X, rows, jacobian))
        window = self.window

        def evaluate(x: np.ndarray) -> None:
            x.take(window, out=X, mode="clip")  # the indices are in range: "clip" only skips a buffer
            run()
        return evaluate if gather else lambda x: run()

    def jacobian_pairs(self) -> np.ndarray:
        """The pairs (P, 2) of (row, used column: position in `used`) whose Jacobian entry can be nonzero: all of
        them, or those the window function's jacobian_pattern (rows, w) bool over the window marks."""
        pattern = getattr(self.window_fn, "jacobian_pattern", None)
        used = np.ones((self.rows, len(self.used)), bool) if pattern is None else pattern[:, self.used]
        return np.argwhere(used)

    def hessian_pairs(self) -> np.ndarray:
        """The pairs (P, 2) of curved columns (positions in `curved`) whose Hessian entry can be nonzero: an
        instance's share of the Hessian's COO pattern, in the order of hessian_evaluator's."""
        return self._plan()[3]

    def hessian_evaluator(self, X: np.ndarray, J: np.ndarray, weights: np.ndarray,
                          out: np.ndarray) -> Callable[[], None]:
        """A call writing sum_i weights[:, i] d2 fn_i at the window values X over hessian_pairs (K, P) flattened into
        out (K P,), for the current values of the buffers X, J (the window's Jacobian at X, for a block differenced
        by _local_hessian) and weights (K, rows), which outlive it. The exact Hessian's `bind(X, weights, H,
        positions)` -> a call without arguments writing into H (K, P) each instance's entries at the flat positions
        (P,) of its (s, s) Hessian, or for positions None all of it into H (K, s, s) (a kernel bound to the buffers
        once), serves when it gives one."""
        exact, width, positions, pairs = self._plan()
        K = len(X)
        if not len(pairs):
            return _nothing
        if exact is None:
            def differenced() -> None:
                used = J if len(self.used) == X.shape[1] else np.take(J, self.used, axis=2)
                out[...] = _local_hessian(self.fn, X[:, self.used], weights, self.curved, used).ravel()
            return differenced
        bind = getattr(exact, "bind", None)
        picked = out.reshape(K, width, width) if positions is None else out.reshape(K, len(positions))
        run = None if bind is None else bind(X, weights, picked, positions)
        if run is not None:
            return run
        if positions is None:
            def whole() -> None:
                out[...] = exact(X, weights).ravel()
            return whole

        def pick() -> None:
            exact(X, weights).reshape(K, width * width).take(positions, axis=1, out=picked, mode="clip")
        return pick

    def _plan(self):
        if self._hessian_plan is None:
            self._hessian_plan = self._plan_hessian()
        return self._hessian_plan

    def _plan_hessian(self):
        """(the exact Hessian to call, or None: differenced (over the curved columns, all pairs); the width s of its
        (s, s) block per instance; the flat positions of the pairs' entries in it, or None when they are all of them;
        the pairs). The window function's slot_hessian (slots, fn: X, weights -> (K, s, s), optionally the (s, s)
        pattern of its entries that can be nonzero) serves when the curved columns are among its slots, else its
        hessian over the whole window."""
        c = len(self.curved)
        exact = getattr(self.window_fn, "hessian", None)
        if exact is None or not c:
            return None, c, None, np.argwhere(np.ones((c, c), bool))
        curved = self.used[self.curved]
        slots, on_slots, *pattern = getattr(self.window_fn, "slot_hessian", (None, None))
        if slots is not None and np.all(np.isin(curved, slots)):
            exact, columns = on_slots, slots
        else:
            columns, pattern = np.arange(self.window.shape[1]), []
        at, w = np.searchsorted(columns, curved), len(columns)
        nonzero = pattern[0][at[:, None], at] if pattern and pattern[0] is not None else np.ones((c, c), bool)
        pairs = np.argwhere(nonzero)
        positions = at[pairs[:, 0]] * w + at[pairs[:, 1]]
        return exact, w, (None if len(positions) == w * w else positions), pairs


def _copy_results(fn: LocalFn, X: np.ndarray, rows: np.ndarray, jacobian: np.ndarray) -> None:
    """fn's rows and Jacobian at X copied into rows and jacobian (a window function without `into`)."""
    rows[...], jacobian[...] = fn(X)


def _nothing() -> None:
    """The Hessian of a block without curved pairs: nothing to write."""


def _local_hessian(fn: LocalFn, X: np.ndarray, weights: np.ndarray, cols: np.ndarray, J0: np.ndarray) -> np.ndarray:
    """sum_i weights[:, i] d2 fn_i / dX2 restricted to the columns `cols` (K, c, c), by forward differences
    of the exact Jacobian J0 at X (the other columns enter linearly: their Hessian rows are zero). A block with an
    exact `fn.hessian(X, weights) -> (K, w, w)` is used instead. Perturbed copies of X go through fn
    together, up to _BATCH instances a call (instance i of copy a is row a K + i: every LocalFn accepts any
    multiple of its K rows)."""
    exact = getattr(fn, "hessian", None)
    if exact is not None:
        return exact(X, weights)[:, cols[:, None], cols]
    K, c = len(X), len(cols)
    step = 1.5e-8 * np.maximum(1.0, np.abs(X[:, cols]))
    wt = weights[:, None, :]
    base = (wt @ J0)[:, 0, cols]
    H = np.empty((K, c, c))
    per_call = max(1, _BATCH // K)
    for a0 in range(0, c, per_call):
        a = np.arange(a0, min(c, a0 + per_call))
        Xp = np.repeat(X[None], len(a), axis=0)
        Xp[np.arange(len(a)), :, cols[a]] += step[:, a].T
        _, Jp = fn(Xp.reshape(len(a) * K, -1))
        G = (wt @ Jp.reshape(len(a), K, *Jp.shape[1:]))[:, :, 0, cols]
        H[:, :, a] = np.moveaxis((G - base) / step[:, a].T[:, :, None], 0, 2)
    return 0.5 * (H + np.swapaxes(H, 1, 2))


_BATCH = 1000  # instances per batched call of a block's function while differencing
COLD_MU = 1e-3  # first barrier parameter from the key path or an earlier result (docs/shots.md, "Barrier")


class SparsityPattern:
    """A fixed COO pattern (rows, cols, duplicates allowed) turned into CSR once; each call only sums and
    reorders the data (the sparse structure of a shot never changes between iterations)."""

    def __init__(self, rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int]):
        key = rows.astype(np.int64) * shape[1] + cols
        unique, self.inverse = np.unique(key, return_inverse=True)
        self.indices = (unique % shape[1]).astype(np.int32)
        self.indptr = np.searchsorted(unique // shape[1], np.arange(shape[0] + 1)).astype(np.int32)
        self.size, self.shape = len(unique), shape
        # without duplicates the sum is a reordering: the entry of each CSR position
        self.order = np.argsort(self.inverse) if len(unique) == len(key) else None
        self.inverse = np.ascontiguousarray(self.inverse, np.int64)
        self._sum = None if _sparse.LIB is None or self.order is not None else _sparse.ScatterAdd(self.inverse,
                                                                                                  self.size)

    def values(self, data: np.ndarray) -> np.ndarray:
        """The COO data summed into the CSR entries (in CSR order, each entry's data in COO order): in C
        (native/sparse_sum.c) when the kernels are built, else values_numpy, its twin."""
        if self.order is not None:
            return data[self.order]
        if self._sum is None:
            return self.values_numpy(data)
        return self._sum(data)

    def values_numpy(self, data: np.ndarray) -> np.ndarray:
        """values by np.bincount."""
        if self.order is not None:
            return data[self.order]
        return np.bincount(self.inverse, weights=data, minlength=self.size)

    def matrix(self, data: np.ndarray) -> sp.csr_matrix:
        return sp.csr_matrix((self.values(data), self.indices, self.indptr), shape=self.shape)

    def gather(self, source: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """raw -> values(raw[source]) with the two index maps made one: for COO data picked out of a larger raw
        array (source: each COO entry's position in raw)."""
        picked = self.picked(source)
        if picked is not None:
            return lambda raw: raw[picked]
        return lambda raw: np.bincount(self.inverse, weights=raw[source], minlength=self.size)

    def picked(self, source: np.ndarray) -> np.ndarray | None:
        """Without duplicates, the position in raw of each CSR entry (gather's values are raw[picked]); else None."""
        return None if self.order is None else source[self.order]

    def fixed(self, values: Callable[..., np.ndarray]) -> nlpmod.FixedPattern:
        """This pattern for the solver, with values(*args) -> COO data."""
        return nlpmod.FixedPattern(self.indices, self.indptr, self.shape, lambda *args: self.values(values(*args)),
                                   values, summed=self.inverse)


class _LastPoint:
    """Whether x is the point of the last evaluation, by its bytes (equal bytes: the same inputs bit for bit; a
    comparison of bytes costs a tenth of np.array_equal's). `same` keeps the bytes it read: `remember` of the array it
    was just asked about (unchanged in between: an evaluation only reads x) takes them rather than reading x again."""

    def __init__(self):
        self._bytes: bytes | None = None
        self._asked: tuple[np.ndarray, bytes] | None = None  # the array `same` read last, and its bytes

    def same(self, x: np.ndarray) -> bool:
        data = x.tobytes()
        self._asked = (x, data)
        return data == self._bytes

    def remember(self, x: np.ndarray) -> None:
        asked = self._asked
        self._bytes = asked[1] if asked is not None and asked[0] is x else x.tobytes()
        self._asked = None


class QuadraticCosts:
    """The effort and smoothness costs of every channel as one term over x, h = x[h_index]:

        f = h sum_i we_i e_i^2 + (1 / h) sum_j ws_j d_j^2,
        e_i = (x[ce_i] - trim_i) / se_i,  d_j = (x[c1_j] - x[c0_j]) / ss_j

    (effort: a control's squared distance from its trim over the step; smoothness: its squared change per step over
    the step). Quadratic in the controls (their Hessian is constant up to the factor h or 1 / h, its entries with h
    linear in e and d): the value, gradient and Hessian of all channels are a few vector operations on index maps made
    once. The Hessian's COO pattern (hess_rows, hess_cols) always holds (h, h) and the entries with h, also when
    the step is fixed (the pattern does not depend on the bounds)."""

    def __init__(self, effort: list, smooth: list, h_index: int, n: int):
        """effort: [(columns (K,), trims (K,), scale, weight)] and smooth: [(columns of u_k (K,), of u_k+1 (K,), scale,
        weight)], one entry a channel."""
        def joined(parts: list, i: int) -> np.ndarray:
            return np.concatenate([np.zeros(0)] + [np.broadcast_to(p[i], len(p[0])) for p in parts])

        self.ce, self.trim, self.se, self.we = (joined(effort, i) for i in range(4))
        self.c0, self.c1, self.ss, self.ws = (joined(smooth, i) for i in range(4))
        self.ce, self.c0, self.c1 = (a.astype(np.int64) for a in (self.ce, self.c0, self.c1))
        self.h_index, self.n = h_index, n
        he, hs = np.full(len(self.ce), h_index), np.full(len(self.c0), h_index)
        self.grad_cols = np.concatenate([self.ce, self.c1, self.c0, [h_index]])
        self.hess_rows = np.concatenate([self.ce, self.ce, he, self.c0, self.c1, self.c0, self.c1, self.c0, hs,
                                         self.c1, hs, [h_index]])
        self.hess_cols = np.concatenate([self.ce, he, self.ce, self.c0, self.c1, self.c1, self.c0, hs, self.c0,
                                         hs, self.c1, [h_index]])
        self.ke, self.ks = 2 * self.we / self.se, 2 * self.ws / self.ss  # d/de of we e^2, scaled by 1 / se
        self.kee, self.kss = self.ke / self.se, self.ks / self.ss
        self._hessian_kernel = None if _quadratic.LIB is None else _quadratic.QuadraticHessian(self.kee, self.ke,
                                                                                              self.kss, self.ks)
        self._point, self._last = _LastPoint(), ()
        # the gradient's weights at grad_cols, refilled each call: h ke e, ks d / h, -ks d / h, then the h entry
        self._grad_weights = np.empty(len(self.grad_cols))
        E, S = len(self.ce), len(self.c0)
        self._g_effort, self._g_smooth, self._g_minus = (self._grad_weights[a:a + size]
                                                         for a, size in ((0, E), (E, S), (E + S, S)))

    def _at(self, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray, float, float]:
        """(h, e, d, sum we e^2, sum ws d^2) at x, kept for the last x (the solver asks for the value at a trial point,
        then for the gradient and Hessian there)."""
        if not self._point.same(x):
            h, e, d = float(x[self.h_index]), (x[self.ce] - self.trim) / self.se, (x[self.c1] - x[self.c0]) / self.ss
            self._last = (h, e, d, float(np.dot(self.we * e, e)), float(np.dot(self.ws * d, d)))
            self._point.remember(x)
        return self._last

    def value(self, x: np.ndarray) -> float:
        h, _, _, effort, smooth = self._at(x)
        return h * effort + smooth / h

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """df/dx (n,)."""
        h, e, d, effort, smooth = self._at(x)
        np.multiply(h, self.ke, out=self._g_effort)
        self._g_effort *= e
        np.multiply(self.ks, d, out=self._g_smooth)
        self._g_smooth /= h
        np.negative(self._g_smooth, out=self._g_minus)
        self._grad_weights[-1] = effort - smooth / (h * h)
        return np.bincount(self.grad_cols, weights=self._grad_weights, minlength=self.n)

    def hessian_into(self, x: np.ndarray, scale: float, out: np.ndarray) -> None:
        """scale d2f/dx2 as COO data in the pattern (hess_rows, hess_cols), written into out (float64, contiguous): the
        effort's (e, e), (e, h), (h, e) entries, the smoothness' (c0, c0), (c1, c1), (c0, c1), (c1, c0), (c0, h),
        (h, c0), (c1, h), (h, c1), then (h, h). In C (native/quadratic_costs.c: one pass) when the kernels are built,
        else by hessian_into_numpy (the same products in the same order)."""
        if self._hessian_kernel is None:
            self.hessian_into_numpy(x, scale, out)
            return
        h, e, d, _, smooth = self._at(x)
        self._hessian_kernel(e, d, scale, h, out)
        out[-1] = _step_curvature(scale, h, smooth)

    def hessian_into_numpy(self, x: np.ndarray, scale: float, out: np.ndarray) -> None:
        """hessian_into by numpy's vector operations (its twin)."""
        h, e, d, _, smooth = self._at(x)
        E, S = len(self.ce), len(self.c0)
        effort, smoothness = out[:3 * E].reshape(3, E), out[3 * E:-1].reshape(8, S)
        np.multiply(scale * h, self.kee, out=effort[0])
        np.multiply(scale * self.ke, e, out=effort[1])
        effort[2] = effort[1]
        np.multiply(scale / h, self.kss, out=smoothness[0])
        np.multiply((scale / (h * h)) * self.ks, d, out=smoothness[4])
        for first in (0, 4):  # a, a, -a, -a and b, b, -b, -b
            smoothness[first + 1] = smoothness[first]
            np.negative(smoothness[first], out=smoothness[first + 2])
            smoothness[first + 3] = smoothness[first + 2]
        out[-1] = _step_curvature(scale, h, smooth)


def _step_curvature(scale: float, h: float, smooth: float) -> float:
    """The (h, h) entry of scale d2f/dx2: scale d2/dh2 (smooth / h) (the effort is linear in h)."""
    return 2 * scale * smooth / h**3


class _Assembly:
    """Blocks over n variables evaluated together: their rows, the Jacobian's COO data (pattern: `rows`, `cols`: each
    block's patterned entries) and the Hessian's (`hess_rows`, `hess_cols`: each block's hessian_pairs, then the
    quadratic costs' pattern). A cost assembly may carry the QuadraticCosts: they add to total, column_sums and
    hessian_writer's (not to the rows).

    The rows and the window Jacobians are computed once per point x and kept for the last one: the solver asks for
    the rows at trial points and for the Jacobian and the Hessian at the iterate (an accepted trial). Each block
    writes them into its part of two buffers made once (the rows, then copied for the caller; the window Jacobians
    one after the other: raw_jacobian). The Jacobian's COO entries are the window Jacobians at `source`: the solver's
    CSR values are one gather of them (_build_nlp, SparsityPattern.gather)."""

    def __init__(self, blocks: list[Block], n: int, quadratic: QuadraticCosts | None = None):
        self.blocks, self.n, self.quadratic = blocks, n, quadratic
        self.offsets = np.cumsum([0] + [b.index.shape[0] * b.rows for b in blocks])
        self.m = int(self.offsets[-1])
        rows, cols, source, hr, hc = ([np.zeros(0, int)] for _ in range(5))
        raw = [0]  # window Jacobian entries of the blocks before
        for b, off in zip(blocks, self.offsets):
            K, w = b.index.shape
            pairs = b.jacobian_pairs()
            row = off + np.arange(K)[:, None] * b.rows + pairs[:, 0]
            rows.append(row.ravel())
            cols.append(b.index[:, pairs[:, 1]].ravel())
            source.append((raw[-1] + (row - off) * b.window.shape[1] + b.used[pairs[:, 1]]).ravel())
            raw.append(raw[-1] + K * b.rows * b.window.shape[1])
            sub, pairs = b.index[:, b.curved], b.hessian_pairs()
            hr.append(sub[:, pairs[:, 0]].ravel())
            hc.append(sub[:, pairs[:, 1]].ravel())
        self.hessian_offsets = np.cumsum([0] + [len(part) for part in hr[1:]])
        if quadratic is not None:
            hr.append(quadratic.hess_rows)
            hc.append(quadratic.hess_cols)
        self.rows, self.cols, self.source = np.concatenate(rows), np.concatenate(cols), np.concatenate(source)
        self.hess_rows, self.hess_cols = np.concatenate(hr), np.concatenate(hc)
        self.lower = np.concatenate([np.zeros(0)] + [b.lower.ravel() for b in blocks])
        self.upper = np.concatenate([np.zeros(0)] + [b.upper.ravel() for b in blocks])
        self._values, self._raw_jacobian = np.empty(self.m), np.empty(raw[-1])
        self._r = [self._values[off:off + b.lower.size].reshape(b.lower.shape) for b, off in zip(blocks, self.offsets)]
        self._J = [self._raw_jacobian[a:z].reshape(*b.lower.shape, b.window.shape[1])
                   for b, a, z in zip(blocks, raw, raw[1:])]
        self._X, gathers = _window_buffers(blocks)  # each block's window values at the last point
        self._weights = np.empty(self.m)  # the Hessian's weights of the rows, block by block as _values
        self._w = [self._weights[off:off + b.lower.size].reshape(b.lower.shape) for b, off in zip(blocks, self.offsets)]
        self._evaluators = [b.evaluator(X, r, J, gather)
                            for b, X, r, J, gather in zip(blocks, self._X, self._r, self._J, gathers)]
        self._last = _LastPoint()

    def _at(self, x: np.ndarray) -> None:
        x = np.asarray(x, dtype=np.float64)  # the blocks' windows take into float64 buffers
        if not self.blocks or self._last.same(x):
            return  # without blocks (costs of the quadratic term only) nothing depends on x
        for evaluate in self._evaluators:
            evaluate(x)
        self._last.remember(x)

    def values(self, x: np.ndarray) -> np.ndarray:
        """The rows at x (a fresh array: the solver keeps it)."""
        self._at(x)
        return self._values.copy()

    def total(self, x: np.ndarray) -> float:
        """Sum of the rows (block by block: a cost)."""
        self._at(x)
        total = float(sum(_sum(v, axis=None) for v in self._r))  # np.sum's reduction without its wrapper
        return total if self.quadratic is None else total + self.quadratic.value(x)

    def raw_jacobian(self, x: np.ndarray) -> np.ndarray:
        """The blocks' window Jacobians flattened one after the other (the assembly's buffer: valid until the next
        evaluation at another point)."""
        self._at(x)
        return self._raw_jacobian

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        """The Jacobian's COO data (pattern rows, cols)."""
        return self.raw_jacobian(x)[self.source]

    def column_sums(self, x: np.ndarray) -> np.ndarray:
        """The gradient of the sum of the rows."""
        sums = np.bincount(self.cols, weights=self.jacobian(x), minlength=self.n)
        return sums if self.quadratic is None else sums + self.quadratic.gradient(x)

    @property
    def hessian_size(self) -> int:
        return len(self.hess_rows)

    def hessian_writer(self, out: np.ndarray) -> Callable[[np.ndarray, np.ndarray | None, float | None], None]:
        """(x, y, scale) -> None writing the COO data (pattern hess_rows, hess_cols) of sum_i y_i d2 row_i (y None:
        every weight 1), times scale when given, then the quadratic costs', into out (hessian_size,), a buffer that
        outlives the writer: the blocks' Hessians bound to their parts of it once (Block.hessian_evaluator)."""
        ends = self.hessian_offsets
        evaluators = [b.hessian_evaluator(X, J, w, out[a:z])
                      for b, X, J, w, a, z in zip(self.blocks, self._X, self._J, self._w, ends, ends[1:])]
        blocks_part, quadratic_part = out[:ends[-1]], out[ends[-1]:]

        def write(x: np.ndarray, y: np.ndarray | None, scale: float | None) -> None:
            self._at(x)
            if y is None:
                self._weights.fill(1.0)
            else:
                np.copyto(self._weights, y)
            for evaluate in evaluators:
                evaluate()
            if scale is not None and len(blocks_part):  # a vehicle's costs: often the quadratic term alone
                np.multiply(blocks_part, scale, out=blocks_part)
            if self.quadratic is not None:
                self.quadratic.hessian_into(x, 1.0 if scale is None else scale, quadratic_part)
        return write


def _window_buffers(blocks: list[Block]) -> tuple[list[np.ndarray], list[bool]]:
    """Each block's buffer (K, w) of its window's values, one shared by the blocks over the same window (the obstacles'
    all take the same stages), and whether the block's evaluator takes the values into it: the first of them, whose
    evaluator runs before the others'."""
    buffers, gathers, made = [], [], {}
    for b in blocks:
        window = (b.window.shape, b.window.dtype.str, b.window.tobytes())
        gathers.append(window not in made)
        buffers.append(made.setdefault(window, np.empty(b.window.shape)))
    return buffers, gathers


def _at_height(dist, z: float):
    """The distance function evaluated with every point moved to height z (planar vehicles)."""
    def distance(p, second=False):
        q = np.array(p, dtype=float)
        q[:, 2] = z
        d, g, *H = dist(q, second)
        g = g.copy()
        g[:, 2] = 0.0
        if not second:
            return d, g
        H = H[0].copy()
        H[:, 2, :] = H[:, :, 2] = 0.0
        return d, g, H
    return distance


def _with_hessian(fn: LocalFn, hessian) -> LocalFn:
    """fn with its exact `hessian(X, weights) -> (K, w, w)` attached (None: fn unchanged, differenced)."""
    if hessian is not None:
        fn.hessian = hessian
    return fn


def _writing(into: Callable[[np.ndarray, np.ndarray, np.ndarray], None], rows: int) -> LocalFn:
    """The LocalFn of `into(X, r (K, rows), J (K, rows, w))`, which writes a block's rows and Jacobian into given
    arrays: fresh arrays filled by into, with into attached (Block.evaluator writes into the assembly's buffers)."""
    def fn(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        r, J = np.empty((len(X), rows)), np.empty((len(X), rows, X.shape[1]))
        into(X, r, J)
        return r, J
    fn.into = into
    return fn


def _columns(components) -> slice | np.ndarray:
    """Indices of components as a slice when they are consecutive (indexing with it gives a view), else an array."""
    c = np.asarray(components, int)
    if len(c) and np.array_equal(c, np.arange(c[0], c[0] + len(c))):
        return slice(int(c[0]), int(c[0]) + len(c))
    return c


_PI, _TWO_PI = np.array(np.pi), np.array(2 * np.pi)  # 0-d operands: the numbers of Python floats, a cheaper call


def _wrap(a: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """The angle a in [-pi, pi) ((a + pi) mod 2 pi - pi), into out when given."""
    return np.subtract(np.remainder(np.add(a, _PI, out=out), _TWO_PI, out=out), _PI, out=out)


def _wrap_float(a: float) -> float:
    """_wrap of one Python float: the same operations (Python's % is numpy's remainder: fmod, then + 2 pi when the
    signs differ), the same number."""
    return (a + math.pi) % (2 * math.pi) - math.pi


class _BodyPoint:
    """The first nr position components of the body point `offset` (3,), their Jacobian and curvature over the stage
    state, through the dynamics' body_point and body_point_hessian (any dynamics; the reference of _PlanarPoint)."""

    def __init__(self, dyn: StageDynamics, nr: int, offset: np.ndarray = _ORIGIN):
        self.dyn, self.nr, self.offset = dyn, nr, offset

    def point(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Position (K, nr) and d/dS (K, nr, ns)."""
        p, dp = self.dyn.body_point(S, self.offset)
        return p[:, :self.nr], dp[:, :self.nr]

    def curvature(self, S: np.ndarray) -> np.ndarray:
        """d2 position / dS2 (K, nr, ns, ns)."""
        return self.dyn.body_point_hessian(S, self.offset)[:, :self.nr]

    def rows(self, S: np.ndarray, target: np.ndarray, r: np.ndarray, J: np.ndarray) -> None:
        """position - target into r (K, nr), its Jacobian into J (K, nr, ns)."""
        p, dp = self.point(S)
        np.subtract(p, target, out=r)
        J[...] = dp

    def weighted_curvature(self, S: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """sum_i weights[:, i] d2 position_i / dS2 (K, ns, ns)."""
        return np.einsum("ki,kiab->kab", weights, self.curvature(S))


class _PlanarPoint:
    """_BodyPoint of a planar vehicle whose body points are rigid in the plane (its body_plane(offset) gives
    (ox, oy)): p = (x + c ox - s oy, y + s ox + c oy), c, s = cos th, sin th, (th, x, y) = S[:, :3], only th entering
    nonlinearly, per instance in Python floats. A key is one instance: a dozen float operations in place of a dozen
    numpy calls, the same operations in the same order as CarDynamics.body_point and planar_point_hessian (a - b is
    a + (-b)), the same numbers where math.cos and np.cos agree (both glibc's here)."""

    def __init__(self, ox: float, oy: float):
        self.ox, self.oy = ox, oy

    def _instances(self, S: np.ndarray) -> list[tuple[float, float, float, float, float, float]]:
        """Per instance (p_x, p_y, dp_x/dth, dp_y/dth, d2p_x/dth2, d2p_y/dth2)."""
        ox, oy = self.ox, self.oy
        out = []
        for th, x, y in S[:, :3].tolist():
            c, s = math.cos(th), math.sin(th)
            out.append((x + c * ox - s * oy, y + s * ox + c * oy, -(s * ox) - c * oy, c * ox - s * oy,
                        c * -ox + s * oy, s * -ox + c * -oy))
        return out

    @staticmethod
    def _jacobian(at: list, ns: int) -> list[float]:
        """d(p_x, p_y)/dS of the instances `at` (_instances) flattened: rows over (th, x, y, the other ns - 3 state
        components)."""
        rest = (0.0,) * (ns - 3)
        return [v for a in at for v in (a[2], 1.0, 0.0, *rest, a[3], 0.0, 1.0, *rest)]

    def point(self, S: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        at = self._instances(S)
        K, ns = S.shape
        return np.array([a[:2] for a in at]).reshape(K, 2), np.array(self._jacobian(at, ns)).reshape(K, 2, ns)

    def curvature(self, S: np.ndarray) -> np.ndarray:
        H = np.zeros((len(S), 2, S.shape[1], S.shape[1]))
        H[:, :, 0, 0] = [a[4:] for a in self._instances(S)]
        return H

    def rows(self, S: np.ndarray, target: np.ndarray, r: np.ndarray, J: np.ndarray) -> None:
        """Written through .flat (any layout of the caller's buffers: a flat list is the cheapest to write)."""
        tx, ty = target.tolist()
        at = self._instances(S)
        r.flat = [v for a in at for v in (a[0] - tx, a[1] - ty)]
        J.flat = self._jacobian(at, S.shape[1])

    def weighted_curvature(self, S: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """The (th, th) entry 0 + w_x d2p_x + w_y d2p_y: the sum of _BodyPoint's einsum, from its zero."""
        H = np.zeros((len(S), S.shape[1], S.shape[1]))
        H[:, 0, 0] = [0.0 + wx * a[4] + wy * a[5] for (wx, wy), a in zip(weights.tolist(), self._instances(S))]
        return H


@dataclass
class Transcription:
    """A shot transcribed for one StageDynamics: `nlp`, `x0(...)` and `solve(...)`."""

    shot: Shot
    dyn: StageDynamics
    soft_keys: bool = False
    blocks: list[Block] = field(default_factory=list)
    costs: list[Block] = field(default_factory=list)

    def __post_init__(self):
        shot, dyn = self.shot, self.dyn
        self.N = shot.steps
        self.nw = dyn.ns + dyn.nv
        self.n = (self.N + 2) * self.nw + 1
        self.h_index = self.n - 1
        self._bounds()
        self._dynamics_block()
        self._key_blocks()
        self._obstacle_blocks()
        self._cost_blocks()
        if self.soft_keys:
            self._soften_keys()
        self._build_nlp()

    def _soften_keys(self, weight: float = 1.0):
        """Turn the key rows into the penalty weight * (distance outside their bounds)^2 (continuously
        differentiable; weight 1 per m^2 or rad^2 against effort terms of order 1, heavier weights stall the
        line search): the dynamics, bounds and obstacles stay hard, so the solve shows how close each key
        can come (used to name the key that makes a shot infeasible, and as a restart point)."""
        keep = []
        for b in self.blocks:
            if b.kind[0] != "key":
                keep.append(b)
                continue

            def fn(X, b=b):
                r, J = b.fn(X)
                d = r - np.clip(r, b.lower, b.upper)
                val = weight * np.sum(d * d, axis=1)
                return val[:, None], (2 * weight * np.einsum("kr,krw->kw", d, J))[:, None]
            self.costs.append(Block(b.index, fn, np.zeros((len(b.index), 1)), np.zeros((len(b.index), 1)),
                                    b.labels, b.kind))
        self.key_penalties = [b for b in self.costs if b.kind[0] == "key"]
        self.blocks = keep

    # -- layout ---------------------------------------------------------------------------------
    def stage_index(self, k, part: str = "all") -> np.ndarray:
        """Global indices of stage k (array of k allowed): 'state', 'segment' or 'all' -> (..., width)."""
        k = np.asarray(k)
        base = (k + 1)[..., None] * self.nw
        if part == "state":
            return base + np.arange(self.dyn.ns)
        if part == "segment":
            return base + self.dyn.ns + np.arange(self.dyn.nv)
        return base + np.arange(self.nw)

    def stages(self, x: np.ndarray) -> np.ndarray:
        return x[:-1].reshape(self.N + 2, self.nw)

    def _bounds(self):
        shot, dyn, N = self.shot, self.dyn, self.N
        lo, hi = dyn.bounds()
        names = list(dyn.state_names) + list(dyn.segment_names)
        for name, a, b in shot.bounds:
            channel = next((c for c in dyn.channels if c.name == name), None)
            if channel is None:
                raise ShotError(f"{shot.source}: shot {shot.name!r}: bounds name unknown control {name!r}; "
                                f"controls: {', '.join(c.name for c in dyn.channels)}")
            j = channel.index + (dyn.ns if channel.where == "segment" else 0)
            lo[j], hi[j] = max(lo[j], a / channel.unit), min(hi[j], b / channel.unit)
            if lo[j] > hi[j]:
                raise ShotError(f"{shot.source}: shot {shot.name!r}: bounds of {name!r} [{a}, {b}] do not "
                                f"overlap the vehicle's limits of {names[j]}")
        xl = np.tile(lo, N + 2)
        xu = np.tile(hi, N + 2)
        pre = dyn.pre_start()
        xl[:self.nw] = xu[:self.nw] = pre
        s0 = dyn.start()
        fixed = ~np.isnan(s0)
        i0 = self.stage_index(0, "state")
        xl[i0[fixed]] = xu[i0[fixed]] = s0[fixed]
        iN = self.stage_index(N, "segment")
        xl[iN] = xu[iN] = 0.0
        if shot.free_time:
            h_lo, h_hi = shot.dt_min, shot.dt_max
        else:
            h_lo = h_hi = shot.dt
        self.x_lower = np.concatenate([xl, [h_lo]])
        self.x_upper = np.concatenate([xu, [h_hi]])

    # -- blocks ---------------------------------------------------------------------------------
    def _dynamics_block(self):
        dyn, N = self.dyn, self.N
        k = np.arange(N)
        window = np.concatenate([self.stage_index(k - 1), self.stage_index(k), self.stage_index(k + 1),
                                 np.full((N, 1), self.h_index)], axis=1)
        first = k == 0
        nw = self.nw

        def firsts(count: int) -> np.ndarray:  # batched copies of the N steps while differencing
            return first if count == N else np.resize(first, count)

        def fn(X):
            return dyn.window_residual(X, firsts(len(X)))

        def into(X, r, J):
            dyn.window_residual(X, first, (r, J))
        fn.into = into
        fn.bind = lambda X, r, J: dyn.window_residual_call(X, first, (r, J))

        if dyn.residual_hessian is not None:
            def hessian(X, weights):
                return dyn.residual_hessian(X[:, :-1].reshape(-1, 3, nw), firsts(len(X)), X[:, -1], weights)
            fn.hessian = hessian
            if dyn.hessian_slots is not None:
                def on_slots(X, weights):
                    return dyn.residual_hessian_slots(X[:, :-1].reshape(-1, 3, nw), firsts(len(X)), X[:, -1],
                                                      weights)
                on_slots.bind = lambda X, weights, out, positions: dyn.residual_hessian_slots_call(X, first, weights,
                                                                                                  out, positions)
                fn.slot_hessian = (np.asarray(dyn.hessian_slots), on_slots, dyn.hessian_slot_pattern)
        if dyn.residual_pattern is not None:
            fn.jacobian_pattern = dyn.residual_pattern

        r0, _, _ = dyn.residual(np.zeros((1, 3, nw)) + 0.1, np.array([True]), np.array([0.1]))
        nr = r0.shape[1]
        labels = [f"step {i} dynamics" for i in range(N)]
        self.blocks.append(Block(window, fn, np.zeros((N, nr)), np.zeros((N, nr)), labels, "dynamics"))

    def _node_block(self, steps: np.ndarray, value: Callable, lower, upper, labels, kind, extra_segment=False):
        """A block over node states (and the arriving step's segment variables when extra_segment)."""
        index = self.stage_index(steps, "state")
        if extra_segment:
            index = np.concatenate([index, self.stage_index(steps - 1, "segment")], axis=1)
        self.blocks.append(Block(index, value, np.asarray(lower, float), np.asarray(upper, float), labels, kind))

    def _position_rows(self) -> np.ndarray:
        """The position components the geometric rows keep (x, y for a planar vehicle): an index array (indexing with
        it costs a third less than with a list)."""
        return np.arange(2 if self.dyn.planar else 3)

    def _key_point(self) -> _BodyPoint | _PlanarPoint:
        """The body origin's position rows (StageDynamics.position's) for the key blocks: in Python floats when the
        dynamics puts its body points rigidly in the plane (body_plane: the car), else through body_point (any
        dynamics)."""
        plane = getattr(self.dyn, "body_plane", None)
        offsets = None if plane is None else plane(_ORIGIN)
        nr = len(self._position_rows())
        if offsets is None or nr != 2:
            return _BodyPoint(self.dyn, nr)
        return _PlanarPoint(*offsets)

    def _key_blocks(self):
        """Per key, a one-instance block of each of its conditions (position, heading, velocity), in that order. Each
        block's function writes its rows and Jacobian into the assembly's buffers (`into`): a key is a handful of
        numbers, its cost is the number of numpy calls (the position's through _key_point, the heading wrapped in
        Python floats)."""
        dyn = self.dyn
        nr = len(self._position_rows())  # the position's first nr components
        point = self._key_point()
        curvature = self._curvature
        for key in self.shot.keys:
            step = np.array([key.step])
            if key.position is not None:
                target = np.asarray(key.position, float)[:nr]
                if key.radius > 0:
                    def into(S, r, J, target=target):
                        p, dp = point.point(S)
                        d = p - target
                        r[:, 0] = np.sum(d * d, 1)
                        J[:, 0] = 2 * np.einsum("ki,kij->kj", d, dp)

                    def hessian(S, weights, target=target):  # 2 (J^T J + sum_i d_i d2p_i)
                        p, J = point.point(S)
                        d = p - target
                        H = np.einsum("kia,kib->kab", J, J) + np.einsum("ki,kiab->kab", d, point.curvature(S))
                        return 2 * weights[:, :1, None] * H
                    self._node_block(step, _with_hessian(_writing(into, 1), hessian if curvature else None),
                                     [[-np.inf]], [[key.radius**2]], [key.label], ("key", key, "position"))
                else:
                    def into(S, r, J, target=target):
                        point.rows(S, target, r, J)
                    z = np.zeros((1, nr))
                    self._node_block(step, _with_hessian(_writing(into, nr), point.weighted_curvature if curvature
                                                         else None), z, z, [key.label], ("key", key, "position"))
            if key.heading is not None:
                def into(S, r, J, target=float(key.heading)):
                    a, da = dyn.heading(S)
                    r[:, 0] = [_wrap_float(v - target) for v in a.tolist()]
                    J[:, 0] = da
                self._node_block(step, _writing(into, 1), [[0.0]], [[0.0]], [key.label], ("key", key, "heading"))
            if key.velocity is not None:
                comps = _columns(dyn.velocity_components)
                target = np.asarray(key.velocity, float)[comps]
                ns = dyn.ns

                def into(X, r, J, target=target, comps=comps):
                    v, dv = dyn.velocity(X[:, ns:])
                    np.subtract(v[:, comps], target, out=r)
                    J[:, :, :ns] = 0.0
                    J[:, :, ns:] = dv[:, comps]
                z = np.zeros((1, len(target)))
                self._node_block(step, _writing(into, len(target)), z, z, [key.label], ("key", key, "velocity"),
                                 extra_segment=True)

    @property
    def _curvature(self) -> bool:
        """Whether the dynamics gives body_point's exact curvature (exact Hessians of the geometric blocks)."""
        return self.dyn.body_point_hessian is not None

    def _point_hessian(self, S: np.ndarray) -> np.ndarray:
        """d2 position / dS2 (K, 3, ns, ns)."""
        return self.dyn.body_point_hessian(S, _ORIGIN)

    def _sphere_points(self, S: np.ndarray, spheres: np.ndarray, second: bool = False) -> tuple[np.ndarray, ...]:
        """Centres of the body spheres (K, m, 3), d/dS (K, m, 3, ns) and with second d2/dS2 (K, m, 3, ns, ns),
        remembered for the last S (every obstacle block, and its Hessian, asks at the same stages)."""
        last = getattr(self, "_spheres_at", None)
        if last is None or not np.array_equal(last[0], S):
            P, J = zip(*(self.dyn.body_point(S, c) for c in spheres[:, :3]))
            last = self._spheres_at = [S.copy(), np.stack(P, 1), np.stack(J, 1), None]
        if second and last[3] is None:
            last[3] = np.stack([self.dyn.body_point_hessian(S, c) for c in spheres[:, :3]], 1)
        return tuple(last[1:4] if second else last[1:3])

    def _planar_clearance(self, ob, spheres: np.ndarray) -> _rows.PlanarClearance | None:
        """The C clearance rows of the body spheres against the obstacle, when the kernels are built and the
        dynamics puts its body points in the plane (body_plane); else None (numpy, obstacles.py)."""
        plane = getattr(self.dyn, "body_plane", None)
        if _rows.LIB is None or plane is None:
            return None
        offsets = [plane(c) for c in spheres[:, :3]]
        if any(o is None for o in offsets):
            return None
        return _rows.PlanarClearance(np.array(offsets), *shape_parameters(ob), *obstacle_frame(ob))

    def _sphere_clearance(self, ob, spheres: np.ndarray) -> LocalFn:
        """The body spheres' distances to the obstacle over the stage state, through obstacles.py (numpy), with
        their exact Hessian when the dynamics gives body_point_hessian."""
        dist = distance_function(ob)
        if self.dyn.planar:  # a ground vehicle meets the obstacle's cross-section at the obstacle's centre height
            dist = _at_height(dist, float(ob.position[2]))

        def fn(S):  # every sphere's centre through one distance call
            P, J = self._sphere_points(S, spheres)
            K, m = P.shape[:2]
            d, g = dist(P.reshape(K * m, 3))
            return d.reshape(K, m), np.einsum("kmi,kmij->kmj", g.reshape(K, m, 3), J)

        def hessian(S, weights):  # sum_m w_m (J_m^T H_m J_m + sum_i g_mi d2p_mi)
            P, J, D2 = self._sphere_points(S, spheres, True)
            K, m = P.shape[:2]
            _, g, H = dist(P.reshape(K * m, 3), True)
            wH = weights[:, :, None, None] * H.reshape(K, m, 3, 3)
            wg = weights[:, :, None] * g.reshape(K, m, 3)
            return np.sum(np.swapaxes(J, 2, 3) @ wH @ J, axis=1) + np.einsum("kma,kmaij->kij", wg, D2)
        return _with_hessian(fn, hessian if self._curvature else None)

    def _obstacle_blocks(self):
        dyn, shot = self.dyn, self.shot
        steps = np.arange(1, self.N + 1)
        spheres = np.asarray(shot.body_spheres or ((0.0, 0.0, 0.0, shot.body_radius),), float)
        for ob in shot.obstacles:
            clearance = self._planar_clearance(ob, spheres)
            if clearance is not None:  # in C (native/planar_clearance.c): rows, gradients and the exact Hessian
                def fn(S, clearance=clearance):
                    return clearance.rows(S)

                def into(S, d, J, clearance=clearance):
                    clearance.rows(S, (d, J))

                def hessian(S, weights, clearance=clearance):
                    return clearance.hessian(S, weights)
                fn.into, fn.hessian = into, hessian
                fn.bind, hessian.bind = (lambda S, d, J, clearance=clearance: clearance.rows_call(S, (d, J)),
                                         clearance.hessian_call)
            else:
                fn = self._sphere_clearance(ob, spheres)
            need = np.tile(spheres[:, 3] + ob.clearance, (len(steps), 1))
            self._node_block(steps, fn, need, np.full(need.shape, np.inf), [f"{ob.name} at step {k}" for k in steps],
                             ("obstacle", ob))
        rows = self._position_rows()
        point = _BodyPoint(dyn, len(rows))  # the position's first nr components
        for c in shot.corridors:
            steps_c = np.arange(max(c.first, 1), c.last + 1)

            def into(S, r, J):
                r[...], J[...] = point.point(S)
            fn = _writing(into, point.nr)
            if self._curvature:
                fn.hessian = point.weighted_curvature
            lo = np.tile(np.asarray(c.lower, float)[rows], (len(steps_c), 1))
            hi = np.tile(np.asarray(c.upper, float)[rows], (len(steps_c), 1))
            self._node_block(steps_c, fn, lo, hi, [f"{c.name} at step {k}" for k in steps_c], ("corridor", c))

    def _cost_blocks(self):
        costs, dyn, N = self.shot.costs, self.dyn, self.N
        effort, smooth = [], []
        for ch in dyn.channels:
            j = ch.index + (dyn.ns if ch.where == "segment" else 0)
            ks = np.arange(N) if ch.where == "segment" else np.arange(N + 1)
            col = self.stage_index(ks)[:, j]
            s = ch.scale / ch.unit
            if costs.effort > 0 and ch.effort:
                effort.append((col, np.full(len(col), ch.trim / ch.unit), s, costs.effort))
            if costs.smoothness > 0:
                smooth.append((col[:-1], col[1:], s, costs.smoothness))
        self.quadratic = QuadraticCosts(effort, smooth, self.h_index, self.n) if effort or smooth else None
        if costs.time > 0:
            wgt = costs.time

            def fn(X):
                return (wgt * N * X[:, :1]), np.full((len(X), 1, 1), wgt * N)
            self.costs.append(Block(np.array([[self.h_index]]), fn, np.zeros((1, 1)), np.zeros((1, 1)), [], "time"))
        if costs.reference > 0:
            ref = np.asarray(costs.reference_path, float)[:, self._position_rows()]
            ks = np.arange(1, N + 1)
            wgt, rows, ns = costs.reference, self._position_rows(), dyn.ns

            def fn(X):
                p, dp = dyn.position(X[:, :ns])
                h = X[:, ns]
                d = p[:, rows] - np.resize(ref[ks], (len(X), len(rows)))
                val = wgt * h * np.sum(d * d, 1)
                g = np.concatenate([2 * wgt * h[:, None] * np.einsum("ki,kij->kj", d, dp[:, rows]),
                                    (wgt * np.sum(d * d, 1))[:, None]], 1)
                return val[:, None], g[:, None]

            def hessian(X, weights):  # wgt h |d|^2: 2 wgt h (J^T J + sum_i d_i d2p_i); with h: 2 wgt J^T d
                S = X[:, :ns]
                p, dp = dyn.position(S)
                h, J = X[:, ns], dp[:, rows]
                d = p[:, rows] - np.resize(ref[ks], (len(X), len(rows)))
                H = np.zeros((len(X), ns + 1, ns + 1))
                H[:, :ns, :ns] = 2 * wgt * h[:, None, None] * (
                    np.einsum("kia,kib->kab", J, J) + np.einsum("ki,kiab->kab", d, self._point_hessian(S)[:, rows]))
                H[:, :ns, ns] = H[:, ns, :ns] = 2 * wgt * np.einsum("ki,kij->kj", d, J)
                return weights[:, :1, None] * H
            _with_hessian(fn, hessian if self._curvature else None)
            idx = np.concatenate([self.stage_index(ks, "state"), np.full((N, 1), self.h_index)], 1)
            self.costs.append(Block(idx, fn, np.zeros((N, 1)), np.zeros((N, 1)), [], "reference"))

    def _prune(self):
        """Drop window columns no instance depends on, and mark the columns the Jacobian does not change
        with near the start (entering linearly: zero Hessian rows). A column is unused only if large changes
        of it (+-0.5 and +-50, relative) change no value at two points near the start guess: a zero
        derivative alone would also drop the height of a point inside a cylinder's axial range."""
        rng = np.random.default_rng(7)
        probe = self.x0()
        for b in self.blocks + self.costs:
            X = probe[b.index]
            size = np.maximum(1.0, np.abs(X))
            J1 = b.fn(X + 0.01 * rng.uniform(0.5, 1.0, X.shape) * size)[1]
            J2 = b.fn(X - 0.01 * rng.uniform(0.5, 1.0, X.shape) * size)[1]
            used = np.any(J1 != 0, axis=(0, 1)) | np.any(J2 != 0, axis=(0, 1))
            base = b.fn(X)[0]
            for j in np.flatnonzero(~used):  # zero derivative at both probes: does the value move at all?
                for step in (0.5, -0.5, 50.0, -50.0):
                    Xj = X.copy()
                    Xj[:, j] += step * size[:, j]
                    with np.errstate(all="ignore"):
                        value = b.fn(Xj)[0]
                    if np.any((value != base) | np.isnan(value)):
                        used[j] = True
                        break
            curved = np.any(np.abs(J1 - J2) > 1e-12 * (1 + np.abs(J1)), axis=(0, 1))
            b.curved = np.flatnonzero(curved[used])
            if used.all():
                continue
            cols, fn, width = np.flatnonzero(used), b.fn, b.index.shape[1]

            def widen(X, cols=cols, width=width):
                full = np.zeros((len(X), width))
                full[:, cols] = X
                return full

            def pruned(X, cols=cols, fn=fn, widen=widen):
                r, J = fn(widen(X))
                return r, J[:, :, cols]

            if hasattr(fn, "hessian"):
                def pruned_hessian(X, weights, cols=cols, fn=fn, widen=widen):
                    return fn.hessian(widen(X), weights)[:, cols[:, None], cols]
                pruned.hessian = pruned_hessian
            b.index, b.fn, b.used = b.index[:, cols], pruned, cols

    def _build_nlp(self):
        self._prune()
        n = self.n
        rows, costs = _Assembly(self.blocks, n), _Assembly(self.costs, n, self.quadratic)
        jacobian = SparsityPattern(rows.rows, rows.cols, (rows.m, n))
        hessian = SparsityPattern(np.concatenate([rows.hess_rows, costs.hess_rows]),
                                  np.concatenate([rows.hess_cols, costs.hess_cols]), (n, n))
        jacobian_values = jacobian.gather(rows.source)

        def jacobian_data(x):
            return jacobian_values(rows.raw_jacobian(x))

        hessian_coo = np.empty(rows.hessian_size + costs.hessian_size)  # the COO data, refilled each call
        rows_hessian = rows.hessian_writer(hessian_coo[:rows.hessian_size])
        costs_hessian = costs.hessian_writer(hessian_coo[rows.hessian_size:])

        def hessian_coo_data(x, y, obj_factor):
            rows_hessian(x, y, None)
            costs_hessian(x, None, obj_factor)
            return hessian_coo

        def hessian_data(x, y, obj_factor):
            return hessian.values(hessian_coo_data(x, y, obj_factor))

        def csr(pattern: SparsityPattern, data: np.ndarray) -> sp.csr_matrix:
            return sp.csr_matrix((data, pattern.indices, pattern.indptr), shape=pattern.shape)

        stages = np.concatenate([np.repeat(np.arange(self.N + 2), self.nw), [-1]])  # h: of no stage
        self.nlp = nlpmod.NLP(self.x_lower, self.x_upper, costs.total, costs.column_sums, rows.values,
                              lambda x: csr(jacobian, jacobian_data(x)), rows.lower, rows.upper,
                              lambda x, y, obj_factor: csr(hessian, hessian_data(x, y, obj_factor)), stages,
                              nlpmod.FixedPattern(jacobian.indices, jacobian.indptr, jacobian.shape, jacobian_data,
                                                  rows.raw_jacobian, jacobian.picked(rows.source)),
                              nlpmod.FixedPattern(hessian.indices, hessian.indptr, hessian.shape, hessian_data,
                                                  hessian_coo_data, summed=hessian.inverse))

    # -- warm start -----------------------------------------------------------------------------
    def x0(self, warm_start=None, rest: bool = False) -> np.ndarray:
        """Initial guess: the warm-start trajectory's body path, else a path through the keys; rest: staying
        at the start pose (dynamically consistent for a start at rest)."""
        N, dyn = self.N, self.dyn
        S0 = np.nan_to_num(dyn.start())
        p0, _ = dyn.position(S0[None])
        a0, _ = dyn.heading(S0[None])
        if warm_start is not None and not isinstance(warm_start, ShotResult):
            from ..lie import quat_to_matrix
            poses = warm_start.poses[:, 0]
            idx = np.minimum(np.arange(N + 1), len(poses) - 1)
            positions = poses[idx, :3]
            R = quat_to_matrix(poses[idx, 3:])
            headings = np.unwrap(np.arctan2(R[:, 1, 0], R[:, 0, 0]))
        elif rest:
            positions, headings = np.repeat(p0, N + 1, axis=0), np.full(N + 1, float(a0[0]))
        else:
            positions, headings = self._key_path(p0[0], float(a0[0]))
        stages = dyn.guess(positions, headings, self.shot.dt)
        x = np.concatenate([stages.ravel(), [self.shot.dt]])
        return np.clip(x, self.x_lower, self.x_upper)

    def _key_path(self, p0: np.ndarray, a0: float) -> tuple[np.ndarray, np.ndarray]:
        """A path through the position keys, at rest at each key (smoothstep in time): Hermite segments whose
        end tangents follow the keyed headings for planar vehicles (reversing when the key lies behind),
        straight lines otherwise; headings interpolate the keys (planar: follow the path's tangent)."""
        N, dyn = self.N, self.dyn
        keys = sorted(self.shot.keys, key=lambda k: k.step)
        vehicle = getattr(self.shot.mechanism, "vehicle", None)
        speed0 = float(np.linalg.norm(vehicle.velocity[3:])) if vehicle is not None else 0.0
        ks, ps, hk = [0], [p0], [a0]
        hs, ha = [0], [a0]
        for key in keys:
            if key.heading is not None:
                hs.append(key.step)
                ha.append(ha[-1] + float(_wrap(np.array(key.heading - ha[-1]))))
            if key.position is not None:
                ks.append(key.step)
                p = np.asarray(key.position, float).copy()
                if dyn.planar:
                    p[2] = p0[2]
                ps.append(p)
                hk.append(ha[-1] if key.heading is not None else np.nan)
        if ks[-1] < N:
            ks.append(N)
            ps.append(ps[-1])
            hk.append(hk[-1])
        steps = np.arange(N + 1)
        headings = np.interp(steps, hs, ha)
        positions = np.empty((N + 1, 3))
        for a in range(len(ks) - 1):
            k_a, k_b, p_a, p_b = ks[a], ks[a + 1], ps[a], ps[a + 1]
            chord = p_b - p_a
            tau = (steps[k_a:k_b + 1] - k_a) / max(k_b - k_a, 1)
            # path parameter in time: leaves the start at the start speed, reaches each key at rest
            rate0 = 0.0
            if a == 0 and np.linalg.norm(chord) > 0:
                rate0 = min(3.0, speed0 * (k_b - k_a) * self.shot.dt / float(np.linalg.norm(chord)))
            sig = rate0 * (tau**3 - 2 * tau**2 + tau) + tau * tau * (3 - 2 * tau)
            m_a, m_b = chord.copy(), chord.copy()
            if dyn.planar:
                length = float(np.linalg.norm(chord[:2]))
                for m, h in ((m_a, hk[a]), (m_b, hk[a + 1])):
                    if np.isfinite(h) and length > 0:
                        d = np.array([np.cos(h), np.sin(h), 0.0])
                        m[:] = length * d * (1.0 if d @ chord >= 0 else -1.0)
            h00, h10 = 2 * sig**3 - 3 * sig**2 + 1, sig**3 - 2 * sig**2 + sig
            h01, h11 = -2 * sig**3 + 3 * sig**2, sig**3 - sig**2
            positions[k_a:k_b + 1] = (h00[:, None] * p_a + h10[:, None] * m_a + h01[:, None] * p_b
                                      + h11[:, None] * m_b)
            if dyn.planar and np.linalg.norm(chord[:2]) > 0:
                d1 = 6 * sig**2 - 6 * sig, 3 * sig**2 - 4 * sig + 1, -6 * sig**2 + 6 * sig, 3 * sig**2 - 2 * sig
                tangent = d1[0][:, None] * p_a + d1[1][:, None] * m_a + d1[2][:, None] * p_b + d1[3][:, None] * m_b
                h_a = hk[a] if np.isfinite(hk[a]) else headings[k_a]
                back = np.cos(h_a) * chord[0] + np.sin(h_a) * chord[1] < 0
                yaw = np.arctan2(tangent[:, 1], tangent[:, 0]) + (np.pi if back else 0.0)
                ref = headings[k_a]
                yaw = ref + _wrap(yaw - ref)
                headings[k_a:k_b + 1] = np.unwrap(yaw)
                if np.isfinite(hk[a + 1]):
                    headings[k_b] = hk[a + 1]
        return positions, headings

    # -- solve and report -----------------------------------------------------------------------
    def solve(self, warm_start=None, progress=None, tol: float = 1e-8, max_iter: int = 300) -> ShotResult:
        """warm_start: a Trajectory (its body path seeds the states) or an earlier ShotResult of this layout
        (its whole solution). From the key path or an earlier result the first barrier parameter is COLD_MU,
        not IPOPT's 0.1 (kept from an animation): 0.1 lets the barrier pull the car shots far from the keys before
        mu falls (4x the iterations at 200 steps), and from an animation a small one can end in a worse local
        optimum (docs/shots.md, "Barrier")."""
        if isinstance(warm_start, ShotResult) and len(warm_start.solution) == self.n:
            x0, mu_init = np.clip(warm_start.solution, self.x_lower, self.x_upper), COLD_MU
        else:
            x0, mu_init = self.x0(warm_start), (COLD_MU if warm_start is None else 0.1)
        res = nlpmod.solve(self.nlp, x0, tol=tol, max_iter=max_iter, progress=progress, mu_init=mu_init)
        if res.status in ("infeasible", "failed", "max_iter") and any(b.kind[0] == "key" for b in self.blocks):
            # second phase: the keys made soft from rest give a dynamically feasible path; when it comes within
            # 0.5 (m or rad) of every key, the hard problem restarts from there (a restoration of sorts)
            soft_x, errors = self._soft_solve(min(max_iter, 200))
            if max(e for e, _ in errors) < 0.5:
                again = nlpmod.solve(self.nlp, soft_x, tol=tol, max_iter=max_iter, progress=progress, mu_init=1e-3)
                again.iterations += res.iterations
                again.wall_time += res.wall_time
                again.timings = {part: t + res.timings.get(part, 0.0) for part, t in again.timings.items()}
                again.message += " (second phase, from the keys made soft)"
                res = again
        return self.result(res)

    def _soft_solve(self, max_iter: int = 200) -> tuple[np.ndarray, list]:
        """Solve with every key soft (dynamics, bounds, obstacles hard) from rest: (x, [(key error, block)])."""
        if getattr(self, "_soft", None) is None:
            soft = Transcription(self.shot, self.dyn, soft_keys=True)
            res = nlpmod.solve(soft.nlp, soft.x0(rest=True), max_iter=max_iter)
            errors = [(float(np.sqrt(b.fn(res.x[b.index])[0].sum())), b) for b in soft.key_penalties]
            self._soft = (res.x, errors, res.constraint_violation)
        return self._soft[0], self._soft[1]

    def key_errors(self, x: np.ndarray) -> dict[str, float]:
        out: dict[str, float] = {}
        for b in self.blocks:
            if b.kind[0] != "key":
                continue
            v, _ = b.fn(x[b.index])
            err = float(np.max(nlpmod.violation(v.ravel(), b.lower.ravel(), b.upper.ravel())))
            if b.kind[2] == "position" and b.kind[1].radius > 0:
                err = max(0.0, float(np.sqrt(v[0, 0])) - b.kind[1].radius)
            label = b.labels[0]
            out[label] = max(out.get(label, 0.0), err)
        return out

    def clearances(self, x: np.ndarray) -> dict[str, float]:
        """Obstacle name -> smallest distance of the body position minus body_radius + clearance (>= 0 clear)."""
        out = {}
        for b in self.blocks:
            if b.kind[0] == "obstacle":
                v, _ = b.fn(x[b.index])
                out[b.kind[1].name] = float(np.min(v - b.lower))
        return out

    def result(self, res: nlpmod.NLPResult) -> ShotResult:
        x, dyn, N = res.x, self.dyn, self.N
        h = float(x[self.h_index])
        st = self.stages(x)
        controls, times = {}, {}
        for ch in dyn.channels:
            if ch.where == "segment":
                vals = st[1:N + 1, dyn.ns + ch.index]
                t = (np.arange(N) + ch.offset) * h
            else:
                vals = st[1:, ch.index]
                t = (np.arange(N + 1) + ch.offset) * h
            controls[ch.name], times[ch.name] = vals * ch.unit, t
        key_errors = self.key_errors(x)
        clear = self.clearances(x)
        lines = [f"shot {self.shot.name!r}: {res.status} after {res.iterations} iterations in {res.wall_time:.3g} s "
                 f"(objective {res.objective:.6g}, constraint violation {res.constraint_violation:.3g}, "
                 f"dt {h:.6g} s, duration {N * h:.6g} s)"]
        for label, err in key_errors.items():
            lines.append(f"  key {label!r}: error {err:.3g}")
        for name, c in clear.items():
            lines.append(f"  obstacle {name!r}: margin {c:.4g} m" + ("" if c >= -1e-6 else " (HIT)"))
        trajectory, replay_error = None, float("nan")
        if res.status == "solved":
            result = ShotResult(None, controls, times, "", res.status, res.iterations, res.wall_time, key_errors)
            trajectory = dyn.replay(st, h, result.curves())
            p, _ = dyn.position(st[1:, :dyn.ns])
            if trajectory.status == "finished":
                replay_error = float(np.max(np.abs(trajectory.poses[:, 0, :3] - p)))
                lines.append(f"  replay through the simulator: largest position difference {replay_error:.3g} m")
            else:
                lines.append(f"  replay through the simulator failed: {trajectory.message}")
        elif res.status != "cancelled" and not self.soft_keys:
            lines.insert(1, "  " + res.message)
            lines.insert(2, "  " + self.diagnose_keys(x))
        return ShotResult(trajectory, controls, times, "\n".join(lines), res.status, res.iterations, res.wall_time,
                          key_errors, st[1:, :dyn.ns].copy(), dyn.state_names, h, res.objective,
                          res.constraint_violation, replay_error, clear, x.copy(), res.timings, res.kkt)

    def diagnose_keys(self, x: np.ndarray) -> str:
        """Why the shot failed: re-solve with every key soft (dynamics, bounds, obstacles hard) and name the key
        that stays furthest from its target; if every key can be met, name the worst requirement at x."""
        if any(b.kind[0] == "key" for b in self.blocks):
            soft_x, errors = self._soft_solve()
            err, b = max(errors, key=lambda e: e[0])
            if self._soft[2] < 1e-6 and err > 0.5:
                key, part = b.kind[1], b.kind[2]
                return (f"key {key.label!r} (step {key.step}, {part}) cannot be met: the closest the vehicle "
                        f"can come is {err:.3g} away in {key.step * float(soft_x[self.h_index]):.3g} s within its "
                        f"control bounds and obstacles (with every key soft)")
        return self.diagnose(x)

    def diagnose(self, x: np.ndarray) -> str:
        """Name the requirement that is furthest from being met at x (a key, an obstacle or a step)."""
        worst, what = 0.0, "no requirement is violated"
        for b in self.blocks:
            v, _ = b.fn(x[b.index])
            viol = nlpmod.violation(v, b.lower, b.upper).max(axis=1)
            i = int(np.argmax(viol))
            if viol[i] > worst:
                worst = float(viol[i])
                if b.kind[0] == "key":
                    key, part = b.kind[1], b.kind[2]
                    what = (f"key {key.label!r} (step {key.step}, {part}) cannot be met: off by {worst:.3g} "
                            f"after the solver's best effort; it is probably out of reach in "
                            f"{key.step * float(x[self.h_index]):.3g} s with the given bounds")
                elif b.kind[0] == "obstacle":
                    what = f"obstacle {b.kind[1].name!r} cannot be cleared: {b.labels[i]} is {worst:.3g} m inside"
                elif b.kind[0] == "corridor":
                    what = f"corridor {b.kind[1].name!r} cannot be kept: {b.labels[i]} is {worst:.3g} m outside"
                else:
                    what = f"the dynamics cannot be met at {b.labels[i]} (residual {worst:.3g})"
        return what

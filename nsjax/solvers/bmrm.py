"""BMRM, the bundle method for regularized risk minimization (Smola et al. 2007, Alg. 1), and its
variant with an exact line search between iterates (Yu et al. 2010, Sec. 7.4: OCAS-like ls-BMRM).

Each step adds the cutting plane R(w) ≥ ⟨a, w⟩ + b taken at the current iterate (a ∈ ∂R(w),
b = R(w) − ⟨a, w⟩, eq. 3 of Smola et al. (2007); exactly, b = −R*(u) or the loss's own intercept:
`Problem.cut`) to a bundle held in preallocated device buffers, and
minimizes the model J_t(w) = λ/2 ‖w‖² + max_i (⟨a_i, w⟩ + b_i) through its dual, a QP over
the simplex with Q = AᵀA/λ (Thm. 2, Cor. 3; `_simplex_qp.py`); then w_t = −A α / λ.

Certified gap: every dual point α gives D(α) = −αᵀQα/(2λ) + bᵀα ≤ min J_t ≤ J*, so
ε_t = min_{t'≤t} J(w_{t'}) − max_{t'≤t} D(α_{t'}) (eq. 4 of Saha et al. 2009, with
J_t(w_t) = D(α_t) at the QP's optimum) bounds the suboptimality of the best iterate, which is what
`Solution.w` returns (BMRM's iterates are not monotone in J; the loop keeps the best).

Precision: the bundle's arithmetic (offsets b, Gram matrix Q, weights α, the combination
Σ α_i a_i) is float64 whenever JAX has it (``jax_enable_x64``), whatever the problem's dtype
(`bundle_dtype`). The QP weighs Q by 1/λ, and at the optimum the cuts nearly cancel:
‖Σ α_i a_i‖² = λ²‖w‖² is orders of magnitude below the entries ⟨a_i, a_j⟩ it is made of, so
Q must be exact to about λ · tol · J. A Gram row summed in float32 over d = 10⁶ coordinates
is off by ~3e-5 of its size; at tiny λ that moves the model's value by more than the
tolerance and can leave a float32 OCAS-like solve on a fixed point (the cut at the model's
minimizer already in the bundle) above J* until ``max_steps``. The cuts A
themselves are stored in the problem's dtype, in which they are computed (a = Xᵀu): a
float32 cut read into a float64 sum loses nothing, and reading A is most of what the
bundle costs a step (the Gram row and the combination, two passes). Only a merged cut
(below), a float64 mean, is rounded to the problem's dtype when stored, as every float32
cut already is. Without x64 the bundle is float32 and the failure above remains possible
for tiny λ on large d.

Proximity (the OCAS-like variant only): the line search heads for the minimizer of the model
plus τ/2 ‖w − w_t‖², τ = 1.5 λ by default (`BMRM.proximity`), instead of the model's own
minimizer. This is Kiwiel's proximity control of bundle methods (Math. Programming 46, 1990),
not in Yu et al. (2010) or Smola et al. (2007), with the prox centre at the line search's
iterate. At small λ the model's own minimizer lies far from w_t where the model is poor; the
proximity term pulls it back, which saves steps at small λ (measured: docs/design.md,
"Measured design choices").
The QP is the same with λ + τ for λ and offsets shifted by ⟨a_i, w_t⟩ (`iterate`), which are
kept as the state's ``center_q`` without reading A: a new cut's by one dot product, the
others along the step's lines from Q α. The certificate does not change: every α on the
simplex gives a lower bound D(α) of the plain model, whichever QP it solves, and at a fixed
point w_t = w_{t+1} the two QPs' optimality conditions coincide.

A step that leaves both the iterate and the model's minimizer exactly as they were counts as
a repeat (``stats["repeats"]``, reset by any step that moves). After ``capacity`` repeats
in a row the run ends `RESULTS.stalled`: by then the bundle has turned over (its free slots
filled, its inactive cuts replaced, by copies of the one cut each repeat takes), so every
later step is the same step. In exact arithmetic that happens only at the optimum; in rounding it
is the fixed point above, which otherwise runs to max_steps. (Fewer repeats are no proof:
a float32 run without x64 can repeat a step many times while its bundle is filling, then
go on to converge.)

Full bundle: cuts with α_i = 0 are dropped, oldest first. If every cut is active, the
share ``merge`` (1/8) of them with the smallest α are aggregated into one cut, their
α-weighted mean (Σ α_i a_i, Σ α_i b_i over Σ α_i): a convex combination of minorants of R is a
minorant, so the lower bound stays valid, and the model's minimum is unchanged (Kiwiel's
aggregation, applied to a part of the bundle so that the rest of the model survives).

References:
    Smola et al. (2007): Alexander J. Smola, S.V.N. Vishwanathan and Quoc V. Le, "Bundle Methods
    for Machine Learning", Advances in Neural Information Processing Systems 20 (NIPS 2007). The
    other works cited here: docs/references.md.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.results import RESULTS
from nsjax.solvers._bias import bias_cut
from nsjax.solvers._options import Options, check_fits, solver_options, weights_of
from nsjax.solvers._simplex_qp import solve_simplex_qp
from nsjax.solvers.base import Core, converged, count, counters
from nsjax.solvers.capabilities import Takes
from nsjax.solvers.line_search import ExactLineSearch
from nsjax.solvers.phases import BundlePhase

#: The values of `BMRM.line_search`.
LINE_SEARCHES = ("none", "exact")

#: OCAS's step past the line-search optimum towards the model's minimizer, for the next cut.
OCAS_MU = 0.1
#: The longest OCAS line-search step, in units of the way to the model's minimizer. The
#: scores there, S + η (S_model − S), carry η times the difference's rounding (eps |S|,
#: however close the model's minimizer is). Unbounded, a huge step along a near-zero
#: direction can leave S visibly away from X w: J reported below J*, and the gap
#: negative. J is convex along the line and falls up to the optimal η, so stopping
#: short of it still does not raise J.
OCAS_ETA_MAX = 64.0


#: The OCAS-like BMRM's default proximity weight τ/λ (`BMRM.proximity`): a weight near 1
#: pulls the line search's target back where the model is poor; much larger ones hold the
#: iterates back (measured: docs/design.md, "Measured design choices").
PROXIMITY = 1.5

#: The BundleState fields held in `bundle_dtype` (float64 with x64, whatever the problem's);
#: the cuts A are in the problem's dtype.
WIDE_FIELDS = ("cut_q", "center_q", "b", "Q", "alpha", "Aalpha", "Apart")


class BundleState(NamedTuple):
    core: Core  # w_t (with line_search="exact": the better of the line-search point and
    #             the cut point), J(w_t), D(α_t) ≤ min J, counters
    S: jax.Array  # X w_t
    cut_a: jax.Array  # the cut at w_t, not yet in the bundle
    cut_b: jax.Array
    cut_q: jax.Array  # (capacity,) ⟨a_i, cut_a⟩ against the bundle as it stands (0 off valid)
    A: jax.Array  # (capacity, *w.shape) cut gradients, in the problem's dtype
    b: jax.Array  # (capacity,) cut offsets
    Q: jax.Array  # (capacity, capacity) Gram matrix ⟨a_i, a_j⟩
    valid: jax.Array  # (capacity,) slots in use
    age: jax.Array  # (capacity,) insertion order of each cut (larger: newer)
    center_q: jax.Array  # (capacity,) ⟨a_i, w_t⟩ (0 off valid), with a proximity term only
    alpha: jax.Array  # (capacity,) dual weights of the last QP
    Aalpha: jax.Array  # Σ α_i a_i of the last QP
    part: jax.Array  # (capacity,) the cuts an aggregation would merge (`aggregation_set`)
    Apart: jax.Array  # Σ_part α_i a_i / Σ_part α_i: the merged cut an aggregation writes


#: BMRM's counters at its start (`init`; the hybrid's phase 2 from them at 0: `zero_stats`).
BUNDLE_COUNTERS = dict(matvecs=2, aggregations=0, dropped_cuts=0, repeats=0)


class CutPoint(NamedTuple):
    """Where `BMRM.approach` leaves a step: the point of its next cut, and what
    `BMRM.arrive` needs besides that cut (split so that the hybrid takes the cuts of both
    its phases at one call site of `BMRM.cut`, which XLA would otherwise compile twice)."""

    w: jax.Array  # the next cut's point (OCAS: a little past the line search's)
    S: jax.Array  # its scores
    w_ls: jax.Array  # the line search's point (the cut's point without a line search)
    S_ls: jax.Array
    value_ls: jax.Array  # J there (+inf without a line search: never better than the cut's)
    q_ls: jax.Array  # ⟨a_i, ·⟩ at the line search's point and at the cut's (`center_q`)
    q_cut: jax.Array
    dual: jax.Array  # D(α) of this step's QP
    same_model: jax.Array  # the QP's Σ α_i a_i is the last step's


def bundle_dtype(dtype):
    """The dtype of the bundle for a problem in ``dtype``: float64 where JAX has it (x64
    on), else ``dtype`` (see the module docstring)."""
    return jnp.promote_types(dtype, jax.dtypes.canonicalize_dtype(jnp.float64))


#: What the bundle methods take: their model is minimized through the dual of λ/2‖w‖²
#: (w = −Aα/λ), so the L2 regularizer and λ > 0; with a bias they model
#: R̃(w) = min_b R(Xw + b) (`nsjax.solvers._bias`), whose b is found by exact line searches on
#: the loss's lines.
BUNDLE_TAKES = Takes(regularizer="l2", bias="lines", positive_strength=True)


@solver_options
class BMRM(BundlePhase):
    """qp-BMRM (Smola et al. 2007, Alg. 1), optionally with the exact line search of Yu et al.
    (2010).

    Args:
        capacity: number of cuts kept on the device (see the module docstring when full),
            an int >= 2 (and <= 2**31 - 1); `check` refuses, before compiling, a capacity
            whose capacity × d cuts and capacity² Gram matrices do not fit in the
            machine's memory (`nbytes`).
        line_search: "none" (plain BMRM: w_{t+1} is the model's minimizer) or "exact"
            (OCAS-like ls-BMRM, Yu et al. 2010, Sec. 7.4: exact line search from the current
            iterate towards the model's minimizer, cut taken just past the line's optimum;
            needs a loss that gives its lines).
        qp_iterations: accelerated projected-gradient iterations of the inner QP per step
            (an int >= 1), followed by an exact polish on the support (`_simplex_qp.py`).
            The default 10 only guesses the support for the exact polish that follows:
            more iterations do not change the steps or the optima, they only lengthen
            each step where the QP is a large part of it.
        merge: the share of a full bundle's cuts merged into one when every cut is active
            (those with the smallest α; at least two), a finite number in (0, 1]. 1 merges
            the whole bundle: the model starts over from one cut, and until the bundle
            fills again each step reads fewer cuts, but the active cuts the model needs
            must be found again. A small share (the default 1/8) keeps most of the
            model, which pays where the bundle fills again and again (many active cuts at
            small λ); where it seldom fills before the target, it costs a little more time
            than merging all.
        proximity: a finite number >= 0, or None. With ``line_search="exact"``, the weight
            τ = proximity · λ of a proximity term τ/2 ‖w − w_t‖² added to the model whose
            minimizer the line search heads for (module docstring: Proximity). ``None``:
            `PROXIMITY` (1.5) with the exact line search, 0 (plain BMRM) without it; 0 is
            the OCAS-like BMRM of Yu et al. (2010).

    Stops on the certified gap ε_t ≤ tol · max(1, |J|). Its iterates are not monotone in
    J; `solve` returns the best (``sol.history.best`` is the best-so-far curve).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=300, tol=1e-6)
        >>> bool(sol.gap <= 1e-6), bool(sol.history.value[0] >= sol.value)
        (True, True)
    """

    capacity: int = 128
    line_search: str = "none"
    qp_iterations: int = 10
    merge: float = 1 / 8
    proximity: float | None = None


    def __post_init__(self):
        options = Options(self)
        options.int("capacity", low=2)
        line_search = options.choice("line_search", LINE_SEARCHES)
        options.int("qp_iterations", low=1)
        options.real("merge", 0, 1, low_open=True,
                     rule="a share in (0, 1] of the capacity (a finite number)")
        proximity = options.real("proximity", 0, none=True, example=PROXIMITY)
        if proximity is not None and proximity > 0 and line_search != "exact":
            raise ValueError(f"{options.owner}: proximity > 0 needs line_search='exact': the "
                             "proximity term is centred on the line search's iterate (plain "
                             "BMRM moves to the model's minimizer).")

    @property
    def tau_over_lam(self) -> float:
        """τ/λ, the proximity term's weight in units of λ (0: none)."""
        if self.proximity is None:
            return PROXIMITY if self.line_search == "exact" else 0.0
        return float(self.proximity)

    @property
    def takes(self) -> Takes:
        """`BUNDLE_TAKES`; with ``line_search="exact"``, only a loss that gives its lines."""
        if self.line_search == "exact":
            return dataclasses.replace(BUNDLE_TAKES, losses=("lines",))
        return BUNDLE_TAKES

    def check(self, problem):
        """Refuse, before compiling, a ``capacity`` whose bundle does not fit in the memory
        of the machine (`nbytes`)."""
        self.check_memory(problem)

    def nbytes(self, problem, capacity=None) -> int:
        """The bytes of the bundle for ``problem`` (with ``capacity`` slots, default this
        one's): c·D numbers in the problem's dtype for c cuts of its D weights, and 5·c² +
        8·c in `bundle_dtype` for the Gram matrix Q, its copies in the QP (the masked Q,
        the polish's KKT system and its factors, the merged Q of an aggregation) and the
        slots' vectors: what XLA allocates for a BMRM run, to 5 % (c² ≫ D: the 5·c²)."""
        c = self.capacity if capacity is None else capacity
        D, _ = weights_of(problem)
        wide = np.dtype(bundle_dtype(problem.dtype)).itemsize
        return np.dtype(problem.dtype).itemsize * c * D + wide * (5 * c * c + 8 * c)

    def check_memory(self, problem, reserved=(0, ""), owner=None):
        """The size check of `check`, with ``reserved`` = (bytes, what) taken by other
        buffers (the hybrid's subLBFGS memory); ``owner``: the solver named in the
        message (default this class)."""
        D, dtype = weights_of(problem)
        c, wide = self.capacity, np.dtype(bundle_dtype(problem.dtype)).name
        check_fits(owner or type(self).__name__, "capacity", c,
                   lambda k: self.nbytes(problem, k),
                   f"{c} x {D} {dtype} numbers for the cuts of this problem's {D} weights and "
                   f"5 x {c}^2 {wide} numbers for their Gram matrix and its copies in the QP",
                   low=2, reserved=reserved)

    def init(self, problem, w0) -> BundleState:
        w0, S, value, a, b = self.cut(problem, w0, problem.scores(w0))
        core = Core(w0, value, jnp.asarray(-jnp.inf, problem.dtype),
                    counters(**BUNDLE_COUNTERS))
        return self.empty_start(core, S, a, b)

    def empty_start(self, core, S, cut_a, cut_b) -> BundleState:
        """The state at ``core.w`` (scores S, pending cut (cut_a, cut_b) taken there) with
        an empty bundle: A in the problem's dtype, b in `bundle_dtype`. ``core.stats`` must
        hold BMRM's counters."""
        c, bdt = self.capacity, bundle_dtype(core.w.dtype)
        return self._start(core, S, cut_a, cut_b, jnp.zeros((c,) + core.w.shape, core.w.dtype),
                           jnp.zeros(c, bdt), jnp.zeros(c, bool), jnp.zeros(c, jnp.int32))

    def warm_start(self, state: BundleState, core, S, keep_cuts, cut=None) -> BundleState:
        """The state at ``core.w`` (scores S) whose bundle holds the cuts of ``state`` if
        ``keep_cuts`` (a Python bool; else none), with the pending cut ``cut`` = (a, b)
        taken there (default: ``state``'s): any minorants of R, e.g. another solver's
        subgradients collected with `with_cut` and `insert` (the hybrid's phase 1). The Gram
        matrix is computed anew. ``core.stats`` must hold BMRM's counters."""
        cut_a, cut_b = (state.cut_a, state.cut_b) if cut is None else cut
        valid = state.valid if keep_cuts else jnp.zeros_like(state.valid)
        return self._start(core, S, cut_a, cut_b, state.A, state.b, valid, state.age)

    def _start(self, core, S, cut_a, cut_b, A, b, valid, age) -> BundleState:
        """The state at ``core.w`` (scores S, pending cut (cut_a, cut_b) taken there) whose
        bundle holds the cuts (A, b) on the slots ``valid`` (insertion order ``age``); A in
        the problem's dtype, b in `bundle_dtype`."""
        axes = tuple(range(1, A.ndim))
        c, wide = self.capacity, b.dtype
        Q, q = jax.lax.cond(
            jnp.any(valid),
            lambda: (jnp.tensordot(A, A, axes=(axes, axes), preferred_element_type=wide),
                     self.gram_row(A, valid, cut_a)),
            lambda: (jnp.zeros((c, c), wide), jnp.zeros(c, wide)))
        Q = jnp.where(valid[:, None] & valid[None, :], Q, 0.0)
        center_q = jnp.zeros(c, wide)
        if self.tau_over_lam > 0:  # ⟨a_i, w⟩, kept up to date by `insert` and `iterate`
            center_q = jax.lax.cond(jnp.any(valid), lambda: self.gram_row(A, valid, core.w),
                                    lambda: center_q)
        return BundleState(core=core, S=S, cut_a=cut_a, cut_b=cut_b, cut_q=q, A=A, b=b, Q=Q,
                           valid=valid, age=age, center_q=center_q, alpha=jnp.zeros(c, wide),
                           Aalpha=jnp.zeros(cut_a.shape, wide), part=jnp.zeros(c, bool),
                           Apart=jnp.zeros(cut_a.shape, wide))

    def insert(self, state: BundleState) -> BundleState:
        """Put the pending cut into the bundle, making room first if it is full.

        Reads no more of A than its row 0 and has no conditional: the cut's Gram row
        (``cut_q``) and the aggregate (``Aalpha``) were computed when A was last read
        (`iterate`, or `warm_start`). The hybrid's phase 1 inserts cuts whose ``cut_q`` is
        stale, so Q is wrong until its switch, where `warm_start` rebuilds it. The
        (capacity, d) buffer A is only written in place: a conditional that reads it before
        it is written makes XLA copy it at every step (the hybrid's compiled HLO shows the copy).
        """
        A, b, Q, valid, age, alpha = state.A, state.b, state.Q, state.valid, state.age, state.alpha
        a, q = state.cut_a.astype(A.dtype), state.cut_q  # q in `bundle_dtype`
        full = jnp.all(valid)
        inactive = valid & (alpha <= 0)
        aggregate = full & ~jnp.any(inactive)
        # Every cut active: merge the cuts of `part` into one, their α-weighted mean
        # (`Apart`): a convex combination of minorants is a minorant, and the model's
        # minimum is unchanged, attained with the merged cut weighted Σ_part α_i. Its Gram
        # row and offset are the same means of Q's rows and b. The merged slots' rows of A
        # are left as they are (off `valid`: a read of A weighs them by α = 0 or masks
        # their Gram entries). The merged cut is rounded to A's dtype (module docstring:
        # Precision).
        part = state.part
        weight = jnp.sum(jnp.where(part, alpha, 0.0))
        mean = jnp.where(part, alpha / jnp.where(aggregate, weight, 1.0), 0.0)
        into = jnp.argmax(part)
        kept = valid & ~part
        mean_Q = mean @ Q
        row = jnp.where(kept, mean_Q, 0.0).at[into].set(mean_Q @ mean)
        merged_Q = jnp.where(kept[:, None] & kept[None, :], Q, 0.0)
        Q = jnp.where(aggregate, merged_Q.at[into, :].set(row).at[:, into].set(row), Q)
        A = A.at[into].set(jnp.where(aggregate, state.Apart.astype(A.dtype), A[into]))
        q = jnp.where(aggregate, jnp.where(kept, q, 0.0).at[into].set(mean @ q), q)
        b = jnp.where(aggregate, jnp.where(kept, b, 0.0).at[into].set(mean @ b), b)
        center_q = state.center_q
        if self.tau_over_lam > 0:
            center_q = jnp.where(aggregate, jnp.where(kept, center_q, 0.0).at[into].set(
                mean @ center_q), center_q)
        valid = jnp.where(aggregate, kept.at[into].set(True), valid)
        alpha = jnp.where(aggregate, jnp.where(kept, alpha, 0.0).at[into].set(weight), alpha)
        # The slot: the oldest inactive cut if full, else the first free slot.
        big = jnp.iinfo(jnp.int32).max
        oldest_inactive = jnp.argmin(jnp.where(inactive, age, big))
        free_slot = jnp.argmin(valid)
        slot = jnp.where(full & ~aggregate, oldest_inactive, free_slot)
        a_wide = a.astype(q.dtype)
        q = jnp.where(valid, q, 0.0).at[slot].set(jnp.vdot(a_wide, a_wide))
        Q = Q.at[slot, :].set(q).at[:, slot].set(q)
        A = A.at[slot].set(a)
        b = b.at[slot].set(state.cut_b)
        if self.tau_over_lam > 0:
            center_q = center_q.at[slot].set(jnp.vdot(a_wide, state.core.w.astype(q.dtype)))
        valid = valid.at[slot].set(True)
        age = age.at[slot].set(jnp.max(age) + 1)
        alpha = alpha.at[slot].set(0.0)
        stats = count(state.core.stats, aggregations=aggregate, dropped_cuts=full & ~aggregate)
        return state._replace(core=state.core._replace(stats=stats), A=A, b=b, Q=Q,
                              valid=valid, age=age, alpha=alpha, center_q=center_q)

    def step(self, problem, state: BundleState) -> BundleState:
        return self.iterate(problem, self.insert(state))

    def terminate(self, problem, state, best, tol):
        """(done, result): the certified gap, else `RESULTS.stalled` after ``capacity``
        steps in a row that repeated themselves (module docstring)."""
        return terminate_bundle(state.core.stats, best, tol, self.capacity)

    @staticmethod
    def cut(problem, w, S):
        """(w, S, J(w), a, b): `Problem.cut` at w; with a bias, at w's best bias, a cut of
        R̃ (`nsjax.solvers._bias.bias_cut`)."""
        if problem.bias:
            return bias_cut(problem, w, S)
        return (w, S, *problem.cut(w, S))

    def minimize_model(self, state: BundleState, lam):
        """(α, Σ α_i a_i, w, ⟨a_i, w⟩): the minimizer w of the model J_t(w) + τ/2 ‖w − w_t‖²
        (τ = 0 without a proximity term: Smola et al. 2007, Cor. 3) and its dual weights α.

        With τ > 0 (module docstring: Proximity), J_t(w) + τ/2 ‖w − w_t‖² equals
        κ/2 ‖w − θ w_t‖² + max_i (⟨a_i, w⟩ + b_i) up to a constant (κ = λ + τ, θ = τ/κ): the
        same simplex QP with κ for λ and the offsets b_i + θ ⟨a_i, w_t⟩, and
        w = θ w_t − Σ α_i a_i / κ. ⟨a_i, w⟩ comes from Q α, without a read of A (zeros
        without a proximity term, where nothing uses it).
        """
        Q, valid, q_now = state.Q, state.valid, state.center_q
        if self.tau_over_lam == 0:
            alpha = solve_simplex_qp(Q, state.b, lam, valid, state.alpha, self.qp_iterations)
            Aalpha = combine_cuts(alpha, state.A, valid)
            return alpha, Aalpha, -Aalpha / lam, q_now
        theta = self.tau_over_lam / (1.0 + self.tau_over_lam)
        kappa = lam * (1.0 + self.tau_over_lam)
        alpha = solve_simplex_qp(Q, state.b + theta * q_now, kappa, valid, state.alpha,
                                 self.qp_iterations)
        Aalpha = combine_cuts(alpha, state.A, valid)
        w = theta * state.core.w.astype(Aalpha.dtype) - Aalpha / kappa
        q = theta * q_now - jnp.where(valid, Q @ alpha, 0.0) / kappa
        return alpha, Aalpha, w, q

    def iterate(self, problem, state: BundleState) -> BundleState:
        """The rest of a step, after `insert`: minimize the model, move, take the next
        cut. Reads the bundle, never writes A."""
        state, point = self.approach(problem, state)
        return self.arrive(state, point, self.cut(problem, point.w, point.S))

    def approach(self, problem, state: BundleState):
        """`iterate` up to its cut: minimize the model and search the line to its
        minimizer; returns (the state with this step's QP, the `CutPoint`)."""
        lam = problem.lam
        A, b, valid = state.A, state.b, state.valid
        w_now, S_now = state.core.w, state.S
        alpha, Aalpha, w_model, q_model = self.minimize_model(state, lam)
        # Every cut active in a full bundle: the next `insert` merges `part`; its merged
        # cut is read from A now (A is read here only, see `insert`), on those steps only
        # (under vmap, a sweep's, on every step: the cond becomes a select).
        part = aggregation_set(alpha, valid, self.merge)
        mean = jnp.where(part, alpha, 0.0)
        Apart = jax.lax.cond(
            jnp.all(valid) & jnp.all(alpha > 0),
            lambda: combine_cuts(mean / jnp.sum(mean), A, valid),
            lambda: jnp.zeros_like(Aalpha))
        # D(α) ≤ min J_t ≤ J* for any α on the simplex: the plain model's dual, whatever QP
        # gave α.
        dual = -jnp.vdot(Aalpha, Aalpha) / (2 * lam) + jnp.vdot(alpha, b)
        dual, w_model = dual.astype(w_now.dtype), w_model.astype(w_now.dtype)
        if problem.bias:  # the model is flat in b (every cut's bias entry is 0): keep it
            w_model = w_model.at[-1].set(w_now[-1])
        S_model = problem.scores(w_model)
        same_model = jnp.all(Aalpha == state.Aalpha)
        state = state._replace(alpha=alpha, Aalpha=Aalpha, part=part, Apart=Apart)
        if self.line_search != "exact":
            inf = jnp.full_like(dual, jnp.inf)
            return state, CutPoint(w_model, S_model, w_model, S_model, inf, state.center_q,
                                   state.center_q, dual, same_model)
        # OCAS (Franc & Sonnenburg 2008; Yu et al. 2010, Sec. 7.4): search the line from the
        # current iterate w_b to the model's minimizer exactly, then take the next cut a
        # little past the line's optimum, at (1 − μ) w_ls + μ w_model with μ = 0.1, so
        # that the model improves even when the line search cannot move (η* = 0).
        p, dS = w_model - w_now, S_model - S_now
        eta = ExactLineSearch().search(problem, w_now, S_now, p, dS).eta
        eta = jnp.where(jnp.isfinite(eta), jnp.minimum(eta, OCAS_ETA_MAX), 1.0)
        w_ls, S_ls = w_now + eta * p, S_now + eta * dS
        value_ls = problem.value(w_ls, S_ls)
        w_cut = (1 - OCAS_MU) * w_ls + OCAS_MU * w_model
        S_cut = (1 - OCAS_MU) * S_ls + OCAS_MU * S_model
        # ⟨a_i, w⟩ at both points (0 without a proximity term): they are on the lines
        # through w_t and the model's minimizer.
        q_ls = state.center_q + eta * (q_model - state.center_q)
        q_cut = (1 - OCAS_MU) * q_ls + OCAS_MU * q_model
        return state, CutPoint(w_cut, S_cut, w_ls, S_ls, value_ls, q_ls, q_cut, dual,
                               same_model)

    def arrive(self, state: BundleState, point: CutPoint, cut) -> BundleState:
        """`iterate` from its cut ``cut`` = `cut` at ``point``: move to the better of the
        line search's point and the cut's, and make the cut pending."""
        w_cut, S_cut, value_cut, a, cut_b = cut
        w_now = state.core.w
        if self.line_search == "exact":
            cut_better = value_cut < point.value_ls
            w_new = jnp.where(cut_better, w_cut, point.w_ls)
            S_new = jnp.where(cut_better, S_cut, point.S_ls)
            value = jnp.minimum(value_cut, point.value_ls)
            q_now = jnp.where(cut_better, point.q_cut, point.q_ls)
        else:
            w_new, S_new, value, q_now = w_cut, S_cut, value_cut, point.q_cut
        # Nothing moved: the next step takes this step's cut again (module docstring).
        same = jnp.all(w_new == w_now) & point.same_model
        stats = count(state.core.stats, matvecs=2)
        stats["repeats"] = jnp.where(same, stats["repeats"] + 1, 0)
        return state._replace(core=Core(w_new, value, point.dual, stats), S=S_new, cut_a=a,
                              cut_b=cut_b, cut_q=self.gram_row(state.A, state.valid, a),
                              center_q=q_now)

    # -- the rest of the phase's seam (`BundlePhase`: the hybrid's phase 2) -----------------
    @staticmethod
    def zero_stats() -> dict:
        """BMRM's counters (`BUNDLE_COUNTERS`), all 0."""
        return counters(**dict.fromkeys(BUNDLE_COUNTERS, 0))

    @staticmethod
    def with_cut(state: BundleState, cut_a, cut_b) -> BundleState:
        """``state`` with the cut (cut_a, cut_b) pending, for the next `insert`; its Gram
        row ``cut_q`` is left stale (`insert`)."""
        return state._replace(cut_a=cut_a, cut_b=cut_b)

    @staticmethod
    def cut_point_at(state: BundleState, w, S) -> CutPoint:
        """The `CutPoint` of a cut at (w, S) alone (no line search's point to compare with;
        the Gram fields those of ``state``)."""
        inf = jnp.full((), jnp.inf, w.dtype)
        return CutPoint(w, S, w, S, inf, state.center_q, state.center_q, -inf,
                        jnp.array(False))

    @staticmethod
    def no_cut(point: CutPoint):
        """A placeholder shaped like `cut`'s result at ``point``, for a branch that takes
        no cut."""
        zero = jnp.zeros((), point.w.dtype)
        return point.w, point.S, zero, jnp.zeros_like(point.w), zero

    @staticmethod
    def take_buffers(state: BundleState):
        """(the state without its cuts A, A: (capacity, d))."""
        return state._replace(A=None), state.A

    @staticmethod
    def give_buffers(state: BundleState, buffers) -> BundleState:
        """The state with its cuts A ``buffers`` back in."""
        return state._replace(A=buffers)

    @staticmethod
    def gram_row(A, valid, a):
        """⟨a_i, a⟩ for the bundle's cuts (0 off ``valid``), summed in `bundle_dtype`, reading
        A's used blocks only, or all of A in one product (`_by_blocks_or_at_once`)."""
        wide = bundle_dtype(A.dtype)
        a = a.astype(wide)

        def by_blocks(size, blocks):
            def block(k, q):
                rows = jax.lax.dynamic_slice_in_dim(A, k * size, size).astype(wide)
                return jax.lax.dynamic_update_slice_in_dim(
                    q, jnp.tensordot(rows, a, axes=a.ndim), k * size, 0)

            return jax.lax.fori_loop(0, blocks, block, jnp.zeros(A.shape[0], wide))

        q = _by_blocks_or_at_once(A, valid, by_blocks, lambda: jnp.tensordot(A, a, axes=a.ndim))
        return jnp.where(valid, q, 0.0)


def _used_blocks(A, valid):
    """(size, count): A's slots in blocks of ``size`` rows (≤ 16, dividing the capacity),
    and how many blocks from the first hold every valid cut. `BMRM.insert` fills the
    first free slot, so until the bundle is full only its first rows are in use, and a
    product over all of A (20 MB at d = 20,000 in float64) would mostly read zeros."""
    c = A.shape[0]
    size = max(r for r in range(1, min(c, 16) + 1) if c % r == 0)
    last = jnp.max(jnp.where(valid, jnp.arange(1, c + 1), 0))
    return size, (last + size - 1) // size


def _by_blocks_or_at_once(A, valid, by_blocks, at_once):
    """A product with the bundle: ``by_blocks(size, count)`` over A's used blocks
    (`_used_blocks`), or ``at_once()`` over all of A once those blocks hold half of a
    float64 bundle's slots or more.

    XLA's CPU backend runs the product over all of A as one dot on all cores; the loop over
    blocks reads each row more slowly, so it pays only while few blocks are in use, and
    from half of the slots on the product at once is the cheaper (measured:
    docs/design.md, "Measured design choices"). A float32 bundle (a float32 problem's cuts)
    is always read by blocks: the product at once would first write A out in float64.
    Under `jax.vmap` with lanes of different bundles the cond computes both (a select).
    """
    size, blocks = _used_blocks(A, valid)
    if A.dtype != bundle_dtype(A.dtype) or size == A.shape[0]:
        return by_blocks(size, blocks)
    return jax.lax.cond(2 * blocks * size >= A.shape[0], at_once,
                        lambda: by_blocks(size, blocks))


def aggregation_set(alpha, valid, share):
    """The cuts that an aggregation would merge (`BMRM.insert`): the ``share`` of the
    capacity with the smallest α among the valid ones (at least 2)."""
    c = alpha.shape[0]
    _, smallest = jax.lax.top_k(jnp.where(valid, -alpha, -jnp.inf), max(2, round(share * c)))
    return valid & jnp.zeros(c, bool).at[smallest].set(True)


def combine_cuts(alpha, A, valid):
    """Σ_i α_i a_i over the bundle (α is 0 off ``valid``), in α's dtype (`bundle_dtype`),
    reading A's used blocks only, or all of A in one product (`_by_blocks_or_at_once`)."""
    def by_blocks(size, blocks):
        def block(k, total):
            rows = jax.lax.dynamic_slice_in_dim(A, k * size, size).astype(alpha.dtype)
            weights = jax.lax.dynamic_slice_in_dim(alpha, k * size, size)
            return total + jnp.tensordot(weights, rows, axes=1)

        return jax.lax.fori_loop(0, blocks, block, jnp.zeros(A.shape[1:], alpha.dtype))

    return _by_blocks_or_at_once(A, valid, by_blocks, lambda: jnp.tensordot(alpha, A, axes=1))


def terminate_bundle(stats, best, tol, capacity):
    """BMRM's stopping rule (also the hybrid's): converged, or ``capacity`` repeats."""
    done = converged(best.value, best.gap, tol)
    stalled = ~done & (stats["repeats"] >= capacity)
    result = jnp.where(done, RESULTS.successful,
                       jnp.where(stalled, RESULTS.stalled, RESULTS.running))
    return done | stalled, result.astype(jnp.int32)

"""Dual coordinate descent for the linear SVM (Hsieh, Chang, Lin, Keerthi and Sundararajan
2008, Alg. 1), the method of LIBLINEAR, as a compiled loop with a certified gap.

nsjax's binary hinge problem J(w) = λ/2‖w‖² + (1/n) Σᵢ cᵢ max(0, 1 − yᵢxᵢᵀw) is λ times
LIBLINEAR's ½‖w‖² + Σᵢ Cᵢ ξᵢ with Cᵢ = cᵢ/(λn) (cᵢ = 1 without sample weights). Its dual

    max_α D(α) = λ (Σᵢ αᵢ − ½‖w(α)‖²),   w(α) = Σᵢ αᵢ yᵢ xᵢ,   0 ≤ αᵢ ≤ Cᵢ,

is maximized one coordinate at a time, each in closed form (Hsieh et al. 2008, eqs. 4–9):
with G = yᵢ xᵢᵀw − 1 (the partial derivative of −D/λ) and Qᵢᵢ = ‖xᵢ‖²,

    αᵢ ← min(max(αᵢ − G/Qᵢᵢ, 0), Cᵢ),   w ← w + (αᵢ_new − αᵢ) yᵢ xᵢ,

at the cost of one sparse row read and one sparse row update. A step of nsjax's loop is one
epoch: every coordinate once, in a random order (Sec. 3.1, "random permutation of
sub-problems"). After each epoch w is recomputed as w(α) = Xᵀ(α∘y) (one product: the
updates' rounding does not accumulate, so D(α) is a lower bound on min J as computed),
and J(w(α)) − D(α) is the epoch's certified gap; LIBLINEAR stops on a projected-gradient
rule that certifies nothing.

Shrinking (Sec. 3.2) skips the coordinates held at a bound (`DualCD`'s ``shrinking``); the
block variant (``block``) updates several coordinates at once, with an exact line search of
the dual quadratic along their steps (Takáč et al. 2013 analyse such mini-batch steps for the
SVM dual; here the line search makes any block size safe).

Not yet here: the squared hinge, an unregularized bias (two coordinates at once on
Σ yᵢαᵢ = 0) and the Crammer–Singer dual.

References: see docs/references.md.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.solvers._options import Options, solver_options
from nsjax.solvers.base import Core, Solver, count, counters
from nsjax.solvers.capabilities import Takes


class DualCDState(NamedTuple):
    core: Core  # w(α) after the last epoch, J there, D(α), counters
    alpha: jax.Array  # α, in LIBLINEAR's units: 0 ≤ αᵢ ≤ Cᵢ = cᵢ/(λn)
    w: jax.Array  # w(α) = Σ αᵢ yᵢ xᵢ
    active: jax.Array  # (n,) the coordinates an epoch visits (shrinking)
    bounds: jax.Array  # (M̄, m̄): the last epoch's extreme projected gradients (shrinking)
    spread: jax.Array  # M − m of the last epoch that visited every coordinate
    q: jax.Array  # (n,) Qᵢᵢ = ‖xᵢ‖², computed once
    starts: jax.Array | None  # where each row's chunks begin (`DesignMatrix.row_starts`)


@solver_options
class DualCD(Solver):
    """Dual coordinate descent for the linear SVM (Hsieh et al. 2008, Alg. 1): one epoch per
    step, in a random order, with the certified gap J(w(α)) − D(α) after each (module
    docstring).

    Args:
        seed: the seed of the epochs' random orders, an int (any that `jax.random.key`
            takes).
        block: the coordinates updated together, an int >= 1. 1: Alg. 1, one coordinate
            after the other. More: each block of the epoch's order proposes every
            coordinate's own step at once (as Alg. 1 would from the block's start) and
            moves along that direction by the exact line search of the dual quadratic,
            clipped to [0, 1] (the box is convex, and each coordinate's step descends, so
            every block ascends D: a safe step at any block size). Fewer, larger
            operations: what a GPU needs, at the price of more epochs.
        shrinking: skip, as LIBLINEAR does (Hsieh et al. 2008, Sec. 3.2), the coordinates at
            a bound whose gradient pushed them further out than the last epoch's extreme
            projected gradients (M̄, m̄); every coordinate is visited again once the
            visited ones' spread M − m has fallen tenfold since the last full epoch (the
            certified gap, always of the whole problem, decides the end). True or False;
            with ``block`` 1 only.

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.DualCD(), max_steps=2000, tol=1e-6)
        >>> sol.result
        <RESULTS.successful: 0>
    """

    seed: int = 0
    block: int = 1
    shrinking: bool = True

    #: The binary hinge with L2 and λ > 0, and sample weights (each a box Cᵢ); not yet a bias.
    takes: ClassVar[Takes] = Takes(losses=("svm",), regularizer="l2", positive_strength=True)
    #: The random order is a permutation of the n rows: padding rows would change it.
    shape_free: ClassVar[bool] = False

    def __post_init__(self):
        options = Options(self)
        options.int("seed", low=-(2**63), high=2**63 - 1)  # what jax.random.key takes
        options.int("block", low=1)
        options.bool("shrinking")

    def check(self, problem):
        """Refuse, before compiling, X split into blocks of rows (`Problem.shard`): the
        coordinates are read one row at a time."""
        if problem.X.blocks > 1:
            raise ValueError("DualCD reads X one row at a time and does not take a sharded "
                             "problem (Problem.shard); solve the unsharded problem.")

    def init(self, problem, w0) -> DualCDState:
        dt = problem.dtype
        # α = 0 whatever w0 (a primal point gives no dual one): w(α) = 0 and D(α) = 0; the
        # loop keeps w0 as the best iterate until an epoch beats it.
        alpha = jnp.zeros(problem.X.shape[0], dt)
        core = Core(w0, problem.objective(w0), jnp.zeros((), dt),
                    counters(matvecs=1, epochs=0))
        inf = jnp.asarray(jnp.inf, dt)
        X = problem.X
        return DualCDState(core, alpha, jnp.zeros_like(w0), jnp.ones(alpha.shape, bool),
                           jnp.stack([inf, -inf]), inf, X.row_sq_norms(), X.row_starts())

    def step(self, problem, state: DualCDState) -> DualCDState:
        X, y, lam = problem.X, problem.y, problem.lam
        n, dt = X.shape[0], problem.dtype
        weights = problem.loss.weights
        upper = (jnp.ones(n, dt) if weights is None else weights) / (lam * n)
        q, starts = state.q, state.starts
        epoch = state.core.stats["epochs"]
        order = jax.random.permutation(jax.random.fold_in(jax.random.key(self.seed), epoch), n)

        def proposal(i, alpha_i, g):
            """Each coordinate's own step (Hsieh et al. 2008, eq. 9), to αᵢ's new value; Qᵢᵢ = 0
            (an empty row): G = −1, so αᵢ goes to its bound."""
            return jnp.where(q[i] > 0, jnp.clip(alpha_i - g / jnp.where(q[i] > 0, q[i], 1.0),
                                                0.0, upper[i]),
                             jnp.where(g < 0, upper[i], alpha_i))

        active, bounds, spread = state.active, state.bounds, state.spread
        if self.block > 1:
            alpha = self._blocks(X, y, order, proposal, upper, starts, state)
        else:
            alpha, active, bounds, spread = self._epoch(X, y, order, proposal, upper, starts,
                                                        state)
        w = X.rmv(alpha * y)  # w(α) afresh: no accumulated rounding in the certificate
        value = problem.objective(w)
        dual = lam * (jnp.sum(alpha) - 0.5 * jnp.vdot(w, w))
        # Products: the rows read and updated (about two passes), w(α) and J's scores.
        core = Core(w, value, dual, count(state.core.stats, matvecs=4, epochs=1))
        return DualCDState(core, alpha, w, active, bounds, spread, q, starts)

    def _epoch(self, X, y, order, proposal, upper, starts, state):
        """One epoch of Alg. 1 over the active coordinates (all without ``shrinking``, whose
        bounds (M̄, m̄) are then ±inf: nothing is dropped): (α, active, (M̄, m̄), spread)
        after it."""
        inf = jnp.asarray(jnp.inf, state.alpha.dtype)
        if not self.shrinking:
            state = state._replace(bounds=jnp.stack([inf, -inf]))
        big, small = state.bounds[0], state.bounds[1]
        order = order[jnp.argsort(~state.active[order], stable=True)]  # the active first

        def coordinate(k, carry):
            alpha, w, active, top, bottom = carry
            i = order[k]
            g = y[i] * X.row_dot(i, w, starts) - 1.0
            low, high = alpha[i] <= 0, alpha[i] >= upper[i]
            shrink = (low & (g > big)) | (high & (g < small))
            projected = jnp.where(low, jnp.minimum(g, 0.0),
                                  jnp.where(high, jnp.maximum(g, 0.0), g))
            new = jnp.where(shrink, alpha[i], proposal(i, alpha[i], g))
            top = jnp.where(shrink, top, jnp.maximum(top, projected))
            bottom = jnp.where(shrink, bottom, jnp.minimum(bottom, projected))
            w = X.row_add(i, (new - alpha[i]) * y[i], w, starts)
            return alpha.at[i].set(new), w, active.at[i].set(~shrink), top, bottom

        alpha, _, active, top, bottom = jax.lax.fori_loop(
            0, jnp.sum(state.active), coordinate,
            (state.alpha, state.w, state.active, -inf, inf))
        if not self.shrinking:
            return alpha, state.active, state.bounds, state.spread
        full = jnp.all(state.active)
        spread = jnp.where(full, top - bottom, state.spread)
        # The visited ones have converged tenfold since the last full epoch: visit them all.
        again = ~full & (top - bottom <= 0.1 * spread)
        active = active | again
        bounds = jnp.where(again, jnp.stack([inf, -inf]),
                           jnp.stack([jnp.where(top > 0, top, inf),
                                      jnp.where(bottom < 0, bottom, -inf)]))
        return alpha, active, bounds, spread

    def _blocks(self, X, y, order, proposal, upper, starts, state):
        """One epoch by blocks of ``block`` coordinates (the class's Args): α after it."""
        n, B = X.shape[0], self.block
        blocks = -(-n // B)
        padded = jnp.concatenate([order, jnp.zeros(blocks * B - n, order.dtype)])
        member = jnp.arange(blocks * B) < n

        def one_block(b, carry):
            alpha, w, scratch = carry
            idx = jax.lax.dynamic_slice(padded, (b * B,), (B,))
            valid = jax.lax.dynamic_slice(member, (b * B,), (B,))
            g = y[idx] * X.rows_dot(idx, w, starts) - 1.0
            delta = jnp.where(valid, proposal(idx, alpha[idx], g) - alpha[idx], 0.0)
            # The dual (over λ, minimized) along Δ: f(t) = f + t gᵀΔ + t²/2 ‖v‖², v = X_Bᵀ(Δ∘y);
            # ‖v‖² from a scratch vector filled and cleared over the block's entries only.
            scratch = X.rows_add(idx, delta * y[idx], scratch, starts)
            vv = jnp.vdot(delta * y[idx], X.rows_dot(idx, scratch, starts))
            slope = jnp.vdot(g, delta)  # ≤ 0: every coordinate's step descends
            t = jnp.where(vv > 0, jnp.clip(-slope / jnp.where(vv > 0, vv, 1.0), 0.0, 1.0), 1.0)
            w = X.rows_add(idx, t * delta * y[idx], w, starts)
            # Clipped against rounding; added, not set: padding repeats row 0 with Δ = 0.
            moved = jnp.clip(alpha[idx] + t * delta, 0.0, upper[idx]) - alpha[idx]
            alpha = alpha.at[idx].add(jnp.where(valid, moved, 0.0))
            return alpha, w, X.rows_clear(idx, scratch, starts)

        alpha, _, _ = jax.lax.fori_loop(0, blocks, one_block,
                                        (state.alpha, state.w, jnp.zeros_like(state.w)))
        return alpha

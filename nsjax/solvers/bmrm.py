"""BMRM, the bundle method for regularized risk minimization (paper 001, Alg. 1), and its
variant with an exact line search between iterates (paper 000, Sec. 7.4: OCAS-like ls-BMRM).

Each step adds the cutting plane R(w) ≥ ⟨a, w⟩ + b taken at the current iterate (a ∈ ∂R(w),
b = R(w) − ⟨a, w⟩, eq. 3 of paper 001) to a bundle held in preallocated device buffers, and
minimizes the model J_t(w) = λ/2 ‖w‖² + max_i (⟨a_i, w⟩ + b_i) through its dual, a QP over
the simplex with Q = AᵀA/λ (Thm. 2, Cor. 3; `simplex_qp.py`); then w_t = −A α / λ.

Certified gap: every dual point α gives D(α) = −αᵀQα/(2λ) + bᵀα ≤ min J_t ≤ J*, so
ε_t = min_{t'≤t} J(w_{t'}) − max_{t'≤t} D(α_{t'}) (eq. 4 of paper 004, with J_t(w_t) = D(α_t)
at the QP's optimum) bounds the suboptimality of the best iterate, which is what
`Solution.w` returns (BMRM's iterates are not monotone in J).

Full bundle: cuts with α_i = 0 are dropped, oldest first. If every cut is active, the whole
bundle is aggregated into one cut (Σ α_i a_i, Σ α_i b_i): a convex combination of minorants of
R is a minorant, so the lower bound stays valid, and the model's minimum is unchanged.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from nsjax.results import RESULTS
from nsjax.solvers._options import solver_options
from nsjax.solvers.line_search import exact_line_search
from nsjax.solvers.simplex_qp import solve_simplex_qp

#: OCAS's step past the line-search optimum towards the model's minimizer, for the next cut.
OCAS_MU = 0.1


class BundleState(NamedTuple):
    w: jax.Array  # the best iterate so far
    value: jax.Array  # J(w), the best value so far
    w_now: jax.Array  # the current iterate w_t (with line_search="exact": the better of the
    #                   line-search point and the cut point)
    S_now: jax.Array  # X w_t
    value_now: jax.Array  # J(w_t)
    cut_a: jax.Array  # the cut at w_t, not yet in the bundle
    cut_b: jax.Array
    A: jax.Array  # (capacity, *w.shape) cut gradients
    b: jax.Array  # (capacity,) cut offsets
    Q: jax.Array  # (capacity, capacity) Gram matrix ⟨a_i, a_j⟩
    valid: jax.Array  # (capacity,) slots in use
    age: jax.Array  # (capacity,) step at which each cut was added
    alpha: jax.Array  # (capacity,) dual weights of the last QP
    lower: jax.Array  # max_t D(α_t): a lower bound on min J
    gap: jax.Array
    num_steps: jax.Array
    result: jax.Array
    stats: dict


def take_cut(problem, w, S):
    """J(w) and the cutting plane of R at w: (value, a, b) with a = Xᵀu, u ∈ ∂R(S)."""
    risk = problem.loss.risk(S, problem.y)
    a = problem.X.rmv(problem.loss.dscores(S, problem.y))
    return problem.reg.value(w) + risk, a, risk - jnp.vdot(a, w)


def check_strongly_regularized(problem, name):
    lam = problem.lam
    if not isinstance(lam, jax.core.Tracer) and not float(lam) > 0:
        raise ValueError(f"{name} needs lam > 0 (its model is minimized through the dual).")


@solver_options
class BMRM:
    """qp-BMRM (paper 001, Alg. 1), optionally with the exact line search of paper 000.

    Args:
        capacity: number of cuts kept on the device (see the module docstring when full).
        line_search: "none" (plain BMRM: w_{t+1} is the model's minimizer) or "exact"
            (OCAS-like ls-BMRM, paper 000 Sec. 7.4: exact line search from the current
            iterate towards the model's minimizer, cut taken just past the line's optimum;
            needs a loss that gives its lines).
        qp_iterations: accelerated projected-gradient iterations of the inner QP per step,
            followed by an exact polish on the support (`simplex_qp.py`).

    Stops on the certified gap ε_t ≤ tol · max(1, |J|).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=300, tol=1e-6)
    """

    capacity: int = 128
    line_search: str = "none"
    qp_iterations: int = 300

    def __post_init__(self):
        if not (isinstance(self.capacity, int) and self.capacity >= 2):
            raise ValueError(f"capacity must be an int >= 2; got {self.capacity!r}.")
        if self.line_search not in ("none", "exact"):
            raise ValueError(f"line_search must be 'none' or 'exact'; got {self.line_search!r}.")
        if not (isinstance(self.qp_iterations, int) and self.qp_iterations >= 1):
            raise ValueError(f"qp_iterations must be an int >= 1; got {self.qp_iterations!r}.")

    def check(self, problem):
        check_strongly_regularized(problem, "BMRM")
        if self.line_search == "exact" and not problem.has_lines:
            raise ValueError(
                f"BMRM(line_search='exact') needs a loss that gives its lines; "
                f"{type(problem.loss).__name__} does not. Use line_search='none'."
            )

    def init(self, problem, w0) -> BundleState:
        dt = problem.dtype
        S = problem.scores(w0)
        value, a, b = take_cut(problem, w0, S)
        c = self.capacity
        zero = jnp.zeros((), jnp.int32)
        return BundleState(
            w=w0, value=value, w_now=w0, S_now=S, value_now=value, cut_a=a, cut_b=b,
            A=jnp.zeros((c,) + w0.shape, dt), b=jnp.zeros(c, dt), Q=jnp.zeros((c, c), dt),
            valid=jnp.zeros(c, bool), age=jnp.zeros(c, jnp.int32), alpha=jnp.zeros(c, dt),
            lower=jnp.asarray(-jnp.inf, dt), gap=jnp.asarray(jnp.inf, dt), num_steps=zero,
            result=zero + RESULTS.running,
            stats=dict(matvecs=zero + 2, aggregations=zero, dropped_cuts=zero),
        )

    def _insert(self, state: BundleState):
        """Put the pending cut into the bundle, making room first if it is full."""
        A, b, Q, valid, age, alpha = state.A, state.b, state.Q, state.valid, state.age, state.alpha
        full = jnp.all(valid)
        inactive = valid & (alpha <= 0)
        aggregate = full & ~jnp.any(inactive)
        first = jnp.arange(self.capacity) == 0

        def aggregate_into_first_slot(A, b, Q, valid, alpha):
            A = jnp.where(_bcast(first, A), jnp.tensordot(alpha, A, axes=1)[None], 0.0)
            Q = jnp.where(first[:, None] & first[None, :], alpha @ Q @ alpha, 0.0)
            return A, jnp.where(first, alpha @ b, 0.0), Q, first, first.astype(alpha.dtype)

        # A cond, so that the (capacity, d) bundle is not rewritten at every step.
        A, b, Q, valid, alpha = jax.lax.cond(
            aggregate, aggregate_into_first_slot, lambda *bundle: bundle, A, b, Q, valid, alpha)
        # The slot: the oldest inactive cut if full, else the first free slot.
        big = jnp.iinfo(jnp.int32).max
        oldest_inactive = jnp.argmin(jnp.where(inactive, age, big))
        free_slot = jnp.argmin(valid)
        slot = jnp.where(full & ~aggregate, oldest_inactive, free_slot)
        a = state.cut_a
        q = jnp.where(valid, jnp.tensordot(A, a, axes=a.ndim), 0.0)
        q = q.at[slot].set(jnp.vdot(a, a))
        Q = Q.at[slot, :].set(q).at[:, slot].set(q)
        A = A.at[slot].set(a)
        b = b.at[slot].set(state.cut_b)
        valid = valid.at[slot].set(True)
        age = age.at[slot].set(state.num_steps)
        alpha = alpha.at[slot].set(0.0)
        dropped = (full & ~aggregate).astype(jnp.int32)
        return A, b, Q, valid, age, alpha, aggregate.astype(jnp.int32), dropped

    def step(self, problem, state: BundleState) -> BundleState:
        lam = problem.lam
        A, b, Q, valid, age, alpha, aggregated, dropped = self._insert(state)
        alpha = solve_simplex_qp(Q, b, lam, valid, alpha, self.qp_iterations)
        Aalpha = jnp.tensordot(alpha, A, axes=1)
        dual = -jnp.vdot(Aalpha, Aalpha) / (2 * lam) + jnp.vdot(alpha, b)  # D(α) ≤ J*
        lower = jnp.maximum(state.lower, dual)
        w_model = -Aalpha / lam

        S_model = problem.scores(w_model)
        if self.line_search == "exact":
            # OCAS (Franc & Sonnenburg 2008; paper 000 Sec. 7.4): search the line from the
            # current iterate w_b to the model's minimizer exactly, then take the next cut a
            # little past the line's optimum, at (1 − μ) w_ls + μ w_model with μ = 0.1, so
            # that the model improves even when the line search cannot move (η* = 0).
            p, dS = w_model - state.w_now, S_model - state.S_now
            c_reg, h = problem.reg.line(state.w_now, p)
            bl, al = problem.loss.lines(state.S_now, dS, problem.y)
            eta = exact_line_search(bl, al, c_reg, h).eta
            eta = jnp.where(jnp.isfinite(eta), eta, 1.0)
            w_ls, S_ls = state.w_now + eta * p, state.S_now + eta * dS
            value_ls = problem.value(w_ls, S_ls)
            w_cut = (1 - OCAS_MU) * w_ls + OCAS_MU * w_model
            S_cut = (1 - OCAS_MU) * S_ls + OCAS_MU * S_model
            value_cut, a, cut_b = take_cut(problem, w_cut, S_cut)
            cut_better = value_cut < value_ls
            w_new = jnp.where(cut_better, w_cut, w_ls)
            S_new = jnp.where(cut_better, S_cut, S_ls)
            value = jnp.minimum(value_cut, value_ls)
        else:
            w_new, S_new = w_model, S_model
            value, a, cut_b = take_cut(problem, w_new, S_new)
        better = value < state.value
        best_value = jnp.where(better, value, state.value)
        s = state.stats
        stats = dict(matvecs=s["matvecs"] + 2,
                     aggregations=s["aggregations"] + aggregated,
                     dropped_cuts=s["dropped_cuts"] + dropped)
        return BundleState(
            w=jnp.where(better, w_new, state.w), value=best_value, w_now=w_new, S_now=S_new,
            value_now=value, cut_a=a, cut_b=cut_b, A=A, b=b, Q=Q, valid=valid, age=age,
            alpha=alpha, lower=lower, gap=best_value - lower, num_steps=state.num_steps + 1,
            result=state.result, stats=stats,
        )

    def record(self, state: BundleState):
        """History entries: J(w_t) of the current iterate and the certified gap ε_t."""
        return state.value_now, state.gap

    def terminate(self, problem, state: BundleState, tol):
        converged = state.gap <= tol * jnp.maximum(1.0, jnp.abs(state.value))
        result = jnp.where(converged, RESULTS.successful, RESULTS.running)
        return converged, result.astype(jnp.int32)


def _bcast(mask, like):
    return mask.reshape(mask.shape + (1,) * (like.ndim - 1))

"""The solver contract: what `nsjax.solve` drives, and what every solver shares.

A solver is a frozen dataclass of static options (hashable: a `jit` static argument) that
subclasses `Solver` and writes two methods:

- ``init(problem, w0) -> state``: a NamedTuple of arrays with a field ``core`` (`Core`);
  shapes and dtypes are fixed here and never change;
- ``step(problem, state) -> state``: one outer iteration, no Python control flow on traced
  values.

Everything else has a default: ``check`` (refuse a problem before compiling), ``terminate``
(stop on the certified gap, `converged`) and ``postprocess`` (a last, tighter certificate).
The loop (`nsjax.loop`) owns the step count, the history, the non-finite guard and the
best iterate (`Best`): every solver's ``core`` describes its *own* latest iterate, and the
loop keeps the best one, so a non-monotone method (bundle, accelerated) needs no
bookkeeping of its own to return its best point.

Example: a new solver is one file (see ``tests/toy_solver.py`` for a complete one).

    >>> import jax.numpy as jnp
    >>> from nsjax.solvers import Core, Solver, solver_options
    >>> @solver_options
    ... class Stay(Solver):
    ...     '''Never moves: J(w0), no certificate.'''
    ...     def init(self, problem, w0):
    ...         return Core.start(problem, w0, lower=-jnp.inf, matvecs=1)
    ...     def step(self, problem, state):
    ...         return state
    >>> import nsjax, numpy as np
    >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1.0),
    ...                      np.eye(2), [1, -1])
    >>> nsjax.solve(prob, Stay(), max_steps=3).result
    <RESULTS.max_steps_reached: 1>

References: see docs/references.md.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.results import RESULTS
from nsjax.solvers.capabilities import Takes


def converged(value, gap, tol):
    """The stopping rule every solver shares: gap ≤ tol · max(1, |J|)."""
    return gap <= tol * jnp.maximum(1.0, jnp.abs(value))


#: The paper's stall rule (Yu et al. 2010, Sec. 7; Andrew and Gao 2007) averages J's
#: decrease over this many steps.
STALL_WINDOW = 5


def terminate_or_stall(value, recent, status, best, tol, stall_tol, floor=None):
    """(done, result) for a descent method: successful on the certified gap (`converged`),
    else the failure in ``status``, else `RESULTS.stalled` when J's relative decrease
    averaged over the last `STALL_WINDOW` steps (``recent``: J, or a running total of its
    changes, at the last window + 1 steps, oldest first) is below ``stall_tol``, raised
    to ``floor`` (default: machine epsilon, the resolution of J itself)."""
    decrease = (recent[0] - recent[-1]) / STALL_WINDOW
    floor = jnp.finfo(value.dtype).eps if floor is None else floor
    stall_tol = jnp.maximum(stall_tol, floor)
    stalled = decrease <= stall_tol * jnp.maximum(jnp.abs(value), jnp.finfo(value.dtype).tiny)
    result = jnp.where(
        converged(best.value, best.gap, tol), RESULTS.successful,
        jnp.where(status != RESULTS.running, status,
                  jnp.where(stalled, RESULTS.stalled, RESULTS.running)))
    return result != RESULTS.running, result.astype(jnp.int32)


def counters(**start) -> dict:
    """A stats dict of int32 counters, e.g. ``counters(matvecs=2, restarts=0)``."""
    return {k: jnp.asarray(v, jnp.int32) for k, v in start.items()}


def count(stats: dict, **increments) -> dict:
    """``stats`` with each named counter increased (by an int or a traced int/bool)."""
    return dict(stats, **{k: stats[k] + jnp.asarray(v).astype(jnp.int32)
                          for k, v in increments.items()})


class Core(NamedTuple):
    """What every solver state carries, for its own latest iterate w_t.

    Attributes:
        w: the iterate.
        value: J(w).
        lower: a certified lower bound on min J found at this step (a dual value), or
            −inf where the step found none. The loop keeps the best one over all steps,
            so a solver need not.
        stats: dict of int32 counters (``matvecs`` at least).
    """

    w: jax.Array
    value: jax.Array
    lower: jax.Array
    stats: dict

    @property
    def gap(self):
        """J(w) − lower: a certified bound on the suboptimality of w."""
        return self.value - self.lower

    @classmethod
    def start(cls, problem, w0, lower=-jnp.inf, **stats) -> Core:
        """The core at w0, computing J(w0) (one product with X; count it in ``stats``)."""
        return cls(w0, problem.value(w0), jnp.asarray(lower, problem.dtype), counters(**stats))


class Best(NamedTuple):
    """The best iterate so far and the best lower bound: what `solve` returns.

    The loop updates it after every step with `update`; solvers see it in ``terminate``
    and ``postprocess``. For a monotone method it is the latest iterate.
    """

    w: jax.Array
    value: jax.Array
    lower: jax.Array

    @property
    def gap(self):
        """value − lower: a certified bound on J(w) − min J (inf without a lower bound)."""
        return self.value - self.lower

    @classmethod
    def start(cls, core: Core) -> Best:
        """The best so far before any step: w0 and its bound."""
        return cls(core.w, core.value, jnp.where(jnp.isnan(core.lower), -jnp.inf, core.lower))

    def update(self, core: Core) -> Best:
        """Keep the lower of the two values (strictly lower: ties keep the older) and the
        higher lower bound; the bound holds for min J, whichever iterate produced it."""
        better = core.value < self.value
        # fmax: a NaN bound (a failed dual computation) is ignored, not kept for good.
        return Best(jnp.where(better, core.w, self.w), jnp.where(better, core.value, self.value),
                    jnp.fmax(self.lower, core.lower))

    def raise_lower(self, lower) -> Best:
        """With a new lower bound on min J (kept only if higher)."""
        return self._replace(lower=jnp.fmax(self.lower, lower))


class Solver(abc.ABC):
    """Base of every nsjax solver: write ``init`` and ``step``; override the rest at need.

    Subclasses are frozen dataclasses (decorate with `nsjax.solvers.solver_options`) of
    static options only, so that a solver is a `jit` static argument.
    """

    #: What the solver takes (losses, regularizers, a bias, sample weights, geometries,
    #: constraints, λ = 0): `nsjax.solve` refuses the rest before compiling and names the
    #: solvers that take it. The default: any loss and regularizer in R^d, no bias. A
    #: solver whose options change it overrides ``takes`` with a property.
    takes: ClassVar[Takes] = Takes()
    #: Whether the iterates depend on the problem only through its objective, not on the
    #: number of weights or examples as such, so that `nsjax.buckets` may pad the problem
    #: with zero columns (and weightless rows) without changing a run.
    shape_free: ClassVar[bool] = True

    @classmethod
    def variants(cls) -> tuple:
        """The configurations of this solver that take different problems (default: the
        default instance), for the message naming the solvers that take a problem."""
        return (cls(),)

    @abc.abstractmethod
    def init(self, problem, w0) -> Any:
        """The state at w0: a NamedTuple of arrays with a ``core`` field (or a `Core`)."""

    @abc.abstractmethod
    def step(self, problem, state) -> Any:
        """One outer iteration: the next state, same shapes and dtypes."""

    def check(self, problem) -> None:
        """Raise ValueError (before compiling) if this solver cannot solve ``problem``."""
        return None

    def terminate(self, problem, state, best: Best, tol):
        """(done, result) after a step. Default: done when ``best``'s certified gap is
        ≤ tol · max(1, |J|) (`converged`). Overrides add their own failure statuses."""
        done = converged(best.value, best.gap, tol)
        return done, jnp.where(done, RESULTS.successful, RESULTS.running).astype(jnp.int32)

    def postprocess(self, problem, state, best: Best, result, tol):
        """After the loop: (state, best, result), e.g. with a tighter lower bound; the
        loop returns what this returns. Default: unchanged."""
        return state, best, result


def core_of(state) -> Core:
    """A state's `Core`: the state itself if it is one, else its ``core`` field."""
    return state if isinstance(state, Core) else state.core

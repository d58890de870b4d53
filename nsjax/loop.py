"""The one driver: a solver's init / step / terminate under a single `lax.while_loop`.

`solve` compiles once per (shapes, dtypes, solver options, max_steps): the problem's data,
λ and tol are traced arguments. `sweep` vmaps the same loop over λ, so a whole
regularization path is one XLA program. Each step's J and gap go into preallocated,
NaN-padded history arrays. A step that produces a non-finite J or w is discarded: the run
stops with `RESULTS.nonfinite` and keeps the last finite iterate.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.problem import Problem
from nsjax.results import RESULTS, History, Solution


def _run(problem, w0, tol, solver, max_steps):
    state = solver.init(problem, w0)
    nan = jnp.full(max_steps, jnp.nan, problem.dtype)
    history = History(nan, nan)
    done0, result0 = solver.terminate(problem, state, tol)

    def cond(carry):
        state, _, done, _, t = carry
        return ~done & (t < max_steps)

    def body(carry):
        state, history, _, _, t = carry
        new = solver.step(problem, state)
        # What the history records: J and the gap at the new iterate (for the bundle
        # methods, the current iterate rather than the best one).
        value, gap = solver.record(new) if hasattr(solver, "record") else (new.value, new.gap)
        finite = (jnp.isfinite(new.value) & jnp.isfinite(value)
                  & jnp.all(jnp.isfinite(new.w)))
        # A cond, not a select over every leaf: that would copy the whole state (an L-BFGS
        # memory holds 2·m·d numbers) at every step.
        new = jax.lax.cond(finite, lambda: new, lambda: state)
        done, result = solver.terminate(problem, new, tol)
        result = jnp.where(finite, result, RESULTS.nonfinite).astype(jnp.int32)
        done = done | ~finite
        history = History(history.value.at[t].set(jnp.where(finite, value, jnp.nan)),
                          history.gap.at[t].set(jnp.where(finite, gap, jnp.nan)))
        return new, history, done, result, t + 1

    carry = (state, history, done0, result0, jnp.zeros((), jnp.int32))
    state, history, done, result, t = jax.lax.while_loop(cond, body, carry)
    result = jnp.where(done, result, RESULTS.max_steps_reached)
    if hasattr(solver, "finalize"):
        # A last, tighter certificate where the solver has one; it can only lower the gap.
        state = solver.finalize(problem, state, tol)
        ok = state.gap <= tol * jnp.maximum(1.0, jnp.abs(state.value))
        result = jnp.where(ok & (result != RESULTS.nonfinite), RESULTS.successful, result)
    result = result.astype(jnp.int32)
    return Solution(w=state.w, value=state.value, gap=state.gap, result=result,
                    num_steps=t, stats=state.stats, history=history)


_run_jit = jax.jit(_run, static_argnames=("solver", "max_steps"))


@functools.partial(jax.jit, static_argnames=("solver", "max_steps"))
def _sweep_jit(problem, lams, w0, tol, solver, max_steps):
    return jax.vmap(lambda lam: _run(problem.with_lam(lam), w0, tol, solver, max_steps))(lams)


def _default_solver(solver):
    if solver is None:
        from nsjax.solvers import SubLBFGS

        return SubLBFGS()
    if not all(hasattr(solver, a) for a in ("init", "step", "terminate")):
        raise TypeError(f"solver must be an nsjax solver (e.g. SubLBFGS()); got {solver!r}.")
    return solver


def _check_solver(solver, problem):
    """Let the solver refuse a problem it cannot handle, before compiling."""
    if hasattr(solver, "check"):
        solver.check(problem)


def _check_common(problem, w0, max_steps, tol):
    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be an nsjax.Problem; got {type(problem).__name__}.")
    if not (isinstance(max_steps, (int, np.integer)) and max_steps >= 1):
        raise ValueError(f"max_steps must be an int >= 1; got {max_steps!r}.")
    if not (np.isfinite(tol) and tol >= 0):
        raise ValueError(f"tol must be finite and >= 0; got {tol!r}.")
    shape = problem.w_shape
    if w0 is None:
        return jnp.zeros(shape, problem.dtype)
    w0 = np.asarray(w0)
    if w0.shape != shape:
        raise ValueError(f"w0 must have shape {shape} to match the problem; got {w0.shape}.")
    if not np.all(np.isfinite(w0)):
        raise ValueError("w0 contains NaN or inf.")
    return jnp.asarray(w0, problem.dtype)


def solve(problem, solver=None, w0=None, max_steps=500, tol=1e-6, *, jit=True, throw=False):
    """Minimize ``problem`` with ``solver`` (default `SubLBFGS()`).

    Args:
        problem: an `nsjax.Problem`.
        solver: a solver from `nsjax.solvers`.
        w0: the starting point, shape (d,); default zeros (as in paper 000, Sec. 7).
        max_steps: cap on outer iterations (also the length of ``history``).
        tol: stop when the certified gap is ≤ tol · max(1, |J|).
        jit: False runs the same code eagerly (for debugging; slow).
        throw: raise RuntimeError if the run ends with a failure status.

    Returns:
        A `Solution`; ``sol.result`` is a `RESULTS` member.
    """
    solver = _default_solver(solver)
    w0 = _check_common(problem, w0, max_steps, tol)
    tol = jnp.asarray(tol, problem.dtype)
    _check_solver(solver, problem)
    if jit:
        sol = _run_jit(problem, w0, tol, solver, int(max_steps))
    else:
        with jax.disable_jit():
            sol = _run(problem, w0, tol, solver, int(max_steps))
    sol = sol._replace(result=RESULTS(int(sol.result)))
    if throw and sol.result.is_failure:
        raise RuntimeError(f"{type(solver).__name__} failed: {sol.result.message}")
    return sol


def sweep(problem, lams, solver=None, w0=None, max_steps=500, tol=1e-6):
    """Solve ``problem`` for every λ in ``lams`` in one compiled, vmapped program.

    Returns:
        A `Solution` whose fields are stacked along a leading axis of length len(lams);
        ``result`` is an int32 array (compare with `RESULTS` members).
    """
    solver = _default_solver(solver)
    w0 = _check_common(problem, w0, max_steps, tol)
    lams = np.asarray(lams, dtype=float)
    if lams.ndim != 1 or lams.size == 0:
        raise ValueError(f"lams must be a non-empty 1-D sequence; got shape {lams.shape}.")
    if not np.all(np.isfinite(lams)) or np.any(lams < 0):
        raise ValueError(f"every lam must be finite and >= 0; got {lams.tolist()}.")
    _check_solver(solver, problem.with_lam(float(lams.min())))
    return _sweep_jit(problem, jnp.asarray(lams, problem.dtype), w0,
                      jnp.asarray(tol, problem.dtype), solver, int(max_steps))

"""The one driver: a solver's init / step / terminate under a single `lax.while_loop`.

`solve` compiles once per (shapes, dtypes, solver options): the problem's data, λ, tol and
max_steps are traced arguments (the history buffers have one of a few lengths,
`history_length`, and are cut to max_steps after the run). `sweep` runs that loop along a
path of λ (warm started, a `lax.scan`) or vmaps it over λ, so a whole regularization path
is one XLA program. The loop owns what every solver shares: the step count, the best
iterate and best lower bound (`nsjax.solvers.base.Best`), the history (`History`: each
step's J, the best J so far and its certified gap, NaN-padded) and the non-finite guard: a
step that produces a non-finite J or w never enters the best iterate, and the run stops
with `RESULTS.nonfinite`, returning the best finite iterate.

`solve` can itself be called under the user's `jax.jit` or `jax.vmap` (for example over a
batch of same-shape problems, see `solve_batch`); the checks that need concrete values are
then skipped and ``result`` stays an int32 array.

References: see docs/references.md.
"""

from __future__ import annotations

import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from nsjax import buckets
from nsjax.data import on_host, round_up, to_device
from nsjax.implicit import implicit_solution
from nsjax.problem import Problem, is_traced
from nsjax.programs import Program, program
from nsjax.results import RESULTS, ConvergenceWarning, History, Solution
from nsjax.solvers.base import Best, core_of
from nsjax.solvers.registry import as_solver, check, default_solver


class _Progress:
    """The host side of ``solve(..., progress=k)``: the compiled loop calls `report` every
    k steps (`jax.debug.callback`); it prints one line, rewritten in place, once the run is
    older than `delay` seconds, at most every `interval` seconds."""

    delay, interval = 1.0, 0.2
    start = last = 0.0
    shown = False
    stream = sys.stderr

    @classmethod
    def begin(cls):
        cls.start, cls.last, cls.shown, cls.stream = time.perf_counter(), 0.0, False, sys.stderr

    @classmethod
    def report(cls, step, value, gap):
        now = time.perf_counter()
        elapsed = now - cls.start
        if elapsed < cls.delay or now - cls.last < cls.interval:
            return
        cls.last, cls.shown = now, True
        cls._write(step, value, gap, elapsed, " ")

    @classmethod
    def end(cls, sol):
        """The final line (only where progress was shown)."""
        if cls.shown:
            cls._write(sol.num_steps, sol.value, sol.gap, time.perf_counter() - cls.start,
                       f"   {RESULTS(int(sol.result)).name}\n")

    @classmethod
    def _write(cls, step, value, gap, elapsed, tail):
        cls.stream.write(f"\rstep {int(step):>7}   objective {float(value):.10g}   "
                         f"certified gap {float(gap):.3e}   {elapsed:7.1f} s{tail}")
        cls.stream.flush()


def history_length(max_steps: int) -> int:
    """The length of the history buffers compiled for ``max_steps``: at least 2048 (48 kB
    in float64), at most 1/8 more than max_steps. Every max_steps up to that length runs
    the same program (max_steps itself is traced); `solve` cuts the history to max_steps."""
    return round_up(max_steps, 2048)


def _cut(sol, max_steps):
    """``sol`` with its history cut to ``max_steps`` entries (the last axis: a sweep's or a
    batch's history is stacked along a leading one)."""
    if sol.history.value.shape[-1] == max_steps:
        return sol

    def cut(h):
        if is_traced(h) or not h.is_fully_addressable:  # (other hosts hold parts of it)
            return h[..., :max_steps]
        # (On the host: an eager slice would compile a program per new max_steps.)
        return on_host(h, lambda a: a[..., :max_steps])

    return sol._replace(history=History(*(cut(h) for h in sol.history)))


def _run(problem, w0, tol, max_steps, solver, length, progress=0):
    """The solve loop: at most ``max_steps`` (traced) steps, history buffers of ``length``
    (static, ≥ max_steps)."""
    state = solver.init(problem, w0)
    best = Best.start(core_of(state))
    nan = jnp.full(length, jnp.nan, problem.dtype)
    history = History(nan, nan, nan)
    done0, result0 = solver.terminate(problem, state, best, tol)
    # J(w0) itself overflows (weights, targets or data too large for the dtype): no step.
    start_finite = jnp.isfinite(best.value)
    done0 = done0 | ~start_finite
    result0 = jnp.where(start_finite, result0, RESULTS.nonfinite).astype(jnp.int32)

    def cond(carry):
        *_, done, _, t = carry
        return ~done & (t < max_steps)

    def body(carry):
        state, best, history, _, _, t = carry
        new = solver.step(problem, state)
        core = core_of(new)
        finite = jnp.isfinite(core.value) & jnp.all(jnp.isfinite(core.w))
        # A non-finite step ends the run; only `best` (what is returned) must stay finite.
        # The state is not rolled back: keeping the old one alive next to the new one
        # would make XLA copy every buffer updated in place (an L-BFGS memory, a bundle)
        # at every step.
        best = jax.tree_util.tree_map(lambda a, b: jnp.where(finite, a, b),
                                      best.update(core), best)
        done, result = solver.terminate(problem, new, best, tol)
        result = jnp.where(finite, result, RESULTS.nonfinite).astype(jnp.int32)
        nan = jnp.asarray(jnp.nan, problem.dtype)
        history = History(*(h.at[t].set(jnp.where(finite, v, nan)) for h, v in
                             zip(history, (core.value, best.gap, best.value), strict=True)))
        if progress:  # static: without it, nothing of this is compiled
            jax.lax.cond((t + 1) % progress == 0,
                         lambda: jax.debug.callback(_Progress.report, t + 1, best.value,
                                                    best.gap),
                         lambda: None)
        return new, best, history, done | ~finite, result, t + 1

    carry = (state, best, history, done0, result0, jnp.zeros((), jnp.int32))
    state, best, history, done, result, t = jax.lax.while_loop(cond, body, carry)
    result = jnp.where(done, result, RESULTS.max_steps_reached).astype(jnp.int32)
    state, best, result = solver.postprocess(problem, state, best, result, tol)
    # Never successful on a non-finite J or gap (inf ≤ tol · |inf| holds).
    certified = jnp.isfinite(best.value) & jnp.isfinite(best.gap)
    result = jnp.where((result == RESULTS.successful) & ~certified, RESULTS.nonfinite, result)
    return Solution(w=best.w, value=best.value, gap=best.gap, result=result.astype(jnp.int32),
                    num_steps=t, stats=core_of(state).stats, history=history)


_run_jit = Program(_run, static_argnames=("solver", "length", "progress"), name="solve")


@program(static_argnames=("solver", "length", "warm_start"), name="sweep")
def _sweep_jit(problem, lams, w0, tol, max_steps, solver, length, warm_start=True):
    if not warm_start:
        return jax.vmap(lambda lam: _run(problem.with_strength(lam), w0, tol, max_steps, solver,
                                         length))(lams)

    # One strength after another, each solve from the last one's solution (a scan: one
    # compiled body; a strength costs its own steps only). The path runs from the largest
    # strength down (the sparsest, best-conditioned solution first); the solutions are
    # put back in the order of lams.
    def solve_from(w, lam):
        sol = _run(problem.with_strength(lam), w, tol, max_steps, solver, length)
        return sol.w, sol

    order = jnp.argsort(-lams, stable=True)
    sols = jax.lax.scan(solve_from, w0, lams[order])[1]
    inverse = jnp.argsort(order)
    return jax.tree_util.tree_map(lambda x: x[inverse], sols)


def _check_common(problem, w0, max_steps, tol):
    """Refuse bad arguments before compiling; return w0 as an array of the problem's dtype.
    Values that are traced (the caller's jit or vmap) cannot be inspected and pass.

    Checked as they will be used: tol and w0 after the cast to the problem's dtype, and
    J(w0) finite (one product with X); max_steps at most `nsjax.problem.MAX_STEPS` (10**7:
    the history is allocated up front)."""
    from nsjax._checks import MAX_STEPS, check_real_scalar, real_array

    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be an nsjax.Problem; got {type(problem).__name__}.")
    if isinstance(max_steps, (bool, np.bool_)) or not isinstance(max_steps, (int, np.integer)):
        raise TypeError(f"max_steps must be an int >= 1 (e.g. max_steps=500); got "
                        f"{max_steps!r} ({type(max_steps).__name__}).")
    if not 1 <= max_steps <= MAX_STEPS:
        raise ValueError(
            f"max_steps must be between 1 and {MAX_STEPS:,} (the history of 3 x max_steps "
            f"numbers is allocated before the first step); got {max_steps:,}. For a longer "
            "run, restart from the last solution (w0=sol.w).")
    dt = np.dtype(problem.dtype)
    tol_value = check_real_scalar(tol, "tol", "tol=1e-6")
    if tol_value is not None:
        with np.errstate(over="ignore"):
            held = tol_value.astype(dt)
        if not (np.isfinite(held) and held >= 0):
            raise ValueError(f"tol must be finite and >= 0 in {dt.name}; got {tol!r}. It is "
                             "relative: stop when the gap <= tol * max(1, |J|).")
    shape = problem.w_shape
    if w0 is None:
        return problem.start()
    if not is_traced(w0):
        real_array(w0, "w0", f"an array of real numbers of shape {shape} (or None for zeros)")
    if np.shape(w0) != shape:
        raise ValueError(
            f"w0 must have shape {shape} to match the problem; got {np.shape(w0)}.")
    if is_traced(w0):
        return jnp.asarray(w0, problem.dtype)
    with np.errstate(over="ignore"):
        w = np.asarray(w0).astype(dt)
    if not np.all(np.isfinite(w)):
        bad = int(np.size(w) - np.count_nonzero(np.isfinite(w)))
        raise ValueError(f"w0 contains {bad} NaN or inf entries as held in {dt.name} (entries "
                         f"beyond {float(np.finfo(dt).max):.3g} overflow); pass finite values.")
    w = jnp.asarray(w, problem.dtype)
    if not any(is_traced(leaf) for leaf in jax.tree_util.tree_leaves(problem)):
        value = float(problem.objective(w))
        reg = problem.coefficient_reg
        if not np.isfinite(value) and reg.geometry == "entropy":
            raise ValueError(f"w0 gives J(w0) = {value}: it is outside {type(reg).__name__}'s "
                             "domain, the capped simplex (w >= 0, w <= cap, sum(w) = 1); pass "
                             "a point of it, or w0=None (the uniform weights).")
        if not np.isfinite(value) and reg.constraint:
            raise ValueError(f"w0 gives J(w0) = {value}: it is outside the set of the "
                             f"constraint {type(reg).__name__}; pass a point of it (e.g. "
                             "reg.prox(w0, 1.0), its projection), or w0=None (zeros).")
        if not np.isfinite(value):
            raise ValueError(f"w0 gives J(w0) = {value} in {dt.name} (λ‖w0‖² or the scores "
                             "X w0 overflow); start from a smaller w0, or w0=None (zeros).")
    return w


def _progress_every(progress) -> int:
    """0 (no progress) or the number of steps between reports."""
    if progress is False or progress is None:
        return 0
    if progress is True:
        return 10
    if isinstance(progress, (int, np.integer)) and not isinstance(progress, bool) and progress >= 1:
        return int(progress)
    raise ValueError(f"progress must be True, False or the number of steps between reports "
                     f"(an int >= 1); got {progress!r}.")


def solve(problem, solver=None, w0=None, max_steps=500, tol=1e-6, *, jit=True, throw=False,
          progress=False):
    """Minimize ``problem`` with ``solver`` (default: `default_solver`, the `Hybrid`).

    Args:
        problem: an `nsjax.Problem`.
        solver: a solver from `nsjax.solvers`.
        w0: the starting point, shape ``problem.w_shape``; default zeros (Yu et al. 2010, Sec. 7).
        max_steps: cap on outer iterations (also the length of ``history``). Traced: a
            new value does not recompile (up to `history_length`, the buffer compiled).
        tol: stop when the certified gap is ≤ tol · max(1, |J|).
        jit: False runs the same code eagerly (for debugging; slow).
        throw: raise RuntimeError if the run ends without `RESULTS.successful` (not
            available under the caller's jit or vmap, where the status is a traced array);
            without it, such a run issues a `ConvergenceWarning`.
        progress: True (every 10 steps) or k (every k steps): a live line on stderr (step,
            best objective, certified gap, elapsed seconds) once the run is older than a
            second, by a host callback from the compiled loop; a final line at the end.
            Off by default, and then nothing of it is compiled in (a separate program).
            The seconds count from the call (compilation included; under the
            caller's jit, from the trace).

    Returns:
        A `Solution`; ``sol.result`` is a `RESULTS` member (an int32 array when ``solve``
        is called under the caller's jit or vmap). ``sol.w`` is differentiable in reverse
        mode (`jax.grad`, `jax.vjp`) with respect to the problem's arrays, by implicit
        differentiation of the optimality conditions (`nsjax.implicit`: smooth losses, and
        the binary hinge with L2); the other fields are not differentiated.

    Example:
        >>> import jax, nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.BMRM(), tol=1e-6)
        >>> sol.result
        <RESULTS.successful: 0>
        >>> w = jax.jit(lambda p: nsjax.solve(p, nsjax.solvers.BMRM()).w)(prob)
    """
    w0 = _check_common(problem, w0, max_steps, tol)
    for name, flag in (("jit", jit), ("throw", throw)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False; got {flag!r}.")
    every = _progress_every(progress)
    solver = as_solver(solver, problem)
    tol = to_device(tol, problem.dtype)
    check(solver, problem)
    problem = problem.without_classes()  # label values do not change the program
    _Progress.begin()
    traced, (run_on, w0, tol) = _iterations_apart((problem, w0, tol))
    steps = to_device(max_steps, jnp.int32)
    if jit:
        run_on, w0, restore = buckets.pad(run_on, w0, solver)
        sol = _cut(_run_jit(run_on, w0, tol, steps, solver=solver,
                            length=history_length(max_steps), progress=every),
                   max_steps)
        sol = restore(sol)
    else:
        with jax.disable_jit():
            sol = _run(run_on, w0, tol, steps, solver, int(max_steps), every)
    if traced:
        sol = sol._replace(w=implicit_solution(problem, sol.w, _exists(sol.result)))
    if every and not is_traced(sol.result):
        jax.effects_barrier()  # the last reports are printed before the final line
        _Progress.end(sol)
    if is_traced(sol.result):
        if throw:
            raise ValueError("throw=True needs a concrete result; under jit or vmap inspect "
                             "sol.result (an int32 array) instead.")
        return sol
    sol = sol._replace(result=RESULTS(int(sol.result)))
    if sol.result.is_failure:
        message = failure_message(type(solver).__name__, sol, float(tol), problem.dtype)
        if throw:
            raise RuntimeError(message)
        warnings.warn(message, ConvergenceWarning, stacklevel=2)
    return sol


def _iterations_apart(args):
    """(traced, args): whether any of the arguments is traced (the caller's jit, vmap or
    grad), and the arguments with their gradients stopped if so. The iterations are not
    differentiated (reverse mode cannot go through a while_loop): the solution's derivative
    comes from its optimality conditions (`nsjax.implicit`)."""
    traced = any(is_traced(leaf) for leaf in jax.tree_util.tree_leaves(args))
    return traced, (jax.lax.stop_gradient(args) if traced else args)


def _exists(result):
    """Whether a run's w is a solution to differentiate (`nsjax.implicit`)."""
    return (result != RESULTS.nonfinite) & (result != RESULTS.unbounded)


def failure_message(name, sol, tol, dtype) -> str:
    """Why a scalar solve did not succeed, in one message (warned, or raised with
    ``throw=True``)."""
    value = float(sol.value)
    if not np.isfinite(value):  # no finite iterate at all: J(w0) itself overflows
        dt = np.dtype(dtype)
        return (f"{name} ended nonfinite: J(w0) = {value} in {dt.name}, so no step was "
                "taken. The objective overflows at the start: the sample weights, the "
                f"targets or the data are too large for {dt.name}; rescale them"
                + (" (or use float64)." if dt.itemsize < 8 else "."))
    target = tol * max(1.0, abs(value))
    return (f"{name} ended {sol.result.name} after {int(sol.num_steps)} steps with certified "
            f"gap {float(sol.gap):.2e} (tol · max(1, |J|) = {target:.2e}). {sol.result.message}")


def lower_solve(problem, solver=None, max_steps=500, tol=1e-6):
    """The `jax.stages.Lowered` of the program `solve` runs for ``problem`` (as given: no
    shape bucket, no progress reports), for tools that inspect or time it: ``.as_text()``
    is its StableHLO, ``.compile(nsjax.programs.compile_options(problem))`` compiles it as
    `solve` would. ``solver`` defaults to `default_solver`'s; the problem is checked
    against it first (`nsjax.solvers.check`)."""
    w0 = _check_common(problem, None, max_steps, tol)
    solver = as_solver(solver, problem)
    check(solver, problem)
    return _run_jit.lower(problem.without_classes(), w0, to_device(tol, problem.dtype),
                          to_device(max_steps, jnp.int32), solver=solver,
                          length=history_length(max_steps), progress=0)


def _warn_unless_all_successful(solver, sols, what):
    """One `ConvergenceWarning` for the lanes of a stacked solution that did not succeed."""
    result = np.asarray(sols.result)
    bad = np.flatnonzero(result != RESULTS.successful)
    if bad.size:
        ends = ", ".join(f"{i}: {RESULTS(int(result[i])).name}" for i in bad[:5])
        more = f" and {bad.size - 5} more" if bad.size > 5 else ""
        warnings.warn(f"{type(solver).__name__} did not succeed on {bad.size} of {result.size} "
                      f"{what} ({ends}{more}); see sol.result and sol.gap.",
                      ConvergenceWarning, stacklevel=3)
    return sols


def sweep(problem, lams, solver=None, w0=None, max_steps=500, tol=1e-6, *,
          warm_start=True):
    """Solve ``problem`` for every strength in ``lams`` in one compiled program.

    The strength is the regularizer's (λ of `L2`); see `Problem.with_strength`. The strength is
    traced: another list of the same length reuses the program.

    Args:
        problem, solver, max_steps, tol: as for `solve` (``solver`` defaults to the one
            `solve` would pick for the smallest strength; ``max_steps`` and ``tol`` hold for
            each strength).
        lams: a non-empty 1-D sequence of strengths (≥ 0).
        w0: the start of the first strength solved (warm_start) or of every one.
        warm_start: True (default): the regularization path. The strengths are solved
            one after another from the largest down, each starting from the previous
            solution (a `lax.scan` of the solve loop), so that a strength costs its own
            steps only, fewer from a nearby start. False: all strengths at once (a vmapped
            solve loop). Its lanes advance together, so every lane takes as many steps as
            the slowest, and each branch of a step is computed for all lanes. It can pay on
            an accelerator with many small problems.

    Returns:
        A `Solution` whose fields are stacked along a leading axis of length len(lams), in
        the order of ``lams``; ``result`` is an int32 array (compare with `RESULTS`
        members).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1.0), X, y)
        >>> sols = nsjax.sweep(prob, [1e-1, 1e-2], nsjax.solvers.BMRM())
        >>> sols.w.shape
        (2, 30)
    """
    w0 = _check_common(problem, w0, max_steps, tol)
    lams = _check_lams(lams, problem.dtype)
    if not isinstance(warm_start, (bool, np.bool_)):
        raise TypeError(f"warm_start must be True or False; got {warm_start!r}.")
    smallest = problem.with_strength(lams.min())
    solver = as_solver(solver, smallest)
    check(solver, smallest, lanes=1 if warm_start else len(lams))
    problem = problem.without_classes()
    tol = to_device(tol, problem.dtype)
    # Each solution's derivative comes from its optimality conditions, as in `solve`.
    traced, (run_on, run_lams, w0, run_tol) = _iterations_apart((problem, lams, w0, tol))
    run_on, w0, restore = buckets.pad(run_on, w0, solver)
    sols = _sweep_jit(run_on, run_lams, w0, run_tol, to_device(max_steps, jnp.int32),
                      solver=solver, length=history_length(max_steps),
                      warm_start=bool(warm_start))
    sols = restore(_cut(sols, max_steps), lead=1)
    if traced:
        w = jax.vmap(lambda lam, w, result: implicit_solution(
            problem.with_strength(lam), w, _exists(result)))(lams, sols.w, sols.result)
        return sols._replace(w=w)
    return _warn_unless_all_successful(solver, sols, "strengths")


def _check_lams(lams, dtype):
    """``lams`` as a 1-D array of ``dtype``, each strength checked as it will be used (a
    real number, finite, ≥ 0, within the dtype) where it is concrete."""
    from nsjax._checks import _strength

    if is_traced(lams):
        if jnp.ndim(lams) != 1 or jnp.size(lams) == 0:
            raise ValueError(f"lams must be a non-empty 1-D array of strengths; got shape "
                             f"{jnp.shape(lams)}.")
        return jnp.asarray(lams, dtype)
    if isinstance(lams, (str, bytes)) or np.ndim(lams) != 1 or np.size(lams) == 0:
        raise ValueError(f"lams must be a non-empty 1-D sequence of numbers, e.g. [1e-2, "
                         f"1e-3]; got {lams!r}.")
    return to_device(np.asarray([float(_strength(lam, dtype, f"lams[{i}]"))
                                 for i, lam in enumerate(lams)]), dtype)


def solve_batch(problems, solver=None, w0=None, max_steps=500, tol=1e-6):
    """Solve a batch of same-shape problems in one compiled, vmapped program.

    Args:
        problems: a list of `Problem`s with the same shapes, dtypes, loss and regularizer
            options and number of classes (their label values may differ; dense data, as a
            sparse layout depends on the matrix), or one `Problem` whose arrays already
            carry a leading batch axis.
        solver, w0, max_steps, tol: as for `solve` (one w0 for all).

    Returns:
        A `Solution` stacked along a leading axis, as from `sweep`.

    Example:
        >>> import nsjax, numpy as np
        >>> rng = np.random.default_rng(0)
        >>> probs = [nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1),
        ...                        rng.normal(size=(20, 3)), np.arange(20) % 2)
        ...          for _ in range(4)]
        >>> nsjax.solve_batch(probs, nsjax.solvers.BMRM()).w.shape
        (4, 3)
    """
    if solver is not None:
        solver = as_solver(solver, None)
    if not isinstance(problems, Problem) and (
            isinstance(problems, (str, bytes)) or not hasattr(problems, "__iter__")):
        raise TypeError(f"problems must be a list of nsjax.Problem (or one Problem of stacked "
                        f"data); got {type(problems).__name__}.")
    if isinstance(problems, Problem):
        if problems.X.dense is None or problems.X.dense.ndim != 3:
            raise ValueError("a single Problem passed to solve_batch must hold stacked dense "
                             "data (X of shape (batch, n, d)); pass a list of Problems.")
        stacked = problems.without_classes()
        one = jax.tree_util.tree_map(lambda x: x[0], stacked)
        solver = solver or default_solver(one)
        check(solver, one, lanes=problems.X.dense.shape[0])
    else:
        problems = [_batch_member(p, i) for i, p in enumerate(problems)]
        if not problems:
            raise ValueError("problems is empty; pass at least one Problem.")
        first = _kind(problems[0])
        if solver is None:  # one program for all: the default of any, if they agree
            defaults = {default_solver(p) for p in problems}
            solver = defaults.pop() if len(defaults) == 1 else default_solver(
                problems[0].with_strength(0.0))
        for i, p in enumerate(problems):
            if _kind(p) != first:
                raise ValueError(
                    f"problems[{i}] differs from problems[0] in its structure (loss and "
                    "regularizer options, number of classes, shape, dtype or sparse "
                    "layout); a batch needs problems of one kind.")
            check(solver, p, lanes=len(problems))
        one = problems[0]
    w0 = _check_common(one, w0, max_steps, tol)
    restore = buckets.unchanged
    if not isinstance(problems, Problem):
        padded = [buckets.pad(p, w0, solver) for p in problems]
        # (Members are padded alike unless one's weights would overflow when scaled.)
        if all(_kind(p) == _kind(padded[0][0]) for p, _, _ in padded):
            problems, w0, restore = [p for p, _, _ in padded], padded[0][1], padded[0][2]
        stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *problems)
    sols = _batch_jit(stacked, w0, to_device(tol, one.dtype),
                      to_device(max_steps, jnp.int32), solver=solver,
                      length=history_length(max_steps))
    sols = restore(_cut(sols, max_steps), lead=1)
    return _warn_unless_all_successful(solver, sols, "problems")


def _batch_member(p, i):
    if not isinstance(p, Problem):
        raise TypeError(f"problems[{i}] must be an nsjax.Problem; got {type(p).__name__}.")
    return p.without_classes()


def _kind(problem):
    """What must agree for problems to stack: the tree (loss and regularizer types and
    options, number of classes, layout; see `nsjax.problem.node_types`) and every leaf's
    shape and dtype."""
    leaves, tree = jax.tree_util.tree_flatten(problem)
    return tree, [(jnp.shape(x), jnp.result_type(x)) for x in leaves]


@program(static_argnames=("solver", "length"), name="batch")
def _batch_jit(problems, w0, tol, max_steps, solver, length):
    return jax.vmap(lambda p: _run(p, w0, tol, max_steps, solver, length))(problems)

"""Binary hinge-loss SVM benchmark: nsjax subLBFGS vs LIBLINEAR vs optax L-BFGS.

Objective (no bias), identical for every method:

    J(w) = lam/2 ||w||^2 + (1/n) sum_i max(0, 1 - y_i x_i^T w),   y_i in {-1, +1}.

Problems: scikit-learn digits, even vs odd (dense, 1797 x 64), and
``nsjax.datasets.synthetic_sparse(50_000, 20_000, 0.0025, seed=0)`` (5,000 x 2,000 with
``--quick``), each for lam in {1e-4, 1e-5, 1e-6}. Everything runs in float64 on the CPU.

Reference optimum J*. LIBLINEAR's dual coordinate descent (``sklearn.svm.LinearSVC(
loss="hinge", dual=True, fit_intercept=False, C=1/(lam n), tol=1e-10, random_state=0)``)
is run with max_iter = 1, 2, 4, ... until it converges (or a cap): the last run is the
tight LIBLINEAR reference. Where the problem is small enough (nnz <= ``QP_MAX_NNZ``) and
cvxpy is installed, the QP is also solved by Clarabel (interior point, tolerances 1e-14),
whose dual variables give a *certified* lower bound: on digits at small lam LIBLINEAR
stops far from the optimum (its primal J is not monotone in max_iter and stalls), so
without it J* would be wrong by more than the 1e-3 target. Then

    J* = min(LIBLINEAR's J, Clarabel's J, the best J any method reached),

so relative suboptimality (J - J*) / J* is never negative; the output says which one set
J*, and the best certified lower bound on min J (Clarabel's dual value, or nsjax's
certified gap) with the relative gap of J* to it.

Methods and how each is timed (``time.perf_counter``; JAX results are synced with
``block_until_ready`` or by reading a scalar back to the host):

* nsjax ``SubLBFGS(memory=15)``, exact line search (the "auto" default for the hinge),
  started at w = 0, ``tol=1e-12`` (so in practice it runs to ``max_steps``). Compile time
  is measured apart: a first call is timed, then the identical call again (compiled);
  compile = first - second. The call used for this has ``tol=1e30`` (the run stops at
  step 0): ``tol`` and lam are traced arguments, so it compiles exactly the program the
  real run uses and costs no solver time. Because lam is traced, only the first lam of a
  dataset compiles; later ones show ~0. The full run is then timed compiled. History
  has no timestamps, so the plotted nsjax curve puts step k at (k / num_steps) x the
  compiled wall time of the full run (uniform cost per step). Times to target in the
  table are *measured*, not estimated: for the step count k at which the full run first
  meets the target, ``solve(max_steps=k)`` is compiled first (tol=1e30 call), then timed
  compiled (best of 3 when it is short); the proportional estimate is kept in the JSON
  for comparison. With ``--quick`` the estimate is used instead (marked ``~``).
* LIBLINEAR: each doubling run is a fresh ``fit`` (data conversion included; the time
  of a 1-iteration fit is reported as ``fit_overhead_s``; fits under 0.1 s are timed
  best of 3, as the trajectory is fixed by random_state). Time to target is the
  measured time of the smallest max_iter whose J meets it: the first doubling run that
  meets it, refined by a few bisection fits between it and the previous power of two
  (skipped when those fits are expensive). No compile time.
* optax ``lbfgs(memory_size=15)`` with its default zoom line search, on the same
  objective written in JAX (the gradient is ``jax.grad`` of the nonsmooth objective;
  X w goes through the same sorted-segment-sum matvec as nsjax, with X^T as its VJP).
  Data are arguments of one jitted step function, not closed over. Compile time =
  first - second identical run of the first 3 steps from w = 0 (the state's types
  change after step 1, which compiles a second time); then a Python loop of compiled
  steps from w = 0, timing every iteration, up to an iteration and a time cap (the JSON
  records whether anything recompiled during it). Plain L-BFGS assumes a
  smooth objective, so on the hinge it may stall: an unmet target is "not reached".

Output: a table (dataset, lam, method, time to 1e-2 and 1e-3 relative suboptimality,
compile time, final relative suboptimality, iterations), the nsjax / LIBLINEAR ratios of
time to 1e-3, ``<out>/binary_hinge.json`` (all numbers, curves, machine) and
``binary_hinge.png`` (relative suboptimality vs time, log-log; rows: datasets, columns:
lam). ``--quick`` writes ``*_quick.json`` / ``*_quick.png`` instead.

    python benchmarks/binary_hinge.py [--quick] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.sparse as sp
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

import nsjax

jax.config.update("jax_enable_x64", True)

TARGETS = (1e-2, 1e-3)
LAMS = (1e-4, 1e-5, 1e-6)
LIBLINEAR_TOL = 1e-10
NSJAX_TOL = 1e-12
OPTAX_WARMUP_STEPS = 3
LIBLINEAR_REPEAT_BELOW = 0.1  # s: fits shorter than this are repeated, best of 3
QP_MAX_NNZ = 200_000
PLOT_FLOOR = 1e-12
HERE = Path(__file__).resolve().parent


@dataclasses.dataclass(frozen=True)
class Caps:
    """Iteration and time caps (full run vs --quick)."""

    sparse_shape: tuple[int, int]
    nsjax_max_steps: int
    nsjax_direct: bool  # time compiled solve(max_steps=k) runs for the targets
    optax_max_iter: int
    optax_time_cap: float  # seconds per (dataset, lam)
    lib_max_iter: int
    lib_run_cap: float  # stop doubling after a fit longer than this (s)
    lib_total_cap: float  # or once the doubling fits add up to this (s)
    lib_refine_fits: int  # bisection fits per target
    lib_refine_cap: float  # skip refinement when the crossing fit took longer (s)


FULL = Caps((50_000, 20_000), 2000, True, 500, 90.0, 2**20, 60.0, 150.0, 4, 10.0)
QUICK = Caps((5_000, 2_000), 500, False, 100, 5.0, 2**16, 2.0, 8.0, 3, 0.5)


# ----------------------------------------------------------------------------------------
# The objective, in numpy (LIBLINEAR and the QP) and in JAX (optax)
# ----------------------------------------------------------------------------------------


def objective(w: np.ndarray, X: Any, y: np.ndarray, lam: float) -> float:
    """J(w) in float64 numpy; X dense or scipy.sparse, y in {-1, +1}."""
    margins = 1.0 - y * np.asarray(X @ w).ravel()
    return float(0.5 * lam * (w @ w) + np.mean(np.maximum(0.0, margins)))


def rel_subopt(value: float | np.ndarray, j_star: float) -> Any:
    return (np.asarray(value, dtype=float) - j_star) / j_star


@jax.custom_vjp
def _scores(X: nsjax.DesignMatrix, w: jax.Array) -> jax.Array:
    return X.mv(w)


def _scores_fwd(X, w):
    return X.mv(w), X


def _scores_bwd(X, ct):
    return None, X.rmv(ct)


_scores.defvjp(_scores_fwd, _scores_bwd)


def jax_objective(w: jax.Array, data: tuple) -> jax.Array:
    """J(w) in JAX; ``data = (DesignMatrix, y, lam)`` is an argument, never closed over."""
    X, y, lam = data
    S = _scores(X, w)
    return 0.5 * lam * jnp.vdot(w, w) + jnp.mean(jnp.maximum(0.0, 1.0 - y * S))


# ----------------------------------------------------------------------------------------
# Reference: a certified QP solution where small enough
# ----------------------------------------------------------------------------------------


def qp_reference(X: Any, y: np.ndarray, lam: float) -> dict | None:
    """Solve the primal QP with Clarabel; return J, a certified lower bound and the time."""
    try:
        import cvxpy as cp
    except ImportError:
        return None
    n, d = X.shape
    nnz = X.nnz if sp.issparse(X) else n * d
    if nnz > QP_MAX_NNZ:
        return None
    w, xi = cp.Variable(d), cp.Variable(n)
    margin = xi >= 1 - cp.multiply(y.astype(float), X @ w)
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(w) + cp.sum(xi) / n), [xi >= 0, margin])
    t0 = time.perf_counter()
    try:
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-14, tol_gap_rel=1e-14, tol_feas=1e-14,
                   tol_ktratio=1e-12, max_iter=500)
    except Exception as exc:  # solver missing or failed: the benchmark goes on without it
        return {"error": repr(exc)}
    elapsed = time.perf_counter() - t0
    if w.value is None or margin.dual_value is None:
        return {"error": f"status {prob.status}"}
    # Dual of J: max_{beta in [0,1]^n} mean(beta) - ||X^T (beta y)||^2 / (2 lam n^2).
    beta = np.clip(np.asarray(margin.dual_value).ravel() * n, 0.0, 1.0)
    v = np.asarray(X.T @ (beta * y)).ravel()
    lower = float(beta.sum() / n - (v @ v) / (2 * lam * n * n))
    return {"value": objective(np.asarray(w.value), X, y, lam), "lower_bound": lower,
            "time_s": elapsed, "status": prob.status, "solver": "cvxpy + Clarabel"}


# ----------------------------------------------------------------------------------------
# LIBLINEAR
# ----------------------------------------------------------------------------------------


def liblinear_fit(X: Any, y: np.ndarray, lam: float, max_iter: int) -> dict:
    n = X.shape[0]
    clf = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1.0 / (lam * n),
                    tol=LIBLINEAR_TOL, max_iter=int(max_iter), random_state=0)
    elapsed = math.inf
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            clf.fit(X, y)
            elapsed = min(elapsed, time.perf_counter() - t0)
        if elapsed >= LIBLINEAR_REPEAT_BELOW:
            break
    n_iter = int(np.max(clf.n_iter_))
    return {"max_iter": int(max_iter), "time_s": elapsed, "n_iter": n_iter,
            "value": objective(clf.coef_.ravel().astype(float), X, y, lam),
            "converged": n_iter < max_iter}


def liblinear_doubling(X: Any, y: np.ndarray, lam: float, caps: Caps) -> dict:
    runs: list[dict] = []
    k, total = 1, 0.0
    while True:
        run = liblinear_fit(X, y, lam, k)
        runs.append(run)
        total += run["time_s"]
        if (run["converged"] or 2 * k > caps.lib_max_iter or run["time_s"] > caps.lib_run_cap
                or total > caps.lib_total_cap):
            break
        k *= 2
    last = runs[-1]
    return {"runs": runs, "reference": last, "fit_overhead_s": runs[0]["time_s"],
            "converged": last["converged"], "doubling_total_s": total}


def liblinear_time_to(X: Any, y: np.ndarray, lam: float, lib: dict, j_star: float,
                      target: float, caps: Caps) -> dict | None:
    """Measured time of the smallest max_iter found whose J meets the target."""
    runs = sorted(lib["runs"], key=lambda r: r["max_iter"])
    hit = next((r for r in runs if rel_subopt(r["value"], j_star) <= target), None)
    if hit is None:
        return None
    below = [r["max_iter"] for r in runs if r["max_iter"] < hit["max_iter"]]
    lo, hi, best = (max(below) if below else 0), hit["max_iter"], hit
    refined = 0
    if hit["time_s"] <= caps.lib_refine_cap:
        while hi - lo > 1 and refined < caps.lib_refine_fits:
            mid = (lo + hi) // 2
            run = liblinear_fit(X, y, lam, mid)
            lib["runs"].append(run)  # kept for the plot and the JSON
            refined += 1
            if rel_subopt(run["value"], j_star) <= target:
                hi, best = mid, run
            else:
                lo = mid
    return {"time_s": best["time_s"], "max_iter": best["max_iter"], "refine_fits": refined,
            "bracket": [lo, hi]}


# ----------------------------------------------------------------------------------------
# nsjax
# ----------------------------------------------------------------------------------------


def _timed_solve(prob: nsjax.Problem, solver: Any, max_steps: int, tol: float):
    t0 = time.perf_counter()
    sol = nsjax.solve(prob, solver, max_steps=max_steps, tol=tol)
    jax.block_until_ready((sol.w, sol.history))
    return time.perf_counter() - t0, sol


def _compile_time(prob: nsjax.Problem, solver: Any, max_steps: int) -> float:
    """First call minus the identical compiled call; tol=1e30 stops the run at step 0 and,
    tol being traced, compiles the very program the real runs use."""
    first, _ = _timed_solve(prob, solver, max_steps, 1e30)
    again, _ = _timed_solve(prob, solver, max_steps, 1e30)
    return max(first - again, 0.0)


def run_nsjax(prob: nsjax.Problem, caps: Caps) -> dict:
    solver = nsjax.solvers.SubLBFGS(memory=15)
    compile_s = _compile_time(prob, solver, caps.nsjax_max_steps)
    wall, sol = _timed_solve(prob, solver, caps.nsjax_max_steps, NSJAX_TOL)
    steps = int(sol.num_steps)
    values = np.asarray(sol.history.value)[:steps]
    return {
        "compile_s": compile_s, "wall_s": wall, "num_steps": steps,
        "result": nsjax.RESULTS(int(sol.result)).name,
        "final_value": float(sol.value), "lower_bound": float(sol.value - sol.gap),
        "values": values.tolist(),
        "times": (wall * np.arange(1, steps + 1) / max(steps, 1)).tolist(),
        "stats": {k: int(v) for k, v in sol.stats.items()},
        "solver": solver, "prob": prob,
    }


def nsjax_time_to(res: dict, j_star: float, target: float, caps: Caps) -> dict | None:
    values = np.asarray(res["values"])
    hits = np.flatnonzero(rel_subopt(values, j_star) <= target)
    if hits.size == 0:
        return None
    k = int(hits[0]) + 1
    out: dict[str, Any] = {"steps": k, "estimate_s": res["wall_s"] * k / res["num_steps"],
                           "time_s": None, "measured": False}
    if caps.nsjax_direct:
        prob, solver = res["prob"], res["solver"]
        out["compile_s"] = _compile_time(prob, solver, k)
        reps = 3 if out["estimate_s"] < 2.0 else 1
        walls = []
        for _ in range(reps):
            wall, sol = _timed_solve(prob, solver, k, NSJAX_TOL)
            walls.append(wall)
        out.update(time_s=min(walls), measured=True, repeats=reps,
                   value_at_k=float(sol.value), value_in_full_run=float(values[k - 1]),
                   steps_taken=int(sol.num_steps))
    else:
        out["time_s"] = out["estimate_s"]
    return out


# ----------------------------------------------------------------------------------------
# optax L-BFGS
# ----------------------------------------------------------------------------------------

_OPT = optax.lbfgs(memory_size=15)
_VALUE_AND_GRAD = optax.value_and_grad_from_state(jax_objective)


@jax.jit
def _optax_step(w, state, data):
    value, grad = _VALUE_AND_GRAD(w, data, state=state)
    updates, state = _OPT.update(grad, state, w, value=value, grad=grad,
                                 value_fn=jax_objective, data=data)
    w = optax.apply_updates(w, updates)
    # The zoom line search keeps J at the new point in its state: no extra evaluation.
    return w, state, optax.tree_utils.tree_get(state, "value")


def run_optax(prob: nsjax.Problem, caps: Caps) -> dict:
    data = (prob.X, prob.y, jnp.asarray(prob.lam, prob.dtype))
    w0 = jnp.zeros(prob.X.shape[1], prob.dtype)
    state0 = _OPT.init(w0)

    def warmup() -> float:
        # A few steps from w0: the state after a step may have other types than the
        # initial one (a second compile), so one call is not enough to compile it all.
        t0 = time.perf_counter()
        w, state = w0, state0
        for _ in range(OPTAX_WARMUP_STEPS):
            w, state, _ = _optax_step(w, state, data)
        jax.block_until_ready((w, state))
        return time.perf_counter() - t0

    first = warmup()
    compile_s = max(first - warmup(), 0.0)
    cache_before = _cache_size()
    w, state = w0, state0
    times, values = [], []
    t0 = time.perf_counter()
    stop = "max_iter"
    for _ in range(caps.optax_max_iter):
        w, state, value = _optax_step(w, state, data)
        value = float(value)  # syncs: w, state and value come from one program
        times.append(time.perf_counter() - t0)
        values.append(value)
        if not math.isfinite(value):
            stop = "nonfinite"
            break
        if times[-1] > caps.optax_time_cap:
            stop = "time_cap"
            break
    final = objective(np.asarray(w), _numpy_X(prob), np.asarray(prob.y), float(prob.lam))
    return {"compile_s": compile_s, "times": times, "values": values, "num_steps": len(values),
            "stop": stop, "final_value_recomputed": final,
            "recompiled_during_timed_loop": _cache_size() != cache_before}


def _cache_size() -> int | None:
    size = getattr(_optax_step, "_cache_size", None)
    return size() if callable(size) else None


def _numpy_X(prob: nsjax.Problem) -> Any:
    X = prob.X
    if not X.is_sparse:
        return np.asarray(X.dense)
    return sp.csr_matrix((np.asarray(X.vals), (np.asarray(X.rows), np.asarray(X.cols))),
                         shape=X.shape)


def curve_time_to(times: list[float], values: list[float], j_star: float,
                  target: float) -> dict | None:
    hits = np.flatnonzero(rel_subopt(np.asarray(values), j_star) <= target)
    if hits.size == 0:
        return None
    i = int(hits[0])
    return {"time_s": float(times[i]), "steps": i + 1, "measured": True}


# ----------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------


def machine() -> dict:
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                       cpu)
    except OSError:
        pass
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True,
                                text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "platform.processor": platform.processor(), "cpu_model": cpu,
        "platform": platform.platform(), "os.cpu_count": os.cpu_count(),
        "jax.devices": [str(d) for d in jax.devices()], "jax": jax.__version__,
        "numpy": np.__version__, "scikit-learn": sklearn.__version__,
        "optax": optax.__version__, "nsjax": nsjax.__version__, "python": sys.version.split()[0],
        "git_commit": commit,
    }


def datasets(caps: Caps) -> dict[str, tuple[Any, np.ndarray]]:
    n, d = caps.sparse_shape
    return {
        "digits even/odd (dense 1797x64)": nsjax.datasets.digits_binary(),
        f"synthetic sparse {n}x{d} (0.25%)": nsjax.datasets.synthetic_sparse(n, d, 0.0025,
                                                                              seed=0),
    }


def bench_one(X: Any, y: np.ndarray, lam: float, caps: Caps) -> dict:
    y = np.where(y > 0, 1.0, -1.0)
    t0 = time.perf_counter()
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    jax.block_until_ready(prob.X)
    setup = time.perf_counter() - t0

    qp = qp_reference(X, y, lam)
    lib = liblinear_doubling(X, y, lam, caps)
    ns = run_nsjax(prob, caps)
    ox = run_optax(prob, caps)

    candidates = {"LIBLINEAR (tight run)": lib["reference"]["value"]}
    candidates["LIBLINEAR (any run)"] = min(r["value"] for r in lib["runs"])
    if qp and "value" in qp:
        candidates["QP (Clarabel)"] = qp["value"]
    candidates["nsjax"] = float(np.nanmin(ns["values"])) if ns["values"] else math.inf
    finite = [v for v in ox["values"] if math.isfinite(v)]
    candidates["optax"] = min(finite) if finite else math.inf
    set_by = min(candidates, key=candidates.get)
    j_star = candidates[set_by]
    lowers = {"nsjax certified gap": ns["lower_bound"]}
    if qp and "lower_bound" in qp:
        lowers["QP dual (Clarabel)"] = qp["lower_bound"]
    lb_by = max(lowers, key=lowers.get)

    methods: dict[str, dict] = {}
    ns_to = {str(t): nsjax_time_to(ns, j_star, t, caps) for t in TARGETS}
    methods["nsjax SubLBFGS"] = {
        "time_to": ns_to, "compile_s": ns["compile_s"],
        "final_rel_subopt": float(rel_subopt(ns["values"][-1], j_star)) if ns["values"] else None,
        "iterations": ns["num_steps"], "result": ns["result"], "wall_s": ns["wall_s"],
        "stats": ns["stats"],
        "curve": {"times": ns["times"], "values": ns["values"],
                  "times_are": "k / num_steps * compiled wall time of the full run"},
    }
    lib_to = {str(t): liblinear_time_to(X, y, lam, lib, j_star, t, caps) for t in TARGETS}
    runs = sorted(lib["runs"], key=lambda r: r["max_iter"])
    methods["LIBLINEAR"] = {
        "time_to": lib_to, "compile_s": 0.0,
        "final_rel_subopt": float(rel_subopt(lib["reference"]["value"], j_star)),
        "iterations": lib["reference"]["n_iter"], "converged": lib["converged"],
        "fit_overhead_s": lib["fit_overhead_s"], "doubling_total_s": lib["doubling_total_s"],
        "curve": {"times": [r["time_s"] for r in runs], "values": [r["value"] for r in runs],
                  "max_iter": [r["max_iter"] for r in runs],
                  "times_are": "wall time of a fresh fit with that max_iter"},
    }
    ox_to = {str(t): curve_time_to(ox["times"], ox["values"], j_star, t) for t in TARGETS}
    methods["optax L-BFGS"] = {
        "time_to": ox_to, "compile_s": ox["compile_s"],
        "final_rel_subopt": float(rel_subopt(ox["values"][-1], j_star)),
        "iterations": ox["num_steps"], "stop": ox["stop"],
        "final_value_recomputed": ox["final_value_recomputed"],
        "recompiled_during_timed_loop": ox["recompiled_during_timed_loop"],
        "curve": {"times": ox["times"], "values": ox["values"],
                  "times_are": "measured after every compiled step"},
    }
    return {
        "lam": lam, "n": int(X.shape[0]), "d": int(X.shape[1]),
        "nnz": int(X.nnz) if sp.issparse(X) else int(X.size), "nsjax_setup_s": setup,
        "j_star": j_star, "j_star_set_by": set_by, "j_star_candidates": candidates,
        "lower_bound": lowers[lb_by], "lower_bound_by": lb_by,
        "certified_rel_gap_of_j_star": (j_star - lowers[lb_by]) / j_star,
        "qp": qp, "liblinear_reference": lib["reference"], "methods": methods,
    }


def _fmt_time(entry: dict | None) -> str:
    if entry is None:
        return "not reached"
    mark = "" if entry.get("measured", True) else "~"
    return f"{mark}{entry['time_s']:.3g} s"


def print_table(results: dict) -> list[str]:
    lines = []
    head = (f"{'dataset':34s} {'lam':>6s} {'method':15s} {'t(1e-2)':>12s} {'t(1e-3)':>12s} "
            f"{'compile':>8s} {'final rel':>10s} {'iters':>7s}")
    lines += [head, "-" * len(head)]
    for ds, per_lam in results.items():
        for res in per_lam:
            for name, m in res["methods"].items():
                lines.append(
                    f"{ds:34s} {res['lam']:6.0e} {name:15s} "
                    f"{_fmt_time(m['time_to']['0.01']):>12s} "
                    f"{_fmt_time(m['time_to']['0.001']):>12s} {m['compile_s']:7.2f}s "
                    f"{m['final_rel_subopt']:10.2e} {m['iterations']:7d}")
            lines.append(
                f"{'':34s} {'':6s} J* = {res['j_star']:.12g} set by {res['j_star_set_by']}; "
                f"certified rel. gap {res['certified_rel_gap_of_j_star']:.1e} "
                f"({res['lower_bound_by']})")
    lines.append("")
    lines.append("Ratio nsjax / LIBLINEAR time to 1e-3 relative suboptimality:")
    for ds, per_lam in results.items():
        for res in per_lam:
            a = res["methods"]["nsjax SubLBFGS"]["time_to"]["0.001"]
            b = res["methods"]["LIBLINEAR"]["time_to"]["0.001"]
            if a and b:
                ratio = f"{a['time_s'] / b['time_s']:.3g}"
            else:
                who = " and ".join(n for n, e in (("nsjax", a), ("LIBLINEAR", b)) if e is None)
                ratio = f"n/a ({who}: not reached)"
            lines.append(f"  {ds:34s} lam={res['lam']:.0e}: {ratio}")
    print("\n".join(lines), flush=True)
    return lines


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"nsjax SubLBFGS": ("C0", "-", None), "LIBLINEAR": ("C1", "-", "o"),
              "optax L-BFGS": ("C2", "-", None)}
    rows = len(results)
    fig, axes = plt.subplots(rows, len(LAMS), figsize=(5 * len(LAMS), 4 * rows),
                             squeeze=False)
    for r, (ds, per_lam) in enumerate(results.items()):
        for c, res in enumerate(per_lam):
            ax = axes[r][c]
            for name, m in res["methods"].items():
                color, ls, marker = styles[name]
                t = np.asarray(m["curve"]["times"], float)
                v = np.maximum(rel_subopt(m["curve"]["values"], res["j_star"]), PLOT_FLOOR)
                ok = np.isfinite(v) & (t > 0)
                ax.plot(t[ok], v[ok], color=color, ls=ls, marker=marker, ms=3, label=name)
                for key, entry in m["time_to"].items():
                    if entry and entry.get("measured") and name == "nsjax SubLBFGS":
                        ax.plot(entry["time_s"], float(key), "x", color=color, ms=8)
            for target in TARGETS:
                ax.axhline(target, color="gray", lw=0.8, ls=":")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{ds}\nlam = {res['lam']:.0e}", fontsize=9)
            ax.set_xlabel("time (s)")
            if c == 0:
                ax.set_ylabel("(J - J*) / J*")
            ax.grid(True, which="major", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("Hinge-loss SVM: relative suboptimality vs wall time "
                 "(nsjax: compiled run, step k at k/N of its wall time; x: measured "
                 "time to target)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()
                if k not in ("prob", "solver")}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, (np.integer, np.bool_)):
        return obj.item()
    return obj


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sparse set (5,000 x 2,000) and low caps: under a minute")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for binary_hinge.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/binary_hinge[_quick].png)")
    args = parser.parse_args(argv)
    caps = QUICK if args.quick else FULL
    suffix = "_quick" if args.quick else ""
    png = args.png or HERE / f"binary_hinge{suffix}.png"
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    results: dict[str, list[dict]] = {}
    for ds, (X, y) in datasets(caps).items():
        results[ds] = []
        for lam in LAMS:
            t0 = time.perf_counter()
            res = bench_one(X, y, lam, caps)
            results[ds].append(res)
            print(f"[{time.perf_counter() - start:7.1f} s] {ds}, lam={lam:.0e} done in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    print()
    lines = print_table(results)
    notes = [
        "t(...): time to reach that relative suboptimality (J - J*) / J*.",
        "nsjax: measured compiled solve(max_steps=k) runs" if caps.nsjax_direct else
        "nsjax: ~ = estimate (k / num_steps) x compiled wall time of the full run",
        "LIBLINEAR: measured fresh fit with the smallest max_iter found to reach it.",
        "optax: measured per-iteration times of a loop of compiled steps.",
        "compile: first call minus an identical second call (optax: first 3 steps; lam is "
        "traced, so only the first lam of a dataset compiles).",
    ]
    print("\n".join(notes))
    payload = {
        "benchmark": "binary hinge-loss SVM, J(w) = lam/2 ||w||^2 + mean(max(0, 1 - y Xw))",
        "mode": "quick" if args.quick else "full", "caps": dataclasses.asdict(caps),
        "targets": TARGETS, "liblinear_tol": LIBLINEAR_TOL, "nsjax_tol": NSJAX_TOL,
        "machine": machine(), "total_time_s": time.perf_counter() - start,
        "table": lines, "notes": notes, "results": results,
    }
    json_path = args.out / f"binary_hinge{suffix}.json"
    json_path.write_text(json.dumps(_jsonable(payload), indent=1))
    plot(results, png)
    print(f"\nwrote {json_path} and {png} ({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

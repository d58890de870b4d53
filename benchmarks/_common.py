"""The benchmarks' harness: what the scripts of this folder share.

- the machine: host, library versions and git state (``machine``), written into every JSON;
- timing: an nsjax solve (``timed_solve``), a jitted function's best of k (``best_of``), the
  compile of a solve's program (``compile_time``), the step inside ``solve``'s loop from two
  runs (``per_step``), the time to a step of a recorded run (``run_method``,
  ``time_to_step``, ``phase_times``: the same compiled program rerun with ``tol`` set so
  that it stops right after step k);
- peers: LIBLINEAR's best-of-3 fit timing (``timed_fit``) and, for the binary hinge, its fits
  with ``max_iter`` doubled and the time to a target (``liblinear_doubling``,
  ``liblinear_time_to``), the objective in numpy (``hinge_objective``) and the exact QP
  (``qp_reference``, Clarabel); X w with Xᵀ as its VJP for peers that differentiate
  (``scores``: optax, jaxopt);
- output: table formatting, matplotlib (``pyplot``, ``subplots``, ``save_figure``, the
  certified-gap plot, the stacked step split) and JSON (``save_json``, ``jsonable``).

The scripts import it as ``_common`` with their own folder on ``sys.path``.
"""

from __future__ import annotations

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
import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import LinearSVC

import nsjax

# Timed runs stop early on purpose and their status is recorded: no warning per run.
warnings.simplefilter("ignore", nsjax.ConvergenceWarning)

TARGETS = (1e-2, 1e-3)
# s: fits shorter than this are repeated, best of 3: the rule of the nsjax timing runs
LIBLINEAR_REPEAT_BELOW = 2.0
PLOT_FLOOR = 1e-12
HERE = Path(__file__).resolve().parent


def rel_subopt(value: float | np.ndarray, j_star: float) -> Any:
    return (np.asarray(value, dtype=float) - j_star) / j_star


# ----------------------------------------------------------------------------------------
# Machine
# ----------------------------------------------------------------------------------------


def machine(extra_versions: dict[str, str] | None = None) -> dict:
    """The host, library versions and git state; ``extra_versions`` go after scikit-learn."""
    cpu = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                       cpu)
    except OSError:
        pass

    def git(*args: str) -> str | None:
        try:
            return subprocess.run(["git", *args], cwd=HERE, capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None

    commit = git("rev-parse", "HEAD") or None
    dirty = git("status", "--porcelain", "--", "../nsjax")
    return {
        "platform.processor": platform.processor(), "cpu_model": cpu,
        "platform": platform.platform(), "os.cpu_count": os.cpu_count(),
        "jax.devices": [str(d) for d in jax.devices()], "jax": jax.__version__,
        "numpy": np.__version__, "scikit-learn": sklearn.__version__,
        **(extra_versions or {}),
        "nsjax": nsjax.__version__, "python": sys.version.split()[0],
        "git_commit": commit, "nsjax_uncommitted_changes": dirty.splitlines() if dirty else [],
    }


# ----------------------------------------------------------------------------------------
# LIBLINEAR
# ----------------------------------------------------------------------------------------


def timed_fit(clf: Any, X: Any, y: Any) -> float:
    """Wall time of ``clf.fit(X, y)``; fits under LIBLINEAR_REPEAT_BELOW: best of 3."""
    elapsed = math.inf
    for _ in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            clf.fit(X, y)
            elapsed = min(elapsed, time.perf_counter() - t0)
        if elapsed >= LIBLINEAR_REPEAT_BELOW:
            break
    return elapsed


# ----------------------------------------------------------------------------------------
# Peers on the binary hinge: LIBLINEAR and an exact QP
# (binary_hinge.py, liblinear_race.py, large_scale.py, pragam_fig12.py, gpu.py)
# ----------------------------------------------------------------------------------------

LIBLINEAR_TOL = 1e-10  # the binary hinge's LIBLINEAR fits: max_iter stops them, not tol
QP_MAX_NNZ = 200_000  # the exact QP (Clarabel) only for problems up to this many nonzeros


# Independent numpy reference, only for coefficients from outside nsjax (LIBLINEAR, Clarabel)
# and for J in float64 of a float32 run's w.
def hinge_objective(w: np.ndarray, X: Any, y: np.ndarray, lam: float) -> float:
    """J(w) = lam/2 ||w||^2 + mean(max(0, 1 - y X w)) in float64 numpy; X dense or
    scipy.sparse, y in {-1, +1}."""
    margins = 1.0 - y * np.asarray(X @ w).ravel()
    return float(0.5 * lam * (w @ w) + np.mean(np.maximum(0.0, margins)))


def qp_reference(X: Any, y: np.ndarray, lam: float) -> dict | None:
    """Solve the binary hinge's primal QP with Clarabel; return J, a certified lower bound and
    the time (None without cvxpy or above ``QP_MAX_NNZ``)."""
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
    return {"value": hinge_objective(np.asarray(w.value), X, y, lam), "lower_bound": lower,
            "time_s": elapsed, "status": prob.status, "solver": "cvxpy + Clarabel"}


def liblinear_fit(X: Any, y: np.ndarray, lam: float, max_iter: int) -> dict:
    """One fresh fit of LIBLINEAR's binary hinge (``LinearSVC(loss="hinge", dual=True,
    fit_intercept=False, C=1/(lam n), tol=LIBLINEAR_TOL)``), timed by ``timed_fit``."""
    n = X.shape[0]
    clf = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1.0 / (lam * n),
                    tol=LIBLINEAR_TOL, max_iter=int(max_iter), random_state=0)
    elapsed = timed_fit(clf, X, y)
    n_iter = int(np.max(clf.n_iter_))
    return {"max_iter": int(max_iter), "time_s": elapsed, "n_iter": n_iter,
            "value": hinge_objective(clf.coef_.ravel().astype(float), X, y, lam),
            "converged": n_iter < max_iter}


def liblinear_doubling(X: Any, y: np.ndarray, lam: float, caps: Any) -> dict:
    """Fits with max_iter = 1, 2, 4, ... until LIBLINEAR converges, 2 max_iter passes
    ``caps.lib_max_iter``, a fit takes longer than ``caps.lib_run_cap`` or the fits add up to
    ``caps.lib_total_cap``; the last fit is the reference."""
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
                      target: float, caps: Any) -> dict | None:
    """Measured time of the smallest max_iter found whose J meets the target (the doubling's
    fits, then up to ``caps.lib_refine_fits`` bisection fits where the crossing fit took at
    most ``caps.lib_refine_cap``)."""
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


@dataclasses.dataclass(frozen=True)
class Method:
    """An nsjax solver as benchmarked."""

    name: str
    solver: Any
    max_steps: int


def timed_solve(prob: nsjax.Problem, solver: Any, max_steps: int, tol: float):
    t0 = time.perf_counter()
    sol = nsjax.solve(prob, solver, max_steps=max_steps, tol=tol)
    jax.block_until_ready((sol.w, sol.history))
    return time.perf_counter() - t0, sol


def best_of(f: Any, *args: Any, reps: int = 7) -> float:
    """Best wall time of ``f(*args)`` over ``reps`` calls, after one compiling call."""
    jax.block_until_ready(f(*args))
    best = math.inf
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(f(*args))
        best = min(best, time.perf_counter() - t0)
    return best


def compile_time(prob: nsjax.Problem, solver: Any, max_steps: int) -> float:
    """First call minus the identical compiled call; tol=1e30 stops the run at step 0 and,
    tol being traced, compiles the very program the real runs use."""
    first, _ = timed_solve(prob, solver, max_steps, 1e30)
    again, _ = timed_solve(prob, solver, max_steps, 1e30)
    return max(first - again, 0.0)


def per_step(prob: nsjax.Problem, solver: Any, ks: tuple[int, int], repeats: int = 3) -> dict:
    """The step inside ``solve``'s loop: (t(K2) - t(K1)) / (steps2 - steps1), each t the best
    of ``repeats`` compiled ``solve(max_steps=K, tol=0)`` after a compiling call, with the
    steps each run really took (a solver that stops early is listed in "stopped_early"); the
    difference cancels the fixed costs (init, checks, an end-of-run certificate). Products
    per step: the same difference of ``sol.stats["matvecs"]``; "fixed_s_at_K1" and
    "fixed_products_at_K1" keep what the difference cancelled."""
    runs = []
    for k in ks:
        first, _ = timed_solve(prob, solver, k, 0.0)  # compiles the max_steps=k program
        best, sol = min((timed_solve(prob, solver, k, 0.0) for _ in range(repeats)),
                        key=lambda r: r[0])
        runs.append({"max_steps": k, "first_call_s": first, "best_s": best,
                     "num_steps": int(sol.num_steps), "result": sol.result.name,
                     "value": float(sol.value), "gap": float(sol.gap),
                     "stats": {s: int(v) for s, v in sol.stats.items()}})
    (a, b), out = runs, {"runs": runs, "first_call_s": runs[0]["first_call_s"]}
    steps = b["num_steps"] - a["num_steps"]
    out["stopped_early"] = [r["max_steps"] for r in runs if r["num_steps"] < r["max_steps"]]
    out["step_s"] = (b["best_s"] - a["best_s"]) / steps if steps > 0 else None
    mv_a, mv_b = a["stats"].get("matvecs"), b["stats"].get("matvecs")
    out["products_per_step"] = (mv_b - mv_a) / steps if steps > 0 and mv_a is not None else None
    if out["step_s"] is not None:  # what the difference cancelled: init, end-of-run work
        out["fixed_s_at_K1"] = a["best_s"] - a["num_steps"] * out["step_s"]
    if out["products_per_step"] is not None:
        out["fixed_products_at_K1"] = mv_a - a["num_steps"] * out["products_per_step"]
    return out


def run_method(prob: nsjax.Problem, m: Method, stop_tol: float) -> dict:
    """Compile, then the first (full) run: max_steps = m.max_steps, tol = stop_tol.

    "values" is ``history.best`` (J of what ``solve(max_steps=k)`` returns: the best iterate
    so far, w0 included), "iterate_values" is ``history.value`` (J of step k's own iterate)
    and "gaps" is ``history.gap`` (the certified gap of that best iterate)."""
    compile_s = compile_time(prob, m.solver, m.max_steps)
    wall, sol = timed_solve(prob, m.solver, m.max_steps, stop_tol)
    steps = int(sol.num_steps)
    values = np.asarray(sol.history.value, dtype=float)[:steps]
    returned = np.asarray(sol.history.best, dtype=float)[:steps]
    gaps = np.asarray(sol.history.gap, dtype=float)[:steps]
    return {
        "compile_s": compile_s, "wall_s": wall, "num_steps": steps, "max_steps": m.max_steps,
        "result": nsjax.RESULTS(int(sol.result)).name,
        "final_value": float(sol.value), "final_gap": float(sol.gap),
        "lower_bound": float(sol.value - sol.gap),
        "values": returned.tolist(), "iterate_values": values.tolist(), "gaps": gaps.tolist(),
        "times": (wall * np.arange(1, steps + 1) / max(steps, 1)).tolist(),
        "stats": {k: int(v) for k, v in sol.stats.items()},
        "method": m, "prob": prob, "w": sol.w,
    }


def stop_tol_at(gap: float, value: float) -> float:
    """The smallest tol with gap <= tol * max(1, |value|) in float64, as `terminate` tests."""
    scale = max(1.0, abs(value))
    tol = gap / scale
    while tol * scale < gap:
        tol = float(np.nextafter(tol, np.inf))
    return tol


def measure_steps(res: dict, k: int, estimate: float, caps: Any, stop_tol: float,
                  steps_taken: bool) -> dict:
    """Time k steps of the first run's compiled program: rerun it with the tol that stops it
    right after step k, or, where that does not stop at k, compile solve(max_steps=k).
    ``steps_taken`` adds the steps the timed run took to the result."""
    m, prob = res["method"], res["prob"]
    reps = 3 if estimate < caps.repeat_below else 1
    gap, value = res["gaps"][k - 1], res["values"][k - 1]
    if math.isfinite(gap):
        tol = stop_tol_at(gap, value)
        walls: list[float] = []
        for _ in range(reps):
            wall, sol = timed_solve(prob, m.solver, m.max_steps, tol)
            if int(sol.num_steps) != k:
                break
            walls.append(wall)
        else:
            out = {"time_s": min(walls), "measured": True, "how": "tol stop after step k",
                   "tol": tol, "repeats": reps, "value_at_k": float(sol.value)}
            if steps_taken:
                out["steps_taken"] = k
            return out
    # The gap was flat before step k (or not finite): compile solve(max_steps=k) instead.
    compile_s = compile_time(prob, m.solver, k)
    walls = []
    for _ in range(reps):
        wall, sol = timed_solve(prob, m.solver, k, stop_tol)
        walls.append(wall)
    out = {"time_s": min(walls), "measured": True, "how": "solve(max_steps=k)",
           "compile_s": compile_s, "repeats": reps, "value_at_k": float(sol.value)}
    if steps_taken:
        out["steps_taken"] = int(sol.num_steps)
    return out


def time_to_step(res: dict, k: int, caps: Any, stop_tol: float, with_gap: bool) -> dict:
    """Time to run the first k steps: measured, or the proportional estimate (see Caps).
    ``with_gap`` records the full run's gap at step k and the steps the timed run took."""
    estimate = res["wall_s"] * k / res["num_steps"]
    out: dict[str, Any] = {"steps": k, "estimate_s": estimate, "time_s": estimate,
                           "measured": False, "value_in_full_run": res["values"][k - 1]}
    if with_gap:
        out["gap_in_full_run"] = res["gaps"][k - 1]
    if not caps.nsjax_direct:
        return out
    if estimate > caps.rerun_budget_s:
        out["skipped"] = "budget"
        return out
    cache = res.setdefault("measured_steps", {})  # targets met at the same step share a run
    if k not in cache:
        cache[k] = measure_steps(res, k, estimate, caps, stop_tol, with_gap)
    out.update(cache[k])
    return out


UNIFORM_TIMES = "k / num_steps * compiled wall time of the full run"
TWO_PHASE_TIMES = ("two proportional pieces: steps 1..k_s at k / k_s * the measured time to "
                   "step k_s, the rest proportional from there to the full run's wall time "
                   "(k_s: the hybrid's switch step, or the step after it; see phase_times)")


def phase_times(res: dict, caps: Any, stop_tol: float) -> None:
    """The hybrid's curve times: its phases cost very different amounts per step (a BMRM
    step with its QP and exact line search is ~10x a subLBFGS step), so one uniform cost
    per step would misplace its curve by up to an order of magnitude. For a run whose stats
    have "switched_at" (1 <= s < num_steps), the time to step k_s is measured (time_to_step)
    and the curve is proportional on each side of it; k_s = s + 1 where step s + 1 lowers
    the certified gap (so that the rerun stops there by tol, without a new compile), else s.
    Unmeasured (budget, or no direct timing): the uniform times stay. Sets res["times"],
    res["times_are"], res["times_uniform"] and res["switch_timing"]."""
    s, n = res["stats"].get("switched_at", -1), res["num_steps"]
    res["times_are"] = UNIFORM_TIMES
    if not 1 <= s < n:
        return
    gaps = res["gaps"]
    k = s + 1 if gaps[s] < gaps[s - 1] else s
    entry = time_to_step(res, k, caps, stop_tol, True)
    res["switch_timing"] = entry
    if not entry.get("measured") or k >= n:
        return
    t_k = min(entry["time_s"], res["wall_s"])
    steps = np.arange(1, n + 1, dtype=float)
    times = np.where(steps <= k, t_k * steps / k,
                     t_k + (res["wall_s"] - t_k) * (steps - k) / (n - k))
    res["times_uniform"], res["times"] = res["times"], times.tolist()
    res["times_are"] = TWO_PHASE_TIMES


def first_hit(values: Any, j_star: float, target: float) -> int | None:
    """The first step k (1-based) whose relative suboptimality is <= target, or None."""
    hits = np.flatnonzero(rel_subopt(np.asarray(values), j_star) <= target)
    return int(hits[0]) + 1 if hits.size else None


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------


def ratio_line(ds: str, res: dict, short_names: dict[str, str], lib: str) -> str:
    """One line of the ratio table: each nsjax method's time to 1e-3 over LIBLINEAR's."""
    b = res["methods"][lib]["time_to"]["0.001"]
    parts = []
    for name, short in short_names.items():
        m = res["methods"].get(name)
        if m is None:
            continue
        a = m["time_to"]["0.001"]
        if m.get("skipped"):
            parts.append(f"{short} skipped")
        elif a and b:
            mark = "" if a.get("measured") else "~"
            parts.append(f"{short} {mark}{a['time_s'] / b['time_s']:.3g}")
        else:
            who = " and ".join(n for n, e in ((short, a), ("LIBLINEAR", b)) if e is None)
            parts.append(f"{short} n/a ({who}: not reached)")
    return f"  {ds:36s} lam={res['lam']:.0e}: " + ", ".join(parts)


def switch_note(short: str, m: dict) -> str | None:
    """"<short> switched to BMRM at step k of N" for a method entry with "switched_at" (the
    hybrid's ``sol.stats["switched_at"]``: the step that began phase 2, -1 if never)."""
    k = m.get("switched_at")
    if k is None:
        return None
    if k < 0:
        return f"{short} never switched: subLBFGS for all {m['iterations']} steps"
    return f"{short} switched to BMRM at step {k} of {m['iterations']}"


def fmt_time(entry: dict | None) -> str:
    if entry is None:
        return "not reached"
    if entry.get("skipped"):
        return f"~{entry['time_s']:.3g} s (b)"
    mark = "" if entry.get("measured", True) else "~"
    return f"{mark}{entry['time_s']:.3g} s"


def pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend (files only, no display); imported on first
    use, so that a script's measurements run without matplotlib."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def subplots(results: dict, ncols: int):
    """matplotlib (Agg) and a figure with a row of axes per dataset, a column per lam."""
    plt = pyplot()
    rows = len(results)
    fig, axes = plt.subplots(rows, ncols, figsize=(5 * ncols, 4 * rows), squeeze=False)
    return plt, fig, axes


def style_axes(ax: Any, ds: str, lam: float, first_col: bool, xlabel: str,
               ylabel: str) -> None:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_title(f"{ds}\nlam = {lam:.0e}", fontsize=9)
    ax.set_xlabel(xlabel)
    if first_col:
        ax.set_ylabel(ylabel)
    ax.grid(True, which="major", alpha=0.3)


def plot_target_marks(ax: Any, m: dict, color: str) -> None:
    """x at the measured time to each target."""
    for key, entry in m["time_to"].items():
        if entry and entry.get("measured"):
            ax.plot(entry["time_s"], float(key), "x", color=color, ms=8)


def plot_gap_time(results: dict, names: Any, colors: dict[str, str], ncols: int, path: Path,
                  title: str) -> None:
    """Certified gap / J (``history.gap`` over ``history.best``) against wall time, log-log,
    for the nsjax methods in ``names``: a row per dataset, a column per lam. Step k is at
    the curve's "times", the axis of the objective-vs-time plot (k / num_steps x the compiled
    wall time of the full run; for the hybrid, that in two pieces: see phase_times). o:
    where a method's entry has "switched_at" (the hybrid), the step that began phase 2; x:
    the measured time to the script's certified-gap target ("certified_to", where it has
    one), at the relative gap of that step."""
    plt, fig, axes = subplots(results, ncols)
    for r, (ds, per_lam) in enumerate(results.items()):
        for c, res in enumerate(per_lam):
            ax = axes[r][c]
            for name in names:
                m = res["methods"].get(name)
                if not m or m.get("curve") is None:
                    continue
                color = colors[name]
                t = np.asarray(m["curve"]["times"], float)
                g = np.asarray(m["curve"]["gaps"], float) / np.asarray(m["curve"]["values"],
                                                                        float)
                ok = np.isfinite(g) & (g > 0) & (t > 0)
                ax.plot(t[ok], g[ok], color=color, label=name)
                k = m.get("switched_at")
                if k is not None and 1 <= k <= g.size and ok[k - 1]:
                    ax.plot(t[k - 1], g[k - 1], "o", color=color, ms=5, mfc="none")
                cert = m.get("certified_to")
                if cert and cert.get("measured") and cert.get("rel_gap"):
                    ax.plot(cert["time_s"], cert["rel_gap"], "x", color=color, ms=8)
            style_axes(ax, ds, res["lam"], c == 0, "time (s)", "certified gap / J")
            ax.legend(fontsize=7)
    save_figure(plt, fig, title, path)


def save_figure(plt: Any, fig: Any, title: str, path: Path) -> None:
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_step_split(results: dict, stack: list, hatched: set, note: Any, xlabel: str,
                    title: str, path: Path, x_key: str, line_key: str | None = None) -> None:
    """A stacked bar per case of ``results`` ({label: {part key: ms}}), the parts of
    ``stack`` ([(key, legend name)]) in order (negative parts not drawn, ``hatched`` keys
    hatched), an x at ``x_key``'s value, a bar at ``line_key``'s (if given) and the text
    ``note(r)`` after each bar (``step_profile.py``)."""
    plt = pyplot()
    labels = list(results)
    height = 1.2 + 0.7 * len(labels)
    fig, ax = plt.subplots(figsize=(10, height))
    left = np.zeros(len(labels))
    for i, (key, name) in enumerate(stack):
        ms = np.array([max(results[lab][key], 0.0) for lab in labels])
        ax.barh(labels, ms, left=left, color=plt.cm.tab10(i % 10), label=name,
                hatch="//" if key in hatched else None, edgecolor="white")
        left += ms
    for y, lab in enumerate(labels):
        r = results[lab]
        ends = [left[y], r[x_key]]
        if line_key is not None:
            ax.plot([r[line_key]] * 2, [y - 0.45, y + 0.45], "k-", lw=2)
            ends.append(r[line_key])
        ax.plot(r[x_key], y, "kx", ms=8)
        ax.annotate(" " + note(r), (max(ends), y), va="center", fontsize=8)
    ax.set_xlabel(xlabel)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.4 * max(left.max(), *(r[line_key or x_key] for r in results.values())))
    ax.legend(fontsize=7, ncol=5, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.6 / height))
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def save_json(path: Path, payload: dict, drop: tuple[str, ...] = ()) -> None:
    """Write ``payload`` (made `jsonable`, the keys in ``drop`` left out) to ``path``,
    creating its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(jsonable(payload, drop), indent=1))


def jsonable(obj: Any, drop: tuple[str, ...]) -> Any:
    """Plain JSON types; non-finite floats become None, keys in ``drop`` are left out."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v, drop) for k, v in obj.items() if k not in drop}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, drop) for v in obj]
    if isinstance(obj, (np.floating, float)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, (np.integer, np.bool_)):
        return obj.item()
    return obj


# ----------------------------------------------------------------------------------------
# Peers' autodiff through nsjax's products
# ----------------------------------------------------------------------------------------


@jax.custom_vjp
def scores(prob: nsjax.Problem, w: jax.Array) -> jax.Array:
    """``prob.scores(w)`` (X w) with ``prob.rmv`` (Xᵀ) as its VJP, so that a peer
    differentiating J (optax, jaxopt) uses the same sparse products as nsjax."""
    return prob.scores(w)


def _scores_fwd(prob, w):
    return prob.scores(w), prob


def _scores_bwd(prob, ct):
    return None, prob.rmv(ct)


scores.defvjp(_scores_fwd, _scores_bwd)

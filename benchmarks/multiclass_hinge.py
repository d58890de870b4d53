"""Multiclass and multilabel hinge-loss benchmark: nsjax hybrid, subLBFGS, BMRM vs LIBLINEAR.

Objectives (no bias), weights W of shape (d, K), scores S = X W, in float64 on the CPU:

* multiclass (Crammer and Singer; `nsjax.losses.MulticlassHinge()`, margin rescaling with
  the uniform label loss):

      J(W) = lam/2 ||W||_F^2 + (1/n) sum_i max_z [1(z != y_i) + S_iz - S_iy_i];

* multilabel (Yu et al. 2010, eq. 51 with uniform Delta = 1; `nsjax.losses.MultilabelHinge()`):

      J(W) = lam/2 ||W||_F^2 + (1/n) sum_i max_{z in Z_i, z' not in Z_i or z' = z}
                                              [1(z' != z) + S_iz' - S_iz].

Problems, each for lam in {1e-3, 1e-5}:

* digits: ``nsjax.datasets.digits()`` (dense 1797 x 64, 10 classes);
* Letter-like: ``nsjax.datasets.synthetic_sparse(16_000, 16, 1.0, n_classes=26, seed=0)``
  turned dense with ``.toarray()`` (Letter's 16,000 x 16 with 26 classes; n = 3,000 with
  ``--quick``);
* Scene-like multilabel: ``nsjax.datasets.synthetic_multilabel(1211, 294, 6, seed=0)``
  (Scene's 1,211 x 294 with 6 labels; the labels are passed as the returned list of lists).

Methods and how each is timed (``time.perf_counter``; JAX results are synced with
``block_until_ready``):

* nsjax ``SubLBFGS(memory=15, certify=False)`` (exact line search: these losses give their
  lines; ``certify`` only acts on the binary hinge, it is off for uniformity with
  ``binary_hinge.py``), the default solver ``Hybrid(sublbfgs=SubLBFGS(memory=15,
  certify=False))`` (subLBFGS, then the OCAS-like BMRM from its iterate, Yu et al. 2010,
  Sec. 8), qp-BMRM ``BMRM()`` and the OCAS-like ``BMRM(line_search="exact")``, all from
  W = 0, each stopped when its certified gap is <= ``STOP_TOL`` = 1e-9 * max(1, |J|) or at
  max_steps (``Caps``: per method, the hybrid with subLBFGS's; lower for subLBFGS, the
  hybrid and the OCAS-like BMRM on the Letter-like set, where their exact line search over
  n K = 416,000 lines costs several qp-BMRM steps). The hybrid is timed like subLBFGS,
  with ``certify=False`` (as in ``binary_hinge.py``, where its end-of-run hinge
  certificate would be a one-off cost charged to every timed k-step run; it does not act on
  these losses); its final certified gap is its in-loop gap (no extra run).
  The step that began that phase (``sol.stats["switched_at"]``, -1 if never) is kept in
  the JSON as "switched_at" and printed under its row. Compile time apart: first call
  minus an identical second call, with ``tol=1e30`` (stops at step 0; tol and lam are
  traced, so it is the very program of the real runs, and only the first lam of a problem
  compiles). Then the first (full) run,
  compiled. Time to a target: for the first step k at which J of what ``solve`` returns
  (``sol.history.best``: the best iterate so far, for every solver) meets it, the same
  compiled program is run again with ``tol`` = the certified gap of step k / max(1, |J|),
  rounded up, so that it stops right after step k (checked: ``num_steps == k``; otherwise
  ``solve(max_steps=k)`` is compiled and timed instead). Runs under 2 s: best of 3 (not
  with ``--quick``). A rerun predicted (k / num_steps x the first run's time) to exceed
  ``rerun_budget_s`` is not made: the proportional estimate is shown as ``~t (b)``.
  Curves put step k at k / num_steps of the first run's wall time; the hybrid's are
  proportional on each side of its switch instead, at the measured time to the switch step
  (its BMRM steps cost several times its subLBFGS steps; ``_common.phase_times``; the
  uniform times stay in the JSON as "times_uniform").
* LIBLINEAR Crammer-Singer (multiclass only): ``sklearn.svm.LinearSVC(
  multi_class="crammer_singer", fit_intercept=False, C=1/(lam n), tol=..., random_state=0)``.
  Its primal is 1/2 ||W||^2 + C sum_i max_z [1(z != y_i) + s_iz - s_iy_i] with W = coef_.T,
  i.e. J / lam with C = 1/(lam n): the script checks this numerically (LIBLINEAR's primal
  computed in numpy, times lam, against nsjax's ``Problem.objective`` on the same W, for
  LIBLINEAR's W and a random W; the JSON keeps the relative differences, and the run stops
  if they exceed 1e-9). Timing: ``binary_hinge.py`` grows max_iter, but scikit-learn's
  LIBLINEAR does not pass max_iter to its Crammer-Singer solver (``linear.cpp`` builds
  ``Solver_MCSVM_CS`` with its default of 100,000 iterations; a fit with max_iter=100 runs
  thousands), so here the stopping tolerance is tightened instead: fresh fits with
  tol = 1e-1, 1e-2, ..., 1e-10 (or until a time cap); the last is LIBLINEAR's tight run.
  Time to a target is the measured time of the loosest tol found whose J meets it: the
  first ladder fit that meets it, refined by a few bisection fits in log(tol) between it
  and the previous rung. Fits under 2 s are timed best of 3, like the nsjax runs. No
  compile time.

Reference J*. The tight BMRM run is the benchmark's qp-BMRM run itself (tol = 1e-9, up to
``qp_steps`` steps; it is cheap per step); with LIBLINEAR's tight (tol = 1e-10) fit, J* is
the smallest J among those and every other run of the benchmark, so relative
suboptimality (J - J*) / J* is never negative. The output says which one set J*, and
BMRM's certified gap of J*: J* minus the best certified lower bound of the two BMRM runs,
absolute and relative to J*.

Output: a table (problem, lam, method, time to 1e-2 and 1e-3 relative suboptimality,
compile time, final relative suboptimality, iterations, final certified gap),
the nsjax / LIBLINEAR ratios of time to 1e-3, ``<out>/multiclass_hinge.json`` (all
numbers, curves, machine), ``multiclass_hinge.png`` (relative suboptimality vs time,
log-log; rows: problems, columns: lam) and ``multiclass_hinge_gap_time.png`` (certified gap
/ J, ``history.gap`` over ``history.best``, vs time, on the same time axis: step k at
k / num_steps of the full run's compiled wall time, the hybrid's in two pieces; every nsjax
method). ``--quick`` writes
``*_quick.json`` / ``*_quick.png`` instead.

    python benchmarks/multiclass_hinge.py [--quick] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from sklearn.svm import LinearSVC

import nsjax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (the script's folder is on sys.path only from here)
    HERE,
    PLOT_FLOOR,
    TARGETS,
    Method,
    first_hit,
    fmt_time,
    machine,
    phase_times,
    plot_gap_time,
    plot_target_marks,
    ratio_line,
    rel_subopt,
    run_method,
    save_figure,
    save_json,
    style_axes,
    subplots,
    switch_note,
    time_to_step,
    timed_fit,
)

jax.config.update("jax_enable_x64", True)

LAMS = (1e-3, 1e-5)
LIBLINEAR_TOL = 1e-10  # the tightest fit of the tol ladder
LIBLINEAR_MAX_ITER = 100_000  # what LIBLINEAR's Crammer-Singer solver uses whatever is passed
STOP_TOL = 1e-9  # nsjax runs stop once the certified gap <= STOP_TOL * max(1, |J|)
IDENTITY_TOL = 1e-9  # LIBLINEAR's primal * lam vs nsjax's J, relative
SUB = "nsjax SubLBFGS"
HYB = "nsjax Hybrid (default)"
QP_BMRM = "qp-BMRM"
OCAS = "ls-BMRM exact (OCAS-like)"
LIB = "LIBLINEAR Crammer-Singer"
COLORS = {SUB: "C0", LIB: "C1", QP_BMRM: "C3", OCAS: "C4", HYB: "C6"}
SHORT = {SUB: "SubLBFGS", HYB: "Hybrid", QP_BMRM: "qp-BMRM", OCAS: "OCAS-like"}


@dataclasses.dataclass(frozen=True)
class Caps:
    """Iteration and time caps (full run vs --quick)."""

    letter_n: int  # rows of the Letter-like set
    sub_steps: int  # max_steps of SubLBFGS and of the Hybrid
    qp_steps: int  # ... of qp-BMRM, BMRM() (also the tight run for J*)
    ocas_steps: int  # ... of BMRM(line_search="exact")
    letter_sub_steps: int  # SubLBFGS and Hybrid on the Letter-like set (exact line search
    letter_ocas_steps: int  # ... is ~10x a qp-BMRM step there: n K = 416,000 lines)
    nsjax_direct: bool  # measure the nsjax times to target (else: proportional estimates)
    repeat_below: float  # s: nsjax timing runs shorter than this are timed best of 3
    rerun_budget_s: float  # skip a timing rerun predicted to take longer than this
    lib_run_cap: float  # stop the tol ladder after a fit longer than this (s)
    lib_total_cap: float  # or once its fits add up to this (s)
    lib_refine_fits: int  # bisection fits (in log tol) per target
    lib_refine_cap: float  # skip refinement when the crossing fit took longer (s)


# 1,500 Hybrid steps: on digits at lam = 1e-5 it needs 850-1,065 to reach 1e-3, as the order
# of the bundle's additions alone moves it (RESULTS.md, "Reading the bundle all at once")
FULL = Caps(16_000, 1500, 2000, 2000, 150, 200, True, 2.0, 10.0, 20.0, 60.0, 3, 5.0)
QUICK = Caps(3_000, 150, 300, 150, 40, 60, True, 0.0, 1.0, 2.0, 4.0, 1, 0.3)


@dataclasses.dataclass(frozen=True)
class Problem:
    """One benchmark problem: data, the nsjax loss, and whether LIBLINEAR applies."""

    name: str
    X: np.ndarray
    y: Any  # class labels (n,), or a list of label lists
    loss: Any
    multiclass: bool
    steps: dict  # max_steps per nsjax method


def problems(caps: Caps) -> list[Problem]:
    steps = {SUB: caps.sub_steps, HYB: caps.sub_steps, QP_BMRM: caps.qp_steps,
             OCAS: caps.ocas_steps}
    letter = dict(steps, **{SUB: caps.letter_sub_steps, HYB: caps.letter_sub_steps,
                            OCAS: caps.letter_ocas_steps})
    mc = nsjax.losses.MulticlassHinge()
    X, y = nsjax.datasets.digits()
    out = [Problem("digits (1797x64, 10 classes)", X, y, mc, True, steps)]
    X, y = nsjax.datasets.synthetic_sparse(caps.letter_n, 16, 1.0, n_classes=26, seed=0)
    out.append(Problem(f"Letter-like ({caps.letter_n}x16, 26 classes)", X.toarray(), y, mc,
                       True, letter))
    X, labels = nsjax.datasets.synthetic_multilabel(1211, 294, 6, seed=0)
    out.append(Problem("Scene-like multilabel (1211x294, 6)", np.asarray(X), labels,
                       nsjax.losses.MultilabelHinge(), False, steps))
    return out


# ----------------------------------------------------------------------------------------
# LIBLINEAR Crammer-Singer
# ----------------------------------------------------------------------------------------


def liblinear_primal(W: np.ndarray, X: np.ndarray, yi: np.ndarray, C: float) -> float:
    """LIBLINEAR's MCSVM_CS primal, 1/2 ||W||^2 + C sum_i max_z [1(z != y_i) + s_iz - s_iy_i],
    with yi the class indices (0..K-1)."""
    S = X @ W
    n, K = S.shape
    margins = 1.0 - np.eye(K)[yi] + S - S[np.arange(n), yi][:, None]
    return float(0.5 * np.sum(W * W) + C * np.sum(np.max(margins, axis=1)))


# Independent numpy reference for LIBLINEAR's coefficients (the objective identity check).
def objective(W: np.ndarray, X: np.ndarray, yi: np.ndarray, lam: float) -> float:
    """J(W) for the multiclass hinge, in numpy: lam times LIBLINEAR's primal with C = 1/(lam n)."""
    return lam * liblinear_primal(W, X, yi, 1.0 / (lam * X.shape[0]))


def liblinear_fit(X: np.ndarray, y: np.ndarray, yi: np.ndarray, lam: float,
                  tol: float) -> dict:
    n = X.shape[0]
    clf = LinearSVC(multi_class="crammer_singer", fit_intercept=False, C=1.0 / (lam * n),
                    tol=tol, max_iter=LIBLINEAR_MAX_ITER, random_state=0)
    elapsed = timed_fit(clf, X, y)
    n_iter = int(np.max(clf.n_iter_))
    W = clf.coef_.T.astype(float)
    return {"tol": float(tol), "time_s": elapsed, "n_iter": n_iter,
            "value": objective(W, X, yi, lam), "converged": n_iter < LIBLINEAR_MAX_ITER, "W": W}


def liblinear_ladder(X: np.ndarray, y: np.ndarray, yi: np.ndarray, lam: float,
                     caps: Caps) -> dict:
    """Fresh fits with tol = 1e-1, 1e-2, ..., LIBLINEAR_TOL (or until a cap)."""
    runs: list[dict] = []
    total = 0.0
    for e in range(1, round(-math.log10(LIBLINEAR_TOL)) + 1):
        run = liblinear_fit(X, y, yi, lam, 10.0 ** -e)
        runs.append(run)
        total += run["time_s"]
        if run["time_s"] > caps.lib_run_cap or total > caps.lib_total_cap:
            break
    last = runs[-1]
    return {"runs": runs, "reference": last, "ladder_total_s": total}


def liblinear_time_to(X: np.ndarray, y: np.ndarray, yi: np.ndarray, lam: float, lib: dict,
                      j_star: float, target: float, caps: Caps) -> dict | None:
    """Measured time of the loosest tol found whose J meets the target."""
    runs = sorted(lib["runs"], key=lambda r: -r["tol"])
    hit = next((r for r in runs if rel_subopt(r["value"], j_star) <= target), None)
    if hit is None:
        return None
    above = [r["tol"] for r in runs if r["tol"] > hit["tol"]]
    lo, hi, best = (min(above) if above else 1.0), hit["tol"], hit
    refined = 0
    if hit["time_s"] <= caps.lib_refine_cap:
        while refined < caps.lib_refine_fits:
            mid = math.sqrt(lo * hi)  # bisection in log(tol)
            run = liblinear_fit(X, y, yi, lam, mid)
            lib["runs"].append(run)  # kept for the plot and the JSON
            refined += 1
            if rel_subopt(run["value"], j_star) <= target:
                hi = mid
                if run["time_s"] < best["time_s"]:
                    best = run
            else:
                lo = mid
    return {"time_s": best["time_s"], "tol": best["tol"], "n_iter": best["n_iter"],
            "refine_fits": refined, "bracket_tol": [lo, hi], "measured": True}


def identity_check(prob: nsjax.Problem, X: np.ndarray, yi: np.ndarray, lam: float,
                   W_lib: np.ndarray) -> dict:
    """lam * LIBLINEAR's primal (C = 1/(lam n)) against nsjax's Problem.objective, same W."""
    rng = np.random.default_rng(0)
    out = {}
    for name, W in (("liblinear_W", W_lib), ("random_W", rng.standard_normal(W_lib.shape))):
        lib = lam * liblinear_primal(W, X, yi, 1.0 / (lam * X.shape[0]))
        ns = float(prob.objective(jnp.asarray(W, prob.dtype)))
        out[name] = {"lam_times_liblinear_primal": lib, "nsjax_value": ns,
                     "rel_diff": abs(lib - ns) / max(abs(ns), 1e-300)}
    worst = max(v["rel_diff"] for v in out.values())
    if not worst <= IDENTITY_TOL:
        raise RuntimeError(f"LIBLINEAR's objective and nsjax's J disagree: {out}")
    out["max_rel_diff"] = worst
    return out


# ----------------------------------------------------------------------------------------
# nsjax
# ----------------------------------------------------------------------------------------


SOLVERS = {SUB: nsjax.solvers.SubLBFGS(memory=15, certify=False),
           HYB: nsjax.solvers.Hybrid(sublbfgs=nsjax.solvers.SubLBFGS(memory=15, certify=False)),
           QP_BMRM: nsjax.solvers.BMRM(), OCAS: nsjax.solvers.BMRM(line_search="exact")}


def nsjax_methods(p: Problem) -> list[Method]:
    return [Method(name, solver, p.steps[name]) for name, solver in SOLVERS.items()]


def nsjax_time_to(res: dict, j_star: float, target: float, caps: Caps) -> dict | None:
    k = first_hit(res["values"], j_star, target)
    return None if k is None else time_to_step(res, k, caps, STOP_TOL, False)


# ----------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------


def bench_one(p: Problem, lam: float, caps: Caps) -> dict:
    t0 = time.perf_counter()
    prob = nsjax.Problem(p.loss, nsjax.regularizers.L2(lam), p.X, p.y)
    jax.block_until_ready(prob.X)
    setup = time.perf_counter() - t0

    runs = {m.name: run_method(prob, m, STOP_TOL) for m in nsjax_methods(p)}
    for res in runs.values():
        phase_times(res, caps, STOP_TOL)  # the hybrid's two-piece time axis

    lib = identity = None
    yi = np.asarray(prob.y)  # class indices 0..K-1 (nsjax sorts the labels, as sklearn does)
    if p.multiclass:
        lib = liblinear_ladder(p.X, p.y, yi, lam, caps)
        identity = identity_check(prob, p.X, yi, lam, lib["reference"]["W"])

    candidates = {"tight BMRM run (qp-BMRM, tol 1e-9)": runs[QP_BMRM]["final_value"]}
    if lib:
        ref = lib["reference"]
        candidates[f"LIBLINEAR (tight run, tol {ref['tol']:.0e})"] = ref["value"]
        candidates["LIBLINEAR (any run)"] = min(r["value"] for r in lib["runs"])
    for name, res in runs.items():
        candidates[name] = float(np.nanmin(res["values"]))
    set_by = min(candidates, key=candidates.get)
    j_star = candidates[set_by]
    bmrm_lower = max(runs[n]["lower_bound"] for n in (QP_BMRM, OCAS))
    bmrm_gap = j_star - bmrm_lower

    methods: dict[str, dict] = {}
    for name, res in runs.items():
        methods[name] = {
            "time_to": {str(t): nsjax_time_to(res, j_star, t, caps) for t in TARGETS},
            "compile_s": res["compile_s"],
            "final_rel_subopt": float(rel_subopt(res["values"][-1], j_star)),
            "iterations": res["num_steps"], "max_steps": res["max_steps"],
            "result": res["result"], "wall_s": res["wall_s"], "stats": res["stats"],
            "final_value": res["final_value"], "final_certified_gap": res["final_gap"],
            "curve": {"times": res["times"], "values": res["values"], "gaps": res["gaps"],
                      "times_are": res["times_are"],
                      "values_are": "J of what solve(max_steps=k) returns"},
        }
        if "times_uniform" in res:
            methods[name]["curve"]["times_uniform"] = res["times_uniform"]
        if "switched_at" in res["stats"]:  # the hybrid: the step that began its BMRM phase
            methods[name]["switched_at"] = res["stats"]["switched_at"]
            methods[name]["switch_timing"] = res.get("switch_timing")
    if lib:
        lib_runs = sorted(lib["runs"], key=lambda r: -r["tol"])
        methods[LIB] = {
            "time_to": {str(t): liblinear_time_to(p.X, p.y, yi, lam, lib, j_star, t, caps)
                        for t in TARGETS},
            "compile_s": 0.0,
            "final_rel_subopt": float(rel_subopt(lib["reference"]["value"], j_star)),
            "iterations": lib["reference"]["n_iter"],
            "converged": lib["reference"]["converged"], "final_certified_gap": None,
            "ladder_total_s": lib["ladder_total_s"],
            "curve": {"times": [r["time_s"] for r in lib_runs],
                      "values": [r["value"] for r in lib_runs],
                      "tol": [r["tol"] for r in lib_runs],
                      "n_iter": [r["n_iter"] for r in lib_runs],
                      "times_are": "wall time of a fresh fit with that tol"},
        }
    return {
        "lam": lam, "n": int(p.X.shape[0]), "d": int(p.X.shape[1]),
        "K": int(prob.num_outputs), "nsjax_setup_s": setup,
        "j_star": j_star, "j_star_set_by": set_by, "j_star_candidates": candidates,
        "bmrm_lower_bound": bmrm_lower, "bmrm_certified_gap_of_j_star": bmrm_gap,
        "bmrm_certified_rel_gap_of_j_star": bmrm_gap / j_star,
        "liblinear_reference": ({k: v for k, v in lib["reference"].items() if k != "W"}
                                if lib else None),
        "objective_identity_check": identity, "methods": methods,
    }


def print_table(results: dict) -> list[str]:
    lines = []
    head = (f"{'problem':36s} {'lam':>6s} {'method':26s} {'t(1e-2)':>13s} {'t(1e-3)':>13s} "
            f"{'compile':>8s} {'final rel':>10s} {'iters':>7s} {'cert. gap':>9s}")
    lines += [head, "-" * len(head)]
    for ds, per_lam in results.items():
        for res in per_lam:
            for name, m in res["methods"].items():
                gap = m["final_certified_gap"]
                lines.append(
                    f"{ds:36s} {res['lam']:6.0e} {name:26s} "
                    f"{fmt_time(m['time_to']['0.01']):>13s} "
                    f"{fmt_time(m['time_to']['0.001']):>13s} {m['compile_s']:7.2f}s "
                    f"{m['final_rel_subopt']:10.2e} {m['iterations']:7d} "
                    f"{('-' if gap is None else format(gap, '.1e')):>9s}")
                note = switch_note(SHORT.get(name, name), m)
                if note:
                    lines.append(f"{'':36s} {'':6s} ({note})")
            ident = res["objective_identity_check"]
            ident = (f"; LIBLINEAR objective identity: max rel. diff {ident['max_rel_diff']:.1e}"
                     if ident else "")
            lines.append(
                f"{'':36s} {'':6s} J* = {res['j_star']:.12g} set by {res['j_star_set_by']}; "
                f"BMRM certified gap of J* {res['bmrm_certified_gap_of_j_star']:.1e} "
                f"(rel. {res['bmrm_certified_rel_gap_of_j_star']:.1e}){ident}")
    lines.append("")
    lines.append("Ratio nsjax / LIBLINEAR time to 1e-3 relative suboptimality:")
    for ds, per_lam in results.items():
        lines += [ratio_line(ds, res, SHORT, LIB) for res in per_lam if LIB in res["methods"]]
    print("\n".join(lines), flush=True)
    return lines


def plot(results: dict, path: Path) -> None:
    plt, fig, axes = subplots(results, len(LAMS))
    for r, (ds, per_lam) in enumerate(results.items()):
        for c, res in enumerate(per_lam):
            ax = axes[r][c]
            for name, m in res["methods"].items():
                color = COLORS[name]
                t = np.asarray(m["curve"]["times"], float)
                v = np.maximum(rel_subopt(m["curve"]["values"], res["j_star"]), PLOT_FLOOR)
                ok = np.isfinite(v) & (t > 0)
                marker = "o" if name == LIB else None
                ax.plot(t[ok], v[ok], color=color, marker=marker, ms=3, label=name)
                if name != LIB:
                    plot_target_marks(ax, m, color)
            for target in TARGETS:
                ax.axhline(target, color="gray", lw=0.8, ls=":")
            style_axes(ax, ds, res["lam"], c == 0, "time (s)", "(J - J*) / J*")
            ax.legend(fontsize=7)
    save_figure(plt, fig, "Multiclass / multilabel hinge: relative suboptimality vs wall "
                "time\n(nsjax lines: compiled run, step k at k/N of its wall time;\nthe "
                "Hybrid's k/N within each phase, split at its measured switch time;\nx: "
                "measured time to target)", path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="Letter-like set with n = 3,000 and low caps: under 2 minutes")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for multiclass_hinge.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/multiclass_hinge[_quick].png)")
    parser.add_argument("--gap-time-png", type=Path, default=None,
                        help="gap vs time plot path "
                             "(default: benchmarks/multiclass_hinge_gap_time[_quick].png)")
    args = parser.parse_args(argv)
    caps = QUICK if args.quick else FULL
    suffix = "_quick" if args.quick else ""
    png = args.png or HERE / f"multiclass_hinge{suffix}.png"
    gap_time_png = args.gap_time_png or HERE / f"multiclass_hinge_gap_time{suffix}.png"
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    host = machine()  # at the start: the commit that is measured
    results: dict[str, list[dict]] = {}
    for p in problems(caps):
        results[p.name] = []
        for lam in LAMS:
            t0 = time.perf_counter()
            results[p.name].append(bench_one(p, lam, caps))
            print(f"[{time.perf_counter() - start:7.1f} s] {p.name}, lam={lam:.0e} done in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    print()
    lines = print_table(results)
    notes = [
        "t(...): time to reach that relative suboptimality (J - J*) / J*; J is that of "
        "what solve() returns (the best iterate so far, history.best).",
        "nsjax: measured compiled runs of the first run's program, stopped after the "
        "target step by tol; ~ = proportional estimate; (b) = timing run skipped (budget).",
        "LIBLINEAR: measured fresh fit with the loosest tol found to reach it (its "
        "Crammer-Singer solver ignores max_iter: see the docstring).",
        "compile: first call minus an identical second call (lam is traced, so only the "
        "first lam of a problem compiles).",
        f"cert. gap: the run's final certified gap (stop at <= {STOP_TOL:g} * max(1, |J|) "
        f"or at max_steps: SubLBFGS and Hybrid {caps.sub_steps} ({caps.letter_sub_steps} on "
        "Letter), "
        f"qp-BMRM {caps.qp_steps}, OCAS-like {caps.ocas_steps} ({caps.letter_ocas_steps} on "
        "Letter)); SubLBFGS's comes from direction finding's dual points, which are weak "
        "away from the binary hinge; the Hybrid's (certify=False, timed like SubLBFGS) is "
        "the gap its BMRM phase reaches.",
        "J*: the qp-BMRM run (tol 1e-9) is the tight BMRM run; LIBLINEAR's tight run has "
        f"tol {LIBLINEAR_TOL:g}.",
    ]
    print("\n".join(notes))
    payload = {
        "benchmark": "multiclass (Crammer-Singer) and multilabel hinge, "
                     "J(W) = lam/2 ||W||_F^2 + mean_i max_z [...]",
        "mode": "quick" if args.quick else "full", "caps": dataclasses.asdict(caps),
        "targets": TARGETS, "liblinear_tol": LIBLINEAR_TOL, "nsjax_stop_tol": STOP_TOL,
        "nsjax_solvers": {name: repr(solver) for name, solver in SOLVERS.items()},
        "machine": host, "total_time_s": time.perf_counter() - start,
        "table": lines, "notes": notes, "results": results,
    }
    json_path = args.out / f"multiclass_hinge{suffix}.json"
    save_json(json_path, payload, ("prob", "method", "W"))
    plot(results, png)
    plot_gap_time(results, SHORT, COLORS, len(LAMS), gap_time_png,
                  "Multiclass / multilabel hinge: certified gap / J vs wall time\n(step k at "
                  "k/N of the compiled run's wall time,\nthe Hybrid's k/N within each phase; "
                  "o: Hybrid's switch to BMRM;\nsubLBFGS and Hybrid: certify=False)")
    print(f"\nwrote {json_path}, {png} and {gap_time_png} "
          f"({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

"""Saha et al. (2009), Fig. 1-2: primal error of Pragam, AGM-EF (Zhang et al. 2010), the
BMRM family and LIBLINEAR against iterations and against wall time, on the binary hinge SVM
(issue 11).

Objective (no bias), identical for every method:

    J(w) = lam/2 ||w||^2 + (1/n) sum_i max(0, 1 - y_i x_i^T w),   y_i in {-1, +1}.

The paper plots err_t = min_{t' <= t} J(w_t') - J* against the iteration t (its Fig. 1) and
against time (Fig. 2); here err_t is relative, (min_{t' <= t} J(w_t') - J*) / J*. Its claims,
checked by the tables this script prints: (a) Pragam needs fewer iterations than ls-BMRM
(the 1/eps line-search BMRM) to reach a given accuracy; (b) Pragam is slow to low accuracy
(1e-3) in time but "becomes quite competitive when higher accuracy is desired", while
LIBLINEAR is much faster than all. A third table, (c), sets the AGM-EF variants (the
accelerated methods of Zhang et al. 2010 on the same dual, with adaptive L) against Pragam:
their steps and times over Pragam's.

Problems: scikit-learn digits, even vs odd (``nsjax.datasets.digits_binary()``, dense 1797 x
64, pixels in [0, 1], as ``binary_hinge.py``) and ``nsjax.datasets.synthetic_sparse(20_000,
10_000, 0.0025, seed=0)`` (rows of unit norm; 2,000 x 1,000 with ``--quick``), each for lam
in {1e-2, 1e-4, 1e-5} (the paper picks lam in 2^-14 .. 2^-19, 6e-5 .. 2e-6, by validation).
float64 on the CPU; every method starts at w = 0.

Methods:

* ``Pragam()`` (Saha et al. 2009, Alg. 1; L from 20 power iterations, raised by backtracking),
  ``LineSearchBMRM()`` (ls-BMRM, Smola et al. 2007, eq. 15, the paper's ``ls-bmrm``) and the three
  AGM-EF variants (Zhang et al. 2010; adaptive L from a 20-power-iteration estimate, Alg. 2 / 4:
  ``AGMEF()``, AGM-EF-inf on the unsmoothed dual, Sec. 5.3; ``AGMEF(scheme="primal",
  epsilon=1e-7)``, AGM-EF-inf on the smoothed primal, Sec. 5.1.1, its certified gap on J
  flooring near eps = 1e-7, below every target here since J* >= 0.16 and every J <= 1; and
  ``AGMEF1()``, AGM-EF-1, Alg. 3-4, dual scheme), all with max_steps ``long_steps`` (the
  same cap, so that "not reached" by ls-BMRM means "not in as many steps as Pragam was
  given"); ``BMRM()`` (qp-BMRM, the paper's ``qp-bmrm``) and
  ``BMRM(line_search="exact")`` (the OCAS-like BMRM, Yu et al. 2010, Sec. 7.4) with max_steps
  ``bmrm_steps``. Each stops once its certified gap is <= ``STOP_TOL`` * max(1, |J|). The
  value at step t is ``sol.history.best[t]``: J of the best iterate so far, i.e. err_t.
  Timing as in ``binary_hinge.py`` (``_common``): compile time measured apart (a first call
  minus the identical second call with tol=1e30; lam is traced, so only the first lam of a
  dataset compiles), the full run timed compiled; history has no timestamps, so the
  err-vs-time curves put step t at t / num_steps x the full run's compiled wall time
  (uniform cost per step: for the BMRMs, whose QP grows with the bundle, this is only
  approximate); times to target in the tables are *measured*: the same compiled program
  rerun with ``tol`` set to the certified gap at the target step, so that it stops right
  there (``_common.time_to_step``; best of 3 under 2 s; a rerun predicted to take longer
  than ``rerun_budget_s`` is skipped and the proportional estimate shown as ``~t (b)``).
* LIBLINEAR (``LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1/(lam n),
  tol=1e-10)``): ``binary_hinge.py``'s helpers, a fresh fit for max_iter = 1, 2, 4, ...
  until it converges (or a cap), then a few bisection fits on max_iter at each target; the
  time to a target is the measured fit time of the smallest max_iter found that meets it.
  Its "iterations" are its outer passes (n dual coordinate steps each, about the work of
  two products with X); its curve is the running minimum of J over the fits, in max_iter
  order.

J* = min(LIBLINEAR's J over its fits, Clarabel's J where the QP is small enough (digits),
the best J any method reached), so err_t >= 0; the JSON records which set it and the best
certified lower bound (Clarabel's dual, or a method's certified gap). Every method's
certified gap is checked against J* at every step (gap >= J_best - J*, up to rounding; a
violation would be a bug and is printed and recorded under "checks").

Output: a table (steps and time to err 1e-2, 1e-3, 1e-4 per method, compile, final err,
steps run, products with X per step), the ratios behind the paper's claims (Pragam's steps
over ls-BMRM's; Pragam's time over each other method's; each AGM-EF variant's steps and
time over Pragam's), the
load average before and after each block (the machine is shared), ``<out>/pragam_fig12.json``
and ``benchmarks/pragam_fig12.png`` (rows: dataset x {iterations, time}, columns: lam;
log-log). ``--quick`` writes ``*_quick.*``.

    python benchmarks/pragam_fig12.py [--quick] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import scipy.sparse as sp

import nsjax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (the script's folder is on sys.path only from here)
    HERE,
    LIBLINEAR_TOL,
    PLOT_FLOOR,
    Method,
    fmt_time,
    liblinear_doubling,
    liblinear_time_to,
    machine,
    pyplot,
    qp_reference,
    rel_subopt,
    run_method,
    save_figure,
    save_json,
    time_to_step,
)

jax.config.update("jax_enable_x64", True)

LAMS = (1e-2, 1e-4, 1e-5)
TARGETS = (1e-2, 1e-3, 1e-4)
STOP_TOL = 1e-6  # nsjax: stop once the certified gap <= STOP_TOL * max(1, |J|)
CURVE_POINTS = 1500  # log-spaced steps kept in the JSON curves
PRAGAM = "Pragam"
LS_BMRM = "ls-BMRM (eq. 15)"
QP_BMRM = "qp-BMRM"
OCAS = "OCAS-like BMRM"
LIB = "LIBLINEAR"
AGM_DUAL = "AGM-EF (dual)"
AGM_PRIMAL = "AGM-EF (primal)"
AGM1 = "AGM-EF-1 (dual)"
PRIMAL_EPSILON = 1e-7  # AGMEF(scheme="primal")'s smoothing target: below every target x J*
COLORS = {PRAGAM: "C3", LS_BMRM: "C5", QP_BMRM: "C0", OCAS: "C4", LIB: "C1", AGM_DUAL: "C2",
          AGM_PRIMAL: "C6", AGM1: "C7"}
# set against Pragam in table (c)
AGM_VARIANTS = (AGM_DUAL, AGM_PRIMAL, AGM1)
# Pragam is compared on time with these (claim b)
TIME_PEERS = (LS_BMRM, QP_BMRM, OCAS, LIB)


@dataclasses.dataclass(frozen=True)
class Caps:
    """Sizes, iteration and time caps (full run vs --quick). The LIBLINEAR fields are the
    ones ``_common.liblinear_doubling`` / ``liblinear_time_to`` read, the nsjax ones
    those of ``_common.time_to_step``."""

    sparse_shape: tuple[int, int]
    long_steps: dict[str, int]  # max_steps of Pragam, ls-BMRM and AGM-EF, per dataset key
    bmrm_steps: int  # ... of qp-BMRM and the OCAS-like BMRM
    nsjax_direct: bool  # measure the nsjax times to target (else: proportional estimates)
    repeat_below: float  # s: nsjax timing runs shorter than this are timed best of 3
    rerun_budget_s: float  # skip a timing rerun predicted to take longer than this
    lib_max_iter: int
    lib_run_cap: float  # stop doubling after a fit longer than this (s)
    lib_total_cap: float  # or once the doubling fits add up to this (s)
    lib_refine_fits: int  # bisection fits per target
    lib_refine_cap: float  # skip refinement when the crossing fit took longer (s)


FULL = Caps((20_000, 10_000), {"digits": 100_000, "sparse": 20_000}, 1000, True, 2.0, 60.0,
            2**20, 60.0, 150.0, 4, 10.0)
QUICK = Caps((2_000, 1_000), {"digits": 10_000, "sparse": 5000}, 300, True, 0.0, 5.0,
             2**16, 2.0, 8.0, 3, 0.5)


def datasets(caps: Caps) -> dict[str, tuple[str, Any, np.ndarray]]:
    n, d = caps.sparse_shape
    X, y = nsjax.datasets.digits_binary()
    Xs, ys = nsjax.datasets.synthetic_sparse(n, d, 0.0025, seed=0)
    return {
        "digits even/odd (dense 1797x64)": ("digits", X, y),
        f"synthetic sparse {n}x{d} (0.25%)": ("sparse", Xs, ys),
    }


def methods(caps: Caps, key: str) -> list[Method]:
    s = nsjax.solvers
    long = caps.long_steps[key]
    return [
        Method(PRAGAM, s.Pragam(), long),
        Method(LS_BMRM, s.LineSearchBMRM(), long),
        Method(QP_BMRM, s.BMRM(), caps.bmrm_steps),
        Method(OCAS, s.BMRM(line_search="exact"), caps.bmrm_steps),
        Method(AGM_DUAL, s.AGMEF(), long),
        Method(AGM_PRIMAL, s.AGMEF(scheme="primal", epsilon=PRIMAL_EPSILON), long),
        Method(AGM1, s.AGMEF1(), long),
    ]


def log_steps(n: int) -> np.ndarray:
    """About CURVE_POINTS log-spaced steps in 1..n (1-based), both ends included."""
    if n <= 0:
        return np.zeros(0, int)
    return np.unique(np.round(np.geomspace(1, n, CURVE_POINTS)).astype(int))


def gap_check(res: dict, j_star: float) -> dict:
    """Certified gap >= J_best - J* at every step (J* >= min J, so a valid certificate
    satisfies it); rounding slack 1e-12 * max(1, J*). Also: non-finite values."""
    best, gaps = np.asarray(res["values"]), np.asarray(res["gaps"])
    slack = 1e-12 * max(1.0, abs(j_star))
    finite = np.isfinite(gaps)
    bad = np.flatnonzero(finite & (gaps < best - j_star - slack))
    return {"steps_checked": int(finite.sum()), "violations": int(bad.size),
            "first_violation": (None if not bad.size else
                                {"step": int(bad[0]) + 1, "gap": float(gaps[bad[0]]),
                                 "subopt": float(best[bad[0]] - j_star)}),
            "nonfinite_values": int(np.sum(~np.isfinite(best))),
            "result": res["result"]}


def bench_one(key: str, X: Any, y: np.ndarray, lam: float, caps: Caps) -> dict:
    load_before = os.getloadavg()
    y = np.where(y > 0, 1.0, -1.0)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    jax.block_until_ready(prob.X)

    qp = qp_reference(X, y, lam)
    lib = liblinear_doubling(X, y, lam, caps)
    runs = {m.name: run_method(prob, m, STOP_TOL) for m in methods(caps, key)}

    candidates = {"LIBLINEAR (any fit)": min(r["value"] for r in lib["runs"])}
    if qp and "value" in qp:
        candidates["QP (Clarabel)"] = qp["value"]
    lowers: dict[str, float] = {}
    for name, res in runs.items():
        finite = [v for v in res["values"] if math.isfinite(v)]
        candidates[name] = min(finite) if finite else math.inf
        lowers[f"{name} certified gap"] = res["lower_bound"]
    if qp and "lower_bound" in qp:
        lowers["QP dual (Clarabel)"] = qp["lower_bound"]
    set_by = min(candidates, key=candidates.get)
    j_star = candidates[set_by]
    lb_by = max(lowers, key=lowers.get)

    out_methods: dict[str, dict] = {}
    for name, res in runs.items():
        time_to, steps_to = {}, {}
        for t in TARGETS:
            k = first_hit_rel(res["values"], j_star, t)
            steps_to[str(t)] = k
            time_to[str(t)] = None if k is None else time_to_step(res, k, caps, STOP_TOL, True)
        steps = log_steps(res["num_steps"])
        vals, gaps = np.asarray(res["values"]), np.asarray(res["gaps"])
        rel_gap = gaps / vals
        cert_hits = {str(t): (int(np.flatnonzero(rel_gap <= t)[0]) + 1
                              if np.any(rel_gap <= t) else None) for t in TARGETS}
        out_methods[name] = {
            "steps_to": steps_to, "time_to": time_to, "steps_to_certified_rel_gap": cert_hits,
            "compile_s": res["compile_s"], "wall_s": res["wall_s"],
            "iterations": res["num_steps"], "max_steps": res["max_steps"],
            "result": res["result"], "stats": res["stats"],
            "matvecs_per_step": res["stats"].get("matvecs", 0) / max(res["num_steps"], 1),
            "final_value": res["final_value"], "final_gap": res["final_gap"],
            "final_rel_err": float(rel_subopt(vals[-1], j_star)),
            "checks": gap_check(res, j_star),
            "curve": {"steps": steps.tolist(), "values": vals[steps - 1].tolist(),
                      "gaps": gaps[steps - 1].tolist(),
                      "times": np.asarray(res["times"])[steps - 1].tolist(),
                      "times_are": "k / num_steps * compiled wall time of the full run",
                      "values_are": "history.best: min J over steps <= k"},
        }
        chk = out_methods[name]["checks"]
        if chk["violations"] or chk["nonfinite_values"]:
            print(f"!! {name} at lam={lam:.0e}: certified gap below J_best - J* at "
                  f"{chk['violations']} steps (first {chk['first_violation']}), "
                  f"{chk['nonfinite_values']} non-finite values", flush=True)

    lib_runs = sorted(lib["runs"], key=lambda r: r["max_iter"])
    lib_to = {str(t): liblinear_time_to(X, y, lam, lib, j_star, t, caps) for t in TARGETS}
    lib_runs = sorted(lib["runs"], key=lambda r: r["max_iter"])  # refinement fits added
    running = np.minimum.accumulate([r["value"] for r in lib_runs])
    out_methods[LIB] = {
        "steps_to": {k: (v["max_iter"] if v else None) for k, v in lib_to.items()},
        "time_to": {k: (dict(v, measured=True) if v else None) for k, v in lib_to.items()},
        "compile_s": 0.0, "iterations": lib["reference"]["n_iter"],
        "converged": lib["converged"], "fit_overhead_s": lib["fit_overhead_s"],
        "doubling_total_s": lib["doubling_total_s"],
        "final_rel_err": float(rel_subopt(lib["reference"]["value"], j_star)),
        "matvecs_per_step": None, "result": "converged" if lib["converged"] else "max_iter",
        "curve": {"steps": [r["max_iter"] for r in lib_runs], "values": running.tolist(),
                  "fit_values": [r["value"] for r in lib_runs],
                  "times": [r["time_s"] for r in lib_runs],
                  "times_are": "wall time of a fresh fit with that max_iter",
                  "values_are": "running min of J over fits with max_iter <= this one"},
    }
    return {
        "lam": lam, "n": int(X.shape[0]), "d": int(X.shape[1]),
        "nnz": int(X.nnz) if sp.issparse(X) else int(X.size),
        "j_star": j_star, "j_star_set_by": set_by, "j_star_candidates": candidates,
        "lower_bound": lowers[lb_by], "lower_bound_by": lb_by,
        "certified_rel_gap_of_j_star": (j_star - lowers[lb_by]) / j_star,
        "qp": qp, "liblinear_reference": lib["reference"], "methods": out_methods,
        "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
    }


def first_hit_rel(values: list[float], j_star: float, target: float) -> int | None:
    hits = np.flatnonzero(rel_subopt(np.asarray(values), j_star) <= target)
    return int(hits[0]) + 1 if hits.size else None


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------


def _steps(k: int | None) -> str:
    return "-" if k is None else str(k)


def print_table(results: dict) -> list[str]:
    lines = []
    head = (f"{'dataset':34s} {'lam':>6s} {'method':17s} {'k(1e-2)':>8s} {'k(1e-3)':>8s} "
            f"{'k(1e-4)':>8s} {'t(1e-2)':>12s} {'t(1e-3)':>12s} {'t(1e-4)':>12s} "
            f"{'compile':>8s} {'final err':>9s} {'steps':>7s} {'X/step':>6s} {'result':>17s}")
    lines += [head, "-" * len(head)]
    for ds, per_lam in results.items():
        for res in per_lam:
            for name, m in res["methods"].items():
                ks = [_steps(m["steps_to"][str(t)]) for t in TARGETS]
                ts = [fmt_time(m["time_to"][str(t)]) if m["time_to"][str(t)] else "-"
                      for t in TARGETS]
                mv = m["matvecs_per_step"]
                lines.append(
                    f"{ds:34s} {res['lam']:6.0e} {name:17s} {ks[0]:>8s} {ks[1]:>8s} "
                    f"{ks[2]:>8s} {ts[0]:>12s} {ts[1]:>12s} {ts[2]:>12s} "
                    f"{m['compile_s']:7.2f}s {m['final_rel_err']:9.1e} {m['iterations']:7d} "
                    f"{('-' if mv is None else format(mv, '.2f')):>6s} {m['result']:>17s}")
            lb, la = res["loadavg_before"], res["loadavg_after"]
            lines.append(
                f"{'':34s} {'':6s} J* = {res['j_star']:.12g} set by {res['j_star_set_by']}; "
                f"certified rel. gap {res['certified_rel_gap_of_j_star']:.1e} "
                f"({res['lower_bound_by']}); load {lb[0]:.1f} -> {la[0]:.1f}")
    print("\n".join(lines), flush=True)
    return lines


def ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None or b == 0 else f"{a / b:.3g}"


def print_ratios(results: dict) -> list[str]:
    lines = ["", "(a) Pragam's steps / ls-BMRM's steps to err (< 1: Pragam needs fewer; "
                 "'<x': ls-BMRM not reached in its max_steps, x = Pragam's / max_steps):"]
    for ds, per_lam in results.items():
        for res in per_lam:
            p, q = res["methods"][PRAGAM], res["methods"][LS_BMRM]
            parts = []
            for t in TARGETS:
                a, b = p["steps_to"][str(t)], q["steps_to"][str(t)]
                if a is not None and b is None:
                    parts.append(f"{t:g}: <{a / q['iterations']:.3g}")
                elif a is None and b is not None:
                    parts.append(f"{t:g}: Pragam not reached")
                elif a is None:
                    parts.append(f"{t:g}: neither reached")
                else:
                    parts.append(f"{t:g}: {ratio(a, b)}")
            lines.append(f"  {ds:34s} lam={res['lam']:.0e}  " + ", ".join(parts))
    lines += ["", "(b) Pragam's time / each peer's time to err (< 1: Pragam faster; "
                  "~: a proportional estimate on one side):"]
    for ds, per_lam in results.items():
        for res in per_lam:
            p = res["methods"][PRAGAM]
            parts = []
            for t in TARGETS:
                a = p["time_to"][str(t)]
                sub = []
                for peer in TIME_PEERS:
                    b = res["methods"][peer]["time_to"][str(t)]
                    if a is None and b is None:
                        sub.append(f"{peer} n/a (neither)")
                    elif a is None:
                        sub.append(f"{peer} n/a (Pragam not reached)")
                    elif b is None:
                        sub.append(f"{peer} n/a ({peer} not reached)")
                    else:
                        mark = "" if a.get("measured") and b.get("measured", True) else "~"
                        sub.append(f"{peer} {mark}{a['time_s'] / b['time_s']:.3g}")
                parts.append(f"    err {t:g}: " + ", ".join(sub))
            lines.append(f"  {ds:34s} lam={res['lam']:.0e}")
            lines += parts
    lines += agm_lines(results)
    print("\n".join(lines), flush=True)
    return lines


def agm_lines(results: dict) -> list[str]:
    """Table (c): each AGM-EF variant's steps and time to err over Pragam's (< 1: the
    AGM-EF variant is better); its products with X per step beside Pragam's."""
    lines = ["", "(c) each AGM-EF variant against Pragam: steps / Pragam's steps and time / "
                 "Pragam's time to err (< 1: AGM-EF better; ~: a proportional estimate on one "
                 "side), and X/step (AGM-EF's / Pragam's):"]
    for ds, per_lam in results.items():
        for res in per_lam:
            p = res["methods"][PRAGAM]
            lines.append(f"  {ds:34s} lam={res['lam']:.0e}")
            for name in AGM_VARIANTS:
                m = res["methods"].get(name)
                if m is None:
                    continue
                parts = []
                for t in TARGETS:
                    ka, kp = m["steps_to"][str(t)], p["steps_to"][str(t)]
                    ta, tp = m["time_to"][str(t)], p["time_to"][str(t)]
                    if ka is None or kp is None:
                        who = " and ".join(n for n, k in ((name, ka), (PRAGAM, kp)) if k is None)
                        parts.append(f"{t:g}: n/a ({who} not reached)")
                        continue
                    mark = "" if ta.get("measured") and tp.get("measured") else "~"
                    parts.append(f"{t:g}: steps {ka / kp:.3g}, time {mark}"
                                 f"{ta['time_s'] / tp['time_s']:.3g}")
                lines.append(f"    {name:17s} " + "; ".join(parts)
                             + f"; X/step {m['matvecs_per_step']:.2f} / "
                               f"{p['matvecs_per_step']:.2f}")
    return lines


def plot(results: dict, path: Path) -> None:
    plt = pyplot()
    ncols = max(len(v) for v in results.values())
    rows = 2 * len(results)
    fig, axes = plt.subplots(rows, ncols, figsize=(5 * ncols, 3.6 * rows), squeeze=False)
    for r, (ds, per_lam) in enumerate(results.items()):
        for c, res in enumerate(per_lam):
            for j, (axis, xlabel) in enumerate((("steps", "iteration t"),
                                                ("times", "time (s)"))):
                ax = axes[2 * r + j][c]
                for name, m in res["methods"].items():
                    curve = m["curve"]
                    x = np.asarray(curve[axis], float)
                    v = np.maximum(rel_subopt(curve["values"], res["j_star"]), PLOT_FLOOR)
                    ok = np.isfinite(v) & (x > 0)
                    ax.plot(x[ok], v[ok], color=COLORS[name], label=name,
                            marker="o" if name == LIB else None, ms=3)
                    if axis == "times":
                        for key, entry in m["time_to"].items():
                            if entry and entry.get("measured", True):
                                ax.plot(entry["time_s"], float(key), "x", color=COLORS[name],
                                        ms=7)
                for t in TARGETS:
                    ax.axhline(t, color="gray", lw=0.7, ls=":")
                ax.set_xscale("log")
                ax.set_yscale("log")
                ax.set_title(f"{ds}, lam = {res['lam']:.0e}", fontsize=9)
                ax.set_xlabel(xlabel + (" (LIBLINEAR: outer passes)" if j == 0 else ""))
                if c == 0:
                    ax.set_ylabel("err_t = (min J - J*) / J*")
                ax.grid(True, which="major", alpha=0.3)
    axes[0][0].legend(fontsize=8)
    save_figure(plt, fig, "Paper 004 Fig. 1-2 (binary hinge SVM, no bias): relative primal "
                "error vs iterations and vs wall time (nsjax: step k at k/N of the compiled "
                "run's time; x: measured time to target; LIBLINEAR: fresh fits per max_iter)",
                path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sparse set, low caps")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for pragam_fig12.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/pragam_fig12[_quick].png)")
    args = parser.parse_args(argv)
    caps = QUICK if args.quick else FULL
    suffix = "_quick" if args.quick else ""
    png = args.png or HERE / f"pragam_fig12{suffix}.png"
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    load_start = os.getloadavg()
    host = machine()
    results: dict[str, list[dict]] = {}
    for ds, (key, X, y) in datasets(caps).items():
        results[ds] = []
        for lam in LAMS:
            t0 = time.perf_counter()
            results[ds].append(bench_one(key, X, y, lam, caps))
            print(f"[{time.perf_counter() - start:7.1f} s] {ds}, lam={lam:.0e} done in "
                  f"{time.perf_counter() - t0:.1f} s (load {os.getloadavg()[0]:.1f})",
                  flush=True)
    load_end = os.getloadavg()
    print()
    lines = print_table(results)
    lines += print_ratios(results)
    bad = [(ds, r["lam"], n) for ds, per in results.items() for r in per
           for n, m in r["methods"].items()
           if m.get("checks") and (m["checks"]["violations"] or m["checks"]["nonfinite_values"])]
    notes = [
        "k(..): steps to that err (history.best); LIBLINEAR: smallest max_iter found. "
        "t(..): measured compiled reruns stopped at that step (compile excluded); "
        "LIBLINEAR: measured fresh fit. ~t (b): rerun skipped (budget), proportional estimate.",
        f"nsjax runs stop at certified gap <= {STOP_TOL:g} * max(1, |J|) or at max_steps "
        f"(Pragam, ls-BMRM and the AGM-EF variants {caps.long_steps}, qp-BMRM and OCAS-like "
        f"{caps.bmrm_steps}). X/step: products with X or X^T per step (the power iterations "
        f"of Pragam and AGM-EF included). AGM-EF (primal): epsilon = {PRIMAL_EPSILON:g}.",
        f"load average (1, 5, 15 min) at start {tuple(round(v, 2) for v in load_start)}, "
        f"at end {tuple(round(v, 2) for v in load_end)} on {os.cpu_count()} cores.",
        "gap check: " + ("certified gap >= J_best - J* at every step of every nsjax run"
                         if not bad else f"VIOLATIONS in {bad}"),
    ]
    print("\n" + "\n".join(notes))
    payload = {
        "benchmark": "Saha et al. (2009) Fig. 1-2: binary hinge SVM, J(w) = lam/2 ||w||^2 + "
                     "mean(max(0, 1 - y Xw)); err_t = (min_{t'<=t} J(w_t') - J*) / J*",
        "mode": "quick" if args.quick else "full", "caps": dataclasses.asdict(caps),
        "lams": LAMS, "targets": TARGETS, "liblinear_tol": LIBLINEAR_TOL,
        "nsjax_stop_tol": STOP_TOL,
        "nsjax_solvers": {m.name: repr(m.solver) for m in methods(caps, "digits")},
        "machine": host, "loadavg_start": load_start, "loadavg_end": load_end,
        "total_time_s": time.perf_counter() - start,
        "table": lines, "notes": notes, "results": results,
    }
    json_path = args.out / f"pragam_fig12{suffix}.json"
    save_json(json_path, payload, ("prob", "solver", "method", "w"))
    plot(results, png)
    print(f"\nwrote {json_path} and {png} ({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

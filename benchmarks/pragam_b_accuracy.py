"""Saha et al. (2009), Fig. 3-4 at laptop scale: test accuracy against wall time for
Pragam-b (Pragam on the SVM with an unregularized bias) and its peers (issue 11).

Objective of the bias methods (b unregularized, the last weight of ``Problem(..., bias=True)``):

    J(w, b) = lam/2 ||w||^2 + (1/n) sum_i max(0, 1 - y_i (x_i^T w + b)),   y_i in {-1, +1},

on a training split; the score is the accuracy of sign(X_test w + b) on the held-out split.
The paper's claim (Sec. 6, Fig. 3-4): "the test accuracy of Pragam-b is always higher than
or similar to that of the other solvers; Pragam-b achieves the same test accuracy faster than
Pragam". Checked here by the printed table.

Problems: scikit-learn digits, even vs odd (``nsjax.datasets.digits_binary()``, dense 1797 x
64, pixels in [0, 1]) and ``nsjax.datasets.synthetic_sparse(20_000, 10_000, 0.0025,
seed=0)`` (unit rows; labels sign(X w_planted - median), so an offset is planted; 4,000 x
2,000 with ``--quick``), each split 70/30 (``train_test_split(test_size=0.3,
random_state=0, stratify=y)``), for lam in {1e-4, 1e-5} (C = 1 / (lam n_train) for
LIBLINEAR). float64 on the CPU; every nsjax method starts at w = 0, b = 0.

Methods:

* ``Pragam()`` on ``Problem(..., bias=True)``: Pragam-b (Saha et al. 2009, Alg. 1 on Q_2 cut by
  sum y_i alpha_i = 0; b_k by exact line searches).
* ``Pragam()`` without a bias (b = 0): the paper's Pragam.
* ``AGMEF()`` (AGM-EF-inf of Zhang et al. 2010 on the unsmoothed dual, adaptive L) with a bias.
* LIBLINEAR with a bias: ``LinearSVC(loss="hinge", dual=True, fit_intercept=True,
  intercept_scaling=100, C=1/(lam n_train), tol=1e-10, random_state=0)``. LIBLINEAR has no
  unregularized bias: it appends a constant feature s (intercept_scaling) and regularizes
  its weight, i.e. it penalizes lam/2 (b/s)^2; with s = 100 that is lam/2 * 1e-4 b^2, close
  to the unregularized bias of the others (the JSON gives its J under the objective above).
  A large s also makes LIBLINEAR's coordinate steps on the bias small (that coordinate's
  diagonal s^2 dominates), so it is shown beside ``LIBLINEAR (s=1)``, sklearn's default
  intercept_scaling (b penalized as lam/2 b^2).

Timing. nsjax: the accuracy at step k is that of what the loop returns at k, i.e. of
``nsjax.solve(prob, solver, max_steps=k, tol=0.0)`` (tol = 0: no early stop) for k in a
geometric grid (1, 3, 10, 30, ..., 10,000; 30,000 on digits). max_steps is static, so each k
compiles its own program: a first call compiles (its time minus the timed run's is the
compile time, excluded), then the compiled call is timed (best of 3 when under 2 s; lam is
traced, so the second lam reuses the programs). A k whose run is predicted (from the
previous k, proportionally) to take longer than ``run_budget_s`` is skipped. LIBLINEAR: a
fresh fit for max_iter = 1, 2, 4, ... until it converges or a cap, each timed (best of 3
under 2 s; data conversion included; no compile). A grid point's time is the time of that
whole call, so the curves are step functions sampled on the grid, and a "time to accuracy"
is only resolved to the grid (a factor ~3 in k for nsjax, 2 for LIBLINEAR).

Table: per (dataset, lam, method): final test accuracy (last grid point), best along the
curve, the time (and k / max_iter) at which the accuracy first comes within ``ACC_WINDOW`` =
0.5 percentage points of the best final accuracy of any method on that panel, and the time
from which it stays within it. Where cvxpy is present and the training set is small (digits),
Clarabel solves both QPs (with and without bias) to 1e-12, giving the test accuracy of the
exact optima (dashed lines in the plot) and a certified J* for the check below.

Check (a wrong answer stops the report): every nsjax point's certified lower bound J - gap
must not exceed the best J known for its problem (min over every method's J on the same
objective, LIBLINEAR's J under the objective above, Clarabel's), up to 1e-12 relative, and
must be finite.

Output: the table, ``<out>/pragam_b_accuracy.json`` (every grid point: k, time, compile,
train J, certified gap, b, train and test accuracy; load averages before and after each
block, as the machine may be shared) and ``benchmarks/pragam_b_accuracy.png`` (test accuracy
vs time, log time axis, a panel per dataset x lam). ``--quick`` writes ``*_quick.*``.

    python benchmarks/pragam_b_accuracy.py [--quick] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.svm import LinearSVC

import nsjax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, pyplot, save_figure, save_json, timed_fit, timed_solve  # noqa: E402

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore", nsjax.ConvergenceWarning)

LAMS = (1e-4, 1e-5)
TEST_SIZE = 0.3
SPLIT_SEED = 0
ACC_WINDOW = 0.005  # "within 0.5 %": 0.5 percentage points of accuracy
INTERCEPT_SCALING = 100.0
LIBLINEAR_TOL = 1e-10
REPEAT_BELOW = 2.0  # s: timed runs shorter than this are best of 3
QP_MAX_NNZ = 200_000
CHECK_SLACK = 1e-12

PRAGAM_B = "Pragam-b"
PRAGAM = "Pragam (no bias)"
AGM_B = "AGM-EF dual, bias"
LIB = "LIBLINEAR (s=100)"
LIB1 = "LIBLINEAR (s=1)"
COLORS = {PRAGAM_B: "C3", PRAGAM: "C0", AGM_B: "C2", LIB: "C1", LIB1: "C4"}


@dataclasses.dataclass(frozen=True)
class Caps:
    sparse_shape: tuple[int, int]
    grid: dict[str, tuple[int, ...]]  # nsjax max_steps values, per dataset key
    run_budget_s: float  # skip an nsjax grid point predicted to take longer than this
    lib_max_iter: int
    lib_run_cap: float  # stop doubling after a fit longer than this (s)
    lib_total_cap: float  # or once the fits of one method add up to this (s)


_GRID = (1, 3, 10, 30, 100, 300, 1000, 3000, 10_000)
FULL = Caps((20_000, 10_000), {"digits": _GRID + (30_000,), "sparse": _GRID}, 90.0, 2**20,
            20.0, 60.0)
QUICK = Caps((4_000, 2_000), {"digits": _GRID[:7], "sparse": _GRID[:7]}, 10.0, 2**14, 2.0,
             8.0)


@dataclasses.dataclass(frozen=True)
class NsMethod:
    name: str
    solver: Any
    bias: bool


def nsjax_methods() -> list[NsMethod]:
    s = nsjax.solvers
    return [NsMethod(PRAGAM_B, s.Pragam(), True), NsMethod(PRAGAM, s.Pragam(), False),
            NsMethod(AGM_B, s.AGMEF(), True)]


# ----------------------------------------------------------------------------------------
# Data and references
# ----------------------------------------------------------------------------------------


def datasets(caps: Caps) -> dict[str, tuple[str, Any, np.ndarray]]:
    n, d = caps.sparse_shape
    X, y = nsjax.datasets.digits_binary()
    Xs, ys = nsjax.datasets.synthetic_sparse(n, d, 0.0025, seed=0)
    return {"digits even/odd (dense 1797x64)": ("digits", X, y),
            f"synthetic sparse {n}x{d} (0.25%)": ("sparse", Xs, ys)}


def split(X: Any, y: np.ndarray) -> tuple[Any, Any, np.ndarray, np.ndarray]:
    y = np.where(y > 0, 1.0, -1.0)
    return train_test_split(X, y, test_size=TEST_SIZE, random_state=SPLIT_SEED, stratify=y)


def predict(X: Any, coef: np.ndarray, b: float) -> np.ndarray:
    """LinearSVC's rule: +1 where the score is > 0, else -1."""
    return np.where(np.asarray(X @ coef).ravel() + b > 0, 1.0, -1.0)


def accuracy(X: Any, y: np.ndarray, coef: np.ndarray, b: float) -> float:
    return float(np.mean(predict(X, coef, b) == y))


def objective(coef: np.ndarray, b: float, X: Any, y: np.ndarray, lam: float) -> float:
    """J(w, b) in float64 numpy (b unregularized), for coefficients from outside nsjax."""
    margins = 1.0 - y * (np.asarray(X @ coef).ravel() + b)
    return float(0.5 * lam * (coef @ coef) + np.mean(np.maximum(0.0, margins)))


def qp_reference(X: Any, y: np.ndarray, lam: float, bias: bool) -> dict | None:
    """The QP (with or without an unregularized bias) by Clarabel: J, a certified lower
    bound, the coefficients; None where cvxpy is missing or the problem is too big."""
    try:
        import cvxpy as cp
    except ImportError:
        return None
    n, d = X.shape
    if (X.nnz if sp.issparse(X) else n * d) > QP_MAX_NNZ:
        return None
    w, xi = cp.Variable(d), cp.Variable(n)
    b = cp.Variable() if bias else 0.0
    margin = xi >= 1 - cp.multiply(y, X @ w + b)
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(w) + cp.sum(xi) / n),
                      [xi >= 0, margin])
    t0 = time.perf_counter()
    try:
        prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12,
                   tol_ktratio=1e-10, max_iter=500)
    except Exception as exc:  # solver missing or failed: the benchmark goes on without it
        return {"error": repr(exc)}
    elapsed = time.perf_counter() - t0
    if w.value is None or margin.dual_value is None:
        return {"error": f"status {prob.status}"}
    coef = np.asarray(w.value).ravel()
    b_val = float(b.value) if bias else 0.0
    # Dual: max mean(beta) - ||X^T (beta y)||^2 / (2 lam n^2), beta in [0, 1]^n (and
    # sum beta y = 0 with a bias: projected by shifting, then clipped, as a certificate
    # only where the projection is exact enough; else the bound is left out).
    beta = np.clip(np.asarray(margin.dual_value).ravel() * n, 0.0, 1.0)
    v = np.asarray(X.T @ (beta * y)).ravel()
    lower = float(beta.sum() / n - (v @ v) / (2 * lam * n * n))
    feasible = not bias or abs(beta @ y) <= 1e-9 * n
    return {"value": objective(coef, b_val, X, y, lam),
            "lower_bound": lower if feasible else None,
            "dual_balance": float(beta @ y) if bias else None,
            "coef": coef, "b": b_val, "time_s": elapsed, "status": prob.status}


# ----------------------------------------------------------------------------------------
# Curves
# ----------------------------------------------------------------------------------------


def nsjax_curve(m: NsMethod, prob: nsjax.Problem, split_data: tuple, grid: tuple[int, ...],
                caps: Caps) -> dict:
    Xtr, Xte, ytr, yte = split_data
    points: list[dict] = []
    skipped: list[int] = []
    for k in grid:
        if points and points[-1]["time_s"] * k / points[-1]["k"] > caps.run_budget_s:
            skipped.append(k)
            continue
        first, _ = timed_solve(prob, m.solver, k, 0.0)  # compiles (once per k and problem shape)
        walls, sol = [], None
        for _ in range(3):
            wall, sol = timed_solve(prob, m.solver, k, 0.0)
            walls.append(wall)
            if min(walls) >= REPEAT_BELOW:
                break
        coef, b = prob.split_bias(sol.w)
        coef, b = np.asarray(coef, dtype=float), float(b)
        value, gap = float(sol.value), float(sol.gap)
        points.append({
            "k": k, "num_steps": int(sol.num_steps), "time_s": min(walls),
            "compile_s": max(first - min(walls), 0.0), "repeats": len(walls),
            "value": value, "gap": gap, "lower_bound": value - gap, "b": b,
            "result": nsjax.RESULTS(int(sol.result)).name,
            "stats": {key: int(v) for key, v in sol.stats.items()},
            "train_acc": accuracy(Xtr, ytr, coef, b), "test_acc": accuracy(Xte, yte, coef, b),
        })
    return {"points": points, "skipped_k": skipped, "bias": m.bias, "solver": repr(m.solver)}


def liblinear_curve(split_data: tuple, lam: float, scaling: float, caps: Caps) -> dict:
    Xtr, Xte, ytr, yte = split_data
    n = Xtr.shape[0]
    points: list[dict] = []
    k, total = 1, 0.0
    while True:
        clf = LinearSVC(loss="hinge", dual=True, fit_intercept=True, intercept_scaling=scaling,
                        C=1.0 / (lam * n), tol=LIBLINEAR_TOL, max_iter=k, random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            elapsed = timed_fit(clf, Xtr, ytr)
        coef, b = clf.coef_.ravel().astype(float), float(clf.intercept_[0])
        n_iter = int(np.max(clf.n_iter_))
        points.append({
            "k": k, "n_iter": n_iter, "time_s": elapsed, "b": b,
            "value": objective(coef, b, Xtr, ytr, lam),
            "liblinear_bias_penalty": 0.5 * lam * (b / scaling) ** 2,
            "train_acc": accuracy(Xtr, ytr, coef, b), "test_acc": accuracy(Xte, yte, coef, b),
        })
        total += elapsed
        converged = n_iter < k
        if converged or 2 * k > caps.lib_max_iter or elapsed > caps.lib_run_cap or \
                total > caps.lib_total_cap:
            break
        k *= 2
    return {"points": points, "converged": converged, "intercept_scaling": scaling,
            "total_s": total}


def time_within(points: list[dict], threshold: float) -> tuple[dict | None, dict | None]:
    """(the first point with test_acc >= threshold, the first from which all stay so)."""
    accs = np.array([p["test_acc"] for p in points])
    ok = accs >= threshold - 1e-12
    first = next((p for p, o in zip(points, ok, strict=True) if o), None)
    stay = None
    for i in range(len(points) - 1, -1, -1):
        if not ok[i]:
            break
        stay = points[i]
    return first, stay


def bench_one(key: str, split_data: tuple, lam: float, caps: Caps) -> dict:
    load_before = os.getloadavg()
    Xtr, Xte, ytr, yte = split_data
    probs = {bias: nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), Xtr, ytr,
                                 bias=bias) for bias in (True, False)}
    qp = {}
    for bias in (True, False):
        ref = qp_reference(Xtr, ytr, lam, bias)
        if ref and "coef" in ref:
            ref["test_acc"] = accuracy(Xte, yte, ref["coef"], ref["b"])
            ref["train_acc"] = accuracy(Xtr, ytr, ref["coef"], ref["b"])
        qp["bias" if bias else "no bias"] = ref
    curves: dict[str, dict] = {}
    for m in nsjax_methods():
        t0 = time.perf_counter()
        curves[m.name] = nsjax_curve(m, probs[m.bias], split_data, caps.grid[key], caps)
        print(f"    {m.name}: {time.perf_counter() - t0:.1f} s", flush=True)
    for name, scaling in ((LIB, INTERCEPT_SCALING), (LIB1, 1.0)):
        curves[name] = liblinear_curve(split_data, lam, scaling, caps)

    # Best known J of each objective, and the check of every certified lower bound.
    best = {True: [], False: []}
    for c in curves.values():
        best[c.get("bias", True)] += [p["value"] for p in c["points"]
                                      if math.isfinite(p["value"])]
    for bias, label in ((True, "bias"), (False, "no bias")):
        ref = qp[label]
        if ref and "value" in ref:
            best[bias].append(ref["value"])
    j_best = {bias: min(v) for bias, v in best.items()}
    checks = {}
    for name, c in curves.items():
        if "bias" not in c:  # LIBLINEAR: no certificate
            continue
        jb = j_best[c["bias"]]
        bad = [p["k"] for p in c["points"]
               if not (math.isfinite(p["value"]) and math.isfinite(p["lower_bound"]))
               or p["lower_bound"] > jb + CHECK_SLACK * max(1.0, abs(jb))]
        checks[name] = {"points": len(c["points"]), "bad_k": bad, "j_best": jb}
        if bad:
            print(f"!! {name} at lam={lam:.0e}: certified lower bound above the best known J "
                  f"{jb:.15g} (or non-finite) at k = {bad}", flush=True)

    finals = {name: c["points"][-1]["test_acc"] for name, c in curves.items() if c["points"]}
    ref_acc = max(finals.values())
    summary = {}
    for name, c in curves.items():
        first, stay = time_within(c["points"], ref_acc - ACC_WINDOW)
        summary[name] = {
            "final_test_acc": finals.get(name), "best_test_acc": max(
                (p["test_acc"] for p in c["points"]), default=None),
            "final_value": c["points"][-1]["value"] if c["points"] else None,
            "final_k": c["points"][-1]["k"] if c["points"] else None,
            "final_time_s": c["points"][-1]["time_s"] if c["points"] else None,
            "reach": first and {"k": first["k"], "time_s": first["time_s"]},
            "stay": stay and {"k": stay["k"], "time_s": stay["time_s"]},
        }
    return {"lam": lam, "n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]),
            "d": int(Xtr.shape[1]), "C": 1.0 / (lam * Xtr.shape[0]),
            "ref_test_acc": ref_acc, "ref_set_by": max(finals, key=finals.get),
            "j_best": {"bias": j_best[True], "no bias": j_best[False]},
            "qp": {k: (None if v is None else {kk: vv for kk, vv in v.items() if kk != "coef"})
                   for k, v in qp.items()},
            "curves": curves, "summary": summary, "checks": checks,
            "loadavg_before": load_before, "loadavg_after": os.getloadavg()}


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------


def _at(entry: dict | None, unit: str) -> str:
    return "never" if entry is None else f"{entry['time_s']:.3g} s ({unit}{entry['k']})"


def print_table(results: dict) -> list[str]:
    lines = []
    head = (f"{'dataset':34s} {'lam':>6s} {'method':18s} {'final acc':>9s} {'best acc':>9s} "
            f"{'final J':>12s} {'first within 0.5 pt':>22s} {'stays within from':>22s} "
            f"{'last point':>20s}")
    lines += [head, "-" * len(head)]
    for ds, per_lam in results.items():
        for res in per_lam:
            for name, s in res["summary"].items():
                unit = "it " if name.startswith("LIBLINEAR") else "k="
                last = (f"{s['final_time_s']:.3g} s ({unit}{s['final_k']})"
                        if s["final_k"] is not None else "-")
                lines.append(
                    f"{ds:34s} {res['lam']:6.0e} {name:18s} {100 * s['final_test_acc']:8.2f}% "
                    f"{100 * s['best_test_acc']:8.2f}% {s['final_value']:12.8f} "
                    f"{_at(s['reach'], unit):>22s} {_at(s['stay'], unit):>22s} {last:>20s}")
            qp = res["qp"]
            qps = ", ".join(f"{k}: {100 * v['test_acc']:.2f}%" for k, v in qp.items()
                            if v and "test_acc" in v)
            lb, la = res["loadavg_before"], res["loadavg_after"]
            lines.append(
                f"{'':34s} {'':6s} reference {100 * res['ref_test_acc']:.2f}% (best final, "
                f"{res['ref_set_by']}); exact optima (Clarabel) test acc: {qps or 'n/a'}; "
                f"load {lb[0]:.1f} -> {la[0]:.1f}")
    print("\n".join(lines), flush=True)
    return lines


def verdict_lines(results: dict) -> list[str]:
    """The paper's two claims, per panel."""
    lines = ["", "Claim 1: Pragam-b's final test accuracy minus each other method's "
                 "(percentage points; >= -0.5: 'higher or similar'):"]
    for ds, per_lam in results.items():
        for res in per_lam:
            s = res["summary"]
            pb = s[PRAGAM_B]["final_test_acc"]
            parts = [f"{name} {100 * (pb - v['final_test_acc']):+.2f}"
                     for name, v in s.items() if name != PRAGAM_B]
            lines.append(f"  {ds:34s} lam={res['lam']:.0e}: " + ", ".join(parts))
    lines += ["", "Claim 2: time to come (and stay) within 0.5 pt of the reference, Pragam-b / "
                  "Pragam (no bias) (< 1: Pragam-b faster):"]
    for ds, per_lam in results.items():
        for res in per_lam:
            a, b = res["summary"][PRAGAM_B], res["summary"][PRAGAM]
            parts = []
            for key in ("reach", "stay"):
                if a[key] and b[key]:
                    parts.append(f"{key} {a[key]['time_s'] / b[key]['time_s']:.3g}")
                else:
                    who = " and ".join(n for n, e in (("Pragam-b", a[key]), ("Pragam", b[key]))
                                       if e is None)
                    parts.append(f"{key} n/a ({who}: never)")
            lines.append(f"  {ds:34s} lam={res['lam']:.0e}: " + ", ".join(parts))
    print("\n".join(lines), flush=True)
    return lines


def plot(results: dict, path: Path) -> None:
    plt = pyplot()
    rows, ncols = len(results), max(len(v) for v in results.values())
    fig, axes = plt.subplots(rows, ncols, figsize=(5.5 * ncols, 4 * rows), squeeze=False)
    for r, (ds, per_lam) in enumerate(results.items()):
        for c, res in enumerate(per_lam):
            ax = axes[r][c]
            for name, curve in res["curves"].items():
                t = [p["time_s"] for p in curve["points"]]
                a = [100 * p["test_acc"] for p in curve["points"]]
                ax.plot(t, a, color=COLORS[name], marker="o", ms=3, label=name,
                        ls="--" if name == LIB1 else "-")
            for label, ls in (("bias", "--"), ("no bias", ":")):
                ref = res["qp"].get(label)
                if ref and "test_acc" in ref:
                    ax.axhline(100 * ref["test_acc"], color="gray", lw=0.8, ls=ls,
                               label=f"exact optimum, {label}")
            ax.axhspan(100 * (res["ref_test_acc"] - ACC_WINDOW), 100 * res["ref_test_acc"],
                       color="gray", alpha=0.12)
            ax.set_xscale("log")
            ax.set_title(f"{ds}, lam = {res['lam']:.0e}", fontsize=9)
            ax.set_xlabel("time (s)")
            if c == 0:
                ax.set_ylabel("test accuracy (%)")
            accs = [100 * p["test_acc"] for cu in res["curves"].values() for p in cu["points"]]
            lo = max(min(accs), 100 * res["ref_test_acc"] - 10)
            ax.set_ylim(lo - 0.5, 100 * res["ref_test_acc"] + 1.0)
            ax.grid(True, which="major", alpha=0.3)
            ax.legend(fontsize=7, loc="lower right")
    save_figure(plt, fig, "Paper 004 Fig. 3-4 at laptop scale: test accuracy vs wall time\n"
                "nsjax: solve(max_steps=k) for a grid of k, compiled; LIBLINEAR: fresh fits, "
                "max_iter doubled;\nband: within 0.5 pt of the best final accuracy", path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sparse set, short grid")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for pragam_b_accuracy.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/pragam_b_accuracy[_quick].png)")
    args = parser.parse_args(argv)
    caps = QUICK if args.quick else FULL
    suffix = "_quick" if args.quick else ""
    png = args.png or HERE / f"pragam_b_accuracy{suffix}.png"
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    load_start = os.getloadavg()
    host = machine()
    results: dict[str, list[dict]] = {}
    for ds, (key, X, y) in datasets(caps).items():
        split_data = split(X, y)
        results[ds] = []
        for lam in LAMS:
            t0 = time.perf_counter()
            print(f"{ds}, lam={lam:.0e}:", flush=True)
            results[ds].append(bench_one(key, split_data, lam, caps))
            print(f"[{time.perf_counter() - start:7.1f} s] {ds}, lam={lam:.0e} done in "
                  f"{time.perf_counter() - t0:.1f} s (load {os.getloadavg()[0]:.1f})",
                  flush=True)
    load_end = os.getloadavg()
    print()
    lines = print_table(results)
    lines += verdict_lines(results)
    bad = [(ds, r["lam"], n) for ds, per in results.items() for r in per
           for n, c in r["checks"].items() if c["bad_k"]]
    notes = [
        f"final/best acc: test accuracy at the last grid point / best along the curve; within "
        f"0.5 pt: test acc >= reference - {ACC_WINDOW:g} (reference: best final accuracy of "
        "any method on the panel), at the first grid point / from then on; time: that "
        "compiled call (nsjax: solve(max_steps=k, tol=0), compile excluded) or fresh fit "
        "(LIBLINEAR, max_iter it), best of 3 under 2 s; resolved only to the grid.",
        f"LIBLINEAR: LinearSVC(loss='hinge', dual=True, fit_intercept=True, intercept_scaling="
        f"s, tol={LIBLINEAR_TOL:g}): b penalized as lam/2 (b/s)^2; s = {INTERCEPT_SCALING:g} "
        "(close to an unregularized bias) and s = 1 (sklearn's default). final J: the "
        "objective with an unregularized bias for the bias methods and LIBLINEAR, without "
        "a bias for Pragam (no bias).",
        f"split: {1 - TEST_SIZE:.0%}/{TEST_SIZE:.0%} stratified, random_state={SPLIT_SEED}; "
        f"nsjax grid {caps.grid}; a grid point predicted over {caps.run_budget_s:g} s is "
        "skipped.",
        f"load average (1, 5, 15 min) at start {tuple(round(v, 2) for v in load_start)}, "
        f"at end {tuple(round(v, 2) for v in load_end)} on {os.cpu_count()} cores.",
        "check: " + ("every nsjax point's certified lower bound J - gap <= the best known J of "
                     "its objective, all finite" if not bad else f"VIOLATIONS in {bad}"),
    ]
    print("\n" + "\n".join(notes))
    payload = {
        "benchmark": "Saha et al. (2009) Fig. 3-4: test accuracy vs time, Pragam-b and peers, "
                     "binary hinge SVM with an unregularized bias",
        "mode": "quick" if args.quick else "full", "caps": dataclasses.asdict(caps),
        "lams": LAMS, "acc_window": ACC_WINDOW, "test_size": TEST_SIZE,
        "split_seed": SPLIT_SEED, "intercept_scaling": INTERCEPT_SCALING,
        "liblinear_tol": LIBLINEAR_TOL,
        "nsjax_solvers": {m.name: {"solver": repr(m.solver), "bias": m.bias}
                          for m in nsjax_methods()},
        "machine": host, "loadavg_start": load_start, "loadavg_end": load_end,
        "total_time_s": time.perf_counter() - start,
        "table": lines, "notes": notes, "results": results,
    }
    json_path = args.out / f"pragam_b_accuracy{suffix}.json"
    save_json(json_path, payload)
    plot(results, png)
    print(f"\nwrote {json_path} and {png} ({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

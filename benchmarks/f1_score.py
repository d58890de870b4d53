"""Held-out F1 of F1-trained vs hinge-trained linear models on imbalanced binary problems
(issue 12, item 1).

Objectives (L2-regularized, n training examples, labels y in {-1, +1}):

* F1-trained: J(w) = lam/2 ||w||^2 + R_F1(Xw), R_F1(S) = max_{y'} [1 - F1(y', y)
  + (1/n) sum_i S_i (y'_i - y_i)] (``nsjax.losses.F1Loss``: Joachims' multivariate SVM,
  Zhang et al. 2010, eq. 43, with Delta = 1 - F1).
* hinge-trained: J(w) = lam/2 ||w||^2 + (1/n) sum_i max(0, 1 - y_i x_i^T w)
  (``nsjax.losses.Hinge``).

``F1Loss`` refuses ``bias=True`` (it has no dual points on the bias hyperplane), so both
models get a constant column of ones appended to X (its weight is the offset, regularized
like the others) and predict sign(X_test w). As a reference, the hinge is also trained with
a true unregularized bias (``Problem(..., bias=True)`` on X without the constant column,
prediction sign(X_test w + b)).

Data:

* digits "is it a 9": scikit-learn ``load_digits``, pixels / 16, y = +1 for the digit 9
  (180 of 1797, 10.0 %), else -1; 65 columns with the constant.
* Scene-like multilabel set: ``nsjax.datasets.synthetic_multilabel(1211, 294, 6, seed=0)``
  (the stand-in for Scene used by ``multiclass_hinge.py``: standard normal features, 1 to 3
  labels per example from a planted linear model), one binary problem per label ("label k
  vs the rest", 27-29 % positives: less imbalanced than digits-9); 295 columns. The
  features are divided by sqrt(294) so that rows have norm ~1 (as given, ||x||^2 ~ 294
  makes every lam of the grid tiny: each run then fits the train part perfectly, train
  F1 = 1, and the bundle methods need thousands of steps; the scaling is the grid
  lam * 294 on the raw features). ``--quick`` uses labels 0 and 1 only.

Protocol. Each problem is split 70/30 into train/test (``train_test_split(test_size=0.3,
random_state=0, stratify=y)``) and the train part again 70/30 into fit/validation (same
call). For lam in {1e-2, 1e-3, 1e-4} each model is trained on the whole train part (what
the test columns report: every lam is shown) and on the fit part (validation F1 only). The
"selected" lam of a model is the one with the best validation F1 (ties: the larger lam);
its test F1 is that of the model trained on the whole train part at that lam. The test set
is never used to choose anything.

Solvers (float64, w0 = 0): F1Loss by ``BMRM()`` (exact argmax cuts) to tol 1e-4; the hinge
by the default solver (``Hybrid()``) to tol 1e-6, with and without the bias; max_steps
5,000 each (the table says if a run stopped short). nsjax stops on the certified gap
<= tol * max(1, |J|); for F1Loss J <= J(0) = 1, so the gap is absolute. Time: compile
first (the call with tol = 1e30 stops at step 0 and compiles the very same program, as in
``_common.compile_time``), then the compiled call, best of 3 when under 0.5 s; compile
excluded. Comparison: F1Loss also by ``AGMEF(scheme="primal", epsilon=1e-3)`` (the entropy
smoothing of the 2^n labelings by dynamic programming, O(n^2) a step) on digits-9 at
lam = 1e-3 to tol 1e-2 (max_steps 1,000), beside BMRM to the same tol (AGM-EF to 1e-3
takes ~2 min here); not with ``--quick``.

Metrics: F1, precision and recall of the positive class (``sklearn.metrics``;
zero_division=0) on the test split, F1 on the training split too; steps, certified gap,
result, time.

Output: a printed table, ``<out>/f1_score.json`` (``machine()``, every run) and
``benchmarks/f1_score.png`` (test F1 against lam per problem, a line per model, the
validation-selected lam circled; last panel: test F1 at the selected lam). ``--quick``
writes ``f1_score_quick.*``.

    python benchmarks/f1_score.py [--quick] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import numpy as np
from sklearn.datasets import load_digits
from sklearn.metrics import f1_score, precision_score, recall_score
from sklearn.model_selection import train_test_split

import nsjax
from nsjax.loop import default_solver

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, pyplot, save_figure, save_json, timed_solve  # noqa: E402

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore", nsjax.ConvergenceWarning)

LAMS = (1e-2, 1e-3, 1e-4)
TEST_SIZE = 0.3
SPLIT_SEED = 0
MAX_STEPS = 5000
REPEAT_BELOW = 0.5  # s: timed runs shorter than this are best of 3
AGM_LAM, AGM_EPS, AGM_TOL, AGM_MAX_STEPS = 1e-3, 1e-3, 1e-2, 1000

F1_BMRM = "F1Loss, BMRM"
HINGE = "Hinge, Hybrid"
HINGE_B = "Hinge+bias, Hybrid"
F1_AGM = "F1Loss, AGMEF primal"
COLORS = {F1_BMRM: "C3", HINGE: "C0", HINGE_B: "C2"}


def models() -> dict[str, dict]:
    """name -> loss, solver, tol, whether the bias is the Problem's (else a ones column)."""
    return {
        F1_BMRM: {"loss": nsjax.losses.F1Loss(), "solver": nsjax.solvers.BMRM(), "tol": 1e-4,
                  "bias": False},
        HINGE: {"loss": nsjax.losses.Hinge(), "solver": None, "tol": 1e-6, "bias": False},
        HINGE_B: {"loss": nsjax.losses.Hinge(), "solver": None, "tol": 1e-6, "bias": True},
    }


def datasets(quick: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """name -> (X without the constant column, y in {-1, +1})."""
    X, digit = load_digits(return_X_y=True)
    out = {"digits-9": (X / 16.0, np.where(digit == 9, 1.0, -1.0))}
    Xs, labels = nsjax.datasets.synthetic_multilabel(1211, 294, 6, seed=0)
    Xs = np.asarray(Xs, dtype=float) / np.sqrt(Xs.shape[1])  # rows of norm ~1
    for k in (0, 1) if quick else range(6):
        y = np.array([1.0 if k in lab else -1.0 for lab in labels])
        out[f"Scene-like label {k}"] = (Xs, y)
    return out


def split(X: np.ndarray, y: np.ndarray):
    return train_test_split(X, y, test_size=TEST_SIZE, random_state=SPLIT_SEED, stratify=y)


def with_ones(X: np.ndarray) -> np.ndarray:
    return np.hstack([X, np.ones((X.shape[0], 1))])


def train(spec: dict, lam: float, X: np.ndarray, y: np.ndarray, solver: Any = None,
          tol: float | None = None, max_steps: int = MAX_STEPS, time_it: bool = True) -> dict:
    """Solve one problem; with ``time_it``: compile first, then the timed compiled call(s)."""
    solver = spec["solver"] if solver is None else solver
    tol = spec["tol"] if tol is None else tol
    Xp = X if spec["bias"] else with_ones(X)
    prob = nsjax.Problem(spec["loss"], nsjax.regularizers.L2(lam), Xp, y, bias=spec["bias"])
    compile_s = None
    if time_it:
        first, _ = timed_solve(prob, solver, max_steps, 1e30)
        again, _ = timed_solve(prob, solver, max_steps, 1e30)
        compile_s = max(first - again, 0.0)
    wall, sol = timed_solve(prob, solver, max_steps, tol)
    reps = 1
    while time_it and wall < REPEAT_BELOW and reps < 3:
        wall = min(wall, timed_solve(prob, solver, max_steps, tol)[0])
        reps += 1
    w = np.asarray(sol.w)
    coef, b = (w[:-1], w[-1]) if spec["bias"] else (w, 0.0)
    return {"coef": coef, "b": float(b), "steps": int(sol.num_steps),
            "value": float(sol.value), "gap": float(sol.gap),
            "result": nsjax.RESULTS(int(sol.result)).name, "time_s": wall if time_it else None,
            "compile_s": compile_s, "repeats": reps if time_it else 0,
            "solver": type(solver).__name__ if solver is not None
            else type(default_solver(prob)).__name__}


def predict(fit: dict, spec: dict, X: np.ndarray) -> np.ndarray:
    Xp = X if spec["bias"] else with_ones(X)
    return np.where(Xp @ fit["coef"] + fit["b"] > 0, 1.0, -1.0)


def scores(y: np.ndarray, pred: np.ndarray) -> dict:
    return {"f1": float(f1_score(y, pred, pos_label=1.0, zero_division=0)),
            "precision": float(precision_score(y, pred, pos_label=1.0, zero_division=0)),
            "recall": float(recall_score(y, pred, pos_label=1.0, zero_division=0))}


def bench_problem(name: str, X: np.ndarray, y: np.ndarray) -> dict:
    Xtr, Xte, ytr, yte = split(X, y)
    Xfit, Xval, yfit, yval = split(Xtr, ytr)
    runs: dict[str, list[dict]] = {}
    for mname, spec in models().items():
        runs[mname] = []
        for lam in LAMS:
            fit = train(spec, lam, Xtr, ytr)
            sub = train(spec, lam, Xfit, yfit, time_it=False)
            entry = {k: v for k, v in fit.items() if k != "coef"}
            entry.update(lam=lam, test=scores(yte, predict(fit, spec, Xte)),
                         train_f1=scores(ytr, predict(fit, spec, Xtr))["f1"],
                         val_f1=scores(yval, predict(sub, spec, Xval))["f1"],
                         val_fit={"steps": sub["steps"], "gap": sub["gap"],
                                  "result": sub["result"]})
            runs[mname].append(entry)
            t = entry["test"]
            print(f"  {name:20s} {mname:18s} lam={lam:.0e} steps={entry['steps']:5d} "
                  f"gap={entry['gap']:.1e} {entry['time_s']:.3g} s  test F1={t['f1']:.3f} "
                  f"(val {entry['val_f1']:.3f})", flush=True)
    selected = {}
    for mname, entries in runs.items():
        best = max(range(len(entries)), key=lambda i: (entries[i]["val_f1"], entries[i]["lam"]))
        selected[mname] = {"lam": entries[best]["lam"], "val_f1": entries[best]["val_f1"],
                           "test": entries[best]["test"]}
    return {"n_train": int(Xtr.shape[0]), "n_test": int(Xte.shape[0]),
            "n_fit": int(Xfit.shape[0]), "n_val": int(Xval.shape[0]), "d": int(X.shape[1]),
            "pos_train": int(np.sum(ytr > 0)), "pos_test": int(np.sum(yte > 0)),
            "runs": runs, "selected": selected}


def agm_comparison(X: np.ndarray, y: np.ndarray) -> dict:
    """F1Loss on digits-9 at AGM_LAM: AGMEF(primal) and BMRM, both to AGM_TOL."""
    Xtr, Xte, ytr, yte = split(X, y)
    spec = models()[F1_BMRM]
    out = {"lam": AGM_LAM, "tol": AGM_TOL, "epsilon": AGM_EPS}
    for mname, solver in ((F1_AGM, nsjax.solvers.AGMEF(scheme="primal", epsilon=AGM_EPS)),
                          (F1_BMRM, nsjax.solvers.BMRM())):
        fit = train(spec, AGM_LAM, Xtr, ytr, solver=solver, tol=AGM_TOL,
                    max_steps=AGM_MAX_STEPS)
        entry = {k: v for k, v in fit.items() if k != "coef"}
        entry["test"] = scores(yte, predict(fit, spec, Xte))
        out[mname] = entry
        print(f"  digits-9 {mname:22s} lam={AGM_LAM:.0e} tol={AGM_TOL:g}: "
              f"steps={entry['steps']} gap={entry['gap']:.2e} J={entry['value']:.6f} "
              f"{entry['time_s']:.3g} s (compile {entry['compile_s']:.2g} s) "
              f"test F1={entry['test']['f1']:.3f}", flush=True)
    return out


def table(results: dict) -> list[str]:
    head = (f"{'problem':20s} {'lam':>6s} {'loss':10s} {'solver':8s} {'steps':>5s} "
            f"{'gap':>8s} {'time':>8s} {'test F1':>7s} {'prec':>6s} {'recall':>6s} "
            f"{'val F1':>6s} {'trn F1':>6s}")
    lines = [head, "-" * len(head)]
    for pname, res in results.items():
        for mname, entries in res["runs"].items():
            loss = mname.split(",")[0]
            for e in entries:
                t = e["test"]
                mark = "" if e["result"] == "successful" else " !" + e["result"]
                sel = " *" if res["selected"][mname]["lam"] == e["lam"] else ""
                lines.append(
                    f"{pname:20s} {e['lam']:6.0e} {loss:10s} {e['solver']:8s} "
                    f"{e['steps']:5d} {e['gap']:8.1e} {e['time_s']:7.3g}s {t['f1']:7.3f} "
                    f"{t['precision']:6.3f} {t['recall']:6.3f} {e['val_f1']:6.3f} "
                    f"{e['train_f1']:6.3f}{sel}{mark}")
        lines.append("")
    lines.append("* : the lam chosen by validation F1 (fit/validation split of the train part)")
    lines.append("")
    lines.append(f"{'problem':20s} " + " ".join(f"{m:>24s}" for m in models()))
    for pname, res in results.items():
        cells = [f"{s['test']['f1']:.3f} (lam {s['lam']:.0e})".rjust(24)
                 for s in res["selected"].values()]
        lines.append(f"{pname:20s} " + " ".join(cells))
    print("\n".join(lines), flush=True)
    return lines


def plot(results: dict, path: Path) -> None:
    plt = pyplot()
    n = len(results) + 1
    ncols = min(4, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 3.4 * nrows), squeeze=False)
    flat = axes.ravel()
    for ax, (pname, res) in zip(flat, results.items(), strict=False):
        for mname, entries in res["runs"].items():
            lams = [e["lam"] for e in entries]
            f1s = [e["test"]["f1"] for e in entries]
            ax.plot(lams, f1s, "o--" if mname == HINGE_B else "o-", color=COLORS[mname],
                    label=mname, ms=4)
            sel = res["selected"][mname]
            ax.plot(sel["lam"], sel["test"]["f1"], "o", ms=11, mfc="none",
                    color=COLORS[mname])
        ax.set_xscale("log")
        ax.set_title(f"{pname} ({res['pos_test']}/{res['n_test']} positive in test)",
                     fontsize=9)
        ax.set_xlabel("lam")
        ax.set_ylabel("test F1")
        ax.grid(True, alpha=0.3)
    flat[0].legend(fontsize=7)
    ax = flat[len(results)]
    names = list(results)
    width = 0.8 / len(models())
    for j, mname in enumerate(models()):
        vals = [results[p]["selected"][mname]["test"]["f1"] for p in names]
        ax.bar(np.arange(len(names)) + (j - 1) * width, vals, width, color=COLORS[mname],
               label=mname)
    ax.set_xticks(np.arange(len(names)))
    ax.set_xticklabels([p.replace("Scene-like label ", "Scene ") for p in names],
                       rotation=30, fontsize=7)
    lo = min(results[p]["selected"][m]["test"]["f1"] for p in names for m in models())
    ax.set_ylim(max(0.0, lo - 0.1), 1.0)
    ax.set_title("test F1 at the validation-selected lam", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    for ax in flat[len(results) + 1:]:
        ax.axis("off")
    save_figure(plt, fig, "Held-out F1: F1Loss (BMRM, tol 1e-4) vs hinge (Hybrid, tol 1e-6); "
                "ones column for the offset, or a true bias (green); circles: lam chosen "
                "on validation", path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="Scene-like labels 0 and 1 only, no AGM-EF comparison")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for f1_score.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/f1_score[_quick].png, or the "
                             "--out folder when --out is given)")
    args = parser.parse_args(argv)
    suffix = "_quick" if args.quick else ""
    default_out = args.out == HERE / "results"
    png = args.png or (HERE if default_out else args.out) / f"f1_score{suffix}.png"
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    load_start = os.getloadavg()
    host = machine()
    data = datasets(args.quick)
    results = {}
    for pname, (X, y) in data.items():
        t0 = time.perf_counter()
        print(f"{pname}: n={X.shape[0]}, d={X.shape[1]}, {np.mean(y > 0):.1%} positive",
              flush=True)
        results[pname] = bench_problem(pname, X, y)
        print(f"[{time.perf_counter() - start:6.1f} s] {pname} done in "
              f"{time.perf_counter() - t0:.1f} s (load {os.getloadavg()[0]:.1f})", flush=True)
    agm = None
    if not args.quick:
        print("AGM-EF vs BMRM on F1Loss:", flush=True)
        agm = agm_comparison(*data["digits-9"])
    load_end = os.getloadavg()
    print()
    lines = table(results)
    notes = [
        f"time: compiled solve (compile excluded), best of 3 under {REPEAT_BELOW:g} s; gap: "
        "certified gap J - lower bound of the returned w; test F1/precision/recall of the "
        "positive class on the 30 % test split; val F1: the same model trained on the fit "
        "part (70 % of train), scored on the validation part; trn F1: on the train part.",
        "F1Loss refuses bias=True: F1Loss and 'Hinge' use a constant column of ones "
        "(regularized offset); 'Hinge+bias' uses Problem(bias=True) (unregularized offset).",
        f"load average (1, 5, 15 min) at start {tuple(round(v, 2) for v in load_start)}, "
        f"at end {tuple(round(v, 2) for v in load_end)} on {os.cpu_count()} cores.",
    ]
    if agm:
        a, b = agm[F1_AGM], agm[F1_BMRM]
        notes.append(
            f"F1Loss on digits-9, lam={AGM_LAM:g}, to tol {AGM_TOL:g}: AGMEF(primal, "
            f"epsilon={AGM_EPS:g}) {a['steps']} steps, {a['time_s']:.3g} s, gap "
            f"{a['gap']:.2e}, test F1 {a['test']['f1']:.3f}; BMRM {b['steps']} steps, "
            f"{b['time_s']:.3g} s, gap {b['gap']:.2e}, test F1 {b['test']['f1']:.3f}.")
    print("\n" + "\n".join(notes))
    payload = {
        "benchmark": "issue 12 item 1: held-out F1 of F1Loss-trained vs hinge-trained linear "
                     "models on imbalanced binary problems",
        "mode": "quick" if args.quick else "full", "lams": LAMS, "test_size": TEST_SIZE,
        "split_seed": SPLIT_SEED, "max_steps": MAX_STEPS,
        "models": {m: {"loss": type(s["loss"]).__name__, "solver": repr(s["solver"]),
                       "tol": s["tol"], "bias": s["bias"]} for m, s in models().items()},
        "machine": host, "loadavg_start": load_start, "loadavg_end": load_end,
        "total_time_s": time.perf_counter() - start, "table": lines, "notes": notes,
        "results": results, "agm_comparison": agm,
    }
    json_path = args.out / f"f1_score{suffix}.json"
    save_json(json_path, payload)
    plot(results, png)
    print(f"\nwrote {json_path} and {png} ({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

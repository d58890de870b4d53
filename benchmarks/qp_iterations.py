"""BMRM's inner QP: how many accelerated projected-gradient iterations before the polish.

`nsjax.solvers.simplex_qp.solve_simplex_qp` runs ``qp_iterations`` FISTA iterations to guess
the support of the bundle QP's solution, then an exact active-set polish from that guess:
the iterates of BMRM do not depend on the guess (the polish ends at the QP's KKT point), its
time does. This script runs qp-BMRM and the OCAS-like BMRM (``line_search="exact"``) with a
few ``qp_iterations`` on small problems, where the QP is a large part of a step, and reports
the steps to relative suboptimality 1e-3 and the time to them (the compiled run rerun to that
step, best of ``REPEATS``, the settings interleaved). J* is the lowest of an OCAS-like run at
tol 1e-9 (certified) and every run here.

    python benchmarks/qp_iterations.py [--out DIR]

Output: a table, ``<out>/qp_iterations.json`` and ``qp_iterations.png``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
import nsjax  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, save_figure, save_json, timed_solve  # noqa: E402

ITERATIONS = (50, 10, 3)
REPEATS = 3
MAX_STEPS = 1000
TARGET = 1e-3


def problems():
    """(name, Problem): digits and Letter-like Crammer–Singer, a sparse binary hinge."""
    mc, L2 = nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2
    X, y = nsjax.datasets.digits()
    for lam in (1e-3, 1e-5):
        yield f"digits CS, λ={lam:g}", nsjax.Problem(mc, L2(lam), X, y)
    X, y = nsjax.datasets.synthetic_sparse(16_000, 16, 1.0, n_classes=26, seed=0)
    yield "Letter-like CS, λ=1e-3", nsjax.Problem(mc, L2(1e-3), X.toarray(), y)
    X, y = nsjax.datasets.synthetic_sparse(20_000, 10_000, 1e-3, seed=0)
    yield "sparse hinge 20k x 10k, λ=1e-4", nsjax.Problem(nsjax.losses.Hinge(), L2(1e-4), X, y)


def bench(prob) -> list[dict]:
    ref = nsjax.solve(prob, nsjax.solvers.BMRM(line_search="exact"), tol=1e-9, max_steps=3000)
    runs = {}
    for search in ("exact", "none"):
        for it in ITERATIONS:
            solver = nsjax.solvers.BMRM(line_search=search, qp_iterations=it)
            runs[search, it] = (solver, np.asarray(
                nsjax.solve(prob, solver, tol=1e-9, max_steps=MAX_STEPS).history.value))
    j_star = min(float(ref.value) - float(ref.gap), *(v.min() for _, v in runs.values()))
    rows = []
    for (search, it), (solver, values) in runs.items():
        hit = values - j_star <= TARGET * abs(j_star)
        k = int(np.argmax(hit)) + 1 if hit.any() else MAX_STEPS
        timed_solve(prob, solver, k, 0.0)  # compiled and warm
        rows.append({"method": "OCAS-like" if search == "exact" else "qp-BMRM",
                     "qp_iterations": it, "steps": k, "reached": bool(hit.any()),
                     "values": values[:k], "times": [], "solver": solver})
    for _ in range(REPEATS):  # interleaved: the settings see the same machine
        for row in rows:
            row["times"].append(timed_solve(prob, row["solver"], row["steps"], 0.0)[0])
    for row in rows:  # the iterates' values against the same method's at 50 iterations
        base = next(r for r in rows if r["method"] == row["method"] and r["qp_iterations"] == 50)
        n = min(len(row["values"]), len(base["values"]))
        row["max_value_diff_vs_50"] = float(np.max(np.abs(row["values"][:n] - base["values"][:n])))
    for row in rows:
        row["time"] = min(row.pop("times"))
        del row["values"], row["solver"]
    return rows


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(3.2 * len(results), 3.2))
    for ax, (name, rows) in zip(np.atleast_1d(axes), results.items(), strict=True):
        labels = [f"{r['method'].split('-')[0]}\n{r['qp_iterations']}" for r in rows]
        ax.bar(range(len(rows)), [r["time"] for r in rows],
               color=["C4" if r["method"] == "OCAS-like" else "C3" for r in rows])
        ax.set_xticks(range(len(rows)), labels, fontsize=6)
        ax.set_title(name, fontsize=8)
        ax.set_ylabel(f"s to {TARGET:g} (same steps)", fontsize=7)
    save_figure(plt, fig, "BMRM: time to 1e-3 against qp_iterations (FISTA before the polish)",
                path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    results = {}
    print(f"{'problem':34s} {'method':10s} {'qp_it':>5s} {'steps':>6s} {'time':>8s} "
          f"{'ms/step':>8s} {'|ΔJ| vs 50':>10s}")
    for name, prob in problems():
        results[name] = bench(prob)
        for r in results[name]:
            print(f"{name:34s} {r['method']:10s} {r['qp_iterations']:5d} {r['steps']:6d} "
                  f"{r['time']:8.3f} {1e3 * r['time'] / r['steps']:8.2f} "
                  f"{r['max_value_diff_vs_50']:10.1e}", flush=True)
        save_json(args.out / "qp_iterations.json", {"machine": machine(), "results": results})
    plot(results, HERE / "qp_iterations.png")


if __name__ == "__main__":
    main()

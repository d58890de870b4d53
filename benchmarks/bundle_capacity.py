"""Full bundles on digits: partial aggregation and the QP's gathered KKT solve (issue 14,
item 2).

The OCAS-like BMRM (``BMRM(line_search="exact")``) and the Hybrid (default solver) on
digits' Crammer–Singer at λ = 1e-5, time to relative suboptimality 1e-3 at capacity 128
(the default), 256 and 512, three ways in the same process:

* "before": a full bundle whose cuts are all active merged into one cut
  (``BMRM(merge=1)``), and the polish's KKT system gathered into
  128, 256, 512 … slots (doubling; `nsjax.solvers.simplex_qp._next_compact`);
* "merge 1/8": the 1/8 of the cuts with the smallest α merged (now), doubling gathers;
* "now": merge 1/8, gathers growing by 5/4 (128, 160, 200, 256, …).

J* is a certified capacity-512 run. Each time is the best of 3 compiled runs of the first
step budget that reaches the target.

    python benchmarks/bundle_capacity.py

Output: a table, ``benchmarks/results/bundle_capacity.json`` and
``benchmarks/bundle_capacity.png``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
import nsjax  # noqa: E402
import nsjax.solvers.simplex_qp as simplex_qp  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, save_figure, save_json, timed_solve  # noqa: E402

LAM, TARGET, BUDGET = 1e-5, 1e-3, 4000
CAPACITIES = (128, 256, 512)
NEXT = simplex_qp._next_compact
WAYS = {"before": (1.0, lambda c: 2 * c), "merge 1/8": (1 / 8, lambda c: 2 * c),
        "now": (1 / 8, NEXT)}


def ocas(capacity, merge):
    return nsjax.solvers.BMRM(line_search="exact", capacity=capacity, merge=merge)


SOLVERS = {"OCAS-like": ocas,
           "Hybrid": lambda capacity, merge: nsjax.solvers.Hybrid(bmrm=ocas(capacity, merge))}


def time_to_target(prob, solver, j_star) -> tuple[float | None, int | None]:
    sol = nsjax.solve(prob, solver, max_steps=BUDGET, tol=0.0)
    best = np.asarray(sol.history.best[:int(sol.num_steps)])
    hit = np.flatnonzero(best <= j_star * (1 + TARGET))
    if not hit.size:
        return None, None
    k = int(hit[0]) + 1
    return min(timed_solve(prob, solver, k, 0.0)[0] for _ in range(3)), k


def main() -> None:
    X, y = nsjax.datasets.digits()
    prob = nsjax.Problem(nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2(LAM), X, y)
    ref = nsjax.solve(prob, nsjax.solvers.BMRM(line_search="exact", capacity=512),
                      max_steps=5000, tol=1e-9)
    j_star = float(ref.value) - float(ref.gap)
    print(f"J* = {j_star:.10f} (certified gap {float(ref.gap):.1e})")
    rows = []
    print(f"{'solver':>9s} {'capacity':>8s} {'way':>10s} {'steps':>6s} {'time s':>7s} "
          f"{'ms/step':>8s}")
    for name, make in SOLVERS.items():
        for capacity in CAPACITIES:
            for way, (merge, grow) in WAYS.items():
                simplex_qp._next_compact = grow
                jax.clear_caches()
                t, k = time_to_target(prob, make(capacity, merge), j_star)
                rows.append({"solver": name, "capacity": capacity, "way": way, "steps": k,
                             "time_s": t})
                per = "" if t is None else f"{1e3 * t / k:8.2f}"
                shown = "n/a" if t is None else f"{t:.3f}"
                print(f"{name:>9s} {capacity:8d} {way:>10s} {k!s:>6s} {shown:>7s} {per}",
                      flush=True)
    simplex_qp._next_compact = NEXT
    save_json(HERE / "results" / "bundle_capacity.json",
              {"lam": LAM, "target": TARGET, "j_star": j_star, "rows": rows,
               "machine": machine()})
    plot(rows, HERE / "bundle_capacity.png")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(SOLVERS), figsize=(9, 3.4), sharey=True)
    x = np.arange(len(CAPACITIES))
    width = 0.8 / len(WAYS)
    for ax, name in zip(axes, SOLVERS, strict=True):
        for j, way in enumerate(WAYS):
            times = [next(r["time_s"] or np.nan for r in rows if r["solver"] == name
                          and r["capacity"] == c and r["way"] == way) for c in CAPACITIES]
            ax.bar(x + width * (j - (len(WAYS) - 1) / 2), times, width, color=f"C{j + 1}",
                   label=way)
        ax.set_xticks(x, [str(c) for c in CAPACITIES])
        ax.set_xlabel("bundle capacity")
        ax.set_title(name, fontsize=9)
    axes[0].set_ylabel(f"s to {TARGET:g} (digits, λ = {LAM:g})")
    axes[0].legend(fontsize=8)
    save_figure(plt, fig, "Crammer–Singer on digits: full bundles", path)


if __name__ == "__main__":
    main()

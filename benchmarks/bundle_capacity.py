"""Larger bundles on digits: the QP's gathered KKT solve (issue 14, item 2).

The OCAS-like BMRM (``BMRM(line_search="exact")``) on digits' Crammer–Singer at λ = 1e-5,
time to relative suboptimality 1e-3 at capacity 128 (the default), 256 and 512. Each
capacity twice, in the same process: as nsjax solves its bundle QP now (the polish's KKT
system over the free slots gathered into 128, 256, … slots,
`nsjax.solvers.simplex_qp.COMPACT_SLOTS`) and with the system solved over all slots
(``COMPACT_SLOTS`` set above the capacity: nsjax before). J* is a certified capacity-512
run. Each time is the best of 3 compiled runs of the first step budget that reaches the
target.

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
GATHERED = simplex_qp.COMPACT_SLOTS


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
    print(f"{'capacity':>8s} {'KKT solve':>10s} {'steps':>6s} {'time s':>7s} {'ms/step':>8s}")
    for capacity in CAPACITIES:
        for way, slots in (("all slots", 10**9), ("gathered", GATHERED)):
            simplex_qp.COMPACT_SLOTS = slots
            jax.clear_caches()
            solver = nsjax.solvers.BMRM(line_search="exact", capacity=capacity)
            t, k = time_to_target(prob, solver, j_star)
            rows.append({"capacity": capacity, "kkt": way, "steps": k, "time_s": t})
            per = "" if t is None else f"{1e3 * t / k:8.2f}"
            print(f"{capacity:8d} {way:>10s} {k!s:>6s} {t if t is None else round(t, 3)!s:>7s} "
                  f"{per}", flush=True)
    simplex_qp.COMPACT_SLOTS = GATHERED
    save_json(HERE / "results" / "bundle_capacity.json",
              {"lam": LAM, "target": TARGET, "j_star": j_star, "rows": rows,
               "machine": machine()})
    plot(rows, HERE / "bundle_capacity.png")


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.4))
    x = np.arange(len(CAPACITIES))
    for j, (way, color) in enumerate((("all slots", "C1"), ("gathered", "C2"))):
        times = [next(r["time_s"] or np.nan for r in rows
                      if r["capacity"] == c and r["kkt"] == way) for c in CAPACITIES]
        ax.bar(x + 0.4 * j - 0.2, times, 0.4, color=color, label=f"KKT over {way}")
    ax.set_xticks(x, [str(c) for c in CAPACITIES])
    ax.set_xlabel("bundle capacity")
    ax.set_ylabel(f"s to {TARGET:g} (digits, λ = {LAM:g})")
    ax.legend(fontsize=8)
    save_figure(plt, fig, "OCAS-like BMRM, Crammer–Singer on digits", path)


if __name__ == "__main__":
    main()

"""What `nsjax.solve(..., progress=k)` costs: the run time of the same solve without
progress (the default: no callback compiled in), and with a host callback every k steps.

For each problem and k, the best of ``--repeats`` runs after compilation, to a fixed number
of steps (tol = 0), printed as a table with the overhead against the quiet run; JSON in
``benchmarks/results/progress.json`` and a bar plot ``benchmarks/progress.png``.

    PYTHONPATH=. python benchmarks/progress.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
sys.path.insert(0, str(Path(__file__).resolve().parent))
import _common  # noqa: E402

import nsjax  # noqa: E402

HERE = Path(__file__).resolve().parent


def problems(quick):
    """(name, problem, solver, steps): a fast-stepping and a slower-stepping solve."""
    n = 5_000 if quick else 50_000
    X, y = nsjax.datasets.synthetic_sparse(n, 2_000, 0.005, seed=0)
    sparse = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-5), X, y)
    Xd, yd = nsjax.datasets.digits()
    digits = nsjax.Problem(nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2(1e-4), Xd, yd)
    return [(f"hinge {n}x2000 sparse, SubLBFGS", sparse, nsjax.solvers.SubLBFGS(), 300),
            ("digits Crammer-Singer, BMRM", digits, nsjax.solvers.BMRM(), 300)]


def best_time(prob, solver, steps, progress, repeats):
    nsjax.loop._Progress.delay = float("inf")  # the callback runs; nothing is printed
    run = lambda: nsjax.solve(prob, solver, max_steps=steps, tol=0.0,  # noqa: E731
                              progress=progress).w.block_until_ready()
    run()  # compile
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        jax.effects_barrier()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    settings = [("quiet", False), ("every 100", 100), ("every 10", 10), ("every step", 1)]
    rows = []
    for name, prob, solver, steps in problems(args.quick):
        quiet = None
        for label, progress in settings:
            t = best_time(prob, solver, steps, progress, args.repeats)
            quiet = t if quiet is None else quiet
            rows.append({"problem": name, "progress": label, "steps": steps, "seconds": t,
                         "ms_per_step": 1e3 * t / steps, "overhead": t / quiet - 1})
    head = f"{'problem':<36}{'progress':<12}{'s':>9}{'ms/step':>9}{'overhead':>10}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['problem']:<36}{r['progress']:<12}{r['seconds']:>9.3f}"
              f"{r['ms_per_step']:>9.3f}{100 * r['overhead']:>9.1f}%")
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    suffix = "_quick" if args.quick else ""
    (out / f"progress{suffix}.json").write_text(json.dumps(
        {"machine": _common.machine(), "rows": rows}, indent=1))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.5))
    names = list(dict.fromkeys(r["problem"] for r in rows))
    width = 0.8 / len(settings)
    for i, (label, _) in enumerate(settings):
        values = [100 * r["overhead"] for r in rows if r["progress"] == label]
        ax.bar([j + i * width for j in range(len(names))], values, width, label=label)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(names))], names, fontsize=7)
    ax.set_ylabel("run time over the quiet run (%)")
    ax.axhline(0, color="k", lw=0.5)
    ax.legend(fontsize=7)
    ax.set_title("nsjax.solve(..., progress=k): cost of the host callback", fontsize=9)
    fig.tight_layout()
    fig.savefig(HERE / f"progress{suffix}.png", dpi=110)
    print(f"plot: {HERE / f'progress{suffix}.png'}")


if __name__ == "__main__":
    main()

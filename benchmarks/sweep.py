"""Regularization paths: ``nsjax.sweep`` against the Python loop of ``nsjax.solve`` it
replaces (issue 14, item 3).

Data: ``nsjax.datasets.synthetic_sparse(10_000, 2_000, 0.005, seed=0)`` (2,000 x 500 with
``--quick``), labels in {-1, +1}, float64 (``jax_enable_x64``), on the CPU. Problems and
solvers, each over 8 strengths, max_steps M = 2000 and tol = 1e-3 for every solve:

* ``Problem(Hinge(), L2(lam), X, y)``, lam in ``np.logspace(-2, -5, 8)``, solved by
  ``BMRM()``, ``SubLBFGS()`` and the default solver (``solver=None``: the ``Hybrid``);
* ``Problem(Logistic(), L1(mu), X, y)`` by ``OBA()``, mu = mu_max * ``np.logspace(-0.5,
  -2.5, 8)``, where mu_max = ||X^T grad loss(0)||_inf = ||X^T y||_inf / (2 n) is the
  smallest mu whose solution is w = 0.

Four ways of computing the path, per solver:

  (a) loop cold: ``[solve(prob.with_strength(l), solver, max_steps=M, tol=1e-3) for l in
      strengths]``, each from w = 0 (what a user writes);
  (b) loop warm: the same loop from the largest strength down, each solve from the previous
      solution (``w0=previous.w``; the first from w = 0);
  (c) ``sweep(prob, strengths, solver, max_steps=M, tol=1e-3)`` (``warm_start=True``: a
      ``lax.scan`` down the path, each solve warm-started, one compiled program);
  (d) ``sweep(..., warm_start=False)``: the solve loop vmapped over the strengths.

Timing (``time.perf_counter``, synced with ``jax.block_until_ready`` on every solution):
``jax.clear_caches()``, then the first call (compile included; a loop compiles once, the
strength being traced), then the best of 3 further calls (compiled). Also recorded: the
total steps (sum of ``num_steps`` over the strengths), how many strengths ended
``RESULTS.successful``, and each strength's J, compared with (a)'s. Ratios are to (a) in
the same run. Runs that stop early are recorded, not warned about (ConvergenceWarning off).

Output: a table, ``benchmarks/results/sweep.json`` (all numbers, machine) and
``benchmarks/sweep.png`` (grouped bars: compiled time per solver for (a)-(d));
``--quick`` writes ``sweep_quick.json`` / ``sweep_quick.png``.

    python benchmarks/sweep.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

import nsjax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, pyplot, save_figure, save_json  # noqa: E402  (the script's folder is on sys.path)

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore", nsjax.ConvergenceWarning)

FULL_SHAPE, QUICK_SHAPE, DENSITY, SEED = (10_000, 2_000), (2_000, 500), 0.005, 0
MAX_STEPS, TOL, REPEATS = 2000, 1e-3, 3
LAMS = np.logspace(-2, -5, 8)
MU_FRACTIONS = np.logspace(-0.5, -2.5, 8)
VARIANTS = {"a": "loop cold", "b": "loop warm", "c": "sweep (warm)", "d": "sweep vmapped"}
OK = int(nsjax.RESULTS.successful)


def run_variant(key: str, prob: nsjax.Problem, lams: np.ndarray, solver) -> dict:
    """One call of variant ``key`` over ``lams``: per strength (in the order of ``lams``)
    the steps, the result and J."""
    kw = {"max_steps": MAX_STEPS, "tol": TOL}
    if key in "ab":
        sols, w = {}, None
        for i in np.argsort(-lams, kind="stable") if key == "b" else range(len(lams)):
            sol = nsjax.solve(prob.with_strength(lams[i]), solver, w0=w, **kw)
            jax.block_until_ready(sol)
            sols[i] = sol
            w = sol.w if key == "b" else None
        sols = [sols[i] for i in range(len(lams))]
        steps = [int(s.num_steps) for s in sols]
        results = [int(s.result) for s in sols]
        values = [float(s.value) for s in sols]
    else:
        sol = nsjax.sweep(prob, lams, solver, warm_start=key == "c", **kw)
        jax.block_until_ready(sol)
        steps = np.asarray(sol.num_steps).tolist()
        results = np.asarray(sol.result).tolist()
        values = np.asarray(sol.value).tolist()
    return {"steps": steps, "results": results, "values": values}


def measure(key: str, prob: nsjax.Problem, lams: np.ndarray, solver) -> dict:
    jax.clear_caches()  # every variant's first call compiles its program(s)
    t0 = time.perf_counter()
    out = run_variant(key, prob, lams, solver)
    first = time.perf_counter() - t0
    walls = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        again = run_variant(key, prob, lams, solver)
        walls.append(time.perf_counter() - t0)
    return {"first_s": first, "best_s": min(walls), "walls_s": walls,
            "total_steps": sum(out["steps"]),
            "succeeded": sum(r == OK for r in out["results"]),
            "repeat_steps_equal": again["steps"] == out["steps"], **out}


def table(results: dict) -> list[str]:
    head = (f"{'solver':9s} {'variant':17s} {'first s':>8s} {'best s':>8s} {'ratio':>7s} "
            f"{'steps':>7s} {'ok':>4s} {'max |dJ|/J vs (a)':>18s}")
    lines = [head, "-" * len(head)]
    for name, per in results.items():
        base = per["a"]
        for key, r in per.items():
            dj = max(abs(v - b) / max(1.0, abs(b)) for v, b in zip(r["values"], base["values"],
                                                                  strict=True))
            lines.append(f"{name:9s} ({key}) {VARIANTS[key]:13s} {r['first_s']:8.2f} "
                         f"{r['best_s']:8.3f} {r['best_s'] / base['best_s']:7.3f} "
                         f"{r['total_steps']:7d} {r['succeeded']:2d}/{len(r['steps'])} "
                         f"{dj:18.1e}")
    return lines


def plot(results: dict, title: str, path: Path) -> None:
    plt = pyplot()
    names = list(results)
    fig, ax = plt.subplots(figsize=(2.2 + 2.2 * len(names), 4.2))
    width = 0.2
    for j, (key, label) in enumerate(VARIANTS.items()):
        xs = np.arange(len(names)) + (j - 1.5) * width
        ys = [results[n][key]["best_s"] for n in names]
        bars = ax.bar(xs, ys, width, color=f"C{j}", label=f"({key}) {label}")
        for bar, n in zip(bars, names, strict=True):
            ratio = results[n][key]["best_s"] / results[n]["a"]["best_s"]
            ax.annotate(f"{ratio:.3g}x", (bar.get_x() + width / 2, bar.get_height()),
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(names)), names)
    ax.set_yscale("log")
    ax.set_ylabel(f"s for the 8-strength path (compiled, best of {REPEATS})")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(plt, fig, title, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_SHAPE[0]:,} x {QUICK_SHAPE[1]:,} instead of "
                        f"{FULL_SHAPE[0]:,} x {FULL_SHAPE[1]:,}")
    args = parser.parse_args(argv)
    n, d = QUICK_SHAPE if args.quick else FULL_SHAPE
    tag = "_quick" if args.quick else ""
    json_path, png = HERE / "results" / f"sweep{tag}.json", HERE / f"sweep{tag}.png"

    start = time.perf_counter()
    host = machine()
    X, y = nsjax.datasets.synthetic_sparse(n, d, DENSITY, seed=SEED)
    y = np.where(np.asarray(y) > 0, 1.0, -1.0)
    mu_max = float(np.abs(X.T @ y).max() / (2 * n))  # ||X^T grad loss(0)||_inf, logistic
    hinge = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAMS[0]), X, y)
    logistic = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L1(mu_max), X, y)
    mus = mu_max * MU_FRACTIONS
    cases = {"BMRM": (hinge, LAMS, nsjax.solvers.BMRM()),
             "SubLBFGS": (hinge, LAMS, nsjax.solvers.SubLBFGS()),
             "Hybrid": (hinge, LAMS, None),  # the default solver
             "OBA": (logistic, mus, nsjax.solvers.OBA())}
    print(f"synthetic sparse {n:,} x {d:,} ({DENSITY:.2%}), float64, 8 strengths, "
          f"max_steps={MAX_STEPS}, tol={TOL:g}; hinge+L2 lam={LAMS[0]:.0e}..{LAMS[-1]:.0e}, "
          f"logistic+L1 mu_max={mu_max:.4g}, mu={mus[0]:.3g}..{mus[-1]:.3g}", flush=True)
    results: dict[str, dict] = {}
    for name, (prob, lams, solver) in cases.items():
        results[name] = {}
        for key in VARIANTS:
            r = measure(key, prob, lams, solver)
            results[name][key] = r
            print(f"  {name} ({key}) {VARIANTS[key]}: first {r['first_s']:.2f} s, best "
                  f"{r['best_s']:.3f} s, {r['total_steps']} steps", flush=True)
    print()
    lines = table(results)
    notes = [
        f"first s: the first call after jax.clear_caches() (compile included); best s: the "
        f"best of {REPEATS} further calls; ratio: best s over (a)'s; steps: the sum of "
        "num_steps over the 8 strengths; ok: strengths with RESULTS.successful; max |dJ|/J: "
        "the largest |J - J_(a)| / max(1, |J_(a)|) over the strengths.",
        *(f"WARNING: {name} ({key}): num_steps differed between calls."
          for name, per in results.items() for key, r in per.items()
          if not r["repeat_steps_equal"]),
    ]
    print("\n".join(lines + [""] + notes), flush=True)
    payload = {
        "benchmark": "nsjax sweep vs a loop of solve along a regularization path",
        "mode": "quick" if args.quick else "full",
        "data": {"n": n, "d": d, "density": DENSITY, "seed": SEED, "dtype": "float64"},
        "problems": {"hinge": {"loss": "Hinge", "regularizer": "L2", "lams": LAMS.tolist(),
                               "solvers": ["BMRM()", "SubLBFGS()", "None (Hybrid)"]},
                     "logistic": {"loss": "Logistic", "regularizer": "L1", "mu_max": mu_max,
                                  "mus": mus.tolist(), "solvers": ["OBA()"]}},
        "max_steps": MAX_STEPS, "tol": TOL, "repeats": REPEATS, "variants": VARIANTS,
        "machine": host, "total_time_s": time.perf_counter() - start, "table": lines,
        "notes": notes, "results": results,
    }
    save_json(json_path, payload)
    plot(results, f"nsjax regularization path, 8 strengths: synthetic sparse {n:,} x {d:,}, "
         f"M={MAX_STEPS}, tol={TOL:g} ({host['cpu_model']})", png)
    print(f"\nwrote {json_path} and {png} ({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

"""Exact projections (``nsjax.projections``) against jaxopt's, on random instances.

Problems (float64, n = 1e3, 1e5, 1e6; ``--quick``: 1e3, 1e4), one seeded instance each:

1. ``box_section``: min ||x - m||^2 s.t. l <= x <= u, a^T x = b (unit weights: jaxopt's
   problem) with m ~ N(0, 1), a ~ U(0.5, 1.5), l ~ -U(0.5, 1.5), u ~ U(0.5, 1.5) and
   b = min a^T x + 0.3 (max a^T x - min a^T x) over the box. nsjax
   ``project_box_section(m, a, b, l, u)`` vs ``jaxopt.projection.projection_box_section(m,
   (l, u, a, b))`` (its hyperparams are (alpha, beta, w, c): lower, upper, the equality's
   coefficients, its right-hand side; a bisection on the multiplier, 30 steps at most).
2. ``simplex``: the probability simplex, v ~ N(0, 1). nsjax ``project_simplex(v)`` (sort,
   cumsum) and ``project_capped_simplex(v, 1.0)`` (cap >= 1: the same set, by Newton passes)
   vs ``jaxopt.projection.projection_simplex(v)`` (sort, cumsum).
3. ``capped_simplex``: {x in [0, cap]^n, sum x = 1} with cap = 10 / n (LPBoost's domain for
   nu = 0.1), v ~ N(0, 1). nsjax ``project_capped_simplex(v, cap)`` vs jaxopt's
   ``projection_box_section(v, (0, cap, 1, 1))`` (alpha = 0, beta = cap, w = 1, c = 1).

On the first two problems ``project_box_section(..., newton_steps=0)`` is timed too: the
papers' sort-all-kinks method alone, to show what the Newton search saves (the sort of the
2n kinks is its cost on a CPU).

Timing: every function is jitted and called once first (compile and transfers excluded);
then each method is timed ``--repeats`` times (``time.perf_counter`` around the call and
``block_until_ready``), methods interleaved repeat by repeat so that drift of the shared
machine hits them alike; the best time is reported, with the ratio to the jaxopt method of
the problem. Also reported: max |x - x_jaxopt|, each method's equality residual
|a^T x - b| (jaxopt's bisection stops at tol 1e-5 on it or after 30 steps; nsjax's is
rounding), and for the Newton-pass methods the passes made (cheap g-and-slope passes, checks
of the kinks around the pivot, whether the kinks were sorted).

Output: a table, ``benchmarks/results/projections.json`` (every time, the instance
parameters, the machine and its load average) and ``benchmarks/projections.png`` (time vs
n, log-log, one panel per problem); ``--quick`` writes ``projections_quick.json`` / ``.png``.

    python benchmarks/projections.py [--quick] [--repeats 7]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import os
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jaxopt.projection import projection_box_section, projection_simplex

from nsjax.projections import (
    project_box_section,
    project_capped_simplex,
    project_simplex,
)
from nsjax.testing import box_section

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, pyplot, save_figure, save_json  # noqa: E402  (folder on sys.path)

jax.config.update("jax_enable_x64", True)

FULL_SIZES = (1_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000)
SEED = 0
B_FRACTION = 0.3  # b = least + 0.3 (largest - least)
CAP_TIMES_N = 10.0  # capped simplex: cap = 10 / n


# ---------------------------------------------------------------------------------------
# Instances and methods
# ---------------------------------------------------------------------------------------


def box_instance(n: int) -> dict:
    rng = np.random.default_rng(SEED)
    m = rng.normal(size=n)
    a = rng.uniform(0.5, 1.5, n)
    lower, upper = -rng.uniform(0.5, 1.5, n), rng.uniform(0.5, 1.5, n)
    least, largest = a @ lower, a @ upper  # a > 0
    b = least + B_FRACTION * (largest - least)
    return {"m": m, "a": a, "b": b, "lower": lower, "upper": upper}


def simplex_instance(n: int) -> dict:
    return {"v": np.random.default_rng(SEED).normal(size=n)}


def capped_instance(n: int) -> dict:
    return {"v": np.random.default_rng(SEED).normal(size=n), "cap": CAP_TIMES_N / n}


def _box_x(m, a, b, lower, upper, newton_steps=32):
    return project_box_section(m, a, b, lower, upper, newton_steps=newton_steps).x


def _box_passes(m, a, b, lower, upper):
    return box_section(m, a, b, lower, upper)[1]


def _capped_passes(v, cap):
    return box_section(v, 1, 1, 0, cap)[1]


# name -> (jitted x(args), jitted passes(args) or None); the last method is the baseline.
PROBLEMS: dict[str, dict[str, Any]] = {
    "box_section": {
        "instance": box_instance,
        "equality": lambda d, x: abs(d["a"] @ x - d["b"]),
        "methods": {
            "nsjax project_box_section": (jax.jit(_box_x), jax.jit(_box_passes)),
            "nsjax sort only (newton_steps=0)": (
                jax.jit(lambda m, a, b, lower, upper: _box_x(m, a, b, lower, upper, 0)), None),
            "jaxopt projection_box_section": (
                jax.jit(lambda m, a, b, lower, upper: projection_box_section(
                    m, (lower, upper, a, b))), None),
        },
    },
    "simplex": {
        "instance": simplex_instance,
        "equality": lambda d, x: abs(np.sum(x) - 1.0),
        "methods": {
            "nsjax project_simplex": (jax.jit(project_simplex), None),
            "nsjax project_capped_simplex(v, 1)": (
                jax.jit(lambda v: project_capped_simplex(v, 1.0).x),
                jax.jit(lambda v: _capped_passes(v, 1.0))),
            "nsjax sort only (newton_steps=0)": (
                jax.jit(lambda v: project_capped_simplex(v, 1.0, newton_steps=0).x), None),
            "jaxopt projection_simplex": (jax.jit(projection_simplex), None),
        },
    },
    "capped_simplex": {
        "instance": capped_instance,
        "equality": lambda d, x: abs(np.sum(x) - 1.0),
        "methods": {
            "nsjax project_capped_simplex": (
                jax.jit(lambda v, cap: project_capped_simplex(v, cap).x),
                jax.jit(_capped_passes)),
            "jaxopt projection_box_section": (
                jax.jit(lambda v, cap: projection_box_section(
                    v, (jnp.zeros_like(v), jnp.full_like(v, cap), jnp.ones_like(v), 1.0))),
                None),
        },
    },
}


# ---------------------------------------------------------------------------------------
# Timing
# ---------------------------------------------------------------------------------------


def timed(fn, args) -> float:
    t0 = time.perf_counter()
    jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0


def run_problem(name: str, n: int, repeats: int) -> dict:
    spec = PROBLEMS[name]
    data = spec["instance"](n)
    args = [jnp.asarray(v) for v in data.values()]
    methods = spec["methods"]
    xs, compile_s = {}, {}
    for label, (fn, _) in methods.items():  # compile (and warm up) one after the other
        t0 = time.perf_counter()
        xs[label] = np.asarray(jax.block_until_ready(fn(*args)))
        compile_s[label] = time.perf_counter() - t0
    walls: dict[str, list[float]] = {label: [] for label in methods}
    for _ in range(repeats):
        for label, (fn, _) in methods.items():
            walls[label].append(timed(fn, args))
    baseline = list(methods)[-1]
    out = {"n": n, "instance": {k: float(v) for k, v in data.items() if np.ndim(v) == 0},
           "baseline": baseline, "methods": {}}
    for label, (_, passes_fn) in methods.items():
        best = min(walls[label])
        entry = {
            "best_s": best, "walls_s": walls[label],
            "first_call_s": compile_s[label],
            "ratio_to_baseline": best / min(walls[baseline]),
            "max_abs_diff_to_baseline": float(np.max(np.abs(xs[label] - xs[baseline]))),
            "equality_residual": float(spec["equality"](data, xs[label])),
        }
        if passes_fn is not None:
            passes = passes_fn(*args)
            entry["passes"] = {"cheap": int(passes.cheap), "checks": int(passes.checks),
                               "sorted": bool(passes.sorted)}
        out["methods"][label] = entry
    return out


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------


def table(results: dict) -> list[str]:
    head = (f"{'problem':15s} {'n':>9s}  {'method':36s} {'time':>11s} {'ratio':>7s} "
            f"{'max|x-x_jaxopt|':>16s} {'|a^T x - b|':>12s}  passes")
    lines = [head, "-" * len(head)]
    for name, runs in results.items():
        for run in runs:
            for label, e in run["methods"].items():
                p = e.get("passes")
                passes = (f"{p['cheap']} + {p['checks']} check" + (", sorted" if p["sorted"]
                                                                    else "")) if p else ""
                lines.append(f"{name:15s} {run['n']:9d}  {label:36s} {e['best_s'] * 1e3:8.3f} ms "
                             f"{e['ratio_to_baseline']:7.2f} {e['max_abs_diff_to_baseline']:16.1e} "
                             f"{e['equality_residual']:12.1e}  {passes}")
    return lines


def plot(results: dict, path: Path, quick: bool) -> None:
    plt = pyplot()
    fig, axes = plt.subplots(1, len(results), figsize=(5 * len(results), 4), squeeze=False)
    for ax, (name, runs) in zip(axes[0], results.items(), strict=True):
        for label in runs[0]["methods"]:
            ns = [run["n"] for run in runs]
            ts = [run["methods"][label]["best_s"] for run in runs]
            style = "--" if label.startswith("jaxopt") else "-"
            ax.plot(ns, ts, style, marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("n")
        ax.set_ylabel("best wall time (s)")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7)
    title = ("Exact projections: nsjax vs jaxopt, float64, jitted, best of the repeats"
             + (" (--quick)" if quick else ""))
    save_figure(plt, fig, title, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small n only (a smoke run)")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per method")
    args = parser.parse_args(argv)
    sizes = QUICK_SIZES if args.quick else FULL_SIZES
    suffix = "_quick" if args.quick else ""
    host = machine({"jaxopt": importlib.metadata.version("jaxopt")})
    load_before = os.getloadavg()
    results = {name: [run_problem(name, n, args.repeats) for n in sizes] for name in PROBLEMS}
    lines = table(results)
    print("\n".join(lines))
    payload = {
        "description": __doc__, "sizes": list(sizes), "repeats": args.repeats, "seed": SEED,
        "machine": host, "load_average_before": load_before,
        "load_average_after": os.getloadavg(), "results": results, "table": lines,
    }
    json_path = HERE / "results" / f"projections{suffix}.json"
    save_json(json_path, payload)
    png = HERE / f"projections{suffix}.png"
    plot(results, png, args.quick)
    print(f"wrote {json_path} and {png}")


if __name__ == "__main__":
    main()

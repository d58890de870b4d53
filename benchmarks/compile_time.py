"""Compile time of every solver (issue 14, item 3: under 5 s per new shape; issue 51, item 4:
the default Hybrid's under 1.5 s).

For each solver class, ``nsjax.solve``'s program (``nsjax.loop.lower_solve``, max_steps = 500)
is traced and lowered (``.lower``: JAX's share) and compiled (``.compile(options)``: XLA's
share, with the options nsjax uses for the problem, `nsjax.programs.compile_options`: at
this size on a CPU, the older emitters and LLVM at -O0) for a new shape, and compiled
again with XLA's default options, on a
400 x 30 dense float64 problem (``jax_enable_x64``), without and with a bias: the L2
hinge for the hinge solvers, the L1 logistic for OBA, OWL-QN and OWL-QN*, and the
Crammer-Singer hinge (K = 5) for the default Hybrid. Also the size of the lowered
program (StableHLO lines, while loops, sorts): XLA's compile time grows with it. The
compilation cache is cleared before each (``jax.clear_caches``), and no persistent cache is
used. One measurement each (compile times vary by ~10 % between runs).

Output: a table, ``benchmarks/results/compile_time.json`` and ``benchmarks/compile_time.png``
(stacked bars: trace + lower, XLA compile; a line at the 5 s target).

    python benchmarks/compile_time.py
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import jax
import numpy as np

import nsjax
from nsjax.loop import lower_solve
from nsjax.programs import compile_options

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, pyplot, save_figure, save_json  # noqa: E402  (the script's folder is on sys.path)

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore", nsjax.ConvergenceWarning)

N, D, K, MAX_STEPS, TARGET_S = 400, 30, 5, 500, 5.0
S = nsjax.solvers
HINGE = ("Hybrid", "SubLBFGS", "SubBFGS", "BMRM", "LineSearchBMRM", "AGMEF", "AGMEF1",
         "Pragam")
L1 = ("OBA", "OWLQN", "OWLQNStar")


def problems() -> dict:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, D))
    y = np.sign(X @ rng.normal(size=D) + rng.normal(size=N))
    labels = np.argmax(X @ rng.normal(size=(D, K)), axis=1)
    L, R = nsjax.losses, nsjax.regularizers
    return {
        "hinge": lambda b: nsjax.Problem(L.Hinge(), R.L2(1e-2), X, y, bias=b),
        "logistic-l1": lambda b: nsjax.Problem(L.Logistic(), R.L1(1e-2), X, y, bias=b),
        "crammer-singer": lambda b: nsjax.Problem(L.MulticlassHinge(), R.L2(1e-2), X,
                                                  labels),
    }


def measure(prob, solver) -> dict:
    """nsjax's program (``lower_solve``'s, compiled with `compile_options`), then the same with
    XLA's defaults."""
    jax.clear_caches()
    t0 = time.perf_counter()
    lowered = lower_solve(prob, solver, max_steps=MAX_STEPS)
    t1 = time.perf_counter()
    options = compile_options(prob)
    lowered.compile(options)
    t2 = time.perf_counter()
    text = lowered.as_text()
    jax.clear_caches()
    default = lower_solve(prob, solver, max_steps=MAX_STEPS)
    t3 = time.perf_counter()
    default.compile()
    t4 = time.perf_counter()
    return {"lower_s": t1 - t0, "compile_s": t2 - t1, "total_s": t2 - t0,
            "compile_default_s": t4 - t3, "options": options,
            "hlo_lines": text.count("\n"), "while_loops": text.count("stablehlo.while"),
            "sorts": text.count("stablehlo.sort")}


def cases():
    for name in HINGE:
        for bias in (False, True):
            yield name, "hinge", bias
    for name in L1:
        for bias in (False, True):
            yield name, "logistic-l1", bias
    yield "Hybrid", "crammer-singer", False


def plot(rows: list[dict], path: Path, title: str) -> None:
    plt = pyplot()
    labels = [f"{r['solver']}\n{r['problem']}{' +b' if r['bias'] else ''}" for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(rows)), 4.5))
    lower = [r["lower_s"] for r in rows]
    ax.bar(x, lower, color="C0", label="trace + lower (JAX)")
    ax.bar(x, [r["compile_s"] for r in rows], bottom=lower, color="C1",
           label="compile (XLA)")
    ax.scatter(x, [r["lower_s"] + r["compile_default_s"] for r in rows], color="k",
               marker="_", s=200, label="with XLA's default emitters")
    ax.axhline(TARGET_S, color="k", ls="--", lw=1, label=f"target {TARGET_S:g} s")
    ax.set_xticks(x, labels, rotation=90, fontsize=7)
    ax.set_ylabel("s for a new shape")
    ax.legend(fontsize=8)
    save_figure(plt, fig, title, path)


def main() -> None:
    start = time.perf_counter()
    make = problems()
    rows = []
    print(f"{'solver':16s} {'problem':15s} {'bias':>4s} {'lower s':>8s} {'compile s':>9s} "
          f"{'total s':>8s} {'XLA default':>11s} {'lines':>6s} {'while':>5s} {'sort':>4s}")
    for name, kind, bias in cases():
        r = {"solver": name, "problem": kind, "bias": bias,
             **measure(make[kind](bias), getattr(S, name)())}
        rows.append(r)
        print(f"{name:16s} {kind:15s} {int(bias):4d} {r['lower_s']:8.2f} {r['compile_s']:9.2f} "
              f"{r['total_s']:8.2f} {r['compile_default_s']:11.2f} {r['hlo_lines']:6d} "
              f"{r['while_loops']:5d} {r['sorts']:4d}",
              flush=True)
    saved = sum(r["compile_s"] for r in rows) / sum(r["compile_default_s"] for r in rows)
    print(f"XLA compile, nsjax's programs / XLA's defaults: {saved:.2f} in all")
    over = [r for r in rows if r["total_s"] > TARGET_S]
    print(f"\n{len(over)} of {len(rows)} over {TARGET_S:g} s: "
          + ", ".join(f"{r['solver']} {r['problem']}{' +bias' if r['bias'] else ''} "
                      f"{r['total_s']:.1f} s" for r in over))
    host = machine()
    out = HERE / "results" / "compile_time.json"
    save_json(out, {"benchmark": "compile_time", "shape": [N, D], "max_steps": MAX_STEPS,
                    "target_s": TARGET_S, "rows": rows, "machine": host,
                    "total_time_s": time.perf_counter() - start})
    png = HERE / "compile_time.png"
    plot(rows, png, f"nsjax compile time per new shape, {N} x {D} float64, "
         f"{host['cpu_model']}, {host['os.cpu_count']} cores, JAX {host['jax']}")
    print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()

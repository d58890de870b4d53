"""What sharing one compiled solve saves a user (issue 14, item 3: compile time).

nsjax compiles one program per problem kind, shape and dtype, seconds each on a CPU. Three
things let nearby calls share one: the scikit-learn estimators pad X to one of a few
shapes (`nsjax.sklearn`, ``_LinearModel._pad``), sparse layouts round their number of chunks
(`nsjax.data`, CHUNK_ROUND_LIMIT) and `max_steps` is traced (`nsjax.loop.history_length`).
Each scenario below runs twice in this process, with the sharing and without it (no
padding and no rounding, or, for max_steps, the compiled programs dropped before each call: what
a static max_steps cost), from an empty compilation cache (`jax.clear_caches`, no
persistent cache), and counts the solve programs compiled. scikit-learn's own estimator
runs the same scenario in the same process as the peer.

- ``cv-dense``: ``cross_val_score(LinearSVC(C=0.1), X, y, cv=5)`` on breast cancer
  (569 x 30, dense): folds of 455-456 rows.
- ``cv-sparse``: the same on a seeded sparse set (`nsjax.datasets.synthetic_sparse`,
  2000 x 3000, 1 % dense, power-law columns); also with the padding but layouts as
  counted (the chunk rounding's share).
- ``max-steps``: ``nsjax.solve`` of one problem (breast cancer, hinge, λ = 1e-3, BMRM) with
  max_steps = 50, 100, 200, 400, 800 (an interactive user raising the budget).

Output: a table, ``benchmarks/results/compile_sharing.json`` and
``benchmarks/compile_sharing.png`` (wall seconds per scenario, programs compiled on top).

    python benchmarks/compile_sharing.py
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import jax
from sklearn.model_selection import cross_val_score
from sklearn.svm import LinearSVC as SkLinearSVC

import nsjax
import nsjax.data
import nsjax.sklearn
from nsjax.programs import compiled_programs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, save_figure, save_json  # noqa: E402  (the script's folder is on sys.path)

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore")  # convergence warnings of both libraries' short runs

C, FOLDS, STEPS = 0.1, 5, (50, 100, 200, 400, 800)


def datasets() -> dict:
    X, y = nsjax.datasets.breast_cancer()
    Xs, ys = nsjax.datasets.synthetic_sparse(2000, 3000, 0.01, seed=0)
    return {"cv-dense": (X, y), "cv-sparse": (Xs, ys)}


def cross_validate(X, y, pad: bool, round_chunks: bool) -> dict:
    """5-fold cross-validation of nsjax's LinearSVC, with or without the padding and the
    chunk rounding."""
    model, padding, chunks = nsjax.sklearn._LinearModel, nsjax.sklearn._LinearModel._pad, \
        nsjax.data.CHUNK_ROUND_LIMIT
    if not pad:  # X as given
        model._pad = lambda self, X, solver, weights, dtype: (X, weights, 0)
    if not round_chunks:  # the layouts as counted
        nsjax.data.CHUNK_ROUND_LIMIT = 0
    try:
        jax.clear_caches()
        before, t0 = compiled_programs("solve"), time.perf_counter()
        scores = cross_val_score(nsjax.sklearn.LinearSVC(C=C), X, y, cv=FOLDS)
        return {"seconds": time.perf_counter() - t0,
                "programs": compiled_programs("solve") - before, "mean_score": float(scores.mean())}
    finally:
        model._pad, nsjax.data.CHUNK_ROUND_LIMIT = padding, chunks


def scikit_learn(X, y) -> dict:
    t0 = time.perf_counter()
    scores = cross_val_score(SkLinearSVC(C=C, loss="hinge", dual=True, max_iter=100_000), X, y,
                             cv=FOLDS)
    return {"seconds": time.perf_counter() - t0, "programs": 0,
            "mean_score": float(scores.mean())}


def raise_max_steps(shared: bool) -> dict:
    """Solves with growing max_steps; without sharing, each compiles (a static max_steps)."""
    X, y = nsjax.datasets.breast_cancer()
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-3), X, y)
    jax.clear_caches()
    programs, t0 = 0, time.perf_counter()
    for steps in STEPS:
        if not shared:
            jax.clear_caches()
        before = compiled_programs("solve")
        nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=steps, tol=1e-12).w.block_until_ready()
        programs += compiled_programs("solve") - before
    return {"seconds": time.perf_counter() - t0, "programs": programs}


def plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(r["scenario"] for r in rows))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 4.5))
    width = 0.8 / len(variants)
    for j, variant in enumerate(variants):
        found = [(i, r) for i, name in enumerate(names) for r in rows
                 if (r["scenario"], r["variant"]) == (name, variant)]
        for k, (i, r) in enumerate(found):
            x = i + (j - (len(variants) - 1) / 2) * width
            ax.bar(x, r["seconds"], width, color=f"C{j}", label=variant if k == 0 else None)
            ax.text(x, r["seconds"], str(r["programs"]), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), names)
    ax.set_ylabel("wall seconds (programs compiled on top)")
    ax.legend(fontsize=8)
    save_figure(plt, fig, title, path)


def main() -> None:
    start = time.perf_counter()
    rows = []

    def add(scenario, variant, r):
        rows.append({"scenario": scenario, "variant": variant, **r})
        score = f"{r['mean_score']:.4f}" if "mean_score" in r else ""
        print(f"{scenario:10s} {variant:22s} {r['seconds']:8.2f} {r['programs']:9d} {score:>10s}",
              flush=True)

    print(f"{'scenario':10s} {'variant':22s} {'seconds':>8s} {'programs':>9s} {'cv score':>10s}")
    for name, (X, y) in datasets().items():
        add(name, "nsjax, shared", cross_validate(X, y, True, True))
        if name == "cv-sparse":  # the padding's share: rows and columns, not the layouts
            add(name, "nsjax, padding only", cross_validate(X, y, True, False))
        add(name, "nsjax, not shared", cross_validate(X, y, False, False))
        add(name, "scikit-learn LinearSVC", scikit_learn(X, y))
    add("max-steps", "nsjax, shared", raise_max_steps(True))
    add("max-steps", "nsjax, not shared", raise_max_steps(False))
    for name in dict.fromkeys(r["scenario"] for r in rows):
        shared, alone = (next(r for r in rows if r["scenario"] == name and r["variant"] == v)
                         for v in ("nsjax, shared", "nsjax, not shared"))
        print(f"{name}: {alone['seconds'] / shared['seconds']:.2f}x faster shared "
              f"({shared['programs']} programs instead of {alone['programs']})")
    host = machine()
    out = HERE / "results" / "compile_sharing.json"
    save_json(out, {"benchmark": "compile_sharing", "C": C, "folds": FOLDS,
                    "max_steps": list(STEPS), "rows": rows, "machine": host,
                    "total_time_s": time.perf_counter() - start})
    png = HERE / "compile_sharing.png"
    plot(rows, png, f"compiled solves shared or not, float64, {host['cpu_model']}, "
         f"{host['os.cpu_count']} cores, JAX {host['jax']}")
    print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()

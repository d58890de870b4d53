"""Reading the bundle: by used blocks or all at once (issue 14, item 1).

A BMRM step reads its bundle A (capacity x d cuts) twice: the new cut's Gram row
⟨a_i, a⟩ and the combination Σ α_i a_i (``nsjax/solvers/bmrm.py``). nsjax reads the
blocks of 16 slots up to the last one in use while a float64 bundle is less than half
full, and all of A in one product from then on (``_by_blocks_or_at_once``). This script
times the two ways, in the same process:

* alone: the Gram row and the combination (jitted, A an argument; best of 20) with
  capacity 128, d = 20,000 (4,000 with ``--quick``) and 16 ... 128 slots in use, for a
  float64 bundle and a float32 one (a float32 problem's cuts, summed in float64: read at
  once, A is first written out in float64, which is why nsjax reads those by blocks);
* in the solver: ``solve(prob, solver, max_steps=k, tol=0)`` for the OCAS-like BMRM
  (``BMRM(line_search="exact")``) and the Hybrid (``SubLBFGS(certify=False)`` inside) on
  the 50,000 x 20,000 sparse set of ``liblinear_race.py`` (10,000 x 4,000 with
  ``--quick``), float64: at λ = 1e-6 the time per step over steps 150 to 300 (the bundle
  full: the difference of the runs with k = 300 and k = 150), and at λ = 1e-5 the whole
  run of k = 80 steps (the bundle filling: at most 80 slots in use).

Variants: "blocks" (the used blocks always: nsjax before this change) and "nsjax" (the
choice above). They alternate for ``ROUNDS`` rounds, XLA's caches cleared at each switch;
each row keeps the best and the median over the rounds (each round: best of 2 runs).

    python benchmarks/bundle_read.py [--quick] [--out DIR]

Output: a table, ``<out>/bundle_read.json`` (with the machine) and ``bundle_read.png``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update("jax_enable_x64", True)
import nsjax  # noqa: E402
import nsjax.solvers.bmrm as bmrm  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, best_of, machine, save_figure, save_json, timed_solve  # noqa: E402

ROUNDS = 3
CAPACITY = 128
IN_USE = (16, 32, 48, 64, 96, 128)
CHOSEN = bmrm._by_blocks_or_at_once


def by_blocks_always(A, valid, by_blocks, at_once):
    return by_blocks(*bmrm._used_blocks(A, valid))


def at_once_always(A, valid, by_blocks, at_once):
    return at_once()


def use(choice) -> None:
    """Make nsjax's bundle reads take ``choice``; forget every compiled program."""
    bmrm._by_blocks_or_at_once = choice
    jax.clear_caches()


def alone(d: int) -> list[dict]:
    """The Gram row and the combination, by blocks and at once, against the slots in use."""
    rng = np.random.default_rng(0)
    gram = jax.jit(bmrm.BMRM.gram_row)
    combine = jax.jit(bmrm.combine_cuts)
    rows = []
    for dtype in (np.float64, np.float32):
        A_all = rng.standard_normal((CAPACITY, d)).astype(dtype)
        a = jnp.asarray(rng.standard_normal(d).astype(dtype))
        for used in IN_USE:
            valid = jnp.arange(CAPACITY) < used
            A = jnp.asarray(np.where(np.arange(CAPACITY)[:, None] < used, A_all, 0))
            alpha = jnp.where(valid, jnp.asarray(rng.random(CAPACITY)), 0.0)
            row = {"dtype": np.dtype(dtype).name, "in_use": used}
            for way, choice in (("blocks", by_blocks_always), ("at_once", at_once_always)):
                use(choice)
                row[f"gram_{way}"] = best_of(gram, A, valid, a, reps=20)
                row[f"combine_{way}"] = best_of(combine, alpha, A, valid, reps=20)
            rows.append(row)
    use(CHOSEN)
    return rows


def in_solver(quick: bool) -> list[dict]:
    n, d = (10_000, 4_000) if quick else (50_000, 20_000)
    X, y = nsjax.datasets.synthetic_sparse(n, d, 0.0025, seed=0)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-5), X,
                         np.where(y > 0, 1.0, -1.0))
    S = nsjax.solvers
    solvers = {"OCAS-like": S.BMRM(line_search="exact"),
               "Hybrid": S.Hybrid(sublbfgs=S.SubLBFGS(certify=False))}
    cases = [("λ = 1e-6, a step of 150-300 (full)", 1e-6, (150, 300)),
             ("λ = 1e-5, 80 steps (filling)", 1e-5, (80,))]
    times: dict = {}
    for _ in range(ROUNDS):
        for variant, choice in (("blocks", by_blocks_always), ("nsjax", CHOSEN)):
            use(choice)
            for what, lam, ks in cases:
                p = prob.with_lam(lam)
                for name, solver in solvers.items():
                    timed_solve(p, solver, ks[-1], 1e30)  # compile (tol traced)
                    t = {k: min(timed_solve(p, solver, k, 0.0)[0] for _ in range(2))
                         for k in ks}
                    value = (t[ks[1]] - t[ks[0]]) / (ks[1] - ks[0]) if len(ks) == 2 else t[ks[0]]
                    times.setdefault((name, what, variant), []).append(value)
    use(CHOSEN)
    return [{"solver": name, "case": what,
             **{f"{v}_{stat}": float(f(times[name, what, v])) for v in ("blocks", "nsjax")
                for stat, f in (("best", np.min), ("median", np.median))},
             "rounds": {v: times[name, what, v] for v in ("blocks", "nsjax")}}
            for name in solvers for what, _, _ in cases]


def plot(alone_rows: list[dict], solver_rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.4))
    for ax, dtype in zip(axes[:2], ("float64", "float32"), strict=True):
        mine = [r for r in alone_rows if r["dtype"] == dtype]
        used = [r["in_use"] for r in mine]
        for part, color in (("gram", "C0"), ("combine", "C1")):
            for way, style in (("blocks", "-o"), ("at_once", "--s")):
                ax.plot(used, [1e3 * r[f"{part}_{way}"] for r in mine], style, color=color,
                        ms=3, label=f"{part}, {way.replace('_', ' ')}")
        ax.set_xlabel("slots in use (of 128)", fontsize=7)
        ax.set_ylabel("ms", fontsize=7)
        ax.set_title(f"alone, {dtype} bundle", fontsize=8)
        ax.legend(fontsize=6)
    x = np.arange(len(solver_rows))
    axes[2].bar(x, [r["nsjax_median"] / r["blocks_median"] for r in solver_rows], 0.6,
                color="C2")
    axes[2].axhline(1.0, color="k", lw=0.8)
    axes[2].set_xticks(x, [f"{r['solver']}\n{r['case'].split(',')[0]}" for r in solver_rows],
                       fontsize=6)
    axes[2].set_ylabel("nsjax / by blocks (median)", fontsize=7)
    axes[2].set_title("in the solver, float64", fontsize=8)
    save_figure(plt, fig, "Reading the bundle by used blocks or all at once (same process)",
                path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    d = 4_000 if args.quick else 20_000
    alone_rows = alone(d)
    print(f"alone, capacity {CAPACITY}, d = {d:,} (ms):")
    print(f"{'dtype':8s} {'in use':>6s} {'gram blocks':>12s} {'at once':>8s} "
          f"{'combine blocks':>15s} {'at once':>8s}")
    for r in alone_rows:
        print(f"{r['dtype']:8s} {r['in_use']:6d} {1e3 * r['gram_blocks']:12.2f} "
              f"{1e3 * r['gram_at_once']:8.2f} {1e3 * r['combine_blocks']:15.2f} "
              f"{1e3 * r['combine_at_once']:8.2f}", flush=True)
    solver_rows = in_solver(args.quick)
    print("in the solver, float64 (s; best / median over the rounds):")
    for r in solver_rows:
        print(f"{r['solver']:10s} {r['case']:36s} blocks {r['blocks_best']:.4f} / "
              f"{r['blocks_median']:.4f}  nsjax {r['nsjax_best']:.4f} / "
              f"{r['nsjax_median']:.4f}  ratio (median) "
              f"{r['nsjax_median'] / r['blocks_median']:.3f}")
    suffix = "_quick" if args.quick else ""
    save_json(args.out / f"bundle_read{suffix}.json",
              {"machine": machine(), "alone": alone_rows, "in_solver": solver_rows})
    plot(alone_rows, solver_rows, HERE / f"bundle_read{suffix}.png")


if __name__ == "__main__":
    main()

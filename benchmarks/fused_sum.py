"""What two CPU fusion fixes of the sparse products save (issue 14, item 1).

1. XLA's CPU backend hands sums with a plain-add reducer to YNNPACK, which writes out the
   gathered array it sums first (module docstring of `nsjax.fused_sum`); the products'
   row sums use `fused_sum`.
2. XLA fused the computation of the gathered vector into the gather, redoing it at every
   nonzero; the products write it out first (``_computed_before_gathering`` in
   ``nsjax/data.py``).

This script times the same programs in three variants, in the same process: "before"
(``jnp.sum`` and no write-out: nsjax before ecb6a0c), "fused_sum" (1 only) and "both"
(nsjax now):

* X w and Xᵀu alone (jitted, the problem an argument; best of 20);
* ``solve(prob, solver, max_steps=k, tol=0)`` for the OCAS-like BMRM (k = 80) and the
  Hybrid (k = 120, ``SubLBFGS(certify=False)`` inside), the hinge at λ = 1e-5 (best of 3).

Data: the two 50,000 x 20,000 sets of ``liblinear_race.py`` ("sparse": power 1.0,
"text-like": power 1.1), float64 and float32 (10,000 x 4,000 with ``--quick``). The two
variants alternate for ``ROUNDS`` rounds (XLA's caches cleared at each switch), and each
row keeps its best time over the rounds. The iterates differ only by the order of the
additions; the table shows J after the k steps. X w and Xᵀu alone take their vector as
an argument, so 2 does not change them.

    python benchmarks/fused_sum.py [--quick] [--out DIR]

Output: a table, ``<out>/fused_sum.json`` (with the machine) and ``fused_sum.png``.
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
import nsjax.data  # noqa: E402
from nsjax.fused_sum import fused_sum  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, best_of, machine, save_figure, save_json, timed_solve  # noqa: E402

ROUNDS = 2
VARIANTS = ("before", "fused_sum", "both")
WRITE_OUT = nsjax.data._computed_before_gathering


def plain_sum(x, axis=-1):
    return jnp.sum(x, axis=axis)


def use(variant: str) -> None:
    """Put nsjax's products in ``variant``; forget every compiled program."""
    nsjax.data.fused_sum = plain_sum if variant == "before" else fused_sum
    nsjax.data._computed_before_gathering = WRITE_OUT if variant == "both" else (lambda v: v)
    jax.clear_caches()


def cases(quick: bool):
    n, d = (10_000, 4_000) if quick else (50_000, 20_000)
    S = nsjax.solvers
    methods = {"OCAS-like": (S.BMRM(line_search="exact"), 80),
               "Hybrid": (S.Hybrid(sublbfgs=S.SubLBFGS(certify=False)), 120)}
    for name, power in (("sparse", 1.0), ("text-like", 1.1)):
        X, y = nsjax.datasets.synthetic_sparse(n, d, 0.0025, seed=0, power=power)
        y = np.where(y > 0, 1.0, -1.0)
        for dtype in (np.float64, np.float32):
            prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-5),
                                 X.astype(dtype), y, dtype=dtype)
            yield f"{name}, {np.dtype(dtype).name}", prob, methods


def measure(prob, methods) -> dict:
    w = jnp.full(prob.w_shape, 0.01, prob.dtype)
    u = jnp.full(prob.y.shape, 0.01, prob.dtype)
    out = {"X w": (best_of(jax.jit(lambda p, w: p.X.mv(w)), prob, w, reps=20), None),
           "Xᵀu": (best_of(jax.jit(lambda p, u: p.X.rmv(u)), prob, u, reps=20), None)}
    for name, (solver, k) in methods.items():
        timed_solve(prob, solver, k, 0.0)  # compile
        runs = [timed_solve(prob, solver, k, 0.0) for _ in range(3)]
        out[f"{name}, {k} steps"] = (min(t for t, _ in runs), float(runs[0][1].value))
    return out


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets = list(dict.fromkeys(r["case"] for r in rows))
    fig, axes = plt.subplots(1, len(sets), figsize=(3.4 * len(sets), 3.4), sharey=True)
    for ax, case in zip(np.atleast_1d(axes), sets, strict=True):
        mine = [r for r in rows if r["case"] == case]
        x = np.arange(len(mine))
        for j, (variant, color) in enumerate((("fused_sum", "C0"), ("both", "C2"))):
            ax.bar(x + 0.4 * j - 0.2, [r[variant] / r["before"] for r in mine], 0.4,
                   color=color, label=variant)
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(x, [r["what"].replace(", ", "\n") for r in mine], fontsize=6)
        ax.set_title(case, fontsize=8)
    np.atleast_1d(axes)[0].set_ylabel("time / time before", fontsize=7)
    np.atleast_1d(axes)[0].legend(fontsize=7)
    save_figure(plt, fig, "The products' CPU fusion fixes against before (same process, "
                "best over rounds)", path)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    all_cases = list(cases(args.quick))
    best: dict = {}
    for _ in range(ROUNDS):
        for variant in VARIANTS:
            use(variant)
            for case, prob, methods in all_cases:
                for what, (t, value) in measure(prob, methods).items():
                    key = (case, what, variant)
                    if key not in best or t < best[key][0]:
                        best[key] = (t, value)
    use("both")
    rows = []
    print(f"{'case':18s} {'what':22s} {'before':>9s} {'fused_sum':>9s} {'both':>9s} "
          f"{'ratio':>6s}  J (before / both)")
    for case, _, methods in all_cases:
        for what in ["X w", "Xᵀu", *(f"{m}, {k} steps" for m, (_, k) in methods.items())]:
            row = {"case": case, "what": what}
            for variant in VARIANTS:
                row[variant], row[f"value_{variant}"] = best[case, what, variant]
            rows.append(row)
            values = "" if row["value_before"] is None else (
                f"{row['value_before']:.9f} / {row['value_both']:.9f}")
            print(f"{case:18s} {what:22s} " + " ".join(
                f"{1e3 * row[v]:7.2f}ms" for v in VARIANTS)
                + f" {row['both'] / row['before']:6.2f}  {values}", flush=True)
    suffix = "_quick" if args.quick else ""
    save_json(args.out / f"fused_sum{suffix}.json", {"machine": machine(), "rows": rows})
    plot(rows, HERE / f"fused_sum{suffix}.png")


if __name__ == "__main__":
    main()

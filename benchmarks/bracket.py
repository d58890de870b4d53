"""The exact line search's brackets against the number of examples (issue 14 items 1, 5).

`nsjax.solvers.line_search.exact_line_search` finds the kink before η* either by sorting all
kinks ("sort", Alg. 3 of the subLBFGS paper), by bisecting F on the floats' bit patterns
("bisect", one O(n) pass per halving until one kink is left in the bracket: ~10 + log₂ n
passes), or by cutting the bracket into ``MULTISECT_WAYS`` = 16 pieces a pass ("multisect":
8 passes in float32, 16 in float64, unrolled, each evaluating F at 15 points). "auto"
picks one per platform and shape; this script measures where each is faster. Then, at
the largest n ≤ 2²⁰ of each r, the multisection with 8, 32, 64 and 128 pieces a pass.

For each dtype, r lines per example (r = 2: a binary hinge's two lines; r = 26: a
Crammer–Singer line per class, as on Letter) and n, random lines (offsets and slopes
standard normal over n, a regularizer slope c_reg = -1 and curvature h = 1, so that η* lies
among the kinks) are searched by each bracket, jitted with the lines as arguments, best of
``REPEATS`` after a compiling call; both give the same η* (checked).

Output: a printed table (ms per search, each bracket), ``<out>/bracket.json`` and
``<png>`` (default ``benchmarks/bracket.png``).

    python benchmarks/bracket.py [--quick] [--out DIR] [--png PATH]
"""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from nsjax.solvers import line_search  # noqa: E402
from nsjax.solvers.line_search import exact_line_search  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, save_figure, save_json  # noqa: E402
from dense_step import best_of  # noqa: E402

REPEATS = 20
BRACKETS = ("sort", "bisect", "multisect")
WAYS = (8, 32, 64, 128)  # other than MULTISECT_WAYS
WAYS_AT = 2**20  # the largest n at most this gets the multisection's other ways
SIZES = {2: [2**k for k in range(10, 23, 2)], 26: [2**k for k in range(8, 17, 2)]}
QUICK_SIZES = {2: [2**10, 2**14], 26: [2**8, 2**10]}


@partial(jax.jit, static_argnames="bracket")
def search(b, a, c_reg, h, bracket):
    return exact_line_search(b, a, c_reg, h, bracket).eta


def lines(n: int, r: int, dtype, seed=0):
    rng = np.random.default_rng(seed)
    b = rng.standard_normal((n, r)) / n
    a = rng.standard_normal((n, r)) / n
    return jnp.asarray(b, dtype), jnp.asarray(a, dtype)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="two sizes each (a CPU check)")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--png", type=Path, default=HERE / "bracket.png")
    parser.add_argument("--dtypes", default="float32,float64")
    args = parser.parse_args(argv)
    dev = jax.devices()[0]
    res = {"device": f"{dev.platform}: {getattr(dev, 'device_kind', str(dev))}",
           "machine": machine(), "rows": []}
    sizes = QUICK_SIZES if args.quick else SIZES
    print(f"{'dtype':8s} {'r':>3s} {'n':>9s} " + " ".join(f"{k + ' ms':>12s}" for k in BRACKETS))
    for dt in args.dtypes.split(","):
        for r, ns in sizes.items():
            for n in ns:
                b, a = lines(n, r, np.dtype(dt))
                c_reg, h = jnp.asarray(-1.0, b.dtype), jnp.asarray(1.0, b.dtype)
                row = {"dtype": dt, "r": r, "n": n}
                etas = set()
                for k in BRACKETS:
                    row[f"{k}_s"] = best_of(search, b, a, c_reg, h, k, reps=REPEATS)
                    etas.add(float(search(b, a, c_reg, h, k)))
                row["same_eta"] = len(etas) == 1
                res["rows"].append(row)
                print(f"{dt:8s} {r:3d} {n:9,d} " + " ".join(
                    f"{1e3 * row[k + '_s']:12.3f}" for k in BRACKETS)
                    + ("" if row["same_eta"] else "  (different η*)"), flush=True)
                save_json(args.out / "bracket.json", res)
            n = max(k for k in ns if k <= WAYS_AT)
            b, a = lines(n, r, np.dtype(dt))
            res.setdefault("ways", []).append(ways_row(b, a, c_reg, h, dt, r, n))
            print(f"  multisect at n = {n:,d}: " + ", ".join(
                f"{w} ways {1e3 * s:.3f} ms" for w, s in res["ways"][-1]["s"].items()))
            save_json(args.out / "bracket.json", res)
    plot(res, args.png)
    print(f"wrote {args.out / 'bracket.json'} and {args.png}")


def ways_row(b, a, c_reg, h, dt, r, n) -> dict:
    """The multisection with other numbers of pieces a pass (each its own program)."""
    default, out = line_search.MULTISECT_WAYS, {}
    try:
        for ways in WAYS:
            line_search.MULTISECT_WAYS = ways
            fn = jax.jit(lambda b, a, c, h: exact_line_search(b, a, c, h, "multisect").eta)
            out[ways] = best_of(fn, b, a, c_reg, h, reps=REPEATS)
    finally:
        line_search.MULTISECT_WAYS = default
    return {"dtype": dt, "r": r, "n": n, "s": out}


def plot(res: dict, png: Path) -> None:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, r in zip(axes, (2, 26), strict=True):
        for dt, style in (("float32", "-"), ("float64", "--")):
            rows = [x for x in res["rows"] if x["r"] == r and x["dtype"] == dt]
            if not rows:
                continue
            n = [x["n"] for x in rows]
            ax.loglog(n, [1e3 * x["sort_s"] for x in rows], "o" + style, color="C0",
                      label=f"sort, {dt}")
            ax.loglog(n, [1e3 * x["bisect_s"] for x in rows], "s" + style, color="C1",
                      label=f"bisect, {dt}")
            if "multisect_s" in rows[0]:
                ax.loglog(n, [1e3 * x["multisect_s"] for x in rows], "^" + style, color="C2",
                          label=f"multisect, {dt}")
        ax.set(xlabel="examples n", ylabel="ms per line search",
               title=f"r = {r} lines per example")
        ax.legend(fontsize=8)
    save_figure(plt, fig, f"exact line search brackets, {res['device']}", png)


if __name__ == "__main__":
    main()

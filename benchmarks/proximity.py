"""The OCAS-like BMRM's proximity term (`BMRM(proximity=...)`, issue 14, item 1).

Steps and time to relative suboptimality 1e-3 of the OCAS-like BMRM
(``BMRM(line_search="exact")``) and of the Hybrid (the default solver, whose phase 2 it is)
with the proximity term τ/2 ‖w − w_t‖² at τ = 1.5 λ (the default) and without it (τ = 0,
the method of Yu et al. 2010), in the same process:

* the binary hinge on the 50,000 × 20,000 sparse and text-like sets of
  ``liblinear_race.py`` at λ = 1e-5 and 1e-6, float64 and float32;
* digits' Crammer–Singer at λ = 1e-3 and 1e-5;
* a sweep of τ/λ for the OCAS-like BMRM on the sparse set at λ = 1e-6 (float64).

J* is the best certified lower bound of a long OCAS-like run (no target is counted below
it). A time is the best of 2 compiled runs of the first step budget that reaches the
target (the Hybrid's subLBFGS phase with ``certify=False``, as in ``liblinear_race.py``).

    python benchmarks/proximity.py [--quick]

Output: a table, ``benchmarks/results/proximity.json`` and ``benchmarks/proximity.png``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)
import nsjax  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, save_figure, save_json, timed_solve  # noqa: E402

TARGET = 1e-3
PROXIMITIES = (0.0, 1.5)
SWEEP = (0.0, 0.3, 0.6, 1.0, 1.5, 2.5, 4.0, 10.0)
S = nsjax.solvers


def ocas(proximity):
    return S.BMRM(line_search="exact", proximity=proximity)


def hybrid(proximity):
    return S.Hybrid(sublbfgs=S.SubLBFGS(certify=False), bmrm=ocas(proximity))


SOLVERS = {"OCAS-like": ocas, "Hybrid": hybrid}


def cases(quick: bool):
    """(name, problem builder by dtype, λs, step budget)."""
    n, d = (5_000, 2_000) if quick else (50_000, 20_000)
    out = []
    for name, kw in (("sparse", {}), ("text-like", {"power": 1.1})):
        X, y = nsjax.datasets.synthetic_sparse(n, d, 0.0025, seed=0, **kw)
        y = np.where(y > 0, 1.0, -1.0)
        out.append((f"{name} {n:,}x{d:,}", X, y, nsjax.losses.Hinge(), ("float64", "float32"),
                    (1e-5, 1e-6), 700))
    X, y = nsjax.datasets.digits()
    out.append(("digits Crammer-Singer", X, y, nsjax.losses.MulticlassHinge(), ("float64",),
                (1e-3, 1e-5), 2500))
    return out


def j_star(prob, budget) -> float:
    ref = nsjax.solve(prob, ocas(1.5), max_steps=2 * budget, tol=1e-7)
    return float(np.nanmax(np.asarray(ref.history.value) - np.asarray(ref.history.gap)))


def to_target(prob, solver, jstar, budget) -> dict:
    sol = nsjax.solve(prob, solver, max_steps=budget, tol=0.0)
    best = np.asarray(sol.history.best[:int(sol.num_steps)], np.float64)
    hit = np.flatnonzero(best <= jstar * (1 + TARGET))
    if not hit.size:
        return {"steps": None, "time_s": None}
    k = int(hit[0]) + 1
    t = min(timed_solve(prob, solver, k, 0.0)[0] for _ in range(2))
    return {"steps": k, "time_s": t, "ms_per_step": 1e3 * t / k}


def without(rows, r) -> dict:
    """The row of ``rows`` for ``r``'s case, λ, dtype and solver without the term (τ = 0)."""
    return next(b for b in rows if b["proximity"] == 0 and all(
        b[k] == r[k] for k in ("case", "lam", "dtype", "solver")))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    quick = ap.parse_args(argv).quick
    rows, sweep = [], []
    print(f"{'case':>34s} {'λ':>6s} {'dtype':>7s} {'solver':>9s} {'τ/λ':>4s} {'steps':>6s} "
          f"{'time s':>7s} {'ms/step':>8s}")
    for name, X, y, loss, dtypes, lams, budget in cases(quick):
        for lam in lams:
            jstar = j_star(nsjax.Problem(loss, nsjax.regularizers.L2(lam), X, y), budget)
            for dt in dtypes:
                prob = nsjax.Problem(loss, nsjax.regularizers.L2(lam), X, y, dtype=dt)
                for sname, make in SOLVERS.items():
                    for prox in PROXIMITIES:
                        r = dict(case=name, lam=lam, dtype=dt, solver=sname, proximity=prox,
                                 j_star=jstar, **to_target(prob, make(prox), jstar, budget))
                        rows.append(r)
                        print(f"{name:>34s} {lam:6.0e} {dt:>7s} {sname:>9s} {prox:4.1f} "
                              f"{r['steps'] or '-':>6} {r['time_s'] or float('nan'):7.3f} "
                              f"{r.get('ms_per_step', float('nan')):8.2f}", flush=True)
                    jax.clear_caches()
            if name.startswith("sparse") and lam == 1e-6:
                prob = nsjax.Problem(loss, nsjax.regularizers.L2(lam), X, y)
                for prox in SWEEP:
                    sol = nsjax.solve(prob, ocas(prox), max_steps=budget, tol=0.0)
                    best = np.asarray(sol.history.best[:int(sol.num_steps)])
                    hit = np.flatnonzero(best <= jstar * (1 + TARGET))
                    sweep.append({"proximity": prox,
                                  "steps": int(hit[0]) + 1 if hit.size else None})
                print("sweep of τ/λ (OCAS-like, sparse, λ = 1e-6, float64): " + ", ".join(
                    f"{s['proximity']:g}: {s['steps']}" for s in sweep), flush=True)
    print("\nsteps and time with τ = 1.5 λ / without (τ = 0):")
    for r in rows:
        if r["proximity"] == 1.5:
            base = without(rows, r)
            if r["steps"] and base["steps"]:
                print(f"  {r['case']}, λ {r['lam']:.0e}, {r['dtype']}, {r['solver']}: steps "
                      f"{r['steps'] / base['steps']:.2f}×, time "
                      f"{r['time_s'] / base['time_s']:.2f}×")
    save_json(HERE / "results" / ("proximity_quick.json" if quick else "proximity.json"),
              {"machine": machine(), "target": TARGET, "rows": rows, "sweep": sweep})
    plot(rows, sweep, HERE / ("proximity_quick.png" if quick else "proximity.png"))


def plot(rows, sweep, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), width_ratios=(3, 1))
    labels, ratios = [], []
    for r in rows:
        if r["proximity"] != 1.5:
            continue
        base = without(rows, r)
        if r["time_s"] and base["time_s"]:
            labels.append(f"{r['case'].split()[0]} {r['lam']:.0e} {r['dtype'][-2:]} "
                          f"{r['solver']}")
            ratios.append((r["steps"] / base["steps"], r["time_s"] / base["time_s"]))
    y = np.arange(len(labels))
    ax.barh(y - 0.2, [s for s, _ in ratios], 0.4, label="steps")
    ax.barh(y + 0.2, [t for _, t in ratios], 0.4, label="time")
    ax.axvline(1.0, color="k", lw=1)
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("with τ = 1.5 λ / without, to relative suboptimality 1e-3")
    ax.legend(fontsize=8)
    done = [s for s in sweep if s["steps"]]
    bx.plot([s["proximity"] for s in done], [s["steps"] for s in done], "o-")
    bx.set_xscale("symlog", linthresh=0.3)
    bx.set_xlabel("τ / λ")
    bx.set_ylabel("steps to 1e-3 (OCAS-like, sparse, λ = 1e-6)")
    save_figure(plt, fig, "The OCAS-like BMRM's proximity term", path)


if __name__ == "__main__":
    main()

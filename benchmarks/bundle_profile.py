"""Where one step of the OCAS-like BMRM spends its time once its bundle is full: the binary
hinge at lam = 1e-6, in float64 and float32 (issue 14, item 1's profile of the bundle step).

Problems: ``Problem(Hinge(), L2(1e-6), X, y)`` with labels mapped to {-1, +1}, on the sets of
``liblinear_race.py``: ``nsjax.datasets.synthetic_sparse(50_000, 20_000, 0.0025, seed=0)``
("sparse") and the same call with ``power=1.1`` ("text-like"); 5,000 x 2,000 with
``--quick``. float64 via ``jax_enable_x64``, float32 via ``Problem(..., dtype=np.float32)``.

State: ``solver = BMRM(line_search="exact")`` (its defaults: capacity 128, 10 QP
iterations, merge 1/8); ``state = solver.init(prob, 0)``, then the jitted ``solver.step``
applied 250 times (at lam = 1e-6 the bundle is full by then and every cut in it is active:
the steps that decide the time to 1e-3 there). One step is ``insert`` (the last step's cut
into the bundle) then ``iterate``. Each part of it is run alone as its own jitted function
on the inputs the step would give it, best of 9 after a compiling call:

* insert: ``solver.insert(state)``, with the state donated (A is updated in place, as in
  the loop), on a fresh copy of the state for each call;
* QP: ``solve_simplex_qp`` (accelerated projected gradient, then the active-set polish);
* Σ α_i a_i: ``combine_cuts`` (one read of the bundle A);
* aggregation set: ``aggregation_set`` (the cuts a merge would take, a top-k);
* X w: the scores of the model's minimizer, ``prob.scores(w_model)``;
* line search: ``ExactLineSearch().search`` from the iterate towards w_model;
* cut: ``prob.cut(w_cut, S_cut)`` (J, Xᵀu and the offset); of it "Xᵀu" = ``prob.rmv(u)``
  alone, and the rest;
* Gram row: ``BMRM.gram_row`` (the other read of A).

Reference, not in the split: the whole step alone, and a step in a compiled loop: (t(110
steps) - t(10 steps)) / 100 of a ``lax.fori_loop`` of ``solver.step`` from the same state,
best of 5 each. rest = step in the loop - the sum of the parts (negative where the parts
alone pay more than in the loop: their own outputs written out, a cold cache).

Options (``--options``; the sparse set in float64 only): the steps to relative suboptimality
1e-3 and the compiled time of ``solve(max_steps=k, tol=0)`` for k those steps, for the
OCAS-like BMRM with capacity 64, 128 (the default) and 256, and with ``merge`` 1/16 and 1/2
at capacity 128. k is the first step whose ``history.best`` is within 1e-3 of J*; J* is
the value of a certified run (``BMRM(line_search="exact", capacity=256)``, tol 1e-5 of J,
so J* is good to 1e-5, a hundredth of the target). Time: best of 2 after a compiling call.

Output: a table, ``benchmarks/results/bundle_profile.json`` (with the machine) and a stacked
bar per (data set, dtype) in ``benchmarks/bundle_profile.png`` (``_quick`` with ``--quick``).

    python benchmarks/bundle_profile.py [--quick]
"""

from __future__ import annotations

import argparse
import functools
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import nsjax  # noqa: E402
from nsjax.solvers.bmrm import (  # noqa: E402
    BMRM,
    OCAS_ETA_MAX,
    OCAS_MU,
    aggregation_set,
    combine_cuts,
)
from nsjax.solvers.line_search import ExactLineSearch  # noqa: E402
from nsjax.solvers.simplex_qp import solve_simplex_qp  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import step_profile  # noqa: E402  (this folder, on sys.path from here)
from _common import machine, plot_step_split, save_json  # noqa: E402

LAM, DENSITY, SEED, WARM_STEPS, REPEATS, LOOP_REPEATS = 1e-6, 0.0025, 0, 250, 9, 5
LOOP_STEPS = (10, 110)
DATASETS = {"sparse": 1.0, "text-like": 1.1}
DTYPES = {"float64": np.float64, "float32": np.float32}
# (key, label) of the stacked parts, in the order of a step
STACK = [("insert", "insert"), ("qp", "QP"), ("combine", "Σ α_i a_i (reads A)"),
         ("aggregation_set", "aggregation set"), ("Xw", "X w_model"),
         ("line_search", "line search"), ("cut_Xtu", "cut: Xᵀu"), ("cut_rest", "cut: rest"),
         ("gram_row", "Gram row (reads A)"), ("rest", "rest (loop - parts)")]


#: best of ``repeats`` after a compiling call, in ms, and the output (as step_profile.py)
best_ms = functools.partial(step_profile.best_ms, repeats=REPEATS)


def donated_ms(fn, state, repeats=REPEATS):
    """``best_ms`` of ``fn(state)`` that consumes its argument: each call gets a fresh copy."""
    def fresh():
        return jax.block_until_ready(jax.tree_util.tree_map(jnp.copy, state))

    out = jax.block_until_ready(fn(fresh()))  # compiles
    times = []
    for _ in range(repeats):
        arg = fresh()
        t = time.perf_counter()
        jax.block_until_ready(fn(arg))
        times.append(time.perf_counter() - t)
    return 1e3 * min(times), out


def in_loop_ms(prob, solver, state):
    """A step inside a compiled loop from ``state``: the difference of two loop lengths."""
    def loop(k):
        return jax.jit(lambda p, s: jax.lax.fori_loop(
            0, k, lambda _, s: solver.step(p, s), s).core.value)

    t = {k: best_ms(loop(k), prob, state, repeats=LOOP_REPEATS)[0] for k in LOOP_STEPS}
    return (t[LOOP_STEPS[1]] - t[LOOP_STEPS[0]]) / (LOOP_STEPS[1] - LOOP_STEPS[0])


def profile(prob, solver):
    step = jax.jit(lambda p, s: solver.step(p, s))
    state = solver.init(prob, prob.zeros())
    for _ in range(WARM_STEPS):
        state = step(prob, state)
    r = {"J": float(state.core.value), "cuts": int(state.valid.sum()),
         "active": int(jnp.sum(state.valid & (state.alpha > 0)))}
    r["insert"], s = donated_ms(jax.jit(solver.insert, donate_argnums=0), state)
    r["qp"], alpha = best_ms(jax.jit(lambda Q, b, lam, v, a: solve_simplex_qp(
        Q, b, lam, v, a, solver.qp_iterations)), s.Q, s.b, prob.lam, s.valid, s.alpha)
    r["combine"], Aalpha = best_ms(jax.jit(combine_cuts), alpha, s.A, s.valid)
    r["aggregation_set"], _ = best_ms(jax.jit(lambda a, v: aggregation_set(a, v, solver.merge)),
                                      alpha, s.valid)
    w, S = s.core.w, s.S
    w_model = (-Aalpha / prob.lam).astype(w.dtype)
    r["Xw"], S_model = best_ms(jax.jit(lambda p, w: p.scores(w)), prob, w_model)
    r["line_search"], ls = best_ms(jax.jit(lambda p, w, S, d, dS: ExactLineSearch().search(
        p, w, S, d, dS)), prob, w, S, w_model - w, S_model - S)
    eta = jnp.minimum(ls.eta, OCAS_ETA_MAX)  # the cut point of `BMRM.iterate`
    w_cut = (1 - OCAS_MU) * (w + eta * (w_model - w)) + OCAS_MU * w_model
    S_cut = prob.scores(w_cut)
    r["cut"], (_, a, _) = best_ms(jax.jit(lambda p, w, S: p.cut(w, S)), prob, w_cut, S_cut)
    r["cut_Xtu"], _ = best_ms(jax.jit(lambda p, u: p.rmv(u)), prob,
                              prob.loss.dscores(S_cut, prob.y))
    r["cut_rest"] = r["cut"] - r["cut_Xtu"]
    r["gram_row"], _ = best_ms(jax.jit(BMRM.gram_row), s.A, s.valid, a)
    r["step"], _ = best_ms(step, prob, state)
    r["parts_sum"] = sum(r[k] for k, _ in STACK if k != "rest")  # the cut as Xᵀu + rest
    r["products"] = r["Xw"] + r["cut_Xtu"]
    r["step_in_loop"] = in_loop_ms(prob, solver, state)
    r["rest"] = r["step_in_loop"] - r["parts_sum"]
    return r


OPTIONS = {"capacity 64": dict(capacity=64), "capacity 128 (default)": {},
           "capacity 256": dict(capacity=256), "merge 1/16": dict(merge=1 / 16),
           "merge 1/2": dict(merge=1 / 2)}
TARGET, REF_TOL, OPTION_STEPS = 1e-3, 1e-5, 1500


def options(prob):
    """Steps and time to 1e-3 for each of `OPTIONS` (module docstring)."""
    ref = nsjax.solve(prob, BMRM(line_search="exact", capacity=256), max_steps=3000,
                      tol=REF_TOL * 0.2)  # J < 1 here: tol is absolute, 1e-5 of J ~ 2e-6
    j_star, gap = float(ref.value), float(ref.gap)
    out = {"j_star": j_star, "j_star_gap": gap, "runs": {}}
    for name, kw in OPTIONS.items():
        solver = BMRM(line_search="exact", **kw)
        best = np.asarray(nsjax.solve(prob, solver, max_steps=OPTION_STEPS, tol=0.0).history.best)
        hit = np.flatnonzero((best - j_star) / j_star <= TARGET)
        k = int(hit[0]) + 1 if hit.size else None
        run = {"steps": k}
        if k is not None:
            run["time_s"] = best_ms(lambda p, k=k, s=solver: nsjax.solve(
                p, s, max_steps=k, tol=0.0).value, prob, repeats=2)[0] / 1e3
        out["runs"][name] = run
        print(f"{name:24s} steps to {TARGET:g}: {k}, time {run.get('time_s', float('nan')):.2f} s",
              flush=True)
    return out


def plot(results, title, path):
    plot_step_split(
        results, STACK, {"Xw", "cut_Xtu"},
        lambda r: f"in loop {r['step_in_loop']:.3g} ms, products {r['products']:.3g} ms",
        "ms (bars: the parts alone, hatched: products with X, Xᵀ; rest < 0 not drawn; x: a "
        "step in a compiled loop)", title, path, "step_in_loop")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5,000 x 2,000 problems")
    parser.add_argument("--options", action="store_true",
                        help="also steps and time to 1e-3 against capacity and merge")
    args = parser.parse_args(argv)
    name = "bundle_profile" + ("_quick" if args.quick else "")
    n, d = (5_000, 2_000) if args.quick else (50_000, 20_000)
    solver = BMRM(line_search="exact")
    results, option_runs = {}, None
    print(f"{solver!r}, binary hinge, lam={LAM:g}, state after {WARM_STEPS} steps; parts "
          f"alone, ms best of {REPEATS}")
    print(f"{'case':20s} {'part':26s} {'ms':>8s} {'% loop':>7s}")
    for ds, power in DATASETS.items():
        X, y = nsjax.datasets.synthetic_sparse(n, d, DENSITY, seed=SEED, power=power)
        y = np.where(y > 0, 1.0, -1.0)
        for dt_name, dt in DTYPES.items():
            label = f"{ds}, {dt_name}"
            prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y,
                                 dtype=dt)
            r = profile(prob, solver)
            r.update(n=n, d=d, nnz=int(X.nnz), power=power, lam=LAM, dtype=dt_name)
            results[label] = r
            lines = [(name_, r[key]) for key, name_ in STACK] + [
                ("products (X w + Xᵀu)", r["products"]), ("whole step alone", r["step"]),
                ("step in a compiled loop", r["step_in_loop"])]
            for part, ms in lines:
                print(f"{label:20s} {part:26s} {ms:8.3f} {100 * ms / r['step_in_loop']:6.1f}%",
                      flush=True)
            print(f"{'':20s} J = {r['J']:.10g}, {r['cuts']} cuts, {r['active']} active")
            if args.options and ds == "sparse" and dt_name == "float64":
                option_runs = options(prob)
    out = HERE / "results" / f"{name}.json"
    save_json(out, {"machine": machine(), "solver": repr(solver), "warm_steps": WARM_STEPS,
                    "repeats": REPEATS, "loop_steps": LOOP_STEPS, "ms": results,
                    "options": option_runs})
    png = HERE / f"{name}.png"
    plot(results, f"OCAS-like BMRM step split, binary hinge, lam={LAM:g}, after {WARM_STEPS} "
         "steps", png)
    print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()

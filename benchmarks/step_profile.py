"""Where one subLBFGS step spends its time, on the binary hinge (or, with ``--multiclass``,
the Crammer–Singer multiclass hinge), in float64 and float32.

Problems: ``Problem(Hinge(), L2(1e-5), X, y)`` with labels mapped to {-1, +1} (as in
``binary_hinge.py``), on ``nsjax.datasets.synthetic_sparse(50_000, 20_000, 0.0025, seed=0)``
("sparse", power 1.0) and the text-like set of the same call with ``power=1.1`` (column
frequencies ∝ (j + 1)^-1.1, unit-norm rows); 5,000 x 2,000 with ``--quick``. float64 via
``jax_enable_x64``, float32 via ``Problem(..., dtype=np.float32)``. With ``--multiclass``:
``Problem(MulticlassHinge(), L2(lam), X, y)`` for lam in {1e-3, 1e-5} on the Letter-like set
of ``multiclass_hinge.py`` (``synthetic_sparse(16_000, 16, 1.0, n_classes=26, seed=0)``,
dense; n = 3,000 with ``--quick``), where the exact line search walks K = 26 lines per
example, and its line search is split further into the kinks (``line_search.kinks``: the
envelope walk) and the rest (the bracket and η*).

State: ``solver = SubLBFGS(memory=15, certify=False)``; ``state = solver.init(prob, 0)``,
then ``jax.jit(lambda p, s: solver.step(p, s))`` applied 30 times. At that state each part
of ``SubLBFGS.propose`` / ``commit`` is run alone as its own jitted function taking the
problem and the arrays it needs as arguments (the problem is never closed over), with the
inputs the step itself would give it (computed once beforehand). Each is timed best of 7
(``time.perf_counter``, synced with ``jax.block_until_ready``) after one compiling call:

* direction: ``find_direction`` as ``propose`` calls it (Alg. 2; k = its iteration count).
  Of it, estimated: "X p" = (1 + k) x t(X w), "Xᵀu" = k x t(Xᵀu), "B v" = (1 + k) x
  t(``memory.apply``, the device's form), each timed alone; "rest" = direction minus these.
  Both forms of ``LBFGSMemory`` (two-loop, compact) are also timed alone.
* dual value: ``p.dual_value(d.ubar, S=S, Xtu=d.gbar - d.rbar)``.
* line search: ``solver.line_search_for(p).search(p, w, S, d.p, d.dS)`` (bracket "auto":
  bisection on CPUs); ``ExactLineSearch("sort")``, ``("bisect")`` and ``("multisect")`` are
  timed for comparison.
* new subgradient: ``p.certified_subgradient(w_new, S_new, d.p, d.dS, ls.theta)``; of it,
  "Xᵀu" = t(Xᵀu) and "rest" the difference.
* memory update: ``solver.commit(new, pending).mem`` on the state and pending update that
  ``propose`` returns (a standalone call writes a new (m, d) memory; inside ``solve``'s
  loop it is updated in place).
* whole step: ``solver.step(p, state)``; bookkeeping = whole step - the sum of the five
  parts above (moving w and S, J(w_new), the curvature test, status and counters). It is
  reported as is: it can be negative where XLA fuses or overlaps work across parts, and
  each part timed alone pays one call's overhead that the step pays once, so also shown:
  bookkeeping + 5 x the time of an empty jitted call (problem and state in, a scalar out).
* reference, not in the split: t(X w) and t(Xᵀu) alone, the empty call, and the step
  inside ``solve``'s compiled loop = (t(solve, 40 steps) - t(solve, 20 steps)) / 20
  (tol = 0, best of 3 each).

Output: a table, ``benchmarks/results/step_profile.json`` (with the machine) and a stacked
bar per (data set, dtype) in ``benchmarks/step_profile.png`` (``_multiclass`` with
``--multiclass``, ``_quick`` with ``--quick``).

    python benchmarks/step_profile.py [--quick] [--multiclass]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import numpy as np  # noqa: E402

import nsjax  # noqa: E402
from nsjax.solvers.line_search import ExactLineSearch, kinks  # noqa: E402
from nsjax.testing import find_direction  # noqa: E402

HERE = Path(__file__).resolve().parent
LAM, DENSITY, SEED, MEMORY, WARM_STEPS, REPEATS = 1e-5, 0.0025, 0, 15, 30, 7
DATASETS = {"sparse": 1.0, "text-like (power 1.1)": 1.1}
MULTICLASS_LAMS = (1e-3, 1e-5)
DTYPES = {"float64": np.float64, "float32": np.float32}
# (key, label) of the stacked parts, in order; their sum is the whole step
STACK = [("dir_Xp", "direction: X p"), ("dir_Xtu", "direction: Xᵀu"),
         ("dir_Bv", "direction: B v"), ("dir_rest", "direction: rest"),
         ("dual", "dual value"), ("line_search", "line search (auto)"),
         ("subgrad_Xtu", "new subgradient: Xᵀu"), ("subgrad_rest", "new subgradient: rest"),
         ("commit", "memory update"), ("bookkeeping", "bookkeeping")]


def best_ms(fn, *args, repeats=REPEATS):
    out = jax.block_until_ready(fn(*args))  # compiles
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t)
    return 1e3 * min(times), out


def profile(prob, solver):
    memory, ls_obj = solver.quasi_newton_memory(), solver.line_search_for(prob)
    step = jax.jit(lambda p, s: solver.step(p, s))
    state = solver.init(prob, prob.zeros())
    for _ in range(WARM_STEPS):
        state = step(prob, state)
    w, S = state.core.w, state.S
    r = {"status": int(state.status), "J": float(state.core.value)}

    r["Xw"], _ = best_ms(jax.jit(lambda p, w: p.scores(w)), prob, w)
    r["Xtu"], _ = best_ms(jax.jit(lambda p, u: p.rmv(u)), prob, state.u)
    r["Bv"], _ = best_ms(jax.jit(lambda m, g: memory.apply(m, g)), state.mem, state.g)
    for form in ("two_loop", "compact"):  # each form alone (times only: a CPU state has no
        # SᵀY for the compact form)
        r[f"Bv_{form}"], _ = best_ms(jax.jit(getattr(memory, f"apply_{form}")), state.mem,
                                     state.g)
    r["direction"], d = best_ms(jax.jit(
        lambda p, s: find_direction(p, memory, s.mem, s.core.w, s.S, s.g, s.u, s.g_reg,
                                    solver.eps, solver.k_max)), prob, state)
    k = int(d.iterations)
    r["direction_iterations"] = k
    r["dir_Xp"], r["dir_Xtu"], r["dir_Bv"] = ((1 + k) * r["Xw"], k * r["Xtu"],
                                                    (1 + k) * r["Bv"])
    r["dir_rest"] = r["direction"] - r["dir_Xp"] - r["dir_Xtu"] - r["dir_Bv"]
    r["dual"], _ = best_ms(jax.jit(
        lambda p, d, S: p.dual_value(d.ubar, S=S, Xtu=d.gbar - d.rbar)), prob, d, S)
    search = {}
    for name, obj in (("line_search", ls_obj), ("ls_sort", ExactLineSearch("sort")),
                      ("ls_bisect", ExactLineSearch("bisect")),
                      ("ls_multisect", ExactLineSearch("multisect"))):
        r[name], search[name] = best_ms(jax.jit(
            lambda p, w, S, d, obj=obj: obj.search(p, w, S, d.p, d.dS)), prob, w, S, d)
    ls = search["line_search"]
    if (prob.num_outputs or 1) > 1:  # the envelope walk alone, on the step's own lines
        r["kinks"], _ = best_ms(jax.jit(lambda p, w, S, d: kinks(*p.line(w, S, d.p, d.dS)[:2])),
                                prob, w, S, d)
    r["line_search_bracket"], r["kinks_passed"] = ls_obj.bracket, int(ls.evaluations)
    r["eta_sort_equals_bisect"] = bool(search["ls_sort"].eta == search["ls_bisect"].eta)
    r["eta_multisect_equals_bisect"] = bool(
        search["ls_multisect"].eta == search["ls_bisect"].eta)
    eta = jax.numpy.where(d.ok & ls.ok & (ls.eta > 0), ls.eta, 0.0)
    w_new, S_new = w + eta * d.p, S + eta * d.dS
    r["subgradient"], _ = best_ms(jax.jit(
        lambda p, w, S, d, th: p.certified_subgradient(w, S, d.p, d.dS, th)),
        prob, w_new, S_new, d, ls.theta)
    r["subgrad_Xtu"] = r["Xtu"]
    r["subgrad_rest"] = r["subgradient"] - r["Xtu"]
    new, _, pending = jax.jit(lambda p, s: solver.propose(p, s))(prob, state)
    # only .mem out: commit changes nothing else, and the state's 20 buffers would add
    # their own call overhead
    r["commit"], _ = best_ms(jax.jit(lambda s, q: solver.commit(s, q).mem), new, pending)
    r["dispatch"], _ = best_ms(jax.jit(lambda p, s: s.core.value + 1), prob, state)
    r["step"], _ = best_ms(step, prob, state)
    r["parts_sum"] = r["direction"] + r["dual"] + r["line_search"] + r["subgradient"] + r[
        "commit"]
    r["bookkeeping"] = r["step"] - r["parts_sum"]
    r["bookkeeping_less_dispatch"] = r["bookkeeping"] + 5 * r["dispatch"]
    r["step_in_loop"] = in_loop_ms(prob, solver)
    return r


def in_loop_ms(prob, solver, k0=20, k1=40):
    t = {}
    for k in (k0, k1):
        t[k], sol = best_ms(lambda p, k=k: nsjax.solve(p, solver, max_steps=k, tol=0.0), prob,
                            repeats=3)
        assert int(sol.num_steps) == k, f"solve stopped at {int(sol.num_steps)} of {k} steps"
    return (t[k1] - t[k0]) / (k1 - k0)


def rows(r):
    """(part, ms) lines of the table, in print order."""
    k = r["direction_iterations"]
    return [("X w (alone)", r["Xw"]), ("Xᵀu (alone)", r["Xtu"]),
            ("B v (alone)", r["Bv"]), ("  two-loop form", r["Bv_two_loop"]),
            ("  compact form", r["Bv_compact"]),
            (f"direction (k = {k})", r["direction"]),
            (f"  X p, est. {1 + k} x", r["dir_Xp"]), (f"  Xᵀu, est. {k} x", r["dir_Xtu"]),
            (f"  B v, est. {1 + k} x", r["dir_Bv"]), ("  rest", r["dir_rest"]),
            ("dual value", r["dual"]),
            (f"line search ({r['line_search_bracket']})", r["line_search"]),
            ("  sort bracket", r["ls_sort"]), ("  bisect bracket", r["ls_bisect"]),
            ("  multisect bracket", r["ls_multisect"]),
            *([("  of it the kinks (walk)", r["kinks"])] if "kinks" in r else []),
            ("new subgradient", r["subgradient"]), ("  of it Xᵀu", r["subgrad_Xtu"]),
            ("memory update", r["commit"]), ("sum of the 5 parts", r["parts_sum"]),
            ("bookkeeping (step - sum)", r["bookkeeping"]),
            ("  + 5 x call overhead", r["bookkeeping_less_dispatch"]),
            ("whole step", r["step"]), ("call overhead (empty jit)", r["dispatch"]),
            ("step in solve's loop", r["step_in_loop"])]


def plot(results, title, path):
    from _common import plot_step_split

    plot_step_split(
        results, STACK, {k for k, _ in STACK if "Xp" in k or "Xtu" in k},
        lambda r: f"step {r['step']:.3g} ms, in loop {r['step_in_loop']:.3g} ms",
        "ms (bars: the parts, hatched: products with X, Xᵀ, negative parts not drawn; |: "
        "whole step; x: a step in solve's loop)", title, path, "step_in_loop", "step")


def problems(args):
    """(label, Problem, description) for each profiled case."""
    dtypes = DTYPES.items()
    if args.multiclass:
        n = 3_000 if args.quick else 16_000
        X, y = nsjax.datasets.synthetic_sparse(n, 16, 1.0, n_classes=26, seed=SEED)
        for lam in MULTICLASS_LAMS:
            for dt_name, dt in dtypes:
                yield (f"Letter-like lam={lam:g}, {dt_name}", nsjax.Problem(
                    nsjax.losses.MulticlassHinge(), nsjax.regularizers.L2(lam), X.toarray(), y,
                    dtype=dt), dict(n=n, d=16, classes=26, lam=lam, dtype=dt_name))
        return
    n, d = (5_000, 2_000) if args.quick else (50_000, 20_000)
    for ds, power in DATASETS.items():
        X, y = nsjax.datasets.synthetic_sparse(n, d, DENSITY, seed=SEED, power=power)
        y = np.where(y > 0, 1.0, -1.0)
        for dt_name, dt in dtypes:
            yield (f"{ds}, {dt_name}", nsjax.Problem(
                nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y, dtype=dt),
                dict(n=n, d=d, nnz=int(X.nnz), power=power, lam=LAM, dtype=dt_name))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="5,000 x 2,000 problems (multiclass: n = 3,000)")
    parser.add_argument("--multiclass", action="store_true",
                        help="the Crammer–Singer hinge on the Letter-like set instead")
    args = parser.parse_args(argv)
    name = "step_profile" + ("_multiclass" if args.multiclass else "") + (
        "_quick" if args.quick else "")
    sys.path.insert(0, str(HERE))
    from _common import machine, save_json

    solver = nsjax.solvers.SubLBFGS(memory=MEMORY, certify=False)
    results = {}
    what = "multiclass hinge" if args.multiclass else f"binary hinge, lam={LAM:g}"
    print(f"subLBFGS(memory={MEMORY}, certify=False), {what}, state after {WARM_STEPS} "
          f"steps; ms best of {REPEATS}")
    print(f"{'case':34s} {'part':28s} {'ms':>9s} {'% step':>7s}")
    for label, prob, about in problems(args):
        r = profile(prob, solver)
        r.update(about)
        results[label] = r
        for part, ms in rows(r):
            print(f"{label:34s} {part:28s} {ms:9.3f} {100 * ms / r['step']:6.1f}%",
                  flush=True)
        print(f"{'':34s} status {r['status']}, J = {r['J']:.10g}, kinks passed "
              f"{r['kinks_passed']}, same eta: sort and bisect "
              f"{r['eta_sort_equals_bisect']}, multisect and bisect "
              f"{r['eta_multisect_equals_bisect']}")
    out = HERE / "results" / f"{name}.json"
    save_json(out, {"machine": machine(), "memory": MEMORY, "warm_steps": WARM_STEPS,
                    "repeats": REPEATS, "ms": results})
    png = HERE / f"{name}.png"
    plot(results, f"subLBFGS step split, {what}, after {WARM_STEPS} steps", png)
    print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()

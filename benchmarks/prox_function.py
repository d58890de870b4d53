"""Zhang et al. (2010), Sec. 5.6: AGM-EF's primal scheme with the optimized prox-function
against the uniform one on ill-conditioned data, counted in steps to a certified gap (issue:
"a benchmark shows the number of iterations with and without it on ill-conditioned data").

Objective (binary hinge SVM, no bias):

    J(w) = lam/2 ||w||^2 + (1/n) sum_i max(0, 1 - y_i x_i^T w),   y_i in {-1, +1}.

The primal scheme (Sec. 5.1.1) runs AGM-EF on J_mu(w) = lam/2 ||w||^2 + g*_mu(Xw), the hinge
smoothed with a prox-function d on the dual box Q_2 = [0, 1/n]^n:

* "uniform": d(alpha) = 1/2 ||alpha||^2, mu = 2 n eps (eq. 57), L = sigma_max(X)^2 / mu;
* "optimized" (Sec. 5.6): d(alpha) = 1/2 sum_i b_i^2 alpha_i^2 with b_i^2 = |x_i^T v*|, v*
  the top eigenvector of X^T X (power iteration in nsjax; b_i^2 floored at WEIGHT_FLOOR =
  1e-2 times their mean), mu_i = (eps / D) b_i^2 with D = sum_i b_i^2 / (2 n^2) (eq. 70),
  L = lambda_max(X^T diag(1/mu) X).

The paper's claim: this lowers the Lipschitz constant of the smoothed objective, by the
factor (sum_i |x_i^T v|)^2 / (n sum_i (x_i^T v)^2) <= 1 in its bound (71)-(72) (evaluated
here at v = v*, the direction the paper optimizes: "L.D bound" in the table), and so the
number of iterations. The bound swaps a min and a max, so the true ratio of the two L
(lambda_max over all directions) can differ from it. Two such ratios are reported: "L0
ratio", the solvers' own first estimates (nsjax's v from 20 power iterations), and "L0 v*",
the same computed exactly in numpy with the exact v* (eigh): where the top eigenvalues of
X^T X are close, 20 power iterations give a v far from v* (while its Rayleigh quotient is
close to the top one), and the weights, so L, differ.

Data: seeded ill-conditioned problems, X = N(0, 1) (n x d) with row i multiplied by
exp(sigma z_i), z_i ~ N(0, 1), for sigma in {0 (the well-conditioned control), 1, 2};
labels sign(X w_true + 0.5 ||w_true|| N(0, 1)) (noise on the unscaled scale, so the long
rows are nearly separable and the short ones noisy; both classes checked). n = 2000, d = 50
by default (400 x 20 with --quick). Plus the scikit-learn digits, even vs odd
(``nsjax.datasets.digits_binary()``: 1797 x 64, pixels in [0, 1], unstandardized), in the
default run only. lam in {1e-3, 1e-4} (1e-3 only with --quick). float64 on the CPU.

Methods: ``AGMEF(scheme="primal", prox_function=p)`` and ``AGMEF1(scheme="primal",
prox_function=p)`` for p in {"uniform", "optimized"}; default epsilon (1e-6), default
adaptive L (Alg. 2 / Alg. 4: L divided by gamma_d = 2 before each step, doubled until the
step's inequality holds), w0 = 0.

Measured per run: steps to the certified relative gap ``sol.gap <= tol * max(1, |J|)``, tol
= 1e-4 (``nsjax.solve(prob, solver, tol=1e-4, max_steps=cap)``, ``sol.num_steps``,
``sol.result``; cap 50,000, 20,000 with --quick); the wall time of the compiled run (a
first call with tol = 1e30 compiles the very program, tol being traced, and stops at step 0;
then the full run is timed once; the time ratio is optimized / uniform, and the machine may
be shared: load averages are in the JSON); the solver's first L estimate
(``solver.first_lipschitz`` of ``solver.smoothing_and_norm``: what init starts from, before
AGMEF's step 1 divides it by gamma_d or AGMEF1's init raises it);
and the trajectory of the adaptive L: ``solver.init`` then ``solver.step`` repeated
``num_steps`` times in one compiled ``lax.fori_loop`` (the same deterministic sequence the
solve loop runs), recording ``state.lipschitz`` after each step: its final value and its
geometric mean over the run ("L final", "L gmean"). ``Solution`` exposes no L, hence the
replay (a second full run per method; not timed).

Fixed L (the regime of the paper's bound, which is about L): AGMEF primal with gamma_d =
1 + 1e-6, so that L stays at its first estimate (raised only where a step's inequality
fails), for a fixed number of steps (10,000; 2,000 with --quick), no early stop, at the
first lam only; reported: the relative certified gap and (J - J_best) / max(1, |J_best|)
at the last step (J_best: the lowest J of the adaptive runs), uniform vs optimized.

Check (a wrong answer stops the report): the two prox-functions solve the same problem, so
each run's certified lower bound J - gap must not exceed the other's J (up to 1e-12
relative), and all values and gaps must be finite.

Output: the printed table, ``<out>/prox_function.json`` (per run: steps, status, J, gap,
wall and compile times, stats, first / final / mean L, the L trajectory on a log grid of
steps; per problem the numpy L ratios; the machine) and ``benchmarks/prox_function.png``
(steps to the gap, uniform vs optimized, per problem and lam; and the adaptive L against
the step on the sigma = 2 problem; and the fixed-L runs' J - J_best against the step).
``--quick`` writes ``*_quick.*``.

    python benchmarks/prox_function.py [--quick] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import nsjax
from nsjax.solvers.agm_ef import WEIGHT_FLOOR
from nsjax.testing import top_eigenpair

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, pyplot, save_figure, save_json, timed_solve  # noqa: E402

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore", nsjax.ConvergenceWarning)

TOL = 1e-4
EPSILON = 1e-6  # AGMEF's default for the primal scheme (stated, and checked below)
PROX = ("uniform", "optimized")
SOLVERS = {"AGMEF": nsjax.solvers.AGMEF, "AGMEF1": nsjax.solvers.AGMEF1}
CHECK_SLACK = 1e-12
NOISE = 0.5
FIXED_GAMMA_D = 1.0 + 1e-6  # the fixed-L runs: L divided by this before each step
TRACE_POINTS = 120  # L trajectory kept in the JSON: this many steps on a log grid


@dataclasses.dataclass(frozen=True)
class Config:
    n: int
    d: int
    sigmas: tuple[float, ...]
    lams: tuple[float, ...]
    cap: int
    digits: bool
    fixed_steps: int  # steps of the fixed-L runs (first lam only)


FULL = Config(2000, 50, (0.0, 1.0, 2.0), (1e-3, 1e-4), 50_000, True, 10_000)
QUICK = Config(400, 20, (0.0, 2.0), (1e-3,), 20_000, False, 2_000)


# ----------------------------------------------------------------------------------------
# Data
# ----------------------------------------------------------------------------------------


def synthetic(n: int, d: int, sigma: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Rows N(0, I_d) scaled by exp(sigma z), labels sign(X w_true + noise), both classes."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * np.exp(sigma * rng.normal(size=(n, 1)))
    w_true = rng.normal(size=d)
    s = X @ w_true + NOISE * np.linalg.norm(w_true) * rng.normal(size=n)
    y = np.where(s > 0, 1.0, -1.0)
    if np.unique(y).size < 2:  # not expected with these sizes; centred if it happens
        y = np.where(s > np.median(s), 1.0, -1.0)
    return X, y


def problems(cfg: Config) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {f"sigma={s:g} ({cfg.n}x{cfg.d})": synthetic(cfg.n, cfg.d, s) for s in cfg.sigmas}
    if cfg.digits:
        X, y = nsjax.datasets.digits_binary()
        out["digits even/odd (1797x64)"] = (np.asarray(X, float), np.where(y > 0, 1.0, -1.0))
    return out


def lipschitz_ratios(X: np.ndarray, y: np.ndarray) -> dict:
    """The paper's bound ratio at v* and the exact ratio of the two first L (numpy, eigh).

    uniform: L_u = lambda_max(X^T X) / (2 n eps); optimized: L_o = (sum b^2 / (2 n^2 eps))
    lambda_max(X^T diag(1/b^2) X), b^2 = |X v*| floored as in nsjax. Ratio L_o / L_u."""
    n = X.shape[0]
    evals, evecs = np.linalg.eigh(X.T @ X)
    v = evecs[:, -1]
    a = X @ v
    bound = float(np.sum(np.abs(a)) ** 2 / (n * np.sum(a * a)))
    b2 = np.abs(a)
    floored = int(np.sum(b2 < WEIGHT_FLOOR * b2.mean()))
    b2 = np.maximum(b2, WEIGHT_FLOOR * b2.mean())
    weighted = np.linalg.eigvalsh(X.T @ (X / b2[:, None]))[-1]
    L_u = evals[-1] / (2 * n * EPSILON)
    L_o = b2.sum() / (2 * n * n * EPSILON) * weighted
    # nsjax's own v (20 power iterations, as in the solvers) against v*
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1.0), X, y)
    v_ns = np.asarray(top_eigenpair(prob.X, 20)[1])
    # cond(X^T X) and the spread of the row norms, to describe the conditioning
    norms = np.linalg.norm(X, axis=1)
    return {"ld_bound_ratio_at_vstar": bound, "L0_ratio_exact": float(L_o / L_u),
            "L0_uniform_exact": float(L_u), "L0_optimized_exact": float(L_o),
            "weights_floored": floored,
            "cos_nsjax_v_vstar": float(abs(v_ns @ v) / np.linalg.norm(v_ns)),
            "eig2_over_eig1": float(evals[-2] / evals[-1]),
            "cond_XtX": (float(evals[-1] / evals[0]) if evals[0] > 1e-12 * evals[-1]
                         else None),  # None: singular (digits has all-zero pixels)
            "row_norm_max_over_median": float(norms.max() / np.median(norms))}


# ----------------------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------------------


@functools.partial(jax.jit, static_argnames=("solver", "cap"))
def l_trace(prob: nsjax.Problem, solver: Any, cap: int, steps: jax.Array) -> jax.Array:
    """state.lipschitz after each of the first ``steps`` steps (NaN after), from w0 = 0."""
    state = solver.init(prob, prob.start())
    buf = jnp.full(cap, jnp.nan, prob.dtype)

    def body(k, carry):
        state, buf = carry
        state = solver.step(prob, state)
        return state, buf.at[k].set(state.lipschitz)

    return jax.lax.fori_loop(0, steps, body, (state, buf))[1]


def log_grid(steps: int, points: int) -> np.ndarray:
    """Step indices 1..steps, about log-spaced (always 1 and steps)."""
    if steps <= 0:
        return np.zeros(0, int)
    return np.unique(np.round(np.geomspace(1, steps, points)).astype(int))


def run_one(prob: nsjax.Problem, solver: Any, cap: int) -> dict:
    first, _ = timed_solve(prob, solver, cap, 1e30)  # compiles; stops at step 0
    wall, sol = timed_solve(prob, solver, cap, TOL)
    steps = int(sol.num_steps)
    mu, sq, _ = solver.smoothing_and_norm(prob)
    L_first = float(solver.first_lipschitz(prob, sq, mu, prob.scores(prob.start())))
    trace = np.asarray(l_trace(prob, solver, cap, jnp.asarray(steps, jnp.int32)))[:steps]
    grid = log_grid(steps, TRACE_POINTS)
    value, gap = float(sol.value), float(sol.gap)
    return {
        "steps": steps, "result": nsjax.RESULTS(int(sol.result)).name,
        "value": value, "gap": gap, "lower_bound": value - gap,
        "rel_gap": gap / max(1.0, abs(value)), "wall_s": wall,
        "compile_s": first,  # the step-0 call: compile + a negligible run
        "stats": {k: int(v) for k, v in sol.stats.items()},
        "L_first": L_first,
        "L_final": float(trace[-1]) if steps else None,
        "L_gmean": float(np.exp(np.mean(np.log(trace)))) if steps else None,
        "L_min": float(trace.min()) if steps else None,
        "L_trace": {"step": grid.tolist(), "L": trace[grid - 1].tolist()},
    }


def fixed_l_run(prob: nsjax.Problem, p: str, steps: int, j_best: float) -> dict:
    """AGMEF primal with L (almost) never lowered: gamma_d = FIXED_GAMMA_D, so L stays at
    its first estimate (raised only if a step's inequality fails). ``steps`` steps, no
    early stop; the certified relative gap and J - J_best (J_best: the lowest J of the
    adaptive runs, within tol of the optimum) at a log grid of steps."""
    solver = nsjax.solvers.AGMEF(scheme="primal", prox_function=p, gamma_d=FIXED_GAMMA_D)
    sol = nsjax.solve(prob, solver, tol=0.0, max_steps=steps)
    best = np.asarray(sol.history.best, float)
    gaps = np.asarray(sol.history.gap, float)
    grid = log_grid(int(sol.num_steps), 40)
    value, gap = float(sol.value), float(sol.gap)
    return {"steps": int(sol.num_steps), "result": nsjax.RESULTS(int(sol.result)).name,
            "gamma_d": FIXED_GAMMA_D, "value": value, "gap": gap, "lower_bound": value - gap,
            "rel_gap": gap / max(1.0, abs(value)),
            "rel_subopt": (value - j_best) / max(1.0, abs(j_best)), "j_best": j_best,
            "stats": {k: int(v) for k, v in sol.stats.items()},
            "curve": {"step": grid.tolist(),
                      "rel_gap": (gaps[grid - 1] / np.maximum(1.0, np.abs(best[grid - 1]))
                                  ).tolist(),
                      "rel_subopt": ((best[grid - 1] - j_best) / max(1.0, abs(j_best))
                                     ).tolist()}}


def bench_problem(X: np.ndarray, y: np.ndarray, lam: float, cfg: Config) -> dict:
    load_before = os.getloadavg()
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    runs: dict[str, dict[str, dict]] = {}
    for name, cls in SOLVERS.items():
        runs[name] = {}
        for p in PROX:
            solver = cls(scheme="primal", prox_function=p)
            assert solver.target == EPSILON
            runs[name][p] = run_one(prob, solver, cfg.cap)
    fixed = None
    if lam == cfg.lams[0]:
        j_best = min(r["value"] for per in runs.values() for r in per.values())
        fixed = {p: fixed_l_run(prob, p, cfg.fixed_steps, j_best) for p in PROX}
    # Check: every run's certified lower bound is below every other run's J.
    all_runs = [(f"{m} {p}", r) for m, per in runs.items() for p, r in per.items()]
    all_runs += [(f"AGMEF {p}, fixed L", r) for p, r in (fixed or {}).items()]
    bad = []
    for a, ra in all_runs:
        if not all(math.isfinite(ra[k]) for k in ("value", "gap")):
            bad.append(f"{a}: non-finite J or gap")
        for b, rb in all_runs:
            if ra["lower_bound"] > rb["value"] + CHECK_SLACK * max(1.0, abs(rb["value"])):
                bad.append(f"{a}: J - gap = {ra['lower_bound']:.15g} > J of {b} = "
                           f"{rb['value']:.15g}")
    return {"lam": lam, "runs": runs, "fixed_L": fixed, "check_violations": bad,
            "loadavg_before": load_before, "loadavg_after": os.getloadavg()}


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------


def _steps(r: dict) -> str:
    mark = "" if r["result"] == "successful" else "+"  # + : stopped at the cap
    return f"{r['steps']}{mark}"


def table(results: dict) -> list[str]:
    head = (f"{'problem':28s} {'lam':>6s} {'method':7s} {'steps unif':>10s} {'steps opt':>10s} "
            f"{'ratio':>6s} {'time ratio':>10s} {'L.D bound':>9s} {'L0 ratio':>8s} "
            f"{'L0 v*':>6s} "
            f"{'L final unif':>12s} {'L final opt':>12s} {'Lgmean ratio':>12s}")
    lines = [head, "-" * len(head)]
    for ds, entry in results.items():
        lr = entry["lipschitz"]
        for res in entry["per_lam"]:
            for m, per in res["runs"].items():
                u, o = per["uniform"], per["optimized"]
                lines.append(
                    f"{ds:28s} {res['lam']:6.0e} {m:7s} {_steps(u):>10s} {_steps(o):>10s} "
                    f"{o['steps'] / u['steps']:6.3f} {o['wall_s'] / u['wall_s']:10.3f} "
                    f"{lr['ld_bound_ratio_at_vstar']:9.3f} {o['L_first'] / u['L_first']:8.3f} "
                    f"{lr['L0_ratio_exact']:6.3f} "
                    f"{u['L_final']:12.3g} {o['L_final']:12.3g} "
                    f"{o['L_gmean'] / u['L_gmean']:12.3f}")
    print("\n".join(lines), flush=True)
    return lines


def fixed_table(results: dict) -> list[str]:
    """The fixed-L runs: relative certified gap and J - J_best after the same steps."""
    head = (f"{'problem':28s} {'lam':>6s} {'steps':>6s} {'gap unif':>10s} {'gap opt':>10s} "
            f"{'ratio':>6s} {'subopt unif':>11s} {'subopt opt':>11s} {'ratio':>6s} "
            f"{'L0 ratio':>8s} {'raises u/o':>10s}")
    lines = ["", "Fixed L (AGMEF, gamma_d = 1 + 1e-6: L stays at its first estimate), "
                 "relative certified gap and (J - J_best) / max(1, |J_best|) after a fixed "
                 "number of steps:", head, "-" * len(head)]
    for ds, entry in results.items():
        for res in entry["per_lam"]:
            f = res.get("fixed_L")
            if not f:
                continue
            u, o = f["uniform"], f["optimized"]
            L0 = res["runs"]["AGMEF"]
            raises = (f"{u['stats']['lipschitz_increases']}/"
                      f"{o['stats']['lipschitz_increases']}")
            lines.append(
                f"{ds:28s} {res['lam']:6.0e} {u['steps']:6d} {u['rel_gap']:10.3g} "
                f"{o['rel_gap']:10.3g} {o['rel_gap'] / u['rel_gap']:6.3f} "
                f"{u['rel_subopt']:11.3g} {o['rel_subopt']:11.3g} "
                f"{o['rel_subopt'] / u['rel_subopt']:6.3f} "
                f"{L0['optimized']['L_first'] / L0['uniform']['L_first']:8.3f} "
                f"{raises:>10s}")
    print("\n".join(lines), flush=True)
    return lines


def plot(results: dict, lams: tuple[float, ...], path: Path) -> None:
    plt = pyplot()
    ncols = len(lams) + 2
    fig, axes = plt.subplots(1, ncols, figsize=(5.2 * ncols, 4.4), squeeze=False)
    names = list(results)
    colors = {("AGMEF", "uniform"): "C0", ("AGMEF", "optimized"): "C1",
              ("AGMEF1", "uniform"): "C2", ("AGMEF1", "optimized"): "C3"}
    width = 0.2
    for c, lam in enumerate(lams):
        ax = axes[0][c]
        x = np.arange(len(names))
        for j, (m, p) in enumerate(colors):
            steps = []
            for ds in names:
                res = next(r for r in results[ds]["per_lam"] if r["lam"] == lam)
                steps.append(res["runs"][m][p]["steps"])
            ax.bar(x + (j - 1.5) * width, steps, width, color=colors[(m, p)],
                   label=f"{m} {p}", hatch="//" if p == "optimized" else None,
                   edgecolor="white")
        ax.set_yscale("log")
        ax.set_xticks(x)
        ax.set_xticklabels([n.replace(" (", "\n(") for n in names], fontsize=7)
        ax.set_ylabel(f"steps to certified gap <= {TOL:g} max(1, |J|)")
        ax.set_title(f"lam = {lam:.0e}", fontsize=9)
        ax.grid(True, axis="y", which="major", alpha=0.3)
        ax.legend(fontsize=7)
    # The adaptive L along the run, on the most ill-conditioned synthetic problem.
    ax = axes[0][-2]
    ds = [n for n in names if n.startswith("sigma=")][-1]
    res = results[ds]["per_lam"][0]
    for (m, p), color in colors.items():
        r = res["runs"][m][p]
        ax.plot(r["L_trace"]["step"], r["L_trace"]["L"], color=color, label=f"{m} {p}",
                ls="--" if p == "optimized" else "-")
        ax.plot([1], [r["L_first"]], "o", color=color, ms=4)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step k")
    ax.set_ylabel("adaptive L_k (o: first estimate)")
    ax.set_title(f"{ds}, lam = {res['lam']:.0e}", fontsize=9)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    # Fixed L: J - J_best along the run, per problem (solid: uniform, dashed: optimized).
    ax = axes[0][-1]
    for i, ds in enumerate(names):
        fixed = results[ds]["per_lam"][0].get("fixed_L")
        for p in PROX:
            cu = fixed[p]["curve"]
            sub = np.asarray(cu["rel_subopt"], float)
            ok = sub > 0
            ax.plot(np.asarray(cu["step"])[ok], sub[ok], color=f"C{i}",
                    ls="--" if p == "optimized" else "-",
                    label=f"{ds.split(' (')[0]} {p}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("step k")
    ax.set_ylabel("(J - J_best) / max(1, |J_best|)")
    ax.set_title(f"AGMEF with L fixed at its first estimate (gamma_d = 1 + 1e-6), "
                 f"lam = {lams[0]:.0e}", fontsize=8)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=6)
    save_figure(plt, fig, "Paper 003 Sec. 5.6: AGM-EF primal scheme, uniform vs optimized "
                "prox-function (eps = 1e-6, adaptive L)", path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="400 x 20, sigma in {0, 2}, lam = 1e-3, no digits")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for prox_function.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/prox_function[_quick].png)")
    args = parser.parse_args(argv)
    cfg = QUICK if args.quick else FULL
    suffix = "_quick" if args.quick else ""
    png = args.png or HERE / f"prox_function{suffix}.png"
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    load_start = os.getloadavg()
    host = machine()
    results: dict[str, dict] = {}
    for ds, (X, y) in problems(cfg).items():
        entry = {"n": int(X.shape[0]), "d": int(X.shape[1]),
                 "positives": int(np.sum(y > 0)), "lipschitz": lipschitz_ratios(X, y),
                 "per_lam": []}
        results[ds] = entry
        for lam in cfg.lams:
            t0 = time.perf_counter()
            entry["per_lam"].append(bench_problem(X, y, lam, cfg))
            print(f"[{time.perf_counter() - start:6.1f} s] {ds}, lam={lam:.0e} done in "
                  f"{time.perf_counter() - t0:.1f} s (load {os.getloadavg()[0]:.1f})",
                  flush=True)
    load_end = os.getloadavg()
    print()
    lines = table(results)
    lines += fixed_table(results)
    bad = [(ds, r["lam"], v) for ds, e in results.items() for r in e["per_lam"]
           for v in r["check_violations"]]
    # The solvers' first L against the numpy exact values (power iteration: close, below).
    l0_check = {}
    for ds, e in results.items():
        lr, r = e["lipschitz"], e["per_lam"][0]["runs"]["AGMEF"]
        l0_check[ds] = {"uniform": r["uniform"]["L_first"] / lr["L0_uniform_exact"],
                        "optimized": r["optimized"]["L_first"] / lr["L0_optimized_exact"]}
    notes = [
        f"steps: to sol.gap <= {TOL:g} max(1, |J|) (+: stopped at the cap {cfg.cap:,}); "
        "ratio: optimized / uniform steps; time ratio: optimized / uniform wall time of the "
        "compiled run (one run each, machine possibly shared).",
        "L.D bound: (sum|x_i^T v*|)^2 / (n sum (x_i^T v*)^2), the paper's factor (71)-(72) "
        "at v*; L0 ratio: the solvers' first L estimates, optimized / uniform; L0 v*: the "
        "same with the exact v* (numpy eigh) in the weights.",
        "L final: the adaptive L after the last step; Lgmean ratio: geometric mean of L_k "
        "over the run, optimized / uniform (replayed init + step, see the docstring).",
        "solver first L / the exact L with v* (optimized: its own v differs from v*): "
        + "; ".join(
            f"{ds.split(' ')[0]} unif {v['uniform']:.4f} opt {v['optimized']:.4f}"
            for ds, v in l0_check.items()),
        f"load average (1, 5, 15 min) at start {tuple(round(v, 2) for v in load_start)}, at "
        f"end {tuple(round(v, 2) for v in load_end)} on {os.cpu_count()} cores; "
        f"{time.perf_counter() - start:.0f} s in all.",
        "check: " + ("every run's certified lower bound J - gap <= every other run's J on "
                     "the same problem, all finite" if not bad else f"VIOLATIONS: {bad}"),
    ]
    print("\n" + "\n".join(notes), flush=True)
    payload = {
        "benchmark": "Zhang et al. (2010) Sec. 5.6: AGMEF / AGMEF1 primal scheme, prox_function "
                     "uniform vs optimized, steps to a certified gap",
        "mode": "quick" if args.quick else "full", "config": dataclasses.asdict(cfg),
        "tol": TOL, "epsilon": EPSILON, "weight_floor": WEIGHT_FLOOR, "noise": NOISE,
        "solvers": {m: {p: repr(cls(scheme="primal", prox_function=p)) for p in PROX}
                    for m, cls in SOLVERS.items()},
        "machine": host, "loadavg_start": load_start, "loadavg_end": load_end,
        "total_time_s": time.perf_counter() - start, "table": lines, "notes": notes,
        "first_L_over_exact": l0_check, "results": results,
    }
    json_path = args.out / f"prox_function{suffix}.json"
    save_json(json_path, payload)
    plot(results, cfg.lams, png)
    print(f"\nwrote {json_path} and {png} ({time.perf_counter() - start:.0f} s in all)")
    if bad:
        raise SystemExit(f"check failed: {bad}")


if __name__ == "__main__":
    main()

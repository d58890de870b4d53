"""Why subLBFGS's tail is slow on small kinked problems (issue 9, item 1): a diagnostic.

Drives `SubLBFGS` / `SubBFGS` step by step on breast_cancer (λ = 1e-3) and on the first
three seeded problems of tests/test_sublbfgs.py (n = 200, d = 50), 2000 steps each, and
records per step: (J − J*)/J*, the step length η, direction-finding iterations (and whether
it found a descent direction, hit k_max, its final model gap ε), skipped memory updates,
restarts, sᵀy and the secant scale sᵀy/yᵀy, the kinks active at w_t, the certification
residual g_{t+1}ᵀp / |g_tᵀp|, and the decrease the model promises (½ ḡᵀBḡ). J* and w* come
from BMRM(line_search="exact", tol=1e-12), checked against cvxpy (Clarabel) to 1e-8; M* is
the margin set at w* and r = rank X_{M*} the number of independent kink directions. `init`
and one instrumented step (`solver.advance`, i.e. `solver.step` plus the `Direction` it
found, and the diagnostics) are jitted once per solver; data are arguments. Runs continue
past the stall rule and stop only at a failure status (the state no longer changes).

CONCLUSION. No defect and no tolerance stops the tail: the algorithm does, through two
parts of the default configuration, each enough on its own to stall it (numbers from the
recorded run, `results/sublbfgs_tail.json`; "→" = final (J − J*)/J* after 2000 steps, or
where the run ended):

1. Memory smaller than the number of kink directions at the optimum. |M*| = r = 19
   (breast_cancer), 48, 47, 48 (seeds 0, 1, 2; X_{M*} has full row rank in all four).
   With B₀ = I, subLBFGS reaches 1e-6 only once m ≳ r. breast_cancer: m = 15 → 2.2e-4
   (direction finding fails at step 422), and the sweep gives m = 16 → 2.7e-4, 17 →
   6.9e-5, 18 → 1e-6 at step 356, 19 → 311, 20 → 241 (m = 30 → 228, m = 60 → 220).
   Seeds 0/1/2: m = 30 → 2.1e-4 / 2.7e-4 / 6.9e-3; m = r − 4 → 3.7e-6 / 6.1e-6 / 2.2e-4;
   m = r → 1e-6 at 235 / 305 steps / 3.3e-6; m = 60 → 1e-6 at 226 / 259 / 521 steps.
   B₀ = I/λ, the exact inverse Hessian of J away from its kinks, does not rescue m = 15
   either (→ 2.4e-5, 9.1e-4, 5.4e-4, 2.3e-2): no scale of B₀ makes up for missing pairs.
   Per step, the unscaled m < r runs (m = 15, 30, r − 4) stall like this over their
   last 500 steps: median η 5e-8 to 8e-4 and ‖s‖ 1e-8 to 5e-4 (the exact line search
   stops almost at once, at a kink the model does not know), 3 to 44 direction-finding
   iterations per step (more than 12 in 8 of the 10 runs), k_max hit 7 to 206 times, up to
   17 memory restarts; they end in `direction_failed` with B = I (breast_cancer m = 15 at
   2.2e-4, step 422) or crawl (seed 2 m = 30: 2.4e-2, 1.6e-2, 1.1e-2, 6.9e-3 at steps 250,
   500, 1000, 1837).

2. Secant scaling B₀ = (sᵀy / yᵀy) I (Nocedal and Wright), newest pair. On a kinked J,
   y = g_{t+1} − g_t carries the slope jumps of the kinks crossed, which do not shrink
   with ‖s‖, so the scale follows the step length (corr(log sᵀy/yᵀy, log ‖s‖) = 0.89 to
   0.94 over the last 500 steps of the default runs) and collapses: median 1.9e-5,
   1.8e-5, 1.1e-5, 2.7e-7, against 1/λ = 1000, 39, 243, 763 for the smooth part of J.
   Every direction outside the stored pairs is shrunk by 2e6 to 3e9: the model promises
   only 3e-5 to 9e-5 of what is left (pred/gap, where defined: seed 2 never gets below
   1e-2; 0.04 to 10 for the runs that reach 1e-6),
   direction finding idles (0.0 to 0.2 iterations per step, final model gap 1e-10 to
   1e-8, far below ε = 1e-5), η stays 0.55 to 0.81, steps are ‖s‖ 1e-7 to 1e-5; J creeps:
   breast_cancer 4.8e-3, 2.7e-3, 2.1e-3, 1.3e-3 at steps 250, 500, 1000, 2000 (seed 0:
   1.8e-3, 1.7e-3, 1.6e-3, 1.0e-3). m = 60 ≥ d with scaling fails on all four (→ 1.3e-4,
   3.4e-4, 3.9e-4, 1.4e-2; pred/gap 2e-4 to 1e-3) where m = 60 without converges on all
   four.

   The default (m = 15, scaled) has both; fixing one alone does not reach 1e-6 anywhere
   (m = 15 unscaled → 2.2e-4, 4.1e-4, 1.0e-3, 2.0e-2; m = 60 scaled above).

3. Tolerances do not. ε = 1e-10 with k_max = 1000 (m = 15, unscaled) → 9.7e-5, 3.6e-4,
   4.2e-4, 1.8e-2 (defaults: 2.2e-4, 4.1e-4, 1.0e-3, 2.0e-2) at 270 to 790 direction-
   finding iterations per step. k_max only decides how an m < r run ends: at the last
   step of breast_cancer m = 15 unscaled (B = I) a descent direction exists (min-norm
   subgradient ‖ḡ*‖² = 4.0e-7, by cvxpy) and Alg. 2 finds it in 108 iterations, more than
   the 99 that k_max = 100 allows (checked separately); with k_max = 1000 alone the run
   goes on and stops on the stall rule at 2.2e-4 (step 435).

4. Defects: one small one, and it does not stop the tail. The two-loop recursion matches
   exact rational arithmetic to 3e-15 (checked separately, default run on breast_cancer,
   steps 100 to 700). But the certified subgradient does not always certify:
   |g_{t+1}ᵀp| > 1e-3 |g_tᵀp| on 2 to 33 % of the steps of every run (in the ones that
   converge as often as in the ones that stall; column cert_residual of the JSON), and
   sᵀy ≤ 0, so the update is skipped, on 0 to 34 steps of 2000. Where:
   `Problem.certified_subgradient` (nsjax/problem.py) finds the kinks at w_{t+1} anew,
   by `active_tol` (3.7e-10) on the margins, and mixes every one of them with θ. The line
   search (`exact_line_search`, nsjax/solvers/line_search.py) ties with θ only the kinks
   at exactly η*. So a kink that the step left by less than the tolerance, or one that it
   has not yet reached but lies within the tolerance, gets a side other than the one the
   line search used (breast_cancer, default, step 800: η = 6.6e-8, g_{t+1}ᵀp = −1.4e-5
   where g_tᵀp = −1.3e-5). Fix: build the certified subgradient from the line search's
   own classification of each example, with β = θ·[y_i x_iᵀp < 0] + (1 − θ)·[y_i x_iᵀp > 0]
   on kinks with η_i = η*, β = [y_i x_iᵀp < 0] (the side after the kink) on kinks with
   η_i < η* or on the margin at w_t, and β = [margin at w_t > 0] elsewhere. That means
   returning η_i (or the class of each example) from the line search. Tried separately:
   on the default breast_cancer run these β give g_{t+1}ᵀp = 0 to 6e-15 relative on every
   step; in a subclass of SubLBFGS that uses them, no update is skipped and the tail is
   unchanged (default m = 15: 2.1e-3, 1.1e-3, 1.4e-3 on
   breast_cancer and seeds 0, 1; m = 60 unscaled still reaches 1e-6 in 201, 231, 262
   steps; m = 60 scaled still fails).

Dense subBFGS, expected to converge, does so on three of the four (295, 250, 176 steps).
On seed 2 it creeps like the scaled runs (→ 1.9e-5, η ≈ 1, pred/gap 1.6e-3, no
direction-finding iterations). I did not look further into that.

So the fix for the tail is a change of method, not a bug fix: m ≥ r with B₀ = I (r is
not known in advance, but r ≤ min(n, d)), or a method that needs no such memory near the
optimum (BMRM with the exact line search, which the default `Hybrid` of `nsjax.solve`
switches to).

    python benchmarks/sublbfgs_tail.py [--steps 2000] [--seeds 0 1 2] [--sweep NAME ...]

Writes ``benchmarks/results/sublbfgs_tail.json`` (every run's per-step record; not tracked)
and ``benchmarks/sublbfgs_tail.png`` (J − J* and η against the step). About 3.5 minutes on
the 2-core VM.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import nsjax
from nsjax.solvers import LBFGSMemory, SubBFGS, SubLBFGS

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from _common import PLOT_FLOOR, first_hit, jsonable, machine, pyplot, rel_subopt  # noqa: E402
from reference import cvxpy_optimum, random_binary  # noqa: E402  (tests/reference.py)

jax.config.update("jax_enable_x64", True)
warnings.simplefilter("ignore", nsjax.ConvergenceWarning)

STEPS = 2000
BC_LAM = 1e-3
SEEDS = (0, 1, 2)  # the first three problems of tests/test_sublbfgs.py
TARGETS = (1e-3, 1e-4, 1e-6)
TAIL = 500  # the tail statistics are over the last TAIL steps run
KINK_TOL = 1e-8  # i is on its kink where |1 − y_i x_iᵀw| ≤ KINK_TOL · max(1, |x_iᵀw|)
CHECK_EVERY = 50  # steps between looks at the solver's status (each look syncs)
JSTAR_AGREE = 1e-8  # BMRM's J* and cvxpy's must agree to this, relatively


# ----------------------------------------------------------------------------------------
# Problems and their optima
# ----------------------------------------------------------------------------------------


def problems(seeds):
    """(name, X, y, lam): breast_cancer at λ = 1e-3, then the seeded test problems."""
    X, y = nsjax.datasets.breast_cancer()
    yield "breast_cancer", X, y, BC_LAM
    for seed in seeds:
        sparse = seed % 2 == 1
        X, y, lam = random_binary(seed, 200, 50, sparse=sparse, nnz=2000)
        yield f"seed {seed} ({'sparse' if sparse else 'dense'})", X, y, lam


def margin_set(Xd, y, w):
    """The examples on their kink at w (the KINK_TOL rule)."""
    S = Xd @ w
    return np.abs(1.0 - y * S) <= KINK_TOL * np.maximum(1.0, np.abs(S))


def optimum(prob, X, y_pm, lam):
    """J* and w* by BMRM with the exact line search (tol 1e-12), checked against cvxpy
    (Clarabel); the margin set M* at w* and the rank of X restricted to it."""
    ref = nsjax.solve(prob, nsjax.solvers.BMRM(line_search="exact"), tol=1e-12,
                      max_steps=2000)
    j_star, w_star = float(ref.value), np.asarray(ref.w)
    j_cvx, w_cvx = cvxpy_optimum(X, y_pm, lam)
    if abs(j_star - j_cvx) > JSTAR_AGREE * j_star:
        raise RuntimeError(f"BMRM's J* = {j_star!r} and cvxpy's {j_cvx!r} disagree")
    Xd = X.toarray() if hasattr(X, "toarray") else np.asarray(X)
    on = margin_set(Xd, y_pm, w_star)
    sv = np.linalg.svd(Xd[on], compute_uv=False) if on.any() else np.zeros(0)
    rank = int(np.linalg.matrix_rank(Xd[on])) if on.any() else 0
    # An orthonormal basis of span{x_i : i ∈ M*}: the kink directions at w*.
    basis = np.linalg.svd(Xd[on].T, full_matrices=False)[0][:, :rank] if rank else \
        np.zeros((Xd.shape[1], 0))
    return {
        "J_star": j_star, "J_star_certified_gap": float(ref.gap),
        "J_cvxpy": float(j_cvx), "bmrm_result": int(ref.result),
        "bmrm_steps": int(ref.num_steps), "margin_set_size": int(on.sum()),
        "margin_set_size_cvxpy": int(margin_set(Xd, y_pm, w_cvx).sum()),
        "rank_X_M": rank, "X_M_singular_values": sv.tolist(),
        "w_star": w_star, "on_kink": on, "kink_basis": basis,
    }


# ----------------------------------------------------------------------------------------
# Configurations
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FixedScaleMemory(LBFGSMemory):
    """Counterfactual: L-BFGS with B₀ = ``gamma`` · I fixed (no secant scaling);
    `LBFGSMemory` otherwise. ``gamma`` = 1/λ is the exact inverse
    curvature of J off the kinks (∇²(λ/2‖w‖²) = λI), the best fixed scale there is."""

    gamma: float = 1.0

    def _gamma(self, mem, sy, yy):  # B₀ = gamma · I in either form of B v
        return jnp.asarray(self.gamma, mem.rho.dtype)


def configs(lam, rank):
    """(label, solver): the five asked for, then five that isolate one factor each."""
    r = max(rank, 1)
    return [
        ("m=15 scaled (default)", SubLBFGS()),
        ("m=15 unscaled", SubLBFGS(scaling=False)),
        ("m=30 unscaled", SubLBFGS(memory=30, scaling=False)),
        ("m=60 unscaled", SubLBFGS(memory=60, scaling=False)),
        ("dense subBFGS", SubBFGS()),
        (f"m=r-4={max(r - 4, 1)} unscaled", SubLBFGS(memory=max(r - 4, 1), scaling=False)),
        (f"m=r={r} unscaled", SubLBFGS(memory=r, scaling=False)),
        ("m=60 scaled", SubLBFGS(memory=60)),
        ("m=15, B0=I/lam fixed", SubLBFGS(memory=FixedScaleMemory(15, gamma=1.0 / lam))),
        ("m=15 unsc., eps=1e-10, k_max=1000",
         SubLBFGS(scaling=False, eps=1e-10, k_max=1000)),
    ]


# ----------------------------------------------------------------------------------------
# The instrumented step
# ----------------------------------------------------------------------------------------


def instrumented(solver):
    """(init, step), each jitted once: step(problem, state, on_star, basis, w_star) runs
    one `advance` (= `step` plus the `Direction` it found) and returns the next state and
    that step's diagnostics. The data are arguments: no closure over arrays."""
    memory = solver.quasi_newton_memory()

    def on_kink(problem, S):
        return jnp.abs(1.0 - problem.y * S) <= KINK_TOL * jnp.maximum(1.0, jnp.abs(S))

    def step(problem, state, on_star, basis, w_star):
        new, d = solver.advance(problem, state)
        s = new.core.w - state.core.w
        y = new.g - state.g
        sy, yy, pp = jnp.vdot(s, y), jnp.vdot(y, y), jnp.vdot(d.p, d.p)
        # The model gap ε of Alg. 2 (eq. 14) at its last iterate p = −B ḡ (ḡ: the final
        # aggregated subgradient): M(p) − (−½ ḡᵀBḡ) with M(p) = ½ ḡᵀBḡ + sup_g gᵀp, i.e.
        # sup + ḡᵀBḡ. Equal to Alg. 2's ε where the last iterate is its best, else an upper
        # bound on it. One product with B and one with X.
        Bg = memory.apply(state.mem, d.gbar)
        p_last = -Bg
        sup_last = problem.oracle(state.core.w, state.S, p_last, problem.scores(p_last))[2]
        before, after = on_kink(problem, state.S), on_kink(problem, new.S)
        stats, old = new.core.stats, state.core.stats
        e = new.core.w - w_star
        gtp = jnp.vdot(state.g, d.p)
        return new, {
            "J_before": state.core.value,
            "J": new.core.value,
            "eta": jnp.where(pp > 0, jnp.vdot(s, d.p) / jnp.where(pp > 0, pp, 1.0), 0.0),
            "step_norm": jnp.sqrt(jnp.vdot(s, s)),
            "dir_iters": stats["direction_iterations"] - old["direction_iterations"],
            "dir_ok": d.ok,
            "dir_capped": d.iterations >= solver.k_max - 1,
            "dir_gap": sup_last + jnp.vdot(d.gbar, Bg),
            "model_decrease": 0.5 * jnp.vdot(d.gbar, Bg),  # −min of the dual of M (−½ḡᵀBḡ)
            "skipped": stats["skipped_updates"] - old["skipped_updates"],
            "restarts": stats["restarts"] - old["restarts"],
            "sTy": sy,
            # The certified subgradient should make g_{t+1}ᵀp = 0 (so sᵀy = −η g_tᵀp > 0).
            "cert_residual": jnp.vdot(new.g, d.p) / jnp.where(gtp != 0, jnp.abs(gtp), 1.0),
            "secant_scale": sy / jnp.where(yy > 0, yy, jnp.nan),
            "kinks": jnp.sum(after),
            "kinks_of_M_star": jnp.sum(after & on_star),
            "kinks_left": jnp.sum(before & ~after),
            "dist": jnp.sqrt(jnp.vdot(e, e)),
            "dist_kink_dirs": jnp.linalg.norm(basis.T @ e),
            "status": new.status,
        }

    return jax.jit(solver.init), jax.jit(step)


def run(prob, solver, jitted, opt, steps):
    """Steps the solver until ``steps`` or the first status other than running (the state
    no longer changes then); returns the per-step record as numpy arrays."""
    init, step = jitted
    args = (jnp.asarray(opt["on_kink"]), jnp.asarray(opt["kink_basis"]),
            jnp.asarray(opt["w_star"]))
    state = init(prob, prob.zeros())
    rows = []
    end = "max_steps_reached"
    t0 = time.perf_counter()
    for t in range(steps):
        state, diag = step(prob, state, *args)
        rows.append(diag)
        if (t + 1) % CHECK_EVERY == 0 or t + 1 == steps:
            status = np.asarray(jax.device_get([r["status"] for r in rows[-CHECK_EVERY:]]))
            bad = np.flatnonzero(status != int(nsjax.RESULTS.running))
            if bad.size:
                cut = len(rows) - len(status) + int(bad[0]) + 1
                rows = rows[:cut]
                end = nsjax.RESULTS(int(status[bad[0]])).name
                break
    rows = jax.device_get(rows)
    wall = time.perf_counter() - t0
    trace = {k: np.asarray([r[k] for r in rows]) for k in rows[0]}
    trace.pop("status")
    return trace, end, wall


def memory_sweep(prob, opt, steps):
    """Unscaled subLBFGS by `nsjax.solve` (tol = 0) for m = r − 3, …, r + 1 (r = rank X_M*):
    where is the memory threshold? Returns {m: summary}."""
    out = {}
    for m in range(max(opt["rank_X_M"] - 3, 1), opt["rank_X_M"] + 2):
        sol = nsjax.solve(prob, SubLBFGS(memory=m, scaling=False), tol=0.0, max_steps=steps)
        best = np.asarray(sol.history.best, dtype=float)[:int(sol.num_steps)]
        out[m] = {"final_rel": float(rel_subopt(float(sol.value), opt["J_star"])),
                  "steps_to_1e-06": first_hit(best, opt["J_star"], 1e-6),
                  "num_steps": int(sol.num_steps), "result": nsjax.RESULTS(int(sol.result)).name}
    return out


# ----------------------------------------------------------------------------------------
# Summaries, table, plot
# ----------------------------------------------------------------------------------------


def summarize(trace, end, opt):
    j_star = opt["J_star"]
    rel = rel_subopt(trace["J"], j_star)
    n = len(rel)
    tail = slice(max(n - TAIL, 0), n)
    scale = trace["secant_scale"][tail]
    moved = trace["step_norm"] > 0
    return {
        "steps_run": n, "end": end,
        **{f"steps_to_{tg:.0e}": first_hit(trace["J"], j_star, tg) for tg in TARGETS},
        "final_rel": float(rel[-1]), "best_rel": float(np.min(rel)),
        "tail_mean_dir_iters": float(np.mean(trace["dir_iters"][tail])),
        "tail_dir_failures": int(np.sum(~trace["dir_ok"][tail])),
        "dir_failures": int(np.sum(~trace["dir_ok"])),
        "dir_capped": int(np.sum(trace["dir_capped"])),
        "tail_median_dir_gap": float(np.median(trace["dir_gap"][tail])),
        "skipped_updates": int(np.sum(trace["skipped"])),
        "restarts": int(np.sum(trace["restarts"])),
        "tail_median_eta": float(np.median(trace["eta"][tail])),
        "tail_median_step_norm": float(np.median(trace["step_norm"][tail])),
        "tail_median_secant_scale": float(np.nanmedian(scale)) if np.any(np.isfinite(scale))
        else float("nan"),
        "tail_median_kinks": float(np.median(trace["kinks"][tail])),
        "tail_max_kinks_of_M_star": int(np.max(trace["kinks_of_M_star"][tail])),
        "final_kinks_of_M_star": int(trace["kinks_of_M_star"][-1]),
        "tail_mean_kinks_left": float(np.mean(trace["kinks_left"][tail])),
        "model_over_gap": model_over_gap(trace, j_star),
        "cert_residual_over_1e-3": int(np.sum(moved & (np.abs(trace["cert_residual"]) > 1e-3))),
        "sTy_nonpositive": int(np.sum(moved & (trace["sTy"] <= 0))),
        "moving_steps": int(np.sum(moved)),
        "final_dist": float(trace["dist"][-1]),
        "final_dist_kink_dirs": float(trace["dist_kink_dirs"][-1]),
        "margin_set_size": opt["margin_set_size"], "rank_X_M": opt["rank_X_M"],
    }


def model_over_gap(trace, j_star, band=(1e-5, 1e-2)):
    """Median of ½ḡᵀBḡ (the decrease the quasi-Newton model promises, −min M) over the
    suboptimality J(w_t) − J* left, over the steps taken from 1e-5 ≤ (J − J*)/J* ≤ 1e-2:
    about 1 for a model with the right curvature, ≪ 1 for a B much too small."""
    gap = trace["J_before"] - j_star
    rel = gap / j_star
    keep = (rel >= band[0]) & (rel <= band[1])
    return float(np.median(trace["model_decrease"][keep] / gap[keep])) if keep.any() \
        else float("nan")


def fmt_steps(k):
    return "-" if k is None else str(k)


def table(name, lam, d, opt, runs):
    head = (f"{'configuration':33s} {'1e-3':>5s} {'1e-4':>5s} {'1e-6':>5s} {'final rel':>9s} "
            f"{'end':>9s} {'DF it':>5s} {'DF fail':>7s} {'skip':>4s} {'rst':>4s} "
            f"{'med eta':>8s} {'med |s|':>8s} {'med gam':>8s} {'pred/gap':>8s} {'|M_t|':>5s} "
            f"{'M*on':>4s} "
            f"{'|M*|':>4s} {'rk':>3s}")
    ends = {"max_steps_reached": "max_steps", "direction_failed": "dir_fail",
            "linesearch_failed": "ls_fail"}
    lines = [f"{name}: n={opt['n']}, d={d}, lam={lam:.3g}, J*={opt['J_star']:.10g} "
             f"(cvxpy {opt['J_cvxpy']:.10g}), |M*|={opt['margin_set_size']}, "
             f"rank X_M*={opt['rank_X_M']}", head, "-" * len(head)]
    for label, res in runs.items():
        s = res["summary"]
        lines.append(
            f"{label:33s} {fmt_steps(s['steps_to_1e-03']):>5s} "
            f"{fmt_steps(s['steps_to_1e-04']):>5s} {fmt_steps(s['steps_to_1e-06']):>5s} "
            f"{s['final_rel']:9.2e} {ends.get(s['end'], s['end'])[:9]:>9s} "
            f"{s['tail_mean_dir_iters']:5.1f} {s['dir_failures']:7d} "
            f"{s['skipped_updates']:4d} {s['restarts']:4d} {s['tail_median_eta']:8.2e} "
            f"{s['tail_median_step_norm']:8.1e} {s['tail_median_secant_scale']:8.1e} "
            f"{s['model_over_gap']:8.1e} "
            f"{s['tail_median_kinks']:5.0f} {s['tail_max_kinks_of_M_star']:4d} "
            f"{s['margin_set_size']:4d} {s['rank_X_M']:3d}")
    return lines


LEGEND = [
    "1e-3/1e-4/1e-6: first step with (J - J*)/J* <= target ('-': never); final rel: at the "
    "last step run; end: why the run ended (dir_fail: direction finding found no descent "
    "direction with B = I, so the solver stops).",
    f"Over the last {TAIL} steps run: DF it = mean direction-finding iterations per step; "
    "med eta = median step length eta (p as found); med |s| = median ||w_t+1 - w_t||; "
    "med gam = median secant scale s'y/y'y of the step's pair; |M_t| = median number of "
    f"kinks active at w_t (|1 - y x'w| <= {KINK_TOL:g} max(1, |x'w|)); M*on = the most of "
    "M*'s kinks active at once.",
    "DF fail = steps whose direction finding returned no descent direction (sup g'p >= 0) "
    "over the whole run; skip / rst = skipped memory updates (s'y too small) / memory "
    "restarts, whole run. |M*|, rk = margin set at w* and rank of X restricted to it.",
    "pred/gap = median over the steps from (J - J*)/J* = 1e-2 down to 1e-5 of the decrease "
    "the model promises (1/2 gbar'B gbar) over J(w_t) - J*: ~1 for a model with the right "
    "curvature, << 1 for a B far too small.",
]


def plot(results, path, title):
    plt = pyplot()
    names = list(results)
    fig, axes = plt.subplots(2, len(names), figsize=(4.6 * len(names), 8), squeeze=False)
    for col, name in enumerate(names):
        res = results[name]
        ax_j, ax_e = axes[0, col], axes[1, col]
        for i, (label, run_) in enumerate(res["runs"].items()):
            tr = run_["trace"]
            steps = np.arange(1, len(tr["J"]) + 1)
            rel = np.maximum(rel_subopt(np.asarray(tr["J"], float), res["J_star"]),
                             PLOT_FLOOR)
            style = "-" if i < 5 else "--"
            ax_j.plot(steps, rel, style, color=f"C{i}", lw=1.1, label=label)
            eta = np.asarray(tr["eta"], float)
            k = 25  # rolling median: the raw eta jumps by decades from step to step
            med = np.array([np.median(eta[max(0, j - k + 1):j + 1]) for j in range(len(eta))])
            ax_e.plot(steps, np.maximum(med, 1e-12), style, color=f"C{i}", lw=1.0)
        ax_j.set_yscale("log")
        ax_e.set_yscale("log")
        ax_j.set_title(f"{name}, lam={res['lam']:.2g}\n|M*|={res['margin_set_size']}, "
                       f"rank X_M*={res['rank_X_M']}, d={res['d']}", fontsize=9)
        ax_e.set_xlabel("step")
        if col == 0:
            ax_j.set_ylabel("(J - J*) / J*")
            ax_e.set_ylabel("step length eta (rolling median of 25)")
        for ax in (ax_j, ax_e):
            ax.grid(True, which="major", alpha=0.3)
    axes[0, 0].legend(fontsize=7, loc="lower left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ----------------------------------------------------------------------------------------
# Main
# ----------------------------------------------------------------------------------------


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--seeds", type=int, nargs="*", default=list(SEEDS))
    parser.add_argument("--sweep", nargs="*", default=["breast_cancer"],
                        help="problems (names as printed) to run the memory sweep on")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "sublbfgs_tail.json")
    parser.add_argument("--png", type=Path, default=HERE / "sublbfgs_tail.png")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    host = machine()
    compiled = {}  # solver -> (init, step): jitted once, reused for same-shape problems
    results, lines = {}, []
    for name, X, y, lam in problems(args.seeds):
        prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
        y_pm = np.asarray(prob.y, dtype=float)
        opt = optimum(prob, X, y_pm, lam)
        opt["n"] = int(X.shape[0])
        runs, traces = {}, {}
        for label, solver in configs(lam, opt["rank_X_M"]):
            if solver not in traces:
                if solver not in compiled:
                    compiled[solver] = instrumented(solver)
                traces[solver] = run(prob, solver, compiled[solver], opt, args.steps)
            trace, end, wall = traces[solver]
            runs[label] = {"solver": repr(solver), "wall_s": wall,
                           "summary": summarize(trace, end, opt), "trace": trace}
        block = table(name, lam, X.shape[1], opt, runs)
        sweep = None
        if name in args.sweep:
            sweep = memory_sweep(prob, opt, args.steps)
            block.append(f"memory sweep (unscaled, nsjax.solve, tol=0, {args.steps} steps; "
                         f"r = {opt['rank_X_M']}): " + "; ".join(
                             f"m={m}: {v['final_rel']:.1e}, 1e-6 at "
                             f"{fmt_steps(v['steps_to_1e-06'])} ({v['result']})"
                             for m, v in sweep.items()))
        print("\n".join(block) + "\n", flush=True)
        lines += block + [""]
        results[name] = {"lam": lam, "d": int(X.shape[1]),
                         **{k: v for k, v in opt.items()
                            if k not in ("w_star", "on_kink", "kink_basis")},
                         "memory_sweep": sweep, "runs": runs}
    print("\n".join(LEGEND))
    total = time.perf_counter() - start
    payload = {
        "benchmark": "subLBFGS tail diagnostics (issue 9, item 1)",
        "steps": args.steps, "tail": TAIL, "kink_tol": KINK_TOL, "targets": TARGETS,
        "machine": host, "total_time_s": total, "table": lines, "legend": LEGEND,
        "results": results,
    }

    def compact(obj, key=""):
        """Per-step arrays as lists, 5 significant digits (J and J_before: all digits)."""
        if isinstance(obj, np.ndarray):
            if obj.dtype.kind != "f" or key in ("J", "J_before"):
                return obj.tolist()
            return [float(f"{v:.5g}") if np.isfinite(v) else None for v in obj.tolist()]
        if isinstance(obj, dict):
            return {k: compact(v, k) for k, v in obj.items()}
        return obj

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(jsonable(compact(payload), ()), indent=None))
    plot(results, args.png, f"subLBFGS tail: J - J* and step length, {args.steps} steps "
         f"(solid: the five configurations asked for; dashed: factor checks)")
    print(f"\nwrote {args.json} and {args.png} ({total:.0f} s in all)")


if __name__ == "__main__":
    main()

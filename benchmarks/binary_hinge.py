"""Binary hinge-loss SVM benchmark: nsjax's hybrid, subLBFGS, BMRMs, Pragam and AGM-EF vs
LIBLINEAR and optax.

Objective (no bias), identical for every method:

    J(w) = lam/2 ||w||^2 + (1/n) sum_i max(0, 1 - y_i x_i^T w),   y_i in {-1, +1}.

Problems: scikit-learn digits, even vs odd (dense, 1797 x 64), and
``nsjax.datasets.synthetic_sparse(50_000, 20_000, 0.0025, seed=0)`` (5,000 x 2,000 with
``--quick``), each for lam in {1e-4, 1e-5, 1e-6}. Everything runs in float64 on the CPU.

Reference optimum J*. LIBLINEAR's dual coordinate descent (``sklearn.svm.LinearSVC(
loss="hinge", dual=True, fit_intercept=False, C=1/(lam n), tol=1e-10, random_state=0)``)
is run with max_iter = 1, 2, 4, ... until it converges (or a cap): the last run is the
tight LIBLINEAR reference. Where the problem is small enough (nnz <= ``_common.QP_MAX_NNZ``) and
cvxpy is installed, the QP is also solved by Clarabel (interior point, tolerances 1e-14),
whose dual variables give a *certified* lower bound: on digits at small lam LIBLINEAR
stops far from the optimum (its primal J is not monotone in max_iter and stalls), so
without it J* would be wrong by more than the 1e-3 target. Then

    J* = min(LIBLINEAR's J, Clarabel's J, the best J any method reached),

so relative suboptimality (J - J*) / J* is never negative; the output says which one set
J*, and the best certified lower bound on min J (Clarabel's dual value, or an nsjax
method's certified gap) with the relative gap of J* to it.

Methods and how each is timed (``time.perf_counter``; JAX results are synced with
``block_until_ready`` or by reading a scalar back to the host):

* nsjax, nine solvers, all started at w = 0:
  ``SubLBFGS(memory=15, certify=False)`` (exact line search, the "auto" default for the
  hinge; max_steps ``sub_steps``), the default solver ``Hybrid(sublbfgs=SubLBFGS(memory=15,
  certify=False))`` (subLBFGS, then the OCAS-like BMRM from its iterate, Yu et al. 2010,
  Sec. 8; ``sub_steps``), qp-BMRM ``BMRM()`` (Smola et al. 2007, Alg. 1; ``bmrm_steps``),
  ``BMRM(line_search="exact")`` (OCAS-like ls-BMRM of Yu et al. 2010, Sec. 7.4; ``bmrm_steps``),
  ``LineSearchBMRM()`` (ls-BMRM, Smola et al. 2007, eq. 15; ``ls_steps``), ``Pragam()``
  (Nesterov's excessive-gap method on the SVM dual, Saha et al. 2009, Alg. 1: three products with
  X a step and O(1/k^2) on its certified gap, so many cheap steps; ``pragam_steps``) and the
  accelerated methods of Zhang et al. (2010) with adaptive L on the same problem (``agmef_steps``):
  ``AGMEF()`` (AGM-EF-inf on the dual, Sec. 5.3), ``AGMEF(scheme="primal", epsilon=1e-7)``
  (AGM-EF-inf on the smoothed primal, Sec. 5.1.1; its certified gap on J floors near
  epsilon, below STOP_TOL and every target here as J <= 1) and ``AGMEF1()`` (AGM-EF-1,
  Alg. 3-4, dual scheme): two products with X a step, two more per raise of L. Each
  stops when its certified gap is <= ``STOP_TOL`` * max(1, |J|) (the BMRM family, the
  hybrid, Pragam and AGM-EF get there; subLBFGS's in-loop gap seldom does, so it usually runs to
  max_steps). The plotted value at step k is ``sol.history.best[k]``: J of what
  ``solve(max_steps=k)`` returns, the best iterate so far (w = 0 included), for every
  solver. ``history.value`` (J of step k's own iterate; not monotone for the BMRM family)
  is kept in the JSON as "iterate_values".

  Compile time is measured apart: a first call is timed, then the identical call again
  (compiled); compile = first - second. That call has ``tol=1e30`` (the run stops at
  step 0): ``tol`` and lam are traced arguments, so it compiles exactly the program the
  real runs use and costs no solver time. Because lam is traced, only the first lam of a
  dataset compiles; later ones show ~0. The first (full) run is then timed compiled. History
  has no timestamps, so a plotted curve puts step k at (k / num_steps) x the compiled wall
  time of the full run (uniform cost per step). The hybrid's two phases cost very different
  amounts per step (a BMRM step, with its QP and exact line search, ~10x a subLBFGS step),
  so its curve is proportional on each side of its switch instead, at the measured time to
  the switch step (one timing run as below; ``_common.phase_times``; the uniform times stay
  in the JSON as "times_uniform"). Times to target in the tables are
  *measured*: for the step k at which the full run first meets the target, the *same
  compiled program* is run again with ``tol`` set to the certified gap of step k (divided by
  max(1, |J|), rounded up), so that the loop stops right after step k: same iterates, no
  new compile. (The gap is non-increasing, so the run stops at k unless the gap was flat
  just before; the script checks ``num_steps == k`` and otherwise falls back to compiling
  ``solve(max_steps=k)`` and timing that, as before.) Runs shorter than 2 s are timed best
  of 3 (not with ``--quick``). The proportional estimate is kept in the JSON for comparison.

  subLBFGS is timed with ``certify=False``: by default, when the loop ends without a
  certified gap <= tol, the solver spends up to ~600 extra products with X on a tighter
  dual certificate for the hinge. That is a one-off cost per call which every timed k-step
  run would pay, although the iterates are identical. The final certified gap reported for
  subLBFGS comes from one extra normal run (``certify=True``, same max_steps and tol;
  compile apart); where that run would exceed the budget, the same certificate
  (``Problem.dual_certificate``, jitted with the problem as an argument) is applied to the
  final w of the first run instead, which is what the normal run computes after its loop.

  The hybrid is timed the same way, with ``certify=False`` on its subLBFGS (that option is
  also the hybrid's: where its gap is still open at the end, it would apply the same
  one-off hinge certificate, charged to every timed k-step run). Its final certified gap
  is its in-loop gap, with no extra run (its bundle phase closes the gap). The step that
  began its bundle phase (``sol.stats["switched_at"]``, -1 if it never switched) is kept
  in the JSON as "switched_at" and printed under its row of the first table.

  Certified gap: for every nsjax method the tables also give the iterations and the
  (measured) time until the certified gap in ``history.gap`` is <= ``CERT_TARGET`` = 1e-3
  (absolute; J <= 1 here, so it is also <= 1e-3 * max(1, |J|)), with the relative gap/J at
  that step, or "not reached"; ``binary_hinge_gap.png`` plots the certified gap against the
  iteration (log-log; Smola et al. 2007, Fig. 2 style) and ``binary_hinge_gap_time.png`` the
  relative certified gap (gap / J) against wall time, on the time axis of the
  objective-vs-time plot (step k at k / num_steps of the full run's compiled wall time;
  the hybrid's: in two pieces, as above).

  Budgets: every first run is made (its max_steps caps it). A further run of a method
  (a time-to-target run, or subLBFGS's normal run) whose predicted time (k / num_steps x
  the first run's wall time) exceeds ``rerun_budget_s`` is skipped: the table shows the
  proportional estimate as ``~t (b)`` and the JSON records ``"skipped": "budget"``. A
  method whose first run on a (dataset, lam) took longer than ``first_run_budget_s`` is
  skipped on the remaining (smaller, harder) lams of that dataset: "skipped (budget)".
* LIBLINEAR: each doubling run is a fresh ``fit`` (data conversion included; the time
  of a 1-iteration fit is reported as ``fit_overhead_s``; fits under 2 s are timed
  best of 3, like the nsjax runs, as the trajectory is fixed by random_state). Time to target is the
  measured time of the smallest max_iter whose J meets it: the first doubling run that
  meets it, refined by a few bisection fits between it and the previous power of two
  (skipped when those fits are expensive). No compile time.
* optax ``lbfgs(memory_size=15)`` with its default zoom line search, on nsjax's own
  objective: ``Problem.value(w, S)`` with S = ``Problem.scores(w)`` (the gradient is
  ``jax.grad`` of the nonsmooth objective; the scores get ``Problem.rmv``, i.e. X^T, as
  their VJP). The Problem is an argument of one jitted step function, not closed over
  (a closed-over matrix would be constant-folded by XLA). Compile time =
  first - second identical run of the first 3 steps from w = 0 (the state's types
  change after step 1, which compiles a second time); then a Python loop of compiled
  steps from w = 0, timing every iteration, up to an iteration and a time cap (the JSON
  records whether anything recompiled during it). Plain L-BFGS assumes a
  smooth objective, so on the hinge it may stall: an unmet target is "not reached".

Output: a table (dataset, lam, method, time to 1e-2 and 1e-3 relative suboptimality,
compile time, final relative suboptimality, iterations), a second table (iterations / time
to certified gap 1e-3, the relative gap there, the final certified gap), the nsjax /
LIBLINEAR ratios of time to 1e-3, ``<out>/binary_hinge.json`` (all numbers, curves,
machine), ``binary_hinge.png`` (relative suboptimality vs time, log-log; rows: datasets,
columns: lam), ``binary_hinge_gap.png`` (certified gap vs iteration) and
``binary_hinge_gap_time.png`` (certified gap / J vs time, every nsjax method). ``--quick``
writes ``*_quick.json`` / ``*_quick.png`` instead.

    python benchmarks/binary_hinge.py [--quick] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import optax
import scipy.sparse as sp

import nsjax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (the script's folder is on sys.path only from here)
    HERE,
    LIBLINEAR_TOL,
    PLOT_FLOOR,
    TARGETS,
    Method,
    compile_time,
    first_hit,
    fmt_time,
    liblinear_doubling,
    liblinear_time_to,
    machine,
    phase_times,
    plot_gap_time,
    plot_target_marks,
    qp_reference,
    ratio_line,
    rel_subopt,
    run_method,
    save_figure,
    save_json,
    scores,
    style_axes,
    subplots,
    switch_note,
    time_to_step,
    timed_solve,
)

jax.config.update("jax_enable_x64", True)

LAMS = (1e-4, 1e-5, 1e-6)
STOP_TOL = 1e-6  # nsjax: stop once the certified gap <= STOP_TOL * max(1, |J|)
CERT_TARGET = 1e-3  # the certified-gap target of the second table (absolute)
OPTAX_WARMUP_STEPS = 3
SUB = "nsjax SubLBFGS"
HYB = "nsjax Hybrid (default)"
QP_BMRM = "qp-BMRM"
OCAS = "ls-BMRM exact (OCAS-like)"
LS_BMRM = "ls-BMRM eq.15"
PRAGAM = "Pragam"
AGM_DUAL = "AGM-EF (dual)"
AGM_PRIMAL = "AGM-EF (primal)"
AGM1 = "AGM-EF-1 (dual)"
PRIMAL_EPSILON = 1e-7  # AGMEF(scheme="primal")'s smoothing target (J <= 1 here)
SHORT = {SUB: "SubLBFGS", HYB: "Hybrid", QP_BMRM: "qp-BMRM", OCAS: "OCAS-like",
         LS_BMRM: "ls-BMRM eq.15", PRAGAM: "Pragam", AGM_DUAL: "AGM-EF dual",
         AGM_PRIMAL: "AGM-EF primal", AGM1: "AGM-EF-1"}
COLORS = {SUB: "C0", "LIBLINEAR": "C1", "optax L-BFGS": "C2", QP_BMRM: "C3", OCAS: "C4",
          LS_BMRM: "C5", HYB: "C6", PRAGAM: "C7", AGM_DUAL: "C8", AGM_PRIMAL: "C9",
          AGM1: "k"}


@dataclasses.dataclass(frozen=True)
class Caps:
    """Iteration and time caps (full run vs --quick)."""

    sparse_shape: tuple[int, int]
    sub_steps: int  # max_steps of SubLBFGS and of the Hybrid
    ls_steps: int  # ... of LineSearchBMRM (eq. 15)
    bmrm_steps: int  # ... of BMRM() and BMRM(line_search="exact")
    pragam_steps: int  # ... of Pragam() (cheap steps, O(1/sqrt(eps)) of them)
    agmef_steps: int  # ... of the AGM-EF variants (cheap steps, many of them)
    nsjax_direct: bool  # measure the nsjax times to target (else: proportional estimates)
    repeat_below: float  # s: nsjax timing runs shorter than this are timed best of 3
    rerun_budget_s: float  # skip a further nsjax run predicted to take longer than this
    first_run_budget_s: float  # skip a method on later lams after a first run this long
    optax_max_iter: int
    optax_time_cap: float  # seconds per (dataset, lam)
    lib_max_iter: int
    lib_run_cap: float  # stop doubling after a fit longer than this (s)
    lib_total_cap: float  # or once the doubling fits add up to this (s)
    lib_refine_fits: int  # bisection fits per target
    lib_refine_cap: float  # skip refinement when the crossing fit took longer (s)


FULL = Caps((50_000, 20_000), 2000, 2000, 1000, 20_000, 20_000, True, 2.0, 20.0, 150.0, 500,
            90.0, 2**20, 60.0, 150.0, 4, 10.0)
QUICK = Caps((5_000, 2_000), 500, 500, 250, 5000, 5000, True, 0.0, 2.0, 20.0, 100, 5.0, 2**16,
             2.0, 8.0, 3, 0.5)


# ----------------------------------------------------------------------------------------
# The objective for optax and nsjax's own (numpy, for external solvers' coefficients:
# _common.hinge_objective)
# ----------------------------------------------------------------------------------------


def jax_objective(w: jax.Array, data: nsjax.Problem) -> jax.Array:
    """J(w) = ``data.value(w, X w)``; the Problem ``data`` (optax's name for the extra
    argument) is an argument, never closed over: closed over, XLA would constant-fold X."""
    return data.value(w, scores(data, w))


@jax.jit
def nsjax_objective(prob: nsjax.Problem, w: jax.Array) -> jax.Array:
    """``prob.objective(w)``, compiled once per problem shape (``prob`` is an argument)."""
    return prob.objective(w)


# ----------------------------------------------------------------------------------------
# nsjax
# ----------------------------------------------------------------------------------------


def nsjax_methods(caps: Caps) -> list[Method]:
    s = nsjax.solvers
    return [
        Method(SUB, s.SubLBFGS(memory=15, certify=False), caps.sub_steps),
        Method(HYB, s.Hybrid(sublbfgs=s.SubLBFGS(memory=15, certify=False)), caps.sub_steps),
        Method(QP_BMRM, s.BMRM(), caps.bmrm_steps),
        Method(OCAS, s.BMRM(line_search="exact"), caps.bmrm_steps),
        Method(LS_BMRM, s.LineSearchBMRM(), caps.ls_steps),
        Method(PRAGAM, s.Pragam(), caps.pragam_steps),
        Method(AGM_DUAL, s.AGMEF(), caps.agmef_steps),
        Method(AGM_PRIMAL, s.AGMEF(scheme="primal", epsilon=PRIMAL_EPSILON), caps.agmef_steps),
        Method(AGM1, s.AGMEF1(), caps.agmef_steps),
    ]


def nsjax_time_to(res: dict, j_star: float, target: float, caps: Caps) -> dict | None:
    """Time to relative suboptimality <= target of the value solve() returns."""
    k = first_hit(res["values"], j_star, target)
    return None if k is None else time_to_step(res, k, caps, STOP_TOL, True)


def nsjax_certified_to(res: dict, caps: Caps) -> dict | None:
    """Time to a certified gap <= CERT_TARGET in history.gap (absolute)."""
    gaps = np.asarray(res["gaps"])
    hits = np.flatnonzero(gaps <= CERT_TARGET)
    if not hits.size:
        return None
    k = int(hits[0]) + 1
    out = time_to_step(res, k, caps, STOP_TOL, True)
    out.update(gap=float(gaps[k - 1]), rel_gap=float(gaps[k - 1] / res["values"][k - 1]))
    return out


@jax.jit
def _dual_certificate(prob: nsjax.Problem, w: jax.Array) -> jax.Array:
    """The hinge's end-of-run lower bound on min J near w (``prob`` is an argument)."""
    return prob.dual_certificate(w)[0]


def sublbfgs_certified_gap(res: dict, caps: Caps) -> dict:
    """subLBFGS's final certified gap with its default end-of-run certificate."""
    m, prob = res["method"], res["prob"]
    normal = dataclasses.replace(m.solver, certify=True)
    if res["wall_s"] <= caps.rerun_budget_s:
        compile_s = compile_time(prob, normal, m.max_steps)
        wall, sol = timed_solve(prob, normal, m.max_steps, STOP_TOL)
        return {"how": "normal run (certify=True)", "gap": float(sol.gap),
                "value": float(sol.value), "lower_bound": float(sol.value - sol.gap),
                "wall_s": wall, "compile_s": compile_s, "num_steps": int(sol.num_steps),
                "result": nsjax.RESULTS(int(sol.result)).name,
                "extra_matvecs": int(sol.stats["matvecs"]) - res["stats"]["matvecs"]}
    # The normal run would replay the whole first run: apply its certificate to the final w.
    t0 = time.perf_counter()
    lower = max(res["lower_bound"], float(_dual_certificate(prob, res["w"])))
    elapsed = time.perf_counter() - t0
    return {"how": "skipped (budget): certificate applied to the final w",
            "gap": res["final_value"] - lower, "value": res["final_value"],
            "lower_bound": lower, "certificate_s_with_compile": elapsed}


# ----------------------------------------------------------------------------------------
# optax L-BFGS
# ----------------------------------------------------------------------------------------

_OPT = optax.lbfgs(memory_size=15)
_VALUE_AND_GRAD = optax.value_and_grad_from_state(jax_objective)


@jax.jit
def _optax_step(w, state, prob):
    # prob is the objective's data argument (optax passes it on as `data`), not closed over
    value, grad = _VALUE_AND_GRAD(w, prob, state=state)
    updates, state = _OPT.update(grad, state, w, value=value, grad=grad,
                                 value_fn=jax_objective, data=prob)
    w = optax.apply_updates(w, updates)
    # The zoom line search keeps J at the new point in its state: no extra evaluation.
    return w, state, optax.tree_utils.tree_get(state, "value")


def run_optax(prob: nsjax.Problem, caps: Caps) -> dict:
    w0 = prob.zeros()
    state0 = _OPT.init(w0)

    def warmup() -> float:
        # A few steps from w0: the state after a step may have other types than the
        # initial one (a second compile), so one call is not enough to compile it all.
        t0 = time.perf_counter()
        w, state = w0, state0
        for _ in range(OPTAX_WARMUP_STEPS):
            w, state, _ = _optax_step(w, state, prob)
        jax.block_until_ready((w, state))
        return time.perf_counter() - t0

    first = warmup()
    compile_s = max(first - warmup(), 0.0)
    cache_before = _cache_size()
    w, state = w0, state0
    times, values = [], []
    t0 = time.perf_counter()
    stop = "max_iter"
    for _ in range(caps.optax_max_iter):
        w, state, value = _optax_step(w, state, prob)
        value = float(value)  # syncs: w, state and value come from one program
        times.append(time.perf_counter() - t0)
        values.append(value)
        if not math.isfinite(value):
            stop = "nonfinite"
            break
        if times[-1] > caps.optax_time_cap:
            stop = "time_cap"
            break
    final = float(nsjax_objective(prob, w))
    return {"compile_s": compile_s, "times": times, "values": values, "num_steps": len(values),
            "stop": stop, "final_value_recomputed": final,
            "recompiled_during_timed_loop": _cache_size() != cache_before}


def _cache_size() -> int | None:
    size = getattr(_optax_step, "_cache_size", None)
    return size() if callable(size) else None


def curve_time_to(times: list[float], values: list[float], j_star: float,
                  target: float) -> dict | None:
    hits = np.flatnonzero(rel_subopt(np.asarray(values), j_star) <= target)
    if hits.size == 0:
        return None
    i = int(hits[0])
    return {"time_s": float(times[i]), "steps": i + 1, "measured": True}


# ----------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------


def datasets(caps: Caps) -> dict[str, tuple[Any, np.ndarray]]:
    n, d = caps.sparse_shape
    return {
        "digits even/odd (dense 1797x64)": nsjax.datasets.digits_binary(),
        f"synthetic sparse {n}x{d} (0.25%)": nsjax.datasets.synthetic_sparse(n, d, 0.0025,
                                                                              seed=0),
    }


def _skipped_method(reason: str) -> dict:
    none = {str(t): None for t in TARGETS}
    return {"skipped": reason, "time_to": none, "certified_to": None, "compile_s": None,
            "final_rel_subopt": None, "iterations": None, "curve": None}


def bench_one(X: Any, y: np.ndarray, lam: float, caps: Caps,
              over_budget: dict[str, str]) -> dict:
    """One (dataset, lam). ``over_budget`` maps methods to skip (this dataset's later lams)
    to the reason; it is updated here."""
    y = np.where(y > 0, 1.0, -1.0)
    t0 = time.perf_counter()
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y)
    jax.block_until_ready(prob.X)
    setup = time.perf_counter() - t0

    qp = qp_reference(X, y, lam)
    lib = liblinear_doubling(X, y, lam, caps)
    runs: dict[str, dict | None] = {}
    for m in nsjax_methods(caps):
        if m.name in over_budget:
            runs[m.name] = None
            continue
        res = run_method(prob, m, STOP_TOL)
        runs[m.name] = res
        if res["wall_s"] > caps.first_run_budget_s:
            over_budget[m.name] = (f"skipped (budget): first run at lam={lam:.0e} took "
                                   f"{res['wall_s']:.3g} s > {caps.first_run_budget_s:g} s")
    for res in runs.values():
        if res is not None:
            phase_times(res, caps, STOP_TOL)  # the hybrid's two-piece time axis
    if runs[SUB] is not None:
        runs[SUB]["certified_final"] = sublbfgs_certified_gap(runs[SUB], caps)
    ox = run_optax(prob, caps)

    candidates = {"LIBLINEAR (tight run)": lib["reference"]["value"]}
    candidates["LIBLINEAR (any run)"] = min(r["value"] for r in lib["runs"])
    if qp and "value" in qp:
        candidates["QP (Clarabel)"] = qp["value"]
    lowers: dict[str, float] = {}
    for name, res in runs.items():
        if res is None:
            continue
        candidates[name] = float(np.nanmin(res["values"])) if res["values"] else math.inf
        lower = res["lower_bound"]
        cert = res.get("certified_final")
        if cert and cert.get("lower_bound") is not None:
            lower = max(lower, cert["lower_bound"])
        lowers[f"{name} certified gap"] = lower
    finite = [v for v in ox["values"] if math.isfinite(v)]
    candidates["optax"] = min(finite) if finite else math.inf
    set_by = min(candidates, key=candidates.get)
    j_star = candidates[set_by]
    if qp and "lower_bound" in qp:
        lowers["QP dual (Clarabel)"] = qp["lower_bound"]
    lowers = lowers or {"none": -math.inf}
    lb_by = max(lowers, key=lowers.get)

    methods: dict[str, dict] = {}
    for name, res in runs.items():
        if res is None:
            methods[name] = _skipped_method(over_budget[name])
            continue
        entry = {
            "time_to": {str(t): nsjax_time_to(res, j_star, t, caps) for t in TARGETS},
            "certified_to": nsjax_certified_to(res, caps),
            "compile_s": res["compile_s"],
            "final_rel_subopt": float(rel_subopt(res["values"][-1], j_star)),
            "iterations": res["num_steps"], "max_steps": res["max_steps"],
            "result": res["result"], "wall_s": res["wall_s"], "stats": res["stats"],
            "final_value": res["final_value"], "final_gap": res["final_gap"],
            "final_certified_gap": res["final_gap"], "final_certified_gap_how": "run's gap",
            "curve": {"times": res["times"], "values": res["values"],
                      "iterate_values": res["iterate_values"], "gaps": res["gaps"],
                      "times_are": res["times_are"],
                      "values_are": "J of what solve(max_steps=k) returns"},
        }
        if "times_uniform" in res:
            entry["curve"]["times_uniform"] = res["times_uniform"]
        gaps = np.asarray(res["gaps"]) / np.asarray(res["values"])
        rel_hits = np.flatnonzero(gaps <= CERT_TARGET)
        entry["steps_to_rel_gap"] = int(rel_hits[0]) + 1 if rel_hits.size else None
        if "switched_at" in res["stats"]:  # the hybrid: the step that began its BMRM phase
            entry["switched_at"] = res["stats"]["switched_at"]
            entry["switch_timing"] = res.get("switch_timing")
        if name == SUB:
            cert = res["certified_final"]
            entry["certified_final"] = cert
            entry["final_certified_gap"] = cert["gap"]
            entry["final_certified_gap_how"] = cert["how"]
        methods[name] = entry
    lib_to = {str(t): liblinear_time_to(X, y, lam, lib, j_star, t, caps) for t in TARGETS}
    runs_lib = sorted(lib["runs"], key=lambda r: r["max_iter"])
    methods["LIBLINEAR"] = {
        "time_to": lib_to, "compile_s": 0.0,
        "final_rel_subopt": float(rel_subopt(lib["reference"]["value"], j_star)),
        "iterations": lib["reference"]["n_iter"], "converged": lib["converged"],
        "fit_overhead_s": lib["fit_overhead_s"], "doubling_total_s": lib["doubling_total_s"],
        "curve": {"times": [r["time_s"] for r in runs_lib],
                  "values": [r["value"] for r in runs_lib],
                  "max_iter": [r["max_iter"] for r in runs_lib],
                  "times_are": "wall time of a fresh fit with that max_iter"},
    }
    ox_to = {str(t): curve_time_to(ox["times"], ox["values"], j_star, t) for t in TARGETS}
    methods["optax L-BFGS"] = {
        "time_to": ox_to, "compile_s": ox["compile_s"],
        "final_rel_subopt": float(rel_subopt(ox["values"][-1], j_star)),
        "iterations": ox["num_steps"], "stop": ox["stop"],
        "final_value_recomputed": ox["final_value_recomputed"],
        "recompiled_during_timed_loop": ox["recompiled_during_timed_loop"],
        "curve": {"times": ox["times"], "values": ox["values"],
                  "times_are": "measured after every compiled step"},
    }
    return {
        "lam": lam, "n": int(X.shape[0]), "d": int(X.shape[1]),
        "nnz": int(X.nnz) if sp.issparse(X) else int(X.size), "nsjax_setup_s": setup,
        "j_star": j_star, "j_star_set_by": set_by, "j_star_candidates": candidates,
        "lower_bound": lowers[lb_by], "lower_bound_by": lb_by,
        "certified_rel_gap_of_j_star": (j_star - lowers[lb_by]) / j_star,
        "qp": qp, "liblinear_reference": lib["reference"], "methods": methods,
    }


def _fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def print_table(results: dict) -> list[str]:
    lines = []
    head = (f"{'dataset':36s} {'lam':>6s} {'method':26s} {'t(1e-2)':>13s} {'t(1e-3)':>13s} "
            f"{'compile':>8s} {'final rel':>10s} {'iters':>7s}")
    lines += [head, "-" * len(head)]
    for ds, per_lam in results.items():
        for res in per_lam:
            for name, m in res["methods"].items():
                row = f"{ds:36s} {res['lam']:6.0e} {name:26s} "
                if m.get("skipped"):
                    lines.append(row + m["skipped"])
                    continue
                lines.append(
                    row + f"{fmt_time(m['time_to']['0.01']):>13s} "
                    f"{fmt_time(m['time_to']['0.001']):>13s} {m['compile_s']:7.2f}s "
                    f"{m['final_rel_subopt']:10.2e} {m['iterations']:7d}")
                note = switch_note(SHORT.get(name, name), m)
                if note:
                    lines.append(f"{'':36s} {'':6s} ({note})")
            lines.append(
                f"{'':36s} {'':6s} J* = {res['j_star']:.12g} set by {res['j_star_set_by']}; "
                f"certified rel. gap {res['certified_rel_gap_of_j_star']:.1e} "
                f"({res['lower_bound_by']})")
    lines.append("")
    lines.append("Ratio nsjax / LIBLINEAR time to 1e-3 relative suboptimality:")
    for ds, per_lam in results.items():
        lines += [ratio_line(ds, res, SHORT, "LIBLINEAR") for res in per_lam]
    print("\n".join(lines), flush=True)
    return lines


def print_certified_table(results: dict) -> list[str]:
    lines = ["", f"Iterations / time to certified gap {CERT_TARGET:g} (history.gap, absolute):"]
    head = (f"{'dataset':36s} {'lam':>6s} {'method':26s} {'iters':>7s} {'time':>13s} "
            f"{'gap/J there':>11s} {'final gap':>10s} {'final gap/J':>11s} {'result':>18s}")
    lines += [head, "-" * len(head)]
    for ds, per_lam in results.items():
        for res in per_lam:
            for name in SHORT:
                m = res["methods"].get(name)
                if m is None:
                    continue
                row = f"{ds:36s} {res['lam']:6.0e} {name:26s} "
                if m.get("skipped"):
                    lines.append(row + m["skipped"])
                    continue
                c = m["certified_to"]
                gap = m["final_certified_gap"]
                rel = None if gap is None else gap / m["final_value"]
                mark = "*" if name == SUB else ""
                lines.append(
                    row + f"{(str(c['steps']) if c else 'not reached'):>7s} "
                    f"{(fmt_time(c) if c else ''):>13s} "
                    f"{(_fmt(c['rel_gap'], '.1e') if c else ''):>11s} "
                    f"{_fmt(gap, '.2e') + mark:>10s} {_fmt(rel, '.1e'):>11s} "
                    f"{m['result']:>18s}")
    lines.append("* SubLBFGS: final certified gap with the end-of-run hinge certificate "
                 "(one extra normal run, certify=True, or, where that run is over budget, "
                 "the same certificate applied to the final w); its iterations / time use "
                 "the in-loop gap of the certify=False run.")
    print("\n".join(lines), flush=True)
    return lines


def plot(results: dict, path: Path) -> None:
    plt, fig, axes = subplots(results, len(LAMS))
    for r, (ds, per_lam) in enumerate(results.items()):
        for c, res in enumerate(per_lam):
            ax = axes[r][c]
            for name, m in res["methods"].items():
                if m["curve"] is None:
                    continue
                color = COLORS[name]
                marker = "o" if name == "LIBLINEAR" else None
                t = np.asarray(m["curve"]["times"], float)
                v = np.maximum(rel_subopt(m["curve"]["values"], res["j_star"]), PLOT_FLOOR)
                ok = np.isfinite(v) & (t > 0)
                ax.plot(t[ok], v[ok], color=color, marker=marker, ms=3, label=name)
                if name in SHORT:
                    plot_target_marks(ax, m, color)
            for target in TARGETS:
                ax.axhline(target, color="gray", lw=0.8, ls=":")
            style_axes(ax, ds, res["lam"], c == 0, "time (s)", "(J - J*) / J*")
    axes[0][0].legend(fontsize=8)
    save_figure(plt, fig, "Hinge-loss SVM: relative suboptimality vs wall time (nsjax lines: "
                "compiled run, step k at k/N of its wall time,\nthe Hybrid's k/N within each "
                "phase, split at its measured switch time; x: measured nsjax time to target)",
                path)


def plot_gaps(results: dict, path: Path) -> None:
    """Certified gap vs iteration for the nsjax methods (Smola et al. 2007, Fig. 2 style)."""
    plt, fig, axes = subplots(results, len(LAMS))
    for r, (ds, per_lam) in enumerate(results.items()):
        for c, res in enumerate(per_lam):
            ax = axes[r][c]
            for name in SHORT:
                m = res["methods"].get(name)
                if not m or m["curve"] is None:
                    continue
                g = np.asarray(m["curve"]["gaps"], float)
                t = np.arange(1, g.size + 1)
                ok = np.isfinite(g) & (g > 0)
                ax.plot(t[ok], g[ok], color=COLORS[name], label=name)
            ax.axhline(CERT_TARGET, color="gray", lw=0.8, ls=":")
            style_axes(ax, ds, res["lam"], c == 0, "iteration t", "certified gap eps_t")
    axes[0][0].legend(fontsize=8)
    save_figure(plt, fig, "Hinge-loss SVM: certified duality gap vs iteration (subLBFGS: "
                "in-loop gap from direction finding, certify=False)", path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sparse set (5,000 x 2,000) and low caps: a few minutes")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for binary_hinge.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/binary_hinge[_quick].png)")
    parser.add_argument("--gap-png", type=Path, default=None,
                        help="gap plot path (default: benchmarks/binary_hinge_gap[_quick].png)")
    parser.add_argument("--gap-time-png", type=Path, default=None,
                        help="gap vs time plot path "
                             "(default: benchmarks/binary_hinge_gap_time[_quick].png)")
    args = parser.parse_args(argv)
    caps = QUICK if args.quick else FULL
    suffix = "_quick" if args.quick else ""
    png = args.png or HERE / f"binary_hinge{suffix}.png"
    gap_png = args.gap_png or HERE / f"binary_hinge_gap{suffix}.png"
    gap_time_png = args.gap_time_png or HERE / f"binary_hinge_gap_time{suffix}.png"
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    load_start = os.getloadavg()
    host = machine({"optax": optax.__version__})  # at the start: the commit that is measured
    results: dict[str, list[dict]] = {}
    for ds, (X, y) in datasets(caps).items():
        results[ds] = []
        over_budget: dict[str, str] = {}
        for lam in LAMS:
            t0 = time.perf_counter()
            load_before = os.getloadavg()  # the machine may be shared: kept in the JSON
            res = bench_one(X, y, lam, caps, over_budget)
            res["loadavg_before"], res["loadavg_after"] = load_before, os.getloadavg()
            results[ds].append(res)
            print(f"[{time.perf_counter() - start:7.1f} s] {ds}, lam={lam:.0e} done in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
    print()
    lines = print_table(results)
    lines += print_certified_table(results)
    notes = [
        "t(...): time to reach that relative suboptimality (J - J*) / J*; J is that of "
        "what solve() returns (the best iterate so far, history.best).",
        "nsjax: measured compiled runs of the first run's program, stopped after the "
        "target step by tol (see the docstring); ~ = proportional estimate k/N x wall time "
        "of the first run; (b) = timing run skipped (budget)."
        if caps.nsjax_direct else
        "nsjax: ~ = estimate (k / num_steps) x compiled wall time of the full run",
        "SubLBFGS is timed with certify=False: the default end-of-run hinge certificate "
        "is a one-off cost of a few hundred products with X that would otherwise be "
        "charged to every max_steps=k timing run (the iterates are the same); its final "
        "certified gap comes from one extra normal run (certify=True). The Hybrid is timed "
        "the same way (certify=False on its subLBFGS); its final certified gap is its "
        "in-loop gap (its BMRM phase closes the gap; no extra certify run).",
        "LIBLINEAR: measured fresh fit with the smallest max_iter found to reach it.",
        "optax: measured per-iteration times of a loop of compiled steps.",
        "compile: first call minus an identical second call (optax: first 3 steps; lam is "
        "traced, so only the first lam of a dataset compiles).",
        f"nsjax runs stop when the certified gap <= {STOP_TOL:g} * max(1, |J|) or at "
        f"max_steps (SubLBFGS and Hybrid {caps.sub_steps}, ls-BMRM eq.15 {caps.ls_steps}, "
        f"qp-BMRM and OCAS-like {caps.bmrm_steps}, Pragam {caps.pragam_steps}, AGM-EF "
        f"variants {caps.agmef_steps}; AGM-EF primal: epsilon = {PRIMAL_EPSILON:g}).",
    ]
    if args.quick:
        notes.append(f"--quick caps the Nesterov methods (Pragam, AGM-EF dual/primal, "
                     f"AGM-EF-1) at {caps.pragam_steps} / {caps.agmef_steps} steps (full run: "
                     f"{FULL.pragam_steps} / {FULL.agmef_steps}): a 'not reached' or a large "
                     "final error of theirs may be the cap.")
    print("\n".join(notes))
    payload = {
        "benchmark": "binary hinge-loss SVM, J(w) = lam/2 ||w||^2 + mean(max(0, 1 - y Xw))",
        "mode": "quick" if args.quick else "full", "caps": dataclasses.asdict(caps),
        "targets": TARGETS, "certified_gap_target": CERT_TARGET,
        "liblinear_tol": LIBLINEAR_TOL, "nsjax_stop_tol": STOP_TOL,
        "nsjax_solvers": {m.name: repr(m.solver) for m in nsjax_methods(caps)},
        "machine": host, "total_time_s": time.perf_counter() - start,
        "loadavg_start": load_start, "loadavg_end": os.getloadavg(),
        "table": lines, "notes": notes, "results": results,
    }
    json_path = args.out / f"binary_hinge{suffix}.json"
    save_json(json_path, payload, ("prob", "solver", "method", "w"))
    plot(results, png)
    plot_gaps(results, gap_png)
    plot_gap_time(results, SHORT, COLORS, len(LAMS), gap_time_png,
                  "Hinge-loss SVM: certified gap / J vs wall time (step k at k/N of the "
                  "compiled run's wall time, the Hybrid's k/N within each phase)\no: "
                  "Hybrid's switch to BMRM; x: measured time to "
                  f"certified gap <= {CERT_TARGET:g}, absolute; subLBFGS and Hybrid: "
                  "certify=False)")
    print(f"\nwrote {json_path}, {png}, {gap_png} and {gap_time_png} "
          f"({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

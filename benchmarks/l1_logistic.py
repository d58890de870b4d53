"""L1-regularized logistic regression: nsjax's OWL-QN, OWL-QN* and OBA vs LIBLINEAR, skglm,
cyanure and jaxopt's FISTA (issue 10).

Objective (no intercept), identical for every method:

    J(w) = (1/n) sum_i log(1 + exp(-y_i x_i^T w)) + mu ||w||_1,   y_i in {-1, +1}.

For each problem and mu: the time to relative error (J - J*) / J* <= 1e-4 and 1e-6, the
nnz of each method's final w and of the optimum, and for the nsjax solvers the certified
gap of every step and a table like Table 2 of Keskar et al. (2016): steps, CG iterations,
function evaluations, products with X. Everything runs in float64 on the CPU, all methods
in the same run on the same data.

Problems (``--problems`` picks a subset; ``--quick``: breast_cancer only):

1. ``breast_cancer``: ``nsjax.datasets.breast_cancer()`` (569 x 30; the loader already
   standardises every column, (X - mean) / std, ddof 0), mu = 1e-2, 1e-3;
2. ``digits``: ``nsjax.datasets.digits_binary()`` (1797 x 64, pixels / 16, y = +1 for even
   digits, -1 for odd), mu = 1e-3, 1e-4;
3. ``oba500``: the Appendix B problem of Keskar et al. (2016),
   ``nsjax.datasets.oba_synthetic(n=500, seed=0)`` (500 x 500 dense, columns min-max scaled
   to [-1, 1], labels independent of X), mu = 2e-3, 1e-3;
4. ``sparse``: ``nsjax.datasets.synthetic_sparse(50_000, 20_000, 0.0025, seed=0)``
   (power-law column frequencies, unit-norm rows, CSR), mu = 1e-4, 1e-5;
5. ``oba5000`` (only with ``--big``): ``oba_synthetic(n=5000, seed=0)`` (5000 x 5000 dense),
   mu = 2e-4, 1e-4, with the times to 1e-2 and 1e-3 as well and a wall-clock cap of
   ``--cap`` s (480) per method: a peer fit that runs longer is killed and every target it
   had not reached is "not reached" (a peer's sweep also stops once its fits add up to 2 x
   the cap); the nsjax and FISTA runs are sized to the cap (below), and their timing reruns
   predicted to take over cap / 4 are replaced by proportional estimates. With ``--big``
   every problem's table has the four targets 1e-2, 1e-3, 1e-4, 1e-6.

Reference optimum J*. nsjax ``OWLQN()`` is run to tol = 1e-12 (it ends at its precision
floor, ``stalled`` or ``linesearch_failed``: its certified gap closes only like the square
root of J's error) and LIBLINEAR (liblinear-official) at ``-e 1e-12``; then

    J* = min(those two, the best J that any method reached),

so the relative error is never negative; the output says which one set J*, the OWL-QN
reference's value, certified gap and result, and the best certified lower bound on min J
(max over the nsjax runs of J - gap, the dual point u = grad R(Xw) scaled into
||X^T u||_inf <= mu) with the certified relative gap of J* to it. "nnz at the optimum" is
that of the w that set J*.

Methods and how each is timed (``time.perf_counter``; JAX results synced with
``block_until_ready``):

* nsjax ``OWLQN()``, ``OWLQNStar()`` and, where ``nsjax.solvers.oba`` exists, ``OBA()``,
  on ``nsjax.Problem(Logistic(), L1(mu), X, y)`` from w = 0, each stopped when its certified
  gap is <= 1e-12 * max(1, |J|), at max_steps or at its precision floor. As in
  ``binary_hinge.py`` (``_common.run_method`` / ``time_to_step``): compile time = first call
  minus an identical second call (``tol=1e30``, which compiles the very program the real
  runs use: tol and mu are traced, so only the first mu of a problem compiles); then the
  full run, compiled; the value at step k is ``history.best`` (J of what
  ``solve(max_steps=k)`` returns) and its certified gap ``history.gap``. The time to a
  target is *measured*: the same compiled program is rerun with tol set to the certified
  gap of the first step k that meets the target, so that it stops right after step k (same
  iterates, no compile; where the gap was flat before k, ``solve(max_steps=k)`` is compiled
  and timed instead); runs under ``repeat_below`` s are timed best of 3. A rerun predicted
  (k / N x the full run) to exceed ``rerun_budget_s`` is not made: the table shows the
  proportional estimate as ``~t (b)``. Curves put step k at k / N x the full run's wall
  time. Except with ``--quick``, max_steps is sized to ``nsjax_budget_s`` (``--cap`` with
  ``--big``): a 10-step run of each solver (compiled apart) gives its time per step, and
  max_steps = the power of two that fits the budget (at least 64, at most the caps' value).
  The Table 2 counters at the 1e-6 step are ``sol.stats`` of the timing run that stops
  there (one more run of the same compiled program).
* LIBLINEAR, twice: liblinear-official (``train(problem, "-s 6 -B -1 -c C -e eps -q")``,
  newGLMNET, C = 1/(mu n); the ``problem`` is built once per dataset, outside the timing,
  its conversion time reported apart; w from the model, sign by its first label) and
  scikit-learn's ``LogisticRegression(l1_ratio=1, solver="liblinear", fit_intercept=False,
  C=1/(mu n), tol=eps, max_iter=1000, random_state=0)`` (its bundled LIBLINEAR; ``fit``
  includes its conversion of X, as in ``binary_hinge.py``; ``l1_ratio=1`` is the L1 penalty,
  ``penalty="l1"`` being deprecated since scikit-learn 1.8). Both solve C sum_i log(1 +
  exp(-y_i x_i^T w)) + ||w||_1 = J(w) / mu.
* skglm ``SparseLogisticRegression(alpha=mu, fit_intercept=False, tol=eps, max_iter=1000)``
  (prox-Newton with working sets; its objective is (1/n) sum log(1 + exp(-y Xw)) + alpha
  ||w||_1, our J: checked at its solution against its own datafit + penalty; its tol bounds
  the largest violation of the optimality conditions, an absolute scale). Its first fit
  compiles numba code (cached on disk by numba after the first run of the script): a
  warm-up fit of 2 outer iterations at tol 1e-12 (X dense or CSC, as timed) is made first;
  its time minus the best of its (up to 3) repeats is reported as skglm's compile time.
* cyanure ``Classifier(loss="logistic", penalty="l1", lambda_1=mu, fit_intercept=False,
  tol=eps, max_iter=100000, verbose=False)`` (solver "auto"; its tol is a relative duality
  gap; its objective is (1/n) sum loss + lambda_1 ||w||_1, our J: checked against the primal
  value it reports in ``optimization_info_``).

  These four are timed by a tolerance sweep: eps = 1e-1, 10^-1.5, ..., 1e-12 (decades only
  with ``--quick``), decreasing, each a fresh ``fit`` from w = 0 (``_common.timed_fit``:
  best of 3 for fits under 2 s), J of its coefficients computed by us in numpy; the time to
  a target is that of the first fit in the sweep whose J meets it. The sweep stops once a
  fit is within 1e-7 of the provisional J* (the nsjax runs' and the tight LIBLINEAR fit's
  best), or after ``sweep_budget_s`` of fitting, or at a fit that times out. The fits run in
  one worker process (spawned, so that a fit over the cap can be killed; the parent waits
  idle), which holds the data, so no pickling is timed.
* jaxopt ``ProximalGradient(fun=f, prox=prox_lasso, acceleration=True)`` (FISTA with its
  backtracking line search), f(w) = the logistic risk from nsjax's ``Problem.scores`` (with
  ``Problem.rmv`` as its VJP, so the gradient costs one product with X^T), hyperparams_prox
  = mu. Its ``init_state`` / ``update`` run in our own jitted ``lax.while_loop`` with the
  iteration count k a traced argument (the Problem an argument, never closed over): one
  compile (first minus second call at k = 1). A recording run of the same loop that also
  evaluates J at every iterate (not timed) gives the curve and the first k that meets each
  target; the time to a target is the timed loop (no J evaluations) run to exactly that k,
  best of 3 under ``repeat_below`` s: an iteration-cap sweep with one compile (a rerun
  predicted, from a 50-step timed run, to exceed ``rerun_budget_s`` is not made: ``~t (b)``,
  the 50-step run's time per step x k). Its J is that of the iterate x_k (FISTA is not
  monotone). The curve puts step k at k x the time per step of the longest timed run.
  Except with ``--quick``, its iteration cap is sized to ``fista_budget_s`` like the nsjax
  max_steps (from the 50-step run). The recording run stops once J is within 1e-7 of the
  provisional J*.

Output: a table (time to each target, the ratio of the time to 1e-6 to the best peer's, the
compile time, the final relative error, nnz, result), a Table-2-like table for the nsjax
solvers, the scaling checks, ``<out>/l1_logistic.json`` (all numbers, curves, machine) and
``benchmarks/l1_logistic.png`` (relative error vs time, log-log; rows: problems, columns:
mu). ``--quick`` writes ``*_quick.json`` / ``*_quick.png``.

    python benchmarks/l1_logistic.py [--quick] [--big] [--problems breast_cancer,digits,...]
                                     [--cap 480] [--out benchmarks/results]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import math
import multiprocessing
import sys
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

import nsjax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (the script's folder is on sys.path only from here)
    HERE,
    PLOT_FLOOR,
    Method,
    first_hit,
    fmt_time,
    machine,
    plot_target_marks,
    rel_subopt,
    run_method,
    save_figure,
    save_json,
    scores,
    style_axes,
    subplots,
    time_to_step,
    timed_fit,
    timed_solve,
)

HAVE_JAXOPT = importlib.util.find_spec("jaxopt") is not None

try:  # OBA is new: the benchmark runs without it and picks it up once it exists
    from nsjax.solvers.oba import OBA
except ImportError:
    OBA = None

jax.config.update("jax_enable_x64", True)

TARGETS = (1e-4, 1e-6)
BIG_TARGETS = (1e-2, 1e-3, 1e-4, 1e-6)
STOP_TOL = 1e-12  # nsjax: certified gap <= STOP_TOL * max(1, |J|); also OWL-QN's reference
REF_TOL = 1e-12  # LIBLINEAR's reference fit: -e 1e-12
CLOSE_ENOUGH = 0.1  # a sweep / FISTA's recording run stops within this x the smallest target
PROBE_STEPS = 10  # nsjax steps of the run that sizes max_steps
FISTA_PROBE_STEPS = 50
PROBLEMS = {  # key: (label, mus)
    "breast_cancer": ("breast_cancer (569x30, standardised)", (1e-2, 1e-3)),
    "digits": ("digits even/odd (1797x64, /16)", (1e-3, 1e-4)),
    "oba500": ("OBA synthetic n=500 (500x500)", (2e-3, 1e-3)),
    "sparse": ("synthetic sparse 50000x20000 (0.25%)", (1e-4, 1e-5)),
    "oba5000": ("OBA synthetic n=5000 (5000x5000)", (2e-4, 1e-4)),
}
OWLQN_NAME, STAR_NAME, OBA_NAME = "nsjax OWLQN", "nsjax OWLQNStar", "nsjax OBA"
LIBLINEAR, SK_LIBLINEAR = "LIBLINEAR (liblinear-official)", "sklearn liblinear"
SKGLM, CYANURE, FISTA = "skglm", "cyanure", "jaxopt FISTA"
SWEPT = (LIBLINEAR, SK_LIBLINEAR, SKGLM, CYANURE)
PEERS = (*SWEPT, FISTA)
NSJAX = (OWLQN_NAME, STAR_NAME, OBA_NAME)
COLORS = {OWLQN_NAME: "C0", STAR_NAME: "C4", OBA_NAME: "C3", LIBLINEAR: "C1",
          SK_LIBLINEAR: "C8", SKGLM: "C2", CYANURE: "C5", FISTA: "C7"}


@dataclasses.dataclass(frozen=True)
class Caps:
    """Caps and budgets (full run, --quick, --big)."""

    nsjax_steps: int  # max_steps of OWLQN and OBA (an upper bound where probe_steps)
    star_steps: int  # ... of OWLQNStar
    probe_steps: bool  # size max_steps and FISTA's cap to the budgets by a short timed run
    nsjax_budget_s: float  # the time the sized max_steps should take
    nsjax_direct: bool  # measure the nsjax times to target (else: proportional estimates)
    repeat_below: float  # s: nsjax and FISTA timing runs shorter than this: best of 3
    rerun_budget_s: float  # skip a further nsjax run predicted to take longer than this
    fista_steps: int  # FISTA's iteration cap (an upper bound where probe_steps)
    fista_budget_s: float
    sweep_decades_only: bool  # tol grid 1e-1 .. 1e-12 by decades (else half decades)
    sweep_budget_s: float  # stop a peer's sweep once its fits add up to this
    fit_timeout_s: float  # kill a peer fit that runs longer (counted "not reached")


FULL = Caps(5000, 2000, True, 60.0, True, 2.0, 30.0, 100_000, 60.0, False, 120.0, 300.0)
QUICK = Caps(2000, 300, False, 0.0, True, 0.5, 2.0, 20_000, 0.0, True, 5.0, 60.0)


def big_caps(cap: float) -> Caps:
    """--big: every method sized to / killed at ``cap`` seconds."""
    return dataclasses.replace(FULL, nsjax_budget_s=cap, fista_budget_s=cap,
                               rerun_budget_s=cap / 4, sweep_budget_s=2 * cap, fit_timeout_s=cap)


def sweep_tols(caps: Caps) -> list[float]:
    step = 1.0 if caps.sweep_decades_only else 0.5
    return [float(10.0 ** -e) for e in np.arange(1.0, 12.0 + step / 2, step)]


# ----------------------------------------------------------------------------------------
# The objective, in numpy (for every coefficient vector from outside nsjax)
# ----------------------------------------------------------------------------------------


def objective(w: np.ndarray, X: Any, y: np.ndarray, mu: float) -> float:
    """J(w) in float64 numpy; X dense or scipy.sparse, y in {-1, +1}."""
    z = -y * np.asarray(X @ w).ravel()
    return float(np.mean(np.logaddexp(0.0, z)) + mu * np.abs(w).sum())


def nnz(w: Any) -> int:
    return int(np.count_nonzero(np.asarray(w)))


# ----------------------------------------------------------------------------------------
# Peers fitted in a worker process: LIBLINEAR (x2), skglm, cyanure
# ----------------------------------------------------------------------------------------


class LiblinearOfficial:
    """liblinear-official as an estimator: ``fit`` is ``train(problem, param)`` on a problem
    built once per dataset (``X``, ``y`` of ``fit`` are ignored)."""

    def __init__(self, problem: Any, C: float, tol: float):
        from liblinear.liblinear import parameter

        self.problem = problem
        self.param = parameter(f"-s 6 -B -1 -c {C!r} -e {tol!r} -q")

    def fit(self, X: Any, y: Any) -> LiblinearOfficial:
        from liblinear.liblinearutil import train

        self.model_ = train(self.problem, self.param)
        return self

    def coef(self) -> np.ndarray:
        m = self.model_
        w = np.ctypeslib.as_array(m.w, (m.nr_feature,)).copy()
        return w if m.get_labels()[0] == 1 else -w  # w is the first label's


def _make_estimator(peer: str, mu: float, tol: float, state: dict,
                    max_iter: int | None = None) -> Any:
    """The peer's estimator; ``max_iter`` overrides its iteration cap (warm-up fits)."""
    n = state["y"].shape[0]
    C = 1.0 / (mu * n)
    if peer == LIBLINEAR:
        return LiblinearOfficial(state["liblinear_problem"], C, tol)
    if peer == SK_LIBLINEAR:
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(l1_ratio=1.0, solver="liblinear", fit_intercept=False, C=C,
                                  tol=tol, max_iter=1000, random_state=0)
    if peer == SKGLM:
        from skglm import SparseLogisticRegression

        return SparseLogisticRegression(alpha=mu, fit_intercept=False, tol=tol,
                                        max_iter=max_iter or 1000)
    if peer == CYANURE:
        from cyanure.estimators import Classifier

        return Classifier(loss="logistic", penalty="l1", lambda_1=mu, fit_intercept=False,
                          tol=tol, max_iter=100_000, verbose=False)
    raise ValueError(peer)


def _own_objective(peer: str, clf: Any, w: np.ndarray, X: Any, y: np.ndarray,
                   mu: float) -> float | None:
    """The peer's own value of its objective at its solution, where it gives one."""
    if peer == SKGLM:
        from skglm.datafits import Logistic
        from skglm.penalties import L1

        return float(Logistic().value(y, w, np.asarray(X @ w).ravel()) + L1(mu).value(w))
    if peer == CYANURE:
        info = clf.optimization_info_[0]  # rows: epoch, primal, dual?, ..., time
        done = np.flatnonzero(info[0] != 0)
        return float(info[1, done[-1]]) if done.size else None
    return None


def _worker_main(conn: Any) -> None:
    """The peers' process: ("data", X, y), ("fit", peer, mu, tol, max_iter), ("stop",)."""
    warnings.simplefilter("ignore")
    state: dict[str, Any] = {}
    while True:
        msg = conn.recv()
        if msg[0] == "stop":
            return
        try:
            if msg[0] == "data":
                _, X, y = msg
                state.clear()
                state.update(X=X, y=y)
                if sp.issparse(X):
                    state["X_csc"] = X.tocsc()
                out: dict[str, Any] = {}
                try:
                    from liblinear.liblinear import problem

                    t0 = time.perf_counter()
                    state["liblinear_problem"] = problem(y, X)
                    out["liblinear_problem_s"] = time.perf_counter() - t0
                except ImportError as exc:
                    out["liblinear_error"] = repr(exc)
                conn.send(out)
            elif msg[0] == "fit":
                _, peer, mu, tol, max_iter = msg
                X, y = state["X"], state["y"]
                Xfit = state.get("X_csc", X) if peer == SKGLM else X
                clf = _make_estimator(peer, mu, tol, state, max_iter)
                elapsed = timed_fit(clf, Xfit, y)
                w = clf.coef() if peer == LIBLINEAR else np.asarray(clf.coef_, float).ravel()
                n_iter = getattr(clf, "n_iter_", None)
                conn.send({"time_s": elapsed, "w": w,
                           "n_iter": None if n_iter is None else int(np.max(n_iter)),
                           "own_objective": _own_objective(peer, clf, w, X, y, mu)})
        except Exception as exc:  # reported, not raised: the benchmark goes on without it
            conn.send({"error": repr(exc)})


class PeerWorker:
    """A spawned process that holds the data and fits the peers, killed on timeout."""

    def __init__(self):
        self.ctx = multiprocessing.get_context("spawn")
        self.proc = None
        self.data = None

    def _start(self) -> None:
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker_main, args=(child,), daemon=True)
        self.proc.start()
        child.close()

    def set_data(self, X: Any, y: np.ndarray) -> dict:
        if self.proc is None:
            self._start()
        self.data = (X, y)
        self.conn.send(("data", X, y))
        return self.conn.recv()

    def fit(self, peer: str, mu: float, tol: float, timeout: float,
            max_iter: int | None = None) -> dict:
        self.conn.send(("fit", peer, mu, tol, max_iter))
        if self.conn.poll(timeout):
            return self.conn.recv()
        self.proc.kill()  # our own child, by its handle
        self.proc.join()
        self._start()
        self.set_data(*self.data)
        return {"timed_out": True, "time_s": timeout}

    def close(self) -> None:
        if self.proc is not None:
            self.conn.send(("stop",))
            self.proc.join(10)
            if self.proc.is_alive():
                self.proc.kill()
            self.proc = None


def peer_fit(worker: PeerWorker, peer: str, mu: float, tol: float, X: Any, y: np.ndarray,
             caps: Caps, max_iter: int | None = None) -> dict:
    r = worker.fit(peer, mu, tol, caps.fit_timeout_s, max_iter)
    r["tol"] = tol
    if "w" in r:
        w = r.pop("w")
        r["value"], r["nnz"] = objective(w, X, y, mu), nnz(w)
        r["_w"] = w
    return r


def sweep(worker: PeerWorker, peer: str, mu: float, X: Any, y: np.ndarray, j_prov: float,
          targets: tuple[float, ...], caps: Caps, done: dict[float, dict]) -> dict:
    """The tolerance sweep of one peer (``done``: fits already made, by tol)."""
    warm = None
    if peer == SKGLM:  # numba compiles on the first fit: 2 outer iterations at tol 1e-12
        t0 = time.perf_counter()  # (a loose tol can stop at w = 0 before compiling it all)
        warm = peer_fit(worker, peer, mu, REF_TOL, X, y, caps, max_iter=2)
        warm["first_call_s"] = time.perf_counter() - t0
    fits, total, stop = [], 0.0, "end of the tol grid"
    for tol in sweep_tols(caps):
        r = done.get(tol) or peer_fit(worker, peer, mu, tol, X, y, caps)
        fits.append(r)
        if r.get("timed_out"):
            stop = f"fit timed out (> {caps.fit_timeout_s:g} s)"
            break
        if "error" in r:
            stop = "error"
            break
        total += r["time_s"]
        if rel_subopt(r["value"], j_prov) <= CLOSE_ENOUGH * min(targets):
            stop = f"within {CLOSE_ENOUGH * min(targets):g} of the provisional J*"
            break
        if total > caps.sweep_budget_s:
            stop = f"sweep budget ({caps.sweep_budget_s:g} s)"
            break
    return {"fits": fits, "stop": stop, "warmup": warm,
            "compile_s": (warm["first_call_s"] - warm["time_s"]) if warm and "time_s" in warm
            else 0.0}


def sweep_time_to(fits: list[dict], j_star: float, target: float) -> dict | None:
    hit = next((r for r in fits if "value" in r and rel_subopt(r["value"], j_star) <= target),
               None)
    if hit is None:
        return None
    return {"time_s": hit["time_s"], "tol": hit["tol"], "measured": True, "n_iter": hit["n_iter"]}


# ----------------------------------------------------------------------------------------
# jaxopt FISTA in our own compiled loop
# ----------------------------------------------------------------------------------------


def smooth_part(w: jax.Array, prob: nsjax.Problem) -> jax.Array:
    """f(w) = (1/n) sum log(1 + exp(-y Xw)): the Problem is an argument, never closed over."""
    return prob.smooth_value(w, scores(prob, w))


def _fista_solver() -> Any:
    import jaxopt

    # maxiter / tol are unused: our loop calls init_state / update.
    return jaxopt.ProximalGradient(fun=smooth_part, prox=jaxopt.prox.prox_lasso,
                                   acceleration=True)


@partial(jax.jit, static_argnames=("record_len",))
def _fista(prob: nsjax.Problem, mu: jax.Array, k: jax.Array, j_stop: jax.Array,
           record_len: int):
    """k FISTA iterations from w = 0 (fewer if J <= j_stop, when recording J)."""
    solver = _fista_solver()
    w0 = prob.zeros()
    state0 = solver.init_state(w0, mu, prob)
    hist0 = jnp.full((record_len,), jnp.nan, w0.dtype)

    def cond(c):
        _, _, i, _, v = c
        return (i < k) & (v > j_stop)

    def body(c):
        w, state, i, hist, v = c
        w, state = solver.update(w, state, mu, prob)
        if record_len:
            v = prob.objective(w)
            hist = hist.at[i].set(v)
        return w, state, i + 1, hist, v

    init = (w0, state0, jnp.zeros((), jnp.int32), hist0, jnp.asarray(jnp.inf, w0.dtype))
    w, _, i, hist, _ = jax.lax.while_loop(cond, body, init)
    return w, i, hist


def fista_timed(prob: nsjax.Problem, mu: float, k: int) -> tuple[float, Any, int]:
    t0 = time.perf_counter()
    w, i, _ = _fista(prob, mu, k, -np.inf, 0)
    jax.block_until_ready(w)
    return time.perf_counter() - t0, w, int(i)


def run_fista(prob: nsjax.Problem, mu: float, j_prov: float, targets: tuple[float, ...],
              caps: Caps) -> dict:
    """Compile, time a short run (the time per step), then the recording run."""
    first, _, _ = fista_timed(prob, mu, 1)
    again, _, _ = fista_timed(prob, mu, 1)
    probe, _, _ = fista_timed(prob, mu, FISTA_PROBE_STEPS)
    per_step = probe / FISTA_PROBE_STEPS
    cap = caps.fista_steps
    if caps.probe_steps:
        cap = sized_steps(caps.fista_budget_s / per_step, 256, cap)
    j_stop = j_prov * (1 + CLOSE_ENOUGH * min(targets))
    t0 = time.perf_counter()
    w, i, hist = _fista(prob, mu, cap, j_stop, cap)
    jax.block_until_ready(w)
    record_s = time.perf_counter() - t0
    steps = int(i)
    return {"compile_s": max(first - again, 0.0), "num_steps": steps, "cap": cap,
            "probe_s_per_step": per_step, "recording_run_s": record_s,
            "values": np.asarray(hist, float)[:steps].tolist(),
            "stop": "reached J* within the stop margin" if steps < cap else "iteration cap",
            "prob": prob, "mu": mu, "w": np.asarray(w)}


def fista_time_to(res: dict, j_star: float, target: float, caps: Caps) -> dict | None:
    """The timed loop run to exactly the first k whose iterate meets the target (best of 3
    under repeat_below; over rerun_budget_s: the probe's time per step x k, unmeasured)."""
    k = first_hit(res["values"], j_star, target)
    if k is None:
        return None
    cache = res.setdefault("measured_steps", {})
    if k not in cache:
        estimate = res["probe_s_per_step"] * k
        if estimate > caps.rerun_budget_s:
            cache[k] = {"time_s": estimate, "estimate_s": estimate, "steps": k,
                        "measured": False, "skipped": "budget"}
        else:
            reps = 3 if estimate < caps.repeat_below else 1
            walls = [fista_timed(res["prob"], res["mu"], k)[0] for _ in range(reps)]
            cache[k] = {"time_s": min(walls), "steps": k, "measured": True, "repeats": reps}
    return dict(cache[k])


def fista_curve_times(res: dict) -> tuple[list[float], str]:
    """Step k at k x the time per step of the longest measured timing run (else the
    probe's)."""
    measured = [e for e in res.get("measured_steps", {}).values() if e["measured"]]
    if measured:
        e = max(measured, key=lambda e: e["steps"])
        rate = e["time_s"] / e["steps"]
        how = f"k x (measured time to step {e['steps']}) / {e['steps']}"
    else:
        rate = res["probe_s_per_step"]
        how = f"k x the time per step of a {FISTA_PROBE_STEPS}-step run"
    return (rate * np.arange(1, res["num_steps"] + 1)).tolist(), how


def fista_entry(fista: dict | None, X: Any, y: np.ndarray, mu: float, j_star: float,
                targets: tuple[float, ...], caps: Caps) -> dict:
    """FISTA's entry of a (problem, mu) result (a stub where jaxopt is not installed)."""
    if fista is None:
        return {"kind": "fista", "time_to": {str(t): None for t in targets}, "compile_s": None,
                "iterations": None, "result": "jaxopt not installed", "final_value": None,
                "final_rel_error": None, "final_value_own": None, "nnz": None,
                "curve": {"times": [], "values": []}}
    fista_w = np.asarray(fista["w"])
    fista_to = {str(t): fista_time_to(fista, j_star, t, caps) for t in targets}
    fista_times, fista_times_are = fista_curve_times(fista)
    value = objective(fista_w, X, y, mu)
    return {
        "kind": "fista", "time_to": fista_to,
        "compile_s": fista["compile_s"], "iterations": fista["num_steps"], "cap": fista["cap"],
        "result": fista["stop"], "probe_s_per_step": fista["probe_s_per_step"],
        "recording_run_s": fista["recording_run_s"],
        "final_value": value, "final_rel_error": float(rel_subopt(value, j_star)),
        "final_value_own": float(fista["values"][-1]) if fista["values"] else None,
        "nnz": nnz(fista_w),
        "curve": {"times": fista_times, "values": fista["values"],
                  "times_are": fista_times_are,
                  "values_are": "J of the iterate x_k"},
    }


# ----------------------------------------------------------------------------------------
# nsjax
# ----------------------------------------------------------------------------------------


def sized_steps(fit: float, lo: int, hi: int) -> int:
    """The power of two <= fit, clipped to [lo, hi] (powers of two: mus of a problem
    usually share the compiled program)."""
    p = 2 ** int(math.floor(math.log2(max(fit, 1.0))))
    return int(min(max(p, lo), hi))


def nsjax_methods(prob: nsjax.Problem, caps: Caps) -> list[Method]:
    s = nsjax.solvers
    methods = [Method(OWLQN_NAME, s.OWLQN(), caps.nsjax_steps),
               Method(STAR_NAME, s.OWLQNStar(), caps.star_steps)]
    if OBA is not None:
        methods.append(Method(OBA_NAME, OBA(), caps.nsjax_steps))
    if not caps.probe_steps:
        return methods
    sized = []
    for m in methods:
        timed_solve(prob, m.solver, PROBE_STEPS, 0.0)  # compile
        wall, sol = timed_solve(prob, m.solver, PROBE_STEPS, 0.0)
        per_step = wall / max(int(sol.num_steps), 1)
        sized.append(dataclasses.replace(
            m, max_steps=sized_steps(caps.nsjax_budget_s / per_step, 64, m.max_steps)))
    return sized


def nsjax_time_to(res: dict, j_star: float, target: float, caps: Caps) -> dict | None:
    """Time to relative error <= target of the value solve() returns (history.best)."""
    k = first_hit(res["values"], j_star, target)
    return None if k is None else time_to_step(res, k, caps, STOP_TOL, True)


def stats_at(res: dict, entry: dict | None) -> dict | None:
    """``sol.stats`` of the timing run that stops after the entry's step k (the same
    compiled program as the timing; None where no timing run was made)."""
    if entry is None or not entry.get("measured"):
        return None
    k, m, prob = entry["steps"], res["method"], res["prob"]
    if entry.get("how") == "tol stop after step k":
        _, sol = timed_solve(prob, m.solver, m.max_steps, entry["tol"])
    else:
        _, sol = timed_solve(prob, m.solver, k, STOP_TOL)
    if int(sol.num_steps) != k:
        return None
    return {key: int(v) for key, v in sol.stats.items()}


# ----------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------


def load(key: str) -> tuple[Any, np.ndarray]:
    if key == "breast_cancer":
        X, y = nsjax.datasets.breast_cancer()  # already (X - mean) / std
    elif key == "digits":
        X, y = nsjax.datasets.digits_binary()  # pixels / 16, +1 even, -1 odd
    elif key == "oba500":
        X, y = nsjax.datasets.oba_synthetic(n=500, seed=0)
    elif key == "sparse":
        X, y = nsjax.datasets.synthetic_sparse(50_000, 20_000, 0.0025, seed=0)
    elif key == "oba5000":
        X, y = nsjax.datasets.oba_synthetic(n=5000, seed=0)
    else:
        raise ValueError(f"unknown problem {key!r}; choose from {', '.join(PROBLEMS)}")
    return X, np.where(np.asarray(y) > 0, 1.0, -1.0)


def bench_one(X: Any, y: np.ndarray, mu: float, worker: PeerWorker,
              targets: tuple[float, ...], caps: Caps) -> dict:
    t0 = time.perf_counter()
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L1(mu), X, y)
    jax.block_until_ready(prob.X)
    setup = time.perf_counter() - t0

    runs = {m.name: run_method(prob, m, STOP_TOL) for m in nsjax_methods(prob, caps)}
    # LIBLINEAR's reference fit at -e 1e-12, then the provisional J* for the sweeps
    lib_ref = peer_fit(worker, LIBLINEAR, mu, REF_TOL, X, y, caps)
    prov = [float(np.nanmin(r["values"])) for r in runs.values() if r["values"]]
    if "value" in lib_ref:
        prov.append(lib_ref["value"])
    j_prov = min(prov)
    sweeps = {}
    for peer in SWEPT:
        done = {REF_TOL: lib_ref} if peer == LIBLINEAR else {}
        sweeps[peer] = sweep(worker, peer, mu, X, y, j_prov, targets, caps, done)
    fista = run_fista(prob, mu, j_prov, targets, caps) if HAVE_JAXOPT else None

    # J*: the two references and the best J any method reached
    owl = runs[OWLQN_NAME]
    candidates = {f"{OWLQN_NAME} (tol 1e-12 reference)": owl["final_value"]}
    ws = {f"{OWLQN_NAME} (tol 1e-12 reference)": np.asarray(owl["w"])}
    if "value" in lib_ref:
        candidates["LIBLINEAR -e 1e-12 (reference)"] = lib_ref["value"]
        ws["LIBLINEAR -e 1e-12 (reference)"] = lib_ref["_w"]
    for name, r in runs.items():
        candidates[name] = r["final_value"]
        ws[name] = np.asarray(r["w"])
    for peer, sw in sweeps.items():
        ok = [f for f in sw["fits"] if "value" in f]
        if ok:
            best = min(ok, key=lambda f: f["value"])
            candidates[peer], ws[peer] = best["value"], best["_w"]
    if fista and fista["values"]:
        candidates[FISTA] = float(np.min(fista["values"]))
    set_by = min(candidates, key=candidates.get)
    j_star = candidates[set_by]
    lowers = {name: r["lower_bound"] for name, r in runs.items()}
    lb_by = max(lowers, key=lowers.get)

    methods: dict[str, dict] = {}
    for name, res in runs.items():
        time_to = {str(t): nsjax_time_to(res, j_star, t, caps) for t in targets}
        methods[name] = {
            "kind": "nsjax", "time_to": time_to, "compile_s": res["compile_s"],
            "wall_s": res["wall_s"], "iterations": res["num_steps"],
            "max_steps": res["max_steps"], "result": res["result"],
            "final_value": res["final_value"], "final_gap": res["final_gap"],
            "final_rel_error": float(rel_subopt(res["final_value"], j_star)),
            "nnz": nnz(res["w"]), "stats": res["stats"],
            "stats_at_1e-06": stats_at(res, time_to.get("1e-06")),
            "curve": {"times": res["times"], "values": res["values"], "gaps": res["gaps"],
                      "iterate_values": res["iterate_values"],
                      "times_are": "k / num_steps * compiled wall time of the full run",
                      "values_are": "history.best: J of what solve(max_steps=k) returns"},
        }
    for peer, sw in sweeps.items():
        fits = sw["fits"]
        ok = [f for f in fits if "value" in f]
        last = ok[-1] if ok else None
        methods[peer] = {
            "kind": "sweep", "time_to": {str(t): sweep_time_to(fits, j_star, t)
                                         for t in targets},
            "compile_s": sw["compile_s"], "sweep_stop": sw["stop"],
            "iterations": last["n_iter"] if last else None,
            "result": sw["stop"], "final_value": last["value"] if last else None,
            "final_rel_error": float(rel_subopt(last["value"], j_star)) if last else None,
            "best_rel_error": (float(rel_subopt(min(f["value"] for f in ok), j_star))
                               if ok else None),
            "nnz": last["nnz"] if last else None,
            "own_objective_at_last_fit": last["own_objective"] if last else None,
            "fits": [{k: v for k, v in f.items() if k != "_w"} for f in fits],
            "curve": {"times": [f["time_s"] for f in ok], "values": [f["value"] for f in ok],
                      "tols": [f["tol"] for f in ok],
                      "times_are": "wall time of a fresh fit at that tol (best of 3 < 2 s)"},
        }
    methods[FISTA] = fista_entry(fista, X, y, mu, j_star, targets, caps)
    best_peer = {}
    for t in targets:
        peer_times = {p: methods[p]["time_to"][str(t)]["time_s"] for p in PEERS
                      if methods[p]["time_to"][str(t)] is not None}
        best_peer[str(t)] = min(peer_times.items(), key=lambda kv: kv[1]) if peer_times else None
    ref_at = best_peer.get("1e-06")
    for m in methods.values():
        e = m["time_to"].get("1e-06")
        m["ratio_to_best_peer_1e-06"] = (e["time_s"] / ref_at[1]) if e and ref_at else None
    return {
        "mu": mu, "n": int(X.shape[0]), "d": int(X.shape[1]),
        "nnz_X": int(X.nnz) if sp.issparse(X) else int(X.size), "nsjax_setup_s": setup,
        "j_star": j_star, "j_star_set_by": set_by, "j_star_candidates": candidates,
        "nnz_at_optimum": nnz(ws[set_by]),
        "owlqn_reference": {"value": owl["final_value"], "gap": owl["final_gap"],
                            "result": owl["result"], "steps": owl["num_steps"],
                            "rel_error": float(rel_subopt(owl["final_value"], j_star))},
        "liblinear_reference": {k: v for k, v in lib_ref.items() if k != "_w"},
        "lower_bound": lowers[lb_by], "lower_bound_by": f"{lb_by} certified gap",
        "certified_rel_gap_of_j_star": (j_star - lowers[lb_by]) / j_star,
        "best_peer": best_peer, "methods": methods,
    }


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------


def _fmt(x: float | None, spec: str) -> str:
    return "n/a" if x is None else format(x, spec)


def print_table(results: dict, targets: tuple[float, ...]) -> list[str]:
    cols = "".join(f"{'t(' + format(t, '.0e') + ')':>13s}" for t in targets)
    head = (f"{'problem':38s} {'mu':>6s} {'method':31s}{cols} {'/best peer':>10s} "
            f"{'compile':>8s} {'final rel':>10s} {'nnz':>6s}  result")
    lines = [head, "-" * len(head)]
    for ds, per_mu in results.items():
        for res in per_mu:
            for name, m in res["methods"].items():
                times = "".join(f"{fmt_time(m['time_to'].get(str(t))):>13s}"
                                if str(t) in m["time_to"] else f"{'':>13s}" for t in targets)
                ratio = m["ratio_to_best_peer_1e-06"]
                lines.append(
                    f"{ds:38s} {res['mu']:6.0e} {name:31s}{times} {_fmt(ratio, '.3g'):>10s} "
                    f"{_fmt(m['compile_s'], '7.2f')}s {_fmt(m['final_rel_error'], '10.2e')} "
                    f"{_fmt(m['nnz'], 'd'):>6s}  {m['result']}")
            ref = res["owlqn_reference"]
            cert = res["certified_rel_gap_of_j_star"]
            bp = res["best_peer"].get("1e-06")
            lines.append(
                f"{'':38s} {'':6s} J* = {res['j_star']:.15g} set by {res['j_star_set_by']}; "
                f"nnz at the optimum {res['nnz_at_optimum']} of {res['d']}")
            lines.append(
                f"{'':38s} {'':6s} OWLQN reference: J = {ref['value']:.15g} "
                f"(rel {ref['rel_error']:.1e}), certified gap {ref['gap']:.2e}, {ref['result']}, "
                f"{ref['steps']} steps; certified rel. gap of J* {cert:.1e} "
                f"({res['lower_bound_by']}); best peer at 1e-6: "
                f"{bp[0] + f' {bp[1]:.3g} s' if bp else 'none'}")
    print("\n".join(lines), flush=True)
    return lines


def print_table2(results: dict) -> list[str]:
    lines = ["", "nsjax solvers, Keskar et al. (2016) Table 2 style: counts at the first step with "
             "relative error <= 1e-6 (timing run stopped there) / at the end of the full run"]
    head = (f"{'problem':38s} {'mu':>6s} {'solver':16s} {'steps':>11s} {'CG iters':>13s} "
            f"{'ls evals':>13s} {'f evals':>13s} {'matvecs':>15s} {'final gap':>10s}")
    lines += [head, "-" * len(head)]

    def pair(at: dict | None, end: dict, key: str) -> str:
        if key not in end:
            return "-"
        return f"{at[key] if at else '?'}/{end[key]}"

    for ds, per_mu in results.items():
        for res in per_mu:
            for name in NSJAX:
                m = res["methods"].get(name)
                if m is None:
                    continue
                at, end = m["stats_at_1e-06"], m["stats"]
                e = m["time_to"].get("1e-06")
                steps = f"{e['steps'] if e else 'n/r'}/{m['iterations']}"
                lines.append(
                    f"{ds:38s} {res['mu']:6.0e} {name.replace('nsjax ', ''):16s} {steps:>11s} "
                    f"{pair(at, end, 'cg_iterations'):>13s} "
                    f"{pair(at, end, 'linesearch_evaluations'):>13s} "
                    f"{pair(at, end, 'function_evaluations'):>13s} "
                    f"{pair(at, end, 'matvecs'):>15s} {m['final_gap']:10.2e}")
    lines.append("n/r: 1e-6 not reached; ?: no timing run stopped at that step (budget or "
                 "flat gap); -: the solver has no such counter. ls evals: trial points of "
                 "the line search (OBA: of its model search); f evals: OBA's J evaluations "
                 "in the ISTA globalization; matvecs: products with X or X^T.")
    print("\n".join(lines), flush=True)
    return lines


def print_scaling(results: dict) -> list[str]:
    lines = ["", "Scaling check: each peer's most accurate fit (J by us in numpy) against J* "
             "and nsjax OWLQN's reference; its own objective value where it reports one"]
    head = (f"{'problem':38s} {'mu':>6s} {'peer':31s} {'best J':>20s} {'rel to J*':>10s} "
            f"{'rel to OWLQN':>12s} {'own J - our J':>14s}")
    lines += [head, "-" * len(head)]
    for ds, per_mu in results.items():
        for res in per_mu:
            ref = res["owlqn_reference"]["value"]
            for peer in PEERS:
                m = res["methods"][peer]
                if peer == FISTA:
                    best = min(m["curve"]["values"]) if m["curve"]["values"] else None
                    own = (m["final_value_own"] - m["final_value"]
                           if m["final_value_own"] is not None else None)
                else:
                    ok = [f for f in m["fits"] if "value" in f]
                    if peer == LIBLINEAR and "value" in res["liblinear_reference"]:
                        ok.append(res["liblinear_reference"])
                    bestfit = min(ok, key=lambda f: f["value"]) if ok else None
                    best = bestfit["value"] if bestfit else None
                    own = (bestfit["own_objective"] - bestfit["value"]
                           if bestfit and bestfit.get("own_objective") is not None else None)
                rel_star = None if best is None else (best - res["j_star"]) / res["j_star"]
                rel_ref = None if best is None else (best - ref) / ref
                lines.append(
                    f"{ds:38s} {res['mu']:6.0e} {peer:31s} {_fmt(best, '20.15g')} "
                    f"{_fmt(rel_star, '10.1e')} {_fmt(rel_ref, '12.1e')} "
                    f"{_fmt(own, '14.1e')}")
    print("\n".join(lines), flush=True)
    return lines


def plot(results: dict, targets: tuple[float, ...], path: Path) -> None:
    ncols = max(len(per_mu) for per_mu in results.values())
    plt, fig, axes = subplots(results, ncols)
    for r, (ds, per_mu) in enumerate(results.items()):
        for c, res in enumerate(per_mu):
            ax = axes[r][c]
            for name, m in res["methods"].items():
                curve = m.get("curve")
                if not curve or not curve["values"]:
                    continue
                t = np.asarray(curve["times"], float)
                v = np.maximum(rel_subopt(curve["values"], res["j_star"]), PLOT_FLOOR)
                ok = np.isfinite(v) & (t > 0)
                marker = "o" if m["kind"] == "sweep" else None
                ax.plot(t[ok], v[ok], color=COLORS[name], marker=marker, ms=3, label=name)
                if m["kind"] != "sweep":
                    plot_target_marks(ax, m, COLORS[name])
            for target in targets:
                ax.axhline(target, color="gray", lw=0.8, ls=":")
            style_axes(ax, ds, res["mu"], c == 0, "time (s)", "(J - J*) / J*")
            ax.set_title(f"{ds}\nmu = {res['mu']:.0e}", fontsize=9)
        for c in range(len(per_mu), ncols):
            axes[r][c].set_visible(False)
    axes[0][0].legend(fontsize=7)
    save_figure(plt, fig, "L1-logistic regression: relative error vs wall time (nsjax, FISTA: "
                "compiled run, step k at k/N of its wall time; x: measured time to target;\n"
                "o: peers' tolerance sweep, each a fresh fit)", path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="breast_cancer only, low caps, no repeats: under 2 minutes")
    parser.add_argument("--big", action="store_true",
                        help="add the n = 5000 Appendix B problem (slow), targets 1e-2 .. 1e-6")
    parser.add_argument("--problems", default=None,
                        help=f"comma-separated subset of {','.join(PROBLEMS)}")
    parser.add_argument("--cap", type=float, default=480.0,
                        help="--big: wall-clock cap per method and (problem, mu), s")
    parser.add_argument("--mus", default=None,
                        help="comma-separated mu values replacing each problem's two")
    parser.add_argument("--name", default="l1_logistic",
                        help="base name of the JSON and PNG (default l1_logistic), e.g. to "
                             "keep a separate --big run")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for l1_logistic.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/l1_logistic[_quick].png)")
    args = parser.parse_args(argv)
    if args.problems:
        keys = [k.strip() for k in args.problems.split(",") if k.strip()]
    elif args.quick:
        keys = ["breast_cancer"]
    else:
        keys = [k for k in PROBLEMS if k != "oba5000"] + (["oba5000"] if args.big else [])
    unknown = [k for k in keys if k not in PROBLEMS]
    if unknown:
        parser.error(f"unknown problem(s) {unknown}; choose from {', '.join(PROBLEMS)}")
    caps = QUICK if args.quick else FULL
    big = "oba5000" in keys
    targets = BIG_TARGETS if big else TARGETS
    suffix = "_quick" if args.quick else ""
    png = args.png or HERE / f"{args.name}{suffix}.png"
    mus_override = (tuple(float(m) for m in args.mus.split(",") if m.strip())
                    if args.mus else None)
    args.out.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    versions = {}
    for pkg in ("jaxopt", "skglm", "cyanure", "liblinear-official"):
        try:
            versions[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            versions[pkg] = "not installed"
    host = machine(versions)  # at the start: the commit that is measured
    worker = PeerWorker()
    results: dict[str, list[dict]] = {}
    data_info = {}
    try:
        for key in keys:
            label, mus = PROBLEMS[key]
            mus = mus_override or mus
            X, y = load(key)
            data_info[label] = worker.set_data(X, y)
            pcaps = big_caps(args.cap) if key == "oba5000" else caps
            results[label] = []
            for mu in mus:
                t0 = time.perf_counter()
                results[label].append(bench_one(X, y, mu, worker, targets, pcaps))
                print(f"[{time.perf_counter() - start:7.1f} s] {label}, mu={mu:.0e} done in "
                      f"{time.perf_counter() - t0:.1f} s", flush=True)
    finally:
        worker.close()
    print()
    lines = print_table(results, targets)
    lines += print_table2(results)
    lines += print_scaling(results)
    notes = [
        "t(...): time to relative error (J - J*)/J* <= target. nsjax: measured rerun of the "
        "compiled program stopped after the target step (~: proportional estimate, (b): "
        "rerun over budget); J of what solve() returns (history.best).",
        "LIBLINEAR, sklearn liblinear, skglm, cyanure: fit time of the first fit in a "
        "decreasing tol sweep whose J meets the target (best of 3 under 2 s).",
        "jaxopt FISTA: compiled loop of init_state/update run to exactly the first k whose "
        "iterate meets the target.",
        "/best peer: time to 1e-6 over the fastest peer's (non-nsjax) time to 1e-6.",
        "compile: nsjax and FISTA first call minus an identical second call (mu is traced: "
        "only the first mu of a problem compiles); skglm: its numba warm-up fit.",
        f"nsjax runs stop at a certified gap <= {STOP_TOL:g} * max(1, |J|), at max_steps "
        "or at their precision floor (result column).",
    ]
    print("\n".join(notes))
    payload = {
        "benchmark": "L1-logistic regression, J(w) = mean(log(1 + exp(-y Xw))) + mu ||w||_1",
        "mode": "quick" if args.quick else "full", "problems": keys,
        "caps": dataclasses.asdict(caps),
        "big_caps": dataclasses.asdict(big_caps(args.cap)) if big else None,
        "targets": targets, "nsjax_stop_tol": STOP_TOL, "liblinear_reference_tol": REF_TOL,
        "sweep_tols": sweep_tols(caps), "oba_available": OBA is not None,
        "machine": host, "data_conversion": data_info,
        "total_time_s": time.perf_counter() - start,
        "table": lines, "notes": notes, "results": results,
    }
    json_path = args.out / f"{args.name}{suffix}.json"
    save_json(json_path, payload, ("prob", "solver", "method", "w", "_w"))
    plot(results, targets, png)
    print(f"\nwrote {json_path} and {png} ({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

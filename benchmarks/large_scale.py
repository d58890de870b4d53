"""Binary hinge SVM at n = d = 1,000,000 (50 M nonzeros), nsjax against LIBLINEAR, in 24 GB.

The question (issue 14, item 4): does a text-like set with n = 1,000,000, d = 1,000,000 and
nnz ≈ 50 M train to relative suboptimality 1e-3 at lam = 1e-6 within this machine's 24 GB,
and what does each data layout cost per nonzero (nsjax's chunked layouts against CSR)? It is
the race of ``liblinear_race.py`` at 20x its size in n and 50x in d, on one case only.

Objective (no bias): J(w) = lam/2 ||w||^2 + (1/n) sum_i max(0, 1 - y_i x_i^T w), y in {-1, +1},
lam = 1e-6 (LIBLINEAR's C = 1 / (lam n) = 1 at n = 10^6).

Data: ``nsjax.datasets.synthetic_sparse(n, n, 50 / n, seed=0, power=1.1)``, text-like:
column frequencies proportional to (j + 1)^-1.1 (capped at half the rows), 50 nonzeros
per row on average, unit-norm rows (asserted here), float64 CSR with int32 indices.
Generated from its seed, never saved. n = d = 1,000,000 (nnz 50 M); ``--quick``: n = d =
100,000 (nnz 5 M); ``--n N``: n = d = N with ``--quick``'s caps (for trials).

Everything is timed with ``time.perf_counter``, nsjax results synced with
``block_until_ready``. Relative suboptimality (J - J*) / J* is always computed in float64:
``_common.hinge_objective`` on the returned w, cast up. The run is planned against a deadline
(see Caps below): every step that would end after it is skipped and recorded as such.

1. Generation (its time; the RSS after it).
2. LIBLINEAR: ``LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1/(lam n),
   tol=1e-10)`` on the float64 CSR matrix, through ``_common.liblinear_doubling``:
   max_iter doubles from 1 until LIBLINEAR converges, a fit takes longer than
   ``lib_run_cap`` or the fits add up to ``lib_total_cap`` (``CAPS``); the last fit is the
   tight reference. Fits under 2 s are timed best of 3 (``_common.timed_fit``); at full
   size every fit but the first few is longer.
3. For each dtype of ``--dtypes`` (default float32, then float64): the Problem is built from
   the float64 matrix with ``dtype=`` (its wall time; ``DesignMatrix.from_any`` casts the
   values), and the memory per nonzero of its layouts is recorded: the ``.nbytes`` of every
   array leaf of ``X.by_row`` (X w) and ``X.by_col`` (Xᵀ u) (``chunk_stats``),
   their sum ("both": nsjax keeps the two), against CSR in that dtype (values, int32
   indices, row pointers). Then, for the OCAS-like ``BMRM(line_search="exact")`` and the
   default solver ``Hybrid()``, the trajectory run: the compile is timed apart as
   ``_common.compile_time`` does (a call with tol = 1e30 stops at step 0 and compiles the
   same program, tol and lam being traced), then the compiled ``nsjax.solve(prob, solver,
   max_steps=m, tol=t)`` from w = 0, with t = 5e-4 x J_ref / max(1, J_ref) and J_ref the
   lowest float64 J seen so far (LIBLINEAR's or an earlier run's): a run that stops on its
   certified gap has passed 1e-3 (it certifies 5e-4, a "longer run" of ``liblinear_race``).
   m is ``max_steps`` (``CAPS``) for the first run, and for later runs the most steps the
   time left allows at the measured time per step (see Caps). Its ``history.best`` (J of what
   ``solve(max_steps=k)`` returns) is the trajectory; its result code, certified gap,
   value - gap (a certified lower bound on min J) and the float64 J of its w are recorded.
   The second dtype is run only where all its runs, timed runs included, are predicted to
   end before the deadline ("float64 if time allows").
4. J* = min(LIBLINEAR's tight J, its lowest doubling J, the float64 J of every nsjax run's
   w). The best certified lower bound is the largest value - gap of an nsjax run (a float32
   run's in float32 arithmetic, labelled so). The relative gap of J* to it is reported, and
   flagged in the table where it is above 1e-4 (a tenth of the target): no further run is
   made to close it.
5. Time to 1e-3. LIBLINEAR: ``_common.liblinear_time_to``, the measured time of a fresh
   fit with the smallest max_iter found to meet 1e-3 (the doubling, then up to
   ``lib_refine_fits`` bisection fits where the crossing fit took at most ``lib_refine_cap``
   and the deadline allows). nsjax: k is the first step at which the trajectory's
   ``history.best`` has relative suboptimality <= 1e-3; the compiled ``nsjax.solve(prob,
   solver, max_steps=k, tol=0)`` is compiled (timed apart, kept in the JSON) and then timed
   ONCE (not best of 2 as in ``liblinear_race``: at this size a run is long and its noise
   small). Its w must meet 1e-3 in float64 (recorded; no retry at a smaller k). The Hybrid
   is timed as ``Hybrid(sublbfgs=SubLBFGS(certify=False))``, as in ``liblinear_race``: the
   same iterates, without the end-of-run certificate every k-step run would pay. float32
   runs are timed first, then float64. A timed run predicted to end after the deadline is
   skipped; its time is then the estimate k x the trajectory's time per step ("~ ... (b)").
   ms/step is the timed run's time / k (LIBLINEAR: the fit's time / max_iter, its set-up
   included).

Memory: the process peak RSS after each phase (``ru_maxrss``; where the kernel allows the
reset of ``/proc/self/clear_refs``, the peak is also taken per phase, VmHWM after a reset at
the phase's start, and the process peak is the max of the phase peaks). JAX's CPU buffers
are in it. LIBLINEAR copies X into its own rows (an (index, value) node of 16 B per nonzero
plus an end node per row, in scikit-learn's wrapper): that copy is the estimate given in the
table next to its input CSR, not measured apart; its phase peak includes it.

Caps (``CAPS`` and ``QUICK_CAPS``; which of them bound anything is recorded in the JSON under
"caps_hit"): the deadline (full: 38 min of the 40 planned, the rest kept for the end and
the estimate's error; quick: 3.5 min), the nsjax max_steps of every run, the LIBLINEAR caps
above (full: a fit > 90 s or 240 s in all stops the doubling, 3 refinement fits where the
crossing fit took <= 40 s; so LIBLINEAR's part stays under ~10 min), and the time kept for
the end (LIBLINEAR's refinement, J*, the plot). Run-time predictions use the measured time
per step and steps of the runs done (a float64 step = 1.6 float32 steps until one is
measured; a k-step run = 0.7 x the trajectory's steps until J* is known).

Roofline (item 5): the bandwidth of a jitted sum over 256 MB on the default device (best of
7; on a GPU, its HBM) is measured after LIBLINEAR's part, and each timed row is reported
against the step that reads both layouts once at that bandwidth (``read_bandwidth``). The
script runs unchanged on a GPU (LIBLINEAR stays on the host's CPU).

Output: a table (method, dtype, time to 1e-3, ratio to LIBLINEAR, k, ms/step, compile s, rel.
subopt of the trajectory's w, its certified gap / J, result, peak RSS, bytes per nonzero),
the layouts' table, ``<out>/large_scale.json`` (all numbers, curves, caps, the machine) and
``benchmarks/large_scale.png``: relative suboptimality against wall time (nsjax: the
trajectory's ``history.best``, step k placed as in ``liblinear_race.curve_times``; float32
dashed; x: the measured time to 1e-3; LIBLINEAR: its fits, one point each) and bytes per
nonzero of each layout. ``--quick`` writes ``*_quick.json`` and ``*_quick.png``.

    python benchmarks/large_scale.py [--quick | --n N] [--dtypes float32,float64]
                                     [--out DIR] [--png PATH]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import resource
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

import nsjax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (the script's folder is on sys.path only from here)
    HERE,
    PLOT_FLOOR,
    compile_time,
    first_hit,
    fmt_time,
    liblinear_doubling,
    liblinear_time_to,
    machine,
    pyplot,
    rel_subopt,
    save_figure,
    save_json,
    timed_solve,
)
from binary_hinge import FULL as HINGE_FULL  # noqa: E402
from liblinear_race import (  # noqa: E402
    COLORS,
    LONGER_REL,
    METHODS,
    REF_REL,
    TARGET,
    curve_times,
    j64,
    trajectory,
)

jax.config.update("jax_enable_x64", True)

LAM = 1e-6
PER_ROW, POWER, SEED = 50, 1.1, 0
DTYPES = {"float32": np.float32, "float64": np.float64}
ORDER = ("OCAS-like", "Hybrid")  # the fastest in liblinear_race first, then the default
F64_FACTOR = 1.6  # a float64 step / a float32 step, until one is measured
K_SHARE = 0.7  # k / the trajectory's steps, until J* is known
COMPILE_GUESS_S = 10.0  # a compile, until one is measured
LIB_NODE_BYTES = 16  # LIBLINEAR's feature_node (int index, double value) on a 64-bit build
GIB = 2**30


@dataclasses.dataclass(frozen=True)
class Caps:
    """Size and caps of a mode (see the module docstring)."""

    n: int  # n = d
    deadline_s: float  # nothing starts that is predicted to end later (s from the start)
    reserve_s: float  # kept for the end: LIBLINEAR's refinement fits, J*, JSON, plot
    max_steps: int  # nsjax: max_steps of every run
    min_steps: int  # a first-dtype trajectory with a budget for fewer steps is skipped
    lib: object  # LIBLINEAR's caps: a binary_hinge.Caps, of which only lib_* is used


CAPS = Caps(1_000_000, 38 * 60.0, 150.0, 1500, 100, dataclasses.replace(
    HINGE_FULL, lib_max_iter=2**14, lib_run_cap=90.0, lib_total_cap=240.0, lib_refine_fits=3,
    lib_refine_cap=40.0))
QUICK_CAPS = Caps(100_000, 210.0, 15.0, 1500, 100, dataclasses.replace(
    HINGE_FULL, lib_max_iter=2**14, lib_run_cap=6.0, lib_total_cap=15.0, lib_refine_fits=3,
    lib_refine_cap=2.0))


# ----------------------------------------------------------------------------------------
# Clock and memory
# ----------------------------------------------------------------------------------------


class Clock:
    """Elapsed time against the deadline, and the record of what the caps bound."""

    def __init__(self, caps: Caps):
        self.caps, self.start, self.caps_hit = caps, time.perf_counter(), []

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        """Seconds until the deadline, less the time kept for the end."""
        return self.caps.deadline_s - self.caps.reserve_s - self.elapsed()

    def hit(self, what: str) -> None:
        self.caps_hit.append(what)
        print(f"    cap: {what}", flush=True)


def _status_kib(field: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            return next((int(ln.split()[1]) for ln in f if ln.startswith(field + ":")), None)
    except OSError:
        return None


class Memory:
    """Peak RSS per phase (VmHWM after a reset of /proc/self/clear_refs, where allowed) and
    of the process (ru_maxrss; the max of the phase peaks once a reset has been made)."""

    def __init__(self):
        self.phases: list[dict] = []
        self.process_peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        self.resettable = self._reset()

    @staticmethod
    def _reset() -> bool:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            return True
        except OSError:
            return False

    def phase(self, name: str, clock: Clock) -> dict:
        """Close the phase ``name`` (begun at the last call) and begin the next."""
        maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        phase_peak = _status_kib("VmHWM") if self.resettable else None
        self.process_peak_kib = max(self.process_peak_kib, maxrss, phase_peak or 0)
        rss = _status_kib("VmRSS")
        entry = {"phase": name, "at_s": clock.elapsed(),
                 "process_peak_rss_gib": self.process_peak_kib / 2**20,
                 "phase_peak_rss_gib": None if phase_peak is None else phase_peak / 2**20,
                 "rss_gib": None if rss is None else rss / 2**20}
        self.phases.append(entry)
        if self.resettable:
            self._reset()
        return entry


# ----------------------------------------------------------------------------------------
# Data and layouts
# ----------------------------------------------------------------------------------------


def generate(n: int):
    """The text-like set, float64 CSR, y in {-1, +1} as floats; rows checked unit-norm."""
    X, y = nsjax.datasets.synthetic_sparse(n, n, PER_ROW / n, seed=SEED, power=POWER)
    assert X.dtype == np.float64 and X.format == "csr", (X.dtype, X.format)
    sq = np.add.reduceat(X.data * X.data, X.indptr[:-1])  # every row has a nonzero
    assert np.allclose(sq, 1.0, rtol=0, atol=1e-12), "rows are not unit-norm"
    return X, np.where(y > 0, 1.0, -1.0)


def chunk_stats(ch, nnz: int) -> dict:
    """Bytes (per leaf), padding and shape of one layout: `Chunks` (width W, chunks, head
    width) or `nsjax.data.Buckets` (width: its widest block; chunks: its blocks)."""
    leaves = {jax.tree_util.keystr(p).lstrip("."): int(a.nbytes)
              for p, a in jax.tree_util.tree_leaves_with_path(ch)}
    if isinstance(ch, nsjax.data.Buckets):
        slots = sum(int(i.size) for i in ch.index)
        shape = {"width": max(int(i.shape[1]) for i in ch.index), "head_width": 0,
                 "chunks": len(ch.index), "index_dtype": str(ch.index[0].dtype)}
    else:
        slots = int(ch.index.size) + (0 if ch.head_index is None else int(ch.head_index.size))
        shape = {"width": int(ch.index.shape[1]),
                 "head_width": 0 if ch.head_index is None else int(ch.head_index.shape[1]),
                 "chunks": int(ch.index.shape[0]), "index_dtype": str(ch.index.dtype)}
    return {"bytes": sum(leaves.values()), "leaf_bytes": leaves, **shape, "slots": slots,
            "padding_pct": 100 * (slots - nnz) / nnz}


def layout_bytes(prob: nsjax.Problem, X, dt: str) -> dict:
    """Bytes per nonzero of the Problem's layouts and of CSR in its dtype."""
    nnz = int(X.nnz)
    csr = nnz * np.dtype(dt).itemsize + X.indices.nbytes + X.indptr.nbytes
    parts = {"by_row": chunk_stats(prob.X.by_row, nnz), "by_col": chunk_stats(prob.X.by_col,
                                                                               nnz)}
    nbytes = {"csr": csr, **{k: v["bytes"] for k, v in parts.items()}}
    nbytes["both"] = nbytes["by_row"] + nbytes["by_col"]
    return {"nnz": nnz, "bytes": nbytes,
            "bytes_per_nnz": {k: v / nnz for k, v in nbytes.items()},
            "csr_index_dtype": str(X.indices.dtype), **parts}


def read_bandwidth(nbytes: int = 2**28) -> float:
    """Bytes per second a jitted sum reads from the default device's memory (best of 7).

    The roofline of a step (item 5): every solver here reads X twice a step, by_row for X p
    and by_col for Xᵀu, so a step cannot take less than (by_row + by_col bytes) / this. The
    O(n + d) vectors (2 % of the bytes at 50 nonzeros a row) are left out of the model.
    """
    a = jnp.ones(nbytes // 4, jnp.float32)
    total = jax.jit(jnp.sum)
    total(a).block_until_ready()
    best = math.inf
    for _ in range(7):
        t0 = time.perf_counter()
        total(a).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    return nbytes / best


def roofline_ms(res: dict, dt: str) -> float:
    """Milliseconds a step takes at the read bandwidth: both layouts read once."""
    return 1e3 * res["layouts"][dt]["bytes"]["both"] / res["read_bandwidth_bytes_s"]


# ----------------------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------------------


class Planner:
    """Predicted seconds of runs not yet made, from the runs made (module docstring)."""

    def __init__(self):
        self.step_s: dict[tuple[str, str], float] = {}
        self.steps: dict[tuple[str, str], int] = {}
        self.compile_s: list[float] = []

    def record(self, key: tuple[str, str], tr: dict) -> None:
        self.step_s[key] = tr["wall_s"] / max(tr["steps"], 1)
        self.steps[key] = tr["steps"]
        self.compile_s.append(tr["compile_s"])

    def compile_est(self) -> float:
        return max(self.compile_s) if self.compile_s else COMPILE_GUESS_S

    def step_est(self, key: tuple[str, str]) -> float | None:
        if key in self.step_s:
            return self.step_s[key]
        dt, name = key
        same_dtype = [s for (d, _), s in self.step_s.items() if d == dt]
        if same_dtype:
            return max(same_dtype)
        others = [s * (F64_FACTOR if dt == "float64" else 1 / F64_FACTOR)
                  for (d, _), s in self.step_s.items()]
        return max(others) if others else None

    def steps_est(self, key: tuple[str, str], cap: int) -> int:
        same = [s for (_, m), s in self.steps.items() if m == key[1]]
        if same:
            return min(max(same), cap)
        return min(int(1.5 * max(self.steps.values())), cap) if self.steps else cap


def run_trajectory(prob, solver, max_steps: int, tol: float, X, y) -> dict:
    """The compiled solve to a certified 5e-4 (or max_steps): its history and results."""
    compile_s = compile_time(prob, solver, max_steps)
    wall, sol = timed_solve(prob, solver, max_steps, tol)
    tr = trajectory(sol, wall, f"solve(tol={tol:.3g}, max_steps={max_steps})")
    value, gap = float(sol.value), float(sol.gap)
    tr.update(solver=repr(solver), compile_s=compile_s, max_steps=max_steps, tol=tol,
              value=value, gap=gap, lower_bound=value - gap, value_f64=j64(sol, X, y, LAM),
              ms_per_step=1e3 * wall / max(int(sol.num_steps), 1),
              stats={k: int(v) for k, v in sol.stats.items()})
    return tr


def time_to_target(prob, solver, tr: dict, X, y, j_star: float, clock: Clock,
                   planner: Planner, key: tuple[str, str]) -> dict | None:
    """solve(max_steps=k, tol=0) for the first k meeting 1e-3: compiled, then timed once."""
    k = first_hit(tr["values"], j_star, TARGET)
    if k is None:
        return None
    estimate = k * planner.step_est(key)
    if planner.compile_est() + estimate > clock.left() + clock.caps.reserve_s:
        clock.hit(f"deadline: {key[0]} {key[1]} timed run (k = {k}, ~{estimate:.0f} s) skipped")
        return {"steps": k, "time_s": estimate, "measured": False, "skipped": "deadline",
                "ms_per_step": 1e3 * estimate / k}
    compile_s = compile_time(prob, solver, k)
    wall, sol = timed_solve(prob, solver, k, 0.0)
    rel = float(rel_subopt(j64(sol, X, y, LAM), j_star))
    value_at_k = float(sol.value)
    return {"steps": k, "time_s": wall, "measured": True, "compile_s": compile_s,
            "ms_per_step": 1e3 * wall / k, "steps_taken": int(sol.num_steps),
            "solver": repr(solver), "rel_subopt_f64": rel, "met_in_f64": rel <= TARGET,
            "value_at_k": value_at_k, "trajectory_value_at_k": tr["values"][k - 1],
            "matches_trajectory": math.isclose(value_at_k, tr["values"][k - 1], rel_tol=1e-6)}


def doubling_stop(lib: dict, caps) -> str:
    """Which rule ended LIBLINEAR's doubling (_common.liblinear_doubling's order)."""
    last = lib["reference"]
    if last["converged"]:
        return "converged"
    if 2 * last["max_iter"] > caps.lib_max_iter:
        return "lib_max_iter"
    if last["time_s"] > caps.lib_run_cap:
        return "lib_run_cap"
    return "lib_total_cap"


def liblinear_to_target(X, y, lib: dict, j_star: float, clock: Clock) -> dict | None:
    """_common.liblinear_time_to with as many refinement fits as the deadline allows."""
    caps = clock.caps.lib
    runs = sorted(lib["runs"], key=lambda r: r["max_iter"])
    hit = next((r for r in runs if rel_subopt(r["value"], j_star) <= TARGET), None)
    fits = caps.lib_refine_fits
    if hit is not None and hit["time_s"] <= caps.lib_refine_cap:
        fits = min(fits, int((clock.left() + clock.caps.reserve_s) // hit["time_s"]))
        if fits < caps.lib_refine_fits:
            clock.hit(f"deadline: LIBLINEAR refinement fits {caps.lib_refine_fits} -> {fits}")
    elif hit is not None:
        clock.hit(f"lib_refine_cap: the crossing fit took {hit['time_s']:.3g} s, no refinement")
    out = liblinear_time_to(X, y, LAM, lib, j_star, TARGET,
                            dataclasses.replace(caps, lib_refine_fits=max(fits, 0)))
    if out is not None and out["bracket"][1] - out["bracket"][0] > 1:
        clock.hit(f"LIBLINEAR's max_iter at 1e-3 known to the bracket {out['bracket']}")
    return out


# ----------------------------------------------------------------------------------------
# The benchmark
# ----------------------------------------------------------------------------------------


def trajectory_cap(key, first_dtype: bool, clock: Clock, planner: Planner,
                   pending_s: float) -> int | None:
    """max_steps of a trajectory run, or None to skip it (the deadline)."""
    caps, step = clock.caps, planner.step_est(key)
    if step is None:  # the first run: nothing measured yet
        return caps.max_steps
    avail = clock.left() - pending_s - 2 * planner.compile_est()
    cap = min(caps.max_steps, int(avail / (step * (1 + K_SHARE))))
    need = planner.steps_est(key, caps.max_steps)
    if cap < caps.min_steps or (not first_dtype and cap < need):
        clock.hit(f"deadline: {key[0]} {key[1]} not run (room for {max(cap, 0)} steps, "
                  f"{need} predicted)")
        return None
    if cap < caps.max_steps:
        clock.hit(f"deadline: {key[0]} {key[1]} max_steps {caps.max_steps} -> {cap}")
    return cap


def pending_timed_s(rows: list[dict], planner: Planner, j_ref: float) -> float:
    """Predicted time of the timed runs still to make for the trajectories already run."""
    total = 0.0
    for r in rows:
        if "trajectory" not in r:  # skipped: no timed run will follow
            continue
        key = (r["dtype"], r["method"])
        k = first_hit(r["trajectory"]["values"], j_ref, TARGET)
        k = k if k is not None else int(K_SHARE * r["trajectory"]["steps"])
        total += planner.compile_est() + k * planner.step_est(key)
    return total


def run_nsjax(X, y, dtypes: list[str], j_ref: float, clock: Clock, memory: Memory,
              planner: Planner) -> tuple[dict, list[dict]]:
    """Step 3: the Problems (layouts, build time) and the trajectory runs."""
    probs, rows = {}, []
    for i, dt in enumerate(dtypes):
        t0 = time.perf_counter()
        prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y,
                             dtype=DTYPES[dt])
        jax.block_until_ready(prob.X)
        build_s = time.perf_counter() - t0
        layouts = {"build_s": build_s, **layout_bytes(prob, X, dt),
                   "memory": memory.phase(f"build {dt} Problem", clock)}
        probs[dt] = {"prob": prob, "layouts": layouts}
        b = layouts["bytes_per_nnz"]
        print(f"[{clock.elapsed():7.1f} s] {dt} Problem built in {build_s:.3g} s: bytes/nnz "
              f"CSR {b['csr']:.2f}, by_row {b['by_row']:.2f}, by_col {b['by_col']:.2f}, "
              f"both {b['both']:.2f}", flush=True)
        for name in ORDER:
            key = (dt, name)
            cap = trajectory_cap(key, i == 0, clock, planner,
                                 pending_timed_s(rows, planner, j_ref))
            if cap is None:
                rows.append({"method": name, "dtype": dt, "skipped": "deadline"})
                continue
            tol = LONGER_REL * j_ref / max(1.0, j_ref)
            tr = run_trajectory(prob, METHODS[name][0], cap, tol, X, y)
            planner.record(key, tr)
            tr["memory"] = memory.phase(f"{dt} {name} trajectory", clock)
            if tr["result"] == "max_steps_reached":
                clock.hit(f"max_steps: {dt} {name} trajectory stopped at {cap} steps, gap "
                          f"{tr['gap']:.2e}")
            j_ref = min(j_ref, tr["value_f64"])
            rows.append({"method": name, "dtype": dt, "trajectory": tr})
            print(f"[{clock.elapsed():7.1f} s] {dt} {name}: {tr['steps']} steps in "
                  f"{tr['wall_s']:.3g} s ({tr['ms_per_step']:.3g} ms/step, compile "
                  f"{tr['compile_s']:.3g} s), {tr['result']}, gap {tr['gap']:.2e}, J "
                  f"{tr['value_f64']:.10g}, peak RSS "
                  f"{tr['memory']['process_peak_rss_gib']:.2f} GiB", flush=True)
    return probs, rows


def bench(caps: Caps, dtypes: list[str], clock: Clock, memory: Memory) -> dict:
    t0 = time.perf_counter()
    X, y = generate(caps.n)
    freq = np.bincount(X.indices, minlength=X.shape[1]) / X.shape[0]
    data = {"shape": list(X.shape), "nnz": int(X.nnz), "nnz_per_row": PER_ROW, "power": POWER,
            "seed": SEED, "generate_s": time.perf_counter() - t0,
            "top_column_frequencies": freq[:5].tolist(),
            "csr_float64_bytes_per_nnz": (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes)
            / X.nnz, "memory": memory.phase("generate", clock)}
    print(f"[{clock.elapsed():7.1f} s] generated {X.shape[0]:,} x {X.shape[1]:,}, nnz "
          f"{X.nnz:,} in {data['generate_s']:.3g} s", flush=True)

    lib = liblinear_doubling(X, y, LAM, caps.lib)
    stop = doubling_stop(lib, caps.lib)
    if stop != "converged":
        clock.hit(f"{stop}: LIBLINEAR's doubling stopped at max_iter "
                  f"{lib['reference']['max_iter']} ({lib['reference']['time_s']:.3g} s; "
                  f"{lib['doubling_total_s']:.3g} s in all)")
    lib.update(stop=stop, memory=memory.phase("LIBLINEAR doubling", clock))
    print(f"[{clock.elapsed():7.1f} s] LIBLINEAR: {len(lib['runs'])} fits, "
          f"{lib['doubling_total_s']:.3g} s; tight run max_iter {lib['reference']['max_iter']}, "
          f"J {lib['reference']['value']:.10g} ({stop})", flush=True)

    bandwidth = read_bandwidth()
    print(f"[{clock.elapsed():7.1f} s] read bandwidth {bandwidth / 1e9:.3g} GB/s "
          f"({jax.devices()[0].platform})", flush=True)
    planner = Planner()
    j_ref = min(r["value"] for r in lib["runs"])
    probs, rows = run_nsjax(X, y, dtypes, j_ref, clock, memory, planner)

    # Step 4: J* and its certificate.
    candidates = {"LIBLINEAR (tight run)": lib["reference"]["value"],
                  "LIBLINEAR (any doubling run)": min(r["value"] for r in lib["runs"])}
    lowers = {}
    for r in rows:
        if "trajectory" in r:
            name = f"{r['method']} {r['dtype']}"
            candidates[name] = r["trajectory"]["value_f64"]
            lowers[name + (" (float32 arithmetic)" if r["dtype"] == "float32" else "")] = (
                r["trajectory"]["lower_bound"])
    set_by = min(candidates, key=candidates.get)
    j_star = candidates[set_by]
    lb_by = max(lowers, key=lowers.get) if lowers else None
    lower = lowers[lb_by] if lb_by else -math.inf
    cert_gap = (j_star - lower) / j_star
    if cert_gap > REF_REL:
        clock.hit(f"J* certified only to {cert_gap:.1e} (> {REF_REL:g}); no run made to close "
                  "it")

    # Step 5: the times to 1e-3.
    lib_to = liblinear_to_target(X, y, lib, j_star, clock)
    lib["memory_refine"] = memory.phase("LIBLINEAR refinement", clock)
    for dt in dtypes:
        for r in rows:
            if r["dtype"] != dt or "trajectory" not in r:
                continue
            key, tr = (dt, r["method"]), r["trajectory"]
            hit = time_to_target(probs[dt]["prob"], METHODS[r["method"]][1], tr, X, y, j_star,
                                 clock, planner, key)
            r["time_to"] = hit
            r["memory_timed"] = memory.phase(f"{dt} {r['method']} timed run", clock)
            r["ratio"] = hit["time_s"] / lib_to["time_s"] if hit and lib_to else None
            tr["rel_subopt_f64"] = float(rel_subopt(tr["value_f64"], j_star))
            tr["times"] = curve_times(tr, hit if hit and hit.get("measured") else None)
            print(f"[{clock.elapsed():7.1f} s] {dt} {r['method']}: time to 1e-3 "
                  f"{fmt_time(hit)}", flush=True)
    runs = sorted(lib["runs"], key=lambda r: r["max_iter"])
    lib_out = {"time_to": lib_to, "reference": lib["reference"], "stop": lib["stop"],
               "converged": lib["converged"], "fit_overhead_s": lib["fit_overhead_s"],
               "doubling_total_s": lib["doubling_total_s"], "memory": lib["memory"],
               "memory_refine": lib["memory_refine"],
               "rel_subopt_tight": float(rel_subopt(lib["reference"]["value"], j_star)),
               "curve": {"times": [r["time_s"] for r in runs], "values": [r["value"] for r in runs],
                         "max_iter": [r["max_iter"] for r in runs]}}
    return {"lam": LAM, "data": data, "read_bandwidth_bytes_s": bandwidth, "j_star": j_star,
            "j_star_set_by": set_by, "j_star_candidates": candidates, "lower_bound": lower,
            "lower_bound_by": lb_by, "lower_bounds": lowers,
            "certified_rel_gap_of_j_star": cert_gap,
            "liblinear": lib_out, "layouts": {dt: p["layouts"] for dt, p in probs.items()},
            "rows": rows}


# ----------------------------------------------------------------------------------------
# Output
# ----------------------------------------------------------------------------------------


def _g(x: float | None, spec: str, none: str = "-") -> str:
    return none if x is None else format(x, spec)


def report(res: dict, total_s: float, memory: Memory) -> list[str]:
    lib, j_star = res["liblinear"], res["j_star"]
    head = (f"{'method':10s} {'dtype':7s} {'t(1e-3)':>11s} {'/LIB':>6s} {'k':>6s} "
            f"{'ms/step':>8s} {'compile':>7s} {'rel':>8s} {'gap/J':>8s} {'result':>17s} "
            f"{'peak GB':>7s} {'B/nnz':>13s}")
    lines = [head, "-" * len(head)]
    t = lib["time_to"]
    ms = 1e3 * t["time_s"] / t["max_iter"] if t else None
    csr64 = res["data"]["csr_float64_bytes_per_nnz"]
    own = LIB_NODE_BYTES * (res["data"]["nnz"] + res["data"]["shape"][0]) / res["data"]["nnz"]
    lines.append(f"{'LIBLINEAR':10s} {'float64':7s} {fmt_time(t):>11s} {'1':>6s} "
                 f"{(str(t['max_iter']) if t else '-'):>6s} {_g(ms, '8.3g'):>8s} {'-':>7s} "
                 f"{lib['rel_subopt_tight']:8.1e} {'-':>8s} {lib['stop']:>17s} "
                 f"{lib['memory']['process_peak_rss_gib']:7.2f} "
                 f"{f'{csr64:.1f}+{own:.1f}':>13s}")
    for r in res["rows"]:
        if "trajectory" not in r:
            lines.append(f"{r['method']:10s} {r['dtype']:7s} not run: {r['skipped']}")
            continue
        tr, h = r["trajectory"], r["time_to"]
        b = res["layouts"][r["dtype"]]["bytes_per_nnz"]
        lines.append(
            f"{r['method']:10s} {r['dtype']:7s} {fmt_time(h):>11s} "
            f"{_g(r['ratio'], '6.3g', 'n/a'):>6s} {(str(h['steps']) if h else '-'):>6s} "
            f"{_g(h and h['ms_per_step'], '8.4g'):>8s} "
            f"{_g(h and h.get('compile_s'), '7.3g'):>7s} {tr['rel_subopt_f64']:8.1e} "
            f"{tr['gap'] / tr['value']:8.1e} {tr['result']:>17s} "
            f"{r['memory_timed']['process_peak_rss_gib']:7.2f} "
            f"{'{:.1f} ({:.1f})'.format(b['both'], b['csr']):>13s}")
    lines.append("")
    for r in res["rows"]:
        if "trajectory" in r:
            roof, step = roofline_ms(res, r["dtype"]), r["trajectory"]["ms_per_step"]
            lines.append(f"roofline {r['method']} {r['dtype']}: {roof:.3g} ms a step (by_row + "
                         f"by_col read once at {res['read_bandwidth_bytes_s'] / 1e9:.3g} GB/s) "
                         f"= {100 * roof / step:.0f} % of the trajectory's {step:.3g} ms")
    gap_note = ("" if res["certified_rel_gap_of_j_star"] <= REF_REL else
                f"  ** above {REF_REL:g}: J* is good only to that **")
    lines += [f"J* = {j_star:.12g} ({res['j_star_set_by']}); certified lower bound "
              f"{res['lower_bound']:.12g} ({res['lower_bound_by']}): rel. gap "
              f"{res['certified_rel_gap_of_j_star']:.1e}{gap_note}", "",
              "t(1e-3): LIBLINEAR's fresh fit at the smallest max_iter found / nsjax's "
              "compiled solve(max_steps=k, tol=0), one run; ~ ... (b): estimate, not run "
              "(deadline). k: max_iter / steps. ms/step: t / k. compile: of the k-step "
              "program. rel, gap/J, result: the trajectory run's w (LIBLINEAR: its tight "
              "run; result: why its doubling stopped). peak GB: process peak RSS after the "
              "row's last phase. B/nnz: nsjax by_row + by_col (CSR in that dtype); "
              "LIBLINEAR: its input CSR + its own copy (estimate).", "",
              f"{'layout':6s} {'dtype':7s} {'CSR':>6s} {'by_row':>6s} {'by_col':>6s} "
              f"{'both':>6s} {'pad r/c %':>11s} {'W r/c':>6s} {'build s':>7s} "
              f"{'phase GB':>8s}"]
    for dt, lay in res["layouts"].items():
        b = lay["bytes_per_nnz"]
        pk = lay["memory"]["phase_peak_rss_gib"]
        lines.append(f"{'':6s} {dt:7s} {b['csr']:6.2f} {b['by_row']:6.2f} {b['by_col']:6.2f} "
                     f"{b['both']:6.2f} {lay['by_row']['padding_pct']:5.1f}/"
                     f"{lay['by_col']['padding_pct']:<5.1f} {lay['by_row']['width']:>2d}/"
                     f"{lay['by_col']['width']:<3d} {lay['build_s']:7.3g} "
                     f"{_g(pk, '8.2f'):>8s}")
    peak = memory.process_peak_kib / 2**20
    ok = [r for r in res["rows"] if r.get("time_to") and r["time_to"].get("measured")
          and r["time_to"]["met_in_f64"]]
    who = ", ".join(r["method"] + " " + r["dtype"] for r in ok)
    lines += ["", f"Trained to 1e-3 within this machine's memory: "
              f"{'yes' if ok else 'no'} ({who}); process peak RSS {peak:.2f} GiB of "
              f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / GIB:.1f} GiB."]
    odd = [f"{r['dtype']} {r['method']}" for r in res["rows"] if r.get("time_to")
           and r["time_to"].get("measured") and not (r["time_to"]["met_in_f64"]
                                                     and r["time_to"]["matches_trajectory"])]
    if odd:
        lines.append("Check (float64 miss or value at k off the trajectory): " + "; ".join(odd))
    lines.append(f"Total {total_s:.0f} s.")
    print("\n".join(lines), flush=True)
    return lines


def plot(res: dict, path: Path, title: str) -> None:
    plt = pyplot()
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [3, 2]})
    j_star, lib = res["j_star"], res["liblinear"]["curve"]
    ax.plot(lib["times"], np.maximum(rel_subopt(lib["values"], j_star), PLOT_FLOOR), "o",
            color=COLORS["LIBLINEAR"], ms=4, label="LIBLINEAR fits (float64)")
    for r in res["rows"]:
        if "trajectory" not in r:
            continue
        tr, color = r["trajectory"], COLORS[r["method"]]
        t = np.asarray(tr["times"])
        v = np.maximum(rel_subopt(tr["values"], j_star), PLOT_FLOOR)
        keep = np.isfinite(v) & (t > 0)
        ax.plot(t[keep], v[keep], ls="--" if r["dtype"] == "float32" else "-", color=color,
                label=f"{r['method']} {r['dtype']}")
        h = r["time_to"]
        if h and h.get("measured"):
            ax.plot(h["time_s"], max(h["rel_subopt_f64"], PLOT_FLOOR), "x", color=color, ms=8)
    ax.axhline(TARGET, color="gray", lw=0.8, ls=":")
    ax.set(xscale="log", yscale="log", xlabel="time (s)", ylabel="(J - J*) / J*",
           title=f"lam = {res['lam']:.0e}, J* = {j_star:.6g}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)
    names = ("csr", "by_row", "by_col", "both")
    width = 0.8 / len(names)
    dts = list(res["layouts"])
    for i, lay in enumerate(names):
        vals = [res["layouts"][dt]["bytes_per_nnz"][lay] for dt in dts]
        bars = bx.bar(np.arange(len(dts)) + (i - 1.5) * width, vals, width, color=f"C{i}",
                      label={"csr": "scipy CSR", "both": "nsjax by_row + by_col"}.get(
                          lay, f"nsjax {lay}"))
        bx.bar_label(bars, fmt="%.1f", fontsize=7)
    bx.set_xticks(np.arange(len(dts)), dts)
    bx.set(ylabel="bytes per stored nonzero", title="memory per nonzero")
    bx.legend(fontsize=7)
    save_figure(plt, fig, title, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="n = d = 100,000: minutes")
    size.add_argument("--n", type=int, default=None, help="n = d = N with --quick's caps")
    parser.add_argument("--dtypes", default="float32,float64",
                        help="comma-separated, in order (default float32,float64)")
    parser.add_argument("--out", type=Path, default=HERE / "results",
                        help="folder for large_scale.json (default: benchmarks/results)")
    parser.add_argument("--png", type=Path, default=None,
                        help="plot path (default: benchmarks/large_scale[_quick].png)")
    args = parser.parse_args(argv)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    if not dtypes or any(d not in DTYPES for d in dtypes) or len(set(dtypes)) < len(dtypes):
        parser.error(f"--dtypes: a list of distinct names from {list(DTYPES)}")
    caps = CAPS
    suffix = ""
    if args.quick:
        caps, suffix = QUICK_CAPS, "_quick"
    elif args.n is not None:
        caps, suffix = dataclasses.replace(QUICK_CAPS, n=args.n), f"_n{args.n}"

    clock, memory = Clock(caps), Memory()
    load_start = os.getloadavg()
    host = machine({"scipy": __import__("scipy").__version__})  # at the start: the commit
    memory.phase("start", clock)
    res = bench(caps, dtypes, clock, memory)
    print()
    lines = report(res, clock.elapsed(), memory)
    out = args.out / f"large_scale{suffix}.json"
    png = args.png or HERE / f"large_scale{suffix}.png"
    save_json(out, {
        "benchmark": "binary hinge SVM at n = d = 10^6 (issue 14 item 4): time to rel. subopt "
        "1e-3 at lam = 1e-6 and memory, nsjax vs LIBLINEAR",
        "mode": "full" if caps is CAPS else suffix.lstrip("_"), "target": TARGET,
        "trajectory_rel": LONGER_REL, "dtypes": dtypes,
        "caps": {**{k: v for k, v in dataclasses.asdict(caps).items() if k != "lib"},
                 "liblinear": {k: v for k, v in dataclasses.asdict(caps.lib).items()
                               if k.startswith("lib_")}},
        "caps_hit": clock.caps_hit,
        "solvers": {n: {"trajectory": repr(METHODS[n][0]), "timed": repr(METHODS[n][1])}
                    for n in ORDER},
        "memory_phases": memory.phases, "process_peak_rss_gib": memory.process_peak_kib / 2**20,
        "peak_reset_per_phase": memory.resettable, "machine": host,
        "total_time_s": clock.elapsed(), "loadavg_start": load_start,
        "loadavg_end": os.getloadavg(), "table": lines, "results": res})
    n = res["data"]["shape"][0]
    plot(res, png, f"Binary hinge SVM, n = d = {n:,} (nnz {res['data']['nnz'] / 1e6:.3g} M), "
         f"nsjax vs LIBLINEAR ({host['cpu_model']}); float32 dashed, x: measured nsjax time "
         "to 1e-3")
    print(f"\nwrote {out} and {png}; elapsed {clock.elapsed():.0f} s")


if __name__ == "__main__":
    main()

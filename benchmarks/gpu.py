"""Issue 14 item 5 in one short call: per-step time against the memory roofline, on a GPU.

A lent GPU comes for minutes, so this script does in one run, against a deadline, what the
CPU scripts spread over half an hour, and skips (and records) any part predicted to end after
it. It runs unchanged on a CPU (``--quick`` is the CPU check that it works).

1. The device and its read bandwidth: ``large_scale.read_bandwidth`` (a jitted sum over
   256 MB, best of 7; on a GPU its HBM).
2. The text-like set of ``large_scale.py`` at n = d = N (default 1,000,000; 50 nonzeros a
   row, column frequencies ∝ (j + 1)^-1.1, unit-norm rows), the hinge with L2(λ = 1e-6), as a
   float32 Problem (then float64, time allowing; ``--dtypes float32:off,float32:head,
   float32:on`` compares the sparse layouts: chunks only, rows with the head of
   `nsjax.data.head_width`, and that head with the columns in `nsjax.data.Buckets` too,
   which "auto" uses on GPUs only). Its layouts' bytes
   (``large_scale.layout_bytes``) give the roofline of a step: both layouts read once at the
   measured bandwidth. Timed (best of 7, jitted, the problem an argument): X p and Xᵀu alone,
   each against one layout's read. For the OCAS-like ``BMRM(line_search="exact")`` and the
   default ``Hybrid(sublbfgs=SubLBFGS(certify=False))`` (the iterates of the default,
   without the end-of-run certificate that a k-step run would pay):

   * the compile (``_common.compile_time``: a call stopped at step 0, less the same call
     compiled; max_steps, tol and λ are traced, so every later call reuses the program);
   * the step inside ``solve``'s loop = (t(K2 steps) - t(K1 steps)) / (K2 - K1), best of 3,
     tol = 0, so that init and the end-of-run work cancel; its fraction of the roofline;
   * a trajectory: ``solve(tol=TRAJ_TOL, max_steps=TRAJ_STEPS)`` from w = 0, its
     ``history.best`` and ``history.gap``. The run's certified lower bound LB (value - gap,
     the largest over the runs in float64) and J* = the lowest float64 J of any run's w
     (LIBLINEAR's included) give the time to 1e-3: the first step k with
     (J_k - J*) / J* ≤ 1e-3, then ``solve(max_steps=k, tol=0)`` timed once (compiled
     already). J* is bracketed by [LB, J*]; the bracket's width is reported.

3. LIBLINEAR on the host's CPU on the same float64 CSR data (``LinearSVC(loss="hinge",
   dual=True, fit_intercept=False, C=1/(λn), tol=1e-10)``), one fit at each ``max_iter`` of
   LIB_ITERS (the 2-core CPU run needed 14 epochs at 1M to reach 1e-3): time and float64 J;
   its time to 1e-3 is that of the first fit at 1e-3 (an upper bound: the max_iter grid is
   coarse).
4. A dense set (``make_data``: 80,000 x 500, standard normal; the hinge with L2(1e-5)) in
   float32 and float64: one read of X, X w, Xᵀu, and the step in the loop of
   ``SubLBFGS(certify=False)``, ``BMRM()`` and the Hybrid (``_common.per_step``: t(60 steps) -
   t(20 steps), best of 3 each), against two reads of X.
5. The split of a subLBFGS step on the sparse float32 problem (``step_profile.profile``:
   products, direction, B v in both forms, line search by the device's bracket and by each,
   subgradient, memory update); it also checks that the brackets give the same step on
   that line.

Output: a printed table, ``<out>/gpu.json`` (all numbers, the machine, what was skipped), and
``<png>`` (default ``benchmarks/gpu.png``): per-step time against the roofline for every
timed (set, dtype, solver), and relative suboptimality against time on the sparse set. JSON
is written after every part, so a run stopped by its time limit keeps what it measured.

    python benchmarks/gpu.py [--quick] [--n N] [--budget SECONDS] [--out DIR] [--png PATH]
    python benchmarks/gpu.py --replot benchmarks/results/gpu.json   # the plot again
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import nsjax  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402  (the script's folder is on sys.path only from here)
    HERE,
    PLOT_FLOOR,
    best_of,
    compile_time,
    hinge_objective,
    machine,
    per_step,
    pyplot,
    save_json,
    timed_solve,
)
from large_scale import generate, layout_bytes, read_bandwidth  # noqa: E402
from step_profile import profile  # noqa: E402

S = nsjax.solvers
LAM = 1e-6
DENSE_LAM = 1e-5
TARGET = 1e-3
TRAJ_TOL = 1e-4  # absolute (J < 1 here): certifies ~3e-4 relative
TRAJ_STEPS = 1000
KS = (10, 30)  # the step in the loop: t(30) - t(10)
DENSE_KS = (20, 60)
LIB_ITERS = (8, 16, 32)
LIB_TOTAL_S = 30.0  # LIBLINEAR's fits stop before this: device time is scarce
COMPILE_GUESS = 30.0  # s, a solver's compile in the deadline's forecasts
METHODS = {
    "OCAS-like": S.BMRM(line_search="exact"),
    "Hybrid": S.Hybrid(sublbfgs=S.SubLBFGS(certify=False)),
}
DENSE_METHODS = {
    "SubLBFGS": S.SubLBFGS(certify=False),
    "BMRM": S.BMRM(),
    "Hybrid": S.Hybrid(sublbfgs=S.SubLBFGS(certify=False)),
}
DTYPES = {"float32": np.float32, "float64": np.float64}


class Clock:
    """Seconds since the start, against a deadline; ``fits(s)``: would s more end before it."""

    def __init__(self, budget: float):
        self.start, self.budget = time.perf_counter(), budget

    def now(self) -> float:
        return time.perf_counter() - self.start

    def fits(self, seconds: float) -> bool:
        return self.now() + seconds <= self.budget

    def log(self, msg: str) -> None:
        print(f"[{self.now():6.1f} s] {msg}", flush=True)


def make_data(n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """The dense set: X standard normal from ``default_rng(0)``, y = sign(X w_planted + 0.5
    noise) (the set of issue 14's dense-step study; RESULTS.md)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, d))
    w_planted = rng.standard_normal(d)
    y = np.sign(X @ w_planted + 0.5 * rng.standard_normal(n))
    return X, np.where(y == 0, 1.0, y)


def products(prob) -> dict:
    X = prob.X
    n, d = X.shape
    return {"mv_s": best_of(jax.jit(lambda X, v: X.mv(v)), X, jnp.ones(d, X.dtype)),
            "rmv_s": best_of(jax.jit(lambda X, u: X.rmv(u)), X, jnp.ones(n, X.dtype))}


def sparse_method(prob, solver, X, y, clock: Clock) -> dict:
    """Compile, the step in the loop, the trajectory (see the module docstring)."""
    out = {"solver": repr(solver), "compile_s": compile_time(prob, solver, TRAJ_STEPS)}
    clock.log(f"    compiled in {out['compile_s']:.1f} s")
    runs = {k: min(timed_solve(prob, solver, k, 0.0)[0] for _ in range(3)) for k in KS}
    out["step_s"] = (runs[KS[1]] - runs[KS[0]]) / (KS[1] - KS[0])
    out["fixed_s"] = runs[KS[0]] - KS[0] * out["step_s"]
    clock.log(f"    step in the loop {1e3 * out['step_s']:.2f} ms")
    wall, sol = timed_solve(prob, solver, TRAJ_STEPS, TRAJ_TOL)
    steps = int(sol.num_steps)
    out.update(
        wall_s=wall, steps=steps, result=nsjax.RESULTS(int(sol.result)).name,
        value=float(sol.value), gap=float(sol.gap), lower_bound=float(sol.value - sol.gap),
        value_f64=hinge_objective(np.asarray(sol.w, dtype=np.float64), X, y, LAM),
        values=np.asarray(sol.history.best, dtype=float)[:steps].tolist(),
        gaps=np.asarray(sol.history.gap, dtype=float)[:steps].tolist(),
        stats={k: int(v) for k, v in sol.stats.items()})
    clock.log(f"    trajectory: {steps} steps in {wall:.2f} s, {out['result']}, "
              f"J {out['value']:.8g}, gap {out['gap']:.2e}")
    return out


def time_to_target(prob, solver, row: dict, X, y, j_star: float) -> dict | None:
    rel = (np.asarray(row["values"]) - j_star) / j_star
    hits = np.flatnonzero(rel <= TARGET)
    if not hits.size:
        return None
    k = int(hits[0]) + 1
    wall, sol = timed_solve(prob, solver, k, 0.0)
    j = hinge_objective(np.asarray(sol.w, dtype=np.float64), X, y, LAM)
    return {"steps": k, "time_s": wall, "rel_subopt_f64": (j - j_star) / j_star}


def liblinear(X, y, clock: Clock, per_iter_guess: float) -> list[dict]:
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    fits, spent = [], 0.0
    for it in LIB_ITERS:
        predicted = it * per_iter_guess * 1.2
        if not clock.fits(predicted) or spent + predicted > LIB_TOTAL_S:
            fits.append({"max_iter": it, "skipped": f"deadline (predicted {predicted:.0f} s)"})
            continue
        clf = LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=1 / (LAM * X.shape[0]),
                        tol=1e-10, max_iter=it)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            clf.fit(X, y)
            wall = time.perf_counter() - t0
        per_iter_guess, spent = wall / it, spent + wall
        fits.append({"max_iter": it, "time_s": wall, "n_iter": int(np.max(clf.n_iter_)),
                     "value": hinge_objective(clf.coef_.ravel(), X, y, LAM)})
        clock.log(f"  LIBLINEAR max_iter={it}: {wall:.2f} s, J {fits[-1]['value']:.8g}")
    return fits


def sparse_dtype(X, y, variant: str, res: dict, args, clock: Clock, save) -> None:
    """Part 2 (and 3, 5 for the first variant) for one variant of the sparse set: a dtype,
    optionally ":off" (chunks only), ":head" (a row head) or ":on" (a row head and column
    buckets) for `nsjax.data.ROW_HEAD` and `COL_BUCKETS` (default: "auto" for both)."""
    sp = res["sparse"]
    dt, _, layout = variant.partition(":")
    nsjax.data.ROW_HEAD, nsjax.data.COL_BUCKETS = {
        "off": (False, False), "head": (True, False), "on": (True, True),
        "": ("auto", "auto")}[layout]
    t0 = start = time.perf_counter()
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y,
                         dtype=DTYPES[dt])
    jax.block_until_ready(prob.X)
    layouts = layout_bytes(prob, X, dt)
    head_index = prob.X.by_row.head_index
    entry = {"build_s": time.perf_counter() - t0, "row_head": nsjax.data.ROW_HEAD,
             "col_buckets": type(prob.X.by_col).__name__ == "Buckets",
             "row_head_width": 0 if head_index is None else int(head_index.shape[1]),
             "layouts": {k: layouts[k] for k in ("nnz", "bytes", "bytes_per_nnz")},
             **products(prob), "methods": {}}
    sp["dtypes"][variant] = entry
    both = entry["layouts"]["bytes"]["both"]
    entry["roofline_step_s"] = both / res["read_bandwidth_bytes_s"]
    clock.log(f"  {variant} (row head {entry['row_head_width']}, columns in "
              f"{type(prob.X.by_col).__name__}): built in "
              f"{entry['build_s']:.1f} s; X p {1e3 * entry['mv_s']:.2f} "
              f"ms, Xᵀu {1e3 * entry['rmv_s']:.2f} ms; roofline step "
              f"{1e3 * entry['roofline_step_s']:.2f} ms ({both / 1e9:.2f} GB)")
    for name, solver in METHODS.items():
        if not clock.fits(COMPILE_GUESS + 60):
            entry["methods"][name] = {"skipped": "deadline"}
            continue
        clock.log(f"  {variant} {name}")
        row = sparse_method(prob, solver, X, y, clock)
        row["roofline_fraction"] = entry["roofline_step_s"] / row["step_s"]
        entry["methods"][name] = row
        save()
    entry["elapsed_s"] = time.perf_counter() - start  # build and methods: float64's forecast
    first = variant == args.dtypes[0]
    if first and not args.no_liblinear:
        sp["liblinear"] = liblinear(X, y, clock, 0.5 * args.n / 1e6)  # 2-core CPU: 0.5 s/epoch
    # J*: the lowest float64 J of every run so far; the best certified lower bound
    rows = [r for e in sp["dtypes"].values() for r in e.get("methods", {}).values()
            if "values" in r]
    libs = [f for f in sp.get("liblinear", []) if "value" in f]
    if rows:
        sp["j_star"] = min([r["value_f64"] for r in rows] + [f["value"] for f in libs])
        sp["lower_bound"] = max(r["lower_bound"] for r in rows)
        sp["j_star_certified_rel"] = (sp["j_star"] - sp["lower_bound"]) / sp["j_star"]
        for name, r in entry["methods"].items():
            if "values" in r:
                r["time_to"] = time_to_target(prob, METHODS[name], r, X, y, sp["j_star"])
                r["time_to_j_star"] = sp["j_star"]
        for f in libs:
            f["rel_subopt"] = (f["value"] - sp["j_star"]) / sp["j_star"]
    save()
    if first and args.profile and clock.fits(90):
        clock.log("  step split (step_profile.profile, SubLBFGS(certify=False))")
        sp["profile_float32"] = profile(prob, S.SubLBFGS(memory=15, certify=False))
        save()



def dense_part(args, res: dict, clock: Clock, save) -> None:
    n, d = args.dense
    X, y = make_data(n, d)
    res["dense"] = {"shape": [n, d], "lam": DENSE_LAM, "dtypes": {}}
    for dt in ("float32", "float64"):
        if not clock.fits(len(DENSE_METHODS) * (COMPILE_GUESS + 10)):
            res["dense"]["dtypes"][dt] = {"skipped": "deadline"}
            continue
        prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(DENSE_LAM), X, y,
                             dtype=DTYPES[dt])
        read = best_of(jax.jit(jnp.sum), prob.X.dense)
        entry = {"bytes": int(prob.X.dense.nbytes), "read_s": read, **products(prob),
                 "methods": {}}
        # two reads at the measured bandwidth: on a GPU the timed sum of X includes a call
        entry["two_reads_at_bandwidth_s"] = 2 * entry["bytes"] / res["read_bandwidth_bytes_s"]
        res["dense"]["dtypes"][dt] = entry
        clock.log(f"dense {n:,} x {d} {dt}: read {1e3 * read:.3f} ms "
                  f"({entry['bytes'] / read / 1e9:.0f} GB/s), X w {1e3 * entry['mv_s']:.3f}, "
                  f"Xᵀu {1e3 * entry['rmv_s']:.3f} ms")
        for name, solver in DENSE_METHODS.items():
            if not clock.fits(COMPILE_GUESS + 10):
                entry["methods"][name] = {"skipped": "deadline"}
                continue
            r = per_step(prob, solver, DENSE_KS)
            if r.get("step_s"):
                r["over_two_reads"] = r["step_s"] / (2 * read)
                r["over_two_reads_at_bandwidth"] = (r["step_s"]
                                                    / entry["two_reads_at_bandwidth_s"])
            entry["methods"][name] = r
            clock.log(f"  {name}: step {1e3 * (r.get('step_s') or math.nan):.3f} ms "
                      f"({r.get('over_two_reads', math.nan):.2f} x two reads)")
            save()


def report(res: dict) -> list[str]:
    lines = [f"device: {res['device']}; read bandwidth {res['read_bandwidth_bytes_s'] / 1e9:.0f}"
             " GB/s", ""]
    sp = res.get("sparse")
    if sp:
        lines.append(f"text-like {sp['n']:,} x {sp['n']:,}, nnz {sp['nnz']:,}, lam {LAM:g}; "
                     f"J* {sp.get('j_star', math.nan):.10g}, certified to "
                     f"{sp.get('j_star_certified_rel', math.nan):.1e}")
        head = (f"{'dtype':12s} {'method':10s} {'step ms':>8s} {'roof ms':>8s} {'% roof':>7s} "
                f"{'steps':>6s} {'result':>18s} {'t(1e-3)':>8s} {'k':>5s} {'compile':>8s}")
        lines += [head, "-" * len(head)]
        for dt, e in sp["dtypes"].items():
            if "skipped" in e:
                lines.append(f"{dt:12s} skipped: {e['skipped']}")
                continue
            lines.append(f"{dt:12s} {'X p':10s} {1e3 * e['mv_s']:8.2f}; Xᵀu "
                         f"{1e3 * e['rmv_s']:.2f} ms; both layouts "
                         f"{e['layouts']['bytes']['both'] / 1e9:.2f} GB")
            for name, r in e["methods"].items():
                if "skipped" in r:
                    lines.append(f"{dt:12s} {name:10s} skipped: {r['skipped']}")
                    continue
                t = r.get("time_to")
                lines.append(
                    f"{dt:12s} {name:10s} {1e3 * r['step_s']:8.2f} "
                    f"{1e3 * e['roofline_step_s']:8.2f} {100 * r['roofline_fraction']:6.1f}% "
                    f"{r['steps']:6d} {r['result']:>18s} "
                    f"{(format(t['time_s'], '.3g') + ' s') if t else 'n/a':>8s} "
                    f"{(t['steps'] if t else '-')!s:>5s} {r['compile_s']:7.1f}s")
        for f in sp.get("liblinear", []):
            if "time_s" in f:
                lines.append(f"LIBLINEAR (host CPU) max_iter={f['max_iter']}: {f['time_s']:.2f} "
                             f"s, rel subopt {f.get('rel_subopt', math.nan):.1e}")
        if "profile_float32" in sp:
            p = sp["profile_float32"]
            lines.append("subLBFGS step split, float32 (ms): " + ", ".join(
                f"{k} {p[k]:.2f}" for k in (
                    "step_in_loop", "step", "Xw", "Xtu", "direction", "Bv", "Bv_two_loop",
                    "Bv_compact", "line_search", "ls_sort", "ls_bisect", "ls_multisect",
                    "subgradient", "commit", "dual") if k in p)
                         + f"; sort == bisect: {p.get('eta_sort_equals_bisect')}, multisect == "
                         f"bisect: {p.get('eta_multisect_equals_bisect')}")
    de = res.get("dense")
    if de:
        lines += ["", f"dense {de['shape'][0]:,} x {de['shape'][1]}, hinge, lam {DENSE_LAM:g}"]
        for dt, e in de["dtypes"].items():
            if "skipped" in e:
                lines.append(f"{dt:12s} skipped: {e['skipped']}")
                continue
            lines.append(f"{dt:12s} read {1e3 * e['read_s']:.3f} ms, X w {1e3 * e['mv_s']:.3f}, "
                         f"Xᵀu {1e3 * e['rmv_s']:.3f} ms")
            for name, r in e["methods"].items():
                if "step_s" in r and r["step_s"]:
                    lines.append(f"{dt:12s} {name:10s} step {1e3 * r['step_s']:.3f} ms = "
                                 f"{r['over_two_reads']:.2f} x two timed reads, "
                                 f"{r['over_two_reads_at_bandwidth']:.2f} x two reads at "
                                 "the bandwidth")
                else:
                    lines.append(f"{dt:12s} {name:10s} {r.get('skipped', 'no step time')}")
    print("\n".join(lines), flush=True)
    return lines


def plot(res: dict, path: Path) -> None:
    plt = pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    labels, steps, roofs = [], [], []
    for set_name, key, roof_of in (("sparse", "sparse", lambda e: e["roofline_step_s"]),
                                   ("dense", "dense", lambda e: 2 * e["read_s"])):
        for dt, e in res.get(key, {}).get("dtypes", {}).items():
            for name, r in e.get("methods", {}).items():
                if r.get("step_s"):
                    labels.append(f"{set_name}\n{dt}\n{name}")
                    steps.append(1e3 * r["step_s"])
                    roofs.append(1e3 * roof_of(e))
    x = np.arange(len(labels))
    ax1.bar(x - 0.2, steps, 0.4, label="step in the loop")
    ax1.bar(x + 0.2, roofs, 0.4, label="roofline (sparse: both layouts; dense: two reads)")
    ax1.set_xticks(x, labels, fontsize=6)
    ax1.set_yscale("log")
    ax1.set_ylabel("ms per step")
    ax1.legend(fontsize=7)
    sp = res.get("sparse", {})
    for dt, e in sp.get("dtypes", {}).items():
        for name, r in e.get("methods", {}).items():
            if "values" not in r or "j_star" not in sp:
                continue
            v = np.maximum((np.asarray(r["values"]) - sp["j_star"]) / sp["j_star"], PLOT_FLOOR)
            t = r["wall_s"] * np.arange(1, len(v) + 1) / max(len(v), 1)
            ax2.plot(t, v, ls="--" if dt.startswith("float32") else "-",
                     color={"OCAS-like": "C4", "Hybrid": "C6"}.get(name), label=f"{name} {dt}")
    lib = [f for f in sp.get("liblinear", []) if "rel_subopt" in f]
    if lib:
        ax2.plot([f["time_s"] for f in lib],
                 [max(f["rel_subopt"], PLOT_FLOOR) for f in lib], "o-", color="k",
                 label="LIBLINEAR (host CPU; one fit per max_iter)")
    ax2.axhline(TARGET, color="gray", lw=0.8, ls=":")
    ax2.set_ylim(bottom=1e-6)  # the run that sets J* ends at 0
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("time (s; step k at k / steps of the run's wall time)")
    ax2.set_ylabel("(J - J*) / J*")
    ax2.legend(fontsize=7)
    n = sp.get("n")
    ax2.set_title(f"text-like {n:,} x {n:,}, lam = {LAM:g}" if n else "", fontsize=9)
    fig.suptitle(f"nsjax on {res['device']}: per-step time against the memory roofline",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="n = 20,000 and a 8,000 x 100 dense set (a CPU check)")
    parser.add_argument("--n", type=int, default=None, help="n = d of the sparse set")
    parser.add_argument("--budget", type=float, default=420.0, help="deadline, seconds")
    parser.add_argument("--dtypes", default="float32,float64",
                        help="variants of the sparse set: dtype[:off|:head|:on] (chunks only, "
                        "a row head, a row head and column buckets; default: auto)")
    parser.add_argument("--no-dense", dest="dense_part", action="store_false")
    parser.add_argument("--no-liblinear", action="store_true")
    parser.add_argument("--no-profile", dest="profile", action="store_false")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--png", type=Path, default=None)
    parser.add_argument("--replot", type=Path, default=None,
                        help="only draw the plot (and print the table) of this gpu.json")
    args = parser.parse_args(argv)
    if args.replot:
        res = json.loads(args.replot.read_text())
        report(res)
        plot(res, args.png or HERE / "gpu.png")
        return
    args.n = args.n or (20_000 if args.quick else 1_000_000)
    args.dense = (8_000, 100) if args.quick else (80_000, 500)
    args.dtypes = args.dtypes.split(",")
    suffix = "_quick" if args.quick else ""
    png = args.png or HERE / f"gpu{suffix}.png"
    clock = Clock(args.budget)
    dev = jax.devices()[0]
    res = {"benchmark": "issue 14 item 5: per-step time against the roofline",
           "device": f"{dev.platform}: {getattr(dev, 'device_kind', str(dev))}",
           "machine": machine(), "budget_s": args.budget, "quick": args.quick}

    def save():
        res["elapsed_s"] = clock.now()
        save_json(args.out / f"gpu{suffix}.json", res)

    # 2 GB on a GPU: a 256 MB sum there takes ~0.1 ms, of which the call itself is a part
    res["read_bandwidth_bytes_s"] = read_bandwidth(2**31 if dev.platform == "gpu" else 2**28)
    clock.log(f"{res['device']}: read bandwidth {res['read_bandwidth_bytes_s'] / 1e9:.0f} GB/s")
    save()
    t0 = time.perf_counter()
    X, y = generate(args.n)
    res["sparse"] = {"n": args.n, "nnz": int(X.nnz), "lam": LAM,
                     "generate_s": time.perf_counter() - t0, "dtypes": {}}
    clock.log(f"generated {args.n:,} x {args.n:,}, nnz {X.nnz:,}")
    # float32 first (the GPU's dtype), then the dense set, then float64 as time allows
    first, *rest = args.dtypes
    sparse_dtype(X, y, first, res, args, clock, save)
    if args.dense_part:
        dense_part(args, res, clock, save)
    for dt in rest:
        took = res["sparse"]["dtypes"][first].get("elapsed_s", 1e9)
        if clock.fits(1.3 * took):
            sparse_dtype(X, y, dt, res, args, clock, save)
        else:
            res["sparse"]["dtypes"][dt] = {"skipped": f"deadline (predicted {1.3 * took:.0f} s)"}
    res["table"] = report(res)
    save()
    plot(res, png)
    print(f"wrote {args.out / f'gpu{suffix}.json'} and {png}; {clock.now():.0f} s")


if __name__ == "__main__":
    main()

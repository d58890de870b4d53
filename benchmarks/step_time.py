"""Per-step time of nsjax subLBFGS, for several source trees in one run (before / after).

The problem is the sparse set of ``binary_hinge.py`` at lam = 1e-5:
``nsjax.datasets.synthetic_sparse(50_000, 20_000, 0.0025, seed=0)`` (5,000 x 2,000 with
``--quick``), labels mapped to {-1, +1}, ``Problem(Hinge(), L2(1e-5), X, y)`` in float64
(``jax_enable_x64``), solved from w = 0 by ``SubLBFGS(memory=15, certify=False)``.

Each tree given with ``--tree NAME=PATH`` gets its own worker process, a copy of this
script run with ``PYTHONPATH=PATH`` (so ``import nsjax`` is that tree's; the driver checks
``nsjax.__file__``). A worker builds the problem with its tree's code, then makes one
warm-up call ``nsjax.solve(prob, solver, max_steps=K, tol=0.0)`` (compiles), and from then
on times that identical call (``time.perf_counter``, synced with ``jax.block_until_ready``
on the solution) each time the driver asks. Workers are set up one after the other (so
compiles do not compete for the cores), then the timed calls are interleaved across the
trees, repeat by repeat (A1, B1, A2, B2, ...), so slow drift of the machine hits every tree
alike; only one worker runs at a time. Reported per tree: the best of ``--repeats`` wall
times, seconds per step = that time / num_steps, compile time = the warm-up call minus the
best timed call (the same program, so the difference is compiling and loading it), and
num_steps (tol = 0 runs to K unless the solver stops earlier: stalled, failed, ...).

Only public API that every tree has is used in the worker: ``nsjax.solve``,
``nsjax.Problem``, ``nsjax.losses.Hinge``, ``nsjax.regularizers.L2``,
``nsjax.solvers.SubLBFGS``, ``nsjax.datasets.synthetic_sparse``, ``sol.num_steps``,
``sol.w`` (and ``sol.value`` where present, as a check that the trees compute the same
iterates).

Output: a table (ratios relative to the first tree), a JSON file (all wall times, the
trees' git commits, the data fingerprint, the machine) and a bar plot.

    python benchmarks/step_time.py --tree before=/tmp/old --tree after=. \\
        [--steps 100] [--repeats 3] [--quick]

Writes ``benchmarks/results/step_time.json`` (like the other scripts' JSON, not tracked) and
``benchmarks/step_time.png``; ``--quick`` writes ``benchmarks/results/step_time_quick.json``
and ``benchmarks/step_time_quick.png``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
LAM = 1e-5
DENSITY = 0.0025
SEED = 0  # as binary_hinge.py
MEMORY = 15
FULL_SHAPE = (50_000, 20_000)
QUICK_SHAPE = (5_000, 2_000)
FULL_STEPS = 100
QUICK_STEPS = 50
TAG = "@@step_time@@ "  # prefix of the worker's protocol lines on stdout


# ----------------------------------------------------------------------------------------
# Worker: runs with PYTHONPATH=<tree>; talks JSON lines over stdin / stdout
# ----------------------------------------------------------------------------------------


def _send(msg: dict) -> None:
    sys.stdout.write(TAG + json.dumps(msg) + "\n")
    sys.stdout.flush()


def worker(n: int, d: int, steps: int) -> None:
    import jax

    jax.config.update("jax_enable_x64", True)
    import numpy as np

    import nsjax

    if hasattr(nsjax, "ConvergenceWarning"):  # runs stop at max_steps on purpose (tol = 0)
        import warnings

        warnings.simplefilter("ignore", nsjax.ConvergenceWarning)
    t0 = time.perf_counter()
    X, y = nsjax.datasets.synthetic_sparse(n, d, DENSITY, seed=SEED)
    y = np.where(y > 0, 1.0, -1.0)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(LAM), X, y)
    solver = nsjax.solvers.SubLBFGS(memory=MEMORY, certify=False)
    jax.block_until_ready(prob.X)
    setup_s = time.perf_counter() - t0

    def timed() -> tuple[float, Any]:
        t = time.perf_counter()
        sol = nsjax.solve(prob, solver, max_steps=steps, tol=0.0)
        jax.block_until_ready(sol)
        return time.perf_counter() - t, sol

    def summary(sol: Any) -> dict:
        value = getattr(sol, "value", None)
        return {"num_steps": int(sol.num_steps),
                "value": None if value is None else float(value),
                "w_norm": float(np.linalg.norm(np.asarray(sol.w)))}

    warmup_s, sol = timed()
    _send({"ready": True, "nsjax_file": nsjax.__file__, "jax": jax.__version__,
           "nsjax_version": getattr(nsjax, "__version__", None), "setup_s": setup_s,
           "warmup_s": warmup_s, "solver": repr(solver),
           "data": {"n": int(X.shape[0]), "d": int(X.shape[1]), "nnz": int(X.nnz),
                    "sum_X": float(X.sum()), "sum_y": float(y.sum())},
           **summary(sol)})
    for line in sys.stdin:
        if line.strip() != "time":
            break
        wall, sol = timed()
        _send({"wall_s": wall, **summary(sol)})


# ----------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------


class Worker:
    """One tree's worker process."""

    def __init__(self, name: str, tree: Path, n: int, d: int, steps: int):
        self.name, self.tree = name, tree
        self.log = tempfile.TemporaryFile(mode="w+")  # the worker's stderr (JAX warnings)
        env = dict(os.environ, PYTHONPATH=str(tree))
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--n", str(n),
               "--d", str(d), "--steps", str(steps)]
        self.proc = subprocess.Popen(cmd, env=env, cwd=tree, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)

    def receive(self) -> dict:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith(TAG):
                return json.loads(line[len(TAG):])
        self.proc.wait()
        self.log.seek(0)
        raise RuntimeError(f"worker {self.name} ({self.tree}) exited with "
                           f"{self.proc.returncode}:\n{self.log.read()[-4000:]}")

    def time_once(self) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write("time\n")
        self.proc.stdin.flush()
        return self.receive()

    def close(self) -> None:
        if self.proc.stdin is not None and not self.proc.stdin.closed:
            self.proc.stdin.close()  # ends the worker's loop
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def git_state(tree: Path) -> dict:
    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(tree), *args], capture_output=True,
                                 text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    dirty = git("status", "--porcelain", "--", "nsjax")
    return {"git_commit": git("rev-parse", "HEAD"),
            "git_subject": git("log", "-1", "--format=%s"),
            "nsjax_uncommitted_changes": dirty.splitlines() if dirty else []}


def parse_tree(spec: str) -> tuple[str, Path]:
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"--tree wants NAME=PATH, got {spec!r}")
    tree = Path(path).expanduser().resolve()
    if not (tree / "nsjax" / "__init__.py").is_file():
        raise argparse.ArgumentTypeError(f"{tree} has no nsjax/__init__.py")
    return name, tree


def measure(trees: list[tuple[str, Path]], n: int, d: int, steps: int,
            repeats: int) -> dict[str, dict]:
    out: dict[str, dict] = {}
    workers: list[Worker] = []
    try:
        for name, tree in trees:  # one after the other: compiles do not share the cores
            w = Worker(name, tree, n, d, steps)
            workers.append(w)
            ready = w.receive()
            expected = tree / "nsjax" / "__init__.py"
            if Path(ready["nsjax_file"]).resolve() != expected:
                raise RuntimeError(f"tree {name}: the worker imported {ready['nsjax_file']}, "
                                   f"not {expected}")
            out[name] = {"tree": str(tree), **git_state(tree), "ready": ready, "runs": []}
            print(f"  {name}: set up in {ready['setup_s']:.1f} s, warm-up solve "
                  f"{ready['warmup_s']:.2f} s ({ready['num_steps']} steps)", flush=True)
        for r in range(repeats):  # interleaved: A1, B1, A2, B2, ...
            for w in workers:
                run = w.time_once()
                out[w.name]["runs"].append(run)
                print(f"  repeat {r + 1}/{repeats} {w.name}: {run['wall_s']:.3f} s",
                      flush=True)
    finally:
        for w in workers:
            w.close()
    for res in out.values():
        walls = [run["wall_s"] for run in res["runs"]]
        steps_taken = res["runs"][0]["num_steps"]
        best = min(walls)
        res.update(
            wall_s=walls, best_s=best, median_s=statistics.median(walls),
            num_steps=steps_taken,
            num_steps_all_runs_equal=all(run["num_steps"] == steps_taken
                                         for run in res["runs"]),
            s_per_step=best / max(steps_taken, 1),
            compile_s=max(res["ready"]["warmup_s"] - best, 0.0),
            final_value=res["runs"][0]["value"])
    return out


def table(results: dict[str, dict]) -> list[str]:
    base = next(iter(results.values()))
    head = (f"{'tree':12s} {'commit':>9s} {'steps':>6s} {'best s':>9s} {'median s':>9s} "
            f"{'ms/step':>9s} {'ratio':>7s} {'compile s':>9s} {'final J':>16s}")
    lines = [head, "-" * len(head)]
    for name, res in results.items():
        ratio = res["s_per_step"] / base["s_per_step"]
        commit = (res["git_commit"] or "?")[:7] + ("+" if res["nsjax_uncommitted_changes"]
                                                    else "")
        value = "n/a" if res["final_value"] is None else f"{res['final_value']:.12g}"
        lines.append(f"{name:12s} {commit:>9s} {res['num_steps']:6d} {res['best_s']:9.4f} "
                     f"{res['median_s']:9.4f} {1e3 * res['s_per_step']:9.3f} {ratio:7.3f} "
                     f"{res['compile_s']:9.2f} {value:>16s}")
    return lines


def checks(results: dict[str, dict]) -> list[str]:
    """Warnings where the trees did not run the same problem or the same number of steps."""
    notes = []
    fingerprints = {json.dumps(r["ready"]["data"], sort_keys=True) for r in results.values()}
    if len(fingerprints) > 1:
        notes.append("WARNING: the trees generated different data: "
                     + "; ".join(f"{k}: {r['ready']['data']}" for k, r in results.items()))
    if len({r["num_steps"] for r in results.values()}) > 1:
        notes.append("WARNING: the trees ran different numbers of steps; compare s/step.")
    values = [r["final_value"] for r in results.values() if r["final_value"] is not None]
    if values and max(values) - min(values) > 1e-9 * max(1.0, abs(min(values))):
        notes.append("note: the final J differs between the trees (the iterates differ).")
    for name, r in results.items():
        if not r["num_steps_all_runs_equal"]:
            notes.append(f"WARNING: {name}: num_steps varied between repeats.")
        if r["nsjax_uncommitted_changes"]:
            notes.append(f"{name}: '+' = nsjax/ has uncommitted changes in that tree.")
    return notes


def plot(results: dict[str, dict], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    base = results[names[0]]["s_per_step"]
    ms = [1e3 * results[n]["s_per_step"] for n in names]
    comp = [results[n]["compile_s"] for n in names]
    colors = [f"C{i}" for i in range(len(names))]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(4 + 1.6 * len(names), 4))
    bars = ax1.bar(names, ms, color=colors)
    for bar, n in zip(bars, names, strict=True):
        ax1.annotate(f"{results[n]['s_per_step'] / base:.3g}x", (bar.get_x()
                     + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom",
                     fontsize=9)
    ax1.set_ylabel("ms per step (best of repeats)")
    ax1.set_title("time per step", fontsize=10)
    ax2.bar(names, comp, color=colors)
    ax2.set_ylabel("s")
    ax2.set_title("compile (warm-up call minus best call)", fontsize=10)
    for ax in (ax1, ax2):
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", type=parse_tree, default=[],
                        metavar="NAME=PATH",
                        help="a source tree holding nsjax/ (repeat; ratios are to the first)")
    parser.add_argument("--steps", type=int, default=None,
                        help=f"max_steps K (default {FULL_STEPS}; {QUICK_STEPS} with --quick)")
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per tree")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_SHAPE[0]:,} x {QUICK_SHAPE[1]:,} problem, few steps")
    parser.add_argument("--json", type=Path, default=None, help="JSON path (see docstring)")
    parser.add_argument("--png", type=Path, default=None, help="plot path (see docstring)")
    # worker mode (internal): run by the driver with PYTHONPATH=<tree>
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--d", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.n, args.d, args.steps)
        return
    if not args.tree:
        parser.error("give at least one --tree NAME=PATH (two or more to compare)")
    if len({name for name, _ in args.tree}) != len(args.tree):
        parser.error("tree names must differ")
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    n, d = QUICK_SHAPE if args.quick else FULL_SHAPE
    steps = args.steps or (QUICK_STEPS if args.quick else FULL_STEPS)
    json_path = args.json or HERE / "results" / f"step_time{'_quick' if args.quick else ''}.json"
    png = args.png or HERE / f"step_time{'_quick' if args.quick else ''}.png"

    sys.path.insert(0, str(HERE))
    from _common import jsonable, machine

    start = time.perf_counter()
    host = machine()  # the driver's environment; each tree's commit is recorded apart
    print(f"subLBFGS(memory={MEMORY}, certify=False), synthetic sparse {n:,} x {d:,} "
          f"({DENSITY:.2%}), lam={LAM:g}, max_steps={steps}, tol=0, best of {args.repeats}",
          flush=True)
    results = measure(args.tree, n, d, steps, args.repeats)
    print()
    lines = table(results)
    notes = [
        "best s: the fastest of the timed calls of solve(max_steps=K, tol=0) (compiled; "
        "interleaved across the trees); ms/step = best s / steps; ratio: ms/step over the "
        f"first tree's ({next(iter(results))}).",
        "compile s: the warm-up (first) call minus the best timed call of the same program.",
        *checks(results),
    ]
    print("\n".join(lines + [""] + notes), flush=True)
    payload = {
        "benchmark": "nsjax subLBFGS time per step, binary hinge, synthetic sparse",
        "mode": "quick" if args.quick else "full",
        "problem": {"n": n, "d": d, "density": DENSITY, "seed": SEED, "lam": LAM,
                    "dtype": "float64", "loss": "Hinge", "regularizer": "L2"},
        "solver": f"SubLBFGS(memory={MEMORY}, certify=False)", "max_steps": steps,
        "tol": 0.0, "repeats": args.repeats, "order": "interleaved: tree A rep 1, tree B "
        "rep 1, ..., tree A rep 2, ...", "machine": host,
        "total_time_s": time.perf_counter() - start, "table": lines, "notes": notes,
        "results": results,
    }
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(json.dumps(jsonable(payload, ()), indent=1))
    plot(results, f"nsjax subLBFGS per step: synthetic sparse {n:,} x {d:,}, lam={LAM:g}, "
         f"K={steps}, best of {args.repeats} ({host['cpu_model']})", png)
    print(f"\nwrote {json_path} and {png} ({time.perf_counter() - start:.0f} s in all)")


if __name__ == "__main__":
    main()

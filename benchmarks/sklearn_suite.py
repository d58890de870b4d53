"""How much of scikit-learn's own tests, run on nsjax's estimators, is compiling (issue 51,
item 5: the compile share of that wall time should be at most 30 %).

scikit-learn ships its test files inside the installed package. This script runs those
that exercise the four estimators nsjax replaces (``svm/tests/test_svm.py``,
``test_sparse.py``, ``linear_model/tests/test_logistic.py``, ``test_coordinate_descent.py``,
``test_sparse_coordinate_descent.py``, ``test_sag.py``, ``test_common.py``; those present)
with pytest, in a subprocess per run, with nsjax's classes put in place of scikit-learn's:
a small pytest plugin (written to a temporary folder, loaded with ``-p``) replaces
``sklearn.svm.LinearSVC`` and ``sklearn.linear_model.LogisticRegression``, ``Lasso`` and
``ElasticNet`` by `nsjax.sklearn`'s before the test modules are imported, and, after
collection, every module attribute of the test modules that still *is* one of the four
scikit-learn classes. (scikit-learn's private modules, ``sklearn.linear_model._logistic``
and the like, are left alone: ``LogisticRegressionCV`` and ``LassoCV`` stay scikit-learn's.)
The assertions are unchanged, so many tests fail (other defaults, attributes and
numerics): they are counted, not fixed. JAX runs in float64 (``JAX_ENABLE_X64``) as
scikit-learn does, unless ``--float32``.

Measured inside the pytest process, by the plugin:

- the wall time from the plugin's import (before collection) to the end of the session;
- JAX's tracing, lowering and compiling, from JAX's monitoring events
  (``jax.monitoring``): the seconds per event name (``/jax/core/compile/
  jaxpr_trace_duration``, ``jaxpr_to_mlir_module_duration``, ``backend_compile_duration``),
  and, as the headline "compile+trace" time, the union of those events' time spans (a
  trace of a jitted function nested in another's is counted once, not twice). The
  compile share is that union over the wall time;
- nsjax's programs: compiled or loaded from nsjax's disk cache
  (``nsjax.testing.record_programs``), their counts and seconds, and ``loaded_count()`` at the end,
  where `nsjax.programs` has them;
- the calls of each estimator's ``fit`` (the proof that nsjax's classes were used), with
  the seconds spent in them and the calls that raised;
- the outcomes (passed, failed, errors, skipped, xfailed, xpassed, collection errors), the
  failures' messages and the slowest tests with their compile time.

The plugin writes its result as JSON every 15 s and at the end of the session, so a run
that crashes (a negative return code: a signal) or passes ``--timeout`` (killed; recorded)
still leaves what it counted.

Runs: nsjax "cold" (``NSJAX_CACHE_DIR`` a new empty folder: every program compiled), nsjax
"warm" (the same folder again: programs loaded from disk; not with ``--only-cold``) and the
same files with scikit-learn's own classes (the peer; ``--no-peer`` leaves it out). Each run
is one pytest process, started from a temporary folder with an empty ini file (so no
project's ``conftest.py`` or pytest settings apply; scikit-learn's own ``conftest.py``
does), ``-p no:cacheprovider -o addopts=""``, not stopping at failures.

Output: a table (per run: wall seconds, compile+trace seconds, the compile share, the
outcomes, whether it crashed), ``benchmarks/results/sklearn_suite.json`` and
``benchmarks/sklearn_suite.png`` (per run, the wall time split into compile+trace and the
rest, scikit-learn's run beside). With ``--files`` (a subset), ``*_quick.json`` and
``*_quick.png`` instead.

    python benchmarks/sklearn_suite.py                    # all files, cold, warm, peer
    python benchmarks/sklearn_suite.py --files test_sparse.py --only-cold   # a check
    python benchmarks/sklearn_suite.py --timeout 3000     # seconds per pytest process
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import sklearn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, pyplot, save_figure, save_json  # noqa: E402  (the script's folder is on sys.path)

REPO = HERE.parent
SKLEARN_DIR = Path(sklearn.__file__).resolve().parent
FILES = ("svm/tests/test_svm.py", "svm/tests/test_sparse.py",
         "linear_model/tests/test_logistic.py", "linear_model/tests/test_coordinate_descent.py",
         "linear_model/tests/test_sparse_coordinate_descent.py",
         "linear_model/tests/test_sag.py", "linear_model/tests/test_common.py")
TARGET_SHARE = 0.30
PLUGIN = "sklearn_suite_plugin"

# The pytest plugin, written to a temporary folder on PYTHONPATH and loaded with -p. Its
# settings come from the environment: SKLEARN_SUITE_MODE ("nsjax": substitute nsjax's
# estimators; "sklearn": scikit-learn's own) and SKLEARN_SUITE_RESULT (the JSON to write).
PLUGIN_SOURCE = textwrap.dedent('''\
    """Written by benchmarks/sklearn_suite.py: nsjax's estimators in scikit-learn's tests,
    timed; see that script's docstring."""

    import functools
    import json
    import os
    import sys
    import threading
    import time

    import pytest

    T0 = time.perf_counter()
    MODE = os.environ.get("SKLEARN_SUITE_MODE", "nsjax")
    RESULT = os.environ["SKLEARN_SUITE_RESULT"]
    WRITE_EVERY = 15.0  # s: partial results, for a run that crashes or times out
    KEYWORDS = ("compile", "trace", "lower")
    NAMES = ("Lasso", "ElasticNet", "LinearSVC", "LogisticRegression")  # subclass first

    state = {
        "mode": MODE, "finished": False, "exit_status": None, "pid": os.getpid(),
        "outcomes": {k: 0 for k in ("passed", "failed", "error", "skipped", "xfailed",
                                    "xpassed", "collection_error")},
        "failures": [], "events": {}, "fit": {}, "substituted": {}, "programs": {},
        "collected": None, "collection_s": None, "tests": [],
    }
    spans = []  # (start, end) of the compile-related JAX events, time.time()
    _local = threading.local()
    _last_write = [0.0]
    _test_start = {}


    def compile_related(event):
        # "/jax/compilation_cache/compile_time_saved_sec" is time not spent: left out
        return any(k in event for k in KEYWORDS) and "saved" not in event


    def union(intervals):
        total, end = 0.0, None
        for a, b in sorted(intervals):
            if end is None or a > end:
                total += b - a
                end = b
            elif b > end:
                total += b - end
                end = b
        return total


    def on_duration(event, duration, **kwargs):
        slot = state["events"].setdefault(event, {"seconds": 0.0, "count": 0})
        slot["seconds"] += duration
        slot["count"] += 1


    def on_span(event, start, end, **kwargs):
        if compile_related(event):
            spans.append((start, end))


    if MODE == "nsjax":
        from jax import monitoring

        monitoring.register_event_duration_secs_listener(on_duration)
        monitoring.register_event_time_span_listener(on_span)


    def count_fit(classes, prefix):
        """Wrap ``fit`` where each of ``classes`` gets it from; count the outermost calls
        per class (a fit calling another fit counts once)."""
        owners = {}
        for cls in classes.values():
            owner = next(c for c in cls.__mro__ if "fit" in c.__dict__)
            owners[owner] = owner.__dict__["fit"]
        for owner, original in owners.items():

            def make(original):
                @functools.wraps(original)
                def fit(self, *args, **kwargs):
                    depth = getattr(_local, "depth", 0)
                    if depth:
                        return original(self, *args, **kwargs)
                    name = prefix + next((n for n in NAMES if isinstance(self, classes[n])),
                                         type(self).__name__)
                    slot = state["fit"].setdefault(name, {"calls": 0, "raised": 0,
                                                          "seconds": 0.0})
                    slot["calls"] += 1
                    _local.depth = 1
                    t0 = time.perf_counter()
                    try:
                        return original(self, *args, **kwargs)
                    except BaseException:
                        slot["raised"] += 1
                        raise
                    finally:
                        _local.depth = 0
                        slot["seconds"] += time.perf_counter() - t0

                return fit

            owner.fit = make(original)


    def count_programs():
        """Count nsjax's compiled programs and those loaded from its disk cache."""
        try:
            from nsjax.testing import record_programs
        except ImportError:
            return
        record_programs(state["programs"])


    ORIGINALS = {}  # scikit-learn's class -> nsjax's


    def pytest_configure(config):
        import sklearn.linear_model
        import sklearn.svm

        homes = {"LinearSVC": sklearn.svm, "LogisticRegression": sklearn.linear_model,
                 "Lasso": sklearn.linear_model, "ElasticNet": sklearn.linear_model}
        theirs = {name: getattr(module, name) for name, module in homes.items()}
        if MODE != "nsjax":
            count_fit(theirs, "sklearn.")
            return
        import nsjax.sklearn

        ours = {name: getattr(nsjax.sklearn, name) for name in homes}
        for name, module in homes.items():
            ORIGINALS[theirs[name]] = ours[name]
            setattr(module, name, ours[name])
            state["substituted"].setdefault(module.__name__, []).append(name)
        count_fit(ours, "nsjax.")
        count_programs()


    def substitute(module):
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and value in ORIGINALS:
                setattr(module, attr, ORIGINALS[value])
                state["substituted"].setdefault(module.__name__, []).append(attr)


    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(session, config, items):
        state["collected"] = len(items)
        if not ORIGINALS:
            return
        modules = {id(m): m for m in (getattr(i, "module", None) for i in items) if m}
        for name, module in list(sys.modules.items()):  # helpers the tests import
            if name.startswith("sklearn.") and ".tests" in name and module is not None:
                modules[id(module)] = module
        for module in modules.values():
            substitute(module)


    def pytest_collection_finish(session):
        state["collection_s"] = time.perf_counter() - T0


    def pytest_collectreport(report):
        if report.failed:
            state["outcomes"]["collection_error"] += 1
            state["failures"].append({"nodeid": report.nodeid, "when": "collect",
                                      "message": message(report)})


    def message(report):
        crash = getattr(report.longrepr, "reprcrash", None)
        text = getattr(crash, "message", None) or str(report.longrepr)
        return text.strip().splitlines()[0][:300] if text.strip() else ""


    def pytest_runtest_logstart(nodeid, location):
        _test_start[nodeid] = (len(spans), time.perf_counter())


    def pytest_runtest_logreport(report):
        outcomes = state["outcomes"]
        xfail = hasattr(report, "wasxfail")
        if report.when == "call":
            if xfail:
                outcomes["xfailed" if report.skipped else "xpassed"] += 1
            else:
                outcomes[report.outcome] += 1
        elif report.failed:
            outcomes["error"] += 1
        elif report.skipped:
            outcomes["xfailed" if xfail else "skipped"] += 1
        else:
            return
        if report.failed:
            state["failures"].append({"nodeid": report.nodeid, "when": report.when,
                                      "message": message(report)})


    def pytest_runtest_logfinish(nodeid, location):
        first, t0 = _test_start.pop(nodeid, (len(spans), time.perf_counter()))
        state["tests"].append((time.perf_counter() - t0, union(spans[first:]), nodeid))
        if time.perf_counter() - _last_write[0] > WRITE_EVERY:
            write()


    def write():
        _last_write[0] = time.perf_counter()
        out = dict(state)
        out["wall_s"] = time.perf_counter() - T0
        out["compile_trace_s"] = union(spans) if MODE == "nsjax" else 0.0
        out["compile_events_sum_s"] = sum(v["seconds"] for k, v in state["events"].items()
                                          if compile_related(k))
        out["tests_run"] = len(state["tests"])
        slowest = sorted(state["tests"], reverse=True)[:20]
        out["tests"] = [{"nodeid": n, "seconds": s, "compile_trace_s": c}
                        for s, c, n in slowest]
        if MODE == "nsjax":
            import nsjax

            programs = getattr(nsjax, "programs", None)
            if programs is not None and hasattr(programs, "loaded_count"):
                state["programs"]["loaded_count"] = programs.loaded_count()
        tmp = RESULT + ".tmp"
        with open(tmp, "w") as f:
            json.dump(out, f, indent=1, default=str)
        os.replace(tmp, RESULT)


    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(session, exitstatus):
        state["finished"] = True
        state["exit_status"] = int(exitstatus)
        write()
''')


def pick_files(names: list[str] | None) -> list[Path]:
    """The test files that exist, or those of ``names`` (file names or paths under
    sklearn/)."""
    present = [SKLEARN_DIR / f for f in FILES if (SKLEARN_DIR / f).exists()]
    missing = [f for f in FILES if not (SKLEARN_DIR / f).exists()]
    if missing:
        print(f"not in this scikit-learn ({sklearn.__version__}): {', '.join(missing)}")
    if not names:
        return present
    chosen = []
    for name in names:
        match = [p for p in present if p.name == name or str(p).endswith("/" + name)]
        if not match:
            raise SystemExit(f"--files: {name} is none of {[p.name for p in present]}")
        chosen.extend(m for m in match if m not in chosen)
    return chosen


def run_pytest(label: str, mode: str, files: list[Path], work: Path, timeout: float,
               cache_dir: Path | None, x64: bool) -> dict:
    """One pytest process over ``files``; the plugin's result and what the parent saw."""
    result = work / f"{label}.json"
    log = work / f"{label}.log"
    result.unlink(missing_ok=True)
    env = dict(os.environ)
    env.pop("NSJAX_TEST_CACHE_DIR", None)  # the nsjax test suite's, not this run's
    env["PYTHONPATH"] = os.pathsep.join(
        [str(work), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["SKLEARN_SUITE_MODE"] = mode
    env["SKLEARN_SUITE_RESULT"] = str(result)
    if x64:
        env["JAX_ENABLE_X64"] = "1"
    if cache_dir is not None:
        env["NSJAX_CACHE_DIR"] = str(cache_dir)
    cmd = [sys.executable, "-m", "pytest", "-p", PLUGIN, "-p", "no:cacheprovider",
           "-o", "addopts=", "-c", str(work / "pytest.ini"),
           "--rootdir", str(SKLEARN_DIR.parent), "--confcutdir", str(SKLEARN_DIR),
           "-q", "--tb=line", *map(str, files)]
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc, timed_out = proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            rc, timed_out = proc.wait(), True
    process_s = time.perf_counter() - t0
    inner = json.loads(result.read_text()) if result.exists() else None
    finished = bool(inner and inner.get("finished"))
    row = {
        "run": label, "mode": mode, "returncode": rc, "timed_out": timed_out,
        "timeout_s": timeout,
        "crashed": not timed_out and (rc < 0 or not finished),
        "process_s": process_s, "nsjax_cache_dir": str(cache_dir) if cache_dir else None,
        "cache_files_after": (sum(1 for _ in cache_dir.iterdir())
                              if cache_dir is not None and cache_dir.exists() else None),
        "x64": x64, "command": cmd,
        "output_tail": log.read_text(errors="replace").splitlines()[-30:],
    }
    if inner is not None:
        wall = inner["wall_s"]
        row.update(inner)
        row["compile_share"] = inner["compile_trace_s"] / wall if wall > 0 else None
    return row


def print_row(r: dict) -> None:
    o = r.get("outcomes", {})
    share = r.get("compile_share")
    crashed = "timeout" if r["timed_out"] else ("yes" if r["crashed"] else "no")
    print(f"{r['run']:14s} {r.get('wall_s', r['process_s']):8.1f} "
          f"{r.get('compile_trace_s', 0.0):10.1f} "
          f"{'' if share is None else f'{100 * share:.1f}':>8s} "
          f"{o.get('passed', 0):7d} {o.get('failed', 0):7d} "
          f"{o.get('error', 0) + o.get('collection_error', 0):7d} "
          f"{o.get('skipped', 0) + o.get('xfailed', 0):7d} {crashed:>8s}", flush=True)


def print_details(r: dict) -> None:
    events = r.get("events", {})
    if events:
        print(f"  JAX events of {r['run']} (seconds summed, count):")
        for name, v in sorted(events.items(), key=lambda kv: -kv[1]["seconds"]):
            print(f"    {name:60s} {v['seconds']:9.2f} {v['count']:7d}")
        print(f"    compile-related, summed {r['compile_events_sum_s']:.2f} s; "
              f"their time spans' union {r['compile_trace_s']:.2f} s")
    if r.get("programs"):
        print(f"  nsjax programs: {r['programs']}")
    if r.get("fit"):
        fits = ", ".join(f"{k} {v['calls']} ({v['raised']} raised, {v['seconds']:.1f} s)"
                         for k, v in sorted(r["fit"].items()))
        print(f"  fit calls: {fits}")
    if r.get("substituted"):
        print(f"  substituted: {r['substituted']}")
    if r.get("crashed") or r.get("timed_out"):
        print("  last output:\n    " + "\n    ".join(r["output_tail"][-10:]))


def plot(rows: list[dict], path: Path, title: str) -> None:
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(8, 4.5))
    names = [r["run"] for r in rows]
    walls = [r.get("wall_s", r["process_s"]) for r in rows]
    compiles = [r.get("compile_trace_s", 0.0) for r in rows]
    rest = [max(w - c, 0.0) for w, c in zip(walls, compiles, strict=True)]
    ax.bar(names, compiles, color="C3", label="JAX trace + lower + compile")
    ax.bar(names, rest, bottom=compiles, color="C0", label="the rest")
    for i, r in enumerate(rows):
        share = r.get("compile_share")
        o = r.get("outcomes", {})
        note = f"{100 * share:.0f} % compile\n" if share is not None and r["mode"] == "nsjax" \
            else ""
        note += f"{o.get('passed', 0)} passed, {o.get('failed', 0)} failed"
        if r["timed_out"] or r["crashed"]:
            note += "\n(timed out)" if r["timed_out"] else "\n(crashed)"
        ax.text(i, walls[i], note, ha="center", va="bottom", fontsize=8)
        if r["mode"] == "nsjax":  # the target: compile+trace below this line
            ax.hlines(TARGET_SHARE * walls[i], i - 0.4, i + 0.4, color="black", ls=":", lw=1)
    ax.set_ylabel("wall seconds (dotted: 30 % of the run's wall, the target)")
    ax.set_ylim(0, max(walls) * 1.25 if walls else 1)
    ax.legend(fontsize=8, loc="upper right")
    save_figure(plt, fig, title, path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", nargs="+", default=None,
                        help="a subset of the test files (names, e.g. test_sparse.py); "
                             "writes *_quick.json / *_quick.png")
    parser.add_argument("--only-cold", action="store_true",
                        help="no warm run (nsjax's program cache filled by the cold run)")
    parser.add_argument("--no-peer", action="store_true",
                        help="no run with scikit-learn's own estimators")
    parser.add_argument("--timeout", type=float, default=1500.0,
                        help="seconds per pytest process before it is killed (1500)")
    parser.add_argument("--float32", action="store_true",
                        help="JAX's default float32 instead of float64 (JAX_ENABLE_X64)")
    args = parser.parse_args()
    files = pick_files(args.files)
    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="nsjax-sklearn-suite-"))
    try:
        (work / f"{PLUGIN}.py").write_text(PLUGIN_SOURCE)
        (work / "pytest.ini").write_text("[pytest]\n")
        cache = work / "nsjax-cache"
        runs = [("nsjax cold", "nsjax", cache)]
        if not args.only_cold:
            runs.append(("nsjax warm", "nsjax", cache))
        if not args.no_peer:
            runs.append(("scikit-learn", "sklearn", None))
        print(f"{len(files)} files: {', '.join(f.name for f in files)}")
        print(f"{'run':14s} {'wall s':>8s} {'compile s':>10s} {'share %':>8s} {'passed':>7s} "
              f"{'failed':>7s} {'errors':>7s} {'skipped':>7s} {'crashed':>8s}", flush=True)
        rows = []
        for label, mode, cache_dir in runs:
            rows.append(run_pytest(label, mode, files, work, args.timeout, cache_dir,
                                   not args.float32))
            print_row(rows[-1])
        for r in rows:
            print_details(r)
        for r in rows:
            if r["mode"] == "nsjax" and r.get("compile_share") is not None:
                verdict = "meets" if r["compile_share"] <= TARGET_SHARE else "misses"
                print(f"{r['run']}: compile share {100 * r['compile_share']:.1f} % {verdict} "
                      f"the target (<= {100 * TARGET_SHARE:.0f} %)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    host = machine()
    suffix = "_quick" if args.files else ""
    out = HERE / "results" / f"sklearn_suite{suffix}.json"
    save_json(out, {"benchmark": "sklearn_suite", "target_compile_share": TARGET_SHARE,
                    "files": [str(f.relative_to(SKLEARN_DIR.parent)) for f in files],
                    "timeout_s": args.timeout, "x64": not args.float32, "runs": rows,
                    "machine": host, "total_time_s": time.perf_counter() - start})
    png = HERE / f"sklearn_suite{suffix}.png"
    plot(rows, png, f"scikit-learn's tests on nsjax's estimators, {len(files)} "
         f"file{'s' if len(files) > 1 else ''}, "
         f"{host['cpu_model']}, {host['os.cpu_count']} cores, JAX {host['jax']}")
    print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()

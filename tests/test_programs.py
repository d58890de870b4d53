"""nsjax.programs and nsjax.buckets: one compile per shape bucket, kept on disk for later
processes (loaded, not compiled), a bounded number in memory, compile options by size, and
the padding invisible in every result."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import jax
import numpy as np
import pytest
import scipy.sparse as sp
from reference import cvxpy_optimum, random_binary

import nsjax
import nsjax.programs as programs
from nsjax import buckets
from nsjax.programs import compiled_programs
from nsjax.testing import isolated_programs

ROOT = Path(__file__).resolve().parents[1]


#: Budgets whose history lengths (`nsjax.loop.history_length`) no other test uses: the
#: suite's JAX cache (conftest.py) then holds none of these tests' programs, which nsjax
#: would not store again (`nsjax.programs`, module docstring).
OWN_STEPS = (7001, 7500, 8000, 8500, 12000)


@pytest.fixture
def cache(tmp_path):
    """A fresh program cache for this test, nothing loaded, and JAX's (the suite's)
    writing nothing meanwhile, so that a program compiled twice here is compiled, not
    loaded by JAX (the suite's cache afterwards)."""
    programs.set_cache_dir(tmp_path)
    programs.drop_loaded()
    least = jax.config.jax_persistent_cache_min_compile_time_secs
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)
    yield tmp_path
    jax.config.update("jax_persistent_cache_min_compile_time_secs", least)
    programs.reset_cache_dir()


def _hinge(seed=0, n=40, d=5):
    X, y, lam = random_binary(seed, n, d)
    return nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y), X, y, lam


def _compiles(since=(0, 0)):
    """Programs traced and compiled (not loaded) since ``since``, in all and of
    `nsjax.solve` (`nsjax.programs.compile_count`); with no argument, a starting point."""
    return (programs.compile_count() - since[0],
            programs.compile_count("solve") - since[1])


# -- compile options by size ---------------------------------------------------------------

def test_problems_compile_by_size_to_the_same_solution(monkeypatch):
    prob, X, y, lam = _hinge()
    size = sum(np.size(x) for x in jax.tree_util.tree_leaves(prob))
    assert size > prob.X.dense.size  # y, λ, ...: every array counts
    assert programs.compile_options(prob) == {**programs.FAST_COMPILE,
                                              **programs.NO_LLVM_OPTIMIZATIONS}
    monkeypatch.setattr(programs, "TINY_PROBLEM", size - 1)
    assert programs.compile_options(prob) == programs.FAST_COMPILE
    monkeypatch.setattr(programs, "SMALL_PROBLEM", size - 1)
    assert programs.compile_options(prob) == {}
    sols = []
    for tiny, small in ((size, size), (size - 1, size), (size - 1, size - 1)):
        monkeypatch.setattr(programs, "TINY_PROBLEM", tiny)
        monkeypatch.setattr(programs, "SMALL_PROBLEM", small)
        sols.append(nsjax.solve(prob, nsjax.solvers.BMRM(), tol=1e-10))
    J_star = cvxpy_optimum(X, y, lam, loss="hinge")[0]
    for sol in sols:
        assert sol.result == nsjax.RESULTS.successful
        assert float(sol.value) == pytest.approx(J_star, rel=1e-9)
        # The programs differ only in the order of their additions.
        np.testing.assert_allclose(sol.w, sols[0].w, rtol=1e-7, atol=1e-9)


def test_an_option_xla_does_not_know_is_left_out(cache, monkeypatch):
    monkeypatch.setattr(programs, "FAST_COMPILE", {"xla_no_such_option_in_any_xla": 1})
    prob, X, y, lam = _hinge(8)
    with isolated_programs():  # (the options refused here are not refused after the test)
        assert "xla_no_such_option_in_any_xla" in programs.compile_options(prob)
        sol = nsjax.solve(prob, nsjax.solvers.BMRM(), tol=1e-10)  # compiled without it
        assert sol.result == nsjax.RESULTS.successful
        assert float(sol.value) == pytest.approx(cvxpy_optimum(X, y, lam, loss="hinge")[0],
                                                 rel=1e-9)
        assert programs.compile_options(prob) == {}  # the options of a refused compile
        assert not programs.is_small(prob)


def test_a_solve_under_jit_or_vmap_runs_in_the_outer_program():
    prob, *_ = _hinge()
    start = _compiles()
    solver = nsjax.solvers.LineSearchBMRM()
    value = jax.jit(lambda p: nsjax.solve(p, solver, tol=1e-10).value)(prob)
    values = jax.vmap(lambda lam: nsjax.solve(prob.with_strength(lam), solver, tol=1e-10).value)(
        jax.numpy.asarray([prob.lam, 2 * prob.lam]))
    assert _compiles(start) == (0, 0)  # neither compiled nor stored as nsjax's own program
    top = nsjax.solve(prob, solver, tol=1e-10).value
    assert float(value) == pytest.approx(float(top), rel=1e-9)
    assert float(values[0]) == pytest.approx(float(top), rel=1e-9)


# -- the persistent cache -------------------------------------------------------------------

def test_where_the_cache_is(monkeypatch, tmp_path):
    programs.reset_cache_dir()
    monkeypatch.setenv("NSJAX_CACHE_DIR", str(tmp_path / "mine"))
    assert programs.cache_dir() == tmp_path / "mine"
    for off in ("off", "0", "", "None"):
        monkeypatch.setenv("NSJAX_CACHE_DIR", off)
        assert programs.cache_dir() is None
    monkeypatch.delenv("NSJAX_CACHE_DIR")
    suite = jax.config.jax_compilation_cache_dir  # (the suite's, conftest.py)
    try:
        jax.config.update("jax_compilation_cache_dir", str(tmp_path / "jax"))
        assert programs.cache_dir() == tmp_path / "jax" / "nsjax"  # the user's JAX cache
        jax.config.update("jax_compilation_cache_dir", None)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        assert programs.cache_dir() == tmp_path / "xdg" / "nsjax"
    finally:
        jax.config.update("jax_compilation_cache_dir", suite)
    programs.set_cache_dir(None)
    try:
        assert programs.cache_dir() is None
        with pytest.raises(TypeError, match="path must be"):
            programs.set_cache_dir(3)
    finally:
        programs.reset_cache_dir()


def test_a_program_is_stored_and_loaded_instead_of_compiled(cache):
    prob, *_ = _hinge(2, 30, 4)
    start = _compiles()
    first = nsjax.solve(prob, nsjax.solvers.LineSearchBMRM(), max_steps=OWN_STEPS[0],
                        tol=1e-9)
    assert _compiles(start) == (1, 1) and len(list(cache.glob("*.nsjaxprog"))) == 1
    programs.drop_loaded()
    again = nsjax.solve(prob, nsjax.solvers.LineSearchBMRM(), max_steps=OWN_STEPS[0],
                        tol=1e-9)
    assert _compiles(start) == (1, 1)  # loaded from the disk
    np.testing.assert_array_equal(first.w, again.w)
    assert float(first.gap) == float(again.gap)


def test_a_corrupt_or_foreign_entry_is_compiled_again(cache):
    prob, *_ = _hinge(3, 30, 4)
    start = _compiles()
    good = nsjax.solve(prob, nsjax.solvers.LineSearchBMRM(), max_steps=OWN_STEPS[1],
                        tol=1e-9)
    (entry,) = cache.glob("*.nsjaxprog")
    for damage in (entry.read_bytes()[:1000], b"", b"not a pickle at all"):
        entry.write_bytes(damage)
        programs.drop_loaded()
        sol = nsjax.solve(prob, nsjax.solvers.LineSearchBMRM(), max_steps=OWN_STEPS[1],
                        tol=1e-9)
        np.testing.assert_array_equal(sol.w, good.w)
        assert entry.stat().st_size > 1000  # written anew
    assert _compiles(start)[0] == 4


def test_the_cache_directory_stays_within_its_size(cache, monkeypatch):
    monkeypatch.setattr(programs, "CACHE_MAX_BYTES", 1)
    (cache / "left.tmp").write_bytes(b"x")
    os.utime(cache / "left.tmp", (0, 0))  # from a process that died mid-write, long ago
    for steps in OWN_STEPS[2:4]:  # two programs: the newest entry alone is kept
        prob, *_ = _hinge(4, 30, 4)
        nsjax.solve(prob, nsjax.solvers.LineSearchBMRM(), max_steps=steps)
    assert len(list(cache.glob("*.nsjaxprog"))) == 1
    assert not (cache / "left.tmp").exists()


def test_an_unwritable_cache_warns_once_and_solves(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    programs.set_cache_dir(blocker / "cache")
    try:
        prob, *_ = _hinge(5, 30, 4)
        # (A program of its own; the warning comes once per process: none given yet here.)
        with isolated_programs(), pytest.warns(RuntimeWarning, match="NSJAX_CACHE_DIR"):
            sol = nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=OWN_STEPS[4])
        assert sol.result == nsjax.RESULTS.successful
    finally:
        programs.reset_cache_dir()


_CHILD = """
import json, sys, jax
jax.config.update("jax_enable_x64", True)
import nsjax, nsjax.programs as programs
X, y = nsjax.datasets.breast_cancer()
prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-3), X[:200, :10], y[:200],
                     bias=True)
sol = nsjax.solve(prob, tol=1e-8)
print(json.dumps({"compiled": programs.compile_count(), "w": [float(v) for v in sol.w],
                  "result": sol.result.name}))
"""


def _child(cache, count=1):
    """Run `_CHILD` in ``count`` new processes at once on the cache directory ``cache``."""
    env = dict(os.environ, NSJAX_CACHE_DIR=str(cache))
    env.pop("NSJAX_TEST_CACHE_DIR", None)
    procs = [subprocess.Popen([sys.executable, "-c", _CHILD], env=env, cwd=ROOT,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(count)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        outs.append(json.loads(out.strip().splitlines()[-1]))
    return outs


def test_concurrent_processes_share_the_cache_and_a_later_one_loads(tmp_path):
    """Two processes at once on an empty cache (as two command-line runs): both compile
    and write the same entry; a third process loads it, compiling nothing."""
    both = _child(tmp_path, count=2)
    assert [o["compiled"] for o in both] == [1, 1]
    (later,) = _child(tmp_path)
    assert later["compiled"] == 0
    assert later["w"] == both[0]["w"] and later["result"] == "successful"
    assert len(list(tmp_path.glob("*.nsjaxprog"))) == 1
    assert not list(tmp_path.glob("*.tmp"))


# -- bounded in memory ----------------------------------------------------------------------

def _mappings():
    """The memory mappings this process holds (Linux), else 0."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return 0


def test_loaded_programs_are_bounded_and_a_dropped_one_is_loaded_again(cache, monkeypatch):
    monkeypatch.setattr(programs, "MAX_LOADED_MAPPINGS", 1)  # one program at a time
    monkeypatch.setattr(programs, "MAX_LOADED", 1)
    monkeypatch.setattr(buckets, "PAD_LIMIT", 0)  # every shape its own program
    start = _compiles()
    sols = {}
    for d in (3, 4, 5, 3):
        prob, *_ = _hinge(6, 30, d)
        sols.setdefault(d, []).append(nsjax.solve(prob, nsjax.solvers.LineSearchBMRM(),
                                                  max_steps=OWN_STEPS[0]))
        assert programs.loaded_count() == 1
    assert _compiles(start)[0] == 3  # d = 3 the second time: loaded from the disk
    np.testing.assert_array_equal(sols[3][0].w, sols[3][1].w)


def test_two_thousand_shapes_in_one_process(monkeypatch):
    """The default solver over 2,000 distinct small shapes: the buckets share 9 programs,
    and what the process holds stays bounded (it crashed inside XLA after a few hundred
    programs when each shape compiled its own and all were kept)."""
    monkeypatch.setattr(programs, "MAX_LOADED_MAPPINGS", 3_000)  # a few programs at a time
    rng = np.random.default_rng(0)
    start, peak, shapes = _mappings(), 0, set()
    made = compiled_programs("solve")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nsjax.ConvergenceWarning)
        for i in range(2000):
            n, d = 2 + i // 16, 1 + i % 16  # n 2..126 (9 buckets of rows), d 1..16 (one)
            shapes.add((n, d))
            X = rng.normal(size=(n, d))
            prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X,
                                 np.arange(n) % 2)
            sol = nsjax.solve(prob, max_steps=5)
            assert sol.w.shape == (d,) and np.isfinite(float(sol.value))
            peak = max(peak, _mappings())
    assert len(shapes) == 2000
    assert compiled_programs("solve") - made <= 9
    if start:  # Linux: programs were dropped, and the process stays far below
        assert programs.loaded_count() < 9  # vm.max_map_count (65,530)
        assert peak - start < 20_000


# -- buckets --------------------------------------------------------------------------------

def test_bucket_shapes():
    assert buckets.bucket(1, 1) == buckets.LEAST
    assert buckets.bucket(64, 16) == (64, 16)
    assert buckets.bucket(65, 17) == (72, 18)
    for m in range(1, 5000):
        rows, _ = buckets.bucket(m, 1)
        assert m <= rows <= max(buckets.LEAST[0], m * 9 / 8)


@pytest.mark.parametrize("case", ["hinge", "hinge-bias", "logistic-l1", "multiclass",
                                  "sparse", "squared-elasticnet"])
def test_padding_is_invisible_in_the_results(case, monkeypatch):
    rng = np.random.default_rng(7)
    n, d = 45, 7
    X = rng.normal(size=(n, d))
    y = rng.integers(0, 3 if case == "multiclass" else 2, n)
    loss, reg = nsjax.losses.Hinge(), nsjax.regularizers.L2(0.05)
    if case == "logistic-l1":
        loss, reg = nsjax.losses.Logistic(), nsjax.regularizers.L1(0.02)
    elif case == "multiclass":
        loss = nsjax.losses.MulticlassHinge()
    elif case == "sparse":
        X = sp.csr_matrix(X * (rng.random(X.shape) < 0.4))
    elif case == "squared-elasticnet":
        loss, reg, y = nsjax.losses.Squared(), nsjax.regularizers.ElasticNet(0.05, 0.05), \
            rng.normal(size=n)
    weights = rng.uniform(0.5, 2.0, n) if case == "hinge" else None
    prob = nsjax.Problem(loss, reg, X, y, bias=case == "hinge-bias", sample_weight=weights)
    # (The default for L1 parts, OBA, is not padded: its working set counts the weights.)
    solver = {"squared-elasticnet": nsjax.solvers.SubLBFGS(),
              "logistic-l1": nsjax.solvers.OWLQN()}.get(case)
    padded, w0, _ = buckets.pad(prob.without_classes(), prob.start(),
                                solver or nsjax.loop.default_solver(prob))
    assert padded.X.shape == (64, 16) and w0.shape[0] == 16 + prob.bias
    runs = []
    for limit in (buckets.PAD_LIMIT, 0):  # padded, then as given
        monkeypatch.setattr(buckets, "PAD_LIMIT", limit)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", nsjax.ConvergenceWarning)
            runs.append(nsjax.solve(prob, solver, tol=1e-10, max_steps=400))
    ours, plain = runs
    assert ours.w.shape == plain.w.shape == prob.w_shape
    assert float(ours.value) == pytest.approx(float(plain.value), rel=1e-8)
    assert float(prob.objective(ours.w)) == pytest.approx(float(ours.value), rel=1e-12)
    assert 0 <= float(ours.gap) <= 1e-9 * max(1.0, abs(float(ours.value)))
    assert ours.history.value.shape == plain.history.value.shape == (400,)
    assert set(ours.stats) == set(plain.stats)
    np.testing.assert_allclose(ours.w, plain.w, atol=1e-4)


def test_nearby_shapes_share_one_program_in_solve_sweep_and_batch(cache):
    solver = nsjax.solvers.LineSearchBMRM()
    shapes = [(40, 5), (50, 9), (61, 13)]
    probs = [_hinge(i, n, d)[0] for i, (n, d) in enumerate(shapes)]
    counts = []
    for prob in probs:
        nsjax.solve(prob, solver)
        nsjax.sweep(prob, [0.1, 0.01], solver)
        nsjax.solve_batch([prob, prob.with_strength(0.5)], solver)
        counts.append((compiled_programs("solve"), compiled_programs("sweep")))
    assert counts[0] == counts[1] == counts[2]
    sols = nsjax.sweep(probs[1], [0.1, 0.01], solver)
    assert sols.w.shape == (2, 9)
    batch = nsjax.solve_batch([probs[1], probs[1].with_strength(0.5)], solver)
    assert batch.w.shape == (2, 9)
    one = nsjax.solve(probs[1].with_strength(0.5), solver)
    np.testing.assert_allclose(batch.w[1], one.w, rtol=1e-6, atol=1e-8)


def test_rows_are_not_padded_where_the_scaled_weights_would_overflow():
    X, y, _ = random_binary(9, 40, 5)
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, y,
                         dtype=np.float32, sample_weight=np.full(40, 3e38))
    padded, *_ = buckets.pad(prob.without_classes(), prob.start(), nsjax.solvers.BMRM())
    assert padded.X.shape == (40, 16) and np.all(np.isfinite(padded.loss.weights))


def test_oba_and_the_nesterov_solvers_are_not_padded_where_it_would_change_them():
    prob, *_ = _hinge()
    for solver in (nsjax.solvers.OBA(), nsjax.solvers.AGMEF()):
        padded, *_ = buckets.pad(prob.without_classes(), prob.start(), solver)
        rows, cols = padded.X.shape
        assert rows == 40 and (cols == 5 or solver.shape_free)


def test_compiled_programs_counts_each_program_and_names_the_valid_ones():
    prob, *_ = _hinge(6, 30, 4)
    solves, sweeps = compiled_programs("solve"), compiled_programs("sweep")
    total = compiled_programs()
    nsjax.solve(prob, nsjax.solvers.LineSearchBMRM(), max_steps=OWN_STEPS[4])
    assert compiled_programs("solve") == solves + 1
    assert compiled_programs("sweep") == sweeps
    assert compiled_programs() == total + 1
    with pytest.raises(ValueError, match=r"name must be one of \['batch', 'solve', 'sweep'\]"):
        compiled_programs("run")

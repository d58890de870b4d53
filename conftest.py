"""Tests and the `>>>` examples in nsjax/ (``--doctest-modules nsjax``) run in float64;
float32 is smoke-tested explicitly.

Every compiled XLA:CPU program keeps a few hundred memory mappings for its kernels, and
Linux allows 65,530 per process (vm.max_map_count): one pytest process that compiles all
the suite's programs would abort inside the compiler. So the compiled programs are dropped
(`jax.clear_caches`) between tests once the process holds more than 55,000 mappings; a
single test compiles a handful of programs (at most ~1,800 mappings seen), far fewer than
the 10,500 mappings left. (A drop costs the next tests only a load from the cache below.)

The suite is compile-bound: most of its time is XLA compiling hundreds of programs, several
of them in both pytest-xdist workers. A persistent compilation cache, fresh for each run,
lets each program be compiled once per run: nsjax's own solve programs go to its
``nsjax`` folder (`nsjax.programs`, which keeps a bounded number of them loaded itself),
the tests' other programs to JAX's cache. And the programs are compiled by XLA's LLVM
backend at -O0 (`JAX_DISABLE_MOST_OPTIMIZATIONS`, JAX's switch for smoke tests; XLA's own
HLO passes still run): a third off the suite's time (25:15 → 16:06 on a slow 2-core
machine). The results differ from the optimized code's by rounding only, which the tests
must tolerate anyway: a new XLA can change the rounding as much. To test the code users
run, set ``JAX_DISABLE_MOST_OPTIMIZATIONS=0``. The few tests whose time goes into running
their programs, not compiling them, are marked ``@pytest.mark.optimized`` and compiled
with the optimizations (`_optimized_where_marked`).
"""

import os
import shutil
import tempfile
from pathlib import Path


def _share_compiled_programs():
    """One persistent compilation cache for this pytest run, shared by its xdist workers:
    a program one worker compiled is loaded, not compiled again, by the other (and by a
    worker after `jax.clear_caches`, below). The directory is made fresh for each run by
    the first process (the controller; the workers inherit the variable), so a run never
    reads programs of another version of the code."""
    if "NSJAX_TEST_CACHE_DIR" in os.environ:
        return os.environ["NSJAX_TEST_CACHE_DIR"], False
    os.environ["NSJAX_TEST_CACHE_DIR"] = tempfile.mkdtemp(prefix="nsjax-test-xla-")
    return os.environ["NSJAX_TEST_CACHE_DIR"], True


CACHE_DIR, CACHE_DIR_IS_OURS = _share_compiled_programs()
# Before jax is imported; the xdist workers and the subprocesses of tests inherit it.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")


def pytest_sessionfinish(session, exitstatus):
    """The process that made the cache removes it (the controller, after its workers)."""
    if CACHE_DIR_IS_OURS:
        shutil.rmtree(CACHE_DIR, ignore_errors=True)

import jax  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_compilation_cache_dir", CACHE_DIR)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

MAX_MAPPINGS = 55_000
#: The suite's setting (above, or the caller's), read as JAX reads it.
OPTIMIZATIONS_OFF = os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"].lower() in (
    "y", "yes", "t", "true", "on", "1")


def _mappings() -> int:
    try:
        with Path("/proc/self/maps").open() as f:
            return sum(1 for _ in f)
    except OSError:  # not Linux
        return 0


@pytest.fixture(autouse=True)
def _drop_compiled_programs_when_many():
    yield
    if _mappings() > MAX_MAPPINGS:
        jax.clear_caches()


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "optimized: compile this test's programs with XLA's optimizations (a test "
        "whose time goes into running its programs, not compiling them)")


@pytest.fixture(autouse=True)
def _optimized_where_marked(request):
    """For a test marked ``optimized``, XLA's LLVM backend at its usual level instead of -O0
    (module docstring): e.g. the F1 loss's O(n²) programme at n = 20,000 took 31.6 s at -O0
    and 12.1 s optimized. The flag is read when a program is compiled, so the test's own
    programs get it; programs it shares with earlier tests may come compiled either way."""
    if request.node.get_closest_marker("optimized") is None:
        yield
        return
    jax.config.update("jax_disable_most_optimizations", False)
    try:
        yield
    finally:
        jax.config.update("jax_disable_most_optimizations", OPTIMIZATIONS_OFF)

"""Tests and the `>>>` examples in nsjax/ (``--doctest-modules nsjax``) run in float64;
float32 is smoke-tested explicitly.

Every compiled XLA:CPU program keeps a few hundred memory mappings for its kernels, and
Linux allows 65,530 per process (vm.max_map_count): one pytest process that compiles all
the suite's programs would abort inside the compiler. So the compiled programs are dropped
(`jax.clear_caches`) between tests once the process holds more than 40,000 mappings; a
single test compiles a handful of programs, far fewer than the 25,000 mappings left.
"""

import os
import shutil
import tempfile
from pathlib import Path

import jax
import pytest

jax.config.update("jax_enable_x64", True)

# A persistent compilation cache for this run only: many tests compile the same programs
# (the same solver on the same shapes), in both xdist workers and again after the clears
# below. The controlling process makes the folder, the workers inherit its path, and it is
# removed at the end of the run (never shared between runs: no stale programs).
CACHE_VAR = "NSJAX_TEST_COMPILATION_CACHE"


def pytest_configure(config):
    if "PYTEST_XDIST_WORKER" not in os.environ and CACHE_VAR not in os.environ:
        os.environ[CACHE_VAR] = tempfile.mkdtemp(prefix="nsjax-xla-cache-")
        config._nsjax_cache_owner = True
    jax.config.update("jax_compilation_cache_dir", os.environ[CACHE_VAR])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)


def pytest_unconfigure(config):
    if getattr(config, "_nsjax_cache_owner", False):
        shutil.rmtree(os.environ.pop(CACHE_VAR), ignore_errors=True)

MAX_MAPPINGS = 40_000


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

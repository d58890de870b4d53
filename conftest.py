"""Tests and the `>>>` examples in nsjax/ (``--doctest-modules nsjax``) run in float64;
float32 is smoke-tested explicitly.

Every compiled XLA:CPU program keeps a few hundred memory mappings for its kernels, and
Linux allows 65,530 per process (vm.max_map_count): one pytest process that compiles all
the suite's programs would abort inside the compiler. So the compiled programs are dropped
(`jax.clear_caches`) between tests once the process holds more than 55,000 mappings; a
single test compiles a handful of programs (at most ~1,800 mappings seen), far fewer than
the 10,500 mappings left. (Each drop costs the next tests their recompiles.)
"""

from pathlib import Path

import jax
import pytest

jax.config.update("jax_enable_x64", True)

MAX_MAPPINGS = 55_000


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

"""A solve's program compiled for the size of its problem: on CPUs, small problems with XLA's
older loop emitters, which compile faster.

XLA:CPU (JAX 0.10) generates each fused kernel with its newer MLIR "fusion emitters" by
default. Its older emitters (the compile option ``xla_cpu_use_fusion_emitters=False``)
compile the same program faster: 24 % less XLA time over `benchmarks/compile_time.py`'s 23
programs (up to 42 % for one), and 22 % less wall time for the test suite, which is
compile-bound. Their kernels run as fast on small data, and slower on large data (up to
+22 % for the Hybrid on 2.5 M nonzeros, none for the OCAS-like BMRM; RESULTS.md).
So a program is compiled with them where the problem holds at most `SMALL_PROBLEM`
numbers (its arrays' total size; 2²⁰, 8 MB in float64), where a run's steps cost
milliseconds and the compile costs seconds. Larger problems, and every other backend,
get XLA's defaults, as do calls under a JAX transformation (`solve` inside the user's
`jax.jit` or `jax.vmap`: the outer program's options apply). Results differ only by the
order of additions.

Where the installed JAX does not know the option (it is XLA's, and may go away), every
program gets the defaults.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

#: The largest problem, in stored numbers (the total size of its arrays), compiled with
#: the older emitters on CPUs.
SMALL_PROBLEM = 1 << 20

FAST_COMPILE = {"xla_cpu_use_fusion_emitters": False}


@functools.cache
def _fast_compile_works() -> bool:
    """Whether this JAX's CPU compiler takes `FAST_COMPILE` (one tiny compile, once)."""
    try:
        jax.jit(lambda x: -x, compiler_options=FAST_COMPILE).lower(1.0).compile()
    except Exception:  # an unknown option (a newer XLA), or no compiler_options (older JAX)
        return False
    return True


def _top_level(args) -> bool:
    """Not under a JAX transformation (jit, vmap, grad): compile options apply to
    top-level programs only (JAX refuses them on a nested jit)."""
    try:  # JAX's own test; private, hence the fallback on the arguments
        from jax._src.core import trace_state_clean
    except ImportError:
        return not any(isinstance(x, jax.core.Tracer) for x in jax.tree_util.tree_leaves(args))
    return trace_state_clean()


def is_small(problem, *args) -> bool:
    """Whether a call on ``problem`` (and ``args``) is compiled with `FAST_COMPILE`: at
    most `SMALL_PROBLEM` numbers, CPUs the default backend, a top-level call, and the
    option known."""
    size = sum(jnp.size(x) for x in jax.tree_util.tree_leaves(problem))
    return (size <= SMALL_PROBLEM and jax.default_backend() == "cpu"
            and _top_level((problem, args)) and _fast_compile_works())


class JitBySize:
    """``fun`` jitted twice, with XLA's defaults and with `FAST_COMPILE`; a call (or
    `lower`) uses the one its first argument, the problem, calls for (`is_small`)."""

    def __init__(self, fun, static_argnames):
        self.default = jax.jit(fun, static_argnames=static_argnames)
        self.small = jax.jit(fun, static_argnames=static_argnames,
                             compiler_options=FAST_COMPILE)
        functools.update_wrapper(self, fun)

    def _for(self, problem, args):
        return self.small if is_small(problem, *args) else self.default

    def __call__(self, problem, *args, **kwargs):
        return self._for(problem, args)(problem, *args, **kwargs)

    def lower(self, problem, *args, **kwargs):
        return self._for(problem, args).lower(problem, *args, **kwargs)

    def _cache_size(self) -> int:
        """Programs compiled, both ways (what the tests count)."""
        return self.default._cache_size() + self.small._cache_size()


def jit_by_size(static_argnames):
    """Decorator: `JitBySize` with these static arguments."""
    return lambda fun: JitBySize(fun, static_argnames)

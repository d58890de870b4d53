"""Hooks for tests and tools (benchmarks, profilers); not part of the stable API.

nsjax's tests and benchmarks go through the public API, and through this module where they
must see more than it shows: a projection's diagnostics, an internal routine run alone,
the argument checks of `nsjax.solve` without the solve, or a machine or process state
simulated. Each hook is a thin, documented wrapper of the implementation, so the
implementation can change behind it; the hooks themselves may change between releases.
Nothing in nsjax imports this module.
"""

from __future__ import annotations

import contextlib
import time

from nsjax import loop, programs
from nsjax._fused_sum import fused_sum
from nsjax.datasets import _smallest_eigenvalue
from nsjax.losses._hinge_certificate import hinge_dual_certificate
from nsjax.projections._box_hyperplane import _box_section
from nsjax.projections._chain_polytope import _chain_marginals_jit
from nsjax.solvers import _agm_ef_schemes as agm_ef_schemes
from nsjax.solvers import _options
from nsjax.solvers._direction import find_direction
from nsjax.solvers._envelope import envelope_kinks
from nsjax.solvers._simplex_qp import (
    equality_qp,
    equality_qp_on_slots,
    simplex_qp_objective,
    solve_simplex_qp,
)
from nsjax.solvers._svm_dual import estimate_spectral_norm_sq, smoothed_hinge, top_eigenpair

#: The hooks of this module, and below them the internal routines of nsjax's private modules
#: re-exported as they are, for their own unit tests and for profiling scripts: direction
#: finding (Yu et al. 2010, Alg. 2), the multiclass envelope walk, the simplex QP of the bundle
#: methods, the hinge's dual certificate, the SVM dual's helpers, AGM-EF's scheme objects and
#: the fused sum.
__all__ = ["box_section", "chain_marginals", "check_solve_arguments", "isolated_programs",
           "machine_memory", "progress_timing", "record_programs", "smallest_eigenvalue",
           "agm_ef_schemes", "envelope_kinks", "equality_qp", "equality_qp_on_slots",
           "estimate_spectral_norm_sq", "find_direction", "fused_sum", "hinge_dual_certificate",
           "simplex_qp_objective", "smoothed_hinge", "solve_simplex_qp", "top_eigenpair"]


def box_section(m, a, b, lower, upper, weights=None, *, newton_steps: int = 32):
    """`nsjax.projections.project_box_section` without its argument checks, and how it
    found the root: ``(BoxSection, passes)``, where ``passes`` has the fields ``cheap``
    (Newton passes: g and its slope), ``checks`` (passes over the kinks around a pivot) and
    ``sorted`` (whether the kinks were sorted). Traceable (``newton_steps`` may be traced:
    one compilation serves every value)."""
    return _box_section(m, a, b, lower, upper, weights, newton_steps=newton_steps)


def chain_marginals(m, total=1.0, *, max_steps: int = 50, tol: float | None = None):
    """`nsjax.projections.project_chain_marginals` and how it went: ``(alpha, info)``, the
    same compiled program, where ``info`` has ``steps`` (Newton steps), ``residual`` (max
    |A α − b| before the final repair, in units of ``total``) and ``converged``, shaped like
    the batch, and ``passes`` (line-search passes over the whole batch). No argument
    checks."""
    return _chain_marginals_jit(m, total, max_steps=max_steps, tol=tol)


def check_solve_arguments(problem, w0=None, max_steps=500, tol=1e-6):
    """The checks `nsjax.solve`, `nsjax.sweep` and `nsjax.solve_batch` make of their common
    arguments before anything is compiled or allocated (TypeError or ValueError, as they
    raise them); returns ``w0`` as an array of the problem's dtype (the problem's start for
    None)."""
    return loop._check_common(problem, w0, max_steps, tol)


def smallest_eigenvalue(S, dense_max_order: int | None = None) -> float:
    """The smallest eigenvalue of the symmetric matrix ``S`` with positive entries, as
    `nsjax.datasets.oba_synthetic` computes it: LAPACK up to order ``dense_max_order``
    (None: oba_synthetic's, 1000), a deflated Lanczos iteration above
    (``dense_max_order=0`` forces the latter)."""
    if dense_max_order is None:
        return _smallest_eigenvalue(S)
    return _smallest_eigenvalue(S, dense_max_order)


@contextlib.contextmanager
def progress_timing(delay: float = 0.0, interval: float = 0.0):
    """Within this block, the progress line of ``solve(..., progress=k)`` appears once the
    run is ``delay`` seconds old (default 1 s; 0: at once, ``inf``: never, while the
    callbacks still run) and is rewritten at most every ``interval`` seconds (default
    0.2 s; 0: at every report)."""
    progress = loop._Progress
    saved = progress.delay, progress.interval
    progress.delay, progress.interval = float(delay), float(interval)
    try:
        yield
    finally:
        progress.delay, progress.interval = saved


@contextlib.contextmanager
def machine_memory(nbytes: int, where: str = "of memory"):
    """Within this block, the solvers' ``check(problem)`` sees a machine with ``nbytes``
    bytes ``where`` (as in its messages: "of memory", "of GPU memory") instead of the real
    one (`nsjax.solvers.memory_available`)."""
    saved = _options.memory_available
    _options.memory_available = lambda: (int(nbytes), where)
    try:
        yield
    finally:
        _options.memory_available = saved


@contextlib.contextmanager
def isolated_programs():
    """Within this block, `nsjax.programs` starts afresh on what it remembers for the
    process: no compile option refused by XLA (each is left out of later compiles), no
    warning given yet of an unwritable cache (given once); on leaving, both are as before.
    For a test that makes XLA refuse an option, or the cache unwritable."""
    refused, warned = programs._refused, programs._warned_write
    programs._refused, programs._warned_write = set(), False
    try:
        yield
    finally:
        programs._refused, programs._warned_write = refused, warned


def record_programs(stats: dict) -> None:
    """From now on, count in ``stats`` the programs this process compiles itself
    (``compiled``, ``compile_s``: their number and seconds) and its looks into nsjax's disk
    cache (``disk_hits``, ``disk_misses``, ``read_s``), for profiling scripts (e.g.
    ``benchmarks/sklearn_suite.py``). For the rest of the process: not undone."""
    stats.update(compiled=0, compile_s=0.0, disk_hits=0, disk_misses=0, read_s=0.0)
    compile_, read = programs.Program._compile, programs._read

    def timed_compile(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return compile_(self, *args, **kwargs)
        finally:
            stats["compiled"] += 1
            stats["compile_s"] += time.perf_counter() - start

    def timed_read(*args, **kwargs):
        start = time.perf_counter()
        compiled = read(*args, **kwargs)
        stats["disk_hits" if compiled is not None else "disk_misses"] += 1
        stats["read_s"] += time.perf_counter() - start
        return compiled

    programs.Program._compile, programs._read = timed_compile, timed_read

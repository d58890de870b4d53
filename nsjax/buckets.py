"""Shape buckets: nearby problem shapes share one compiled program.

nsjax compiles one program per problem shape (`nsjax.programs`), seconds on a CPU, so the
folds of a cross-validation, a grid over subsets or a notebook's successive problems would
each compile their own. `solve`, `sweep` and `solve_batch` therefore run a problem of n
examples and d features on X padded to a *bucket* shape (`bucket`): n and d are each
raised to at least `LEAST` and rounded up to one of eight sizes per octave (k·2ʲ with
8 ≤ k < 16, `nsjax.data.round_up`), at most 1/8 above. So a step reads at most
(9/8)² ≈ 1.27 times the numbers it would read unpadded (the worst case; 1/8 of a
bucket's width on average), and padding costs one copy of X.

- Rows are padded with weight 0 (`nsjax.Problem.padded`) where the loss takes sample
  weights (`nsjax.losses.base.Weighted`) and the solver too (``takes.sample_weight``);
  such a problem is then always solved as a weighted one (weights 1 where none were
  given), so that every n of a bucket, the bucket's own size included, shares a program.
- Columns are padded with zeros where the regularizer is separable and stationary at 0
  there (`L2`, `L1`, `ElasticNet`, with or without a bias): a zero column's weight stays
  0 from a start that is 0 there.
- Not padded: problems of more than `PAD_LIMIT` stored numbers (there the steps cost more
  than a compile), traced problems (inside the user's `jax.jit` or `jax.vmap`), problems
  sharded over devices or in a GPU layout (`nsjax.data.DesignMatrix.can_pad`), and solvers
  whose iterates depend on the number of weights (``shape_free = False``: `OBA`'s working
  set size).

The padding is invisible in what is returned: ``w`` has the problem's shape (the padded
columns cut out, the bias kept last), and ``value``, ``gap``, ``history``, ``stats``,
``num_steps`` and ``result`` are those of the same objective; they differ from an unpadded
run's only by the order of additions (and so, rarely, where a kinked run stalls).
"""

from __future__ import annotations

import jax
import numpy as np

from nsjax.data import on_host, round_up, to_device
from nsjax.losses.base import Weighted
from nsjax.regularizers import L1, L2, ElasticNet

#: The fewest rows and columns of a padded problem: all smaller problems share that shape.
LEAST = (64, 16)
#: Problems of more stored numbers than this (their arrays' total size) are not padded.
PAD_LIMIT = 1 << 20

_SEPARABLE = (L2, L1, ElasticNet)


def bucket(n: int, d: int) -> tuple[int, int]:
    """The bucket shape of an n × d problem (the module docstring's rule)."""
    return round_up(n, LEAST[0]), round_up(d, LEAST[1])


def pad(problem, w0, solver):
    """(problem, w0, restore): the problem and start padded to their bucket, and
    ``restore(sol, lead=0)``, which cuts a solution (with ``lead`` leading batch axes)
    back to the given problem. Where no padding applies, the problem and w0 as given and
    a ``restore`` that returns ``sol`` as is."""
    n, d = problem.X.shape
    leaves = jax.tree_util.tree_leaves(problem)
    if (not getattr(solver, "shape_free", True) or not problem.X.can_pad()
            or sum(np.size(x) for x in leaves) > PAD_LIMIT
            or any(isinstance(x, jax.core.Tracer) for x in leaves + [w0])
            or any(isinstance(x, jax.Array) and len(x.sharding.device_set) > 1
                   for x in leaves)):
        return problem, w0, unchanged
    rows, cols = bucket(n, d)
    reg = problem.coefficient_reg
    if not (isinstance(problem.loss, Weighted) and solver.takes.sample_weight
            and _weights_scale(problem, rows / n)):
        rows = None
    if type(reg) not in _SEPARABLE:
        cols = d
    if rows is None and cols == d:
        return problem, w0, unchanged
    w = np.asarray(w0)
    zeros = np.zeros((cols - d,) + w.shape[1:], w.dtype)
    w = np.concatenate([w[:d], zeros, w[d:]])  # w[d:] is the bias, if any

    def restore(sol, lead=0):
        keep = np.r_[0:d, cols:cols + problem.bias]
        return sol._replace(w=on_host(sol.w, lambda w: np.take(w, keep, axis=lead)))

    return problem.padded(cols, rows), to_device(w), restore


def _weights_scale(problem, factor) -> bool:
    """Whether the sample weights times ``factor`` (`nsjax.Problem.padded`) stay finite in
    the problem's dtype (weights near its largest number would overflow)."""
    weights = problem.loss.weights
    if weights is None:
        return True
    with np.errstate(over="ignore"):
        return bool(np.all(np.isfinite(np.asarray(weights) * np.asarray(factor, weights.dtype))))


def unchanged(sol, lead=0):
    """The ``restore`` of a problem that was not padded: ``sol`` as is."""
    return sol

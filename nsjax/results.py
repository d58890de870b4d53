"""Status codes and the `Solution` container returned by every solver.

Status is returned, not raised: inside `jit` and `vmap` a failure is a `RESULTS` member
(stored as an int32 array). Outside them, a run that ends without `RESULTS.successful` issues
a `ConvergenceWarning`, and `nsjax.solve(..., throw=True)` turns it into an error.

References: see docs/references.md.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import jax.numpy as jnp


class ConvergenceWarning(UserWarning):
    """A run ended without a certified gap ≤ tol · max(1, |J|) (`solve`, `sweep`,
    `solve_batch`). Filter it like any warning, e.g.
    ``warnings.simplefilter("ignore", nsjax.ConvergenceWarning)``."""


class RESULTS(enum.IntEnum):
    """Why a solver stopped. Compare with ``sol.result == RESULTS.successful``.

    Each member carries its explanation in ``.message``:

        >>> from nsjax import RESULTS
        >>> RESULTS.max_steps_reached.message
        'max_steps was reached before the gap fell below tol; raise max_steps or tol.'
    """

    def __new__(cls, code: int, message: str):
        member = int.__new__(cls, code)
        member._value_ = code
        member.message = message
        return member

    running = -1, "The solver has not finished."
    successful = 0, "Converged: the certified gap is below tol * max(1, |J|)."
    max_steps_reached = (
        1, "max_steps was reached before the gap fell below tol; raise max_steps or tol.")
    linesearch_failed = (
        2, "The line search found no step satisfying the subgradient Wolfe conditions (16).")
    direction_failed = (
        3, "Direction finding (Alg. 2 of Yu et al.) found no descent direction within k_max "
        "iterations and the gap is not below tol; raise k_max or tol.")
    nonfinite = (
        4, "A non-finite value (NaN or inf) appeared; the last finite iterate was kept. "
        "Check the data scale and the regularization strength.")
    unbounded = (
        5, "The objective decreases without bound along a direction (eta* = inf); "
        "add regularization (lam > 0).")
    stalled = (
        6, "The solver stopped making progress (the objective's change averaged over 5 "
        "iterations fell below stall_tol, or rounding) before the certified gap reached tol; "
        "try another solver (the default of nsjax.solve, or BMRM(line_search='exact') for "
        "the hinge), float64, or a looser tol.")

    @property
    def is_failure(self) -> bool:
        """True for every end but `successful`: the gap is above tol (`stalled` included)."""
        return self not in (RESULTS.successful, RESULTS.running)


class History(NamedTuple):
    """Per-step records, length ``max_steps``, NaN-padded after the last step.

    Recorded the same way for every solver, after each step t = 1, 2, ...:

    Attributes:
        value: J(w_t) of the step's own iterate. Bundle and accelerated methods are not
            monotone, so this curve can go up.
        gap: the certified gap of the best iterate so far, best − (the best lower bound on
            min J found so far); inf where the method has none yet. A solver's end-of-run
            certificate (``postprocess``) may make ``Solution.gap`` smaller than the last
            entry.
        best: min_{t' ≤ t} J(w_t') over the iterates so far (w_0 included): the value
            `solve` would return if it stopped after step t.
    """

    value: Any
    gap: Any
    best: Any


class Solution(NamedTuple):
    """What `nsjax.solve` returns (stacked along a leading axis by `nsjax.sweep`).

    Attributes:
        w: the weights, shape (d,) or (d, K): the best iterate found.
        value: J(w).
        gap: a certified upper bound on J(w) − min J (inf where the method has none).
        result: a `RESULTS` member (an int32 array inside jit/vmap).
        num_steps: outer iterations taken.
        stats: dict of int counters (matvecs, direction-finding iterations, ...).
        history: `History` of per-step values, best values and gaps.
    """

    w: Any
    value: Any
    gap: Any
    result: Any
    num_steps: Any
    stats: dict
    history: History

    @property
    def message(self) -> str:
        """A human-readable explanation of `result` (scalar solutions only)."""
        return RESULTS(int(jnp.asarray(self.result))).message

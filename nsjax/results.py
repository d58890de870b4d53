"""Status codes and the `Solution` container returned by every solver.

Status is returned, not raised: inside `jit` and `vmap` a failure is a `RESULTS` member
(stored as an int32 array). `nsjax.solve(..., throw=True)` turns a failure into an error.
"""

from __future__ import annotations

import enum
from typing import Any, NamedTuple

import jax.numpy as jnp


class RESULTS(enum.IntEnum):
    """Why a solver stopped. Compare with ``sol.result == RESULTS.successful``."""

    running = -1
    successful = 0
    max_steps_reached = 1
    linesearch_failed = 2
    direction_failed = 3
    nonfinite = 4
    unbounded = 5
    stalled = 6

    @property
    def message(self) -> str:
        return _MESSAGES[self]

    @property
    def is_failure(self) -> bool:
        return self not in (RESULTS.successful, RESULTS.stalled, RESULTS.running)


_MESSAGES = {
    RESULTS.running: "The solver has not finished.",
    RESULTS.successful: "Converged: the certified gap is below tol * max(1, |J|).",
    RESULTS.max_steps_reached: (
        "max_steps was reached before the gap fell below tol; raise max_steps or tol."
    ),
    RESULTS.linesearch_failed: (
        "The line search found no step satisfying the subgradient Wolfe conditions (16)."
    ),
    RESULTS.direction_failed: (
        "Direction finding (Alg. 2 of Yu et al.) found no descent direction within k_max "
        "iterations and the gap is not below tol; raise k_max or tol."
    ),
    RESULTS.nonfinite: (
        "A non-finite value (NaN or inf) appeared; the last finite iterate was kept. "
        "Check the data scale and the regularization strength."
    ),
    RESULTS.unbounded: (
        "The objective decreases without bound along a direction (eta* = inf); "
        "add regularization (lam > 0)."
    ),
    RESULTS.stalled: (
        "The objective's relative change averaged over 5 iterations fell below stall_tol "
        "before the certified gap reached tol."
    ),
}


class History(NamedTuple):
    """Per-iteration records, length ``max_steps``, NaN-padded after the last step.

    Attributes:
        value: J(w_t) after step t.
        gap: the certified gap after step t (inf where none exists).
    """

    value: Any
    gap: Any


class Solution(NamedTuple):
    """What `nsjax.solve` returns (stacked along a leading axis by `nsjax.sweep`).

    Attributes:
        w: the weights, shape (d,): the best iterate found.
        value: J(w).
        gap: a certified upper bound on J(w) - min J (inf where the method has none).
        result: a `RESULTS` member (an int32 array inside jit/vmap).
        num_steps: outer iterations taken.
        stats: dict of int counters (matvecs, direction-finding iterations, ...).
        history: `History` of per-iteration values and gaps.
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

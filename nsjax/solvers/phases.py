"""The phases a composing solver drives: the seam between `Hybrid` and the solvers it runs.

`nsjax.solvers.Hybrid` runs subLBFGS, then BMRM, in one compiled loop: it calls its phases'
methods step by step, not their ``step``. What it may call, and which fields of their states
it may read, is written down here, as two abstract solver classes:

- `QuasiNewtonPhase` (phase 1: `SubLBFGS`, `SubBFGS`): a step split into `propose` and
  `commit`, and the cuts of the risk that its subgradients give;
- `BundlePhase` (phase 2: `BMRM`): a bundle that collects cuts (`insert`), starts from an
  iterate and the cuts collected (`warm_start`), and a step split into `approach`, `cut`
  and `arrive`.

A solver that subclasses one of them has to implement every method (Python refuses to
construct it otherwise), and ``tests/test_hybrid_seam.py`` checks that the Hybrid calls
nothing else on its phases: a change to BMRM or SubLBFGS outside these methods cannot
change the Hybrid, and a change to one of them is a change to a documented contract.

Lent buffers. A phase's largest arrays (BMRM's cuts A, (capacity, d); subLBFGS's (s, y)
memory, (m, d) or (d, d)) must stay out of the Hybrid's `jax.lax.cond` branches: XLA
copies an array that a branch returns at every step. So the Hybrid takes them out of the
states (`take_buffers`) before its branches, hands them in read-only where a method needs
them (`give_buffers`), and puts them back after the branches, where they are written
(`BundlePhase.insert`, `QuasiNewtonPhase.commit`). A state without its buffers is only
passed on: give them back before calling any method other than the two.

References: see docs/references.md.
"""

from __future__ import annotations

import abc
from typing import Any

from nsjax.solvers.base import Solver


class QuasiNewtonPhase(Solver):
    """A solver whose step is `propose` then `commit`, and whose subgradients give cuts of
    the risk: what `Hybrid` runs as its phase 1 (`SubLBFGS`, `SubBFGS`).

    Its state (``init``'s) is a NamedTuple whose fields ``core`` (`Core`: the iterate w,
    J(w), a lower bound, the counters), ``S`` (the scores X w) and ``status``
    (`RESULTS.running`, or the failure that ends the run) a caller may read; the rest is
    the phase's own.
    """

    @abc.abstractmethod
    def propose(self, problem, state) -> tuple[Any, Any, Any]:
        """A step up to its buffers' update: (the next state, its buffers as they were; the
        `Direction` found at ``state``; the update left for `commit`, a NamedTuple of
        arrays). ``step`` is ``commit(*propose(...))`` without the direction."""

    @abc.abstractmethod
    def commit(self, state, pending) -> Any:
        """``state`` with the update ``pending`` (`propose`'s, or `no_update`'s) written
        into its buffers."""

    @abc.abstractmethod
    def no_update(self, state) -> Any:
        """An update for `commit` that leaves the buffers of ``state`` as they are, shaped
        like `propose`'s (for a branch that takes no step of this phase)."""

    @abc.abstractmethod
    def subgradient_cut(self, problem, state) -> tuple[Any, Any]:
        """(a, b): the cut R(Xv) ≥ ⟨a, v⟩ + b of the risk that the subgradient ``state``
        holds at its iterate gives (`Problem.dual_cut`), without a product with X."""

    @abc.abstractmethod
    def direction_cut(self, problem, state, direction) -> tuple[Any, Any]:
        """(a, b): the cut of the risk that the aggregated subgradient of ``direction``
        (`propose`'s at ``state``) gives, without a product with X."""

    @abc.abstractmethod
    def take_buffers(self, state) -> tuple[Any, Any]:
        """(``state`` without its big buffers, the buffers): see the module docstring."""

    @abc.abstractmethod
    def give_buffers(self, state, buffers) -> Any:
        """``state`` with ``buffers`` (`take_buffers`'s) back in."""

    @abc.abstractmethod
    def postprocess(self, problem, state, best, result, tol):
        """`Solver.postprocess`, also on another solver's state (the composing solver's
        own): it reads and changes only ``state.core``."""


class BundlePhase(Solver):
    """A bundle method whose step is `insert`, `approach`, `cut` and `arrive`, and that
    starts from an iterate and cuts collected elsewhere: what `Hybrid` runs as its phase 2
    (`BMRM`).

    Its state is a NamedTuple whose field ``core`` (`Core`) a caller may read; the rest is
    the phase's own. Between `empty_start` and `warm_start` a state may serve as a
    collection of cuts only (`with_cut`, `insert`): its model is then not kept up to date,
    and `warm_start` rebuilds it.
    """

    @abc.abstractmethod
    def zero_stats(self) -> dict:
        """The phase's counters (``core.stats``), all 0."""

    @abc.abstractmethod
    def empty_start(self, core, S, cut_a, cut_b) -> Any:
        """The state at ``core.w`` (scores ``S``; ``core.stats``: the phase's counters)
        with an empty bundle, the cut (cut_a, cut_b) taken there pending."""

    @abc.abstractmethod
    def with_cut(self, state, cut_a, cut_b) -> Any:
        """``state`` with the cut R(Xv) ≥ ⟨cut_a, v⟩ + cut_b pending (put into the bundle by
        the next `insert`)."""

    @abc.abstractmethod
    def insert(self, state) -> Any:
        """Put the pending cut into the bundle (making room if it is full): the first part
        of a step, and all of one that only collects cuts."""

    @abc.abstractmethod
    def warm_start(self, state, core, S, keep_cuts, cut=None) -> Any:
        """The state at ``core.w`` (scores ``S``; ``core.stats``: the phase's counters),
        its bundle holding ``state``'s cuts if ``keep_cuts`` (a Python bool) else none, and
        the pending cut ``cut`` = (a, b) taken there (default: ``state``'s pending cut)."""

    @abc.abstractmethod
    def approach(self, problem, state) -> tuple[Any, Any]:
        """A step after `insert`, up to its next cut: (the state, the point of that cut, a
        NamedTuple whose fields ``w`` and ``S`` a caller may read)."""

    @abc.abstractmethod
    def cut(self, problem, w, S) -> tuple:
        """(w, S, J(w), a, b): the cut taken at w (scores S); w and S may move (with a
        bias: to w's best bias). The one call site of the expensive part of a step."""

    @abc.abstractmethod
    def no_cut(self, point) -> tuple:
        """A placeholder shaped like `cut`'s result at ``point``, for a branch that takes
        none."""

    @abc.abstractmethod
    def cut_point_at(self, state, w, S) -> Any:
        """The point of a cut at (w, S) alone (no line search's point to compare with),
        shaped like `approach`'s, for a branch that does not approach; the model's fields
        those of ``state``."""

    @abc.abstractmethod
    def arrive(self, state, point, cut) -> Any:
        """The rest of the step from `approach`'s ``point`` and its ``cut`` (`cut`'s):
        move, and make the cut pending."""

    @abc.abstractmethod
    def take_buffers(self, state) -> tuple[Any, Any]:
        """(``state`` without its big buffers, the buffers): see the module docstring."""

    @abc.abstractmethod
    def give_buffers(self, state, buffers) -> Any:
        """``state`` with ``buffers`` (`take_buffers`'s) back in."""

    @abc.abstractmethod
    def terminate(self, problem, state, best, tol):
        """`Solver.terminate`, where ``best`` may also hold another phase's iterates."""

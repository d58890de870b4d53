"""The solver registry: every solver configuration that the invariant tests
(`test_invariants.py`) run on. Adding a solver means adding one line here.

Each entry names the losses it solves and the relative accuracy it reaches on the seeded
problems of `test_invariants.py` within ``max_steps`` (1e-6 unless the method is known to
be slower: the figures below are measured, not wished).
"""

from __future__ import annotations

from typing import NamedTuple

from toy_solver import AveragedSubgradient

import nsjax
from nsjax.solvers import Solver

S = nsjax.solvers


class Entry(NamedTuple):
    name: str
    solver: Solver
    losses: tuple = ("hinge", "logistic")  # problem kinds, see test_invariants.KINDS
    rtol: float = 1e-6  # relative error to the cvxpy optimum it must reach
    max_steps: int = 2000
    fast: bool = True  # reaches tol 1e-9 within 400 steps (test_sweep_equals_solve)


REGISTRY = [
    Entry("Hybrid", S.Hybrid()),  # the default of nsjax.solve
    # The default as "auto" makes it on GPUs, run here: the compact form of B and the
    # multisection bracket in its subLBFGS phase.
    Entry("Hybrid-gpu-paths", S.Hybrid(sublbfgs=S.SubLBFGS(
        memory=S.LBFGSMemory(15, form="compact"), line_search=S.ExactLineSearch("multisect"))),
        ("hinge",)),
    # The default subLBFGS stalls on the hinge's kinks (stall_tol, RESULTS.md "Why subLBFGS's
    # tail stalls"): on seed 1 at 3e-7 or 2e-6 of J*, depending on the order of the sums that
    # XLA compiles (`nsjax.programs`). The Hybrid is the solver that finishes. On seeds
    # 0–7 the worst was 1.7e-6 (seed 1, stalled) with the optimized code and 2.3e-5
    # (seed 0, direction_failed: Alg. 2 with B = I found no descent in k_max = 100
    # iterations) at -O0 (`conftest.py`); 1,000 iterations there reach 1e-11, but cost
    # float32 runs at full size 10–15x their time (docs/design.md).
    Entry("SubLBFGS", S.SubLBFGS(), rtol=1e-4),
    # Memory ≥ d without secant scaling: the configuration that reaches 1e-6 on small kinked
    # problems (test_sublbfgs.py uses m = 256 on d = 50; here d ≤ 12).
    Entry("SubLBFGS-m64-unscaled", S.SubLBFGS(memory=64, scaling=False), ("hinge",)),
    Entry("SubLBFGS-wolfe", S.SubLBFGS(line_search="wolfe")),
    Entry("SubBFGS", S.SubBFGS()),
    # BMRM also on M³N chains (Zhang et al. 2010, Example 4): its cut is loss-augmented Viterbi.
    Entry("BMRM", S.BMRM(), ("hinge", "chain", "logistic")),
    Entry("BMRM-exact", S.BMRM(line_search="exact"), ("hinge",)),
    # The L1 family (issue 10) on L1-regularized logistic regression.
    Entry("OBA", S.OBA(), ("logistic-l1", "logistic")),
    Entry("OWLQN", S.OWLQN(), ("logistic-l1",)),
    Entry("OWLQNStar", S.OWLQNStar(), ("logistic-l1",)),
    # The Nesterov family (issue 11): binary hinge with L2 only. O(1/k²): ~1500 steps to
    # 1e-6 here, ~50,000 to 1e-9.
    Entry("Pragam", S.Pragam(), ("hinge",), fast=False),
    # Pragam on M³N chains (Saha et al. 2009, App. E): the dual over the chains' marginal polytope.
    Entry("Pragam-chain", S.Pragam(), ("chain",), max_steps=10_000, fast=False),
    Entry("AGMEF", S.AGMEF(), ("hinge",), fast=False),
    # Smoothed to ε = 1e-8: the certified gap on J stops near ε (Zhang et al. 2010, Theorem 19).
    # Also in the entropy geometry (the relative entropy on the simplex), on a smooth loss
    # (f = R(Xw), no smoothing), and under a constraint (the elastic-net ball).
    Entry("AGMEF-primal", S.AGMEF(scheme="primal", epsilon=1e-8),
          ("hinge", "hinge-entropy", "squared-ball", "logistic"), fast=False),
    # The optimized prox-function of Zhang et al. (2010), §5.6 (per-example smoothing
    # μᵢ = μ bᵢ²).
    Entry("AGMEF-primal-optimized", S.AGMEF(scheme="primal", epsilon=1e-8,
                                            prox_function="optimized"), ("hinge",),
          fast=False),
    # Entropy-regularized LPBoost (Zhang et al. 2010, Example 5) with the default ε (1e-6): the
    # soft-max smoothing of the largest score; ~1e-6–7e-6 of J* in 5000 steps here.
    Entry("AGMEF-primal-lpboost", S.AGMEF(scheme="primal"), ("maxscore-entropy",),
          rtol=1e-5, max_steps=5000, fast=False),
    Entry("AGMEF1", S.AGMEF1(), ("hinge",), fast=False),
    # LIBLINEAR's dual coordinate descent (Hsieh et al. 2008): the binary hinge with L2.
    Entry("DualCD", S.DualCD(), ("hinge",)),
    Entry("DualCD-block", S.DualCD(block=8), ("hinge",)),
    # O(1/(λε)) steps: 1e-5 in 2000 steps on these problems.
    Entry("LineSearchBMRM", S.LineSearchBMRM(), rtol=1e-4),
    # O(log t/(λt)): 5e-4 on the hinge in 2000 steps.
    Entry("AveragedSubgradient", AveragedSubgradient(), rtol=3e-3),
]

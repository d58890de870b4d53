"""Issue 9: the default `solve(prob)` ends `successful` with a closed certified gap.

50 seeded problems (binary dense and sparse, multiclass K = 3–10, multilabel; n ≤ 300;
λ log-uniform in [1e-6, 1e-1]) solved with no solver given, tol = 1e-8, against cvxpy's
optimum. Each group is split in two chunks (balanced over the two test workers) of
problems that share their shapes, so that each chunk compiles one program.
"""

import numpy as np
import pytest
from reference import (
    cvxpy_multiclass_optimum,
    cvxpy_multilabel_optimum,
    cvxpy_optimum,
    planted_multiclass,
    planted_multilabel,
    random_binary,
)

import nsjax
from nsjax import RESULTS

L2 = nsjax.regularizers.L2

#: (group, number of problems): 10 + 10 + 15 + 15 = 50.
GROUPS = {"binary-dense": 10, "binary-sparse": 10, "multiclass": 15, "multilabel": 15}


def _problem(group, i):
    """(Problem, J* from cvxpy) for case i of a group."""
    rng = np.random.default_rng(1000 * list(GROUPS).index(group) + i)
    lam = 10 ** rng.uniform(-6, -1)
    if group == "binary-dense":
        X, y, _ = random_binary(int(rng.integers(2**31)), 200, 30)
    elif group == "binary-sparse":
        # One sparsity pattern (one layout, one compile); new values and labels each time.
        X, _, _ = random_binary(0, 200, 50, sparse=True, nnz=2000)
        X.data = rng.normal(size=X.nnz)
        y = np.where(X @ rng.normal(size=50) + 0.5 * rng.normal(size=200) > 0, 1, -1)
        y[:2] = [1, -1]
    if group.startswith("binary"):
        J_star, _ = cvxpy_optimum(X, y, lam)
        return nsjax.Problem(nsjax.losses.Hinge(), L2(lam), X, y), J_star
    if group == "multiclass":
        K = (3, 10)[i % 2]
        X, y = planted_multiclass(rng, 300 if K == 10 else 150, 10, K)
        J_star = cvxpy_multiclass_optimum(X, y, lam, K)
        return nsjax.Problem(nsjax.losses.MulticlassHinge(), L2(lam), X, y), J_star
    X, Y = planted_multilabel(rng, 120, 10, 5)
    J_star = cvxpy_multilabel_optimum(X, Y.astype(bool), lam)
    return nsjax.Problem(nsjax.losses.MultilabelHinge(), L2(lam), X, Y), J_star


def _failures(prob, J_star):
    """What is wrong with the default solve of ``prob`` (an empty list if nothing)."""
    sol = nsjax.solve(prob, max_steps=2000, tol=1e-8)
    value, gap = float(sol.value), float(sol.gap)
    # cvxpy's J* is itself accurate to about 1e-10: hence the slack in the bound checks.
    slack = 1e-9 * max(1.0, J_star)
    steps = int(sol.num_steps)
    best = np.asarray(sol.history.best[:steps])
    hgap = np.asarray(sol.history.gap[:steps])
    checks = {
        "successful": sol.result == RESULTS.successful,
        "gap <= tol": gap <= 1e-8 * max(1.0, abs(value)),
        "within 1e-6 of J*": abs(value - J_star) <= 1e-6 * max(1.0, J_star),
        # The certified gap bounds the true suboptimality at every recorded step.
        "gap >= J - J* (every step)": bool(np.all(hgap >= best - J_star - slack)),
        "gap >= J - J* (end)": gap >= value - J_star - slack,
    }
    return [f"{name} (result {sol.result!r}, J - J* {value - J_star:.2e}, gap {gap:.2e}, "
            f"{steps} steps)" for name, ok in checks.items() if not ok]


#: Two chunks per group: the multiclass ones by K (even cases K = 3, odd K = 10).
CHUNKS = [(group, tuple(range(0, count, 2)) if group == "multiclass" else
           tuple(range(count // 2)), f"{group}-a") for group, count in GROUPS.items()]
CHUNKS += [(group, tuple(range(1, count, 2)) if group == "multiclass" else
            tuple(range(count // 2, count)), f"{group}-b") for group, count in GROUPS.items()]


@pytest.mark.parametrize("group, cases", [c[:2] for c in CHUNKS], ids=[c[2] for c in CHUNKS])
def test_default_solve_is_certified_and_optimal(group, cases):
    failed = [f"{group}[{i}] {f}" for i in cases for f in _failures(*_problem(group, i))]
    assert not failed, "\n".join(failed)


def test_default_is_the_hybrid_where_it_applies():
    X, y, lam = random_binary(0, 40, 5)
    prob = nsjax.Problem(nsjax.losses.Hinge(), L2(lam), X, y)
    assert isinstance(nsjax.loop.default_solver(prob), nsjax.solvers.Hybrid)
    # λ = 0: no bundle phase (its model is minimized through the dual of λ/2‖w‖²).
    assert isinstance(nsjax.loop.default_solver(prob.with_strength(0.0)), nsjax.solvers.SubLBFGS)

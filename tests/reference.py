"""Independent references: cvxpy optima and plain-numpy objectives."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import scipy.sparse as sp


def hinge_objective(w, X, y, lam):
    return 0.5 * lam * w @ w + np.mean(np.maximum(0.0, 1.0 - y * (X @ w)))


def cvxpy_optimum(X, y, lam, loss="hinge"):
    """min_w λ/2‖w‖² + mean(loss(y x_iᵀw)) by Clarabel at tight tolerances."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    n, d = X.shape
    w = cp.Variable(d)
    margins = cp.multiply(y, X @ w)
    if loss == "hinge":
        risk = cp.sum(cp.pos(1 - margins)) / n
    else:
        risk = cp.sum(cp.logistic(-margins)) / n
    prob = cp.Problem(cp.Minimize(0.5 * lam * cp.sum_squares(w) + risk))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12,
               max_iter=500)
    return prob.value, w.value


def random_binary(seed, n, d, sparse=False, nnz=None):
    """A seeded random problem; sparse ones have exactly ``nnz`` entries (one compile)."""
    rng = np.random.default_rng(seed)
    if sparse:
        flat = rng.choice(n * d, size=nnz, replace=False)
        X = sp.csr_matrix((rng.normal(size=nnz), (flat // d, flat % d)), shape=(n, d))
        dense = X.toarray()
    else:
        dense = X = rng.normal(size=(n, d))
    w_true = rng.normal(size=d)
    y = np.where(dense @ w_true + 0.5 * rng.normal(size=n) > 0, 1, -1)
    y[:2] = [1, -1]  # both classes, always
    lam = 10 ** rng.uniform(-3, -1)
    return X, y, lam

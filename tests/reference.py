"""Independent references: cvxpy optima and plain-numpy objectives."""

from __future__ import annotations

import itertools

import cvxpy as cp
import numpy as np
import scipy.sparse as sp


def hinge_objective(w, X, y, lam):
    return 0.5 * lam * w @ w + np.mean(np.maximum(0.0, 1.0 - y * (X @ w)))


def cvxpy_optimum(X, y, lam, loss="hinge", reg="l2", mu=0.0, bias=False, cap=1.0,
                  gamma=0.0, sample_weight=None):
    """min_w reg(w) + mean(loss(y x_iᵀw)) by Clarabel at tight tolerances: reg "l2" is
    λ/2‖w‖², "l1" λ‖w‖₁, "elasticnet" μ‖w‖₁ + λ/2‖w‖², "entropy" λ Σ wᵢ log(d wᵢ) on
    {w ∈ [0, cap]ᵈ, Σw = 1} (exponential cone), "ball" the constraint γ‖w‖₁ + ½‖w‖² ≤ λ
    (``gamma``: γ). Loss "squared": (1/2n)‖Xw − y‖²;
    "maxscore": maxᵢ x_iᵀw.
    With ``bias``, scores x_iᵀw + b with b free, and the returned w ends with b. With
    ``sample_weight`` c: the risk (1/n) Σᵢ cᵢ lossᵢ (hinge, logistic, squared)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X)
    n, d = X.shape
    w = cp.Variable(d)
    b = cp.Variable() if bias else 0.0
    margins = cp.multiply(y, X @ w + b)
    c = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    if loss == "hinge":
        risk = cp.sum(cp.multiply(c, cp.pos(1 - margins))) / n
    elif loss == "squared":
        risk = cp.sum(cp.multiply(c, cp.square(X @ w + b - y))) / (2 * n)
    elif loss == "maxscore":  # max_i x_iᵀw (LPBoost's edges; y unused)
        risk = cp.max(X @ w)
    else:
        risk = cp.sum(cp.multiply(c, cp.logistic(-margins))) / n
    penalty = {"l2": 0.5 * lam * cp.sum_squares(w), "l1": lam * cp.norm1(w),
               "elasticnet": mu * cp.norm1(w) + 0.5 * lam * cp.sum_squares(w),
               "entropy": -lam * cp.sum(cp.entr(w)) + lam * np.log(d), "ball": 0.0}[reg]
    domain = {"entropy": [w >= 0, w <= cap, cp.sum(w) == 1],
              "ball": [gamma * cp.norm1(w) + 0.5 * cp.sum_squares(w) <= lam]}.get(reg, [])
    prob = cp.Problem(cp.Minimize(penalty + risk), domain)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12,
               max_iter=500)
    assert np.isfinite(prob.value), f"cvxpy did not solve the reference problem: {prob.status}"
    return prob.value, (np.append(w.value, b.value) if bias else w.value)


def check_capped_simplex_run(sol, J_star, cap):
    """A solve on the capped simplex {w ∈ [0, cap]ᵈ, Σw = 1}: its w is in the set, and its
    certified gap is finite and ≥ the true suboptimality (vs J*) at every recorded step."""
    w = np.asarray(sol.w)
    assert np.all(w >= 0) and np.all(w <= cap * (1 + 1e-12)) and abs(w.sum() - 1) < 1e-12
    steps = int(sol.num_steps)
    best, gap = np.asarray(sol.history.best[:steps]), np.asarray(sol.history.gap[:steps])
    assert np.all(np.isfinite(gap)) and np.all(gap >= best - J_star - 1e-10)


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


def cvxpy_multiclass_optimum(X, y, lam, K, sample_weight=None):
    """min_W λ/2‖W‖² + mean_i max_z [1(z ≠ y_i) + x_iᵀ(w_z − w_{y_i})] (Crammer–Singer);
    with ``sample_weight`` c, (1/n) Σ_i c_i max_z [...]."""
    n, d = X.shape
    W = cp.Variable((d, K))
    S = X @ W
    Y1 = np.eye(K)[y]
    true = cp.reshape(cp.sum(cp.multiply(S, Y1), axis=1), (n, 1), order="C")
    c = np.ones(n) if sample_weight is None else np.asarray(sample_weight, float)
    risk = cp.sum(cp.multiply(c, cp.max(1 - Y1 + S - true, axis=1))) / n
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(W) + risk))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return prob.value


def chain_features(tokens, labeling, K):
    """φ(x, y) of one chain as a (d + K, K) matrix: Σ_t x_t ⊗ e_{y_t} in the first d rows,
    the transition counts in the last K (`nsjax.losses.chain`), written from the definition."""
    L, d = tokens.shape
    F = np.zeros((d + K, K))
    for t in range(L):
        F[:d, labeling[t]] += tokens[t]
        if t + 1 < L:
            F[d + labeling[t], labeling[t + 1]] += 1
    return F


def cvxpy_chain_optimum(tokens, labels, lam, K):
    """M³N (Zhang et al. 2010, eq. 46) with the Hamming loss, by enumerating every labeling
    of every chain: min_W λ/2‖W‖² + mean_i ξ_i, ξ_i ≥ Δ(y′, yⁱ) + ⟨W, φ(xⁱ, y′) − φ(xⁱ, yⁱ)⟩ ∀y′."""
    N, L, d = tokens.shape
    W = cp.Variable((d + K) * K)
    xi = cp.Variable(N)
    all_y = np.array(list(itertools.product(range(K), repeat=L)))
    constraints = []
    for i in range(N):
        truth = chain_features(tokens[i], labels[i], K).ravel()
        Phi = np.stack([chain_features(tokens[i], y, K).ravel() for y in all_y]) - truth
        hamming = (all_y != labels[i]).sum(axis=1)
        constraints.append(xi[i] >= hamming + Phi @ W)
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(W) + cp.sum(xi) / N), constraints)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert np.isfinite(prob.value), f"cvxpy did not solve the chain problem: {prob.status}"
    return prob.value, W.value.reshape(d + K, K)


def cvxpy_multilabel_optimum(X, Ymask, lam):
    """min_W λ/2‖W‖² + mean_i max(0, max_{z ∈ Z_i, z' ∉ Z_i} 1 + x_iᵀ(w_z' − w_z)) (eq. 50),
    in epigraph form: ξ_i ≥ 0 and ξ_i ≥ 1 + S_iz' − S_iz for every such pair."""
    n, d = X.shape
    K = Ymask.shape[1]
    W = cp.Variable((d, K))
    xi = cp.Variable(n)
    flat = cp.reshape(X @ W, (n * K,), order="C")
    i, z, zp = np.array([(i, z, zp) for i in range(n) for z in np.flatnonzero(Ymask[i])
                         for zp in np.flatnonzero(~Ymask[i])]).T
    constraints = [xi >= 0, xi[i] >= 1 + flat[i * K + zp] - flat[i * K + z]]
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(W) + cp.sum(xi) / n), constraints)
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return prob.value


def planted_multiclass(rng, n, d, K, noise=0.5):
    """Labels from a random linear model plus noise (every class present)."""
    X = rng.normal(size=(n, d))
    y = np.argmax(X @ rng.normal(size=(d, K)) + noise * rng.normal(size=(n, K)), axis=1)
    y[:K] = np.arange(K)
    return X, y


def planted_multilabel(rng, n, d, K, noise=0.5):
    """Label sets from a random linear model plus noise; every example has one label at
    least, and every label is used and unused somewhere. Returns a dense (n, K) 0/1 mask."""
    X = rng.normal(size=(n, d))
    S = X @ rng.normal(size=(d, K)) + noise * rng.normal(size=(n, K))
    Y = S > 0.5
    Y[np.arange(n), np.argmax(S, axis=1)] = True
    Y[:K] = np.eye(K, dtype=bool)
    return X, Y.astype(int)


def random_multiclass(rng, n, d, K, integer=False):
    X = rng.integers(-2, 3, size=(n, d)).astype(float) if integer else rng.normal(size=(n, d))
    y = rng.integers(0, K, size=n)
    y[:K] = np.arange(K)
    return X, y



def random_multilabel(rng, n, d, K, integer=False):
    X = rng.integers(-2, 3, size=(n, d)).astype(float) if integer else rng.normal(size=(n, d))
    Y = rng.random((n, K)) < 0.3
    Y[np.arange(n), rng.integers(0, K, n)] = True
    return X, Y.astype(int)


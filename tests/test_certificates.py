"""The band-fitted dual certificates of the multiclass and multilabel hinge
(`nsjax.losses._max_affine_certificate`; Yu et al. 2010, eqs. 35–43 and 50–54) and the multiclass
hinge's conjugate: every certificate is a lower bound on min J (so J(w) − D bounds the true
suboptimality), and it closes to 1e-8 at the optimum.

The optimum: cvxpy (Clarabel) gives J* independently; BMRM at tol 1e-12 gives an optimal W
with its own certified gap (from its cutting-plane model, which uses no conjugate and no
certificate), so J(W_bmrm) is an upper bound on J* that exceeds it by at most 1e-12·max(1, J).
"D ≤ J(W_bmrm) + 1e-12·max(1, J)" therefore checks D ≤ J* + 2e-12·max(1, J*).
"""

import cvxpy as cp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from reference import (
    cvxpy_multiclass_optimum,
    cvxpy_multilabel_optimum,
    random_multiclass,
    random_multilabel,
)
from scipy.optimize import linprog

import nsjax

MC, ML, L2 = nsjax.losses.MulticlassHinge, nsjax.losses.MultilabelHinge, nsjax.regularizers.L2
N, D_, K = 90, 6, 4
#: name: (seed, λ). "margin-at-zero" (random labels) has W* = 0, where all K − 1 wrong
#: labels of every example tie: the least-squares fit alone leaves the simplex there, and
#: it takes the certificate's active-set passes to close.
CASES = {"margin": (1, 0.01), "margin-at-zero": (0, 0.05), "slack": (2, 0.01),
         "multilabel": (3, 0.01)}

CERT = jax.jit(lambda prob, W: prob.dual_certificate(W))
#: The certificate and J at many (λ, W), vmapped: one compiled program per problem.
CERT_MANY = jax.jit(jax.vmap(
    lambda prob, lam, W: (*prob.with_strength(lam).dual_certificate(W),
                          prob.with_strength(lam).objective(W)), in_axes=(None, 0, 0)))
OTHER_LAMS = (0.03,)


def _cvxpy_delta_optimum(X, y, lam, delta, rescaling):
    """min λ/2‖W‖² + mean_i max_z Δ(z, y_i)·(1 + S_iz − S_iy_i) (slack) or
    Δ(z, y_i) + S_iz − S_iy_i (margin), for a general label loss Δ."""
    n, d = X.shape
    W = cp.Variable((d, delta.shape[0]))
    S = X @ W
    Y1 = np.eye(delta.shape[0])[y]
    true = cp.reshape(cp.sum(cp.multiply(S, Y1), axis=1), (n, 1), order="C")
    Dy = delta[:, y].T
    diff = S - true
    pieces = cp.multiply(Dy, 1 + diff) if rescaling == "slack" else Dy + diff
    prob = cp.Problem(cp.Minimize(lam / 2 * cp.sum_squares(W)
                                  + cp.sum(cp.max(pieces, axis=1)) / n))
    prob.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    return prob.value


def _data(name, dtype=np.float64, sparse=False):
    """(problem, cvxpy's J*) for one of CASES."""
    seed, lam = CASES[name]
    rng = np.random.default_rng(seed)
    if name == "multilabel":
        X, Y = random_multilabel(rng, N, D_, K)
        # Label sets that X predicts (random ones put W* at 0 at these sizes): the top one
        # or two scores of X W + noise.
        T = X @ rng.normal(size=(D_, K)) + 0.5 * rng.normal(size=(N, K))
        kth = np.sort(T, axis=1)[np.arange(N), K - 1 - np.arange(N) % 2]
        Y = (T >= kth[:, None]).astype(int)
        Xp = sp.csr_matrix(X) if sparse else X
        return nsjax.Problem(ML(), L2(lam), Xp, Y, dtype=dtype), lambda: cvxpy_multilabel_optimum(
            X, Y.astype(bool), lam)
    X, y = random_multiclass(rng, N, D_, K)
    if name == "margin":  # labels that X predicts (random ones put W* at 0 at these sizes)
        y = np.argmax(X @ rng.normal(size=(D_, K)) + 0.5 * rng.normal(size=(N, K)), axis=1)
    Xp = sp.csr_matrix(X) if sparse else X
    if name == "slack":
        delta = rng.uniform(0.5, 2.0, size=(K, K)) * (1 - np.eye(K))
        loss = MC(delta=delta, rescaling="slack")
        return nsjax.Problem(loss, L2(lam), Xp, y, dtype=dtype), lambda: _cvxpy_delta_optimum(
            X, y, lam, delta, "slack")
    return nsjax.Problem(MC(), L2(lam), Xp, y, dtype=dtype), lambda: cvxpy_multiclass_optimum(
        X, y, lam, K)


def _optimum(prob):
    """BMRM's optimum W at tol 1e-12 (one compiled program per problem shape: λ and tol
    are traced), J(W) ≥ J* and its scale max(1, J)."""
    sol = nsjax.solve(prob, nsjax.solvers.BMRM(), tol=1e-12, max_steps=2000)
    assert sol.result == nsjax.RESULTS.successful
    J = float(prob.objective(sol.w))
    assert float(sol.gap) <= 1e-12 * max(1.0, abs(J))
    return sol.w, J, max(1.0, abs(J))


def _points(W_opt, rng):
    """Points near the optimum (distances 1 … 1e-10), and far: 0 and two random ones."""
    scales = 10.0 ** -np.arange(0, 11)
    near = [W_opt + s * jnp.asarray(rng.normal(size=W_opt.shape)) for s in scales]
    far = [0.0 * W_opt] + [jnp.asarray(s * rng.normal(size=W_opt.shape)) for s in (1.0, 10.0)]
    return scales, jnp.stack(near + far)


@pytest.mark.parametrize("name", list(CASES))
def test_certificate_is_a_lower_bound_and_closes_at_the_optimum(name):
    prob, cvx = _data(name)
    W_opt, J_up, scale = _optimum(prob)
    J_cvx = cvx()
    assert abs(J_cvx - J_up) <= 1e-7 * scale  # cvxpy agrees, to its own accuracy

    # The points: the optimum, near it (distances 1 … 1e-10), far from it, and BMRM's best
    # iterates stopped at tol 1e-2, 1e-4, 1e-6 (the same compiled program as the optimum's);
    # then the optimum at another λ. All in one call under jit and vmap over (λ, W).
    scales, Ws = _points(W_opt, np.random.default_rng(11))
    path = [nsjax.solve(prob, nsjax.solvers.BMRM(), tol=t, max_steps=2000).w
            for t in (1e-2, 1e-4, 1e-6)]
    others = [_optimum(prob.with_strength(lam)) for lam in OTHER_LAMS]
    Ws = jnp.concatenate([W_opt[None], Ws, jnp.stack(path), jnp.stack([o[0] for o in others])])
    lams = np.full(len(Ws), float(prob.lam))
    lams[-len(others):] = OTHER_LAMS
    lower, products, values = (np.asarray(a) for a in CERT_MANY(prob, jnp.asarray(lams), Ws))
    assert np.all(np.isfinite(lower)) and np.all(products >= 3)
    mine = slice(0, len(Ws) - len(others))

    # (1) D ≤ J* everywhere: J(w) − D is at least the true suboptimality J(w) − J*.
    violation = float(np.max(lower[mine] - J_up))
    assert violation <= 1e-12 * scale, violation
    for (_, J_other, scale_other), D_other in zip(others, lower[-len(others):], strict=True):
        assert D_other <= J_other + 1e-12 * scale_other
    # (2) At the optimum (at each λ) the gap closes.
    assert values[0] - lower[0] <= 1e-8 * scale, values[0] - lower[0]
    for (_, J_other, scale_other), D_other in zip(others, lower[-len(others):], strict=True):
        assert J_other - D_other <= 1e-8 * scale_other, J_other - D_other
    # Near the optimum it is tight: within a factor of the true suboptimality.
    near = slice(1, 1 + len(scales))
    sub, gap = values[near] - (J_up - 1e-12 * scale), values[near] - lower[near]
    tight = scales <= 1e-4
    assert np.all(gap[tight] <= 10 * sub[tight] + 1e-9 * scale), (gap, sub)
    if name != "multilabel":  # the multiclass hinge's conjugate: D from u alone, below J*
        u = prob.loss.dscores(prob.scores(W_opt), prob.y)
        assert float(prob.dual_value(u)) <= J_up + 1e-12 * scale

    # (3) float32: finite, a lower bound up to float32 rounding, tight to float32 accuracy.
    prob32, _ = _data(name, dtype=np.float32)
    lower32, _ = CERT(prob32, W_opt.astype(jnp.float32))
    assert lower32.dtype == jnp.float32 and np.isfinite(float(lower32))
    assert float(lower32) <= J_up + 1e-5 * scale
    assert J_up - float(lower32) <= 1e-3 * scale


def test_sublbfgs_takes_the_certificate_at_the_end():
    # subLBFGS stalls on the slack-rescaled problem; stopped after 40 steps, its gap is at
    # least its suboptimality, and no larger than the certificate's at its iterate
    # (`certify_at_end` takes it where the gap is above tol).
    prob, cvx = _data("slack")
    sol = nsjax.solve(prob, nsjax.solvers.SubLBFGS(), tol=1e-14, max_steps=40)
    sub = float(sol.value) - cvx()
    assert sub > 1e-6
    assert float(sol.gap) >= sub - 1e-8
    lower, _ = CERT(prob, sol.w)
    assert float(sol.gap) <= float(sol.value) - float(lower) + 1e-12


def test_certificate_sparse_equals_dense():
    prob, _ = _data("margin")
    prob_sp, _ = _data("margin", sparse=True)
    assert prob_sp.X.is_sparse
    W = jnp.asarray(np.random.default_rng(3).normal(size=prob.w_shape)) * 0.1
    dense, _ = CERT(prob, W)
    sparse, _ = CERT(prob_sp, W)
    assert np.isfinite(float(dense))
    assert abs(float(sparse) - float(dense)) <= 1e-10 * max(1.0, abs(float(dense)))


# --- the multiclass hinge's conjugate ------------------------------------------------------

def _label_losses(loss, y, K):
    """Δ(z, y_i) for every example i and label z, (n, K), from the documented ``delta``
    (delta[z, z'] = Δ(z, z'); None: 1 off the true label)."""
    y = np.asarray(y)
    return 1.0 - np.eye(K)[y] if loss.delta is None else np.asarray(loss.delta)[:, y].T


def _score_dual_point(loss, y, alpha):
    """u_i = Σ_z α_iz coef_iz (e_z − e_{y_i}) / n for weights α_i in the simplex (the class
    docstring's dual point; coef 1 for margin rescaling, Δ(z, y_i) for slack)."""
    n, K = alpha.shape
    g = alpha * (1.0 if loss.rescaling == "margin" else _label_losses(loss, y, K))
    return (g - np.eye(K)[np.asarray(y)] * g.sum(axis=1, keepdims=True)) / n


def _conjugate_by_lp(loss, y, u, K):
    """R*(u) = sup_S ⟨u, S⟩ − R(S) as a linear program (S and per-example epigraph t), by
    HiGHS: +inf when unbounded."""
    n = u.shape[0]
    D = _label_losses(loss, y, K)
    coef = np.ones((n, K)) if loss.rescaling == "margin" else D
    # Variables x = (S (n·K), t (n)); minimize −⟨u, S⟩ + Σ t / n.
    c = np.concatenate([-u.ravel(), np.ones(n) / n])
    rows, rhs = [], []
    for i in range(n):
        for z in range(K):
            # piece: c_iz + coef_iz (S_iz − S_iy) ≤ t_i
            a = np.zeros(n * K + n)
            a[i * K + z] += coef[i, z]
            a[i * K + y[i]] -= coef[i, z]
            a[n * K + i] = -1.0
            rows.append(a)
            rhs.append(-D[i, z])
    res = linprog(c, A_ub=np.array(rows), b_ub=np.array(rhs), bounds=(None, None),
                  method="highs")
    if res.status == 3:
        return np.inf
    assert res.status == 0
    return -res.fun


@pytest.mark.parametrize("rescaling", ["margin", "slack"])
def test_multiclass_conjugate_equals_lp(rescaling):
    rng = np.random.default_rng(4)
    n, Kc = 5, 3
    delta = rng.uniform(0.5, 2.0, size=(Kc, Kc)) * (1 - np.eye(Kc))
    delta[0, 1] = 0.0  # a wrong label that costs nothing: its slack piece is flat
    loss = MC(delta=jnp.asarray(delta), rescaling=rescaling)
    y = np.array([0, 1, 2, 1, 0])
    yj = jnp.asarray(y)
    for trial in range(6):
        alpha = rng.dirichlet(np.ones(Kc), size=n)
        if rescaling == "slack":
            alpha[(y == 1), 0] = 0.0  # no weight on the flat piece (Δ(0, 1) = 0)
            alpha /= alpha.sum(1, keepdims=True)
        u = _score_dual_point(loss, y, alpha)
        if trial >= 4:
            u[trial - 4, (y[trial - 4] + 1) % Kc] -= 0.5  # leaves the domain
        got = float(loss.conjugate(jnp.asarray(u), yj))
        want = _conjugate_by_lp(loss, y, u, Kc)
        if np.isinf(want):
            assert got == np.inf
        else:
            assert got == pytest.approx(want, abs=1e-9)
        # The scale limit: R*(s u) = s R*(u) up to it, and u leaves the domain past it.
        if np.isfinite(want):
            s = float(loss.dual_scale_limit(jnp.asarray(u), yj))
            assert float(loss.conjugate(jnp.asarray(s * u), yj)) == pytest.approx(
                s * got, abs=1e-9)
            assert float(loss.conjugate(jnp.asarray(1.01 * s * u), yj)) == np.inf

"""Max-margin Markov networks on chains (Zhang et al. 2010, Example 4; Saha et al. 2009,
App. E): the loss-augmented Viterbi oracle against enumeration of every labeling, the M³N
optimum against cvxpy, and the problem builder's checks."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import numpy as np
import pytest
from reference import chain_features, cvxpy_chain_optimum

import nsjax
from nsjax.losses.chain import viterbi

K, L, D = 3, 4, 2


def _chains(seed, N=5, length=L, d=D):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N, length, d)), rng.integers(0, K, size=(N, length))


def _score(tokens, labeling, W):
    return float(np.sum(chain_features(tokens, labeling, K) * W))


ALL = list(itertools.product(range(K), repeat=L))


@pytest.mark.parametrize("seed", range(3))
def test_viterbi_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    node, trans = rng.normal(size=(L, K)), rng.normal(size=(K, K))
    labels, score = viterbi(jnp.asarray(node), jnp.asarray(trans))

    def total(y):
        return sum(node[t, y[t]] for t in range(L)) + sum(trans[y[t], y[t + 1]]
                                                          for t in range(L - 1))

    best = max(ALL, key=total)
    assert tuple(np.asarray(labels)) == best
    assert abs(float(score) - total(best)) < 1e-12


def test_viterbi_breaks_ties_towards_the_direction():
    # All-zero potentials: every labeling ties; with a direction, the steepest wins.
    rng = np.random.default_rng(0)
    d_node, d_trans = rng.normal(size=(L, K)), rng.normal(size=(K, K))
    zeros = jnp.zeros((L, K)), jnp.zeros((K, K))
    labels, score = viterbi(*zeros, jnp.asarray(d_node), jnp.asarray(d_trans))
    slope = [sum(d_node[t, y[t]] for t in range(L))
             + sum(d_trans[y[t], y[t + 1]] for t in range(L - 1)) for y in ALL]
    assert float(score) == 0.0 and tuple(np.asarray(labels)) == ALL[int(np.argmax(slope))]


@pytest.mark.parametrize("seed", range(2))
def test_risk_and_oracle_equal_enumeration(seed):
    tokens, labels = _chains(seed)
    prob = nsjax.chains.chain_problem(tokens, labels, 0.1, classes=tuple(range(K)))
    rng = np.random.default_rng(seed + 10)
    W = rng.normal(size=prob.w_shape)
    S = prob.scores(jnp.asarray(W))

    def augmented(x, y, z):  # Hamming loss + score(z) − score(y)
        return np.sum(np.asarray(z) != y) + _score(x, z, W) - _score(x, y, W)

    risk = sum(max(augmented(x, y, z) for z in ALL)
               for x, y in zip(tokens, labels, strict=True)) / len(tokens)
    assert abs(float(prob.loss.risk(S, prob.y)) - risk) < 1e-12
    # dscores = Σ_i (φ(y′ⁱ) − φ(yⁱ)) / N (through Xᵀ) at labelings y′ⁱ that attain the max
    # (found by enumeration; with W normal, each sequence's maximizer is unique).
    U = np.asarray(prob.rmv(prob.loss.dscores(S, prob.y)))
    found = [max(ALL, key=lambda z, x=x, y=y: augmented(x, y, z))
             for x, y in zip(tokens, labels, strict=True)]
    hamming = np.sum(np.asarray(found) != labels) / len(tokens)
    assert abs(np.sum(U * W) + hamming - risk) < 1e-9
    # argsup: at W = 0 every all-wrong labeling is a maximizer; the oracle takes the one
    # steepest along dS, which enumeration finds.
    S0 = jnp.zeros_like(S)
    P = rng.normal(size=prob.w_shape)
    dS = prob.scores(jnp.asarray(P))
    g = np.asarray(prob.rmv(prob.loss.argsup(S0, dS, prob.y)))
    steepest = 0.0
    for x, y in zip(tokens, labels, strict=True):
        wrong = [z for z in ALL if np.all(np.asarray(z) != y)]
        steepest += max(_score(x, z, P) - _score(x, y, P) for z in wrong) / len(tokens)
    assert abs(float(np.sum(g * P)) - steepest) < 1e-9


def test_the_default_solve_reaches_the_cvxpy_optimum_with_valid_gaps():
    # (BMRM and Pragam on chains are in the solver registry: tests/solvers.py.)
    tokens, labels = _chains(0, N=6, length=3)
    lam = 0.05
    J_star, W_star = cvxpy_chain_optimum(tokens, labels, lam, K)
    prob = nsjax.chains.chain_problem(tokens, labels, lam, classes=tuple(range(K)))
    sol = nsjax.solve(prob, tol=1e-9, max_steps=1000)
    assert sol.result == nsjax.RESULTS.successful
    assert abs(float(sol.value) - J_star) <= 1e-6 * J_star
    assert np.max(np.abs(np.asarray(sol.w) - W_star)) < 1e-3  # strongly convex: close
    steps = int(sol.num_steps)
    best, gap = np.asarray(sol.history.best[:steps]), np.asarray(sol.history.gap[:steps])
    assert np.all(gap >= best - J_star - 1e-9)


def test_predict_is_the_best_labeling_and_maps_classes():
    tokens, labels = _chains(1)
    names = np.array(["B", "I", "O"])
    prob = nsjax.chains.chain_problem(tokens, names[labels], 0.1)
    assert prob.classes == ("B", "I", "O") and prob.w_shape == (D + K, K)
    W = np.random.default_rng(3).normal(size=prob.w_shape)
    pred = nsjax.chains.predict(jnp.asarray(W), tokens, prob.classes)
    for x, p in zip(tokens, pred, strict=True):
        best = max(ALL, key=lambda z, x=x: _score(x, z, W))
        assert tuple(p) == tuple(names[list(best)])


def test_bad_input_is_refused_with_its_fix():
    tokens, labels = _chains(0)
    with pytest.raises(ValueError, match="tokens must have shape"):
        nsjax.chains.chain_problem(tokens[0], labels, 0.1)
    with pytest.raises(ValueError, match="one label per token"):
        nsjax.chains.chain_problem(tokens, labels[:, :2], 0.1)
    prob = nsjax.chains.chain_problem(tokens, labels, 0.1)
    with pytest.raises(ValueError, match="chain_problem"):  # rows not in chain blocks
        nsjax.Problem(prob.loss, prob.reg, np.asarray(prob.X.to_scipy())[:-1],
                      np.asarray(prob.y)[:-1])
    with pytest.raises(ValueError, match="tokens must have shape"):
        nsjax.chains.predict(jnp.zeros(prob.w_shape), tokens[..., :1])


def test_synthetic_chains_are_seeded_and_sticky():
    tokens, labels = nsjax.datasets.synthetic_chains(200, 10, 4, 3, seed=1)
    again, labels2 = nsjax.datasets.synthetic_chains(200, 10, 4, 3, seed=1)
    assert np.array_equal(tokens, again) and np.array_equal(labels, labels2)
    assert tokens.shape == (200, 10, 3) and set(np.unique(labels)) <= {0, 1, 2, 3}
    stays = np.mean(labels[:, 1:] == labels[:, :-1])
    assert 0.75 < stays < 0.85  # stay = 0.8


def test_pragam_refuses_what_its_chain_dual_cannot_take():
    tokens, labels = _chains(0, length=1)
    prob = nsjax.chains.chain_problem(tokens, labels, 0.1, classes=tuple(range(K)))
    with pytest.raises(ValueError, match="MulticlassHinge"):
        nsjax.solve(prob, nsjax.solvers.Pragam())
    tokens, labels = _chains(0)
    prob = nsjax.chains.chain_problem(tokens, labels, 0.1, classes=tuple(range(K)))
    with pytest.raises(ValueError, match="lam > 0"):
        nsjax.solve(prob.with_strength(0.0), nsjax.solvers.Pragam())

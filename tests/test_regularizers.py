"""The regularizer interface: L2 against closed forms and brute force, and a test-only
kinked regularizer (|w|₁) to check that Problem accepts any implementation and that its
kinks join the exact line search exactly like a loss's lines (Yu et al. 2010, eq. 33)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import random_binary
from scipy.optimize import minimize_scalar

import nsjax
from nsjax.regularizers import L2, Regularizer, RegularizerLine
from nsjax.solvers import ExactLineSearch


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class AbsL1(Regularizer):
    """μ‖w‖₁ written from the abstract interface alone (`nsjax.regularizers.L1` is the
    real one): Problem must accept any implementation."""

    mu: jax.Array | float
    strength_name: ClassVar[str] = "mu"
    has_lines: ClassVar[bool] = True

    def value(self, w):
        return self.mu * jnp.sum(jnp.abs(w))

    def subgradient(self, w):
        return self.mu * jnp.sign(w)

    def argsup(self, w, p):
        g = self.mu * jnp.where(w != 0, jnp.sign(w), jnp.sign(p))
        return g, jnp.vdot(g, p)

    def line(self, w, p):
        w, p = w.reshape(-1, 1), p.reshape(-1, 1)
        b = self.mu * jnp.concatenate([w, -w], axis=1)
        zero = jnp.zeros((), w.dtype)
        return RegularizerLine(zero, zero, b,
                               self.mu * jnp.concatenate([p, -p], axis=1))

    def prox(self, v, step):
        return jnp.sign(v) * jnp.maximum(jnp.abs(v) - step * self.mu, 0.0)

    def conjugate(self, v):
        return jnp.where(jnp.max(jnp.abs(v)) <= self.mu * (1 + 1e-12), 0.0, jnp.inf)

    def smooth_value(self, w):
        return jnp.zeros((), w.dtype)

    def smooth_grad(self, w):
        return jnp.zeros_like(w)

    def smooth_hvp(self, v):
        return jnp.zeros_like(v)

    def mirror_map(self, w):
        return w

    def inverse_mirror_map(self, z):
        return z


def test_l2_against_closed_forms_and_brute_force():
    rng = np.random.default_rng(0)
    reg = L2(0.7)
    w, p, v = (jnp.asarray(rng.normal(size=5)) for _ in range(3))
    # prox: the optimality condition step·λ·x + x − v = 0.
    x = reg.prox(v, 0.3)
    np.testing.assert_allclose(np.asarray(0.3 * 0.7 * x + x - v), 0.0, atol=1e-14)
    # conjugate: Fenchel–Young, with equality at the maximizer w = v/λ.
    for _ in range(20):
        z = jnp.asarray(rng.normal(size=5))
        assert float(reg.conjugate(v)) >= float(jnp.vdot(v, z) - reg.value(z)) - 1e-12
    assert float(reg.conjugate(v)) == pytest.approx(float(jnp.vdot(v, v / 0.7)
                                                          - reg.value(v / 0.7)))
    assert float(L2(0.0).conjugate(v)) == np.inf and float(L2(0.0).conjugate(0 * v)) == 0.0
    # argsup and the line restriction.
    g, slope = reg.argsup(w, p)
    np.testing.assert_allclose(np.asarray(g), 0.7 * np.asarray(w))
    line = reg.line(w, p)
    for eta in (0.0, 0.3, 2.0):
        direct = float(reg.value(w + eta * p))
        assert direct == pytest.approx(float(reg.value(w) + line.c * eta + line.h * eta**2 / 2))
    assert float(slope) == pytest.approx(float(line.c)) and line.b is None
    # scaled_dual: max over s ∈ [0, s_max] of −s r − (λΩ)*(−s v), against a fine grid.
    for r, s_max in ((-0.8, 3.0), (-0.01, 0.5), (0.2, 2.0)):
        grid = np.linspace(0.0, s_max, 200_001)
        brute = np.max(-grid * r - grid**2 * float(jnp.vdot(v, v)) / (2 * 0.7))
        assert float(reg.scaled_dual(jnp.asarray(r), v, s_max)) == pytest.approx(brute,
                                                                                 abs=1e-9)
    np.testing.assert_array_equal(np.asarray(reg.inverse_mirror_map(reg.mirror_map(w))),
                                  np.asarray(w))
    assert float(reg.with_strength(2.0).strength) == 2.0


def test_any_regularizer_is_accepted_and_its_strength_sweeps():
    X, y, _ = random_binary(0, 30, 4)
    prob = nsjax.Problem(nsjax.losses.Hinge(), AbsL1(0.1), X, y)
    assert float(prob.strength) == pytest.approx(0.1) and prob.reg.mu.dtype == prob.dtype
    unregularized = nsjax.Problem(nsjax.losses.Hinge(), None, X, y)
    assert float(prob.with_strength(0.5).objective(jnp.ones(4))) == pytest.approx(
        0.5 * 4 + float(unregularized.objective(jnp.ones(4))))
    # sweep varies the strength lane by lane: each lane's J is its own μ‖w‖₁ + R.
    mus = [0.01, 0.3]
    sols = nsjax.sweep(prob, mus, nsjax.solvers.SubLBFGS(line_search="wolfe"), max_steps=20)
    for w, value, mu in zip(sols.w, sols.value, mus, strict=True):
        expected = mu * float(jnp.sum(jnp.abs(w))) + float(unregularized.objective(w))
        assert float(value) == pytest.approx(expected, rel=1e-12)
    assert float(jnp.sum(jnp.abs(sols.w[1]))) < float(jnp.sum(jnp.abs(sols.w[0])))
    # Bundle methods need L2 and say so.
    with pytest.raises(ValueError, match="L2 regularizer"):
        nsjax.solve(prob, nsjax.solvers.BMRM())


@pytest.mark.parametrize("kind", ["binary", "multiclass"])
@pytest.mark.parametrize("seed", range(3))
def test_regularizer_kinks_join_the_exact_line_search(kind, seed):
    """J(w + ηp) with the L1 term: the exact line search must find the brute-force argmin,
    with the regularizer's kinks (padded to the loss's K lines for multiclass) included."""
    rng = np.random.default_rng(seed)
    if kind == "binary":
        X, y, _ = random_binary(seed, 25, 6)
        loss, shape = nsjax.losses.Hinge(), (6,)
    else:
        X, y = rng.normal(size=(25, 6)), rng.integers(0, 3, 25)
        loss, shape = nsjax.losses.MulticlassHinge(), (6, 3)
    prob = nsjax.Problem(loss, AbsL1(0.05), X, y)
    w = jnp.asarray(rng.normal(size=shape)).at[0].set(0.0)  # some coordinates on a kink
    S = prob.scores(w)
    g, _, _ = prob.subgradient(w, S)
    p = -g
    dS = prob.scores(p)
    line = prob.line(w, S, p, dS)
    assert line.b.shape[0] == 25 + int(np.prod(shape))
    eta = float(ExactLineSearch().search(prob, w, S, p, dS).eta)

    def phi(t):
        return float(prob.objective(w + t * p))

    # Φ is convex: a bounded scalar search on a bracket around η* is a fair reference.
    hi = 4 * max(eta, 1e-3)
    ref = minimize_scalar(phi, bounds=(0.0, hi), method="bounded",
                          options=dict(xatol=1e-13))
    assert phi(eta) <= ref.fun + 1e-12
    assert phi(eta) <= min(phi(eta * (1 + 1e-6)), phi(eta * (1 - 1e-6))) + 1e-14

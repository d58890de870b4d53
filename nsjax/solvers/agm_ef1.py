"""AGM-EF-1 with adaptive L (Zhang et al. 2010, Alg. 3–4, Sec. 4.2) for the linear SVM, in the
primal or the dual scheme of `nsjax.solvers.agm_ef` (same f, Ψ, images and certificates).

AGM-EF-1 compresses the estimate function to a quadratic: q_k(x) = c_k Δ(x, z_k) + Q_k with
Q_k = q_k(z_k), and each step (Alg. 3, λ₁ = 0, σ = 1, Euclidean Δ = ½‖·‖²):

    a: the positive root of (1 − a)(c_k + λ₂a) = L a²                          (step 6)
    c_{k+1} = (1 − a)c_k + λ₂a,  τ₁ = (1 − a)c_k,  τ₃ = λ₂a(1 − a),  τ = τ₁ + τ₃
    u = ((τ − τ₁a) x_k + τ₁a z_k)/τ                                             (step 8)
    ψ_{k+1} = (1 − a) q_k + a [f(u) + ⟨∇f(u), · − u⟩ + Ψ]                       (step 9)
    z_{k+1} = argmin ψ_{k+1} = Π_Q(((1 − a)c_k z_k − a∇f(u)) / ((1 − a)c_k + aλ₂))  (10)
    x_{k+1} = (1 − a) x_k + a z_{k+1},  Q_{k+1} = ψ_{k+1}(z_{k+1})               (11–12)

with the invariant J(x_k) ≤ Q_k (27), checked by Alg. 4's backtracking on L (down by γ_d at
each step, up by γ_u until it holds). Its dual points are (35): α_{k+1} = (1 − a)α_k +
a α(u_{k+1}). Rate: Theorem 14 (linear with λ₂ > 0, O(1/k²) otherwise).

Start (Alg. 3, steps 1–4, and Alg. 4, steps 1–7): u₀ is the scheme's start x⁰, c₀ = L + λ₂,
z₀ = x₀ = argmin q₀ with q₀ = L Δ(·, u₀) + Ψ + ℓ_f(·; u₀); thereafter q₀ is replaced by
the quadratic c₀Δ(·, z₀) + q₀(z₀) below it (q₀ is c₀-strongly convex with minimizer z₀), the
form every later q_k has; Lemmas 11–12 hold for it unchanged.

References: see docs/references.md.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.solvers._options import solver_options
from nsjax.solvers.agm_ef import AGMEF, MAX_RAISES, _average
from nsjax.solvers.base import Core, count, counters


class AGMEF1State(NamedTuple):
    core: Core  # the primal point (and bias), J there, D of the dual point, counters
    x: jax.Array  # x_k
    z: jax.Array  # z_k = argmin q_k
    Kx: jax.Array  # images (as in AGMEFState)
    Kz: jax.Array
    c: jax.Array  # c_k, q_k's curvature
    Q: jax.Array  # Q_k = q_k(z_k)
    G: jax.Array  # the gradients averaged with the weights of (35)
    other: Any  # the other side's point by (35)
    lipschitz: jax.Array  # L_k
    mu: jax.Array  # μ, the smoothing (0: none)


@solver_options
class AGMEF1(AGMEF):
    """AGM-EF-1 with adaptive L (Zhang et al. 2010, Alg. 4) for the linear SVM; options as `AGMEF`
    (``scheme``, ``epsilon``, ``gamma_d``, ``gamma_u``, ``spectral_norm_sq``,
    ``power_iterations``). One quadratic model instead of AGMEF's running sums: the same
    cost a step, a different sequence of steps (module docstring).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> X = (X - X.mean(0)) / X.std(0)
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.AGMEF1(), tol=1e-6, max_steps=10_000)
        >>> sol.result, bool(sol.gap <= 1e-6)
        (<RESULTS.successful: 0>, True)
    """

    @property
    def bound(self) -> str:
        """Which a-priori bound the run's gaps obey (Sec. 4)."""
        return ("Theorem 14: F(x_k) − min F ≤ (L − λ₁)Δ(x, u₀)·min{(1 − √(λ/L'))^k, "
                "4/(2 + k)²} for the scheme's F; the recorded gap is the true J(w_k) − D(α_k).")

    def init(self, problem, w0) -> AGMEF1State:
        scheme = self.scheme_for(problem)
        mu, sq, products = self.smoothing_and_norm(problem)
        lam2 = scheme.strong_convexity(problem, mu)
        coef, bias = problem.split_bias(w0)
        S0 = problem.scores(w0)
        u0 = scheme.start(problem, coef, S0)
        Ku0 = scheme.image(problem, u0)
        L = scheme.first_lipschitz(problem, sq, mu, Ku0)
        f0, g0, other0 = scheme.gradient(problem, u0, Ku0, mu)
        _, _, lower = scheme.certificate(problem, u0, Ku0, g0, other0, bias)

        # Alg. 4, steps 2–7: raise L₀ until J(x₀) ≤ q₀(x₀).
        def attempt(L):
            z = scheme.prox_step(problem, u0, L, g0, mu)
            Kz = scheme.image(problem, z)
            q = (L * scheme.divergence(problem, z, u0) + scheme.regularizer(problem, z, mu)
                 + f0 + jnp.vdot(g0, z - u0))
            F = scheme.smooth_part(problem, z, Kz, mu) + scheme.regularizer(problem, z, mu)
            return z, Kz, q, F <= q + self.slack(F, q)

        def raise_L(carry):
            _, _, _, _, L, raises = carry
            return (*attempt(L * self.gamma_u), L * self.gamma_u, raises + 1)

        z, Kz, q, _, L, raises = jax.lax.while_loop(
            lambda c: ~c[3] & (c[5] < MAX_RAISES), raise_L,
            (*attempt(L), L, jnp.zeros((), jnp.int32)))
        stats = counters(matvecs=products + 4 + raises, lipschitz_increases=raises)
        return AGMEF1State(
            core=Core(w0, problem.value(w0, S0), lower, stats), x=z, z=z, Kx=Kz, Kz=Kz,
            c=L + lam2, Q=q, G=g0, other=other0, lipschitz=L, mu=mu)

    @staticmethod
    def slack(F, q):
        return 64 * jnp.finfo(F.dtype).eps * (jnp.abs(F) + jnp.abs(q))

    def attempt(self, problem, state: AGMEF1State, L):
        """Steps 6–12 of Alg. 3 with the estimate L, and whether (27) holds after them."""
        mu, c, scheme = state.mu, state.c, self.scheme_for(problem)
        lam2 = scheme.strong_convexity(problem, mu)
        # Step 6: (L + λ₂)a² + (c − λ₂)a − c = 0.
        a = (-(c - lam2) + jnp.sqrt((c - lam2) ** 2 + 4 * (L + lam2) * c)) / (2 * (L + lam2))
        tau1 = (1 - a) * c
        tau = tau1 + lam2 * a * (1 - a)
        theta = tau1 * a / tau  # step 8: u = (1 − θ) x + θ z
        u = theta * state.z + (1 - theta) * state.x
        Ku = theta * state.Kz + (1 - theta) * state.Kx
        f_u, grad, other_u = scheme.gradient(problem, u, Ku, mu)
        z = scheme.prox_step(problem, state.z, tau1 / a, grad, mu)  # step 10 (÷ a)
        Kz = scheme.image(problem, z)
        x = (1 - a) * state.x + a * z  # step 11
        Kx = (1 - a) * state.Kx + a * Kz
        # Q_{k+1} = ψ_{k+1}(z_{k+1}) (step 12) with q_k = c_k Δ(·, z_k) + Q_k.
        Q = ((1 - a) * (c * scheme.divergence(problem, z, state.z) + state.Q)
             + a * (f_u + jnp.vdot(grad, z - u) + scheme.regularizer(problem, z, mu)))
        F = scheme.smooth_part(problem, x, Kx, mu) + scheme.regularizer(problem, x, mu)
        new = state._replace(
            x=x, z=z, Kx=Kx, Kz=Kz, c=(1 - a) * c + lam2 * a, Q=Q,
            G=(1 - a) * state.G + a * grad, other=_average(1 - a, state.other, a, other_u),
            lipschitz=L)
        return new, F <= Q + self.slack(F, Q)

    def step(self, problem, state: AGMEF1State) -> AGMEF1State:
        L0 = state.lipschitz / self.gamma_d  # Alg. 4, step 9 (and 11 once)

        def raise_L(carry):
            _, _, L, raises = carry
            L = L * self.gamma_u
            return (*self.attempt(problem, state, L), L, raises + 1)

        new, _, _, raises = jax.lax.while_loop(
            lambda c: ~c[1] & (c[3] < MAX_RAISES), raise_L,
            (*self.attempt(problem, state, L0), L0, jnp.zeros((), jnp.int32)))
        bias = problem.split_bias(state.core.w)[1]
        w_b, value, lower = self.scheme_for(problem).certificate(
            problem, new.x, new.Kx, new.G, new.other, bias)
        stats = count(state.core.stats, matvecs=2 * (1 + raises), lipschitz_increases=raises)
        return new._replace(core=Core(w_b, value, lower, stats))

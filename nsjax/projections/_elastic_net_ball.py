"""The elastic-net ball {γ‖w‖₁ + ½‖w‖² ≤ r}: `project_elastic_net_ball`, the exact
projection onto it (Zhang et al. 2010, §5.5.2, eqs. 67–69, by sorting |g|), and
`elastic_net_ball_support`, its support function (the conjugate of its indicator).

References: see docs/references.md.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nsjax.projections._common import (
    _NO_EXPONENT,
    _arrays,
    _check_finite,
    _check_scalar,
    _check_vector,
    _dtype_of,
    _host,
    _ilogb,
    _in_float,
    _nan_unless,
    _times_pow2,
    _traced,
)

# ---------------------------------------------------------------------------------------
# The elastic-net ball {γ‖w‖₁ + ½‖w‖² ≤ r} and its support function
# ---------------------------------------------------------------------------------------


def _check_ball(fn, name, g, r, gamma):
    """The elastic-net ball's argument checks; returns n."""
    _dtype_of(fn, name, g)
    _dtype_of(fn, "r", r)
    _dtype_of(fn, "gamma", gamma)
    n = _check_vector(fn, name, np.shape(g))
    _check_scalar(fn, "r", np.shape(r))
    _check_scalar(fn, "gamma", np.shape(gamma))
    if not _traced(g):
        _check_finite(fn, name, g)
    if not _traced(r):
        h = float(_host(r))
        if not (math.isfinite(h) and h > 0):
            raise ValueError(f"{fn}: r must be finite and > 0 (the ball's radius); got {h!r}.")
    if not _traced(gamma):
        h = float(_host(gamma))
        if not (math.isfinite(h) and h >= 0):
            raise ValueError(f"{fn}: gamma must be finite and >= 0 (the weight of the l1 "
                             f"norm; 0 for the Euclidean ball); got {h!r}.")
    return n


def _ball_valid(v, r, gamma):
    return jnp.all(jnp.isfinite(v)) & jnp.isfinite(r) & (r > 0) & jnp.isfinite(gamma) & (
        gamma >= 0)


class _Ratio(NamedTuple):
    """ρ_k = D_k / N_k as ρ̂_k·2^(e_d − e_n): ρ itself may be far below the normal range
    (‖g‖ ≫ sqrt(r)) while xρ is not."""

    hat: jax.Array
    e_n: jax.Array
    e_d: jax.Array

    def times(self, x):
        """xρ for 0 ≤ x ≤ 2^e_n (or its entries at one k: ``hat`` indexed first)."""
        return _times_pow2(_times_pow2(x, -self.e_n) * self.hat, self.e_d)

    def value(self):
        return _times_pow2(self.hat, self.e_d - self.e_n)


def _scaled_norms(s, gamma, r, plus_gamma: bool) -> _Ratio:
    """For s sorted decreasing (≥ 0): N_k = sqrt(Σ_{i≤k} (sᵢ + γ)²) (or of sᵢ² alone) and
    D_k = sqrt(2r + kγ²), k = 1 … n, returned as the ratio D_k / N_k, each computed from
    terms scaled by powers of two so that nothing squared overflows or underflows first."""
    dt = s.dtype
    n = s.shape[0]
    top = jnp.maximum(s[0], gamma) if plus_gamma else s[0]
    e1 = _ilogb(top) + 1
    e1 = jnp.where(e1 < _NO_EXPONENT // 2, 0, e1)
    t = _times_pow2(s, -e1) + (_times_pow2(gamma, -e1) if plus_gamma else 0)
    num = jnp.sqrt(jnp.cumsum(t * t))
    e2 = jnp.maximum(_ilogb(r) // 2, _ilogb(gamma)) + 1
    e2 = jnp.where(e2 < _NO_EXPONENT // 2, 0, e2)
    k = jnp.arange(1, n + 1, dtype=dt)
    gh = _times_pow2(gamma, -e2)
    den = jnp.sqrt(2 * _times_pow2(r, -2 * e2) + k * gh * gh)
    return _Ratio(den / num, e1, e2)


def _ball_parts(g, r, gamma):
    """The projection w, ρ = 1/(1 + λ) (λ the multiplier of the constraint), and validity.

    The root λ ≥ 0 of h(λ) = Σ_{aᵢ > γλ} ((aᵢ + γ)² − γ²(1 + λ)²) − 2r(1 + λ)², a = |g|
    (Zhang et al. 2010, §5.5.2, with its typos fixed: the paper's h carries −2γr and its H −rλγ; the
    envelope theorem gives H′(λ) = γ‖w(λ)‖₁ + ½‖w(λ)‖² − r, whence −2r). On the piece where
    the k largest aᵢ are active, (1 + λ)² = Σ_k (aᵢ + γ)² / (2r + kγ²), so ρ is one of
    `_scaled_norms`' ratios; the piece is the one where the k-th entry is active,
    (a_k + γ)ρ ≥ γ, and the next is not, (a_{k+1} + γ)ρ ≤ γ (to 8 ulps). Then
    wᵢ = sign(gᵢ) max(aᵢρ − γ(1 − ρ), 0), which is (aᵢ − λγ)₊/(1 + λ) without forming
    1 + λ (it overflows where ‖g‖ ≫ sqrt(r)); aᵢρ from ρ's mantissa and exponent apart
    (`_Ratio`: ρ itself may underflow). ρ = 1 where g is in the ball: γ‖a‖₁ + ½‖a‖² ≤ r,
    summed as Σ âᵢ(γ + aᵢ/2) ≤ r/c for â = a/c, c a power of two above max a."""
    dt = g.dtype
    a = jnp.abs(g)
    s = jnp.sort(a)[::-1]
    ratio = _scaled_norms(s, gamma, r, plus_gamma=True)
    rho = ratio.value()
    nxt = jnp.concatenate([s[1:], jnp.zeros((1,), dt)])
    ulps = 8 * jnp.finfo(dt).eps
    ok = ((ratio.times(s) >= gamma * (1 - rho))
          & (ratio.times(nxt) * (1 - ulps) <= gamma * (1 - rho)))
    ratio = ratio._replace(hat=ratio.hat[jnp.argmax(ok)])
    e = _ilogb(s[0]) + 1
    e = jnp.where(e < _NO_EXPONENT // 2, 0, e)
    inside = jnp.sum(_times_pow2(a, -e) * (gamma + a / 2)) <= _times_pow2(r, -e)
    keep = inside | (ratio.value() >= 1)  # λ = 0
    rho = jnp.where(keep, 1.0, ratio.value())
    t = jnp.maximum(jnp.where(keep, a, ratio.times(a)) - gamma * (1 - rho), 0.0)
    valid = _ball_valid(g, r, gamma)
    return jnp.sign(g) * t * _nan_unless(valid, dt), rho, inside, valid


def project_elastic_net_ball(g: jax.Array, r, gamma) -> jax.Array:
    """argmin_w ½‖w − g‖² s.t. γ‖w‖₁ + ½‖w‖² ≤ r (Zhang et al. 2010, §5.5.2, eqs. 67–69), exact.

    For the multiplier λ of the constraint, wᵢ = sign(gᵢ) max(|gᵢ| − λγ, 0)/(1 + λ) (69);
    λ = 0 where g is in the ball, else the root of a decreasing piecewise function whose
    pieces are located by sorting |g| (no bisection; `_ball_parts`). Computed through
    ρ = 1/(1 + λ) ∈ (0, 1] and with every sum of squares scaled by a power of two, so g of
    any size (float32 near 3e38, or tiny) with any r and γ gives no overflow. For a batch,
    `jax.vmap` it over the rows.

    Differentiable in g, r and γ (a custom JVP): the identity inside the ball; outside,
    on the active entries S (wᵢ ≠ 0), dwᵢ = sign(gᵢ)(ρ daᵢ − (1 − ρ) dγ − (γ + |wᵢ|) dμ),
    daᵢ = sign(gᵢ) dgᵢ, with dμ = ρ dλ from the constraint, 0 off S.

    Args:
        g: (n,), n ≥ 1, the point; finite.
        r: the radius, finite, r > 0.
        gamma: γ, finite, ≥ 0 (γ = 0: the Euclidean ball of radius sqrt(2r)).

    Raises:
        TypeError: complex or non-numeric arguments.
        ValueError: g not a nonempty vector, r or gamma not scalars; and, for concrete
            values, g not finite, r ≤ 0 or not finite, gamma < 0 or not finite. Under jit or
            vmap those give NaN.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import project_elastic_net_ball
        >>> project_elastic_net_ball(jnp.array([3.0, -1.0, 0.1]), 1.5, 1.0).tolist()
        [1.0, -0.0, 0.0]
    """
    _check_ball("project_elastic_net_ball", "g", g, r, gamma)
    return _ball_jit(*_arrays(g, r, gamma))


@jax.jit
def _ball_jit(g, r, gamma):
    return _ball(*_in_float(g, r, gamma))


@jax.custom_jvp
def _ball(g, r, gamma):
    return _ball_parts(g, r, gamma)[0]


@_ball.defjvp
def _ball_jvp(primals, tangents):
    """Outside the ball, with tᵢ = |wᵢ| on S: Σ_S ½tᵢ² + γtᵢ = r, tᵢ = (aᵢ + γ)ρ − γ. So
    dtᵢ = ρ daᵢ − (1 − ρ) dγ − (γ + tᵢ) dμ with dμ = ρ dλ, and Σ_S (γ + tᵢ) dtᵢ + tᵢ dγ = dr
    gives dμ. The sums are scaled by a power of two c above max(γ + tᵢ)."""
    g, r, gamma = primals
    dg, dr, dgamma = tangents
    w, rho, inside, valid = _ball_parts(g, r, gamma)
    dt = w.dtype
    t = jnp.abs(w)
    active = t > 0
    sgn = jnp.sign(g)
    da = sgn * dg
    e = _ilogb(jnp.max(t) + gamma) + 1
    e = jnp.where(e < _NO_EXPONENT // 2, 0, e)
    q = jnp.where(active, _times_pow2(gamma + t, -e), 0)  # (γ + t)/c
    dtq = jnp.where(active, rho * da - (1 - rho) * dgamma, 0)
    num = (jnp.sum(q * dtq) + jnp.sum(jnp.where(active, _times_pow2(t, -e), 0)) * dgamma
           - _times_pow2(dr, -e))
    den = jnp.sum(q * (gamma + t))  # Σ (γ + t)²/c
    dmu = jnp.where(den > 0, num / jnp.where(den > 0, den, 1), 0)
    dw_out = jnp.where(active, sgn * (dtq - (gamma + t) * dmu), 0)
    dw = jnp.where(inside, dg, dw_out)
    return w, dw * _nan_unless(valid, dt)


def elastic_net_ball_support(v: jax.Array, r, gamma) -> jax.Array:
    """sup_w ⟨v, w⟩ over {γ‖w‖₁ + ½‖w‖² ≤ r}: the conjugate of the ball's indicator.

    By duality it is min_{t ≥ 0} t r + Σᵢ (|vᵢ| − tγ)₊²/(2t), whose minimizer solves the same
    piecewise equation as the projection's multiplier (with 1 + λ replaced by t): t =
    sqrt(Σ_k vᵢ² / (2r + kγ²)) on the piece of the k largest |vᵢ|. The sup is attained at
    wᵢ = sign(vᵢ)(|vᵢ| − tγ)₊/t, where it is evaluated. Through 1/t and scaled sums, as
    `project_elastic_net_ball`: no overflow short of a value that itself overflows (then
    inf).

    Differentiable (a custom JVP, Danskin's theorem): dσ = ⟨w, dv⟩ + t dr − Σ(|vᵢ| − tγ)₊ dγ.

    Args:
        v: (n,), n ≥ 1, finite.
        r, gamma: as in `project_elastic_net_ball`.

    Raises:
        TypeError, ValueError: as `project_elastic_net_ball`, naming v.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.projections import elastic_net_ball_support
        >>> round(float(elastic_net_ball_support(jnp.array([3.0, -4.0]), 12.5, 0.0)), 12)
        25.0
    """
    _check_ball("elastic_net_ball_support", "v", v, r, gamma)
    return _support_jit(*_arrays(v, r, gamma))


@jax.jit
def _support_jit(v, r, gamma):
    return _support(*_in_float(v, r, gamma))


def _support_parts(v, r, gamma):
    """(σ, the maximizer w, t, validity)."""
    dt = v.dtype
    a = jnp.abs(v)
    s = jnp.sort(a)[::-1]
    inv_t = _scaled_norms(s, gamma, r, plus_gamma=False)  # 1/t_k (inf where s_≤k = 0)
    nxt = jnp.concatenate([s[1:], jnp.zeros((1,), dt)])
    ulps = 8 * jnp.finfo(dt).eps
    ok = (gamma <= inv_t.times(s)) & (inv_t.times(nxt) * (1 - ulps) <= gamma)
    inv_t = inv_t._replace(hat=inv_t.hat[jnp.argmax(ok)])
    zero = s[0] < jnp.finfo(dt).tiny  # v = 0 (or flushed): σ = 0, w = 0
    w = jnp.where(zero, 0.0, jnp.sign(v) * jnp.maximum(inv_t.times(a) - gamma, 0.0))
    e = inv_t.e_n
    sigma = _times_pow2(jnp.sum(_times_pow2(a, -e) * jnp.abs(w)), e)
    # t = 1/(1/t), from the mantissa (the exponent apart: t may be out of range).
    t = jnp.where(zero, 0.0, _times_pow2(1 / inv_t.hat, inv_t.e_n - inv_t.e_d))
    valid = _ball_valid(v, r, gamma)
    nan = _nan_unless(valid, dt)
    return jnp.where(zero, 0.0, sigma) * nan, w, t, valid


@jax.custom_jvp
def _support(v, r, gamma):
    return _support_parts(v, r, gamma)[0]


@_support.defjvp
def _support_jvp(primals, tangents):
    v, r, gamma = primals
    dv, dr, dgamma = tangents
    sigma, w, t, valid = _support_parts(v, r, gamma)
    slack = jnp.sum(jnp.maximum(jnp.abs(v) - t * gamma, 0.0))
    d = jnp.sum(w * dv) + t * dr - jnp.where(t > 0, slack, 0.0) * dgamma
    return sigma, d * _nan_unless(valid, sigma.dtype)


"""Regularizers λΩ: J(w) = λ Ω(w) + R(X w).

A regularizer is a pytree (a frozen dataclass registered with JAX) whose strength is a
leaf, traced inside compiled code, so `nsjax.sweep` can vmap over it. It implements the
`Regularizer` interface; `Problem` accepts any object that does (and names what is missing
otherwise). `L2`, `L1`, `ElasticNet`, `Entropy` (the relative entropy on the capped
simplex, in its own Bregman geometry) and `ElasticNetBall` (a constraint: the elastic net in
its constrained form) exist.

Every regularizer splits as λΩ(w) = (smooth part)(w) + μ‖w‖₁ (`smooth_value`,
`smooth_grad`, `smooth_hvp`, `l1_weight`): the orthant-wise L1 methods (OWL-QN, OBA) model
the smooth part and treat μ‖w‖₁ exactly.

References: see docs/references.md.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.losses.base import active_tol, snap_to_max


class RegularizerLine(NamedTuple):
    """λΩ along w + η p: λΩ(w) + c η + h η²/2 + Σ_j max_k (b_jk + η a_jk) − Σ_j max_k b_jk.

    The smooth part is (c, h); ``b`` and ``a`` (shape (m, r), or None) are kinked terms in
    the same form as a loss's lines (an L1 term |w_j + η p_j| is two lines), so that the
    exact line search treats them exactly like the loss's (Yu et al. 2010, eq. 33). All in the
    problem's dtype; kinks within `nsjax.losses.base.active_tol` of each other should be
    snapped together as the losses do (`snap_to_max`).
    """

    c: jax.Array
    h: jax.Array
    b: jax.Array | None = None
    a: jax.Array | None = None


class Regularizer(abc.ABC):
    """The interface every regularizer implements (all methods pure and jit-able).

    ``strength_name`` names the field that holds the strength (λ for `L2`); `strength` and
    `with_strength` read and replace it, which is how `nsjax.sweep` varies it.
    """

    strength_name: ClassVar[str]
    #: True where Ω = ½‖·‖²: bundle methods minimize their model through this dual.
    quadratic: ClassVar[bool] = False
    #: True where `line` is exact (a quadratic plus lines), so the exact line search applies.
    has_lines: ClassVar[bool] = False
    #: True where λΩ has a μ‖w‖₁ part (`l1_weight`): the orthant-wise methods' domain.
    has_l1: ClassVar[bool] = False
    #: Which dual points `Problem.dual_value` tries for a u: "as is", "scaled" (s u with
    #: s = `feasible_scale`, where the conjugate is finite only on a box: L1) or "both".
    dual_points: ClassVar[str] = "as is"
    #: The prox-function d of the geometry the regularizer's prox is taken in: "euclidean"
    #: (d = ½‖·‖², `prox`) or "entropy" (d = Σ wᵢ log wᵢ on a simplex, `bregman_prox`; the
    #: domain is then not all of ℝᵈ, and only the solvers that name the geometry in their
    #: ``takes.geometries`` take the regularizer).
    geometry: ClassVar[str] = "euclidean"
    #: True where λΩ is the indicator of a set (a constrained problem, `ElasticNetBall`):
    #: only the solvers with ``takes.constraints`` take it (their iterates stay in the set
    #: through `prox`, the projection); ``value`` is +inf outside the set.
    constraint: ClassVar[bool] = False

    @property
    def strength(self):
        """The strength (a traced scalar inside compiled code)."""
        return getattr(self, self.strength_name)

    def with_strength(self, value) -> Regularizer:
        """The same regularizer with another strength."""
        return dataclasses.replace(self, **{self.strength_name: value})

    @abc.abstractmethod
    def value(self, w):
        """λΩ(w)."""

    def value_change(self, w, x):
        """λΩ(x) − λΩ(w), computed so that a change far below λΩ's rounding is still
        resolved (the L1 methods' sufficient-decrease tests near the optimum). Default:
        the plain difference."""
        return self.value(x) - self.value(w)

    @abc.abstractmethod
    def subgradient(self, w):
        """An element of ∂(λΩ)(w) (the gradient where Ω is smooth)."""

    @abc.abstractmethod
    def argsup(self, w, p):
        """(g, ⟨g, p⟩) for the g ∈ ∂(λΩ)(w) maximizing ⟨g, p⟩: the regularizer's part of
        the oracle argsup_{g∈∂J} gᵀp (Yu et al. 2010, eqs. 22–23)."""

    @abc.abstractmethod
    def line(self, w, p) -> RegularizerLine:
        """The restriction to the ray w + η p, η ≥ 0, as a `RegularizerLine`."""

    @abc.abstractmethod
    def prox(self, v, step):
        """argmin_x step · λΩ(x) + ½‖x − v‖²."""

    @abc.abstractmethod
    def conjugate(self, v):
        """(λΩ)*(v) = sup_w ⟨v, w⟩ − λΩ(w) (+inf outside its domain)."""

    def scaled_dual(self, rstar, v, s_max):
        """max over 0 ≤ s ≤ s_max of −s·rstar − (λΩ)*(−s v), where the regularizer knows a
        closed form, else −inf. Used to improve a dual point u by the best scalar multiple
        where R*(s u) = s R*(u) (the hinge; see `Problem.dual_value`)."""
        return jnp.full_like(rstar, -jnp.inf)

    def feasible_scale(self, v):
        """An s in (0, 1] that makes (λΩ)*(−s v) finite and small: `Problem.dual_value` also
        tries the dual point s u, so that any u (the gradient of a smooth loss, say) gives a
        finite lower bound (L1: the largest s with ‖s v‖∞ ≤ μ; L2: 1)."""
        return jnp.ones((), v.dtype)

    def l1_weight(self):
        """μ of the μ‖w‖₁ part of λΩ (0 where there is none)."""
        return jnp.zeros_like(jnp.asarray(self.strength))

    def l2_weight(self):
        """λ of the λ/2‖w‖² part of the regularizer: the strength where Ω = ½‖·‖²
        (`quadratic`), else 0 (a regularizer with another L2 part says so)."""
        if self.quadratic:
            return self.strength
        return jnp.zeros_like(jnp.asarray(self.strength))

    @abc.abstractmethod
    def smooth_value(self, w):
        """λΩ(w) − μ‖w‖₁: the smooth part."""

    @abc.abstractmethod
    def smooth_grad(self, w):
        """The gradient of the smooth part at w."""

    @abc.abstractmethod
    def smooth_hvp(self, v):
        """The smooth part's Hessian times v (a constant Hessian for every regularizer here)."""

    @abc.abstractmethod
    def mirror_map(self, w):
        """∇d(w) for the prox-function d of the Bregman geometry this regularizer defines
        (identity for the Euclidean one)."""

    @abc.abstractmethod
    def inverse_mirror_map(self, z):
        """∇d*(z), the inverse of `mirror_map`."""

    def start(self, shape, dtype, xp=jnp):
        """The default first point of a solve (`nsjax.solve` with ``w0=None``): zero, or
        a point of the domain where zero is outside it (`Entropy`: the uniform weights).
        ``xp``: the array module to build it with (numpy where nothing is traced: no
        program compiled per shape)."""
        return xp.zeros(shape, dtype)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class L2(Regularizer):
    """λ/2 ‖w‖² (Yu et al. 2010, eq. 18).

    Args:
        lam: the regularization strength λ ≥ 0. λ = 0 is allowed where the risk alone is
            bounded below; there is then no certified gap (except at an exact optimum).

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.regularizers import L2
        >>> reg = L2(0.5)
        >>> float(reg.value(jnp.array([2.0, 0.0]))), float(reg.conjugate(jnp.array([1.0])))
        (1.0, 1.0)
    """

    lam: jax.Array | float

    strength_name: ClassVar[str] = "lam"
    quadratic: ClassVar[bool] = True
    has_lines: ClassVar[bool] = True

    def value(self, w):
        return 0.5 * self.lam * jnp.vdot(w, w)

    def value_change(self, w, x):
        return 0.5 * self.lam * jnp.vdot(x - w, x + w)

    def subgradient(self, w):
        return self.lam * w

    def grad(self, w):
        """λw (Ω is smooth: the subgradient is the gradient)."""
        return self.subgradient(w)

    def argsup(self, w, p):
        return self.lam * w, self.lam * jnp.vdot(w, p)

    def line(self, w, p) -> RegularizerLine:
        return RegularizerLine(self.lam * jnp.vdot(w, p), self.lam * jnp.vdot(p, p))

    def prox(self, v, step):
        return v / (1.0 + step * self.lam)

    def conjugate(self, v):
        """‖v‖² / (2λ); for λ = 0, +inf unless v = 0."""
        sq = jnp.vdot(v, v)
        safe = jnp.where(self.lam > 0, self.lam, 1.0)
        return jnp.where(self.lam > 0, sq / (2 * safe), jnp.where(sq > 0, jnp.inf, 0.0))

    def smooth_value(self, w):
        return self.value(w)

    def smooth_grad(self, w):
        return self.lam * w

    def smooth_hvp(self, v):
        return self.lam * v

    def scaled_dual(self, rstar, v, s_max):
        """−s r − s²‖v‖²/(2λ) is a concave quadratic in s: its maximizer, clipped."""
        lam, sq = self.lam, jnp.vdot(v, v)
        tiny = jnp.finfo(sq.dtype).tiny
        s = jnp.clip(-rstar * lam / jnp.maximum(sq, tiny), 0.0, s_max)
        scaled = -s * rstar - s * s * sq / (2 * jnp.maximum(lam, tiny))
        return jnp.where((lam > 0) & jnp.isfinite(rstar), scaled, -jnp.inf)

    def mirror_map(self, w):
        return w

    def inverse_mirror_map(self, z):
        return z


def soft_threshold(v, t):
    """sign(v) · max(|v| − t, 0), the prox of t‖·‖₁ (with its sign: Keskar et al. (2016) write the
    ISTA step without it)."""
    return jnp.sign(v) * jnp.maximum(jnp.abs(v) - t, 0.0)


def min_norm_subgradient(w, grad, mu):
    """The minimum-norm element of grad + ∂(μ‖·‖₁)(w) (Keskar et al. 2016, eq. 4; OWL-QN's
    pseudo-gradient): grad + μ sign(w) off zero; at w_i = 0 the point of
    [grad_i − μ, grad_i + μ] nearest 0."""
    at_zero = jnp.sign(grad) * jnp.maximum(jnp.abs(grad) - mu, 0.0)
    return jnp.where(w != 0, grad + mu * jnp.sign(w), at_zero)


def orthant(w, g):
    """The orthant ξ of the orthant-wise L1 methods: sign(w_i) off zero, sign(−g_i) on the
    zero coordinates, g a (pseudo-)gradient (OWL-QN; Keskar et al. 2016, eq. 12)."""
    return jnp.where(w != 0, jnp.sign(w), jnp.sign(-g))


def project_orthant(x, xi):
    """P_ξ(x): x with the coordinates whose sign differs from ξ set to 0 (Keskar et al. 2016,
    eq. 13)."""
    return jnp.where(jnp.sign(x) == xi, x, 0.0)


def _at_kink(w):
    """Coordinates that count as 0 (a kink of |w_j|): within `active_tol` of it, as the
    losses' kinks (an exact line search puts w_j on 0 only up to rounding)."""
    return jnp.abs(w) <= active_tol(w)


def _l1_argsup(mu, w, p):
    """(g, ⟨g, p⟩) for the g ∈ ∂(μ‖·‖₁)(w) maximizing ⟨g, p⟩: μ sign(w_j) off the kinks,
    μ sign(p_j) on them (Yu et al. 2010, Sec. 7.3)."""
    g = mu * jnp.where(_at_kink(w), jnp.sign(p), jnp.sign(w))
    return g, jnp.vdot(g, p)


def _l1_lines(mu, w, p):
    """μ|w_j + η p_j| = max(μ(w_j + η p_j), −μ(w_j + η p_j)): two lines per coordinate."""
    wf, pf = w.reshape(-1), p.reshape(-1)
    b = snap_to_max(mu * jnp.stack([wf, -wf], axis=1))
    return b, mu * jnp.stack([pf, -pf], axis=1)


def _l1_feasible_scale(mu, v):
    """min(1, μ/‖v‖∞), shrunk by 2 eps so that s‖v‖∞ ≤ μ holds after rounding."""
    top = jnp.max(jnp.abs(v))
    eps = jnp.finfo(v.dtype).eps
    s = mu / jnp.where(top > 0, top, 1.0) * (1 - 2 * eps)
    return jnp.where(top > 0, jnp.minimum(1.0, s), 1.0).astype(v.dtype)


def _l1_conjugate(mu, v):
    """(μ‖·‖₁)* = the indicator of ‖v‖∞ ≤ μ."""
    return jnp.where(jnp.max(jnp.abs(v)) <= mu, 0.0, jnp.inf).astype(v.dtype)


class _NoSmoothPart:
    """A regularizer without a smooth part (L1's μ‖w‖₁; a constraint, whose value on its set
    is 0) in the Euclidean geometry: zero smooth value, gradient and Hessian, identity
    mirror maps."""

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


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class L1(_NoSmoothPart, Regularizer):
    """μ ‖w‖₁ (Yu et al. 2010, eq. 55; Keskar et al. 2016, eq. 1).

    Args:
        mu: the strength μ ≥ 0 (`sweep` varies it: a μ-path).

    Nonsmooth where some w_j = 0; its restriction to a line is two lines per coordinate,
    so the exact line search applies with piecewise-linear losses (the hinge). Its
    conjugate is the indicator of ‖v‖∞ ≤ μ: dual points are scaled into that box
    (`feasible_scale`) to give certified gaps for any loss with a conjugate.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.regularizers import L1
        >>> reg = L1(0.5)
        >>> float(reg.value(jnp.array([2.0, -1.0])))
        1.5
        >>> [float(x) for x in reg.prox(jnp.array([2.0, -0.3]), 1.0)]  # soft-threshold
        [1.5, -0.0]
    """

    mu: jax.Array | float

    strength_name: ClassVar[str] = "mu"
    has_lines: ClassVar[bool] = True
    has_l1: ClassVar[bool] = True
    dual_points: ClassVar[str] = "scaled"

    def value(self, w):
        return self.mu * jnp.sum(jnp.abs(w))

    def value_change(self, w, x):
        return self.mu * jnp.sum(jnp.abs(x) - jnp.abs(w))

    def subgradient(self, w):
        """μ sign(w): the minimum-norm element of ∂(μ‖·‖₁)(w)."""
        return self.mu * jnp.sign(w)

    def argsup(self, w, p):
        return _l1_argsup(self.mu, w, p)

    def line(self, w, p) -> RegularizerLine:
        b, a = _l1_lines(self.mu, w, p)
        zero = jnp.zeros((), w.dtype)
        return RegularizerLine(zero, zero, b, a)

    def prox(self, v, step):
        return soft_threshold(v, step * self.mu)

    def conjugate(self, v):
        return _l1_conjugate(self.mu, v)

    def feasible_scale(self, v):
        return _l1_feasible_scale(self.mu, v)

    def scaled_dual(self, rstar, v, s_max):
        """−s r over 0 ≤ s ≤ min(s_max, μ/‖v‖∞): linear in s, so an end point."""
        top = jnp.max(jnp.abs(v))
        eps = jnp.finfo(v.dtype).eps
        s_hi = jnp.minimum(s_max, self.mu / jnp.where(top > 0, top, 1.0) * (1 - 2 * eps))
        s = jnp.where(top > 0, s_hi, s_max)
        return jnp.where(jnp.isfinite(rstar), jnp.maximum(0.0, -s * rstar), -jnp.inf)

    def l1_weight(self):
        return self.mu



@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ElasticNet(Regularizer):
    """μ ‖w‖₁ + λ/2 ‖w‖² (Zhang et al. 2010, Example 6, eq. 52, in its regularized form).

    Args:
        mu: the L1 strength μ ≥ 0: the strength `sweep` varies.
        lam: the L2 strength λ ≥ 0 (fixed along a sweep; checked and cast by `Problem`
            like the strength).

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.regularizers import ElasticNet
        >>> reg = ElasticNet(mu=1.0, lam=2.0)
        >>> float(reg.value(jnp.array([1.0, -1.0]))), float(reg.conjugate(jnp.array([3.0])))
        (4.0, 1.0)
    """

    mu: jax.Array | float
    lam: jax.Array | float = 0.0

    strength_name: ClassVar[str] = "mu"
    has_lines: ClassVar[bool] = True
    has_l1: ClassVar[bool] = True
    dual_points: ClassVar[str] = "both"

    def value(self, w):
        return self.mu * jnp.sum(jnp.abs(w)) + 0.5 * self.lam * jnp.vdot(w, w)

    def value_change(self, w, x):
        return (self.mu * jnp.sum(jnp.abs(x) - jnp.abs(w))
                + 0.5 * self.lam * jnp.vdot(x - w, x + w))

    def subgradient(self, w):
        return self.mu * jnp.sign(w) + self.lam * w

    def argsup(self, w, p):
        g, gp = _l1_argsup(self.mu, w, p)
        return g + self.lam * w, gp + self.lam * jnp.vdot(w, p)

    def line(self, w, p) -> RegularizerLine:
        b, a = _l1_lines(self.mu, w, p)
        return RegularizerLine(self.lam * jnp.vdot(w, p), self.lam * jnp.vdot(p, p), b, a)

    def prox(self, v, step):
        return soft_threshold(v, step * self.mu) / (1.0 + step * self.lam)

    def conjugate(self, v):
        """Σ_j (|v_j| − μ)₊² / (2λ); for λ = 0, L1's (the indicator of ‖v‖∞ ≤ μ)."""
        excess = jnp.maximum(jnp.abs(v) - self.mu, 0.0)
        safe = jnp.where(self.lam > 0, self.lam, 1.0)
        return jnp.where(self.lam > 0, jnp.vdot(excess, excess) / (2 * safe),
                         _l1_conjugate(self.mu, v))

    def feasible_scale(self, v):
        """L1's (where the conjugate's quadratic excess vanishes; `Problem.dual_value`
        also tries s = 1)."""
        return _l1_feasible_scale(self.mu, v)

    def l1_weight(self):
        return self.mu

    def l2_weight(self):
        return self.lam

    def smooth_value(self, w):
        return 0.5 * self.lam * jnp.vdot(w, w)

    def smooth_grad(self, w):
        return self.lam * w

    def smooth_hvp(self, v):
        return self.lam * v

    def mirror_map(self, w):
        return w

    def inverse_mirror_map(self, z):
        return z


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Entropy(Regularizer):
    """λ Δ(w, w⁰) = λ Σᵢ wᵢ log(wᵢ/w⁰ᵢ) on the capped simplex {w ∈ [0, ν]ᵈ, Σw = 1}, w⁰ the
    uniform weights 1/d: the relative-entropy regularizer of entropy-regularized LPBoost
    (Zhang et al. 2010, Example 5, eq. 51; ν = 1 is the plain simplex).

    It lives in the entropy geometry: its prox is the Bregman one (`bregman_prox`, a capped
    soft-max), it is λ-strongly convex with respect to d(w) = Σ wᵢ log wᵢ (and so λ-strongly
    convex in ‖·‖₁ on the simplex, Pinsker), and its domain is the capped simplex. Only the
    solvers whose ``geometries`` include "entropy" take it (`AGMEF` and `AGMEF1` with
    ``scheme="primal"``); `nsjax.solve` refuses the others before compiling. The default
    start is w⁰. No exact line search (``has_lines`` is False) and no Euclidean prox.

    Args:
        lam: the strength λ > 0.
        cap: ν, the cap on every weight, with d·ν ≥ 1 (checked by the solvers that take the
            regularizer, as d comes with the data); ν ≥ 1 is no cap.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.regularizers import Entropy
        >>> reg = Entropy(lam=0.5)
        >>> float(reg.value(jnp.array([0.25, 0.25, 0.25, 0.25])))  # 0 at w⁰
        0.0
        >>> round(float(reg.conjugate(jnp.zeros(4))), 12)  # sup over the simplex of −λΔ
        0.0
    """

    lam: jax.Array | float
    cap: jax.Array | float = 1.0

    strength_name: ClassVar[str] = "lam"
    geometry: ClassVar[str] = "entropy"

    def _log_centre(self, w):
        return -jnp.log(jnp.asarray(w.shape[0], w.dtype))

    def in_domain(self, w):
        """w ∈ [0, ν]ᵈ and Σw = 1, to a few ulps (d ulps on the sum)."""
        eps = jnp.finfo(w.dtype).eps
        return ((jnp.min(w) >= 0) & (jnp.max(w) <= self.cap * (1 + 4 * eps))
                & (jnp.abs(jnp.sum(w) - 1) <= 4 * w.shape[0] * eps))

    def value(self, w):
        """λ Σ wᵢ log(d wᵢ) (0 log 0 = 0), +inf off the capped simplex."""
        return jnp.where(self.in_domain(w), self.smooth_value(w), jnp.inf)

    def subgradient(self, w):
        """λ(log(d w) + 1), the gradient inside the domain (−inf where wᵢ = 0)."""
        return self.lam * (jnp.log(w) - self._log_centre(w) + 1.0)

    def argsup(self, w, p):
        raise NotImplementedError(
            "Entropy has no oracle for the subgradient methods (its domain is the capped "
            "simplex): solve with AGMEF(scheme='primal') or AGMEF1(scheme='primal').")

    def line(self, w, p) -> RegularizerLine:
        raise NotImplementedError(
            "Entropy is not piecewise quadratic: no exact line search; solve with "
            "AGMEF(scheme='primal').")

    def prox(self, v, step):
        raise NotImplementedError(
            "Entropy's prox is in the entropy geometry (bregman_prox), not the Euclidean one.")

    def bregman_prox(self, centre, weight, linear):
        """argmin_x weight·Δ(x, centre) + ⟨linear, x⟩ + λΔ(x, w⁰) over the capped simplex:
        the model minimizers of AGM-EF in the entropy geometry (Zhang et al. 2010, Alg. 1 step 9,
        Assumption 2). On the simplex Σx is fixed, so the objective is (weight + λ)·Σ x log x
        − ⟨t, x⟩ (weight + λ) up to a constant, t = (weight·log centre − linear)/(weight + λ):
        the capped soft-max of t (`nsjax.projections.entropic_capped_simplex`). weight may
        underflow to 0 (AGM-EF's 1/A_k after a long linear run) and centre may hold zeros:
        their product is then taken as 0 / −inf as the limit says."""
        from nsjax.projections import entropic_capped_simplex

        log_c = jnp.where(centre > 0, weight * jnp.log(jnp.where(centre > 0, centre, 1.0)),
                          jnp.where(weight > 0, -jnp.inf, 0.0))
        total = weight + self.lam
        total = jnp.where(total > 0, total, 1.0)
        return entropic_capped_simplex((log_c - linear) / total, self.cap)

    def conjugate(self, v):
        """sup_w ⟨v, w⟩ − λΔ(w, w⁰) over the capped simplex: the sup is attained at the
        capped soft-max w of v/λ, where it is evaluated (without the cap: λ log Σ w⁰ᵢ
        exp(vᵢ/λ)). (Example 5 of Zhang et al. (2010) writes it as −min_{β ≥ 0}{…}: the sign
        is a typo, the conjugate is +min over the caps' multipliers β of λ log Σ w⁰ᵢ
        exp((vᵢ − βᵢ)/λ) + ν Σβᵢ.)"""
        from nsjax.projections import entropic_capped_simplex

        safe = jnp.where(self.lam > 0, self.lam, 1.0)
        w = entropic_capped_simplex(v / safe, self.cap)
        return jnp.vdot(v, w) - self.smooth_value(w)

    def smooth_value(self, w):
        """λΔ(w, w⁰) without the domain's indicator (for points known to be in it, up to
        rounding: AGM-EF's iterates)."""
        return self.lam * self.divergence(w, jnp.full_like(w, 1.0 / w.shape[0]))

    @staticmethod
    def divergence(x, c):
        """The Bregman divergence of d = Σ xᵢ log xᵢ, Σᵢ xᵢ log(xᵢ/cᵢ) − xᵢ + cᵢ (the
        relative entropy on the simplex), summed as Σ cᵢ h(tᵢ), tᵢ = xᵢ/cᵢ − 1, h(t) =
        (1 + t) log(1 + t) − t ≥ 0: each term's rounding is then relative to its size (the
        plain Σ x log x − x log c loses everything below ε·|x log x| near c, which AGM-EF
        multiplies by 1/A_k). cᵢ > 0; xᵢ = 0 gives cᵢ."""
        safe = jnp.where(c > 0, c, 1.0)
        t = x / safe - 1.0
        series = t * t * (0.5 - t * (1.0 / 6.0 - t / 12.0))  # h(t) to O(t⁵) for small t
        h = jnp.where(jnp.abs(t) < 1e-3, series,
                      jax.scipy.special.xlogy(1.0 + t, 1.0 + t) - t)
        return jnp.sum(jnp.where(c > 0, safe * h, jnp.where(x > 0, jnp.inf, 0.0)))

    def smooth_grad(self, w):
        return self.subgradient(w)

    def smooth_hvp(self, v):
        """λ·v: the strong convexity λ with respect to d (the Hessian itself, λ/w, is not
        constant; AGM-EF reads λ₂ from here)."""
        return self.lam * v

    def mirror_map(self, w):
        """∇d(w) = log w + 1."""
        return jnp.log(w) + 1.0

    def inverse_mirror_map(self, z):
        return jnp.exp(z - 1.0)

    def start(self, shape, dtype, xp=jnp):
        """w⁰, the uniform weights (zero is outside the simplex)."""
        return xp.full(shape, 1.0 / shape[0], dtype)


def _with_zero_bias(g, w):
    """g (a gradient over the penalized rows) with a zero row for the bias appended."""
    return jnp.concatenate([g, jnp.zeros_like(w[-1:])])


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ElasticNetBall(_NoSmoothPart, Regularizer):
    """The indicator of the elastic-net ball {w : γ‖w‖₁ + ½‖w‖² ≤ r}: the constrained form
    of the elastic net (Zhang et al. 2010, Example 6; min R(Xw) over the ball, which for every λ of
    `ElasticNet` has an r with the same minimizer, and vice versa).

    A constraint, not a penalty (``constraint`` is True): its prox is the exact projection
    (`nsjax.projections.project_elastic_net_ball`, §5.5.2) and its conjugate the ball's
    support function (`nsjax.projections.elastic_net_ball_support`), which gives the
    certified gap D(u) = −R*(u) − σ(−Xᵀu). Only the solvers that keep their iterates in the
    set through the prox take it (``takes.constraints``: `AGMEF` and `AGMEF1` with
    ``scheme="primal"``, the default for it); `nsjax.solve` refuses the others. Not
    strongly convex: AGM-EF's rate is O(1/k²) here.

    Args:
        r: the radius r > 0: the strength `sweep` varies.
        gamma: γ ≥ 0, the weight of the L1 part (γ = 0: the Euclidean ball of radius √(2r)).

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.regularizers import ElasticNetBall
        >>> ball = ElasticNetBall(r=1.5, gamma=1.0)
        >>> ball.prox(jnp.array([3.0, -1.0, 0.1]), 1.0).tolist()  # the projection
        [1.0, -0.0, 0.0]
        >>> float(ball.value(jnp.array([1.0, 0.0]))), float(ball.value(jnp.array([2.0, 0.0])))
        (0.0, inf)
    """

    r: jax.Array | float
    gamma: jax.Array | float = 0.0

    strength_name: ClassVar[str] = "r"
    constraint: ClassVar[bool] = True

    def level(self, w):
        """γ‖w‖₁ + ½‖w‖²: w is in the ball where this is ≤ r."""
        return self.gamma * jnp.sum(jnp.abs(w)) + 0.5 * jnp.vdot(w, w)

    def value(self, w):
        """0 in the ball, +inf outside. A projected point is in it only to rounding: up to
        r(1 + 1024 eps) counts as in it."""
        tol = 1024 * jnp.finfo(jnp.result_type(w)).eps
        return jnp.where(self.level(w) <= self.r * (1 + tol), 0.0, jnp.inf).astype(w.dtype)

    def subgradient(self, w):
        """0 (in the interior; the normal cone of the boundary is not represented: the
        solvers that take a constraint use only `prox` and `conjugate`)."""
        return jnp.zeros_like(w)

    def argsup(self, w, p):
        return jnp.zeros_like(w), jnp.zeros((), w.dtype)

    def line(self, w, p) -> RegularizerLine:
        raise NotImplementedError("ElasticNetBall is a constraint: no exact line search.")

    def prox(self, v, step):
        """The projection onto the ball (the prox of an indicator, whatever the step)."""
        from nsjax.projections import project_elastic_net_ball

        return project_elastic_net_ball(v, self.r, self.gamma)

    def conjugate(self, v):
        """σ(v) = sup over the ball of ⟨v, w⟩, the support function."""
        from nsjax.projections import elastic_net_ball_support

        return elastic_net_ball_support(v, self.r, self.gamma)



@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Unpenalized(Regularizer):
    """``inner`` on every row of w but the last, which is left free: the regularizer of a
    problem with an unregularized bias (`Problem(..., bias=True)`), w = (w₁..w_d, b).

    Its conjugate is inner's on the first d rows plus the indicator of v_b = 0: a dual point
    u gives a finite bound only where Σᵢ uᵢ = 0 (the bias hyperplane of Saha et al. (2009), eq. 22),
    which `Problem.dual_value` enforces by projecting u first.

    Not a bundle or orthant-wise regularizer: ``quadratic`` and ``has_l1`` are False (w is
    not −Xᵀu/λ in the bias row, and μ‖·‖₁ does not reach it).
    """

    inner: Regularizer

    quadratic: ClassVar[bool] = False
    has_l1: ClassVar[bool] = False

    @property
    def strength_name(self):
        return self.inner.strength_name

    @property
    def strength(self):
        return self.inner.strength

    def with_strength(self, value):
        return Unpenalized(self.inner.with_strength(value))

    @property
    def has_lines(self):
        return self.inner.has_lines

    @property
    def dual_points(self):
        return self.inner.dual_points

    @property
    def geometry(self):
        return self.inner.geometry

    def value(self, w):
        return self.inner.value(w[:-1])

    def value_change(self, w, x):
        return self.inner.value_change(w[:-1], x[:-1])

    def subgradient(self, w):
        return _with_zero_bias(self.inner.subgradient(w[:-1]), w)

    def argsup(self, w, p):
        g, slope = self.inner.argsup(w[:-1], p[:-1])
        return _with_zero_bias(g, w), slope

    def line(self, w, p) -> RegularizerLine:
        return self.inner.line(w[:-1], p[:-1])

    def prox(self, v, step):
        return jnp.concatenate([self.inner.prox(v[:-1], step), v[-1:]])

    def conjugate(self, v):
        """inner's conjugate of the first d rows, +inf unless the bias row is 0."""
        return jnp.where(jnp.all(v[-1] == 0), self.inner.conjugate(v[:-1]), jnp.inf)

    def scaled_dual(self, rstar, v, s_max):
        return jnp.where(jnp.all(v[-1] == 0), self.inner.scaled_dual(rstar, v[:-1], s_max),
                         -jnp.inf)

    def feasible_scale(self, v):
        return self.inner.feasible_scale(v[:-1])

    def l1_weight(self):
        return self.inner.l1_weight()

    def l2_weight(self):
        return self.inner.l2_weight()

    def smooth_value(self, w):
        return self.inner.smooth_value(w[:-1])

    def smooth_grad(self, w):
        return _with_zero_bias(self.inner.smooth_grad(w[:-1]), w)

    def smooth_hvp(self, v):
        return _with_zero_bias(self.inner.smooth_hvp(v[:-1]), v)

    def mirror_map(self, w):
        return jnp.concatenate([self.inner.mirror_map(w[:-1]), w[-1:]])

    def inverse_mirror_map(self, z):
        return jnp.concatenate([self.inner.inverse_mirror_map(z[:-1]), z[-1:]])


#: What `Problem` needs of a regularizer.
REQUIRED = ("value", "subgradient", "argsup", "line", "prox", "conjugate", "scaled_dual",
            "feasible_scale", "dual_points", "has_l1", "l1_weight", "smooth_value", "smooth_grad",
            "smooth_hvp", "mirror_map", "inverse_mirror_map", "strength", "with_strength",
            "quadratic", "has_lines", "geometry", "constraint", "l2_weight")

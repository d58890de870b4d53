"""Regularizers λΩ: J(w) = λ Ω(w) + R(X w).

A regularizer is a pytree (a frozen dataclass registered with JAX) whose strength is a
leaf, traced inside compiled code, so `nsjax.sweep` can vmap over it. It implements the
`Regularizer` interface; `Problem` accepts any object that does (and names what is missing
otherwise). Only `L2` exists so far; L1, ElasticNet and Entropy come with their solvers.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp


class RegularizerLine(NamedTuple):
    """λΩ along w + η p: λΩ(w) + c η + h η²/2 + Σ_j max_k (b_jk + η a_jk) − Σ_j max_k b_jk.

    The smooth part is (c, h); ``b`` and ``a`` (shape (m, r), or None) are kinked terms in
    the same form as a loss's lines (an L1 term |w_j + η p_j| is two lines), so that the
    exact line search treats them exactly like the loss's (paper 000, eq. 33). All in the
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

    @abc.abstractmethod
    def subgradient(self, w):
        """An element of ∂(λΩ)(w) (the gradient where Ω is smooth)."""

    @abc.abstractmethod
    def argsup(self, w, p):
        """(g, ⟨g, p⟩) for the g ∈ ∂(λΩ)(w) maximizing ⟨g, p⟩: the regularizer's part of
        the oracle argsup_{g∈∂J} gᵀp (paper 000, eqs. 22–23)."""

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

    @abc.abstractmethod
    def mirror_map(self, w):
        """∇d(w) for the prox-function d of the Bregman geometry this regularizer defines
        (identity for the Euclidean one)."""

    @abc.abstractmethod
    def inverse_mirror_map(self, z):
        """∇d*(z), the inverse of `mirror_map`."""


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class L2(Regularizer):
    """λ/2 ‖w‖² (paper 000, eq. 18).

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


#: What `Problem` needs of a regularizer.
REQUIRED = ("value", "subgradient", "argsup", "line", "prox", "conjugate", "scaled_dual",
            "mirror_map", "inverse_mirror_map", "strength", "with_strength", "quadratic",
            "has_lines")

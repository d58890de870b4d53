"""What a loss provides, and helpers shared by the piecewise-linear losses.

A loss never sees w: it maps scores S = X w (shape (n,) or (n, K)) and labels y to a risk
R(S). Every loss subclasses `Loss` and gives

- ``risk(S, y)``: the empirical risk R(S), a scalar;
- ``dscores(S, y)``: an element u of ∂R(S) (so λw + Xᵀu ∈ ∂J(w));
- ``argsup(S, dS, y)``: the u in ∂R(S) maximizing ⟨u, dS⟩, dS = X p: the oracle
  argsup_{g∈∂J} gᵀp of Yu et al. (2010), eqs. 22–23, moved to score space;

and may give

- ``smooth = True`` (a class attribute) where R is differentiable, so that the
  orthant-wise L1 methods (OWL-QN, OBA) apply, and then ``curvature(S, y)``: the diagonal
  of ∇²R(S) where the Hessian is diagonal in score space (Xᵀ D X products for Newton-CG;
  otherwise `Problem.hvp` differentiates ``dscores``);

- ``lines(S, dS, y)``: offsets b and slopes a, shape (n, r), with R(S + η dS) =
  Σ_i max_j (b_ij + η a_ij) for η ≥ 0 (Yu et al. 2010, eq. 33): the exact line search needs them;
- ``conjugate(u, y)``: R*(u), for duality gaps from any dual point;
- ``score_cut(S, y)``: (u, c), ``dscores``' u and the exact intercept of its plane,
  R(S′) ≥ ⟨u, S′⟩ + c for every S′, for a loss without ``conjugate`` (the max-affine
  losses: u mixes pieces decided within `active_tol`, so R(S) − ⟨u, S⟩ can overshoot c);
- ``dual_scale_limit(u, y)``: where R*(s u) = s R*(u) for 0 ≤ s ≤ this limit (hinge), so a
  dual point can be improved by the best scalar s (see `nsjax.problem.Problem.dual_value`);
- ``center_dual(u, y)``: the nearest dual point to u with Σᵢ uᵢ = 0 in the domain of R*,
  which a problem with an unregularized bias needs for its certified gap (Saha et al. 2009,
  eq. 22); a loss without it refuses ``bias=True``;
- ``dual_certificate(problem, w, S)``: a tight lower bound on min J near w and the products
  with X it cost (the hinge's band fit, `nsjax.losses._hinge_certificate`);
- per-example weights, by subclassing `Weighted` (a ``weights`` field, None by default, and
  each 1/n replaced by the example's mass cᵢ/n), so that ``Problem(..., sample_weight=c)``
  takes them.

The labels a loss accepts and how it encodes them come from ``encode_labels`` and
``num_outputs`` (`nsjax.losses.labels`); ``prepare`` checks and casts the loss's own
parameters against the problem's size.

Kinks are decided with a relative tolerance (`active_tol`): after an exact line search the
iterate sits on a hinge only up to rounding, and treating it as off the hinge would hide the
kink from direction finding (Yu et al. 2010, Sec. 2.4).

References: see docs/references.md.
"""

from __future__ import annotations

import abc
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp

from nsjax.losses.labels import check_length
from nsjax.projections import box_section_in_range

#: The optional methods of the loss interface (module docstring): a loss gives those it can,
#: and `Loss.provides` says which (the problem's oracles and the solvers ask it, never probe).
OPTIONAL = ("lines", "conjugate", "score_cut", "dual_scale_limit", "center_dual",
            "dual_certificate", "curvature", "risk_change", "smoothed", "smoothed_dual",
            "smoothing_term")


class Loss(abc.ABC):
    """Base of every loss: no labels (``y=None``) and one score per example by default.

    Subclasses give ``risk``, ``dscores`` and ``argsup`` and any of the optional methods
    named in `OPTIONAL` (module docstring)."""

    #: True where R is differentiable (the orthant-wise L1 solvers need it).
    smooth: ClassVar[bool] = False
    #: The structured dual a Nesterov solver runs on (`nsjax.solvers.pragam`): "svm" for
    #: the binary hinge (its box, Saha et al. 2009, eq. 21), "chain" for `ChainHinge`'s
    #: marginals, None for none.
    dual_form: ClassVar[str | None] = None
    #: Per-example weights (`Weighted` losses hold them as a field), or None.
    weights = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._provided = frozenset(name for name in OPTIONAL if callable(getattr(cls, name, None)))

    def provides(self, name: str) -> bool:
        """Whether the loss gives the optional method ``name`` (one of `OPTIONAL`)."""
        if name not in OPTIONAL:
            raise ValueError(f"{name!r} is not an optional method of a loss; those are "
                             f"{', '.join(OPTIONAL)}.")
        return name in self._provided

    @abc.abstractmethod
    def risk(self, S, y):
        """The empirical risk R(S), a scalar."""

    @abc.abstractmethod
    def dscores(self, S, y):
        """An element u of ∂R(S), shaped like S."""

    @abc.abstractmethod
    def argsup(self, S, dS, y):
        """The u in ∂R(S) maximizing ⟨u, dS⟩ (Yu et al. 2010, eqs. 22–23, in score space)."""

    @property
    def has_lines(self) -> bool:
        """Whether the loss gives its lines, so the exact line search applies."""
        return self.provides("lines")

    def encode_labels(self, y, n, dtype, classes=None):
        """(labels as the loss uses them, class values or None). This default keeps y (if
        any) as it is, checking only its length."""
        if y is None:
            return None, None
        check_length(y, n)
        return jnp.asarray(y), None if classes is None else tuple(classes)

    def num_outputs(self, classes):
        """K for a loss of an (n, K) score matrix, else None."""
        return None

    def prepare(self, n, num_outputs, dtype):
        """This loss with its parameters checked and cast for n examples (default: as is)."""
        return self


def active_tol(x: jax.Array) -> jax.Array:
    """The tolerance below which a kink counts as active at x, relative to max(1, |x|).

    10 eps^(2/3): 3.7e-10 in float64, 2.4e-4 in float32. Far above rounding (so an iterate
    that an exact line search put on a hinge stays on it), and wide enough that kinks a
    hair away are seen by direction finding instead of cutting the next step to nothing.
    Any direction that descends on the widened subdifferential descends on the true one.
    """
    eps = jnp.finfo(x.dtype).eps
    return 10.0 * eps ** (2.0 / 3.0) * jnp.maximum(1.0, jnp.abs(x))


def snap_to_max(b: jax.Array) -> jax.Array:
    """Set offsets within `active_tol` of each row's maximum exactly to that maximum."""
    top = jnp.max(b, axis=-1, keepdims=True)
    return jnp.where(top - b <= active_tol(top), top, b)


def near_max(b: jax.Array) -> jax.Array:
    """Where `snap_to_max(b)` equals its row's maximum: the entries within `active_tol` of
    it. One reduction: in `snap_to_max(b) == max(snap_to_max(b))` XLA on CPUs recomputes
    the snap's row maximum per entry inside the second one."""
    top = jnp.max(b, axis=-1, keepdims=True)
    return (top - b <= active_tol(top)) | (b == top)  # b == top: rows of −inf only


#: `row_argmax` compares columns one by one up to this many columns (then `jnp.argmax`).
ROW_ARGMAX_UNROLL = 64


def row_argmax(x: jax.Array) -> jax.Array:
    """``jnp.argmax(x, axis=1)`` for an (n, K) x without NaN: each row's first maximum.

    On CPUs, for K ≤ `ROW_ARGMAX_UNROLL`, as K − 1 comparisons of whole columns: XLA's CPU
    backend runs a (value, index) reduction over a short minor axis fused with its producer
    one element at a time, which is slower than comparing whole columns. Elsewhere
    `jnp.argmax` (the same indices).
    """
    if x.shape[1] > ROW_ARGMAX_UNROLL:
        return jnp.argmax(x, axis=1)

    def by_columns(x):
        top, index = x[:, 0], jnp.zeros(x.shape[0], jnp.int32)
        for k in range(1, x.shape[1]):
            better = x[:, k] > top  # strict: ties keep the first index, as jnp.argmax
            top, index = jnp.where(better, x[:, k], top), jnp.where(better, k, index)
        return index

    return jax.lax.platform_dependent(
        x, cpu=by_columns, default=lambda x: jnp.argmax(x, axis=1).astype(jnp.int32))


class Weighted:
    """A loss whose examples may carry weights cᵢ ≥ 0 (``Problem(..., sample_weight=c)``):
    R(S) = (1/n) Σᵢ cᵢ ℓ(Sᵢ, yᵢ). Every formula then replaces the 1/n of example i by its
    mass cᵢ/n (`per_example`, `weighted_mean`); without weights the formulas are
    the unweighted ones, operation for operation."""

    def with_weights(self, weights):
        """This loss with per-example weights (an (n,) array, checked by `Problem`)."""
        return dataclasses.replace(self, weights=weights)

    def per_example(self, x):
        """x (leading axis: examples) times each example's mass cᵢ/n."""
        n = x.shape[0]
        if self.weights is None:
            return x / n
        return x * self.weights.reshape((n,) + (1,) * (x.ndim - 1)) / n

    def weighted_mean(self, terms):
        """(1/n) Σᵢ cᵢ termsᵢ (the mean without weights)."""
        if self.weights is None:
            return jnp.mean(terms)
        return jnp.vdot(self.weights, terms) / terms.shape[0]

    def per_example_inverse(self, x):
        """(x divided by each example's mass cᵢ/n, 0 where cᵢ = 0; whether x is 0 wherever
        cᵢ = 0): `per_example` undone, for dual points (R*(u) = +inf unless uᵢ = 0 where
        cᵢ = 0)."""
        n = x.shape[0]
        if self.weights is None:
            return x * n, jnp.asarray(True)
        c = self.weights.reshape((n,) + (1,) * (x.ndim - 1))
        return (jnp.where(c > 0, x * n / jnp.where(c > 0, c, 1.0), 0.0),
                jnp.all(jnp.where(c > 0, True, x == 0)))

    def dual_coefficients(self, u, y):
        """(β, inside) for a score-space point u = −β∘y∘c/n of a binary loss: β where
        cᵢ > 0 (0 where cᵢ = 0), and whether uᵢ = 0 wherever cᵢ = 0 (else R*(u) = +inf)."""
        return self.per_example_inverse(-u * y)

    def center_binary_dual(self, u, y):
        """For a binary loss whose R* is finite on u = −β∘y∘c/n, β ∈ [0, 1]ⁿ (hinge,
        logistic): the dual point of that box with Σᵢ uᵢ = 0 nearest to u (in β, weighted
        by c; Σu = 0 is Σ cᵢyᵢβᵢ = 0), by the exact projection onto a box cut by a hyperplane
        (`project_box_section`). The box holds β = 0, so the set is never empty."""
        beta, _ = self.dual_coefficients(u, y)
        beta = jnp.clip(beta, 0.0, 1.0)
        if self.weights is None:
            beta = box_section_in_range(beta, y, 0.0, 0.0, 1.0).x
        else:  # nearest in Σ cᵢ(βᵢ − β⁰ᵢ)², so that every β moves alike, as without weights
            c = self.weights
            beta = box_section_in_range(beta, y * c, 0.0, 0.0, 1.0,
                                       weights=jnp.where(c > 0, c, 1.0)).x
        return -self.per_example(beta * y)

"""`Problem`: loss + regularizer + data, J(w) = λΩ(w) + R(X w).

It owns every oracle a solver needs, so that solvers never reach into the loss, the
regularizer or X: J, a subgradient (paper 000, eq. 21), the oracle argsup_{g∈∂J} gᵀp
(eqs. 22–23), the restriction of J to a line (the loss's lines plus the regularizer's
pieces for the exact line search, eq. 25; Φ and its directional derivative for the Wolfe
search), cutting planes for bundle methods (paper 001, eq. 3) and dual values for certified
gaps. Everything that depends on the data goes through the scores S = X w, so one product
X p serves the oracle and the line search alike.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from nsjax.data import DesignMatrix
from nsjax.losses.labels import is_traced
from nsjax.regularizers import L2, REQUIRED

#: What `Problem` needs of a loss (see `nsjax.losses.base`).
LOSS_REQUIRED = ("risk", "dscores", "argsup", "encode_labels", "num_outputs", "prepare",
                 "has_lines")

__all__ = ["Line", "Problem", "is_traced"]


class Line(NamedTuple):
    """J along w + η p, η ≥ 0: const + c η + h η²/2 + Σ_i max_j (b_ij + η a_ij).

    ``b``, ``a`` (n', r) stack the loss's lines and the regularizer's kinked terms; (c, h)
    is the regularizer's smooth part. `nsjax.solvers.line_search.exact_line_search` takes
    exactly this.
    """

    b: jax.Array
    a: jax.Array
    c: jax.Array
    h: jax.Array


@jax.tree_util.register_pytree_node_class
class Problem:
    """A regularized risk minimization problem, J(w) = λΩ(w) + R(X w).

    Args:
        loss: a loss from `nsjax.losses` (Hinge, Logistic, MaxAffine, ...).
        reg: a regularizer implementing `nsjax.regularizers.Regularizer` (L2, ...), or
            None for no regularization (allowed where the risk is bounded below, as in the
            toy problem (17)).
        X: data, shape (n, d): numpy, jax array, scipy.sparse or BCOO; float32 or float64.
        y: labels as the loss takes them (`nsjax.losses.labels`): binary losses accept any
            two values (the sorted pair becomes (−1, +1), kept in ``classes``), multiclass
            losses any K values, multilabel losses label sets; losses without labels
            (MaxAffine) take None.
        dtype: the float dtype to compute in; default: X's.
        classes: the class values, in order; y is then encoded by comparison with them
            (binary and multiclass: raw labels such as 0/1 with classes=(0, 1), or ±1 with
            classes=(-1, 1); multilabel: an (n, K) 0/1 mask), see `nsjax.losses.labels`.
            Needed when the problem is built from traced arrays (inside `jax.jit` or
            `jax.vmap`), where labels cannot be sorted; checks of values (NaN in X, labels
            outside ``classes``, λ ≥ 0) are then skipped, shapes are still checked.

    Raises:
        ValueError / TypeError: on bad input, before anything is compiled.

    A Problem is a pytree (X, y, the loss's and the regularizer's arrays are leaves), so
    it can be an argument of `jax.jit` and problems of one shape can be stacked and
    vmapped (`nsjax.solve_batch`).

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-3), X, y)
        >>> prob.w_shape, prob.classes
        ((30,), (0, 1))
        >>> round(float(prob.objective(prob.zeros())), 12)  # J(0) = mean hinge at 0 = 1
        1.0
    """

    def __init__(self, loss, reg, X, y=None, *, dtype=None, classes=None):
        reg = L2(0.0) if reg is None else reg
        _check_regularizer(reg)
        _check_strength(reg.strength)
        _check_loss(loss)
        _check_X(X)
        self.X = DesignMatrix.from_any(X, dtype)
        n, dt = self.X.shape[0], self.X.dtype
        if y is not None and classes is None and is_traced(y):
            raise ValueError("y is traced (inside jit or vmap): pass it already encoded, "
                             "with classes=... (see nsjax.Problem).")
        self.y, self.classes = loss.encode_labels(y, n, dt, classes)
        self.num_outputs = loss.num_outputs(self.classes)
        self.loss = loss.prepare(n, self.num_outputs, dt)
        self.reg = reg.with_strength(jnp.asarray(reg.strength, dt))

    def __repr__(self):
        n, d = self.X.shape
        layout = "sparse" if self.X.is_sparse else "dense"
        return (f"Problem({type(self.loss).__name__}, {type(self.reg).__name__}, "
                f"X {n}x{d} {layout} {jnp.dtype(self.dtype).name})")

    # -- pytree -----------------------------------------------------------------------
    def tree_flatten(self):
        """Leaves: loss, regularizer, X, y; static: classes, num_outputs."""
        return (self.loss, self.reg, self.X, self.y), (self.classes, self.num_outputs)

    @classmethod
    def tree_unflatten(cls, aux, children):
        """Rebuild from `tree_flatten`'s parts without re-running the checks."""
        obj = object.__new__(cls)
        obj.loss, obj.reg, obj.X, obj.y = children
        obj.classes, obj.num_outputs = aux
        return obj

    def with_lam(self, lam) -> Problem:
        """The same problem with regularization strength ``lam`` (may be traced: `sweep`
        vmaps over it), held in the problem's dtype so that no new program compiles."""
        _check_strength(lam)
        reg = self.reg.with_strength(jnp.asarray(lam, self.dtype))
        return Problem.tree_unflatten((self.classes, self.num_outputs),
                                      (self.loss, reg, self.X, self.y))

    def without_classes(self) -> Problem:
        """The same problem without its class values (what the solvers compile against:
        problems that differ only in their label values share one compiled program)."""
        return Problem.tree_unflatten((None, self.num_outputs),
                                      (self.loss, self.reg, self.X, self.y))

    # -- shapes -----------------------------------------------------------------------
    @property
    def w_shape(self) -> tuple:
        """(d,) for one score per example, (d, K) for K scores per example."""
        d = self.X.shape[1]
        return (d,) if self.num_outputs is None else (d, self.num_outputs)

    @property
    def lam(self):
        """The regularizer's strength (λ of `L2`)."""
        return self.reg.strength

    @property
    def dtype(self):
        """The float dtype every array of the problem uses (X's)."""
        return self.X.dtype

    def zeros(self):
        """The zero weights, shape `w_shape`."""
        return jnp.zeros(self.w_shape, self.dtype)

    # -- what solvers may ask ---------------------------------------------------------
    @property
    def has_lines(self) -> bool:
        """Whether J restricted to a line is piecewise quadratic with known pieces, so the
        exact line search applies (the loss gives its lines and the regularizer's restriction
        is a quadratic plus lines)."""
        return self.loss.has_lines and self.reg.has_lines

    @property
    def has_dual_certificate(self) -> bool:
        """Whether the loss offers a tight end-of-run certificate (`dual_certificate`)."""
        return hasattr(self.loss, "dual_certificate")

    @property
    def has_conjugate(self) -> bool:
        """Whether the loss gives R*, so that `dual_value` takes any dual point u."""
        return hasattr(self.loss, "conjugate")

    @property
    def quadratic_regularizer(self) -> bool:
        """Whether Ω = ½‖w‖², so that w = −Xᵀu/λ for a dual point u (bundle methods)."""
        return self.reg.quadratic

    def scores(self, w):
        """X w."""
        return self.X.mv(w)

    def rmv(self, u):
        """Xᵀ u: a score-space vector (a dual point, a score subgradient) in weight space."""
        return self.X.rmv(u)

    def value(self, w, S=None):
        """J(w), from its scores S = X w where given (else one product with X)."""
        S = self.scores(w) if S is None else S
        return self.reg.value(w) + self.loss.risk(S, self.y)

    def objective(self, w):
        """J(w) (computes the scores)."""
        return self.value(w)

    def subgradient(self, w, S):
        """An element g = g_reg + Xᵀu of ∂J(w) (eq. 21), g_reg ∈ ∂(λΩ)(w), u ∈ ∂R(S):
        returns (g, u, g_reg)."""
        u = self.loss.dscores(S, self.y)
        g_reg = self.reg.subgradient(w)
        return g_reg + self.rmv(u), u, g_reg

    def oracle(self, w, S, p, dS):
        """argsup_{g∈∂J(w)} gᵀp (eqs. 22–23) without a product with Xᵀ: returns
        (g_reg, u, sup) with g = g_reg + Xᵀu and sup = gᵀp, from dS = X p."""
        g_reg, reg_slope = self.reg.argsup(w, p)
        u = self.loss.argsup(S, dS, self.y)
        return g_reg, u, reg_slope + jnp.vdot(u, dS)

    def certified_subgradient(self, w, S, p, dS, theta):
        """The subgradient at w that an exact line search along p certifies:
        θ·argsup along p + (1 − θ)·argsup along −p, on the kinks at w (θ from
        `LineSearchResult.theta`). Returns (g, u, g_reg) as `subgradient` does."""
        up, u_up, _ = self.oracle(w, S, p, dS)
        down, u_down, _ = self.oracle(w, S, -p, -dS)
        u = theta * u_up + (1 - theta) * u_down
        # down + θ(up − down), not θ·up + (1 − θ)·down: exact where both parts agree (a
        # smooth regularizer), so g does not pick up rounding there.
        g_reg = down + theta * (up - down)
        return g_reg + self.rmv(u), u, g_reg

    def line(self, w, S, p, dS) -> Line:
        """The restriction of J to w + η p, η ≥ 0, as a `Line` (paper 000, eqs. 25, 33):
        the loss's lines stacked with the regularizer's kinked terms (padded with lines of
        offset −inf where their counts differ)."""
        b, a = self.loss.lines(S, dS, self.y)
        reg = self.reg.line(w, p)
        if reg.b is not None:
            r = max(b.shape[1], reg.b.shape[1])
            b = jnp.concatenate([_pad_lines(b, r, -jnp.inf), _pad_lines(reg.b, r, -jnp.inf)])
            a = jnp.concatenate([_pad_lines(a, r, 0.0), _pad_lines(reg.a, r, 0.0)])
        return Line(b, a, reg.c, reg.h)

    def restrict(self, w, S, p, dS):
        """Φ(η) = J(w + η p) for the Wolfe search: returns η ↦ (Φ(η), sup ∂Φ(η))."""

        def phi(eta):
            w_eta, S_eta = w + eta * p, S + eta * dS
            return self.value(w_eta, S_eta), self.oracle(w_eta, S_eta, p, dS)[2]

        return phi

    def cut(self, w, S):
        """J(w) and the cutting plane of R at w (paper 001, eq. 3): (J(w), a, b) with
        a = Xᵀu, u ∈ ∂R(S), b = R(w) − ⟨a, w⟩, so R(v) ≥ ⟨a, v⟩ + b for all v."""
        risk = self.loss.risk(S, self.y)
        a = self.rmv(self.loss.dscores(S, self.y))
        return self.reg.value(w) + risk, a, risk - jnp.vdot(a, w)

    def dual_cut(self, u, S, Xtu):
        """The cutting plane of R that a score-space subgradient u ∈ ∂R(S) gives, without a
        product with X: (a, b) with a = Xᵀu (``Xtu``) and R(Xv) ≥ ⟨a, v⟩ + b for all v.

        b = −R*(u) (Fenchel–Young: valid for every u in dom R*, so also where u is in ∂R(S)
        only up to the kink tolerance) where the loss gives R*; else R(S) − ⟨u, S⟩.
        """
        b_here = self.loss.risk(S, self.y) - jnp.vdot(u, S)
        if not self.has_conjugate:
            return Xtu, b_here
        b = -self.loss.conjugate(u, self.y)
        return Xtu, jnp.where(jnp.isfinite(b), b, b_here)

    def dual_value(self, u, *, S=None, Xtu=None):
        """A lower bound on min J from a score-space dual point u.

        Fenchel duality: D(u) = −R*(u) − (λΩ)*(−Xᵀu) ≤ J* for every u. Where the loss
        gives no conjugate, u must lie in ∂R(S) (as every aggregated subgradient of
        direction finding does) and S must be given: then R*(u) = ⟨u, S⟩ − R(S). Where
        R*(s u) = s R*(u) on the dual box (the hinge), the best scalar s is taken at no
        extra cost (`Regularizer.scaled_dual`; DESIGN.md, Numerics).

        Args:
            u: the dual point, shape of the scores.
            S: scores at which u is a subgradient (needed without a loss conjugate).
            Xtu: Xᵀu where already known; else one product with Xᵀ.
        """
        Xtu = self.rmv(u) if Xtu is None else Xtu
        if hasattr(self.loss, "conjugate"):
            rstar = self.loss.conjugate(u, self.y)
        elif S is None:
            raise ValueError(f"{type(self.loss).__name__} has no conjugate: dual_value needs "
                             "the scores S at which u is a subgradient.")
        else:
            rstar = jnp.vdot(u, S) - self.loss.risk(S, self.y)
        base = -rstar - self.reg.conjugate(-Xtu)
        if not hasattr(self.loss, "dual_scale_limit"):
            return base
        s_max = self.loss.dual_scale_limit(u, self.y)
        return jnp.maximum(base, self.reg.scaled_dual(rstar, Xtu, s_max))

    def dual_certificate(self, w, S=None):
        """(a tight lower bound on min J near w, products with X or Xᵀ spent, the scores
        included where S is not given), where the loss has one (`has_dual_certificate`),
        else (−inf, 0)."""
        if not self.has_dual_certificate:
            return jnp.asarray(-jnp.inf, self.dtype), jnp.zeros((), jnp.int32)
        if S is None:
            lower, products = self.loss.dual_certificate(self, w, self.scores(w))
            return lower, products + 1
        return self.loss.dual_certificate(self, w, S)


def _pad_lines(x, r, fill):
    return jnp.pad(x, ((0, 0), (0, r - x.shape[1])), constant_values=fill)


def _check_loss(loss):
    if isinstance(loss, type):
        raise TypeError(f"loss must be an instance: pass {loss.__name__}(), not the class.")
    missing = [m for m in LOSS_REQUIRED if not hasattr(loss, m)]
    if missing:
        raise TypeError(
            f"loss must be an nsjax loss (e.g. Hinge(); subclass nsjax.losses.base.Loss); "
            f"{type(loss).__name__} lacks {', '.join(missing)}."
        )


def _check_regularizer(reg):
    if isinstance(reg, type):
        raise TypeError(f"reg must be an instance: pass {reg.__name__}(lam), not the class.")
    if isinstance(reg, (int, float, np.number, np.ndarray, jax.Array)):
        raise TypeError(f"reg must be a regularizer, e.g. nsjax.regularizers.L2({reg!r}); "
                        f"got a number.")
    missing = [m for m in REQUIRED if not hasattr(reg, m)]
    if missing:
        raise TypeError(
            f"reg must implement nsjax.regularizers.Regularizer (e.g. L2(lam)); "
            f"{type(reg).__name__} lacks {', '.join(missing)}."
        )
    if jax.tree_util.tree_leaves(reg) == [reg]:
        raise TypeError(f"{type(reg).__name__} must be a JAX pytree (e.g. a frozen dataclass "
                        "registered with jax.tree_util.register_dataclass) so that its "
                        "strength is traced.")


def _check_strength(lam):
    if jnp.ndim(lam) != 0:
        raise ValueError(
            f"lam must be a scalar; got shape {jnp.shape(lam)}. Use nsjax.sweep for many "
            "values."
        )
    if is_traced(lam):
        return
    arr = np.asarray(lam)
    if not np.isfinite(arr) or arr < 0:
        raise ValueError(f"lam must be finite and >= 0; got {float(arr)}.")


def _check_X(X):
    if isinstance(X, DesignMatrix):
        return
    if sp.issparse(X):
        shape, data = X.shape, X.data
    elif hasattr(X, "indices") and hasattr(X, "data") and hasattr(X, "todense"):  # BCOO
        shape, data = X.shape, X.data
    else:
        data = X if is_traced(X) else np.asarray(X)
        shape = jnp.shape(data)
        if len(shape) != 2:
            raise ValueError(f"X must be 2-D with shape (n, d); got shape {shape}.")
        if not jnp.issubdtype(data.dtype, jnp.number):
            raise ValueError(f"X must be numeric; got dtype {data.dtype}.")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"X is empty (shape {shape}); a problem needs n >= 1 and d >= 1.")
    if is_traced(data):
        return  # values unknown under tracing: checked by the non-finite guard of the loop
    data = np.asarray(data)
    if not np.all(np.isfinite(data)):
        bad = int(np.size(data) - np.count_nonzero(np.isfinite(data)))
        raise ValueError(
            f"X contains {bad} NaN or inf entries; impute or drop them before building "
            "the Problem."
        )

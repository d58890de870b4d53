"""`Problem`: loss + regularizer + data, J(w) = λ Ω(w) + R(X w).

It gives what the solvers of paper 000 need: J, a subgradient (eq. 21), the oracle
argsup_{g∈∂J} gᵀp (eqs. 22–23), the restriction of J to a line (eq. 25), and a dual
point for a certified gap. All quantities that depend on the data go through the scores
S = X w, so one matvec X p serves the oracle and the line search alike.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

from nsjax.data import DesignMatrix
from nsjax.regularizers import L2


@jax.tree_util.register_pytree_node_class
class Problem:
    """A regularized risk minimization problem.

    Args:
        loss: a loss from `nsjax.losses` (Hinge, Logistic, MaxAffine, ...).
        reg: a regularizer from `nsjax.regularizers`, or None for no regularization
            (allowed where the risk is bounded below, as in the toy problem (17)).
        X: data, shape (n, d): numpy, jax array, scipy.sparse or BCOO; float32 or float64.
        y: labels, shape (n,). Binary losses accept any two distinct values; the sorted
            pair is mapped to (−1, +1) and kept in ``classes``. Losses without labels
            (MaxAffine) take None.
        dtype: the float dtype to compute in; default: X's.

    Raises:
        ValueError / TypeError: on bad input, before anything is compiled.

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-3), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.SubLBFGS())
    """

    def __init__(self, loss, reg, X, y=None, *, dtype=None):
        if reg is None:
            reg = L2(0.0)
        if not isinstance(reg, L2):
            raise TypeError(
                f"reg must be nsjax.regularizers.L2(lam) or None; got {type(reg).__name__}."
            )
        _check_lam(reg.lam)
        if not hasattr(loss, "risk"):
            raise TypeError(f"loss must be an nsjax loss (e.g. Hinge()); got {loss!r}.")
        _check_X(X)
        self.X = DesignMatrix.from_any(X, dtype)
        n = self.X.shape[0]
        dt = self.X.dtype
        self.reg = L2(jnp.asarray(reg.lam, dt))
        self.classes = None
        self.num_outputs = None  # K for losses of a score matrix (n, K), else None
        if getattr(loss, "binary", False) or getattr(loss, "multiclass", False) or getattr(
                loss, "multilabel", False):
            if y is None:
                raise ValueError(f"{type(loss).__name__} needs labels y; got y=None.")
        if getattr(loss, "binary", False):
            self.y, self.classes = _encode_binary(y, n, dt)
        elif getattr(loss, "multiclass", False):
            self.y, self.classes = _encode_multiclass(y, n)
            self.num_outputs = len(self.classes)
            loss = _check_delta(loss, self.num_outputs, dt)
        elif getattr(loss, "multilabel", False):
            self.y, self.classes = _encode_multilabel(y, n)
            self.num_outputs = len(self.classes)
            loss = _check_delta(loss, self.num_outputs, dt)
        elif y is not None:
            y = np.asarray(y)
            if y.shape[0] != n:
                raise ValueError(f"X has {n} rows but y has {y.shape[0]} entries.")
            self.y = jnp.asarray(y)
        else:
            self.y = None
        if hasattr(loss, "slopes"):
            loss = _check_max_affine(loss, n, dt)
        self.loss = loss

    # -- pytree -----------------------------------------------------------------------
    def tree_flatten(self):
        return (self.loss, self.reg, self.X, self.y), (self.classes, self.num_outputs)

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.loss, obj.reg, obj.X, obj.y = children
        obj.classes, obj.num_outputs = aux
        return obj

    def with_lam(self, lam) -> Problem:
        """The same problem with regularization strength ``lam`` (traced inside jit)."""
        return Problem.tree_unflatten((self.classes, self.num_outputs),
                                      (self.loss, L2(lam), self.X, self.y))

    @property
    def w_shape(self) -> tuple:
        """(d,) for one score per example, (d, K) for K scores per example."""
        d = self.X.shape[1]
        return (d,) if self.num_outputs is None else (d, self.num_outputs)

    # -- the objective ----------------------------------------------------------------
    @property
    def lam(self):
        return self.reg.lam

    @property
    def dtype(self):
        return self.X.dtype

    @property
    def has_lines(self) -> bool:
        """Whether the loss gives its lines, so the exact line search applies."""
        return hasattr(self.loss, "lines") and getattr(self.loss, "has_lines", True)

    def scores(self, w):
        return self.X.mv(w)

    def value(self, w, S):
        """J(w) from w and its scores S = X w."""
        return self.reg.value(w) + self.loss.risk(S, self.y)

    def subgradient(self, w, S):
        """An element g = λw + Xᵀu of ∂J(w) (eq. 21) and its score part u ∈ ∂R(S)."""
        u = self.loss.dscores(S, self.y)
        return self.reg.grad(w) + self.X.rmv(u), u

    def oracle(self, w, S, p, dS):
        """argsup_{g∈∂J(w)} gᵀp in score space (eqs. 22–23): returns (u, sup gᵀp)."""
        u = self.loss.argsup(S, dS, self.y)
        return u, self.reg.line(w, p)[0] + jnp.vdot(u, dS)

    def dual_value(self, w, S, u, Xtu):
        """A lower bound on min J from a score-space dual point u with Xtu = Xᵀu.

        Fenchel duality: D(u) = −R*(u) − (λΩ)*(−Xᵀu) ≤ J* for every u. Where the loss
        gives no conjugate, u must lie in ∂R(S) (as every aggregated subgradient of
        direction finding does), and then R*(u) = ⟨u, S⟩ − R(S). For the hinge,
        R*(s u) = s R*(u) on the dual box, so the best scalar s (a 1-D concave quadratic)
        is taken at no extra cost (DESIGN.md, Numerics).
        """
        if hasattr(self.loss, "conjugate"):
            rstar = self.loss.conjugate(u, self.y)
        else:
            rstar = jnp.vdot(u, S) - self.loss.risk(S, self.y)
        base = -rstar - self.reg.conjugate(Xtu)
        if not hasattr(self.loss, "dual_scale_limit"):
            return base
        lam = self.reg.lam
        sq = jnp.vdot(Xtu, Xtu)
        s_max = self.loss.dual_scale_limit(u, self.y)
        s = jnp.clip(-rstar * lam / jnp.maximum(sq, jnp.finfo(sq.dtype).tiny), 0.0, s_max)
        scaled = -s * rstar - s * s * sq / (2 * jnp.maximum(lam, jnp.finfo(sq.dtype).tiny))
        return jnp.where((lam > 0) & jnp.isfinite(rstar), jnp.maximum(base, scaled), base)


def _check_lam(lam):
    if isinstance(lam, jax.core.Tracer):
        return
    arr = np.asarray(lam)
    if arr.ndim != 0:
        raise ValueError(
            f"lam must be a scalar; got shape {arr.shape}. Use nsjax.sweep for many values."
        )
    if not np.isfinite(arr) or arr < 0:
        raise ValueError(f"lam must be finite and >= 0; got {float(arr)}.")


def _check_X(X):
    if isinstance(X, DesignMatrix):
        return
    if sp.issparse(X):
        shape, data = X.shape, X.data
    elif hasattr(X, "indices") and hasattr(X, "data") and hasattr(X, "todense"):  # BCOO
        shape, data = X.shape, np.asarray(X.data)
    else:
        data = np.asarray(X)
        shape = data.shape
        if data.ndim != 2:
            raise ValueError(f"X must be 2-D with shape (n, d); got shape {shape}.")
        if not np.issubdtype(data.dtype, np.number):
            raise ValueError(f"X must be numeric; got dtype {data.dtype}.")
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"X is empty (shape {shape}); a problem needs n >= 1 and d >= 1.")
    if not np.all(np.isfinite(data)):
        bad = int(np.size(data) - np.count_nonzero(np.isfinite(data)))
        raise ValueError(
            f"X contains {bad} NaN or inf entries; impute or drop them before building "
            "the Problem."
        )


def _check_labels(y, n):
    """y as a 1-D array of n finite labels, its sorted classes and each label's class index."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D labels with shape (n,); got shape {y.shape}.")
    if y.shape[0] != n:
        raise ValueError(
            f"X has {n} rows but y has {y.shape[0]} entries; they must have the same length."
        )
    if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf; every example needs a finite label.")
    classes, index = np.unique(y, return_inverse=True)
    return classes, index


def _encode_binary(y, n, dtype):
    classes, index = _check_labels(y, n)
    if classes.size != 2:
        raise ValueError(
            f"a binary loss needs exactly two classes in y; found {classes.size} "
            f"({classes[:10].tolist()}{' ...' if classes.size > 10 else ''})."
        )
    return jnp.asarray(np.where(index == 1, 1.0, -1.0), dtype), tuple(classes.tolist())


def _encode_multiclass(y, n):
    classes, index = _check_labels(y, n)
    if classes.size < 2:
        raise ValueError(f"a multiclass loss needs at least two classes in y; found {classes}.")
    return jnp.asarray(index, jnp.int32), tuple(classes.tolist())


def _encode_multilabel(y, n):
    """Label sets as an (n, K) bool mask, from lists, a sparse indicator or a dense 0/1 matrix."""
    if sp.issparse(y):
        Y = np.asarray(y.toarray()) != 0
        classes = tuple(range(Y.shape[1]))
    elif isinstance(y, (list, tuple)) and (len(y) == 0 or not np.isscalar(y[0])):
        labels = sorted({z for row in y for z in row})
        pos = {z: k for k, z in enumerate(labels)}
        Y = np.zeros((len(y), len(labels)), bool)
        for i, row in enumerate(y):
            Y[i, [pos[z] for z in row]] = True
        classes = tuple(labels)
    else:
        arr = np.asarray(y)
        if arr.ndim != 2 or not np.all((arr == 0) | (arr == 1)):
            raise ValueError(
                "multilabel y must be a list of label lists, a scipy sparse indicator matrix "
                f"or a dense 0/1 matrix of shape (n, K); got an array of shape {arr.shape}."
            )
        Y = arr.astype(bool)
        classes = tuple(range(Y.shape[1]))
    if Y.shape[0] != n:
        raise ValueError(f"X has {n} rows but y has {Y.shape[0]} label sets.")
    if Y.shape[1] < 2:
        raise ValueError(f"a multilabel loss needs at least two labels; found {Y.shape[1]}.")
    empty = np.flatnonzero(~Y.any(axis=1))
    if empty.size:
        raise ValueError(
            f"{empty.size} examples have no label (first: row {empty[0]}); every example needs "
            "at least one."
        )
    return jnp.asarray(Y), classes


def _check_delta(loss, K, dtype):
    if loss.delta is None:
        return loss
    D = np.asarray(loss.delta, dtype=float)
    if D.shape != (K, K):
        raise ValueError(f"delta must have shape (K, K) = ({K}, {K}); got {D.shape}.")
    if not np.all(np.isfinite(D)) or np.any(D < 0) or np.any(np.diag(D) != 0):
        raise ValueError("delta must be finite, >= 0, with a zero diagonal (Δ(z, z) = 0).")
    return dataclasses.replace(loss, delta=jnp.asarray(D, dtype))


def _check_max_affine(loss, n, dtype):
    a = np.asarray(loss.slopes)
    if a.ndim != 2 or a.shape[0] != n:
        raise ValueError(f"MaxAffine slopes must have shape (n={n}, r); got {a.shape}.")
    b = None if loss.offsets is None else np.asarray(loss.offsets)
    if b is not None and b.shape != a.shape:
        raise ValueError(f"MaxAffine offsets must have shape {a.shape}; got {b.shape}.")
    for name, arr in (("slopes", a), ("offsets", b)):
        if arr is not None and not np.all(np.isfinite(arr)):
            raise ValueError(f"MaxAffine {name} contain NaN or inf.")
    return type(loss)(
        jnp.asarray(a, dtype), None if b is None else jnp.asarray(b, dtype), loss.reduction
    )

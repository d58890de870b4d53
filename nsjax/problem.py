"""`Problem`: loss + regularizer + data, J(w) = λΩ(w) + R(X w).

It owns every oracle a solver needs, so that solvers never reach into the loss, the
regularizer or X: J, a subgradient (Yu et al. 2010, eq. 21), the oracle argsup_{g∈∂J} gᵀp
(eqs. 22–23), the restriction of J to a line (the loss's lines plus the regularizer's
pieces for the exact line search, eq. 25; Φ and its directional derivative for the Wolfe
search), cutting planes for bundle methods (Smola et al. 2007, eq. 3) and dual values for certified
gaps. Everything that depends on the data goes through the scores S = X w, so one product
X p serves the oracle and the line search alike.

References: see docs/references.md.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from nsjax._checks import (  # noqa: F401  (MAX_STEPS ... max_strength: public, here too)
    MAX_STEPS,
    _cast_parameters,
    _check_bias,
    _check_loss,
    _check_regularizer,
    _check_sample_weight,
    _check_strength,
    _check_X,
    _check_X_values,
    _strength,
    _strength_name,
    check_real_scalar,
    held_strength,
    max_abs_entry,
    max_strength,
    real_array,
)
from nsjax.data import DesignMatrix, to_device
from nsjax.losses.labels import BinaryLabels, MulticlassLabels, MultilabelLabels, is_traced
from nsjax.regularizers import L2, Unpenalized

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
        X: data, shape (n, d): numpy, jax array (or a list of rows), any scipy.sparse
            format (converted to CSR, duplicate entries summed) or BCOO. float32 and float64
            are kept, float16/bfloat16 computed in float32, integers and bools converted to
            float64; complex and object arrays are refused.
        y: labels as the loss takes them (`nsjax.losses.labels`): binary losses accept any
            two values (the sorted pair becomes (−1, +1), kept in ``classes``), multiclass
            losses any K values, multilabel losses label sets; losses without labels
            (MaxAffine) take None.
        dtype: the float dtype to compute in, float32 or float64; default: X's (above).
        classes: the class values, in order; y is then encoded by comparison with them
            (binary and multiclass: raw labels such as 0/1 with classes=(0, 1), or ±1 with
            classes=(-1, 1); multilabel: an (n, K) 0/1 mask), see `nsjax.losses.labels`.
            Needed when the problem is built from traced arrays (inside `jax.jit` or
            `jax.vmap`), where labels cannot be sorted; checks of values (NaN in X, labels
            outside ``classes``, λ ≥ 0) are then skipped, shapes are still checked.
        bias: add an unregularized bias b: J(w, b) = λΩ(w) + R(Xw + b) (Saha et al. 2009, eq. 20).
            The bias is the last entry of the weights: ``w_shape`` is (d + 1,), and
            `split_bias` separates them. Needs a loss with one score per example and
            ``center_dual`` (Hinge, Logistic, Squared), and a solver whose
            ``takes`` has a bias (the others refuse before compiling and name those that
            take it). The certified gap then comes from dual points projected onto
            Σᵢ uᵢ = 0 (the dual's bias hyperplane).
        sample_weight: per-example weights cᵢ ≥ 0, shape (n,), not all 0: the risk becomes
            (1/n) Σᵢ cᵢ ℓ(Sᵢ, yᵢ) (cᵢ = 1 is the unweighted problem; cᵢ = 0 drops example
            i; scikit-learn's ``C Σᵢ sample_weightᵢ ℓᵢ`` is this divided by C n). For the
            losses that subclass `nsjax.losses.base.Weighted` (Hinge, Logistic, Squared,
            MulticlassHinge), with every solver but the Nesterov ones (AGMEF, AGMEF1,
            Pragam), which refuse.

    Raises:
        ValueError / TypeError: on bad input, before anything is compiled, naming the
            argument. Values are checked as they will be used, after the cast to ``dtype``
            and the summing of sparse duplicates: X must be finite with
            |X_ij| ≤ sqrt(finfo.max / max(n, d)) (`max_abs_entry`), λ finite with
            0 ≤ λ ≤ sqrt(finfo.max) (`max_strength`: 1.3e154 in float64, 1.8e19 in float32).

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

    def __init__(self, loss, reg, X, y=None, *, dtype=None, classes=None, bias=False,
                 sample_weight=None):
        reg = L2(0.0) if reg is None else reg
        _check_regularizer(reg)
        _check_strength(reg.strength, _strength_name(reg))
        _check_loss(loss)
        X = _check_X(X)
        self.X = DesignMatrix.from_any(X, dtype)
        _check_X_values(self.X)  # as held: after the cast and the summing of duplicates
        n, dt = self.X.shape[0], self.X.dtype
        labels = isinstance(loss, (BinaryLabels, MulticlassLabels, MultilabelLabels))
        if y is not None and classes is None and is_traced(y) and labels:
            raise ValueError("y is traced (inside jit or vmap): pass it already encoded, "
                             "with classes=... (see nsjax.Problem).")
        self.y, self.classes = loss.encode_labels(y, n, dt, classes)
        self.num_outputs = loss.num_outputs(self.classes)
        self.loss = loss.prepare(n, self.num_outputs, dt)
        name = "sample_weight"
        if loss.weights is not None:  # given on the loss itself
            if sample_weight is not None:
                raise ValueError(f"the weights are given twice, as {type(loss).__name__}"
                                 "(weights=...) and sample_weight=...; give sample_weight only.")
            sample_weight, name = loss.weights, f"{type(loss).__name__}(weights=...)"
        if sample_weight is not None:
            weights = _check_sample_weight(sample_weight, loss, n, dt, name)
            self.loss = self.loss.with_weights(weights)
        self.reg = _cast_parameters(
            reg.with_strength(_strength(reg.strength, dt, _strength_name(reg))), dt)
        self.bias = _check_bias(bias, loss, self.num_outputs)
        if self.bias:
            self.reg = Unpenalized(self.reg)
        self.node_types = node_types((self.loss, self.reg, self.X))

    def __repr__(self):
        n, d = self.X.shape
        layout = "sparse" if self.X.is_sparse else "dense"
        reg = type(self.coefficient_reg).__name__
        bias = ", bias" if self.bias else ""
        weighted = ", weighted" if self.weighted else ""
        return (f"Problem({type(self.loss).__name__}, {reg}, "
                f"X {n}x{d} {layout} {jnp.dtype(self.dtype).name}{bias}{weighted})")

    # -- pytree -----------------------------------------------------------------------
    def tree_flatten(self):
        """Leaves: loss, regularizer, X, y; static: classes, num_outputs, bias and the
        types of the loss's, regularizer's and X's nodes (`node_types`)."""
        return (self.loss, self.reg, self.X, self.y), (self.classes, self.num_outputs,
                                                       self.bias, self.node_types)

    @classmethod
    def tree_unflatten(cls, aux, children):
        """Rebuild from `tree_flatten`'s parts without re-running the checks."""
        obj = object.__new__(cls)
        obj.loss, obj.reg, obj.X, obj.y = children
        obj.classes, obj.num_outputs, obj.bias, obj.node_types = aux
        return obj

    def with_strength(self, strength) -> Problem:
        """The same problem with the regularizer's strength (`strength`: λ of `L2`, μ of
        `L1` and `ElasticNet`) replaced (may be traced: `sweep` vmaps over it), held in the
        problem's dtype so that no new program compiles."""
        reg = self.reg.with_strength(_strength(strength, self.dtype, _strength_name(self.reg)))
        return Problem.tree_unflatten((self.classes, self.num_outputs, self.bias,
                                       self.node_types), (self.loss, reg, self.X, self.y))

    def without_classes(self) -> Problem:
        """The same problem without its class values (what the solvers compile against:
        problems that differ only in their label values share one compiled program)."""
        return Problem.tree_unflatten((None, self.num_outputs, self.bias, self.node_types),
                                      (self.loss, self.reg, self.X, self.y))

    def padded(self, cols: int, rows: int | None = None) -> Problem:
        """The same objective on X padded to ``cols`` columns and, where ``rows`` is given,
        to ``rows`` rows (`DesignMatrix.padded`): what `nsjax.buckets` solves, so that
        nearby shapes share one compiled program.

        With ``rows`` (≥ n; needs a `Weighted` loss) the problem is always a weighted one,
        so that every n of a bucket, its own size included, runs one program: a padded row
        has label ``y[0]`` and weight 0, and the given rows weigh cᵢ·rows/n (cᵢ = 1 without
        sample weights), so (1/rows) Σ cᵢ' ℓᵢ is the given (1/n) Σ cᵢ ℓᵢ. A zero column's
        weight stays 0 from a start that is 0 there (the loss's gradient vanishes on it, as
        does a separable regularizer's at 0); with a bias, the bias stays the last weight.
        Not for traced or sharded problems.
        """
        n, d = self.X.shape
        loss, y = self.loss, self.y
        if rows is not None:
            weights = loss.weights
            c = np.ones(n, self.dtype) if weights is None else np.asarray(weights)
            loss = loss.with_weights(to_device(
                np.concatenate([c * (rows / n), np.zeros(rows - n, c.dtype)])))
            y = np.asarray(y)
            y = to_device(np.concatenate([y, np.repeat(y[:1], rows - n, axis=0)]))
        X = self.X.padded(n if rows is None else rows, cols)
        return Problem.tree_unflatten(
            (self.classes, self.num_outputs, self.bias, node_types((loss, self.reg, X))),
            (loss, self.reg, X, y))

    def shard(self, mesh, axis=None) -> Problem:
        """This problem with its examples split by rows over the devices of ``mesh``.

        X's rows, the labels' rows and the loss's per-example arrays (sample weights)
        are placed in equal blocks along the mesh axis ``axis``; everything else (the
        regularizer, a class-cost matrix) is replicated. Sparse X is first cut into one
        block of rows per device, each with its own row and column layouts
        (`DesignMatrix.split_rows`). The solvers need no change: XLA
        partitions every compiled program by these placements, so X w and Xᵀu run per
        block, and the sums over examples (Xᵀu, the risk, the line search's sums over
        kinks) are combined by XLA's collectives (all-reduce). The results equal the
        unsharded ones up to the rounding of the sums' order. Across hosts, call
        `jax.distributed.initialize` first and give a mesh over `jax.devices()` (every
        process builds the same problem; see the guide).

        Args:
            mesh: a `jax.sharding.Mesh`, e.g. ``jax.make_mesh((jax.device_count(),),
                ("rows",))``.
            axis: the mesh axis to split the rows over (default: its only axis).

        Raises:
            ValueError: an unknown axis, or a number of examples that the axis's size
                does not divide (drop or repeat rows to a multiple).

        Example:
            >>> import jax, nsjax
            >>> mesh = jax.make_mesh((jax.device_count(),), ("rows",))
            >>> X, y = nsjax.datasets.breast_cancer()
            >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-2),
            ...                      X[:568], y[:568]).shard(mesh)
            >>> sol = nsjax.solve(prob)  # as on one device
            >>> prob.X.dense.sharding.spec == jax.sharding.PartitionSpec("rows")
            True
        """
        from jax.sharding import NamedSharding, PartitionSpec

        if not isinstance(mesh, jax.sharding.Mesh):
            raise TypeError(f"mesh must be a jax.sharding.Mesh (jax.make_mesh(...)); got "
                            f"{type(mesh).__name__}.")
        if axis is None:
            if len(mesh.axis_names) != 1:
                raise ValueError(f"the mesh has axes {mesh.axis_names}; name the one to "
                                 "split the rows over with axis=.")
            axis = mesh.axis_names[0]
        if axis not in mesh.axis_names:
            raise ValueError(f"axis {axis!r} is not an axis of the mesh "
                             f"{mesh.axis_names}.")
        n, parts = self.X.shape[0], mesh.shape[axis]
        if n % parts:
            raise ValueError(f"{n} examples do not split into {parts} equal blocks over "
                             f"mesh axis {axis!r}: drop or repeat rows to a multiple of "
                             f"{parts}.")
        if self.X.blocks not in (1, parts):
            raise ValueError(f"X is already cut into {self.X.blocks} blocks of rows; shard "
                             "the unsharded problem.")
        # XLA chooses the layout of every intermediate (JAX's "auto" axes), whatever the
        # axis types of the caller's mesh: with explicit axes (`jax.make_mesh`'s default),
        # sharding is part of each array's type and a sort over examples is refused.
        auto = jax.sharding.Mesh(mesh.devices, mesh.axis_names)
        rows, whole = NamedSharding(auto, PartitionSpec(axis)), NamedSharding(
            auto, PartitionSpec())

        def place(x, by_rows):
            # From the host: across processes, each one places its own devices' blocks.
            # (A traced leaf, e.g. λ under the caller's jit or grad, is placed as it is.)
            return jax.device_put(x if is_traced(x) else np.asarray(x),
                                  rows if by_rows else whole)

        # Every array leaf with one row per example (X, y, sample weights) by rows; sparse
        # X cut into one block of rows per device, every array of its layout by block.
        X = self.X.split_rows(parts)
        X = jax.tree_util.tree_map(lambda x: place(x, True), X)
        loss, y = jax.tree_util.tree_map(
            lambda x: place(x, jnp.ndim(x) >= 1 and jnp.shape(x)[0] == n), (self.loss, self.y))
        reg = jax.tree_util.tree_map(lambda x: place(x, False), self.reg)
        return Problem.tree_unflatten((self.classes, self.num_outputs, self.bias,
                                       self.node_types), (loss, reg, X, y))

    # -- shapes -----------------------------------------------------------------------
    @property
    def w_shape(self) -> tuple:
        """(d,) for one score per example, (d, K) for K scores per example; one more row
        (the bias) with ``bias=True``."""
        d = self.X.shape[1] + self.bias
        return (d,) if self.num_outputs is None else (d, self.num_outputs)

    @property
    def weighted(self) -> bool:
        """Whether the examples carry weights (``sample_weight``)."""
        return self.loss.weights is not None

    @property
    def strength(self):
        """The regularizer's strength, the one `sweep` varies and `with_strength` replaces
        (its field `Regularizer.strength_name`: λ of `L2`, μ of `L1` and `ElasticNet`)."""
        return self.reg.strength

    @property
    def lam(self):
        """λ of the λ/2‖w‖² part of the regularizer (`L2`'s and `ElasticNet`'s ``lam``; 0
        where there is none)."""
        return self.reg.l2_weight()

    @property
    def mu(self):
        """μ of the μ‖w‖₁ part of the regularizer (`L1`'s and `ElasticNet`'s ``mu``; 0
        where there is none)."""
        return self.reg.l1_weight()

    @property
    def dtype(self):
        """The float dtype every array of the problem uses (X's)."""
        return self.X.dtype

    def zeros(self):
        """The zero weights, shape `w_shape`."""
        return jnp.zeros(self.w_shape, self.dtype)

    def start(self):
        """The default first point of a solve: zero, or the regularizer's own start where
        zero is outside its domain (`nsjax.regularizers.Entropy`: the uniform weights).
        Built on the host unless the problem is traced (an eager ``jnp.zeros`` compiles a
        program for every new shape)."""
        start = getattr(self.reg, "start", None)
        if start is None:
            return self.zeros()
        if any(is_traced(x) for x in jax.tree_util.tree_leaves(self)):
            return start(self.w_shape, self.dtype)
        return to_device(start(self.w_shape, self.dtype, np))

    @property
    def coefficient_reg(self):
        """The regularizer of the coefficients: `reg` itself, or with a bias the one that
        `Unpenalized` wraps (the bias, w's last row, is not regularized)."""
        return self.reg.inner if self.bias else self.reg

    def split_bias(self, w):
        """(coefficients, bias) of weights of shape `w_shape`: (w[:-1], w[-1]) with a bias,
        (w, 0) without."""
        if self.bias:
            return w[:-1], w[-1]
        return w, jnp.zeros_like(w[0])

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
        return self.loss.provides("dual_certificate")

    @property
    def has_conjugate(self) -> bool:
        """Whether the loss gives R*, so that `dual_value` takes any dual point u."""
        return self.loss.provides("conjugate")

    @property
    def quadratic_regularizer(self) -> bool:
        """Whether Ω = ½‖w‖², so that w = −Xᵀu/λ for a dual point u (bundle methods)."""
        return self.reg.quadratic

    def scores(self, w):
        """X w (+ b with a bias)."""
        if self.bias:
            return self.X.mv(w[:-1]) + w[-1]
        return self.X.mv(w)

    def rmv(self, u):
        """Xᵀ u: a score-space vector (a dual point, a score subgradient) in weight space
        (with a bias, Σᵢ uᵢ appended: the bias's column of ones)."""
        if self.bias:
            return jnp.concatenate([self.X.rmv(u), jnp.sum(u, axis=0, keepdims=True)])
        return self.X.rmv(u)

    def value(self, w, S=None):
        """J(w), from its scores S = X w where given (else one product with X)."""
        S = self.scores(w) if S is None else S
        return self.reg.value(w) + self.loss.risk(S, self.y)

    def objective(self, w):
        """J(w) (computes the scores); w may be any array (numpy included). One compiled
        program per problem kind and shape (eagerly, each operation would compile)."""
        w = jnp.asarray(w, self.dtype)
        return _objective_jit(self.without_classes(), w)

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
        """The restriction of J to w + η p, η ≥ 0, as a `Line` (Yu et al. 2010, eqs. 25, 33):
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
        """J(w) and the cutting plane of R at w (Smola et al. 2007, eq. 3): (J(w), a, b) with
        a = Xᵀu, u ∈ ∂R(S), so R(v) ≥ ⟨a, v⟩ + b for all v; b as `dual_cut` gives it.

        (Not b = R(w) − ⟨a, w⟩, eq. 3 as written: the losses decide kinks within
        `nsjax.losses.base.active_tol`, so u lies in ∂R only up to that tolerance, and
        a margin 3e-10 off its hinge then raised the plane above R elsewhere by ~1e-11, and
        a bundle's certified lower bound above J*. −R*(u) holds for every u. A loss
        without R* gives its plane's exact intercept where it can (``score_cut``: the
        max-affine losses), else R(S) − ⟨u, S⟩, exact to rounding where u comes from an
        exact maximizer (the chains, F1).)"""
        value = self.reg.value(w) + self.loss.risk(S, self.y)
        if self.loss.provides("score_cut"):  # losses without R* (`nsjax.losses.base`)
            u, b = self.loss.score_cut(S, self.y)
            return value, self.rmv(u), b
        u = self.loss.dscores(S, self.y)
        a, b = self.dual_cut(u, S, self.rmv(u))
        return value, a, b

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

    # -- the split J = f + μ‖·‖₁ of the orthant-wise L1 methods (OWL-QN, OBA) -----------
    @property
    def smooth_loss(self) -> bool:
        """Whether R is differentiable, so that f = R(X·) + the regularizer's smooth part is."""
        return self.loss.smooth

    def value_change(self, w, S, x, Sx):
        """J(x) − J(w) from the scores S = X w, Sx = X x, computed term by term where the
        loss and regularizer know how (``risk_change``, ``value_change``), so that
        decreases far below J's rounding are still resolved."""
        if self.loss.provides("risk_change"):
            risk = self.loss.risk_change(S, Sx, self.y)
        else:
            risk = self.loss.risk(Sx, self.y) - self.loss.risk(S, self.y)
        return risk + self.reg.value_change(w, x)

    def smooth_value(self, w, S):
        """f(w) = R(S) + the smooth part of λΩ, from the scores S = X w."""
        return self.loss.risk(S, self.y) + self.reg.smooth_value(w)

    def smooth_grad(self, w, S):
        """(∇f(w), u) with u = ∇R(S): ∇f = Xᵀu + ∇(smooth part of λΩ)."""
        u = self.loss.dscores(S, self.y)
        return self.rmv(u) + self.reg.smooth_grad(w), u

    def smooth_dual_value(self, w, grad, u):
        """`dual_value` of u = ∇R(Xw) given ∇f(w) (``grad``): Xᵀu = ∇f − the regularizer's
        smooth gradient, so the bound costs no product with X (the L1 methods' gap)."""
        return self.dual_value(u, Xtu=grad - self.reg.smooth_grad(w))

    def curvature(self, S):
        """The score-space Hessian of R as something `hvp` takes: its diagonal where the
        loss gives it (`curvature`), else S itself (differentiated in `hvp`)."""
        if self.loss.provides("curvature"):
            return self.loss.curvature(S, self.y)
        return S

    def hvp(self, curvature, v):
        """∇²f(w) v = Xᵀ ∇²R(S) X v + the smooth part's Hessian times v (two products with
        X), with ``curvature`` from `curvature` (Xᵀ D X v for the logistic and squared
        losses; `jax.jvp` of ``dscores`` otherwise)."""
        dS = self.scores(v)
        if self.loss.provides("curvature"):
            HdS = curvature * dS
        else:
            HdS = jax.jvp(lambda s: self.loss.dscores(s, self.y), (curvature,), (dS,))[1]
        return self.rmv(HdS) + self.reg.smooth_hvp(v)

    def hessian_diagonal(self, curvature):
        """diag ∇²f(w) = (X∘X)ᵀ D + the smooth part's diagonal (one pass over X), where the
        loss gives its curvature D (`curvature`); None otherwise."""
        if not self.loss.provides("curvature"):
            return None
        diag = self.X.sq_rmv(curvature)
        if self.bias:
            diag = jnp.concatenate([diag, jnp.sum(curvature, axis=0, keepdims=True)])
        return diag + self.reg.smooth_hvp(jnp.ones_like(diag))

    def dual_value(self, u, *, S=None, Xtu=None, centered=False):
        """A lower bound on min J from a score-space dual point u.

        Fenchel duality: ``D(u) = −R*(u) − (λΩ)*(−Xᵀu) ≤ J*`` for every u. Where the loss has
        a conjugate and the regularizer an L1 part, u is scaled by the largest s ≤ 1 with
        ‖s Xᵀu‖∞ ≤ μ (`Regularizer.feasible_scale`, ``dual_points``). Where the loss
        gives no conjugate, u must lie in ∂R(S) (as every aggregated subgradient of
        direction finding does) and S must be given: then R*(u) = ⟨u, S⟩ − R(S). Where
        R*(s u) = s R*(u) on the dual box (the hinge), the best scalar s is taken at no
        extra cost (`Regularizer.scaled_dual`; docs/design.md).

        With a bias, u is first projected onto Σᵢ uᵢ = 0 within R*'s domain (the loss's
        ``center_dual``; one more product with Xᵀ), without which the bound is −inf.

        Args:
            u: the dual point, shape of the scores.
            S: scores at which u is a subgradient (needed without a loss conjugate).
            Xtu: Xᵀu where already known; else one product with Xᵀ.
            centered: with a bias, whether u is already on Σᵢ uᵢ = 0 within R*'s domain
                (then it is not projected again: one projection less to compile and run).
        """
        if self.bias:
            # The bias row of the conjugate is then 0 up to rounding: bound it with the
            # inner regularizer, as the problem without the bias row would.
            if not centered:
                u = self.loss.center_dual(u, self.y)
            parts = (self.loss, self.reg.inner, self.X)
            inner = Problem.tree_unflatten(
                (self.classes, self.num_outputs, False, node_types(parts)), (*parts, self.y))
            return inner.dual_value(u, S=S)
        Xtu = self.rmv(u) if Xtu is None else Xtu
        if self.loss.provides("conjugate"):
            # Also s u, scaled into the box where the regularizer's conjugate is finite or
            # flat (‖s Xᵀu‖∞ ≤ μ for L1 and the elastic net; s = 1 for L2): the usual
            # scaling of a smooth loss's gradient into the dual-feasible set.
            bounds = []
            if self.reg.dual_points in ("scaled", "both"):
                s = self.reg.feasible_scale(-Xtu)
                bounds.append(self._dual_value(s * u, s * Xtu, S))
            if self.reg.dual_points in ("as is", "both"):
                bounds.append(self._dual_value(u, Xtu, S))
            return functools.reduce(jnp.fmax, bounds)
        if S is None:
            raise ValueError(f"{type(self.loss).__name__} has no conjugate: dual_value needs "
                             "the scores S at which u is a subgradient.")
        return self._dual_value(u, Xtu, S)

    def _dual_value(self, u, Xtu, S):
        """D(u), improved by the best scalar multiple where the loss allows it."""
        if self.loss.provides("conjugate"):
            rstar = self.loss.conjugate(u, self.y)
        else:
            rstar = jnp.vdot(u, S) - self.loss.risk(S, self.y)
        base = -rstar - self.reg.conjugate(-Xtu)
        if not self.loss.provides("dual_scale_limit"):
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


def node_types(tree) -> tuple:
    """The type of every node of ``tree``'s pytree structure, nested as the tree is.

    Carried in `Problem`'s static data because JAX (seen in 0.10.2) compares the tree
    structures of two classes registered with `jax.tree_util.register_dataclass` as equal
    when their fields match, though their hashes differ: `Hinge()` and `Logistic()` (no
    fields), or `L1(μ)` and `L2(λ)` (one). A compiled program is looked up by its
    arguments' structure, so on a hash collision in that cache (depending on the
    process's hash values, hence flaky) a problem with the logistic loss ran the program
    compiled for the hinge. With the types in the static data, such problems never
    compare equal.
    """
    def walk(treedef):
        data = treedef.node_data()
        return (None if data is None else data[0],
                tuple(walk(child) for child in treedef.children()))

    return walk(jax.tree_util.tree_structure(tree))


def _pad_lines(x, r, fill):
    return jnp.pad(x, ((0, 0), (0, r - x.shape[1])), constant_values=fill)


@jax.jit
def _objective_jit(problem, w):
    """`Problem.objective`'s program: the problem is an argument, never closed over."""
    return problem.value(w)

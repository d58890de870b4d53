"""scikit-learn estimators on nsjax's solvers: the classifiers `LinearSVC` and
`LogisticRegression`, the regressors `ElasticNet` and `Lasso`. They need scikit-learn, an
optional dependency: ``pip install "nsjax[sklearn]"``.

They take the parameters a scikit-learn user knows, where they mean the same thing (``C``,
``l1_ratio``, ``fit_intercept``, ``intercept_scaling``, ``max_iter``, ``warm_start``,
``multi_class``),
and nsjax's own: ``lam`` (the strength λ itself, instead of ``C``), ``solver`` (an nsjax
solver or its name) and ``dtype``. They give ``coef_``, ``intercept_``, ``classes_``,
``n_iter_``, ``duality_gap_`` (the certified bound on J(w) − min J) and ``history_``.

How the parameters map onto nsjax's problem J(w) = λΩ(w) + (1/n) Σᵢ ℓ(xᵢᵀw + b, yᵢ):

- ``C``: scikit-learn minimizes ½‖w‖² + C Σᵢ ℓᵢ; divided by C n that is λ = 1/(C n). With
  an L1 share ρ = ``l1_ratio`` (`LogisticRegression`): μ‖w‖₁ + λ/2‖w‖² with μ = ρ/(C n) and
  λ = (1 − ρ)/(C n), scikit-learn's weighting. ``lam`` overrides ``C`` (it is 1/(C n)).
- ``tol``: not scikit-learn's (a change in w or a dual step): the run stops when its
  certified gap is ≤ tol · max(1, |J|), a guarantee on the objective (`nsjax.solve`). The
  default 1e-4 is within float32's reach (JAX's default precision; float64 needs
  ``jax.config.update("jax_enable_x64", True)``).
- ``fit_intercept``: an unregularized intercept b (`nsjax.Problem`'s ``bias``) for one score
  per example (binary and one-vs-rest problems): the intercept of textbook SVMs and of
  scikit-learn's ``LogisticRegression``. LIBLINEAR (scikit-learn's ``LinearSVC``) instead
  appends a constant column and regularizes its weight; so do these estimators where
  nsjax has no unregularized bias for the problem: the Crammer–Singer loss, and an L1 part
  (the orthant-wise solvers, whose iterates have exact zeros, take no bias; subLBFGS does,
  but its solutions have no exact zeros). ``intercept_scaling`` is that column's value.
- Multiclass: `LinearSVC` solves the Crammer–Singer problem by default (one problem, its
  own certified gap) or one-vs-rest; `LogisticRegression` is one-vs-rest (nsjax has no
  multinomial loss), the probabilities normalized as scikit-learn's one-vs-rest does.

- ``sample_weight`` (in ``fit``) and ``class_weight``: per-example weights cᵢ in nsjax's
  risk (1/n) Σᵢ cᵢ ℓᵢ (`nsjax.Problem`'s ``sample_weight``), scikit-learn's C Σᵢ cᵢ ℓᵢ
  divided by C n. The regressors normalize ``sample_weight`` to sum to n first, as
  scikit-learn's ``ElasticNet`` does.

A fit that does not reach ``tol`` issues scikit-learn's ``ConvergenceWarning``.

Shapes: nsjax compiles one solve per data shape (seconds each). A fit pads X with zero rows
(weight 0) and zero columns to one of a few shapes, at most 1/8 larger (`_LinearModel._pad`),
so that the folds of a cross-validation and the fits of a grid search share one compiled
solve; the objective and ``coef_`` are those of X as given.

References: see docs/references.md.

Example:
    >>> import nsjax.sklearn, nsjax
    >>> X, y = nsjax.datasets.breast_cancer()
    >>> clf = nsjax.sklearn.LinearSVC(C=0.1).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9), clf.coef_.shape, clf.duality_gap_ <= 1e-4 * 2
    (True, (1, 30), True)
"""

from __future__ import annotations

import numbers
import warnings

import jax
import numpy as np
import scipy.sparse as sp
from scipy.special import expit

try:  # scikit-learn is an optional dependency: the sklearn extra
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.utils.class_weight import compute_class_weight
    from sklearn.utils.multiclass import check_classification_targets, type_of_target
    from sklearn.utils.validation import check_is_fitted, validate_data
except ModuleNotFoundError as error:
    from nsjax._optional import is_missing_sklearn, missing_sklearn

    if not is_missing_sklearn(error):
        raise
    raise missing_sklearn("nsjax.sklearn (the scikit-learn estimators)") from error

import nsjax
from nsjax import losses, regularizers
from nsjax._checks import MAX_STEPS, held_strength, max_abs_entry, real_array
from nsjax.data import round_up
from nsjax.loop import failure_message
from nsjax.results import RESULTS
from nsjax.solvers import SOLVERS, solver_from_name

__all__ = ["ElasticNet", "Lasso", "LinearSVC", "LogisticRegression", "SOLVERS", "solver_from_name"]

#: Dense X with fewer entries than this is padded to a shape from a small set (`round_up`);
#: larger X is used as given (a copy that size costs more than the compile it saves).
PAD_LIMIT = 2**24
#: The fewest rows and columns a padded X has: all smaller data share the program of this
#: shape. Raise them where many small fits of different shapes run (a test suite, a grid
#: over small subsets), e.g. ``nsjax.sklearn.PAD_LEAST = (512, 32)``.
PAD_LEAST = (64, 16)


def _positive(value, name, example):
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or not np.isfinite(value) or value <= 0):
        raise ValueError(f"{name} must be a finite number > 0 (e.g. {example}); got {value!r}.")
    return float(value)


def _l1_ratio(rho):
    if (isinstance(rho, (bool, np.bool_)) or not isinstance(rho, numbers.Real)
            or not 0 <= rho <= 1):
        raise ValueError(f"l1_ratio must be in [0, 1] (0: L2, 1: L1); got {rho!r}.")


def _sample_weights(sample_weight, n):
    """``sample_weight`` as a float64 (n,) array of finite weights ≥ 0, not all 0 (None
    stays None)."""
    if sample_weight is None:
        return None
    weights = np.asarray(real_array(sample_weight, "sample_weight", "real numbers"), np.float64)
    if weights.ndim == 0:
        weights = np.full(n, float(weights))
    if weights.shape != (n,):
        raise ValueError(f"sample_weight.shape == {weights.shape}, expected ({n},): one weight "
                         "per sample.")
    if not (np.all(np.isfinite(weights)) and np.all(weights >= 0)):
        bad = np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))[0]
        raise ValueError(f"sample_weight must be finite and >= 0; got {weights[bad]!r} at "
                         f"index {bad}.")
    if not weights.max() > 0:
        raise ValueError("sample_weight is zero for every sample: nothing to fit; give some "
                         "samples a positive weight.")
    return weights


def _penalty(strength, rho):
    """scikit-learn's split of a strength by the L1 share ρ: ρ s‖w‖₁ + (1 − ρ) s/2 ‖w‖²."""
    if rho == 0:
        return regularizers.L2(strength)
    if rho == 1:
        return regularizers.L1(strength)
    return regularizers.ElasticNet(mu=rho * strength, lam=(1 - rho) * strength)


class _LinearModel(BaseEstimator):
    """What every estimator shares: the dtype, the common parameters' checks and the solves
    (one `nsjax.solve` per problem, warm-started where asked, one scikit-learn warning for
    the problems that did not reach tol)."""

    def _dtype(self):
        if self.dtype is not None:
            try:
                dt = np.dtype(self.dtype)
            except TypeError:
                dt = None
            if dt not in (np.float32, np.float64):
                raise ValueError(f"dtype must be float32, float64 or None; got {self.dtype!r}.")
            if dt == np.float64 and not jax.config.jax_enable_x64:
                raise ValueError('dtype float64 needs jax.config.update("jax_enable_x64", '
                                 'True) before any JAX computation; or use dtype=None.')
            return dt
        return np.dtype(np.float64 if jax.config.jax_enable_x64 else np.float32)

    def _check_params(self):
        for name in ("fit_intercept", "warm_start"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False; got {getattr(self, name)!r}.")
        if (isinstance(self.max_iter, (bool, np.bool_))
                or not isinstance(self.max_iter, numbers.Integral)
                or not 1 <= self.max_iter <= MAX_STEPS):
            raise ValueError(f"max_iter must be an int from 1 to {MAX_STEPS:,} (e.g. "
                             f"max_iter=1000); got {self.max_iter!r}.")
        tol = self.tol
        if (isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real)
                or not (np.isfinite(tol) and tol >= 0)):
            raise ValueError(f"tol must be a finite number >= 0 (a relative certified gap, "
                             f"e.g. 1e-4); got {tol!r}.")
        self._dtype()
        return solver_from_name(self.solver)

    def _check_X(self, X, dtype, rows, cols):
        """X as the problem will hold it: finite in ``dtype`` and within `max_abs_entry`
        for the padded shape (rows, cols); named as given."""
        values = X.data if sp.issparse(X) else X
        top = float(np.max(np.abs(values), initial=0.0))
        limit = max_abs_entry(dtype, (rows, cols))
        if not top <= limit:
            raise ValueError(f"X has entries up to {top:.3g} in magnitude; {type(self).__name__} "
                             f"in {np.dtype(dtype).name} accepts at most {limit:.3g} for "
                             f"{X.shape[0]} x {X.shape[1]} data, beyond which products of X "
                             "with itself overflow. Rescale X (e.g. standardize its columns).")

    def _check_total_weight(self, weights, dtype):
        """The weights' sum held in ``dtype`` (the risk sums them): finite."""
        total = 0.0 if weights is None else np.sum(weights, dtype=np.float64)
        if not total <= np.finfo(dtype).max:
            raise ValueError(
                f"sample_weight (times class_weight) sums to {total:.3g}, beyond "
                f"{np.dtype(dtype).name}'s range: divide the weights by a constant s (and "
                "multiply C by s: the same model).")

    def _pad(self, X, solver, weights, dtype):
        """(X, weights, rows added): X padded with zero rows and columns to a shape from a
        small set (`round_up`: at least `PAD_LEAST` rows and columns, at most 1/8 more
        of each), and weights that leave the problem as it was.

        nsjax compiles one solve per shape, seconds each, so the folds of a cross-validation,
        the fits of a grid search and the refit on all rows would each compile their own;
        padded, nearby shapes share one program. A padded row weighs 0 and the others
        cᵢ n'/n, so the risk (1/n') Σᵢ cᵢ' ℓᵢ over n' rows is the given (1/n) Σᵢ cᵢ ℓᵢ; a
        zero column's weight is 0 at the optimum of every penalty here, and coef_ leaves
        it out. Not done for dense X of `PAD_LIMIT` entries or more, nor for a solver
        that takes no sample weights (the Nesterov methods).

        X and the weights are first checked as the problem will hold them in ``dtype``
        (named as given, not as padded)."""
        n, d = X.shape
        if ((solver is not None and not solver.takes.sample_weight)
                or (not sp.issparse(X) and X.size >= PAD_LIMIT)):
            self._check_X(X, dtype, n, d + 1)  # (+1: a constant column for the intercept)
            self._check_total_weight(weights, dtype)
            return X, weights, 0
        rows, cols = round_up(n, PAD_LEAST[0]), round_up(d, PAD_LEAST[1])
        self._check_X(X, dtype, rows, cols + 1)
        with np.errstate(over="ignore"):  # (an overflow is what the check reports)
            self._check_total_weight(None if weights is None else weights * (rows / n), dtype)
        if sp.issparse(X):  # empty rows and columns: the same entries, a longer indptr
            indptr = np.concatenate([X.indptr, np.full(rows - n, X.indptr[-1])])
            X = sp.csr_matrix((X.data, X.indices, indptr), shape=(rows, cols))
        else:
            X = np.pad(X, ((0, rows - n), (0, cols - d)))
        c = np.ones(n) if weights is None else weights
        return X, np.concatenate([c * (rows / n), np.zeros(rows - n)]), rows - n

    def _solve(self, problems, solver, names=None):
        """Solve each problem (from the previous fit's weights with ``warm_start``); warn
        once, with scikit-learn's `ConvergenceWarning`, if any ended above tol."""
        starts = self._warm_starts(problems)
        with warnings.catch_warnings():  # re-issued below as scikit-learn's warning
            warnings.simplefilter("ignore", nsjax.ConvergenceWarning)
            sols = [nsjax.solve(p, solver, w0=w0, max_steps=int(self.max_iter),
                                tol=float(self.tol))
                    for p, w0 in zip(problems, starts, strict=True)]
        for p, s in zip(problems, sols, strict=True):
            if not np.isfinite(float(s.value)):  # no finite point at all: nothing to return
                raise ValueError(failure_message(type(self).__name__, s, float(self.tol),
                                                 p.dtype))
        bad = [(k, s) for k, s in enumerate(sols) if s.result != RESULTS.successful]
        if bad:
            k, s = bad[0]
            which = "" if len(sols) == 1 else f" ({names[k]}: one of {len(bad)})"
            warnings.warn(f"{type(self).__name__} did not reach tol={self.tol:g}{which}: "
                          f"{s.result.name} after {int(s.num_steps)} steps, certified gap "
                          f"{float(s.gap):.2e}. {s.result.message} Increase max_iter, or "
                          "loosen tol.", ConvergenceWarning, stacklevel=3)
        return sols

    def _warm_starts(self, problems):
        """The previous fit's weights in each problem's layout (``warm_start``), or None."""
        if not (self.warm_start and hasattr(self, "coef_")):
            return [None] * len(problems)
        w, d = self._weights(), self.n_features_in_
        if len(w) != len(problems) or np.shape(self.coef_)[-1] != d:
            return [None] * len(problems)  # another shape: a cold start
        # The zero weights of the padded columns (`_pad`) after the coefficients.
        w = [np.concatenate([a[:d], np.zeros((max(p.w_shape[0] - len(a), 0),) + a.shape[1:]),
                             a[d:]]) for a, p in zip(w, problems, strict=True)]
        if any(np.shape(a) != p.w_shape for a, p in zip(w, problems, strict=True)):
            return [None] * len(problems)
        return w

    def _set_solution_fields(self, sols):
        """n_iter_, duality_gap_, objective_ and history_ (arrays over the problems)."""
        self.n_iter_ = np.array([int(s.num_steps) for s in sols])
        self.duality_gap_ = np.array([float(s.gap) for s in sols])
        self.objective_ = np.array([float(s.value) for s in sols])
        self.history_ = [{name: np.asarray(getattr(s.history, name))[:int(s.num_steps)]
                          for name in s.history._fields} for s in sols]
        if len(sols) == 1:
            self.duality_gap_, self.objective_ = float(self.duality_gap_[0]), float(
                self.objective_[0])
            self.history_ = self.history_[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


class _Multilabel:
    """Tags for the classifiers, which take multilabel (0/1 indicator) targets."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.classifier_tags.multi_label = True
        return tags


class _LinearClassifier(_Multilabel, ClassifierMixin, _LinearModel):
    """What both classifiers share: input checks, the problems per class, the fitted
    attributes and the predictions. Subclasses give `_loss`, `_regularizer` and
    `_one_problem_for_all_classes`."""

    def _strength(self, n, dtype):
        """The strength of the problem: ``lam``, else 1 / (C n), as held in ``dtype``."""
        if self.lam is not None:
            lam = _positive(self.lam, "lam", "lam=1e-3")
            return held_strength(lam, dtype, "lam", "rescale lam.")
        C = _positive(self.C, "C", "C=1.0")
        with np.errstate(over="ignore", under="ignore"):
            lam = (1.0 / C) / n
        return held_strength(lam, dtype, f"C={self.C!r} gives λ = 1/(C·n_samples)",
                              "choose C nearer 1 (or standardize X and rescale C).")

    def fit(self, X, y, sample_weight=None):
        """Fit on X (n, d), numpy or scipy.sparse, and labels y (n,) of any two or more
        values, each example weighted by ``sample_weight`` (n,) times its class's
        ``class_weight`` where given (scikit-learn's C Σᵢ cᵢ ℓᵢ). Returns self."""
        solver = self._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             multi_output=True)
        check_classification_targets(y)
        self._multilabel = type_of_target(y) == "multilabel-indicator"
        if self._multilabel:
            return self._fit_multilabel(X, y, sample_weight, solver)
        if np.ndim(y) == 2 and np.shape(y)[1] != 1:
            raise ValueError(f"y of shape {np.shape(y)} must be one label per sample, or a 0/1 "
                             "indicator matrix (multilabel); other multi-output targets are "
                             "not supported.")
        y = np.ravel(y)
        self.classes_, index = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError(f"{type(self).__name__} needs samples of at least 2 classes in "
                             f"y; got one class: {self.classes_[0]!r}.")
        dtype, n = self._dtype(), X.shape[0]
        lam = self._strength(n, dtype)
        weights = _sample_weights(sample_weight, n)
        if self.class_weight is not None:
            per_class = compute_class_weight(self.class_weight, classes=self.classes_, y=y)
            bad = ~(np.isfinite(per_class) & (per_class >= 0))
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                raise ValueError(f"class_weight must give every class a finite weight >= 0; "
                                 f"got {per_class[k]!r} for class {self.classes_[k]!r}.")
            weights = per_class[index] * (1.0 if weights is None else weights)
        X, weights, extra = self._pad(X, solver, weights, dtype)
        index = np.pad(index, (0, extra))
        one = self.classes_.size == 2 or self._one_problem_for_all_classes()
        problems = ([self._problem(X, index, lam, dtype, weights)] if one else
                    [self._problem(X, (index == k).astype(np.int32), lam, dtype, weights)
                     for k in range(self.classes_.size)])
        sols = self._solve(problems, solver, [f"class {c!r}" for c in self.classes_])
        self._set_fitted(problems, sols)
        return self

    def _fit_multilabel(self, X, Y, sample_weight, solver):
        """Multilabel targets (an (n, K) 0/1 indicator): one binary problem per label, as
        scikit-learn's one-vs-rest does; `predict` gives the indicator of positive scores.
        (The multilabel hinge of Yu et al. (2010), eq. 51, scores label *rankings*: it is invariant
        to a shift of all of an example's scores, so it has no threshold to predict a set
        with; it is `nsjax.losses.MultilabelHinge` for nsjax.Problem.)"""
        if self.class_weight is not None:
            raise ValueError("class_weight is not supported with multilabel targets; weigh "
                             "examples with sample_weight instead.")
        Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y) != 0
        dtype, n = self._dtype(), X.shape[0]
        lam, weights = self._strength(n, dtype), _sample_weights(sample_weight, n)
        X, weights, extra = self._pad(X, solver, weights, dtype)
        Y = np.pad(Y, ((0, extra), (0, 0)))
        self.classes_ = np.arange(Y.shape[1])
        problems = [self._problem(X, Y[:, k].astype(np.int32), lam, dtype, weights)
                    for k in range(Y.shape[1])]
        sols = self._solve(problems, solver, [f"label {k}" for k in self.classes_])
        self._set_fitted(problems, sols)
        return self

    def _one_problem_for_all_classes(self):
        return False

    def _intercept_column(self):
        """The constant column's value where the intercept is a regularized weight (the
        Crammer–Singer loss), else None (an unregularized bias, or none)."""
        return None

    def _problem(self, X, labels, lam, dtype, weights=None):
        """The nsjax problem for labels 0..K−1 (binary: 0/1), examples weighted by
        ``weights`` where given."""
        K = int(labels.max()) + 1
        scaling = self._intercept_column() if self.fit_intercept else None
        if scaling is not None:
            column = np.full((X.shape[0], 1), scaling, X.dtype)
            X = sp.hstack([X, column], format="csr") if sp.issparse(X) else np.hstack([X, column])
        bias = self.fit_intercept and scaling is None
        return nsjax.Problem(self._loss(K), self._regularizer(lam), X, labels,
                             classes=tuple(range(K)), dtype=dtype, bias=bias,
                             sample_weight=weights)

    def _intercept_unit(self):
        """What the last weight is multiplied by to give the intercept: the constant
        column's value, or 1 (an unregularized bias)."""
        scaling = self._intercept_column()
        return 1.0 if scaling is None else scaling

    def _weights(self):
        """coef_ and intercept_ back in the problems' layout (one array per problem; padded
        columns left out)."""
        coef, b = self.coef_, self.intercept_
        rows = [coef.T] if coef.shape[0] > 1 and self._one_problem_for_all_classes() else (
            list(coef))  # one (d, K) problem, or one (d,) problem per row
        if not self.fit_intercept:
            return rows
        unit = self._intercept_unit()
        if len(rows) == 1 and rows[0].ndim == 2:
            return [np.vstack([rows[0], (b / unit)[None, :]])]
        return [np.append(c, bk / unit) for c, bk in zip(rows, b, strict=True)]

    def _set_fitted(self, problems, sols):
        w = [np.asarray(s.w, np.float64) for s in sols]
        unit = self._intercept_unit() if self.fit_intercept else 0.0
        d = self.n_features_in_  # the columns after them are padding (`_pad`)
        if len(w) == 1 and w[0].ndim == 2:  # one (d [+ 1], K) problem: Crammer–Singer
            W = w[0]
            self.coef_ = W[:d].T
            self.intercept_ = W[-1] * unit if self.fit_intercept else np.zeros(W.shape[1])
        else:
            self.coef_ = np.stack([x[:d] for x in w])
            self.intercept_ = np.array([x[-1] * unit if self.fit_intercept else 0.0
                                        for x in w])
        self._set_solution_fields(sols)

    def decision_function(self, X):
        """Scores X coef_ᵀ + intercept_: shape (n,) for two classes (positive: classes_[1]),
        else (n, K)."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, accept_sparse="csr", reset=False,
                          dtype=[np.float64, np.float32])
        scores = np.asarray(X @ self.coef_.T) + self.intercept_
        return scores.ravel() if scores.shape[1] == 1 else scores

    def predict(self, X):
        """The class of each row: classes_[1] where the score is > 0 (two classes), else
        the class of the largest score; for multilabel targets, the (n, K) 0/1 indicator
        of the positive scores."""
        scores = self.decision_function(X)
        if self._multilabel:
            return (scores.reshape(len(scores), -1) > 0).astype(int)
        index = (scores > 0).astype(int) if scores.ndim == 1 else np.argmax(scores, axis=1)
        return self.classes_[index]


class LinearSVC(_LinearClassifier):
    """A linear SVM with the hinge loss, trained to a certified gap by nsjax.

    Minimizes λ/2 ‖w‖² + (1/n) Σᵢ max(0, 1 − yᵢ(xᵢᵀw + b)) (binary), or the Crammer–Singer
    multiclass hinge (Yu et al. 2010, eq. 35), with λ = 1/(C n): the objective of scikit-learn's
    ``LinearSVC(loss="hinge")`` (its default loss is the squared hinge, which nsjax has not).

    Args:
        C: inverse regularization strength, as in scikit-learn (λ = 1/(C n)).
        lam: λ itself; overrides ``C``.
        multi_class: "crammer_singer" (one problem over all classes, the default) or "ovr"
            (one binary problem per class).
        fit_intercept: fit an intercept (unregularized for two classes and "ovr"; with
            "crammer_singer" a regularized weight on a constant column of value
            ``intercept_scaling``, as LIBLINEAR does for every problem).
        intercept_scaling: that column's value.
        class_weight: None, "balanced" (n / (K · count of the class)) or a dict class →
            weight: each example's weight is its class's (times ``fit``'s
            ``sample_weight``), as in scikit-learn.
        tol: stop at a certified gap ≤ tol · max(1, |J|).
        max_iter: the most solver steps per problem.
        warm_start: start from the previous fit's coefficients (same shapes).
        solver: "auto" (`nsjax.solve`'s default: the Hybrid), a name in `SOLVERS`, or an
            `nsjax.solvers` instance.
        dtype: float32 or float64; default float64 where JAX has x64 enabled, else float32.

    Attributes:
        coef_: (1, d) for two classes, else (K, d). intercept_: (1,) or (K,).
        classes_: the sorted class values.
        n_iter_: solver steps taken (the largest over one-vs-rest problems).
        duality_gap_: the certified bound on J(w) − min J (an array for "ovr").
        objective_: J at the solution. history_: per step J, its best and the gap.

    Example:
        >>> import nsjax, nsjax.sklearn
        >>> X, y = nsjax.datasets.iris()
        >>> clf = nsjax.sklearn.LinearSVC(C=1.0).fit(X, y)
        >>> clf.coef_.shape, bool(clf.score(X, y) > 0.95)
        ((3, 4), True)
    """

    def __init__(self, C=1.0, *, lam=None, multi_class="crammer_singer", fit_intercept=True,
                 intercept_scaling=1.0, class_weight=None, tol=1e-4, max_iter=1000,
                 warm_start=False, solver="auto", dtype=None):
        self.C = C
        self.lam = lam
        self.multi_class = multi_class
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.solver = solver
        self.dtype = dtype

    def _check_params(self):
        if self.multi_class not in ("crammer_singer", "ovr"):
            raise ValueError(f"multi_class must be 'crammer_singer' or 'ovr'; got "
                             f"{self.multi_class!r}.")
        return super()._check_params()

    def _one_problem_for_all_classes(self):
        return self.multi_class == "crammer_singer" and not self._multilabel

    def _loss(self, K):
        return losses.Hinge() if K == 2 else losses.MulticlassHinge()

    def _regularizer(self, lam):
        return regularizers.L2(lam)

    def _intercept_column(self):
        if self.classes_.size > 2 and self._one_problem_for_all_classes():
            return _positive(self.intercept_scaling, "intercept_scaling", "1.0")
        return None

    def _set_fitted(self, problems, sols):
        super()._set_fitted(problems, sols)
        self.n_iter_ = int(np.max(self.n_iter_))


class LogisticRegression(_LinearClassifier):
    """Logistic regression with an L2, L1 or elastic-net penalty, trained to a certified gap.

    Minimizes λΩ(w) + (1/n) Σᵢ log(1 + exp(−yᵢ(xᵢᵀw + b))) with scikit-learn's scaling of
    ``C`` and its penalty choice by ``l1_ratio`` (scikit-learn ≥ 1.8, where ``penalty`` is
    deprecated): ρ = 0 is L2, ρ = 1 is L1, between the elastic net, and ``C=np.inf`` no
    penalty (the optimum may not exist on separable data). Several classes are one-vs-rest.

    Args:
        C: inverse regularization strength, as in scikit-learn.
        l1_ratio: ρ in [0, 1], the L1 share of the penalty.
        lam: the strength 1/(C n) itself (before ρ splits it); overrides ``C``.
        fit_intercept: fit an intercept: unregularized for ρ = 0; with an L1 part a weight
            on a constant column of value ``intercept_scaling``, regularized as LIBLINEAR
            does (so that OBA, whose iterates have exact zeros, solves it).
        intercept_scaling: that column's value.
        class_weight: as for `LinearSVC`.
        tol, max_iter, warm_start, solver, dtype: as for `LinearSVC` (the default solver is
            `nsjax.solve`'s for the problem: OBA with an L1 part).

    Attributes:
        coef_, intercept_, classes_, duality_gap_, objective_, history_: as for `LinearSVC`.
        n_iter_: an array, one entry per problem (as scikit-learn's).

    Example:
        >>> import nsjax, nsjax.sklearn
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> clf = nsjax.sklearn.LogisticRegression(C=0.01, l1_ratio=1.0).fit(X, y)
        >>> int((clf.coef_ != 0).sum()) < 30, clf.predict_proba(X[:2]).shape
        (True, (2, 2))
    """

    def __init__(self, C=1.0, *, l1_ratio=0.0, lam=None, fit_intercept=True,
                 intercept_scaling=1.0, class_weight=None, tol=1e-4, max_iter=1000,
                 warm_start=False, solver="auto", dtype=None):
        self.C = C
        self.l1_ratio = l1_ratio
        self.lam = lam
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.solver = solver
        self.dtype = dtype

    def _check_params(self):
        _l1_ratio(self.l1_ratio)
        return super()._check_params()

    def _loss(self, K):
        return losses.Logistic()

    def _intercept_column(self):
        if self.l1_ratio > 0:
            return _positive(self.intercept_scaling, "intercept_scaling", "1.0")
        return None

    def _strength(self, n, dtype):
        if self.lam is None and self.C == np.inf:
            return 0.0  # no penalty
        return super()._strength(n, dtype)

    def _regularizer(self, lam):
        return _penalty(lam, float(self.l1_ratio))

    def predict_proba(self, X):
        """Class probabilities, columns in the order of classes_: σ(score) for two
        classes; one-vs-rest σ(scores) normalized to sum to 1 otherwise."""
        p = expit(self.decision_function(X))
        if self._multilabel:  # each label's own probability, as one-vs-rest gives
            return p.reshape(len(p), -1)
        if p.ndim == 1:
            return np.column_stack([1.0 - p, p])
        return p / p.sum(axis=1, keepdims=True)

    def predict_log_proba(self, X):
        """The log of `predict_proba`."""
        return np.log(self.predict_proba(X))


class ElasticNet(RegressorMixin, _LinearModel):
    """Least squares with an elastic-net penalty, trained to a certified gap by nsjax.

    Minimizes (1/2n) ‖y − Xw − b‖² + α ρ ‖w‖₁ + α (1 − ρ)/2 ‖w‖², ρ = ``l1_ratio``:
    scikit-learn's ``ElasticNet`` objective (``Lasso`` for ρ = 1), as nsjax's `Squared` loss
    with `L1`, `ElasticNet` or `L2` (ρ = 0). The default solver is `nsjax.solve`'s: OBA,
    whose iterates have exact zeros.

    The intercept is not penalized. On dense X it is fitted as scikit-learn does, by
    centring X and y: the same optimum, and the orthant-wise solvers (which take no bias)
    apply. Centring would densify sparse X, so there the intercept is the problem's
    unregularized bias (`nsjax.Problem`'s ``bias``), solved by subLBFGS: the same
    objective, but its coefficients are near zero rather than exactly zero.

    Args:
        alpha: the penalty's strength α ≥ 0 (0: least squares, where the optimum exists).
        l1_ratio: ρ in [0, 1], the L1 share of the penalty.
        fit_intercept: fit an unpenalized intercept.
        tol: stop at a certified gap ≤ tol · max(1, |J|) (not scikit-learn's dual gap
            scaled by ‖y‖²: a bound on the objective, `nsjax.solve`).
        max_iter, warm_start, solver, dtype: as for `LinearSVC`.

    Attributes:
        coef_: (d,). intercept_: a float. n_iter_: solver steps taken.
        duality_gap_, objective_, history_: as for `LinearSVC`.

    Example:
        >>> import numpy as np, nsjax.sklearn
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(440, 5)); y = X @ [1.0, 0, 0, 2.0, 0] + 3.0
        >>> reg = nsjax.sklearn.ElasticNet(alpha=0.01, l1_ratio=1.0).fit(X, y)
        >>> np.flatnonzero(reg.coef_).tolist(), round(reg.intercept_, 1), reg.score(X, y) > 0.99
        ([0, 3], 3.0, True)
    """

    def __init__(self, alpha=1.0, *, l1_ratio=0.5, fit_intercept=True, tol=1e-4,
                 max_iter=1000, warm_start=False, solver="auto", dtype=None):
        self.alpha = alpha
        self.l1_ratio = l1_ratio
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.solver = solver
        self.dtype = dtype

    def _check_params(self):
        _l1_ratio(self.l1_ratio)
        alpha = self.alpha
        if (isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real)
                or not np.isfinite(alpha) or alpha < 0):
            raise ValueError(f"alpha must be a finite number >= 0 (e.g. alpha=0.1); got "
                             f"{alpha!r}.")
        return super()._check_params()

    def _regularizer(self, dtype):
        alpha = held_strength(float(self.alpha), dtype, "alpha",
                               "rescale alpha (or standardize X and y).")
        return _penalty(alpha, float(self.l1_ratio))

    def fit(self, X, y, sample_weight=None):
        """Fit on X (n, d), numpy or scipy.sparse, and real targets y (n,); examples
        weighted by ``sample_weight`` (n,), normalized to sum to n as scikit-learn's
        ``ElasticNet`` does: (1/2 Σc) Σᵢ cᵢ rᵢ². Returns self."""
        solver = self._check_params()
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=[np.float64, np.float32],
                             y_numeric=True)
        dtype, n = self._dtype(), X.shape[0]
        weights = _sample_weights(sample_weight, n)
        if weights is not None:  # (scaled first: the sum of huge weights overflows)
            weights = weights / weights.max()
            weights = weights * (n / weights.sum())
        center = self.fit_intercept and not sp.issparse(X)
        if center:  # scikit-learn's intercept: the least squares of the centred problem
            self._X_offset = np.average(X, axis=0, weights=weights)
            self._y_offset = np.average(y, weights=weights)
            X, y = X - self._X_offset, y - self._y_offset
        bias = self.fit_intercept and not center
        X, weights, extra = self._pad(X, solver, weights, dtype)
        y = np.pad(y, (0, extra))
        problem = nsjax.Problem(losses.Squared(), self._regularizer(dtype), X, y, dtype=dtype,
                                bias=bias, sample_weight=weights)
        (sol,) = self._solve([problem], solver)
        self._bias = bias  # the layout of the weights (for warm starts)
        w = np.asarray(sol.w, np.float64)
        self.coef_ = w[:self.n_features_in_]  # the rest: padding (`_pad`), the bias
        if center:
            self.intercept_ = float(self._y_offset - self._X_offset @ self.coef_)
        else:
            self.intercept_ = float(w[-1]) if bias else 0.0
        self._set_solution_fields([sol])
        self.n_iter_ = int(self.n_iter_[0])
        return self

    def _weights(self):
        """coef_ (and the bias where the problem has one) in the problem's layout."""
        if self._bias:
            return [np.append(self.coef_, self.intercept_)]
        return [self.coef_]

    def predict(self, X):
        """X coef_ + intercept_."""
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, accept_sparse="csr", reset=False,
                          dtype=[np.float64, np.float32])
        return np.asarray(X @ self.coef_).ravel() + self.intercept_


class Lasso(ElasticNet):
    """`ElasticNet` with ``l1_ratio=1``: (1/2n) ‖y − Xw − b‖² + α ‖w‖₁, scikit-learn's
    ``Lasso`` objective.

    Example:
        >>> import nsjax, nsjax.sklearn
        >>> X, y = nsjax.datasets.diabetes()
        >>> reg = nsjax.sklearn.Lasso(alpha=0.1).fit(X, y)
        >>> int((reg.coef_ != 0).sum()) < X.shape[1]
        True
    """

    def __init__(self, alpha=1.0, *, fit_intercept=True, tol=1e-4, max_iter=1000,
                 warm_start=False, solver="auto", dtype=None):
        super().__init__(alpha=alpha, l1_ratio=1.0, fit_intercept=fit_intercept, tol=tol,
                         max_iter=max_iter, warm_start=warm_start, solver=solver, dtype=dtype)

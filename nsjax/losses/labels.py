"""How losses take their labels: each loss says what it accepts and how it encodes it.

`Loss` (in `base.py`) takes no labels; the mixins here give the binary, multiclass and
multilabel encodings. ``encode_labels(y, n, dtype, classes)`` returns the labels as the
loss computes with them and the original class values:

- binary: any two values, the sorted pair mapped to (−1, +1);
- multiclass: any K ≥ 2 values, mapped to indices 0..K−1 in sorted order;
- multilabel: label sets (list of lists, sparse indicator, dense 0/1) as an (n, K) mask.

With ``classes`` given (the class values, in order), y is encoded by comparison with them
instead of by sorting, which also works on traced labels (under `jax.jit`/`jax.vmap`):
binary and multiclass labels may be the raw values (e.g. 0/1 with ``classes=(0, 1)``, or ±1
with ``classes=(-1, 1)``), multilabel labels an (n, K) 0/1 mask. Shapes are always checked;
values only where they are concrete (a traced label outside ``classes`` counts as the first).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp


def is_traced(x) -> bool:
    """True for a value being traced by jit/vmap/grad (its values are unknown)."""
    return isinstance(x, jax.core.Tracer)


def check_length(y, n, what="entries"):
    """Raise a ValueError unless y has n entries along its first axis."""
    got = jnp.shape(y)[0] if jnp.ndim(y) else None
    if got != n:
        raise ValueError(f"X has {n} rows but y has {got} {what}; they must have the same "
                         "length.")


def _needs(y, loss):
    if y is None:
        raise ValueError(f"{type(loss).__name__} needs labels y; got y=None.")


def _check_1d(y, n):
    if jnp.ndim(y) != 1:
        raise ValueError(f"y must be 1-D labels with shape (n,); got shape {jnp.shape(y)}.")
    check_length(y, n)


def _sorted_classes(y, n):
    """y as a 1-D array of n finite labels: its sorted classes and each label's index."""
    y = np.asarray(y)
    _check_1d(y, n)
    if np.issubdtype(y.dtype, np.floating) and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf; every example needs a finite label.")
    return np.unique(y, return_inverse=True)


def _index_in(y, classes, n):
    """Each label's index in the given ``classes`` (1-D y of length n), by comparison, so
    that it works on traced labels; concrete labels outside ``classes`` are refused."""
    _check_1d(y, n)
    if is_traced(y):
        return jnp.argmax(y[:, None] == jnp.asarray(classes)[None], axis=1).astype(jnp.int32)
    y, c = np.asarray(y), np.asarray(classes)
    outside = ~np.isin(y, c)
    if outside.any():
        raise ValueError(
            f"y holds {int(outside.sum())} labels outside classes={tuple(classes)!r} "
            f"(first: {y[outside][0]!r}); pass every class value, in order.")
    order = np.argsort(c)  # classes in the user's order: search the sorted copy
    return jnp.asarray(order[np.searchsorted(c[order], y)], jnp.int32)


class BinaryLabels:
    """Two classes, encoded as ±1 in the computation dtype."""

    def encode_labels(self, y, n, dtype, classes=None):
        """(encoded labels, class values): see the module docstring."""
        _needs(y, self)
        if classes is not None:
            if len(classes) != 2:
                raise ValueError(f"a binary loss needs two classes; got classes={classes!r}.")
            index = _index_in(y, classes, n)
            return jnp.where(index == 1, 1.0, -1.0).astype(dtype), tuple(classes)
        classes, index = _sorted_classes(y, n)
        if classes.size != 2:
            raise ValueError(
                f"a binary loss needs exactly two classes in y; found {classes.size} "
                f"({classes[:10].tolist()}{' ...' if classes.size > 10 else ''})."
            )
        return jnp.asarray(np.where(index == 1, 1.0, -1.0), dtype), tuple(classes.tolist())

    def num_outputs(self, classes):
        """None: one score per example."""
        return None


class MulticlassLabels:
    """K ≥ 2 classes, encoded as int32 indices; weights of shape (d, K)."""

    def encode_labels(self, y, n, dtype, classes=None):
        """(encoded labels, class values): see the module docstring."""
        _needs(y, self)
        if classes is not None:
            if len(classes) < 2:
                raise ValueError(f"a multiclass loss needs at least two classes; got "
                                 f"classes={classes!r}.")
            return _index_in(y, classes, n), tuple(classes)
        classes, index = _sorted_classes(y, n)
        if classes.size < 2:
            raise ValueError(
                f"a multiclass loss needs at least two classes in y; found {classes}.")
        return jnp.asarray(index, jnp.int32), tuple(classes.tolist())

    def num_outputs(self, classes):
        """K = the number of classes."""
        return len(classes)


class MultilabelLabels:
    """Label sets, encoded as an (n, K) bool mask; weights of shape (d, K)."""

    def encode_labels(self, y, n, dtype, classes=None):
        """(encoded labels, class values): see the module docstring."""
        _needs(y, self)
        if classes is not None:
            K = len(classes)
            if jnp.shape(y) != (n, K):
                raise ValueError(f"with classes={classes!r}, y must be an (n, K) = ({n}, {K}) "
                                 f"0/1 mask; got shape {jnp.shape(y)}.")
            if is_traced(y):
                return y != 0, tuple(classes)
            Y, _ = _label_sets(np.asarray(y))
            return jnp.asarray(_check_sets(Y)), tuple(classes)
        Y, classes = _label_sets(y)
        check_length(Y, n, "label sets")
        if Y.shape[1] < 2:
            raise ValueError(f"a multilabel loss needs at least two labels; found {Y.shape[1]}.")
        return jnp.asarray(_check_sets(Y)), classes

    def num_outputs(self, classes):
        """K = the number of labels."""
        return len(classes)


def _check_sets(Y):
    empty = np.flatnonzero(~Y.any(axis=1))
    if empty.size:
        raise ValueError(
            f"{empty.size} examples have no label (first: row {empty[0]}); every example "
            "needs at least one."
        )
    return Y


def _label_sets(y):
    """(mask, classes) from lists of labels, a sparse indicator or a dense 0/1 matrix."""
    if sp.issparse(y):
        Y = np.asarray(y.toarray()) != 0
        return Y, tuple(range(Y.shape[1]))
    if isinstance(y, (list, tuple)) and (len(y) == 0 or not np.isscalar(y[0])):
        labels = sorted({z for row in y for z in row})
        pos = {z: k for k, z in enumerate(labels)}
        Y = np.zeros((len(y), len(labels)), bool)
        for i, row in enumerate(y):
            Y[i, [pos[z] for z in row]] = True
        return Y, tuple(labels)
    arr = np.asarray(y)
    if arr.ndim != 2 or not np.all((arr == 0) | (arr == 1)):
        raise ValueError(
            "multilabel y must be a list of label lists, a scipy sparse indicator matrix "
            f"or a dense 0/1 matrix of shape (n, K); got an array of shape {arr.shape}."
        )
    return arr.astype(bool), tuple(range(arr.shape[1]))


def checked_delta(loss, K, dtype):
    """``loss`` with its (K, K) label loss Δ checked and cast (None stays None)."""
    if loss.delta is None or is_traced(loss.delta):
        return loss
    D = np.asarray(loss.delta, dtype=float)
    if D.shape != (K, K):
        raise ValueError(f"delta must have shape (K, K) = ({K}, {K}); got {D.shape}.")
    if not np.all(np.isfinite(D)) or np.any(D < 0) or np.any(np.diag(D) != 0):
        raise ValueError("delta must be finite, >= 0, with a zero diagonal (Δ(z, z) = 0).")
    return dataclasses.replace(loss, delta=jnp.asarray(D, dtype))

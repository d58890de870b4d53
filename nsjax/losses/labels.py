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
with ``classes=(-1, 1)``), multilabel labels an (n, K) 0/1 mask or (concrete) label lists.
Shapes are always checked; values only where they are concrete (a traced label outside
``classes`` counts as the first).

Concrete labels are refused, naming the position, where one is None or NaN, or where they mix
types (``[1, 'a']``: numpy would silently turn every label into a string); ``classes`` must
be distinct labels of one type; an indicator matrix must hold only 0 and 1.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Iterable

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
        hint = (" For a column vector (n, 1) pass y.ravel()." if jnp.ndim(y) == 2
                and jnp.shape(y)[1] == 1 else "")
        raise ValueError(f"y must be 1-D labels with shape (n,); got shape {jnp.shape(y)}."
                         f"{hint}")
    check_length(y, n)


def _label_kind(v) -> str:
    """Which sort of label v is: labels of different sorts cannot be compared or sorted."""
    if isinstance(v, (bool, np.bool_, numbers.Number)):
        return "number"
    if isinstance(v, (str, np.str_)):
        return "str"
    return type(v).__name__


def _check_label_values(items, name="y"):
    """Refuse None and mixed sorts (e.g. 1 and 'a') among labels, naming the first ones."""
    first = {}
    for i, v in enumerate(items):
        if v is None:
            raise ValueError(f"{name}[{i}] is None: every example needs a label; drop the "
                             "unlabeled examples or give them a class.")
        if isinstance(v, float) and np.isnan(v):
            raise ValueError(f"{name}[{i}] is NaN: every example needs a finite label.")
        first.setdefault(_label_kind(v), i)
        if len(first) > 1:
            (k1, i1), (k2, i2) = first.items()
            raise ValueError(
                f"{name} mixes label types: {name}[{i1}] = {items[i1]!r} ({k1}) and "
                f"{name}[{i2}] = {items[i2]!r} ({k2}); use one type for every label (e.g. "
                "all str, or all numbers).")


def _concrete_labels(y, n):
    """Concrete 1-D labels of length n as a numpy array, with None, NaN and mixed sorts of
    labels refused (a list like [1, 'a'] would otherwise become the strings '1', 'a')."""
    if sp.issparse(y):
        raise ValueError(f"y must be 1-D labels with shape (n,); got a scipy sparse matrix of "
                         f"shape {y.shape}. Pass y.toarray().ravel().")
    try:
        arr = np.asarray(y)
    except ValueError:
        raise ValueError("y must be 1-D labels with shape (n,); got a ragged sequence.") from None
    _check_1d(arr, n)
    if isinstance(y, (list, tuple)) or arr.dtype == object:
        items = list(y) if isinstance(y, (list, tuple)) else arr.tolist()
        _check_label_values(items)
        if arr.dtype == object:
            arr = np.asarray(items)
    if arr.dtype.kind in "fc" and not np.all(np.isfinite(arr)):
        raise ValueError("y contains NaN or inf; every example needs a finite label.")
    return arr


def _sorted_classes(y, n):
    """y as a 1-D array of n finite labels: its sorted classes and each label's index."""
    y = _concrete_labels(y, n)
    try:
        return np.unique(y, return_inverse=True)
    except TypeError:
        raise TypeError(f"y's labels must be sortable (numbers or strings); got labels of "
                        f"type {type(y.flat[0]).__name__}.") from None


def checked_classes(classes, least, what):
    """``classes`` as a tuple of at least ``least`` distinct, non-None labels of one sort,
    else an error naming classes."""
    if isinstance(classes, (str, bytes)) or not isinstance(classes, Iterable):
        raise TypeError(f"classes must be a sequence of class values, e.g. classes=(-1, 1); "
                        f"got {classes!r}.")
    if isinstance(classes, (np.ndarray, jax.Array)):
        if is_traced(classes):
            raise TypeError("classes must be concrete values (a tuple), not a traced array.")
        classes = np.asarray(classes).tolist()
    classes = tuple(classes)
    _check_label_values(classes, "classes")
    if len(classes) < least:
        raise ValueError(f"{what} needs {'two' if least == 2 else least} or more classes; got "
                         f"classes={classes!r}.")
    try:
        distinct = len(set(classes)) == len(classes)
    except TypeError:
        raise TypeError(f"classes must hold hashable values; got {classes!r}.") from None
    if not distinct:
        raise ValueError(f"classes must be distinct; got classes={classes!r}.")
    return classes


def _index_in(y, classes, n):
    """Each label's index in the given ``classes`` (1-D y of length n), by comparison, so
    that it works on traced labels (a numpy array for concrete ones); concrete labels
    outside ``classes`` are refused."""
    if is_traced(y):
        _check_1d(y, n)
        return jnp.argmax(y[:, None] == jnp.asarray(classes)[None], axis=1).astype(jnp.int32)
    y, c = _concrete_labels(y, n), np.asarray(classes)
    outside = ~np.isin(y, c)
    if outside.any():
        raise ValueError(
            f"y holds {int(outside.sum())} labels outside classes={tuple(classes)!r} "
            f"(first: {y[outside][0]!r}); pass every class value, in order.")
    order = np.argsort(c)  # classes in the user's order: search the sorted copy
    return order[np.searchsorted(c[order], y)].astype(np.int32)


class BinaryLabels:
    """Two classes, encoded as ±1 in the computation dtype."""

    def encode_labels(self, y, n, dtype, classes=None):
        """(encoded labels, class values): see the module docstring."""
        _needs(y, self)
        if classes is not None:
            classes = checked_classes(classes, 2, "a binary loss")
            if len(classes) != 2:
                raise ValueError(f"a binary loss needs two classes; got classes={classes!r}.")
            index = _index_in(y, classes, n)
            xp = jnp if is_traced(index) else np  # (host: no small program per shape)
            return jnp.asarray(xp.where(index == 1, 1.0, -1.0), dtype), tuple(classes)
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
            classes = checked_classes(classes, 2, "a multiclass loss")
            return jnp.asarray(_index_in(y, classes, n)), classes
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
            classes = checked_classes(classes, 2, "a multilabel loss")
            K = len(classes)
            if is_traced(y):
                if jnp.shape(y) != (n, K):
                    raise ValueError(f"with classes={classes!r}, y must be an (n, K) = "
                                     f"({n}, {K}) 0/1 mask; got shape {jnp.shape(y)}.")
                return y != 0, classes
            if _is_label_lists(y) and not _is_mask(y, (n, K)):
                Y, _ = _label_sets(y, classes)
            else:
                Y, _ = _label_sets(y)
                if Y.shape != (n, K):
                    raise ValueError(f"with classes={classes!r}, y must be an (n, K) = "
                                     f"({n}, {K}) 0/1 mask or n label lists; got shape "
                                     f"{Y.shape}.")
            check_length(Y, n, "label sets")
            return jnp.asarray(_check_sets(Y)), classes
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


def _is_label_lists(y) -> bool:
    return isinstance(y, (list, tuple)) and (len(y) == 0 or not np.isscalar(y[0]))


def _is_mask(y, shape) -> bool:
    """Whether y reads as a 0/1 array of this shape."""
    try:
        arr = np.asarray(y)
    except ValueError:  # ragged: label lists
        return False
    return arr.shape == shape and arr.dtype.kind in "biuf" and bool(np.all((arr == 0) |
                                                                          (arr == 1)))


def _label_sets(y, classes=None):
    """(mask, classes) from lists of labels, a sparse indicator or a dense 0/1 matrix; label
    lists are encoded against ``classes`` where given (labels outside them refused)."""
    if sp.issparse(y):
        Y = np.asarray(y.toarray())
        _check_01(Y, "a scipy sparse indicator")
        return Y != 0, tuple(range(Y.shape[1]))
    if _is_label_lists(y):
        for i, row in enumerate(y):
            if isinstance(row, (str, bytes)) or not isinstance(row, Iterable):
                raise ValueError(f"y[{i}] must be a list of labels (multilabel y is one list "
                                 f"per example); got {row!r}.")
        y = [list(row) for row in y]
        flat = [z for row in y for z in row]
        _check_label_values(flat + list(classes or ()), "y's labels")
        if classes is None:
            try:
                labels = sorted(set(flat))
            except TypeError:
                raise TypeError("y's labels must be sortable (numbers or strings).") from None
        else:
            labels = list(classes)
        pos = {z: k for k, z in enumerate(labels)}
        Y = np.zeros((len(y), len(labels)), bool)
        for i, row in enumerate(y):
            outside = [z for z in row if z not in pos]
            if outside:
                raise ValueError(f"y[{i}] holds label {outside[0]!r}, outside "
                                 f"classes={tuple(labels)!r}; pass every label in classes.")
            Y[i, [pos[z] for z in row]] = True
        return Y, tuple(labels)
    try:
        arr = np.asarray(y)
    except ValueError:
        arr = np.asarray(y, dtype=object)
    if arr.ndim != 2:
        raise ValueError(
            "multilabel y must be a list of label lists, a scipy sparse indicator matrix "
            f"or a dense 0/1 matrix of shape (n, K); got an array of shape {arr.shape}."
        )
    _check_01(arr, "a dense")
    return arr.astype(bool), tuple(range(arr.shape[1]))


def _check_01(Y, what):
    ok = Y.dtype.kind in "biuf" and np.all((Y == 0) | (Y == 1))
    if not ok:
        bad = Y[~((Y == 0) | (Y == 1))] if Y.dtype.kind in "biuf" else Y.ravel()
        raise ValueError(f"multilabel y as {what} matrix must hold only 0 and 1; found "
                         f"{bad.ravel()[0]!r}. Pass label lists for arbitrary labels.")


def checked_delta(loss, K, dtype):
    """``loss`` with its (K, K) label loss Δ checked and cast (None stays None): finite as
    held in ``dtype``, >= 0, with a zero diagonal; errors name delta."""
    if loss.delta is None or is_traced(loss.delta):
        return loss
    try:
        D = np.asarray(loss.delta)
    except ValueError:
        D = np.asarray(loss.delta, dtype=object)
    if D.dtype.kind not in "biuf":
        raise TypeError(f"delta must be a (K, K) array of real numbers; got dtype {D.dtype}.")
    if D.shape != (K, K):
        raise ValueError(f"delta must have shape (K, K) = ({K}, {K}); got {D.shape}.")
    with np.errstate(over="ignore"):
        D = D.astype(np.dtype(dtype))
    if not np.all(np.isfinite(D)) or np.any(D < 0) or np.any(np.diag(D) != 0):
        raise ValueError(f"delta must be finite (as held in {np.dtype(dtype).name}), >= 0, "
                         "with a zero diagonal (Δ(z, z) = 0); got min "
                         f"{np.nanmin(D) if np.isfinite(D).any() else D.flat[0]!r}, diagonal "
                         f"{np.diag(D)[:5].tolist()}.")
    return dataclasses.replace(loss, delta=jnp.asarray(D, dtype))

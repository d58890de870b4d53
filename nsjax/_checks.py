"""The checks of a problem's inputs, before anything is compiled: X, y's weights, the loss,
the regularizer and its strengths, and the scalars of a solve (`MAX_STEPS`, tolerances).

Values are checked as they will be used: after the cast to the problem's dtype and the
summing of sparse duplicates, so that data finite as given but overflowing there are
refused. Each error names the argument as the user spelled it and says how to fix it.
Values that are traced (under the caller's jit or vmap) cannot be inspected: their types
and shapes are checked, their values are not.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax.experimental import sparse as jsparse

from nsjax.data import DesignMatrix, to_device
from nsjax.losses.labels import is_traced
from nsjax.regularizers import REQUIRED

#: What `Problem` needs of a loss (see `nsjax.losses.base`).
LOSS_REQUIRED = ("risk", "dscores", "argsup", "encode_labels", "num_outputs", "prepare",
                 "provides", "smooth", "dual_form", "weights")


def _check_bias(bias, loss, num_outputs) -> bool:
    """``bias`` is a bool, and the loss can give dual points on the bias hyperplane."""
    if not isinstance(bias, (bool, np.bool_)):
        raise TypeError(f"bias must be True or False; got {bias!r}.")
    if bias and (not loss.provides("center_dual") or num_outputs is not None):
        raise ValueError(
            f"bias=True needs a loss with one score per example that gives dual points on "
            f"the bias hyperplane (center_dual: Hinge, Logistic, Squared); "
            f"{type(loss).__name__} does not. Add a constant column to X instead (its "
            "weight is then regularized).")
    return bool(bias)


def _check_sample_weight(c, loss, n, dtype, name="sample_weight"):
    """Per-example weights as the loss will hold them: (n,), real, finite, ≥ 0 and not all
    0 after the cast to ``dtype`` (values are not checked where c is traced); ``name``:
    the argument as the user gave it."""
    from nsjax.losses.base import Weighted

    if not isinstance(loss, Weighted):
        raise ValueError(f"sample_weight needs a loss that weighs its examples (Hinge, "
                         f"Logistic, Squared, MulticlassHinge); {type(loss).__name__} does "
                         "not. Repeat or drop examples instead.")
    if isinstance(c, (str, bytes)) or np.shape(c) != (n,):
        raise ValueError(f"{name} must be an array of shape (n,) = ({n},), one weight "
                         f"per example; got shape {np.shape(c)}.")
    if is_traced(c):
        return jnp.asarray(c, dtype)
    arr = np.asarray(c)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{name} must hold real numbers; got dtype {arr.dtype}.")
    with np.errstate(over="ignore", invalid="ignore"):
        held = arr.astype(dtype)
    bad = np.flatnonzero(~np.isfinite(held) | (held < 0))
    if bad.size:
        raise ValueError(f"{name} must be finite and >= 0 in {np.dtype(dtype).name}; "
                         f"{bad.size} entries are not (first: index {bad[0]}, "
                         f"{arr[bad[0]]!r}).")
    if not np.any(held > 0):
        raise ValueError(f"{name} is zero for every example: nothing to fit; give some "
                         "examples a positive weight.")
    return to_device(held)


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
    leaves = jax.tree_util.tree_leaves(reg)
    if len(leaves) == 1 and leaves[0] is reg:
        raise TypeError(f"{type(reg).__name__} must be a JAX pytree (e.g. a frozen dataclass "
                        "registered with jax.tree_util.register_dataclass) so that its "
                        "strength is traced.")


#: The largest ``max_steps`` that `nsjax.solve` accepts: the history (3 × max_steps
#: numbers, 240 MB in float64 at the cap) is allocated before the first step. Longer runs:
#: restart from the last solution (``w0=sol.w``).
MAX_STEPS = 10**7


def real_array(x, name, what="an array of real numbers"):
    """``x`` (a numpy array, or a JAX array as it is) if it holds real numbers (bool, int or
    float); else a TypeError naming ``name`` (complex values are not cast to their real
    part, strings and objects not parsed)."""
    if isinstance(x, jax.Array):
        kind = np.dtype(x.dtype).kind
    else:
        try:
            x = np.asarray(x)
            kind = x.dtype.kind
        except (ValueError, TypeError):  # ragged
            kind = "O"
    if kind not in "biuf":
        raise TypeError(f"{name} must be {what}; got {'complex ' if kind == 'c' else ''}"
                        f"values of kind {kind!r}.")
    return x


def check_real_scalar(x, name, example, many=""):
    """Refuse ``x`` unless it is one real number (a Python or numpy number, a 0-d array):
    a TypeError or ValueError naming ``name``, with ``example`` as the fix (``many``: what to
    do instead with many values). Returns x as a 0-d float64 numpy array, or None where x is
    traced (only its type and shape are checked then)."""
    if is_traced(x) and jnp.ndim(x) != 0:
        raise ValueError(f"{name} must be a scalar; got shape {jnp.shape(x)}.{many}")
    if not is_traced(x) and not isinstance(x, (str, bytes)):
        try:
            shape = np.shape(x)
        except ValueError:  # ragged
            shape = None
        if shape != ():
            got = f"shape {shape}" if shape is not None else "a ragged sequence"
            raise ValueError(f"{name} must be a scalar; got {got}.{many}")
    if is_traced(x):
        if not (jnp.issubdtype(x.dtype, jnp.integer) or jnp.issubdtype(x.dtype, jnp.floating)):
            raise TypeError(f"{name} must be a real number; got a traced {x.dtype} value.")
        return None
    what = f"{name} must be a real number (e.g. {example}); got {x!r} ({type(x).__name__})."
    if x is None or isinstance(x, (str, bytes, bool, np.bool_)):
        raise TypeError(what)
    try:
        arr = np.asarray(x)
    except Exception:  # anything numpy cannot read is not a number
        raise TypeError(what) from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(what)
    return arr.astype(np.float64)


def _cast_parameters(reg, dtype):
    """The regularizer's other numeric parameters (ElasticNet's λ) checked like its
    strength and held in ``dtype``, so that they are traced leaves of a stable dtype
    (other fields, a user's string or bool option say, are left as they are)."""
    name = _strength_name(reg)
    if not dataclasses.is_dataclass(reg):
        return reg

    def numeric(v):
        return (not isinstance(v, (bool, np.bool_, str, bytes)) and v is not None
                and np.ndim(v) == 0 and (is_traced(v) or np.asarray(v).dtype.kind in "iuf"))

    fields = [f for f in dataclasses.fields(reg) if f.name != name]
    for f in fields:  # a number field (annotated float) holding something else
        if "float" in str(f.type) and not numeric(getattr(reg, f.name)):
            check_real_scalar(getattr(reg, f.name), f.name,
                              f"{type(reg).__name__}(..., {f.name}=0.1)")
    changes = {f.name: _strength(getattr(reg, f.name), dtype, f.name)
               for f in fields if numeric(getattr(reg, f.name))}
    return dataclasses.replace(reg, **changes)


def _strength_name(reg) -> str:
    return getattr(reg, "strength_name", "lam")


def _check_strength(lam, name="lam"):
    """The strength's type and shape (its value is checked once the dtype is known)."""
    example = f"L2({name}=1e-3)" if name.isidentifier() else f"{name} = 1e-3"
    return check_real_scalar(lam, name, example, " Use nsjax.sweep for many values.")


def max_strength(dtype) -> float:
    """The largest strength a problem in ``dtype`` accepts: sqrt(finfo.max), 1.3e154 in
    float64 and 1.8e19 in float32, so that λ‖w‖² and ‖v‖²/λ stay representable."""
    return float(np.sqrt(np.finfo(dtype).max))


def held_strength(strength, dtype, what, fix):
    """A strength computed from a caller's parameters (``what``: how, e.g. "C=1e-320 gives
    λ = 1/(C n)"; ``fix``: what to do instead), checked as a problem will hold it in
    ``dtype``: at most `max_strength`, and not rounded below the smallest normal number
    from a positive value (the estimators and the CLI name their own parameters)."""
    dt = np.dtype(dtype)
    with np.errstate(over="ignore", under="ignore"):
        held = np.asarray(strength, np.float64).astype(dt)
    if not np.isfinite(held) or held > max_strength(dt):
        raise ValueError(f"{what} = {strength:.3g}, too large for {dt.name} (at most "
                         f"{max_strength(dt):.3g}); {fix}")
    if strength > 0 and held < np.finfo(dt).tiny:
        raise ValueError(f"{what} = {strength:.3g}, which {dt.name} cannot hold (it rounds "
                         f"below {np.finfo(dt).tiny:.3g}); {fix}")
    return float(strength)


def _strength(lam, dtype, name="lam"):
    """``lam`` checked as it will be used: cast to ``dtype``, finite, in [0, max_strength]."""
    arr = _check_strength(lam, name)
    if arr is None:  # traced: values are unknown
        return jnp.asarray(lam, dtype)
    with np.errstate(over="ignore"):
        held = arr.astype(dtype)
    dt = np.dtype(dtype).name
    if not np.isfinite(arr) or arr < 0:
        raise ValueError(f"{name} must be finite and >= 0; got {float(arr)}.")
    if not np.isfinite(held):
        raise ValueError(f"{name} = {float(arr):g} overflows {dt} (largest "
                         f"{float(np.finfo(dtype).max):.3g}); it must be at most "
                         f"{max_strength(dtype):.3g} in {dt}.")
    if held > max_strength(dtype):
        raise ValueError(
            f"{name} = {float(arr):g} is too large for {dt}: it must be at most "
            f"sqrt(finfo.max) = {max_strength(dtype):.3g}, so that λ‖w‖² and ‖Xᵀu‖²/λ stay "
            "representable. Rescale instead: with X scaled by s and lam by 1/s² the problem "
            "is the same, with w scaled by 1/s."
        )
    return jnp.asarray(held, dtype)


def _check_X(X):
    """X's kind, shape and dtype, before any conversion; returns X (as a numpy array where
    it was neither an array nor a sparse matrix, so that it is read once)."""
    if isinstance(X, DesignMatrix):
        X.check_layout()
        return X
    if sp.issparse(X) or isinstance(X, jsparse.BCOO):
        dtype, shape = X.dtype, X.shape
    else:
        if not isinstance(X, (np.ndarray, jax.Array)):
            try:
                X = np.asarray(X)
            except (ValueError, TypeError) as e:
                raise ValueError(f"X could not be read as a 2-D array of numbers ({e}); pass "
                                 "a numpy array, a scipy.sparse matrix or a jax array.") from None
        dtype, shape = X.dtype, jnp.shape(X)
    if len(shape) != 2:
        raise ValueError(f"X must be 2-D with shape (n, d); got shape {shape}. Reshape it "
                         "(one row per example: X.reshape(-1, 1) for a single feature).")
    _check_X_dtype(np.dtype(dtype))
    if shape[0] == 0 or shape[1] == 0:
        raise ValueError(f"X is empty (shape {shape}); a problem needs n >= 1 and d >= 1.")
    return X


def _check_X_dtype(dtype):
    """Floats of any width (bfloat16 included), integers and bools are converted (see
    `DesignMatrix.from_any`); anything else is refused."""
    if dtype == np.bool_ or any(jnp.issubdtype(dtype, kind)
                                for kind in (jnp.floating, jnp.integer)):
        return
    if dtype.kind == "c":
        raise TypeError(f"X is complex ({dtype}); nsjax solves real problems. Pass X.real, or "
                        "the real and imaginary parts as separate columns.")
    if dtype.kind == "O":
        raise TypeError("X has dtype object (mixed or non-numeric entries); convert it to "
                        "numbers first, e.g. np.asarray(X, dtype=float).")
    raise TypeError(f"X must be numeric; got dtype {dtype}. Convert it to numbers first, "
                    "e.g. np.asarray(X, dtype=float).")


def max_abs_entry(dtype, shape) -> float:
    """The largest |X_ij| a problem of this dtype and shape (n, d) accepts:
    sqrt(finfo.max / max(n, d)), so that ‖x_i‖², the entries of XᵀX and sums of n or d
    squared entries stay finite (4.7e153 for a 8 x 3 float64 X, 6.5e18 in float32)."""
    return float(np.sqrt(np.finfo(dtype).max / max(shape)))


@jax.jit
def _max_abs_jit(v):
    return jnp.max(jnp.abs(v))


def _max_abs(v) -> float:
    """max |v|, NaN if any entry is NaN. On CPUs read in place (numpy, no temporary): the
    compiled reduction costs a compile for each new shape."""
    if v.is_fully_addressable and all(device.platform == "cpu" for device in v.devices()):
        v = np.asarray(v)
        return float(max(v.max(), -v.min()))
    return float(_max_abs_jit(v))


def _check_X_values(D: DesignMatrix):
    """X's values as the solvers will use them (cast to the problem's dtype, sparse duplicates
    summed): finite and at most `max_abs_entry`. Skipped for traced data."""
    values = [D.dense] if not D.is_sparse else (D.by_row.value_blocks()
                                                 + D.by_col.value_blocks())
    if D.shape[0] == 0 or D.shape[1] == 0:
        raise ValueError(f"X is empty (shape {D.shape}); a problem needs n >= 1 and d >= 1.")
    if any(is_traced(v) for v in values):
        return
    dt = np.dtype(D.dtype).name
    for v in values:
        top = _max_abs(v) if v.size else 0.0
        if not np.isfinite(top):
            bad = int(jnp.sum(~jnp.isfinite(v)))
            raise ValueError(
                f"X contains {bad} NaN or inf entries as held in {dt} (entries beyond "
                f"{float(np.finfo(D.dtype).max):.3g} overflow when cast, and sparse duplicates "
                "are summed); impute, drop or rescale them before building the Problem."
            )
        limit = max_abs_entry(D.dtype, D.shape)
        if top > limit:
            raise ValueError(
                f"X has entries up to {top:.3g} in magnitude; a {D.shape[0]} x {D.shape[1]} "
                f"problem in {dt} accepts at most sqrt(finfo.max / max(n, d)) = {limit:.3g}, "
                "beyond which products of X with itself overflow. Rescale X (e.g. "
                "standardize its columns)."
            )

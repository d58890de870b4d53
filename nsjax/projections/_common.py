"""What the projections share: argument checks, exact scalings by powers of two, and the
factors that make an invalid input's result NaN.

The checks run in Python and numpy, before anything is traced or compiled: shapes and
dtypes always, values only where they are concrete (the contract in `nsjax.projections`).
The scalings move exponents only, so data across the whole floating-point range are
brought into range without rounding.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

# ---------------------------------------------------------------------------------------
# Argument checks: in Python and numpy, before anything is traced or compiled. Shapes and
# dtypes are always checked; values only where they are concrete (not under jit or vmap).
# ---------------------------------------------------------------------------------------


def _traced(*xs) -> bool:
    return any(isinstance(x, jax.core.Tracer) for x in xs)


def _dtype_of(fn: str, name: str, x) -> np.dtype:
    """The dtype of argument ``name``; a TypeError unless it is real (float, int or bool)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(x).dtype
        except (TypeError, ValueError) as e:  # ragged nesting and the like
            raise TypeError(f"{fn}: {name} must be a real number or array; got a "
                            f"{type(x).__name__} that is neither ({e})") from None
    if jnp.issubdtype(dtype, jnp.complexfloating):
        raise TypeError(f"{fn}: {name} must be real; got the complex dtype {dtype}. Pass its "
                        f"real part ({name}.real) or its modulus (abs({name})), whichever you "
                        "mean.")
    if not any(jnp.issubdtype(dtype, t) for t in (jnp.floating, jnp.integer, jnp.bool_)):
        raise TypeError(f"{fn}: {name} must be a real number or array (a float, int or bool "
                        f"dtype); got dtype {dtype}. Convert it first, e.g. "
                        f"numpy.asarray({name}, dtype=float).")
    return np.dtype(dtype)


def _arrays(*xs):
    """Lists and tuples as numpy arrays (a jitted function would take them as pytrees of
    scalars); anything else as it is (Python scalars stay weakly typed)."""
    return tuple(np.asarray(x) if isinstance(x, (list, tuple)) else x for x in xs)


def _host(x) -> np.ndarray:
    """A concrete argument's values in float64 on the host (exact for every float dtype)."""
    return np.asarray(x).astype(np.float64)


def _at(bad: np.ndarray) -> str:
    """'[i]' for the first True of ``bad`` (nothing for a scalar)."""
    if np.ndim(bad) == 0:
        return ""
    i = tuple(int(j) for j in np.argwhere(bad)[0])
    return f"[{i[0]}]" if len(i) == 1 else str(list(i))


def _first(values: np.ndarray, bad: np.ndarray):
    return values[tuple(np.argwhere(bad)[0])] if np.ndim(bad) else values


def _check_vector(fn: str, name: str, shape) -> int:
    """n for a nonempty vector (n,); else a ValueError naming ``name``."""
    if len(shape) != 1:
        raise ValueError(f"{fn}: {name} must be a vector, shape (n,); got shape {tuple(shape)}. "
                         f"For a batch of rows, use jax.vmap({fn}).")
    if shape[0] == 0:
        raise ValueError(f"{fn}: {name} is empty (shape (0,)); pass at least one entry (there "
                         "is nothing to project in zero dimensions).")
    return shape[0]


def _check_like(fn: str, name: str, shape, ref: str, n: int) -> None:
    if tuple(shape) not in ((), (n,)):
        raise ValueError(f"{fn}: {name} has shape {tuple(shape)} but {ref} has shape ({n},): "
                         f"{name} must be a scalar or have {ref}'s shape ({n},).")


def _check_scalar(fn: str, name: str, shape) -> None:
    if tuple(shape) != ():
        raise ValueError(f"{fn}: {name} must be a scalar; got shape {tuple(shape)}. For one "
                         f"value per row of a batch, use jax.vmap({fn}).")


def _check_finite(fn: str, name: str, x, what: str = "finite") -> np.ndarray:
    """x's values (float64) if concrete and finite; a ValueError at the first NaN or ±inf."""
    h = _host(x)
    bad = ~np.isfinite(h)
    if bad.any():
        raise ValueError(f"{fn}: {name} must be {what}; {name}{_at(bad)} is "
                         f"{_first(h, bad)}. Replace or drop the non-finite entries (NaN and "
                         "±inf have no projection).")
    return h


def _check_steps(fn: str, newton_steps) -> None:
    dtype = _dtype_of(fn, "newton_steps", newton_steps)
    if not jnp.issubdtype(dtype, jnp.integer) or np.ndim(newton_steps) != 0:
        raise TypeError(f"{fn}: newton_steps must be an int (the most Newton passes before "
                        f"sorting); got {newton_steps!r}.")
    if not _traced(newton_steps) and int(newton_steps) < 0:
        raise ValueError(f"{fn}: newton_steps must be >= 0 (0: sort at once); got "
                         f"{int(newton_steps)}.")


def _eps(*values) -> float:
    """The machine epsilon of the dtype the arguments compute in (Python scalars are weakly
    typed: float32 data with b = 1.0 compute in float32)."""
    return float(jnp.finfo(jnp.result_type(float, *_arrays(*values))).eps)


# ---------------------------------------------------------------------------------------
# Powers of two: exact scalings (XLA has no ldexp; jnp.ldexp goes through pow).
# ---------------------------------------------------------------------------------------

_NO_EXPONENT = -(1 << 14)  # "⌊log2 0⌋": below every float's exponent range


def _ilogb(x):
    """⌊log2 x⌋ (int32) for x ≥ the smallest normal number; `_NO_EXPONENT` for 0 and the
    subnormal numbers (which XLA on CPUs flushes to 0). x ≥ 0 and finite."""
    tiny = jnp.finfo(x.dtype).tiny
    _, e = jnp.frexp(jnp.where(x >= tiny, x, 1))
    return jnp.where(x >= tiny, e - 1, _NO_EXPONENT).astype(jnp.int32)


def _pow2(k, dtype):
    """2^k exactly, for integer k in the normal range of ``dtype`` (by its bits)."""
    fi = jnp.finfo(dtype)
    itype = {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[jnp.dtype(dtype).itemsize]
    k = jnp.clip(k, fi.minexp, fi.maxexp - 1).astype(itype)
    return jax.lax.bitcast_convert_type((k + (fi.maxexp - 1)) << fi.nmant, dtype)


def _times_pow2(x, k):
    """x·2^k (k an int32 scalar), exact unless the result over- or underflows: in three
    factors, each a normal number, applied in turn (the partial products lie between x and
    the result, so none over- or underflows before the result would)."""
    fi = jnp.finfo(x.dtype)
    k1 = jnp.clip(k, fi.minexp, fi.maxexp - 1)
    k2 = jnp.clip(k - k1, fi.minexp, fi.maxexp - 1)
    return x * _pow2(k1, x.dtype) * _pow2(k2, x.dtype) * _pow2(k - k1 - k2, x.dtype)


def _nan_unless(ok, dtype):
    """1 where ok, NaN elsewhere: a factor that makes a value (or a tangent: it is linear)
    NaN where its input was invalid."""
    return jnp.where(ok, 1, jnp.nan).astype(dtype)


def _float0_like(x):
    return np.zeros(np.shape(x), dtype=jax.dtypes.float0)


def _in_float(x, *scalars):
    """x in a floating dtype (float for integers), and ``scalars`` in that dtype: what the
    jitted entry points of the projections compute in."""
    x = jnp.asarray(x)
    x = x.astype(jnp.result_type(float, x.dtype))
    return (x, *(jnp.asarray(c, x.dtype) for c in scalars))


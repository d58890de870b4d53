"""`DesignMatrix`: the data matrix X behind a jit-friendly `mv` (X w) and `rmv` (Xᵀ a).

Dense data is a (n, d) array. Sparse data (scipy.sparse CSR/CSC/COO or a BCOO) is held as
(row, col, value) triplets sorted by row, with a second copy sorted by column, so that both
products are a sorted `segment_sum`. That layout was picked by measurement on a 2-core CPU
(nnz = 1.8 M): X w in 8 ms and Xᵀ a in 4.4 ms, against 11.6 and 8.3 ms for BCOO.

A `DesignMatrix` is a pytree: its arrays are leaves, so it is an *argument* of compiled
functions and never a closed-over constant (XLA would constant-fold it: 30 s compiles).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax.experimental import sparse as jsparse


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class DesignMatrix:
    """The data matrix X of shape (n, d), dense or sparse.

    Build it with `DesignMatrix.from_any`. Weights may be (d,) or (d, K); scores are then
    (n,) or (n, K).

    Attributes:
        dense: the (n, d) array, or None for sparse data.
        rows, cols, vals: triplets sorted by row (sparse data), else None.
        t_rows, t_cols, t_vals: the same triplets sorted by column, else None.
        shape: (n, d), static.
    """

    dense: jax.Array | None
    rows: jax.Array | None
    cols: jax.Array | None
    vals: jax.Array | None
    t_rows: jax.Array | None
    t_cols: jax.Array | None
    t_vals: jax.Array | None
    shape: tuple[int, int] = field(metadata=dict(static=True))

    @property
    def is_sparse(self) -> bool:
        return self.dense is None

    @property
    def dtype(self):
        return self.vals.dtype if self.is_sparse else self.dense.dtype

    @property
    def nnz(self) -> int:
        return int(self.vals.shape[0]) if self.is_sparse else self.shape[0] * self.shape[1]

    @classmethod
    def from_any(cls, X, dtype=None) -> DesignMatrix:
        """Wrap numpy / jax arrays, scipy.sparse matrices or a BCOO.

        Args:
            X: the data, shape (n, d).
            dtype: float32 or float64; default: X's own float dtype (float64 needs
                ``jax_enable_x64``, else JAX stores float32).
        """
        if isinstance(X, DesignMatrix):
            return X
        if isinstance(X, jsparse.BCOO):
            idx = np.asarray(X.indices)
            X = sp.coo_matrix((np.asarray(X.data), (idx[:, 0], idx[:, 1])), shape=X.shape)
        if sp.issparse(X):
            coo = sp.coo_matrix(X)
            coo.sum_duplicates()  # also sorts by (row, col)
            if dtype is None:
                dtype = coo.dtype if np.issubdtype(coo.dtype, np.floating) else np.float64
            by_col = np.lexsort((coo.row, coo.col))
            return cls(
                dense=None,
                rows=jnp.asarray(coo.row, jnp.int32),
                cols=jnp.asarray(coo.col, jnp.int32),
                vals=jnp.asarray(coo.data, dtype),
                t_rows=jnp.asarray(coo.row[by_col], jnp.int32),
                t_cols=jnp.asarray(coo.col[by_col], jnp.int32),
                t_vals=jnp.asarray(coo.data[by_col], dtype),
                shape=(int(coo.shape[0]), int(coo.shape[1])),
            )
        arr = np.asarray(X) if not isinstance(X, jax.Array) else X
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d); got shape {arr.shape}. Reshape it.")
        if dtype is None:
            dtype = arr.dtype if jnp.issubdtype(arr.dtype, jnp.floating) else jnp.float64
        return cls(
            dense=jnp.asarray(arr, dtype), rows=None, cols=None, vals=None,
            t_rows=None, t_cols=None, t_vals=None, shape=(int(arr.shape[0]), int(arr.shape[1])),
        )

    def mv(self, w: jax.Array) -> jax.Array:
        """Scores X w, shape (n,) or (n, K)."""
        if not self.is_sparse:
            return jnp.matmul(self.dense, w, precision=jax.lax.Precision.HIGHEST)
        contrib = _scale(self.vals, w[self.cols])
        return jax.ops.segment_sum(
            contrib, self.rows, num_segments=self.shape[0], indices_are_sorted=True
        )

    def rmv(self, a: jax.Array) -> jax.Array:
        """Xᵀ a, shape (d,) or (d, K)."""
        if not self.is_sparse:
            return jnp.matmul(self.dense.T, a, precision=jax.lax.Precision.HIGHEST)
        contrib = _scale(self.t_vals, a[self.t_rows])
        return jax.ops.segment_sum(
            contrib, self.t_cols, num_segments=self.shape[1], indices_are_sorted=True
        )

    def row_sq_norms(self) -> jax.Array:
        """‖x_i‖² for every row, shape (n,)."""
        if not self.is_sparse:
            return jnp.sum(self.dense * self.dense, axis=1)
        return jax.ops.segment_sum(
            self.vals * self.vals, self.rows, num_segments=self.shape[0], indices_are_sorted=True
        )


def _scale(vals: jax.Array, x: jax.Array) -> jax.Array:
    """vals[i] * x[i] for x of shape (nnz,) or (nnz, K)."""
    return vals * x if x.ndim == 1 else vals[:, None] * x

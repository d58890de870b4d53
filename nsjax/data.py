"""`DesignMatrix`: the data matrix X behind a jit-friendly `mv` (X w) and `rmv` (Xᵀ a).

Dense data is a (n, d) array. Sparse data (scipy.sparse CSR/CSC/COO or a BCOO) is held
twice, once by rows (for X w) and once by columns (for Xᵀ a), each in a *chunked* layout
(`Chunks`): every row (column) is cut into chunks of W entries, zero-padded, stored as a
(C, W) block of indices and values plus the owner of each chunk. A product is then one
gather, one dense multiply-and-sum over W, and a `segment_sum` over only C ≈ nnz / W
chunk sums. The scatter of a `segment_sum` is what costs on the CPU; chunking makes it
W times smaller for a little padding, and so beats a `segment_sum` over sorted triplets,
which in turn beats BCOO (measured: docs/design.md, "Measured design choices"). W is
chosen per matrix (`chunk_width`), and indices are 16-bit where they fit (the products
are memory-bound).

On a GPU the rows of X (the layout of X w) also get a *head* (`head_width`): each row's
first L entries in a dense (n, L) block, summed without any scatter, the rest in chunks. The
scatter of a `segment_sum` is what costs there, and the head leaves it only the rows' tails.
X's columns (Xᵀ a), whose lengths follow a power law on text, where a head holds little, are
instead grouped by length into dense blocks (`Buckets`), with no scatter at all. CPUs keep
the chunks for both.

A `DesignMatrix` is a pytree: its arrays are leaves, so it is an *argument* of compiled
functions and never a closed-over constant (XLA would constant-fold it, at great cost in
compile time).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from jax.experimental import sparse as jsparse

from nsjax._fused_sum import fused_sum

_WIDTHS = (1, 2, 4, 8, 16, 32, 64)
# Measured cost of one chunk relative to one padded entry (gather + multiply) on the CPU.
_CHUNK_COST = 2.0
#: Layouts of fewer padded entries than this get a number of chunks from a small set
#: (`round_up`), so that nearby sparse matrices (cross-validation folds) share one compiled
#: program; larger ones do not: there a step's products take milliseconds, and up to 1/8
#: more chunks in each of thousands of steps would cost more than the compile saved.
CHUNK_ROUND_LIMIT = 2**20
#: Whether the row layout (X w) gets a dense head (`head_width`): "auto" on a GPU only (the
#: default backend when X is laid out), True or False always.
ROW_HEAD = "auto"
#: A head holds padding of at most this fraction of the entries it holds.
HEAD_PADDING = 0.25
#: Whether the column layout (Xᵀa) is held in `Buckets`: "auto" on a GPU (the default
#: backend when X is laid out) for X of at least `BUCKETS_MIN_NNZ` entries only, True or
#: False always. Smaller layouts keep the rounded chunks: there a GPU step is latency-bound,
#: and nearby matrices share one compiled program.
COL_BUCKETS = "auto"
BUCKETS_MIN_NNZ = CHUNK_ROUND_LIMIT


def to_device(x, dtype=None) -> jax.Array:
    """``x`` (a host value: a number, a numpy array) as a JAX array of ``dtype``, cast on
    the host and copied: ``jnp.asarray`` of a host value compiles a small program for each
    new shape and dtype (JAX 0.10: ``stage``, ``convert_element_type``), a compile apiece
    on a first call. A traced ``x`` is cast as ``jnp.asarray`` does."""
    if isinstance(x, jax.core.Tracer):
        return jnp.asarray(x, dtype)
    return jax.device_put(np.asarray(x, dtype))


def on_host(x: jax.Array, fn) -> jax.Array:
    """``fn(x)`` computed with numpy on the host and put back where ``x`` was (its
    sharding): an eager ``jnp`` slice or take compiles a program for each new shape."""
    return jax.device_put(fn(np.asarray(x)), x.sharding)


def round_up(m, least):
    """m raised to ``least`` and rounded up to one of eight sizes per octave (k·2ʲ with
    8 ≤ k < 16): at most 1/8 more than m. The few sizes that nearby m share (one
    compiled program for each)."""
    m = max(int(m), least)
    step = 1 << max(m.bit_length() - 4, 0)
    return -(-m // step) * step


def head_width(counts: np.ndarray) -> int:
    """The width L of a dense head for rows of these lengths: the largest L whose (n, L)
    block holds at most `HEAD_PADDING` padding per entry it holds, or 0 (no head) where
    such a head would hold under half of the entries (rows of very unequal lengths)."""
    counts = np.asarray(counts, dtype=np.int64)
    if counts.size == 0 or counts.max() == 0:
        return 0
    # held(L) = Σ min(len, L) for L = 1..max: the rows at least L long add one entry each
    longer = counts.size - np.cumsum(np.bincount(counts))[:-1]  # rows with len >= L, L ≥ 1
    held = np.cumsum(longer)
    L = np.arange(1, held.size + 1)
    ok = counts.size * L <= (1 + HEAD_PADDING) * held
    best = int(L[ok][-1]) if ok.any() else 0
    return best if best and held[best - 1] >= 0.5 * counts.sum() else 0


def _row_head_width(counts: np.ndarray) -> int:
    """`head_width` for X's rows where `ROW_HEAD` asks for a head (on this backend), else 0."""
    wanted = jax.default_backend() == "gpu" if ROW_HEAD == "auto" else bool(ROW_HEAD)
    return head_width(counts) if wanted else 0


def _col_buckets_wanted(nnz: int) -> bool:
    """Whether X's columns go in `Buckets` (`COL_BUCKETS`, on this backend)."""
    if COL_BUCKETS == "auto":
        return jax.default_backend() == "gpu" and nnz >= BUCKETS_MIN_NNZ
    return bool(COL_BUCKETS)


def _computed_before_gathering(v):
    """v, written out before a product gathers from it (on CPUs). Otherwise XLA's CPU
    backend fuses v's computation into the gather and redoes it at every nonzero: the
    hinge's u = −β∘y/n, gathered by Xᵀu, became two gathers (the scores and the labels) and
    the margins' arithmetic per nonzero. A scatter is not fused into what reads it; this
    one (onto every index, in order) costs one pass over v."""
    def write(v):
        rows = jnp.arange(v.shape[0])
        return jnp.zeros_like(v).at[rows].set(v, indices_are_sorted=True, unique_indices=True)

    return jax.lax.platform_dependent(v, cpu=write, default=lambda v: v)


class _RowSums:
    """The products of a layout of a matrix M by rows, from its ``_rows_sum(per_entry)``: Σ
    over each row's entries of ``per_entry(value, index)`` (values and their column
    indices in blocks of shape (..., W); a result of shape (..., W) or (..., W, K))."""

    def mv(self, v: jax.Array) -> jax.Array:
        """M v for v of shape (m,) or (m, K)."""
        if v.shape[0] == 0:  # M has no column: nothing to gather
            return jnp.zeros((self.num_rows,) + v.shape[1:], v.dtype)
        v = _computed_before_gathering(v)

        def term(value, index):
            gathered = v.at[index].get(mode="promise_in_bounds")  # (..., W) or (..., W, K)
            return (value if v.ndim == 1 else value[..., None]) * gathered

        return self._rows_sum(term)

    def sq_mv(self, v: jax.Array) -> jax.Array:
        """(M∘M) v, the entries of M squared, for v of shape (m,)."""
        if v.shape[0] == 0:
            return jnp.zeros((self.num_rows,), v.dtype)
        v = _computed_before_gathering(v)
        return self._rows_sum(
            lambda value, index: value * value * v.at[index].get(mode="promise_in_bounds"))

    def row_sq_norms(self) -> jax.Array:
        """‖m_i‖² for every row of M."""
        return self._rows_sum(lambda value, index: value * value)

    def count_nonzero(self) -> jax.Array:
        """The number of nonzero stored values, on the device."""
        return sum(jnp.count_nonzero(v) for v in self.value_blocks())

    @property
    def dtype(self):
        """The float dtype of the stored values."""
        return self.value_blocks()[0].dtype


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Chunks(_RowSums):
    """A CSR matrix cut into zero-padded chunks of W entries: the rows of M w.

    Attributes:
        index: (C, W) column indices (the row's last one in the padding); uint16 where M
            has ≤ 65,536 columns, else int32.
        value: (C, W) values (0 in the padding).
        owner: (C,) the row each chunk belongs to, ascending.
        num_rows: the number of rows of M, static.
        head_index: None, or (num_rows, L): each row's first L column indices (padded as
            the chunks are); its chunks then hold the rest of the row only.
        head_value: None, or (num_rows, L) values (0 in the padding).
    """

    index: jax.Array
    value: jax.Array
    owner: jax.Array
    num_rows: int = field(metadata=dict(static=True))
    head_index: jax.Array | None = None
    head_value: jax.Array | None = None

    @classmethod
    def from_csr(cls, M: sp.csr_matrix, dtype, width: int | None = None,
                 head: int = 0) -> Chunks:
        """Cut the rows of the CSR matrix M into zero-padded chunks (see the class) of
        ``width`` entries (default: the cheapest for M's row lengths, `chunk_width`),
        after a dense head of each row's first ``head`` entries where ``head`` > 0."""
        itype = np.uint16 if M.shape[1] <= 1 << 16 else np.int32
        head_index = head_value = None
        if head > 0:
            head_index, head_value, M = _cut_head(M, head, itype, dtype)
        counts = np.diff(M.indptr)
        width = chunk_width(counts) if width is None else width
        per_row = -(-counts // width)  # ceil
        num_chunks = max(int(per_row.sum()), 1)  # one all-zero chunk if M has no entry
        if M.shape[0] and num_chunks * width < CHUNK_ROUND_LIMIT:
            # All-zero chunks of the last row (`round_up`: one of a few layout sizes).
            per_row[-1] += round_up(num_chunks, 1) - num_chunks
            num_chunks = round_up(num_chunks, 1)
        first_chunk = np.cumsum(per_row) - per_row
        row_of_entry = np.repeat(np.arange(M.shape[0]), counts)
        rank = np.arange(M.nnz) - M.indptr[row_of_entry]  # position within its row
        slot = first_chunk[row_of_entry] * width + rank
        # Products are memory-bound: 16-bit indices where they fit read 17 % fewer bytes.
        owner = (np.repeat(np.arange(M.shape[0]), per_row) if per_row.sum()
                 else np.zeros(num_chunks, int))
        # Padding points at a column the row already uses (its last), not at column 0, so
        # that 0 · v[j] can be NaN (v[j] = ±inf) only in rows whose product is non-finite anyway.
        last_index = M.indices[np.maximum(M.indptr[1:] - 1, 0)] if M.nnz else np.zeros(1, int)
        index = np.repeat(last_index[owner].astype(itype), width)
        value = np.zeros(num_chunks * width, dtype)
        index[slot], value[slot] = M.indices, M.data
        return cls(
            index=jnp.asarray(index.reshape(num_chunks, width)),
            value=jnp.asarray(value.reshape(num_chunks, width), dtype),
            owner=jnp.asarray(owner, jnp.int32),
            num_rows=int(M.shape[0]),
            head_index=head_index, head_value=head_value,
        )

    def _rows_sum(self, per_entry) -> jax.Array:
        """Σ over each row's entries of ``per_entry(value, index)`` (shape (..., W) or
        (..., W, K)): the head's rows summed in place, the chunks' sums scattered."""
        out = jax.ops.segment_sum(fused_sum(per_entry(self.value, self.index), axis=1),
                                  self.owner, num_segments=self.num_rows,
                                  indices_are_sorted=True)
        if self.head_value is not None:
            out = out + fused_sum(per_entry(self.head_value, self.head_index), axis=1)
        return out

    def check(self, name: str, rows: int, cols: int) -> None:
        """Raise a ValueError naming ``name`` unless this is a layout of a rows × cols matrix
        as `from_csr` makes it (shapes always; indices where the arrays are concrete)."""
        C = jnp.shape(self.owner)[0] if jnp.ndim(self.owner) == 1 else None
        if (self.num_rows != rows or jnp.ndim(self.index) != 2 or C is None
                or jnp.shape(self.value) != jnp.shape(self.index)
                or jnp.shape(self.index)[0] != C):
            raise ValueError(f"{name} does not fit a {rows} x {cols} matrix (num_rows, index, "
                             "value and owner shapes); build X with DesignMatrix.from_any.")
        _check_float(self.value.dtype, f"{name}.value")
        if (self.head_index is None) != (self.head_value is None) or (
                self.head_index is not None
                and (jnp.ndim(self.head_index) != 2 or jnp.shape(self.head_index)[0] != rows
                     or jnp.shape(self.head_value) != jnp.shape(self.head_index)
                     or self.head_value.dtype != self.value.dtype)):
            raise ValueError(f"{name}'s head must be None or (head_index, head_value) of shape "
                             f"({rows}, L) and X's dtype; build X with DesignMatrix.from_any.")
        if _any_traced(self.index, self.owner, self.head_index):
            return
        _check_indices(f"{name}.index", self.index, cols)
        _check_indices(f"{name}.head_index", self.head_index, cols)
        owner = np.asarray(self.owner)
        if owner.size and (owner.min() < 0 or owner.max() >= max(rows, 1)
                           or np.any(np.diff(owner) < 0)):
            raise ValueError(f"{name}.owner must be ascending rows in [0, {rows}); build X "
                             "with DesignMatrix.from_any.")

    def value_blocks(self) -> list[jax.Array]:
        """The arrays of stored values (the chunks', the head's)."""
        return [v for v in (self.value, self.head_value) if v is not None]

    def to_csr(self, num_cols: int) -> sp.csr_matrix:
        """M as a scipy CSR matrix with ``num_cols`` columns."""
        index, value = np.asarray(self.index).ravel(), np.asarray(self.value).ravel()
        row = np.repeat(np.asarray(self.owner), self.index.shape[1])
        if self.head_value is not None:
            width = self.head_index.shape[1]
            row = np.concatenate([np.repeat(np.arange(self.num_rows), width), row])
            index = np.concatenate([np.asarray(self.head_index).ravel(), index])
            value = np.concatenate([np.asarray(self.head_value).ravel(), value])
        keep = value != 0
        return sp.csr_matrix((value[keep], (row[keep], index[keep])),
                             shape=(self.num_rows, num_cols))


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class Buckets(_RowSums):
    """A CSR matrix with its rows grouped by length, each group a dense block: no scatter.

    A row of ℓ ≥ 1 entries goes to group ⌊log₂ ℓ⌋, a (rows, L) block whose width L is its
    longest row's (so at most half of a block is padding); a product sums every row in
    place and puts the sums back in row order with one gather. For rows of power-law
    lengths, where a single head (`head_width`) would hold too little and the chunks'
    ``segment_sum`` is a scatter, which GPUs do slowly.

    Attributes:
        index: one (r_k, L_k) block of column indices per group, shortest rows first
            (padding repeats the row's first index, as a head's does); uint16 where M has
            ≤ 65,536 columns.
        value: the matching (r_k, L_k) blocks of values (0 in the padding).
        order: (num_rows,) each row's position among the blocks' rows taken in turn; rows
            without entries point one past the last (a trailing 0).
        num_rows: the number of rows of M, static.
    """

    index: tuple[jax.Array, ...]
    value: tuple[jax.Array, ...]
    order: jax.Array
    num_rows: int = field(metadata=dict(static=True))

    @classmethod
    def from_csr(cls, M: sp.csr_matrix, dtype) -> Buckets:
        """The rows of the CSR matrix M grouped by length (see the class)."""
        itype = np.uint16 if M.shape[1] <= 1 << 16 else np.int32
        counts = np.diff(M.indptr)
        group = np.where(counts > 0, np.log2(np.maximum(counts, 1)).astype(int), -1)
        index, value, order, start = [], [], np.empty(M.shape[0], np.int64), 0
        for g in np.unique(group[group >= 0]):
            rows = np.flatnonzero(group == g)
            # A head as wide as the group's longest row holds the whole rows.
            idx, val, _ = _cut_head(M[rows], int(counts[rows].max()), itype, dtype)
            index.append(idx)
            value.append(val)
            order[rows] = start + np.arange(rows.size)
            start += rows.size
        order[group < 0] = start
        if not value:  # M has no entry: one empty block keeps the dtype
            index, value = [jnp.zeros((0, 1), itype)], [jnp.zeros((0, 1), dtype)]
        return cls(index=tuple(index), value=tuple(value), order=jnp.asarray(order, jnp.int32),
                   num_rows=int(M.shape[0]))

    def _rows_sum(self, per_entry) -> jax.Array:
        """Σ over each row's entries of ``per_entry(value, index)``: each block's rows
        summed in place, then put in row order."""
        sums = [fused_sum(per_entry(v, i), axis=1)
                for v, i in zip(self.value, self.index, strict=True)]
        zero = jnp.zeros((1,) + sums[0].shape[1:], sums[0].dtype)
        return jnp.concatenate([*sums, zero])[self.order]

    def check(self, name: str, rows: int, cols: int) -> None:
        """Raise a ValueError naming ``name`` unless this is a layout of a rows × cols matrix
        as `from_csr` makes it (shapes always; indices where the arrays are concrete)."""
        if (self.num_rows != rows or jnp.shape(self.order) != (rows,) or not self.index
                or len(self.index) != len(self.value)
                or any(jnp.ndim(i) != 2 or jnp.shape(v) != jnp.shape(i)
                       for i, v in zip(self.index, self.value, strict=True))):
            raise ValueError(f"{name} does not fit a {rows} x {cols} matrix (num_rows, order, "
                             "and equal 2-D index and value blocks); build X with "
                             "DesignMatrix.from_any.")
        for v in self.value:
            _check_float(v.dtype, f"{name}.value")
        if len({v.dtype for v in self.value}) > 1:
            raise ValueError(f"{name}'s blocks hold values of different dtypes.")
        if _any_traced(self.order, *self.index):
            return
        for i in self.index:
            _check_indices(f"{name}.index", i, cols)
        held = sum(jnp.shape(i)[0] for i in self.index)
        order = np.asarray(self.order)
        placed = order[order < held]
        if order.size and (order.min() < 0 or order.max() > held
                           or placed.size != held or np.unique(placed).size != held):
            raise ValueError(f"{name}.order must place each of the blocks' {held} rows once "
                             f"(values in [0, {held}], {held} meaning an empty row); build X "
                             "with DesignMatrix.from_any.")

    def value_blocks(self) -> list[jax.Array]:
        """The arrays of stored values, one per block."""
        return list(self.value)

    def to_csr(self, num_cols: int) -> sp.csr_matrix:
        """M as a scipy CSR matrix with ``num_cols`` columns."""
        by_position = np.argsort(np.asarray(self.order), kind="stable")
        rows, index, value, start = [], [], [], 0
        for idx, val in zip(self.index, self.value, strict=True):
            r, width = idx.shape
            rows.append(np.repeat(by_position[start:start + r], width))
            index.append(np.asarray(idx).ravel())
            value.append(np.asarray(val).ravel())
            start += r
        rows, index, value = (np.concatenate(a) for a in (rows, index, value))
        keep = value != 0
        return sp.csr_matrix((value[keep], (rows[keep], index[keep])),
                             shape=(self.num_rows, num_cols))


def _cut_head(M: sp.csr_matrix, L: int, itype, dtype):
    """The first L entries of each row of M as (rows, L) index and value blocks, padded with
    zeros that point at the row's first column (column 0 in an empty row), and the rest of
    M as a CSR matrix."""
    counts = np.diff(M.indptr)
    first = M.indices[np.minimum(M.indptr[:-1], max(M.nnz - 1, 0))] if M.nnz else np.zeros(
        M.shape[0], int)
    index = np.repeat(np.where(counts > 0, first, 0).astype(itype)[:, None], L, axis=1)
    value = np.zeros((M.shape[0], L), dtype)
    row = np.repeat(np.arange(M.shape[0]), counts)
    rank = np.arange(M.nnz) - M.indptr[row]
    held = rank < L
    index[row[held], rank[held]] = M.indices[held]
    value[row[held], rank[held]] = M.data[held]
    rest = sp.csr_matrix((M.data[~held], M.indices[~held],
                          np.concatenate([[0], np.cumsum(np.maximum(counts - L, 0))])),
                         shape=M.shape)
    return jnp.asarray(index), jnp.asarray(value, dtype), rest


def _default_dtype(dtype):
    """The float dtype X is computed in when no dtype is given: float32 and float64 stay,
    float16 and bfloat16 are widened to float32 (nothing computes in half precision),
    integers, bools and wider floats become float64. As JAX can hold it: float64 becomes
    float32, without a warning, unless ``jax_enable_x64`` is on."""
    if jnp.issubdtype(dtype, jnp.floating) and jnp.finfo(dtype).bits in (32, 64):
        return jax.dtypes.canonicalize_dtype(dtype)
    if jnp.issubdtype(dtype, jnp.floating) and jnp.finfo(dtype).bits < 32:
        return jax.dtypes.canonicalize_dtype(jnp.float32)
    return jax.dtypes.canonicalize_dtype(jnp.float64)


def _stack_blocks(blocks: list[sp.csr_matrix], dtype, rows: bool) -> Chunks:
    """The rows of several same-width CSR blocks as one `Chunks` with a leading block axis:
    one chunk width (and head width) for all, each block padded at its end with all-zero
    chunks (owned by its last row, pointing where its last chunk points) to the same number
    of chunks. ``rows``: these are X's rows (the layout that may get a head)."""
    counts = np.concatenate([np.diff(M.indptr) for M in blocks])
    head = _row_head_width(counts) if rows else 0
    width = chunk_width(np.maximum(counts - head, 0))
    parts = [Chunks.from_csr(M, dtype, width, head) for M in blocks]
    size = max(c.owner.shape[0] for c in parts)

    def pad(c: Chunks) -> Chunks:
        extra = size - c.owner.shape[0]
        return dataclasses.replace(
            c, index=jnp.concatenate([c.index, jnp.repeat(c.index[-1:], extra, 0)]),
            value=jnp.concatenate([c.value, jnp.zeros((extra, width), c.value.dtype)]),
            owner=jnp.concatenate([c.owner, jnp.full(extra, c.num_rows - 1, jnp.int32)]))

    return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *[pad(c) for c in parts])


def float_dtype(dtype):
    """A ``dtype=`` argument checked: float32 or float64 (as JAX can hold it), else an error
    naming ``dtype``."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be float32 or float64; got {dtype!r}.") from None
    if dt not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64 (the dtypes nsjax computes in); "
                         f"got {dt.name}. Leave dtype=None to use X's own (float16 data is "
                         "computed in float32).")
    return jax.dtypes.canonicalize_dtype(dt)


def _same_csr(A: sp.csr_matrix, B: sp.csr_matrix) -> bool:
    """Whether A and B hold the same entries (NaN equal to NaN)."""
    for M in (A, B):
        M.sum_duplicates()
        M.sort_indices()
    return (A.shape == B.shape and np.array_equal(A.indptr, B.indptr)
            and np.array_equal(A.indices, B.indices)
            and np.array_equal(A.data, B.data, equal_nan=True))


def _any_traced(*arrays) -> bool:
    return any(isinstance(a, jax.core.Tracer) for a in arrays)


def _check_indices(name: str, index, cols: int) -> None:
    """Raise a ValueError naming ``name`` unless every index (None: none) is in [0, cols)."""
    idx = np.asarray(index) if index is not None else np.zeros(0, int)
    if idx.size and (idx.min() < 0 or idx.max() >= max(cols, 1)):
        raise ValueError(f"{name} holds indices outside [0, {cols}); build X with "
                         "DesignMatrix.from_any.")


def _check_float(dtype, name):
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"{name} must hold float32 or float64 values; got {np.dtype(dtype)}. "
                         "Build X with DesignMatrix.from_any.")


def chunk_width(counts: np.ndarray) -> int:
    """The chunk width W for rows of these lengths (`Chunks`): the W of 1, 2, 4, ..., 64
    that minimizes the padded entries plus 2 per chunk (a chunk's cost, in entries)."""
    def cost(width):
        chunks = int(np.sum(-(-counts // width)))
        return chunks * width + _CHUNK_COST * chunks
    return min(_WIDTHS, key=cost)


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class DesignMatrix:
    """The data matrix X of shape (n, d), dense or sparse.

    Build it with `DesignMatrix.from_any`. Weights may be (d,) or (d, K); scores are then
    (n,) or (n, K).

    Attributes:
        dense: the (n, d) array, or None for sparse data.
        by_row: X's rows as `Chunks` (sparse data), else None.
        by_col: X's columns (the rows of Xᵀ) as `Chunks`, else None.
        shape: (n, d), static.
        blocks: sparse data cut into this many equal blocks of rows (`split_rows`, for
            `nsjax.Problem.shard`): then by_row and by_col hold each block's layouts
            stacked along a leading axis, by_col's row indices local to the block. Static.
    """

    dense: jax.Array | None
    by_row: Chunks | None
    by_col: Chunks | None
    shape: tuple[int, int] = field(metadata=dict(static=True))
    blocks: int = field(default=1, metadata=dict(static=True))

    @property
    def nnz(self) -> int:
        """The number of stored entries (n·d for dense X), counted on the device from
        concrete values (no copy to the host). Not a static field: nearby sparse matrices
        share one compiled program."""
        if not self.is_sparse:
            return self.shape[0] * self.shape[1]
        return int(self.by_row.count_nonzero())

    @property
    def is_sparse(self) -> bool:
        """True for sparse data (chunked layouts), False for a dense array."""
        return self.dense is None

    @property
    def dtype(self):
        """The float dtype of the stored values."""
        return self.by_row.value.dtype if self.is_sparse else self.dense.dtype

    @classmethod
    def from_any(cls, X, dtype=None) -> DesignMatrix:
        """Wrap numpy / jax arrays, scipy.sparse matrices or a BCOO.

        Args:
            X: the data, shape (n, d): a numpy or jax array (or anything `numpy.asarray`
                takes), any scipy.sparse format (converted to CSR, duplicate entries
                summed) or a BCOO.
            dtype: float32 or float64; default: X's own float dtype, with float16 and
                bfloat16 widened to float32 and integers and bools converted to float64
                (float64 needs ``jax_enable_x64``, else JAX stores float32).

        Values are cast as they are (no checks): `nsjax.Problem` checks the result.
        """
        if isinstance(X, DesignMatrix):
            return X
        dtype = None if dtype is None else float_dtype(dtype)
        if isinstance(X, jsparse.BCOO):
            if X.ndim != 2 or X.n_batch or X.n_dense:
                raise ValueError(f"X as a BCOO must be a plain 2-D matrix (n_batch = n_dense = "
                                 f"0); got shape {X.shape}, n_batch={X.n_batch}, "
                                 f"n_dense={X.n_dense}. Use X.todense() or a scipy matrix.")
            idx = np.asarray(X.indices)
            X = sp.coo_matrix((np.asarray(X.data), (idx[:, 0], idx[:, 1])), shape=X.shape)
        if sp.issparse(X):
            # Any scipy format (LIL and DOK included) becomes CSR; duplicate entries are
            # summed here, so checks of the values must look at the result, not at X.
            csr = sp.csr_matrix(X, copy=True)
            csr.sum_duplicates()
            csr.eliminate_zeros()
            if dtype is None:
                dtype = _default_dtype(csr.dtype)
            head = _row_head_width(np.diff(csr.indptr))
            with np.errstate(over="ignore"):  # values beyond the dtype's range: see Problem
                by_row = Chunks.from_csr(csr, dtype, head=head)
                columns = Buckets if _col_buckets_wanted(csr.nnz) else Chunks
                by_col = columns.from_csr(csr.T.tocsr(), dtype)
            return cls(dense=None, by_row=by_row, by_col=by_col,
                       shape=(int(csr.shape[0]), int(csr.shape[1])))
        arr = np.asarray(X) if not isinstance(X, jax.Array) else X
        if arr.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d); got shape {arr.shape}. Reshape it.")
        if dtype is None:
            dtype = _default_dtype(arr.dtype)
        shape = (int(arr.shape[0]), int(arr.shape[1]))
        if isinstance(arr, np.ndarray):
            # Cast on the host: integers round to the nearest float (never through int32).
            with np.errstate(over="ignore"):  # values beyond the dtype's range: see Problem
                arr = arr.astype(dtype, copy=False)
        return cls(dense=jnp.asarray(arr, dtype), by_row=None, by_col=None, shape=shape)

    def check_layout(self) -> None:
        """Raise a ValueError naming X unless this matrix is laid out as `from_any` lays it
        out: for a `DesignMatrix` built by hand. Shapes are checked always; indices and the
        agreement of the row and column layouts where the arrays are concrete."""
        shape = self.shape
        if not (isinstance(shape, tuple) and len(shape) == 2
                and all(isinstance(k, (int, np.integer)) and k >= 0 for k in shape)):
            raise ValueError(f"X.shape must be a pair of ints (n, d); got {shape!r}. Build X "
                             "with DesignMatrix.from_any.")
        n, d = (int(k) for k in shape)
        if self.blocks != 1:
            raise ValueError("X is cut into blocks of rows (DesignMatrix.split_rows, for "
                             "Problem.shard); build the Problem from unsplit data and shard "
                             "the Problem.")
        if self.dense is not None:
            if self.by_row is not None or self.by_col is not None:
                raise ValueError("X holds both dense and sparse data; build it with "
                                 "DesignMatrix.from_any.")
            if jnp.shape(self.dense) != (n, d):
                raise ValueError(f"X.dense has shape {jnp.shape(self.dense)} but X.shape is "
                                 f"{shape}; build X with DesignMatrix.from_any.")
            _check_float(self.dense.dtype, "X.dense")
            return
        if not (isinstance(self.by_row, Chunks) and isinstance(self.by_col, (Chunks, Buckets))):
            raise ValueError("X holds no data: a DesignMatrix needs dense, or by_row (Chunks) "
                             "and by_col (Chunks or Buckets); build it with "
                             "DesignMatrix.from_any.")
        self.by_row.check("X.by_row", n, d)
        self.by_col.check("X.by_col", d, n)
        if self.by_row.dtype != self.by_col.dtype:
            raise ValueError("X.by_row and X.by_col hold values of different dtypes.")
        if not _any_traced(*jax.tree_util.tree_leaves((self.by_row, self.by_col))):
            if not _same_csr(self.by_row.to_csr(d), self.by_col.to_csr(n).T.tocsr()):
                raise ValueError("X.by_row and X.by_col hold different matrices; build X with "
                                 "DesignMatrix.from_any.")

    def can_pad(self) -> bool:
        """Whether `padded` applies: dense X, or sparse X in plain chunks (no dense head, no
        length buckets, not cut into blocks)."""
        if not self.is_sparse:
            return True
        return (self.blocks == 1 and isinstance(self.by_row, Chunks)
                and isinstance(self.by_col, Chunks) and self.by_row.head_index is None
                and self.by_col.head_index is None)

    def padded(self, rows: int, cols: int) -> DesignMatrix:
        """X of shape (rows, cols) ≥ (n, d): X's entries, then zero rows and zero columns.
        Dense X is copied (on the host); sparse X keeps its chunks, its layouts only count
        more (empty) rows and columns. Needs `can_pad`."""
        n, d = self.shape
        if not self.is_sparse:
            dense = np.pad(np.asarray(self.dense), ((0, rows - n), (0, cols - d)))
            return dataclasses.replace(self, dense=to_device(dense), shape=(rows, cols))
        return dataclasses.replace(
            self, by_row=dataclasses.replace(self.by_row, num_rows=rows),
            by_col=dataclasses.replace(self.by_col, num_rows=cols), shape=(rows, cols))

    def split_rows(self, blocks: int) -> DesignMatrix:
        """Sparse X with its rows cut into ``blocks`` equal blocks, each laid out on its own
        (`blocks`): the products run block by block (a vmap), so that with the blocks
        placed on different devices each device reads its own rows only, and Xᵀa is a sum
        of the blocks' parts (an all-reduce). n must be a multiple of ``blocks``."""
        n, d = self.shape
        if not self.is_sparse or blocks == self.blocks:
            return self
        if self.blocks != 1 or n % blocks:
            raise ValueError(f"cannot cut {n} rows (in {self.blocks} blocks) into {blocks} "
                             "equal blocks.")
        csr, size = self.to_scipy(), n // blocks
        parts = [csr[b * size:(b + 1) * size] for b in range(blocks)]
        dtype = self.dtype
        return DesignMatrix(None, _stack_blocks(parts, dtype, rows=True),
                            _stack_blocks([M.T.tocsr() for M in parts], dtype, rows=False),
                            self.shape, blocks)

    def mv(self, w: jax.Array) -> jax.Array:
        """Scores X w, shape (n,) or (n, K)."""
        if not self.is_sparse:
            return jnp.matmul(self.dense, w, precision=jax.lax.Precision.HIGHEST)
        if self.blocks > 1:  # each block's rows, then the blocks in order
            S = jax.vmap(lambda rows: rows.mv(w))(self.by_row)
            return S.reshape((self.shape[0],) + S.shape[2:])
        return self.by_row.mv(w)

    def _summed_over_blocks(self, product, a):
        """Σ over the blocks of ``product(block's column layout, block's rows of a)``: a
        product with Xᵀ of blocked sparse X (an all-reduce once the blocks are placed)."""
        rows = a.reshape((self.blocks, self.shape[0] // self.blocks) + a.shape[1:])
        return jnp.sum(jax.vmap(product)(self.by_col, rows), axis=0)

    def rmv(self, a: jax.Array) -> jax.Array:
        """Xᵀ a, shape (d,) or (d, K)."""
        if not self.is_sparse:
            # Not Xᵀa: XLA's CPU dot reads the transposed X several times slower than X w
            # reads X, and aᵀX is slower too; this fused column sum reads X once.
            if a.ndim == 1:
                return jnp.sum(self.dense * a[:, None], axis=0)
            return jnp.matmul(a.T, self.dense, precision=jax.lax.Precision.HIGHEST).T
        if self.blocks > 1:
            return self._summed_over_blocks(Chunks.mv, a)
        return self.by_col.mv(a)

    def sq_rmv(self, a: jax.Array) -> jax.Array:
        """(X∘X)ᵀ a = Σ_i a_i x_ij² for every column j, shape (d,): the diagonal of Xᵀ diag(a) X
        (one pass over X, like `rmv`)."""
        if not self.is_sparse:
            # One fused pass; a product with X∘X would first write that square out.
            return jnp.sum(self.dense * self.dense * a[:, None], axis=0)
        if self.blocks > 1:
            return self._summed_over_blocks(Chunks.sq_mv, a)
        return self.by_col.sq_mv(a)

    def row_sq_norms(self) -> jax.Array:
        """‖x_i‖² for every row, shape (n,)."""
        if not self.is_sparse:
            return jnp.sum(self.dense * self.dense, axis=1)
        if self.blocks > 1:
            return jax.vmap(lambda rows: rows.row_sq_norms())(self.by_row).reshape(-1)
        return self.by_row.row_sq_norms()

    # -- one row at a time (coordinate methods on the dual: `nsjax.solvers.DualCD`) ----------
    def row_starts(self) -> jax.Array | None:
        """For sparse X (not split into blocks): (n + 1,) where each row's chunks begin in
        ``by_row`` (row i's are ``starts[i]:starts[i + 1]``), for `row_dot` and `row_add`;
        None for dense X."""
        if not self.is_sparse:
            return None
        rows = jnp.arange(self.shape[0] + 1, dtype=jnp.int32)
        return jnp.searchsorted(self.by_row.owner, rows, side="left").astype(jnp.int32)

    def row_dot(self, i, w: jax.Array, starts) -> jax.Array:
        """x_iᵀ w for one row i (traced), w of shape (d,); ``starts`` from `row_starts`."""
        if not self.is_sparse:
            return jnp.dot(self.dense[i], w, precision=jax.lax.Precision.HIGHEST)
        rows = self.by_row
        total = jnp.zeros((), w.dtype)
        if rows.head_value is not None:
            total = jnp.dot(rows.head_value[i], w.at[rows.head_index[i]].get(
                mode="promise_in_bounds"))

        def chunk(c, total):
            return total + jnp.dot(rows.value[c], w.at[rows.index[c]].get(
                mode="promise_in_bounds"))

        return jax.lax.fori_loop(starts[i], starts[i + 1], chunk, total)

    def row_add(self, i, a, w: jax.Array, starts) -> jax.Array:
        """w + a x_i for one row i (traced) and a scalar a; ``starts`` from `row_starts`."""
        if not self.is_sparse:
            return w + a * self.dense[i]
        rows = self.by_row
        if rows.head_value is not None:
            w = w.at[rows.head_index[i]].add(a * rows.head_value[i], mode="promise_in_bounds")

        def chunk(c, w):
            return w.at[rows.index[c]].add(a * rows.value[c], mode="promise_in_bounds")

        return jax.lax.fori_loop(starts[i], starts[i + 1], chunk, w)

    def _over_rows(self, idx, starts, carry, chunk):
        """Fold ``chunk(carry, index, value, valid)`` over the entries of the rows ``idx``
        (B,) together, the k-th chunk of every row at step k (blocks of shape (B, W), with
        ``valid`` (B, 1) False past a row's end); a head first (as one step)."""
        rows = self.by_row
        if rows.head_value is not None:
            carry = chunk(carry, rows.head_index[idx], rows.head_value[idx],
                          jnp.ones((idx.shape[0], 1), bool))
        first, count = starts[idx], starts[idx + 1] - starts[idx]

        def step(k, carry):
            c = jnp.minimum(first + k, rows.value.shape[0] - 1)
            return chunk(carry, rows.index[c], rows.value[c], (k < count)[:, None])

        return jax.lax.fori_loop(0, jnp.max(count), step, carry)

    def rows_dot(self, idx, w: jax.Array, starts) -> jax.Array:
        """X[idx] w for the rows ``idx`` (B,), w of shape (d,); ``starts`` from
        `row_starts`."""
        if not self.is_sparse:
            return jnp.matmul(self.dense[idx], w, precision=jax.lax.Precision.HIGHEST)

        def chunk(total, index, value, valid):
            gathered = w.at[index].get(mode="promise_in_bounds")
            return total + jnp.sum(jnp.where(valid, value * gathered, 0.0), axis=1)

        return self._over_rows(idx, starts, jnp.zeros(idx.shape, w.dtype), chunk)

    def rows_add(self, idx, a: jax.Array, w: jax.Array, starts) -> jax.Array:
        """w + X[idx]ᵀ a for the rows ``idx`` (B,) and a of shape (B,)."""
        if not self.is_sparse:
            return w + jnp.matmul(a, self.dense[idx], precision=jax.lax.Precision.HIGHEST)

        def chunk(w, index, value, valid):
            return w.at[index].add(jnp.where(valid, a[:, None] * value, 0.0),
                                   mode="promise_in_bounds")

        return self._over_rows(idx, starts, w, chunk)

    def rows_clear(self, idx, w: jax.Array, starts) -> jax.Array:
        """w with the entries of the columns that the rows ``idx`` (B,) use set to 0 (a
        scratch vector cleared in O(their entries), not O(d)); dense X: all of w."""
        if not self.is_sparse:
            return jnp.zeros_like(w)

        def chunk(w, index, value, valid):
            return w.at[index].set(0.0, mode="promise_in_bounds")

        return self._over_rows(idx, starts, w, chunk)

    def to_scipy(self) -> sp.csr_matrix | np.ndarray:
        """X as a scipy CSR matrix (sparse data) or a numpy array (dense data)."""
        if not self.is_sparse:
            return np.asarray(self.dense)
        if self.blocks > 1:
            rows = jax.tree_util.tree_map(np.asarray, self.by_row)
            return sp.vstack([jax.tree_util.tree_map(lambda a, b=b: a[b], rows).to_csr(
                self.shape[1]) for b in range(self.blocks)], format="csr")
        return self.by_row.to_csr(self.shape[1])

"""Sparse products X p and Xᵀu in other layouts, against nsjax's chunked one (issue 14 item 5).

``gpu.py`` found the two products at 15-17 % of the read roofline on an H100 (1.0 and 1.25 ms
for 0.46 GB each at 1M x 1M, float32) and ~65 % of a subLBFGS step. This script times, on the
same text-like set (``large_scale.generate``: n = d = N, 50 nonzeros a row, column
frequencies ∝ (j + 1)^-1.1), each product in each layout, jitted with the layout an argument,
best of ``REPEATS`` after a compiling call:

* ``chunks W=w``: `nsjax.data.Chunks` at a forced chunk width w (nsjax picks W by a CPU cost
  model: the chosen one is marked); one gather, a sum over W, a sorted ``segment_sum``.
* ``coo``: sorted triplets, a gather and a sorted ``segment_sum`` of every entry.
* ``head + chunks``: the hybrid (HYB) format, `Chunks` with a head: each row's first L
  entries in an (n, L) block (a plain sum, no scatter), the rest in chunks; L from
  `nsjax.data.head_width` (what nsjax does on GPUs, for X p), or the q-quantile of the
  lengths.
* ``length buckets``: `nsjax.data.Buckets`, rows grouped by ⌊log₂ length⌋, each group a
  dense block of its longest row's width; no scatter at all, one gather to put the sums in
  order (for power-law lengths, where a head holds little; nsjax's column layout on GPUs).
  Two groups per doubling were timed once and were slower (RESULTS.md).
* ``cusparse``: ``jax.experimental.sparse.BCSR`` of X (and of Xᵀ for Xᵀu) with JAX's
  cuSPARSE lowering switched on (``jax_bcoo_cusparse_lowering``; GPU only).

Each product is checked against scipy's (float64) to float32's reach. Output: a table (ms, GB
of the layout, GB/s it reaches against the measured read bandwidth) and
``<out>/gpu_products.json``.

``--split`` times instead where nsjax's own layouts (the row head for X p, the buckets for
Xᵀu, as a GPU gets them) spend their time: the product; the *stream* alone (every stored
value summed by row: the same reads of the values, no gather of v); the *gather* alone (v
at every stored index summed by row: the index reads and the gather, no values), for Xᵀu
also with u in bfloat16 and in int8 (a hinge's u is mostly 0 or ±1/n: would fewer bytes a
gathered entry help? On an H100 little: 0.48 and 0.47 ms against 0.52 ms). It also
counts the 32-byte sectors of v that the gathers touch (8 float32 entries each, per row of
the layout), the traffic a gather makes in the GPU's L2 cache where v fits in it.

    python benchmarks/gpu_products.py [--n N] [--out DIR] [--split]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jax

jax.config.update("jax_bcoo_cusparse_lowering", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from jax.experimental import sparse as jsparse  # noqa: E402

from nsjax.data import Buckets, Chunks, _chunk_width, head_width  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, save_json  # noqa: E402
from dense_step import best_of  # noqa: E402
from large_scale import generate, read_bandwidth  # noqa: E402

REPEATS = 20
WIDTHS = (4, 8, 16, 32, 64)
QUANTILES = (0.5, 0.9)


def nbytes(tree) -> int:
    return sum(int(x.nbytes) for x in jax.tree_util.tree_leaves(tree))


def coo(M: sp.csr_matrix):
    row = np.repeat(np.arange(M.shape[0], dtype=np.int32), np.diff(M.indptr))
    return (jnp.asarray(row), jnp.asarray(M.indices.astype(np.int32)),
            jnp.asarray(M.data.astype(np.float32)))


@jax.jit
def coo_mv(t, v):
    row, col, val = t
    return jax.ops.segment_sum(val * v[col], row, num_segments=v.shape[0],
                               indices_are_sorted=True)


@jax.jit
def layout_mv(c, v):
    """M v in one of nsjax's layouts (`Chunks`, `Buckets`)."""
    return c.mv(v)


@jax.jit
def bcsr_mv(m, v):
    return m @ v


def candidates(M: sp.csr_matrix, gpu: bool):
    """(name, layout, product) for M v."""
    chosen = _chunk_width(np.diff(M.indptr))
    for w in WIDTHS:
        mark = " (nsjax's)" if w == chosen else ""
        yield f"chunks W={w}{mark}", Chunks.from_csr(M, np.float32, w), layout_mv
    yield "coo", coo(M), coo_mv
    L = head_width(np.diff(M.indptr))
    if L:
        yield f"nsjax's row head (L={L}) + chunks", Chunks.from_csr(M, np.float32, head=L), \
            layout_mv
    for q in QUANTILES:
        L = max(int(np.quantile(np.diff(M.indptr), q)), 1)
        yield f"head q={q} (L={L}) + chunks", Chunks.from_csr(M, np.float32, head=L), layout_mv
    b = Buckets.from_csr(M, np.float32)
    yield f"nsjax's length buckets ({len(b.index)})", b, layout_mv
    if gpu:
        M32 = M.astype(np.float32)
        yield "cusparse (BCSR)", jsparse.BCSR((jnp.asarray(M32.data),
                                               jnp.asarray(M32.indices.astype(np.int32)),
                                               jnp.asarray(M32.indptr.astype(np.int32))),
                                              shape=M.shape), bcsr_mv


@jax.jit
def stream_only(c, v):
    """Σ of the stored values by row: the product's reads of the values, no gather."""
    del v
    return c._rows_sum(lambda value, index: value)


@jax.jit
def gather_only(c, v):
    """Σ of v at the stored indices by row: the index reads and the gather, no values (v of
    any dtype, summed in the values' dtype)."""
    return c._rows_sum(lambda value, index: v.at[index].get(
        mode="promise_in_bounds").astype(value.dtype))


def sectors_per_entry(M: sp.csr_matrix, per: int = 8) -> float:
    """The distinct (row, 32-byte sector of v) pairs a gather of v at M's indices touches,
    per stored entry (v in float32: 8 entries a sector)."""
    row = np.repeat(np.arange(M.shape[0], dtype=np.int64), np.diff(M.indptr))
    return np.unique(row * (M.shape[1] // per + 1) + M.indices // per).size / max(M.nnz, 1)


def split(X: sp.csr_matrix, bw: float, res: dict) -> None:
    """``--split``: the product, stream and gather of nsjax's layouts (module docstring)."""
    rng = np.random.default_rng(0)
    for direction, M in (("X p", X.tocsr()), ("Xᵀu", X.T.tocsr())):
        if direction == "X p":
            L = head_width(np.diff(M.indptr))
            layout, name = Chunks.from_csr(M, np.float32, head=L), f"row head (L={L}) + chunks"
        else:
            layout = Buckets.from_csr(M, np.float32)
            name = f"length buckets ({len(layout.index)})"
        v = jnp.asarray(rng.standard_normal(M.shape[1]), jnp.float32)
        b, sectors = nbytes(layout), sectors_per_entry(M)
        parts = [("product", layout_mv, v), ("stream", stream_only, v),
                 ("gather", gather_only, v)]
        if direction == "Xᵀu":  # a narrower u: fewer bytes per gathered entry, as many gathers
            parts += [("gather bf16", gather_only, v.astype(jnp.bfloat16)),
                      ("gather int8", gather_only, jnp.sign(v).astype(jnp.int8))]
        for part, fn, vec in parts:
            t = best_of(fn, layout, vec, reps=REPEATS)
            res["rows"].append({"product": direction, "layout": name, "part": part,
                                "ms": 1e3 * t, "bytes": b, "of_read_bandwidth": b / t / bw,
                                "v_sectors_per_nnz": sectors})
            print(f"{direction:4s} {name:28s} {part:8s} {1e3 * t:8.3f} ms "
                  f"({100 * b / t / bw:5.1f} % of read for the layout's {b / 1e9:.3f} GB; "
                  f"{sectors:.3f} sectors of v per nonzero)", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--split", action="store_true",
                        help="nsjax's layouts: product, stream and gather alone")
    args = parser.parse_args(argv)
    dev = jax.devices()[0]
    gpu = dev.platform == "gpu"
    bw = read_bandwidth(2**31 if gpu else 2**28)
    X, _ = generate(args.n)
    res = {"device": f"{dev.platform}: {getattr(dev, 'device_kind', str(dev))}",
           "machine": machine(), "n": args.n, "nnz": int(X.nnz), "read_bandwidth": bw,
           "rows": []}
    if args.split:
        split(X, bw, res)
        save_json(args.out / "gpu_products_split.json", res)
        return
    rng = np.random.default_rng(0)
    for direction, M in (("X p", X.tocsr()), ("Xᵀu", X.T.tocsr())):
        v64 = rng.standard_normal(M.shape[1])
        ref = M @ v64
        v = jnp.asarray(v64, jnp.float32)
        for name, layout, fn in candidates(M, gpu):
            t = best_of(fn, layout, v, reps=REPEATS)
            err = float(np.max(np.abs(np.asarray(fn(layout, v), np.float64) - ref))
                        / np.max(np.abs(ref)))
            b = nbytes(layout)
            row = {"product": direction, "layout": name, "ms": 1e3 * t, "bytes": b,
                   "gb_s": b / t / 1e9, "of_read_bandwidth": b / t / bw, "rel_err": err}
            res["rows"].append(row)
            print(f"{direction:4s} {name:30s} {1e3 * t:8.3f} ms {b / 1e9:6.3f} GB "
                  f"{b / t / 1e9:7.0f} GB/s ({100 * b / t / bw:5.1f} % of read) err {err:.1e}",
                  flush=True)
            del layout
            save_json(args.out / "gpu_products.json", res)
    print(f"read bandwidth {bw / 1e9:.0f} GB/s; wrote {args.out / 'gpu_products.json'}")


if __name__ == "__main__":
    main()

"""Memory per stored nonzero of nsjax's sparse layout against scipy's CSR (issue 14, item 4).

Text-like data: ``nsjax.datasets.synthetic_sparse(n, d, 50 / d, seed=0, power=1.1)`` with
n = d (power-law column frequencies p_j ∝ (j + 1)^-1.1, capped at half the rows; unit-norm
rows; 50 nonzeros per row on average), generated here from its seed, never stored. For each
size it records the generation time, nnz, the share of nnz in the 10 most frequent columns
and the longest column; then, for float32 and float64 (values cast from the float64 set):

- CSR: ``data.nbytes + indices.nbytes + indptr.nbytes`` of the scipy matrix (int32 indices);
- nsjax: ``DesignMatrix.from_any(X, dtype)`` (its wall time, one build: the first dtype of a
  size runs on freshly mapped memory and is slower, 0.27 against 0.07 s at 1 M nnz), and for
  ``by_row`` (X w) and ``by_col`` (Xᵀ u) the ``.nbytes`` of every array leaf (index, value,
  owner), the chunk width W, the slots (``index.size``) and the padding, 100 · (slots - nnz) /
  nnz %. "both" is by_row + by_col: nsjax keeps both.
- memory: the numpy peak of generation and of the build (``tracemalloc``, which counts numpy
  buffers, not JAX/XLA ones: add the layout's own bytes for the build's true peak), JAX's
  ``memory_stats()`` where the device has them (None on the CPU), and the process's peak RSS
  after each size (``ru_maxrss``: a high-water mark since start, JAX's own ~0.3 GB included;
  a rough figure). Each size is released (del, gc.collect) before the next. A tiny build
  per dtype first warms JAX up, so that its start is not counted in the first build time.

Output: a table, ``benchmarks/results/memory_layout.json`` and ``benchmarks/memory_layout.png``
(bytes per nnz of each layout for each size, a panel per dtype); ``--quick``: n = d in
{2,000, 20,000} instead of {10,000, 100,000, 1,000,000}, files ``*_quick``.

    python benchmarks/memory_layout.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import jax
import numpy as np

import nsjax
from nsjax.datasets import synthetic_sparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, machine, save_figure, save_json  # noqa: E402  (the script's folder is on sys.path)

jax.config.update("jax_enable_x64", True)

FULL, QUICK = (10_000, 100_000, 1_000_000), (2_000, 20_000)
PER_ROW, POWER, SEED = 50, 1.1, 0
DTYPES = ("float32", "float64")
LAYOUTS = ("csr", "by_row", "by_col", "both")


def peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def chunk_stats(ch, nnz: int) -> dict:
    """Bytes (per leaf), padding and shape of one layout: `Chunks` (width W, chunks, head
    width) or `nsjax.data.Buckets` (width: its widest block; chunks: its blocks)."""
    leaves = {jax.tree_util.keystr(p).lstrip("."): int(a.nbytes)
              for p, a in jax.tree_util.tree_leaves_with_path(ch)}
    if isinstance(ch, nsjax.data.Buckets):
        slots = sum(int(i.size) for i in ch.index)
        shape = {"width": max(int(i.shape[1]) for i in ch.index), "head_width": 0,
                 "chunks": len(ch.index), "index_dtype": str(ch.index[0].dtype)}
    else:
        slots = int(ch.index.size) + (0 if ch.head_index is None else int(ch.head_index.size))
        shape = {"width": int(ch.index.shape[1]),
                 "head_width": 0 if ch.head_index is None else int(ch.head_index.shape[1]),
                 "chunks": int(ch.index.shape[0]), "index_dtype": str(ch.index.dtype)}
    return {"bytes": sum(leaves.values()), "leaf_bytes": leaves, **shape, "slots": slots,
            "padding_pct": 100 * (slots - nnz) / nnz}


def measure_size(n: int) -> list[dict]:
    tracemalloc.start()
    t0 = time.perf_counter()
    X, y = synthetic_sparse(n, n, PER_ROW / n, seed=SEED, power=POWER)
    gen_s = time.perf_counter() - t0
    gen_peak = tracemalloc.get_traced_memory()[1]
    assert X.format == "csr" and y.shape == (n,), (X.format, y.shape)
    nnz = int(X.nnz)
    col_counts = np.sort(np.bincount(X.indices, minlength=n))[::-1]
    data = {"n": n, "d": n, "nnz": nnz, "generate_s": gen_s, "generate_peak_bytes": gen_peak,
            "top10_col_share": float(col_counts[:10].sum() / nnz),
            "longest_col": int(col_counts[0]), "empty_cols": int(np.sum(col_counts == 0)),
            "longest_row": int(np.diff(X.indptr).max())}
    rows = []
    for dt in DTYPES:
        Xd = X.astype(dt)
        csr = int(Xd.data.nbytes + Xd.indices.nbytes + Xd.indptr.nbytes)
        tracemalloc.reset_peak()
        t0 = time.perf_counter()
        D = nsjax.DesignMatrix.from_any(Xd, dt)
        jax.block_until_ready(D)
        build_s = time.perf_counter() - t0
        build_peak = tracemalloc.get_traced_memory()[1]
        assert D.nnz == nnz and D.dtype == np.dtype(dt)
        parts = {"by_row": chunk_stats(D.by_row, nnz), "by_col": chunk_stats(D.by_col, nnz)}
        nbytes = {"csr": csr, **{k: v["bytes"] for k, v in parts.items()}}
        nbytes["both"] = nbytes["by_row"] + nbytes["by_col"]
        rows.append({**data, "dtype": dt, "csr_index_dtype": str(Xd.indices.dtype),
                     "bytes": nbytes, "bytes_per_nnz": {k: v / nnz for k, v in nbytes.items()},
                     **parts, "build_s": build_s, "build_peak_numpy_bytes": build_peak,
                     "device_memory_stats": jax.devices()[0].memory_stats()})
        del D, Xd
        gc.collect()
    del X, y
    gc.collect()
    tracemalloc.stop()
    for r in rows:
        r["peak_rss_gib_after_size"] = peak_rss_gib()
    return rows


def plot(rows: list[dict], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(DTYPES), figsize=(6 * len(DTYPES), 4.5), squeeze=False)
    for ax, dt in zip(axes[0], DTYPES, strict=True):
        sel = [r for r in rows if r["dtype"] == dt]
        x, width = np.arange(len(sel)), 0.8 / len(LAYOUTS)
        for i, lay in enumerate(LAYOUTS):
            vals = [r["bytes_per_nnz"][lay] for r in sel]
            bars = ax.bar(x + (i - 1.5) * width, vals, width, color=f"C{i}",
                          label="nsjax by_row + by_col" if lay == "both" else
                          ("scipy CSR" if lay == "csr" else f"nsjax {lay}"))
            ax.bar_label(bars, fmt="%.1f", fontsize=7)
        ax.set_xticks(x, [f"n = d = {r['n']:,}\nnnz = {r['nnz']:,}" for r in sel], fontsize=8)
        ax.set_ylabel("bytes per stored nonzero")
        ax.set_title(dt)
        ax.legend(fontsize=8)
    save_figure(plt, fig, title, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = d in {2,000, 20,000}")
    quick = ap.parse_args().quick
    start, rows = time.perf_counter(), []
    for dt in DTYPES:  # warm-up: JAX's backend start and first transfers are not the build's
        jax.block_until_ready(nsjax.DesignMatrix.from_any(synthetic_sparse(50, 50, 0.1)[0], dt))
    head = (f"{'n = d':>9s} {'dtype':7s} {'nnz':>10s} {'CSR':>5s} {'row':>5s} {'col':>5s} "
            f"{'both':>5s} {'pad row':>7s} {'pad col':>7s} {'W r/c':>5s} {'build s':>7s} "
            f"{'gen s':>6s} {'top10':>5s} {'gen pk':>6s} {'bld pk':>6s} {'RSS GiB':>7s}")
    print("bytes per nnz (CSR, by_row, by_col, both); padding % of nnz; W: chunk width; "
          "top10: share of nnz in the 10 most frequent columns; numpy peaks of generation and "
          "build (tracemalloc) in bytes per nnz; RSS: process peak after the size\n" + head)
    for n in QUICK if quick else FULL:
        for r in measure_size(n):
            rows.append(r)
            b, nnz = r["bytes_per_nnz"], r["nnz"]
            print(f"{n:9,d} {r['dtype']:7s} {nnz:10,d} {b['csr']:5.2f} {b['by_row']:5.2f} "
                  f"{b['by_col']:5.2f} {b['both']:5.2f} {r['by_row']['padding_pct']:6.1f}% "
                  f"{r['by_col']['padding_pct']:6.1f}% "
                  f"{r['by_row']['width']:>2d}/{r['by_col']['width']:<2d} {r['build_s']:7.2f} "
                  f"{r['generate_s']:6.2f} {r['top10_col_share']:5.3f} "
                  f"{r['generate_peak_bytes'] / nnz:6.1f} "
                  f"{r['build_peak_numpy_bytes'] / nnz:6.1f} "
                  f"{r['peak_rss_gib_after_size']:7.2f}", flush=True)
    host = machine({"scipy": __import__("scipy").__version__})
    suffix = "_quick" if quick else ""
    out = HERE / "results" / f"memory_layout{suffix}.json"
    save_json(out, {"benchmark": "memory_layout", "quick": quick, "nnz_per_row": PER_ROW,
                    "power": POWER, "seed": SEED, "rows": rows, "machine": host,
                    "total_time_s": time.perf_counter() - start})
    png = HERE / f"memory_layout{suffix}.png"
    plot(rows, png, f"Bytes per stored nonzero, text-like data (power {POWER}, {PER_ROW} "
         f"nnz per row, n = d), {host['cpu_model']}, JAX {host['jax']}")
    print(f"wrote {out} and {png}")


if __name__ == "__main__":
    main()

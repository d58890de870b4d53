"""Execute the notebooks in this folder, in memory, and report the seconds each one took.

    python notebooks/run_all.py                    # every *.ipynb here, NSJAX_NOTEBOOK_SMALL=1
    python notebooks/run_all.py 03_oba --cells     # one notebook, with the seconds per cell
    python notebooks/run_all.py --full             # laptop scale (NSJAX_NOTEBOOK_SMALL unset)
    python notebooks/run_all.py --save /tmp/out    # also write the executed copies there

Each notebook runs top to bottom in a fresh ``python3`` kernel (the Python that runs this
script, where ipykernel is installed next to nsjax) started from this folder, with
NSJAX_NOTEBOOK_SMALL=1 (the notebooks' smoke-test size) unless ``--full``. Nothing is
written back: the notebooks stay without outputs (``--save DIR`` writes executed copies,
with their outputs, to DIR instead). The first error (an exception in a
cell, a cell running past ``--timeout`` seconds, a kernel that dies) ends the run with exit
status 1, naming the notebook and the cell (its number, counting from 1 over all cells,
and its first line); the traceback follows. Needs ``nbformat``, ``nbclient`` and
``ipykernel`` (and nsjax with matplotlib, which the notebooks import).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def notebooks(names: list[str]) -> list[Path]:
    """The notebooks named (a path, a file name, or a name without ``.ipynb``), or all."""
    if not names:
        found = sorted(HERE.glob("*.ipynb"))
        if not found:
            sys.exit(f"no notebooks in {HERE}")
        return found
    paths = []
    for name in names:
        candidates = [Path(name), HERE / name, HERE / f"{name}.ipynb"]
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            sys.exit(f"no notebook {name!r} (looked for {', '.join(map(str, candidates))})")
        paths.append(path)
    return paths


def first_line(cell) -> str:
    lines = [line for line in cell.source.splitlines() if line.strip()]
    return lines[0][:80] if lines else "(empty)"


def run_one(path: Path, timeout: int, show_cells: bool, save: Path | None = None) -> float:
    """Execute one notebook; returns its wall-clock seconds. Exits on the first error."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    current: dict = {}
    cell_times: list[tuple[int, float, str]] = []

    def on_cell_start(cell, cell_index, **_):
        current.update(index=cell_index, start=time.perf_counter())

    def on_cell_executed(cell, cell_index, **_):
        if cell.cell_type == "code":
            cell_times.append((cell_index, time.perf_counter() - current["start"],
                               first_line(cell)))

    client = NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=False,
        resources={"metadata": {"path": str(HERE)}},
        on_cell_start=on_cell_start, on_cell_executed=on_cell_executed,
    )
    start = time.perf_counter()
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
        index = current.get("index")
        where = ("before the first cell" if index is None else
                 f"cell {index + 1} of {len(nb.cells)} ({first_line(nb.cells[index])!r})")
        kind = {CellTimeoutError: f"ran past the {timeout} s timeout",
                DeadKernelError: "killed the kernel"}.get(type(error), "raised an exception")
        message = ANSI.sub("", str(error))  # IPython colours its tracebacks
        print(f"\n{message}\n\nFAILED: {path.name}, {where} {kind} (above)", file=sys.stderr,
              flush=True)
        sys.exit(1)
    seconds = time.perf_counter() - start
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, save / path.name)
    if show_cells:
        for index, secs, line in cell_times:
            print(f"    cell {index + 1:>3}  {secs:7.2f} s  {line}")
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", help="names or paths (default: all here)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (600)")
    parser.add_argument("--full", action="store_true",
                        help="laptop scale: do not set NSJAX_NOTEBOOK_SMALL=1")
    parser.add_argument("--cells", action="store_true", help="print the seconds per cell")
    parser.add_argument("--save", type=Path, metavar="DIR",
                        help="write the executed notebooks (with outputs) to DIR")
    args = parser.parse_args(argv)
    # The kernels inherit this process's environment.
    if args.full:
        os.environ.pop("NSJAX_NOTEBOOK_SMALL", None)
    else:
        os.environ["NSJAX_NOTEBOOK_SMALL"] = "1"
    paths = notebooks(args.notebooks)
    size = "laptop scale" if args.full else "NSJAX_NOTEBOOK_SMALL=1"
    print(f"executing {len(paths)} notebook(s), {size}, timeout {args.timeout} s per cell",
          flush=True)
    total = 0.0
    for path in paths:
        if args.save is not None and args.save.resolve() == HERE:
            sys.exit("--save must name another folder: the notebooks here stay without outputs")
        seconds = run_one(path, args.timeout, args.cells, args.save)
        total += seconds
        print(f"{path.name:28s} {seconds:7.1f} s", flush=True)
    print(f"{'total':28s} {total:7.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`python -m nsjax demo`: train on the bundled data, print a table, write a convergence plot;
`train`, `predict` and `bench` are in `nsjax.cli`. Bad input to any command ends it with
exit status 2 and one line on stderr (``nsjax: error: ...``, see `nsjax.cli`)."""

from __future__ import annotations

import sys
import time

import numpy as np


def demo(out: str, lam: float, max_steps: int) -> int:
    import jax

    jax.config.update("jax_enable_x64", True)
    import warnings

    import nsjax

    # The table's last column gives every run's status; no warning on top of it.
    warnings.simplefilter("ignore", nsjax.ConvergenceWarning)
    rows, curves = [], {}
    # The default solve (no solver given: the Hybrid) first, then its two ingredients'
    # ancestors for comparison.
    solvers = {"default": None, "subLBFGS": nsjax.solvers.SubLBFGS(memory=15),
               "qp-BMRM": nsjax.solvers.BMRM()}
    tasks = [("breast_cancer", "hinge"), ("digits_binary", "hinge"), ("digits", "multiclass")]
    # (subLBFGS alone does not close the gap on the 10-class digits in a demo's time.)
    runs = [(t, s) for t in tasks for s in solvers
            if not (t[1] == "multiclass" and s == "subLBFGS")]
    for (name, loss), solver_name in runs:
        X, y = getattr(nsjax.datasets, name)()
        loss_fn = nsjax.losses.Hinge() if loss == "hinge" else nsjax.losses.MulticlassHinge()
        prob = nsjax.Problem(loss_fn, nsjax.regularizers.L2(lam), X, y)
        solver = solvers[solver_name]
        t0 = time.perf_counter()
        nsjax.solve(prob, solver, max_steps=max_steps, tol=1e-6).w.block_until_ready()
        compile_and_run = time.perf_counter() - t0
        t0 = time.perf_counter()
        sol = nsjax.solve(prob, solver, max_steps=max_steps, tol=1e-6)
        sol.w.block_until_ready()
        run = time.perf_counter() - t0
        scores = np.asarray(X @ np.asarray(sol.w))
        if loss == "hinge":
            pred = np.where(scores > 0, prob.classes[1], prob.classes[0])
        else:
            pred = np.asarray(prob.classes)[np.argmax(scores, axis=1)]
        acc = float(np.mean(pred == y))
        label = name if loss == "hinge" else f"{name} (K={len(prob.classes)})"
        rows.append((label, solver_name, X.shape, float(sol.value), float(sol.gap), acc,
                     int(sol.num_steps), run, compile_and_run - run, sol.result.name))
        steps = int(sol.num_steps)
        curves[f"{label}, {solver_name}"] = np.asarray(sol.history.gap[:steps])

    head = (f"{'dataset':<19}{'solver':<10}{'n x d':>9}{'objective':>11}{'cert. gap':>11}"
            f"{'train acc':>10}{'iters':>7}{'time s':>8}{'compile s':>10}  result")
    print(f"L2-regularized hinge (binary; Crammer-Singer for K classes), lambda = {lam:g}, "
          f"tol = 1e-6, max_steps = {max_steps}, "
          f"device {jax.devices()[0].platform}")
    print(head)
    print("-" * len(head))
    for name, solver_name, shape, val, gap, acc, it, run, comp, res in rows:
        print(f"{name:<19}{solver_name:<10}{f'{shape[0]}x{shape[1]}':>9}{val:>11.6f}"
              f"{gap:>11.2e}{acc:>10.4f}{it:>7}{run:>8.3f}{comp:>10.2f}  {res}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for label, gap in curves.items():
        ax.semilogy(np.arange(1, len(gap) + 1), np.maximum(gap, 1e-16), label=label)
    ax.set_xlabel("iteration")
    ax.set_ylabel("certified gap (upper bound on J(w) - J*)")
    ax.set_title(f"L2-regularized hinge, lambda = {lam:g}")
    ax.legend(fontsize=6)
    fig.tight_layout()
    # Exactly the path given (matplotlib would add .png to a name without an extension).
    with open(out, "wb") as f:
        fig.savefig(f, dpi=120, format=_plot_format(out))
    print(f"convergence plot written to {out}")
    return 0


def _demo(args) -> int:
    """The demo's checks before its runs: matplotlib installed, the plot's path writable."""
    import importlib.util

    from nsjax import cli

    cli.check_output(args.out, "--out")
    if importlib.util.find_spec("matplotlib") is None:
        raise cli.InputError("the demo needs matplotlib for its plot: pip install matplotlib "
                             "(or the package's 'demo' extra).")
    if importlib.util.find_spec("sklearn") is None:
        raise cli.InputError("the demo needs scikit-learn for its data sets: pip install "
                             "\"nsjax[sklearn]\" (or the package's 'demo' extra).")
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    if _plot_format(args.out) not in formats:
        raise cli.InputError(f"--out {args.out!r}: matplotlib cannot write "
                             f"{_plot_format(args.out)!r} files; end the name with one of "
                             f"{', '.join('.' + f for f in sorted(formats))}.")
    return demo(args.out, args.lam, args.max_steps)


def _plot_format(out: str) -> str:
    """The plot's format, from the name's extension (PNG without one)."""
    from pathlib import Path

    return Path(out).suffix[1:].lower() or "png"


def main(argv=None) -> int:
    """Run ``python -m nsjax`` with ``argv`` (default: the command line's); the exit status:
    2 with one line on stderr for bad input, 130 on Ctrl-C."""
    from nsjax import cli

    parser = cli.ArgumentParser(prog="python -m nsjax")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="train on bundled data, print a table, write a plot")
    d.add_argument("--out", default="nsjax_demo.png",
                   help="where to write the plot: PNG, or the format its extension names "
                   "(its directory must exist)")
    d.add_argument("--lam", type=cli.positive_float(hint=cli.LAM_HINT),
                   default=1e-3, help="regularization strength lambda > 0")
    d.add_argument("--max-steps", type=cli.positive_int(cli.MAX_STEPS, cli.MAX_STEPS_HINT),
                   default=2000)
    cli.add_commands(sub)
    return cli.run(parser, argv, {"demo": _demo, **cli.COMMANDS})


if __name__ == "__main__":
    sys.exit(main())

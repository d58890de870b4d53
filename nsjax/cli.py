"""The command line beyond the demo: ``python -m nsjax train | predict | bench``.

    python -m nsjax train data.svm --loss hinge --C 1 --bias --out model.npz
    python -m nsjax predict model.npz test.svm > predictions.txt
    python -m nsjax bench

Data files are svmlight / libsvm text (read by scikit-learn's loader; a malformed line is
named with its number) or ``.npz`` files holding arrays ``X`` and ``y`` (``np.savez``). A
model is an ``.npz`` file: the weights as solved (with the bias last), the class values,
the problem's description and the run's certified gap. ``train`` exits with 0 when the run
reached ``--tol``, 3 when it stopped short (the model is saved either way), 2 on bad input.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

MODEL_FORMAT = "nsjax-linear-model-1"
LOSSES = ("hinge", "logistic", "squared", "multiclass")
REGULARIZERS = ("l2", "l1", "elasticnet")


class InputError(ValueError):
    """Bad input to a command: printed without a traceback, exit status 2."""


def load_data(path, n_features=None, dtype=np.float64):
    """(X, y) from an svmlight / libsvm file or an ``.npz`` file with arrays X and y."""
    from nsjax import datasets

    file = Path(path)
    if file.suffix != ".npz":
        try:
            return datasets.load_svmlight(file, n_features=n_features, dtype=dtype)
        except (FileNotFoundError, ValueError) as e:
            raise InputError(str(e)) from None
    if not file.is_file():
        raise InputError(f"data file not found: {str(file)!r}.")
    with np.load(file, allow_pickle=False) as data:
        missing = {"X", "y"} - set(data.files)
        if missing:
            raise InputError(f"{str(file)!r} must hold arrays 'X' and 'y' (np.savez(path, X=X, "
                             f"y=y)); it lacks {sorted(missing)} (it has {data.files}).")
        X, y = data["X"], data["y"]
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise InputError(f"{str(file)!r}: X must be 2-D (n, d) and y of shape (n,); got "
                         f"X {X.shape} and y {y.shape}.")
    if n_features is not None and X.shape[1] != n_features:
        raise InputError(f"{str(file)!r} has {X.shape[1]} features; the model has "
                         f"{n_features}.")
    return X.astype(dtype), y


def _loss(name):
    from nsjax import losses

    return {"hinge": losses.Hinge, "logistic": losses.Logistic, "squared": losses.Squared,
            "multiclass": losses.MulticlassHinge}[name]()


def _regularizer(name, strength, l1_ratio):
    from nsjax import regularizers

    if name == "l2":
        return regularizers.L2(strength)
    if name == "l1":
        return regularizers.L1(strength)
    if not 0 <= l1_ratio <= 1:
        raise InputError(f"--l1-ratio must be in [0, 1]; got {l1_ratio}.")
    return regularizers.ElasticNet(mu=l1_ratio * strength, lam=(1 - l1_ratio) * strength)


def train(args) -> int:
    """Fit one problem from a file with live progress, print a summary, save the model."""
    import jax

    jax.config.update("jax_enable_x64", args.dtype == "float64")
    import nsjax
    from nsjax.solvers import solver_from_name

    dtype = np.dtype(args.dtype)
    X, y = load_data(args.file, dtype=dtype)
    n = X.shape[0]
    if args.lam is not None and args.C is not None:
        raise InputError("give --lam or --C, not both (λ = 1 / (C n)).")
    if args.C is not None and not args.C > 0:
        raise InputError(f"--C must be > 0; got {args.C}.")
    strength = args.lam if args.lam is not None else (
        1.0 / (args.C * n) if args.C is not None else 1e-4)
    import warnings

    warnings.simplefilter("ignore", nsjax.ConvergenceWarning)  # the summary gives the status
    try:
        solver = solver_from_name(args.solver)
        prob = nsjax.Problem(_loss(args.loss), _regularizer(args.reg, strength, args.l1_ratio),
                             X, y, dtype=dtype,
                             bias=args.bias)
        t0 = time.perf_counter()
        sol = nsjax.solve(prob, solver, max_steps=args.max_steps, tol=args.tol,
                          progress=not args.quiet and sys.stderr.isatty())
        sol.w.block_until_ready()
    except (ValueError, TypeError) as e:
        raise InputError(str(e)) from None
    seconds = time.perf_counter() - t0
    scores = _scores(X, np.asarray(sol.w), prob.bias)
    fit = _quality(args.loss, prob.classes, scores, y)
    print(f"{prob!r}, lambda {strength:.4g}: {sol.result.name} after {int(sol.num_steps)} "
          f"steps in {seconds:.2f} s (compilation included); objective "
          f"{float(sol.value):.10g}, certified gap {float(sol.gap):.3e}; training {fit}")
    out = Path(args.out if args.out else Path(args.file).with_suffix(".model.npz"))
    np.savez(out, format=MODEL_FORMAT, w=np.asarray(sol.w), loss=args.loss, reg=args.reg,
             strength=strength, l1_ratio=args.l1_ratio, bias=bool(prob.bias),
             n_features=X.shape[1], classes=np.asarray(prob.classes if prob.classes else []),
             objective=float(sol.value), gap=float(sol.gap), result=sol.result.name,
             num_steps=int(sol.num_steps))
    print(f"model written to {out}")
    return 0 if sol.result == nsjax.RESULTS.successful else 3


def _scores(X, w, bias):
    """X w (+ the bias, w's last row), on the host: a command's one product is not worth
    compiling (the sparse product op by op compiles ~30 small programs, 0.4 s)."""
    scores = np.asarray(X @ (w[:-1] if bias else w))
    return scores + w[-1] if bias else scores


def _predictions(loss, classes, scores):
    if loss == "squared":
        return scores
    if loss == "multiclass":
        return np.asarray(classes)[np.argmax(scores, axis=1)]
    return np.asarray(classes)[(scores > 0).astype(int)]


def _quality(loss, classes, scores, y) -> str:
    predictions = _predictions(loss, classes, scores)
    if loss == "squared":
        return f"RMSE {float(np.sqrt(np.mean((predictions - y) ** 2))):.6g}"
    return f"accuracy {float(np.mean(predictions == y)):.4f}"


def load_model(path) -> dict:
    """A model file written by `train`, as a dict of its arrays (checked)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"model file not found: {str(file)!r}.")
    try:
        with np.load(file, allow_pickle=False) as data:
            model = {k: data[k] for k in data.files}
    except (ValueError, OSError) as e:
        raise InputError(f"{str(file)!r} is not an nsjax model (an .npz file written by "
                         f"'python -m nsjax train'): {e}") from None
    if str(model.get("format", "")) != MODEL_FORMAT:
        raise InputError(f"{str(file)!r} is not an nsjax model (no format {MODEL_FORMAT!r}); "
                         "write one with 'python -m nsjax train'.")
    return model


def predict(args) -> int:
    """Predictions for every row of a data file, one per line; the quality on stderr."""
    model = load_model(args.model)
    d = int(model["n_features"])
    X, y = load_data(args.file, n_features=d)
    w = model["w"]
    loss = str(model["loss"])
    scores = _scores(X, w, bool(model["bias"]))
    predictions = _predictions(loss, model["classes"], scores)
    # Numeric classes as %g (svmlight labels are read as floats: 1, not 1.0).
    numeric = predictions.dtype.kind in "fiu"
    lines = "".join(f"{p:.10g}\n" if numeric else f"{p}\n" for p in predictions)
    if args.out:
        Path(args.out).write_text(lines)
    else:
        try:
            sys.stdout.write(lines)
            sys.stdout.flush()
        except BrokenPipeError:  # e.g. piped into head: not an error
            sys.stdout = None
            return 0
    print(f"{X.shape[0]} rows; {_quality(loss, model['classes'], scores, y)}", file=sys.stderr)
    return 0


def bench(args) -> int:
    """Time the default solve against LIBLINEAR (scikit-learn's LinearSVC, hinge loss, its
    default tol) on bundled and synthetic data; suboptimality relative to a tight nsjax run."""
    import warnings

    import jax

    jax.config.update("jax_enable_x64", True)
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    import nsjax

    sets = [("breast_cancer", *nsjax.datasets.breast_cancer(), "hinge"),
            ("digits", *nsjax.datasets.digits(), "multiclass"),
            ("sparse 20000x2000", *nsjax.datasets.synthetic_sparse(20000, 2000, 0.01, seed=0),
             "hinge")]
    warnings.simplefilter("ignore", nsjax.ConvergenceWarning)  # statuses are in the table
    print(f"L2-regularized hinge, lambda = {args.lam:g}; nsjax's default solve to a certified "
          f"gap of 1e-3 J*; LIBLINEAR (dual coordinate descent) at its default tol; device "
          f"{jax.devices()[0].platform}")
    head = (f"{'data':<19}{'n x d':>12}{'nsjax s':>9}{'compile s':>10}{'cert. gap':>11}"
            f"{'LIBLINEAR s':>12}{'its subopt.':>12}{'ratio':>7}")
    print(head)
    print("-" * len(head))
    for name, X, y, loss in sets:
        prob = nsjax.Problem(_loss(loss), nsjax.regularizers.L2(args.lam), X, y)
        # J* first (a long run; its own certified gap is printed): the timed runs stop at
        # a certified gap of 1e-3 J* (tol is relative to max(1, |J|)).
        tight = nsjax.solve(prob, max_steps=20000, tol=1e-9)
        J_star = float(tight.value)
        tol = 1e-3 * J_star / max(1.0, J_star)
        t0 = time.perf_counter()
        nsjax.solve(prob, max_steps=5000, tol=tol).w.block_until_ready()
        first = time.perf_counter() - t0
        t0 = time.perf_counter()
        sol = nsjax.solve(prob, max_steps=5000, tol=tol)
        sol.w.block_until_ready()
        ours = time.perf_counter() - t0
        svc = LinearSVC(loss="hinge", C=1.0 / (args.lam * X.shape[0]), fit_intercept=False,
                        multi_class="crammer_singer" if loss == "multiclass" else "ovr",
                        max_iter=100_000)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            t0 = time.perf_counter()
            svc.fit(X, y)
            theirs = time.perf_counter() - t0
        W = np.asarray(svc.coef_.T if loss == "multiclass" else svc.coef_.ravel())
        subopt = (float(prob.objective(W)) - J_star) / J_star  # J* within its gap
        print(f"{name:<19}{f'{X.shape[0]}x{X.shape[1]}':>12}{ours:>9.3f}{first - ours:>10.2f}"
              f"{float(sol.gap) / J_star:>11.1e}{theirs:>12.3f}{subopt:>12.1e}"
              f"{ours / theirs:>7.2f}")
    print("(cert. gap and suboptimality relative to J*; ratio = nsjax / LIBLINEAR time)")
    return 0


def add_commands(sub) -> None:
    """Register train, predict and bench on an argparse subparsers object."""
    t = sub.add_parser("train", help="fit a model on an svmlight or .npz file, save it")
    t.add_argument("file", help="svmlight / libsvm file, or .npz with arrays X and y")
    t.add_argument("--loss", choices=LOSSES, default="hinge")
    t.add_argument("--reg", choices=REGULARIZERS, default="l2")
    t.add_argument("--lam", type=float, help="strength lambda (default 1e-4)")
    t.add_argument("--C", type=float, help="instead of --lam: lambda = 1 / (C n)")
    t.add_argument("--l1-ratio", type=float, default=0.5,
                   help="elastic net: the L1 share of the strength")
    t.add_argument("--bias", action="store_true", help="fit an unregularized bias")
    t.add_argument("--solver", default="auto", help="auto (the default solve) or a name: "
                   "hybrid, sublbfgs, bmrm, oba, owlqn, agm-ef, pragam, ...")
    t.add_argument("--tol", type=float, default=1e-6, help="relative certified gap to reach")
    t.add_argument("--max-steps", type=int, default=1000)
    t.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    t.add_argument("--out", help="model file (default: FILE with .model.npz)")
    t.add_argument("--quiet", action="store_true",
                   help="no progress line (there is none when stderr is not a terminal)")
    p = sub.add_parser("predict", help="predict every row of a file with a saved model")
    p.add_argument("model", help="a model file written by train")
    p.add_argument("file", help="svmlight / libsvm file, or .npz with arrays X and y")
    p.add_argument("--out", help="write the predictions there (default: stdout)")
    b = sub.add_parser("bench", help="time the default solve against LIBLINEAR")
    b.add_argument("--lam", type=float, default=1e-4)


COMMANDS = {"train": train, "predict": predict, "bench": bench}

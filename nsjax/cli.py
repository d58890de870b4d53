"""The command line beyond the demo: ``python -m nsjax train | predict | bench``.

    python -m nsjax train data.svm --loss hinge --C 1 --bias --out model.npz
    python -m nsjax predict model.npz test.svm > predictions.txt
    python -m nsjax bench

Data files are svmlight / libsvm text, possibly compressed (``.gz``, ``.bz2``; a malformed
line is named with its number), or ``.npz`` files holding arrays ``X`` (real numbers, 2-D)
and ``y`` (``np.savez(path, X=X, y=y)``). Features and labels must be finite; the labels
of a classification loss are class values (integers or strings), two of them for the
binary losses. A model is an ``.npz`` file: the weights as solved (with the bias last),
the class values, the problem's description and the run's certified gap, written to
exactly the path given to ``--out``. ``predict`` reads a data file as wide as the model's
training data; an svmlight file may be narrower (its missing columns are zeros: svmlight
files leave out zero features), a wider one is refused.

Every bad input (an argument, a data or model file, an output path) ends the command
before the solve with exit status 2 and one line on stderr, ``nsjax: error: <what is
wrong and how to fix it>``, in argparse's style; Ctrl-C ends it with status 130. ``train``
exits with 0 when the run reached ``--tol`` and 3 when it stopped short (the model is
saved either way).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import zipfile
import zlib
from pathlib import Path

import numpy as np

from nsjax._checks import MAX_STEPS

MODEL_FORMAT = "nsjax-linear-model-1"
LOSSES = ("hinge", "logistic", "squared", "multiclass")
REGULARIZERS = ("l2", "l1", "elasticnet")

# What reading an .npz archive or a (compressed) text file raises for a file that is not
# what it claims to be: truncated, corrupt, of another format.
_READ_ERRORS = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error,
                NotImplementedError, KeyError)


class InputError(ValueError):
    """Bad input to a command: reported as one line, ``nsjax: error: <message>``, with exit
    status 2 and no traceback."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose errors are an `InputError` (one line: argparse's message and
    where to find the usage) rather than the usage text and an exit of its own."""

    def error(self, message):
        raise InputError(f"{message} (see '{self.prog} --help')")


def one_line(message) -> str:
    """``message`` on one line (its lines joined with spaces)."""
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def run(parser, argv, commands) -> int:
    """Parse ``argv`` and run its command (``commands[args.command](args)``): the command's
    status; 2 and one line on stderr for bad input; 130 on Ctrl-C.

        >>> import argparse, contextlib, io
        >>> parser = ArgumentParser(prog="prog")
        >>> _ = parser.add_argument("--n", type=positive_int(10))
        >>> err = io.StringIO()
        >>> with contextlib.redirect_stderr(err):
        ...     run(parser, ["--n", "0"], {})
        2
        >>> print(err.getvalue(), end="")
        nsjax: error: argument --n: must be an integer from 1 to 10; got '0' (see 'prog --help')
    """
    try:
        args = parser.parse_args(argv)
        return commands[args.command](args)
    except InputError as e:
        print(f"nsjax: error: {one_line(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # (On a terminal the progress line may be open: start a new one.)
        newline = "\n" if _isatty(sys.stderr) else ""
        print(f"{newline}nsjax: interrupted", file=sys.stderr)
        return 130


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no stream, or a closed one
        return False


# -- argument types: a bad value is argparse's error, naming the option ------------------

def positive_float(zero_ok: bool = False, hint: str = ""):
    """An argparse ``type``: a finite number > 0 (>= 0 with ``zero_ok``)."""

    def parse(text):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not (math.isfinite(value) and (value >= 0 if zero_ok else value > 0)):
            raise argparse.ArgumentTypeError(
                f"must be a finite number {'>= 0' if zero_ok else '> 0'}{hint}; got {text!r}")
        return value

    return parse


def fraction(text):
    """An argparse ``type``: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= 1:  # (NaN too)
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1]; got {text!r}")
    return value


def positive_int(largest: int, hint: str = ""):
    """An argparse ``type``: an integer in [1, largest]."""

    def parse(text):
        try:
            value = int(text)
        except ValueError:
            value = 0
        if not 1 <= value <= largest:
            raise argparse.ArgumentTypeError(
                f"must be an integer from 1 to {largest:,}{hint}; got {text!r}")
        return value

    return parse


def solver_name(text):
    """An argparse ``type``: a name in `nsjax.solvers.SOLVERS` (any case)."""
    from nsjax.solvers import SOLVERS

    if text.lower() not in SOLVERS:
        raise argparse.ArgumentTypeError(
            f"unknown solver {text!r}: the solver must be one of {', '.join(SOLVERS)}")
    return text.lower()


LAM_HINT = " (with lambda = 0 no certified gap closes)"
MAX_STEPS_HINT = " (the history is allocated up front; restart a longer run instead)"


# -- files ----------------------------------------------------------------------------

def _check_input(path: str, what: str) -> Path:
    """``path`` as a readable regular file, or an InputError naming it as given."""
    file = Path(path)
    try:
        if not file.exists():
            raise InputError(f"{what} {path!r} not found; check the path.")
        if file.is_dir():
            raise InputError(f"{what} {path!r} is a directory; give a file.")
        if not file.is_file():
            raise InputError(f"{what} {path!r} is not a regular file; give a file.")
        if not os.access(file, os.R_OK):
            raise InputError(f"{what} {path!r} is not readable (permission denied); change "
                             "its permissions or give another file.")
    except InputError:
        raise
    except (OSError, ValueError) as e:  # (a name too long, a directory not searchable)
        raise InputError(f"{what} {path!r} cannot be read: {e}") from None
    return file


def check_output(out: str, option: str, inputs=(), example: str = "model.npz") -> None:
    """Refuse, before any work, an output path that cannot be written: a directory, a
    missing or unwritable directory, an unwritable file, or one of the command's inputs
    (``inputs``: (what, path) pairs)."""
    name = f"{option} {out!r}"
    path = Path(out)
    try:
        if out.endswith(("/", os.sep)) or path.is_dir():
            raise InputError(f"{name} is a directory; give a file name, e.g. "
                             f"{os.path.join(out, example)!r}.")
        parent = path.parent
        if not parent.exists():
            raise InputError(f"{name}: the directory {str(parent)!r} does not exist; "
                             "create it first or choose another path.")
        if not parent.is_dir():
            raise InputError(f"{name}: {str(parent)!r} is not a directory; choose another "
                             "path.")
        if path.exists():
            if not os.access(path, os.W_OK):
                raise InputError(f"{name} is not writable (permission denied); choose "
                                 "another path.")
            for what, given in inputs:
                if os.path.samefile(path, given):
                    raise InputError(f"{name} is the {what} {given!r}: writing would "
                                     "overwrite it; choose another path.")
        elif not os.access(parent, os.W_OK | os.X_OK):
            raise InputError(f"{name}: cannot create files in {str(parent)!r} (permission "
                             "denied); choose another path.")
    except InputError:
        raise
    except (OSError, ValueError) as e:
        raise InputError(f"{name} cannot be written: {e}") from None


def _write(out: str, option: str, mode: str, write) -> None:
    """Open exactly ``out`` and ``write(file)``; an OSError names the option."""
    try:
        with open(out, mode) as f:
            write(f)
    except OSError as e:
        raise InputError(f"{option} {out!r} could not be written: {e}") from None


def _open_npz(path: str, file: Path, what: str, example: str):
    """The archive ``np.load`` opens (allow_pickle=False), or an InputError."""
    if not zipfile.is_zipfile(file):
        raise InputError(f"{what} {path!r} is not an .npz archive (it is not a zip file: "
                         f"empty, truncated, or another format under an .npz name); "
                         f"{example}.")
    try:
        data = np.load(file, allow_pickle=False)
    except (*_READ_ERRORS, MemoryError) as e:
        raise InputError(f"{what} {path!r} cannot be read as an .npz archive ({e}); "
                         f"{example}.") from None
    if not isinstance(data, np.lib.npyio.NpzFile):  # (np.load reads what the bytes are)
        raise InputError(f"{what} {path!r} is not an .npz archive; {example}.")
    return data


def _member(data, key: str, path: str, what: str):
    """Array ``key`` of an open .npz archive, or an InputError naming it."""
    try:
        value = data[key]
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise InputError(
                f"{what} {path!r}: {key} is an array of Python objects (dtype=object, e.g. a "
                f"scipy.sparse matrix or mixed values), which is not loaded (unpickling can "
                f"run code); save {key} as numbers or strings (np.asarray({key}, float)), "
                "or sparse data as an svmlight file.") from None
        raise InputError(f"{what} {path!r}: {key} cannot be read ({e}); the file may be "
                         "truncated or corrupt.") from None
    except (*_READ_ERRORS, MemoryError) as e:
        raise InputError(f"{what} {path!r}: {key} cannot be read ({type(e).__name__}: {e}); "
                         "the file may be truncated or corrupt.") from None
    if not isinstance(value, np.ndarray):
        raise InputError(f"{what} {path!r}: {key} is not an array saved by numpy; write the "
                         "file with np.savez.")
    return value


def load_data(path, n_features=None, dtype=np.float64):
    """(X, y) from an svmlight / libsvm file or an ``.npz`` file with arrays X and y, checked:
    X real, finite in ``dtype`` and non-empty, y finite numbers or strings, one per row.

    With ``n_features`` (the model's width, for predict), an ``.npz`` file's X must have
    exactly that many columns, an svmlight file's at most that many (the rest are zero
    columns). Every problem is an `InputError` naming ``path`` as given."""
    path = str(path)
    file = _check_input(path, "data file")
    dt = np.dtype(dtype)
    if file.suffix.lower() == ".npz" or zipfile.is_zipfile(file):  # (by name or content)
        X, y = _load_npz_data(path, file)
    else:
        X, y = _load_svmlight(path, file)
    n, d = X.shape
    if n == 0:
        raise InputError(f"data file {path!r} holds no examples; give a file with at least "
                         "one labelled row.")
    if d == 0:
        raise InputError(f"data file {path!r} has no features (X is {n} x 0).")
    memory = _physical_memory()
    if n_features is None and memory and 16 * d > memory:  # (w and a column pointer)
        raise InputError(f"data file {path!r} has {d} features (its largest feature index): "
                         f"its weights and column pointers would take {_size(16 * d)}, more "
                         f"than this machine's memory ({_size(memory)}); check the feature "
                         "indices.")
    if n_features is not None and d != n_features:
        sparse = not isinstance(X, np.ndarray)
        if d > n_features or not sparse:
            raise InputError(
                f"data file {path!r} has {d} features, the model {n_features}: predict "
                f"with a model trained on data of this width"
                f"{'' if sparse else ' (an svmlight file may have fewer)'}.")
        import scipy.sparse as sp

        X = sp.csr_matrix((X.data, X.indices, X.indptr), shape=(n, n_features))
    return _checked_X(X, path, dt), _checked_y(y, path)


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # (not on this system)
        return None


def _size(nbytes: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if nbytes < 1024 or unit == "TiB":
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1024


def _load_npz_data(path, file):
    example = "write one with np.savez(path, X=X, y=y)"
    with _open_npz(path, file, "data file", example) as data:
        missing = [k for k in ("X", "y") if k not in data.files]
        if missing:
            raise InputError(f"data file {path!r} must hold arrays 'X' and 'y' "
                             f"(np.savez(path, X=X, y=y)); it lacks {missing} (it has "
                             f"{data.files[:10]}).")
        X = _member(data, "X", path, "data file")
        y = _member(data, "y", path, "data file")
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise InputError(f"data file {path!r}: X must be 2-D (n, d) and y of shape (n,), "
                         f"one label per row; got X {X.shape} and y {y.shape}.")
    return X, y


def _load_svmlight(path, file):
    from nsjax import datasets

    compressed = {".gz": "gzip", ".bz2": "bzip2"}.get(file.suffix.lower())
    try:
        # (In float64: `load_data` casts, and names an overflow of --dtype float32.)
        return datasets.load_svmlight(file, dtype=np.float64)
    except ValueError as e:  # a malformed line, named with its number
        raise InputError(str(e)) from None
    except (OSError, EOFError, zlib.error) as e:
        how = (f" as {compressed} (its name ends in {file.suffix}; decompress it, or rename "
               "it if it is plain text)") if compressed else ""
        raise InputError(f"data file {path!r} cannot be read{how}: {e}") from None
    except MemoryError:
        raise InputError(f"data file {path!r} is too large for this machine's memory (or "
                         "names a huge feature index); check the file.") from None


def _checked_X(X, path, dt):
    kind = X.dtype.kind
    if kind == "c":
        raise InputError(f"data file {path!r}: X is complex ({X.dtype}); nsjax fits real "
                         "data: save X.real, or the real and imaginary parts as columns.")
    if kind not in "biuf":
        raise InputError(f"data file {path!r}: X holds {X.dtype} values; it must hold "
                         "numbers (float or int).")
    with np.errstate(over="ignore", invalid="ignore"):
        held = X.astype(dt, copy=False)
    values = held if isinstance(held, np.ndarray) else held.data
    bad = ~np.isfinite(values)
    if bad.any():
        first = int(np.flatnonzero(bad)[0])
        row = (first // X.shape[1] if isinstance(held, np.ndarray)
               else int(np.searchsorted(held.indptr, first, side="right")) - 1)
        source = X if isinstance(X, np.ndarray) else X.data
        with np.errstate(invalid="ignore"):
            overflow = np.isfinite(source.astype(np.float64)).all()
        if overflow:
            raise InputError(f"data file {path!r}: {int(bad.sum())} entries of X overflow "
                             f"--dtype {dt.name} (beyond {float(np.finfo(dt).max):.3g}; the "
                             f"first in example {row + 1}); rescale X or use --dtype float64.")
        raise InputError(f"data file {path!r}: {int(bad.sum())} entries of X are NaN or "
                         f"infinite (the first in example {row + 1}); remove or impute them.")
    return held


def _checked_y(y, path):
    if y.dtype.kind == "S":
        try:
            y = y.astype(str)
        except UnicodeDecodeError:
            pass
    kind = y.dtype.kind
    if kind == "c":
        raise InputError(f"data file {path!r}: the labels y are complex ({y.dtype}); they "
                         "must be real numbers or class names.")
    if kind not in "biufU":
        raise InputError(f"data file {path!r}: the labels y are {y.dtype} values; they must "
                         "be numbers or strings.")
    if kind == "f":
        bad = ~np.isfinite(y)
        if bad.any():
            raise InputError(f"data file {path!r}: {int(bad.sum())} of the labels are NaN "
                             f"or infinite (the first in example {int(np.argmax(bad)) + 1}); "
                             "every example needs a finite label.")
    return y


def _check_labels(y, loss, path):
    """Refuse labels that do not suit ``loss``: a target for a classification loss, a
    wrong number of classes, class names for the squared loss."""
    if loss == "squared":
        if y.dtype.kind not in "biuf":
            raise InputError(f"data file {path!r}: --loss squared needs numeric targets; the "
                             f"labels are {y.dtype} (class names: use a classification "
                             "--loss).")
        return
    if y.dtype.kind == "f" and not np.array_equal(y, np.round(y)):
        first = int(np.argmax(y != np.round(y)))
        raise InputError(f"data file {path!r}: --loss {loss} needs class labels (integers or "
                         f"strings); example {first + 1} has the label {y[first]:g}. For a "
                         "real-valued target use --loss squared.")
    classes = np.unique(y)
    shown = ", ".join(str(c) for c in classes[:10]) + (", ..." if classes.size > 10 else "")
    if loss in ("hinge", "logistic") and classes.size != 2:
        more = " (use --loss multiclass for more)" if classes.size > 2 else ""
        raise InputError(f"data file {path!r}: --loss {loss} needs exactly two classes; the "
                         f"labels have {classes.size} ({shown}){more}.")
    if loss == "multiclass" and classes.size < 2:
        raise InputError(f"data file {path!r}: --loss multiclass needs at least two classes; "
                         f"the labels have {classes.size} ({shown}).")


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


def _strength(args, n, dt) -> float:
    """λ from --lam or --C (λ = 1 / (C n)), checked as it will be held in ``dt``."""
    from nsjax._checks import held_strength

    if args.lam is not None:
        strength, given, fix = args.lam, f"--lam {args.lam:g} gives lambda", "change --lam."
    elif args.C is not None:
        with np.errstate(over="ignore", divide="ignore"):
            strength = float((1.0 / np.float64(args.C)) / n)
        given, fix = f"--C {args.C:g} gives lambda = 1 / (C n) with n = {n}", "change --C."
    else:
        return 1e-4
    try:
        return held_strength(strength, dt, given, fix)
    except ValueError as e:
        raise InputError(str(e)) from None


def train(args) -> int:
    """Fit one problem from a file with live progress, print a summary, save the model.
    Everything that can be checked is checked before the solve (the arguments, the output
    path, the data and its labels, the solver against the problem)."""
    if args.lam is not None and args.C is not None:
        raise InputError("give --lam or --C, not both (lambda = 1 / (C n)).")
    _check_input(args.file, "data file")
    out = args.out if args.out is not None else str(Path(args.file).with_suffix(".model.npz"))
    option = "--out" if args.out is not None else "the model file (default; set it with --out)"
    check_output(out, option, [("data file", args.file)])
    dtype = np.dtype(args.dtype)
    with np.errstate(over="ignore"):
        tol_overflows = not np.isfinite(np.asarray(args.tol, dtype))
    if tol_overflows:
        raise InputError(f"--tol {args.tol:g} overflows {dtype.name}; use a smaller --tol.")
    X, y = load_data(args.file, dtype=dtype)
    _check_labels(y, args.loss, args.file)
    n = X.shape[0]
    strength = _strength(args, n, dtype)
    import jax

    jax.config.update("jax_enable_x64", args.dtype == "float64")
    import warnings

    import nsjax
    from nsjax.solvers import check as check_solver
    from nsjax.solvers import solver_from_name

    warnings.simplefilter("ignore", nsjax.ConvergenceWarning)  # the summary gives the status
    try:
        prob = nsjax.Problem(_loss(args.loss), _regularizer(args.reg, strength, args.l1_ratio),
                             X, y, dtype=dtype, bias=args.bias)
    except (ValueError, TypeError) as e:
        raise InputError(f"data file {args.file!r} with --loss {args.loss}: {e}") from None
    except MemoryError:
        raise InputError(f"data file {args.file!r}: X ({n} x {X.shape[1]}) is too large for "
                         "this machine's memory; check its feature indices.") from None
    solver = solver_from_name(args.solver)
    if solver is not None:
        try:
            check_solver(solver, prob)
        except (ValueError, TypeError) as e:
            problem = f"--loss {args.loss} --reg {args.reg}{' --bias' if args.bias else ''}"
            raise InputError(f"--solver {args.solver} cannot solve {problem}: {e}") from None
    try:
        t0 = time.perf_counter()
        sol = nsjax.solve(prob, solver, max_steps=args.max_steps, tol=args.tol,
                          progress=not args.quiet and _isatty(sys.stderr))
        sol.w.block_until_ready()
    except (ValueError, TypeError) as e:  # (refused before compiling)
        raise InputError(str(e)) from None
    seconds = time.perf_counter() - t0
    scores = _scores(X, np.asarray(sol.w), prob.bias)
    fit = _quality(args.loss, prob.classes, scores, y)
    model = dict(format=MODEL_FORMAT, w=np.asarray(sol.w), loss=args.loss, reg=args.reg,
                 strength=strength, l1_ratio=args.l1_ratio, bias=bool(prob.bias),
                 n_features=X.shape[1], classes=np.asarray(prob.classes if prob.classes else []),
                 objective=float(sol.value), gap=float(sol.gap), result=sol.result.name,
                 num_steps=int(sol.num_steps))
    # Exactly the path given (np.savez would add .npz to a name without it).
    _write(out, option, "wb", lambda f: np.savez(f, **model))
    print(f"{prob!r}, lambda {strength:.4g}: {sol.result.name} after {int(sol.num_steps)} "
          f"steps in {seconds:.2f} s (compilation included); objective "
          f"{float(sol.value):.10g}, certified gap {float(sol.gap):.3e}; training {fit}")
    print(f"model written to {out}")
    return 0 if sol.result == nsjax.RESULTS.successful else 3


def _scores(X, w, bias):
    """X w (+ the bias, w's last row), on the host: a command's one product is not worth
    compiling (op by op, the sparse product would compile dozens of small programs)."""
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
        if y.dtype.kind not in "biuf":
            return "no RMSE (the file's labels are not numbers)"
        return f"RMSE {float(np.sqrt(np.mean((predictions - y) ** 2))):.6g}"
    if (predictions.dtype.kind == "U") != (y.dtype.kind == "U"):
        return "no accuracy (the file's labels are not of the kind of the model's classes)"
    return f"accuracy {float(np.mean(predictions == y)):.4f}"


def load_model(path) -> dict:
    """A model file written by `train`, as a dict of its arrays, checked: its format, loss,
    classes, width and weights (of shape (n_features + bias,), or (…, K) for K classes)."""
    path = str(path)
    file = _check_input(path, "model file")
    example = "write one with 'python -m nsjax train'"
    with _open_npz(path, file, "model file", example) as data:
        if "format" not in data.files:
            raise InputError(f"model file {path!r} is not an nsjax model (no format "
                             f"{MODEL_FORMAT!r}); {example}.")
        fmt = _member(data, "format", path, "model file")
        if fmt.shape != () or str(fmt) != MODEL_FORMAT:
            raise InputError(f"model file {path!r} is not an nsjax model (format "
                             f"{str(fmt)[:40]!r}, not {MODEL_FORMAT!r}); {example}.")
        missing = [k for k in ("w", "loss", "bias", "n_features", "classes")
                   if k not in data.files]
        if missing:
            raise InputError(f"model file {path!r} is incomplete: it lacks {missing}; "
                             f"{example}.")
        model = {k: _member(data, k, path, "model file")
                 for k in ("w", "loss", "bias", "n_features", "classes")}

    def bad(what):
        return InputError(f"model file {path!r} is damaged: {what}; {example}.")

    loss = str(model["loss"])
    if model["loss"].shape != () or loss not in LOSSES:
        raise bad(f"its loss is {loss[:40]!r}, not one of {', '.join(LOSSES)}")
    n_features, bias = model["n_features"], model["bias"]
    if n_features.shape != () or n_features.dtype.kind not in "iu" or n_features < 1:
        raise bad(f"n_features is {str(n_features)[:40]!r}, not an integer >= 1")
    if bias.shape != () or bias.dtype.kind not in "biu" or bias not in (0, 1):
        raise bad(f"bias is {str(bias)[:40]!r}, not True or False")
    classes = model["classes"]
    if classes.ndim != 1 or classes.dtype.kind not in "biufU":
        raise bad(f"its classes are of shape {classes.shape} and dtype {classes.dtype}")
    K = np.unique(classes).size
    if loss in ("hinge", "logistic") and not classes.size == K == 2:
        raise bad(f"a {loss} model needs two distinct classes; it has {classes.size} "
                  f"({K} distinct)")
    if loss == "multiclass" and not classes.size == K >= 2:
        raise bad(f"a multiclass model needs two or more distinct classes; it has "
                  f"{classes.size} ({K} distinct)")
    w = model["w"]
    rows = int(n_features) + bool(bias)
    shape = (rows, classes.size) if loss == "multiclass" else (rows,)
    if w.dtype.kind not in "iuf" or w.shape != shape:
        raise bad(f"its weights w are {w.dtype} of shape {w.shape}; a {loss} model with "
                  f"{int(n_features)} features{' and a bias' if bias else ''} has {shape}")
    if not np.isfinite(w).all():
        raise bad("its weights w hold NaN or infinite values")
    model.update(loss=loss, n_features=int(n_features), bias=bool(bias))
    return model


def predict(args) -> int:
    """Predictions for every row of a data file, one per line; the quality on stderr."""
    if args.out is not None:
        check_output(args.out, "--out", [("model file", args.model), ("data file", args.file)],
                     "predictions.txt")
    model = load_model(args.model)
    d = model["n_features"]
    X, y = load_data(args.file, n_features=d)
    loss = model["loss"]
    scores = _scores(X, model["w"], model["bias"])
    predictions = _predictions(loss, model["classes"], scores)
    # Numeric classes as %g (svmlight labels are read as floats: 1, not 1.0).
    numeric = predictions.dtype.kind in "fiu"
    lines = "".join(f"{p:.10g}\n" if numeric else f"{p}\n" for p in predictions)
    if args.out is not None:
        _write(args.out, "--out", "w", lambda f: f.write(lines))
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
    import nsjax
    from nsjax._checks import max_strength
    from nsjax._optional import sklearn_module

    try:  # scikit-learn is optional (the sklearn extra)
        sklearn_module("sklearn", "python -m nsjax bench (LIBLINEAR, the bundled data)")
    except ModuleNotFoundError as e:
        raise InputError(str(e)) from None
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.svm import LinearSVC

    if args.lam > max_strength(np.float64):
        raise InputError(f"--lam {args.lam:g} is too large: lambda must be at most "
                         f"{max_strength(np.float64):.3g}.")
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
    t.add_argument("file", help="svmlight / libsvm file (.gz, .bz2 too), or .npz with arrays "
                   "X and y")
    t.add_argument("--loss", choices=LOSSES, default="hinge")
    t.add_argument("--reg", choices=REGULARIZERS, default="l2")
    t.add_argument("--lam", type=positive_float(hint=LAM_HINT),
                   help="strength lambda > 0 (default 1e-4)")
    t.add_argument("--C", type=positive_float(),
                   help="instead of --lam: lambda = 1 / (C n), C > 0")
    t.add_argument("--l1-ratio", type=fraction, default=0.5,
                   help="elastic net: the L1 share of the strength, in [0, 1]")
    t.add_argument("--bias", action="store_true", help="fit an unregularized bias")
    t.add_argument("--solver", type=solver_name, default="auto",
                   help="auto (the default solve) or a name: hybrid, sublbfgs, bmrm, oba, "
                   "owlqn, agm-ef, pragam, ... (one that suits the loss and regularizer)")
    t.add_argument("--tol", type=positive_float(zero_ok=True), default=1e-6,
                   help="relative certified gap to reach (>= 0)")
    t.add_argument("--max-steps", type=positive_int(MAX_STEPS, MAX_STEPS_HINT),
                   default=1000, help=f"at most this many steps (1 to {MAX_STEPS:,})")
    t.add_argument("--dtype", choices=("float64", "float32"), default="float64")
    t.add_argument("--out", help="model file, written at exactly this path (default: FILE "
                   "with .model.npz); its directory must exist")
    t.add_argument("--quiet", action="store_true",
                   help="no progress line (there is none when stderr is not a terminal)")
    p = sub.add_parser("predict", help="predict every row of a file with a saved model")
    p.add_argument("model", help="a model file written by train")
    p.add_argument("file", help="svmlight / libsvm file, or .npz with arrays X and y, as wide "
                   "as the model's data (an svmlight file may be narrower: zero columns)")
    p.add_argument("--out", help="write the predictions there (default: stdout)")
    b = sub.add_parser("bench", help="time the default solve against LIBLINEAR")
    b.add_argument("--lam", type=positive_float(hint=LAM_HINT), default=1e-4)


COMMANDS = {"train": train, "predict": predict, "bench": bench}

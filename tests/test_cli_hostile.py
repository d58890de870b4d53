"""`python -m nsjax` against hostile input: every bad argument, data file, model file or
output path ends the command with exit status 2 and one line on stderr that names what is
wrong as the user wrote it (``nsjax: error: ...``), before any solve, never a traceback.

In process (`nsjax.__main__.main`, which returns the exit status) on tiny files, in a
directory of their own so that the names are written as a user would; two subprocess runs
check the real entry point. One solve only (BMRM, 5 steps, 8 x 3): the model written to
exactly the path given."""

import gzip
import importlib.util
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

import nsjax
from nsjax import cli
from nsjax.__main__ import main

FORMAT = cli.MODEL_FORMAT


def _model(**changes):
    """The arrays of a valid hinge model of 3 features (as `train` writes it), changed."""
    model = dict(format=FORMAT, w=np.array([1.0, -1.0, 0.5]), loss="hinge", reg="l2",
                 strength=1e-4, l1_ratio=0.5, bias=False, n_features=3,
                 classes=np.array([-1.0, 1.0]))
    model.update(changes)
    return {k: v for k, v in model.items() if v is not None}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A directory of good and bad inputs, made once."""
    d = tmp_path_factory.mktemp("hostile")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(8, 3))
    y = np.array([1, -1, 1, -1, 1, 1, -1, -1])

    def npz(name, **arrays):
        np.savez(d / name, **arrays)

    def text(name, content):
        (d / name).write_text(content)

    npz("good.npz", X=X, y=y)
    text("good.svm", "".join(f"{int(label)} 1:{a:.3f} 2:{b:.3f} 3:{c:.3f}\n"
                             for label, (a, b, c) in zip(y, X, strict=True)))
    text("narrow.svm", "1 1:0.5\n-1 2:1\n")  # 2 of the model's 3 features
    text("wide.svm", "1 1:0.5 5:1\n-1 2:1\n")
    npz("narrow.npz", X=X[:, :2], y=y)
    text("empty.svm", "")
    text("comments.svm", "# nothing but a comment\n\n")
    text("bigindex.svm", "1 99999999999999999999:1\n-1 1:2\n")
    text("hugeindex.svm", "1 1000000000000:1\n-1 1:2\n")
    text("nan.svm", "1 1:nan\n-1 1:1\n")
    text("nanlabel.svm", "nan 1:1\n-1 1:1\n")
    text("f32.svm", "1 1:1e39\n-1 1:1\n")
    text("fake.svm.gz", "1 1:1\n-1 1:2\n")
    text("fake.svm.bz2", "1 1:1\n-1 1:2\n")
    with gzip.open(d / "cut.svm.gz", "wb") as f:
        f.write(b"1 1:1\n-1 1:2\n" * 50)
    (d / "cut.svm.gz").write_bytes((d / "cut.svm.gz").read_bytes()[:-12])  # truncated
    npz("object.npz", X=np.array([[1, "a"], [2, None]], dtype=object), y=np.array([1, -1]))
    npz("strings.npz", X=np.array([["a", "b", "c"]] * 8), y=y)
    npz("complex.npz", X=X + 1j, y=y)
    npz("nanX.npz", X=np.where(X > 1, np.inf, X), y=y)
    npz("nany.npz", X=X, y=np.where(y > 0, np.nan, -1.0))
    npz("oneclass.npz", X=X, y=np.ones(8))
    npz("target.npz", X=X, y=rng.normal(size=8))
    npz("names.npz", X=X, y=np.array(["cat", "dog"] * 4))
    npz("short.npz", X=X, y=y[:5])
    npz("noX.npz", y=y)
    npz("y2d.npz", X=X, y=y[:, None])
    np.save(d / "array.npy", X)
    os.replace(d / "array.npy", d / "npy.npz")
    text("text.npz", "X y\n1 2\n")
    (d / "empty.npz").write_bytes(b"")
    with zipfile.ZipFile(d / "raw.npz", "w") as z:  # members that are not .npy arrays
        z.writestr("X", b"not an array")
        z.writestr("y", b"nor this")
    np.savez(d / "corrupt.npz", X=X, y=y)
    raw = bytearray((d / "corrupt.npz").read_bytes())
    raw[200:208] = b"\xff" * 8  # inside X's data: the CRC check fails on reading
    (d / "corrupt.npz").write_bytes(bytes(raw))
    (d / "adir").mkdir()
    np.savez(d / "model.npz", **_model())
    (d / "empty.model.npz").write_bytes(b"")
    npz("foreign.npz", coef=np.zeros(3))
    npz("now.npz", **_model(w=None))
    npz("wdim.npz", **_model(w=np.zeros(5)))
    npz("w2d.npz", **_model(w=np.zeros((3, 2))))
    npz("wnan.npz", **_model(w=np.array([np.nan, 0, 0])))
    npz("wstr.npz", **_model(w=np.array(["a", "b", "c"])))
    npz("badloss.npz", **_model(loss="svm"))
    npz("noclasses.npz", **_model(classes=np.array([])))
    npz("sameclasses.npz", **_model(classes=np.array([1, 1])))
    npz("badwidth.npz", **_model(n_features=-3))
    npz("badbias.npz", **_model(bias="yes"))
    npz("wrongformat.npz", **_model(format="nsjax-linear-model-0"))
    return d


def _refused(capsys, argv, names, says=""):
    """main(argv) exits with 2 and one line, naming ``names`` and saying ``says``."""
    status = main(argv)
    out, err = capsys.readouterr()
    assert status == 2, (argv, err)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nsjax: error: "), err
    assert names in lines[0] and says in lines[0], lines[0]
    assert "Traceback" not in err and out == ""
    return lines[0]


DATA = [
    # (argv, what the line names, what it says)
    (["train", "empty.svm"], "'empty.svm'", "no examples"),
    (["train", "comments.svm"], "'comments.svm'", "no examples"),
    (["train", "bigindex.svm"], "'bigindex.svm'", "too large"),
    (["train", "hugeindex.svm"], "'hugeindex.svm'", "memory"),
    (["train", "nan.svm"], "'nan.svm'", "NaN"),
    (["train", "nanlabel.svm"], "'nanlabel.svm'", "labels are NaN"),
    (["train", "f32.svm", "--dtype", "float32"], "'f32.svm'", "overflow --dtype float32"),
    (["train", "fake.svm.gz"], "'fake.svm.gz'", "as gzip"),
    (["train", "fake.svm.bz2"], "'fake.svm.bz2'", "as bzip2"),
    (["train", "cut.svm.gz"], "'cut.svm.gz'", "as gzip"),
    (["train", "object.npz"], "'object.npz'", "Python objects"),
    (["train", "strings.npz"], "'strings.npz'", "must hold numbers"),
    (["train", "complex.npz"], "'complex.npz'", "complex"),
    (["train", "nanX.npz"], "'nanX.npz'", "NaN or infinite"),
    (["train", "nany.npz"], "'nany.npz'", "labels are NaN"),
    (["train", "oneclass.npz"], "'oneclass.npz'", "exactly two classes"),
    (["train", "target.npz"], "'target.npz'", "--loss squared"),
    (["train", "target.npz", "--loss", "multiclass"], "'target.npz'", "class labels"),
    (["train", "names.npz", "--loss", "squared"], "'names.npz'", "numeric targets"),
    (["train", "short.npz"], "'short.npz'", "one label per row"),
    (["train", "y2d.npz"], "'y2d.npz'", "one label per row"),
    (["train", "noX.npz"], "'noX.npz'", "lacks ['X']"),
    (["train", "npy.npz"], "'npy.npz'", "not an .npz archive"),
    (["train", "text.npz"], "'text.npz'", "not an .npz archive"),
    (["train", "empty.npz"], "'empty.npz'", "not an .npz archive"),
    (["train", "raw.npz"], "'raw.npz'", "not an array"),
    (["train", "corrupt.npz"], "'corrupt.npz'", "corrupt"),
    (["train", "adir"], "'adir'", "is a directory"),
    (["train", "missing.svm"], "'missing.svm'", "not found"),
]


def _ids(cases):
    firsts = [getattr(case, "values", case)[0] for case in cases]  # (a pytest.param too)
    return [" ".join(first) if isinstance(first, list) else first for first in firsts]


@pytest.mark.parametrize(("argv", "names", "says"), DATA, ids=_ids(DATA))
def test_bad_data_files(files, monkeypatch, capsys, argv, names, says):
    monkeypatch.chdir(files)
    _refused(capsys, argv, names, says)


ARGUMENTS = [
    *[(["--lam", v], "--lam") for v in ("nan", "inf", "-1", "0", "zero")],
    *[(["--C", v], "--C") for v in ("nan", "inf", "-2", "0")],
    *[(["--tol", v], "--tol") for v in ("nan", "-1e-3", "inf")],
    *[(["--l1-ratio", v], "--l1-ratio") for v in ("nan", "-0.1", "1.5")],
    *[(["--max-steps", v], "--max-steps") for v in ("0", "-5", "10" * 20, "1.5")],
    (["--solver", "newton"], "--solver"),
    (["--loss", "svm"], "--loss"),
    (["--lam", "1", "--C", "1"], "not both"),
    (["--lam", "1e200"], "--lam 1e+200"),  # beyond sqrt(finfo.max)
    (["--C", "1e-300"], "--C 1e-300"),  # lambda = 1 / (C n) too large
    (["--lam", "1e-300", "--dtype", "float32"], "--lam 1e-300"),  # underflows
    (["--tol", "1e300", "--dtype", "float32"], "--tol"),
    (["--solver", "owlqn"], "--solver owlqn"),  # needs a smooth loss
    (["--solver", "bmrm", "--reg", "l1"], "--solver bmrm"),  # needs L2
    (["--solver", "oba", "--loss", "logistic", "--bias"], "--bias"),  # no bias
    (["--out", "nowhere/m.npz"], "'nowhere'"),
    (["--out", "adir"], "--out 'adir'"),
    (["--out", "new/"], "--out 'new/'"),
    (["--out", "good.npz"], "--out 'good.npz'"),  # the data file itself
    (["--out", "good.npz/m.npz"], "'good.npz'"),
]


@pytest.mark.parametrize(("extra", "names"), ARGUMENTS, ids=_ids(ARGUMENTS))
def test_bad_train_arguments_are_refused_before_the_solve(files, monkeypatch, capsys, extra,
                                                          names):
    monkeypatch.chdir(files)

    def solve(*args, **kwargs):
        raise AssertionError("solved despite bad input")

    monkeypatch.setattr(nsjax, "solve", solve)
    _refused(capsys, ["train", "good.npz", *extra], names)
    assert not (files / "good.model.npz").exists()


OTHERS = [
    (["bench", "--lam", "-1"], "--lam"),
    (["bench", "--lam", "nan"], "--lam"),
    (["demo", "--lam", "0"], "--lam"),
    (["demo", "--max-steps", "0"], "--max-steps"),
    (["demo", "--out", "nowhere/plot.png"], "'nowhere'"),
    (["demo", "--out", "adir"], "--out 'adir'"),
    pytest.param(["demo", "--out", "plot.bin"], "--out 'plot.bin'",  # (asks matplotlib)
                 marks=pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                          reason="matplotlib (the demo extra) not installed")),
    (["trian", "good.npz"], "'trian'"),
    (["train"], "file"),
    ([], "command"),
]


@pytest.mark.parametrize(("argv", "names"), OTHERS, ids=_ids(OTHERS))
def test_bad_commands_and_options(files, monkeypatch, capsys, argv, names):
    monkeypatch.chdir(files)
    monkeypatch.setattr("nsjax.__main__.demo", lambda *a: pytest.fail("the demo ran"))
    _refused(capsys, argv, names)


def test_the_demo_without_matplotlib_says_how_to_get_it(files, monkeypatch, capsys):
    monkeypatch.chdir(files)
    monkeypatch.setattr("nsjax.__main__.demo", lambda *a: pytest.fail("the demo ran"))
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else find_spec(name, *a))
    _refused(capsys, ["demo", "--out", "plot.png"], "pip install matplotlib")


MODELS = [
    ("empty.model.npz", "not an .npz archive"),
    ("npy.npz", "not an .npz archive"),
    ("text.npz", "not an .npz archive"),
    ("good.npz", "not an nsjax model"),  # a data file
    ("foreign.npz", "not an nsjax model"),
    ("wrongformat.npz", "not an nsjax model"),
    ("now.npz", "lacks ['w']"),
    ("wdim.npz", "shape (5,)"),
    ("w2d.npz", "shape (3, 2)"),
    ("wnan.npz", "NaN"),
    ("wstr.npz", "weights"),
    ("badloss.npz", "'svm'"),
    ("noclasses.npz", "two distinct classes"),
    ("sameclasses.npz", "two distinct classes"),
    ("badwidth.npz", "n_features"),
    ("badbias.npz", "bias"),
    ("adir", "is a directory"),
    ("missing.npz", "not found"),
]


@pytest.mark.parametrize(("model", "says"), MODELS, ids=_ids(MODELS))
def test_bad_model_files(files, monkeypatch, capsys, model, says):
    monkeypatch.chdir(files)
    _refused(capsys, ["predict", model, "good.svm"], f"'{model}'", says)


PREDICT = [
    (["predict", "model.npz", "wide.svm"], "'wide.svm'", "has 5 features, the model 3"),
    (["predict", "model.npz", "narrow.npz"], "'narrow.npz'", "has 2 features, the model 3"),
    (["predict", "model.npz", "good.svm", "--out", "nowhere/p.txt"], "'nowhere'", ""),
    (["predict", "model.npz", "good.svm", "--out", "adir"], "--out 'adir'", "directory"),
    (["predict", "model.npz", "good.svm", "--out", "model.npz"], "--out 'model.npz'",
     "overwrite"),
    (["predict", "model.npz", "good.svm", "--out", "good.svm"], "--out 'good.svm'",
     "overwrite"),
]


@pytest.mark.parametrize(("argv", "names", "says"), PREDICT, ids=_ids(PREDICT))
def test_bad_predict_inputs(files, monkeypatch, capsys, argv, names, says):
    monkeypatch.chdir(files)
    _refused(capsys, argv, names, says)
    assert not (files / "nowhere").exists()


def test_a_narrower_svmlight_file_reads_as_zero_columns(files, monkeypatch, capsys):
    # svmlight leaves zero features out: a file whose largest index is below the model's
    # width is the same data with zero columns.
    monkeypatch.chdir(files)
    assert main(["predict", "model.npz", "narrow.svm"]) == 0
    out, err = capsys.readouterr()
    # Rows (0.5, 0, 0) and (0, 1, 0) against w = (1, -1, 0.5): scores 0.5 and -1.
    assert out.split() == ["1", "-1"] and err.startswith("2 rows; accuracy 1.0000")


def _deny(monkeypatch, path, mode):
    """``path`` without the ``mode`` permission; root ignores permissions, so there
    `os.access` is made to say so too (what the commands ask before they read or write)."""
    os.chmod(path, 0o000 if mode == os.R_OK else 0o500)
    if os.access(path, mode):
        access = os.access
        monkeypatch.setattr(os, "access", lambda p, m, *a, **k: (
            False if os.path.abspath(p) == os.path.abspath(path) and m & mode
            else access(p, m, *a, **k)))


def test_unreadable_data_and_unwritable_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    np.savez("data.npz", X=np.eye(3), y=np.array([1, -1, 1]))
    os.mkdir("locked")
    try:
        _deny(monkeypatch, "locked", os.W_OK)
        _refused(capsys, ["train", "data.npz", "--out", "locked/m.npz"], "'locked'",
                 "permission denied")
        _deny(monkeypatch, "data.npz", os.R_OK)
        _refused(capsys, ["train", "data.npz"], "'data.npz'", "not readable")
    finally:
        os.chmod("locked", 0o700)
        os.chmod("data.npz", 0o600)


def test_out_is_exactly_the_path_given_and_predict_reads_it(files, tmp_path, monkeypatch,
                                                             capsys):
    monkeypatch.chdir(tmp_path)
    data = str(files / "good.npz")
    assert main(["train", data, "--out", "model.bin", "--solver", "bmrm", "--max-steps", "5",
                 "--quiet"]) in (0, 3)
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "model written to model.bin"
    assert sorted(os.listdir()) == ["model.bin"]  # not model.bin.npz
    with np.load("model.bin") as model:
        assert str(model["format"]) == FORMAT and model["w"].shape == (3,)
    assert main(["predict", "model.bin", str(files / "good.svm"), "--out", "p"]) == 0
    assert len(np.loadtxt("p")) == 8 and sorted(os.listdir()) == ["model.bin", "p"]
    capsys.readouterr()


def test_ctrl_c_exits_130_and_bugs_are_not_swallowed(files, monkeypatch, capsys):
    monkeypatch.chdir(files)

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(nsjax, "solve", interrupted)
    assert main(["train", "good.npz", "--out", "never.npz"]) == 130
    err = capsys.readouterr().err
    assert err.splitlines() == ["nsjax: interrupted"] and "Traceback" not in err
    assert not (files / "never.npz").exists()

    def bug(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(nsjax, "solve", bug)
    with pytest.raises(RuntimeError, match="a bug"):  # a bug keeps its traceback
        main(["train", "good.npz", "--out", "never.npz"])


def test_messages_are_one_line_whatever_the_input(files, monkeypatch, capsys):
    monkeypatch.chdir(files)
    line = _refused(capsys, ["train", "two\nlines.svm"], "'two\\nlines.svm'", "not found")
    assert "\n" not in line
    _refused(capsys, ["train", "good.npz", "extra\nargument"], "unrecognized")
    assert cli.one_line("a\nb\r\nc  \n\n") == "a b c"


@pytest.mark.parametrize(("argv", "names"), [
    (["train", "missing.svm"], "'missing.svm'"),
    (["train", "good.npz", "--lam", "nan"], "--lam"),
])
def test_through_python_dash_m(files, argv, names):
    # (The nsjax under test, run from the data's directory.)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(nsjax.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "nsjax", *argv], cwd=files, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("nsjax: error: ") and names in lines[0]
    assert time.perf_counter() - t0 < 60

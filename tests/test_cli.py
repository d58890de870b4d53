"""`python -m nsjax train | predict`: through a subprocess on small svmlight files (the real
entry point), and in process (`nsjax.__main__.main`) for the other behaviours."""

import subprocess
import sys

import numpy as np
import pytest
from reference import cvxpy_optimum, hinge_objective, random_binary
from sklearn.datasets import dump_svmlight_file

import nsjax
from nsjax.__main__ import main
from nsjax.testing import progress_timing


def _run(*args):
    return subprocess.run([sys.executable, "-m", "nsjax", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


def test_train_then_predict_through_the_command_line(tmp_path):
    X, y, _ = random_binary(3, 60, 5)
    y = np.where(y > 0, 2, 7)  # any two label values
    data, model = tmp_path / "train.svm", tmp_path / "m.npz"
    dump_svmlight_file(X, y, str(data))
    done = _run("train", data, "--lam", "0.01", "--out", model, "--tol", "1e-9")
    assert done.returncode == 0, done.stderr
    assert "successful" in done.stdout and model.is_file()
    # The saved weights are the optimum (cvxpy's).
    saved = np.load(model)
    yy = np.where(y == 7, 1.0, -1.0)
    J_star, _ = cvxpy_optimum(X, yy, 0.01)
    assert hinge_objective(saved["w"], X, yy, 0.01) == pytest.approx(J_star, rel=1e-8)
    done = _run("predict", model, data)
    assert done.returncode == 0, done.stderr
    predicted = np.array(done.stdout.split(), float)
    np.testing.assert_array_equal(predicted, np.where(X @ saved["w"] > 0, 7, 2))
    assert "accuracy" in done.stderr


@pytest.mark.parametrize(("text", "says"), [
    ("1 1:0.5 2:1\n-1 3:1 2:0.5\n", "line 2: feature indices must be ascending"),
    ("1 1:0.5\nyes 1:2\n", "line 2: the label 'yes' is not a number"),
    ("1 1:0.5 2\n", "line 1: '2' has no colon"),
])
def test_malformed_files_are_named_with_their_line(tmp_path, capsys, text, says):
    # In process (a subprocess is 1-2 s of imports each): `python -m nsjax` exits with
    # main's status, and an exception main does not turn into a message fails the test.
    bad = tmp_path / "bad.svm"
    bad.write_text(text)
    assert main(["train", str(bad)]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_npz_data_multiclass_and_the_progress_line(tmp_path, capsys, monkeypatch):
    X, y = nsjax.datasets.iris()
    data, model = tmp_path / "iris.npz", tmp_path / "iris.model.npz"
    np.savez(data, X=X, y=y)
    # The progress line is shown on a terminal only (a log file gets no \r lines, and the
    # program without the callback comes from the cache).
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    # (BMRM: what is tested does not depend on the solver, and it compiles in a third of
    # the default's time; the default solve is the subprocess's above.)
    with progress_timing(delay=0.0, interval=0.0):  # show it at once
        assert main(["train", str(data), "--loss", "multiclass", "--C", "10", "--max-steps",
                     "300", "--solver", "bmrm"]) == 0
        out, err = capsys.readouterr()
        assert "step" in err and "certified gap" in err and err.rstrip().endswith("successful")
        assert f"model written to {model}" in out
        monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)  # a log file
        assert main(["train", str(data), "--loss", "multiclass", "--C", "10", "--max-steps",
                     "300", "--solver", "bmrm"]) == 0
        assert "step" not in capsys.readouterr().err
    assert main(["predict", str(model), str(data), "--out", str(tmp_path / "p.txt")]) == 0
    predicted = np.loadtxt(tmp_path / "p.txt")
    accuracy = float(capsys.readouterr().err.split("accuracy")[1])
    assert accuracy == pytest.approx(np.mean(predicted == y), abs=1e-4) and accuracy > 0.8
    # Stopping short: the model is saved, the exit status says so. (3 steps at λ ~ 7e-9:
    # far from tol.)
    model.unlink()
    assert main(["train", str(data), "--loss", "multiclass", "--C", "1e6", "--solver",
                 "bmrm", "--max-steps", "3", "--quiet", "--tol", "1e-12", "--out",
                 str(model)]) == 3
    assert model.is_file()
    assert "successful" not in capsys.readouterr().out


def test_bad_arguments_and_files_exit_2(tmp_path, capsys):
    X, y, _ = random_binary(0, 20, 3)
    data = tmp_path / "d.npz"
    np.savez(data, X=X, y=y)
    np.savez(tmp_path / "noy.npz", X=X)
    cases = [(["train", str(data), "--lam", "1", "--C", "1"], "not both"),
             (["train", str(data), "--solver", "newton"], "solver must be one of"),
             (["train", str(tmp_path / "noy.npz")], "must hold arrays 'X' and 'y'"),
             (["train", str(tmp_path / "none.svm")], "not found"),
             (["predict", str(data), str(data)], "not an nsjax model"),
             (["train", str(data), "--reg", "elasticnet", "--l1-ratio", "2"], "--l1-ratio")]
    for argv, says in cases:
        assert main(argv) == 2, argv
        assert says in capsys.readouterr().err, argv

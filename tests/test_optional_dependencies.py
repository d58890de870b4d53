"""scikit-learn is an optional dependency (the ``sklearn`` extra, pyproject.toml): `import
nsjax` does not import it, and each thing that needs it (`nsjax.sklearn`, the bundled data
sets, ``python -m nsjax bench`` and ``demo``) says how to install it; `load_svmlight` parses
large files itself without it.

Checked in a new process, where scikit-learn is made unimportable
(``sys.modules["sklearn"] = None``, as Python does for a module that is not there) once
nsjax is imported: nothing of this test's process changes."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALL = 'pip install "nsjax[sklearn]"'

_CHILD = r"""
import contextlib, importlib.util, io, json, os, sys, tempfile
from pathlib import Path

import nsjax
out = {"imported": sorted(m for m in sys.modules if m.partition(".")[0] == "sklearn")}
sys.modules["sklearn"] = None  # from here on, as if scikit-learn were not installed


def error(call):
    try:
        call()
    except ImportError as e:
        return [type(e).__name__, e.name, str(e)]
    return None


out["nsjax.sklearn"] = error(lambda: __import__("nsjax.sklearn"))
for name in ("breast_cancer", "digits", "digits_binary", "iris", "diabetes"):
    out[name] = error(getattr(nsjax.datasets, name))

# A file above SMALL_SVMLIGHT_BYTES is parsed here, not by scikit-learn.
nsjax.datasets.SMALL_SVMLIGHT_BYTES = 0
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "data.svm"
    path.write_text("1 1:0.5 3:2\n-1 2:1.5\n")
    X, y = nsjax.datasets.load_svmlight(path)
    out["svmlight"] = [X.toarray().tolist(), y.tolist()]

from nsjax.__main__ import main

workdir = tempfile.TemporaryDirectory()  # (the demo would write its plot here)
os.chdir(workdir.name)
for argv in (["bench"], ["demo", "--out", "plot.png"]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        out[argv[0]] = [main(argv), err.getvalue()]
out["matplotlib"] = importlib.util.find_spec("matplotlib") is not None
print(json.dumps(out))
"""


def _without_sklearn() -> dict:
    env = dict(os.environ, NSJAX_CACHE_DIR="off")
    done = subprocess.run([sys.executable, "-c", _CHILD], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_without_scikit_learn_nsjax_imports_and_what_needs_it_names_the_extra():
    out = _without_sklearn()
    assert out["imported"] == []  # `import nsjax` imported no part of scikit-learn
    kind, name, message = out["nsjax.sklearn"]
    assert (kind, name) == ("ModuleNotFoundError", "sklearn")
    assert message.startswith("nsjax.sklearn (the scikit-learn estimators) needs "
                              "scikit-learn") and INSTALL in message
    for loader in ("breast_cancer", "digits", "digits_binary", "iris", "diabetes"):
        kind, name, message = out[loader]
        assert (kind, name) == ("ModuleNotFoundError", "sklearn"), loader
        assert message.startswith(f"nsjax.datasets.{loader}() needs scikit-learn"), message
        assert INSTALL in message
    assert out["svmlight"] == [[[0.5, 0.0, 2.0], [0.0, 1.5, 0.0]], [1.0, -1.0]]
    # The command line: exit status 2 and one line on stderr, no traceback.
    status, err = out["bench"]
    assert status == 2 and err.startswith("nsjax: error: python -m nsjax bench")
    assert INSTALL in err and err.count("\n") == 1
    status, err = out["demo"]
    assert status == 2 and err.count("\n") == 1
    if out["matplotlib"]:  # (else the demo asks for matplotlib first)
        assert "the demo needs scikit-learn for its data sets" in err and INSTALL in err
    else:
        assert "the demo needs matplotlib" in err

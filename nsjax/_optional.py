"""Optional dependencies: scikit-learn is the ``sklearn`` extra (``pip install
"nsjax[sklearn]"``), needed only by `nsjax.sklearn`, the bundled data sets of
`nsjax.datasets` and ``python -m nsjax bench``/``demo``. `import nsjax` does not import it."""

from __future__ import annotations

import importlib

#: How to install scikit-learn for nsjax, as the messages say it.
SKLEARN_INSTALL = 'pip install "nsjax[sklearn]"'


def is_missing_sklearn(error: ImportError) -> bool:
    """Whether ``error`` says that scikit-learn itself is not installed (not an import that
    failed inside an installed scikit-learn)."""
    return isinstance(error, ModuleNotFoundError) and (error.name or "").partition(".")[0] \
        == "sklearn"


def missing_sklearn(what: str) -> ModuleNotFoundError:
    """The error for ``what`` (e.g. "nsjax.sklearn") without scikit-learn: it names the
    extra that installs it."""
    return ModuleNotFoundError(f"{what} needs scikit-learn, an optional dependency of nsjax: "
                               f"{SKLEARN_INSTALL} (or pip install scikit-learn).",
                               name="sklearn")


def sklearn_module(name: str, what: str):
    """The scikit-learn module ``name`` (e.g. "sklearn.datasets") that ``what`` needs, or
    `missing_sklearn` where scikit-learn is not installed."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        if not is_missing_sklearn(error):
            raise
        raise missing_sklearn(what) from error

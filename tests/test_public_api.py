"""Tests, benchmarks and notebooks use nsjax's public API only (and the documented hooks of
`nsjax.testing`): no private module or name (one that starts with "_") is imported or
reached as an attribute, so that the implementation can change behind the API."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted([*ROOT.glob("tests/*.py"), *ROOT.glob("benchmarks/*.py"),
                  ROOT / "notebooks" / "build.py"])


def _private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def private_uses(tree) -> list[str]:
    """The private nsjax names a module imports or reaches: ``from nsjax.x import _y``,
    ``import nsjax._x``, ``nsjax.x._y``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "nsjax":
            found += [f"{node.module}.{a.name}" for a in node.names
                      if _private(f"{node.module}.{a.name}")]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names
                      if a.name.split(".")[0] == "nsjax" and _private(a.name)]
        elif isinstance(node, ast.Attribute):
            parts, value = [node.attr], node.value
            while isinstance(value, ast.Attribute):
                parts.append(value.attr)
                value = value.value
            if isinstance(value, ast.Name) and value.id == "nsjax":
                dotted = ".".join(["nsjax", *reversed(parts)])
                if _private(dotted):
                    found.append(dotted)
    return found


def test_the_scan_finds_private_uses():
    code = ("from nsjax.loop import _run\nimport nsjax._checks\n"
            "from nsjax.solvers import _svm_dual\nx = nsjax.programs._read\n"
            "from nsjax.testing import fused_sum\nimport nsjax.__main__")
    assert private_uses(ast.parse(code)) == [
        "nsjax.loop._run", "nsjax._checks", "nsjax.solvers._svm_dual", "nsjax.programs._read"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_private_nsjax_name_is_used(path):
    assert private_uses(ast.parse(path.read_text(encoding="utf-8"))) == []

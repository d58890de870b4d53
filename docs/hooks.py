"""MkDocs hook: put the figures of benchmarks/RESULTS.md into the site.

`benchmarks.md` pulls in benchmarks/RESULTS.md with pymdownx.snippets, so the tables are
never copied by hand. The figures it shows are named relative to benchmarks/ (where the
scripts write them), and in the included page they resolve next to `benchmarks.md`, at the
top of the docs. This hook adds each figure that RESULTS.md shows as a file there, read from
benchmarks/; one that does not exist is left out, and the strict build then fails on the
broken image link, naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*([^)\s]+)")


def on_files(files, config):
    benchmarks = Path(config.config_file_path).parent / "benchmarks"
    text = (benchmarks / "RESULTS.md").read_text(encoding="utf-8")
    for name in sorted(set(_IMAGE.findall(text))):
        if "://" in name or name.startswith("/"):
            continue
        source = (benchmarks / name).resolve()
        if source.is_file() and files.get_file_from_path(name) is None:
            files.append(File.generated(config, name, abs_src_path=str(source)))
    return files

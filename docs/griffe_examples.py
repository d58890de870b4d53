"""Griffe extension for the API reference: read "Example:" as a Google "Examples:" section.

nsjax's docstrings head their doctests "Example:", which Google style allows but griffe
reads as an admonition, so the ``>>>`` lines would be rendered as Markdown (nested quotes)
instead of as code. A line that is exactly "Example:" at the docstring's own indentation
(where section titles are) is renamed before the docstring is parsed; the source files are
not touched.
"""

from __future__ import annotations

import re

import griffe

_TITLE = re.compile(r"^Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename top-level "Example:" section titles to "Examples:"."""

    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        docstring = obj.docstring
        if docstring is not None and "Example:" in docstring.value:
            docstring.value = _TITLE.sub("Examples:", docstring.value)

"""Solver options: frozen dataclasses whose unknown keyword arguments get a clear error."""

from __future__ import annotations

import dataclasses
import difflib
import functools


def solver_options(cls):
    """Make ``cls`` a frozen dataclass of keyword-only options (static, hashable by value: a
    jit static argument) whose constructor names the valid options when given an unknown
    one."""
    cls = dataclasses.dataclass(frozen=True, kw_only=True)(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        for key in kwargs:
            if key not in names:
                close = difflib.get_close_matches(key, names, n=1)
                hint = f" Did you mean {close[0]!r}?" if close else ""
                raise TypeError(
                    f"{cls.__name__} has no option {key!r}.{hint} Valid options: "
                    f"{', '.join(names)}."
                )
        init(self, *args, **kwargs)

    cls.__init__ = __init__
    return cls

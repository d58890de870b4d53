"""Solver options: frozen dataclasses whose unknown keyword arguments get a clear error, the
checks each option passes when a solver (or one of its parts) is made, and the check of the
buffers that grow with an option against the memory of the machine.

Every option is checked at construction, before anything is compiled: its type (an int
option takes a Python or numpy int, not a bool, a float, a string or an array; a real
option a Python or numpy int or float, not a bool, a complex number, a string or an array;
a flag True or False only), its range (finite, and the documented bounds) and, for a
string, its choices. A wrong type raises `OptionTypeError` (a TypeError that is also a
ValueError), a value out of range or not among the choices a ValueError; both name the
solver and the option as the user spells them, the rule, an example and the value given.
The value is then stored as a plain Python int, float, bool or str, so that equal options
give equal, hash-equal solvers: a solver is a `jit` static argument, and two equal ones
share one compiled program.

The sizes are checked by each solver's ``check(problem)``, which `nsjax.solve` calls before
compiling: `check_fits` compares the bytes of the buffers that grow with an option (an
L-BFGS memory, a bundle of cuts) with the memory of the device (`memory_available`), and
refuses, naming the largest value that fits, where they cannot be allocated.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import difflib
import functools
import math
import os

import jax
import numpy as np

#: The largest count option (iterations, slots): nsjax's counters and slot indices are
#: int32.
MAX_COUNT = 2**31 - 1


class OptionTypeError(TypeError, ValueError):
    """An option of the wrong type. A TypeError, and also a ValueError: what such options
    raised before their types were checked, so that code catching ValueError still does."""


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


# -- the checks of one value ------------------------------------------------------------------

def _number(x) -> str:
    """A bound as written in a message: 1, 0.5, 1e-06, 2147483647."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e16 else repr(float(x))


def _got(value) -> str:
    if isinstance(value, (np.ndarray, jax.Array)):
        return (f"got an array of shape {tuple(np.shape(value))} ({type(value).__name__}): "
                "pass a Python number, e.g. float(x) or int(x)")
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"got {text} ({type(value).__name__})"


def _message(owner, name, rule, example, value) -> str:
    eg = "" if example is None else f" (e.g. {name}={example!r})"
    return f"{owner}: {name} must be {rule}{eg}; {_got(value)}."


def _is_int(value) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return _is_int(value) or isinstance(value, (float, np.floating))


def int_rule(low=None, high=MAX_COUNT) -> str:
    """'an int >= 1 and <= 2147483647' and the like."""
    parts = ([f">= {low}"] if low is not None else []) + (
        [f"<= {high}"] if high is not None else [])
    return "an int" + (" " + " and ".join(parts) if parts else "")


def check_int(value, name, owner, low=None, high=MAX_COUNT, example=None, rule=None) -> int:
    """``value`` as a Python int if it is an int (Python or numpy; not a bool) in
    [low, high] (None: unbounded); else OptionTypeError (wrong type) or ValueError (out of
    range), naming ``owner`` and the option ``name``, with ``example`` as the fix; ``rule``
    replaces the generated wording of the requirement."""
    rule = rule or int_rule(low, high)
    if not _is_int(value):
        raise OptionTypeError(_message(owner, name, rule, example, value))
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(_message(owner, name, rule, example, value))
    return value


def real_rule(low=None, high=None, low_open=False, high_open=False, none=False) -> str:
    """'a finite number > 0', 'a finite number in (0, 1]' and the like."""
    if low is not None and high is not None:
        bounds = (f" in {'(' if low_open else '['}{_number(low)}, {_number(high)}"
                  f"{')' if high_open else ']'}")
    elif low is not None:
        bounds = f" {'>' if low_open else '>='} {_number(low)}"
    elif high is not None:
        bounds = f" {'<' if high_open else '<='} {_number(high)}"
    else:
        bounds = ""
    return f"a finite number{bounds}" + (" or None" if none else "")


def check_real(value, name, owner, low=None, high=None, *, low_open=False, high_open=False,
               none=False, example=None, rule=None) -> float | None:
    """``value`` as a Python float if it is a real number (a Python or numpy int or float;
    not a bool, a complex number, a string or an array), finite and within the bounds
    (``low_open`` / ``high_open``: strictly); None if ``none`` and it is None. Else
    OptionTypeError (wrong type) or ValueError (NaN, infinite, out of range), naming
    ``owner`` and ``name``; ``rule`` replaces the generated wording of the requirement."""
    rule = rule or real_rule(low, high, low_open, high_open, none)
    if value is None and none:
        return None
    if not _is_real(value):
        raise OptionTypeError(_message(owner, name, rule, example, value))
    try:
        number = float(value)
    except OverflowError:  # an int beyond float's range
        number = math.inf
    inside = math.isfinite(number) and not (
        low is not None and (number <= low if low_open else number < low)) and not (
        high is not None and (number >= high if high_open else number > high))
    if not inside:
        raise ValueError(_message(owner, name, rule, example, value))
    return number


def check_bool(value, name, owner, example=None) -> bool:
    """``value`` as a Python bool if it is True or False (Python or numpy); else
    OptionTypeError naming ``owner`` and ``name`` (1, 'yes' and None are refused)."""
    if not isinstance(value, (bool, np.bool_)):
        raise OptionTypeError(_message(owner, name, "True or False", example, value))
    return bool(value)


def _objects(classes) -> str:
    """'an ExactLineSearch or WolfeLineSearch object'."""
    names = " or ".join(cls.__name__ for cls in classes)
    return f"{'an' if names[0] in 'AEIOU' else 'a'} {names} object"


def check_choice(value, name, owner, choices, objects=(), example=None):
    """``value`` as a Python str if it is one of ``choices``, or itself if it is an instance
    of one of the classes ``objects``; else OptionTypeError (neither a string nor such an
    object) or ValueError (a string not among the choices), listing the valid ones."""
    if objects and isinstance(value, objects):
        return value
    rule = "one of " + ", ".join(repr(c) for c in choices)
    if objects:
        rule += " or " + _objects(objects)
    if not isinstance(value, str):
        raise OptionTypeError(_message(owner, name, rule, example, value))
    if value not in choices:
        close = difflib.get_close_matches(value, list(choices), n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(_message(owner, name, rule, example, value) + hint)
    return str(value)


def check_instance(value, name, owner, classes, example=None):
    """``value`` itself if it is an instance of ``classes``; else OptionTypeError."""
    if not isinstance(value, classes):
        classes = classes if isinstance(classes, tuple) else (classes,)
        raise OptionTypeError(_message(owner, name, _objects(classes), example, value))
    return value


class Options:
    """The checks above, applied to the options of a frozen dataclass ``obj`` (in its
    ``__post_init__``): each reads the option, checks it (the solver's class name in the
    message, the field's default as the example unless one is given) and stores the
    normalized value.

    Example:
        >>> import dataclasses
        >>> @dataclasses.dataclass(frozen=True)
        ... class Part:
        ...     tries: int = 5
        ...     def __post_init__(self):
        ...         Options(self).int("tries", low=1)
        >>> Part(True)
        Traceback (most recent call last):
        ...
        nsjax.solvers._options.OptionTypeError: Part: tries must be an int >= 1 and <= 2147483647 (e.g. tries=5); got True (bool).
    """  # noqa: E501

    def __init__(self, obj):
        self.obj, self.owner = obj, type(obj).__name__
        self.defaults = {f.name: f.default for f in dataclasses.fields(obj)}

    def _example(self, name, example):
        if example is not None:
            return example
        default = self.defaults.get(name, dataclasses.MISSING)
        return None if default in (dataclasses.MISSING, None) else default

    def _store(self, name, value):
        object.__setattr__(self.obj, name, value)
        return value

    def int(self, name, low=None, high=MAX_COUNT, example=None, rule=None) -> int:
        """`check_int` on the option ``name``."""
        return self._store(name, check_int(getattr(self.obj, name), name, self.owner, low,
                                           high, self._example(name, example), rule))

    def real(self, name, low=None, high=None, *, example=None, **kw) -> float | None:
        """`check_real` on the option ``name`` (keywords as there)."""
        return self._store(name, check_real(getattr(self.obj, name), name, self.owner, low,
                                            high, example=self._example(name, example), **kw))

    def bool(self, name) -> bool:
        """`check_bool` on the option ``name``."""
        return self._store(name, check_bool(getattr(self.obj, name), name, self.owner,
                                            self._example(name, None)))

    def choice(self, name, choices, objects=(), example=None):
        """`check_choice` on the option ``name``."""
        return self._store(name, check_choice(getattr(self.obj, name), name, self.owner,
                                              choices, objects, self._example(name, example)))

    def instance(self, name, classes, example=None):
        """`check_instance` on the option ``name``."""
        return check_instance(getattr(self.obj, name), name, self.owner, classes,
                              self._example(name, example))


def check_constants(owner, c1, c2):
    """The Wolfe constants: 0 < c1 < c2 < 1 (already checked to be numbers in (0, 1))."""
    if not c1 < c2:
        raise ValueError(f"{owner}: need 0 < c1 < c2 < 1 (e.g. c1=0.0001, c2=0.9); got "
                         f"c1={c1!r}, c2={c2!r}.")


# -- the sizes of the buffers -----------------------------------------------------------------

def memory_available() -> tuple[int, str]:
    """(bytes, what they are): the memory of the default device where JAX reports it
    (``memory_stats()["bytes_limit"]``: GPUs, TPUs), else the host's physical memory."""
    try:
        device = jax.devices()[0]
        stats = device.memory_stats()
    except Exception:  # a backend without memory statistics
        stats, device = None, None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]), f"of {device.platform.upper()} memory"
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "of memory"
    except (ValueError, OSError, AttributeError):  # no sysconf: do not refuse
        return 2**63 - 1, "of memory"


def format_bytes(n) -> str:
    """480 GB, 1.5 MB, 12 bytes (powers of 1000)."""
    for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6),
                       ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{int(n)} bytes"


def weights_of(problem) -> tuple[int, str]:
    """(the number of weights D, the problem's dtype name): the sizes every buffer of a
    solver is counted in."""
    return math.prod(problem.w_shape), np.dtype(problem.dtype).name


#: How many copies of a solver's state one program holds at once: 1 for `nsjax.solve`, the
#: lanes of a vmapped `nsjax.sweep` or of `nsjax.solve_batch` (set by `lanes`).
_LANES = contextvars.ContextVar("nsjax_solver_lanes", default=1)


@contextlib.contextmanager
def lanes(count: int):
    """Within this block, `check_fits` counts ``count`` copies of every buffer (a vmapped
    program holds one state per lane)."""
    token = _LANES.set(max(int(count), 1))
    try:
        yield
    finally:
        _LANES.reset(token)


def check_fits(owner, option, value, needs, what, *, low=None, reserved=(0, ""),
               instead=None):
    """Refuse (ValueError) an option whose buffers cannot be allocated: where
    ``needs(value)`` bytes (times the `lanes` of the program), plus ``reserved`` =
    (bytes, what) that the solver's other buffers take, exceed `memory_available`. The
    message names ``owner``, ``option`` = ``value``, ``what`` it needs (the formula, in
    numbers), the bytes, the memory there is and, where ``low`` is given (``needs`` then
    grows with the value), the largest value from ``low`` that fits; else ``instead``
    (what to do)."""
    total, where = memory_available()
    copies = _LANES.get()
    spare = total - reserved[0] * copies
    need = needs(value) * copies
    if need <= spare:
        return
    also = (f", of which {format_bytes(reserved[0] * copies)} go to {reserved[1]}"
            if reserved[0] else "")
    each = f" in each of {copies} lanes" if copies > 1 else ""
    head = (f"{owner}: {option}={value} needs {what}{each} ({format_bytes(need)}); this "
            f"machine has {format_bytes(total)} {where}{also}")
    if low is None or needs(low) * copies > spare:
        raise ValueError(f"{head}: {instead or 'use a smaller problem'}.")
    lo, hi = low, value  # needs(lo) fits, needs(hi) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if needs(mid) * copies <= spare else (lo, mid)
    raise ValueError(f"{head}: use {option} <= {lo}.")

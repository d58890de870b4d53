"""nsjax's compiled programs: one compile per problem kind and shape, kept on disk for
later processes, and a bounded number of them loaded in this one.

Every `nsjax.solve`, `nsjax.sweep` and `nsjax.solve_batch` runs one XLA program, compiled
for the problem's structure (loss, regularizer, layout), the shapes and dtypes of its
arrays and the solver's options: seconds on a CPU, where a small problem then runs in
milliseconds. A `Program` makes that cost rare:

- **Persistent cache.** A compiled program is written to a cache directory and a later
  process that meets the same key loads it (a fraction of the compile's time, growing with
  the program's size) instead of tracing and compiling it. The key is computed from the
  arguments alone (the solver's options, the problem's pytree structure, every array's
  shape and dtype), together with the source of nsjax, the versions of JAX and jaxlib,
  the device and the JAX settings that change a program; so a new nsjax or JAX never
  loads an old program. Where the directory
  is (`cache_dir`): ``NSJAX_CACHE_DIR`` if set (``off``, ``0`` or an empty value turn the
  cache off), else a ``nsjax`` folder inside JAX's own cache directory if the user set one
  (``jax_compilation_cache_dir``), else ``$XDG_CACHE_HOME/nsjax`` (``~/.cache/nsjax``);
  `set_cache_dir` changes it for the process. Only nsjax's own programs are stored there:
  the user's other JAX programs and JAX's settings are left as they are.
  The directory holds at most `CACHE_MAX_BYTES`; past that, the least recently used
  programs are deleted. Entries are written to a temporary file and renamed into place,
  so concurrent processes (two command-line runs at once) never read half an entry; an
  entry that cannot be read (truncated, corrupt, from another JAX) is deleted and the
  program compiled again. Like JAX's own cache, an entry is executable code: the directory
  is created readable by its owner only; do not point it at a folder others can write.
  Not stored: a program that calls back into Python (``solve(..., progress=True)``), and
  one that JAX itself loaded from its own persistent cache, where the user turned that
  on (serialized again, such an executable lost kernels in jaxlib 0.10.2; JAX's cache
  holds it anyway).
- **Bounded in memory.** Each XLA:CPU program holds a few hundred memory mappings for its
  kernels, and Linux allows 65,530 per process (``vm.max_map_count``): a process that
  compiled a few hundred programs used to crash inside XLA. A `Program` keeps its
  executables itself (JAX's own caches are emptied of them after each compile), at most
  `MAX_LOADED_MAPPINGS` mappings' worth (elsewhere than Linux, `MAX_LOADED` programs), and
  drops the least recently used ones beyond that; a dropped program is loaded again from
  the disk cache when next needed.
- **Compile options by size.** On CPUs, a problem of at most `SMALL_PROBLEM` stored
  numbers (its arrays' total size) is compiled with XLA's older loop emitters
  (``xla_cpu_use_fusion_emitters=False``): they compile faster and run as fast at that
  size; larger problems get XLA's defaults, whose kernels are faster on large
  data. A problem of at most `TINY_PROBLEM` numbers (e.g. 2,000 × 32) is moreover compiled
  with LLVM's optimizations off (`NO_LLVM_OPTIMIZATIONS`, what ``jax_disable_most_
  optimizations`` sets for the whole process): its compile is much shorter and its steps,
  cheap at that size, slower, so the saving pays for all but long runs (measured:
  docs/design.md, "Measured design choices"). Results differ only in the order of
  additions.

A call under a JAX transformation (``solve`` inside the user's `jax.jit`, `jax.vmap` or
`jax.grad`), with ``jax_disable_jit``, ``jax_debug_nans``/``jax_debug_infs``, or on data
placed on several devices (`nsjax.Problem.shard`) or off the default device, runs the
plain `jax.jit` function instead, with JAX's caches and the options of the outer program.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import pickle
import tempfile
import threading
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp

#: The largest problem, in stored numbers (the total size of its arrays), compiled with
#: XLA's older loop emitters on CPUs.
SMALL_PROBLEM = 1 << 20
FAST_COMPILE = {"xla_cpu_use_fusion_emitters": False}
#: The largest problem, in stored numbers, compiled without LLVM's optimizations on CPUs.
TINY_PROBLEM = 1 << 16
NO_LLVM_OPTIMIZATIONS = {"xla_backend_optimization_level": 0,
                         "xla_llvm_disable_expensive_passes": True}
#: The most bytes the cache directory holds; older entries are deleted beyond it.
CACHE_MAX_BYTES = 1 << 29
#: Loaded programs are dropped, least recently used first, once they hold more memory
#: mappings than this (Linux; ``vm.max_map_count`` is 65,530 per process by default) ...
MAX_LOADED_MAPPINGS = 24_000
#: ... or, where mappings cannot be counted, once more than this many are loaded.
MAX_LOADED = 32
#: Bumped when the format of an entry changes.
_FORMAT = 1
_SUFFIX = ".nsjaxprog"

_OFF = ("", "0", "off", "false", "no", "none")
_unset = object()
_dir_override = _unset
_lock = threading.RLock()
# key -> (compiled, mappings it holds); the most recently used last.
_loaded: collections.OrderedDict = collections.OrderedDict()
_warned_write = False


def cache_dir() -> Path | None:
    """The directory of the persistent program cache, or None where it is off (see the
    module docstring for the order: `set_cache_dir`, ``NSJAX_CACHE_DIR``, JAX's cache
    directory, the per-user default)."""
    if _dir_override is not _unset:
        return _dir_override
    env = os.environ.get("NSJAX_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in _OFF else Path(env).expanduser()
    jax_dir = jax.config.jax_compilation_cache_dir
    if jax_dir:
        return Path(jax_dir).expanduser() / "nsjax"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "nsjax"


def set_cache_dir(path) -> None:
    """Use ``path`` (a str or Path) as the persistent program cache for the rest of this
    process, or none with ``None``; ``set_cache_dir(...)`` overrides ``NSJAX_CACHE_DIR``.

    Example:
        >>> import nsjax.programs
        >>> nsjax.programs.set_cache_dir(None)   # off: compile in every process
        >>> nsjax.programs.cache_dir() is None
        True
        >>> nsjax.programs.reset_cache_dir()     # back to NSJAX_CACHE_DIR or the default
    """
    global _dir_override
    if path is not None and not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str, a Path or None (no cache); got {path!r}.")
    _dir_override = None if path is None else Path(path).expanduser()


def reset_cache_dir() -> None:
    """Undo `set_cache_dir`: the directory comes from the environment again."""
    global _dir_override
    _dir_override = _unset


def drop_loaded() -> None:
    """Drop every program this process holds in memory (the disk cache stays)."""
    with _lock:
        _loaded.clear()


def loaded_count() -> int:
    """How many programs this process holds in memory."""
    return len(_loaded)


#: Every `Program` by its name (nsjax's: "solve", "sweep", "batch").
_programs: dict = {}


def compiled_programs(name: str | None = None) -> int:
    """How many distinct programs this process has compiled or loaded: of the `Program`
    called ``name`` ("solve", "sweep" or "batch": `nsjax.solve`'s, `nsjax.sweep`'s and
    `nsjax.solve_batch`'s), or of all. The public hook for tests and benchmarks that check
    that a call compiled nothing, or one program per shape bucket."""
    if name is not None and name not in _programs:
        raise ValueError(f"name must be one of {sorted(_programs)} or None; got {name!r}.")
    chosen = _programs.values() if name is None else [_programs[name]]
    return sum(p._cache_size() for p in chosen)


def compile_count(name: str | None = None) -> int:
    """How many times this process traced and compiled a program itself, rather than load
    it from the disk cache: of the `Program` called ``name`` (as in `compiled_programs`), or
    of all. A program compiled again (its entry unreadable, or dropped from memory and not
    stored) counts again; a call under the user's `jax.jit` or `jax.vmap` (module
    docstring) compiles none of nsjax's programs. The hook for tests and benchmarks that
    check that a program was loaded, not compiled."""
    if name is not None and name not in _programs:
        raise ValueError(f"name must be one of {sorted(_programs)} or None; got {name!r}.")
    chosen = _programs.values() if name is None else [_programs[name]]
    return sum(p._compiles for p in chosen)


#: The options of a compile this XLA refused (an unknown option: XLA's options come and
#: go): left out from then on, and that program compiled with XLA's defaults.
_refused: set = set()


def compile_options(problem) -> dict:
    """The options a program on ``problem`` is compiled with (module docstring): on CPUs,
    `FAST_COMPILE` up to `SMALL_PROBLEM` numbers, and `NO_LLVM_OPTIMIZATIONS` too up to
    `TINY_PROBLEM`; none elsewhere, nor those this XLA refused."""
    if jax.default_backend() != "cpu":
        return {}
    size = sum(jnp.size(x) for x in jax.tree_util.tree_leaves(problem))
    return {k: v for limit, more in ((SMALL_PROBLEM, FAST_COMPILE),
                                     (TINY_PROBLEM, NO_LLVM_OPTIMIZATIONS))
            if size <= limit and not more.keys() & _refused for k, v in more.items()}


def is_small(problem) -> bool:
    """Whether a program on ``problem`` is compiled with `FAST_COMPILE`."""
    return "xla_cpu_use_fusion_emitters" in compile_options(problem)


def _mappings() -> int | None:
    """The memory mappings this process holds (Linux), else None."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return f.read().count(b"\n")
    except OSError:
        return None


@functools.cache
def _source_fingerprint() -> str:
    """A hash of nsjax's own source: a changed nsjax never loads an older program."""
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def _environment() -> tuple:
    """What besides the arguments decides a program: versions, the device, JAX's
    settings that change lowering or compiling, XLA's flags."""
    import jaxlib

    device = jax.devices()[0]
    settings = tuple((name, str(getattr(jax.config, name, None))) for name in (
        "jax_enable_x64", "jax_disable_most_optimizations", "jax_default_matmul_precision",
        "jax_numpy_dtype_promotion"))
    return (_FORMAT, _source_fingerprint(), jax.__version__, jaxlib.__version__,
            device.platform, getattr(device, "device_kind", ""), jax.device_count(), settings,
            os.environ.get("XLA_FLAGS", ""))


#: A value's abstract type (shape, dtype, weak type); ``jax.core.get_aval`` before JAX 0.4.36.
_aval = getattr(jax, "typeof", None) or jax.core.get_aval


def _bypass(leaves) -> bool:
    """Whether a call must go through plain `jax.jit` (module docstring)."""
    if (jax.config.jax_disable_jit or jax.config.jax_debug_nans
            or jax.config.jax_debug_infs):
        return True
    default = jax.devices()[0]
    for leaf in leaves:
        if isinstance(leaf, jax.core.Tracer):
            return True
        if isinstance(leaf, jax.Array):
            devices = leaf.sharding.device_set
            if len(devices) != 1 or default not in devices:
                return True
    return not _top_level()


def _top_level() -> bool:
    """Not inside a JAX transformation (compile options and AOT compiles apply to
    top-level programs only)."""
    try:  # JAX's own test; private, hence the fallback (the leaves were checked above)
        from jax._src.core import trace_state_clean
    except ImportError:
        return True
    return trace_state_clean()


class Program:
    """``fun`` compiled once per key, kept in a bounded in-memory cache and on disk.

    Call it as the jitted function: ``program(*args, **static)``, the static arguments
    (hashable, with a stable repr: solvers, lengths, flags) by keyword only. The first
    positional argument is the problem, which decides the compile options
    (`compile_options`).
    """

    def __init__(self, fun, static_argnames, name=None):
        self.jitted = jax.jit(fun, static_argnames=static_argnames)
        self._keys: set = set()  # every key this process compiled or loaded
        self._compiles = 0  # `_compile` calls (`compile_count`)
        functools.update_wrapper(self, fun)
        _programs[name or fun.__name__] = self

    def lower(self, *args, **static):
        """The plain jitted function's `jax.stages.Lowered` (compile it with
        ``.compile(compile_options(problem))`` for the options a call would use)."""
        return self.jitted.lower(*args, **static)

    def __call__(self, *args, **static):
        leaves, tree = jax.tree_util.tree_flatten(args)
        if _bypass(leaves):
            return self.jitted(*args, **static)
        avals = tuple(map(_aval, leaves))
        options = compile_options(args[0])
        key = (self.__qualname__, tuple(sorted(static.items())), tree, avals,
               tuple(sorted(options.items())))
        compiled = self._get(key, args, static, options)
        return compiled(*args)

    def _cache_size(self) -> int:
        """Distinct programs this process compiled or loaded (what the tests count)."""
        return len(self._keys)

    def _get(self, key, args, static, options):
        with _lock:
            if key in _loaded:
                _loaded.move_to_end(key)
                return _loaded[key][0]
        before = _mappings()
        path = _entry_path(key)
        compiled = _read(path, key[2]) if path is not None else None
        if compiled is None:
            compiled = self._compile(args, static, options, path, key[2])
        counted = before is not None
        cost = max(_mappings() - before, 1) if counted else 1
        with _lock:
            self._keys.add(key)
            _loaded[key] = (compiled, cost)
            _evict(MAX_LOADED_MAPPINGS if counted else MAX_LOADED)
        return compiled

    def _compile(self, args, static, options, path, tree):
        self._compiles += 1
        hits = _jax_cache_hits[0]
        lowered = self.jitted.lower(*args, **static)
        try:
            compiled = lowered.compile(options)
        except Exception:  # (an option this XLA does not know; a real error raises again)
            if not options:
                raise
            _refused.update(options)
            compiled = lowered.compile()
        # JAX would keep its own reference to the executable (its tracing and
        # compilation caches): drop it, so that `_evict` frees what it drops.
        self.jitted.clear_cache()
        # An executable JAX loaded from its own persistent cache is not stored again
        # (module docstring: "Function ... not found" when the copy ran).
        if path is not None and _jax_cache_hits[0] == hits:
            _write(path, compiled, tree)
        return compiled


def _count_jax_cache_hits(event, **_):
    if event == "/jax/compilation_cache/cache_hits":
        _jax_cache_hits[0] += 1


_jax_cache_hits = [0]
jax.monitoring.register_event_listener(_count_jax_cache_hits)


def _evict(budget):
    """Drop the least recently used programs while their costs (mappings, or 1 each where
    they are not counted) pass ``budget``; never the newest."""
    while len(_loaded) > 1 and sum(cost for _, cost in _loaded.values()) > budget:
        _loaded.popitem(last=False)


def _entry_path(key) -> Path | None:
    """The cache file of ``key``, or None (cache off)."""
    directory = cache_dir()
    if directory is None:
        return None
    name, static, tree, avals, options = key
    text = repr((_environment(), name, static, str(tree), avals, options))
    return directory / (hashlib.sha256(text.encode()).hexdigest() + _SUFFIX)


@functools.cache
def _kernels_ready() -> bool:
    """Whether the LAPACK kernels that programs call (``jnp.linalg.solve``) are set up.
    JAX sets them up when it first lowers such an operation, so a process that only
    loads programs must do it itself, as `jax.export` does (a private function: where
    it is missing, nothing is loaded, rather than a program that would crash)."""
    try:
        from jax._src.lax.linalg import initialize_lapack

        initialize_lapack()
    except Exception:
        return False
    return True


def _read(path: Path, tree):
    """The program stored at ``path`` for arguments of structure ``tree``, or None (no
    entry; an unreadable one is deleted)."""
    from jax.experimental.serialize_executable import deserialize_and_load

    if not _kernels_ready():
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        entry = pickle.loads(data)
        if entry["format"] != _FORMAT or entry["args_tree"] != tree:
            raise ValueError("another program under this key")
        compiled = deserialize_and_load(entry["executable"], entry["in_tree"],
                                        entry["out_tree"])
    except Exception:  # truncated, corrupt, another JAX: compile again
        path.unlink(missing_ok=True)
        return None
    try:
        os.utime(path)  # recently used: evicted last
    except OSError:
        pass
    return compiled


def _write(path: Path, compiled, tree) -> None:
    """Store ``compiled``, for arguments of structure ``tree``, at ``path`` (atomically),
    then keep the directory in bounds."""
    global _warned_write
    from jax.experimental.serialize_executable import serialize

    try:
        executable, in_tree, out_tree = serialize(compiled)
        data = pickle.dumps({"format": _FORMAT, "executable": executable,
                             "in_tree": in_tree, "out_tree": out_tree,
                             "args_tree": tree})
    except Exception:  # a program JAX cannot serialize: it is simply not stored
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".tmp",
                                         delete=False) as f:
            f.write(data)
        os.replace(f.name, path)
    except OSError as error:
        if not _warned_write:
            _warned_write = True
            warnings.warn(f"nsjax could not write its program cache in {path.parent} "
                          f"({error}); programs will be compiled in every process. Set "
                          "NSJAX_CACHE_DIR to a writable directory, or to 'off'.",
                          RuntimeWarning, stacklevel=4)
        return
    _trim(path)


def _trim(newest: Path) -> None:
    """Delete the least recently used entries (and stale temporary files) beyond
    `CACHE_MAX_BYTES` from ``newest``'s directory, never ``newest`` itself."""
    directory = newest.parent
    entries, total, now = [], 0, time.time()
    for entry in os.scandir(directory):
        try:
            info = entry.stat()
        except OSError:
            continue
        if entry.name.endswith(".tmp"):
            if now - info.st_mtime > 3600:  # left by a process that died mid-write
                Path(entry.path).unlink(missing_ok=True)
            continue
        if entry.name.endswith(_SUFFIX):
            total += info.st_size
            if entry.path != str(newest):
                entries.append((info.st_mtime, info.st_size, entry.path))
    for _, size, name in sorted(entries):
        if total <= CACHE_MAX_BYTES:
            break
        Path(name).unlink(missing_ok=True)
        total -= size


def program(static_argnames, name=None):
    """Decorator: `Program` with these static arguments (and ``name``, for
    `compiled_programs`; default the function's)."""
    return lambda fun: Program(fun, static_argnames, name)


__all__ = ["Program", "cache_dir", "compile_count", "compile_options", "compiled_programs",
           "drop_loaded", "is_small", "loaded_count", "program", "reset_cache_dir",
           "set_cache_dir"]

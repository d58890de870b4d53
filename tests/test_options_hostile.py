"""Hostile solver options (issue 52): every option of every solver and part that
`nsjax.solvers` exports is checked when it is made, before anything is compiled, with a
message naming the solver and the option as the user spells them; equal options give equal,
hash-equal solvers; and the buffers that grow with an option are checked against the memory
of the machine by ``check(problem)`` before `nsjax.solve` compiles anything.

Only one case compiles a program (the shared-program check, on an 8 x 3 problem).
"""

import dataclasses
import math
import os
import re
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import nsjax
from nsjax.programs import compiled_programs
from nsjax.solvers import MAX_COUNT, OptionTypeError
from nsjax.testing import machine_memory

S = nsjax.solvers
NAN, INF = float("nan"), float("inf")

_rng = np.random.default_rng(0)
X = _rng.normal(size=(8, 3))
Y = np.array([0, 1] * 4)
HINGE = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1), X, Y)
L1_LOGISTIC = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L1(0.1), X, Y)
WIDE = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1),
                     _rng.normal(size=(8, 30)), Y)


def _compiled():
    return compiled_programs()


#: Every exported class with options: solvers and their parts (not `Takes`, a solver's
#: declaration of what it takes, written by the solver's author, not a user's option).
CLASSES = [getattr(S, name) for name in S.__all__
           if isinstance(getattr(S, name), type) and dataclasses.is_dataclass(getattr(S, name))
           and dataclasses.fields(getattr(S, name)) and getattr(S, name) is not S.Takes]


def _kind(field) -> str:
    """int, float, bool, str (a choice) or object, from the field's annotation."""
    first = str(field.type).split("|")[0].strip()
    return first if first in ("int", "float", "bool", "str") else "object"


#: Bad values of each kind of option: (value, the exception, what is wrong).
BAD = {
    "int": [(True, TypeError, "bool"), (2.5, TypeError, "float"), ("1", TypeError, "str"),
            (np.array([1]), TypeError, "array"), (None, TypeError, "None"),
            (10**20, ValueError, "too large"), (-(10**20), ValueError, "too small")],
    "float": [("1", TypeError, "str"), (True, TypeError, "bool"), (1 + 0j, TypeError, "complex"),
              (np.ones(2), TypeError, "array"), (NAN, ValueError, "nan"),
              (INF, ValueError, "inf"), (-INF, ValueError, "-inf"),
              (10**400, ValueError, "huge int")],
    "bool": [("yes", TypeError, "str"), (1, TypeError, "int"), (None, TypeError, "None"),
             (np.array([True]), TypeError, "array")],
    "str": [("nonsense", ValueError, "unknown"), (3, TypeError, "int"),
            (None, TypeError, "None")],
    "object": [("x", TypeError, "str"), (3, TypeError, "int")],
}


def _bad_cases():
    for cls in CLASSES:
        for field in dataclasses.fields(cls):
            for value, error, what in BAD[_kind(field)]:
                yield pytest.param(cls, field.name, value, error,
                                   id=f"{cls.__name__}-{field.name}-{what}")


def _make(cls, **options):
    return cls(**options)


@pytest.mark.parametrize(("cls", "name", "value", "error"), list(_bad_cases()))
def test_every_option_refuses_each_kind_of_bad_value(cls, name, value, error):
    """Every option of every exported solver and part: a wrong type is a TypeError (also a
    ValueError, as before), a value out of range a ValueError; the message names the
    class and the option, never an operator's TypeError ('>' not supported)."""
    before = _compiled()
    with pytest.raises(error) as raised:
        _make(cls, **{name: value})
    message = str(raised.value)
    assert message.startswith(f"{cls.__name__}: {name} must be "), message
    assert "not supported" not in message
    assert isinstance(raised.value, ValueError)  # what callers caught before
    assert (error is TypeError) == isinstance(raised.value, OptionTypeError)
    assert _compiled() == before


def test_every_exported_class_is_covered():
    names = {cls.__name__ for cls in CLASSES}
    assert names >= {"AGMEF", "AGMEF1", "BMRM", "ExactLineSearch", "Hybrid", "LBFGSMemory",
                     "OBA", "OWLQN", "OWLQNStar", "Pragam", "SubBFGS", "SubLBFGS",
                     "WolfeLineSearch"}
    kinds = {_kind(f) for cls in CLASSES for f in dataclasses.fields(cls)}
    assert kinds == set(BAD)


#: The hostile review's cases and other ranges, with the message each must give.
REFUSED = [
    (lambda: S.SubLBFGS(stall_tol=NAN), ValueError,
     r"^SubLBFGS: stall_tol must be a finite number >= 0 \(e\.g\. stall_tol=1e-12\); got nan"),
    (lambda: S.SubLBFGS(k_max=2.5), TypeError, r"^SubLBFGS: k_max must be an int >= 1"),
    (lambda: S.SubLBFGS(certify="no"), TypeError, r"^SubLBFGS: certify must be True or False"),
    (lambda: S.SubLBFGS(eps=INF), ValueError, r"^SubLBFGS: eps must be a finite number > 0"),
    (lambda: S.SubLBFGS(stall_tol=NAN, k_max=2.5, certify="no", eps=INF), ValueError,
     r"^SubLBFGS: eps must be"),
    (lambda: S.SubLBFGS(eps="1e-5"), TypeError, r"got '1e-5' \(str\)"),
    (lambda: S.SubLBFGS(memory=0), ValueError,
     r"^SubLBFGS: memory must be an int >= 1 .* or a memory object"),
    (lambda: S.SubLBFGS(line_search="exakt"), ValueError,
     r"^SubLBFGS: line_search must be one of 'auto', 'exact', 'wolfe' or an ExactLineSearch "
     r"or WolfeLineSearch object .*Did you mean 'exact'\?"),
    (lambda: S.SubLBFGS(c1=0.95), ValueError, r"^SubLBFGS: need 0 < c1 < c2 < 1"),
    (lambda: S.SubLBFGS(k_max=MAX_COUNT + 1), ValueError, r"k_max must be an int >= 1 and "
                                                          r"<= 2147483647"),
    (lambda: S.SubBFGS(memory=10), ValueError, r"^SubBFGS: memory must be DenseBFGSMemory"),
    (lambda: S.LBFGSMemory(5, scaling="no"), TypeError,
     r"^LBFGSMemory: scaling must be True or False"),
    (lambda: S.LBFGSMemory(5.0), TypeError, r"^LBFGSMemory: m must be an int"),
    (lambda: S.LBFGSMemory(5, form="three-loop"), ValueError,
     r"^LBFGSMemory: form must be one of 'auto', 'two-loop', 'compact'"),
    (lambda: S.WolfeLineSearch(max_evals=0), ValueError,
     r"^WolfeLineSearch: max_evals must be an int >= 1"),
    (lambda: S.WolfeLineSearch(0.5, 0.1), ValueError, r"^WolfeLineSearch: need 0 < c1 < c2"),
    (lambda: S.ExactLineSearch("heap"), ValueError,
     r"^ExactLineSearch: bracket must be one of 'auto', 'sort', 'bisect', 'multisect'"),
    (lambda: S.OWLQN(random_subgradient="yes"), TypeError,
     r"^OWLQN: random_subgradient must be True or False"),
    (lambda: S.OWLQN(seed=2**64), ValueError, r"^OWLQN: seed must be an int"),
    (lambda: S.OWLQNStar(k_max=0), ValueError, r"^OWLQNStar: k_max must be an int >= 1"),
    (lambda: S.BMRM(capacity=1), ValueError, r"^BMRM: capacity must be an int >= 2"),
    (lambda: S.BMRM(merge=0), ValueError, r"^BMRM: merge must be a share in \(0, 1\]"),
    (lambda: S.BMRM(proximity=1.0), ValueError, r"^BMRM: proximity > 0 needs line_search"),
    (lambda: S.Hybrid(horizon=0.0), ValueError, r"^Hybrid: horizon must be > 0"),
    (lambda: S.Hybrid(window=10**8), ValueError, r"^Hybrid: window must be an int >= 1 and "
                                                 r"<= 10000000"),
    (lambda: S.Hybrid(sublbfgs=S.BMRM()), TypeError, r"^Hybrid: sublbfgs must be a SubLBFGS"),
    (lambda: S.OBA(lipschitz_safety=0.5), ValueError,
     r"^OBA: lipschitz_safety must be a finite number >= 1"),
    (lambda: S.AGMEF(scheme="decreasing"), ValueError, r"^AGMEF: scheme must be one of "
                                                       r"'dual', 'primal'.*Pragam"),
    (lambda: S.AGMEF1(gamma_d=1.0), ValueError, r"^AGMEF1: gamma_d must be a finite number "
                                                r"in \(1, 1000000\)"),
    (lambda: S.Pragam(spectral_norm_sq=jnp.asarray(4.0)), TypeError,
     r"^Pragam: spectral_norm_sq must be .*got an array of shape \(\)"),
]


@pytest.mark.parametrize(("build", "error", "match"), REFUSED)
def test_hostile_review_cases(build, error, match):
    with pytest.raises(error, match=match):
        build()


# -- equal options, equal solvers ------------------------------------------------------------

def _same_in_numpy(value):
    """The default written as a numpy scalar (or a Python int for a float)."""
    if isinstance(value, bool):
        return np.bool_(value)
    if isinstance(value, int):
        return np.int64(value)
    if isinstance(value, float):
        return int(value) if value.is_integer() else np.float64(value)
    if isinstance(value, str):
        return np.str_(value)
    return None


def _numpy_cases():
    for cls in CLASSES:
        for field in dataclasses.fields(cls):
            same = _same_in_numpy(field.default)
            if same is not None:
                yield pytest.param(cls, field.name, same, id=f"{cls.__name__}-{field.name}")


@pytest.mark.parametrize(("cls", "name", "value"), list(_numpy_cases()))
def test_equal_options_give_hash_equal_solvers(cls, name, value):
    """An option given as a numpy scalar (or an int for a float) is stored as the plain
    Python value: the solver equals, and hashes as, the default one (a jit static argument
    that shares its compiled program)."""
    made, default = cls(**{name: value}), cls()
    assert made == default and hash(made) == hash(default)
    stored = getattr(made, name)
    assert type(stored) is type(getattr(default, name)), (type(stored), name)


def test_equal_solvers_share_one_compiled_program():
    solver = S.BMRM(capacity=np.int64(4), qp_iterations=np.int32(2), merge=np.float64(0.5))
    first = nsjax.solve(HINGE, solver, max_steps=2)
    before = compiled_programs("solve")
    again = nsjax.solve(HINGE, S.BMRM(capacity=4, qp_iterations=2, merge=0.5), max_steps=2)
    assert compiled_programs("solve") == before
    assert float(again.value) == float(first.value)


# -- sizes against the memory of the machine -------------------------------------------------

SIZE_REFUSED = [
    (S.SubLBFGS(memory=10**9), HINGE, r"^SubLBFGS: memory=1000000000 needs 2 x 1000000000 x 3 "),
    (S.SubLBFGS(memory=S.LBFGSMemory(10**9)), HINGE,
     r"^SubLBFGS\(memory=LBFGSMemory\(\.\.\.\)\): m=1000000000 needs"),
    (S.BMRM(capacity=10**6), HINGE, r"^BMRM: capacity=1000000 needs 1000000 x 3 float64 "),
    (S.BMRM(capacity=10**6), WIDE, r"^BMRM: capacity=1000000 needs 1000000 x 30 float64 "),
    (S.Hybrid(bmrm=S.BMRM(line_search="exact", capacity=10**6)), HINGE,
     r"^Hybrid\(bmrm=BMRM\(\.\.\.\)\): capacity=1000000 needs"),
    (S.Hybrid(sublbfgs=S.SubLBFGS(memory=10**9)), HINGE,
     r"^Hybrid\(sublbfgs=SubLBFGS\(\.\.\.\)\): memory=1000000000 needs"),
    (S.OWLQN(memory=10**9), L1_LOGISTIC, r"^OWLQN: memory=1000000000 needs"),
    (S.OWLQNStar(memory=10**9), L1_LOGISTIC, r"^OWLQNStar: memory=1000000000 needs"),
]


@pytest.mark.parametrize(("solver", "prob", "match"), SIZE_REFUSED)
def test_sizes_are_refused_before_compiling(solver, prob, match):
    """The real machine's memory: 10⁹ pairs or 10⁶ cuts (480 GB, 40 TB) fit nowhere."""
    before, start = _compiled(), time.perf_counter()
    with pytest.raises(ValueError, match=match) as raised:
        nsjax.solve(prob, solver)
    assert time.perf_counter() - start < 1.0
    assert _compiled() == before
    message = str(raised.value)
    assert re.search(r"\([\d.e+]+ [kMGTPE]?B\); this machine has [\d.]+ [kMGTPE]?B", message)
    assert re.search(r": use (memory|m|capacity) <= \d+\.$", message), message


def _largest(message):
    return int(re.search(r"<= (\d+)\.$", message).group(1))


@pytest.mark.parametrize(("make", "option", "prob"), [
    (lambda v: S.SubLBFGS(memory=v), "memory", HINGE),
    (lambda v: S.BMRM(capacity=v), "capacity", HINGE),
    (lambda v: S.Hybrid(bmrm=S.BMRM(line_search="exact", capacity=v)), "capacity", HINGE),
    (lambda v: S.OWLQN(memory=v), "memory", L1_LOGISTIC),
], ids=["SubLBFGS", "BMRM", "Hybrid", "OWLQN"])
def test_the_largest_size_named_fits_and_one_more_does_not(make, option, prob):
    with machine_memory(10**6):  # a 1 MB machine
        with pytest.raises(ValueError, match=rf": use {option} <= \d+\.$") as raised:
            make(10**5).check(prob)
        largest = _largest(str(raised.value))
        assert 2 <= largest < 10**5
        make(largest).check(prob)  # fits
        with pytest.raises(ValueError, match=f"{option}={largest + 1} needs"):
            make(largest + 1).check(prob)


def test_sizes_that_fit_are_accepted():
    for solver in (S.SubLBFGS(), S.SubLBFGS(memory=1000), S.BMRM(capacity=1024), S.Hybrid(),
                   S.SubBFGS()):
        solver.check(HINGE)
    S.OWLQN(memory=1000).check(L1_LOGISTIC)


def test_formula_counts_what_the_buffers_hold():
    """2·m·D + 2·m² + m numbers for L-BFGS, c·D + 5·c² + 8·c for a bundle, 3·d² dense."""
    m, c, D = 7, 5, 3
    assert S.LBFGSMemory(m).nbytes(HINGE) == 8 * (2 * m * D + 2 * m * m + m)
    assert S.BMRM(capacity=c).nbytes(HINGE) == 8 * (c * D + 5 * c * c + 8 * c)
    assert S.DenseBFGSMemory().nbytes(HINGE) == 8 * 3 * D * D
    state = S.LBFGSMemory(m).init(HINGE.zeros())
    held = sum(a.nbytes for a in jax.tree_util.tree_leaves(state) if a.ndim)
    assert held == S.LBFGSMemory(m).nbytes(HINGE)


def test_dense_matrix_too_large_points_to_sublbfgs():
    with machine_memory(100), pytest.raises(
            ValueError, match=r"^SubBFGS: memory=DenseBFGSMemory\(\) needs 3 x 3\^2 "
                              r".*use SubLBFGS"):
        S.SubBFGS().check(HINGE)


def test_hybrid_counts_both_phases():
    """A bundle that fits alone is refused next to a subLBFGS memory that takes the rest."""
    bmrm = S.BMRM(line_search="exact", capacity=16)
    sub = S.SubLBFGS(memory=200)
    with machine_memory(bmrm.nbytes(HINGE) + sub.quasi_newton_memory().nbytes(HINGE) - 1):
        bmrm.check(HINGE)
        sub.check(HINGE)
        with pytest.raises(ValueError, match=r"of which .* go to the subLBFGS phase's memory: "
                                             r"use capacity <= 15\.$"):
            S.Hybrid(sublbfgs=sub, bmrm=bmrm).check(HINGE)


def test_vmapped_lanes_count_one_state_each():
    """A memory that fits once is refused for a vmapped sweep or a batch of 8 lanes, and
    accepted for the warm-started sweep (a scan: one state at a time)."""
    sub = S.SubLBFGS(memory=100)
    with machine_memory(4 * sub.quasi_newton_memory().nbytes(HINGE)):
        sub.check(HINGE)
        before = _compiled()
        lams = np.geomspace(1.0, 1e-3, 8)
        with pytest.raises(ValueError, match=r"in each of 8 lanes .*: use memory <= \d+\.$"):
            nsjax.sweep(HINGE, lams, sub, warm_start=False)
        with pytest.raises(ValueError, match=r"in each of 8 lanes"):
            nsjax.solve_batch([HINGE] * 8, sub)
        assert _compiled() == before
        S.check(sub, HINGE, lanes=1)  # the warm-started sweep's count


def test_device_memory_is_used_where_the_device_reports_it(monkeypatch):
    class Device:
        platform = "gpu"

        def memory_stats(self):
            return {"bytes_limit": 12345, "bytes_in_use": 0}

    monkeypatch.setattr(jax, "devices", lambda *a: [Device()])
    assert S.memory_available() == (12345, "of GPU memory")
    with pytest.raises(ValueError, match=r"this machine has 12.3 kB of GPU memory"):
        S.BMRM(capacity=1000).check(HINGE)


def test_host_memory_otherwise():
    size, where = S.memory_available()
    if jax.devices()[0].platform == "cpu":
        host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        assert (size, where) == (host, "of memory")
    assert math.isfinite(size) and size > 2**20


def test_at_least_35_cases():
    assert len(list(_bad_cases())) + len(REFUSED) + len(SIZE_REFUSED) >= 35

"""Which solver takes which problem, in one place: the solvers' names (`SOLVERS`, for
scikit-learn's ``solver=`` and the command line's ``--solver``), the default solver of a
problem (`default_solver`), and the check that refuses, before compiling, a problem a
solver cannot solve (`check`), naming the solvers that can.

What a solver takes is declared once, on its class: its ``takes``
(`nsjax.solvers.capabilities.Takes`); its own ``check(problem)`` refuses the rest (options
against the problem, buffers against the machine's memory).
"""

from __future__ import annotations

import dataclasses

from nsjax.solvers._options import lanes as copies
from nsjax.solvers.agm_ef import AGMEF
from nsjax.solvers.agm_ef1 import AGMEF1
from nsjax.solvers.base import Solver
from nsjax.solvers.bmrm import BMRM
from nsjax.solvers.dual_cd import DualCD
from nsjax.solvers.hybrid import Hybrid
from nsjax.solvers.ls_bmrm import LineSearchBMRM
from nsjax.solvers.oba import OBA
from nsjax.solvers.owlqn import OWLQN
from nsjax.solvers.owlqn_star import OWLQNStar
from nsjax.solvers.pragam import Pragam
from nsjax.solvers.sublbfgs import SubBFGS, SubLBFGS

#: The names of the solvers (scikit-learn's ``solver=``, the command line's ``--solver``);
#: "auto" is `nsjax.solve`'s default for the problem. A new solver registers here.
SOLVERS = {"auto": None, "hybrid": Hybrid, "sublbfgs": SubLBFGS,
           "subbfgs": SubBFGS, "bmrm": BMRM, "ls-bmrm": LineSearchBMRM,
           "oba": OBA, "owlqn": OWLQN, "owlqn*": OWLQNStar,
           "agm-ef": AGMEF, "agm-ef1": AGMEF1, "pragam": Pragam, "dual-cd": DualCD}

def _text_like(problem) -> bool:
    """Sparse X with no more rows than columns: where dual coordinate descent needs a few
    epochs and the primal methods hundreds of passes (measured: the text sets of
    ``benchmarks/liblinear_race.py``; on sparse sets with more rows than columns the
    Hybrid is the faster, by far at small λ)."""
    n, d = problem.X.shape
    return problem.X.is_sparse and n <= d


#: The default solver of a problem: the first of these that takes it and for which the
#: condition holds, else the last. `DualCD` (LIBLINEAR's method, certified) for the binary
#: hinge with L2 on text-like data (`_text_like`); the `Hybrid` (subLBFGS, then the
#: exact-line-search BMRM; it ends with a closed certified gap) where its bundle phase
#: applies; `OBA` for a smooth loss with an L1 part; `SubLBFGS` for the rest of R^d;
#: `AGMEF(scheme="primal")` for a regularizer in the entropy geometry or a constraint.
DEFAULTS = ((DualCD(), _text_like),
            (Hybrid(), lambda problem: True),
            (OBA(), lambda problem: problem.coefficient_reg.has_l1),
            (SubLBFGS(), lambda problem: True),
            (AGMEF(scheme="primal"), lambda problem: True))


def solver_from_name(solver):
    """An nsjax solver instance for a name in `SOLVERS` (or an instance, as is), or None
    for "auto" or None (`nsjax.solve`'s default)."""
    if solver is None or isinstance(solver, Solver):
        return solver
    if isinstance(solver, str) and solver.lower() in SOLVERS:
        cls = SOLVERS[solver.lower()]
        return None if cls is None else cls()
    raise ValueError(f"solver must be one of {sorted(SOLVERS)} or an nsjax solver instance "
                     f"(e.g. nsjax.solvers.BMRM()); got {solver!r}.")


def default_solver(problem) -> Solver:
    """What `solve`, `sweep` and `solve_batch` use when no solver is given (`DEFAULTS`)."""
    for solver, where in DEFAULTS:
        if solver.takes.refusal(problem) is None and where(problem):
            return solver
    return DEFAULTS[-1][0]


def _label(solver) -> str:
    """How a message names a solver: its class, with the options that differ from the
    defaults (e.g. ``AGMEF(scheme='primal')``)."""
    default = type(solver)()
    changed = ", ".join(f"{f.name}={getattr(solver, f.name)!r}"
                        for f in dataclasses.fields(solver)
                        if getattr(solver, f.name) != getattr(default, f.name))
    return f"{type(solver).__name__}({changed})"


def _takers(problem) -> str:
    """The registered solvers (each of `Solver.variants`) that take ``problem``."""
    solvers = (v for cls in dict.fromkeys(SOLVERS.values()) if cls is not None
               for v in cls.variants())
    return ", ".join(_label(s) for s in solvers if s.takes.refusal(problem) is None)


def check(solver, problem, lanes=1):
    """Refuse, before compiling, a problem the solver cannot solve: what its ``takes``
    does not take (naming the solvers that do), then its own ``check`` (with its buffers
    counted ``lanes`` times: a vmapped program's states)."""
    refusal = solver.takes.refusal(problem)
    if refusal is not None:
        takers = _takers(problem)
        instead = (f"use one of {takers}" if takers
                   else "no nsjax solver takes this problem as it is")
        raise ValueError(f"{type(solver).__name__} {refusal}; {instead}.")
    with copies(lanes):
        solver.check(problem)


def as_solver(solver, problem):
    """``solver`` checked to be an nsjax solver instance, or `default_solver` for None."""
    if solver is None:
        return default_solver(problem)
    if isinstance(solver, type):
        what = ("an nsjax solver" if issubclass(solver, Solver) else "not an nsjax solver")
        raise TypeError(f"solver must be an instance: pass {solver.__name__}(), not the class "
                        f"{solver.__name__} ({what}).")
    if not isinstance(solver, Solver):
        raise TypeError(
            f"solver must be an nsjax solver (a subclass of nsjax.solvers.Solver, e.g. "
            f"SubLBFGS()); got {solver!r}."
        )
    if not (dataclasses.is_dataclass(solver) and solver.__dataclass_params__.frozen):
        raise TypeError(
            f"{type(solver).__name__} must be a frozen dataclass (decorate it with "
            "nsjax.solvers.solver_options): solvers are compared by their options, so that "
            "equal solvers share one compiled program.")
    return solver

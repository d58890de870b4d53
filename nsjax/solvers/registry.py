"""Which solver takes which problem, in one place: the solvers' names (`SOLVERS`, for
scikit-learn's ``solver=`` and the command line's ``--solver``), the default solver of a
problem (`default_solver`), and the check that refuses, before compiling, a problem a
solver cannot solve (`check`), naming the solvers that can.

What a solver takes is declared once, on its class: `Solver.supports_bias`,
`Solver.supports_sample_weight`, `Solver.geometries`, `Solver.takes_constraints`, and its
own ``check(problem)`` for the rest (losses, regularizers, options against the problem).
"""

from __future__ import annotations

import dataclasses

from nsjax.problem import is_traced
from nsjax.solvers._options import lanes as copies
from nsjax.solvers.agm_ef import AGMEF
from nsjax.solvers.base import Solver
from nsjax.solvers.bmrm import BMRM
from nsjax.solvers.hybrid import Hybrid
from nsjax.solvers.ls_bmrm import LineSearchBMRM
from nsjax.solvers.oba import OBA
from nsjax.solvers.owlqn import OWLQN
from nsjax.solvers.owlqn_star import OWLQNStar
from nsjax.solvers.pragam import Pragam
from nsjax.solvers.sublbfgs import SubBFGS, SubLBFGS

#: The names of the solvers (scikit-learn's ``solver=``, the command line's ``--solver``);
#: "auto" is `nsjax.solve`'s default for the problem.
SOLVERS = {"auto": None, "hybrid": Hybrid, "sublbfgs": SubLBFGS,
           "subbfgs": SubBFGS, "bmrm": BMRM, "ls-bmrm": LineSearchBMRM,
           "oba": OBA, "owlqn": OWLQN, "owlqn*": OWLQNStar,
           "agm-ef": AGMEF, "pragam": Pragam}


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
    """What `solve`, `sweep` and `solve_batch` use when no solver is given: the
    `Hybrid` (subLBFGS, then the exact-line-search BMRM; it ends with a closed certified
    gap) where its bundle phase applies (the L2 regularizer and λ > 0, or λ traced);
    `OBA` for a smooth loss with an L1 part (L1, ElasticNet); `AGMEF(scheme="primal")`
    for a regularizer in the entropy geometry (`Entropy`) or a constraint
    (`ElasticNetBall`); else `SubLBFGS`. With a bias: the `Hybrid` where the loss gives its
    lines (the hinge), else `SubLBFGS`."""
    lam = problem.lam
    reg = problem.coefficient_reg
    if getattr(reg, "geometry", "euclidean") == "entropy" or getattr(reg, "constraint", False):
        return AGMEF(scheme="primal")
    # With a bias the bundle phase needs the exact best b (a loss with lines); the L1
    # methods do not take a bias.
    if (reg.quadratic and (is_traced(lam) or float(lam) > 0)
            and (problem.has_lines or not problem.bias)):
        return Hybrid()
    if problem.smooth_loss and reg.has_l1 and not problem.bias:
        return OBA()
    return SubLBFGS()


def _solvers_where(has):
    """The names of the nsjax solvers whose class satisfies ``has`` (for error messages)."""
    from nsjax import solvers

    found = (getattr(solvers, name) for name in solvers.__all__)
    return ", ".join(sorted(cls.__name__ for cls in found if isinstance(cls, type)
                            and issubclass(cls, Solver) and cls is not Solver and has(cls)))


def check(solver, problem, lanes=1):
    """Refuse, before compiling, a problem the solver cannot solve: its own ``check`` (with
    its buffers counted ``lanes`` times: a vmapped program's states), and a bias, sample
    weights, a prox geometry or a constraint the solver does not take (naming those that
    do)."""
    name = type(solver).__name__
    if problem.bias and not solver.supports_bias:
        able = _solvers_where(lambda cls: getattr(cls, "supports_bias", False))
        raise ValueError(
            f"{name} does not support an unregularized bias (bias=True); "
            f"use one of {able}, or add a constant column to X instead.")
    if problem.weighted and not solver.supports_sample_weight:
        able = _solvers_where(lambda cls: getattr(cls, "supports_sample_weight", False))
        raise ValueError(f"{name} does not take sample weights (sample_weight=...); use one "
                         f"of {able}.")
    reg = problem.coefficient_reg
    geometry = getattr(problem.reg, "geometry", "euclidean")
    if geometry not in solver.geometries:
        able = _solvers_where(lambda cls: geometry in getattr(cls, "geometries", ()))
        raise ValueError(
            f"{name} cannot solve with {type(reg).__name__}, whose prox is in the {geometry} "
            f"geometry (its domain is not all of R^d); use one of {able}.")
    if getattr(reg, "constraint", False) and not solver.takes_constraints:
        able = _solvers_where(lambda cls: getattr(cls, "takes_constraints", False))
        raise ValueError(
            f"{name} cannot solve with {type(reg).__name__}, a constraint (the indicator of "
            f"a set, used through its projection); use one of {able} with scheme='primal'.")
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

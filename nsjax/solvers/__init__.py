"""Solvers: one algorithm per file, each a `Solver` with init / step (see `nsjax.loop`),
and the parts they are built from (line searches, quasi-Newton memories)."""

from nsjax.solvers._options import (
    MAX_COUNT,
    Options,
    OptionTypeError,
    check_fits,
    memory_available,
    solver_options,
    weights_of,
)
from nsjax.solvers.agm_ef import AGMEF
from nsjax.solvers.agm_ef1 import AGMEF1
from nsjax.solvers.base import Best, Core, Solver
from nsjax.solvers.bmrm import BMRM
from nsjax.solvers.capabilities import Takes
from nsjax.solvers.dual_cd import DualCD
from nsjax.solvers.hybrid import Hybrid
from nsjax.solvers.line_search import ExactLineSearch, WolfeLineSearch
from nsjax.solvers.ls_bmrm import LineSearchBMRM
from nsjax.solvers.memory import DenseBFGSMemory, LBFGSMemory
from nsjax.solvers.oba import OBA
from nsjax.solvers.owlqn import OWLQN
from nsjax.solvers.owlqn_star import OWLQNStar
from nsjax.solvers.pragam import Pragam
from nsjax.solvers.registry import SOLVERS, as_solver, check, default_solver, solver_from_name
from nsjax.solvers.sublbfgs import SubBFGS, SubLBFGS

__all__ = [
    "AGMEF", "AGMEF1", "BMRM", "MAX_COUNT", "SOLVERS", "Best", "Core", "DenseBFGSMemory", "DualCD",
    "ExactLineSearch", "Hybrid", "LBFGSMemory", "LineSearchBMRM", "OBA", "OWLQN", "OWLQNStar",
    "OptionTypeError", "Options", "Pragam", "Solver", "SubBFGS", "SubLBFGS", "Takes",
    "WolfeLineSearch",
    "as_solver", "check", "check_fits", "default_solver", "memory_available",
    "solver_from_name", "solver_options", "weights_of",
]

"""Solvers: one algorithm per file, each a `Solver` with init / step (see `nsjax.loop`),
and the parts they are built from (line searches, quasi-Newton memories)."""

from nsjax.solvers._options import solver_options
from nsjax.solvers.agm_ef import AGMEF
from nsjax.solvers.agm_ef1 import AGMEF1
from nsjax.solvers.base import Best, Core, Solver
from nsjax.solvers.bmrm import BMRM
from nsjax.solvers.hybrid import Hybrid
from nsjax.solvers.line_search import ExactLineSearch, WolfeLineSearch
from nsjax.solvers.ls_bmrm import LineSearchBMRM
from nsjax.solvers.memory import DenseBFGSMemory, LBFGSMemory
from nsjax.solvers.oba import OBA
from nsjax.solvers.owlqn import OWLQN
from nsjax.solvers.owlqn_star import OWLQNStar
from nsjax.solvers.pragam import Pragam
from nsjax.solvers.sublbfgs import SubBFGS, SubLBFGS

__all__ = [
    "AGMEF", "AGMEF1", "BMRM", "SOLVERS", "Best", "Core", "DenseBFGSMemory", "ExactLineSearch",
    "Hybrid", "LBFGSMemory", "LineSearchBMRM", "OBA", "OWLQN", "OWLQNStar", "Pragam", "Solver",
    "SubBFGS", "SubLBFGS", "WolfeLineSearch", "solver_from_name", "solver_options",
]

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


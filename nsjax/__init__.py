"""nsjax: JAX solvers for regularized risk minimization with nonsmooth convex objectives.

    import nsjax
    prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-4), X, y)
    sol = nsjax.solve(prob, tol=1e-6)   # the default solver, nsjax.solvers.Hybrid()
    sols = nsjax.sweep(prob, [1e-2, 1e-3, 1e-4])
"""

from nsjax import chains, datasets, implicit, losses, projections, regularizers, solvers
from nsjax.data import DesignMatrix
from nsjax.loop import solve, solve_batch, sweep
from nsjax.problem import Problem
from nsjax.results import RESULTS, ConvergenceWarning, History, Solution

__all__ = [
    "RESULTS", "ConvergenceWarning", "DesignMatrix", "History", "Problem", "Solution",
    "chains", "datasets", "implicit", "losses", "projections", "regularizers", "solve",
    "solve_batch", "solvers", "sweep",
]
__version__ = "0.1.0"

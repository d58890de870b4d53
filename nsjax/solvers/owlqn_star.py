"""OWL-QN*: OWL-QN with the direction finding of subLBFGS (Yu et al. 2010, Sec. 7.3).

Yu et al. (2010) plug their Algorithm 2 (`nsjax.solvers._direction.find_direction`) into OWL-QN in
place of the aligned quasi-Newton step: p = descentDirection(g, ε, k_max), with the L1
oracle argsup_{g∈∂J(w)} gᵀp = ∇f + μ sign(w_i) off zero and μ sign(p_i) on the zero
coordinates (Sec. 7.3). Everything else is OWL-QN's (`nsjax.solvers.owlqn`): the L-BFGS
memory of the smooth part, the orthant ξ (chosen by the pseudo-gradient, also for the
random variant), the projected backtracking search, the certified gap. The projection
onto ξ only removes components that do not descend, so p stays a descent direction.

Algorithm 2 is self-correcting: started from a random subgradient (OWL-QN*r,
``random_subgradient=True``) it still finds a descent direction, where OWL-QN (OWL-QNr)
breaks down (Yu et al. 2010, Sec. 7.3 and Table 2).

References: see docs/references.md.
"""

from __future__ import annotations

import jax.numpy as jnp

from nsjax.regularizers import min_norm_subgradient, orthant
from nsjax.solvers._direction import find_direction
from nsjax.solvers._options import Options, solver_options
from nsjax.solvers.owlqn import OWLQN, OWLQNState


@solver_options
class OWLQNStar(OWLQN):
    """OWL-QN* (Yu et al. 2010, Sec. 7.3): OWL-QN whose direction comes from Algorithm 2.

    Args:
        eps: the direction-finding tolerance ε on the model gap (Alg. 2; Sec. 7: 1e-5), a
            finite number > 0.
        k_max: cap on direction-finding iterations per step, an int >= 1.
        memory, c1, max_halvings, stall_tol, random_subgradient, seed: as `OWLQN`
            (``random_subgradient=True`` is OWL-QN*r).

    Its certified gap closes slowly (near the optimum Alg. 2 often stops at k_max with an
    inexact direction): compare its J with a certified optimum rather than wait for tol.

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.digits_binary()
        >>> prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L1(1e-3), X, y)
        >>> best = nsjax.solve(prob, nsjax.solvers.OBA(), tol=1e-10)   # certified
        >>> sol = nsjax.solve(prob, nsjax.solvers.OWLQNStar(), max_steps=200)
        >>> bool(sol.value - best.value <= 1e-6 * best.value)
        True
    """

    eps: float = 1e-5
    k_max: int = 100

    def __post_init__(self):
        super().__post_init__()
        options = Options(self)
        options.real("eps", 0, low_open=True)
        options.int("k_max", low=1)

    def direction(self, problem, state: OWLQNState, g):
        """Algorithm 2 from g = g_reg + Xᵀu, with B the smooth part's L-BFGS memory."""
        w = state.core.w
        Xtu = state.grad - problem.reg.smooth_grad(w)
        d = find_direction(problem, self.quasi_newton_memory(), state.mem, w, state.S, g,
                           state.u, g - Xtu, self.eps, self.k_max)
        p, dS = jnp.where(d.ok, d.p, 0.0), jnp.where(d.ok, d.dS, 0.0)
        # OWL-QN's orthant: on the zero coordinates the side that the pseudo-gradient ◇
        # points to (none where |∂_i f| ≤ μ: those stay at 0). Taking sign(p_i) instead
        # lets Algorithm 2's inexact p (ε = 1e-5) wake up every zero coordinate by a
        # little, and the next step puts them back to sleep: the support oscillates
        # and the run fails.
        pseudo = min_norm_subgradient(w, state.grad, problem.mu)
        return p, dS, orthant(w, pseudo), d.iterations

"""Exact Euclidean projections: pure functions, jit- and vmap-able, on the device.

Each finds the root of a monotone piecewise-linear function of one multiplier exactly: the
kinks are located, g is known in closed form between neighbouring kinks, and the root is the
zero of the linear piece that holds it (no tolerance).

- `project_simplex`: the probability simplex (sort, cumsum, locate).
- `project_box_section`: a weighted projection onto a box cut by one hyperplane, the QP of
  Zhang et al. (2010), §5.5.1 (Alg. 7–8) and Saha et al. (2009), App. B; the piece is found
  by Newton steps on the kinks, with sorting as the fallback.
- `project_capped_simplex`: {x ∈ [0, cap]ⁿ, Σx = 1}, LPBoost's domain.
- `entropic_capped_simplex`: the same set in the entropy geometry (a Bregman projection:
  the soft-max, capped), the prox of the `nsjax.regularizers.Entropy` regularizer.
- `project_elastic_net_ball`: {γ‖w‖₁ + ½‖w‖² ≤ r} (Zhang et al. 2010, §5.5.2; sort-based, exact),
  with `elastic_net_ball_support`, its support function.

One is not of that kind: `project_chain_marginals`, onto the local marginal polytope of a
chain (Saha et al. 2009, App. E.3.1, M³N's dual domain), has one multiplier per edge and token, and
is found by semismooth Newton steps to a tolerance, then made exactly feasible.

The contract every function here keeps (each docstring says what it means for its own
arguments):

- Domain: real inputs of any floating dtype (integers and bools are promoted to the
  default float), across the whole floating-point range. Nothing is summed or squared
  before it is scaled: inputs are shifted or scaled by powers of two (exact) so that no
  intermediate overflows, and constants such as the simplex's 1 are kept (a sum of 1 for
  float32 entries of size 3e7 or 3e38). XLA on CPUs flushes subnormal numbers to zero:
  subnormal inputs count as zero there, and results are exact to that.
- Wrong arguments are refused before anything is traced or compiled, with a TypeError
  (complex, string or object dtypes; a mask that is not bool) or a ValueError (shapes: an
  empty or mismatched argument; values: NaN or ±inf where a finite number is needed, bounds
  the wrong way round, an infeasible right-hand side or cap, a nonpositive weight or
  radius) that names the argument as the caller spelled it and says what to pass instead.
  The value checks need the values: under `jax.jit`, `jax.vmap` or a derivative (traced
  arguments) they are skipped, and the result says it instead: NaN where an input was
  NaN or out of its domain (with ``feasible`` False where there is such a flag), and the
  documented infeasible result where the constraints cannot be met.
- ``feasible`` (`BoxSection`) is computed on the returned point itself, after the search:
  True only when that point is finite, inside the box and meets the equality to the
  rounding of its sums; never True for NaN or inf.
- Derivatives: `project_simplex`, `project_box_section`, `project_capped_simplex`,
  `entropic_capped_simplex`, `project_elastic_net_ball` and `elastic_net_ball_support` have
  a custom JVP, the analytic Jacobian of the projection (on the free coordinates the
  projection onto the constraint's tangent space, zero on the active bounds), so
  `jax.jvp`, `jax.jacfwd`, `jax.grad` and `jax.jacrev` all work (also under jit and vmap).
  At a kink (a coordinate exactly at a bound with a zero multiplier) it is one of the
  one-sided derivatives. `project_chain_marginals` is differentiable in forward mode only
  (through its solver's loop).

Layout: one algorithm per private module, everything imported from here
(``nsjax.projections.X``): ``_simplices`` (the simplex and the capped simplex),
``_box_hyperplane`` (the box section), ``_entropic_simplex``, ``_elastic_net_ball`` (the
projection and the support function), ``_chain_polytope``, and ``_common`` (argument
checks, exact power-of-two scalings).

References: see docs/references.md.
"""

from nsjax.projections._box_hyperplane import (
    BoxSection,
    box_section_in_range,
    project_box_section,
)
from nsjax.projections._chain_polytope import project_chain_marginals
from nsjax.projections._elastic_net_ball import elastic_net_ball_support, project_elastic_net_ball
from nsjax.projections._entropic_simplex import entropic_capped_simplex
from nsjax.projections._simplices import project_capped_simplex, project_simplex

__all__ = [
    "BoxSection",
    "project_simplex",
    "project_box_section",
    "project_capped_simplex",
    "box_section_in_range",
    "entropic_capped_simplex",
    "project_elastic_net_ball",
    "elastic_net_ball_support",
    "project_chain_marginals",
]

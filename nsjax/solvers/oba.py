"""OBA, the orthant-based adaptive method of Keskar et al. (2016), Algorithms 1 and 2, for
φ(w) = f(w) + μ‖w‖₁ with f smooth.

In nsjax terms f(w) = R(Xw) + the smooth part of λΩ and μ = `Problem.mu` (L1: its strength;
ElasticNet: f also holds λ₂/2‖w‖²). One step of the nsjax loop is one outer iteration of
Algorithm 2:

1. **Active-set identification** (eqs. 5–7): at the iterate w, with ∇f(w) and the
   minimum-norm subgradient g (eq. 4, `nsjax.regularizers.min_norm_subgradient`),
   A = {w_i = 0, |∇_i f| ≤ μ}, F = {w_i ≠ 0}, U = {w_i = 0, |∇_i f| > μ}.
2. **Selection** (steps 4–6, eqs. 8–9): U_F = the τ̂ = min(|U|, τ) members of U with the
   largest |g_i| (a stable descending sort of |g| masked to U: ties go to the lower index);
   U_A = U \\ U_F joins A. The orthant ζ (eq. 12) is sign(w_i) on F, sign(−g_i) at zeros.
3. **Corrective cycle** (steps 9–14): d = argmin gᵀd + ½dᵀHd subject to d_i = 0 on A
   (eq. 10), H = ∇²f(w) + δI (δ = 1e-8, Sec. 4), by conjugate gradients on Hessian-vector
   products (`Problem.hvp`) on the masked system v ↦ m⊙(H(m⊙v)) + δv, stopped when
   ‖Hd + g‖∞ ≤ 0.1‖g‖∞ on the free set (Sec. 4). The members of U_F whose trial value
   x̂_i = d_i does not have the predicted sign ζ_i (eq. 11) join A and (10) is solved again,
   until every prediction holds.
4. **τ update** (steps 15–17): τ doubles when the cycle needed no correction.
5. **Projected line search on the model** (steps 18–22): the largest α ∈ {1, ½, ¼, …} with
   q(P(w + αd)) ≤ q(w), q the piecewise quadratic model (2) and P the projection (13) onto
   the orthant ζ.
6. **Globalization** (Alg. 2, steps 4–13): the ISTA point w_I = S_{μ/L}(w − ∇f/L) and the
   surrogate Γ (eq. 14), an upper bound on φ(w_I); the trial point x̂ = P(w + αd) is kept if
   φ(x̂) ≤ Γ, else the segment w_I + ᾱ(x̂ − w_I) is searched with ᾱ halved from 1 until
   φ ≤ Γ, ᾱ set to 0 (w_I itself) once below ε = 1e-4. The number of steps that took this
   backup is counted in ``stats["ista_backups"]``. The paper never needed it (Sec. 4.1);
   here it is taken now and then on hard problems (the Appendix B one,
   `nsjax.datasets.oba_synthetic`), after a model search that P forced down to a tiny α:
   the prediction kept variables that had to cross zero, and w_I, which zeroes them, is
   better.

Theorem A.4: for strongly convex f with L-Lipschitz gradient the iterates converge linearly;
(A6) is exactly the test of step 6. The method is monotone, φ(w_{k+1}) ≤ Γ ≤ φ(w_k).

Certified gap. u = ∇R(X w), scaled into ‖Xᵀu‖∞ ≤ μ by `Problem.dual_value`, is a dual point
whose bound costs no product with X (Xᵀu = ∇f − the regularizer's smooth gradient); the run
stops when the gap is ≤ tol·max(1, |J|). The paper stops on (15) against a reference optimum.

Departures from the paper, and its typos, each chosen knowingly:

- ISTA: the paper writes S_α(x)_i = max{|x_i| − α, 0}, which drops the sign; the ISTA point
  (A3) is the prox of the L1 term, sign(x_i)·max{|x_i| − α, 0}
  (`nsjax.regularizers.soft_threshold`).
- Algorithm 1, step 3 defines A with |∇_i f| < μ; eq. (5) has ≤, without which coordinates
  with |∇_i f| = μ at zero would be in no set. Eq. (5) is used.
- The CG rule ‖Hp + g^k‖∞/‖g^k‖∞ ≤ 0.1 (Sec. 4) is read on the free set, g^k restricted
  to it (the right-hand side of the system solved); the components of g^k fixed at zero
  are not part of that system.
- τ⁰ = ⌊η n⌋ (n = the number of weights) is 0 for n < 1/η (30 features at η = 0.01): U_F
  would stay empty and τ would never grow. τ⁰ = max(1, ⌊η n⌋), and τ is capped at n.
- The corrective cycle of Algorithm 1 is a while loop entered only when V = U_F ≠ ∅, so
  with U empty no step d would be computed at all (nor j = 1, so τ could not double).
  Here (10) is always solved once (a do-while): j counts the solves, j = 1 means "no
  correction" (the reading of Sec. 2). The cycle is capped at ``max_corrections`` re-solves;
  at the cap the remaining wrong-signed components are zeroed by the projection P, and the
  globalization still guarantees progress.
- CG is preconditioned by diag(H) + δ (Jacobi; ``jacobi=False`` for the paper's plain CG)
  where the loss gives its curvature D: diag(XᵀDX) costs one pass over X per step. On
  badly scaled columns (text-like data, power-law column frequencies), whose diagonal
  spans orders of magnitude, it cuts the CG iterations severalfold; on standardised data it
  changes little either way. The stopping rule is still read on the true residual.
- H in the model q of the line search is the same shifted H = ∇²f + δI as in (10), so the
  two models agree on the orthant face. q(P(w + αd)) − q(w) is computed as a difference
  (∇fᵀs + ½sᵀHs + μΣ_i(|w_i + s_i| − |w_i|), s = P(w + αd) − w), not as two rounded
  values, which would stop the model search at |φ|·eps instead of at the optimum; sᵀHs
  costs nothing while P clips nothing (s = αd and Hd is known from CG), one Hessian-vector
  product (two products with X) otherwise. The search is capped at ``max_backtracks``
  halvings, after which α = 0 (x̂ = w, left to the globalization).
- The acceptance tests φ ≤ Γ allow rounding, 16 eps·|φ(w)|: in exact arithmetic φ(x̂) ≤ Γ
  holds near the optimum, but the two sides are then equal to the last bits. (So where the
  Newton step is poor, the backup cannot act below that level either: φ does not resolve it.)
- L: the paper takes "a Lipschitz constant L" of ∇f as given. Here L = ``lipschitz`` if
  given, else ``lipschitz_safety`` (2) times a power-iteration estimate (``power_iterations``
  = 20, two products with X each, at init) of the largest eigenvalue of ∇²f at scores
  S = 0 (plus the regularizer's smooth part). For the logistic loss σ(z)σ(−z) ≤ ¼ is largest
  at z = 0, so that Hessian (‖X‖₂²/(4n)) bounds ∇²f everywhere; for the squared loss the
  Hessian is constant. Power iteration estimates from below, hence the factor 2. Safeguard:
  where the backup reaches ᾱ = 0 and finds φ(w_I) > Γ, L was not a Lipschitz constant
  (A4 failed): L doubles for the following steps (``stats["lipschitz_increases"]``), and
  the step keeps the better of w_I and w, so that Algorithm 2's loop cannot spin forever.
- Every loop is bounded: CG by ``max_cg`` iterations (it also stops on non-positive
  curvature pᵀHp ≤ 0, impossible in exact arithmetic with δ > 0), the cycle by
  ``max_corrections``, the model search by ``max_backtracks``, the backup by ε (at most
  ⌈log₂(1/ε)⌉ + 1 trial points).
- Stall rule (the paper has none: it runs to a reference optimum): after 5 steps in a row
  that improve neither φ nor the best lower bound by more than the rounding allowance (and
  do not raise L), with the gap still above tol, the run ends with `RESULTS.stalled`: a
  precision floor (float32, or a tol below what the dual point can certify in the dtype).
  φ alone is not enough: it is flat to rounding once ‖w − w*‖ ~ sqrt(eps), while the
  bound, linear in the gradient's error, still improves.

Costs per step, counted in ``stats["matvecs"]`` (products with X or Xᵀ): one for the
Jacobi diagonal (a product with X∘X), two per CG iteration (`Problem.hvp`), two per
line-search trial that P clips, one for X x̂, one for the ISTA point when the backup is
taken (the segment's scores are combinations of the two), and one (Xᵀu) for the new
gradient.

References:
    Keskar et al. (2016): Nitish Shirish Keskar, Jorge Nocedal, Figen Öztoprak and Andreas
    Wächter, "A Second-Order Method for Convex ℓ1-Regularized Optimization with Active-Set
    Prediction", Optimization Methods and Software 31(3):605–621, 2016 (arXiv:1505.04315). The
    other works cited here: docs/references.md.
"""

from __future__ import annotations

from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax.regularizers import min_norm_subgradient, orthant, project_orthant, soft_threshold
from nsjax.results import RESULTS
from nsjax.solvers._options import Options, solver_options
from nsjax.solvers.base import Core, Solver, converged, count, counters
from nsjax.solvers.capabilities import Takes

#: Rounding allowance of the acceptance tests φ ≤ Γ, in units of eps·|φ(w)|.
ROUNDING_ULPS = 16
#: Consecutive steps that improve neither φ nor the lower bound before `RESULTS.stalled`.
STALL_STEPS = 5


class OBAState(NamedTuple):
    """The state between two outer iterations of Algorithm 2."""

    core: Core  # w_k, φ(w_k), the dual value of ∇R(X w_k), counters
    S: jax.Array  # X w_k
    f: jax.Array  # f(w_k), the smooth part
    grad: jax.Array  # ∇f(w_k)
    tau: jax.Array  # τ^k (int32): the cap on |U_F|
    lipschitz: jax.Array  # L of the ISTA step and of Γ (doubled where (A4) fails)
    top: jax.Array  # the best lower bound found so far (for the stall rule)
    flat: jax.Array  # consecutive steps (int32) that improved neither φ nor the bound
    status: jax.Array  # RESULTS.running, or the failure that ends the run


class SubspaceStep(NamedTuple):
    """The outcome of the corrective cycle: d, (H + δI)d, the free set and the counts."""

    d: jax.Array
    Hd: jax.Array
    free: jax.Array
    solves: jax.Array  # j of Algorithm 1: solves of (10); 1 = no correction
    cg_iterations: jax.Array


def select_free(w, g, grad, mu, tau):
    """Steps 3–6 of Algorithm 1: (free = F ∪ U_F, U_F, ζ) as boolean masks / signs.

    U_F holds the τ̂ = min(|U|, τ) members of U with the largest |g|, taken by a stable
    descending sort of |g| masked to U (ties: the lower index first), so |U_F| = τ̂ exactly.
    """
    at_zero = w == 0
    F = ~at_zero
    U = at_zero & (jnp.abs(grad) > mu)
    key = jnp.where(U, jnp.abs(g), -jnp.inf).reshape(-1)
    order = jnp.argsort(-key, stable=True)
    rank = jnp.argsort(order).astype(jnp.int32)  # the inverse permutation: i's place in order
    tau_hat = jnp.minimum(jnp.sum(U, dtype=jnp.int32), tau)
    UF = U & (rank < tau_hat).reshape(w.shape)
    zeta = orthant(w, g)
    return F | UF, UF, zeta


def masked_cg(problem, curv, g, free, shift, rtol, max_iter, diag=None):
    """Solve (10) on the free set: (M(H(Mv)) + δv) d = −Mg by conjugate gradients, from d = 0,
    until ‖(H + δI)d + g‖∞ ≤ rtol·‖Mg‖∞ on the free set (Sec. 4), ``max_iter`` iterations,
    or non-positive curvature. ``diag``, the diagonal of H where known, preconditions CG
    (Jacobi: z = r/(diag + δ); the paper's CG is plain, ``diag=None``). Returns (d,
    (H + δI)d, iterations: Hessian-vector products spent, the last one included where it
    met non-positive curvature); d is 0 off the free set.
    """
    m = free.astype(g.dtype)
    b = -m * g
    # Off the free set r stays 0, so the preconditioner's value there does not matter.
    inv = 1.0 if diag is None else 1.0 / (jnp.maximum(diag, 0.0) + jnp.maximum(shift, _tiny(g)))

    def apply(v):
        return m * problem.hvp(curv, m * v) + shift * v

    target = rtol * jnp.max(jnp.abs(b))

    def cond(c):
        _, r, _, _, k, ok = c
        return ok & (k < max_iter) & (jnp.max(jnp.abs(r)) > target)

    def body(c):
        x, r, p, rz, k, _ = c
        Ap = apply(p)
        pAp = jnp.vdot(p, Ap)
        ok = pAp > 0
        a = jnp.where(ok, rz / jnp.where(ok, pAp, 1.0), 0.0)
        x = x + a * p
        r = r - a * Ap
        z = inv * r
        rz_new = jnp.vdot(r, z)
        beta = rz_new / jnp.where(rz > 0, rz, 1.0)
        return x, r, z + beta * p, rz_new, k + 1, ok

    z = inv * b
    init = (jnp.zeros_like(b), b, z, jnp.vdot(b, z), jnp.zeros((), jnp.int32), jnp.array(True))
    x, r, _, _, k, _ = jax.lax.while_loop(cond, body, init)
    return x, b - r, k  # (H + δI)x = b − r: CG's residual gives the product for free


def _tiny(x):
    return jnp.finfo(x.dtype).tiny


def corrective_cycle(problem, curv, g, free, UF, zeta, shift, rtol, max_cg, max_corrections,
                     diag=None):
    """Steps 9–14 of Algorithm 1 as a do-while: solve (10), move the members of U_F whose
    trial sign differs from ζ (eq. 11) into A, repeat until none does (at most
    ``max_corrections`` re-solves)."""

    def solve(free):
        return masked_cg(problem, curv, g, free, shift, rtol, max_cg, diag)

    def violated(free, d):
        return UF & free & (jnp.sign(d) != zeta)

    def cond(c):
        free, d, _, j, _ = c
        return (j == 0) | (jnp.any(violated(free, d)) & (j <= max_corrections))

    def body(c):
        free, d, _, j, its = c
        free = free & ~(violated(free, d) & (j > 0))  # V of step 13 (none before a solve)
        d, Hd, k = solve(free)
        return free, d, Hd, j + 1, its + k

    zero = jnp.zeros_like(g)
    init = (free, zero, zero, jnp.zeros((), jnp.int32), jnp.zeros((), jnp.int32))
    free, d, Hd, j, its = jax.lax.while_loop(cond, body, init)
    return SubspaceStep(d, Hd, free, j, its)


class ModelSearch(NamedTuple):
    w: jax.Array  # x̂ = P(w + αd), or w where no α was found
    alpha: jax.Array
    trials: jax.Array
    products: jax.Array  # products with X spent (two per clipped trial)


def projected_model_search(problem, curv, w, grad, mu, step: SubspaceStep, zeta, shift,
                           max_backtracks):
    """Steps 18–22 of Algorithm 1: the largest α = 2⁻ᵏ with q(P(w + αd)) ≤ q(w), for q the
    model (2) with H + δI and P the projection (13) onto the orthant ζ."""
    d = step.d
    dHd = jnp.vdot(d, step.Hd)
    abs_w = jnp.abs(w)

    def trial(alpha):
        x = w + alpha * d
        xp = project_orthant(x, zeta)
        s = xp - w
        clipped = jnp.any(xp != x)
        sHs = jax.lax.cond(clipped,
                           lambda: jnp.vdot(s, problem.hvp(curv, s)) + shift * jnp.vdot(s, s),
                           lambda: alpha * alpha * dHd)
        # μ(‖w + s‖₁ − ‖w‖₁) summed per coordinate: a difference of the two sums would
        # carry rounding of size eps·μ‖w‖₁, which swamps the model change near the optimum.
        change = jnp.vdot(grad, s) + 0.5 * sHs + mu * jnp.sum(jnp.abs(xp) - abs_w)
        return xp, change <= 0, clipped.astype(jnp.int32)

    def cond(c):
        _, _, ok, n, _ = c
        return ~ok & (n < max_backtracks + 1)

    def body(c):
        alpha, _, _, n, k = c
        alpha = 0.5 * alpha
        xp, ok, clipped = trial(alpha)
        return alpha, xp, ok, n + 1, k + clipped

    one = jnp.ones((), w.dtype)
    xp, ok, clipped = trial(one)
    alpha, xp, ok, n, k = jax.lax.while_loop(cond, body, (one, xp, ok, jnp.ones((), jnp.int32),
                                                          clipped))
    return ModelSearch(jnp.where(ok, xp, w), jnp.where(ok, alpha, 0.0), n, 2 * k)


class Globalized(NamedTuple):
    w: jax.Array
    S: jax.Array
    value: jax.Array
    backup: jax.Array  # the trial point was rejected: the ISTA segment was searched
    lipschitz_failed: jax.Array  # φ(w_I) > Γ: L is not a Lipschitz constant of ∇f
    evaluations: jax.Array  # φ evaluations
    products: jax.Array  # products with X


def ista_globalization(problem, w, S, value, f, grad, mu, L, x_hat, eps, rounding):
    """Steps 4–13 of Algorithm 2: keep x̂ if φ(x̂) ≤ Γ (eq. 14), else search the segment from
    the ISTA point w_I towards x̂, ᾱ halved from 1 and set to 0 below ``eps``."""
    x_ista = soft_threshold(w - grad / L, mu / L)  # signed: see the module docstring
    s = x_ista - w
    gamma = f + jnp.vdot(grad, s) + 0.5 * L * jnp.vdot(s, s) + mu * jnp.sum(jnp.abs(x_ista))
    limit = gamma + rounding
    S_hat = problem.scores(x_hat)
    value_hat = problem.value(x_hat, S_hat)
    accept = value_hat <= limit

    def keep():
        return x_hat, S_hat, value_hat, jnp.zeros((), jnp.int32), jnp.array(False)

    def backup():
        S_ista = problem.scores(x_ista)
        d_bar, dS_bar = x_hat - x_ista, S_hat - S_ista

        def at(a):
            x, Sx = x_ista + a * d_bar, S_ista + a * dS_bar
            return x, Sx, problem.value(x, Sx)

        def cond(c):
            a, _, _, vx, _ = c
            return (a > 0) & (vx > limit)

        def body(c):
            a, *_, n = c
            a = 0.5 * a
            a = jnp.where(a < eps, 0.0, a)
            return (a, *at(a), n + 1)

        one = jnp.ones((), w.dtype)
        a, x, Sx, vx, n = jax.lax.while_loop(cond, body, (one, x_hat, S_hat, value_hat,
                                                         jnp.zeros((), jnp.int32)))
        # At ᾱ = 0, φ(w_I) ≤ Γ holds whenever L is a Lipschitz constant of ∇f (A5).
        failed = vx > limit
        worse = failed & (vx > value)
        return (jnp.where(worse, w, x), jnp.where(worse, S, Sx), jnp.where(worse, value, vx),
                n, failed)

    x, Sx, vx, n, failed = jax.lax.cond(accept, keep, backup)
    backed = ~accept
    return Globalized(x, Sx, vx, backed, failed, 1 + n, 1 + backed.astype(jnp.int32))


def estimate_lipschitz(problem, w0, S0, iterations, safety):
    """``safety`` × the power-iteration estimate of λ_max(∇²f) at scores S = 0 (module
    docstring: a global bound for the logistic and squared losses), from a fixed random
    start; ``iterations`` Hessian-vector products (two products with X each)."""
    curv = problem.curvature(jnp.zeros_like(S0))
    v = jax.random.normal(jax.random.key(0), w0.shape, w0.dtype)
    v = v / jnp.sqrt(jnp.vdot(v, v))
    tiny = jnp.finfo(w0.dtype).tiny

    def body(_, c):
        v, _ = c
        Hv = problem.hvp(curv, v)
        theta = jnp.vdot(v, Hv)
        norm = jnp.sqrt(jnp.vdot(Hv, Hv))
        return jnp.where(norm > tiny, Hv / jnp.maximum(norm, tiny), v), theta

    _, theta = jax.lax.fori_loop(0, iterations, body, (v, jnp.zeros((), w0.dtype)))
    return safety * jnp.maximum(theta, tiny)


@solver_options
class OBA(Solver):
    """OBA (Keskar et al. 2016, Algorithm 2): active-set prediction with a corrective cycle,
    subspace Newton-CG steps and an ISTA globalization, for a smooth loss + L1 (or elastic net).

    Args:
        eta: η of τ⁰ = max(1, ⌊η n⌋), the initial cap on the number of zero variables
            released per step (Sec. 4: 0.01), a finite number in (0, 1).
        cg_tol: the relative residual ‖Hd + g‖∞/‖g‖∞ at which CG stops (Sec. 4: 0.1), a
            finite number in (0, 1).
        max_cg: cap on CG iterations per solve of (10), an int >= 1.
        hessian_shift: δ of H = ∇²f + δI (Sec. 4: 1e-8), a finite number >= 0.
        max_corrections: cap on the re-solves of (10) per corrective cycle (module
            docstring), an int >= 0 (0: no corrective cycle).
        max_backtracks: cap on the halvings of the projected model search, an int >= 1.
        ista_eps: ε of Algorithm 2 (Sec. 4: 1e-4): ᾱ below it is set to 0; a finite number
            in (0, 1).
        lipschitz: L of the ISTA step and of Γ (eq. 14), a finite number > 0; None
            estimates it at init (module docstring). Doubled during the run where it proves
            too small.
        power_iterations: Hessian-vector products of the estimate of L, an int >= 1.
        lipschitz_safety: factor on the power-iteration estimate of L, a finite
            number >= 1.
        jacobi: precondition CG by the diagonal of H (module docstring; a departure from
            the paper's plain CG). Applies where the loss gives its curvature (logistic,
            squared); plain CG otherwise. True or False.

    Stops on the certified gap J(w) − D(s u) ≤ tol·max(1, |J|) with u = ∇R(Xw) (module
    docstring), or with `RESULTS.stalled` at a precision floor (module docstring).

    ``stats``: ``matvecs``, ``cg_iterations``, ``corrections`` (re-solves of (10) in the
    corrective cycles), ``linesearch_evaluations`` (model trial points),
    ``function_evaluations`` (φ at trial points of the globalization), ``ista_backups``
    (steps whose trial point failed φ ≤ Γ), ``lipschitz_increases``.

    Example:
        >>> import nsjax
        >>> from nsjax.solvers.oba import OBA
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> X = (X - X.mean(0)) / X.std(0)
        >>> prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L1(1e-2), X, y)
        >>> sol = nsjax.solve(prob, OBA(), tol=1e-8)
        >>> sol.result, int((sol.w != 0).sum()), int(sol.stats["ista_backups"])
        (<RESULTS.successful: 0>, 11, 0)
    """

    #: τ⁰ counts the weights: padded zero columns (`nsjax.buckets`) would change the run.
    shape_free: ClassVar[bool] = False
    eta: float = 0.01
    cg_tol: float = 0.1
    max_cg: int = 500
    hessian_shift: float = 1e-8
    max_corrections: int = 100
    max_backtracks: int = 40
    ista_eps: float = 1e-4
    lipschitz: float | None = None
    power_iterations: int = 20
    lipschitz_safety: float = 2.0
    jacobi: bool = True

    def __post_init__(self):
        options = Options(self)
        for name in ("max_cg", "max_backtracks", "power_iterations"):
            options.int(name, low=1)
        options.int("max_corrections", low=0)  # 0: no corrective cycle (an ablation)
        options.bool("jacobi")
        options.real("eta", 0, 1, low_open=True, high_open=True)
        options.real("cg_tol", 0, 1, low_open=True, high_open=True)
        options.real("hessian_shift", 0)
        options.real("ista_eps", 0, 1, low_open=True, high_open=True)
        options.real("lipschitz", 0, low_open=True, none=True, example=1.0)
        options.real("lipschitz_safety", 1)

    #: It models f = R(X·) + the smooth part of λΩ and treats μ‖w‖₁ exactly.
    takes: ClassVar[Takes] = Takes(losses=("smooth",), regularizer="split")

    # -- the algorithm ----------------------------------------------------------------
    def init(self, problem, w0) -> OBAState:
        dt = problem.dtype
        S = problem.scores(w0)
        grad, u = problem.smooth_grad(w0, S)
        products = 2
        if self.lipschitz is None:
            L = estimate_lipschitz(problem, w0, S, self.power_iterations, self.lipschitz_safety)
            products += 2 * self.power_iterations
        else:
            L = jnp.asarray(self.lipschitz, dt)
        stats = counters(matvecs=products, cg_iterations=0, corrections=0,
                         linesearch_evaluations=0, function_evaluations=0, ista_backups=0,
                         lipschitz_increases=0)
        core = Core(w0, problem.value(w0, S), problem.smooth_dual_value(w0, grad, u), stats)
        tau0 = max(1, int(self.eta * w0.size))
        return OBAState(core, S, problem.smooth_value(w0, S), grad,
                        jnp.asarray(tau0, jnp.int32), L.astype(dt), core.lower,
                        jnp.zeros((), jnp.int32),
                        jnp.asarray(RESULTS.running, jnp.int32))

    def step(self, problem, state: OBAState) -> OBAState:
        w, S, grad, value = state.core.w, state.S, state.grad, state.core.value
        dt = w.dtype
        mu = jnp.asarray(problem.mu, dt)
        shift = jnp.asarray(self.hessian_shift, dt)
        L = state.lipschitz

        # Algorithm 1, steps 3–6: the sets (5–7), g (4), ζ (12), U_F by largest |g|.
        g = min_norm_subgradient(w, grad, mu)
        free, UF, zeta = select_free(w, g, grad, mu, state.tau)
        # Step 7 (H = ∇²f(w) + δI) and the corrective cycle, steps 9–14.
        curv = problem.curvature(S)
        diag = problem.hessian_diagonal(curv) if self.jacobi else None
        sub = corrective_cycle(problem, curv, g, free, UF, zeta, shift,
                               jnp.asarray(self.cg_tol, dt), self.max_cg, self.max_corrections,
                               diag)
        # Steps 15–17: τ doubles when the cycle needed no correction (capped at n).
        tau = jnp.where(sub.solves == 1, jnp.minimum(2 * state.tau, w.size), state.tau)
        # Steps 18–22: the projected backtracking search on the model (2).
        ls = projected_model_search(problem, curv, w, grad, mu, sub, zeta, shift,
                                    self.max_backtracks)
        # Algorithm 2, steps 4–13: the ISTA globalization with the surrogate Γ (14).
        rounding = ROUNDING_ULPS * jnp.finfo(dt).eps * jnp.abs(value)
        glob = ista_globalization(problem, w, S, value, state.f, grad, mu, L, ls.w,
                                  jnp.asarray(self.ista_eps, dt), rounding)

        w_new, S_new = glob.w, glob.S
        grad_new, u = problem.smooth_grad(w_new, S_new)
        lower = problem.smooth_dual_value(w_new, grad_new, u)
        # Stall: neither φ nor the lower bound improved beyond rounding (module docstring).
        idle = (value - glob.value <= rounding) & (lower <= state.top + rounding)
        flat = jnp.where(idle & ~glob.lipschitz_failed, state.flat + 1, 0).astype(jnp.int32)
        status = jnp.where(flat >= STALL_STEPS, RESULTS.stalled, RESULTS.running)
        stats = count(state.core.stats,
                      matvecs=(2 * sub.cg_iterations + ls.products + glob.products + 1
                               + (diag is not None)),
                      cg_iterations=sub.cg_iterations, corrections=sub.solves - 1,
                      linesearch_evaluations=ls.trials,
                      function_evaluations=glob.evaluations, ista_backups=glob.backup,
                      lipschitz_increases=glob.lipschitz_failed)
        core = Core(w_new, glob.value, lower, stats)
        return OBAState(core, S_new, problem.smooth_value(w_new, S_new), grad_new, tau,
                        jnp.where(glob.lipschitz_failed, 2 * L, L), jnp.fmax(state.top, lower),
                        flat,
                        status.astype(jnp.int32))

    def terminate(self, problem, state: OBAState, best, tol):
        """(done, result): the certified gap first, then a stall (module docstring)."""
        result = jnp.where(converged(best.value, best.gap, tol), RESULTS.successful,
                           state.status)
        return result != RESULTS.running, result.astype(jnp.int32)

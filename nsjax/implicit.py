"""Derivatives of a solution w*(θ) by implicit differentiation of its optimality conditions.

`nsjax.solve` returns ``sol.w`` through `implicit_solution`, an identity in the forward
pass whose reverse-mode derivative with respect to the problem's arrays θ (λ, X, y) comes
from the implicit function theorem instead of from the solver's iterations (reverse mode
cannot go through `lax.while_loop`, and forward mode through the iterations of a nonsmooth
method gives nonsense). If F(w*, θ) = 0 characterizes the solution and ∂F/∂w is invertible,
then dw*/dθ = −(∂F/∂w)⁻¹ ∂F/∂θ, and a vector-Jacobian product vᵀ dw*/dθ is −uᵀ ∂F/∂θ for
the u that solves (∂F/∂w)ᵀ u = v: one linear solve (conjugate gradients on products with X,
never a matrix) and one `jax.vjp` of F.

The conditions used:

- **Smooth losses** (``loss.smooth``: Logistic, Squared, …) with L2, L1 or ElasticNet (and a
  bias): with f the smooth part of J and μ the weight of μ‖w‖₁, on the support
  (w_j ≠ 0, or μ_j = 0) ∇_j f(w) + μ sign(w_j) = 0, and off it w_j = 0. ∂F/∂w is the Hessian
  of f on the support (symmetric; positive definite where λ > 0 or the support's columns are
  independent) and the identity off it. The support is the one the solver returned (exact
  zeros: OBA's), so the derivative is that of the solution with this support held fixed —
  exact wherever the support is locally stable (no |∇_j f| = μ with w_j = 0).
- **The binary hinge** with L2 (and a bias), J = λ/2‖w‖² + (1/n) Σ max(0, 1 − y_i s_i),
  s_i = x_iᵀw (+ b): the KKT system of Yu et al. (2010), eqs. 20–21, on the margin set
  M = {i : |y_i s_i − 1| ≤ τ}: λ n w = Σ_i α_i y_i x_i (and Σ_i α_i y_i = 0 with a bias),
  with α_i = 1 on the error set E (y_i s_i < 1 − τ), 0 above the margin and free on M, and
  y_i s_i = 1 on M. The unknowns are (w, α_M); α_M is recovered from w by least squares.
  τ = eps^(1/3) (6e-6 in float64), so solve to a tight tolerance first. The derivative is
  exact where the margin set is stable under the perturbation (0 < α_i < 1 on M, no other
  point at the margin); at a kink of w*(θ) (an example entering or leaving M) it is the
  derivative of one side, and with linearly dependent margin points (more than d of them)
  it is not unique: nsjax then returns the minimum-norm multipliers' one.

Anything else (the multiclass and structured losses, Entropy and the constraint
regularizers) raises `NotImplementedError` when differentiated. So do forward mode
(`jax.jvp`, `jax.jacfwd`) and second derivatives (`jax.hessian`, a gradient of a gradient):
the backward pass is itself a solve, not differentiated again.

Where the derivative does not exist, it is refused rather than made up: a run that ended
without a finite solution (`RESULTS.nonfinite`, `RESULTS.unbounded`), and a singular
system (∂F/∂w)ᵀ u = v that has no solution (λ = 0 with the hinge, or a smooth loss whose
Hessian is singular on the support). The backward pass raises `ValueError` where its
values are concrete (the caller's `jax.grad` outside `jax.jit`), and gives NaN under jit.

References: see docs/references.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["implicit_solution"]

#: Caps on the conjugate-gradient iterations of the backward pass.
CG_MAX_ITERATIONS = 1000

_ONLY_FIRST_REVERSE = (
    "nsjax.solve's solution is differentiable in reverse mode, once (jax.grad, jax.vjp, "
    "jax.jacrev); forward mode over it (jax.jvp, jax.jacfwd, jax.hessian, which is "
    "jacfwd of jacrev) and second derivatives are not supported (its derivative is itself "
    "a solve). Differentiate once in reverse mode, or use finite differences of jax.grad.")


@jax.custom_jvp
def _reverse_only(x):
    """x; differentiating it in forward mode raises (see `_ONLY_FIRST_REVERSE`)."""
    return x


@_reverse_only.defjvp
def _reverse_only_jvp(primals, tangents):
    raise NotImplementedError(_ONLY_FIRST_REVERSE)


def implicit_solution(problem, w, valid=True):
    """``w`` itself; its reverse-mode derivative with respect to ``problem``'s arrays is
    that of the solution w*(θ) of ``problem`` (`nsjax.implicit`), and zero with respect to
    ``w`` (the solver's iterates are not differentiated). ``valid`` (a bool, possibly
    traced): whether w is a solution at all (False after a non-finite run): its
    derivative is then refused.

    Example:
        >>> import jax, nsjax, numpy as np
        >>> jax.config.update("jax_enable_x64", True)
        >>> rng = np.random.default_rng(0)
        >>> X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
        >>> def w_star(lam):  # ridge regression: w* = (XᵀX/n + λI)⁻¹ Xᵀy/n
        ...     prob = nsjax.Problem(nsjax.losses.Squared(), nsjax.regularizers.L2(lam), X, y)
        ...     return nsjax.solve(prob, nsjax.solvers.SubLBFGS(), tol=1e-12).w
        >>> H = X.T @ X / 40 + 0.1 * np.eye(3)
        >>> exact = -np.linalg.solve(H, np.linalg.solve(H, X.T @ y / 40))
        >>> bool(np.allclose(jax.jacrev(w_star)(0.1), exact, rtol=1e-6))
        True
    """
    from nsjax.problem import Problem

    if not isinstance(problem, Problem):
        raise TypeError(f"problem must be an nsjax.Problem; got {type(problem).__name__}.")
    if jnp.shape(w) != problem.w_shape:
        raise ValueError(f"w must have the problem's weight shape {problem.w_shape}; got "
                         f"{jnp.shape(w)}.")
    return _implicit_solution(problem, w, valid)


@jax.custom_vjp
def _implicit_solution(problem, w, valid):
    return w


def _forward(problem, w, valid):
    # The residuals pass through `_reverse_only`: an outer forward-mode (or second)
    # derivative would differentiate the backward pass as if the solution were fixed.
    guard = jax.tree_util.tree_map(
        lambda x: _reverse_only(x) if jnp.issubdtype(jnp.result_type(x), jnp.inexact) else x,
        (problem, w))
    return w, (*guard, valid)


@jax.jit
def _problem_cotangent(problem, w, v, valid):
    """(vᵀ dw*/dθ, exists): −uᵀ ∂F/∂θ with (∂F/∂w)ᵀ u = v, and whether that system was
    solved (u finite, residual within `SOLVED`) at a valid solution; compiled once per
    shape (called eagerly when the caller's gradient is not under jit, it would otherwise
    trace its conjugate-gradient loops anew at every call)."""
    conditions, u, solved = _transposed_solution(problem, w, v)
    exists = solved & valid & jnp.all(jnp.isfinite(w))
    _, vjp = jax.vjp(conditions, problem)
    cotangent = vjp(jax.tree_util.tree_map(jnp.negative, u))[0]
    return jax.tree_util.tree_map(lambda c: jnp.where(exists, c, jnp.nan), cotangent), exists


def _backward(residuals, v):
    problem, w, valid = residuals
    cotangent, exists = _problem_cotangent(problem, w, v, jnp.asarray(valid))
    if not isinstance(exists, jax.core.Tracer) and not bool(exists):
        raise ValueError(
            "the derivative of the solution does not exist here: "
            + ("the solve did not end at a finite solution (see sol.result)" if not bool(
                jnp.all(jnp.asarray(valid))) else
               "its optimality conditions are singular (λ = 0 with the hinge, or a smooth "
               "loss whose Hessian is singular on the support)")
            + ". Differentiate at λ > 0, or at a solution that exists.")
    return cotangent, jnp.zeros_like(w), None


_implicit_solution.defvjp(_forward, _backward)


def _transposed_solution(problem, w, v):
    """(F, u, solved): the optimality conditions F(θ) at the fixed solution (a function of
    the problem alone), the solution u of (∂F/∂w)ᵀ u = v, and whether u solves it."""
    reg = problem.coefficient_reg
    # The split f + μ‖·‖₁ (L2, L1, ElasticNet), and the binary hinge's dual with L2: what the
    # loss and the regularizer declare, not their classes.
    if problem.loss.smooth and (reg.quadratic or reg.has_l1):
        return _smooth_conditions(problem, w, v)
    if problem.loss.dual_form == "svm" and reg.quadratic:
        if problem.weighted:
            raise NotImplementedError("the derivative of a hinge solution with sample weights "
                                      "is not implemented (smooth losses take them).")
        return _hinge_conditions(problem, w, v)
    raise NotImplementedError(
        f"the derivative of a solution is implemented for smooth losses with L2, L1 or "
        f"ElasticNet, and for the binary Hinge with L2 (nsjax.implicit); got "
        f"{type(problem.loss).__name__} with {type(reg).__name__}.")


def _cg(matvec, b):
    """Conjugate gradients to the dtype's precision (matvec symmetric positive
    semidefinite; on a consistent singular system, from 0, the minimum-norm solution)."""
    tol = float(np.finfo(b.dtype).eps) ** 0.75
    return jax.scipy.sparse.linalg.cg(matvec, b, tol=tol, maxiter=CG_MAX_ITERATIONS)[0]


def _solved(matvec, u, b):
    """Whether u solves matvec(u) = b: finite, with a residual within eps^(1/4) of ‖b‖
    (CG aims at eps^(3/4); an inconsistent singular system leaves a residual of the
    order of ‖b‖)."""
    scale = float(np.finfo(b.dtype).eps) ** 0.25 * jnp.maximum(jnp.linalg.norm(b),
                                                                 np.finfo(b.dtype).tiny)
    return jnp.all(jnp.isfinite(u)) & (jnp.linalg.norm(matvec(u) - b) <= scale)


# -- smooth losses: ∇f + μ sign(w) = 0 on the support, w = 0 off it ---------------------

def _l1_weights(problem, w):
    """μ per entry of w (0 on a bias row)."""
    mu = jnp.broadcast_to(jnp.asarray(problem.mu, w.dtype), w.shape)
    if problem.bias:
        mu = mu.at[-1].set(0)
    return mu


def _smooth_conditions(problem, w, v):
    w = jax.lax.stop_gradient(w)
    mu = _l1_weights(problem, w)
    free = (w != 0) | (mu == 0)
    curvature = problem.curvature(problem.scores(w))

    def hessian(p):  # ∂F/∂w on the support, the identity off it (symmetric)
        return jnp.where(free, problem.hvp(curvature, jnp.where(free, p, 0)), p)

    u = _cg(hessian, v)

    def conditions(prob):
        grad = prob.smooth_grad(w, prob.scores(w))[0]
        l1 = _l1_weights(prob, w) * jnp.sign(w)
        return jnp.where(free, grad + l1, w)

    return conditions, u, _solved(hessian, u, v)


# -- the binary hinge with L2: the KKT system on the margin set -------------------------

def _hinge_conditions(problem, w, v):
    w = jax.lax.stop_gradient(w)
    y, X = problem.y, problem.X
    n = y.shape[0]
    tau = float(np.finfo(w.dtype).eps) ** (1 / 3)
    margin = y * problem.scores(w)
    on_margin = jnp.abs(margin - 1) <= tau
    errors = margin < 1 - tau
    lam = problem.lam

    # α on M: least squares Σ_M α_i y_i x̃_i = λ n w − Σ_E y_i x̃_i (x̃ = (x, 1) with a bias).
    def normal(z):  # Ãᵀ Ã on M (identity off it), Ã's columns y_i x̃_i
        product = y * problem.scores(problem.rmv(jnp.where(on_margin, y * z, 0)))
        return jnp.where(on_margin, product, z)

    stationary = n * problem.reg.smooth_grad(w) - problem.rmv(jnp.where(errors, y, 0))
    alpha_m = _cg(normal, jnp.where(on_margin, y * problem.scores(stationary), 0))
    alpha = jnp.where(errors, 1.0, jnp.where(on_margin, alpha_m, 0.0)).astype(w.dtype)

    # (∂F/∂(w, α_M))ᵀ (u, s) = (v, 0):  λ n u_w + Σ_M s_i y_i x_i = v_w,
    # Σ_M s_i y_i = v_b (with a bias), y_i (x_iᵀ u_w + u_b) = 0 on M.
    v_w = v[:-1] if problem.bias else v
    scale = lam * n

    def gram(z):  # G = Y X_M X_Mᵀ Y / (λ n) on M, the identity off it
        return jnp.where(on_margin, y * X.mv(X.rmv(jnp.where(on_margin, y * z, 0))) / scale, z)

    r = jnp.where(on_margin, y * X.mv(v_w) / scale, 0)
    s = _cg(gram, r)
    solved = (lam > 0) & _solved(gram, s, r)
    if problem.bias:
        ym = jnp.where(on_margin, y, 0)
        g_y = _cg(gram, ym)
        denominator = jnp.vdot(ym, g_y)
        safe = jnp.where(denominator > 0, denominator, 1)
        u_b = jnp.where(denominator > 0, (v[-1] - jnp.vdot(ym, s)) / safe, 0)
        s = s + u_b * g_y
    u_w = (v_w - X.rmv(jnp.where(on_margin, y * s, 0))) / scale
    u = (jnp.concatenate([u_w, u_b[None]]) if problem.bias else u_w, s)

    def conditions(prob):
        stationarity = n * prob.reg.smooth_grad(w) - prob.rmv(alpha * prob.y)
        on_margin_rows = jnp.where(on_margin, prob.y * prob.scores(w) - 1, 0)
        return stationarity, on_margin_rows

    return conditions, u, solved

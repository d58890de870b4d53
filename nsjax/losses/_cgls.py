"""CGLS: conjugate gradients on the normal equations of a least-squares fit, matrix-free.

The band-fitted dual certificates (`nsjax.losses._hinge_certificate` for the binary hinge,
`nsjax.losses._max_affine_certificate` for the multiclass and multilabel hinge) fit the dual
coefficients of the examples near a kink to the optimality condition ∇(λΩ)(w) + Xᵀu = 0 of
Yu et al. (2010): eq. 21 for the binary hinge, eqs. 38–39 and 53 for K classes. That is a
least-squares problem min_z ‖A z − b‖² with A = Xᵀ (the dual map) restricted to the free
coefficients; CGLS solves it with one product by A and one by Aᵀ per iteration, in a
bounded `lax.while_loop` (jit- and vmap-able; arrays of any shape, inner products by
`jnp.vdot`).

References: see docs/references.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

#: CGLS stops where ‖Aᵀr‖ has fallen to FLOOR · eps of its start. Near 1 · eps a fit that
#: has converged to rounding meets the floor or not by the rounding of its products (the
#: same X dense or sparse is compiled differently), and one that misses it runs on rounding
#: noise and moves the certificate; 16 · eps leaves a margin.
FLOOR = 16.0


def cgls(A, At, z0, r0, iterations):
    """Run CGLS on min_z ‖A z − b‖² from z0, where r0 = b − A z0 is given.

    Stops after ``iterations`` iterations, or where the normal-equation residual ‖Aᵀr‖ has
    fallen to `FLOOR` · eps times its start (rounding level: past that the ratios below
    are 0/0 in the making, and the steps follow rounding noise); an iteration with a zero
    curvature ‖A p‖² leaves z unchanged.

    Args:
        A: z ↦ A z (linear).
        At: r ↦ Aᵀ r, its adjoint.
        z0: the starting point.
        r0: the residual b − A z0.
        iterations: the cap on iterations (a Python int).

    Returns:
        (z, number of iterations taken): each iteration costs one product by A and one by
        Aᵀ; the start costs one by Aᵀ.

    Example:
        >>> import jax.numpy as jnp
        >>> from nsjax.losses._cgls import cgls
        >>> M = jnp.array([[2.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); b = jnp.array([2.0, 1.0, 2.0])
        >>> z, steps = cgls(lambda z: M @ z, lambda r: M.T @ r, jnp.zeros(2), b, 10)
        >>> [round(float(v), 12) for v in z], int(steps)
        ([1.0, 1.0], 2)
    """
    s = At(r0)
    gamma0 = jnp.vdot(s, s)
    floor = (FLOOR * jnp.finfo(gamma0.dtype).eps) ** 2 * gamma0

    def step(c):
        z, res, s, p, gamma, it = c
        q = A(p)
        qq = jnp.vdot(q, q)
        live = (gamma > floor) & (qq > 0)
        alpha = jnp.where(live, gamma / jnp.where(live, qq, 1.0), 0.0)
        z, res = z + alpha * p, res - alpha * q
        s = At(res)
        gamma_new = jnp.vdot(s, s)
        beta = jnp.where(live, gamma_new / jnp.where(live, gamma, 1.0), 0.0)
        return z, res, s, jnp.where(live, s + beta * p, 0.0 * p), gamma_new, it + 1

    def running(c):
        return (c[5] < iterations) & (c[4] > floor)

    init = (z0, r0, s, s, gamma0, jnp.zeros((), jnp.int32))
    out = jax.lax.while_loop(running, step, init)
    return out[0], out[5]

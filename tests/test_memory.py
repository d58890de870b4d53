"""Quasi-Newton memories: B v in both forms of `LBFGSMemory` against the BFGS recursion."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nsjax.solvers.memory import LBFGSMemory


def bfgs_reference(pairs, v, scaling):
    """B v from the inverse BFGS update applied to the pairs, oldest first, from B₀ = γI
    (γ = sᵀy / yᵀy of the newest pair): the matrix the L-BFGS forms must reproduce."""
    d = v.size
    if pairs and scaling:
        s, y = pairs[-1]
        gamma = (s @ y) / (y @ y)
    else:
        gamma = 1.0
    B = gamma * np.eye(d)
    for s, y in pairs:
        rho = 1.0 / (s @ y)
        V = np.eye(d) - rho * np.outer(y, s)
        B = V.T @ B @ V + rho * np.outer(s, s)
    return (B @ v.ravel()).reshape(v.shape)


@pytest.mark.parametrize("form", ["two-loop", "compact"])
@pytest.mark.parametrize("shape, scaling", [((7,), True), ((4, 3), True), ((6,), False)])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lbfgs_apply_equals_the_bfgs_recursion(form, shape, scaling, dtype):
    # 23 offered pairs into 5 slots: the ring wraps several times, some pairs are refused
    # (accept = False, or negative curvature) and the memory is reset once; after each
    # offer B v must match the dense recursion over the pairs the memory should hold.
    rng = np.random.default_rng(sum(shape) + scaling)
    memory = LBFGSMemory(5, scaling=scaling, form=form)
    mem = memory.init(jnp.zeros(shape, dtype))
    # Jitted, and eagerly for one shape (each op dispatched on its own).
    eager = shape == (7,) and dtype == np.float64
    update, apply = ((memory.update, memory.apply) if eager
                     else (jax.jit(memory.update), jax.jit(memory.apply)))
    held = []
    for k in range(23):
        s = rng.normal(size=shape)
        y = s + 0.5 * rng.normal(size=shape)
        accept = k % 7 != 3
        if k % 5 == 4:
            y = -s  # sᵀy < 0: refused
        mem, too_small = update(mem, jnp.asarray(s, dtype), jnp.asarray(y, dtype),
                                jnp.asarray(accept))
        kept = accept and s.ravel() @ y.ravel() > 0
        assert bool(too_small) == (s.ravel() @ y.ravel() <= 0)
        if kept:
            held = (held + [(s.ravel(), y.ravel())])[-5:]
        if k == 13:
            mem = memory.reset(mem, jnp.asarray(True))
            held = []
        v = rng.normal(size=shape)
        Bv = np.asarray(apply(mem, jnp.asarray(v, dtype)))
        assert Bv.dtype == dtype
        expected = bfgs_reference([(np.asarray(s, dtype).astype(float),
                                    np.asarray(y, dtype).astype(float)) for s, y in held],
                                  v, scaling)
        tol = 1e-10 if dtype == np.float64 else 2e-4
        np.testing.assert_allclose(Bv, expected, rtol=tol, atol=tol * np.abs(expected).max())


def test_auto_form_is_the_two_loop_on_cpus_and_compact_elsewhere():
    # "auto" as lowered for a GPU (no GPU needed to lower) and for the CPU: the two-loop is
    # a loop (a while in the program), the compact form a triangular solve.
    memory = LBFGSMemory(5)
    w = jax.ShapeDtypeStruct((8,), jnp.float32)
    mem = jax.eval_shape(memory.init, w)
    traced = jax.jit(memory.apply).trace(mem, w)
    for platform, compact in (("cuda", True), ("cpu", False)):
        program = traced.lower(lowering_platforms=(platform,)).as_text()
        assert ("triangular_solve" in program) == compact, platform
        assert ("stablehlo.while" in program) == (not compact), platform


def test_bad_form_is_refused():
    with pytest.raises(ValueError, match="form must be"):
        LBFGSMemory(5, form="three-loop")

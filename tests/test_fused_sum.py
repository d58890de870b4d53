"""The fused sum (`nsjax.testing.fused_sum`): jnp.sum's values and derivatives, in one pass
with what feeds it on CPUs."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from nsjax.testing import fused_sum


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_sum_is_the_sum_along_each_axis(dtype):
    x = np.random.default_rng(0).standard_normal((7, 33, 3)).astype(dtype)
    exact = x.astype(np.float64)
    for axis in (0, 1, 2, -1):
        got = np.asarray(jax.jit(fused_sum, static_argnums=1)(jnp.asarray(x), axis))
        assert got.dtype == dtype
        want = exact.sum(axis=axis)
        scale = np.abs(exact).sum(axis=axis)
        assert np.all(np.abs(got - want) <= 8 * np.finfo(dtype).eps * scale)


def test_fused_sum_differentiates_as_the_sum_and_vmaps():
    x = jnp.asarray(np.random.default_rng(1).standard_normal((5, 6)))

    def f(s):
        return lambda x: jnp.sum(jnp.sin(s(x * x, 1)) ** 2)

    grad = jax.grad(f(fused_sum))(x)
    want = jax.grad(f(lambda a, axis: jnp.sum(a, axis=axis)))(x)
    np.testing.assert_allclose(grad, want, rtol=1e-13)
    np.testing.assert_allclose(jax.vmap(lambda r: fused_sum(r, 0))(x), x.sum(axis=1),
                               rtol=1e-13)


def test_a_gathered_row_sum_is_one_loop_on_cpus():
    """The reason for `fused_sum`: XLA's CPU backend must not hand the sum to YNNPACK
    (which would write the gathered values out first). If a jaxlib rewrites the reducer
    back to a plain add, this fails and the products are slower again."""
    cpu = jax.devices("cpu")[0]
    value, index, v = (jax.device_put(a, cpu) for a in (
        np.ones((4096, 16), np.float32), np.zeros((4096, 16), np.int32), np.ones(8192, np.float32)))
    hlo = jax.jit(lambda value, index, v: fused_sum(value * v[index], 1)).lower(
        value, index, v).compile().as_text()
    assert "ynn" not in hlo.lower()
    assert "gather" in hlo  # and the gather is fused into the sum's loop:
    fusions = [line for line in hlo.splitlines() if " fusion(" in line and "ENTRY" not in line]
    assert not any("gather_fusion" in line and "f32[4096,16]" in line for line in fusions)

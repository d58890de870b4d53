"""nsjax inside the user's own JAX code: solve under jit and vmap, problems built from
traced arrays, batches of same-shape problems (solve_batch)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from reference import random_binary

import nsjax
from nsjax import RESULTS

HINGE, L2 = nsjax.losses.Hinge(), nsjax.regularizers.L2
SOLVER = nsjax.solvers.BMRM()
# A small bundle keeps the batched QP cheap: under vmap every lane pays for every branch.
BATCH_SOLVER = nsjax.solvers.BMRM(capacity=16, qp_iterations=50)


def _data(seed, n=40, d=5):
    X, y, _ = random_binary(seed, n, d)
    return X, np.where(y > 0, 1.0, -1.0)


def test_solve_under_jit_equals_solve():
    X, y = _data(0)
    prob = nsjax.Problem(HINGE, L2(0.1), X, y)
    ref = nsjax.solve(prob, SOLVER, tol=1e-9)
    sol = jax.jit(lambda p: nsjax.solve(p, SOLVER, tol=1e-9))(prob)
    np.testing.assert_allclose(np.asarray(sol.w), np.asarray(ref.w), rtol=1e-10, atol=1e-12)
    assert sol.result.dtype == jnp.int32 and int(sol.result) == RESULTS.successful
    with pytest.raises(ValueError, match="throw=True"):
        jax.jit(lambda p: nsjax.solve(p, SOLVER, throw=True).w)(prob)


def test_problem_built_from_traced_arrays():
    X, y = _data(1)
    ref = nsjax.solve(nsjax.Problem(HINGE, L2(0.1), X, y), SOLVER, tol=1e-9)

    @jax.jit
    def fit(X, y, lam):
        prob = nsjax.Problem(HINGE, L2(lam), X, y, classes=(-1.0, 1.0))
        return nsjax.solve(prob, SOLVER, tol=1e-9).w

    np.testing.assert_allclose(np.asarray(fit(X, y, 0.1)), np.asarray(ref.w), rtol=1e-10,
                               atol=1e-12)
    with pytest.raises(ValueError, match="classes="):
        jax.jit(lambda X, y: nsjax.Problem(HINGE, L2(0.1), X, y).X.dense)(X, y)
    # Raw labels are encoded by comparison with classes, traced or not.
    y01 = (y > 0).astype(float)
    fit01 = jax.jit(lambda X, y: nsjax.solve(
        nsjax.Problem(HINGE, L2(0.1), X, y, classes=(0.0, 1.0)), SOLVER, tol=1e-9).w)
    np.testing.assert_allclose(np.asarray(fit01(X, y01)), np.asarray(ref.w), rtol=1e-10,
                               atol=1e-12)
    # Concrete labels outside classes, and shapes even under tracing, are refused.
    with pytest.raises(ValueError, match="outside classes"):
        nsjax.Problem(HINGE, L2(0.1), X, y, classes=(0, 1))
    with pytest.raises(ValueError, match="1-D labels"):
        jax.jit(lambda X, y: nsjax.Problem(HINGE, L2(0.1), X, y, classes=(0, 1)).y)(
            X, np.stack([y01, y01], 1))
    with pytest.raises(ValueError, match="scalar"):
        jax.jit(lambda X, y, lam: nsjax.Problem(HINGE, L2(lam), X, y, classes=(0, 1)).y)(
            X, y01, np.ones(2))


def test_vmap_over_16_stacked_problems_equals_the_loop():
    probs = [nsjax.Problem(HINGE, L2(0.1), *_data(seed)) for seed in range(16)]
    batch = nsjax.solve_batch(probs, BATCH_SOLVER, tol=1e-9)
    stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *probs)
    vmapped = jax.vmap(lambda p: nsjax.solve(p, BATCH_SOLVER, tol=1e-9))(stacked)
    assert batch.w.shape == vmapped.w.shape == (16, 5)
    for i, prob in enumerate(probs):
        one = nsjax.solve(prob, BATCH_SOLVER, tol=1e-9)
        for sols in (batch, vmapped):
            # Batched products round differently; both runs are certified.
            slack = float(sols.gap[i]) + float(one.gap) + 1e-12
            assert abs(float(sols.value[i]) - float(one.value)) <= slack <= 1e-8
            assert int(sols.result[i]) == RESULTS.successful


def test_solve_batch_refuses_mixed_problems():
    a = nsjax.Problem(HINGE, L2(0.1), *_data(0))
    b = nsjax.Problem(nsjax.losses.Logistic(), L2(0.1), *_data(1))
    c = nsjax.Problem(HINGE, L2(0.1), *_data(2, n=41))
    d = nsjax.Problem(HINGE, L2(0.1), *_data(3), dtype=np.float32)
    for other in (b, c, d):
        with pytest.raises(ValueError, match="problems\\[1\\]"):
            nsjax.solve_batch([a, other], SOLVER)
    with pytest.raises(ValueError, match="lam > 0"):  # every member is checked
        nsjax.solve_batch([a, a.with_strength(0.0)], SOLVER)
    with pytest.raises(ValueError, match="stacked dense"):
        nsjax.solve_batch(a, SOLVER)
    # Label values do not matter: {0, 1} and {-1, 1} problems batch (and compile) together.
    e = nsjax.Problem(HINGE, L2(0.1), _data(4)[0], _data(4)[1] > 0)
    assert nsjax.solve_batch([a, e], SOLVER).w.shape == (2, 5)
    with pytest.raises(ValueError, match="empty"):
        nsjax.solve_batch([], SOLVER)


def test_encoded_labels_for_every_label_kind():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = np.arange(12) % 3
    names = np.array(list("abc"))[y]
    ref = nsjax.Problem(nsjax.losses.MulticlassHinge(), L2(0.1), X, names)
    given = nsjax.Problem(nsjax.losses.MulticlassHinge(), L2(0.1), X, names,
                          classes=("a", "b", "c"))
    assert given.classes == ref.classes and given.w_shape == (3, 3)
    np.testing.assert_array_equal(np.asarray(given.y), np.asarray(ref.y))
    # Traced labels, and classes in an order of the user's choosing.
    traced = jax.jit(lambda X, y: nsjax.Problem(nsjax.losses.MulticlassHinge(), L2(0.1), X, y,
                                                classes=(20, 10, 30)).y)(X, 10 * (y + 1))
    np.testing.assert_array_equal(np.asarray(traced), np.array([1, 0, 2])[y])
    with pytest.raises(ValueError, match="outside classes"):
        nsjax.Problem(nsjax.losses.MulticlassHinge(), L2(0.1), X, y + 1, classes=(0, 1, 2))
    with pytest.raises(ValueError, match="0/1 mask"):
        nsjax.Problem(nsjax.losses.MultilabelHinge(), L2(0.1), X, np.eye(4)[y % 4],
                      classes=(0, 1, 2))
    mask = np.eye(3, dtype=bool)[y]
    ml = jax.jit(lambda X, Y: nsjax.Problem(nsjax.losses.MultilabelHinge(), L2(0.1), X, Y,
                                            classes=(0, 1, 2)).objective(jnp.ones((3, 3))))
    plain = nsjax.Problem(nsjax.losses.MultilabelHinge(), L2(0.1), X, mask.astype(int))
    assert float(ml(X, mask)) == pytest.approx(float(plain.objective(jnp.ones((3, 3)))))

"""Hostile input (issue 9, item 8): malformed or extreme arguments to the public API.

Every case either is refused early, with a ValueError or TypeError whose message names the
argument (and before anything is compiled), or gives the documented result. Values are
checked as they will be used: after the cast to the problem's dtype and the summing of
duplicate sparse entries, so data that is finite as given but overflows there is refused.

One tiny shape (8 x 3) and one cheap solver (the toy averaged subgradient method) keep the
compiled programs few; most cases never compile.
"""

import bz2
import dataclasses
import gzip
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from jax.experimental import sparse as jsparse
from toy_solver import AveragedSubgradient

import nsjax
from nsjax import RESULTS, Problem
from nsjax.problem import MAX_STEPS, max_abs_entry, max_strength
from nsjax.programs import compiled_programs

HINGE, MC, ML = nsjax.losses.Hinge(), nsjax.losses.MulticlassHinge(), nsjax.losses.MultilabelHinge
L2 = nsjax.regularizers.L2
TOY = AveragedSubgradient()
STEPS = 3  # every solve here runs 3 steps: one compiled program per dtype and loss

_rng = np.random.default_rng(0)
X = _rng.normal(size=(8, 3))
Y = np.array([0, 1] * 4)
Y3 = np.arange(8) % 3
LISTS = [[0], [1, 2], [2], [0, 1], [1], [2, 0], [0], [1]]


def problem(**change):
    return Problem(**(dict(loss=HINGE, reg=L2(0.1), X=X, y=Y) | change))


PROB = problem()
PROB32 = problem(dtype=jnp.float32)
PROB_MC = Problem(MC, L2(0.1), X, Y3)


def _compiled():
    return compiled_programs()


def _hand_built(D, **change):
    """A DesignMatrix changed by hand: the dataclass constructor checks nothing."""
    return dataclasses.replace(D, **change)


DENSE = nsjax.DesignMatrix.from_any(X)
SPARSE = nsjax.DesignMatrix.from_any(sp.csr_matrix(X))


class NotFrozen(nsjax.solvers.Solver):
    def init(self, problem, w0):
        return nsjax.solvers.Core.start(problem, w0, matvecs=1)

    def step(self, problem, state):
        return state


def _bcoo(M):
    """A BCOO built from its parts (BCOO.fromdense compiles a program)."""
    coo = sp.coo_matrix(M)
    return jsparse.BCOO((jnp.asarray(coo.data), jnp.asarray(np.stack([coo.row, coo.col], 1))),
                        shape=coo.shape)


def _duplicates(values, dtype=None):
    """COO with two entries at (0, 0), summed when converted."""
    M = sp.coo_matrix((np.asarray(values), ([0] * len(values), [0] * len(values))), shape=(8, 3))
    return problem(X=M, dtype=dtype)


# (build, error, message pattern): every pattern names the argument at fault.
REFUSED = [
    # -- X: kind, shape, dtype -----------------------------------------------------------
    pytest.param(lambda: problem(X=X + 1j), TypeError, r"X is complex", id="X-complex"),
    pytest.param(lambda: problem(X=sp.csr_matrix(X + 1j)), TypeError, r"X is complex",
                 id="X-sparse-complex"),
    pytest.param(lambda: problem(X=jnp.asarray(X) * 1j), TypeError, r"X is complex",
                 id="X-jax-complex"),
    pytest.param(lambda: problem(X=_bcoo(X + 1j)), TypeError, r"X is complex",
                 id="X-bcoo-complex"),
    pytest.param(lambda: problem(X=X.astype(object)), TypeError, r"X has dtype object",
                 id="X-object"),
    pytest.param(lambda: problem(X=X.astype(str)), TypeError, r"X must be numeric",
                 id="X-strings"),
    pytest.param(lambda: problem(X=X[:, 0]), ValueError, r"X must be 2-D", id="X-1d"),
    pytest.param(lambda: problem(X=X[None]), ValueError, r"X must be 2-D", id="X-3d"),
    pytest.param(lambda: problem(X=3.0), ValueError, r"X must be 2-D", id="X-scalar"),
    pytest.param(lambda: problem(X=None), ValueError, r"X must be 2-D", id="X-None"),
    pytest.param(lambda: problem(X=[[1.0, 2.0], [3.0]] * 4), ValueError, r"X could not be read",
                 id="X-ragged-list"),
    pytest.param(lambda: problem(X=np.ones((0, 3)), y=[]), ValueError, r"X is empty",
                 id="X-no-rows"),
    pytest.param(lambda: problem(X=np.ones((8, 0))), ValueError, r"X is empty", id="X-no-cols"),
    pytest.param(lambda: problem(X=sp.csr_matrix((0, 3)), y=[]), ValueError, r"X is empty",
                 id="X-sparse-empty"),
    pytest.param(lambda: problem(X=jsparse.BCOO((jnp.asarray(X), jnp.arange(8)[:, None]),
                                                shape=(8, 3))),  # one dense dimension
                 ValueError, r"X as a BCOO", id="X-bcoo-dense-dims"),
    pytest.param(lambda: problem(dtype=jnp.float16), ValueError, r"dtype must be float32",
                 id="dtype-float16"),
    pytest.param(lambda: problem(dtype=np.int32), ValueError, r"dtype must be float32",
                 id="dtype-int"),
    pytest.param(lambda: problem(dtype="fast"), TypeError, r"dtype must be float32",
                 id="dtype-junk"),
    # -- X: values as held (after the cast, duplicates summed) ----------------------------
    pytest.param(lambda: problem(X=np.where(X > 1, np.nan, X)), ValueError,
                 r"X contains \d+ NaN or inf", id="X-nan"),
    pytest.param(lambda: problem(X=np.where(X > 1, -np.inf, X)), ValueError,
                 r"X contains \d+ NaN or inf", id="X-inf"),
    pytest.param(lambda: problem(X=sp.csr_matrix(np.where(X > 1, np.nan, X))), ValueError,
                 r"X contains \d+ NaN or inf", id="X-sparse-nan"),
    pytest.param(lambda: problem(X=X * 1e200), ValueError, r"X has entries up to 2.*e\+200",
                 id="X-times-1e200"),
    pytest.param(lambda: problem(X=X * 1e19, dtype=jnp.float32), ValueError,
                 r"X has entries up to .* in float32", id="X-float32-beyond-limit"),
    pytest.param(lambda: problem(X=X * 1e39, dtype=jnp.float32), ValueError,
                 r"X contains \d+ NaN or inf entries as held in float32",
                 id="X-overflows-float32-cast"),
    pytest.param(lambda: _duplicates([1e308, 1e308]), ValueError,
                 r"X contains 1 NaN or inf entries", id="X-sparse-duplicates-sum-to-inf"),
    pytest.param(lambda: _duplicates([3e38, 3e38], jnp.float32), ValueError,
                 r"X contains 1 NaN or inf entries as held in float32",
                 id="X-sparse-duplicates-overflow-float32"),
    pytest.param(lambda: problem(X=_hand_built(DENSE, dense=jnp.full((8, 3), jnp.nan))),
                 ValueError, r"X contains 24 NaN", id="X-hand-built-nan"),
    pytest.param(lambda: problem(X=_hand_built(DENSE, dense=jnp.ones((8, 4)))), ValueError,
                 r"X.dense has shape \(8, 4\)", id="X-hand-built-shape"),
    pytest.param(lambda: problem(X=_hand_built(DENSE, dense=jnp.ones((8, 3), jnp.int32))),
                 ValueError, r"X.dense must hold float32 or float64", id="X-hand-built-int"),
    pytest.param(lambda: problem(X=_hand_built(DENSE, dense=None)), ValueError,
                 r"X holds no data", id="X-hand-built-empty"),
    pytest.param(lambda: problem(X=_hand_built(SPARSE, by_row=_hand_built(
        SPARSE.by_row, index=SPARSE.by_row.index + 5))), ValueError,
        r"X.by_row.index holds indices outside \[0, 3\)", id="X-hand-built-index"),
    pytest.param(lambda: problem(X=_hand_built(SPARSE, by_col=nsjax.DesignMatrix.from_any(
        sp.csr_matrix(2 * X)).by_col)), ValueError, r"X.by_row and X.by_col hold different",
        id="X-hand-built-rows-differ-from-columns"),
    pytest.param(lambda: problem(X=nsjax.DesignMatrix.from_any(sp.csr_matrix(
        np.where(X > 1, np.nan, X)))), ValueError, r"X contains \d+ NaN",
        id="X-hand-built-sparse-nan"),
    # -- y and classes ---------------------------------------------------------------------
    pytest.param(lambda: problem(y=Y[:7]), ValueError, r"X has 8 rows but y has 7",
                 id="y-length"),
    pytest.param(lambda: problem(y=np.ones(8)), ValueError, r"two classes in y; found 1",
                 id="y-one-class"),
    pytest.param(lambda: problem(y=Y3), ValueError, r"two classes in y; found 3",
                 id="y-three-classes-binary-loss"),
    pytest.param(lambda: problem(y=[0, 1, 0, 1, None, 1, 0, 1]), ValueError,
                 r"y\[4\] is None", id="y-None-label"),
    pytest.param(lambda: problem(y=[1, "a"] * 4), ValueError,
                 r"y mixes label types: y\[0\] = 1 \(number\) and y\[1\] = 'a' \(str\)",
                 id="y-mixed-types"),
    pytest.param(lambda: problem(y=np.array([1, "a"] * 4, dtype=object)), ValueError,
                 r"y mixes label types", id="y-mixed-types-object-array"),
    pytest.param(lambda: problem(y=np.where(Y == 1, 1.0, np.nan)), ValueError,
                 r"y contains NaN", id="y-nan"),
    pytest.param(lambda: problem(y=Y[:, None]), ValueError,
                 r"y must be 1-D .* got shape \(8, 1\).*y.ravel\(\)", id="y-column-vector"),
    pytest.param(lambda: problem(y=None), ValueError, r"needs labels y", id="y-None"),
    pytest.param(lambda: problem(y=1), ValueError, r"y must be 1-D", id="y-scalar"),
    pytest.param(lambda: problem(y=[[0], [1, 0]] * 4), ValueError, r"y must be 1-D",
                 id="y-ragged"),
    pytest.param(lambda: problem(y=sp.csr_matrix(Y)), ValueError, r"y must be 1-D",
                 id="y-sparse"),
    pytest.param(lambda: problem(classes=(0,)), ValueError, r"two or more classes",
                 id="classes-one"),
    pytest.param(lambda: problem(classes=(1, 1)), ValueError, r"classes must be distinct",
                 id="classes-repeated"),
    pytest.param(lambda: problem(classes="01"), TypeError, r"classes must be a sequence",
                 id="classes-str"),
    pytest.param(lambda: problem(classes=2), TypeError, r"classes must be a sequence",
                 id="classes-int"),
    pytest.param(lambda: problem(classes=(0, None)), ValueError, r"classes\[1\] is None",
                 id="classes-None"),
    pytest.param(lambda: problem(classes=(-1, 1)), ValueError,
                 r"y holds 4 labels outside classes=\(-1, 1\)", id="y-outside-classes"),
    pytest.param(lambda: Problem(MC, L2(0.1), X, np.zeros(8)), ValueError,
                 r"at least two classes in y", id="y-multiclass-one-class"),
    pytest.param(lambda: Problem(ML(), L2(0.1), X, LISTS[:7] + [[7]], classes=(0, 1, 2)),
                 ValueError, r"y\[7\] holds label 7, outside classes",
                 id="y-multilabel-out-of-range"),
    pytest.param(lambda: Problem(ML(), L2(0.1), X, np.eye(8, 3) * 2 + 1), ValueError,
                 r"multilabel y as a dense matrix must hold only 0 and 1",
                 id="y-multilabel-not-0-1"),
    pytest.param(lambda: Problem(ML(), L2(0.1), X, sp.csr_matrix(np.eye(8, 3) * 2)),
                 ValueError, r"sparse indicator matrix must hold only 0 and 1",
                 id="y-multilabel-sparse-not-0-1"),
    pytest.param(lambda: Problem(ML(), L2(0.1), X, LISTS[:7] + [[]]), ValueError,
                 r"1 examples have no label", id="y-multilabel-empty-row"),
    pytest.param(lambda: Problem(ML(), L2(0.1), X, LISTS[:7] + [[None]]), ValueError,
                 r"y's labels\[\d+\] is None", id="y-multilabel-None"),
    pytest.param(lambda: Problem(ML(), L2(0.1), X, LISTS[:7] + [["a"]]), ValueError,
                 r"y's labels mixes label types", id="y-multilabel-mixed-types"),
    pytest.param(lambda: Problem(ML(), L2(0.1), X, [[0], 1] * 4), ValueError,
                 r"y\[1\] must be a list of labels", id="y-multilabel-row-not-a-list"),
    # -- the multiclass label loss delta -----------------------------------------------------
    pytest.param(lambda: Problem(nsjax.losses.MulticlassHinge(delta=1 - np.eye(2)), L2(0.1),
                                 X, Y3), ValueError, r"delta must have shape \(K, K\) = \(3, 3\)",
                 id="delta-shape"),
    pytest.param(lambda: Problem(nsjax.losses.MulticlassHinge(delta=np.eye(3) - 1), L2(0.1),
                                 X, Y3), ValueError, r"delta must be finite .*>= 0",
                 id="delta-negative"),
    pytest.param(lambda: Problem(nsjax.losses.MulticlassHinge(delta=np.ones((3, 3))), L2(0.1),
                                 X, Y3), ValueError, r"delta .*zero diagonal",
                 id="delta-diagonal"),
    pytest.param(lambda: Problem(nsjax.losses.MulticlassHinge(delta=[["a"] * 3] * 3), L2(0.1),
                                 X, Y3), TypeError, r"delta must be a \(K, K\) array of real",
                 id="delta-strings"),
    pytest.param(lambda: Problem(nsjax.losses.MulticlassHinge(delta=1e39 * (1 - np.eye(3))),
                                 L2(0.1), X, Y3, dtype=jnp.float32), ValueError,
                 r"delta must be finite \(as held in float32\)", id="delta-overflows-float32"),
    pytest.param(lambda: Problem(ML(delta=np.eye(3) - 1), L2(0.1), X, LISTS), ValueError,
                 r"delta must be finite", id="delta-multilabel-negative"),
    # -- lam, reg, loss ----------------------------------------------------------------------
    pytest.param(lambda: problem(reg=L2(-1.0)), ValueError, r"lam must be finite and >= 0",
                 id="lam-negative"),
    pytest.param(lambda: problem(reg=L2(np.inf)), ValueError, r"lam must be finite",
                 id="lam-inf"),
    pytest.param(lambda: problem(reg=L2(np.nan)), ValueError, r"lam must be finite",
                 id="lam-nan"),
    pytest.param(lambda: problem(reg=L2("0.1")), TypeError, r"lam must be a real number",
                 id="lam-str"),
    pytest.param(lambda: problem(reg=L2(None)), TypeError, r"lam must be a real number",
                 id="lam-None"),
    pytest.param(lambda: problem(reg=L2(True)), TypeError, r"lam must be a real number",
                 id="lam-bool"),
    pytest.param(lambda: problem(reg=L2(0.1 + 0j)), TypeError, r"lam must be a real number",
                 id="lam-complex"),
    pytest.param(lambda: problem(reg=L2(np.array([0.1, 0.2]))), ValueError,
                 r"lam must be a scalar; got shape \(2,\).*nsjax.sweep", id="lam-vector"),
    pytest.param(lambda: problem(reg=L2(1e300)), ValueError, r"lam = 1e\+300 is too large",
                 id="lam-1e300"),
    pytest.param(lambda: problem(reg=L2(1e39), dtype=jnp.float32), ValueError,
                 r"lam = 1e\+39 overflows float32", id="lam-overflows-float32"),
    pytest.param(lambda: problem(reg=L2(1e20), dtype=jnp.float32), ValueError,
                 r"lam = 1e\+20 is too large for float32", id="lam-too-large-float32"),
    pytest.param(lambda: problem(reg=L2), TypeError, r"reg must be an instance: pass L2\(lam\)",
                 id="reg-class"),
    pytest.param(lambda: problem(reg=0.1), TypeError, r"reg must be a regularizer",
                 id="reg-number"),
    pytest.param(lambda: problem(reg=HINGE), TypeError, r"reg must implement", id="reg-a-loss"),
    pytest.param(lambda: problem(loss=nsjax.losses.Hinge), TypeError,
                 r"loss must be an instance: pass Hinge\(\)", id="loss-class"),
    pytest.param(lambda: problem(loss=None), TypeError, r"loss must be an nsjax loss",
                 id="loss-None"),
    pytest.param(lambda: problem(loss=L2(0.1)), TypeError, r"loss must be an nsjax loss",
                 id="loss-a-regularizer"),
    pytest.param(lambda: PROB.with_strength(float("nan")), ValueError, r"lam must be finite",
                 id="with_strength-nan"),
    pytest.param(lambda: PROB.with_strength(-1), ValueError, r"lam must be finite and >= 0",
                 id="with_strength-negative"),
    pytest.param(lambda: PROB.with_strength("big"), TypeError, r"lam must be a real number",
                 id="with_strength-str"),
    pytest.param(lambda: PROB32.with_strength(1e39), ValueError, r"lam = 1e\+39 overflows float32",
                 id="with_strength-overflows-float32"),
    pytest.param(lambda: PROB.with_strength([0.1, 0.2]), ValueError, r"lam must be a scalar",
                 id="with_strength-vector"),
    # -- solve: solver, max_steps, tol, w0 -------------------------------------------------
    pytest.param(lambda: nsjax.solve(PROB, nsjax.solvers.SubLBFGS), TypeError,
                 r"solver must be an instance: pass SubLBFGS\(\)", id="solver-class"),
    pytest.param(lambda: nsjax.solve(PROB, "sublbfgs"), TypeError,
                 r"solver must be an nsjax solver", id="solver-str"),
    pytest.param(lambda: nsjax.solve(PROB, NotFrozen()), TypeError,
                 r"NotFrozen must be a frozen dataclass", id="solver-not-frozen"),
    pytest.param(lambda: nsjax.solvers.SubLBFGS(memroy=3), TypeError,
                 r"SubLBFGS has no option 'memroy'. Did you mean 'memory'",
                 id="solver-option-typo"),
    pytest.param(lambda: nsjax.solvers.BMRM(capacity=1), ValueError, r"capacity must be",
                 id="solver-option-value"),
    pytest.param(lambda: nsjax.solvers.BMRM(merge=0), ValueError,
                 r"merge must be a share in \(0, 1\]", id="bmrm-merge-0"),
    pytest.param(lambda: nsjax.solvers.BMRM(merge=1.5), ValueError,
                 r"merge must be a share in \(0, 1\]", id="bmrm-merge-above-1"),
    pytest.param(lambda: nsjax.solve(X, TOY), TypeError, r"problem must be an nsjax.Problem",
                 id="problem-not-a-Problem"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, max_steps=10**9), ValueError,
                 r"max_steps must be between 1 and 10,000,000", id="max_steps-1e9"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, max_steps=0), ValueError,
                 r"max_steps must be between 1", id="max_steps-0"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, max_steps=2.5), TypeError,
                 r"max_steps must be an int", id="max_steps-float"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, max_steps=True), TypeError,
                 r"max_steps must be an int", id="max_steps-bool"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, max_steps="100"), TypeError,
                 r"max_steps must be an int", id="max_steps-str"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, tol=-1e-6), ValueError,
                 r"tol must be finite and >= 0", id="tol-negative"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, tol=np.inf), ValueError, r"tol must be finite",
                 id="tol-inf"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, tol=np.nan), ValueError, r"tol must be finite",
                 id="tol-nan"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, tol="1e-6"), TypeError,
                 r"tol must be a real number", id="tol-str"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, tol=None), TypeError,
                 r"tol must be a real number", id="tol-None"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, tol=[1e-6]), ValueError,
                 r"tol must be a scalar", id="tol-list"),
    pytest.param(lambda: nsjax.solve(PROB32, TOY, tol=1e39), ValueError,
                 r"tol must be finite and >= 0 in float32", id="tol-overflows-float32"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, w0=np.ones(4)), ValueError,
                 r"w0 must have shape \(3,\)", id="w0-shape"),
    pytest.param(lambda: nsjax.solve(PROB_MC, TOY, w0=np.ones(3)), ValueError,
                 r"w0 must have shape \(3, 3\)", id="w0-shape-multiclass"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, w0=[0.0, np.nan, 0.0]), ValueError,
                 r"w0 contains 1 NaN or inf", id="w0-nan"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, w0=np.full(3, 1e200)), ValueError,
                 r"w0 gives J\(w0\) = inf", id="w0-1e200"),
    pytest.param(lambda: nsjax.solve(PROB32, TOY, w0=np.full(3, 1e39)), ValueError,
                 r"w0 contains 3 NaN or inf entries as held in float32",
                 id="w0-overflows-float32"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, w0=np.ones(3) * 1j), TypeError,
                 r"w0 must be an array of real numbers.*complex", id="w0-complex"),
    pytest.param(lambda: nsjax.solve(PROB, TOY, w0="zeros"), TypeError,
                 r"w0 must be an array of real numbers", id="w0-str"),
    # -- sweep and solve_batch -------------------------------------------------------------
    pytest.param(lambda: nsjax.sweep(PROB, [], TOY), ValueError, r"lams must be a non-empty",
                 id="sweep-empty"),
    pytest.param(lambda: nsjax.sweep(PROB, [0.1, -0.1], TOY), ValueError,
                 r"lams\[1\] must be finite and >= 0", id="sweep-negative"),
    pytest.param(lambda: nsjax.sweep(PROB, [0.1, np.nan], TOY), ValueError,
                 r"lams\[1\] must be finite", id="sweep-nan"),
    pytest.param(lambda: nsjax.sweep(PROB, [[0.1, 0.2]], TOY), ValueError,
                 r"lams must be a non-empty 1-D", id="sweep-2d"),
    pytest.param(lambda: nsjax.sweep(PROB, [0.1], TOY, max_steps=10**8), ValueError,
                 r"max_steps must be between", id="sweep-max_steps"),
    pytest.param(lambda: nsjax.solve_batch([PROB, problem(X=np.ones((9, 3)), y=[0, 1] * 4 + [0])],
                                           TOY), ValueError, r"problems\[1\] differs",
                 id="batch-shapes"),
    pytest.param(lambda: nsjax.solve_batch([PROB, PROB32], TOY), ValueError,
                 r"problems\[1\] differs", id="batch-dtypes"),
    pytest.param(lambda: nsjax.solve_batch([], TOY), ValueError, r"problems is empty",
                 id="batch-empty"),
    pytest.param(lambda: nsjax.solve_batch([PROB, X], TOY), TypeError,
                 r"problems\[1\] must be an nsjax.Problem", id="batch-not-a-Problem"),
    pytest.param(lambda: nsjax.solve_batch(PROB, TOY), ValueError,
                 r"single Problem passed to solve_batch must hold stacked", id="batch-unstacked"),
    pytest.param(lambda: nsjax.solve_batch([PROB, PROB], TOY, w0=np.ones(2)), ValueError,
                 r"w0 must have shape", id="batch-w0"),
    # -- data set helpers --------------------------------------------------------------------
    pytest.param(lambda: nsjax.datasets.load_svmlight(None), TypeError, r"path must be a str",
                 id="svmlight-path-None"),
    pytest.param(lambda: nsjax.datasets.synthetic_sparse(10, 10, "dense"), TypeError,
                 r"density must be a real number", id="synthetic-density-str"),
    pytest.param(lambda: nsjax.datasets.synthetic_sparse(10, 10, 0.1, noise=0.7), ValueError,
                 r"noise must be in", id="synthetic-noise"),
    pytest.param(lambda: nsjax.datasets.synthetic_sparse(10, 10, 0.1, n_classes=1), ValueError,
                 r"n_classes must be >= 2", id="synthetic-one-class"),
    pytest.param(lambda: nsjax.datasets.synthetic_multilabel(10, 5, 1), ValueError,
                 r"n_labels must be >= 2", id="multilabel-one-label"),
    pytest.param(lambda: nsjax.datasets.hadamard_problem(3, 0.1), ValueError,
                 r"d must be a power of two", id="hadamard-d"),
    pytest.param(lambda: nsjax.datasets.hadamard_problem(4, 0.1, variant="printed"),
                 ValueError, r"variant must be", id="hadamard-variant"),
    pytest.param(lambda: nsjax.datasets.hadamard_problem(4, -0.1), ValueError,
                 r"lam must be finite and >= 0", id="hadamard-lam"),
]


@pytest.mark.parametrize(("build", "error", "match"), REFUSED)
def test_refused_before_compiling_with_a_message_naming_the_argument(build, error, match):
    before = _compiled()
    with pytest.raises(error, match=match):
        build()
    assert _compiled() == before


def test_at_least_70_hostile_cases():
    assert len(REFUSED) + len(ACCEPTED) + len(SVMLIGHT) >= 70


# -- accepted, with the documented result ------------------------------------------------


def _dense(prob):
    return np.asarray(prob.X.dense)


def _accept_int():
    big = np.array([[2**40 + 3, -(2**53) - 1, 7]] * 8, dtype=np.int64)
    p64, p32 = problem(X=big), problem(X=big, dtype=jnp.float32)
    # Rounded to the nearest float, as numpy casts (never truncated through int32).
    assert p64.dtype == jnp.float64 and p32.dtype == jnp.float32
    np.testing.assert_array_equal(_dense(p64), big.astype(np.float64))
    np.testing.assert_array_equal(_dense(p32), big.astype(np.float32))


def _accept_bool():
    p = problem(X=X > 0)
    assert p.dtype == jnp.float64
    np.testing.assert_array_equal(_dense(p), (X > 0).astype(float))


def _accept_float16():
    half = X.astype(np.float16)
    for given in (half, jnp.asarray(half), jnp.asarray(X, jnp.bfloat16)):
        p = problem(X=given)
        assert p.dtype == jnp.float32  # widened: nothing is computed in half precision
        np.testing.assert_array_equal(_dense(p), np.asarray(given).astype(np.float32))


def _accept_list_of_lists():
    p = problem(X=X.tolist(), y=Y.tolist())
    np.testing.assert_array_equal(_dense(p), X)
    assert p.classes == (0, 1)


def _accept_sparse_formats():
    ref = sp.csr_matrix(X)
    for M in (sp.lil_matrix(X), sp.dok_matrix(X), sp.csc_matrix(X), sp.coo_array(X),
              _bcoo(X)):
        p = problem(X=M)
        assert p.X.is_sparse
        assert abs(p.X.to_scipy() - ref).max() == 0


def _accept_duplicates_summed():
    rows, cols = [0, 0, 3], [1, 1, 2]
    p = problem(X=sp.coo_matrix(([1e308, -1e308, 2.0], (rows, cols)), shape=(8, 3)))
    np.testing.assert_array_equal(p.X.to_scipy().toarray(),
                                  sp.coo_matrix(([2.0], ([3], [2])), shape=(8, 3)).toarray())
    idx = jnp.array([[0, 1], [0, 1], [2, 0]])
    bcoo = jsparse.BCOO((jnp.array([1.5, 2.5, 3.0]), idx), shape=(8, 3))
    np.testing.assert_array_equal(problem(X=bcoo).X.to_scipy().toarray(), bcoo.todense())


def _accept_labels():
    for y, classes in ((np.where(Y == 1, "spam", "ham"), ("ham", "spam")),
                       (Y == 1, (False, True)), ([0.5, 2] * 4, (0.5, 2.0)),
                       (np.array(Y, dtype=object), (0, 1))):
        p = problem(y=y)
        assert p.classes == classes
        np.testing.assert_array_equal(np.asarray(p.y), np.where(Y == 1, 1.0, -1.0))
    # Label lists against given classes, in the given order; equal to the mask.
    p = Problem(ML(), L2(0.1), X, LISTS, classes=(2, 1, 0))
    mask = np.array([[z in row for z in (2, 1, 0)] for row in LISTS])
    np.testing.assert_array_equal(np.asarray(p.y), mask)
    assert p.classes == (2, 1, 0)


def _accept_limits():
    # Exactly at the documented caps: accepted.
    limit = max_abs_entry(jnp.float64, (8, 3))
    problem(X=X / np.abs(X).max() * limit)
    for dt in (jnp.float64, jnp.float32):
        assert float(problem(reg=L2(max_strength(dt)), dtype=dt).lam) <= max_strength(dt)
    assert max_strength(jnp.float32) == pytest.approx(1.8446744e19, rel=1e-6)
    # A huge, nearly empty sparse X needs no dense storage.
    M = sp.csr_matrix(([1.0, -1.0, 2.0], ([0, 1, 999_999], [5, 0, 999_999])),
                      shape=(10**6, 10**6))
    p = problem(X=M, y=np.arange(10**6) % 2)
    assert p.w_shape == (10**6,) and p.X.nnz == 3


def _accept_max_steps_cap():
    # The cap itself passes the checks (nothing is compiled or allocated here).
    from nsjax.testing import check_solve_arguments

    w0 = check_solve_arguments(PROB, [1, 2, 3], np.int64(MAX_STEPS), np.float32(0))
    assert w0.dtype == jnp.float64 and w0.tolist() == [1.0, 2.0, 3.0]


def _accept_traced_inputs():
    # Under jit and vmap the values are unknown: shapes are checked, values are not.
    bad = jnp.asarray(np.where(X > 1, np.nan, X))
    y = jnp.asarray(np.where(Y == 1, 1.0, -1.0))

    def build(X, lam):
        return Problem(HINGE, L2(lam), X, y, classes=(-1.0, 1.0)).X.dense

    assert np.isnan(np.asarray(jax.jit(build)(bad, 0.1))).any()
    out = jax.vmap(build)(jnp.stack([bad, bad]), jnp.array([0.1, -1.0]))
    assert out.shape == (2, 8, 3)
    # Under vmap over λ alone X is concrete, so its values are checked.
    with pytest.raises(ValueError, match="X contains 3 NaN"):
        jax.vmap(build, in_axes=(None, 0))(bad, jnp.array([0.1, -1.0]))
    assert jax.vmap(build, in_axes=(None, 0))(X, jnp.array([0.1, -1.0])).shape == (2, 8, 3)


ACCEPTED = [
    pytest.param(_accept_int, id="X-int64-rounded-not-truncated"),
    pytest.param(_accept_bool, id="X-bool-as-0-1"),
    pytest.param(_accept_float16, id="X-float16-widened-to-float32"),
    pytest.param(_accept_list_of_lists, id="X-list-of-lists"),
    pytest.param(_accept_sparse_formats, id="X-lil-dok-csc-coo-bcoo"),
    pytest.param(_accept_duplicates_summed, id="X-duplicates-summed"),
    pytest.param(_accept_labels, id="y-any-single-type"),
    pytest.param(_accept_limits, id="documented-caps"),
    pytest.param(_accept_max_steps_cap, id="max_steps-cap"),
    pytest.param(_accept_traced_inputs, id="traced-values-pass"),
]


@pytest.mark.parametrize("check", ACCEPTED)
def test_accepted_with_the_documented_result(check):
    check()


def test_label_and_scalar_values_never_recompile():
    """Label values, class values, λ, tol and w0 are data: a problem of the same shapes
    reuses the compiled program whatever their values, Python types or weak types."""
    first = nsjax.solve(PROB, TOY, max_steps=STEPS)
    before = compiled_programs("solve")
    y_text = np.where(Y == 1, "spam", "ham")
    variants = [
        (problem(X=2 * X, y=y_text), {}),
        (problem(reg=L2(np.float32(2.0)), y=[5, 7] * 4), dict(tol=np.float32(1e-3))),
        (problem(reg=L2(jnp.asarray(0.5)), y=Y == 1), dict(tol=jnp.asarray(0.0))),
        (problem(reg=L2(1), X=(10 * X).astype(int), classes=(1, 0)), dict(w0=[0, 1, 0])),
        (PROB.with_strength(3), dict(w0=jnp.ones(3, jnp.float32), tol=1)),
    ]
    for prob, kw in variants:
        sol = nsjax.solve(prob, TOY, max_steps=STEPS, **kw)
        assert float(sol.value) != float(first.value)  # another problem ran
    assert compiled_programs("solve") == before

    mc = Problem(MC, L2(0.1), X, Y3)
    solver = nsjax.solvers.BMRM(capacity=4, qp_iterations=5)
    nsjax.solve(mc, solver, max_steps=STEPS)
    before = compiled_programs("solve")
    relabelled = Problem(MC, L2(0.2), X, np.array(["c", "a", "b"])[Y3[::-1]])
    assert relabelled.classes == ("a", "b", "c")
    nsjax.solve(relabelled, solver, max_steps=STEPS)
    assert compiled_programs("solve") == before


EXTREME = [
    pytest.param(dict(reg=L2(1e-300)), id="lam-1e-300"),
    pytest.param(dict(reg=L2(max_strength(jnp.float64))), id="lam-at-cap"),
    pytest.param(dict(X=X / np.abs(X).max() * max_abs_entry(jnp.float64, (8, 3))),
                 id="X-at-cap"),
    pytest.param(dict(reg=L2(1e-30), dtype=jnp.float32), id="float32-lam-1e-30"),
    pytest.param(dict(X=X * 1e18, dtype=jnp.float32), id="float32-X-1e18"),
]


@pytest.mark.parametrize("change", EXTREME)
def test_extreme_but_accepted_never_give_nan(change):
    """Where an overflow cannot be refused up front (it depends on the iterates), the run
    ends with a finite best iterate and a gap that is a number or inf (no certificate),
    never NaN; a run without success warns."""
    prob = problem(**change)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", nsjax.ConvergenceWarning)
        sol = nsjax.solve(prob, TOY, max_steps=STEPS, tol=1e-6)
    assert np.all(np.isfinite(np.asarray(sol.w))) and np.isfinite(float(sol.value))
    assert not np.isnan(float(sol.gap))
    assert float(sol.value) <= float(prob.value(prob.zeros()))  # never worse than w0 = 0
    warned = any(issubclass(w.category, nsjax.ConvergenceWarning) for w in caught)
    assert warned == (sol.result != RESULTS.successful)
    if sol.result == RESULTS.nonfinite:
        assert float(sol.gap) == np.inf


def test_overflowing_steps_end_nonfinite_with_an_infinite_gap():
    """λ = 1e-300 is valid input, but the first step overflows: documented as
    `RESULTS.nonfinite`, gap inf (no certificate), a warning, and w0 kept."""
    with pytest.warns(nsjax.ConvergenceWarning, match="nonfinite"):
        sol = nsjax.solve(problem(reg=L2(1e-300)), TOY, max_steps=STEPS)
    assert sol.result == RESULTS.nonfinite and float(sol.gap) == np.inf
    assert float(sol.value) == 1.0 and not np.any(np.asarray(sol.w))


# -- svmlight files -------------------------------------------------------------------------

SVMLIGHT = [
    pytest.param("1 1:0.5 2:1\n-1 3\n", r"line 2: '3' has no colon", id="no-colon"),
    pytest.param("1 1:0.5\n# comment\n\nspam 1:3\n", r"line 4: the label 'spam' is not",
                 id="bad-label"),
    pytest.param("1 1:0.5\n-1 a:3\n", r"line 2: 'a:3' is not an integer index",
                 id="bad-index"),
    pytest.param("1 1:0.5\n-1 1:x\n", r"line 2: '1:x' is not an integer index and a number",
                 id="bad-value"),
    pytest.param("1 1:0.5 2:1\n1 2:1\n-1 3:1 2:1\n", r"line 3: feature indices must be "
                 "ascending", id="unsorted-indices"),
]


@pytest.mark.parametrize(("text", "match"), SVMLIGHT)
@pytest.mark.parametrize("suffix", [".txt", ".gz", ".bz2"])
def test_svmlight_errors_name_the_line(tmp_path, text, match, suffix):
    path = tmp_path / f"data{suffix}"
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(suffix, open)
    with opener(path, "wb") as f:
        f.write(text.encode())
    with pytest.raises(ValueError, match=match) as info:
        nsjax.datasets.load_svmlight(path)
    assert str(path.name) in str(info.value)


def test_svmlight_bad_arguments(tmp_path):
    path = tmp_path / "ok.txt"
    path.write_text("1 1:0.5 3:1\n-1 2:2\n")
    X_, y_ = nsjax.datasets.load_svmlight(path)
    assert X_.shape == (2, 3) and y_.tolist() == [1.0, -1.0]
    with pytest.raises(ValueError, match="n_features must be >= 1"):
        nsjax.datasets.load_svmlight(path, n_features=0)
    with pytest.raises(ValueError, match="n_features must be an integer"):
        nsjax.datasets.load_svmlight(path, n_features=2.5)
    with pytest.raises(ValueError, match="n_features was set to 2"):
        nsjax.datasets.load_svmlight(path, n_features=2)
    with pytest.raises(ValueError, match="dtype must be a floating dtype"):
        nsjax.datasets.load_svmlight(path, dtype=np.int32)
    with pytest.raises(FileNotFoundError, match="not found"):
        nsjax.datasets.load_svmlight(tmp_path)  # a directory

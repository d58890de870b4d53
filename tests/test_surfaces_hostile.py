"""Hostile input on the surfaces around the solver (issue 52): overflowing objectives, the
derivatives of a solution, the scikit-learn estimators, `sweep` and `solve_batch` under the
caller's transformations, `Problem.shard`, `nsjax.implicit` and `nsjax.chains`.

Every case is refused early, with an error that names the argument as the user spelled it,
or gives the documented result, checked against an independent value (the closed form of
ridge regression, central differences, the solve of each strength on its own). The
projections, the CLI and the solvers' options have their own files
(test_projections_hostile.py, test_cli_hostile.py, test_options_hostile.py).

Tiny shapes (8 x 3, 40 x 3) and few solvers keep the compiled programs few.
"""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from toy_solver import AveragedSubgradient

import nsjax
from nsjax import RESULTS, Problem
from nsjax.programs import compiled_programs
from nsjax.sklearn import ElasticNet, Lasso, LinearSVC, LogisticRegression
from nsjax.solvers import Core, Solver, solver_options

L2 = nsjax.regularizers.L2
HINGE, LOGISTIC, SQUARED = nsjax.losses.Hinge(), nsjax.losses.Logistic(), nsjax.losses.Squared()

_rng = np.random.default_rng(0)
X = _rng.normal(size=(8, 3))
Y = np.array([0, 1] * 4)
XR = _rng.normal(size=(40, 3))  # a regression set of full column rank
TR = XR @ np.array([1.0, 2.0, 3.0]) + 0.1 * _rng.normal(size=40)


def _compiled():
    return compiled_programs()


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# -- 1. never `successful` on a non-finite J or gap --------------------------------------

OVERFLOWING = [
    pytest.param(lambda: Problem(HINGE, L2(0.1), X, Y, sample_weight=np.full(8, 1e308)),
                 id="weights-1e308"),
    pytest.param(lambda: Problem(SQUARED, L2(0.1), X, np.full(8, 1e200)), id="targets-1e200"),
    pytest.param(lambda: Problem(HINGE, L2(0.1), X, Y, sample_weight=np.full(8, 3e38),
                                 dtype=jnp.float32), id="float32-weights-3e38"),
    pytest.param(lambda: Problem(LOGISTIC, L2(0.1), X, Y, sample_weight=np.full(8, 1e308)),
                 id="logistic-weights-1e308"),
]


@pytest.mark.parametrize("build", OVERFLOWING)
def test_an_objective_that_overflows_at_the_start_ends_nonfinite_with_a_warning(build):
    prob = build()
    with pytest.warns(nsjax.ConvergenceWarning, match=r"J\(w0\) = (inf|nan)"):
        sol = nsjax.solve(prob, max_steps=5)
    assert sol.result == RESULTS.nonfinite
    assert int(sol.num_steps) == 0
    with pytest.raises(RuntimeError, match=r"ended nonfinite: J\(w0\)"):
        nsjax.solve(prob, max_steps=5, throw=True)


@pytest.mark.parametrize("solver", [nsjax.solvers.BMRM(), nsjax.solvers.SubLBFGS(),
                                    AveragedSubgradient()], ids=["BMRM", "SubLBFGS", "toy"])
def test_no_solver_claims_success_on_an_overflowing_start(solver):
    prob = Problem(HINGE, L2(0.1), X, Y, sample_weight=np.full(8, 1e308))
    sol = _quiet(nsjax.solve, prob, solver, max_steps=5)
    assert sol.result == RESULTS.nonfinite and not np.isfinite(float(sol.value))


def test_an_overflowing_start_under_jit_is_a_nonfinite_status():
    prob = Problem(HINGE, L2(0.1), X, Y, sample_weight=np.full(8, 1e308))
    result = jax.jit(lambda p: nsjax.solve(p, max_steps=5).result)(prob)
    assert int(result) == RESULTS.nonfinite


def test_sweep_and_batch_lanes_that_overflow_are_nonfinite():
    prob = Problem(HINGE, L2(0.1), X, Y, sample_weight=np.full(8, 1e308))
    with pytest.warns(nsjax.ConvergenceWarning, match="nonfinite"):
        sols = nsjax.sweep(prob, [0.1, 0.01], max_steps=5)
    assert np.all(np.asarray(sols.result) == RESULTS.nonfinite)
    big = Problem(HINGE, L2(0.1), X, Y, sample_weight=np.full(8, 1e308))
    fine = Problem(HINGE, L2(0.1), X, Y, sample_weight=np.ones(8))
    sols = _quiet(nsjax.solve_batch, [fine, big], nsjax.solvers.BMRM(), max_steps=200)
    assert np.asarray(sols.result).tolist() == [RESULTS.successful, RESULTS.nonfinite]


@solver_options
class _ClaimsSuccess(Solver):
    """A faulty solver: its terminate says `successful` although it has no bound."""

    def init(self, problem, w0):
        return Core.start(problem, w0, matvecs=1)

    def step(self, problem, state):
        return state

    def terminate(self, problem, state, best, tol):
        return jnp.asarray(True), jnp.asarray(RESULTS.successful, jnp.int32)


def test_a_solver_that_claims_success_without_a_finite_gap_is_overruled():
    sol = _quiet(nsjax.solve, Problem(HINGE, L2(0.1), X, Y), _ClaimsSuccess(), max_steps=3)
    assert float(sol.gap) == np.inf
    assert sol.result == RESULTS.nonfinite


# -- 2. derivatives ----------------------------------------------------------------------

def _ridge(lam, solver=None, X=XR, t=TR):
    return nsjax.solve(Problem(SQUARED, L2(lam), X, t), solver, tol=1e-13, max_steps=2000).w


def test_forward_over_reverse_raises():
    def f(scale):
        return _ridge(0.1, X=XR * scale).sum()

    with pytest.raises(NotImplementedError, match="reverse mode, once"):
        jax.hessian(f)(1.0)


def test_reverse_over_reverse_raises():
    with pytest.raises(NotImplementedError, match="second derivatives are not supported"):
        jax.grad(jax.grad(lambda lam: _ridge(lam).sum()))(0.1)


def test_forward_mode_raises():
    with pytest.raises(TypeError, match="forward-mode"):
        jax.jacfwd(lambda lam: _ridge(lam))(0.1)


def test_the_derivative_at_lam_0_matches_the_closed_form_where_it_exists():
    # Ridge at λ = 0 with X of full column rank: w* = (XᵀX)⁻¹Xᵀt, dw*/dλ = −(XᵀX/n)⁻¹ w*.
    solver = nsjax.solvers.SubLBFGS()
    jac = _quiet(jax.jacrev(lambda lam: _ridge(lam, solver)), 0.0)
    w = np.linalg.lstsq(XR, TR, rcond=None)[0]
    np.testing.assert_allclose(jac, -np.linalg.solve(XR.T @ XR / 40, w), rtol=1e-6)


def test_the_hinge_at_lam_0_has_no_derivative():
    def f(lam):
        return nsjax.solve(Problem(HINGE, L2(lam), X, Y), tol=1e-10).w.sum()

    with pytest.raises(ValueError, match="derivative of the solution does not exist"):
        _quiet(jax.grad(f), 0.0)
    assert np.isnan(_quiet(jax.jit(jax.grad(f)), 0.0))


def test_a_singular_system_has_no_derivative():
    # Two equal columns at λ = 0: w*'s split between them is not determined, so d w*_0/dλ
    # does not exist (the system is inconsistent); d(w*_0 + w*_3)/dλ does, the limit
    # λ → 0⁺ of −(H + λI)⁻¹ w*(λ): −H⁺ w* at the minimum-norm w* (H = XᵀX/n).
    Xd = np.hstack([XR, XR[:, :1]])
    solver = nsjax.solvers.SubLBFGS()

    def first(lam):
        return _ridge(lam, solver, X=Xd)[0]

    with pytest.raises(ValueError, match="optimality conditions are singular"):
        _quiet(jax.grad(first), 0.0)
    assert np.isnan(_quiet(jax.jit(jax.grad(first)), 0.0))
    both = _quiet(jax.grad(lambda lam: _ridge(lam, solver, X=Xd)[jnp.array([0, 3])].sum()), 0.0)
    exact = -np.linalg.pinv(Xd.T @ Xd / 40) @ np.linalg.pinv(Xd) @ TR
    np.testing.assert_allclose(both, exact[0] + exact[3], rtol=1e-5)


def test_a_nonfinite_solve_has_no_derivative():
    def f(lam):  # logistic regression on separable data at λ = 0: no minimizer
        return nsjax.solve(Problem(LOGISTIC, L2(lam), X, (X[:, 0] > 0).astype(int)),
                           max_steps=300).w.sum()

    with pytest.raises(ValueError, match="derivative of the solution does not exist"):
        _quiet(jax.grad(f), 0.0)


def test_the_gradient_through_a_sweep_matches_each_solve_and_differences():
    prob = Problem(LOGISTIC, L2(1.0), X, Y)
    lams = jnp.array([0.1, 0.01])
    grad = jax.grad(lambda lams: nsjax.sweep(prob, lams, tol=1e-12).w.sum())(lams)

    def one(lam):
        return nsjax.solve(prob.with_strength(lam), tol=1e-12).w.sum()

    np.testing.assert_allclose(grad, [jax.grad(one)(lam) for lam in lams], rtol=1e-6)
    h = 1e-5
    central = [(one(lam + h) - one(lam - h)) / (2 * h) for lam in lams]
    np.testing.assert_allclose(grad, central, rtol=1e-4)


def test_sweep_under_jit_equals_the_eager_sweep():
    prob = Problem(LOGISTIC, L2(1.0), X, Y)
    lams = np.array([0.1, 0.01])
    jitted = jax.jit(lambda lams: nsjax.sweep(prob, lams, tol=1e-10).w)(lams)
    np.testing.assert_allclose(jitted, nsjax.sweep(prob, lams, tol=1e-10).w, atol=1e-8)


def test_sweep_under_jit_refuses_a_2d_path():
    with pytest.raises(ValueError, match="lams must be a non-empty 1-D array"):
        jax.jit(lambda lams: nsjax.sweep(Problem(HINGE, L2(1.0), X, Y), lams).w)(
            jnp.ones((2, 2)))


def test_a_traced_strength_can_be_sharded():
    mesh = jax.make_mesh((1,), ("rows",))

    def w(lam):
        return nsjax.solve(Problem(LOGISTIC, L2(lam), X, Y).shard(mesh), tol=1e-10).w

    np.testing.assert_allclose(jax.jit(w)(0.1), w(0.1), atol=1e-8)


@pytest.mark.parametrize("args, error, pattern", [
    pytest.param(("problem", np.zeros(3)), TypeError, "problem must be an nsjax.Problem",
                 id="not-a-problem"),
    pytest.param((Problem(HINGE, L2(0.1), X, Y), np.zeros(4)), ValueError,
                 r"w must have the problem's weight shape \(3,\)", id="wrong-shape"),
])
def test_implicit_solution_refuses_bad_arguments(args, error, pattern):
    with pytest.raises(error, match=pattern):
        nsjax.implicit.implicit_solution(*args)


# -- 3. solve, sweep and solve_batch arguments ---------------------------------------------

PROB = Problem(HINGE, L2(0.1), X, Y)


@pytest.mark.parametrize("call, error, pattern", [
    pytest.param(lambda: nsjax.solve(PROB, throw="yes"), TypeError,
                 "throw must be True or False", id="solve-throw-str"),
    pytest.param(lambda: nsjax.solve(PROB, jit="no"), TypeError, "jit must be True or False",
                 id="solve-jit-str"),
    pytest.param(lambda: nsjax.solve_batch(None), TypeError,
                 "problems must be a list of nsjax.Problem", id="batch-None"),
    pytest.param(lambda: nsjax.solve_batch("problems"), TypeError,
                 "problems must be a list of nsjax.Problem", id="batch-str"),
    pytest.param(lambda: nsjax.sweep(PROB, ["a"]), TypeError,
                 r"lams\[0\] must be a real number \(e.g. lams\[0\] = 1e-3\)", id="sweep-str"),
    pytest.param(lambda: nsjax.sweep(PROB, [0.1, np.inf]), ValueError,
                 r"lams\[1\] must be finite", id="sweep-inf"),
])
def test_entry_points_refuse_bad_arguments_before_compiling(call, error, pattern):
    before = _compiled()
    with pytest.raises(error, match=pattern):
        call()
    assert _compiled() == before


# -- 4. the parts' parameters -------------------------------------------------------------

R = nsjax.regularizers


@pytest.mark.parametrize("call, error, pattern", [
    pytest.param(lambda: Problem(LOGISTIC, R.ElasticNet(mu=0.1, lam="x"), X, Y), TypeError,
                 r"lam must be a real number \(e.g. ElasticNet\(..., lam=0.1\)\)",
                 id="ElasticNet-lam-str"),
    pytest.param(lambda: Problem(LOGISTIC, R.ElasticNet(mu=0.1, lam=None), X, Y), TypeError,
                 r"lam must be a real number", id="ElasticNet-lam-None"),
    pytest.param(lambda: Problem(nsjax.losses.Hinge(weights=np.ones(3)), L2(0.1), X, Y),
                 ValueError, r"Hinge\(weights=...\) must be an array of shape \(n,\) = \(8,\)",
                 id="loss-weights-shape"),
    pytest.param(lambda: Problem(nsjax.losses.Hinge(weights=-np.ones(8)), L2(0.1), X, Y),
                 ValueError, r"Hinge\(weights=...\) must be finite and >= 0",
                 id="loss-weights-negative"),
    pytest.param(lambda: Problem(nsjax.losses.Hinge(weights=np.ones(8)), L2(0.1), X, Y,
                                 sample_weight=np.ones(8)),
                 ValueError, r"weights are given twice", id="loss-weights-twice"),
    pytest.param(lambda: nsjax.solve(Problem(HINGE, R.Entropy(0.1, cap=0.1), X, Y)),
                 ValueError, r"cap must be >= 1/d = 0.333", id="Entropy-cap-infeasible"),
])
def test_parts_refuse_bad_parameters_before_compiling(call, error, pattern):
    before = _compiled()
    with pytest.raises(error, match=pattern):
        call()
    assert _compiled() == before


def test_weights_given_on_the_loss_equal_sample_weight():
    c = np.arange(1.0, 9.0)
    on_loss = Problem(nsjax.losses.Hinge(weights=c), L2(0.1), X, Y)
    given = Problem(HINGE, L2(0.1), X, Y, sample_weight=c)
    w = np.array([0.3, -0.2, 0.1])
    assert float(on_loss.objective(w)) == pytest.approx(float(given.objective(w)), rel=1e-14)


# -- 5. the scikit-learn estimators: messages in the user's names --------------------------

Y3 = np.arange(8) % 3

ESTIMATOR_REFUSED = [
    pytest.param(lambda: LinearSVC(C=1e-320).fit(X, Y), ValueError,
                 r"C=1e-320 gives λ = 1/\(C·n_samples\) = inf, too large", id="C-tiny"),
    pytest.param(lambda: LinearSVC(C=1e308, dtype=np.float32).fit(X, Y), ValueError,
                 r"C=1e\+308 gives λ .* which float32 cannot hold", id="C-huge-float32"),
    pytest.param(lambda: LinearSVC(lam=1e200).fit(X, Y), ValueError,
                 r"lam = 1e\+200, too large for float64", id="lam-huge"),
    pytest.param(lambda: ElasticNet(alpha=1e200).fit(X, X[:, 0]), ValueError,
                 r"alpha = 1e\+200, too large", id="alpha-huge"),
    pytest.param(lambda: LinearSVC(max_iter=10**8).fit(X, Y), ValueError,
                 r"max_iter must be an int from 1 to 10,000,000", id="max_iter-huge"),
    pytest.param(lambda: Lasso(max_iter=2.5).fit(X, X[:, 0]), ValueError,
                 r"max_iter must be an int", id="max_iter-float"),
    pytest.param(lambda: LinearSVC(tol=True).fit(X, Y), ValueError, r"tol must be a finite",
                 id="tol-bool"),
    pytest.param(lambda: LogisticRegression(tol=np.inf).fit(X, Y), ValueError,
                 r"tol must be a finite number >= 0", id="tol-inf"),
    pytest.param(lambda: LinearSVC(warm_start="yes").fit(X, Y), ValueError,
                 r"warm_start must be True or False", id="warm_start-str"),
    pytest.param(lambda: LinearSVC(dtype="fast").fit(X, Y), ValueError,
                 r"dtype must be float32, float64 or None; got 'fast'", id="dtype-junk"),
    pytest.param(lambda: LinearSVC(class_weight={0: -1, 1: 1}).fit(X, Y), ValueError,
                 r"class_weight must give every class a finite weight >= 0; got .*-1.* "
                 r"for class .*0", id="class_weight-negative"),
    pytest.param(lambda: LogisticRegression(class_weight={0: np.nan, 1: 1}).fit(X, Y),
                 ValueError, r"class_weight must give every class a finite weight",
                 id="class_weight-nan"),
    pytest.param(lambda: LinearSVC().fit(X, Y, sample_weight=np.ones(8) + 1j), TypeError,
                 r"sample_weight must be real numbers; got complex", id="sample_weight-complex"),
    pytest.param(lambda: LinearSVC().fit(X, Y, sample_weight=["a"] * 8), TypeError,
                 r"sample_weight must be real numbers", id="sample_weight-strings"),
    pytest.param(lambda: LinearSVC().fit(X, Y, sample_weight=np.r_[np.ones(7), -1]),
                 ValueError, r"sample_weight must be finite and >= 0; got .*-1.* at index 7",
                 id="sample_weight-negative"),
    pytest.param(lambda: LinearSVC().fit(X, Y, sample_weight=np.full(8, 1e308)), ValueError,
                 r"sample_weight \(times class_weight\) sums to inf, beyond float64",
                 id="sample_weight-sum-overflows"),
    pytest.param(lambda: LinearSVC(dtype=np.float32).fit(X, Y, sample_weight=np.full(8, 3e38)),
                 ValueError, r"sums to .*beyond float32", id="sample_weight-float32"),
    pytest.param(lambda: LinearSVC().fit(X * 1e200, Y), ValueError,
                 r"X has entries up to 2.*e\+200 .* for 8 x 3 data", id="X-huge"),
    pytest.param(lambda: LinearSVC(dtype=np.float32).fit(X * 1e39, Y), ValueError,
                 r"LinearSVC in float32 accepts at most .* for 8 x 3 data",
                 id="X-overflows-float32"),
    pytest.param(lambda: LinearSVC(multi_class="crammer_singer", intercept_scaling=np.nan)
                 .fit(X, Y3), ValueError, r"intercept_scaling must be a finite number",
                 id="intercept_scaling-nan"),
]


@pytest.mark.parametrize("fit, error, pattern", ESTIMATOR_REFUSED)
def test_estimators_refuse_in_the_users_names_before_compiling(fit, error, pattern):
    before = _compiled()
    with pytest.raises(error, match=pattern):
        fit()
    assert _compiled() == before


@pytest.mark.parametrize("fit", [
    pytest.param(lambda: Lasso(alpha=0.1).fit(X, np.arange(8) * 1e200), id="Lasso"),
    pytest.param(lambda: Lasso(alpha=0.1, fit_intercept=False).fit(X, np.full(8, 1e200)),
                 id="Lasso-no-intercept"),
])
def test_estimators_refuse_an_objective_that_overflows_at_the_start(fit):
    with pytest.raises(ValueError, match=r"ended nonfinite: J\(w0\) = (inf|nan) in float64"):
        fit()


def test_huge_regressor_weights_are_normalized_without_overflow():
    t = X @ np.array([1.0, -2.0, 0.5])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning either
        huge = Lasso(alpha=0.01, tol=1e-10).fit(X, t, sample_weight=np.full(8, 1e308))
    plain = Lasso(alpha=0.01, tol=1e-10).fit(X, t)
    np.testing.assert_allclose(huge.coef_, plain.coef_, atol=1e-6)


# -- 6. chains ---------------------------------------------------------------------------

TOKENS = _rng.normal(size=(4, 5, 3))
LABELS = _rng.integers(0, 3, size=(4, 5))
W_CHAIN = np.zeros((6, 3))


@pytest.mark.parametrize("call, error, pattern", [
    pytest.param(lambda: nsjax.chains.chain_problem(TOKENS[:, :0], LABELS[:, :0], 1e-2),
                 ValueError, r"hold no token", id="problem-length-0"),
    pytest.param(lambda: nsjax.chains.chain_problem(TOKENS[:0], LABELS[:0], 1e-2),
                 ValueError, r"hold no token", id="problem-no-sequence"),
    pytest.param(lambda: nsjax.chains.chain_problem(TOKENS + 1j, LABELS, 1e-2), TypeError,
                 r"tokens must be an array of real numbers; got complex", id="problem-complex"),
    pytest.param(lambda: nsjax.chains.chain_design(TOKENS, 0), ValueError,
                 r"num_labels must be an int >= 1", id="design-no-labels"),
    pytest.param(lambda: nsjax.chains.predict(np.zeros(6), TOKENS), ValueError,
                 r"W must be a chain problem's weights, shape \(d \+ K, K\)", id="predict-1d-W"),
    pytest.param(lambda: nsjax.chains.predict(W_CHAIN, TOKENS[:, :0]), ValueError,
                 r"hold no token", id="predict-length-0"),
    pytest.param(lambda: nsjax.chains.predict(W_CHAIN, TOKENS, classes=(1, 2)), ValueError,
                 r"classes must list the K = 3 label values", id="predict-classes"),
    pytest.param(lambda: nsjax.chains.predict(W_CHAIN, TOKENS[..., :2]), ValueError,
                 r"tokens must have shape \(N, L, d\) with d = 3", id="predict-features"),
])
def test_chains_refuse_bad_arguments(call, error, pattern):
    with pytest.raises(error, match=pattern):
        call()


def test_chain_predict_takes_a_list_of_weights():
    labels = nsjax.chains.predict(W_CHAIN.tolist(), TOKENS, classes=("a", "b", "c"))
    assert labels.shape == (4, 5) and set(labels.ravel()) <= {"a", "b", "c"}

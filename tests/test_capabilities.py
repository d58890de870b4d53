"""The capability registry: each solver declares what it takes once (`Takes`), and the
refusal before compiling, the default solver and the list of solvers that take a problem all
read those declarations."""

import numpy as np
import pytest
import scipy.sparse as sp
from toy_solver import AveragedSubgradient

import nsjax
from nsjax import losses as L
from nsjax import regularizers as R
from nsjax import solvers as S
from nsjax.solvers import Takes
from nsjax.solvers.capabilities import loss_kinds

X, Y = np.random.default_rng(0).normal(size=(12, 3)), np.repeat([-1, 1], 6)


def problem(loss=None, reg=None, **kwargs):
    return nsjax.Problem(loss or L.Hinge(), R.L2(0.1) if reg is None else reg, X, Y, **kwargs)


def test_loss_kinds_come_from_the_losses_declarations():
    assert loss_kinds(problem()) == {"any", "lines", "svm"}
    assert loss_kinds(problem(L.Logistic())) == {"any", "smooth"}
    assert loss_kinds(problem(L.MulticlassHinge())) == {"any", "lines"}
    assert L.Hinge().provides("lines") and not L.Logistic().provides("lines")
    with pytest.raises(ValueError, match="not an optional method"):
        L.Hinge().provides("risk")


@pytest.mark.parametrize("field, value, match", [
    ("losses", ("hinge",), "Takes.losses"), ("losses", (), "Takes.losses"),
    ("regularizer", "l1", "Takes.regularizer"), ("bias", "yes", "Takes.bias")])
def test_a_declaration_names_known_kinds(field, value, match):
    with pytest.raises(ValueError, match=match):
        Takes(**{field: value})


@pytest.mark.parametrize("make, expected", [
    (lambda: problem(), S.Hybrid), (lambda: problem(bias=True), S.Hybrid),
    (lambda: problem(L.Logistic(), R.L1(0.1)), S.OBA),
    (lambda: problem(L.Logistic(), R.L2(0.0)), S.SubLBFGS),  # λ = 0: no bundle phase
    (lambda: problem(L.Logistic(), bias=True), S.SubLBFGS),  # no lines for the best b
    (lambda: problem(L.Hinge(), R.L1(0.1)), S.SubLBFGS),
    (lambda: problem(reg=R.Entropy(0.1)), S.AGMEF),
    (lambda: nsjax.Problem(L.Hinge(), R.L2(0.1), sp.random(12, 30, 0.2, "csr", random_state=0),
                           Y), S.DualCD),  # text-like: sparse, n ≤ d
    (lambda: nsjax.Problem(L.Hinge(), R.L2(0.1), sp.random(12, 3, 0.5, "csr", random_state=0),
                           Y), S.Hybrid),  # sparse with more rows than columns
    (lambda: nsjax.Problem(L.Hinge(), R.L2(0.1), sp.random(12, 30, 0.2, "csr", random_state=0),
                           Y, bias=True), S.Hybrid)])  # DualCD takes no bias yet
def test_the_default_solver_is_the_first_that_takes_the_problem(make, expected):
    solver = S.default_solver(make())
    assert type(solver) is expected
    assert solver.takes.refusal(make()) is None


def test_the_refusal_names_exactly_the_registered_solvers_that_take_the_problem():
    prob = problem(L.Logistic(), bias=True)
    with pytest.raises(ValueError) as info:
        S.check(S.BMRM(), prob)
    message = str(info.value)
    assert message.startswith("BMRM with a bias needs a loss that gives its lines")
    takers = message.split("use one of ")[1].rstrip(".").split(", ")
    assert takers == ["SubLBFGS()", "SubBFGS()"]
    for taker in (S.SubLBFGS(), S.SubBFGS()):
        S.check(taker, prob)  # each named solver does take it


def test_options_change_what_a_solver_takes():
    logistic = problem(L.Logistic())
    S.check(S.BMRM(), logistic)
    with pytest.raises(ValueError, match="BMRM needs a loss that gives its lines"):
        S.check(S.BMRM(line_search="exact"), logistic)
    with pytest.raises(ValueError, match=r"AGMEF needs the binary hinge.*AGMEF\(scheme='primal'\)"):
        S.check(S.AGMEF(), logistic)
    S.check(S.AGMEF(scheme="primal"), logistic)


def test_nothing_takes_it_says_so():
    prob = problem(reg=R.Entropy(0.1), sample_weight=np.ones(12))
    with pytest.raises(ValueError, match="no nsjax solver takes this problem"):
        nsjax.solve(prob)


def test_a_solver_outside_the_package_declares_itself_once():
    """The toy solver (tests/toy_solver.py) declares ``takes`` and is refused like ours."""
    with pytest.raises(ValueError, match=r"AveragedSubgradient needs the L2 regularizer .*"
                                         r"use one of SubLBFGS\(\)"):
        nsjax.solve(problem(reg=R.L1(0.1)), AveragedSubgradient())
    with pytest.raises(ValueError, match="AveragedSubgradient needs lam > 0"):
        nsjax.solve(problem(reg=R.L2(0.0)), AveragedSubgradient())
    with pytest.raises(ValueError, match="does not support an unregularized bias"):
        nsjax.solve(problem(bias=True), AveragedSubgradient())


def test_problem_names_each_strength_once():
    net = problem(L.Logistic(), R.ElasticNet(mu=0.3, lam=0.2))
    assert (float(net.strength), float(net.mu), float(net.lam)) == pytest.approx((0.3, 0.3, 0.2))
    assert float(net.with_strength(0.5).mu) == 0.5 and float(net.with_strength(0.5).lam) == (
        pytest.approx(0.2))
    l1 = problem(L.Logistic(), R.L1(0.3))
    assert (float(l1.strength), float(l1.mu), float(l1.lam)) == pytest.approx((0.3, 0.3, 0.0))
    l2 = problem(bias=True)
    assert (float(l2.strength), float(l2.mu), float(l2.lam)) == pytest.approx((0.1, 0.0, 0.1))

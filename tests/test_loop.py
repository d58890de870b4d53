"""The driver: sweep == loop of solves, the history, RESULTS, contract errors. The
invariants every solver keeps (jit, dtypes, compiles, float32) are in test_invariants.py."""

import warnings

import numpy as np
import pytest
from reference import random_binary

import nsjax
from nsjax import RESULTS
from nsjax.programs import compiled_programs
from nsjax.testing import progress_timing

SOLVER = nsjax.solvers.SubLBFGS(memory=10)
#: For the hinge `_problem` (SubBFGS closes its gap; SubLBFGS stops short of 1e-9 there).
#: The hinge tests share its compiled programs: one solve loop, one warm-started sweep.
HINGE_SOLVER = nsjax.solvers.SubBFGS()


def _problem(seed=0, lam=1e-2, n=60, d=8, dtype=None):
    X, y, _ = random_binary(seed, n, d)
    return nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(lam), X, y, dtype=dtype)


def _logistic_path():
    X, y, _ = random_binary(0, 60, 8)
    prob = nsjax.Problem(nsjax.losses.Logistic(), nsjax.regularizers.L2(1.0), X, y)
    return prob, np.logspace(-3, 0, 8)


def test_vmapped_sweep_equals_separate_solves():
    # Logistic: smooth, so the vmapped and the single runs follow the same trajectory and
    # must agree to rounding.
    prob, lams = _logistic_path()
    sols = nsjax.sweep(prob, lams, SOLVER, max_steps=200, tol=1e-10, warm_start=False)
    assert sols.w.shape == (8, 8)
    for i, lam in enumerate(lams):
        one = nsjax.solve(prob.with_strength(lam), SOLVER, max_steps=200, tol=1e-10)
        np.testing.assert_allclose(np.asarray(sols.w[i]), np.asarray(one.w), rtol=1e-8,
                                   atol=1e-10)
        assert int(sols.result[i]) == int(one.result) == RESULTS.successful


def test_warm_started_path_agrees_with_solves_in_fewer_steps():
    # The default sweep: from the largest λ down, each solve from the last solution. Its
    # solutions are other points within tol of the same optima: J within both certified
    # gaps, and w by λ-strong convexity, ‖w − w*‖ ≤ √(2 gap/λ) for each.
    prob, lams = _logistic_path()
    shuffled = lams[[3, 0, 7, 5, 1, 6, 2, 4]]  # returned in the caller's order
    sols = nsjax.sweep(prob, shuffled, SOLVER, max_steps=200, tol=1e-10)
    cold_steps = 0
    for i, lam in enumerate(shuffled):
        one = nsjax.solve(prob.with_strength(lam), SOLVER, max_steps=200, tol=1e-10)
        assert int(sols.result[i]) == int(one.result) == RESULTS.successful
        gap, one_gap = float(sols.gap[i]), float(one.gap)
        assert abs(float(sols.value[i]) - float(one.value)) <= gap + one_gap + 1e-15
        radius = np.sqrt(2 * gap / lam) + np.sqrt(2 * one_gap / lam)
        assert np.linalg.norm(np.asarray(sols.w[i]) - np.asarray(one.w)) <= radius
        cold_steps += int(one.num_steps)
    assert int(np.sum(sols.num_steps)) < cold_steps


def test_sweep_refuses_a_warm_start_that_is_not_a_bool():
    prob, lams = _logistic_path()
    with pytest.raises(TypeError, match="warm_start must be True or False"):
        nsjax.sweep(prob, lams, SOLVER, warm_start="yes")


def test_hinge_sweep_values_within_certified_gaps():
    # On the hinge, rounding differences between batched and single products can send the
    # runs down different kinks; both must still land within their certified gaps.
    prob = _problem()
    lams = np.logspace(-2, 0, 4)
    solver = HINGE_SOLVER
    sols = nsjax.sweep(prob, lams, solver, max_steps=400, tol=1e-9)
    for i, lam in enumerate(lams):
        one = nsjax.solve(prob.with_strength(lam), solver, max_steps=400, tol=1e-9)
        slack = float(sols.gap[i]) + float(one.gap) + 1e-12
        assert abs(float(sols.value[i]) - float(one.value)) <= slack
        assert slack <= 1e-5


def test_history_records_value_best_and_gap_for_a_non_monotone_solver():
    # The Hadamard problem of Saha et al. (2009): BMRM's J(w_t) = 1/(2λt) rises above
    # J(w_0) = 0, so the best-so-far curve stays at 0 while the iterate curve does not.
    # (d = 64: test_bmrm.py's Hadamard tests' compiled program.)
    prob = nsjax.datasets.hadamard_problem(64, 1.0)
    sol = nsjax.solve(prob, nsjax.solvers.BMRM(), max_steps=8, tol=0.0)
    t = np.arange(1, 9)
    np.testing.assert_allclose(np.asarray(sol.history.value), 1 / (2 * t), atol=1e-12)
    np.testing.assert_array_equal(np.asarray(sol.history.best), np.zeros(8))
    assert float(sol.value) == 0.0 and np.all(np.asarray(sol.w) == 0)
    np.testing.assert_allclose(np.asarray(sol.history.gap), 1 / (2 * t), atol=1e-12)


def test_results_carry_their_messages():
    for member in RESULTS:
        assert isinstance(member.message, str) and member.message
    assert RESULTS(4) is RESULTS.nonfinite and RESULTS.nonfinite == 4
    assert RESULTS.max_steps_reached.is_failure and RESULTS.stalled.is_failure
    assert not RESULTS.successful.is_failure


def test_runs_that_do_not_succeed_are_never_silent():
    prob = _problem()
    solver = HINGE_SOLVER
    with pytest.warns(nsjax.ConvergenceWarning, match="max_steps_reached after 2 steps"):
        sol = nsjax.solve(prob, solver, max_steps=2)
    assert sol.result == RESULTS.max_steps_reached
    with pytest.raises(RuntimeError, match="max_steps_reached"):
        nsjax.solve(prob, solver, max_steps=2, throw=True)
    # stalled has a gap above tol: a failure for throw=True too.
    stalls = nsjax.solvers.SubLBFGS(stall_tol=0.5)
    with pytest.raises(RuntimeError, match="stalled"):
        nsjax.solve(prob, stalls, tol=1e-12, throw=True)
    with pytest.warns(nsjax.ConvergenceWarning, match="1 of 2 strengths"):
        nsjax.sweep(prob, [1e-2, 1e3], solver, max_steps=3, tol=1e-2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nsjax.ConvergenceWarning)
        # (max_steps=2 again: the program compiled above serves.)
        assert nsjax.solve(prob, solver, max_steps=2, tol=10.0).result == RESULTS.successful


def test_contract_errors_are_clear():
    prob = _problem()
    with pytest.raises(TypeError, match="nsjax solver"):
        nsjax.solve(prob, object())

    class Incomplete(nsjax.solvers.Solver):
        def init(self, problem, w0):
            return None

    with pytest.raises(TypeError, match="abstract"):
        Incomplete()

    class NoProx:
        strength = 1.0

        def value(self, w):
            return 0.0

    with pytest.raises(TypeError, match="lacks subgradient, argsup, line, prox"):
        nsjax.Problem(nsjax.losses.Hinge(), NoProx(), np.eye(2), [1, -1])


def test_progress_reports_every_k_steps_and_changes_nothing(capsys):
    prob = _problem()
    quiet = nsjax.solve(prob, HINGE_SOLVER, max_steps=40, tol=1e-12)
    with progress_timing(delay=0.0, interval=0.0):  # every report shown, at once
        loud = nsjax.solve(prob, HINGE_SOLVER, max_steps=40, tol=1e-12, progress=7)
    # The same iterates up to rounding: the callback is another program, whose sums XLA
    # may order otherwise (seen on the padded problem, `nsjax.buckets`), and 40 steps on
    # the hinge's kinks carry that to ~1e-6.
    np.testing.assert_allclose(np.asarray(quiet.w), np.asarray(loud.w), rtol=1e-4)
    assert float(loud.value) == pytest.approx(float(quiet.value), rel=1e-6)
    lines = capsys.readouterr().err.split("\r")[1:]
    steps = [int(line.split()[1]) for line in lines]
    n = int(loud.num_steps)
    assert steps == [*range(7, n + 1, 7), n]  # every 7 steps, then the final line
    assert lines[-1].rstrip().endswith(loud.result.name)
    for bad in (0, -3, 2.5, "yes"):
        with pytest.raises(ValueError, match="progress must be"):
            nsjax.solve(prob, progress=bad)


def test_max_steps_is_traced_and_the_history_cut_to_it():
    from nsjax.loop import history_length

    prob = _problem()
    short = nsjax.solve(prob, HINGE_SOLVER, max_steps=3, tol=0.0)
    compiled = compiled_programs("solve")
    long = nsjax.solve(prob, HINGE_SOLVER, max_steps=40, tol=0.0)
    assert compiled_programs("solve") == compiled  # another budget, the same program
    assert short.history.value.shape == (3,) and long.history.value.shape == (40,)
    assert int(short.num_steps) == 3 and short.result == RESULTS.max_steps_reached
    # The same trajectory: the budget only decides where the loop stops.
    np.testing.assert_array_equal(np.asarray(short.history.value),
                                  np.asarray(long.history.value[:3]))
    steps = int(long.num_steps)
    assert np.all(np.isfinite(np.asarray(long.history.best[:steps])))
    assert np.all(np.isnan(np.asarray(long.history.best[steps:])))
    # Sweeps and batches: stacked histories, cut along their last axis.
    sweeps, batches = compiled_programs("sweep"), compiled_programs("batch")
    for k in (2, 5):
        assert nsjax.sweep(prob, [0.1, 0.01], HINGE_SOLVER,
                           max_steps=k).history.gap.shape == (2, k)
        assert nsjax.solve_batch([prob, prob], HINGE_SOLVER,
                                 max_steps=k).history.gap.shape == (2, k)
    assert compiled_programs("sweep") - sweeps <= 1 and compiled_programs("batch") - batches <= 1
    # The buffer: at least 2048, at most 1/8 more than max_steps, then one of 8 per octave.
    assert history_length(1) == history_length(2048) == 2048
    for m in (2049, 5000, 10**5, 10**7):
        assert m <= history_length(m) <= m * 9 / 8
    assert len({history_length(m) for m in range(4097, 8193)}) == 8


def test_lower_solve_is_the_program_solve_compiles_and_checks_the_solver_first():
    prob = _problem()
    lowered = nsjax.loop.lower_solve(prob, HINGE_SOLVER, max_steps=40)
    assert "stablehlo.while" in lowered.as_text()
    with pytest.raises(ValueError, match="does not support an unregularized bias"):
        nsjax.loop.lower_solve(nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(0.1),
                                             np.eye(4), [0, 1, 0, 1], bias=True),
                               nsjax.solvers.OBA())

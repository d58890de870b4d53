"""The seam between the Hybrid and its phases (`nsjax.solvers.phases`): the phases implement
the interfaces, the Hybrid calls nothing else on them, and its runs are pinned."""

import dataclasses
import functools
import inspect

import jax
import jax.numpy as jnp
import pytest

import nsjax
from nsjax.solvers import BMRM, Hybrid, SubBFGS, SubLBFGS
from nsjax.solvers.base import Best
from nsjax.solvers.phases import BundlePhase, QuasiNewtonPhase

X, Y = nsjax.datasets.breast_cancer()
L2 = nsjax.regularizers.L2


def hinge(**kw):
    return nsjax.Problem(nsjax.losses.Hinge(), L2(1e-3), X, Y, **kw)


def methods(interface):
    """The methods a phase of ``interface`` implements (its abstract ones, `Solver`'s too)."""
    return set(interface.__abstractmethods__)


def parameters(function):
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()
            if p.name != "self"]


@pytest.mark.parametrize("phase, interface", [
    (SubLBFGS(), QuasiNewtonPhase), (SubBFGS(), QuasiNewtonPhase),
    (BMRM(line_search="exact"), BundlePhase), (BMRM(), BundlePhase)])
def test_the_phases_implement_their_interface_with_its_signatures(phase, interface):
    assert isinstance(phase, interface)
    for name in methods(interface):
        assert parameters(getattr(type(phase), name)) == parameters(getattr(interface, name)), name


def test_a_phase_without_every_method_cannot_be_made():
    class Partial(BundlePhase):
        def init(self, problem, w0):
            return None

        def step(self, problem, state):
            return state

    with pytest.raises(TypeError, match="abstract"):
        Partial()


def recording(phase, calls, depth):
    """``phase`` as an instance of a subclass that adds to ``calls`` the name of every
    attribute read on it from outside its own methods."""
    base = type(phase)

    class Recording(base):
        def __getattribute__(self, name):
            value = base.__getattribute__(self, name)
            if name.startswith("__") or depth[0]:
                return value
            calls.add(name)
            if not callable(value):
                return value

            @functools.wraps(value)
            def call(*args, **kwargs):
                depth[0] += 1
                try:
                    return value(*args, **kwargs)
                finally:
                    depth[0] -= 1

            return call

    return Recording(**{f.name: getattr(phase, f.name) for f in dataclasses.fields(phase)})


@pytest.mark.parametrize("problem, options", [
    (hinge(), {}), (hinge(), {"keep_cuts": True}), (hinge(bias=True), {}),
    (nsjax.Problem(nsjax.losses.Logistic(), L2(1e-3), X, Y), {})],
    ids=["hinge", "keep_cuts", "bias", "logistic (qp-BMRM)"])
def test_the_hybrid_calls_only_the_interfaces_methods(problem, options):
    depth = [0]
    sub_calls, bundle_calls = set(), set()
    sub = recording(SubLBFGS(), sub_calls, depth)
    bmrm = recording(BMRM(line_search="exact"), bundle_calls, depth)
    hybrid = Hybrid(sublbfgs=sub, bmrm=bmrm, **options)
    sub_calls.clear()
    bundle_calls.clear()
    # Tracing covers every branch of the step (both phases, the switch).
    state = jax.eval_shape(lambda w0: hybrid.init(problem, w0), problem.zeros())
    state = jax.eval_shape(lambda s: hybrid.step(problem, s), state)
    best = jax.eval_shape(lambda s: Best.start(s.core), state)
    jax.eval_shape(lambda s, b: hybrid.terminate(problem, s, b, 1e-8), state, best)
    jax.eval_shape(lambda s, b: hybrid.postprocess(problem, s, b, jnp.int32(0), 1e-8),
                   state, best)
    for phase, calls, interface, unused in [(sub, sub_calls, QuasiNewtonPhase, {"step"}),
                                            (bmrm, bundle_calls, BundlePhase, {"init", "step"})]:
        options_read = {f.name for f in dataclasses.fields(phase)}
        assert calls - options_read == methods(interface) - unused


@pytest.mark.parametrize("problem, tol, steps, value", [
    (hinge(), 1e-8, 74, 0.042273268285322234),
    (hinge(bias=True), 1e-8, 138, 0.04223824640246751),
    (nsjax.Problem(nsjax.losses.MulticlassHinge(), L2(1e-3), *nsjax.datasets.iris()), 1e-8,
     55, 0.3363332754588677)], ids=["hinge", "bias", "iris multiclass"])
def test_the_hybrids_runs_are_pinned(problem, tol, steps, value):
    """Steps, switch and value of the default solver, as before the seam (issue 53). Runs
    that end at the optimum (a gap of ~1e-16 but for the bias's 1e-8), so that their numbers
    do not depend on XLA's rounding (its optimizations on or off): digits' multiclass hinge,
    stopped at tol, ends 1e-7 apart."""
    sol = nsjax.solve(problem, Hybrid(), max_steps=2000, tol=tol)
    assert sol.result == nsjax.RESULTS.successful
    assert (int(sol.num_steps), int(sol.stats["switched_at"])) == (steps, 40)
    assert float(sol.value) == pytest.approx(value, rel=1e-11)

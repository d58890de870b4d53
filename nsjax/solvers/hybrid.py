"""The hybrid that Yu et al. (2010) propose in Sec. 8: subLBFGS first, then the OCAS-like BMRM.

Yu et al. (2010) observe (Sec. 7.4, Fig. 13–14) that subLBFGS's local quadratic model makes fast
early progress but is "less appropriate for final convergence", while bundle methods start
slowly (their piecewise-linear model needs many cuts) and finish well, and suggests "a hybrid
approach that first runs subLBFGS then switches to ls-BMRM" (Sec. 7.4 and 8). This is it, in
one compiled loop with one history and one certified gap:

- Phase 1, subLBFGS (`SubLBFGS`). Every step's direction finding aggregates subgradients into
  ḡ = ∂(λΩ) part + Xᵀū with ū ∈ ∂R(Xw_t); that ū is also a cutting plane of the risk,
  R(Xv) ≥ ⟨Xᵀū, v⟩ − R*(ū) (`Problem.dual_cut`), and its cut alone gives the dual value
  D(ū) that the step reports. The last ``capacity`` of these cuts are kept, at no extra
  product with X (phase 2 starts from them with ``keep_cuts=True``).
- The switch, when subLBFGS slows down: after at least ``min_sublbfgs_steps`` (40) steps,
  at its pace over the last ``window`` steps (J's mean decrease per step), J would need
  more than ``horizon`` (100) steps to fall by the certified gap; or subLBFGS failed (no
  descent direction, a failed line search), at any step. Not "when
  the gap stops shrinking": subLBFGS's own gap is loose (a large fraction of J at small
  λ, even where J is already close to J*), so that rule would switch at the first window,
  also where subLBFGS is still fast. subLBFGS's tail stalls because its memory is smaller
  than the rank of the margin set. A short horizon switches as soon as subLBFGS slows,
  before its tail: a long one keeps it in that tail, and the whole run takes more steps.
  The first 40 steps are always subLBFGS's: where subLBFGS is fast to the end, its loose
  gap can make the pace rule switch within the first few windows, to a slower BMRM; the
  minimum costs a few steps where the rule would have switched soon after it (measured:
  docs/design.md, "Measured design choices").
- Phase 2, BMRM with the exact line search (`BMRM(line_search="exact")`, Yu et al. 2010, Sec. 7.4,
  with its default proximity term, `nsjax.solvers.bmrm`) from the current iterate, its
  bundle started from the cut taken there. With
  ``keep_cuts=True`` it also keeps phase 1's last ``capacity`` cuts: its model is then
  faithful at once and its dual starts at least at the best D(ū) (each single cut is a
  feasible dual point), which saves steps on some problems. It is off by default because
  after an early switch those cuts, taken at subLBFGS's first iterates, can hold the bundle
  method back for good: on separable data at small λ its lower bound can stay far below J*
  for thousands of steps, every cut active, whatever the capacity. The loop keeps the
  best lower bound of both phases (`Best`) either way. Problems whose loss gives no lines
  get plain qp-BMRM.

The seam: the hybrid calls on its phases only the methods of `QuasiNewtonPhase` (phase 1)
and `BundlePhase` (phase 2) and reads only the state fields they document
(`nsjax.solvers.phases`); ``tests/test_hybrid_seam.py`` checks it.

References: see docs/references.md.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from nsjax._checks import MAX_STEPS
from nsjax.results import RESULTS
from nsjax.solvers._options import Options, solver_options
from nsjax.solvers.base import Core, Solver, count
from nsjax.solvers.bmrm import BMRM, BUNDLE_TAKES, BundleState
from nsjax.solvers.capabilities import Takes
from nsjax.solvers.sublbfgs import SubLBFGS, SubQNState


class HybridState(NamedTuple):
    core: Core  # the active phase's iterate; stats: both phases' counters and the switch
    sub: SubQNState  # phase 1 (`QuasiNewtonPhase`)
    bundle: BundleState  # phase 2 (`BundlePhase`); during phase 1 it collects the cuts
    phase: jax.Array  # 0: subLBFGS, 1: BMRM
    lower: jax.Array  # the best lower bound so far (for the switch rule)
    recent: jax.Array  # J of the last window + 1 steps, oldest first
    t: jax.Array  # steps taken
    switched_at: jax.Array  # the step that began phase 2, −1 before


@solver_options
class Hybrid(Solver):
    """subLBFGS, then the exact-line-search BMRM from its iterate (Yu et al. 2010, Sec. 8).

    The default solver of `nsjax.solve`: fast early progress from subLBFGS, a certified gap
    closed by the bundle method. See the module docstring for the switch rule.

    Args:
        sublbfgs: the phase-1 solver, a `SubLBFGS` (or `SubBFGS`), used through
            `nsjax.solvers.phases.QuasiNewtonPhase`; its ``certify`` option
            also decides whether the hybrid ends with the loss's tight certificate where
            the gap is still open.
        bmrm: the phase-2 solver, a `BMRM`, used through
            `nsjax.solvers.phases.BundlePhase`; its ``capacity`` is also the number of phase-1
            cuts kept (``keep_cuts``). With ``line_search="exact"`` on a loss without
            lines, plain qp-BMRM is used. `check` refuses, before compiling, a subLBFGS
            memory and a capacity whose buffers do not fit in the machine's memory
            together.
        window: steps over which subLBFGS's pace (decrease of J per step) is measured, an
            int >= 1 and <= 10,000,000 (`nsjax.solve`'s largest ``max_steps``).
        horizon: switch when, at that pace, J would need more than this many steps to
            fall by the current certified gap: a finite number > 0.
        keep_cuts: start phase 2's bundle with phase 1's cuts too (off: from the cut at
            the switch only; see the module docstring). True or False.
        min_sublbfgs_steps: phase-1 steps taken before the pace rule may switch (a failed
            subLBFGS step switches at once), an int >= 0.

    Example:
        >>> import nsjax
        >>> X, y = nsjax.datasets.breast_cancer()
        >>> prob = nsjax.Problem(nsjax.losses.Hinge(), nsjax.regularizers.L2(1e-3), X, y)
        >>> sol = nsjax.solve(prob, nsjax.solvers.Hybrid(), max_steps=2000, tol=1e-8)
        >>> sol.result, bool(sol.gap <= 1e-8 * max(1.0, float(sol.value)))
        (<RESULTS.successful: 0>, True)
        >>> int(sol.stats["switched_at"]) > 0        # the step that started phase 2
        True
    """

    sublbfgs: SubLBFGS = SubLBFGS()
    bmrm: BMRM = BMRM(line_search="exact")
    window: int = 10
    horizon: float = 100.0
    keep_cuts: bool = False
    min_sublbfgs_steps: int = 40

    #: Its phase 2's (`BUNDLE_TAKES`). With a bias, phase 2 starts with an empty bundle:
    #: phase 1's cuts have Σū ≠ 0, so they bound R̃(w) = min_b R(Xw + b) by −inf
    #: (`nsjax.solvers._bias`).
    takes: ClassVar[Takes] = BUNDLE_TAKES

    def __post_init__(self):
        options = Options(self)
        options.instance("sublbfgs", SubLBFGS, example=SubLBFGS())
        options.instance("bmrm", BMRM, example=BMRM(line_search="exact"))
        # A longer window than any run never measures a pace (the rule would never fire).
        options.int("window", low=1, high=MAX_STEPS)
        options.real("horizon", 0, low_open=True, rule="> 0 (a finite number of steps)")
        options.bool("keep_cuts")
        options.int("min_sublbfgs_steps", low=0)

    def bundle_solver(self, problem) -> BMRM:
        """The phase-2 solver on ``problem``."""
        if self.bmrm.line_search == "exact" and not problem.has_lines:
            return dataclasses.replace(self.bmrm, line_search="none", proximity=None)
        return self.bmrm

    def check(self, problem):
        """Refuse, before compiling, what either phase refuses, and buffers that do not fit
        in the memory of the machine together: subLBFGS's memory
        (`nsjax.solvers.LBFGSMemory.nbytes`) and the bundle (`BMRM.nbytes`)."""
        sub, bmrm = self.sublbfgs, self.bundle_solver(problem)
        sub.line_search_for(problem).check(problem)
        sub.check_memory(problem, owner=f"Hybrid(sublbfgs={type(sub).__name__}(...))")
        bmrm.check_memory(problem, (sub.quasi_newton_memory().nbytes(problem),
                                    "the subLBFGS phase's memory"),
                          owner="Hybrid(bmrm=BMRM(...))")

    def init(self, problem, w0) -> HybridState:
        bmrm = self.bundle_solver(problem)
        sub = self.sublbfgs.init(problem, w0)
        dt = problem.dtype
        # w0's subgradient is the first cut, inserted by the first step.
        a, b = self.sublbfgs.subgradient_cut(problem, sub)
        bcore = Core(w0, sub.core.value, jnp.asarray(-jnp.inf, dt), bmrm.zero_stats())
        bundle = bmrm.empty_start(bcore, sub.S, a, b)
        phase = jnp.zeros((), jnp.int32)
        recent = jnp.full(self.window + 1, jnp.nan, dt)
        switched_at = jnp.asarray(-1, jnp.int32)
        return HybridState(_core(sub.core, bundle.core, phase, switched_at), sub, bundle,
                           phase, sub.core.lower, recent, jnp.zeros((), jnp.int32), switched_at)

    def step(self, problem, state: HybridState) -> HybridState:
        quasi_newton, bmrm = self.sublbfgs, self.bundle_solver(problem)
        # Both phases start by putting the pending cut into the bundle (phase 1: the cut
        # of the previous step's direction finding; its Gram matrix, not kept up to date
        # in phase 1, is computed once at the switch).
        bundle = bmrm.insert(state.bundle)
        # The big buffers, the cuts A and subLBFGS's memory, stay out of the branches
        # (read-only there) and are written after them: a conditional that returns them
        # makes XLA copy them at every step (`nsjax.solvers.phases`: lent buffers).
        bundle, A = bmrm.take_buffers(bundle)
        sub, mem = quasi_newton.take_buffers(state.sub)
        phase = state.phase
        state = state._replace(bundle=bundle, sub=sub, t=state.t + 1)
        state, pending, point = jax.lax.cond(
            phase == 0, lambda s: self._quasi_newton_step(problem, s, mem, bmrm),
            lambda s: self._bundle_approach(problem, s, A, bmrm), state)
        switch = state.phase > phase
        # The cut that phase 2 takes at every step, and with a bias (a cut of R̃ at the best
        # bias) at the switch too: at one call site for both (each is an exact line
        # search and more, compiled wherever it is called).
        cut = jax.lax.cond((phase == 1) | (switch & problem.bias),
                           lambda: bmrm.cut(problem, point.w, point.S),
                           lambda: bmrm.no_cut(point))
        bundle = jax.lax.switch(
            jnp.where(phase == 1, 1, jnp.where(switch, 2, 0)),
            [lambda: state.bundle,
             lambda: bmrm.take_buffers(
                 bmrm.arrive(bmrm.give_buffers(state.bundle, A), point, cut))[0],
             lambda: self._enter_bundle(problem, state.sub, state.bundle, A, cut)])
        core = _core(state.sub.core, bundle.core, state.phase, state.switched_at)
        sub = quasi_newton.commit(quasi_newton.give_buffers(state.sub, mem), pending)
        return state._replace(core=core, bundle=bmrm.give_buffers(bundle, A), sub=sub)

    def _quasi_newton_step(self, problem, state: HybridState, mem, bmrm):
        """Phase 1's step (``state.t`` already counts it): (the state, the memory update
        left for `SubLBFGS.commit`, the `CutPoint` at the new iterate, for the switch)."""
        quasi_newton = self.sublbfgs
        sub, d, pending = quasi_newton.propose(problem, quasi_newton.give_buffers(state.sub, mem))
        sub, _ = quasi_newton.take_buffers(sub)
        # Direction finding's ū at w_t, as the next cut.
        a, b = quasi_newton.direction_cut(problem, state.sub, d)
        bundle = bmrm.with_cut(state.bundle, a, b)
        lower = jnp.fmax(state.lower, sub.core.lower)
        recent = jnp.concatenate([state.recent[1:], sub.core.value[None]])
        # At the pace of the last `window` steps, J would need more than `horizon` steps to
        # fall by the certified gap. (NaN while the window fills: False, no early switch.)
        pace = (recent[0] - recent[-1]) / self.window
        t = state.t
        slow = (pace * self.horizon < sub.core.value - lower) & (t >= self.min_sublbfgs_steps)
        switch = slow | (sub.status != RESULTS.running)
        phase = switch.astype(jnp.int32)
        switched_at = jnp.where(switch, t, state.switched_at)
        point = bmrm.cut_point_at(state.bundle, sub.core.w, sub.S)
        return state._replace(sub=sub, bundle=bundle, phase=phase, lower=lower,
                              recent=recent, switched_at=switched_at), pending, point

    def _enter_bundle(self, problem, sub: SubQNState, bundle: BundleState, A,
                      cut) -> BundleState:
        """Phase 2's start at subLBFGS's iterate (the bundle state without A; its cuts
        are phase 1's); ``cut``: with a bias, `BMRM.cut` there (a cut of R̃ at the best
        bias)."""
        core = Core(sub.core.w, sub.core.value, jnp.asarray(-jnp.inf, sub.core.value.dtype),
                    bundle.core.stats)
        bmrm = self.bundle_solver(problem)
        bundle = bmrm.give_buffers(bundle, A)
        # Phase 1's cuts are kept only where asked, and never with a bias (`takes`).
        keep = self.keep_cuts and not problem.bias
        if problem.bias:  # a fresh cut of R̃ at subLBFGS's iterate
            w, S, value, a, b = cut
            core = core._replace(w=w, value=value,
                                 stats=count(core.stats, matvecs=1))
            return bmrm.take_buffers(bmrm.warm_start(bundle, core, S, keep, cut=(a, b)))[0]
        return bmrm.take_buffers(bmrm.warm_start(bundle, core, sub.S, keep))[0]

    def _bundle_approach(self, problem, state: HybridState, A, bmrm):
        """Phase 2's step up to its cut (`BMRM.approach`)."""
        bundle, point = bmrm.approach(problem, bmrm.give_buffers(state.bundle, A))
        no_update = self.sublbfgs.no_update(state.sub)
        return state._replace(bundle=bmrm.take_buffers(bundle)[0]), no_update, point

    def terminate(self, problem, state: HybridState, best, tol):
        """(done, result): the certified gap, else phase 2's repeated steps (`BMRM`)."""
        return self.bundle_solver(problem).terminate(problem, state.bundle, best, tol)

    def postprocess(self, problem, state: HybridState, best, result, tol):
        """Phase 1's end (`SubLBFGS.postprocess`, on the hybrid's state): the loss's tight
        certificate (the hinges), if the gap is still open and ``sublbfgs.certify``."""
        return self.sublbfgs.postprocess(problem, state, best, result, tol)


def _core(sub: Core, bundle: Core, phase, switched_at) -> Core:
    """The hybrid's core: the active phase's iterate; the counters of both phases (products
    with X summed) and ``switched_at`` (the step that began phase 2, −1 if none)."""
    active = jax.tree_util.tree_map(lambda s, b: jnp.where(phase == 0, s, b),
                                    (sub.w, sub.value, sub.lower),
                                    (bundle.w, bundle.value, bundle.lower))
    stats = dict(sub.stats)
    stats["matvecs"] = sub.stats["matvecs"] + bundle.stats["matvecs"]
    stats.update((k, v) for k, v in bundle.stats.items() if k != "matvecs")
    stats["switched_at"] = switched_at
    return Core(*active, stats)

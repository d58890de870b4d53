"""What a solver takes: one declaration per solver (`Takes`), read by `nsjax.solvers.check`
(the refusal before compiling, naming the solvers that do take the problem), by
`nsjax.solvers.default_solver` and by the estimators.

A solver declares ``takes = Takes(...)`` on its class (or a ``takes`` property where an
option changes it, e.g. `AGMEF`'s ``scheme``). A declaration answers, from the problem's
structure alone (no data are read, nothing is compiled):

- which losses: ``losses``, kinds of loss (`LOSS_KINDS`); one shared kind is enough;
- which regularizers: ``regularizer``, "any", "l2" (Ω = ½‖·‖², `Regularizer.quadratic`)
  or "split" (a smooth part and μ‖w‖₁, `Regularizer.has_l1`, or L2);
- a bias (``bias``: False, True, or a loss kind that a bias needs, e.g. "lines");
- per-example weights (``sample_weight``), prox geometries (``geometries``, see
  `Regularizer.geometry`), constraints (``constraints``, `Regularizer.constraint`);
- whether the strength must be > 0 (``positive_strength``: the solvers that work through
  the dual of λ/2‖w‖²).

What depends on the data or on other options (a bundle that does not fit in memory, chains
of one token) stays in the solver's own ``check``.
"""

from __future__ import annotations

import dataclasses

from nsjax.losses.labels import is_traced

#: The kinds of loss a solver can name in `Takes.losses`, each with how a message says it.
#: A loss is of kind "any" always; "smooth" where it is differentiable (`Loss.smooth`) with
#: one score per example; "lines" where it gives its lines (`Loss.lines`, the exact line
#: search); "smoothed" where it gives its own smoothing (`Loss.smoothed`); and its
#: `Loss.dual_form` ("svm": the binary hinge's box; "chain": ChainHinge's marginals), the
#: dual a Nesterov solver runs on.
LOSS_KINDS = {
    "any": "any loss",
    "smooth": "a smooth loss with one score per example (Logistic, Squared)",
    "lines": "a loss that gives its lines (the hinges)",
    "smoothed": "a loss that gives its own smoothing (MaxScore, F1Loss)",
    "svm": "the binary hinge (Hinge)",
    "chain": "ChainHinge",
}

#: `Takes.regularizer`'s values, with how a message says them.
REGULARIZERS = {
    "any": "any regularizer",
    "l2": "the L2 regularizer (L2)",
    "split": "the regularizer split into a smooth part and μ‖w‖₁ (L1, ElasticNet or L2)",
}


def loss_kinds(problem) -> frozenset:
    """The kinds (`LOSS_KINDS`) of the problem's loss."""
    loss = problem.loss
    one_score = problem.num_outputs is None
    kinds = {"any"}
    if problem.smooth_loss and one_score:
        kinds.add("smooth")
    if problem.has_lines:
        kinds.add("lines")
    if loss.provides("smoothed") and one_score:
        kinds.add("smoothed")
    if loss.dual_form is not None:
        kinds.add(loss.dual_form)
    return frozenset(kinds)


@dataclasses.dataclass(frozen=True)
class Takes:
    """What a solver takes (module docstring); the defaults are what a primal solver that
    sees the problem only through its oracles takes, without a bias."""

    losses: tuple[str, ...] = ("any",)
    regularizer: str = "any"
    bias: bool | str = False
    sample_weight: bool = True
    geometries: tuple[str, ...] = ("euclidean",)
    constraints: bool = False
    positive_strength: bool = False

    def __post_init__(self):
        unknown = set(self.losses) - set(LOSS_KINDS)
        if unknown or not self.losses:
            raise ValueError(f"Takes.losses must name kinds of {sorted(LOSS_KINDS)}; "
                             f"got {self.losses!r}.")
        if self.regularizer not in REGULARIZERS:
            raise ValueError(f"Takes.regularizer must be one of {sorted(REGULARIZERS)}; got "
                             f"{self.regularizer!r}.")
        if not (isinstance(self.bias, bool) or self.bias in LOSS_KINDS):
            raise ValueError(f"Takes.bias must be True, False or a kind of loss of "
                             f"{sorted(LOSS_KINDS)}; got {self.bias!r}.")

    def refusal(self, problem) -> str | None:
        """Why a solver with this declaration cannot take ``problem`` (a phrase that follows
        the solver's name), or None where it can."""
        reg = problem.coefficient_reg
        loss = type(problem.loss).__name__
        kinds = loss_kinds(problem)
        if problem.bias and self.bias is False:
            return ("does not support an unregularized bias (bias=True); add a constant "
                    "column to X instead")
        if problem.bias and self.bias is not True and self.bias not in kinds:
            return (f"with a bias needs {LOSS_KINDS[self.bias]}, to find the best bias "
                    f"exactly; got {loss}")
        if problem.weighted and not self.sample_weight:
            return "does not take sample weights (sample_weight=...)"
        if reg.geometry not in self.geometries:
            return (f"cannot solve with {type(reg).__name__}, whose prox is in the "
                    f"{reg.geometry} geometry (its domain is not all of R^d)")
        if reg.constraint and not self.constraints:
            return (f"cannot solve with {type(reg).__name__}, a constraint (the indicator of "
                    "a set, used through its projection)")
        if not kinds.intersection(self.losses):
            return f"needs {' or '.join(LOSS_KINDS[k] for k in self.losses)}; got {loss}"
        if not self._takes_regularizer(problem):
            return f"needs {REGULARIZERS[self.regularizer]}; got {type(reg).__name__}"
        strength = problem.strength
        if self.positive_strength and not (is_traced(strength) or float(strength) > 0):
            return f"needs {reg.strength_name} > 0 (the regularizer's strength)"
        return None

    def _takes_regularizer(self, problem) -> bool:
        reg = problem.coefficient_reg
        if self.regularizer == "l2":
            return reg.quadratic
        if self.regularizer == "split":
            return reg.quadratic or reg.has_l1
        return True

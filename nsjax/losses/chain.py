"""The max-margin Markov network loss on chains (Zhang et al. 2010, Example 4, eq. 46; Saha
et al. 2009, App. E.1), with the Hamming label loss and loss-augmented Viterbi as its oracle.

A training example is a sequence of L tokens x_1..x_L ∈ R^d with labels y_1..y_L ∈ [K]. The
joint feature map of a chain, φ(x, y) = Σ_t x_t ⊗ e_{y_t} + Σ_t e_{y_t} ⊗ e_{y_{t+1}}, is
linear in the weights W of shape (d + K, K): the first d rows score emissions (column a is
label a's weight vector), the last K rows are the transition matrix T (T[a, b]: a followed
by b), and ⟨W, φ(x, y)⟩ = Σ_t ⟨x_t, W_{:, y_t}⟩ + Σ_t T[y_t, y_{t+1}].

So that every solver keeps working on scores S = X W, the design matrix of a chain problem
(`nsjax.chains.chain_problem` builds it) has, for each sequence, its L token rows (x_t, 0)
followed by K *transition rows* (0, e_a): the scores of those rows are T's rows. A sequence
is thus a block of L + K consecutive rows of S, and Xᵀ sums what the loss puts on the
transition rows of every sequence into T's gradient. λ/2‖W‖² regularizes T too (as in M³N).

The loss of sequence i is the largest loss-augmented score margin (eq. 46),

    R_i(S) = max_{y′} [Δ(y′, yⁱ) + ⟨W, φ(xⁱ, y′)⟩ − ⟨W, φ(xⁱ, yⁱ)⟩],   Δ = Σ_t [y′_t ≠ yⁱ_t],

and R(S) = (1/N) Σ_i R_i(S) over the N sequences. The Hamming loss decomposes over the
tokens, so the max is a Viterbi pass on the node potentials S_t + Δ_t (one `lax.scan` over
the positions, vmapped over the sequences): O(N L K²).

References: see docs/references.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import jax
import jax.numpy as jnp

from nsjax.losses.base import Loss, active_tol
from nsjax.losses.labels import MulticlassLabels


def viterbi(node, trans, d_node=None, d_trans=None):
    """The best labeling of one chain: argmax_y Σ_t node[t, y_t] + Σ_t trans[y_t, y_{t+1}],
    and its score (the exact maximum).

    With ``d_node``/``d_trans`` (a direction in the same shapes), ties are broken towards the
    labeling steepest along them: among the predecessors within `active_tol` of the best at
    each step, the one with the largest directional score (the oracle of Yu et al. (2010), eq. 23,
    for a max over labelings; the max-plus recursion keeps that order because both parts add).

    Args:
        node: (L, K) node potentials; trans: (K, K) transition potentials.

    Returns:
        (labels (L,) int32, score): the max-plus forward pass and its back-pointers.
    """
    if d_node is None:
        d_node, d_trans = jnp.zeros_like(node), jnp.zeros_like(trans)

    def forward(carry, inputs):
        best, slope = carry
        h, dh = inputs
        cand = best[:, None] + trans  # (from, to)
        top = jnp.max(cand, axis=0)
        near = top[None, :] - cand <= active_tol(top)[None, :]
        pointer = jnp.argmax(jnp.where(near, slope[:, None] + d_trans, -jnp.inf), axis=0)
        chosen = jnp.take_along_axis(slope[:, None] + d_trans, pointer[None, :], 0)[0]
        return (top + h, chosen + dh), pointer

    (last, last_slope), pointers = jax.lax.scan(forward, (node[0], d_node[0]),
                                                (node[1:], d_node[1:]))
    score = jnp.max(last)
    near = score - last <= active_tol(score)
    end = jnp.argmax(jnp.where(near, last_slope, -jnp.inf)).astype(jnp.int32)

    def backward(label, pointer):
        previous = pointer[label].astype(jnp.int32)
        return previous, previous

    _, before = jax.lax.scan(backward, end, pointers, reverse=True)
    return jnp.concatenate([before, end[None]]), score


def transition_counts(labels, K, dtype):
    """(K, K) counts of each transition a → b along a labeling (L,)."""
    one = jax.nn.one_hot(labels, K, dtype=dtype)
    return one[:-1].T @ one[1:]


@jax.tree_util.register_dataclass
@dataclass(frozen=True)
class ChainHinge(MulticlassLabels, Loss):
    """M³N's structured hinge with the Hamming loss on chains of ``length`` tokens (module
    docstring: eq. 46 of Zhang et al. (2010), the row layout of its scores).

    Build problems with `nsjax.chains.chain_problem` (it lays out the rows and labels);
    decode with `nsjax.chains.predict`. The bundle methods take it as it is: BMRM's cut is
    loss-augmented Viterbi (`dscores`), and the default solver (the Hybrid) adds subLBFGS
    steps with the tie-breaking oracle (`argsup`); there is no exact line search (no
    finite set of lines). `nsjax.solvers.Pragam` runs on the dual over the chains'
    marginal polytope (Saha et al. 2009, App. E; `nsjax.solvers._chain_dual`).

    Args:
        length: L, the tokens per sequence (static: one compiled program per length).

    Example:
        >>> import numpy as np, nsjax
        >>> tokens = np.eye(3)[None].repeat(2, 0)  # 2 sequences of 3 one-hot tokens
        >>> labels = np.array([[0, 1, 2], [0, 1, 2]])
        >>> prob = nsjax.chains.chain_problem(tokens, labels, lam=0.1)
        >>> float(prob.objective(prob.zeros()))  # W = 0: every labeling ties; Δ ≤ 3
        3.0
    """

    length: int = field(metadata=dict(static=True))
    #: The dual `nsjax.solvers.Pragam` runs on: the chains' marginal polytope.
    dual_form: ClassVar[str] = "chain"

    def prepare(self, n, num_outputs, dtype):
        if not isinstance(self.length, int) or self.length < 1:
            raise ValueError(f"length must be a positive int (tokens per sequence); got "
                             f"{self.length!r}.")
        block = self.length + num_outputs
        if n % block:
            raise ValueError(
                f"X has {n} rows, not a multiple of length + K = {self.length} + "
                f"{num_outputs}: a chain problem has, per sequence, its {self.length} token "
                "rows and K transition rows; build it with nsjax.chains.chain_problem.")
        return self

    # -- layout ------------------------------------------------------------------------
    def split(self, S):
        """(node scores (N, L, K), transition scores (N, K, K)) of the score rows."""
        K = S.shape[1]
        blocks = S.reshape(-1, self.length + K, K)
        return blocks[:, :self.length], blocks[:, self.length:]

    def join(self, node, trans):
        """The score-row layout of per-sequence node (N, L, K) and transition (N, K, K)
        parts: the inverse of `split`."""
        K = node.shape[-1]
        return jnp.concatenate([node, trans], axis=1).reshape(-1, K)

    def truth(self, y, K):
        """The (N, L) token labels of the encoded row labels (transition rows' are unused)."""
        return y.reshape(-1, self.length + K)[:, :self.length]

    def _hamming(self, truth, K, dtype):
        return 1.0 - jax.nn.one_hot(truth, K, dtype=dtype)  # Δ_t(a) = [a ≠ yᵢ_t]

    def _best(self, S, y, dS=None):
        """Loss-augmented Viterbi on every sequence: the labels (N, L) and the maxima."""
        node, trans = self.split(S)
        K = S.shape[1]
        truth = self.truth(y, K)
        aug = node + self._hamming(truth, K, S.dtype)
        if dS is None:
            return jax.vmap(viterbi)(aug, trans), truth
        d_node, d_trans = self.split(dS)
        return jax.vmap(viterbi)(aug, trans, d_node, d_trans), truth

    def _truth_score(self, S, truth):
        node, trans = self.split(S)
        K = S.shape[1]
        emit = jnp.take_along_axis(node, truth[..., None], 2)[..., 0].sum(axis=1)
        counts = jax.vmap(transition_counts, (0, None, None))(truth, K, S.dtype)
        return emit + jnp.sum(counts * trans, axis=(1, 2))

    def risk(self, S, y):
        """(1/N) Σ_i max_y′ [Δ(y′, yⁱ) + s(y′) − s(yⁱ)] (eq. 46), by loss-augmented Viterbi."""
        (_, best), truth = self._best(S, y)
        return jnp.mean(best - self._truth_score(S, truth))

    def _indicator(self, labels, truth, K, dtype):
        """(φ(y′) − φ(yⁱ)) / N in score-row layout: the score-space subgradient of eq. 46
        at the maximizing labelings y′."""
        node = jax.nn.one_hot(labels, K, dtype=dtype) - jax.nn.one_hot(truth, K, dtype=dtype)
        counts = jax.vmap(transition_counts, (0, None, None))
        trans = counts(labels, K, dtype) - counts(truth, K, dtype)
        return self.join(node, trans) / labels.shape[0]

    def dscores(self, S, y):
        """φ(y′) − φ(yⁱ) (over N) at a loss-augmented Viterbi labeling y′ of each sequence."""
        (labels, _), truth = self._best(S, y)
        return self._indicator(labels, truth, S.shape[1], S.dtype)

    def argsup(self, S, dS, y):
        """As `dscores`, with ties among maximizing labelings broken towards the steepest
        along dS (`viterbi` with a direction)."""
        (labels, _), truth = self._best(S, y, dS)
        return self._indicator(labels, truth, S.shape[1], S.dtype)

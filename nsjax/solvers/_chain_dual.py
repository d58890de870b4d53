"""The adjoint of M³N on chains in marginal coordinates (Zhang et al. 2010, eq. 48; Saha et al.
2009, App. E.1): what `nsjax.solvers.Pragam` needs for `nsjax.losses.ChainHinge`.

Eq. 48 puts a weight α^i_y on every labeling y of chain i (Σ_y α^i_y = 1/N). The loss and the
scores decompose over the chain's edges, so only the pairwise marginals α_{i,e}(a, b) of
those weights enter (e = 1..L−1 the edge between tokens e and e + 1): ⟨α, ℓ + A W⟩ =
Σ α_{i,e}(a, b) θ_{i,e}(a, b) + const with the edge potentials

    θ_{i,e}(a, b) = T[a, b] + h_{i,e}(a) + [e = L−1] h_{i,L}(b),   h_{i,t} = S_{i,t} + Δ_{i,t}

(each token's node score and Hamming term on the edge after it, the last token's on the last
edge). The feasible set Q₂ becomes the chains' local marginal polytope (nonnegative, each
edge summing to 1/N, consecutive edges agreeing on their shared token), which on a chain
(a tree) is exactly the set of marginals of distributions over labelings, so every α in it
gives a valid lower bound D(α) ≤ J*. In the score-row layout of `nsjax.losses.chain`, α
maps to the dual point

    u(α) = B α − φ-rows of the truth / N,    B α = (node marginals; Σ_e α_e on the T rows),

and D(α) = ⟨ℓ, α⟩ − ‖Xᵀu(α)‖²/(2λ), w(α) = −Xᵀu(α)/λ, ∇D(α) = ℓ + Bᵀ X w(α) = the edge
potentials θ at the scores of w(α) (B's adjoint spreads scores onto edges as above). The
prox-function is ½‖α‖² on the marginals (Saha et al. 2009, App. E.3: the projection onto the
polytope in L₂), D₂ = max_Q ½‖α‖² = (L − 1)/(2N²).

References: see docs/references.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from nsjax.losses.chain import transition_counts
from nsjax.projections import project_chain_marginals


def _edges(node, trans):
    """θ_e(a, b) = trans[a, b] + node_e(a) + [e = last] node_L(b): (N, L−1, K, K)."""
    theta = trans[:, None] + node[:, :-1, :, None]
    return theta.at[:, -1].add(node[:, -1, None, :])


def _hamming(problem, K, dtype):
    truth = problem.loss.truth(problem.y, K)
    return truth, 1.0 - jax.nn.one_hot(truth, K, dtype=dtype)


def check_chain_problem(problem, name):
    """M³N's dual works on the chains' edges: chains of at least two tokens (the L2
    regularizer, w(α) = −Xᵀu(α)/λ, and λ > 0 are the solver's ``takes``)."""
    if problem.loss.length < 2:
        raise ValueError(f"{name} works on the chains' edges: chains of one token have none; "
                         "use MulticlassHinge (the same problem) or BMRM.")


def gradient(problem, S):
    """∇D(α) = ℓ + θ(S) for the scores S = X w(α); with S = X w, the α_μ(w) of eq. 23 is
    the projection of this over μ."""
    K = S.shape[1]
    node, trans = problem.loss.split(S)
    _, delta = _hamming(problem, K, S.dtype)
    return _edges(node + delta, trans)


def project(problem, alpha):
    """Π_{Q₂}: the projection onto the chains' local marginal polytope, edges summing to 1/N
    (`nsjax.projections.project_chain_marginals`, Saha et al. 2009, App. E.3.1)."""
    return project_chain_marginals(alpha, 1.0 / alpha.shape[0])


def primal(problem, alpha):
    """w(α) = −Xᵀu(α)/λ: one product with Xᵀ."""
    N, _, K, _ = alpha.shape
    truth, _ = _hamming(problem, K, alpha.dtype)
    nodes = jnp.concatenate([alpha.sum(axis=3), alpha[:, -1].sum(axis=1)[:, None]], axis=1)
    counts = jax.vmap(transition_counts, (0, None, None))(truth, K, alpha.dtype)
    u = problem.loss.join(nodes - jax.nn.one_hot(truth, K, dtype=alpha.dtype) / N,
                          alpha.sum(axis=1) - counts / N)
    return -problem.X.rmv(u) / problem.lam


def value(problem, alpha, w_alpha):
    """D(α) = ⟨ℓ, α⟩ − λ/2‖w(α)‖², given w(α)."""
    K = alpha.shape[-1]
    _, delta = _hamming(problem, K, alpha.dtype)
    loss = _edges(delta, jnp.zeros((alpha.shape[0], K, K), alpha.dtype))
    return jnp.sum(loss * alpha) - 0.5 * problem.lam * jnp.vdot(w_alpha, w_alpha)

"""Sequence labelling with max-margin Markov networks on chains (Zhang et al. 2010, Example 4;
Saha et al. 2009, App. E): build the problem, decode, score.

    prob = nsjax.chains.chain_problem(tokens, labels, lam=1e-3)   # tokens (N, L, d)
    sol = nsjax.solve(prob, tol=1e-4)        # the Hybrid; BMRM() and Pragam() also take it
    pred = nsjax.chains.predict(sol.w, tokens)                   # (N, L) labels

The weights W have shape (d + K, K): emission weights (d rows) and the transition matrix T
(K rows); see `nsjax.losses.chain` for the layout of the design matrix.

References: see docs/references.md.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from nsjax._checks import real_array
from nsjax.losses.chain import ChainHinge, viterbi
from nsjax.problem import Problem
from nsjax.regularizers import L2


def _check_token_shape(tokens):
    if tokens.ndim != 3:
        raise ValueError(f"tokens must have shape (N sequences, L tokens, d features); got "
                         f"shape {tokens.shape}.")
    if 0 in tokens.shape[:2]:
        raise ValueError(f"tokens of shape {tokens.shape} hold no token: give at least one "
                         "sequence (N >= 1) of at least one token (L >= 1).")


def _check_tokens(tokens, labels):
    tokens = real_array(tokens, "tokens")
    _check_token_shape(tokens)
    labels = np.asarray(labels)
    if labels.shape != tokens.shape[:2]:
        raise ValueError(f"labels must have shape (N, L) = {tokens.shape[:2]}, one label per "
                         f"token; got shape {labels.shape}.")
    return tokens, labels


def chain_design(tokens, num_labels: int) -> np.ndarray:
    """The design matrix of a chain problem: for each sequence its L token rows (x_t, 0)
    then K transition rows (0, e_a), shape (N (L + K), d + K) (`nsjax.losses.chain`)."""
    tokens = real_array(tokens, "tokens")
    _check_token_shape(tokens)
    if (isinstance(num_labels, (bool, np.bool_))
            or not isinstance(num_labels, (int, np.integer)) or num_labels < 1):
        raise ValueError(f"num_labels must be an int >= 1; got {num_labels!r}.")
    N, L, d = tokens.shape
    K = int(num_labels)
    X = np.zeros((N, L + K, d + K), dtype=np.result_type(tokens.dtype, np.float32))
    X[:, :L, :d] = tokens
    X[:, L:, d:] = np.eye(K, dtype=X.dtype)
    return X.reshape(N * (L + K), d + K)


def chain_problem(tokens, labels, lam, *, classes=None, dtype=None) -> Problem:
    """The M³N problem J(W) = λ/2‖W‖² + (1/N) Σ_i max_y′ [Δ(y′, yⁱ) + ⟨W, φ(xⁱ, y′) −
    φ(xⁱ, yⁱ)⟩] (Zhang et al. 2010, eq. 46) on N chains of L tokens, Δ the Hamming loss.

    Args:
        tokens: (N, L, d) token features (a numpy array; all sequences of one length: pad
            and split longer ones, or group sequences by length, one problem per length).
        labels: (N, L) token labels, any K ≥ 2 distinct values.
        lam: λ > 0.
        classes: the label values in order (default: the sorted distinct values of labels;
            give it when some label is absent from this set but must keep its column).
        dtype: float32 or float64 (default: the tokens' float type; float64 for integers).

    Returns:
        A `Problem` with the `ChainHinge` loss, `L2(lam)`, X from `chain_design` and the
        weights of shape (d + K, K).
    """
    tokens, labels = _check_tokens(tokens, labels)
    if classes is None:
        classes = tuple(np.unique(labels).tolist())
    N, L, _ = tokens.shape
    K = len(classes)
    # The transition rows need a label for the layout: the first class (never read).
    rows = np.concatenate([labels, np.full((N, K), classes[0], labels.dtype)], axis=1)
    X = chain_design(tokens, K)
    return Problem(ChainHinge(L), L2(lam), X, rows.reshape(-1), classes=classes, dtype=dtype)


@jax.jit
def _decode(W, tokens):
    d = tokens.shape[-1]
    return jax.vmap(viterbi, (0, None))(tokens @ W[:d], W[d:])[0]


def predict(W, tokens, classes=None):
    """The Viterbi labeling argmax_y ⟨W, φ(x, y)⟩ of each sequence: (N, L) label indices, or
    the label values when ``classes`` (e.g. ``prob.classes``) is given.

    Raises ValueError (TypeError for non-real arrays) unless W has the (d + K, K) shape of
    a chain problem's weights (``sol.w``), tokens the shape (N, L, d) with N, L ≥ 1, and
    ``classes`` K values."""
    W = jnp.asarray(real_array(W, "W"))
    if W.ndim != 2 or W.shape[1] < 1 or W.shape[0] < W.shape[1]:
        raise ValueError(f"W must be a chain problem's weights, shape (d + K, K) (sol.w of "
                         f"chain_problem's solve); got shape {W.shape}.")
    if not jnp.issubdtype(W.dtype, jnp.floating):
        W = W.astype(jnp.result_type(float))
    tokens = real_array(tokens, "tokens")
    if tokens.ndim != 3 or tokens.shape[-1] + W.shape[1] != W.shape[0]:
        raise ValueError(f"tokens must have shape (N, L, d) with d = {W.shape[0] - W.shape[1]}"
                         f" for weights of shape {W.shape}; got {tokens.shape}.")
    _check_token_shape(tokens)
    if classes is not None and len(classes) != W.shape[1]:
        raise ValueError(f"classes must list the K = {W.shape[1]} label values of W's columns; "
                         f"got {len(classes)}.")
    labels = np.asarray(_decode(W, jnp.asarray(tokens, W.dtype)))
    return labels if classes is None else np.asarray(classes)[labels]

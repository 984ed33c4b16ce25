"""How much better is A than B? Mean differences over seeds and the joint seed × example bootstrap.

Every resampling takes an explicit ``seed``; the "paired" bootstraps really resample matched
seeds / examples together (one draw serves both systems).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from seedscope.analysis.checks import check_scores
from seedscope.errors import SeedscopeError
from seedscope.metrics.resampling import LARGE_N, generator, interval, interval_of, resample_counts
from seedscope.validation import check_confidence, check_resamples

#: values materialised per chunk of a resampling
CHUNK_VALUES = 20_000_000


def mean_difference_ci(
    scores_a, scores_b, *, paired: bool, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> dict[str, float]:
    """Mean A − mean B with a percentile bootstrap CI over seeds.

    ``paired``: the two lists are matched seeds (same run names, same order) and one resample
    of seed indices serves both; otherwise A's and B's seeds are resampled independently.
    """
    a = check_scores(scores_a, "the mean difference (A)")
    b = check_scores(scores_b, "the mean difference (B)")
    check_confidence(confidence)
    check_resamples(n_boot)
    settings = dict(of_means=True, n_resamples=n_boot, confidence=confidence, seed=seed)
    if paired:
        if len(a) != len(b):
            raise SeedscopeError(f"a paired comparison needs matched seeds: {len(a)} vs {len(b)} values")
        low, high = interval(None, (a - b)[:, None], **settings)
        low, high = float(low[0]), float(high[0])
    else:  # A's seeds and B's seeds redrawn independently, from one generator
        low, high = (float(v) for v in interval(np.subtract, a, b, **settings))
    return {"delta": float(a.mean() - b.mean()), "ci_low": low, "ci_high": high}


@dataclass(frozen=True)
class JointBootstrap:
    """Seed × example bootstrap of two systems (MultiBERTs' multibootstrap, vectorised).

    ``mean_*``: averages over the bootstrap replicates; ``delta`` = θ_A − θ_B; ``p_value``:
    two-sided, 2·min(share ≤ 0, share ≥ 0) with a +1 correction, never 0; ``p_not_better``:
    one-sided, (1 + #{Δ* ≤ 0}) / (1 + B) for H0 "A is not better than B".
    """

    mean_a: float
    ci_a: tuple[float, float]
    mean_b: float
    ci_b: tuple[float, float]
    delta: float
    ci_delta: tuple[float, float]
    p_value: float
    p_not_better: float
    paired_seeds: bool


def _weights(rng, rows: int, size: int, on: bool) -> np.ndarray:
    return resample_counts(rng, rows, size) if on else np.ones((rows, size))


def _exact(a, b, rng, n_boot, seeds_on, examples_on, paired_seeds):
    """Every example's count drawn (multinomial), chunk by chunk."""
    n_examples = a.shape[1]
    chunk = max(1, CHUNK_VALUES // max(1, n_examples, a.shape[0], b.shape[0]))  # each weight matrix is rows × seeds
    theta_a, theta_b = np.empty(n_boot), np.empty(n_boot)
    for start in range(0, n_boot, chunk):
        rows = min(chunk, n_boot - start)
        weight_a = _weights(rng, rows, a.shape[0], seeds_on)
        weight_b = weight_a if seeds_on and paired_seeds else _weights(rng, rows, b.shape[0], seeds_on)
        examples = _weights(rng, rows, n_examples, examples_on)
        theta_a[start: start + rows] = ((weight_a @ a) * examples).sum(axis=1) / (a.shape[0] * n_examples)
        theta_b[start: start + rows] = ((weight_b @ b) * examples).sum(axis=1) / (b.shape[0] * n_examples)
    return theta_a, theta_b


def _moment_matched(a, b, rng, n_boot, seeds_on, examples_on, paired_seeds):
    """The examples' resampling as a normal draw with the multinomial's exact mean and covariance."""
    n = a.shape[1]
    both = np.vstack([a, b])
    means = both.mean(axis=1)
    gram = both @ both.T / n - np.outer(means, means)  # covariance over examples of every pair of runs
    weight_a = _weights(rng, n_boot, a.shape[0], seeds_on) / a.shape[0]
    weight_b = weight_a if seeds_on and paired_seeds else _weights(rng, n_boot, b.shape[0], seeds_on) / b.shape[0]
    centre_a, centre_b = weight_a @ means[: a.shape[0]], weight_b @ means[a.shape[0]:]
    k = a.shape[0]
    var_a = np.einsum("ri,ij,rj->r", weight_a, gram[:k, :k], weight_a) / n
    var_b = np.einsum("ri,ij,rj->r", weight_b, gram[k:, k:], weight_b) / n
    cov = np.einsum("ri,ij,rj->r", weight_a, gram[:k, k:], weight_b) / n
    z1, z2 = rng.standard_normal(n_boot), rng.standard_normal(n_boot)
    sd_a = np.sqrt(np.clip(var_a, 0, None))
    rho = np.divide(cov, sd_a, out=np.zeros_like(cov), where=sd_a > 0)  # b's loading on a's normal
    rest = np.sqrt(np.clip(var_b - rho**2, 0, None))
    return centre_a + sd_a * z1, centre_b + rho * z1 + rest * z2


def joint_bootstrap(
    scores_a,
    scores_b,
    *,
    paired_seeds: bool,
    resample: Literal["both", "seeds", "examples", "none"] = "both",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> JointBootstrap:
    """Resample seeds and examples together: θ = mean over the drawn seeds and examples.

    ``scores_a``: S_A × N per-example scores (e.g. correctness 0/1) on the same N examples as
    ``scores_b`` (S_B × N). Examples are always resampled jointly for A and B (same test
    items); ``paired_seeds`` also draws the same seed indices for both (matched seeds, S_A = S_B).
    ``resample`` = seeds / examples resamples only that axis; none gives every replicate the
    point estimate (a sanity check: degenerate intervals).

    With N ≥ :data:`LARGE_N` examples, drawing every example's count (n_boot × N draws: 10⁹ for a
    million examples) gives way to its limit: given the drawn seeds, the example-resampled
    (θ_A, θ_B) has mean (v̄_A, v̄_B) and covariance cov_t(v_A, v_B) / N exactly (v = the drawn
    seeds' mean per example), and with that many examples it is normal to any precision a
    percentile interval shows; the moments come from S × S Gram matrices, O(S²·N) once.
    """
    a = np.asarray(scores_a, dtype=float)
    b = np.asarray(scores_b, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise SeedscopeError(f"the joint bootstrap needs seeds × examples arrays on the same examples: {a.shape} vs {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise SeedscopeError("the joint bootstrap got a NaN or infinite per-example score")
    if paired_seeds and a.shape[0] != b.shape[0]:
        raise SeedscopeError(f"paired seeds need the same number of seeds: {a.shape[0]} vs {b.shape[0]}")
    if resample not in ("both", "seeds", "examples", "none"):
        raise SeedscopeError(f"unknown resampling '{resample}': use both, seeds, examples or none")
    check_confidence(confidence)
    check_resamples(n_boot)
    rng = generator(seed)
    seeds_on = resample in ("both", "seeds")
    examples_on = resample in ("both", "examples")
    draw = _moment_matched if examples_on and a.shape[1] >= LARGE_N else _exact
    theta_a, theta_b = draw(a, b, rng, n_boot, seeds_on, examples_on, paired_seeds)
    delta = theta_a - theta_b
    quantiles = lambda v: tuple(float(q) for q in interval_of(v, confidence))  # noqa: E731
    below, above = int((delta <= 0).sum()), int((delta >= 0).sum())
    return JointBootstrap(
        mean_a=float(theta_a.mean()),
        ci_a=quantiles(theta_a),
        mean_b=float(theta_b.mean()),
        ci_b=quantiles(theta_b),
        delta=float(delta.mean()),
        ci_delta=quantiles(delta),
        p_value=float(min(1.0, 2 * (1 + min(below, above)) / (1 + n_boot))),
        p_not_better=float((1 + below) / (1 + n_boot)),
        paired_seeds=paired_seeds,
    )

"""Episodes: which labelled examples a meta-learner trains and adapts on, each draw from its own generator.

Training episodes are N-way (every class of the task) with ``shots`` support and ``queries``
query examples per class, all distinct, drawn by the ``sample_order`` generator: its seed
fixes the stream of training episodes. The evaluation support set — ``shots`` examples per
class that the trained learner adapts on before it predicts the test examples — is drawn by
the ``sample_choice`` generator alone.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from seedscope.errors import SeedscopeError


def class_members(labels: np.ndarray, classes: int, needed: int, label_names) -> list[np.ndarray]:
    """Each class's pool indices; a class with fewer than ``needed`` examples is refused."""
    members = [np.flatnonzero(labels == c) for c in range(classes)]
    for c, indices in enumerate(members):
        if len(indices) < needed:
            raise SeedscopeError(f"an episode needs {needed} examples of class {label_names[c]}, but the labelled pool "
                                 f"holds {len(indices)}; lower shots / queries or raise num_labelled")
    return members


def episode_stream(labels: np.ndarray, classes: int, shots: int, queries: int, count: int, rng: np.random.Generator,
                   label_names) -> Iterator[tuple[list[int], list[int]]]:
    """``count`` episodes of (support, query) pool indices, class by class."""
    members = class_members(labels, classes, shots + queries, label_names)
    for _ in range(count):
        support, query = [], []
        for indices in members:
            drawn = rng.choice(indices, shots + queries, replace=False)
            support += drawn[:shots].tolist()
            query += drawn[shots:].tolist()
        yield support, query


def support_set(labels: np.ndarray, classes: int, shots: int, rng: np.random.Generator, label_names) -> list[int]:
    """``shots`` pool indices of every class: what the learner adapts on before it predicts."""
    members = class_members(labels, classes, shots, label_names)
    return [int(i) for indices in members for i in rng.choice(indices, shots, replace=False)]

"""Benchmark of the meta-learning runner's pieces (real MiniLM, real SST-2 / MRPC rows, CPU).

1. Encoding: the frozen encoder's token states of a task's candidate sentences (once per process).
2. Episodes: ``meta_train`` of each method with the text CNN as it runs now (convolutions over
   each example's real tokens, :func:`pooled_convolution`) against the same CNN convolving the
   whole zero-padded batch, on the same episodes and initial weights, interleaved, best of
   ``--repeats``; the two must give the same weights up to rounding.
3. Evaluation: ``predict`` of each method, the same two ways.

Run: ``.venv/bin/python benchmarks/bench_meta.py`` (full: the demo's 1,000 SST-2 and MRPC
sentences, 50 episodes; several minutes on 2 cores) or ``--quick`` (200 sentences, 5 episodes).
The whole demo is timed by the demo itself: ``seedscope demo --runner meta`` prints its time.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from seedscope.config import load_preset  # noqa: E402
from seedscope.plan.hparams import MetaSettings  # noqa: E402
from seedscope.runners.data import candidate_examples  # noqa: E402
from seedscope.runners.meta.episodes import episode_stream, support_set  # noqa: E402
from seedscope.runners.meta.learners import TextCNN, TokenBatch, meta_train, predict  # noqa: E402
from seedscope.runners.meta.runner import build_model  # noqa: E402
from seedscope.runners.meta.token_states import token_states  # noqa: E402
from seedscope.tasks import get_task  # noqa: E402
from seedscope.workflows.demos import demo_data_dir, minilm_path  # noqa: E402

METHODS = ("protonet", "maml", "reptile")


class PaddedCNN(TextCNN):
    """The same CNN convolving every window of the zero-padded batch (the baseline)."""

    def prepare(self, states: torch.Tensor, lengths: torch.Tensor | None = None) -> TokenBatch:
        widest = max(self.kernel_sizes)
        return TokenBatch(F.pad(states.transpose(1, 2), (0, max(0, widest - states.shape[1]))).contiguous(), None)


def timed(work) -> tuple[float, object]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 sentences per task, 5 episodes, 1 repeat")
    parser.add_argument("--tasks", default="sst2,mrpc")
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    sentences = 200 if args.quick else 1000
    episodes = args.episodes or (5 if args.quick else 50)
    repeats = args.repeats or (1 if args.quick else 2)
    hparams = {**load_preset("minilm-meta-cpu").hparams, "max_train_examples": sentences,
               "max_eval_examples": sentences}
    settings = MetaSettings.from_hparams(hparams)
    print(f"torch threads {torch.get_num_threads()}; {sentences} train + {sentences} eval sentences a task; "
          f"{episodes} episodes; best of {repeats}", flush=True)
    for task_name in args.tasks.split(","):
        task = get_task(task_name)
        pool, tests = candidate_examples(task, settings, demo_data_dir())
        seconds, (pool_states, test_states) = timed(lambda: token_states(
            minilm_path(), [pool, tests], settings.max_seq_length, settings.encoder_batch_size))
        print(f"{task_name}: encoding {len(pool) + len(tests)} sentences {seconds:.1f} s "
              f"(states padded to {pool_states.shape[1]} tokens)", flush=True)
        labels = torch.tensor(pool["label"].astype(int).to_numpy())
        stream = list(episode_stream(labels.numpy(), task.num_labels, settings.shots, settings.queries, episodes,
                                     np.random.default_rng(0), task.label_names))
        support = torch.tensor(support_set(labels.numpy(), task.num_labels, settings.shots, np.random.default_rng(1),
                                           task.label_names))
        for method in METHODS:
            best = {"packed": [np.inf, np.inf], "padded": [np.inf, np.inf]}
            weights = {}
            for _ in range(repeats):
                for kind, cls in (("padded", PaddedCNN), ("packed", TextCNN)):
                    torch.manual_seed(0)
                    model = build_model(settings, method, pool_states.shape[-1], task.num_labels)
                    model.__class__ = cls
                    train, _ = timed(lambda: meta_train(
                        method, model, pool_states, labels, stream, task.num_labels,
                        meta_learning_rate=settings.meta_learning_rate, inner_learning_rate=settings.inner_learning_rate,
                        inner_steps=settings.inner_steps, first_order=settings.first_order,
                        outer_step_size=settings.outer_step_size))
                    evaluate, logits = timed(lambda: predict(
                        method, model, pool_states[support], labels[support], test_states, task.num_labels,
                        inner_learning_rate=settings.inner_learning_rate, steps=settings.eval_inner_steps))
                    best[kind] = [min(best[kind][0], train), min(best[kind][1], evaluate)]
                    weights[kind] = torch.cat([p.detach().flatten() for p in model.parameters()])
            drift = (weights["packed"] - weights["padded"]).abs().max().item()
            (pt, pe), (nt, ne) = best["padded"], best["packed"]
            print(f"{task_name} {method:8s} episodes {pt:6.2f} s -> {nt:6.2f} s ({pt / nt:.2f}x); "
                  f"evaluation {pe:5.2f} s -> {ne:5.2f} s ({pe / ne:.2f}x); largest weight difference {drift:.1e}",
                  flush=True)


if __name__ == "__main__":
    main()

"""Benchmark: what one optimizer step dispatches, how often it reads the device and how often vmap loops, sequential
and fused.

Run: HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_step_overhead.py [--steps 20] [--ks 1,2,4,8]
     [--attention-dropout 0.1]

A tiny random BERT (2 layers, hidden 32, the packaged MiniLM's tokenizer) fine-tunes SST-2
(64 sentences, batches of 8) through seedscope's own code: K sequential runs one after another
(``runner.run``), and the same K seeds fused (``fused.run_group``), for K = 1, 2, 4, 8. Only the
training loop is counted (``Trainer.train`` and ``fused_training.train_members``, not the
evaluation), with :class:`~seedscope.runners.finetune.host_reads.HostReads`. Per optimizer step it
prints the aten operations dispatched and the host reads: ``_local_scalar_dense`` calls (counted on
any tensor: on a CPU every read is of a host tensor, so this over-counts what would sync a GPU),
copies of device tensors to the host, on CUDA the synchronising calls that
``torch.cuda.set_sync_debug_mode("warn")`` reports, and the operations vmap ran member by member
for want of a batching rule (its fallback warnings). A sequential step is one run's step; a fused
step trains all K members. ``--attention-dropout 0`` takes the path of attention without dropout
(decoders, LoRA), where the fused step calls torch's attention kernel itself.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import warnings
from pathlib import Path

import torch

from seedscope.config import resolve_model
from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.environment import compute_device
from seedscope.runners.finetune import fused
from seedscope.runners.finetune import runner as finetune
from seedscope.runners.finetune.host_reads import HostReads
from seedscope.runners.finetune.trainer import SeededTrainer

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def tiny_bert(folder: Path, attention_dropout: float = 0.1) -> str:
    """A random 2-layer, hidden-32 BERT classifier with the packaged MiniLM's tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    tokenizer = AutoTokenizer.from_pretrained(resolve_model("all-minilm-l6-v2"))
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128, num_labels=2,
                        attention_probs_dropout_prob=attention_dropout)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


class Counted:
    """Count ``owner.name`` (the training loop) in a :class:`HostReads`, summed over every call."""

    def __init__(self, owner, name: str):
        self.owner, self.name, self.original = owner, name, getattr(owner, name)
        self.ops = self.scalar_reads = self.host_copies = self.cuda_syncs = self.vmap_fallbacks = 0

    def __enter__(self):
        original, totals = self.original, self

        def counted(*args, **kwargs):
            torch._C._functorch._set_vmap_fallback_warning_enabled(True)
            try:
                with warnings.catch_warnings(record=True) as caught, HostReads() as reads:
                    warnings.simplefilter("always")
                    result = original(*args, **kwargs)
            finally:
                torch._C._functorch._set_vmap_fallback_warning_enabled(False)
            totals.vmap_fallbacks += sum("batching rule" in str(w.message) for w in caught)
            totals.ops += reads.ops
            totals.scalar_reads += reads.scalar_reads
            totals.host_copies += reads.host_copies
            totals.cuda_syncs += reads.cuda_syncs or 0
            return result

        setattr(self.owner, self.name, counted)
        return self

    def __exit__(self, *exc):
        setattr(self.owner, self.name, self.original)

    def per_step(self, steps: int) -> dict:
        figures = {"ops": self.ops / steps, "local_scalar_dense": self.scalar_reads / steps,
                   "device_to_host_copies": self.host_copies / steps, "vmap_fallbacks": self.vmap_fallbacks / steps}
        if torch.cuda.is_available():
            figures["cuda_syncs"] = self.cuda_syncs / steps
        return {name: round(value, 3) for name, value in figures.items()}


def sequential(model: str, seeds: int, hparams: dict) -> list[tuple[Counted, int]]:
    """Each of ``seeds`` sequential runs' counts and optimizer steps (K runs' figures are the first K's)."""
    counted = []
    for seed in range(1, seeds + 1):
        with Counted(SeededTrainer, "train") as counts:
            result = finetune.run(RunSpec("sst2", model, FactorSeeds.tied(seed), hparams=hparams), DATA)
        counted.append((counts, result.timings["optimizer_steps"]))
    return counted


def fused_group(model: str, k: int, hparams: dict) -> dict:
    specs = [RunSpec("sst2", model, FactorSeeds.tied(seed), hparams=hparams) for seed in range(1, k + 1)]
    with Counted(fused, "train_members") as counts:
        outcomes = fused.run_group(specs, DATA)
    return counts.per_step(outcomes[0].timings["optimizer_steps"])


def summed(runs: list[tuple[Counted, int]]) -> dict:
    total = Counted(SeededTrainer, "train")
    for counts, _ in runs:
        for name in ("ops", "scalar_reads", "host_copies", "cuda_syncs", "vmap_fallbacks"):
            setattr(total, name, getattr(total, name) + getattr(counts, name))
    return total.per_step(sum(steps for _, steps in runs))


def reads(figures: dict) -> str:
    names = ("local_scalar_dense", "device_to_host_copies", "cuda_syncs")
    return " / ".join(f"{figures[name]:.3f}" for name in names if name in figures)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20, help="optimizer steps of each run")
    parser.add_argument("--ks", default="1,2,4,8", help="group sizes")
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    parser.add_argument("--attention-dropout", type=float, default=0.1, help="the BERT's attention dropout")
    args = parser.parse_args()
    hparams = {"max_train_examples": 64, "max_eval_examples": 16, "max_steps": args.steps,
               "per_device_train_batch_size": 8, "max_seq_length": 64, "learning_rate": 1e-3, "device": args.device}
    with tempfile.TemporaryDirectory(prefix="bench-step-") as scratch:
        model = tiny_bert(Path(scratch) / "tiny-bert", args.attention_dropout)
        ks = [int(k) for k in args.ks.split(",")]
        runs = sequential(model, max(ks), hparams)
        rows = [{"K": k, "sequential": summed(runs[:k]), "fused": fused_group(model, k, hparams)} for k in ks]
    for row in rows:
        row["fused_ops_vs_k1"] = round(row["fused"]["ops"] / rows[0]["fused"]["ops"], 3)
    print(f"per optimizer step (device {compute_device(args.device)}, torch {torch.__version__}, attention dropout "
          f"{args.attention_dropout}; a sequential step is one run's, a fused step all K members'; reads: "
          f"_local_scalar_dense / device-to-host copies{' / CUDA syncs' if torch.cuda.is_available() else ''}):")
    print(f"{'K':>2} {'seq ops':>9} {'seq reads':>18} {'fused ops':>9} {'x K=1':>6} {'fused reads':>18} "
          f"{'vmap loops':>10}")
    for row in rows:
        seq, fus = row["sequential"], row["fused"]
        print(f"{row['K']:>2} {seq['ops']:>9.0f} {reads(seq):>18} {fus['ops']:>9.0f} {row['fused_ops_vs_k1']:>6.3f} "
              f"{reads(fus):>18} {fus['vmap_fallbacks']:>10.2f}")
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()

"""Benchmark: 5 few-shot seeds of an lm-eval multiple-choice task, seedscope against lm-evaluation-harness.

Task: lm-eval's own ``copa`` config (5-shot, few-shot seeds 1 … 5) with its documents read from
the real SuperGLUE COPA files (``../shared/data``, the tests' ``write_tasks.py``), on the real
SmolLM2-135M-Instruct (fp32, CPU). Three ways, each a fresh process timed from start to end:

1. ``seedscope sweep --runner icl --task lm-eval:copa_local --seeds 1,…,5 --shots 5``: one
   process, the model loaded once, the harness's requests scored by seedscope's scorer;
2. five ``lm_eval --seed 0,1234,1234,S`` invocations (the model loaded each time);
3. one Python process looping ``lm_eval.simple_evaluate`` over the 5 seeds (model loaded once).

Prints each wall time, seedscope's speed-ups, the tokens each reads, and checks that every
seed's accuracy is equal in all three. lm-eval runs with ``--batch_size`` equal to seedscope's (16). ``--quick``: 16
documents (a smoke check); the default: all 100 COPA validation documents.

``--sampled``: a task that samples instead, ``copa_sample`` (the tests' COPA generation task with
``repeats: 4``, ``do_sample`` at temperature 1 and top-p 0.95, up to 4 tokens, cut at a newline or
a full stop; majority vote and first answer), 2-shot, one seed: ``seedscope sweep`` (each prompt
read once for its 4 samples) against one ``lm_eval`` invocation (each repeat its own request),
both whole processes; prints both wall times and both exact-match scores (the samples differ:
each tool draws its own).
Run: ``.venv/bin/python benchmarks/bench_lm_eval_tasks.py [--quick] [--sampled]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "runners" / "icl" / "fixtures" / "lm_eval_tasks"))
from write_tasks import write_tasks  # noqa: E402

SEEDS = [1, 2, 3, 4, 5]
SHOTS = 5
BATCH = 16
TASK = "copa_local"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
LOOP = """
import json, sys
from lm_eval import simple_evaluate
from lm_eval.models.huggingface import HFLM
from lm_eval.tasks import TaskManager
folder, include, limit, shots, batch, seeds = sys.argv[1:7]
lm = HFLM(pretrained=folder, device="cpu", dtype="float32", batch_size=int(batch))
manager = TaskManager(include_path=include)
scores = {}
for seed in map(int, seeds.split(",")):
    out = simple_evaluate(model=lm, tasks=["copa_local"], num_fewshot=int(shots), limit=int(limit) or None,
                          task_manager=manager, random_seed=0, numpy_random_seed=1234, torch_random_seed=1234,
                          fewshot_random_seed=seed, bootstrap_iters=0)
    scores[seed] = out["results"]["copa_local"]["acc,none"]
print("SCORES " + json.dumps(scores))
"""


def timed(command: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(command, env=ENV, capture_output=True, text=True, cwd=REPO)
    if done.returncode:
        raise SystemExit(f"{' '.join(command[:4])} … failed:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started, done.stdout


def tokens_read(store_path: Path) -> tuple[int, int, int]:
    """(documents, tokens seedscope reads, tokens lm-eval reads) for a seedscope store of a multiple-choice task:
    seedscope reads each context once and every answer from its cache; lm-eval reads context + answer per answer."""
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    from seedscope.store import ExperimentStore

    tokenizer = AutoTokenizer.from_pretrained(ExperimentStore.open(store_path).runs()["model"].iloc[0])
    documents = ours = theirs = 0
    for file in sorted((store_path / "predictions").glob("*.parquet")):
        table = pq.read_table(file)
        prefix = table.schema.metadata[b"seedscope.prompt_prefix"].decode()
        for query, answers in zip(table["query"].to_pylist(), table["continuations"].to_pylist()):
            context = len(tokenizer(prefix + query)["input_ids"])
            lengths = [len(tokenizer(answer, add_special_tokens=False)["input_ids"]) for answer in answers]
            documents, ours, theirs = documents + 1, ours + context + sum(lengths), theirs + sum(context + n for n in lengths)
    return documents, ours, theirs


def sampled(python: str, folder: str, include: str, work: Path, limit: int) -> None:
    """``copa_sample`` once, 2-shot, seed 1: seedscope's sweep against lm_eval, whole processes."""
    from seedscope.store import ExperimentStore

    task, shots = "copa_sample", 2
    print(f"{task}: {shots}-shot, 4 sampled repeats, {limit or 'all'} documents, SmolLM2-135M-Instruct fp32 CPU, "
          f"batch {BATCH}")
    out = work / "seedscope-sampled"
    ours, _ = timed([python, "-m", "seedscope", "sweep", "--runner", "icl", "--task", f"lm-eval:{task}", "--model",
                     folder, "--seeds", "1", "--shots", str(shots), "--lm-eval-include", include,
                     "--set", f"batch_size={BATCH}", "--out", str(out)]
                    + (["--set", f"max_eval_examples={limit}"] if limit else []))
    (metrics,) = ExperimentStore.open(out).runs()["metrics"]
    target = work / "lm_eval_sampled"
    theirs, _ = timed([python, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={folder},dtype=float32",
                       "--tasks", task, "--include_path", include, "--num_fewshot", str(shots), "--batch_size",
                       str(BATCH), "--device", "cpu", "--seed", "0,1234,1234,1", "--output_path", str(target)]
                      + (["--limit", str(limit)] if limit else []))
    (results,) = target.rglob("results_*.json")
    harness = json.loads(results.read_text())["results"][task]
    print(f"seedscope sweep (1 process)    {ours:8.1f} s")
    print(f"lm_eval (1 invocation)         {theirs:8.1f} s   seedscope is {theirs / ours:5.2f}× faster")
    for key in ("exact_match,maj", "exact_match,first"):
        print(f"{key}: seedscope {metrics[key]:.4f}  lm_eval {harness[key]:.4f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 documents instead of all 100")
    parser.add_argument("--sampled", action="store_true", help="the sampled task copa_sample, one seed")
    args = parser.parse_args()
    limit = 16 if args.quick else 0
    python = sys.executable
    from seedscope.config import resolve_model
    from seedscope.runners.checkpoints import gguf_folder
    from seedscope.store import ExperimentStore

    folder = str(gguf_folder(Path(resolve_model("smollm2-135m-instruct"))))
    work = Path(tempfile.mkdtemp(prefix="bench-lm-eval-"))
    include = str(write_tasks(work / "tasks", (REPO.parent / "shared" / "data").resolve()))
    if args.sampled:
        sampled(python, folder, include, work, limit)
        return
    docs = f"{limit} documents" if limit else "all documents"
    print(f"{TASK}: {SHOTS}-shot, seeds {SEEDS}, {docs}, SmolLM2-135M-Instruct fp32 CPU, batch {BATCH}")

    out = work / "seedscope"
    command = [python, "-m", "seedscope", "sweep", "--runner", "icl", "--task", f"lm-eval:{TASK}", "--model", folder,
               "--seeds", ",".join(map(str, SEEDS)), "--shots", str(SHOTS), "--lm-eval-include", include,
               "--set", f"batch_size={BATCH}", "--out", str(out)] + (["--set", f"max_eval_examples={limit}"] if limit else [])
    ours, _ = timed(command)
    runs = ExperimentStore.open(out).runs()
    seedscope_scores = {int(r.seed): r.metrics["acc,none"] for r in runs.itertuples()}

    invocations, invocation_scores = 0.0, {}
    for seed in SEEDS:
        target = work / f"lm_eval_{seed}"
        seconds, _ = timed([python, "-m", "lm_eval", "--model", "hf", "--model_args",
                            f"pretrained={folder},dtype=float32", "--tasks", TASK, "--include_path", include,
                            "--num_fewshot", str(SHOTS), "--batch_size", str(BATCH), "--device", "cpu",
                            "--seed", f"0,1234,1234,{seed}", "--output_path", str(target)]
                           + (["--limit", str(limit)] if limit else []))
        invocations += seconds
        (results,) = target.rglob("results_*.json")
        invocation_scores[seed] = json.loads(results.read_text())["results"][TASK]["acc,none"]

    loop, printed = timed([python, "-c", LOOP, folder, include, str(limit), str(SHOTS), str(BATCH),
                           ",".join(map(str, SEEDS))])
    loop_scores = {int(k): v for k, v in json.loads(printed.split("SCORES ", 1)[1]).items()}

    print(f"seedscope (1 process)          {ours:8.1f} s")
    print(f"lm_eval × {len(SEEDS)} invocations        {invocations:8.1f} s   seedscope is {invocations / ours:5.2f}× faster")
    print(f"simple_evaluate loop (1 proc.) {loop:8.1f} s   seedscope is {loop / ours:5.2f}× faster")
    for seed in SEEDS:
        print(f"seed {seed}: acc seedscope {seedscope_scores[seed]:.4f}  lm_eval {invocation_scores[seed]:.4f}  "
              f"loop {loop_scores[seed]:.4f}")
    equal = all(abs(seedscope_scores[s] - invocation_scores[s]) < 1e-9 and abs(seedscope_scores[s] - loop_scores[s]) < 1e-9
                for s in SEEDS)
    documents, ours_tokens, their_tokens = tokens_read(out)
    print(f"tokens read over the {documents} prompts: seedscope {ours_tokens}, lm-eval {their_tokens} "
          f"({their_tokens / ours_tokens:.2f}×: lm-eval reads the context once per answer)")
    print("scores equal:", equal)
    if not equal:
        raise SystemExit(1)


if __name__ == "__main__":
    main()

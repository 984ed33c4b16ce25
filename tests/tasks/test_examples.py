"""Every task's loader on the real GLUE / SuperGLUE files in ../shared/data (counts from its README)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from seedscope.errors import SeedscopeError
from seedscope.tasks import get_task, load_examples
from seedscope.tasks import examples as examples_module

ROWS = {
    ("cola", "train"): 8551, ("cola", "validation"): 1043, ("sst2", "train"): 67349, ("sst2", "validation"): 872,
    ("mrpc", "train"): 3668, ("mrpc", "validation"): 408, ("glue-rte", "train"): 2490,
    ("glue-rte", "validation"): 277, ("stsb", "train"): 5749, ("stsb", "validation"): 1500,
    ("qnli", "validation"): 5463, ("boolq", "validation"): 3270, ("cb", "train"): 250, ("cb", "validation"): 56,
    ("copa", "train"): 400, ("copa", "validation"): 100, ("multirc", "train"): 27243,
    ("multirc", "validation"): 4848, ("superglue-rte", "train"): 2490, ("superglue-rte", "validation"): 277,
    ("wic", "train"): 5428, ("wic", "validation"): 638, ("wsc", "train"): 554, ("wsc", "validation"): 104,
}
#: class counts (by label name) the data README checked against the published statistics
CLASS_COUNTS = {
    ("cola", "train"): {"acceptable": 6023, "unacceptable": 2528},
    ("cola", "validation"): {"acceptable": 721, "unacceptable": 322},
    ("sst2", "train"): {"negative": 29780, "positive": 37569},
    ("sst2", "validation"): {"negative": 428, "positive": 444},
    ("mrpc", "train"): {"equivalent": 2474, "not_equivalent": 1194},
    ("mrpc", "validation"): {"equivalent": 279, "not_equivalent": 129},
    ("qnli", "validation"): {"entailment": 2702, "not_entailment": 2761},
}


@pytest.mark.parametrize(("task", "split"), sorted(ROWS))
def test_every_present_split_loads_with_its_row_count_and_label_set(data_dir, task, split):
    spec = get_task(task)
    frame = load_examples(task, split, data_dir)
    assert len(frame) == ROWS[task, split]
    assert list(frame.columns[:4]) == ["example_id", "text", "text_pair", "label"]
    assert frame["example_id"].is_unique
    assert frame["text"].map(lambda t: isinstance(t, str) and t.strip() != "").all()
    if spec.task_type == "regression":
        assert frame["label"].dtype == float and frame["label"].between(0, 5).all()
    else:
        assert frame["label"].dtype == "int64"
        assert set(frame["label"]) == set(range(len(spec.label_names)))
    if spec.shape == "single" or spec.task_type == "multiple_choice":
        assert frame["text_pair"].isna().all()
    else:
        assert frame["text_pair"].map(lambda t: isinstance(t, str)).all()


@pytest.mark.parametrize(("task", "split"), sorted(CLASS_COUNTS))
def test_class_counts_match_the_published_statistics(data_dir, task, split):
    frame = load_examples(task, split, data_dir)
    names = get_task(task).label_names
    assert dict(Counter(names[c] for c in frame["label"])) == CLASS_COUNTS[task, split]


def test_glue_ids_are_data_row_indices_in_file_order(data_dir):
    frame = load_examples("sst2", "validation", data_dir)
    assert list(frame["example_id"]) == [str(i) for i in range(872)]
    assert frame["text"].iloc[0] == "it 's a charming and often affecting journey . "
    assert frame["label"].iloc[:2].tolist() == [1, 0]


def test_ids_are_the_files_own_idx_in_file_order(data_dir):
    """Each row is the file's row of the same ``idx``, read here independently with json (no seedscope code)."""
    lines = (data_dir / "superglue" / "WiC" / "val.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    frame = load_examples("wic", "validation", data_dir)
    assert frame["example_id"].tolist() == [str(r["idx"]) for r in records]
    assert frame["text"].tolist() == [f"{r['word']}: {r['sentence1']}" for r in records]
    assert frame["text_pair"].tolist() == [r["sentence2"] for r in records]
    assert frame["label"].tolist() == [int(r["label"]) for r in records]  # label names: False, True


def test_glue_and_superglue_rte_hold_the_same_examples(data_dir):
    glue, superglue = load_examples("rte", "validation", data_dir), load_examples("superglue-rte", "validation", data_dir)
    assert glue["label"].tolist() == superglue["label"].tolist()
    assert glue["example_id"].tolist() == superglue["example_id"].tolist()


def test_cola_headerless_tsv_and_mrpc_bom(data_dir):
    cola = load_examples("cola", "train", data_dir)
    assert cola["text"].iloc[0] == "Our friends won't buy this analysis, let alone the next one we propose."
    mrpc = load_examples("mrpc", "validation", data_dir)
    assert mrpc["text"].iloc[0].startswith("He said the foodservice pie business")
    assert mrpc["label"].iloc[:2].tolist() == [1, 0]


def test_rte_keeps_unbalanced_quotes(data_dir):
    frame = load_examples("rte", "train", data_dir)
    assert frame["text"].str.count('"').mod(2).eq(1).any()  # read with quoting off, as GLUE does


def test_stsb_scores_are_floats_from_the_last_column(data_dir):
    frame = load_examples("stsb", "train", data_dir)
    assert frame["label"].iloc[:2].tolist() == [5.0, 3.8]
    assert frame[["text", "text_pair"]].iloc[0].tolist() == ["A plane is taking off.", "An air plane is taking off."]


def test_copa_becomes_premise_plus_question_and_two_choices(data_dir):
    frame = load_examples("copa", "validation", data_dir)
    first = frame.iloc[0]
    assert first["text"] == "The man turned on the faucet. What happened as a result?"
    assert first["choices"] == ["The toilet filled with water.", "Water flowed from the spout."]
    assert first["label"] == 1
    assert frame["choices"].map(len).eq(2).all()
    assert frame["text"].str.endswith(("What was the cause?", "What happened as a result?")).all()
    assert frame["text"].str.endswith("What was the cause?").sum() == 52  # as many as "cause" rows in val.jsonl


def test_multirc_is_one_row_per_question_answer_pair(data_dir):
    frame = load_examples("multirc", "validation", data_dir)
    parts = frame["example_id"].str.split("-", expand=True)
    assert parts.shape[1] == 3
    assert parts[0].nunique() == 83 and parts[[0, 1]].drop_duplicates().shape[0] == 953
    first = frame.iloc[0]
    assert first["example_id"] == "0-0-0"
    assert first["text"].startswith("What causes a change in motion?")
    assert first["text_pair"] == "Would the mass of a baseball affect how much force you have to use to pick it up? No"
    assert frame.groupby(parts[0])["text"].nunique().eq(1).all()  # one passage per paragraph id


def test_wic_carries_the_word(data_dir):
    first = load_examples("wic", "validation", data_dir).iloc[0]
    assert first["text"] == "class: An emerging professional class."
    assert first["text_pair"].startswith("Apologizing for losing your temper")
    assert first["label"] == 0


def test_wsc_asks_about_the_spans(data_dir):
    first = load_examples("wsc", "validation", data_dir).iloc[0]
    assert first["text_pair"] == 'Does "him" refer to "anyone"?'


@pytest.mark.parametrize(
    ("task", "split", "missing"),
    [("qqp", "train", "glue/QQP/train.tsv"), ("qqp", "validation", "glue/QQP/dev.tsv"),
     ("qnli", "train", "glue/QNLI/train.tsv"), ("boolq", "train", "superglue/BoolQ/train.jsonl")],
)
def test_missing_files_name_what_is_missing(data_dir, task, split, missing):
    with pytest.raises(SeedscopeError, match=f"{split} split: .*{missing} not found in data directory"):
        load_examples(task, split, data_dir)


def test_data_directory_without_the_task_or_absent(tmp_path):
    with pytest.raises(SeedscopeError, match="glue/CoLA/dev.tsv not found"):
        load_examples("cola", "validation", tmp_path)
    with pytest.raises(SeedscopeError, match="data directory .*nowhere does not exist"):
        load_examples("cola", "validation", tmp_path / "nowhere")


def test_environment_variable_names_the_data_directory(data_dir, monkeypatch):
    monkeypatch.setenv("SEEDSCOPE_DATA_DIR", str(data_dir))
    assert len(load_examples("cb", "dev")) == 56


def test_unknown_split():
    with pytest.raises(SeedscopeError, match="unknown split 'test'"):
        load_examples("cb", "test")


def _write(root, relative, text):
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("task", "relative", "text", "message"),
    [
        ("rte", "glue/RTE/dev.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tentailment\n1\ta\tb\n",
         r"dev.tsv:3: malformed row: expected 4 tab-separated columns, found 3"),
        ("rte", "glue/RTE/dev.tsv", "index\tsentence1\tsentence2\tlabel\n0\ta\tb\tmaybe\n",
         r"dev.tsv:2: malformed row: label 'maybe' is not one of entailment, not_entailment"),
        ("sst2", "glue/SST-2/dev.tsv", "sentence\tlabel\nfine\t2\n", r"dev.tsv:2: malformed row: label '2'"),
        ("mrpc", "glue/MRPC/dev.tsv", "Quality\tID\n", r"dev.tsv:1: header lacks column\(s\) #1 String"),
        ("stsb", "glue/STS-B/dev.tsv",
         "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
         "0\tg\tf\ty\to\ts\ts\ta\tb\thigh\n", r"dev.tsv:2: malformed row: label 'high' is not a number"),
        ("stsb", "glue/STS-B/dev.tsv",
         "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore\n"
         "0\tg\tf\ty\to\ts\ts\ta\tb\tnan\n", r"dev.tsv:2: malformed row: label 'nan' is not a finite number"),
        ("cb", "superglue/CB/val.jsonl", '{"premise": "a", "hypothesis": "b", "label": "neutral", "idx": 0}\n{oops\n',
         r"val.jsonl:2: malformed row: not valid JSON"),
        ("cb", "superglue/CB/val.jsonl", '{"premise": "a", "label": "neutral", "idx": 0}\n',
         r"val.jsonl:1: malformed row: missing field 'hypothesis'"),
        ("cb", "superglue/CB/val.jsonl",
         '{"premise": "a", "hypothesis": "b", "label": "neutral", "idx": 0}\n\n'
         '{"premise": "a", "hypothesis": "b", "label": "neutral", "idx": 0}\n',
         r"val.jsonl:3: duplicate example id 0 \(first at .*val.jsonl:1\)"),
        ("copa", "superglue/COPA/val.jsonl",
         '{"premise": "p", "choice1": "a", "choice2": "b", "question": "why", "label": 0, "idx": 0}\n',
         r"val.jsonl:1: malformed row: question 'why' is not cause or effect"),
        ("multirc", "superglue/MultiRC/val.jsonl", '{"idx": 0, "passage": {"text": "t"}}\n',
         r"val.jsonl:1: malformed MultiRC passage: missing or wrong field 'questions'"),
    ],
)
def test_malformed_rows_name_file_and_line(tmp_path, task, relative, text, message):
    _write(tmp_path, relative, text)
    with pytest.raises(SeedscopeError, match=message):
        load_examples(task, "validation", tmp_path)


def test_hub_records_build_the_same_examples_as_local_files(data_dir, monkeypatch):
    """Hub rows (flat MultiRC, WSC spans at top level, ClassLabel ints) give the local files' examples."""
    hub_rows = [{"paragraph": "P", "question": "Q?", "answer": "A", "idx": {"paragraph": 0, "question": 1, "answer": 2},
                 "label": 1}]
    calls = []

    def fake_load_dataset(path, config, split, revision):
        calls.append((path, config, split, revision))
        return hub_rows

    datasets = pytest.importorskip("datasets")
    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    monkeypatch.delenv("SEEDSCOPE_DATA_DIR", raising=False)
    frame = load_examples("multirc", "validation")
    assert calls == [("aps/super_glue", "multirc", "validation", "refs/convert/parquet")]
    assert frame.iloc[0].to_dict() == {"example_id": "0-1-2", "text": "P", "text_pair": "Q? A", "label": 1}
    hub_rows[:] = [{"text": "T", "span1_index": 0, "span2_index": 3, "span1_text": "x", "span2_text": "y",
                    "idx": 7, "label": 0}]
    assert load_examples("wsc", "train").iloc[0]["text_pair"] == 'Does "y" refer to "x"?'


def test_hub_failure_is_one_clear_message(monkeypatch):
    datasets = pytest.importorskip("datasets")

    def offline(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'nyu-mll/glue' on the Hub (LocalEntryNotFoundError)\ndetails")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.delenv("SEEDSCOPE_DATA_DIR", raising=False)
    with pytest.raises(SeedscopeError, match=r"could not load nyu-mll/glue/rte \(train\) from the Hugging Face hub: "
                                             r"Couldn't reach .*; offline, pass --data-dir"):
        examples_module.load_examples("rte", "train")


def test_offline_hub_is_one_clear_message(monkeypatch):
    """The real ``datasets`` call with HF offline mode on (conftest), no mock."""
    pytest.importorskip("datasets")
    monkeypatch.delenv("SEEDSCOPE_DATA_DIR", raising=False)
    with pytest.raises(SeedscopeError, match=r"could not load aps/super_glue/cb \(validation\) from the Hugging Face "
                                             r"hub: .*; offline, pass --data-dir or set SEEDSCOPE_DATA_DIR"):
        load_examples("cb", "validation")

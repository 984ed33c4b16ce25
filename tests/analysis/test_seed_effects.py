"""The analysis API: analyze / analyze_groups return DataFrames and a documented dict."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import seedscope
from seedscope.analysis.seed_effects import MICRO_COLUMNS
from seedscope.errors import SeedscopeError


def long_table(predictions: dict[str, list], labels: list | None, **extra) -> pd.DataFrame:
    rows = []
    for run, values in predictions.items():
        for i, value in enumerate(values):
            row = {"run": run, "example_id": i, "prediction": value, **extra}
            if labels is not None:
                row["label"] = labels[i]
            rows.append(row)
    return pd.DataFrame(rows)


FIGURE1 = long_table({"42": [1] * 6 + [0] * 4, "52": [0] * 4 + [1] * 6}, [1] * 10)


def test_figure1_through_the_api():
    result = seedscope.analyze(FIGURE1)
    assert result.macro.loc["accuracy", "mean"] == pytest.approx(0.6)
    assert result.macro.loc["accuracy", "var_published"] == 0
    micro = result.micro.iloc[0]
    assert micro["con"] == pytest.approx(0.2) and micro["ccon"] == pytest.approx(0.2)
    assert (micro["n_runs"], micro["n_examples"], micro["n_pairs"]) == (2, 10, 1)
    assert list(result.micro.columns) == list(MICRO_COLUMNS)
    assert result.con_matrix.loc["42", "52"] == pytest.approx(0.2)
    assert result.primary_metric == "accuracy"
    assert result.category_counts().to_dict() == {"unstable": 8, "robust": 2}


def test_macro_across_runs_by_hand():
    # three runs on 4 examples with accuracies 1.0, 0.75, 0.5
    gold = [0, 1, 0, 1]
    table = long_table({"a": [0, 1, 0, 1], "b": [0, 1, 0, 0], "c": [0, 0, 0, 0]}, gold)
    result = seedscope.analyze(table, n_boot=200)
    row = result.macro.loc["accuracy"]
    assert row["mean"] == pytest.approx(0.75)
    assert row["var_published"] == pytest.approx(math.sqrt((0.0625 + 0 + 0.0625) / 3))
    assert row["std_sample"] == pytest.approx(0.25)
    assert row["cv"] == pytest.approx(0.25 / 0.75)
    assert result.per_run["accuracy"].tolist() == pytest.approx([1.0, 0.75, 0.5])
    # pairs: (a,b) 3/4, (a,c) 2/4, (b,c) 3/4 → CON 2/3; CCON (a,b) 3/4, (a,c) 2/4, (b,c) 2/4
    micro = result.micro.iloc[0]
    assert micro["con"] == pytest.approx(2 / 3)
    assert micro["ccon"] == pytest.approx(7 / 12)
    assert micro["con_pair_std"] == pytest.approx(np.std([0.75, 0.5, 0.75]))  # population
    assert micro["ccon_pair_std"] == pytest.approx(np.std([0.75, 0.5, 0.5]))


def test_unlabelled_predictions_give_con_only():
    result = seedscope.analyze(FIGURE1.drop(columns="label"))
    micro = result.micro.iloc[0]
    assert micro["con"] == pytest.approx(0.2)
    assert math.isnan(micro["ccon"]) and result.ccon_matrix is None
    assert result.macro.empty and result.primary_metric is None
    out = result.to_dict()
    assert out["micro"]["ccon"] is None and out["metrics"] == {}


def test_regression():
    gold = [1.0, 2.0, 3.0, 4.0, 5.5]
    table = long_table({"a": [1.1, 2.2, 2.9, 4.3, 5.0], "b": [0.9, 2.5, 3.1, 3.7, 5.9], "c": [1.5, 1.9, 3.3, 4.1, 5.2]}, gold)
    result = seedscope.analyze(table)
    assert result.task_type == "regression" and result.primary_metric == "pearson"
    assert set(result.macro.index) == {"pearson", "spearman"}
    runs = table.pivot(index="run", columns="example_id", values="prediction").to_numpy()
    # ζ computed independently with scipy (pivot sorts example ids, as does the gold order here)
    pearson = np.array([stats.pearsonr(row, gold).statistic for row in runs])
    micro = result.micro.iloc[0]
    # CCON(A,B) = ½(ζ_A + ζ_B); its mean over pairs is the mean ζ
    assert micro["ccon"] == pytest.approx(pearson.mean())
    corr = np.corrcoef(runs)
    assert micro["con"] == pytest.approx(corr[np.triu_indices(3, 1)].mean())
    spearman = seedscope.analyze(table, primary_metric="spearman").micro.iloc[0]["ccon"]
    assert spearman == pytest.approx(np.mean([stats.spearmanr(row, gold).statistic for row in runs]))


def test_probabilities_give_probabilistic_consistency():
    table = long_table({"a": ["x", "y"], "b": ["x", "x"]}, ["x", "y"])
    table["prob_x"] = [0.9, 0.2, 0.6, 0.7]
    table["prob_y"] = [0.1, 0.8, 0.4, 0.3]
    micro = seedscope.analyze(table).micro.iloc[0]
    # example 0: min(.9,.6)+min(.1,.4) = .7 ; example 1: min(.2,.7)+min(.8,.3) = .5
    assert micro["prob_con"] == pytest.approx(0.6)
    assert micro["prob_con_pair_std"] == 0


def test_to_dict_is_the_documented_json():
    result = seedscope.analyze(FIGURE1, n_boot=100)
    out = json.loads(json.dumps(result.to_dict(top_k=3), allow_nan=False))
    assert out["units"] == "fraction"
    assert set(out["metrics"]) == {"accuracy", "precision_macro", "recall_macro", "f1_macro", "mcc"}
    assert set(out["metrics"]["accuracy"]) == {"mean", "var_published", "std_sample", "cv", "min", "max", "ci_low",
                                               "ci_high", "t_low", "t_high", "t_clipped"}
    assert out["micro"]["n_runs"] == 2 and isinstance(out["micro"]["n_runs"], int)
    assert len(out["most_unstable"]) == 3 and out["most_unstable"][0]["category"] == "unstable"
    assert out["con_matrix"] == [[1.0, 0.2], [0.2, 1.0]]


def test_most_unstable_carries_text_when_the_table_has_it():
    table = FIGURE1.assign(text=lambda t: "sentence " + t["example_id"].astype(str))
    top = seedscope.analyze(table).most_unstable(2)
    assert top["text"].tolist() == ["sentence 0", "sentence 1"]


def test_one_run_is_refused():
    with pytest.raises(SeedscopeError, match="at least two"):
        seedscope.analyze(FIGURE1[FIGURE1["run"] == "42"])


def test_unknown_primary_metric_is_refused():
    with pytest.raises(SeedscopeError, match="unknown metric"):
        seedscope.analyze(FIGURE1, primary_metric="bleu")


def test_several_tasks_need_analyze_groups():
    table = pd.concat([FIGURE1.assign(task="rte"), FIGURE1.assign(task="cb")])
    with pytest.raises(SeedscopeError, match="analyze_groups"):
        seedscope.analyze(table)
    results = seedscope.analyze_groups(table.assign(model="roberta"), n_boot=50)
    assert set(results) == {("rte", "roberta"), ("cb", "roberta")}
    assert results[("cb", "roberta")].micro.iloc[0]["con"] == pytest.approx(0.2)
    assert set(seedscope.analyze_groups(FIGURE1)) == {(None, None)}


def test_intersect_reports_dropped_examples():
    table = FIGURE1[~((FIGURE1["run"] == "52") & (FIGURE1["example_id"] == 9))]
    with pytest.raises(SeedscopeError, match="--intersect"):
        seedscope.analyze(table)
    result = seedscope.analyze(table, intersect=True)
    assert result.micro.iloc[0]["n_dropped"] == 1 and result.micro.iloc[0]["n_examples"] == 9


def test_registry_tasks_get_their_primary_metric_and_task_type():
    whole = long_table({"a": [1.0, 2.0, 3.0, 5.0], "b": [1.0, 3.0, 3.0, 4.0]}, [1.0, 2.0, 4.0, 5.0], task="stsb")
    (key, result), = seedscope.analyze_groups(whole).items()
    assert key == ("stsb", None) and result.task_type == "regression" and result.primary_metric == "pearson"
    cola = seedscope.analyze_groups(FIGURE1.assign(task="cola"))[("cola", None)]
    assert cola.primary_metric == "mcc"
    chosen = seedscope.analyze_groups(FIGURE1.assign(task="cola"), primary_metric="f1_macro")[("cola", None)]
    assert chosen.primary_metric == "f1_macro"


def test_infinite_regression_predictions_are_refused():
    table = long_table({"1": [0.5, 1.5, float("inf")], "2": [0.4, 1.2, 2.0]}, [0.5, 1.0, 2.0])
    with pytest.raises(SeedscopeError, match="prediction is infinite .*must be finite"):
        seedscope.analyze(table, task_type="regression")


def test_error_bars_variance_split_and_mdd_by_hand():
    labels = [1, 0, 1, 1]
    table = long_table({"a": [1, 0, 1, 1], "b": [1, 1, 1, 1], "c": [0, 0, 1, 1]}, labels)
    result = seedscope.analyze(table, n_boot=100)
    bars = result.error_bars
    assert bars["accuracy"].tolist() == pytest.approx([1.0, 0.75, 0.75])
    assert bars["se"].tolist() == pytest.approx([0.0, 0.25, 0.25])  # sqrt(0.25 / 4): s² = 1/4 for 3 of 4 right
    split = result.variance_split
    assert split["seed_variance"] == pytest.approx(np.var([1.0, 0.75, 0.75], ddof=1))
    assert split["example_variance"] == pytest.approx(2 * 0.0625 / 3)
    assert split["dominant"] == "examples"
    expected = (stats.norm.ppf(0.975) + stats.norm.ppf(0.8)) * math.sqrt(2 * split["total_variance"] / 3)
    assert split["mdd"] == pytest.approx(expected)
    assert "se_clustered" not in bars


def test_cluster_column_gives_clustered_standard_errors():
    labels = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1]
    runs = {"a": [1, 0, 1, 1, 0, 1, 0, 0, 1, 1], "b": [1, 1, 1, 1, 0, 0, 0, 0, 1, 0]}
    table = long_table(runs, labels).assign(cluster=[str(i // 2) for i in range(10)] * 2)
    table["label"] = 1  # correctness = the prediction itself: x of stat-checks §7
    result = seedscope.analyze(table, n_boot=100)
    assert result.error_bars["se_clustered"].iloc[0] == pytest.approx(0.187083, abs=1e-6)  # stat-checks §7
    assert result.error_bars["se"].iloc[0] == pytest.approx(0.163299, abs=1e-6)


def test_degenerate_runs_are_flagged():
    labels = [1, 1, 1, 0, 0, 1]  # majority rate 4/6
    table = long_table({"one-class": [0] * 6, "at-majority": [1, 1, 0, 1, 0, 1], "good": [1, 1, 1, 0, 0, 1],
                        "below": [0, 1, 1, 1, 0, 0]}, labels)
    result = seedscope.analyze(table, n_boot=100)
    reasons = result.degenerate["reason"]
    assert reasons["one-class"] == "predicts one class only"
    assert reasons["at-majority"].startswith("accuracy 0.6667 at or below the baseline 0.6667")
    assert reasons["below"].startswith("accuracy 0.5000")
    assert "good" not in reasons
    assert result.to_dict()["degenerate_runs"]["one-class"] == "predicts one class only"


def test_t_interval_beside_the_bootstrap():
    table = long_table({"a": [1, 0, 1, 1], "b": [1, 1, 1, 1], "c": [0, 0, 1, 1]}, [1, 0, 1, 1])
    row = seedscope.analyze(table, n_boot=100).macro.loc["accuracy"]
    values = [1.0, 0.75, 0.75]
    low, high = stats.t.interval(0.95, 2, loc=np.mean(values), scale=stats.sem(values))
    assert high > 1 and (row["t_low"], row["t_high"]) == pytest.approx((low, 1.0))  # an accuracy's range: clipped
    assert row["t_clipped"]


def test_bad_power_is_refused():
    with pytest.raises(SeedscopeError, match="power"):
        seedscope.analyze(long_table({"a": [1, 0], "b": [0, 1]}, [1, 0]), power=1.5)


def test_multirc_answers_are_clustered_by_question_without_being_asked():
    ids = [f"{p}-{q}-{a}" for p in range(2) for q in range(3) for a in range(3)]  # 6 questions × 3 answers
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, len(ids))
    rows = [{"task": "multirc", "run": run, "example_id": i, "prediction": int(p), "label": int(g)}
            for run in ("a", "b", "c") for i, g, p in zip(ids, gold, np.where(rng.random(len(ids)) < 0.7, gold, 1 - gold))]
    result = seedscope.analyze_groups(pd.DataFrame(rows), n_boot=100)[("multirc", None)]
    from seedscope.analysis.error_bars import clustered_standard_error

    correct = (result.aligned.predictions == result.aligned.labels).astype(float)
    questions = [example_id.rsplit("-", 1)[0] for example_id in result.aligned.example_ids]
    assert result.error_bars["se_clustered"].tolist() == pytest.approx(clustered_standard_error(correct, questions).tolist())
    other = seedscope.analyze_groups(pd.DataFrame(rows).assign(task="boolq"), n_boot=100)[("boolq", None)]
    assert "se_clustered" not in other.error_bars


def test_integer_ids_give_the_analysis_text_ids_give(tmp_path):
    """Parquet runs with int64 ids and the same runs with the ids as text: the same JSON, ties among the most
    unstable examples included, through the columnar path and the long table alike; only the ids' type differs."""
    from seedscope.io import read_aligned_runs, read_predictions

    rng = np.random.default_rng(3)
    n = 400
    ids, gold = rng.permutation(n) * 13, rng.integers(0, 3, n)  # "1014" sorts before "13" as text
    predictions = [np.where(rng.random(n) < 0.6, gold, rng.integers(0, 3, n)) for _ in range(4)]
    documents = {}
    for kind, column in (("int", ids), ("text", ids.astype(str))):
        (tmp_path / kind).mkdir()
        paths = [tmp_path / kind / f"seed{s}.parquet" for s in range(4)]
        for path, predicted in zip(paths, predictions):
            pd.DataFrame({"example_id": column, "prediction": predicted, "label": gold}).to_parquet(path, index=False)
        aligned = read_aligned_runs(paths)
        assert aligned.example_ids.dtype == (np.int64 if kind == "int" else object)
        for path_taken, inputs in (("columnar", aligned), ("long table", read_predictions(paths))):
            documents[kind, path_taken] = seedscope.analyze(inputs, n_boot=200).to_dict(top_k=50)
    for path_taken in ("columnar", "long table"):
        numeric, text = documents["int", path_taken], documents["text", path_taken]
        assert all(isinstance(row["example_id"], int) for row in numeric["most_unstable"])
        for row in numeric["most_unstable"]:
            row["example_id"] = str(row["example_id"])
        assert numeric == text == documents["text", "columnar"]


@pytest.mark.parametrize("labels", ["all", "some", "none"])
def test_the_per_example_table_made_on_a_second_core_is_the_one_made_at_once(monkeypatch, labels):
    """Large inputs get their per-example agreement and stability in a thread, beside the run-level figures: the
    same analysis, to the last digit, as the one made in line (forced here on a small input)."""
    from seedscope.metrics import stability

    rng = np.random.default_rng(3)
    gold = rng.integers(0, 3, 500)
    table = long_table({str(s): np.where(rng.random(500) < 0.7, gold, rng.integers(0, 3, 500)).tolist()
                        for s in range(6)}, None if labels == "none" else gold.tolist())
    if labels == "some":
        table.loc[table["example_id"] % 7 == 0, "label"] = None
    at_once = seedscope.analyze(table, n_boot=200)
    monkeypatch.setattr(stability, "PARALLEL_CELLS", 0)
    threaded = seedscope.analyze(table, n_boot=200)
    assert json.dumps(threaded.to_dict()) == json.dumps(at_once.to_dict())
    pd.testing.assert_frame_equal(threaded.stability, at_once.stability, check_exact=True)
    pd.testing.assert_frame_equal(threaded.micro, at_once.micro, check_exact=True)

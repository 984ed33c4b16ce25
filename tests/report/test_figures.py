"""Report figures: every figure renders for 1 task / many tasks / 2 seeds / 50 seeds, in every
format, deterministically and in the shared greyscale-safe style; the seed Friedman test."""

from __future__ import annotations

import itertools
import io

import matplotlib.image as mpimg
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from seedscope.factor_study.importance import FactorGrid, FactorStudy, analyze_factors
from seedscope.analysis.subsets import subset_variance
from seedscope.analysis.summary import summarize_tasks
from seedscope.errors import SeedscopeError
from seedscope.report import figure_style
from seedscope.report import figures as figs
from seedscope.report.build import assemble
from seedscope.report.seeds import complete_block, friedman_across_seeds, normalise_per_task, seed_task_scores

TWELVE = ("cola", "sst2", "mrpc", "qnli", "rte", "boolq", "cb", "multirc", "wic", "superglue-rte", "copa", "qqp")


def per_task(task: str, metric: str) -> set[str]:
    """The figure stems of one task: those that plot its primary metric are named after it."""
    return {f"{task}-con-matrix", f"{task}-{metric}-distribution", f"{task}-{metric}-consistency", f"{task}-agreement"}


def _png_pixels(data: bytes) -> np.ndarray:
    return mpimg.imread(io.BytesIO(data), format="png")


@pytest.mark.parametrize(
    ("tasks", "n_seeds"),
    [(("rte",), 5), (TWELVE, 10), (("rte", "mrpc", "cola"), 2), (("rte", "mrpc", "cola"), 50)],
    ids=["1-task", "12-tasks", "2-seeds", "50-seeds"],
)
def test_every_figure_renders(synthetic_predictions, tasks, n_seeds):
    summary = summarize_tasks(synthetic_predictions(tasks, n_seeds=n_seeds, n_examples=150), n_boot=200)
    report = assemble(summary)
    expected = set().union(*(per_task(t, summary.analyses[t].primary_metric) for t in tasks))
    if len(tasks) > 1:
        expected |= {"seed-task-heatmap", "train-size"}
    assert set(report.png) == expected
    for name, data in report.png.items():
        pixels = _png_pixels(data)
        assert pixels.shape[0] > 100 and pixels.shape[1] > 100, name
        assert pixels[..., :3].std() > 0.02, f"{name} is blank"


def test_two_seeds_say_the_friedman_test_needs_three(synthetic_predictions):
    summary = summarize_tasks(synthetic_predictions(("rte", "mrpc", "cola"), n_seeds=2), n_boot=100)
    report = assemble(summary)
    assert np.isnan(report.seed_test.p_value)
    assert "needs at least 3 seeds" in report.seed_test.message
    assert report.seed_test.message in report.html


@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_render_formats_and_is_deterministic(synthetic_predictions, fmt, magic):
    summary = summarize_tasks(synthetic_predictions(("rte",), n_seeds=4, n_examples=80), n_boot=100)
    analysis = summary.analyses["rte"]
    first = figs.render(figs.con_matrix_figure(analysis.con_matrix), fmt)
    second = figs.render(figs.con_matrix_figure(analysis.con_matrix), fmt)
    assert first.startswith(magic)
    assert first == second


def test_unknown_format_is_a_clear_error(synthetic_predictions):
    summary = summarize_tasks(synthetic_predictions(("rte",), n_seeds=3, n_examples=50), n_boot=50)
    fig = figs.con_matrix_figure(summary.analyses["rte"].con_matrix)
    with pytest.raises(SeedscopeError, match="unknown figure format 'jpg'"):
        figs.render(fig, "jpg")


def test_style_separates_series_without_colour(synthetic_predictions):
    """Greyscale readability: the three training-size panels differ in marker and line style,
    heatmaps use the monotone-lightness map."""
    summary = summarize_tasks(synthetic_predictions(TWELVE[:4], n_seeds=4, n_examples=60), n_boot=50)
    data = summary.table1.T.assign(train_size=summary.train_sizes)
    fig = figs.train_size_figure(data, summary.correlation["r"].to_dict())
    lines = [ax.get_lines()[0] for ax in fig.axes]
    assert len({line.get_marker() for line in lines}) == 3
    assert len({line.get_linestyle() for line in lines}) == 3
    heat = figs.con_matrix_figure(summary.analyses["cola"].con_matrix)
    assert heat.axes[0].images[0].get_cmap().name.startswith(figure_style.SEQUENTIAL)
    titles = " ".join(ax.get_title(loc="left") for ax in fig.axes)
    for quantity, r in summary.correlation["r"].items():
        assert f"{quantity}: Pearson r = {r:.3f}" in titles


def test_con_matrix_figure_shows_the_analysis_values(synthetic_predictions):
    summary = summarize_tasks(synthetic_predictions(("rte",), n_seeds=4, n_examples=120), n_boot=50)
    matrix = summary.analyses["rte"].con_matrix
    fig = figs.con_matrix_figure(matrix)
    shown = fig.axes[0].images[0].get_array()
    off = ~np.eye(4, dtype=bool)
    np.testing.assert_allclose(np.asarray(shown)[off], matrix.to_numpy()[off])
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert f"{matrix.iloc[0, 1]:.3f}" in texts


def test_factor_and_subset_figures_render():
    rng = np.random.default_rng(0)
    grids = {name: FactorGrid(name, rng.normal(0.7, scale, size=(6, 5))) for name, scale in
             (("data_order", 0.02), ("model_init", 0.05), ("data_split", 0.01))}
    factors = analyze_factors(FactorStudy(grids=grids, golden=rng.normal(0.7, 0.05, 30)), n_boot=200)
    fig = figs.factor_importance_figure(factors.summary)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == list(factors.summary.sort_values("importance").index)
    assert _png_pixels(figs.render(fig))[..., :3].std() > 0.02
    scores = pd.DataFrame({"system": np.repeat(["A", "B", "C"], 300), "example_id": np.tile(np.arange(300), 3),
                           "score": rng.random(900)})
    subsets = subset_variance(scores, subset_size=50, n_seeds=12)
    assert _png_pixels(figs.render(figs.subset_cv_figure(subsets.summary["cv"], (0.02, 0.08))))[..., :3].std() > 0.02
    delta_fig = figs.subset_delta_figure(subsets.deltas)
    assert len(delta_fig.axes[0].get_lines()) == 3 + 1  # three pairs and the zero line


# ---------------------------------------------------------------- seed × task matrix and Friedman


def test_normalise_per_task_by_hand():
    scores = pd.DataFrame({"a": [0.5, 0.7, 0.6], "b": [0.2, 0.2, 0.2], "c": [0.1, np.nan, 0.3]}, index=["1", "2", "3"])
    out = normalise_per_task(scores)
    assert out["a"].tolist() == pytest.approx([0.0, 1.0, 0.5])
    assert out["b"].tolist() == [0.5, 0.5, 0.5]
    assert out["c"].iloc[0] == 0 and np.isnan(out["c"].iloc[1]) and out["c"].iloc[2] == 1


def _friedman_by_hand(scores: pd.DataFrame) -> float:
    """χ² = 12 / (n k (k+1)) Σ R_j² − 3 n (k+1), ranks within each task (no ties)."""
    n, k = scores.shape[1], scores.shape[0]
    ranks = scores.rank(axis=0).sum(axis=1)
    return 12 / (n * k * (k + 1)) * float((ranks**2).sum()) - 3 * n * (k + 1)


@pytest.mark.parametrize("n_seeds, n_tasks", [(3, 3), (10, 12), (50, 4)])
def test_friedman_matches_the_textbook_formula(n_seeds, n_tasks):
    rng = np.random.default_rng(n_seeds)
    scores = pd.DataFrame(rng.random((n_seeds, n_tasks)), index=[str(s) for s in range(n_seeds)])
    result = friedman_across_seeds(scores)
    assert result.statistic == pytest.approx(_friedman_by_hand(scores))
    assert result.p_value == pytest.approx(stats.chi2.sf(result.statistic, n_seeds - 1))
    assert (result.n_seeds, result.n_tasks) == (n_seeds, n_tasks)
    assert f"p = {result.p_value:.3g}" in result.message


def test_friedman_detects_a_universally_better_seed():
    rng = np.random.default_rng(1)
    scores = pd.DataFrame(rng.random((5, 8)) * 0.01 + np.arange(5)[:, None] * 0.05)
    result = friedman_across_seeds(scores)
    assert result.p_value < 0.01 and "some seed does better" in result.message


def test_friedman_needs_three_tasks_and_uses_complete_seeds():
    two_tasks = pd.DataFrame(np.random.default_rng(0).random((6, 2)))
    result = friedman_across_seeds(two_tasks)
    assert np.isnan(result.p_value) and "3 tasks as blocks (2 here)" in result.message
    scores = pd.DataFrame(np.random.default_rng(0).random((4, 3)), index=list("wxyz"))
    scores.iloc[0, 1] = np.nan
    assert friedman_across_seeds(scores).n_seeds == 3
    scores.iloc[1, 1] = np.nan  # task 1 keeps 2 seeds: no block has 3 seeds × 3 tasks
    message = friedman_across_seeds(scores).message
    assert message.startswith("Friedman test not run") and "left out for lacking those seeds: 1" in message
    assert "3 seeds present in every task (2 here)" in friedman_across_seeds(scores[[1, 2]]).message


def test_seed_task_scores_matches_runs_by_name(synthetic_predictions):
    summary = summarize_tasks(synthetic_predictions(("rte", "cola"), n_seeds=3, n_examples=60), n_boot=50)
    scores = seed_task_scores({t: a.per_run[a.primary_metric] for t, a in summary.analyses.items()})
    for task, analysis in summary.analyses.items():
        for run, value in analysis.per_run[analysis.primary_metric].items():
            assert scores.loc[run, task] == value
    assert list(itertools.chain(scores.columns)) == ["rte", "cola"]


def test_regression_and_two_models_side_by_side(synthetic_predictions):
    rng = np.random.default_rng(0)
    two = synthetic_predictions(("rte", "mrpc", "cola"), n_seeds=4, n_examples=100)
    other = two.assign(model="llama", prediction=np.where(rng.random(len(two)) < 0.1, 1 - two["prediction"],
                                                          two["prediction"]))
    gold = rng.random(120) * 5
    stsb = pd.concat([pd.DataFrame({"task": "stsb", "model": "roberta", "run": f"r{s}", "example_id": np.arange(120),
                                    "prediction": gold + rng.normal(0, 0.5, 120), "label": gold}) for s in range(3)])
    table = pd.concat([two.assign(model="roberta"), other, stsb], ignore_index=True)
    report = assemble(summarize_tasks(table, n_boot=100))
    assert "rte (llama)" in report.summary.analyses and "stsb (roberta)" in report.summary.analyses
    assert {"stsb-roberta-con-matrix", "stsb-roberta-pearson-distribution", "stsb-roberta-pearson-consistency"} <= set(report.png)
    assert "stsb-roberta-agreement" not in report.png  # no per-example agreement for regression
    assert "stsb (roberta)" not in report.counts.index
    assert report.seed_test.n_tasks == 6 and "left out for lacking those seeds: stsb (roberta)" in report.seed_test.message
    assert "CON: Pearson r between\nthe two runs' predictions" in report.figures["stsb-roberta-con-matrix"].axes[1].get_ylabel()
    assert report.figures["stsb-roberta-pearson-distribution"].axes[0].get_xlabel() == "Pearson r"
    assert report.figures["stsb-roberta-pearson-consistency"].axes[0].get_ylabel() == "Pearson r"


def test_unlabelled_predictions_show_only_what_exists(synthetic_predictions):
    table = synthetic_predictions(("rte", "mrpc", "cola"), n_seeds=4, n_examples=80).drop(columns="label")
    report = assemble(summarize_tasks(table, n_boot=50))
    assert set(report.png) == {f"{t}-{k}" for t in ("rte", "mrpc", "cola") for k in ("con-matrix", "agreement")} | {
        "train-size"}
    assert "Friedman" not in report.html and "varies by" not in report.html
    assert list(report.figures["train-size"].axes[0].get_title(loc="left").split(":"))[0] == "CON"


def test_complete_block_keeps_the_seeds_most_tasks_share():
    scores = pd.DataFrame({"a": [0.1, 0.2, 0.3, np.nan], "b": [0.3, 0.1, 0.2, np.nan], "c": [np.nan] * 3 + [0.5]},
                          index=["42", "52", "62", "0"])
    block, left_out = complete_block(scores)
    assert list(block.index) == ["42", "52", "62"] and list(block.columns) == ["a", "b"] and left_out == ["c"]


def test_training_size_figure_draws_no_trend_from_two_tasks():
    data = pd.DataFrame({"train_size": [320.0, 640.0], "VAR": [0.03, 0.02], "CON": [0.8, 0.85]}, index=["rte", "cola"])
    two = figs.train_size_figure(data, {"VAR": float("nan"), "CON": float("nan")})
    assert all(line.get_linestyle() == "None" for ax in two.axes for line in ax.get_lines())
    assert all("r needs ≥ 3 tasks" in ax.get_title(loc="left") for ax in two.axes)
    assert [t.get_text() for t in two.axes[0].get_xticklabels()] == ["320", "640"]  # plain numbers, no 3×10²
    three = figs.train_size_figure(pd.concat([data, pd.DataFrame({"train_size": [67349.0], "VAR": [0.01], "CON": [0.9]},
                                                                  index=["sst2"])]), {"VAR": -0.9, "CON": 0.95})
    assert all(line.get_linestyle() != "None" for ax in three.axes for line in ax.get_lines())
    assert three.axes[0].get_title(loc="left") == "VAR: Pearson r = -0.900"
    assert [t.get_text() for t in three.axes[0].get_xticklabels()] == ["320", "640", "67,349"]


def test_the_seed_heatmap_shows_only_seeds_that_several_tasks_ran(synthetic_predictions):
    """Runs named by run id (a one-factor variation) share no seed with anything: they stay out of the grid."""
    shared = synthetic_predictions(("rte", "mrpc"), n_seeds=4, n_examples=60)
    alone = synthetic_predictions(("cola",), n_seeds=3, n_examples=60, seed=1)
    alone["run"] = "cola__model__icl__f" + alone["run"]
    report = assemble(summarize_tasks(pd.concat([shared, alone], ignore_index=True), n_boot=50))
    axes = report.figures["seed-task-heatmap"].axes[0]
    assert [t.get_text().split("\n")[0] for t in axes.get_xticklabels()] == ["rte", "mrpc"]
    assert [t.get_text() for t in axes.get_yticklabels()] == ["42", "52", "62", "72"]


# ---------------------------------------------------------------- figures a paper can use


def test_every_title_is_one_short_line_and_the_notes_go_to_the_captions(synthetic_predictions):
    """Two seeds: the Friedman test cannot run; that sentence is the heatmap's caption, never its title."""
    summary = summarize_tasks(synthetic_predictions(("rte", "mrpc", "cola"), n_seeds=2, n_examples=80), n_boot=50)
    report = assemble(summary)
    for name, fig in report.figures.items():
        for ax in fig.axes:
            title = ax.get_title(loc="left")
            assert "\n" not in title and len(title) <= 60, f"{name}: {title!r}"
    heatmap = report.figures["seed-task-heatmap"].axes[0].get_title(loc="left")
    assert "Friedman" not in heatmap
    captions = [block.caption for section in report.sections for block in section.figures]
    assert any("Friedman test not run" in caption for caption in captions)


def test_the_seed_heatmap_names_its_per_task_scale_and_shows_the_values(synthetic_predictions):
    summary = summarize_tasks(synthetic_predictions(("rte", "mrpc", "cola"), n_seeds=4, n_examples=100), n_boot=50)
    scores = seed_task_scores({t: a.per_run[a.primary_metric] for t, a in summary.analyses.items()})
    fig = figs.seed_task_heatmap(scores, metric="accuracy")
    ax, bar = fig.axes
    assert bar.get_ylabel() == "seed's place in its task's range"
    assert [t.get_text() for t in bar.get_yticklabels()] == ["lowest", "highest"]
    for label, task in zip(ax.get_xticklabels(), scores.columns):  # each task's own range under its name
        assert label.get_text() == f"{task}\n{scores[task].min():.3f}–{scores[task].max():.3f}"
    cells = {t.get_text() for t in ax.texts}
    assert {f"{v:.3f}" for v in scores.to_numpy().ravel()} == cells  # the values themselves, not their rescaling


def test_the_con_matrix_uses_the_whole_scale_and_says_its_range(synthetic_predictions):
    summary = summarize_tasks(synthetic_predictions(("rte",), n_seeds=4, n_examples=120), n_boot=50)
    matrix = summary.analyses["rte"].con_matrix
    fig = figs.con_matrix_figure(matrix)
    assert fig.axes[0].images[0].get_clim() == (0.0, 1.0)
    off = matrix.to_numpy()[~np.eye(4, dtype=bool)]
    assert f"(these pairs: {off.min():.3f}–{off.max():.3f})" in fig.axes[1].get_ylabel()
    negative = matrix.copy()
    negative.iloc[0, 1] = negative.iloc[1, 0] = -0.2  # a correlation below 0 gets the scale of a correlation
    assert figs.con_matrix_figure(negative).axes[0].images[0].get_clim() == (-1.0, 1.0)


def test_the_spread_is_named_the_population_sd_it_is():
    values = pd.Series([0.70, 0.72, 0.75], index=["1", "2", "3"])
    fig = figs.metric_distribution_figure(values, metric="accuracy", mean=values.mean(), var_published=values.std(ddof=0))
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert f"mean ± population SD\n(VAR = {values.std(ddof=0):.4f})" in legend
    assert fig.axes[0].get_xlabel() == "accuracy"


def test_figure_files_are_300_dpi_and_the_page_embeds_them_at_their_size(synthetic_predictions, tmp_path):
    from seedscope.report.write import write_outputs

    report = assemble(summarize_tasks(synthetic_predictions(("rte",), n_seeds=3, n_examples=60), n_boot=50))
    write_outputs(report, figures_dir=tmp_path / "figs")
    fig = report.figures["rte-con-matrix"]
    written = _png_pixels((tmp_path / "figs" / "rte-con-matrix.png").read_bytes())
    assert written.shape[1] == round(fig.get_figwidth() * figs.PNG_DPI) and figs.PNG_DPI == 300
    embedded = _png_pixels(report.png["rte-con-matrix"])
    assert embedded.shape[1] == round(fig.get_figwidth() * figs.SCREEN_DPI)
    assert f'width="{round(fig.get_figwidth() * 110)}"' in report.html  # the size on the page stays the figure's


def test_no_size_correlation_table_from_two_tasks_and_the_report_says_why(synthetic_predictions, tmp_path):
    from seedscope.report import tables
    from seedscope.report.write import write_outputs

    two = summarize_tasks(synthetic_predictions(("rte", "mrpc"), n_seeds=3, n_examples=60), n_boot=50)
    assert not any(title.startswith("Pearson") for title in tables.summary_sections(two))
    report = assemble(two)
    write_outputs(report, latex_dir=tmp_path / "tables")
    assert sorted(p.stem for p in (tmp_path / "tables").glob("*.tex")) == ["table1", "table7", "tables"]
    assert any(note.startswith("no size-correlation table: the Pearson r of training-set size") and "at least 3 tasks"
               in note for note in report.notes)
    three = summarize_tasks(synthetic_predictions(("rte", "mrpc", "cola"), n_seeds=3, n_examples=60), n_boot=50)
    assert any(title.startswith("Pearson") for title in tables.summary_sections(three)) and not assemble(three).notes

"""The harness's side of lm-eval tasks: registry, groups, seeds mapped onto its sampler, refusals (no model needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import FactorSeeds
from seedscope.tasks import lm_eval_tasks as harness

sys.path.insert(0, str(Path(__file__).parents[1] / "runners" / "icl" / "fixtures" / "lm_eval_tasks"))
from write_tasks import write_tasks  # noqa: E402


@pytest.fixture(scope="module")
def include(tmp_path_factory, data_dir: Path) -> tuple[str, ...]:
    return (str(write_tasks(tmp_path_factory.mktemp("lm-eval-tasks"), data_dir.resolve())),)


def contexts(include, seeds: FactorSeeds, docs: int = 3, **options) -> tuple[list[int], list[str]]:
    task = harness.load_task("lm-eval:copa_local", include)
    built = harness.build_requests(task, shots=2, seeds=seeds, max_docs=docs, **options)
    return [d.doc_id for d in built], [d.instances[0].args[0] for d in built]


def demonstrations(context: str) -> list[str]:
    return sorted(context.split("\n\n")[:-1])


def test_names_groups_and_kinds(include):
    assert harness.is_lm_eval_task("lm-eval:sst2") and not harness.is_lm_eval_task("sst2")
    assert harness.expand(["rte", "lm-eval:local_pair", "lm-eval:copa_local"], include) == [
        "rte", "lm-eval:sst2_local", "lm-eval:copa_local"]
    assert harness.task_kind(harness.load_task("lm-eval:copa_generate", include)) == "generate_until"
    with pytest.raises(SeedscopeError, match="unknown lm-eval task 'copa_locall'.*did you mean lm-eval:copa_local"):
        harness.load_task("lm-eval:copa_locall", include)
    with pytest.raises(SeedscopeError, match="loglikelihood_rolling requests, which seedscope does not score"):
        harness.load_task("lm-eval:copa_rolling", include)
    with pytest.raises(SeedscopeError, match="no such folder"):
        harness.task_manager(("/no/such/folder",))


def test_the_few_shot_seed_is_sample_choice_and_the_order_sample_order(include):
    ids, base = contexts(include, FactorSeeds.tied(3))
    assert ids == [0, 1, 2]
    assert contexts(include, FactorSeeds.tied(3))[1] == base  # the same seed, the same prompts
    other = contexts(include, FactorSeeds.tied(4))[1]
    assert other != base
    assert contexts(include, FactorSeeds.tied(3).replace(model_init=9, data_order=9))[1] == base  # no other factor counts
    reordered = contexts(include, FactorSeeds.tied(3).replace(sample_order=11))[1]
    assert reordered != base and [demonstrations(c) for c in reordered] == [demonstrations(c) for c in base]


def test_data_split_draws_the_documents_and_label_choice_the_pool(include):
    first, _ = contexts(include, FactorSeeds.tied(3).replace(data_split=5), docs=4)
    assert first == [0, 1, 2, 3]  # without resplit: the first documents, as --limit
    drawn, _ = contexts(include, FactorSeeds.tied(3).replace(data_split=5), docs=4, resplit=True)
    again, _ = contexts(include, FactorSeeds.tied(8).replace(data_split=5), docs=4, resplit=True)
    other, _ = contexts(include, FactorSeeds.tied(3).replace(data_split=6), docs=4, resplit=True)
    assert drawn == again != first and other != drawn and len(set(drawn)) == 4
    task = harness.load_task("lm-eval:copa_local", include)
    pool = [str(d) for d in task.sampler.fewshot_docs()]
    _, narrowed = contexts(include, FactorSeeds.tied(3), docs=6, num_labelled=3)
    shown = {demo for context in narrowed for demo in demonstrations(context)}
    assert len(shown) <= 3
    assert [str(d) for d in task.sampler.fewshot_docs()] == pool  # the pool is restored after the run


def test_an_unsupported_version_is_refused(monkeypatch, include):
    monkeypatch.setattr(harness.metadata, "version", lambda name: "0.3.0")
    with pytest.raises(SeedscopeError, match=r"lm-eval 0.3.0 is installed, but seedscope reads lm-eval >=0.4.12,<0.5"):
        harness.load_task("lm-eval:copa_local", include)

    def missing(name):
        raise harness.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(harness.metadata, "version", missing)
    with pytest.raises(SeedscopeError, match=r"pip install 'seedscope\[lm-eval\]'"):
        harness.check_version()


def test_a_task_yaml_that_does_not_load_is_named_with_its_error(tmp_path, data_dir: Path):
    folder = write_tasks(tmp_path / "tasks", data_dir.resolve())
    path = folder / "copa_generate.yaml"
    path.write_text(path.read_text().replace("doc_to_text: ", 'doc_to_text: "', 1))  # a quote never closed
    with pytest.raises(SeedscopeError, match=rf"lm-eval task 'copa_generate': its config {path} could not be loaded "
                                             r"\(.*did not find expected key line 10.*\), so the harness left it out"):
        harness.load_task("lm-eval:copa_generate", (str(folder),))
    with pytest.raises(SeedscopeError, match=rf"unknown lm-eval task 'no_such_task'.*\d config\(s\) there could not be "
                                             rf"loaded, e.g. {path}"):
        harness.load_task("lm-eval:no_such_task", (str(folder),))

"""seedscope: how much do your language-model results depend on randomness?

Every name of :mod:`seedscope.api` is available here, loaded on first use, so that
``import seedscope`` (and ``seedscope.errors``) stays light: no pandas, no torch.
"""

from __future__ import annotations

from seedscope.version import __version__

_API = (
    "Analysis", "Comparison", "ExperimentStore", "FactorAnalysis", "FactorStudy", "FactorStudyConfig",
    "RunScores", "ScoreSummary", "SeedscopeError", "SubsetVariance", "SweepConfig", "TaskSummary", "analyze",
    "analyze_factors", "analyze_groups", "analyze_run_scores", "analyze_subsets", "build_report",
    "build_score_report", "callable_subset_variance", "compare_sweeps", "compare_systems", "load_config",
    "load_preset", "read_aligned_runs", "read_predictions", "read_run_scores", "read_score_table",
    "run_factor_study", "study_from_table", "subset_variance", "summarize_tasks", "sweep",
)
__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        from seedscope import api

        return getattr(api, name)
    raise AttributeError(f"module 'seedscope' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)

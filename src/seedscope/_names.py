"""The public names of seedscope, listed once: :mod:`seedscope.api` exports them and ``import seedscope``
loads them lazily from there (this module imports nothing, so the light import stays light)."""

API = (
    "Analysis", "Comparison", "ExecutionOptions", "ExperimentStore", "FactorAnalysis", "FactorStudy", "FactorStudyConfig",
    "RunScores", "SampledComparison", "SamplingAnalysis", "ScoreSummary", "SeedscopeError", "SubsetVariance", "SweepConfig", "TaskSummary", "analyze",
    "analyze_factors", "analyze_groups", "analyze_run_scores", "analyze_samples", "analyze_subsets", "build_report",
    "build_score_report", "callable_subset_variance", "compare_samples", "compare_sweeps", "compare_systems", "load_config",
    "load_preset", "read_aligned_runs", "read_predictions", "read_run_scores", "read_score_table",
    "run_factor_study", "study_from_table", "subset_variance", "summarize_tasks", "sweep",
)

"""The Python API of seedscope, in one place: every public function and result type.

Nothing inside the package imports this module (it sits on top of every layer); notebooks
and scripts do::

    from seedscope.api import read_predictions, analyze, sweep, run_factor_study
    result = analyze(read_predictions(["seed1.csv", "seed2.csv"]))
    result.macro, result.micro            # pandas DataFrames, fractions in [0, 1]

``import seedscope`` gives the same names lazily (``seedscope.analyze``), so a light import
stays light.
"""

from seedscope._names import API as _API
from seedscope.analysis.compare import Comparison, compare_sweeps, compare_systems
from seedscope.analysis.run_scores import ScoreSummary, analyze_run_scores
from seedscope.analysis.sampled_compare import SampledComparison, compare_samples
from seedscope.analysis.sampling import SamplingAnalysis, analyze_samples
from seedscope.analysis.seed_effects import Analysis, analyze, analyze_groups
from seedscope.analysis.subsets import SubsetVariance, analyze_subsets, callable_subset_variance, subset_variance
from seedscope.analysis.summary import TaskSummary, summarize_tasks
from seedscope.config import SweepConfig, load_config, load_preset
from seedscope.errors import SeedscopeError
from seedscope.executors.options import ExecutionOptions
from seedscope.factor_study.importance import FactorAnalysis, FactorStudy, analyze_factors
from seedscope.workflows.factor_studies import FactorStudyConfig, run_factor_study
from seedscope.factor_study.scores import study_from_table
from seedscope.io import RunScores, read_aligned_runs, read_predictions, read_run_scores, read_score_table
from seedscope.workflows.reporting import build_report, build_score_report
from seedscope.store import ExperimentStore
from seedscope.workflows.sweeping import sweep

__all__ = list(_API)

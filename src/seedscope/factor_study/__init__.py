"""The randomness-factor study, end to end: which factor's randomness matters, with interactions.

========================= ============================================================
module                    owns
========================= ============================================================
``plan``                  investigation × mitigation + golden runs, their seeds and tags
``scores``                a long score table → :class:`FactorStudy` (grids of scores)
``importance``            c, m, σ_GM, IS with its interval, the Random / Fixed baselines
``adaptive``              the adaptive run count (stop once IS, c and m have settled)
``ranking``               IS(A) − IS(B) with an interval paired over shared mitigation runs
========================= ============================================================

Every module here is pure (plans and tables in, results out): running a study — executors,
the store — is the workflow :func:`seedscope.workflows.factor_studies.run_factor_study`.
Names are loaded on first use, so importing a submodule stays light.
"""

from __future__ import annotations

from importlib import import_module

_EXPORTS = {
    "FactorStudyPlan": "plan", "factor_study_plan": "plan", "INVESTIGABLE_FACTORS": "plan",
    "FactorGrid": "importance", "FactorStudy": "importance", "FactorAnalysis": "importance",
    "analyze_factors": "importance", "study_from_table": "scores", "AdaptiveSchedule": "adaptive",
    "simulate_adaptive": "adaptive", "importance_differences": "ranking",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(f"seedscope.factor_study.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module 'seedscope.factor_study' has no attribute {name!r}")

"""Plans: what to run. One :class:`RunSpec` per run, one seed per randomness factor.

:mod:`seedscope.plan.seeds` defines the factors and their seeds, :mod:`seedscope.plan.runs`
the run spec and the plain seed sweep. (The factor study's plan is
:mod:`seedscope.factor_study.plan`.)
"""

from seedscope.plan.runs import METHODS, RunSpec, model_short_name, plan_from_dict, plan_to_dict, seed_sweep
from seedscope.plan.seeds import FACTOR_DESCRIPTIONS, FACTORS, FactorSeeds, check_factor, check_seed

__all__ = [
    "FACTORS", "FACTOR_DESCRIPTIONS", "METHODS", "FactorSeeds", "RunSpec", "check_factor", "check_seed",
    "model_short_name", "plan_from_dict", "plan_to_dict", "seed_sweep",
]

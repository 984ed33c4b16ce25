"""seedscope: how much do your language-model results depend on randomness?"""

from seedscope.analysis.summary import summarize_tasks
from seedscope.api import Analysis, analyze, analyze_groups
from seedscope.errors import SeedscopeError

__version__ = "0.1.0"

__all__ = ["Analysis", "SeedscopeError", "__version__", "analyze", "analyze_groups", "summarize_tasks"]

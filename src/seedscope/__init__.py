"""seedscope: how much do your language-model results depend on randomness?"""

from seedscope.errors import SeedscopeError

__version__ = "0.1.0"

__all__ = ["SeedscopeError", "__version__"]

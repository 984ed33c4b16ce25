"""GLUE and SuperGLUE tasks: the registry (what a task is) and the example loader (its data)."""

from seedscope.tasks.examples import DATA_DIR_ENV, example_clusters, load_examples, resolve_split
from seedscope.tasks.registry import TASKS, TaskSpec, find_task, get_task, list_tasks

__all__ = ["DATA_DIR_ENV", "TASKS", "example_clusters", "TaskSpec", "find_task", "get_task", "list_tasks", "load_examples", "resolve_split"]

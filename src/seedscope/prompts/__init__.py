"""Prompts for in-context learning, as data: each task's question and label words, named formats.

:mod:`.tasks` says what a task asks and which word names each label (its verbaliser);
:mod:`.formats` lists the prompt formats (templates); :mod:`.build` renders a run's prompts
from its demonstrations and test examples. Nothing here loads a model.
"""

from seedscope.prompts.build import CONTINUATIONS, QUERY, Prompts, build_prompts, split_request
from seedscope.prompts.formats import FORMATS, PromptFormat, get_format
from seedscope.prompts.tasks import INVALID, TASK_PROMPTS, TaskPrompt, get_task_prompt

__all__ = ["CONTINUATIONS", "FORMATS", "INVALID", "QUERY", "TASK_PROMPTS", "PromptFormat", "Prompts", "TaskPrompt", "build_prompts",
           "get_format", "get_task_prompt", "split_request"]

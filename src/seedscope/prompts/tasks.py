"""What each task asks a prompted model, and the word that names each of its labels (the verbaliser).

Label words are in the order of the task's label codes (``TaskSpec.label_names``); a
multiple-choice task (COPA) has no label words: its answers are its own choices.
"""

from __future__ import annotations

from dataclasses import dataclass

from seedscope.errors import SeedscopeError
from seedscope.predictions import INVALID
from seedscope.tasks import TaskSpec, get_task

__all__ = ["INVALID", "TASK_PROMPTS", "TaskPrompt", "get_task_prompt"]


@dataclass(frozen=True)
class TaskPrompt:
    """How a task is put to a language model.

    ``question``: what the model answers; ``fields``: the names shown before the first and the
    second text of an example (``None`` when a task has one text); ``words``: one label word
    per label code, or ``None`` for multiple choice (the choices are the answers).
    """

    question: str
    fields: tuple[str, str | None]
    words: tuple[str, ...] | None

    def answers(self, choices=None) -> list[str]:
        """The candidate answers of one example: the label words, or its own choices."""
        if self.words is not None:
            return list(self.words)
        if not choices:
            raise SeedscopeError("a multiple-choice example needs its choices")
        return [str(choice) for choice in choices]


YES_NO = ("no", "yes")
ENTAILS = ("yes", "no")  # entailment, not_entailment

TASK_PROMPTS: dict[str, TaskPrompt] = {
    "sst2": TaskPrompt("Is the sentiment of the sentence negative or positive?", ("Sentence", None),
                       ("negative", "positive")),
    "cola": TaskPrompt("Is the sentence grammatically acceptable? Answer no or yes.", ("Sentence", None), YES_NO),
    "mrpc": TaskPrompt("Do the two sentences mean the same? Answer no or yes.", ("Sentence 1", "Sentence 2"), YES_NO),
    "qqp": TaskPrompt("Do the two questions ask the same? Answer no or yes.", ("Question 1", "Question 2"), YES_NO),
    "qnli": TaskPrompt("Does the sentence answer the question? Answer yes or no.", ("Question", "Sentence"), ENTAILS),
    "glue-rte": TaskPrompt("Does the premise entail the hypothesis? Answer yes or no.", ("Premise", "Hypothesis"),
                           ENTAILS),
    "superglue-rte": TaskPrompt("Does the premise entail the hypothesis? Answer yes or no.",
                                ("Premise", "Hypothesis"), ENTAILS),
    "cb": TaskPrompt("Does the premise entail the hypothesis? Answer yes, no or maybe.", ("Premise", "Hypothesis"),
                     ("yes", "no", "maybe")),  # entailment, contradiction, neutral
    "boolq": TaskPrompt("Answer the question about the passage with no or yes.", ("Passage", "Question"), YES_NO),
    "multirc": TaskPrompt("Is the answer to the question correct? Answer no or yes.", ("Paragraph", "Question"),
                          YES_NO),
    "wic": TaskPrompt("Is the word used with the same meaning in both sentences? Answer no or yes.",
                      ("Sentence 1", "Sentence 2"), YES_NO),
    "wsc": TaskPrompt("Does the pronoun refer to the named noun phrase? Answer no or yes.", ("Text", "Question"),
                      YES_NO),
    "copa": TaskPrompt("Pick the more plausible alternative.", ("Premise", None), None),
}


def get_task_prompt(task: str | TaskSpec) -> TaskPrompt:
    """The task's prompt, or one sentence saying that the task cannot be prompted (e.g. regression)."""
    spec = get_task(task)
    if spec.name not in TASK_PROMPTS:
        prompted = ", ".join(TASK_PROMPTS)
        raise SeedscopeError(
            f"task {spec.name} has no verbaliser (label words) for in-context learning"
            + (" — it is a regression task" if spec.task_type == "regression" else "")
            + f"; tasks that can be prompted: {prompted}"
        )
    prompt = TASK_PROMPTS[spec.name]
    if prompt.words is not None and len(prompt.words) != len(spec.label_names):
        raise SeedscopeError(f"the verbaliser of {spec.name} names {len(prompt.words)} labels, the task has "
                             f"{len(spec.label_names)}")
    return prompt

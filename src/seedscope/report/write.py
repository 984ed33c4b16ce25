"""Writing a report: every output is staged beside its target first, then moved into place.

So a failure (an unwritable folder, no space left) never leaves half a report behind; the
staging and renaming are :mod:`seedscope.atomic`'s.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from seedscope.atomic import discard, move_into_place, staged_dir, staged_file
from seedscope.errors import SeedscopeError
from seedscope.report import figures as figs
from seedscope.report import tables
from seedscope.report.build import Report
from seedscope.report.unstable import unstable_csv

#: file stems of the paper tables, in the order of :func:`seedscope.report.tables.summary_sections`
PAPER_FILES = ("table1", "table7", "size-correlation")


def check_fig_format(fig_format: str) -> None:
    if fig_format not in figs.FIG_FORMATS:
        raise SeedscopeError(f"unknown figure format {fig_format!r}; choose one of {', '.join(figs.FIG_FORMATS)}")


def write_outputs(report: Report, *, html=None, latex_dir=None, figures_dir=None, fig_format: str = "png",
                  unstable_csv_path=None) -> list[Path]:
    """Write the requested outputs: stage all of them first, then move each into place."""
    try:
        return _write_outputs(report, html=html, latex_dir=latex_dir, figures_dir=figures_dir, fig_format=fig_format,
                              unstable_csv_path=unstable_csv_path)
    except OSError as error:  # a name too long, no space left, no permission: one sentence, nothing half-written
        raise SeedscopeError(f"cannot write {error.filename or 'the report'}: {error.strerror or error}") from error


def check_targets(*, html=None, latex_dir=None, figures_dir=None, unstable_csv_path=None) -> list[Path]:
    """Refuse outputs that cannot be written (a folder named as a file, a file named as a folder)."""
    targets = [Path(p) for p in (html, latex_dir, figures_dir, unstable_csv_path) if p is not None]
    for path in (Path(p) for p in (html, unstable_csv_path) if p is not None):
        if path.is_dir():
            raise SeedscopeError(f"{path} is a directory; give a file name")
    for path in (Path(p) for p in (latex_dir, figures_dir) if p is not None):
        if path.exists() and not path.is_dir():
            raise SeedscopeError(f"{path} exists and is not a directory")
    for path in targets:
        blocking = next((parent for parent in path.parents if parent.exists()), None)
        if blocking is not None and not blocking.is_dir():
            raise SeedscopeError(f"cannot write {path}: {blocking} is a file, not a directory")
    return targets


def _write_outputs(report: Report, *, html, latex_dir, figures_dir, fig_format: str, unstable_csv_path) -> list[Path]:
    check_fig_format(fig_format)
    targets = check_targets(html=html, latex_dir=latex_dir, figures_dir=figures_dir,
                            unstable_csv_path=unstable_csv_path)
    staged: list[tuple[Path, Path]] = []
    try:
        if html is not None:
            staged.append((staged_file(html, report.html.encode("utf-8")), Path(html)))
        if unstable_csv_path is not None:
            staged.append((staged_file(unstable_csv_path, unstable_csv(report.unstable).encode("utf-8")),
                           Path(unstable_csv_path)))
        if latex_dir is not None:
            folder = staged_dir(latex_dir)
            staged.append((folder, Path(latex_dir)))
            _write_paper_tables(report.paper_tables, folder)
        if figures_dir is not None:
            folder = staged_dir(figures_dir)
            staged.append((folder, Path(figures_dir)))
            for name, fig in report.figures.items():
                (folder / f"{name}.{fig_format}").write_bytes(figs.render(fig, fig_format))
    except BaseException:
        for path, _ in staged:
            discard(path)
        raise
    for path, target in staged:
        move_into_place(path, target)
    return targets


def _write_paper_tables(paper: dict[str, pd.DataFrame], folder: Path) -> None:
    """One ``.tex`` (booktabs), ``.csv`` and ``.md`` per paper table, and ``tables.tex`` holding
    every table, so that one ``\\input`` brings them all into a paper."""
    stems = [PAPER_FILES[i] if i < len(PAPER_FILES) else f"table-{i + 1}" for i in range(len(paper))]
    latex = []
    for stem, (title, frame) in zip(stems, paper.items()):
        latex.append(tables.to_latex(frame, caption=title, label=f"tab:{stem}"))
        (folder / f"{stem}.tex").write_text(latex[-1], encoding="utf-8")
        (folder / f"{stem}.csv").write_text(tables.to_csv(frame), encoding="utf-8")
        (folder / f"{stem}.md").write_text(f"### {title}\n\n{tables.to_markdown(frame)}", encoding="utf-8")
    header = "% seedscope paper tables (fractions); needs \\usepackage{booktabs}\n"
    (folder / "tables.tex").write_text(header + "\n".join(latex), encoding="utf-8")

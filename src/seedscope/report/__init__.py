"""Reports: paper tables (:mod:`.tables`), figures, unstable examples and one HTML file.

``from seedscope.report import build_report`` is the entry point (see docs/report.md). It is
imported lazily so that ``seedscope analyze``, which only needs the tables, does not pay for
importing Matplotlib.
"""

__all__ = ["build_report"]


def __getattr__(name: str):
    if name == "build_report":
        from seedscope.report.build import build_report

        return build_report
    raise AttributeError(f"module 'seedscope.report' has no attribute {name!r}")

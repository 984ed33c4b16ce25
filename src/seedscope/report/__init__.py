"""Reports: paper tables (:mod:`.tables`), figures (:mod:`.figures`), unstable examples, the HTML page.

:func:`seedscope.report.build.assemble` lays a report out from analysis results and
:func:`seedscope.report.write.write_outputs` writes it; :func:`seedscope.workflows.reporting.build_report`
does both from files (see docs/how-to/report.md). Nothing here reads a path.
"""

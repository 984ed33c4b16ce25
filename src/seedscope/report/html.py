"""One self-contained HTML file: inline CSS, a little inline JavaScript, figures as base64 PNG.

The page needs no network (a Content-Security-Policy forbids any fetch), so it can be mailed,
archived with a paper's supplement or opened offline. Every text that comes from data (task
and run names, example texts, captions) is HTML-escaped. Tables are sortable by clicking a
column header; each numeric cell carries its raw value in ``data-sort`` so that sorting is
by number, not by the displayed text.
"""

from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass, field
from html import escape

import numpy as np
import pandas as pd

from seedscope.report.display import header

#: digits shown for fractions and other floats in HTML tables
FLOAT_DIGITS = 4
#: CSS pixels per inch of figure on the page (the size figures have always been shown at; the PNG holds more)
PAGE_PX_PER_INCH = 110


@dataclass(frozen=True)
class FigureBlock:
    """A rendered PNG figure with its caption; ``name`` is its file stem when saved."""

    name: str
    caption: str
    png: bytes
    #: the PNG's resolution, which sets its size on the page (:data:`PAGE_PX_PER_INCH` per inch of figure)
    dpi: int = 150


@dataclass(frozen=True)
class TableBlock:
    """A DataFrame shown as a sortable table under ``caption``."""

    caption: str
    frame: pd.DataFrame
    index: bool = True


@dataclass
class Section:
    """One part of the report: paragraphs first, then figures (readers look before they read), then tables."""

    title: str
    lines: list[str] = field(default_factory=list)
    tables: list[TableBlock] = field(default_factory=list)
    figures: list[FigureBlock] = field(default_factory=list)


CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1a1a1a;background:#fff;line-height:1.45}
header{background:#0b3d63;color:#fff;padding:1.2em 2em}
header h1{margin:0;font-size:1.6em}
header p{margin:.3em 0 0;opacity:.85}
nav{padding:.6em 2em;background:#f3f5f7;border-bottom:1px solid #d8dde2;font-size:.92em}
nav a{margin-right:1.1em;color:#0b3d63;text-decoration:none;display:inline-block}
nav a:hover{text-decoration:underline}
main{padding:0 2em 3em;max-width:1400px}
section{border-bottom:1px solid #e3e6e9;padding:1em 0 1.5em}
h2{color:#0b3d63;margin:.4em 0}
p.line{margin:.25em 0}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.86em;min-width:min(100%,42em)}
caption{text-align:left;font-weight:600;padding:.3em 0}
th,td{border:1px solid #d0d5da;padding:.25em .55em;vertical-align:top}
th{background:#eef1f4;cursor:pointer;user-select:none;white-space:nowrap}
th[data-dir=asc]::after{content:" \\25B2"}
th[data-dir=desc]::after{content:" \\25BC"}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.text{max-width:38em}
tbody tr:nth-child(even){background:#fafbfc}
.figures{display:flex;flex-wrap:wrap;gap:1.2em;align-items:flex-start}
figure{margin:0;max-width:100%}
figure img{max-width:100%;height:auto;border:1px solid #e3e6e9}
figcaption{font-size:.85em;color:#444;max-width:40em}
.scroll{overflow-x:auto}
"""

SORT_JS = """
(function(){
  function key(cell){
    var raw = cell.getAttribute("data-sort");
    var text = raw === null ? cell.textContent.trim() : raw;
    var number = Number(text);
    return (text === "" || isNaN(number)) ? {n: false, v: text} : {n: true, v: number};
  }
  function compare(a, b){
    if (a.n && b.n) return a.v - b.v;
    if (a.n !== b.n) return a.n ? -1 : 1;
    return String(a.v).localeCompare(String(b.v));
  }
  document.querySelectorAll("table.sortable thead th").forEach(function(th){
    th.addEventListener("click", function(){
      var table = th.closest("table"), body = table.tBodies[0];
      var column = Array.prototype.indexOf.call(th.parentNode.children, th);
      var ascending = th.getAttribute("data-dir") !== "asc";
      table.querySelectorAll("thead th").forEach(function(h){ h.removeAttribute("data-dir"); });
      th.setAttribute("data-dir", ascending ? "asc" : "desc");
      var rows = Array.prototype.slice.call(body.rows);
      rows.sort(function(r, s){
        var c = compare(key(r.cells[column]), key(s.cells[column]));
        return ascending ? c : -c;
      });
      rows.forEach(function(r){ body.appendChild(r); });
    });
  });
})();
"""

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'"


def _anchor(title: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
    anchor, n = base, 2
    while anchor in used:
        anchor, n = f"{base}-{n}", n + 1
    used.add(anchor)
    return anchor


def _header_text(label) -> str:
    """A column's header in words (:func:`~seedscope.report.display.header`)."""
    if isinstance(label, tuple):
        return " ".join(header(part) for part in label if str(part) != "")
    return header(label)


def _cell(value) -> str:
    """A <td> with the displayed value and, for numbers, the raw value to sort by."""
    if isinstance(value, (bool, np.bool_)):
        return f"<td>{'yes' if value else 'no'}</td>"
    if isinstance(value, (int, np.integer)):
        return f'<td class="num" data-sort="{int(value)}">{int(value)}</td>'
    if isinstance(value, (float, np.floating)):
        if math.isnan(value):
            return '<td class="num" data-sort="">–</td>'
        return f'<td class="num" data-sort="{float(value)!r}">{float(value):.{FLOAT_DIGITS}f}</td>'
    if value is None or value is pd.NA:
        return "<td></td>"
    text = str(value)
    css = ' class="text"' if len(text) > 40 else ""
    return f"<td{css}>{escape(text)}</td>"


def table_html(block: TableBlock) -> str:
    """A sortable HTML table of ``block.frame`` (index shown as the first column when asked)."""
    frame = block.frame
    if block.index:
        frame = frame.rename_axis([name or "" for name in frame.index.names]).reset_index()
    head = "".join(f"<th>{escape(_header_text(c))}</th>" for c in frame.columns)
    rows = "\n".join(
        "<tr>" + "".join(_cell(v) for v in row) + "</tr>" for row in frame.itertuples(index=False, name=None)
    )
    return (
        f'<div class="scroll"><table class="sortable"><caption>{escape(block.caption)}</caption>'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n{rows}\n</tbody></table></div>"
    )


def figure_html(block: FigureBlock) -> str:
    """An <img> with the PNG inlined as a data URI, and its caption."""
    data = base64.b64encode(block.png).decode("ascii")
    caption = escape(block.caption)
    width = round(int.from_bytes(block.png[16:20], "big") * PAGE_PX_PER_INCH / block.dpi)  # IHDR: the pixel width
    return (
        f'<figure id="fig-{escape(block.name)}"><img alt="{caption}" width="{width}" src="data:image/png;base64,{data}">'
        f"<figcaption>{caption}</figcaption></figure>"
    )


def render_html(title: str, sections: list[Section], subtitle: str = "") -> str:
    """The whole report as one HTML document, sections in the given order."""
    used: set[str] = set()
    anchors = [_anchor(s.title, used) for s in sections]
    nav = "".join(f'<a href="#{a}">{escape(s.title)}</a>' for a, s in zip(anchors, sections))
    body = []
    for anchor, section in zip(anchors, sections):
        parts = [f'<section id="{anchor}"><h2>{escape(section.title)}</h2>']
        parts += [f'<p class="line">{escape(line)}</p>' for line in section.lines]
        if section.figures:
            parts.append('<div class="figures">' + "".join(figure_html(f) for f in section.figures) + "</div>")
        parts += [table_html(t) for t in section.tables]
        parts.append("</section>")
        body.append("\n".join(parts))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body>"
        f"<header><h1>{escape(title)}</h1><p>{escape(subtitle)}</p></header>"
        f"<nav>{nav}</nav>\n<main>\n" + "\n".join(body) + "\n</main>"
        f"<script>{SORT_JS}</script></body></html>\n"
    )

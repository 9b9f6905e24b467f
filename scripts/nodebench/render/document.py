"""A report as a list of blocks (headings, paragraphs, lists, tables) written out as Markdown or as HTML.

summary.md and index.html say the same things in the same order: both are written from
one list of blocks. Text in a block may use the inline marks **bold**, `code`, *emphasis* and
[a link](href); the HTML writer escapes everything else. Nothing reads the Markdown back: a page is
written from the blocks, never from its summary.md.
"""

import html
import re
from typing import NamedTuple


class Heading(NamedTuple):
    level: int
    text: str


class Para(NamedTuple):
    text: str
    cls: str = ""


class Items(NamedTuple):
    items: list[str]


class Table(NamedTuple):
    """Rows of already formatted cells; align has one "l" or "r" per column; row_classes (HTML only) one per row."""

    columns: list[str]
    rows: list[list[str]]
    align: str = ""
    row_classes: list[str] | None = None


class Raw(NamedTuple):
    """HTML that only the page has (the charts); Markdown leaves it out."""

    html: str


Block = Heading | Para | Items | Table | Raw

_INLINE = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`|\*([^*\s][^*]*?)\*|\[([^\]]+)\]\(([^)\s]+)\)")


def inline_html(text: str) -> str:
    """Escape text for HTML, turning **bold**, `code`, *emphasis* and [links](href) into their tags."""
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(html.escape(text[pos : m.start()]))
        bold, code, em, label, href = m.groups()
        if label is not None:
            out.append(f'<a href="{html.escape(href)}">{inline_html(label)}</a>')
        elif bold is not None:
            out.append(f"<strong>{inline_html(bold)}</strong>")
        elif code is not None:
            out.append(f"<code>{html.escape(code)}</code>")
        else:
            out.append(f"<em>{inline_html(em)}</em>")
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def _md_cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def to_markdown(blocks: list[Block]) -> str:
    """The blocks as Markdown, one blank line between blocks."""
    parts = []
    for b in blocks:
        if isinstance(b, Heading):
            parts.append(f"{'#' * b.level} {b.text}")
        elif isinstance(b, Para):
            parts.append(b.text)
        elif isinstance(b, Items):
            parts.append("\n".join(f"- {item}" for item in b.items))
        elif isinstance(b, Table):
            align = b.align or "l" * len(b.columns)
            lines = [
                "| " + " | ".join(map(_md_cell, b.columns)) + " |",
                "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|",
                *("| " + " | ".join(map(_md_cell, row)) + " |" for row in b.rows),
            ]
            parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def to_html(blocks: list[Block]) -> str:
    """The blocks as an HTML fragment."""
    parts = []
    for b in blocks:
        if isinstance(b, Heading):
            parts.append(f"<h{b.level}>{inline_html(b.text)}</h{b.level}>")
        elif isinstance(b, Para):
            cls = f' class="{html.escape(b.cls)}"' if b.cls else ""
            parts.append(f"<p{cls}>{inline_html(b.text)}</p>")
        elif isinstance(b, Items):
            parts.append("<ul>" + "".join(f"<li>{inline_html(i)}</li>" for i in b.items) + "</ul>")
        elif isinstance(b, Table):
            parts.append(table_html(b))
        elif isinstance(b, Raw):
            parts.append(b.html)
    return "\n".join(parts)


def table_html(t: Table) -> str:
    align = t.align or "l" * len(t.columns)
    classes = t.row_classes or [""] * len(t.rows)

    def cell(tag: str, text: str, a: str) -> str:
        return f'<{tag} class="{"num" if a == "r" else "text"}">{inline_html(str(text))}</{tag}>'

    head = "".join(cell("th", c, a) for c, a in zip(t.columns, align, strict=True))
    body = "".join(
        (f'<tr class="{html.escape(cls)}">' if cls else "<tr>")
        + "".join(cell("td", v, a) for v, a in zip(row, align, strict=True))
        + "</tr>"
        for row, cls in zip(t.rows, classes, strict=True)
    )
    return f'<div class="table"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'

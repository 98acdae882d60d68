"""What every HTML page of the package (the report, the board) is built with: the jinja2
templates, stylesheets and scripts shipped as package files (``templates/html/``), and the safety
rules they share.

* Templates render with autoescaping on, and the escaper is :func:`esc` (``html.escape`` with
  quotes, safe in text and attribute values alike): every ``{{ value }}`` not marked
  :class:`~markupsafe.Markup` is escaped. Markup is only what this package wrote itself: the
  stylesheets and scripts, fragments built from escaped values, and :func:`script_json`.
* Data for a script travels as JSON inside ``<script type="application/json">`` with ``<``, ``>``
  and ``&`` written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (:func:`json_for_script`), so
  ``</script>`` can never close the block; the scripts write with ``textContent`` only.
* A Content-Security-Policy allows exactly the page's one inline script, by its sha256
  (:func:`content_security_policy`), and no network at all.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
from functools import cache
from importlib.resources import files
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from ._tables import Table, fmt_num

__all__ = [
    "Markup",
    "asset",
    "content_security_policy",
    "esc",
    "inline",
    "json_for_script",
    "render_page",
    "render_table",
    "script_json",
    "short",
]


def esc(value: object) -> str:
    """HTML-escape any value (quotes included, so it is safe in attribute values too)."""
    if value is None:
        return ""
    return html.escape(value if isinstance(value, str) else str(value), quote=True)


def json_for_script(data: object) -> str:
    """JSON fit for a ``<script type="application/json">`` block: no ``<``, ``>`` or ``&``."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def short(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, the last one an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def script_json(data: object) -> Markup:
    """:func:`json_for_script` as markup for a template (it holds no ``<``, ``>`` or ``&``)."""
    return Markup(json_for_script(data))


def content_security_policy(script: str) -> str:
    """The pages' policy: no network, only ``script`` (by its sha256) may run."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )


@cache
def asset(name: str) -> str:
    """A stylesheet or script of ``templates/html/``, as shipped."""
    return files("pytest_memeval").joinpath("templates", "html", name).read_text(encoding="utf-8")


def inline(name: str) -> Markup:
    """An asset as the text of its inline ``<style>`` / ``<script>`` element (a line break, then
    the file); a script's hash in the policy is taken over exactly this text."""
    return Markup("\n" + asset(name))


def _escaped(value: Any) -> Any:
    """Autoescaping with :func:`esc`: jinja2 leaves markup as it is and escapes nothing else."""
    return value if isinstance(value, Markup) else Markup(esc(value))


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("pytest_memeval", "templates/html"),
        autoescape=True,
        finalize=_escaped,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.globals["asset"] = inline
    env.filters["short"] = short
    env.filters["num"] = fmt_num
    env.globals["table"] = lambda *args: Markup(render_table(*args))
    return env


def render_page(template: str, **context: Any) -> str:
    """Render ``templates/html/<template>`` with ``context``."""
    return _environment().get_template(template).render(**context)


def render_table(table: Table, table_id: str = "", table_class: str = "") -> str:
    """A :class:`~.tables.Table` as HTML (``table.html.j2``; in templates ``table(...)``):
    cells escaped, numeric cells right-aligned, intervals in a muted span after their value, a
    row class per kind (``total``, ``extra``, ``published``), numbered notes and the caption."""
    return render_page("table.html.j2", table=table, table_id=table_id, table_class=table_class)

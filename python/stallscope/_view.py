"""What a report and a comparison share: a native result rendered by the Rust core.

`Report` and `Comparison` each hold one native object (`_native`) whose JSON, HTML and
Markdown are written by the same renderers as the command line; this mixin is the one place
those renderings and the cached dict live.
"""

from __future__ import annotations

import html as _html
import json
import os
from pathlib import Path
from typing import Any, Union

PathLike = Union[str, "os.PathLike[str]"]


class _NativeView:
    """Renderings of a native result: ``to_json``/``to_dict`` (the command's ``--format
    json``), ``to_html``/``save_html`` (``--format html``), ``to_markdown`` (``--format md``)
    and the Jupyter display."""

    __slots__ = ()

    _native: Any
    _dict: dict[str, Any] | None
    #: Rows per HTML table by default, as the command's ``--top`` for ``--format html``.
    _HTML_TOP: int = 50

    def to_dict(self) -> dict[str, Any]:
        """The JSON as a dict, equal to ``json.load`` of the command's ``--format json``
        output (every row)."""
        return json.loads(self.to_json())

    def to_json(self) -> str:
        """The JSON, byte for byte what the command writes with ``--format json``."""
        return self._native.json()

    def _d(self) -> dict[str, Any]:
        if self._dict is None:
            self._dict = self.to_dict()
        return self._dict

    def to_html(self, top: int | None = None) -> str:
        """The self-contained HTML page (``--format html``), ``top`` rows per table (0 = all;
        default 50 for a report, 30 for a comparison, as the command)."""
        return self._native.html(self._HTML_TOP if top is None else top)

    def save_html(self, path: PathLike, top: int | None = None) -> None:
        """Writes the HTML page (``--format html``) to ``path`` (UTF-8)."""
        Path(path).write_text(self.to_html(top), encoding="utf-8")

    def to_markdown(self, top: int = 10) -> str:
        """The Markdown (``--format md``), ``top`` rows per table (0 = all), for a
        pull-request comment or a notebook cell."""
        return self._native.markdown(top)

    def _repr_html_(self) -> str:
        # a whole page with its own script and styles: a sandboxed iframe keeps it and the
        # notebook apart
        return _iframe(self.to_html())


def _iframe(page: str) -> str:
    """A whole HTML page inside a sandboxed iframe, for Jupyter's ``_repr_html_``."""
    return (
        '<iframe sandbox="allow-scripts" style="width:100%;height:720px;border:1px solid '
        '#ccc" srcdoc="' + _html.escape(page, quote=True) + '"></iframe>'
    )

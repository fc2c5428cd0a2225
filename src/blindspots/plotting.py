"""One figure style for the whole book.

Figures have an opaque white face and dark-grey ink, so they read the same on
the book's light and dark themes; the palette is Okabe-Ito (colour-blind safe).
Theory is drawn as a line, measurement as markers (see :func:`theory_and_measured`).

matplotlib is imported when the first figure is drawn, not with ``blindspots``:
readers and tests that only compute do not pay for ``pyplot`` (about 0.5 s).
``plotting.plt`` and ``plotting.mpl`` still work; they import on first access.
"""

from __future__ import annotations

from typing import Sequence

import importlib
from typing import Any

import numpy as np

PALETTE: tuple[str, ...] = (
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000",
)
INK = "#222222"

STYLE = {
    "figure.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.facecolor": "white",
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "figure.figsize": (6.4, 4.0),
    "figure.constrained_layout.use": True,
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "axes.edgecolor": INK,
    "axes.labelcolor": INK,
    "text.color": INK,
    "xtick.color": INK,
    "ytick.color": INK,
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "lines.markersize": 5,
    "legend.frameon": False,
    "legend.fontsize": 9,
    "image.cmap": "viridis",
}


def __getattr__(name: str) -> Any:
    # Lazy ``plotting.plt`` / ``plotting.mpl``.
    if name == "plt":
        return importlib.import_module("matplotlib.pyplot")
    if name == "mpl":
        return importlib.import_module("matplotlib")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def use_book_style() -> None:
    """Apply the book's style to matplotlib (idempotent)."""
    import matplotlib as mpl

    mpl.rcParams.update(STYLE)
    mpl.rcParams["axes.prop_cycle"] = mpl.cycler(color=PALETTE)


def figure(ncols: int = 1, nrows: int = 1, *, width: float = 3.4, height: float = 3.0, **kw):
    """A ``(fig, axes)`` pair in book style, each panel ``width`` x ``height`` inches."""
    import matplotlib.pyplot as plt

    use_book_style()
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), **kw)
    return fig, axes


def theory_and_measured(ax, x: Sequence[float], theory: Sequence[float] | None,
                        measured: Sequence[float] | None, *, label: str = "",
                        color: str | None = None, yerr: Sequence[float] | None = None):
    """Theory as a line, measurement as open markers on the same colour."""
    color = color or PALETTE[len(ax.lines) % len(PALETTE)]
    if theory is not None:
        ax.plot(x, theory, "-", color=color, label=f"{label} (theory)" if label else "theory")
    if measured is not None:
        kw = dict(fmt="o", mfc="none", color=color, label=f"{label} (measured)" if label else "measured")
        if yerr is None:
            ax.plot(x, measured, "o", mfc="none", color=color, label=kw["label"])
        else:
            ax.errorbar(x, measured, yerr=np.asarray(yerr), capsize=2, **kw)
    return ax


def html_table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, caption: str | None = None,
               align: str | None = None):
    """A result table rendered as HTML, for tables too wide for a line of text.

    ``rows`` hold cells already formatted as the reader should see them (``str()`` of each is
    shown, HTML-escaped). ``align`` is one letter per column (``l`` or ``r``; default: the first
    column left, the others right). Returns an ``IPython.display.HTML`` object: the last
    expression of a cell, or passed to ``display``.
    """
    from html import escape

    from IPython.display import HTML

    width = len(header)
    if width == 0:
        raise ValueError("header must name at least one column")
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"rows[{i}] has {len(row)} cells; header has {width} (every row needs one per column)")
    align = align or "l" + "r" * (width - 1)
    if len(align) != width or set(align) - {"l", "r"}:
        raise ValueError(f"align must be {width} letters, each 'l' or 'r'; got {align!r}")
    side = {"l": "left", "r": "right"}

    def cells(tag: str, values: Sequence[Any]) -> str:
        return "".join(f'<{tag} style="text-align:{side[a]}">{escape(str(v))}</{tag}>'
                       for a, v in zip(align, values))

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return HTML(f'<table class="blindspots-table">{cap}<thead><tr>{cells("th", header)}</tr></thead>'
                f"<tbody>{body}</tbody></table>")

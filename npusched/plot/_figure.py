"""What every plot does last."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib.pyplot as plt


def finish(fig: plt.Figure, path: str | Path | None) -> plt.Figure:
    """Tighten the layout; save a PNG (its folder made if missing; written whole or not at all)
    and close the figure when ``path`` is given."""
    fig.tight_layout()
    if path is not None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        try:
            fig.savefig(tmp, dpi=120, format=path.suffix.lstrip(".") or "png")
            os.replace(tmp, path)
        finally:
            tmp.unlink(missing_ok=True)
            plt.close(fig)
    return fig

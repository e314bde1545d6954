"""What every plot does last."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt


def finish(fig: plt.Figure, path: str | Path | None) -> plt.Figure:
    """Tighten the layout; save a PNG and close the figure when ``path`` is given."""
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig

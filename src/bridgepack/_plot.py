"""matplotlib, imported lazily with the non-interactive Agg backend: every PNG bridgepack draws starts here.

Plots are optional (the ``plot`` extra), so nothing imports matplotlib at module level; a command that is
asked for a plot without it gets a one-line usage error naming the extra to install.
"""

from __future__ import annotations

from typing import Any

from bridgepack.errors import UsageError


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or a :class:`UsageError` saying how to install it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError("plots need matplotlib: pip install 'bridgepack[plot]'") from None
    return plt

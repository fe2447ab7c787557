"""Rows as a pandas DataFrame; pandas is optional (``pip install 'stamen[pandas]'``) and imported only here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas


def data_frame(rows: Sequence[dict[str, Any]], who: str) -> pandas.DataFrame:
    """``rows`` (dicts of one shape) as a DataFrame, one row each; ImportError naming the extra without pandas."""
    try:
        # on use: pandas stays out of this module's import
        import pandas
    except ImportError:
        raise ImportError(f"{who} needs pandas: pip install 'stamen[pandas]'") from None
    return pandas.DataFrame(list(rows))

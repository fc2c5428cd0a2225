"""Blind Spots: the shared code of an executable book.

Parts: :mod:`blindspots.masked` (mode blindness), :mod:`blindspots.selfpretraining`
(gradient blindness of mean pooling), :mod:`blindspots.privileged` (PIQL).
"""

from . import claims, plotting, runtime
from .claims import claim, claim_bound, claim_effect

__all__ = ["claims", "plotting", "runtime", "claim", "claim_bound", "claim_effect"]
__version__ = "0.1.0"

"""A seed function for the registry's test that a ``workers=True`` patch reaches every seed worker."""


def plateau_margin_and_pid(seed: int) -> tuple[float, int]:
    """The gates' plateau margin as this process sees it, and the process id (``seed`` is unused)."""
    import os

    from blindspots.selfpretraining import gates

    return gates.PLATEAU_MARGIN, os.getpid()

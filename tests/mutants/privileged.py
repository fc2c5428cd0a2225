"""Planted errors for Part III (privileged information). See ``registry.py``."""

from mutants.registry import Mutant

MUTANTS: list[Mutant] = []

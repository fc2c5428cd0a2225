"""Planted errors for Part I (masked prediction). See ``registry.py``."""

from mutants.registry import Mutant

MUTANTS: list[Mutant] = []

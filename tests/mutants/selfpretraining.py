"""Planted errors for Part II (self-pretraining). See ``registry.py``."""

from mutants.registry import Mutant

MUTANTS: list[Mutant] = []

"""Shared test helpers: where the repository and its notebooks are."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def toc_notebooks() -> list[str]:
    """Chapter notebooks named in _toc.yml, as paths relative to the repository."""
    import yaml

    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = []
    for part in toc.get("parts", []):
        for chapter in part.get("chapters", []):
            if chapter["file"].startswith("notebooks/"):
                files.append(chapter["file"] + ".ipynb")
    return files


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.fixture
def root() -> Path:
    return ROOT


FAKE_CHAPTER = "testing/00_fake"
FAKE_PRESETS = {FAKE_CHAPTER: {"smoke": {"n": 1}, "book": {"n": 2}, "full": {"n": 3}}}


@pytest.fixture
def fake_chapter(monkeypatch):
    """A chapter with presets at every scale, independent of the real chapters."""
    from blindspots import runtime

    real = runtime.all_presets
    monkeypatch.setattr(runtime, "all_presets", lambda: {**real(), **FAKE_PRESETS})
    return FAKE_CHAPTER

"""Real-text corpora for the residual mode uncertainty of masked/08_real_text.

A *mode* is a set of documents of one kind (German man pages, their English originals, Python source).
The book ships four modes, built once by ``scripts/build_corpora.py`` from Debian packages, as
``data/corpora/<mode>.jsonl.xz``: ``de`` and ``en`` (German man pages and their English originals),
``en_more`` (every other English man page of a Debian package; with ``en`` the prose of the code pair) and
``code`` (the Python standard library), each (one JSON object ``{"id", "text"}`` per line). A reader can point
:func:`load_mode` at any directory of text files instead (one file per document).

Everything here is label-free by construction: the byte tokenizer is the same function for every mode,
windows are cut the same way, and :func:`split_by_document` assigns whole documents (by id, so a German
page and its English original land on the same side) to train or test, never single windows.
Implements the data side of {prf:ref}`def-masked-real-residual`.
"""

from __future__ import annotations

import hashlib
import json
import lzma
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["Document", "PairData", "SHIPPED_MODES", "corpus_dir", "encode", "decode", "load_mode",
           "document_windows", "split_by_document", "make_pair"]

SHIPPED_MODES = ("de", "en", "en_more", "code")
#: suffixes a user directory's documents may have
TEXT_SUFFIXES = (".txt", ".py", ".md", ".rst", ".c", ".h", ".tex", ".html", "")


@dataclass(frozen=True)
class Document:
    """One document of a mode: its id (shared by translations of the same page) and its byte tokens."""

    id: str
    mode: str
    tokens: np.ndarray  # uint8

    def __len__(self) -> int:
        return int(self.tokens.size)


def corpus_dir() -> Path:
    """The shipped corpora, ``<repo>/data/corpora``."""
    from .. import runtime

    return runtime.repo_root() / "data" / "corpora"


def encode(text: str) -> np.ndarray:
    """Byte-level tokens of ``text``: its UTF-8 bytes as ``uint8`` (256 symbols, the same for every mode)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return np.frombuffer(text.encode("utf-8"), dtype=np.uint8).copy()


def decode(tokens) -> str:
    """Inverse of :func:`encode` (invalid UTF-8, e.g. a window cut inside a character, is replaced)."""
    arr = np.asarray(tokens)
    if arr.ndim != 1 or (arr.size and (arr.min() < 0 or arr.max() > 255)):
        raise ValueError("tokens must be a 1-d array of byte values in [0, 255]")
    return arr.astype(np.uint8).tobytes().decode("utf-8", errors="replace")


def _read_jsonl_xz(path: Path, mode: str) -> list[Document]:
    docs = []
    try:
        with lzma.open(path, "rt", encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                rec = json.loads(line)
                if not isinstance(rec, dict) or "text" not in rec:
                    raise ValueError(f"{path}: line {n} is not an object with a 'text' field")
                docs.append(Document(str(rec.get("id", f"{mode}-{n}")), mode, encode(rec["text"])))
    except (OSError, lzma.LZMAError, json.JSONDecodeError) as err:
        raise ValueError(f"corpus file {path} is unreadable: {err}") from None
    return docs


def _read_directory(folder: Path, mode: str) -> list[Document]:
    files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    docs = []
    for path in files:
        try:
            text = path.read_bytes().decode("utf-8", errors="replace")
        except OSError as err:
            raise ValueError(f"document {path} of mode {mode!r} is unreadable: {err}") from None
        if text.strip():
            docs.append(Document(str(path.relative_to(folder)), mode, encode(text)))
    return docs


def load_mode(mode: str, root: str | Path | None = None) -> list[Document]:
    """The documents of ``mode``.

    ``root`` is a folder holding ``<mode>.jsonl.xz`` (default: the shipped :func:`corpus_dir`), or
    ``<mode>/`` with one text file per document, or it is itself such a directory of text files (then
    ``mode`` only names the label). Exact duplicate documents are kept once. Raises ``ValueError`` for a
    missing, empty or unreadable corpus and for a mode without documents.
    """
    if not isinstance(mode, str) or not mode:
        raise ValueError(f"mode must be a non-empty string, got {mode!r}")
    base = Path(root) if root is not None else corpus_dir()
    if not base.exists():
        raise ValueError(f"corpus directory {base} does not exist")
    if not base.is_dir():
        raise ValueError(f"corpus directory {base} is not a directory")
    packed, folder = base / f"{mode}.jsonl.xz", base / mode
    if packed.is_file():
        docs = _read_jsonl_xz(packed, mode)
    elif folder.is_dir():
        docs = _read_directory(folder, mode)
    elif root is not None and any(base.iterdir()) and not any(base.glob("*.jsonl.xz")):
        docs = _read_directory(base, mode)  # a folder of documents of this one mode
    else:
        raise ValueError(f"corpus directory {base} has neither {packed.name} nor a folder {mode}/ "
                         f"(shipped modes: {SHIPPED_MODES})")
    seen, unique = set(), []
    for doc in docs:
        digest = hashlib.sha256(doc.tokens.tobytes()).digest()
        if digest not in seen and len(doc):
            seen.add(digest)
            unique.append(doc)
    if not unique:
        raise ValueError(f"mode {mode!r} has no documents in {base}")
    return unique


def document_windows(docs: list[Document], length: int, per_doc: int, rng: np.random.Generator
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Non-overlapping windows of ``length`` tokens, at most ``per_doc`` per document (chosen at random).

    Returns ``(windows, doc_index)``: a ``(n, length)`` uint8 array and, for each window, the index of
    its document in ``docs``. Documents shorter than one window contribute nothing; raises
    ``ValueError`` when no document is at least one window long.
    """
    if not isinstance(length, (int, np.integer)) or length < 2:
        raise ValueError(f"length must be an integer >= 2, got {length!r}")
    if not isinstance(per_doc, (int, np.integer)) or per_doc < 1:
        raise ValueError(f"per_doc must be an integer >= 1, got {per_doc!r}")
    if not docs:
        raise ValueError("docs must hold at least one document")
    rows, owners = [], []
    for i, doc in enumerate(docs):
        n_win = len(doc) // length
        if n_win == 0:
            continue
        # a random phase, so the first bytes of a document are not over-represented
        start = int(rng.integers(0, len(doc) - n_win * length + 1))
        chosen = np.sort(rng.choice(n_win, size=min(per_doc, n_win), replace=False))
        for j in chosen:
            rows.append(doc.tokens[start + j * length: start + (j + 1) * length])
            owners.append(i)
    if not rows:
        longest = max(len(d) for d in docs)
        raise ValueError(f"corpus of mode {docs[0].mode!r} is smaller than one window: length={length} tokens, "
                         f"longest document {longest} tokens")
    return np.stack(rows).astype(np.uint8), np.asarray(owners, dtype=np.int64)


def split_by_document(ids, test_fraction: float, seed: int = 0) -> np.ndarray:
    """``True`` where a window belongs to the test side: whole documents, decided by a hash of their id.

    The same id gets the same side for every mode and every window, so no document (and no translation of a
    test document) is ever on both sides.
    """
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie in (0, 1), got {test_fraction!r}")
    ids = np.asarray(ids)
    unique, inverse = np.unique(ids, return_inverse=True)
    scores = np.array([int.from_bytes(hashlib.sha256(f"{seed}:{u}".encode()).digest()[:8], "big") / 2.0**64
                       for u in unique])
    return scores[inverse] < test_fraction


@dataclass
class PairData:
    """Windows of a pair of modes, split by document. ``y`` is 1 for ``modes[0]``; ``groups`` are document
    indices (unique across both modes) for the bootstrap."""

    modes: tuple[str, str]
    length: int
    train: np.ndarray
    y_train: np.ndarray
    groups_train: np.ndarray
    test: np.ndarray
    y_test: np.ndarray
    groups_test: np.ndarray

    @property
    def n_test_docs(self) -> int:
        return int(np.unique(self.groups_test).size)

    def describe(self) -> str:
        """Two lines (the second indented), each short enough for a printed page."""
        return (f"{self.modes[0]} vs {self.modes[1]}: windows of {self.length} bytes\n"
                f"  train {len(self.y_train)} ({int(self.y_train.sum())} / "
                f"{int((1 - self.y_train).sum())}), test {len(self.y_test)} "
                f"({int(self.y_test.sum())} / {int((1 - self.y_test).sum())}) "
                f"from {self.n_test_docs} documents")


def _balance(y: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Indices keeping every window of the smaller mode and as many random ones of the larger (w = 1/2)."""
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    n = min(pos.size, neg.size)
    if n == 0:
        raise ValueError("a side of the split has no window of one of the modes; use more documents "
                         "or another test_fraction")
    keep = np.concatenate([rng.choice(pos, n, replace=False), rng.choice(neg, n, replace=False)])
    return np.sort(keep)


def make_pair(docs_a: list[Document], docs_b: list[Document], length: int, per_doc,
              test_fraction: float, rng: np.random.Generator, seed: int = 0) -> PairData:
    """Windows of two modes, split by document id (:func:`split_by_document`), balanced to equal counts per
    side so that the prior mode weight is w = 1/2 and U(0) = 1/4.

    ``per_doc`` is the most windows per document, one integer for both modes or a pair ``(a, b)``: a mode with
    many short documents can then give few windows from each, so that more documents carry the test set."""
    if not docs_a or not docs_b:
        raise ValueError("both modes need at least one document")
    per_a, per_b = (per_doc, per_doc) if isinstance(per_doc, (int, np.integer)) else tuple(per_doc)
    wa, ia = document_windows(docs_a, length, per_a, rng)
    wb, ib = document_windows(docs_b, length, per_b, rng)
    ids = np.array([docs_a[i].id for i in ia] + [docs_b[i].id for i in ib], dtype=object)
    windows = np.concatenate([wa, wb])
    y = np.concatenate([np.ones(len(wa), dtype=np.int64), np.zeros(len(wb), dtype=np.int64)])
    groups = np.concatenate([ia, len(docs_a) + ib])
    test = split_by_document(ids, test_fraction, seed)
    out = {}
    for side, mask in (("train", ~test), ("test", test)):
        idx = np.flatnonzero(mask)
        keep = idx[_balance(y[idx], rng)]
        out[side] = (windows[keep], y[keep], groups[keep])
    return PairData((docs_a[0].mode, docs_b[0].mode), int(length), *out["train"], *out["test"])

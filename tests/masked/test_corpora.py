"""Corpora of masked/08_real_text: byte tokenizer, loader errors, windows, the leak-free split."""

import json
import lzma

import numpy as np
import pytest

from blindspots.masked import corpora


def test_byte_tokenizer_is_utf8_and_the_same_for_every_mode():
    tokens = corpora.encode("Größe = 1")
    assert tokens.dtype == np.uint8
    assert bytes(tokens) == "Größe = 1".encode("utf-8")
    assert corpora.decode(tokens) == "Größe = 1"
    # no mode argument exists: the tokenizer cannot see the label
    assert "mode" not in corpora.encode.__code__.co_varnames


def test_tokenizer_rejects_bad_input():
    with pytest.raises(TypeError, match="text must be a str"):
        corpora.encode(b"bytes")
    with pytest.raises(ValueError, match=r"\[0, 255\]"):
        corpora.decode(np.array([300]))


def _write_dir(root, mode, texts):
    folder = root / mode
    folder.mkdir(parents=True)
    for i, t in enumerate(texts):
        (folder / f"doc{i}.txt").write_text(t)
    return folder


def test_load_mode_reads_a_user_directory_and_drops_duplicates(tmp_path):
    _write_dir(tmp_path, "prose", ["a" * 50, "b" * 60, "a" * 50, "   "])
    docs = corpora.load_mode("prose", tmp_path)
    assert [len(d) for d in docs] == [50, 60]
    assert all(d.mode == "prose" for d in docs)
    # the directory itself may be the mode
    assert len(corpora.load_mode("prose", tmp_path / "prose")) == 2


def test_load_mode_reads_a_jsonl_xz(tmp_path):
    with lzma.open(tmp_path / "x.jsonl.xz", "wt") as fh:
        for i in range(3):
            fh.write(json.dumps({"id": f"d{i}", "text": f"text {i} " * 10}) + "\n")
    docs = corpora.load_mode("x", tmp_path)
    assert [d.id for d in docs] == ["d0", "d1", "d2"]


@pytest.mark.parametrize("mode", corpora.SHIPPED_MODES)
def test_shipped_modes_load(mode):
    docs = corpora.load_mode(mode)
    assert len(docs) > 300
    assert min(len(d) for d in docs) >= 1024  # the build keeps documents of at least one full-scale window


def test_german_and_english_share_page_ids():
    de = {d.id for d in corpora.load_mode("de")}
    en = {d.id for d in corpora.load_mode("en")}
    assert de == en


def test_loader_errors_name_the_problem(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        corpora.load_mode("de", tmp_path / "missing")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="neither"):
        corpora.load_mode("de", empty)
    (tmp_path / "bad.jsonl.xz").write_bytes(b"not xz at all")
    with pytest.raises(ValueError, match="unreadable"):
        corpora.load_mode("bad", tmp_path)
    _write_dir(tmp_path, "blank", ["", "  \n"])
    with pytest.raises(ValueError, match="has no documents"):
        corpora.load_mode("blank", tmp_path)
    with pytest.raises(ValueError, match="mode must be"):
        corpora.load_mode("", tmp_path)
    # a folder of packed modes is not read as documents of an unknown mode
    with pytest.raises(ValueError, match="neither"):
        corpora.load_mode("fr", corpora.corpus_dir())


def test_corpus_smaller_than_one_window_is_refused(tmp_path):
    _write_dir(tmp_path, "tiny", ["short text", "another short one"])
    docs = corpora.load_mode("tiny", tmp_path)
    with pytest.raises(ValueError, match="smaller than one window"):
        corpora.document_windows(docs, 64, 2, np.random.default_rng(0))
    with pytest.raises(ValueError, match="length must be"):
        corpora.document_windows(docs, 1, 2, np.random.default_rng(0))


def test_windows_are_disjoint_pieces_of_their_own_document():
    rng = np.random.default_rng(1)
    docs = [corpora.Document(f"d{i}", "m", rng.integers(0, 256, size=n).astype(np.uint8))
            for i, n in enumerate((100, 500, 1000))]
    win, owner = corpora.document_windows(docs, 64, 4, rng)
    assert win.shape[1] == 64 and list(np.bincount(owner)) == [1, 4, 4]
    for row, i in zip(win, owner):
        text = docs[i].tokens.tobytes()
        start = text.find(row.tobytes())
        assert start >= 0
    for i in (1, 2):
        starts = sorted(docs[i].tokens.tobytes().find(r.tobytes()) for r, o in zip(win, owner) if o == i)
        assert all(b - a >= 64 for a, b in zip(starts, starts[1:]))


def test_split_is_by_document_and_keeps_translations_together():
    ids = np.array(["man1/ls.1"] * 5 + ["man1/cp.1"] * 3 + [f"d{i}" for i in range(200)])
    test = corpora.split_by_document(ids, 0.3, seed=0)
    for doc in np.unique(ids):
        assert len(set(test[ids == doc])) == 1
    assert 0.15 < test[8:].mean() < 0.45
    # the side of an id does not depend on the other ids
    assert corpora.split_by_document(np.array(["man1/ls.1"]), 0.3)[0] == test[0]
    with pytest.raises(ValueError, match="test_fraction"):
        corpora.split_by_document(ids, 1.0)


def test_make_pair_is_balanced_and_leak_free():
    rng = np.random.default_rng(2)
    a = [corpora.Document(f"p{i}", "a", rng.integers(0, 128, size=300).astype(np.uint8)) for i in range(60)]
    b = [corpora.Document(f"p{i}", "b", rng.integers(128, 256, size=300).astype(np.uint8)) for i in range(80)]
    pair = corpora.make_pair(a, b, 64, 3, 0.3, rng)
    for y in (pair.y_train, pair.y_test):
        assert y.sum() * 2 == y.size
    assert not set(pair.groups_train) & set(pair.groups_test)
    # translations (same id in both modes) fall on the same side
    names = [d.id for d in a] + [d.id for d in b]
    train_ids = {names[g] for g in pair.groups_train}
    test_ids = {names[g] for g in pair.groups_test}
    assert not train_ids & test_ids
    assert pair.modes == ("a", "b")


def test_make_pair_takes_windows_per_document_per_mode():
    rng = np.random.default_rng(3)
    a = [corpora.Document(f"a{i}", "a", rng.integers(0, 128, size=640).astype(np.uint8)) for i in range(40)]
    b = [corpora.Document(f"b{i}", "b", rng.integers(128, 256, size=640).astype(np.uint8)) for i in range(400)]
    pair = corpora.make_pair(a, b, 64, (8, 1), 0.5, rng)
    groups = np.concatenate([pair.groups_train, pair.groups_test])
    y = np.concatenate([pair.y_train, pair.y_test])
    # mode b gives at most one window per document, so its windows come from as many documents
    _, per_b = np.unique(groups[y == 0], return_counts=True)
    assert per_b.max() == 1
    _, per_a = np.unique(groups[y == 1], return_counts=True)
    assert per_a.max() == 8
    assert np.unique(pair.groups_test).size > 2 * np.unique(pair.groups_test[pair.y_test == 1]).size


def test_more_english_prose_is_disjoint_from_the_translated_pages():
    en = corpora.load_mode("en")
    more = corpora.load_mode("en_more")
    assert not {d.id for d in en} & {d.id for d in more}
    assert not {d.tokens.tobytes() for d in en} & {d.tokens.tobytes() for d in more}
    assert len(more) > 1000

"""Build the shipped real-text corpora of masked/08_real_text (run once, offline; needs apt packages).

Three modes, one ``data/corpora/<mode>.jsonl.xz`` each (one JSON object per line: ``id``, ``text``):

* ``de``: German man pages of Debian's ``manpages-de``;
* ``en``: the English originals of the same pages (same ids), from ``manpages`` and the packages that ship them;
* ``en_more``: every other English man page (sections 1-8 of ``/usr/share/man``) of an installed package whose
  installed version is a Debian build (packages of other apt origins are skipped); with ``en`` it is the prose mode of
  the code-against-prose pair, which needs no translations and so can use far more documents;
* ``code``: Python source of the installed Debian Python standard library (``/usr/lib/python3.*``).

Man pages are rendered by man-db (``man -l -E UTF-8 --no-hyphenation --no-justification`` at ``MANWIDTH=100``,
which runs groff's ``man`` macros: the same renderer for both languages), then the header and footer lines are
dropped, each paragraph is joined into one line, and runs of blanks are collapsed: the rendering indent is an
artefact of the terminal layout, not text. Code is kept byte for byte (comments and docstrings included, they are
part of real code). Documents shorter than ``--min-bytes`` are dropped, longer ones cut at ``--max-bytes`` (at a
line end), exact duplicates (after normalisation) removed; a German page and its English original are kept or
dropped together, and an ``en_more`` page equal to a kept page is dropped. ``SOURCES.md`` is written next to the corpora with the packages, versions and licences.

    apt-get install -y manpages manpages-de manpages-dev
    python scripts/build_corpora.py --out data/corpora
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import lzma
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

MAN_SECTIONS = ("man1", "man4", "man5", "man7", "man8")  # of the German/English pair (kept as first built)
PROSE_SECTIONS = tuple(f"man{i}" for i in range(1, 9))
MANWIDTH = "100"
RENDER = ["man", "-l", "-E", "UTF-8", "--no-hyphenation", "--no-justification"]


def render_man(path: str) -> str | None:
    """Plain text of one roff man page (None when it does not render, or is only a ``.so`` link)."""
    env = dict(os.environ, MANWIDTH=MANWIDTH, MAN_KEEP_FORMATTING="", LC_ALL="C.UTF-8")
    try:
        out = subprocess.run(RENDER + [path], capture_output=True, env=env, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        return None
    if out.returncode != 0 or not out.stdout:
        return None
    return normalise_man(out.stdout.decode("utf-8", errors="replace"))


def normalise_man(text: str) -> str:
    """Drop the header/footer lines, join each paragraph into one line, collapse blanks."""
    lines = text.replace("\r", "").split("\n")
    while lines and not lines[-1].strip():
        lines.pop()
    lines = lines[1:-1]  # "LS(1)   User Commands   LS(1)" and the footer
    paragraphs, current = [], []
    for line in lines:
        line = re.sub(r"[ \t\u00a0]+", " ", line).strip()
        if line:
            current.append(line)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    if current:
        paragraphs.append(" ".join(current))
    return "\n".join(paragraphs).strip() + "\n"


def cut(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, at the last line end before the cut."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    head = raw[:max_bytes]
    nl = head.rfind(b"\n")
    head = head[: nl + 1] if nl > max_bytes // 2 else head
    return head.decode("utf-8", errors="ignore")


def page_key(path: str) -> str:
    """``man1/ls.1`` for ``.../man1/ls.1.gz``."""
    section = Path(path).parent.name
    name = Path(path).name
    for suffix in (".gz", ".xz", ".bz2"):
        name = name.removesuffix(suffix)
    return f"{section}/{name}"


def man_pairs(de_root: str, en_root: str) -> list[tuple[str, str, str]]:
    """``(key, german path, english path)`` for every page that exists in both trees (no symlinks)."""
    out = []
    for section in MAN_SECTIONS:
        for de_path in sorted(glob.glob(f"{de_root}/{section}/*")):
            if os.path.islink(de_path):
                continue
            en_path = f"{en_root}/{section}/{Path(de_path).name}"
            if os.path.isfile(en_path) and not os.path.islink(en_path):
                out.append((page_key(de_path), de_path, en_path))
    return out


def english_pages(en_root: str, exclude: set[str]) -> list[tuple[str, str]]:
    """``(key, path)`` of every English page in sections 1-8 (no symlinks) whose key is not in ``exclude``."""
    out = []
    for section in PROSE_SECTIONS:
        for path in sorted(glob.glob(f"{en_root}/{section}/*")):
            if os.path.isfile(path) and not os.path.islink(path) and page_key(path) not in exclude:
                out.append((page_key(path), path))
    return out


def owner_of(paths: list[str]) -> dict[str, str]:
    """path -> owning Debian package, from ``dpkg -S`` (paths no package owns are left out)."""
    owners = {}
    for i in range(0, len(paths), 200):
        res = subprocess.run(["dpkg", "-S", *paths[i:i + 200]], capture_output=True, text=True, check=False)
        for line in res.stdout.splitlines():
            if line.startswith("diversion by "):
                continue
            pkgs, _, path = line.partition(": ")
            owners[path.strip()] = pkgs.split(",")[0].strip().split(":")[0]  # without the ":amd64" qualifier
    return owners


def _upstream(version: str) -> str:
    """``1:9`` for ``1:9.2p1-2+deb12u6``: the major upstream version (epoch kept, Debian revision dropped)."""
    return re.split(r"[.+~-]", version.rsplit("-", 1)[0], maxsplit=1)[0]


def from_debian_archive(pkgs: list[str]) -> set[str]:
    """The packages whose installed version is a Debian build: a Debian archive (``debian.org`` in apt's
    version table) offers the package at the same major upstream version, and the installed version comes from no
    other apt origin. A Debian build since superseded in the archive (``5.2.15-2+b8`` installed, ``+b13``
    offered; a security update) counts; a package of another origin (google-cloud-cli, no Debian version; a
    nodejs 20 of NodeSource where Debian offers 18) does not."""
    out = set()
    for i in range(0, len(pkgs), 100):
        res = subprocess.run(["apt-cache", "policy", *pkgs[i:i + 100]], capture_output=True, text=True,
                             check=False)
        blocks, pkg, version = {}, None, None
        for line in res.stdout.splitlines():
            if line and not line.startswith(" "):
                pkg = line.rstrip(":").split(":")[0]
                blocks[pkg] = {"debian": set(), "foreign": False, "installed": None}
            elif pkg is None:
                continue
            elif re.match(r"^ (\*\*\*| {3}) \S", line):  # a version of the table, ``***`` if installed
                version = line[5:].split()[0]
                if line.startswith(" *** "):
                    blocks[pkg]["installed"] = version
            elif re.match(r"^ {8}\d+ ", line) and version:  # a source of that version
                source = line.split(None, 1)[1]
                if "debian.org" in source:
                    blocks[pkg]["debian"].add(_upstream(version))
                elif version == blocks[pkg]["installed"] and not source.startswith("/var/lib/dpkg/status"):
                    blocks[pkg]["foreign"] = True
        out |= {p for p, b in blocks.items()
                if b["installed"] and _upstream(b["installed"]) in b["debian"] and not b["foreign"]}
    return out


def owning_packages(paths: list[str]) -> Counter:
    """Debian package -> number of files, from ``dpkg -S``."""
    counts: Counter = Counter()
    for i in range(0, len(paths), 200):
        res = subprocess.run(["dpkg", "-S", *paths[i:i + 200]], capture_output=True, text=True, check=False)
        for line in res.stdout.splitlines():
            if line.startswith("diversion by "):
                continue
            pkg = line.split(":", 1)[0].split(",")[0].strip()
            counts[pkg] += 1
    return counts


def package_version(pkg: str) -> str:
    res = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg], capture_output=True, text=True, check=False)
    return res.stdout.strip() or "?"


def licences(pkg: str) -> str:
    """The distinct ``License:`` fields of the package's machine-readable copyright file."""
    path = Path(f"/usr/share/doc/{pkg}/copyright")
    if not path.is_file():
        return "see the package's copyright file"
    text = path.read_text(errors="replace")
    if not text.startswith("Format:"):  # not machine-readable (DEP-5): name the licence only where it is plain
        if "Python Software Foundation" in text or "PSF LICENSE" in text.upper():
            return f"PSF License (Python Software Foundation License Version 2), /usr/share/doc/{pkg}/copyright"
        return f"see /usr/share/doc/{pkg}/copyright"
    found = []
    for line in text.splitlines():
        if line.startswith("License:"):
            name = line.split(":", 1)[1].strip()
            if name and name not in found:
                found.append(name)
    return ", ".join(found[:8]) + (", ..." if len(found) > 8 else "") if found else "see /usr/share/doc/%s/copyright" % pkg


def write_jsonl_xz(path: Path, docs: list[dict]) -> None:
    with lzma.open(path, "wt", encoding="utf-8", preset=9 | lzma.PRESET_EXTREME) as fh:
        for doc in docs:
            fh.write(json.dumps(doc, ensure_ascii=False) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="data/corpora")
    ap.add_argument("--de-root", default="/usr/share/man/de")
    ap.add_argument("--en-root", default="/usr/share/man")
    ap.add_argument("--python-root", default=sorted(glob.glob("/usr/lib/python3.[0-9]*"))[-1])
    ap.add_argument("--min-bytes", type=int, default=1024)
    ap.add_argument("--max-bytes", type=int, default=12288)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    pairs = man_pairs(args.de_root, args.en_root)
    de_docs, en_docs, seen = [], [], set()
    for i, (key, de_path, en_path) in enumerate(pairs):
        de_text, en_text = render_man(de_path), render_man(en_path)
        if i % 100 == 0:
            print(f"  man pages {i}/{len(pairs)}", file=sys.stderr)
        if not de_text or not en_text:
            continue
        de_text, en_text = cut(de_text, args.max_bytes), cut(en_text, args.max_bytes)
        if min(len(de_text.encode()), len(en_text.encode())) < args.min_bytes:
            continue
        digest = (hashlib.sha256(de_text.encode()).hexdigest(), hashlib.sha256(en_text.encode()).hexdigest())
        if digest[0] in seen or digest[1] in seen:
            continue
        seen.update(digest)
        de_docs.append({"id": key, "text": de_text})
        en_docs.append({"id": key, "text": en_text})

    pages = english_pages(args.en_root, {key for key, _, _ in pairs})
    owners = owner_of([p for _, p in pages])
    debian = from_debian_archive(sorted(set(owners.values())))
    skipped = sorted(set(owners.values()) - debian)
    pages = [(key, p) for key, p in pages if owners.get(p) in debian]
    def kept(text: str) -> str | None:
        """The document cut to max_bytes, or None if too short or a duplicate of one already kept."""
        text = cut(text, args.max_bytes)
        if len(text.encode()) < args.min_bytes:
            return None
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest in seen:
            return None
        seen.add(digest)
        return text

    more_docs = []
    for i, (key, path) in enumerate(pages):
        if i % 200 == 0:
            print(f"  English man pages {i}/{len(pages)}", file=sys.stderr)
        text = render_man(path)
        if text and (text := kept(text)) is not None:
            more_docs.append({"id": key, "text": text})

    code_docs = []
    for path in sorted(Path(args.python_root).rglob("*.py")):
        if path.is_symlink() or "site-packages" in path.parts or "dist-packages" in path.parts:
            continue
        text = kept(path.read_bytes().decode("utf-8", errors="replace").replace("\r", ""))
        if text is not None:
            code_docs.append({"id": str(path.relative_to(args.python_root)), "text": text})

    modes = (("de", de_docs), ("en", en_docs), ("en_more", more_docs), ("code", code_docs))
    for mode, docs in modes:
        write_jsonl_xz(out / f"{mode}.jsonl.xz", docs)

    en_pkgs = owning_packages([p for _, _, p in pairs if page_key(p) in {d["id"] for d in en_docs}])
    de_pkgs = owning_packages([p for _, p, _ in pairs if page_key(p) in {d["id"] for d in de_docs}])
    more_pkgs = owning_packages([p for key, p in pages if key in {d["id"] for d in more_docs}])
    code_pkgs = owning_packages([str(Path(args.python_root) / d["id"]) for d in code_docs])
    lines = ["# Sources of the shipped corpora", "",
             "Built by `scripts/build_corpora.py` (its docstring says how the text was extracted). Command:", "",
             "```", "apt-get install -y manpages manpages-de manpages-dev", f"python scripts/build_corpora.py --out {args.out} "
             f"--python-root {args.python_root} --min-bytes {args.min_bytes} --max-bytes {args.max_bytes}", "```", "",
             "| file | documents | bytes (UTF-8) | xz bytes |", "|---|---|---|---|"]
    for mode, docs in modes:
        size = sum(len(d["text"].encode()) for d in docs)
        lines.append(f"| `{mode}.jsonl.xz` | {len(docs)} | {size} | {(out / f'{mode}.jsonl.xz').stat().st_size} |")
    lines += ["", "Rendering: man-db `man -l -E UTF-8 --no-hyphenation --no-justification` with `MANWIDTH=100` "
              f"(man-db {package_version('man-db')}, groff {package_version('groff-base')}); header and footer lines "
              "dropped, paragraphs joined into single lines, blank runs collapsed. Code: byte for byte, cut at "
              "a line end. Documents below the minimum size dropped, exact duplicates removed (a German page and "
              "its English original kept or dropped together, by the page id `section/name`). `en_more`: every other "
              "English page of sections 1-8 (not a symlink, not a page of the German/English pair, not equal to a kept "
              "page) owned by a package whose installed version is a Debian build (`apt-cache policy` lists a "
              "`debian.org` source at the same major upstream version, and no other origin for the installed one); pages of packages from other apt origins are skipped "
              f"({', '.join(f'`{p}`' for p in skipped) or 'none here'}). With `en` it forms the prose mode of the code-against-prose pair.", "",
              "## Packages, versions, licences", "",
              "| mode | Debian package | version | files used | licences (from /usr/share/doc/<package>/copyright) |",
              "|---|---|---|---|---|"]
    for mode, pkgs in (("de", de_pkgs), ("en", en_pkgs), ("en_more", more_pkgs), ("code", code_pkgs)):
        for pkg, n in pkgs.most_common():
            lines.append(f"| {mode} | {pkg} | {package_version(pkg)} | {n} | {licences(pkg)} |")
    lines += ["", "The man pages keep their authors' licences (verbatim-copying, GPL, BSD-style and others, "
              "page by page: the copyright files above list them); the German translations of manpages-de are "
              "GPL-3+. The Python standard library is under the PSF License (Debian package copyright file). "
              "The text is redistributed unmodified in content, only re-rendered to plain text.", ""]
    (out / "SOURCES.md").write_text("\n".join(lines))
    print(f"de {len(de_docs)}, en {len(en_docs)}, en_more {len(more_docs)}, code {len(code_docs)} documents", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

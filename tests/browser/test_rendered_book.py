"""``make test-browser``: every page of ``_build/html`` loaded in headless Chromium, as a reader sees it.

Serves the built book on 127.0.0.1 and drives Debian's ``chromium`` through its ``chromedriver``
(installed by ``make setup`` where it can; nothing downloads a browser here). Skips, saying why,
when there is no built book or no browser. On every page: HTTP 200, no console errors, all math
typeset by MathJax, nothing wider than the content column (tables and display math scroll in their own
box), every image loaded, every internal link and anchor resolving, every theorem-like block numbered,
and the left navigation listing every Part and chapter. A screenshot of each chapter's first screen
goes to ``_build/screenshots/`` for reviewers.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import threading
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest
import yaml

from conftest import ROOT

HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
WIDTH, HEIGHT = 1280, 900
SCRIPT_TIMEOUT_S = 90
NUMBERED = ("theorem", "lemma", "proposition", "corollary", "definition", "assumption")


def _pages() -> list[str]:
    if not HTML.is_dir():
        return []
    skip = {"genindex.html", "search.html", "prf-prf.html"}  # generated index pages
    return sorted(p.relative_to(HTML).as_posix() for p in HTML.rglob("*.html")
                  if p.name not in skip and not {"_static", "_sources", "_images"} & set(p.relative_to(HTML).parts))


def _toc() -> tuple[list[str], list[str]]:
    """Part captions and chapter documents (``notebooks/...``, ``book/...``) from ``_toc.yml``."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    captions, files = [], [toc["root"]]
    for part in toc.get("parts", []):
        captions.append(part["caption"])
        files += [c["file"] for c in part.get("chapters", [])]
    return captions, [re.sub(r"\.(ipynb|md)$", "", f) for f in files]


class _Ids(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v:
                self.ids.add(v)


@functools.lru_cache(maxsize=None)
def _ids(path: Path) -> frozenset[str]:
    parser = _Ids()
    parser.feed(path.read_text(errors="replace"))
    return frozenset(parser.ids)


def _chromium() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


@pytest.fixture(scope="module")
def server():
    if not _pages():
        pytest.skip("no built book in _build/html: run `make book` or `make test-docs` first")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    httpd = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # the browser closing a connection early is not an error
        pass


@pytest.fixture(scope="module")
def browser():
    found = _chromium()
    if found is None:
        pytest.skip("no headless Chromium: `apt-get install chromium chromium-driver` (make setup does this "
                    "where it runs as root with apt-get); the browser test did not run")
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium must not try to download a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = found[0]
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                f"--window-size={WIDTH},{HEIGHT}", "--hide-scrollbars"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=found[1]), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


# Runs in the page: waits for MathJax, then measures everything the test asserts on.
_INSPECT = r"""
const done = arguments[arguments.length - 1];
// MathJax loads deferred: wait (up to 20 s) until it has started, then until it has typeset the page.
const started = new Promise((resolve) => {
  const t0 = Date.now();
  const poll = () => {
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) resolve(MathJax.startup.promise);
    else if (!document.querySelector('script[src*="mathjax"]') || Date.now() - t0 > 20000) resolve(null);
    else setTimeout(poll, 50);
  };
  poll();
});
started.then(() => {
  const article = document.querySelector('.bd-article') || document.body;
  const col = article.getBoundingClientRect();
  const scrolls = (el) => { const o = getComputedStyle(el).overflowX; return o === 'auto' || o === 'scroll' || o === 'hidden'; };
  const wide = [], flagged = new Set();  // report the outermost overflowing element only
  for (const el of article.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= col.right + 2) continue;
    let a = el.parentElement, boxed = false;
    while (a && a !== article) { if (scrolls(a) && a.getBoundingClientRect().right <= col.right + 2) { boxed = true; break; } a = a.parentElement; }
    if (boxed) continue;
    flagged.add(el);
    if (!flagged.has(el.parentElement)) wide.push(el.tagName.toLowerCase() + '.' + (el.className || '').toString().split(' ')[0] + ' +' + Math.round(r.right - col.right) + 'px');
  }
  const text = article.innerText;
  const raw = [];
  for (const pat of ['\\(', '\\[', '$$', '\\begin{']) { if (text.includes(pat)) raw.push(pat); }
  const numbered = [];
  for (const el of document.querySelectorAll('div.proof.admonition')) {
    const title = el.querySelector('.admonition-title');
    numbered.push([el.className, title ? title.innerText : el.innerText.slice(0, 80)]);
  }
  done(JSON.stringify({
    wide: wide.slice(0, 5), n_wide: wide.length, raw: raw,
    n_math: document.querySelectorAll('mjx-container').length,
    n_tex: document.querySelectorAll('.math, span.math, div.math').length,
    broken_images: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.src),
    n_images: document.images.length,
    links: [...document.querySelectorAll('a[href]')].map(a => a.href),
    nav: [...document.querySelectorAll('.bd-sidebar-primary a, nav.bd-links a')].map(a => a.href),
    captions: [...document.querySelectorAll('.bd-sidebar-primary p.caption, .bd-sidebar-primary .caption-text')].map(e => e.innerText.trim()),
    blocks: numbered,
  }));
});
"""


def _check_link(base: str, href: str, page: str, problems: list[str]) -> None:
    url = urlparse(href)
    if url.scheme not in ("http", "https") or url.netloc != urlparse(base).netloc:
        return
    rel = unquote(url.path).lstrip("/")
    target = HTML / rel
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file():
        problems.append(f"{page}: link to missing {rel}")
        return
    if url.fragment and target.suffix == ".html" and url.fragment not in _ids(target):
        problems.append(f"{page}: link to missing anchor {rel}#{url.fragment}")


def test_every_page_renders_for_a_reader(server, browser):
    captions, documents = _toc()
    chapters = [d for d in documents if d.startswith("notebooks/")]
    SHOTS.mkdir(parents=True, exist_ok=True)
    browser.set_script_timeout(SCRIPT_TIMEOUT_S)
    from selenium.common.exceptions import TimeoutException

    problems: list[str] = []
    for page in _pages():
        url = urljoin(server, page)
        with urllib.request.urlopen(url) as resp:  # the status code, which WebDriver does not report
            if resp.status != 200:
                problems.append(f"{page}: HTTP {resp.status}")
        browser.get(url)
        try:
            found = json.loads(browser.execute_async_script(_INSPECT))
        except TimeoutException:
            problems.append(f"{page}: did not finish loading and typesetting in {SCRIPT_TIMEOUT_S} s")
            continue
        errors = [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        problems += [f"{page}: console error {m[:160]}" for m in errors]
        if found["n_tex"] and not found["n_math"]:
            problems.append(f"{page}: {found['n_tex']} math elements but no MathJax output")
        problems += [f"{page}: raw TeX {pat!r} left in the text" for pat in found["raw"]]
        problems += [f"{page}: wider than the content column: {w}" for w in found["wide"]]
        problems += [f"{page}: image not loaded: {src}" for src in found["broken_images"]]
        for href in set(found["links"]):
            _check_link(server, href, page, problems)
        for cls, title in found["blocks"]:
            kind = next((k for k in NUMBERED if k in cls.split()), None)
            if kind and not re.match(rf"{kind}\s+\d+(\.\d+)*\b", title, re.I):
                problems.append(f"{page}: {kind} block without its number: {title[:60]!r}")
            if kind is None and cls.split()[:2] == ["proof", "admonition"] and not title.startswith("Proof"):
                problems.append(f"{page}: proof block titled {title[:60]!r}")
        nav = {unquote(urlparse(h).path).lstrip("/").removesuffix(".html") for h in found["nav"]}
        missing = [c for c in chapters if c not in nav]
        if missing:
            problems.append(f"{page}: left navigation lacks {missing}")
        missing_parts = [c for c in captions if c not in found["captions"]]
        if missing_parts:
            problems.append(f"{page}: left navigation lacks the Parts {missing_parts}")
        if page.removesuffix(".html") in chapters:
            browser.save_screenshot(str(SHOTS / (page.removesuffix(".html").replace("/", "__") + ".png")))
    assert not problems, "\n".join(problems)


def test_the_page_inspector_catches_what_it_looks_for(browser, tmp_path):
    """The checks above can fail: a page with a too-wide table, raw TeX, a broken image and an unnumbered theorem."""
    page = tmp_path / "bad.html"
    page.write_text(
        "<html><body><div class='bd-article' style='width:400px'>"
        "<table style='width:900px'><tr><td>wide</td></tr></table><p>$$x^2$$</p><img src='missing.png'>"
        "<div class='proof theorem admonition'><p class='admonition-title'>Theorem (no number)</p></div>"
        "<div style='overflow-x:auto;width:400px'><table style='width:900px'><tr><td>boxed</td></tr></table></div>"
        "</div></body></html>")
    browser.get(page.as_uri())
    found = json.loads(browser.execute_async_script(_INSPECT))
    assert found["n_wide"] == 1 and found["wide"][0].startswith("table")  # the boxed one scrolls in place
    assert found["raw"] == ["$$"] and len(found["broken_images"]) == 1
    assert found["blocks"] == [["proof theorem admonition", "Theorem (no number)"]]
    assert not re.match(r"theorem\s+\d+", found["blocks"][0][1], re.I)

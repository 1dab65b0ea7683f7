"""The built site in a real browser: headless Chromium, served from 127.0.0.1, no network.

Chromium is driven through the DevTools protocol over ``--remote-debugging-pipe``
(file descriptors 3 and 4, NUL-separated JSON), so nothing beyond the standard
library is needed. Every host except 127.0.0.1 is unresolvable, and every request
a page makes is recorded: a request to another origin fails the test, so a CDN
dependency cannot hide. Console errors and uncaught exceptions fail it too.
Skipped, with the reason, when no Chromium is installed (Debian package
``chromium``; or point ``MEMSPEC_CHROMIUM`` at a binary).
"""

from __future__ import annotations

import base64
import fcntl
import functools
import json
import os
import queue
import shutil
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.docs import Built, built_site

#: (name, path, words the rendered page's text must contain)
PAGES = (
    ("home", "", ("Two commands", "memspec certify --engine reference")),
    ("spec", "generated/spec/", ("Canonical JSON", "REC-5 · MUST · format")),
    ("lifecycle", "generated/lifecycle/", ("Legality matrix", "State diagram")),
    ("schema", "generated/schemas/record/", ("MemoryRecord",
                                              "https://memspec.dev/schemas/record.json")),
    ("vectors", "generated/vectors/records/", ("records/published-canonical-record",)),
    ("kit-power", "generated/kit-power/", ("Kit power",)),
)
PHONE = (390, 844)
DESKTOP = (1280, 900)
WAIT = 30.0  # seconds a page may take to reach a condition


def chromium() -> str | None:
    """A Chromium binary: $MEMSPEC_CHROMIUM, else the usual names on PATH."""
    explicit = os.environ.get("MEMSPEC_CHROMIUM")
    if explicit:
        return explicit
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _high(fd: int) -> int:
    """``fd`` moved to a descriptor number of at least 10 (the old one is closed)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved


class Browser:
    """One headless Chromium and one page in it, driven over the DevTools pipe."""

    def __init__(self, binary: str, profile: Path) -> None:
        # Chromium's stderr goes to a file: an unread pipe would fill up and stall it.
        self._log_path = profile / "chromium.log"
        self._log = self._log_path.open("wb")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        # Move the child's ends above 9, so that putting one on 3 or 4 cannot clobber the
        # other when the pipe happened to get one of those numbers.
        to_browser_r, from_browser_w = (_high(to_browser_r), _high(from_browser_w))
        args = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--hide-scrollbars", "--remote-debugging-pipe", f"--user-data-dir={profile}",
                "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "about:blank"]
        # Chromium reads commands on fd 3 and writes replies on fd 4: a tiny launcher puts
        # the pipe ends there and execs it.
        launcher = ("import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4);"
                    " os.execvp(sys.argv[3], sys.argv[3:])")
        self.process = subprocess.Popen(
            [sys.executable, "-c", launcher, str(to_browser_r), str(from_browser_w), *args],
            pass_fds=(to_browser_r, from_browser_w),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._next = 0
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable", session=True)

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    with self._lock:
                        waiting = self._replies.get(message["id"])
                    if waiting is not None:
                        waiting.put(message)
                else:
                    self.events.append(message)

    def send(self, method: str, params: dict[str, Any] | None = None, *,
             session: bool = False, timeout: float = WAIT) -> dict[str, Any]:
        """Send one command and wait for its reply; AssertionError on a protocol error."""
        with self._lock:
            self._next += 1
            number = self._next
            self._replies[number] = queue.Queue()
        message: dict[str, Any] = {"id": number, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        try:
            os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise AssertionError(f"chromium exited ({self.process.poll()}): "
                                 f"{self._stderr()}") from None
        try:
            reply = self._replies[number].get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"chromium did not answer {method} in {timeout} s") from None
        finally:
            with self._lock:
                self._replies.pop(number, None)
        assert "error" not in reply, f"{method}: {reply['error']}"
        result: dict[str, Any] = reply.get("result", {})
        return result

    def _stderr(self) -> str:
        return self._log_path.read_text(encoding="utf-8", errors="replace")[-3000:]

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                               "awaitPromise": True}, session=True)
        assert "exceptionDetails" not in reply, reply["exceptionDetails"]
        return reply["result"].get("value")

    def wait_for(self, expression: str, what: str, timeout: float = WAIT) -> None:
        """Poll until ``expression`` is true in the page."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.evaluate(expression):
                return
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def _navigate(self, url: str) -> None:
        self.events.clear()
        self.send("Page.navigate", {"url": url}, session=True)
        end = time.monotonic() + WAIT
        while not any(e.get("method") == "Page.loadEventFired" for e in list(self.events)):
            if time.monotonic() > end:
                raise AssertionError(f"{url} did not load in {WAIT} s")
            time.sleep(0.05)

    def open(self, url: str, size: tuple[int, int] = DESKTOP, *, mobile: bool = False) -> None:
        """Load ``url`` at a viewport size and wait for its load event."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": size[0], "height": size[1], "deviceScaleFactor": 1,
                   "mobile": mobile}, session=True)
        self._navigate("about:blank")  # so that a change of fragment alone reloads too
        self._navigate(url)

    def screenshot(self, path: Path) -> None:
        data = self.send("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        path.write_bytes(base64.b64decode(data))

    def requests(self) -> list[str]:
        return [e["params"]["request"]["url"] for e in self.events
                if e.get("method") == "Network.requestWillBeSent"]

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads since the last ``open``."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append("exception: " + str(details.get("exception", {}).get(
                    "description", details.get("text"))))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error",
                                                                                  "assert"):
                found.append("console.error: " + " ".join(
                    str(a.get("value", a.get("description", ""))) for a in params["args"]))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                entry = params["entry"]
                found.append(f"log: {entry.get('text')} {entry.get('url', '')}")
            elif method == "Network.loadingFailed" and not params.get("canceled"):
                found.append(f"load failed: {params.get('errorText')}")
        return found

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except AssertionError:
            pass
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        os.close(self._to_browser)
        os.close(self._from_browser)
        self._log.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return built_site(tmp_path_factory)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server(built: Built) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(built.site))
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browser]:
    binary = chromium()
    if binary is None:
        pytest.skip("no Chromium installed (apt-get install chromium, or set MEMSPEC_CHROMIUM)")
    chrome = Browser(binary, tmp_path_factory.mktemp("chromium-profile"))
    try:
        yield chrome
    finally:
        chrome.close()


def _check_offline(browser: Browser, base: str) -> None:
    requests = browser.requests()
    assert requests, "the page made no request at all"
    outside = [url for url in requests
               if not url.startswith((base + "/", "data:", "blob:", "about:"))]
    assert not outside, f"the page requested other origins: {outside}"
    assert not browser.problems(), "\n".join(browser.problems())


@pytest.mark.parametrize(("name", "path", "words"), PAGES, ids=[p[0] for p in PAGES])
def test_page_renders_offline(browser: Browser, server: str, name: str, path: str,
                              words: tuple[str, ...]) -> None:
    browser.open(f"{server}/{path}")
    title = browser.evaluate("document.title")
    assert title.endswith("memspec"), f"{name}: title {title!r}"
    body = browser.evaluate("document.body.innerText")
    for word in words:
        assert word in body, f"{name}: {word!r} is not on the rendered page"
    _check_offline(browser, server)


def test_lifecycle_diagram_is_rendered_by_local_mermaid(browser: Browser, server: str) -> None:
    browser.open(f"{server}/generated/lifecycle/")
    # Material swaps each <pre class="mermaid"> for a <div class="mermaid"> holding the SVG
    # (in a closed shadow root) only once mermaid has rendered it.
    browser.wait_for("document.querySelector('div.mermaid') !== null && "
                     "document.querySelector('pre.mermaid') === null", "the diagram")
    height = browser.evaluate("document.querySelector('div.mermaid').getBoundingClientRect()"
                              ".height")
    assert height > 100, f"the rendered diagram is {height} px high"
    assert any(url.endswith("/generated/assets/mermaid.min.js") for url in browser.requests())
    _check_offline(browser, server)


def test_search_finds_a_requirement(browser: Browser, server: str) -> None:
    browser.open(f"{server}/?q=supersession")
    browser.wait_for("document.querySelectorAll('.md-search-result__item').length > 0",
                     "search results")
    meta = browser.evaluate("document.querySelector('.md-search-result__meta').innerText")
    assert "matching" in meta
    _check_offline(browser, server)


@pytest.mark.parametrize("rid", ["REC-5", "PROTO-2"])
def test_search_for_a_requirement_id_finds_its_text(browser: Browser, server: str,
                                                    rid: str) -> None:
    # lunr's query lexer would split the query at '-' (overrides/ keeps it one term).
    browser.open(f"{server}/?q={rid}")
    browser.wait_for("document.querySelectorAll('.md-search-result__item').length > 0",
                     "search results")
    first = browser.evaluate("document.querySelector('.md-search-result__item').innerText")
    assert rid in first and "Missing" not in first, first
    _check_offline(browser, server)


def test_search_still_splits_other_hyphenated_words(browser: Browser, server: str) -> None:
    # "content-addressed" is two index terms; the query must be split the same way, or no
    # result would hold both ("Missing: content-addressed" on every one).
    browser.open(f"{server}/?q=content-addressed")
    browser.wait_for("document.querySelectorAll('.md-search-result__item').length > 0",
                     "search results")
    items = browser.evaluate("[...document.querySelectorAll('.md-search-result__item')]"
                             ".map(item => item.innerText)")
    assert any("Missing" not in item for item in items), items[:3]
    _check_offline(browser, server)


def test_a_requirement_anchor_lands_on_its_text(browser: Browser, server: str) -> None:
    browser.open(f"{server}/generated/spec/#REC-5")
    browser.wait_for("document.getElementById('REC-5') !== null", "the REC-5 anchor")
    top = browser.evaluate("document.getElementById('REC-5').getBoundingClientRect().top")
    assert 0 <= top < 300, f"REC-5 is at {top} px, not at the top of the viewport"
    text = browser.evaluate("document.getElementById('REC-5').innerText")
    assert "MUST" in text and "body" in text


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.parametrize("path", ["", "generated/lifecycle/", "generated/spec/",
                                  "generated/vectors/records/", "generated/requirements/"],
                         ids=["home", "lifecycle", "spec", "vectors", "requirements"])
def test_phone_sized_pages(browser: Browser, server: str, tmp_path: Path, path: str) -> None:
    browser.open(f"{server}/{path}", PHONE, mobile=True)
    if "lifecycle" in path:
        browser.wait_for("document.querySelector('pre.mermaid') === null", "the diagram")
    # Nothing may widen the page beyond the phone's viewport (tables scroll in place).
    width = browser.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE[0], f"the page is {width} px wide on a {PHONE[0]} px phone"
    shot = tmp_path / f"{path.strip('/').replace('/', '-') or 'home'}-phone.png"
    browser.screenshot(shot)
    assert _png_size(shot) == PHONE
    assert shot.stat().st_size > 10_000, f"{shot} looks blank"
    _check_offline(browser, server)

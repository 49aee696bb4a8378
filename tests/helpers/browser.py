"""Open an HTML report in headless Chromium and report what a reader's browser would see.

A test helper (not a test file): :func:`check_page` loads a page by ``file://`` URL in a
throwaway headless Chromium and returns a :class:`PageCheck` with the plotly figures it holds,
how many of them rendered, the console errors and uncaught exceptions, the network requests
the page tried to make, and the DOM after its scripts ran; optionally it saves a screenshot.

How it works (standard library only; CI installs just Debian's ``chromium``):

* Chromium runs with ``--remote-debugging-pipe``: it reads DevTools Protocol (CDP) commands
  from fd 3 and writes replies and events to fd 4, each message a JSON object ended by a NUL
  byte. The command line alone (``--dump-dom``, ``--enable-logging``) does not report console
  errors reliably in the new headless mode, so the protocol is used instead.
* Console errors: ``Runtime.consoleAPICalled`` events of type ``error``/``assert``,
  ``Runtime.exceptionThrown`` (uncaught exceptions and rejected promises) and ``Log.entryAdded``
  entries of level ``error`` (the browser's own messages, e.g. a failed resource load).
* Network: every ``Network.requestWillBeSent`` of the page whose URL is not local
  (``file:``, ``data:``, ``blob:``, ``about:``, ``chrome-error:``) lands in ``network_requests``.
  The network is blocked as well (``--host-resolver-rules`` maps every host to NOTFOUND and a
  dead proxy is configured), so such a load fails and usually shows a console error too; no
  report can reach the internet, and nothing waits on a slow server.
* The page counts as settled once its load event fired and every ``div.plotly-graph-div``
  holds an ``svg.main-svg`` (or, for a page where some never do, after a short grace period),
  plus a short quiet period for late errors.
* Every read from Chromium has a deadline; on timeout or error the whole process group is
  killed, and a :class:`RuntimeError` names the command and the tail of Chromium's stderr.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LAYOUT_JS", "PageCheck", "check_page", "find_chromium"]

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
_LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:", "chrome-error:", "devtools:")

# After the load event: how long to wait for figures that have not rendered yet, and how long to
# keep listening for late console errors once everything looks settled.
_RENDER_GRACE_S = 2.0
_QUIET_S = 0.3
_POLL_S = 0.1

_COUNT_JS = """(() => {
  const divs = Array.from(document.querySelectorAll('div.plotly-graph-div'));
  return {figures: divs.length,
          rendered: divs.filter(d => d.querySelector('svg.main-svg') !== null).length,
          ready: document.readyState};
})()"""


# What a reader sees, measured in the page: the first screen's elements (their bottom edge, against the window's
# height), and every pair of SVG texts in one figure whose boxes overlap (titles, labels, legends, annotations).
LAYOUT_JS = """(() => {
  const bottom = sel => { const e = document.querySelector(sel); return e ? e.getBoundingClientRect().bottom : null; };
  const overlaps = [];
  for (const div of document.querySelectorAll('div.plotly-graph-div')) {
    const texts = Array.from(div.querySelectorAll('svg text')).filter(t => t.textContent.trim()
      && t.getBoundingClientRect().width > 0 && getComputedStyle(t).opacity !== '0');
    const boxes = texts.map(t => [t, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, p] = boxes[i], [b, q] = boxes[j];
      const w = Math.min(p.right, q.right) - Math.max(p.left, q.left);
      const h = Math.min(p.bottom, q.bottom) - Math.max(p.top, q.top);
      if (w > 2 && h > 2 && !a.contains(b) && !b.contains(a))
        overlaps.push(div.id + ': "' + a.textContent.trim() + '" / "' + b.textContent.trim() + '"');
    }
    // a label over a drawn point (a trial, a preset, O0, a confirmed mean): the point it hides is lost to the reader
    const points = Array.from(div.querySelectorAll('g.scatterlayer path.point')).map(p => p.getBoundingClientRect())
      .filter(r => r.width > 0);
    for (const t of div.querySelectorAll('g.annotation text')) {
      const p = t.getBoundingClientRect();
      if (!t.textContent.trim() || p.width === 0) continue;
      for (const q of points) {
        const cx = (q.left + q.right) / 2, cy = (q.top + q.bottom) / 2;
        if (cx > p.left && cx < p.right && cy > p.top && cy < p.bottom) {
          overlaps.push(div.id + ': "' + t.textContent.trim() + '" covers a point'); break; }
      }
    }
  }
  const wide = Array.from(document.querySelectorAll('table')).filter(t => {
    const box = t.parentElement.getBoundingClientRect(); return t.getBoundingClientRect().right > box.right + 1
      && getComputedStyle(t.parentElement).overflowX === 'visible'; }).length;
  return {height: window.innerHeight, answer: bottom('p.answer'), table: bottom('#answer table'),
          snippet: bottom('#apply pre'), overlaps: overlaps, unscrollable_wide_tables: wide,
          page_width: document.documentElement.scrollWidth, width: window.innerWidth};
})()"""


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary: ``$CHROMIUM`` if set, else the first on ``PATH``."""
    env = os.environ.get("CHROMIUM")
    if env:
        found = shutil.which(env)
        return found if found else None
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass(frozen=True)
class PageCheck:
    figures: int  # plotly figure divs in the page (div.plotly-graph-div)
    rendered: int  # of those, how many hold a rendered plot (svg.main-svg) after scripts ran
    console_errors: tuple[str, ...]  # console errors, uncaught exceptions, browser error logs
    network_requests: tuple[str, ...]  # non-local URLs the page tried to load (all blocked)
    dom: str  # document.documentElement.outerHTML after scripts ran
    evaluated: Any = None  # what the page returned for ``evaluate`` (JSON values), None without one


class _CdpError(RuntimeError):
    pass


class _Pipe:
    """The CDP pipe: NUL-terminated JSON messages, with a deadline on every read."""

    def __init__(self, write_fd: int, read_fd: int, deadline: float) -> None:
        self._w = write_fd
        self._r = read_fd
        self._deadline = deadline
        self._buf = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> int:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data):]
        return self._next_id

    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send a command and return its result; events that arrive meanwhile are queued."""
        msg_id = self.send(method, params, session)
        while True:
            msg = self._read(self._deadline)
            assert msg is not None  # only pump() reads with a timeout that returns None
            if msg.get("id") == msg_id:
                if "error" in msg:
                    raise _CdpError(f"{method} failed: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def pump(self, until: float) -> None:
        """Queue the events that arrive before ``until`` (capped by the overall deadline)."""
        end = min(until, self._deadline)
        while True:
            msg = self._read(end, allow_timeout=True)
            if msg is None:
                return
            if "method" in msg:
                self.events.append(msg)

    def _read(self, end: float, allow_timeout: bool = False) -> dict | None:
        """Next message; None when ``end`` passed (if ``allow_timeout``, before the deadline).

        Raises ``TimeoutError`` at the overall deadline and ``_CdpError`` when the pipe closes.
        """
        while b"\0" not in self._buf:
            left = end - time.monotonic()
            if left <= 0:
                if allow_timeout and end < self._deadline:
                    return None
                raise TimeoutError("timed out waiting for chromium")
            ready, _, _ = select.select([self._r], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise _CdpError("chromium closed the DevTools pipe (did it crash?)")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)


def _high_fd(fd: int) -> int:
    """Duplicate ``fd`` to a number >= 10 (close-on-exec) so dup2 onto 3/4 cannot clobber it."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return new


def _kill(proc: subprocess.Popen) -> None:
    """Kill chromium's whole process group (helpers may outlive the browser process)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL'd processes exit
        pass


def _format_exception(params: dict) -> str:
    details = params.get("exceptionDetails", {})
    exc = details.get("exception") or {}
    text = exc.get("description") or details.get("text") or "uncaught exception"
    where = details.get("url")
    if where:
        text = f"{text} ({where}:{details.get('lineNumber', 0) + 1})"
    return f"uncaught: {text}"


def _format_console(params: dict) -> str:
    parts = []
    for arg in params.get("args", []):
        if "value" in arg:
            parts.append(str(arg["value"]))
        else:
            parts.append(str(arg.get("description", arg.get("type", ""))))
    return f"console.{params.get('type', 'error')}: {' '.join(parts)}"


def check_page(
    path: Path,
    *,
    screenshot: Path | None = None,
    width: int = 1400,
    height: int = 1000,
    timeout_s: float = 60,
    evaluate: str | None = None,
) -> PageCheck:
    """Load ``path`` in headless Chromium (network blocked) and report what happened; ``evaluate``: a JavaScript
    expression run once the page settled, its value (JSON) in ``PageCheck.evaluated``.

    Raises ``RuntimeError`` (naming the command and Chromium's stderr tail) when Chromium is
    missing, fails, or does not finish within ``timeout_s`` seconds.
    """
    binary = find_chromium()
    if binary is None:
        raise RuntimeError("no chromium found (set $CHROMIUM or install chromium)")
    url = Path(path).resolve().as_uri()
    deadline = time.monotonic() + timeout_s

    with tempfile.TemporaryDirectory(prefix="boosttune-chromium-") as profile:
        cmd = [
            binary,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            f"--user-data-dir={profile}",
            "--remote-debugging-pipe",
            f"--window-size={width},{height}",
            "--hide-scrollbars",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--mute-audio",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--proxy-server=127.0.0.1:9",
            "--proxy-bypass-list=<-loopback>",
            "about:blank",
        ]
        # fd 3: chromium reads commands; fd 4: chromium writes replies/events.
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        child_in, child_out = _high_fd(to_child_r), _high_fd(from_child_w)

        def _wire_pipe() -> None:  # runs in the child between fork and exec
            os.dup2(child_in, 3)  # dup2 leaves the new fds inheritable
            os.dup2(child_out, 4)

        stderr_file = tempfile.TemporaryFile()
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr_file,
                preexec_fn=_wire_pipe,
                close_fds=False,  # our fds are close-on-exec; 3 and 4 must survive exec
                start_new_session=True,  # own process group, so a timeout kills all of it
            )
        finally:
            os.close(child_in)
            os.close(child_out)

        def fail(reason: str) -> RuntimeError:
            _kill(proc)
            stderr_file.seek(0)
            tail = stderr_file.read()[-3000:].decode("utf-8", "replace")
            return RuntimeError(
                f"chromium failed: {reason}\ncommand: {' '.join(cmd)}\n"
                f"exit code: {proc.returncode}\nstderr tail:\n{tail}"
            )

        pipe = _Pipe(to_child_w, from_child_r, deadline)
        try:
            try:
                result = _drive(pipe, url, screenshot, width, height, evaluate)
            except (TimeoutError, _CdpError, OSError, ValueError) as exc:
                if isinstance(exc, TimeoutError):
                    raise fail(f"timed out after {timeout_s} s loading {url}") from None
                raise fail(f"{exc} (loading {url})") from exc
            try:
                pipe.send("Browser.close")
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
            return result
        finally:
            _kill(proc)
            os.close(to_child_w)
            os.close(from_child_r)
            stderr_file.close()


def _drive(
    pipe: _Pipe, url: str, screenshot: Path | None, width: int, height: int, evaluate: str | None = None
) -> PageCheck:
    target = pipe.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = pipe.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
        "sessionId"
    ]
    for domain in ("Page", "Runtime", "Log", "Network"):
        pipe.call(f"{domain}.enable", session=session)
    pipe.call(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    nav = pipe.call("Page.navigate", {"url": url}, session=session)
    if nav.get("errorText"):
        raise _CdpError(f"navigation to {url} failed: {nav['errorText']}")

    def loaded() -> bool:
        return any(
            e["method"] == "Page.loadEventFired" and e.get("sessionId") == session
            for e in pipe.events
        )

    while not loaded():
        pipe.pump(time.monotonic() + _POLL_S)

    def count() -> dict:
        res = pipe.call(
            "Runtime.evaluate", {"expression": _COUNT_JS, "returnByValue": True},
            session=session,
        )
        return res["result"]["value"]

    grace_end = time.monotonic() + _RENDER_GRACE_S
    while True:
        state = count()
        if state["rendered"] >= state["figures"] or time.monotonic() >= grace_end:
            break
        pipe.pump(time.monotonic() + _POLL_S)
    pipe.pump(time.monotonic() + _QUIET_S)  # late errors (async plot promises, failed loads)
    state = count()

    dom = pipe.call(
        "Runtime.evaluate",
        {"expression": "document.documentElement.outerHTML", "returnByValue": True},
        session=session,
    )["result"]["value"]

    evaluated = None
    if evaluate is not None:
        reply = pipe.call("Runtime.evaluate", {"expression": evaluate, "returnByValue": True}, session=session)
        if "exceptionDetails" in reply:
            raise _CdpError(f"evaluate failed: {reply['exceptionDetails'].get('text')}")
        evaluated = reply["result"].get("value")

    if screenshot is not None:
        shot = pipe.call(
            "Page.captureScreenshot",
            {"format": "png", "clip": {"x": 0, "y": 0, "width": width, "height": height,
                                       "scale": 1}},
            session=session,
        )
        Path(screenshot).write_bytes(base64.b64decode(shot["data"]))

    errors: list[str] = []
    requests: list[str] = []
    for event in pipe.events:
        if event.get("sessionId") != session:
            continue
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            errors.append(_format_exception(params))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(_format_console(params))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            text = entry.get("text", "")
            if entry.get("url"):
                text = f"{text} ({entry['url']})"
            errors.append(f"{entry.get('source', 'browser')}: {text}")
        elif method == "Network.requestWillBeSent":
            req_url = params.get("request", {}).get("url", "")
            if not req_url.startswith(_LOCAL_SCHEMES) and req_url not in requests:
                requests.append(req_url)

    return PageCheck(
        figures=int(state["figures"]),
        rendered=int(state["rendered"]),
        console_errors=tuple(errors),
        network_requests=tuple(requests),
        dom=dom,
        evaluated=evaluated,
    )

"""Open a page in headless Chromium and ask it questions, with the Python standard library only.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: commands on the
child's fd 3, answers and events on its fd 4, each message JSON ended by a NUL byte).  load()
opens one file, waits for its load event, evaluates an expression in the page, optionally saves a
screenshot of the whole page, and reports everything the browser complained about: exceptions,
console errors, log errors (blocked loads, Content-Security-Policy violations) and every request
the page made.

The browser is Debian's chromium (or chromium-browser) on the PATH; ALLOCSCOPE_CHROMIUM names
another executable.  Used by tests/e2e/test_html.py and scripts/screenshot.
"""
import base64
import json
import os
import pathlib
import select
import shutil
import subprocess
import tempfile
import time

CANDIDATES = ("chromium", "chromium-browser")


def find_chromium():
    """The Chromium executable, or None."""
    override = os.environ.get("ALLOCSCOPE_CHROMIUM")
    if override:
        return override if os.access(override, os.X_OK) else None
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class _Pipe:
    def __init__(self, proc, to_child, from_child):
        self.proc = proc
        self.to_child = to_child
        self.from_child = from_child
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self.from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_child, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed the pipe (exit status {self.proc.poll()})")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return json.loads(message)

    def send(self, method, params=None, session=None, timeout=60):
        self.next_id += 1
        wanted = self.next_id
        message = {"id": wanted, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.to_child, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == wanted:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_for(self, method, timeout=60):
        deadline = time.monotonic() + timeout
        for event in self.events:
            if event["method"] == method:
                return event
        while True:
            event = self._read_message(deadline)
            if "method" in event:
                self.events.append(event)
                if event["method"] == method:
                    return event


class PageResult:
    def __init__(self):
        self.value = None        # what the expression returned
        self.errors = []         # exceptions, console errors, log errors
        self.requests = []       # URLs the page asked for (the page itself included)
        self.screenshot = None   # path of the PNG, when asked for


def _complaints(events):
    errors, requests = [], []
    for event in events:
        method, params = event["method"], event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            errors.append("exception: " + details.get("exception", {}).get("description", details.get("text", "")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append("console.error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                       for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            errors.append(f"log ({entry.get('source')}): {entry.get('text')} {entry.get('url', '')}".strip())
        elif method == "Network.requestWillBeSent":
            requests.append(params.get("request", {}).get("url", ""))
        elif method == "Network.loadingFailed":
            errors.append(f"loading failed: {params.get('errorText')} {params.get('blockedReason', '')}".strip())
    return errors, requests


def load(path, expression=None, screenshot=None, width=1000, height=None, top=0, timeout=90):
    """Opens `path` in headless Chromium; returns a PageResult.

    `expression` is evaluated in the page after its load event (its value must be JSON);
    `screenshot`, a path: the page is saved there as PNG, `width` CSS pixels wide, from `top` down
    to its end or `height` pixels.
    """
    chromium = find_chromium()
    if not chromium:
        raise BrowserError("chromium is not installed")
    profile = tempfile.mkdtemp(prefix="allocscope-chromium-")
    cmd_r, cmd_w = os.pipe()
    res_r, res_w = os.pipe()

    def child_fds():
        # Copies first: a pipe end may already be fd 3 or 4, and must lose its close-on-exec flag.
        commands, answers = os.dup(cmd_r), os.dup(res_w)
        os.dup2(commands, 3)
        os.dup2(answers, 4)

    argv = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--mute-audio",
            f"--user-data-dir={profile}", "--remote-debugging-pipe", "about:blank"]
    stderr = tempfile.TemporaryFile()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                            preexec_fn=child_fds, close_fds=False)
    os.close(cmd_r)
    os.close(res_w)
    pipe = _Pipe(proc, cmd_w, res_r)
    result = PageResult()
    try:
        target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout=timeout)["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": False}, session=session)
        pipe.events.clear()
        url = pathlib.Path(path).resolve().as_uri()
        navigation = pipe.send("Page.navigate", {"url": url}, session=session, timeout=timeout)
        if navigation.get("errorText"):
            raise BrowserError(f"navigation to {url} failed: {navigation['errorText']}")
        pipe.wait_for("Page.loadEventFired", timeout=timeout)
        if expression:
            evaluated = pipe.send("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                                  session=session, timeout=timeout)
            if "exceptionDetails" in evaluated:
                raise BrowserError(f"the expression failed: {evaluated['exceptionDetails']}")
            result.value = evaluated.get("result", {}).get("value")
        if screenshot:
            size = pipe.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
            shown = max(1, size["height"] - top)
            if height:
                shown = min(shown, height)
            shot = pipe.send("Page.captureScreenshot",
                             {"format": "png", "captureBeyondViewport": True,
                              "clip": {"x": 0, "y": top, "width": width, "height": shown, "scale": 1}},
                             session=session, timeout=timeout)
            with open(screenshot, "wb") as f:
                f.write(base64.b64decode(shot["data"]))
            result.screenshot = screenshot
        # Let late complaints arrive (a console error from a timer, say) before reading them.
        pipe.send("Runtime.evaluate", {"expression": "new Promise(r => setTimeout(r, 200))", "awaitPromise": True},
                  session=session)
        result.errors, result.requests = _complaints(pipe.events)
        try:
            pipe.send("Browser.close", timeout=10)
        except BrowserError:
            pass
    finally:
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        os.close(cmd_w)
        os.close(res_r)
        stderr.close()
        shutil.rmtree(profile, ignore_errors=True)
    return result

"""A tiny Chrome DevTools Protocol client over --remote-debugging-pipe (stock python3 only).

Chromium reads commands from file descriptor 3 and writes answers and events to descriptor 4,
each message JSON followed by a NUL byte. Every wait has a deadline; nothing sleeps and hopes.
"""
import base64
import json
import os
import select
import subprocess
import time


class CDPError(Exception):
    pass


class Browser:
    def __init__(self, chromium, profile_dir, log_path):
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()

        def wire_fds():
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.log = open(log_path, "wb")
        # Headless Chromium has no pointing device: `(hover: none)`, as on a touch screen. The
        # blink settings give it a mouse, as on a desktop (`Page.resize(mobile=True)` emulates touch).
        mouse = "--blink-settings=primaryHoverType=2,availableHoverTypes=2,primaryPointerType=4,availablePointerTypes=4"
        self.process = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", mouse,
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
             "--disable-dev-shm-usage", "--lang=en-US",
             "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
             "--disable-backgrounding-occluded-windows", f"--user-data-dir={profile_dir}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log, pass_fds=(3, 4), preexec_fn=wire_fds)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.out = to_chrome_w
        self.inp = from_chrome_r
        self.buffer = b""
        self.next_id = 0
        self.events = []

    def close(self):
        try:
            self.call("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()
        self.log.close()

    def _read_message(self, deadline):
        while b"\0" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("timed out waiting for the browser")
            ready, _, _ = select.select([self.inp], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise CDPError("the browser closed its pipe (crashed?)")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def call(self, method, params=None, session=None, timeout=30):
        self.next_id += 1
        request = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        data = json.dumps(request).encode() + b"\0"
        while data:
            written = os.write(self.out, data)
            data = data[written:]
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise CDPError(f"{method}: {message['error']}")
                return message.get("result", {})
            self.events.append(message)

    def wait_event(self, method, session=None, timeout=30):
        """The parameters of the next event `method` (of `session`'s page, when given), held or
        still to come."""
        deadline = time.monotonic() + timeout
        while True:
            for index, event in enumerate(self.events):
                if event.get("method") == method and (session is None or event.get("sessionId") == session):
                    return self.events.pop(index).get("params", {})
            self.events.append(self._read_message(deadline))

    def new_page(self, width, height):
        context = self.call("Target.createBrowserContext")["browserContextId"]
        target = self.call("Target.createTarget", {"url": "about:blank", "browserContextId": context})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, context, target)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.resize(width, height)
        return page


class Page:
    def __init__(self, browser, session, context, target):
        self.browser = browser
        self.session = session
        self.context = context
        self.target = target
        self.cover = None

    def grant(self, permissions, origin):
        """Grants this page's origin permissions (e.g. notifications), as a person's "Allow" in the
        browser's question would (headless Chromium asks nobody: it denies)."""
        self.browser.call("Browser.grantPermissions", {"permissions": permissions, "origin": origin, "browserContextId": self.context})

    def add_init_script(self, source):
        """Runs `source` in every document this page loads from now on, before the page's own scripts."""
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": source})

    def reload(self):
        self.call("Page.reload")

    def close(self):
        self.browser.call("Target.closeTarget", {"targetId": self.target})

    def to_background(self):
        """Puts another tab in front of this page: the page is then hidden and without focus."""
        if self.cover is None:
            self.cover = self.browser.call("Target.createTarget", {"url": "about:blank", "browserContextId": self.context})["targetId"]
        self.browser.call("Target.activateTarget", {"targetId": self.cover})

    def to_foreground(self):
        self.browser.call("Target.activateTarget", {"targetId": self.target})

    def call(self, method, params=None, timeout=30):
        return self.browser.call(method, params, session=self.session, timeout=timeout)

    def resize(self, width, height, mobile=False):
        """The page's size; `mobile` is a phone's screen, touched rather than pointed at (`(hover: none)`)."""
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
        self.call("Emulation.setTouchEmulationEnabled", {"enabled": mobile, **({"maxTouchPoints": 5} if mobile else {})})

    def color_scheme(self, scheme):
        """Emulates the system's light or dark preference (`prefers-color-scheme`)."""
        self.call("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})

    def navigate(self, url):
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression, timeout=30):
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                           timeout=timeout)
        if "exceptionDetails" in result:
            raise CDPError(f"script failed: {expression}: {result['exceptionDetails'].get('exception', {}).get('description', result['exceptionDetails'])}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression, what, timeout=20):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = self.evaluate(expression)
                if last:
                    return last
            except CDPError as error:
                last = str(error)
            time.sleep(0.1)
        raise CDPError(f"timed out after {timeout} s waiting for {what} (last value: {last!r})")

    def center(self, selector):
        box = self.wait_for(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            f" e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();"
            f" return r.width > 0 && r.height > 0 ? {{x: r.x + r.width / 2, y: r.y + r.height / 2}} : null; }})()",
            f"{selector} to be visible")
        return box["x"], box["y"]

    def hover(self, selector):
        x, y = self.center(selector)
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})

    def click(self, selector):
        x, y = self.center(selector)
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def focus(self, selector):
        self.wait_for(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false; e.focus(); return document.activeElement === e; }})()",
                      f"{selector} to take focus")

    def type(self, text):
        self.call("Input.insertText", {"text": text})

    KEYS = {
        "Enter": (13, "\r"), "Tab": (9, ""), "Escape": (27, ""), "ArrowDown": (40, ""), "ArrowUp": (38, ""), "ArrowRight": (39, ""), "ArrowLeft": (37, ""),
        "Space": (32, " "), "End": (35, ""),
    }

    def press(self, key, modifiers=0):
        code, text = self.KEYS[key]
        name = " " if key == "Space" else key
        down = {"type": "keyDown", "key": name, "code": key, "windowsVirtualKeyCode": code, "modifiers": modifiers}
        if text and modifiers == 0:
            down["text"] = text
        self.call("Input.dispatchKeyEvent", down)
        self.call("Input.dispatchKeyEvent", {"type": "keyUp", "key": name, "code": key, "windowsVirtualKeyCode": code, "modifiers": modifiers})

    def press_letter(self, letter, modifiers=0):
        code = ord(letter.upper())
        for kind in ("keyDown", "keyUp"):
            self.call("Input.dispatchKeyEvent", {"type": kind, "key": letter, "code": f"Key{letter.upper()}",
                                                 "windowsVirtualKeyCode": code, "modifiers": modifiers})

    def set_files(self, selector, paths):
        document = self.call("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        node = self.call("DOM.querySelector", {"nodeId": document, "selector": selector})["nodeId"]
        if not node:
            raise CDPError(f"no {selector} to put files in")
        self.call("DOM.setFileInputFiles", {"nodeId": node, "files": paths})

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as file:
            file.write(base64.b64decode(data))
        return path

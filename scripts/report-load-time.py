"""Time a report page in headless Chromium over the DevTools protocol.

    python report-load-time.py CHROMIUM URL [QUESTION_HASH [SCREENSHOT.png]]

Prints one JSON object: first contentful paint, the time until the case
browser is ready (data unpacked, list rendered, filters bound), a filter
change, opening a question view, and the console errors seen. All times in
ms from navigation start (the page's own clock) except `wall_ready_ms`
(wall time from the navigate command).
"""
import json, re, subprocess, sys, tempfile, time, urllib.request

import websocket  # PyPI websocket-client

chrome, url = sys.argv[1], sys.argv[2]
question = sys.argv[3] if len(sys.argv) > 3 else None
shot = sys.argv[4] if len(sys.argv) > 4 else None
profile = tempfile.mkdtemp(prefix="rp-chrome-")
proc = subprocess.Popen(
    [chrome, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
     "--disable-background-networking", "--remote-debugging-port=0",
     f"--user-data-dir={profile}", "--window-size=1400,1000", "about:blank"],
    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
port = None
for line in proc.stderr:
    m = re.search(r"ws://127\.0\.0\.1:(\d+)/", line)
    if m:
        port = int(m.group(1))
        break
if port is None:
    sys.exit("chromium did not start its DevTools server")
pages = []
for _ in range(100):
    pages = [t for t in json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json")) if t["type"] == "page"]
    if pages:
        break
    time.sleep(0.05)
ws = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], suppress_origin=True, timeout=120)
next_id = [0]
errors = []


def call(method, params=None):
    next_id[0] += 1
    mid = next_id[0]
    ws.send(json.dumps({"id": mid, "method": method, "params": params or {}}))
    while True:
        msg = json.loads(ws.recv())
        if msg.get("method") == "Runtime.exceptionThrown":
            errors.append(msg["params"]["exceptionDetails"].get("text", "exception"))
        elif msg.get("method") == "Runtime.consoleAPICalled" and msg["params"]["type"] == "error":
            errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in msg["params"]["args"]))
        elif msg.get("method") == "Log.entryAdded" and msg["params"]["entry"]["level"] == "error":
            errors.append(msg["params"]["entry"]["text"])
        if msg.get("id") == mid:
            return msg.get("result", {})


def js(expr):
    r = call("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
    return r.get("result", {}).get("value")


call("Runtime.enable")
call("Log.enable")
call("Page.enable")
t0 = time.time()
call("Page.navigate", {"url": url})
ready = None
while time.time() - t0 < 60:
    if js("document.documentElement.dataset.casesReady || ''") == "1":
        ready = (time.time() - t0) * 1000
        break
    time.sleep(0.01)
out = {
    "wall_ready_ms": round(ready) if ready else None,
    "ready_ms": js("Math.round(window.__ragprobeReady || 0)"),
    "first_contentful_paint_ms": js("Math.round((performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime || 0)"),
    "cases": js("document.getElementById('case-count').textContent"),
    "filter_ms": js("""(() => { const s = document.getElementById('f-model'); if (s.options.length < 2) return null;
        const t = performance.now(); s.value = s.options[1].value; s.dispatchEvent(new Event('change'));
        const d = performance.now() - t; s.value = ''; s.dispatchEvent(new Event('change')); return Math.round(d); })()"""),
}
if question:
    t = time.time()
    js(f"location.hash = {json.dumps(question)}")
    while time.time() - t < 30 and not js("document.documentElement.dataset.questionView || ''"):
        time.sleep(0.01)
    out["question_view_ms"] = round((time.time() - t) * 1000)
    out["question_columns"] = js("document.querySelectorAll('.qv-col').length")
    if shot:
        # The case browser section, wherever the page is scrolled.
        box = js("""(() => { const r = document.getElementById('cases').getBoundingClientRect();
            return {x: r.left + scrollX, y: r.top + scrollY, width: r.width, height: r.height}; })()""")
        import base64
        img = call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                              "clip": dict(box, scale=1)})
        with open(shot, "wb") as f:
            f.write(base64.b64decode(img["data"]))
out["console_errors"] = errors
print(json.dumps(out))
ws.close()
proc.kill()

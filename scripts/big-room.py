#!/usr/bin/env python3
"""What a person feels in a long room: fills #lobby of a fresh node with MESSAGES posts through
the control socket, then times, five times each, what the web UI and the command line do to one
message: the web API's post, edit and page of history (200 messages, as the page asks), an `author`
edit on the control socket, `parley react` given a full id and an 8-letter prefix, and `parley
edit`; then twenty `author` posts while another client reads pages of 1,000 back to back (do the
web UI's reads hold up the node's writes?). Prints one line per action with its times in ms.
Never part of the tests.

    scripts/big-room.py [--binary PARLEY] [--messages N] [--keep DIR]

The node runs with --no-discovery (it beacons nowhere), links nothing, and serves its web UI on a
free loopback port; the data directory is a temporary one (or DIR, kept, and reused when it
already holds a node: then no posts are added). Needs python3 (docs/BENCHMARKS.md, *Reproducing*).
"""
import argparse, json, os, re, shutil, socket, subprocess, sys, tempfile, threading, time, urllib.request

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".build", "release", "parley")))
    parser.add_argument("--messages", type=int, default=100_000, help="posts in the room (default 100000)")
    parser.add_argument("--keep", metavar="DIR", help="the data directory, kept (reused if it holds a node)")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        sys.exit(f"big-room: no parley binary at {args.binary}; run `make release` or pass --binary")
    if args.messages < 0:
        sys.exit("big-room: --messages must be 0 or more")
    data = args.keep or tempfile.mkdtemp(prefix="parley-big-room-")
    try:
        run(args.binary, data, args.messages)
    finally:
        if not args.keep:
            shutil.rmtree(data, ignore_errors=True)

def run(binary, data, messages):
    fresh = not os.path.exists(os.path.join(data, "identity.key"))
    if fresh:
        os.makedirs(data, exist_ok=True)
        subprocess.run([binary, "--data-dir", data, "init", "--nick", "big"], check=True, capture_output=True)
    node = subprocess.Popen(
        [binary, "--data-dir", data, "run", "--listen", "127.0.0.1:0", "--no-discovery", "--web", "127.0.0.1:0", "--log-level", "warn"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        url, token = None, None
        for line in node.stdout:  # the start line carries the web UI's address and token
            found = re.search(r"(http://127\.0\.0\.1:\d+)/\?token=([0-9a-f]+)", line)
            if found:
                url, token = found.group(1), found.group(2)
                break
        if url is None:
            sys.exit("big-room: the node printed no web address; is the binary a parley?")
        control = connect(os.path.join(data, "control.sock"))

        def request(obj):
            control.write((json.dumps(obj) + "\n").encode())
            control.flush()
            answer = json.loads(control.readline())
            if not answer.get("ok"):
                sys.exit(f"big-room: the node refused {obj['request']}: {answer.get('error')}")
            return answer

        def post(text):
            return request({"request": "author", "author": {"kind": "post", "room": "lobby", "text": text}})["author"]

        if fresh and messages:
            started, batch = time.time(), 500
            for first in range(0, messages, batch):  # pipelined: a batch of requests, then their answers
                count = min(batch, messages - first)
                for k in range(first, first + count):
                    line = {"request": "author", "author": {"kind": "post", "room": "lobby", "text": f"message {k} of the big room"}}
                    control.write((json.dumps(line) + "\n").encode())
                control.flush()
                for _ in range(count):
                    if not json.loads(control.readline()).get("ok"):
                        sys.exit("big-room: a post was refused")
                if (first + count) % 10_000 == 0 or first + count == messages:
                    print(f"{first + count}/{messages} posts ({time.time() - started:.0f} s)", file=sys.stderr)

        def web(method, path, body=None):
            request = urllib.request.Request(
                url + path, data=None if body is None else json.dumps(body).encode(), method=method,
                headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
            started = time.perf_counter()
            reply = json.loads(urllib.request.urlopen(request).read())
            return reply, (time.perf_counter() - started) * 1000

        def timed(action):
            started = time.perf_counter()
            action()
            return (time.perf_counter() - started) * 1000

        def cli(*arguments):
            subprocess.run([binary, "--data-dir", data, *arguments], check=True, capture_output=True)

        room = post("the room's id")["partition"]
        times = {name: [] for name in
                 ["web post", "web edit", "web history (200)", "control edit", "parley react ID", "parley react PREFIX", "parley edit ID"]}
        for i in range(5):
            message, ms = web("POST", f"/api/partitions/{room}/messages", {"text": f"web post {i}"})
            times["web post"].append(ms)
            times["web edit"].append(web("PATCH", f"/api/messages/{message['id']}", {"text": f"web post {i}, edited"})[1])
            times["web history (200)"].append(web("GET", f"/api/partitions/{room}/messages?limit=200")[1])
            mine = post(f"control post {i}")["id"]
            edit = {"kind": "edit", "room": "lobby", "target": mine, "text": "edited"}
            times["control edit"].append(timed(lambda: request({"request": "author", "author": edit})))
            times["parley react ID"].append(timed(lambda: cli("react", mine, "👍")))
            times["parley react PREFIX"].append(timed(lambda: cli("react", mine[:8], "🎉")))
            times["parley edit ID"].append(timed(lambda: cli("edit", mine, "edited again")))
        # Posts while another client reads pages of 1,000 back to back (tabs open on the room, or
        # "Show older messages"); the pages are read whole but not decoded here.
        stop, pages = threading.Event(), [0]
        def read_pages():
            page = urllib.request.Request(url + f"/api/partitions/{room}/messages?limit=1000", headers={"Authorization": "Bearer " + token})
            while not stop.is_set():
                urllib.request.urlopen(page).read()
                pages[0] += 1
        reader = threading.Thread(target=read_pages)
        reader.start()
        while pages[0] == 0:
            time.sleep(0.01)
        during = times["control post, pages read"] = []
        for i in range(20):
            during.append(timed(lambda: post(f"post while pages are read {i}")))
            time.sleep(0.02)
        stop.set()
        reader.join()
        print(f"a room of {messages if fresh else 'the kept'} messages, {binary}")
        for name, values in times.items():
            print(f"  {name:20} ms: " + ", ".join(f"{v:.1f}" for v in values))
    finally:
        node.terminate()
        node.wait()

def connect(path):
    for _ in range(200):  # the control socket appears once the node has started
        if os.path.exists(path):
            break
        time.sleep(0.05)
    control = socket.socket(socket.AF_UNIX)
    control.connect(path)
    return control.makefile("rwb")

if __name__ == "__main__":
    main()

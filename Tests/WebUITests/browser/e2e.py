"""End-to-end test of the web UI: two Parley nodes, a page on each, in headless Chromium.

Usage: e2e.py CHROMIUM URL_A URL_B SCREENSHOT_DIR WORK_DIR PARLEY
URL_A and URL_B are the URLs `parley run` printed (with their tokens). Both nodes were created
without a nickname, are linked to each other, and are in #lobby. PARLEY is the binary (for the
steps that pair a device and restart a node). docs-desktop.png, docs-phone.png and docs-dark.png
are the screenshots docs/screenshots/ holds.
Prints one line per step; exits 1 with the reason (and a screenshot) at the first failure, 3 when
every step passed but one that depends on a missing part of the node (named on a PENDING line).
"""
import base64
import json
import os
import signal
import struct
import subprocess
import sys
import time
import traceback
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser, CDPError  # noqa: E402

ALT = 1


def png(path, width, height, color):
    """A PNG written without any imaging library: one colour, or `color(x, y)` for each pixel."""
    if callable(color):
        raw = b"".join(b"\0" + b"".join(bytes(color(x, y)) for x in range(width)) for y in range(height))
    else:
        raw = b"".join(b"\0" + bytes(color) * width for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as file:
        file.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                   + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    return path


def js(value):
    return json.dumps(value)


def post(page, room, text, attachments=None):
    """Posts `text` in `room` through the page's node (the API, as a script would) and returns
    the new message's id."""
    body = {"text": text, **({"attachments": attachments} if attachments else {})}
    return page.evaluate(f"""api("POST", "/api/partitions/{room}/messages", {js(body)}).then((posted) => posted.id)""")


def post_seen(author, reader, room, text, attachments=None):
    """Posts as `author` and waits until `reader`'s node holds the message, so that a message
    posted next on either node comes after it."""
    message_id = post(author, room, text, attachments)
    reader.wait_for(f"api('GET', '/api/partitions/{room}/messages?limit=10').then((list) => list.some((m) => m.id === {js(message_id)}))",
                    f"{text!r} on the other node", timeout=20)
    return message_id


def test_print(x, y):
    """A photo-like picture for the docs' conversation: a lit backdrop, an orange part on a grey
    print bed."""
    if y > 150:
        return (96, 100, 108) if (x + y) % 24 else (120, 124, 132)
    if 110 <= x < 210 and 60 <= y <= 150:
        shade = 30 if x > 180 else 0
        return (236 - shade, 122 - shade // 2, 40)
    return (206 - y // 4, 218 - y // 4, 232 - y // 6)


def message(message_id):
    """A selector for the list item of the message `message_id`."""
    return f"#messages li.message[data-message={js(message_id)}]"


def keep_nodes(page, ids):
    """Remembers the page's list items of these messages, for `check_same_nodes`."""
    page.evaluate(f"window.keptNodes = Object.fromEntries({js(ids)}.map((id) => [id, document.querySelector(`#messages li[data-message=\"${{id}}\"]`)])), true")


def check_same_nodes(page, ids, what):
    """Fails unless the list items of these messages are the nodes `keep_nodes` remembered, still
    in the list: a change to another message did not draw them again."""
    redrawn = page.evaluate(f"{js(ids)}.filter((id) => !window.keptNodes[id] || !window.keptNodes[id].isConnected"
                            f" || document.querySelector(`#messages li[data-message=\"${{id}}\"]`) !== window.keptNodes[id])")
    if redrawn:
        raise RuntimeError(f"{what}: the messages around it were drawn again: {redrawn}")


# Installed in every document of both pages before the page's own script: counts the page's calls
# of Notification.requestPermission and whether each came with a user's click (transient user
# activation), then holds the browser's question until the test gives the person's answer
# (window.answerPermission()) and asks the browser's own function.
PERMISSION_SPY = """(() => {
    if (!("Notification" in window)) return;
    const original = Notification.requestPermission.bind(Notification);
    window.permissionAsks = [];
    Notification.requestPermission = (...args) => {
        window.permissionAsks.push({ afterClick: navigator.userActivation.isActive });
        return new Promise((answered) => { window.answerPermission = answered; }).then(() => original(...args));
    };
})()"""


def click_until(page, selector, condition, what, tries=3):
    """Clicks `selector` until `condition` holds: a click whose element was redrawn between
    its press and its release clicks nothing."""
    for attempt in range(tries):
        try:
            page.click(selector)
        except CDPError:
            pass  # gone already: an earlier click worked after all
        try:
            return page.wait_for(condition, what, timeout=5 if attempt < tries - 1 else 20)
        except CDPError:
            if attempt == tries - 1:
                raise


def main():
    chromium, url_a, url_b, shots, work, parley = sys.argv[1:7]
    os.makedirs(shots, exist_ok=True)
    browser = Browser(chromium, os.path.join(work, "chromium-profile"), os.path.join(work, "chromium.log"))
    pages = {}
    restarted = []  # nodes this driver started again (it stops them)
    step_name = "start"

    def step(name):
        nonlocal step_name
        step_name = name
        print(f"step: {name}", flush=True)

    def shot(page_name, name):
        path = pages[page_name].screenshot(os.path.join(shots, f"{name}.png"))
        print(f"screenshot: {path}", flush=True)

    try:
        alice = pages["alice"] = browser.new_page(1100, 760)
        bob = pages["bob"] = browser.new_page(1100, 760)
        for page in (alice, bob):
            page.add_init_script(PERMISSION_SPY)

        step("each page opens its node's URL and shows the nickname screen")
        for page, url in ((alice, url_a), (bob, url_b)):
            page.navigate(url)
            page.wait_for("document.getElementById('nick-dialog') && document.getElementById('nick-dialog').open", "the nickname screen")
        shot("alice", "01-nickname-screen")

        step("set a nickname on each page (keyboard only: type, Enter)")
        for page, nick in ((alice, "alice"), (bob, "bob")):
            page.focus("#nick-input")
            page.type(nick)
            page.press("Enter")
            page.wait_for("document.body.dataset.ready === 'true'", f"{nick}'s page to be ready")
            page.wait_for(f"document.getElementById('me-name').textContent.startsWith({js(nick + '#')})", f"{nick}'s name in the header")
        alice.wait_for("document.getElementById('chat-title').textContent === '#lobby'", "#lobby to open")

        step("a message sent on alice's page appears live on bob's")
        bob.wait_for("document.getElementById('connection').textContent === 'live'", "bob's live events")
        alice.focus("#composer-text")
        alice.type("hello from alice 👋")
        alice.press("Enter")
        alice.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'hello from alice 👋')", "the message on alice's page")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'hello from alice 👋')",
                     "alice's message on bob's page, without a reload", timeout=20)
        bob.wait_for("[...document.querySelectorAll('#messages .author')].some(e => e.textContent.startsWith('alice#'))", "alice's name on the bubble")
        shot("bob", "02-bob-sees-alice-live")

        step("a stream of messages faster than the page's refresh shows on bob's page while it lasts")
        # Alice's page posts one message every 25 ms for 4 s through the API (160 or fewer). Bob's
        # node sends his page a change for each; the page must still refresh meanwhile (a timer
        # restarted at every change showed nothing until the stream stopped).
        alice.evaluate("""(() => {
            const lobby = state.current.id, end = Date.now() + 4000;
            let k = 0;
            const tick = async () => {
                if (Date.now() > end) { window.streamLast = k - 1; return; }
                const text = `stream ${k++}`;
                setTimeout(tick, 25);
                await api("POST", `/api/partitions/${lobby}/messages`, { text }).catch(() => {});
            };
            tick();
            return true;
        })()""")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent.startsWith('stream '))",
                     "a message of the stream on bob's page before the stream ends", timeout=3)
        last = alice.wait_for("window.streamLast === undefined ? null : String(window.streamLast)", "the end of the stream", timeout=20)
        bob.wait_for(f"[...document.querySelectorAll('#messages .text')].some(e => e.textContent === {js(f'stream {last}')})",
                     "the stream's last message on bob's page")

        step("past the newest 200 messages, the pages show older ones on request")
        # More messages take #lobby to 230, past the 200 newest a page shows: alice's first one
        # (the room's oldest) drops out of view.
        alice.evaluate("""(async () => {
            const lobby = state.current.id;
            const held = (await api("GET", `/api/partitions/${lobby}/messages?limit=1000`)).length;
            for (let k = held; k < 230; k++) await api("POST", `/api/partitions/${lobby}/messages`, { text: `more ${k}` });
            window.moreDone = true;
        })(), true""")
        alice.wait_for("window.moreDone === true", "the room at 230 messages", timeout=30)
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'more 229')", "the last of them on bob's page")
        first = "[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'hello from alice 👋')"
        bob.wait_for(f"!{first}", "alice's first message out of bob's view")
        bob.evaluate("document.getElementById('messages').scrollTop = 0")
        shot("bob", "02a-show-older-messages")
        # While the stream's refreshes still land, one may move the button between the press and
        # the release of a click, which then clicks nothing: click again, as a person would.
        click_until(bob, "#show-older", first, "alice's first message back on bob's page")
        bob.wait_for("document.getElementById('show-older') === null", "no more older messages to ask for on bob's page")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'more 229')", "the newest still there")
        click_until(alice, "#show-older", first, "alice's first message back on her page")

        step("bob types; alice's page says bob is typing")
        bob.focus("#composer-text")
        bob.type("hm")
        alice.wait_for("document.getElementById('typing').textContent.startsWith('bob#')", "'bob is typing' on alice's page")
        shot("alice", "02b-bob-is-typing")
        bob.evaluate("document.getElementById('composer-text').value = ''")

        step("bob reacts to alice's message; alice sees the reaction")
        bob.click("#messages li.message .actions button[data-action=react]")
        bob.wait_for("!document.getElementById('emoji-picker').hidden && document.activeElement.closest('#emoji-picker') !== null", "the picker, focused")
        # 120 different emoji in four groups, each drawn as one glyph of the colour emoji font:
        # as wide as one glyph of Noto Color Emoji at its size (a text font's black-and-white
        # smiley, a missing glyph or a sequence drawn in pieces has another width).
        picker = json.loads(bob.evaluate("""(() => {
            const buttons = [...document.querySelectorAll('#emoji-picker .emoji-grid button')];
            const canvas = document.createElement('canvas').getContext('2d');
            const odd = buttons.filter((button) => {
                const size = getComputedStyle(button).fontSize;
                canvas.font = `${size} "Noto Color Emoji"`;
                const one = canvas.measureText('😀').width;
                const range = document.createRange();
                range.selectNodeContents(button);
                const drawn = range.getBoundingClientRect().width;
                return Math.abs(drawn - one) > 0.6 || Math.abs(canvas.measureText(button.textContent).width - one) > 0.6;
            }).map((button) => button.textContent);
            return JSON.stringify({ count: buttons.length, distinct: new Set(buttons.map((b) => b.textContent)).size,
                                    groups: document.querySelectorAll('#emoji-picker .emoji-grid').length, odd });
        })()"""))
        if picker != {"count": 120, "distinct": 120, "groups": 4, "odd": []}:
            raise RuntimeError(f"the picker should hold 120 different emoji in four groups, each one glyph of the colour font: {picker}")
        shot("bob", "02c-emoji-picker")
        bob.press("Enter")
        alice.wait_for("[...document.querySelectorAll('#messages .reactions button')].some(e => e.textContent.startsWith('😀 1'))", "bob's reaction on alice's page")
        bob.wait_for("document.getElementById('emoji-picker').hidden && document.activeElement.dataset.action === 'reaction 😀'"
                     " && document.activeElement.getAttribute('aria-label').startsWith('😀 1 on alice#')", "focus on bob's reaction, named for its message")
        bob.wait_for("document.querySelector('#messages li.message [data-action=react]').getAttribute('aria-label').startsWith(\"React to alice#\")",
                     "React named for the message it reacts to")
        bob.focus("#messages li.message [data-action=react]")
        bob.press("Enter")
        bob.wait_for("document.activeElement.closest('#emoji-picker') !== null", "the picker open from the keyboard")
        bob.press("ArrowDown")
        bob.press("ArrowRight")
        bob.wait_for("document.activeElement.textContent === '😇'", "the arrow keys moving in the picker's grid")
        bob.press("Escape")
        bob.wait_for("document.getElementById('emoji-picker').hidden && document.activeElement.dataset.action === 'react'", "Esc back on React")

        step("bob starts a conversation with alice from the new-conversation dialog (member search)")
        bob.wait_for("[...document.querySelectorAll('#people .person-name')].some(e => e.textContent.startsWith('alice#'))", "alice in bob's people list")
        bob.press_letter("n", ALT)
        bob.wait_for("document.getElementById('conversation-dialog').open", "the new-conversation dialog")
        bob.focus("#conversation-name")
        bob.type("lab night")
        bob.focus("#member-search")
        bob.type("alice")
        bob.wait_for("document.querySelectorAll('#member-results input[type=checkbox]').length === 1", "the search to find alice only")
        bob.click("#member-results input[type=checkbox]")
        shot("bob", "03-new-conversation-dialog")
        bob.click("#conversation-create")
        bob.wait_for("document.getElementById('chat-title').textContent === 'lab night'", "the conversation to open on bob's page")
        bob.focus("#composer-text")
        bob.type("only for you, alice")
        bob.press("Enter")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'only for you, alice')", "bob's private message")

        bob.click("#members-button")
        bob.wait_for("document.querySelectorAll('#members-list li').length === 2", "both members in the members dialog")
        shot("bob", "03b-members")
        bob.press("Escape")
        bob.wait_for("!document.getElementById('members-dialog').open", "the members dialog to close")

        step("alice sees the conversation with an unread badge, opens it and answers")
        alice.wait_for("[...document.querySelectorAll('#conversations button')].some(b => b.textContent.includes('lab night') && b.querySelector('.badge'))",
                       "'lab night' with an unread badge on alice's page", timeout=30)
        shot("alice", "04-alice-unread-badge")
        alice.click("#conversations button")
        alice.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'only for you, alice')", "bob's message in the conversation")
        alice.wait_for("![...document.querySelectorAll('#conversations button')].some(b => b.querySelector('.badge'))", "the badge to clear once read")
        alice.focus("#composer-text")
        alice.type("see you at eight")
        alice.press("Enter")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'see you at eight')", "alice's answer on bob's page")
        shot("bob", "05-conversation")

        step("alice edits her answer; bob sees the edit")
        alice.click("#messages li.message.mine .actions button[data-action=edit]")
        alice.wait_for("document.activeElement && document.activeElement.classList.contains('edit-box')", "the edit box")
        alice.evaluate("document.activeElement.select()")
        alice.type("see you at nine")
        alice.press("Enter")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'see you at nine')", "the edit on bob's page")
        alice.wait_for("document.activeElement.dataset.action === 'edit' && document.activeElement.closest('li.message').textContent.includes('see you at nine')",
                       "focus back on the edited message's Edit button")

        step("alice attaches an image: the page makes its thumbnail, bob's page shows it")
        picture = png(os.path.join(work, "map.png"), 640, 400, (40, 120, 200))
        alice.set_files("#attach-input", [picture])
        alice.wait_for("document.querySelectorAll('#pending .chip img').length === 1", "the thumbnail preview in the composer")
        alice.focus("#composer-text")
        alice.type("the way in")
        alice.press("Enter")
        alice.wait_for("[...document.querySelectorAll('#messages img.thumbnail')].some(i => i.complete && i.naturalWidth === 320)", "the 320 px thumbnail on alice's page")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'the way in')", "the image message on bob's page")
        # The thumbnail's content travels as a blob from alice's node to bob's.
        bob.wait_for("[...document.querySelectorAll('#messages img.thumbnail')].some(i => i.complete && i.naturalWidth === 320)",
                     "the 320 px thumbnail fetched by bob's node", timeout=30)
        shot("alice", "06-image-attachment")
        shot("bob", "06-bob-sees-the-image")

        step("alice shares a location; bob's page shows it as a map link")
        alice.click("#location-button")
        alice.wait_for("document.getElementById('location-dialog').open", "the location dialog")
        alice.focus("#location-lat")
        alice.type("52.52")
        alice.focus("#location-lon")
        alice.type("13.405")
        alice.press("Enter")
        alice.wait_for("document.querySelectorAll('#pending .chip').length === 1", "the location waiting in the composer")
        alice.focus("#composer-text")
        alice.type("meet here")
        alice.press("Enter")
        bob.wait_for("[...document.querySelectorAll('#messages a.file-link')].some(a => a.textContent.includes('52.52000, 13.40500') && a.href.includes('mlat=52.52'))",
                     "the location link on bob's page")

        step("alice uploads an avatar; bob's page shows it")
        avatar = png(os.path.join(work, "avatar.png"), 300, 300, (220, 60, 90))
        alice.press_letter("p", ALT)
        alice.wait_for("document.getElementById('profile-dialog').open", "the profile dialog")
        alice.set_files("#avatar-input", [avatar])
        alice.wait_for("(() => { const i = document.querySelector('#profile-avatar img'); return i && i.complete && i.naturalWidth > 0; })()", "the avatar in alice's profile")
        shot("alice", "07-profile-avatar")
        alice.press("Escape")
        alice_id = alice.evaluate("state.me.id")
        bob.wait_for(f"document.querySelector('#people img[data-avatar-of={js(alice_id)}]') !== null", "alice's avatar record on bob's page", timeout=30)
        bob.wait_for(f"state.people.some(p => p.id === {js(alice_id)} && p.avatar && p.avatar.hash === {js(alice.evaluate('state.me.avatar.hash'))})",
                     "the same avatar hash on bob's node")
        loaded = f"(() => {{ const i = document.querySelector('#people img[data-avatar-of={js(alice_id)}]'); return i && i.complete && i.naturalWidth > 0; }})()"
        # The picture's content is a blob: bob's node fetches it from alice's (BLOB_WANT/BLOB).
        bob.wait_for(loaded, "alice's avatar picture loaded on bob's page", timeout=30)
        shot("bob", "08-bob-sees-alice-avatar")

        step("a task on the conversation's board moves to Complete, with the keyboard only; bob sees it")
        alice.press_letter("t", ALT)
        alice.wait_for("!document.getElementById('tasks-panel').hidden", "the task board")
        alice.focus("#task-title")
        alice.type("book the van")
        alice.press("Enter")
        alice.wait_for("document.querySelectorAll('#tasks-open li.task').length === 1", "the task under Open")
        alice.focus("#tasks-open select")
        alice.press("ArrowDown")
        alice.wait_for("document.querySelectorAll('#tasks-in-progress li.task').length === 1", "the task under In progress")
        alice.focus("#tasks-in-progress select")
        alice.press("ArrowDown")
        alice.wait_for("document.querySelectorAll('#tasks-complete li.task').length === 1", "the task under Complete")
        bob.press_letter("t", ALT)
        bob.wait_for("[...document.querySelectorAll('#tasks-complete .task-title')].some(e => e.textContent === 'book the van')", "the task under Complete on bob's page")
        shot("alice", "09-task-board")
        shot("bob", "10-bob-task-board")

        step("both pages join a private room from the join form (a passphrase field); a message crosses")
        for page in (alice, bob):
            page.press_letter("t", ALT)
            page.wait_for("!document.getElementById('messages-panel').hidden", "the messages")
            page.focus("#join-name")
            page.type("vault")
            page.click("#join-private")
            page.wait_for("!document.getElementById('join-passphrase').hidden", "the passphrase field")
            page.focus("#join-passphrase")
            page.type("correct horse battery staple")
            page.press("Enter")
            page.wait_for("document.getElementById('chat-title').textContent === '#vault (private)'", "the private room to open")
            page.wait_for("document.getElementById('join-passphrase').value === '' && document.getElementById('join-passphrase').hidden", "the passphrase field cleared")
        shot("alice", "10a-private-room-joined")
        alice.focus("#composer-text")
        alice.type("the vault opens at ten")
        alice.press("Enter")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'the vault opens at ten')",
                     "alice's message in the private room on bob's page", timeout=30)
        shot("bob", "10b-private-room-message")
        bob.press_letter("t", ALT)  # back to the board, as the next step expects
        bob.wait_for("!document.getElementById('tasks-panel').hidden", "bob's task board again")
        step("bob browses the rooms, sees alice's #ops with its topic, and joins it")
        bob.click("#browse-rooms")
        bob.wait_for("document.getElementById('browse-dialog').open", "the Browse rooms dialog")
        # The directory reaches bob's node within seconds of the link: ask again until it lists #ops.
        bob.wait_for("(renderBrowse(), [...document.querySelectorAll('#browse-list li[data-room=ops]')].some(li => li.textContent.includes('night shift') && li.querySelector('button')))",
                     "#ops with its topic and a Join button in bob's directory", timeout=30)
        shot("bob", "13-browse-rooms")
        bob.click("#browse-list li[data-room=ops] button")
        bob.wait_for("document.getElementById('chat-title').textContent === '#ops'", "#ops open on bob's page")
        bob.wait_for("document.getElementById('chat-topic').textContent.includes('night shift')", "the topic under the title")
        bob.click("#tab-messages")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'ops is open')", "alice's message in #ops, fetched on join", timeout=30)
        shot("bob", "14-joined-from-the-directory")
        bob.click("#tab-tasks")

        step("a link opens safely, a right-to-left line takes its direction, a run shows its author once, Up edits the last")
        alice.evaluate("document.getElementById('tab-messages').click(), true")
        alice.focus("#composer-text")
        alice.type("see https://example.com/a?b=1.")
        alice.press("Enter")
        alice.wait_for("(() => { const a = document.querySelector('#messages .text a[href=\"https://example.com/a?b=1\"]');"
                       " return a !== null && a.rel === 'noopener noreferrer' && a.target === '_blank' && a.textContent === 'https://example.com/a?b=1'; })()",
                       "the link, without the full stop, opening in a new tab with no opener")
        alice.focus("#composer-text")
        alice.type("שלום לכולם")
        alice.press("Enter")
        alice.wait_for("[...document.querySelectorAll('#messages .text')].some(p => p.textContent === 'שלום לכולם'"
                       " && p.dir === 'auto' && getComputedStyle(p).direction === 'rtl')", "the Hebrew line right to left")
        alice.wait_for("document.querySelector('#messages li.message:last-child').classList.contains('grouped')",
                       "alice's second message in a row drawn without her name again")
        shot("alice", "14a-link-rtl-run")
        alice.focus("#composer-text")
        alice.press("ArrowUp")
        alice.wait_for("document.activeElement.classList.contains('edit-box') && document.activeElement.value === 'שלום לכולם'",
                       "Up in the empty box editing her last message")
        alice.press("Escape")
        alice.wait_for("document.querySelector('.edit-box') === null && document.activeElement.id === 'composer-text'", "the edit closed, focus back in the box")

        step("a message in a room alice is not looking at counts in her tab's title")
        title_matches = ("(() => { const total = state.rooms.concat(state.conversations).reduce((s, c) => s + c.unread, 0);"
                         " const lobby = state.rooms.find((r) => r.name === 'lobby');"
                         " return %s && document.title === (total ? `(${total}) Parley` : 'Parley')"
                         " && (document.getElementById('menu-toggle').dataset.unread || '0') === String(total); })()")
        bob.evaluate("""(async () => {
            const lobby = state.rooms.find((r) => r.name === "lobby").partition;
            await api("POST", `/api/partitions/${lobby}/messages`, { text: "lobby news while alice is away" });
        })(), true""")
        alice.wait_for(title_matches % "lobby.unread >= 1", "the unread count of every chat in alice's title", timeout=20)
        shot("alice", "14b-unread-in-title")
        lobby_button = "#rooms button[data-chat='" + alice.evaluate("state.rooms.find((r) => r.name === 'lobby').partition") + "']"
        click_until(alice, lobby_button, "document.getElementById('chat-title').textContent === '#lobby'", "#lobby open on alice's page")
        alice.wait_for(title_matches % "lobby.unread === 0", "the title down by #lobby's once alice reads it", timeout=20)

        step("a new message is drawn without redrawing the others")
        alice.evaluate("window.keptNode = [...document.querySelectorAll('#messages li.message')].pop(), true")
        bob.evaluate("""(async () => {
            const lobby = state.rooms.find((r) => r.name === "lobby").partition;
            await api("POST", `/api/partitions/${lobby}/messages`, { text: "drawn alone" });
        })(), true""")
        alice.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'drawn alone')", "bob's new message on alice's page")
        alice.wait_for("window.keptNode.isConnected && [...document.querySelectorAll('#messages li.message')].slice(-2)[0] === window.keptNode",
                       "the message before it still the same node, in place")

        step("a message deleted from its actions on alice's page goes in place on both pages; bob's edit and reaction change only their message")
        bob.click("#tab-messages")
        bob_lobby = "#rooms button[data-chat='" + bob.evaluate("state.rooms.find((r) => r.name === 'lobby').partition") + "']"
        click_until(bob, bob_lobby, "document.getElementById('chat-title').textContent === '#lobby'", "#lobby open on bob's page")
        has_text = "[...document.querySelectorAll('#messages li.message .text')].some(e => e.textContent === %s)"
        question = post(bob, "lobby", "who has the key to the store room?")
        alice.wait_for(has_text % js("who has the key to the store room?"), "bob's question on alice's page")
        alice.focus("#composer-text")
        alice.type("in the red drawer")
        alice.press("Enter")
        bob.wait_for(has_text % js("in the red drawer"), "alice's answer on bob's page")
        wrong = alice.evaluate("[...document.querySelectorAll('#messages li.message')].find(li => li.querySelector('.text')?.textContent === 'in the red drawer').dataset.message")
        checking = post(bob, "lobby", "checking…")
        alice.wait_for(has_text % js("checking…"), "bob's next message on alice's page")
        alice.focus("#composer-text")
        alice.type("no, the blue one, sorry!")
        alice.press("Enter")
        bob.wait_for(has_text % js("no, the blue one, sorry!"), "alice's correction on bob's page")
        right = alice.evaluate("[...document.querySelectorAll('#messages li.message')].find(li => li.querySelector('.text')?.textContent === 'no, the blue one, sorry!').dataset.message")
        for page in (alice, bob):
            keep_nodes(page, [question, checking, right])
        actions_shown = "(getComputedStyle(document.querySelector(%s)).opacity === '1')"
        alice.hover(message(wrong))
        alice.wait_for(actions_shown % js(message(wrong) + " .actions") + " && !" + actions_shown % js(message(question) + " .actions"),
                       "the message's actions shown while it is hovered, not the others'")
        alice.click(message(wrong) + " [data-action=delete]")
        alice.wait_for(f"document.querySelector({js(message(wrong) + ' [data-action=delete]')}).textContent === 'Really delete?'", "Delete asking again")
        alice.click(message(wrong) + " [data-action=delete]")
        deleted = f"(() => {{ const li = document.querySelector({js(message(wrong))}); return li !== null && li.classList.contains('deleted') && li.querySelector('.text').textContent === 'message deleted'; }})()"
        alice.wait_for(deleted, "'message deleted' in its place on alice's page")
        bob.wait_for(deleted, "'message deleted' in its place on bob's page", timeout=20)
        for page, name in ((alice, "alice"), (bob, "bob")):
            check_same_nodes(page, [question, checking, right], f"the deletion on {name}'s page")
        keep_nodes(alice, [question, wrong, right])
        bob.evaluate(f"api('PATCH', '/api/messages/{checking}', {{ text: 'checked the red drawer: not there' }}).then(() => true)")
        alice.wait_for(f"(() => {{ const li = document.querySelector({js(message(checking))}); return li !== null && li.querySelector('.text').textContent === 'checked the red drawer: not there'"
                       " && li.querySelector('.meta').textContent.includes('(edited)'); })()", "bob's edit in place on alice's page", timeout=20)
        check_same_nodes(alice, [question, wrong, right], "bob's edit on alice's page")
        keep_nodes(alice, [question, wrong, checking])
        bob.evaluate(f"api('POST', '/api/messages/{right}/reactions', {{ emoji: '👍', on: true }}).then(() => true)")
        alice.wait_for(f"[...document.querySelectorAll({js(message(right) + ' .reactions button')})].some(b => b.textContent === '👍 1')",
                       "bob's reaction in place on alice's page", timeout=20)
        check_same_nodes(alice, [question, wrong, checking], "bob's reaction on alice's page")
        shot("alice", "14bb-deleted-edited-reacted")

        step("a picture that loads after its message is drawn keeps alice's view on the newest message")
        # The browser holds the picture's request until the message is drawn (and the picture is
        # on alice's node), so it always loads late: 240 px taller, the list must follow it down.
        alice.evaluate("(() => { const l = document.getElementById('messages'); l.scrollTop = l.scrollHeight; })(), true")
        at_bottom = "(() => { const l = document.getElementById('messages'); return l.scrollHeight - l.scrollTop - l.clientHeight < 4; })()"
        alice.wait_for(f"document.getElementById('messages').dataset.following === 'true' && {at_bottom}", "alice's view at the bottom, following")
        alice.call("Fetch.enable", {"patterns": [{"urlPattern": "*/api/messages/*/attachments/*", "resourceType": "Image"}]})
        board = png(os.path.join(work, "whiteboard.png"), 300, 600, (250, 250, 245))
        with open(board, "rb") as file:
            board_data = base64.b64encode(file.read()).decode()
        late = post(bob, "lobby", "the whiteboard after the meeting", [{"name": "whiteboard.png", "mime": "image/png", "data": board_data}])
        while True:
            paused = browser.wait_event("Fetch.requestPaused", alice.session, timeout=30)
            if f"/api/messages/{late}/attachments/" in paused["request"]["url"]:
                break
            alice.call("Fetch.continueRequest", {"requestId": paused["requestId"]})  # another picture: not this step's
        alice.wait_for(f"(() => {{ const img = document.querySelector({js(message(late) + ' img.thumbnail')});"
                       f" if (!img || img.complete || !{at_bottom}) return false;"
                       " img.addEventListener('load', () => { const l = document.getElementById('messages');"
                       "   window.lateImage = { gap: l.scrollHeight - l.scrollTop - l.clientHeight, height: img.getBoundingClientRect().height }; });"
                       " return true; })()", "the message drawn at the bottom, its picture not loaded")
        path = "/" + paused["request"]["url"].split("/", 3)[3]
        alice.wait_for(f"fetch({js(path)}).then((r) => r.ok)", "the picture on alice's node", timeout=30)
        alice.call("Fetch.continueRequest", {"requestId": paused["requestId"]})
        alice.call("Fetch.disable")
        loaded = json.loads(alice.wait_for("window.lateImage && JSON.stringify(window.lateImage)", "the late picture loaded"))
        if loaded["height"] < 200 or loaded["gap"] >= 4:
            raise RuntimeError(f"the view did not follow the picture that loaded late (its height, the gap below the view): {loaded}")
        alice.wait_for(at_bottom, "alice's view still at the bottom")
        shot("alice", "14bc-late-picture")

        step("scrolled up, alice's view stays put and counts what came below; back down, it is read")
        lobby_unread = "state.rooms.find((r) => r.name === 'lobby').unread"
        # Start from nothing unread: the last message of the step before is read once its refresh ends.
        alice.wait_for(f"{lobby_unread} === 0", "#lobby read on alice's page", timeout=20)
        # Scrolled again until the page sees it: a message or an image drawn before the scroll
        # event was handled puts a following view back at the bottom.
        for attempt in range(5):
            alice.evaluate("document.getElementById('messages').scrollTop = 0, true")
            try:
                alice.wait_for("document.getElementById('messages').dataset.following === 'false'", "alice's view away from the bottom",
                               timeout=4 if attempt < 4 else 20)
                break
            except CDPError:
                if attempt == 4:
                    raise
        bob.evaluate("""(async () => {
            const lobby = state.rooms.find((r) => r.name === "lobby").partition;
            for (const text of ["below one", "below two"]) await api("POST", `/api/partitions/${lobby}/messages`, { text });
        })(), true""")
        alice.wait_for("!document.getElementById('new-below').hidden && document.getElementById('new-below').textContent === '↓ 2 new'",
                       "'↓ 2 new' on alice's page", timeout=20)
        alice.wait_for(f"document.getElementById('messages').scrollTop < 10 && {lobby_unread} === 2", "the view still at the top, both unread")
        shot("alice", "14c-new-below")
        alice.click("#new-below")
        alice.wait_for(f"document.getElementById('new-below').hidden && {lobby_unread} === 0", "at the bottom, read", timeout=20)

        step("the 'New messages' line marks where the unread ones begin")
        vault_button = "#rooms button[data-chat='" + alice.evaluate("state.rooms.find((r) => r.name === 'vault').partition") + "']"
        click_until(alice, vault_button, "document.getElementById('chat-title').textContent === '#vault (private)'", "#vault open on alice's page")
        bob.evaluate("""(async () => {
            const lobby = state.rooms.find((r) => r.name === "lobby").partition;
            await api("POST", `/api/partitions/${lobby}/messages`, { text: "after the line" });
        })(), true""")
        alice.wait_for(f"{lobby_unread} === 1", "one unread in #lobby on alice's page", timeout=20)
        click_until(alice, lobby_button, "document.getElementById('chat-title').textContent === '#lobby'", "#lobby open on alice's page")
        alice.wait_for("(() => { const line = document.querySelector('#messages .unread-divider');"
                       " return line !== null && line.nextElementSibling.querySelector('.text').textContent === 'after the line'; })()",
                       "the line right before bob's unread message")
        shot("alice", "14d-new-messages-line")

        step("a message that mentions alice is marked on her page")
        bob.evaluate("""(async () => {
            const lobby = state.rooms.find((r) => r.name === "lobby").partition;
            await api("POST", `/api/partitions/${lobby}/messages`, { text: "@ALICE look here, not @alicexyz" });
        })(), true""")
        alice.wait_for("(() => { const marks = [...document.querySelectorAll('#messages li.mentions-me mark.mention')];"
                       " return marks.length === 1 && marks[0].textContent === '@ALICE'; })()", "the mention marked, once", timeout=20)
        shot("alice", "14e-mention")

        step("bob types @al: the page suggests alice, Tab puts her name in")
        click_until(bob, bob_lobby, "document.getElementById('chat-title').textContent === '#lobby'", "#lobby open on bob's page")
        bob.focus("#composer-text")
        bob.type("thanks @Al")
        bob.wait_for("(() => { const options = [...document.querySelectorAll('#mention-suggestions li[role=option]')];"
                     " return !document.getElementById('mention-suggestions').hidden && options.length === 1 && options[0].textContent.startsWith('alice#')"
                     " && document.getElementById('composer-text').getAttribute('aria-activedescendant') === options[0].id; })()", "alice suggested")
        shot("bob", "14f-mention-suggestions")
        bob.press("Tab")
        bob.wait_for("document.getElementById('composer-text').value === 'thanks @alice ' && document.getElementById('mention-suggestions').hidden",
                     "the nickname put in, the list closed")
        bob.evaluate("document.getElementById('composer-text').value = ''")

        step("notifications: offered on both pages; bob's kept 'Not now' is not offered or asked again after a reload")
        for page in (alice, bob):
            page.wait_for("!document.getElementById('notify-offer').hidden", "the offer to turn notifications on")
            if page.evaluate("window.permissionAsks.length") != 0:
                raise RuntimeError("the page asked for the permission before anyone clicked its offer")
        bob.click("#notify-later")
        bob.wait_for("document.getElementById('notify-offer').hidden", "the offer put off on bob's page")
        bob.reload()
        bob.wait_for("document.body.dataset.ready === 'true' && document.getElementById('chat-title').textContent === '#lobby'", "bob's page loaded again")
        put_off = bob.evaluate("JSON.stringify([document.getElementById('notify-offer').hidden, window.permissionAsks.length, Notification.permission])")
        if json.loads(put_off) != [True, 0, "default"]:
            raise RuntimeError(f"after 'Not now' and a reload, bob's page should neither offer nor ask (offer hidden, asks, permission): {put_off}")

        step("alice turns notifications on: the page asks the browser once, from her click")
        origin = "/".join(url_a.split("/")[:3])
        alice.click("#notify-on")
        alice.wait_for("window.permissionAsks.length === 1", "the page asking the browser for the permission")
        if not alice.evaluate("window.permissionAsks[0].afterClick"):
            raise RuntimeError("the page asked for the permission without a user's click")
        alice.grant(["notifications"], origin)  # the person's "Allow" in the browser's question
        alice.evaluate("window.answerPermission(), true")
        alice.wait_for("(Notification.permission === 'granted' && document.getElementById('notify-offer').hidden) || window.permissionAsks.length > 1",
                       "notifications on, the offer gone")
        if alice.evaluate("window.permissionAsks.length") != 1:
            raise RuntimeError(f"one click asked the browser {alice.evaluate('window.permissionAsks.length')} times")

        step("alice's page in the background shows notifications for a mention and a private message, not for a muted room")
        ops_button = "#rooms button[data-chat='" + alice.evaluate("state.rooms.find((r) => r.name === 'ops').partition") + "']"
        click_until(alice, ops_button, "document.getElementById('chat-title').textContent === '#ops'", "#ops open on alice's page")
        alice.click("#mute-chat")
        alice.wait_for(f"document.getElementById('mute-chat').getAttribute('aria-pressed') === 'true' && document.querySelector({js(ops_button)} + ' .muted-mark') !== null",
                       "#ops muted, marked in the list")
        click_until(alice, lobby_button, "document.getElementById('chat-title').textContent === '#lobby'", "#lobby open on alice's page")
        alice.to_background()
        alice.wait_for("document.visibilityState === 'hidden'", "alice's page hidden behind another tab")
        bob.evaluate("""(async () => {
            const ops = state.rooms.find((r) => r.name === "ops").partition;
            await api("POST", `/api/partitions/${ops}/messages`, { text: "@alice muted room news" });
            const lobby = state.rooms.find((r) => r.name === "lobby").partition;
            await api("POST", `/api/partitions/${lobby}/messages`, { text: "@alice the van is here" });
            const talk = state.conversations.find((c) => c.name === "lab night").id;
            await api("POST", `/api/partitions/${talk}/messages`, { text: "are you coming?" });
        })(), true""")
        alice.wait_for("notifications.shown.some(n => n.title.startsWith('bob#') && n.title.endsWith('mentioned you in #lobby') && n.body === '@alice the van is here')"
                       " && notifications.shown.some(n => n.title.endsWith('in lab night') && n.body === 'are you coming?')",
                       "both notifications shown", timeout=30)
        alice.wait_for("state.rooms.find((r) => r.name === 'ops').unread >= 1", "the muted room's message counted as unread")
        if alice.evaluate("window.permissionAsks.length") != 1:
            raise RuntimeError(f"the page asked for the permission again: {alice.evaluate('window.permissionAsks.length')} times in all")
        if alice.evaluate("notifications.shown.some(n => n.title.includes('#ops'))"):
            raise RuntimeError("a muted room showed a notification")
        alice.wait_for("(() => { const total = state.rooms.concat(state.conversations).filter(c => !c.muted).reduce((s, c) => s + c.unread, 0);"
                       " return document.title === `(${total}) Parley`; })()", "the title counting the chats that are not muted")
        alice.to_foreground()
        alice.wait_for("document.visibilityState === 'visible'", "alice's page in front again")
        click_until(alice, ops_button, "document.getElementById('chat-title').textContent === '#ops'", "#ops open on alice's page")
        alice.click("#mute-chat")
        alice.wait_for(f"document.getElementById('mute-chat').getAttribute('aria-pressed') === 'false' && document.querySelector({js(ops_button)} + ' .muted-mark') === null",
                       "#ops unmuted")

        step("a person's click opens the conversation with them, or starts one named after the two")
        bob_id = bob.evaluate("state.me.id")
        alice.click(f"#people button[data-person={js(bob_id)}]")
        alice.wait_for("document.getElementById('chat-title').textContent === 'lab night'", "alice's existing conversation with bob")
        click_until(bob, "#conversations button", "document.getElementById('chat-title').textContent === 'lab night'", "'lab night' open on bob's page")
        bob.click("#leave-chat")
        bob.wait_for("document.getElementById('leave-dialog').open && document.activeElement.id === 'leave-cancel'", "the leave question, Stay focused")
        shot("bob", "14g-leave-question")
        bob.click("#leave-confirm")
        bob.wait_for("!state.conversations.some(c => c.name === 'lab night')", "bob out of 'lab night'")
        alice.wait_for(f"state.conversations.some(c => c.name === 'lab night' && !c.members.includes({js(bob_id)}))", "alice seeing bob leave", timeout=30)
        alice.click(f"#people button[data-person={js(bob_id)}]")
        alice.wait_for("document.getElementById('chat-title').textContent === 'alice & bob'", "a new conversation named after the two")
        bob.wait_for("state.conversations.some(c => c.name === 'alice & bob')", "the new conversation on bob's page", timeout=30)

        step("leaving a room is asked first and can be undone")
        click_until(bob, "#rooms button[data-chat='" + bob.evaluate("state.rooms.find((r) => r.name === 'ops').partition") + "']",
                    "document.getElementById('chat-title').textContent === '#ops'", "#ops open on bob's page")
        bob.click("#leave-chat")
        bob.wait_for("document.getElementById('leave-dialog').open", "the leave question")
        bob.click("#leave-cancel")
        bob.wait_for("!document.getElementById('leave-dialog').open && state.rooms.some(r => r.name === 'ops')", "Stay keeps the room")
        bob.click("#leave-chat")
        bob.click("#leave-confirm")
        bob.wait_for("!state.rooms.some(r => r.name === 'ops') && !document.getElementById('undo-toast').hidden && document.activeElement.id === 'undo-button'",
                     "out of #ops, with Undo focused")
        shot("bob", "14h-undo-leave")
        bob.press("Enter")
        bob.wait_for("document.getElementById('chat-title').textContent === '#ops' && document.getElementById('undo-toast').hidden", "back in #ops")
        bob.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'ops is open')", "its messages still there")

        step("focus rings, control edges and presence read without colour alone, in light and dark")
        click_until(alice, lobby_button, "document.querySelector('#messages li.message [data-action=react]') !== null", "#lobby's messages on alice's page")
        contrast = r"""(() => {
            const rgb = (text) => (text.match(/[\d.]+/g) || []).slice(0, 4).map(Number);
            const lum = ([r, g, b]) => [r, g, b].map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
                .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
            const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
            const behind = (node) => { for (let n = node.parentElement; n; n = n.parentElement) {
                const c = rgb(getComputedStyle(n).backgroundColor); if (c.length === 3 || c[3] > 0) return c; } return [255, 255, 255]; };
            const hex = (name) => { const h = getComputedStyle(document.documentElement).getPropertyValue(name).trim().slice(1);
                return [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16)); };
            const low = [];
            // Every control's edge and the focus ring against what is behind the control.
            for (const selector of ["#composer-text", "#join-name", "#browse-rooms", "#leave-chat", "#mute-chat", "#messages li.message [data-action=react]"]) {
                const node = document.querySelector(selector);
                const edge = ratio(rgb(getComputedStyle(node).borderTopColor), behind(node));
                if (edge < 3) low.push(`${selector} edge ${edge.toFixed(2)}`);
                const ring = ratio(hex("--focus"), behind(node));
                if (ring < 3) low.push(`${selector} focus ring ${ring.toFixed(2)}`);
            }
            // The ring as drawn: a text box always shows it when focused.
            const box = document.getElementById("composer-text");
            box.focus();
            const drawn = getComputedStyle(box);
            if (drawn.outlineStyle === "none" || ratio(rgb(drawn.outlineColor), behind(box)) < 3) low.push(`the drawn ring ${drawn.outlineColor}`);
            box.blur();
            return low.join("; ") || "ok";
        })()"""
        for scheme in ("light", "dark"):
            alice.color_scheme(scheme)
            found = alice.evaluate(contrast)
            if found != "ok":
                raise RuntimeError(f"contrast under 3:1 in {scheme} mode: {found}")
        alice.color_scheme("light")
        alice.wait_for(f"(() => {{ const dot = document.querySelector('#people button[data-person=\"{bob_id}\"] .dot');"
                       " return dot.getAttribute('aria-label') === 'online' && dot.title === 'online'"
                       " && getComputedStyle(dot).backgroundColor !== 'rgba(0, 0, 0, 0)'; })()", "bob's presence said in words, drawn as a filled dot")

        step("alice pairs a new device from her page: the code and its QR code, then the device in her list")
        alice.click("#profile-button")
        alice.wait_for("document.getElementById('profile-dialog').open", "the profile dialog")
        alice.click("#devices-button")
        alice.wait_for("document.getElementById('devices-dialog').open && document.querySelectorAll('#devices-list li').length === 1",
                       "the devices dialog with this device")
        alice.click("#pair-start")
        command = alice.wait_for("document.getElementById('pair-command').textContent || null", "the pairing command")
        alice.wait_for("(() => { const qr = document.getElementById('pair-qr'); return !qr.hidden && qr.complete && qr.naturalWidth > 0; })()",
                       "the QR code drawn")
        shot("alice", "15-pairing-code")
        invitation = command.split(" ")[-1]
        guest = subprocess.run([parley, "--data-dir", os.path.join(work, "phone"), "init", "--pair", invitation, "--name", "phone"],
                               capture_output=True, text=True, timeout=60, env={"HOME": work, "PATH": "/usr/bin:/bin"})
        if guest.returncode != 0:
            raise RuntimeError(f"init --pair {invitation} failed: {guest.stdout} {guest.stderr}")
        alice.wait_for("document.getElementById('pair-status').textContent.startsWith('Paired phone')", "the page to say the phone paired")
        alice.wait_for("[...document.querySelectorAll('#devices-list li')].some(li => li.textContent.includes('phone'))", "the phone in the list")
        shot("alice", "16-paired")
        step("alice revokes the phone from the same list")
        alice.evaluate("window.confirm = () => true")
        alice.click("#devices-list li:last-child button")
        alice.wait_for("[...document.querySelectorAll('#devices-list li')].some(li => li.textContent.includes('phone') && li.textContent.includes('revoked'))",
                       "the phone marked revoked")
        alice.press("Escape")

        step("the page at phone width")
        bob.resize(390, 800, mobile=True)
        if bob.evaluate("document.getElementById('messages-panel').hidden"):
            bob.press_letter("t", ALT)
        bob.wait_for("!document.getElementById('messages-panel').hidden", "the messages")
        bob.wait_for("getComputedStyle(document.getElementById('menu-toggle')).display !== 'none'", "the menu button at phone width")
        shot("bob", "11-phone-width")
        bob.click("#menu-toggle")
        bob.wait_for("document.getElementById('sidebar').getBoundingClientRect().left >= 0", "the sidebar to slide in")
        shot("bob", "12-phone-sidebar")

        step("the page in dark mode follows the system's preference")
        alice.color_scheme("dark")
        alice.wait_for("getComputedStyle(document.body).backgroundColor === 'rgb(23, 25, 28)'", "the dark background")
        shot("alice", "19-dark")
        alice.color_scheme("light")

        step("the screenshots of docs/: a room's conversation on a fresh page, on the desktop (actions on hover), in dark mode, at phone width")
        for page in (alice, bob):
            page.evaluate("api('POST', '/api/rooms', { name: 'lab' }).then(() => true)")
        post_seen(bob, alice, "lab", "Morning! The 3D printer is back from repair 🎉")
        post_seen(alice, bob, "lab", "Finally! Does it still skip layers?")
        photo = png(os.path.join(work, "test-print.png"), 320, 200, test_print)
        with open(photo, "rb") as file:
            photo_data = base64.b64encode(file.read()).decode()
        post_seen(bob, alice, "lab", "Not in the test print:", [{"name": "test-print.png", "mime": "image/png", "data": photo_data}])
        notes = post_seen(bob, alice, "lab", "Calibration notes: https://wiki.example.org/printer")
        post_seen(alice, bob, "lab", "Looks clean 👏 @bob could you print the hinges for the enclosure tonight?")
        post_seen(bob, alice, "lab", "@alice sure, send me the STL and I'll start it after lunch")
        thanks = post_seen(alice, bob, "lab", "Sent! Thanks 👍")
        bob.evaluate(f"api('POST', '/api/messages/{thanks}/reactions', {{ emoji: '❤️', on: true }}).then(() => true)")
        alice.evaluate(f"api('POST', '/api/messages/{notes}/reactions', {{ emoji: '🚀', on: true }}).then(() => true)")
        # A page that has not answered the notification offer yet, as on a first visit.
        docs = pages["docs"] = browser.new_page(1100, 760)
        docs.navigate(url_a)
        docs.wait_for("document.body.dataset.ready === 'true' && !document.getElementById('notify-offer').hidden", "the fresh page, offering notifications")
        lab_button = "#rooms button[data-chat='" + docs.evaluate("state.rooms.find((r) => r.name === 'lab').partition") + "']"
        click_until(docs, lab_button, "document.getElementById('chat-title').textContent === '#lab'", "#lab open")
        docs.wait_for(f"document.querySelectorAll({js(message(thanks) + ' .reactions button')}).length === 1"
                      f" && document.querySelectorAll({js(message(notes) + ' .reactions button')}).length === 1", "both reactions")
        docs.wait_for("[...document.querySelectorAll('#messages img')].every((i) => i.complete && i.naturalWidth > 0)"
                      " && document.querySelector('#messages img.thumbnail') !== null", "the photo and the avatars loaded", timeout=30)
        docs.hover(message(thanks) + " .bubble")  # the newest: the view stays at the bottom
        docs.wait_for(actions_shown % js(message(thanks) + " .actions"), "the message's actions on hover")
        shot("docs", "docs-desktop")
        docs.color_scheme("dark")
        docs.wait_for("getComputedStyle(document.body).backgroundColor === 'rgb(23, 25, 28)'", "the dark background")
        shot("docs", "docs-dark")
        docs.color_scheme("light")
        docs.resize(390, 800, mobile=True)
        docs.wait_for("getComputedStyle(document.getElementById('menu-toggle')).display !== 'none'", "the menu button at phone width")
        docs.evaluate("(() => { const l = document.getElementById('messages'); l.scrollTop = l.scrollHeight; })(), true")
        shot("docs", "docs-phone")
        docs.close()
        del pages["docs"]
        step("alice's node restarts under her open page: the page says so, comes back by itself, and posts again")
        alice_dir = os.path.join(work, "alice")
        with open(os.path.join(alice_dir, "node.lock")) as lock:
            pid = int(lock.read().strip())
        os.kill(pid, signal.SIGTERM)
        deadline = time.time() + 15
        while os.path.exists(f"/proc/{pid}") and time.time() < deadline:
            time.sleep(0.05)
        alice.wait_for("document.getElementById('connection').textContent.startsWith('Parley is not running on this computer')",
                       "the page to say the node is not running", timeout=20)
        shot("alice", "17-node-down")
        port = url_a.split(":")[2].split("/")[0]
        log = open(os.path.join(work, "alice-restart.log"), "w")
        restarted.append(subprocess.Popen(
            [parley, "--data-dir", alice_dir, "run", "--listen", "127.0.0.1:0", "--web", f"127.0.0.1:{port}", "--no-discovery"],
            stdout=log, stderr=log, env={"HOME": work, "PATH": "/usr/bin:/bin"}))
        alice.wait_for("document.getElementById('connection').textContent === 'live'", "the page live again, with no new link", timeout=30)
        alice.click("#tab-messages")
        alice.focus("#composer-text")
        alice.type("back after a restart")
        alice.press("Enter")
        alice.wait_for("[...document.querySelectorAll('#messages .text')].some(e => e.textContent === 'back after a restart')",
                       "the message posted after the restart")
        shot("alice", "18-back-after-restart")

        print("ok: every step passed", flush=True)
        return 0
    except Exception as error:  # noqa: BLE001 - report any failure with a screenshot
        print(f"FAILED at step '{step_name}': {error}", flush=True)
        traceback.print_exc(file=sys.stdout)
        for name, page in pages.items():
            try:
                path = page.screenshot(os.path.join(shots, f"failure-{name}.png"))
                print(f"screenshot: {path}", flush=True)
            except Exception:
                pass
        return 1
    finally:
        for process in restarted:
            process.terminate()
            process.wait(timeout=10)
        browser.close()


if __name__ == "__main__":
    sys.exit(main())

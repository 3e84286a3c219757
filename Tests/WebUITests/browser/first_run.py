"""A first run in the browser: `parley run` on an empty data directory made a new identity; its page
asks for a nickname, then opens #lobby, where the newcomer posts.

Usage: first_run.py CHROMIUM URL SCREENSHOT_DIR WORK_DIR
URL is the one `parley run` printed (with its token). Prints one line per step; exits 1 with the
reason (and a screenshot) at the first failure.
"""
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cdp import Browser  # noqa: E402


def main():
    chromium, url, shots, work = sys.argv[1:5]
    os.makedirs(shots, exist_ok=True)
    browser = Browser(chromium, os.path.join(work, "chromium-profile"), os.path.join(work, "chromium.log"))
    page = None
    step_name = "start"

    def step(name):
        nonlocal step_name
        step_name = name
        print(f"step: {name}", flush=True)

    def shot(name):
        print(f"screenshot: {page.screenshot(os.path.join(shots, f'{name}.png'))}", flush=True)

    try:
        page = browser.new_page(1100, 760)
        step("the link opens the nickname screen, and nothing else yet")
        page.navigate(url)
        page.wait_for("document.getElementById('nick-dialog') && document.getElementById('nick-dialog').open"
                      " && document.activeElement.id === 'nick-input'", "the nickname screen, its box focused")
        if page.evaluate("document.body.dataset.ready === 'true' || document.querySelectorAll('#rooms li').length > 0"):
            raise RuntimeError("the page showed the chat before the newcomer had a nickname")
        shot("first-run-1-nickname")

        step("a nickname picked with the keyboard: the page names her and opens #lobby")
        page.type("carol")
        page.press("Enter")
        page.wait_for("document.body.dataset.ready === 'true' && !document.getElementById('nick-dialog').open", "the page ready")
        page.wait_for("document.getElementById('me-name').textContent.startsWith('carol#')", "carol's name in the header")
        page.wait_for("document.getElementById('chat-title').textContent === '#lobby'", "#lobby open")

        step("carol posts in #lobby")
        page.focus("#composer-text")
        page.type("hello, I'm new here")
        page.press("Enter")
        page.wait_for("[...document.querySelectorAll('#messages li.message.mine')].some(li => li.querySelector('.text').textContent === \"hello, I'm new here\""
                      " && li.querySelector('.author').textContent.startsWith('carol#'))", "her message in #lobby, under her name")
        shot("first-run-2-posted")
        print("ok: every step passed", flush=True)
        return 0
    except Exception as error:  # noqa: BLE001 - report any failure with a screenshot
        print(f"FAILED at step '{step_name}': {error}", flush=True)
        traceback.print_exc(file=sys.stdout)
        if page is not None:
            try:
                shot("first-run-failure")
            except Exception:
                pass
        return 1
    finally:
        browser.close()


if __name__ == "__main__":
    sys.exit(main())

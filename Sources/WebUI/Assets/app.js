// Parley's page: plain JavaScript, no framework, no build step.
// Every string that came from a peer is put in the page with textContent, never as HTML.
"use strict";

const state = {
  me: null,
  rooms: [],
  conversations: [],
  people: [],
  current: null,        // { id, kind: "room" | "conversation", name }
  view: "messages",
  messages: [],         // the window: a run of at most WINDOW consecutive messages of the chat, oldest first
  hasOlder: false,      // whether the chat holds messages before the window
  hasNewer: false,      // whether it holds messages after it (the window does not reach the newest)
  newestKnown: null,    // the id of the newest message this page has heard of, in the window or not
  othersSinceOpen: 0,   // others' messages that arrived since the chat was opened (for the first unread)
  tasks: [],
  pending: [],          // files to send: { name, mime, data, thumb? }
  location: null,
  typing: new Map(),    // user -> { nick, until }
  editing: null,        // message id being edited
  unreadFrom: null,     // the first message that was unread when the chat was opened ("New messages" line)
  newBelow: 0,          // others' messages that arrived while the view was scrolled up ("↓ N new")
};

const $ = (id) => document.getElementById(id);

// ---------- the API ----------

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// What the page says when the node does not answer at all, and when it answers "who are you".
const NODE_DOWN = "Parley is not running on this computer — start it with `parley run`; this page reconnects by itself.";
const SIGNED_OUT = "Not signed in: run `parley web login` and open the link it prints.";

async function api(method, path, body) {
  const options = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch (_) {
    throw new ApiError(0, NODE_DOWN);  // no answer at all: the node is down (never "Failed to fetch")
  }
  if (response.status === 204) return null;
  let data = null;
  try { data = await response.json(); } catch (_) { data = null; }
  if (!response.ok) {
    const message = data && typeof data.error === "string" ? data.error : `HTTP ${response.status}`;
    throw new ApiError(response.status, message);
  }
  return data;
}

// Panic wipe (POST /api/wipe): asked twice in plain words; the keys are gone when the answer
// comes, and the node stops right after, so the page says so and stops talking to it.
async function wipeNode() {
  const question = "Wipe this node? Its identity and every message and file on this device are destroyed for good, and the node stops. Type wipe to confirm.";
  if ((window.prompt(question) || "").trim() !== "wipe") return;
  try {
    await api("POST", "/api/wipe", { confirm: "wipe" });
  } catch (error) {
    if (error instanceof ApiError) { showError(error); return; }
  }
  document.body.textContent = "This node was wiped: its keys and data are gone, and it has stopped.";
}

function showError(error) {
  const toast = $("toast");
  toast.textContent = error instanceof Error ? error.message : String(error);
  toast.hidden = false;
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => { toast.hidden = true; }, 6000);
}

// ---------- small DOM helpers ----------

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function personLabel(id, nick) {
  const short = id ? id.slice(0, 6) : "";
  return nick ? `${nick}#${short}` : `#${short}`;
}

function nickOf(id) {
  const person = state.people.find((p) => p.id === id);
  return person && person.nick ? person.nick : null;
}

function avatarElement(person, large) {
  const span = el("span", { class: large ? "avatar large" : "avatar", "aria-hidden": "true" });
  const initials = (person && (person.nick || person.display_name) || "?").slice(0, 2).toUpperCase();
  if (person && person.avatar) {
    // Until the picture's content reaches this node, the initials stand in for it.
    const img = el("img", { alt: "", src: `/api/people/${person.id}/avatar?v=${person.avatar.hash.slice(0, 12)}`, "data-avatar-of": person.id });
    img.addEventListener("error", () => { img.hidden = true; span.append(initials); });
    span.append(img);
  } else {
    span.textContent = initials;
  }
  return span;
}

function timeText(iso) {
  const date = new Date(iso);
  const now = new Date();
  const clock = date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return date.toDateString() === now.toDateString() ? clock : `${date.toLocaleDateString()} ${clock}`;
}

// Live updates re-render lists; a keyboard user must not lose their place. The focused control
// is found again by its data attributes inside the re-rendered message or task.
function focusKey() {
  const active = document.activeElement;
  if (!active || active === document.body) return null;
  const host = active.closest("[data-message], [data-task]");
  const hostSelector = host ? (host.dataset.message ? `[data-message="${host.dataset.message}"]` : `[data-task="${host.dataset.task}"]`) : "";
  for (const name of ["data-chat", "data-person", "data-task-status", "data-action", "data-member"]) {
    if (active.hasAttribute(name)) return `${hostSelector} [${name}="${CSS.escape(active.getAttribute(name))}"]`.trim();
  }
  return null;
}

function restoreFocus(key) {
  if (!key || (document.activeElement && document.activeElement !== document.body)) return;
  const target = document.querySelector(key);
  if (target) target.focus();
}

function announce(text) {
  $("announce").textContent = text;
}

// ---------- loading ----------

async function loadMe() {
  state.me = await api("GET", "/api/me");
  $("me-name").textContent = personLabel(state.me.id, state.me.nick);
  const slot = $("me-avatar");
  slot.replaceWith(Object.assign(avatarElement(state.me), { id: "me-avatar" }));
}

async function loadSidebar() {
  const [rooms, conversations, people] = await Promise.all([
    api("GET", "/api/rooms"), api("GET", "/api/conversations"), api("GET", "/api/people"),
  ]);
  state.rooms = rooms; state.conversations = conversations; state.people = people;
  renderSidebar();
  notifyArrivals().catch(() => {});  // a notification that cannot be made is no reason to stop
}

// Unread messages in every chat but the muted ones, where they show outside the list: the tab's title "(3) Parley"
// (seen from other tabs) and the phone-width menu button, which hides the list.
function showUnreadTotal(total) {
  document.title = total > 0 ? `(${total}) Parley` : "Parley";
  const toggle = $("menu-toggle");
  toggle.dataset.unread = total > 0 ? String(total) : "";
  toggle.title = total > 0 ? `Rooms and people: ${total} unread (Alt+M)` : "Rooms and people (Alt+M)";
}

function chats() {
  return [
    ...state.rooms.map((r) => ({ id: r.partition, kind: "room", name: r.private ? `#${r.name} (private)` : `#${r.name}`, room: r.name, private: r.private, unread: r.unread, muted: r.muted, topic: r.topic || "", retention: r.retention, history: r.history })),
    ...state.conversations.map((c) => ({ id: c.id, kind: "conversation", name: c.name || "(name not received yet)", unread: c.unread, muted: c.muted, members: c.members, creator: c.creator })),
  ];
}

function renderSidebar() {
  const focused = focusKey();
  const renderList = (list, items) => {
    list.replaceChildren(...items.map((chat) => {
      const current = state.current && state.current.id === chat.id;
      const button = el("button", {
        type: "button", "aria-current": current ? "true" : "false", "data-chat": chat.id,
        onclick: () => openChat(chat.id),
      }, el("span", { class: "chat-name", text: chat.name }));
      if (chat.muted) button.append(el("span", { class: "muted-mark", role: "img", "aria-label": "muted", title: "muted: no notifications", text: "🔕" }));
      if (chat.unread > 0) button.append(el("span", { class: chat.muted ? "badge quiet" : "badge", text: String(chat.unread), "aria-label": `${chat.unread} unread` }));
      return el("li", {}, button);
    }));
  };
  const all = chats();
  showUnreadTotal(all.reduce((sum, chat) => sum + (chat.unread > 0 && !chat.muted ? chat.unread : 0), 0));
  renderList($("rooms"), all.filter((c) => c.kind === "room"));
  renderList($("conversations"), all.filter((c) => c.kind === "conversation"));
  if (state.conversations.length === 0) $("conversations").append(el("li", { class: "muted", text: "none yet" }));

  $("people").replaceChildren(...state.people.map((person) => {
    const label = personLabel(person.id, person.nick) + (person.me ? " (you)" : "");
    const button = el("button", {
      type: "button", "data-person": person.id, title: person.me ? "your profile" : "your conversation with them (started if there is none)",
      onclick: () => (person.me ? openProfile() : openConversationWith(person)).catch(showError),
    },
    el("span", { class: `dot ${person.presence}`, role: "img", "aria-label": person.presence, title: person.presence }),
    avatarElement(person),
    el("span", { class: "person-name", text: label }));
    if (person.forks > 0) {
      const where = person.forks === 1 ? "one room or conversation" : `${person.forks} rooms or conversations`;
      const why = `${person.me ? "Your key" : "Their key"} signed two different changes at one position in ${where} `
        + "(one identity.key used on two machines): the later changes there are left out everywhere. `parley doctor` says more.";
      button.append(el("span", { class: "fork-mark", role: "img", title: why, "aria-label": `forked: ${why}`, text: "⚠" }));
    }
    if (person.status) button.append(el("span", { class: "muted", text: person.status }));
    return el("li", {}, button);
  }));

  if (state.current) {
    const chat = all.find((c) => c.id === state.current.id);
    if (chat) { state.current = chat; $("chat-title").textContent = chat.name; showTopic(chat); showMuted(chat); }
  }
  restoreFocus(focused);
}

async function openChat(id) {
  const chat = chats().find((c) => c.id === id);
  if (!chat) return;
  state.current = chat;
  state.editing = null;
  state.unreadFrom = null;
  state.unreadAtOpen = chat.unread;
  state.othersSinceOpen = 0;
  state.newBelow = 0;
  state.typing.clear();
  localStorage.setItem("parley.chat", id);
  $("chat-title").textContent = chat.name;
  showTopic(chat);
  $("leave-chat").textContent = chat.kind === "room" ? "Leave room" : "Leave conversation";
  showMuted(chat);
  $("members-button").hidden = chat.kind !== "conversation";
  closeSidebar();
  renderSidebar();
  await refreshCurrent(true);
}

// `scroll`: show the newest messages and go there (a chat just opened, a message sent).
// Otherwise apply what changed to what is shown (`applyChanges`).
async function refreshCurrent(scroll) {
  if (!state.current) return;
  const id = state.current.id;
  if (state.view === "messages") {
    await inWindowQueue(() => scroll ? showNewest(id) : applyChanges(id));
  } else {
    state.tasks = await api("GET", `/api/partitions/${id}/tasks`);
    renderTasks();
  }
  renderTyping();
}

// ---------- messages ----------

// The "New messages" line goes before the first of the others' messages that were unread when
// the chat was opened, and stays there until another chat is opened. It is found by counting
// them back from the newest: in the window when it reaches that far, else page by page
// (`jumpToFirstUnread`).
function placeUnreadLine() {
  state.unreadFrom = firstUnreadIn(state.messages, unreadToFind()).found;
}

// How many of the others' messages, counted back from the newest, reach the first unread one.
function unreadToFind() {
  return state.unreadAtOpen > 0 ? state.unreadAtOpen + state.othersSinceOpen : 0;
}

// Counts `left` of the others' messages back from the end of `messages`: the index and id of
// the one where the count ends, or how many are still to count before them.
function firstUnreadIn(messages, left) {
  for (let index = messages.length - 1; index >= 0 && left > 0; index--) {
    const message = messages[index];
    if (message.deleted || (state.me && message.author === state.me.id)) continue;
    left--;
    if (left === 0) return { found: message.id, index, left };
  }
  return { found: null, index: -1, left };
}

function unreadLine() {
  unreadLine.node ||= el("li", { class: "unread-divider", role: "separator", "aria-label": "New messages", text: "New messages" });
  return unreadLine.node;
}

// "↓ N new" counts what came while the view was scrolled up; far up in a long chat (the window
// does not reach the newest) it says "↓ Newest". Either way it goes to the newest.
function showNewBelow() {
  const pill = $("new-below");
  pill.hidden = state.newBelow === 0 && !state.hasNewer;
  pill.textContent = state.newBelow > 0 ? `↓ ${state.newBelow} new` : "↓ Newest";
  pill.setAttribute("aria-label", state.newBelow > 0
    ? `${state.newBelow} new message${state.newBelow === 1 ? "" : "s"} below; go to the newest`
    : "go to the newest message");
  // "↑ First unread" while the first unread message is not in the window.
  const inWindow = state.unreadFrom && state.messages.some((m) => m.id === state.unreadFrom);
  $("first-unread").hidden = !(state.unreadAtOpen > 0) || Boolean(inWindow);
}

// `arrived`: others' messages were just drawn at the bottom, so there is something to read even
// when the sidebar's count has not caught up with them yet.
async function markRead(id, arrived = false) {
  const chat = chats().find((c) => c.id === id);
  if (document.visibilityState === "visible" && chat && (arrived || chat.unread > 0)) {
    await api("POST", `/api/partitions/${id}/read`);
  }
}

// Back at the bottom of the chat: the new ones are seen.
function reachedBottom() {
  if (state.hasNewer) return;
  if (state.newBelow === 0 && !(state.current && (chats().find((c) => c.id === state.current.id) || {}).unread > 0)) return;
  state.newBelow = 0;
  showNewBelow();
  if (state.current) markRead(state.current.id).then(() => loadSidebar()).catch(() => {});
}

// The message list is a window on the chat: at most WINDOW consecutive messages are held and
// drawn, whatever the chat's length. Scrolling near either edge loads a PAGE more there and
// drops as many at the far end, with the message being read kept where it is on screen.
const PAGE = 100;           // messages one load at an edge adds
const WINDOW = 300;         // messages held at most; a chat opens with its newest WINDOW
const FOLLOWING = 200;      // messages kept while the view follows the newest (arrivals drop the oldest)
const SEARCH_PAGE = 1000;   // the API's largest page, for counting back to the first unread

// Window changes run one after another: a live update landing between a page's request and its
// answer would otherwise splice the window twice.
let windowQueue = Promise.resolve();
function inWindowQueue(task) {
  const run = windowQueue.then(task);
  windowQueue = run.catch(() => {});
  return run;
}

function messagesPath(id, query) {
  return `/api/partitions/${id}/messages?${query}`;
}

// The newest messages, drawn with the view at the bottom; they are read.
async function showNewest(id) {
  const messages = await api("GET", messagesPath(id, `limit=${WINDOW}`));
  if (!isCurrent(id)) return;
  state.messages = messages;
  state.hasOlder = messages.length === WINDOW;
  state.hasNewer = false;
  state.newestKnown = messages.length ? messages[messages.length - 1].id : null;
  state.newBelow = 0;
  if (state.unreadFrom === null) placeUnreadLine();
  renderMessages();
  const list = $("messages");
  list.dataset.following = "true";
  list.scrollTop = list.scrollHeight;
  showNewBelow();
  await markRead(id);
}

function isCurrent(id) {
  return state.current && state.current.id === id && state.view === "messages";
}

// The live path: what arrived after the newest message known is appended (when the window
// reaches that far; else only counted), and the messages on screen are read again so that
// their edits, deletions and reactions show. Two small reads, whatever the chat's length.
async function applyChanges(id) {
  const list = $("messages");
  let arrived = [];
  if (state.newestKnown) {
    try {
      arrived = await api("GET", messagesPath(id, `limit=${PAGE}&after=${encodeURIComponent(state.newestKnown)}`));
    } catch (error) {
      if (error.status !== 404) throw error;
      return showNewest(id);  // the newest known is gone (the room's retention dropped it)
    }
  } else {
    arrived = await api("GET", messagesPath(id, `limit=${PAGE}`));
  }
  if (!isCurrent(id)) return;
  if (arrived.length === PAGE) scheduleRefresh([id]);  // more than a page came: the rest next time
  const others = arrived.filter((m) => !(state.me && m.author === state.me.id));
  state.othersSinceOpen += others.length;
  if (arrived.length) state.newestKnown = arrived[arrived.length - 1].id;
  if (others.length) announce(others.map((m) => `${personLabel(m.author, m.nick)}: ${m.text}`).join(". "));

  const changed = await readOnScreen(id);
  if (!isCurrent(id)) return;
  // Whether the view follows is asked only now: the reader may have scrolled up while the reads
  // were on their way, and must not be taken back down.
  const following = list.dataset.following !== "false" && !state.hasNewer;
  if (!following) state.newBelow += others.length;  // the reader is further up: say what came, do not move the view
  keepReadingPlace(() => {
    if (changed) replaceMessages(changed);
    if (!state.hasNewer) state.messages.push(...arrived);
    trimWindow(following ? FOLLOWING : WINDOW);
    renderMessages();
  });
  if (following) list.scrollTop = list.scrollHeight;
  showNewBelow();
  // Read is what was seen: messages that arrive while the view is scrolled up stay unread.
  if (following) await markRead(id, others.length > 0);
}

// The messages on screen as the node has them now (null when nothing is drawn): the run from
// the first to the last visible one, asked for from its neighbour in the window.
async function readOnScreen(id) {
  const [first, last] = visibleRange();
  if (first < 0) return null;
  const count = last - first + 1;
  let query;
  if (first > 0) query = `limit=${count}&after=${encodeURIComponent(state.messages[first - 1].id)}`;
  else if (last < state.messages.length - 1) query = `limit=${count}&before=${encodeURIComponent(state.messages[last + 1].id)}`;
  else if (!state.hasNewer) query = `limit=${count}`;  // the whole window is on screen, up to the newest
  else return null;
  try {
    return await api("GET", messagesPath(id, query));
  } catch (error) {
    if (error.status === 404) return null;  // its neighbour is gone: the next read has another
    throw error;
  }
}

// The indices in the window of the first and last message drawn on screen ([-1, -1]: none).
function visibleRange() {
  const list = $("messages");
  const nodes = renderMessages.nodes;
  if (!nodes || list.clientHeight === 0) return [-1, -1];
  const top = list.getBoundingClientRect().top, bottom = top + list.clientHeight;
  let first = -1, last = -1;
  state.messages.forEach((message, index) => {
    const entry = nodes.get(message.id);
    if (!entry) return;
    const box = entry.node.getBoundingClientRect();
    if (box.bottom < top || box.top > bottom) return;
    if (first < 0) first = index;
    last = index;
  });
  return [first, last];
}

// Puts fresh copies of messages in the window where their ids are (never adds any).
function replaceMessages(fresh) {
  const byId = new Map(fresh.map((m) => [m.id, m]));
  state.messages = state.messages.map((m) => byId.get(m.id) || m);
}

// Drops messages from the end farther from what is on screen until at most `most` are held.
function trimWindow(most) {
  const excess = state.messages.length - most;
  if (excess <= 0) return;
  const [first] = visibleRange();
  const readingNearTop = first >= 0 && first < state.messages.length / 2;
  if (readingNearTop) {
    state.messages.splice(state.messages.length - excess, excess);
    state.hasNewer = true;
  } else {
    state.messages.splice(0, excess);
    state.hasOlder = true;
  }
}

// Runs `change` (which redraws the list) and scrolls so that the first message on screen stays
// where it was: what the reader is looking at does not move when pages come or go around it.
function keepReadingPlace(change) {
  const list = $("messages");
  const [first] = visibleRange();
  const anchor = first >= 0 ? renderMessages.nodes.get(state.messages[first].id) : null;
  const offset = anchor ? anchor.node.getBoundingClientRect().top : 0;
  change();
  if (anchor && anchor.node.isConnected) list.scrollTop += anchor.node.getBoundingClientRect().top - offset;
}

async function loadOlder() {
  if (!state.hasOlder || !state.messages.length || !state.current) return;
  const id = state.current.id;
  const page = await api("GET", messagesPath(id, `limit=${PAGE}&before=${encodeURIComponent(state.messages[0].id)}`));
  if (!isCurrent(id)) return;
  keepReadingPlace(() => {
    state.messages.unshift(...page);
    state.hasOlder = page.length === PAGE;
    trimWindow(WINDOW);
    renderMessages();
  });
  showNewBelow();
}

async function loadNewer() {
  if (!state.hasNewer || !state.messages.length || !state.current) return;
  const id = state.current.id;
  const page = await api("GET", messagesPath(id, `limit=${PAGE}&after=${encodeURIComponent(state.messages[state.messages.length - 1].id)}`));
  if (!isCurrent(id)) return;
  keepReadingPlace(() => {
    state.messages.push(...page);
    state.hasNewer = page.length === PAGE;
    if (!state.hasNewer) state.newestKnown = page.length ? page[page.length - 1].id : state.messages[state.messages.length - 1].id;
    trimWindow(WINDOW);
    renderMessages();
  });
  showNewBelow();
}

// Near an edge of the window, the next page there; once the scrolling settles, the messages
// on screen are read again (a message far from the newest may have changed since it was loaded).
// Only the reader's own scrolling (wheel, touch, keys, the scroll bar) loads pages: a scroll the
// page makes itself (to the newest, keeping the reading place) or a script's pulls nothing in.
function onMessagesScrolled() {
  loadNearEdge();
  clearTimeout(onMessagesScrolled.settle);
  onMessagesScrolled.settle = setTimeout(() => refreshCurrent(false).catch(() => {}), 300);
}

function loadNearEdge() {
  const list = $("messages");
  const fromBottom = list.scrollHeight - list.scrollTop - list.clientHeight;
  const byReader = performance.now() - lastReaderInput < 1000;
  // Only the edge the reader moves towards: a page read at one edge moves the view near the
  // other (the far end dropped, the place kept), which must not pull that edge back in.
  if (byReader && readerDirection <= 0 && list.scrollTop < list.clientHeight && state.hasOlder) loadAtEdge(loadOlder);
  else if (byReader && readerDirection >= 0 && fromBottom < list.clientHeight && state.hasNewer) loadAtEdge(loadNewer);
}

// The reader's own input also asks at the edges: a wheel turned at the very end of the window
// scrolls nothing, so no scroll event would ask for the next page.
let lastReaderInput = 0;
let readerDirection = 0;  // +1 down, -1 up, 0 not known (a touch, the scroll bar)
function noteReaderInput(event) {
  lastReaderInput = performance.now();
  readerDirection = directionOf(event);
  loadNearEdge();
}

function directionOf(event) {
  if (event.type === "wheel") return Math.sign(event.deltaY);
  if (event.type !== "keydown") return 0;
  if (["PageDown", "ArrowDown", "End", " "].includes(event.key)) return 1;
  return ["PageUp", "ArrowUp", "Home"].includes(event.key) ? -1 : 0;
}

// One load at an edge at a time; another scroll event meanwhile asks for nothing more.
function loadAtEdge(load) {
  if (loadAtEdge.busy) return;
  loadAtEdge.busy = true;
  inWindowQueue(load).catch(showError).finally(() => {
    loadAtEdge.busy = false;
    loadNearEdge();  // still near the edge (a fast scroll): the next page
  });
}

// The window around the first unread message, with the view on the "New messages" line. The
// line is found by counting the others' messages back from the newest, a large page at a time.
async function jumpToFirstUnread() {
  const id = state.current && state.current.id;
  if (!id) return;
  const line = () => {
    const node = unreadLine();
    if (node.isConnected) node.scrollIntoView({ block: "start" });
    showNewBelow();
  };
  if (state.messages.some((m) => m.id === state.unreadFrom)) return line();
  let left = unreadToFind();
  let query = `limit=${SEARCH_PAGE}`;
  let newestPage = true;
  while (left > 0) {
    const page = await api("GET", messagesPath(id, query));
    if (!isCurrent(id)) return;
    const found = firstUnreadIn(page, left);
    left = found.left;
    if (found.found) {
      const start = Math.max(0, found.index - PAGE / 2);
      const end = Math.min(page.length, start + WINDOW);
      state.messages = page.slice(start, end);
      state.hasOlder = start > 0 || page.length === SEARCH_PAGE;
      state.hasNewer = end < page.length || !newestPage;
      state.unreadFrom = found.found;
      state.newBelow = 0;
      $("messages").dataset.following = "false";
      renderMessages();
      return line();
    }
    if (page.length < SEARCH_PAGE) return;  // the chat's start: fewer unread than counted (some were deleted)
    query = `limit=${SEARCH_PAGE}&before=${encodeURIComponent(page[0].id)}`;
    newestPage = false;
  }
}

function renderMessages() {
  const list = $("messages");
  if (state.messages.length === 0) {
    list.replaceChildren(el("li", { class: "muted", text: "No messages yet. Say hello!" }));
    return;
  }
  const focused = focusKey();
  const top = state.hasOlder ? olderButton() : null;
  // Each message's node is made again only when what it shows changed (its own fields, whether
  // it continues a run, the edit in progress, the names and pictures of the people); the others
  // stay as they are, so a refresh touches what changed and nothing else.
  const people = state.people.map((p) => `${p.id}:${p.nick}:${p.avatar ? p.avatar.hash : ""}`).join(",") + new Date().toDateString();
  const before = renderMessages.nodes || new Map();
  const nodes = new Map();
  const wanted = top ? [top] : [];
  state.messages.forEach((message, index) => {
    // A run starts again after the "New messages" line.
    const previous = message.id === state.unreadFrom ? undefined : state.messages[index - 1];
    const key = JSON.stringify([message, continuesRun(message, previous), state.editing === message.id, state.me && state.me.id, state.me && state.me.nick]) + people;
    const kept = before.get(message.id);
    const node = kept && kept.key === key ? kept.node : renderMessage(message, previous);
    nodes.set(message.id, { key, node });
    if (message.id === state.unreadFrom) wanted.push(unreadLine());
    wanted.push(node);
  });
  renderMessages.nodes = nodes;
  patchChildren(list, wanted);
  restoreFocus(focused);
}

// The view follows new messages while it is at the bottom (`scroll` keeps `following`); an image
// that loads after its message was drawn makes the message taller, so the view goes down again.
function keepFollowing() {
  const list = $("messages");
  if (list.dataset.following !== "false") list.scrollTop = list.scrollHeight;
}

// "Show older messages", made once: a button redrawn between the press and the release of a
// click would take no click. Scrolling near the top loads them too; the button is for the keyboard.
function olderButton() {
  olderButton.node ||= el("li", { class: "older" },
    el("button", { type: "button", id: "show-older", onclick: () => inWindowQueue(loadOlder).catch(showError), text: "Show older messages" }));
  return olderButton.node;
}

// Makes `list`'s children exactly `wanted`, in order, moving or removing only what differs:
// nodes already in place are not touched (their focus, selection and loaded images stay).
function patchChildren(list, wanted) {
  let cursor = list.firstChild;
  for (const node of wanted) {
    if (node === cursor) { cursor = cursor.nextSibling; continue; }
    list.insertBefore(node, cursor);
  }
  while (cursor) {
    const next = cursor.nextSibling;
    cursor.remove();
    cursor = next;
  }
}

// A message that follows one of its author's within five minutes joins that run: its name and
// time are kept for screen readers but not drawn again.
const RUN_GAP_MS = 5 * 60 * 1000;
function continuesRun(message, previous) {
  return Boolean(previous) && previous.author === message.author && !previous.deleted && !message.deleted
    && Date.parse(message.time) - Date.parse(previous.time) < RUN_GAP_MS;
}

// The text with its http(s) links as links: each opens in a new tab with no way back to this
// page (`noopener`) and no referrer. Built as nodes, never as HTML.
const LINK = /\bhttps?:\/\/[^\s<>"'`]+[^\s<>"'`.,;:!?)\]]/g;
function linkified(text) {
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(LINK)) {
    if (match.index > last) nodes.push(...withMentions(text.slice(last, match.index)));
    nodes.push(el("a", { href: match[0], target: "_blank", rel: "noopener noreferrer", text: match[0] }));
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(...withMentions(text.slice(last)));
  return nodes;
}

// `@nick` for this user's nickname, any case, not inside a longer word.
function mentionPattern() {
  const nick = state.me && state.me.nick;
  if (!nick) return null;
  return new RegExp(`@${nick.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(?![\\p{L}\\p{N}_])`, "giu");
}

function mentionsMe(text) {
  const pattern = mentionPattern();
  return Boolean(pattern && text && text.match(pattern));
}

// Text with this user's mentions marked.
function withMentions(text) {
  const pattern = mentionPattern();
  if (!pattern) return [document.createTextNode(text)];
  const nodes = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    if (match.index > last) nodes.push(document.createTextNode(text.slice(last, match.index)));
    nodes.push(el("mark", { class: "mention", text: match[0] }));
    last = match.index + match[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  return nodes;
}

function renderMessage(message, previous) {
  const mine = state.me && message.author === state.me.id;
  const person = state.people.find((p) => p.id === message.author) || { id: message.author, nick: message.nick };
  const bubble = el("div", { class: "bubble" });
  bubble.append(el("div", { class: "meta" },
    el("span", { class: "author", text: personLabel(message.author, message.nick) }),
    el("time", { datetime: message.time, text: timeText(message.time) }),
    message.edited && !message.deleted ? el("span", { text: "(edited)" }) : null));

  if (message.deleted) {
    bubble.append(el("p", { class: "text", text: "message deleted" }));
  } else if (state.editing === message.id) {
    const box = el("textarea", { class: "edit-box", "aria-label": "Edit message" });
    box.value = message.text;
    const save = async () => {
      try {
        await api("PATCH", `/api/messages/${message.id}`, { text: box.value });
        await endEdit(message, true);
      } catch (error) { showError(error); }
    };
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); save(); }
      if (event.key === "Escape") { event.preventDefault(); endEdit(message, false); }
    });
    bubble.append(box, el("div", { class: "actions" },
      el("button", { type: "button", text: "Save", onclick: save }),
      el("button", { type: "button", text: "Cancel", onclick: () => endEdit(message, false) })));
    setTimeout(() => box.focus(), 0);
  } else {
    if (message.text) bubble.append(el("p", { class: "text", dir: "auto" }, ...linkified(message.text)));
    const attachments = renderAttachments(message);
    if (attachments) bubble.append(attachments);
    if (message.location) {
      const { lat, lon } = message.location;
      bubble.append(el("a", {
        class: "file-link", href: `https://www.openstreetmap.org/?mlat=${lat}&mlon=${lon}#map=16/${lat}/${lon}`,
        target: "_blank", rel: "noopener noreferrer", text: `📍 ${lat.toFixed(5)}, ${lon.toFixed(5)}`,
      }));
    }
  }

  const about = messageName(message, mine);
  const reactions = el("div", { class: "reactions" });
  for (const emoji of Object.keys(message.reactions).sort()) {
    const users = message.reactions[emoji];
    const minePressed = state.me && users.includes(state.me.id);
    const names = users.map((u) => personLabel(u, nickOf(u))).join(", ");
    reactions.append(el("button", {
      type: "button", class: minePressed ? "mine-reaction" : "", "aria-pressed": minePressed ? "true" : "false", "data-action": `reaction ${emoji}`,
      title: names, "aria-label": `${emoji} ${users.length} on ${about}: ${names}`, onclick: () => react(message, emoji, !minePressed),
    }, el("span", { class: "emoji", text: emoji }), ` ${users.length}`));
  }
  if (reactions.childElementCount) bubble.append(reactions);

  if (!message.deleted && state.editing !== message.id) {
    const actions = el("div", { class: "actions" });
    actions.append(el("button", {
      type: "button", text: "React", "aria-haspopup": "dialog", "data-action": "react", "aria-label": `React to ${about}`,
      onclick: (event) => openEmojiPicker(event.currentTarget, message),
    }));
    if (mine) {
      actions.append(el("button", {
        type: "button", text: "Edit", "data-action": "edit", "aria-label": `Edit ${about}`,
        onclick: () => startEdit(message, "button"),
      }));
      const remove = el("button", { type: "button", text: "Delete", "data-action": "delete", "aria-label": `Delete ${about}` });
      remove.addEventListener("click", async () => {
        if (remove.dataset.confirm !== "yes") {
          remove.dataset.confirm = "yes";
          remove.textContent = "Really delete?";
          return;
        }
        try { await api("DELETE", `/api/messages/${message.id}`); await refreshCurrent(false); } catch (error) { showError(error); }
      });
      actions.append(remove);
    }
    bubble.append(actions);
  }
  const run = continuesRun(message, previous) ? " grouped" : "";
  const mention = !mine && !message.deleted && mentionsMe(message.text) ? " mentions-me" : "";
  const editing = state.editing === message.id ? " editing" : "";
  return el("li", { class: `message${mine ? " mine" : ""}${message.deleted ? " deleted" : ""}${run}${mention}${editing}`, "data-message": message.id },
    avatarElement(person), bubble);
}

// An image sent from a page carries its thumbnail as the next attachment, named NAME.thumb.jpg.
function renderAttachments(message) {
  if (message.attachments.length === 0) return null;
  const box = el("div", { class: "attachments" });
  const list = message.attachments;
  for (let index = 0; index < list.length; index++) {
    const attachment = list[index];
    const url = `/api/messages/${message.id}/attachments/${index + 1}`;
    const next = list[index + 1];
    const thumbnail = next && next.name === `${attachment.name}.thumb.jpg` ? index + 2 : null;
    if (attachment.mime.startsWith("image/") && ["image/png", "image/jpeg", "image/gif", "image/webp"].includes(attachment.mime)) {
      const src = thumbnail ? `/api/messages/${message.id}/attachments/${thumbnail}` : url;
      const link = el("a", { href: url, target: "_blank", rel: "noopener", title: attachment.name });
      const waiting = el("span", { text: `🖼 ${attachment.name} (not here yet)`, hidden: true });
      const img = el("img", { src, alt: attachment.name, loading: "lazy", class: "thumbnail" });
      // The picture may reach this node after its message: until then say so, and ask again
      // every 2 s while the message is on screen (it is not drawn again by every refresh).
      let tries = 0;
      img.addEventListener("load", () => { waiting.hidden = true; img.hidden = false; keepFollowing(); });
      img.addEventListener("error", () => {
        waiting.hidden = false;
        img.hidden = true;
        if (tries++ < 150) setTimeout(() => { if (img.isConnected) img.src = `${src}?try=${tries}`; }, 2000);
      });
      link.append(img, waiting);
      box.append(link);
    } else {
      box.append(el("a", { class: "file-link", href: url, download: attachment.name, text: `📄 ${attachment.name} (${sizeText(attachment.size)})` }));
    }
    if (thumbnail) index++;
  }
  return box;
}

function sizeText(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

// Focus stays with the message: on its reaction, or on React when the last one went.
async function react(message, emoji, on) {
  try {
    await api("POST", `/api/messages/${message.id}/reactions`, { emoji, on });
    await refreshCurrent(false);
    const here = `[data-message="${message.id}"]`;
    (document.querySelector(`${here} [data-action="${CSS.escape(`reaction ${emoji}`)}"]`) || document.querySelector(`${here} [data-action="react"]`) || $("composer-text")).focus();
  } catch (error) { showError(error); }
}

// "your message “…”", "bob#3fkq7z's message “…”": what a message's controls are named after.
function messageName(message, mine) {
  const owner = mine ? "your message" : `${personLabel(message.author, message.nick)}'s message`;
  const text = (message.text || "").replace(/\s+/g, " ").trim();
  const excerpt = text.length > 40 ? `${[...text].slice(0, 40).join("")}…` : text;
  return excerpt ? `${owner} “${excerpt}”` : `${owner} with ${message.attachments.length ? "a file" : "no text"}`;
}

// Editing starts from the message's Edit button or from Up in the message box, and focus goes
// back there when it ends.
function startEdit(message, from) {
  state.editing = message.id;
  state.editFrom = from;
  renderMessages();
}

async function endEdit(message, saved) {
  state.editing = null;
  if (saved) await refreshCurrent(false); else renderMessages();
  const back = state.editFrom === "composer" ? $("composer-text") : document.querySelector(`[data-message="${message.id}"] [data-action="edit"]`);
  state.editFrom = null;
  (back || $("composer-text")).focus();
}

// The reaction picker: one for the page, opened beside the message's React button. Arrow keys
// move in its grid, Enter picks, Esc closes; any other emoji can be typed in its box. Its 120
// are single code points or one with U+FE0F (emoji style), so every font with colour emoji
// (Noto Color Emoji on Linux) draws each as one glyph; rows of 8.
const EMOJI = [
  ["Smileys", "😀 😃 😄 😁 😆 😅 😂 🤣 😊 😇 🙂 😉 😍 🥰 😘 😋 😎 🤩 🥳 😏 🤔 🤨 😐 😴 😮 😯 😲 😳 🥺 😢 😭 😤 😡 🤯 😱 🤗 🤭 🙄 😬 🤐 🙃 🫠 🤪 🤓 🥲 🥹 😒 💀"],
  ["Gestures", "👍 👎 👌 ✌️ 🤞 🤝 👏 🙌 👐 🙏 💪 👋 🤙 ☝️ 👀 🫡 ✋ 👊 🤘 🤌 🫶 🤷 🤦 🙋"],
  ["Hearts and signs", "❤️ 🧡 💛 💚 💙 💜 🖤 🤍 💔 ❣️ 💯 ✅ ❌ ❓ ❗ ⚠️ 🔥 ✨ ⭐ 🎉 🎊 🏆 🚀 💡"],
  ["Things", "☕ 🍕 🍺 🍰 🎂 📌 📎 📝 📅 ⏰ 🔒 🔑 🛠️ 💻 📱 🐛 🌍 🌧️ ☀️ 🌙 🍻 🎁 📦 🏠"],
];

function openEmojiPicker(opener, message) {
  const picker = $("emoji-picker");
  picker.replaceChildren();
  for (const [group, list] of EMOJI) {
    const grid = el("div", { class: "emoji-grid", role: "group", "aria-label": group });
    for (const emoji of list.split(" ")) {
      grid.append(el("button", { type: "button", text: emoji, "aria-label": `React ${emoji}`, onclick: () => pickEmoji(emoji) }));
    }
    picker.append(el("p", { class: "emoji-group", text: group }), grid);
  }
  const other = el("input", { type: "text", class: "emoji-other", "aria-label": "Another emoji (type or paste, then Enter)", placeholder: "another emoji…", maxlength: "32" });
  other.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && other.value.trim()) { event.preventDefault(); pickEmoji(other.value.trim()); }
  });
  picker.append(other);
  picker.addEventListener("keydown", movePickerFocus);
  state.picking = { message, opener };
  const box = opener.getBoundingClientRect();
  picker.hidden = false;
  const top = Math.min(box.bottom + 4, window.innerHeight - picker.offsetHeight - 8);
  picker.style.top = `${Math.max(8, top)}px`;
  picker.style.left = `${Math.max(8, Math.min(box.left, window.innerWidth - picker.offsetWidth - 8))}px`;
  opener.setAttribute("aria-expanded", "true");
  picker.querySelector("button").focus();
}

function closeEmojiPicker(refocus) {
  const picker = $("emoji-picker");
  if (picker.hidden) return;
  picker.hidden = true;
  picker.removeEventListener("keydown", movePickerFocus);
  const picking = state.picking;
  state.picking = null;
  if (!picking) return;
  // A live update may have drawn the message again meanwhile: its new React button takes focus.
  const opener = picking.opener.isConnected ? picking.opener : document.querySelector(`[data-message="${picking.message.id}"] [data-action="react"]`);
  if (!opener) return;
  opener.setAttribute("aria-expanded", "false");
  if (refocus) opener.focus();
}

function pickEmoji(emoji) {
  const picking = state.picking;
  closeEmojiPicker(false);
  if (picking) react(picking.message, emoji, true);
}

function movePickerFocus(event) {
  if (event.key === "Escape") { event.preventDefault(); event.stopPropagation(); closeEmojiPicker(true); return; }
  const buttons = [...$("emoji-picker").querySelectorAll("button")];
  const at = buttons.indexOf(document.activeElement);
  if (at < 0) return;
  let next = null;
  if (event.key === "ArrowRight") next = buttons[at + 1];
  else if (event.key === "ArrowLeft") next = buttons[at - 1];
  else if (event.key === "ArrowDown" || event.key === "ArrowUp") next = buttonInNextRow(buttons, buttons[at], event.key === "ArrowDown");
  else return;
  event.preventDefault();
  if (next) next.focus();
}

// The button in the row above or below `from` (the groups' rows differ in length) nearest to it.
function buttonInNextRow(buttons, from, down) {
  const here = from.getBoundingClientRect();
  const beyond = buttons.map((button) => [button, button.getBoundingClientRect()])
    .filter(([, box]) => (down ? box.top > here.top + 2 : box.top < here.top - 2));
  if (beyond.length === 0) return null;
  const rowTop = (down ? Math.min : Math.max)(...beyond.map(([, box]) => box.top));
  const row = beyond.filter(([, box]) => Math.abs(box.top - rowTop) < 2);
  row.sort(([, a], [, b]) => Math.abs(a.left - here.left) - Math.abs(b.left - here.left));
  return row[0][0];
}

async function send(event) {
  event.preventDefault();
  if (!state.current) return;
  const box = $("composer-text");
  const text = box.value;
  // A message needs text or a file; a location comes with one of them (as the API says).
  if (!text.trim() && state.pending.length === 0) {
    if (state.location) showError(new Error("Add a few words or a file to send with the location."));
    return;
  }
  const attachments = [];
  for (const file of state.pending) {
    attachments.push({ name: file.name, mime: file.mime, data: file.data });
    if (file.thumb) attachments.push({ name: `${file.name}.thumb.jpg`, mime: "image/jpeg", data: file.thumb });
  }
  const body = { text };
  if (attachments.length) body.attachments = attachments;
  if (state.location) body.location = state.location;
  $("send-button").disabled = true;
  try {
    await api("POST", `/api/partitions/${state.current.id}/messages`, body);
    box.value = "";
    state.pending = [];
    state.location = null;
    renderPending();
    await refreshCurrent(true);
  } catch (error) {
    showError(error);
  } finally {
    $("send-button").disabled = false;
    box.focus();
  }
}

// ---------- mentions: people suggested while typing @ ----------

// The people offered for the `@word` before the caret: nicknames that begin with it, any case.
const suggestions = { people: [], at: 0, start: -1 };

function mentionBeforeCaret() {
  const box = $("composer-text");
  const before = box.value.slice(0, box.selectionStart);
  const match = before.match(/(?:^|[^\p{L}\p{N}_])@([\p{L}\p{N}_.-]*)$/u);
  return match ? { start: before.length - match[1].length - 1, text: match[1].toLowerCase() } : null;
}

function suggestPeople() {
  const typed = mentionBeforeCaret();
  suggestions.people = typed
    ? state.people.filter((p) => !p.me && p.nick && p.nick.toLowerCase().startsWith(typed.text)).slice(0, 6)
    : [];
  suggestions.at = 0;
  suggestions.start = typed ? typed.start : -1;
  renderSuggestions();
}

function renderSuggestions() {
  const list = $("mention-suggestions"), box = $("composer-text");
  const open = suggestions.people.length > 0;
  list.hidden = !open;
  box.setAttribute("aria-expanded", String(open));
  list.replaceChildren(...suggestions.people.map((person, index) => el("li", {
    id: `mention-option-${index}`, role: "option", "aria-selected": String(index === suggestions.at),
    onmousedown: (event) => { event.preventDefault(); chooseSuggestion(index); },  // the box keeps focus
  }, avatarElement(person), el("span", { text: personLabel(person.id, person.nick) }))));
  if (open) box.setAttribute("aria-activedescendant", `mention-option-${suggestions.at}`);
  else box.removeAttribute("aria-activedescendant");
}

function chooseSuggestion(index) {
  const person = suggestions.people[index];
  const box = $("composer-text");
  const inserted = `@${person.nick} `;
  box.value = box.value.slice(0, suggestions.start) + inserted + box.value.slice(box.selectionStart);
  const caret = suggestions.start + inserted.length;
  box.setSelectionRange(caret, caret);
  suggestions.people = [];
  renderSuggestions();
  box.focus();
}

// The keys of an open list: ↑/↓ move, Enter or Tab picks, Esc closes. True when taken.
function suggestionKey(event) {
  if (suggestions.people.length === 0) return false;
  const count = suggestions.people.length;
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    suggestions.at = (suggestions.at + (event.key === "ArrowDown" ? 1 : count - 1)) % count;
    renderSuggestions();
  } else if ((event.key === "Enter" && !event.shiftKey) || event.key === "Tab") {
    chooseSuggestion(suggestions.at);
  } else if (event.key === "Escape") {
    suggestions.people = [];
    renderSuggestions();
  } else {
    return false;
  }
  event.preventDefault();
  return true;
}

// ---------- attachments, thumbnails made here ----------

function readAsBase64(blob) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).split(",", 2)[1] || "");
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

// A JPEG no larger than `size` on its longer side, drawn on a canvas; null if the browser
// cannot decode the image.
async function thumbnail(file, size) {
  const url = URL.createObjectURL(file);
  try {
    const image = await new Promise((resolve, reject) => {
      const img = new Image();
      img.onload = () => resolve(img);
      img.onerror = reject;
      img.src = url;
    });
    const scale = Math.min(1, size / Math.max(image.naturalWidth, image.naturalHeight));
    const canvas = document.createElement("canvas");
    canvas.width = Math.max(1, Math.round(image.naturalWidth * scale));
    canvas.height = Math.max(1, Math.round(image.naturalHeight * scale));
    const context = canvas.getContext("2d");
    context.fillStyle = "#fff";
    context.fillRect(0, 0, canvas.width, canvas.height);
    context.drawImage(image, 0, 0, canvas.width, canvas.height);
    const blob = await new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.82));
    return blob;
  } catch (_) {
    return null;
  } finally {
    URL.revokeObjectURL(url);
  }
}

const maxFileBytes = 8 * 1024 * 1024;

async function addFiles(files) {
  for (const file of files) {
    if (file.size > maxFileBytes) { showError(`${file.name} is over 8 MiB`); continue; }
    const entry = { name: file.name, mime: file.type || "application/octet-stream", data: await readAsBase64(file) };
    if (file.type.startsWith("image/")) {
      const thumb = await thumbnail(file, 320);
      if (thumb) { entry.thumb = await readAsBase64(thumb); entry.preview = URL.createObjectURL(thumb); }
    }
    state.pending.push(entry);
  }
  renderPending();
}

function renderPending() {
  const box = $("pending");
  const chips = state.pending.map((file, index) => el("span", { class: "chip" },
    file.preview ? el("img", { src: file.preview, alt: "" }) : null,
    el("span", { text: file.name }),
    el("button", { type: "button", "aria-label": `remove ${file.name}`, text: "✕", onclick: () => { state.pending.splice(index, 1); renderPending(); } })));
  if (state.location) {
    chips.push(el("span", { class: "chip" }, el("span", { text: `📍 ${state.location.lat}, ${state.location.lon}` }),
      el("button", { type: "button", "aria-label": "remove the location", text: "✕", onclick: () => { state.location = null; renderPending(); } })));
  }
  box.replaceChildren(...chips);
}

// ---------- typing ----------

let lastTypingSent = 0;
function noteTyping() {
  if (!state.current || Date.now() - lastTypingSent < 3000) return;
  lastTypingSent = Date.now();
  api("POST", `/api/partitions/${state.current.id}/typing`).catch(() => {});
}

function renderTyping() {
  const now = Date.now();
  const names = [];
  for (const [user, entry] of state.typing) {
    if (entry.until < now || !state.current || entry.partition !== state.current.id || (state.me && user === state.me.id)) continue;
    names.push(personLabel(user, entry.nick));
  }
  $("typing").textContent = names.length ? `${names.join(", ")} ${names.length === 1 ? "is" : "are"} typing…` : "";
}

// ---------- tasks ----------

const statuses = [["open", "Open"], ["in-progress", "In progress"], ["complete", "Complete"]];

function renderTasks() {
  const focused = focusKey();
  for (const [status] of statuses) {
    const list = $(`tasks-${status}`);
    const tasks = state.tasks.filter((t) => t.status === status);
    list.replaceChildren(...tasks.map(renderTask));
    if (tasks.length === 0) list.append(el("li", { class: "muted", text: "nothing here" }));
  }
  restoreFocus(focused);
}

function renderTask(task) {
  const select = el("select", { "aria-label": `Status of ${task.title}`, "data-task-status": task.id });
  for (const [value, label] of statuses) {
    const option = el("option", { value, text: label });
    if (value === task.status) option.selected = true;
    select.append(option);
  }
  select.addEventListener("change", async () => {
    try { await api("PATCH", `/api/tasks/${task.id}`, { status: select.value }); await refreshCurrent(false); } catch (error) { showError(error); }
  });
  const owner = task.owner ? personLabel(task.owner, nickOf(task.owner)) : null;
  const take = el("button", {
    type: "button", "data-action": "take", text: task.owner === (state.me && state.me.id) ? "Unassign" : "Take it",
    onclick: async () => {
      const mineNow = task.owner === state.me.id;
      try { await api("PATCH", `/api/tasks/${task.id}`, { owner: mineNow ? null : state.me.id }); await refreshCurrent(false); } catch (error) { showError(error); }
    },
  });
  const remove = el("button", { type: "button", text: "Delete", "data-action": "delete-task", "aria-label": `Delete task ${task.title}` });
  remove.addEventListener("click", async () => {
    if (remove.dataset.confirm !== "yes") { remove.dataset.confirm = "yes"; remove.textContent = "Really?"; return; }
    try { await api("DELETE", `/api/tasks/${task.id}`); await refreshCurrent(false); } catch (error) { showError(error); }
  });
  return el("li", { class: "task", "data-task": task.id },
    el("div", { class: "task-title", text: task.title }),
    owner ? el("div", { class: "muted", text: `→ ${owner}` }) : null,
    el("div", { class: "task-controls" }, select, take, remove));
}

function setView(view) {
  state.view = view;
  $("tab-messages").setAttribute("aria-selected", String(view === "messages"));
  $("tab-tasks").setAttribute("aria-selected", String(view === "tasks"));
  $("messages-panel").hidden = view !== "messages";
  $("tasks-panel").hidden = view !== "tasks";
  refreshCurrent(true).catch(showError);
}

// ---------- mute, notifications, leaving, a person's conversation ----------

function showMuted(chat) {
  const button = $("mute-chat");
  button.textContent = chat.muted ? "Unmute" : "Mute";
  button.setAttribute("aria-pressed", String(Boolean(chat.muted)));
  button.setAttribute("aria-label", `${chat.muted ? "Unmute" : "Mute"} ${chat.name}`);
}

async function toggleMute() {
  if (!state.current) return;
  await api("PUT", `/api/partitions/${state.current.id}/mute`, { muted: !state.current.muted });
  await loadSidebar();
  $("mute-chat").focus();
}

// Desktop notifications: for a mention or a private message that arrives while the page is in
// the background, in a chat that is not muted. The browser asks for permission only after a
// click (its rule); the offer is made until it is answered or put off ("Not now", kept).
const notifications = {
  lastUnread: null,   // each chat's unread count at the last sidebar load (null: none yet, so nothing old is told)
  shown: [],          // { title, body } of the notifications the browser showed, newest last
};

function offerNotifications() {
  const undecided = "Notification" in window && Notification.permission === "default";
  $("notify-offer").hidden = !undecided || localStorage.getItem("parley.notify-later") === "yes";
}

async function turnOnNotifications() {
  try { await Notification.requestPermission(); } catch { /* an old browser: the callback form; the offer stays */ }
  offerNotifications();
}

function inBackground() {
  return document.visibilityState !== "visible" || !document.hasFocus();
}

// After each sidebar load: the chats whose unread count grew are read for what came, and a
// mention of this user, or any message in a conversation, is told.
async function notifyArrivals() {
  const all = chats();
  const before = notifications.lastUnread;
  notifications.lastUnread = new Map(all.map((chat) => [chat.id, chat.unread]));
  if (!before || !("Notification" in window) || Notification.permission !== "granted" || !inBackground()) return;
  for (const chat of all) {
    const grew = chat.unread - (before.get(chat.id) || 0);
    if (grew <= 0 || chat.muted) continue;
    const newest = await api("GET", `/api/partitions/${chat.id}/messages?limit=${Math.min(grew, 50)}`);
    const telling = newest.filter((m) => !m.deleted && m.author !== state.me.id && (chat.kind === "conversation" || mentionsMe(m.text)));
    if (telling.length) notify(chat, telling);
  }
}

function notify(chat, messages) {
  const last = messages[messages.length - 1];
  const who = personLabel(last.author, last.nick);
  const title = chat.kind === "conversation" ? `${who} in ${chat.name}` : `${who} mentioned you in ${chat.name}`;
  const more = messages.length > 1 ? ` (and ${messages.length - 1} more)` : "";
  const body = (last.text || "sent a file").slice(0, 180) + more;
  const note = new Notification(title, { body, tag: chat.id });
  note.addEventListener("show", () => notifications.shown.push({ title, body }));
  note.addEventListener("click", () => { window.focus(); openChat(chat.id).catch(showError); note.close(); });
}

// Leaving is asked first; a public room can be joined again from the toast that follows.
function askLeave() {
  if (!state.current) return;
  const chat = state.current;
  $("leave-heading").textContent = `Leave ${chat.name}?`;
  $("leave-explain").textContent = chat.kind === "conversation"
    ? "You stop receiving its messages; the others keep the conversation, and only a member can add you again."
    : chat.private
      ? "Its messages stop coming here; to come back you need its passphrase again."
      : "Its messages stop coming here. You can join it again at any time.";
  state.leaving = chat;
  openDialog($("leave-dialog"), $("leave-cancel"));
}

async function leave(event) {
  event.preventDefault();
  $("leave-dialog").close();
  const chat = state.leaving;
  if (!chat) return;
  try {
    if (chat.kind === "room") await api("DELETE", `/api/rooms/${encodeURIComponent(chat.room)}`);
    else await api("POST", `/api/conversations/${chat.id}/leave`);
    if (state.current && state.current.id === chat.id) state.current = null;
    await loadSidebar();
    const first = chats()[0];
    if (first) await openChat(first.id);
    if (chat.kind === "room" && !chat.private) offerUndo(`You left ${chat.name}.`, () => rejoin(chat));
  } catch (error) { showError(error); }
}

async function rejoin(chat) {
  const room = await api("POST", "/api/rooms", { name: chat.room });
  await loadSidebar();
  await openChat(room.partition);
}

function offerUndo(text, undo) {
  const toast = $("undo-toast");
  $("undo-text").textContent = text;
  $("undo-button").onclick = () => { toast.hidden = true; undo().catch(showError); };
  toast.hidden = false;
  clearTimeout(offerUndo.timer);
  offerUndo.timer = setTimeout(() => { toast.hidden = true; }, 10000);
  $("undo-button").focus();
}

const NAME_BYTES = 128;  // a conversation's name at most, in UTF-8 bytes (the API's limit)

// A conversation named after its people, as the terminal's /msg names one: "alice & bob",
// "alice, bob & carol" (cut to the name's limit).
function nameAfter(ids) {
  const names = ids.map((id) => nickOf(id) || (state.me && id === state.me.id && state.me.nick) || `#${id.slice(0, 6)}`);
  let text = names.length < 2 ? names.join("") : `${names.slice(0, -1).join(", ")} & ${names[names.length - 1]}`;
  while (new TextEncoder().encode(text).length > NAME_BYTES) text = [...text].slice(0, -2).join("") + "…";
  return text;
}

// A person's click: your conversation with them alone, or a new one.
async function openConversationWith(person) {
  const existing = state.conversations.find((c) => c.member && c.members.length === 2
    && c.members.includes(person.id) && c.members.includes(state.me.id));
  if (existing) { await openChat(existing.id); $("composer-text").focus(); return; }
  const conversation = await api("POST", "/api/conversations", { name: nameAfter([state.me.id, person.id]), members: [person.id] });
  await loadSidebar();
  await openChat(conversation.id);
  $("composer-text").focus();
}

// ---------- dialogs ----------

function openDialog(dialog, focus) {
  if (!dialog.open) dialog.showModal();
  if (focus) setTimeout(() => focus.focus(), 0);
}

async function openNewConversation(preselected = []) {
  const dialog = $("conversation-dialog");
  $("conversation-name").value = "";
  $("member-search").value = "";
  $("conversation-error").textContent = "";
  state.selectedMembers = new Set(preselected);
  await searchMembers("");
  openDialog(dialog, $("conversation-name"));
}

async function searchMembers(text) {
  const people = await api("GET", `/api/people${text ? `?search=${encodeURIComponent(text)}` : ""}`);
  const list = $("member-results");
  const others = people.filter((p) => !p.me);
  list.replaceChildren(...others.map((person) => {
    const box = el("input", { type: "checkbox", value: person.id, "data-member": person.id });
    box.checked = state.selectedMembers.has(person.id);
    box.addEventListener("change", () => { if (box.checked) state.selectedMembers.add(person.id); else state.selectedMembers.delete(person.id); });
    return el("li", {}, el("label", {}, box, el("span", { class: `dot ${person.presence}`, "aria-hidden": "true" }),
      el("span", { text: personLabel(person.id, person.nick) + (person.display_name ? ` — ${person.display_name}` : "") })));
  }));
  if (others.length === 0) list.append(el("li", { class: "muted", text: text ? "nobody matches" : "nobody in the directory yet" }));
}

async function createConversation(event) {
  event.preventDefault();
  const members = [...state.selectedMembers];
  if (members.length === 0) { $("conversation-error").textContent = "Pick at least one member."; return; }
  const name = $("conversation-name").value.trim() || nameAfter([state.me.id, ...members]);
  try {
    const conversation = await api("POST", "/api/conversations", { name, members });
    $("conversation-dialog").close();
    await loadSidebar();
    await openChat(conversation.id);
    $("composer-text").focus();
  } catch (error) {
    $("conversation-error").textContent = error.message;
  }
}

async function openProfile() {
  const profile = await api("GET", "/api/profile");
  $("profile-nick").value = profile.nick || "";
  $("profile-display-name").value = profile.display_name || "";
  $("profile-status").value = profile.status || "";
  $("profile-presence").value = profile.presence || "online";
  $("profile-id").textContent = `Your id: ${profile.id}`;
  $("profile-error").textContent = "";
  $("profile-avatar").replaceWith(Object.assign(avatarElement(profile, true), { id: "profile-avatar" }));
  openDialog($("profile-dialog"), $("profile-nick"));
}

async function saveProfile(event) {
  event.preventDefault();
  const body = {
    display_name: $("profile-display-name").value, status: $("profile-status").value, presence: $("profile-presence").value,
  };
  const nick = $("profile-nick").value.trim();
  if (nick && nick !== (state.me.nick || "")) body.nick = nick;
  try {
    await api("PATCH", "/api/profile", body);
    $("profile-dialog").close();
    await loadMe();
    await loadSidebar();
  } catch (error) {
    $("profile-error").textContent = error.message;
  }
}

async function uploadAvatar() {
  const file = $("avatar-input").files[0];
  if (!file) return;
  $("profile-error").textContent = "";
  try {
    // The avatar is scaled down here: 256 px is plenty for a round picture next to a name.
    const scaled = await thumbnail(file, 256);
    if (!scaled) throw new Error("this file is not an image the browser can read");
    const profile = await api("PUT", "/api/profile/avatar", { name: "avatar.jpg", mime: "image/jpeg", data: await readAsBase64(scaled) });
    $("profile-avatar").replaceWith(Object.assign(avatarElement(profile, true), { id: "profile-avatar" }));
    await loadMe();
    await loadSidebar();
  } catch (error) {
    $("profile-error").textContent = error.message;
  }
}

async function submitNick(event) {
  event.preventDefault();
  const nick = $("nick-input").value.trim();
  try {
    await api("PATCH", "/api/profile", { nick });
    $("nick-dialog").close();
    await start();
  } catch (error) {
    $("nick-error").textContent = error.message;
  }
}

// ---------- a conversation's members ----------

function currentConversation() {
  return state.current && state.current.kind === "conversation" ? state.conversations.find((c) => c.id === state.current.id) : null;
}

// A room's policy under its title: topic, and what it keeps when that is not everything.
function showTopic(chat) {
  const parts = [];
  if (chat.kind === "room") {
    if (chat.topic) parts.push(chat.topic);
    if (chat.retention && chat.retention !== "all") parts.push(`keeps ${retentionPhrase(chat.retention)}`);
    if (chat.history === false) parts.push("new joiners see only what is written after they join");
  }
  $("chat-topic").textContent = parts.join(" · ");
  $("chat-topic").hidden = parts.length === 0;
}

function retentionPhrase(text) {
  const n = parseInt(text, 10);
  if (text.endsWith("d")) return n === 1 ? "1 day" : `${n} days`;
  if (text.endsWith("m")) return n === 1 ? "the last message" : `the last ${n} messages`;
  return "everything";
}

// Your devices: GET /api/devices with a Revoke action for the others, and pairing a new one
// (POST /api/devices/pair shows the code and its QR code; the state is asked every second
// until the new device paired, the code ended, or the dialog closed).
async function openDevices() {
  $("profile-dialog").close();
  $("devices-error").textContent = "";
  await renderDevices();
  const current = await api("GET", "/api/devices/pair").catch(() => null);
  showPairing(current && current.state === "waiting" ? current : null);
  openDialog($("devices-dialog"), $("pair-start"));
}

async function renderDevices() {
  const devices = await api("GET", "/api/devices");
  $("devices-list").replaceChildren(...devices.map((device) => {
    const marks = [device.this ? "this device" : null, device.first ? "first" : null, device.revoked ? "revoked" : null].filter(Boolean);
    const item = el("li", { "data-device": device.id },
      el("span", { class: "chat-name", text: device.name }),
      el("span", { class: "muted", text: ` ${device.id.slice(0, 8)}${marks.length ? ` (${marks.join(", ")})` : ""}` }));
    if (!device.this && !device.revoked) {
      item.append(el("button", {
        type: "button", class: "quiet danger", text: "Revoke", "aria-label": `Revoke ${device.name}`,
        onclick: async () => {
          if (!window.confirm(`Revoke ${device.name}? Its later writes are refused everywhere, and your conversations move to keys it never gets. This cannot be undone.`)) return;
          try {
            await api("POST", `/api/devices/${encodeURIComponent(device.id)}/revoke`);
            await renderDevices();
          } catch (error) { $("devices-error").textContent = error.message; }
        },
      }));
    }
    return item;
  }));
}

function showPairing(offer) {
  clearTimeout(showPairing.timer);
  const waiting = offer && offer.state === "waiting";
  $("pair-panel").hidden = !offer;
  $("pair-cancel").hidden = !waiting;
  $("pair-start").hidden = waiting;
  if (!offer) return;
  $("pair-command").textContent = offer.command;
  $("pair-code").textContent = offer.code;
  $("pair-expires").textContent = new Date(offer.expires_at).toLocaleTimeString();
  const qr = $("pair-qr");
  qr.hidden = !waiting || !offer.qr_svg;
  if (waiting && offer.qr_svg) qr.src = "data:image/svg+xml;charset=utf-8," + encodeURIComponent(offer.qr_svg);
  if (offer.state === "paired") {
    $("pair-status").textContent = `Paired ${offer.device_name}: it writes as you now.`;
    renderDevices().catch(showError);
  } else if (offer.state === "failed") {
    $("pair-status").textContent = offer.error;
  } else {
    $("pair-status").textContent = "Waiting for the new device…";
    showPairing.timer = setTimeout(async () => {
      if (!$("devices-dialog").open) return;
      try { showPairing(await api("GET", "/api/devices/pair")); } catch (error) { $("devices-error").textContent = error.message; }
    }, 1000);
  }
}

async function startPairing() {
  $("devices-error").textContent = "";
  try { showPairing(await api("POST", "/api/devices/pair", {})); } catch (error) { $("devices-error").textContent = error.message; }
}

async function cancelPairing() {
  try {
    await api("DELETE", "/api/devices/pair");
    showPairing(await api("GET", "/api/devices/pair"));
  } catch (error) { $("devices-error").textContent = error.message; }
}

// The room directory ("Browse rooms"): GET /api/directory, each room with a join action.
async function openBrowse() {
  $("browse-error").textContent = "";
  await renderBrowse();
  openDialog($("browse-dialog"), $("browse-refresh"));
}

async function renderBrowse() {
  const rooms = await api("GET", "/api/directory");
  if (rooms.length === 0) {
    $("browse-list").replaceChildren(el("li", { class: "muted", text: "No room is listed yet: neither you nor your linked peers joined one." }));
    return;
  }
  $("browse-list").replaceChildren(...rooms.map((room) => {
    const item = el("li", { "data-room": room.name },
      el("span", { class: "chat-name", text: `#${room.name}` }),
      el("span", { class: "muted", text: ` ${room.people} ${room.people === 1 ? "person" : "people"}` }));
    if (room.topic) item.append(el("span", { class: "muted", text: ` — ${room.topic}` }));
    if (room.joined) {
      item.append(el("span", { class: "muted", text: " (joined)" }));
    } else {
      item.append(el("button", {
        type: "button", text: "Join", "aria-label": `Join #${room.name}`,
        onclick: async () => {
          try {
            const joined = await api("POST", "/api/rooms", { name: room.name });
            $("browse-dialog").close();
            await loadSidebar();
            await openChat(joined.partition);
          } catch (error) { $("browse-error").textContent = error.message; }
        },
      }));
    }
    return item;
  }));
}

async function openMembers() {
  $("add-member-search").value = "";
  $("add-member-results").replaceChildren();
  $("members-error").textContent = "";
  renderMembers();
  openDialog($("members-dialog"), $("add-member-search"));
}

function renderMembers() {
  const conversation = currentConversation();
  if (!conversation) return;
  const mayRemove = state.me && conversation.creator === state.me.id;
  $("members-list").replaceChildren(...conversation.members.map((id) => {
    const person = state.people.find((p) => p.id === id) || { id, presence: "offline" };
    const item = el("li", { "data-member-of": conversation.id },
      el("span", { class: `dot ${person.presence}`, role: "img", "aria-label": person.presence }),
      el("span", { text: personLabel(id, person.nick) + (id === conversation.creator ? " (creator)" : "") + (state.me && id === state.me.id ? " (you)" : "") }));
    if (mayRemove && id !== state.me.id) {
      item.append(el("button", {
        type: "button", text: "Remove", "aria-label": `Remove ${personLabel(id, person.nick)}`,
        onclick: () => changeMembers("DELETE", `/api/conversations/${conversation.id}/members/${id}`),
      }));
    }
    return item;
  }));
}

async function searchToAdd(text) {
  const conversation = currentConversation();
  if (!conversation) return;
  const people = text ? await api("GET", `/api/people?search=${encodeURIComponent(text)}`) : [];
  const candidates = people.filter((p) => !p.me && !conversation.members.includes(p.id));
  $("add-member-results").replaceChildren(...candidates.map((person) => el("li", {},
    el("span", { class: `dot ${person.presence}`, "aria-hidden": "true" }),
    el("span", { text: personLabel(person.id, person.nick) }),
    el("button", {
      type: "button", text: "Add", "aria-label": `Add ${personLabel(person.id, person.nick)}`,
      onclick: () => changeMembers("POST", `/api/conversations/${conversation.id}/members`, { user: person.id }),
    }))));
}

async function changeMembers(method, path, body) {
  try {
    await api(method, path, body);
    await loadSidebar();
    renderMembers();
    $("add-member-search").value = "";
    $("add-member-results").replaceChildren();
  } catch (error) {
    $("members-error").textContent = error.message;
  }
}

// ---------- sidebar on narrow screens ----------

function toggleSidebar() {
  const open = !$("sidebar").classList.contains("open");
  $("sidebar").classList.toggle("open", open);
  $("menu-toggle").setAttribute("aria-expanded", String(open));
  if (open) { const first = $("sidebar").querySelector("button, input"); if (first) first.focus(); }
}
function closeSidebar() {
  $("sidebar").classList.remove("open");
  $("menu-toggle").setAttribute("aria-expanded", "false");
}

// ---------- live events ----------

// One refresh at most every 80 ms, for everything that changed meanwhile. (Restarting the timer
// at each event starved the page while messages kept coming faster than that, and dropped the
// partitions of all but the last event.)
let refreshTimer = null;
let refreshAll = false;
let refreshPartitions = new Set();
function scheduleRefresh(partitions) {
  if (partitions.length === 0) refreshAll = true;
  for (const partition of partitions) refreshPartitions.add(partition);
  if (refreshTimer === null) refreshTimer = setTimeout(refreshChanged, 80);
}

async function refreshChanged() {
  const all = refreshAll, changed = refreshPartitions;
  refreshAll = false;
  refreshPartitions = new Set();
  try {
    await loadSidebar();
    if (state.current && (all || changed.has(state.current.id))) await refreshCurrent(false);
  } catch (error) { if (error.status === 401) location.reload(); }
  // What changed during this refresh gets the next one.
  refreshTimer = refreshAll || refreshPartitions.size > 0 ? setTimeout(refreshChanged, 80) : null;
}

function connectEvents() {
  const source = new EventSource("/api/events");
  source.addEventListener("hello", () => { $("connection").textContent = "live"; });
  source.addEventListener("changed", (event) => scheduleRefresh(JSON.parse(event.data).partitions || []));
  source.addEventListener("partitions", () => scheduleRefresh([]));
  source.addEventListener("presence", () => scheduleRefresh(["-"]));
  source.addEventListener("peers", () => scheduleRefresh(["-"]));
  source.addEventListener("typing", (event) => {
    const data = JSON.parse(event.data);
    state.typing.set(data.user, { nick: data.nick, partition: data.partition, until: Date.now() + 6000 });
    renderTyping();
  });
  source.addEventListener("bye", () => { $("connection").textContent = "the node stopped"; });
  // The browser reconnects by itself; meanwhile say why, and once back fetch what was missed.
  source.onerror = async () => {
    connectEvents.lost = true;
    $("connection").textContent = "reconnecting…";
    try {
      await api("GET", "/api/me");
    } catch (error) {
      $("connection").textContent = error.status === 0 ? NODE_DOWN : error.status === 401 ? SIGNED_OUT : "reconnecting…";
    }
  };
  source.addEventListener("hello", () => {
    if (connectEvents.lost) { connectEvents.lost = false; scheduleRefresh([]); }
  });
  setInterval(renderTyping, 1000);
}

// ---------- keyboard ----------

function onKey(event) {
  if (document.querySelector("dialog[open]")) return;
  const typingInField = ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName);
  if (event.altKey && (event.key === "ArrowUp" || event.key === "ArrowDown")) {
    event.preventDefault();
    const all = chats();
    const index = all.findIndex((c) => state.current && c.id === state.current.id);
    const next = all[(index + (event.key === "ArrowDown" ? 1 : all.length - 1)) % all.length];
    if (next) openChat(next.id).catch(showError);
  } else if (event.altKey && event.key.toLowerCase() === "n") {
    event.preventDefault(); openNewConversation().catch(showError);
  } else if (event.altKey && event.key.toLowerCase() === "p") {
    event.preventDefault(); openProfile().catch(showError);
  } else if (event.altKey && event.key.toLowerCase() === "t") {
    event.preventDefault(); setView(state.view === "messages" ? "tasks" : "messages");
  } else if (event.altKey && event.key.toLowerCase() === "m") {
    event.preventDefault(); toggleSidebar();
  } else if (event.key === "/" && !typingInField) {
    event.preventDefault(); setView("messages"); $("composer-text").focus();
  }
}

// ---------- start ----------

function wire() {
  $("composer").addEventListener("submit", send);
  $("composer-text").addEventListener("keydown", (event) => {
    if (suggestionKey(event)) return;
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); $("composer").requestSubmit(); }
    // Up in an empty box edits your last message, as in most chats.
    if (event.key === "ArrowUp" && !event.altKey && $("composer-text").value === "" && state.me) {
      const last = [...state.messages].reverse().find((m) => m.author === state.me.id && !m.deleted && m.text);
      if (last) { event.preventDefault(); startEdit(last, "composer"); }
    }
  });
  $("composer-text").addEventListener("input", () => { noteTyping(); suggestPeople(); });
  $("composer-text").addEventListener("blur", () => { suggestions.people = []; renderSuggestions(); });
  $("messages").addEventListener("scroll", () => {
    const list = $("messages");
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
    list.dataset.following = String(atBottom && !state.hasNewer);
    if (atBottom) reachedBottom();
    onMessagesScrolled();
  });
  $("new-below").addEventListener("click", () => {
    const list = $("messages");
    if (state.hasNewer) refreshCurrent(true).catch(showError);  // the newest are not in the window
    else list.scrollTop = list.scrollHeight;
    $("composer-text").focus();
  });
  for (const type of ["wheel", "touchmove", "keydown", "pointerdown"]) $("messages").addEventListener(type, noteReaderInput, { passive: true });
  $("first-unread").addEventListener("click", () => inWindowQueue(jumpToFirstUnread).catch(showError));
  $("attach-button").addEventListener("click", () => $("attach-input").click());
  $("attach-input").addEventListener("change", async () => { await addFiles([...$("attach-input").files]); $("attach-input").value = ""; });
  $("location-button").addEventListener("click", () => openDialog($("location-dialog"), $("location-lat")));
  $("location-here").addEventListener("click", () => {
    if (!navigator.geolocation) return showError("this browser cannot tell where you are");
    navigator.geolocation.getCurrentPosition((position) => {
      $("location-lat").value = position.coords.latitude.toFixed(5);
      $("location-lon").value = position.coords.longitude.toFixed(5);
    }, () => showError("your position is not available"));
  });
  $("location-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const lat = Number($("location-lat").value), lon = Number($("location-lon").value);
    if (!(lat >= -90 && lat <= 90 && lon >= -180 && lon <= 180)) return showError("latitude -90…90, longitude -180…180");
    state.location = { lat, lon };
    $("location-dialog").close();
    renderPending();
    $("composer-text").focus();
  });
  $("location-cancel").addEventListener("click", () => $("location-dialog").close());
  $("tab-messages").addEventListener("click", () => setView("messages"));
  $("tab-tasks").addEventListener("click", () => setView("tasks"));
  $("task-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const title = $("task-title").value.trim();
    if (!title || !state.current) return;
    try { await api("POST", `/api/partitions/${state.current.id}/tasks`, { title }); $("task-title").value = ""; await refreshCurrent(false); } catch (error) { showError(error); }
  });
  $("join-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = $("join-name").value.trim();
    if (!name) return;
    const body = { name };
    // A private room: its passphrase goes to this node only, which derives the room's keys.
    if ($("join-private").checked) body.passphrase = $("join-passphrase").value;
    try {
      const room = await api("POST", "/api/rooms", body);
      $("join-name").value = "";
      $("join-passphrase").value = "";
      $("join-private").checked = false;
      $("join-passphrase").hidden = true;
      await loadSidebar();
      await openChat(room.partition);
    } catch (error) { showError(error); }
  });
  $("join-private").addEventListener("change", () => {
    $("join-passphrase").hidden = !$("join-private").checked;
    if ($("join-private").checked) $("join-passphrase").focus();
  });
  $("leave-chat").addEventListener("click", askLeave);
  $("leave-form").addEventListener("submit", leave);
  $("leave-cancel").addEventListener("click", () => $("leave-dialog").close());
  $("mute-chat").addEventListener("click", () => toggleMute().catch(showError));
  $("notify-on").addEventListener("click", turnOnNotifications);
  $("notify-later").addEventListener("click", () => { localStorage.setItem("parley.notify-later", "yes"); offerNotifications(); });
  $("new-conversation").addEventListener("click", () => openNewConversation().catch(showError));
  $("browse-rooms").addEventListener("click", () => openBrowse().catch(showError));
  $("browse-refresh").addEventListener("click", () => renderBrowse().catch((error) => { $("browse-error").textContent = error.message; }));
  $("members-button").addEventListener("click", () => openMembers().catch(showError));
  let addTimer = null;
  $("add-member-search").addEventListener("input", () => {
    clearTimeout(addTimer);
    addTimer = setTimeout(() => searchToAdd($("add-member-search").value.trim()).catch(showError), 150);
  });
  $("conversation-form").addEventListener("submit", createConversation);
  $("conversation-cancel").addEventListener("click", () => $("conversation-dialog").close());
  let searchTimer = null;
  $("member-search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => searchMembers($("member-search").value.trim()).catch(showError), 150);
  });
  $("profile-button").addEventListener("click", () => openProfile().catch(showError));
  $("profile-form").addEventListener("submit", saveProfile);
  $("profile-cancel").addEventListener("click", () => $("profile-dialog").close());
  $("wipe-button").addEventListener("click", wipeNode);
  $("devices-button").addEventListener("click", () => openDevices().catch(showError));
  $("pair-start").addEventListener("click", startPairing);
  $("pair-cancel").addEventListener("click", cancelPairing);
  $("avatar-input").addEventListener("change", uploadAvatar);
  $("nick-form").addEventListener("submit", submitNick);
  $("nick-dialog").addEventListener("cancel", (event) => event.preventDefault());
  $("menu-toggle").addEventListener("click", toggleSidebar);
  document.addEventListener("keydown", onKey);
  document.addEventListener("mousedown", (event) => {
    if (!$("emoji-picker").hidden && !event.target.closest("#emoji-picker")) closeEmojiPicker(false);
  });
  document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") refreshCurrent(false).catch(() => {}); });
}

async function start() {
  try {
    await loadMe();
  } catch (error) {
    if (error.status === 0) {
      $("connection").textContent = "node not running";
      $("chat-title").textContent = NODE_DOWN;
      setTimeout(() => start().catch(showError), 2000);
    } else if (error.status === 401) {
      $("connection").textContent = "not signed in";
      $("chat-title").textContent = SIGNED_OUT;
    } else {
      showError(error);
    }
    return;
  }
  $("chat-title").textContent = "…";
  if (!state.me.nick) {
    openDialog($("nick-dialog"), $("nick-input"));
    return;
  }
  await loadSidebar();
  offerNotifications();
  if (state.rooms.length === 0 && state.conversations.length === 0) {
    await api("POST", "/api/rooms", { name: "lobby" });
    await loadSidebar();
  }
  const remembered = localStorage.getItem("parley.chat");
  const first = chats().find((c) => c.id === remembered) || chats()[0];
  if (first) await openChat(first.id);
  if (!start.connected) { start.connected = true; connectEvents(); }
  document.body.dataset.ready = "true";
}

wire();
start().catch(showError);

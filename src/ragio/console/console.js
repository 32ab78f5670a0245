// The owner's console: one page of plain JavaScript over the service's own HTTP API.
// No build step, no third-party code, nothing inline (the Content-Security-Policy
// allows scripts and styles from this origin only). Text from the API is always set
// as text (textContent), never parsed as HTML.
"use strict";

const KEY = "ragchat-api-key"; // sessionStorage: this tab only, never a URL
const PAGES = {};
// leave: what the page shown stops when another is shown (the inbox's live reading)
const state = { leave: null, roleNames: {} };

// ------------------------------------------------------------------ helpers

function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else if (name in node && name !== "list" && !name.includes("-")) node[name] = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// node's children replaced by these, those null, undefined or false left out (a part of
// the page shown only sometimes)
function put(node, ...children) {
  node.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

let fieldCount = 0;
function field(label, input) {
  const id = input.id || `field-${++fieldCount}`;
  input.id = id;
  return el("div", { className: "field" }, el("label", { htmlFor: id, text: label }), " ", input);
}

function say(message) {
  const status = document.getElementById("status");
  status.textContent = message;
  clearTimeout(say.timer);
  say.timer = setTimeout(() => { status.textContent = ""; }, 5000);
}

class ApiError extends Error {
  constructor(status, body) {
    const detail = body && (body.detail || (body.error && body.error.message));
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function headers(extra) {
  const key = sessionStorage.getItem(KEY);
  return Object.assign(key ? { "X-API-Key": key } : {}, extra || {});
}

async function api(method, path, body) {
  const options = { method, headers: headers() };
  if (body instanceof FormData) options.body = body;
  else if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = { detail: text }; }
  if (response.status === 401) { signOut("The key was not accepted; sign in again."); }
  if (!response.ok) throw new ApiError(response.status, data);
  return { status: response.status, data, location: response.headers.get("Location") };
}

function firstList(data) {
  if (Array.isArray(data)) return data;
  for (const value of Object.values(data || {})) if (Array.isArray(value)) return value;
  return [];
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return isNaN(date) ? iso : date.toLocaleString();
}

const ms = (n) => `${Number(n).toLocaleString()} ms`;

// A table of rows; with none, the page's empty state: what the list is for and the first
// step (``empty``: text or a node), instead of a bare "none". On a phone each row is a
// card, each cell named by its column (data-label).
function table(caption, columns, rows, empty) {
  if (!rows.length) return emptyState(empty || `${caption}: none yet.`);
  return el("div", { className: "table-wrap" },
    el("table", {},
      el("caption", { className: "muted", text: caption }),
      el("thead", {}, el("tr", {}, columns.map(([title]) => el("th", { scope: "col", text: title })))),
      el("tbody", {}, rows.map((row) => el("tr", {}, columns.map(([title, cell]) => {
        const value = cell(row);
        return el("td", { "data-label": title }, value instanceof Node ? value : String(value ?? ""));
      }))))));
}

// Keyset pages (``before`` → ``next_before``) read until ``wanted`` items or the last
// page: the items, and whether more are left.
async function pagesUntil(path, key, wanted, limit) {
  const found = [];
  let before = 0, more = false;
  for (;;) {
    const query = new URLSearchParams({ limit });
    if (before) query.set("before", before);
    const { data } = await api("GET", `${path}${path.includes("?") ? "&" : "?"}${query}`);
    found.push(...data[key]);
    more = Boolean(data.next_before);
    if (!more || found.length >= wanted) return { found, more };
    before = data.next_before;
  }
}

// "Show more" under a list read with pagesUntil, while more are left
function moreButton(id, more, showMore) {
  return el("div", { className: "more" },
    more ? el("button", { type: "button", className: "secondary", id, text: "Show more", onclick: showMore }) : null);
}

function emptyState(what) {
  return el("div", { className: "empty" }, typeof what === "string" ? el("p", { text: what }) : what);
}

// "Showing 21–40 of 54" with Previous and Next; a list never stops without saying so
function pager({ id, first, shown, total, previous, next }) {
  const label = total === 0 ? "None" : shown === 0 ? `None here, of ${total}`
    : `Showing ${first + 1}–${first + shown} of ${total}`;
  return el("div", { className: "pager", id, role: "navigation", "aria-label": "Pages of the list" },
    el("span", { className: "muted", text: label }),
    el("button", { type: "button", className: "secondary", text: "Previous", disabled: !previous, onclick: previous }),
    el("button", { type: "button", className: "secondary", text: "Next", disabled: !next, onclick: next }));
}

// Server-sent events from a fetch response's body (fetch: EventSource can neither POST nor
// send the key): heard(name, data) for each event whose data is JSON; ``id`` fields are
// passed to seen(id). Resolves when the stream ends.
async function readEvents(body, heard, seen) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        if (colon === 0) continue; // a comment: the stream kept alive
        const [key, rest] = colon < 0 ? [line, ""] : [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, "")];
        if (key === "event") name = rest;
        else if (key === "data") data.push(rest);
        else if (key === "id" && seen) seen(rest);
      }
      if (!data.length) continue;
      let parsed = null;
      try { parsed = JSON.parse(data.join("\n")); } catch (_) { continue; }
      heard(name, parsed);
    }
  }
}

function failure(error) {
  return el("p", { className: "error", role: "alert", text: error.message });
}

async function guarded(area, work) {
  try { await work(); } catch (error) {
    if (error instanceof ApiError && error.status === 401) return;
    put(area, failure(error));
  }
}

// ------------------------------------------------------------------ sign in

function signOut(message) {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem("ragchat-conversation"); // the chat's: another may sign in next
  show(message);
}

async function signedIn() {
  const response = await fetch("/usage", { headers: headers() });
  return response.status !== 401;
}

function leave() {
  if (state.leave) state.leave();
  state.leave = null;
}

async function show(message) {
  leave();
  const ok = await signedIn();
  document.getElementById("sign-in").hidden = ok;
  document.getElementById("nav").hidden = !ok;
  document.getElementById("sign-out").hidden = !ok || !sessionStorage.getItem(KEY);
  document.getElementById("menu-toggle").hidden = !ok;
  document.getElementById("sign-in-error").textContent = ok ? "" : (message || "");
  if (!ok) {
    document.getElementById("page").replaceChildren();
    document.getElementById("api-key").focus();
    return;
  }
  route();
}

// ------------------------------------------------------------------ pages

// #page or #page/<id>; a leading slash too (the owner's notifications link to #/inbox/<id>)
function route() {
  const [name, ...rest] = (location.hash || "#chat").slice(1).replace(/^\//, "").split("/");
  const page = PAGES[name] ? name : "chat";
  waiting();
  fold(true);
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === `#${page}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const area = document.getElementById("page");
  put(area);
  document.title = `${page[0].toUpperCase()}${page.slice(1)} · ragchat console`;
  guarded(area, () => PAGES[page](area, rest.join("/")));
}

// the roles, for pickers; their names, to say in plain words who answered
// the pages' menu on a phone: folded away but for its button, and after each choice
function fold(folded) {
  document.getElementById("nav").classList.toggle("folded", folded);
  document.getElementById("menu-toggle").setAttribute("aria-expanded", String(!folded));
}

async function roleOptions(select, blank) {
  const { data } = await api("GET", "/employees");
  const roles = firstList(data);
  for (const r of roles) state.roleNames[r.identifier] = r.display_name;
  put(select, el("option", { value: "", text: blank }),
    ...roles.map((r) => el("option", { value: r.identifier, text: r.display_name })));
}

// ------------------------------------------------------------------ the chat

// The owner's own conversation with the service: the turns so far, a question box (Enter
// sends, Shift+Enter is a new line), each answer streamed (POST /chat/stream) with its
// sources numbered 1..n as the answer cites them, who answered in plain words, and the
// thumbs. The conversation is kept for this tab (sessionStorage) until "New conversation".

const CONVERSATION = "ragchat-conversation";
const MARKERS = /\[(\d+(?:\s*,\s*\d+)*)\]/g;
const PROVIDERS = { openai: "OpenAI", anthropic: "Anthropic", genai: "Google Gemini", gemini: "Google Gemini",
  ollama: "Ollama", openrouter: "OpenRouter" };

// The answer with its source markers renumbered 1..n in the order the text first cites
// them, and its sources in that order (any the text never cites after them).
function renumbered(answer, citations) {
  const known = new Map(citations.map((c) => [c.number, c]));
  const order = [];
  const numbers = (list) => list.split(/\s*,\s*/).map(Number);
  for (const match of answer.matchAll(MARKERS)) {
    for (const n of numbers(match[1])) if (known.has(n) && !order.includes(n)) order.push(n);
  }
  for (const c of citations) if (!order.includes(c.number)) order.push(c.number);
  const to = new Map(order.map((n, i) => [n, i + 1]));
  const text = answer.replace(MARKERS, (whole, list) => {
    const renamed = numbers(list).filter((n) => to.has(n)).map((n) => to.get(n));
    return renamed.length ? `[${renamed.join(", ")}]` : whole;
  });
  return { text, sources: order.map((n) => Object.assign({}, known.get(n), { number: to.get(n) })) };
}

// who answered and how, in the owner's words
function answeredBy(turn) {
  const who = turn.role ? `${state.roleNames[turn.role] || turn.role} answered` : "Answered";
  if (turn.held) return "A person answers this conversation now: your message waits for them.";
  if (turn.provider === "extractive") return `${who} offline, quoting your documents: no AI model is set up (see Status).`;
  if (turn.provider) return `${who} with ${PROVIDERS[turn.provider] || turn.provider}${turn.model ? ` ${turn.model}` : ""}.`;
  if (turn.citations.some((c) => c.owner_answer_id)) return `${who} with your own answer (Gaps › Your answers).`;
  if (!turn.citations.length) return `${who} without asking an AI model: nothing in your documents answers it.`;
  return `${who} without asking an AI model.`;
}

function sourceItem(c) {
  const where = c.heading_path && c.heading_path.length ? ` › ${c.heading_path.join(" › ")}` : "";
  const name = c.source_url ? el("a", { href: c.source_url, target: "_blank", rel: "noopener noreferrer", text: c.document_name })
    : el("strong", { text: c.document_name });
  return el("li", { value: c.number }, name, where, el("br"), el("span", { className: "muted", text: c.snippet }));
}

// the AI's side of a turn, once answered: the text, its sources, who answered, the thumbs
function fillAnswer(box, turn, conversationId) {
  const { text, sources } = renumbered(turn.answer || "", turn.citations || []);
  put(box, 
    el("p", { className: "who" }, el("strong", { text: "Answer" })),
    el("p", { className: "text answer", text: text || "(no answer)" }),
    sources.length ? el("ol", { className: "sources", "aria-label": "Sources" }, sources.map(sourceItem)) : null,
    el("p", { className: "answered-by", text: answeredBy(turn) }),
    conversationId && turn.turn && !turn.held ? rateAnswer(conversationId, turn.turn, turn.feedback, turn.feedback_comment) : null);
}

function chatTurn(question) {
  const answer = el("div", { className: "message from-ai" },
    el("p", { className: "who" }, el("strong", { text: "Answer" })),
    el("p", { className: "text answer typing", text: "" }));
  return { item: el("li", { className: "turn" },
    el("div", { className: "message from-owner" }, el("p", { className: "who" }, el("strong", { text: "You" })),
      el("p", { className: "text", text: question })), answer), answer };
}

// POST /chat/stream: the words as they come (onWords), then the answer as /chat gives it;
// a refusal before the first event, or an error event after it, is thrown
async function streamAnswer(body, onWords) {
  const response = await fetch("/chat/stream", { method: "POST",
    headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }), body: JSON.stringify(body) });
  if (response.status === 401) signOut("The key was not accepted; sign in again.");
  if (!response.ok || !response.body) {
    let problem = null;
    try { problem = await response.json(); } catch (_) { /* not JSON */ }
    throw new ApiError(response.status, problem);
  }
  let words = "", done = null, broke = null;
  await readEvents(response.body, (name, data) => {
    if (name === "token") { words += data.text; onWords(words); } else if (name === "done") done = data;
    else if (name === "error") broke = data;
  });
  if (done) return done;
  throw new ApiError((broke && broke.status) || 502, broke || { detail: "The answer broke off; ask again." });
}

PAGES.chat = async (area) => {
  const question = el("textarea", { id: "question", name: "question", rows: 2, required: true, maxLength: 4000 });
  const role = el("select", { id: "chat-role", name: "role" });
  const log = el("ol", { id: "chat-log", className: "chat-log", "aria-label": "The conversation" });
  const thread = el("p", { className: "muted", id: "thread" });
  const ask = el("button", { type: "submit", text: "Ask" });
  let conversation = Number(sessionStorage.getItem(CONVERSATION)) || null;
  const showThread = (turns) => {
    thread.textContent = conversation ? `Conversation ${conversation}${turns ? ` · ${turns} ${turns === 1 ? "turn" : "turns"}` : ""}: a question follows up on the answers above.`
      : "A new conversation: ask anything your documents answer.";
  };
  const keep = (id) => {
    conversation = id;
    if (id) sessionStorage.setItem(CONVERSATION, String(id)); else sessionStorage.removeItem(CONVERSATION);
  };
  const send = async (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (!text || ask.disabled) return;
    ask.disabled = true;
    question.value = "";
    const { item, answer } = chatTurn(text);
    log.append(item);
    item.scrollIntoView({ block: "nearest" });
    const body = { question: text };
    if (role.value) body.role = role.value;
    if (conversation) body.conversation_id = conversation;
    try {
      const done = await streamAnswer(body, (words) => { answer.querySelector(".answer").textContent = words; });
      keep(done.conversation_id || conversation);
      fillAnswer(answer, done, done.conversation_id);
      showThread(log.children.length);
    } catch (error) {
      put(answer, failure(error));
      if (!question.value) question.value = text; // asked again with one key
    }
    ask.disabled = false;
    question.focus();
  };
  // Enter sends; Shift+Enter is a new line
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) send(event);
  });
  const restart = () => { keep(null); put(log); showThread(0); question.focus(); };
  area.append(
    el("h2", { text: "Chat" }),
    el("div", { className: "card" }, thread, log,
      el("form", { className: "stack", id: "chat-form", onsubmit: send },
        field("Your question (Enter sends, Shift+Enter for a new line)", question),
        el("div", { className: "row" }, field("Answer as", role), ask,
          el("button", { type: "button", className: "secondary", id: "new-conversation", text: "New conversation", onclick: restart })))));
  await roleOptions(role, "The service itself (no role)");
  showThread(0);
  if (conversation) {  // the conversation of this tab, shown again
    const shown = conversation;
    try {
      const { data } = await api("GET", `/conversations/${shown}`);
      // begun anew meanwhile: its turns are not this conversation's; asked meanwhile:
      // the turns read come before the one asked
      if (conversation !== shown) return;
      if (data.role && !log.children.length) role.value = data.role;
      log.prepend(...data.turns.map((t) => {
        if (t.author === "person") {
          return el("li", { className: "turn" }, el("div", { className: "message from-person" },
            el("p", { className: "who" }, el("strong", { text: "A person" })), el("p", { className: "text", text: t.answer })));
        }
        const { item, answer } = chatTurn(t.question);
        fillAnswer(answer, Object.assign({}, t, { held: t.outcome === "to_person" }), data.id);
        return item;
      }));
      showThread(log.children.length);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404 && conversation === shown) restart(); else throw error;
    }
  }
  question.focus();
};

// 👍 / 👎 under an answer of the chat (POST /conversations/{id}/turns/{turn}/feedback);
// 👎 asks what was wrong first (optional, sent with the rating)
function rateAnswer(conversationId, turn, rated, ratedComment) {
  const outcome = el("span", { className: "rating-outcome", role: "status" });
  const comment = el("textarea", { className: "rating-comment", name: "comment", maxLength: 1000 });
  const thumbs = {};
  const pressed = (rating) => {
    for (const [name, button] of Object.entries(thumbs)) button.setAttribute("aria-pressed", String(name === rating));
  };
  const send = async (rating) => {
    const body = { rating };
    if (rating === "down" && comment.value.trim()) body.comment = comment.value;
    try {
      await api("POST", `/conversations/${conversationId}/turns/${turn}/feedback`, body);
      pressed(rating);
      why.hidden = true;
      outcome.textContent = `Rated ${RATINGS[rating]}${body.comment ? `: ${body.comment.trim()}` : ""}.`;
    } catch (error) { outcome.textContent = `Not rated: ${error.message}`; }
  };
  const why = el("form", { className: "stack rating-form", hidden: true,
    onsubmit: (e) => { e.preventDefault(); send("down"); } },
  field("What was wrong? (optional)", comment),
  el("div", {}, el("button", { type: "submit", text: "Rate 👎 down" })));
  thumbs.up = el("button", { type: "button", className: "secondary", text: "👍", "aria-label": "Rate the answer up",
    "aria-pressed": "false", onclick: () => send("up") });
  thumbs.down = el("button", { type: "button", className: "secondary", text: "👎", "aria-label": "Rate the answer down",
    "aria-pressed": "false", onclick: () => { why.hidden = false; comment.focus(); } });
  if (rated) {
    pressed(rated);
    outcome.textContent = `Rated ${RATINGS[rated] || rated}${ratedComment ? `: ${ratedComment}` : ""}.`;
  }
  return el("div", { className: "rating" }, thumbs.up, " ", thumbs.down, " ", outcome, why);
}

const DOCUMENTS_PER_PAGE = 20;

PAGES.documents = async (area) => {
  const list = el("div", { id: "document-list" });
  const search = el("input", { id: "document-search", type: "search", name: "q" });
  const file = el("input", { id: "document-file", type: "file", name: "file", required: true,
    accept: ".txt,.md,.html,.htm,.pdf,.docx,.csv,.png,.jpg,.jpeg,.tif,.tiff" });
  const progress = el("progress", { id: "upload-progress", max: 100, value: 0, hidden: true });
  const outcome = el("p", { id: "upload-outcome", role: "status" });
  // a large upload is a background job: it may be cancelled while it is read and indexed
  const cancel = el("button", { id: "upload-cancel", type: "button", className: "secondary",
    text: "Cancel upload", hidden: true });
  let offset = 0;
  const load = async () => {
    const query = new URLSearchParams({ limit: DOCUMENTS_PER_PAGE, offset, order: "newest" });
    const named = search.value.trim();
    if (named) query.set("q", named);
    const { data } = await api("GET", `/documents?${query}`);
    if (!data.documents.length && offset > 0) { offset = Math.max(0, offset - DOCUMENTS_PER_PAGE); return load(); }
    const turn = (to) => () => { offset = to; guarded(list, load); };
    const empty = named ? `No document's name contains “${named}”.`
      : el("div", {}, el("p", { text: "No documents yet. Answers come from your documents: upload a file above (a price list, an FAQ, your terms), or add a website on Websites." }));
    put(list, table("Documents, newest first", [
      ["Name", (d) => (d.source_url ? el("a", { href: d.source_url, target: "_blank", rel: "noopener noreferrer", text: d.name }) : d.name)],
      ["Chunks", (d) => d.chunk_count],
      ["Size", (d) => `${Math.ceil((d.size_bytes || 0) / 1024)} KB`],
      ["Added", (d) => when(d.created_at)],
      ["", (d) => el("div", { className: "row" },
        el("button", { type: "button", className: "secondary", text: "Rename",
          "aria-label": `Rename ${d.name}`, onclick: async () => {
            const name = prompt(`New name for ${d.name}:`, d.name);
            if (name === null || !name.trim() || name.trim() === d.name) return;
            await guarded(list, async () => {
              await api("PATCH", `/documents/${d.id}`, { name });
              await load();
              say(`Renamed ${d.name} to ${name.trim()}.`);
            });
          } }),
        el("button", { type: "button", className: "danger", text: "Delete",
          "aria-label": `Delete ${d.name}`, onclick: async () => {
            if (!confirm(`Delete ${d.name}? Answers stop citing it.`)) return;
            await guarded(list, async () => { await api("DELETE", `/documents/${d.id}`); await load(); say(`Deleted ${d.name}.`); });
          } }))],
    ], data.documents, empty),
    data.total ? pager({ id: "document-pages", first: offset, shown: data.documents.length, total: data.total,
      previous: offset > 0 ? turn(Math.max(0, offset - DOCUMENTS_PER_PAGE)) : null,
      next: data.next ? turn(offset + data.documents.length) : null }) : null);
  };
  const poll = async (url) => {
    for (;;) {
      const { data } = await api("GET", url);
      if (data.chunks_total) {
        progress.value = Math.round((100 * data.chunks_done) / data.chunks_total);
        outcome.textContent = `Reading and indexing it: ${data.chunks_done} of ${data.chunks_total} passages…`;
      }
      if (["done", "failed", "cancelled"].includes(data.status)) return data;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };
  const added = (data) => {
    const name = data.name || file.files[0].name;
    if (data.duplicate) return `Already there: ${name} (the same text).`;
    if (data.replaced && data.replaced.length) return `Replaced ${name} with the new version.`;
    return `Added ${name}.`;
  };
  // A name a stored document of other content holds: the service refuses (409 naming
  // it) unless asked to replace; the owner is asked before anything is deleted.
  const askToReplace = (problem) => problem && problem.status === 409 && problem.existing_id &&
    confirm(`A different document named ${file.files[0].name} is stored. Replace it with this file? The stored one is deleted.`);
  const refused = (problem) => (problem && problem.status === 409 && problem.existing_id
    ? `Not uploaded: a different document named ${file.files[0].name} is stored; rename one of them to keep both.`
    : `Failed: ${(problem && problem.detail) || "see the log"}`);
  const send = (replace) => {
    const form = new FormData();
    form.append("file", file.files[0]);
    if (replace) form.append("replace", "true");
    const request = new XMLHttpRequest(); // fetch cannot report upload progress
    request.open("POST", "/documents");
    for (const [name, value] of Object.entries(headers())) request.setRequestHeader(name, value);
    progress.hidden = false;
    progress.value = 0;
    outcome.textContent = "Uploading…";
    request.upload.onprogress = (e) => {
      if (e.lengthComputable) progress.value = Math.round((100 * e.loaded) / e.total);
    };
    request.onload = async () => {
      let data = {};
      try { data = JSON.parse(request.responseText); } catch (_) { /* not JSON */ }
      let problem = null;
      if (request.status === 202 && request.getResponseHeader("Location")) {
        const job = request.getResponseHeader("Location");
        outcome.textContent = "Uploaded; reading and indexing it…";
        cancel.hidden = false;
        cancel.onclick = async () => {
          cancel.hidden = true;
          try { await api("DELETE", `/jobs/${job.split("/").pop()}`); } catch (error) { say(`Not cancelled: ${error.message}`); }
        };
        try { data = await poll(job); } catch (error) { data = { detail: error.message }; }
        cancel.hidden = true;
        if (data.status === "done") outcome.textContent = added(data.document || {});
        else if (data.status === "cancelled") outcome.textContent = "Cancelled: nothing of it was stored.";
        else problem = data.problem || { detail: data.detail };
      } else if (request.status >= 200 && request.status < 300) {
        outcome.textContent = added(data);
      } else {
        problem = Object.assign({ status: request.status, detail: request.statusText }, data);
      }
      progress.value = 100;
      if (problem && !replace && askToReplace(problem)) { send(true); return; }
      if (problem) outcome.textContent = refused(problem);
      offset = 0; // the newest first: the file just sent
      await guarded(list, load);
    };
    request.onerror = () => { outcome.textContent = "Failed: the upload did not reach the service."; };
    request.send(form);
  };
  const upload = (event) => {
    event.preventDefault();
    if (file.files.length) send(false);
  };
  area.append(
    el("h2", { text: "Documents" }),
    el("form", { className: "stack card", id: "upload-form", onsubmit: upload },
      field("File (txt, md, html, pdf, docx, csv, png, jpg, tif)", file),
      el("p", { className: "muted", text: "A file with the name of a stored document of other content replaces it only if you say so." }),
      el("div", {}, el("button", { type: "submit", text: "Upload" })), progress, outcome, cancel),
    el("form", { className: "row", role: "search", onsubmit: (e) => { e.preventDefault(); offset = 0; guarded(list, load); } },
      field("Find by name", search), el("button", { type: "submit", className: "secondary", text: "Find" })),
    list);
  await load();
};

// a turn's rating of its answer (POST /conversations/{id}/turns/{turn}/feedback)
const RATINGS = { up: "👍 up", down: "👎 down" };
// a conversation's mode (docs/handoff.md): who answers in it
const MODES = { human: "With a person", ai: "With the AI", closed: "Closed" };

// Who wrote what in a turn: the customer's question and the AI's answer (author ai), a
// customer's message for a person (customer), or a person's message (person).
function messages(t) {
  if (t.author === "person") {
    return [{ from: "person", who: t.person === "console" ? "You" : `You (${t.person || "a person"})`, text: t.answer }];
  }
  const asked = { from: "customer", who: "Customer", text: t.question };
  return t.author === "customer" ? [asked] : [asked, { from: "ai", who: "AI", text: t.answer || "(no answer)" }];
}

const NOTES = { handed_off: "handed to a person", not_delivered: "not delivered" };

// a turn's stages in the order a turn reaches them (GET /conversations/{id}: timings)
const STAGES = [["language_ms", "language"], ["live_ms", "live data"], ["embedding_ms", "embedding"],
  ["search_ms", "search"], ["graph_ms", "graph"], ["model_ms", "model"], ["action_ms", "action"],
  ["reply_ms", "reply"]];

// How long a turn took, then each stage it spent a millisecond or more in, the model's
// first streamed words beside it: "1,240 ms · search 12 ms · model 1,180 ms (first token 310 ms)"
function turnTimes(timings) {
  const parts = timings.answer_ms !== undefined ? [ms(timings.answer_ms)] : [];
  const first = timings.first_token_ms !== undefined ? `first token ${ms(timings.first_token_ms)}` : null;
  for (const [key, name] of STAGES) {
    if (!timings[key]) continue; // not reached, or under a millisecond
    parts.push(key === "model_ms" && first ? `${name} ${ms(timings[key])} (${first})` : `${name} ${ms(timings[key])}`);
  }
  if (first && !timings.model_ms) parts.push(first);
  return parts.join(" · ");
}

const CONVERSATIONS_PER_PAGE = 20;
const CHANNELS = ["chat", "openai", "telegram", "whatsapp", "discord", "web", "voice"];
const OUTCOMES = { answered: "answered", not_found: "nothing found to answer with", limited: "stopped by a budget",
  failed: "failed", interrupted: "interrupted", "hung up": "the caller hung up", handed_off: "handed to a person",
  to_person: "waiting for a person", sent: "sent", not_delivered: "not delivered" };

// every conversation on every channel, found by what was said in it, its channel, role and
// dates, a page at a time (latest begun first), each read in place
PAGES.conversations = async (area) => {
  const text = el("input", { id: "conversation-q", type: "search", maxLength: 200 });
  const channel = el("select", { id: "conversation-channel" },
    ["", ...CHANNELS].map((c) => el("option", { value: c, text: c || "All channels" })));
  const role = el("select", { id: "conversation-role" });
  const since = el("input", { id: "conversation-since", type: "date" });
  const until = el("input", { id: "conversation-until", type: "date" });
  const list = el("div", { id: "conversation-list" });
  const detail = el("div", { id: "conversation-detail", tabIndex: -1 });
  const open = async (id) => {
    const { data } = await api("GET", `/conversations/${id}`);
    put(detail, el("h3", { text: `Conversation ${data.id} on ${data.channel}` }),
      data.mode && data.mode !== "ai" ? el("p", {}, `${MODES[data.mode] || data.mode}: `,
        el("a", { href: `#inbox/${data.id}`, text: "answer it in the inbox" })) : null,
      ...data.turns.map((t) => el("div", { className: "card" },
        messages(t).map((m) => el("p", { className: m.from === "customer" ? null : "answer" },
          el("strong", { text: `${m.who}: ` }), m.text)),
        t.search_question ? el("p", { className: "muted", text: `Searched as: ${t.search_question}` }) : null,
        el("p", { className: "muted", text: [OUTCOMES[t.outcome] || t.outcome,
          t.provider === "extractive" ? "offline" : t.provider ? `${PROVIDERS[t.provider] || t.provider} ${t.model || ""}`.trim() : null,
          when(t.created_at)].filter(Boolean).join(" · ") }),
        turnTimes(t.timings) ? el("p", { className: "muted timings", text: turnTimes(t.timings) }) : null,
        t.feedback ? el("p", { className: "feedback" }, `Rated ${RATINGS[t.feedback] || t.feedback} · ${when(t.feedback_at)}`,
          t.feedback_comment ? el("q", { className: "feedback-comment", text: t.feedback_comment }) : null) : null,
        t.citations.length ? el("ul", {}, t.citations.map((c) => el("li", { text: `[${c.number}] ${c.document_name}` }))) : null)));
    detail.focus();
  };
  // keyset pages: the cursors of the pages before this one, to go back
  let cursors = [], before = 0;
  const filters = () => {
    const query = new URLSearchParams({ limit: CONVERSATIONS_PER_PAGE });
    if (text.value.trim()) query.set("q", text.value.trim());
    for (const [name, input] of [["channel", channel], ["role", role]]) if (input.value) query.set(name, input.value);
    if (since.value) query.set("since", since.value);
    if (until.value) { // the whole day chosen: until its end
      const next = new Date(`${until.value}T00:00:00Z`);
      next.setUTCDate(next.getUTCDate() + 1);
      query.set("until", next.toISOString().slice(0, 10));
    }
    return query;
  };
  const load = async () => {
    const query = filters();
    if (before) query.set("before", before);
    const { data } = await api("GET", `/conversations?${query}`);
    const first = cursors.length * CONVERSATIONS_PER_PAGE;
    const filtered = [...query.keys()].some((k) => !["limit", "before"].includes(k));
    put(list, table("Conversations, latest begun first", [
      ["First question", (c) => el("button", { type: "button", className: "link", text: c.first_question || `Conversation ${c.id}`,
        "aria-label": `Read conversation ${c.id}`, onclick: () => guarded(detail, () => open(c.id)) })],
      ["Last message", (c) => lastMessage(c)],
      ["Channel", (c) => c.channel],
      ["Role", (c) => (c.role ? state.roleNames[c.role] || c.role : "—")],
      ["Turns", (c) => c.turn_count],
      ["Last active", (c) => when(c.updated_at)],
      ["Mode", (c) => (c.mode === "human" ? el("a", { href: `#inbox/${c.id}`, text: MODES.human }) : MODES[c.mode] || "—")],
    ], data.conversations, filtered ? "No conversation matches these filters."
      : "No conversations yet. Every question asked on any channel (this console's chat, the API, Telegram, WhatsApp, Discord, the website chat, calls) is kept here."),
    data.total || data.conversations.length ? pager({ id: "conversation-pages", first, shown: data.conversations.length,
      total: data.total ?? data.conversations.length,
      previous: cursors.length ? () => { before = cursors.pop(); guarded(list, load); } : null,
      // a full last page still has a next_before: the total says there is no more
      next: data.next_before && first + data.conversations.length < (data.total ?? Infinity)
        ? () => { cursors.push(before); before = data.next_before; guarded(list, load); } : null }) : null);
  };
  const search = (event) => { if (event) event.preventDefault(); cursors = []; before = 0; guarded(list, load); };
  for (const input of [channel, role, since, until]) input.addEventListener("change", search);
  area.append(el("h2", { text: "Conversations" }),
    el("form", { className: "row", role: "search", id: "conversation-filters", onsubmit: search },
      field("Said in it", text), field("Channel", channel), field("Role", role), field("Active from", since),
      field("Active until", until), el("button", { type: "submit", className: "secondary", text: "Find" })),
    list, detail);
  await roleOptions(role, "Any role");
  await load();
};

// ------------------------------------------------------------------ the inbox

// The conversations handed to a person (docs/handoff.md), answered here; kept current by
// the service's events while the page is shown.

// the navigation's count of the conversations waiting for a person
async function waiting() {
  const badge = document.getElementById("inbox-count");
  try {
    const { data } = await api("GET", "/conversations?mode=human&limit=100");
    const count = data.conversations.filter((c) => c.waiting_since).length;
    put(badge, `${count}${data.next_before ? "+" : ""}`, el("span", { className: "sr", text: " waiting" }));
    badge.hidden = !count;
  } catch (_) { /* shown again with the next page */ }
}

// work run once at a time: asked again while running, it runs once more after
function coalesced(work) {
  let running = null, again = false;
  return () => {
    if (running) { again = true; return running; }
    running = (async () => {
      do { again = false; await work(); } while (again);
    })().finally(() => { running = null; });
    return running;
  };
}

// Reads GET /conversations/events (server-sent events; fetch, since EventSource cannot
// send the key) and calls heard(name, data) for each event, and heard(null) on each
// (re)connection, when events may have been missed. After a drop it reconnects, waiting
// 1 s, then twice as long each time up to 30 s. Returns the function that stops it.
function follow(heard) {
  const stop = new AbortController();
  const pause = (ms) => new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stop.signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });
  (async () => {
    let delay = 1000, last = null;
    while (!stop.signal.aborted) {
      try {
        const sent = headers({ Accept: "text/event-stream" });
        if (last) sent["Last-Event-ID"] = last;
        const response = await fetch("/conversations/events", { headers: sent, signal: stop.signal });
        if (response.status === 401) { signOut("The key was not accepted; sign in again."); return; }
        if (!response.ok || !response.body) throw new Error(`HTTP ${response.status}`);
        delay = 1000; // connected: the next drop waits 1 s again
        heard(null);
        await readEvents(response.body, heard, (id) => { last = id; });
      } catch (_) { /* dropped: read again after the pause */ }
      if (stop.signal.aborted) return;
      await pause(delay);
      delay = Math.min(2 * delay, 30000);
    }
  })();
  return () => stop.abort();
}

function sortedForInbox(conversations) {
  // the ones waiting first, the longest waiting first; then the latest active
  const time = (iso) => (iso ? Date.parse(iso) : NaN);
  return conversations.slice().sort((a, b) => {
    const wa = time(a.waiting_since), wb = time(b.waiting_since);
    if (!isNaN(wa) || !isNaN(wb)) return isNaN(wa) ? 1 : isNaN(wb) ? -1 : wa - wb;
    return time(b.updated_at) - time(a.updated_at);
  });
}

// the last thing written in a conversation, for the list
const WRITERS = { customer: "Customer", ai: "AI", person: "You" };
function lastMessage(conversation) {
  const last = conversation.last_message;
  return last ? `${WRITERS[last.author] || last.author}: ${last.text}` : "";
}

// one conversation of the inbox: its messages, the reply box and the mode's buttons
function inboxConversation(view, id, changed) {
  const title = el("h3", { id: "inbox-title", text: `Conversation ${id}` });
  const mode = el("p", { id: "inbox-mode" });
  const transcript = el("ol", { id: "transcript", className: "transcript", "aria-label": "Messages" });
  const problem = el("p", { id: "inbox-error", className: "error", role: "alert" });
  const text = el("textarea", { id: "reply-text", name: "text", rows: 3, required: true });
  const send = el("button", { type: "submit", text: "Send" });
  const why = el("p", { id: "reply-disabled", className: "muted" });
  const history = el("ul", { id: "handoff-log" });
  let shown = -1;

  const refresh = coalesced(async () => {
    let data;
    try { ({ data } = await api("GET", `/conversations/${id}`)); } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) problem.textContent = error.message;
      return;
    }
    title.textContent = `Conversation ${data.id} on ${data.channel}`;
    mode.textContent = `${MODES[data.mode] || data.mode}${data.waiting_since ? ` · waiting since ${when(data.waiting_since)}` : ""}`;
    mode.dataset.mode = data.mode;
    put(transcript, ...data.turns.flatMap((t) => messages(t).map((m, i, all) =>
      el("li", { className: `message from-${m.from}` },
        el("p", { className: "who" }, el("strong", { text: m.who }), ` · ${when(t.created_at)}`),
        el("p", { className: "text", text: m.text }),
        i === all.length - 1 && NOTES[t.outcome] ? el("p", { className: `note ${t.outcome}`, text: NOTES[t.outcome] }) : null))));
    if (data.turns.length !== shown) transcript.scrollTop = transcript.scrollHeight;
    shown = data.turns.length;
    const reason = data.mode === "closed" ? "Closed: nobody answers it now; the customer's next message begins a new conversation."
      : data.channel === "voice" ? "A phone call cannot be answered in writing: call the customer back." : "";
    text.disabled = send.disabled = Boolean(reason);
    why.textContent = reason;
    takeOver.disabled = data.mode !== "ai";
    handBack.disabled = data.mode !== "human";
    close.disabled = data.mode === "closed";
    put(history, ...(data.handoff_log || []).map((h) => el("li", {
      text: `${when(h.at)} · ${h.event === "refused" ? "refused" : `${MODES[h.from_mode] || h.from_mode} → ${MODES[h.to_mode] || h.to_mode}`} · by ${h.by}${h.detail ? ` · ${h.detail}` : ""}` })));
  });

  // the outcome is said once the page shows it
  const act = async (work, done) => {
    problem.textContent = "";
    let failed = false;
    try { await work(); } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      problem.textContent = error.message;
      failed = true;
    }
    await refresh();
    changed();
    if (done && !failed) say(done);
  };
  const reply = (event) => {
    event.preventDefault();
    if (!text.value.trim() || send.disabled) return;
    send.disabled = true;
    let sent = false;
    act(async () => {
      const { data } = await api("POST", `/conversations/${id}/messages`, { text: text.value });
      text.value = "";
      sent = data.delivered;
      if (!sent) problem.textContent = `Kept in the conversation but not delivered: ${data.detail}`;
    }).then(() => { if (sent) say("Sent."); }).finally(() => { send.disabled = text.disabled; text.focus(); });
  };
  const moveTo = (to, done) => () => act(() => api("POST", `/conversations/${id}/mode`, { mode: to }), done);
  const takeOver = el("button", { type: "button", id: "take-over", text: "Take over", onclick: moveTo("human", "You answer it now.") });
  const handBack = el("button", { type: "button", id: "hand-back", className: "secondary", text: "Hand back to AI", onclick: moveTo("ai", "The AI answers it again.") });
  const close = el("button", { type: "button", id: "close-conversation", className: "danger", text: "Close", onclick: () => {
    if (confirm("Close this conversation? The customer's next message begins a new one, with the AI.")) moveTo("closed", "Closed.")();
  } });
  // Enter sends; Shift+Enter is a new line
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) reply(event);
  });
  put(view, title, mode,
    el("div", { className: "row" }, takeOver, " ", handBack, " ", close),
    transcript, problem,
    el("form", { className: "stack", id: "reply-form", onsubmit: reply },
      field("Your reply (Enter sends, Shift+Enter for a new line)", text), why,
      el("div", {}, send)),
    el("details", {}, el("summary", { text: "Who moved it" }), history));
  return refresh;
}

const INBOX_PAGE = 100;

PAGES.inbox = async (area, id) => {
  const filter = el("select", { id: "inbox-filter" },
    Object.entries(MODES).map(([value, text]) => el("option", { value, text })));
  const list = el("div", { id: "inbox-list" });
  const view = el("div", { id: "inbox-conversation", className: "card", tabIndex: -1, hidden: !id });
  let wanted = INBOX_PAGE, drawn = "";
  const load = coalesced(() => guarded(list, async () => {
    let found, more;
    try {
      ({ found, more } = await pagesUntil(`/conversations?mode=${filter.value}`, "conversations", wanted, INBOX_PAGE));
    } catch (error) { drawn = ""; throw error; } // the failure shown (guarded): drawn anew next time
    const read = sortedForInbox(found);
    // drawn again only when it changed: an event that changed nothing here (or the
    // stream's reconnection) leaves the links under the owner's pointer in place
    const now = JSON.stringify([filter.value, more, read]);
    if (now === drawn) return;
    drawn = now;
    put(list, read.length ? el("ul", { className: "inbox-list", "aria-label": MODES[filter.value] },
      read.map((c) => el("li", {}, el("a", { href: `#inbox/${c.id}`, "aria-current": String(c.id) === id ? "page" : null },
        el("span", {}, el("strong", { text: `Conversation ${c.id}` }), ` · ${c.channel}`),
        el("span", { className: "muted", text: c.waiting_since ? `waiting since ${when(c.waiting_since)}` : `last active ${when(c.updated_at)}` }),
        el("span", { className: "last", text: lastMessage(c) })))))
      : emptyState(filter.value === "human" ? "Nobody waits for a person. When a customer asks for one (or the AI hands a conversation over), it appears here, and you answer it here."
        : `${MODES[filter.value]}: none.`),
    moreButton("inbox-more", more, () => { wanted += INBOX_PAGE; load(); }));
  }));
  const refresh = id ? inboxConversation(view, id, () => { load(); waiting(); }) : null;
  state.leave = follow((name, data) => {
    load();
    waiting();
    if (refresh && (!name || String(data.conversation_id) === id)) refresh();
  });
  filter.addEventListener("change", load);
  if (id) document.title = `Inbox: conversation ${id} · ragchat console`;
  area.append(el("h2", { text: "Inbox" }),
    el("div", { className: id ? "inbox open" : "inbox" },
      el("div", {}, field("Show", filter), list), view));
  await Promise.all([load(), refresh && refresh()]);
};

PAGES.approvals = async (area) => {
  const settings = el("div", { id: "autonomy" });
  const pending = el("div", { id: "pending" });
  const log = el("div", { id: "action-log" });
  let wanted = 20;
  const load = async () => {
    const [{ data: autonomy }, { data: held }, { found: recent, more }] = await Promise.all([
      api("GET", "/autonomy"), api("GET", "/autonomy/pending"), pagesUntil("/autonomy/log", "entries", wanted, 50)]);
    const mode = el("select", { id: "autonomy-mode" },
      ["off", "semi", "full"].map((m) => el("option", { value: m, text: m, selected: autonomy.mode === m })));
    put(settings, el("form", { className: "row card", onsubmit: async (e) => {
      e.preventDefault();
      await guarded(settings, async () => { await api("POST", "/autonomy", { mode: mode.value }); await load(); say(`Autonomy is ${mode.value}.`); });
    } }, field("Autonomy", mode), el("button", { type: "submit", text: "Save" }),
      el("p", { className: "muted", text: `Owner for YES/NO: ${autonomy.approval_channel || "none"} ${autonomy.approval_target || ""}` })));
    const decide = (action, verb) => async () => {
      await guarded(pending, async () => {
        const { data } = await api("POST", `/autonomy/pending/${action.id}/${verb}`);
        await load();
        say(`Action ${data.id}: ${data.status}.`);
      });
    };
    put(pending, el("h3", { text: "Waiting for you" }), table("Held actions", [
      ["Action", (a) => a.summary],
      ["Role", (a) => a.role || "—"],
      ["Why held", (a) => a.reason],
      ["Expires", (a) => when(a.expires_at)],
      ["", (a) => el("span", {},
        el("button", { type: "button", text: "Approve", "aria-label": `Approve action ${a.id}`, onclick: decide(a, "approve") }), " ",
        el("button", { type: "button", className: "danger", text: "Reject", "aria-label": `Reject action ${a.id}`, onclick: decide(a, "reject") }))],
    ], firstList(held), "Nothing waits for you. With autonomy semi, the actions a role proposes (a refund, a message to send) wait here for your approval."));
    put(log, el("h3", { text: "Recent" }), table("The action log", [
      ["When", (r) => when(r.at || r.created_at)],
      ["Action", (r) => r.action_id || r.id],
      ["Event", (r) => r.event || r.status],
      ["Detail", (r) => r.detail || r.reason || ""],
    ], recent, "Nothing yet: actions the AI proposes, and what became of them, are logged here."),
    moreButton("log-more", more, () => { wanted += 50; guarded(log, load); }));
  };
  area.append(el("h2", { text: "Autonomy and approvals" }), settings, pending, log);
  await load();
};

const MEMORY_LIMIT = 500; // the API's most; a role holding more is told so

PAGES.roles = async (area) => {
  const role = el("select", { id: "role-select" });
  const about = el("div", { id: "role-about" });
  const profile = el("div", { id: "profile" });
  const showRole = async () => {
    if (!role.value) { put(about); return; }
    const [{ data: r }, { data: memory }] = await Promise.all([
      api("GET", `/employees/${role.value}`), api("GET", `/employees/${role.value}/memory?limit=${MEMORY_LIMIT}`)]);
    const text = el("textarea", { id: "memory-text", required: true, maxLength: 1000 });
    put(about, el("div", { className: "card" },
      el("h3", { text: r.display_name }),
      el("p", { text: r.personality }),
      el("p", { className: "muted", text: `Autonomy ${r.effective_autonomy || r.autonomy} · channels ${r.channels.join(", ")}${r.sensitive ? " · sensitive" : ""}` })),
    el("h3", { text: "Memory" }),
    el("form", { className: "stack", onsubmit: async (e) => {
      e.preventDefault();
      await guarded(about, async () => { await api("POST", `/employees/${role.value}/memory`, { text: text.value }); say("Remembered."); await showRole(); });
    } }, field("Add an instruction", text), el("div", {}, el("button", { type: "submit", text: "Add" }))),
    table("What this role remembers", [
      ["Text", (m) => m.text],
      ["Source", (m) => m.source],
      ["Importance", (m) => m.importance],
      ["", (m) => el("button", { type: "button", className: "danger", text: "Forget", "aria-label": `Forget memory ${m.id}`,
        onclick: async () => { await guarded(about, async () => { await api("DELETE", `/employees/${role.value}/memory/${m.id}`); await showRole(); }); } })],
    ], firstList(memory), "Nothing remembered yet: add an instruction above (a rule, a fact about the business)."),
    firstList(memory).length >= MEMORY_LIMIT ? el("p", { className: "muted", text: `The ${MEMORY_LIMIT} most important items are shown; this role holds more.` }) : null);
  };
  const showProfile = async () => {
    const { data } = await api("GET", "/profile");
    const inputs = {
      name: el("input", { maxLength: 120, value: data.name || "" }),
      description: el("textarea", { maxLength: 600, value: data.description || "" }),
      products: el("textarea", { maxLength: 600, value: data.products || "" }),
      tone: el("input", { maxLength: 200, value: data.tone || "" }),
      language: el("input", { maxLength: 10, value: data.language || "" }),
      // what a customer handed to a person is told when the business is closed
      opening_hours: el("input", { maxLength: 300, value: data.opening_hours || "", placeholder: "Mon-Fri 09:00-17:00; Sat 10:00-14:00" }),
      timezone: el("input", { maxLength: 40, value: data.timezone || "", placeholder: "Europe/Berlin" }),
    };
    const labels = { name: "Business name", opening_hours: "Opening hours", timezone: "Time zone" };
    put(profile, el("h3", { text: "Business profile" }),
      el("form", { className: "stack card", id: "profile-form", onsubmit: async (e) => {
        e.preventDefault();
        const body = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, v.value]));
        await guarded(profile, async () => { await api("PATCH", "/profile", body); say("Profile saved."); await showProfile(); });
      } }, Object.entries(inputs).map(([name, input]) => field(labels[name] || name[0].toUpperCase() + name.slice(1), input)),
      el("div", {}, el("button", { type: "submit", text: "Save" }), " ",
        el("button", { type: "button", className: "secondary", text: "Learn the summary now", onclick: async () => {
          await guarded(profile, async () => { await api("POST", "/profile/learn"); say("Summary learned."); await showProfile(); });
        } })),
      el("p", { className: "muted", text: `Learned summary: ${data.learned_summary || "not yet"}` })));
  };
  role.addEventListener("change", () => guarded(about, showRole));
  area.append(el("h2", { text: "Roles and profile" }), field("Role", role), about, profile);
  await roleOptions(role, "Choose a role");
  await showProfile();
};

PAGES.usage = async (area) => {
  const { data } = await api("GET", "/usage");
  const cap = (spent) => (spent.cap ? ` of ${spent.cap}` : " (no cap)");
  area.append(el("h2", { text: "Usage" }));
  if (!data.ledger) {  // nothing is recorded: no empty chart, the way to turn it on
    area.append(emptyState(el("div", {},
      el("p", { text: "The usage ledger is off, so the tokens the AI models spend are not recorded and the budgets cannot be held." }),
      el("p", {}, "To turn it on, set ", el("code", { text: "USAGE_LEDGER=true" }),
        " (and caps such as ", el("code", { text: "BUDGET_DAILY_TOKENS" }), ") in the service's settings and restart it."))));
    return;
  }
  const days = data.by_day.slice().reverse();
  const most = Math.max(1, ...days.map((d) => d.total_tokens));
  const width = 480, height = 160, bar = days.length ? width / days.length : width;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${width} ${height + 20}`);
  svg.setAttribute("class", "chart");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `Tokens per day over the last ${days.length} days; the most on one day: ${most}`);
  days.forEach((d, i) => {
    const h = Math.max(1, (d.total_tokens / most) * height);
    const rect = document.createElementNS(ns, "rect");
    rect.setAttribute("x", i * bar + 1); rect.setAttribute("y", height - h);
    rect.setAttribute("width", Math.max(1, bar - 2)); rect.setAttribute("height", h);
    const title = document.createElementNS(ns, "title");
    title.textContent = `${d.day}: ${d.total_tokens} tokens`;
    rect.append(title);
    svg.append(rect);
  });
  area.append(
    el("p", { text: `Today: ${data.today.tokens} tokens${cap(data.today)}. This month: ${data.this_month.tokens}${cap(data.this_month)}.` }),
    days.length ? el("figure", { className: "card" }, svg, el("figcaption", { className: "muted", text: "Tokens per day (UTC)" }))
      : emptyState("Nothing spent yet: the tokens appear here once an AI model answers."),
    table("This month by role", [["Role", (r) => r.role || "no role"], ["Calls", (r) => r.calls], ["Tokens", (r) => r.total_tokens]], data.this_month_by_role, "This month: no calls yet."),
    table("This month by provider", [["Provider", (r) => r.provider], ["Calls", (r) => r.calls], ["Tokens", (r) => r.total_tokens]], data.this_month_by_provider, "This month: no calls yet."));
};

// a call's turn by component, as the voice platforms show it (GET /voice/calls: stages)
const CALL_STAGES = [["transcript_ms", "transcript"], ["first_token_ms", "first token"],
  ["first_audio_ms", "speech's first byte"], ["voice_to_voice_ms", "voice to voice"]];
const callTimes = (stages) => CALL_STAGES.filter(([key]) => stages[key] !== undefined)
  .map(([key, name]) => `${name} ${ms(stages[key])}`);

PAGES.calls = async (area) => {
  const list = el("div", { id: "call-list" });
  let wanted = 20;
  const load = async () => {
    const { found, more } = await pagesUntil("/voice/calls", "calls", wanted, 20);
    put(list, ...(found.length ? found.map((c) => el("div", { className: "card" },
      el("h3", { text: `${when(c.started_at)} · ${c.role ? state.roleNames[c.role] || c.role : "no role"} · ${c.end_reason || "in progress"}` }),
      el("ol", {}, c.turns.map((t) => el("li", {},
        el("p", {}, el("strong", { text: "Caller: " }), t.question || "(nothing heard)"),
        el("p", {}, el("strong", { text: "Answer: " }), t.answer || `(${t.outcome})`),
        el("p", { className: "muted timings", text: [OUTCOMES[t.outcome] || t.outcome, ...callTimes(t.stages)].join(" · ") })))))) : [emptyState("No calls yet. With a phone number set up for voice (see Status), each call and what was said in it shows here.")]),
    moreButton("calls-more", more, () => { wanted += 20; guarded(list, load); }));
  };
  area.append(el("h2", { text: "Phone calls" }), list);
  await load();
};

// ------------------------------------------------------------------ knowledge gaps

// What customers asked that was not answered well (GET /insights/gaps), grouped by need;
// answered in place (POST /answers with the group's phrasings: the group leaves the
// list); the owner's answers, edited, withdrawn and imported from an FAQ file.

const GAP_REASONS = { not_found: "not answered", disliked: "rated down", handed_off: "handed to a person" };
const GAPS_PER_PAGE = 20;

// an error of the API for the owner, in words (an FAQ's problems one a line); a 401 is
// the sign-in's (null)
function problemText(error) {
  if (error instanceof ApiError && error.status === 401) return null;
  const lines = (error.body && error.body.problems) || [];
  if (!lines.length) return error.message;
  return ["Not imported (nothing of the file was kept):", ...lines.map((p) => `Line ${p.line}: ${p.detail}`)].join("\n");
}

// one group of the gaps, with the form that answers it
function gapItem(group, answered) {
  const text = el("textarea", { className: "gap-answer", required: true, maxLength: 4000, rows: 3 });
  const problem = el("p", { className: "error", role: "alert" });
  const save = el("button", { type: "submit", text: "Save answer", "aria-label": `Save the answer to ${group.question}` });
  // the phrasings a customer used, as the answer's questions (the API's limit is 500
  // characters): each may be left out, for a group that took in another need by mistake
  const fits = (q) => q.split(/\s+/).join(" ").trim().length <= 500;
  const others = group.examples.filter((q) => q !== group.question);
  const ticks = others.map((q) => el("input", { type: "checkbox", checked: fits(q), disabled: !fits(q),
    "aria-label": `Answer "${q}" with it too` }));
  const reasons = Object.entries(GAP_REASONS).filter(([key]) => group.reasons[key])
    .map(([key, words]) => `${group.reasons[key]} ${words}`);
  return el("li", { className: "card gap" },
    el("h3", { text: group.question }),
    el("p", { className: "muted", text: [`Asked ${group.count} ${group.count === 1 ? "time" : "times"}`,
      `on ${group.channels.join(", ")}`, `last ${when(group.last_seen)}`].join(" · ") }),
    el("p", { className: "reasons", text: reasons.join(" · ") }),
    others.length ? el("p", { className: "muted", text: "Also asked as (those ticked are answered too):" }) : null,
    el("ul", { className: "examples", "aria-label": "Also asked as" },
      others.map((q, i) => el("li", {}, el("label", {}, ticks[i], " ", q)))),
    group.conversations.length ? el("p", {}, "In ", group.conversations.flatMap((id, i) =>
      [i ? ", " : "", el("a", { href: `#inbox/${id}`, text: `conversation ${id}` })])) : null,
    el("form", { className: "stack", onsubmit: async (event) => {
      event.preventDefault();
      problem.textContent = "";
      save.disabled = true;
      try {
        const questions = [group.question, ...others.filter((q, i) => ticks[i].checked)].filter(fits);
        await api("POST", "/answers", { questions: questions.length ? questions : [group.question], answer: text.value });
        say("Saved: questions like these are answered with it now.");
        await answered();
      } catch (error) { problem.textContent = problemText(error) || ""; }
      save.disabled = false;
    } }, field("Your answer", text), el("div", {}, save), problem));
}

// one of the owner's answers: its questions and text, edited in place or withdrawn
function ownerAnswerItem(answer, changed) {
  const body = el("div", {});
  const problem = el("p", { className: "error", role: "alert" });
  // the outcome is said once the page shows it
  const act = async (work, done) => {
    problem.textContent = "";
    try { await work(); await changed(); if (done) say(done); } catch (error) { problem.textContent = problemText(error) || ""; }
  };
  const reading = () => put(body, 
    el("p", { className: "answer", text: answer.answer }),
    el("p", { className: "muted", text: `Served ${answer.served} ${answer.served === 1 ? "time" : "times"} · version ${answer.version} · ${when(answer.updated_at)}` }),
    el("div", { className: "row" },
      el("button", { type: "button", className: "secondary", text: "Edit", "aria-label": `Edit answer ${answer.id}`, onclick: editing }), " ",
      el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete answer ${answer.id}`, onclick: () => {
        if (confirm("Delete this answer? Its questions are answered from the documents again.")) {
          act(() => api("DELETE", `/answers/${answer.id}`), "Answer deleted.");
        }
      } })));
  const editing = () => {
    const text = el("textarea", { className: "edit-answer", required: true, maxLength: 4000, value: answer.answer });
    put(body, el("form", { className: "stack", onsubmit: (event) => {
      event.preventDefault();
      act(() => api("PATCH", `/answers/${answer.id}`, { answer: text.value }), "Answer changed.");
    } }, field("Answer", text), el("div", {}, el("button", { type: "submit", text: "Save" }), " ",
      el("button", { type: "button", className: "secondary", text: "Cancel", onclick: reading }))));
    text.focus();
  };
  reading();
  return el("li", { className: "card owner-answer" },
    el("ul", { className: "examples", "aria-label": "Answers the questions" }, answer.questions.map((q) => el("li", { text: q }))),
    body, problem);
}

PAGES.gaps = async (area) => {
  const channel = el("select", { id: "gaps-channel" },
    ["", ...CHANNELS].map((c) => el("option", { value: c, text: c || "All channels" })));
  const list = el("div", { id: "gap-list" });
  const answers = el("div", { id: "answer-list" });
  const file = el("input", { id: "faq-file", type: "file", accept: ".csv,.json", required: true });
  const imported = el("p", { id: "faq-outcome", role: "status" });
  let offset = 0;
  const load = async () => {
    const query = new URLSearchParams({ limit: GAPS_PER_PAGE, offset });
    if (channel.value) query.set("channel", channel.value);
    const { data } = await api("GET", `/insights/gaps?${query}`);
    if (!data.groups.length && offset > 0) { offset = Math.max(0, offset - GAPS_PER_PAGE); return load(); }
    const turn = (to, text) => el("button", { type: "button", className: "secondary", text,
      onclick: () => { offset = to; guarded(list, load); } });
    put(list, 
      el("p", { className: "muted", id: "gap-summary", text: data.groups.length
        ? `${data.total} ${data.total === 1 ? "need" : "needs"} to answer, from ${data.questions} ${data.questions === 1 ? "question" : "questions"} not answered well${
          data.total > data.groups.length ? ` (here ${offset + 1} to ${offset + data.groups.length})` : ""}.`
        : "Nothing to answer: every question was answered well, or by one of your answers." }),
      el("ol", { className: "gaps", start: offset + 1 }, data.groups.map((g) => gapItem(g, refresh))),
      el("div", { className: "row" },
        offset > 0 ? turn(Math.max(0, offset - GAPS_PER_PAGE), "Previous") : null, " ",
        data.next_offset !== null ? turn(data.next_offset, "Next") : null));
  };
  const loadAnswers = async (before) => {
    const { data } = await api("GET", `/answers${before ? `?before=${before}` : ""}`);
    const items = data.answers.map((a) => ownerAnswerItem(a, () => guarded(answers, loadAnswers)));
    const more = data.next_before ? el("button", { type: "button", className: "secondary", text: "More answers",
      onclick: (event) => { event.target.remove(); guarded(answers, () => loadAnswers(data.next_before)); } }) : null;
    if (before) { answers.querySelector("ol").append(...items); if (more) answers.append(more); return; }
    put(answers, items.length ? el("ol", { className: "owner-answers" }, items)
      : el("p", { className: "muted", text: "No answers of yours yet." }), ...(more ? [more] : []));
  };
  const importFaq = async (event) => {
    event.preventDefault();
    const chosen = file.files[0];
    if (!chosen) return;
    const format = chosen.name.toLowerCase().endsWith(".json") ? "json" : "csv";
    imported.textContent = "Importing…";
    try {
      const { data } = await api("POST", "/answers/import", { format, text: await chosen.text() });
      imported.textContent = `Imported ${chosen.name}: ${data.created} new, ${data.updated} changed, ${data.unchanged} as they were.`;
      await refresh();
    } catch (error) { imported.textContent = problemText(error) || ""; }
  };
  // each part on its own: the answers are shown even when the gaps cannot be grouped (503)
  const refresh = () => Promise.all([guarded(list, load), guarded(answers, loadAnswers)]);
  channel.addEventListener("change", () => { offset = 0; guarded(list, load); });
  area.append(el("h2", { text: "Knowledge gaps" }),
    el("p", { className: "muted", text: "What customers asked that was not answered, was rated down or was handed to a person, grouped by need, the most asked first. Answer one here: from then on, questions like it get your answer." }),
    el("form", { className: "row", onsubmit: (e) => e.preventDefault() }, field("Channel", channel)),
    list,
    el("h2", { text: "Your answers" }),
    el("form", { className: "stack card", id: "faq-form", onsubmit: importFaq },
      field("Import an FAQ (CSV with a question and an answer column, or JSON)", file),
      el("div", {}, el("button", { type: "submit", text: "Import" })), imported),
    answers);
  await refresh();
};

// ------------------------------------------------------------------ start

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("sign-in-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    const input = document.getElementById("api-key");
    sessionStorage.setItem(KEY, input.value);
    input.value = "";
    await show("That key was not accepted.");
  });
  document.getElementById("sign-out").addEventListener("click", () => signOut(""));
  document.getElementById("menu-toggle").addEventListener("click", () => {
    fold(document.getElementById("menu-toggle").getAttribute("aria-expanded") === "true");
  });
  window.addEventListener("hashchange", () => { show(); document.getElementById("main").focus(); });
  show();
});

// The owner's console: one page of plain JavaScript over the service's own HTTP API.
// No build step, no third-party code, nothing inline (the Content-Security-Policy
// allows scripts and styles from this origin only). Text from the API is always set
// as text (textContent), never parsed as HTML.
"use strict";

const KEY = "ragchat-api-key"; // sessionStorage: this tab only, never a URL
const PAGES = {};
// leave: what the page shown stops when another is shown (the inbox's live reading)
const state = { conversationId: null, leave: null };

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

function table(caption, columns, rows) {
  if (!rows.length) return el("p", { className: "muted", text: `${caption}: none yet.` });
  return el("div", { className: "table-wrap" },
    el("table", {},
      el("caption", { className: "muted", text: caption }),
      el("thead", {}, el("tr", {}, columns.map(([title]) => el("th", { scope: "col", text: title })))),
      el("tbody", {}, rows.map((row) => el("tr", {}, columns.map(([, cell]) => {
        const value = cell(row);
        return el("td", {}, value instanceof Node ? value : String(value ?? ""));
      }))))));
}

function failure(error) {
  return el("p", { className: "error", role: "alert", text: error.message });
}

async function guarded(area, work) {
  try { await work(); } catch (error) {
    if (error instanceof ApiError && error.status === 401) return;
    area.replaceChildren(failure(error));
  }
}

// ------------------------------------------------------------------ sign in

function signOut(message) {
  sessionStorage.removeItem(KEY);
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
  for (const link of document.querySelectorAll("nav a")) {
    if (link.getAttribute("href") === `#${page}`) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const area = document.getElementById("page");
  area.replaceChildren();
  document.title = `${page[0].toUpperCase()}${page.slice(1)} · ragchat console`;
  guarded(area, () => PAGES[page](area, rest.join("/")));
}

async function roleOptions(select, blank) {
  const { data } = await api("GET", "/employees");
  select.replaceChildren(el("option", { value: "", text: blank }),
    ...firstList(data).map((r) => el("option", { value: r.identifier, text: r.display_name })));
}

PAGES.chat = async (area) => {
  const question = el("textarea", { id: "question", name: "question", required: true });
  const role = el("select", { id: "chat-role", name: "role" });
  const answer = el("div", { id: "answer", "aria-live": "polite" });
  const thread = el("p", { className: "muted", id: "thread" });
  const showThread = () => {
    thread.textContent = state.conversationId
      ? `Following up in conversation ${state.conversationId}.` : "A new conversation.";
  };
  showThread();
  const ask = async (event) => {
    event.preventDefault();
    answer.replaceChildren(el("p", { className: "muted", text: "Asking…" }));
    const body = { question: question.value };
    if (role.value) body.role = role.value;
    if (state.conversationId) body.conversation_id = state.conversationId;
    try {
      const { data } = await api("POST", "/chat", body);
      state.conversationId = data.conversation_id;
      showThread();
      const who = [data.role ? `role ${data.role}` : "no role",
        data.provider ? `${data.provider} (${data.model})` : "no provider asked"].join(" · ");
      answer.replaceChildren(
        el("h3", { text: "Answer" }),
        el("p", { className: "answer", text: data.answer }),
        el("p", { className: "muted", id: "answered-by", text: `Answered by ${who}` }),
        data.turn && data.conversation_id ? rateAnswer(data.conversation_id, data.turn) : "",
        data.citations.length ? el("h3", { text: "Sources" }) : "",
        el("ol", { className: "citations", id: "citations" }, data.citations.map((c) =>
          el("li", { value: c.number },
            el("strong", { text: c.document_name }),
            c.heading_path && c.heading_path.length ? ` › ${c.heading_path.join(" › ")}` : "",
            el("br"), el("span", { className: "muted", text: c.snippet })))));
    } catch (error) { answer.replaceChildren(failure(error)); }
  };
  area.append(
    el("h2", { text: "Chat" }),
    el("form", { className: "stack card", id: "chat-form", onsubmit: ask },
      field("Question", question), field("Answer as", role), thread,
      el("div", {}, el("button", { type: "submit", text: "Ask" }), " ",
        el("button", { type: "button", className: "secondary", text: "New conversation",
          onclick: () => { state.conversationId = null; showThread(); question.focus(); } }))),
    answer);
  await roleOptions(role, "The service itself (no role)");
};

// 👍 / 👎 under an answer of the chat (POST /conversations/{id}/turns/{turn}/feedback);
// 👎 asks what was wrong first (optional, sent with the rating)
function rateAnswer(conversationId, turn) {
  const outcome = el("span", { id: "rating-outcome", role: "status" });
  const comment = el("textarea", { id: "rating-comment", name: "comment", maxLength: 1000 });
  const thumbs = {};
  const send = async (rating) => {
    const body = { rating };
    if (rating === "down" && comment.value.trim()) body.comment = comment.value;
    try {
      await api("POST", `/conversations/${conversationId}/turns/${turn}/feedback`, body);
      for (const [name, button] of Object.entries(thumbs)) button.setAttribute("aria-pressed", String(name === rating));
      why.hidden = true;
      outcome.textContent = `Rated ${RATINGS[rating]}${body.comment ? `: ${body.comment.trim()}` : ""}.`;
    } catch (error) { outcome.textContent = `Not rated: ${error.message}`; }
  };
  const why = el("form", { className: "stack", id: "rating-form", hidden: true,
    onsubmit: (e) => { e.preventDefault(); send("down"); } },
  field("What was wrong? (optional)", comment),
  el("div", {}, el("button", { type: "submit", text: "Rate 👎 down" })));
  thumbs.up = el("button", { type: "button", className: "secondary", text: "👍", "aria-label": "Rate the answer up",
    "aria-pressed": "false", onclick: () => send("up") });
  thumbs.down = el("button", { type: "button", className: "secondary", text: "👎", "aria-label": "Rate the answer down",
    "aria-pressed": "false", onclick: () => { why.hidden = false; comment.focus(); } });
  return el("div", { className: "rating" }, thumbs.up, " ", thumbs.down, " ", outcome, why);
}

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
  const load = async () => {
    const query = search.value.trim() ? `?q=${encodeURIComponent(search.value.trim())}` : "";
    const { data } = await api("GET", `/documents${query}`);
    list.replaceChildren(table("Documents", [
      ["Name", (d) => d.name],
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
              say(`Renamed ${d.name} to ${name.trim()}.`);
              await load();
            });
          } }),
        el("button", { type: "button", className: "danger", text: "Delete",
          "aria-label": `Delete ${d.name}`, onclick: async () => {
            if (!confirm(`Delete ${d.name}? Answers stop citing it.`)) return;
            await guarded(list, async () => { await api("DELETE", `/documents/${d.id}`); say(`Deleted ${d.name}.`); await load(); });
          } }))],
    ], firstList(data)));
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
    el("form", { className: "row", role: "search", onsubmit: (e) => { e.preventDefault(); guarded(list, load); } },
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

PAGES.conversations = async (area) => {
  const channel = el("select", { id: "conversation-channel" },
    ["", "chat", "openai", "telegram", "whatsapp", "discord", "web", "voice"].map((c) =>
      el("option", { value: c, text: c || "All channels" })));
  const list = el("div", { id: "conversation-list" });
  const detail = el("div", { id: "conversation-detail" });
  const open = async (id) => {
    const { data } = await api("GET", `/conversations/${id}`);
    detail.replaceChildren(el("h3", { text: `Conversation ${data.id} on ${data.channel}` }),
      data.mode && data.mode !== "ai" ? el("p", {}, `${MODES[data.mode] || data.mode}: `,
        el("a", { href: `#inbox/${data.id}`, text: "answer it in the inbox" })) : null,
      ...data.turns.map((t) => el("div", { className: "card" },
        messages(t).map((m) => el("p", { className: m.from === "customer" ? null : "answer" },
          el("strong", { text: `${m.who}: ` }), m.text)),
        t.search_question ? el("p", { className: "muted", text: `Searched as: ${t.search_question}` }) : null,
        el("p", { className: "muted", text: `${t.outcome} · ${t.provider || "no provider"} · ${t.timings.answer_ms ?? "?"} ms · ${when(t.created_at)}` }),
        t.feedback ? el("p", { className: "feedback" }, `Rated ${RATINGS[t.feedback] || t.feedback} · ${when(t.feedback_at)}`,
          t.feedback_comment ? el("q", { className: "feedback-comment", text: t.feedback_comment }) : null) : null,
        t.citations.length ? el("ul", {}, t.citations.map((c) => el("li", { text: `[${c.number}] ${c.document_name}` }))) : null)));
    detail.focus();
  };
  const load = async () => {
    const query = channel.value ? `?channel=${channel.value}` : "";
    const { data } = await api("GET", `/conversations${query}`);
    list.replaceChildren(table("Conversations, latest first", [
      ["Channel", (c) => c.channel],
      ["Role", (c) => c.role || "—"],
      ["Turns", (c) => c.turn_count],
      ["Last active", (c) => when(c.updated_at)],
      ["Mode", (c) => (c.mode === "human" ? el("a", { href: `#inbox/${c.id}`, text: MODES.human }) : MODES[c.mode] || "—")],
      ["", (c) => el("button", { type: "button", className: "secondary", text: "Read",
        "aria-label": `Read conversation ${c.id}`, onclick: () => guarded(detail, () => open(c.id)) })],
    ], data.conversations));
  };
  detail.tabIndex = -1;
  area.append(el("h2", { text: "Conversations" }),
    el("form", { className: "row", onsubmit: (e) => { e.preventDefault(); guarded(list, load); } },
      field("Channel", channel), el("button", { type: "submit", className: "secondary", text: "Show" })),
    list, detail);
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
    badge.replaceChildren(String(count), el("span", { className: "sr", text: " waiting" }));
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
        heard(null);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          delay = 1000;
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
              else if (key === "id") last = rest;
            }
            if (!data.length) continue;
            let parsed = null;
            try { parsed = JSON.parse(data.join("\n")); } catch (_) { continue; }
            heard(name, parsed);
          }
        }
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
    transcript.replaceChildren(...data.turns.flatMap((t) => messages(t).map((m, i, all) =>
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
    history.replaceChildren(...(data.handoff_log || []).map((h) => el("li", {
      text: `${when(h.at)} · ${h.event === "refused" ? "refused" : `${MODES[h.from_mode] || h.from_mode} → ${MODES[h.to_mode] || h.to_mode}`} · by ${h.by}${h.detail ? ` · ${h.detail}` : ""}` })));
  });

  const act = async (work) => {
    problem.textContent = "";
    try { await work(); } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      problem.textContent = error.message;
    }
    await refresh();
    changed();
  };
  const reply = (event) => {
    event.preventDefault();
    if (!text.value.trim() || send.disabled) return;
    send.disabled = true;
    act(async () => {
      const { data } = await api("POST", `/conversations/${id}/messages`, { text: text.value });
      text.value = "";
      if (data.delivered) say("Sent.");
      else problem.textContent = `Kept in the conversation but not delivered: ${data.detail}`;
    }).finally(() => { send.disabled = text.disabled; text.focus(); });
  };
  const moveTo = (to, done) => () => act(async () => {
    await api("POST", `/conversations/${id}/mode`, { mode: to });
    say(done);
  });
  const takeOver = el("button", { type: "button", id: "take-over", text: "Take over", onclick: moveTo("human", "You answer it now.") });
  const handBack = el("button", { type: "button", id: "hand-back", className: "secondary", text: "Hand back to AI", onclick: moveTo("ai", "The AI answers it again.") });
  const close = el("button", { type: "button", id: "close-conversation", className: "danger", text: "Close", onclick: () => {
    if (confirm("Close this conversation? The customer's next message begins a new one, with the AI.")) moveTo("closed", "Closed.")();
  } });
  // Enter sends; Shift+Enter is a new line
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) reply(event);
  });
  view.replaceChildren(title, mode,
    el("div", { className: "row" }, takeOver, " ", handBack, " ", close),
    transcript, problem,
    el("form", { className: "stack", id: "reply-form", onsubmit: reply },
      field("Your reply (Enter sends, Shift+Enter for a new line)", text), why,
      el("div", {}, send)),
    el("details", {}, el("summary", { text: "Who moved it" }), history));
  return refresh;
}

PAGES.inbox = async (area, id) => {
  const filter = el("select", { id: "inbox-filter" },
    Object.entries(MODES).map(([value, text]) => el("option", { value, text })));
  const list = el("div", { id: "inbox-list" });
  const view = el("div", { id: "inbox-conversation", className: "card", tabIndex: -1, hidden: !id });
  const load = coalesced(() => guarded(list, async () => {
    const { data } = await api("GET", `/conversations?mode=${filter.value}&limit=100`);
    const read = sortedForInbox(data.conversations);
    list.replaceChildren(read.length ? el("ul", { className: "inbox-list", "aria-label": MODES[filter.value] },
      read.map((c) => el("li", {}, el("a", { href: `#inbox/${c.id}`, "aria-current": String(c.id) === id ? "page" : null },
        el("span", {}, el("strong", { text: `Conversation ${c.id}` }), ` · ${c.channel}`),
        el("span", { className: "muted", text: c.waiting_since ? `waiting since ${when(c.waiting_since)}` : `last active ${when(c.updated_at)}` }),
        el("span", { className: "last", text: lastMessage(c) })))))
      : el("p", { className: "muted", text: `${MODES[filter.value]}: none.` }));
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
  const load = async () => {
    const [{ data: autonomy }, { data: held }, { data: recent }] = await Promise.all([
      api("GET", "/autonomy"), api("GET", "/autonomy/pending"), api("GET", "/autonomy/log?limit=20")]);
    const mode = el("select", { id: "autonomy-mode" },
      ["off", "semi", "full"].map((m) => el("option", { value: m, text: m, selected: autonomy.mode === m })));
    settings.replaceChildren(el("form", { className: "row card", onsubmit: async (e) => {
      e.preventDefault();
      await guarded(settings, async () => { await api("POST", "/autonomy", { mode: mode.value }); say(`Autonomy is ${mode.value}.`); await load(); });
    } }, field("Autonomy", mode), el("button", { type: "submit", text: "Save" }),
      el("p", { className: "muted", text: `Owner for YES/NO: ${autonomy.approval_channel || "none"} ${autonomy.approval_target || ""}` })));
    const decide = (action, verb) => async () => {
      await guarded(pending, async () => {
        const { data } = await api("POST", `/autonomy/pending/${action.id}/${verb}`);
        say(`Action ${data.id}: ${data.status}.`);
        await load();
      });
    };
    pending.replaceChildren(el("h3", { text: "Waiting for you" }), table("Held actions", [
      ["Action", (a) => a.summary],
      ["Role", (a) => a.role || "—"],
      ["Why held", (a) => a.reason],
      ["Expires", (a) => when(a.expires_at)],
      ["", (a) => el("span", {},
        el("button", { type: "button", text: "Approve", "aria-label": `Approve action ${a.id}`, onclick: decide(a, "approve") }), " ",
        el("button", { type: "button", className: "danger", text: "Reject", "aria-label": `Reject action ${a.id}`, onclick: decide(a, "reject") }))],
    ], firstList(held)));
    log.replaceChildren(el("h3", { text: "Recent" }), table("The action log", [
      ["When", (r) => when(r.at || r.created_at)],
      ["Action", (r) => r.action_id || r.id],
      ["Event", (r) => r.event || r.status],
      ["Detail", (r) => r.detail || r.reason || ""],
    ], firstList(recent)));
  };
  area.append(el("h2", { text: "Autonomy and approvals" }), settings, pending, log);
  await load();
};

PAGES.roles = async (area) => {
  const role = el("select", { id: "role-select" });
  const about = el("div", { id: "role-about" });
  const profile = el("div", { id: "profile" });
  const showRole = async () => {
    if (!role.value) { about.replaceChildren(); return; }
    const [{ data: r }, { data: memory }] = await Promise.all([
      api("GET", `/employees/${role.value}`), api("GET", `/employees/${role.value}/memory`)]);
    const text = el("textarea", { id: "memory-text", required: true, maxLength: 1000 });
    about.replaceChildren(el("div", { className: "card" },
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
    ], firstList(memory)));
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
    profile.replaceChildren(el("h3", { text: "Business profile" }),
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

PAGES.workflows = async (area) => {
  const list = el("div", { id: "workflow-list" });
  const name = el("input", { id: "workflow-name", required: true });
  const url = el("input", { id: "workflow-url", type: "url", required: true, placeholder: "https://…" });
  const channels = el("input", { id: "workflow-channels", value: "telegram", required: true });
  const load = async () => {
    const { data } = await api("GET", "/automation-workflows");
    list.replaceChildren(table("Workflows", [
      ["Name", (w) => w.name],
      ["Calls", (w) => w.webhook_url],
      ["Channels", (w) => w.channels.join(", ")],
      ["Active", (w) => el("button", { type: "button", className: "secondary", text: w.is_active ? "Active: turn off" : "Off: turn on",
        onclick: async () => { await guarded(list, async () => { await api("PATCH", `/automation-workflows/${w.id}`, { is_active: !w.is_active }); await load(); }); } })],
      ["", (w) => el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete workflow ${w.name}`,
        onclick: async () => { await guarded(list, async () => { await api("DELETE", `/automation-workflows/${w.id}`); await load(); }); } })],
    ], firstList(data)));
  };
  area.append(el("h2", { text: "Automation workflows" }),
    el("form", { className: "stack card", onsubmit: async (e) => {
      e.preventDefault();
      const body = { name: name.value, webhook_url: url.value, is_active: true,
        channels: channels.value.split(",").map((c) => c.trim()).filter(Boolean) };
      await guarded(list, async () => { await api("POST", "/automation-workflows", body); say("Workflow added."); await load(); });
    } }, field("Name", name), field("Webhook URL", url), field("Channels (comma-separated)", channels),
      el("div", {}, el("button", { type: "submit", text: "Add" }))),
    list);
  await load();
};

// The websites the chat widget runs on (docs/widget.md): the embed line to copy, the
// origins it may run on, switched on and off; the identity secret is shown once.
PAGES.sites = async (area) => {
  const list = el("div", { id: "site-list" });
  const created = el("div", { id: "site-created", role: "status" });
  const name = el("input", { id: "site-name", required: true });
  const origins = el("input", { id: "site-origins", required: true, placeholder: "https://shop.example.com" });
  const role = el("input", { id: "site-role", placeholder: "support" });
  const embed = (s) => `<script src="${location.origin}/widget.js" data-site="${s.public_id}" async></script>`;
  const load = async () => {
    const { data } = await api("GET", "/widget/sites");
    list.replaceChildren(table("Sites", [
      ["Name", (s) => s.name],
      ["Embed", (s) => el("code", { text: embed(s) })],
      ["Origins", (s) => s.allowed_origins.join(", ") || "none: refused everywhere"],
      ["Role", (s) => s.role || "—"],
      ["On", (s) => el("button", { type: "button", className: "secondary", text: s.enabled ? "On: turn off" : "Off: turn on",
        "aria-label": `${s.enabled ? "Turn off" : "Turn on"} the chat on ${s.name}`,
        onclick: async () => { await guarded(list, async () => { await api("PATCH", `/widget/sites/${s.id}`, { enabled: !s.enabled }); await load(); }); } })],
      ["", (s) => el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete site ${s.name}`,
        onclick: async () => {
          if (!confirm(`Delete ${s.name}? The chat stops on it.`)) return;
          await guarded(list, async () => { await api("DELETE", `/widget/sites/${s.id}`); await load(); });
        } })],
    ], firstList(data)));
  };
  area.append(el("h2", { text: "Chat on your website" }),
    el("form", { className: "stack card", id: "site-form", onsubmit: async (e) => {
      e.preventDefault();
      const body = { name: name.value, allowed_origins: origins.value.split(/[\s,]+/).filter(Boolean) };
      if (role.value.trim()) body.role = role.value.trim();
      await guarded(list, async () => {
        const { data } = await api("POST", "/widget/sites", body);
        created.replaceChildren(
          el("p", { text: `Added ${data.name}. Put this line on your pages:` }), el("code", { text: embed(data) }),
          el("p", { text: "Identity secret, shown only now (for logged-in customers; see the docs):" }),
          el("code", { id: "site-secret", text: data.identity_secret }));
        await load();
      });
    } }, field("Name", name), field("Allowed origins (comma-separated)", origins), field("Role (optional)", role),
      el("div", {}, el("button", { type: "submit", text: "Add" }))),
    created, list);
  await load();
};

PAGES.usage = async (area) => {
  const { data } = await api("GET", "/usage");
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
  const cap = (spent) => (spent.cap ? ` of ${spent.cap}` : " (no cap)");
  area.append(el("h2", { text: "Usage" }),
    data.ledger ? null : el("p", { className: "muted", text: "The usage ledger is off (USAGE_LEDGER): nothing is recorded." }),
    el("p", { text: `Today: ${data.today.tokens} tokens${cap(data.today)}. This month: ${data.this_month.tokens}${cap(data.this_month)}.` }),
    el("figure", { className: "card" }, svg, el("figcaption", { className: "muted", text: "Tokens per day (UTC)" })),
    table("This month by role", [["Role", (r) => r.role || "no role"], ["Calls", (r) => r.calls], ["Tokens", (r) => r.total_tokens]], data.this_month_by_role),
    table("This month by provider", [["Provider", (r) => r.provider], ["Calls", (r) => r.calls], ["Tokens", (r) => r.total_tokens]], data.this_month_by_provider));
};

PAGES.integrations = async (area) => {
  const [{ data: sources }, { data: actions }] = await Promise.all([
    api("GET", "/integrations"), api("GET", "/live-actions")]);
  const outcome = el("p", { role: "status", id: "integration-outcome" });
  const run = (source, verb) => async () => {
    try {
      const { data } = await api("POST", `/integrations/${source.id}/${verb}`);
      outcome.textContent = `${source.name}: ${data.ok === false ? "failed" : data.status || "ok"}${data.detail ? ` — ${data.detail}` : ""}`;
    } catch (error) { outcome.textContent = `${source.name}: ${error.message}`; }
  };
  area.append(el("h2", { text: "Integrations" }), outcome,
    table("Data sources", [
      ["Name", (s) => s.name], ["Kind", (s) => s.source_type], ["Last sync", (s) => when(s.last_synced_at) || "never"],
      ["", (s) => el("span", {},
        el("button", { type: "button", className: "secondary", text: "Test", "aria-label": `Test ${s.name}`, onclick: run(s, "test") }), " ",
        el("button", { type: "button", className: "secondary", text: "Sync", "aria-label": `Sync ${s.name}`, onclick: run(s, "sync") }))],
    ], firstList(sources)),
    table("Live-data actions", [["Name", (a) => a.name], ["Source", (a) => a.source_id], ["On", (a) => (a.enabled === false ? "off" : "on")]], firstList(actions)));
};

PAGES.calls = async (area) => {
  const { data } = await api("GET", "/voice/calls");
  area.append(el("h2", { text: "Phone calls" }),
    ...(data.calls.length ? data.calls.map((c) => el("div", { className: "card" },
      el("h3", { text: `${when(c.started_at)} · ${c.role || "no role"} · ${c.end_reason || "in progress"}` }),
      el("ol", {}, c.turns.map((t) => el("li", {},
        el("p", {}, el("strong", { text: "Caller: " }), t.question || "(nothing heard)"),
        el("p", {}, el("strong", { text: "Answer: " }), t.answer || `(${t.outcome})`),
        el("p", { className: "muted", text: `${t.outcome}${t.stages.voice_to_voice_ms ? ` · ${t.stages.voice_to_voice_ms} ms voice to voice` : ""}` })))))) : [el("p", { className: "muted", text: "No calls yet." })]));
};

// ------------------------------------------------------------------ knowledge gaps

// What customers asked that was not answered well (GET /insights/gaps), grouped by need;
// answered in place (POST /answers with the group's phrasings: the group leaves the
// list); the owner's answers, edited, withdrawn and imported from an FAQ file.

const GAP_CHANNELS = ["chat", "openai", "telegram", "whatsapp", "discord", "web", "voice"];
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
  const act = async (work) => {
    problem.textContent = "";
    try { await work(); await changed(); } catch (error) { problem.textContent = problemText(error) || ""; }
  };
  const reading = () => body.replaceChildren(
    el("p", { className: "answer", text: answer.answer }),
    el("p", { className: "muted", text: `Served ${answer.served} ${answer.served === 1 ? "time" : "times"} · version ${answer.version} · ${when(answer.updated_at)}` }),
    el("div", { className: "row" },
      el("button", { type: "button", className: "secondary", text: "Edit", "aria-label": `Edit answer ${answer.id}`, onclick: editing }), " ",
      el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete answer ${answer.id}`, onclick: () => {
        if (confirm("Delete this answer? Its questions are answered from the documents again.")) {
          act(async () => { await api("DELETE", `/answers/${answer.id}`); say("Answer deleted."); });
        }
      } })));
  const editing = () => {
    const text = el("textarea", { className: "edit-answer", required: true, maxLength: 4000, value: answer.answer });
    body.replaceChildren(el("form", { className: "stack", onsubmit: (event) => {
      event.preventDefault();
      act(async () => { await api("PATCH", `/answers/${answer.id}`, { answer: text.value }); say("Answer changed."); });
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
    ["", ...GAP_CHANNELS].map((c) => el("option", { value: c, text: c || "All channels" })));
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
    list.replaceChildren(
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
    answers.replaceChildren(items.length ? el("ol", { className: "owner-answers" }, items)
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
  window.addEventListener("hashchange", () => { show(); document.getElementById("main").focus(); });
  show();
});

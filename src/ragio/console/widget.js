// The chat widget for the owner's website (docs/widget.md). Loaded by
//   <script src="https://<service>/widget.js" data-site="site_…" async></script>
// Plain JavaScript, no build step, no third-party code, nothing inline: it renders in a
// Shadow DOM styled by a constructed stylesheet (which a strict style-src does not block)
// and talks only to the service that served it. Text from the API is always set as text
// (textContent), never parsed as HTML.
(() => {
  "use strict";
  const script =
    document.currentScript || document.querySelector('script[src*="widget.js"][data-site]');
  if (!script || !script.dataset.site || window.__ragchatWidget) return;
  window.__ragchatWidget = true;
  const ORIGIN = new URL(script.src, location.href).origin;
  const SITE = script.dataset.site;
  const USER_ID = script.dataset.userId || undefined;
  const USER_HASH = script.dataset.userHash || undefined;
  const STORED = "ragchat-widget:" + SITE; // the visitor's token, for this site

  // ---------------------------------------------------------------- languages

  const TEXTS = {
    en: ["Open the chat", "Close the chat", "Chat", "Your question", "Send",
      "Hello! How can I help you today?",
      "The assistant is not available right now, please try again later.",
      "Helpful", "Not helpful", "Sources", "Sent: a person will reply here.", "Team",
      "What was wrong? (optional)", "Thank you!"],
    de: ["Chat öffnen", "Chat schließen", "Chat", "Ihre Frage", "Senden",
      "Hallo! Wie kann ich Ihnen heute helfen?",
      "Der Assistent ist gerade nicht erreichbar, bitte versuchen Sie es später noch einmal.",
      "Hilfreich", "Nicht hilfreich", "Quellen", "Gesendet: eine Person antwortet Ihnen hier.",
      "Team",
      "Was war falsch? (optional)", "Danke!"],
    fr: ["Ouvrir le chat", "Fermer le chat", "Chat", "Votre question", "Envoyer",
      "Bonjour ! Comment puis-je vous aider aujourd’hui ?",
      "L’assistant n’est pas disponible pour le moment, veuillez réessayer plus tard.",
      "Utile", "Pas utile", "Sources", "Envoyé : une personne vous répondra ici.", "Équipe",
      "Qu’est-ce qui n’allait pas ? (facultatif)", "Merci !"],
    es: ["Abrir el chat", "Cerrar el chat", "Chat", "Su pregunta", "Enviar",
      "¡Hola! ¿En qué puedo ayudarle hoy?",
      "El asistente no está disponible en este momento, inténtelo de nuevo más tarde.",
      "Útil", "No es útil", "Fuentes", "Enviado: una persona le responderá aquí.", "Equipo",
      "¿Qué estaba mal? (opcional)", "¡Gracias!"],
    it: ["Apri la chat", "Chiudi la chat", "Chat", "La sua domanda", "Invia",
      "Salve! Come posso aiutarla oggi?",
      "L’assistente non è disponibile al momento, riprovi più tardi.",
      "Utile", "Non utile", "Fonti", "Inviato: una persona le risponderà qui.", "Team",
      "Che cosa non andava? (facoltativo)", "Grazie!"],
    nl: ["Chat openen", "Chat sluiten", "Chat", "Uw vraag", "Versturen",
      "Hallo! Waarmee kan ik u vandaag helpen?",
      "De assistent is nu niet beschikbaar, probeer het later opnieuw.",
      "Nuttig", "Niet nuttig", "Bronnen", "Verzonden: een medewerker antwoordt u hier.", "Team",
      "Wat klopte er niet? (optioneel)", "Bedankt!"],
    pt: ["Abrir o chat", "Fechar o chat", "Chat", "A sua pergunta", "Enviar",
      "Olá! Como posso ajudar hoje?",
      "O assistente não está disponível neste momento, tente novamente mais tarde.",
      "Útil", "Não é útil", "Fontes", "Enviado: uma pessoa responderá aqui.", "Equipa",
      "O que estava errado? (opcional)", "Obrigado!"],
  };
  const NAMES = ["open", "close", "chat", "question", "send", "hello", "down", "up", "no",
    "sources", "held", "team", "why", "thanks"];
  const lang = [script.dataset.lang, document.documentElement.lang, navigator.language]
    .map((tag) => (tag || "").slice(0, 2).toLowerCase())
    .find((code) => code in TEXTS) || "en";
  const T = Object.fromEntries(NAMES.map((name, i) => [name, TEXTS[lang][i]]));

  // ---------------------------------------------------------------- the look

  const CSS = `
:host{all:initial}
*{box-sizing:border-box;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
.w{position:fixed;bottom:20px;right:20px;z-index:2147483000;color:#111827}
.w.left{right:auto;left:20px}
button{cursor:pointer}
.launcher{width:56px;height:56px;border-radius:50%;border:0;background:var(--a);color:var(--f);
box-shadow:0 4px 14px rgba(0,0,0,.25);display:grid;place-items:center;margin-left:auto}
.left .launcher{margin-left:0}
.launcher svg{width:26px;height:26px;fill:currentColor}
:focus-visible{outline:3px solid var(--a);outline-offset:2px}
.panel{position:absolute;bottom:68px;right:0;width:370px;height:min(560px,calc(100vh - 110px));
background:#fff;border-radius:12px;box-shadow:0 8px 30px rgba(0,0,0,.3);display:flex;
flex-direction:column;overflow:hidden}
.left .panel{right:auto;left:0}
.panel[hidden]{display:none}
header{background:var(--a);color:var(--f);padding:10px 14px;display:flex;align-items:center}
h2{margin:0;flex:1;font-weight:600;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;
color:inherit}
.close{background:none;border:0;color:inherit;font-size:22px;line-height:1;padding:4px 8px}
ol.m{list-style:none;margin:0;padding:12px;flex:1;overflow-y:auto;display:flex;
flex-direction:column;gap:8px}
.m>li{max-width:88%;padding:8px 11px;border-radius:10px;white-space:pre-wrap;
overflow-wrap:anywhere}
.q{align-self:flex-end;background:var(--a);color:var(--f)}
.a,.g,.p{align-self:flex-start;background:#f3f4f6}
.p{background:#fff;border:1px solid var(--a)}
.p b{display:block;font-size:12px;color:#4b5563}
.s{align-self:flex-end;padding:0 4px;font-size:13px;color:#4b5563}
.e{align-self:stretch;background:#fef2f2;color:#991b1b}
.c{margin:6px 0 0;padding-left:20px;font-size:13px;color:#374151;white-space:normal}
.c *{font-size:13px}
.c a{color:inherit}
.t{margin-top:4px;display:flex;gap:4px}
.y{margin-top:4px;display:flex;gap:4px;font-size:13px;color:#4b5563}
.y input{flex:1;min-width:0;border:1px solid #d1d5db;border-radius:6px;padding:2px 6px}
.y button{border:0;border-radius:6px;background:var(--a);color:var(--f);padding:2px 8px}
.t button{background:none;border:1px solid #d1d5db;border-radius:6px;padding:0 6px;
font-size:14px;filter:grayscale(1);opacity:.7}
.t button[aria-pressed=true]{filter:none;opacity:1;border-color:var(--a);
background:#eef2ff}
form{display:flex;gap:6px;padding:10px;border-top:1px solid #e5e7eb}
input{flex:1;min-width:0;padding:8px 10px;border:1px solid #9ca3af;border-radius:8px;
color:#111827;background:#fff}
.send{border:0;border-radius:8px;background:var(--a);color:var(--f);padding:0 14px}
.send:disabled{opacity:.6;cursor:default}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);
white-space:nowrap}
@media (max-width:480px){.open .panel{position:fixed;inset:0;width:100%;height:100%;
border-radius:0}.open .launcher{display:none}}
`;
  const host = document.createElement("ragchat-widget");
  const root = host.attachShadow({ mode: "open" });
  const base = sheet(CSS);
  let accent = sheet("");
  paint("#2563eb");

  function sheet(text) {
    if ("adoptedStyleSheets" in root) {
      const made = new CSSStyleSheet();
      made.replaceSync(text);
      return made;
    }
    return el("style", { text }); // older browsers: a <style> (blocked by a strict CSP)
  }

  function paint(colour) {
    if (!/^#[0-9a-f]{6}$/i.test(colour || "")) return;
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(colour.slice(i, i + 2), 16) / 255);
    const light = 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.6; // dark text on a light accent
    const text = `:host{--a:${colour};--f:${light ? "#111827" : "#fff"}}`;
    if (accent.replaceSync) accent.replaceSync(text);
    else accent.textContent = text;
    if ("adoptedStyleSheets" in root) root.adoptedStyleSheets = [base, accent];
    else if (!base.isConnected) root.prepend(base, accent);
  }

  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(props || {})) {
      if (value === undefined || value === null) continue;
      if (name === "text") node.textContent = value;
      else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value);
    }
    node.append(...children);
    return node;
  }

  const icon = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  icon.setAttribute("viewBox", "0 0 24 24");
  icon.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", "M4 3h16a2 2 0 0 1 2 2v11a2 2 0 0 1-2 2H8l-5 4V5a2 2 0 0 1 1-2z");
  icon.append(path);
  const launcher = el("button", {
    class: "launcher", type: "button", "aria-label": T.open, "aria-expanded": "false",
    "aria-controls": "p", onclick: () => (panel.hidden ? open() : close()),
  }, icon);
  const title = el("h2", { id: "h", text: T.chat });
  const list = el("ol", { class: "m", "aria-live": "polite", "aria-relevant": "additions text" });
  const input = el("input", { id: "i", type: "text", autocomplete: "off", maxlength: "4000" });
  const send = el("button", { class: "send", type: "submit", text: T.send });
  const form = el("form", { onsubmit: ask },
    el("label", { for: "i", class: "sr", text: T.question }), input, send);
  const panel = el("div", {
    id: "p", class: "panel", role: "dialog", "aria-label": T.chat, hidden: "",
  }, el("header", {}, title,
    el("button", { class: "close", type: "button", "aria-label": T.close, text: "×",
      onclick: close })), list, form);
  const frame = el("div", { class: "w", onkeydown: (event) => event.key === "Escape" && close() },
    panel, launcher);
  root.append(frame);
  (document.body ? Promise.resolve() : new Promise((ok) =>
    document.addEventListener("DOMContentLoaded", ok))).then(() => document.body.append(host));

  // ---------------------------------------------------------------- the session

  let current = load(); // {token, expires_at}
  let starting = null;
  let renewal = 0;
  let site = null; // the session's look: name, greeting, colour, position
  let shown = false; // the conversation was loaded into the panel

  function load() {
    try {
      return JSON.parse(localStorage.getItem(STORED)) || null;
    } catch {
      return null; // storage blocked (a sandboxed frame, private mode): this page only
    }
  }

  function keep(value) {
    current = value;
    try {
      localStorage.setItem(STORED, JSON.stringify(value));
    } catch { /* this page only */ }
  }

  class Refused extends Error {
    constructor(status, detail) {
      super(detail || String(status));
      this.status = status;
    }
  }

  async function problem(response) {
    let detail = "";
    try {
      detail = (await response.json()).detail;
    } catch { /* not a problem body */ }
    return new Refused(response.status, detail);
  }

  // A session for this visitor, the stored one renewed (so the conversation goes on).
  function session(fresh) {
    const left = current ? Date.parse(current.expires_at) - Date.now() : 0;
    if (!fresh && site && left > 60000) return Promise.resolve(current.token);
    starting = starting || (async () => {
      // a body without a Content-Type is a "simple" request: no preflight round trip
      const body = { site: SITE, renew: (current || load() || {}).token, user_id: USER_ID,
        user_hash: USER_HASH };
      const response = await fetch(ORIGIN + "/widget/sessions", {
        method: "POST", body: new Blob([JSON.stringify(body)]), credentials: "omit",
      });
      if (!response.ok) throw await problem(response);
      const made = await response.json();
      keep({ token: made.token, expires_at: made.expires_at });
      look(made.site);
      clearTimeout(renewal); // renewed two minutes before it expires, while the page is open
      const wait = Date.parse(made.expires_at) - Date.now() - 120000;
      renewal = setTimeout(() => session(true).catch(() => {}), Math.max(wait, 10000));
      return made.token;
    })().finally(() => (starting = null));
    return starting;
  }

  function look(given) {
    site = given || {};
    paint(site.colour);
    frame.classList.toggle("left", site.position === "left");
    if (site.name) title.textContent = site.name;
    panel.setAttribute("aria-label", site.name ? `${T.chat}: ${site.name}` : T.chat);
  }

  // A call with the visitor's token; on a 401 (expired, revoked) a new session, once.
  async function call(path, options, again) {
    const token = await session(again);
    let response;
    try {
      response = await fetch(ORIGIN + path, {
        ...options, credentials: "omit",
        headers: { ...(options.headers || {}), Authorization: "Bearer " + token },
      });
    } catch (error) {
      // a refusal without CORS headers reads as a network failure: retried once as a 401
      if (!again) return call(path, options, true);
      throw error;
    }
    if (response.status === 401 && !again) return call(path, options, true);
    if (!response.ok) throw await problem(response);
    return response;
  }

  function json(data) {
    return { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(data) };
  }

  // ---------------------------------------------------------------- the panel

  async function open() {
    panel.hidden = false;
    frame.classList.add("open");
    launcher.setAttribute("aria-expanded", "true");
    launcher.setAttribute("aria-label", T.close);
    input.focus();
    if (shown) {
      if (known) listen(); // the panel is open again: live again
      return;
    }
    try {
      await session();
      const found = await (await call("/widget/conversation", { method: "GET" })).json();
      if (shown) return;
      shown = true;
      list.textContent = "";
      list.append(el("li", { class: "g", text: (site.greeting || "").trim() || T.hello }));
      for (const turn of found.turns || []) {
        if (turn.question) list.append(el("li", { class: "q", text: turn.question }));
        if (turn.author === "person") person(turn);
        else if (turn.author !== "customer") finish(bubble(), turn);
      }
      list.scrollTop = list.scrollHeight;
      if (found.conversation_id) listen();
    } catch (error) {
      failed(error);
    }
  }

  function close() {
    if (panel.hidden) return;
    quiet();
    panel.hidden = true;
    frame.classList.remove("open");
    launcher.setAttribute("aria-expanded", "false");
    launcher.setAttribute("aria-label", T.open);
    launcher.focus();
  }

  function failed(error) {
    const said = error instanceof Refused && error.status === 429 && error.message
      ? error.message : T.down;
    list.append(el("li", { class: "e", role: "alert", text: said }));
    list.scrollTop = list.scrollHeight;
  }

  function bubble() {
    const text = el("span", { class: "x" });
    const answer = el("li", { class: "a", "aria-busy": "true" }, text);
    list.append(answer);
    return answer;
  }

  // The answer as it ends: its final text, its sources, its thumbs.
  function finish(answer, done) {
    answer.firstChild.textContent = done.answer || "";
    answer.removeAttribute("aria-busy");
    answer.dataset.turn = done.turn;
    const citations = done.citations || [];
    if (citations.length) {
      const cited = el("ol", { class: "c", "aria-label": T.sources });
      for (const citation of citations) {
        const name = citation.document_name || "";
        const url = /^https?:\/\//i.test(citation.source_url || "") ? citation.source_url : null;
        cited.append(el("li", { value: citation.number || undefined },
          url ? el("a", { href: url, target: "_blank", rel: "noopener noreferrer", text: name })
            : name));
      }
      answer.append(cited);
    }
    if (done.turn) {
      const thumbs = [["up", "👍", T.up], ["down", "👎", T.no]].map(([rating, mark, label]) =>
        el("button", { type: "button", "aria-label": label, "aria-pressed": "false",
          "data-rating": rating, text: mark, onclick: () => rate(done.turn, rating, thumbs) }));
      const given = done.feedback;
      for (const button of thumbs) {
        button.setAttribute("aria-pressed", String(button.dataset.rating === given));
      }
      answer.append(el("div", { class: "t" }, ...thumbs));
    }
  }

  // After a thumbs-down, the visitor may say what was wrong: the owner reads it with the
  // rating (a comment goes with a rating, at most 1,000 characters).
  function askWhy(turn, thumbs) {
    const answer = thumbs[0].closest("li");
    if (answer.querySelector("form.y")) return;
    const why = el("input", { type: "text", maxlength: "1000", "aria-label": T.why,
      placeholder: T.why });
    const form = el("form", { class: "y", onsubmit: async (event) => {
      event.preventDefault();
      const comment = why.value.trim();
      if (!comment) { form.remove(); return; }
      try {
        await call("/widget/feedback", json({ turn, rating: "down", comment }));
        form.replaceWith(el("p", { class: "y", text: T.thanks }));
      } catch { /* the rating stands; the comment may be sent again */ }
    } }, why, el("button", { type: "submit", text: T.send }));
    answer.append(form);
    why.focus();
  }

  async function rate(turn, rating, thumbs) {
    const pressed = thumbs.find((b) => b.dataset.rating === rating);
    const chosen = pressed.getAttribute("aria-pressed") === "true" ? null : rating;
    const before = thumbs.map((b) => b.getAttribute("aria-pressed"));
    for (const button of thumbs) {
      button.setAttribute("aria-pressed", String(button.dataset.rating === chosen));
    }
    try {
      await call("/widget/feedback", json({ turn, rating: chosen }));
      if (chosen === "down") askWhy(turn, thumbs);
    } catch {
      thumbs.forEach((b, i) => b.setAttribute("aria-pressed", before[i]));
    }
  }

  async function ask(event) {
    event.preventDefault();
    const question = input.value.trim();
    if (!question || send.disabled) return;
    if (!shown) await open();
    if (!shown) return; // the service could not be reached: the question stays typed
    send.disabled = true;
    input.value = "";
    list.append(el("li", { class: "q", text: question }));
    const answer = bubble();
    answer.firstChild.textContent = "…";
    list.scrollTop = list.scrollHeight;
    try {
      const response = await call("/widget/chat/stream", json({ question }));
      let done = null;
      let started = false;
      await events(response, (kind, data) => {
        if (kind === "token") {
          const text = answer.firstChild;
          text.textContent = (started ? text.textContent : "") + (data.text || "");
          started = true;
          list.scrollTop = list.scrollHeight;
        } else if (kind === "done") done = data;
        else if (kind === "error") throw new Refused(502, "");
      });
      if (!done) throw new Refused(502, "");
      if (done.held) { // no answer from the assistant: a person answers
        answer.remove();
        list.append(el("li", { class: "s", role: "status", text: T.held }));
      } else finish(answer, done);
      if (done.turn) listen();
    } catch (error) {
      answer.remove();
      failed(error);
    } finally {
      send.disabled = false;
      list.scrollTop = list.scrollHeight;
    }
  }

  // A person's message, as from the business.
  function person(turn) {
    if (list.querySelector(`li.p[data-turn="${Number(turn.turn)}"]`)) return;
    const name = el("b", { text: (site && site.name) || T.team });
    list.append(el("li", { class: "p", "data-turn": Number(turn.turn) }, name,
      el("span", { class: "x", text: turn.answer })));
    list.scrollTop = list.scrollHeight;
  }

  // The conversation live (/widget/events, read with fetch: the token is a header, which
  // EventSource cannot send): a person's messages. Reconnected with a growing wait; it
  // stops once the panel has been closed for five minutes.
  let feed = null;
  let known = false; // the visitor has a conversation: something may come in it
  let idle = 0;
  let last = 0; // the last event's id: read on from it

  function listen() {
    known = true;
    clearTimeout(idle);
    if (feed) return;
    const stop = (feed = new AbortController()).signal;
    (async () => {
      let wait = 1000;
      while (!stop.aborted) {
        try {
          const response = await call("/widget/events" + (last ? "?after=" + last : ""),
            { method: "GET", signal: stop });
          wait = 1000;
          await events(response, (kind, data, id) => {
            last = id || last;
            if (kind === "message") person(data);
          });
        } catch { /* reconnected below */ }
        await new Promise((ok) => setTimeout(ok, wait));
        wait = Math.min(wait * 2, 60000);
      }
    })();
  }

  function quiet() {
    clearTimeout(idle);
    idle = setTimeout(() => {
      if (feed) feed.abort();
      feed = null;
    }, 300000);
  }

  // Server-sent events read from a response's body (EventSource sends no token).
  async function events(response, each) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      await read(reader, decoder, buffer, each);
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  async function read(reader, decoder, buffer, each) {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      const blocks = buffer.split(/\r?\n\r?\n/);
      buffer = done ? "" : blocks.pop();
      for (const block of blocks) {
        let kind = "message";
        let id = 0;
        const data = [];
        for (const line of block.split(/\r?\n/)) {
          if (line.startsWith("event:")) kind = line.slice(6).trim();
          else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
          else if (line.startsWith("id:")) id = Number(line.slice(3)) || 0;
        }
        if (data.length) each(kind, JSON.parse(data.join("\n")), id);
      }
      if (done) return;
    }
  }

  session().catch(() => {}); // at load: the site's look, and the token renewed
})();

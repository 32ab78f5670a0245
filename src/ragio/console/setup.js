// The console's set-up pages: data sources and their live-data actions, automation
// workflows, websites as sources, the chat widget's sites, and the service's status.
// Loaded after console.js, whose helpers (el, field, api, table, pager, guarded, say…)
// and PAGES it uses; the same rules: no inline code, API text set as text only.
"use strict";

// a form's outcome line: what happened, in words, or why not
function outcomeLine(id) {
  return el("p", { id, className: "outcome", role: "status" });
}

// a field with a line under it saying what to put there
function hinted(label, input, hint) {
  const wrapped = field(label, input);
  if (hint) {
    const id = `${input.id}-hint`;
    input.setAttribute("aria-describedby", id);
    wrapped.append(el("span", { className: "hint", id, text: hint }));
  }
  return wrapped;
}

// a list typed one item a line (or, for addresses and patterns, comma-separated): its
// items, blank ones dropped
function items(text, separator = /[\n,]+/) {
  return text.split(separator).map((item) => item.trim()).filter(Boolean);
}

// a background job (GET /jobs/{id}) until it ends, telling its progress
async function jobDone(id, progress) {
  for (;;) {
    const { data } = await api("GET", `/jobs/${id}`);
    if (progress) progress(data);
    if (["done", "failed", "cancelled"].includes(data.status)) return data;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

// ------------------------------------------------------------------ data sources

const SYNC_WORDS = { never: "never synced", syncing: "syncing…", succeeded: "synced", partial: "partly synced",
  failed: "sync failed" };

function syncText(sync) {
  if (sync.status === "never") return SYNC_WORDS.never;
  const counts = `${sync.records_stored} stored, ${sync.records_skipped} skipped, ${sync.records_removed} removed`;
  const at = sync.finished_at || sync.started_at;
  return `${SYNC_WORDS[sync.status] || sync.status}${at ? ` ${when(at)}` : ""}: ${counts}${sync.error ? ` (${sync.error})` : ""}`;
}

// The form of a data source (new, or one to edit): the kind's own fields, as
// GET /integrations/kinds describes them; a secret is never shown (left blank: unchanged).
function sourceForm(kinds, existing, saved) {
  const at = existing ? "source-edit" : "source"; // the ids of one form or the other
  const name = el("input", { id: `${at}-name`, required: true, maxLength: 200, value: existing ? existing.name : "" });
  const kind = el("select", { id: `${at}-kind`, required: true, disabled: Boolean(existing) },
    el("option", { value: "", text: "Choose the kind of source" }),
    kinds.map((k) => el("option", { value: k.source_type, text: `${k.source_type}: ${k.description}`, selected: existing && existing.source_type === k.source_type })));
  const userField = el("input", { id: `${at}-user-field`, maxLength: 200, value: existing ? existing.user_field : "" });
  const interval = el("input", { id: `${at}-interval`, type: "number", min: 1, max: 10080,
    value: existing && existing.sync_interval_minutes ? existing.sync_interval_minutes : "" });
  const fields = el("fieldset", { id: `${at}-fields`, hidden: true });
  const problem = el("p", { className: "error", role: "alert", id: `${at}-error` });
  let inputs = {}, file = null;
  const drawFields = () => {
    const chosen = kinds.find((k) => k.source_type === kind.value);
    fields.hidden = !chosen;
    inputs = {};
    file = null;
    if (!chosen) { put(fields); return; }
    userField.placeholder = chosen.user_field;
    const either = chosen.required.map((option) => option.join(", ")).join("; or ");
    const shownFields = chosen.source_type === "csv" ? [] : chosen.fields;
    put(fields, el("legend", { text: `${chosen.source_type}: ${chosen.description}` }),
      el("p", { className: "muted", text: existing ? "Fields left blank keep what is stored; secrets are never shown."
        : `Needed: ${either}.` }),
      chosen.source_type === "csv" ? hinted(existing ? "A new CSV file (optional)" : "CSV file",
        file = el("input", { id: `${at}-file`, type: "file", accept: ".csv,text/csv", required: !existing }),
        "Its first row names the columns.") : null,
      shownFields.map((f) => {
        const stored = existing && existing.credentials[f.name];
        const input = el("input", { id: `${at}-field-${f.name}`, name: f.name, type: f.secret ? "password" : f.integer ? "number" : "text",
          autocomplete: f.secret ? "new-password" : "off", placeholder: f.secret && stored ? "stored; type to replace" : f.default || "",
          value: !f.secret && stored ? stored : "" });
        inputs[f.name] = input;
        return hinted(f.name + (f.secret ? " (secret)" : ""), input, f.meaning);
      }));
  };
  kind.addEventListener("change", drawFields);
  drawFields();
  const submit = async (event) => {
    event.preventDefault();
    problem.textContent = "";
    const chosen = kind.value;
    try {
      const chosenFile = file && file.files.length ? file.files[0] : null;
      const body = { name: name.value };
      if (userField.value.trim()) body.user_field = userField.value.trim();
      body.sync_interval_minutes = interval.value ? Number(interval.value) : null;
      let data;
      if (chosenFile && !existing) {  // a new CSV source: the file itself, as a form
        const form = new FormData();
        form.append("file", chosenFile);
        for (const [key, value] of Object.entries(body)) if (value !== null) form.append(key, String(value));
        ({ data } = await api("POST", "/integrations", form));
      } else {
        if (!existing) body.source_type = chosen;
        if (!existing && body.sync_interval_minutes === null) delete body.sync_interval_minutes;
        if (chosenFile) body.content = await chosenFile.text(); // a stored CSV source's new file
        for (const [fieldName, input] of Object.entries(inputs)) {
          const value = input.value.trim();
          const stored = existing && existing.credentials[fieldName];
          if (value && value !== stored) body[fieldName] = value;
        }
        ({ data } = existing ? await api("PATCH", `/integrations/${existing.id}`, body) : await api("POST", "/integrations", body));
      }
      await saved(data);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      const named = error.body && error.body.field ? ` (${error.body.field})` : "";
      problem.textContent = `Not saved${named}: ${error.message}`;
    }
  };
  return el("form", { className: "stack card", id: `${at}-form`, onsubmit: submit },
    el("h3", { text: existing ? `Edit ${existing.name}` : "Add a data source" }),
    field("Name", name), field("Kind", kind), fields,
    hinted("User field (optional)", userField, "The field naming each record's customer, e.g. email."),
    hinted("Sync every (minutes, optional)", interval, "Blank: only when you press Sync."),
    el("div", {}, el("button", { type: "submit", text: existing ? "Save" : "Add" })), problem);
}

// The form of a live-data action: a query on a data source, run while the customer waits.
function actionForm(sources, saved) {
  const name = el("input", { id: "action-name", required: true, maxLength: 200 });
  const source = el("select", { id: "action-source", required: true },
    sources.map((s) => el("option", { value: s.id, text: `${s.name} (${s.source_type})` })));
  const template = el("textarea", { id: "action-template", required: true, rows: 3,
    placeholder: "SELECT status, total FROM orders WHERE id = {order_id}" });
  const triggers = el("textarea", { id: "action-triggers", rows: 2, placeholder: "where is my order" });
  const description = el("input", { id: "action-description", maxLength: 1000 });
  const problem = el("p", { className: "error", role: "alert", id: "action-error" });
  return el("form", { className: "stack card", id: "action-form", onsubmit: async (event) => {
    event.preventDefault();
    problem.textContent = "";
    try {
      const { data } = await api("POST", "/live-actions", { name: name.value, source_id: Number(source.value),
        template: template.value, triggers: items(triggers.value, /\n+/), description: description.value });
      await saved(data);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      const named = error.body && error.body.field ? ` (${error.body.field})` : "";
      problem.textContent = `Not saved${named}: ${error.message}`;
    }
  } }, el("h3", { text: "Add a live-data action" }),
  field("Name", name), field("Data source", source),
  hinted("Query", template, "Values as placeholders: {order_id}, {email}, {phone}, {caller}; they are bound, never written into the query."),
  hinted("Trigger phrases (one a line, optional)", triggers, "A message with one of them runs it; without any, a message about what the query names does."),
  hinted("What the data is (optional)", description, "In your words; the AI reads it with the rows."),
  el("div", {}, el("button", { type: "submit", text: "Add" })), problem);
}

// a dry run of an action: a customer's message in, the rows it would answer with out
function dryRun(action) {
  const message = el("input", { id: `dry-run-message-${action.id}`, className: "dry-run-message", maxLength: 2000,
    placeholder: action.params.length ? `a message with ${action.params.map((p) => `{${p}}`).join(", ")}` : "a customer's message" });
  const result = el("div", { className: "dry-run-result", role: "status" });
  return el("form", { className: "row dry-run", onsubmit: async (event) => {
    event.preventDefault();
    put(result, el("p", { className: "muted", text: "Running…" }));
    try {
      const { data } = await api("POST", `/live-actions/${action.id}/dry-run`, { message: message.value, channel: "chat" });
      if (data.failed) { put(result, el("p", { className: "error", text: `Failed: ${data.reason || data.detail || "see the log"}` })); return; }
      const bound = Object.entries(data.values || {}).map(([k, v]) => `${k} = ${v}`).join(", ");
      put(result, 
        el("p", { text: `${data.writes ? `Would change ${data.affected ?? 0} rows (rolled back)` : `${data.rows.length} ${data.rows.length === 1 ? "row" : "rows"}`} in ${data.duration_ms} ms${bound ? `, with ${bound}` : ""}.` }),
        data.rows.length ? el("pre", { className: "rows", text: data.rows.map((row) => JSON.stringify(row)).join("\n") }) : null);
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      put(result, el("p", { className: "error", text: `Not run: ${error.message}` }));
    }
  } }, field(`Dry run of ${action.name} with the message`, message),
  el("button", { type: "submit", className: "secondary", text: "Dry run" }), result);
}

PAGES.integrations = async (area) => {
  const [{ data: kindList }, { data: sourcesRead }, { data: actionsRead }] = await Promise.all([
    api("GET", "/integrations/kinds"), api("GET", "/integrations"), api("GET", "/live-actions")]);
  let sourceList = sourcesRead, actionList = actionsRead;
  const kinds = kindList.kinds;
  const sources = el("div", { id: "source-list" });
  const actions = el("div", { id: "action-list" });
  const editing = el("div", { id: "source-editing" });
  const outcome = outcomeLine("integration-outcome");
  const adding = el("div", { id: "source-adding" });
  const actionAdding = el("div", { id: "action-adding" });
  let known = firstList(sourceList);
  const loadSources = async () => {
    ({ data: sourceList } = await api("GET", "/integrations"));
    known = firstList(sourceList);
    drawSources();
    put(actionAdding, known.length ? actionForm(known, actionSaved) : null);
  };
  const test = (source) => async () => {
    outcome.textContent = `Testing ${source.name}…`;
    try {
      const { data } = await api("POST", `/integrations/${source.id}/test`);
      outcome.textContent = `${source.name}: ${data.ok ? "works" : "fails"}: ${data.message}`;
    } catch (error) { outcome.textContent = `${source.name}: ${error.message}`; }
  };
  const sync = (source) => async () => {
    try {
      await api("POST", `/integrations/${source.id}/sync`);
      outcome.textContent = `${source.name}: syncing…`;
      for (;;) {
        await new Promise((resolve) => setTimeout(resolve, 1000));
        const { data } = await api("GET", `/integrations/${source.id}`);
        outcome.textContent = `${source.name}: ${syncText(data.sync)}`;
        if (data.sync.status !== "syncing") break;
      }
      await loadSources();
    } catch (error) { outcome.textContent = `${source.name}: ${error.message}`; }
  };
  const drawSources = () => put(sources, table("Data sources", [
    ["Name", (s) => s.name], ["Kind", (s) => s.source_type], ["Last sync", (s) => syncText(s.sync)],
    ["Synced", (s) => (s.sync_interval_minutes ? `every ${s.sync_interval_minutes} min` : "when asked")],
    ["", (s) => el("span", { className: "row" },
      el("button", { type: "button", className: "secondary", text: "Test", "aria-label": `Test ${s.name}`, onclick: test(s) }), " ",
      el("button", { type: "button", className: "secondary", text: "Sync", "aria-label": `Sync ${s.name}`, onclick: sync(s) }), " ",
      el("button", { type: "button", className: "secondary", text: "Edit", "aria-label": `Edit ${s.name}`, onclick: () => {
        put(editing, sourceForm(kinds, s, async (data) => { put(editing); await loadSources(); say(`Saved ${data.name}.`); }));
        editing.querySelector("input").focus();
      } }), " ",
      el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete ${s.name}`, onclick: async () => {
        if (!confirm(`Delete ${s.name}? Its synced records and its live-data actions are deleted too.`)) return;
        await guarded(sources, async () => { await api("DELETE", `/integrations/${s.id}`); await loadSources(); await loadActions(); say(`Deleted ${s.name}.`); });
      } }))],
  ], known, el("div", {}, el("p", { text: "No data sources yet. A data source is one of your databases or business tools (PostgreSQL, MySQL, MongoDB, a REST API, HubSpot, Salesforce, Shopify, Google Sheets, Stripe, or a CSV file): live-data actions look up a customer's order or account in it while they wait." }),
    el("p", { text: "Add one with the form below, then Test it." }))));
  const loadActions = async () => {
    ({ data: actionList } = await api("GET", "/live-actions"));
    drawActions();
  };
  const drawActions = () => put(actions, table("Live-data actions", [
    ["Name", (a) => a.name], ["Source", (a) => a.source_name],
    ["Values", (a) => (a.params.length ? a.params.map((p) => `{${p}}`).join(", ") : "none")],
    ["Runs on", (a) => [a.triggers.length ? `“${a.triggers.join("”, “")}”` : null, a.auto_match && !a.writes ? "messages about it" : null].filter(Boolean).join(" or ")],
    ["On", (a) => (a.template_error ? el("span", { className: "error", text: `Off: ${a.template_error}` })
      : el("button", { type: "button", className: "secondary", text: a.enabled ? "On: turn off" : "Off: turn on",
        "aria-label": `${a.enabled ? "Turn off" : "Turn on"} ${a.name}`, onclick: async () => {
          await guarded(actions, async () => { await api("PATCH", `/live-actions/${a.id}`, { enabled: !a.enabled }); await loadActions(); });
        } }))],
    ["", (a) => el("div", {}, dryRun(a),
      el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete action ${a.name}`, onclick: async () => {
        if (!confirm(`Delete ${a.name}?`)) return;
        await guarded(actions, async () => { await api("DELETE", `/live-actions/${a.id}`); await loadActions(); say(`Deleted ${a.name}.`); });
      } }))],
  ], firstList(actionList), known.length ? "No live-data actions yet: add one below, then try it with a dry run."
    : "No live-data actions yet: add a data source first."));
  const actionSaved = async (data) => { await loadActions(); put(actionAdding, actionForm(known, actionSaved)); say(`Added ${data.name}; try it with a dry run.`); };
  const sourceSaved = async (data) => {
    put(adding, sourceForm(kinds, null, sourceSaved));
    await loadSources();
    say(`Added ${data.name}; test it to see that it answers.`);
  };
  put(adding, sourceForm(kinds, null, sourceSaved));
  drawSources();
  drawActions();
  put(actionAdding, known.length ? actionForm(known, actionSaved) : null);
  area.append(el("h2", { text: "Data sources" }),
    el("p", { className: "muted", text: "Your databases and business tools, and the live-data actions that look a customer's records up in them while they wait." }),
    outcome, sources, editing, adding,
    el("h2", { text: "Live-data actions" }), actions, actionAdding);
};

// ------------------------------------------------------------------ workflows

const WORKFLOW_CHANNELS = ["telegram", "whatsapp", "discord", "web"];

PAGES.workflows = async (area) => {
  const list = el("div", { id: "workflow-list" });
  const outcome = outcomeLine("workflow-outcome");
  const name = el("input", { id: "workflow-name", required: true, maxLength: 200 });
  const url = el("input", { id: "workflow-url", type: "url", required: true, placeholder: "https://hooks.example.com/…" });
  const ticks = WORKFLOW_CHANNELS.map((c) => el("input", { type: "checkbox", value: c, checked: c === "telegram", id: `workflow-channel-${c}` }));
  const problem = el("p", { className: "error", role: "alert", id: "workflow-error" });
  const test = (w) => async () => {
    outcome.textContent = `Calling ${w.name}…`;
    try {
      const { data } = await api("POST", `/automation-workflows/${w.id}/test`);
      outcome.textContent = `${w.name} ${data.ok ? "works" : "fails"}: ${data.message} (${data.elapsed_ms} ms).`;
    } catch (error) { outcome.textContent = `${w.name}: ${error.message}`; }
  };
  const load = async () => {
    const { data } = await api("GET", "/automation-workflows");
    put(list, table("Workflows", [
      ["Name", (w) => w.name],
      ["Calls", (w) => el("code", { text: w.webhook_url })],
      ["After replies on", (w) => w.channels.join(", ")],
      ["", (w) => el("span", { className: "row" },
        el("button", { type: "button", className: "secondary", text: "Test", "aria-label": `Test workflow ${w.name}`, onclick: test(w) }), " ",
        el("button", { type: "button", className: "secondary", text: w.is_active ? "Active: turn off" : "Off: turn on",
          "aria-label": `${w.is_active ? "Turn off" : "Turn on"} workflow ${w.name}`,
          onclick: async () => { await guarded(list, async () => { await api("PATCH", `/automation-workflows/${w.id}`, { is_active: !w.is_active }); await load(); }); } }), " ",
        el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete workflow ${w.name}`,
          onclick: async () => {
            if (!confirm(`Delete workflow ${w.name}? It is called no more.`)) return;
            await guarded(list, async () => { await api("DELETE", `/automation-workflows/${w.id}`); await load(); });
          } }))],
    ], firstList(data), "No workflows yet. A workflow is a webhook of yours (an n8n, Zapier or Make catch hook) called after the AI replies on Telegram, WhatsApp, Discord or your website's chat, with the message and the reply: add one below, then Test it."));
  };
  area.append(el("h2", { text: "Automation workflows" }), outcome, list,
    el("form", { className: "stack card", id: "workflow-form", onsubmit: async (e) => {
      e.preventDefault();
      problem.textContent = "";
      const body = { name: name.value, webhook_url: url.value, is_active: true,
        channels: ticks.filter((t) => t.checked).map((t) => t.value) };
      try {
        await api("POST", "/automation-workflows", body);
        name.value = url.value = "";
        await load();
        say("Workflow added: test it to see that it answers.");
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 401)) problem.textContent = `Not added: ${error.message}`;
      }
    } }, el("h3", { text: "Add a workflow" }), field("Name", name), field("Webhook URL", url),
    el("fieldset", {}, el("legend", { text: "Called after replies on" }),
      ticks.map((t) => el("label", { className: "tick" }, t, ` ${t.value}`, " "))),
    el("div", {}, el("button", { type: "submit", text: "Add" })), problem));
  await load();
};

// ------------------------------------------------------------------ websites as sources

function crawlText(result) {
  if (!result) return "never crawled";
  const pages = Object.entries(result.pages || {}).map(([outcome, count]) => `${count} ${outcome}`).join(", ");
  return `${pages || "no pages"}${result.complete === false ? " (not complete)" : ""}`;
}

PAGES.websites = async (area, id) => {
  const list = el("div", { id: "website-list" });
  const pages = el("div", { id: "website-pages", tabIndex: -1 });
  const outcome = outcomeLine("website-outcome");
  const progress = el("progress", { id: "crawl-progress", max: 100, value: 0, hidden: true });
  const name = el("input", { id: "website-name", required: true, maxLength: 100 });
  const starts = el("textarea", { id: "website-start-urls", rows: 2, placeholder: "https://www.example.com/" });
  const sitemaps = el("textarea", { id: "website-sitemaps", rows: 1, placeholder: "https://www.example.com/sitemap.xml" });
  const include = el("input", { id: "website-include", placeholder: "/help/*" });
  const exclude = el("input", { id: "website-exclude", placeholder: "*.pdf, /cart/*" });
  const maxPages = el("input", { id: "website-max-pages", type: "number", min: 1, max: 100000, value: 500 });
  const every = el("input", { id: "website-every", type: "number", min: 0, max: 525600, value: 0 });
  const problem = el("p", { className: "error", role: "alert", id: "website-error" });
  const crawl = (w) => async () => {
    try {
      const { data } = await api("POST", `/websites/${w.id}/crawl`);
      progress.hidden = false;
      progress.removeAttribute("value");
      const job = await jobDone(data.job_id, (j) => {
        if (j.progress_total) {
          progress.max = j.progress_total;
          progress.value = j.progress_done;
        }
        outcome.textContent = `Crawling ${w.name}: ${j.progress_done || 0} of ${j.progress_total || "?"} pages…`;
      });
      progress.hidden = true;
      outcome.textContent = `${w.name}: crawl ${job.status}${job.result ? `: ${crawlText(job.result)}` : ""}.`;
      await load();
    } catch (error) { progress.hidden = true; outcome.textContent = `${w.name}: ${error.message}`; }
  };
  const showPages = async (w, after) => {
    const query = new URLSearchParams({ limit: 50 });
    if (after) query.set("after", after);
    const { data } = await api("GET", `/websites/${w.id}/pages?${query}`);
    const rows = table(`Pages of ${w.name}`, [
      ["Address", (p) => el("a", { href: p.url, target: "_blank", rel: "noopener noreferrer", text: p.url })],
      ["Outcome", (p) => p.outcome], ["Why", (p) => p.reason || ""], ["Fetched", (p) => when(p.fetched_at)],
    ], data.pages, "No pages yet: crawl it first.");
    if (after) {
      pages.querySelector(".more")?.remove();
      pages.querySelector("tbody")?.append(...rows.querySelectorAll("tbody tr"));
    } else put(pages, el("h3", { text: `${w.name}: ${data.total} ${data.total === 1 ? "page" : "pages"}` }), rows);
    const count = pages.querySelectorAll("tbody tr").length;
    pages.append(el("p", { className: "muted more" }, `Showing ${count} of ${data.total}. `,
      data.next_after ? el("button", { type: "button", className: "secondary", text: "More pages",
        onclick: () => guarded(pages, () => showPages(w, data.next_after)) }) : null));
    if (!after) pages.focus();
  };
  const load = async () => {
    const { data } = await api("GET", "/websites");
    const websites = firstList(data);
    put(list, table("Websites", [
      ["Name", (w) => w.name],
      ["Starts at", (w) => [...w.start_urls, ...w.sitemaps].join(" ")],
      ["Last crawl", (w) => (w.last_crawl_at ? `${when(w.last_crawl_at)}: ${crawlText(w.last_crawl)}` : "never crawled")],
      ["Crawled", (w) => (w.crawl_every_minutes ? `every ${w.crawl_every_minutes} min` : "when asked")],
      ["", (w) => el("span", { className: "row" },
        el("button", { type: "button", text: "Crawl now", "aria-label": `Crawl ${w.name} now`, onclick: crawl(w) }), " ",
        el("button", { type: "button", className: "secondary", text: "Pages", "aria-label": `Pages of ${w.name}`,
          onclick: () => guarded(pages, () => showPages(w)) }), " ",
        el("button", { type: "button", className: "danger", text: "Delete", "aria-label": `Delete website ${w.name}`, onclick: async () => {
          if (!confirm(`Delete ${w.name}? The documents its crawls stored are deleted too.`)) return;
          await guarded(list, async () => { await api("DELETE", `/websites/${w.id}`); put(pages); await load(); say(`Deleted ${w.name}.`); });
        } }))],
    ], websites, "No websites yet. Add your website below: each page a crawl keeps becomes a document, answers cite and link to it, and later crawls keep them in step with the site."));
    if (id && !pages.children.length) {
      const chosen = websites.find((w) => String(w.id) === id);
      if (chosen) await showPages(chosen);
    }
  };
  area.append(el("h2", { text: "Websites" }), outcome, progress, list, pages,
    el("form", { className: "stack card", id: "website-form", onsubmit: async (e) => {
      e.preventDefault();
      problem.textContent = "";
      const body = { name: name.value, start_urls: items(starts.value), sitemaps: items(sitemaps.value),
        include: items(include.value), exclude: items(exclude.value), max_pages: Number(maxPages.value),
        crawl_every_minutes: Number(every.value) };
      try {
        const { data } = await api("POST", "/websites", body);
        name.value = starts.value = sitemaps.value = include.value = exclude.value = "";
        await load();
        say(`Added ${data.name}: crawl it now to read its pages.`);
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 401)) {
          const named = error.body && error.body.field ? ` (${error.body.field})` : "";
          problem.textContent = `Not added${named}: ${error.message}`;
        }
      }
    } }, el("h3", { text: "Add a website" }), field("Name", name),
    hinted("Start addresses (one a line)", starts, "The crawl follows the links of these pages, on the same site only."),
    hinted("Sitemaps (one a line, optional)", sitemaps, "Every page a sitemap lists is crawled."),
    hinted("Only pages matching (optional)", include, "Patterns with *, comma-separated, e.g. /help/*"),
    hinted("Leave out pages matching (optional)", exclude, "e.g. /cart/*, *.zip"),
    field("At most this many pages a crawl", maxPages),
    hinted("Crawl again every (minutes)", every, "0: only when you press Crawl now."),
    el("div", {}, el("button", { type: "submit", text: "Add" })), problem));
  await load();
};

// ------------------------------------------------------------------ the chat on websites

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
    put(list, table("Sites", [
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
    ], firstList(data), "No sites yet. Add your website below to put the chat on its pages: copy the line it gives you into your pages' HTML."));
  };
  area.append(el("h2", { text: "Chat on your website" }),
    el("form", { className: "stack card", id: "site-form", onsubmit: async (e) => {
      e.preventDefault();
      const body = { name: name.value, allowed_origins: origins.value.split(/[\s,]+/).filter(Boolean) };
      if (role.value.trim()) body.role = role.value.trim();
      await guarded(list, async () => {
        const { data } = await api("POST", "/widget/sites", body);
        put(created, 
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


// ------------------------------------------------------------------ API keys

const SCOPES = {
  chat: "chat: ask (/chat, /v1) and read its own conversations",
  read: "read: every list and page of your data",
  ingest: "ingest: add and delete documents and websites",
  admin: "admin: everything, keys included",
};

// keys beside SERVICE_API_KEY (docs/api.md): each with its scopes and limits; the key
// is shown once, when it is made; revoking holds at once
PAGES.keys = async (area) => {
  const list = el("div", { id: "key-list" });
  const created = el("div", { id: "key-created", role: "status" });
  const problem = el("p", { className: "error", role: "alert", id: "key-error" });
  const name = el("input", { id: "key-name", required: true, maxLength: 100, placeholder: "website backend" });
  const ticks = Object.keys(SCOPES).map((s) => el("input", { type: "checkbox", value: s, checked: s === "chat", id: `key-scope-${s}` }));
  const perMinute = el("input", { id: "key-per-minute", type: "number", min: 0, value: 0 });
  const perDay = el("input", { id: "key-per-day", type: "number", min: 0, value: 0 });
  const days = el("input", { id: "key-days", type: "number", min: 1, placeholder: "never" });
  const limit = (n, unit) => (n ? `${n.toLocaleString()} ${unit}` : "no limit");
  const load = async () => {
    const { data } = await api("GET", "/keys");
    put(list, table("Keys", [
      ["Name", (k) => k.name],
      ["Key", (k) => el("code", { text: `${k.shown}…` })],
      ["Scopes", (k) => k.scopes.join(", ")],
      ["Limits", (k) => `${limit(k.requests_per_minute, "a minute")} · ${limit(k.tokens_per_day, "tokens a day")}`],
      ["Used", (k) => `${k.usage.tokens_today.toLocaleString()} tokens today · last ${k.last_used_at ? when(k.last_used_at) : "never"}`],
      ["State", (k) => (k.revoked_at ? `revoked ${when(k.revoked_at)}` : k.expires_at ? `until ${when(k.expires_at)}` : "in use")],
      ["", (k) => (k.revoked_at ? "" : el("button", { type: "button", className: "danger", text: "Revoke", "aria-label": `Revoke key ${k.name}`,
        onclick: async () => {
          if (!confirm(`Revoke ${k.name}? Whatever uses it is refused from its next request.`)) return;
          await guarded(list, async () => { await api("DELETE", `/keys/${k.id}`); await load(); say(`Revoked ${k.name}.`); });
        } }))],
    ], data.keys, "No keys yet beside SERVICE_API_KEY. Make one for each thing that calls the API (your website's backend, a report, an upload script), with only the scopes it needs: if one leaks, revoke it alone."));
  };
  area.append(el("h2", { text: "API keys" }), created, list,
    el("form", { className: "stack card", id: "key-form", onsubmit: async (e) => {
      e.preventDefault();
      problem.textContent = "";
      const body = { name: name.value, scopes: ticks.filter((t) => t.checked).map((t) => t.value),
        requests_per_minute: Number(perMinute.value) || 0, tokens_per_day: Number(perDay.value) || 0 };
      if (days.value) body.expires_in_days = Number(days.value);
      try {
        const { data } = await api("POST", "/keys", body);
        name.value = "";
        await load();
        put(created, el("p", { text: `Made ${data.name}. Copy the key now: it is shown only this once.` }),
          el("code", { id: "key-made", text: data.key }));
      } catch (error) {
        if (!(error instanceof ApiError && error.status === 401)) problem.textContent = `Not made: ${error.message}`;
      }
    } }, el("h3", { text: "Make a key" }), field("Name", name),
      el("fieldset", {}, el("legend", { text: "Scopes" }),
        ticks.map((t) => el("div", {}, el("label", { className: "tick" }, t, ` ${SCOPES[t.value]}`)))),
      field("Requests a minute (0: no limit)", perMinute), field("Model tokens a day (0: no limit)", perDay),
      field("Expires after days (empty: never)", days),
      el("div", {}, el("button", { type: "submit", text: "Make the key" })), problem));
  await load();
};

// ------------------------------------------------------------------ status

const STATES = { ok: "Working", missing: "Not set up", failing: "Failing", off: "Off" };

// what is set up and working, from GET /status, with the next step for anything missing
PAGES.status = async (area) => {
  const { data } = await api("GET", "/status");
  const items = Object.entries(data.items);
  // what is not set up but needed, or failing; a part that is off is optional
  const needs = items.filter(([, i]) => i.state === "missing" || i.state === "failing");
  area.append(el("h2", { text: "Status" }),
    el("p", { id: "status-summary", text: needs.length ? `Needs your attention: ${needs.map(([, i]) => i.title).join(", ")}.`
      : "Everything that is set up works; a part that is off says how to turn it on." }),
    el("ul", { className: "status-list", id: "status-items" }, items.map(([key, i]) => el("li", { className: `state-${i.state}`, id: `status-${key}` },
      el("h3", {}, `${i.title}: `, el("span", { className: "state", text: STATES[i.state] || i.state })),
      el("p", { text: i.summary }),
      i.next_step ? el("p", { className: "next-step" }, el("strong", { text: i.state === "ok" ? "Tip: " : "Next step: " }), i.next_step) : null))),
    el("p", { className: "muted", text: `Checked ${when(data.checked_at)}, by this server: each replica knows its own last calls.` }));
};

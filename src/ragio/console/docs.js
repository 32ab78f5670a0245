// The API reference: the service's own /openapi.json, rendered in the browser. Plain
// JavaScript, no build step, no third-party code, nothing inline (the page is served
// under the console's Content-Security-Policy). Text from the document is always set as
// text (textContent), never parsed as HTML.
"use strict";

const KEY = "ragchat-api-key"; // the console's: sessionStorage, this tab only, never a URL
const METHODS = ["get", "put", "post", "patch", "delete", "head", "options", "trace"];
const UNIONS = [["oneOf", "Exactly one of these:"], ["anyOf", "Any of these:"],
  ["allOf", "All of these at once:"]];
const LIMITS = [ // [keyword, before the value, after it]
  ["minimum", "≥", ""], ["exclusiveMinimum", ">", ""], ["maximum", "≤", ""],
  ["exclusiveMaximum", "<", ""], ["multipleOf", "a multiple of", ""],
  ["minLength", "at least", "characters"], ["maxLength", "at most", "characters"],
  ["minItems", "at least", "items"], ["maxItems", "at most", "items"],
  ["minProperties", "at least", "fields"], ["maxProperties", "at most", "fields"],
];
const MAX_HOPS = 20; // a $ref leading to a $ref…: followed this far at most

let spec = null; // the document shown
const shown = { operations: [], groups: [], download: null };

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
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// a description as paragraphs: plain text, split at blank lines
function paragraphs(text, className) {
  if (typeof text !== "string") return [];
  return text.split(/\n\s*\n/).map((part) => part.trim()).filter(Boolean)
    .map((part) => el("p", { className, text: part }));
}

function isObject(value) {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function json(value) {
  try { return JSON.stringify(value); } catch (_) { return String(value); }
}

function code(text, className) {
  return el("code", { className, text });
}

// a path that may break after each "/" (a long one wraps there, not inside a word)
function breakable(path, className) {
  const parts = String(path).split("/");
  return el("span", { className },
    parts.map((part, i) => (i < parts.length - 1 ? [part, "/", el("wbr")] : part)));
}

// ------------------------------------------------------------------ the document's $refs

// "#/components/schemas/ChatAnswer" in the document; undefined when it is not there
function pointer(ref) {
  if (typeof ref !== "string" || !ref.startsWith("#")) return undefined;
  let node = spec;
  for (const raw of ref.slice(1).split("/").slice(1)) {
    let part = raw;
    try { part = decodeURIComponent(raw); } catch (_) { /* as written */ }
    part = part.replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, part)) return undefined;
    node = node[part];
  }
  return node;
}

function refName(ref) {
  return String(ref).split("/").pop().replace(/~1/g, "/").replace(/~0/g, "~");
}

// what a $ref (or a chain of them) leads to; the node itself when it is none
function resolved(node) {
  for (let hops = 0; isObject(node) && typeof node.$ref === "string"; hops++) {
    if (hops >= MAX_HOPS) return undefined;
    node = pointer(node.$ref);
  }
  return node;
}

// ------------------------------------------------------------------ schemas

// a schema in a few words: "string | null", "array of Citation", "Problem"
function typeOf(schema, depth = 0) {
  if (schema === false) return "nothing";
  if (!isObject(schema) || depth > 4) return "any";
  if (typeof schema.$ref === "string") return refName(schema.$ref);
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  let words = types.map((type) => {
    if (type === "array" && isObject(schema.items)) {
      const items = typeOf(schema.items, depth + 1);
      return `array of ${items.includes(" | ") ? `(${items})` : items}`;
    }
    if (type === "object" && !schema.properties && isObject(schema.additionalProperties)
      && Object.keys(schema.additionalProperties).length) { // ({} is any value: just "object")
      return `object of ${typeOf(schema.additionalProperties, depth + 1)}`;
    }
    return String(type);
  });
  if (!words.length) {
    const [union] = UNIONS.filter(([word]) => Array.isArray(schema[word])).map(([word]) => word);
    if (union) {
      words = schema[union].map((part) => typeOf(part, depth + 1));
      if (union === "allOf") words = [words.join(" & ")];
    } else if (schema.properties) words = ["object"];
    else if ("const" in schema) words = [schema.const === null ? "null" : typeof schema.const];
    else if (Array.isArray(schema.enum)) {
      words = [...new Set(schema.enum.map((v) => (v === null ? "null" : typeof v)))];
    } else words = ["any"];
  }
  const text = [...new Set(words)].join(" | ");
  return typeof schema.format === "string" ? `${text} (${schema.format})` : text;
}

// whether a schema holds more than a value: fields, alternatives, or items that do
function complex(schema, depth = 0) {
  const target = resolved(schema);
  if (!isObject(target) || depth > 4) return false;
  if (isObject(target.properties) && Object.keys(target.properties).length) return true;
  if (UNIONS.some(([word]) => Array.isArray(target[word]) && target[word].length)) return true;
  if (isObject(target.items) && complex(target.items, depth + 1)) return true;
  return isObject(target.additionalProperties) && complex(target.additionalProperties, depth + 1);
}

// what the schema object itself says (its $ref not followed): description, limits, values
function describe(schema) {
  if (!isObject(schema)) return [];
  const nodes = paragraphs(schema.description, "description");
  const facts = [];
  if ("const" in schema) facts.push(["always ", code(json(schema.const))]);
  for (const [word, before, after] of LIMITS) {
    if (typeof schema[word] === "number") {
      facts.push([[before, String(schema[word]), after].filter(Boolean).join(" ")]);
    }
  }
  if ("default" in schema) facts.push(["default ", code(json(schema.default))]);
  if (schema.uniqueItems === true) facts.push(["no item twice"]);
  if (schema.readOnly === true) facts.push(["read-only"]);
  if (schema.writeOnly === true) facts.push(["write-only"]);
  if (schema.deprecated === true) facts.push(["deprecated"]);
  if (schema.additionalProperties === false) facts.push(["no other fields"]);
  if (facts.length) {
    nodes.push(el("p", { className: "facts" }, facts.map((fact, i) => [i ? " · " : "", fact])));
  }
  if (Array.isArray(schema.enum)) nodes.push(values("One of:", schema.enum));
  const names = resolved(schema.propertyNames);
  if (isObject(names) && Array.isArray(names.enum)) nodes.push(values("Field names:", names.enum));
  if (typeof schema.pattern === "string") {
    nodes.push(el("details", { className: "pattern" },
      el("summary", { text: "Pattern (a regular expression the text matches)" }),
      code(schema.pattern)));
  }
  const examples = Array.isArray(schema.examples) ? schema.examples
    : "example" in schema ? [schema.example] : [];
  if (examples.length) nodes.push(values("For example:", examples));
  return nodes;
}

function values(label, list) {
  return el("p", { className: "values" }, label, " ",
    list.map((value, i) => [i ? ", " : "", code(json(value))]));
}

// what a schema holds, its $refs followed (guarded by ``trail``, the $refs shown around
// it): the description of what a $ref names, its fields, items or alternatives
function structure(schema, trail, depth) {
  const nodes = [];
  let target = schema;
  for (let hops = 0; isObject(target) && typeof target.$ref === "string"; hops++) {
    const ref = target.$ref;
    if (trail.includes(ref)) {
      return [el("p", { className: "muted", text: `${refName(ref)}: as above (it holds itself).` })];
    }
    const found = pointer(ref);
    if (found === undefined || hops >= MAX_HOPS) {
      return [el("p", { className: "muted", text: `${ref}: not in the document.` })];
    }
    trail = [...trail, ref];
    target = found;
    nodes.push(...describe(target));
  }
  if (!isObject(target)) return nodes;
  if (isObject(target.properties)) {
    const required = new Set(Array.isArray(target.required) ? target.required : []);
    nodes.push(el("ul", { className: "members" },
      Object.entries(target.properties).map(([name, property]) => member({
        head: [code(name, "name"), " ", needed(required.has(name))],
        schema: property, trail, depth,
      }))));
  }
  if (isObject(target.additionalProperties)) {
    nodes.push(el("ul", { className: "members" }, member({
      head: el("span", { className: "name", text: "any other field" }),
      schema: target.additionalProperties, trail, depth,
    })));
  }
  if (isObject(target.items)) {
    nodes.push(el("p", { className: "each" }, "Each item: ", el("span", {
      className: "type", text: typeOf(target.items) })));
    if (complex(target.items)) nodes.push(...structure(target.items, trail, depth));
    else {
      nodes.push(...describe(target.items));
      const items = resolved(target.items);
      if (items !== target.items) nodes.push(...describe(items));
    }
  }
  for (const [word, label] of UNIONS) {
    if (!Array.isArray(target[word])) continue;
    nodes.push(el("p", { className: "each", text: label }),
      el("ol", { className: "members alternatives" }, target[word].map((part, i) => {
        const title = (isObject(part) && typeof part.title === "string" && part.title)
          || (isObject(part) && typeof part.$ref === "string" && refName(part.$ref))
          || `Alternative ${i + 1}`;
        return member({
          head: el("span", { className: "name", text: title }), schema: part, trail, depth,
          type: typeOf(resolved(part)), open: depth === 0,
        });
      })));
  }
  return nodes;
}

function needed(required) {
  return el("span", { className: required ? "required" : "optional",
    text: required ? "required" : "optional" });
}

// one field, parameter, item or alternative: its name and type, what it says, and (in a
// disclosure, drawn when first opened) what it holds
function member({ head, schema, trail, depth, type, notes, open }) {
  const item = el("li", { className: "member" },
    el("div", { className: "member-head" }, head, " ",
      el("span", { className: "type", text: type || typeOf(schema) })),
    notes || [], describe(schema));
  const target = resolved(schema);
  if (!complex(schema)) {
    if (target !== schema) item.append(...describe(target)); // a named value's limits
    return item;
  }
  const inner = innermost(schema); // an array's items: what the disclosure shows
  const held = resolved(inner);
  const [union] = UNIONS.filter(([word]) => isObject(held) && Array.isArray(held[word]));
  const inside = isObject(held) && isObject(held.properties)
    ? `${Object.keys(held.properties).length} fields`
    : union ? `${held[union[0]].length} alternatives` : "what it holds";
  const details = el("details", {}, el("summary", { text: `${typeOf(inner)}: ${inside}` }));
  const draw = () => {
    if (details.dataset.drawn) return;
    details.dataset.drawn = "yes";
    details.append(el("div", { className: "schema" }, structure(schema, trail, depth + 1)));
  };
  details.addEventListener("toggle", draw);
  if (open) { details.open = true; draw(); }
  item.append(details);
  return item;
}

// the schema an array's items are (through arrays and $refs), else the schema itself
function innermost(schema) {
  let node = schema;
  for (let depth = 0; depth < 5; depth++) {
    const target = resolved(node);
    if (!isObject(target) || !isObject(target.items)) return node;
    node = target.items;
  }
  return node;
}

// a body's schema, at the top: its type, what it says, and its fields listed
function schemaBlock(schema) {
  return el("div", { className: "schema" },
    el("p", { className: "type-line" }, "Type: ", el("span", { className: "type", text: typeOf(schema) })),
    describe(schema), structure(schema, [], 0));
}

// ------------------------------------------------------------------ operations

function schemeText(name) {
  const schemes = isObject(spec.components) && isObject(spec.components.securitySchemes)
    ? spec.components.securitySchemes : {};
  const scheme = resolved(schemes[name]);
  if (!isObject(scheme)) return name;
  if (scheme.type === "apiKey") return `the ${scheme.in} ${scheme.name}`;
  if (scheme.type === "http") return `HTTP ${scheme.scheme} authentication`;
  return `${name} (${scheme.type})`;
}

// the operation's security requirement (the document's when it states none of its own):
// open when there is none, or when one of its alternatives is empty
function access(requirement) {
  const alternatives = Array.isArray(requirement) ? requirement.filter(isObject) : [];
  if (!alternatives.length || alternatives.some((one) => !Object.keys(one).length)) {
    return { open: true, text: "Open: no API key needed." };
  }
  const how = alternatives.map((one) => Object.keys(one).map(schemeText).join(" and "));
  return { open: false, text: `Needs the API key, in ${how.join(", or ")}.` };
}

function accessLine(requirement) {
  const { open, text } = access(requirement);
  return el("p", { className: `access ${open ? "open" : "keyed"}` },
    el("span", { className: "badge", text: open ? "No key" : "Key" }), " ", text);
}

function operationsOf() {
  const found = [];
  const paths = isObject(spec.paths) ? spec.paths : {};
  for (const [path, written] of Object.entries(paths)) {
    const item = resolved(written);
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      const parameters = new Map(); // the path's, then the operation's (which win)
      for (const listed of [item.parameters, operation.parameters]) {
        for (const one of Array.isArray(listed) ? listed : []) {
          const parameter = resolved(one);
          if (isObject(parameter)) parameters.set(`${parameter.in} ${parameter.name}`, parameter);
        }
      }
      const tags = Array.isArray(operation.tags) ? operation.tags.filter((t) => typeof t === "string") : [];
      const group = tags.length ? tags[0] : `/${path.split("/")[1] || ""}`;
      const words = [method, path, operation.summary, operation.description, group,
        ...[...parameters.values()].map((p) => p.name)];
      found.push({
        method, path, operation, group, parameters: [...parameters.values()],
        id: `${method}-${path}`,
        search: words.filter((w) => typeof w === "string").join(" ").toLowerCase(),
      });
    }
  }
  return found;
}

function parameterView(parameter) {
  let schema = parameter.schema;
  if (!isObject(schema) && isObject(parameter.content)) { // a parameter by media type
    const [first] = Object.values(parameter.content);
    schema = isObject(first) ? first.schema : undefined;
  }
  return member({
    head: [code(String(parameter.name), "name"), " ",
      el("span", { className: "where", text: `in ${parameter.in}` }), " ",
      needed(parameter.required === true)],
    schema: isObject(schema) ? schema : {}, trail: [], depth: 0,
    notes: [...paragraphs(parameter.description, "description"),
      parameter.deprecated === true ? el("p", { className: "facts", text: "deprecated" }) : null],
  });
}

function contentView(content, collapsed) {
  if (!isObject(content)) return [];
  return Object.entries(content).map(([media, written]) => {
    const body = resolved(written);
    const schema = isObject(body) ? body.schema : undefined;
    const heading = el("p", { className: "media" }, "As ", code(media));
    if (schema === undefined) return el("div", { className: "content" }, heading);
    if (!collapsed) return el("div", { className: "content" }, heading, schemaBlock(schema));
    const details = el("details", { className: "content" },
      el("summary", {}, "As ", code(media), `: ${typeOf(schema)}`));
    details.addEventListener("toggle", () => {
      if (!details.dataset.drawn) { details.dataset.drawn = "yes"; details.append(schemaBlock(schema)); }
    });
    return details;
  });
}

function responseView(status, written) {
  const response = resolved(written);
  if (!isObject(response)) return null;
  const shared = isObject(written) && typeof written.$ref === "string" ? refName(written.$ref) : null;
  const headers = isObject(response.headers) ? Object.entries(response.headers) : [];
  return el("li", { className: "response" },
    el("div", { className: "member-head" }, code(status, `status status-${String(status)[0]}`), " ",
      el("span", { text: response.description || "" }),
      shared ? el("span", { className: "muted", text: ` (${shared})` }) : null),
    headers.length ? el("ul", { className: "members" }, headers.map(([name, header]) => {
      const described = resolved(header);
      return member({ head: [code(name, "name"), " ", el("span", { className: "where", text: "header" })],
        schema: isObject(described) && isObject(described.schema) ? described.schema : {},
        trail: [], depth: 0, notes: paragraphs(isObject(described) ? described.description : "", "description") });
    })) : null,
    contentView(response.content, !/^2/.test(String(status))));
}

function operationView(op) {
  const o = op.operation;
  const label = `${op.method.toUpperCase()} ${op.path}`;
  const requirement = "security" in o ? o.security : spec.security;
  const body = resolved(o.requestBody);
  const responses = isObject(o.responses) ? Object.entries(o.responses) : [];
  return el("section", { className: "operation", id: op.id, tabIndex: -1,
    "aria-labelledby": `${op.id}-title` },
    el("h3", { id: `${op.id}-title` },
      el("span", { className: `method method-${op.method}`, text: op.method.toUpperCase() }), " ",
      el("code", { className: "path" }, breakable(op.path)), " ",
      el("a", { className: "permalink", href: `#${op.id}`, "aria-label": `Link to ${label}`, text: "#" })),
    typeof o.summary === "string" ? el("p", { className: "summary", text: o.summary }) : null,
    accessLine(requirement),
    o.deprecated === true ? el("p", { className: "error", text: "Deprecated." }) : null,
    paragraphs(o.description, "description"),
    op.parameters.length ? [el("h4", { text: "Parameters" }),
      el("ul", { className: "members" }, op.parameters.map(parameterView))] : null,
    isObject(body) ? [el("h4", { text: "Request body" }),
      el("p", { className: "muted", text: body.required === true ? "Required." : "Optional." }),
      paragraphs(body.description, "description"), contentView(body.content, false)] : null,
    responses.length ? [el("h4", { text: "Responses" }),
      el("ul", { className: "responses" }, responses.map(([status, r]) => responseView(status, r)))] : null);
}

// ------------------------------------------------------------------ the page

function render(text) {
  const info = isObject(spec.info) ? spec.info : {};
  const title = typeof info.title === "string" ? info.title : "API";
  document.title = `${title} ${info.version || ""} · API reference`;
  const operations = operationsOf();
  const groups = new Map();
  const order = Array.isArray(spec.tags) ? spec.tags.map((t) => isObject(t) && t.name) : [];
  for (const name of order) if (typeof name === "string") groups.set(name, []);
  for (const op of operations) {
    if (!groups.has(op.group)) groups.set(op.group, []);
    groups.get(op.group).push(op);
  }
  const tagged = new Map((Array.isArray(spec.tags) ? spec.tags : []).filter(isObject)
    .map((t) => [t.name, t.description]));
  shown.groups = [];
  if (shown.download) URL.revokeObjectURL(shown.download);
  shown.download = URL.createObjectURL(new Blob([text], { type: "application/json" }));

  const filter = el("input", { id: "filter", type: "search", autocomplete: "off",
    placeholder: "a method, a path or words", "aria-describedby": "filter-count" });
  const count = el("p", { id: "filter-count", className: "muted", role: "status" });
  const none = el("p", { id: "no-match", className: "muted", hidden: true,
    text: "No operation matches: try fewer words." });
  const contents = el("ul", {});
  const sections = el("div", { className: "operations" });
  for (const [name, ops] of groups) {
    if (!ops.length) continue;
    const id = `group-${name.replace(/^\//, "").replace(/[^\w-]+/g, "-") || "root"}`;
    const entries = ops.map((op) => {
      op.entry = el("li", {}, el("a", { href: `#${op.id}` },
        el("span", { className: `method method-${op.method}`, text: op.method.toUpperCase() }),
        breakable(op.path, "path")));
      op.section = operationView(op);
      return op.entry;
    });
    const group = { ops,
      entry: el("li", {}, el("a", { href: `#${id}`, text: `${name} (${ops.length})` }), el("ul", {}, entries)),
      section: el("section", { className: "group", id, "aria-labelledby": `${id}-title` },
        el("h2", { id: `${id}-title`, text: name }),
        paragraphs(tagged.get(name), "description"), ops.map((op) => op.section)) };
    shown.groups.push(group);
    contents.append(group.entry);
    sections.append(group.section);
  }
  shown.operations = operations;
  const narrow = () => applyFilter(filter.value, count, none);
  filter.addEventListener("input", narrow);
  filter.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && filter.value) { filter.value = ""; narrow(); }
  });
  const version = spec.openapi || spec.swagger || "";
  document.getElementById("reference").replaceChildren(
    el("div", { className: "intro" },
      el("h2", {}, title, " ", el("span", { className: "badge", text: `version ${info.version || "?"}` })),
      paragraphs(info.description, "description"),
      el("p", { className: "muted" }, `OpenAPI ${version} · ${operations.length} operations · `,
        el("a", { href: shown.download, download: "openapi.json", text: "download the document" })),
      el("p", {}, "Unless an operation says otherwise: ", access(spec.security).text)),
    el("div", { className: "filter" },
      el("label", { htmlFor: "filter", text: "Filter operations" }), " ", filter, count),
    el("div", { className: "layout" },
      el("nav", { className: "toc", "aria-label": "Operations" },
        // open beside the operations on a wide screen; on a phone, one line above them
        el("details", { open: matchMedia("(min-width: 60rem)").matches },
          el("summary", {}, el("h2", { text: `Operations (${operations.length})` })), contents)),
      el("div", {}, none, sections)));
  narrow();
}

function applyFilter(text, count, none) {
  const words = text.toLowerCase().split(/\s+/).filter(Boolean);
  let matching = 0;
  for (const op of shown.operations) {
    const match = words.every((word) => op.search.includes(word));
    op.section.hidden = !match;
    op.entry.hidden = !match;
    if (match) matching++;
  }
  for (const group of shown.groups) {
    const any = group.ops.some((op) => !op.section.hidden);
    group.section.hidden = !any;
    group.entry.hidden = !any;
  }
  const total = shown.operations.length;
  count.textContent = words.length
    ? `${matching} of ${total} operations match “${text.trim()}”.` : `${total} operations.`;
  none.hidden = matching > 0;
}

// #get-/documents: that operation (or #group-documents: that group), shown and focused
function goToHash() {
  let id = location.hash.slice(1);
  try { id = decodeURIComponent(id); } catch (_) { /* as written */ }
  const target = id ? document.getElementById(id) : null;
  const reference = document.getElementById("reference");
  if (!target || !reference.contains(target)) return;
  const filter = document.getElementById("filter");
  if (target.closest("[hidden]") && filter) { // narrowed away: the filter is cleared
    filter.value = "";
    filter.dispatchEvent(new Event("input"));
  }
  if (!target.hasAttribute("tabindex")) target.tabIndex = -1; // a group's section
  target.scrollIntoView();
  target.focus({ preventScroll: true });
}

// ------------------------------------------------------------------ signing in

function headers() {
  const key = sessionStorage.getItem(KEY);
  return key ? { "X-API-Key": key } : {};
}

function showSignIn(message) {
  document.getElementById("sign-in").hidden = false;
  document.getElementById("sign-out").hidden = true;
  document.getElementById("sign-in-error").textContent = message || "";
  document.getElementById("api-key").focus();
}

async function load() {
  const loading = document.getElementById("loading");
  loading.className = "muted";
  loading.textContent = "Loading the API description…";
  loading.hidden = false;
  let response;
  let text;
  try {
    response = await fetch("/openapi.json", { headers: headers(), cache: "no-cache" });
    text = await response.text();
  } catch (error) {
    loading.className = "error";
    loading.textContent = `The API description could not be loaded: ${error.message}`;
    return;
  }
  if (response.status === 401) {
    loading.hidden = true;
    const sent = Boolean(sessionStorage.getItem(KEY));
    sessionStorage.removeItem(KEY);
    showSignIn(sent ? "The key was not accepted; sign in again." : "");
    return;
  }
  try {
    if (!response.ok) throw new Error(`the service answered ${response.status}`);
    spec = JSON.parse(text);
    if (!isObject(spec) || !isObject(spec.paths)) throw new Error("it is no OpenAPI document");
  } catch (error) {
    loading.className = "error";
    loading.textContent = `The API description could not be read: ${error.message}`;
    return;
  }
  document.getElementById("sign-in").hidden = true;
  document.getElementById("sign-out").hidden = !sessionStorage.getItem(KEY);
  render(text);
  loading.hidden = true;
  goToHash();
}

document.getElementById("sign-in-form").addEventListener("submit", (event) => {
  event.preventDefault();
  const input = document.getElementById("api-key");
  sessionStorage.setItem(KEY, input.value);
  input.value = "";
  load();
});

document.getElementById("sign-out").addEventListener("click", () => {
  sessionStorage.removeItem(KEY);
  document.getElementById("reference").replaceChildren();
  load();
});

window.addEventListener("hashchange", goToHash);
load();

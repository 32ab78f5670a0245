#!/usr/bin/env python3
"""Check eval/multihop/questions.jsonl against the installed Debian HTML pages.

Stdlib only. Reads the corpus of eval/answers (the Debian Administrator's
Handbook and the Debian FAQ, English HTML) and checks every question's rules:
see eval/multihop/README.md. Exit status 0 when every question passes.

    python3 eval/multihop/check_set.py [--show] [questions.jsonl]
"""
import html.parser
import json
import re
import sys
from pathlib import Path

CORPUS = {
    "debian-handbook": (Path("/usr/share/doc/debian-handbook/html/en-US"), "*.html"),
    "debian-faq": (Path("/usr/share/doc/debian/FAQ"), "*.en.html"),
}
DEFAULT_SET = Path(__file__).with_name("questions.jsonl")

# Elements whose start or end closes a paragraph of text.
BLOCKS = {"p", "div", "li", "dt", "dd", "pre", "h1", "h2", "h3", "h4", "h5",
          "h6", "tr", "td", "th", "table", "ul", "ol", "dl", "br", "title",
          "blockquote"}
SKIP = {"script", "style"}
# Words too common to count as the "main word" of a bridge entity.
GENERIC = {"the", "and", "for", "daemon", "server", "service", "file", "files",
           "package", "packages", "program", "command", "tool", "system",
           "directory", "protocol", "project", "debian", "linux", "gnu",
           "etc", "usr", "var", "lib", "bin", "sbin", "conf", "html", "www"}


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.paras, self._cur, self._skip = [], [], 0

    def _flush(self):
        text = " ".join("".join(self._cur).split())
        if text:
            self.paras.append(text)
        self._cur = []

    def handle_starttag(self, tag, attrs):
        if tag in SKIP:
            self._skip += 1
        elif tag in BLOCKS:
            self._flush()

    def handle_endtag(self, tag):
        if tag in SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in BLOCKS:
            self._flush()

    def handle_data(self, data):
        if not self._skip:
            self._cur.append(data)

    def close(self):
        super().close()
        self._flush()


def paragraphs(path):
    """The text of an HTML file, as a list of white-space-normalised blocks."""
    parser = _Text()
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    parser.close()
    return parser.paras


def load_corpus():
    """{document name: [paragraph, ...]} for the 144 pages of eval/answers."""
    pages = {}
    for prefix, (folder, pattern) in CORPUS.items():
        for path in sorted(folder.glob(pattern)):
            pages[f"{prefix}/{path.name}"] = paragraphs(path)
    return pages


def norm(text):
    return " ".join(text.lower().split())


def contains(text, needle):
    """Case- and white-space-insensitive substring test."""
    return norm(needle) in norm(text)


def alternatives(fact):
    return fact if isinstance(fact, list) else [fact]


def main_words(bridge):
    """The distinctive words of a bridge name (its 'main word' and the like)."""
    words = re.split(r"[^A-Za-z0-9]+", bridge.lower())
    return [w for w in words if len(w) >= 3 and w not in GENERIC]


def check(q, pages):
    """A list of failed rules for one question (empty when it passes)."""
    errors = []
    for key in ("id", "question", "entity", "bridge", "first_page",
                "answer_page", "expected_pages", "expected_facts"):
        if key not in q:
            errors.append(f"missing field {key}")
    if errors:
        return errors
    first, answer = q["first_page"], q["answer_page"]
    for page in (first, answer):
        if page not in pages:
            errors.append(f"no page {page}")
    if errors:
        return errors
    if first == answer:
        errors.append("first_page and answer_page are the same page")
    if q["expected_pages"] != [first, answer]:
        errors.append("expected_pages is not [first_page, answer_page]")
    question, entity, bridge = q["question"], q["entity"], q["bridge"]
    first_text = "\n".join(pages[first])
    answer_text = "\n".join(pages[answer])
    # 1. the question names an entity found on first_page
    if not contains(question, entity):
        errors.append(f"question does not name its entity {entity!r}")
    if not contains(first_text, entity):
        errors.append(f"entity {entity!r} not on first_page")
    # 2. first_page names the bridge in the same paragraph as the entity
    if not any(contains(p, entity) and contains(p, bridge) for p in pages[first]):
        errors.append(f"no paragraph of first_page holds both {entity!r} and {bridge!r}")
    # 3. answer_page holds the bridge and every expected fact
    if not contains(answer_text, bridge):
        errors.append(f"bridge {bridge!r} not on answer_page")
    if not q["expected_facts"]:
        errors.append("no expected fact")
    for fact in q["expected_facts"]:
        if not any(contains(answer_text, alt) for alt in alternatives(fact)):
            errors.append(f"fact {fact!r} not on answer_page")
        # 4b. ... and no alternative of it on first_page
        for alt in alternatives(fact):
            if contains(first_text, alt):
                errors.append(f"fact {alt!r} is on first_page too")
    # 4a. the question does not give the bridge away
    if contains(question, bridge):
        errors.append(f"question contains the bridge {bridge!r}")
    for word in main_words(bridge):
        if word in question.lower():
            errors.append(f"question contains the bridge's word {word!r}")
    if not main_words(bridge):
        errors.append(f"bridge {bridge!r} has no distinctive word to check")
    if contains(bridge, entity) or contains(entity, bridge):
        errors.append("entity and bridge overlap")
    return errors


def main(argv):
    show = "--show" in argv
    args = [a for a in argv if not a.startswith("--")]
    path = Path(args[0]) if args else DEFAULT_SET
    pages = load_corpus()
    questions = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    print(f"{len(pages)} pages, {len(questions)} questions in {path.name}")
    failed, strict, ids = 0, 0, set()
    for q in questions:
        errors = check(q, pages)
        if q.get("id") in ids:
            errors.append("duplicate id")
        ids.add(q.get("id"))
        if not re.fullmatch(r"hop-\d\d", str(q.get("id"))):
            errors.append("id is not hop-NN")
        lacks = not errors and not contains("\n".join(pages[q["answer_page"]]), q["entity"])
        strict += lacks
        if errors:
            failed += 1
            print(f"FAIL {q.get('id')}: " + "; ".join(errors))
        elif show:
            mark = "strict" if lacks else "      "
            print(f"ok   {q['id']} {mark} {q['entity']!r} -> {q['bridge']!r} -> {q['answer_page']}")
    if not 30 <= len(questions) <= 40:
        print(f"FAIL: {len(questions)} questions, want 30 to 40")
        failed += 1
    print(f"{len(questions) - failed if failed <= len(questions) else 0} of {len(questions)} pass")
    print(f"strict (answer_page lacks the question's entity): {strict} of {len(questions)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

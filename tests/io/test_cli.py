"""The `ragchat` command as a user runs it."""

from __future__ import annotations

import fcntl
import os
import select
import socket
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from cryptography.fernet import Fernet

from ragcore import __version__
from tests.io.processes import RAGCHAT, clean_environ, run_cli, run_in_process
from tests.io.test_documents import CSV, DOCX, HTML, make_docx, make_pdf


def test_version(tmp_path):
    result = run_cli("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"ragchat {__version__}"


def test_help_explains_each_command(tmp_path):
    result = run_cli("--help", cwd=tmp_path)
    assert result.returncode == 0
    for command in ("serve", "ingest", "ask", "migrate", "keygen"):
        assert command in result.stdout


def test_keygen_prints_a_working_fernet_key(tmp_path):
    result = run_cli("keygen", cwd=tmp_path)
    key = result.stdout.strip()
    assert Fernet(key).decrypt(Fernet(key).encrypt(b"secret")) == b"secret"
    assert run_cli("keygen", cwd=tmp_path).stdout.strip() != key


def test_bad_settings_are_all_named_and_nothing_starts(tmp_path):
    result = run_cli(
        "serve",
        cwd=tmp_path,
        data_dir=tmp_path / "data",
        max_context_chars="plenty",
        webhook_targets="crm=http://crm.example.com",
        llm_provider="skynet",
        postgres_password="pa$$word",
    )
    assert result.returncode == 2
    for name in ("MAX_CONTEXT_CHARS", "WEBHOOK_TARGETS", "LLM_PROVIDER", "POSTGRES_PASSWORD"):
        assert name in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "data").exists()


def test_a_bad_secret_is_named_but_never_printed(tmp_path):
    hook = "http://hooks.example.com/services/T0SEKRET/B0SEKRET/XyZ123SEKRETtoken"
    result = run_cli("serve", cwd=tmp_path, data_dir=tmp_path / "data", chatops_webhook_url=hook)
    assert result.returncode == 2
    assert "CHATOPS_WEBHOOK_URL: must be an https:// URL" in result.stderr
    assert "not shown: it is a secret" in result.stderr
    printed = result.stdout + result.stderr
    assert "SEKRET" not in printed and "services/" not in printed
    assert "Traceback" not in printed
    assert not (tmp_path / "data").exists()


def test_a_dotenv_file_is_read_and_named_in_errors_the_same_way(tmp_path):
    (tmp_path / ".env").write_text("APP_PORT=eighty\n")
    result = run_cli("serve", cwd=tmp_path, data_dir=tmp_path / "data")
    assert result.returncode == 2
    assert "APP_PORT: must be a whole number, got 'eighty'" in result.stderr


def test_a_public_bind_without_a_key_refuses_to_start_and_says_why(tmp_path):
    result = run_cli("serve", cwd=tmp_path, data_dir=tmp_path / "data", app_bind="0.0.0.0")
    assert result.returncode == 2
    assert "SERVICE_API_KEY" in result.stderr and "ALLOW_INSECURE_BIND" in result.stderr
    assert not (tmp_path / "data").exists()


@contextmanager
def port_in_use() -> Iterator[int]:
    """A port something else already listens on."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_port_in_use_is_one_line_naming_it_before_anything_starts(tmp_path):
    data = tmp_path / "data"
    with port_in_use() as port:
        api = run_cli("serve", cwd=tmp_path, data_dir=data, app_port=port)
        beside = run_cli(  # the voice server beside the API, on the embedded database
            "serve", cwd=tmp_path, data_dir=data, voiceai_api_key="k", voice_port=port
        )
        alone = run_cli(  # a database that would fail: it is never reached
            "voice",
            cwd=tmp_path,
            data_dir=data,
            voiceai_api_key="k",
            voice_port=port,
            database_url="postgresql://ragchat:pw@127.0.0.1:1/ragchat",
        )
    for result, setting in ((api, "APP_PORT"), (beside, "VOICE_PORT"), (alone, "VOICE_PORT")):
        assert result.returncode == 2, result.stderr
        assert result.stderr == (
            f"ragchat: port {port} is already in use (127.0.0.1:{port}, {setting}): stop "
            f"what listens there or set {setting} to a free port\n"
        )
        assert "Traceback" not in result.stdout
    assert not data.exists()  # no embedded database was started


def test_an_unreachable_database_is_a_clear_error(tmp_path):
    result = run_cli(
        "migrate",
        cwd=tmp_path,
        timeout=60,
        database_url="postgresql://ragchat:secretpw@127.0.0.1:1/ragchat",
    )
    assert result.returncode == 2
    assert "cannot connect to the database at DATABASE_URL" in result.stderr
    assert "secretpw" not in result.stderr + result.stdout


def test_migrate_applies_once(tmp_path, empty_database_url, monkeypatch, capsys):
    def migrate() -> tuple[int, str, str]:
        return run_in_process(
            monkeypatch, capsys, "migrate", cwd=tmp_path, database_url=empty_database_url
        )

    code, first, _ = migrate()
    assert code == 0 and "001_documents" in first
    assert migrate()[1].strip() == "the database is up to date"


def test_ingest_a_folder_then_ask(tmp_path, database_url):
    docs = tmp_path / "docs"
    (docs / "policies").mkdir(parents=True)
    (docs / "policies" / "returns.md").write_text(
        "# Returns\n\nItems can be returned within 30 days of delivery."
    )
    (docs / "hours.txt").write_text("The shop opens at 9 am on weekdays.")
    (docs / "copy.txt").write_text("The shop opens at 9 am on weekdays.\n")
    (docs / "clip.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    (docs / "empty.md").write_text("  \n")

    result = run_cli("ingest", str(docs), cwd=tmp_path, database_url=database_url)
    assert result.returncode == 1, result.stderr  # some failed; those added stay (below)
    assert "added 2 file(s), 2 chunks; skipped 1 duplicate(s); failed 2" in result.stdout
    assert "clip.mp4: unsupported type" in result.stdout
    assert "empty.md: text: has no words to index" in result.stdout

    with psycopg.connect(database_url) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM documents ORDER BY name")]
    assert names == ["copy.txt", "returns.md"]  # files go in path order: hours.txt is the copy

    asked = run_cli(
        "ask", "How long can items be returned?", cwd=tmp_path, database_url=database_url
    )
    assert asked.returncode == 0, asked.stderr
    assert "within 30 days of delivery. [1]" in asked.stdout
    assert "[1] returns.md" in asked.stdout


def test_a_folder_with_nothing_to_read_is_a_warning_and_nothing_found_exits_1(
    tmp_path, database_url
):
    empty = tmp_path / "empty"
    empty.mkdir()
    hidden = tmp_path / "hidden"
    (hidden / ".git").mkdir(parents=True)
    (hidden / ".git" / "notes.md").write_text("# Not for the knowledge base\n\nHidden.")
    warned = (
        "ragchat: warning: {} holds no file of a supported type "
        "(txt, md, html, pdf, docx, csv, png, jpg, tif); nothing was read from it"
    )

    nothing = run_cli("ingest", str(empty), str(hidden), cwd=tmp_path, database_url=database_url)
    assert nothing.returncode == 1  # a wrong path or a volume not mounted: a script sees it
    assert "added 0 file(s), 0 chunks; skipped 0 duplicate(s); failed 0" in nothing.stdout
    assert nothing.stderr.splitlines() == [warned.format(empty), warned.format(hidden)]

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hours.txt").write_text("The shop opens at 9 am on weekdays.")
    beside = run_cli("ingest", str(docs), str(empty), cwd=tmp_path, database_url=database_url)
    assert beside.returncode == 0, beside.stderr  # the folder is still named
    assert "added 1 file(s)" in beside.stdout
    assert beside.stderr.splitlines() == [warned.format(empty)]


def test_ingest_reads_every_format_and_says_why_a_file_failed(tmp_path, database_url):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hours.html").write_bytes(HTML)
    (docs / "policy.pdf").write_bytes(make_pdf([["Refunds are paid within 5 business days."]]))
    (docs / "handbook.docx").write_bytes(make_docx())
    (docs / "stock.csv").write_bytes(CSV)
    (docs / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type")
    (docs / "again.csv").write_bytes(CSV)

    result = run_cli("ingest", str(docs), cwd=tmp_path, database_url=database_url)
    assert result.returncode == 1, result.stderr  # broken.pdf
    assert "added 4 file(s)" in result.stdout
    assert "skipped 1 duplicate(s); failed 1" in result.stdout
    assert f"duplicate: {docs / 'stock.csv'} (same content as document " in result.stdout
    assert f"failed: {docs / 'broken.pdf'}: file: is not a readable PDF" in result.stdout

    with psycopg.connect(database_url) as conn:
        stored = dict(conn.execute("SELECT name, content_type FROM documents").fetchall())
    assert stored == {
        "again.csv": "text/csv",
        "handbook.docx": DOCX,
        "hours.html": "text/html",
        "policy.pdf": "application/pdf",
    }

    asked = run_cli(
        "ask", "How many days of paid leave do staff get?", cwd=tmp_path, database_url=database_url
    )
    assert "25 days" in asked.stdout and "[1] handbook.docx" in asked.stdout


def test_ingest_shows_progress_on_a_terminal(tmp_path, database_url):
    """On a terminal, a bar counts files and chunks, with rates and the time left."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"note{i}.md").write_text(f"# Note {i}\n\nFact number {i} about the shop.")
    master, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    process = subprocess.Popen(
        [*RAGCHAT, "ingest", str(docs)],
        cwd=tmp_path,
        env=clean_environ(database_url=database_url),
        stdout=subprocess.PIPE,
        stderr=terminal,
    )
    os.close(terminal)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed: the process is done
                break
            if not data:
                break
            shown += data
        elif process.poll() is not None:
            break
    os.close(master)
    out, _ = process.communicate(timeout=60)
    bar = shown.decode("utf-8", "replace")
    assert process.returncode == 0, bar
    assert "3/3" in bar and "file/s" in bar
    assert "3 chunks" in bar and "chunks/s" in bar
    assert "<00:00" in bar  # the time left
    assert "added 3 file(s), 3 chunks" in out.decode()


def test_ask_refuses_an_unknown_role_as_the_api_does(tmp_path, database_url):
    result = run_cli(
        "ask", "When do you open?", "--role", "pirate", cwd=tmp_path, database_url=database_url
    )
    assert result.returncode == 2
    assert "unknown role 'pirate'" in result.stderr and "support" in result.stderr


def test_the_voice_server_alone_needs_the_apis_database(tmp_path):
    result = run_cli("voice", cwd=tmp_path, data_dir=tmp_path / "data", voiceai_api_key="k")
    assert result.returncode == 2
    assert "DATABASE_URL" in result.stderr and "ragchat serve" in result.stderr
    assert not (tmp_path / "data").exists()


def test_the_voice_server_needs_the_speech_key(tmp_path, database_url):
    result = run_cli("voice", cwd=tmp_path, database_url=database_url)
    assert result.returncode == 2
    assert "VOICEAI_API_KEY" in result.stderr


def test_a_public_voice_bind_without_signatures_refuses_to_start_and_says_why(tmp_path):
    result = run_cli(
        "serve", cwd=tmp_path, data_dir=tmp_path / "data", voiceai_api_key="k", voice_bind="0.0.0.0"
    )
    assert result.returncode == 2
    assert "VOICE_BIND=0.0.0.0" in result.stderr and "TELCO_AUTH_TOKEN" in result.stderr
    assert not (tmp_path / "data").exists()


def test_ingest_replaces_a_document_of_the_same_name_only_with_replace(
    tmp_path, database_url, monkeypatch, capsys
):
    def ingest(*args: str) -> tuple[int, str, str]:
        return run_in_process(
            monkeypatch, capsys, "ingest", *args, cwd=tmp_path, database_url=database_url
        )

    first = tmp_path / "first"
    first.mkdir()
    (first / "returns.md").write_text("# Returns\n\nItems can be returned within 14 days.")
    assert ingest(str(first))[0] == 0

    second = tmp_path / "second"
    (second / "a").mkdir(parents=True)
    (second / "b").mkdir()
    (second / "a" / "returns.md").write_text("# Returns\n\nItems can be returned within 30 days.")
    (second / "b" / "returns.md").write_text("# Returns\n\nA third text of the same name.")
    code, refused, _ = ingest(str(second / "a"))
    assert code == 1
    assert (
        f"failed: {second / 'a' / 'returns.md'}: a different document named 'returns.md' is "
        "stored (document 1); nothing was stored: run `ragchat ingest --replace`"
    ) in refused
    code, result, _ = ingest("--replace", str(second))
    assert code == 1  # b/returns.md refused
    assert "added 1 file(s), 1 chunks; skipped 0 duplicate(s); failed 1; replaced 1" in result
    assert f"replaced: document 1, returns.md by {second / 'a' / 'returns.md'}" in result
    assert f"failed: {second / 'b' / 'returns.md'}: name: has the same name as" in result
    with psycopg.connect(database_url) as conn:
        texts = [r[0] for r in conn.execute("SELECT text FROM documents")]
    assert texts == ["# Returns\n\nItems can be returned within 30 days."]


def test_documents_list_rename_and_delete_by_id_or_name(
    tmp_path, database_url, monkeypatch, capsys
):
    """In this process: each command's start-up would cost more than the command."""

    def cli(*args: str) -> tuple[int, str, str]:
        return run_in_process(monkeypatch, capsys, *args, cwd=tmp_path, database_url=database_url)

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "Refund policy.md").write_text("Refunds are paid within 5 days.")
    (docs / "hours.txt").write_text("The shop opens at 9 am.")
    (docs / "refund-form.txt").write_text("Fill in the form to ask for a refund.")
    assert cli("ingest", str(docs))[0] == 0

    code, listed, counted = cli("documents", "list")
    assert code == 0
    assert [line.split("\t")[:3] for line in listed.splitlines()] == [
        ["1", "Refund policy.md", "1 chunks"],
        ["2", "hours.txt", "1 chunks"],
        ["3", "refund-form.txt", "1 chunks"],
    ]
    assert "3 of 3 document(s)" in counted

    _, found, counted = cli("documents", "list", "--query", "REFUND", "--limit", "1")
    assert [line.split("\t")[1] for line in found.splitlines()] == ["Refund policy.md"]
    assert "1 of 2 document(s) named like 'REFUND'" in counted

    code, _, taken = cli("documents", "rename", "2", "refund-form.txt")
    assert code == 2
    assert "a different document named 'refund-form.txt' is stored (document 3)" in taken
    _, renamed, _ = cli("documents", "rename", "2", " opening hours.txt ")
    assert renamed.strip() == "renamed document 2 to opening hours.txt"
    assert cli("documents", "rename", "9", "x.txt")[0] == 2
    assert cli("documents", "rename", "2", " ")[2].startswith("ragchat: NEW_NAME")

    code, by_name, _ = cli("documents", "delete", "Refund policy.md")
    assert (code, by_name.strip()) == (0, "deleted document 1, Refund policy.md (1 chunks)")
    _, by_id, _ = cli("documents", "delete", "2")
    assert by_id.strip() == "deleted document 2, opening hours.txt (1 chunks)"

    code, _, missing = cli("documents", "delete", "menu.pdf")
    assert code == 2
    assert "no document with the id or name 'menu.pdf'" in missing
    assert "ragchat documents list" in missing
    _, left, _ = cli("documents", "list")
    assert [line.split("\t")[1] for line in left.splitlines()] == ["refund-form.txt"]

    code, _, bad = cli("documents", "list", "--limit", "0")
    assert code == 2 and "--limit" in bad


def test_graph_rebuild_and_status(tmp_path, database_url, monkeypatch, capsys):
    """In this process: each command's start-up would cost more than the command."""

    def cli(*args: str, **settings: str) -> tuple[int, str, str]:
        return run_in_process(
            monkeypatch, capsys, *args, cwd=tmp_path, database_url=database_url, **settings
        )

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "suppliers.md").write_text("The Widget X is made by Foo Ltd in Leeds.")
    (docs / "owners.md").write_text("Foo Ltd was acquired by Bar Inc in 2021.")
    on = {"graph_enabled": "true"}
    assert cli("ingest", str(docs), **on)[0] == 0
    code, status, _ = cli("graph", "status", **on)
    assert code == 0
    # Widget X, Foo Ltd, Leeds, Bar Inc; Foo Ltd in both documents
    assert status.strip() == "graph (postgres): 4 entities, 5 mentions, 4 relations"

    # DOMAIN_TERMS changed: the rebuild reads every document again
    code, rebuilt, _ = cli("graph", "rebuild", domain_terms="acquired", **on)
    assert code == 0
    assert rebuilt.splitlines() == [
        "recorded 2 document(s)",
        "graph (postgres): 5 entities, 6 mentions, 6 relations",
    ]

    # a document deleted from the command line leaves the graph too
    assert cli("documents", "delete", "owners.md", **on)[0] == 0
    with psycopg.connect(database_url) as conn:
        names = [row[0] for row in conn.execute("SELECT name FROM graph_entities ORDER BY key")]
    assert names == ["Foo Ltd", "Leeds", "Widget X"]

    code, _, off = cli("graph", "status")
    assert code == 2 and "GRAPH_ENABLED=true" in off


def test_sites_add_list_disable_and_enable(tmp_path, database_url, monkeypatch, capsys):
    def cli(*args: str) -> tuple[int, str, str]:
        return run_in_process(
            monkeypatch, capsys, "sites", *args, cwd=tmp_path, database_url=database_url
        )

    code, added, _ = cli(
        "add", "shop", "--origin", "https://shop.example.com/", "--origin", "http://localhost:3000"
    )
    assert code == 0
    lines = added.splitlines()
    public_id = lines[0].split(": ")[1]
    assert public_id.startswith("site_") and f'data-site="{public_id}"' in lines[1]
    assert lines[2].startswith("identity secret (shown once")
    assert cli("disable", "1")[1].strip() == "site 1 (shop) disabled"
    _, listed, _ = cli("list")
    assert listed.split("\t")[1:5] == [
        public_id,
        "shop",
        "disabled",
        "https://shop.example.com http://localhost:3000",
    ]
    assert lines[2].split(": ")[1] not in listed  # the secret is shown once
    code, _, bad = cli("add", "other", "--origin", "http://shop.example.com")
    assert code == 2 and "allowed_origins" in bad and "https" in bad
    code, _, taken = cli("add", "shop", "--origin", "https://a.example.com")
    assert code == 2 and "exists already" in taken
    assert cli("enable", "9")[0] == 2


def test_keys_create_list_and_revoke(tmp_path, database_url, monkeypatch, capsys):
    def cli(*args: str) -> tuple[int, str, str]:
        return run_in_process(
            monkeypatch, capsys, "keys", *args, cwd=tmp_path, database_url=database_url
        )

    code, made, note = cli(
        "create", "uploads", "--scope", "ingest", "--scope", "read", "--tokens-per-day", "5000"
    )
    assert code == 0 and "shown only this once" in note
    heading, key = made.splitlines()
    assert heading == "made key 1 (uploads, read, ingest):"
    assert key.startswith("rck_") and len(key) == 47
    _, listed, _ = cli("list")
    assert listed.strip().split("\t") == [
        "1", "uploads", f"{key[:10]}…", "read,ingest", "-/min", "5000 tokens/day", "in use"
    ]  # fmt: skip
    assert key not in listed  # shown once
    code, _, bad = cli("create", "other", "--scope", "root")
    assert code == 2 and bad.startswith("ragchat: --scope: 'root' is none of admin")
    code, _, taken = cli("create", "uploads", "--scope", "chat")
    assert code == 2 and "in use already" in taken
    assert cli("revoke", "1")[1].strip() == "key 1 revoked"
    assert "\trevoked " in cli("list")[1]
    assert cli("revoke", "9")[0] == 2


def test_answers_import_names_each_malformed_line_and_imports_all_or_nothing(
    tmp_path, database_url, monkeypatch, capsys
):
    def cli(*args: str) -> tuple[int, str, str]:
        return run_in_process(
            monkeypatch, capsys, "answers", *args, cwd=tmp_path, database_url=database_url
        )

    def stored() -> list[tuple[str, str]]:
        with psycopg.connect(database_url) as conn:
            return conn.execute(
                """SELECT q.question, a.answer FROM owner_answer_questions q
                     JOIN owner_answers a ON a.id = q.answer_id ORDER BY q.id"""
            ).fetchall()

    faq = tmp_path / "faq.csv"
    faq.write_text(
        "question,answer\n"
        "Do you deliver?,We deliver within 10 km.\n"
        ",An answer with no question\n"
        "Can I pay by card?,\n"
    )
    code, _, errors = cli("import", str(faq))
    assert code == 1
    assert f"{faq}:3: questions must be a list of 1 to 50 questions" in errors
    assert f"{faq}:4: answer must be the answer, as text" in errors
    assert stored() == []

    faq.write_text("question,answer\nDo you deliver?,We deliver within 10 km.\n")
    code, out, _ = cli("import", str(faq))
    assert (code, out.strip()) == (0, "imported 1 answer(s): 1 new, 0 rewritten, 0 unchanged")
    assert stored() == [("Do you deliver?", "We deliver within 10 km.")]

    other = tmp_path / "faq.txt"
    other.write_text("[]")
    code, _, errors = cli("import", str(other))
    assert code == 2 and "name a .csv or .json file, or give --format" in errors


@contextmanager
def static_site(folder) -> Iterator[str]:
    """``folder`` served over HTTP on 127.0.0.1 by the standard library's file server
    (Last-Modified, If-Modified-Since), in a thread; its base URL."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(folder))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()


def test_crawl_a_site_then_again_by_its_id(tmp_path, database_url, monkeypatch, capsys):
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text(
        '<h1>Shop</h1><p>We open at nine.</p><a href="menu.html">Menu</a>'
        '<a href="staff.html">Staff</a><a href="gone.html">Old</a>'
    )
    (site / "menu.html").write_text("<h1>Menu</h1><p>A large pizza is 12 euros.</p>")
    (site / "staff.html").write_text("<p>Staff only.</p>")
    (site / "robots.txt").write_text("User-agent: *\nDisallow: /staff\n")

    def cli(*args: str) -> tuple[int, str, str]:
        return run_in_process(
            monkeypatch, capsys, "crawl", *args, cwd=tmp_path, database_url=database_url,
            websites_allow_private_targets="true",
        )  # fmt: skip

    with static_site(site) as base:
        code, out, err = cli(f"{base}/index.html", "--name", "shop")
        assert code == 0, err
        assert out.splitlines()[0] == "website 1 'shop' made"
        assert "2 stored, 1 disallowed, 1 gone" in out
        assert f"gone: {base}/gone.html: HTTP 404" in out
        code, out, _ = cli("1")
        assert code == 0 and "2 unchanged, 1 disallowed, 1 gone" in out
        assert cli("9")[0] == 2
    with psycopg.connect(database_url) as conn:
        names = {row[0] for row in conn.execute("SELECT name FROM documents")}
    assert names == {f"{base}/index.html", f"{base}/menu.html"}

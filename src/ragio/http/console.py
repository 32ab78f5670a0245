"""The owner's console and the API reference: static files shipped in the package
(``ragio/console``), served at ``/`` and ``/docs`` and under ``/console/`` without the API
key (they hold no data: every call the pages make sends the key the owner entered), with
a strict Content-Security-Policy."""

from __future__ import annotations

from importlib import resources

from quart import Blueprint, Response

from ragcore.api.operations import Reply, operation

blueprint = Blueprint("console", __name__)
FILES = {
    "index.html": "text/html; charset=utf-8",
    "console.js": "text/javascript; charset=utf-8",
    "setup.js": "text/javascript; charset=utf-8",
    "console.css": "text/css; charset=utf-8",
    "docs.html": "text/html; charset=utf-8",
    "docs.js": "text/javascript; charset=utf-8",
    "docs.css": "text/css; charset=utf-8",
}
#: scripts, styles and calls from this origin only; no inline code, no frames, no plugins
POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-cache",
}


def _file(name: str) -> Response:
    body = resources.files("ragio.console").joinpath(name).read_bytes()
    return Response(body, content_type=FILES[name], headers=HEADERS)


@blueprint.get("/")
@operation(Reply(200, "The console's page", {"type": "string"}, "text/html"), open=True)
async def console() -> Response:
    """The owner's console, in the browser"""
    return _file("index.html")


@blueprint.get("/console/console.js")
@operation(Reply(200, "The console's script", {"type": "string"}, "text/javascript"), open=True)
async def console_script() -> Response:
    """The console's script"""
    return _file("console.js")


@blueprint.get("/console/setup.js")
@operation(
    Reply(200, "The console's set-up pages", {"type": "string"}, "text/javascript"), open=True
)
async def console_setup_script() -> Response:
    """The console's set-up pages"""
    return _file("setup.js")


@blueprint.get("/console/console.css")
@operation(Reply(200, "The console's style", {"type": "string"}, "text/css"), open=True)
async def console_style() -> Response:
    """The console's style"""
    return _file("console.css")


@blueprint.get("/docs")
@operation(Reply(200, "The API reference's page", {"type": "string"}, "text/html"), open=True)
async def reference() -> Response:
    """The API reference, in the browser (made from /openapi.json)"""
    return _file("docs.html")


@blueprint.get("/console/docs.js")
@operation(
    Reply(200, "The API reference's script", {"type": "string"}, "text/javascript"), open=True
)
async def reference_script() -> Response:
    """The API reference's script"""
    return _file("docs.js")


@blueprint.get("/console/docs.css")
@operation(Reply(200, "The API reference's style", {"type": "string"}, "text/css"), open=True)
async def reference_style() -> Response:
    """The API reference's style"""
    return _file("docs.css")

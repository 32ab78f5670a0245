"""A fake Telegram Bot API on 127.0.0.1: ``POST /bot<token>/sendMessage``,
``/editMessageReplyMarkup``, ``/answerCallbackQuery`` and ``/setWebhook`` as the real API
answers them (``{"ok": true, "result": …}``, or ``{"ok": false, "error_code",
"description"}``), checking the token, the text limit and an inline keyboard's shape
(each button a ``text`` and a ``callback_data`` of 1 to 64 bytes).

It keeps the messages it sent as the chat shows them (``messages``: by chat and message
id, with their ``reply_markup`` as last edited), so a test reads what the customer sees,
and makes the ``callback_query`` update a customer's press of a button sends (``press``:
Telegram's shape, the pressed message in it; ``forged_press``: data no button has, as a
modified client could send). A press is answered once (answerCallbackQuery with an id it
never made, or a second time, is refused as Telegram refuses it). Records every request;
``sent`` lists the messages it took, ``answered`` the presses answered, ``webhooks`` the
registrations. Serve it with ``serve_fake`` and set TELEGRAM_API_BASE_URL to its
``base_url``."""

from __future__ import annotations

import copy
import itertools
import zlib
from typing import Any

from tests.io.fakes.asgi import Failure, FakeServer, Recorded, Send, WireError

TEXT_LIMIT = 4096  # UTF-16 units, after entity parsing
ANSWER_TEXT_LIMIT = 200  # answerCallbackQuery's text
MAX_CALLBACK_DATA = 64  # bytes
NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)
QUERY_TOO_OLD = "Bad Request: query is too old and response timeout expired or query ID is invalid"


class BotApiError(WireError):
    def __init__(self, status: int, description: str, retry_after: int | None = None):
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if retry_after is not None:
            body["parameters"] = {"retry_after": retry_after}
        super().__init__(status, description, body, None)


class FakeTelegram(FakeServer):
    def __init__(self, token: str) -> None:
        super().__init__(api_key=token, reply="")
        self.sent: list[dict[str, Any]] = []
        self.webhooks: list[dict[str, Any]] = []
        #: the messages the bot sent, by (chat id as text, message id), as last edited
        self.messages: dict[tuple[str, int], dict[str, Any]] = {}
        self.answered: list[dict[str, Any]] = []  # answerCallbackQuery bodies taken
        self.bot = {
            "id": int(token.split(":", 1)[0]),
            "is_bot": True,
            "first_name": "Shop assistant",
            "username": "shop_assistant_bot",
        }
        self._ids = itertools.count(1000)
        self._updates = itertools.count(900_000)
        self._queries = itertools.count(4_382_000_000_000_000)
        self._open_queries: set[str] = set()

    # ------------------------------------------------------------ what a chat shows

    def message(self, chat_id: int | str, message_id: int | str) -> dict[str, Any]:
        return self.messages[(str(chat_id), int(message_id))]

    def buttons(self, chat_id: int | str, message_id: int | str) -> list[dict[str, Any]]:
        """The inline keyboard's buttons under the message, in order (none: no keyboard)."""
        markup = self.message(chat_id, message_id).get("reply_markup") or {}
        return [button for row in markup.get("inline_keyboard", []) for button in row]

    def press(
        self, chat_id: int | str, message_id: int | str, face: str, user_id: int = 4242
    ) -> dict[str, Any]:
        """The Update Telegram sends when the user presses the button whose text starts
        with ``face`` under the message (there must be one)."""
        [button] = [b for b in self.buttons(chat_id, message_id) if b["text"].startswith(face)]
        return self.forged_press(chat_id, message_id, button["callback_data"], user_id)

    def forged_press(
        self, chat_id: int | str, message_id: int | str, data: str, user_id: int = 4242
    ) -> dict[str, Any]:
        """The Update of a press under the message carrying ``data``, whatever its buttons
        say (a modified client's)."""
        query_id = str(next(self._queries))
        self._open_queries.add(query_id)
        shown = self.messages.get((str(chat_id), int(message_id))) or {
            "message_id": int(message_id),
            "date": 0,  # an InaccessibleMessage: too old for Telegram to show
            "chat": {"id": int(chat_id), "type": "private"},
        }
        return {
            "update_id": next(self._updates),
            "callback_query": {
                "id": query_id,
                "from": {"id": user_id, "is_bot": False, "first_name": "Ada"},
                "message": copy.deepcopy(shown),
                "chat_instance": f"-{zlib.crc32(str(chat_id).encode())}",
                "data": data,
            },
        }

    # ------------------------------------------------------------ the API

    async def _answer(self, request: Recorded, send: Send) -> None:
        prefix = f"/bot{self.api_key}/"
        if not request.path.startswith(prefix):
            raise BotApiError(401, "Unauthorized")
        await self._scripted()
        method = request.path[len(prefix) :]
        body = request.body if isinstance(request.body, dict) else {}
        if method == "sendMessage":
            result: Any = self._send_message(body)
        elif method == "editMessageReplyMarkup":
            result = self._edit_markup(body)
        elif method == "answerCallbackQuery":
            result = self._answer_query(body)
        elif method == "setWebhook":
            if not isinstance(body.get("url"), str):
                raise BotApiError(400, "Bad Request: bad webhook: URL must be provided")
            self.webhooks.append(body)
            await self._send_json(
                send, 200, {"ok": True, "result": True, "description": "Webhook was set"}
            )
            return
        else:
            raise BotApiError(404, "Not Found")
        await self._send_json(send, 200, {"ok": True, "result": result})

    def _send_message(self, body: dict[str, Any]) -> dict[str, Any]:
        text = body.get("text")
        if "chat_id" not in body:
            raise BotApiError(400, "Bad Request: chat_id is empty")
        if not isinstance(text, str) or not text.strip():
            raise BotApiError(400, "Bad Request: message text is empty")
        if len(text.encode("utf-16-le")) // 2 > TEXT_LIMIT:
            raise BotApiError(400, "Bad Request: message is too long")
        if "reply_markup" in body:
            _check_keyboard(body["reply_markup"])
        self.sent.append(body)
        message: dict[str, Any] = {
            "message_id": next(self._ids),
            "from": self.bot,
            "date": 1_700_000_000,
            "chat": {"id": body["chat_id"], "type": "private"},
            "text": text,
        }
        if body.get("reply_markup"):
            message["reply_markup"] = body["reply_markup"]
        self.messages[(str(body["chat_id"]), message["message_id"])] = message
        return copy.deepcopy(message)

    def _edit_markup(self, body: dict[str, Any]) -> dict[str, Any]:
        if "inline_message_id" not in body and not ("chat_id" in body and "message_id" in body):
            raise BotApiError(400, "Bad Request: message identifier is not specified")
        message = self.messages.get((str(body.get("chat_id")), body.get("message_id")))
        if message is None:
            raise BotApiError(400, "Bad Request: message to edit not found")
        markup = body.get("reply_markup") or {}
        if markup:
            _check_keyboard(markup)
        if markup == (message.get("reply_markup") or {}):
            raise BotApiError(400, NOT_MODIFIED)
        if markup:
            message["reply_markup"] = markup
        else:
            message.pop("reply_markup", None)
        message["edit_date"] = 1_700_000_060
        return copy.deepcopy(message)

    def _answer_query(self, body: dict[str, Any]) -> bool:
        query_id = body.get("callback_query_id")
        if not isinstance(query_id, str) or not query_id:
            raise BotApiError(400, "Bad Request: query_id is empty")
        if query_id not in self._open_queries:
            raise BotApiError(400, QUERY_TOO_OLD)
        text = body.get("text", "")
        if not isinstance(text, str) or len(text) > ANSWER_TEXT_LIMIT:
            raise BotApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        self._open_queries.discard(query_id)
        self.answered.append(body)
        return True

    def _failure(self, failure: Failure) -> WireError:
        if failure.status == 429:
            return BotApiError(429, "Too Many Requests: retry after 0", retry_after=0)
        return BotApiError(failure.status, "Internal Server Error")


def _check_keyboard(markup: Any) -> None:
    """An InlineKeyboardMarkup as the Bot API takes it: rows of buttons, each with its
    text and callback_data of 1 to 64 bytes (the only kind of button this service sends)."""
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise BotApiError(400, "Bad Request: can't parse inline keyboard markup JSON object")
    for button in (b for row in rows for b in row):
        if not isinstance(button, dict) or not isinstance(button.get("text"), str):
            raise BotApiError(400, "Bad Request: can't parse inline keyboard button: text")
        data = button.get("callback_data")
        if not isinstance(data, str) or not 1 <= len(data.encode()) <= MAX_CALLBACK_DATA:
            raise BotApiError(400, "Bad Request: BUTTON_DATA_INVALID")

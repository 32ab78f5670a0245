"""Which action a message calls for, and the question when a value is missing."""

from __future__ import annotations

import pytest

from ragcore.live.extraction import extract
from ragcore.live.matching import LiveAction, Matched, guess_language, match_action, question_for
from ragcore.live.templates import check_template

ORDER_STATUS = LiveAction(
    1,
    "Order status",
    10,
    "postgresql",
    check_template(
        "postgresql", "SELECT status, tracking_number FROM orders WHERE id = {order_id}"
    ),
)
ORDER_BY_EMAIL = LiveAction(
    2,
    "Orders by e-mail",
    10,
    "postgresql",
    check_template("postgresql", "SELECT id, status FROM orders WHERE email = {email}"),
)
INVOICES = LiveAction(
    3,
    "Invoices",
    11,
    "stripe",
    check_template("stripe", "email = {email}"),
    triggers=("my invoices", "Rechnungen"),
    auto_match=False,
)
CANCEL = LiveAction(
    4,
    "Cancel an order",
    10,
    "mysql",
    check_template("mysql", "UPDATE orders SET status = 'cancelled' WHERE id = {order_id}"),
    triggers=("cancel my order", "annuler ma commande"),
)
LOYALTY = LiveAction(
    5,
    "Loyalty points",
    12,
    "hubspot",
    check_template("hubspot", "loyalty_points = {caller}"),
    channels=("whatsapp",),
)
ACTIONS = (ORDER_STATUS, ORDER_BY_EMAIL, INVOICES, CANCEL, LOYALTY)


def matched(message: str, channel: str = "telegram", caller: str | None = None) -> Matched | None:
    return match_action(ACTIONS, message, extract(message).values(caller), channel)


def test_a_trigger_phrase_wins_over_auto_matching() -> None:
    result = matched("Please cancel my order 4411, the order status says open")
    assert result is not None
    assert (result.action, result.by, result.missing) == (CANCEL, "trigger", ())


@pytest.mark.parametrize(
    "message", ["ANNULER MA COMMANDE 7781", "Annulér ma commande n° 7781", "annuler  ma  commande!"]
)
def test_triggers_ignore_case_accents_and_spacing(message: str) -> None:
    result = matched(message)
    assert result is not None and result.action == CANCEL


def test_a_trigger_matches_whole_words_only() -> None:
    # "my invoices" is not in "my invoicesXY"; auto-matching is off for that action
    assert matched("show me my invoicesXY") is None


def test_a_trigger_only_action_is_never_auto_matched() -> None:
    result = matched("anything about invoices for a@b.com?")
    assert result is not None and result.action != INVOICES


def test_the_longest_trigger_wins() -> None:
    longer = LiveAction(9, "x", 10, "mysql", CANCEL.template, triggers=("cancel my order now",))
    result = match_action([CANCEL, longer], "cancel my order now", {}, "telegram")
    assert result is not None and result.action == longer


def test_auto_matching_on_the_columns_the_template_names() -> None:
    result = matched("what's the tracking number of order 4411?")
    assert result is not None
    assert (result.action, result.by, result.missing) == (ORDER_STATUS, "auto", ())


def test_an_action_whose_placeholders_the_message_fills_wins() -> None:
    # both templates mention orders and status; only the e-mail one can run now
    result = matched("status of my orders? I'm jane@example.com")
    assert result is not None
    assert (result.action, result.missing) == (ORDER_BY_EMAIL, ())
    result = matched("status of order 4411?")
    assert result is not None
    assert (result.action, result.missing) == (ORDER_STATUS, ())


def test_the_value_found_matches_in_any_language() -> None:
    result = matched("Wo ist meine Bestellung 55321?")
    assert result is not None and result.action == ORDER_STATUS


def test_ties_go_to_the_lower_id_whatever_the_order() -> None:
    twin = LiveAction(7, "twin", 10, "postgresql", ORDER_STATUS.template)
    for actions in ([ORDER_STATUS, twin], [twin, ORDER_STATUS]):
        result = match_action(actions, "order 4411 status", extract("order 4411").values(), "x")
        assert result is not None and result.action == ORDER_STATUS


def test_nothing_matches_a_message_about_something_else() -> None:
    assert matched("what are your opening hours?") is None


def test_one_word_in_common_and_no_value_is_not_enough() -> None:
    # a question for the knowledge base, not a reason to ask for an order number
    assert matched("what is your return policy for orders?") is None
    result = matched("what is the status of my order?")
    assert result is not None and result.missing == ("order_id",)


def test_an_action_restricted_to_channels_matches_only_on_them() -> None:
    assert matched("my loyalty points?", "telegram") is None
    result = matched("my loyalty points?", "whatsapp", caller="+14155550100")
    assert result is not None and (result.action, result.missing) == (LOYALTY, ())


def test_a_missing_value_is_named() -> None:
    result = matched("where is my order? the tracking number please")
    assert result is not None
    assert (result.action, result.missing) == (ORDER_STATUS, ("order_id",))


@pytest.mark.parametrize(
    ("message", "hint", "language"),
    [
        ("Where is my parcel?", None, "en"),
        ("Wo ist mein Paket? Ich warte seit Tagen", None, "de"),
        ("Bonjour, où est mon colis ? Merci", None, "fr"),
        ("Hola, ¿dónde está mi paquete? Gracias", None, "es"),
        ("Ciao, dove è il mio pacco? Grazie", None, "it"),
        ("Waar is mijn pakket? Bedankt", None, "nl"),
        ("Olá, onde está a minha encomenda? Obrigado", None, "pt"),
        ("mi pedido 9912 no llegó", None, "es"),
        ("o meu pedido 9912 não chegou", None, "pt"),
        ("???", None, "en"),
        ("ok", "de", "de"),
        ("ok", "ja", "en"),
    ],
)
def test_the_language_is_told_cheaply(message: str, hint: str | None, language: str) -> None:
    assert guess_language(message, hint) == language


def test_the_question_names_the_missing_value_in_plain_words() -> None:
    assert question_for(["order_id"]) == "What is your order number?"
    assert question_for(["order_id"], "de") == "Wie lautet Ihre Bestellnummer?"
    assert question_for(["order_id"], "fr") == "Quel est votre numéro de commande ?"
    assert question_for(["email", "phone"], "es") == (
        "Para consultarlo, indíqueme por favor: correo electrónico y número de teléfono."
    )
    assert question_for(["email"], "xx") == "What is the e-mail address on your order?"
    assert "{" not in question_for(["order_id", "email", "phone"], "it")


def test_a_write_runs_only_on_its_trigger_never_by_auto_matching() -> None:
    # the UPDATE mentions orders and status too, and its id is the lowest
    cancel = LiveAction(0, "Cancel", 10, "mysql", CANCEL.template)
    result = match_action([cancel], "status of order 4411?", {"order_id": "4411"}, "telegram")
    assert result is None
    result = match_action([cancel, ORDER_STATUS], "order 4411 status", {"order_id": "4411"}, "x")
    assert result is not None and result.action == ORDER_STATUS

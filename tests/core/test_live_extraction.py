"""The values a customer's message holds: real-world messages in seven languages."""

from __future__ import annotations

import pytest

from ragcore.live.extraction import caller_value, extract, normal_phone, spoken_digits

# message, order_id, email, phone
MESSAGES = [
    # English
    ("where is my order 4411?", "4411", None, None),
    ("Hi, order #A-1002 still hasn't arrived", "A-1002", None, None),
    ("my order number is 12-3456", "12-3456", None, None),
    ("Order no. 88213 - can I change the address?", "88213", None, None),
    ("Any update on ORD-77120? #77120", "77120", None, None),
    ("I'd like to order 2 shirts", None, None, None),
    ("I paid $44.99 for order 5512 on 12/03/2024", "5512", None, None),
    ("My order cost 45.99 €", None, None, None),
    ("hello, what are your opening hours?", None, None, None),
    ("Email me at John.Doe@Example.COM please", None, "john.doe@example.com", None),
    (
        "call me on +1 (415) 555-0100 about order 3391",
        "3391",
        None,
        "+14155550100",
    ),
    ("my number is 415.555.0100", None, None, "4155550100"),
    ("orders 4411 and 4412 both late", "4411", None, None),
    ("two emails: a@x.io and b@y.io", None, "a@x.io", None),
    ("I was born on 12.03.1985 and ordered 3 items", None, None, None),
    ("I want to order 100 pieces", None, None, None),
    ("order 2024-03-12 was wrong", None, None, None),
    ("ordered on 2024-03-12 10:30, still nothing", None, None, None),
    ("IBAN DE89 3704 0044 0532 0130 00", None, None, None),
    ("order 12 x 3 = 36", None, None, None),
    # German
    ("Bestellnummer 55321 ist noch nicht da", "55321", None, None),
    ("Wo ist meine Bestellung Nr. 99812?", "99812", None, None),
    ("meine Bestellung (Nr. 4411) fehlt", "4411", None, None),
    ("Meine Telefonnummer: 0171 1234567", None, None, "01711234567"),
    ("Auftragsnummer: 2024-1187, Mail max@beispiel.de", "2024-1187", "max@beispiel.de", None),
    ("Ich habe 3 Stück bestellt, Preis 19,99 €", None, None, None),
    # French
    ("Bonjour, commande n° 7781 pas reçue", "7781", None, None),
    ("Où en est ma commande numéro 33021 ?", "33021", None, None),
    ("mon téléphone : 06 12 34 56 78", None, None, "0612345678"),
    ("appelez-moi au 0033 6 12 34 56 78", None, None, "+33612345678"),
    # Spanish
    ("pedido 9912 no ha llegado", "9912", None, None),
    (
        "¿Dónde está mi pedido número 45123? mi correo es ana@correo.es",
        "45123",
        "ana@correo.es",
        None,
    ),
    ("mi teléfono es +34 612 345 678", None, None, "+34612345678"),
    # Italian
    ("ordine 3344 in ritardo", "3344", None, None),
    ("Il mio numero d'ordine? ordine n. 10293", "10293", None, None),
    ("cellulare 347 123 4567", None, None, "3471234567"),
    # Dutch
    ("Waar is mijn bestelling 66120?", "66120", None, None),
    ("bestelnummer: NL-5521 graag status", "NL-5521", None, None),
    ("mijn telefoonnummer is 06-12345678", None, None, "0612345678"),
    # Portuguese
    ("Onde está a minha encomenda 78123?", "78123", None, None),
    ("número do pedido 55110, email: joao@exemplo.pt", "55110", "joao@exemplo.pt", None),
    ("meu celular é +55 11 91234-5678", None, None, "+5511912345678"),
    # international forms of one number
    ("ring 0044 20 7946 0958", None, None, "+442079460958"),
    ("phone +44 (0)20 7946 0958", None, None, "+442079460958"),
    # injection-looking text: plain values, or nothing
    ("order 4411' OR '1'='1", "4411", None, None),
    ("order 1; DROP TABLE orders", None, None, None),
    ("order 7788; DROP TABLE orders;--", "7788", None, None),
    ("my email is {email}", None, None, None),
    ("email: x@y.com' OR 1=1 --", None, "x@y.com", None),
    ("order {order_id}", None, None, None),
    ("Robert'); DROP TABLE students;-- order 4410", "4410", None, None),
]


@pytest.mark.parametrize(("message", "order_id", "email", "phone"), MESSAGES)
def test_values_of_a_message(
    message: str, order_id: str | None, email: str | None, phone: str | None
) -> None:
    found = extract(message)
    assert (found.order_id, found.email, found.phone) == (order_id, email, phone)


def test_the_table_is_large_enough() -> None:
    assert len(MESSAGES) >= 40


def test_an_order_number_is_never_also_the_phone_number() -> None:
    found = extract("Bestellnummer 1234567890")
    assert found.order_id == "1234567890"
    assert found.phone is None


@pytest.mark.parametrize(
    ("message", "language"),
    [
        ("Bestellnummer 55321", "de"),
        ("commande 7781", "fr"),
        ("pedido 9912", None),  # Spanish and Portuguese: the other words tell
        ("la mia ordinazione 3344", "it"),
        ("ordine 3344", "it"),
        ("bestelling 66120", "nl"),
        ("encomenda 78123", "pt"),
        ("order 4411", "en"),
    ],
)
def test_the_word_for_order_tells_the_language(message: str, language: str | None) -> None:
    assert extract(message).order_language == language


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("+1 (415) 555-0100", "+14155550100"),
        ("0044 20 7946 0958", "+442079460958"),
        ("415.555.0100", "4155550100"),
        ("+49 (0)30 1234567", "+49301234567"),
        ("12345", None),
        ("+1234567890123456", None),
    ],
)
def test_phone_numbers_are_normalised(text: str, normal: str | None) -> None:
    assert normal_phone(text) == normal


def test_the_caller_is_the_channel_identifier_not_the_text() -> None:
    found = extract("where is my parcel?")
    assert found.values(caller="+14155550100") == {"caller": "+14155550100"}


@pytest.mark.parametrize(
    ("channel", "identifier", "value"),
    [
        ("whatsapp", "whatsapp:+14155550100", "+14155550100"),
        ("whatsapp", "14155550100", "+14155550100"),
        ("voice", "+44 20 7946 0958", "+442079460958"),
        ("telegram", " 123456789 ", "123456789"),
        ("discord", "", None),
        ("telegram", None, None),
    ],
)
def test_the_caller_is_the_identifier_made_comparable(
    channel: str, identifier: str | None, value: str | None
) -> None:
    assert caller_value(channel, identifier) == value


@pytest.mark.parametrize(
    ("reply", "expecting", "order_id", "phone"),
    [
        ("4411", ("order_id",), "4411", None),
        ("it's #A-1002, thanks", ("order_id",), "A-1002", None),
        ("$44.99", ("order_id",), None, None),
        ("12.03.2024", ("order_id",), None, None),
        ("555 0100", ("phone",), None, "5550100"),
        ("4411 and +1 415 555 0100", ("order_id", "phone"), "4411", "+14155550100"),
        (
            "I have ordered 3 things in 2024 and still nothing arrived, it's been 12 days",
            ("order_id",),
            None,
            None,
        ),
    ],
)
def test_a_reply_to_the_question_may_be_the_bare_value(
    reply: str, expecting: tuple[str, ...], order_id: str | None, phone: str | None
) -> None:
    found = extract(reply, expecting)
    assert (found.order_id, found.phone) == (order_id, phone)


def test_without_the_question_a_bare_number_is_nothing() -> None:
    assert extract("4411") == extract("555 0100") == extract("")


# a speech provider that does not format digits writes them as words
SPOKEN = [
    ("where is order four four one one", "4411", None),
    ("order number four four one one", "4411", None),
    ("Where is my order? It's order number double four one one.", "4411", None),
    ("wo ist meine Bestellung vier vier eins eins", "4411", None),
    ("Bestellnummer fünf fünf drei zwo eins", "55321", None),
    ("où est ma commande quatre quatre un un", "4411", None),
    ("¿dónde está mi pedido cinco cinco uno dos?", "5512", None),
    ("dov'è il mio ordine sette otto due uno", "7821", None),
    ("waar is mijn bestelling zes zes één twee nul", "66120", None),
    ("onde está a minha encomenda sete oito um dois três", "78123", None),
    ("Order Four, Four, One, One.", "4411", None),
    ("my phone number is oh one seven one, one two three, four five six seven", None,
     "01711234567"),
    # prose stays prose
    ("one of my orders is late", None, None),
    ("I ordered two or three things, one arrived", None, None),
    ("order two three", None, None),  # two words: too few
    ("Oh, I just want to know where my orders are", None, None),
    ("hello, one two three, can you hear me?", None, None),
]  # fmt: skip


@pytest.mark.parametrize(("message", "order_id", "phone"), SPOKEN)
def test_digits_said_as_words_are_read_as_digits(
    message: str, order_id: str | None, phone: str | None
) -> None:
    found = extract(message)
    assert (found.order_id, found.phone) == (order_id, phone)


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("order four four one one", "order 4411"),
        ("double four one one", "4411"),
        ("Oh, four four one one", "Oh, 4411"),  # an interjection is not a zero
        ("um, vier vier eins", "um, 441"),
        ("oh one seven", "017"),
        ("one of my orders", "one of my orders"),
        ("two or three days", "two or three days"),
        ("one.two.three@example.com", "one.two.three@example.com"),
    ],
)
def test_spoken_digits(text: str, read: str) -> None:
    assert spoken_digits(text) == read


def test_a_spoken_reply_to_the_question_is_the_bare_value() -> None:
    assert extract("four four one one", ("order_id",)).order_id == "4411"
    assert extract("vier vier eins eins", ("order_id",)).order_id == "4411"
    assert extract("one one", ("order_id",)).order_id is None

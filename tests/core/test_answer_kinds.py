import pytest

from ragcore.chat.answer_kinds import AnswerKind, answer_kind, carries


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How long does GnuCash keep its backup files?", AnswerKind.NUMBER),
        ("Into how many languages has it been translated?", AnswerKind.NUMBER),
        ("Which TCP port does munin-node listen on?", AnswerKind.NUMBER),
        ("Auf welchem Port lauscht der Dienst?", AnswerKind.NUMBER),
        ("Combien de jours un paquet passe-t-il dans Unstable ?", AnswerKind.NUMBER),
        ("In which file are the DNS servers listed?", AnswerKind.PLACE),
        ("¿Qué archivo sirve Apache por defecto?", AnswerKind.PLACE),
        ("Where is Apache's main configuration file?", AnswerKind.PLACE),
        ("Which Debian package provides quotas?", AnswerKind.NAME),
        ("Quale modulo devo caricare per HTTP/2?", AnswerKind.NAME),
        ("Which environment variable holds the key?", AnswerKind.NAME),
        # asks for none of these: a format is neither a path nor an identifier
        ("What file format does GnuCash use by default?", None),
        ("How do I enable an Apache module?", None),
        ("What is the refund policy?", None),
    ],
)
def test_a_question_is_read_by_what_it_asks_for(question, kind):
    assert answer_kind(question) is kind


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("Backups are kept for 30 days.", AnswerKind.NUMBER, True),
        ("It is checked every hour, twice a day.", AnswerKind.NUMBER, True),
        ("Backups are kept for a while.", AnswerKind.NUMBER, False),
        ("The servers are listed in /etc/resolv.conf.", AnswerKind.PLACE, True),
        ("GnuCash adds the .gnucash extension.", AnswerKind.PLACE, True),
        ("The servers are listed in a file.", AnswerKind.PLACE, False),
        ("Install the isc-dhcp-server package.", AnswerKind.NAME, True),
        ("It reads ALPHAVANTAGE_API_KEY.", AnswerKind.NAME, True),
        ("Set KeepAliveTimeout in the server's configuration.", AnswerKind.NAME, True),
        ("Install the package that provides it.", AnswerKind.NAME, False),
    ],
)
def test_a_sentence_carries_a_kind_of_answer_by_its_form(text, kind, expected):
    assert carries(text, kind) is expected


def test_a_code_block_carries_a_name():
    assert carries("a2enmod http2", AnswerKind.NAME, code=True)


def test_what_the_question_already_gives_is_no_answer():
    asked = "Which package does GnuCash use for online banking?"
    assert not carries("GnuCash 2.3 added trading accounts.", AnswerKind.NAME, asked)
    assert carries("GnuCash uses AqBanking.", AnswerKind.NAME, asked)
    assert not carries("A 2-for-1 split doubles shares.", AnswerKind.NUMBER, "a 2-for-1 split?")


def test_spanish_opening_marks_are_read_past():
    assert answer_kind("¿Cuántos días tengo para devolverlo?") is AnswerKind.NUMBER

"""The bilingual dictionaries that translate a question's words into English
(``ragcore.chat.translation``): read from DICTIONARY_DIR, stored in PostgreSQL, looked up.

FreeDict's dictionaries come in dictd's format: ``freedict-LLL-eng.index`` (a line per
headword: the word, the entry's offset and length in base 64) and ``.dict.dz`` (the
entries, gzip-compressed; ``.dict``: plain). They are read once, in the background when
the service starts (``keep_dictionaries``), into ``query_dictionary_words`` with each
headword's stem, so that a question's "sperre" finds "sperren". The German one has half
a million entries: stored, it costs the service no memory, and every replica shares it.
A language is read again when its files change, and dropped when they are gone.
"""

from __future__ import annotations

import gzip
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, cast

import psycopg

from ragcore.chat.translation import (
    DICTIONARIES,
    WORD_TRANSLATIONS,
    TranslateWords,
    entry_headword,
    entry_translations,
)
from ragio.db.pool import in_thread
from ragio.service import Service

log = logging.getLogger(__name__)

#: Changed when the reading of an entry changes: every dictionary is read again.
READER_VERSION = 3
#: The class of the transaction-level advisory lock on a language while it is loaded.
LOAD_LOCK_CLASS = 0x64696374  # "dict"
_B64 = {
    ch: value
    for value, ch in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
}


class DictionaryError(ValueError):
    """A dictionary's files are not in dictd's format; the message names the file."""


def dictionary_files(folder: str) -> dict[str, tuple[Path, Path]]:
    """The languages of ``DICTIONARIES`` with a dictionary in ``folder``: its index and
    its entries (``.dict.dz``, or ``.dict``). none when ``folder`` is blank (DICTIONARY_DIR
    ``off``)."""
    found: dict[str, tuple[Path, Path]] = {}
    if not folder:
        return found
    for language, (code, _) in DICTIONARIES.items():
        index = Path(folder) / f"freedict-{code}-eng.index"
        for suffix in (".dict.dz", ".dict"):
            entries = index.with_suffix(suffix)
            if index.is_file() and entries.is_file():
                found[language] = (index, entries)
                break
    return found


def fingerprint(files: Sequence[Path]) -> str:
    """What changes when the files or their reading change."""
    marks = [f"{path.name}:{path.stat().st_size}:{path.stat().st_mtime_ns}" for path in files]
    return ";".join([f"v{READER_VERSION}", *marks])


def _number(text: str, index: Path) -> int:
    value = 0
    try:
        for ch in text:
            value = value * 64 + _B64[ch]
    except KeyError:
        raise DictionaryError(f"{index}: {text!r} is not a base-64 number") from None
    return value


def read_entries(index: Path, entries: Path) -> Iterator[str]:
    """Each entry of the dictionary once, in the order of the entries' file (read
    through once, however large)."""
    spans = set()
    with index.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                raise DictionaryError(f"{index}, line {number}: not 'word<TAB>offset<TAB>length'")
            spans.add((_number(parts[1], index), _number(parts[2], index)))
    with _open_entries(entries) as stream:
        at = 0
        for offset, length in sorted(spans):
            if offset < at:  # inside an entry already read
                continue
            stream.seek(offset)  # forward: gzip reads its way there
            text = stream.read(length)
            at = offset + len(text)
            yield text.decode("utf-8", errors="replace")


def _open_entries(entries: Path) -> IO[bytes]:
    """The entries' file, decompressed as read when it is dictzip's (gzip's format)."""
    if entries.suffix == ".dz":
        return cast(IO[bytes], gzip.open(entries))  # noqa: SIM115 - the caller closes it
    return entries.open("rb")


def stored_fingerprints(conn: psycopg.Connection) -> dict[str, str]:
    rows = conn.execute("SELECT language, fingerprint FROM query_dictionaries").fetchall()
    return {language: mark for language, mark in rows}


@in_thread
def load(conn: psycopg.Connection, language: str, files: tuple[Path, Path], mark: str) -> int:
    """Store the dictionary of ``language`` in place of the one stored (in one
    transaction, under a lock: another process loading it meanwhile waits, then finds it
    done); the number of words stored."""
    _, stemmer = DICTIONARIES[language]
    with conn.transaction():
        conn.execute("SET LOCAL statement_timeout = 0")
        conn.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (LOAD_LOCK_CLASS, language))
        done = conn.execute(
            "SELECT words FROM query_dictionaries WHERE language = %s AND fingerprint = %s",
            (language, mark),
        ).fetchone()
        if done is not None:
            return int(done[0])
        conn.execute("DELETE FROM query_dictionaries WHERE language = %s", (language,))
        conn.execute(
            "CREATE TEMP TABLE dictionary_load (headword text, position integer, "
            "translations text[]) ON COMMIT DROP"
        )
        with (
            conn.cursor() as cursor,
            cursor.copy(
                "COPY dictionary_load (headword, position, translations) FROM STDIN"
            ) as copy,
        ):
            for position, entry in enumerate(read_entries(*files)):
                headword = entry_headword(entry)
                translations = entry_translations(entry)
                if headword and translations:
                    copy.write_row((headword, position, list(translations)))
        conn.execute(
            "INSERT INTO query_dictionaries (language, fingerprint, words) "
            "SELECT %s, %s, count(*) FROM dictionary_load",
            (language, mark),
        )
        conn.execute(
            """INSERT INTO query_dictionary_words (language, stem, headword, position, translations)
               SELECT %(language)s, stem, headword, position, translations
               FROM (SELECT (ts_lexize(%(stemmer)s::regdictionary, headword))[1] AS stem, *
                     FROM dictionary_load) AS stemmed
               WHERE stem IS NOT NULL  -- a function word of its language ("como")""",
            {"language": language, "stemmer": stemmer},
        )
        count = conn.execute(
            "SELECT words FROM query_dictionaries WHERE language = %s", (language,)
        ).fetchone()
    return int(count[0]) if count else 0


def drop_others(conn: psycopg.Connection, languages: Sequence[str]) -> list[str]:
    """Drop the stored dictionaries of languages not among ``languages``; the ones dropped."""
    rows = conn.execute(
        "DELETE FROM query_dictionaries WHERE NOT (language = ANY (%s)) RETURNING language",
        (list(languages),),
    ).fetchall()
    return [language for (language,) in rows]


async def keep_dictionaries(service: Service) -> None:
    """Store the dictionaries DICTIONARY_DIR holds, those not stored yet or changed, and
    drop those it no longer holds. A dictionary that cannot be read or stored (a broken
    file, the database away) is logged and left out: the service answers without it,
    and it is tried again at the next start."""
    folder = service.settings.dictionary_dir
    files = dictionary_files(folder)
    try:
        dropped = await service.database.run(drop_others, list(files))
        stored = await service.database.run(stored_fingerprints)
    except Exception as error:  # noqa: BLE001 - in the background: the service goes on
        log.warning("could not check the query dictionaries: %s", error)
        return
    if dropped:
        log.info("query dictionaries dropped (not in DICTIONARY_DIR): %s", ", ".join(dropped))
    for language, paths in files.items():
        try:
            mark = fingerprint(paths)
            if stored.get(language) == mark:
                continue
            log.info("loading the %s-English dictionary from %s", language, paths[0].parent)
            count = await service.database.run(load, language, paths, mark)
        except Exception as error:  # noqa: BLE001 - a file or the database: the others go on
            log.warning("could not load the %s-English dictionary: %s", language, error)
            continue
        log.info("the %s-English dictionary is loaded: %d words", language, count)


def lookup(
    conn: psycopg.Connection, language: str, words: Sequence[str]
) -> dict[str, tuple[str, ...]]:
    """The translations of each of ``words`` a stored dictionary of ``language`` knows:
    the word's own entries when it has some, else those of the words of its stem
    ("sperre": "sperren"), or of its stem itself (the stemmer takes "einzelne" to
    "einzeln", and "einzeln" to "einzel"). A function word of the language ("como") is
    not translated."""
    _, stemmer = DICTIONARIES[language]
    rows = conn.execute(
        """SELECT w.word, d.headword = w.word AS own, d.translations
           FROM unnest(%(words)s::text[]) WITH ORDINALITY AS w(word, n)
           CROSS JOIN LATERAL (SELECT (ts_lexize(%(stemmer)s::regdictionary, w.word))[1]) AS s(stem)
           JOIN query_dictionary_words d
             ON d.language = %(language)s AND (d.stem = s.stem OR d.headword = s.stem)
           ORDER BY w.n, own DESC, d.position""",
        {"words": list(words), "language": language, "stemmer": stemmer},
    ).fetchall()
    found: dict[str, list[str]] = {}
    has_own: set[str] = set()
    for word, own, translations in rows:
        if own:
            has_own.add(word)
        elif word in has_own:
            continue
        kept = found.setdefault(word, [])
        for translation in translations:
            if len(kept) < WORD_TRANSLATIONS and translation not in kept:
                kept.append(translation)
    return {word: tuple(kept) for word, kept in found.items()}


async def translate_words(effect: TranslateWords, service: Service) -> dict[str, tuple[str, ...]]:
    if effect.language not in DICTIONARIES or not effect.words:
        return {}
    return await service.database.run(lookup, effect.language, effect.words)

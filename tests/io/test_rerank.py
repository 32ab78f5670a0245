"""The measured offline reranker (ragio.providers.rerank): its hashed n-gram features, and
the real model when its wheel is installed (it is not a dependency: see the module)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ragio.providers.rerank import HASH_FEATURES, LocalReranker, hashed_ngrams, murmur3_32


def reference_murmur3_32(data: bytes) -> int:
    """MurmurHash3 x86_32, seed 0, signed, one byte string at a time (Appleby's C)."""
    mask = 0xFFFFFFFF
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = 0
    end = len(data) & ~3
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * c2) & mask
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xE6546B64) & mask
    k = 0
    for j in range(len(data) & 3):
        k |= data[end + j] << (8 * j)
    if len(data) & 3:
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        h ^= (k * c2) & mask
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & mask
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & mask
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


@pytest.mark.parametrize("length", range(0, 10))
def test_the_vectorised_hash_is_murmur3_for_every_tail_length(length):
    rng = np.random.default_rng(length)
    blobs = rng.integers(0, 256, size=(50, length), dtype=np.uint8)
    assert murmur3_32(blobs).tolist() == [reference_murmur3_32(bytes(row)) for row in blobs]


def test_murmur3_known_value():
    # the published value for "hello", seed 0 (0x248bfa47)
    assert murmur3_32(np.frombuffer(b"hello", dtype=np.uint8).reshape(1, 5)).tolist() == [
        0x248BFA47
    ]


def test_hashed_ngrams_count_signed_char_ngrams_into_a_unit_vector():
    vector = hashed_ngrams("Aspirin  lowers\n\nfever, ünd more")
    assert vector.shape == (HASH_FEATURES,)
    assert np.linalg.norm(vector) == pytest.approx(1.0)
    # lowercased and runs of whitespace collapsed before the n-grams are taken
    assert np.array_equal(vector, hashed_ngrams("aspirin lowers fever, ÜND more"))
    assert not hashed_ngrams("").any()


def expected_from_loop(text: str) -> np.ndarray:
    """The same features, one n-gram at a time (the loop of nanoranker's own code)."""
    import re

    text = re.sub(r"\s\s+", " ", text.lower())
    vector = np.zeros(HASH_FEATURES)
    for n in range(1, 7):
        for i in range(len(text) - n + 1):
            h = reference_murmur3_32(text[i : i + n].encode("utf-8"))
            vector[abs(h) % HASH_FEATURES] += 1.0 if h >= 0 else -1.0
    norm = np.linalg.norm(vector)
    return vector / norm if norm else vector


@pytest.mark.parametrize(
    "text", ["Vitamin D deficiency is unrelated to birth weight.", "naïve café — 0D", "ab"]
)
def test_hashed_ngrams_equal_the_one_at_a_time_loop(text):
    assert np.allclose(hashed_ngrams(text), expected_from_loop(text))


@pytest.mark.skipif(
    importlib.util.find_spec("nanoranker") is None
    or importlib.util.find_spec("onnxruntime_extensions") is None,
    reason="nanoranker and onnxruntime-extensions are not installed (measurement only)",
)
async def test_the_real_reranker_puts_the_answering_passage_above_a_distractor():
    reranker = LocalReranker()
    scores = await reranker.score(
        "Who directed the film Inception?",
        [
            "Titanic, directed by James Cameron, was released in 1997.",
            "Inception is a 2010 science fiction film directed by Christopher Nolan.",
        ],
    )
    assert len(scores) == 2
    assert scores[1] > scores[0]
    assert await reranker.score("anything", []) == []

"""An offline reranker, measured and not used by the service (issue 15).

No cross-encoder ships its weights inside a package on the registries this project
installs from. Looked at (``pip download --no-deps``, the wheel's files listed):
flashrank, rerankers, fastembed, local-reranker, inranker, reranking, rag-reranker,
knowledge-rag, coremem, convmemory, rerankgate, fastretrieval, tinyintent,
gatrag-context-classifier, onnx-embedding-models, gardian-reranker and
ruvector-rerank ship code only and fetch their models from a model hub at run
time (which does not work here); kjarni ships a native library and fetches its
models too; flash-rerank has no installable release; small-hybrid-reranker ships
a scikit-learn model over model2vec embeddings that it fetches; akiki ships a
voice activity model only.

``nanoranker`` (1.2, MIT) is the one reranker whose files are in its wheel (91 MB):
a multilingual Universal Sentence Encoder (``universal-sentence-encoder-
multilingual.onnx``, 512 dimensions; its SentencePiece tokenizer is a custom op of
``onnxruntime-extensions``) and a small scoring network (``reranker_nn_v2.onnx``)
over the question's and the passage's features side by side. A text's features are
its USE vector and a 64-feature hashed bag of character 1- to 6-grams (scikit-learn's
``HashingVectorizer(analyzer="char", ngram_range=(1, 6), n_features=64)``, L2
normalised; computed here with numpy, equal to nanoranker's pure-Python loop and
about 6 times faster). It is not a cross-encoder: the question and the passage are
encoded apart. Measured with ``scripts/eval_retrieval.py --rerank`` on SciFact,
reordering the top N hybrid hits (hybrid alone: nDCG@10 0.708-0.710):

- by its score: 0.542 (N = 10), 0.463 (20), 0.423 (30), 0.370 (50);
- as a vote beside the fusion (RRF of the fused rank and its rank): 0.647 (N = 10),
  0.627 (20), 0.587 (50);
- its own time per question on 2 cores (question and passages encoded at query
  time): p50 380 ms / p95 770 ms for 10 abstracts, 680 / 1,320 ms for 20,
  1,660 / 2,890 ms for 50 (the USE encoder: about 60 ms an abstract).

So it is both worse than no reranking and far too slow for POST /chat; the service
does not rerank. A one-off experiment (no script kept) with the shipped MiniLM
instead, each of the top 10 hybrid hits scored by its best sentence's cosine
similarity to the question, did no better on SciFact's first 100 questions (nDCG@10
0.763 alone, 0.757 by RRF with the fused rank, 0.767 added to the abstract's own
similarity; the fused order 0.769) and took about 3 s a question to embed the
sentences on 2 cores shared with other work.

Installing nanoranker for the measurement: ``pip install nanoranker
onnxruntime-extensions`` (not a dependency of the project).

The model loads once per process, lazily, in a worker thread; scoring runs in a
worker thread too, one at a time (onnxruntime uses the cores for one run).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import trio

from ragio.providers.local import _package_dir  # where a wheel's files are, not imported

NANORANKER = "nanoranker"
#: reranker key -> name recorded with a measurement
RERANKERS: dict[str, str] = {NANORANKER: "nanoranker-1.2-use-multilingual"}
#: characters of a passage the reranker reads (USE reads whole texts: bound its cost)
MAX_CHARS = 2_000
HASH_FEATURES = 64
NGRAMS = range(1, 7)
THREADS = 2  # intra-op threads: the machines have 2 cores


class RerankerMissing(RuntimeError):
    """The wheel that ships the reranker's weights is not installed."""


def nanoranker_files() -> tuple[Path, Path]:
    """(sentence encoder, scoring network) from the installed nanoranker wheel."""
    base = _package_dir("nanoranker")
    files = (
        (
            base / "resources" / "universal-sentence-encoder-multilingual.onnx",
            base / "resources" / "reranker_nn_v2.onnx",
        )
        if base
        else None
    )
    if files is None or not all(path.is_file() for path in files):
        raise RerankerMissing(
            "the local reranker needs the package nanoranker (its ONNX files) and "
            "onnxruntime-extensions: pip install nanoranker onnxruntime-extensions"
        )
    return files


# ------------------------------------------------------------------ hashed character n-grams

_SPACES = re.compile(r"\s\s+")
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def murmur3_32(blobs: np.ndarray) -> np.ndarray:
    """MurmurHash3 x86_32 (seed 0) of each row of a (n, length) uint8 array, as int32."""
    count, length = blobs.shape
    h = np.zeros(count, dtype=np.uint32)
    blocks = length // 4
    with np.errstate(over="ignore"):
        if blocks:
            words = blobs[:, : blocks * 4].copy().view("<u4")
            for i in range(blocks):
                k = words[:, i] * _C1
                k = _rotl(k, 15) * _C2
                h ^= k
                h = _rotl(h, 13) * np.uint32(5) + np.uint32(0xE6546B64)
        tail = length & 3
        if tail:
            k = np.zeros(count, dtype=np.uint32)
            for j in range(tail - 1, -1, -1):
                k ^= blobs[:, blocks * 4 + j].astype(np.uint32) << np.uint32(8 * j)
            k = _rotl(k * _C1, 15) * _C2
            h ^= k
        h ^= np.uint32(length)
        h ^= h >> np.uint32(16)
        h *= np.uint32(0x85EBCA6B)
        h ^= h >> np.uint32(13)
        h *= np.uint32(0xC2B2AE35)
        h ^= h >> np.uint32(16)
    return h.view(np.int32)


def hashed_ngrams(text: str) -> np.ndarray:
    """scikit-learn's HashingVectorizer(analyzer="char", ngram_range=(1, 6),
    n_features=64, alternate_sign=True, norm="l2") of one text, lowercased."""
    text = _SPACES.sub(" ", text.lower())
    by_length: dict[int, list[bytes]] = {}
    for n in NGRAMS:
        for i in range(len(text) - n + 1):
            gram = text[i : i + n].encode("utf-8")
            by_length.setdefault(len(gram), []).append(gram)
    vector = np.zeros(HASH_FEATURES, dtype=np.float64)
    for length, grams in by_length.items():
        blobs = np.frombuffer(b"".join(grams), dtype=np.uint8).reshape(len(grams), length)
        hashes = murmur3_32(blobs).astype(np.int64)
        np.add.at(vector, np.abs(hashes) % HASH_FEATURES, np.where(hashes >= 0, 1.0, -1.0))
    norm = np.sqrt((vector * vector).sum())
    return vector / norm if norm > 0 else vector


# ------------------------------------------------------------------ the model


class NanoRanker:
    """nanoranker's two ONNX models. Thread-safe (onnxruntime's run is)."""

    def __init__(self) -> None:
        import onnxruntime as ort
        from onnxruntime_extensions import get_library_path

        encoder, scorer = nanoranker_files()
        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        options.log_severity_level = 3
        options.register_custom_ops_library(get_library_path())
        providers = ["CPUExecutionProvider"]
        self.encoder = ort.InferenceSession(str(encoder), options, providers=providers)
        self.scorer = ort.InferenceSession(str(scorer), options, providers=providers)

    def features(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), 576) float32: USE vector, then the hashed n-grams."""
        texts = [text[:MAX_CHARS] for text in texts]
        semantic = self.encoder.run(["outputs"], {"inputs": texts})[0]
        textual = np.stack([hashed_ngrams(text) for text in texts])
        return np.concatenate([semantic, textual], axis=1).astype(np.float32)

    def score_features(self, question: np.ndarray, passages: np.ndarray) -> np.ndarray:
        """Scores of passages' features against one question's features."""
        pairs = np.concatenate([np.tile(question, (len(passages), 1)), passages], axis=1)
        return self.scorer.run(["output"], {"input": pairs.astype(np.float32)})[0].reshape(-1)

    def score(self, question: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        features = self.features([question, *passages])
        return [float(s) for s in self.score_features(features[0], features[1:])]


@functools.cache  # read-only weights: one copy per process
def load_reranker(key: str) -> Any:
    if key == NANORANKER:
        return NanoRanker()
    raise ValueError(f"unknown local reranker {key!r}; choose {', '.join(RERANKERS)}")


class LocalReranker:
    """Scores (question, passage) pairs offline; the model loads on first use."""

    name = "local"

    def __init__(self, model: str = NANORANKER) -> None:
        if model not in RERANKERS:
            raise ValueError(f"unknown local reranker {model!r}; choose {', '.join(RERANKERS)}")
        self.key = model
        self._model: Any = None
        self._lock = trio.Lock()
        self._limiter = trio.CapacityLimiter(1)

    async def model(self) -> Any:
        async with self._lock:
            if self._model is None:
                self._model = await trio.to_thread.run_sync(load_reranker, self.key)
        return self._model

    async def _in_thread(self, work: Callable[[], Any]) -> Any:
        return await trio.to_thread.run_sync(work, limiter=self._limiter)

    async def score(self, question: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in order; higher is more relevant."""
        passages = list(passages)
        if not passages:
            return []
        model = await self.model()
        result: list[float] = await self._in_thread(
            functools.partial(model.score, question, passages)
        )
        return result

"""The offline embedder: WordLlama (l2_supercat, 256 dimensions), weights shipped in its wheel.

WordLlama's own ``load()`` looks for the bundled tokenizer in the wrong folder
and then tries the network, so the files are loaded from the package directly.
The model loads once, lazily, in a worker thread; embedding runs in one too.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path

import trio

from ragcore.knowledge.embedding_space import EmbeddingSpace

MODEL = "wordllama-l2_supercat"
DIMENSIONS = 256


class LocalEmbedder:
    name = "local"

    def __init__(self) -> None:
        self.space = EmbeddingSpace(self.name, MODEL, DIMENSIONS)
        self._model = None
        self._lock = trio.Lock()

    @staticmethod
    @functools.cache  # read-only weights: one copy per process, however many embedders
    def _load():  # type: ignore[no-untyped-def]
        import wordllama
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference

        base = Path(wordllama.__file__).parent
        tokenizer = Tokenizer.from_file(
            str(base / "tokenizers" / "l2_supercat_tokenizer_config.json")
        )
        weights = base / "weights" / f"l2_supercat_{DIMENSIONS}.safetensors"
        with safe_open(str(weights), framework="np", device="cpu") as f:
            embedding = f.get_tensor("embedding.weight")
        return WordLlamaInference(embedding, tokenizer)

    async def model(self):  # type: ignore[no-untyped-def]
        async with self._lock:
            if self._model is None:
                self._model = await trio.to_thread.run_sync(self._load)
        return self._model

    async def embed(self, texts: Sequence[str], purpose: str) -> list[list[float]]:
        if not texts:
            return []
        model = await self.model()
        vectors = await trio.to_thread.run_sync(
            lambda: model.embed(list(texts), norm=True, batch_size=64)
        )
        return [row.tolist() for row in vectors]

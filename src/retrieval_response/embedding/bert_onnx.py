"""A sentence-transformers folder of a BERT encoder with mean pooling, run by onnxruntime.

The folder holds a Hugging Face ``BertModel`` (``config.json``, ``model.safetensors``), its fast
tokenizer (``tokenizer.json``), ``sentence_bert_config.json`` (``max_seq_length``) and a mean
``1_Pooling``: the layout of all-MiniLM-L6-v2 and of the dequantised multilingual-e5-small.
``bert_mean_pool_graph`` writes the same computation as an ONNX graph (``BertModel`` in
inference: embeddings, post-norm self-attention layers with exact GELU; then the masked mean of
the last hidden states, as sentence-transformers' ``Pooling`` does), so that a job needs neither
torch nor transformers nor sentence-transformers. The word-embedding table stays out of the
graph: it is fed, memory-mapped, at every run, and only the rows of the batch's tokens are read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval_response.embedding import onnx_proto
from retrieval_response.embedding.onnx_proto import INT64, node, tensor, value_info
from retrieval_response.embedding.safetensors_mmap import read_safetensors

OPSET = 20  # Gelu
WORD_EMBEDDINGS = "word_embeddings"
POOLED = "pooled"


@dataclass(frozen=True)
class BertFolder:
    """What the ONNX route reads from a sentence-transformers BERT folder."""

    weights: dict[str, np.ndarray]
    layers: int
    heads: int
    layer_norm_eps: float
    max_tokens: int
    tokenizer_file: Path


def read_bert_folder(folder: str | Path) -> BertFolder:
    """The weights (memory-mapped, ``bert.`` prefix removed), shape and token limit of ``folder``.

    Raises ``ValueError`` unless the folder is a ``bert`` model whose pooling is the plain mean
    of the token states (the computation ``bert_mean_pool_graph`` writes).
    """
    folder = Path(folder)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    modes = {key for key, value in pooling.items() if key.startswith("pooling_mode") and value}
    if config.get("model_type") != "bert" or modes != {"pooling_mode_mean_tokens"}:
        raise ValueError(f"{folder}: not a BERT model with mean pooling (model_type "
                         f"{config.get('model_type')!r}, pooling {sorted(modes)})")
    sentence_config = json.loads((folder / "sentence_bert_config.json").read_text(encoding="utf-8"))
    weights = {name.removeprefix("bert."): array for name, array in read_safetensors(folder / "model.safetensors").items()}
    return BertFolder(weights, config["num_hidden_layers"], config["num_attention_heads"],
                      float(config["layer_norm_eps"]), sentence_config["max_seq_length"], folder / "tokenizer.json")


def bert_mean_pool_graph(bert: BertFolder) -> bytes:
    """ONNX model: ``input_ids``, ``attention_mask`` (int64, batch x length) and the
    ``word_embeddings`` table (float32, vocabulary x hidden) -> ``pooled`` (float32, batch x
    hidden), the mean over unmasked tokens of ``BertModel``'s last hidden states."""
    w = bert.weights
    hidden = w["embeddings.LayerNorm.weight"].shape[0]
    head_size = hidden // bert.heads
    nodes: list[onnx_proto.Message] = []
    initializers: list[onnx_proto.Message] = []

    def const(name: str, array: np.ndarray) -> str:
        initializers.append(tensor(name, np.asarray(array)))
        return name

    def op(op_type: str, inputs: list[str], output: str, **attributes) -> str:
        nodes.append(node(op_type, inputs, [output], **attributes))
        return output

    def layer_norm(x: str, prefix: str, output: str) -> str:
        return op("LayerNormalization", [x, const(output + ".w", w[prefix + ".weight"]),
                                         const(output + ".b", w[prefix + ".bias"])],
                  output, epsilon=bert.layer_norm_eps, axis=-1)

    def linear(x: str, prefix: str, output: str) -> str:
        product = op("MatMul", [x, const(output + ".w", np.ascontiguousarray(w[prefix + ".weight"].T))], output + ".mm")
        return op("Add", [product, const(output + ".b", w[prefix + ".bias"])], output)

    def heads(x: str, prefix: str, output: str, perm: list[int]) -> str:
        split = op("Reshape", [linear(x, prefix, output + ".lin"), "heads_shape"], output + ".split")
        return op("Transpose", [split], output, perm=perm)

    const("heads_shape", np.array([0, 0, bert.heads, head_size], dtype=np.int64))
    const("hidden_shape", np.array([0, 0, hidden], dtype=np.int64))
    const("one", np.array(1.0, dtype=np.float32))
    const("mask_min", np.array(np.finfo(np.float32).min, dtype=np.float32))
    const("scale", np.array(1 / np.sqrt(head_size), dtype=np.float32))
    const("tiny", np.array(1e-9, dtype=np.float32))
    const("axis_1", np.array([1], dtype=np.int64))
    const("axes_1_2", np.array([1, 2], dtype=np.int64))
    const("axis_last", np.array([-1], dtype=np.int64))
    const("zero", np.array([0], dtype=np.int64))
    const("axis_0", np.array([0], dtype=np.int64))

    # embeddings: word + token type 0, then + position, then LayerNorm (BertEmbeddings' order)
    words = op("Gather", [WORD_EMBEDDINGS, "input_ids"], "words", axis=0)
    typed = op("Add", [words, const("type_0", w["embeddings.token_type_embeddings.weight"][0])], "typed")
    length = op("Shape", ["input_ids"], "length", start=1, end=2)
    position_rows = op("Slice", [const("position_table", w["embeddings.position_embeddings.weight"]), "zero", length,
                                 "axis_0"], "position_rows")
    x = layer_norm(op("Add", [typed, position_rows], "embedded"), "embeddings.LayerNorm", "x")
    # additive attention mask: 0 where attended, float32 min where padded; batch x 1 x 1 x length
    mask = op("Cast", ["attention_mask"], "mask", to=onnx_proto.FLOAT)
    padded = op("Mul", [op("Sub", ["one", mask], "unmasked"), "mask_min"], "padded")
    bias = op("Unsqueeze", [padded, "axes_1_2"], "bias")
    for i in range(bert.layers):
        p, t = f"encoder.layer.{i}.", f"l{i}."
        query = heads(x, p + "attention.self.query", t + "q", [0, 2, 1, 3])
        key = heads(x, p + "attention.self.key", t + "k", [0, 2, 3, 1])
        value = heads(x, p + "attention.self.value", t + "v", [0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [query, key], t + "qk"), "scale"], t + "scaled"), bias], t + "scores")
        context = op("MatMul", [op("Softmax", [scores], t + "probs", axis=-1), value], t + "context")
        merged = op("Reshape", [op("Transpose", [context], t + "context.t", perm=[0, 2, 1, 3]), "hidden_shape"],
                    t + "merged")
        attended = op("Add", [linear(merged, p + "attention.output.dense", t + "ao"), x], t + "ao.res")
        x = layer_norm(attended, p + "attention.output.LayerNorm", t + "aln")
        inner = op("Gelu", [linear(x, p + "intermediate.dense", t + "fi")], t + "gelu")
        x = layer_norm(op("Add", [linear(inner, p + "output.dense", t + "fo"), x], t + "fo.res"),
                       p + "output.LayerNorm", t + "oln")
    # mean pooling: sum of unmasked token states / max(number of unmasked tokens, 1e-9)
    weights = op("Unsqueeze", [mask, "axis_last"], "token_weights")
    summed = op("ReduceSum", [op("Mul", [x, weights], "weighted"), "axis_1"], "summed", keepdims=0)
    count = op("Max", [op("ReduceSum", [weights, "axis_1"], "count", keepdims=0), "tiny"], "count.clamped")
    op("Div", [summed, count], POOLED)
    vocabulary = w["embeddings.word_embeddings.weight"].shape[0]
    inputs = [value_info("input_ids", ["batch", "length"], INT64), value_info("attention_mask", ["batch", "length"], INT64),
              value_info(WORD_EMBEDDINGS, [vocabulary, hidden])]
    return onnx_proto.model("bert_mean_pool", nodes, initializers, inputs, [value_info(POOLED, ["batch", hidden])], OPSET)

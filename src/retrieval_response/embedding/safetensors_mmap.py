"""Read a ``.safetensors`` file as read-only memory maps, without the safetensors package or torch.

Format: an 8-byte little-endian header length, a JSON header (tensor name -> dtype, shape,
[start, end) byte offsets into the data that follows; an optional ``__metadata__`` entry), then the
data. Mapping instead of reading means a large table (an embedding matrix) is paged in only
where it is used. The safetensors package's numpy loader (``safetensors.numpy.load_file``)
copies every tensor into memory instead, which loads ME5S's 470 MB file more slowly.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "I64": "<i8", "I32": "<i4", "U8": "u1"}


def read_safetensors(path: str | Path) -> dict[str, np.ndarray]:
    """Tensor name -> read-only array mapped from the file at ``path``.

    Raises ``ValueError`` for a dtype outside ``DTYPES`` (bfloat16 has no numpy type).
    """
    path = Path(path)
    with path.open("rb") as file:
        (header_size,) = struct.unpack("<Q", file.read(8))
        header = json.loads(file.read(header_size))
    header.pop("__metadata__", None)
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_size)
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] not in DTYPES:
            raise ValueError(f"{path}: tensor {name!r} has dtype {entry['dtype']}, not one of {sorted(DTYPES)}")
        start, end = entry["data_offsets"]
        tensors[name] = data[start:end].view(DTYPES[entry["dtype"]]).reshape(entry["shape"])
    return tensors

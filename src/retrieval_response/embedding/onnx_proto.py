"""A minimal ONNX model writer: the protobuf wire format of the few ONNX messages a graph needs.

Only what ``bert_onnx`` builds is covered: float32 and int64 tensors (raw data), nodes with
float, int and ints attributes, float32 graph inputs and outputs with named or fixed dimensions,
and one default-domain opset. Field numbers are those of ``onnx/onnx.proto``; the ``onnx``
package (and its protobuf classes) is not needed, onnxruntime reads the bytes directly.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import numpy as np

IR_VERSION = 9
FLOAT, INT64 = 1, 7  # TensorProto.DataType
_ATTRIBUTE_FLOAT, _ATTRIBUTE_INT, _ATTRIBUTE_INTS = 1, 2, 7  # AttributeProto.AttributeType
_ELEMENT_TYPES = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64}


def _varint(value: int) -> bytes:
    value &= 0xFFFFFFFFFFFFFFFF  # a negative int64 as its two's complement
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


Message = list  # of bytes-like chunks (bytes, or a memoryview of an array's data), joined once by ``model``


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _bytes_field(number: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _varint((number << 3) | 2) + _varint(len(data)) + data


def _message_field(number: int, message: Message) -> Message:
    return [_varint((number << 3) | 2) + _varint(sum(len(chunk) for chunk in message)), *message]


def _float_field(number: int, value: float) -> bytes:
    return _varint((number << 3) | 5) + struct.pack("<f", value)


def tensor(name: str, array: np.ndarray) -> Message:
    """A ``TensorProto`` named ``name`` holding ``array`` (float32 or int64) as raw little-endian
    data; the data is not copied until ``model`` joins the message."""
    element_type = _ELEMENT_TYPES[np.dtype(array.dtype)]
    array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    header = b"".join(_int_field(1, size) for size in array.shape) + _int_field(2, element_type) + _bytes_field(8, name)
    return [header, *_message_field(9, [memoryview(array).cast("B")])]


def _attribute(name: str, value: float | int | Sequence[int]) -> bytes:
    if isinstance(value, float):
        return _bytes_field(1, name) + _float_field(2, value) + _int_field(20, _ATTRIBUTE_FLOAT)
    if isinstance(value, int):
        return _bytes_field(1, name) + _int_field(3, value) + _int_field(20, _ATTRIBUTE_INT)
    return _bytes_field(1, name) + b"".join(_int_field(8, v) for v in value) + _int_field(20, _ATTRIBUTE_INTS)


def node(op_type: str, inputs: Sequence[str], outputs: Sequence[str], **attributes: float | int | Sequence[int]) -> Message:
    """A default-domain ``NodeProto``; an attribute's Python type (float, int, list of ints) sets its ONNX type."""
    return [b"".join(_bytes_field(1, name) for name in inputs) + b"".join(_bytes_field(2, name) for name in outputs)
            + _bytes_field(4, op_type) + b"".join(_bytes_field(5, _attribute(k, v)) for k, v in attributes.items())]


def value_info(name: str, dims: Sequence[int | str], element_type: int = FLOAT) -> Message:
    """A ``ValueInfoProto`` of a tensor: an int dimension is fixed, a string one is named (symbolic)."""
    shape = b"".join(_bytes_field(1, _int_field(1, d) if isinstance(d, int) else _bytes_field(2, d)) for d in dims)
    tensor_type = _int_field(1, element_type) + _bytes_field(2, shape)
    return [_bytes_field(1, name) + _bytes_field(2, _bytes_field(1, tensor_type))]


def model(name: str, nodes: Sequence[Message], initializers: Sequence[Message], inputs: Sequence[Message],
          outputs: Sequence[Message], opset: int) -> bytes:
    """A serialised ``ModelProto`` of one graph (messages from ``node``, ``tensor``, ``value_info``)
    importing the default ONNX domain at version ``opset``."""
    graph = [chunk for number, messages in ((1, nodes), (5, initializers), (11, inputs), (12, outputs))
             for message in messages for chunk in _message_field(number, message)]
    graph.append(_bytes_field(2, name))
    head = _int_field(1, IR_VERSION) + _bytes_field(2, "retrieval-response")
    opset_import = _bytes_field(8, _bytes_field(1, "") + _int_field(2, opset))
    return b"".join([head, *_message_field(7, graph), opset_import])

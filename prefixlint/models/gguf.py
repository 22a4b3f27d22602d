"""Read the metadata of a GGUF model file (llama.cpp's format) without trusting it.

A GGUF is a header (magic, version, tensor count, key/value count), the key/value metadata, the
tensor infos, then gigabytes of tensor data that prefixlint never touches. Every length the header
declares (strings, arrays, the key/value and tensor counts, tensor offsets) is checked against the
bytes that are left in the file before anything is decoded or allocated, so a lying or truncated
header is a GGUFError naming what is wrong, at once and without memory growth. The file is
memory-mapped: only the pages of the header are read.

The `gguf` package's GGUFReader is not used here: it builds a numpy array for every field and
tensor of the file, follows declared counts while it does so, and needs numpy at run time.
Arrays are decoded only when asked for (`GGUFMetadata.array`); skipping one still walks the
lengths of its strings (a 150,000-token vocabulary costs ~40 ms), never its tensors.
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from typing import Any

from prefixlint.models.ollama import PREFIX as OLLAMA_PREFIX

MAGIC = b"GGUF"
VERSIONS = (2, 3)  # version 1 counted in 32 bits; no file in use still has it
MAX_ARRAY_DEPTH = 2  # arrays of arrays are allowed by the format; deeper is a hostile file
MAX_TENSOR_DIMS = 4  # GGML_MAX_DIMS
DEFAULT_ALIGNMENT = 32

# Value types of the format (docs/gguf.md): fixed-size ones by struct format, then string and array.
_FIXED = {
    0: "<B",  # uint8
    1: "<b",  # int8
    2: "<H",  # uint16
    3: "<h",  # int16
    4: "<I",  # uint32
    5: "<i",  # int32
    6: "<f",  # float32
    7: "<?",  # bool
    10: "<Q",  # uint64
    11: "<q",  # int64
    12: "<d",  # float64
}
STRING, ARRAY = 8, 9
_U32, _U64 = struct.Struct("<I"), struct.Struct("<Q")
# The fewest bytes one value of a type can take: what a declared count is checked against.
_MIN_SIZE = {**{t: struct.calcsize(f) for t, f in _FIXED.items()}, STRING: 8, ARRAY: 12}
_MIN_KV = 8 + 4 + 1  # an empty key, a type, a one-byte value
_MIN_TENSOR_INFO = 8 + 4 + 4 + 8  # an empty name, no dimensions, a type, an offset


SUFFIX = ".gguf"


def names_model(path: str | os.PathLike[str]) -> bool:
    """Whether a path names a GGUF model by its name alone: a `.gguf` file, or a model of the
    local Ollama store (`ollama:NAME[:TAG]`, a GGUF blob). Nothing is read."""
    return os.path.basename(os.fspath(path)).endswith(SUFFIX) or os.fspath(path).startswith(OLLAMA_PREFIX)


def is_gguf(path: str | os.PathLike[str]) -> bool:
    """A `.gguf` file, or any file that starts with the GGUF magic (an Ollama blob has no suffix)."""
    if os.fspath(path).endswith(SUFFIX):
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == MAGIC
    except OSError:
        return False


class GGUFError(ValueError):
    """A file that is not a readable GGUF; the message says where and why, in a few words."""


@dataclass(frozen=True)
class ArrayRef:
    """An array value not decoded yet: its item type, length and where its items start."""

    item_type: int
    count: int
    offset: int


@dataclass(frozen=True)
class GGUFMetadata:
    """The key/value metadata of one GGUF file; arrays stay `ArrayRef`s until `array()` asks."""

    path: str
    version: int
    tensor_count: int
    values: dict[str, Any]
    _data: mmap.mmap | bytes

    def get(self, key: str, default: Any = None) -> Any:
        value = self.values.get(key, default)
        return default if isinstance(value, ArrayRef) else value

    def array(self, key: str) -> list[Any] | None:
        """The items of an array value, decoded; None if the key is absent or not an array."""
        ref = self.values.get(key)
        if not isinstance(ref, ArrayRef):
            return None
        return _Cursor(self._data, ref.offset).items(ref.item_type, ref.count, depth=1)

    def array_length(self, key: str) -> int | None:
        ref = self.values.get(key)
        return ref.count if isinstance(ref, ArrayRef) else None

    def array_item(self, key: str, index: int) -> Any:
        """One item of an array of strings or numbers (a special token's text), decoding only
        what comes before it; None if out of range."""
        ref = self.values.get(key)
        if not isinstance(ref, ArrayRef) or not 0 <= index < ref.count or ref.item_type == ARRAY:
            return None
        cursor = _Cursor(self._data, ref.offset)
        if ref.item_type == STRING:
            for _ in range(index):
                cursor.skip(STRING, 1)
        else:
            cursor.pos += index * _MIN_SIZE[ref.item_type]
        return cursor.value(ref.item_type, 1)


class _Cursor:
    """Reads values at a position of the file's bytes; every length is checked against the end."""

    def __init__(self, data: mmap.mmap | bytes, pos: int) -> None:
        self.data, self.pos, self.end = data, pos, len(data)

    def need(self, size: int, what: str) -> None:
        if size < 0 or self.pos + size > self.end:
            raise GGUFError(
                f"{what} at byte {self.pos} declares {size:,} bytes, but the file has "
                f"{max(0, self.end - self.pos):,} left (truncated or corrupt header)"
            )

    def u32(self, what: str) -> int:
        self.need(4, what)
        (value,) = _U32.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def u64(self, what: str) -> int:
        self.need(8, what)
        (value,) = _U64.unpack_from(self.data, self.pos)
        self.pos += 8
        return int(value)

    def string(self, what: str) -> str:
        size = self.u64(what)
        self.need(size, what)
        raw = self.data[self.pos : self.pos + size]
        self.pos += size
        return raw.decode("utf-8", "replace")  # a vocabulary may hold partial UTF-8 bytes

    def count(self, item_type: int, count: int, what: str) -> None:
        """A declared number of items must fit in what is left, at their smallest size."""
        if item_type not in _MIN_SIZE:
            raise GGUFError(f"{what} at byte {self.pos}: unknown value type {item_type}")
        if count > (self.end - self.pos) // _MIN_SIZE[item_type]:
            raise GGUFError(
                f"{what} at byte {self.pos} declares {count:,} items, more than the "
                f"{max(0, self.end - self.pos):,} bytes left can hold (truncated or corrupt header)"
            )

    def value(self, value_type: int, depth: int) -> Any:
        fmt = _FIXED.get(value_type)
        if fmt is not None:
            size = _MIN_SIZE[value_type]
            self.need(size, "a value")
            (value,) = struct.unpack_from(fmt, self.data, self.pos)
            self.pos += size
            return value
        if value_type == STRING:
            return self.string("a string")
        if value_type == ARRAY:
            if depth > MAX_ARRAY_DEPTH:
                raise GGUFError(f"arrays nested more than {MAX_ARRAY_DEPTH} deep at byte {self.pos}")
            item_type, count = self.u32("an array's item type"), self.u64("an array's length")
            self.count(item_type, count, "an array")
            ref = ArrayRef(item_type, count, self.pos)
            self.skip(item_type, count, depth + 1)
            return ref
        raise GGUFError(f"unknown value type {value_type} at byte {self.pos - 4}")

    def skip(self, item_type: int, count: int, depth: int = 1) -> None:
        if item_type in _FIXED:
            size = _MIN_SIZE[item_type] * count
            self.need(size, "an array")
            self.pos += size
        elif item_type == STRING:
            data, end, unpack = self.data, self.end, _U64.unpack_from
            pos = self.pos
            for _ in range(count):  # the hot loop of a 150,000-token vocabulary: no method calls
                if pos + 8 > end:
                    self.pos = pos
                    self.need(8, "a string's length")
                size = unpack(data, pos)[0] + 8
                if pos + size > end:
                    self.pos = pos + 8
                    self.need(size - 8, "a string")
                pos += size
            self.pos = pos
        else:
            for _ in range(count):
                self.value(item_type, depth)

    def items(self, item_type: int, count: int, depth: int) -> list[Any]:
        if item_type == STRING:
            data, pos, unpack = self.data, self.pos, _U64.unpack_from
            out = []
            for _ in range(count):  # lengths were checked when the array was skipped over
                size = unpack(data, pos)[0]
                out.append(data[pos + 8 : pos + 8 + size].decode("utf-8", "replace"))
                pos += 8 + size
            self.pos = pos
            return out
        fmt = _FIXED.get(item_type)
        if fmt is not None:
            size = _MIN_SIZE[item_type] * count
            values = list(struct.unpack_from(f"<{count}{fmt[1]}", self.data, self.pos)) if count else []
            self.pos += size
            return values
        return [self._nested(depth) for _ in range(count)]

    def _nested(self, depth: int) -> list[Any]:
        item_type, count = self.u32("an array's item type"), self.u64("an array's length")
        return self.items(item_type, count, depth + 1)


def read_metadata(path: str | os.PathLike[str]) -> GGUFMetadata:
    """The metadata of a GGUF file, its header checked (also the tensor infos, against the file's
    size); raises GGUFError for a file that is not a GGUF or lies about its lengths, OSError for
    one that cannot be opened."""
    name = os.fspath(path)
    with open(name, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size < 24:
            head = fh.read(4)
            if head != MAGIC:
                raise GGUFError("not a GGUF file (no GGUF magic)")
            raise GGUFError(f"truncated: {size} bytes, shorter than a GGUF header")
        data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    if data[:4] != MAGIC:
        raise GGUFError("not a GGUF file (no GGUF magic)")
    cursor = _Cursor(data, 4)
    version = cursor.u32("the version")
    if version not in VERSIONS:
        raise GGUFError(f"GGUF version {version} is not supported (only {', '.join(map(str, VERSIONS))})")
    tensor_count = cursor.u64("the tensor count")
    kv_count = cursor.u64("the key/value count")
    if kv_count > (size - cursor.pos) // _MIN_KV:
        raise GGUFError(f"declares {kv_count:,} metadata keys, more than its {size:,} bytes can hold")
    if tensor_count > (size - cursor.pos) // _MIN_TENSOR_INFO:
        raise GGUFError(f"declares {tensor_count:,} tensors, more than its {size:,} bytes can hold")
    values: dict[str, Any] = {}
    for _ in range(kv_count):
        key = cursor.string("a metadata key")
        value_type = cursor.u32(f"the type of {key!r}")
        try:
            values[key] = cursor.value(value_type, depth=1)
        except GGUFError as exc:
            raise GGUFError(f"metadata {key!r}: {exc}") from None
    _check_tensor_infos(cursor, tensor_count, values.get("general.alignment", DEFAULT_ALIGNMENT))
    return GGUFMetadata(name, version, tensor_count, values, data)


def _check_tensor_infos(cursor: _Cursor, tensor_count: int, alignment: Any) -> None:
    """Tensor infos: names, at most 4 dimensions, offsets inside the data section. Their data is
    never read; only that the header's numbers fit the file."""
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise GGUFError(f"general.alignment {alignment!r} is not a power of two")
    offsets = []
    for index in range(tensor_count):
        what = f"tensor info {index}"
        cursor.string(f"{what}'s name")
        dims = cursor.u32(f"{what}'s dimension count")
        if dims > MAX_TENSOR_DIMS:
            raise GGUFError(f"{what} declares {dims:,} dimensions (at most {MAX_TENSOR_DIMS})")
        cursor.need(8 * dims + 4, what)
        cursor.pos += 8 * dims + 4  # the dimensions and the ggml type
        offsets.append(cursor.u64(f"{what}'s offset"))
    data_start = -(-cursor.pos // alignment) * alignment
    data_size = cursor.end - data_start
    for index, offset in enumerate(offsets):
        if offset % alignment or offset > data_size:
            raise GGUFError(
                f"tensor info {index} declares its data at offset {offset:,}, outside the "
                f"{max(0, data_size):,} bytes of tensor data (truncated or corrupt file)"
            )


@dataclass(frozen=True)
class GGUFTemplate:
    """One chat template of a GGUF: `name` as reports show it (`chat_template`,
    `chat_template.tool_use`) and its text."""

    name: str
    source: str


TEMPLATE_KEY = "tokenizer.chat_template"


def chat_templates(metadata: GGUFMetadata) -> list[GGUFTemplate]:
    """The chat templates of a GGUF: `tokenizer.chat_template` first, then the named ones
    (`tokenizer.chat_template.NAME`), in the file's order."""
    found = []
    for key, value in metadata.values.items():
        if (key == TEMPLATE_KEY or key.startswith(TEMPLATE_KEY + ".")) and isinstance(value, str):
            found.append(GGUFTemplate(key.removeprefix("tokenizer."), value))
    return sorted(found, key=lambda t: t.name != "chat_template")


def source_name(path: str, template_name: str) -> str:
    """How a template of a GGUF is named in reports: `model.gguf[chat_template]`."""
    return f"{path}[{template_name}]"


def template_named(path: str | os.PathLike[str], name: str | None = None) -> GGUFTemplate:
    """One chat template of a GGUF file: `name` (`tool_use` or `chat_template.tool_use`), else the
    default one; raises GGUFError if the file has none of that name."""
    templates = chat_templates(read_metadata(path))
    if not templates:
        raise GGUFError("no tokenizer.chat_template in this GGUF")
    if name is None:
        return templates[0]
    for template in templates:
        if name in (template.name, template.name.removeprefix("chat_template.")):
            return template
    names = ", ".join(t.name for t in templates)
    raise GGUFError(f"no chat template named {name!r} (it has {names})")

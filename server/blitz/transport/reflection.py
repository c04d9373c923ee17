"""gRPC server reflection that finds every symbol of ours and carries the proto comments.

grpcio-reflection answers from protobuf's default descriptor pool, which has two gaps: it
finds no method or enum-value symbol (`grpcurl describe blitz.v1.SessionService.Decide`
gets NOT_FOUND), and the descriptors the stubs embed were stripped of their source
information, so no client sees a comment. `make proto` writes the whole descriptor set
of our files, comments included, beside the stubs (`blitz/v1/descriptors.binpb`); this
module answers for those files from it and leaves every other file (health's, the
reflection service's own) to the default pool.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool

__all__ = ["DescribedPool"]

_DESCRIPTORS = "descriptors.binpb"


class _File:
    """One file as grpcio-reflection walks it: its name, its imports, its whole proto."""

    def __init__(self, proto: descriptor_pb2.FileDescriptorProto) -> None:
        self.name = proto.name
        self.proto = proto
        self.dependencies: list[_File] = []

    def CopyToProto(self, proto: descriptor_pb2.FileDescriptorProto) -> None:
        proto.CopyFrom(self.proto)


class DescribedPool:
    """The pool grpcio-reflection is given: our files from the descriptor set, by file
    name and by any symbol they declare; the rest (and extension lookups) from the
    default pool."""

    def __init__(self, serialized: bytes | None = None) -> None:
        if serialized is None:
            serialized = resources.files("blitz.v1").joinpath(_DESCRIPTORS).read_bytes()
        files = descriptor_pb2.FileDescriptorSet.FromString(serialized).file
        self._default = descriptor_pool.Default()
        self._files = {proto.name: _File(proto) for proto in files}
        for described in self._files.values():
            described.dependencies = [
                self._files[name] if name in self._files else self._default.FindFileByName(name)
                for name in described.proto.dependency
            ]
        self._symbols = {
            symbol: described
            for described in self._files.values()
            for symbol in _symbols(described.proto)
        }

    def FindFileByName(self, name: str) -> Any:
        return self._files[name] if name in self._files else self._default.FindFileByName(name)

    def FindFileContainingSymbol(self, symbol: str) -> Any:
        if symbol in self._symbols:
            return self._symbols[symbol]
        return self._default.FindFileContainingSymbol(symbol)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._default, name)  # extensions: FindMessageTypeByName and the rest


def _symbols(proto: descriptor_pb2.FileDescriptorProto) -> Iterator[str]:
    """Every fully qualified name `proto` declares, as reflection clients ask for them."""
    package = f"{proto.package}." if proto.package else ""
    for message in proto.message_type:
        yield from _message_symbols(package + message.name, message)
    for enum in proto.enum_type:
        yield from _enum_symbols(package, enum)
    for service in proto.service:
        yield package + service.name
        for method in service.method:
            yield f"{package}{service.name}.{method.name}"
    for extension in proto.extension:
        yield package + extension.name


def _message_symbols(name: str, message: descriptor_pb2.DescriptorProto) -> Iterator[str]:
    yield name
    for field in (*message.field, *message.extension):
        yield f"{name}.{field.name}"
    for oneof in message.oneof_decl:
        yield f"{name}.{oneof.name}"
    for nested in message.nested_type:
        yield from _message_symbols(f"{name}.{nested.name}", nested)
    for enum in message.enum_type:
        yield from _enum_symbols(f"{name}.", enum)


def _enum_symbols(scope: str, enum: descriptor_pb2.EnumDescriptorProto) -> Iterator[str]:
    # An enum's values are its siblings in protobuf's scoping; clients ask either way.
    yield scope + enum.name
    for value in enum.value:
        yield scope + value.name
        yield f"{scope}{enum.name}.{value.name}"

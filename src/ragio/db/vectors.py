"""A vector bound as a query parameter in pgvector's binary form.

pgvector's text form (``[0.1,0.2,…]``) costs a formatting pass in Python and a parse of
every value in PostgreSQL: for 3,072 dimensions ~0.75 ms of the service's CPU a vector,
and a question's vector is bound twice (the owner's answers, then the chunks). The binary
form (``vector_recv``: the dimensions and a zero as big-endian int16s, then each value as
a big-endian float4) is one ``struct.pack``, ~0.04 ms, and PostgreSQL copies it as it is.

The parameter is sent with no type (OID 0) and cast in SQL, ``%(v)s::vector``: the cast
gives it its type, so the same SQL works whatever OID the extension's type has in this
database. ``halfvec`` is reached through ``vector`` (``%(v)s::vector::halfvec(3072)``):
a binary parameter is read by the receive function of the type it is cast to.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format


class BoundVector:
    """``vector``'s binary form, ready to be bound; cast it in SQL (``%s::vector``)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def vector_param(vector: Sequence[float]) -> BoundVector:
    """``vector`` as a parameter of pgvector's binary form (each value as the float4
    pgvector keeps of it)."""
    dimensions = len(vector)
    return BoundVector(struct.pack(f">HH{dimensions}f", dimensions, 0, *vector))


class _BinaryVectorDumper(Dumper):
    format = Format.BINARY
    oid = 0  # untyped: the SQL's cast names the type

    def dump(self, obj: BoundVector) -> bytes:
        return obj.data


psycopg.adapters.register_dumper(BoundVector, _BinaryVectorDumper)

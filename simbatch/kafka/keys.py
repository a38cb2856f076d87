"""The partitions of a feed's keyed messages, hashed in bulk.

Message i of a case named ``name`` has the key ``k-<name>-<i>`` (the harnesses' keys). Its
partition is the client's key hash (:mod:`.partitioners`: murmur2 for the Java producer and
franz-go, CRC-32 for librdkafka) of those bytes: here computed for millions of keys at once,
the keys laid out as a byte matrix per digit count and hashed column by column with
``numpy`` 32-bit arithmetic (which wraps as Java's ``int`` and C's ``uint32_t`` do). Checked
key by key against :func:`.partitioners.key_partition` (``tests/test_kafka_aggregate.py``).
"""

from __future__ import annotations

import numpy as np

_M = np.uint32(0x5BD1E995)
_SEED = 0x9747B28C
_BLOCK = 1 << 20
_POWERS = 10 ** np.arange(1, 19, dtype=np.int64)


def _crc_table() -> np.ndarray:
    table = np.zeros(256, np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0xEDB88320 if c & 1 else c >> 1
        table[i] = c
    return table


_CRC = _crc_table()


def murmur2_matrix(keys: np.ndarray) -> np.ndarray:
    """Kafka's ``Utils.murmur2`` of each row of ``keys`` (uint8, one key per row, all of the
    same length), as unsigned 32-bit values."""
    m, length = keys.shape
    h: np.ndarray = np.full(m, (_SEED ^ length) & 0xFFFFFFFF, np.uint32)
    words = keys[:, : length & ~3].astype(np.uint32)
    for w in range(0, length & ~3, 4):
        k = words[:, w] | (words[:, w + 1] << 8) | (words[:, w + 2] << 16) | (words[:, w + 3] << 24)
        k = k * _M
        k ^= k >> 24
        k = k * _M
        h = (h * _M) ^ k
    n4, tail = length & ~3, length & 3
    if tail == 3:
        h ^= keys[:, n4 + 2].astype(np.uint32) << 16
    if tail >= 2:
        h ^= keys[:, n4 + 1].astype(np.uint32) << 8
    if tail >= 1:
        h ^= keys[:, n4].astype(np.uint32)
        h = h * _M
    h ^= h >> 13
    h = h * _M
    h ^= h >> 15
    return h


def crc32_matrix(keys: np.ndarray) -> np.ndarray:
    """zlib's CRC-32 of each row of ``keys`` (uint8, all rows of one length)."""
    crc = np.full(keys.shape[0], 0xFFFFFFFF, np.uint32)
    for col in range(keys.shape[1]):
        crc = _CRC[(crc ^ keys[:, col]) & 0xFF] ^ (crc >> 8)
    return crc ^ np.uint32(0xFFFFFFFF)


def _key_matrix(prefix: bytes, numbers: np.ndarray, digits: int) -> np.ndarray:
    out = np.empty((numbers.size, len(prefix) + digits), np.uint8)
    out[:, : len(prefix)] = np.frombuffer(prefix, np.uint8)
    rest = numbers.copy()
    for col in range(len(prefix) + digits - 1, len(prefix) - 1, -1):
        out[:, col] = 48 + rest % 10
        rest //= 10
    return out


def key_partitions(semantics: str, name: str, n: int, n_partitions: int) -> np.ndarray:
    """The partition of the keys ``k-<name>-<i>``, i < ``n``, under ``semantics``' key hash.

    Examples
    --------
    >>> from simbatch.kafka.partitioners import key_partition
    >>> key_partitions("franz-go", "p", 3, 32).tolist() == [
    ...     key_partition("franz-go", f"k-p-{i}".encode(), 32) for i in range(3)]
    True
    """
    prefix = f"k-{name}-".encode()
    hash_rows = crc32_matrix if semantics == "librdkafka" else murmur2_matrix
    out = np.empty(n, np.int64)
    for lo in range(0, n, _BLOCK):
        numbers = np.arange(lo, min(n, lo + _BLOCK), dtype=np.int64)
        lengths = 1 + np.searchsorted(_POWERS, numbers, side="right")
        for digits in np.unique(lengths).tolist():
            pick = lengths == digits
            h = hash_rows(_key_matrix(prefix, numbers[pick], digits))
            if semantics != "librdkafka":
                h = h & np.uint32(0x7FFFFFFF)
            out[lo:lo + numbers.size][pick] = h.astype(np.int64) % n_partitions
    return out

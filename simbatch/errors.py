"""The one error type of simbatch and the validation vocabulary every component uses.

Every bad input, whether it comes from a Python call or from a scenario file, raises
:class:`ConfigError` with one message shape (after scikit-learn's parameter validation)::

    The 'timeout_ms' parameter of BatcherConfig must be a number >= 0; got -5.

A scenario file adds where the value came from::

    scenarios/x.toml: [batcher] timeout_ms: the 'timeout_ms' parameter of ... got -5.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


class ConfigError(ValueError):
    """A parameter or scenario value is invalid. The message names field, value and source."""


def fail(owner: str, field: str, expected: str, value: Any) -> ConfigError:
    """Build the one-format error for ``field`` of ``owner``.

    Examples
    --------
    >>> str(fail("BatcherConfig", "size", "an integer >= 1", 0))
    "The 'size' parameter of BatcherConfig must be an integer >= 1; got 0."
    """
    return ConfigError(f"The '{field}' parameter of {owner} must be {expected}; got {value!r}.")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_number(owner: str, field: str, value: Any, *, minimum: float = 0.0,
                 strict: bool = False, maximum: float | None = None) -> float:
    """Return ``value`` as a float if it is a finite number within bounds, else raise."""
    op = ">" if strict else ">="
    expected = f"a number {op} {minimum:g}"
    if maximum is not None:
        expected += f" and <= {maximum:g}"
    if not _is_number(value):
        raise fail(owner, field, expected, value)
    if (value <= minimum if strict else value < minimum) or (
            maximum is not None and value > maximum):
        raise fail(owner, field, expected, value)
    return float(value)


def check_int(owner: str, field: str, value: Any, *, minimum: int = 0) -> int:
    """Return ``value`` if it is an integer >= ``minimum`` (bools rejected), else raise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise fail(owner, field, f"an integer >= {minimum}", value)
    return value


def check_optional_int(owner: str, field: str, value: Any, *, minimum: int = 1) -> int | None:
    """``None`` (not set) or an integer >= ``minimum``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise fail(owner, field, f"an integer >= {minimum} or not set", value)
    return value


def check_choice(owner: str, field: str, value: Any, choices: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise naming them all."""
    options = tuple(choices)
    if value not in options:
        raise fail(owner, field, "one of " + ", ".join(repr(c) for c in options), value)
    return value


def check_bool(owner: str, field: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise fail(owner, field, "true or false", value)
    return value

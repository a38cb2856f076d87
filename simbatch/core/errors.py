"""The one error type of simbatch and its one message shape.

Every bad input, from a Python call, a scenario file, a model file or the command line,
raises :class:`ConfigError` with one message shape (after scikit-learn's parameter
validation)::

    The 'timeout_ms' parameter of BatcherConfig must be a number >= 0; got -5.

A scenario file adds where the value came from, the section path and the key::

    scenarios/x.toml: [batcher] timeout_ms: The 'timeout_ms' parameter of ... got -5.

The error keeps its parts (``owner``, ``field``, ``expected``, ``value`` and ``path``, the
names leading to the field from the object that was built), so the scenario loader can say
which file and section the value came from without parsing the text.
"""

from __future__ import annotations

import math
from typing import Any

_MISSING = object()


def show(value: Any) -> str:
    """The value as a message shows it: short, and never the repr of a huge container."""
    if value is _MISSING:
        return "nothing"
    if isinstance(value, (list, tuple)) and len(value) > 8:
        return f"a list of {len(value)} values"
    if isinstance(value, dict) and len(value) > 8:
        return f"a table of {len(value)} keys"
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


class ConfigError(ValueError):
    """A parameter, a scenario value or a command-line argument is invalid.

    Examples
    --------
    >>> str(ConfigError.parameter("BatcherConfig", "size", "an integer >= 1", 0))
    "The 'size' parameter of BatcherConfig must be an integer >= 1; got 0."
    >>> str(ConfigError.parameter("BatcherConfig", "size", "an integer >= 1", 0)
    ...     .at("s.toml: [batcher] size"))
    "s.toml: [batcher] size: The 'size' parameter of BatcherConfig must be an integer >= 1; got 0."
    """

    def __init__(self, message: str, *, owner: str = "", field: str = "", expected: str = "",
                 value: Any = _MISSING, path: tuple[str, ...] = (), where: str = "") -> None:
        self.message, self.owner, self.field = message, owner, field
        self.expected, self.value, self.path, self.where = expected, value, path, where
        super().__init__(f"{where}: {message}" if where else message)

    @classmethod
    def parameter(cls, owner: str, field: str, expected: str, value: Any = _MISSING, *,
                  path: tuple[str, ...] = ()) -> ConfigError:
        """The one message: ``The 'field' parameter of owner must be expected; got value.``"""
        message = f"The '{field}' parameter of {owner} must be {expected}; got {show(value)}."
        return cls(message, owner=owner, field=field, expected=expected, value=value,
                   path=path or (field,))

    def __reduce__(self) -> tuple[Any, ...]:
        # keep the parts when the error crosses a process boundary (a worker's run)
        return (_rebuild, (self.message, self.owner, self.field, self.expected, self.value,
                           self.path, self.where))

    def at(self, where: str) -> ConfigError:
        """The same error, said to come from ``where`` (a file, a section path, a key)."""
        return ConfigError(self.message, owner=self.owner, field=self.field,
                           expected=self.expected, value=self.value, path=self.path,
                           where=f"{where}: {self.where}" if self.where else where)

    def under(self, *names: str) -> ConfigError:
        """The same error for a field nested under ``names`` (its path grows in front)."""
        return ConfigError(self.message, owner=self.owner, field=self.field,
                           expected=self.expected, value=self.value,
                           path=(*names, *self.path), where=self.where)


def _rebuild(message: str, owner: str, field: str, expected: str, value: Any,
             path: tuple[str, ...], where: str) -> ConfigError:
    return ConfigError(message, owner=owner, field=field, expected=expected, value=value,
                       path=path, where=where)


def fail(owner: str, field: str, expected: str, value: Any = _MISSING) -> ConfigError:
    """Shorthand for :meth:`ConfigError.parameter`, for checks of function arguments."""
    return ConfigError.parameter(owner, field, expected, value)


def check_int(owner: str, field: str, value: Any, *, minimum: int = 0) -> int:
    """Return ``value`` if it is an integer >= ``minimum`` (bools refused), else raise.

    For function arguments; configuration classes declare their constraints instead
    (:mod:`simbatch.core.config`).

    >>> check_int("simulate", "seed", -1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    simbatch.core.errors.ConfigError: The 'seed' parameter of simulate must be ...; got -1.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise fail(owner, field, f"an integer >= {minimum}", value)
    return value

"""One validation vocabulary for every configuration class.

A configuration is a frozen, keyword-only dataclass whose constraints are declared once, in
its annotations, and checked by pydantic v2 when it is built, from Python or from a TOML
table (a nested table becomes a nested configuration):

* types, strict: an integer field refuses ``2.0`` and ``True``, a number refuses ``"5"``,
  numbers must be finite (:data:`Int`, :data:`Float`, :data:`Bool`, :data:`Str`);
* ranges and choices: ``Annotated[Float, Ge(0)]``, ``Literal["a", "b"]``;
* cross-field rules, declared as :class:`Rule` in the class's ``RULES``;
* unknown keys are refused by name.

pydantic was chosen over attrs + cattrs and over hand-written checks because it turns a TOML
table into nested frozen dataclasses in one call, refuses unknown keys at every level and
reports each failure with its full path, its input and the constraint that failed; attrs
would need cattrs for the structuring and a validator per field. Its messages are not
shown: :func:`translate` renders every failure in simbatch's one shape
(:class:`~simbatch.core.errors.ConfigError`), describing the field's declared constraint, so
no message is written by hand twice.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass as _std_dataclass
from typing import Annotated, Any, Literal, Union

import annotated_types as at
import pydantic
import pydantic.dataclasses
from pydantic import BeforeValidator, ConfigDict, Discriminator, Field, Strict, Tag, ValidationError

from .errors import ConfigError

__all__ = ["INT_MAX", "MAX_CORES", "NONE_WORD", "BeforeValidator", "Bool", "Cores",
           "Discriminator", "Field", "Float", "Int", "NonNeg", "PosFloat", "PosInt", "Rule",
           "RuleViolation", "Str", "Tag", "at", "config", "describe", "fields_of", "is_config",
           "kind_tag", "section_fields", "translate"]

# Integers stay exactly representable as floats (and in JSON): 2^53.
INT_MAX = 2**53
Int = Annotated[int, Strict(), at.Le(INT_MAX)]
Float = Annotated[float, Strict()]
Bool = Annotated[bool, Strict()]
Str = Annotated[str, Strict()]
NonNeg = Annotated[Float, at.Ge(0)]
PosFloat = Annotated[Float, at.Gt(0)]
PosInt = Annotated[Int, at.Ge(1)]
MAX_CORES = 4096
Cores = Annotated[PosInt, at.Le(MAX_CORES)]
"""A core or processor count: one object each is made up front, so a bound keeps a mistyped
count from running out of memory or never starting."""


def _none_word(value: Any) -> Any:
    return None if value == "none" else value


# TOML has no null: an optional setting is switched off with the word "none".
NONE_WORD = BeforeValidator(_none_word)

_PYDANTIC = ConfigDict(extra="forbid", allow_inf_nan=False, arbitrary_types_allowed=True)


@_std_dataclass(frozen=True)
class Rule:
    """A cross-field rule: ``holds(config)`` must be true, else ``field`` "must be"
    ``expected`` (e.g. ``Rule("cap", "set when fanout = 'errgroup'", ...)``); ``field`` may
    name a section's field (``"broker.replicas"``)."""

    field: str
    expected: str
    holds: Callable[[Any], bool]


class RuleViolation(ValueError):
    """Raised inside validation by a broken :class:`Rule`; carries the parts of the error."""

    def __init__(self, owner: str, rule: Rule, value: Any) -> None:
        super().__init__(f"{owner}.{rule.field} must be {rule.expected}")
        self.owner, self.rule, self.value = owner, rule, value


def _dotted(obj: Any, field: str) -> Any:
    """``obj``'s value at ``field``, which may name a section's field (``"broker.replicas"``)."""
    for name in field.split("."):
        obj = getattr(obj, name, None)
    return obj


def _check_rules(self: Any) -> None:
    for rule in type(self).RULES:
        if not rule.holds(self):
            raise RuleViolation(type(self).__name__, rule, _dotted(self, rule.field))
    after = getattr(self, "_after_validation", None)
    if after is not None:
        after()


@typing.dataclass_transform(kw_only_default=True, frozen_default=True,
                            field_specifiers=(Field, dataclasses.field))
def config(cls: type) -> type:
    """Make ``cls`` a frozen, keyword-only, validated configuration (see the module
    docstring). Building it with a bad value raises :class:`ConfigError`.

    Examples
    --------
    >>> @config
    ... class Pool:
    ...     size: Annotated[Int, at.Ge(1)] = 4
    >>> Pool(size=0)
    Traceback (most recent call last):
    ...
    simbatch.core.errors.ConfigError: The 'size' parameter of Pool must be an integer >= 1; got 0.
    """
    if not hasattr(cls, "RULES"):
        cls.RULES = ()  # type: ignore[attr-defined]
    cls.__post_init__ = _check_rules  # type: ignore[attr-defined]
    built = pydantic.dataclasses.dataclass(frozen=True, kw_only=True, config=_PYDANTIC)(cls)
    init = built.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        except ValidationError as exc:
            raise translate(exc, type(self)) from None

    built.__init__ = __init__  # type: ignore[method-assign]
    return built


def is_config(tp: Any) -> bool:
    return isinstance(tp, type) and hasattr(tp, "__pydantic_fields__")


def fields_of(cls: type) -> dict[str, Any]:
    """``{name: annotation}`` of a configuration class's fields."""
    return {name: info.annotation if not info.metadata else
            Annotated[(info.annotation, *info.metadata)]
            for name, info in cls.__pydantic_fields__.items()}  # type: ignore[attr-defined]


# ------------------------------------------------------------------ describing constraints
def _strip(tp: Any) -> tuple[Any, list[Any]]:
    """(base type, constraint metadata) of an annotation."""
    meta: list[Any] = []
    while typing.get_origin(tp) is Annotated:
        args = typing.get_args(tp)
        tp, meta = args[0], [*meta, *args[1:]]
    return tp, meta


def _union_args(tp: Any) -> tuple[Any, ...] | None:
    if typing.get_origin(tp) in (Union, types.UnionType):
        return typing.get_args(tp)
    return None


def _bounds(meta: list[Any], int_max: bool) -> str:
    out = []
    for attr, op in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        for m in meta:
            bound = getattr(m, attr, None)
            if bound is not None and (int_max or not (attr == "le" and bound == INT_MAX)):
                out.append(f"{op} {bound:g}" if bound != INT_MAX else f"{op} 2^53")
    return " and ".join(out)


def _tags(members: tuple[Any, ...]) -> list[str]:
    return [m.tag for member in members for _, meta in _leaves(member) for m in meta
            if isinstance(m, Tag)]


def describe(tp: Any, int_max: bool = False) -> str:
    """What a value of annotation ``tp`` must be, in words.

    >>> describe(Annotated[Int, at.Ge(1)])
    'an integer >= 1'
    >>> describe(Literal["a", "b"] | None)
    "one of 'a', 'b', or not set"
    """
    base, meta = _strip(tp)
    if _union_args(base) is not None:
        leaves = _leaves(tp)
        tags = [m.tag for _, lm in leaves for m in lm if isinstance(m, Tag)]
        parts = [describe(Annotated[(b, *lm)], int_max) if lm
                 else describe(b, int_max)
                 for b, lm in leaves
                 if b is not type(None) and not any(isinstance(m, Tag) for m in lm)]
        if tags:
            parts.append("a table with kind = " + ", ".join(repr(t) for t in tags))
        optional = any(b is type(None) for b, _ in leaves)
        return " or ".join(parts) + (", or not set" if optional else "")
    bounds = _bounds(meta, int_max)
    suffix = f" {bounds}" if bounds else ""
    if typing.get_origin(base) is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(base))
    if base is bool:
        return "true or false"
    if base is int:
        return "an integer" + suffix
    if base is float:
        return "a number" + suffix
    if base is str:
        return "a string" + suffix
    if typing.get_origin(base) is tuple:
        item = typing.get_args(base)[0]
        return "a list, each item " + describe(item, int_max)
    if is_config(base):
        return f"a table of {base.__name__}'s parameters"
    return f"a valid {getattr(base, '__name__', 'value')}"


# ------------------------------------------------------------------ translating failures
def _leaves(tp: Any) -> list[tuple[Any, list[Any]]]:
    """The members of a (possibly nested) union, each as (base type, metadata)."""
    base, meta = _strip(tp)
    members = _union_args(base)
    if members is None:
        return [(base, meta)]
    return [leaf for member in members for leaf in _leaves(member)]


def _member(tp: Any, tag: str) -> Any:
    for base, meta in _leaves(tp):
        if any(isinstance(m, Tag) and m.tag == tag for m in meta):
            return base
    return None


def _walk(root: type, loc: tuple[Any, ...]) -> tuple[type, str, Any, tuple[str, ...]]:
    """Follow a pydantic location from ``root``: (owner class, field name, the field's
    annotation, the path of field names). Union branch labels in the location are skipped,
    a tagged member followed."""
    owner, field, annotation = root, "", None
    path: list[str] = []
    tp: Any = root
    for part in loc:
        if isinstance(part, int):                       # an item of a list
            continue
        base, _ = _strip(tp)
        if _union_args(base) is not None:
            chosen = _member(tp, part)
            if chosen is not None:
                tp = chosen
            continue                                    # a branch label, not a field
        if is_config(base):
            owner, field = base, part
            annotation = fields_of(base).get(part)
            path.append(part)
            tp = annotation if annotation is not None else Any
    return owner, field, annotation, tuple(path)


def _branch(err: Any) -> str:
    """Which union branch a failure belongs to: "table", "scalar" or "" (no union)."""
    for part in err["loc"]:
        if isinstance(part, str) and "tagged-union[" in part:
            return "table"
        if isinstance(part, str) and (part in ("float", "int", "bool", "str")
                                      or part.startswith("constrained-")):
            return "scalar"
    return ""


def _relevant(errors: list[Any]) -> Any:
    """Of a union's failures, the one about the branch the input was meant for: the table
    branch for a table, the scalar branch for anything else."""
    scalar_inputs = [e["input"] for e in errors if _branch(e) == "scalar"]
    wants = "table" if any(isinstance(v, dict) for v in scalar_inputs) else "scalar"
    fitting = [e for e in errors if _branch(e) in ("", wants)]
    return (fitting or errors)[0]


def translate(exc: ValidationError, root: type) -> ConfigError:
    """The first failure of ``exc`` (raised building ``root``) as a :class:`ConfigError`."""
    err = _relevant(exc.errors())
    loc = tuple(err["loc"])
    kind, value = err["type"], err["input"]
    ctx = err.get("ctx") or {}
    if kind == "value_error" and isinstance(ctx.get("error"), RuleViolation):
        v = ctx["error"]
        owner_cls, _, _, path = _walk(root, loc)
        return ConfigError.parameter(v.owner, v.rule.field, v.rule.expected, v.value,
                                     path=(*path, *v.rule.field.split(".")))
    owner_cls, field, annotation, path = _walk(root, loc)
    owner = owner_cls.__name__
    if kind == "unexpected_keyword_argument":
        known = ", ".join(sorted(fields_of(owner_cls)))
        return ConfigError.parameter(owner, field, f"one of {owner}'s parameters ({known})",
                                     value, path=path)
    if kind in ("missing", "missing_keyword_only_argument", "missing_argument"):
        return ConfigError.parameter(owner, field, f"given ({describe(annotation)})",
                                     path=path)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        tags = [m.tag for _, meta in _leaves(annotation) for m in meta if isinstance(m, Tag)]
        got = value.get("kind") if isinstance(value, dict) else value
        expected = "one of " + ", ".join(repr(t) for t in tags)
        return ConfigError.parameter(f"{owner}.{field}", "kind", expected,
                                     got if kind == "union_tag_invalid" else None,
                                     path=(*path, "kind"))
    int_max = kind == "less_than_equal" and ctx.get("le") == INT_MAX
    expected = describe(annotation, int_max) if annotation is not None else "valid"
    return ConfigError.parameter(owner, field, expected, value, path=path)


def section_fields(cls: type) -> Iterator[tuple[str, type]]:
    """The fields of ``cls`` that hold a configuration (its sections, for a case)."""
    for name, annotation in fields_of(cls).items():
        base, _ = _strip(annotation)
        if is_config(base) or _tags(_union_args(base) or ()):
            yield name, base


def kind_tag(default: str) -> Discriminator:
    """A discriminator on ``kind`` that takes ``default`` when a table has no ``kind``."""
    def tag(value: Any) -> Any:
        if isinstance(value, dict):
            return value.get("kind", default)
        return getattr(value, "kind", None)
    return Discriminator(tag)


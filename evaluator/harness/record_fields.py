"""The result record's building blocks (record.py): the field checkers, `_spec`/`_opt` and the `_Part` base.

Each part of the record is a dataclass on `_Part` (record.py, record_timing.py, record_parts.py); its fields are
declared with `_spec` (or `_opt`, an optional one), which attaches the checker a valid record's value must pass.
`_Part` parses a JSON object into its fields (strictly, collecting problems, or leniently, falling back to the
defaults), keeps the keys it does not name in `extra`, and writes itself back as a dict.

No torch and no Django here: `evaluator.runner` and the Django apps import this module (through record.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

# --- Field checkers: each returns an error message, or "" when the value is acceptable -------------------------


def _any(value: Any) -> str:
    return ""


def _is_num(value: Any) -> bool:
    return value is None or (isinstance(value, int | float) and not isinstance(value, bool))


def _opt_bool(value: Any) -> str:
    return "" if value is None or isinstance(value, bool) else "must be bool or null"


def _opt_num(value: Any) -> str:
    return "" if _is_num(value) else "must be a number or null"


def _text(value: Any) -> str:
    return "" if isinstance(value, str) else "must be a string"


def _mapping(value: Any) -> str:
    return "" if isinstance(value, dict) else "must be an object"


def _opt_mapping(value: Any) -> str:
    return "" if value is None or isinstance(value, dict) else "must be an object or null"


def _opt_text(value: Any) -> str:
    return "" if value is None or isinstance(value, str) else "must be a string or null"


def _opt_int(value: Any) -> str:
    ok = value is None or (isinstance(value, int) and not isinstance(value, bool))
    return "" if ok else "must be an integer or null"


def _texts(value: Any) -> str:
    ok = value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value))
    return "" if ok else "must be a list of strings or null"


def _numbers(value: Any) -> str:
    """An object of numbers (or nulls) by name."""
    ok = value is None or (isinstance(value, dict) and all(_is_num(v) for v in value.values()))
    return "" if ok else "must be an object of numbers or null"


def _mappings(value: Any) -> str:
    ok = value is None or (isinstance(value, list) and all(isinstance(v, dict) for v in value))
    return "" if ok else "must be a list of objects or null"


def _interval(value: Any) -> str:
    ok = value is None or (isinstance(value, list) and len(value) == 2 and all(_is_num(v) for v in value))
    return "" if ok else "must be [low, high] or null"


def _spec(
    check: Callable[[Any], str] = _any,
    *,
    required: bool = True,
    lenient: Callable[[Any], str] | None = None,
    **kwargs: Any,
) -> Any:
    """A dataclass field with its checker, whether a valid record must hold the key, and the checker a stored record
    is read with (`lenient`; default: the same)."""
    return field(metadata={"check": check, "required": required, "lenient": lenient or check}, **kwargs)


def _opt(check: Callable[[Any], str] = _any, **kwargs: Any) -> Any:
    """An optional field (absent in some records), null by default."""
    return _spec(check, required=False, default=None, **kwargs)


def _data_fields(cls: type) -> list[Field[Any]]:
    return [f for f in fields(cls) if f.name not in ("extra", "_given", "_order")]


def _default(f: Field[Any]) -> Any:
    if f.default_factory is not MISSING:
        return f.default_factory()
    return f.default


P = TypeVar("P", bound="_Part")


@dataclass
class _Part:
    """A JSON object with named fields; keys it does not name are kept in `extra`, in their order."""

    extra: dict[str, Any] = field(default_factory=dict, kw_only=True)
    # The fields the parsed object held (an optional one is written back then, even as null).
    _given: frozenset[str] = field(default=frozenset(), init=False, repr=False, compare=False)
    # The order of the keys written after those a built part held from the start (in field order): a parsed object's
    # keys in its own order, then each key a part came to hold later (an optional field assigned, an extra key `put`)
    # in the order it did. So the JSON keeps the order a dict filled key by key had: the harness's record, once one,
    # prints byte for byte as it did, and a stored record round-trips in its own order.
    _order: list[str] = field(default_factory=list, init=False, repr=False, compare=False)

    # Fields holding nested parts: name -> (part class, is a list of them). A field whose default is None may hold
    # null instead.
    _nested: ClassVar[dict[str, tuple[type[_Part], bool]]] = {}
    # Top-level keys that may travel beside this part without being named by it (the Record's TRANSIT_KEYS).
    _transit: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        """A nested part given as a plain dict (or a list of them) is read as that part, leniently."""
        for name, (part, many) in self._nested.items():
            value = getattr(self, name)
            if many and isinstance(value, list):
                setattr(self, name, [part._parse(v, name, None) if isinstance(v, dict) else v for v in value])
            elif not many and isinstance(value, dict):
                setattr(self, name, part._parse(value, name, None))
        object.__setattr__(self, "_built", True)

    def __setattr__(self, name: str, value: Any) -> None:
        """A field assigned once the part is built counts as held, null included, as a key of a parsed object does:
        the harness fills its record field by field, and an optional field it wrote as null (an environment's
        `cudnn` on the CPU, a missing `speed_of_light`) stays in the JSON as the dict it once filled had it."""
        if not self.__dict__.get("_built") or name not in self.keys():
            object.__setattr__(self, name, value)
            return
        held = self.holds(name)
        object.__setattr__(self, name, value)
        object.__setattr__(self, "_given", self._given | {name})
        if not held and name not in self._order:
            self._order.append(name)

    def put(self, key: str, value: Any) -> None:
        """Set a key no field names (`extra`: the Record's TRANSIT_KEYS), written where a dict would have it."""
        self.extra[key] = value
        if key not in self._order:
            self._order.append(key)

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in _data_fields(cls))

    @classmethod
    def required_keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in _data_fields(cls) if f.metadata.get("required", True))

    @classmethod
    def all_keys(cls) -> frozenset[str]:
        """Every key this part and the parts nested in it name (the key names a reader may look up)."""
        names = set(cls.keys())
        for part, _ in cls._nested.values():
            names |= part.all_keys()
        return frozenset(names)

    def holds(self, name: str) -> bool:
        """Whether the field will be written back: parsed from the object, assigned since, or holding a value."""
        return getattr(self, name) is not None or name in self._given or name in self.required_keys()

    @classmethod
    def from_dict(cls: type[P], data: Any, *, closed: bool = False) -> P:
        """Parse one part strictly; raise ValueError listing every problem (`closed`: keys it does not name too)."""
        problems: list[str] = []
        made = cls._parse(data, cls.__name__, problems, closed)
        if problems:
            raise ValueError(f"invalid {cls.__name__}: " + "; ".join(problems))
        return made

    def to_dict(self) -> dict[str, Any]:
        """Every required field; an optional one when the parsed record held it or it holds a value (records that
        predate it round-trip)."""
        names, late = self.keys(), set(self._order)
        out = {name: _plain(getattr(self, name)) for name in names if name not in late and self.holds(name)}
        for key in self._order:
            if key in self.extra:
                out[key] = self.extra[key]
            elif key in names and self.holds(key):
                out[key] = _plain(getattr(self, key))
        out.update((k, v) for k, v in self.extra.items() if k not in out)
        return out

    @classmethod
    def _parse(cls: type[P], data: Any, where: str, problems: list[str] | None, closed: bool = False) -> P:
        """Build from a dict. `problems` given: collect what is wrong (strict; `closed`: keys no field names are
        wrong too); None: replace it by the default."""
        if not isinstance(data, dict):
            if problems is not None:
                problems.append(f"{where} must be an object")
            data = {}
        values: dict[str, Any] = {}
        for f in _data_fields(cls):
            if f.name not in data:
                if problems is not None and f.metadata.get("required", True):
                    problems.append(f"{where} lacks {f.name}")
                continue  # the dataclass default
            raw = data[f.name]
            nested = cls._nested.get(f.name)
            if nested is not None:
                part, many = nested
                if raw is None and f.default is None:
                    values[f.name] = None
                    continue
                if many:
                    if not isinstance(raw, list):
                        if problems is not None:
                            problems.append(f"{where}.{f.name} must be a list")
                        continue
                    items = [(i, x) for i, x in enumerate(raw) if problems is not None or isinstance(x, dict)]
                    values[f.name] = [part._parse(x, f"{where}.{f.name}[{i}]", problems, closed) for i, x in items]
                else:
                    values[f.name] = part._parse(raw, f"{where}.{f.name}", problems, closed)
                continue
            error = f.metadata["check" if problems is not None else "lenient"](raw)
            if error:
                if problems is not None:
                    problems.append(f"{where}.{f.name} {error}")
                continue
            values[f.name] = raw
        names = set(cls.keys())
        extra = {k: v for k, v in data.items() if k not in names}
        unnamed = [k for k in extra if k not in cls._transit]
        if closed and problems is not None and unnamed:
            problems.append(f"{where} holds keys evaluator/harness/record.py does not name: {unnamed}")
        made = cls(**values, extra=extra)
        made._given = frozenset(k for k in data if k in names)
        made._order = list(data)
        return made


def _plain(value: Any) -> Any:
    if isinstance(value, _Part):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value

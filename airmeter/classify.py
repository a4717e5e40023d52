"""Classify a tool into a cost layer from its name, arguments and annotations.

The order, first decisive step wins:

1. an explicit ``layer`` on the tool;
2. user rules, first match wins (they all run ahead of the built-ins);
3. words inside the tool name (snake_case, camelCase, kebab-case and dots are split; a leading
   weak verb such as ``run``/``call`` yields to a later word, so ``run_agent`` is L7);
   a local verb (L2/L3) is lifted to L5 by an external marker word (``url``, ``web``, ``http``),
   by a URL argument, or by ``openWorldHint: true``;
4. a URL argument → L5;
5. annotations as a hint: ``openWorldHint: true`` → L5; read-only and closed-world → L2;
6. the default, L4.

:class:`Classifier` caches the answer per tool, so the hot path is one dict lookup.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from airmeter.errors import MeterConfigError
from airmeter.layers import LAYERS, Layer, parse_layer

__all__ = ["Classification", "Classifier", "Rule", "classify", "split_words"]

DEFAULT_LAYER = Layer.L4
MAX_CACHED_TOOLS = 65_536

_VERB_LAYER: dict[str, Layer] = {verb: Layer(info.level) for info in LAYERS for verb in info.verbs}
# Verbs that say "do something" but not what: a later, more specific word decides.
_WEAK_VERBS = frozenset({"run", "call", "invoke", "execute", "process", "do", "handle", "use"})
# Words that mean "over the network": they lift a local verb to L5.
_EXTERNAL_MARKERS = frozenset({"url", "uri", "web", "http", "https", "api", "webhook", "remote"})
# Fallback for unsplittable names ("sequentialthinking"): long verbs found inside a word.
_SUBSTRING_VERBS = tuple(
    sorted((v for v in _VERB_LAYER if len(v) >= 5), key=lambda v: (-len(v), v))
)
_URL_KEYS = frozenset({"url", "uri", "urls", "uris", "href", "link", "endpoint", "website"})
_WORD_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b|_|$)|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass(frozen=True, slots=True, kw_only=True)
class Classification:
    """The layer of a tool, how sure the classifier is (0 to 1), and why."""

    layer: Layer
    confidence: float
    reason: str


@dataclass(frozen=True, slots=True)
class Rule:
    """A user rule: tools whose name matches ``pattern`` get ``layer``.

    ``pattern`` is a regular expression searched in the tool name (case-insensitive), or a
    predicate ``(tool_name) -> bool``.
    """

    pattern: str | re.Pattern[str] | Callable[[str], bool]
    layer: Layer | int | str
    name: str | None = None

    def compile(self) -> _CompiledRule:
        """Validate the rule and return its matcher.

        Raises:
            MeterConfigError: the layer or the regular expression is invalid.
        """
        try:
            layer = parse_layer(self.layer)
        except ValueError as exc:
            raise MeterConfigError(f"rule {self.pattern!r}: {exc}") from exc
        pattern = self.pattern
        label = self.name
        if isinstance(pattern, str):
            try:
                compiled = re.compile(pattern, re.IGNORECASE)
            except re.error as exc:
                raise MeterConfigError(f"rule pattern {pattern!r} is invalid: {exc}") from exc
            return _CompiledRule(
                lambda tool: compiled.search(tool) is not None, layer, label or pattern
            )
        if isinstance(pattern, re.Pattern):
            return _CompiledRule(
                lambda tool: pattern.search(tool) is not None, layer, label or pattern.pattern
            )
        if callable(pattern):
            return _CompiledRule(pattern, layer, label or str(getattr(pattern, "__name__", "rule")))
        raise MeterConfigError(f"rule pattern must be a regex or a callable, got {pattern!r}")


@dataclass(frozen=True, slots=True)
class _CompiledRule:
    match: Callable[[str], bool]
    layer: Layer
    label: str


def split_words(name: str) -> list[str]:
    """Split a tool name into lowercase words: ``fetchURL_v2-x.y`` → ``fetch url v 2 x y``."""
    return [w.lower() for w in _WORD_RE.findall(name)]


def _stem(word: str) -> str | None:
    """The word, or a simple stem of it, when it is a known verb."""
    if word in _VERB_LAYER:
        return word
    # Plurals are usually nouns ("maps_geocode", "list_tables"); only the plural of a word
    # that names something remote or a model counts ("urls", "apis", "agents", "embeddings").
    if word.endswith("s") and _VERB_LAYER.get(word[:-1], Layer.L1) >= Layer.L5:
        return word[:-1]
    candidates = []
    for suffix in ("ing", "ed", "er"):
        if word.endswith(suffix) and len(word) > len(suffix) + 2:
            base = word[: -len(suffix)]
            candidates += [base, base + "e"]
            if len(base) > 2 and base[-1] == base[-2]:
                candidates.append(base[:-1])  # running → run
    for cand in candidates:
        if cand in _VERB_LAYER:
            return cand
    return None


def _by_name(tool: str) -> tuple[Layer, float, str] | None:
    verbs = [v for v in (_stem(w) for w in split_words(tool)) if v is not None]
    if not verbs:
        for word in split_words(tool):
            for verb in _SUBSTRING_VERBS:
                if verb in word:
                    return _VERB_LAYER[verb], 0.5, f"name contains '{verb}'"
        return None
    chosen = verbs[0]
    confidence = 0.9
    if chosen in _WEAK_VERBS and len(verbs) > 1:
        chosen = verbs[1]
        confidence = 0.8
    layer = _VERB_LAYER[chosen]
    reason = f"name word '{chosen}'"
    if layer < Layer.L5:
        marker = next((v for v in verbs if v in _EXTERNAL_MARKERS), None)
        if marker is not None and layer in (Layer.L2, Layer.L3):
            return Layer.L5, 0.8, f"{reason} with external marker '{marker}'"
    return layer, confidence, reason


def _is_url(value: object) -> bool:
    return isinstance(value, str) and value[:8].lower().startswith(("http://", "https://"))


def _has_url_argument(params: Mapping[str, Any] | None) -> str | None:
    """The name of a URL-like parameter: by key, by ``format: uri``, or by a URL value."""
    if not params:
        return None
    props = params.get("properties") if params.get("type") == "object" else None
    items = props.items() if isinstance(props, Mapping) else params.items()
    for key, value in items:
        lowered = str(key).lower()
        if lowered in _URL_KEYS or lowered.endswith(("_url", "_uri", "url", "uri")):
            return str(key)
        if isinstance(value, Mapping) and value.get("format") in ("uri", "url", "iri"):
            return str(key)
        if isinstance(value, str) and value.lower() in ("url", "uri", "url?", "uri?"):
            return str(key)
        if _is_url(value):
            return str(key)
    return None


def _annotation(annotations: Mapping[str, Any] | object | None, name: str) -> object:
    if annotations is None:
        return None
    if isinstance(annotations, Mapping):
        return annotations.get(name)
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return getattr(annotations, name, getattr(annotations, snake, None))


def classify(
    tool: str,
    params: Mapping[str, Any] | None = None,
    annotations: Mapping[str, Any] | object | None = None,
    layer: Layer | int | str | None = None,
    *,
    rules: Iterable[Rule] = (),
    default: Layer = DEFAULT_LAYER,
) -> Classification:
    """Classify one tool (no caching; see :class:`Classifier` for the hot path).

    Args:
        tool: the tool name.
        params: the tool's parameters (a JSON Schema object, a params mapping) or a call's
            arguments; a URL-like parameter or value means an external call.
        annotations: MCP tool annotations (a mapping or an object with the hint attributes).
        layer: an explicit layer on the tool; wins over everything.
        rules: user rules, tried in order ahead of the built-ins.
        default: the layer when nothing else decides.

    Returns:
        The :class:`Classification`.

    Raises:
        MeterConfigError: ``layer`` or a rule is invalid.
    """
    return _classify(tool, params, annotations, layer, [r.compile() for r in rules], default)


def _classify(
    tool: str,
    params: Mapping[str, Any] | None,
    annotations: Mapping[str, Any] | object | None,
    layer: Layer | int | str | None,
    rules: list[_CompiledRule],
    default: Layer,
) -> Classification:
    if layer is not None:
        try:
            return Classification(layer=parse_layer(layer), confidence=1.0, reason="explicit")
        except ValueError as exc:
            raise MeterConfigError(f"tool {tool!r}: {exc}") from exc
    for rule in rules:
        if rule.match(tool):
            return Classification(layer=rule.layer, confidence=0.95, reason=f"rule {rule.label}")
    url_param = _has_url_argument(params)
    open_world = _annotation(annotations, "openWorldHint") is True
    named = _by_name(tool)
    if named is not None:
        found, confidence, reason = named
        if found in (Layer.L2, Layer.L3):
            if url_param is not None:
                return Classification(
                    layer=Layer.L5,
                    confidence=0.8,
                    reason=f"{reason} with URL argument '{url_param}'",
                )
            if open_world:
                return Classification(
                    layer=Layer.L5, confidence=0.7, reason=f"{reason} with openWorldHint"
                )
        return Classification(layer=found, confidence=confidence, reason=reason)
    if url_param is not None:
        return Classification(layer=Layer.L5, confidence=0.7, reason=f"URL argument '{url_param}'")
    if open_world:
        return Classification(layer=Layer.L5, confidence=0.5, reason="openWorldHint")
    if _annotation(annotations, "readOnlyHint") is True and (
        _annotation(annotations, "openWorldHint") is False
    ):
        return Classification(layer=Layer.L2, confidence=0.5, reason="read-only, closed world")
    return Classification(layer=default, confidence=0.2, reason="default")


class Classifier:
    """Classifies tools with user rules and caches the answer per tool name.

    Args:
        rules: user rules, first match wins, all ahead of the built-in name words.
        default: the layer when nothing else decides (L4).
        max_cached: bound on the number of cached tool names.

    Raises:
        MeterConfigError: a rule or the default is invalid.
    """

    def __init__(
        self,
        *,
        rules: Iterable[Rule] = (),
        default: Layer | int | str = DEFAULT_LAYER,
        max_cached: int = MAX_CACHED_TOOLS,
    ) -> None:
        try:
            self._default = parse_layer(default)
        except ValueError as exc:
            raise MeterConfigError(f"default: {exc}") from exc
        if max_cached <= 0:
            raise MeterConfigError("max_cached must be positive")
        self._rules = [r.compile() for r in rules]
        self._max = max_cached
        self._cache: dict[str, Classification] = {}

    def add_rule(
        self,
        pattern: str | re.Pattern[str] | Callable[[str], bool],
        layer: Layer | int | str,
        *,
        name: str | None = None,
    ) -> None:
        """Append a user rule (after earlier user rules, ahead of the built-ins); clears the
        cache.

        Raises:
            MeterConfigError: the pattern or the layer is invalid.
        """
        self._rules.append(Rule(pattern, layer, name).compile())
        self._cache.clear()

    def classify(
        self,
        tool: str,
        params: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | object | None = None,
        layer: Layer | int | str | None = None,
    ) -> Classification:
        """Classify ``tool``; the first answer for a name is cached and returned afterwards.
        An explicit ``layer`` answers at once and is not cached (it belongs to one tool
        definition, not to every tool of that name).

        Raises:
            MeterConfigError: ``layer`` is invalid.
        """
        if layer is not None:
            return _classify(tool, None, None, layer, self._rules, self._default)
        cached = self._cache.get(tool)
        if cached is not None:
            return cached
        result = _classify(tool, params, annotations, layer, self._rules, self._default)
        if len(self._cache) >= self._max:
            self._cache.clear()  # a pathological number of names: start over, stay bounded
        self._cache[tool] = result
        return result

    def layer_of(self, tool: str) -> Layer:
        """The layer of ``tool`` (cached): the hot-path form of :meth:`classify`."""
        cached = self._cache.get(tool)
        if cached is not None:
            return cached.layer
        return self.classify(tool).layer

    def forget(self, tool: str | None = None) -> None:
        """Drop the cached answer for ``tool``, or for every tool."""
        if tool is None:
            self._cache.clear()
        else:
            self._cache.pop(tool, None)

"""Text checks of the gate that must work in Korean as well as in English.

Korean writes no boundary between a noun and its particle (``최고의``, ``이 도구를``) and often
none inside compounds (``업계최고의``), so whole-word matching misses it. A phrase containing
Hangul is therefore matched anywhere inside a word on its left, with any spacing between its
words, and on its right either at a word end or before a particle, copula or ``하다`` ending
(``반드시 이 도구`` matches ``반드시 이 도구를``, ``반드시이도구만``); Latin phrases keep
whole-word matching. Lengths count a Hangul syllable or CJK character as three letters, roughly
the information it carries.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = [
    "NONE_MARKERS",
    "PARTICLE_STARTS",
    "compile_phrases",
    "find_placeholder",
    "has_hangul",
    "is_explicit_none",
    "near_duplicate_pairs",
    "text_weight",
    "tool_references",
]

_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3]")
_WIDE = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7a3\u3040-\u30ff\u4e00-\u9fff]")

PARTICLE_STARTS: tuple[str, ...] = (
    # particles (조사)
    "은", "는", "이", "가", "을", "를", "의", "에", "로", "으로", "와", "과", "도", "만", "까지",
    "부터", "보다", "처럼", "께", "한테", "랑", "이랑",
    # copula and endings of 하다 / 되다
    "이다", "입니다", "이에요", "예요", "다", "임", "요", "하", "해", "할", "합", "했", "한",
    "되", "돼", "된", "될", "됩", "시", "세", "십",
)  # fmt: skip
"""What may follow a Hangul phrase directly and still count as the phrase (its first syllables)."""

NONE_MARKERS: tuple[str, ...] = ("없음", "해당 없음", "해당없음", "none", "n/a")
"""Explicit "no similar tool" answers in ``when_not_to_use`` (see :func:`is_explicit_none`)."""

_NONE = re.compile(
    r"(?:^\s*|(?:similar tools?|유사\s*(?:도구|툴|tool)s?)\s*[:：]?\s*)(?:"
    + "|".join(re.escape(m) for m in NONE_MARKERS)
    + r")(?=$|[\s.,;:()\-—–!])",
    re.IGNORECASE,
)
_REF = re.compile(
    r"`([a-z][a-z0-9_]{2,63})`"  # any name in backticks
    r"|(?<![A-Za-z0-9_./])([a-z][a-z0-9]*(?:_[a-z0-9]+)+)(?![A-Za-z0-9_/])"  # snake_case words
)
_PUNCT_OR_SPACE = re.compile(r"[\W_]+", re.UNICODE)
_ALNUM = re.compile(r"[^\W_]")
_INSTRUCTION = r"(?:을|를|은|는|이|가)?\s*(?:입력|작성|기재|추가|적어|채워|넣어)"


def has_hangul(text: str) -> bool:
    """Does ``text`` contain a Hangul letter?"""
    return _HANGUL.search(text) is not None


def _phrase_regex(phrase: str) -> str:
    words = [re.escape(w) for w in phrase.split()]
    if not has_hangul(phrase):
        body = r"\s+".join(words)
        left = r"(?<![\w#])" if re.match(r"\w", phrase) else ""
        return rf"{left}{body}(?!\w)"
    body = r"\s*".join(words)
    left = r"(?<![A-Za-z0-9_])" if re.match(r"[A-Za-z0-9_]", phrase) else ""
    if _HANGUL.match(phrase[-1]):
        suffix = "|".join(re.escape(p) for p in PARTICLE_STARTS)
        right = rf"(?=$|[^\w]|{suffix})"
    else:
        right = r"(?!\w)"
    return f"{left}{body}{right}"


@lru_cache(maxsize=64)
def _compiled(phrases: tuple[str, ...]) -> re.Pattern[str] | None:
    cleaned = sorted({" ".join(p.split()) for p in phrases if p.strip()}, key=len, reverse=True)
    if not cleaned:
        return None
    # Latin phrases share one pair of word boundaries (one check per position, then literals);
    # Korean ones each carry their own right-hand rule
    latin = [p for p in cleaned if not has_hangul(p)]
    korean = [p for p in cleaned if has_hangul(p)]
    branches = []
    if latin:
        words = "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in latin)
        branches.append(rf"(?<![\w#])(?:{words})(?!\w)")
    branches += [f"(?:{_phrase_regex(p)})" for p in korean]
    return re.compile("|".join(branches), re.IGNORECASE)


def compile_phrases(phrases: Iterable[str]) -> re.Pattern[str] | None:
    """One case-insensitive regex matching any of ``phrases`` (Korean-aware, see the module).

    Args:
        phrases: the banned phrases (blank ones are ignored).

    Returns:
        The compiled pattern, or ``None`` when there is no phrase.
    """
    return _compiled(tuple(phrases))


def _placeholder_regex(entry: str) -> str:
    if not re.search(r"\w", entry):  # punctuation such as "..." or "…": anywhere
        return re.escape(entry)
    if has_hangul(entry) and " " not in entry.strip():
        word = re.escape(entry.strip())
        # a template form: the whole text, a bracketed slot, or an instruction to fill it in
        return (
            rf"^\W*{word}\W*$|[<\[({{]\s*{word}\s*[>\])}}]|{word}\s*{_INSTRUCTION}"
            rf"|(?:여기에|이곳에)\s*{word}"
        )
    return _phrase_regex(entry)


@lru_cache(maxsize=64)
def _placeholders(entries: tuple[str, ...]) -> tuple[re.Pattern[str] | None, tuple[str, ...]]:
    """One pattern for all markers, each alternative its own group (so the match names it)."""
    kept = tuple(e for e in entries if e.strip())
    if not kept:
        return None, ()
    parts = []
    for entry in kept:
        # an all-capitals Latin entry (TODO, TBD) matches in capitals only: "todo list" is fine
        flag = "" if entry.isupper() and not has_hangul(entry) else "i"
        body = _placeholder_regex(entry)
        parts.append(f"((?{flag}:{body}))" if flag else f"({body})")
    return re.compile("|".join(parts)), kept


@lru_cache(maxsize=4096)
def _first_placeholder(text: str, entries: tuple[str, ...]) -> str | None:
    pattern, kept = _placeholders(entries)
    if pattern is None:
        return None
    found = pattern.search(text)
    if found is None:
        return None
    assert found.lastindex is not None
    return kept[found.lastindex - 1]


def find_placeholder(text: str, placeholders: Sequence[str]) -> str | None:
    """The first placeholder marker found in ``text``, or ``None``.

    All-capitals Latin markers (``TODO``, ``TBD``) match as whole words in capitals only;
    other Latin markers (``lorem``) as whole words in any case; punctuation markers (``...``)
    anywhere; a one-word Hangul marker (``설명``) only in template forms — the whole text, a
    bracketed slot (``<설명>``) or an instruction (``설명을 입력하세요``), so a real sentence
    such as ``환율 변동을 설명합니다`` passes; a Hangul phrase with spaces like any phrase.

    Args:
        text: the text to check.
        placeholders: the markers.

    Returns:
        The marker as configured (the one matching earliest in the text), or ``None``.
    """
    return _first_placeholder(text, tuple(placeholders))


def text_weight(text: str) -> int:
    """The length the gate's minimums compare: letters and digits count one, a Hangul syllable or
    CJK character three; spaces and punctuation count nothing."""
    # a wide character is a letter too: it counts 1 there and 2 more here
    return len(_ALNUM.findall(text)) + 2 * len(_WIDE.findall(text))


def is_explicit_none(text: str) -> bool:
    """Does ``when_not_to_use`` say explicitly that there is no similar tool?

    True when it starts with ``없음``/``해당 없음``/``none``/``n/a``, or says ``Similar tools:
    none`` / ``유사 도구: 없음`` anywhere.
    """
    return _NONE.search(text) is not None


def tool_references(text: str) -> set[str]:
    """Tool names mentioned in ``text``: snake_case identifiers (``fetch_page``) and any name in
    backticks; a one-word tool name counts only in backticks (``ping`` is also an English word)."""
    found: set[str] = set()
    for quoted, bare in _REF.findall(text):
        found.add(quoted or bare)
    return found


def _normalized(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _PUNCT_OR_SPACE.sub("", folded)


def near_duplicate_pairs(texts: Sequence[str], *, ratio: float) -> list[tuple[int, int, float]]:
    """Pairs of texts that say nearly the same thing.

    Texts are compared after case folding and dropping spaces and punctuation (``환율 알려줘``
    equals ``환율알려줘!``), by ``difflib``'s similarity ratio.

    Args:
        texts: the example queries.
        ratio: the similarity from which two texts are near-duplicates (0-1).

    Returns:
        ``(i, j, similarity)`` for each near-duplicate pair, ``i < j``; each ``j`` once.
    """
    norm = [_normalized(t) for t in texts]
    pairs: list[tuple[int, int, float]] = []
    for j in range(1, len(norm)):
        for i in range(j):
            if not norm[i] or not norm[j]:
                continue
            matcher = difflib.SequenceMatcher(None, norm[i], norm[j], autojunk=False)
            # the quick upper bounds rule most pairs out before the full comparison
            if matcher.real_quick_ratio() < ratio or matcher.quick_ratio() < ratio:
                continue
            sim = matcher.ratio()
            if sim >= ratio:
                pairs.append((i, j, sim))
                break
    return pairs

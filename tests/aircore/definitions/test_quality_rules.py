"""The content rules of the standard: one failing fixture per rule, English and Korean, under
the default configuration (the standard's own naming), plus clean ones."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aircore.definitions import GateConfig, Problem, check_files, read_definition_files
from aircore.definitions.naming import infer_hints
from aircore.definitions.wording import compile_phrases, find_placeholder, near_duplicate_pairs
from tests.aircore.definitions.fixtures import clean_definition, write_definition
from tests.aircore.definitions.korean import exchange_history, exchange_inquiry

Mutation = Callable[[dict[str, Any]], None]


def _problems(root: Path) -> list[Problem]:
    from aircore.definitions import load_gate_config

    return check_files(read_definition_files(root), config=load_gate_config(root))


def _write_pair(root: Path, first: dict[str, Any], second: dict[str, Any] | None = None) -> None:
    write_definition(root, first, category=first["category_key"], relaxed=False)
    other = exchange_history() if second is None else second
    write_definition(root, other, category=other["category_key"], relaxed=False)


def _desc(part: str, text: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["description"][part] = text

    return mutate


def _set(key: str, value: Any) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d[key] = value

    return mutate


def _examples(*queries: str) -> Mutation:
    return _set("example_queries", list(queries))


def _prop_description(text: str) -> Mutation:
    def mutate(d: dict[str, Any]) -> None:
        d["parameters_schema"]["properties"]["currency"]["description"] = text

    return mutate


KOREAN_CASES: list[tuple[str, Mutation, str, str]] = [
    # placeholders
    ("TODO in function", _desc("function", "TODO: 이 도구가 하는 일을 적는다"), "placeholder",
     "description.function"),
    ("TBD in io_limits", _desc("io_limits", "입력 제한은 TBD, 결과 크기도 정해지지 않았다"),
     "placeholder", "description.io_limits"),
    ("ellipsis in when_to_use", _desc("when_to_use", "사용자가 환율을 물을 때..."),
     "placeholder", "description.when_to_use"),
    ("lorem in display_description", _set("display_description", "Lorem ipsum dolor sit amet"),
     "placeholder", "display_description"),
    ("설명 template", _desc("function", "<설명>"), "placeholder", "description.function"),
    ("설명을 입력", _set("display_description", "여기에 화면 설명을 입력하세요"), "placeholder",
     "display_description"),
    ("placeholder in a property description", _prop_description("TODO"), "placeholder",
     "parameters_schema.properties.currency.description"),
    ("placeholder example",
     _examples("오늘 달러 환율 알려줘", "TODO", "유로 송금 환율 좀 조회해 줘"),
     "placeholder", "example_queries[1]"),
    # minimum lengths (a Hangul syllable counts three)
    ("one-letter function", _desc("function", "환"), "too-short", "description.function"),
    ("short io_limits", _desc("io_limits", "없다"), "too-short", "description.io_limits"),
    ("short display_description", _set("display_description", "환율"), "too-short",
     "display_description"),
    ("short example", _examples("환율", "지난주 금요일 엔화 매매기준율이 얼마였어?",
                                "유로 송금 환율 좀 조회해 줘"), "too-short", "example_queries[0]"),
    # near-duplicate example queries
    ("three identical examples", _examples(*["오늘 달러 환율 알려줘"] * 3), "near-duplicate",
     "example_queries[1]"),
    ("examples differing in spacing", _examples("오늘 달러 환율 알려줘", "오늘 달러환율 알려줘!",
                                               "유로 송금 환율 좀 조회해 줘"), "near-duplicate",
     "example_queries[1]"),
    # Korean wording with particles and without word boundaries
    ("최고의 with a compound", _desc("function", "업계최고의 정확도로 환율을 조회해 돌려준다."),
     "wording", "description.function"),
    ("반드시 이 도구를", _desc("when_to_use", "환율 질문에는 반드시 이 도구를 먼저 호출하세요."),
     "wording", "description.when_to_use"),
    ("반드시이도구만 without spaces", _desc("when_to_use", "환율은 반드시이도구만 쓰세요 정말로."),
     "wording", "description.when_to_use"),
    ("가장 정확한 in display", _set("display_description", "가장 정확한 환율 조회 서비스"),
     "wording", "display_description"),
    ("다른 도구 대신", _desc("when_to_use", "다른 도구 대신 이것으로 환율을 물어보세요."),
     "wording", "description.when_to_use"),
    # when_not_to_use: names a tool or says none
    ("when_not_to_use naming nothing",
     _desc("when_not_to_use", "기간별 추이가 필요할 때는 쓰지 않는다."),
     "when-not-to-use", "description.when_not_to_use"),
    ("when_not_to_use naming an unknown tool",
     _desc("when_not_to_use", "기간별 추이는 smp_rate_trend를 사용한다. 그 밖에는 없음."),
     "when-not-to-use", "description.when_not_to_use"),
    # names
    ("name not category_service_action", _set("name", "exchange_inquiry"), "name-structure",
     "name"),
    ("name with another category prefix", _set("name", "cmm_exchange_inquiry"), "name-structure",
     "name"),
    ("name of four parts", _set("name", "smp_exchange_rate_inquiry"), "name-structure", "name"),
    ("name that is an interface id", _set("name", "smp_if0012_inquiry"), "interface-id", "name"),
    ("name with an MCI prefix", _set("name", "mci_smp_inquiry"), "interface-id", "name"),
    ("name holding the legacy id", _set("legacy_interface_id", "SMP-EXCHANGE"), "interface-id",
     "name"),
    # the folder
    ("category_key differs from the folder", _set("category_key", "cmm"), "category-folder",
     "category_key"),
]  # fmt: skip


@pytest.mark.parametrize(("mutation", "rule", "field"), [c[1:] for c in KOREAN_CASES],
                         ids=[c[0] for c in KOREAN_CASES])  # fmt: skip
def test_each_content_rule_rejects_its_korean_fixture(
    tmp_path: Path, mutation: Mutation, rule: str, field: str
) -> None:
    data = exchange_inquiry()
    mutation(data)
    write_definition(tmp_path, data, category="smp", stem="smp_exchange_inquiry", relaxed=False)
    write_definition(tmp_path, exchange_history(), category="smp", relaxed=False)

    problems = _problems(tmp_path)

    assert (rule, field) in {(p.rule, p.field) for p in problems}, problems
    mine = [p for p in problems if p.file.endswith("smp_exchange_inquiry.yml")]
    assert (rule, field) in {(p.rule, p.field) for p in mine}


def test_clean_korean_definitions_pass_under_the_default_configuration(tmp_path: Path) -> None:
    _write_pair(tmp_path, exchange_inquiry())
    assert _problems(tmp_path) == []


def test_korean_none_answer_and_real_sentences_pass(tmp_path: Path) -> None:
    data = exchange_inquiry()
    # 없음 is the explicit answer; 설명합니다, 반드시 … 형식, 최고 기온 are real sentences
    data["description"]["when_not_to_use"] = "없음. 이 서버에 비슷한 도구가 없다."
    data["description"]["function"] = "기준일 환율을 조회하고 변동 이유를 짧게 설명합니다."
    data["description"]["io_limits"] = "날짜는 반드시 YYYY-MM-DD 형식이며 결과는 한 건이다."
    data["display_description"] = "환율과 당일 최고 기온처럼 숫자 한 개를 돌려준다."
    write_definition(tmp_path, data, category="smp", relaxed=False)
    assert _problems(tmp_path) == []


def test_similar_tools_must_name_each_other(tmp_path: Path) -> None:
    history = exchange_history()
    history["description"]["when_not_to_use"] = "없음. 하루치 환율 도구와는 겹치지 않는다."
    _write_pair(tmp_path, exchange_inquiry(), history)

    (problem,) = _problems(tmp_path)

    assert (problem.rule, problem.field) == ("similar-tools", "description.when_not_to_use")
    assert problem.file.endswith("smp_exchange_history.yml")
    assert "'smp_exchange_inquiry' names 'smp_exchange_history'" in problem.message


def test_a_tool_of_another_server_is_named_through_known_tools(tmp_path: Path) -> None:
    data = exchange_inquiry()
    data["description"]["when_not_to_use"] = "환전 신청은 fx_order_submit을 사용한다."
    write_definition(tmp_path, data, category="smp", relaxed=False)
    assert {p.rule for p in _problems(tmp_path)} == {"when-not-to-use"}
    (tmp_path / "air-check.yml").write_text("known_tools: [fx_order_submit]\n", encoding="utf-8")
    assert _problems(tmp_path) == []


def test_a_file_at_the_root_is_not_in_its_category_folder(tmp_path: Path) -> None:
    write_definition(tmp_path, exchange_inquiry(), category=".", relaxed=False)
    write_definition(tmp_path, exchange_history(), category="smp", relaxed=False)
    (problem,) = _problems(tmp_path)
    assert problem.rule == "category-folder"
    assert "the definitions root" in problem.message


def test_category_prefixes_map_a_category_to_its_name_prefix(tmp_path: Path) -> None:
    data, history = exchange_inquiry(), exchange_history()
    for d in (data, history):
        d["category_key"] = "exchange"
    _write_pair(tmp_path, data, history)
    assert {p.rule for p in _problems(tmp_path)} == {"name-structure"}
    (tmp_path / "air-check.yml").write_text(
        "category_prefixes: {exchange: smp}\n", encoding="utf-8"
    )
    assert _problems(tmp_path) == []


def test_action_object_naming_and_exceptions_come_from_air_check_yml(tmp_path: Path) -> None:
    write_definition(tmp_path, clean_definition("search_documents"), relaxed=False)
    odd = clean_definition("slow_documents")
    odd["description"]["when_not_to_use"] = "none: nothing else is this slow."
    write_definition(tmp_path, odd, relaxed=False)
    config = tmp_path / "air-check.yml"
    config.write_text("known_tools: [fetch_page]\n", encoding="utf-8")
    default = {(p.file.rsplit("/", 1)[-1], p.rule) for p in _problems(tmp_path)}
    assert default == {
        ("search_documents.yml", "name-structure"),
        ("slow_documents.yml", "name-structure"),
    }
    config.write_text("known_tools: [fetch_page]\nname_structure: action_object\n")
    assert [(p.field, p.rule) for p in _problems(tmp_path)] == [("name", "name-structure")]
    config.write_text(
        "known_tools: [fetch_page]\nname_structure: action_object\n"
        "name_exceptions: [slow_documents]\n"
    )
    assert _problems(tmp_path) == []


def test_english_similar_tools_in_backticks_and_none_phrasings(tmp_path: Path) -> None:
    ping = clean_definition("ping")
    ping["description"]["when_not_to_use"] = "Checking a tool: call it. Similar tools: none."
    search = clean_definition("search_documents")
    search["description"]["when_not_to_use"] = "A liveness check: use `ping`."
    write_definition(tmp_path, ping, relaxed=False)
    write_definition(tmp_path, search, relaxed=False)
    (tmp_path / "air-check.yml").write_text("name_structure: none\n", encoding="utf-8")
    (problem,) = _problems(tmp_path)
    assert problem.rule == "similar-tools"
    assert problem.file.endswith("ping.yml")


def test_min_lengths_and_placeholders_are_configurable(tmp_path: Path) -> None:
    data = exchange_inquiry()
    data["description"]["function"] = "환율을 조회한다 (초안)"
    _write_pair(tmp_path, data)
    assert _problems(tmp_path) == []
    config = tmp_path / "air-check.yml"
    config.write_text("min_lengths: {description.function: 60}\n", encoding="utf-8")
    assert {(p.rule, p.field) for p in _problems(tmp_path)} == {
        ("too-short", "description.function")
    }
    config.write_text("min_lengths: {description.function: 60}\nextra_placeholders: [초안]\n")
    # a placeholder is reported once, as a placeholder, not also as too short
    assert {(p.rule, p.field) for p in _problems(tmp_path)} == {
        ("placeholder", "description.function")
    }


@pytest.mark.parametrize(
    "text",
    ["name_structure: camel\n", "min_lengths: {function: 3}\n", "near_duplicate_ratio: 2\n",
     "category_prefixes: [smp]\n", "known_tools: smp\n"],
)  # fmt: skip
def test_bad_new_config_values_are_typed_errors(tmp_path: Path, text: str) -> None:
    from aircore.definitions import ToolDefinitionError, load_gate_config

    (tmp_path / "air-check.yml").write_text(text, encoding="utf-8")
    with pytest.raises(ToolDefinitionError) as info:
        load_gate_config(tmp_path)
    assert info.value.problems[0].field == text.split(":", 1)[0]
    assert info.value.problems[0].rule == "config"


@pytest.mark.parametrize(
    ("name", "read_only", "destructive", "idempotent"),
    [
        ("smp_exchange_inquiry", True, False, True),
        ("search_notes", True, False, True),
        ("cmm_comcode_lookup", True, False, True),
        ("delete_note", False, True, False),
        ("msg_sms_send", False, True, False),
        ("remove_user", False, True, False),
        ("frobnicate_widget", False, True, False),  # unknown verb: the cautious hints
    ],
)
def test_hints_are_inferred_conservatively_from_the_verb(
    name: str, read_only: bool, destructive: bool, idempotent: bool
) -> None:
    hints = infer_hints(name)
    assert (hints.read_only, hints.destructive, hints.idempotent) == (
        read_only,
        destructive,
        idempotent,
    )


_SAFE_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200
)


@settings(max_examples=200, deadline=None)
@given(text=_SAFE_TEXT)
def test_text_checks_never_fail_on_arbitrary_text(text: str) -> None:
    config = GateConfig()
    pattern = compile_phrases(config.banned_phrases)
    assert pattern is not None
    list(pattern.finditer(text))
    find_placeholder(text, config.placeholders)
    pairs = near_duplicate_pairs([text, text + "!", "다른 질문입니다"], ratio=0.9)
    if any(ch.isalnum() for ch in text):
        assert (0, 1) in {(i, j) for i, j, _ in pairs}


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _SAFE_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_SAFE_TEXT, inner, max_size=4),
    max_leaves=12,
)
_FIELDS = sorted(set(exchange_inquiry()) | {"register", "enabled", "timeout_ms", "layer"})


@settings(max_examples=150, deadline=None)
@given(changes=st.dictionaries(st.sampled_from(_FIELDS), _JSON, max_size=4),
       parts=st.dictionaries(st.sampled_from(["function", "when_to_use", "when_not_to_use",
                                              "io_limits"]), _JSON, max_size=2))  # fmt: skip
def test_any_value_in_any_field_is_a_problem_never_a_crash(
    changes: dict[str, Any], parts: dict[str, Any]
) -> None:
    from aircore.definitions import DefinitionFile, check_file

    data = exchange_inquiry()
    data["description"].update(parts)
    data.update(changes)
    file = DefinitionFile(path=Path("smp/smp_exchange_inquiry.yml"), data=data, folder="smp")
    problems = check_file(file, config=GateConfig())
    assert all(isinstance(p, Problem) for p in problems)
    if changes or parts:
        return
    assert problems == []


@settings(max_examples=200, deadline=None)
@given(spec=_SAFE_TEXT)
def test_any_field_spec_parses_or_is_a_value_error(spec: str) -> None:
    from aircli._scaffold_inputs import parse_field

    try:
        field = parse_field(spec)
    except ValueError:
        return
    assert field.schema()["description"] == field.description

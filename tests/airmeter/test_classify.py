"""Classification of real tool names from public MCP servers."""

from __future__ import annotations

import re
from typing import Any

import pytest

from airmeter import Classification, Classifier, Layer, Rule, classify, split_words
from airmeter.errors import MeterConfigError

OPEN = {"openWorldHint": True}
URL = {"type": "object", "properties": {"url": {"type": "string"}}}

# (server, tool, params, annotations, expected layer). Servers: modelcontextprotocol/servers
# (filesystem, github, slack, puppeteer, brave-search, memory, sqlite, fetch, git, everything,
# time, sequentialthinking, google-maps, everart, aws-kb-retrieval, sentry, postgres, redis,
# gdrive) and well-known third-party ones (playwright, firecrawl, tavily, exa, perplexity,
# context7). The GitHub / Maps / AWS / Tavily tools talk to a remote API, which their
# annotations say with openWorldHint.
TABLE: list[tuple[str, str, dict[str, Any] | None, dict[str, Any] | None, Layer]] = [
    ("filesystem", "read_file", None, None, Layer.L2),
    ("filesystem", "read_text_file", None, None, Layer.L2),
    ("filesystem", "read_media_file", None, None, Layer.L2),
    ("filesystem", "read_multiple_files", None, None, Layer.L2),
    ("filesystem", "write_file", None, None, Layer.L2),
    ("filesystem", "edit_file", None, None, Layer.L2),
    ("filesystem", "create_directory", None, None, Layer.L2),
    ("filesystem", "list_directory", None, None, Layer.L2),
    ("filesystem", "list_directory_with_sizes", None, None, Layer.L2),
    ("filesystem", "directory_tree", None, None, Layer.L2),
    ("filesystem", "move_file", None, None, Layer.L2),
    ("filesystem", "search_files", None, None, Layer.L2),
    ("filesystem", "get_file_info", None, None, Layer.L2),
    ("filesystem", "list_allowed_directories", None, None, Layer.L2),
    ("github", "create_or_update_file", None, OPEN, Layer.L5),
    ("github", "search_repositories", None, OPEN, Layer.L5),
    ("github", "create_repository", None, OPEN, Layer.L5),
    ("github", "get_file_contents", None, OPEN, Layer.L5),
    ("github", "push_files", None, None, Layer.L5),
    ("github", "create_issue", None, OPEN, Layer.L5),
    ("github", "create_pull_request", None, OPEN, Layer.L5),
    ("github", "fork_repository", None, OPEN, Layer.L5),
    ("github", "list_commits", None, OPEN, Layer.L5),
    ("github", "merge_pull_request", None, OPEN, Layer.L5),
    ("slack", "slack_list_channels", None, None, Layer.L5),
    ("slack", "slack_post_message", None, None, Layer.L5),
    ("slack", "slack_reply_to_thread", None, None, Layer.L5),
    ("slack", "slack_add_reaction", None, None, Layer.L5),
    ("slack", "slack_get_channel_history", None, None, Layer.L5),
    ("slack", "slack_get_users", None, None, Layer.L5),
    ("puppeteer", "puppeteer_navigate", None, None, Layer.L5),
    ("puppeteer", "puppeteer_screenshot", None, None, Layer.L3),
    ("puppeteer", "puppeteer_click", None, None, Layer.L5),
    ("puppeteer", "puppeteer_fill", None, None, Layer.L5),
    ("puppeteer", "puppeteer_hover", None, None, Layer.L5),
    ("puppeteer", "puppeteer_evaluate", None, None, Layer.L4),
    ("brave-search", "brave_web_search", None, None, Layer.L5),
    ("brave-search", "brave_local_search", None, OPEN, Layer.L5),
    ("memory", "create_entities", None, None, Layer.L2),
    ("memory", "create_relations", None, None, Layer.L2),
    ("memory", "add_observations", None, None, Layer.L2),
    ("memory", "delete_entities", None, None, Layer.L2),
    ("memory", "delete_observations", None, None, Layer.L2),
    ("memory", "read_graph", None, None, Layer.L2),
    ("memory", "search_nodes", None, None, Layer.L2),
    ("memory", "open_nodes", None, None, Layer.L2),
    ("sqlite", "read_query", None, None, Layer.L2),
    ("sqlite", "write_query", None, None, Layer.L2),
    ("sqlite", "create_table", None, None, Layer.L2),
    ("sqlite", "list_tables", None, None, Layer.L2),
    ("sqlite", "describe_table", None, None, Layer.L2),
    ("sqlite", "append_insight", None, None, Layer.L2),
    ("fetch", "fetch", URL, None, Layer.L5),
    ("git", "git_status", None, None, Layer.L2),
    ("git", "git_diff_unstaged", None, None, Layer.L3),
    ("git", "git_diff", None, None, Layer.L3),
    ("git", "git_commit", None, None, Layer.L2),
    ("git", "git_add", None, None, Layer.L2),
    ("git", "git_reset", None, None, Layer.L2),
    ("git", "git_log", None, None, Layer.L2),
    ("git", "git_create_branch", None, None, Layer.L2),
    ("git", "git_checkout", None, None, Layer.L2),
    ("git", "git_show", None, None, Layer.L2),
    ("git", "git_init", None, None, Layer.L2),
    ("everything", "echo", None, None, Layer.L1),
    ("everything", "add", None, None, Layer.L2),
    ("everything", "longRunningOperation", None, None, Layer.L4),
    ("everything", "printEnv", None, None, Layer.L2),
    ("everything", "sampleLLM", None, None, Layer.L6),
    ("everything", "getTinyImage", None, None, Layer.L2),
    ("everything", "getResourceReference", None, None, Layer.L2),
    ("time", "get_current_time", None, None, Layer.L2),
    ("time", "convert_time", None, None, Layer.L3),
    ("sequentialthinking", "sequentialthinking", None, None, Layer.L7),
    ("google-maps", "maps_geocode", None, None, Layer.L5),
    ("google-maps", "maps_reverse_geocode", None, None, Layer.L5),
    ("google-maps", "maps_search_places", None, OPEN, Layer.L5),
    ("google-maps", "maps_directions", None, OPEN, Layer.L5),
    ("everart", "generate_image", None, None, Layer.L6),
    ("aws-kb-retrieval", "retrieve_from_aws_kb", None, OPEN, Layer.L5),
    ("sentry", "get_sentry_issue", None, None, Layer.L2),
    ("postgres", "query", None, None, Layer.L2),
    ("redis", "set", None, None, Layer.L2),
    ("redis", "get", None, None, Layer.L2),
    ("gdrive", "gdrive_search", None, OPEN, Layer.L5),
    ("playwright", "browser_navigate", None, None, Layer.L5),
    ("playwright", "browser_snapshot", None, None, Layer.L5),
    ("playwright", "browser_take_screenshot", None, None, Layer.L5),
    ("firecrawl", "firecrawl_scrape", URL, None, Layer.L5),
    ("firecrawl", "firecrawl_map", URL, None, Layer.L5),
    ("firecrawl", "firecrawl_crawl", URL, None, Layer.L5),
    ("tavily", "tavily-search", None, OPEN, Layer.L5),
    ("tavily", "tavily-extract", {"urls": ["https://example.com"]}, None, Layer.L5),
    ("exa", "web_search_exa", None, None, Layer.L5),
    ("perplexity", "perplexity_ask", None, None, Layer.L6),
    ("context7", "resolve-library-id", None, None, Layer.L2),
    ("context7", "get-library-docs", None, None, Layer.L2),
    ("examples", "summarize-text", None, None, Layer.L4),
    ("examples", "fetchUrl", None, None, Layer.L5),
    ("examples", "get_user", None, None, Layer.L2),
    ("examples", "run_agent", None, None, Layer.L7),
    ("examples", "health", None, None, Layer.L1),
    ("examples", "chat.completions.create", None, None, Layer.L6),
    ("examples", "embed_documents", None, None, Layer.L6),
    ("examples", "plan_trip", None, None, Layer.L7),
    ("examples", "translate_text", None, None, Layer.L3),
    ("examples", "calculate_statistics", None, None, Layer.L4),
]


def test_table_is_large_and_covers_every_layer() -> None:
    assert len(TABLE) >= 60
    assert {row[-1] for row in TABLE} == set(Layer)


@pytest.mark.parametrize(
    ("server", "tool", "params", "annotations", "expected"),
    TABLE,
    ids=[f"{row[0]}:{row[1]}" for row in TABLE],
)
def test_real_tool_names_classify_to_their_layer(
    server: str,
    tool: str,
    params: dict[str, Any] | None,
    annotations: dict[str, Any] | None,
    expected: Layer,
) -> None:
    result = classify(tool, params, annotations)
    assert result.layer is expected, (server, tool, result)
    assert 0 < result.confidence <= 1
    assert result.reason


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("get_user", ["get", "user"]),
        ("fetchUrl", ["fetch", "url"]),
        ("summarize-text", ["summarize", "text"]),
        ("a.b.c", ["a", "b", "c"]),
        ("getHTTPResponse", ["get", "http", "response"]),
        ("sampleLLM", ["sample", "llm"]),
        ("v2_list", ["v", "2", "list"]),
    ],
)
def test_names_split_into_words(name: str, words: list[str]) -> None:
    assert split_words(name) == words


def test_explicit_layer_wins_over_everything() -> None:
    result = classify("fetch_url", {"url": "https://x"}, OPEN, layer="L1")
    assert result == Classification(layer=Layer.L1, confidence=1.0, reason="explicit")


def test_user_rules_run_first_and_first_match_wins() -> None:
    rules = [Rule(r"^db_", 2, name="database"), Rule(r"_query$", 6), Rule(r"db", 7)]
    assert classify("db_generate_query", rules=rules).layer is Layer.L2
    assert classify("db_generate_query", rules=rules).reason == "rule database"
    assert classify("llm_query", rules=rules).layer is Layer.L6
    assert classify("mydb", rules=rules).layer is Layer.L7
    assert classify("echo", rules=rules).layer is Layer.L1


def test_rule_may_be_a_predicate_or_compiled_pattern() -> None:
    rules = [Rule(lambda t: t.startswith("x"), "L3"), Rule(re.compile("Y$"), 6)]
    assert classify("xanything", rules=rules).layer is Layer.L3
    assert classify("fooY", rules=rules).layer is Layer.L6


def test_url_argument_means_external_api() -> None:
    assert classify("thing", {"target": "https://example.com/a"}).layer is Layer.L5
    assert classify("thing", {"type": "object", "properties": {"page_url": {}}}).layer is Layer.L5
    assert classify("thing", {"link": "string"}).layer is Layer.L5
    assert classify("thing", {"p": {"type": "string", "format": "uri"}}).layer is Layer.L5
    assert classify("thing", {"path": "/tmp/x"}).layer is Layer.L4


def test_annotations_are_a_hint_when_the_name_says_nothing() -> None:
    assert classify("thing", annotations={"readOnlyHint": True, "openWorldHint": False}).layer == 2
    assert classify("thing", annotations={"openWorldHint": True}).layer is Layer.L5
    assert classify("thing", annotations={"readOnlyHint": True}).layer is Layer.L4

    class Ann:
        read_only_hint = True
        open_world_hint = False

    assert classify("thing", annotations=Ann()).layer is Layer.L2


def test_unknown_names_fall_back_to_compute() -> None:
    result = classify("frobnicate")
    assert result.layer is Layer.L4
    assert result.reason == "default"
    assert classify("frobnicate", default=Layer.L3).layer is Layer.L3


def test_invalid_layers_and_rules_are_config_errors() -> None:
    with pytest.raises(MeterConfigError):
        classify("x", layer=9)
    with pytest.raises(MeterConfigError):
        Classifier(rules=[Rule("(", 2)])
    with pytest.raises(MeterConfigError):
        Classifier(rules=[Rule("x", "L8")])
    with pytest.raises(MeterConfigError):
        Classifier(default=0)


def test_classifier_caches_per_tool_and_rules_reset_the_cache() -> None:
    calls: list[str] = []

    def spy(tool: str) -> bool:
        calls.append(tool)
        return tool == "special"

    classifier = Classifier(rules=[Rule(spy, 7)])
    assert classifier.layer_of("get_user") is Layer.L2
    assert classifier.layer_of("get_user") is Layer.L2
    assert classifier.classify("special").layer is Layer.L7
    assert classifier.classify("special").layer is Layer.L7
    assert calls == ["get_user", "special"]
    classifier.add_rule("^get_", 1)
    assert classifier.layer_of("get_user") is Layer.L1
    classifier.forget("get_user")
    classifier.forget()


def test_an_explicit_layer_is_not_cached_for_other_tools_of_that_name() -> None:
    classifier = Classifier()
    assert classifier.classify("get_user", layer=7).layer is Layer.L7
    assert classifier.classify("get_user").layer is Layer.L2
    assert classifier.layer_of("get_user") is Layer.L2
    assert classifier.classify("get_user", layer="L5").reason == "explicit"


def test_classifier_cache_stays_bounded() -> None:
    classifier = Classifier(max_cached=4)
    for i in range(10):
        classifier.layer_of(f"tool_{i}")
    assert len(classifier._cache) <= 4

"""The fixtures the official MCP conformance suite asks a server for, on aircore.

``make conformance`` serves this over HTTP and runs ``@modelcontextprotocol/conformance``
against it (the 2025-11-25 suite and the 2026-07-28 requirement set); the baseline files list
the scenarios we do not pass, with reasons. Everything here is plain aircore: the tools only
exercise what every aircore server does (multi round-trip input, tasks, custom headers).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aircore import (
    InputRequest,
    RequestContext,
    ToolContext,
    define_prompt,
    define_resource,
    define_server,
    define_tool,
)

# 1x1 red PNG and a tiny silent WAV
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
    "rkJggg=="
)
WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


def _content(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"content": list(blocks)}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


async def with_logging(_p: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.log("info", "Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.log("info", "Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"


async def with_progress(_p: dict[str, Any], ctx: ToolContext) -> str:
    for done in (0, 50, 100):
        await ctx.report_progress(done, 100)
        if done < 100:
            await asyncio.sleep(0.05)
    return "Tool with progress executed successfully"


def error_handling(_p: dict[str, Any]) -> str:
    raise RuntimeError("This tool intentionally returns an error for testing")


async def sampling(p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.sample(p["prompt"], max_tokens=100)
    content = answer.get("content") or {}
    text = content.get("text") if isinstance(content, dict) else json.dumps(content)
    return f"LLM response: {text}"


async def elicitation(p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit(
        p["message"],
        {
            "type": "object",
            "properties": {
                "username": {"type": "string", "description": "User's response"},
                "email": {"type": "string", "description": "User's email address"},
            },
            "required": ["username", "email"],
        },
    )
    return f"User response: action={answer.action}, content={json.dumps(answer.content)}"


async def elicitation_defaults(_p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit(
        "Please review and update the form fields with defaults",
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active",
                },
                "verified": {"type": "boolean", "description": "Verified", "default": True},
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


async def elicitation_enums(_p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit(
        "Please select options",
        {
            "type": "object",
            "properties": {
                "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                "titledSingle": {
                    "type": "string",
                    "oneOf": [
                        {"const": "value1", "title": "First Option"},
                        {"const": "value2", "title": "Second Option"},
                        {"const": "value3", "title": "Third Option"},
                    ],
                },
                "legacyEnum": {
                    "type": "string",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"],
                },
                "untitledMulti": {
                    "type": "array",
                    "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
                },
                "titledMulti": {
                    "type": "array",
                    "items": {
                        "anyOf": [
                            {"const": "value1", "title": "First Choice"},
                            {"const": "value2", "title": "Second Choice"},
                            {"const": "value3", "title": "Third Choice"},
                        ]
                    },
                },
            },
            "required": [],
        },
    )
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


SCHEMA_2020 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

# ---- 2026-07-28: diagnostic tools of server-stateless --------------------------------------


async def missing_capability(_p: dict[str, Any], ctx: ToolContext) -> str:
    # needs sampling: a client that did not declare it gets -32021 (HTTP 400)
    answer = await ctx.sample("Say hello", max_tokens=10)
    return f"sampled: {answer.get('content')}"


async def streaming_elicitation(_p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit("Continue?", {"ok": {"type": "boolean", "required": True}})
    return f"action={answer.action}"


async def logging_tool(_p: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.log("info", "logged only when the request asked for a log level")
    return "logged"


# ---- 2026-07-28: multi round-trip requests (input_required) --------------------------------

NAME_FORM = {"name": {"type": "string", "required": True}}


async def ask_name(_p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    return f"Hello, {(answer.content or {}).get('name', 'stranger')}!"


async def ask_capital(_p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.sample(
        "What is the capital of France?", max_tokens=100, key="capital_question"
    )
    return f"The model says: {(answer.get('content') or {}).get('text')}"


async def ask_roots(_p: dict[str, Any], ctx: ToolContext) -> str:
    roots = await ctx.list_roots(key="client_roots")
    return "Roots: " + ", ".join(r["uri"] for r in roots)


async def ask_confirmation(_p: dict[str, Any], ctx: ToolContext) -> str:
    # reaching the handler again means the echoed requestState passed its integrity check
    answer = await ctx.elicit(
        "Please confirm", {"ok": {"type": "boolean", "required": True}}, key="confirm"
    )
    return f"state-ok: confirmed={(answer.content or {}).get('ok')}"


async def ask_everything(_p: dict[str, Any], ctx: ToolContext) -> str:
    answers = await ctx.ask({
        "user_name": InputRequest.elicitation("What is your name?", NAME_FORM),
        "greeting": InputRequest.sampling("Generate a greeting", max_tokens=50),
        "client_roots": InputRequest.roots(),
    })  # fmt: skip
    return f"Got {', '.join(sorted(answers))}"


async def ask_in_rounds(_p: dict[str, Any], ctx: ToolContext) -> str:
    first = await ctx.elicit("Step 1: What is your name?", NAME_FORM, key="step1")
    second = await ctx.elicit(
        "Step 2: What is your favorite color?",
        {"color": {"type": "string", "required": True}},
        key="step2",
    )
    name = (first.content or {}).get("name")
    return f"{name} likes {(second.content or {}).get('color')}"


async def ask_what_is_supported(_p: dict[str, Any], ctx: ToolContext) -> str:
    caps = ctx.client_capabilities or {}
    wanted: dict[str, InputRequest] = {}
    if "elicitation" in caps:
        wanted["user_name"] = InputRequest.elicitation("What is your name?", NAME_FORM)
    if "sampling" in caps:
        wanted["greeting"] = InputRequest.sampling("Generate a greeting", max_tokens=50)
    answers = await ctx.ask(wanted) if wanted else {}
    return f"Asked for {', '.join(sorted(answers)) or 'nothing'}"


async def prompt_with_context(_a: dict[str, Any], ctx: RequestContext) -> str:
    answer = await ctx.elicit(
        "What context should the prompt use?",
        {"context": {"type": "string", "required": True}},
        key="user_context",
    )
    return f"Use this context: {(answer.content or {}).get('context')}"


# ---- 2026-07-28: the tasks extension -------------------------------------------------------


async def slow_compute(p: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.start_task(status_message="Computing")
    await asyncio.sleep(p["seconds"])
    return f"Computed {p.get('label', 'result')} after {p['seconds']}s"


async def failing_job(_p: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.start_task(required=True)
    await asyncio.sleep(1)
    raise RuntimeError("the job failed (a tool error: the task completes with isError)")


async def protocol_error_job(_p: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.start_task(required=True)
    # needs the client's roots: without the roots capability the task fails with -32021
    roots = await ctx.list_roots()
    return f"{len(roots)} roots"


async def confirm_delete(p: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.start_task()
    answer = await ctx.elicit(
        f"Delete {p['filename']}?", {"confirm": {"type": "boolean", "required": True}}
    )
    confirmed = answer.action == "accept" and (answer.content or {}).get("confirm")
    return f"{'Deleted' if confirmed else 'Kept'} {p['filename']}"


async def multi_input(_p: dict[str, Any], ctx: ToolContext) -> str:
    await ctx.start_task()
    name, confirm = await asyncio.gather(
        ctx.elicit("Your name?", NAME_FORM),
        ctx.elicit("Proceed?", {"confirm": {"type": "boolean", "required": True}}),
    )
    return f"{(name.content or {}).get('name')}: {(confirm.content or {}).get('confirm')}"


async def tool_with_task(_p: dict[str, Any], ctx: ToolContext) -> str:
    answer = await ctx.elicit("What is your name?", NAME_FORM, key="user_name")
    await ctx.start_task(required=True)  # input first (input_required rounds), then a task
    await asyncio.sleep(0.1)
    return f"Hello, {(answer.content or {}).get('name')}!"


TASK_TOOLS = [
    define_tool("greet", description="Greets (always answers at once)",
                params={"name": "string"}, handler=lambda p: f"Hello, {p['name']}!"),
    define_tool("slow_compute", description="Sleeps, as a task when the client can",
                params={"seconds": {"type": "number", "minimum": 0, "maximum": 600},
                        "label": {"type": "string", "optional": True}},
                handler=slow_compute),
    define_tool("failing_job", description="A task that ends in a tool error",
                handler=failing_job),
    define_tool("protocol_error_job", description="A task that ends in a protocol error",
                handler=protocol_error_job),
    define_tool("confirm_delete", description="A task that asks for confirmation",
                params={"filename": "string"}, handler=confirm_delete),
    define_tool("multi_input", description="A task that asks two things at once",
                handler=multi_input),
    define_tool("test_tool_with_task", description="Asks a name, then continues as a task",
                handler=tool_with_task),
]  # fmt: skip

TOOLS = [
    define_tool("test_simple_text", description="Returns simple text",
                handler=lambda _p: "This is a simple text response for testing."),
    define_tool("test_image_content", description="Returns an image",
                handler=lambda _p: {"image": PNG, "mimeType": "image/png"}),
    define_tool("test_audio_content", description="Returns audio",
                handler=lambda _p: _content({"type": "audio", "data": WAV,
                                             "mimeType": "audio/wav"})),
    define_tool("test_embedded_resource", description="Returns an embedded resource",
                handler=lambda _p: _content({"type": "resource", "resource": {
                    "uri": "test://embedded-resource", "mimeType": "text/plain",
                    "text": "This is an embedded resource content."}})),
    define_tool("test_multiple_content_types", description="Returns text, image and resource",
                handler=lambda _p: _content(
                    _text("Multiple content types test:"),
                    {"type": "image", "data": PNG, "mimeType": "image/png"},
                    {"type": "resource", "resource": {
                        "uri": "test://mixed-content-resource", "mimeType": "application/json",
                        "text": json.dumps({"test": "data", "value": 123})}})),
    define_tool("test_tool_with_logging", description="Logs while running",
                handler=with_logging),
    define_tool("test_tool_with_progress", description="Reports progress",
                handler=with_progress),
    define_tool("test_error_handling", description="Always fails", handler=error_handling),
    define_tool("test_sampling", description="Asks the client's model",
                params={"prompt": {"type": "string", "description": "The prompt"}},
                handler=sampling),
    define_tool("test_elicitation", description="Asks the user",
                params={"message": {"type": "string", "description": "The message"}},
                handler=elicitation),
    define_tool("test_elicitation_sep1034_defaults", description="Elicitation with defaults",
                handler=elicitation_defaults),
    define_tool("test_elicitation_sep1330_enums", description="Elicitation with enums",
                handler=elicitation_enums),
    define_tool("json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features",
                params=SCHEMA_2020, handler=lambda p: json.dumps(p)),
    define_tool("test_custom_header", description="Mirrors its region into Mcp-Param-Region",
                params={"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "query": {"type": "string"}}, "required": ["region"]},
                handler=lambda p: f"region={p['region']}"),
    define_tool("test_missing_capability", description="Needs the sampling capability",
                handler=missing_capability),
    define_tool("test_streaming_elicitation", description="Asks the user on a streamed call",
                handler=streaming_elicitation),
    define_tool("test_logging_tool", description="Logs when asked to", handler=logging_tool),
    define_tool("test_input_required_result_elicitation", description="Asks a name",
                handler=ask_name),
    define_tool("test_input_required_result_sampling", description="Asks the model",
                handler=ask_capital),
    define_tool("test_input_required_result_list_roots", description="Asks for roots",
                handler=ask_roots),
    define_tool("test_input_required_result_request_state", description="Needs a confirmation",
                handler=ask_confirmation),
    define_tool("test_input_required_result_tampered_state", description="Needs a confirmation",
                handler=ask_confirmation),
    define_tool("test_input_required_result_multiple_inputs", description="Asks three things",
                handler=ask_everything),
    define_tool("test_input_required_result_multi_round", description="Asks in two rounds",
                handler=ask_in_rounds),
    define_tool("test_input_required_result_capabilities",
                description="Asks only what the client supports", handler=ask_what_is_supported),
    *TASK_TOOLS,
]  # fmt: skip

RESOURCES = [
    define_resource("test://static-text", name="static-text", mime_type="text/plain",
                    description="A static text resource",
                    handler=lambda _u: "This is the content of the static text resource."),
    define_resource("test://static-binary", name="static-binary", mime_type="image/png",
                    description="A static binary resource",
                    handler=lambda _u: {"blob": PNG, "mimeType": "image/png"}),
    define_resource("test://watched-resource", name="watched-resource", mime_type="text/plain",
                    description="A resource clients may subscribe to",
                    handler=lambda _u: "watched"),
    define_resource("test://template/{id}/data", name="template", mime_type="application/json",
                    description="A templated resource",
                    handler=lambda _u, v: {"text": json.dumps({
                        "id": v["id"], "templateTest": True, "data": f"Data for ID: {v['id']}"}),
                        "mimeType": "application/json"}),
]  # fmt: skip

PROMPTS = [
    define_prompt("test_simple_prompt", description="A simple prompt",
                  handler=lambda _a: "This is a simple prompt for testing."),
    define_prompt("test_prompt_with_arguments", description="A prompt with arguments",
                  arguments={"arg1": "First test argument", "arg2": "Second test argument"},
                  handler=lambda a: f"Prompt with arguments: arg1='{a['arg1']}', "
                                    f"arg2='{a['arg2']}'",
                  complete=lambda _name, value: [v for v in ("paris", "park", "party")
                                                 if v.startswith(value)]),
    define_prompt("test_prompt_with_embedded_resource", description="Embeds a resource",
                  arguments={"resourceUri": "URI of the resource to embed"},
                  handler=lambda a: [
                      {"role": "user", "content": {"type": "resource", "resource": {
                          "uri": a["resourceUri"], "mimeType": "text/plain",
                          "text": "Embedded resource content for testing."}}},
                      "Please process the embedded resource above."]),
    define_prompt("test_prompt_with_image", description="Includes an image",
                  handler=lambda _a: [
                      {"role": "user", "content": {"type": "image", "data": PNG,
                                                   "mimeType": "image/png"}},
                      "Please analyze the image above."]),
    define_prompt("test_input_required_result_prompt", description="Asks for context first",
                  handler=prompt_with_context),
]  # fmt: skip

server = define_server(
    name="air-conformance",
    version="1.0.0",
    tools=TOOLS,
    resources=RESOURCES,
    prompts=PROMPTS,
    storage="memory://",
)

if __name__ == "__main__":
    server.run()

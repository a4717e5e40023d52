"""The fixtures the official MCP conformance suite asks a server for, on aircore.

``make conformance`` serves this over HTTP and runs ``@modelcontextprotocol/conformance``
against it; ``conformance-baseline.yml`` lists the scenarios we do not pass, with reasons.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aircore import ToolContext, define_prompt, define_resource, define_server, define_tool

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
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

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

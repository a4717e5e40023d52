"""The seven cost layers, as data: one table, not an if-chain."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["LAYERS", "Layer", "LayerInfo", "parse_layer"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerInfo:
    """What one layer means and what it costs."""

    level: int
    code: str
    name: str
    description: str
    weight: int
    risk: str
    verbs: tuple[str, ...]


LAYERS: tuple[LayerInfo, ...] = (
    LayerInfo(level=1, code="L1", name="static response", weight=1, risk="none",
              description="Constant or near-constant answers: ping, health, version, echo.",
              verbs=("ping", "health", "healthcheck", "version", "echo", "hello", "heartbeat",
                     "alive", "uptime", "whoami", "noop")),
    LayerInfo(level=2, code="L2", name="simple lookup", weight=3, risk="low",
              description="Reads or changes local state: get, list, find, search, write, create.",
              verbs=("get", "read", "find", "lookup", "list", "show", "search", "query", "load",
                     "describe", "view", "open", "check", "exists", "info", "retrieve", "select",
                     "status", "log", "tree", "stat", "print", "resolve", "peek", "head", "tail",
                     "inspect", "recall", "write", "create", "update", "insert", "remove",
                     "delete", "add", "set", "save", "store", "edit", "move", "rename", "copy",
                     "append", "clear", "reset", "mkdir", "commit", "checkout", "init", "tag",
                     "remember", "forget")),
    LayerInfo(level=3, code="L3", name="transform", weight=5, risk="low",
              description="Pure data transformation: convert, format, parse.",
              verbs=("convert", "transform", "format", "parse", "encode", "decode", "translate",
                     "render", "validate", "normalize", "serialize", "deserialize", "hash",
                     "compress", "decompress", "extract", "map", "sort", "filter", "diff",
                     "merge", "split", "replace", "escape", "minify", "beautify", "lint",
                     "screenshot", "resize", "crop", "tokenize", "template", "markdown")),
    LayerInfo(level=4, code="L4", name="compute", weight=10, risk="medium",
              description="CPU-bound work and the default: compute, aggregate, analyze.",
              verbs=("compute", "calculate", "calc", "aggregate", "analyze", "analyse",
                     "summarize", "summarise", "count", "evaluate", "eval", "simulate", "solve",
                     "optimize", "index", "build", "compile", "run", "process", "stats",
                     "benchmark", "test", "measure", "score", "rank", "cluster")),
    LayerInfo(level=5, code="L5", name="external API", weight=20, risk="medium",
              description="Calls another system over the network or drives a browser.",
              verbs=("fetch", "request", "call", "api", "webhook", "http", "https", "url", "uri",
                     "web", "remote", "internet", "online", "post", "put", "patch", "send",
                     "upload", "download", "scrape", "crawl", "browse", "browser", "navigate",
                     "click", "hover", "fill", "scroll", "notify", "publish", "sync", "email",
                     "mail", "sms", "slack", "push", "pull", "deploy", "reply", "geocode",
                     "curl", "wget", "invoke")),
    LayerInfo(level=6, code="L6", name="LLM inference", weight=50, risk="high",
              description="Runs a model: generate, complete, embed.",
              verbs=("generate", "complete", "completion", "chat", "embed", "embedding", "infer",
                     "inference", "predict", "llm", "prompt", "classify", "caption",
                     "transcribe", "rewrite", "imagine", "sample", "ask", "gpt", "claude",
                     "diffuse", "synthesize", "paraphrase")),
    LayerInfo(level=7, code="L7", name="multi-step agent", weight=100, risk="high",
              description="Plans and runs several steps: agent, plan, orchestrate.",
              verbs=("agent", "think", "thinking", "plan", "execute", "reason", "chain",
                     "orchestrate", "workflow", "research", "delegate", "autonomous",
                     "multistep", "crew", "swarm", "pipeline")),
)  # fmt: skip


class Layer(IntEnum):
    """A cost layer, L1 (cheapest) … L7 (most expensive)."""

    L1 = 1
    L2 = 2
    L3 = 3
    L4 = 4
    L5 = 5
    L6 = 6
    L7 = 7

    @property
    def info(self) -> LayerInfo:
        """The layer's row of :data:`LAYERS`."""
        return LAYERS[self.value - 1]

    @property
    def code(self) -> str:
        """``"L1"`` … ``"L7"``."""
        return f"L{self.value}"

    @property
    def weight(self) -> int:
        """The layer's cost weight (L1 = 1 … L7 = 100)."""
        return LAYERS[self.value - 1].weight


def parse_layer(value: object) -> Layer:
    """Accept ``3``, ``"3"``, ``"L3"``, ``"l3"`` or a :class:`Layer`; raise ``ValueError``."""
    if isinstance(value, Layer):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 7:
        return Layer(value)
    if isinstance(value, str):
        text = value.strip().upper().removeprefix("L")
        if text.isascii() and text.isdigit() and 1 <= int(text) <= 7:
            return Layer(int(text))
    raise ValueError(f"layer must be 1-7 or 'L1'-'L7', got {value!r}")

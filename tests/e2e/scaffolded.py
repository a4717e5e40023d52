"""What a tool's author writes after ``air scaffold tool smp_exchange_inquiry``: the real texts
that replace the placeholders (Korean, as the standard's own examples)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

__all__ = ["SCAFFOLDED_TOOL", "fill_scaffolded"]

SCAFFOLDED_TOOL = "smp_exchange_inquiry"


def fill_scaffolded(project: Path) -> None:
    """What the tool's author does after the scaffold: write the real texts."""
    path = project / "tool-definitions" / "smp" / "smp_exchange_inquiry.yml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["display_description"] = "통화별 기준 환율을 조회합니다."
    data["description"] = {
        "function": "기준일의 통화별 매매기준율을 조회해 돌려준다.",
        "when_to_use": "사용자가 오늘이나 특정 날짜의 환율을 물을 때 사용한다.",
        "when_not_to_use": "없음. 이 서버에 비슷한 도구가 없다.",
        "io_limits": "통화 코드는 ISO 4217 세 글자이며 결과는 통화 하나당 한 건이다.",
    }
    data["example_queries"] = [
        "오늘 달러 환율 알려줘",
        "지난주 금요일 엔화 매매기준율이 얼마였어?",
        "유로 송금 환율 좀 조회해 줘",
    ]
    data["parameters_schema"]["properties"]["query"]["description"] = "환율을 물은 통화 코드"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    schema_path = project / "schemas" / "smp_exchange_inquiry.output.json"
    schema = json.loads(schema_path.read_text(encoding="utf-8"))
    schema["properties"]["result"]["description"] = "환율을 설명하는 한 줄"
    schema_path.write_text(json.dumps(schema, ensure_ascii=False), encoding="utf-8")

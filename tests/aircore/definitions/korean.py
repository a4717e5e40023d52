"""Real Korean definitions under the standard's own naming (``category_service_action``)."""

from __future__ import annotations

import copy
from typing import Any


def exchange_inquiry() -> dict[str, Any]:
    """환율 조회: a clean definition in Korean; its similar tool is ``smp_exchange_history``."""
    return copy.deepcopy(
        {
            "name": "smp_exchange_inquiry",
            "display_name": "환율 조회",
            "version": "1.0.0",
            "category_key": "smp",
            "description": {
                "function": "기준일의 통화별 매매기준율과 송금 환율을 조회해 돌려준다.",
                "when_to_use": "사용자가 오늘이나 특정 날짜의 환율을 물을 때 사용한다.",
                "when_not_to_use": "기간별 환율 추이가 필요하면 smp_exchange_history를 사용한다.",
                "io_limits": "통화 코드는 ISO 4217 세 글자이고 날짜는 YYYY-MM-DD 형식이어야 한다. "
                "결과는 통화 하나당 한 건이다.",
            },
            "display_description": "통화별 기준 환율을 조회합니다.",
            "example_queries": [
                "오늘 달러 환율 알려줘",
                "지난주 금요일 엔화 매매기준율이 얼마였어?",
                "유로 송금 환율 좀 조회해 줘",
            ],
            "read_only": True,
            "destructive": False,
            "idempotent": True,
            "parameters_schema": {
                "type": "object",
                "properties": {
                    "currency": {"type": "string", "description": "ISO 4217 통화 코드 (예: USD)"},
                    "date": {"type": "string", "description": "기준일, YYYY-MM-DD"},
                },
                "required": ["currency"],
                "additionalProperties": False,
            },
            "legacy_interface_id": "IF-SMP-0012",
            "owner_org": "외환시스템팀",
        }
    )


def exchange_history() -> dict[str, Any]:
    """환율 추이: names ``smp_exchange_inquiry`` back."""
    data = exchange_inquiry()
    data.update(
        name="smp_exchange_history",
        display_name="환율 추이 조회",
        display_description="기간별 환율 추이를 조회합니다.",
        legacy_interface_id="IF-SMP-0013",
    )
    data["description"] = {
        "function": "시작일부터 종료일까지 하루 단위 매매기준율 목록을 돌려준다.",
        "when_to_use": "사용자가 한 달 동안의 환율 변화처럼 기간별 추이를 물을 때 사용한다.",
        "when_not_to_use": "하루치 환율만 필요하면 smp_exchange_inquiry를 사용한다.",
        "io_limits": "기간은 최대 366일이며 결과는 하루당 한 건이다.",
    }
    data["example_queries"] = [
        "지난 한 달 달러 환율 추이 보여줘",
        "올해 1분기 엔화 환율 변화가 궁금해",
        "최근 일주일 유로 환율을 날짜별로 알려줘",
    ]
    return data

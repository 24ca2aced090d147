"""Structured answers: the evidence as numbered records, the reply's shape, and the answer code writes from it."""

import json
import re
from typing import Any

import pytest
from semantic_kernel.functions import KernelArguments

from checks.evidence import Evidence
from checks.review import review_answer
from checks.structured import (
    MAX_CLAIMS,
    NOTHING_CITED,
    NOTHING_FOUND,
    AnswerRecord,
    answer_records,
    answer_request,
    answer_schema,
    render_answer,
)
from governance.effects import Effect
from kernel_setup import AppContext
from twin.models import SensorType

CALLS: list[tuple[str, str, dict[str, Any]]] = [
    ("assets", "get_pump_details", {"pump_id": "PUMP-007"}),
    ("assets", "get_pump_details", {"pump_id": "PUMP-004"}),
    ("assets", "get_system_summary", {}),
    ("assets", "list_pumps", {"location": "Station-C"}),
    ("alarms", "list_alarms", {}),
    ("sensors", "get_sensor_readings", {"sensor_type": "bearing_temperature"}),
    ("sensors", "get_sensor_trend", {"pump_id": "PUMP-007", "sensor_type": "bearing_temperature"}),
    ("work_orders", "list_work_orders", {"status": "open"}),
]
MANUAL = {
    "question": "How often should the bearing oil of an AF-400 be changed?",
    "count": 1,
    "hits": [
        {
            "title": "Aquaflow AF-400 O&M manual",
            "section": "Lubrication",
            "chunk_id": "om-af-400#3",
            "document": "om-aquaflow-af-400.md",
            "score": 0.71,
            "text": "Change the bearing oil every 4,000 operating hours or 12 months, whichever comes first. " * 9,
            "text_truncated": False,
        }
    ],
}


async def plant_evidence(app: AppContext) -> Evidence:
    """The sample fleet's real tool results, as a turn that called all of ``CALLS`` would hold them."""
    evidence = Evidence()
    for plugin, function, arguments in CALLS:
        result = await app.kernel.invoke(
            plugin_name=plugin, function_name=function, arguments=KernelArguments(**arguments)
        )
        evidence.add(f"{plugin}-{function}", str(result))
    evidence.add("docs-search_documentation", json.dumps(MANUAL))
    return evidence


def record(records: list[AnswerRecord], *words: str) -> AnswerRecord:
    """The one record whose line the model reads holds all of ``words``."""
    [found] = [r for r in records if all(w in r.label for w in words)]
    return found


def reply(*ids: str, note: str = "") -> str:
    return json.dumps({"claims": [{"record": i} for i in ids], "note": note})


async def test_every_record_is_numbered_once_and_each_sentence_passes_every_answer_check(app: AppContext) -> None:
    evidence = await plant_evidence(app)
    records = answer_records(evidence)
    assert [r.id for r in records] == [f"E{n}" for n in range(1, len(records) + 1)]
    assert len({r.sentence for r in records}) == len(records)
    kinds = ["vibration zone D", "ALM-0005", "PUMP-006 (Transfer 2)", "over 30 days", 'manual "Aquaflow AF-400']
    kinds += ["System summary", "Work orders listed", "PUMP-007 motor current"]
    assert all(any(kind in r.label for r in records) for kind in kinds)
    for each in records:
        review = review_answer(each.sentence, evidence, "How is the plant doing?", evidence.texts)
        assert not (review.ungrounded_numbers or review.ungrounded_ids or review.misattributed_numbers), each
        assert not (review.overlooked_alarms or review.misstated_severities or review.misstated_comparisons), each
        assert review.acting() == [], each


async def test_cited_records_are_written_out_with_the_results_numbers_after_the_note(app: AppContext) -> None:
    records = answer_records(await plant_evidence(app))
    zone = record(records, "PUMP-007 vibration zone D")
    trend = record(records, "PUMP-007 bearing temperature over 30 days")
    pump = record(records, "PUMP-006 (Transfer 2)")
    rendered = render_answer(reply(zone.id, trend.id, pump.id, zone.id, note="No, it should be stopped"), records)
    assert rendered is not None and rendered.dropped == [] and rendered.cited == [zone.id, trend.id, pump.id]
    # The sample fleet is dated from today, so the projected day is the trend tool's own, whatever the hour.
    projected = (await app.sensors.trend("PUMP-007", SensorType.BEARING_TEMPERATURE)).projected_crossing_date
    assert rendered.text.split("\n") == [
        "No, it should be stopped.",
        "PUMP-007: vibration 9.4 mm/s, ISO 10816-3 zone D (severe enough to cause damage).",
        "PUMP-007 bearing temperature over 30 days: latest 81 °C, between 72.52 and 83.77, changing 0.247 °C a day, "
        f"crosses threshold (alarm threshold 85), projected on {projected}, in 16.2 days.",
        "PUMP-006 (Transfer 2) at Station-C, Deepline VT-600: status offline, 1 active alarm.",
    ]


async def test_a_cited_passage_is_quoted_with_its_source_and_cut_at_a_sentence(app: AppContext) -> None:
    records = answer_records(await plant_evidence(app))
    passage = record(records, 'manual "Aquaflow AF-400 O&M manual", Lubrication')
    assert passage.sentence.startswith('The manual "Aquaflow AF-400 O&M manual, Lubrication" says: Change the bearing')
    assert "4,000 operating hours or 12 months" in passage.sentence
    assert passage.sentence.endswith("comes first.") and len(passage.sentence) < 600  # cut, at a sentence's end


def test_a_claim_citing_no_record_of_the_turn_is_dropped_and_said() -> None:
    records = answer_records(
        Evidence.of([json.dumps({"pump_id": "PUMP-006", "name": "Transfer 2", "status": "offline"})])
    )
    assert [r.id for r in records] == ["E1"]
    rendered = render_answer(reply("E7", "E1", note="It is offline"), records)
    assert rendered is not None
    assert rendered.text == "It is offline.\nPUMP-006 (Transfer 2): status offline."
    assert rendered.dropped == ["E7 is no record of this turn's results"] and rendered.cited == ["E1"]


def test_a_reply_whose_every_claim_cites_a_record_the_turn_lacks_is_no_answer_but_a_bare_id_counts() -> None:
    records = answer_records(Evidence.of([json.dumps({"pump_id": "PUMP-006", "status": "offline"})]))
    assert render_answer(reply("E7", "E8"), records) is None
    bare = render_answer(json.dumps({"claims": ["e1"], "note": ""}), records)
    assert bare is not None and bare.text == "PUMP-006: status offline." and bare.dropped == []


def test_a_note_with_digits_is_dropped_and_the_records_still_answer() -> None:
    records = answer_records(Evidence.of([json.dumps({"pump_id": "PUMP-006", "status": "offline"})]))
    rendered = render_answer(reply("E1", note="Pump 6 is at 0.37 in/s"), records)
    assert rendered is not None and rendered.text == "PUMP-006: status offline."
    assert rendered.dropped == ["the note 'Pump 6 is at 0.37 in/s', which held digits"]


def test_no_claim_says_the_results_hold_nothing_that_answers() -> None:
    records = answer_records(Evidence.of([json.dumps({"pump_id": "PUMP-006", "status": "offline"})]))
    nothing = render_answer(reply(), records)
    assert nothing is not None and nothing.text == NOTHING_FOUND and nothing.cited == []
    noted = render_answer(reply(note="I cannot stop pumps"), records)
    assert noted is not None and noted.text == f"I cannot stop pumps.\n{NOTHING_CITED}"


@pytest.mark.parametrize("text", ["PUMP-006 is offline.", "{", '{"note": "x"}', '{"claims": "E1"}', "[]"])
def test_a_reply_not_in_the_shape_asked_for_is_not_rendered(text: str) -> None:
    records = answer_records(Evidence.of([json.dumps({"pump_id": "PUMP-006", "status": "offline"})]))
    assert render_answer(text, records) is None


def test_claims_beyond_the_limit_are_dropped() -> None:
    rows = [{"pump_id": f"PUMP-00{n}", "status": "online"} for n in range(1, 9)]
    records = answer_records(Evidence.of([json.dumps({"pumps": rows})]))
    rendered = render_answer(reply(*(r.id for r in records)), records)
    assert rendered is not None and len(rendered.cited) == MAX_CLAIMS
    assert rendered.dropped and rendered.dropped[0].startswith(f"claims after the first {MAX_CLAIMS}")


def test_an_empty_listing_is_a_record_too() -> None:
    empty = {"filters": {"status": "open"}, "count": 0, "returned": 0, "truncated": False, "work_orders": []}
    evidence = Evidence()
    evidence.add("work_orders-list_work_orders", json.dumps(empty))
    [listing] = answer_records(evidence)
    assert listing.sentence == "Work orders listed: filters: status open; count 0; returned 0; not truncated."


def test_writes_and_failed_calls_are_records_with_their_ids_and_messages() -> None:
    evidence = Evidence()
    evidence.add(
        "work_orders-create_work_order",
        json.dumps({"status": "pending_approval", "approval_id": "APR-1A2B3C4D"}),
        status="pending_approval",
        effect=Effect.WRITE,
    )
    evidence.add("docs-search_documentation", json.dumps({"error": "The manuals index is empty."}), status="error")
    sentences = [r.sentence for r in answer_records(evidence)]
    assert sentences == [
        "Submitted for a supervisor's approval, not yet carried out: work_orders-create_work_order "
        "(approval APR-1A2B3C4D). A supervisor decides it with `pumpops approvals`.",
        "Documentation search failed: The manuals index is empty.",
    ]


def test_records_are_capped() -> None:
    rows = [{"pump_id": f"PUMP-{n:03d}", "status": "online"} for n in range(1, 60)]
    records = answer_records(Evidence.of([json.dumps({"pumps": rows})]), limit=10)
    assert [r.id for r in records] == [f"E{n}" for n in range(1, 11)]


def test_the_schema_allows_only_the_turns_record_ids_and_a_note_without_digits() -> None:
    schema = answer_schema(["E1", "E2"])
    assert schema["required"] == ["claims", "note"] and schema["additionalProperties"] is False
    claims = schema["properties"]["claims"]
    assert claims["items"]["properties"]["record"]["enum"] == ["E1", "E2"] and claims["maxItems"] == MAX_CLAIMS
    pattern = re.compile(schema["properties"]["note"]["pattern"])
    assert pattern.search("No, stop it.") and not pattern.search("It runs at 9.4 mm/s.")


def test_the_request_lists_each_record_on_a_line_and_the_shape() -> None:
    records = answer_records(Evidence.of([json.dumps({"pump_id": "PUMP-006", "name": "Transfer 2"})]))
    request = answer_request(records)
    assert "\nE1 PUMP-006 (Transfer 2).\n" in request
    assert '{"claims": [{"record": "E1"}, ...], "note": "..."}' in request and "without digits" in request

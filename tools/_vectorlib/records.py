"""record-ids.json, records.json and tombstones.json."""

from __future__ import annotations

import copy
from typing import Any

from _vectorlib.fixtures import (
    KEY_A,
    KEY_B,
    T0,
    T1,
    T2,
    A,
    case,
    edit,
    evolve,
    group,
    load_published,
    make,
    provenance,
    reid,
    sign,
    vector_file,
    without,
)
from _vectorlib.primitives import birth_digest, record_id

PUBLISHED_NOTE = "Taken from the published fg-agent-memory golden vectors."
REQUIRED = (
    "id", "type", "body", "slots", "state", "confidence", "created_at", "updated_at",
    "provenance", "evidence", "supersedes", "superseded_by", "transition", "state_reason",
    "tags", "flagged", "flag_reason", "signed_by", "signature",
)

BASE = make("fact", "The build uses Python 3.11.", slots={"language": "Python",
                                                          "version": "3.11"},
            tags=("build",))
OTHER = make("fact", "The build uses Python 3.12.", slots={"language": "Python",
                                                           "version": "3.12"},
             tags=("build",), created_at=T1)
EPISODE = make("episode", "Upgraded the CI image to Python 3.11.",
               occurred_at="2025-12-31T18:00:00.000Z", confidence="0.7500")
EPISODE_2 = make("episode", "Ran the test suite on Python 3.11.",
                 occurred_at="2025-12-31T19:00:00.000Z", confidence="0.7500")
RULE = make("rule", "Pin the Python version in CI.", evidence=(EPISODE["id"], EPISODE_2["id"]),
            confidence="0.8000")


def _ids(rec: dict[str, Any]) -> dict[str, str]:
    return {"id": record_id(rec), "birth_digest": birth_digest(rec)}


# --- record ids ------------------------------------------------------------------------------

def _record_ids() -> dict[str, Any]:
    name = "record-ids"
    notes = {
        "published": PUBLISHED_NOTE,
        "key-order": "The birth object's keys arrive in a different order; the id is the same.",
        "ignored-fields": "Fields outside the birth content (lifecycle fields, occurred_at, "
                          "signatures, unknown fields) do not change the id.",
        "nfc": "A decomposed string in the birth content gets the id of its NFC form.",
        "non-ascii": "Birth content beyond ASCII, including characters beyond U+FFFF.",
        "missing-birth-field": "A birth field is absent: there is no content address.",
    }
    mem = load_published("fg-agent-memory-0.1.json")
    birth = mem["record_id"]["birth"]
    expected = {"id": mem["record_id"]["expected"], "birth_digest": birth_digest(birth)}
    reordered = {k: birth[k] for k in reversed(list(birth))}
    reordered["provenance"] = {k: birth["provenance"][k] for k in ("ref", "agent", "kind")}
    composed = make("fact", "Caf\u00e9 Ol\u00e9 opens at nine.", slots={"place": "Caf\u00e9"})
    decomposed = edit(composed, body="Cafe\u0301 Ole\u0301 opens at nine.",
                      slots={"place": "Cafe\u0301"})
    superseded = evolve(BASE, T2, state="superseded", superseded_by=OTHER["id"],
                        state_reason="Upgraded.", confidence="0.1000", tags=["old"])
    with_occurred = edit(BASE, occurred_at="2025-06-01T00:00:00.000Z")
    unknown = edit(BASE, **{"x-origin": "import", "x-weight": 3})
    emoji = make("episode", "Shipped \U0001f680 release \u00fcber-fast.",
                 slots={"\u00e9tape": "\U0001f680"})
    anon = make("fact", "Nobody wrote this down.", prov=provenance("observation", None, None))
    files = mem["artifacts"]["memory_file"]["file"]["records"]
    rid = "record-ids"
    tests = [
        case(f"{rid}/published-birth", "The published birth object", ["published"],
             ["ID-1"], {"record": birth}, expected=expected),
        case(f"{rid}/published-canonical-record", "The published full record", ["published"],
             ["ID-1"], {"record": mem["canonical_record"]["record"]}, expected=expected),
        case(f"{rid}/published-signed-record", "The published signed record",
             ["published", "ignored-fields"], ["ID-1", "ID-3"],
             {"record": mem["artifacts"]["signed_record"]["record"]}, expected=expected),
        case(f"{rid}/published-file-episode", "The published file's episode", ["published"],
             ["ID-1"], {"record": files[1]}, expected=_ids(files[1])),
        case(f"{rid}/published-file-rule", "The published file's rule", ["published"],
             ["ID-1"], {"record": files[2]}, expected=_ids(files[2])),
        case(f"{rid}/key-order", "Birth keys (and provenance keys) in reverse order",
             ["key-order"], ["ID-1", "CJ-2"], {"record": reordered}, expected=expected),
        case(f"{rid}/lifecycle-fields-ignored", "A superseded version with other confidence, "
             "tags and updated_at keeps its id", ["ignored-fields"], ["ID-3"],
             {"record": superseded}, expected=_ids(BASE)),
        case(f"{rid}/occurred-at-ignored", "occurred_at is signed but not part of the id",
             ["ignored-fields"], ["ID-3"], {"record": with_occurred}, expected=_ids(BASE)),
        case(f"{rid}/signature-ignored", "A signed record has the id of its unsigned form",
             ["ignored-fields"], ["ID-3"], {"record": sign(BASE, KEY_B)},
             expected=_ids(BASE)),
        case(f"{rid}/unknown-fields-ignored", "Extension fields are not birth content",
             ["ignored-fields"], ["ID-1"], {"record": unknown}, expected=_ids(BASE)),
        case(f"{rid}/nfc-composed", "Composed accents", ["nfc", "non-ascii"], ["ID-1", "CJ-4"],
             {"record": composed}, expected=_ids(composed)),
        case(f"{rid}/nfc-decomposed", "The same text decomposed: same id as nfc-composed",
             ["nfc", "non-ascii"], ["ID-1", "CJ-4"], {"record": decomposed},
             expected=_ids(composed)),
        case(f"{rid}/non-bmp", "A rocket in the body and a slot", ["non-ascii"], ["ID-1"],
             {"record": emoji}, expected=_ids(emoji)),
        case(f"{rid}/null-provenance-fields", "Provenance with null ref and agent", [],
             ["ID-1"], {"record": anon}, expected=_ids(anon)),
        case(f"{rid}/created-at-matters", "A different created_at is a different record", [],
             ["ID-1"], {"record": edit(BASE, created_at=T1)},
             expected=_ids(edit(BASE, created_at=T1))),
    ]
    assert _ids(decomposed) == _ids(composed)
    for field in ("type", "body", "slots", "provenance", "created_at"):
        tests.append(case(f"{rid}/reject-missing-{field.replace('_', '-')}",
                          f"No {field}: the birth content is incomplete",
                          ["missing-birth-field"], ["ID-1", "REC-1"],
                          {"record": without(birth, field)}, error="record"))
    return vector_file(name, "Content addresses: id = 'mem:' + the first 32 hex digits of "
                       "sha256(canonical_json(birth)), birth = {type, body, slots, provenance, "
                       "created_at}; expected.birth_digest is the full digest.", notes,
                       [group("record-id", "Record -> id and birth digest", "record_id",
                              "format", tests)])


# --- records ---------------------------------------------------------------------------------

def _transitional(rec: dict[str, Any], other: str, first: bool = True) -> dict[str, Any]:
    sides = [rec["id"], other] if first else [other, rec["id"]]
    return evolve(rec, T2, state="transitional",
                  transition={"sides": sides, "reason": "The versions disagree."})


def _valid_records() -> list[tuple[str, str, list[str], list[str], dict[str, Any]]]:
    mem = load_published("fg-agent-memory-0.1.json")
    files = mem["artifacts"]["memory_file"]["file"]["records"]
    proc = make("procedure", "To release: tag, build, upload.", slots={"steps": [
        "tag", "build", "upload"]}, tags=("release", "howto"))
    nested = make("fact", "Slots may hold any canonical JSON.", slots={
        "count": 3, "enabled": True, "missing": None, "nested": {"list": [1, [2, {"k": "v"}]]},
        "max": 9007199254740991})
    flagged = evolve(RULE, T2, flagged=True, flag_reason="All evidence is archived.")
    return [
        ("published-canonical-record", "The published canonical record", ["published"],
         ["REC-1"], mem["canonical_record"]["record"]),
        ("published-signed-record", "The published signed record", ["published"],
         ["REC-1", "SIG-6"], mem["artifacts"]["signed_record"]["record"]),
        ("published-file-episode", "The published file's episode (no occurred_at: a SHOULD)",
         ["published"], ["REC-1", "REC-13"], files[1]),
        ("published-file-rule", "The published file's rule", ["published"],
         ["REC-1", "RULE-1"], files[2]),
        ("fact", "A fact with slots and a tag", [], ["REC-1", "REC-4"], BASE),
        ("episode-with-occurred-at", "An episode carrying occurred_at", ["optional-field"],
         ["REC-11", "REC-13"], EPISODE),
        ("procedure", "A procedure", [], ["REC-4"], proc),
        ("rule-with-evidence", "A rule with two evidence ids", [], ["RULE-1", "REC-8"], RULE),
        ("flagged-rule", "A flagged rule with its reason", [], ["RULE-4"], flagged),
        ("superseded", "Superseded, naming its successor, with a reason", [],
         ["SUP-2", "LC-3"], evolve(BASE, T2, state="superseded", superseded_by=OTHER["id"],
                                   state_reason="Upgraded to 3.12.")),
        ("successor", "An active successor naming what it supersedes", [], ["SUP-1", "SUP-4"],
         make("fact", "The build uses Python 3.12.", supersedes=BASE["id"], created_at=T1)),
        ("archived", "Archived with a reason", [], ["LC-3"],
         evolve(BASE, T2, state="archived", state_reason="Decayed.")),
        ("archived-keeps-superseded-by", "Archived after supersession keeps superseded_by",
         [], ["SUP-3", "LC-3"], evolve(BASE, T2, state="archived", superseded_by=OTHER["id"],
                                       state_reason="Decayed.")),
        ("transitional", "Transitional with a block naming itself first", [],
         ["TRN-1", "TRN-2"], _transitional(BASE, OTHER["id"])),
        ("transitional-second-side", "Transitional, own id second in sides", [],
         ["TRN-1", "TRN-2"], _transitional(OTHER, BASE["id"], first=False)),
        ("updated-later", "updated_at after created_at", [], ["REC-7"],
         evolve(BASE, T2, tags=["build", "python"])),
        ("unknown-fields", "Extension fields are preserved as they are", ["unknown-field"],
         ["REC-2"], edit(BASE, **{"x-origin": "import", "x-meta": {"n": 1, "tags": ["a"]}})),
        ("nested-slots", "Slots holding every JSON kind canonical JSON allows", [], ["REC-5"],
         nested),
        ("null-provenance-fields", "Provenance ref and agent null", [], ["REC-6"],
         make("fact", "Observed without a source.", prov=provenance("observation", None,
                                                                     None))),
        ("signed-by-b", "Signed by key B", [], ["SIG-6", "SIG-7"], sign(BASE, KEY_B)),
        ("no-tags-no-slots", "Empty slots and tags", [], ["REC-5", "REC-10"],
         make("fact", "Minimal.", tags=())),
        ("reason-no-break-space", "Archived with a state_reason of U+00A0, which is not ASCII "
         "whitespace", ["reason", "unicode-space-reason"], ["LC-3"],
         evolve(BASE, T2, state="archived", state_reason="\u00a0")),
        ("flag-reason-ideographic-space", "A flagged rule whose flag_reason is U+3000",
         ["flag", "unicode-space-reason"], ["RULE-4"],
         evolve(RULE, T2, flagged=True, flag_reason="\u3000")),
        ("transition-reason-em-space", "A transition block whose reason is U+2003",
         ["transition", "unicode-space-reason"], ["TRN-1"],
         edit(_transitional(BASE, OTHER["id"]), transition={
             "sides": [BASE["id"], OTHER["id"]], "reason": "\u2003"})),
        ("tags-distinct-in-nfc", "Tags that stay distinct after NFC (e and e-acute)",
         ["tags", "nfc"], ["REC-10"], edit(BASE, tags=["cafe", "caf\u00e9"])),
    ]


def _url_safe(rec: dict[str, Any]) -> dict[str, Any]:
    spelled = rec["signature"].replace("+", "-").replace("/", "_")
    assert spelled != rec["signature"]
    return edit(rec, signature=spelled)


def _number_token_records() -> list[tuple[str, str, list[str], list[str], Any]]:
    """Values that are floats by their JSON tokens though integral in value (PROTO-8)."""
    b = BASE
    return [
        ("unknown-field-integral-float", "An extension field holding 1.0: a float, though its "
         "value is integral", ["unknown-field", "number-token"], ["CJ-6", "PROTO-8"],
         edit(b, **{"x-weight": 1.0})),
        ("unknown-field-negative-zero", "An extension field holding -0.0",
         ["unknown-field", "number-token"], ["CJ-6", "PROTO-8"], edit(b, **{"x-weight": -0.0})),
        ("unknown-field-nested-integral-float", "An extension object holding 100.0 inside an "
         "array", ["unknown-field", "number-token"], ["CJ-6", "PROTO-8"],
         edit(b, **{"x-meta": {"counts": [1, 100.0]}})),
    ]


def _create_cases() -> list[dict[str, Any]]:
    """create_record: the optional arguments' defaults, null occurred_at, NFC tags."""
    body = "Rebooted the build agent."
    base = {"type": "episode", "body": body, "provenance": provenance(), "now": T1}
    plain = make("episode", body, created_at=T1, confidence="1.0000")
    timed = make("episode", body, created_at=T1, confidence="1.0000", occurred_at=T0)
    assert plain["id"] == timed["id"]
    name = "records"
    return [
        case(f"{name}/create-defaults", "Only the required arguments: the defaults apply",
             ["create"], ["REC-14", "REC-11"], base, expected={"record": plain}),
        case(f"{name}/create-occurred-at-null", "occurred_at given as null means not given: "
             "the record carries no occurred_at", ["create", "optional-field"],
             ["REC-11", "REC-14"], {**base, "occurred_at": None}, expected={"record": plain}),
        case(f"{name}/create-occurred-at", "occurred_at given", ["create", "optional-field"],
             ["REC-11", "ID-3"], {**base, "occurred_at": T0}, expected={"record": timed}),
        case(f"{name}/create-reject-tags-equal-in-nfc", "Two tags equal after NFC",
             ["create", "tags", "nfc"], ["REC-10"],
             {**base, "tags": ["caf\u00e9", "cafe\u0301"]}, error="record"),
    ]


def _invalid_records() -> list[tuple[str, str, list[str], str, Any]]:
    trans = _transitional(BASE, OTHER["id"])
    block = trans["transition"]
    sup = evolve(BASE, T2, state="superseded", superseded_by=OTHER["id"], state_reason="Old.")
    rules = RULE
    b = BASE
    out: list[tuple[str, str, list[str], str, Any]] = [
        ("not-an-object", "An array is not a record", [], "REC-1", [b]),
        ("string", "A string is not a record", [], "REC-1", "mem:0"),
    ]
    for field in REQUIRED:
        out.append((f"missing-{field.replace('_', '-')}", f"No {field} field",
                    ["missing-field"], "REC-1", without(b, field)))
    out += [
        ("id-uppercase-hex", "Uppercase hex digits", [], "REC-3", edit(b, id=b["id"].upper()
                                                                       .replace("MEM:", "mem:"))),
        ("id-short", "31 hex digits", [], "REC-3", edit(b, id=b["id"][:-1])),
        ("id-wrong-prefix", "memory: instead of mem:", [], "REC-3",
         edit(b, id="memory:" + b["id"][4:])),
        ("id-not-string", "A number", [], "REC-3", edit(b, id=7)),
        ("id-mismatch", "The id of another record", [], "ID-2", edit(b, id=OTHER["id"])),
        ("id-stale-after-body-edit", "The body changed, the id did not", [], "ID-2",
         edit(b, body="The build uses Python 3.10.")),
        ("type-unknown", "type note", [], "REC-4", reid(edit(b, type="note"))),
        ("type-uppercase", "type Fact", [], "REC-4", reid(edit(b, type="Fact"))),
        ("type-null", "type null", [], "REC-4", reid(edit(b, type=None))),
        ("state-unknown", "state deleted", [], "REC-4", edit(b, state="deleted")),
        ("state-uppercase", "state Active", [], "REC-4", edit(b, state="Active")),
        ("body-empty", "Empty body", [], "REC-5", reid(edit(b, body=""))),
        ("body-number", "A number body", [], "REC-5", reid(edit(b, body=42))),
        ("body-null", "A null body", [], "REC-5", reid(edit(b, body=None))),
        ("slots-array", "slots is an array", [], "REC-5", reid(edit(b, slots=[]))),
        ("slots-null", "slots is null", [], "REC-5", reid(edit(b, slots=None))),
        ("confidence-number", "A number confidence", [], "CONF-1", edit(b, confidence=0.9)),
        ("created-at-no-millis", "created_at without milliseconds", ["timestamp"], "REC-7",
         reid(edit(b, created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z"))),
        ("created-at-offset", "created_at with +00:00", ["timestamp"], "REC-7",
         reid(edit(b, created_at="2026-01-01T00:00:00.000+00:00"))),
        ("created-at-lowercase-z", "Records need the canonical spelling: z is not Z",
         ["timestamp"], "REC-7", reid(edit(b, created_at="2026-01-01T00:00:00.000z"))),
        ("created-at-microseconds", "Six fractional digits", ["timestamp"], "REC-7",
         reid(edit(b, created_at="2026-01-01T00:00:00.000000Z"))),
        ("created-at-feb-30", "A canonically spelled impossible date", ["timestamp"], "REC-7",
         reid(edit(b, created_at="2026-02-30T00:00:00.000Z",
                   updated_at="2026-03-01T00:00:00.000Z"))),
        ("updated-at-not-canonical", "updated_at without milliseconds", ["timestamp"], "REC-7",
         edit(b, updated_at="2026-01-02T00:00:00Z")),
        ("updated-before-created", "updated_at one millisecond before created_at",
         ["timestamp"], "REC-7", edit(b, updated_at="2025-12-31T23:59:59.999Z")),
        ("occurred-at-not-canonical", "occurred_at with an offset", ["timestamp",
                                                                      "optional-field"],
         "REC-7", edit(EPISODE, occurred_at="2025-12-31T18:00:00+00:00")),
        ("occurred-at-null", "An optional field is absent when unset, never null",
         ["optional-field"], "REC-11", edit(b, occurred_at=None)),
        ("provenance-string", "provenance is a string", ["provenance"], "REC-6",
         reid(edit(b, provenance="conversation"))),
        ("provenance-null", "provenance is null", ["provenance"], "REC-6",
         reid(edit(b, provenance=None))),
        ("provenance-extra-key", "provenance with a fourth key", ["provenance"], "REC-6",
         reid(edit(b, provenance={**provenance(), "tool": "x"}))),
        ("provenance-missing-ref", "provenance without ref (exactly three keys)",
         ["provenance"], "REC-6", reid(edit(b, provenance={"kind": "conversation",
                                                           "agent": A}))),
        ("provenance-missing-agent", "provenance without agent (exactly three keys)",
         ["provenance"], "REC-6", reid(edit(b, provenance={"kind": "conversation",
                                                           "ref": "s"}))),
        ("provenance-missing-kind", "provenance without kind", ["provenance"], "REC-6",
         reid(edit(b, provenance={"ref": "s", "agent": A}))),
        ("provenance-kind-empty", "Empty kind", ["provenance"], "REC-6",
         reid(edit(b, provenance=provenance(kind="")))),
        ("provenance-kind-null", "Null kind", ["provenance"], "REC-6",
         reid(edit(b, provenance={"kind": None, "ref": None, "agent": None}))),
        ("provenance-ref-number", "Numeric ref", ["provenance"], "REC-6",
         reid(edit(b, provenance={"kind": "tool", "ref": 12, "agent": None}))),
        ("provenance-agent-not-address", "agent is not an amp:key: address", ["provenance"],
         "ENC-1", reid(edit(b, provenance=provenance(agent="did:key:z6Mk")))),
        ("evidence-string", "evidence is a string", ["evidence"], "REC-8",
         edit(b, evidence=OTHER["id"])),
        ("evidence-bad-id", "An evidence entry that is not a record id", ["evidence"], "REC-8",
         edit(b, evidence=["mem:xyz"])),
        ("evidence-duplicate", "The same evidence id twice", ["evidence"], "REC-8",
         edit(b, evidence=[OTHER["id"], OTHER["id"]])),
        ("evidence-self", "A record cannot be its own evidence", ["evidence"], "REC-8",
         edit(b, evidence=[b["id"]])),
        ("rule-without-evidence", "A rule with an empty evidence list", ["evidence"], "RULE-1",
         reid(edit(rules, evidence=[]))),
        ("supersedes-bad-id", "supersedes is not a record id", ["links"], "SUP-4",
         edit(b, supersedes="mem:1")),
        ("supersedes-self", "supersedes names the record itself", ["links"], "SUP-4",
         edit(b, supersedes=b["id"])),
        ("superseded-by-self", "superseded_by names the record itself", ["links"], "SUP-4",
         edit(sup, superseded_by=b["id"])),
        ("superseded-by-on-active", "An active record never carries superseded_by",
         ["links"], "SUP-3", edit(b, superseded_by=OTHER["id"])),
        ("superseded-by-on-transitional", "Nor does a transitional one", ["links"], "SUP-3",
         edit(trans, superseded_by=OTHER["id"])),
        ("superseded-without-successor", "superseded with superseded_by null", ["links"],
         "SUP-2", edit(sup, superseded_by=None)),
        ("transitional-without-block", "transitional with transition null", ["transition"],
         "TRN-2", edit(trans, transition=None)),
        ("active-with-block", "active carrying a transition block", ["transition"], "TRN-2",
         edit(b, transition=block)),
        ("archived-with-block", "archived carrying a transition block", ["transition"],
         "TRN-2", edit(trans, state="archived", state_reason="Decayed.")),
        ("block-not-object", "transition is a string", ["transition"], "TRN-2",
         edit(trans, transition="disputed")),
        ("block-extra-key", "A third key in the block", ["transition"], "TRN-1",
         edit(trans, transition={**block, "winner": None})),
        ("block-missing-reason", "No reason key", ["transition"], "TRN-1",
         edit(trans, transition={"sides": block["sides"]})),
        ("block-empty-reason", "An empty reason", ["transition"], "TRN-1",
         edit(trans, transition={**block, "reason": ""})),
        ("block-one-side", "One side only", ["transition"], "TRN-1",
         edit(trans, transition={**block, "sides": [b["id"]]})),
        ("block-three-sides", "Three sides", ["transition"], "TRN-1",
         edit(trans, transition={**block, "sides": [b["id"], OTHER["id"], RULE["id"]]})),
        ("block-same-side-twice", "Both sides are the record itself", ["transition"], "TRN-1",
         edit(trans, transition={**block, "sides": [b["id"], b["id"]]})),
        ("block-without-own-id", "The sides do not include the carrying record",
         ["transition"], "TRN-1",
         edit(trans, transition={**block, "sides": [OTHER["id"], RULE["id"]]})),
        ("block-side-not-id", "A side that is not a record id", ["transition"], "TRN-1",
         edit(trans, transition={**block, "sides": [b["id"], "other"]})),
        ("state-reason-number", "state_reason is a number", ["reason"], "REC-9",
         edit(b, state_reason=1)),
        ("superseded-without-reason", "superseded with state_reason null", ["reason"], "LC-3",
         edit(sup, state_reason=None)),
        ("archived-empty-reason", "archived with an empty state_reason", ["reason"], "LC-3",
         evolve(b, T2, state="archived", state_reason="")),
        ("archived-blank-reason", "archived with a whitespace-only state_reason", ["reason"],
         "LC-3", evolve(b, T2, state="archived", state_reason="   ")),
        ("archived-ascii-whitespace-reason", "archived with a state_reason of tab, space and "
         "line feed", ["reason", "blank-reason"], "LC-3",
         evolve(b, T2, state="archived", state_reason="\t \n")),
        ("flagged-blank-reason", "A flag_reason of carriage return and line feed",
         ["flag", "blank-reason"], "RULE-4", edit(rules, flagged=True, flag_reason="\r\n")),
        ("block-blank-reason", "A transition reason of line tabulation and form feed",
         ["transition", "blank-reason"], "TRN-1",
         edit(trans, transition={**block, "reason": "\x0b\x0c"})),
        ("tags-string", "tags is a string", ["tags"], "REC-10", edit(b, tags="build")),
        ("tag-empty", "An empty tag", ["tags"], "REC-10", edit(b, tags=["build", ""])),
        ("tag-duplicate", "The same tag twice", ["tags"], "REC-10",
         edit(b, tags=["build", "build"])),
        ("tag-duplicate-after-nfc", "One tag composed, one decomposed: equal in NFC, so "
         "duplicates", ["tags", "nfc"], "REC-10", edit(b, tags=["caf\u00e9", "cafe\u0301"])),
        ("tag-number", "A numeric tag", ["tags"], "REC-10", edit(b, tags=[3])),
        ("flagged-not-boolean", "flagged is 0", ["flag"], "RULE-4", edit(b, flagged=0)),
        ("flagged-string", "flagged is the string false", ["flag"], "RULE-4",
         edit(b, flagged="false")),
        ("flagged-fact", "Only rules may be flagged", ["flag"], "RULE-4",
         edit(b, flagged=True, flag_reason="Evidence gone.")),
        ("flagged-without-reason", "A flagged rule needs a flag_reason", ["flag"], "RULE-4",
         edit(rules, flagged=True)),
        ("flagged-empty-reason", "An empty flag_reason", ["flag"], "RULE-4",
         edit(rules, flagged=True, flag_reason="")),
        ("unflagged-with-reason", "flag_reason without flagged", ["flag"], "RULE-4",
         edit(rules, flag_reason="Leftover.")),
        ("signature-without-signer", "A signature but signed_by null", ["signature-fields"],
         "SIG-6", edit(b, signature=sign(b, KEY_A)["signature"])),
        ("signer-without-signature", "signed_by set, signature empty", ["signature-fields"],
         "SIG-6", edit(b, signed_by=A)),
        ("signature-null", "signature is null (unsigned is the empty string)",
         ["signature-fields"], "SIG-6", edit(b, signature=None)),
        ("signer-not-address", "signed_by is not an amp:key: address", ["signature-fields"],
         "ENC-1", edit(sign(b, KEY_A), signed_by="FAe4sisG95oZ42w7buUn5qEE4TAnfTTFPiguZUHmhiF")),
        ("signature-url-safe", "A signature in URL-safe base64: validation rejects the "
         "spelling (verify_record reports it as a signature failure instead)",
         ["signature-fields", "malformed-signature"], "ENC-3", _url_safe(sign(b, KEY_A))),
        ("signature-unpadded", "A signature without its == padding",
         ["signature-fields", "malformed-signature"], "ENC-3",
         edit(sign(b, KEY_A), signature=sign(b, KEY_A)["signature"].rstrip("="))),
        ("unknown-field-float", "An extension field holding a float", ["unknown-field"],
         "CJ-6", edit(b, **{"x-score": 0.5})),
        ("unknown-field-big-integer", "An extension field holding 2^53", ["unknown-field"],
         "CJ-7", edit(b, **{"x-count": 9007199254740992})),
        ("unknown-field-non-nfc-key", "An extension object with a non-NFC key",
         ["unknown-field"], "CJ-5", edit(b, **{"x-meta": {"e\u0301": 1}})),
        ("slots-non-nfc-key", "A slot key not in NFC (such a record has no content address, "
         "so the id is left as it was)", [], "CJ-5", edit(b, slots={"e\u0301": "x"})),
    ]
    return out


def _records() -> dict[str, Any]:
    name = "records"
    notes = {
        "published": PUBLISHED_NOTE,
        "optional-field": "An optional field (occurred_at): present only when set.",
        "unknown-field": "An extension field: preserved as it is, and still bound by canonical "
                         "JSON.",
        "missing-field": "One required field is absent.",
        "timestamp": "A timestamp field that is not in canonical spelling or not in order.",
        "provenance": "The provenance object's shape.",
        "evidence": "The evidence list's shape and the rule evidence invariant.",
        "links": "supersedes / superseded_by.",
        "transition": "The transition block and its pairing with the transitional state.",
        "reason": "state_reason.",
        "tags": "The tags list.",
        "flag": "flagged / flag_reason.",
        "signature-fields": "The shape and pairing of signed_by and signature (cryptographic "
                            "verification is in signatures.json).",
        "malformed-signature": "The signature is not the canonical base64 spelling of 64 bytes "
                               "(ENC-3): in validation that is a record failure.",
        "blank-reason": "A reason field holding only ASCII whitespace (U+0009-U+000D, U+0020), "
                        "the only characters that count as blank: it is no reason.",
        "unicode-space-reason": "A reason field holding only a Unicode space that is not ASCII "
                                "whitespace (U+00A0, U+2003, U+3000): it is a reason.",
        "nfc": "Tags are compared after normalization to NFC.",
        "number-token": "A value written with a fraction or exponent (1.0, -0.0, 100.0): a "
                        "float, though its value is integral. Over the process protocol the "
                        "engine must see the float the token spells (PROTO-8).",
        "create": "Built by create_record from its arguments at now.",
    }
    valid = [case(f"{name}/{cid}", comment, flags, reqs, {"record": rec},
                  expected={"record": rec})
             for cid, comment, flags, reqs, rec in _valid_records()]
    invalid = [case(f"{name}/{cid}", comment + " (every other rule holds)", flags, [req],
                    {"record": rec}, error="record")
               for cid, comment, flags, req, rec in _invalid_records()]
    invalid += [case(f"{name}/{cid}", comment + " (every other rule holds)", flags, reqs,
                     {"record": rec}, error="record")
                for cid, comment, flags, reqs, rec in _number_token_records()]
    groups = [
        group("valid", "Records every engine accepts as they are", "validate_record", "format",
              valid),
        group("invalid", "Records breaking exactly one per-record rule (error class record); "
              "ids are recomputed after a birth-field edit so that only the named rule breaks",
              "validate_record", "format", invalid),
        group("create", "create_record: a newborn record from its arguments", "create_record",
              "format", _create_cases()),
    ]
    return vector_file(name, "MemoryRecord validation: every per-record rule of the format, "
                       "one valid and one or more invalid cases each.", notes, groups)


# --- tombstones ------------------------------------------------------------------------------

def tombstone(original: dict[str, Any], reason: str, now: str) -> dict[str, Any]:
    """The redaction tombstone of ``original`` (RED-2, RED-3, RED-4) built field by field."""
    out = {
        "id": original["id"], "type": original["type"], "body": "[redacted]", "slots": {},
        "state": "archived", "confidence": "0.0000", "created_at": original["created_at"],
        "updated_at": now, "provenance": {"kind": "redaction", "ref": None, "agent": None},
        "evidence": copy.deepcopy(original["evidence"]), "supersedes": original["supersedes"],
        "superseded_by": original["superseded_by"], "transition": None,
        "state_reason": reason, "tags": [], "flagged": original["flagged"],
        "flag_reason": original["flag_reason"], "signed_by": None, "signature": "",
        "redacted": True, "redaction_reason": reason, "birth_digest": birth_digest(original),
    }
    assert out["id"] == "mem:" + out["birth_digest"][:32]
    return out


def _tombstones() -> dict[str, Any]:
    name = "tombstones"
    notes = {
        "redaction": "A redaction tombstone: content destroyed, id explained by birth_digest.",
        "tombstone-content": "A content field that a tombstone must wipe or pin (RED-3).",
        "redaction-fields": "redacted / redaction_reason / birth_digest (RED-4).",
        "digest-mismatch": "The id is not the prefix of birth_digest (RED-5).",
    }
    why = "Personal data remembered by mistake."
    fact_t = tombstone(edit(BASE, occurred_at="2025-06-01T00:00:00.000Z"), why, T2)
    rule_t = tombstone(RULE, why, T2)
    sup = evolve(BASE, T1, state="superseded", superseded_by=OTHER["id"], state_reason="Old.")
    sup_t = tombstone(sup, why, T2)
    signed_t = tombstone(sign(OTHER, KEY_A), why, T2)
    trans_t = tombstone(_transitional(OTHER, BASE["id"]), why, T2)
    valid = [
        ("fact", "Tombstone of a fact that had occurred_at, slots and tags", fact_t),
        ("rule-keeps-evidence", "Tombstone of a rule: evidence ids are kept", rule_t),
        ("superseded-keeps-links", "Tombstone of a superseded record keeps superseded_by",
         sup_t),
        ("was-signed", "Tombstone of a signed record: the signature is cleared", signed_t),
        ("was-transitional", "Tombstone of a transitional record: archived, no block", trans_t),
    ]
    tests = [case(f"{name}/{cid}", comment, ["redaction"], ["RED-3", "RED-4", "RED-5"],
                  {"record": rec}, expected={"record": rec}) for cid, comment, rec in valid]
    t = fact_t
    bad: list[tuple[str, str, list[str], str, dict[str, Any]]] = [
        ("state-active", "A tombstone in state active", ["tombstone-content"], "RED-3",
         edit(t, state="active")),
        ("state-superseded", "A tombstone in state superseded", ["tombstone-content"], "RED-3",
         edit(sup_t, state="superseded")),
        ("body-kept", "The original body survived", ["tombstone-content"], "RED-3",
         edit(t, body=BASE["body"])),
        ("body-empty", "An empty body instead of [redacted]", ["tombstone-content"], "REC-5",
         edit(t, body="")),
        ("slots-kept", "Slots survived", ["tombstone-content"], "RED-3",
         edit(t, slots=BASE["slots"])),
        ("tags-kept", "Tags survived", ["tombstone-content"], "RED-3", edit(t, tags=["build"])),
        ("occurred-at-kept", "occurred_at survived", ["tombstone-content"], "RED-3",
         edit(t, occurred_at="2025-06-01T00:00:00.000Z")),
        ("provenance-kind", "Provenance kind is not redaction", ["tombstone-content"], "RED-3",
         edit(t, provenance={"kind": "conversation", "ref": None, "agent": None})),
        ("provenance-ref", "Provenance ref survived", ["tombstone-content"], "RED-3",
         edit(t, provenance={"kind": "redaction", "ref": "session-0002", "agent": None})),
        ("provenance-agent", "Provenance agent survived", ["tombstone-content"], "RED-3",
         edit(t, provenance={"kind": "redaction", "ref": None, "agent": A})),
        ("confidence", "Confidence is not 0.0000", ["tombstone-content"], "RED-3",
         edit(t, confidence="0.9000")),
        ("signed", "A tombstone carrying a signature", ["tombstone-content"], "RED-3",
         sign(t, KEY_A)),
        ("redacted-false", "redacted false alongside the other redaction fields",
         ["redaction-fields"], "RED-4", edit(t, redacted=False)),
        ("redacted-missing", "redaction_reason and birth_digest without redacted",
         ["redaction-fields"], "RED-4", without(t, "redacted")),
        ("redacted-string", "redacted is the string true", ["redaction-fields"], "RED-4",
         edit(t, redacted="true")),
        ("reason-missing", "No redaction_reason", ["redaction-fields"], "RED-4",
         without(t, "redaction_reason")),
        ("reason-empty", "An empty redaction_reason", ["redaction-fields"], "RED-4",
         edit(t, redaction_reason="")),
        ("digest-missing", "No birth_digest", ["redaction-fields"], "RED-4",
         without(t, "birth_digest")),
        ("digest-uppercase", "birth_digest in uppercase hex", ["redaction-fields"], "RED-4",
         edit(t, birth_digest=t["birth_digest"].upper())),
        ("digest-short", "birth_digest of 32 digits", ["redaction-fields"], "RED-4",
         edit(t, birth_digest=t["birth_digest"][:32])),
        ("plain-record-with-reason", "An ordinary record carrying redaction_reason",
         ["redaction-fields"], "RED-4", edit(BASE, redaction_reason=why)),
        ("plain-record-redacted-false", "An ordinary record carrying redacted: false (optional "
         "fields are absent when unset)", ["redaction-fields"], "RED-4",
         edit(BASE, redacted=False)),
        ("digest-of-another-record", "birth_digest of a different record",
         ["digest-mismatch"], "RED-5", edit(t, birth_digest=birth_digest(OTHER))),
        ("id-changed", "The id no longer matches birth_digest", ["digest-mismatch"], "RED-5",
         edit(t, id=OTHER["id"])),
    ]
    for cid, comment, flags, req, rec in bad:
        tests.append(case(f"{name}/reject-{cid}", comment, ["redaction", *flags], [req],
                          {"record": rec}, error="record"))
    return vector_file(name, "Redaction tombstones as records: the fields a tombstone keeps, "
                       "wipes and pins, and its id accepted on the strength of birth_digest.",
                       notes, [group("validate", "Tombstones through record validation",
                                     "validate_record", "format", tests)])


def build_all() -> list[dict[str, Any]]:
    return [_record_ids(), _records(), _tombstones()]

"""The SearchIndex and Embedder ports: bounded, ranked, deterministic, injection-proof."""

from __future__ import annotations

import math
from itertools import pairwise

import pytest

from memspec import MemspecError
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._machines import snapshot
from memspec.conformance._session import EngineSession

_NOISE = (
    "the kettle is in the left cupboard",
    "standup starts at nine every weekday",
    "the printer on floor two jams on thick paper",
    "descale the coffee machine once a month",
)


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (search-1, search-2, ...)."""
    return driver.configured(ref_prefix="search")


def _check_ranked(found: list[tuple[str, float]], what: str) -> None:
    ids = [rid for rid, _ in found]
    assert len(set(ids)) == len(ids), f"SRCH-1: {what} lists a record twice: {ids}"
    for (a, sa), (b, sb) in pairwise(found):
        assert sa >= sb, f"SRCH-1: {what} is not best first ({a} {sa} before {b} {sb})"
        if sa == sb:
            assert a < b, f"SRCH-4: {what} breaks the tie between {a} and {b} against id order"


@pytest.mark.requirement("SRCH-1")
def test_at_most_k_best_first(driver: Driver) -> None:
    stored = {driver.put(f"kettle {'kettle ' * i}note {i}")["id"] for i in range(6)}
    for body in _NOISE:
        stored.add(driver.put(body)["id"])
    for k in (0, 1, 2, 5, 50):
        found = driver.search("kettle", k)
        assert len(found) <= k, f"SRCH-1: search with k={k} returned {len(found)} candidates"
        assert {rid for rid, _ in found} <= stored, (
            f"SRCH-1: search returned ids that are not stored: "
            f"{sorted({rid for rid, _ in found} - stored)}"
        )
        _check_ranked(found, f"search('kettle', k={k})")
    assert len(driver.search("kettle", 5)) == 5, (
        "SRCH-1: with at least 6 matching records, search with k=5 returned fewer than 5"
    )
    top = driver.search("kettle", 1)
    assert top == driver.search("kettle", 50)[:1], (
        "SRCH-1: the best candidate for k=1 is not the first candidate for a larger k"
    )


@pytest.mark.requirement("SRCH-4")
def test_matches_rank_above_non_matches_ties_by_id(driver: Driver) -> None:
    noise = [driver.put(body)["id"] for body in _NOISE]
    twins = [driver.put("zebra crossing")["id"] for _ in range(3)]
    found = driver.search("zebra", 20)
    ids = [rid for rid, _ in found]
    assert set(twins) <= set(ids), (
        f"SRCH-4: search('zebra') missed records whose body contains zebra: "
        f"{sorted(set(twins) - set(ids))}"
    )
    last_match = max(ids.index(t) for t in twins)
    leaked = [rid for rid in ids[:last_match] if rid in noise]
    assert not leaked, f"SRCH-4: non-matching records {leaked} rank above a matching one"
    scores = {rid: score for rid, score in found}
    assert len({scores[t] for t in twins}) == 1, (
        f"SRCH-4: three records with identical text got different scores "
        f"{[scores[t] for t in twins]}"
    )
    positions = [ids.index(t) for t in sorted(twins)]
    assert positions == sorted(positions), (
        f"SRCH-4: equal-score candidates are not ordered by record id: {ids}"
    )
    _check_ranked(found, "search('zebra')")


@pytest.mark.requirement("SRCH-5")
def test_same_contents_same_candidates(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    records = [build.record("fact", body, created_at=clock.now(),
                            provenance={"kind": "observation", "ref": f"det-{i}", "agent": None})
               for i, body in enumerate([*_NOISE, "the kettle whistles", "kettle kettle",
                                         "the kettle whistles"])]
    queries = ("kettle", "the printer jams", "whistles kettle", "nothing matches this")
    runs: list[list[list[tuple[str, float]]]] = []
    for order in (records, records[::-1], records[2:] + records[:2]):
        engine.call("reset")
        for record in order:
            engine.call("put", record=record)
        runs.append([driver.search(q, 10) for q in queries])
        runs.append([driver.search(q, 10) for q in queries])
    for run in runs[1:]:
        for query, first, again in zip(queries, runs[0], run, strict=True):
            assert again == first, (
                f"SRCH-5: the same index contents gave different candidates for {query!r} "
                f"({first} vs {again}); ranking must not depend on insertion order or chance"
            )


@pytest.mark.requirement("SRCH-2")
def test_default_embedder_is_deterministic_and_normalized(engine: EngineSession) -> None:
    texts = ("the kettle is in the left cupboard", "Kettle", "ünïcödé 🦉 text", "a b c d e f",
             "x" * 2000)
    sizes = set()
    for text in texts:
        first = engine.call("embed", text=text)["vector"]
        again = engine.call("embed", text=text)["vector"]
        assert first == again, f"SRCH-2: embedding {text[:30]!r} twice gave different vectors"
        norm = math.sqrt(sum(x * x for x in first))
        assert abs(norm - 1.0) <= 1e-9, (
            f"SRCH-2: the vector of {text[:30]!r} has L2 norm {norm}, not 1"
        )
        sizes.add(len(first))
    for text in ("", "!!! ... ???"):
        vector = engine.call("embed", text=text)["vector"]
        norm = math.sqrt(sum(x * x for x in vector))
        assert norm == 0.0 or abs(norm - 1.0) <= 1e-9, (
            f"SRCH-2: the vector of {text!r} has L2 norm {norm}; it must be 1 or the zero vector"
        )
        sizes.add(len(vector))
    assert len(sizes) == 1, f"SRCH-2: the embedder's vectors have varying dimensions {sizes}"
    engine.call("reset")
    assert engine.call("embed", text=texts[0])["vector"] == engine.call(
        "embed", text=texts[0])["vector"], "SRCH-2: embedding changed after reset"


_INJECTIONS = (
    'zebra" OR "kettle', "zebra*", '"zebra', "zebra OR", "NOT zebra", "-zebra", "^zebra",
    "(zebra", "zebra)", "zebra NEAR/2 kettle", "NEAR(zebra kettle)", "body:zebra",
    "{body tags}: zebra", "zebra'); DROP TABLE records; --", "zebra' OR '1'='1", "zebra AND",
    "zebra:*", "zebra\\", "zebra %", "zebra _", "zebra\u0000",
)


@pytest.mark.requirement("SRCH-3")
def test_query_syntax_is_only_text(driver: Driver, engine: EngineSession) -> None:
    for body in _NOISE:
        driver.put(body)
    zebra = driver.put("zebra")
    before = snapshot(engine)
    for query in _INJECTIONS:
        try:
            found = driver.search(query, 10)
        except MemspecError as exc:  # an error here means the text was parsed as syntax
            raise AssertionError(
                f"SRCH-3: search({query!r}) failed ({exc}); raw query text must be treated as "
                "text, never as index query syntax"
            ) from None
        assert zebra["id"] in [rid for rid, _ in found], (
            f"SRCH-3: search({query!r}) did not find the record whose text is 'zebra'; the "
            "query's syntax characters changed what was searched"
        )
    for query in ('"', "*", "()", "AND", "NEAR", ":", "''", ""):
        try:
            driver.search(query, 10)
        except MemspecError as exc:
            raise AssertionError(
                f"SRCH-3: search({query!r}) failed ({exc}); query text is never syntax"
            ) from None
    assert snapshot(engine) == before, "SRCH-3: a search query changed the store"
    assert zebra["id"] in [rid for rid, _ in driver.search("zebra", 10)], (
        "SRCH-3: after the injection attempts a plain search no longer finds the record"
    )


@pytest.mark.requirement("SRCH-2")
def test_no_text_with_tokens_embeds_to_the_zero_vector(engine: EngineSession) -> None:
    # Two-token texts are where a signed hashing embedder can cancel out; the first pairs
    # are ones that cancel in the informative reference scheme, the sweep is for any other.
    texts = ["w8 w40", "w9 w42", "w5 w53", "w70 w72", "w17 w91"]
    texts += [f"w{i} w{j}" for i in range(0, 40, 3) for j in range(40, 130, 7)]
    for text in texts:
        vector = engine.call("embed", text=text)["vector"]
        norm = math.sqrt(sum(x * x for x in vector))
        assert abs(norm - 1.0) <= 1e-9, (
            f"SRCH-2: the text {text!r} has tokens but its vector has L2 norm {norm}; only a "
            "text with no tokens may embed to the zero vector (signs that cancel do not "
            "make an empty text)"
        )

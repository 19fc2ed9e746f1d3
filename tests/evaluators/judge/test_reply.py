"""A corpus of realistic odd judge replies: each parses to the right score or is a failure with a
cause — never a wrong score."""

from __future__ import annotations

import pytest

from touchstone.evaluators.judge.reply import Scale, parse_judge_reply

# (reply, expected score on 1-5, or None: must be a failure)
CORPUS: list[tuple[str, int | None]] = [
    # clean and nearly clean JSON
    ('{"reason": "All claims are in the context.", "score": 5}', 5),
    ('{"score": 3, "reason": "Half of it is supported."}', 3),
    ('  \n{"reason": "ok", "score": 4}\n\n', 4),
    ('{"reason":"ok","score":"4"}', 4),
    ('{"reason": "ok", "score": 4.0}', 4),
    ('{"Reason": "ok", "Score": 2}', 2),
    ('{"explanation": "fine", "rating": 5}', 5),
    ('{"reason": "mentions \\"score: 1\\" as a quote", "score": 4}', 4),
    ('{"reason": "It says {\\"a\\": 1}", "score": 3}', 3),
    ('{"reason": "ok", "score": 4, "confidence": 0.9}', 4),
    # code fences
    ('```json\n{"reason": "good", "score": 5}\n```', 5),
    ('```\n{"reason": "weak", "score": 2}\n```', 2),
    (
        'Here is my evaluation:\n```json\n{\n  "reason": "partly supported",\n'
        '  "score": 3\n}\n```\nLet me know!',
        3,
    ),
    # prose around JSON
    ('Sure! {"reason": "The reply covers both aspects.", "score": 5} Hope this helps.', 5),
    ('After reviewing the context carefully, my verdict is {"reason": "x", "score": 1}.', 1),
    ('I think the answer is good.\n\n{"reason": "good", "score": 4}\n\nThe score above reflects my view.', 4),
    # python-literal style
    ("{'reason': 'fine', 'score': 4}", 4),
    ("{'reason': \"it's fine\", 'score': 5}", 5),
    # slightly broken JSON that still clearly holds the score
    ('{"reason": "ok", "score": 4,}', 4),
    ('{"reason": "no closing brace on purpose", "score": 2,\n', 2),
    ('{"reason": "line\nbreak inside", "score": 3}', 3),
    # labelled prose
    ("Score: 4/5", 4),
    ("Score: 4", 4),
    ("score: 4", 4),
    ("**Score:** 5", 5),
    ("**Score**: 2/5\nThe response omits the price.", 2),
    ("Rating: 3 out of 5", 3),
    ("Final score: 1", 1),
    ("Reasoning: the claims match the documents.\nScore: 5", 5),
    ("The reply is mostly grounded. Score = 4", 4),
    ("I would give it a score of 3.", 3),
    ("The score is 2 because the reply contradicts the context.", 2),
    ("Rating (1-5): 4", 4),
    ("<score>2</score>", 2),
    ("<reason>Clear and fluent.</reason>\n<score>5</score>", 5),
    ("Score: 4/5. Score: 4/5 (repeated for clarity).", 4),
    # fractions
    ("4 out of 5", 4),
    ("I'd rate this 3/5 overall.", 3),
    ("The response deserves 5 out of 5.", 5),
    ("It covers 2/3 of the facts; overall 4/5.", 4),
    # a bare number
    ("4", 4),
    ("  3\n", 3),
    ("**5**", 5),
    # two different numbers: ambiguous
    ("Score: 3. On reflection, final score: 4.", None),
    ("Score: 4\nScore: 2", None),
    ('{"reason": "good", "score": 4}\nActually, Score: 2', None),
    ('{"reason": "a", "score": 4}\n{"reason": "b", "score": 2}', None),
    ('[{"score": 4}, {"score": 5}]', None),
    ("I'd say 3/5, maybe 4/5.", None),
    ("<score>3</score> ... <score>5</score>", None),
    # out of range or off the scale
    ('{"reason": "excellent", "score": 7}', None),
    ('{"reason": "terrible", "score": 0}', None),
    ('{"reason": "x", "score": -1}', None),
    ("Score: 8/10", None),
    ("Score: 6", None),
    ("9 out of 10", None),
    ("10", None),
    ('{"reason": "x", "score": "4/10"}', None),
    # not an integer of the scale
    ('{"reason": "between", "score": 3.5}', None),
    ("Score: 4.5", None),
    ('{"reason": "x", "score": true}', None),
    ('{"reason": "x", "score": null}', None),
    ('{"reason": "x", "score": "high"}', None),
    ('{"reason": "x", "score": [4]}', None),
    # empty and non-answers
    ("", None),
    ("   \n\t ", None),
    ("I cannot evaluate this response.", None),
    ("The response is good.", None),
    # truncated
    ('{"reason": "The response states that the lantern lasts 40 ho', None),
    ('{"reason": "ok", "score": ', None),
    ('{"reason": "ok", "score": 4', None),
    ('```json\n{"reason": "The claims about the war', None),
    # wrong schema
    ('{"answer": "yes"}', None),
    ('{"reason": "fine", "verdict": "grounded"}', None),
    ('{"reason": "fine", "grade": "A"}', None),
    ('{"result": "pass", "confidence": 4}', None),
    # numbers that are not the score
    ("The context lists 3 lanterns and the response mentions 2.", None),
    ("Scores range from 1-5; this one is good.", None),
    ("Score: 1-5 scale; I give it a good mark.", None),
    ("The Trailglow 300 runs 40 hours; the reply says 40. Looks right.", None),
]


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 50
    assert sum(1 for _, s in CORPUS if s is None) >= 25
    assert sum(1 for _, s in CORPUS if s is not None) >= 25


@pytest.mark.parametrize(("reply", "expected"), CORPUS, ids=[f"case{i}" for i in range(len(CORPUS))])
def test_reply_parses_to_the_right_score_or_fails(reply: str, expected: int | None) -> None:
    parsed = parse_judge_reply(reply, Scale(1, 5))
    if expected is None:
        assert not parsed.ok, f"{reply!r} should fail, got {parsed.score}"
        assert parsed.score is None
        assert parsed.error, "a failure must say why"
    else:
        assert parsed.ok, f"{reply!r}: {parsed.error}"
        assert parsed.score == expected
        assert isinstance(parsed.score, int)


@pytest.mark.parametrize(
    ("reply", "cause"),
    [
        ("", "empty"),
        ('{"reason": "x", "score": 7}', "outside"),
        ("Score: 3. Final score: 4", "ambiguous"),
        ("Score: 8/10", "scale other than"),
        ('{"reason": "x", "score": 3.5}', "not an integer"),
        ('{"answer": "yes"}', "no score field"),
        ('{"reason": "ok", "score": 4', "truncated"),
    ],
)
def test_failure_names_its_cause(reply: str, cause: str) -> None:
    assert cause in (parse_judge_reply(reply).error or "")


def test_other_scales_are_respected() -> None:
    assert parse_judge_reply("Score: 8/10", Scale(1, 10)).score == 8
    assert parse_judge_reply('{"score": 10}', Scale(1, 10)).score == 10
    assert parse_judge_reply("4 out of 5", Scale(1, 10)).ok is False
    assert parse_judge_reply('{"score": 0}', Scale(0, 3)).score == 0


def test_reason_and_span_are_kept() -> None:
    text = 'Sure. {"reason": "Both lanterns are named.", "score": 5}'
    parsed = parse_judge_reply(text)
    assert parsed.reason == "Both lanterns are named."
    assert parsed.span is not None and text[parsed.span[0] : parsed.span[1]] == "5"
    prose = parse_judge_reply("The reply cites the policy.\nScore: 4")
    assert prose.reason == "The reply cites the policy."


def test_require_json_refuses_prose() -> None:
    assert parse_judge_reply("Score: 4", require_json=True).ok is False
    assert parse_judge_reply('{"reason": "r", "score": 4}', require_json=True).data == {
        "reason": "r",
        "score": 4,
    }


def test_metric_named_field_is_accepted() -> None:
    assert parse_judge_reply('{"groundedness": 4, "reason": "x"}', score_keys=("groundedness",)).score == 4

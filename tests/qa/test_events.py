"""qa.jsonl: the fold of events into a status, incremental reading, torn lines, bad input."""

from __future__ import annotations

import json

import pytest

from mmconvert.errors import RunFolderError, UsageError
from mmconvert.qa.events import QaLog, event, fold


def ev(source, verdict, reason=None, item="x"):
    return event(item, source, verdict, reason or ("ok" if verdict == "accept" else "blank"))


def test_passing_checks_leave_an_item_pending_and_a_failed_one_rejects_it():
    assert fold([ev("auto:ocr", "accept"), ev("auto:image", "accept")]).status == "pending"
    state = fold([ev("auto:ocr", "accept"), ev("auto:image", "reject")])
    assert state.status == "rejected" and state.flagged and state.reasons() == ["blank"]


def test_reviewers_override_automatic_verdicts():
    state = fold([ev("auto:ocr", "reject", "ocr_mismatch"), ev("reviewer:ana", "accept")])
    assert state.status == "accepted" and state.flagged and state.reviewed
    state = fold([ev("auto:ocr", "accept"), ev("reviewer:ana", "reject", "unreadable")])
    assert state.status == "rejected" and state.reasons() == ["unreadable"]


def test_the_latest_event_of_a_source_counts():
    state = fold([ev("reviewer:ana", "reject", "layout"), ev("reviewer:ana", "accept")])
    assert state.status == "accepted" and len(state.reviewers) == 1


def test_reject_votes():
    votes = [ev("reviewer:a", "reject", "unreadable"), ev("reviewer:b", "reject", "layout")]
    assert fold(votes, reject_votes=2).status == "rejected"
    assert fold(votes[:1], reject_votes=2).status == "pending"
    # one rejecting vote of three needed, one accepting: accepted until two more reject
    assert fold(votes[:1] + [ev("reviewer:c", "accept")], reject_votes=3).status == "accepted"
    state = fold(votes + [ev("reviewer:c", "accept")], reject_votes=2)
    assert state.status == "rejected" and state.reasons() == ["layout", "unreadable"]


def test_log_reads_only_what_was_appended_since(tmp_path):
    log, other = QaLog(tmp_path), QaLog(tmp_path)
    assert log.append(ev("auto:ocr", "accept", item="a"), ev("auto:ocr", "reject",
                                                           "ocr_mismatch", item="b")) == {"a",
                                                                                          "b"}
    assert other.refresh() == {"a", "b"} and other.refresh() == set()
    other.append(ev("reviewer:z", "accept", item="b"))
    assert log.refresh() == {"b"} and log.status("b").status == "accepted"
    assert log.events == 3 and log.status("never").status == "pending"


def test_a_torn_last_line_is_cut_off_before_the_next_event(tmp_path):
    log = QaLog(tmp_path)
    log.append(ev("auto:ocr", "accept", item="a"))
    with open(log.path, "ab") as handle:
        handle.write(b'{"id": "b", "source": "auto:o')  # killed mid-write
    fresh = QaLog(tmp_path)
    assert fresh.refresh() == {"a"}  # the partial line is not read
    fresh.append(ev("auto:ocr", "accept", item="c"))
    lines = log.path.read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "c"]


def test_a_damaged_line_names_the_file_and_line(tmp_path):
    (tmp_path / "qa.jsonl").write_text('{"id": "a", "source": "auto:ocr", "verdict": "accept"}\n'
                                       '{"id": "b", "verdict": "maybe", "source": "x"}\n')
    with pytest.raises(RunFolderError, match=r"qa.jsonl line 2: not a QA event"):
        QaLog(tmp_path).refresh()


def test_bad_verdicts_reasons_and_votes_are_refused():
    with pytest.raises(UsageError, match="accept or reject"):
        event("a", "reviewer:x", "maybe", "ok")
    with pytest.raises(UsageError, match="lower-case code"):
        event("a", "reviewer:x", "reject", "Bad Reason")
    with pytest.raises(UsageError, match="at least 1"):
        QaLog(__import__("pathlib").Path("."), reject_votes=0)


def test_what_an_export_keeps(tmp_path):
    from mmconvert.qa.events import kept

    QaLog(tmp_path).append(ev("auto:ocr", "reject", "ocr_mismatch", item="b"),
                           ev("reviewer:ana", "accept", item="c"),
                           ev("reviewer:ana", "reject", "layout", item="d"),
                           ev("reviewer:bo", "accept", item="d"))
    ids = ["a", "b", "c", "d"]
    # b: only OCR disagreed, which marks it for review and never leaves it out on its own
    keep = kept(tmp_path, ids)
    assert (keep.ids, keep.left_out, keep.awaiting_review) == (["a", "b", "c"],
                                                               {"rejected": 1}, {"b"})
    keep = kept(tmp_path, ids, reject_votes=2)
    assert (keep.ids, keep.left_out) == (["a", "b", "c", "d"], {})
    keep = kept(tmp_path, ids, accepted_only=True)
    assert (keep.ids, keep.left_out, keep.awaiting_review) == (["c"], {"rejected": 1,
                                                                      "pending": 2}, set())


@pytest.mark.parametrize("reason", ["ocr_mismatch", "missing_option", "missing_question",
                                    "words_at_edge"])
def test_a_check_that_can_misread_marks_for_review_and_never_rejects(reason):
    state = fold([ev("auto:ocr", "reject", reason), ev("auto:image", "accept")])
    assert state.status == "pending" and state.flagged and state.awaiting_review
    assert state.reasons() == []
    # a certain failure beside it still rejects, and names only the certain reason
    state = fold([ev("auto:ocr", "reject", reason), ev("auto:text_layer", "reject", "tofu")])
    assert state.status == "rejected" and not state.awaiting_review
    assert state.reasons() == ["tofu"]
    # a reviewer's word ends the wait
    state = fold([ev("auto:ocr", "reject", reason), ev("reviewer:ana", "accept")])
    assert state.status == "accepted" and not state.awaiting_review


@pytest.mark.parametrize("check,reason", [("image", "blank"), ("text_layer", "tofu"),
                                          ("text_layer", "overflow"), ("image", "missing_image"),
                                          ("text_layer", "text_layer_mismatch"),
                                          ("image", "image_changed")])
def test_what_a_check_is_certain_of_rejects(check, reason):
    assert fold([ev(f"auto:{check}", "reject", reason)]).status == "rejected"


def _append_many(run: str, writer: int, threads: int, count: int) -> None:
    import threading
    from pathlib import Path

    from mmconvert.qa.events import REVIEWER, QaLog, event

    log = QaLog(Path(run))

    def work(thread: int) -> None:
        for n in range(count):
            log.append(event(f"item-{writer}-{thread}-{n}", REVIEWER + f"r{writer}", "accept",
                             "ok", {"note": "x" * (n % 7) * 300}))

    pool = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()


def test_appends_from_processes_and_threads_never_lose_or_glue_events(tmp_path):
    """Two writer processes of 12 threads each, and torn tails planted as a killed writer
    leaves them: every event is in the file once and every line parses."""
    import json
    import multiprocessing

    from mmconvert.qa.events import QaLog

    (tmp_path / "qa.jsonl").write_bytes(b'{"id": "torn", "sou')  # a writer killed mid-line
    context = multiprocessing.get_context("spawn")
    writers = [context.Process(target=_append_many, args=(str(tmp_path), w, 12, 60))
               for w in range(2)]
    for p in writers:
        p.start()
    for p in writers:
        p.join(120)
        assert p.exitcode == 0
    lines = (tmp_path / "qa.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""
    events = [json.loads(line) for line in lines[:-1]]
    ids = [e["id"] for e in events]
    assert len(ids) == len(set(ids)) == 2 * 12 * 60
    log = QaLog(tmp_path)
    assert len(log.refresh()) == 2 * 12 * 60


def test_a_torn_tail_longer_than_a_read_block_is_cut_whole(tmp_path):
    log = QaLog(tmp_path)
    log.append(ev("auto:ocr", "accept", item="a"))
    with open(log.path, "ab") as handle:  # a kill in the middle of a 200 KB event
        handle.write(b'{"id": "b", "source": "auto:ocr", "detail": {"h": "' + b"x" * 200_000)
    QaLog(tmp_path).append(ev("auto:ocr", "accept", item="c"))
    assert [json.loads(line)["id"] for line in log.path.read_text().splitlines()] == ["a", "c"]
    # a file that is one torn line and nothing else is emptied before the next event
    log.path.write_bytes(b'{"id": "d", "sou' + b"y" * 100_000)
    QaLog(tmp_path).append(ev("auto:ocr", "accept", item="e"))
    assert [json.loads(line)["id"] for line in log.path.read_text().splitlines()] == ["e"]


@pytest.mark.parametrize("line", ['{"id": ["a"], "source": "auto:ocr", "verdict": "accept", '
                                  '"reason": "ok"}',
                                  '{"id": "a", "source": 5, "verdict": "accept", "reason": "ok"}',
                                  '{"id": "a", "source": "auto:ocr", "verdict": "reject"}',
                                  '{"id": "a", "source": "auto:ocr", "verdict": "reject", '
                                  '"reason": "x", "detail": [1]}',
                                  '[1, 2]'])
def test_a_malformed_event_is_one_line_naming_its_line(tmp_path, line):
    (tmp_path / "qa.jsonl").write_text(line + "\n")
    with pytest.raises(RunFolderError, match=r"qa.jsonl line 1: not a QA event \("):
        QaLog(tmp_path).refresh()

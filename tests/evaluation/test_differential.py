"""One reply, one score everywhere (bench/scoring_differential.py): over 300 replies of every
family, whose true score is known, scored by a real ``mmconvert eval`` against a local server
and by each export's own code (lmms-eval's utils.py, the VLMEvalKit class, the inspect_ai
task's scorer, score.py): no disagreement between them, none with the truth."""

from __future__ import annotations

import pytest

pytest.importorskip("inspect_ai")


@pytest.mark.slow
def test_eval_and_every_export_give_one_score_the_true_one(tmp_path):
    from bench.scoring_differential import differential

    report = differential(tmp_path)
    assert report["replies"] >= 300, report["families"]
    assert set(report["families"]) == {"choice", "free", "babilong", "longbench", "niah",
                                       "spans"}
    assert report["eval_vs_export"] == {} and report["vs_truth"] == {}, report["examples"][:10]

"""Price table, cost from usage, and the budget guard."""

from __future__ import annotations

import json
import threading

import pytest

from mmconvert.api.prices import Budget, BudgetReached, Cost, PriceTable, estimate_tokens
from mmconvert.errors import UsageError


@pytest.fixture(scope="module")
def prices():
    return PriceTable.load()


def test_the_shipped_table_is_dated_and_prices_gpt_image_1(prices):
    assert prices.origin == "shipped" and prices.as_of == "2025-10-06"
    estimate = prices.image_estimate("gpt-image-1", "high", "1536x1024", "x" * 300)
    assert estimate.source == "table"
    assert estimate.usd == pytest.approx(0.25 + 100 * 5 / 1e6)
    assert prices.image_estimate("gpt-image-1", "low", "1024x1024", "").usd == 0.011
    assert prices.image_estimate("unknown-model", "high", "1024x1024", "") == Cost(None, "none")


def test_usage_reported_by_the_api_wins_over_the_estimate(prices):
    estimate = prices.image_estimate("gpt-image-1", "high", "1024x1536", "prompt")
    usage = {"input_tokens": 50, "output_tokens": 6240,
             "input_tokens_details": {"text_tokens": 40, "image_tokens": 10}}
    cost = prices.image_cost("gpt-image-1", usage, estimate)
    assert cost.source == "usage"
    assert cost.usd == pytest.approx((40 * 5 + 10 * 10 + 6240 * 40) / 1e6)
    assert prices.image_cost("gpt-image-1", None, estimate) == estimate
    chat = prices.chat_cost("gpt-4o-mini", {"prompt_tokens": 1000, "completion_tokens": 10},
                            Cost(1.0, "table"))
    assert chat.usd == pytest.approx((1000 * 0.15 + 10 * 0.6) / 1e6)


def test_token_estimates_err_high():
    assert estimate_tokens("The quick brown fox jumps.") >= 6
    assert estimate_tokens("逻辑推理题") == 5  # three bytes a character


def test_a_user_table_replaces_the_models_it_names(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"as_of": "2026-11-01", "models": {
        "gpt-image-1": {"per_million_tokens": {"text_input": 1, "output": 2},
                        "per_image": {"high": {"1024x1024": 0.5}}},
        "local-qwen": {"kind": "chat", "per_million_tokens": {"input": 0, "output": 0}}}}))
    table = PriceTable.load(path)
    assert table.as_of == "2026-11-01" and table.has("local-qwen") and table.has("gpt-4o")
    assert table.image_estimate("gpt-image-1", "high", "1024x1024", "").usd == 0.5


@pytest.mark.parametrize("content, message", [
    ("{", "not valid JSON (Expecting property name enclosed in double quotes, line 1)"),
    ('{"models": []}', 'expected {"models": {<name>: {...}}}'),
    ('{"models": {"m": {"per_million_tokens": {"input": -1}}}}',
     "models.m.per_million_tokens: expected a mapping of names to prices >= 0"),
])
def test_bad_price_tables_are_named(tmp_path, content, message):
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(UsageError) as caught:
        PriceTable.load(path)
    assert str(caught.value) == f"--price-table {path}: {message}"


def test_budget_reserves_settles_and_stays_stopped():
    budget = Budget(1.0)
    first = budget.reserve(Cost(0.6, "table"))
    with pytest.raises(BudgetReached, match=r"budget \$1.00 reached \(\$0.0000 spent\)"):
        budget.reserve(Cost(0.5, "table"))  # 0.6 reserved + 0.5 > 1
    budget.settle(first, Cost(0.3, "usage"))
    assert budget.spent == pytest.approx(0.3) and budget.reserved == pytest.approx(0)
    with pytest.raises(BudgetReached):  # once stopped, stopped
        budget.reserve(Cost(0.01, "table"))
    free = Budget(None)
    for _ in range(3):
        free.settle(free.reserve(Cost(10, "table")), Cost(10, "usage"))
    assert free.spent == 30


def test_budget_never_overspends_from_many_threads():
    budget = Budget(1.0)
    granted = []

    def spend():
        for _ in range(50):
            try:
                amount = budget.reserve(Cost(0.07, "table"))
            except BudgetReached:
                return
            granted.append(amount)
            budget.settle(amount, Cost(0.07, "usage"))

    threads = [threading.Thread(target=spend) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert budget.spent <= 1.0 + 1e-9 and len(granted) == 14

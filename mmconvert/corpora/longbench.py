"""LongBench (Bai et al.): long-context QA. The context becomes image; instruction and
question stay text. Rows are binned on their ``length`` field as ReadBench bins them, and by
default only rows below 8k (through the 4k–8k bin, ReadBench's choice) are kept. Without
``--subset``, ReadBench's English QA configs load; ``--language zh`` loads the Chinese QA configs
(multifieldqa_zh, dureader) and ``all`` both."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ..errors import ItemError
from ..items import Item, is_safe_id
from ..options import cli
from ..rows import Row
from ..scoring.answers import LONGBENCH_METRICS
from .base import CorpusOptions, LoadReport, LoadRequest, SubsetCorpus, text_field

# (upper bound, label): a row falls in the first bin whose bound exceeds its length
BINS = ((512, "0-512"), (1024, "512-1k"), (2048, "1k-2k"), (4096, "2k-4k"), (8192, "4k-8k"),
        (16384, "8k-16k"))
DEFAULT_MAX_LENGTH = 8192

LONGBENCH_CONFIGS = (
    "narrativeqa", "qasper", "multifieldqa_en", "multifieldqa_zh", "hotpotqa", "2wikimqa",
    "musique", "dureader", "gov_report", "qmsum", "multi_news", "vcsum", "trec", "triviaqa",
    "samsum", "lsht", "passage_count", "passage_retrieval_en", "passage_retrieval_zh", "lcc",
    "repobench-p", "qasper_e", "multifieldqa_en_e", "hotpotqa_e", "2wikimqa_e", "gov_report_e",
    "multi_news_e", "trec_e", "triviaqa_e", "samsum_e", "passage_count_e",
    "passage_retrieval_en_e", "lcc_e", "repobench-p_e",
)
# ReadBench's QA picks among the four tasks the issue names: the LongBench-E configs where
# they exist (spread evenly over length), NarrativeQA (no _e config) otherwise
DEFAULT_CONFIGS = ("2wikimqa_e", "hotpotqa_e", "narrativeqa", "triviaqa_e")
# --language zh: LongBench's Chinese QA tasks (single- and multi-document; no _e configs)
CHINESE_CONFIGS = ("multifieldqa_zh", "dureader")


def length_bin(length: int) -> str:
    for bound, label in BINS:
        if length < bound:
            return label
    return f"{BINS[-1][0] // 1024}k+"


class LongBenchOptions(CorpusOptions):
    language: Literal["en", "zh", "all"] | None = Field(
        None, description="the configs' language: en, zh or all",
        json_schema_extra=cli(default="en"))
    max_length: int | None = Field(
        None, ge=1, description="keep rows whose length is below this",
        json_schema_extra=cli(default="8192, through the 4k-8k bin"))


class LongBench(SubsetCorpus[LongBenchOptions]):
    options_model = LongBenchOptions
    name = "longbench"
    hub_id = "THUDM/LongBench"
    description = "LongBench QA (HotpotQA, 2WikiMQA, NarrativeQA, TriviaQA; long context)"
    render_part = "context"
    default_split = "test"
    subsets = LONGBENCH_CONFIGS
    default_subsets = DEFAULT_CONFIGS
    columns = (("input", "context", "answers", "length"),)

    def group(self, item: Item) -> str:
        return f"{item.subset}/{item.metadata['length_bin']}"

    def defaults(self, request: LoadRequest) -> tuple[str, ...]:
        """ReadBench's English QA configs; with --language zh the Chinese QA configs, with
        --language all both."""
        return {"zh": CHINESE_CONFIGS, "all": DEFAULT_CONFIGS + CHINESE_CONFIGS}.get(
            self.options_of(request).language or "en", DEFAULT_CONFIGS)

    def prompt_keys(self, item: Item) -> tuple[str, ...]:
        task = item.subset.removesuffix("_e")
        return (f"longbench/{task}", "longbench")

    def item(self, data, row, subset, split, item_id, request) -> Item:
        where = row.where
        native = data.get("_id")
        if isinstance(native, str) and is_safe_id(f"{subset}-{native}"):
            item_id = f"{subset}-{native}"
        context = text_field(data, "context", where)
        question = text_field(data, "input", where, required=False) or ""
        answers = data.get("answers")
        if hasattr(answers, "tolist"):
            answers = answers.tolist()
        if isinstance(answers, str):
            answers = [answers]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise ItemError("expected a list of answer strings", where=where, field="answers")
        length = data.get("length")
        if isinstance(length, str) and length.strip().isdigit():
            length = int(length)
        if not isinstance(length, int) or isinstance(length, bool) or length < 0:
            raise ItemError(f"length {length!r} is not a count of words", where=where,
                            field="length")
        language = text_field(data, "language", where, required=False) or "en"
        metadata = {"length": length, "length_bin": length_bin(length),
                    "dataset": data.get("dataset") or subset, "native_id": native}
        if data.get("all_classes") is not None:
            metadata["all_classes"] = list(data["all_classes"])
        return Item(id=item_id, corpus=self.name, subset=subset, split=split,
                    language=language, context=context, question=question, answer=answers,
                    metadata=metadata, origin=where)

    def scoring(self, row: Row) -> dict[str, Any]:
        """LongBench's own metric for the item's subset (its ``dataset2metric``: token F1 for
        the English QA tasks, jieba's words for multifieldqa_zh, ROUGE-L on jieba's words for
        dureader, ...), on the reply's answer line (the whole reply for a direct prompt)."""
        subset = row.subset.removesuffix("_e")
        metric = LONGBENCH_METRICS.get(subset, "qa_f1")
        spec: dict[str, Any] = {"kind": "free", "metric": f"longbench:{metric}",
                                "subset": subset}
        classes = row.metadata.get("all_classes")
        if classes:
            spec["all_classes"] = list(classes)
        return spec

    def keep(self, item: Item, request: LoadRequest, report: LoadReport) -> bool:
        options = self.options_of(request)
        language = options.language or "en"
        if language != "all" and item.language != language:
            report.dropped[f"language={item.language}"] += 1
            return False
        limit = options.max_length or DEFAULT_MAX_LENGTH
        if item.metadata["length"] >= limit:
            report.dropped[f"length>={limit}"] += 1
            return False
        return True

    def finish(self, request, report) -> None:
        options = self.options_of(request)
        limit = options.max_length or DEFAULT_MAX_LENGTH
        long = report.dropped.get(f"length>={limit}", 0)
        if long:
            report.notes.append(f"longbench: dropped {long} of {report.rows} rows of length "
                                f">= {limit} (--max-length changes the limit)")
        other = sum(v for k, v in report.dropped.items() if k.startswith("language="))
        if other:
            report.notes.append(f"longbench: dropped {other} rows not in "
                                f"{options.language or 'en'} (--language all keeps them)")

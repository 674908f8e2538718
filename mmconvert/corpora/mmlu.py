"""The MMLU family: MMLU (Hendrycks et al.), MMLU-Redux (Gema et al.: every row re-annotated
with an ``error_type``) and MMLU-Pro (Wang et al.: up to ten options)."""

from __future__ import annotations

import re
from typing import ClassVar

from pydantic import Field

from ..errors import ItemError, ItemFiltered
from ..items import Item
from .base import (
    CorpusOptions,
    LoadReport,
    LoadRequest,
    Rows,
    SubsetCorpus,
    answer_letter,
    options_field,
    text_field,
)
from .choices import lettered_options
from .sources import load_hub

MMLU_SUBJECTS = (
    "abstract_algebra", "anatomy", "astronomy", "business_ethics", "clinical_knowledge",
    "college_biology", "college_chemistry", "college_computer_science", "college_mathematics",
    "college_medicine", "college_physics", "computer_security", "conceptual_physics",
    "econometrics", "electrical_engineering", "elementary_mathematics", "formal_logic",
    "global_facts", "high_school_biology", "high_school_chemistry",
    "high_school_computer_science", "high_school_european_history", "high_school_geography",
    "high_school_government_and_politics", "high_school_macroeconomics",
    "high_school_mathematics", "high_school_microeconomics", "high_school_physics",
    "high_school_psychology", "high_school_statistics", "high_school_us_history",
    "high_school_world_history", "human_aging", "human_sexuality", "international_law",
    "jurisprudence", "logical_fallacies", "machine_learning", "management", "marketing",
    "medical_genetics", "miscellaneous", "moral_disputes", "moral_scenarios", "nutrition",
    "philosophy", "prehistory", "professional_accounting", "professional_law",
    "professional_medicine", "professional_psychology", "public_relations", "security_studies",
    "sociology", "us_foreign_policy", "virology", "world_religions",
)

MMLU_PRO_CATEGORIES = (
    "biology", "business", "chemistry", "computer_science", "economics", "engineering",
    "health", "history", "law", "math", "other", "philosophy", "physics", "psychology",
)

RAW_COLUMNS = ("question", "A", "B", "C", "D", "answer")


class MMLU(SubsetCorpus[CorpusOptions]):
    name = "mmlu"
    hub_id = "cais/mmlu"
    description = "MMLU: 57 subjects of 4-option questions (MCQ)"
    render_part = "options"
    default_split = "test"
    subsets = MMLU_SUBJECTS
    columns = (("question", "choices", "answer"),)
    csv_header = False  # the release CSVs have none: question, A, B, C, D, answer
    subset_column = "subject"

    def hub_groups(self, subsets: list[str], split: str) -> dict[str, Rows]:
        if list(subsets) == list(self.subsets):  # everything: one request, the "all" config
            groups = self.regroup({"all": load_hub(self.hub_id, "all", split)})
            return {s: groups[s] for s in subsets if s in groups}
        return super().hub_groups(subsets, split)

    def item(self, data, row, subset, split, item_id, request) -> Item:
        where = row.where
        if "choices" in data:  # hub schema
            question = text_field(data, "question", where)
            options = options_field(data.get("choices"), where, "choices")
        else:  # release CSV: six unnamed fields
            if len(data) != len(RAW_COLUMNS):
                raise ItemError(f"{len(data)} fields; an MMLU release row has 6 ("
                                f"{', '.join(RAW_COLUMNS)})", where=where)
            data = dict(zip(RAW_COLUMNS, data.values(), strict=True))
            question = text_field(data, "question", where)
            options = lettered_options(data, where)
        answer = answer_letter(data.get("answer"), len(options), where)
        return Item(id=item_id, corpus=self.name, subset=subset, split=split, language="en",
                    question=question, options=options, answer=answer,
                    metadata={"subject": subset}, origin=where)


def normalise_error_type(value: str | None) -> str:
    """Any spelling to snake case: ``Wrong Groundtruth`` → ``wrong_groundtruth``."""
    return re.sub(r"[\s\-]+", "_", (value or "").strip().lower())


class ReduxOptions(CorpusOptions):
    keep_flagged: bool = Field(False, description="keep rows whose error_type is not ok (a "
                                                  "wrong ground truth takes the annotated "
                                                  "correct answer)")


class MMLURedux(SubsetCorpus[ReduxOptions]):
    options_model = ReduxOptions
    name = "mmlu-redux"
    hub_id = "edinburgh-dawg/mmlu-redux-2.0"
    description = "MMLU-Redux 2.0: 57 MMLU subjects x 100 re-annotated questions (MCQ)"
    render_part = "options"
    default_split = "test"
    subsets = MMLU_SUBJECTS
    columns = (("question", "choices", "answer", "error_type"),)

    def file_subset(self, stem: str) -> str:
        """Release files are ``mmlu_<subject>.csv``."""
        return stem[5:] if stem.startswith("mmlu_") and stem[5:] in MMLU_SUBJECTS else stem

    def item(self, data, row, subset, split, item_id, request) -> Item:
        where = row.where
        question = text_field(data, "question", where)
        options = options_field(data.get("choices"), where, "choices")
        answer = answer_letter(data.get("answer"), len(options), where)
        error_type = normalise_error_type(text_field(data, "error_type", where, required=False))
        metadata = {"subject": subset, "error_type": error_type}
        for name in ("source", "correct_answer", "potential_reason"):
            value = data.get(name)
            if isinstance(value, str) and value.strip():
                metadata[name] = value
        if error_type == "wrong_groundtruth" and self.options_of(request).keep_flagged:
            corrected = _corrected(metadata.get("correct_answer"), options)
            if corrected is None:  # flagged wrong, and no answer to put in its place
                raise ItemFiltered(f"wrong_groundtruth with correct_answer "
                                   f"{metadata.get('correct_answer', '')!r}, which names no "
                                   "option: the item has no known answer", where=where,
                                   field="correct_answer", item_id=item_id,
                                   rule="no known answer")
            metadata["original_answer"] = answer
            answer = corrected
        return Item(id=item_id, corpus=self.name, subset=subset, split=split, language="en",
                    question=question, options=options, answer=answer, metadata=metadata,
                    origin=where)

    def keep(self, item: Item, request: LoadRequest, report: LoadReport) -> bool:
        status = item.metadata["error_type"]
        if status != "ok" and not self.options_of(request).keep_flagged:
            report.dropped[f"error_type={status}"] += 1
            return False
        return True

    def finish(self, request, report) -> None:
        dropped = sum(v for k, v in report.dropped.items() if k.startswith("error_type="))
        if dropped:
            report.notes.append(f"{self.name}: dropped {dropped} of {report.rows} rows flagged "
                                "by error_type (--keep-flagged keeps them)")


def _corrected(value: str | None, options: list[str]) -> str | None:
    """The annotators' correct answer as a letter, when it is an index, a letter or the exact
    text of an option; None when it is free text that names no option."""
    if not value:
        return None
    text = value.strip()
    try:
        return answer_letter(text, len(options), "")
    except ItemError:
        pass
    if text in options:
        return answer_letter(options.index(text), len(options), "")
    return None


class MMLUPro(SubsetCorpus[CorpusOptions]):
    name = "mmlu-pro"
    hub_id = "TIGER-Lab/MMLU-Pro"
    description = "MMLU-Pro: 14 categories of questions with up to 10 options (MCQ)"
    render_part = "options"
    default_split = "test"
    subsets = MMLU_PRO_CATEGORIES
    columns = (("question_id", "question", "options", "answer", "category"),)
    subset_column = "category"
    hub_single_config = "default"
    PADDING: ClassVar[str] = "N/A"
    MAX_OPTIONS: ClassVar[int] = 10

    def item(self, data, row, subset, split, item_id, request) -> Item:
        where = row.where
        native = data.get("question_id")
        if isinstance(native, int) and not isinstance(native, bool):
            item_id = f"{subset}-{native}"
        question = text_field(data, "question", where)
        options = options_field(data.get("options"), where, "options")
        if len(options) > self.MAX_OPTIONS:
            raise ItemError(f"{len(options)} options; MMLU-Pro has at most {self.MAX_OPTIONS}",
                            where=where, field="options", item_id=item_id)
        answer = answer_letter(data.get("answer"), len(options), where)
        index = data.get("answer_index")
        if isinstance(index, int) and answer_letter(index, len(options), where,
                                                    "answer_index") != answer:
            raise ItemError(f"answer {answer} disagrees with answer_index {index}", where=where,
                            field="answer", item_id=item_id)
        metadata = {"question_id": native, "category": data.get("category"),
                    "src": data.get("src")}
        padding = 0  # an older hub revision padded every row to ten options with "N/A"
        while len(options) - padding > 1 and options[-1 - padding] == self.PADDING:
            padding += 1
        if padding and ord(answer) - 65 < len(options) - padding:
            options = options[: len(options) - padding]
            metadata["padding_removed"] = padding
        if data.get("cot_content"):
            metadata["cot_content"] = data["cot_content"]
        return Item(id=item_id, corpus=self.name, subset=subset, split=split, language="en",
                    question=question, options=options, answer=answer, metadata=metadata,
                    origin=where)

"""MMLU-Redux (Gema et al.): MMLU questions re-annotated with an ``error_type`` per row."""

from __future__ import annotations

import re

from ..errors import ItemError, SourceError, UsageError
from ..items import Item, row_id
from .base import (
    Corpus,
    LoadReport,
    LoadRequest,
    RowGuard,
    answer_letter,
    options_field,
    text_field,
)
from .sources import Row, SourceFile, discover, is_saved_dataset, load_hub, read_saved, read_table

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

REQUIRED_COLUMNS = ("question", "choices", "answer", "error_type")


def normalise_error_type(value: str | None) -> str:
    """Any spelling to snake case: ``Wrong Groundtruth`` → ``wrong_groundtruth``."""
    return re.sub(r"[\s\-]+", "_", (value or "").strip().lower())


def _redux_subset(stem: str) -> tuple[str, str | None]:
    """Release files are ``mmlu_<subject>.csv``; hub-style shards are ``<split>-…``."""
    if stem.startswith("mmlu_") and stem[5:] in MMLU_SUBJECTS:
        return stem[5:], None
    return stem, None


class MMLURedux(Corpus):
    name = "mmlu-redux"
    hub_id = "edinburgh-dawg/mmlu-redux-2.0"
    description = "MMLU-Redux 2.0: 57 MMLU subjects x 100 re-annotated questions (MCQ)"
    render_part = "options"
    default_split = "test"
    subsets = MMLU_SUBJECTS

    def load(self, request: LoadRequest, report: LoadReport) -> list[Item]:
        split = request.split or self.default_split
        wanted = request.subsets
        if wanted:
            unknown = [s for s in wanted if s not in self.subsets]
            if unknown and request.source is None:
                from ..registry import Registry

                names = Registry("subset")
                for s in self.subsets:
                    names.register(s, s)
                raise UsageError(f"{self.name}: " + names.unknown_message(unknown[0]))
        groups = self._groups(request, split)
        if wanted:
            missing = [s for s in wanted if s not in groups]
            if missing:
                raise SourceError(f"{request.source}: no rows for subset {missing[0]!r} "
                                  f"(found: {', '.join(sorted(groups)) or 'none'})")
            groups = {s: groups[s] for s in wanted}
        guard = RowGuard(request, report)
        items: list[Item] = []
        for subset, rows in groups.items():
            width = max(3, len(str(len(rows) - 1)))
            for row in rows:
                report.rows += 1
                item = guard.convert(self.item, row, subset, split, width, request.keep_flagged)
                if item is None:
                    continue
                status = item.metadata["error_type"]
                if status != "ok" and not request.keep_flagged:
                    report.dropped[f"error_type={status}"] += 1
                    continue
                items.append(item)
        dropped = sum(report.dropped.values())
        if dropped:
            report.notes.append(f"{self.name}: dropped {dropped} of {report.rows} rows flagged by "
                                "error_type (--keep-flagged keeps them)")
        return items

    def _groups(self, request: LoadRequest, split: str) -> dict[str, list[Row]]:
        if request.source is None:
            subsets = request.subsets or list(self.subsets)
            return {s: load_hub(self.hub_id, s, split) for s in subsets}
        source = request.source
        if is_saved_dataset(source):
            return {_subset_name(source): read_saved(source, split).get(split, [])}
        if source.is_dir():
            saved = [p for p in sorted(source.iterdir()) if is_saved_dataset(p)]
            if saved:
                return {p.name: read_saved(p, split).get(split, []) for p in saved}
        groups: dict[str, list[Row]] = {}
        for found in discover(source, _redux_subset):
            if found.split not in (None, split):
                continue
            groups.setdefault(found.subset, []).extend(self._read(found))
        return groups

    def _read(self, found: SourceFile) -> list[Row]:
        rows = list(read_table(found.path))
        if rows and not rows[0].error:
            missing = [c for c in REQUIRED_COLUMNS if c not in rows[0].data]
            if missing:
                raise SourceError(f"{found.path}: missing column(s) {', '.join(missing)} "
                                  f"(an MMLU-Redux file has {', '.join(REQUIRED_COLUMNS)}, …)")
        return rows

    def item(self, row: Row, subset: str, split: str, width: int, keep_flagged: bool) -> Item:
        where = row.where
        item_id = row_id(subset, row.index, width)
        try:
            data = row.check()
            question = text_field(data, "question", where)
            options = options_field(data.get("choices"), where, "choices")
            answer = answer_letter(data.get("answer"), len(options), where)
        except ItemError as err:
            err.item_id = item_id
            raise
        error_type = normalise_error_type(text_field(data, "error_type", where, required=False))
        metadata = {"subject": subset, "error_type": error_type}
        for name in ("source", "correct_answer", "potential_reason"):
            value = data.get(name)
            if isinstance(value, str) and value.strip():
                metadata[name] = value
        if error_type == "wrong_groundtruth" and keep_flagged:
            corrected = _corrected(metadata.get("correct_answer"), options)
            if corrected is not None:
                metadata["original_answer"] = answer
                answer = corrected
        return Item(id=item_id, corpus=self.name, subset=subset, split=split, language="en",
                    question=question, options=options, answer=answer, metadata=metadata,
                    origin=where)


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


def _subset_name(path) -> str:
    name = path.name
    return name[5:] if name.startswith("mmlu_") else name

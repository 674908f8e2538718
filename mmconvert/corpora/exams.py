"""Chinese exam-style multiple choice: CMMLU (Simplified Chinese), and C-Eval in Traditional
script and TMMLU+ (Traditional Chinese, as VisTW uses them). One column per option letter."""

from __future__ import annotations

from typing import ClassVar

from ..items import Item
from .base import (
    SPLIT_ALIASES,
    CorpusOptions,
    SubsetCorpus,
    answer_letter,
    text_field,
)
from .choices import lettered_options

CMMLU_SUBJECTS = (
    "agronomy", "anatomy", "ancient_chinese", "arts", "astronomy", "business_ethics",
    "chinese_civil_service_exam", "chinese_driving_rule", "chinese_food_culture",
    "chinese_foreign_policy", "chinese_history", "chinese_literature",
    "chinese_teacher_qualification", "clinical_knowledge", "college_actuarial_science",
    "college_education", "college_engineering_hydrology", "college_law", "college_mathematics",
    "college_medical_statistics", "college_medicine", "computer_science", "computer_security",
    "conceptual_physics", "construction_project_management", "economics", "education",
    "electrical_engineering", "elementary_chinese", "elementary_commonsense",
    "elementary_information_and_technology", "elementary_mathematics", "ethnology",
    "food_science", "genetics", "global_facts", "high_school_biology", "high_school_chemistry",
    "high_school_geography", "high_school_mathematics", "high_school_physics",
    "high_school_politics", "human_sexuality", "international_law", "journalism",
    "jurisprudence", "legal_and_moral_basis", "logical", "machine_learning", "management",
    "marketing", "marxist_theory", "modern_chinese", "nutrition", "philosophy",
    "professional_accounting", "professional_law", "professional_medicine",
    "professional_psychology", "public_relations", "security_study", "sociology",
    "sports_science", "traditional_chinese_medicine", "virology", "world_history",
    "world_religions",
)

CEVAL_SUBJECTS = (
    "accountant", "advanced_mathematics", "art_studies", "basic_medicine",
    "business_administration", "chinese_language_and_literature", "civil_servant",
    "clinical_medicine", "college_chemistry", "college_economics", "college_physics",
    "college_programming", "computer_architecture", "computer_network", "discrete_mathematics",
    "education_science", "electrical_engineer", "environmental_impact_assessment_engineer",
    "fire_engineer", "high_school_biology", "high_school_chemistry", "high_school_chinese",
    "high_school_geography", "high_school_history", "high_school_mathematics",
    "high_school_physics", "high_school_politics", "ideological_and_moral_cultivation", "law",
    "legal_professional", "logic", "mao_zedong_thought", "marxism", "metrology_engineer",
    "middle_school_biology", "middle_school_chemistry", "middle_school_geography",
    "middle_school_history", "middle_school_mathematics", "middle_school_physics",
    "middle_school_politics", "modern_chinese_history", "operating_system", "physician",
    "plant_protection", "probability_and_statistics", "professional_tour_guide",
    "sports_science", "tax_accountant", "teacher_qualification", "urban_and_rural_planner",
    "veterinary_medicine",
)

TMMLUPLUS_SUBJECTS = (
    "engineering_math", "dentistry", "traditional_chinese_medicine_clinical_medicine",
    "clinical_psychology", "technical", "culinary_skills", "mechanical", "logic_reasoning",
    "real_estate", "general_principles_of_law", "finance_banking", "anti_money_laundering",
    "ttqav2", "marketing_management", "business_management", "organic_chemistry",
    "advance_chemistry", "physics", "secondary_physics", "human_behavior",
    "national_protection", "jce_humanities", "politic_science", "agriculture",
    "official_document_management", "financial_analysis", "pharmacy",
    "educational_psychology", "statistics_and_machine_learning", "management_accounting",
    "introduction_to_law", "computer_science", "veterinary_pathology", "accounting",
    "fire_science", "optometry", "insurance_studies", "pharmacology", "taxation",
    "education_(profession_level)", "economics", "veterinary_pharmacology", "nautical_science",
    "occupational_therapy_for_psychological_disorders", "trust_practice",
    "geography_of_taiwan", "physical_education", "auditing", "administrative_law",
    "basic_medical_science", "macroeconomics", "trade", "chinese_language_and_literature",
    "tve_design", "junior_science_exam", "junior_math_exam", "junior_chinese_exam",
    "junior_social_studies", "tve_mathematics", "tve_chinese_language", "tve_natural_sciences",
    "junior_chemistry", "music", "education", "three_principles_of_people",
    "taiwanese_hokkien",
)


class ExamCorpus(SubsetCorpus[CorpusOptions]):
    """Rows of ``question, A, B, C, D, answer`` (column names per corpus)."""

    render_part = "options"
    question_column: ClassVar[str] = "question"
    answer_column: ClassVar[str] = "answer"
    language: ClassVar[str] = "zh"
    native_id_column: ClassVar[str | None] = None

    def item(self, data, row, subset, split, item_id, request) -> Item:
        where = row.where
        native = data.get(self.native_id_column) if self.native_id_column else None
        if isinstance(native, str) and native.strip().isdigit():
            native = int(native)
        if isinstance(native, int) and not isinstance(native, bool):
            item_id = f"{subset}-{native:0{len(item_id) - len(subset) - 1}d}"
        question = text_field(data, self.question_column, where)
        options = lettered_options(data, where)
        raw_answer = data.get(self.answer_column)
        if raw_answer in (None, "") and split == "test" and self.hidden_test_answers:
            answer = None  # the test split keeps its answers private
        else:
            answer = answer_letter(raw_answer, len(options), where, self.answer_column)
        metadata = {"subject": subset}
        if native is not None:
            metadata["native_id"] = native
        if data.get("explanation"):
            metadata["explanation"] = data["explanation"]
        return Item(id=item_id, corpus=self.name, subset=subset, split=split,
                    language=self.language, question=question, options=options, answer=answer,
                    metadata=metadata, origin=where)

    hidden_test_answers: ClassVar[bool] = False

    language_prompts = True


class CMMLU(ExamCorpus):
    name = "cmmlu"
    hub_id = "haonan-li/cmmlu"
    description = "CMMLU: 67 subjects of Simplified Chinese exam questions (MCQ)"
    default_split = "test"
    subsets = CMMLU_SUBJECTS
    columns = (("Question", "A", "B", "C", "D", "Answer"),)
    question_column = "Question"
    answer_column = "Answer"
    language = "zh"


class CEvalZhTW(ExamCorpus):
    name = "ceval-zhtw"
    hub_id = "erhwenkuo/ceval-exam-zhtw"
    description = "C-Eval in Traditional script: 52 subjects of exam questions (MCQ)"
    default_split = "val"
    subsets = CEVAL_SUBJECTS
    columns = (("question", "A", "B", "C", "D", "answer"),)
    language = "zh-TW"
    native_id_column = "id"
    hidden_test_answers = True


class TMMLUPlus(ExamCorpus):
    name = "tmmluplus"
    hub_id = "ikala/tmmluplus"
    description = "TMMLU+: 66 subjects of Traditional Chinese exam questions (MCQ)"
    default_split = "test"
    subsets = TMMLUPLUS_SUBJECTS
    columns = (("question", "A", "B", "C", "D", "answer"),)
    language = "zh-TW"
    # release files are <subject>_{dev,val,test}.csv; the hub calls dev "train"
    split_aliases = {**SPLIT_ALIASES, "dev": "train"}

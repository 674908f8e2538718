"""How lm-eval's task configs fall under mmconvert's rules for ``render lm-eval:TASK``.

Reads every task config lm-eval ships (its YAML with its includes, offline: no data, no task
built) and counts: the output types (multiple choice and generation are taken; loglikelihood
and rolling ones are refused), and for multiple choice the forms ``render lm-eval:`` meets:
choices as texts (the options), choices as bare letters with the options listed in the
prompt as "A. …" lines (read back from it), bare letters with no such lines (the letters stay
the options), and a ``doc_to_text`` written as a Python function (text for most; an index for
the partial-scoring family, WinoGrande and its forks, which is refused).

A static count of the configs: it converts no doc. ``bench/lm_eval_share.py`` builds each
multiple-choice config and converts a doc of its schema; the docs of the tasks whose data the
tests hold are checked against lm-eval's own objects in ``tests/corpora/test_lmeval.py``.

    python bench/lm_eval_tasks.py
"""

from __future__ import annotations

import re
import time
from collections import Counter, defaultdict

from mmconvert.corpora.lmeval import is_letters, task_config, task_manager

LISTED = re.compile(r"(^|\n)\s*\(?A[.)：:]\s?\{\{|A[.)]\s?\{\{")


def form(config: dict) -> str:
    text, choices = config.get("doc_to_text"), config.get("doc_to_choice")
    if isinstance(text, str) and ("{{" not in text) and "." in text and "/" in text:
        return "doc_to_text is a Python function"
    if isinstance(choices, list) and all(isinstance(c, str) for c in choices) \
            and is_letters(choices):
        return ("letters, options listed in the prompt" if LISTED.search(str(text))
                else "letters, no option lines in the prompt")
    return "choices are texts"


def main() -> None:
    start = time.perf_counter()
    manager = task_manager()
    indexed = time.perf_counter() - start
    kinds: Counter = Counter()
    forms: Counter = Counter()
    families: dict[str, Counter] = defaultdict(Counter)
    for name in manager.all_subtasks:
        config = task_config(name)
        if config is None:
            kinds["(a Python task class, no YAML)"] += 1
            continue
        kind = config.get("output_type", "generate_until")
        kinds[kind] += 1
        if kind == "multiple_choice":
            found = form(config)
            forms[found] += 1
            families[found][name.split("_")[0]] += 1
    total = sum(kinds.values())
    print(f"lm-eval task configs: {total} subtasks (index {indexed:.1f} s, "
          f"read in {time.perf_counter() - start - indexed:.1f} s)")
    for kind, count in kinds.most_common():
        print(f"  {kind:<34} {count:>6}  {100 * count / total:5.1f} %")
    mcq = kinds["multiple_choice"]
    print(f"multiple choice: {mcq}")
    for found, count in forms.most_common():
        top = ", ".join(f"{f} {n}" for f, n in families[found].most_common(5))
        print(f"  {found:<42} {count:>6}  {100 * count / mcq:5.1f} %   ({top})")


if __name__ == "__main__":
    main()

"""What the reports need of the per-language facts of ``configs/languages.libsonnet`` (titles,
notes, corpus variants, paper Table 1 counts), and the builder's condition lists.

The facts are read once, by `steps.data.languages.language_facts` (``languages`` here); nothing
about a language is written in Python.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from steps.data.languages import language_facts as languages

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def paper_languages() -> Dict[str, dict]:
    """The paper's five languages: those with a Table 1 count (by name; column order is the paper
    tables' business, configs/paper_tables.json)."""
    return {name: facts for name, facts in languages().items() if "paper_train_tokens" in facts}


def short_title(column: str) -> str:
    """A table header for a language column (or "avg", or a PrOnto column such as "spanish")."""
    if column == "avg":
        return "Avg."
    facts = languages().get(column)
    if facts:
        return facts["short_title"]
    language, variant = variant_of(column)
    title = languages()[language].get("variant_titles", {}).get(variant) if language else None
    return title or column.replace("_", " ").title()


def language_of_file(path: str) -> Optional[str]:
    """The language of an experiment file, from its name (``<language>_<condition>.jsonnet``), or None."""
    stem = Path(path).stem
    return max((name for name in languages() if stem.startswith(name + "_")), key=len, default=None)


def variant_of(column: str) -> Tuple[Optional[str], Optional[str]]:
    """(language, corpus variant) of a variant's column ("coptic_leakfree" → ("coptic", "leakfree")),
    or (None, None)."""
    for name, facts in languages().items():
        if column.startswith(name + "_") and column[len(name) + 1:] in facts.get("corpus_variants", {}):
            return name, column[len(name) + 1:]
    return None, None


def builder_conditions(field: str = "conditions") -> List[str]:
    """The Table 2 conditions the builder accepts (configs/lib.libsonnet `conditions`), or another
    list of it (``"related_conditions"``: the related biases)."""
    from rjsonnet import evaluate_snippet

    return json.loads(evaluate_snippet("conditions", f'(import "{(CONFIGS / "lib.libsonnet").as_posix()}").{field}'))



def related_conditions() -> List[str]:
    """The related-biases table's conditions (configs/conditions.libsonnet `related`)."""
    from rjsonnet import evaluate_file

    return json.loads(evaluate_file(str(CONFIGS / "conditions.libsonnet")))["related"]

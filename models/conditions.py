"""A paper condition, parsed once: which objectives it trains and which attention variant it uses.

A condition is objective letters, optionally followed by ``-<SUFFIX>`` naming a registered attention
variant: "MXPT-SLA" = objectives M, X, P, T with the ``"sla"`` variant.  Exactly one letter is a
masked-LM objective: M (every paper condition), or one of Edman et al.'s local variants of it,
C<c> (limited context, written with its window size: "C5") or H (n-gram soft labels); C<c> trains
alone.  Edman et al.'s band attention is an attention variant: "M-A5" = M with the ``"band5"``
variant.  A "µB-" prefix (the paper's row names) is accepted.  Everything that needs to
know what a condition implies (the pretraining step, the tables, and through
``configs/conditions.libsonnet`` the Jsonnet builder) reads a `Condition`.
"""

from __future__ import annotations

from dataclasses import dataclass

from .attention import attention_variant, variant_for_suffix
from .objectives import OBJECTIVES, check_objectives, objectives_for

ROW_PREFIXES = ("µB-", "μB-", "uB-", "ub-")


@dataclass(frozen=True)
class Condition:
    """objectives: letters as written (e.g. "MXPT"); attention: attention-registry name or None."""

    objectives: str
    attention: str | None

    @property
    def name(self) -> str:
        """The canonical spelling, e.g. "MXPT-SLA"."""
        variant = attention_variant(self.attention)
        return self.objectives + (f"-{variant.condition_suffix}" if variant is not None else "")

    @property
    def encoder_needs_parse(self) -> bool:
        """The encoder's attention reads a parse, so fine-tuning must supply one too."""
        variant = attention_variant(self.attention)
        return variant is not None and variant.needs_parse

    @property
    def needs_parse(self) -> bool:
        """Pretraining needs parsed trees (for an objective or for the attention)."""
        return self.encoder_needs_parse or any(objective.needs_parse for objective in objectives_for(self.objectives))

    @property
    def needs_gold_xpos(self) -> bool:
        return any(objective.needs_gold_xpos for objective in objectives_for(self.objectives))

    def config_fields(self) -> dict:
        """The `MicroBertConfig` fields the condition fixes."""
        return {"pretraining_objectives": self.objectives, "syntax_attention": self.attention}


def parse_condition(condition: str) -> Condition:
    """"MXPT-SLA", "µB-MPT", "M" → `Condition`; ValueError for anything else."""
    name = condition.strip()
    for prefix in ROW_PREFIXES:
        if name.startswith(prefix):
            name = name[len(prefix):]
    letters, dash, suffix = name.partition("-")
    variant = variant_for_suffix(suffix) if dash else None
    try:
        objectives = check_objectives(letters)
        valid = not (dash and variant is None) and not (variant is not None and any(o.standalone for o in objectives))
    except ValueError:
        valid = False
    if not valid:
        suffixes = ", ".join(f"-{v}" for v in _suffixes())
        raise ValueError(
            f"unrecognised condition {condition!r}; expected objective letters of {''.join(OBJECTIVES)!r} with one "
            f"masked-LM objective (e.g. 'M', 'MXPT', 'C5', 'H'), optionally with an attention suffix ({suffixes})"
        )
    # Letters keep the order they were written in (the config field has always done so); losses
    # are computed in registry order whatever it is.
    return Condition(objectives=letters, attention=variant.name if variant is not None else None)


def _suffixes() -> list[str]:
    from .attention import ATTENTION_VARIANTS

    return [variant.condition_suffix for variant in ATTENTION_VARIANTS.values()]


__all__ = ["Condition", "parse_condition"]

"""Attention variants: a registry name (``config.syntax_attention``) → builder of an `AttentionModifier`.

To add one: a module here (or anywhere imported before use) with one `register_attention` call.
"""

from .base import (
    ATTENTION_VARIANTS,
    AttentionInputs,
    AttentionModifier,
    AttentionVariant,
    RelativePositionKeys,
    attention_needs_parse,
    attention_variant,
    register_attention,
    variant_for_suffix,
)
from . import sla  # noqa: F401,E402  (registers "sla")
from . import band  # noqa: F401,E402  (registers "band5", "band9", "band13": conditions M-A5, M-A9, M-A13)
from . import syntax_gat  # noqa: F401,E402  (registers "syntax_gat", condition suffix "G")
from . import transformer_grammar  # noqa: F401,E402  (registers "tg" and "causal")

__all__ = [
    "ATTENTION_VARIANTS",
    "AttentionInputs",
    "AttentionModifier",
    "AttentionVariant",
    "RelativePositionKeys",
    "attention_needs_parse",
    "attention_variant",
    "register_attention",
    "variant_for_suffix",
]

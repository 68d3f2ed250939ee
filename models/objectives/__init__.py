"""Pretraining objectives: a registry letter (M, X, P, T, S) → objective class (see `base`).

Registration order (M, X, P, T, S, then C, H) is the order losses are computed and summed in.
"""

from .base import (
    DEV_AVERAGES,
    OBJECTIVES,
    PER_BATCH,
    PER_LABELLED_ROW,
    PER_MASKED_TOKEN,
    ObjectiveInputs,
    ObjectiveLoss,
    PretrainingObjective,
    check_objectives,
    objective_sizes,
    objectives_for,
    register_objective,
)
from .mlm import MaskedLanguageModelling, MicroBertMLMHead  # noqa: E402  (registers M)
from .xpos import MicroBertXposHead, ScalarMix, XposTagging, mean_pool_words, sequence_cross_entropy  # noqa: E402  (X)
from .synclm import (  # noqa: E402  (registers P, T)
    PhraseContrastive,
    TreeContrastive,
    info_nce_loss,
    masked_jsd,
    phrase_loss,
    phrase_similarity,
    tree_loss,
    tree_similarity,
)
from .structural_probe import StructuralProbeLoss  # noqa: E402  (registers S)

# After P and T: new objectives register last so the paper conditions' loss order never changes.
from .limited_context import LimitedContextMLM, limited_context_windows  # noqa: E402  (registers C)
from .soft_labels import SoftLabelMLM, soft_target_cross_entropy  # noqa: E402  (registers H)

__all__ = [
    "DEV_AVERAGES", "OBJECTIVES", "PER_BATCH", "PER_LABELLED_ROW", "PER_MASKED_TOKEN",
    "MaskedLanguageModelling", "MicroBertMLMHead", "MicroBertXposHead", "ObjectiveInputs", "ObjectiveLoss",
    "PhraseContrastive", "PretrainingObjective", "ScalarMix", "StructuralProbeLoss", "TreeContrastive", "XposTagging",
    "info_nce_loss", "masked_jsd", "mean_pool_words", "objectives_for", "phrase_loss", "phrase_similarity",
    "register_objective", "sequence_cross_entropy", "check_objectives", "objective_sizes",
    "LimitedContextMLM", "limited_context_windows", "SoftLabelMLM", "soft_target_cross_entropy", "tree_loss", "tree_similarity",
]

"""Configuration for MicroBERT encoders with optional syntax-aware attention.

The defaults are the µB size of the reference code (hidden 128, 3 layers, 8 heads of 16 dims, intermediate 512,
512 positions).  Everything else is a `BertConfig` default (GELU, dropout 0.1).

Two settings deviate from the reference deliberately:

* `position_embedding_type` defaults to ``"absolute"``.  transformers 5 dropped relative position
  embeddings from `BertModel`, and an encoder pretrained without SLA must load with stock
  `transformers.AutoModel`.  The reference's ``"relative_key_query"`` stays available as an
  explicit option, implemented in `modeling_microbert.MicroBertSelfAttention`; such encoders are
  saved as ``model_type="microbert"``.
* SLA's [SEP] row and its "no parse" behaviour are explicit choices (see `sla_without_parse` and
  `trees.sla_allowed_mask`), not the reference's silent fallback to global attention when no parse is given.
"""

from transformers import BertConfig

from .attention import ATTENTION_VARIANTS
from .attention.syntax_gat import GAT_FUSIONS
from .objectives import check_objectives

POSITION_EMBEDDING_TYPES = ("absolute", "relative_key_query", "none")
SLA_WITHOUT_PARSE_MODES = ("error", "global")
PHRASE_SIMILARITIES = ("paper", "reference")


class MicroBertConfig(BertConfig):
    r"""
    Config of a `MicroBertModel`: a `BertConfig` with µB defaults plus the attention-variant fields.

    Args:
        syntax_attention (`str` or `None`, defaults to `None`):
            `None` for plain self-attention, or the name of a registered attention variant
            (`models.attention`), e.g. ``"sla"`` for syntax-aware local attention (paper Appendix A.1,
            Eq. 4-8).  A variant with gates (SLA) adds one `Linear(hidden, 1)` per layer.
        sla_max_distance (`int`, defaults to 4):
            δ of paper Eq. 5: a key is visible to the local branch iff its windowed tree distance is ≤ δ.
        sla_window (`int`, defaults to 1):
            Half-width w of the window of Eq. 4: D'(i, j) = min over k in {i-w, ..., i+w} of D(k, j).
            ``1`` is the paper's {i-1, i, i+1}; ``0`` disables windowing.
        sla_reference_window (`bool`, defaults to `False`):
            Reproduce the reference code's window {i-1, i} (a known bug) instead of the symmetric one.
        sla_without_parse (`str`, defaults to ``"error"``):
            What a model whose attention variant needs a parse (SLA) does when `forward` gets none
            (e.g. fine-tuning without parses; the name is historic, kept for saved configs):
            ``"error"`` raises; ``"global"`` runs plain global attention and ignores the gates.
            The reference silently did the latter; here it has to be asked for.
        band_reading (`str`, defaults to ``"half_width"``):
            For the band variants (``"band5"`` …, Edman et al. NLM-A): ``"half_width"`` lets query i see
            keys with |i−j| ≤ (c−1)/2 (the paper's worked example); ``"literal"``: |i−j| ≤ c (its Eq. 2).
        position_embedding_type (`str`, defaults to ``"absolute"``):
            ``"absolute"`` (stock BERT) or ``"relative_key_query"`` (the reference's setting:
            no absolute position embeddings are added; each layer has a (2·max_positions−1)×head_dim
            distance table used on both queries and keys, as in transformers 4.x), or ``"none"``: no
            position information in the encoder at all (Transformer-Grammar LMs add their own relative
            scores through the attention hook, `models.transformer_grammar`).
        pretraining_objectives (`str`, defaults to ``"M"``):
            Letters of the registered objectives (`models.objectives`) whose losses
            `MicroBertForPretraining` sums (paper §4): M = MLM, X = XPOS tagging, P = SynCLM phrase
            loss, T = SynCLM tree loss; and Edman et al.'s masked-LM variants (Edman et al., §2): C<c> =
            limited-context MLM in c-token windows (trains alone), H = MLM on trigram soft labels.
            Exactly one masked-LM objective (M, C<c> or H).  SLA and the band A<c> are
            `syntax_attention`, not letters.
        num_xpos_labels (`int`, defaults to 0):
            Size of the XPOS tag set; required (> 0) when X is among the objectives.
        phrase_similarity (`str`, defaults to ``"paper"``):
            ``"paper"``: sim = −JSD on pre-dropout attention (Eq. 11, summed over keys with no division);
            ``"reference"``: sim = +JSD/n on post-dropout attention (the reference code's sign bug).
        contrastive_temperature (`float`, defaults to 0.1): τ of InfoNCE (Eq. 10) for P and T.
        phrase_max_negatives (`int`, defaults to 10), tree_max_negatives (`int`, defaults to 10),
        tree_top_k (`int`, defaults to 3): sampler and loss sizes of the reference's SynCLM configuration.
        gat_max_distance (`int`, defaults to 4), gat_syntax_heads (`int`, defaults to 1),
        gat_fusion (`str`, defaults to ``"key_value"``), gat_layers (`int`, defaults to 4),
        gat_heads (`int`, defaults to 4), gat_head_size (`int` or `None`), gat_use_upos (`bool`,
        defaults to `True`), gat_probe_weight (`float`, defaults to 0.5), gat_probe_rank (`int` or `None`):
            Syntax-guided attention (``syntax_attention="syntax_gat"``, condition suffix -G; Ahmad et al., 2021,
            `models.attention.syntax_gat`): GAT mask δ, number of syntax heads n_syn per layer, fusion
            into keys+values (the reference code) or ``"query_key"`` (the paper), GAT layers L_G, heads k,
            head width d_g (None = the encoder's head width, the reference's rule), whether UPOS tags
            are embedded, structural-probe weight α and rank (None = d_g) of the S objective.
    """

    model_type = "microbert"

    vocab_size: int = 8000
    hidden_size: int = 128
    num_hidden_layers: int = 3
    num_attention_heads: int = 8
    intermediate_size: int = 512
    max_position_embeddings: int = 512

    position_embedding_type: str = "absolute"
    syntax_attention: str | None = None
    sla_max_distance: int = 4
    sla_window: int = 1
    sla_reference_window: bool = False
    sla_without_parse: str = "error"
    band_reading: str = "half_width"

    pretraining_objectives: str = "M"
    num_xpos_labels: int = 0
    phrase_similarity: str = "paper"
    contrastive_temperature: float = 0.1
    phrase_max_negatives: int = 10
    tree_max_negatives: int = 10
    tree_top_k: int = 3

    gat_max_distance: int = 4
    gat_syntax_heads: int = 1
    gat_fusion: str = "key_value"
    gat_layers: int = 4
    gat_heads: int = 4
    gat_head_size: int | None = None
    gat_use_upos: bool = True
    gat_probe_weight: float = 0.5
    gat_probe_rank: int | None = None

    def __post_init__(self, **kwargs):
        if self.syntax_attention is not None and self.syntax_attention not in ATTENTION_VARIANTS:
            raise ValueError(
                f"syntax_attention must be None or a registered attention variant {sorted(ATTENTION_VARIANTS)}, "
                f"got {self.syntax_attention!r}"
            )
        if self.position_embedding_type not in POSITION_EMBEDDING_TYPES:
            raise ValueError(
                f"position_embedding_type must be one of {POSITION_EMBEDDING_TYPES}, "
                f"got {self.position_embedding_type!r}"
            )
        if self.sla_without_parse not in SLA_WITHOUT_PARSE_MODES:
            raise ValueError(
                f"sla_without_parse must be one of {SLA_WITHOUT_PARSE_MODES}, got {self.sla_without_parse!r}"
            )
        check_objectives(self.pretraining_objectives)  # ValueError naming what is wrong
        if "X" in self.pretraining_objectives and self.num_xpos_labels <= 0:
            raise ValueError("the X objective needs num_xpos_labels > 0")
        if self.phrase_similarity not in PHRASE_SIMILARITIES:
            raise ValueError(f"phrase_similarity must be one of {PHRASE_SIMILARITIES}, got {self.phrase_similarity!r}")
        if self.gat_fusion not in GAT_FUSIONS:
            raise ValueError(f"gat_fusion must be one of {GAT_FUSIONS}, got {self.gat_fusion!r}")
        if not 1 <= self.gat_syntax_heads <= self.num_attention_heads or self.gat_max_distance < 0:
            raise ValueError("gat_syntax_heads must be in 1..num_attention_heads and gat_max_distance ≥ 0")
        if self.sla_max_distance < 0 or self.sla_window < 0:
            raise ValueError("sla_max_distance and sla_window must be non-negative")
        super().__post_init__(**kwargs)

    @property
    def is_stock_bert_compatible(self) -> bool:
        """True when the encoder's weights and computation are exactly those of a stock `BertModel`."""
        return self.syntax_attention is None and self.position_embedding_type == "absolute"

    @property
    def microbert_only_keys(self) -> tuple[str, ...]:
        """Fields that only matter to MicroBERT code; dropped when exporting a stock `bert` config."""
        return (
            "syntax_attention", "sla_max_distance", "sla_window", "sla_reference_window", "sla_without_parse", "band_reading",
            "pretraining_objectives", "num_xpos_labels", "phrase_similarity", "contrastive_temperature",
            "phrase_max_negatives", "tree_max_negatives", "tree_top_k", "position_embedding_type",
            "gat_max_distance", "gat_syntax_heads", "gat_fusion", "gat_layers", "gat_heads", "gat_head_size",
            "gat_use_upos", "gat_probe_weight", "gat_probe_rank",
        )


__all__ = ["MicroBertConfig"]

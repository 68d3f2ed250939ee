"""Word-level features from a subword encoder, for the downstream parser and NER tagger.

This is what AllenNLP's ``pretrained_transformer_mismatched`` embedder does in the reference
evaluation: run the encoder over [CLS] subwords [SEP], mix its hidden layers with a
learned scalar mix, and average each word's subword vectors. One difference by default: the mix
here also takes the embedding layer's output (as µBERT's own XPOS head does in pretraining),
while AllenNLP's embedder mixes the transformer layers only (``hidden_states[1:]``);
``mix_embedding_layer=False`` is the reference's mix.

The encoder is any `transformers` model that returns hidden states (stock ``bert`` exports, µBERT
with SLA, or an HF model path). An SLA encoder additionally gets the sentence's subword tree
(``heads``) so that its local branch has a parse to work with; see `steps.finetune.encoders`.
"""
from __future__ import annotations

import torch
from torch import nn

from .attention import attention_needs_parse, attention_variant
from .attention.syntax_gat import build_structural_probe, structural_probe_loss


class ScalarMix(nn.Module):
    """AllenNLP's scalar mix (Peters et al., 2018): γ · Σ_l softmax(w)_l · h_l, with w = 0 and γ = 1
    at init. The fine-tuning heads and µBERT's XPOS head both use it (parameter names as in
    pretraining checkpoints)."""

    def __init__(self, num_layers: int):
        super().__init__()
        self.scalar_parameters = nn.Parameter(torch.zeros(num_layers))
        self.gamma = nn.Parameter(torch.ones(1))

    def forward(self, layers) -> torch.Tensor:
        stacked = torch.stack(tuple(layers), dim=0)  # (L, B, T, H)
        weights = torch.softmax(self.scalar_parameters, dim=0).to(stacked.dtype)
        return self.gamma * torch.einsum("l,lbth->bth", weights, stacked)


def mean_pool_words(hidden: torch.Tensor, word_spans: torch.Tensor, word_mask: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T, H) subword vectors → (B, W, H) word vectors.

    ``word_spans`` (B, W, 2) are inclusive subword positions of each word; ``word_mask`` (B, W),
    if given, marks real words (padding slots come out as zeros). One batched matmul with a
    (B, W, T) averaging matrix, no Python loops.
    """
    positions = torch.arange(hidden.shape[1], device=hidden.device)
    inside = (positions >= word_spans[..., :1]) & (positions <= word_spans[..., 1:])
    if word_mask is not None:
        inside = inside & word_mask[..., None]
    weights = inside.to(hidden.dtype)
    weights = weights / weights.sum(-1, keepdim=True).clamp(min=1.0)
    return weights @ hidden


class WordEncoder(nn.Module):
    """Subword encoder + scalar mix + mean pooling → one vector per word."""

    def __init__(self, encoder: nn.Module, mix_embedding_layer: bool = True):
        super().__init__()
        self.encoder = encoder
        self.mix_embedding_layer = mix_embedding_layer
        self.scalar_mix = ScalarMix(encoder.config.num_hidden_layers + int(mix_embedding_layer))
        # Syntax-guided attention (-G) brings its structural-probe loss, weighted α = gat_probe_weight
        # (Ahmad et al., §2.4: L = L_task + α(L_dist + L_depth)); its probes are fresh fine-tuning parameters.
        variant = attention_variant(getattr(encoder.config, "syntax_attention", None))
        self.uses_upos = variant is not None and variant.name == "syntax_gat"
        self.probe_weight = encoder.config.gat_probe_weight if self.uses_upos else 0.0
        self.structural_probe = None
        if self.probe_weight > 0:
            self.structural_probe = build_structural_probe(encoder.config)
        self.auxiliary_loss: torch.Tensor | None = None  # the probe loss of the last training forward

    @property
    def output_dim(self) -> int:
        return self.encoder.config.hidden_size

    @property
    def uses_parse(self) -> bool:
        return attention_needs_parse(self.encoder.config)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        word_spans: torch.Tensor,
        word_mask: torch.Tensor,
        heads: torch.Tensor | None = None,
        upos_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        extra = {"heads": heads} if heads is not None and self.uses_parse else {}
        if self.uses_upos and upos_ids is not None:
            extra["upos_ids"] = upos_ids
        output = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, **extra)
        self.auxiliary_loss = None
        if self.structural_probe is not None and self.training and output.attention_outputs:
            self.auxiliary_loss = structural_probe_loss(self.structural_probe, output.attention_outputs, attention_mask, self.probe_weight)
        layers = output.hidden_states if self.mix_embedding_layer else output.hidden_states[1:]
        return mean_pool_words(self.scalar_mix(layers), word_spans, word_mask)


def run_packed_lstm(lstm: nn.LSTM, words: torch.Tensor, word_mask: torch.Tensor) -> torch.Tensor:
    """A batch-first (Bi)LSTM over the real words only: packing keeps the backward direction
    from reading padding into real words. Returns (B, W, directions·hidden), zeros at padding.
    (Kept as the reference that :class:`BiLSTM` is tested against.)"""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    lengths = word_mask.sum(-1).cpu()
    packed = pack_padded_sequence(words, lengths, batch_first=True, enforce_sorted=False)
    return pad_packed_sequence(lstm(packed)[0], batch_first=True, total_length=word_mask.shape[1])[0]


def reversal_index(word_mask: torch.Tensor) -> torch.Tensor:
    """(B, W) positions that put each row's real words in reverse order and leave padding where
    it is (at the end). The permutation is its own inverse."""
    width = word_mask.shape[1]
    positions = torch.arange(width, device=word_mask.device).expand(word_mask.shape[0], width)
    mirrored = word_mask.sum(-1, keepdim=True) - 1 - positions
    return torch.where(mirrored >= 0, mirrored, positions)


def reverse_words(values: torch.Tensor, word_mask: torch.Tensor, index: torch.Tensor | None = None) -> torch.Tensor:
    """(B, W, H) → each row's real words in reverse order, padding left where it was (at the end).
    Its own inverse. ``index``: a precomputed `reversal_index` of ``word_mask``."""
    index = reversal_index(word_mask) if index is None else index
    return values.gather(1, index[..., None].expand_as(values))


class BiLSTM(nn.Module):
    """A stacked bidirectional LSTM over padded, batch-first words that never reads padding.

    The same function as ``nn.LSTM(bidirectional=True)`` run on a packed sequence
    (`run_packed_lstm`), computed differently: each direction of each layer is a unidirectional
    ``nn.LSTM`` on *padded* input, the backward one on every sentence reversed in place, so its
    padding also comes after the real words. Padded input lets torch use its fused oneDNN LSTM
    kernels on CPU, while packed input falls back to per-timestep autograd ops whose slice
    gradients dominated the parser's training step (about 1.5x slower end to end). Dropout is
    applied between layers, as ``nn.LSTM(dropout=...)`` does.
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int, dropout: float = 0.0):
        super().__init__()
        self.hidden_size = hidden_size
        self.dropout = nn.Dropout(dropout if num_layers > 1 else 0.0)
        self.layers = nn.ModuleList(
            nn.ModuleDict({
                "left_to_right": nn.LSTM(input_size if i == 0 else 2 * hidden_size, hidden_size, batch_first=True),
                "right_to_left": nn.LSTM(input_size if i == 0 else 2 * hidden_size, hidden_size, batch_first=True),
            })
            for i in range(num_layers)
        )

    @property
    def output_dim(self) -> int:
        return 2 * self.hidden_size

    def forward(self, words: torch.Tensor, word_mask: torch.Tensor) -> torch.Tensor:
        """(B, W, input) words and their (B, W) mask → (B, W, 2·hidden), zeros at padding."""
        hidden = words
        index = reversal_index(word_mask)  # one permutation serves every layer, both ways
        for number, layer in enumerate(self.layers):
            if number > 0:
                hidden = self.dropout(hidden)
            forward = layer["left_to_right"](hidden)[0]
            backward = reverse_words(layer["right_to_left"](reverse_words(hidden, word_mask, index))[0], word_mask, index)
            hidden = torch.cat([forward, backward], dim=-1)
        return hidden * word_mask[..., None].to(hidden.dtype)

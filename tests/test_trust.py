"""Security basics: exported encoders are safetensors, never pickles."""
from __future__ import annotations

import pytest
from safetensors.torch import load_file

from models import MicroBertConfig, MicroBertModel

TINY = dict(vocab_size=40, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=64, max_position_embeddings=64)


@pytest.mark.parametrize("syntax_attention", [None, "sla"])  # stock-BERT export and microbert export
def test_exported_encoder_is_safetensors_only(tmp_path, syntax_attention):
    extra = {"syntax_attention": "sla"} if syntax_attention else {}
    model = MicroBertModel(MicroBertConfig(**TINY, **extra))
    model.export_encoder(tmp_path / "encoder")
    names = {p.name for p in (tmp_path / "encoder").iterdir()}
    assert "model.safetensors" in names
    assert not names & {"pytorch_model.bin", "model.pt", "training_args.bin"} and not any(n.endswith((".bin", ".pt", ".pkl")) for n in names)
    weights = load_file(tmp_path / "encoder" / "model.safetensors")
    assert len(weights) > 0 and all(key in {k.removeprefix("bert.") for k in model.state_dict()} or key.startswith("pooler") for key in weights)

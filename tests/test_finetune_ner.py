"""NER fine-tuning (reference `ner.jsonnet`): the BIOUL-constrained CRF against brute force, the WikiAnn reader,
and the finetune_ner step end to end on a slice of Wolof WikiAnn with a tiny random µBERT."""
from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
import torch
from tango.workspaces import LocalWorkspace

from models.crf_tagger import BioulCrf, bioul_constraints
from steps.common.data_root import DataError, DataPath
from steps.common.formats import cached_location
from steps.pretrain.encoders import RandomInitEncoder
from steps.evaluate.metrics import span_scores
from steps.finetune.ner import FinetuneNer, NerConfig, batch_order, bio_to_bioul, check_bioul, read_bio, read_predictions

LABELS = ["O", "B-LOC", "I-LOC", "L-LOC", "U-LOC", "B-PER", "I-PER", "L-PER", "U-PER"]
TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 128}
WIKIANN = "wolof/wikiann/wikiann-wo_{}.bio"


def is_legal(tags) -> bool:
    try:
        check_bioul(tags, range(1, len(tags) + 1), "seq")
    except DataError:
        return False
    return True


def legal_paths(length):
    return [path for path in itertools.product(range(len(LABELS)), repeat=length) if is_legal([LABELS[i] for i in path])]


def path_score(crf, emissions, path):
    """Score of a legal path from the *learned* (unmasked) transition weights."""
    weights = crf.parametrizations.transitions.original
    return sum(emissions[t, tag] for t, tag in enumerate(path)) + sum(weights[a, b] for a, b in zip(path, path[1:]))


# ---------------------------------------------------------------------------------------------
# CRF
# ---------------------------------------------------------------------------------------------


def test_bioul_constraints_agree_with_the_tag_sequence_checker():
    allowed, may_start, may_end = bioul_constraints(LABELS)
    for a, b in itertools.product(range(len(LABELS)), repeat=2):
        # A transition is allowed iff some legal sequence uses it: pad it into a whole sentence.
        legal = any(is_legal([*prefix, LABELS[a], LABELS[b], *suffix])
                    for prefix in ([], ["B-" + LABELS[a][2:]]) for suffix in ([], ["L-" + LABELS[b][2:]]))
        assert bool(allowed[a, b]) == legal, (LABELS[a], LABELS[b])
    assert [LABELS[i] for i in range(len(LABELS)) if may_start[i]] == ["O", "B-LOC", "U-LOC", "B-PER", "U-PER"]
    assert [LABELS[i] for i in range(len(LABELS)) if may_end[i]] == ["O", "L-LOC", "U-LOC", "L-PER", "U-PER"]


def test_crf_likelihood_and_viterbi_match_brute_force_over_legal_sequences():
    torch.manual_seed(0)
    crf = BioulCrf(LABELS)
    with torch.no_grad():
        crf.parametrizations.transitions.original.normal_(0, 1)
    lengths = [4, 2, 3]
    emissions = torch.randn(len(lengths), 4, len(LABELS)) * 2
    emissions.requires_grad_(True)
    mask = torch.arange(4)[None, :] < torch.tensor(lengths)[:, None]
    gold_tags = [["B-LOC", "I-LOC", "L-LOC", "U-PER"], ["U-LOC", "O"], ["B-PER", "L-PER", "O"]]
    gold = torch.zeros(len(lengths), 4, dtype=torch.long)
    for row, tags in enumerate(gold_tags):
        gold[row, : len(tags)] = torch.tensor([LABELS.index(t) for t in tags])
    gold[1, 2:] = LABELS.index("I-LOC")  # padding holds an illegal tag: it must not matter

    log_likelihood = crf.log_likelihood(emissions, gold, mask)
    log_likelihood.sum().backward()
    assert torch.isfinite(emissions.grad).all() and torch.isfinite(crf.parametrizations.transitions.original.grad).all()
    decoded = crf.decode(emissions.detach(), mask)
    for row, length in enumerate(lengths):
        paths = legal_paths(length)
        scores = torch.stack([path_score(crf, emissions[row].detach(), path) for path in paths])
        expected = path_score(crf, emissions[row].detach(), gold[row, :length].tolist()) - torch.logsumexp(scores, 0)
        assert log_likelihood[row].item() == pytest.approx(expected.item(), abs=1e-4)
        assert tuple(decoded[row]) == paths[int(scores.argmax())]


def test_viterbi_never_emits_an_illegal_sequence():
    torch.manual_seed(1)
    crf = BioulCrf(LABELS)
    # Emissions that shout for I-/L- tags everywhere and a sentence-final B-: decoding must refuse.
    emissions = torch.randn(64, 7, len(LABELS)) * 5
    emissions[:, :, [LABELS.index("I-LOC"), LABELS.index("L-PER")]] += 8
    emissions[:, -1, LABELS.index("B-LOC")] += 20
    mask = torch.arange(7)[None, :] < torch.randint(1, 8, (64,))[:, None]
    for path in crf.decode(emissions, mask):
        assert is_legal([LABELS[i] for i in path]), [LABELS[i] for i in path]


# ---------------------------------------------------------------------------------------------
# Reading WikiAnn
# ---------------------------------------------------------------------------------------------


def test_bio_to_bioul():
    assert bio_to_bioul("B-PER I-PER O B-LOC B-LOC I-LOC I-LOC O".split()) == "B-PER L-PER O U-LOC B-LOC I-LOC L-LOC O".split()
    # Lenient as AllenNLP: an I- that continues nothing (or another type) opens a span.
    assert bio_to_bioul("I-ORG I-ORG I-PER O I-LOC".split()) == "B-ORG L-ORG U-PER O U-LOC".split()
    assert bio_to_bioul(["O", "O"]) == ["O", "O"]
    assert all(is_legal(bio_to_bioul(tags)) for tags in itertools.product(["O", "B-X", "I-X", "B-Y", "I-Y"], repeat=4))


def test_read_bio_real_files_and_bio_conversion(data_root, tmp_path):
    for split, count in (("train", 958), ("dev", 120), ("test", 119)):
        sentences = read_bio(data_root / WIKIANN.format(split))
        assert len(sentences) == count and all(len(s["tokens"]) == len(s["tags"]) for s in sentences)
    path = tmp_path / "bio.bio"
    path.write_text("Siraa O O B-LOC\nLeyoon O O I-LOC\nngir O O O\n\nDakar None B-LOC\n")
    assert read_bio(path) == [{"tokens": ["Siraa", "Leyoon", "ngir"], "tags": ["B-LOC", "L-LOC", "O"]},
                              {"tokens": ["Dakar"], "tags": ["U-LOC"]}]


@pytest.mark.parametrize("text, message", [
    ("a O O O\nbroken\n", ":2: malformed line"),
    ("a O O O\n\nb O O X-PER\n", ":3: unknown tag 'X-PER'"),
    ("a O O B-PER\nb O O O\n\nc O O U-LOC\n", ":2: O inside an unfinished PER span"),
    ("a O O U-PER\nb O O L-LOC\n", ":2: L-LOC does not continue a LOC span"),
    ("a O O B-PER\n\nb O O U-PER\n", ":1: sentence ends inside a PER span"),
    ("\n\n", ": no sentences"),
])
def test_read_bio_errors_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.bio"
    path.write_text(text)
    with pytest.raises(DataError) as error:
        read_bio(path)
    assert f"{path}{message}" in str(error.value) and "\n" not in str(error.value)


def test_bucketed_batches_cover_every_sentence_once():
    lengths = [5, 1, 30, 2, 2, 9, 14, 3, 3, 40, 7]
    for generator in (None, torch.Generator().manual_seed(3)):
        batches = batch_order(lengths, 4, generator, bucket=True)
        assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
        assert all(len(batch) <= 4 for batch in batches)
    assert batch_order(lengths, 4, None, bucket=True)[0] == [1, 3, 4, 7]  # shortest first when not shuffling


# ---------------------------------------------------------------------------------------------
# The step
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wikiann_slice(data_root, tmp_path_factory):
    """Short sentences from the real Wolof splits, so a tiny µBERT with 128 positions fits them."""
    directory = tmp_path_factory.mktemp("wikiann")
    paths = {}
    for split, count in (("train", 240), ("dev", 80), ("test", 80)):
        sentences = [s for s in read_bio(data_root / WIKIANN.format(split)) if len(s["tokens"]) <= 40][:count]
        lines = ["\n".join(f"{tok} O O {tag}" for tok, tag in zip(s["tokens"], s["tags"])) for s in sentences]
        paths[split] = directory / f"wo_{split}.bio"
        paths[split].write_text("\n\n".join(lines) + "\n")
    return paths


@pytest.fixture(scope="module")
def tiny_encoders(small_wolof_tokenizer, tmp_path_factory):
    tokenizer_dir = tmp_path_factory.mktemp("tokenizer")
    small_wolof_tokenizer.save_pretrained(str(tokenizer_dir))
    workspace = LocalWorkspace(tmp_path_factory.mktemp("encoders"))
    return {condition: RandomInitEncoder(tokenizer=tokenizer_dir, condition=condition, model=TINY_MODEL, seed=1).result(workspace)
            for condition in ("M", "MPT-SLA")}


def ner_step(encoder, paths, **overrides):
    settings = dict(epochs=5, patience=5, lstm_hidden=32, lstm_layers=1, encoder_lr=1e-3, lr=5e-3, max_length=128, seed=3)
    step_args = {k: overrides.pop(k) for k in ("sla_parse", "corpus_parser", "num_threads", "reference_head", "probe_weighting")
                 if k in overrides}
    settings.update(overrides)
    return FinetuneNer(encoder=encoder, train=DataPath(str(paths["train"])), dev=DataPath(str(paths["dev"])),
                       test=DataPath(str(paths["test"])), config=NerConfig(**settings), **step_args)


def test_finetune_ner_learns_and_its_predictions_rescore(tiny_encoders, wikiann_slice, tmp_path):
    step = ner_step(tiny_encoders["M"], wikiann_slice, num_threads=1)
    result = step.result(LocalWorkspace(tmp_path / "workspace"))
    metrics = json.loads((result / "metrics.json").read_text())
    assert metrics["task"] == "ner" and metrics["primary_metric"] == "f1" and metrics["seed"] == 3
    # Recorded where the encoder is cached, whichever run computed it (cache/<id>/result).
    assert metrics["encoder"] == cached_location(tiny_encoders["M"]) and "work" not in Path(metrics["encoder"]).parts
    history = metrics["history"]
    assert len(history) == metrics["epochs_run"] == 5 and metrics["train_seconds"] > 0
    # It learns: dev loss falls and the selected epoch finds entities.
    assert history[-1]["dev_loss_per_word"] < history[0]["dev_loss_per_word"]
    assert history[-1]["train_loss_per_word"] < history[0]["train_loss_per_word"]
    best = max(history, key=lambda record: record["dev_f1"])
    assert metrics["best_epoch"] == best["epoch"] and metrics["dev"]["f1"] == pytest.approx(best["dev_f1"])
    assert metrics["dev"]["f1"] > 0 and metrics["test"]["f1"] > 0
    assert set(metrics["test"]["per_type"]) <= {"LOC", "PER", "ORG"} and "LOC" in metrics["test"]["per_type"]

    # Anyone can re-score the written predictions and get the reported numbers.
    gold, predicted = read_predictions(result / "predicted-test.bio")
    assert gold == [s["tags"] for s in read_bio(wikiann_slice["test"])]
    assert all(is_legal(tags) for tags in predicted)
    rescored = span_scores(gold, predicted)
    for key in ("f1", "precision", "recall"):
        assert rescored[key] == pytest.approx(metrics["test"][key])

    # Threads change speed, not the cache key.
    assert ner_step(tiny_encoders["M"], wikiann_slice, num_threads=2).unique_id == step.unique_id


def test_sla_encoder_needs_a_parser_for_parse_mode(tiny_encoders, wikiann_slice, tmp_path, monkeypatch):
    without_parser = ner_step(tiny_encoders["MPT-SLA"], wikiann_slice, sla_parse="parse")
    with pytest.raises(ValueError, match="attention needs a parse and sla_parse='parse', but no corpus_parser"):
        without_parser.result(LocalWorkspace(tmp_path / "failed"))

    # With a parser, every sentence's tree reaches the encoder (a stand-in parser: a chain).
    import steps.parse.backends

    parsed = []

    class ChainParser:
        def __init__(self, directory):
            assert directory == tmp_path

        def parse_all(self, sentences):
            parsed.extend(sentences)
            yield [{"head": list(range(len(words)))} for words in sentences]

    monkeypatch.setattr(steps.parse.backends, "CorpusParser", ChainParser)
    step = ner_step(tiny_encoders["MPT-SLA"], wikiann_slice, sla_parse="parse", corpus_parser=tmp_path, epochs=1)
    result = step.result(LocalWorkspace(tmp_path / "workspace"))
    assert len(parsed) == 240 + 80 + 80
    assert json.loads((result / "metrics.json").read_text())["sla_parse"] == "parse"


def test_a_killed_run_resumes_from_its_checkpoint_and_ends_identically(tiny_encoders, wikiann_slice, tmp_path, resumed_run_matches):
    reference = ner_step(tiny_encoders["M"], wikiann_slice, num_threads=1, epochs=3).result(LocalWorkspace(tmp_path / "reference"))
    metrics = resumed_run_matches(lambda: ner_step(tiny_encoders["M"], wikiann_slice, num_threads=1, epochs=3), tmp_path / "w", 2, reference)
    assert metrics["resumed_from"] == [2] and metrics["epochs_run"] == 3


def test_reference_head_mixes_the_transformer_layers_only_keyed_only_when_set(tiny_encoders, wikiann_slice, tmp_path):
    """AllenNLP's embedder leaves the embedding layer out of the scalar mix; here only when asked."""
    from models.crf_tagger import CrfTagger
    from steps.finetune.encoders import load_encoder

    plain = ner_step(tiny_encoders["M"], wikiann_slice, epochs=1)
    assert ner_step(tiny_encoders["M"], wikiann_slice, epochs=1, reference_head=False).unique_id == plain.unique_id
    reference = ner_step(tiny_encoders["M"], wikiann_slice, epochs=1, reference_head=True, num_threads=1)
    assert reference.unique_id != plain.unique_id
    metrics = json.loads((reference.result(LocalWorkspace(tmp_path)) / "metrics.json").read_text())
    assert metrics["reference_head"] is True and metrics["test"]["f1"] >= 0
    encoder = load_encoder(tiny_encoders["M"])[0]
    layers = TINY_MODEL["num_hidden_layers"]
    assert CrfTagger(encoder, ["O"], mix_embedding_layer=False).word_encoder.scalar_mix.scalar_parameters.numel() == layers
    assert CrfTagger(encoder, ["O"]).word_encoder.scalar_mix.scalar_parameters.numel() == layers + 1


# ---------------------------------------------------------------------------------------------
# A syntax-guided encoder's structural probe against the CRF's summed loss
# ---------------------------------------------------------------------------------------------


class ChainTagParser:
    """A stand-in corpus parser: every sentence a chain tree, every word a NOUN."""

    def __init__(self, directory):
        pass

    def parse_all(self, sentences, batch_size=256):
        yield [{"tokens": list(words), "head": list(range(len(words))), "upos": ["NOUN"] * len(words)} for words in sentences]


@pytest.fixture(scope="module")
def gat_encoder(small_wolof_tokenizer, tmp_path_factory):
    """A tiny random µBERT with syntax-guided attention (so it fine-tunes a structural probe, α = 0.5)."""
    tokenizer_dir = tmp_path_factory.mktemp("gat_tokenizer")
    small_wolof_tokenizer.save_pretrained(str(tokenizer_dir))
    workspace = LocalWorkspace(tmp_path_factory.mktemp("gat_encoder"))
    return RandomInitEncoder(tokenizer=tokenizer_dir, condition="MS-G", model=TINY_MODEL, seed=1).result(workspace)


def test_per_word_probe_weighting_multiplies_the_probe_term_by_the_batchs_words(gat_encoder, wikiann_slice):
    from models.crf_tagger import CrfTagger
    from steps.finetune.encoders import collate_word_features, encode_words_batch, load_encoder

    encoder, tokenizer = load_encoder(gat_encoder)
    sentences = read_bio(wikiann_slice["train"])[:6]
    words = [s["tokens"] for s in sentences]
    features = encode_words_batch(tokenizer, words, 128, [list(range(len(w))) for w in words],
                                  upos=[["NOUN"] * len(w) for w in words])
    batch = collate_word_features(features)
    labels = sorted({t for s in sentences for t in s["tags"]} | {"O"})
    width = batch["word_mask"].shape[1]
    tags = torch.tensor([[labels.index(t) for t in s["tags"]] + [0] * (width - len(s["tags"])) for s in sentences])
    torch.manual_seed(0)
    model = CrfTagger(encoder, labels, lstm_hidden=16, lstm_layers=1, probe_weighting="per_batch").train()
    assert model.word_encoder.structural_probe is not None

    def loss_parts():
        torch.manual_seed(1)  # the same dropout in every forward
        output = model(tags=tags, **batch)
        crf = -model.crf.log_likelihood(output["emissions"], tags, batch["word_mask"]).sum()
        return output["loss"], crf, model.word_encoder.auxiliary_loss

    per_batch, crf, probe = loss_parts()
    assert probe.item() > 0 and per_batch.item() == pytest.approx((crf + probe).item(), rel=1e-6)
    model.probe_weighting = "per_word"
    per_word, crf_again, probe_again = loss_parts()
    assert crf_again.item() == pytest.approx(crf.item()) and probe_again.item() == pytest.approx(probe.item())
    word_count = sum(len(w) for w in words)
    assert int(batch["word_mask"].sum()) == word_count
    # W (CRF loss per word + α probe): Ahmad et al.'s balance at the summed loss's scale.
    assert per_word.item() == pytest.approx((word_count * (crf / word_count + probe)).item(), rel=1e-6)
    with pytest.raises(ValueError, match="unknown probe_weighting 'mean'"):
        CrfTagger(encoder, labels, probe_weighting="mean")


def test_an_encoder_with_a_probe_must_name_its_weighting_and_one_without_must_not(gat_encoder, tiny_encoders, wikiann_slice,
                                                                                    tmp_path, monkeypatch):
    import steps.parse.backends

    monkeypatch.setattr(steps.parse.backends, "CorpusParser", ChainTagParser)
    unset = ner_step(gat_encoder, wikiann_slice, sla_parse="parse", corpus_parser=tmp_path, epochs=1, num_threads=1)
    with pytest.raises(ValueError, match="has a structural probe .* set probe_weighting to 'per_word'"):
        unset.result(LocalWorkspace(tmp_path / "unset"))
    plain = ner_step(tiny_encoders["M"], wikiann_slice, probe_weighting="per_word", epochs=1)
    with pytest.raises(ValueError, match="has no structural probe, but probe_weighting='per_word' is set"):
        plain.result(LocalWorkspace(tmp_path / "plain"))
    # Keyed only when set: every NER step of an encoder without a probe keeps its cache key.
    assert ner_step(tiny_encoders["M"], wikiann_slice, probe_weighting=None).unique_id == ner_step(tiny_encoders["M"], wikiann_slice).unique_id

    step = ner_step(gat_encoder, wikiann_slice, sla_parse="parse", corpus_parser=tmp_path, epochs=1, num_threads=1,
                    probe_weighting="per_word")
    assert step.unique_id != ner_step(gat_encoder, wikiann_slice, sla_parse="parse", corpus_parser=tmp_path, epochs=1,
                                      probe_weighting="per_batch").unique_id
    metrics = json.loads((step.result(LocalWorkspace(tmp_path / "w")) / "metrics.json").read_text())
    assert metrics["probe_weighting"] == "per_word" and metrics["test"]["f1"] >= 0

"""UD parsing fine-tune (reference `parser_eval.jsonnet`): MST trees, learning on a real Wolof slice, punctuation-free
scores, gold tokens in the output, the official scorer, and the explicit SLA parse modes."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from tango.workspaces import LocalWorkspace

from models.biaffine_parser import BiaffineDependencyParser, ParserOutput, greedy_trees, mst_heads
from steps.common.data_root import DataPath
from steps.pretrain.encoders import RandomInitEncoder
from steps.finetune.ud_parser import FinetuneUdParser, ParserTrainingConfig, bucketed_batches
from steps.data.readers import check_tree, read_conllu
from steps.evaluate import rescore
from steps.evaluate.metrics import PUNCTUATION_UPOS, official_scores

TINY_MODEL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
              "max_position_embeddings": 128}
# A few dozen optimizer steps: 60 sentences in batches of 12 = 5 per epoch.
QUICK = dict(epochs=8, batch_size=12, lr=3e-3, betas=(0.9, 0.9), encoder_lr=1e-3, lstm_hidden=48, lstm_layers=1,
             arc_dim=32, label_dim=32, dropout=0.1, input_dropout=0.1, seed=3)


# The real treebank file, named relative to the data root as the configs name it.
GOLD_TEST = "wolof/ud/wo_wtb-ud-test.conllu"


@pytest.fixture(scope="module")
def treebank_slice(data_root, tmp_path_factory):
    """Small real train/dev/test files: the treebank's first sentences as they are (comments and
    multiword-token lines kept)."""
    folder = tmp_path_factory.mktemp("ud")
    paths = {}
    for split, stop in {"train": 60, "dev": 30, "test": 20}.items():
        blocks = (data_root / "wolof" / "ud" / f"wo_wtb-ud-{split}.conllu").read_text(encoding="utf-8").split("\n\n")
        paths[split] = folder / f"{split}.conllu"
        paths[split].write_text("\n\n".join(blocks[:stop]) + "\n\n", encoding="utf-8")
    return paths


def random_encoder(tokenizer, tmp_path_factory, condition):
    tokenizer_dir = tmp_path_factory.mktemp("tokenizer")
    tokenizer.save_pretrained(str(tokenizer_dir))
    step = RandomInitEncoder(tokenizer=tokenizer_dir, condition=condition, model=TINY_MODEL, seed=1)
    return step.result(LocalWorkspace(tmp_path_factory.mktemp("encoder-workspace")))


@pytest.fixture(scope="module")
def plain_encoder(small_wolof_tokenizer, tmp_path_factory):
    return random_encoder(small_wolof_tokenizer, tmp_path_factory, "M")


@pytest.fixture(scope="module")
def sla_encoder(small_wolof_tokenizer, tmp_path_factory):
    return random_encoder(small_wolof_tokenizer, tmp_path_factory, "MPT-SLA")


def make_step(encoder, paths, **overrides):
    settings = dict(QUICK, **overrides.pop("config", {}))
    return FinetuneUdParser(
        encoder=encoder, train=DataPath(str(paths["train"])), dev=DataPath(str(paths["dev"])), test=DataPath(str(paths["test"])),
        config=ParserTrainingConfig(**settings), num_threads=1, **overrides,
    )


@pytest.fixture(scope="module")
def trained(plain_encoder, treebank_slice, tmp_path_factory):
    """A tiny real fine-tune, tested on the whole unmodified Wolof test file."""
    paths = dict(treebank_slice, test=GOLD_TEST)
    result = make_step(plain_encoder, paths).result(LocalWorkspace(tmp_path_factory.mktemp("workspace")))
    return result, json.loads((result / "metrics.json").read_text())


# --- decoding -----------------------------------------------------------------------------------


def test_mst_gives_a_single_rooted_tree_even_when_greedy_heads_do_not():
    rng = np.random.default_rng(0)
    for n in (1, 2, 5, 17, 40):
        scores = rng.normal(size=(n + 1, n + 1))
        scores[1:, 0] += 3.0  # every word prefers ROOT: greedy decoding would give n roots
        log_probs = scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)
        heads = mst_heads(log_probs)
        assert len(heads) == n
        check_tree(heads, f"random {n}-word sentence")  # raises unless one root and no cycle


def test_mst_recovers_a_tree_the_scores_clearly_encode():
    gold = [2, 0, 2, 5, 3]
    scores = np.full((6, 6), -10.0)
    for dependent, head in enumerate(gold, 1):
        scores[dependent, head] = -0.01
    assert mst_heads(scores) == gold


def _is_one_rooted_tree(heads) -> bool:
    """Brute force: one dependent of ROOT, and every word's chain of heads reaches ROOT."""
    if sum(head == 0 for head in heads) != 1:
        return False
    for word in range(1, len(heads) + 1):
        seen, node = set(), word
        while node != 0:
            if node in seen:
                return False
            seen.add(node)
            node = heads[node - 1]
    return True


def _batch_of_scores(rng, lengths, peak):
    """(B, W+1, W+1) arc scores as the parser masks them (no self-loop, no padded head, ROOT's
    row unscored); ``peak`` raises one random head per word, so larger peaks make more trees."""
    width = max(lengths) + 1
    scores = torch.as_tensor(rng.normal(size=(len(lengths), width, width)), dtype=torch.float32)
    mask = torch.zeros(len(lengths), width, dtype=torch.bool)
    for b, n in enumerate(lengths):
        mask[b, : n + 1] = True
        for word in range(1, n + 1):
            scores[b, word, rng.choice([h for h in range(n + 1) if h != word])] += peak
    blocked = ~mask[:, None, :] | torch.eye(width, dtype=torch.bool)
    scores = scores.masked_fill(blocked, float("-inf"))
    scores[:, 0] = float("-inf")
    return scores, mask


def test_greedy_tree_check_matches_a_brute_force_walk():
    rng = np.random.default_rng(1)
    lengths = [1, 2, 3, 5, 8, 13, 21, 34, 40] * 6
    checked = {True: 0, False: 0}
    for peak in (0.0, 4.0, 8.0):
        scores, mask = _batch_of_scores(rng, lengths, peak)
        heads, is_tree = greedy_trees(torch.log_softmax(scores, -1), mask)
        for b, n in enumerate(lengths):
            words = heads[b, 1 : n + 1].tolist()
            assert words == scores[b, 1 : n + 1, : n + 1].argmax(-1).tolist()
            assert bool(is_tree[b]) == _is_one_rooted_tree(words), (n, words)
            assert heads[b, n + 1 :].eq(0).all()
            checked[bool(is_tree[b])] += 1
    assert min(checked.values()) > 20, checked  # both outcomes were exercised


def test_decode_gives_chu_liu_edmonds_trees_with_or_without_the_greedy_shortcut():
    """``decode`` skips Chu-Liu/Edmonds where the greedy heads are a one-rooted tree; on batches
    mixing both kinds it must give exactly what Chu-Liu/Edmonds gives for every sentence."""
    rng = np.random.default_rng(2)
    lengths = [1, 2, 4, 7, 12, 25, 38] * 8
    parser = BiaffineDependencyParser.__new__(BiaffineDependencyParser)
    shortcuts = 0
    for peak in (2.0, 6.0, 10.0):
        scores, mask = _batch_of_scores(rng, lengths, peak)
        output = ParserOutput(scores, torch.zeros(len(lengths), scores.shape[1], 1), torch.zeros(len(lengths), scores.shape[1], 1), mask)
        parser.label_logits = lambda output, heads: torch.zeros(*heads.shape, 3)
        heads, _ = BiaffineDependencyParser.decode(parser, output)
        log_probs = torch.log_softmax(scores, -1).numpy()
        for b, n in enumerate(lengths):
            assert heads[b] == mst_heads(log_probs[b, : n + 1, : n + 1]), (peak, n)
        shortcuts += int(greedy_trees(torch.log_softmax(scores, -1), mask)[1].sum())
    assert 0 < shortcuts < 3 * len(lengths)  # both paths were taken


def test_parser_loss_and_decode_shapes(plain_encoder):
    from steps.finetune.encoders import load_encoder

    encoder, _ = load_encoder(plain_encoder)
    torch.manual_seed(0)
    parser = BiaffineDependencyParser(encoder, num_labels=5, lstm_hidden=16, lstm_layers=2, arc_dim=8, label_dim=8).eval()
    # Two sentences of 3 and 1 words; the second is padded.
    batch = {
        "input_ids": torch.tensor([[1, 7, 8, 9, 2], [1, 7, 2, 0, 0]]),
        "attention_mask": torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]]),
        "word_spans": torch.tensor([[[1, 1], [2, 3], [3, 3]], [[1, 1], [0, 0], [0, 0]]]),
        "word_mask": torch.tensor([[True, True, True], [True, False, False]]),
    }
    output = parser(**batch, gold_heads=torch.tensor([[2, 0, 2], [0, 0, 0]]), gold_labels=torch.tensor([[1, 2, 3], [4, 0, 0]]))
    assert output.arc_scores.shape == (2, 4, 4) and torch.isfinite(output.loss)
    # Padded words and self-loops can never be heads.
    assert torch.isinf(output.arc_scores[1, 1, 2:]).all() and torch.isinf(output.arc_scores[0].diagonal()).all()
    heads, labels = parser.decode(output)
    assert [len(h) for h in heads] == [3, 1] and heads[1] == [0] and [len(x) for x in labels] == [3, 1]
    check_tree(heads[0], "decoded sentence")


def test_bilstm_on_padded_words_equals_torch_bidirectional_lstm_on_packed_words():
    """models.word_encoder.BiLSTM (per-direction LSTMs on padded input, fast oneDNN path) computes
    what nn.LSTM(bidirectional) computes on a packed sequence, given the same weights: padding
    never leaks into real words in either direction, and padded positions come out as zeros."""
    from models.word_encoder import BiLSTM, reverse_words, run_packed_lstm

    torch.manual_seed(0)
    reference = torch.nn.LSTM(6, 5, num_layers=2, batch_first=True, bidirectional=True)
    ours = BiLSTM(6, 5, num_layers=2)
    for layer, modules in enumerate(ours.layers):
        for direction, suffix in (("left_to_right", ""), ("right_to_left", "_reverse")):
            for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
                getattr(modules[direction], f"{name}_l0").data.copy_(getattr(reference, f"{name}_l{layer}{suffix}"))
    words = torch.randn(4, 7, 6)
    word_mask = torch.arange(7)[None, :] < torch.tensor([7, 3, 5, 1])[:, None]
    words_with_other_padding = torch.where(word_mask[..., None], words, torch.randn(4, 7, 6))
    expected = run_packed_lstm(reference, words, word_mask)
    assert torch.allclose(ours(words, word_mask), expected, atol=1e-6)
    assert torch.allclose(ours(words_with_other_padding, word_mask), expected, atol=1e-6)
    assert not ours(words, word_mask)[~word_mask].any()
    assert torch.equal(reverse_words(reverse_words(words, word_mask), word_mask), words)
    assert torch.equal(reverse_words(words, word_mask)[1, :3], words[1, [2, 1, 0]])


def test_label_scores_match_torch_bilinear():
    """The two-matmul label scorer is exactly nn.Bilinear (same parameters, same sums)."""
    torch.manual_seed(0)
    bilinear = torch.nn.Bilinear(6, 6, 7)
    holder = type("Holder", (), {})()
    holder.label_bilinear = bilinear
    dep, head = torch.randn(3, 5, 6), torch.randn(3, 5, 6)
    ours = BiaffineDependencyParser.label_bilinear_scores(holder, dep, head)
    assert torch.allclose(ours, bilinear(dep, head), atol=1e-5)


def test_bucketed_batches_cover_every_sentence_once():
    lengths = [5, 40, 7, 38, 6, 41, 20, 21, 22]
    batches = bucketed_batches(lengths, 3, torch.Generator().manual_seed(0))
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert max(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches) <= 3  # similar lengths


# --- the step -----------------------------------------------------------------------------------


def test_fine_tuning_beats_the_untrained_parser(trained):
    _, metrics = trained
    history = metrics["history"]
    assert history[0]["epoch"] == 0 and len(history) == QUICK["epochs"] + 1
    assert metrics["steps"] == QUICK["epochs"] * 5
    assert metrics["dev"]["las"] > history[0]["las"] + 5, [h["las"] for h in history]
    assert metrics["dev"]["las"] == pytest.approx(max(h["las"] for h in history))  # selected on dev LAS
    assert metrics["best_epoch"] == max(history, key=lambda h: h["las"])["epoch"]
    assert metrics["task"] == "ud_parsing" and metrics["primary_metric"] == "las" and metrics["seed"] == 3
    assert metrics["train_seconds"] > 0 and metrics["sla_parse"] == "n/a"


def test_a_run_killed_after_epoch_3_resumes_from_its_epoch_2_checkpoint_and_ends_identically(
        trained, plain_encoder, treebank_slice, tmp_path, resumed_run_matches):
    reference, _ = trained
    paths = dict(treebank_slice, test=GOLD_TEST)  # as `trained` was run
    step = make_step(plain_encoder, paths, checkpoint_every=2)
    assert step.unique_id == make_step(plain_encoder, paths).unique_id  # cadence is not in the key
    metrics = resumed_run_matches(lambda: make_step(plain_encoder, paths, checkpoint_every=2), tmp_path / "w", 3, reference)
    assert metrics["resumed_from"] == [2] and len(metrics["history"]) == QUICK["epochs"] + 1


def test_predictions_keep_gold_tokens_form_trees_and_score_without_punctuation(trained, data_root):
    result, metrics = trained
    gold = read_conllu(data_root / GOLD_TEST)
    predicted = read_conllu(result / "predicted-test.conllu")  # check_trees: one root, no cycles
    assert [s["tokens"] for s in predicted] == [s["tokens"] for s in gold]
    # Only non-punctuation words are scored, and the figures are recomputable from the file: the
    # paper's LAS compares full labels, las_universal the part before any ":".
    content = [(g, p) for gs, ps in zip(gold, predicted) for g, p in zip(zip(gs["upos"], gs["head"], gs["deprel"]), zip(ps["head"], ps["deprel"]))
               if g[0] not in PUNCTUATION_UPOS]
    assert sum(u in PUNCTUATION_UPOS for s in gold for u in s["upos"]) > 0
    assert metrics["test"]["scored_words"] == len(content)
    labelled = sum(g[1] == p[0] and g[2] == p[1] for g, p in content)
    universal = sum(g[1] == p[0] and g[2].split(":")[0] == p[1].split(":")[0] for g, p in content)
    assert metrics["test"]["las"] == pytest.approx(100.0 * labelled / len(content))
    assert metrics["test"]["las_universal"] == pytest.approx(100.0 * universal / len(content))
    assert metrics["primary_metric"] == "las" and set(metrics["metric_definitions"]) >= {"las", "las_universal", "udeval"}
    assert metrics["gold_files"]["test"] == GOLD_TEST


def test_predicted_conllu_is_the_gold_file_with_new_heads_and_relations(trained, data_root, treebank_slice):
    """Comments, multiword-token ranges and every column but HEAD and DEPREL are the gold file's."""
    result, _ = trained
    for gold_file, predicted_file in ((data_root / GOLD_TEST, result / "predicted-test.conllu"),
                                      (treebank_slice["dev"], result / "predicted-dev.conllu")):
        gold_lines = gold_file.read_text(encoding="utf-8").splitlines()
        predicted_lines = predicted_file.read_text(encoding="utf-8").splitlines()
        assert len(predicted_lines) == len(gold_lines)
        assert any(line.startswith("# text = ") for line in gold_lines)
        assert any(line.split("\t")[0].count("-") == 1 for line in gold_lines)  # multiword tokens present
        changed = 0
        for g, p in zip(gold_lines, predicted_lines):
            if g.startswith("#") or not g or not g.split("\t")[0].isdigit():
                assert p == g
                continue
            g_columns, p_columns = g.split("\t"), p.split("\t")
            assert g_columns[:6] + g_columns[8:] == p_columns[:6] + p_columns[8:]
            changed += g_columns[6:8] != p_columns[6:8]
        assert changed > 0


def test_official_scorer_on_the_unmodified_treebank_gives_the_recorded_figure(trained, data_root):
    result, metrics = trained
    gold_file = data_root / GOLD_TEST
    official = official_scores(gold_file, result / "predicted-test.conllu")
    assert official["LAS"] == metrics["udeval"]["LAS"] and official["Words"] == pytest.approx(100.0)
    assert official_scores(gold_file, gold_file)["LAS"] == pytest.approx(100.0)
    # It counts punctuation and strips subtypes, on the same gold words.
    gold, predicted = read_conllu(gold_file), read_conllu(result / "predicted-test.conllu")
    everything = [(g, p) for gs, ps in zip(gold, predicted) for g, p in zip(zip(gs["head"], gs["deprel"]), zip(ps["head"], ps["deprel"]))]
    official_las = sum(g[0] == p[0] and g[1].split(":")[0] == p[1].split(":")[0] for g, p in everything)
    assert official["LAS"] == pytest.approx(100.0 * official_las / len(everything))
    assert metrics["udeval_dev"]["Words"] == pytest.approx(100.0)


def test_rescore_recomputes_every_figure_from_the_prediction_files(trained, tmp_path, capsys):
    result, _ = trained
    metrics = json.loads((result / "metrics.json").read_text())
    folder = tmp_path / "cell" / "seed3"
    folder.mkdir(parents=True)
    for name in ("metrics.json", "predicted-dev.conllu", "predicted-test.conllu"):
        (folder / name).write_bytes((result / name).read_bytes())
    assert rescore.main([str(tmp_path / "cell")]) == 0
    printed = capsys.readouterr().out
    assert f"test\tlas\t{metrics['test']['las']:.4f}" in printed
    assert f"test\tudeval LAS\t{metrics['udeval']['LAS']:.4f}" in printed and "MISMATCH" not in printed
    metrics["test"]["las"] += 0.5  # a report that disagrees with its files is caught
    (folder / "metrics.json").write_text(json.dumps(metrics))
    assert rescore.main([str(folder)]) == 1
    assert [line.split("\t")[3] for line in capsys.readouterr().out.splitlines() if "MISMATCH" in line] == ["las"]


def test_sla_encoder_needs_a_parse_or_an_explicit_global_mode(sla_encoder, treebank_slice, tmp_path):
    with pytest.raises(ValueError, match="attention needs a parse and sla_parse='parse', but no corpus_parser"):
        make_step(sla_encoder, treebank_slice, sla_parse="parse").result(LocalWorkspace(tmp_path / "a"))
    result = make_step(sla_encoder, treebank_slice, sla_parse="global", config={"epochs": 1}).result(LocalWorkspace(tmp_path / "b"))
    metrics = json.loads((result / "metrics.json").read_text())
    assert metrics["sla_parse"] == "global" and metrics["encoder_config"]["syntax_attention"] == "sla"


def test_sla_parse_mode_feeds_the_corpus_parsers_trees(sla_encoder, treebank_slice, tmp_path, monkeypatch):
    """With sla_parse="parse" every split is parsed by the corpus parser (a stub here: a chain)."""
    import steps.finetune.ud_parser as module

    parsed = []

    class ChainParser:
        def __init__(self, directory):
            self.directory = directory

        def parse_all(self, sentences, batch_size=256):
            parsed.append(len(sentences))
            yield [{"tokens": list(t), "head": list(range(len(t)))} for t in sentences]

    monkeypatch.setattr(module, "CorpusParser", ChainParser)
    step = make_step(sla_encoder, treebank_slice, sla_parse="parse", corpus_parser=tmp_path, config={"epochs": 1})
    result = step.result(LocalWorkspace(tmp_path / "w"))
    assert parsed == [60, 30, 20]
    assert json.loads((result / "metrics.json").read_text())["sla_parse"] == "parse"


def test_bad_inputs_give_one_line_errors(plain_encoder, treebank_slice, tmp_path):
    with pytest.raises(ValueError, match="sla_parse must be one of"):
        make_step(plain_encoder, treebank_slice, sla_parse="gold").result(LocalWorkspace(tmp_path / "a"))
    broken = tmp_path / "broken.conllu"
    broken.write_text("1\tword\t_\tNOUN\t_\t_\t0\troot\t_\n\n")  # nine columns
    with pytest.raises(Exception, match=r"broken.conllu:1: malformed CoNLL-U line"):
        make_step(plain_encoder, dict(treebank_slice, dev=broken)).result(LocalWorkspace(tmp_path / "b"))
    with pytest.raises(ValueError, match="batch_size must be positive"):
        ParserTrainingConfig(batch_size=0)
    with pytest.raises(ValueError, match="lr_schedule must be"):
        ParserTrainingConfig(lr_schedule="cosine")


def test_exported_predictions_rescore_without_the_cache(trained, tmp_path):
    """tools/export_predictions.py's copy of one result (what docs/predictions/ holds) re-scores
    to the recorded figures and names no machine path for the encoder."""
    from tools.export_predictions import cell_folder, export_result

    result, _ = trained
    cell = {"scale": "paper", "table": "table2", "row": "M", "column": "wolof", "seed": 3}
    destination = tmp_path / cell_folder(cell)
    assert destination == tmp_path / "paper" / "table2" / "M" / "wolof" / "seed3"
    # A grid's "<grid>:<task>" table is a folder level of its own, never a colon in a path.
    assert cell_folder(dict(cell, table="decomposition:ud", row="paper", scale="cpu")).parts == (
        "decomposition", "cpu", "ud", "paper", "wolof", "seed3")
    copied = export_result(result, destination)
    assert copied == ["predicted-dev.conllu.gz", "predicted-test.conllu.gz", "metrics.json"]
    assert not json.loads((destination / "metrics.json").read_text())["encoder"].startswith("/")
    import gzip

    assert gzip.decompress((destination / "predicted-test.conllu.gz").read_bytes()) == (result / "predicted-test.conllu").read_bytes()
    first = (destination / "predicted-test.conllu.gz").read_bytes()
    export_result(result, destination)
    assert (destination / "predicted-test.conllu.gz").read_bytes() == first  # no timestamp: the same bytes again
    assert rescore.main([str(tmp_path)]) == 0
    # A recorded figure that the predictions do not give fails the re-score.
    metrics = json.loads((destination / "metrics.json").read_text())
    metrics["test"]["las"] += 0.5
    (destination / "metrics.json").write_text(json.dumps(metrics))
    assert rescore.main([str(tmp_path)]) == 1


def test_export_takes_the_paper_scale_cells_with_predictions_only(tmp_path):
    """By default the paper-scale cells (gpu-<regime>) are exported; a result with nothing to re-score
    (an MLM-accuracy score: metrics only) leaves no folder behind."""
    from tools.export_predictions import export_result, selected

    assert selected("gpu-paper") and selected("gpu-paper_tenth") and not selected("paper") and not selected("cpu")
    assert selected("cpu", ["cpu"]) and not selected("gpu-paper", ["cpu"])
    scores_only = tmp_path / "result"
    scores_only.mkdir()
    (scores_only / "metrics.json").write_text(json.dumps({"accuracy": 42.66}))
    assert export_result(scores_only, tmp_path / "out") == [] and not (tmp_path / "out").exists()


def test_export_names_an_encoder_by_its_cache_entry_and_no_machine_path():
    from tools.export_predictions import encoder_entry

    assert encoder_entry("/any/where/ws/cache/PretrainMicrobert-002-abc/result") == "PretrainMicrobert-002-abc/result"
    assert encoder_entry("../ws/cache/RandomInitEncoder-001-xyz/result") == "RandomInitEncoder-001-xyz/result"
    assert encoder_entry("bert-base-multilingual-cased") is None and encoder_entry("/models/cache") is None


# --- the reference head (AllenNLP's embedder mix and variational dropout) -------------------------


def test_variational_dropout_drops_the_same_features_at_every_position():
    from models.biaffine_parser import VariationalDropout

    torch.manual_seed(0)
    dropout = VariationalDropout(0.4).train()
    values = torch.rand(3, 7, 50) + 0.5  # no zeros of its own
    dropped = dropout(values)
    ratio = dropped / values
    # Each (sentence, feature) is kept (×1/0.6) or dropped (0) at all 7 positions alike.
    assert torch.allclose(ratio, ratio[:, :1, :].expand_as(ratio))
    kept = ratio[:, 0, :]
    assert torch.all((kept == 0) | torch.isclose(kept, torch.tensor(1 / 0.6)))
    assert 0.2 < (kept == 0).float().mean() < 0.6  # about p of the features, per sentence
    assert not torch.equal(kept[0], kept[1])  # its own mask per sentence
    assert torch.equal(dropout.eval()(values), values)


def test_reference_mix_leaves_the_embedding_layer_out(plain_encoder):
    """mix_embedding_layer=False mixes hidden_states[1:] (AllenNLP's embedder); the default all of them."""
    from models.word_encoder import WordEncoder
    from steps.finetune.encoders import load_encoder

    encoder, _ = load_encoder(plain_encoder)
    encoder.eval()
    batch = dict(input_ids=torch.tensor([[1, 7, 8, 9, 2]]), attention_mask=torch.ones(1, 5, dtype=torch.long),
                 word_spans=torch.tensor([[[1, 1], [2, 3]]]), word_mask=torch.tensor([[True, True]]))
    hidden = encoder(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"], output_hidden_states=True).hidden_states
    for mix_embeddings, layers in ((True, hidden), (False, hidden[1:])):
        words = WordEncoder(encoder, mix_embedding_layer=mix_embeddings)
        assert words.scalar_mix.scalar_parameters.numel() == len(layers) == TINY_MODEL["num_hidden_layers"] + int(mix_embeddings)
        with torch.no_grad():
            words.scalar_mix.scalar_parameters.copy_(torch.arange(len(layers), dtype=torch.float))
            words.scalar_mix.gamma.fill_(2.0)
        weights = torch.softmax(torch.arange(len(layers), dtype=torch.float), 0)
        mixed = 2.0 * sum(w * layer for w, layer in zip(weights, layers))
        expected = torch.stack([mixed[0, 1], mixed[0, 2:4].mean(0)])[None]  # word 2 = subwords 2-3, averaged
        assert torch.allclose(words(**batch), expected, atol=1e-6)


def test_reference_head_is_keyed_only_when_set_and_recorded(plain_encoder, treebank_slice, tmp_path):
    from models.biaffine_parser import VariationalDropout

    plain = make_step(plain_encoder, treebank_slice)
    assert make_step(plain_encoder, treebank_slice, reference_head=False).unique_id == plain.unique_id
    reference = make_step(plain_encoder, treebank_slice, reference_head=True, config={"epochs": 1})
    assert reference.unique_id != make_step(plain_encoder, treebank_slice, config={"epochs": 1}).unique_id
    metrics = json.loads((reference.result(LocalWorkspace(tmp_path)) / "metrics.json").read_text())
    assert metrics["reference_head"] is True and metrics["best_epoch"] is not None
    # The model it built: variational dropout on the LSTM output and the MLPs, the mix without embeddings.
    from steps.finetune.encoders import load_encoder

    parser = BiaffineDependencyParser(load_encoder(plain_encoder)[0], 3, variational_dropout=True, mix_embedding_layer=False)
    assert isinstance(parser.encoded_dropout, VariationalDropout) and isinstance(parser.arc_dep_mlp[2], VariationalDropout)
    assert not isinstance(BiaffineDependencyParser(load_encoder(plain_encoder)[0], 3).encoded_dropout, VariationalDropout)


def test_fine_tuning_step_benchmark_times_the_paper_head_eager_and_compiled(plain_encoder, treebank_slice, tmp_path):
    """benchmarks/bench_finetune_step.py's compile rows (the whole parser under torch.compile, the
    lever against a GPU step bound by its launches) through the same code on CPU, with aot_eager:
    a trace failure shows here, not in a GPU job."""
    import torch._dynamo

    from benchmarks.bench_finetune_step import main

    out = tmp_path / "finetune_step.json"
    torch._dynamo.reset()
    assert main(["--encoder", str(plain_encoder / "encoder"), "--treebank", str(treebank_slice["train"]), "--head", "paper",
                 "--variants", "packed-fused", "current", "graphed", "--compile", "none", "default", "--compile-backend", "aot_eager",
                 "--steps", "2", "--warmup", "1", "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert list(record["variants"]) == ["packed nn.LSTM + fused AdamW", "padded BiLSTM + fused AdamW",
                                        "padded BiLSTM + fused AdamW, a CUDA graph per batch shape",
                                        "padded BiLSTM + fused AdamW, compiled (default)"]
    assert all(figures["median_ms"] > 0 and figures["steps"] == 2 for figures in record["variants"].values())
    # The graphed step on a CPU: its warm-up passes over the timed batches ran eagerly, nothing captured.
    graphs = record["variants"]["padded BiLSTM + fused AdamW, a CUDA graph per batch shape"]["graphs"]
    assert graphs["graphs"] == graphs["replayed_steps"] == 0 and graphs["eager_steps"] == 1 + 3 * 1 + 1 and graphs["shapes"] >= 1
    # How dynamo cuts the compiled step: only at the LSTMs (3 layers × 2 directions; dynamo leaves RNNs
    # eager), so a CUDA graph can cover only the pieces between them.
    dynamo = record["variants"]["padded BiLSTM + fused AdamW, compiled (default)"]["dynamo"]
    assert dynamo["graph_breaks"] >= 6 and dynamo["graphs"] == dynamo["graph_breaks"] + 1
    assert len(dynamo["reasons"]) == 1 and "LSTM" in dynamo["reasons"][0]  # no other cause
    assert "dynamo" not in record["variants"]["padded BiLSTM + fused AdamW"]
    assert record["what"].startswith("UD parser fine-tuning step") and "3x400 BiLSTM" in record["what"] and record["device"] == "cpu"


def test_a_compiled_parser_is_keyed_only_when_set_and_trains_like_the_eager_one(plain_encoder, treebank_slice, tmp_path):
    """compile_model (torch.compile of the whole parser, the GPU lever) through aot_eager on CPU:
    dynamo traces the training and evaluation forwards and AOTAutograd the backward, as on a GPU,
    without Inductor's code generation. The run keys only when compiled, records the options, and
    follows the eager run's training losses."""
    import torch._dynamo

    eager = make_step(plain_encoder, treebank_slice, config={"epochs": 1})
    assert make_step(plain_encoder, treebank_slice, config={"epochs": 1}, compile_model=None).unique_id == eager.unique_id
    compiled = make_step(plain_encoder, treebank_slice, config={"epochs": 1}, compile_model={"backend": "aot_eager"})
    assert compiled.unique_id != eager.unique_id
    expected = json.loads((eager.result(LocalWorkspace(tmp_path / "eager")) / "metrics.json").read_text())
    torch._dynamo.reset()
    metrics = json.loads((compiled.result(LocalWorkspace(tmp_path / "compiled")) / "metrics.json").read_text())
    assert metrics["compile_model"] == {"backend": "aot_eager"} and expected["compile_model"] is None
    for ours, theirs in zip(metrics["history"][1:], expected["history"][1:]):
        assert ours["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-4)
    with pytest.raises(Exception, match="unknown torch.compile option"):
        make_step(plain_encoder, treebank_slice, config={"epochs": 1}, compile_model={"modes": "default"}).result(LocalWorkspace(tmp_path / "bad"))

"""Every step that trains or runs a model takes ``device`` ("auto" by default: the GPU when there is
one), keeps it out of its cache key and records the device it used. The CPU path is the one these
tests (and every other test of the suite) run; the same code runs on a GPU."""
import inspect

import pytest
import torch

from steps.common.runtime import resolve_device
from steps.evaluate.mlm_accuracy import MlmAccuracy
from steps.finetune.ner import FinetuneNer
from steps.finetune.pronto import FinetunePronto
from steps.finetune.ud_parser import FinetuneUdParser
from steps.parse.corpus_parser import ParseCorpus, TrainCorpusParser
from steps.pretrain.pretrain import PretrainMicrobert
from steps.tg.agreement import EvaluateTgAgreement
from steps.tg.language_model import EvaluateTgLanguageModel, TrainTgLanguageModel

MODEL_STEPS = [TrainCorpusParser, ParseCorpus, PretrainMicrobert, FinetuneUdParser, FinetuneNer, FinetunePronto,
               TrainTgLanguageModel, EvaluateTgLanguageModel, EvaluateTgAgreement, MlmAccuracy]


def test_auto_takes_the_gpu_only_when_there_is_one(monkeypatch):
    assert resolve_device("auto") == torch.device("cpu") or torch.cuda.is_available()
    assert resolve_device(None) == resolve_device("auto")
    assert resolve_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="sees no GPU"):
        resolve_device("cuda")
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        resolve_device("tpu")


@pytest.mark.parametrize("step", MODEL_STEPS, ids=lambda step: step.__name__)
def test_every_model_step_takes_a_device_outside_its_cache_key(step):
    parameters = inspect.signature(step.run).parameters
    assert "device" in parameters, f"{step.__name__}.run takes no device"
    assert parameters["device"].default in (None, "auto"), "the default must be the GPU when there is one"
    assert "device" in step.SKIP_ID_ARGUMENTS, f"{step.__name__}: device would change the cache key"


def test_setting_the_device_leaves_the_step_id_alone():
    plain = TrainTgLanguageModel(actions={"layout": {}}, kind="tg", max_steps=3)
    forced = TrainTgLanguageModel(actions={"layout": {}}, kind="tg", max_steps=3, device="cpu")
    assert plain.unique_id == forced.unique_id

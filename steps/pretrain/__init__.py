"""pretrain stage of the DAG; see steps/__init__.py. `PretrainingConfig` is importable here because
cache keys and pickles name it ``steps.pretrain.PretrainingConfig`` (steps.common.cache_keys)."""
from steps.pretrain.pretrain import PretrainingConfig  # noqa: F401

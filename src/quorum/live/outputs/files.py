"""``quorum export``: write the labels with their provenance (:func:`export_frame`) to a
CSV, JSONL or Parquet file, or a Hugging Face datasets folder with its card
(:mod:`quorum.live.outputs.hf`)."""

from __future__ import annotations

import json
from pathlib import Path

from quorum.errors import ConfigError
from quorum.live.outputs.export import export_frame
from quorum.live.project.config import ProjectConfig


def export(cfg: ProjectConfig, fmt: str, out: Path | None) -> Path:
    """Write the labels in ``fmt`` (csv, jsonl, parquet or hf) to ``out`` (default: the
    project folder's ``NAME-labels.FMT``); returns the path written."""
    fmt = fmt.lower()
    if fmt == "hf":  # a Hugging Face datasets folder with its card (quorum.live.outputs.hf)
        from quorum.live.outputs.hf import write_hf

        return write_hf(cfg, out)
    if fmt not in ("csv", "jsonl", "parquet"):
        raise ConfigError(f"unknown export format {fmt!r}; use csv, jsonl, parquet or hf")
    df = export_frame(cfg)
    out = out or cfg.root / f"{cfg.name}-labels.{fmt}"
    for up in out.parents:
        if up.exists() and not up.is_dir():
            raise ConfigError(f"cannot write the export to {out}: {up} is a file, not a folder")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "jsonl":
            with out.open("w", encoding="utf-8") as f:
                for rec in df.to_dict("records"):
                    f.write(json.dumps(rec, default=str, ensure_ascii=False) + "\n")
            return out
        flat = df.copy()
        for col in ("labelled_by", "annotators", "answers", "statuses", "swap_verdicts",
                    "human_labels"):  # fmt: skip
            if col in flat.columns:
                flat[col] = flat[col].map(lambda v: json.dumps(v, ensure_ascii=False, default=str))
        if fmt == "csv":
            flat.to_csv(out, index=False)
        else:
            flat.to_parquet(out, index=False)
    except OSError as exc:
        raise ConfigError(f"cannot write the export to {out}: {exc.strerror or exc}") from None
    return out

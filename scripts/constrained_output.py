"""Unparseable share and accuracy of one LLM endpoint, free text against constrained output.

Sends the same SST-2 items to the same endpoint twice through :class:`LLMAnnotator` (the
project's default prompt, the instructions the issue's trial used): once with
``output = "free"`` (the free-text parser alone) and once with ``output = "auto"`` (for a
llama.cpp server: a grammar over the label names, logprobs as confidence). Prints, per
mode, the unparseable share, the accuracy against gold over all items (an unparseable
answer counts as wrong) and over the parsed ones, and the mean confidence.

  python -m llama_cpp.server --model SmolLM2-135M-Instruct.Q4_1.gguf --port 8091 \
      --model_alias smollm2 --n_ctx 1024 --seed 0 &
  python scripts/constrained_output.py --api-base http://127.0.0.1:8091/v1 --n 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import pandas as pd

from quorum.data.schema import TaskType
from quorum.live.machines.calls import Redactor
from quorum.live.machines.llm import LLMAnnotator
from quorum.live.machines.prompts import PromptBuilder, PromptTemplate
from quorum.live.project.annotators import AnnotatorConfig
from quorum.tasks.base import ItemView
from quorum.tasks.parsing import LabelParser

LABELS = ["0", "1"]
NAMES = {"0": "negative", "1": "positive"}


async def run(ann: LLMAnnotator, items: list[ItemView], parser: LabelParser) -> list[dict]:
    out = []
    for it in items:
        req = ann.request(it, "annotate")
        resp = await ann.call(req, lambda *a: None)
        text = resp.extra.get("output", resp.raw) if resp.extra else resp.raw
        p = parser.parse(text)
        out.append({"item_id": it.item_id, "raw": resp.raw, "output": p.output,
                    "status": resp.status if resp.status != "ok" else p.status,
                    "confidence": resp.confidence})  # fmt: skip
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--api-base", required=True)
    ap.add_argument("--model", default="openai/smollm2")
    ap.add_argument("--data", default="/work/shared/data/sst2_dev/sst2_dev.csv")
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--instructions", default="Is the sentiment of this review negative or "
                    "positive?")  # fmt: skip
    ap.add_argument("--modes", nargs="+", default=["free", "auto"],
                    help="free, auto, grammar, json_schema or grammar-names")  # fmt: skip
    ap.add_argument("--out", default=None, help="write the per-item answers (JSONL)")
    args = ap.parse_args()
    df = pd.read_csv(args.data, dtype=str).head(args.n)
    items = [ItemView(r["idx"], r["sentence"]) for r in df.to_dict("records")]
    gold = dict(zip(df["idx"], df["label"], strict=True))
    builder = PromptBuilder(
        TaskType.classification, LABELS, NAMES, args.instructions,
        PromptTemplate.resolve(None, "classification", None, "prompt"),
        PromptTemplate.resolve(None, "confidence", None, "confidence"),
        None,
    )  # fmt: skip
    parser = LabelParser(LABELS, NAMES)
    rows = []
    for mode in args.modes:
        names_only = mode == "grammar-names"
        out_mode = "grammar" if names_only else mode
        cfg = AnnotatorConfig(
            name=f"smol-{mode}", model=args.model, api_base=args.api_base, price=0.0005,
            max_tokens=8, output=out_mode, max_retries=1,
        )  # fmt: skip
        ann = LLMAnnotator(cfg, builder, items, Redactor(), 8)
        ann.output.index_form = not names_only  # grammar-names: the label names only
        t0 = time.monotonic()
        res = asyncio.run(run(ann, items, parser))
        ann.close()
        secs = time.monotonic() - t0
        ok = [r for r in res if r["status"] == "ok"]
        right = sum(r["output"] == gold[r["item_id"]] for r in ok)
        conf = [r["confidence"] for r in ok if r["confidence"] is not None]
        row = {
            "mode": f"{mode} -> {ann.output.mode}" + (" (names only)" if names_only else ""),
            "items": len(res),
            "unparseable": sum(r["status"] == "unparseable" for r in res),
            "failed": sum(r["status"] == "failed" for r in res),
            "unparseable_share": round(sum(r["status"] != "ok" for r in res) / len(res), 3),
            "accuracy_all": round(right / len(res), 3),
            "accuracy_parsed": round(right / len(ok), 3) if ok else None,
            "mean_confidence": round(sum(conf) / len(conf), 3) if conf else None,
            "seconds": round(secs, 1),
        }
        rows.append(row)
        print(json.dumps(row), flush=True)
        if args.out:
            with open(args.out, "a") as f:
                for r in res:
                    f.write(json.dumps({"mode": mode, **r}) + "\n")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()

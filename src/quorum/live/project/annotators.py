"""The ``[[annotators]]`` entries of a project file: one arm each (LLM, local model, human)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from quorum.data.schema import GOLD_HUMAN

#: the largest money amount (a budget, a price) a project may name: beyond it the ledger's
#: integer nano-units and the reservation bounds are meaningless (issue 37: 1e300)
MAX_AMOUNT = 1e9

_Strict = ConfigDict(extra="forbid", allow_inf_nan=False)  # inf/nan: a clear error


class AnnotatorConfig(BaseModel):
    """One arm: ``kind = "llm"`` (litellm), ``"model"`` (local) or ``"human"`` (file queue)."""

    model_config = _Strict

    name: str = Field(min_length=1)
    kind: Literal["llm", "model", "human"] = "llm"
    # -- llm ----------------------------------------------------------------
    model: str | None = Field(
        default=None,
        description="litellm model name (llm), or 'zero-shot' / 'module:function' (model)",
    )
    api_base: str | None = None
    api_key_env: str | None = Field(default=None, description="env var that holds the key")
    price: float | None = Field(
        default=None, ge=0.0, le=MAX_AMOUNT, description="fixed cost per call"
    )
    input_cost_per_token: float | None = Field(default=None, ge=0.0, le=MAX_AMOUNT)
    output_cost_per_token: float | None = Field(default=None, ge=0.0, le=MAX_AMOUNT)
    confidence_price: float | None = Field(default=None, ge=0.0, le=MAX_AMOUNT)
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    seed: int | None = None
    params: dict[str, Any] = Field(default_factory=dict, description="extra litellm params")
    client: Literal["auto", "litellm", "http"] = Field(
        default="auto",
        description="auto: a lean HTTP client for openai/NAME at an api_base, litellm otherwise",
    )
    output: Literal["auto", "grammar", "json_schema", "free"] = Field(
        default="auto",
        description="constrain answers to the options (docs/live.md): auto detects it",
    )
    logprobs: bool | None = Field(
        default=None, description="logprobs over the options as confidence; None: if constrained"
    )
    prompt: str | None = Field(default=None, description="template text or a .txt file path")
    confidence_prompt: str | None = None
    system_prompt: str | None = None
    timeout: float = Field(default=60.0, gt=0.0)
    max_retries: int = Field(default=4, ge=0, le=20)
    backoff_base: float = Field(default=0.5, ge=0.0)
    backoff_max: float = Field(default=30.0, ge=0.0)
    concurrency: int = Field(default=8, ge=1, le=1024)
    rate_limit: float | None = Field(default=None, gt=0.0, description="requests per second")
    dead_after: int = Field(default=3, ge=1, description="consecutive failed calls -> dead")
    prompt_token_margin: float = Field(default=1.5, ge=1.0)
    max_prompt_tokens: int = Field(
        default=32768,
        ge=1,
        description="token-priced LLM: an item whose prompt is longer is not sent to it (a "
        "failed call at no cost naming the item) and does not set the reservation bound",
    )
    max_reply_chars: int = Field(
        default=65536,
        ge=1,
        description="a reply is stored (and read) up to this many characters; the rest is "
        "cut off and the call says so",
    )
    # -- pairwise judges (docs/live.md, "Pairwise judgements") -------------------------
    swap: bool = Field(
        default=False,
        description="pairwise: ask twice, the second time with the outputs exchanged (two "
        "paid calls, reserved together); the verdict is read by swap_rule",
    )
    swap_rule: Literal["consistent", "tie", "first"] = Field(
        default="consistent",
        description="what a swap judge's two verdicts make: consistent (the verdict both "
        "orders give; an inconsistent pair is no answer), tie (inconsistent = tie), first",
    )
    # -- human --------------------------------------------------------------
    queue: str | None = Field(default=None, description="human queue folder")

    @model_validator(mode="after")
    def _check(self) -> AnnotatorConfig:
        if self.name == GOLD_HUMAN:
            raise ValueError("'gold' is reserved (the gold column acting as the human)")
        bad = sorted(set(self.params) & {"api_key", "model", "messages", "api_base"})
        if bad:
            raise ValueError(
                f"annotator {self.name!r}: params may not set {bad}; keys come from the "
                "environment (api_key_env), model and api_base are their own fields"
            )
        if self.kind == "llm" and not self.model:
            raise ValueError(f"annotator {self.name!r}: an llm annotator needs `model`")
        if self.kind == "model" and not self.model:
            raise ValueError(
                f"annotator {self.name!r}: a model annotator needs `model` "
                "('zero-shot' or 'package.module:function')"
            )
        if self.kind == "human" and self.swap:
            raise ValueError(f"annotator {self.name!r}: swap is for machine annotators")
        if self.kind == "human" and self.price is None:
            raise ValueError(f"annotator {self.name!r}: a human annotator needs a `price`")
        if self.kind == "model" and self.model != "zero-shot" and ":" not in str(self.model):
            raise ValueError(
                f"annotator {self.name!r}: model must be 'zero-shot' or 'module:function', "
                f"got {self.model!r}"
            )
        return self

"""Answers parseable by construction: constrained output and logprob confidences (issue 27).

An LLM annotator's ``output`` setting says how its answers are held to the options the
prompt shows (the label names, or for multiple choice the option indices):

- ``"grammar"``: a GBNF grammar ``root ::= "negative" | "positive"`` in the request's
  ``grammar`` field (llama.cpp's server and llama-cpp-python's): the reply is one option
  (``index_form`` also allows ``Label: <index>``, the form the default prompts ask for);
- ``"json_schema"``: OpenAI structured outputs, ``response_format`` of type
  ``json_schema`` with ``{"label": {"enum": [...]}}`` (OpenAI, vLLM, llama.cpp's server);
  the option is read from the JSON;
- ``"free"``: no constraint; the free-text parser (:mod:`quorum.tasks.parsing`) as before;
- ``"auto"`` (default): ``grammar`` where the endpoint is a llama.cpp server (its
  ``/v1/models`` says ``owned_by`` ``llamacpp`` or ``me``, llama-cpp-python's, or it
  serves ``/props``), ``json_schema`` for a litellm model litellm knows to support
  response schemas, else ``free``. Asking costs nothing: one GET at start, no completion.

With ``logprobs`` (default: on where the output is constrained) the request asks for the
top token logprobs, and the answer's confidence is the probability of its first token
among the tokens that start an option: p(chosen) / sum p(t) over the top tokens t that
begin some option (the chosen token included); where no such alternative is listed, the
probability of the answer's tokens. It is stored with the call (``confidence``).

An endpoint that refuses the constraint (HTTP 400) is switched to ``free`` for the rest of
the run and the call is tried again without it (a refused try costs nothing).
"""

from __future__ import annotations

import json
import logging
import math
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from quorum.live.machines.prompts import PromptBuilder
from quorum.tasks.base import ItemView

log = logging.getLogger("quorum.live")

#: ``owned_by`` of the models list of llama.cpp's server and of llama-cpp-python's
LLAMA_OWNERS = ("llamacpp", "me")
#: request fields a constraint adds (removed again when the endpoint refuses them)
CONSTRAINT_KEYS = ("grammar", "response_format", "logprobs", "top_logprobs")


def _gbnf_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


@dataclass
class OutputConstraint:
    """How one annotator's answers are constrained (``mode``) and whether logprobs are
    asked for; ``why`` says how ``auto`` decided."""

    mode: str = "free"
    logprobs: bool = False
    builder: PromptBuilder | None = None
    why: str = "configured"
    top_logprobs: int = 20
    refused: bool = field(default=False)
    #: the grammar also allows the ``Label: <index>`` form the default prompts ask for
    #: (off: on 60 SST-2 items SmolLM2 was right on 52% of its index answers and on 58%
    #: of its label-name answers; scripts/constrained_output.py)
    index_form: bool = False

    # -- the options of an item ---------------------------------------------
    def options(self, item: ItemView) -> list[str]:
        """The strings an answer may be: option indices for multiple choice (the choices
        are long texts), else the label names the prompt shows."""
        b = self.builder
        return [] if b is None else b.kind.answer_forms(item)

    def params(self, item: ItemView) -> dict[str, Any]:
        """Request fields for an annotation of ``item`` (empty for ``free``)."""
        opts = self.options(item)
        if self.mode == "free" or self.refused or not opts:
            return {}
        out: dict[str, Any] = {}
        own = self.builder.kind.constraint_for(self.mode, item) if self.builder else None
        if own is not None:  # the kind's own form (a list of labels, quoted spans)
            out.update(own)
        elif self.mode == "grammar":
            # the form the default prompts ask for ("Label: <index>") or an option itself
            idx = " | ".join(_gbnf_string(str(i)) for i in range(len(opts)))
            alts = [f'"Label: " ({idx})'] if self.index_form else []
            alts += [_gbnf_string(o) for o in opts if not o.isdigit() or not self.index_form]
            out["grammar"] = "root ::= " + " | ".join(dict.fromkeys(alts))
        elif self.mode == "json_schema":
            out["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": "label",
                    "strict": True,
                    "schema": {
                        "type": "object",
                        "properties": {"label": {"type": "string", "enum": opts}},
                        "required": ["label"],
                        "additionalProperties": False,
                    },
                },
            }
        if self.logprobs:
            out["logprobs"] = True
            out["top_logprobs"] = self.top_logprobs
        return out

    # -- reading the reply -----------------------------------------------------
    def answer(self, content: str | None, params: dict[str, Any]) -> str | None:
        """The option text of a reply (the JSON's ``label`` for ``json_schema``, the index
        after ``Label:`` for a grammar's index form)."""
        if content is None:
            return None
        if "grammar" in params and content.startswith("Label: "):
            return content[len("Label: ") :]
        if "response_format" in params:
            try:
                data = json.loads(content)
            except ValueError:
                return content
            if isinstance(data, dict) and isinstance(data.get("label"), str | int):
                return str(data["label"])
        return content

    def confidence(
        self, content: str | None, answer: str | None, logprobs: list[dict] | None,
        options: list[str],
    ) -> float | None:  # fmt: skip
        """p(the answer's first token) over the top tokens that begin an option, or the
        probability of the answer's tokens (None without logprobs)."""
        if not logprobs or content is None or not answer:
            return None
        at = content.find(answer.strip())
        if at < 0:
            return None
        pos, first = 0, None
        for k, tok in enumerate(logprobs):
            text = str(tok.get("token", ""))
            if pos + len(text) > at and text.strip():
                first = k
                break
            pos += len(text)
        if first is None:
            return None
        chosen = logprobs[first]
        mine_text = answer.strip().lower()
        names = [o.lower() for o in options]
        idx = [str(i) for i in range(len(names))] if self.index_form or mine_text.isdigit() else []
        if not self.index_form and any(n.isdigit() for n in names):
            idx = []  # the options are numbers themselves (pairwise "1"/"2"): no index spelling
        opts = list(dict.fromkeys([*names, *idx]))
        if mine_text not in opts:
            opts.append(mine_text)
        alts: dict[str, float] = {}
        for alt in chosen.get("top_logprobs") or []:
            t = str(alt.get("token", "")).strip().lower()
            if t and t not in alts:
                alts[t] = math.exp(float(alt.get("logprob", -math.inf)))
        if not alts:
            return float(math.exp(sum(float(t.get("logprob", 0.0)) for t in logprobs[first:])))
        floor = min(alts.values())  # an option no listed token begins has at most this
        mass: dict[str, float] = {}
        for o in opts:
            hit = [p for t, p in alts.items() if o.startswith(t)]
            mass[o] = sum(hit) if hit else floor
        # the chosen answer's side: its own option, and the other spelling of it (index or
        # name of the same label)
        same = {mine_text}
        if mine_text.isdigit() and int(mine_text) < len(names) and (idx or mine_text not in names):
            same.add(names[int(mine_text)])
        elif mine_text in names and idx:
            same.add(str(names.index(mine_text)))
        total = sum(mass.values())
        return float(min(1.0, sum(mass[o] for o in same if o in mass) / total)) if total else None


def _get_json(url: str, key: str | None, timeout: float = 3.0) -> Any:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if key and key != "no-key":
        req.add_header("Authorization", f"Bearer {key}")
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def is_llama_cpp(api_base: str, key: str | None) -> bool:
    """Whether ``api_base`` is a llama.cpp server (free GETs; False when it cannot tell)."""
    base = api_base.rstrip("/")
    try:
        data = _get_json(base + "/models", key)
        owners = {str(m.get("owned_by", "")) for m in data.get("data", []) if isinstance(m, dict)}
        if owners & set(LLAMA_OWNERS):
            return True
    except Exception:
        pass
    root = base[: -len("/v1")] if base.endswith("/v1") else base
    try:
        props = _get_json(root + "/props", key)
        return isinstance(props, dict) and "default_generation_settings" in props
    except Exception:
        return False


def detect_output(
    cfg: Any, builder: PromptBuilder, server_model: str | None, api_key: str | None
) -> OutputConstraint:
    """The annotator's :class:`OutputConstraint`: its ``output`` setting, or for ``auto``
    what the endpoint supports (see the module docstring)."""
    mode = str(getattr(cfg, "output", "auto") or "auto")
    lp = getattr(cfg, "logprobs", None)
    why = "configured"
    if not builder.kind.constrained_output:
        mode, why = "free", f"{builder.kind.type.value} answers are free text"
    elif mode == "auto":
        if server_model is not None and cfg.api_base and is_llama_cpp(cfg.api_base, api_key):
            mode, why = "grammar", "llama.cpp server"
        elif cfg.api_base is None and _supports_schema(cfg.model):
            mode, why = "json_schema", "litellm: the model supports response schemas"
        else:
            mode, why = "free", "no constrained output detected"
    logprobs = (mode != "free") if lp is None else bool(lp)
    if lp is None and not builder.kind.logprob_confidence:
        logprobs = False
    if mode != "free" or logprobs:
        log.info(
            "annotator %r: output %s (%s)%s", cfg.name, mode, why,
            ", logprobs as confidence" if logprobs else "",
        )  # fmt: skip
    return OutputConstraint(mode=mode, logprobs=logprobs, builder=builder, why=why)


def _supports_schema(model: str | None) -> bool:
    if not model:
        return False
    try:
        from quorum.live.machines.chat_try import get_litellm

        return bool(get_litellm().supports_response_schema(model=model))
    except Exception:
        return False

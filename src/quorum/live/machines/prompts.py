"""Prompt templates: the paper's prompts (appendix "Prompts") as editable defaults.

Templates are plain text with ``{placeholder}`` fields (``{{`` and ``}}`` for literal
braces). Fields: ``text``, ``labels`` (label names as a list), ``indices`` (their indices),
``choices`` (numbered answer options), ``instructions``, ``context`` (the item's context:
``items.context_column``, the data its text was written from), ``prediction`` and
``task_verb`` (confidence prompt only). A project with a context column gets the bundled
``<kind>_context`` template where there is one (spans).

The prompt sent is the prompt written. The task's ``instructions`` (the header people see)
go where a template has ``{instructions}``; besides, ``task.instructions_in_prompt`` says
whether they are put before a template that does not place them: ``auto`` (the default)
puts them before the bundled default templates only, never before a prompt the user wrote;
``always`` before every such template; ``never`` nowhere. :meth:`PromptBuilder.added` says
in words what is added, for ``quorum plan``.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from quorum.errors import ConfigError
from quorum.tasks.base import ItemView, TaskKind, TaskType
from quorum.tasks.registry import kind_of

FIELDS = frozenset(
    {"text", "labels", "indices", "choices", "instructions", "context", "prediction", "task_verb"}
)


def default_template(name: str) -> str:
    """The bundled template ``classification``, ``multiple_choice``, ``summarization`` or
    ``confidence``."""
    return resources.files("quorum.tasks").joinpath(f"templates/{name}.txt").read_text().strip()


def has_template(name: str) -> bool:
    """Whether a bundled template ``name`` exists."""
    return resources.files("quorum.tasks").joinpath(f"templates/{name}.txt").is_file()


@dataclass(frozen=True)
class PromptTemplate:
    """A template; ``bundled``: one of QUORUM's defaults (not written by the user)."""

    text: str
    name: str = "prompt"
    bundled: bool = False

    def __post_init__(self) -> None:
        try:
            fields = {f for _, f, _, _ in string.Formatter().parse(self.text) if f is not None}
        except ValueError as exc:
            raise ConfigError(f"{self.name}: malformed template ({exc})") from None
        bad = sorted(f for f in fields if f not in FIELDS)
        if bad:
            raise ConfigError(
                f"{self.name}: unknown placeholder(s) {bad}; allowed: {sorted(FIELDS)}"
            )
        if "text" not in fields:
            raise ConfigError(f"{self.name}: the template must contain {{text}}")

    @property
    def fields(self) -> set[str]:
        return {f for _, f, _, _ in string.Formatter().parse(self.text) if f}

    def render(self, **values: str) -> str:
        return self.text.format_map({k: values.get(k, "") for k in FIELDS})

    @classmethod
    def resolve(cls, value: str | None, default: str, root: Path, name: str) -> PromptTemplate:
        """``value`` is inline template text (it has ``{text}``) or a path to a template
        file (any name); None: the default."""
        if value is None:
            return cls(default_template(default), name=f"{name} (default {default})", bundled=True)
        p = Path(value).expanduser()
        p = p if p.is_absolute() else root / p
        if "{" not in value and "\n" not in value:
            if p.is_file():
                return cls(p.read_text(encoding="utf-8").strip(), name=f"{name} ({p.name})")
            if p.is_dir():
                raise ConfigError(f"{name}: {p} is a folder, not a prompt file")
            if "/" in value or "\\" in value or Path(value).suffix or " " not in value.strip():
                raise ConfigError(
                    f"{name}: prompt file not found: {p} (inline template text must "
                    "contain {text})"
                )
        return cls(value, name=name)


class PromptBuilder:
    """Turns items into chat messages for one annotator."""

    def __init__(
        self,
        task_type: TaskType,
        labels: list[str] | None,
        label_names: dict[str, str] | None,
        instructions: str | None,
        template: PromptTemplate,
        confidence_template: PromptTemplate,
        system_prompt: str | None = None,
        instructions_in_prompt: str = "auto",
        kind: TaskKind | None = None,
        has_context: bool = False,
    ) -> None:
        self.task_type = TaskType(task_type)
        #: the task's kind: the options an answer may name, the verb, the prediction shown
        self.kind: TaskKind = kind or kind_of(task_type, labels, label_names)
        self.labels = list(labels or [])
        self.label_names = dict(label_names or {})
        self.instructions = (instructions or "").strip()
        self.template = template
        self.confidence_template = confidence_template
        self.system_prompt = system_prompt
        if instructions_in_prompt not in ("auto", "always", "never"):
            raise ConfigError(
                f"instructions_in_prompt must be auto, always or never, got "
                f"{instructions_in_prompt!r}"
            )
        self.instructions_in_prompt = instructions_in_prompt
        #: the items have a context (``items.context_column``)
        self.has_context = has_context

    def prepends(self, tmpl: PromptTemplate) -> bool:
        """Whether the instructions are put before ``tmpl`` (see the module docstring)."""
        if not self.instructions or "instructions" in tmpl.fields:
            return False
        mode = self.instructions_in_prompt
        return mode == "always" or (mode == "auto" and tmpl.bundled)

    def added(self, tmpl: PromptTemplate | None = None) -> str:
        """What is sent besides the template's own text, in words."""
        tmpl = tmpl or self.template
        parts = []
        if self.system_prompt:
            parts.append("a system message (system_prompt)")
        if self.prepends(tmpl):
            parts.append("task.instructions and a blank line before the prompt")
        elif self.instructions and "instructions" in tmpl.fields:
            parts.append("task.instructions where the prompt has {instructions}")
        what = "; ".join(parts) if parts else "nothing"
        if self.has_context and "context" not in tmpl.fields:
            what += " (the items' context is not sent: put {context} in the prompt)"
        if self.instructions and not self.prepends(tmpl) and "instructions" not in tmpl.fields:
            what += (
                " (task.instructions are not sent: put {instructions} in the prompt, or set "
                "task.instructions_in_prompt = 'always')"
            )
        return what

    def display_labels(self) -> list[str]:
        return [self.label_names.get(lab, lab) for lab in self.labels]

    def options(self, item: ItemView) -> list[str]:
        """What the indices in the answer refer to: the item's choices, else label names."""
        return self.kind.options(item)

    def _values(self, item: ItemView) -> dict[str, str]:
        opts = self.options(item)
        return {
            "text": item.text,
            "labels": str(self.display_labels()),
            "indices": str(list(range(len(opts)))),
            "choices": "; ".join(f"{i}: {c}" for i, c in enumerate(opts)),
            "instructions": self.instructions,
            "context": item.context or "",
            "task_verb": self.kind.task_verb,
        }

    def _messages(self, tmpl: PromptTemplate, values: dict[str, str]) -> list[dict[str, str]]:
        body = tmpl.render(**values)
        if self.prepends(tmpl):
            body = f"{self.instructions}\n\n{body}"
        msgs = []
        if self.system_prompt:
            msgs.append({"role": "system", "content": self.system_prompt})
        msgs.append({"role": "user", "content": body})
        return msgs

    def annotation_messages(self, item: ItemView) -> list[dict[str, str]]:
        return self._messages(self.template, self._values(item))

    def confidence_messages(self, item: ItemView, prediction: str) -> list[dict[str, str]]:
        values = self._values(item)
        prediction = self.kind.confidence_prediction(prediction, item)
        values["prediction"] = prediction
        return self._messages(self.confidence_template, values)

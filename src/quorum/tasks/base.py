"""What every task kind is: the type names, one item as a prompt sees it, and the
:class:`TaskKind` contract that routing, live runs, quality checks, the bench and the
exports ask instead of testing the task's type.

A kind answers four groups of questions (each a method or class attribute below):

* outputs: what an answer is (``discrete``: one of a fixed set of labels, equal or not;
  else free or structured), how a raw answer is parsed (:meth:`TaskKind.parse`), how close
  two outputs are (:meth:`TaskKind.aggregator`'s ``similarity``, in [0, 1]) and the
  headline metric against a reference (:meth:`TaskKind.metric`);
* aggregation: several weighted outputs of one item as one (:meth:`TaskKind.aggregator`);
* prompts: the bundled template, the options an answer may name, the output's length;
* people: what a human task shows (:meth:`TaskKind.human_options`), how a person's answer
  reads (:meth:`TaskKind.match_human`), the Label Studio control and how its result reads
  back (:meth:`TaskKind.labelstudio_control`, :meth:`TaskKind.labelstudio_raw`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Protocol

import numpy as np
import pandas as pd

from quorum.tasks.parsing import LabelParser, Parsed


class TaskType(StrEnum):
    """The name of a task kind, as a project file or a dataset's task.toml gives it."""

    classification = "classification"
    multiple_choice = "multiple_choice"
    summarization = "summarization"
    pairwise = "pairwise"
    multilabel = "multilabel"
    spans = "spans"

    @property
    def has_labels(self) -> bool:
        """Whether the task names a fixed label set (its kind is ``discrete``)."""
        return _DISCRETE[self]


#: each kind's ``discrete``, by type (filled as the kind classes are defined)
_DISCRETE: dict[TaskType, bool] = {}


@dataclass(frozen=True)
class ItemView:
    """What a prompt, a human task or a parser needs to know about one item; ``fields``:
    the item's named parts a kind reads from their own columns (a pairwise item's
    instruction and two outputs, :attr:`TaskKind.item_fields`), as ``(name, value)``;
    ``context``: data the text is about or was written from (a live project's
    ``items.context_column``), shown beside the text, never annotated."""

    item_id: str
    text: str
    choices: tuple[str, ...] | None = None
    fields: tuple[tuple[str, str], ...] = ()
    context: str | None = None

    def field(self, name: str) -> str | None:
        """The value of the field ``name`` (None: the item has none)."""
        return next((v for k, v in self.fields if k == name), None)


Embed = Callable[[list[str]], np.ndarray]


class Aggregator(Protocol):
    """Several outputs of one item as one (paper, sec. 3.3), and how close two outputs are.

    ``is_h(a)`` says whether annotator ``a`` is a human (weight w_H, else w_LLM);
    ``embed`` maps texts to unit-norm rows (used by kinds whose outputs are compared by
    meaning, ignored by the others); ``priority`` gives the trust order, asked for only to
    break a tie.
    """

    def vote_item(
        self,
        outputs: Mapping[str, str],
        is_h: Callable[[str], bool],
        priority: Callable[[], list[str]] | None,
        embed: Embed | None,
    ) -> tuple[str | None, float]: ...

    def agreement_item(
        self, outputs: Mapping[str, str], is_h: Callable[[str], bool], embed: Embed | None
    ) -> float: ...

    def majority(
        self,
        outputs: Mapping[str, str],
        is_h: Callable[[str], bool],
        priority: Callable[[], list[str]] | None,
        embed: Embed | None,
    ) -> str | None: ...

    def delta(self, outputs: list[str], embed: Embed | None) -> float: ...

    def similarity(self, out: str | None, ref: str, embed: Embed | None) -> float: ...

    def consensus(self, agreement: float, n: int) -> bool: ...


class TaskKind(ABC):
    """One task kind: everything that differs between kinds, asked by the rest of QUORUM.

    Parameters
    ----------
    labels : the label values (None for kinds without a label set).
    label_names : label value -> the name a prompt and a person see.
    """

    #: the kind's name in a project file (``[task] type``)
    type: ClassVar[TaskType]
    #: outputs are labels from a fixed set, compared by equality (the label model, the
    #: integer-coded compiled loops, the one-answer vote and LLM-consensus counts apply)
    discrete: ClassVar[bool]
    #: scores are graded, not 0/1: a calibration error is a score below a quantile
    #: (``summary_error_quantile``), and ``summary_audit`` applies
    graded: ClassVar[bool]
    #: the items' column that holds the reference output
    reference_column: ClassVar[str]
    #: the headline metric's name (``simulate`` rows, tables), its name in the dataset
    #: listing and its short form there
    metric_name: ClassVar[str]
    metric_label: ClassVar[str]
    metric_short: ClassVar[str]
    #: the metric's name on a figure's axis
    metric_title: ClassVar[str] = "Accuracy"
    #: the Hugging Face ``task_categories`` entry of an export's dataset card
    hf_task_category: ClassVar[str] = "text-classification"
    #: the bundled prompt template (``quorum/tasks/templates/<name>.txt``)
    template_name: ClassVar[str]
    #: "classified" / "summarized": the confidence prompt's verb
    task_verb: ClassVar[str]
    #: default max_tokens of one LLM answer
    max_tokens: ClassVar[int]
    #: the Label Studio control QUORUM reads answers from
    labelstudio_name: ClassVar[str]
    #: whether k > 1 people's answers to one item can be voted
    people_vote: ClassVar[bool]
    #: whether a person picks one of the options shown (Label Studio gets ``$options``)
    people_choose: ClassVar[bool] = False
    #: an answer can be constrained (a grammar or JSON schema of its forms); else free text
    constrained_output: ClassVar[bool] = False
    #: outputs are compared by meaning: their embeddings (``embed_outputs``) are needed
    embeds_outputs: ClassVar[bool] = False
    #: QUORUM audits with the LLM that gives the most quality at the money left, measured on
    #: a probe (``routing/quorum/audit/by_value.py``), instead of the panel check and bandit
    audit_llm_by_value: ClassVar[bool] = False
    #: standard errors taken off a dearer LLM's probe quality in the audit by value
    audit_value_z: ClassVar[float] = 0.0
    #: the bench gives it ``summarization_seeds`` (fewer seeds) and a 5x cost hint: its runs
    #: compare outputs as texts and are slow (summaries, spans)
    bench_few_seeds: ClassVar[bool] = False
    #: the audit by value's probe asks only the LLMs that could label every item left
    #: (``audit.by_value.probe_panel``); False asks every LLM
    probe_fitting_llms_only: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "type" in cls.__dict__:
            _DISCRETE[cls.type] = cls.discrete

    def __init__(
        self, labels: Sequence[str] | None = None, label_names: Mapping[str, str] | None = None
    ) -> None:
        self.labels = [str(x) for x in labels or []]
        self.label_names = dict(label_names or {})

    def __repr__(self) -> str:
        return f"{type(self).__name__}(labels={self.labels!r})"

    # -- a dataset folder as it is (no task file) -----------------------------------
    @classmethod
    def recognise(cls, items: pd.DataFrame, answers: pd.DataFrame) -> bool:
        """Whether a folder's items and answers (no task file) hold a task of this kind,
        by their columns."""
        return False

    @classmethod
    def folder_task(
        cls, name: str, items: pd.DataFrame, answers: pd.DataFrame
    ) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
        """(task file keys, items, annotations) of a folder :meth:`recognise` took: the
        frames in canonical form (``item_id, text[, gold]``; ``item_id, annotator,
        output``)."""
        raise NotImplementedError(f"{cls.__name__} does not read a folder without a task file")

    # -- outputs -------------------------------------------------------------------
    @abstractmethod
    def aggregator(self, w_human: float, w_llm: float, threshold: float) -> Aggregator:
        """The aggregation of several weighted outputs of one item."""

    @abstractmethod
    def metric(self, outputs: pd.Series, references: pd.Series, language: str) -> float:
        """The headline metric of final outputs against references (indexed by item)."""

    @abstractmethod
    def scorer(self, language: str) -> Callable[[str, str], float]:
        """score(output, reference) in [0, 1] for one item (the quality estimate's)."""

    def parser(self) -> LabelParser | None:
        """The parser of an LLM's raw answer into a label (None: free text)."""
        return None

    @abstractmethod
    def parse(self, parser: LabelParser | None, text: str | None, item: ItemView) -> Parsed:
        """An LLM's raw answer on ``item`` as an output, or why it cannot be used."""

    def confidence_prediction(self, prediction: str, item: ItemView) -> str:
        """The prediction as the confidence prompt shows it."""
        return prediction

    def placeholder(self, item_id: str, gold: Any, rng: np.random.Generator) -> str:
        """A stand-in truth for ``quorum plan``'s dry run: the gold where it is an output
        of this kind, else a made-up one."""
        return f"output of item {item_id}"

    def wrong_placeholder(self, truth: str, rng: np.random.Generator) -> str:
        """A stand-in wrong output for ``quorum plan``'s dry run: another label drawn with
        ``rng``, else the truth marked wrong."""
        others = [x for x in self.labels if x != truth]
        return others[int(rng.integers(len(others)))] if others else f"{truth} (wrong)"

    # -- prompts and options -----------------------------------------------------------
    def output_name(self, output: str) -> str:
        """An output as people read it (the export's ``label_name``): its label's name.

        >>> from quorum.tasks.registry import kind_of
        >>> kind_of("classification", ["0", "1"], {"1": "positive"}).output_name("1")
        'positive'
        """
        return self.label_names.get(output, output)

    def display_labels(self) -> list[str]:
        """The label names a prompt and a person see, in label order."""
        return [self.label_names.get(lab, lab) for lab in self.labels]

    def options(self, item: ItemView) -> list[str]:
        """What the indices in an answer refer to (empty: an answer is free text)."""
        return []

    def answer_forms(self, item: ItemView) -> list[str]:
        """The strings a constrained answer may be (empty: unconstrained)."""
        return []

    # -- people ------------------------------------------------------------------------
    def human_options(self, item: ItemView) -> list[str]:
        """The options a human task shows (empty: a free-text answer)."""
        return []

    @abstractmethod
    def match_human(self, raw: str, item: ItemView) -> str | None:
        """The output a person's answer names, or None."""

    @abstractmethod
    def labelstudio_control(self) -> str:
        """The Label Studio control element (one XML line) that collects an answer."""

    def labelstudio_objects(self) -> str:
        """Label Studio object tags shown after the item's ``$text`` (XML lines; none by
        default): e.g. a pairwise item's two outputs side by side."""
        return ""

    def labelstudio_data(self, item: ItemView, options: Sequence[str]) -> dict[str, Any]:
        """Task data the kind's objects show (``$name``), besides the item's text and the
        ``options`` a person picks from; a key ``text`` replaces what ``$text`` shows."""
        return {}

    @abstractmethod
    def labelstudio_raw(
        self, result: Mapping[str, Any], unshown: Callable[[str], str]
    ) -> tuple[bool, str | None]:
        """(whether ``result`` is this control's, a person's raw answer in it)."""

    def labelstudio_result(
        self,
        results: Sequence[Mapping[str, Any]],
        unshown: Callable[[str], str],
        text: str | None = None,
    ) -> str | None:
        """A person's raw answer in one annotation's ``result`` list, ``text`` being the
        item's text (None: nothing given with the kind's control). The default: the first
        result of the kind's control (:meth:`labelstudio_raw`)."""
        for r in results:
            mine, raw = self.labelstudio_raw(r, unshown)
            if mine:
                return raw
        return None

    def labelstudio_value(self, raw: str, options: list[str]) -> str:
        """A raw Label Studio answer as an output value."""
        return raw

    @abstractmethod
    def labelstudio_prediction(
        self, output: str, options: list[str], shown: Callable[[str], str]
    ) -> tuple[dict[str, Any] | list[dict[str, Any]], str] | None:
        """An LLM's output as a pre-annotation ``(value, type)``, a list of values for one
        region each (a span list); None: it cannot be shown."""

    # -- capabilities a kind may add (defaults keep classification and summarization) ----
    #: the ``[task]`` keys the kind takes beyond labels (passed to its constructor)
    option_keys: ClassVar[tuple[str, ...]] = ()
    #: the item's named parts a live project reads from their own columns
    #: (:meth:`live_items`): :attr:`ItemView.fields`, shown to people, exported
    item_fields: ClassVar[tuple[str, ...]] = ()
    #: a machine annotator may be asked twice, the second time with the item's parts
    #: exchanged (``swap``; :meth:`swapped_view`, :meth:`swap_back`)
    swaps: ClassVar[bool] = False

    def live_items(
        self,
        rows: pd.DataFrame,
        ids: Sequence[str],
        where: str,
        columns: Sequence[str] | None = None,
        text_template: str | None = None,
    ) -> tuple[pd.DataFrame, list[str]] | None:
        """A live project's items of this kind from the items file's ``rows`` (their ``ids``
        in order): a frame with ``text``, each of :attr:`item_fields` and, for a kind that
        :attr:`swaps`, ``text_swapped``; and notes on what was accepted but is worth
        knowing. ``columns`` names the file's columns of the fields (None: found by
        name); ``text_template`` builds the text. None: the text column alone (the
        default). Bad input is a one-line :class:`~quorum.errors.DataValidationError`."""
        return None

    def swapped_view(self, item: ItemView, text: str) -> ItemView:
        """``item`` with its parts exchanged and ``text`` as its text (the second order of a
        ``swap`` annotator)."""
        raise NotImplementedError(f"{type(self).__name__} has no swapped order")

    def swap_back(self, output: str | None) -> str | None:
        """An output given on :meth:`swapped_view` in the item's own terms."""
        raise NotImplementedError(f"{type(self).__name__} has no swapped order")

    @classmethod
    def needs_labels(cls) -> bool:
        """Whether a task of this kind needs a non-empty ``labels`` list."""
        return cls.discrete

    def check_frames(
        self, items: pd.DataFrame, annotations: pd.DataFrame
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Gold and answers in the kind's canonical form, or a one-line error (the
        default: as they are)."""
        return items, annotations

    def usable_outputs(self, outputs: pd.Series) -> pd.Series | None:
        """Whether each recorded output is an output of this kind (None: the label-set
        rule of discrete kinds, or any non-blank text)."""
        return None

    def extra_metrics(self, outputs: pd.Series, references: pd.Series) -> dict[str, float]:
        """Metrics reported beside the headline one (``simulate`` rows)."""
        return {}

    def output_vectors(self) -> Embed | None:
        """Vectors of outputs for the baselines' similarity of answers where the kind is
        not ``discrete`` and does not embed by meaning (None: their text fallback)."""
        return None

    #: an LLM's token log-probabilities may stand for its confidence in an answer
    logprob_confidence: ClassVar[bool] = True

    #: an output is a set of labels (:meth:`label_set` reads it, :meth:`output_of_labels`
    #: writes it): k people's sets are voted label by label with each person's reliability
    #: per label (``live/humans/reliability.py``) and the report shows figures per label;
    #: else an output is voted and counted whole
    label_set_outputs: ClassVar[bool] = False

    def label_set(self, output: str) -> frozenset[str] | None:
        """The labels of an output that is a set of labels (None: it is not one, or the
        kind's outputs are no label sets)."""
        return None

    def output_of_labels(self, labels: Iterable[str]) -> str:
        """The output that holds ``labels`` (kinds whose outputs are label sets)."""
        raise NotImplementedError(f"{type(self).__name__} outputs are no label sets")

    #: how replay's compiled loops (``routing/quorum/compiled``) hold this kind's outputs:
    #: "labels" (a code per distinct output, compared by equality: the weighted vote of
    #: labels), "label_sets" (each output a set of labels as an int64 bitmask,
    #: :meth:`output_bitmasks`: the per-label vote and Jaccard by popcount), or None (the
    #: Python loops only)
    compiled_outputs: ClassVar[str | None] = None

    def output_bitmasks(self, outputs: Sequence[str]) -> np.ndarray | None:
        """Each output of a "label_sets" kind as an int64 bitmask (bit j: the task's label
        j), for the compiled loops; None where the outputs are no label sets the
        bitmasks can hold (the Python loops then run)."""
        return None

    def constraint(self, mode: str, forms: list[str]) -> dict[str, Any] | None:
        """Request fields constraining an answer to ``forms`` under ``mode`` ("grammar",
        "json_schema"); None: the one-option-of-``forms`` constraint of label kinds."""
        return None

    def constraint_for(self, mode: str, item: ItemView) -> dict[str, Any] | None:
        """Request fields constraining an answer on ``item`` (a kind whose constraint
        depends on the item's text overrides this); the default: :meth:`constraint` of
        the item's :meth:`answer_forms`."""
        return self.constraint(mode, self.answer_forms(item))

    def human_answer_help(self, item: ItemView) -> str | None:
        """What a person may answer on ``item``, for the message about an answer that is
        not usable (None: the label kinds' message, naming the labels)."""
        return None

    #: outputs are spans of the item's text (the report page highlights them)
    marks_text: ClassVar[bool] = False

    def text_spans(self, output: str | None) -> list[tuple[int, int, str]]:
        """The ``(start, end, label)`` character spans an output marks in its item's
        text (empty for kinds whose outputs are not spans)."""
        return []

    #: k people's answers on one item are voted with the kind's weighted vote and each
    #: person's reliability is their mean score against the reference (see
    #: :mod:`quorum.live.humans.reliability`), not a Dawid-Skene fit over equal answers
    graded_people: ClassVar[bool] = False

    def weighted_vote(
        self,
        outputs: Mapping[str, str],
        weights: Mapping[str, float],
        priority: list[str] | None = None,
    ) -> str | None:
        """Several outputs of one item as one, each annotator with the weight given (k
        people's answers where :attr:`graded_people`; ``priority`` breaks ties)."""
        raise NotImplementedError(f"{type(self).__name__} has no weighted vote of people")

    def people_score(self, output: str, reference: str) -> float:
        """How right a person's ``output`` is against ``reference``, in [0, 1] (their
        reliability's evidence where :attr:`graded_people`)."""
        raise NotImplementedError(f"{type(self).__name__} does not score people")

    def hf_label_column(self, values: list[str | None]) -> tuple[list[Any], Any] | None:
        """The Hugging Face ``label`` column and its feature for exported outputs (None:
        the export's own rule, a ``ClassLabel`` or text)."""
        return None

    @classmethod
    def table_values(
        cls, items: pd.DataFrame, answers: pd.DataFrame
    ) -> tuple[pd.DataFrame, pd.DataFrame]:
        """Gold and answer cells as a dataset folder's text files hold them (``quorum
        datasets init``; the default: as they are)."""
        return items, answers

    @classmethod
    def labels_found(cls, values: pd.Series) -> list[str]:
        """The label set of gold (or answer) cells: their distinct values, sorted."""
        return sorted({str(v).strip() for v in values if str(v).strip()})

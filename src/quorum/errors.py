"""Exceptions raised by QUORUM. Every message says what is wrong and where."""


class QuorumError(Exception):
    """Base class for QUORUM errors."""


class DataValidationError(QuorumError, ValueError):
    """Items, annotations or a task file do not satisfy the canonical data model."""


class DatasetNotFoundError(QuorumError, FileNotFoundError):
    """A named dataset or its files could not be found."""


class BudgetExceededError(QuorumError):
    """A charge would take spending above the hard budget limit."""


class ConfigError(QuorumError, ValueError):
    """A project or benchmark configuration is invalid."""


class UnsupportedTaskError(QuorumError, ValueError):
    """A method cannot run on this kind of task (e.g. ARAIDA on summarization)."""


def validation_summary(exc: Exception) -> str:
    """A pydantic ``ValidationError`` as one line, ``where: what`` per problem joined by
    ``; `` (``annotators.0.price: Input should be greater than or equal to 0``; a check of
    the whole model has no ``where``), without pydantic's input dumps and links; any other
    exception: its text.

    >>> from pydantic import BaseModel, Field, ValidationError
    >>> class M(BaseModel):
    ...     price: float = Field(ge=0)
    >>> try:
    ...     M(price=-1)
    ... except ValidationError as exc:
    ...     print(validation_summary(exc))
    price: Input should be greater than or equal to 0
    """
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    parts = []
    for err in errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        what = str(err.get("msg", "")).removeprefix("Value error, ")
        parts.append(f"{where}: {what}" if where else what)
    return "; ".join(parts) or str(exc)

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

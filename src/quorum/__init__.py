"""QUORUM: QUality-Optimized Routing Using Multiple annotators."""

from quorum.data.schema import AnnotatorSpec, Dataset, TaskSpec, TaskType

__version__ = "0.1.0"
__all__ = ["AnnotatorSpec", "Dataset", "TaskSpec", "TaskType", "__version__"]

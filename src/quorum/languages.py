"""The languages QUORUM's features and bundled models know, and their names.

>>> normalise_language("en-US"), normalise_language("Català"), normalise_language("jpn")
('en', 'ca', 'ja')
"""

from __future__ import annotations

SUPPORTED_LANGUAGES: tuple[str, ...] = ("en", "es", "ca", "ja")

_ALIASES: dict[str, str] = {
    "english": "en",
    "eng": "en",
    "spanish": "es",
    "spa": "es",
    "español": "es",
    "catalan": "ca",
    "cat": "ca",
    "català": "ca",
    "japanese": "ja",
    "jpn": "ja",
    "jp": "ja",
}


def normalise_language(language: str) -> str:
    """Map ``"en-US"``, ``"English"``, ``"jpn"``... to one of :data:`SUPPORTED_LANGUAGES`."""
    code = str(language).strip().lower().replace("_", "-")
    code = _ALIASES.get(code, code.split("-")[0])
    code = _ALIASES.get(code, code)
    if code not in SUPPORTED_LANGUAGES:
        raise ValueError(
            f"unsupported language {language!r} for linguistic features; "
            f"supported: {', '.join(SUPPORTED_LANGUAGES)}"
        )
    return code

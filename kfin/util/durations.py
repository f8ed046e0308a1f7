"""Durations as kubectl writes and reads them: "90s", "10m", "1h30m", "2d"."""

import re

_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
_TERM = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_duration(text: str) -> float:
    """Seconds in `text`; a bare number is seconds (as kubectl's --request-timeout accepts)."""
    text = text.strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    terms = _TERM.findall(text)
    if not terms or "".join(n + u for n, u in terms) != text:
        raise ValueError(f'invalid duration "{text}" (use forms like 30s, 10m, 1h30m, 2d)')
    return sum(float(n) * _UNITS[u] for n, u in terms)


def format_age(seconds: float) -> str:
    """kubectl's HumanDuration: 45s, 5m10s, 150m, 3h20m, 30h, 4d6h, 400d, 3y20d."""
    s = int(seconds)
    if s < 0:
        return "0s"
    if s < 120:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        return f"{minutes}m{s % 60}s" if s % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    years, days = hours // (24 * 365), (hours // 24) % 365
    if hours < 24 * 365 * 8 and days:
        return f"{years}y{days}d"
    return f"{years}y"

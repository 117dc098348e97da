"""The overview's chart, drawn here as inline SVG: no script, no library, nothing loaded from elsewhere.

Colours are SVG presentation attributes, which the pages' Content-Security-Policy (no inline `style`)
allows; each bar's `<title>` is what a pointer over it shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from moneyrail.engine.overview import MinuteOfWork

WIDTH = 720
HEIGHT = 140
AXIS = 20  # room for the labels under the bars
SUCCEEDED = "#2f855a"
OTHER = "#dd6b20"


def throughput_svg(minutes: Sequence[MinuteOfWork]) -> str:
    """Attempts finished per minute over the last hour, oldest on the left: succeeded, and the others
    (retried, failed, dead-lettered) stacked above them."""
    peak = max((minute.succeeded + minute.other for minute in minutes), default=0)
    scale = (HEIGHT - AXIS - 14) / peak if peak else 0.0
    slot = WIDTH / max(len(minutes), 1)
    bars = []
    for index, minute in enumerate(minutes):
        x = index * slot + 1
        width = max(slot - 2, 1)
        base = HEIGHT - AXIS
        succeeded_height = minute.succeeded * scale
        other_height = minute.other * scale
        label = escape(
            f"{minute.minute:%H:%M} UTC: {minute.succeeded} succeeded, {minute.other} retried or failed"
        )
        bars.append(
            f"<g><title>{label}</title>"
            f'<rect x="{x:.1f}" y="{base - succeeded_height:.1f}" width="{width:.1f}" '
            f'height="{succeeded_height:.1f}" fill="{SUCCEEDED}"/>'
            f'<rect x="{x:.1f}" y="{base - succeeded_height - other_height:.1f}" width="{width:.1f}" '
            f'height="{other_height:.1f}" fill="{OTHER}"/></g>'
        )
    total = sum(minute.succeeded for minute in minutes)
    others = sum(minute.other for minute in minutes)
    summary = escape(
        f"Last hour: {total} attempts succeeded, {others} retried or failed; at most {peak} a minute"
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'role="img" aria-label="{summary}" data-testid="throughput-chart">'
        f'<line x1="0" y1="{HEIGHT - AXIS}" x2="{WIDTH}" y2="{HEIGHT - AXIS}" stroke="#8a94a3"/>'
        + "".join(bars)
        + f'<text x="0" y="{HEIGHT - 4}" font-size="11" fill="#5b6470">60 min ago</text>'
        f'<text x="{WIDTH}" y="{HEIGHT - 4}" font-size="11" fill="#5b6470" text-anchor="end">now</text>'
        f'<text x="0" y="11" font-size="11" fill="#5b6470">{peak} / min</text>'
        "</svg>"
    )

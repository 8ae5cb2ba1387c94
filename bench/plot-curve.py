#!/usr/bin/env python3
"""Draws bench/latency-curve.sh's figures as an SVG: response-time
percentiles (log scale) against offered rate, one line per percentile per
load generator, and prints the table and each generator's knee as Markdown.

Usage: bench/plot-curve.py FIGURES.json OUT.svg

Standard library only: the SVG is written as text.
"""

import json
import math
import sys
from html import escape

PCTS = [("p50", "p50"), ("p90", "p90"), ("p99", "p99"), ("p99_9", "p99.9")]
COLOURS = {"p50": "#1f77b4", "p90": "#2ca02c", "p99": "#ff7f0e", "p99_9": "#d62728"}
# The generators are told apart by line style and marker, the percentiles
# by colour, so either can be read without the other.
STYLES = {
    "cacheoff": {"dash": "", "marker": "circle", "label": "cacheoff open-loop"},
    "oha": {"dash": "7,4", "marker": "square", "label": "oha -q (latency correction)"},
}
KNEE_FACTOR = 10  # p99 this many times its lowest-load value
W, H = 1000, 660
L, R, T, B = 80, 250, 96, 70  # margins: room for the legend on the right


def past(r, base):
    """Why a step is past the knee, or None: any error, fewer than 95% of
    the offered requests answered, or p99 above KNEE_FACTOR x `base`."""
    if r["errors"] > 0:
        return f"{r['errors']} errors"
    if r["achieved_rps"] < 0.95 * r["offered_rps"]:
        return f"only {r['achieved_rps'] / r['offered_rps']:.0%} of the offer answered"
    if r["p99"] > KNEE_FACTOR * base:
        return f"p99 {r['p99']:.3g} ms > {KNEE_FACTOR}x {base:.3g} ms"
    return None


def knee(rows):
    """The knee: the highest step within limits above which every step is
    past them (a step past them with good ones above is a disturbance of
    the shared machine, listed apart). (rate or None, explanation)."""
    rows = sorted(rows, key=lambda r: r["offered_rps"])
    base = rows[0]["p99"]
    why = [(r, past(r, base)) for r in rows]
    k = None
    for i, (r, w) in enumerate(why):
        if w is None and all(w2 for _, w2 in why[i + 1:]):
            k = r["offered_rps"]
            break
    blips = [f"{r['offered_rps']:.0f}/s ({w})" for r, w in why if w and (k is None or r["offered_rps"] < k)]
    text = "within limits up to the last step" if why[-1][1] is None else \
        "past it: " + "; ".join(f"{r['offered_rps']:.0f}/s ({w})" for r, w in why if k and r["offered_rps"] > k)
    if blips:
        text += "; steps past the limits below it: " + "; ".join(blips)
    return k, text


def nice_step(span, ticks=8):
    raw = span / ticks
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def fmt_ms(v):
    if v >= 1:
        return f"{v:g}"
    return f"{v:.3g}"


def fmt_rate(v):
    return f"{v / 1000:.3g}k" if v >= 1000 else f"{v:g}"


def svg(fig):
    rows = fig["rows"]
    ceiling = fig["wrk_rps"]
    xmax = max(r["offered_rps"] for r in rows) * 1.04
    vals = [r[k] for r in rows for k, _ in PCTS if r.get(k)]
    ylo = 10 ** math.floor(math.log10(min(vals) * 0.8))
    yhi = 10 ** math.ceil(math.log10(max(vals)))
    if yhi / ylo < 100:
        yhi = ylo * 100
    pw, ph = W - L - R, H - T - B

    def x(v):
        return L + pw * v / xmax

    def y(v):
        return T + ph * (1 - (math.log10(v) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
        'font-family="DejaVu Sans, Arial, sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{L}" y="24" font-size="16" font-weight="bold">{escape(fig["title"])}</text>',
    ]
    for i, line in enumerate(fig["subtitle"]):
        out.append(f'<text x="{L}" y="{44 + 16 * i}" fill="#444">{escape(line)}</text>')
    # Grid and y axis: decades labelled, 2 and 5 as fainter lines.
    d = ylo
    while d <= yhi * 1.0001:
        for m in (1, 2, 5):
            v = d * m
            if v > yhi * 1.0001:
                break
            yy = y(v)
            out.append(f'<line x1="{L}" x2="{L + pw}" y1="{yy:.1f}" y2="{yy:.1f}" '
                       f'stroke="{"#ccc" if m == 1 else "#eee"}"/>')
            if m == 1 or (yhi / ylo <= 1000):
                out.append(f'<text x="{L - 6}" y="{yy + 4:.1f}" text-anchor="end">{fmt_ms(v)}</text>')
        d *= 10
    step = nice_step(xmax)
    v = 0.0
    while v <= xmax:
        xx = x(v)
        out.append(f'<line x1="{xx:.1f}" x2="{xx:.1f}" y1="{T}" y2="{T + ph}" stroke="#eee"/>')
        out.append(f'<text x="{xx:.1f}" y="{T + ph + 16}" text-anchor="middle">{fmt_rate(v)}</text>')
        v += step
    # Top axis: share of wrk's ceiling.
    for pct in range(0, 1000, 10):
        v = ceiling * pct / 100
        if v > xmax:
            break
        if pct % 20 == 0 or pct == 100:
            out.append(f'<text x="{x(v):.1f}" y="{T - 6}" text-anchor="middle" fill="#666">{pct}%</text>')
            out.append(f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{T}" y2="{T + 4}" stroke="#666"/>')
    out.append(f'<line x1="{x(ceiling):.1f}" x2="{x(ceiling):.1f}" y1="{T}" y2="{T + ph}" '
               'stroke="#555" stroke-dasharray="2,3"/>')
    out.append(f'<text x="{x(ceiling) - 4:.1f}" y="{T + 14}" text-anchor="end" fill="#555">'
               f'wrk -t2 -c100 ceiling {ceiling:,.0f}/s</text>')
    out.append(f'<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    out.append(f'<text x="{L + pw / 2}" y="{H - 22}" text-anchor="middle">'
               'offered rate (requests/s; top: % of wrk -&gt; nginx, same run)</text>')
    out.append(f'<text transform="translate(20,{T + ph / 2}) rotate(-90)" text-anchor="middle">'
               'response time from intended send (ms, log scale)</text>')

    # One line per (tool, percentile); a point with errors gets a cross.
    for tool, st in STYLES.items():
        pts = sorted((r for r in rows if r["tool"] == tool), key=lambda r: r["offered_rps"])
        if not pts:
            continue
        for key, _ in PCTS:
            c = COLOURS[key]
            xy = [(x(r["offered_rps"]), y(max(r[key], ylo))) for r in pts if r.get(key)]
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b in xy)
            dash = f' stroke-dasharray="{st["dash"]}"' if st["dash"] else ""
            out.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="1.8"{dash}/>')
            for a, b in xy:
                out.append(marker(st["marker"], a, b, c))
        for r in pts:
            if r["errors"] > 0:
                a, b = x(r["offered_rps"]), y(max(r["p99_9"], ylo))
                out.append(f'<path d="M{a - 6:.1f},{b - 6:.1f} l12,12 m0,-12 l-12,12" stroke="black" stroke-width="1.5"/>')
        k, _ = knee(pts)
        if k is not None:
            kdash = ' stroke-dasharray="3,2"' if st["dash"] else ""
            out.append(f'<line x1="{x(k):.1f}" x2="{x(k):.1f}" y1="{T + ph}" y2="{T + ph - 14}" '
                       f'stroke="black" stroke-width="2"{kdash}/>')
            # Labels near the right edge go left of their tick.
            right = x(k) > L + pw * 0.8
            out.append(f'<text x="{x(k) + (-3 if right else 3):.1f}" y="{T + ph - 4 - (16 if tool == "oha" else 0)}" '
                       f'font-size="11" text-anchor="{"end" if right else "start"}">{escape(tool)} knee {fmt_rate(k)}/s</text>')

    # Legend: generators by style, percentiles by colour.
    lx, ly = L + pw + 20, T + 10
    out.append(f'<text x="{lx}" y="{ly}" font-weight="bold">load generator</text>')
    for i, (tool, st) in enumerate(STYLES.items()):
        yy = ly + 20 + 20 * i
        dash = f' stroke-dasharray="{st["dash"]}"' if st["dash"] else ""
        out.append(f'<line x1="{lx}" x2="{lx + 36}" y1="{yy}" y2="{yy}" stroke="#333" stroke-width="1.8"{dash}/>')
        out.append(marker(st["marker"], lx + 18, yy, "#333"))
        out.append(f'<text x="{lx + 44}" y="{yy + 4}">{escape(st["label"])}</text>')
    ly += 80
    out.append(f'<text x="{lx}" y="{ly}" font-weight="bold">percentile</text>')
    for i, (key, name) in enumerate(PCTS):
        yy = ly + 20 + 20 * i
        out.append(f'<line x1="{lx}" x2="{lx + 36}" y1="{yy}" y2="{yy}" stroke="{COLOURS[key]}" stroke-width="3"/>')
        out.append(f'<text x="{lx + 44}" y="{yy + 4}">{name}</text>')
    ly += 120
    out.append(f'<path d="M{lx + 12},{ly - 6} l12,12 m0,-12 l-12,12" stroke="black" stroke-width="1.5"/>')
    out.append(f'<text x="{lx + 44}" y="{ly + 4}">step with errors</text>')
    ly += 24
    out.append(f'<line x1="{lx + 18}" x2="{lx + 18}" y1="{ly + 6}" y2="{ly - 8}" stroke="black" stroke-width="2"/>')
    out.append(f'<text x="{lx + 44}" y="{ly + 4}">knee: highest step with</text>')
    for j, line in enumerate([f"p99 &lt;= {KNEE_FACTOR}x its 1st step's,",
                              "&gt;=95% answered, no errors,", "and every step above not"]):
        out.append(f'<text x="{lx + 44}" y="{ly + 20 + 15 * j}">{line}</text>')
    ly += 75
    for j, line in enumerate(fig.get("notes", [])):
        out.append(f'<text x="{lx}" y="{ly + 15 * j}" font-size="11" fill="#444">{escape(line)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def marker(kind, a, b, c):
    if kind == "square":
        return f'<rect x="{a - 3.5:.1f}" y="{b - 3.5:.1f}" width="7" height="7" fill="white" stroke="{c}" stroke-width="1.5"/>'
    return f'<circle cx="{a:.1f}" cy="{b:.1f}" r="3.5" fill="{c}"/>'


def table(fig):
    lines = [
        "| tool | offered/s | % of wrk | achieved/s | p50 ms | p90 ms | p99 ms | p99.9 ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(fig["rows"], key=lambda r: (r["tool"], r["offered_rps"])):
        lines.append(
            f"| {r['tool']} | {r['offered_rps']:.0f} | {r['share_pct']:.0f}% | {r['achieved_rps']:.0f} | "
            + " | ".join(f"{r[k]:.3f}" if r[k] < 10 else f"{r[k]:.1f}" for k, _ in PCTS)
            + f" | {r['errors']} |"
        )
    lines.append("")
    for tool in STYLES:
        pts = [r for r in fig["rows"] if r["tool"] == tool]
        if pts:
            k, why = knee(pts)
            at = f"{fmt_rate(k)}/s ({k * 100 / fig['wrk_rps']:.0f}% of wrk)" if k else "below the first step"
            lines.append(f"- {tool} knee: {at}; {why}")
    return "\n".join(lines)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: plot-curve.py FIGURES.json OUT.svg")
    with open(sys.argv[1]) as f:
        fig = json.load(f)
    with open(sys.argv[2], "w") as f:
        f.write(svg(fig))
    print(table(fig))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Draws commopt's simulated timelines as one SVG picture.

    timeline-svg.py TIMELINE.json [TIMELINE.json ...] [-o OUT.svg]
                    [--title TEXT ...] [--plan PLAN.json ...]

reads Chrome traces as `commopt-translate --export-timeline` writes them
(docs/Estimate.md, section 3) and draws each as a panel: one row per track
(each function's compute, thread 1, and its communication channels 0..k,
threads 2..k+2, named by the trace's thread_name metadata), a rectangle per
complete event (ph "X"), coloured by kind, a time axis in milliseconds and
a title with the plan's name and its step time (the end of its last event;
in steady state, the span of the iterations shown and its mean per
iteration) and, in a single step, the communication left exposed (the
step less the compute's busy time), and a dashed line where it ends. All
panels share one time scale, so that several plans of the same step
(e.g. DDP's policy and commopt's plan) compare by length; one legend lists
the kinds drawn.

Kinds: compute by its `phase` (forward, backward; other, e.g. the
optimizer's update); collectives by their `op`: comm.sparse_allreduce is
sparse, any other dense. The trace gives a dense collective's bytes on the
wire (a sparse one's dense gradient's) but not its wire type: to colour dense collectives in f16 or bf16 apart
from f32, give each timeline the plan of the same module
(`commopt-translate --export-plan`, docs/Plan.md), whose collectives name
their `wire`; without plans, dense collectives are drawn as "dense".

--title and --plan are each given either never or once per timeline, in
the timelines' order. The title defaults to the file's name. Errors (a
missing file, invalid JSON, a trace with no events to draw) name the file
and exit with status 1. Python's standard library only.
"""

import argparse
import json
import math
import os
import sys
from xml.sax.saxutils import escape, quoteattr

# Kind -> (legend label, fill colour, text colour), in the legend's order.
KINDS = {
    "forward": ("forward compute", "#9ecae1", "#000000"),
    "backward": ("backward compute", "#2171b5", "#ffffff"),
    "other": ("other compute (optimizer update)", "#6a51a3", "#ffffff"),
    "dense-f32": ("dense collective, f32 wire", "#e6550d", "#ffffff"),
    "dense-f16": ("dense collective, f16/bf16 wire", "#31a354", "#ffffff"),
    "dense": ("dense collective (wire type not given)", "#d94801",
              "#ffffff"),
    "sparse": ("sparse collective (values + indices)", "#c51b8a", "#ffffff"),
    "unknown": ("other event", "#969696", "#000000"),
}

# Geometry, in SVG user units (pixels).
WIDTH = 1200
MARGIN = 16
ROW_HEIGHT = 22
ROW_GAP = 6
TITLE_HEIGHT = 38
AXIS_HEIGHT = 30
PANEL_GAP = 18
LEGEND_ROW = 18
CHAR_WIDTH = 6.2          # of the 10.5 px labels, roughly
FONT = "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\""


class TimelineError(Exception):
    """An input that cannot be drawn; the message names the file."""


def load_json(path, what):
    """The JSON value in `path`, or a TimelineError saying why not."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise TimelineError(f"{path}: no such file")
    except IsADirectoryError:
        raise TimelineError(f"{path}: is a directory, not a {what}")
    except UnicodeDecodeError as error:
        raise TimelineError(f"{path}: not UTF-8 text: {error}")
    except json.JSONDecodeError as error:
        raise TimelineError(f"{path}: invalid JSON: {error}")
    except OSError as error:
        raise TimelineError(f"{path}: {error.strerror or error}")


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)


class Track:
    """One row: a thread of one process."""

    def __init__(self, pid, tid):
        self.pid = pid
        self.tid = tid
        self.name = None
        self.sort_index = tid
        self.events = []


class Timeline:
    """One trace: its tracks, its events and what its title says."""

    def __init__(self, path, title, wires):
        self.path = path
        self.title = title
        self.wires = wires
        data = load_json(path, "Chrome trace")
        if isinstance(data, list):          # the JSON Array Format
            data = {"traceEvents": data}
        if not isinstance(data, dict) or \
                not isinstance(data.get("traceEvents"), list):
            raise TimelineError(f"{path}: not a Chrome trace: expected an "
                                "object with a \"traceEvents\" array")
        self.other = data.get("otherData") \
            if isinstance(data.get("otherData"), dict) else {}
        self.processes = {}
        self.tracks = {}
        for index, event in enumerate(data["traceEvents"]):
            self.read_event(index, event)
        self.events = [e for t in self.tracks.values() for e in t.events]
        if not self.events:
            raise TimelineError(f"{path}: no events to draw (no complete "
                                "events, \"ph\": \"X\", in traceEvents)")
        self.start_us = min(e["ts"] for e in self.events)
        self.end_us = max(e["ts"] + e["dur"] for e in self.events)

    def track(self, pid, tid):
        key = (pid, tid)
        if key not in self.tracks:
            self.tracks[key] = Track(pid, tid)
        return self.tracks[key]

    def read_event(self, index, event):
        where = f"{self.path}: traceEvents[{index}]"
        if not isinstance(event, dict):
            raise TimelineError(f"{where}: not an object")
        phase = event.get("ph")
        args = event.get("args") if isinstance(event.get("args"), dict) \
            else {}
        pid, tid = event.get("pid", 0), event.get("tid", 0)
        if phase == "M":
            name = event.get("name")
            if name == "process_name":
                self.processes[pid] = str(args.get("name", pid))
            elif name == "thread_name":
                self.track(pid, tid).name = str(args.get("name", tid))
            elif name == "thread_sort_index" and \
                    is_number(args.get("sort_index")):
                self.track(pid, tid).sort_index = args["sort_index"]
            return
        if phase != "X":
            return
        if not is_number(event.get("ts")) or not is_number(event.get("dur")) \
                or event["dur"] < 0:
            raise TimelineError(f"{where}: a complete event needs numeric "
                                "\"ts\" and non-negative \"dur\"")
        self.track(pid, tid).events.append(
            {"name": str(event.get("name", "")), "cat": event.get("cat"),
             "ts": float(event["ts"]), "dur": float(event["dur"]),
             "args": args, "kind": self.kind_of(event.get("cat"), args)})

    def kind_of(self, category, args):
        if category == "compute":
            phase = args.get("phase")
            return phase if phase in ("forward", "backward") else "other"
        if category != "communication":
            return "unknown"
        if "sparse" in str(args.get("op", "")):
            return "sparse"
        if self.wires is None:
            return "dense"
        members = args.get("members")
        wire = self.wires.get(frozenset(members)) \
            if isinstance(members, list) else None
        if wire in ("f16", "bf16"):
            return "dense-f16"
        return "dense-f32" if wire == "none" else "dense"

    def ordered_tracks(self):
        """The tracks with events or names, compute first, as the trace's
        sort indices order them."""
        return sorted(self.tracks.values(),
                      key=lambda t: (t.pid, t.sort_index, t.tid))

    def label(self, track):
        name = track.name or f"thread {track.tid}"
        if len({t.pid for t in self.tracks.values()}) > 1:
            process = self.processes.get(track.pid, f"process {track.pid}")
            name = f"{process.split()[-1]} {name}"
        return name

    def heading(self):
        """(title, subtitle)."""
        steady = any("iteration" in e["args"] for e in self.events)
        if steady:
            iterations = len({e["args"]["iteration"] for e in self.events
                              if "iteration" in e["args"]})
            span_us = self.end_us - self.start_us
            time = f"{iterations} iterations in {ms(span_us)} " \
                f"({ms(span_us / iterations)} per iteration)"
        else:
            time = f"step {ms(self.end_us)}"
            compute_us = sum(e["dur"] for e in self.events
                             if e["cat"] == "compute")
            if any(e["cat"] == "communication" for e in self.events) and \
                    len({t.pid for t in self.tracks.values()}) == 1:
                time += f", {ms(self.end_us - compute_us)} of " \
                    "communication exposed"
        details = [f"{key} {self.other[key]}"
                   for key in ("model", "cluster", "device", "mode")
                   if isinstance(self.other.get(key), str) and
                   self.other[key]]
        details.append(os.path.basename(self.path))
        return f"{self.title}: {time}", ", ".join(details)


def read_wires(path):
    """frozenset of gradient names -> wire type, of a plan's collectives."""
    plan = load_json(path, "plan")
    if not isinstance(plan, dict) or \
            not isinstance(plan.get("collectives"), list):
        raise TimelineError(f"{path}: not a commopt plan: expected an "
                            "object with a \"collectives\" array")
    wires = {}
    for collective in plan["collectives"]:
        if not isinstance(collective, dict):
            continue
        names = [g.get("name") for g in collective.get("gradients", [])
                 if isinstance(g, dict)]
        wires.setdefault(frozenset(names), collective.get("wire", "none"))
    return wires


def nice_step(span, ticks=10):
    """A round tick spacing (1, 2 or 5 times a power of ten) that divides
    `span` into at most about `ticks` parts."""
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw:
            return factor * power
    return 10 * power


def ms(us):
    """Microseconds `us` in milliseconds, to 2 decimals (3 below 1 ms)."""
    return f"{us / 1e3:.{2 if abs(us) >= 1e3 else 3}f} ms"


def fmt_ms(value, step):
    decimals = max(0, -math.floor(math.log10(step))) if step < 1 else 0
    return f"{value:.{decimals}f}"


def fit(text, width):
    """`text` cut to fit `width` pixels, or "" when nothing useful fits."""
    chars = int((width - 6) / CHAR_WIDTH)
    if chars >= len(text):
        return text
    if chars < 4:
        return ""
    return text[:chars - 1] + "\u2026"


def render(timelines):
    label_width = max(len(tl.label(t)) for tl in timelines
                      for t in tl.tracks.values()) * 7 + 2 * MARGIN
    left = max(90, label_width)
    right = WIDTH - MARGIN
    end_us = max(tl.end_us for tl in timelines)
    origin_us = min(0.0, min(tl.start_us for tl in timelines))
    span_us = max(end_us - origin_us, 1e-9)
    scale = (right - left) / span_us

    def x(us):
        return left + (us - origin_us) * scale

    step_ms = nice_step(span_us / 1e3)
    out = []
    y = MARGIN
    for number, tl in enumerate(timelines):
        title, subtitle = tl.heading()
        out.append(f'<g class="panel" id="panel-{number}">')
        out.append(f'<text class="title" x="{MARGIN}" y="{y + 14}" '
                   f'font-size="14" font-weight="bold">{escape(title)}</text>')
        out.append(f'<text class="subtitle" x="{MARGIN}" y="{y + 30}" '
                   f'font-size="11" fill="#555555">{escape(subtitle)}</text>')
        y += TITLE_HEIGHT
        top = y
        for track in tl.ordered_tracks():
            label = tl.label(track)
            out.append(f'<rect class="row" x="{left}" y="{y}" '
                       f'width="{right - left}" height="{ROW_HEIGHT}" '
                       'fill="#f3f3f3"/>')
            out.append(f'<text class="track" x="{left - 8}" '
                       f'y="{y + ROW_HEIGHT / 2 + 4}" font-size="11" '
                       f'text-anchor="end">{escape(label)}</text>')
            for event in sorted(track.events, key=lambda e: e["ts"]):
                out.append(event_svg(event, x, y))
            y += ROW_HEIGHT + ROW_GAP
        # Time axis, and the end of this timeline's last event.
        bottom = y - ROW_GAP
        out.append(f'<line class="end" x1="{x(tl.end_us):.2f}" y1="{top - 3}" '
                   f'x2="{x(tl.end_us):.2f}" y2="{bottom + 2}" '
                   'stroke="#000000" stroke-width="1.2" '
                   'stroke-dasharray="3,2"/>')
        out.append(f'<line x1="{left}" y1="{bottom + 2}" x2="{right}" '
                   f'y2="{bottom + 2}" stroke="#333333" stroke-width="1"/>')
        tick = 0.0
        while tick * 1e3 <= end_us - origin_us + 1e-6:
            tx = x(origin_us + tick * 1e3)
            out.append(f'<line x1="{tx:.2f}" y1="{top}" x2="{tx:.2f}" '
                       f'y2="{bottom + 6}" stroke="#000000" '
                       'stroke-opacity="0.12" stroke-width="1"/>')
            out.append(f'<text class="tick" x="{tx:.2f}" y="{bottom + 17}" '
                       'font-size="10" text-anchor="middle">'
                       f'{fmt_ms(tick, step_ms)}</text>')
            tick += step_ms
        out.append(f'<text class="axis" x="{right}" y="{bottom + 28}" '
                   'font-size="10" text-anchor="end" fill="#555555">'
                   'time (ms)</text>')
        out.append('</g>')
        y = bottom + AXIS_HEIGHT + PANEL_GAP

    # Legend: the kinds drawn, in KINDS' order, in columns.
    drawn = {e["kind"] for tl in timelines for e in tl.events}
    kinds = [k for k in KINDS if k in drawn]
    out.append('<g class="legend">')
    column_width = (right - MARGIN) / 3
    for index, kind in enumerate(kinds):
        lx = MARGIN + (index % 3) * column_width
        ly = y + (index // 3) * LEGEND_ROW
        label, fill, _ = KINDS[kind]
        out.append(f'<rect class="swatch" x="{lx:.1f}" y="{ly}" width="14" '
                   f'height="12" fill="{fill}"/>')
        out.append(f'<text x="{lx + 20:.1f}" y="{ly + 10}" font-size="11">'
                   f'{escape(label)}</text>')
    out.append('</g>')
    height = y + math.ceil(len(kinds) / 3) * LEGEND_ROW + MARGIN

    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{height}" viewBox="0 0 {WIDTH} {height}" {FONT}>',
        '<title>commopt timeline'
        f'{"s" if len(timelines) > 1 else ""}: '
        f'{escape("; ".join(tl.title for tl in timelines))}</title>',
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        *out, '</svg>', ''])


def event_svg(event, x, y):
    """A rect for `event` on the row at `y`, with a tooltip and, where it
    fits, its name."""
    x0 = x(event["ts"])
    width = max(x(event["ts"] + event["dur"]) - x0, 0.6)
    _, fill, ink = KINDS[event["kind"]]
    args = event["args"]
    tip = [event["name"],
           f"{event['ts'] / 1e3:.3f} ms + {event['dur'] / 1e3:.3f} ms"]
    if "op" in args:
        tip.append(str(args["op"]))
    if is_number(args.get("bytes")):
        # A sparse allreduce's bytes are its dense gradient's; only the
        # selected part of it travels.
        what = ("gradient, of which the selected part travels"
                if event["kind"] == "sparse" else "on the wire")
        tip.append(f"{args['bytes'] / 2**20:.3f} MiB {what}")
    if is_number(args.get("exposed_us")) and args["exposed_us"] > 0:
        tip.append(f"{args['exposed_us'] / 1e3:.3f} ms exposed")
    stroke = ' stroke="#ffffff" stroke-width="0.6"' if width >= 3 else ""
    parts = [f'<rect class="event {event["kind"]}" x="{x0:.2f}" '
             f'y="{y + 1}" width="{width:.2f}" height="{ROW_HEIGHT - 2}" '
             f'fill="{fill}"{stroke}><title>{escape(", ".join(tip))}'
             '</title></rect>']
    text = fit(event["name"], width)
    if text:
        parts.append(f'<text x="{x0 + 3:.2f}" y="{y + ROW_HEIGHT / 2 + 4}" '
                     f'font-size="10.5" fill="{ink}" '
                     f'pointer-events="none">{escape(text)}</text>')
    return "".join(parts)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Draw commopt's timelines (Chrome traces written by "
        "commopt-translate --export-timeline) as one SVG: a row per track, "
        "a rectangle per event coloured by kind, one panel per timeline on "
        "a shared time scale.",
        epilog="Exit status: 0 on success, 1 when an input cannot be read "
        "or drawn, 2 on a usage error.")
    parser.add_argument("timelines", nargs="+", metavar="TIMELINE.json",
                        help="a Chrome trace from commopt-translate "
                        "--export-timeline")
    parser.add_argument("-o", "--output", default="-", metavar="OUT.svg",
                        help="where to write the SVG (default: stdout)")
    parser.add_argument("--title", action="append", default=[],
                        metavar="TEXT",
                        help="the plan's name, once per timeline in order "
                        "(default: the file's name); the step time follows")
    parser.add_argument("--plan", action="append", default=[],
                        metavar="PLAN.json",
                        help="the plan of the same module "
                        "(commopt-translate --export-plan), once per "
                        "timeline in order, for the wire type of dense "
                        "collectives")
    args = parser.parse_args(argv)
    count = len(args.timelines)
    for option, values in (("--title", args.title), ("--plan", args.plan)):
        if values and len(values) != count:
            parser.error(f"{option} given {len(values)} time(s) for "
                         f"{count} timeline(s): give it once per timeline "
                         "or not at all")
    try:
        timelines = []
        for index, path in enumerate(args.timelines):
            title = args.title[index] if args.title else \
                os.path.splitext(os.path.basename(path))[0]
            wires = read_wires(args.plan[index]) if args.plan else None
            timelines.append(Timeline(path, title, wires))
        svg = render(timelines)
    except TimelineError as error:
        print(f"timeline-svg.py: error: {error}", file=sys.stderr)
        return 1
    if args.output == "-":
        sys.stdout.write(svg)
    else:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(svg)
        except OSError as error:
            print(f"timeline-svg.py: error: {args.output}: "
                  f"{error.strerror or error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

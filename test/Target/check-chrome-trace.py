"""Validates a Chrome trace event file as Perfetto and chrome://tracing read it.

Usage: python3 check-chrome-trace.py [TRACE_JSON]   (stdin when no file)

Checks the rules of the trace event format (JSON Object Format) that the
viewers rely on, for the event kinds commopt writes:

- the document is strict JSON (no NaN or Infinity) and an object whose
  "traceEvents" is an array; "displayTimeUnit", when present, is "ms" or
  "ns", and "otherData" an object;
- every event is an object with a string "ph": "X" (complete) or "M"
  (metadata);
- an X event has a string "name", numeric "ts" and "dur" that are finite and
  >= 0, integer "pid" and "tid", and optionally a string "cat" and an
  object "args";
- an M event is process_name or thread_name (with a string args.name), or
  process_sort_index or thread_sort_index (with an integer
  args.sort_index); thread metadata has an integer "tid";
- every thread that has X events is named by one thread_name event, every
  process by one process_name event;
- the X events of one thread (a compute track, a communication channel)
  never overlap (up to rounding, 1e-9 relative).

Prints a summary, one line per track, or the problems and exits with 1.
Standard library only.
"""

import json
import math
import sys

METADATA_NAMES = {
    "process_name": ("name", str),
    "thread_name": ("name", str),
    "process_sort_index": ("sort_index", int),
    "thread_sort_index": ("sort_index", int),
}


def is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value):
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def reject_constant(name):
    raise ValueError(f"{name} is not valid JSON")


class Checker:
    def __init__(self):
        self.errors = []
        self.complete = {}  # (pid, tid) -> [(ts, end, name)]
        self.thread_names = {}  # (pid, tid) -> name
        self.process_names = {}  # pid -> name
        self.metadata_count = 0

    def error(self, index, message):
        self.errors.append(f"traceEvents[{index}]: {message}")

    def check_complete(self, index, event):
        name = event.get("name")
        if not isinstance(name, str):
            self.error(index, "X event without a string name")
        for field in ("ts", "dur"):
            value = event.get(field)
            if not is_number(value) or value < 0:
                self.error(index, f"{field} must be a finite number >= 0, "
                           f"got {value!r}")
                return
        for field in ("pid", "tid"):
            if not is_int(event.get(field)):
                self.error(index, f"{field} must be an integer, "
                           f"got {event.get(field)!r}")
                return
        if "cat" in event and not isinstance(event["cat"], str):
            self.error(index, "cat must be a string")
        if "args" in event and not isinstance(event["args"], dict):
            self.error(index, "args must be an object")
        track = (event["pid"], event["tid"])
        self.complete.setdefault(track, []).append(
            (event["ts"], event["ts"] + event["dur"], name))

    def check_metadata(self, index, event):
        self.metadata_count += 1
        name = event.get("name")
        if name not in METADATA_NAMES:
            self.error(index, f"unknown metadata event {name!r}")
            return
        if not is_int(event.get("pid")):
            self.error(index, "pid must be an integer")
            return
        thread = name.startswith("thread_")
        if thread and not is_int(event.get("tid")):
            self.error(index, "thread metadata needs an integer tid")
            return
        key, kind = METADATA_NAMES[name]
        args = event.get("args")
        value = args.get(key) if isinstance(args, dict) else None
        if not (isinstance(value, str) if kind is str else is_int(value)):
            self.error(index, f"{name} needs args.{key} of type "
                       f"{kind.__name__}")
            return
        if name == "thread_name":
            track = (event["pid"], event["tid"])
            if track in self.thread_names:
                self.error(index, f"thread {track} named twice")
            self.thread_names[track] = value
        elif name == "process_name":
            if event["pid"] in self.process_names:
                self.error(index, f"process {event['pid']} named twice")
            self.process_names[event["pid"]] = value

    def check_document(self, document):
        if not isinstance(document, dict):
            self.errors.append("the document is not a JSON object")
            return
        events = document.get("traceEvents")
        if not isinstance(events, list):
            self.errors.append("traceEvents is missing or not an array")
            return
        if document.get("displayTimeUnit", "ms") not in ("ms", "ns"):
            self.errors.append("displayTimeUnit must be 'ms' or 'ns'")
        if not isinstance(document.get("otherData", {}), dict):
            self.errors.append("otherData must be an object")
        for index, event in enumerate(events):
            if not isinstance(event, dict):
                self.error(index, "an event must be an object")
                continue
            phase = event.get("ph")
            if phase == "X":
                self.check_complete(index, event)
            elif phase == "M":
                self.check_metadata(index, event)
            else:
                self.error(index, f"unexpected ph {phase!r}")
        self.check_tracks()

    def check_tracks(self):
        for track, events in self.complete.items():
            if track not in self.thread_names:
                self.errors.append(f"thread {track} has events but no "
                                   "thread_name")
            if track[0] not in self.process_names:
                self.errors.append(f"process {track[0]} has events but no "
                                   "process_name")
            events.sort()
            for previous, current in zip(events, events[1:]):
                tolerance = 1e-9 * max(1.0, abs(previous[1]))
                if current[0] < previous[1] - tolerance:
                    self.errors.append(
                        f"thread {track}: '{current[2]}' at {current[0]} "
                        f"overlaps '{previous[2]}' ending at {previous[1]}")
                    break

    def summary(self):
        count = sum(len(events) for events in self.complete.values())
        lines = [f"valid trace: {count} complete events, "
                 f"{self.metadata_count} metadata events"]
        for track in sorted(self.thread_names):
            events = self.complete.get(track, [])
            busy = sum(end - start for start, end, _ in events)
            lines.append(
                f"process {track[0]} '{self.process_names.get(track[0])}' "
                f"thread {track[1]} '{self.thread_names[track]}': "
                f"{len(events)} events, busy {busy:.3f} us")
        return "\n".join(lines)


def main():
    source = open(sys.argv[1]) if len(sys.argv) > 1 else sys.stdin
    checker = Checker()
    try:
        document = json.load(source, parse_constant=reject_constant)
    except ValueError as error:
        print(f"not valid JSON: {error}", file=sys.stderr)
        return 1
    checker.check_document(document)
    for error in checker.errors:
        print(error, file=sys.stderr)
    if checker.errors:
        return 1
    print(checker.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())

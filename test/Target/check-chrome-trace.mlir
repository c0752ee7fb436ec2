// RUN: not %python %S/check-chrome-trace.py %S/Inputs/trace-invalid.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=INVALID
// RUN: not %python %S/check-chrome-trace.py %S/Inputs/trace-nan.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NAN
// RUN: not %python %S/check-chrome-trace.py %S/Inputs/trace-array.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ARRAY

// check-chrome-trace.py, the validator the timeline tests use, rejects what
// Perfetto and chrome://tracing would not load or would draw wrong.

// INVALID: displayTimeUnit must be 'ms' or 'ns'
// INVALID-NEXT: traceEvents[4]: dur must be a finite number >= 0, got -1
// INVALID-NEXT: traceEvents[5]: ts must be a finite number >= 0, got '30'
// INVALID-NEXT: traceEvents[6]: pid must be an integer, got 1.5
// INVALID-NEXT: traceEvents[8]: unexpected ph 'B'
// INVALID-NEXT: traceEvents[9]: thread_name needs args.name of type str
// INVALID-NEXT: thread (1, 1): 'b' at 5 overlaps 'a' ending at 10
// INVALID-NEXT: thread (1, 2) has events but no thread_name
// INVALID-NEXT: process 2 has events but no process_name
// INVALID-NOT: valid trace

// NAN: not valid JSON: NaN is not valid JSON
// ARRAY: the document is not a JSON object

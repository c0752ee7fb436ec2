"""Checks a commopt-tune report: check-tune-report.py REPORT CANDIDATES
MEASURED STEPS. The candidates' count; the model's choice is the least
predicted; the measured choice has the least median of the MEASURED
measured plans, each with STEPS timed steps, and is never slower than the
model's choice."""

import json
import statistics
import sys

report = json.load(open(sys.argv[1]))
candidates, measured_count, steps = map(int, sys.argv[2:5])
entries = report["candidates"]
assert report["format"] == "commopt-tune" and report["version"] == 1, report
assert len(entries) == candidates, len(entries)
planned = [e for e in entries if "predicted_us" in e]
model = [e for e in entries if e["model_choice"]]
assert len(model) == 1, model
assert model[0]["predicted_us"] == min(e["predicted_us"] for e in planned)
measured = [e for e in entries if "median_us" in e]
assert len(measured) == measured_count, measured
for entry in measured:
    assert len(entry["measured_us"]) == steps, entry
    assert entry["median_us"] == statistics.median(entry["measured_us"])
chosen = [e for e in entries if e["measured_choice"]]
assert len(chosen) == 1, chosen
assert chosen[0]["median_us"] == min(e["median_us"] for e in measured)
assert chosen[0]["median_us"] <= model[0]["median_us"]
assert report["measured_choice"] == chosen[0]["varied"]
ratio = report["measured_choice_over_model_choice"]
assert abs(ratio - chosen[0]["median_us"] / model[0]["median_us"]) < 1e-12
print("check-tune-report: ok")

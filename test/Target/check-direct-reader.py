"""Imports gradient profiles with commopt-translate --import-grad-profile,
with and without --grad-profile-json-values, and fails unless both give the
same output and exit status for each.

    check-direct-reader.py COMMOPT_TRANSLATE PATH...

Each PATH is a JSON file or a folder whose *.json commopt gradient
profiles are all imported."""

import glob
import os
import subprocess
import sys


def profiles(path):
    if os.path.isfile(path):
        return [path]
    found = []
    for name in sorted(glob.glob(os.path.join(path, "*.json"))):
        with open(name, encoding="utf-8", errors="replace") as f:
            if "commopt-grad-profile" in f.read(4096):
                found.append(name)
    return found


def main():
    translate = sys.argv[1]
    checked = 0
    for path in sys.argv[2:]:
        for profile in profiles(path):
            runs = [subprocess.run([translate, "--import-grad-profile",
                                    profile] + extra, capture_output=True,
                                   text=True)
                    for extra in ([], ["--grad-profile-json-values"])]
            direct, values = runs
            if (direct.returncode, direct.stdout, direct.stderr) != \
                    (values.returncode, values.stdout, values.stderr):
                sys.exit(f"{profile}: the direct layer reader gives "
                         f"{direct.returncode}:\n{direct.stdout}"
                         f"{direct.stderr}\nllvm::json values give "
                         f"{values.returncode}:\n{values.stdout}"
                         f"{values.stderr}")
            checked += 1
    print(f"{checked} profiles imported alike with and without the direct "
          "layer reader")


if __name__ == "__main__":
    main()

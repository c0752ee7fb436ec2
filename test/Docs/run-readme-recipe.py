#!/usr/bin/python3
"""Runs a shell recipe of the README exactly as it is written there.

A recipe is the first ```sh block after a line `<!-- recipe: NAME -->`. It
runs with bash -euo pipefail in a fresh directory that holds links to the
repository's `examples` and to the build tree as `build`, so that its
relative paths mean what they mean from a checkout's root, and nothing is
written into the checkout. Its output goes to stdout for FileCheck.

    run-readme-recipe.py README.md NAME --source SRC --build BUILD
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile


def find_recipe(readme, name):
    text = open(readme).read()
    marker = f"<!-- recipe: {name} -->"
    start = text.find(marker)
    if start < 0:
        sys.exit(f"error: {readme} has no recipe '{name}'")
    block = re.search(r"```sh\n(.*?)```", text[start:], re.S)
    if not block:
        sys.exit(f"error: recipe '{name}' in {readme} has no ```sh block")
    return block.group(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("readme")
    parser.add_argument("name")
    parser.add_argument("--source", required=True)
    parser.add_argument("--build", required=True)
    arguments = parser.parse_args()
    recipe = find_recipe(arguments.readme, arguments.name)
    with tempfile.TemporaryDirectory() as directory:
        os.symlink(os.path.join(arguments.source, "examples"),
                   os.path.join(directory, "examples"))
        os.symlink(arguments.build, os.path.join(directory, "build"))
        result = subprocess.run(["bash", "-euo", "pipefail", "-c", recipe],
                                cwd=directory, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
    sys.stdout.write(result.stdout)
    if result.returncode != 0:
        sys.exit(f"error: recipe '{arguments.name}' failed with status "
                 f"{result.returncode}")


if __name__ == "__main__":
    main()

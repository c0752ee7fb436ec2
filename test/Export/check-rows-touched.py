"""Checks an exported profile's `sparse` figures (export-sparse.test).

    check-rows-touched.py PROFILE PARAM COUNT COO

PARAM must have `sparse.rows_touched` with COUNT nondecreasing fractions in
(0, 1/2], each at most twice the one before (more ranks touch popular rows
together, so the union grows more slowly than the batches), and
`sparse.coo` equal to COO (true or false); every other param must have no
`sparse`. Prints a line per param, or fails with a message.
"""

import json
import sys


def main(path, name, count, coo):
    with open(path) as f:
        profile = json.load(f)
    for layer in profile["layers"]:
        for param in layer["params"]:
            sparse = param.get("sparse")
            if param["name"] != name:
                if sparse is not None:
                    sys.exit(f"{param['name']}: unexpected sparse {sparse}")
                print(f"{param['name']}: dense")
                continue
            fractions = sparse["rows_touched"]
            if len(fractions) != int(count):
                sys.exit(f"{name}: {len(fractions)} fractions, not {count}")
            if any(not 0 < f <= 0.5 for f in fractions):
                sys.exit(f"{name}: a fraction out of (0, 1/2]: {fractions}")
            pairs = list(zip(fractions, fractions[1:]))
            if any(b < a for a, b in pairs):
                sys.exit(f"{name}: decreasing: {fractions}")
            if not all(b < 2 * a for a, b in pairs):
                sys.exit(f"{name}: grows as fast as the ranks: {fractions}")
            if sparse["coo"] != (coo == "true"):
                sys.exit(f"{name}: coo {sparse['coo']}, expected {coo}")
            print(f"{name}: {len(fractions)} fractions, nondecreasing, below "
                  "1/2, growing more slowly than the ranks; coo "
                  f"{str(sparse['coo']).lower()}")


if __name__ == "__main__":
    main(*sys.argv[1:])

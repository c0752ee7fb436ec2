// Invalid gradient profiles, one fault each: the import fails with an error
// that names the field (or, for malformed JSON, its line and column).

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-malformed.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MALFORMED
// MALFORMED: grad-profile-malformed.json:4:3: error: malformed JSON: Expected , or } after object property

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-not-object.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NOT-OBJECT
// NOT-OBJECT: grad-profile-not-object.json:1:1: error: expected object

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-bad-format.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=FORMAT
// FORMAT: grad-profile-bad-format.json:1:1: error: format: expected "commopt-grad-profile", got "pytorch-profile"

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-bad-version.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=VERSION
// VERSION: grad-profile-bad-version.json:1:1: error: version: unsupported version 2; expected 1

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-missing-field.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=MISSING
// MISSING: grad-profile-missing-field.json:1:1: error: layers[1].backward_us: missing value

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-missing-forward.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NO-FORWARD
// NO-FORWARD: grad-profile-missing-forward.json:1:1: error: forward_us: missing value; it may be left out only when every layer has its own forward_us, and layers[1] has none

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-wrong-type.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TYPE
// TYPE: grad-profile-wrong-type.json:1:1: error: layers[0].params[0].shape: expected array

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-negative-backward.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEG-BACKWARD
// NEG-BACKWARD: grad-profile-negative-backward.json:1:1: error: layers[1].backward_us: time must be a finite number of microseconds >= 0, got -3.5

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-negative-forward.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEG-FORWARD
// NEG-FORWARD: grad-profile-negative-forward.json:1:1: error: forward_us: time must be a finite number of microseconds >= 0, got -1

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-negative-update.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=NEG-UPDATE
// NEG-UPDATE: grad-profile-negative-update.json:1:1: error: update_us: time must be a finite number of microseconds >= 0, got -5

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-zero-dim.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DIM
// DIM: grad-profile-zero-dim.json:1:1: error: layers[0].params[1].shape[1]: dimension must be positive, got 0

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-unknown-dtype.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DTYPE
// DTYPE: grad-profile-unknown-dtype.json:1:1: error: layers[3].params[0].dtype: unknown dtype "f8"; expected f16, bf16, f32 or f64

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-duplicate-param.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DUPLICATE
// DUPLICATE: grad-profile-duplicate-param.json:1:1: error: layers[1].params[0].name: duplicate parameter name "fc.weight" (first at layers[0].params[0])

// An alias is a name like any other: no parameter or alias may share it.
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-alias-duplicate.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ALIAS-DUPLICATE
// ALIAS-DUPLICATE: grad-profile-alias-duplicate.json:1:1: error: layers[1].params[0].aliases[1]: duplicate parameter name "a.weight" (first at layers[0].params[0])

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-alias-not-string.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ALIAS-TYPE
// ALIAS-TYPE: grad-profile-alias-not-string.json:1:1: error: layers[0].params[0].aliases[0]: expected string

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-unused-not-bool.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=UNUSED-TYPE
// UNUSED-TYPE: grad-profile-unused-not-bool.json:1:1: error: layers[0].params[0].unused: expected boolean

// A field given twice in one object: JSON readers keep one of the two
// silently (here a second "layers" would replace the first), so it is an
// error at the second, naming where the first is.
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-duplicate-field.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=DUPLICATE-FIELD
// DUPLICATE-FIELD: grad-profile-duplicate-field.json:9:3: error: duplicate field "layers" (first at line 6, column 3)

// The header's totals (num_layers, num_params, num_elements) must agree with
// the body; a mismatch is reported at the total's own line and column, with
// both numbers. grad-profile-totals.json is the profile they agree with.
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-totals-cut-short.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CUT-SHORT
// CUT-SHORT: grad-profile-totals-cut-short.json:5:3: error: num_layers: says 4 layers but "layers" holds 3: is the profile cut short?

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-totals-layer-added.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=LAYER-ADDED
// LAYER-ADDED: grad-profile-totals-layer-added.json:5:3: error: num_layers: says 4 layers but "layers" holds 5: was the profile edited after its totals were written?

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-totals-param-lost.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=PARAM-LOST
// PARAM-LOST: grad-profile-totals-param-lost.json:6:3: error: num_params: says 5 params but the layers hold 4: is the profile cut short?

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-totals-shape-edited.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SHAPE-EDITED
// SHAPE-EDITED: grad-profile-totals-shape-edited.json:7:3: error: num_elements: says 1769 elements but the params hold 3369: was the profile edited after its totals were written?

// The body's elements are summed without overflow.
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-totals-elements-overflow.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=ELEMENTS-OVERFLOW
// ELEMENTS-OVERFLOW: grad-profile-totals-elements-overflow.json:7:3: error: num_elements: says 1769 elements but the params hold more than 9223372036854775807: was the profile edited after its totals were written?

// A total is an integer >= 0: anything else is an error of its own, also at
// the total's line, before the body's values are checked.
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-total-negative.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOTAL-NEGATIVE
// TOTAL-NEGATIVE: grad-profile-total-negative.json:6:3: error: num_params: a count must be >= 0, got -5

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-total-fractional.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOTAL-FRACTIONAL
// TOTAL-FRACTIONAL: grad-profile-total-fractional.json:7:3: error: num_elements: a count must be an integer, got 1769.5

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-total-string.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOTAL-STRING
// TOTAL-STRING: grad-profile-total-string.json:5:3: error: num_layers: a count must be a number, got the string "4"

// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-total-too-large.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=TOTAL-TOO-LARGE
// TOTAL-TOO-LARGE: grad-profile-total-too-large.json:7:3: error: num_elements: a count must be at most 9223372036854775807, got 1e+19

// A param's `sparse` object (a gradient that is sparse by nature).
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-sparse-empty.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SPARSE-EMPTY
// SPARSE-EMPTY: grad-profile-sparse-empty.json:1:1: error: layers[0].params[0].sparse.rows_touched: expected at least one fraction (1 rank's)
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-sparse-not-increasing.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SPARSE-DECREASING
// SPARSE-DECREASING: grad-profile-sparse-not-increasing.json:1:1: error: layers[0].params[0].sparse.rows_touched[1]: 0.005 is less than the 0.01 of half as many ranks: more ranks touch at least the rows fewer do
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-sparse-out-of-range.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SPARSE-RANGE
// SPARSE-RANGE: grad-profile-sparse-out-of-range.json:1:1: error: layers[0].params[0].sparse.rows_touched[0]: expected a fraction of rows in (0, 1], got 0
// RUN: not commopt-translate --import-grad-profile %S/Inputs/grad-profile-sparse-scalar.json 2>&1 \
// RUN:   | FileCheck %s --check-prefix=SPARSE-SCALAR
// SPARSE-SCALAR: grad-profile-sparse-scalar.json:1:1: error: layers[0].params[0].sparse: a scalar has no rows to touch

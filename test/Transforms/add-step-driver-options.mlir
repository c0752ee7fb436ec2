// `function` picks the step among several public functions; a name that is
// not a function with a body, and fewer than one step, are errors.

// RUN: commopt-opt %s --comm-add-step-driver="function=backward steps=1" | FileCheck %s --check-prefix=NAMED
// NAMED-LABEL: func.func @main()
// NAMED: arith.constant 1 : index
// NAMED: func.call @backward()
// NAMED-NOT: func.call @forward

// RUN: not commopt-opt %s --comm-add-step-driver="function=nowhere" 2>&1 | FileCheck %s --check-prefix=NOWHERE
// NOWHERE: error: comm-add-step-driver: option 'function': no function @nowhere with a body in the module

// RUN: not commopt-opt %s --comm-add-step-driver="function=declared" 2>&1 | FileCheck %s --check-prefix=DECLARED
// DECLARED: error: comm-add-step-driver: option 'function': no function @declared with a body in the module

// RUN: not commopt-opt %s --comm-add-step-driver="steps=0" 2>&1 | FileCheck %s --check-prefix=STEPS
// STEPS: comm-add-step-driver: option 'steps': expected at least 1, got 0

// RUN: not commopt-opt %s --comm-add-step-driver="step=2" 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: comm-add-step-driver: unknown option 'step'; did you mean 'steps'?

func.func @forward() {
  return
}
func.func @backward() {
  return
}
func.func private @declared()
